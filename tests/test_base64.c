/*
 * unit.base64: strict RFC 4648 base64, scalar, AVX2 and AVX-512 VBMI, plain and fused
 * stop-at-quote decoding.
 * Every result is checked against a small reference decoder written here from the rules in
 * sr_base64.h, and the implementations against each other. The streaming decoder is in
 * test_base64_stream.c.
 */
#include <stdint.h>
#include <string.h>

#include "base64_util.h"
#include "sr_base64.h"
#include "sr_base64_priv.h"
#include "sr_test.h"

#define MAXN 4096

/* ---- reference implementation (slow, written straight from the rules) ---- */

static int ref_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Returns the code and sets *off; *olen is the number of bytes decoded before any error. Non-zero
 * trailing bits are an error with SR_B64_STRICT_BITS, else dropped with *note at their offset. */
static int ref_decode_flags(unsigned char *out, size_t *olen, const char *s, size_t n, int64_t *off,
                            unsigned flags, int64_t *note)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    *olen = 0;
    *off = -1;
    *note = -1;
    for (size_t i = 0; i < n; i += 4) {
        for (size_t j = 0; j < 4 && i + j < n; j++) {
            unsigned char c = u[i + j];
            *off = (int64_t)(i + j);
            if (ref_val(c) < 0 && c != '=')
                return SR_E_B64_CHAR;
            if (i > 0 && u[i - 1] == '=')
                return SR_E_B64_PADDING;
            if (c == '=' && j < 2)
                return SR_E_B64_PADDING;
            if (j == 3 && u[i + 2] == '=' && c != '=')
                return SR_E_B64_PADDING;
        }
        if (n - i < 4) {
            *off = (int64_t)n;
            return SR_E_B64_LENGTH;
        }
        int v[4];
        for (int j = 0; j < 4; j++)
            v[j] = u[i + j] == '=' ? 0 : ref_val(u[i + j]);
        int npad = (u[i + 2] == '=') + (u[i + 3] == '=');
        if ((npad == 2 && (v[1] & 15)) || (npad == 1 && (v[2] & 3))) {
            *off = (int64_t)(i + 3 - npad);
            if (flags & SR_B64_STRICT_BITS)
                return SR_E_B64_PADDING;
            *note = *off;
            *off = -1;
        }
        uint32_t x = (uint32_t)(v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3]);
        unsigned char b[3] = {(unsigned char)(x >> 16), (unsigned char)(x >> 8), (unsigned char)x};
        memcpy(out + o, b, (size_t)(3 - npad));
        o += (size_t)(3 - npad);
        *olen = o;
    }
    *off = -1;
    return 0;
}

/* The fused decoder's expected result, from ref_decode_flags on the text before the quote. */
static int ref_until_quote(unsigned char *out, size_t *olen, const char *s, size_t n,
                           size_t *consumed, int *found, int64_t *off, unsigned flags,
                           int64_t *note)
{
    const char *q = memchr(s, '"', n);
    size_t k = q ? (size_t)(q - s) : n;
    int rc = ref_decode_flags(out, olen, s, k, off, flags, note);
    *found = q != NULL;
    *consumed = k;
    if (!q && rc == SR_E_B64_LENGTH) {
        *off = -1;
        rc = 0;
    }
    return rc;
}

/* ---- helpers that run one implementation and compare with the reference ---- */

/* 1 if got[from, to) still holds the 0xa5 the caller filled it with: a decoder writes nothing
 * past its decoded bytes (sr_base64.h), though its stores may be 32 bytes wide. */
static int untouched(const unsigned char *got, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (got[i] != 0xa5)
            return 0;
    return 1;
}

