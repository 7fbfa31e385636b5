/* The rollout verifier: tokens, logprobs and route rows against the oracle (verify.h). */
#include "verify.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_oracle.h"
#include "sr_weights.h"

typedef struct fp_entry {
    int64_t version;
    uint64_t global;
    uint64_t *layers;
} fp_entry;

struct sr_verifier {
    sr_oracle *oracle;
    sr_weights_spec spec;
    int32_t layer_indices[SR_ORACLE_MAX_LAYERS];
    int L, K;
    pthread_mutex_t mu;    /* guards the cache and max_version */
    pthread_mutex_t fp_mu; /* held while a version's fingerprints are computed */
    fp_entry *cache;
    size_t n_cache, cap_cache;
    int64_t max_version;
};

int sr_verifier_new(sr_verifier **out, const sr_engine_config *cfg, sr_err *err)
{
    *out = NULL;
    sr_verifier *v = calloc(1, sizeof(*v));
    if (!v)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the verifier");
    pthread_mutex_init(&v->mu, NULL);
    pthread_mutex_init(&v->fp_mu, NULL);
    sr_oracle_model m = sr_engine_config_model(cfg);
    int rc = sr_oracle_new(&v->oracle, &m, err);
    if (rc) {
        sr_verifier_free(v);
        return rc;
    }
    v->L = cfg->num_layers;
    v->K = cfg->topk;
    memcpy(v->layer_indices, cfg->layer_indices, (size_t)v->L * sizeof(int32_t));
    sr_weights_spec ws = sr_engine_config_weights(cfg);
    ws.layer_indices = v->layer_indices;
    v->spec = ws;
    v->max_version = cfg->weight_version;
    *out = v;
    return 0;
}

void sr_verifier_free(sr_verifier *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n_cache; i++)
        free(v->cache[i].layers);
    free(v->cache);
    sr_oracle_free(v->oracle);
    pthread_mutex_destroy(&v->mu);
    pthread_mutex_destroy(&v->fp_mu);
    free(v);
}

const sr_oracle *sr_verifier_oracle(const sr_verifier *v)
{
    return v->oracle;
}

void sr_verifier_note_version(sr_verifier *v, int64_t version)
{
    pthread_mutex_lock(&v->mu);
    if (version > v->max_version)
        v->max_version = version;
    pthread_mutex_unlock(&v->mu);
}

static int64_t max_version(sr_verifier *v)
{
    pthread_mutex_lock(&v->mu);
    int64_t m = v->max_version;
    pthread_mutex_unlock(&v->mu);
    return m;
}

static int fp_cached(sr_verifier *v, int64_t version)
{
    pthread_mutex_lock(&v->mu);
    int found = 0;
    for (size_t i = 0; i < v->n_cache && !found; i++)
        found = v->cache[i].version == version;
    pthread_mutex_unlock(&v->mu);
    return found;
}

/*
 * Makes sure `version` is cached. The computation (a pass over the whole weight set) runs under
 * fp_mu, not mu: readers of cached versions never wait for it, while every thread that needs the
 * same new version waits for the one computing it instead of repeating it (64 rollout threads
 * verifying at once each generated the full weight set, the top of the end-to-end profile:
 * bench/README.md).
 */
static int fp_ensure(sr_verifier *v, int64_t version, sr_err *err)
{
    if (fp_cached(v, version))
        return 0;
    pthread_mutex_lock(&v->fp_mu);
    if (fp_cached(v, version)) {
        pthread_mutex_unlock(&v->fp_mu);
        return 0;
    }
    fp_entry e = {version, 0, malloc((size_t)v->L * sizeof(uint64_t))};
    int rc = e.layers ? sr_weights_expected(&e.global, e.layers, &v->spec, version, err)
                      : sr_err_set(err, SR_E_NOMEM, "cannot allocate fingerprints");
    if (rc) {
        pthread_mutex_unlock(&v->fp_mu);
        free(e.layers);
        return rc;
    }
    pthread_mutex_lock(&v->mu);
    if (v->n_cache == v->cap_cache) {
        size_t cap = v->cap_cache ? v->cap_cache * 2 : 8;
        fp_entry *c = realloc(v->cache, cap * sizeof(*c));
        if (!c) {
            pthread_mutex_unlock(&v->mu);
            pthread_mutex_unlock(&v->fp_mu);
            free(e.layers);
            return sr_err_set(err, SR_E_NOMEM, "cannot grow the fingerprint cache");
        }
        v->cache = c;
        v->cap_cache = cap;
    }
    v->cache[v->n_cache++] = e;
    pthread_mutex_unlock(&v->mu);
    pthread_mutex_unlock(&v->fp_mu);
    return 0;
}

