/*
 * AVX-512 VBMI base64 decoding after Wojciech Muła and Daniel Lemire, "Base64 encoding and
 * decoding at almost the speed of a memory copy" (Software: Practice and Experience, 2020). The
 * code is written from the paper's description: one two-register byte permute (vpermi2b) maps
 * each of 64 characters through a 128-entry table to its 6-bit value, or to a byte with the high
 * bit set when it is outside the alphabet; OR-ing the characters themselves in also flags every
 * byte of 0x80 and up (the permute reads only the low 7 bits of its index). Two multiply-adds
 * merge four values into 24 bits per 32-bit word, and one byte permute (vpermb) puts the 48
 * bytes in order at the bottom of the vector.
 */
#include "sr_base64_avx512.h"

#if SR_B64_HAVE_AVX512_KERNELS

#include <immintrin.h>

#include "sr_base64_avx2.h" /* SR_B64_NT_MIN */

/* lib/CMakeLists.txt compiles this file with these flags; the attribute keeps it correct in
 * builds that do not (the fuzz build recompiles lib/ with its own flags). */
#define VBMI_FN     __attribute__((target("avx512f,avx512bw,avx512vbmi")))
#define VBMI_INLINE static inline __attribute__((always_inline)) VBMI_FN

/* The 48 bytes a 64-character block decodes to. */
#define K48 ((__mmask64)0x0000ffffffffffffull)

/* The table of the permute, computed by the compiler from the alphabet: the value 0..63 of an
 * alphabet byte, 0x80 for every other byte below 0x80 ('=' and '"' included). */
#define VBMI_VAL(c)                                                                                \
    ((c) >= 0x41 && (c) <= 0x5a   ? (c)-0x41                                                       \
     : (c) >= 0x61 && (c) <= 0x7a ? (c)-0x61 + 26                                                  \
     : (c) >= 0x30 && (c) <= 0x39 ? (c)-0x30 + 52                                                  \
     : (c) == 0x2b                ? 62                                                             \
     : (c) == 0x2f                ? 63                                                             \
                                  : 0x80)
#define VBMI_ENTRY(c)  (unsigned char)VBMI_VAL(c),
#define VBMI_R4(F, b)  F(b) F((b) + 1) F((b) + 2) F((b) + 3)
#define VBMI_R16(F, b) VBMI_R4(F, b) VBMI_R4(F, (b) + 4) VBMI_R4(F, (b) + 8) VBMI_R4(F, (b) + 12)
#define VBMI_R64(F, b)                                                                             \
    VBMI_R16(F, b) VBMI_R16(F, (b) + 16) VBMI_R16(F, (b) + 32) VBMI_R16(F, (b) + 48)
#define VBMI_R128(F) VBMI_R64(F, 0) VBMI_R64(F, 64)
static const unsigned char k_lut[128] __attribute__((aligned(64))) = {VBMI_R128(VBMI_ENTRY)};

/*
 * The final permute's byte order. After the multiply-adds, 32-bit word w holds the quad's 24
 * bits with its first character in bits 23..18, so its first output byte is the word's byte 2:
 * output byte k is byte 4 * (k / 3) + 2 - k % 3. Bytes 48..63 are zeroed by the permute's mask.
 */
static const unsigned char k_order[64] __attribute__((aligned(64))) = {
    2,  1,  0,  6,  5,  4,  10, 9,  8,  14, 13, 12, 18, 17, 16, 22, 21, 20, 26, 25, 24, 30,
    29, 28, 34, 33, 32, 38, 37, 36, 42, 41, 40, 46, 45, 44, 50, 49, 48, 54, 53, 52, 58, 57,
    56, 62, 61, 60, 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0};

typedef struct vbmi_consts {
    __m512i lo, hi, order;
} vbmi_consts;

/* The 64 characters `in`: *packed gets their 48 bytes (and 16 zero bytes); returns a vector
 * whose bytes have the high bit set exactly where `in` is outside the alphabet. */
VBMI_INLINE __m512i dec_block(__m512i in, const vbmi_consts *k, __m512i *packed)
{
    __m512i v = _mm512_permutex2var_epi8(k->lo, in, k->hi);
    /* Pairs of values into 12 bits (first * 64 + second), then pairs of those into 24. */
    __m512i w12 = _mm512_maddubs_epi16(v, _mm512_set1_epi32(0x01400140));
    __m512i w24 = _mm512_madd_epi16(w12, _mm512_set1_epi32(0x00011000));
    *packed = _mm512_maskz_permutexvar_epi8(K48, k->order, w24);
    return _mm512_or_si512(v, in);
}

VBMI_INLINE __m512i dec_load(const char *src, const vbmi_consts *k, __m512i *packed)
{
    return dec_block(_mm512_loadu_si512((const void *)src), k, packed);
}

/*
 * Groups of four valid blocks (256 characters, 192 bytes), their validity checked once. With
 * ordinary stores the first three blocks are stored 64 bytes wide: the 16 bytes past a block's 48
 * land where the next block's bytes go, and that block's store (same group, entirely valid)
 * overwrites them; the last block stores exactly 48. With `nt` (dst 64-byte aligned) the four
 * results are merged into three whole vectors by 128-bit lane moves and written with
 * non-temporal stores. Stops before the first group that is not entirely valid. With `want`
 * the packed blocks are OR-ed into *acc.
 */
