/*
 * The generate client against real mock-engine processes and a one-shot capture server: request
 * body and headers, §1.2 validation, the §1.7 response schema, streaming splice and token ids.
 * Routing, kept conns, backoff and the control plane: test_client_fanout.c. Faults and retries:
 * test_client_faults.c.
 */
#include "client_capture.h"
#include "client_gen.h"

START_TEST(body_headers_and_reply_are_exact)
{
    static const int32_t ids[] = {1, 2, 3, 4, 5, 6, 7};
    cJSON *s = cJSON_Parse("{\"temperature\":1.5,\"max_tokens\":512,\"logprobs\":0,\"seed\":-7,"
                           "\"big\":3000000000,\"skip\":true,\"echo\":false,\"stop\":null,"
                           "\"tags\":[\"a\",1]}");
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = ids;
    q.n_tokens = 7;
    q.sampling_params = s;
    q.cache_salt = "policy@3";
    q.session_id = "17_0";
    q.return_routes = 1;
    q.prompt_start = 5;
    capture c;
    sr_client_result r;
    capture_generate(&c, NULL, &q, &r, APPENDIX_REPLY);
    ck_assert_str_eq(body_of(&c),
                     "{\"sampling_params\":{\"temperature\":1.5,\"max_tokens\":512,\"logprobs\":0,"
                     "\"seed\":-7,\"big\":3000000000,\"skip\":true,\"echo\":false,\"stop\":null,"
                     "\"tags\":[\"a\",1],\"routed_experts_prompt_start\":5},\"model\":\"default\","
                     "\"token_ids\":[1,2,"
                     "3,4,5,6,7],\"cache_salt\":\"policy@3\"}");
    ck_assert_msg(strncmp(c.req, "POST /skyrl/v1/generate HTTP/1.1\r\n", 34) == 0, "%s", c.req);
    ck_assert_ptr_nonnull(strstr(c.req, "\r\nX-Session-ID: 17_0\r\n"));
    ck_assert_ptr_nonnull(strstr(c.req, "\r\nContent-Type: application/json\r\n"));
    ck_assert_int_eq(r.n_tokens, 2);
    ck_assert_int_eq(r.token_ids[1], 11);
    ck_assert_str_eq(r.finish_reason, "stop");
    ck_assert(r.has_logprobs && r.logprobs[1] == -9999.0);
    ck_assert(r.has_routes && r.routes.shape[0] == 3 && ((uint8_t *)r.routes.data)[2] == 2);
    ck_assert_int_eq(r.weight_version, -1);
    ck_assert_int_eq(r.prompt_start_sent, 5);
    capture_done(&c);

    /* Quirk no_prompt_start; no session id; an explicit model. */
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.quirks.no_prompt_start = 1;
    q.session_id = NULL;
    q.model = "lora-a";
    q.cache_salt = NULL;
    capture_generate(&c, &o, &q, &r, APPENDIX_REPLY);
    ck_assert_str_eq(body_of(&c),
                     "{\"sampling_params\":{\"temperature\":1.5,\"max_tokens\":512,\"logprobs\":0,"
                     "\"seed\":-7,\"big\":3000000000,\"skip\":true,\"echo\":false,\"stop\":null,"
                     "\"tags\":[\"a\",1]},\"model\":\"lora-a\",\"token_ids\":[1,2,3,4,5,6,7]}");
    ck_assert_ptr_null(strstr(c.req, "X-Session-ID"));
    ck_assert_int_eq(r.prompt_start_sent, -1);
    capture_done(&c);

    /* Without routes: the native path, no start, no splice. */
    q.return_routes = 0;
    q.prompt_start = -1;
    capture_generate(&c, NULL, &q, &r,
                     "{\"request_id\":\"x\",\"choices\":[{\"index\":0,\"token_ids\":[3],"
                     "\"finish_reason\":\"length\",\"logprobs\":null}]}");
    ck_assert_msg(strncmp(c.req, "POST /inference/v1/generate ", 28) == 0, "%s", c.req);
    ck_assert_int_eq(r.n_tokens, 1);
    ck_assert(!r.has_routes && !r.has_logprobs);
    capture_done(&c);
    cJSON_Delete(s);
}
END_TEST

