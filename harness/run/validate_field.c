/* The battery of `syncroll validate-field` (validate_field.h). */
#include "validate_field.h"
#include "validate_field_wire.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sr_gen_extra.h"
#include "sr_buf.h"
#include "sr_clock.h"
#include "sr_envelope.h"
#include "sr_splice.h"

static const sr_vf_fault FAULTS[] = {
    {"bad_base64", SR_E_B64_CHAR},
    {"byte_count_off", SR_E_ENV_BYTE_COUNT},
    {"reordered_envelope", SR_E_SPLICE_DRIFT},
    {"respaced_json", SR_E_SPLICE_DRIFT},
    {"data_null", SR_E_SPLICE_DRIFT},
    {"escaped_quote_key", SR_E_SPLICE_ORPHAN},
    {"duplicate_field", SR_E_JSON_DUPLICATE_KEY},
    {"lookalike_field", 0},
    {"extra_envelope", 0},
};

const sr_vf_fault *sr_vf_faults(size_t *n)
{
    *n = sizeof(FAULTS) / sizeof(FAULTS[0]);
    return FAULTS;
}

/* Timed repetitions of the throughput measurement (the median is reported). */
#define REPS 11
/* Chunk size of the streamed splice in the round trip: small and odd, so chunk edges fall
 * inside keys, anchors and blobs. */
#define CHUNK 7

typedef struct vf {
    const sr_vf_input *in;
    sr_splicer *one, *two; /* one-shot and streamed: two results alive at once */
    int failed;
    size_t emitted, onepass, blobs; /* from the clean bodies, for one-pass */
} vf;

