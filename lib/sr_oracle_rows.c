/*
 * Whole route rows of the oracle (sr_oracle_priv.h): the draws of four layer slots at a time,
 * then each slot's partial shuffle. The result is the one sr_oracle_route_row defines; only the
 * order of the work differs (the draws of a row do not depend on each other, and the shuffle of
 * a small expert count runs on a real table instead of a list searched per step).
 */
#include <string.h>

#include "sr_base64.h" /* sr_base64_cpu_has_avx2: the library's one AVX2 check */
#include "sr_mix.h"
#include "sr_oracle.h"
#include "sr_oracle_priv.h"

static inline uint64_t below(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

void sr_oracle_i_rows_init(sr_oracle_i_rows *w, const sr_oracle_i_shape *shape,
                           sr_oracle_i_impl impl)
{
    w->shape = *shape;
    w->avx2 = w->avx512 = 0;
#if defined(__x86_64__) || defined(__i386__)
    w->avx2 = impl != SR_ORACLE_I_SCALAR && sr_base64_cpu_has_avx2();
    w->avx512 = w->avx2 && (impl == SR_ORACLE_I_AUTO || impl == SR_ORACLE_I_AVX512) &&
                sr_oracle_i_cpu_has_avx512();
#else
    (void)impl;
#endif
    w->table = shape->experts <= SR_ORACLE_I_TABLE;
    if (w->table)
        for (uint64_t e = 0; e < shape->experts; e++)
            w->tab[e] = (uint16_t)e;
}

int sr_oracle_i_rows_avx2(const sr_oracle_i_rows *w)
{
    return w->avx2;
}

int sr_oracle_i_rows_avx512(const sr_oracle_i_rows *w)
{
    return w->avx512;
}

int sr_oracle_i_cpu_has_avx512(void)
{
#if SR_ORACLE_I_HAVE_AVX512
    /* libgcc's and compiler-rt's checks include the operating system's support for the zmm
     * state (XCR0), not only the CPU's. */
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
    return 0;
#endif
}

/* The scalar draws of `lanes` (1..4) layer slots, in the kernel's layout (lane stride 4). */
static void draws_scalar(uint64_t *r, int lanes, uint64_t h, const uint64_t *fps,
                         const uint64_t *gold, int K, uint64_t E)
{
    for (int l = 0; l < lanes; l++) {
        uint64_t s = sr_mix64(sr_mix64(h ^ fps[l]) + gold[l]);
        for (int j = 0; j < K; j++)
            r[j * 4 + l] = (uint64_t)j +
                           below(sr_mix64(s + SR_MIX_GOLDEN * (uint64_t)(j + 1)), E - (uint64_t)j);
    }
}

/* out[at] = v in `dtype`; inlined with a constant dtype, so the switch disappears. */
static inline __attribute__((always_inline)) void put(void *out, size_t at, sr_dtype dtype,
                                                      int32_t v)
{
    if (dtype == SR_DTYPE_UINT8)
        ((uint8_t *)out)[at] = (uint8_t)v;
    else if (dtype == SR_DTYPE_INT16)
        ((int16_t *)out)[at] = (int16_t)v;
    else
        ((int32_t *)out)[at] = v;
}

/*
 * The shuffles of layer slots [0, n) of the chunk in w->r on the identity table, written
 * straight into `out` from element `at`: swap and emit, then put back every written entry.
 * Inlined per dtype, and with a constant K for top-8, so the loops over j unroll.
 */
static inline __attribute__((always_inline)) void
shuffle_table(sr_oracle_i_rows *w, void *out, size_t at, sr_dtype dtype, int n, int K)
{
    uint16_t *tab = w->tab;
    for (int l = 0; l < n; l++, at += (size_t)K) {
        const uint64_t *r = w->r + (size_t)(l / 4) * (size_t)K * 4 + (size_t)(l % 4);
        const uint64_t *rp = r;
#pragma GCC unroll 8
        for (int j = 0; j < K; j++, rp += 4) {
            uint16_t *tr = tab + *rp;
            int32_t v = *tr;
            *tr = tab[j];
            put(out, at + (size_t)j, dtype, v);
        }
        /* Only entries r_j were written (an entry j is written only as some r_j'). */
        rp = r;
#pragma GCC unroll 8
        for (int j = 0; j < K; j++, rp += 4)
            tab[*rp] = (uint16_t)*rp;
    }
}

/* shuffle_table for one dtype, with K = 8 as a constant. */
static inline __attribute__((always_inline)) void shuffle_table_k(sr_oracle_i_rows *w, void *out,
                                                                  size_t at, sr_dtype dtype, int n)
{
    if (w->shape.topk == 8)
        shuffle_table(w, out, at, dtype, n, 8);
    else
        shuffle_table(w, out, at, dtype, n, w->shape.topk);
}

static void store(void *out, size_t at, sr_dtype dtype, const int32_t *row, int K)
{
    switch (dtype) {
    case SR_DTYPE_UINT8: {
        uint8_t *p = (uint8_t *)out + at;
        for (int j = 0; j < K; j++)
            p[j] = (uint8_t)row[j];
        break;
    }
    case SR_DTYPE_INT16: {
        int16_t *p = (int16_t *)out + at;
        for (int j = 0; j < K; j++)
            p[j] = (int16_t)row[j];
        break;
    }
    default:
        memcpy((int32_t *)out + at, row, sizeof(int32_t) * (size_t)K);
        break;
    }
}

/* Draws of layer slots [l0, l0 + n) into w->r (4 * K entries per group of four slots). */
static void draws(sr_oracle_i_rows *w, int l0, int n, const uint64_t *layer_fps, uint64_t h)
{
    const sr_oracle_i_shape *sh = &w->shape;
    const int K = sh->topk;
    int whole = n / 4;
    uint64_t *r = w->r;
#if SR_ORACLE_I_HAVE_AVX512
    if (w->avx512 && whole >= 2) {
        int pairs = whole / 2;
        sr_oracle_i_draws_avx512(r, pairs, h, layer_fps + l0, sh->layer_gold + l0, K, sh->experts);
        l0 += 8 * pairs;
        n -= 8 * pairs;
        whole -= 2 * pairs;
        r += (size_t)(2 * pairs) * (size_t)K * 4;
    }
#endif
#if defined(__x86_64__) || defined(__i386__)
    if (w->avx2 && whole) {
        sr_oracle_i_draws_avx2(r, whole, h, layer_fps + l0, sh->layer_gold + l0, K, sh->experts);
        l0 += 4 * whole;
        n -= 4 * whole;
        r += (size_t)whole * (size_t)K * 4;
    }
#endif
    for (; n > 0; r += (size_t)K * 4, l0 += 4, n -= 4)
        draws_scalar(r, n < 4 ? n : 4, h, layer_fps + l0, sh->layer_gold + l0, K, sh->experts);
}

/* The sparse shuffles of layer slots [0, n) of the chunk in w->r, into `out` from `at`. */
static void shuffle_sparse_slots(sr_oracle_i_rows *w, void *out, size_t at, sr_dtype dtype, int n)
{
    const int K = w->shape.topk;
    int32_t row[SR_ORACLE_MAX_TOPK];
    for (int l = 0; l < n; l++, at += (size_t)K) {
        sr_oracle_i_shuffle_sparse(row, w->r + (size_t)(l / 4) * (size_t)K * 4 + (size_t)(l % 4), 4,
                                   K);
        store(out, at, dtype, row, K);
    }
}

void sr_oracle_i_row(sr_oracle_i_rows *w, void *out, size_t at, sr_dtype dtype,
                     const uint64_t *layer_fps, uint64_t h)
{
    const int L = w->shape.num_layers, K = w->shape.topk;
    /* Layer slots per chunk of w->r, a multiple of four. */
    const int per = SR_ORACLE_I_CHUNK / (4 * K) * 4;
    for (int l0 = 0; l0 < L; l0 += per, at += (size_t)per * (size_t)K) {
        int n = L - l0 < per ? L - l0 : per;
        draws(w, l0, n, layer_fps, h);
        if (!w->table)
            shuffle_sparse_slots(w, out, at, dtype, n);
        else if (dtype == SR_DTYPE_UINT8)
            shuffle_table_k(w, out, at, SR_DTYPE_UINT8, n);
        else if (dtype == SR_DTYPE_INT16)
            shuffle_table_k(w, out, at, SR_DTYPE_INT16, n);
        else
            shuffle_table_k(w, out, at, SR_DTYPE_INT32, n);
    }
}
