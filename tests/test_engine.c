/* The mock engine over real HTTP: generate endpoints, row arithmetic, determinism, validation. */
#include "engine/engine.h"
#include "engine_util.h"

#define CFG_TEXT                                                                                   \
    "{\"id\":\"t0\",\"seed\":11,\"model\":{\"vocab\":5000,\"layers\":3,\"experts\":40,\"topk\":4," \
    "\"eos_id\":-1,\"logprob_scale\":6.0},\"fields\":[\"routed_experts\"]}"

static const int32_t PROMPT[7] = {11, 22, 33, 44, 55, 66, 77};

static void load_cfg(sr_engine_config *c, const char *text)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(c, text, strlen(text), "test", 0, &err), err);
}

/* Expected oracle output for PROMPT with max_tokens G and route start s at weights version 0. */
static void expect_oracle(const sr_engine_config *c, int G, int64_t s, int32_t *tokens, double *lps,
                          void *routes, size_t cap, int64_t *rows)
{
    sr_oracle_model m = sr_engine_config_model(c);
    sr_oracle *o = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_new(&o, &m, &err), err);
    uint64_t g, l[8];
    expected_fps(c, 0, &g, l);
    sr_oracle_request q = SR_ORACLE_REQUEST_INIT;
    q.prompt = PROMPT;
    q.prompt_len = 7;
    q.max_tokens = G;
    q.route_start = s;
    q.route_dtype = SR_DTYPE_UINT8;
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = tokens;
    out.logprobs = lps;
    out.routes = routes;
    out.routes_cap = cap;
    ck_assert_sr_ok(sr_oracle_generate(&out, o, g, l, &q, &err), err);
    ck_assert_int_eq(out.num_tokens, G);
    *rows = out.num_rows;
    sr_oracle_free(o);
}

static void gen_body(char *buf, size_t cap, int G, const char *start)
{
    snprintf(buf, cap,
             "{\"sampling_params\":{\"temperature\":1.0,\"max_tokens\":%d,\"logprobs\":0%s%s},"
             "\"model\":\"default\",\"token_ids\":[11,22,33,44,55,66,77],\"cache_salt\":\"p@3\"}",
             G, start ? ",\"routed_experts_prompt_start\":" : "", start ? start : "");
}

START_TEST(test_generate_matches_oracle_for_every_start)
{
    sr_engine_config c;
    load_cfg(&c, CFG_TEXT);
    eng e;
    eng_start(&e, CFG_TEXT);
    const char *starts[] = {NULL, "0", "1", "5", "6", "7"};
    for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
        int64_t s = starts[i] ? atoi(starts[i]) : 0;
        char body[512];
        gen_body(body, sizeof(body), 3, starts[i]);
        hresp r;
        http_post(&r, &e, "/skyrl/v1/generate", body);
        ck_assert_int_eq(r.status, 200);
        ck_assert_ptr_nonnull(strstr(r.hdr.data, "Content-Type: application/json"));
        ck_assert_msg(strncmp(r.body.data, "{\"choices\":[{\"token_ids\":[", 26) == 0, "%s",
                      r.body.data);
        int32_t tok[3];
        double lp[3];
        uint8_t routes[16 * 3 * 4];
        int64_t rows;
        expect_oracle(&c, 3, s, tok, lp, routes, sizeof(routes), &rows);
        /* Row arithmetic: rows [start, P+G-1). */
        ck_assert_int_eq(rows, 7 + 3 - 1 - s);
        sr_splicer *sp;
        sr_fields *reg;
        const sr_splice_result *res;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(splice_body(&sp, &reg, &r.body, &res, &err), err);
        const sr_splice_entry *re = splice_find(res, "routed_experts");
        ck_assert_ptr_nonnull(re);
        ck_assert_int_eq(re->array.shape[0], rows);
        ck_assert_int_eq(re->array.shape[1], 3);
        ck_assert_int_eq(re->array.shape[2], 4);
        ck_assert_int_eq(re->array.dtype, SR_DTYPE_UINT8);
        ck_assert_mem_eq(re->array.data, routes, (size_t)rows * 12);
        const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(res->doc, "choices"), 0);
        const sr_splice_entry *ids = splice_find(res, "token_ids");
        ck_assert_ptr_nonnull(ids);
        ck_assert_int_eq(ids->array.shape[0], 3);
        const cJSON *content = cJSON_GetObjectItem(cJSON_GetObjectItem(ch, "logprobs"), "content");
        for (int k = 0; k < 3; k++) {
            ck_assert_int_eq(sr_ndarray_get_i64(&ids->array, (uint64_t)k), tok[k]);
            double got =
                cJSON_GetObjectItem(cJSON_GetArrayItem(content, k), "logprob")->valuedouble;
            ck_assert_msg(got == lp[k], "logprob %d: %.17g vs %.17g", k, got, lp[k]);
        }
        ck_assert_str_eq(cJSON_GetObjectItem(ch, "finish_reason")->valuestring, "length");
        char want[128];
        snprintf(want, sizeof(want),
                 "\"syncroll\":{\"engine\":\"t0\",\"weight_version\":0,"
                 "\"rows\":[[%lld,9,0]]}}]}",
                 (long long)(s < 6 ? s : 6));
        ck_assert_msg(strstr(r.body.data, want), "%s", r.body.data);
        sr_splicer_free(sp);
        sr_fields_free(reg);
        hresp_free(&r);
    }
    eng_stop(&e);
    sr_engine_config_release(&c);
}
END_TEST

