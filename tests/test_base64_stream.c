/*
 * unit.base64_stream: the streaming stop-at-quote decoder (sr_b64_stream), scalar, AVX2 and
 * AVX-512 VBMI, fed in every chunking and compared with the one-shot fused decoder of the same
 * implementation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64_util.h"
#include "sr_base64.h"
#include "sr_base64_avx2.h"
#include "sr_test.h"

/* The OR of out[0 .. n) by position modulo 4, byte by byte (what SR_B64_LANES gathers). */
static uint32_t ref_lanes(const unsigned char *out, size_t n)
{
    uint32_t a = 0;
    for (size_t i = 0; i < n; i++)
        a |= (uint32_t)out[i] << (8 * (i % 4));
    return a;
}

/* Feeds text in chunks whose sizes cycle through sizes[]; each chunk is copied into its own
 * heap block, so that a sanitizer build catches any read past a chunk. */
static int feed_chunks(unsigned char *out, size_t *olen, size_t *consumed, int *found, int64_t *off,
                       int64_t *note, const char *text, size_t n, sr_b64_impl impl, unsigned flags,
                       const size_t *sizes, size_t nsizes)
{
    sr_b64_stream st;
    sr_b64_stream_init_flags(&st, impl, flags);
    size_t pos = 0, written = 0;
    sr_err err = SR_ERR_INIT;
    *found = 0;
    *off = -1;
    for (size_t i = 0; pos < n || i == 0; i++) {
        size_t c = sizes[i % nsizes];
        c = c < n - pos ? c : n - pos;
        char *chunk = malloc(c ? c : 1);
        memcpy(chunk, text + pos, c);
        size_t cons, before = written, nc = (size_t)st.ncarry;
        int done;
        int rc = sr_b64_stream_feed(&st, out + written, &written, chunk, c, &cons, &done, &err);
        free(chunk);
        if (rc) {
            REQ((err.code) == (rc));
            REQ((written) == (before));
            *off = err.offset;
            return rc;
        }
        REQ((written - before) <= (sr_base64_decoded_max(nc + c)));
        REQ((out[written]) == (0xa5));
        REQ(st.lanes == ((flags & SR_B64_LANES) ? ref_lanes(out, written) : 0));
        pos += cons;
        REQ((st.pos) == (pos));
        REQ((st.written) == (written));
        if (done) {
            *found = 1;
            ck_assert_sr_code(
                sr_b64_stream_feed(&st, out + written, &written, "AAAA", 4, &cons, &done, &err),
                err, SR_E_INVAL);
            break;
        }
        REQ((cons) == (c));
        REQ((st.ncarry) < (4));
    }
    *olen = written;
    *consumed = pos;
    *note = st.noncanon_at;
    return 0;
}

/* Every implementation, lenient (trailing bits noted) and strict (SR_B64_STRICT_BITS), with and
 * without SR_B64_LANES. */
static void check_stream(const char *text, size_t n, const size_t *sizes, size_t nsizes)
{
    static unsigned char want[4096], got[4096];
    for (int k = 0; k < 2 * n_impls(); k++) {
        unsigned flags = (k % 2 ? SR_B64_STRICT_BITS : 0) | ((sizes[0] & 2) ? SR_B64_LANES : 0);
        size_t wlen, wcons, glen = 0, gcons = 0;
        int wfound, gfound;
        int64_t woff, goff, wnote = -2, gnote = -2;
        sr_err err = SR_ERR_INIT;
        int wrc = sr_base64_decode_until_quote_ex(want, &wlen, text, n, &wcons, &wfound,
                                                  k_impls[k / 2], flags, &wnote, &err);
        woff = err.offset;
        memset(got, 0xa5, sizeof(got));
        int grc = feed_chunks(got, &glen, &gcons, &gfound, &goff, &gnote, text, n, k_impls[k / 2],
                              flags, sizes, nsizes);
        REQ_MSG(grc == wrc && goff == woff, "stream %s n=%zu chunk=%zu: %s@%lld vs %s@%lld",
                sr_base64_impl_name(k_impls[k / 2]), n, sizes[0], sr_code_name(grc),
                (long long)goff, sr_code_name(wrc), (long long)woff);
        if (wrc == 0) {
            REQ(gnote == wnote);
            REQ((gfound) == (wfound));
            REQ((gcons) == (wcons));
            REQ((glen) == (wlen));
            REQ(memcmp(got, want, wlen) == 0);
        }
    }
}

/* Texts for the chunking tests: valid, padded, erroneous and unterminated, each with the end
 * of the blob in a different place relative to the 32-character vector blocks. */
