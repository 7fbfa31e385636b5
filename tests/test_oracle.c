/*
 * Unit tests of sr_oracle: model validation with named errors, golden vectors of the documented
 * functions (cross-checked against an independent Python implementation of the header's text),
 * distinctness and range of route rows, determinism, prefix and fingerprint sensitivity, row
 * arithmetic of generate, stop rules, logprobs and route dtypes.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sr_oracle.h"
#include "sr_test.h"

static const int32_t LAYERS3[3] = {1, 5, 9};
static const uint64_t FPS3[3] = {0x2222, 0x3333, 0x4444};

static sr_oracle_model small_model(void)
{
    sr_oracle_model m = SR_ORACLE_MODEL_INIT;
    m.seed = 42;
    m.vocab = 1000;
    m.num_layers = 3;
    m.layer_indices = LAYERS3;
    m.experts = 256;
    m.topk = 8;
    m.eos_id = 2;
    m.eos_rate = 0.1;
    return m;
}

static sr_oracle *make(const sr_oracle_model *m)
{
    sr_oracle *o = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_new(&o, m, &err), err);
    return o;
}

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

static int row_distinct_in_range(const int32_t *row, int K, int64_t E)
{
    for (int j = 0; j < K; j++) {
        if (row[j] < 0 || row[j] >= E)
            return 0;
        for (int q = 0; q < j; q++)
            if (row[q] == row[j])
                return 0;
    }
    return 1;
}

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

enum { NTOK = 40, L3 = 3, K8 = 8 };

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

static void gen_ok(sr_oracle_output *out, const sr_oracle *o, uint64_t F, const uint64_t *fps,
                   const sr_oracle_request *rq)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_generate(out, o, F, fps, rq, &err), err);
}

static void gen_fail(const sr_oracle *o, const sr_oracle_request *rq, sr_oracle_output *out,
                     int want)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_oracle_generate(out, o, 1, FPS3, rq, &err), err, want);
}

START_TEST(test_generate_rows_and_requests)
{
    sr_oracle_model m = small_model();
    m.eos_rate = 0.0;
    sr_oracle *o = make(&m);
    int32_t prompt[10];
    for (int i = 0; i < 10; i++)
        prompt[i] = 100 + i;
    sr_oracle_request rq = SR_ORACLE_REQUEST_INIT;
    rq.prompt = prompt;
    rq.prompt_len = 10;
    rq.max_tokens = 6;
    rq.route_start = 0;
    rq.route_dtype = SR_DTYPE_UINT8;
    int32_t toks[6], toks2[6];
    static uint8_t full[15 * L3 * K8], part[15 * L3 * K8];
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = toks;
    out.routes = full;
    out.routes_cap = sizeof full;
    gen_ok(&out, o, 7, FPS3, &rq);
    ck_assert_int_eq(out.num_tokens, 6);
    ck_assert_int_eq(out.num_rows, 10 + 6 - 1); /* P + G - 1 */
    /* Rows [s, P+G-1) are the tail of the full rows, for every s in [0, P]. */
    for (int s = 0; s <= 10; s++) {
        sr_oracle_output o2 = out;
        o2.tokens = toks2;
        o2.routes = part;
        rq.route_start = s;
        gen_ok(&o2, o, 7, FPS3, &rq);
        ck_assert_int_eq(o2.num_rows, 15 - s);
        ck_assert_mem_eq(toks, toks2, sizeof toks);
        ck_assert_mem_eq(part, full + (size_t)s * L3 * K8, (size_t)(15 - s) * L3 * K8);
    }
    /* The same rows from sr_oracle_routes over prompt ++ output. */
    int32_t seq[16];
    memcpy(seq, prompt, sizeof prompt);
    memcpy(seq + 10, toks, sizeof toks);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(
        sr_oracle_routes(part, sizeof part, NULL, SR_DTYPE_UINT8, o, FPS3, seq, 16, 0, 15, &err),
        err);
    ck_assert_mem_eq(part, full, sizeof full);
    ck_assert_sr_code(
        sr_oracle_routes(part, sizeof part, NULL, SR_DTYPE_UINT8, o, FPS3, seq, 16, 3, 17, &err),
        err, SR_E_ORACLE_REQUEST);
    ck_assert_sr_code(
        sr_oracle_routes(part, 10, NULL, SR_DTYPE_UINT8, o, FPS3, seq, 16, 0, 15, &err), err,
        SR_E_ORACLE_REQUEST);
    seq[3] = 1000;
    ck_assert_sr_code(
        sr_oracle_routes(part, sizeof part, NULL, SR_DTYPE_UINT8, o, FPS3, seq, 16, 0, 15, &err),
        err, SR_E_ORACLE_TOKEN);
    ck_assert_int_eq(err.offset, 3);

    /* Request errors, each named. */
    rq.route_start = 11; /* > P */
    gen_fail(o, &rq, &out, SR_E_ORACLE_REQUEST);
    rq.route_start = 0;
    out.routes_cap = sizeof full - 1;
    gen_fail(o, &rq, &out, SR_E_ORACLE_REQUEST);
    out.routes_cap = sizeof full;
    rq.route_dtype = SR_DTYPE_FLOAT32;
    gen_fail(o, &rq, &out, SR_E_ORACLE_REQUEST);
    rq.route_dtype = SR_DTYPE_UINT8;
    rq.max_tokens = 0;
    gen_fail(o, &rq, &out, SR_E_ORACLE_REQUEST);
    rq.max_tokens = 6;
    rq.prompt_len = 0;
    gen_fail(o, &rq, &out, SR_E_ORACLE_REQUEST);
    rq.prompt_len = 10;
    rq.prior_generated = 11;
    gen_fail(o, &rq, &out, SR_E_ORACLE_REQUEST);
    rq.prior_generated = 0;
    prompt[4] = -1;
    gen_fail(o, &rq, &out, SR_E_ORACLE_TOKEN);
    prompt[4] = 104;
    int32_t bad_stop = 5000;
    rq.stop_ids = &bad_stop;
    rq.num_stop_ids = 1;
    gen_fail(o, &rq, &out, SR_E_ORACLE_TOKEN);
    rq.num_stop_ids = 0;
    /* Without routes no buffer is needed and no rows are reported. */
    rq.route_start = -1;
    out.routes = NULL;
    gen_ok(&out, o, 7, FPS3, &rq);
    ck_assert_int_eq(out.num_rows, 0);
    ck_assert_int_eq(out.routes_max, -1);
    sr_oracle_free(o);
}
END_TEST

