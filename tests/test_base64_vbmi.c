/*
 * unit.base64_vbmi: the AVX-512 VBMI implementation (SR_B64_AVX512) against the scalar one, byte
 * for byte and error for error (code and offset), where its own structure could go wrong: the
 * 64-character blocks, the groups of four checked once, the masked load of the last n % 64
 * characters, every misalignment of input and output, the lanes it gathers from its registers,
 * and feeds split anywhere. unit.base64 and unit.base64_stream run it beside the others against
 * the reference decoder. On a CPU without AVX-512 VBMI (or under valgrind) the suite prints a
 * note and checks nothing else.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64_util.h"
#include "sr_base64.h"
#include "sr_test.h"

#define MAXT 2100 /* longest text */
#define PAD  128  /* room for misalignment and canaries around a buffer */

static int is_alpha(unsigned char c)
{
    return memchr(k_alpha, c, 64) != NULL;
}

/* One decode's observable result. */
typedef struct outcome {
    int rc;
    int64_t off, note;
    size_t len, cons;
    int found;
} outcome;

/* Runs the plain (fused = 0) or the stop-at-quote (fused = 1) decoder with `flags` on s[0, n),
 * writing at buf + mis of a buffer filled with 0xa5. */
static outcome run_one(unsigned char *buf, size_t mis, const char *s, size_t n, sr_b64_impl impl,
                       unsigned flags, int fused)
{
    outcome o = {0, -1, -2, 0, 0, 0};
    sr_err err = SR_ERR_INIT;
    memset(buf, 0xa5, MAXT + 2 * PAD);
    if (fused)
        o.rc = sr_base64_decode_until_quote_ex(buf + mis, &o.len, s, n, &o.cons, &o.found, impl,
                                               flags, &o.note, &err);
    else
        o.rc = sr_base64_decode_ex(buf + mis, &o.len, s, n, impl, flags, &o.note, &err);
    REQ(o.rc == err.code);
    o.off = err.offset;
    return o;
}

/* AVX512 against scalar on s[0, n), output at `mis`: same code, offset, note, length, bytes, and
 * nothing written outside the decoded bytes. */
static void same_as_scalar(const char *s, size_t n, size_t mis, unsigned flags, int fused)
{
    static unsigned char want[MAXT + 2 * PAD], got[MAXT + 2 * PAD];
    outcome w = run_one(want, mis, s, n, SR_B64_SCALAR, flags, fused);
    outcome g = run_one(got, mis, s, n, SR_B64_AVX512, flags, fused);
    REQ_MSG(g.rc == w.rc && g.off == w.off && g.note == w.note,
            "%s n=%zu mis=%zu flags=%u: scalar %s@%lld note %lld, avx512vbmi %s@%lld note %lld",
            fused ? "fused" : "plain", n, mis, flags, sr_code_name(w.rc), (long long)w.off,
            (long long)w.note, sr_code_name(g.rc), (long long)g.off, (long long)g.note);
    if (w.rc == 0) {
        REQ_MSG(g.len == w.len && g.cons == w.cons && g.found == w.found,
                "%s n=%zu mis=%zu: len %zu/%zu consumed %zu/%zu", fused ? "fused" : "plain", n, mis,
                w.len, g.len, w.cons, g.cons);
        /* The whole buffer: the decoded bytes and the canaries on both sides. */
        REQ_MSG(memcmp(got, want, sizeof(got)) == 0, "%s n=%zu mis=%zu: bytes differ",
                fused ? "fused" : "plain", n, mis);
    }
}

