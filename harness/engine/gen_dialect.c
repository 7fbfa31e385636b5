/*
 * The reply serialiser for the wires of spec/dialect.h other than skyrl's envelope: the job's
 * oracle rows (model faults applied, as for skyrl) cut to the dialect's rows rule, re-typed by
 * its dtype rule, written in its encoding at its place in its frame. One table of writers per
 * encoding; no branch on a dialect's name.
 */
#include <stdlib.h>
#include <string.h>

#include "gen_priv.h"
#include "jsonw.h"
#include "sr_base64.h"
#include "sr_envelope.h"
#include "sr_gen_extra.h"
#include "sr_npy.h"
#include "sr_nrlre.h"

/* The route array a wire carries, as int64 values [rows, L, K], and how to type it. */
typedef struct wire_rows {
    int64_t *v; /* owned */
    int64_t rows, L, K;
    int64_t prompt_rows; /* SR_ROWS_SPLIT: rows of the prompt region */
    int64_t start;       /* first oracle row */
    sr_dtype dt;         /* the dialect's dtype (SR_DTYPE_INVALID for nested lists) */
    int big_endian;      /* fault npy_big_endian: elements byte-swapped, descr '>' */
    int fortran;         /* fault npy_fortran_order: elements column-major */
    int bad_b64;         /* fault bad_base64: a '!' at base64 character bad_off (or the last) */
    int64_t bad_off;
    int count_off; /* fault byte_count_off: the shape (or byte count) says one row more */
} wire_rows;

/*
 * SGLang after sgl-project/sglang#36404 (engines.masked_padding): the rows of the padded region
 * at each chunked-prefill boundary, masked to -1 at the capture site, reach the reply as -1 in
 * every layer and slot: prompt positions p >= chunk with p % chunk < rows.
 */
static void mask_padding(wire_rows *w, const sr_gen_job *j, const sr_gen_ctx *c)
{
    size_t cell = (size_t)(w->L * w->K);
    for (int64_t r = 0; c->mask_chunk > 0 && r < w->rows; r++) {
        int64_t p = w->start + r;
        if (p < (int64_t)j->req.P && p >= c->mask_chunk && p % c->mask_chunk < c->mask_rows)
            for (size_t i = 0; i < cell; i++)
                w->v[(size_t)r * cell + i] = -1;
    }
}

static int collect_rows(wire_rows *w, sr_gen_job *j, const sr_gen_ctx *c, sr_err *err)
{
    const sr_oracle *o = c->oracle;
    const sr_oracle_model *m = sr_oracle_model_of(o);
    const sr_dialect_desc *d = j->dialect;
    int rc = d->rows == SR_ROWS_SPLIT ? sr_gen_add_last_row(j, o, err) : 0;
    if (rc)
        return rc;
    w->L = m->num_layers;
    w->K = m->topk;
    w->start = j->row_lo;
    int64_t have = j->row_hi - j->row_lo;
    w->rows = have + (d->rows == SR_ROWS_FILLER ? 1 : 0);
    w->prompt_rows = (int64_t)j->req.P < have ? (int64_t)j->req.P : have;
    w->dt = d->dtype ? d->dtype(m->experts) : SR_DTYPE_INVALID;
    size_t cell = (size_t)(w->L * w->K), n = (size_t)w->rows * cell;
    w->v = malloc((n ? n : 1) * sizeof(*w->v));
    if (!w->v)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu route values", n);
    for (size_t i = 0; i < (size_t)have * cell; i++)
        w->v[i] = sr_gen_get_el(j->routes, j->gen_dtype, i);
    for (size_t i = (size_t)have * cell; i < n; i++)
        w->v[i] = (int64_t)(i % (size_t)w->K); /* NeMo-RL's filler row: arange(K) per layer */
    const sr_fault *f = j->model_fault;
    if (f && f->kind == SR_FK_PREFIX_CACHED_SENTINEL && d->rows == SR_ROWS_SPLIT) {
        /* vLLM 0.21 marks the prompt positions its prefix cache served with -1. */
        int64_t hi = f->row < w->prompt_rows ? f->row : w->prompt_rows;
        for (size_t i = 0; i < (size_t)(hi > w->start ? hi - w->start : 0) * cell; i++)
            w->v[i] = -1;
    }
    mask_padding(w, j, c);
    return 0;
}