START_TEST(test_stop_rules)
{
    sr_oracle_model m = small_model();
    m.eos_rate = 1.0;
    sr_oracle *o = make(&m);
    int32_t prompt[2] = {1, 2}, toks[64];
    sr_oracle_request rq = SR_ORACLE_REQUEST_INIT;
    rq.prompt = prompt;
    rq.prompt_len = 2;
    rq.max_tokens = 20;
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = toks;
    gen_ok(&out, o, 3, FPS3, &rq);
    ck_assert_int_eq(out.num_tokens, 1);
    ck_assert_int_eq(toks[0], 2);
    ck_assert_int_eq(out.finish, SR_ORACLE_FINISH_STOP);
    rq.ignore_eos = 1;
    gen_ok(&out, o, 3, FPS3, &rq);
    ck_assert_int_eq(out.num_tokens, 20);
    ck_assert_int_eq(out.finish, SR_ORACLE_FINISH_LENGTH);
    sr_oracle_free(o);

    /* EOS rate 0: EOS never appears even in a 3-token vocabulary; rate 0.1 is about 10%. */
    m = small_model();
    m.vocab = 3;
    m.eos_rate = 0.0;
    o = make(&m);
    rq.ignore_eos = 0;
    rq.max_tokens = 64;
    gen_ok(&out, o, 3, FPS3, &rq);
    ck_assert_int_eq(out.num_tokens, 64);
    for (int i = 0; i < 64; i++)
        ck_assert_int_ne(toks[i], 2);
    sr_oracle_free(o);
    m = small_model();
    o = make(&m);
    int eos = 0;
    uint64_t h = sr_oracle_prefix_empty(o);
    for (int i = 0; i < 10000; i++) {
        int32_t t;
        double lp;
        h = sr_oracle_prefix_push(h, i % 1000);
        sr_oracle_next(&t, &lp, o, 5, h);
        eos += t == 2;
    }
    ck_assert_int_ge(eos, 800);
    ck_assert_int_le(eos, 1200);
    sr_oracle_free(o);

    /* A model stop sequence (golden: seed 0, vocab 5, stop [3, 4]) and request stop ids. */
    static const int32_t seq34[2] = {3, 4};
    sr_oracle_stopseq st = {seq34, 2};
    static const int32_t layer0[1] = {0};
    static const uint64_t fp77[1] = {0x77};
    sr_oracle_model s = SR_ORACLE_MODEL_INIT;
    s.vocab = 5;
    s.num_layers = 1;
    s.layer_indices = layer0;
    s.experts = 8;
    s.topk = 2;
    s.num_stops = 1;
    s.stops = &st;
    s.logprob_scale = 1.0;
    o = make(&s);
    uint8_t routes[65 * 2];
    out.routes = routes;
    out.routes_cap = sizeof routes;
    rq.route_start = 0;
    rq.route_dtype = SR_DTYPE_UINT8;
    gen_ok(&out, o, 0x99, fp77, &rq);
    static const int32_t want[4] = {3, 2, 3, 4};
    ck_assert_int_eq(out.num_tokens, 4);
    ck_assert_mem_eq(toks, want, sizeof want);
    ck_assert_int_eq(out.finish, SR_ORACLE_FINISH_STOP);
    ck_assert_int_eq(out.num_rows, 5);
    ck_assert_int_eq(routes[8], 5);
    ck_assert_int_eq(routes[9], 1);
    int32_t stop2 = 2;
    rq.stop_ids = &stop2;
    rq.num_stop_ids = 1;
    gen_ok(&out, o, 0x99, fp77, &rq);
    ck_assert_int_eq(out.num_tokens, 2);
    ck_assert_int_eq(out.finish, SR_ORACLE_FINISH_STOP);
    rq.num_stop_ids = 0;
    /* A generation split in two calls (prior_generated) stops where one call does. */
    rq.prompt = prompt;
    rq.prompt_len = 2;
    gen_ok(&out, o, 0x99, fp77, &rq);
    int32_t cont[5] = {1, 2, 3, 2, 3}, c[64];
    rq.prompt = cont;
    rq.prompt_len = 5;
    rq.prior_generated = 3;
    rq.route_start = -1;
    out.tokens = c;
    gen_ok(&out, o, 0x99, fp77, &rq);
    ck_assert_int_eq(out.num_tokens, 1);
    ck_assert_int_eq(c[0], 4);
    ck_assert_int_eq(out.finish, SR_ORACLE_FINISH_STOP);
    /* Without prior_generated the prompt's 3 is not output, so the same 4 does not stop. */
    rq.prior_generated = 0;
    gen_ok(&out, o, 0x99, fp77, &rq);
    ck_assert_int_eq(c[0], 4);
    ck_assert_int_gt(out.num_tokens, 1);
    sr_oracle_free(o);
}
END_TEST

