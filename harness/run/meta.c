/* The metamorphic relations (meta.h) in the order they run, and the ones a data plane alone can
 * judge: determinism, prefix consistency, multi-turn prefixes, turn and chunk boundaries. */
#include <stdio.h>
#include <string.h>

#include "meta_priv.h"

#define PREFIX   8  /* shared prefix of the prefix relations */
#define SUFFIX   4  /* the differing tail after it */
#define LONG     64 /* the prompt whose chunk boundaries are looked at */
#define CHUNK    16 /* smallest prefill chunk looked at: rows at its multiples */
#define SALT_CAP 96

const char *const *sr_meta_checks(int *n)
{
    return sr_meta_names(n);
}

int64_t sr_meta_engine_version(const sr_client *c, sr_sync_dialect plane, int64_t initial)
{
    return sr_meta_read_version(c, plane, initial, -1);
}

/* meta.determinism: the base request again, warm (same salt) and cold (a fresh salt). */
static int determinism(sr_meta_ctx *x, const sr_meta_resp *a, const char *salt, sr_err *err)
{
    const char *name = "meta.determinism";
    char cold[SALT_CAP];
    for (int i = 0; i < 2; i++) {
        if (!sr_meta_afford(x, name, 1))
            return 0;
        sr_meta_resp b;
        const char *s = i ? sr_meta_salt(x, cold, sizeof cold) : salt;
        int rc = sr_meta_ask(x, &b, a->prompt, a->P, 0, s, !i, name, err);
        if (!rc && !b.code) {
            sr_meta_check_resp(x, &b,
                               i ? "the base request again, cold" : "the base request again");
            if (b.G != a->G || (b.G && memcmp(b.tokens, a->tokens, b.G * sizeof(int32_t)))) {
                sr_meta_fail(x, name, (int64_t)a->P, -1,
                             "the same request at temperature 0 (%s cache) gave other tokens: %zu "
                             "then %zu generated",
                             i ? "cold" : "warm", a->G, b.G);
            } else {
                sr_meta_same_span(x, name, a, &b, 0, (int64_t)(a->P + a->G) - 1,
                                  i ? "the same request, cold cache" : "the same request, warm");
            }
        }
        sr_meta_resp_free(&b);
        if (rc)
            return rc;
    }
    return 0;
}

/* The layer at which row b of r is a placeholder (a negative id, or one id twice in its top-k:
 * a zeroed or constant row when top_k > 1), or -1 when it looks like a route. */
static int placeholder(const sr_meta_resp *r, int64_t b)
{
    for (int l = 0; l < r->L; l++) {
        const int32_t *row = sr_meta_row(r, b, l);
        for (int j = 0; row && j < r->K; j++) {
            if (row[j] < 0)
                return l;
            for (int i = 0; i < j; i++)
                if (row[i] == row[j])
                    return l;
        }
    }
    return -1;
}

/* meta.prefix_consistency past the shared prefix: position PREFIX holds another token in b than
 * in a, so its row is routed from another input; equal to a's on every layer (above the entropy
 * floor) it is a capture one position late, each row holding the route of the token before. */
static void diverges(sr_meta_ctx *x, const sr_meta_resp *a, const sr_meta_resp *b, const char *what)
{
    if (!sr_meta_row(a, PREFIX, 0) || !sr_meta_row(b, PREFIX, 0) || !sr_meta_repeats_judged(x, a))
        return;
    if (placeholder(a, PREFIX) >= 0 || placeholder(b, PREFIX) >= 0)
        return; /* no route to compare: meta.value_sanity names it */
    if (sr_meta_same_row(a, PREFIX, b, PREFIX))
        sr_meta_fail(x, "meta.prefix_consistency", PREFIX, -1,
                     "%s: row %d, the first position past the %d shared tokens (another token "
                     "there), equals the base's on every layer: rows lag their tokens",
                     what, PREFIX, PREFIX);
}

