/*
 * shard: which part of a suite one CI job runs (`syncroll run --shard K/N`, issue 23).
 *
 * A scenario belongs to shard K of N when FNV-1a 64 of its id, modulo N, is K - 1. The key is
 * the id alone, so adding, removing or renaming one scenario moves that scenario only, and every
 * machine computes the same partition without talking to the others.
 *
 * The shard comes from `--shard K/N` when it is given (GitHub Actions' matrix passes it so; no CI
 * index variable is read then, and --shard-count or SYNCROLL_SHARD_COUNT, if set, must agree with
 * N), otherwise from the variables of the CI system the job runs on:
 *
 *   source      index variable (base)             count variable
 *   buildkite   BUILDKITE_PARALLEL_JOB (0-based)  BUILDKITE_PARALLEL_JOB_COUNT
 *   kubernetes  JOB_COMPLETION_INDEX (0-based)    --shard-count N or SYNCROLL_SHARD_COUNT
 *   gitlab      CI_NODE_INDEX (1-based)           CI_NODE_TOTAL
 *   circleci    CIRCLE_NODE_INDEX (0-based)       CIRCLE_NODE_TOTAL
 *
 * A count variable equal to 1 without its index (GitLab sets CI_NODE_TOTAL=1 for a job without
 * `parallel`) means "not sharded". `--shard-count` and SYNCROLL_SHARD_COUNT, when given, must
 * agree with each other and with any count found. Two systems' variables that name different
 * shards conflict; the same shard twice is accepted (the first source in the table is named).
 *
 * Values are decimal digits only (no sign, no space; at most 1000000). Errors: SR_E_SHARD_ENV
 * (run.shard_env) naming the variable or option and its value, for a malformed value, an index
 * out of range, an index without a count or a count above 1 without an index, and conflicts.
 *
 * No global state: the environment is read through the caller's getter. Thread-safe.
 */
#ifndef SR_RUN_SHARD_H
#define SR_RUN_SHARD_H

#include <stdint.h>

#include "sr_err.h"

/* Largest shard count accepted. */
#define SR_SHARD_MAX 1000000

/* The variable naming the count for Kubernetes Indexed Jobs (and any index-only source). */
#define SR_SHARD_COUNT_ENV "SYNCROLL_SHARD_COUNT"

typedef struct sr_shard {
    int k, n;         /* 1-based shard k of n; 0/0: not sharded */
    char source[16];  /* "option", "buildkite", "kubernetes", "gitlab", "circleci"; "" */
    char detail[256]; /* what was read, e.g. "CI_NODE_INDEX=2 CI_NODE_TOTAL=4" */
} sr_shard;

/* Returns the value of variable `name` or NULL when unset (e.g. getenv, through `ctx`). */
typedef const char *(*sr_shard_getenv_fn)(void *ctx, const char *name);

/*
 * Resolves the shard into *out. `option` is the text of --shard ("K/N") or NULL; `count` is
 * --shard-count or 0 when not given. Returns 0 or SR_E_SHARD_ENV (*out is then not sharded).
 */
int sr_shard_resolve(sr_shard *out, const char *option, long long count, sr_shard_getenv_fn get,
                     void *ctx, sr_err *err);

/* FNV-1a 64 of a scenario id: the stable key of the partition. */
uint64_t sr_shard_hash(const char *id);

/* 1 if the scenario `id` belongs to the shard (always, when not sharded). */
int sr_shard_selects(const sr_shard *s, const char *id);

/* The 1-based shard of `id` in the hash partition of s->n shards (s sharded). */
int sr_shard_of(const sr_shard *s, const char *id);

/*
 * A fingerprint of a whole partition: ids[i] goes to shard shard_of[i], for n distinct ids. It
 * does not depend on the order of the ids, and two jobs that saw other ids or put one in another
 * shard get other fingerprints (up to a 64-bit collision), so the shards of one run can be
 * checked to be parts of one partition (the run's selection line carries it; `report --merge`
 * refuses shards whose lines differ).
 */
uint64_t sr_shard_partition_fp(const char *const *ids, const int *shard_of, size_t n);

#endif /* SR_RUN_SHARD_H */
