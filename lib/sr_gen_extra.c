/* Seeded arrays for packed fields given by definition (sr_gen_extra.h). */
#include "sr_gen_extra.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sr_stats.h"

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t tokens_hash(uint64_t h, const int32_t *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = mix(h ^ (uint32_t)t[i]);
    return mix(h ^ n);
}

/* The values dtype t can take for d, [*lo, *hi] (integers; canonical: where t is the smallest
 * route dtype), intersected with d's declared range; 0 when empty. */
static int int_span(const sr_field_def *d, sr_dtype t, int64_t *lo, int64_t *hi)
{
    unsigned bits = (unsigned)sr_dtype_size(t) * 8u;
    if (t == SR_DTYPE_BOOL) {
        *lo = 0;
        *hi = 1;
    } else if (d->canonical) {
        *lo = t == SR_DTYPE_UINT8 ? 0 : t == SR_DTYPE_INT16 ? 256 : 32768;
        *hi = t == SR_DTYPE_UINT8 ? 255 : t == SR_DTYPE_INT16 ? 32767 : 2147483647;
    } else if (sr_dtype_is_signed(t)) {
        *lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        *hi = (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
    } else {
        *lo = 0;
        *hi = bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << bits) - 1);
    }
    if (d->has_range) {
        *lo = d->range_min > *lo ? d->range_min : *lo;
        *hi = d->range_max < *hi ? d->range_max : *hi;
    }
    return *lo <= *hi;
}

/* The largest finite value of float dtype t. */
static double float_max(sr_dtype t)
{
    return t == SR_DTYPE_FLOAT16 ? 65504.0 : t == SR_DTYPE_FLOAT32 ? (double)FLT_MAX : DBL_MAX;
}

/* The interval the engine draws floats of dtype t from: [-8, 8) without a declared range, else
 * the range within t's finite values; 0 when empty. */
static int float_span(const sr_field_def *d, sr_dtype t, double *lo, double *hi)
{
    *lo = d->has_range ? fmax(d->range_lo, -float_max(t)) : -8.0;
    *hi = d->has_range ? fmin(d->range_hi, float_max(t)) : 8.0;
    return *lo <= *hi;
}

sr_dtype_set sr_gen_extra_dtypes(const sr_field_def *d)
{
    sr_dtype_set can = d->canonical ? d->dtypes & SR_ROUTE_DTYPES : d->dtypes;
    for (int t = 1; d->has_range && t < SR_DTYPE_COUNT; t++) {
        int64_t a, b;
        double x, y;
        if ((can >> t & 1) && !(sr_dtype_is_float((sr_dtype)t) ? float_span(d, (sr_dtype)t, &x, &y)
                                                               : int_span(d, (sr_dtype)t, &a, &b)))
            can &= ~SR_DTYPE_BIT(t);
    }
    return can;
}

/* The i-th dtype (in enum order) of a non-empty set. */
static sr_dtype nth_dtype(sr_dtype_set set, uint64_t pick)
{
    int n = 0;
    for (int t = 1; t < SR_DTYPE_COUNT; t++)
        n += (set >> t) & 1;
    int want = (int)(pick % (uint64_t)n);
    for (int t = 1; t < SR_DTYPE_COUNT; t++)
        if (((set >> t) & 1) && want-- == 0)
            return (sr_dtype)t;
    return SR_DTYPE_INVALID;
}

/* An IEEE half with the value of a float in [-8, 8) (rounded toward zero; no subnormals). */
static uint16_t to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xFF) - 127 + 15;
    if (exp <= 0)
        return (uint16_t)sign;
    return (uint16_t)(sign | ((uint32_t)exp << 10) | ((x >> 13) & 0x3FFu));
}

/* A float16 of x within [lo, hi]: to_half rounds toward zero, which may leave the interval by
 * one step; one step back in, or 0 when the interval holds no float16 (then x's own is kept). */
static uint16_t half_within(double x, double lo, double hi)
{
    uint16_t h = to_half((float)x);
    double v = sr_half_to_double(h);
    unsigned u = h;
    if (v < lo) /* toward +inf: a step up in magnitude for positives, down for negatives */
        u = u & 0x8000u ? (u & 0x7FFFu ? u - 1u : 0u) : u + 1u;
    else if (v > hi)
        u = u & 0x8000u ? u + 1u : (u ? u - 1u : 0x8001u);
    return (uint16_t)u;
}

/* A float of x within [lo, hi] (the cast to float may round out of it by one step). */
static float float_within(double x, double lo, double hi)
{
    float f = (float)x;
    if ((double)f < lo)
        f = nextafterf(f, INFINITY);
    else if ((double)f > hi)
        f = nextafterf(f, -INFINITY);
    return f;
}

/* One element of dtype dt from the 64-bit draw `r`: an integer in [ilo, ihi] (or the draw's own
 * bytes when `raw`), a float in [flo, fhi). */
