/* Validation of every entry the re-attachment found, in document order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sr_splice_impl.h"

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
 * The canonical-dtype rule of §2.3 for uint8/int16/int32 from the OR of the decoded bytes: for
 * non-negative values, max < 2^k exactly when OR < 2^k, and the sign bits show in the OR.
 * Other integer dtypes (custom fields) take the min/max pass.
 */
static int check_canonical(const sr_ndarray *a, uint32_t lor, const char *name, sr_err *err)
{
    sr_dtype canon = a->dtype;
    int neg = 0;
    if (a->dtype == SR_DTYPE_UINT8) {
        return 0;
    } else if (a->dtype == SR_DTYPE_INT16) {
        uint32_t o = (lor & 0xffffu) | (lor >> 16);
        neg = (o & 0x8000u) != 0;
        canon = o < 256 ? SR_DTYPE_UINT8 : SR_DTYPE_INT16;
    } else if (a->dtype == SR_DTYPE_INT32) {
        neg = (lor >> 31) != 0;
        canon = lor < 256 ? SR_DTYPE_UINT8 : lor < 32768 ? SR_DTYPE_INT16 : SR_DTYPE_INT32;
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
        int rc = sr_envelope_unpack_decoded(&e->array, e->node, shape_text_of(s, b),
                                            s->out + b->out_off, b->nbytes, &c, &tmp);
        if (rc == SR_E_ENV_NOT_OBJECT || rc == SR_E_ENV_INVALID) {
            *err = tmp;
            return rc;
        }
        /* The reference decodes right after reading the keys (§2.2 step 2). */
        *err = *b->err;
        sr_err_prefix(err, "invalid packed array envelope: ");
        return err->code;
    }
    int rc = sr_envelope_unpack_decoded(&e->array, e->node, shape_text_of(s, b),
                                        s->out + b->out_off, b->nbytes, &c, err);
    if (!rc && d->canonical)
        rc = check_canonical(&e->array, b->lane_or, d->name, err);
    if (rc && err->offset < 0)
        err->offset = (int64_t)b->body_off;
    if (rc)
        return rc;
    e->spliced = 1;
    e->b64_noncanonical = b->noncanon;
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
    size_t *val_off = calloc(s->nentries ? s->nentries : 1, sizeof(size_t));
    if (!val_off)
        return sr_err_set(err, SR_E_NOMEM, "splice: cannot allocate entry offsets");
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
    /* Integer views are set last: converting re-spaced arrays may move the store. */
    for (size_t i = 0; i < s->nentries && !rc; i++) {
        if (s->entries[i].kind == SR_SPLICE_INT_ARRAY)
            s->entries[i].array.data = s->ivals ? s->ivals + val_off[i] : NULL;
    }
    free(val_off);
    return rc;
}