/* Appends `"` + base64(head bytes, then rows [r0, r1) typed w->dt) + `"`. */
static int put_b64(sr_buf *b, const wire_rows *w, const void *head, size_t head_len, sr_err *err)
{
    size_t cell = (size_t)(w->L * w->K), n = (size_t)w->rows * cell, isz = sr_dtype_size(w->dt);
    size_t raw_len = head_len + n * isz;
    unsigned char *raw = malloc(raw_len ? raw_len : 1);
    if (!raw)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes", raw_len);
    if (head_len)
        memcpy(raw, head, head_len);
    size_t R = (size_t)w->rows, L = (size_t)w->L, K = (size_t)w->K;
    for (size_t i = 0; i < n; i++) {
        /* Fortran order: element (r, l, k) at r + R * (l + L * k). */
        size_t at = w->fortran ? i / (L * K) + R * ((i / K) % L + L * (i % K)) : i;
        unsigned char *p = raw + head_len + at * isz;
        sr_gen_set_el(raw + head_len, w->dt, at, w->v[i]);
        for (size_t a = 0; w->big_endian && a < isz / 2; a++) {
            unsigned char t = p[a];
            p[a] = p[isz - 1 - a];
            p[isz - 1 - a] = t;
        }
    }
    /* byte_count_off on a wire without a shape (sglang's flat int32): one byte short. */
    if (w->count_off && !head_len && w->dt == SR_DTYPE_INT32 && raw_len)
        raw_len--;
    size_t enc = sr_base64_encoded_len(raw_len);
    int rc = sr_buf_reserve(b, enc + 6, err);
    if (!rc) {
        b->data[b->len++] = '"';
        char *at = b->data + b->len;
        b->len += sr_base64_encode(at, raw, raw_len, SR_B64_AUTO);
        if (w->bad_b64 && enc)
            at[w->bad_off >= 0 && (size_t)w->bad_off < enc ? (size_t)w->bad_off : enc - 1] = '!';
        else if (w->bad_b64) {
            memcpy(at, "!!!!", 4); /* an empty blob: four bad characters */
            b->len += 4;
        }
        b->data[b->len++] = '"';
    }
    free(raw);
    return rc;
}

static int put_shape(sr_buf *b, const wire_rows *w, sr_err *err)
{
    return sr_buf_printf(b, err, "[%lld,%lld,%lld]", (long long)(w->rows + w->count_off),
                         (long long)w->L, (long long)w->K);
}

/* Nested lists of rows [r0, r1). */
static int put_nested(sr_buf *b, const wire_rows *w, int64_t r0, int64_t r1, sr_err *err)
{
    int rc = sr_buf_reserve(b, (size_t)(r1 - r0) * (size_t)(w->L * (w->K * 7 + 3) + 3) + 2, err);
    if (!rc)
        rc = sr_buf_puts(b, "[", err);
    for (int64_t r = r0; !rc && r < r1; r++) {
        rc = sr_buf_puts(b, r > r0 ? ",[" : "[", err);
        for (int64_t l = 0; !rc && l < w->L; l++) {
            rc = sr_buf_puts(b, l ? ",[" : "[", err);
            for (int64_t k = 0; !rc && k < w->K; k++)
                rc = sr_buf_printf(b, err, k ? ",%lld" : "%lld",
                                   (long long)w->v[(r * w->L + l) * w->K + k]);
            if (!rc)
                rc = sr_buf_puts(b, "]", err);
        }
        if (!rc)
            rc = sr_buf_puts(b, "]", err);
    }
    return rc ? rc : sr_buf_puts(b, "]", err);
}

/* ---- the extra fields (engine config `fields` definitions) beside the routes ---- */

/* What the writers need to emit the extra fields after the routes. */
typedef struct extras {
    const sr_gen_job *j;
    const sr_gen_ctx *c;
    sr_dialect d;
} extras;