static void check_decode(const char *s, size_t n, sr_b64_impl impl, unsigned flags)
{
    static unsigned char want[MAXN], got[MAXN + 3];
    size_t wlen, glen;
    int64_t woff, wnote, gnote = -2;
    sr_err err = SR_ERR_INIT;
    REQ((n) <= (MAXN));
    int wrc = ref_decode_flags(want, &wlen, s, n, &woff, flags, &wnote);
    memset(got, 0xa5, sr_base64_decoded_max(n));
    int rc = sr_base64_decode_ex(got, &glen, s, n, impl, flags, &gnote, &err);
    REQ_MSG(rc == wrc && err.code == wrc, "%s n=%zu flags %u: want %s got %s (%s)",
            sr_base64_impl_name(impl), n, flags, sr_code_name(wrc), sr_code_name(rc), err.msg);
    REQ_MSG(err.offset == woff, "%s n=%zu %s: offset want %lld got %lld", sr_base64_impl_name(impl),
            n, sr_code_name(wrc), (long long)woff, (long long)err.offset);
    if (wrc == 0) {
        REQ_MSG(gnote == wnote, "%s n=%zu: note want %lld got %lld", sr_base64_impl_name(impl), n,
                (long long)wnote, (long long)gnote);
        REQ((glen) == (wlen));
        REQ(memcmp(got, want, wlen) == 0);
        REQ_MSG(untouched(got, glen, sr_base64_decoded_max(n)), "%s n=%zu: wrote past %zu bytes",
                sr_base64_impl_name(impl), n, glen);
        if (flags == 0) { /* the plain entry point is the lenient one */
            size_t plen;
            REQ_OK(sr_base64_decode(got, &plen, s, n, impl, &err), err);
            REQ(plen == wlen && memcmp(got, want, wlen) == 0);
        }
    } else {
        REQ(gnote == -1);
    }
}

static void check_fused(const char *s, size_t n, sr_b64_impl impl, unsigned flags)
{
    static unsigned char want[MAXN], got[MAXN + 3];
    size_t wlen, glen, wcons, gcons;
    int wfound, gfound;
    int64_t woff, wnote, gnote = -2;
    sr_err err = SR_ERR_INIT;
    int wrc = ref_until_quote(want, &wlen, s, n, &wcons, &wfound, &woff, flags, &wnote);
    memset(got, 0xa5, sr_base64_decoded_max(n));
    int rc = sr_base64_decode_until_quote_ex(got, &glen, s, n, &gcons, &gfound, impl, flags, &gnote,
                                             &err);
    REQ_MSG(rc == wrc && err.code == wrc && err.offset == woff,
            "fused %s n=%zu: want %s@%lld got %s@%lld (%s)", sr_base64_impl_name(impl), n,
            sr_code_name(wrc), (long long)woff, sr_code_name(rc), (long long)err.offset, err.msg);
    if (wrc == 0) {
        REQ((gfound) == (wfound));
        REQ((gcons) == (wcons));
        REQ((glen) == (wlen));
        REQ(gnote == wnote);
        REQ(memcmp(got, want, wlen) == 0);
        REQ_MSG(untouched(got, glen, sr_base64_decoded_max(n)),
                "fused %s n=%zu: wrote past %zu bytes", sr_base64_impl_name(impl), n, glen);
    }
}

/* Every implementation, lenient and strict about trailing bits. */
static void check_all(const char *s, size_t n)
{
    for (int k = 0; k < n_impls(); k++) {
        for (unsigned flags = 0; flags <= SR_B64_STRICT_BITS; flags += SR_B64_STRICT_BITS) {
            check_decode(s, n, k_impls[k], flags);
            check_fused(s, n, k_impls[k], flags);
        }
    }
}

/* ---- known vectors ---- */

static void check_vector(const void *raw, size_t n, const char *text)
{
    char enc[64];
    unsigned char dec[64];
    size_t len;
    sr_err err = SR_ERR_INIT;
    for (int k = 0; k < n_impls(); k++) {
        REQ((sr_base64_encode(enc, raw, n, k_impls[k])) == (strlen(text)));
        REQ(memcmp(enc, text, strlen(text)) == 0);
        REQ_OK(sr_base64_decode(dec, &len, text, strlen(text), k_impls[k], &err), err);
        REQ((len) == (n));
        REQ(memcmp(dec, raw, n) == 0);
    }
}

