#include "sr_envelope.h"

#include "sr_jdom.h"
#include "sr_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *field_name(const sr_contract *c)
{
    return c && c->name ? c->name : "array";
}

static size_t max_bytes_of(const sr_contract *c)
{
    return c->max_bytes ? c->max_bytes : SR_ENVELOPE_DEFAULT_MAX;
}

sr_contract sr_contract_routes(void)
{
    sr_contract c = SR_CONTRACT_INIT;
    c.name = "routed_experts";
    c.allowed = SR_ROUTE_DTYPES;
    c.ndim = 3;
    c.canonical_routes = 1;
    return c;
}

int sr_envelope_is_reserved_key(const char *key)
{
    /* Told apart by the first byte first: one comparison for most keys, not three. */
    if (!key)
        return 0;
    if (key[0] == 'd')
        return strcmp(key, "data") == 0 || strcmp(key, "dtype") == 0;
    return key[0] == 's' && strcmp(key, "shape") == 0;
}

/* ---- pack ---- */

static int check_sidecar(const cJSON *extra, sr_err *err)
{
    if (!extra)
        return 0;
    if (!cJSON_IsObject(extra))
        return sr_err_set(err, SR_E_INVAL, "sidecar fields must be a JSON object");
    /* Collect collisions in sorted order, as the reference prints sorted(collisions). */
    const char *hits[3];
    int n = 0;
    static const char *const reserved_sorted[] = {"data", "dtype", "shape"};
    for (int r = 0; r < 3; r++) {
        for (const cJSON *it = extra->child; it; it = it->next) {
            if (it->string && strcmp(it->string, reserved_sorted[r]) == 0) {
                hits[n++] = reserved_sorted[r];
                break;
            }
        }
    }
    if (n == 0)
        return 0;
    char list[64] = "[";
    for (int i = 0; i < n; i++) {
        strcat(list, i ? ", '" : "'");
        strcat(list, hits[i]);
        strcat(list, "'");
    }
    strcat(list, "]");
    return sr_err_set(err, SR_E_ENV_SIDECAR, "sidecar fields collide with envelope keys: %s", list);
}

static int append_body(sr_buf *out, const sr_ndarray *a, const cJSON *extra, sr_b64_impl impl,
                       sr_err *err)
{
    int rc = sr_buf_puts(out, "{\"data\":\"", err);
    if (rc)
        return rc;
    if (a->nbytes > (SIZE_MAX / 4) * 3 - 3)
        return sr_err_set(err, SR_E_LIMIT, "array of %zu bytes is too large to encode", a->nbytes);
    size_t enc = sr_base64_encoded_len(a->nbytes);
    if ((rc = sr_buf_reserve(out, enc, err)))
        return rc;
    out->len += sr_base64_encode(out->data + out->len, a->data, a->nbytes, impl);
    out->data[out->len] = '\0';
    if ((rc = sr_buf_puts(out, "\",\"shape\":[", err)))
        return rc;
    for (int i = 0; i < a->ndim; i++) {
        if ((i && (rc = sr_buf_append(out, ",", 1, err))) ||
            (rc = sr_buf_put_i64(out, a->shape[i], err)))
            return rc;
    }
    if ((rc = sr_buf_printf(out, err, "],\"dtype\":\"%s\"", sr_dtype_name(a->dtype))))
        return rc;
    for (const cJSON *it = extra ? extra->child : NULL; it; it = it->next) {
        char *key =
            cJSON_PrintUnformatted(&(cJSON){.type = cJSON_String, .valuestring = it->string});
        char *val = cJSON_PrintUnformatted(it);
        if (!key || !val) {
            free(key);
            free(val);
            return sr_err_set(err, SR_E_NOMEM, "cannot print a sidecar field");
        }
        rc = sr_buf_printf(out, err, ",%s:%s", key, val);
        free(key);
        free(val);
        if (rc)
            return rc;
    }
    return sr_buf_append(out, "}", 1, err);
}

