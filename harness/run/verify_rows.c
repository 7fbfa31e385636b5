/*
 * The route-row checks of a rollout (verify.h): every captured row against the oracle (rows of one
 * weight version filled at once in the trace's dtype and compared byte for byte; a row that
 * differs is read, checked and classified one layer at a time), the rows' contract (K distinct
 * ids in range) and the padding rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_oracle.h"
#include "verify.h"
#include "verify_priv.h"

/* K ids of `dtype` from element `at` of `p`, as int32 (the route dtypes read directly). */
static void widen(int32_t *out, const sr_ndarray *a, size_t at, int K)
{
    switch (a->dtype) {
    case SR_DTYPE_UINT8:
        for (int k = 0; k < K; k++)
            out[k] = ((const uint8_t *)a->data)[at + (size_t)k];
        return;
    case SR_DTYPE_INT16:
        for (int k = 0; k < K; k++)
            out[k] = ((const int16_t *)a->data)[at + (size_t)k];
        return;
    case SR_DTYPE_INT32:
        for (int k = 0; k < K; k++)
            out[k] = ((const int32_t *)a->data)[at + (size_t)k];
        return;
    default:
        for (int k = 0; k < K; k++)
            out[k] = (int32_t)sr_ndarray_get_i64(a, at + (size_t)k);
    }
}

/* The trace's row i at layer l. */
static void held_row(const sr_verify_rv *x, int64_t i, int l, int32_t *out)
{
    widen(out, &x->r->routes, (size_t)((i * x->L + l) * x->K), x->K);
}

static int same(const int32_t *a, const int32_t *b, int K)
{
    return memcmp(a, b, (size_t)K * sizeof(int32_t)) == 0;
}

/* The oracle's row i at layer l with weight version `ver`; 0 or an error. */
static int oracle_row(const sr_verify_rv *x, int64_t i, int l, int64_t ver, int32_t *out)
{
    uint64_t *fps = malloc((size_t)x->L * sizeof(uint64_t));
    if (!fps)
        return sr_err_set(x->err, SR_E_NOMEM, "cannot allocate fingerprints");
    int rc = sr_verifier_fingerprints(NULL, fps, x->v, ver, x->err);
    if (!rc)
        sr_oracle_route_row(out, sr_verifier_oracle(x->v), l, fps[l], x->h[i]);
    free(fps);
    return rc;
}

/* Classifies the mismatching row i, layer l (verify.h); *other: the version or neighbour. */
static int classify(const sr_verify_rv *x, int64_t i, int l, const int32_t *got, int64_t ver,
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
        int64_t nv = sr_verify_row_version(x, n);
        *other = n;
        if (n >= 0 && n < x->T && nv >= 0 && !(rc = oracle_row(x, n, l, nv, w)) &&
            same(w, got, x->K))
            return 0;
    }
    int64_t top = sr_verify_max_version(x->v);
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

static int report_class(sr_verify_rv *x, sr_row_class c, const cls_tally *t)
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
    return sr_verify_record(x, "trace.row_mismatch", sr_row_class_name(c),
                            sr_verify_turn_of_row(x->r, t->row), t->row, t->layer, d);
}

/* K distinct ids in [0, experts) (experts <= 0: range unknown). With the oracle an all-zero row
 * is left to the comparison, which classifies it (all-zero capture, vllm#54730). */
static int row_valid(const sr_verify_rv *x, const int32_t *r)
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
static int row_masked(const sr_verify_rv *x, int64_t i, const int32_t *r)
{
    int64_t chunk = x->r->mask_chunk;
    if (chunk <= 0 || i < chunk || i % chunk >= x->r->mask_rows)
        return 0;
    int64_t t = sr_verify_turn_of_row(x->r, i);
    if (t < 1 || i >= x->r->turns[t - 1].prompt_len)
        return 0;
    for (int k = 0; k < x->K; k++)
        if (r[k] != -1)
            return 0;
    return 1;
}

