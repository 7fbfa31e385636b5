/*
 * bench_codec: base64 decode of 120 MiB of base64 and encode of 90 MiB of raw bytes (the
 * routes of the reference body, design.md §8), scalar, AVX2 and AVX-512 VBMI (decoding; it
 * encodes with the AVX2 kernel), 1 and 2 threads, and the fused stop-at-quote decode. Every
 * line is a ratio against memcpy of the same byte count measured in this process: decode
 * against memcpy of the base64 input size, encode against memcpy of its output size (both 120
 * MiB). Targets: AVX2 decode 1 thread <= 0.9, AVX2 encode <= 1.0, scalar decode <= 5.0. Also
 * codec.stream_60k.<impl>: the small body's 61,440-character blob (bench_splice's
 * splice.small_stream_60k) streamed in one feed with SR_B64_LANES, warm in cache, against
 * memcpy of its characters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "sr_base64.h"

#define RAW_BYTES ((size_t)90 << 20)
#define B64_BYTES ((size_t)120 << 20)
/* What follows the blob in a response body; the fused decoder stops at its quote. */
static const char k_after[] = "\",\"shape\":[122880,48,8],\"dtype\":\"int16\"}";

typedef struct codec_ctx {
    const unsigned char *raw; /* RAW_BYTES of random bytes */
    const char *text;         /* their base64, B64_BYTES, then k_after */
    size_t text_len;          /* B64_BYTES + strlen(k_after) */
    unsigned char *out;       /* decode output, sr_base64_decoded_max(text_len) bytes */
    char *enc;                /* encode output, B64_BYTES */
    sr_b64_impl impl;
    int threads;
    int failed; /* set by a run that did not give the expected result */
} codec_ctx;

static void run_decode(void *p)
{
    codec_ctx *c = p;
    /* Each half is a multiple of 4 characters, so the halves decode independently. */
    const size_t half = B64_BYTES / 2 / 4 * 4;
    int bad = 0;
#pragma omp parallel for num_threads(2) reduction(| : bad) if (c->threads > 1)
    for (int t = 0; t < c->threads; t++) {
        size_t off = c->threads == 1 ? 0 : (size_t)t * half;
        size_t n = c->threads == 1 ? B64_BYTES : t ? B64_BYTES - half : half;
        size_t len;
        int rc = sr_base64_decode(c->out + off / 4 * 3, &len, c->text + off, n, c->impl, NULL);
        bad |= rc != 0 || len != n / 4 * 3;
    }
    c->failed |= bad;
    bench_sink(c->out, RAW_BYTES);
}

static void run_encode(void *p)
{
    codec_ctx *c = p;
    /* Each half is a multiple of 3 bytes, so the halves encode independently. */
    const size_t half = RAW_BYTES / 2 / 3 * 3;
    int bad = 0;
#pragma omp parallel for num_threads(2) reduction(| : bad) if (c->threads > 1)
    for (int t = 0; t < c->threads; t++) {
        size_t off = c->threads == 1 ? 0 : (size_t)t * half;
        size_t n = c->threads == 1 ? RAW_BYTES : t ? RAW_BYTES - half : half;
        bad |= sr_base64_encode(c->enc + off / 3 * 4, c->raw + off, n, c->impl) !=
               sr_base64_encoded_len(n);
    }
    c->failed |= bad;
    bench_sink(c->enc, B64_BYTES);
}

static void run_fused(void *p)
{
    codec_ctx *c = p;
    size_t len, consumed;
    int found;
    int rc = sr_base64_decode_until_quote(c->out, &len, c->text, c->text_len, &consumed, &found,
                                          c->impl, NULL);
    c->failed |= rc != 0 || !found || consumed != B64_BYTES || len != RAW_BYTES;
    bench_sink(c->out, RAW_BYTES);
}

/* ---- a blob of the small body (bench_splice's splice.small_stream_60k), in cache ---- */

#define SMALL_RAW   ((size_t)120 * 24 * 8 * 2) /* 120 route rows of [24, 8] int16 */
#define SMALL_TEXT  (SMALL_RAW / 3 * 4)
#define SMALL_LOOP  500 /* decodes per sample */
#define SMALL_SAMPS 51