int sr_verifier_fingerprints(uint64_t *global, uint64_t *layers, sr_verifier *v, int64_t version,
                             sr_err *err)
{
    if (version < 0 || version > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "weight version %lld is out of range",
                          (long long)version);
    int rc = fp_ensure(v, version, err);
    if (rc)
        return rc;
    /* Copied under the lock: another thread's insert may move the array. */
    pthread_mutex_lock(&v->mu);
    for (size_t i = 0; i < v->n_cache; i++)
        if (v->cache[i].version == version) {
            if (global)
                *global = v->cache[i].global;
            if (layers)
                memcpy(layers, v->cache[i].layers, (size_t)v->L * sizeof(uint64_t));
            break;
        }
    pthread_mutex_unlock(&v->mu);
    return 0;
}

/* ---- one rollout ---- */

typedef struct rv {
    sr_verifier *v;
    const sr_rollout_result *r;
    const sr_verify_ctx *ctx;
    int64_t sample;
    int32_t *tok; /* prompt + response */
    int64_t T, C; /* tokens, captured rows */
    uint64_t *h;  /* prefix hash of tokens 0..i */
    int L, K;
    int ok;
    sr_err *err;
    sr_verify_fired *fired; /* NULL: not listed */
} rv;

/* The 1-based turn whose request first produced token position q (or row q), 0 if none. */
static int64_t turn_of(const sr_rollout_result *r, int64_t q)
{
    for (int k = 0; k < r->n_turns; k++)
        if (q < r->turns[k].prompt_len + r->turns[k].generated)
            return k + 1;
    return r->n_turns;
}

/* The 1-based turn whose request first computed route row `row`: row i is computed when token
 * i is an input, i.e. by the first request that holds token position i + 1. Fault selectors
 * (`turn`) count turns the same way, so a message names the turn its fault fired on. */
static int64_t turn_of_row(const sr_rollout_result *r, int64_t row)
{
    return turn_of(r, row + 1);
}

static int64_t row_version(const rv *x, int64_t row)
{
    if (x->r->row_version && row >= 0 && row < x->C)
        return x->r->row_version[row];
    int64_t t = turn_of_row(x->r, row);
    return t > 0 ? x->r->turns[t - 1].weight_version : -1;
}

/* "; in the selection of fault ..." when a route fault of the plan holds the row
 * (sr_fault_plan_locate). Only checks of route rows are matched by row; any other check of a turn
 * names a whole-reply action (truncate, mark_partial, ...) aimed at that turn. */
static void fault_note(const rv *x, char *buf, size_t cap, const char *name, int64_t turn,
                       int64_t row, int64_t layer)
{
    char f[320];
    buf[0] = 0;
    if (!x->ctx->faults || turn < 1 || turn > x->r->n_turns)
        return;
    if (strncmp(name, "trace.row_", 10) != 0 && strncmp(name, "routes.", 7) != 0)
        row = -1;
    const sr_rollout_turn *t = &x->r->turns[turn - 1];
    if (sr_fault_plan_locate(f, sizeof(f), x->ctx->faults, t->engine, turn, row, t->prompt_len,
                             t->start_sent > 0 ? t->start_sent : 0, layer))
        snprintf(buf, cap, "; in the selection of %s", f);
}