/* A decodable reply that breaks the §1.7 schema is client.bad_response, never retried. */
START_TEST(schema_violations_are_bad_responses)
{
    static const int32_t ids[] = {1, 2, 3};
    static const char *replies[] = {
        "{\"choices\":[]}",
        "{\"choices\":[{\"token_ids\":[1],\"finish_reason\":\"stop\"},{\"token_ids\":[2],"
        "\"finish_reason\":\"stop\"}]}",
        "{\"choices\":[{\"token_ids\":[1],\"logprobs\":null,\"routed_experts\":null}]}",
        "{\"choices\":[{\"token_ids\":[1,2],\"finish_reason\":\"stop\",\"logprobs\":"
        "{\"content\":[{\"logprob\":-1.0}]}}]}",
        "{\"choices\":[{\"finish_reason\":\"stop\"}]}",
        "{\"choices\":[{\"token_ids\":[1],\"finish_reason\":\"stop\",\"syncroll\":"
        "{\"engine\":\"e\",\"weight_version\":0,\"rows\":[[3,1,0]]}}]}",
    };
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++) {
        sr_client_req q = SR_CLIENT_REQ_INIT;
        q.token_ids = ids;
        q.n_tokens = 3;
        q.return_routes = i % 2;
        capture c;
        sr_client_result r;
        sr_err e = SR_ERR_INIT;
        int rc = capture_try(&c, NULL, &q, &r, replies[i], &e);
        ck_assert_msg(rc == SR_E_CLIENT_BAD_RESPONSE, "reply %zu: %s (%s)", i, sr_code_name(rc),
                      e.msg);
        ck_assert_int_eq(r.n_attempts, 1);
        capture_done(&c);
    }
}
END_TEST

/* vLLM's OpenAI completions route: the request asks for token ids (return_token_ids), the
 * logprobs are OpenAI's CompletionLogProbs, and any other shape of them is a bad response. */
START_TEST(completions_route_logprobs)
{
    static const int32_t ids[] = {1, 2, 3};
    static const char *const replies[] = {
        /* ok: token_logprobs, one a token */
        "{\"choices\":[{\"index\":0,\"text\":\"\",\"token_ids\":[7,8],\"finish_reason\":\"stop\","
        "\"logprobs\":{\"text_offset\":[0,0],\"token_logprobs\":[-0.5,-1.5],\"tokens\":"
        "[\"token_id:7\",\"token_id:8\"],\"top_logprobs\":[null,null]}}]}",
        /* the chat form is not the completions form */
        "{\"choices\":[{\"token_ids\":[7,8],\"finish_reason\":\"stop\",\"logprobs\":{\"content\":"
        "[{\"logprob\":-0.5},{\"logprob\":-1.5}]}}]}",
        /* one logprob for two tokens */
        "{\"choices\":[{\"token_ids\":[7,8],\"finish_reason\":\"stop\",\"logprobs\":"
        "{\"token_logprobs\":[-0.5]}}]}",
        /* a logprob that is not a number */
        "{\"choices\":[{\"token_ids\":[7,8],\"finish_reason\":\"stop\",\"logprobs\":"
        "{\"token_logprobs\":[-0.5,\"x\"]}}]}",
    };
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.dialect = SR_DIALECT_VLLM;
    o.dialect_route = 1;
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++) {
        sr_client_req q = SR_CLIENT_REQ_INIT;
        q.token_ids = ids;
        q.n_tokens = 3;
        capture c;
        sr_client_result r;
        sr_err e = SR_ERR_INIT;
        int rc = capture_try(&c, &o, &q, &r, replies[i], &e);
        ck_assert_msg(strstr(c.req, "POST /v1/completions ") &&
                          strstr(body_of(&c), "\"return_token_ids\":true"),
                      "request %zu: %s", i, c.req);
        if (i == 0) {
            ck_assert_sr_ok(rc, e);
            ck_assert(r.has_logprobs);
            ck_assert_int_eq((int)r.n_tokens, 2);
            ck_assert(r.logprobs[0] == -0.5 && r.logprobs[1] == -1.5);
        } else {
            ck_assert_msg(rc == SR_E_CLIENT_BAD_RESPONSE && strstr(e.msg, "token_logprobs"),
                          "reply %zu: %s (%s)", i, sr_code_name(rc), e.msg);
        }
        capture_done(&c);
    }
}
END_TEST

