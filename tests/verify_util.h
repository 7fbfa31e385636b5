/*
 * The verifier tests' fixture (test_verify.c, test_verify_rows.c): a verifier of a small model,
 * a result to record checks in, and rollouts built from the oracle itself, which the tests then
 * corrupt one way at a time.
 */
#ifndef SR_VERIFY_UTIL_H
#define SR_VERIFY_UTIL_H

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/result.h"
#include "run/rollout.h"
#include "run/verify.h"
#include "sr_oracle.h"
#include "sr_test.h"

typedef struct fx {
    sr_engine_config cfg;
    sr_verifier *v;
    sr_run_result *run;
    sr_scenario_result *res;
} fx;

static inline void fx_init_experts(fx *f, int64_t experts)
{
    sr_err err = SR_ERR_INIT;
    sr_engine_config_defaults(&f->cfg);
    f->cfg.vocab = 1000;
    f->cfg.num_layers = 2;
    f->cfg.experts = experts;
    f->cfg.topk = 4;
    f->cfg.eos_rate = 0;
    ck_assert_sr_ok(sr_verifier_new(&f->v, &f->cfg, &err), err);
    ck_assert_sr_ok(sr_run_result_new(&f->run, &err), err);
    ck_assert_sr_ok(sr_run_result_add_scenario(&f->res, f->run, &err), err);
}

static inline void fx_init(fx *f)
{
    fx_init_experts(f, 16);
}

static inline void fx_free(fx *f)
{
    sr_verifier_free(f->v);
    sr_run_result_free(f->run);
}

/*
 * One-turn rollout: P0 prompt tokens, G tokens generated with the global fingerprint of version
 * `gver` and the layer fingerprints of `lver`; every row claims version `claim`. Rows 0..T-2 are
 * captured, row T-1 is the padding row.
 */
static inline void make_rollout(sr_rollout_result *r, fx *f, int P0, int G, int64_t gver,
                                int64_t lver, int64_t claim)
{
    sr_err err = SR_ERR_INIT;
    int L = f->cfg.num_layers, K = f->cfg.topk, T = P0 + G;
    uint64_t g, lfps[8];
    ck_assert_sr_ok(sr_verifier_fingerprints(&g, NULL, f->v, gver, &err), err);
    ck_assert_sr_ok(sr_verifier_fingerprints(NULL, lfps, f->v, lver, &err), err);
    memset(r, 0, sizeof(*r));
    r->failed_turn = -1;
    r->prompt_ids = malloc((size_t)P0 * sizeof(int32_t));
    for (int i = 0; i < P0; i++)
        r->prompt_ids[i] = (int32_t)((i * 37 + 11) % f->cfg.vocab);
    r->prompt_len = (size_t)P0;
    r->response_ids = malloc((size_t)G * sizeof(int32_t));
    r->logprobs = malloc((size_t)G * sizeof(double));
    r->loss_mask = malloc((size_t)G);
    memset(r->loss_mask, 1, (size_t)G);
    r->response_len = (size_t)G;
    int64_t shape[3] = {T, L, K};
    ck_assert_sr_ok(sr_ndarray_alloc(&r->routes, SR_DTYPE_INT32, 3, shape, &err), err);
    sr_oracle_request q = SR_ORACLE_REQUEST_INIT;
    q.prompt = r->prompt_ids;
    q.prompt_len = (size_t)P0;
    q.max_tokens = G;
    q.ignore_eos = 1;
    q.route_start = 0;
    q.route_dtype = SR_DTYPE_INT32;
    sr_oracle_output o = SR_ORACLE_OUTPUT_INIT;
    o.tokens = r->response_ids;
    o.logprobs = r->logprobs;
    o.routes = r->routes.data;
    o.routes_cap = r->routes.nbytes;
    ck_assert_sr_ok(sr_oracle_generate(&o, sr_verifier_oracle(f->v), g, lfps, &q, &err), err);
    ck_assert_int_eq(o.num_tokens, G);
    for (int i = 0; i < G; i++)
        if (!isfinite(r->logprobs[i]))
            r->logprobs[i] = SR_VERIFY_CLAMPED_LOGPROB;
    int32_t *rows = r->routes.data;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < K; k++)
            rows[((T - 1) * L + l) * K + k] = k;
    r->captured_rows = T - 1;
    r->row_version = malloc((size_t)T * sizeof(int64_t));
    r->held_version = malloc((size_t)T * sizeof(int64_t));
    for (int i = 0; i < T; i++)
        r->row_version[i] = r->held_version[i] = claim;
    r->turns = calloc(1, sizeof(sr_rollout_turn));
    r->n_turns = 1;
    r->turns[0].prompt_len = P0;
    r->turns[0].generated = G;
    r->turns[0].weight_version = claim;
}

static inline int32_t *row_at(sr_rollout_result *r, int64_t i, int l)
{
    int64_t L = r->routes.shape[1], K = r->routes.shape[2];
    return (int32_t *)r->routes.data + (i * L + l) * K;
}

/* Verifies with ctx; returns ok. */
static inline int verify(fx *f, sr_verifier *v, const sr_rollout_result *r)
{
    sr_verify_ctx ctx = {"s", 0, "rollout-0", 1, f->cfg.experts, f->res, NULL};
    sr_err err = SR_ERR_INIT;
    int ok = -1;
    ck_assert_sr_ok(sr_verify_rollout(&ok, v, r, 3, &ctx, &err), err);
    return ok;
}

static inline const sr_check *only_check(const fx *f, const char *name)
{
    ck_assert_msg(f->res->n_fired == 1, "expected only %s, %zu names fired (first %s: %s)", name,
                  f->res->n_fired, f->res->n_checks ? f->res->checks[0].name : "-",
                  f->res->n_checks ? f->res->checks[0].message : "");
    ck_assert_str_eq(f->res->fired[0].name, name);
    return &f->res->checks[0];
}

static inline void expect_class(fx *f, sr_rollout_result *r, const char *cls, int64_t row,
                                int64_t layer)
{
    ck_assert_int_eq(verify(f, f->v, r), 0);
    const sr_check *c = only_check(f, "trace.row_mismatch");
    ck_assert_str_eq(c->classification, cls);
    ck_assert_int_eq(c->where.sample, 3);
    ck_assert_int_eq(c->where.turn, 1);
    ck_assert_int_eq(c->where.row, row);
    ck_assert_int_eq(c->where.layer, layer);
    ck_assert_msg(strstr(c->message, "scenario s step rollout-0 sample 3 turn 1 row") != NULL,
                  "message lacks its place: %s", c->message);
}

#endif /* SR_VERIFY_UTIL_H */
