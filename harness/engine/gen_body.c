/* The reply serialiser of gen.h: model faults, canonical packing, body faults, JSON. */
#include <stdlib.h>
#include <string.h>

#include "sr_gen_extra.h"
#include "gen_priv.h"
#include "jsonw.h"
#include "sr_base64.h"
#include "sr_mix.h"

static int64_t max_el(const void *p, sr_dtype dt, size_t n)
{
    int64_t m = 0;
    if (dt == SR_DTYPE_UINT8) {
        uint8_t x = 0;
        for (size_t i = 0; i < n; i++)
            x = ((const uint8_t *)p)[i] > x ? ((const uint8_t *)p)[i] : x;
        return x;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t v = sr_gen_get_el(p, dt, i);
        m = v > m ? v : m;
    }
    return m;
}

/* A packed array ready to serialise. */
typedef struct payload {
    const void *bytes;
    size_t nbytes;
    int64_t shape[SR_NDIM_MAX];
    int ndim;
    sr_dtype dt;
    void *owned;
} payload;

/* Re-types n elements from (src, sdt) into the payload's canonical dtype (or one wider). */
static int make_payload(payload *pl, const void *src, sr_dtype sdt, size_t n, int canonical,
                        int widen, sr_err *err)
{
    sr_dtype dt = sdt;
    /* uint8 is already the narrowest route dtype: no need to scan for the maximum. */
    if (canonical && sdt != SR_DTYPE_UINT8)
        dt = sr_gen_dtype_holding(max_el(src, sdt, n));
    if (widen)
        dt = dt == SR_DTYPE_UINT8   ? SR_DTYPE_INT16
             : dt == SR_DTYPE_INT16 ? SR_DTYPE_INT32
                                    : SR_DTYPE_INT64;
    pl->dt = dt;
    pl->nbytes = n * sr_dtype_size(dt);
    pl->owned = NULL;
    if (dt == sdt) {
        pl->bytes = src;
        return 0;
    }
    pl->owned = malloc(pl->nbytes ? pl->nbytes : 1);
    if (!pl->owned)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes", pl->nbytes);
    for (size_t i = 0; i < n; i++)
        sr_gen_set_el(pl->owned, dt, i, sr_gen_get_el(src, sdt, i));
    pl->bytes = pl->owned;
    return 0;
}

enum env_variant { ENV_NORMAL = 0, ENV_REORDERED, ENV_DATA_NULL, ENV_BAD_B64, ENV_BYTE_COUNT };

static int emit_data(sr_buf *b, const payload *pl, int variant, int64_t bad_off, sr_err *err)
{
    if (variant == ENV_DATA_NULL)
        return sr_buf_puts(b, "\"data\":null", err);
    size_t enc = sr_base64_encoded_len(pl->nbytes);
    int rc = sr_buf_reserve(b, enc + 16, err);
    if (rc)
        return rc;
    sr_buf_puts(b, "\"data\":\"", NULL);
    char *at = b->data + b->len;
    sr_base64_encode(at, pl->bytes, pl->nbytes, SR_B64_AUTO);
    b->len += enc;
    if (variant == ENV_BAD_B64) {
        if (enc == 0) {
            sr_buf_puts(b, "!!!!", NULL);
        } else {
            size_t i = bad_off < 0 || (size_t)bad_off >= enc ? enc - 1 : (size_t)bad_off;
            at[i] = '!';
        }
    }
    return sr_buf_puts(b, "\"", err);
}

static int emit_env(sr_buf *b, const payload *pl, int variant, int64_t bad_off, sr_err *err)
{
    int rc = sr_buf_puts(b, "{", err);
    if (!rc && variant != ENV_REORDERED)
        rc = emit_data(b, pl, variant, bad_off, err);
    if (!rc && variant == ENV_REORDERED)
        rc = sr_jw_cat(b, "\"dtype\":\"", sr_dtype_name(pl->dt), "\",", err);
    if (!rc)
        rc = sr_buf_puts(b, variant == ENV_REORDERED ? "\"shape\":[" : ",\"shape\":[", err);
    for (int i = 0; !rc && i < pl->ndim; i++) {
        int64_t d = pl->shape[i] + (i == 0 && variant == ENV_BYTE_COUNT ? 1 : 0);
        rc = i ? sr_buf_puts(b, ",", err) : 0;
        if (!rc)
            rc = sr_jw_i64(b, d, err);
    }
    if (!rc)
        rc = sr_buf_puts(b, "]", err);
    if (!rc && variant == ENV_REORDERED) {
        rc = sr_buf_puts(b, ",", err);
        if (!rc)
            rc = emit_data(b, pl, variant, bad_off, err);
    } else if (!rc) {
        rc = sr_jw_cat(b, ",\"dtype\":\"", sr_dtype_name(pl->dt), "\"", err);
    }
    return rc ? rc : sr_buf_puts(b, "}", err);
}