static int check(rv *x, const char *name, const char *cls, int64_t turn, int64_t row, int64_t layer,
                 const char *detail_in)
{
    char detail[800], note[400];
    fault_note(x, note, sizeof(note), name, turn, row, layer);
    snprintf(detail, sizeof(detail), "%s%s", detail_in, note);
    sr_check_where w = SR_CHECK_WHERE_NONE;
    w.step = x->ctx->step;
    w.sample = x->sample;
    w.turn = turn;
    w.row = row;
    w.layer = layer;
    x->ok = 0;
    char at[96] = "";
    size_t n = 0;
    if (turn >= 0)
        n += (size_t)snprintf(at + n, sizeof(at) - n, " turn %lld", (long long)turn);
    if (row >= 0)
        n += (size_t)snprintf(at + n, sizeof(at) - n, " row %lld", (long long)row);
    if (layer >= 0)
        snprintf(at + n, sizeof(at) - n, " layer %lld", (long long)layer);
    int rc = sr_result_check(x->ctx->res, name, cls, &w, "scenario %s step %s sample %lld%s: %s",
                             x->ctx->scenario, x->ctx->step_name, (long long)x->sample, at, detail);
    if (x->fired && x->fired->n < SR_VERIFY_FIRED_MAX) {
        sr_check *c = &x->fired->c[x->fired->n++];
        memset(c, 0, sizeof(*c));
        snprintf(c->name, sizeof(c->name), "%s", name);
        snprintf(c->classification, sizeof(c->classification), "%s", cls ? cls : "");
        snprintf(c->message, sizeof(c->message), "scenario %s step %s sample %lld%s: %.360s",
                 x->ctx->scenario, x->ctx->step_name, (long long)x->sample, at, detail);
        c->where = w;
    }
    return rc ? sr_err_set(x->err, rc, "cannot record a check") : 0;
}

static int get_fps(const rv *x, int64_t version, uint64_t *global, uint64_t *layers)
{
    return sr_verifier_fingerprints(global, layers, x->v, version, x->err);
}

static int verify_tokens(rv *x, int64_t *verified)
{
    const sr_rollout_result *r = x->r;
    int64_t P0 = (int64_t)r->prompt_len;
    int64_t last = -1;
    /* The single-turn template's synthetic EOS is the agent loop's, not the engine's. */
    if (!x->ctx->multi_turn && r->response_len > 0)
        last = (int64_t)r->response_len - 1;
    for (int64_t j = 0; j < (int64_t)r->response_len; j++) {
        if (!r->loss_mask[j] || j == last)
            continue;
        int64_t q = P0 + j, ver = row_version(x, q - 1);
        char d[256];
        if (ver < 0) {
            snprintf(d, sizeof(d), "no weight version is known for the pass that sampled it");
            return check(x, "trace.version_unknown", NULL, turn_of(r, q), q, -1, d);
        }
        uint64_t g;
        int rc = get_fps(x, ver, &g, NULL);
        if (rc)
            return rc;
        int32_t tok;
        double lp;
        sr_oracle_next(&tok, &lp, x->v->oracle, g, x->h[q - 1]);
        if (!isfinite(lp))
            lp = SR_VERIFY_CLAMPED_LOGPROB;
        (*verified)++;
        if (tok != x->tok[q]) {
            snprintf(d, sizeof(d), "token %d differs from the oracle's %d (weight version %lld)",
                     x->tok[q], tok, (long long)ver);
            return check(x, "trace.token_mismatch", NULL, turn_of(r, q), q, -1, d);
        }
        if (r->logprobs && r->logprobs[j] != lp) {
            snprintf(d, sizeof(d), "logprob %.17g differs from the oracle's %.17g", r->logprobs[j],
                     lp);
            return check(x, "trace.logprob_mismatch", NULL, turn_of(r, q), q, -1, d);
        }
    }
    return 0;
}

