/* The weight-sync receiver's state tables, one per control plane (sync_table.h). */
#include "sync_table.h"

#include "sr_err.h"

#define OK(s)                                                                                      \
    {                                                                                              \
        SR_SS_##s, 0, 200, NULL                                                                    \
    }
#define REFUSE(s, c, m)                                                                            \
    {                                                                                              \
        SR_SS_##s, SR_E_##c, 500, m                                                                \
    }
#define CONFLICT(s, c, m)                                                                          \
    {                                                                                              \
        SR_SS_##s, SR_E_##c, 409, m                                                                \
    }
#define BAD(s, c, m)                                                                               \
    {                                                                                              \
        SR_SS_##s, SR_E_##c, 400, m                                                                \
    }
#define ABSENT(s)                                                                                  \
    {                                                                                              \
        SR_SS_##s, SR_E_ENGINE_REQUEST, 404, "%s: no such call in this control plane"              \
    }

/* The messages name the call with %s; the skyrl ones are the reference receiver's RuntimeErrors
 * (docs/reference/skyrl.md §8.3), the vllm ones those of vLLM's rl_state_machine.py. */
#define SKY_ACTIVE  "%s called while a weight update is already active"
#define SKY_UNSTART "%s called without skyrl_start_weight_update (no weight update is active)"
#define BACKWARDS                                                                                  \
    "%s names a weight version below the one the engine holds; a stale checkpoint is refused "     \
    "(the update is discarded)"
#define V_ACTIVE                                                                                   \
    "%s called while a weight update is already in progress.  Call POST /finish_weight_update "    \
    "first."
#define V_UNSTART                                                                                  \
    "%s requires a preceding start_weight_update. Call POST /start_weight_update first."
#define V_UNINIT                                                                                   \
    "%s requires an initialised weight transfer engine. Call POST /init_weight_transfer_engine "   \
    "first."
#define V_PAUSED "%s requires an awake, unpaused engine"
/* Atomic versions (sync_table.h): an update is applied whole or not at all. */
#define INCOMPLETE                                                                                 \
    "%s came while a bucket of the update was still arriving; nothing of the update is applied "   \
    "(it is discarded: start it again and send every bucket whole before the finish)"
#define BUSY                                                                                       \
    "%s names a tensor that another bucket still arriving is writing; concurrent updates of one "  \
    "tensor are refused (send it again once the other is answered)"
#define S_NOGROUP                                                                                  \
    "%s: no weights update group is initialised. Call POST /init_weights_update_group first."
#define S_GROUP                                                                                    \
    "%s: a weights update group is already initialised. Call POST "                                \
    "/destroy_weights_update_group first."