int sr_envelope_pack(sr_buf *out, const sr_ndarray *a, sr_dtype_set allowed, const cJSON *extra,
                     sr_b64_impl impl, sr_err *err)
{
    if (!sr_dtype_size(a->dtype))
        return sr_err_set(err, SR_E_INVAL, "packed array has no valid dtype");
    if (allowed && !(allowed & SR_DTYPE_BIT(a->dtype))) {
        char names[160];
        return sr_err_set(err, SR_E_ENV_DTYPE, "packed array dtype '%s' is not one of %s",
                          sr_dtype_name(a->dtype), sr_dtype_set_str(allowed, names, sizeof(names)));
    }
    int rc = check_sidecar(extra, err);
    if (rc)
        return rc;
    size_t expect;
    if ((rc = sr_shape_bytes(&expect, NULL, a->shape, a->ndim, sr_dtype_size(a->dtype), err)))
        return rc;
    if (expect != a->nbytes)
        return sr_err_set(err, SR_E_INVAL, "array descriptor holds %zu bytes for %zu expected",
                          a->nbytes, expect);
    size_t mark = out->len;
    rc = append_body(out, a, extra, impl, err);
    if (rc) {
        out->len = mark;
        if (out->data)
            out->data[mark] = '\0';
    }
    return rc;
}

/* ---- unpack ---- */

/* Formats the shape as Python prints the tuple: "(3, 2, 2)", "(1,)", "()". Raw JSON text of
 * items is used so floats and bools appear as the peer sent them. */
static const char *shape_repr(const cJSON *shape, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "(");
    int n = 0;
    for (const cJSON *it = shape->child; it && used < cap; it = it->next, n++) {
        const char *sep = n ? ", " : "";
        if (cJSON_IsBool(it))
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", sep,
                                     cJSON_IsTrue(it) ? "True" : "False");
        else if (cJSON_IsNumber(it))
            used += (size_t)snprintf(buf + used, cap - used, "%s%.17g", sep, it->valuedouble);
        else
            used += (size_t)snprintf(buf + used, cap - used, "%s?", sep);
    }
    if (used < cap)
        snprintf(buf + used, cap - used, n == 1 ? ",)" : ")");
    return buf;
}

int sr_envelope_shape_text(const char *p, size_t n)
{
    if (n == 0 || p[0] != '[')
        return SR_SHAPE_TEXT_UNKNOWN;
    int non_int = 0;
    for (size_t i = 1; i < n; i++) {
        char ch = p[i];
        if (ch == ']')
            return non_int ? SR_SHAPE_TEXT_NON_INTEGER : SR_SHAPE_TEXT_INTEGERS;
        if (ch == '.' || ch == 'e' || ch == 'E')
            non_int = 1;
        else if (ch == '[' || ch == '{' || ch == '"')
            return SR_SHAPE_TEXT_UNKNOWN;
    }
    return SR_SHAPE_TEXT_UNKNOWN;
}

/* A dimension is a non-negative integral number; beyond 2^53 doubles stop being exact. */
static int dim_value(const cJSON *it, int64_t *out)
{
    if (!cJSON_IsNumber(it))
        return -1;
    double d = it->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < 0 || d > 9007199254740992.0)
        return -1;
    *out = (int64_t)d;
    return 0;
}