static int variant_of(const sr_fault *bf)
{
    switch (bf ? bf->kind : SR_FK_COUNT) {
    case SR_FK_REORDERED_ENVELOPE:
        return ENV_REORDERED;
    case SR_FK_DATA_NULL:
        return ENV_DATA_NULL;
    case SR_FK_BAD_BASE64:
        return ENV_BAD_B64;
    case SR_FK_BYTE_COUNT_OFF:
        return ENV_BYTE_COUNT;
    default:
        return ENV_NORMAL;
    }
}

/*
 * Fault deep_nesting: arrays nested deeper than Python's default recursion limit (1000), where
 * the reference's _restore_packed_data crashes with RecursionError, and within orjson's own
 * limit (1024), which parses it (bug ref-deep-nesting-crash).
 */
#define DEEP_NESTING 1010

static int emit_nest(sr_buf *b, const char *name, sr_err *err)
{
    int rc = sr_buf_printf(b, err, ",\"%s_nest\":", name);
    for (int i = 0; !rc && i < DEEP_NESTING; i++)
        rc = sr_buf_puts(b, "[", err);
    if (!rc)
        rc = sr_buf_puts(b, "0", err);
    for (int i = 0; !rc && i < DEEP_NESTING; i++)
        rc = sr_buf_puts(b, "]", err);
    return rc;
}

/*
 * Fault nested_envelope: the field's envelope with "data":null (never spliced) whose sidecar
 * `debug` holds the real envelope; the reference re-attaches the nested blob to the outer,
 * null envelope (bug ref-nested-envelope-misattributed).
 */
static int emit_nested(sr_buf *b, const char *name, const payload *pl, sr_err *err)
{
    int rc = emit_env(b, pl, ENV_DATA_NULL, 0, err);
    if (!rc) {
        b->len--; /* reopen the outer envelope for its sidecar */
        rc = sr_buf_printf(b, err, ",\"debug\":{\"%s\":", name);
    }
    if (!rc)
        rc = emit_env(b, pl, ENV_NORMAL, 0, err);
    return rc ? rc : sr_buf_puts(b, "}}", err);
}

/*
 * Emits `,"name":<envelope or null>` plus the extra keys a body fault aimed at this field adds:
 * a look-alike key before it; an escaped-quote key, a duplicate, an unregistered key or a deeply
 * nested one after; or, for nested_envelope, the envelope itself moved into a sidecar.
 * `alt` is the look-alike's differing payload.
 */
static int emit_field(sr_buf *b, const char *name, const payload *pl, const payload *alt,
                      const sr_fault *bf, sr_err *err)
{
    int hit = bf && pl && strcmp(bf->field, name) == 0;
    int rc = 0;
    if (hit && bf->kind == SR_FK_LOOKALIKE_FIELD && alt) {
        rc = sr_buf_printf(b, err, ",\"not_%s\":", name);
        if (!rc)
            rc = emit_env(b, alt, ENV_NORMAL, 0, err);
    }
    if (!rc)
        rc = sr_jw_cat(b, ",\"", name, "\":", err);
    if (!rc && hit && bf->kind == SR_FK_NESTED_ENVELOPE)
        return emit_nested(b, name, pl, err);
    if (!rc)
        rc = pl ? emit_env(b, pl, hit ? variant_of(bf) : ENV_NORMAL, bf ? bf->bytes : 0, err)
                : sr_buf_puts(b, "null", err);
    if (rc || !hit)
        return rc;
    if (bf->kind == SR_FK_DEEP_NESTING)
        return emit_nest(b, name, err);
    if (bf->kind == SR_FK_ESCAPED_QUOTE_KEY)
        rc = sr_buf_printf(b, err, ",\"x\\\"%s\":", name);
    else if (bf->kind == SR_FK_DUPLICATE_FIELD)
        rc = sr_buf_printf(b, err, ",\"%s\":", name);
    else if (bf->kind == SR_FK_EXTRA_ENVELOPE)
        rc = sr_buf_printf(b, err, ",\"%s\":", bf->key);
    else
        return 0;
    return rc ? rc : emit_env(b, pl, ENV_NORMAL, 0, err);
}