static void line(vf *v, const char *status, const char *check, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void line(vf *v, const char *status, const char *check, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(v->in->out, "  %-4s  %-10s  ", status, check);
    vfprintf(v->in->out, fmt, ap);
    fputc('\n', v->in->out);
    va_end(ap);
    if (strcmp(status, "FAIL") == 0)
        v->failed++;
}

static const char *code_name(int code)
{
    return code ? (sr_code_name(code) ? sr_code_name(code) : "?") : "valid";
}

static const sr_splice_entry *find(const sr_splice_result *r, const char *name)
{
    for (size_t i = 0; r && i < r->count; i++)
        if (strcmp(r->entries[i].field->name, name) == 0)
            return &r->entries[i];
    return NULL;
}

static int splice_chunked(sr_splicer *s, const char *b, size_t n, const sr_splice_result **r,
                          sr_err *err)
{
    int rc = sr_splice_stream_begin(s, (int64_t)n, err);
    for (size_t at = 0; !rc && at < n; at += CHUNK)
        rc = sr_splice_stream_feed(s, b + at, n - at < CHUNK ? n - at : CHUNK, err);
    return rc ? rc : sr_splice_stream_finish(s, r, err);
}

/* The generated tokens of a reply (token_ids, sglang's output_ids), or NULL. */
static const sr_splice_entry *tokens_of(const sr_splice_result *r)
{
    const sr_splice_entry *t = find(r, "token_ids");
    return t ? t : find(r, "output_ids");
}

/* The engine's array for a clean or look-alike body: recomputed from the definition. */
static int expected_of(sr_gen_extra *x, const vf *v, const sr_vf_body *b, const sr_splice_result *r,
                       sr_err *err)
{
    const sr_splice_entry *t = tokens_of(r);
    size_t G = t ? (size_t)sr_ndarray_numel(&t->array) : 0;
    int32_t *gen = malloc((G ? G : 1) * sizeof(*gen));
    if (!gen)
        return sr_err_set(err, SR_E_NOMEM, "cannot copy %zu tokens", G);
    for (size_t i = 0; i < G; i++)
        gen[i] = (int32_t)sr_ndarray_get_i64(&t->array, i);
    int rc = sr_gen_extra_make(x, v->in->emit, v->in->seed, b->prompt, b->P, gen, G, 0, err);
    free(gen);
    return rc;
}

static void view(sr_ndarray *a, const sr_gen_extra *x)
{
    memset(a, 0, sizeof(*a));
    a->dtype = x->dtype;
    a->ndim = x->ndim;
    memcpy(a->shape, x->shape, sizeof(a->shape));
    a->data = x->bytes;
    a->nbytes = x->nbytes;
}

/* The splice's entry kind for a field read in wire w. */
static sr_splice_kind kind_of(const sr_field_def *w)
{
    return w->kind == SR_FIELD_STRING   ? SR_SPLICE_STRING
           : w->kind == SR_FIELD_NESTED ? SR_SPLICE_NESTED
                                        : SR_SPLICE_ENVELOPE;
}

/* Whether `got`, read in wire w, holds the values of `want`: byte for byte (dtype and shape
 * too) but that a raw string is flat and nested lists decode to int32/int64 elements. */
static int same_values(const sr_ndarray *got, const sr_ndarray *want, const sr_field_def *w)
{
    uint64_t n = sr_ndarray_numel(want);
    if (w->kind == SR_FIELD_STRING && w->wire == SR_WIRE_RAW)
        return got->dtype == want->dtype && got->ndim == 1 && (uint64_t)got->shape[0] == n &&
               got->nbytes == want->nbytes &&
               (n == 0 || memcmp(got->data, want->data, want->nbytes) == 0);
    if (w->kind != SR_FIELD_NESTED)
        return sr_ndarray_equal(got, want);
    if (got->ndim != want->ndim ||
        memcmp(got->shape, want->shape, (size_t)want->ndim * sizeof(int64_t)) != 0)
        return 0;
    for (uint64_t i = 0; i < n; i++)
        if (sr_ndarray_get_i64(got, i) != sr_ndarray_get_i64(want, i))
            return 0;
    return 1;
}

/* What differs between the decoded `got` (in wire w) and the engine's `want`, as text. */
static void difference(char *buf, size_t cap, const sr_ndarray *got, const sr_ndarray *want,
                       const sr_field_def *w)
{
    char g[96], e[96];
    sr_ndarray_desc(got->dtype, got->ndim, got->shape, g, sizeof(g));
    sr_ndarray_desc(want->dtype, want->ndim, want->shape, e, sizeof(e));
    uint64_t n = sr_ndarray_numel(want), m = sr_ndarray_numel(got);
    int flat = w->kind == SR_FIELD_STRING && w->wire == SR_WIRE_RAW;
    if (got->dtype != want->dtype && w->kind != SR_FIELD_NESTED)
        snprintf(buf, cap, "the wire decodes %s, the engine sent %s: other dtype%s", g, e,
                 flat ? " (raw bytes do not say their dtype: the producer's differs from the "
                        "definition's)"
                      : "");
    else if (flat ? m != n
                  : got->ndim != want->ndim ||
                        memcmp(got->shape, want->shape, (size_t)want->ndim * sizeof(int64_t)) != 0)
        snprintf(buf, cap, "the wire decodes %s, the engine sent %s: other shape", g, e);
    else {
        /* Same dtype (or nested integers): floats compare by their bytes, integers by value. */
        size_t isz = sr_dtype_size(want->dtype);
        int floats = sr_dtype_is_float(want->dtype);
        uint64_t i = 0;
        while (i < n && (floats ? memcmp((const char *)got->data + i * isz,
                                         (const char *)want->data + i * isz, isz) == 0
                                : sr_ndarray_get_i64(got, i) == sr_ndarray_get_i64(want, i)))
            i++;
        snprintf(buf, cap, "%s as sent, but element %llu (flat index) differs", e,
                 (unsigned long long)i);
    }
}

static int equal_extra(const sr_ndarray *a, const sr_gen_extra *x, const sr_field_def *w, char *why,
                       size_t cap)
{
    sr_ndarray b;
    view(&b, x);
    int same = same_values(a, &b, w);
    if (!same && why)
        difference(why, cap, a, &b, w);
    return same;
}

/* The contract beyond the splice's: the declared shape (T = the reply's generated tokens) and
 * value constraints of the field's definition, in the wire's form (flat for raw bytes). */
static int declared(const vf *v, const sr_splice_entry *f, const sr_splice_result *r, sr_err *e)
{
    const sr_splice_entry *t = tokens_of(r);
    int64_t T = t ? (int64_t)sr_ndarray_numel(&t->array) : -1;
    const sr_field_def *w = v->in->def;
    return sr_field_check_array(v->in->src, &f->array, T,
                                w->kind == SR_FIELD_STRING && w->wire == SR_WIRE_RAW, e);
}

/* emit, the engine half of round-trip, and one-pass over the clean bodies. */
static int check_clean(vf *v, sr_err *err)
{
    const sr_vf_input *in = v->in;
    const char *name = in->def->name;
    size_t emitted = 0, equal = 0, onepass = 0, blobs = 0;
    sr_dtype_set seen = 0;
    int rc = 0;
    char why[SR_ERR_MSG_MAX] = "";
    size_t why_at = 0;
    for (size_t i = 0; !rc && i < in->n_clean; i++) {
        const sr_vf_body *b = &in->clean[i];
        const sr_splice_result *r1 = NULL, *r2 = NULL;
        sr_err e = SR_ERR_INIT;
        int c1 = sr_splice(v->one, b->data, b->len, -1, &r1, &e);
        const sr_splice_entry *f = c1 ? NULL : find(r1, name);
        const sr_splice_entry *routes = c1 ? NULL : find(r1, "routed_experts");
        if (!c1 && f && f->kind == kind_of(in->def))
            c1 = declared(v, f, r1, &e);
        if (c1 || !f || f->kind != kind_of(in->def) || !routes || routes->kind == SR_SPLICE_NULL) {
            /* The first failing response is shown; the count comes after the loop. */
            if (emitted == i)
                line(v, "FAIL", "emit", "response %zu: %s%s%s", i + 1, c1 ? code_name(c1) : "",
                     c1 ? ": " : "",
                     c1                          ? e.msg
                     : !f                        ? "the field is missing"
                     : !routes                   ? "no routed_experts"
                     : f->kind == SR_SPLICE_NULL ? "null instead of its value"
                                                 : "routed_experts is null");
            continue;
        }
        emitted++;
        seen |= SR_DTYPE_BIT(f->array.dtype);
        onepass += r1->stats.passes == 1 && r1->stats.bytes_scanned == b->len &&
                   r1->stats.body_bytes == b->len;
        blobs = r1->stats.blobs;
        int c2 = splice_chunked(v->two, b->data, b->len, &r2, &e);
        const sr_splice_entry *f2 = c2 ? NULL : find(r2, name);
        int same = f2 && sr_ndarray_equal(&f->array, &f2->array);
        if (!same && !why[0])
            snprintf(why, sizeof(why),
                     "the %d-byte streamed splice gave other values than the "
                     "one-shot",
                     CHUNK);
        if (same && in->from_definition) {
            sr_gen_extra x;
            if ((rc = expected_of(&x, v, b, r1, err)))
                break;
            same = equal_extra(&f->array, &x, in->def, why[0] ? NULL : why, sizeof(why));
            sr_gen_extra_release(&x);
        }
        if (!same && !why_at)
            why_at = i + 1;
        equal += same;
    }
    if (rc)
        return rc;
    char dts[160];
    if (emitted == in->n_clean)
        line(v, "PASS", "emit", "%zu/%zu responses carry %s beside routed_experts (dtypes %s)",
             emitted, in->n_clean, name,
             in->def->kind == SR_FIELD_NESTED ? "of the JSON integers"
                                              : sr_dtype_set_str(seen, dts, sizeof(dts)));
    else
        line(v, "FAIL", "emit", "%zu of %zu responses did not carry a valid %s",
             in->n_clean - emitted, in->n_clean, name);
    if (emitted && equal == emitted)
        line(v, "PASS", "round-trip",
             "%zu bodies: %s after splice + decode, one-shot and in %d-byte chunks", equal,
             in->from_definition ? "exactly the engine's values" : "identical arrays", CHUNK);
    else if (emitted)
        line(v, "FAIL", "round-trip", "%zu of %zu bodies decoded to other values; response %zu: %s",
             emitted - equal, emitted, why_at, why);
    v->emitted = emitted;
    v->onepass = onepass;
    v->blobs = blobs;
    return 0;
}

static void check_onepass(vf *v)
{
    if (v->emitted && v->onepass == v->emitted)
        line(v, "PASS", "one-pass",
             "%zu/%zu bodies spliced in 1 pass, each byte scanned once (%zu blobs, %zu keys "
             "registered)",
             v->onepass, v->emitted, v->blobs, sr_fields_count(v->in->registry));
    else if (v->emitted)
        line(v, "FAIL", "one-pass", "%zu of %zu bodies needed more than one pass",
             v->emitted - v->onepass, v->emitted);
}

/* `{"choices":[{"token_ids":[4,5,6],"finish_reason":"stop","logprobs":null,"<name>":<value>}]}`
 * with the value in the field's wire (the splice finds a key wherever the frame puts it). */
static int body_with(sr_buf *b, const sr_field_def *w, const sr_ndarray *a, size_t *env_len,
                     sr_err *err)
{
    sr_buf_reset(b);
    int rc = sr_buf_printf(b, err,
                           "{\"choices\":[{\"token_ids\":[4,5,6],\"finish_reason\":"
                           "\"stop\",\"logprobs\":null,\"%s\":",
                           w->name);
    size_t at = b->len;
    if (!rc)
        rc = sr_vf_wire_put(b, w, a, err);
    if (env_len)
        *env_len = b->len - at;
    return rc ? rc : sr_buf_puts(b, "}]}", err);
}

/* A definition of one dtype with token rows, for arrays built on this side. */
static sr_field_def single(const sr_field_def *d, sr_dtype t)
{
    sr_field_def s = *d;
    s.dtypes = SR_DTYPE_BIT(t);
    s.token_rows = 1;
    s.max_bytes = 0;
    return s;
}

/* The packing half of round-trip: every listed dtype through pack, splice and decode. */
static int check_dtypes(vf *v, sr_err *err)
{
    const sr_field_def *d = v->in->src, *wd = v->in->def;
    static const int32_t prompt[3] = {1, 2, 3}, gen[3] = {4, 5, 6};
    sr_buf b = SR_BUF_INIT;
    int rc = 0, bad = 0;
    char ok[160] = "", *w = ok;
    for (int t = 1; !rc && t < SR_DTYPE_COUNT; t++) {
        if (!(d->dtypes >> t & 1))
            continue;
        if (!(sr_gen_extra_dtypes(d) >> t & 1)) {
            line(v, "FAIL", "round-trip",
                 "dtype %s is listed, but no canonical array can use it (canonical values use "
                 "uint8, int16 or int32)",
                 sr_dtype_name((sr_dtype)t));
            bad = 1;
            continue;
        }
        sr_field_def s = single(d, (sr_dtype)t);
        sr_gen_extra x;
        if ((rc = sr_gen_extra_make(&x, &s, v->in->seed, prompt, 3, gen, 3, 0, err)))
            break;
        sr_ndarray a;
        view(&a, &x);
        const sr_splice_result *r = NULL;
        sr_err e = SR_ERR_INIT;
        rc = body_with(&b, wd, &a, NULL, err);
        int c = rc ? 0 : sr_splice(v->one, b.data, b.len, -1, &r, &e);
        const sr_splice_entry *f = c ? NULL : find(r, d->name);
        if (!rc && (c || !f || !same_values(&f->array, &a, wd))) {
            line(v, "FAIL", "round-trip", "a packed %s array does not come back: %s",
                 sr_dtype_name((sr_dtype)t), c ? e.msg : "the decoded array differs");
            bad = 1;
        } else if (!rc) {
            w += snprintf(w, sizeof(ok) - (size_t)(w - ok), "%s%s", w == ok ? "" : ", ",
                          sr_dtype_name((sr_dtype)t));
        }
        sr_gen_extra_release(&x);
    }
    if (!rc && !bad)
        line(v, "PASS", "round-trip", "pack -> splice -> decode returns every listed dtype: %s",
             ok);
    sr_buf_release(&b);
    return rc;
}

/* The value of `"<name>":` in the first clean body replaced by `null`. */
static int check_null(vf *v, sr_err *err)
{
    const sr_vf_input *in = v->in;
    const char *name = in->def->name;
    if (!in->n_clean)
        return 0;
    const sr_vf_body *b = &in->clean[0];
    sr_buf body = SR_BUF_INIT;
    size_t off = 0, vlen = 0;
    int rc = 0, found = sr_vf_wire_find(b->data, b->len, name, &off, &vlen) == 0;
    if (!found) {
        line(v, "FAIL", "null", "no %s value in the first response to replace", name);
    } else {
        rc = sr_buf_append(&body, b->data, off, err);
        if (!rc)
            rc = sr_buf_puts(&body, "null", err);
        if (!rc)
            rc = sr_buf_append(&body, b->data + off + vlen, b->len - off - vlen, err);
    }
    if (!rc && found) {
        const sr_splice_result *r = NULL;
        sr_err e = SR_ERR_INIT;
        int c = sr_splice(v->one, body.data, body.len, -1, &r, &e);
        const sr_splice_entry *f = c ? NULL : find(r, name);
        if (in->def->nullable && !c && f && f->kind == SR_SPLICE_NULL)
            line(v, "PASS", "null", "\"%s\":null is accepted as nothing captured", name);
        else if (!in->def->nullable && c == SR_E_ENV_NOT_OBJECT)
            line(v, "PASS", "null", "\"%s\":null is refused as %s (the field is not nullable)",
                 name, code_name(c));
        else
            line(v, "FAIL", "null", "\"%s\":null gave %s%s%s", name, code_name(c), c ? ": " : "",
                 c ? e.msg : "");
    }
    sr_buf_release(&body);
    return rc;
}

/* Outside skyrl: the battery's own corruptions of the first clean body's value, in its wire. */
static int check_wire_faults(vf *v, sr_err *err)
{
    const sr_vf_input *in = v->in;
    line(v, "SKIP", "fault",
         "the engine's body faults act on skyrl's envelope only; none reaches %s's %s; the "
         "battery corrupts the field in the body itself:",
         sr_dialect_name(in->dialect), sr_vf_wire_name(in->def));
    sr_vf_wire_fault fs[SR_VF_WIRE_FAULTS_MAX];
    size_t n = sr_vf_wire_faults(fs, in->def);
    sr_buf b = SR_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; !rc && i < n && in->n_clean; i++) {
        sr_err e = SR_ERR_INIT;
        int c =
            sr_vf_wire_corrupt(&b, in->clean[0].data, in->clean[0].len, in->def, fs[i].edit, &e);
        if (c == SR_E_NOMEM)
            rc = sr_err_set(err, c, "%s", e.msg);
        const sr_splice_result *r = NULL;
        if (!c)
            c = sr_splice(v->one, b.data, b.len, -1, &r, &e);
        if (rc)
            break;
        if (c == fs[i].expect)
            line(v, "PASS", "fault", "%-20s -> %s", fs[i].name, code_name(c));
        else
            line(v, "FAIL", "fault", "%-20s -> %s, expected %s%s%s", fs[i].name, code_name(c),
                 code_name(fs[i].expect), c ? ": " : "", c ? e.msg : "");
    }
    sr_buf_release(&b);
    return rc;
}

