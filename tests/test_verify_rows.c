/*
 * The route-row checks' blocks (harness/run/verify_rows.c): rows of one weight version are
 * compared with the oracle's a block of up to 64 rows at a time in the trace's dtype, and only a
 * block that differs is looked at row by row. Mismatches at the edges of blocks and of version
 * runs must be found and classified as before; every route dtype (those the oracle's rows can be
 * written in, and those they cannot: uint8 below 256 experts' ids, int64) must give the verdict
 * the same ids give in an int32 trace; a row equal to the oracle's is still routes.invalid when
 * the contract's expert count is below the model's.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "verify_util.h"

/* Rows [lo, hi) recomputed by the oracle at weight version `ver`, and claimed as it. */
static void restamp(sr_rollout_result *r, fx *f, int64_t lo, int64_t hi, int64_t ver)
{
    sr_err err = SR_ERR_INIT;
    uint64_t fps[8];
    ck_assert_sr_ok(sr_verifier_fingerprints(NULL, fps, f->v, ver, &err), err);
    const sr_oracle *o = sr_verifier_oracle(f->v);
    uint64_t h = sr_oracle_prefix_empty(o);
    for (int64_t i = 0; i < hi; i++) {
        size_t P = r->prompt_len;
        h = sr_oracle_prefix_push(h, i < (int64_t)P ? r->prompt_ids[i] : r->response_ids[i - P]);
        if (i < lo)
            continue;
        for (int l = 0; l < f->cfg.num_layers; l++)
            sr_oracle_route_row(row_at(r, i, l), o, l, fps[l], h);
        r->row_version[i] = r->held_version[i] = ver;
    }
}

/* The check `name` of class `cls` ("" for none), which must have fired once. */
static const sr_check *find_check(const fx *f, const char *name, const char *cls)
{
    for (size_t i = 0; i < f->res->n_checks; i++)
        if (!strcmp(f->res->checks[i].name, name) && !strcmp(f->res->checks[i].classification, cls))
            return &f->res->checks[i];
    ck_abort_msg("%s [%s] did not fire (%zu checks)", name, cls, f->res->n_checks);
    return NULL;
}

static void expect_at(const fx *f, const char *name, const char *cls, int64_t row, int64_t layer)
{
    const sr_check *c = find_check(f, name, cls);
    ck_assert_int_eq(c->where.row, row);
    ck_assert_int_eq(c->where.layer, layer);
}

/* 100 prompt and 40 generated tokens: rows 0..59 of version 1, 60..138 of version 0, so blocks
 * [0, 60), [60, 124), [124, 139); a mismatch at the last row of the first two and the first and
 * last of the third. */
START_TEST(test_block_and_version_edges)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 100, 40, 0, 0, 0);
    restamp(&r, &f, 0, 60, 1);
    ck_assert_int_eq(verify(&f, f.v, &r), 1);
    ck_assert_int_eq(f.res->n_fired, 0);
    ck_assert_int_eq(f.res->counters.rows_verified, 139);
    ck_assert_int_eq(f.res->counters.tokens_verified, 40);
    fx_free(&f);

    fx_init(&f);
    restamp(&r, &f, 59, 60, 0); /* row 59 holds version 0's row, claims version 1 */
    r.row_version[59] = r.held_version[59] = 1;
    memset(row_at(&r, 123, 0), 0, 4 * sizeof(int32_t));
    row_at(&r, 124, 1)[2] = row_at(&r, 124, 1)[3];
    memcpy(row_at(&r, 138, 1), row_at(&r, 137, 1), 4 * sizeof(int32_t));
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    ck_assert_int_eq(f.res->n_checks, 4);
    ck_assert_int_eq(f.res->counters.rows_verified, 139);
    expect_at(&f, "trace.row_mismatch", "stale_weights", 59, 0);
    ck_assert_msg(strstr(find_check(&f, "trace.row_mismatch", "stale_weights")->message,
                         "matches version 0 (v-1) (2 mismatching") != NULL,
                  "%s", find_check(&f, "trace.row_mismatch", "stale_weights")->message);
    expect_at(&f, "trace.row_mismatch", "all_zero_capture", 123, 0);
    expect_at(&f, "routes.invalid", "", 124, 1);
    expect_at(&f, "trace.row_mismatch", "duplicated_row", 138, 1);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

/* The trace's ids in `dtype` (cast from the int32 ones). */
static void to_dtype(sr_rollout_result *r, sr_dtype dtype)
{
    sr_err err = SR_ERR_INIT;
    sr_ndarray a;
    ck_assert_sr_ok(sr_ndarray_alloc(&a, dtype, 3, r->routes.shape, &err), err);
    size_t n = sr_ndarray_numel(&r->routes);
    for (size_t i = 0; i < n; i++) {
        int32_t v = ((const int32_t *)r->routes.data)[i];
        if (dtype == SR_DTYPE_UINT8)
            ((uint8_t *)a.data)[i] = (uint8_t)v;
        else if (dtype == SR_DTYPE_INT16)
            ((int16_t *)a.data)[i] = (int16_t)v;
        else
            ((int64_t *)a.data)[i] = v;
    }
    sr_ndarray_release(&r->routes);
    r->routes = a;
}

