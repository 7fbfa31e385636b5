/*
 * Unit tests of the oracle's fast row filler (lib/sr_oracle_priv.h): the AVX2 draw kernel and
 * the scalar one, the identity-table shuffle and the sparse one, every route dtype, against
 * sr_oracle_route_row (the header's functions written literally) on random models and prefixes:
 * expert counts around the table bound and the lane width, top_k = experts, one layer, layer
 * counts that are not a multiple of four, chunks of the draws' scratch crossed at top-64.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_base64.h"
#include "sr_mix.h"
#include "sr_oracle.h"
#include "sr_oracle_priv.h"
#include "sr_test.h"

/* A random stream: draw n of the stream with state *s. */
static uint64_t rnd(uint64_t *s)
{
    *s += SR_MIX_GOLDEN;
    return sr_mix64(*s);
}

typedef struct shape_case {
    int64_t experts;
    int topk;
    int layers;
} shape_case;

/* Shapes at the edges: E not a multiple of 4 or of 64, E = K, E at and past the table bound,
 * one layer, L not a multiple of four, L past one chunk of the draws at K = 64 (32 slots). */
static const shape_case CASES[] = {
    {1, 1, 1},
    {2, 2, 3},
    {3, 1, 5},
    {7, 7, 4},
    {8, 8, 9},
    {63, 8, 48},
    {64, 8, 48},
    {65, 64, 33},
    {64, 64, 67},
    {255, 17, 6},
    {256, 8, 1},
    {257, 8, 7},
    {300, 64, 2},
    {4095, 5, 11},
    {4096, 4, 13},
    {4097, 8, 10},
    {32768, 8, 3},
    {40000, 63, 66},
    {1 << 30, 8, 5},
    {(int64_t)1 << 31, 64, 9},
    {(int64_t)1 << 31, 1, 4},
    {128, 2, 1024},
};

/* The smallest route dtype that holds E - 1, and the wider ones. */
static int dtypes_for(int64_t E, sr_dtype *out)
{
    int n = 0;
    if (E <= 256)
        out[n++] = SR_DTYPE_UINT8;
    if (E <= 32768)
        out[n++] = SR_DTYPE_INT16;
    out[n++] = SR_DTYPE_INT32;
    return n;
}

static int32_t elem(const void *p, sr_dtype dt, size_t i)
{
    if (dt == SR_DTYPE_UINT8)
        return ((const uint8_t *)p)[i];
    if (dt == SR_DTYPE_INT16)
        return ((const int16_t *)p)[i];
    return ((const int32_t *)p)[i];
}

/* A model of shape c with random seed, strictly increasing random layer indices. */
static sr_oracle *random_oracle(const shape_case *c, uint64_t *st, int32_t *layers)
{
    int32_t g = (int32_t)(rnd(st) % 3);
    for (int l = 0; l < c->layers; l++) {
        layers[l] = g;
        g += 1 + (int32_t)(rnd(st) % 4);
    }
    sr_oracle_model m = SR_ORACLE_MODEL_INIT;
    m.seed = rnd(st);
    m.vocab = 1000;
    m.num_layers = c->layers;
    m.layer_indices = layers;
    m.experts = c->experts;
    m.topk = c->topk;
    sr_oracle *o = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_new(&o, &m, &err), err);
    return o;
}

/* Random fingerprints, with the extremes 0 and 2^64 - 1 among them. */
static void random_fps(uint64_t *fps, int n, uint64_t *st)
{
    for (int l = 0; l < n; l++)
        fps[l] = rnd(st);
    fps[0] = 0;
    if (n > 1)
        fps[n - 1] = UINT64_MAX;
}