typedef struct small_ctx {
    const char *text; /* SMALL_TEXT characters and a closing quote */
    unsigned char *out;
    sr_b64_impl impl;
    int failed;
} small_ctx;

/* SMALL_LOOP streams of the blob, one feed each, with the lanes the splice asks for. */
static void run_small_stream(void *p)
{
    small_ctx *c = p;
    for (int k = 0; k < SMALL_LOOP; k++) {
        sr_b64_stream st;
        sr_b64_stream_init_flags(&st, c->impl, SR_B64_LANES);
        size_t w = 0, cons;
        int done;
        int rc = sr_b64_stream_feed(&st, c->out, &w, c->text, SMALL_TEXT + 1, &cons, &done, NULL);
        c->failed |= rc != 0 || !done || w != SMALL_RAW;
        bench_sink(&st.lanes, sizeof(st.lanes));
    }
}

static void run_small_copy(void *p)
{
    small_ctx *c = p;
    for (int k = 0; k < SMALL_LOOP; k++) {
        memcpy(c->out, c->text, SMALL_TEXT);
        bench_sink(c->out, SMALL_TEXT);
    }
}

/*
 * codec.stream_60k.<impl>: one decode of the 61,440-character blob, warm in cache, against memcpy
 * of its characters; samples of each alternate (the host is shared), us= per decode.
 */
static int measure_small(const char *text, const unsigned char *raw)
{
    static const struct {
        const char *name;
        sr_b64_impl impl;
    } k[] = {{"codec.stream_60k.scalar", SR_B64_SCALAR},
             {"codec.stream_60k.avx2", SR_B64_AVX2},
             {"codec.stream_60k.avx512vbmi", SR_B64_AVX512}};
    small_ctx c = {text, malloc(SMALL_TEXT + 64), SR_B64_AUTO, 0};
    double t[2 * SMALL_SAMPS];
    int fail = 0;
    if (!c.out)
        return 1;
    for (size_t j = 0; j < sizeof(k) / sizeof(k[0]); j++) {
        c.impl = sr_base64_resolve(k[j].impl);
        c.failed = 0; /* each kernel is judged on its own decodes */
        run_small_stream(&c);
        for (int i = 0; i < SMALL_SAMPS; i++) {
            bench_samples(t + i, run_small_copy, &c, 1);
            bench_samples(t + SMALL_SAMPS + i, run_small_stream, &c, 1);
        }
        if (c.failed || memcmp(c.out, raw, SMALL_RAW) != 0) {
            fprintf(stderr, "bench_codec: %s decoded wrong bytes\n", k[j].name);
            fail = 1;
            continue;
        }
        bench_stats m = bench_stats_of(t, SMALL_SAMPS),
                    d = bench_stats_of(t + SMALL_SAMPS, SMALL_SAMPS);
        bench_report_ex(k[j].name, d, m, "memcpy_60k", "us=%.3f memcpy_us=%.3f impl=%s",
                        d.median_ms * 1e3 / SMALL_LOOP, m.median_ms * 1e3 / SMALL_LOOP,
                        sr_base64_impl_name(c.impl));
    }
    free(c.out);
    return fail;
}

static int measure(const char *name, void (*fn)(void *), codec_ctx *c, sr_b64_impl impl,
                   int threads, bench_stats base, int reps)
{
    c->impl = impl;
    c->threads = threads;
    c->failed = 0;
    bench_stats s = bench_measure(fn, c, reps);
    if (c->failed) {
        fprintf(stderr, "bench_codec: %s gave a wrong result\n", name);
        return 1;
    }
    if (fn != run_encode && memcmp(c->out, c->raw, RAW_BYTES) != 0) {
        fprintf(stderr, "bench_codec: %s decoded wrong bytes\n", name);
        return 1;
    }
    if (fn == run_encode && memcmp(c->enc, c->text, B64_BYTES) != 0) {
        fprintf(stderr, "bench_codec: %s encoded wrong text\n", name);
        return 1;
    }
    bench_report(name, s, base, "memcpy.120MiB");
    return 0;
}

