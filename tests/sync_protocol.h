/*
 * The weight-sync protocol written out independently of harness/engine/sync_table.c, for the
 * suites that hold the table and the engine to it: tests/test_sync_table.c (every cell of the
 * table, in-process) and tests/test_sync_table_http.c (every cell an engine is driven into over
 * HTTP, as the wire shows it).
 */
#ifndef SR_TEST_SYNC_PROTOCOL_H
#define SR_TEST_SYNC_PROTOCOL_H

#include "engine/sync_table.h"

/*
 * The expected protocol, one row per state, one token per call in sr_sync_call order:
 * "idle"/"active"/"uninit" (accepted, the next state) or "!name>next" (refused with the error
 * named `name`, the state becoming `next`), "-" (no such call in the plane: the table's absent
 * cell, engine.bad_request 404; over HTTP the router answers the plane's missing route 404
 * before the table is consulted). Atomic versions: a finish while a bucket of the update is still
 * arriving (finish_incomplete) discards the update, a bucket naming a tensor another bucket still
 * writes (update_busy) is refused and the other goes on.
 */
static const char
    *const SYNC_PROTOCOL[SR_SYNC_DIALECT_COUNT][SR_SS_COUNT][SR_SC_COUNT] =
        {
            [SR_SYNC_DIALECT_SKYRL] =
                {
                    /* init, start, update, finish, finish_backwards, set_version,
                     * set_version_backwards, check, check_paused, destroy, update_busy,
                     * finish_incomplete */
                    [SR_SS_UNINIT] = {"idle", "active", "!sync.protocol_order>uninit",
                                      "!sync.protocol_order>uninit", "!sync.protocol_order>uninit",
                                      "-", "-", "-", "-", "-", "!sync.protocol_order>uninit",
                                      "!sync.protocol_order>uninit"},
                    [SR_SS_IDLE] = {"idle", "active", "!sync.protocol_order>idle",
                                    "!sync.protocol_order>idle", "!sync.protocol_order>idle", "-",
                                    "-", "-", "-", "-", "!sync.protocol_order>idle",
                                    "!sync.protocol_order>idle"},
                    [SR_SS_ACTIVE] =
                        {"active", "!sync.protocol_order>active", "active",
                         "idle", "!sync.version_backwards>idle", "-", "-", "-", "-", "-", "!sync.concurrent_update>active",
                         "!sync.incomplete_update>idle"},
                },
            [SR_SYNC_DIALECT_VLLM] =
                {
                    [SR_SS_UNINIT] = {"idle", "!sync.protocol_order>uninit",
                                      "!sync.protocol_order>uninit", "!sync.protocol_order>uninit",
                                      "!sync.protocol_order>uninit", "uninit",
                                      "!sync.version_backwards>uninit", "uninit",
                                      "!sync.engine_paused>uninit", "-",
                                      "!sync.protocol_order>uninit", "!sync.protocol_order>uninit"},
                    [SR_SS_IDLE] = {"idle", "active", "!sync.protocol_order>idle",
                                    "!sync.protocol_order>idle", "!sync.protocol_order>idle",
                                    "idle", "!sync.version_backwards>idle", "idle",
                                    "!sync.engine_paused>idle", "-", "!sync.protocol_order>idle",
                                    "!sync.protocol_order>idle"},
                    [SR_SS_ACTIVE] = {"!sync.protocol_order>active", "!sync.protocol_order>active",
                                      "active", "idle", "!sync.version_backwards>idle",
                                      "!sync.protocol_order>active", "!sync.protocol_order>active",
                                      "active", "!sync.engine_paused>active", "-",
                                      "!sync.concurrent_update>active",
                                      "!sync.incomplete_update>idle"},
                },
            /* SGLang: no start, no separate finish, no checker; each
             * update_weights_from_distributed is a whole update (update at its header, finish at
             * its end); ACTIVE is never entered and answers as IDLE. */
            [SR_SYNC_DIALECT_SGLANG] =
                {
                    [SR_SS_UNINIT] = {"idle", "-", "!sync.protocol_order>uninit",
                                      "!sync.protocol_order>uninit", "!sync.protocol_order>uninit",
                                      "uninit", "!sync.version_backwards>uninit", "-", "-",
                                      "!sync.protocol_order>uninit", "!sync.protocol_order>uninit",
                                      "!sync.protocol_order>uninit"},
                    [SR_SS_IDLE] = {"!sync.protocol_order>idle", "-", "idle",
                                    "idle", "!sync.version_backwards>idle", "idle",
                                    "!sync.version_backwards>idle", "-", "-",
                                    "uninit", "!sync.concurrent_update>idle", "idle"},
                    [SR_SS_ACTIVE] = {"!sync.protocol_order>idle", "-", "idle", "idle",
                                      "!sync.version_backwards>idle", "idle",
                                      "!sync.version_backwards>idle", "-", "-", "uninit",
                                      "!sync.concurrent_update>idle", "idle"},
                },
};

/* The status a refusal of each plane answers with (skyrl: 500, the reference's RuntimeError;
 * vllm: 409 Conflict as its rl_state_machine.py and weight_checker do; sglang: 400 as its
 * http_server.py answers a failed weight route). */
static const unsigned SYNC_REFUSAL_STATUS[SR_SYNC_DIALECT_COUNT] = {500, 409, 400};

#endif /* SR_TEST_SYNC_PROTOCOL_H */