/* ---- model faults ---- */

int sr_gen_apply_model_fault(sr_gen_job *j, const sr_oracle *o, int *routes_null, sr_err *err)
{
    const sr_fault *f = j->model_fault;
    if (!f || !j->want_routes)
        return 0;
    const sr_oracle_model *m = sr_oracle_model_of(o);
    size_t L = (size_t)m->num_layers, K = (size_t)m->topk;
    int64_t rows = j->row_hi - j->row_lo;
    if (f->rule.active) /* a rule on the logprobs acts where they are written */
        return f->rule.field == SR_RF_ROUTED_EXPERTS
                   ? sr_gen_apply_rule(j, o, &f->rule, routes_null, err)
                   : 0;
    switch (f->kind) {
    case SR_FK_EXPERT_OUT_OF_RANGE:
    case SR_FK_EXPERT_DUPLICATE: {
        if (rows < 1 || (f->kind == SR_FK_EXPERT_DUPLICATE && K < 2))
            break;
        size_t r = (size_t)(f->row < rows ? f->row : rows - 1);
        size_t l = (size_t)f->layer < L ? (size_t)f->layer : L - 1;
        size_t at = (r * L + l) * K;
        if (f->kind == SR_FK_EXPERT_OUT_OF_RANGE)
            sr_gen_set_el(j->routes, j->gen_dtype, at, m->experts);
        else
            sr_gen_set_el(j->routes, j->gen_dtype, at + 1,
                          sr_gen_get_el(j->routes, j->gen_dtype, at));
        break;
    }
    default:
        break;
    }
    return 0;
}

/* ---- payloads ---- */

static int routes_payloads(payload *pl, payload *alt, const sr_gen_job *j, const sr_oracle *o,
                           int want_alt, sr_err *err)
{
    const sr_oracle_model *m = sr_oracle_model_of(o);
    size_t n = (size_t)(j->row_hi - j->row_lo) * (size_t)m->num_layers * (size_t)m->topk;
    int widen = j->body_fault && j->body_fault->kind == SR_FK_NON_CANONICAL_DTYPE;
    pl->ndim = alt->ndim = 3;
    pl->shape[0] = alt->shape[0] = j->row_hi - j->row_lo;
    pl->shape[1] = alt->shape[1] = m->num_layers;
    pl->shape[2] = alt->shape[2] = m->topk;
    int rc = make_payload(pl, j->routes, j->gen_dtype, n, 1, widen, err);
    if (rc || !want_alt)
        return rc;
    size_t bytes = n * sr_dtype_size(j->gen_dtype);
    void *shifted = malloc(bytes ? bytes : 1);
    if (!shifted)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes", bytes);
    for (size_t i = 0; i < n; i++)
        sr_gen_set_el(shifted, j->gen_dtype, i,
                      (sr_gen_get_el(j->routes, j->gen_dtype, i) + 1) % m->experts);
    rc = make_payload(alt, shifted, j->gen_dtype, n, 1, 0, err);
    if (!rc && !alt->owned) {
        alt->owned = shifted;
        return 0;
    }
    free(shifted);
    return rc;
}

static int support_payloads(payload *pl, payload *alt, const sr_gen_job *j, const sr_gen_ctx *c,
                            int want_alt, sr_err *err)
{
    const sr_oracle_model *m = sr_oracle_model_of(c->oracle);
    /* The later stack's rows are [G, top_k] of the request (gen_support.c). */
    int later = c->stack == SR_STACK_2086;
    size_t S = later ? (size_t)j->req.top_k : (size_t)c->support_k, G = (size_t)j->G;
    size_t cells = G * S > 0 ? G * S : 1;
    int32_t *rows = malloc(cells * 2 * sizeof(*rows)), *made = NULL;
    if (!rows)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate sample support");
    if (!later) {
        sr_gen_support_rows_2079(rows, j, c, S);
    } else {
        int rc = sr_gen_support_rows(&made, j, c, (int64_t)S, err);
        if (rc) {
            free(rows);
            return rc;
        }
        memcpy(rows, made, G * S * sizeof(*rows));
        free(made);
    }
    int32_t *shift = rows + G * S;
    for (size_t i = 0; i < G * S; i++)
        shift[i] = rows[i] < 0 ? rows[i] : (int32_t)((rows[i] + 1) % m->vocab);
    pl->ndim = alt->ndim = 2;
    pl->shape[0] = alt->shape[0] = (int64_t)G;
    pl->shape[1] = alt->shape[1] = (int64_t)S;
    pl->dt = alt->dt = SR_DTYPE_INT32;
    pl->nbytes = alt->nbytes = G * S * sizeof(int32_t);
    pl->bytes = rows;
    pl->owned = rows;
    alt->bytes = want_alt ? shift : NULL;
    alt->owned = NULL;
    return 0;
}