static const sr_sync_cell SKYRL[SR_SS_COUNT][SR_SC_COUNT] = {
    /* skyrl's delta transport never calls init: UNINIT answers as IDLE. */
    [SR_SS_UNINIT] =
        {
            [SR_SC_INIT] = OK(IDLE),
            [SR_SC_START] = OK(ACTIVE),
            [SR_SC_UPDATE] = REFUSE(UNINIT, SYNC_ORDER, SKY_UNSTART),
            [SR_SC_FINISH] = REFUSE(UNINIT, SYNC_ORDER, SKY_UNSTART),
            [SR_SC_FINISH_BACKWARDS] = REFUSE(UNINIT, SYNC_ORDER, SKY_UNSTART),
            [SR_SC_SET_VERSION] = ABSENT(UNINIT),
            [SR_SC_SET_VERSION_BACKWARDS] = ABSENT(UNINIT),
            [SR_SC_CHECK] = ABSENT(UNINIT),
            [SR_SC_CHECK_PAUSED] = ABSENT(UNINIT),
            [SR_SC_DESTROY] = ABSENT(UNINIT),
            [SR_SC_UPDATE_BUSY] = REFUSE(UNINIT, SYNC_ORDER, SKY_UNSTART),
            [SR_SC_FINISH_INCOMPLETE] = REFUSE(UNINIT, SYNC_ORDER, SKY_UNSTART),
        },
    [SR_SS_IDLE] =
        {
            [SR_SC_INIT] = OK(IDLE),
            [SR_SC_START] = OK(ACTIVE),
            [SR_SC_UPDATE] = REFUSE(IDLE, SYNC_ORDER, SKY_UNSTART),
            [SR_SC_FINISH] = REFUSE(IDLE, SYNC_ORDER, SKY_UNSTART),
            [SR_SC_FINISH_BACKWARDS] = REFUSE(IDLE, SYNC_ORDER, SKY_UNSTART),
            [SR_SC_SET_VERSION] = ABSENT(IDLE),
            [SR_SC_SET_VERSION_BACKWARDS] = ABSENT(IDLE),
            [SR_SC_CHECK] = ABSENT(IDLE),
            [SR_SC_CHECK_PAUSED] = ABSENT(IDLE),
            [SR_SC_DESTROY] = ABSENT(IDLE),
            [SR_SC_UPDATE_BUSY] = REFUSE(IDLE, SYNC_ORDER, SKY_UNSTART),
            [SR_SC_FINISH_INCOMPLETE] = REFUSE(IDLE, SYNC_ORDER, SKY_UNSTART),
        },
    [SR_SS_ACTIVE] =
        {
            /* The reference trainer may (re)initialise at any time; the update stays active. */
            [SR_SC_INIT] = OK(ACTIVE),
            [SR_SC_START] = REFUSE(ACTIVE, SYNC_ORDER, SKY_ACTIVE),
            [SR_SC_UPDATE] = OK(ACTIVE),
            [SR_SC_FINISH] = OK(IDLE),
            [SR_SC_FINISH_BACKWARDS] = REFUSE(IDLE, SYNC_VERSION_BACKWARDS, BACKWARDS),
            [SR_SC_SET_VERSION] = ABSENT(ACTIVE),
            [SR_SC_SET_VERSION_BACKWARDS] = ABSENT(ACTIVE),
            [SR_SC_CHECK] = ABSENT(ACTIVE),
            [SR_SC_CHECK_PAUSED] = ABSENT(ACTIVE),
            [SR_SC_DESTROY] = ABSENT(ACTIVE),
            [SR_SC_UPDATE_BUSY] = REFUSE(ACTIVE, SYNC_CONCURRENT, BUSY),
            [SR_SC_FINISH_INCOMPLETE] = REFUSE(IDLE, SYNC_INCOMPLETE, INCOMPLETE),
        },
};

