/*
 * SGLang's masked padding, sgl-project/sglang#36404 ("moe: mask padded rows before capturing
 * routed experts for R3", merged 2026-08-26): rows at or past num_token_non_padded reached the
 * capturer with stale routing, which came back at the chunked-prefill boundary as one repeated
 * row of real expert ids; the fix masks a copy at the capture site to -1. The mock engine's
 * engines.masked_padding sends those rows as -1 in every layer and slot (prompt positions
 * p >= chunk with p % chunk < rows); the client accepts -1 only as such a whole row there (any
 * other negative value is routes.negative; without the option the client scans nothing and the
 * trace refuses any -1 as before), and the route trace holds -1 only with
 * trace_opts.masked_rows, in a signed dtype.
 */
#include <curl/curl.h>

#include "client_fixture.h"
#include "sr_trace.h"

#define CFG                                                                                        \
    "{\"dialect\":\"sglang\",\"seed\":4,\"masked_padding\":{\"chunk\":16,\"rows\":3},"             \
    "\"model\":{\"vocab\":500,\"layers\":2,\"experts\":32,\"topk\":4,\"eos_id\":-1}}"
#define G 5
#define P 40

static sr_client_opts sgl_opts(int64_t chunk, int64_t rows)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.dialect = SR_DIALECT_SGLANG;
    o.route_layers = 2;
    o.route_topk = 4;
    o.max_attempts = 1;
    o.mask_chunk = chunk;
    o.mask_rows = rows;
    return o;
}

static int generate(fx *f, sr_client_result *r, const int32_t *ids, int64_t start, sr_err *e)
{
    cJSON *params = cJSON_Parse("{\"max_tokens\":5}");
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = ids;
    q.n_tokens = P;
    q.sampling_params = params;
    q.session_id = "m";
    q.return_routes = 1;
    q.prompt_start = start;
    int rc = sr_client_generate(r, f->conn, &q, e);
    cJSON_Delete(params);
    return rc;
}