/* Each §1.2 violation is a named error and nothing is sent (the URL is a closed port). */
START_TEST(request_validation_is_client_side)
{
    const char *urls[] = {"http://127.0.0.1:9"};
    sr_client *cl;
    sr_client_conn *k;
    sr_err e = SR_ERR_INIT;
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.max_attempts = 1;
    ck_assert_sr_ok(sr_client_new(&cl, urls, 1, NULL, &o, &e), e);
    ck_assert_sr_ok(sr_client_conn_new(&k, cl, &e), e);
    static const int32_t ids[] = {1, 2, 3};
    static const int32_t neg[] = {1, -2, 3};
    /* A token of -1 at the first and at the last position (a loop one short misses either). */
    static const int32_t neg_first[] = {-1, 2, 3}, neg_last[] = {1, 2, -1};
    cJSON *n2 = cJSON_Parse("{\"n\":2}");
    cJSON *inj = cJSON_Parse("{\"routed_experts_prompt_start\":1}");
    cJSON *arr = cJSON_Parse("[1]");
    struct {
        const int32_t *ids;
        size_t n;
        int routes;
        int64_t start;
        const cJSON *sp;
        const char *salt, *session;
    } bad[] = {
        {ids, 0, 1, -1, NULL, NULL, NULL},      {ids, 3, 0, 1, NULL, NULL, NULL},
        {ids, 3, 1, 4, NULL, NULL, NULL},       {ids, 3, 1, -2, NULL, NULL, NULL},
        {ids, 3, 1, 0, n2, NULL, NULL},         {ids, 3, 1, 0, inj, NULL, NULL},
        {ids, 3, 1, 0, arr, NULL, NULL},        {ids, 3, 1, 0, NULL, "", NULL},
        {neg, 3, 1, 0, NULL, NULL, NULL},       {ids, 3, 1, 0, NULL, NULL, "a b"},
        {neg_first, 3, 1, 0, NULL, NULL, NULL}, {neg_last, 3, 1, 0, NULL, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sr_client_req q = SR_CLIENT_REQ_INIT;
        q.token_ids = bad[i].ids;
        q.n_tokens = bad[i].n;
        q.return_routes = bad[i].routes;
        q.prompt_start = bad[i].start;
        q.sampling_params = bad[i].sp;
        q.cache_salt = bad[i].salt;
        q.session_id = bad[i].session;
        sr_client_result r;
        sr_err_clear(&e);
        ck_assert_sr_code(sr_client_generate(&r, k, &q, &e), e, SR_E_CLIENT_INVALID);
        ck_assert_int_eq(r.n_attempts, 0);
    }
    /* A longer prompt is checked eight ids at a time: the first negative id is named wherever
     * it stands (in a block, at a block's edges, in the tail after the last block), and a second
     * one after it does not speak for it. */
    int32_t longer[21];
    for (size_t at = 0; at < 21; at++) {
        for (size_t i = 0; i < 21; i++)
            longer[i] = (int32_t)(i + 1);
        longer[at] = -(int32_t)at - 1;
        if (at < 20)
            longer[at + 1 + (19 - at) / 2] = INT32_MIN; /* strictly after it */
        sr_client_req q = SR_CLIENT_REQ_INIT;
        q.token_ids = longer;
        q.n_tokens = 21;
        sr_client_result r;
        sr_err_clear(&e);
        ck_assert_sr_code(sr_client_generate(&r, k, &q, &e), e, SR_E_CLIENT_INVALID);
        ck_assert_int_eq(e.offset, (int64_t)at);
        char want[64];
        snprintf(want, sizeof want, "token_ids[%zu] = %d is negative", at, longer[at]);
        ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
    }
    /* The inclusive upper bound start == len(prompt) is valid (it is then sent and refused). */
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = ids;
    q.n_tokens = 3;
    q.return_routes = 1;
    q.prompt_start = 3;
    sr_client_result r;
    ck_assert_int_ne(sr_client_generate(&r, k, &q, &e), SR_E_CLIENT_INVALID);
    ck_assert_int_ge(r.n_attempts, 1);
    cJSON_Delete(n2);
    cJSON_Delete(inj);
    cJSON_Delete(arr);
    sr_client_conn_free(k);
    sr_client_free(cl);
}
END_TEST

START_TEST(r3_generate_is_spliced_and_verified)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(gen(&f, "s-1", 2, &r, &e), e);
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_int_eq(r.prompt_start_sent, 2);
    ck_assert_str_eq(r.path, "/skyrl/v1/generate");
    ck_assert_str_eq(r.engine_id, "engine-0");
    ck_assert_int_eq(r.weight_version, 0);
    ck_assert(r.has_logprobs);
    ck_assert(r.n_spans >= 1 && r.spans[0].lo == 2);
    ck_assert_int_eq(r.spans[r.n_spans - 1].hi, PROMPT_LEN + (int64_t)r.n_tokens - 1);
    ck_assert(r.bytes_received > 0 && r.bytes_received == r.bytes_total);
    verify_routes(CFG_CLEAN, &r, 2);
    /* The same session on the same conn reuses the kept-alive connection. */
    ck_assert_int_eq(r.attempts[0].new_connection, 1);
    ck_assert_sr_ok(gen(&f, "s-1", 0, &r, &e), e);
    ck_assert_int_eq(r.attempts[0].new_connection, 0);
    verify_routes(CFG_CLEAN, &r, 0);
    /* Without routes: the native endpoint. */
    ck_assert_sr_ok(gen(&f, "s-1", -2, &r, &e), e);
    ck_assert(!r.has_routes);
    ck_assert_str_eq(r.path, "/inference/v1/generate");
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 2);
    ck_assert_int_eq(fx_count(&f, 0, "native_generate"), 1);
    fx_stop(&f);
}
END_TEST