static const sr_sync_cell VLLM[SR_SS_COUNT][SR_SC_COUNT] =
    {
        [SR_SS_UNINIT] =
            {
                [SR_SC_INIT] = OK(IDLE),
                [SR_SC_START] = CONFLICT(UNINIT, SYNC_ORDER, V_UNINIT),
                [SR_SC_UPDATE] = CONFLICT(UNINIT, SYNC_ORDER, V_UNINIT),
                [SR_SC_FINISH] = CONFLICT(UNINIT, SYNC_ORDER, V_UNSTART),
                [SR_SC_FINISH_BACKWARDS] = CONFLICT(UNINIT, SYNC_ORDER, V_UNSTART),
                [SR_SC_SET_VERSION] = OK(UNINIT),
                [SR_SC_SET_VERSION_BACKWARDS] = CONFLICT(UNINIT, SYNC_VERSION_BACKWARDS, BACKWARDS),
                [SR_SC_CHECK] = OK(UNINIT),
                [SR_SC_CHECK_PAUSED] = CONFLICT(UNINIT, SYNC_ENGINE_PAUSED, V_PAUSED),
                [SR_SC_DESTROY] = ABSENT(UNINIT),
                [SR_SC_UPDATE_BUSY] = CONFLICT(UNINIT, SYNC_ORDER, V_UNINIT),
                [SR_SC_FINISH_INCOMPLETE] = CONFLICT(UNINIT, SYNC_ORDER, V_UNSTART),
            },
        [SR_SS_IDLE] =
            {
                [SR_SC_INIT] = OK(IDLE),
                [SR_SC_START] = OK(ACTIVE),
                [SR_SC_UPDATE] = CONFLICT(IDLE, SYNC_ORDER, V_UNSTART),
                [SR_SC_FINISH] = CONFLICT(IDLE, SYNC_ORDER, V_UNSTART),
                [SR_SC_FINISH_BACKWARDS] = CONFLICT(IDLE, SYNC_ORDER, V_UNSTART),
                [SR_SC_SET_VERSION] = OK(IDLE),
                [SR_SC_SET_VERSION_BACKWARDS] = CONFLICT(IDLE, SYNC_VERSION_BACKWARDS, BACKWARDS),
                [SR_SC_CHECK] = OK(IDLE),
                [SR_SC_CHECK_PAUSED] = CONFLICT(IDLE, SYNC_ENGINE_PAUSED, V_PAUSED),
                [SR_SC_DESTROY] = ABSENT(IDLE),
                [SR_SC_UPDATE_BUSY] = CONFLICT(IDLE, SYNC_ORDER, V_UNSTART),
                [SR_SC_FINISH_INCOMPLETE] = CONFLICT(IDLE, SYNC_ORDER, V_UNSTART),
            },
        [SR_SS_ACTIVE] =
            {
                [SR_SC_INIT] = CONFLICT(ACTIVE, SYNC_ORDER, V_ACTIVE),
                [SR_SC_START] = CONFLICT(ACTIVE, SYNC_ORDER, V_ACTIVE),
                [SR_SC_UPDATE] = OK(ACTIVE),
                [SR_SC_FINISH] = OK(IDLE),
                [SR_SC_FINISH_BACKWARDS] = CONFLICT(IDLE, SYNC_VERSION_BACKWARDS, BACKWARDS),
                [SR_SC_SET_VERSION] = CONFLICT(ACTIVE, SYNC_ORDER, V_ACTIVE),
                [SR_SC_SET_VERSION_BACKWARDS] = CONFLICT(ACTIVE, SYNC_ORDER, V_ACTIVE),
                [SR_SC_CHECK] = OK(ACTIVE),
                [SR_SC_CHECK_PAUSED] = CONFLICT(ACTIVE, SYNC_ENGINE_PAUSED, V_PAUSED),
                [SR_SC_DESTROY] = ABSENT(ACTIVE),
                [SR_SC_UPDATE_BUSY] = CONFLICT(ACTIVE, SYNC_CONCURRENT, BUSY),
                [SR_SC_FINISH_INCOMPLETE] = CONFLICT(IDLE, SYNC_INCOMPLETE, INCOMPLETE),
            },
};

/* SGLang's group and weight routes. The version guards are syncroll's (SGLang's weight_version is a
 * free string): as in the other planes, a version below the one held is refused. */
#define SGLANG_ROW(init, destroy)                                                                  \
    {                                                                                              \
        [SR_SC_INIT] = init, [SR_SC_START] = ABSENT(IDLE), [SR_SC_UPDATE] = OK(IDLE),              \
        [SR_SC_FINISH] = OK(IDLE),                                                                 \
        [SR_SC_FINISH_BACKWARDS] = BAD(IDLE, SYNC_VERSION_BACKWARDS, BACKWARDS),                   \
        [SR_SC_SET_VERSION] = OK(IDLE),                                                            \
        [SR_SC_SET_VERSION_BACKWARDS] = BAD(IDLE, SYNC_VERSION_BACKWARDS, BACKWARDS),              \
        [SR_SC_CHECK] = ABSENT(IDLE), [SR_SC_CHECK_PAUSED] = ABSENT(IDLE),                         \
        [SR_SC_DESTROY] = destroy, [SR_SC_UPDATE_BUSY] = BAD(IDLE, SYNC_CONCURRENT, BUSY),         \
        [SR_SC_FINISH_INCOMPLETE] = OK(IDLE),                                                      \
    }

