/*
 * The later SkyRL stack (client.stack "2086", harness/spec/stack.h) against real mock-engine
 * processes over loopback: the request's capture switch and route, the server's top_k refusal,
 * the support rows and their checks in the client, and the trace's captured-only finalize. Each
 * test names the SkyRL source it follows: NovaSky-AI/SkyRL #2082 (commit 1c3510a4c, merged as
 * #2237) and #2083 (commit 098017bff).
 */
#include <curl/curl.h>

#include "client_fixture.h"
#include "scenario/scenario.h"
#include "spec/stack.h"
#include "sr_fields.h"
#include "sr_trace.h"

#define CFG_2086(extra)                                                                            \
    "{\"seed\":11,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":16,\"topk\":2,\"eos_id\":-1},"  \
    "\"stack\":\"2086\"" extra "}"

#define CFG_CLEAN                                                                                  \
    "{\"seed\":11,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":16,\"topk\":2,\"eos_id\":-1}}"

static const int32_t PROMPT[] = {5, 6, 7, 8, 9, 10, 11};
#define PROMPT_LEN 7

static sr_client_opts opts_2086(void)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.stack = SR_STACK_2086;
    o.backoff_initial_ms = 1;
    o.backoff_max_ms = 2;
    return o;
}

/* A capture request of PROMPT: max_tokens 6, top_k as `top_k_json` (NULL: no top_k member). */
static int capture_gen(fx *f, int routes, const char *top_k_json, const char *salt,
                       sr_client_result *r, sr_err *e)
{
    char sp[128];
    snprintf(sp, sizeof sp, "{\"max_tokens\":6%s%s}", top_k_json ? ",\"top_k\":" : "",
             top_k_json ? top_k_json : "");
    cJSON *s = cJSON_Parse(sp);
    ck_assert_ptr_nonnull(s);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = PROMPT;
    q.n_tokens = PROMPT_LEN;
    q.sampling_params = s;
    q.cache_salt = salt;
    q.return_routes = routes;
    q.prompt_start = routes ? 0 : -1;
    q.return_support = 1;
    int rc = sr_client_generate(r, f->conn, &q, e);
    cJSON_Delete(s);
    return rc;
}

/* SkyRL #2082 (remote_inference_client.py at 1c3510a4c): the path is /skyrl/v1/generate when
 * routes OR the support are asked for, and "return_sample_support": true follows token_ids
 * (before cache_salt) at the top level of the payload. */
START_TEST(capture_request_goes_to_the_skyrl_route_with_the_switch_after_token_ids)
{
    sr_client_opts o = opts_2086();
    fx f;
    fx_start(&f, 1, CFG_2086(""), &o);
    sr_client_conn_capture(f.conn, 1 << 16);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(capture_gen(&f, 0, "8", "policy@1", &r, &e), e);
    ck_assert_str_eq(r.path, "/skyrl/v1/generate");
    sr_client_exchange x = SR_CLIENT_EXCHANGE_INIT;
    sr_client_conn_take_exchange(f.conn, &x);
    ck_assert_str_eq(x.request.data, "{\"sampling_params\":{\"max_tokens\":6,\"top_k\":8},"
                                     "\"model\":\"default\",\"token_ids\":[5,6,7,8,9,10,11],"
                                     "\"return_sample_support\":true,\"cache_salt\":\"policy@1\"}");
    /* vllm_server_actor.py: the choice's keys end routed_experts, rollout_sample_support. */
    ck_assert_ptr_nonnull(strstr(x.response.data, "\"dtype\":\"uint8\"},"
                                                  "\"rollout_sample_support\":{\"data\":\""));
    sr_client_exchange_release(&x);
    ck_assert(r.has_support);
    fx_stop(&f);
}
END_TEST

/* vllm_server_actor.py (_sample_support_from_flat_logprobs at 1c3510a4c): int32 [G, top_k],
 * filtered candidates as trailing -1, the sampled token a member of its own row; with routes the
 * routes come too. Without the switch the later server still writes the key, as null. */
