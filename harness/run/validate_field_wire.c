/* A field's value in each wire, and the battery's corruptions of it (validate_field_wire.h). */
#include "validate_field_wire.h"

#include <stdlib.h>
#include <string.h>

#include "sr_base64.h"
#include "sr_envelope.h"
#include "sr_npy.h"
#include "sr_nrlre.h"

const char *sr_vf_wire_name(const sr_field_def *w)
{
    if (w->kind == SR_FIELD_NESTED)
        return "nested list";
    if (w->kind != SR_FIELD_STRING)
        return "envelope";
    return w->wire == SR_WIRE_NPY   ? ".npy string"
           : w->wire == SR_WIRE_RAW ? "raw string"
                                    : "nrlre1 string";
}

/* Appends `"` + head + base64(bytes) + `"`. */
static int put_b64(sr_buf *b, const char *head, size_t hl, const void *bytes, size_t n, sr_err *err)
{
    int rc = sr_buf_puts(b, "\"", err);
    if (!rc && hl)
        rc = sr_buf_append(b, head, hl, err);
    if (!rc)
        rc = sr_buf_reserve(b, sr_base64_encoded_len(n) + 1, err);
    if (!rc) {
        b->len += sr_base64_encode(b->data + b->len, bytes, n, SR_B64_AUTO);
        b->data[b->len++] = '"';
    }
    return rc;
}

/* Nested lists of a's axes from `axis` on, elements from *at (advanced). */
static int put_nested(sr_buf *b, const sr_ndarray *a, int axis, uint64_t *at, sr_err *err)
{
    int rc = sr_buf_puts(b, "[", err);
    for (int64_t i = 0; !rc && i < a->shape[axis]; i++) {
        if (i)
            rc = sr_buf_puts(b, ",", err);
        if (!rc && axis + 1 < a->ndim)
            rc = put_nested(b, a, axis + 1, at, err);
        else if (!rc)
            rc = sr_buf_printf(b, err, "%lld", (long long)sr_ndarray_get_i64(a, (*at)++));
    }
    return rc ? rc : sr_buf_puts(b, "]", err);
}

int sr_vf_wire_put(sr_buf *b, const sr_field_def *w, const sr_ndarray *a, sr_err *err)
{
    char head[SR_NPY_HEADER_MAX > SR_NRLRE_PREFIX_MAX ? SR_NPY_HEADER_MAX : SR_NRLRE_PREFIX_MAX];
    size_t hl = 0;
    uint64_t at = 0;
    int rc = 0;
    if (w->kind == SR_FIELD_NESTED)
        return put_nested(b, a, 0, &at, err);
    if (w->kind != SR_FIELD_STRING)
        return sr_envelope_pack(b, a, 0, NULL, SR_B64_AUTO, err);
    if (w->wire == SR_WIRE_RAW)
        return put_b64(b, NULL, 0, a->data, a->nbytes, err);
    if (w->wire == SR_WIRE_NRLRE) {
        rc = sr_nrlre_write_prefix(&hl, head, sizeof(head), a->dtype, a->shape, err);
        return rc ? rc : put_b64(b, head, hl, a->data, a->nbytes, err);
    }
    /* .npy: the header and the data are one base64 stream. */
    if ((rc = sr_npy_write_header(&hl, head, sizeof(head), a->dtype, a->shape, a->ndim, err)))
        return rc;
    unsigned char *raw = malloc(hl + a->nbytes + 1);
    if (!raw)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes", hl + a->nbytes);
    memcpy(raw, head, hl);
    if (a->nbytes)
        memcpy(raw + hl, a->data, a->nbytes);
    rc = put_b64(b, NULL, 0, raw, hl + a->nbytes, err);
    free(raw);
    return rc;
}

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
    for (size_t i = 0; m && i + m <= n; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, m) == 0)
            return hay + i;
    return NULL;
}

/* The end of the value that starts at p (an envelope object, a string or nested lists), or
 * NULL when it does not end before `end`. */
static const char *value_end(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"') {
        const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
        return q ? q + 1 : NULL;
    }
    if (*p == '{') {
        const char *q = memchr(p, '}', (size_t)(end - p));
        return q ? q + 1 : NULL;
    }
    int depth = 0;
    for (const char *q = p; q < end; q++) {
        depth += *q == '[';
        depth -= *q == ']';
        if (depth == 0)
            return q + 1;
    }
    return NULL;
}

