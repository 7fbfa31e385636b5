/* The AVX2 kernel of the splice's canonical-dtype statistics (see sr_splice_priv.h). */
#include <immintrin.h>
#include <string.h>

#include "sr_splice_priv.h"

uint64_t sr_splice_i_or_avx2(const unsigned char *p, size_t n)
{
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (; n >= 128; p += 128, n -= 128) {
        a0 = _mm256_or_si256(a0, _mm256_loadu_si256((const __m256i *)p));
        a1 = _mm256_or_si256(a1, _mm256_loadu_si256((const __m256i *)(p + 32)));
        a2 = _mm256_or_si256(a2, _mm256_loadu_si256((const __m256i *)(p + 64)));
        a3 = _mm256_or_si256(a3, _mm256_loadu_si256((const __m256i *)(p + 96)));
    }
    __m256i a = _mm256_or_si256(_mm256_or_si256(a0, a1), _mm256_or_si256(a2, a3));
    __m128i h = _mm_or_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    uint64_t w[2];
    memcpy(w, &h, 16);
    return w[0] | w[1];
}
