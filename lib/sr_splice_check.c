/* Validation of every entry the re-attachment found, in document order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sr_nested.h"
#include "sr_npy.h"
#include "sr_nrlre.h"
#include "sr_splice_priv.h"

static size_t skip_ws(const char *t, size_t n, size_t i)
{
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

/*
 * The reference sees a float dimension as text; cJSON only keeps doubles (sr_envelope.h). The
 * shape normally follows the blob, but the reference also takes it after dtype or a sidecar (or
 * spaced), so otherwise the envelope's own members are searched for the first "shape" key, the
 * one cJSON's lookup returns.
 */
static int shape_text_of(const sr_splicer *s, const blob_rec *b)
{
    static const char key[] = ",\"shape\":";
    const char *t = s->text.data;
    size_t n = s->text.len, i = b->text_off + 1;
    if (i + 9 <= n && memcmp(t + i, key, 9) == 0)
        return sr_envelope_shape_text(t + i + 9, n - i - 9);
    for (int depth = 0; i < n; i++) {
        if (t[i] == '"') {
            size_t k = i + 1;
            while (k < n && t[k] != '"')
                k += t[k] == '\\' ? 2 : 1;
            if (k >= n)
                break;
            size_t j = skip_ws(t, n, k + 1);
            if (depth == 0 && k - i == 6 && memcmp(t + i + 1, "shape", 5) == 0 && j < n &&
                t[j] == ':') {
                j = skip_ws(t, n, j + 1);
                return sr_envelope_shape_text(t + j, n - j);
            }
            i = k;
        } else if (t[i] == '{' || t[i] == '[') {
            depth++;
        } else if ((t[i] == '}' || t[i] == ']') && depth-- == 0) {
            break;
        }
    }
    return SR_SHAPE_TEXT_UNKNOWN;
}

/*
 * The entry's bound (sr_splice.h) from its blob's lane OR: lane k holds the OR of byte k % w of
 * every w-byte item (w = 1, 2 or 4 divides 4, and a blob's bytes start at lane 0), so folding the
 * lanes to the item's width gives the items' OR; the elements are little-endian (sr_ndarray.h).
 * An 8-byte item spans two words whose halves the lanes mix: unknown.
 */
static sr_value_bound bound_of(const sr_ndarray *a, uint32_t lor)
{
    sr_value_bound b = SR_VALUE_BOUND_UNKNOWN;
    if (!sr_dtype_is_integer(a->dtype))
        return b;
    switch (sr_dtype_size(a->dtype)) {
    case 1:
        lor |= lor >> 16;
        b.value_or = (lor | lor >> 8) & 0xffu;
        break;
    case 2:
        b.value_or = (lor | lor >> 16) & 0xffffu;
        break;
    case 4:
        b.value_or = lor;
        break;
    default:
        return b;
    }
    b.known = 1;
    return b;
}

/*
 * The canonical-dtype rule of §2.3 for uint8/int16/int32 from the OR of the values (the entry's
 * bound): for non-negative values, max < 2^k exactly when OR < 2^k, and the sign bit shows in
 * the OR. Other integer dtypes (custom fields), and a bound not gathered, take the min/max pass.
 */
static int check_canonical(const sr_ndarray *a, sr_value_bound b, const char *name, sr_err *err)
{
    sr_dtype canon = a->dtype;
    int neg = 0;
    if (a->dtype == SR_DTYPE_UINT8) {
        return 0;
    } else if (b.known && (a->dtype == SR_DTYPE_INT16 || a->dtype == SR_DTYPE_INT32)) {
        uint64_t o = b.value_or;
        neg = (o & (a->dtype == SR_DTYPE_INT16 ? 0x8000u : 0x80000000u)) != 0;
        canon = o < 256 ? SR_DTYPE_UINT8 : o < 32768 ? SR_DTYPE_INT16 : SR_DTYPE_INT32;
    } else {
        int64_t lo, hi;
        int rc = sr_ndarray_minmax(a, &lo, &hi, err);
        if (rc)
            return rc;
        neg = lo < 0;
        if (!neg && (rc = sr_routes_canonical_dtype(&canon, hi, err)))
            return rc;
    }
    if (neg)
        return sr_err_set(err, SR_E_ROUTES_NEGATIVE, "packed %s values must be non-negative", name);
    if (canon != a->dtype)
        return sr_err_set(err, SR_E_ENV_NON_CANONICAL,
                          "packed %s uses non-canonical dtype %s; expected %s", name,
                          sr_dtype_name(a->dtype), sr_dtype_name(canon));
    return 0;
}