START_TEST(test_rfc4648_vectors)
{
    check_vector("", 0, "");
    check_vector("f", 1, "Zg==");
    check_vector("fo", 2, "Zm8=");
    check_vector("foo", 3, "Zm9v");
    check_vector("foob", 4, "Zm9vYg==");
    check_vector("fooba", 5, "Zm9vYmE=");
    check_vector("foobar", 6, "Zm9vYmFy");
}
END_TEST

START_TEST(test_contract_vectors)
{
    unsigned char b[12];
    for (int i = 0; i < 12; i++)
        b[i] = (unsigned char)i;
    check_vector(b, 12, "AAECAwQFBgcICQoL");
    check_vector("\x01\x02\x03", 3, "AQID");
    check_vector("\x01", 1, "AQ==");
    check_vector("\x00\x00\x00\x01", 4, "AAAAAQ==");
    check_vector("\x00\x00\x00\x00\x00\x80\x00\x00", 8, "AAAAAACAAAA=");
    check_vector("\xff\xfe\xfb\xef", 4, "//777w==");
}
END_TEST

START_TEST(test_sizes_and_dispatch)
{
    REQ((sr_base64_encoded_len(0)) == (0));
    REQ((sr_base64_encoded_len(1)) == (4));
    REQ((sr_base64_encoded_len(3)) == (4));
    REQ((sr_base64_encoded_len(4)) == (8));
    REQ((sr_base64_encoded_len(90u << 20)) == (120u << 20));
    REQ((sr_base64_decoded_max(0)) == (3));
    REQ((sr_base64_decoded_max(8)) == (9));
    REQ((sr_base64_decoded_max(11)) == (9));
    REQ((sr_base64_resolve(SR_B64_SCALAR)) == (SR_B64_SCALAR));
    ck_assert_str_eq(sr_base64_impl_name(SR_B64_SCALAR), "scalar");
    /* AUTO and a forced AVX512 take the best the CPU has; a forced AVX2 never goes up. */
    const int vbmi = sr_base64_cpu_has_avx512vbmi(), avx2 = sr_base64_cpu_has_avx2();
    REQ(!vbmi || avx2);
    const sr_b64_impl best = vbmi ? SR_B64_AVX512 : avx2 ? SR_B64_AVX2 : SR_B64_SCALAR;
    const char *best_name = vbmi ? "avx512vbmi" : avx2 ? "avx2" : "scalar";
    REQ((sr_base64_resolve(SR_B64_AUTO)) == (best));
    REQ((sr_base64_resolve(SR_B64_AVX512)) == (best));
    REQ((sr_base64_resolve(SR_B64_AVX2)) == (avx2 ? SR_B64_AVX2 : SR_B64_SCALAR));
    ck_assert_str_eq(sr_base64_impl_name(SR_B64_AUTO), best_name);
    ck_assert_str_eq(sr_base64_impl_name(SR_B64_AVX512), best_name);
    ck_assert_str_eq(sr_base64_impl_name(SR_B64_AVX2), avx2 ? "avx2" : "scalar");
    sr_b64_stream st;
    sr_b64_stream_init(&st, SR_B64_AUTO);
    REQ((st.impl) == (best));
    REQ((sr_b64_i_stream_kernel(&st)) == (best));
    /* Each implementation this CPU has runs its own kernel: their results are the same by design,
     * so the suites' comparisons would pass even if the dispatch ran another. */
    for (int k = 0; k < n_impls(); k++) {
        sr_b64_stream_init(&st, k_impls[k]);
        REQ_MSG(sr_b64_i_stream_kernel(&st) == k_impls[k], "%s runs kernel %d",
                sr_base64_impl_name(k_impls[k]), (int)sr_b64_i_stream_kernel(&st));
    }
}
END_TEST

