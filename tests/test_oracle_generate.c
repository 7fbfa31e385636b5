/*
 * Unit tests of sr_oracle_generate: row arithmetic of generate and of sr_oracle_routes, request
 * errors, stop rules, logprobs, route dtypes and a long rollout. The model, golden vectors and
 * route rows are in test_oracle.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_util.h"
#include "sr_oracle.h"
#include "sr_test.h"

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

/* The small model without EOS, a 10-token prompt, 6 tokens asked with uint8 routes from row 0.
 * rq points into prompt, so a gen_case is not copied once set up. */
typedef struct gen_case {
    sr_oracle *o;
    int32_t prompt[10];
    sr_oracle_request rq;
} gen_case;

static void gen_case_init(gen_case *g)
{
    sr_oracle_model m = small_model();
    m.eos_rate = 0.0;
    g->o = make(&m);
    for (int i = 0; i < 10; i++)
        g->prompt[i] = 100 + i;
    sr_oracle_request rq = SR_ORACLE_REQUEST_INIT;
    g->rq = rq;
    g->rq.prompt = g->prompt;
    g->rq.prompt_len = 10;
    g->rq.max_tokens = 6;
    g->rq.route_start = 0;
    g->rq.route_dtype = SR_DTYPE_UINT8;
}

START_TEST(test_generate_rows)
{
    gen_case g;
    gen_case_init(&g);
    sr_oracle *o = g.o;
    int32_t toks[6], toks2[6];
    static uint8_t full[15 * L3 * K8], part[15 * L3 * K8];
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = toks;
    out.routes = full;
    out.routes_cap = sizeof full;
    gen_ok(&out, o, 7, FPS3, &g.rq);
    ck_assert_int_eq(out.num_tokens, 6);
    ck_assert_int_eq(out.num_rows, 10 + 6 - 1); /* P + G - 1 */
    /* Rows [s, P+G-1) are the tail of the full rows, for every s in [0, P]. */
    for (int s = 0; s <= 10; s++) {
        sr_oracle_output o2 = out;
        o2.tokens = toks2;
        o2.routes = part;
        g.rq.route_start = s;
        gen_ok(&o2, o, 7, FPS3, &g.rq);
        ck_assert_int_eq(o2.num_rows, 15 - s);
        ck_assert_mem_eq(toks, toks2, sizeof toks);
        ck_assert_mem_eq(part, full + (size_t)s * L3 * K8, (size_t)(15 - s) * L3 * K8);
    }
    /* The same rows from sr_oracle_routes over prompt ++ output. */
    int32_t seq[16];
    memcpy(seq, g.prompt, sizeof g.prompt);
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
    sr_oracle_free(o);
}
END_TEST

/* Request errors, each named; then a request without routes. */
START_TEST(test_generate_request_errors)
{
    gen_case g;
    gen_case_init(&g);
    sr_oracle *o = g.o;
    sr_oracle_request *rq = &g.rq;
    int32_t toks[6];
    static uint8_t full[15 * L3 * K8];
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = toks;
    out.routes = full;
    out.routes_cap = sizeof full;
    rq->route_start = 11; /* > P */
    gen_fail(o, rq, &out, SR_E_ORACLE_REQUEST);
    rq->route_start = 0;
    out.routes_cap = sizeof full - 1;
    gen_fail(o, rq, &out, SR_E_ORACLE_REQUEST);
    out.routes_cap = sizeof full;
    rq->route_dtype = SR_DTYPE_FLOAT32;
    gen_fail(o, rq, &out, SR_E_ORACLE_REQUEST);
    rq->route_dtype = SR_DTYPE_UINT8;
    rq->max_tokens = 0;
    gen_fail(o, rq, &out, SR_E_ORACLE_REQUEST);
    rq->max_tokens = 6;
    rq->prompt_len = 0;
    gen_fail(o, rq, &out, SR_E_ORACLE_REQUEST);
    rq->prompt_len = 10;
    rq->prior_generated = 11;
    gen_fail(o, rq, &out, SR_E_ORACLE_REQUEST);
    rq->prior_generated = 0;
    g.prompt[4] = -1;
    gen_fail(o, rq, &out, SR_E_ORACLE_TOKEN);
    g.prompt[4] = 104;
    int32_t bad_stop = 5000;
    rq->stop_ids = &bad_stop;
    rq->num_stop_ids = 1;
    gen_fail(o, rq, &out, SR_E_ORACLE_TOKEN);
    rq->num_stop_ids = 0;
    /* Without routes no buffer is needed and no rows are reported. */
    rq->route_start = -1;
    out.routes = NULL;
    gen_ok(&out, o, 7, FPS3, rq);
    ck_assert_int_eq(out.num_rows, 0);
    ck_assert_int_eq(out.routes_max, -1);
    sr_oracle_free(o);
}
END_TEST

