/* The route wires written again after a route fault (proxy_routes.h, px_route_encode): the same
 * encodings the engine writes (engine/gen_dialect.c) and the client reads (spec/dialect.h). */
#include <stdlib.h>
#include <string.h>

#include "proxy_routes.h"
#include "sr_base64.h"
#include "sr_envelope.h"
#include "sr_npy.h"
#include "sr_nrlre.h"

/* Appends `"` + text + base64(head, then data) + `"`. */
static int put_b64(sr_buf *b, const char *text, size_t text_len, const void *head, size_t head_len,
                   const sr_ndarray *a, sr_err *err)
{
    size_t raw_len = head_len + a->nbytes;
    unsigned char *raw = malloc(raw_len ? raw_len : 1);
    if (!raw)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes of routes", raw_len);
    if (head_len)
        memcpy(raw, head, head_len);
    if (a->nbytes)
        memcpy(raw + head_len, a->data, a->nbytes);
    int rc = sr_buf_reserve(b, text_len + sr_base64_encoded_len(raw_len) + 2, err);
    if (!rc) {
        b->data[b->len++] = '"';
        memcpy(b->data + b->len, text, text_len);
        b->len += text_len;
        b->len += sr_base64_encode(b->data + b->len, raw, raw_len, SR_B64_AUTO);
        b->data[b->len++] = '"';
        b->data[b->len] = '\0';
    }
    free(raw);
    return rc;
}

static int put_shape(sr_buf *b, const sr_ndarray *a, sr_err *err)
{
    int rc = sr_buf_puts(b, "[", err);
    for (int i = 0; !rc && i < a->ndim; i++)
        rc = sr_buf_printf(b, err, i ? ",%lld" : "%lld", (long long)a->shape[i]);
    return rc ? rc : sr_buf_puts(b, "]", err);
}

/* dynamo: {"data","shape","start","dtype"}, in that order; the caller has checked that a start
 * is an integer in [0, 2^53) (proxy_routes.c, collect), so it is written back exactly. */
static int put_object(sr_buf *b, const sr_ndarray *a, const cJSON *sidecar, sr_err *err)
{
    const cJSON *start = sidecar ? cJSON_GetObjectItemCaseSensitive(sidecar, "start") : NULL;
    int rc = sr_buf_puts(b, "{\"data\":", err);
    if (!rc)
        rc = put_b64(b, "", 0, NULL, 0, a, err);
    if (!rc)
        rc = sr_buf_puts(b, ",\"shape\":", err);
    if (!rc)
        rc = put_shape(b, a, err);
    if (!rc && cJSON_IsNumber(start))
        rc = sr_buf_printf(b, err, ",\"start\":%lld", (long long)start->valuedouble);
    if (!rc)
        rc = sr_buf_printf(b, err, ",\"dtype\":\"%s\"}", sr_dtype_name(a->dtype));
    return rc;
}

/* Nested integer lists, [rows][L][K] (or one list for a 1-D array). */
static int put_nested(sr_buf *b, const sr_ndarray *a, sr_err *err)
{
    if (a->ndim != 3)
        return sr_err_set(err, SR_E_INVAL, "nested routes must be 3-D, got %d dimensions", a->ndim);
    int64_t R = a->shape[0], L = a->shape[1], K = a->shape[2];
    int rc = sr_buf_puts(b, "[", err);
    for (int64_t r = 0; !rc && r < R; r++) {
        rc = sr_buf_puts(b, r ? ",[" : "[", err);
        for (int64_t l = 0; !rc && l < L; l++) {
            rc = sr_buf_puts(b, l ? ",[" : "[", err);
            for (int64_t k = 0; !rc && k < K; k++)
                rc = sr_buf_printf(
                    b, err, k ? ",%lld" : "%lld",
                    (long long)sr_ndarray_get_i64(a, (uint64_t)((r * L + l) * K + k)));
            if (!rc)
                rc = sr_buf_puts(b, "]", err);
        }
        if (!rc)
            rc = sr_buf_puts(b, "]", err);
    }
    return rc ? rc : sr_buf_puts(b, "]", err);
}

int px_route_encode(sr_buf *b, sr_route_encoding enc, const sr_ndarray *a, const cJSON *sidecar,
                    sr_err *err)
{
    char head[SR_NPY_HEADER_MAX > SR_NRLRE_PREFIX_MAX ? SR_NPY_HEADER_MAX : SR_NRLRE_PREFIX_MAX];
    size_t n = 0;
    int rc;
    switch (enc) {
    case SR_ENC_ENVELOPE:
        return sr_envelope_pack(b, a, 0, sidecar, SR_B64_AUTO, err);
    case SR_ENC_OBJECT:
        return put_object(b, a, sidecar, err);
    case SR_ENC_NPY:
        rc = sr_npy_write_header(&n, head, sizeof head, a->dtype, a->shape, a->ndim, err);
        return rc ? rc : put_b64(b, "", 0, head, n, a, err);
    case SR_ENC_NRLRE:
        if (a->ndim != 3)
            return sr_err_set(err, SR_E_INVAL, "nrlre1 routes must be 3-D");
        rc = sr_nrlre_write_prefix(&n, head, sizeof head, a->dtype, a->shape, err);
        return rc ? rc : put_b64(b, head, n, NULL, 0, a, err);
    case SR_ENC_FLAT_B64:
        return put_b64(b, "", 0, NULL, 0, a, err);
    case SR_ENC_NESTED:
        return put_nested(b, a, err);
    }
    return sr_err_set(err, SR_E_INVAL, "unknown route encoding %d", (int)enc);
}
