/*
 * The client's request body and reply reading against a capture server (client_capture.h): token
 * ids of every width and sampling keys that need escaping written exactly (body.c), and the
 * choice's members and logprob entries read in one pass (response.c). The rest of the body and
 * reply rules: test_client.c.
 */
#include "client_capture.h"

/* Seeded ids of every width (a width drawn first, then a value of that width) and sampling member
 * keys with and without bytes to escape are exact in the body: the id writer's branch-free digits
 * and the key writer's plain path against snprintf and the escaping path. */
START_TEST(random_ids_and_keys_are_exact)
{
    static const int64_t lo[] = {0,      10,      100,      1000,      10000,
                                 100000, 1000000, 10000000, 100000000, 1000000000};
    uint64_t x = 0x9E3779B97F4A7C15ull;
    cJSON *sp =
        cJSON_Parse("{\"a\\\"b\":1,\"c\\\\d\":2,\"e\\u0001f\":3,\"seed\":-7,\"top_k\":1000000000}");
    for (int round = 0; round < 12; round++) {
        int32_t ids[500];
        char want[8192];
        size_t len = (size_t)snprintf(
            want, sizeof want,
            "{\"sampling_params\":{\"a\\\"b\":1,\"c\\\\d\":2,\"e\\u0001f\":3,\"seed\":-7,"
            "\"top_k\":1000000000},\"model\":\"default\",\"token_ids\":[");
        for (size_t i = 0; i < 500; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int w = (int)(x % 10);
            int64_t hi = w == 9 ? (int64_t)INT32_MAX + 1 : lo[w + 1];
            ids[i] = (int32_t)(lo[w] + (int64_t)((x >> 8) % (uint64_t)(hi - lo[w])));
            len += (size_t)snprintf(want + len, sizeof want - len, i ? ",%d" : "%d", ids[i]);
        }
        snprintf(want + len, sizeof want - len, "]}");
        sr_client_req q = SR_CLIENT_REQ_INIT;
        q.token_ids = ids;
        q.n_tokens = 500;
        q.sampling_params = sp;
        capture c;
        sr_client_result r;
        capture_generate(&c, NULL, &q, &r, APPENDIX_REPLY);
        const char *got = body_of(&c);
        size_t at = 0;
        while (got[at] && got[at] == want[at])
            at++;
        ck_assert_msg(strcmp(got, want) == 0,
                      "round %d: the body differs at byte %zu: '%.40s' for '%.40s'", round, at,
                      got + at, want + at);
        capture_done(&c);
    }
    cJSON_Delete(sp);
}
END_TEST

/* The choice's members are found in one pass and the logprob entries read in one (response.c):
 * on both reply paths, a first member under another name is searched past (also after entries
 * whose "logprob" came first), the entries' count against the tokens is named before a bad
 * entry, a bad entry by its index, a long engine id is cut as snprintf cuts it, and a span row
 * is exactly three numbers. */