/* The message of a request that passes every limit check but has no token buffer (the check
 * after them): a request at its limits gets this one, a request past a limit its own. */
#define PAST_THE_LIMITS "no token buffer given"

/* Generates with o and rq into an output without a token buffer: the message is PAST_THE_LIMITS
 * exactly when `within` (the request is within its size limits). */
static void limit_case(const sr_oracle *o, const sr_oracle_request *rq, int within,
                       const char *what)
{
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    sr_err err = SR_ERR_INIT;
    int rc = sr_oracle_generate(&out, o, 1, FPS3, rq, &err);
    ck_assert_msg(rc == SR_E_ORACLE_REQUEST, "%s: rc %d", what, rc);
    int reached = strstr(err.msg, PAST_THE_LIMITS) != NULL;
    ck_assert_msg(reached == within, "%s: '%s'", what, err.msg);
}

/* A request's limits at, before and past: prompt + max_tokens up to SR_ORACLE_MAX_SEQ (each term
 * at its largest; these checks come before any token is read or buffer used, so the lengths
 * need no buffers of that size), max_tokens from 1, num_stop_ids up to SR_ORACLE_MAX_STOP_IDS,
 * routed_experts_prompt_start from -1 to the prompt's length. */
START_TEST(test_request_size_limits)
{
    gen_case g;
    gen_case_init(&g);
    sr_oracle_request rq = g.rq;
    rq.route_start = -1;
    static int32_t stops[SR_ORACLE_MAX_STOP_IDS + 1];
    static const struct {
        size_t prompt;
        int64_t max_tokens;
        int within;
    } cs[] = {
        {1, SR_ORACLE_MAX_SEQ - 1, 1},
        {1, SR_ORACLE_MAX_SEQ, 0},
        {2, SR_ORACLE_MAX_SEQ - 1, 0},
        {SR_ORACLE_MAX_SEQ - 1, 1, 1},
        {SR_ORACLE_MAX_SEQ, 1, 0},
        {SR_ORACLE_MAX_SEQ - 6, 6, 1},
        {SR_ORACLE_MAX_SEQ - 5, 6, 0},
        {10, 1, 1},
        {10, 0, 0},
    };
    char what[96];
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        rq.prompt_len = cs[i].prompt;
        rq.max_tokens = cs[i].max_tokens;
        snprintf(what, sizeof what, "prompt %zu + max_tokens %lld", cs[i].prompt,
                 (long long)cs[i].max_tokens);
        limit_case(g.o, &rq, cs[i].within, what);
    }
    /* The later checks run with buffers: within the limits the request generates. */
    int32_t toks[6];
    static uint8_t routes[15 * L3 * K8];
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = toks;
    out.routes = routes;
    out.routes_cap = sizeof routes;
    sr_err err = SR_ERR_INIT;
    rq.prompt_len = 10;
    rq.max_tokens = 6;
    rq.stop_ids = stops;
    for (size_t n = SR_ORACLE_MAX_STOP_IDS - 1; n <= SR_ORACLE_MAX_STOP_IDS + 1; n++) {
        rq.num_stop_ids = n;
        int rc = sr_oracle_generate(&out, g.o, 1, FPS3, &rq, &err);
        ck_assert_msg(rc == (n <= SR_ORACLE_MAX_STOP_IDS ? 0 : SR_E_ORACLE_REQUEST),
                      "%zu stop ids: rc %d (%s)", n, rc, err.msg);
    }
    /* routed_experts_prompt_start: -1 and 0 .. P, not -2 nor P + 1. */
    rq.num_stop_ids = 0;
    for (int64_t st = -2; st <= 11; st++) {
        rq.route_start = st;
        int rc = sr_oracle_generate(&out, g.o, 1, FPS3, &rq, &err);
        ck_assert_msg(rc == (st >= -1 && st <= 10 ? 0 : SR_E_ORACLE_REQUEST),
                      "route_start %lld: rc %d (%s)", (long long)st, rc, err.msg);
    }
    sr_oracle_free(g.o);
}
END_TEST

START_TEST(test_stop_eos)
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
}
END_TEST