static size_t stream_text(char *t, int which, const unsigned char *raw)
{
    size_t n;
    switch (which) {
    case 0: /* valid, closed by a quote, junk after it */
        n = ref_encode(t, raw, 225);
        memcpy(t + n, "\"}, \"x\": 1", 10);
        return n + 10;
    case 1: /* one '=' of padding, then the quote */
    case 2: /* two '=' of padding, then the quote */
        n = ref_encode(t, raw, which == 1 ? 224u : 223u);
        t[n] = '"';
        return n + 1;
    case 3: /* a character error in the middle */
        n = ref_encode(t, raw, 225);
        t[150] = ' ';
        t[n] = '"';
        return n + 1;
    case 4: /* a stray '=' */
        n = ref_encode(t, raw, 225);
        t[77] = '=';
        t[n] = '"';
        return n + 1;
    case 5: /* non-zero trailing bits at the end (an error only when strict) */
        n = ref_encode(t, raw, 222);
        memcpy(t + n, "AR==\"", 5);
        return n + 5;
    case 6: /* unterminated */
        return ref_encode(t, raw, 225) - 1;
    case 7: /* an incomplete quad before the quote */
        n = ref_encode(t, raw, 225);
        t[n - 2] = '"';
        return n;
    case 8: /* data after the padding */
        n = ref_encode(t, raw, 224);
        memcpy(t + n, "AAAA\"", 5);
        return n + 5;
    default: /* the quote first */
        t[0] = '"';
        return 1 + ref_encode(t + 1, raw, 30);
    }
}

START_TEST(test_stream_every_chunk_size)
{
    static unsigned char raw[300];
    static char text[512];
    uint64_t seed = 31337;
    fill_random(raw, sizeof(raw), &seed);
    for (int which = 0; which < 10; which++) {
        size_t n = stream_text(text, which, raw);
        for (size_t c = 1; c <= 70; c++)
            check_stream(text, n, &c, 1);
        for (int r = 0; r < 200; r++) {
            size_t sizes[16];
            for (int j = 0; j < 16; j++)
                sizes[j] = (size_t)(rnd(&seed) % (r % 2 ? 9 : 81));
            sizes[0] |= 1;
            check_stream(text, n, sizes, 16);
        }
    }
}
END_TEST

/*
 * SR_B64_LANES against the byte-by-byte OR of the output, after every feed (feed_chunks): blobs
 * of every length class whose bytes are zero but for a few single bits, so that every lane's OR
 * differs and a byte counted in the wrong lane (a feed or a vector block starting at an output
 * offset that is not a multiple of 4, the AVX2 groups, single blocks, the scalar tail, a padded
 * quad) changes the result. Chunks of up to 700 characters reach the four-block groups.
 */
START_TEST(test_stream_lanes_sparse_bits)
{
    static unsigned char raw[2400];
    static char text[3300];
    uint64_t seed = 0x1a4e5;
    for (int r = 0; r < 3000; r++) {
        size_t len = (size_t)(rnd(&seed) % (r % 3 ? 400 : 2400));
        memset(raw, 0, sizeof(raw));
        for (int b = 0; len && b < 3; b++)
            raw[rnd(&seed) % len] |= (unsigned char)(1u << (rnd(&seed) % 8));
        size_t n = ref_encode(text, raw, len);
        text[n++] = '"';
        size_t sizes[8];
        for (int j = 0; j < 8; j++)
            sizes[j] = 1 + (size_t)(rnd(&seed) % (r % 2 ? 700 : 37));
        sizes[0] |= 2; /* check_stream: with SR_B64_LANES */
        check_stream(text, n, sizes, 8);
    }
}
END_TEST

/* The lanes on the non-temporal path of the vector kernels (one feed of SR_B64_NT_MIN characters
 * or more; the decoder aligns the output for it): a few single bits, each in a different lane and
 * deep in the text, must each show in their lane, with the AVX2 and the AVX-512 VBMI kernels. */
START_TEST(test_stream_lanes_non_temporal)
{
    size_t len = (SR_B64_NT_MIN / 4) * 3 + 3 * 1000;
    unsigned char *raw = calloc(len, 1);
    char *text = malloc(len / 3 * 4 + 8);
    unsigned char *out = aligned_alloc(64, (len + 128 + 63) / 64 * 64); /* a multiple of 64 */
    ck_assert(raw && text && out);
    uint64_t seed = 0x7e57;
    for (int r = 0; r < 4 * (n_impls() - 1); r++) {
        memset(raw, 0, len);
        size_t at[4];
        for (int lane = 0; lane < 4; lane++) {
            at[lane] = (size_t)(rnd(&seed) % (len / 4 - 1)) * 4 + (size_t)lane;
            raw[at[lane]] |= (unsigned char)(1u << ((r + lane) % 8));
        }
        size_t n = ref_encode(text, raw, len);
        text[n++] = '"';
        sr_b64_stream st;
        sr_b64_stream_init_flags(&st, k_impls[1 + r / 4], SR_B64_LANES);
        size_t written = 0, cons;
        int done;
        sr_err err = SR_ERR_INIT;
        REQ_OK(sr_b64_stream_feed(&st, out, &written, text, n, &cons, &done, &err), err);
        REQ(done && written == len);
        REQ(memcmp(out, raw, len) == 0);
        uint32_t want = 0;
        for (int lane = 0; lane < 4; lane++)
            want |= (uint32_t)raw[at[lane]] << (8 * lane);
        ck_assert_uint_eq(st.lanes, want);
    }
    free(raw);
    free(text);
    free(out);
}
END_TEST

