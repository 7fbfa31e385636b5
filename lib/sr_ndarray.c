#include "sr_ndarray.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sr_base64.h" /* sr_base64_cpu_has_avx2: the library's one AVX2 check */
#include "sr_ndarray_priv.h"

int sr_shape_bytes(size_t *nbytes, uint64_t *numel, const int64_t *shape, int ndim, size_t itemsize,
                   sr_err *err)
{
    /* numpy's rule (PyArray_NewFromDescr): itemsize times the product of the non-zero dims must
     * fit in a signed 64-bit size, even when a zero dim makes the array empty. */
    const uint64_t lim =
        (uint64_t)INT64_MAX < (uint64_t)SIZE_MAX ? (uint64_t)INT64_MAX : (uint64_t)SIZE_MAX;
    uint64_t n = 1, nz = itemsize ? (uint64_t)itemsize : 1;
    int empty = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return sr_err_set(err, SR_E_ENV_SHAPE, "dimension %d is negative (%lld)", i,
                              (long long)shape[i]);
        uint64_t d = (uint64_t)shape[i];
        if (d == 0) {
            empty = 1;
            continue;
        }
        if (nz > lim / d)
            return sr_err_set(err, SR_E_ENV_OVERFLOW,
                              "array is too big: %zu-byte items times the non-zero dimensions "
                              "up to dimension %d overflow a signed 64-bit size%s",
                              itemsize, i, empty ? " (numpy refuses it although it is empty)" : "");
        nz *= d;
        n *= d;
    }
    if (empty)
        n = 0;
    if (nbytes)
        *nbytes = (size_t)(n * itemsize);
    if (numel)
        *numel = n;
    return 0;
}

uint64_t sr_ndarray_numel(const sr_ndarray *a)
{
    uint64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= (uint64_t)a->shape[i];
    return n;
}

int sr_ndarray_alloc(sr_ndarray *a, sr_dtype dtype, int ndim, const int64_t *shape, sr_err *err)
{
    sr_ndarray init = SR_NDARRAY_INIT;
    *a = init;
    size_t item = sr_dtype_size(dtype);
    if (!item || ndim < 0 || ndim > SR_NDIM_MAX)
        return sr_err_set(err, SR_E_INVAL, "cannot allocate a %s array of %d dimensions",
                          sr_dtype_name(dtype), ndim);
    size_t nbytes;
    int rc = sr_shape_bytes(&nbytes, NULL, shape, ndim, item, err);
    if (rc)
        return rc;
    size_t rounded = (nbytes + 63) & ~(size_t)63;
    if (rounded < nbytes)
        return sr_err_set(err, SR_E_ENV_OVERFLOW, "array of %zu bytes is too large", nbytes);
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate an array of %zu bytes", nbytes);
    memset(p, 0, rounded ? rounded : 64);
    a->dtype = dtype;
    a->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        a->shape[i] = shape[i];
    a->data = p;
    a->nbytes = nbytes;
    a->owned = 1;
    return 0;
}

void sr_ndarray_release(sr_ndarray *a)
{
    if (a->owned)
        free(a->data);
    sr_ndarray init = SR_NDARRAY_INIT;
    *a = init;
}

