/* Declared shapes and value constraints of field definitions (sr_fields.h): reading them from a
 * definition file, their sanity rules, and the check of a decoded array against them. */
#include "sr_fields_priv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sr_stats.h"

/* The largest fixed length of an axis. */
#define DIM_MAX 2147483647LL

const char *sr_field_shape_str(const sr_field_def *d, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap)
        buf[0] = '\0';
    if (!d->has_shape || cap < 2)
        return buf;
    n += (size_t)snprintf(buf, cap, "[");
    for (int a = 0; a < d->ndim && n < cap; a++) {
        const char *sep = a ? ", " : "";
        if (d->dims[a] == SR_FIELD_DIM_T)
            n += (size_t)snprintf(buf + n, cap - n, "%sT", sep);
        else if (d->dims[a] == SR_FIELD_DIM_ANY)
            n += (size_t)snprintf(buf + n, cap - n, "%s*", sep);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%lld", sep, (long long)d->dims[a]);
    }
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

/* The widest itemsize among d's dtypes (1 when none is listed yet). */
static size_t widest(const sr_field_def *d)
{
    size_t w = 1;
    for (int t = 1; t < SR_DTYPE_COUNT; t++)
        if ((d->dtypes >> t & 1) && sr_dtype_size((sr_dtype)t) > w)
            w = sr_dtype_size((sr_dtype)t);
    return w;
}

static int has_integer_dtype(const sr_field_def *d)
{
    for (int t = 1; t < SR_DTYPE_COUNT; t++)
        if ((d->dtypes >> t & 1) && sr_dtype_is_integer((sr_dtype)t))
            return 1;
    return 0;
}

const char *sr_fields_constraint_problem(const sr_field_def *d)
{
    if (d->has_shape) {
        for (int a = 0; a < d->ndim; a++) {
            int64_t n = d->dims[a];
            if (n == SR_FIELD_DIM_T && a > 0)
                return "shape: \"T\" (the token dimension) is allowed at axis 0 only";
            if (n != SR_FIELD_DIM_T && n != SR_FIELD_DIM_ANY && (n < 1 || n > DIM_MAX))
                return "shape: a fixed length must be 1 to 2147483647";
        }
        if (d->token_rows != (d->dims[0] == SR_FIELD_DIM_T))
            return "shape: token_rows and a \"T\" at axis 0 go together";
        /* One row's bytes: the fixed lengths times the widest dtype, without overflow. */
        uint64_t cap = d->max_bytes ? d->max_bytes : SR_ENVELOPE_DEFAULT_MAX, row = widest(d);
        for (int a = 0; a < d->ndim; a++) {
            if (d->dims[a] < 1)
                continue;
            if ((uint64_t)d->dims[a] > cap / row)
                return "shape: the fixed lengths times the widest dtype exceed max_bytes (one "
                       "row would not fit)";
            row *= (uint64_t)d->dims[a];
        }
    }
    if (d->has_range) {
        if (!isfinite(d->range_lo) || !isfinite(d->range_hi))
            return "range: the bounds must be finite numbers";
        if (d->range_lo > d->range_hi || d->range_min > d->range_max)
            return "range: lo must not exceed hi";
    }
    return NULL;
}

/* "shape": its entries into d->dims (d->ndim from their count). */
static int read_shape(sr_field_def *d, const sr_json_doc *doc, const cJSON *arr, sr_err *err)
{
    if (!cJSON_IsArray(arr) || !arr->child)
        return sr_json_error(doc, arr, err, SR_E_FIELD_DEF,
                             "shape must be a non-empty array of \"T\", \"*\" and lengths");
    int a = 0;
    for (const cJSON *it = arr->child; it; it = it->next, a++) {
        if (a == SR_NDIM_MAX)
            return sr_json_error(doc, it, err, SR_E_FIELD_DEF, "shape: at most %d axes",
                                 SR_NDIM_MAX);
        if (cJSON_IsString(it) && strcmp(it->valuestring, "T") == 0) {
            if (a > 0)
                return sr_json_error(doc, it, err, SR_E_FIELD_DEF,
                                     "shape: \"T\" (the token dimension) is allowed at axis 0 "
                                     "only, here at axis %d",
                                     a);
            d->dims[a] = SR_FIELD_DIM_T;
        } else if (cJSON_IsString(it) && strcmp(it->valuestring, "*") == 0) {
            d->dims[a] = SR_FIELD_DIM_ANY;
        } else if (cJSON_IsNumber(it) && sr_json_is_integer_literal(doc, it) &&
                   it->valuedouble >= 1 && it->valuedouble <= (double)DIM_MAX) {
            d->dims[a] = (int64_t)it->valuedouble;
        } else {
            return sr_json_error(doc, it, err, SR_E_FIELD_DEF,
                                 "shape: axis %d must be \"T\" (axis 0), \"*\" or an integer "
                                 "length 1..2147483647",
                                 a);
        }
    }
    d->has_shape = 1;
    d->ndim = a;
    return 0;
}

