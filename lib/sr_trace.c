#include "sr_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_trace_priv.h"

/* ---- element conversion ---- */

/* Two copies of the integer type list, because a macro cannot expand itself when nested. */
#define INT_DST(X, A)                                                                              \
    X(A, SR_DTYPE_UINT8, uint8_t)                                                                  \
    X(A, SR_DTYPE_INT8, int8_t)                                                                    \
    X(A, SR_DTYPE_UINT16, uint16_t)                                                                \
    X(A, SR_DTYPE_INT16, int16_t)                                                                  \
    X(A, SR_DTYPE_UINT32, uint32_t)                                                                \
    X(A, SR_DTYPE_INT32, int32_t)                                                                  \
    X(A, SR_DTYPE_UINT64, uint64_t)                                                                \
    X(A, SR_DTYPE_INT64, int64_t)
#define INT_SRC(X, A)                                                                              \
    X(A, SR_DTYPE_UINT8, uint8_t)                                                                  \
    X(A, SR_DTYPE_INT8, int8_t)                                                                    \
    X(A, SR_DTYPE_UINT16, uint16_t)                                                                \
    X(A, SR_DTYPE_INT16, int16_t)                                                                  \
    X(A, SR_DTYPE_UINT32, uint32_t)                                                                \
    X(A, SR_DTYPE_INT32, int32_t)                                                                  \
    X(A, SR_DTYPE_UINT64, uint64_t)                                                                \
    X(A, SR_DTYPE_INT64, int64_t)

#define CONV_FROM(DT, SD, ST)                                                                      \
    case SD: {                                                                                     \
        const ST *s = src;                                                                         \
        for (size_t i = 0; i < n; i++)                                                             \
            d[i] = (DT)s[i];                                                                       \
        return 0;                                                                                  \
    }
#define CONV_TO(A, DD, DT)                                                                         \
    case DD: {                                                                                     \
        DT *d = dst;                                                                               \
        switch (st) {                                                                              \
            INT_SRC(CONV_FROM, DT)                                                                 \
        default:                                                                                   \
            return -1;                                                                             \
        }                                                                                          \
    }

/* Typed loops, because routes of tens of MiB are converted on every widened turn. Values were
 * checked to fit by the caller. */
static int convert_int(void *dst, sr_dtype dt, const void *src, sr_dtype st, size_t n)
{
    switch (dt) {
        INT_DST(CONV_TO, 0)
    default:
        return -1;
    }
}

/* IEEE half to single precision, exact for every half value including subnormals. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0 && man == 0) {
        bits = sign;
    } else if (exp == 0) {
        exp = 127 - 15 + 1;
        while (!(man & 0x400u)) {
            man <<= 1;
            exp--;
        }
        bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static int convert_float(void *dst, sr_dtype dt, const void *src, sr_dtype st, size_t n)
{
    if (st == SR_DTYPE_FLOAT16 && dt == SR_DTYPE_FLOAT32) {
        const uint16_t *s = src;
        float *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = half_to_float(s[i]);
    } else if (st == SR_DTYPE_FLOAT16 && dt == SR_DTYPE_FLOAT64) {
        const uint16_t *s = src;
        double *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = half_to_float(s[i]);
    } else if (st == SR_DTYPE_FLOAT32 && dt == SR_DTYPE_FLOAT64) {
        const float *s = src;
        double *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        return -1;
    }
    return 0;
}

/* Converts n elements; identical dtypes are a plain copy. */
static int convert(void *dst, sr_dtype dt, const void *src, sr_dtype st, size_t n, sr_err *err)
{
    int bad;
    if (n == 0)
        return 0;
    if (dt == st) {
        memcpy(dst, src, n * sr_dtype_size(dt));
        return 0;
    }
    if (sr_dtype_is_integer(dt) && sr_dtype_is_integer(st))
        bad = convert_int(dst, dt, src, st, n);
    else
        bad = convert_float(dst, dt, src, st, n);
    if (bad)
        return sr_err_set(err, SR_E_INTERNAL, "no conversion from %s to %s", sr_dtype_name(st),
                          sr_dtype_name(dt));
    return 0;
}

