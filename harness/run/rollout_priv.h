/*
 * rollout_priv: what rollout.c (the agent loop, setup and the result) and rollout_turn.c (the
 * state's growth, the per-turn updates, the trace record and the end of a rollout) share.
 * Private to harness/run/rollout*.c.
 */
#ifndef SR_ROLLOUT_PRIV_H
#define SR_ROLLOUT_PRIV_H

#include "rollout.h"
#include "rollout_env.h"
#include "rollout_scratch.h"

/* The state of one running rollout and the steps of a turn (rollout.c: the agent loop;
 * rollout_turn.c: the per-turn updates, the trace record and the end). */
typedef struct rollout_state {
    const sr_rollout_config *cfg;
    sr_client_conn *k;
    sr_rollout_result *res;
    int32_t *ids; /* input_ids */
    size_t ids_n, ids_cap;
    uint8_t *mask; /* loss mask of input_ids[P0:] */
    double *lp;    /* logprobs of input_ids[P0:] */
    size_t mask_n, mask_cap, lp_cap;
    sr_rollout_obs obs;          /* this turn's observation */
    int64_t *row_ver, *held_ver; /* per captured row */
    size_t ver_n, ver_cap, held_cap;
    sr_route_trace *trace;
    uint8_t *full; /* the finalize's loss mask over all T tokens */
    size_t full_cap;
    int64_t response_end; /* index in input_ids of the last response token */
    int collect_lp;
    sr_rollout_scratch *x; /* the conn's scratch the arrays are borrowed from, or NULL */
} rollout_state;

int sr_rollout_grow(void **p, size_t *cap, size_t need, size_t item, sr_err *err);
/* Appends to input_ids; past the token limit (trace_opts.max_rows) SR_E_ROLLOUT_TOKEN_LIMIT. */
int sr_rollout_push_ids(rollout_state *s, const int32_t *ids, size_t n, sr_err *err);
/* A trace's SR_E_LIMIT (rows or bytes past trace_opts) as SR_E_ROLLOUT_TOKEN_LIMIT; else rc. */
int sr_rollout_token_limit(const rollout_state *s, int rc, sr_err *err);
int sr_rollout_push_mask(rollout_state *s, uint8_t value, const double *lp, size_t n, sr_err *err);

/* Records the turn's routes in the trace and the per-row versions. */
int sr_rollout_record(rollout_state *s, const sr_client_result *r, sr_err *err);

/* The state updates of the multi-turn (§6) and single-turn template (§5.5) paths. */
int sr_rollout_update_multi(rollout_state *s, const sr_client_result *r, sr_rollout_turn *t,
                            sr_err *err);
int sr_rollout_update_single(rollout_state *s, const sr_client_result *r, sr_rollout_turn *t,
                             sr_err *err);

/*
 * Cuts prompt/response/mask/logprobs into the result and (if `finalize` and rows were
 * captured) finalizes the trace into result->routes with the per-row versions.
 */
int sr_rollout_finish(rollout_state *s, int finalize, sr_err *err);

#endif /* SR_ROLLOUT_PRIV_H */
