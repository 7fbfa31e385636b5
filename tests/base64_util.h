/*
 * Shared by the base64 suites (unit.base64, unit.base64_stream): failure-only assertions, the
 * implementations to test, a seeded random fill and a reference encoder written from the rules
 * in sr_base64.h.
 */
#ifndef SR_BASE64_UTIL_H
#define SR_BASE64_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sr_base64.h"
#include "sr_test.h"

/* Check's ck_assert_* record every passing assertion with a write(2); these loops make
 * millions of checks, so they report only failures. */
#define REQ(cond)                                                                                  \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond);                                  \
    } while (0)
#define REQ_MSG(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)
#define REQ_OK(expr, err)                                                                          \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != 0)                                                                              \
            ck_abort_msg("%s:%d: expected success, got %s: %s", __FILE__, __LINE__,                \
                         sr_code_name(rc_), (err).msg);                                            \
    } while (0)

static const char k_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Implementations to test: the first n_impls() of k_impls, those this CPU has (a CPU with AVX-512
 * VBMI has AVX2, sr_base64.h); the suites print a note for each one left out. */
static inline int n_impls(void)
{
    return 1 + sr_base64_cpu_has_avx2() + sr_base64_cpu_has_avx512vbmi();
}

static const sr_b64_impl k_impls[3] = {SR_B64_SCALAR, SR_B64_AVX2, SR_B64_AVX512};

/* The note of a suite run on a CPU without every implementation (the only parts ever skipped). */
static inline void note_missing_impls(const char *suite)
{
    if (!sr_base64_cpu_has_avx2())
        printf("note: this CPU lacks AVX2; only the scalar part of %s runs\n", suite);
    else if (!sr_base64_cpu_has_avx512vbmi())
        printf("note: this CPU (or valgrind) lacks AVX-512 VBMI; the avx512vbmi part of %s is "
               "skipped\n",
               suite);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void fill_random(unsigned char *p, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(rnd(seed) >> 24);
}

/* The reference encoder (slow, written straight from the rules). */
static size_t ref_encode(char *dst, const unsigned char *src, size_t n)
{
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = acc << 8 | src[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            dst[o++] = k_alpha[(acc >> bits) & 63];
        }
    }
    if (bits > 0)
        dst[o++] = k_alpha[(acc << (6 - bits)) & 63];
    while (o % 4)
        dst[o++] = '=';
    return o;
}

#endif /* SR_BASE64_UTIL_H */
