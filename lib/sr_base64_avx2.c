/*
 * AVX2 base64 kernels after Wojciech Muła and Daniel Lemire, "Faster Base64 Encoding and
 * Decoding Using AVX2 Instructions" (ACM TWEB, 2018). The code is written from the paper's
 * description; the lookup tables are derived in the comments next to them.
 */
#include "sr_base64_avx2.h"

#if SR_B64_HAVE_AVX2_KERNELS

#include <immintrin.h>
#include <string.h>

/* lib/CMakeLists.txt compiles this file with -mavx2; the attribute keeps it correct in builds
 * that do not (the fuzz build recompiles lib/ with its own flags). */
#define AVX2_FN __attribute__((target("avx2")))

/* ---- encoding ---- */

/*
 * Turns 12 input bytes per 128-bit lane into 16 six-bit indices, one per byte. A triple
 * (a, b, c) is first spread over one 32-bit word as the bytes [b, a, c, b]; read as 16-bit
 * words that is w0 = a:b and w1 = b:c, where the four indices sit at bits 15..10 and 9..4 of
 * w0 and bits 11..6 and 5..0 of w1. One multiply-high moves the first and third index down to
 * bits 5..0 of their words, one multiply-low moves the second and fourth up to bits 13..8,
 * and an OR of the two gives the indices in byte order.
 */
static inline AVX2_FN __m256i enc_indices(__m256i in)
{
    const __m256i spread = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10, 1, 0,
                                            2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    in = _mm256_shuffle_epi8(in, spread);
    __m256i i02 = _mm256_and_si256(in, _mm256_set1_epi32(0x0fc0fc00));
    i02 = _mm256_mulhi_epu16(i02, _mm256_set1_epi32(0x04000040));
    __m256i i13 = _mm256_and_si256(in, _mm256_set1_epi32(0x003f03f0));
    i13 = _mm256_mullo_epi16(i13, _mm256_set1_epi32(0x01000010));
    return _mm256_or_si256(i02, i13);
}

/*
 * Maps indices 0..63 to ASCII by adding an offset chosen by a 16-entry lookup: saturating
 * subtraction of 51 sends 0..51 to 0 and 52..63 to 1..12, and indices below 26 are then moved
 * to 13. Offsets: 13 -> 'A' (+65), 0 -> 'a' - 26 (+71), 1..10 -> '0' - 52 (-4),
 * 11 -> '+' - 62 (-19), 12 -> '/' - 63 (-16).
 */
static inline AVX2_FN __m256i enc_ascii(__m256i idx)
{
    const __m256i offsets =
        _mm256_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0, 71, -4, -4,
                         -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0);
    __m256i sel = _mm256_subs_epu8(idx, _mm256_set1_epi8(51));
    __m256i upper = _mm256_cmpgt_epi8(_mm256_set1_epi8(26), idx);
    sel = _mm256_or_si256(sel, _mm256_and_si256(upper, _mm256_set1_epi8(13)));
    return _mm256_add_epi8(idx, _mm256_shuffle_epi8(offsets, sel));
}

static inline AVX2_FN __m256i enc_load(const unsigned char *src)
{
    /* Two 16-byte loads put input bytes 0..11 and 12..23 at the bottom of each lane. */
    __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)src);
    __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(src + 12));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

AVX2_FN size_t sr_b64_avx2_encode_bulk(char *dst, const unsigned char *src, size_t n)
{
    size_t i = 0;
    if (n >= SR_B64_NT_MIN && ((uintptr_t)dst & 31) == 0) {
        /* Large outputs bypass the cache, as memcpy does: this saves reading every output
         * line before writing it. */
        for (; n - i >= 28; i += 24, dst += 32)
            _mm256_stream_si256((__m256i *)(void *)dst, enc_ascii(enc_indices(enc_load(src + i))));
        _mm_sfence();
        return i;
    }
    for (; n - i >= 28; i += 24, dst += 32)
        _mm256_storeu_si256((__m256i *)(void *)dst, enc_ascii(enc_indices(enc_load(src + i))));
    return i;
}