/* ---- agreement on random data ---- */

START_TEST(test_roundtrip_every_length)
{
    static unsigned char raw[2048], dec[2048 + 3];
    static char want[2736 + 1], got[2736 + 1];
    uint64_t seed = 0x9e3779b97f4a7c15u;
    sr_err err = SR_ERR_INIT;
    for (size_t n = 0; n <= 2048; n++) {
        fill_random(raw, n, &seed);
        size_t wn = ref_encode(want, raw, n);
        for (int k = 0; k < n_impls(); k++) {
            memset(got, '#', sizeof(got));
            REQ((sr_base64_encode(got, raw, n, k_impls[k])) == (wn));
            REQ_MSG(memcmp(got, want, wn) == 0 && got[wn] == '#', "encode %s n=%zu",
                    sr_base64_impl_name(k_impls[k]), n);
            size_t len;
            REQ_OK(sr_base64_decode(dec, &len, got, wn, k_impls[k], &err), err);
            REQ((len) == (n));
            REQ(memcmp(dec, raw, n) == 0);
        }
        /* The same text with a closing quote and junk after it, and every truncation. */
        want[wn] = '"';
        check_all(want, wn + 1);
        check_all(want, wn - (wn > 0));
    }
}
END_TEST

START_TEST(test_invalid_byte_every_position)
{
    static const unsigned char kinds[] = {' ', '\n', '-', '_', '\\', '\0', 0x80, '=', 0xff, '"'};
    static char text[512];
    static unsigned char raw[512];
    uint64_t seed = 12345;
    fill_random(raw, sizeof(raw), &seed);
    ref_encode(text, raw, 300);
    for (size_t n = 1; n <= 304; n++) {
        for (size_t p = 0; p < n; p++) {
            for (size_t k = 0; k < sizeof(kinds); k++) {
                char save = text[p];
                text[p] = (char)kinds[k];
                check_all(text, n);
                text[p] = save;
            }
        }
    }
    /* The reference is only trusted because of spot checks like these. */
    sr_err err = SR_ERR_INIT;
    unsigned char out[16];
    size_t len;
    ck_assert_sr_code(sr_base64_decode(out, &len, "AAAA AAA", 8, SR_B64_AUTO, &err), err,
                      SR_E_B64_CHAR);
    REQ((err.offset) == (4));
    ck_assert_sr_code(sr_base64_decode(out, &len, "AA=AAAAA", 8, SR_B64_AUTO, &err), err,
                      SR_E_B64_PADDING);
    REQ((err.offset) == (3));
}
END_TEST

/* Every byte value outside the alphabet (and '=', '"') at positions in both 16-byte lanes of a
 * block, in the four-block groups of the AVX2 kernel (the first 128 characters), in its single
 * blocks after them and in the scalar tail: the validity lookup has no row to spare. */
START_TEST(test_every_byte_value_in_every_lane)
{
    static char text[200];
    static unsigned char raw[150];
    static const size_t at[] = {0,   7,   15,  16,  24,  31,  32,  47,  48,  96, 112,
                                127, 128, 143, 144, 159, 160, 175, 176, 191, 199};
    uint64_t seed = 0xB64;
    fill_random(raw, sizeof(raw), &seed);
    ref_encode(text, raw, sizeof(raw));
    for (int c = 0; c < 256; c++) {
        for (size_t j = 0; j < sizeof(at) / sizeof(at[0]); j++) {
            char save = text[at[j]];
            text[at[j]] = (char)c;
            check_all(text, sizeof(text));
            text[at[j]] = save;
        }
    }
}
END_TEST

START_TEST(test_invalid_byte_long_text)
{
    static char text[2100];
    static unsigned char raw[1575];
    uint64_t seed = 777;
    fill_random(raw, sizeof(raw), &seed);
    ref_encode(text, raw, sizeof(raw));
    for (size_t p = 0; p < 2100; p += 7) {
        char save = text[p];
        text[p] = (p & 8) ? '\n' : '=';
        check_all(text, 2100);
        text[p] = save;
    }
}
END_TEST