/* Appends `"` + text (tl bytes, as is) + base64(head bytes, then body bytes) + `"`. */
static int put_b64_two(sr_buf *b, const char *text, size_t tl, const void *head, size_t hl,
                       const void *body, size_t n, sr_err *err)
{
    unsigned char *joined = hl ? malloc(hl + n) : NULL;
    if (hl && !joined)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes", hl + n);
    if (joined) {
        memcpy(joined, head, hl);
        if (n)
            memcpy(joined + hl, body, n);
    }
    const void *src = joined ? (const void *)joined : body;
    int rc = sr_buf_reserve(b, tl + sr_base64_encoded_len(hl + n) + 2, err);
    if (!rc) {
        b->data[b->len++] = '"';
        if (tl)
            memcpy(b->data + b->len, text, tl);
        b->len += tl;
        b->len += sr_base64_encode(b->data + b->len, src, hl + n, SR_B64_AUTO);
        b->data[b->len++] = '"';
    }
    free(joined);
    return rc;
}

/* Nested lists of x's axes from `axis` on, elements from *at (advanced). */
static int put_nested_extra(sr_buf *b, const sr_gen_extra *x, int axis, size_t *at, sr_err *err)
{
    int rc = sr_buf_puts(b, "[", err);
    for (int64_t i = 0; !rc && i < x->shape[axis]; i++) {
        if (i)
            rc = sr_buf_puts(b, ",", err);
        if (!rc && axis + 1 < x->ndim)
            rc = put_nested_extra(b, x, axis + 1, at, err);
        else if (!rc)
            rc = sr_buf_printf(b, err, "%lld",
                               (long long)sr_gen_get_el(x->bytes, x->dtype, (*at)++));
    }
    return rc ? rc : sr_buf_puts(b, "]", err);
}

/* The value of one extra field in the wire of encoding `enc` (sr_dialect_field_def's rules). */
static int put_extra_value(sr_buf *b, const sr_gen_extra *x, sr_route_encoding enc, sr_err *err)
{
    char head[SR_NPY_HEADER_MAX > SR_NRLRE_PREFIX_MAX ? SR_NPY_HEADER_MAX : SR_NRLRE_PREFIX_MAX];
    size_t hl = 0, at = 0;
    sr_ndarray a;
    int rc;
    switch (enc) {
    case SR_ENC_NPY:
        rc = sr_npy_write_header(&hl, head, sizeof(head), x->dtype, x->shape, x->ndim, err);
        return rc ? rc : put_b64_two(b, NULL, 0, head, hl, x->bytes, x->nbytes, err);
    case SR_ENC_FLAT_B64:
        return put_b64_two(b, NULL, 0, NULL, 0, x->bytes, x->nbytes, err);
    case SR_ENC_NRLRE:
        rc = sr_nrlre_write_prefix(&hl, head, sizeof(head), x->dtype, x->shape, err);
        return rc ? rc : put_b64_two(b, head, hl, NULL, 0, x->bytes, x->nbytes, err);
    case SR_ENC_NESTED:
        return put_nested_extra(b, x, 0, &at, err);
    default: /* SR_ENC_OBJECT: {"data","shape","dtype"} */
        memset(&a, 0, sizeof(a));
        a.dtype = x->dtype;
        a.ndim = x->ndim;
        memcpy(a.shape, x->shape, sizeof(a.shape));
        a.data = x->bytes;
        a.nbytes = x->nbytes;
        return sr_envelope_pack(b, &a, 0, NULL, SR_B64_AUTO, err);
    }
}

/* Appends `,"<name>":<value>` for every extra field (the first without its comma when
 * `comma` is 0). A field the wire cannot carry fails the reply (dialect.field_unsupported). */