/* The golden stop-sequence model: seed 0, vocab 5, one layer, stop sequence [3, 4]. */
static sr_oracle *stopseq_model(void)
{
    static const int32_t seq34[2] = {3, 4};
    static const sr_oracle_stopseq st = {seq34, 2};
    static const int32_t layer0[1] = {0};
    sr_oracle_model s = SR_ORACLE_MODEL_INIT;
    s.vocab = 5;
    s.num_layers = 1;
    s.layer_indices = layer0;
    s.experts = 8;
    s.topk = 2;
    s.num_stops = 1;
    s.stops = &st;
    s.logprob_scale = 1.0;
    return make(&s);
}

/* Prompt [1, 2], up to 64 tokens, uint8 routes from row 0, on the stop-sequence model. rq and
 * out point into the struct, so a stop_case is not copied once set up. */
typedef struct stop_case {
    sr_oracle *o;
    int32_t prompt[2], toks[64];
    uint8_t routes[65 * 2];
    sr_oracle_request rq;
    sr_oracle_output out;
} stop_case;

static void stop_case_init(stop_case *c)
{
    c->o = stopseq_model();
    c->prompt[0] = 1;
    c->prompt[1] = 2;
    sr_oracle_request rq = SR_ORACLE_REQUEST_INIT;
    c->rq = rq;
    c->rq.prompt = c->prompt;
    c->rq.prompt_len = 2;
    c->rq.max_tokens = 64;
    c->rq.route_start = 0;
    c->rq.route_dtype = SR_DTYPE_UINT8;
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    c->out = out;
    c->out.tokens = c->toks;
    c->out.routes = c->routes;
    c->out.routes_cap = sizeof(c->routes);
}

static const uint64_t fp77[1] = {0x77};

/* A model stop sequence and request stop ids. */
START_TEST(test_stop_sequences)
{
    stop_case c;
    stop_case_init(&c);
    gen_ok(&c.out, c.o, 0x99, fp77, &c.rq);
    static const int32_t want[4] = {3, 2, 3, 4};
    ck_assert_int_eq(c.out.num_tokens, 4);
    ck_assert_mem_eq(c.toks, want, sizeof want);
    ck_assert_int_eq(c.out.finish, SR_ORACLE_FINISH_STOP);
    ck_assert_int_eq(c.out.num_rows, 5);
    ck_assert_int_eq(c.routes[8], 5);
    ck_assert_int_eq(c.routes[9], 1);
    int32_t stop2 = 2;
    c.rq.stop_ids = &stop2;
    c.rq.num_stop_ids = 1;
    gen_ok(&c.out, c.o, 0x99, fp77, &c.rq);
    ck_assert_int_eq(c.out.num_tokens, 2);
    ck_assert_int_eq(c.out.finish, SR_ORACLE_FINISH_STOP);
    sr_oracle_free(c.o);
}
END_TEST

/* A generation split in two calls (prior_generated) stops where one call does. */
START_TEST(test_stop_across_calls)
{
    stop_case c;
    stop_case_init(&c);
    gen_ok(&c.out, c.o, 0x99, fp77, &c.rq);
    int32_t cont[5] = {1, 2, 3, 2, 3}, t[64];
    c.rq.prompt = cont;
    c.rq.prompt_len = 5;
    c.rq.prior_generated = 3;
    c.rq.route_start = -1;
    c.out.tokens = t;
    gen_ok(&c.out, c.o, 0x99, fp77, &c.rq);
    ck_assert_int_eq(c.out.num_tokens, 1);
    ck_assert_int_eq(t[0], 4);
    ck_assert_int_eq(c.out.finish, SR_ORACLE_FINISH_STOP);
    /* Without prior_generated the prompt's 3 is not output, so the same 4 does not stop. */
    c.rq.prior_generated = 0;
    gen_ok(&c.out, c.o, 0x99, fp77, &c.rq);
    ck_assert_int_eq(t[0], 4);
    ck_assert_int_gt(c.out.num_tokens, 1);
    sr_oracle_free(c.o);
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

static Suite *oracle_generate_suite(void)
{
    Suite *s = suite_create("oracle_generate");
    TCase *tc = tcase_create("generate");
    tcase_add_test(tc, test_generate_rows);
    tcase_add_test(tc, test_generate_request_errors);
    tcase_add_test(tc, test_request_size_limits);
    tcase_add_test(tc, test_stop_eos);
    tcase_add_test(tc, test_stop_sequences);
    tcase_add_test(tc, test_stop_across_calls);
    tcase_add_test(tc, test_logprobs);
    tcase_add_test(tc, test_route_dtypes);
    tcase_add_test(tc, test_long_rollout);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(oracle_generate_suite());
}