START_TEST(test_misaligned_pointers)
{
    static unsigned char raw[300 + 32], dec[400 + 32 + 16];
    static char enc[400 + 32 + 16];
    uint64_t seed = 4242;
    sr_err err = SR_ERR_INIT;
    const size_t n = 257;
    for (int k = 0; k < n_impls(); k++) {
        for (size_t so = 0; so < 32; so++) {
            for (size_t d = 0; d < 32; d++) {
                fill_random(raw + so, n, &seed);
                memset(enc, '#', sizeof(enc));
                size_t en = sr_base64_encode(enc + d, raw + so, n, k_impls[k]);
                REQ((en) == (344));
                REQ(enc[d + en] == '#' && (d == 0 || enc[d - 1] == '#'));
                memset(dec, 0xa5, sizeof(dec));
                size_t len;
                REQ_OK(sr_base64_decode(dec + so, &len, enc + d, en, k_impls[k], &err), err);
                REQ((len) == (n));
                REQ(memcmp(dec + so, raw + so, n) == 0);
                /* Nothing is written outside the decoded bytes. */
                for (size_t i = so + n; i < sizeof(dec); i++)
                    REQ((dec[i]) == (0xa5));
                for (size_t i = 0; i < so; i++)
                    REQ((dec[i]) == (0xa5));
            }
        }
    }
}
END_TEST

/* `code`@`offset` is the strict result (SR_B64_STRICT_BITS); lenient decoding (the default,
 * pybase64 validate=True) gives the same except where `note` >= 0: there the strict error is
 * the trailing bits at `note`, and lenient decoding succeeds with that note. */
typedef struct pad_case {
    const char *text;
    int code;
    int64_t offset;
    int64_t note;
} pad_case;