VBMI_INLINE size_t dec_groups(unsigned char *dst, const char *src, size_t n, const vbmi_consts *k,
                              __m512i *acc, const int want, const int nt)
{
    const __m512i tail3 = _mm512_set_epi64(13, 12, 11, 10, 9, 8, 5, 4);
    size_t i = 0;
    for (; n - i >= 256; i += 256, dst += 192) {
        __m512i p0, p1, p2, p3;
        __m512i bad = _mm512_or_si512(dec_load(src + i, k, &p0), dec_load(src + i + 64, k, &p1));
        bad = _mm512_or_si512(bad, dec_load(src + i + 128, k, &p2));
        bad = _mm512_or_si512(bad, dec_load(src + i + 192, k, &p3));
        if (_mm512_movepi8_mask(bad))
            break;
        if (want)
            *acc = _mm512_or_si512(
                *acc, _mm512_or_si512(_mm512_or_si512(p0, p1), _mm512_or_si512(p2, p3)));
        if (nt) {
            /* 48 bytes are three 128-bit lanes: [p0 p0 p0 p1] [p1 p1 p2 p2] [p2 p3 p3 p3]. */
            __m512i w0 = _mm512_inserti32x4(p0, _mm512_castsi512_si128(p1), 3);
            __m512i w1 = _mm512_shuffle_i64x2(p1, p2, 0x49);
            __m512i w2 = _mm512_permutex2var_epi64(p2, tail3, p3);
            _mm512_stream_si512((void *)dst, w0);
            _mm512_stream_si512((void *)(dst + 64), w1);
            _mm512_stream_si512((void *)(dst + 128), w2);
        } else {
            _mm512_storeu_si512((void *)dst, p0);
            _mm512_storeu_si512((void *)(dst + 48), p1);
            _mm512_storeu_si512((void *)(dst + 96), p2);
            _mm512_mask_storeu_epi8((void *)(dst + 144), K48, p3);
        }
    }
    if (nt)
        _mm_sfence();
    return i;
}

/* The block holding the stop (the first byte outside the alphabet, or the end of the text at
 * `bad`'s lowest bit): stores the whole quads before it and returns their characters. */
VBMI_INLINE size_t dec_last(unsigned char *dst, __m512i p, __mmask64 bad, size_t *stop,
                            __m512i *acc, const int want)
{
    unsigned at = (unsigned)__builtin_ctzll(bad);
    __mmask64 out = ((__mmask64)1 << (at / 4 * 3)) - 1;
    _mm512_mask_storeu_epi8((void *)dst, out, p);
    if (want)
        *acc = _mm512_or_si512(*acc, _mm512_maskz_mov_epi8(out, p));
    *stop = at;
    return at & ~3u;
}

/* The rest after the groups: single blocks, then the last n % 64 characters with a masked load
 * whose missing bytes count as the stop. Sets *stop relative to src. */
VBMI_INLINE size_t dec_rest(unsigned char *dst, const char *src, size_t n, size_t *stop,
                            const vbmi_consts *k, __m512i *acc, const int want)
{
    size_t i = 0;
    __m512i p;
    for (; n - i >= 64; i += 64, dst += 48) {
        __mmask64 bad = _mm512_movepi8_mask(dec_load(src + i, k, &p));
        if (bad) {
            size_t c = dec_last(dst, p, bad, stop, acc, want);
            *stop += i;
            return i + c;
        }
        if (want)
            *acc = _mm512_or_si512(*acc, p);
        _mm512_mask_storeu_epi8((void *)dst, K48, p);
    }
    *stop = n;
    if (i == n)
        return i;
    const __mmask64 have = ((__mmask64)1 << (n - i)) - 1;
    __m512i in = _mm512_maskz_loadu_epi8(have, (const void *)(src + i));
    __mmask64 bad = _mm512_movepi8_mask(dec_block(in, k, &p)) | ~have;
    size_t c = dec_last(dst, p, bad, stop, acc, want);
    *stop += i;
    return i + c;
}

VBMI_INLINE size_t decode_bulk(unsigned char *dst, const char *src, size_t n, size_t *stop,
                               uint32_t *lanes, const int want)
{
    vbmi_consts k;
    k.lo = _mm512_load_si512((const void *)k_lut);
    k.hi = _mm512_load_si512((const void *)(k_lut + 64));
    k.order = _mm512_load_si512((const void *)k_order);
    __m512i acc = _mm512_setzero_si512();
    size_t i;
    if (n >= SR_B64_NT_MIN && ((uintptr_t)dst & 63) == 0)
        i = dec_groups(dst, src, n, &k, &acc, want, 1);
    else
        i = dec_groups(dst, src, n, &k, &acc, want, 0);
    size_t j = dec_rest(dst + i / 4 * 3, src + i, n - i, stop, &k, &acc, want);
    *stop += i;
    /* Every block's bytes start at a multiple of 48 bytes from dst, so byte k of a packed vector
     * is output position k (mod 4): the 32-bit words of acc OR-ed together are the lanes. */
    if (want)
        *lanes |= (uint32_t)_mm512_reduce_or_epi32(acc);
    return i + j;
}

VBMI_FN size_t sr_b64_avx512_decode_bulk(unsigned char *dst, const char *src, size_t n,
                                         size_t *stop, uint32_t *lanes)
{
    if (lanes)
        return decode_bulk(dst, src, n, stop, lanes, 1);
    return decode_bulk(dst, src, n, stop, NULL, 0);
}

#endif /* SR_B64_HAVE_AVX512_KERNELS */