static int put_extras(sr_buf *b, const extras *e, int comma, sr_err *err)
{
    const sr_gen_job *j = e->j;
    const sr_gen_ctx *c = e->c;
    int rc = 0;
    for (int i = 0; !rc && i < c->n_extra; i++) {
        const sr_field_def *d = &c->extra[i];
        sr_field_def w;
        sr_gen_extra x;
        if ((rc = sr_dialect_field_def(&w, d, e->d, err)))
            break;
        rc = sr_gen_extra_make(&x, d, c->seed, j->req.tokens, j->req.P, j->tokens, (size_t)j->G,
                               d->max_bytes, err);
        if (rc)
            break;
        rc = sr_buf_printf(b, err, "%s\"%s\":", comma || i ? "," : "", d->name);
        if (!rc)
            rc = put_extra_value(b, &x, sr_dialect_get(e->d)->encoding, err);
        sr_gen_extra_release(&x);
    }
    return rc;
}

/* ---- the writers, one row per encoding; w NULL: the reply carries no routes; each writes
 * the extra fields after the routes, in the same object ---- */

typedef int (*put_fn)(sr_buf *b, const wire_rows *w, const extras *x, sr_err *err);

typedef struct enc_ops {
    put_fn in_message;  /* inside choices[0].message (chat frames) */
    put_fn in_choice;   /* inside choices[0] (SGLang: inside meta_info) */
    put_fn in_response; /* at the top level, after the choices */
} enc_ops;

static int npy_routes(sr_buf *b, const wire_rows *w, sr_err *err)
{
    int rc = sr_buf_puts(b, ",\"routed_experts\":", err);
    if (rc || !w)
        return rc ? rc : sr_buf_puts(b, "null", err);
    char head[SR_NPY_HEADER_MAX];
    size_t hl = 0;
    int64_t shape[3] = {w->rows + w->count_off, w->L, w->K};
    rc = sr_npy_write_header(&hl, head, sizeof(head), w->dt, shape, 3, err);
    /* The faults rewrite the header's text in place (same lengths: '<' to '>', False to True
     * and a space of the padding). */
    char *at = w->big_endian ? memchr(head, '<', hl) : NULL;
    if (at)
        *at = '>';
    at = w->fortran ? memmem(head, hl, "False", 5) : NULL;
    if (at)
        memcpy(at, "True ", 5);
    return rc ? rc : put_b64(b, w, head, hl, err);
}

static int npy_choice(sr_buf *b, const wire_rows *w, const extras *x, sr_err *err)
{
    int rc = npy_routes(b, w, err);
    return rc ? rc : put_extras(b, x, 1, err);
}

static int nested_choice(sr_buf *b, const wire_rows *w, const extras *x, sr_err *err)
{
    int rc = sr_buf_puts(b, ",\"routed_experts\":", err);
    if (!rc)
        rc = w ? put_nested(b, w, w->prompt_rows, w->rows, err) : sr_buf_puts(b, "null", err);
    return rc ? rc : put_extras(b, x, 1, err);
}

static int nested_response(sr_buf *b, const wire_rows *w, const extras *x, sr_err *err)
{
    (void)x;
    int rc = sr_buf_puts(b, ",\"prompt_routed_experts\":", err);
    if (rc || !w)
        return rc ? rc : sr_buf_puts(b, "null", err);
    return put_nested(b, w, 0, w->prompt_rows, err);
}

static int flat_choice(sr_buf *b, const wire_rows *w, const extras *x, sr_err *err)
{
    int rc = 0;
    if (w) { /* SGLang leaves the key out unless routes were asked for */
        rc = sr_buf_puts(b, ",\"routed_experts\":", err);
        if (!rc)
            rc = put_b64(b, w, NULL, 0, err);
    }
    return rc ? rc : put_extras(b, x, 1, err);
}

static int object_routes(sr_buf *b, const wire_rows *w, sr_err *err)
{
    int rc = sr_buf_puts(b, "\"routed_experts\":{\"data\":", err);
    if (!rc)
        rc = put_b64(b, w, NULL, 0, err);
    if (!rc)
        rc = sr_buf_puts(b, ",\"shape\":", err);
    if (!rc)
        rc = put_shape(b, w, err);
    if (!rc)
        rc = sr_buf_printf(b, err, ",\"start\":%lld,\"dtype\":\"%s\"}", (long long)w->start,
                           sr_dtype_name(w->dt));
    return rc;
}