/* cpu_every = 2: the first generate of the conn and then every second one carry their thread CPU
 * time (the whole generate, and inside the splice); the others carry none. */
START_TEST(cpu_time_is_sampled_every_nth_generate)
{
    fx f;
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.cpu_every = 2;
    fx_start(&f, 1, CFG_CLEAN, &o);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    for (int i = 0; i < 4; i++) {
        ck_assert_sr_ok(gen(&f, "s-cpu", 0, &r, &e), e);
        ck_assert_int_eq(r.cpu_sampled, i % 2 == 0);
        if (i % 2 == 0) {
            ck_assert_msg(r.request_cpu_ms > 0 && r.splice_cpu_ms > 0 &&
                              r.splice_cpu_ms < r.request_cpu_ms,
                          "request %g ms, splice %g ms of CPU", r.request_cpu_ms, r.splice_cpu_ms);
        } else {
            ck_assert(r.request_cpu_ms == 0 && r.splice_cpu_ms == 0);
        }
    }
    fx_stop(&f);
    o.cpu_every = -1;
    sr_client *c = NULL;
    const char *url = "http://127.0.0.1:1";
    ck_assert_sr_code(sr_client_new(&c, &url, 1, NULL, &o, &e), e, SR_E_INVAL);
}
END_TEST

/* A generate of ids[0..n) with routes from 0 on f's conn, checked against the oracle: the engine
 * computed them from the ids it received, so a body with other ids fails. */
