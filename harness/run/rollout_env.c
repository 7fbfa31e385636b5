/* rollout_env: the seeded or recorded environment of a rollout (rollout_env.h). */
#include "rollout_env.h"

#include <stdlib.h>
#include <string.h>

#include "sr_mix.h"

static uint64_t below(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

static int room(sr_rollout_obs *o, size_t n, sr_err *err)
{
    if (n <= o->cap)
        return 0;
    int32_t *p = realloc(o->ids, n * sizeof *p);
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "rollout: no memory for %zu observation tokens", n);
    o->ids = p;
    o->cap = n;
    return 0;
}

/* The observation of a recorded conversation: the next request's token_ids past input_ids and
 * this turn's output. */
static int script_obs(sr_rollout_obs *o, const sr_rollout_config *c, int turn, const int32_t *ids,
                      size_t P, const int32_t *out, size_t G, sr_err *err)
{
    const int32_t *next = c->script[turn - 1];
    size_t n = c->script_len[turn - 1];
    for (size_t i = 0; i < P + G; i++) {
        int32_t want = i < P ? ids[i] : out[i - P];
        if (i >= n || next[i] != want)
            return sr_err_set(err, SR_E_REPLAY_PREFIX,
                              "turn %d's request does not extend turn %d's prompt (%zu tokens) "
                              "and output (%zu tokens): %s at position %zu",
                              turn + 1, turn, P, G, i >= n ? "it ends" : "it differs", i);
    }
    int rc = room(o, n - P - G + 1, err);
    if (!rc && n > P + G)
        memcpy(o->ids, next + P + G, (n - P - G) * sizeof *o->ids);
    o->n = rc ? 0 : n - P - G;
    return rc;
}

int sr_rollout_env_obs(sr_rollout_obs *o, const sr_rollout_config *cfg, int turn,
                       const int32_t *ids, size_t ids_n, const int32_t *out, size_t out_n,
                       sr_err *err)
{
    const sr_rollout_env *env = &cfg->env;
    o->n = 0;
    if (turn >= env->max_turns)
        return 0;
    if (cfg->script)
        return (size_t)turn <= cfg->script_n ? script_obs(o, cfg, turn, ids, ids_n, out, out_n, err)
                                             : 0;
    uint64_t st = sr_mix64(env->seed ^ sr_mix64((uint64_t)turn + 0x9E3779B97F4A7C15ull));
    uint64_t span = (uint64_t)(env->obs_max - env->obs_min) + 1;
    size_t n = (size_t)env->obs_min + below(sr_mix64(st + 0x9E3779B97F4A7C15ull), span);
    int rc = room(o, n ? n : 1, err);
    for (size_t j = 0; !rc && j < n; j++)
        o->ids[j] =
            (int32_t)below(sr_mix64(st + 0x9E3779B97F4A7C15ull * (j + 2)), (uint64_t)env->vocab);
    o->n = rc ? 0 : n;
    return rc;
}