static const sr_sync_cell SGLANG[SR_SS_COUNT][SR_SC_COUNT] = {
    [SR_SS_UNINIT] =
        {
            [SR_SC_INIT] = OK(IDLE),
            [SR_SC_START] = ABSENT(UNINIT),
            [SR_SC_UPDATE] = BAD(UNINIT, SYNC_ORDER, S_NOGROUP),
            [SR_SC_FINISH] = BAD(UNINIT, SYNC_ORDER, S_NOGROUP),
            [SR_SC_FINISH_BACKWARDS] = BAD(UNINIT, SYNC_ORDER, S_NOGROUP),
            [SR_SC_SET_VERSION] = OK(UNINIT),
            [SR_SC_SET_VERSION_BACKWARDS] = BAD(UNINIT, SYNC_VERSION_BACKWARDS, BACKWARDS),
            [SR_SC_CHECK] = ABSENT(UNINIT),
            [SR_SC_CHECK_PAUSED] = ABSENT(UNINIT),
            [SR_SC_DESTROY] = BAD(UNINIT, SYNC_ORDER, S_NOGROUP),
            [SR_SC_UPDATE_BUSY] = BAD(UNINIT, SYNC_ORDER, S_NOGROUP),
            [SR_SC_FINISH_INCOMPLETE] = BAD(UNINIT, SYNC_ORDER, S_NOGROUP),
        },
    [SR_SS_IDLE] = SGLANG_ROW(BAD(IDLE, SYNC_ORDER, S_GROUP), OK(UNINIT)),
    /* Never entered (each update call is whole): answers as IDLE. */
    [SR_SS_ACTIVE] = SGLANG_ROW(BAD(IDLE, SYNC_ORDER, S_GROUP), OK(UNINIT)),
};

const sr_sync_cell *sr_sync_table_cell(sr_sync_dialect d, sr_sync_state s, sr_sync_call c)
{
    if ((unsigned)s >= SR_SS_COUNT || (unsigned)c >= SR_SC_COUNT)
        return NULL;
    switch (d) {
    case SR_SYNC_DIALECT_SKYRL:
        return &SKYRL[s][c];
    case SR_SYNC_DIALECT_VLLM:
        return &VLLM[s][c];
    case SR_SYNC_DIALECT_SGLANG:
        return &SGLANG[s][c];
    case SR_SYNC_DIALECT_COUNT:
        break;
    }
    return NULL;
}

static const char *const STATES[SR_SS_COUNT] = {"uninit", "idle", "active"};
static const char *const CALLS[SR_SC_COUNT] = {"init",
                                               "start",
                                               "update",
                                               "finish",
                                               "finish_backwards",
                                               "set_version",
                                               "set_version_backwards",
                                               "check",
                                               "check_paused",
                                               "destroy",
                                               "update_busy",
                                               "finish_incomplete"};

static const char *const METHODS[SR_SYNC_DIALECT_COUNT][SR_SC_COUNT] = {
    [SR_SYNC_DIALECT_SKYRL] = {"init_weight_transfer_engine", "skyrl_start_weight_update",
                               "update_weights_nccl", "skyrl_finish_weight_update",
                               "skyrl_finish_weight_update", "update_weight_version",
                               "update_weight_version", "weight_checker", "weight_checker",
                               "destroy_weights_update_group", "update_weights_nccl",
                               "skyrl_finish_weight_update"},
    [SR_SYNC_DIALECT_VLLM] = {"init_weight_transfer_engine", "start_weight_update",
                              "update_weights", "finish_weight_update", "finish_weight_update",
                              "update_weight_version", "update_weight_version", "weight_checker",
                              "weight_checker", "destroy_weights_update_group", "update_weights",
                              "finish_weight_update"},
    [SR_SYNC_DIALECT_SGLANG] = {"init_weights_update_group", "start_weight_update",
                                "update_weights_from_distributed",
                                "update_weights_from_distributed",
                                "update_weights_from_distributed", "update_weight_version",
                                "update_weight_version", "weight_checker", "weight_checker",
                                "destroy_weights_update_group", "update_weights_from_distributed",
                                "update_weights_from_distributed"},
};

const char *sr_sync_call_method(sr_sync_dialect d, sr_sync_call c)
{
    return (unsigned)d < SR_SYNC_DIALECT_COUNT && (unsigned)c < SR_SC_COUNT ? METHODS[d][c] : NULL;
}

const char *sr_sync_state_name(sr_sync_state s)
{
    return (unsigned)s < SR_SS_COUNT ? STATES[s] : NULL;
}

const char *sr_sync_call_name(sr_sync_call c)
{
    return (unsigned)c < SR_SC_COUNT ? CALLS[c] : NULL;
}