START_TEST(masked_rows_are_minus_one_at_each_chunk_boundary_and_accepted_there)
{
    sr_client_opts o = sgl_opts(16, 3);
    fx f;
    fx_start(&f, 1, CFG, &o);
    fx_model m;
    fx_model_load(&m, CFG);
    int32_t ids[P + G];
    for (int i = 0; i < P; i++)
        ids[i] = 11 + 3 * i;
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(generate(&f, &r, ids, 10, &e), e);
    ck_assert_int_eq(r.routes.dtype, SR_DTYPE_INT32);
    ck_assert_int_eq((int)r.routes.shape[0], P + G - 1 - 10);
    memcpy(ids + P, r.token_ids, G * sizeof(int32_t));
    int32_t *want = fx_oracle_rows(&m, 0, ids, P + G, P + G - 1, SR_DTYPE_INT32);
    const int32_t *got = r.routes.data;
    for (int p = 10; p < P + G - 1; p++) {
        /* Prompt positions 16, 17, 18, 32, 33, 34 are the padded regions; the rest is the
         * oracle's, the generated tokens' rows included. */
        int masked = p < P && p >= 16 && p % 16 < 3;
        for (int i = 0; i < 8; i++)
            ck_assert_msg(got[(p - 10) * 8 + i] == (masked ? -1 : want[p * 8 + i]),
                          "row %d value %d: %d", p, i, got[(p - 10) * 8 + i]);
    }
    free(want);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

START_TEST(masked_rows_under_the_no_prompt_start_quirk_are_placed_from_row_zero)
{
    /* The quirk's client sends no start and maps the rows from 0: the padded regions are
     * checked at their own positions (16..18, 32..34), not shifted by the start it held. */
    sr_client_opts o = sgl_opts(16, 3);
    o.quirks.no_prompt_start = 1;
    fx f;
    fx_start(&f, 1, CFG, &o);
    int32_t ids[P];
    for (int i = 0; i < P; i++)
        ids[i] = 11 + 3 * i;
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(generate(&f, &r, ids, 10, &e), e);
    ck_assert_int_eq((int)r.routes.shape[0], P + G - 1);
    const int32_t *got = r.routes.data;
    ck_assert_int_eq(got[16 * 8], -1);
    ck_assert_int_eq(got[34 * 8 + 7], -1);
    ck_assert_int_ge(got[35 * 8], 0);
    fx_stop(&f);
}
END_TEST

START_TEST(minus_one_outside_the_documented_rows_is_routes_negative)
{
    /* The client expects 2 rows per boundary; the engine masks 3: row 18 is not documented. */
    sr_client_opts o = sgl_opts(16, 2);
    fx f;
    fx_start(&f, 1, CFG, &o);
    int32_t ids[P];
    for (int i = 0; i < P; i++)
        ids[i] = 11 + 3 * i;
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_int_eq(generate(&f, &r, ids, 0, &e), SR_E_ROUTES_NEGATIVE);
    ck_assert_msg(strstr(e.msg, "row 18 holds 8 negative values"), "%s", e.msg);
    fx_stop(&f);
    /* Without the option the client reads the rows as before and the trace refuses the -1
     * (routes.negative), as it always has. */
    o = sgl_opts(0, 0);
    fx_start(&f, 1, CFG, &o);
    ck_assert_sr_ok(generate(&f, &r, ids, 0, &e), e);
    sr_route_trace *t;
    ck_assert_sr_ok(sr_route_trace_new(&t, NULL, &e), e);
    ck_assert_int_eq(sr_route_trace_record(t, P, G, &r.routes, NULL, 0, &e), SR_E_ROUTES_NEGATIVE);
    sr_route_trace_free(t);
    fx_stop(&f);
}
END_TEST

START_TEST(the_trace_holds_minus_one_only_with_masked_rows)
{
    int32_t v[3 * 2 * 2] = {1, 2, 3, 4, -1, -1, -1, -1, 5, 6, 7, 8};
    sr_ndarray a = SR_NDARRAY_INIT;
    a.dtype = SR_DTYPE_INT32;
    a.ndim = 3;
    a.shape[0] = 3, a.shape[1] = 2, a.shape[2] = 2;
    a.data = v;
    a.nbytes = sizeof(v);
    sr_err err = SR_ERR_INIT;
    sr_route_trace *t;
    ck_assert_sr_ok(sr_route_trace_new(&t, NULL, &err), err);
    ck_assert_int_eq(sr_route_trace_record(t, 2, 2, &a, NULL, 0, &err), SR_E_ROUTES_NEGATIVE);
    sr_route_trace_free(t);
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.masked_rows = 1;
    ck_assert_sr_ok(sr_route_trace_new(&t, &o, &err), err);
    ck_assert_sr_ok(sr_route_trace_record(t, 2, 2, &a, NULL, 0, &err), err);
    uint8_t mask[4] = {0, 0, 1, 1};
    sr_ndarray out = SR_NDARRAY_INIT;
    int64_t captured;
    ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 4, mask, 4, &err), err);
    /* uint8 would do for 1..8, but -1 needs a signed dtype. */
    ck_assert_int_eq(out.dtype, SR_DTYPE_INT16);
    ck_assert_int_eq(sr_ndarray_get_i64(&out, 4), -1);
    ck_assert_int_eq(sr_ndarray_get_i64(&out, 8), 5);
    sr_ndarray_release(&out);
    sr_route_trace_free(t);
    /* A reset trace takes the setting it is reset with, both ways (a conn's scratch trace is
     * reused across rollouts). */
    sr_trace_opts plain = SR_TRACE_OPTS_INIT;
    ck_assert_sr_ok(sr_route_trace_new(&t, &o, &err), err);
    sr_route_trace_reset(t, &plain);
    ck_assert_int_eq(sr_route_trace_record(t, 2, 2, &a, NULL, 0, &err), SR_E_ROUTES_NEGATIVE);
    sr_route_trace_reset(t, &o);
    ck_assert_sr_ok(sr_route_trace_record(t, 2, 2, &a, NULL, 0, &err), err);
    sr_route_trace_free(t);
    /* Below -1 is still negative. */
    v[4] = -2;
    ck_assert_sr_ok(sr_route_trace_new(&t, &o, &err), err);
    ck_assert_int_eq(sr_route_trace_record(t, 2, 2, &a, NULL, 0, &err), SR_E_ROUTES_NEGATIVE);
    sr_route_trace_free(t);
}
END_TEST

static Suite *masked_suite(void)
{
    Suite *s = suite_create("client_masked");
    TCase *tc = tcase_create("masked");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, masked_rows_are_minus_one_at_each_chunk_boundary_and_accepted_there);
    tcase_add_test(tc, masked_rows_under_the_no_prompt_start_quirk_are_placed_from_row_zero);
    tcase_add_test(tc, minus_one_outside_the_documented_rows_is_routes_negative);
    tcase_add_test(tc, the_trace_holds_minus_one_only_with_masked_rows);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(masked_suite());
    curl_global_cleanup();
    return rc;
}