/* A text of length n for case `kind` (0..5) at src: a prefix of valid base64, then a change. */
static void make_text(char *t, size_t n, int kind, uint64_t *seed)
{
    static unsigned char raw[MAXT];
    fill_random(raw, sizeof(raw), seed);
    if (kind == 2 && n >= 4) {
        /* Padded to length n / 4 * 4 (one or two '='), then n % 4 'A's after the padding. */
        size_t q = n / 4, rawn = q * 3 - 1 - (size_t)(rnd(seed) % 2);
        ref_encode(t, raw, rawn);
        memset(t + q * 4, 'A', n % 4);
        return;
    }
    char full[MAXT + 4];
    ref_encode(full, raw, n / 4 * 3 + 6);
    memcpy(t, full, n);
    if (n == 0)
        return;
    size_t p = (size_t)(rnd(seed) % n);
    unsigned char c;
    switch (kind) {
    case 1: /* a byte outside the alphabet */
    case 5: /* the same, and a stray '=' before or after it */
        do
            c = (unsigned char)rnd(seed);
        while (is_alpha(c));
        t[p] = (char)c;
        if (kind == 5)
            t[rnd(seed) % n] = '=';
        break;
    case 3: /* the closing quote */
        t[p] = '"';
        break;
    case 4: /* any byte */
        t[p] = (char)rnd(seed);
        break;
    default: /* clean */
        break;
    }
}

START_TEST(test_every_length_every_misalignment)
{
    static char buf[MAXT + 2 * PAD] __attribute__((aligned(64)));
    static char text[MAXT];
    uint64_t seed = 0x5eb1;
    for (size_t n = 0; n <= 2000; n++) {
        make_text(text, n, (int)(n % 6), &seed);
        for (size_t mis = 0; mis < 64; mis++) {
            memset(buf, '#', sizeof(buf));
            memcpy(buf + mis, text, n);
            size_t out_mis = mis * 29 % 64; /* every output alignment too */
            same_as_scalar(buf + mis, n, out_mis, 0, 0);
            same_as_scalar(buf + mis, n, out_mis, 0, 1);
            if (mis < 4) {
                same_as_scalar(buf + mis, n, out_mis, SR_B64_STRICT_BITS, 0);
                same_as_scalar(buf + mis, n, out_mis, SR_B64_STRICT_BITS, 1);
            }
        }
    }
}
END_TEST

/* Every byte value outside the alphabet ('=' and '"' among them) at every position of a text of
 * two four-block groups, one single block and a 60-character tail: every position of a block in
 * each of the places the kernel handles differently. */
START_TEST(test_invalid_byte_every_block_position)
{
    static unsigned char raw[477];
    static char text[636 + 1];
    uint64_t seed = 0x64b;
    fill_random(raw, sizeof(raw), &seed);
    REQ(ref_encode(text, raw, sizeof(raw)) == 636);
    for (int c = 0; c < 256; c++) {
        if (is_alpha((unsigned char)c))
            continue;
        for (size_t p = 0; p < 636; p++) {
            char save = text[p];
            text[p] = (char)c;
            same_as_scalar(text, 636, p % 64, 0, 0);
            same_as_scalar(text, 636, p % 64, 0, 1);
            text[p] = save;
        }
    }
}
END_TEST

/* The OR of out[0 .. n) by position modulo 4, byte by byte (what SR_B64_LANES gathers). */
static uint32_t ref_lanes(const unsigned char *out, size_t n)
{
    uint32_t a = 0;
    for (size_t i = 0; i < n; i++)
        a |= (uint32_t)out[i] << (8 * (i % 4));
    return a;
}

/*
 * SR_B64_LANES: one bit set at every output position in turn of zero blobs whose ends fall in a
 * group, a single block and the tail (the padding stops the kernel in its last block), fed
 * after a first feed of 0..3 quads so that the kernel starts at every phase modulo 4: the lanes
 * must be the byte-by-byte OR of the output.
 */
START_TEST(test_lanes_every_position)
{
    static const size_t lens[] = {0, 1, 47, 48, 191, 192, 239, 286, 400, 401, 402, 700};
    static unsigned char raw[700], out[1024];
    static char text[1024];
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        const size_t len = lens[li];
        for (size_t j = 0; j < len || (len == 0 && j == 0); j++) {
            memset(raw, 0, sizeof(raw));
            if (len)
                raw[j] = (unsigned char)(1u << (j % 8));
            size_t n = ref_encode(text, raw, len);
            text[n++] = '"';
            for (size_t t = 0; t < 4; t++) {
                size_t first = 4 * t < n - 1 ? 4 * t : 0;
                sr_b64_stream st;
                sr_b64_stream_init_flags(&st, SR_B64_AVX512, SR_B64_LANES);
                size_t w = 0, cons;
                int done;
                sr_err err = SR_ERR_INIT;
                memset(out, 0, sizeof(out));
                REQ_OK(sr_b64_stream_feed(&st, out, &w, text, first, &cons, &done, &err), err);
                REQ_OK(sr_b64_stream_feed(&st, out + w, &w, text + first, n - first, &cons, &done,
                                          &err),
                       err);
                REQ(done && w == len && memcmp(out, raw, len) == 0);
                REQ_MSG(st.lanes == ref_lanes(out, w), "len %zu bit at %zu first %zu: %08x %08x",
                        len, j, first, st.lanes, ref_lanes(out, w));
            }
        }
    }
}
END_TEST