static int nrlre_routes(sr_buf *b, const wire_rows *w, sr_err *err)
{
    int rc = sr_buf_puts(b, ",\"routed_experts\":", err);
    if (rc || !w)
        return rc ? rc : sr_buf_puts(b, "null", err);
    char pre[SR_NRLRE_PREFIX_MAX];
    size_t pl = 0;
    int64_t shape[3] = {w->rows + w->count_off, w->L, w->K};
    rc = sr_nrlre_write_prefix(&pl, pre, sizeof(pre), w->dt, shape, err);
    size_t at = b->len;
    if (!rc)
        rc = put_b64(b, w, NULL, 0, err);
    if (rc)
        return rc;
    /* "<b64>" -> "<prefix><b64>": the prefix goes after the opening quote. */
    if ((rc = sr_buf_reserve(b, pl, err)))
        return rc;
    memmove(b->data + at + 1 + pl, b->data + at + 1, b->len - at - 1);
    memcpy(b->data + at + 1, pre, pl);
    b->len += pl;
    return 0;
}

static int object_response(sr_buf *b, const wire_rows *w, const extras *x, sr_err *err)
{
    if (!w && !x->c->n_extra)
        return 0;
    int rc = sr_buf_puts(b, ",\"nvext\":{\"engine_data\":{", err);
    if (!rc && w)
        rc = object_routes(b, w, err);
    if (!rc)
        rc = put_extras(b, x, w != NULL, err);
    return rc ? rc : sr_buf_puts(b, "}}", err);
}

static int nrlre_message(sr_buf *b, const wire_rows *w, const extras *x, sr_err *err)
{
    int rc = nrlre_routes(b, w, err);
    return rc ? rc : put_extras(b, x, 1, err);
}

static const enc_ops ENC[] = {
    [SR_ENC_ENVELOPE] = {NULL, NULL, NULL}, /* sr_gen_body */
    [SR_ENC_NPY] = {NULL, npy_choice, NULL},
    [SR_ENC_NESTED] = {NULL, nested_choice, nested_response},
    [SR_ENC_FLAT_B64] = {NULL, flat_choice, NULL},
    [SR_ENC_OBJECT] = {NULL, NULL, object_response},
    [SR_ENC_NRLRE] = {nrlre_message, NULL, NULL},
};

static int hook(put_fn f, sr_buf *b, const wire_rows *w, const extras *x, sr_err *err)
{
    return f ? f(b, w, x, err) : 0;
}

/* ---- the frames ---- */

static int put_tokens(sr_buf *b, const char *key, const sr_gen_job *j, sr_err *err)
{
    int rc = sr_buf_printf(b, err, ",\"%s\":", key);
    return rc ? rc : sr_jw_i32_array(b, j->tokens, (size_t)j->G, err);
}

/* The OpenAI frames' head: {"id":..,"object":..,"model":..,"choices":[{"index":0 */
static int openai_head(sr_buf *b, const sr_gen_job *j, const sr_gen_ctx *c, const char *id_pre,
                       const char *object, sr_err *err)
{
    int rc = sr_buf_printf(b, err, "{\"id\":\"%s%s-%lld\",\"object\":\"%s\",\"model\":", id_pre,
                           c->engine_id, (long long)c->request_ordinal, object);
    if (!rc)
        rc = sr_jw_str(b, j->req.model ? j->req.model : "default", err);
    return rc ? rc : sr_buf_puts(b, ",\"choices\":[{\"index\":0", err);
}

/* The logprobs of an OpenAI completions choice (CompletionLogProbs): ,"logprobs":{"text_offset":
 * [0,..],"token_logprobs":[x,..],"tokens":["token_id:<id>",..],"top_logprobs":[null,..]}, null
 * when not asked for; clamped as sr_gen_emit_logprobs does. The mock has no tokenizer: its text is
 * "" and a token is named by its id, as vLLM's return_tokens_as_token_ids names it. */