static void held_row(const rv *x, int64_t i, int l, int32_t *out)
{
    const sr_ndarray *a = &x->r->routes;
    size_t base = (size_t)((i * x->L + l) * x->K);
    /* The route dtypes read directly: every captured row-layer passes here twice. */
    switch (a->dtype) {
    case SR_DTYPE_UINT8:
        for (int k = 0; k < x->K; k++)
            out[k] = ((const uint8_t *)a->data)[base + (size_t)k];
        return;
    case SR_DTYPE_INT16:
        for (int k = 0; k < x->K; k++)
            out[k] = ((const int16_t *)a->data)[base + (size_t)k];
        return;
    case SR_DTYPE_INT32:
        for (int k = 0; k < x->K; k++)
            out[k] = ((const int32_t *)a->data)[base + (size_t)k];
        return;
    default:
        for (int k = 0; k < x->K; k++)
            out[k] = (int32_t)sr_ndarray_get_i64(a, base + (size_t)k);
    }
}

static int same(const int32_t *a, const int32_t *b, int K)
{
    return memcmp(a, b, (size_t)K * sizeof(int32_t)) == 0;
}

/* The oracle's row i at layer l with weight version `ver`; 0 or an error. */
static int oracle_row(const rv *x, int64_t i, int l, int64_t ver, int32_t *out)
{
    uint64_t *fps = malloc((size_t)x->L * sizeof(uint64_t));
    if (!fps)
        return sr_err_set(x->err, SR_E_NOMEM, "cannot allocate fingerprints");
    int rc = get_fps(x, ver, NULL, fps);
    if (!rc)
        sr_oracle_route_row(out, x->v->oracle, l, fps[l], x->h[i]);
    free(fps);
    return rc;
}

/* Classifies the mismatching row i, layer l (verify.h); *other: the version or neighbour. */
static int classify(const rv *x, int64_t i, int l, const int32_t *got, int64_t ver,
                    sr_row_class *cls, int64_t *other)
{
    int32_t w[SR_ORACLE_MAX_TOPK];
    int zero = 1;
    for (int k = 0; k < x->K; k++)
        zero &= got[k] == 0;
    *other = -1;
    *cls = SR_ROW_ALL_ZERO;
    if (zero)
        return 0;
    *cls = SR_ROW_DUPLICATED;
    if (i > 0) {
        held_row(x, i - 1, l, w);
        if (same(w, got, x->K))
            return 0;
    }
    int64_t held = x->r->held_version ? x->r->held_version[i] : ver;
    int rc = 0;
    *cls = SR_ROW_OVERWRITTEN;
    *other = held;
    if (held >= 0 && held != ver && !(rc = oracle_row(x, i, l, held, w)) && same(w, got, x->K))
        return 0;
    *cls = SR_ROW_OFF_BY_ONE;
    for (int64_t n = i - 1; !rc && n <= i + 1; n += 2) {
        int64_t nv = row_version(x, n);
        *other = n;
        if (n >= 0 && n < x->T && nv >= 0 && !(rc = oracle_row(x, n, l, nv, w)) &&
            same(w, got, x->K))
            return 0;
    }
    int64_t top = max_version(x->v);
    if (top < ver + 1)
        top = ver + 1;
    for (int64_t d = 1; !rc && d <= SR_VERIFY_MAX_CANDIDATES; d++) {
        for (int sgn = -1; !rc && sgn <= 1; sgn += 2) {
            int64_t cand = ver + sgn * d;
            if (cand < 0 || cand > top || cand > SR_WEIGHTS_MAX_VERSION)
                continue;
            *cls = sgn < 0 ? SR_ROW_STALE : SR_ROW_NEWER;
            *other = cand;
            if (!(rc = oracle_row(x, i, l, cand, w)) && same(w, got, x->K))
                return 0;
        }
    }
    *cls = SR_ROW_UNCLASSIFIED;
    *other = -1;
    return rc;
}

typedef struct cls_tally {
    int64_t count, row, layer, other, ver;
    int32_t got[SR_ORACLE_MAX_TOPK], want[SR_ORACLE_MAX_TOPK];
} cls_tally;

static void fmt_row(char *buf, size_t cap, const int32_t *r, int K)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < K && n + 12 < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%d", k ? " " : "[", r[k]);
    snprintf(buf + n, cap - n, "]");
}