START_TEST(test_padding_rules)
{
    static const pad_case cases[] = {
        {"A===", SR_E_B64_PADDING, 1, -1},
        {"AB=C", SR_E_B64_PADDING, 3, -1},
        {"AR==", SR_E_B64_PADDING, 1, 1},
        {"AB==", SR_E_B64_PADDING, 1, 1},
        {"AQ==", 0, -1, -1},
        {"AAA=", 0, -1, -1},
        {"AAB=", SR_E_B64_PADDING, 2, 2},
        {"====", SR_E_B64_PADDING, 0, -1},
        {"=AAA", SR_E_B64_PADDING, 0, -1},
        {"AA==AAAA", SR_E_B64_PADDING, 4, -1},
        {"AA===", SR_E_B64_PADDING, 4, -1},
        {"AA== ", SR_E_B64_CHAR, 4, -1},
        {"AA=", SR_E_B64_LENGTH, 3, -1},
        {"AAAAA", SR_E_B64_LENGTH, 5, -1},
        {"AAAA=", SR_E_B64_PADDING, 4, -1},
        {"AAA=AAAA", SR_E_B64_PADDING, 4, -1},
        {"AA=A", SR_E_B64_PADDING, 3, -1},
        {"AA= ", SR_E_B64_CHAR, 3, -1},
        {"A", SR_E_B64_LENGTH, 1, -1},
        {"AAA\"", SR_E_B64_CHAR, 3, -1},
        {"AAAAAAA=", 0, -1, -1},
        {"AR=A", SR_E_B64_PADDING, 3, -1},
        {"AAAA AAA", SR_E_B64_CHAR, 4, -1},
        {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAR==", SR_E_B64_PADDING,
         65, 65},
        {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=AAA", SR_E_B64_PADDING, 40, -1},
        {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQ==AAAA",
         SR_E_B64_PADDING, 68, -1},
        /* Rows the mutation run asked for (tests/mutants/mutants.json; AAA=AAAA is above): a quad
         * ending in one '=' followed by a whole quad and '=' in position 2 before data, after a
         * clean quad so that the offsets are past the first quad, and '=' in position 2 alone. */
        {"AQIDAAA=AAAA", SR_E_B64_PADDING, 8, -1},
        {"A=AA", SR_E_B64_PADDING, 1, -1},
        {"AQIDA=AA", SR_E_B64_PADDING, 5, -1},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *t = cases[c].text;
        for (int k = 0; k < n_impls(); k++) {
            unsigned char out[80];
            size_t len;
            int64_t note = -2;
            sr_err err = SR_ERR_INIT;
            int rc = sr_base64_decode_ex(out, &len, t, strlen(t), k_impls[k], SR_B64_STRICT_BITS,
                                         &note, &err);
            REQ_MSG(rc == cases[c].code && err.offset == cases[c].offset,
                    "strict \"%s\" %s: want %s@%lld got %s@%lld", t,
                    sr_base64_impl_name(k_impls[k]), sr_code_name(cases[c].code),
                    (long long)cases[c].offset, sr_code_name(rc), (long long)err.offset);
            if (rc)
                ck_assert_sr_code(rc, err, cases[c].code);
            int lcode = cases[c].note >= 0 ? 0 : cases[c].code;
            int64_t loff = cases[c].note >= 0 ? -1 : cases[c].offset;
            err = (sr_err)SR_ERR_INIT;
            rc = sr_base64_decode_ex(out, &len, t, strlen(t), k_impls[k], 0, &note, &err);
            REQ_MSG(rc == lcode && err.offset == loff && (rc || note == cases[c].note),
                    "lenient \"%s\" %s: want %s@%lld note %lld got %s@%lld note %lld", t,
                    sr_base64_impl_name(k_impls[k]), sr_code_name(lcode), (long long)loff,
                    (long long)cases[c].note, sr_code_name(rc), (long long)err.offset,
                    (long long)note);
            if (rc)
                ck_assert_sr_code(rc, err, lcode);
        }
        check_all(t, strlen(t));
    }
    /* The trailing bits are dropped, as pybase64 does: "AR==" is the byte 0x01, "AAB=" 00 00. */
    unsigned char out[8];
    size_t len;
    int64_t note;
    sr_err err = SR_ERR_INIT;
    REQ_OK(sr_base64_decode_ex(out, &len, "AR==", 4, SR_B64_AUTO, 0, &note, &err), err);
    ck_assert(len == 1 && out[0] == 0x01 && note == 1);
    REQ_OK(sr_base64_decode_ex(out, &len, "AAB=", 4, SR_B64_AUTO, 0, &note, &err), err);
    ck_assert(len == 2 && out[0] == 0 && out[1] == 0 && note == 2);
}
END_TEST

START_TEST(test_null_arguments)
{
    sr_err err = SR_ERR_INIT;
    unsigned char out[8];
    size_t len, cons;
    int found;
    ck_assert_sr_code(sr_base64_decode(out, NULL, "AAAA", 4, SR_B64_AUTO, &err), err, SR_E_INVAL);
    ck_assert_sr_code(sr_base64_decode(NULL, &len, "AAAA", 4, SR_B64_AUTO, &err), err, SR_E_INVAL);
    REQ_OK(sr_base64_decode(NULL, &len, NULL, 0, SR_B64_AUTO, &err), err);
    REQ((len) == (0));
    ck_assert_sr_code(
        sr_base64_decode_until_quote(out, &len, NULL, 4, &cons, &found, SR_B64_AUTO, &err), err,
        SR_E_INVAL);
    REQ((sr_base64_encode(NULL, NULL, 0, SR_B64_AUTO)) == (0));
}
END_TEST

/* ---- fused stop-at-quote decoding ---- */

static void fused_expect(const char *t, size_t n, int found, size_t consumed, const void *bytes,
                         size_t len)
{
    for (int k = 0; k < n_impls(); k++) {
        unsigned char out[512];
        size_t olen, cons;
        int fnd;
        sr_err err = SR_ERR_INIT;
        REQ_OK(sr_base64_decode_until_quote(out, &olen, t, n, &cons, &fnd, k_impls[k], &err), err);
        REQ((fnd) == (found));
        REQ((cons) == (consumed));
        REQ((olen) == (len));
        REQ(memcmp(out, bytes, len) == 0);
    }
}

START_TEST(test_fused_basics)
{
    fused_expect("AQID\"rest", 9, 1, 4, "\x01\x02\x03", 3);
    fused_expect("AQ==\"", 5, 1, 4, "\x01", 1);
    fused_expect("\"AQID", 5, 1, 0, "", 0);
    fused_expect("", 0, 0, 0, "", 0);
    fused_expect("AQIDAQ", 6, 0, 6, "\x01\x02\x03", 3);
    fused_expect("AQIDAQ=", 7, 0, 7, "\x01\x02\x03", 3);
    for (int k = 0; k < n_impls(); k++) {
        unsigned char out[16];
        size_t olen, cons;
        int fnd;
        sr_err err = SR_ERR_INIT;
        int rc =
            sr_base64_decode_until_quote(out, &olen, "AQIDA\"", 6, &cons, &fnd, k_impls[k], &err);
        ck_assert_sr_code(rc, err, SR_E_B64_LENGTH);
        REQ((err.offset) == (5));
        rc = sr_base64_decode_until_quote(out, &olen, "AQ==A\"", 6, &cons, &fnd, k_impls[k], &err);
        ck_assert_sr_code(rc, err, SR_E_B64_PADDING);
        REQ((err.offset) == (4));
        rc = sr_base64_decode_until_quote(out, &olen, "AQ==\n\"", 6, &cons, &fnd, k_impls[k], &err);
        ck_assert_sr_code(rc, err, SR_E_B64_CHAR);
        REQ((err.offset) == (4));
    }
}
END_TEST

START_TEST(test_fused_quote_every_position)
{
    static unsigned char raw[150];
    static char text[256], s[256];
    uint64_t seed = 99;
    fill_random(raw, sizeof(raw), &seed);
    for (size_t rawn = 148; rawn <= 150; rawn++) {
        size_t n = ref_encode(text, raw, rawn);
        for (size_t p = 0; p <= n; p++) {
            memcpy(s, text, p);
            s[p] = '"';
            memcpy(s + p + 1, text + p, n - p);
            check_all(s, n + 1);
            if (p % 4 == 0) {
                unsigned char want[150];
                size_t wlen;
                int64_t off, note;
                REQ((ref_decode_flags(want, &wlen, text, p, &off, SR_B64_STRICT_BITS, &note)) ==
                    (0));
                fused_expect(s, n + 1, 1, p, want, wlen);
            }
        }
        /* Unterminated: every prefix, complete quads decoded, the rest carried. */
        for (size_t p = 0; p <= n; p++)
            check_all(text, p);
    }
}
END_TEST

int main(void)
{
    note_missing_impls("unit.base64");
    Suite *s = suite_create("base64");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_rfc4648_vectors);
    tcase_add_test(tc, test_contract_vectors);
    tcase_add_test(tc, test_sizes_and_dispatch);
    tcase_add_test(tc, test_roundtrip_every_length);
    tcase_add_test(tc, test_invalid_byte_every_position);
    tcase_add_test(tc, test_invalid_byte_long_text);
    tcase_add_test(tc, test_every_byte_value_in_every_lane);
    tcase_add_test(tc, test_misaligned_pointers);
    tcase_add_test(tc, test_padding_rules);
    tcase_add_test(tc, test_null_arguments);
    tcase_add_test(tc, test_fused_basics);
    tcase_add_test(tc, test_fused_quote_every_position);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