START_TEST(support_rows_are_top_k_wide_and_hold_their_sampled_token)
{
    sr_client_opts o = opts_2086();
    fx f;
    fx_start(&f, 1, CFG_2086(""), &o);
    sr_client_conn_capture(f.conn, 1 << 16);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(capture_gen(&f, 1, "5", NULL, &r, &e), e);
    ck_assert(r.has_routes && r.has_support);
    ck_assert_int_eq(r.support.ndim, 2);
    ck_assert_int_eq(r.support.dtype, SR_DTYPE_INT32);
    ck_assert_int_eq(r.support.shape[0], (int64_t)r.n_tokens);
    ck_assert_int_eq(r.support.shape[1], 5);
    const int32_t *rows = (const int32_t *)r.support.data;
    for (size_t g = 0; g < r.n_tokens; g++) {
        int found = 0, pad = 0;
        for (int k = 0; k < 5; k++) {
            int32_t v = rows[g * 5 + (size_t)k];
            ck_assert_msg(v >= -1 && v < 64, "row %zu slot %d = %d", g, k, v);
            ck_assert_msg(!(pad && v >= 0), "row %zu: padding before a member", g);
            pad |= v < 0;
            found |= v == r.token_ids[g];
        }
        ck_assert_msg(found, "row %zu lacks its sampled token %d", g, r.token_ids[g]);
    }
    /* The routes beside the support are still the oracle's rows [0, P+G-1). */
    fx_model m;
    fx_model_load(&m, CFG_2086(""));
    size_t n = PROMPT_LEN + r.n_tokens;
    int32_t tok[64];
    memcpy(tok, PROMPT, sizeof PROMPT);
    memcpy(tok + PROMPT_LEN, r.token_ids, r.n_tokens * sizeof *tok);
    ck_assert_int_eq(r.routes.shape[0], (int64_t)n - 1);
    void *want = fx_oracle_rows(&m, 0, tok, n, n - 1, r.routes.dtype);
    ck_assert_mem_eq(want, r.routes.data, r.routes.nbytes);
    free(want);
    fx_model_free(&m);
    /* No switch: the ordinary native route, and on /skyrl/v1/generate (routes) a null field. */
    cJSON *s = cJSON_Parse("{\"max_tokens\":4}");
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = PROMPT;
    q.n_tokens = PROMPT_LEN;
    q.sampling_params = s;
    q.return_routes = 1;
    q.prompt_start = 0;
    ck_assert_sr_ok(sr_client_generate(&r, f.conn, &q, &e), e);
    sr_client_exchange x = SR_CLIENT_EXCHANGE_INIT;
    sr_client_conn_take_exchange(f.conn, &x);
    ck_assert_ptr_null(strstr(x.request.data, "return_sample_support"));
    ck_assert_ptr_nonnull(strstr(x.response.data, ",\"rollout_sample_support\":null,"));
    ck_assert(!r.has_support);
    sr_client_exchange_release(&x);
    cJSON_Delete(s);
    fx_stop(&f);
}
END_TEST

typedef struct top_k_case {
    const char *json; /* NULL: no top_k member */
    const char *got;  /* what the refusal names, as Python's repr */
} top_k_case;

static const top_k_case TOP_K[] = {
    {NULL, "got None."}, {"null", "got None."}, {"1", "got 1."},     {"0", "got 0."},
    {"-1", "got -1."},   {"true", "got True."}, {"2.5", "got 2.5."},
};

/* vllm_server_actor.py (_skyrl_generate at 1c3510a4c): a capture request whose top_k is not an
 * integer > 1 is HTTP 400 "return_sample_support requires sampling_params.top_k > 1, got ...";
 * the client names it client.support_top_k after one attempt. */
START_TEST(top_k_refusal_is_named_and_not_retried)
{
    const top_k_case *c = &TOP_K[_i];
    sr_client_opts o = opts_2086();
    fx f;
    fx_start(&f, 1, CFG_2086(""), &o);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(capture_gen(&f, 0, c->json, NULL, &r, &e), e, SR_E_CLIENT_SUPPORT_TOP_K);
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_int_eq(r.http_status, 400);
    ck_assert_msg(strstr(e.msg, "return_sample_support requires sampling_params.top_k > 1, ") &&
                      strstr(e.msg, c->got),
                  "%s: %s", c->json ? c->json : "(absent)", e.msg);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 1);
    fx_stop(&f);
}
END_TEST

/* remote_inference_client.py at 1c3510a4c: "/skyrl/v1/generate must return packed
 * rollout_sample_support". A #2079 engine ignores the switch and writes no such key. A client
 * of the #2079 stack has no switch at all: the request is refused before it is sent. */
START_TEST(support_missing_and_the_2079_client_are_named)
{
    sr_client_opts o = opts_2086();
    fx f;
    fx_start(&f, 1, CFG_CLEAN, &o);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(capture_gen(&f, 1, "8", NULL, &r, &e), e, SR_E_CLIENT_SUPPORT_MISSING);
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_ptr_nonnull(strstr(e.msg, "no rollout_sample_support key"));
    fx_stop(&f);

    sr_client_opts old = SR_CLIENT_OPTS_INIT;
    fx_start(&f, 1, CFG_2086(""), &old);
    ck_assert_sr_code(capture_gen(&f, 1, "8", NULL, &r, &e), e, SR_E_CLIENT_INVALID);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 0);
    fx_stop(&f);
}
END_TEST

/* The server's repair (vllm_server_actor.py at 1c3510a4c) removed by fault support_unrepaired:
 * the client names the row that lacks its sampled token. */