int main(void)
{
    const int reps = bench_reps(11);
    const size_t after = strlen(k_after);
    unsigned char *raw = malloc(RAW_BYTES);
    char *text = malloc(B64_BYTES + after);
    unsigned char *out = malloc(sr_base64_decoded_max(B64_BYTES + after));
    char *enc = malloc(B64_BYTES);
    if (!raw || !text || !out || !enc) {
        fprintf(stderr, "bench_codec: out of memory\n");
        return 1;
    }
    uint64_t x = 0x243f6a8885a308d3u;
    for (size_t i = 0; i < RAW_BYTES; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        raw[i] = (unsigned char)(x >> 32);
    }
    sr_base64_encode(text, raw, RAW_BYTES, SR_B64_SCALAR);
    memcpy(text + B64_BYTES, k_after, after);
    /* Warm: every output page is touched before any timing. */
    memset(out, 0, sr_base64_decoded_max(B64_BYTES + after));
    memset(enc, 0, B64_BYTES);

    codec_ctx c = {raw, text, B64_BYTES + after, out, enc, SR_B64_AUTO, 1, 0};
    printf("# base64 codec: %zu MiB base64 <-> %zu MiB raw, cpu avx2=%d avx512vbmi=%d, %d reps\n",
           B64_BYTES >> 20, RAW_BYTES >> 20, sr_base64_cpu_has_avx2(),
           sr_base64_cpu_has_avx512vbmi(), reps);
    bench_stats base = bench_memcpy(B64_BYTES, reps);
    bench_report("codec.memcpy.1t", base, base, "memcpy.120MiB");

    int fail = 0;
    const sr_b64_impl avx2 = sr_base64_resolve(SR_B64_AVX2);
    if (avx2 != SR_B64_AVX2)
        printf("# note: no AVX2 on this CPU; the avx2 lines measure the scalar path\n");
    fail |= measure("codec.decode.avx2.1t", run_decode, &c, avx2, 1, base, reps);
    fail |= measure("codec.decode.avx2.2t", run_decode, &c, avx2, 2, base, reps);
    fail |= measure("codec.fused_decode.avx2.1t", run_fused, &c, avx2, 1, base, reps);
    fail |= measure("codec.encode.avx2.1t", run_encode, &c, avx2, 1, base, reps);
    fail |= measure("codec.encode.avx2.2t", run_encode, &c, avx2, 2, base, reps);
    const sr_b64_impl vbmi = sr_base64_resolve(SR_B64_AVX512);
    if (vbmi != SR_B64_AVX512)
        printf("# note: no AVX-512 VBMI on this CPU; the avx512vbmi lines measure the %s path\n",
               sr_base64_impl_name(vbmi));
    fail |= measure("codec.decode.avx512vbmi.1t", run_decode, &c, vbmi, 1, base, reps);
    fail |= measure("codec.decode.avx512vbmi.2t", run_decode, &c, vbmi, 2, base, reps);
    fail |= measure("codec.fused_decode.avx512vbmi.1t", run_fused, &c, vbmi, 1, base, reps);
    /* The first 61,440 characters of the text, closed by a quote, decode to raw[0, SMALL_RAW). */
    char *small = malloc(SMALL_TEXT + 1);
    if (!small)
        return 1;
    memcpy(small, text, SMALL_TEXT);
    small[SMALL_TEXT] = '"';
    fail |= measure_small(small, raw);
    free(small);
    fail |= measure("codec.decode.scalar.1t", run_decode, &c, SR_B64_SCALAR, 1, base, reps);
    fail |= measure("codec.decode.scalar.2t", run_decode, &c, SR_B64_SCALAR, 2, base, reps);
    fail |= measure("codec.fused_decode.scalar.1t", run_fused, &c, SR_B64_SCALAR, 1, base, reps);
    fail |= measure("codec.encode.scalar.1t", run_encode, &c, SR_B64_SCALAR, 1, base, reps);
    fail |= measure("codec.encode.scalar.2t", run_encode, &c, SR_B64_SCALAR, 2, base, reps);

    free(raw);
    free(text);
    free(out);
    free(enc);
    return fail;
}