static int read_dtype(sr_dtype *dt, const cJSON *dtype_item, const sr_contract *c, sr_err *err)
{
    char names[160];
    const char *allowed = names;
    /* The allowed set's text is only for the messages below: formatting it costs a few
     * snprintf calls, which is most of this function on the success path. */
    const char *s = cJSON_IsString(dtype_item) ? dtype_item->valuestring : NULL;
    if (s && !(dtype_item->type & SR_JDOM_HAS_NUL) &&
        sr_dtype_from_name(dt, s, strlen(s), NULL) == 0 &&
        (!c->allowed || (c->allowed & SR_DTYPE_BIT(*dt))))
        return 0;
    sr_dtype_set_str(c->allowed ? c->allowed : 0xffffffffu, names, sizeof(names));
    if (!cJSON_IsString(dtype_item)) {
        char *txt = cJSON_PrintUnformatted(dtype_item);
        int rc = sr_err_set(err, SR_E_ENV_DTYPE, "packed array dtype %s is not one of %s",
                            txt ? txt : "?", allowed);
        free(txt);
        return rc;
    }
    char q[80];
    /* The dtype (or its key) held an escaped NUL: "uint8\u0000" must not pass as uint8. */
    if (dtype_item->type & SR_JDOM_HAS_NUL)
        return sr_err_set(err, SR_E_ENV_DTYPE,
                          "packed array dtype '%s' (or its key) holds an escaped NUL (\\u0000)",
                          sr_quote_str(q, sizeof(q), s));
    if (sr_dtype_from_name(dt, s, strlen(s), NULL) != 0 ||
        (c->allowed && !(c->allowed & SR_DTYPE_BIT(*dt))))
        return sr_err_set(err, SR_E_ENV_DTYPE, "packed array dtype '%s' is not one of %s",
                          sr_quote_str(q, sizeof(q), s), allowed);
    return 0;
}

static int read_shape(int64_t *dims, int *ndim, const cJSON *shape, int shape_text,
                      const sr_contract *c, sr_err *err)
{
    int n = cJSON_GetArraySize(shape);
    int want = c->ndim;
    int bad =
        (want >= 0 && n != want) || n > SR_NDIM_MAX || shape_text == SR_SHAPE_TEXT_NON_INTEGER;
    int i = 0;
    for (const cJSON *it = shape->child; it && !bad; it = it->next, i++) {
        if (dim_value(it, &dims[i]) != 0)
            bad = 1;
    }
    if (bad) {
        char repr[160];
        if (want >= 0)
            return sr_err_set(err, SR_E_ENV_SHAPE,
                              "packed array shape %s is not %d non-negative dimensions",
                              shape_repr(shape, repr, sizeof(repr)), want);
        return sr_err_set(err, SR_E_ENV_SHAPE,
                          "packed array shape %s is not at most %d non-negative dimensions",
                          shape_repr(shape, repr, sizeof(repr)), SR_NDIM_MAX);
    }
    *ndim = n;
    return 0;
}

/* Steps 1-2 of §2.2 without decoding: the payload is an object with the three keys. */
static int read_keys(const cJSON **data, const cJSON **shape, const cJSON **dtype,
                     const cJSON *payload, sr_err *err)
{
    if (!cJSON_IsObject(payload))
        return sr_err_set(err, SR_E_ENV_NOT_OBJECT, "packed array payload must be an object");
    /* One pass over the members, each key its first member of the name before any member
     * without a name, as cJSON_GetObjectItemCaseSensitive finds it. */
    *dtype = *shape = *data = NULL;
    for (const cJSON *m = payload->child; m && m->string; m = m->next) {
        const char *k = m->string;
        const cJSON **slot = k[0] == 'd'   ? (strcmp(k, "data") == 0    ? data
                                              : strcmp(k, "dtype") == 0 ? dtype
                                                                        : NULL)
                             : k[0] == 's' ? (strcmp(k, "shape") == 0 ? shape : NULL)
                                           : NULL;
        if (slot && !*slot)
            *slot = m;
    }
    if (!*dtype)
        return sr_err_set(err, SR_E_ENV_INVALID, "invalid packed array envelope: 'dtype'");
    /* A key that held an escaped NUL reads as its part before the NUL ("shape\u0000x" as
     * "shape"), so such a data or shape member is not the key it looks like. */
    if (((*shape && ((*shape)->type & SR_JDOM_HAS_NUL)) ||
         (*data && ((*data)->type & SR_JDOM_HAS_NUL))))
        return sr_err_set(err, SR_E_ENV_INVALID,
                          "invalid packed array envelope: the key or value of '%s' holds an "
                          "escaped NUL (\\u0000)",
                          ((*shape)->type & SR_JDOM_HAS_NUL) ? "shape" : "data");
    if (!*shape)
        return sr_err_set(err, SR_E_ENV_INVALID, "invalid packed array envelope: 'shape'");
    if (!cJSON_IsArray(*shape))
        return sr_err_set(err, SR_E_ENV_INVALID,
                          "invalid packed array envelope: shape must be an array");
    if (!*data)
        return sr_err_set(err, SR_E_ENV_INVALID, "invalid packed array envelope: 'data'");
    if (!cJSON_IsString(*data))
        return sr_err_set(err, SR_E_ENV_INVALID,
                          "invalid packed array envelope: data must be a base64 string");
    return 0;
}