START_TEST(an_unrepaired_row_fails_the_membership_check)
{
    sr_client_opts o = opts_2086();
    fx f;
    fx_start(&f, 1, CFG_2086(",\"faults\":[{\"kind\":\"support_unrepaired\"}]"), &o);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(capture_gen(&f, 0, "4", NULL, &r, &e), e, SR_E_CLIENT_SUPPORT_MEMBERSHIP);
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_ptr_nonnull(strstr(e.msg, "lacks its sampled token"));
    fx_stop(&f);
}
END_TEST

static sr_ndarray turn_routes(int16_t *buf, int64_t rows)
{
    for (int64_t i = 0; i < rows * 4; i++)
        buf[i] = (int16_t)(i % 8); /* the reference test's arange(rows * 4) % 8 */
    sr_ndarray a = SR_NDARRAY_INIT;
    a.data = buf;
    a.dtype = SR_DTYPE_INT16;
    a.ndim = 3;
    a.shape[0] = rows;
    a.shape[1] = 2;
    a.shape[2] = 2;
    a.nbytes = (size_t)rows * 4 * sizeof(int16_t);
    return a;
}

/* SkyRL #2083 (routed_experts.py at 098017bff; its test_trace_returns_only_the_rows_it_captured):
 * two turns of 4 rows, 10 tokens with the last masked: finalize returns the 8 captured rows,
 * not 10 padded ones; an uncaptured loss-active target is still refused. */
START_TEST(finalize_returns_only_the_captured_rows)
{
    int16_t buf[16];
    sr_trace_opts to = SR_TRACE_OPTS_INIT;
    to.captured_only = 1;
    sr_route_trace *t;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_route_trace_new(&t, &to, &e), e);
    sr_ndarray a = turn_routes(buf, 4);
    ck_assert_sr_ok(sr_route_trace_record(t, 3, 2, &a, NULL, 0, &e), e);
    ck_assert_sr_ok(sr_route_trace_record(t, 7, 2, &a, NULL, 0, &e), e);
    const uint8_t mask[10] = {0, 0, 0, 1, 1, 0, 0, 1, 1, 0};
    sr_ndarray out = SR_NDARRAY_INIT;
    int64_t captured = -1;
    ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 10, mask, 10, &e), e);
    ck_assert_int_eq(out.shape[0], 8);
    ck_assert_int_eq(captured, 8);
    /* The rows as recorded, twice over (compacted to uint8, the canonical dtype of ids < 256). */
    ck_assert_int_eq(out.dtype, SR_DTYPE_UINT8);
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(((const uint8_t *)out.data)[i], buf[i % 16]);
    sr_ndarray_release(&out);
    sr_route_trace_free(t);

    ck_assert_sr_ok(sr_route_trace_new(&t, &to, &e), e);
    ck_assert_sr_ok(sr_route_trace_record(t, 3, 2, &a, NULL, 0, &e), e);
    const uint8_t active[6] = {0, 0, 0, 1, 1, 1};
    ck_assert_sr_code(sr_route_trace_finalize(&out, &captured, t, 6, active, 6, &e), e,
                      SR_E_TRACE_MISSING_ROUTE);
    ck_assert_ptr_nonnull(strstr(e.msg, "loss-active target at token 5"));
    sr_route_trace_free(t);
}
END_TEST

/* fixtures/fields/sample_support_<stack>.json and the contract `check-body --stack` and
 * `validate-field --stack` apply (spec/stack.h) are one definition: 2079's any dtype (its splice
 * checks none), 2086's int32 2-D (generate_wire.py SAMPLE_SUPPORT_DTYPES at 1c3510a4c), which is
 * also the built-in registry's. */
