#include "sr_base64.h"

#include <string.h>

#include "sr_base64_avx2.h"
#include "sr_base64_avx512.h"
#include "sr_base64_priv.h"

/*
 * All three decoders (plain, one-shot fused, streaming) run the same engine: a bulk kernel
 * (AVX-512 VBMI, AVX2 or the scalar table loop) decodes runs of whole quads made only of alphabet
 * bytes, and a byte-at-a-time state machine (step) takes over at the first byte outside the
 * alphabet. Because the bulk kernels never classify anything themselves, the error codes and
 * offsets come from one place and cannot differ between implementations or chunkings.
 */

/* ---- const tables, computed by the compiler ---- */

/* The value 0..63 of an alphabet byte, -1 for every other byte. */
#define B64_VAL(c)                                                                                 \
    ((c) >= 0x41 && (c) <= 0x5a   ? (c)-0x41                                                       \
     : (c) >= 0x61 && (c) <= 0x7a ? (c)-0x61 + 26                                                  \
     : (c) >= 0x30 && (c) <= 0x39 ? (c)-0x30 + 52                                                  \
     : (c) == 0x2b                ? 62                                                             \
     : (c) == 0x2f                ? 63                                                             \
                                  : -1)

#define R4(F, b)  F(b) F((b) + 1) F((b) + 2) F((b) + 3)
#define R16(F, b) R4(F, b) R4(F, (b) + 4) R4(F, (b) + 8) R4(F, (b) + 12)
#define R64(F, b) R16(F, b) R16(F, (b) + 16) R16(F, (b) + 32) R16(F, (b) + 48)
#define R256(F)   R64(F, 0) R64(F, 64) R64(F, 128) R64(F, 192)

enum { CLS_PAD = 64, CLS_QUOTE = 65, CLS_BAD = 66 };

/* Byte classes for the state machine: a value, '=', '"' or anything else. */
#define CLS(c)                                                                                     \
    (unsigned char)(B64_VAL(c) >= 0 ? B64_VAL(c)                                                   \
                    : (c) == 0x3d   ? CLS_PAD                                                      \
                    : (c) == 0x22   ? CLS_QUOTE                                                    \
                                    : CLS_BAD),
static const unsigned char k_class[256] = {R256(CLS)};

/*
 * The 4-byte tables place each character's 6 bits where they land in the 3 output bytes
 * (byte 0 = bits 7..0 of the word), so a quad decodes with four loads and three ORs. Any byte
 * outside the alphabet carries DBAD, which no valid combination can produce.
 */
#define DBAD  0x01000000u
#define DV(c) ((uint32_t)B64_VAL(c))
#define D0(c) (B64_VAL(c) < 0 ? DBAD : DV(c) << 2),
#define D1(c) (B64_VAL(c) < 0 ? DBAD : (DV(c) >> 4) | (DV(c) & 0x0f) << 12),
#define D2(c) (B64_VAL(c) < 0 ? DBAD : (DV(c) >> 2) << 8 | (DV(c) & 0x03) << 22),
#define D3(c) (B64_VAL(c) < 0 ? DBAD : DV(c) << 16),
static const uint32_t k_d0[256] = {R256(D0)};
static const uint32_t k_d1[256] = {R256(D1)};
static const uint32_t k_d2[256] = {R256(D2)};
static const uint32_t k_d3[256] = {R256(D3)};

static const char k_enc[64] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Values of sr_b64_stream.closed. */
enum { STREAM_OPEN = 0, STREAM_CLOSED = 1, STREAM_FINISHED = 2 };

/* ---- dispatch and sizes ---- */