static int check_faults(vf *v, sr_err *err)
{
    const sr_vf_input *in = v->in;
    size_t n;
    const sr_vf_fault *fs = sr_vf_faults(&n);
    if (!in->faulted)
        return check_wire_faults(v, err);
    for (size_t i = 0; i < n; i++) {
        const sr_vf_body *b = &in->faulted[i];
        const sr_splice_result *r = NULL;
        sr_err e = SR_ERR_INIT;
        int c = sr_splice(v->one, b->data, b->len, -1, &r, &e);
        const sr_splice_entry *f = c ? NULL : find(r, in->def->name);
        int ok = c == fs[i].expect;
        if (ok && !c) {
            ok = f && f->kind == SR_SPLICE_ENVELOPE;
            if (ok && in->from_definition) {
                sr_gen_extra x;
                int rc = expected_of(&x, v, b, r, err);
                if (rc)
                    return rc;
                ok = equal_extra(&f->array, &x, in->def, NULL, 0);
                sr_gen_extra_release(&x);
            }
        }
        if (ok)
            line(v, "PASS", "fault", "%-20s -> %s", fs[i].kind,
                 c ? code_name(c) : "valid, the field's true values kept");
        else if (c == fs[i].expect)
            line(v, "FAIL", "fault", "%-20s -> valid, but %s", fs[i].kind,
                 f ? "the field's values are not the engine's" : "the field is missing");
        else
            line(v, "FAIL", "fault", "%-20s -> %s, expected %s%s%s", fs[i].kind, code_name(c),
                 code_name(fs[i].expect), c ? ": " : "", c ? e.msg : "");
    }
    (void)err;
    return 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(*t), by_value);
    return t[n / 2];
}

