/*
 * The client's routing and fan-out against real mock-engine processes: sessions stick to one
 * engine, sr_client_parallel keeps its conns across calls, backoff is capped, jittered and
 * seeded, and the control plane fans out to every engine with per-engine queues and a deadline.
 * The generate path itself: test_client.c.
 */
#include <curl/curl.h>

#include "client/fanout.h"
#include "client/retry.h"
#include "client_gen.h"

/* One generate per job on the job's conn; records whether its first attempt connected anew. */
typedef struct pool_ctx {
    int new_conn[8];
    sr_client_conn *conn[8];
} pool_ctx;

static int pool_job(sr_client_conn *k, size_t i, void *ctx)
{
    pool_ctx *p = ctx;
    cJSON *s = sampling(2);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = PROMPT;
    q.n_tokens = PROMPT_LEN;
    q.sampling_params = s;
    q.session_id = "pool";
    q.return_routes = 1;
    q.prompt_start = 0;
    sr_client_result r;
    int rc = sr_client_generate(&r, k, &q, NULL);
    p->new_conn[i] = rc ? -1 : r.attempts[0].new_connection;
    p->conn[i] = k;
    cJSON_Delete(s);
    return rc;
}

/* sr_client_parallel keeps its conns (and their kept-alive connections) for the next call. */
START_TEST(parallel_reuses_conns_across_calls)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    sr_err e = SR_ERR_INIT;
    pool_ctx a = {{0}, {0}}, b = {{0}, {0}};
    int rcs[8];
    /* One thread, so both jobs of the first call run on one conn: one connection opened. */
    ck_assert_sr_ok(sr_client_parallel(f.client, 2, 1, pool_job, &a, rcs, &e), e);
    ck_assert_int_eq(rcs[0], 0);
    ck_assert_int_eq(a.new_conn[0], 1);
    ck_assert_int_eq(a.new_conn[1], 0);
    ck_assert_ptr_eq(a.conn[0], a.conn[1]);
    /* The next call takes that conn from the pool: its connection is reused. */
    ck_assert_sr_ok(sr_client_parallel(f.client, 1, 1, pool_job, &b, rcs, &e), e);
    ck_assert_int_eq(rcs[0], 0);
    ck_assert_ptr_eq(b.conn[0], a.conn[0]);
    ck_assert_int_eq(b.new_conn[0], 0);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 3);
    fx_stop(&f);
}
END_TEST

START_TEST(sessions_stick_to_one_engine)
{
    fx f;
    fx_start(&f, 2, CFG_CLEAN, NULL);
    sr_err e = SR_ERR_INIT;
    int64_t sent[2] = {0, 0};
    for (int i = 0; i < 8; i++) {
        char sid[16];
        snprintf(sid, sizeof sid, "%d_0", i);
        int want = sr_client_engine_for(f.client, sid);
        for (int rep = 0; rep < 2; rep++) {
            sr_client_result r;
            ck_assert_sr_ok(gen(&f, sid, 0, &r, &e), e);
            char id[16];
            snprintf(id, sizeof id, "engine-%d", want);
            ck_assert_int_eq(r.engine, want);
            ck_assert_str_eq(r.engine_id, id);
            sent[want]++;
        }
    }
    ck_assert(sent[0] > 0 && sent[1] > 0);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), sent[0]);
    ck_assert_int_eq(fx_count(&f, 1, "generate"), sent[1]);
    /* finish_session goes to the session's engine. */
    int eng = sr_client_engine_for(f.client, "3_0");
    ck_assert_int_eq(sr_client_finish_session(f.conn, "3_0"), 0);
    ck_assert_int_eq(fx_count(&f, eng, "finish_session"), 1);
    ck_assert_int_eq(fx_count(&f, 1 - eng, "finish_session"), 0);
    fx_stop(&f);
}
END_TEST