static int report_class(rv *x, sr_row_class c, const cls_tally *t)
{
    char g[200], w[200], why[96], d[SR_ERR_MSG_MAX];
    fmt_row(g, sizeof(g), t->got, x->K);
    fmt_row(w, sizeof(w), t->want, x->K);
    switch (c) {
    case SR_ROW_OFF_BY_ONE:
        snprintf(why, sizeof(why), "off by one: it is the oracle's row %lld", (long long)t->other);
        break;
    case SR_ROW_STALE:
        snprintf(why, sizeof(why), "stale weights: it matches version %lld (v-%lld)",
                 (long long)t->other, (long long)(t->ver - t->other));
        break;
    case SR_ROW_NEWER:
        snprintf(why, sizeof(why), "newer weights: it matches version %lld (v+%lld)",
                 (long long)t->other, (long long)(t->other - t->ver));
        break;
    case SR_ROW_OVERWRITTEN:
        snprintf(why, sizeof(why), "overwritten prefix: it is a re-computation at version %lld",
                 (long long)t->other);
        break;
    case SR_ROW_ALL_ZERO:
        snprintf(why, sizeof(why), "all-zero capture");
        break;
    case SR_ROW_DUPLICATED:
        snprintf(why, sizeof(why), "duplicated row: it repeats row %lld", (long long)t->row - 1);
        break;
    default:
        snprintf(why, sizeof(why), "unclassified");
    }
    snprintf(d, sizeof(d),
             "routes %.120s differ from the oracle's %.120s at weight version %lld; "
             "%s (%lld mismatching row-layers of this class)",
             g, w, (long long)t->ver, why, (long long)t->count);
    return check(x, "trace.row_mismatch", sr_row_class_name(c), turn_of_row(x->r, t->row), t->row,
                 t->layer, d);
}

/* K distinct ids in [0, experts) (experts <= 0: range unknown). With the oracle an all-zero row
 * is left to the comparison, which classifies it (all-zero capture, vllm#54730). */
static int row_valid(const rv *x, const int32_t *r)
{
    int K = x->K, zero = 1, dup = 0;
    /* One pass: all zero, any id out of range (a negative one wraps above any limit), and
     * repeats; ids in distinct residues mod 64 are distinct, so an id is compared with the
     * earlier ones only when its residue was seen. */
    uint64_t lim = x->ctx->experts > 0 ? (uint64_t)x->ctx->experts : (uint64_t)1 << 31;
    uint64_t seen = 0, bad = 0;
    for (int k = 0; k < K; k++) {
        int64_t v = r[k];
        uint64_t bit = (uint64_t)1 << (v & 63);
        zero &= v == 0;
        bad |= (uint64_t)v >= lim;
        if (seen & bit)
            for (int j = 0; j < k; j++)
                dup |= r[j] == v;
        seen |= bit;
    }
    if (zero && x->v)
        return 1;
    return !bad && !dup;
}

/*
 * sglang#36404's masked padding (rollout.h): row i is -1 in every slot at this layer, at a
 * position the engine's option masks (i >= chunk, i % chunk < rows) that was a prompt row of the
 * turn that computed it. Such a row is neither invalid nor compared with the oracle.
 */
static int row_masked(const rv *x, int64_t i, const int32_t *r)
{
    int64_t chunk = x->r->mask_chunk;
    if (chunk <= 0 || i < chunk || i % chunk >= x->r->mask_rows)
        return 0;
    int64_t t = turn_of_row(x->r, i);
    if (t < 1 || i >= x->r->turns[t - 1].prompt_len)
        return 0;
    for (int k = 0; k < x->K; k++)
        if (r[k] != -1)
            return 0;
    return 1;
}

