/*
 * Unit tests of sr_oracle: model validation with named errors, golden vectors of the documented
 * functions (cross-checked against an independent Python implementation of the header's text),
 * distinctness and range of route rows, determinism, prefix and fingerprint sensitivity.
 * Generate (row arithmetic, requests, stop rules, logprobs, route dtypes) is in
 * test_oracle_generate.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_util.h"
#include "sr_oracle.h"
#include "sr_test.h"

static void expect_invalid(const sr_oracle_model *m)
{
    sr_oracle *o = (sr_oracle *)1;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_oracle_new(&o, m, &err), err, SR_E_ORACLE_MODEL);
    ck_assert_ptr_null(o);
}

START_TEST(test_invalid_models)
{
    sr_oracle_model m = small_model();
    m.topk = 0;
    expect_invalid(&m);
    m = small_model();
    m.experts = 4;
    m.topk = 5; /* K > E */
    expect_invalid(&m);
    m = small_model();
    m.experts = 1000;
    m.topk = SR_ORACLE_MAX_TOPK + 1;
    expect_invalid(&m);
    m = small_model();
    m.experts = 0;
    expect_invalid(&m);
    m = small_model();
    m.experts = SR_ORACLE_MAX_EXPERTS + 1; /* expert ids would not fit int32 */
    expect_invalid(&m);
    m = small_model();
    m.vocab = 0;
    expect_invalid(&m);
    m = small_model();
    m.vocab = SR_ORACLE_MAX_VOCAB + 1;
    expect_invalid(&m);
    static const int32_t same[3] = {1, 1, 2}, down[3] = {4, 3, 5}, neg[3] = {-1, 0, 1};
    const int32_t *bad_layers[3] = {same, down, neg};
    for (int i = 0; i < 3; i++) {
        m = small_model();
        m.layer_indices = bad_layers[i];
        expect_invalid(&m);
    }
    m = small_model();
    m.num_layers = 0;
    expect_invalid(&m);
    m = small_model();
    m.layer_indices = NULL;
    expect_invalid(&m);
    m = small_model();
    m.eos_id = 1000; /* == vocab */
    expect_invalid(&m);
    m = small_model();
    m.eos_id = -2;
    expect_invalid(&m);
    m = small_model();
    m.vocab = 1;
    m.eos_id = 0;
    expect_invalid(&m);
    m = small_model();
    m.eos_rate = 1.5;
    expect_invalid(&m);
    m = small_model();
    m.nonfinite_rate = NAN;
    expect_invalid(&m);
    m = small_model();
    m.logprob_scale = INFINITY;
    expect_invalid(&m);
    m = small_model();
    m.logprob_scale = -1.0;
    expect_invalid(&m);
    static const int32_t stop_bad[2] = {3, 1000};
    sr_oracle_stopseq st[2] = {{stop_bad, 0}, {stop_bad, 2}};
    m = small_model();
    m.num_stops = 1;
    m.stops = &st[0]; /* empty sequence */
    expect_invalid(&m);
    m.stops = &st[1]; /* token == vocab */
    expect_invalid(&m);
    m.num_stops = SR_ORACLE_MAX_STOPS + 1;
    expect_invalid(&m);
    expect_invalid(NULL);
}
END_TEST

START_TEST(test_valid_edges_and_copy)
{
    int32_t layers[2] = {0, 2147483647};
    sr_oracle_model m = small_model();
    m.num_layers = 2;
    m.layer_indices = layers;
    m.experts = SR_ORACLE_MAX_EXPERTS;
    m.topk = SR_ORACLE_MAX_TOPK;
    sr_oracle *o = make(&m);
    layers[0] = 99; /* the oracle holds its own copy */
    ck_assert_int_eq(sr_oracle_model_of(o)->layer_indices[0], 0);
    sr_oracle_free(o);
    m = small_model();
    m.vocab = 1;
    m.eos_id = -1;
    m.experts = 1;
    m.topk = 1;
    o = make(&m);
    int32_t row[1], t;
    double lp;
    sr_oracle_route_row(row, o, 0, 5, 6);
    sr_oracle_next(&t, &lp, o, 7, 8);
    ck_assert_int_eq(row[0], 0);
    ck_assert_int_eq(t, 0);
    sr_oracle_free(o);
    sr_oracle_free(NULL);
}
END_TEST

/* sr_oracle_new's verdict on m: 0 or SR_E_ORACLE_MODEL. */
static int model_rc(const sr_oracle_model *m)
{
    sr_oracle *o = NULL;
    sr_err err = SR_ERR_INIT;
    int rc = sr_oracle_new(&o, m, &err);
    ck_assert(rc ? o == NULL : o != NULL);
    sr_oracle_free(o);
    return rc;
}