int64_t sr_ndarray_get_i64(const sr_ndarray *a, uint64_t i)
{
    const unsigned char *p = a->data;
    switch (a->dtype) {
    case SR_DTYPE_BOOL:
    case SR_DTYPE_UINT8:
        return p[i];
    case SR_DTYPE_INT8:
        return ((const int8_t *)p)[i];
    case SR_DTYPE_INT16: {
        int16_t v;
        memcpy(&v, p + i * 2, 2);
        return v;
    }
    case SR_DTYPE_UINT16: {
        uint16_t v;
        memcpy(&v, p + i * 2, 2);
        return v;
    }
    case SR_DTYPE_INT32: {
        int32_t v;
        memcpy(&v, p + i * 4, 4);
        return v;
    }
    case SR_DTYPE_UINT32: {
        uint32_t v;
        memcpy(&v, p + i * 4, 4);
        return v;
    }
    case SR_DTYPE_INT64: {
        int64_t v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    case SR_DTYPE_UINT64: {
        uint64_t v;
        memcpy(&v, p + i * 8, 8);
        return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    default:
        return 0;
    }
}

size_t sr_i32_first_negative(const int32_t *v, size_t n)
{
    size_t i = 0;
    /* A block of eight holds a negative value exactly when the OR of its words has a sign bit
     * set; the first such block is then searched value by value. */
    for (; i + 8 <= n; i += 8) {
        uint64_t w[4];
        memcpy(w, v + i, sizeof w);
        if ((w[0] | w[1] | w[2] | w[3]) & 0x8000000080000000ull)
            break;
    }
    for (; i < n; i++)
        if (v[i] < 0)
            return i;
    return n;
}

void sr_ndarray_set_i64(sr_ndarray *a, uint64_t i, int64_t v)
{
    unsigned char *p = a->data;
    size_t item = sr_dtype_size(a->dtype);
    switch (item) {
    case 1: {
        uint8_t x = (uint8_t)v;
        p[i] = x;
        break;
    }
    case 2: {
        uint16_t x = (uint16_t)v;
        memcpy(p + i * 2, &x, 2);
        break;
    }
    case 4: {
        uint32_t x = (uint32_t)v;
        memcpy(p + i * 4, &x, 4);
        break;
    }
    case 8: {
        uint64_t x = (uint64_t)v;
        memcpy(p + i * 8, &x, 8);
        break;
    }
    default:
        break;
    }
}

/*
 * Type-specialised loops keep the common route dtypes at memory speed. The inner loop runs a
 * fixed MINMAX_BLOCK elements because gcc's -O2 cost model vectorizes only fixed-count loops: the
 * plain loop stayed scalar and was the top of the client's per-request profile (a 2-cmov
 * dependency chain per element; bench/README.md).
 */
#define MINMAX_BLOCK 64
#define MINMAX_LOOP(T)                                                                             \
    do {                                                                                           \
        const T *q = (const T *)a->data;                                                           \
        T lo = q[0], hi = q[0];                                                                    \
        uint64_t i = 0;                                                                            \
        for (; n - i >= MINMAX_BLOCK; i += MINMAX_BLOCK) {                                         \
            T blo = q[i], bhi = q[i];                                                              \
            for (int j = 0; j < MINMAX_BLOCK; j++) {                                               \
                T v = q[i + (uint64_t)j];                                                          \
                blo = v < blo ? v : blo;                                                           \
                bhi = v > bhi ? v : bhi;                                                           \
            }                                                                                      \
            lo = blo < lo ? blo : lo;                                                              \
            hi = bhi > hi ? bhi : hi;                                                              \
        }                                                                                          \
        for (; i < n; i++) {                                                                       \
            T v = q[i];                                                                            \
            lo = v < lo ? v : lo;                                                                  \
            hi = v > hi ? v : hi;                                                                  \
        }                                                                                          \
        *min = (int64_t)lo;                                                                        \
        *max = (int64_t)hi;                                                                        \
    } while (0)

#if defined(__SSE2__)
/*
 * The two route dtypes of real models (uint8 up to 256 experts, int16 up to 32768) with SSE2's
 * packed min/max, 64 bytes a step: gcc 12's -O2 left even the blocked loop above scalar (issue
 * 36's profile: 28k instructions per 20k-element turn, a third of the trace record).
 */
#define MINMAX_SSE2(T, MIN, MAX, SET1)                                                             \
    do {                                                                                           \
        const T *q = (const T *)a->data;                                                           \
        const uint64_t step = 64 / sizeof(T);                                                      \
        __m128i vlo = SET1(q[0]), vhi = vlo;                                                       \
        uint64_t i = 0;                                                                            \
        for (; n - i >= step; i += step) {                                                         \
            const __m128i *p = (const __m128i *)(q + i);                                           \
            __m128i x0 = _mm_loadu_si128(p), x1 = _mm_loadu_si128(p + 1);                          \
            __m128i x2 = _mm_loadu_si128(p + 2), x3 = _mm_loadu_si128(p + 3);                      \
            vlo = MIN(vlo, MIN(MIN(x0, x1), MIN(x2, x3)));                                         \
            vhi = MAX(vhi, MAX(MAX(x0, x1), MAX(x2, x3)));                                         \
        }                                                                                          \
        T l[16 / sizeof(T)], h[16 / sizeof(T)];                                                    \
        _mm_storeu_si128((__m128i *)l, vlo);                                                       \
        _mm_storeu_si128((__m128i *)h, vhi);                                                       \
        T lo = l[0], hi = h[0];                                                                    \
        for (size_t j = 1; j < 16 / sizeof(T); j++) {                                              \
            lo = l[j] < lo ? l[j] : lo;                                                            \
            hi = h[j] > hi ? h[j] : hi;                                                            \
        }                                                                                          \
        for (; i < n; i++) {                                                                       \
            lo = q[i] < lo ? q[i] : lo;                                                            \
            hi = q[i] > hi ? q[i] : hi;                                                            \
        }                                                                                          \
        *min = (int64_t)lo;                                                                        \
        *max = (int64_t)hi;                                                                        \
    } while (0)
#define SET1_U8(v)     _mm_set1_epi8((char)(v))
#define SET1_I16(v)    _mm_set1_epi16((short)(v))
#define MINMAX_UINT8() MINMAX_SSE2(uint8_t, _mm_min_epu8, _mm_max_epu8, SET1_U8)
#define MINMAX_INT16() MINMAX_SSE2(int16_t, _mm_min_epi16, _mm_max_epi16, SET1_I16)
#else
#define MINMAX_UINT8() MINMAX_LOOP(uint8_t)
#define MINMAX_INT16() MINMAX_LOOP(int16_t)
#endif

#if defined(__x86_64__) || defined(__i386__)
/*
 * uint8 and int16 on an AVX2 CPU: the kernel over whole 128-byte steps, the tail here. Returns
 * 0 when it did not apply (no AVX2, fewer than 128 bytes, another dtype).
 */
static int minmax_avx2(const sr_ndarray *a, uint64_t n, int64_t *min, int64_t *max)
{
    int u8 = a->dtype == SR_DTYPE_UINT8 || a->dtype == SR_DTYPE_BOOL;
    if ((!u8 && a->dtype != SR_DTYPE_INT16) || n * sr_dtype_size(a->dtype) < 128 ||
        !sr_base64_cpu_has_avx2())
        return 0;
    int64_t lo, hi;
    uint64_t i;
    if (u8) {
        const uint8_t *q = a->data;
        uint8_t l, h;
        sr_ndarray_i_minmax_u8_avx2(q, (size_t)n, &l, &h);
        lo = l, hi = h;
        for (i = n - n % 128; i < n; i++) {
            lo = q[i] < lo ? q[i] : lo;
            hi = q[i] > hi ? q[i] : hi;
        }
    } else {
        const int16_t *q = a->data;
        int16_t l, h;
        sr_ndarray_i_minmax_i16_avx2(q, (size_t)n, &l, &h);
        lo = l, hi = h;
        for (i = n - n % 64; i < n; i++) {
            lo = q[i] < lo ? q[i] : lo;
            hi = q[i] > hi ? q[i] : hi;
        }
    }
    *min = lo;
    *max = hi;
    return 1;
}
#endif

int sr_ndarray_minmax(const sr_ndarray *a, int64_t *min, int64_t *max, sr_err *err)
{
    if (!sr_dtype_is_integer(a->dtype) && a->dtype != SR_DTYPE_BOOL)
        return sr_err_set(err, SR_E_INVAL, "min/max of a %s array", sr_dtype_name(a->dtype));
    uint64_t n = sr_ndarray_numel(a);
    if (n == 0) {
        *min = 0;
        *max = 0;
        return 0;
    }
#if defined(__x86_64__) || defined(__i386__)
    if (minmax_avx2(a, n, min, max))
        return 0;
#endif
    switch (a->dtype) {
    case SR_DTYPE_BOOL:
    case SR_DTYPE_UINT8:
        MINMAX_UINT8();
        break;
    case SR_DTYPE_INT8:
        MINMAX_LOOP(int8_t);
        break;
    case SR_DTYPE_INT16:
        MINMAX_INT16();
        break;
    case SR_DTYPE_UINT16:
        MINMAX_LOOP(uint16_t);
        break;
    case SR_DTYPE_INT32:
        MINMAX_LOOP(int32_t);
        break;
    case SR_DTYPE_UINT32:
        MINMAX_LOOP(uint32_t);
        break;
    case SR_DTYPE_INT64:
        MINMAX_LOOP(int64_t);
        break;
    default: {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (uint64_t i = 0; i < n; i++) {
            int64_t v = sr_ndarray_get_i64(a, i);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        *min = lo;
        *max = hi;
        break;
    }
    }
    return 0;
}

int sr_ndarray_equal(const sr_ndarray *a, const sr_ndarray *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->nbytes != b->nbytes)
        return 0;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i])
            return 0;
    }
    return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