/* ---- decoding ---- */

/*
 * Validity and value take three lookups. LO, indexed by the byte itself (vpshufb reads its low
 * nibble, and gives 0 for a byte of 0x80 or more), says which high nibbles are allowed with this
 * low nibble, one bit per class of high nibble; HI, indexed by the high nibble, gives its class.
 * A byte is in the alphabet iff its class bit is among the allowed ones: bad = class & ~allowed.
 * Classes: 0x10 = 0x2_ ('+' and '/': low nibbles B and F), 0x01 = 0x3_ (digits: 0..9), 0x20 =
 * 0x4_ and 0x6_ (1..F), 0x40 = 0x5_ and 0x7_ (0..A), and 0x02 for every other high nibble, which
 * no low nibble allows (0x80 and up are refused anyway, since their LO is 0).
 *
 * LO's bits below 0x10 also pick the value's offset: ROLL is indexed by (high nibble | allowed)
 * & 0x0F. Only LO[F] has 0x08 (so '/', 'O' and 'o' index 10, 12, 14, apart from '+', the 4_ and
 * the 6_ letters), and LO[0..9] have 0x01, which turns the indices 4 and 6 of the letters with
 * low nibbles 0..9 into 5 and 7: ROLL gives those the same offsets. Offsets: 0x2B '+' -> 62
 * (+19), '/' -> 63 (+16), digits +4, 0x41..0x5A and 'O' -65, 0x61..0x7A and 'o' -71.
 */
static inline AVX2_FN __m256i dec_lut_lo(void)
{
    return _mm256_setr_epi8(0x41, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x60, 0x30,
                            0x20, 0x20, 0x20, 0x38, 0x41, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61,
                            0x61, 0x61, 0x60, 0x30, 0x20, 0x20, 0x20, 0x38);
}

static inline AVX2_FN __m256i dec_lut_hi(void)
{
    return _mm256_setr_epi8(0x02, 0x02, 0x10, 0x01, 0x20, 0x40, 0x20, 0x40, 0x02, 0x02, 0x02, 0x02,
                            0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x10, 0x01, 0x20, 0x40, 0x20, 0x40,
                            0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02);
}

static inline AVX2_FN __m256i dec_roll(void)
{
    return _mm256_setr_epi8(0, 0, 19, 4, -65, -65, -71, -71, 0, 0, 16, 0, -65, 0, -71, 0, 0, 0, 19,
                            4, -65, -65, -71, -71, 0, 0, 16, 0, -65, 0, -71, 0);
}

/* The 32 characters `in`: returns their bad bits (non-zero bytes are outside the alphabet) and
 * sets *val to their 6-bit values (meaningful where the bad bits are zero). */
static inline AVX2_FN __m256i dec_block(__m256i in, __m256i *val)
{
    __m256i hi = _mm256_and_si256(_mm256_srli_epi32(in, 4), _mm256_set1_epi8(0x0f));
    __m256i allowed = _mm256_shuffle_epi8(dec_lut_lo(), in);
    __m256i cls = _mm256_shuffle_epi8(dec_lut_hi(), hi);
    __m256i idx = _mm256_or_si256(hi, allowed);
    *val = _mm256_add_epi8(in, _mm256_shuffle_epi8(dec_roll(), idx));
    return _mm256_andnot_si256(allowed, cls);
}

/*
 * Packs four 6-bit values per 32-bit word into 3 bytes: multiply-add merges pairs into 12-bit
 * words, a second one merges those into 24 bits, a byte shuffle puts each word's 3 bytes in
 * big-endian order at the bottom of its lane, and a cross-lane permute closes the gap so the
 * 24 result bytes are contiguous. Bytes 24..31 of the result are zero (the shuffle zeroes the
 * top dword of each lane and the permute repeats the upper one).
 */
static inline AVX2_FN __m256i dec_pack(__m256i v)
{
    const __m256i order = _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
                                           2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    __m256i w12 = _mm256_maddubs_epi16(v, _mm256_set1_epi32(0x01400140));
    __m256i w24 = _mm256_madd_epi16(w12, _mm256_set1_epi32(0x00011000));
    __m256i bytes = _mm256_shuffle_epi8(w24, order);
    return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7));
}