int sr_trace_widen_dtype(sr_dtype *out, sr_dtype have, sr_dtype incoming, sr_err *err)
{
    size_t zh = sr_dtype_size(have), zi = sr_dtype_size(incoming);
    if (have == incoming && zh) {
        *out = have;
        return 0;
    }
    if (sr_dtype_is_integer(have) && sr_dtype_is_integer(incoming)) {
        int sh = sr_dtype_is_signed(have), si = sr_dtype_is_signed(incoming);
        if (sh == si) {
            *out = zi > zh ? incoming : have;
            return 0;
        }
        /* Mixed signedness: NumPy promotes to the signed type only if it is strictly wider;
         * otherwise the result is a third, wider type, which is not a lossless widening of the
         * trace as the reference defines it. */
        sr_dtype s = sh ? have : incoming, u = sh ? incoming : have;
        if (sr_dtype_size(s) > sr_dtype_size(u)) {
            *out = s;
            return 0;
        }
    } else if (sr_dtype_is_float(have) && sr_dtype_is_float(incoming)) {
        *out = zi > zh ? incoming : have;
        return 0;
    }
    return sr_err_set(err, SR_E_TRACE_SCHEMA, "token metadata dtype changed from %s to %s",
                      sr_dtype_name(have), sr_dtype_name(incoming));
}

/* ---- token-metadata trace ---- */

void sr_trace_meta_init(sr_meta_trace *t, const sr_trace_opts *opts)
{
    memset(t, 0, sizeof(*t));
    t->dtype = SR_DTYPE_INVALID;
    t->max_rows = opts && opts->max_rows > 0 ? opts->max_rows : SR_TRACE_DEFAULT_MAX_ROWS;
    t->max_bytes = opts && opts->max_bytes ? opts->max_bytes : SR_TRACE_DEFAULT_MAX_BYTES;
    t->lock_first_dtype = opts ? opts->lock_first_dtype : 0;
    t->reserve_rows = opts && opts->reserve_rows > 0 ? opts->reserve_rows : 0;
    if (t->reserve_rows > t->max_rows)
        t->reserve_rows = t->max_rows;
}

void sr_trace_meta_reset(sr_meta_trace *t, const sr_trace_opts *opts)
{
    unsigned char *data = t->data;
    size_t cap = t->cap;
    sr_trace_meta_init(t, opts);
    t->data = data;
    t->cap = cap;
}

int sr_meta_trace_new(sr_meta_trace **out, const sr_trace_opts *opts, sr_err *err)
{
    sr_meta_trace *t = malloc(sizeof(*t));
    *out = NULL;
    if (!t)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a token metadata trace");
    sr_trace_meta_init(t, opts);
    *out = t;
    return 0;
}

void sr_meta_trace_free(sr_meta_trace *t)
{
    if (!t)
        return;
    free(t->data);
    free(t);
}

int64_t sr_meta_trace_rows(const sr_meta_trace *t)
{
    return t->rows;
}

sr_dtype sr_meta_trace_dtype(const sr_meta_trace *t)
{
    return t->dtype;
}

/* Checks that a descriptor describes the bytes it points to, before anything reads them. */
int sr_trace_check_descriptor(const sr_ndarray *a, const char *what, sr_err *err)
{
    if (!a)
        return sr_err_set(err, SR_E_INVAL, "%s must be an array, got NULL", what);
    size_t item = sr_dtype_size(a->dtype);
    size_t nbytes;
    if (!item || a->ndim < 0 || a->ndim > SR_NDIM_MAX)
        return sr_err_set(err, SR_E_INVAL, "%s has an invalid dtype or rank", what);
    if (sr_shape_bytes(&nbytes, NULL, a->shape, a->ndim, item, NULL) || nbytes != a->nbytes ||
        (nbytes && !a->data) || ((uintptr_t)a->data % item) != 0)
        return sr_err_set(err, SR_E_INVAL,
                          "%s descriptor is inconsistent (byte count, data or alignment)", what);
    return 0;
}

/* Bytes of `rows` rows of the schema in `dtype`, or SR_E_LIMIT past the trace's maxima. */
int sr_trace_meta_bytes_for(size_t *bytes, const sr_meta_trace *t, int64_t rows, sr_dtype dtype,
                            sr_err *err)
{
    if (rows > t->max_rows)
        return sr_err_set(err, SR_E_LIMIT, "trace would hold %lld rows, more than the maximum %lld",
                          (long long)rows, (long long)t->max_rows);
    size_t item = sr_dtype_size(dtype);
    size_t row_bytes = t->row_elems * item;
    if ((t->row_elems && row_bytes / t->row_elems != item) ||
        (row_bytes && (uint64_t)rows > SIZE_MAX / row_bytes) ||
        (size_t)rows * row_bytes > t->max_bytes)
        return sr_err_set(
            err, SR_E_LIMIT,
            "trace would hold %lld rows of %zu bytes, more than the maximum %zu bytes",
            (long long)rows, row_bytes, t->max_bytes);
    *bytes = (size_t)rows * row_bytes;
    return 0;
}

/*
 * Makes room for `bytes` bytes of rows stored as `dtype`, converting the rows already held when
 * the dtype widens. The caller has checked the size with sr_trace_meta_bytes_for. On failure
 * nothing changes.
 */