/* The model's limits at, before and past: vocab up to SR_ORACLE_MAX_VOCAB, layers up to
 * SR_ORACLE_MAX_LAYERS, eos_id below vocab, logprob_scale up to SR_ORACLE_MAX_LP_SCALE, stop
 * sequences up to SR_ORACLE_MAX_STOPS of 1 .. SR_ORACLE_MAX_STOP_LEN tokens below vocab. */
START_TEST(test_model_limits_at_before_and_past)
{
    static int32_t layers[SR_ORACLE_MAX_LAYERS + 1];
    for (int l = 0; l <= SR_ORACLE_MAX_LAYERS; l++)
        layers[l] = l;
    const int MS = SR_E_ORACLE_MODEL;
    for (int d = -1; d <= 1; d++) {
        int want = d > 0 ? MS : 0;
        sr_oracle_model m = small_model();
        m.vocab = SR_ORACLE_MAX_VOCAB + d;
        ck_assert_int_eq(model_rc(&m), want);
        m = small_model();
        m.num_layers = SR_ORACLE_MAX_LAYERS + d;
        m.layer_indices = layers;
        ck_assert_int_eq(model_rc(&m), want);
        m = small_model();
        m.eos_id = m.vocab - 1 + d;
        ck_assert_int_eq(model_rc(&m), want);
        m = small_model();
        m.logprob_scale = d < 0   ? nextafter(SR_ORACLE_MAX_LP_SCALE, 0)
                          : d > 0 ? nextafter(SR_ORACLE_MAX_LP_SCALE, INFINITY)
                                  : SR_ORACLE_MAX_LP_SCALE;
        ck_assert_int_eq(model_rc(&m), want);
        static int32_t ids[SR_ORACLE_MAX_STOP_LEN + 1];
        for (int j = 0; j <= SR_ORACLE_MAX_STOP_LEN; j++)
            ids[j] = j % 2 ? 999 : 0; /* both ends of the vocabulary */
        sr_oracle_stopseq st[SR_ORACLE_MAX_STOPS + 1];
        for (int k = 0; k <= SR_ORACLE_MAX_STOPS; k++)
            st[k] = (sr_oracle_stopseq){ids, 1 + k % 3};
        m = small_model();
        m.stops = st;
        m.num_stops = SR_ORACLE_MAX_STOPS + d;
        ck_assert_int_eq(model_rc(&m), want);
        m.num_stops = SR_ORACLE_MAX_STOPS;
        st[SR_ORACLE_MAX_STOPS - 1].len = SR_ORACLE_MAX_STOP_LEN + d; /* the last sequence */
        ck_assert_int_eq(model_rc(&m), want);
        st[SR_ORACLE_MAX_STOPS - 1].len = 1;
        ids[0] = 999 + d; /* vocab is 1000 */
        ck_assert_int_eq(model_rc(&m), want);
    }
    sr_oracle_model m = small_model();
    m.logprob_scale = 0.0;
    ck_assert_int_eq(model_rc(&m), 0);
    m.logprob_scale = -1e-300;
    ck_assert_int_eq(model_rc(&m), MS);
}
END_TEST