/* "range": [lo, hi], integers when an integer dtype is listed. */
static int read_range(sr_field_def *d, const sr_json_doc *doc, const cJSON *arr, sr_err *err)
{
    int ints = has_integer_dtype(d);
    const cJSON *lo = cJSON_IsArray(arr) ? arr->child : NULL, *hi = lo ? lo->next : NULL;
    if (!lo || !hi || hi->next || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi))
        return sr_json_error(doc, arr, err, SR_E_FIELD_DEF, "range must be [lo, hi]: two numbers");
    for (const cJSON *v = lo; v; v = v->next) {
        if (!isfinite(v->valuedouble))
            return sr_json_error(doc, v, err, SR_E_FIELD_DEF, "range: bounds must be finite");
        if (ints && (!sr_json_is_integer_literal(doc, v) || fabs(v->valuedouble) > 9.2e18))
            return sr_json_error(doc, v, err, SR_E_FIELD_DEF,
                                 "range: the field lists an integer dtype, so its bounds must be "
                                 "integers (an id range such as [0, 255])");
    }
    d->range_lo = lo->valuedouble;
    d->range_hi = hi->valuedouble;
    d->range_min = ints ? (int64_t)lo->valuedouble : INT64_MIN;
    d->range_max = ints ? (int64_t)hi->valuedouble : INT64_MAX;
    if (d->range_lo > d->range_hi)
        return sr_json_error(doc, arr, err, SR_E_FIELD_DEF, "range: lo must not exceed hi");
    d->has_range = 1;
    return 0;
}

int sr_fields_read_constraints(sr_field_def *d, const sr_json_doc *doc, const cJSON *obj,
                               sr_err *err)
{
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    const cJSON *ndim = cJSON_GetObjectItemCaseSensitive(obj, "ndim");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(obj, "token_rows");
    int rc = 0;
    if (shape) {
        int given = d->ndim;
        if ((rc = read_shape(d, doc, shape, err)))
            return rc;
        if (ndim && given != d->ndim)
            return sr_json_error(doc, shape, err, SR_E_FIELD_DEF,
                                 "shape has %d axes but ndim is %d", d->ndim, given);
        int t = d->dims[0] == SR_FIELD_DIM_T;
        if (rows && cJSON_IsBool(rows) && cJSON_IsTrue(rows) != t)
            return sr_json_error(doc, rows, err, SR_E_FIELD_DEF,
                                 t ? "token_rows is false, but shape[0] is \"T\" (the token "
                                     "dimension)"
                                   : "token_rows is true, but shape[0] is not \"T\"");
        d->token_rows = t;
    } else if (!ndim) {
        return sr_json_error(doc, obj, err, SR_E_FIELD_DEF, "missing required key 'ndim'");
    }
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(obj, "range");
    if (range && (rc = read_range(d, doc, range, err)))
        return rc;
    if ((rc = sr_json_get_bool(doc, obj, "finite", 0, 0, &d->finite, err)))
        return rc;
    const char *why = sr_fields_constraint_problem(d);
    return why ? sr_json_error(doc, shape ? shape : obj, err, SR_E_FIELD_DEF, "%s", why) : 0;
}

/* ---- the check of an array ---- */

/* Product of the fixed lengths of axes 1.., or 0 when one of them is "*". */
static uint64_t trailing(const sr_field_def *d)
{
    uint64_t p = 1;
    for (int a = 1; a < d->ndim; a++) {
        if (d->dims[a] < 1)
            return 0;
        p *= (uint64_t)d->dims[a];
    }
    return p;
}

