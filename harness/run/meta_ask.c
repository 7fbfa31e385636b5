/* The probe's requests and the checks every response gets (meta_priv.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_priv.h"
#include "sr_clock.h"

static const char *const names[] = {
    "meta.determinism",       "meta.prefix_consistency", "meta.multiturn_prefix",
    "meta.row_count",         "meta.value_sanity",       "meta.boundary_rows",
    "meta.sync_effect",       "meta.cache_after_sync",   "meta.missing_not_stale",
    "meta.version_monotonic", "meta.stack_contract"};

const char *const *sr_meta_names(int *n)
{
    *n = (int)(sizeof(names) / sizeof(names[0]));
    return names;
}

int sr_meta_index(const char *name)
{
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

/* Where each control plane reports the version, and whether it is a string there. */
const char *sr_meta_version_path(sr_sync_dialect d)
{
    switch (d) {
    case SR_SYNC_DIALECT_VLLM:
        return "/weight_info";
    case SR_SYNC_DIALECT_SGLANG:
        return "/get_weight_version";
    default:
        return "/syncroll/v1/state";
    }
}

/* The engine's weight version from its control plane, or from `fallback` (a response's), or -1. */
int64_t sr_meta_read_version(const sr_client *c, sr_sync_dialect plane, int64_t initial,
                             int64_t fallback)
{
    sr_client_reply r;
    memset(&r, 0, sizeof r);
    sr_err e = SR_ERR_INIT;
    int64_t v = -1;
    if (!sr_client_control(&r, 1, c, 0, "GET", sr_meta_version_path(plane), NULL, &e) && r.body) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(r.body, "weight_version");
        if (cJSON_IsNumber(w))
            v = (int64_t)w->valuedouble;
        else if (cJSON_IsString(w) && strcmp(w->valuestring, "default") == 0)
            v = initial; /* vLLM's label before any publish (vllm#49040): the initial weights */
        else if (cJSON_IsString(w) && w->valuestring[0]) {
            char *end;
            long long n = strtoll(w->valuestring, &end, 10);
            v = *end ? -1 : n;
        }
    }
    sr_client_reply_release(&r);
    return v >= 0 ? v : fallback;
}

void sr_meta_resp_free(sr_meta_resp *r)
{
    free(r->tokens);
    free(r->rows);
    r->tokens = NULL;
    r->rows = NULL;
}

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int32_t sr_meta_token(sr_meta_ctx *x)
{
    int64_t v = x->o->vocab > 0 ? (x->o->vocab < 1000 ? x->o->vocab : 1000) : 100;
    x->draw += 0x9E3779B97F4A7C15ull;
    return v <= 1 ? 0 : (int32_t)(1 + mix(x->draw) % (uint64_t)(v - 1));
}

void sr_meta_prompt(sr_meta_ctx *x, int32_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = sr_meta_token(x);
}

const char *sr_meta_salt(sr_meta_ctx *x, char *buf, size_t cap)
{
    snprintf(buf, cap, "syncroll-probe-%llu-%d", (unsigned long long)x->o->seed, ++x->salt_n);
    return buf;
}

/* The next turn: the prompt and output of the one before, then a user's tokens. */
size_t sr_meta_next_turn(sr_meta_ctx *x, int32_t *p, const sr_meta_resp *t1)
{
    /* The engine decides G (one that ignores max_tokens can fill a turn's prompt to the cap), so
     * the user's tokens need room kept whatever the earlier turns held. */
    size_t n =
        t1->P < SR_META_MAX_PROMPT - SR_META_USER ? t1->P : SR_META_MAX_PROMPT - SR_META_USER;
    memcpy(p, t1->prompt, n * sizeof(int32_t));
    for (size_t i = 0; i < t1->G && n < SR_META_MAX_PROMPT - SR_META_USER; i++)
        p[n++] = t1->tokens[i];
    sr_meta_prompt(x, p + n, SR_META_USER);
    return n + SR_META_USER;
}

int sr_meta_afford(sr_meta_ctx *x, const char *name, int n)
{
    const char *why = NULL;
    if (x->st->requests + n > x->o->budget)
        why = "the request budget is spent";
    else if (x->o->deadline_ms > 0 && sr_clock_ms() >= x->o->deadline_ms)
        why = "the probe's duration is over";
    if (!why)
        return 1;
    int i = sr_meta_index(name);
    if (i >= 0 && !(x->skipped & (1u << i)) && !(x->failed & (1u << i))) {
        x->skipped |= 1u << i;
        sr_result_skip_check(x->sc, name, why);
    }
    return 0;
}