static int check_envelope(sr_splicer *s, sr_splice_entry *e, size_t ref, sr_err *err)
{
    const sr_field_def *d = e->field;
    sr_contract c = sr_field_contract(d);
    c.canonical_routes = 0;
    if (ref == SIZE_MAX) {
        /* A registered key holding something other than an envelope. */
        sr_ndarray a;
        int rc = sr_envelope_unpack_decoded(&a, e->node, SR_SHAPE_TEXT_UNKNOWN, NULL, 0, &c, err);
        return rc ? rc : sr_err_set(err, SR_E_INTERNAL, "splice: an unspliced envelope passed");
    }
    blob_rec *b = &s->blobs[ref];
    if (b->err) {
        sr_err tmp = SR_ERR_INIT;
        int rc = sr_envelope_unpack_decoded(&e->array, e->node, shape_text_of(s, b), b->at,
                                            b->nbytes, &c, &tmp);
        if (rc == SR_E_ENV_NOT_OBJECT || rc == SR_E_ENV_INVALID) {
            *err = tmp;
            return rc;
        }
        /* The reference decodes right after reading the keys (§2.2 step 2). */
        *err = *b->err;
        sr_err_prefix(err, "invalid packed array envelope: ");
        return err->code;
    }
    int rc = sr_envelope_unpack_decoded(&e->array, e->node, shape_text_of(s, b), b->at, b->nbytes,
                                        &c, err);
    sr_value_bound bound = SR_VALUE_BOUND_UNKNOWN;
    if (!rc && s->gather_lanes[b->field])
        bound = bound_of(&e->array, b->lane_or);
    if (!rc && d->canonical)
        rc = check_canonical(&e->array, bound, d->name, err);
    if (rc && err->offset < 0)
        err->offset = (int64_t)b->body_off;
    if (rc)
        return rc;
    e->spliced = 1;
    e->b64_noncanonical = b->noncanon;
    e->bound = bound;
    cJSON *side = NULL;
    for (const cJSON *m = e->node->child; m; m = m->next) {
        if (sr_envelope_is_reserved_key(m->string))
            continue;
        if (!side && !(side = cJSON_CreateObject()))
            return sr_err_set(err, SR_E_NOMEM, "splice: cannot copy sidecar keys");
        cJSON *dup = cJSON_Duplicate(m, 1);
        if (!dup || !cJSON_AddItemToObject(side, m->string, dup)) {
            cJSON_Delete(dup);
            cJSON_Delete(side);
            return sr_err_set(err, SR_E_NOMEM, "splice: cannot copy sidecar keys");
        }
    }
    e->sidecar = side;
    return 0;
}

