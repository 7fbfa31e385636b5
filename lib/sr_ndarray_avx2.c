/* The AVX2 kernels of sr_ndarray_minmax (sr_ndarray_priv.h): 128 bytes a step, twice SSE2's. */
#include <immintrin.h>
#include <string.h>

#include "sr_ndarray_priv.h"

/* Four 32-byte loads folded into running min and max vectors, per 128 bytes. */
#define FOLD(MIN, MAX)                                                                             \
    do {                                                                                           \
        const __m256i *v = (const __m256i *)p;                                                     \
        __m256i x0 = _mm256_loadu_si256(v), x1 = _mm256_loadu_si256(v + 1);                        \
        __m256i x2 = _mm256_loadu_si256(v + 2), x3 = _mm256_loadu_si256(v + 3);                    \
        vlo = MIN(vlo, MIN(MIN(x0, x1), MIN(x2, x3)));                                             \
        vhi = MAX(vhi, MAX(MAX(x0, x1), MAX(x2, x3)));                                             \
    } while (0)

void sr_ndarray_i_minmax_u8_avx2(const uint8_t *q, size_t n, uint8_t *lo, uint8_t *hi)
{
    __m256i vlo = _mm256_set1_epi8((char)q[0]), vhi = vlo;
    for (const uint8_t *p = q, *end = q + (n - n % 128); p < end; p += 128)
        FOLD(_mm256_min_epu8, _mm256_max_epu8);
    uint8_t l[32], h[32];
    memcpy(l, &vlo, 32);
    memcpy(h, &vhi, 32);
    uint8_t a = l[0], b = h[0];
    for (int j = 1; j < 32; j++) {
        a = l[j] < a ? l[j] : a;
        b = h[j] > b ? h[j] : b;
    }
    *lo = a;
    *hi = b;
}

void sr_ndarray_i_minmax_i16_avx2(const int16_t *q, size_t n, int16_t *lo, int16_t *hi)
{
    __m256i vlo = _mm256_set1_epi16(q[0]), vhi = vlo;
    for (const int16_t *p = q, *end = q + (n - n % 64); p < end; p += 64)
        FOLD(_mm256_min_epi16, _mm256_max_epi16);
    int16_t l[16], h[16];
    memcpy(l, &vlo, 32);
    memcpy(h, &vhi, 32);
    int16_t a = l[0], b = h[0];
    for (int j = 1; j < 16; j++) {
        a = l[j] < a ? l[j] : a;
        b = h[j] > b ? h[j] : b;
    }
    *lo = a;
    *hi = b;
}