/*
 * The checks a rollout of `experts` experts fires with its ids held in `dtype` (after `wrap`:
 * ids kept mod 256, as a uint8 trace keeps them), row 7 layer 1 reversed; *n_out checks into
 * out. A dtype the oracle's rows cannot be written in takes the row-by-row path.
 */
static void verdict(sr_check *out, size_t *n_out, int64_t experts, sr_dtype dtype, int wrap)
{
    fx f;
    fx_init_experts(&f, experts);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    int32_t *x = row_at(&r, 7, 1), t = x[0];
    x[0] = x[3];
    x[3] = t;
    t = x[1];
    x[1] = x[2];
    x[2] = t;
    size_t n = sr_ndarray_numel(&r.routes);
    for (size_t i = 0; wrap && i < n; i++)
        ((int32_t *)r.routes.data)[i] &= 255;
    if (dtype != SR_DTYPE_INT32)
        to_dtype(&r, dtype);
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    ck_assert_int_eq(f.res->counters.rows_verified, 20);
    ck_assert_uint_le(f.res->n_checks, 4);
    *n_out = f.res->n_checks;
    memcpy(out, f.res->checks, *n_out * sizeof(sr_check));
    sr_rollout_result_release(&r);
    fx_free(&f);
}

START_TEST(test_every_dtype_same_verdict)
{
    static const struct {
        int64_t experts;
        sr_dtype dtype;
        int wrap;
    } cases[] = {
        {16, SR_DTYPE_UINT8, 0},  {16, SR_DTYPE_INT16, 0},  {16, SR_DTYPE_INT64, 0},
        {512, SR_DTYPE_INT16, 0}, {512, SR_DTYPE_INT64, 0}, {512, SR_DTYPE_UINT8, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sr_check want[4], got[4];
        size_t nw, ng;
        verdict(want, &nw, cases[c].experts, SR_DTYPE_INT32, cases[c].wrap);
        verdict(got, &ng, cases[c].experts, cases[c].dtype, cases[c].wrap);
        ck_assert_uint_eq(ng, nw);
        ck_assert_uint_ge(nw, 1);
        for (size_t i = 0; i < nw; i++) {
            ck_assert_str_eq(got[i].name, want[i].name);
            ck_assert_str_eq(got[i].classification, want[i].classification);
            ck_assert_str_eq(got[i].message, want[i].message);
            ck_assert_int_eq(got[i].where.row, want[i].where.row);
            ck_assert_int_eq(got[i].where.layer, want[i].where.layer);
        }
        if (!cases[c].wrap) {
            ck_assert_uint_eq(nw, 1);
            ck_assert_str_eq(want[0].classification, "unclassified");
            ck_assert_int_eq(want[0].where.row, 7);
            ck_assert_int_eq(want[0].where.layer, 1);
        }
    }
}
END_TEST

/* An oracle row holds ids below the model's experts: when the contract names fewer (here 8 of
 * the model's 16), equal rows are still checked and fire routes.invalid. */
START_TEST(test_contract_experts_below_the_model)
{
    for (int64_t experts = 0; experts <= 16; experts += 8) {
        fx f;
        fx_init(&f);
        sr_rollout_result r;
        make_rollout(&r, &f, 9, 12, 0, 0, 0);
        int64_t first = -1;
        for (int64_t i = 0; i < 20 && first < 0; i++)
            for (int l = 0; l < 2 && first < 0; l++)
                for (int k = 0; k < 4; k++)
                    if (row_at(&r, i, l)[k] >= 8)
                        first = i;
        ck_assert_int_ge(first, 0);
        sr_verify_ctx ctx = {"s", 0, "rollout-0", 1, experts, f.res, NULL};
        sr_err err = SR_ERR_INIT;
        int ok = -1;
        ck_assert_sr_ok(sr_verify_rollout(&ok, f.v, &r, 3, &ctx, &err), err);
        ck_assert_int_eq(ok, experts != 8);
        if (experts == 8)
            ck_assert_int_eq(only_check(&f, "routes.invalid")->where.row, first);
        sr_rollout_result_release(&r);
        fx_free(&f);
    }
}
END_TEST

static Suite *verify_rows_suite(void)
{
    Suite *s = suite_create("verify_rows");
    TCase *t = tcase_create("core");
    tcase_add_test(t, test_block_and_version_edges);
    tcase_add_test(t, test_every_dtype_same_verdict);
    tcase_add_test(t, test_contract_experts_below_the_model);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return sr_test_run(verify_rows_suite());
}