static int check_shape(const sr_field_def *d, const sr_ndarray *a, int64_t tokens, int flat,
                       sr_err *err)
{
    char decl[128];
    sr_field_shape_str(d, decl, sizeof(decl));
    if (flat) {
        uint64_t row = trailing(d), n = sr_ndarray_numel(a);
        if (!row)
            return 0;
        int known = tokens >= 0 && d->dims[0] == SR_FIELD_DIM_T;
        if (known && n != (uint64_t)tokens * row && tokens > 0 && n % (uint64_t)tokens == 0)
            return sr_err_set(err, SR_E_FIELD_SHAPE,
                              "%s: %llu elements in the flat wire = T x %llu for T = %lld tokens: "
                              "the trailing size is %llu, the definition declares %llu (shape %s)",
                              d->name, (unsigned long long)n, (unsigned long long)(n / tokens),
                              (long long)tokens, (unsigned long long)(n / tokens),
                              (unsigned long long)row, decl);
        if (known && n != (uint64_t)tokens * row)
            return sr_err_set(err, SR_E_FIELD_SHAPE,
                              "%s: %llu elements in the flat wire, not T x %llu = %llu for T = "
                              "%lld tokens (shape %s)",
                              d->name, (unsigned long long)n, (unsigned long long)row,
                              (unsigned long long)((uint64_t)tokens * row), (long long)tokens,
                              decl);
        if (n % row != 0)
            return sr_err_set(err, SR_E_FIELD_SHAPE,
                              "%s: %llu elements in the flat wire, not a multiple of the trailing "
                              "size %llu (shape %s)",
                              d->name, (unsigned long long)n, (unsigned long long)row, decl);
        return 0;
    }
    if (a->ndim != d->ndim)
        return sr_err_set(err, SR_E_FIELD_SHAPE, "%s: %d axes, the declared shape %s has %d",
                          d->name, a->ndim, decl, d->ndim);
    for (int x = 0; x < d->ndim; x++) {
        int64_t want = d->dims[x] == SR_FIELD_DIM_T ? tokens : d->dims[x];
        if (want < 0 || a->shape[x] == want)
            continue;
        if (d->dims[x] == SR_FIELD_DIM_T)
            return sr_err_set(err, SR_E_FIELD_SHAPE,
                              "%s: axis 0 (T) has %lld rows, the reply has %lld tokens (declared "
                              "shape %s)",
                              d->name, (long long)a->shape[x], (long long)tokens, decl);
        return sr_err_set(err, SR_E_FIELD_SHAPE,
                          "%s: axis %d has length %lld, the definition declares %lld (shape %s)",
                          d->name, x, (long long)a->shape[x], (long long)want, decl);
    }
    return 0;
}

/* Element i as a double (float dtypes) or an integer (the rest; *over: a uint64 past INT64_MAX). */
static void element(const sr_ndarray *a, uint64_t i, double *f, int64_t *v, int *over)
{
    const unsigned char *p = (const unsigned char *)a->data + i * sr_dtype_size(a->dtype);
    *over = 0;
    if (a->dtype == SR_DTYPE_FLOAT16) {
        uint16_t h;
        memcpy(&h, p, 2);
        *f = sr_half_to_double(h);
    } else if (a->dtype == SR_DTYPE_FLOAT32) {
        float x;
        memcpy(&x, p, 4);
        *f = x;
    } else if (a->dtype == SR_DTYPE_FLOAT64) {
        memcpy(f, p, 8);
    } else if (a->dtype == SR_DTYPE_UINT64) {
        uint64_t u;
        memcpy(&u, p, 8);
        *over = u > (uint64_t)INT64_MAX;
        *v = *over ? INT64_MAX : (int64_t)u;
    } else {
        *v = sr_ndarray_get_i64(a, i);
    }
}

static int check_values(const sr_field_def *d, const sr_ndarray *a, sr_err *err)
{
    int floats = sr_dtype_is_float(a->dtype);
    if (!d->has_range && !(d->finite && floats))
        return 0;
    uint64_t n = sr_ndarray_numel(a), bad = 0, first = 0;
    double f = 0, ff = 0;
    int64_t v = 0, fv = 0;
    for (uint64_t i = 0; i < n; i++) {
        int over = 0, out;
        element(a, i, &f, &v, &over);
        if (floats)
            out = !isfinite(f) || (d->has_range && (f < d->range_lo || f > d->range_hi));
        else
            out = d->has_range && (over || v < d->range_min || v > d->range_max);
        if (out && bad++ == 0) {
            first = i;
            ff = f;
            fv = v;
        }
    }
    if (!bad)
        return 0;
    char val[48], rng[96] = "finite values";
    if (floats)
        snprintf(val, sizeof(val), "%.9g", ff);
    else
        snprintf(val, sizeof(val), "%lld", (long long)fv);
    if (d->has_range && floats)
        snprintf(rng, sizeof(rng), "finite values in [%.9g, %.9g]", d->range_lo, d->range_hi);
    else if (d->has_range)
        snprintf(rng, sizeof(rng), "values in [%lld, %lld]", (long long)d->range_min,
                 (long long)d->range_max);
    return sr_err_set(err, SR_E_FIELD_RANGE,
                      "%s: element %llu (flat index) is %s; the definition declares %s (%llu of "
                      "%llu elements outside)",
                      d->name, (unsigned long long)first, val, rng, (unsigned long long)bad,
                      (unsigned long long)n);
}

int sr_field_check_array(const sr_field_def *d, const sr_ndarray *a, int64_t tokens, int flat,
                         sr_err *err)
{
    int rc = d->has_shape ? check_shape(d, a, tokens, flat, err) : 0;
    return rc ? rc : check_values(d, a, err);
}