/* Converts an integer array that was not spliced (re-spaced JSON) from the document. */
static int convert_ints(sr_splicer *s, sr_splice_entry *e, size_t *val_off, size_t *count,
                        sr_err *err)
{
    const sr_field_def *d = e->field;
    if (!cJSON_IsArray(e->node))
        return sr_err_set(err, SR_E_INTARRAY_STRICT,
                          "%s holds an object, not an integer array (the reference accepts the "
                          "body: it never checks %s)",
                          d->name, d->name);
    size_t n = (size_t)cJSON_GetArraySize(e->node);
    size_t width = sr_intarray_dtype(d->min, d->max) == SR_DTYPE_INT32 ? 4 : 8;
    size_t off = (s->ivals_len + 7) & ~(size_t)7;
    if (off + n * width > s->ivals_cap) {
        size_t nc = s->ivals_cap ? s->ivals_cap : 4096;
        while (nc < off + n * width)
            nc *= 2;
        unsigned char *v = realloc(s->ivals, nc);
        if (!v)
            return sr_err_set(err, SR_E_NOMEM, "splice: cannot grow the integer store");
        s->ivals = v;
        s->ivals_cap = nc;
    }
    size_t i = 0;
    for (const cJSON *it = e->node->child; it; it = it->next, i++) {
        double v = it->valuedouble;
        /* A literal with a fraction or an exponent (1.0, 1e2) is a float to the reference. */
        if (!cJSON_IsNumber(it) || (it->type & SR_JDOM_NOT_INT) || v != floor(v))
            return sr_err_set(err, SR_E_INTARRAY_STRICT,
                              "%s[%zu] is not an integer literal (the reference accepts the "
                              "body: it never checks %s values)",
                              d->name, i, d->name);
        /* Beyond 2^53 the double may not be the literal's integer: refused, never rounded. */
        if (!(v > -9007199254740992.0 && v < 9007199254740992.0) || (int64_t)v < d->min ||
            (int64_t)v > d->max)
            return sr_err_set(err, SR_E_INTARRAY_STRICT,
                              "%s[%zu] = %.17g is outside [%lld, %lld] (the reference accepts the "
                              "body: it never checks %s values)",
                              d->name, i, v, (long long)d->min, (long long)d->max, d->name);
        int64_t x = (int64_t)v;
        if (width == 4) {
            int32_t y = (int32_t)x;
            memcpy(s->ivals + off + i * 4, &y, 4);
        } else {
            memcpy(s->ivals + off + i * 8, &x, 8);
        }
    }
    *val_off = off;
    *count = n;
    s->ivals_len = off + n * width;
    return 0;
}

/* Room for n more bytes at a 64-byte aligned offset of the document-decoded store. */
static int sbytes_room(sr_splicer *s, size_t n, size_t *off, sr_err *err)
{
    size_t at = (s->sbytes_len + 63) & ~(size_t)63;
    if (n > SIZE_MAX - at - 64)
        return sr_err_set(err, SR_E_LIMIT, "splice: %zu bytes do not fit the store", n);
    if (at + n + 1 > s->sbytes_cap) {
        size_t nc = s->sbytes_cap ? s->sbytes_cap : 4096;
        while (nc < at + n + 1)
            nc *= 2;
        unsigned char *v = realloc(s->sbytes, nc);
        if (!v)
            return sr_err_set(err, SR_E_NOMEM, "splice: cannot grow the string store to %zu bytes",
                              nc);
        s->sbytes = v;
        s->sbytes_cap = nc;
    }
    *off = at;
    s->sbytes_len = at + n;
    return 0;
}

/*
 * The payload bytes of a string-blob entry: the cut blob's, or the document string's base64
 * (after the nrlre1 prefix) decoded into the store (*doc_off its offset there, else SIZE_MAX).
 */