static void gen_ids_checked(fx *f, const int32_t *ids, size_t n)
{
    cJSON *s = sampling(3);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = ids;
    q.n_tokens = n;
    q.sampling_params = s;
    q.session_id = "ids";
    q.return_routes = 1;
    q.prompt_start = 0;
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_generate(&r, f->conn, &q, &e), e);
    fx_model m;
    fx_model_load(&m, CFG_CLEAN);
    size_t all = n + r.n_tokens, rows = all - 1;
    int32_t *tok = malloc(all * sizeof *tok);
    memcpy(tok, ids, n * sizeof *tok);
    memcpy(tok + n, r.token_ids, r.n_tokens * sizeof *tok);
    ck_assert_int_eq(r.routes.shape[0], (int64_t)rows);
    uint8_t *want = fx_oracle_rows(&m, 0, tok, all, rows, r.routes.dtype);
    ck_assert_msg(memcmp(want, r.routes.data, r.routes.nbytes) == 0,
                  "routes of a %zu-id prompt differ from the oracle's", n);
    free(want);
    free(tok);
    fx_model_free(&m);
    cJSON_Delete(s);
}

/* The conn writes only the ids that extend its last request's: an extension, a shorter prompt
 * sharing a prefix, one of the same length differing at its end, and one differing at id 0 each
 * reach the engine as they are. */
START_TEST(token_ids_text_is_reused_only_for_an_extension)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    static const int32_t a[] = {5, 6, 7, 8, 9, 10, 11};
    static const int32_t b[] = {5, 6, 7, 8, 9, 10, 11, 12, 13};
    static const int32_t c[] = {5, 6, 7, 9};
    static const int32_t d[] = {5, 6, 7, 9, 14};
    static const int32_t e[] = {5, 6, 7, 9, 15};
    static const int32_t g[] = {4, 6, 7, 9, 15, 16};
    gen_ids_checked(&f, a, 7);
    gen_ids_checked(&f, b, 9);
    gen_ids_checked(&f, c, 4);
    gen_ids_checked(&f, d, 5);
    gen_ids_checked(&f, e, 5);
    gen_ids_checked(&f, g, 6);
    fx_stop(&f);
}
END_TEST

/* Token ids are in [0, 2^31-1] on both reply paths (spliced int array with routes, cJSON
 * without): the largest id and the one below it are taken, one past it is refused. */
START_TEST(token_id_range_is_exact)
{
    static const int32_t ids[] = {1, 2, 3};
    const int64_t vals[3] = {(int64_t)INT32_MAX - 1, INT32_MAX, (int64_t)INT32_MAX + 1};
    for (int routes = 0; routes < 2; routes++) {
        for (int k = 0; k < 3; k++) {
            char reply[512];
            snprintf(reply, sizeof reply,
                     "{\"choices\":[{\"token_ids\":[10,%lld],\"finish_reason\":\"stop\","
                     "\"logprobs\":{\"content\":[{\"logprob\":-0.1},{\"logprob\":-0.2}]},"
                     "\"routed_experts\":{\"data\":\"AAEC\",\"shape\":[3,1,1],\"dtype\":"
                     "\"uint8\"}}]}",
                     (long long)vals[k]);
            sr_client_req q = SR_CLIENT_REQ_INIT;
            q.token_ids = ids;
            q.n_tokens = 3;
            q.return_routes = routes;
            capture c;
            sr_client_result r;
            sr_err e = SR_ERR_INIT;
            int rc = capture_try(&c, NULL, &q, &r, reply, &e);
            if (vals[k] <= INT32_MAX) {
                ck_assert_msg(rc == 0, "routes %d id %lld: %s (%s)", routes, (long long)vals[k],
                              sr_code_name(rc), e.msg);
                ck_assert_int_eq(r.n_tokens, 2);
                ck_assert_int_eq(r.token_ids[1], vals[k]);
            } else {
                /* The splice checks the declared range first (token_ids is an int_array field
                 * of [0, 2^31-1]); the cJSON path names the reply's schema. */
                int want = routes ? SR_E_INTARRAY_STRICT : SR_E_CLIENT_BAD_RESPONSE;
                ck_assert_msg(rc == want, "routes %d id %lld: %s (%s)", routes, (long long)vals[k],
                              sr_code_name(rc), e.msg);
            }
            capture_done(&c);
        }
    }
}
END_TEST

/* Token ids of every decimal width (0 to INT32_MAX: the body's id writer) and a negative integer
 * sampling member are exact in the body. A logprob entry is read by its "logprob" member
 * wherever it stands among others (the reader looks at the first member before searching); an
 * entry that is not an object is a bad response. */