int sr_verify_valid(sr_verify_rv *x)
{
    int32_t got[SR_ORACLE_MAX_TOPK];
    int64_t bad = 0, first = -1, layer = -1;
    for (int64_t i = 0; i < x->C; i++)
        for (int l = 0; l < x->L && !(x->match && x->match[i]); l++) {
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
    return sr_verify_record(x, "routes.invalid", NULL, sr_verify_turn_of_row(x->r, first), first,
                            layer, d);
}

/* Rows per call of the oracle's row filler: its block holds rows * L * K ids of the route dtype
 * (48 KiB at 24 layers, top-8, int32). */
#define BATCH_ROWS 64

/* The rows' comparison: the tally of each class (its first row-layer and its count), the
 * fingerprints of the version being compared and the oracle's block. */
typedef struct rows_ctx {
    cls_tally tally[SR_ROW_CLASS_COUNT];
    uint64_t *fps; /* the layer fingerprints of version `ver` */
    int64_t ver;
    void *want; /* BATCH_ROWS oracle rows in the route dtype, or NULL (dtype_fits) */
    size_t cap; /* its bytes */
} rows_ctx;

/* 1 if the oracle's rows can be written in the trace's dtype: one that holds every expert id,
 * so that a row equals the oracle's exactly when their bytes do. */
static int dtype_fits(const sr_verify_rv *x)
{
    int64_t E = sr_oracle_model_of(sr_verifier_oracle(x->v))->experts;
    switch (x->r->routes.dtype) {
    case SR_DTYPE_UINT8:
        return E <= 256;
    case SR_DTYPE_INT16:
        return E <= 32768;
    case SR_DTYPE_INT32:
        return 1;
    default:
        return 0;
    }
}

/*
 * Row i, layer by layer, against the oracle's: `w` holds the row's L * K ids in the route dtype,
 * or is NULL (each layer's row computed here). A row-layer that differs and holds valid ids is
 * classified (one that does not is routes.invalid, reported by sr_verify_valid, or masked).
 */
static int check_row(sr_verify_rv *x, rows_ctx *q, int64_t i, const void *w)
{
    const sr_ndarray *a = &x->r->routes;
    const size_t item = sr_dtype_size(a->dtype), n = (size_t)x->K * item;
    int32_t got[SR_ORACLE_MAX_TOPK], want[SR_ORACLE_MAX_TOPK];
    int rc = 0, all = 1;
    for (int l = 0; !rc && l < x->L; l++) {
        const size_t at = (size_t)((i * x->L + l) * x->K);
        if (w) {
            const void *wl = (const char *)w + (size_t)l * n;
            if (memcmp((const char *)a->data + at * item, wl, n) == 0)
                continue;
            sr_ndarray wa = {a->dtype, 1, {(int64_t)x->K}, (void *)wl, n, 0};
            widen(want, &wa, 0, x->K);
        } else {
            sr_oracle_route_row(want, sr_verifier_oracle(x->v), l, q->fps[l], x->h[i]);
        }
        widen(got, a, at, x->K);
        if (same(got, want, x->K))
            continue;
        all = 0;
        if (!row_valid(x, got))
            continue;
        sr_row_class c;
        int64_t other;
        rc = classify(x, i, l, got, q->ver, &c, &other);
        cls_tally *t = &q->tally[c];
        if (!rc && t->count++ == 0) {
            t->row = i;
            t->layer = l;
            t->other = other;
            t->ver = q->ver;
            memcpy(t->got, got, sizeof(got));
            memcpy(t->want, want, sizeof(want));
        }
    }
    if (all && x->match)
        x->match[i] = 1;
    return rc;
}

/* Rows [i, i + n) of version q->ver: the oracle's block of them compared with the trace's at
 * once, and only when they differ row by row. */
static int check_block(sr_verify_rv *x, rows_ctx *q, int64_t i, int64_t n, int64_t *verified)
{
    const sr_ndarray *a = &x->r->routes;
    const size_t per_row = (size_t)x->L * (size_t)x->K * sr_dtype_size(a->dtype);
    int rc = 0;
    if (q->want) {
        rc = sr_oracle_routes_of(q->want, q->cap, a->dtype, sr_verifier_oracle(x->v), q->fps,
                                 x->h + i, (size_t)n, x->err);
        if (!rc && memcmp((const char *)a->data + (size_t)i * per_row, q->want,
                          (size_t)n * per_row) == 0) {
            if (x->match)
                memset(x->match + i, 1, (size_t)n);
            *verified += n;
            return 0;
        }
    }
    for (int64_t r = 0; !rc && r < n; r++) {
        rc = check_row(x, q, i + r, q->want ? (const char *)q->want + (size_t)r * per_row : NULL);
        (*verified)++;
    }
    return rc;
}

/*
 * The rows go in blocks of up to BATCH_ROWS rows of one version. x->match is kept only when an
 * oracle row is valid by construction (K distinct ids below E, and E within the contract's
 * expert count), so sr_verify_valid may skip the rows it marks.
 */
int sr_verify_rows(sr_verify_rv *x, int64_t *verified)
{
    rows_ctx q;
    memset(&q, 0, sizeof(q));
    int64_t E = sr_oracle_model_of(sr_verifier_oracle(x->v))->experts;
    q.cap = dtype_fits(x)
                ? BATCH_ROWS * (size_t)x->L * (size_t)x->K * sr_dtype_size(x->r->routes.dtype)
                : 0;
    q.fps = malloc((size_t)x->L * sizeof(uint64_t));
    q.want = q.cap ? malloc(q.cap) : NULL;
    if (x->ctx->experts <= 0 || x->ctx->experts >= E)
        x->match = calloc((size_t)(x->C ? x->C : 1), 1);
    int rc = 0;
    if (!q.fps || (q.cap && !q.want))
        rc = sr_err_set(x->err, SR_E_NOMEM, "cannot allocate the oracle's rows");
    q.ver = -1;
    for (int64_t i = 0, n = 1; !rc && i < x->C; i += n) {
        int64_t ver = sr_verify_row_version(x, i);
        if (ver < 0) {
            rc = sr_verify_record(x, "trace.version_unknown", NULL, sr_verify_turn_of_row(x->r, i),
                                  i, -1,
                                  "no weight version is known for the pass that computed this row");
            break;
        }
        if (ver != q.ver && (rc = sr_verifier_fingerprints(NULL, q.fps, x->v, ver, x->err)))
            break;
        q.ver = ver;
        for (n = 1; i + n < x->C && n < BATCH_ROWS && sr_verify_row_version(x, i + n) == ver;)
            n++;
        rc = check_block(x, &q, i, n, verified);
    }
    free(q.fps);
    free(q.want);
    for (int c = 0; !rc && c < SR_ROW_CLASS_COUNT; c++)
        if (q.tally[c].count)
            rc = report_class(x, (sr_row_class)c, &q.tally[c]);
    return rc;
}

/* Rows [C, T) of the finalized trace must be the padding row; a contract, not the oracle. Under
 * the later stack (#2083) the trace holds only its C captured rows, and there is nothing to see. */
int sr_verify_padding(sr_verify_rv *x)
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
    return sr_verify_record(x, "trace.padding_row", NULL, sr_verify_turn_of(x->r, first), first, -1,
                            d);
}