START_TEST(test_logprobs)
{
    sr_oracle_model m = small_model();
    m.logprob_scale = 3.0;
    sr_oracle *o = make(&m);
    uint64_t h = sr_oracle_prefix_empty(o);
    double lo = 0.0;
    for (int i = 0; i < 5000; i++) {
        int32_t t;
        double lp;
        h = sr_oracle_prefix_push(h, i % 1000);
        sr_oracle_next(&t, &lp, o, 5, h);
        ck_assert(isfinite(lp) && lp <= 0.0 && lp > -3.0);
        lo = lp < lo ? lp : lo;
    }
    ck_assert_double_lt(lo, -2.9);
    sr_oracle_free(o);
    m.nonfinite_rate = 1.0;
    o = make(&m);
    int nan = 0, pinf = 0, ninf = 0;
    for (int i = 0; i < 300; i++) {
        int32_t t;
        double lp;
        h = sr_oracle_prefix_push(h, i % 1000);
        sr_oracle_next(&t, &lp, o, 5, h);
        nan += isnan(lp);
        pinf += isinf(lp) && lp > 0;
        ninf += isinf(lp) && lp < 0;
    }
    ck_assert_int_eq(nan + pinf + ninf, 300);
    ck_assert(nan > 0 && pinf > 0 && ninf > 0);
    sr_oracle_free(o);
    m.nonfinite_rate = 0.0;
    m.logprob_scale = 0.0;
    o = make(&m);
    int32_t t;
    double lp;
    sr_oracle_next(&t, &lp, o, 5, h);
    ck_assert(lp == 0.0 && !signbit(lp));
    sr_oracle_free(o);
}
END_TEST

