/*
 * The AVX2 draw kernel of the oracle's route rows (sr_oracle_priv.h): four layer slots per
 * vector, one 64-bit lane each. AVX2 has no 64-bit multiply, so the two constant multiplies of
 * mix() are built from three 32 x 32 -> 64 products each, and below(x, n) from two, which is
 * exact because n = E - j < 2^32 (E <= 2^31).
 */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "sr_oracle.h"
#include "sr_oracle_priv.h"

#define GOLDEN 0x9E3779B97F4A7C15ull
#define MIX_M1 0xBF58476D1CE4E5B9ull
#define MIX_M2 0x94D049BB133111EBull

/*
 * x * c modulo 2^64 for a constant c = hi:lo: lo(x) lo + ((hi(x) lo + lo(x) hi) << 32), the
 * hi(x) hi term wrapping away. The two cross products are needed only modulo 2^32, so one 32-bit
 * multiply (`swap` holds hi in the low and lo in the high half of each lane) gives both.
 */
static inline __m256i mul_const(__m256i x, __m256i lo, __m256i swap)
{
    __m256i ll = _mm256_mul_epu32(x, lo);
    __m256i cross = _mm256_mullo_epi32(x, swap);
    cross = _mm256_add_epi32(cross, _mm256_srli_epi64(cross, 32));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(cross, 32));
}

typedef struct mixk {
    __m256i m1lo, m1swap, m2lo, m2swap;
} mixk;

/* sr_mix64 in each lane. */
static inline __m256i mix4(__m256i z, const mixk *k)
{
    z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 30));
    z = mul_const(z, k->m1lo, k->m1swap);
    z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 27));
    z = mul_const(z, k->m2lo, k->m2swap);
    return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

/* (x * n) >> 64 for n < 2^32 in the low half of each lane of `n`: (hi(x) n + (lo(x) n >> 32))
 * >> 32, whose sum cannot overflow 64 bits. */
static inline __m256i below4(__m256i x, __m256i n)
{
    __m256i lo = _mm256_mul_epu32(x, n);
    __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), n);
    return _mm256_srli_epi64(_mm256_add_epi64(hi, _mm256_srli_epi64(lo, 32)), 32);
}

/* The constant c of mul_const as (lo, swap) vectors. */
static void const_pair(__m256i *lo, __m256i *swap, uint64_t c)
{
    *lo = _mm256_set1_epi64x((long long)(c & 0xFFFFFFFFu));
    *swap = _mm256_set1_epi64x((long long)((c << 32) | (c >> 32)));
}

void sr_oracle_i_draws_avx2(uint64_t *r, int groups, uint64_t h, const uint64_t *fps,
                            const uint64_t *gold, int K, uint64_t E)
{
    mixk k;
    const_pair(&k.m1lo, &k.m1swap, MIX_M1);
    const_pair(&k.m2lo, &k.m2swap, MIX_M2);
    const __m256i g = _mm256_set1_epi64x((long long)GOLDEN);
    const __m256i hv = _mm256_set1_epi64x((long long)h);
    /* n = E - j and the offset j of every step, shared by the groups. */
    __m256i nv[SR_ORACLE_MAX_TOPK], jv[SR_ORACLE_MAX_TOPK];
    for (int j = 0; j < K; j++) {
        nv[j] = _mm256_set1_epi64x((long long)(E - (uint64_t)j));
        jv[j] = _mm256_set1_epi64x(j);
    }
    for (int q = 0; q < groups; q++) {
        __m256i s = _mm256_xor_si256(hv, _mm256_loadu_si256((const __m256i *)(fps + 4 * q)));
        s = _mm256_add_epi64(mix4(s, &k), _mm256_loadu_si256((const __m256i *)(gold + 4 * q)));
        s = mix4(s, &k);
        __m256i at = s; /* s + G (j + 1) as a running sum */
        __m256i *out = (__m256i *)(r + (size_t)q * (size_t)K * 4);
#pragma GCC unroll 2
        for (int j = 0; j < K; j++) {
            at = _mm256_add_epi64(at, g);
            _mm256_storeu_si256(out + j, _mm256_add_epi64(jv[j], below4(mix4(at, &k), nv[j])));
        }
    }
}
#endif