/* meta.prefix_consistency: the shared prefix with another tail, warm then cold. */
static int prefix(sr_meta_ctx *x, const sr_meta_resp *a, const char *salt, sr_err *err)
{
    const char *name = "meta.prefix_consistency";
    char cold[SALT_CAP];
    int32_t p[PREFIX + SUFFIX];
    memcpy(p, a->prompt, PREFIX * sizeof(int32_t));
    sr_meta_prompt(x, p + PREFIX, SUFFIX);
    /* The prompts part at PREFIX. Drawn ids are >= 1 (sr_meta_token), so 0 differs and is in
     * every vocabulary (2 is not in one of 2). */
    if (p[PREFIX] == a->prompt[PREFIX])
        p[PREFIX] = a->prompt[PREFIX] == 0 ? 1 : 0;
    for (int i = 0; i < 2; i++) {
        if (!sr_meta_afford(x, name, 1))
            return 0;
        sr_meta_resp b;
        const char *s = i ? sr_meta_salt(x, cold, sizeof cold) : salt;
        int rc = sr_meta_ask(x, &b, p, PREFIX + SUFFIX, 0, s, !i, name, err);
        if (!rc && !b.code) {
            sr_meta_check_resp(x, &b, "a prompt sharing the base's prefix");
            sr_meta_same_span(x, name, a, &b, 0, PREFIX,
                              i ? "the shared prefix, cold cache" : "the shared prefix, warm");
            diverges(x, a, &b, i ? "past the shared prefix, cold cache" : "past the shared prefix");
        }
        sr_meta_resp_free(&b);
        if (rc)
            return rc;
    }
    return 0;
}

/* meta.boundary_rows at a turn boundary (meta_priv.h): row b of `t` is the last sampled token
 * of the turn before, first seen as an input in this one. */
int sr_meta_turn_boundary(sr_meta_ctx *x, const sr_meta_resp *t, int64_t b, const char *which)
{
    const char *name = "meta.boundary_rows";
    int l = placeholder(t, b);
    if (l >= 0) {
        const int32_t *row = sr_meta_row(t, b, l);
        sr_meta_fail(x, name, b, l,
                     "%s's row %lld (the turn boundary) holds [%d%s ...] at layer %d, a "
                     "placeholder where a route must be",
                     which, (long long)b, row[0], t->K > 1 ? "," : "", l);
        return 1;
    }
    for (int64_t n = b - 1; n <= b + 1 && sr_meta_repeats_judged(x, t); n += 2)
        if (sr_meta_row(t, n, 0) && sr_meta_row(t, b, 0) && sr_meta_same_row(t, b, t, n)) {
            sr_meta_fail(x, name, b, -1,
                         "%s's row %lld (the turn boundary) repeats row %lld on every layer", which,
                         (long long)b, (long long)n);
            return 1;
        }
    return 0;
}

/* meta.multiturn_prefix: turn 2 (all rows) equals turn 1 on turn 1's rows; turn 3 asks from
 * where turn 2's rows ended, as SkyRL does (meta.row_count judges its rows). */
static int multiturn(sr_meta_ctx *x, const sr_meta_resp *t1, const char *salt, sr_err *err)
{
    const char *name = "meta.multiturn_prefix";
    if (!sr_meta_afford(x, name, 2))
        return 0;
    int32_t p2[SR_META_MAX_PROMPT], p3[SR_META_MAX_PROMPT];
    size_t n2 = sr_meta_next_turn(x, p2, t1);
    sr_meta_resp t2, t3;
    int rc = sr_meta_ask(x, &t2, p2, n2, 0, salt, 1, name, err);
    if (!rc && !t2.code) {
        int64_t b = (int64_t)(t1->P + t1->G) - 1;
        sr_meta_check_resp(x, &t2, "turn 2");
        sr_meta_same_span(x, name, t1, &t2, 0, b, "turn 1's positions in turn 2");
        sr_meta_turn_boundary(x, &t2, b, "turn 2");
        size_t n3 = sr_meta_next_turn(x, p3, &t2);
        int64_t s = (int64_t)(t2.P + t2.G) - 1;
        rc = sr_meta_ask(x, &t3, p3, n3, s, salt, 1, name, err);
        if (!rc && !t3.code) {
            sr_meta_check_resp(x, &t3, "turn 3, rows from the end of turn 2");
            /* Its first row is the turn boundary, computed by this request alone. */
            sr_meta_turn_boundary(x, &t3, s, "turn 3");
        }
        sr_meta_resp_free(&t3);
    }
    sr_meta_resp_free(&t2);
    return rc;
}

/* meta.boundary_rows at prefill-chunk boundaries: in a long cold prompt, no row at a multiple
 * of CHUNK is a placeholder or repeats the row before it (a chunked prefill that leaves one).
 * Judged whatever the response's other checks found: a zeroed row also breaks value_sanity. */