START_TEST(test_same_seed_same_bytes)
{
    const char *other = "{\"seed\":12,\"model\":{\"vocab\":5000,\"layers\":3,\"experts\":40,"
                        "\"topk\":4,\"eos_id\":-1}}";
    eng a, b, d;
    eng_start(&a, CFG_TEXT);
    eng_start(&b, CFG_TEXT);
    eng_start(&d, other);
    char body[512];
    gen_body(body, sizeof(body), 24, "2");
    hresp ra, ra2, rb, rd;
    http_post(&ra, &a, "/skyrl/v1/generate", body);
    http_post(&ra2, &a, "/skyrl/v1/generate", body);
    http_post(&rb, &b, "/skyrl/v1/generate", body);
    http_post(&rd, &d, "/skyrl/v1/generate", body);
    ck_assert_int_eq(ra.status, 200);
    ck_assert_str_eq(ra.body.data, ra2.body.data);
    ck_assert_str_eq(ra.body.data, rb.body.data);
    ck_assert_int_eq(rd.status, 200);
    ck_assert_str_ne(ra.body.data, rd.body.data);
    hresp_free(&ra);
    hresp_free(&ra2);
    hresp_free(&rb);
    hresp_free(&rd);
    eng_stop(&a);
    eng_stop(&b);
    eng_stop(&d);
}
END_TEST

static void expect_400(const eng *e, const char *path, const char *body, const char *needle)
{
    hresp r;
    http_post(&r, e, path, body);
    ck_assert_msg(r.status == 400, "status %ld for %s: %s", r.status, body, r.body.data);
    ck_assert_msg(strncmp(r.body.data, "{\"error\":{\"message\":", 20) == 0, "%s", r.body.data);
    ck_assert_msg(strstr(r.body.data, "\"check\":\"engine.bad_request\""), "%s", r.body.data);
    ck_assert_msg(strstr(r.body.data, needle), "'%s' not in %s", needle, r.body.data);
    hresp_free(&r);
}