int sr_trace_meta_reserve(sr_meta_trace *t, sr_dtype dtype, size_t bytes, sr_err *err)
{
    if (dtype == t->dtype && bytes <= t->cap)
        return 0;
    size_t want = bytes;
    if (dtype == t->dtype && t->cap && t->cap <= SIZE_MAX / 2 && want < t->cap * 2)
        want = t->cap * 2 < t->max_bytes ? t->cap * 2 : t->max_bytes;
    if (want < 64)
        want = 64;
    if (dtype == t->dtype) {
        unsigned char *p = realloc(t->data, want);
        if (!p)
            return sr_err_set(err, SR_E_NOMEM, "cannot grow a trace to %zu bytes", want);
        t->data = p;
        t->cap = want;
        return 0;
    }
    unsigned char *p = malloc(want);
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "cannot widen a trace to %zu bytes", want);
    int rc = convert(p, dtype, t->data, t->dtype, (size_t)t->rows * t->row_elems, err);
    if (rc) {
        free(p);
        return rc;
    }
    free(t->data);
    t->data = p;
    t->cap = want;
    t->dtype = dtype;
    return 0;
}

int sr_trace_meta_same_row_shape(const sr_meta_trace *t, const sr_ndarray *rows)
{
    if (rows->ndim - 1 != t->row_ndim)
        return 0;
    for (int i = 0; i < t->row_ndim; i++) {
        if (rows->shape[i + 1] != t->row_shape[i])
            return 0;
    }
    return 1;
}

/* The schema error, naming both schemas as "dtype[row shape]". */
int sr_trace_meta_schema_error(const sr_meta_trace *t, const sr_ndarray *rows, sr_dtype incoming,
                               sr_err *err)
{
    char old_desc[160], new_desc[160];
    sr_ndarray_desc(t->dtype, t->row_ndim, t->row_shape, old_desc, sizeof(old_desc));
    sr_ndarray_desc(incoming, rows->ndim - 1, rows->shape + 1, new_desc, sizeof(new_desc));
    return sr_err_set(err, SR_E_TRACE_SCHEMA, "token metadata schema changed from %s to %s",
                      old_desc, new_desc);
}

/* 1 if the rows' bytes lie in the trace's own storage (the room of sr_route_trace_room). */
static int in_storage(const sr_meta_trace *t, const sr_ndarray *rows)
{
    uintptr_t a = (uintptr_t)rows->data, lo = (uintptr_t)t->data;
    return t->data && rows->nbytes && a >= lo && a - lo < t->cap;
}

/*
 * The append of §5.2. `declared` is the dtype the chunk counts as for the schema; the routed
 * trace passes the canonical route dtype while the bytes are still in rows->dtype.
 */
/* The checks of an append and the trace it would make (its schema set on a first append, the
 * dtype widened): *probe and *dtype receive them; t is not changed. */
static int append_plan(sr_meta_trace *probe, sr_dtype *dtype_out, const sr_meta_trace *t,
                       const sr_ndarray *rows, sr_dtype declared, int64_t expected_rows,
                       sr_err *err)
{
    if (t->finalized)
        return sr_err_set(err, SR_E_TRACE_FINALIZED, "token metadata trace is already finalized");
    if (expected_rows < 0)
        return sr_err_set(err, SR_E_TRACE_EXPECTED_ROWS,
                          "expected_rows must be a non-negative integer, got %lld",
                          (long long)expected_rows);
    int rc = sr_trace_check_descriptor(rows, "token metadata rows", err);
    if (rc)
        return rc;
    if (rows->ndim < 1)
        return sr_err_set(err, SR_E_TRACE_NO_TOKEN_DIM,
                          "token metadata must have a token-row dimension");
    if (rows->shape[0] != expected_rows)
        return sr_err_set(err, SR_E_TRACE_ROW_COUNT, "token metadata has %lld rows, expected %lld",
                          (long long)rows->shape[0], (long long)expected_rows);
    sr_dtype dtype = declared;
    if (t->has_schema) {
        if (!sr_trace_meta_same_row_shape(t, rows) || (t->lock_first_dtype && declared != t->dtype))
            return sr_trace_meta_schema_error(t, rows, declared, err);
        rc = sr_trace_widen_dtype(&dtype, t->dtype, declared, err);
        if (rc)
            return rc;
    }
    *probe = *t;
    if (!t->has_schema) {
        probe->row_ndim = rows->ndim - 1;
        memcpy(probe->row_shape, rows->shape + 1, sizeof(int64_t) * (size_t)probe->row_ndim);
        uint64_t elems;
        rc = sr_shape_bytes(NULL, &elems, probe->row_shape, probe->row_ndim, 1, err);
        if (rc)
            return rc;
        probe->row_elems = (size_t)elems;
        probe->dtype = dtype;
    }
    if (expected_rows > t->max_rows - t->rows)
        return sr_err_set(err, SR_E_LIMIT, "trace would hold more than the maximum %lld rows",
                          (long long)t->max_rows);
    *dtype_out = dtype;
    return 0;
}

