/* The shard of a CI job: --shard, --shard-count and the CI systems' variables (shard.h). */
#include "shard.h"

#include <stdio.h>
#include <string.h>

#include "sr_hash.h"
#include "sr_mix.h"

/* One CI system's variables; `count` NULL: the count comes from --shard-count or the env. */
typedef struct ci_source {
    const char *name, *index, *count;
    int base; /* value of the index variable in the first shard */
} ci_source;

/* Confirmed in each system's documentation (docs/guide/ci.md cites them). */
static const ci_source sources[] = {
    {"buildkite", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0},
    {"kubernetes", "JOB_COMPLETION_INDEX", NULL, 0},
    {"gitlab", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1},
    {"circleci", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0},
};
#define N_SOURCES (sizeof(sources) / sizeof(sources[0]))

uint64_t sr_shard_hash(const char *id)
{
    return sr_hash_fnv1a64(id);
}

int sr_shard_of(const sr_shard *s, const char *id)
{
    return (int)(sr_shard_hash(id) % (uint64_t)s->n) + 1;
}

uint64_t sr_shard_partition_fp(const char *const *ids, const int *shard_of, size_t n)
{
    /* A sum of mixed (id, shard) keys: the order of the ids does not matter, a moved id or a
     * missing one changes the sum. */
    uint64_t fp = sr_mix64((uint64_t)n);
    for (size_t i = 0; i < n; i++)
        fp += sr_mix64(sr_shard_hash(ids[i]) ^ (uint64_t)(uint32_t)shard_of[i] << 32);
    return fp;
}

int sr_shard_selects(const sr_shard *s, const char *id)
{
    return !s->n || sr_shard_hash(id) % (uint64_t)s->n == (uint64_t)s->k - 1;
}

/* Decimal digits only, at most SR_SHARD_MAX: 0 and *out, or -1. */
static int digits(const char *s, size_t len, long long *out)
{
    long long v = 0;
    if (len == 0 || len > 7)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > SR_SHARD_MAX)
        return -1;
    *out = v;
    return 0;
}

static const char *value(sr_shard_getenv_fn get, void *ctx, const char *name)
{
    const char *v = name && get ? get(ctx, name) : NULL;
    return v && *v ? v : NULL;
}

/* A count variable: 0 and *out (>= 1), or the error. */
static int count_var(const char *name, const char *v, long long *out, sr_err *err)
{
    if (digits(v, strlen(v), out) || *out < 1)
        return sr_err_set(err, SR_E_SHARD_ENV,
                          "%s='%.64s': a shard count must be an integer in [1, %d]", name, v,
                          SR_SHARD_MAX);
    return 0;
}

/* The count of --shard-count and SYNCROLL_SHARD_COUNT (0: neither), which must agree. */
static int given_count(long long *out, long long option, sr_shard_getenv_fn get, void *ctx,
                       sr_err *err)
{
    const char *v = value(get, ctx, SR_SHARD_COUNT_ENV);
    long long env = 0;
    *out = option;
    if (option < 0 || option > SR_SHARD_MAX)
        return sr_err_set(err, SR_E_SHARD_ENV, "--shard-count %lld: must be in [1, %d]", option,
                          SR_SHARD_MAX);
    if (v && count_var(SR_SHARD_COUNT_ENV, v, &env, err))
        return SR_E_SHARD_ENV;
    if (option && env && option != env)
        return sr_err_set(err, SR_E_SHARD_ENV, "--shard-count %lld conflicts with %s=%s", option,
                          SR_SHARD_COUNT_ENV, v);
    if (!option)
        *out = env;
    return 0;
}

static int from_option(sr_shard *out, const char *opt, long long count, sr_err *err)
{
    const char *slash = strchr(opt, '/');
    long long k, n;
    if (!slash || digits(opt, (size_t)(slash - opt), &k) ||
        digits(slash + 1, strlen(slash + 1), &n) || n < 1 || k < 1 || k > n)
        return sr_err_set(err, SR_E_SHARD_ENV,
                          "--shard '%.64s': must be K/N with integers 1 <= K <= N <= %d", opt,
                          SR_SHARD_MAX);
    if (count && count != n)
        return sr_err_set(err, SR_E_SHARD_ENV, "--shard %s conflicts with the shard count %lld",
                          opt, count);
    out->k = (int)k;
    out->n = (int)n;
    snprintf(out->source, sizeof(out->source), "option");
    snprintf(out->detail, sizeof(out->detail), "--shard %s", opt);
    return 0;
}