/* Stores exactly 24 bytes, so that nothing past the decoded output is ever touched. */
static inline AVX2_FN void store24(unsigned char *dst, __m256i p)
{
    _mm_storeu_si128((__m128i *)(void *)dst, _mm256_castsi256_si128(p));
    _mm_storel_epi64((__m128i *)(void *)(dst + 16), _mm256_extracti128_si256(p, 1));
}

/* Loads and decodes the block at src: *packed gets its 24 bytes (and 8 zero bytes); returns its
 * bad bits. */
static inline AVX2_FN __m256i dec_load(const char *src, __m256i *packed)
{
    __m256i val;
    __m256i bad = dec_block(_mm256_loadu_si256((const __m256i *)(const void *)src), &val);
    *packed = dec_pack(val);
    return bad;
}

/*
 * The lanes of the packed blocks OR-ed into `acc` (sr_b64_avx2_decode_bulk's `lanes`): byte k of
 * the result is the OR of the bytes at positions = k (mod 4) of every block, since a block's 24
 * bytes start at a multiple of 24 and its bytes 24..31 are zero.
 */
static inline AVX2_FN uint32_t fold_lanes(__m256i acc)
{
    __m128i h = _mm_or_si128(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    h = _mm_or_si128(h, _mm_unpackhi_epi64(h, h));
    return (uint32_t)_mm_cvtsi128_si32(h) | (uint32_t)_mm_extract_epi32(h, 1);
}

/*
 * Decodes groups of four valid blocks (128 characters, 96 bytes) with aligned non-temporal
 * stores; dst must be 32-byte aligned. 96 bytes are 12 quadwords and each block yields 3, so
 * the four results are merged into three vectors by quadword permutes and blends. Stops before
 * the first group that is not entirely valid. With `want` the packed blocks are OR-ed into *acc.
 */
static inline __attribute__((always_inline)) AVX2_FN size_t decode_groups_nt(unsigned char *dst,
                                                                             const char *src,
                                                                             size_t n, __m256i *acc,
                                                                             const int want)
{
    size_t i = 0;
    for (; n - i >= 128; i += 128, dst += 96) {
        __m256i p0, p1, p2, p3;
        __m256i bad = _mm256_or_si256(dec_load(src + i, &p0), dec_load(src + i + 32, &p1));
        bad = _mm256_or_si256(bad, dec_load(src + i + 64, &p2));
        bad = _mm256_or_si256(dec_load(src + i + 96, &p3), bad);
        if (!_mm256_testz_si256(bad, bad))
            break;
        if (want)
            *acc = _mm256_or_si256(
                *acc, _mm256_or_si256(_mm256_or_si256(p0, p1), _mm256_or_si256(p2, p3)));
        __m256i w0 = _mm256_blend_epi32(p0, _mm256_permute4x64_epi64(p1, 0x00), 0xc0);
        __m256i w1 = _mm256_blend_epi32(_mm256_permute4x64_epi64(p1, 0x09),
                                        _mm256_permute4x64_epi64(p2, 0x40), 0xf0);
        __m256i w2 = _mm256_blend_epi32(_mm256_permute4x64_epi64(p2, 0x02),
                                        _mm256_permute4x64_epi64(p3, 0x90), 0xfc);
        _mm256_stream_si256((__m256i *)(void *)dst, w0);
        _mm256_stream_si256((__m256i *)(void *)(dst + 32), w1);
        _mm256_stream_si256((__m256i *)(void *)(dst + 64), w2);
    }
    _mm_sfence();
    return i;
}

/*
 * Decodes groups of four valid blocks (128 characters, 96 bytes) with ordinary stores, checking
 * the four blocks' bad bits once. Each of the first three blocks is stored as a whole vector:
 * its 8 bytes past the block's 24 land where the next block's bytes go, and that block's store
 * (in the same group, which is entirely valid) overwrites them; the last block stores exactly 24
 * bytes. So when this returns, only decoded bytes have been written. Stops before the first
 * group that is not entirely valid. With `want` the packed blocks are OR-ed into *acc.
 */
static inline __attribute__((always_inline)) AVX2_FN size_t decode_groups(unsigned char *dst,
                                                                          const char *src, size_t n,
                                                                          __m256i *acc,
                                                                          const int want)
{
    size_t i = 0;
    for (; n - i >= 128; i += 128, dst += 96) {
        __m256i p0, p1, p2, p3;
        __m256i bad = _mm256_or_si256(dec_load(src + i, &p0), dec_load(src + i + 32, &p1));
        bad = _mm256_or_si256(bad, dec_load(src + i + 64, &p2));
        bad = _mm256_or_si256(bad, dec_load(src + i + 96, &p3));
        if (!_mm256_testz_si256(bad, bad))
            break;
        if (want)
            *acc = _mm256_or_si256(
                *acc, _mm256_or_si256(_mm256_or_si256(p0, p1), _mm256_or_si256(p2, p3)));
        _mm256_storeu_si256((__m256i *)(void *)dst, p0);
        _mm256_storeu_si256((__m256i *)(void *)(dst + 24), p1);
        _mm256_storeu_si256((__m256i *)(void *)(dst + 48), p2);
        store24(dst + 72, p3);
    }
    return i;
}

/* The rest after the groups: one block at a time, to decode the quads before the first byte
 * outside the alphabet (the group that held it, or the last blocks). */
static inline __attribute__((always_inline)) AVX2_FN size_t
decode_blocks(unsigned char *dst, const char *src, size_t n, size_t *stop, __m256i *acc,
              uint32_t *tail_lanes, const int want)
{
    size_t i = 0;
    for (; n - i >= 32; i += 32, dst += 24) {
        __m256i p;
        __m256i bad = dec_load(src + i, &p);
        if (!_mm256_testz_si256(bad, bad)) {
            /* The first failing byte is the closing quote, padding or an error; the scalar
             * code decides which. The quads before it are still good. */
            __m256i ok = _mm256_cmpeq_epi8(bad, _mm256_setzero_si256());
            unsigned mask = ~(unsigned)_mm256_movemask_epi8(ok);
            unsigned k = (unsigned)__builtin_ctz(mask);
            unsigned char tmp[32];
            _mm256_storeu_si256((__m256i *)(void *)tmp, p);
            memcpy(dst, tmp, (k / 4) * 3);
            /* The block starts at a multiple of 24 bytes, so position j is lane j % 4. */
            for (unsigned j = 0; want && j < (k / 4) * 3; j++)
                *tail_lanes |= (uint32_t)tmp[j] << (8 * (j & 3));
            *stop = i + k;
            return i + (k & ~3u);
        }
        if (want)
            *acc = _mm256_or_si256(*acc, p);
        store24(dst, p);
    }
    *stop = n;
    return i;
}

static inline __attribute__((always_inline)) AVX2_FN size_t decode_bulk(
    unsigned char *dst, const char *src, size_t n, size_t *stop, uint32_t *lanes, const int want)
{
    __m256i acc = _mm256_setzero_si256();
    uint32_t tail = 0;
    size_t i;
    if (n >= SR_B64_NT_MIN && ((uintptr_t)dst & 31) == 0)
        i = decode_groups_nt(dst, src, n, &acc, want);
    else
        i = decode_groups(dst, src, n, &acc, want);
    size_t j = decode_blocks(dst + i / 4 * 3, src + i, n - i, stop, &acc, &tail, want);
    *stop += i;
    if (want)
        *lanes |= fold_lanes(acc) | tail;
    return i + j;
}

AVX2_FN size_t sr_b64_avx2_decode_bulk(unsigned char *dst, const char *src, size_t n, size_t *stop,
                                       uint32_t *lanes)
{
    if (lanes)
        return decode_bulk(dst, src, n, stop, lanes, 1);
    return decode_bulk(dst, src, n, stop, NULL, 0);
}

#endif /* SR_B64_HAVE_AVX2_KERNELS */