/* Steps 3-6 of §2.2 over decoded bytes. */
static int validate(sr_ndarray *out, const cJSON *shape_item, const cJSON *dtype_item,
                    int shape_text, void *bytes, size_t nbytes, const sr_contract *c, sr_err *err)
{
    sr_dtype dt;
    int64_t dims[SR_NDIM_MAX];
    int ndim = 0;
    int rc;
    if ((rc = read_dtype(&dt, dtype_item, c, err)) ||
        (rc = read_shape(dims, &ndim, shape_item, shape_text, c, err)))
        return rc;
    size_t expect;
    char desc[200];
    if ((rc = sr_shape_bytes(&expect, NULL, dims, ndim, sr_dtype_size(dt), err))) {
        sr_err_prefix(err, "packed %s %s: ", field_name(c),
                      sr_ndarray_desc(dt, ndim, dims, desc, sizeof(desc)));
        return rc;
    }
    if (expect > max_bytes_of(c))
        return sr_err_set(err, SR_E_ENV_TOO_LARGE,
                          "packed %s %s needs %zu bytes, more than the maximum of %zu",
                          field_name(c), sr_ndarray_desc(dt, ndim, dims, desc, sizeof(desc)),
                          expect, max_bytes_of(c));
    if (nbytes != expect)
        return sr_err_set(err, SR_E_ENV_BYTE_COUNT,
                          "packed array data has %zu bytes, expected %zu for %s", nbytes, expect,
                          sr_ndarray_desc(dt, ndim, dims, desc, sizeof(desc)));
    out->dtype = dt;
    out->ndim = ndim;
    memcpy(out->shape, dims, sizeof(int64_t) * (size_t)ndim);
    out->data = bytes;
    out->nbytes = nbytes;
    out->owned = 0;
    if (c->canonical_routes)
        return sr_routes_check_canonical(out, field_name(c), err);
    return 0;
}

int sr_envelope_unpack_decoded(sr_ndarray *out, const cJSON *payload, int shape_text, void *bytes,
                               size_t nbytes, const sr_contract *c, sr_err *err)
{
    sr_ndarray init = SR_NDARRAY_INIT;
    *out = init;
    const cJSON *data, *shape, *dtype;
    int rc = read_keys(&data, &shape, &dtype, payload, err);
    if (!rc)
        rc = validate(out, shape, dtype, shape_text, bytes, nbytes, c, err);
    if (rc)
        *out = init;
    return rc;
}

int sr_envelope_unpack(sr_ndarray *out, const cJSON *payload, int shape_text, const sr_contract *c,
                       sr_arena *arena, sr_err *err)
{
    sr_ndarray init = SR_NDARRAY_INIT;
    *out = init;
    const cJSON *data, *shape, *dtype;
    int rc = read_keys(&data, &shape, &dtype, payload, err);
    if (rc)
        return rc;
    const char *b64 = data->valuestring;
    size_t n = strlen(b64);
    size_t cap = sr_base64_decoded_max(n);
    /* Padding carries no data: an array of exactly the maximum passes whatever its size mod 3. */
    if (sr_base64_decoded_min(b64, n) > max_bytes_of(c))
        return sr_err_set(
            err, SR_E_ENV_TOO_LARGE,
            "packed %s data of %zu base64 characters exceeds the maximum of %zu bytes",
            field_name(c), n, max_bytes_of(c));
    /* err may be NULL, so the arena's code is read from a local record. */
    sr_err ae = SR_ERR_INIT;
    void *mem =
        arena ? sr_arena_alloc(arena, cap, &ae) : aligned_alloc(64, (cap + 63) & ~(size_t)63);
    if (!mem)
        return arena ? sr_err_set(err, ae.code, "%s", ae.msg)
                     : sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes", cap);
    size_t got = 0;
    rc = sr_base64_decode(mem, &got, b64, n, c->impl, err);
    if (rc) {
        sr_err_prefix(err, "invalid packed array envelope: ");
    } else {
        rc = validate(out, shape, dtype, shape_text, mem, got, c, err);
    }
    if (rc) {
        if (!arena)
            free(mem);
        *out = init;
        return rc;
    }
    out->owned = arena ? 0 : 1;
    return 0;
}