/* The contract check of every captured row, without the oracle. */
static int verify_valid(rv *x)
{
    int32_t got[SR_ORACLE_MAX_TOPK];
    int64_t bad = 0, first = -1, layer = -1;
    for (int64_t i = 0; i < x->C; i++)
        for (int l = 0; l < x->L; l++) {
            held_row(x, i, l, got);
            if (!row_valid(x, got) && !row_masked(x, i, got) && bad++ == 0) {
                first = i;
                layer = l;
            }
        }
    if (!bad)
        return 0;
    char d[200], range[48] = "that are not negative"; /* the expert count may be unknown */
    if (x->ctx->experts > 0)
        snprintf(range, sizeof range, "in [0, %lld)", (long long)x->ctx->experts);
    snprintf(d, sizeof(d), "a route row does not hold %d distinct expert ids %s (%lld row-layers)",
             x->K, range, (long long)bad);
    return check(x, "routes.invalid", NULL, turn_of_row(x->r, first), first, layer, d);
}

static int verify_rows(rv *x, int64_t *verified)
{
    cls_tally tally[SR_ROW_CLASS_COUNT];
    memset(tally, 0, sizeof(tally));
    int32_t got[SR_ORACLE_MAX_TOPK], want[SR_ORACLE_MAX_TOPK];
    uint64_t *fps = malloc((size_t)x->L * sizeof(uint64_t));
    if (!fps)
        return sr_err_set(x->err, SR_E_NOMEM, "cannot allocate fingerprints");
    int rc = 0;
    int64_t fps_ver = -1;
    for (int64_t i = 0; !rc && i < x->C; i++) {
        int64_t ver = row_version(x, i);
        if (ver < 0) {
            rc = check(x, "trace.version_unknown", NULL, turn_of_row(x->r, i), i, -1,
                       "no weight version is known for the pass that computed this row");
            break;
        }
        if (ver != fps_ver && !(rc = get_fps(x, ver, NULL, fps)))
            fps_ver = ver;
        for (int l = 0; !rc && l < x->L; l++) {
            held_row(x, i, l, got);
            sr_oracle_route_row(want, x->v->oracle, l, fps[l], x->h[i]);
            /* The oracle's row first (the common case): an equal row needs no other look. */
            if (same(got, want, x->K) || !row_valid(x, got))
                continue; /* routes.invalid, reported by verify_valid, or a masked row */
            sr_row_class c;
            int64_t other;
            rc = classify(x, i, l, got, ver, &c, &other);
            cls_tally *t = &tally[c];
            if (!rc && t->count++ == 0) {
                t->row = i;
                t->layer = l;
                t->other = other;
                t->ver = ver;
                memcpy(t->got, got, sizeof(got));
                memcpy(t->want, want, sizeof(want));
            }
        }
        (*verified)++;
    }
    free(fps);
    for (int c = 0; !rc && c < SR_ROW_CLASS_COUNT; c++)
        if (tally[c].count)
            rc = report_class(x, (sr_row_class)c, &tally[c]);
    return rc;
}

/* Rows [C, T) of the finalized trace must be the padding row; a contract, not the oracle. Under
 * the later stack (#2083) the trace holds only its C captured rows, and there is nothing to see. */
static int verify_padding(rv *x)
{
    int32_t got[SR_ORACLE_MAX_TOPK];
    int64_t bad = 0, first = -1;
    int64_t end = x->r->routes.shape[0] < x->T ? x->r->routes.shape[0] : x->T;
    for (int64_t i = x->C; i < end; i++)
        for (int l = 0; l < x->L; l++) {
            held_row(x, i, l, got);
            for (int k = 0; k < x->K; k++)
                if (got[k] != k) {
                    if (bad++ == 0)
                        first = i;
                    break;
                }
        }
    if (!bad)
        return 0;
    char d[160];
    snprintf(d, sizeof(d), "padding row is not 0..K-1 (%lld row-layers)", (long long)bad);
    return check(x, "trace.padding_row", NULL, turn_of(x->r, first), first, -1, d);
}

static int fire_turn(void *ctx, const char *name, int64_t turn, const char *detail)
{
    return check(ctx, name, NULL, turn, -1, -1, detail);
}