/* Feeds text[0, n) in chunks of random sizes (the same sizes for every implementation, from
 * seed); returns the outcome, the lanes in *lanes and the bytes at out. */
static outcome stream_random(unsigned char *out, uint32_t *lanes, const char *text, size_t n,
                             sr_b64_impl impl, uint64_t seed, size_t maxc)
{
    outcome o = {0, -1, -2, 0, 0, 0};
    sr_b64_stream st;
    sr_b64_stream_init_flags(&st, impl, SR_B64_LANES);
    sr_err err = SR_ERR_INIT;
    memset(out, 0xa5, MAXT);
    size_t pos = 0;
    while (pos < n || pos == 0) {
        size_t c = (size_t)(rnd(&seed) % (maxc + 1));
        c = c < n - pos ? c : n - pos;
        size_t cons;
        int done;
        char *chunk = malloc(c ? c : 1); /* a sanitizer build sees any read past a chunk */
        memcpy(chunk, text + pos, c);
        o.rc = sr_b64_stream_feed(&st, out + o.len, &o.len, chunk, c, &cons, &done, &err);
        free(chunk);
        if (o.rc) {
            o.off = err.offset;
            break;
        }
        pos += cons;
        if (done || n == 0) {
            o.found = done;
            break;
        }
    }
    o.cons = pos;
    o.note = st.noncanon_at;
    *lanes = st.lanes;
    return o;
}

/* Random texts up to 2000 characters (clean, or with a change of make_text's kinds, closed by
 * a quote or not) fed in random chunks: AVX512 and scalar give the same result, bytes and
 * lanes, and the lanes are the byte-by-byte OR of the output. */
START_TEST(test_stream_random_splits)
{
    static unsigned char want[MAXT], got[MAXT];
    static char text[MAXT + 1];
    uint64_t seed = 0xfeed5;
    for (int r = 0; r < 3000; r++) {
        size_t n = (size_t)(rnd(&seed) % 2001);
        make_text(text, n, (int)(rnd(&seed) % 6), &seed);
        if (r % 2)
            text[n++] = '"';
        uint64_t split = rnd(&seed);
        size_t maxc = r % 3 == 0 ? 7 : r % 3 == 1 ? 100 : 900;
        uint32_t wl, gl;
        outcome w = stream_random(want, &wl, text, n, SR_B64_SCALAR, split, maxc);
        outcome g = stream_random(got, &gl, text, n, SR_B64_AVX512, split, maxc);
        REQ_MSG(g.rc == w.rc && g.off == w.off, "r=%d n=%zu: scalar %s@%lld, avx512vbmi %s@%lld", r,
                n, sr_code_name(w.rc), (long long)w.off, sr_code_name(g.rc), (long long)g.off);
        if (w.rc == 0) {
            REQ(g.len == w.len && g.cons == w.cons && g.found == w.found && g.note == w.note);
            REQ(memcmp(got, want, MAXT) == 0);
            REQ_MSG(gl == wl && gl == ref_lanes(got, g.len), "r=%d n=%zu: lanes %08x %08x %08x", r,
                    n, wl, gl, ref_lanes(got, g.len));
        }
    }
}
END_TEST

int main(void)
{
    if (n_impls() < 3) {
        note_missing_impls("unit.base64_vbmi");
        return 0;
    }
    Suite *s = suite_create("base64_vbmi");
    TCase *tc = tcase_create("vbmi");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_length_every_misalignment);
    tcase_add_test(tc, test_invalid_byte_every_block_position);
    tcase_add_test(tc, test_lanes_every_position);
    tcase_add_test(tc, test_stream_random_splits);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