/* ---- routes ---- */

int sr_routes_canonical_dtype(sr_dtype *out, int64_t max, sr_err *err)
{
    if (max < 256)
        *out = SR_DTYPE_UINT8;
    else if (max < 32768)
        *out = SR_DTYPE_INT16;
    else if (max <= INT32_MAX)
        *out = SR_DTYPE_INT32;
    else
        return sr_err_set(err, SR_E_ROUTES_TOO_WIDE,
                          "routed expert index exceeds signed int32: %lld", (long long)max);
    return 0;
}

static int routes_shape_ok(const sr_ndarray *a, sr_err *err)
{
    if (a->ndim == 3 && sr_dtype_is_integer(a->dtype))
        return 0;
    char desc[200];
    return sr_err_set(
        err, SR_E_ROUTES_INVALID,
        "routed expert indices must be an integer [tokens, layers, topk] array, got %s",
        sr_ndarray_desc(a->dtype, a->ndim, a->shape, desc, sizeof(desc)));
}

static int routes_range(sr_dtype *canon, const sr_ndarray *a, sr_err *err)
{
    int64_t lo, hi;
    int rc = sr_ndarray_minmax(a, &lo, &hi, err);
    if (rc)
        return rc;
    if (lo < 0)
        return sr_err_set(err, SR_E_ROUTES_NEGATIVE, "routed expert indices must be non-negative");
    return sr_routes_canonical_dtype(canon, hi, err);
}

int sr_routes_check_canonical(const sr_ndarray *a, const char *field, sr_err *err)
{
    sr_dtype canon;
    int rc = routes_shape_ok(a, err);
    if (!rc)
        rc = routes_range(&canon, a, err);
    if (rc)
        return rc;
    if (canon != a->dtype)
        return sr_err_set(
            err, SR_E_ENV_NON_CANONICAL, "packed %s uses non-canonical dtype %s; expected %s",
            field ? field : "routed_experts", sr_dtype_name(a->dtype), sr_dtype_name(canon));
    return 0;
}

int sr_routes_compact(sr_ndarray *out, const sr_ndarray *in, sr_err *err)
{
    sr_ndarray init = SR_NDARRAY_INIT;
    *out = init;
    sr_dtype canon;
    int rc = routes_shape_ok(in, err);
    if (!rc)
        rc = routes_range(&canon, in, err);
    if (!rc)
        rc = sr_ndarray_alloc(out, canon, 3, in->shape, err);
    if (rc)
        return rc;
    uint64_t n = sr_ndarray_numel(in);
    if (in->dtype == canon) {
        if (in->nbytes)
            memcpy(out->data, in->data, in->nbytes);
        return 0;
    }
    for (uint64_t i = 0; i < n; i++)
        sr_ndarray_set_i64(out, i, sr_ndarray_get_i64(in, i));
    return 0;
}

int sr_routes_pack(sr_buf *out, const sr_ndarray *routes, const cJSON *extra, sr_b64_impl impl,
                   sr_err *err)
{
    sr_ndarray compact;
    int rc = sr_routes_compact(&compact, routes, err);
    if (rc)
        return rc;
    rc = sr_envelope_pack(out, &compact, SR_ROUTE_DTYPES, extra, impl, err);
    sr_ndarray_release(&compact);
    return rc;
}