/* Golden vectors, computed once and cross-checked with a Python implementation of the header. */
START_TEST(test_golden_primitives)
{
    sr_oracle_model m = small_model();
    sr_oracle *o = make(&m);
    uint64_t h = sr_oracle_prefix_empty(o);
    ck_assert_uint_eq(h, 0xefde9b911d120f33ull);
    h = sr_oracle_prefix_push(h, 1);
    ck_assert_uint_eq(h, 0x1ab48fae53c1a493ull);
    h = sr_oracle_prefix_push(h, 2);
    ck_assert_uint_eq(h, 0x70b9396bd0cc7d9cull);
    h = sr_oracle_prefix_push(h, 3);
    ck_assert_uint_eq(h, 0x62e7239a314d1649ull);

    int32_t row[8];
    static const int32_t want[8] = {1, 136, 188, 234, 26, 167, 153, 173};
    sr_oracle_route_row(row, o, 0, 0x1234, h); /* slot 0 is global layer 1 */
    int32_t row_g3[8];
    int32_t layers_g3[1] = {3};
    sr_oracle_model m3 = m;
    m3.num_layers = 1;
    m3.layer_indices = layers_g3;
    sr_oracle *o3 = make(&m3);
    sr_oracle_route_row(row_g3, o3, 0, 0x1234, h);
    ck_assert_mem_eq(row_g3, want, sizeof want);
    ck_assert_mem_ne(row, want, sizeof want); /* the global layer index enters the key */

    int32_t t;
    double lp;
    sr_oracle_next(&t, &lp, o, 0xABCDEF, h);
    ck_assert_int_eq(t, 574);
    ck_assert_double_eq(lp, -1.2120004454648807);
    sr_oracle_free(o);
    sr_oracle_free(o3);

    int32_t g47[1] = {47};
    m = small_model();
    m.num_layers = 1;
    m.layer_indices = g47;
    m.experts = SR_ORACLE_MAX_EXPERTS;
    m.topk = 5;
    m.eos_id = -1;
    o = make(&m);
    static const int32_t want_wide[5] = {1767466008, 259442430, 194945261, 1458501908, 2027883683};
    sr_oracle_route_row(row, o, 0, 0xDEADBEEF, h);
    ck_assert_mem_eq(row, want_wide, sizeof want_wide);
    sr_oracle_next(&t, &lp, o, 0xABCDEF, h);
    ck_assert_int_eq(t, 573); /* no EOS: below(u1, vocab) */
    sr_oracle_free(o);
}
END_TEST

START_TEST(test_golden_generate)
{
    static const int32_t stop_ids[2] = {3, 4};
    sr_oracle_stopseq stop = {stop_ids, 2};
    sr_oracle_model m = SR_ORACLE_MODEL_INIT;
    m.seed = 8;
    m.vocab = 50;
    m.num_layers = 3;
    m.layer_indices = LAYERS3;
    m.experts = 16;
    m.topk = 4;
    m.eos_id = 0;
    m.eos_rate = 0.05;
    m.num_stops = 1;
    m.stops = &stop;
    m.logprob_scale = 5.0;
    sr_oracle *o = make(&m);
    static const int32_t prompt[4] = {5, 6, 7, 8};
    sr_oracle_request rq = SR_ORACLE_REQUEST_INIT;
    rq.prompt = prompt;
    rq.prompt_len = 4;
    rq.max_tokens = 12;
    rq.route_start = 2;
    rq.route_dtype = SR_DTYPE_UINT8;
    int32_t toks[12];
    double lps[12];
    uint8_t routes[13 * 3 * 4];
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = toks;
    out.logprobs = lps;
    out.routes = routes;
    out.routes_cap = sizeof routes;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_generate(&out, o, 0x1111, FPS3, &rq, &err), err);
    static const int32_t want[12] = {3, 14, 47, 39, 30, 2, 1, 2, 29, 15, 14, 42};
    ck_assert_int_eq(out.num_tokens, 12);
    ck_assert_mem_eq(toks, want, sizeof want);
    ck_assert_str_eq(sr_oracle_finish_name(out.finish), "length");
    ck_assert_double_eq(lps[0], -1.572599612888006);
    ck_assert_double_eq(lps[2], -0.28779247721640755);
    ck_assert_int_eq(out.num_rows, 4 + 12 - 1 - 2);
    static const uint8_t row0[12] = {10, 14, 12, 13, 13, 10, 15, 8, 15, 14, 9, 2};
    static const uint8_t rowlast[12] = {10, 8, 13, 15, 15, 0, 13, 3, 6, 15, 1, 5};
    ck_assert_mem_eq(routes, row0, 12);
    ck_assert_mem_eq(routes + 12 * 12, rowlast, 12);
    uint64_t poly = 0;
    for (size_t i = 0; i < sizeof routes; i++)
        poly = poly * 31 + routes[i];
    ck_assert_uint_eq(poly, 0xf2b658b2c9e182a2ull);
    ck_assert_int_le(out.routes_max, 15);
    sr_oracle_free(o);
}
END_TEST

START_TEST(test_rows_distinct_in_range)
{
    static const int64_t E[] = {1, 8, 64, 255, 300, 33000, (int64_t)1 << 20, (int64_t)1 << 31};
    static const int Ks[] = {1, 8, 64, 8, 64, 8, 16, 64};
    for (size_t c = 0; c < sizeof E / sizeof E[0]; c++) {
        sr_oracle_model m = small_model();
        m.experts = E[c];
        m.topk = Ks[c];
        sr_oracle *o = make(&m);
        int32_t row[SR_ORACLE_MAX_TOPK];
        uint64_t h = sr_oracle_prefix_empty(o);
        int64_t max = -1;
        for (int i = 0; i < 2000; i++) {
            h = sr_oracle_prefix_push(h, i % 1000);
            sr_oracle_route_row(row, o, i % 3, FPS3[i % 3], h);
            ck_assert_msg(row_distinct_in_range(row, Ks[c], E[c]), "E=%lld K=%d row %d",
                          (long long)E[c], Ks[c], i);
            for (int j = 0; j < Ks[c]; j++)
                max = row[j] > max ? row[j] : max;
        }
        /* The ids spread over the whole range (E = K is a permutation). */
        ck_assert_int_eq(max >= E[c] / 2, 1);
        sr_oracle_free(o);
    }
}
END_TEST

