/*
 * rollout_env: the environment a rollout (rollout.h) talks to between turns: the seeded one
 * (observation counts and ids a pure function of env.seed and the turn) or a recorded
 * conversation (sr_rollout_config.script, for `syncroll replay`).
 *
 * Thread-safety: pure functions of their arguments. Ownership: the observation's ids belong to
 * the caller's sr_rollout_obs (free o->ids).
 */
#ifndef SR_ROLLOUT_ENV_H
#define SR_ROLLOUT_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "rollout.h"
#include "sr_err.h"

/* A turn's observation tokens, in a buffer reused across turns. */
typedef struct sr_rollout_obs {
    int32_t *ids;
    size_t n, cap;
} sr_rollout_obs;

/*
 * The environment's answer to turn `turn` (1-based) into *o (empty once cfg->env.max_turns
 * turns are done). `ids` (ids_n) is input_ids before the turn's output `out` (out_n tokens).
 * Seeded: rollout.h, step 4. Scripted: cfg->script[turn - 1] past ids + out, which it must start
 * with, else SR_E_REPLAY_PREFIX naming the turn and the first differing position. SR_E_NOMEM.
 */
int sr_rollout_env_obs(sr_rollout_obs *o, const sr_rollout_config *cfg, int turn,
                       const int32_t *ids, size_t ids_n, const int32_t *out, size_t out_n,
                       sr_err *err);

#endif /* SR_ROLLOUT_ENV_H */