static int string_bytes(sr_splicer *s, sr_splice_entry *e, size_t ref, const unsigned char **out,
                        size_t *n, size_t *doc_off, sr_err *err)
{
    const sr_field_def *d = e->field;
    size_t maxb = d->max_bytes ? d->max_bytes : SR_ENVELOPE_DEFAULT_MAX;
    *doc_off = SIZE_MAX;
    if (ref != SIZE_MAX) {
        blob_rec *b = &s->blobs[ref];
        if (b->err) {
            *err = *b->err;
            return err->code;
        }
        if (b->nbytes > maxb)
            return sr_err_set_at(err, SR_E_ENV_TOO_LARGE, (int64_t)b->body_off,
                                 "%s decodes to %zu bytes, more than its %zu", d->name, b->nbytes,
                                 maxb);
        *out = b->at;
        *n = b->nbytes;
        e->spliced = 1;
        e->b64_noncanonical = b->noncanon;
        return 0;
    }
    if (!cJSON_IsString(e->node))
        return sr_err_set(err, SR_E_WIRE_NOT_STRING, "%s must be a base64 string (%s wire)",
                          d->name,
                          d->wire == SR_WIRE_NPY   ? ".npy"
                          : d->wire == SR_WIRE_RAW ? "raw"
                                                   : "nrlre1");
    const char *v = e->node->valuestring;
    size_t len = strlen(v), skip = 0;
    if (d->wire == SR_WIRE_NRLRE) {
        sr_nrlre_header h;
        int rc = sr_nrlre_parse_prefix(&h, v, len, err);
        if (rc)
            return rc;
        skip = h.data_offset;
    }
    if (sr_base64_decoded_min(v + skip, len - skip) > maxb)
        return sr_err_set(err, SR_E_ENV_TOO_LARGE, "%s's base64 exceeds its %zu bytes", d->name,
                          maxb);
    size_t off = 0, got = 0;
    int rc = sbytes_room(s, sr_base64_decoded_max(len - skip), &off, err);
    if (!rc)
        rc = sr_base64_decode_ex(s->sbytes + off, &got, v + skip, len - skip, s->impl,
                                 sr_splice_i_b64_flags(s), &e->b64_noncanonical, err);
    if (rc)
        return rc;
    *out = s->sbytes + off;
    *n = got;
    *doc_off = off;
    return 0;
}

/* A string-blob entry: the payload read by its wire into e->array (dtype, shape, data). */
static int check_string(sr_splicer *s, sr_splice_entry *e, size_t ref, size_t *doc_off, sr_err *err)
{
    const sr_field_def *d = e->field;
    const unsigned char *p = NULL;
    size_t n = 0;
    int rc = string_bytes(s, e, ref, &p, &n, doc_off, err);
    if (rc)
        return rc;
    sr_ndarray *a = &e->array;
    if (d->wire == SR_WIRE_NPY) {
        sr_npy_header h;
        rc = sr_npy_view(a, &h, p, n, d->dtypes, d->ndim, err);
        if (!rc && *doc_off != SIZE_MAX)
            *doc_off += h.data_offset;
        return rc;
    }
    if (d->wire == SR_WIRE_NRLRE) {
        sr_nrlre_header h;
        const char *v = e->node->valuestring;
        if ((rc = sr_nrlre_parse_prefix(&h, v, strlen(v), err)))
            return rc;
        if (!(d->dtypes & SR_DTYPE_BIT(h.dtype)))
            return sr_err_set(err, SR_E_NRLRE_DTYPE, "%s: dtype %s is not one the field allows",
                              d->name, sr_dtype_name(h.dtype));
        if (n != h.data_bytes)
            return sr_err_set(err, SR_E_WIRE_BYTE_COUNT,
                              "%s: %zu bytes decoded, the prefix's %s [%lld, %lld, %lld] needs %zu",
                              d->name, n, sr_dtype_name(h.dtype), (long long)h.shape[0],
                              (long long)h.shape[1], (long long)h.shape[2], h.data_bytes);
        a->dtype = h.dtype;
        a->ndim = 3;
        memcpy(a->shape, h.shape, sizeof(h.shape));
    } else {
        sr_dtype t = SR_DTYPE_INVALID;
        for (int i = 1; i < SR_DTYPE_COUNT; i++)
            if (d->dtypes & SR_DTYPE_BIT(i))
                t = (sr_dtype)i;
        size_t isz = sr_dtype_size(t);
        if (!isz || n % isz)
            return sr_err_set(err, SR_E_WIRE_BYTE_COUNT,
                              "%s: %zu bytes decoded, not a whole number of %s elements", d->name,
                              n, sr_dtype_name(t));
        a->dtype = t;
        a->ndim = 1;
        a->shape[0] = (int64_t)(n / isz);
    }
    a->data = (void *)p;
    a->nbytes = n;
    a->owned = 0;
    return 0;
}

