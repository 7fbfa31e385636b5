/* Private to rollout*.c: the state of one running rollout and the steps the files share. */
#ifndef SR_ROLLOUT_PRIV_H
#define SR_ROLLOUT_PRIV_H

#include "rollout.h"

typedef struct sr_rollout_state {
    const sr_rollout_config *cfg;
    sr_client_conn *k;
    sr_rollout_result *res;
    int32_t *ids; /* input_ids */
    size_t ids_n, ids_cap;
    uint8_t *mask; /* loss mask of input_ids[P0:] */
    double *lp;    /* logprobs of input_ids[P0:] */
    size_t mask_n, mask_cap, lp_cap;
    int32_t *obs; /* this turn's observation */
    size_t obs_n, obs_cap;
    int64_t *row_ver, *held_ver; /* per captured row */
    size_t ver_n, ver_cap, held_cap;
    sr_route_trace *trace;
    int64_t response_end; /* index in input_ids of the last response token */
    int collect_lp;
} sr_rollout_state;

int sr_rollout_grow(void **p, size_t *cap, size_t need, size_t item, sr_err *err);
/* Appends to input_ids; past the token limit (trace_opts.max_rows) SR_E_ROLLOUT_TOKEN_LIMIT. */
int sr_rollout_push_ids(sr_rollout_state *s, const int32_t *ids, size_t n, sr_err *err);
/* A trace's SR_E_LIMIT (rows or bytes past trace_opts) as SR_E_ROLLOUT_TOKEN_LIMIT; else rc. */
int sr_rollout_token_limit(const sr_rollout_state *s, int rc, sr_err *err);
int sr_rollout_push_mask(sr_rollout_state *s, uint8_t value, const double *lp, size_t n,
                         sr_err *err);

/* The environment's answer to turn `turn` into s->obs (empty once done). */
int sr_rollout_env_obs(sr_rollout_state *s, int turn, sr_err *err);

/* Records the turn's routes in the trace and the per-row versions. */
int sr_rollout_record(sr_rollout_state *s, const sr_client_result *r, sr_err *err);

/* The state updates of the multi-turn (§6) and single-turn template (§5.5) paths. */
int sr_rollout_update_multi(sr_rollout_state *s, const sr_client_result *r, sr_rollout_turn *t,
                            sr_err *err);
int sr_rollout_update_single(sr_rollout_state *s, const sr_client_result *r, sr_rollout_turn *t,
                             sr_err *err);

/*
 * Cuts prompt/response/mask/logprobs into the result and (if `finalize` and rows were
 * captured) finalizes the trace into result->routes with the per-row versions.
 */
int sr_rollout_finish(sr_rollout_state *s, int finalize, sr_err *err);

#endif /* SR_ROLLOUT_PRIV_H */