enum { NTOK = 40 };

static void all_rows(uint8_t *out, const sr_oracle *o, const uint64_t *fps, const int32_t *tok)
{
    sr_err err = SR_ERR_INIT;
    int32_t mx;
    ck_assert_sr_ok(sr_oracle_routes(out, NTOK * L3 * K8, &mx, SR_DTYPE_UINT8, o, fps, tok, NTOK, 0,
                                     NTOK, &err),
                    err);
    ck_assert_int_ge(mx, 0);
}

START_TEST(test_determinism_and_prefix_sensitivity)
{
    sr_oracle_model m = small_model();
    sr_oracle *a = make(&m), *b = make(&m);
    int32_t tok[NTOK], tok2[NTOK];
    for (int i = 0; i < NTOK; i++)
        tok[i] = tok2[i] = (i * 37 + 11) % 1000;
    static uint8_t ra[NTOK * L3 * K8], rb[NTOK * L3 * K8];
    all_rows(ra, a, FPS3, tok);
    all_rows(rb, b, FPS3, tok);
    ck_assert_mem_eq(ra, rb, sizeof ra);
    const int j = 17;
    tok2[j] = (tok[j] + 1) % 1000;
    all_rows(rb, a, FPS3, tok2);
    const size_t row = L3 * K8;
    ck_assert_mem_eq(ra, rb, j * row); /* rows < j unchanged */
    for (int i = j; i < NTOK; i++)
        ck_assert_msg(memcmp(ra + i * row, rb + i * row, row) != 0, "row %d unchanged", i);
    /* A different seed changes every row. */
    m.seed = 43;
    sr_oracle *c = make(&m);
    all_rows(rb, c, FPS3, tok);
    for (int i = 0; i < NTOK; i++)
        ck_assert(memcmp(ra + i * row, rb + i * row, row) != 0);
    sr_oracle_free(a);
    sr_oracle_free(b);
    sr_oracle_free(c);
}
END_TEST

START_TEST(test_layer_fingerprint_sensitivity)
{
    sr_oracle_model m = small_model();
    sr_oracle *o = make(&m);
    int32_t tok[NTOK];
    for (int i = 0; i < NTOK; i++)
        tok[i] = (i * 7 + 3) % 1000;
    static uint8_t ra[NTOK * L3 * K8], rb[NTOK * L3 * K8];
    all_rows(ra, o, FPS3, tok);
    for (int l = 0; l < L3; l++) {
        uint64_t fps[3] = {FPS3[0], FPS3[1], FPS3[2]};
        fps[l] ^= 1;
        all_rows(rb, o, fps, tok);
        for (int i = 0; i < NTOK; i++)
            for (int q = 0; q < L3; q++) {
                size_t at = ((size_t)i * L3 + (size_t)q) * K8;
                int same = memcmp(ra + at, rb + at, K8) == 0;
                ck_assert_msg(same == (q != l), "row %d layer %d (changed %d)", i, q, l);
            }
    }
    /* The global fingerprint moves tokens and logprobs, not routes. */
    int32_t t1, t2;
    double l1, l2;
    sr_oracle_next(&t1, &l1, o, 1, 99);
    sr_oracle_next(&t2, &l2, o, 2, 99);
    ck_assert(t1 != t2 || l1 != l2);
    sr_oracle_free(o);
}
END_TEST

static Suite *oracle_suite(void)
{
    Suite *s = suite_create("oracle");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_invalid_models);
    tcase_add_test(tc, test_valid_edges_and_copy);
    tcase_add_test(tc, test_model_limits_at_before_and_past);
    tcase_add_test(tc, test_golden_primitives);
    tcase_add_test(tc, test_golden_generate);
    tcase_add_test(tc, test_rows_distinct_in_range);
    tcase_add_test(tc, test_determinism_and_prefix_sensitivity);
    tcase_add_test(tc, test_layer_fingerprint_sensitivity);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(oracle_suite());
}