int sr_vf_wire_find(const char *body, size_t len, const char *name, size_t *off, size_t *vlen)
{
    char key[SR_FIELD_NAME_MAX + 4];
    int kl = snprintf(key, sizeof(key), "\"%s\":", name);
    if (kl < 0 || (size_t)kl >= sizeof(key))
        return -1;
    const char *k = find_bytes(body, len, key, (size_t)kl);
    const char *val = k ? k + kl : NULL;
    const char *end = val ? value_end(val, body + len) : NULL;
    if (!end)
        return -1;
    *off = (size_t)(val - body);
    *vlen = (size_t)(end - val);
    return 0;
}

size_t sr_vf_wire_faults(sr_vf_wire_fault out[SR_VF_WIRE_FAULTS_MAX], const sr_field_def *w)
{
    size_t n = 0;
    if (w->kind != SR_FIELD_NESTED)
        out[n++] = (sr_vf_wire_fault){"bad_base64", SR_VF_BAD_BASE64, SR_E_B64_CHAR};
    if (w->kind == SR_FIELD_STRING)
        out[n++] = (sr_vf_wire_fault){"not_string", SR_VF_NOT_STRING, SR_E_WIRE_NOT_STRING};
    if (w->kind == SR_FIELD_NESTED)
        out[n++] = (sr_vf_wire_fault){"bad_leaf", SR_VF_BAD_LEAF, SR_E_NESTED_VALUE};
    out[n++] = (sr_vf_wire_fault){"duplicate_field", SR_VF_DUPLICATE, SR_E_JSON_DUPLICATE_KEY};
    return n;
}

/* Where in the value [v, v + n) an edit changes bytes: [*at, *at + *cut) becomes `put`. */
static int edit_span(const char *v, size_t n, const sr_field_def *w, sr_vf_edit e, size_t *at,
                     size_t *cut, const char **put)
{
    if (e == SR_VF_NOT_STRING) {
        *at = 0;
        *cut = n;
        *put = "7";
        return n >= 2 && v[0] == '"' ? 0 : -1;
    }
    if (e == SR_VF_BAD_LEAF) {
        size_t i = 0;
        while (i < n && (v[i] == '[' || v[i] == ' '))
            i++;
        size_t j = i;
        while (j < n && (v[j] == '-' || (v[j] >= '0' && v[j] <= '9')))
            j++;
        *at = i;
        *cut = j - i;
        *put = "1.5";
        return j > i ? 0 : -1;
    }
    /* SR_VF_BAD_BASE64: the last character of the blob (a digit of base64 or its padding). */
    const char *q = v;
    if (w->kind != SR_FIELD_STRING) {
        q = find_bytes(v, n, "\"data\":\"", 8);
        if (!q)
            return -1;
        q += 7;
    }
    const char *close = memchr(q + 1, '"', (size_t)(v + n - q - 1));
    if (!close || close - q < 2)
        return -1;
    *at = (size_t)(close - 1 - v);
    *cut = 1;
    *put = "!";
    return 0;
}

int sr_vf_wire_corrupt(sr_buf *out, const char *body, size_t len, const sr_field_def *w,
                       sr_vf_edit e, sr_err *err)
{
    size_t off, vlen, at = 0, cut = 0;
    const char *put = NULL;
    if (sr_vf_wire_find(body, len, w->name, &off, &vlen) ||
        (e != SR_VF_DUPLICATE && edit_span(body + off, vlen, w, e, &at, &cut, &put)))
        return sr_err_set(err, SR_E_INVAL, "no %s value of %s to corrupt", sr_vf_wire_name(w),
                          w->name);
    sr_buf_reset(out);
    int rc;
    if (e == SR_VF_DUPLICATE) {
        /* `"<name>":<value>` once more, right after the first. */
        rc = sr_buf_append(out, body, off + vlen, err);
        if (!rc)
            rc = sr_buf_printf(out, err, ",\"%s\":", w->name);
        if (!rc)
            rc = sr_buf_append(out, body + off, vlen, err);
        return rc ? rc : sr_buf_append(out, body + off + vlen, len - off - vlen, err);
    }
    rc = sr_buf_append(out, body, off + at, err);
    if (!rc)
        rc = sr_buf_puts(out, put, err);
    return rc ? rc : sr_buf_append(out, body + off + at + cut, len - off - at - cut, err);
}