/* Median ms of splicing `b` and of copying it, over REPS runs each (after one warm-up). */
static int time_splice(vf *v, const sr_buf *b, double *splice_ms, double *copy_ms, sr_err *err)
{
    char *dst = malloc(b->len);
    if (!dst)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes", b->len);
    double ts[REPS], tc[REPS];
    int rc = 0;
    for (int i = -1; !rc && i < REPS; i++) {
        const sr_splice_result *r = NULL;
        double t0 = sr_clock_ms();
        rc = sr_splice(v->one, b->data, b->len, -1, &r, err);
        double t1 = sr_clock_ms();
        memcpy(dst, b->data, b->len);
        __asm__ volatile("" : : "r"(dst) : "memory");
        double t2 = sr_clock_ms();
        if (i >= 0) {
            ts[i] = t1 - t0;
            tc[i] = t2 - t1;
        }
    }
    free(dst);
    if (!rc) {
        *splice_ms = median(ts, REPS);
        *copy_ms = median(tc, REPS);
    }
    return rc;
}

static int check_throughput(vf *v, sr_err *err)
{
    const sr_field_def *d = v->in->src, *w = v->in->def;
    sr_dtype_set can = sr_gen_extra_dtypes(d) & d->dtypes;
    sr_buf b = SR_BUF_INIT;
    int rc = 0;
    for (int t = 1; !rc && t < SR_DTYPE_COUNT; t++) {
        if (!(can >> t & 1))
            continue;
        sr_field_def s = single(d, (sr_dtype)t);
        /* One row's bytes, from a one-token array of the same field. */
        sr_gen_extra probe;
        static const int32_t one[1] = {0};
        if ((rc = sr_gen_extra_make(&probe, &s, v->in->seed, one, 1, one, 1, 0, err)))
            break;
        size_t row = probe.nbytes;
        sr_gen_extra_release(&probe);
        size_t rows = v->in->rows;
        size_t cap = d->max_bytes ? d->max_bytes : SR_ENVELOPE_DEFAULT_MAX;
        if (row && rows * row > cap)
            rows = cap / row ? cap / row : 1;
        int32_t *gen = calloc(rows ? rows : 1, sizeof(*gen));
        if (!gen) {
            rc = sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu tokens", rows);
            break;
        }
        sr_gen_extra x;
        rc = sr_gen_extra_make(&x, &s, v->in->seed, one, 1, gen, rows, 0, err);
        free(gen);
        if (rc)
            break;
        sr_ndarray a;
        view(&a, &x);
        size_t env_len = 0;
        double sms = 0, cms = 0;
        char desc[96];
        rc = body_with(&b, w, &a, &env_len, err);
        if (!rc)
            rc = time_splice(v, &b, &sms, &cms, err);
        if (!rc) {
            line(v, "INFO", "throughput",
                 "%s: %zu decoded bytes from a %zu-byte body in %.3f ms: %.0f MB/s, %.2fx the "
                 "time of memcpy of the body",
                 sr_ndarray_desc(a.dtype, a.ndim, a.shape, desc, sizeof(desc)), a.nbytes, b.len,
                 sms, sms > 0 ? (double)a.nbytes / (sms * 1e3) : 0.0, cms > 0 ? sms / cms : 0.0);
            line(v, "INFO", "size",
                 "%s: %.2f wire bytes (%s text) and %.2f decoded bytes per token row",
                 sr_dtype_name((sr_dtype)t), rows ? (double)env_len / (double)rows : 0.0,
                 sr_vf_wire_name(w), rows ? (double)a.nbytes / (double)rows : 0.0);
        }
        sr_gen_extra_release(&x);
    }
    sr_buf_release(&b);
    return rc;
}

int sr_vf_run(int *failed, const sr_vf_input *in, sr_err *err)
{
    vf v;
    memset(&v, 0, sizeof(v));
    v.in = in;
    *failed = 0;
    sr_splice_opts o = SR_SPLICE_OPTS_INIT;
    int rc = sr_splicer_new(&v.one, in->registry, &o, err);
    if (!rc)
        rc = sr_splicer_new(&v.two, in->registry, &o, err);
    if (!rc)
        rc = check_clean(&v, err);
    if (!rc)
        rc = check_dtypes(&v, err);
    if (!rc)
        rc = check_null(&v, err);
    if (!rc)
        rc = check_faults(&v, err);
    if (!rc)
        check_onepass(&v);
    if (!rc)
        rc = check_throughput(&v, err);
    sr_splicer_free(v.one);
    sr_splicer_free(v.two);
    *failed = v.failed;
    return rc;
}