int sr_trace_meta_append_as(sr_meta_trace *t, const sr_ndarray *rows, sr_dtype declared,
                            int64_t expected_rows, sr_err *err)
{
    sr_meta_trace probe;
    sr_dtype dtype = declared;
    int rc = append_plan(&probe, &dtype, t, rows, declared, expected_rows, err);
    if (rc)
        return rc;
    size_t bytes;
    int64_t total = t->rows + expected_rows;
    rc = sr_trace_meta_bytes_for(&bytes, &probe, total, dtype, err);
    /* The first append allocates the hinted capacity at once (one allocation instead of a
     * realloc per turn; none when storage kept by a reset holds it); a hint past the bounds is
     * not used. */
    size_t hint;
    if (!rc && t->rows == 0 && t->reserve_rows > total &&
        sr_trace_meta_bytes_for(&hint, &probe, t->reserve_rows, dtype, NULL) == 0 && hint > bytes)
        bytes = hint;
    size_t at = (size_t)t->rows * probe.row_elems * sr_dtype_size(dtype);
    const void *src = rows->data;
    void *tmp = NULL;
    if (!rc && in_storage(t, rows)) {
        /* The rows were written into this trace's room (sr_route_trace_room): taken where they
         * are when they sit at the append position in the kept dtype and nothing moves; else
         * copied out first, as the reserve may move or free the storage under them. */
        if (dtype == rows->dtype && dtype == probe.dtype && bytes <= probe.cap &&
            (const unsigned char *)src == probe.data + at)
            src = NULL;
        else if ((tmp = malloc(rows->nbytes ? rows->nbytes : 1)) != NULL)
            src = memcpy(tmp, src, rows->nbytes);
        else
            rc = sr_err_set(err, SR_E_NOMEM, "cannot copy %zu bytes of rows", rows->nbytes);
    }
    if (!rc)
        rc = sr_trace_meta_reserve(&probe, dtype, bytes, err);
    if (rc) {
        free(tmp);
        return rc;
    }
    rc = src ? convert(probe.data + at, dtype, src, rows->dtype,
                       (size_t)expected_rows * probe.row_elems, err)
             : 0;
    free(tmp);
    if (rc) {
        /* The storage (possibly widened) is kept; the chunk is not counted. */
        t->data = probe.data;
        t->cap = probe.cap;
        if (t->has_schema)
            t->dtype = probe.dtype;
        return rc;
    }
    probe.has_schema = 1;
    probe.rows = total;
    *t = probe;
    return 0;
}

int sr_meta_trace_append(sr_meta_trace *t, const sr_ndarray *rows, int64_t expected_rows,
                         sr_err *err)
{
    return sr_trace_meta_append_as(t, rows, rows ? rows->dtype : SR_DTYPE_INVALID, expected_rows,
                                   err);
}

int sr_meta_trace_finalize(sr_ndarray *out, sr_meta_trace *t, int64_t expected_rows, sr_err *err)
{
    sr_ndarray init = SR_NDARRAY_INIT;
    *out = init;
    if (t->finalized)
        return sr_err_set(err, SR_E_TRACE_FINALIZED, "token metadata trace is already finalized");
    if (t->rows != expected_rows)
        return sr_err_set(err, SR_E_TRACE_ROW_COUNT,
                          "token metadata trace has %lld rows, expected %lld", (long long)t->rows,
                          (long long)expected_rows);
    if (!t->has_schema)
        return sr_err_set(err, SR_E_TRACE_NO_CHUNKS, "token metadata trace has no chunks");
    t->finalized = 1;
    out->dtype = t->dtype;
    out->ndim = 1 + t->row_ndim;
    out->shape[0] = t->rows;
    memcpy(out->shape + 1, t->row_shape, sizeof(int64_t) * (size_t)t->row_ndim);
    out->nbytes = (size_t)t->rows * t->row_elems * sr_dtype_size(t->dtype);
    /* Storage reserved for more rows than came (reserve_rows, or doubling) is given back: the
     * array may live as long as its run. A failed shrink keeps the larger block. */
    t->handed_cap = t->cap;
    if (t->cap > 2 * out->nbytes + 4096) {
        unsigned char *p = realloc(t->data, out->nbytes ? out->nbytes : 1);
        if (p) {
            t->data = p;
            t->handed_cap = out->nbytes ? out->nbytes : 1;
        }
    }
    out->data = t->data;
    out->owned = 1;
    t->data = NULL;
    t->cap = 0;
    return 0;
}