static int completions_logprobs(sr_buf *b, sr_gen_job *j, sr_err *err)
{
    if (j->req.logprobs < 0)
        return sr_buf_puts(b, ",\"logprobs\":null", err);
    if (sr_gen_logprobs_dropped(j))
        return 0;
    int rc = sr_buf_reserve(b, (size_t)j->G * 56 + 96, err);
    if (!rc)
        rc = sr_buf_puts(b, ",\"logprobs\":{\"text_offset\":[", err);
    for (int64_t i = 0; !rc && i < j->G; i++)
        rc = sr_buf_puts(b, i ? ",0" : "0", err);
    if (!rc)
        rc = sr_buf_puts(b, "],\"token_logprobs\":[", err);
    for (int64_t i = 0; !rc && i < j->G; i++) {
        if (i)
            rc = sr_buf_puts(b, ",", err);
        if (!rc)
            rc = sr_gen_put_logprob(b, j, i, err);
    }
    if (!rc)
        rc = sr_buf_puts(b, "],\"tokens\":[", err);
    for (int64_t i = 0; !rc && i < j->G; i++)
        rc = sr_buf_printf(b, err, "%s\"token_id:%d\"", i ? "," : "", (int)j->tokens[i]);
    if (!rc)
        rc = sr_buf_puts(b, "],\"top_logprobs\":[", err);
    for (int64_t i = 0; !rc && i < j->G; i++)
        rc = sr_buf_puts(b, i ? ",null" : "null", err);
    return rc ? rc : sr_buf_puts(b, "]}", err);
}

/* SGLang's meta_info.output_token_logprobs: [[logprob, token_id, null], ..] when asked for. */
static int sglang_logprobs(sr_buf *b, sr_gen_job *j, sr_err *err)
{
    if (j->req.logprobs < 0 || sr_gen_logprobs_dropped(j))
        return 0;
    int rc = sr_buf_puts(b, ",\"output_token_logprobs\":[", err);
    for (int64_t i = 0; !rc && i < j->G; i++) {
        rc = sr_buf_puts(b, i ? ",[" : "[", err);
        if (!rc)
            rc = sr_gen_put_logprob(b, j, i, err);
        if (!rc)
            rc = sr_buf_printf(b, err, ",%d,null]", (int)j->tokens[i]);
    }
    return rc ? rc : sr_buf_puts(b, "]", err);
}

/* The routes (and extra fields) in the response-level object `ext` (SGLang's OpenAI routes:
 * "sglext"), written by the encoding's choice writer; left out when it writes nothing. */
static int ext_routes(sr_buf *b, const char *ext, put_fn f, const wire_rows *w, const extras *x,
                      sr_err *err)
{
    size_t at = b->len;
    int rc = sr_buf_printf(b, err, ",\"%s\":{", ext);
    size_t open = b->len;
    if (!rc)
        rc = hook(f, b, w, x, err);
    if (rc || b->len == open) {
        b->len = at;
        return rc;
    }
    /* The writer's members begin with a comma: the object's first one must not. */
    memmove(b->data + open, b->data + open + 1, b->len - open - 1);
    b->len--;
    return sr_buf_puts(b, "}", err);
}

/* The rest of SGLang's abort reason, FINISH_ABORT.to_json (python/sglang/srt/managers/
 * schedule_batch.py): {"type": "abort", "message": ..., "status_code": ..., "err_type": ...}. */
#define SGLANG_ABORT_REST ",\"message\":\"Aborted\",\"status_code\":null,\"err_type\":null"

