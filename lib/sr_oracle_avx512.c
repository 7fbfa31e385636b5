/*
 * The AVX-512 draw kernel of the oracle's route rows (sr_oracle_priv.h): two groups of four layer
 * slots per vector, one 64-bit lane each. AVX-512DQ multiplies 64-bit lanes natively
 * (vpmullq), so mix() is two multiplies and three shift-xors; below(x, n) keeps the AVX2
 * kernel's two 32 x 32 -> 64 products, exact because n = E - j < 2^32 (E <= 2^31). The
 * functions carry their own target attribute: the file needs no compiler flag, and nothing here
 * runs unless sr_oracle_i_cpu_has_avx512() said so.
 */
#include "sr_oracle.h"
#include "sr_oracle_priv.h"

#if SR_ORACLE_I_HAVE_AVX512
#include <immintrin.h>

#include "sr_mix.h"

#define SR_AVX512 __attribute__((target("avx512f,avx512dq")))

/* sr_mix64 in each lane. */
static inline SR_AVX512 __m512i mix8(__m512i z, __m512i m1, __m512i m2)
{
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
    z = _mm512_mullo_epi64(z, m1);
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
    z = _mm512_mullo_epi64(z, m2);
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

/* (x * n) >> 64 for n < 2^32 in the low half of each lane of `n`: (hi(x) n + (lo(x) n >> 32))
 * >> 32, whose sum cannot overflow 64 bits. */
static inline SR_AVX512 __m512i below8(__m512i x, __m512i n)
{
    __m512i lo = _mm512_mul_epu32(x, n);
    __m512i hi = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), n);
    return _mm512_srli_epi64(_mm512_add_epi64(hi, _mm512_srli_epi64(lo, 32)), 32);
}

SR_AVX512 void sr_oracle_i_draws_avx512(uint64_t *r, int pairs, uint64_t h, const uint64_t *fps,
                                        const uint64_t *gold, int K, uint64_t E)
{
    const __m512i m1 = _mm512_set1_epi64((long long)0xBF58476D1CE4E5B9ull);
    const __m512i m2 = _mm512_set1_epi64((long long)0x94D049BB133111EBull);
    const __m512i g = _mm512_set1_epi64((long long)SR_MIX_GOLDEN);
    const __m512i hv = _mm512_set1_epi64((long long)h);
    const size_t group = (size_t)K * 4; /* entries of one group of four slots in r */
    for (int p = 0; p < pairs; p++) {
        __m512i s = _mm512_xor_si512(hv, _mm512_loadu_si512((const void *)(fps + 8 * p)));
        s = _mm512_add_epi64(mix8(s, m1, m2), _mm512_loadu_si512((const void *)(gold + 8 * p)));
        s = mix8(s, m1, m2);
        __m512i at = s; /* s + G (j + 1) as a running sum */
        /* Lanes 0-3 belong to group 2p, lanes 4-7 to group 2p + 1. */
        uint64_t *lo = r + (size_t)(2 * p) * group, *hi = lo + group;
        for (int j = 0; j < K; j++) {
            at = _mm512_add_epi64(at, g);
            __m512i n = _mm512_set1_epi64((long long)(E - (uint64_t)j));
            __m512i v = _mm512_add_epi64(_mm512_set1_epi64(j), below8(mix8(at, m1, m2), n));
            _mm256_storeu_si256((__m256i *)(lo + (size_t)j * 4), _mm512_castsi512_si256(v));
            _mm256_storeu_si256((__m256i *)(hi + (size_t)j * 4), _mm512_extracti64x4_epi64(v, 1));
        }
    }
}
#else
typedef int sr_oracle_avx512_unavailable; /* (an empty file is not ISO C) */
#endif