START_TEST(test_route_dtypes)
{
    static const int64_t E[3] = {300, 40000, (int64_t)1 << 20};
    static const sr_dtype narrow[3] = {SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT16};
    static const sr_dtype wide[3] = {SR_DTYPE_INT16, SR_DTYPE_INT32, SR_DTYPE_INT32};
    int32_t prompt[30], toks[30];
    for (int i = 0; i < 30; i++)
        prompt[i] = i;
    static int32_t r32[59 * L3 * K8];
    static int16_t r16[59 * L3 * K8];
    for (int c = 0; c < 3; c++) {
        sr_oracle_model m = small_model();
        m.experts = E[c];
        m.eos_id = -1;
        sr_oracle *o = make(&m);
        sr_oracle_request rq = SR_ORACLE_REQUEST_INIT;
        rq.prompt = prompt;
        rq.prompt_len = 30;
        rq.max_tokens = 30;
        rq.route_start = 0;
        sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
        out.tokens = toks;
        out.routes = r32;
        out.routes_cap = sizeof r32;
        rq.route_dtype = narrow[c];
        gen_fail(o, &rq, &out, SR_E_ORACLE_REQUEST);
        rq.route_dtype = SR_DTYPE_INT32;
        gen_ok(&out, o, 9, FPS3, &rq);
        ck_assert_int_eq(out.num_rows, 59);
        /* The data needs the wider dtype: the max is past the narrow one's range. */
        ck_assert_int_ge(out.routes_max, E[c] == 300 ? 256 : 32768);
        ck_assert_int_lt(out.routes_max, E[c]);
        if (wide[c] == SR_DTYPE_INT16) {
            out.routes = r16;
            out.routes_cap = sizeof r16;
            rq.route_dtype = SR_DTYPE_INT16;
            gen_ok(&out, o, 9, FPS3, &rq);
            for (size_t i = 0; i < 59 * L3 * K8; i++)
                ck_assert_int_eq(r16[i], r32[i]);
        }
        sr_oracle_free(o);
    }
}
END_TEST

/* A 30k-token rollout with 48 layers and top-8: hashing is O(n), so this stays fast. */
START_TEST(test_long_rollout)
{
    enum { P = 30000, G = 200, NL = 48 };
    int32_t layers[NL];
    uint64_t fps[NL];
    for (int l = 0; l < NL; l++) {
        layers[l] = 2 * l + 1;
        fps[l] = (uint64_t)l * 977;
    }
    sr_oracle_model m = small_model();
    m.vocab = 150000;
    m.num_layers = NL;
    m.layer_indices = layers;
    m.eos_rate = 0.0;
    sr_oracle *o = make(&m);
    int32_t *prompt = malloc(sizeof(int32_t) * P), toks[G];
    for (int i = 0; i < P; i++)
        prompt[i] = (i * 7919) % 150000;
    size_t cap = (size_t)(P + G - 1) * NL * K8;
    uint8_t *routes = malloc(cap);
    sr_oracle_request rq = SR_ORACLE_REQUEST_INIT;
    rq.prompt = prompt;
    rq.prompt_len = P;
    rq.max_tokens = G;
    rq.route_start = 0;
    rq.route_dtype = SR_DTYPE_UINT8;
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = toks;
    out.routes = routes;
    out.routes_cap = cap;
    gen_ok(&out, o, 1, fps, &rq);
    ck_assert_int_eq(out.num_rows, P + G - 1);
    int32_t last[K8];
    for (int j = 0; j < K8; j++)
        last[j] = routes[cap - K8 + (size_t)j];
    ck_assert(row_distinct_in_range(last, K8, 256));
    free(prompt);
    free(routes);
    sr_oracle_free(o);
}
END_TEST

static Suite *oracle_suite(void)
{
    Suite *s = suite_create("oracle");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_invalid_models);
    tcase_add_test(tc, test_valid_edges_and_copy);
    tcase_add_test(tc, test_golden_primitives);
    tcase_add_test(tc, test_golden_generate);
    tcase_add_test(tc, test_rows_distinct_in_range);
    tcase_add_test(tc, test_determinism_and_prefix_sensitivity);
    tcase_add_test(tc, test_layer_fingerprint_sensitivity);
    tcase_add_test(tc, test_generate_rows_and_requests);
    tcase_add_test(tc, test_stop_rules);
    tcase_add_test(tc, test_logprobs);
    tcase_add_test(tc, test_route_dtypes);
    tcase_add_test(tc, test_long_rollout);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(oracle_suite());
}