/* One transient fault, its expected first-attempt outcome. */
START_TEST(backoff_is_capped_jittered_and_seeded)
{
    uint64_t s = sr_retry_seed(7, "17_0", 2);
    ck_assert(s == sr_retry_seed(7, "17_0", 2));
    ck_assert(s != sr_retry_seed(7, "17_0", 3) && s != sr_retry_seed(8, "17_0", 2));
    /* No jitter: 50, 100, 200, 400, then capped at 300. */
    ck_assert_int_eq(sr_retry_backoff_ms(50, 300, 0, s, 1, -1), 50);
    ck_assert_int_eq(sr_retry_backoff_ms(50, 300, 0, s, 2, -1), 100);
    ck_assert_int_eq(sr_retry_backoff_ms(50, 300, 0, s, 3, -1), 200);
    ck_assert_int_eq(sr_retry_backoff_ms(50, 300, 0, s, 4, -1), 300);
    ck_assert_int_eq(sr_retry_backoff_ms(50, 300, 0, s, 60, -1), 300);
    /* Jitter 0.5 keeps every wait in [b/2, b] and is a function of (seed, failures). */
    int differ = 0;
    for (int k = 1; k <= 8; k++) {
        int64_t w = sr_retry_backoff_ms(1000, 1000, 0.5, s, k, -1);
        ck_assert(w >= 500 && w <= 1000);
        ck_assert_int_eq(w, sr_retry_backoff_ms(1000, 1000, 0.5, s, k, -1));
        differ += w != sr_retry_backoff_ms(1000, 1000, 0.5, s + 1, k, -1);
    }
    ck_assert_int_gt(differ, 0);
    /* Retry-After raises the wait. */
    ck_assert_int_eq(sr_retry_backoff_ms(50, 300, 0, s, 1, 2000), 2000);
    /* Classification of the default policy and the quirk. */
    sr_client_quirks none = {0, 0, 0, 0, 0, 0}, ref = {1, 0, 0, 0, 0, 0};
    sr_retry_facts f = {SR_E_CLIENT_HTTP_STATUS, 500, 1, 0};
    ck_assert_int_eq(sr_retry_classify(&f, &none), SR_RETRY_YES);
    ck_assert_int_eq(sr_retry_classify(&f, &ref), SR_RETRY_NO);
    f.http_status = 404;
    ck_assert_int_eq(sr_retry_classify(&f, &none), SR_RETRY_NO);
    f = (sr_retry_facts){SR_E_SPLICE_SHORT, 200, 0, 0};
    ck_assert_int_eq(sr_retry_classify(&f, &none), SR_RETRY_YES);
    ck_assert_int_eq(sr_retry_classify(&f, &ref), SR_RETRY_DECLINED);
    f.code = SR_E_SPLICE_DRIFT;
    ck_assert_int_eq(sr_retry_classify(&f, &none), SR_RETRY_NO);
    ck_assert_int_eq(sr_retry_classify(&f, &ref), SR_RETRY_NO);
    /* Issue #18: what the reference's JSON decoder refuses is retried under both policies; a
     * duplicate key, a nesting too deep and the stricter token_ids checks never are. */
    static const int decode[] = {SR_E_JSON_UTF8, SR_E_JSON_NUMBER_OVERFLOW, SR_E_INTARRAY_SYNTAX,
                                 SR_E_SPLICE_JSON, SR_E_SPLICE_TRUNCATED};
    for (size_t i = 0; i < sizeof(decode) / sizeof(decode[0]); i++) {
        f = (sr_retry_facts){decode[i], 200, 0, 0};
        ck_assert_msg(sr_retry_classify(&f, &none) == SR_RETRY_YES, "%s", sr_code_name(decode[i]));
        ck_assert_msg(sr_retry_classify(&f, &ref) == SR_RETRY_YES, "%s", sr_code_name(decode[i]));
    }
    static const int final[] = {SR_E_JSON_DUPLICATE_KEY, SR_E_JSON_TOO_DEEP, SR_E_INTARRAY_STRICT};
    for (size_t i = 0; i < sizeof(final) / sizeof(final[0]); i++) {
        f = (sr_retry_facts){final[i], 200, 0, 0};
        ck_assert_msg(sr_retry_classify(&f, &none) == SR_RETRY_NO, "%s", sr_code_name(final[i]));
        ck_assert_msg(sr_retry_classify(&f, &ref) == SR_RETRY_NO, "%s", sr_code_name(final[i]));
    }
    /* An aborted turn is retried only when the scenario's client.on_abort says retry, under
     * either policy (the quirk is about the reference's JSON decoder, not about aborts). */
    f = (sr_retry_facts){SR_E_CLIENT_ABORTED_TURN, 200, 0, 0};
    ck_assert_int_eq(sr_retry_classify(&f, &none), SR_RETRY_NO);
    f.retry_abort = 1;
    ck_assert_int_eq(sr_retry_classify(&f, &none), SR_RETRY_YES);
    ck_assert_int_eq(sr_retry_classify(&f, &ref), SR_RETRY_YES);
}
END_TEST

START_TEST(control_plane_fans_out)
{
    fx f;
    fx_start(&f, 2, CFG_CLEAN, NULL);
    sr_client_reply r[2];
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_control(r, 2, f.client, -1, "GET", "/syncroll/v1/state", NULL, &e),
                    e);
    for (int i = 0; i < 2; i++) {
        char id[16];
        snprintf(id, sizeof id, "engine-%d", i);
        const cJSON *eng = cJSON_GetObjectItemCaseSensitive(r[i].body, "engine");
        ck_assert(cJSON_IsString(eng));
        ck_assert_str_eq(eng->valuestring, id);
        sr_client_reply_release(&r[i]);
    }
    ck_assert_sr_ok(sr_client_control(r, 2, f.client, -1, "POST", "/reset_prefix_cache",
                                      "{\"reset_running_requests\":true}", &e),
                    e);
    sr_client_reply_release(&r[0]);
    sr_client_reply_release(&r[1]);
    ck_assert_int_eq(fx_count(&f, 0, "reset_prefix_cache"), 1);
    ck_assert_int_eq(fx_count(&f, 1, "reset_prefix_cache"), 1);
    ck_assert_sr_code(sr_client_control(r, 2, f.client, -1, "GET", "/no/such/path", NULL, &e), e,
                      SR_E_CLIENT_HTTP_STATUS);
    ck_assert_int_eq(r[0].http_status, 404);
    ck_assert_int_eq(r[1].http_status, 404);
    sr_client_reply_release(&r[0]);
    sr_client_reply_release(&r[1]);
    fx_stop(&f);
}
END_TEST

