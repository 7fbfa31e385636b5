/*
 * shard_balance: shards balanced by recorded durations (`syncroll run --shard K/N --timings
 * PATH`). The hash partition of shard.h knows nothing of how long a scenario takes,
 * so four shards of a nightly suite may take 1 and 9 minutes. With the durations of an earlier
 * run, every job computes the same balanced partition on its own:
 *
 *   - durations: each scenario id's wall time in an earlier run (repeats averaged); an id with
 *     no recorded duration counts as the mean of the recorded ones;
 *   - longest-first greedy: the scenarios in order of duration, longest first (ties by id), each
 *     to the shard with the least total so far (ties to the lowest shard). The largest shard
 *     then stays within max(1.2 x the mean shard, the longest scenario) on suites like the
 *     nightly one (ctest fleet.balance checks both the fixed and the recorded timings).
 *
 * Every job must see the same ids and the same timings (the CI examples keep them in the
 * repository, fixtures/nightly-timings.json, or in the history folder they restore). Without
 * timings the hash partition of shard.h applies.
 *
 * Timings come from a results.json (a run folder, the file itself, or a minimal file holding
 * only "scenarios": [{"id", "wall_ms"}]) or from a history folder (its newest night that holds
 * the id: DIR/<night>/results.json, symbolic links not followed). Read with sr_report_load
 * (bounded, fuzzed); no other parser.
 *
 * Errors: SR_E_INVAL (no timing in the file, bad argument), SR_E_NOMEM, the loader's errors
 * (SR_E_IO, SR_E_JSON_SYNTAX, SR_E_JSON_SCHEMA, SR_E_LIMIT). No global state; thread-safe.
 */
#ifndef SR_RUN_SHARD_BALANCE_H
#define SR_RUN_SHARD_BALANCE_H

#include <stddef.h>
#include <stdint.h>

#include "shard.h"
#include "sr_err.h"

/* Recorded durations by scenario id, sorted by id. Owned by the caller (sr_shard_timings_free). */
typedef struct sr_shard_timings {
    char **ids;
    double *ms;
    size_t n;
} sr_shard_timings;

/* Loads the durations of `path` (see above) into *out. */
int sr_shard_timings_load(sr_shard_timings *out, const char *path, sr_err *err);

void sr_shard_timings_free(sr_shard_timings *t);

/* The recorded duration of `id` in ms, or -1 when none. */
double sr_shard_timings_get(const sr_shard_timings *t, const char *id);

/*
 * The balanced partition of ids[0..n) (distinct) into s->n shards: shard_of[i] receives the
 * 1-based shard of ids[i] (the caller's array of n), and load_ms[k - 1] (when not NULL, s->n
 * entries) each shard's total. s must be sharded (s->n >= 1). SR_E_INVAL, SR_E_NOMEM.
 */
int sr_shard_balance(int *shard_of, double *load_ms, const sr_shard *s, const char *const *ids,
                     size_t n, const sr_shard_timings *t, sr_err *err);

/*
 * Shard s->k's part of ids[0..n) (distinct) by the balanced partition with the timings of
 * `path`: *mine receives those ids sorted (the strings are borrowed from ids; the array is the
 * caller's, freed with free()) and *n_mine their number; *fp (when not NULL) the whole
 * partition's sr_shard_partition_fp. The errors of the two functions above.
 */
int sr_shard_balanced_ids(const char ***mine, size_t *n_mine, uint64_t *fp, const sr_shard *s,
                          const char *path, const char *const *ids, size_t n, sr_err *err);

/* 1 if `id` is in the sorted list of sr_shard_balanced_ids. */
int sr_shard_ids_has(const char *const *mine, size_t n_mine, const char *id);

#endif /* SR_RUN_SHARD_BALANCE_H */