const char *sr_ndarray_desc(sr_dtype dtype, int ndim, const int64_t *shape, char *buf, size_t cap)
{
    if (cap == 0)
        return buf;
    size_t used = (size_t)snprintf(buf, cap, "%s[", sr_dtype_name(dtype));
    for (int i = 0; i < ndim && used < cap; i++)
        used +=
            (size_t)snprintf(buf + used, cap - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}

/* ---- arena ---- */

typedef struct chunk {
    struct chunk *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    unsigned char *mem; /* 64-byte aligned */
} chunk;

struct sr_arena {
    chunk *head; /* current chunk first */
    size_t max_bytes;
    size_t used_total; /* handed out since reset */
    size_t held;       /* sum of chunk sizes */
};

static chunk *chunk_new(size_t size)
{
    chunk *c = malloc(sizeof(*c));
    if (!c)
        return NULL;
    size = (size + 63) & ~(size_t)63;
    c->mem = aligned_alloc(64, size ? size : 64);
    if (!c->mem) {
        free(c);
        return NULL;
    }
    c->next = NULL;
    c->size = size;
    c->used = 0;
    return c;
}

static void chunks_free(chunk *c)
{
    while (c) {
        chunk *n = c->next;
        free(c->mem);
        free(c);
        c = n;
    }
}

int sr_arena_new(sr_arena **out, size_t max_bytes, sr_err *err)
{
    *out = NULL;
    sr_arena *ar = calloc(1, sizeof(*ar));
    if (!ar)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate an arena");
    ar->max_bytes = max_bytes ? max_bytes : SR_ARENA_DEFAULT_MAX;
    *out = ar;
    return 0;
}

void sr_arena_free(sr_arena *ar)
{
    if (!ar)
        return;
    chunks_free(ar->head);
    free(ar);
}

void *sr_arena_alloc(sr_arena *ar, size_t n, sr_err *err)
{
    size_t need = (n + 63) & ~(size_t)63;
    if (need < n || need > ar->max_bytes || ar->used_total > ar->max_bytes - need) {
        sr_err_set(err, SR_E_LIMIT, "arena maximum of %zu bytes exceeded by a request of %zu bytes",
                   ar->max_bytes, n);
        return NULL;
    }
    chunk *c = ar->head;
    if (!c || c->size - c->used < need) {
        size_t want = need > ((size_t)1 << 20) ? need : ((size_t)1 << 20);
        if (c && want < c->size * 2 && c->size * 2 <= ar->max_bytes)
            want = c->size * 2;
        chunk *nc = chunk_new(want);
        if (!nc) {
            sr_err_set(err, SR_E_NOMEM, "cannot allocate an arena chunk of %zu bytes", want);
            return NULL;
        }
        nc->next = c;
        ar->head = nc;
        ar->held += nc->size;
        c = nc;
    }
    void *p = c->mem + c->used;
    c->used += need;
    ar->used_total += need;
    return p;
}

void sr_arena_reset(sr_arena *ar)
{
    if (!ar->head)
        return;
    if (ar->head->next) {
        /* Merge: one chunk that fits the whole previous use, so the next round does not spill. */
        size_t want = ar->used_total > ar->head->size ? ar->used_total : ar->head->size;
        chunks_free(ar->head);
        ar->head = chunk_new(want);
        ar->held = ar->head ? ar->head->size : 0;
    }
    if (ar->head)
        ar->head->used = 0;
    ar->used_total = 0;
}

size_t sr_arena_used(const sr_arena *ar)
{
    return ar->used_total;
}

size_t sr_arena_capacity(const sr_arena *ar)
{
    return ar->held;
}