/* sr_oracle_i_row with `impl` against sr_oracle_route_row for every dtype, `rows` prefixes. */
static void check_rows(const sr_oracle *o, const shape_case *c, const uint64_t *fps,
                       sr_oracle_i_impl impl, int rows, uint64_t *st)
{
    const int L = c->layers, K = c->topk;
    sr_oracle_i_shape shape;
    sr_oracle_i_shape_of(&shape, o);
    sr_oracle_i_rows *w = malloc(sizeof *w);
    ck_assert_ptr_nonnull(w);
    sr_oracle_i_rows_init(w, &shape, impl);
    ck_assert_int_eq(sr_oracle_i_rows_avx2(w),
                     impl != SR_ORACLE_I_SCALAR && sr_base64_cpu_has_avx2());
    ck_assert_int_eq(sr_oracle_i_rows_avx512(w),
                     (impl == SR_ORACLE_I_AUTO || impl == SR_ORACLE_I_AVX512) &&
                         sr_base64_cpu_has_avx2() && sr_oracle_i_cpu_has_avx512());
    int32_t *want = malloc(sizeof(int32_t) * (size_t)L * (size_t)K);
    int32_t *got = malloc(sizeof(int32_t) * (size_t)L * (size_t)K);
    ck_assert(want && got);
    sr_dtype dts[3];
    int ndt = dtypes_for(c->experts, dts);
    for (int i = 0; i < rows; i++) {
        uint64_t h = i == 0 ? 0 : i == 1 ? UINT64_MAX : rnd(st);
        for (int l = 0; l < L; l++)
            sr_oracle_route_row(want + (size_t)l * (size_t)K, o, l, fps[l], h);
        for (int d = 0; d < ndt; d++) {
            /* Written at an offset into a canary-filled buffer: nothing outside the row moves. */
            size_t n = (size_t)L * (size_t)K, at = 3, isz = sr_dtype_size(dts[d]);
            unsigned char *buf = malloc((n + 6) * isz);
            ck_assert_ptr_nonnull(buf);
            memset(buf, 0xA5, (n + 6) * isz);
            sr_oracle_i_row(w, buf, at, dts[d], fps, h);
            for (size_t e = 0; e < n; e++)
                got[e] = elem(buf, dts[d], at + e);
            for (size_t e = 0; e < n; e++)
                if (got[e] != want[e])
                    ck_abort_msg("E=%lld K=%d L=%d impl=%d dtype=%s row %d: element %zu (layer "
                                 "%zu, j %zu) is %d, the reference says %d",
                                 (long long)c->experts, K, L, (int)impl, sr_dtype_name(dts[d]), i,
                                 e, e / (size_t)K, e % (size_t)K, got[e], want[e]);
            for (size_t b = 0; b < at * isz; b++) {
                ck_assert_uint_eq(buf[b], 0xA5);
                ck_assert_uint_eq(buf[(at + n) * isz + b], 0xA5);
            }
            free(buf);
        }
    }
    free(want);
    free(got);
    free(w);
}

START_TEST(test_rows_match_reference_every_shape)
{
    uint64_t st = 0x5eed0001;
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        for (int seed = 0; seed < 4; seed++) {
            int32_t *layers = malloc(sizeof(int32_t) * (size_t)CASES[c].layers);
            uint64_t *fps = malloc(sizeof(uint64_t) * (size_t)CASES[c].layers);
            ck_assert(layers && fps);
            sr_oracle *o = random_oracle(&CASES[c], &st, layers);
            random_fps(fps, CASES[c].layers, &st);
            int rows = CASES[c].layers > 100 ? 3 : 12;
            check_rows(o, &CASES[c], fps, SR_ORACLE_I_SCALAR, rows, &st);
            check_rows(o, &CASES[c], fps, SR_ORACLE_I_AVX2, rows, &st);
            check_rows(o, &CASES[c], fps, SR_ORACLE_I_AVX512, rows, &st);
            check_rows(o, &CASES[c], fps, SR_ORACLE_I_AUTO, rows, &st);
            sr_oracle_free(o);
            free(layers);
            free(fps);
        }
    }
}
END_TEST

/* Random shapes: E in [1, 5000] (both shuffles), K in [1, min(E, 64)], L in [1, 70]. */
START_TEST(test_rows_match_reference_random_shapes)
{
    uint64_t st = 0x5eed0002;
    for (int t = 0; t < 300; t++) {
        shape_case c;
        c.experts = 1 + (int64_t)(rnd(&st) % 5000);
        int kmax = c.experts < SR_ORACLE_MAX_TOPK ? (int)c.experts : SR_ORACLE_MAX_TOPK;
        c.topk = 1 + (int)(rnd(&st) % (uint64_t)kmax);
        c.layers = 1 + (int)(rnd(&st) % 70);
        int32_t layers[70];
        uint64_t fps[70];
        sr_oracle *o = random_oracle(&c, &st, layers);
        random_fps(fps, c.layers, &st);
        check_rows(o, &c, fps, SR_ORACLE_I_SCALAR, 4, &st);
        check_rows(o, &c, fps, SR_ORACLE_I_AVX2, 4, &st);
        check_rows(o, &c, fps, SR_ORACLE_I_AVX512, 4, &st);
        sr_oracle_free(o);
    }
}
END_TEST