/*
 * A field emitted from its definition (lib/sr_gen_extra.h); its look-alike, when a body fault asks
 * for one, holds the same array with every byte's lowest bit flipped.
 */
static int emit_extra(sr_buf *b, const sr_gen_job *j, const sr_gen_ctx *c, const sr_field_def *d,
                      int want_alt, sr_err *err)
{
    sr_gen_extra x;
    int rc = sr_gen_extra_make(&x, d, c->seed, j->req.tokens, j->req.P, j->tokens, (size_t)j->G,
                               d->max_bytes, err);
    unsigned char *flipped = NULL;
    if (!rc && want_alt && !(flipped = malloc(x.nbytes ? x.nbytes : 1)))
        rc = sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes", x.nbytes);
    payload pl = {0}, alt = {0};
    if (!rc) {
        pl.bytes = x.bytes;
        pl.nbytes = x.nbytes;
        pl.ndim = x.ndim;
        memcpy(pl.shape, x.shape, sizeof(pl.shape));
        pl.dt = x.dtype;
        alt = pl;
        for (size_t i = 0; flipped && i < x.nbytes; i++)
            flipped[i] = x.bytes[i] ^ 1u;
        alt.bytes = flipped;
        rc = emit_field(b, d->name, &pl, flipped ? &alt : NULL, j->body_fault, err);
    }
    free(flipped);
    sr_gen_extra_release(&x);
    return rc;
}

/* ---- the body ---- */

int sr_gen_emit_logprobs(sr_buf *b, sr_gen_job *j, sr_err *err)
{
    if (j->req.logprobs < 0)
        return sr_buf_puts(b, ",\"logprobs\":null", err);
    if (sr_gen_logprobs_dropped(j))
        return 0;
    return sr_gen_put_logprobs(b, j, err);
}

int sr_gen_emit_syncroll(sr_buf *b, const sr_gen_job *j, const sr_gen_ctx *c, sr_err *err)
{
    int rc = sr_buf_puts(b, ",\"syncroll\":{\"engine\":", err);
    if (!rc)
        rc = sr_jw_str(b, c->engine_id, err);
    if (!rc)
        rc = sr_buf_puts(b, ",\"weight_version\":", err);
    if (!rc)
        rc = sr_jw_i64(b, j->last.version, err);
    if (!rc)
        rc = sr_buf_puts(b, ",\"rows\":[", err);
    for (size_t i = 0; !rc && i < j->nspans; i++) {
        rc = sr_buf_puts(b, i ? ",[" : "[", err);
        if (!rc)
            rc = sr_jw_i64(b, j->spans[i].lo, err);
        if (!rc)
            rc = sr_buf_puts(b, ",", err);
        if (!rc)
            rc = sr_jw_i64(b, j->spans[i].hi, err);
        if (!rc)
            rc = sr_buf_puts(b, ",", err);
        if (!rc)
            rc = sr_jw_i64(b, j->spans[i].version, err);
        if (!rc)
            rc = sr_buf_puts(b, "]", err);
    }
    if (!rc)
        rc = sr_buf_puts(b, "]", err);
    int nf = 0;
    const sr_fault *fs[2] = {j->model_fault, j->body_fault};
    for (int i = 0; !rc && i < 2; i++)
        if (fs[i])
            rc = sr_buf_printf(b, err, "%s\"%s\"", nf++ ? "," : ",\"faults\":[",
                               sr_fault_kind_name(fs[i]->kind));
    if (!rc && nf)
        rc = sr_buf_puts(b, "]", err);
    return rc ? rc : sr_buf_puts(b, "}", err);
}