static int chunks(sr_meta_ctx *x, sr_err *err)
{
    const char *name = "meta.boundary_rows";
    if (!sr_meta_afford(x, name, 1))
        return 0;
    int32_t p[LONG];
    char salt[SALT_CAP];
    sr_meta_prompt(x, p, LONG);
    sr_meta_resp r;
    int rc = sr_meta_ask(x, &r, p, LONG, 0, sr_meta_salt(x, salt, sizeof salt), 0, name, err);
    if (!rc && !r.code)
        sr_meta_check_resp(x, &r, "a long prompt");
    if (!rc && !r.code && r.rows)
        for (int64_t b = CHUNK; b < LONG; b += CHUNK) {
            int l = placeholder(&r, b);
            if (l >= 0) {
                sr_meta_fail(x, name, b, l,
                             "row %lld (a %d-token chunk boundary) is a placeholder at layer %d "
                             "(a negative id or one id twice)",
                             (long long)b, CHUNK, l);
                break;
            }
            if (sr_meta_repeats_judged(x, &r) && sr_meta_same_row(&r, b, &r, b - 1)) {
                sr_meta_fail(x, name, b, -1,
                             "row %lld (a %d-token chunk boundary) repeats row %lld on every "
                             "layer",
                             (long long)b, CHUNK, (long long)b - 1);
                break;
            }
        }
    sr_meta_resp_free(&r);
    return rc;
}

/* The relations the responses above could not exercise are skipped with their reason. */
static void finish(sr_meta_ctx *x)
{
    int n;
    const char *const *names = sr_meta_names(&n);
    int i = sr_meta_index("meta.missing_not_stale");
    if (!x->aborted && !(x->failed & (1u << i)) && !(x->skipped & (1u << i))) {
        x->skipped |= 1u << i;
        sr_result_skip_check(x->sc, names[i],
                             "no request finished \"abort\" (the probe does not abort requests "
                             "itself)");
    }
    for (int j = 0; j < n; j++) {
        if (x->failed & (1u << j))
            x->st->failed++;
        else if (x->skipped & (1u << j))
            x->st->skipped++;
        else
            x->st->held++;
    }
}

/* Every relation that neither failed nor was skipped is skipped for `why`. */
static void skip_rest(sr_meta_ctx *x, const char *why)
{
    int n;
    const char *const *names = sr_meta_names(&n);
    for (int j = 0; j < n; j++)
        if (!(x->failed & (1u << j)) && !(x->skipped & (1u << j))) {
            x->skipped |= 1u << j;
            sr_result_skip_check(x->sc, names[j], why);
        }
}

static int relations(sr_meta_ctx *x, sr_err *err)
{
    int32_t p[PREFIX + SUFFIX];
    char salt[SALT_CAP];
    sr_meta_prompt(x, p, PREFIX + SUFFIX);
    sr_meta_salt(x, salt, sizeof salt);
    if (!sr_meta_afford(x, "meta.row_count", 1)) {
        skip_rest(x, "the budget or duration does not cover the first request");
        return 0;
    }
    sr_meta_resp a;
    int rc = sr_meta_ask(x, &a, p, PREFIX + SUFFIX, 0, salt, 0, "the base request", err);
    if (rc || a.code) {
        sr_meta_resp_free(&a);
        if (!rc)
            skip_rest(x, "the base request failed (its check says why); nothing to relate");
        return rc;
    }
    sr_meta_check_resp(x, &a, "the base request");
    if (!(rc = determinism(x, &a, salt, err)) && !(rc = prefix(x, &a, salt, err)) &&
        !(rc = multiturn(x, &a, salt, err)) && !(rc = chunks(x, err)) &&
        !(rc = sr_meta_stack_contract(x, err)))
        rc = sr_meta_sync_relations(x, &a, err);
    sr_meta_resp_free(&a);
    return rc;
}

int sr_meta_run(sr_scenario_result *sc, const sr_client *c, const sr_meta_opts *opts,
                sr_meta_stats *st, sr_err *err)
{
    if (!sc || !c || !opts || opts->budget < 0 || opts->max_tokens < 1)
        return sr_err_set(err, SR_E_INVAL,
                          "meta: a result, a client, a budget >= 0 and "
                          "max_tokens >= 1 are needed");
    sr_meta_stats local;
    memset(&local, 0, sizeof local);
    sr_meta_ctx x;
    memset(&x, 0, sizeof x);
    x.sc = sc;
    x.c = c;
    x.o = opts;
    x.st = st ? st : &local;
    memset(x.st, 0, sizeof *x.st);
    x.held = -1;
    x.at = (sr_check_where)SR_CHECK_WHERE_NONE;
    x.at.engine = 0;
    x.draw = opts->seed * 0x9E3779B97F4A7C15ull + 0x70726f6265ull;
    int rc = sr_client_conn_new(&x.k, c, err);
    if (rc)
        return rc;
    rc = relations(&x, err);
    sr_client_conn_free(x.k);
    if (!rc)
        finish(&x);
    return rc;
}