/* A draw kernel: `n` units (groups of four layer slots for AVX2, pairs of groups for AVX-512). */
typedef void draw_fn(uint64_t *r, int n, uint64_t h, const uint64_t *fps, const uint64_t *gold,
                     int K, uint64_t E);

/* The kernel alone: every lane of `slots` layer slots (n units) against the scalar formula at
 * every E edge and random K, extreme hashes and fingerprints among them, and nothing written past
 * the slots' entries. */
static void check_draws(draw_fn *draw, int n, int slots, uint64_t st)
{
    static const uint64_t Es[] = {1, 2, 5, 64, 65, 4097, 1u << 20, (uint64_t)1 << 31};
    uint64_t r[5 * SR_ORACLE_MAX_TOPK * 4], fps[16], gold[16];
    ck_assert_int_le(slots, 16);
    for (size_t e = 0; e < sizeof Es / sizeof Es[0]; e++)
        for (int t = 0; t < 50; t++) {
            uint64_t E = Es[e];
            int K = 1 + (int)(rnd(&st) % (E < 64 ? E : 64));
            uint64_t h = t == 0 ? 0 : t == 1 ? UINT64_MAX : rnd(&st);
            for (int l = 0; l < slots; l++) {
                fps[l] = l == 0 ? 0 : l == slots - 1 ? UINT64_MAX : rnd(&st);
                gold[l] = SR_MIX_GOLDEN * (rnd(&st) % 5000 + 1);
            }
            memset(r, 0xA5, sizeof r);
            draw(r, n, h, fps, gold, K, E);
            for (int l = 0; l < slots; l++) {
                uint64_t s = sr_mix64(sr_mix64(h ^ fps[l]) + gold[l]);
                for (int j = 0; j < K; j++) {
                    uint64_t x = sr_mix64(s + SR_MIX_GOLDEN * (uint64_t)(j + 1));
                    uint64_t want =
                        (uint64_t)j + (uint64_t)(((unsigned __int128)x * (E - (uint64_t)j)) >> 64);
                    size_t at = ((size_t)(l / 4) * (size_t)K + (size_t)j) * 4 + (size_t)(l % 4);
                    if (r[at] != want)
                        ck_abort_msg("E=%llu K=%d slot %d j %d: %llu, want %llu",
                                     (unsigned long long)E, K, l, j, (unsigned long long)r[at],
                                     (unsigned long long)want);
                }
            }
            for (size_t i = (size_t)slots * (size_t)K; i < sizeof r / sizeof r[0]; i++)
                ck_assert_uint_eq(r[i], 0xA5A5A5A5A5A5A5A5ull);
        }
}

/* The AVX2 kernel: three groups of four. */
START_TEST(test_avx2_draws_match_formula)
{
    if (!sr_base64_cpu_has_avx2())
        return; /* the kernel is not run on this CPU; the row tests covered the scalar path */
    check_draws(sr_oracle_i_draws_avx2, 3, 12, 0x5eed0003);
}
END_TEST

/* The AVX-512 kernel: two pairs of groups, each group's entries where the AVX2 layout puts them. */
START_TEST(test_avx512_draws_match_formula)
{
    if (!sr_oracle_i_cpu_has_avx512()) {
        printf("unit.oracle_rows: this CPU has no AVX-512F/DQ; its kernel was not run\n");
        return;
    }
#if SR_ORACLE_I_HAVE_AVX512
    check_draws(sr_oracle_i_draws_avx512, 2, 16, 0x5eed0005);
#endif
}
END_TEST