START_TEST(ids_of_every_width_and_logprob_members_in_any_order)
{
    static const int32_t ids[] = {0,         7,         10,         99,         100,       4096,
                                  65535,     100000,    999999,     1000000,    12345678,  99999999,
                                  100000000, 999999999, 1000000000, 2147483646, INT32_MAX, 5};
    const size_t n = sizeof ids / sizeof ids[0];
    char want[512];
    size_t len = (size_t)snprintf(want, sizeof want,
                                  "{\"sampling_params\":{\"seed\":-2147483647},\"model\":"
                                  "\"default\",\"token_ids\":[");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(want + len, sizeof want - len, i ? ",%d" : "%d", ids[i]);
    snprintf(want + len, sizeof want - len, "]}");
    cJSON *sp = cJSON_Parse("{\"seed\":-2147483647}");
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = ids;
    q.n_tokens = n;
    q.sampling_params = sp;
    capture c;
    sr_client_result r;
    capture_generate(
        &c, NULL, &q, &r,
        "{\"request_id\":\"x\",\"choices\":[{\"token_ids\":[10,11,12],\"finish_reason\":"
        "\"stop\",\"logprobs\":{\"content\":[{\"token\":\"a\",\"logprob\":-0.25,"
        "\"bytes\":[97]},{\"logprobs\":-7.0,\"logprob\":-0.5},{\"logprob\":-0.75,"
        "\"top_logprobs\":[]}]}}]}");
    ck_assert_str_eq(body_of(&c), want);
    ck_assert(r.has_logprobs && r.n_tokens == 3);
    ck_assert(r.logprobs[0] == -0.25 && r.logprobs[1] == -0.5 && r.logprobs[2] == -0.75);
    capture_done(&c);
    sr_err e = SR_ERR_INIT;
    int rc = capture_try(&c, NULL, &q, &r,
                         "{\"request_id\":\"x\",\"choices\":[{\"token_ids\":[10],\"finish_reason\":"
                         "\"stop\",\"logprobs\":{\"content\":[-0.25]}}]}",
                         &e);
    ck_assert_msg(rc == SR_E_CLIENT_BAD_RESPONSE, "%s (%s)", sr_code_name(rc), e.msg);
    ck_assert_uint_eq(sr_client_routes_row_bytes(c.k), 0); /* no routes on this client yet */
    capture_done(&c);
    /* Routes of [3, 2, 3] int16: the client's row-size hint becomes 2 x 3 x 2 bytes. */
    q.return_routes = 1;
    q.prompt_start = (int64_t)n - 1;
    capture_generate(
        &c, NULL, &q, &r,
        "{\"choices\":[{\"token_ids\":[10,11,12],\"finish_reason\":\"stop\","
        "\"routed_experts\":{\"data\":\"LAEHAAcABwAHAAcABwAHAAcABwAHAAcABwAHAAcABwAHAAcA\","
        "\"shape\":[3,2,3],\"dtype\":"
        "\"int16\"}}]}");
    ck_assert(r.has_routes && r.routes.shape[0] == 3);
    ck_assert_uint_eq(sr_client_routes_row_bytes(c.k), 12);
    capture_done(&c);
    cJSON_Delete(sp);
}
END_TEST

static Suite *client_suite(void)
{
    Suite *s = suite_create("client");
    TCase *tc = tcase_create("client");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, body_headers_and_reply_are_exact);
    tcase_add_test(tc, request_validation_is_client_side);
    tcase_add_test(tc, schema_violations_are_bad_responses);
    tcase_add_test(tc, completions_route_logprobs);
    tcase_add_test(tc, r3_generate_is_spliced_and_verified);
    tcase_add_test(tc, token_id_range_is_exact);
    tcase_add_test(tc, cpu_time_is_sampled_every_nth_generate);
    tcase_add_test(tc, token_ids_text_is_reused_only_for_an_extension);
    tcase_add_test(tc, ids_of_every_width_and_logprob_members_in_any_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(client_suite());
    curl_global_cleanup();
    return rc;
}