/* One CI system: 1 found (into *got), 0 not in use, or the error. */
static int from_source(sr_shard *got, const ci_source *c, long long count, const char *count_from,
                       sr_shard_getenv_fn get, void *ctx, sr_err *err)
{
    const char *iv = value(get, ctx, c->index), *cv = value(get, ctx, c->count);
    long long idx, n = count;
    if (!iv && !cv)
        return 0;
    if (!iv) {
        if (strcmp(cv, "1") == 0)
            return 0;
        return sr_err_set(err, SR_E_SHARD_ENV, "%s=%.64s is set but %s is not", c->count, cv,
                          c->index);
    }
    if (digits(iv, strlen(iv), &idx))
        return sr_err_set(err, SR_E_SHARD_ENV, "%s='%.64s': a shard index must be digits", c->index,
                          iv);
    if (cv) {
        long long cn;
        if (count_var(c->count, cv, &cn, err))
            return SR_E_SHARD_ENV;
        if (count && count != cn)
            return sr_err_set(err, SR_E_SHARD_ENV, "%s=%s conflicts with the shard count %lld",
                              c->count, cv, count);
        n = cn;
    }
    if (!n)
        return sr_err_set(err, SR_E_SHARD_ENV,
                          "%s=%s gives no shard count: pass --shard-count N or set %s", c->index,
                          iv, SR_SHARD_COUNT_ENV);
    if (idx < c->base || idx > n - 1 + c->base)
        return sr_err_set(err, SR_E_SHARD_ENV, "%s=%s is out of range for %lld shards (%d-based)",
                          c->index, iv, n, c->base);
    got->k = (int)(idx - c->base + 1);
    got->n = (int)n;
    snprintf(got->source, sizeof(got->source), "%s", c->name);
    if (cv)
        snprintf(got->detail, sizeof(got->detail), "%s=%s %s=%s", c->index, iv, c->count, cv);
    else
        snprintf(got->detail, sizeof(got->detail), "%s=%s %s", c->index, iv,
                 count_from ? count_from : "");
    return 1;
}

int sr_shard_resolve(sr_shard *out, const char *option, long long count, sr_shard_getenv_fn get,
                     void *ctx, sr_err *err)
{
    memset(out, 0, sizeof(*out));
    long long n = 0;
    char count_from[64] = "";
    int rc = given_count(&n, count, get, ctx, err);
    if (count)
        snprintf(count_from, sizeof(count_from), "--shard-count %lld", count);
    else if (n)
        snprintf(count_from, sizeof(count_from), "%s=%lld", SR_SHARD_COUNT_ENV, n);
    if (!rc && option)
        rc = from_option(out, option, n, err);
    for (size_t i = 0; !rc && !option && i < N_SOURCES; i++) {
        sr_shard got;
        memset(&got, 0, sizeof(got));
        int r = from_source(&got, &sources[i], n, count_from, get, ctx, err);
        if (r < 0)
            rc = r;
        else if (r && out->n && (got.k != out->k || got.n != out->n))
            rc = sr_err_set(err, SR_E_SHARD_ENV, "%s says shard %d/%d (%s) but %s says %d/%d (%s)",
                            out->source, out->k, out->n, out->detail, got.source, got.k, got.n,
                            got.detail);
        else if (r && !out->n)
            *out = got;
    }
    if (!rc && !out->n && n)
        rc = sr_err_set(err, SR_E_SHARD_ENV,
                        "a shard count (%lld) without a shard index: no --shard and none of "
                        "BUILDKITE_PARALLEL_JOB, JOB_COMPLETION_INDEX, CI_NODE_INDEX, "
                        "CIRCLE_NODE_INDEX is set",
                        n);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}