START_TEST(choice_members_and_logprobs_in_one_pass)
{
    static const int32_t ids[] = {1, 2, 3};
#define ONE_PASS_HEAD "{\"choices\":[{\"token_ids\":[10,11],\"finish_reason\":\"stop\","
#define ONE_PASS_ROUTES                                                                            \
    ",\"routed_experts\":{\"data\":\"AAEC\",\"shape\":[3,1,1],\"dtype\":\"uint8\"}}]}"
    static const struct {
        const char *reply, *msg; /* msg NULL: accepted */
        int64_t offset;
    } cases[] = {
        {ONE_PASS_HEAD "\"logprobs\":{\"content\":[{\"logprob\":-1.5},{\"logprobs\":-7.0,"
                       "\"logprob\":-2.5}]}" ONE_PASS_ROUTES,
         NULL, -1},
        {ONE_PASS_HEAD "\"logprobs\":{\"content\":[{\"logprob\":-1.5},{\"logprob\":\"x\"},"
                       "{\"logprob\":-3.0}]}" ONE_PASS_ROUTES,
         "has 3 entries for 2 tokens", -1},
        {ONE_PASS_HEAD
         "\"logprobs\":{\"content\":[{\"logprob\":-1.5},{\"logprob\":\"x\"}]}" ONE_PASS_ROUTES,
         "content[1].logprob is not a number", 1},
        {ONE_PASS_HEAD
         "\"logprobs\":{\"content\":[{\"top\":1},{\"logprob\":-2.5}]}" ONE_PASS_ROUTES,
         "content[0].logprob is not a number", 0},
        {ONE_PASS_HEAD "\"logprobs\":{\"content\":[]},\"syncroll\":{\"rows\":[[0,2,7]],"
                       "\"weight_version\":3,\"engine\":\"engine-with-an-id-longer-than-the-"
                       "result-keeps-0123456789012345678901234567890123456789\"}" ONE_PASS_ROUTES,
         NULL, -1},
        {ONE_PASS_HEAD "\"syncroll\":{\"engine\":\"e\",\"weight_version\":0,\"rows\":"
                       "[[0,1,0,5]]}" ONE_PASS_ROUTES,
         "syncroll.rows[0] is not", -1},
        {ONE_PASS_HEAD "\"syncroll\":{\"engine\":\"e\",\"weight_version\":0,\"rows\":"
                       "[[0,2,0],[0,1]]}" ONE_PASS_ROUTES,
         "syncroll.rows[1] is not", -1},
    };
    static const char *const warm = ONE_PASS_HEAD
        "\"logprobs\":{\"content\":[{\"logprob\":-1.0},{\"logprob\":-2.0}]}" ONE_PASS_ROUTES;
#undef ONE_PASS_HEAD
#undef ONE_PASS_ROUTES
    const char *long_id = "engine-with-an-id-longer-than-the-result-keeps-0123456789012345678901"
                          "234567890123456789";
    /* Each reply on a fresh conn (its arrays grown for it) and after a first reply (read into the
     * arrays that one grew). */
    for (int run = 0; run < 4; run++) {
        int routes = run % 2;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            sr_client_req q = SR_CLIENT_REQ_INIT;
            q.token_ids = ids;
            q.n_tokens = 3;
            q.return_routes = routes;
            capture c;
            sr_client_result r;
            sr_err e = SR_ERR_INIT;
            int rc = run < 2 ? capture_try(&c, NULL, &q, &r, cases[i].reply, &e)
                             : capture_try_warm(&c, &q, &r, warm, cases[i].reply, &e);
            if (cases[i].msg) {
                ck_assert_msg(rc == SR_E_CLIENT_BAD_RESPONSE && strstr(e.msg, cases[i].msg) &&
                                  e.offset == cases[i].offset,
                              "run %d reply %zu: %s (%s, offset %lld)", run, i, sr_code_name(rc),
                              e.msg, (long long)e.offset);
            } else if (i == 0) {
                ck_assert_sr_ok(rc, e);
                ck_assert(r.has_logprobs && r.logprobs[0] == -1.5 && r.logprobs[1] == -2.5);
                ck_assert_str_eq(r.finish_reason, "stop");
            } else {
                ck_assert_sr_ok(rc, e);
                ck_assert(!r.has_logprobs);
                size_t cut = sizeof r.engine_id - 1;
                ck_assert_uint_eq(strlen(r.engine_id), cut);
                ck_assert(strncmp(r.engine_id, long_id, cut) == 0);
                ck_assert_int_eq((int)r.weight_version, 3);
                ck_assert(r.n_spans == 1 && r.spans[0].lo == 0 && r.spans[0].hi == 2 &&
                          r.spans[0].version == 7);
            }
            ck_assert_int_eq(r.has_routes, rc == 0 && routes);
            capture_done(&c);
        }
    }
}
END_TEST

static Suite *client_reply_suite(void)
{
    Suite *s = suite_create("client_reply");
    TCase *tc = tcase_create("client_reply");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, random_ids_and_keys_are_exact);
    tcase_add_test(tc, choice_members_and_logprobs_in_one_pass);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(client_reply_suite());
    curl_global_cleanup();
    return rc;
}