/* Python's json.dumps separators: ", " and ": " outside strings. */
static int respace(sr_buf *b, sr_err *err)
{
    sr_buf o = SR_BUF_INIT;
    o.max = b->max;
    int rc = sr_buf_reserve(&o, b->len + b->len / 4 + 16, err);
    int in_str = 0, esc = 0;
    for (size_t i = 0; !rc && i < b->len; i++) {
        char ch = b->data[i];
        rc = sr_buf_append(&o, &ch, 1, err);
        if (in_str) {
            if (esc)
                esc = 0;
            else if (ch == '\\')
                esc = 1;
            else if (ch == '"')
                in_str = 0;
        } else if (ch == '"') {
            in_str = 1;
        } else if (!rc && (ch == ',' || ch == ':')) {
            rc = sr_buf_append(&o, " ", 1, err);
        }
    }
    if (rc) {
        sr_buf_release(&o);
        return rc;
    }
    sr_buf_release(b);
    *b = o;
    return 0;
}

static int emit_choice_fields(sr_buf *b, sr_gen_job *j, const sr_gen_ctx *c, int routes_null,
                              sr_err *err)
{
    int rc = 0;
    const sr_fault *bf = j->body_fault;
    payload rp = {0}, ra = {0}, sp = {0}, sa = {0};
    int has_routes = c->routes && j->want_routes && !routes_null;
    int alt = bf && bf->kind == SR_FK_LOOKALIKE_FIELD;
    /* 2079: the support in every reply when the engine emits the field; the later stack: the key
     * in every choice, an envelope for a capture request and null otherwise (#2082). */
    int later = c->stack == SR_STACK_2086;
    int has_support = later ? j->req.want_support : c->support;
    if (!rc && has_routes)
        rc = routes_payloads(&rp, &ra, j, c->oracle, alt, err);
    if (!rc && has_support)
        rc = support_payloads(&sp, &sa, j, c, alt, err);
    if (!rc)
        rc = emit_field(b, "routed_experts", has_routes ? &rp : NULL, alt ? &ra : NULL, bf, err);
    if (!rc && (has_support || later))
        rc = emit_field(b, "rollout_sample_support", has_support ? &sp : NULL, alt ? &sa : NULL, bf,
                        err);
    free(rp.owned);
    free(ra.owned);
    free(sp.owned);
    for (int i = 0; !rc && i < c->n_extra; i++)
        rc = emit_extra(b, j, c, &c->extra[i], alt, err);
    return rc;
}

int sr_gen_body(sr_buf *out, sr_gen_job *j, const sr_gen_ctx *c, sr_err *err)
{
    sr_buf_reset(out);
    out->max = c->max_body;
    j->clamped = 0;
    j->crashed = 0;
    /* Model faults first: a rule may cut the tokens (truncate with partial) before they are
     * written. */
    int routes_null = 0;
    int rc = sr_gen_apply_model_fault(j, c->oracle, &routes_null, err);
    if (rc)
        return rc;
    if (j->native)
        rc = sr_buf_printf(out, err, "{\"request_id\":\"%s-%lld\",\"choices\":[{\"index\":0,",
                           c->engine_id, (long long)c->request_ordinal);
    else
        rc = sr_buf_puts(out, "{\"choices\":[{", err);
    if (!rc)
        rc = sr_buf_puts(out, "\"token_ids\":", err);
    if (!rc)
        rc = sr_jw_i32_array(out, j->tokens, (size_t)j->G, err);
    if (!rc)
        rc = sr_jw_cat(out, ",\"finish_reason\":\"", sr_gen_finish_name(j->finish), "\"", err);
    int capture = !j->native && c->stack == SR_STACK_2086 && j->req.want_support;
    if (!rc)
        rc =
            capture ? sr_gen_emit_capture_logprobs(out, j, err) : sr_gen_emit_logprobs(out, j, err);
    if (!rc && !j->native)
        rc = emit_choice_fields(out, j, c, routes_null, err);
    if (!rc)
        rc = sr_gen_emit_syncroll(out, j, c, err);
    if (!rc)
        rc = sr_buf_puts(out, "}]}", err);
    if (!rc && j->body_fault && j->body_fault->kind == SR_FK_RESPACED_JSON)
        rc = respace(out, err);
    return rc;
}