static int failed_rollout(rv *x)
{
    const sr_rollout_result *r = x->r;
    const char *name = sr_code_name(r->code);
    int64_t row = r->code == SR_E_TRACE_MISSING_ROUTE ? r->err.offset : -1;
    return check(x, name ? name : "internal.bug", NULL, r->failed_turn > 0 ? r->failed_turn : -1,
                 row, -1, r->err.msg);
}

static int setup(rv *x)
{
    const sr_rollout_result *r = x->r;
    x->T = (int64_t)(r->prompt_len + r->response_len);
    x->tok = malloc((size_t)(x->T ? x->T : 1) * sizeof(int32_t));
    x->h = malloc((size_t)(x->T ? x->T : 1) * sizeof(uint64_t));
    if (!x->tok || !x->h)
        return sr_err_set(x->err, SR_E_NOMEM, "cannot allocate the verifier's buffers");
    memcpy(x->tok, r->prompt_ids, r->prompt_len * sizeof(int32_t));
    memcpy(x->tok + r->prompt_len, r->response_ids, r->response_len * sizeof(int32_t));
    x->C = sr_verify_captured_rows(r);
    if (r->routes.ndim == 3) {
        x->L = (int)r->routes.shape[1];
        x->K = (int)r->routes.shape[2];
        if (x->C > r->routes.shape[0])
            x->C = r->routes.shape[0];
    }
    if (x->v && x->T > 0) {
        uint64_t h = sr_oracle_prefix_empty(x->v->oracle);
        for (int64_t i = 0; i < x->T; i++)
            x->h[i] = h = sr_oracle_prefix_push(h, x->tok[i]);
    }
    return 0;
}

int sr_verify_rollout(int *ok, sr_verifier *v, const sr_rollout_result *r, int64_t sample,
                      const sr_verify_ctx *ctx, sr_err *err)
{
    return sr_verify_rollout_fired(ok, v, r, sample, ctx, NULL, err);
}

int sr_verify_rollout_fired(int *ok, sr_verifier *v, const sr_rollout_result *r, int64_t sample,
                            const sr_verify_ctx *ctx, sr_verify_fired *fired, sr_err *err)
{
    rv x = {v, r, ctx, sample, NULL, 0, 0, NULL, 0, 0, 1, err, fired};
    if (fired)
        fired->n = 0;
    int rc = 0;
    *ok = 1;
    if (r->code) {
        rc = failed_rollout(&x);
        *ok = 0;
        return rc;
    }
    rc = setup(&x);
    if (!rc)
        rc = sr_verify_turn_log(r, fire_turn, &x);
    int routes = r->routes.ndim == 3 && x.K > 0;
    int64_t toks = 0, rows = 0;
    if (!rc && routes && v && (x.L != v->L || x.K != v->K)) {
        char d[160];
        snprintf(d, sizeof(d), "routes are [%d layers, top-%d], the model has [%d, %d]", x.L, x.K,
                 v->L, v->K);
        rc = check(&x, "trace.row_mismatch", sr_row_class_name(SR_ROW_UNCLASSIFIED), -1, -1, -1, d);
        routes = 0;
    }
    if (!rc && v)
        rc = verify_tokens(&x, &toks);
    if (!rc && v && routes)
        rc = verify_rows(&x, &rows);
    if (!rc && !v) {
        const char *why = "external engines (engines.urls): the oracle's model is unknown";
        rc = sr_result_skip_check(ctx->res, "trace.token_mismatch", why);
        if (!rc)
            rc = sr_result_skip_check(ctx->res, "trace.logprob_mismatch", why);
        if (!rc)
            rc = sr_result_skip_check(ctx->res, "trace.row_mismatch", why);
    }
    if (!rc && routes)
        rc = verify_valid(&x);
    if (!rc && routes)
        rc = verify_padding(&x);
    sr_counters c;
    memset(&c, 0, sizeof(c));
    c.tokens_verified = toks;
    c.rows_verified = rows;
    sr_result_count(ctx->res, &c);
    free(x.tok);
    free(x.h);
    *ok = x.ok;
    return rc;
}