static void put(unsigned char *p, sr_dtype dt, int raw, int64_t ilo, int64_t ihi, double flo,
                double fhi, uint64_t r)
{
    uint64_t span = (uint64_t)ihi - (uint64_t)ilo + 1; /* 0: all 2^64 values */
    uint64_t u = raw ? r : (uint64_t)ilo + (span ? r % span : r);
    double g = flo + (double)(r >> 11) * 0x1.0p-53 * (fhi - flo);
    uint16_t h;
    float f;
    switch (dt) {
    case SR_DTYPE_FLOAT16:
        h = half_within(g, flo, fhi);
        memcpy(p, &h, 2);
        break;
    case SR_DTYPE_FLOAT32:
        f = float_within(g, flo, fhi);
        memcpy(p, &f, 4);
        break;
    case SR_DTYPE_FLOAT64:
        memcpy(p, &g, 8);
        break;
    default:
        /* bool (0 or 1 from its span), and little-endian integers: the low bytes. */
        for (size_t b = 0; b < sr_dtype_size(dt); b++)
            p[b] = (unsigned char)(u >> (8 * b));
    }
}

/* The length of axis a: the declared one, or as the header says without a declaration. */
static int64_t axis_len(const sr_field_def *d, int a, size_t G, uint64_t s, uint64_t name_h)
{
    int64_t fixed = d->has_shape              ? d->dims[a]
                    : a == 0 && d->token_rows ? SR_FIELD_DIM_T
                                              : SR_FIELD_DIM_ANY;
    if (fixed == SR_FIELD_DIM_T)
        return (int64_t)G;
    if (fixed != SR_FIELD_DIM_ANY)
        return fixed;
    return a == 0 ? (int64_t)(1 + mix(s ^ 0x61786973) % 4)
                  : (int64_t)(1 + mix(name_h + (uint64_t)a) % 4);
}

int sr_gen_extra_make(sr_gen_extra *out, const sr_field_def *d, uint64_t seed,
                      const int32_t *prompt, size_t P, const int32_t *gen, size_t G,
                      size_t max_bytes, sr_err *err)
{
    memset(out, 0, sizeof(*out));
    sr_dtype_set can = sr_gen_extra_dtypes(d);
    if (d->kind != SR_FIELD_PACKED || !can || d->ndim < 1 || d->ndim > SR_NDIM_MAX)
        return sr_err_set(err, SR_E_ENGINE_CONFIG,
                          "the engine cannot emit %s: it needs a packed field with a dtype it can "
                          "emit (canonical fields: uint8, int16 or int32)",
                          d->name);
    uint64_t name_h = fnv(d->name, d->name_len);
    uint64_t s = tokens_hash(tokens_hash(mix(seed ^ name_h), prompt, P), gen, G);
    out->ndim = d->ndim;
    for (int a = 0; a < d->ndim; a++)
        out->shape[a] = axis_len(d, a, G, s, name_h);
    out->dtype = nth_dtype(can, mix(s ^ 0x6474797065));
    /* An empty array under canonical is uint8 when allowed (as the reference's max of nothing). */
    size_t nbytes;
    uint64_t n;
    int rc = sr_shape_bytes(&nbytes, &n, out->shape, out->ndim, 1, err);
    if (!rc && n == 0 && d->canonical && (can & SR_DTYPE_BIT(SR_DTYPE_UINT8)))
        out->dtype = SR_DTYPE_UINT8;
    size_t isz = sr_dtype_size(out->dtype);
    if (!rc)
        rc = sr_shape_bytes(&nbytes, &n, out->shape, out->ndim, isz, err);
    if (rc)
        return rc;
    if (max_bytes && nbytes > max_bytes)
        return sr_err_set(err, SR_E_LIMIT, "%s: %llu elements exceed max_bytes %zu", d->name,
                          (unsigned long long)n, max_bytes);
    out->nbytes = nbytes;
    out->bytes = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->bytes)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes for %s", out->nbytes,
                          d->name);
    int64_t ilo = 0, ihi = 0;
    double flo = 0, fhi = 0;
    int raw = !sr_dtype_is_float(out->dtype) && !int_span(d, out->dtype, &ilo, &ihi);
    if (sr_dtype_is_float(out->dtype))
        float_span(d, out->dtype, &flo, &fhi);
    /* Without a range or canonical, integers take any value of their bytes, as before. */
    raw = raw || (!d->has_range && !d->canonical && out->dtype != SR_DTYPE_BOOL);
    for (uint64_t i = 0; i < n; i++)
        put(out->bytes + i * isz, out->dtype, raw, ilo, ihi, flo, fhi,
            mix(s + 0x9E3779B97F4A7C15ULL * i));
    return 0;
}

void sr_gen_extra_release(sr_gen_extra *x)
{
    free(x->bytes);
    memset(x, 0, sizeof(*x));
}