/* A nested-list entry: its values into the store (*doc_off). */
static int check_nested(sr_splicer *s, sr_splice_entry *e, size_t *doc_off, sr_err *err)
{
    const sr_field_def *d = e->field;
    sr_ndarray *a = &e->array;
    size_t count = 0, off = 0;
    int rc = sr_nested_shape(a->shape, &count, e->node, d->ndim, err);
    sr_dtype t = sr_nested_dtype(d->min, d->max);
    if (!rc)
        rc = sbytes_room(s, count * sr_dtype_size(t), &off, err);
    if (!rc)
        rc = sr_nested_fill(s->sbytes + off, e->node, d->ndim, a->shape, d->min, d->max, err);
    if (rc)
        return rc;
    a->dtype = t;
    a->ndim = d->ndim;
    a->nbytes = count * sr_dtype_size(t);
    a->owned = 0;
    *doc_off = off;
    return 0;
}

static int check_entry(sr_splicer *s, size_t i, size_t *val_off, sr_err *err)
{
    sr_splice_entry *e = &s->entries[i];
    size_t ref = s->entry_ref[i];
    e->path = s->paths.data + s->path_off[i];
    if (e->kind == SR_SPLICE_NULL) {
        if (!e->field->nullable)
            return sr_err_set(err, SR_E_ENV_NOT_OBJECT,
                              "packed array payload must be an object (%s does not allow null)",
                              e->field->name);
        return 0;
    }
    if (e->kind == SR_SPLICE_ENVELOPE)
        return check_envelope(s, e, ref, err);
    if (e->kind == SR_SPLICE_STRING)
        return check_string(s, e, ref, &val_off[i], err);
    if (e->kind == SR_SPLICE_NESTED)
        return check_nested(s, e, &val_off[i], err);
    size_t count = 0;
    if (ref == SIZE_MAX) {
        int rc = convert_ints(s, e, &val_off[i], &count, err);
        if (rc)
            return rc;
    } else {
        val_off[i] = s->ints[ref].val_off;
        count = s->ints[ref].count;
        e->spliced = 1;
    }
    e->array.dtype = sr_intarray_dtype(e->field->min, e->field->max);
    e->array.ndim = 1;
    e->array.shape[0] = (int64_t)count;
    e->array.nbytes = count * sr_dtype_size(e->array.dtype);
    return 0;
}

int sr_splice_i_validate(sr_splicer *s, sr_err *err)
{
    /* The offsets live in the splicer, kept for the next response (no allocation per body). */
    size_t need = s->nentries ? s->nentries : 1;
    if (need > s->cap_val_off) {
        size_t *a = realloc(s->val_off, need * sizeof(size_t));
        if (!a)
            return sr_err_set(err, SR_E_NOMEM, "splice: cannot allocate entry offsets");
        s->val_off = a;
        s->cap_val_off = need;
    }
    size_t *val_off = s->val_off;
    memset(val_off, 0, need * sizeof(size_t));
    int rc = 0;
    /* Integer arrays read from the document last: their refusals are checks the reference does
     * not make (intarray.stricter_than_reference), so any error it does make comes first. */
    for (int pass = 0; pass < 2 && !rc; pass++) {
        for (size_t i = 0; i < s->nentries && !rc; i++) {
            int late = s->entries[i].kind == SR_SPLICE_INT_ARRAY && s->entry_ref[i] == SIZE_MAX;
            if (late != pass)
                continue;
            rc = check_entry(s, i, val_off, err);
            if (rc)
                sr_err_prefix(err, "%s: ", s->paths.data + s->path_off[i]);
        }
    }
    /* Integer views are set last: converting re-spaced arrays may move the store (and decoding
     * a document string or nested lists the other store). */
    for (size_t i = 0; i < s->nentries && !rc; i++) {
        sr_splice_entry *e = &s->entries[i];
        if (e->kind == SR_SPLICE_INT_ARRAY)
            e->array.data = s->ivals ? s->ivals + val_off[i] : NULL;
        else if ((e->kind == SR_SPLICE_NESTED || (e->kind == SR_SPLICE_STRING && !e->spliced)) &&
                 val_off[i] != SIZE_MAX)
            e->array.data = s->sbytes + val_off[i];
    }
    return rc;
}
