/*
 * Private to the sr_oracle module (sr_oracle.c, sr_oracle_rows.c, sr_oracle_avx2.c) and its
 * tests: the fast computation of whole route rows that sr_oracle_routes and sr_oracle_generate
 * use. It computes exactly what sr_oracle_route_row (the header's literal functions) computes,
 * bit for bit; tests/test_oracle_rows.c compares the two on random shapes and prefixes.
 *
 * Split of the work for one row (one prefix hash h, all layer slots):
 *   draws    for every layer slot l and j < K, r[l][j] = j + below(draw(s_l, j), E - j) with
 *            s_l = mix(mix(h ^ f_l) + G * (g_l + 1)): independent of each other, computed four
 *            layer slots at a time (AVX2 with an emulated 64-bit multiply, or scalar);
 *   shuffle  the partial Fisher-Yates shuffle of each slot from its r[l][0..K), on a real
 *            identity table of E entries when E <= SR_ORACLE_I_TABLE (restored after each slot),
 *            else on the sparse (slot, value) list of sr_oracle_route_row.
 */
#ifndef SR_ORACLE_PRIV_H
#define SR_ORACLE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_oracle.h"

/* Expert counts up to this use the identity table (uint16 entries, on the caller's stack). */
#define SR_ORACLE_I_TABLE 4096

/* The draws' scratch: positions of up to this many (layer slot, j) pairs per chunk. */
#define SR_ORACLE_I_CHUNK 2048

/* Which draw kernel sr_oracle_i_rows_init picks. */
typedef enum sr_oracle_i_impl {
    SR_ORACLE_I_AUTO = 0, /* AVX-512 when the CPU has it, else AVX2 when it has that, else scalar */
    SR_ORACLE_I_SCALAR,
    SR_ORACLE_I_AVX2,  /* falls back to scalar on a CPU without AVX2 */
    SR_ORACLE_I_AVX512 /* AVX-512F and DQ; falls back as AUTO does on a CPU without them */
} sr_oracle_i_impl;

/* The AVX-512 kernel is built where the compiler can target it from within one function. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SR_ORACLE_I_HAVE_AVX512 1
#else
#define SR_ORACLE_I_HAVE_AVX512 0
#endif

/*
 * The shape the row filler needs, borrowed from the oracle: E, K, L and G * (g_l + 1) per
 * layer slot (computed once by sr_oracle_new).
 */
typedef struct sr_oracle_i_shape {
    uint64_t experts;
    int topk;
    int num_layers;
    const uint64_t *layer_gold;
} sr_oracle_i_shape;

/* The shape of oracle `o` (borrowed: lives as long as the oracle). */
void sr_oracle_i_shape_of(sr_oracle_i_shape *shape, const sr_oracle *o);

/* Per-call working state (about 24 KiB, meant for the stack; one thread at a time). */
typedef struct sr_oracle_i_rows {
    sr_oracle_i_shape shape;
    int avx2;
    int avx512; /* 1: the draws of pairs of groups use the AVX-512 kernel (then avx2 is 1 too) */
    int table;  /* 1: E <= SR_ORACLE_I_TABLE, tab[] holds the identity */
    uint16_t tab[SR_ORACLE_I_TABLE];
    uint64_t r[SR_ORACLE_I_CHUNK];
} sr_oracle_i_rows;

/* Prepares `w` for rows of `shape` (fills the identity table when it applies). */
void sr_oracle_i_rows_init(sr_oracle_i_rows *w, const sr_oracle_i_shape *shape,
                           sr_oracle_i_impl impl);

/* 1 if `w` computes its draws with the AVX2 kernel. */
int sr_oracle_i_rows_avx2(const sr_oracle_i_rows *w);

/* 1 if `w` computes its draws with the AVX-512 kernel (pairs of groups; AVX2 for an odd one). */
int sr_oracle_i_rows_avx512(const sr_oracle_i_rows *w);

/* 1 if this CPU and its operating system run AVX-512F and AVX-512DQ code. */
int sr_oracle_i_cpu_has_avx512(void);

/*
 * Writes the route row of prefix hash h over all layer slots, L * K elements of `dtype`
 * (uint8, int16 or int32, holding E - 1) at element offset `at` of `out`. layer_fps has L
 * entries.
 */
void sr_oracle_i_row(sr_oracle_i_rows *w, void *out, size_t at, sr_dtype dtype,
                     const uint64_t *layer_fps, uint64_t h);

/*
 * The AVX2 draw kernel: for `groups` groups of four layer slots starting at fps[0] and
 * gold[0] (fps and gold hold 4 * groups entries), writes r[(g * K + j) * 4 + lane] =
 * j + below(draw(s, j), E - j) for slot 4 g + lane. Requires 1 <= K <= E <= 2^31.
 */
void sr_oracle_i_draws_avx2(uint64_t *r, int groups, uint64_t h, const uint64_t *fps,
                            const uint64_t *gold, int K, uint64_t E);

#if SR_ORACLE_I_HAVE_AVX512
/* The AVX-512 draw kernel: the same as sr_oracle_i_draws_avx2 over 2 * pairs groups, two at a
 * time (fps and gold hold 8 * pairs entries). Only after sr_oracle_i_cpu_has_avx512(). */
void sr_oracle_i_draws_avx512(uint64_t *r, int pairs, uint64_t h, const uint64_t *fps,
                              const uint64_t *gold, int K, uint64_t E);
#endif

/*
 * The partial Fisher-Yates shuffle of a route row: the first K entries of a virtual identity
 * array of E after swapping slot j with slot r[j * stride] for j = 0..K-1 (j <= r[j] < E), into
 * row[0, K). The virtual array is the identity except at the slots swapped so far, kept in a
 * small (slot, value) list: slot j is never read again after step j, so only a[r] = old a[j]
 * needs recording. `seen` has bit (slot mod 64) set for every listed slot: with E >> K most
 * lookups miss, and the filter lets them skip the scan. Shared by sr_oracle_route_row (the
 * reference, stride 1) and the row filler (its draws four layers apart, stride 4).
 */
static inline void sr_oracle_i_shuffle_sparse(int32_t *row, const uint64_t *r, size_t stride, int K)
{
    uint64_t slot[SR_ORACLE_MAX_TOPK], val[SR_ORACLE_MAX_TOPK], seen = 0;
    int nswap = 0;
    for (int j = 0; j < K; j++) {
        uint64_t rj = r[(size_t)j * stride], ar = rj, aj = (uint64_t)j;
        int at = -1;
        if (seen & (1ull << (rj & 63)))
            for (int q = 0; q < nswap; q++)
                if (slot[q] == rj) {
                    ar = val[q];
                    at = q;
                    break;
                }
        if (seen & (1ull << (j & 63)))
            for (int q = 0; q < nswap; q++)
                if (slot[q] == (uint64_t)j) {
                    aj = val[q];
                    break;
                }
        row[j] = (int32_t)ar;
        if (at >= 0) {
            val[at] = aj;
        } else if (rj != (uint64_t)j) {
            slot[nswap] = rj;
            val[nswap] = aj;
            nswap++;
            seen |= 1ull << (rj & 63);
        }
    }
}

#endif /* SR_ORACLE_PRIV_H */