START_TEST(test_request_validation)
{
    eng e;
    eng_start(&e, "{\"model\":{\"vocab\":100},\"server\":{\"max_body_bytes\":2048,"
                  "\"max_seq\":64}}");
    const char *g = "/skyrl/v1/generate";
    expect_400(&e, g, "{\"token_ids\":[1,2", "invalid JSON");
    expect_400(&e, g, "", "invalid JSON");
    expect_400(&e, g, "[1,2]", "must be a JSON object");
    expect_400(&e, g, "{\"sampling_params\":{}}", "token_ids is required");
    expect_400(&e, g, "{\"token_ids\":[]}", "must not be empty");
    expect_400(&e, g, "{\"token_ids\":[1,100]}", "[0, 100)");
    expect_400(&e, g, "{\"token_ids\":[1,2.0]}", "[0, 100)");
    expect_400(&e, g, "{\"token_ids\":[1,\"2\"]}", "[0, 100)");
    expect_400(&e, g, "{\"token_ids\":[1],\"sampling_params\":{\"routed_experts_prompt_start\":2}}",
               "integer within the prompt");
    expect_400(&e, g,
               "{\"token_ids\":[1],\"sampling_params\":{\"routed_experts_prompt_start\":true}}",
               "integer within the prompt");
    expect_400(&e, g,
               "{\"token_ids\":[1],\"sampling_params\":{\"routed_experts_prompt_start\":1.0}}",
               "integer within the prompt");
    expect_400(&e, g,
               "{\"token_ids\":[1],\"sampling_params\":{\"routed_experts_prompt_start\":-1}}",
               "integer within the prompt");
    expect_400(&e, g, "{\"token_ids\":[1],\"sampling_params\":{\"n\":2}}", "'n'");
    expect_400(&e, g, "{\"token_ids\":[1],\"sampling_params\":{\"bogus\":1}}",
               "unknown sampling parameter 'bogus'");
    expect_400(&e, g, "{\"token_ids\":[1],\"sampling_params\":{\"max_tokens\":0}}", "max_tokens");
    expect_400(&e, g, "{\"token_ids\":[1],\"sampling_params\":{\"max_tokens\":64}}",
               "maximum sequence length");
    expect_400(&e, g, "{\"token_ids\":[1],\"sampling_params\":[]}", "must be an object");
    expect_400(&e, g, "{\"token_ids\":[1],\"cache_salt\":\"\"}", "non-empty");
    expect_400(&e, g, "{\"token_ids\":[1],\"model\":3}", "model");
    expect_400(&e, "/inference/v1/generate", "{\"token_ids\":[-1]}", "[0, 100)");
    /* The boundary cases that are valid. */
    hresp r;
    http_post(&r, &e, g,
              "{\"token_ids\":[1,2],\"sampling_params\":{\"routed_experts_prompt_start\":2,"
              "\"max_tokens\":62,\"stop\":[\"x\"],\"logprobs\":null},\"features\":null,"
              "\"unknown_top_level\":1}");
    ck_assert_msg(r.status == 200, "%s", r.body.data);
    hresp_free(&r);
    /* Unknown path, wrong method, oversized body. */
    http_post(&r, &e, "/v1/nothing", "{}");
    ck_assert_int_eq(r.status, 404);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"code\":404"));
    hresp_free(&r);
    http_get(&r, &e, "/skyrl/v1/generate");
    ck_assert_int_eq(r.status, 405);
    hresp_free(&r);
    char big[4096];
    memset(big, ' ', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    http_post(&r, &e, g, big);
    ck_assert_int_eq(r.status, 413);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"check\":\"resource.limit\""));
    hresp_free(&r);
    /* The engine kept serving through all of it. */
    http_get(&r, &e, "/health");
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    eng_stop(&e);
}
END_TEST

START_TEST(test_native_generate_and_clamping)
{
    const char *cfg =
        "{\"id\":\"n0\",\"model\":{\"vocab\":300,\"eos_id\":-1,\"nonfinite_rate\":1.0}}";
    eng e;
    eng_start(&e, cfg);
    hresp r, s;
    const char *body =
        "{\"token_ids\":[1,2,3],\"sampling_params\":{\"max_tokens\":3,\"logprobs\":1}}";
    http_post(&r, &e, "/inference/v1/generate", body);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strncmp(r.body.data, "{\"request_id\":\"n0-1\",\"choices\":[{\"index\":0,", 43) ==
                      0,
                  "%s", r.body.data);
    ck_assert_ptr_null(strstr(r.body.data, "routed_experts"));
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"logprobs\":{\"content\":[{\"logprob\":-9999.0},"
                                              "{\"logprob\":-9999.0},{\"logprob\":-9999.0}]}"));
    http_post(&s, &e, "/skyrl/v1/generate", body);
    ck_assert_int_eq(s.status, 200);
    /* Same tokens on both endpoints. */
    cJSON *a = cJSON_Parse(r.body.data), *b = cJSON_Parse(s.body.data);
    char *ta = cJSON_PrintUnformatted(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(a, "choices"), 0), "token_ids"));
    char *tb = cJSON_PrintUnformatted(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "choices"), 0), "token_ids"));
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    cJSON_Delete(a);
    cJSON_Delete(b);
    ck_assert_int_eq(eng_state_int(&e, "clamped_logprobs"), 6);
    hresp_free(&r);
    hresp_free(&s);
    eng_stop(&e);
}
END_TEST

