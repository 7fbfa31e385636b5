/* Seeded arrays for packed fields given by definition (sr_gen_extra.h). */
#include "sr_gen_extra.h"

#include <stdlib.h>
#include <string.h>

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

sr_dtype_set sr_gen_extra_dtypes(const sr_field_def *d)
{
    return d->canonical ? d->dtypes & SR_ROUTE_DTYPES : d->dtypes;
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

/* Element i: `r` is a 64-bit draw. */
static void put(unsigned char *p, sr_dtype dt, int canonical, uint64_t r)
{
    int64_t lo = 0, span = 0; /* canonical integer range [lo, lo + span) */
    if (canonical) {
        lo = dt == SR_DTYPE_UINT8 ? 0 : dt == SR_DTYPE_INT16 ? 256 : 32768;
        span = dt == SR_DTYPE_UINT8 ? 256 : dt == SR_DTYPE_INT16 ? 32768 - 256 : 2147483648LL - lo;
    }
    int64_t v = canonical ? lo + (int64_t)(r % (uint64_t)span) : 0;
    float f = (float)((double)(r >> 11) * 0x1.0p-53 * 16.0 - 8.0);
    double g = (double)(r >> 11) * 0x1.0p-53 * 16.0 - 8.0;
    uint16_t h;
    switch (dt) {
    case SR_DTYPE_BOOL:
        p[0] = (unsigned char)(r & 1);
        break;
    case SR_DTYPE_INT8:
    case SR_DTYPE_UINT8:
        p[0] = (unsigned char)(canonical ? (uint64_t)v : r);
        break;
    case SR_DTYPE_FLOAT16:
        h = to_half(f);
        memcpy(p, &h, 2);
        break;
    case SR_DTYPE_FLOAT32:
        memcpy(p, &f, 4);
        break;
    case SR_DTYPE_FLOAT64:
        memcpy(p, &g, 8);
        break;
    default: {
        /* Little-endian integers of 2, 4 or 8 bytes: the low bytes of the draw. */
        uint64_t u = canonical ? (uint64_t)v : r;
        for (size_t b = 0; b < sr_dtype_size(dt); b++)
            p[b] = (unsigned char)(u >> (8 * b));
    }
    }
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
    out->shape[0] = d->token_rows ? (int64_t)G : (int64_t)(1 + mix(s ^ 0x61786973) % 4);
    for (int a = 1; a < d->ndim; a++)
        out->shape[a] = (int64_t)(1 + mix(name_h + (uint64_t)a) % 4);
    uint64_t n = 1;
    for (int a = 0; a < d->ndim; a++)
        n *= (uint64_t)out->shape[a];
    out->dtype = nth_dtype(can, mix(s ^ 0x6474797065));
    if (n == 0 && d->canonical && (can & SR_DTYPE_BIT(SR_DTYPE_UINT8)))
        out->dtype = SR_DTYPE_UINT8;
    size_t isz = sr_dtype_size(out->dtype);
    if (max_bytes && n * isz > max_bytes)
        return sr_err_set(err, SR_E_LIMIT, "%s: %llu elements exceed max_bytes %zu", d->name,
                          (unsigned long long)n, max_bytes);
    out->nbytes = (size_t)n * isz;
    out->bytes = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->bytes)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes for %s", out->nbytes,
                          d->name);
    for (uint64_t i = 0; i < n; i++)
        put(out->bytes + i * isz, out->dtype, d->canonical, mix(s + 0x9E3779B97F4A7C15ULL * i));
    return 0;
}

void sr_gen_extra_release(sr_gen_extra *x)
{
    free(x->bytes);
    memset(x, 0, sizeof(*x));
}