int sr_base64_cpu_has_avx2(void)
{
#if SR_B64_HAVE_AVX2_KERNELS
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

int sr_base64_cpu_has_avx512vbmi(void)
{
#if SR_B64_HAVE_AVX512_KERNELS
    /* The compiler's run-time library reports AVX-512 features only when the OS saves the
     * opmask and zmm registers (XCR0), and valgrind's CPU hides them. */
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vbmi") && sr_base64_cpu_has_avx2()
               ? 1
               : 0;
#else
    return 0;
#endif
}

sr_b64_impl sr_base64_resolve(sr_b64_impl want)
{
    if (want == SR_B64_SCALAR)
        return SR_B64_SCALAR;
    if (want != SR_B64_AVX2 && sr_base64_cpu_has_avx512vbmi())
        return SR_B64_AVX512;
    return sr_base64_cpu_has_avx2() ? SR_B64_AVX2 : SR_B64_SCALAR;
}

const char *sr_base64_impl_name(sr_b64_impl impl)
{
    switch (sr_base64_resolve(impl)) {
    case SR_B64_AVX512:
        return "avx512vbmi";
    case SR_B64_AVX2:
        return "avx2";
    default:
        return "scalar";
    }
}

size_t sr_base64_encoded_len(size_t n)
{
    return (n / 3 + (n % 3 != 0)) * 4;
}

size_t sr_base64_decoded_max(size_t n)
{
    return n / 4 * 3 + 3;
}

size_t sr_base64_decoded_min(const char *src, size_t n)
{
    size_t pad = 0;
    if (src && n >= 1 && src[n - 1] == '=')
        pad += 1 + (n >= 2 && src[n - 2] == '=');
    size_t least = n / 4 * 3;
    return least > pad ? least - pad : 0;
}

/* ---- encoding ---- */

static void scalar_encode(char *d, const unsigned char *s, size_t n)
{
    size_t i = 0;
    for (; n - i >= 3; i += 3, d += 4) {
        uint32_t x = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        d[0] = k_enc[x >> 18];
        d[1] = k_enc[(x >> 12) & 63];
        d[2] = k_enc[(x >> 6) & 63];
        d[3] = k_enc[x & 63];
    }
    if (n - i == 1) {
        d[0] = k_enc[s[i] >> 2];
        d[1] = k_enc[(s[i] & 3) << 4];
        d[2] = '=';
        d[3] = '=';
    } else if (n - i == 2) {
        d[0] = k_enc[s[i] >> 2];
        d[1] = k_enc[(s[i] & 3) << 4 | s[i + 1] >> 4];
        d[2] = k_enc[(s[i + 1] & 15) << 2];
        d[3] = '=';
    }
}

size_t sr_base64_encode(char *dst, const void *src, size_t n, sr_b64_impl impl)
{
    const unsigned char *s = src;
    size_t i = 0;
    if (n == 0)
        return 0;
#if SR_B64_HAVE_AVX2_KERNELS
    /* The AVX-512 VBMI implementation encodes with the AVX2 kernel (its CPUs have AVX2). */
    if (sr_base64_resolve(impl) != SR_B64_SCALAR) {
        /* A few triples first bring dst to the 32-byte alignment of the streaming path. */
        size_t mis = (uintptr_t)dst & 31;
        if (n >= SR_B64_NT_MIN && mis % 4 == 0 && mis != 0) {
            i = (32 - mis) / 4 * 3;
            scalar_encode(dst, s, i);
        }
        i += sr_b64_avx2_encode_bulk(dst + i / 3 * 4, s + i, n - i);
    }
#endif
    scalar_encode(dst + i / 3 * 4, s + i, n - i);
    return sr_base64_encoded_len(n);
}

/* ---- decoding: bulk ---- */

static void put12(unsigned char *d, uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t a = w0 | (uint64_t)w1 << 24 | (uint64_t)w2 << 48;
    uint32_t b = w2 >> 16 | w3 << 8;
    memcpy(d, &a, 8);
    memcpy(d + 8, &b, 4);
#else
    const uint32_t w[4] = {w0, w1, w2, w3};
    for (int k = 0; k < 4; k++) {
        d[3 * k] = (unsigned char)w[k];
        d[3 * k + 1] = (unsigned char)(w[k] >> 8);
        d[3 * k + 2] = (unsigned char)(w[k] >> 16);
    }
#endif
}

/* Decodes whole quads of alphabet bytes; stops before the first quad holding anything else.
 * Writes exactly the decoded bytes. Returns the number of characters decoded. */
static size_t scalar_decode_bulk(unsigned char *d, const unsigned char *s, size_t n)
{
    size_t i = 0;
    for (; n - i >= 16; i += 16, d += 12) {
        const unsigned char *q = s + i;
        uint32_t w0 = k_d0[q[0]] | k_d1[q[1]] | k_d2[q[2]] | k_d3[q[3]];
        uint32_t w1 = k_d0[q[4]] | k_d1[q[5]] | k_d2[q[6]] | k_d3[q[7]];
        uint32_t w2 = k_d0[q[8]] | k_d1[q[9]] | k_d2[q[10]] | k_d3[q[11]];
        uint32_t w3 = k_d0[q[12]] | k_d1[q[13]] | k_d2[q[14]] | k_d3[q[15]];
        if ((w0 | w1 | w2 | w3) & DBAD)
            break;
        put12(d, w0, w1, w2, w3);
    }
    for (; n - i >= 4; i += 4, d += 3) {
        const unsigned char *q = s + i;
        uint32_t w = k_d0[q[0]] | k_d1[q[1]] | k_d2[q[2]] | k_d3[q[3]];
        if (w & DBAD)
            break;
        d[0] = (unsigned char)w;
        d[1] = (unsigned char)(w >> 8);
        d[2] = (unsigned char)(w >> 16);
    }
    return i;
}

/* ---- decoding: the state machine for everything that is not a plain quad ---- */

/*
 * The last quad's unused low bits ("AR==": R carries 0x1 below the 8 decoded bits) are dropped,
 * as pybase64's validate=True does; `at` is the offset of the character holding them. Strict
 * streams refuse them (SR_E_B64_PADDING); lenient ones note the first such offset.
 */
static int trailing_bits(sr_b64_stream *s, int64_t at, const char *pad, sr_err *err)
{
    if (s->flags & SR_B64_STRICT_BITS)
        return sr_err_set_at(err, SR_E_B64_PADDING, at,
                             "base64: non-zero trailing bits before '%s' at offset %lld", pad,
                             (long long)at);
    if (s->noncanon_at < 0)
        s->noncanon_at = at;
    return 0;
}

/* Decodes the completed quad in s->carry; `at` is the offset of its last character. */
static int finish_quad(sr_b64_stream *s, unsigned char *d, size_t *o, int64_t at, sr_err *err)
{
    const unsigned v0 = k_class[s->carry[0]], v1 = k_class[s->carry[1]];
    const unsigned v2 = k_class[s->carry[2]], v3 = k_class[s->carry[3]];
    d += *o;
    s->ncarry = 0;
    int rc;
    if (v2 == CLS_PAD) {
        if ((v1 & 0x0f) && (rc = trailing_bits(s, at - 2, "==", err)))
            return rc;
        d[0] = (unsigned char)(v0 << 2 | v1 >> 4);
        *o += 1;
        s->closed = STREAM_CLOSED;
        return 0;
    }
    if (v3 == CLS_PAD) {
        if ((v2 & 0x03) && (rc = trailing_bits(s, at - 1, "=", err)))
            return rc;
        s->closed = STREAM_CLOSED;
    }
    d[0] = (unsigned char)(v0 << 2 | v1 >> 4);
    d[1] = (unsigned char)((v1 & 0x0f) << 4 | v2 >> 2);
    if (v3 == CLS_PAD) {
        *o += 2;
        return 0;
    }
    d[2] = (unsigned char)((v2 & 0x03) << 6 | v3);
    *o += 3;
    return 0;
}

/*
 * Takes one byte at offset `at` (relative to the first byte ever fed). Returns 0 to go on, 1
 * if it is the closing quote (quote_mode only), or a negative code.
 */
static int step(sr_b64_stream *s, unsigned char *d, size_t *o, unsigned char c, int64_t at,
                int quote_mode, sr_err *err)
{
    const unsigned v = k_class[c];
    if (v == CLS_QUOTE && quote_mode) {
        if (s->ncarry != 0)
            return sr_err_set_at(err, SR_E_B64_LENGTH, at,
                                 "base64: encoded length %lld before the closing quote is not a "
                                 "multiple of 4",
                                 (long long)at);
        return 1;
    }
    if (v >= CLS_QUOTE)
        return sr_err_set_at(err, SR_E_B64_CHAR, at,
                             "base64: invalid character 0x%02x at offset %lld", c, (long long)at);
    if (s->closed)
        return sr_err_set_at(err, SR_E_B64_PADDING, at,
                             "base64: data after the padding at offset %lld", (long long)at);
    if (v == CLS_PAD && s->ncarry < 2)
        return sr_err_set_at(err, SR_E_B64_PADDING, at,
                             "base64: '=' in position %d of a quad at offset %lld", s->ncarry + 1,
                             (long long)at);
    if (v != CLS_PAD && s->ncarry == 3 && s->carry[2] == '=')
        return sr_err_set_at(err, SR_E_B64_PADDING, at, "base64: data after '=' at offset %lld",
                             (long long)at);
    s->carry[s->ncarry++] = c;
    if (s->ncarry == 4)
        return finish_quad(s, d, o, at, err);
    return 0;
}

/* The OR of p[0 .. n) by position modulo 4: byte j into bits 8 * (j % 4). */
static uint32_t lanes_of(const unsigned char *p, size_t n)
{
    uint32_t a = 0;
    size_t j = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w = 0;
    for (; n - j >= 8; j += 8) {
        uint64_t x;
        memcpy(&x, p + j, 8);
        w |= x;
    }
    a = (uint32_t)w | (uint32_t)(w >> 32);
#endif
    for (; j < n; j++)
        a |= (uint32_t)p[j] << (8 * (j & 3));
    return a;
}

/* Lanes gathered from output position `at` on, moved to the lanes of the stream's positions. */
static uint32_t lanes_at(uint32_t rel, uint64_t at)
{
    unsigned r = 8 * (unsigned)(at & 3);
    return r ? rel << r | rel >> (32 - r) : rel;
}

typedef struct run_result {
    size_t consumed; /* characters taken, excluding a closing quote */
    size_t written;  /* bytes decoded */
    int done;        /* the closing quote was found at src[consumed] */
} run_result;

/* A vector bulk kernel (sr_base64_avx2.h, sr_base64_avx512.h), which one it is, and the
 * alignment of dst that its non-temporal path needs; inv3 is the inverse of 3 modulo that
 * alignment. */
typedef struct vec_kernel {
    size_t (*decode)(unsigned char *dst, const char *src, size_t n, size_t *stop, uint32_t *lanes);
    unsigned align, inv3;
    sr_b64_impl which;
} vec_kernel;

/* The stream's vector kernel, or 0 for the scalar path. The CPU is checked again here, so
 * that a stream set up by hand with an implementation this CPU lacks decodes correctly. */
static int vector_kernel(const sr_b64_stream *s, vec_kernel *k)
{
#if SR_B64_HAVE_AVX512_KERNELS
    if (s->impl == SR_B64_AVX512 && sr_base64_cpu_has_avx512vbmi()) {
        /* 3 * 43 = 1 (mod 64) */
        *k = (vec_kernel){sr_b64_avx512_decode_bulk, 64, 43, SR_B64_AVX512};
        return 1;
    }
#endif
#if SR_B64_HAVE_AVX2_KERNELS
    if ((s->impl == SR_B64_AVX2 || s->impl == SR_B64_AVX512) && sr_base64_cpu_has_avx2()) {
        /* 3 * 11 = 1 (mod 32) */
        *k = (vec_kernel){sr_b64_avx2_decode_bulk, 32, 11, SR_B64_AVX2};
        return 1;
    }
#endif
    (void)s;
    (void)k;
    return 0;
}

sr_b64_impl sr_b64_i_stream_kernel(const sr_b64_stream *s)
{
    vec_kernel k;
    return vector_kernel(s, &k) ? k.which : SR_B64_SCALAR;
}

static int run(sr_b64_stream *s, int quote_mode, unsigned char *dst, const char *src, size_t n,
               run_result *r, sr_err *err)
{
    const unsigned char *u = (const unsigned char *)src;
    vec_kernel k;
    const int vec = vector_kernel(s, &k);
    /* SR_B64_LANES: the bytes each piece below writes, from output offset o0 on. */
    const int want = (s->flags & SR_B64_LANES) != 0;
    uint32_t lanes = 0;
    size_t i = 0, o = 0, o0;
    r->done = 0;
    while (i < n) {
        if (s->ncarry == 0 && !s->closed) {
            int hit = 0;
            if (vec && n - i >= SR_B64_NT_MIN) {
                /* q quads (3q bytes) bring dst to the alignment of the streaming path. */
                size_t q =
                    (size_t)((0 - (uintptr_t)(dst + o)) & (k.align - 1)) * k.inv3 & (k.align - 1);
                size_t c = scalar_decode_bulk(dst + (o0 = o), u + i, q * 4);
                i += c;
                o += c / 4 * 3;
                if (want)
                    lanes |= lanes_at(lanes_of(dst + o0, o - o0), s->written + o0);
            }
            if (vec) {
                uint32_t l = 0;
                size_t stop, c = k.decode(dst + (o0 = o), src + i, n - i, &stop, want ? &l : NULL);
                hit = stop < n - i;
                i += c;
                o += c / 4 * 3;
                lanes |= lanes_at(l, s->written + o0);
            }
            if (!hit) {
                size_t c = scalar_decode_bulk(dst + (o0 = o), u + i, n - i);
                i += c;
                o += c / 4 * 3;
                if (want)
                    lanes |= lanes_at(lanes_of(dst + o0, o - o0), s->written + o0);
            }
            if (i == n)
                break;
        }
        o0 = o;
        int rc = step(s, dst, &o, u[i], (int64_t)(s->pos + i), quote_mode, err);
        if (rc < 0)
            return rc;
        if (want && o != o0) /* a quad completed by the state machine */
            lanes |= lanes_at(lanes_of(dst + o0, o - o0), s->written + o0);
        if (rc > 0) {
            r->done = 1;
            break;
        }
        i++;
    }
    r->consumed = i;
    r->written = o;
    s->lanes |= lanes;
    return 0;
}

int sr_base64_decode(void *dst, size_t *out_len, const char *src, size_t n, sr_b64_impl impl,
                     sr_err *err)
{
    return sr_base64_decode_ex(dst, out_len, src, n, impl, 0, NULL, err);
}

int sr_base64_decode_ex(void *dst, size_t *out_len, const char *src, size_t n, sr_b64_impl impl,
                        unsigned flags, int64_t *noncanon_at, sr_err *err)
{
    if (!out_len || (n && (!dst || !src)))
        return sr_err_set(err, SR_E_INVAL, "base64: NULL argument");
    *out_len = 0;
    if (noncanon_at)
        *noncanon_at = -1;
    sr_b64_stream s;
    sr_b64_stream_init_flags(&s, impl, flags);
    run_result r;
    int rc = run(&s, 0, dst, src, n, &r, err);
    if (rc < 0)
        return rc;
    if (s.ncarry != 0)
        return sr_err_set_at(err, SR_E_B64_LENGTH, (int64_t)n,
                             "base64: encoded length %zu is not a multiple of 4", n);
    *out_len = r.written;
    if (noncanon_at)
        *noncanon_at = s.noncanon_at;
    return 0;
}

/* ---- fused stop-at-quote decoding ---- */

void sr_b64_stream_init(sr_b64_stream *s, sr_b64_impl impl)
{
    sr_b64_stream_init_flags(s, impl, 0);
}

void sr_b64_stream_init_flags(sr_b64_stream *s, sr_b64_impl impl, unsigned flags)
{
    memset(s, 0, sizeof(*s));
    s->impl = sr_base64_resolve(impl);
    s->flags = flags;
    s->noncanon_at = -1;
}

int sr_b64_stream_feed(sr_b64_stream *s, void *dst, size_t *written, const char *src, size_t n,
                       size_t *consumed, int *done, sr_err *err)
{
    if (!s || !written || !consumed || !done || (n && (!dst || !src)))
        return sr_err_set(err, SR_E_INVAL, "base64 stream: NULL argument");
    *consumed = 0;
    *done = 0;
    if (s->closed == STREAM_FINISHED)
        return sr_err_set(err, SR_E_INVAL,
                          "base64 stream: fed after its closing quote or an error");
    run_result r;
    int rc = run(s, 1, dst, src, n, &r, err);
    if (rc < 0) {
        s->closed = STREAM_FINISHED;
        return rc;
    }
    s->pos += r.consumed;
    s->written += r.written;
    *written += r.written;
    *consumed = r.consumed;
    *done = r.done;
    if (r.done)
        s->closed = STREAM_FINISHED;
    return 0;
}

int sr_base64_decode_until_quote(void *dst, size_t *out_len, const char *src, size_t n,
                                 size_t *consumed, int *found, sr_b64_impl impl, sr_err *err)
{
    return sr_base64_decode_until_quote_ex(dst, out_len, src, n, consumed, found, impl, 0, NULL,
                                           err);
}

int sr_base64_decode_until_quote_ex(void *dst, size_t *out_len, const char *src, size_t n,
                                    size_t *consumed, int *found, sr_b64_impl impl, unsigned flags,
                                    int64_t *noncanon_at, sr_err *err)
{
    if (!out_len || !consumed || !found || (n && (!dst || !src)))
        return sr_err_set(err, SR_E_INVAL, "base64: NULL argument");
    *out_len = 0;
    *consumed = 0;
    *found = 0;
    if (noncanon_at)
        *noncanon_at = -1;
    sr_b64_stream s;
    sr_b64_stream_init_flags(&s, impl, flags);
    run_result r;
    int rc = run(&s, 1, dst, src, n, &r, err);
    if (rc < 0)
        return rc;
    *out_len = r.written;
    *consumed = r.consumed;
    *found = r.done;
    if (noncanon_at)
        *noncanon_at = s.noncanon_at;
    return 0;
}