static int frame(sr_buf *b, sr_gen_job *j, const sr_gen_ctx *c, const enc_ops *e,
                 const wire_rows *w, const extras *x, sr_err *err)
{
    const char *ext = j->route->routes_ext;
    const char *fin = sr_gen_finish_name(j->finish);
    int rc = 0;
    switch (j->route->api) {
    case SR_API_SGLANG:
        rc = sr_buf_puts(b, "{\"text\":\"\"", err);
        if (!rc)
            rc = put_tokens(b, "output_ids", j, err);
        if (!rc)
            rc = sr_buf_printf(b, err,
                               ",\"meta_info\":{\"id\":\"%s-%lld\",\"finish_reason\":{\"type\":"
                               "\"%s\"%s},\"prompt_tokens\":%zu,\"completion_tokens\":%lld",
                               c->engine_id, (long long)c->request_ordinal, fin,
                               j->finish == SR_GEN_ABORT ? SGLANG_ABORT_REST : "", j->req.P,
                               (long long)j->G);
        if (!rc)
            rc = sglang_logprobs(b, j, err);
        if (!rc)
            rc = hook(e->in_choice, b, w, x, err);
        if (!rc)
            rc = sr_buf_puts(b, "}", err);
        if (!rc)
            rc = sr_gen_emit_syncroll(b, j, c, err);
        return rc ? rc : sr_buf_puts(b, "}", err);
    case SR_API_CHAT:
        rc = openai_head(b, j, c, "chatcmpl-", "chat.completion", err);
        if (!rc)
            rc = sr_buf_puts(b, ",\"message\":{\"role\":\"assistant\",\"content\":\"\"", err);
        if (!rc)
            rc = hook(e->in_message, b, w, x, err);
        if (!rc)
            rc = sr_buf_puts(b, "}", err);
        break;
    case SR_API_COMPLETIONS:
        rc = openai_head(b, j, c, "cmpl-", "text_completion", err);
        if (!rc)
            rc = sr_buf_puts(b, ",\"text\":\"\"", err);
        break;
    default: /* SR_API_NATIVE */
        rc = sr_buf_printf(b, err, "{\"request_id\":\"%s-%lld\",\"choices\":[{\"index\":0",
                           c->engine_id, (long long)c->request_ordinal);
        break;
    }
    if (!rc && !j->req.no_tokens)
        rc = put_tokens(b, "token_ids", j, err);
    if (!rc)
        rc = sr_buf_printf(b, err, ",\"finish_reason\":\"%s\"", fin);
    if (!rc)
        rc = j->route->api == SR_API_COMPLETIONS ? completions_logprobs(b, j, err)
                                                 : sr_gen_emit_logprobs(b, j, err);
    if (!rc && !ext)
        rc = hook(e->in_choice, b, w, x, err);
    if (!rc)
        rc = sr_gen_emit_syncroll(b, j, c, err);
    if (!rc)
        rc = sr_buf_puts(b, "}]", err);
    if (!rc)
        rc = ext ? ext_routes(b, ext, e->in_choice, w, x, err) : hook(e->in_response, b, w, x, err);
    return rc ? rc : sr_buf_puts(b, "}", err);
}

int sr_gen_body_dialect(sr_buf *out, sr_gen_job *j, const sr_gen_ctx *c, sr_err *err)
{
    if (!j->route || !j->dialect || j->dialect->encoding == SR_ENC_ENVELOPE)
        return sr_gen_body(out, j, c, err);
    sr_buf_reset(out);
    out->max = c->max_body;
    j->clamped = 0;
    int routes_null = 0;
    int rc = sr_gen_apply_model_fault(j, c->oracle, &routes_null, err);
    wire_rows w = {0};
    int has = !rc && c->routes && j->want_routes && !routes_null;
    if (has)
        rc = collect_rows(&w, j, c, err);
    const sr_fault *bf = j->body_fault;
    /* Body faults aimed at another field than the routes have nothing to corrupt here. */
    if (bf && bf->field[0] && strcmp(bf->field, "routed_experts") != 0)
        bf = NULL;
    w.big_endian = bf && bf->kind == SR_FK_NPY_BIG_ENDIAN;
    w.fortran = bf && bf->kind == SR_FK_NPY_FORTRAN_ORDER;
    w.bad_b64 = bf && bf->kind == SR_FK_BAD_BASE64;
    w.bad_off = bf && bf->has_bytes ? bf->bytes : -1;
    w.count_off = bf && bf->kind == SR_FK_BYTE_COUNT_OFF;
    extras x = {j, c, (sr_dialect)sr_dialect_lookup(j->dialect->name)};
    if (!rc)
        rc = frame(out, j, c, &ENC[j->dialect->encoding], has ? &w : NULL, &x, err);
    free(w.v);
    return rc;
}