START_TEST(test_sample_support_field)
{
    const char *cfg = "{\"model\":{\"vocab\":50,\"eos_id\":-1},\"sample_support_k\":3,"
                      "\"fields\":[\"routed_experts\",\"rollout_sample_support\"]}";
    eng e;
    eng_start(&e, cfg);
    hresp r;
    http_post(&r, &e, "/skyrl/v1/generate",
              "{\"token_ids\":[1,2],\"sampling_params\":{\"max_tokens\":5}}");
    ck_assert_int_eq(r.status, 200);
    sr_splicer *sp;
    sr_fields *reg;
    const sr_splice_result *res;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(splice_body(&sp, &reg, &r.body, &res, &err), err);
    const sr_splice_entry *ss = splice_find(res, "rollout_sample_support");
    ck_assert_ptr_nonnull(ss);
    ck_assert_int_eq(ss->array.shape[0], 5);
    ck_assert_int_eq(ss->array.shape[1], 3);
    const sr_splice_entry *ids = splice_find(res, "token_ids");
    ck_assert_ptr_nonnull(ids);
    for (int g = 0; g < 5; g++) {
        const int32_t *row = (const int32_t *)ss->array.data + g * 3;
        ck_assert_int_eq(row[0], sr_ndarray_get_i64(&ids->array, (uint64_t)g));
        for (int k = 1; k < 3; k++)
            ck_assert(row[k] == -1 || (row[k] >= 0 && row[k] < 50 && row[k] != row[0]));
    }
    /* Key order: routes, then support, then syncroll. */
    const char *a = strstr(r.body.data, "\"routed_experts\":{");
    const char *b = strstr(r.body.data, "\"rollout_sample_support\":{");
    const char *c = strstr(r.body.data, "\"syncroll\":{");
    ck_assert(a && b && c && a < b && b < c);
    sr_splicer_free(sp);
    sr_fields_free(reg);
    hresp_free(&r);
    eng_stop(&e);
}
END_TEST

START_TEST(test_keep_alive_and_sessions)
{
    eng e;
    eng_start(&e, CFG_TEXT);
    CURL *h = curl_easy_init();
    hresp r;
    for (int i = 0; i < 20; i++) {
        http_req(&r, h, &e, "POST", "/skyrl/v1/generate", "{\"token_ids\":[1,2,3]}", "s-1", 0);
        ck_assert_int_eq(r.status, 200);
        hresp_free(&r);
    }
    long conns = -1;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns);
    ck_assert_int_eq(conns, 0); /* the last request reused the connection */
    curl_easy_cleanup(h);
    ck_assert_int_eq(eng_state_int(&e, "sessions"), 1);
    http_post(&r, &e, "/finish_session?session_id=s-1", NULL);
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    ck_assert_int_eq(eng_state_int(&e, "sessions"), 0);
    eng_stop(&e);
}
END_TEST

/* The session table's cap (SR_ENGINE_MAX_SESSIONS) at, before and past: the first and the
 * 6144th new session are both counted (a held one goes on to turn 2), and the 6145th clears the
 * table, so that a held session starts again at turn 1 (engine.h: counting restarts). */
START_TEST(test_session_table_at_its_cap)
{
    sr_engine_config c;
    load_cfg(&c, CFG_TEXT);
    sr_engine *e = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_new(&e, &c, &err), err);
    char id[32];
    for (int i = 0; i < SR_ENGINE_MAX_SESSIONS; i++) {
        snprintf(id, sizeof id, "s%d", i);
        ck_assert_int_eq(sr_engine_session_turn(e, id), 1);
    }
    /* At the cap: the first and the last session are held. */
    ck_assert_int_eq(sr_engine_session_turn(e, "s0"), 2);
    snprintf(id, sizeof id, "s%d", SR_ENGINE_MAX_SESSIONS - 1);
    ck_assert_int_eq(sr_engine_session_turn(e, id), 2);
    /* One past: the table is cleared and counting restarts. */
    ck_assert_int_eq(sr_engine_session_turn(e, "one-more"), 1);
    ck_assert_int_eq(sr_engine_session_turn(e, "one-more"), 2);
    ck_assert_int_eq(sr_engine_session_turn(e, "s0"), 1);
    sr_engine_free(e);
    sr_engine_config_release(&c);
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("http");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_generate_matches_oracle_for_every_start);
    tcase_add_test(tc, test_same_seed_same_bytes);
    tcase_add_test(tc, test_request_validation);
    tcase_add_test(tc, test_native_generate_and_clamping);
    tcase_add_test(tc, test_sample_support_field);
    tcase_add_test(tc, test_keep_alive_and_sessions);
    tcase_add_test(tc, test_session_table_at_its_cap);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(engine_suite)