void sr_meta_fail(sr_meta_ctx *x, const char *name, int64_t row, int64_t layer, const char *fmt,
                  ...)
{
    int i = sr_meta_index(name);
    if (x->once && i >= 0 && (x->failed & (1u << i)))
        return;
    char msg[SR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sr_check_where w = x->at;
    w.row = row;
    w.layer = layer;
    sr_result_check(x->sc, name, NULL, &w, "%s", msg);
    if (i >= 0)
        x->failed |= 1u << i;
}

/* Copies the conn's answer out (its buffers are reused by the next request). */
static int keep(sr_meta_resp *r, const sr_client_result *res, sr_err *err)
{
    r->G = res->n_tokens;
    r->tokens = malloc((r->G ? r->G : 1) * sizeof(int32_t));
    if (!r->tokens)
        return sr_err_set(err, SR_E_NOMEM, "cannot keep %zu tokens", r->G);
    if (r->G)
        memcpy(r->tokens, res->token_ids, r->G * sizeof(int32_t));
    snprintf(r->finish, sizeof r->finish, "%s", res->finish_reason ? res->finish_reason : "");
    r->version = res->weight_version;
    r->has_routes = res->has_routes;
    if (!r->has_routes)
        return 0;
    const sr_ndarray *a = &res->routes;
    if (a->ndim != 3)
        return 0; /* the client already refused any other shape */
    r->n_rows = a->shape[0];
    r->L = (int)a->shape[1];
    r->K = (int)a->shape[2];
    uint64_t n = (uint64_t)r->n_rows * (uint64_t)r->L * (uint64_t)r->K;
    r->rows = malloc((n ? n : 1) * sizeof(int32_t));
    if (!r->rows)
        return sr_err_set(err, SR_E_NOMEM, "cannot keep %llu route ids", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++)
        r->rows[i] = (int32_t)sr_ndarray_get_i64(a, i);
    return 0;
}

/* The relation a failed generate breaks: routes missing or shaped against the rows rule break
 * the row count; an engine that answers with an error status once a sync completed stopped
 * serving because of the sync (meta.sync_effect: it must serve the weights it acknowledged);
 * anything else is the client's own named check. */
static const char *failed_check(const sr_meta_ctx *x, int code)
{
    if (code == SR_E_CLIENT_ROUTES_MISSING || code == SR_E_WIRE_SHAPE)
        return "meta.row_count";
    if (x->synced && (code == SR_E_CLIENT_HTTP_STATUS || code == SR_E_CLIENT_RETRY_EXHAUSTED))
        return "meta.sync_effect";
    return sr_code_name(code);
}

int sr_meta_ask(sr_meta_ctx *x, sr_meta_resp *r, const int32_t *prompt, size_t P, int64_t start,
                const char *salt, int warm, const char *relation, sr_err *err)
{
    memset(r, 0, sizeof *r);
    r->P = P < SR_META_MAX_PROMPT ? P : SR_META_MAX_PROMPT;
    memcpy(r->prompt, prompt, r->P * sizeof(int32_t));
    r->start = start;
    r->version = -1;
    r->warm = warm;
    cJSON *sp = cJSON_CreateObject();
    if (!sp || !cJSON_AddNumberToObject(sp, "max_tokens", (double)x->o->max_tokens) ||
        !cJSON_AddNumberToObject(sp, "temperature", 0)) {
        cJSON_Delete(sp);
        return sr_err_set(err, SR_E_NOMEM, "cannot build sampling params");
    }
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = r->prompt;
    q.n_tokens = r->P;
    q.sampling_params = sp;
    q.cache_salt = salt;
    q.return_routes = 1;
    q.prompt_start = start;
    sr_client_result res;
    sr_err e = SR_ERR_INIT;
    x->st->requests++;
    int rc = sr_client_generate(&res, x->k, &q, &e);
    cJSON_Delete(sp);
    if (rc == SR_E_NOMEM)
        return sr_err_set(err, rc, "%s", e.msg);
    int krc = sr_meta_keep(r, rc, &res, e.msg, err);
    if (r->code)
        sr_meta_fail(x, failed_check(x, rc), -1, -1,
                     "%s: prompt of %zu tokens from row %lld: %s: %s", relation, r->P,
                     (long long)start, sr_code_name(rc), e.msg);
    return krc;
}

int sr_meta_keep(sr_meta_resp *r, int rc, const sr_client_result *res, const char *why, sr_err *err)
{
    /* The client names an answer that says "abort" client.aborted_turn and does not commit it,
     * yet it decoded what came after the reason: meta.missing_not_stale judges that (keep), and
     * a reply whose decode failed after the reason did carry something where null belongs. */
    if (rc == SR_E_CLIENT_ABORTED_TURN && res->finish_reason &&
        strcmp(res->finish_reason, "abort") == 0) {
        char none[64];
        snprintf(none, sizeof none, " (and %s)", sr_code_name(SR_E_CLIENT_ROUTES_MISSING));
        r->after_abort = why && strstr(why, " (and ") != NULL && !strstr(why, none);
        return keep(r, res, err);
    }
    if (rc) {
        r->code = rc;
        return 0;
    }
    return keep(r, res, err);
}

const int32_t *sr_meta_row(const sr_meta_resp *r, int64_t pos, int l)
{
    int64_t i = pos - r->start;
    if (!r->rows || i < 0 || i >= r->n_rows || l < 0 || l >= r->L)
        return NULL;
    return r->rows + ((size_t)i * (size_t)r->L + (size_t)l) * (size_t)r->K;
}

/* 1 when position pos of r may hold vLLM's -1 "served from the prefix cache" (vllm-json). */
static int may_be_cached(const sr_meta_ctx *x, const sr_meta_resp *r, int64_t pos)
{
    return x->o->dialect == SR_DIALECT_VLLM_JSON && r->warm && pos < (int64_t)r->P;
}

static int has_negative(const int32_t *row, int K)
{
    for (int j = 0; j < K; j++)
        if (row[j] < 0)
            return 1;
    return 0;
}

int sr_meta_same_row(const sr_meta_resp *a, int64_t pa, const sr_meta_resp *b, int64_t pb)
{
    if (a->L != b->L || a->K != b->K)
        return 0;
    for (int l = 0; l < a->L; l++) {
        const int32_t *ra = sr_meta_row(a, pa, l), *rb = sr_meta_row(b, pb, l);
        if (!ra || !rb)
            return 0;
        if (memcmp(ra, rb, (size_t)a->K * sizeof(int32_t)) != 0)
            return 0;
    }
    return 1;
}

int sr_meta_same_span(sr_meta_ctx *x, const char *name, const sr_meta_resp *a,
                      const sr_meta_resp *b, int64_t lo, int64_t hi, const char *what)
{
    if (a->code || b->code || !a->rows || !b->rows)
        return 0; /* already a failed check of its own */
    for (int64_t p = lo; p < hi; p++)
        for (int l = 0; l < a->L && l < b->L; l++) {
            const int32_t *ra = sr_meta_row(a, p, l), *rb = sr_meta_row(b, p, l);
            if (!ra || !rb || a->K != b->K)
                continue;
            if ((has_negative(ra, a->K) && may_be_cached(x, a, p)) ||
                (has_negative(rb, b->K) && may_be_cached(x, b, p)))
                continue;
            if (memcmp(ra, rb, (size_t)a->K * sizeof(int32_t)) != 0) {
                sr_meta_fail(
                    x, name, p, l, "%s: row %lld layer %d differs: [%d%s ...] then [%d%s ...]",
                    what, (long long)p, l, ra[0], a->K > 1 ? "," : "", rb[0], b->K > 1 ? "," : "");
                return 1;
            }
        }
    return 0;
}

double sr_meta_route_space(const sr_meta_ctx *x, const sr_meta_resp *r, int layers, double cap)
{
    int64_t e = x->o->experts;
    if (e <= 0) {
        int64_t n = r->rows ? r->n_rows * r->L * r->K : 0;
        for (int64_t i = 0; i < n; i++)
            e = r->rows[i] >= e ? (int64_t)r->rows[i] + 1 : e;
    }
    double c = 1; /* C(e, K), exact in a double while it stays below cap */
    for (int i = 0; i < r->K && c > 0 && c < cap; i++)
        c = e > i ? c * (double)(e - i) / (double)(i + 1) : 0;
    double s = 1;
    for (int l = 0; l < layers && s > 0 && s < cap; l++)
        s *= c;
    return s;
}

int sr_meta_repeats_judged(const sr_meta_ctx *x, const sr_meta_resp *r)
{
    return sr_meta_route_space(x, r, r->L, SR_META_SPACE_FLOOR) >= SR_META_SPACE_FLOOR;
}

/* meta.row_count: rows [start, P+G-1) in every dialect once the client mapped them. */
static int check_rows(sr_meta_ctx *x, const sr_meta_resp *r, const char *what)
{
    int64_t want = (int64_t)r->P + (int64_t)r->G - 1 - r->start;
    if (!r->has_routes) {
        sr_meta_fail(x, "meta.row_count", -1, -1,
                     "%s: routes were asked for and the request finished (%s) but the response "
                     "has none",
                     what, r->finish[0] ? r->finish : "null");
        return 1;
    }
    if (r->n_rows != want) {
        sr_meta_fail(x, "meta.row_count", r->start + r->n_rows - 1, -1,
                     "%s: %lld rows for P=%zu, G=%zu from row %lld; the wire's rule gives %lld "
                     "(rows [s, P+G-1))",
                     what, (long long)r->n_rows, r->P, r->G, (long long)r->start, (long long)want);
        return 1;
    }
    return 0;
}

/* One row at one layer: ids in range, distinct, no sentinel outside its meaning. */
static int check_ids(sr_meta_ctx *x, const sr_meta_resp *r, int64_t p, int l, const char *what)
{
    const int32_t *row = sr_meta_row(r, p, l);
    for (int j = 0; j < r->K; j++) {
        if (row[j] < 0 && may_be_cached(x, r, p))
            continue;
        if (row[j] < 0 || (x->o->experts > 0 && row[j] >= x->o->experts)) {
            sr_meta_fail(x, "meta.value_sanity", p, l,
                         "%s: row %lld layer %d slot %d holds expert %d, outside [0, %lld)%s", what,
                         (long long)p, l, j, row[j], (long long)x->o->experts,
                         row[j] < 0 ? " (a sentinel where no prefix could come from a cache)" : "");
            return 1;
        }
        for (int i = 0; i < j; i++)
            if (row[i] == row[j]) {
                sr_meta_fail(x, "meta.value_sanity", p, l,
                             "%s: row %lld layer %d holds expert %d twice in its top-%d", what,
                             (long long)p, l, row[j], r->K);
                return 1;
            }
    }
    return 0;
}

/* meta.value_sanity: every id, then the whole response: not constant, and no run of rows that
 * repeat their neighbour (a real router repeats a whole row, every layer, about never: more
 * than a quarter of the rows, and at least two, is the floor; judged above the route-space
 * floor only, meta_priv.h). */
static int check_values(sr_meta_ctx *x, const sr_meta_resp *r, const char *what)
{
    for (int64_t i = 0; i < r->n_rows; i++)
        for (int l = 0; l < r->L; l++)
            if (check_ids(x, r, r->start + i, l, what))
                return 1;
    int64_t n = r->n_rows * r->L * r->K, same = 0;
    int constant = n >= 4;
    for (int64_t i = 1; constant && i < n; i++)
        constant = r->rows[i] == r->rows[0];
    if (constant) {
        sr_meta_fail(x, "meta.value_sanity", r->start, -1,
                     "%s: all %lld route ids are %d (an all-constant capture)", what, (long long)n,
                     r->rows[0]);
        return 1;
    }
    for (int64_t i = 1; i < r->n_rows; i++)
        same += sr_meta_same_row(r, r->start + i, r, r->start + i - 1);
    if (same >= 2 && same * 4 > r->n_rows && sr_meta_repeats_judged(x, r)) {
        sr_meta_fail(x, "meta.value_sanity", -1, -1,
                     "%s: %lld of %lld rows repeat the row before them on every layer", what,
                     (long long)same, (long long)r->n_rows);
        return 1;
    }
    return 0;
}

/* meta.boundary_rows at the prompt/output boundary: rows P-1 and P are not copies of their
 * neighbour (above the route-space floor). */
static int check_boundary(sr_meta_ctx *x, const sr_meta_resp *r, const char *what)
{
    if (!sr_meta_repeats_judged(x, r))
        return 0;
    for (int64_t p = (int64_t)r->P - 1; p <= (int64_t)r->P; p++)
        if (sr_meta_row(r, p - 1, 0) && sr_meta_row(r, p, 0) && sr_meta_same_row(r, p, r, p - 1)) {
            sr_meta_fail(x, "meta.boundary_rows", p, -1,
                         "%s: row %lld (the %s boundary) repeats row %lld on every layer", what,
                         (long long)p, p < (int64_t)r->P ? "last prompt" : "first output",
                         (long long)p - 1);
            return 1;
        }
    return 0;
}

/* meta.missing_not_stale: no wire flags partial routes yet, so an aborted request's routes must
 * be missing; rows there are stale or partial ones presented as real. */
static int check_aborted(sr_meta_ctx *x, const sr_meta_resp *r, const char *what)
{
    x->aborted = 1;
    if (r->after_abort && !r->has_routes) {
        sr_meta_fail(x, "meta.missing_not_stale", r->start, -1,
                     "%s: finished \"abort\" after %zu tokens yet carries routes the client "
                     "could not take as null (want null)",
                     what, r->G);
        return 1;
    }
    if (!r->has_routes)
        return 0;
    sr_meta_fail(x, "meta.missing_not_stale", r->start, -1,
                 "%s: finished \"abort\" after %zu tokens yet carries %lld route rows (want null)",
                 what, r->G, (long long)r->n_rows);
    return 1;
}

int sr_meta_check_resp(sr_meta_ctx *x, const sr_meta_resp *r, const char *what)
{
    if (r->code)
        return 1;
    if (strcmp(r->finish, "abort") == 0)
        return check_aborted(x, r, what);
    int bad = check_rows(x, r, what);
    if (!r->rows)
        return bad;
    bad += check_values(x, r, what);
    return bad + check_boundary(x, r, what);
}