/* The fan-out (fanout.h): order and in-flight limit per engine, a failed engine's queue left
 * unsent, bad calls refused before sending, the deadline cutting and not sending. */
START_TEST(fanout_runs_queues_per_engine_and_cuts_at_the_deadline)
{
    fx f;
    fx_start(&f, 2, CFG_CLEAN, NULL);
    sr_fanout *fan = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fanout_new(&fan, f.urls, 2, 0, &e), e);
    sr_fanout_req q[6];
    memset(q, 0, sizeof q);
    for (int i = 0; i < 6; i++) {
        q[i].engine = i == 5;
        q[i].get = 1;
        q[i].path = "/syncroll/v1/state";
    }
    ck_assert_sr_ok(sr_fanout_run(fan, q, 6, 2, sr_clock_ms() + 10000, 10000, &e), e);
    for (int i = 0; i < 6; i++) {
        ck_assert_msg(q[i].code == 0 && q[i].status == 200, "request %d: %s", i, q[i].msg);
        cJSON *d = cJSON_ParseWithLength(q[i].resp.data, q[i].resp.len);
        const cJSON *eng = cJSON_GetObjectItemCaseSensitive(d, "engine");
        ck_assert(cJSON_IsString(eng));
        ck_assert_str_eq(eng->valuestring, i == 5 ? "engine-1" : "engine-0");
        cJSON_Delete(d);
    }
    sr_fanout_reqs_release(q, 6);
    /* One at a time: the failure keeps the engine's next request from being sent. */
    q[0] = (sr_fanout_req){.engine = 1, .get = 1, .path = "/no/such/path"};
    q[1] = (sr_fanout_req){.engine = 1, .get = 1, .path = "/syncroll/v1/state"};
    ck_assert_sr_ok(sr_fanout_run(fan, q, 2, 1, sr_clock_ms() + 10000, 10000, &e), e);
    ck_assert_int_eq(q[0].code, SR_E_CLIENT_HTTP_STATUS);
    ck_assert_int_eq(q[0].status, 404);
    ck_assert(!q[1].started && !q[1].done && q[1].code == 0);
    sr_fanout_reqs_release(q, 2);
    ck_assert_int_eq(sr_fanout_run(fan, q, 1, 0, sr_clock_ms() + 1000, 1000, &e), SR_E_INVAL);
    q[0] = (sr_fanout_req){.engine = 2, .get = 1, .path = "/syncroll/v1/state"};
    ck_assert_int_eq(sr_fanout_run(fan, q, 1, 1, sr_clock_ms() + 1000, 1000, &e), SR_E_INVAL);
    q[0] = (sr_fanout_req){.engine = 0, .get = 1, .path = "syncroll/v1/state"};
    ck_assert_int_eq(sr_fanout_run(fan, q, 1, 1, sr_clock_ms() + 1000, 1000, &e), SR_E_INVAL);
    sr_fanout_free(fan);
    fx_stop(&f);

    fx_start(&f, 1, CFG_FAULT("{\"kind\":\"stall\",\"endpoints\":[\"pause\"]}"), NULL);
    ck_assert_sr_ok(sr_fanout_new(&fan, f.urls, 1, 0, &e), e);
    memset(q, 0, sizeof q);
    q[0].path = q[1].path = "/pause?mode=keep";
    double t0 = sr_clock_ms();
    ck_assert_sr_ok(sr_fanout_run(fan, q, 2, 1, t0 + 300, 300, &e), e);
    double ms = sr_clock_ms() - t0;
    /* Not before the deadline; the upper bound only bounds a hang (the stall never answers). */
    ck_assert_msg(ms >= 290 && ms < 20000, "the fan-out ended after %.0f ms", ms);
    ck_assert_int_eq(q[0].code, SR_E_CLIENT_DEADLINE);
    ck_assert_msg(strstr(q[0].msg, "no answer before the deadline (300 ms)"), "%s", q[0].msg);
    /* The engine failed (curl's timeout) or the deadline passed first (not sent): either way
     * the second request never left. */
    ck_assert(!q[1].started);
    ck_assert(q[1].code == 0 || strstr(q[1].msg, "not sent: the deadline (300 ms)"));
    sr_fanout_reqs_release(q, 2);
    sr_fanout_free(fan);
    fx_stop(&f);
}
END_TEST

static Suite *client_fanout_suite(void)
{
    Suite *s = suite_create("client_fanout");
    TCase *tc = tcase_create("client_fanout");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sessions_stick_to_one_engine);
    tcase_add_test(tc, parallel_reuses_conns_across_calls);
    tcase_add_test(tc, backoff_is_capped_jittered_and_seeded);
    tcase_add_test(tc, control_plane_fans_out);
    tcase_add_test(tc, fanout_runs_queues_per_engine_and_cuts_at_the_deadline);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(client_fanout_suite());
    curl_global_cleanup();
    return rc;
}