START_TEST(stack_registries_match_their_fixtures)
{
    static const char *const files[] = {
        SYNCROLL_SOURCE_DIR "/fixtures/fields/sample_support_2079.json",
        SYNCROLL_SOURCE_DIR "/fixtures/fields/sample_support_2086.json"};
    const char *ss = "rollout_sample_support";
    for (int st = 0; st < SR_STACK_COUNT; st++) {
        sr_fields *a, *b, *builtin;
        sr_err e = SR_ERR_INIT;
        ck_assert_sr_ok(sr_fields_new(&a, &e), e);
        ck_assert_sr_ok(sr_fields_new(&b, &e), e);
        ck_assert_sr_ok(sr_fields_new(&builtin, &e), e);
        ck_assert_sr_ok(sr_fields_load_file(a, files[st], &e), e);
        const char *j = sr_stack_support_json((sr_stack)st);
        ck_assert_sr_ok(sr_fields_load_json(b, j, strlen(j), "stack", &e), e);
        ck_assert_sr_ok(sr_fields_add_builtins(builtin, &e), e);
        const sr_field_def *da = sr_fields_find(a, ss, strlen(ss));
        const sr_field_def *db = sr_fields_find(b, ss, strlen(ss));
        const sr_field_def *di = sr_fields_find(builtin, ss, strlen(ss));
        ck_assert(da && db && di);
        ck_assert_uint_eq(da->dtypes, db->dtypes);
        ck_assert_int_eq(da->ndim, 2);
        ck_assert_int_eq(db->ndim, 2);
        ck_assert_int_eq(da->nullable, db->nullable);
        ck_assert_int_eq(da->token_rows, db->token_rows);
        ck_assert_int_eq(da->canonical, db->canonical);
        if (st == SR_STACK_2086) {
            ck_assert_uint_eq(da->dtypes, SR_DTYPE_BIT(SR_DTYPE_INT32));
            ck_assert_uint_eq(di->dtypes, da->dtypes);
            ck_assert_int_eq(di->token_rows, da->token_rows);
        } else {
            ck_assert(da->dtypes & SR_DTYPE_BIT(SR_DTYPE_FLOAT32));
        }
        sr_fields_free(a);
        sr_fields_free(b);
        sr_fields_free(builtin);
    }
}
END_TEST

/* client.stack (scenarios/FORMAT.md §6): the scenario's client and its engines speak one stack;
 * a name other than the two is refused naming both; sample_support needs 2086 and skyrl. */
START_TEST(scenario_stack_is_checked_and_reaches_the_engines)
{
    static const char *const bad[][2] = {
        {"{\"id\":\"t\",\"description\":\"d\",\"client\":{\"stack\":\"2073\"},\"steps\":[]}",
         "stack must be \"2079\" or \"2086\""},
        {"{\"id\":\"t\",\"description\":\"d\",\"steps\":[{\"kind\":\"rollout\","
         "\"sample_support\":true}]}",
         "sample_support needs client.stack \"2086\""},
        {"{\"id\":\"t\",\"description\":\"d\",\"client\":{\"stack\":\"2086\"},\"engines\":"
         "{\"dialect\":\"sglang\"},\"steps\":[{\"kind\":\"rollout\",\"sample_support\":true}]}",
         "sample_support runs in the skyrl dialect only"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sr_scenario *sc = NULL;
        sr_err e = SR_ERR_INIT;
        ck_assert_int_ne(sr_scenario_parse(&sc, bad[i][0], strlen(bad[i][0]), "t.json", &e), 0);
        ck_assert_msg(strstr(e.msg, bad[i][1]), "case %zu: %s", i, e.msg);
    }
    const char *good = "{\"id\":\"t\",\"description\":\"d\",\"client\":{\"stack\":\"2086\"},"
                       "\"engines\":{},\"steps\":[{\"kind\":\"rollout\",\"sample_support\":true}]}";
    sr_scenario *sc = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&sc, good, strlen(good), "t.json", &e), e);
    ck_assert_int_eq(sc->client.stack, SR_STACK_2086);
    ck_assert_int_eq(sc->engine.stack, SR_STACK_2086);
    ck_assert(sc->steps[0].rollout.sample_support);
    sr_scenario_free(sc);
    /* The engine reads a scenario's client.stack, and an engine config's own "stack". */
    sr_engine_config c;
    ck_assert_sr_ok(sr_engine_config_parse(&c, good, strlen(good), "t.json", 0, &e), e);
    ck_assert_int_eq(c.stack, SR_STACK_2086);
    sr_engine_config_release(&c);
    const char *cfg = "{\"stack\":\"2079\"}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, cfg, strlen(cfg), "e.json", 0, &e), e);
    ck_assert_int_eq(c.stack, SR_STACK_2079);
    sr_engine_config_release(&c);
}
END_TEST

static Suite *stack_suite(void)
{
    Suite *s = suite_create("skyrl_stack");
    TCase *tc = tcase_create("stack_2086");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, capture_request_goes_to_the_skyrl_route_with_the_switch_after_token_ids);
    tcase_add_test(tc, support_rows_are_top_k_wide_and_hold_their_sampled_token);
    tcase_add_loop_test(tc, top_k_refusal_is_named_and_not_retried, 0,
                        (int)(sizeof TOP_K / sizeof TOP_K[0]));
    tcase_add_test(tc, support_missing_and_the_2079_client_are_named);
    tcase_add_test(tc, an_unrepaired_row_fails_the_membership_check);
    tcase_add_test(tc, finalize_returns_only_the_captured_rows);
    tcase_add_test(tc, stack_registries_match_their_fixtures);
    tcase_add_test(tc, scenario_stack_is_checked_and_reaches_the_engines);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(stack_suite());
    curl_global_cleanup();
    return rc;
}