START_TEST(test_stream_padded_quad_at_chunk_end)
{
    static const size_t two = 4;
    check_stream("AQ==\"xyz", 8, &two, 1);
    check_stream("AQ==A\"", 6, &two, 1);
    check_stream("AQ==", 4, &two, 1);
    for (int k = 0; k < n_impls(); k++) {
        sr_b64_stream st;
        unsigned char out[16];
        size_t w = 0, cons;
        int done;
        sr_err err = SR_ERR_INIT;
        sr_b64_stream_init(&st, k_impls[k]);
        REQ((st.impl) == (sr_base64_resolve(k_impls[k])));
        REQ_OK(sr_b64_stream_feed(&st, out, &w, "AQ=", 3, &cons, &done, &err), err);
        REQ(cons == 3 && !done && w == 0 && st.ncarry == 3);
        REQ_OK(sr_b64_stream_feed(&st, out + w, &w, "=", 1, &cons, &done, &err), err);
        REQ(cons == 1 && !done && w == 1 && out[0] == 1 && st.closed);
        REQ_OK(sr_b64_stream_feed(&st, out + w, &w, "", 0, &cons, &done, &err), err);
        REQ(cons == 0 && !done);
        REQ_OK(sr_b64_stream_feed(&st, out + w, &w, "\"rest", 5, &cons, &done, &err), err);
        REQ(cons == 0 && done && w == 1);
        sr_b64_stream_init(&st, k_impls[k]);
        w = 0;
        REQ_OK(sr_b64_stream_feed(&st, out, &w, "AAAAAQ==", 8, &cons, &done, &err), err);
        ck_assert_sr_code(sr_b64_stream_feed(&st, out + w, &w, "AAAA", 4, &cons, &done, &err), err,
                          SR_E_B64_PADDING);
        REQ((err.offset) == (8));
    }
}
END_TEST

/* Inputs above 8 MiB take the vector kernels' non-temporal stores, after aligning dst. */
START_TEST(test_large_text)
{
    const size_t rawn = ((size_t)8 << 20) + 2;
    const size_t n = sr_base64_encoded_len(rawn);
    unsigned char *raw = malloc(rawn), *dec = malloc(sr_base64_decoded_max(n) + 64);
    char *text = malloc(n + 1), *enc = malloc(n + 64);
    uint64_t seed = 2718;
    sr_err err = SR_ERR_INIT;
    fill_random(raw, rawn, &seed);
    REQ(ref_encode(text, raw, rawn) == n);
    for (int k = 0; k < n_impls(); k++) {
        const sr_b64_impl impl = k_impls[k];
        static const size_t offs[] = {0, 1, 4, 8, 12, 19, 20, 28, 31};
        for (size_t j = 0; j < sizeof(offs) / sizeof(offs[0]); j++) {
            const size_t d = offs[j];
            memset(enc, '#', n + 64);
            REQ(sr_base64_encode(enc + d, raw, rawn, impl) == n);
            REQ(memcmp(enc + d, text, n) == 0 && enc[d + n] == '#' && (!d || enc[d - 1] == '#'));
            memset(dec, 0xa5, sr_base64_decoded_max(n) + 64);
            size_t len;
            REQ_OK(sr_base64_decode(dec + d, &len, text, n, impl, &err), err);
            REQ(len == rawn && memcmp(dec + d, raw, rawn) == 0);
            REQ(dec[d + len] == 0xa5 && (!d || dec[d - 1] == 0xa5));
        }
        const size_t at[] = {0, 5, 4097, n / 2, n / 2 + 1, n / 2 + 64, n / 2 + 127, n - 200, n - 3};
        for (size_t j = 0; j < sizeof(at) / sizeof(at[0]); j++) {
            size_t len, cons;
            int found;
            char save = text[at[j]];
            text[at[j]] = '-';
            ck_assert_sr_code(sr_base64_decode(dec, &len, text, n, impl, &err), err, SR_E_B64_CHAR);
            REQ(err.offset == (int64_t)at[j]);
            text[at[j]] = '"';
            int rc = sr_base64_decode_until_quote(dec, &len, text, n, &cons, &found, impl, &err);
            if (at[j] % 4) {
                ck_assert_sr_code(rc, err, SR_E_B64_LENGTH);
                REQ(err.offset == (int64_t)at[j]);
            } else {
                REQ_OK(rc, err);
                REQ(found && cons == at[j] && len == at[j] / 4 * 3);
                REQ(memcmp(dec, raw, len) == 0);
            }
            text[at[j]] = save;
        }
    }
    free(raw);
    free(dec);
    free(text);
    free(enc);
}
END_TEST

int main(void)
{
    note_missing_impls("unit.base64_stream");
    Suite *s = suite_create("base64_stream");
    TCase *tc = tcase_create("stream");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_stream_every_chunk_size);
    tcase_add_test(tc, test_stream_padded_quad_at_chunk_end);
    tcase_add_test(tc, test_stream_lanes_sparse_bits);
    tcase_add_test(tc, test_stream_lanes_non_temporal);
    tcase_add_test(tc, test_large_text);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