/* The public entry points through the filler: sr_oracle_routes and generate's rows and maximum. */
START_TEST(test_routes_and_max_match_reference)
{
    uint64_t st = 0x5eed0004;
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        if (CASES[c].layers > 100)
            continue;
        const int L = CASES[c].layers, K = CASES[c].topk;
        int32_t layers[128];
        uint64_t fps[128];
        sr_oracle *o = random_oracle(&CASES[c], &st, layers);
        random_fps(fps, L, &st);
        enum { N = 9 };
        int32_t tok[N];
        for (int i = 0; i < N; i++)
            tok[i] = (int32_t)(rnd(&st) % 1000);
        sr_dtype dts[3];
        int ndt = dtypes_for(CASES[c].experts, dts);
        size_t per = (size_t)L * (size_t)K;
        int32_t *want = malloc(sizeof(int32_t) * per * N), wmax = -1;
        ck_assert_ptr_nonnull(want);
        uint64_t h = sr_oracle_prefix_empty(o);
        for (int i = 0; i < N; i++) {
            h = sr_oracle_prefix_push(h, tok[i]);
            for (int l = 0; l < L; l++)
                sr_oracle_route_row(want + per * (size_t)i + (size_t)l * (size_t)K, o, l, fps[l],
                                    h);
        }
        for (int d = 0; d < ndt; d++) {
            size_t isz = sr_dtype_size(dts[d]);
            void *out = malloc(per * N * isz);
            ck_assert_ptr_nonnull(out);
            sr_err err = SR_ERR_INIT;
            int32_t mx = -7;
            ck_assert_sr_ok(
                sr_oracle_routes(out, per * N * isz, &mx, dts[d], o, fps, tok, N, 2, N, &err), err);
            wmax = -1;
            for (size_t e = 0; e < per * (N - 2); e++) {
                ck_assert_int_eq(elem(out, dts[d], e), want[per * 2 + e]);
                wmax = want[per * 2 + e] > wmax ? want[per * 2 + e] : wmax;
            }
            ck_assert_int_eq(mx, wmax);
            free(out);
        }
        free(want);
        sr_oracle_free(o);
    }
}
END_TEST

/* sr_oracle_routes_of: rows of arbitrary prefix hashes (not one sequence's), every dtype, and
 * its refusals of a dtype that cannot hold the experts and of a buffer one byte short. */
START_TEST(test_routes_of_hashes_match_reference)
{
    uint64_t st = 0x5eed0005;
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        if (CASES[c].layers > 100)
            continue;
        const int L = CASES[c].layers, K = CASES[c].topk;
        int32_t layers[128];
        uint64_t fps[128], h[7];
        sr_oracle *o = random_oracle(&CASES[c], &st, layers);
        random_fps(fps, L, &st);
        enum { N = 7 };
        for (int i = 0; i < N; i++)
            h[i] = rnd(&st);
        size_t per = (size_t)L * (size_t)K;
        int32_t *want = malloc(sizeof(int32_t) * per * N);
        ck_assert_ptr_nonnull(want);
        for (int i = 0; i < N; i++)
            for (int l = 0; l < L; l++)
                sr_oracle_route_row(want + per * (size_t)i + (size_t)l * (size_t)K, o, l, fps[l],
                                    h[i]);
        sr_dtype dts[3];
        int ndt = dtypes_for(CASES[c].experts, dts);
        sr_err err = SR_ERR_INIT;
        for (int d = 0; d < ndt; d++) {
            size_t isz = sr_dtype_size(dts[d]), cap = per * N * isz;
            void *out = malloc(cap);
            ck_assert_ptr_nonnull(out);
            ck_assert_sr_ok(sr_oracle_routes_of(out, cap, dts[d], o, fps, h, N, &err), err);
            for (size_t e = 0; e < per * N; e++)
                ck_assert_int_eq(elem(out, dts[d], e), want[e]);
            ck_assert_sr_code(sr_oracle_routes_of(out, cap - 1, dts[d], o, fps, h, N, &err), err,
                              SR_E_ORACLE_REQUEST);
            free(out);
        }
        if (CASES[c].experts > 256) {
            uint8_t small[8];
            ck_assert_sr_code(
                sr_oracle_routes_of(small, sizeof small, SR_DTYPE_UINT8, o, fps, h, 0, &err), err,
                SR_E_ORACLE_REQUEST);
        }
        free(want);
        sr_oracle_free(o);
    }
}
END_TEST

static Suite *oracle_rows_suite(void)
{
    Suite *s = suite_create("oracle_rows");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_rows_match_reference_every_shape);
    tcase_add_test(tc, test_rows_match_reference_random_shapes);
    tcase_add_test(tc, test_avx2_draws_match_formula);
    tcase_add_test(tc, test_avx512_draws_match_formula);
    tcase_add_test(tc, test_routes_and_max_match_reference);
    tcase_add_test(tc, test_routes_of_hashes_match_reference);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(oracle_rows_suite());
}
