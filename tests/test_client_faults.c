/*
 * The client's retry policy against every fault of the mock engine: each transient fault is
 * retried to a verified success, each protocol fault fails on the first attempt with its named
 * error (the engine counted one hit), stalls trip the deadline, attempts are capped and recorded,
 * and the quirk retry_json_decode_only fails the catalogued way.
 */
#include <curl/curl.h>

#include "client_gen.h"

typedef struct transient_case {
    const char *cfg;
    int first_code;
    int first_status;
} transient_case;

static const transient_case TRANSIENT[] = {
    {CFG_FAULT("{\"kind\":\"http_502_html\",\"count\":1}"), SR_E_CLIENT_HTTP_STATUS, 502},
    {CFG_FAULT("{\"kind\":\"http_503_json\",\"count\":1}"), SR_E_CLIENT_HTTP_STATUS, 503},
    {CFG_FAULT("{\"kind\":\"http_429\",\"retry_after\":1,\"count\":1}"), SR_E_CLIENT_HTTP_STATUS,
     429},
    {CFG_FAULT("{\"kind\":\"truncate\",\"bytes\":40,\"count\":1}"), SR_E_SPLICE_TRUNCATED, 200},
    /* The full length was announced: the body is short of it (sr_splice.h's order). */
    {CFG_FAULT("{\"kind\":\"truncate\",\"bytes\":40,\"keep_length\":true,\"count\":1}"),
     SR_E_SPLICE_SHORT, 200},
    {CFG_FAULT("{\"kind\":\"truncate_in_blob\",\"count\":1}"), SR_E_SPLICE_UNTERMINATED, 200},
    {CFG_FAULT("{\"kind\":\"truncate_in_blob\",\"keep_length\":true,\"count\":1}"),
     SR_E_SPLICE_UNTERMINATED, 200},
    {CFG_FAULT("{\"kind\":\"truncate_after_blobs\",\"count\":1}"), SR_E_SPLICE_TRUNCATED, 200},
    {CFG_FAULT("{\"kind\":\"reset\",\"count\":1}"), SR_E_CLIENT_TRANSPORT, 0},
    {CFG_FAULT("{\"kind\":\"refuse\",\"ms\":150,\"count\":1}"), SR_E_CLIENT_TRANSPORT, 0},
    {CFG_FAULT("{\"kind\":\"stall_mid_body\",\"count\":1}"), SR_E_CLIENT_TRANSPORT, 200},
};

START_TEST(each_transient_fault_is_retried_to_success)
{
    const transient_case *tc = &TRANSIENT[_i];
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.attempt_timeout_ms = 500; /* stall_mid_body: the attempt times out, the request goes on */
    o.backoff_initial_ms = 20;
    fx f;
    fx_start(&f, 1, tc->cfg, &o);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(gen(&f, "t", 1, &r, &e), e);
    ck_assert_msg(r.n_attempts >= 2, "case %d: %d attempts", _i, r.n_attempts);
    ck_assert_msg(r.attempts[0].code == tc->first_code, "case %d: first attempt %s, want %s", _i,
                  sr_code_name(r.attempts[0].code), sr_code_name(tc->first_code));
    ck_assert_int_eq(r.attempts[0].http_status, tc->first_status);
    ck_assert_int_eq(r.attempts[0].retried, 1);
    ck_assert_int_eq(r.attempts[r.n_attempts - 1].code, 0);
    if (tc->first_status == 429)
        ck_assert(r.attempts[0].wait_ms >= 1000);
    verify_routes(tc->cfg, &r, 1);
    fx_stop(&f);
}
END_TEST

/* One protocol fault and the named error it must end with, on the first attempt. */
typedef struct protocol_case {
    const char *cfg;
    int code;
} protocol_case;

static const protocol_case PROTOCOL[] = {
    {CFG_FAULT("{\"kind\":\"bad_base64\"}"), SR_E_B64_CHAR},
    {CFG_FAULT("{\"kind\":\"byte_count_off\"}"), SR_E_ENV_BYTE_COUNT},
    {CFG_FAULT("{\"kind\":\"non_canonical_dtype\"}"), SR_E_ENV_NON_CANONICAL},
    {CFG_FAULT("{\"kind\":\"reordered_envelope\"}"), SR_E_SPLICE_DRIFT},
    {CFG_FAULT("{\"kind\":\"respaced_json\"}"), SR_E_SPLICE_DRIFT},
    {CFG_FAULT("{\"kind\":\"data_null\"}"), SR_E_SPLICE_DRIFT},
    {CFG_FAULT("{\"kind\":\"escaped_quote_key\"}"), SR_E_SPLICE_ORPHAN},
    {CFG_FAULT("{\"kind\":\"duplicate_field\"}"), SR_E_JSON_DUPLICATE_KEY},
    {CFG_FAULT("{\"kind\":\"http_400_text\",\"text\":\"prompt too long\"}"),
     SR_E_CLIENT_HTTP_STATUS},
    {CFG_FAULT("{\"kind\":\"routes_dropped\"}"), SR_E_CLIENT_ROUTES_MISSING},
};

START_TEST(each_protocol_fault_fails_on_the_first_attempt)
{
    const protocol_case *pc = &PROTOCOL[_i];
    fx f;
    fx_start(&f, 1, pc->cfg, NULL);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    int rc = gen(&f, "p", 0, &r, &e);
    ck_assert_msg(rc == pc->code && e.code == pc->code, "case %d: got %s (%s), want %s", _i,
                  sr_code_name(rc), e.msg, sr_code_name(pc->code));
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 1);
    if (pc->code == SR_E_CLIENT_HTTP_STATUS)
        ck_assert_ptr_nonnull(strstr(e.msg, "prompt too long"));
    fx_stop(&f);
}
END_TEST

/* Look-alike and unregistered envelopes are not ours: the correct client ignores them. */
START_TEST(lookalike_and_extra_envelopes_are_ignored)
{
    static const char *cfgs[] = {CFG_FAULT("{\"kind\":\"lookalike_field\"}"),
                                 CFG_FAULT("{\"kind\":\"extra_envelope\",\"key\":\"logit_topk\"}")};
    for (int i = 0; i < 2; i++) {
        fx f;
        fx_start(&f, 1, cfgs[i], NULL);
        sr_client_result r;
        sr_err e = SR_ERR_INIT;
        ck_assert_sr_ok(gen(&f, "l", 0, &r, &e), e);
        ck_assert_int_eq(r.n_attempts, 1);
        verify_routes(cfgs[i], &r, 0);
        fx_stop(&f);
    }
}
END_TEST

/* A dribbled body arrives in many pieces, each spliced as it comes; the result is the same. */
START_TEST(a_dribbled_body_is_spliced_while_it_streams)
{
    static const char *cfg = CFG_FAULT("{\"kind\":\"dribble\",\"bytes_per_second\":1000}");
    fx f;
    fx_start(&f, 1, cfg, NULL);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(gen(&f, "dr", 0, &r, &e), e);
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_msg(r.attempts[0].chunks >= 4, "%d chunks", r.attempts[0].chunks);
    verify_routes(cfg, &r, 0);
    fx_stop(&f);
}
END_TEST

START_TEST(a_stalled_engine_trips_the_deadline)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.deadline_ms = 400;
    fx f;
    fx_start(&f, 1, CFG_FAULT("{\"kind\":\"stall\"}"), &o);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(gen(&f, "d", 0, &r, &e), e, SR_E_CLIENT_DEADLINE);
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 1);
    fx_stop(&f);

    /* A Retry-After beyond the deadline ends the request at once instead of sleeping. */
    o.deadline_ms = 2000;
    fx_start(&f, 1, CFG_FAULT("{\"kind\":\"http_429\",\"retry_after\":30}"), &o);
    ck_assert_sr_code(gen(&f, "d", 0, &r, &e), e, SR_E_CLIENT_DEADLINE);
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_int_eq(r.attempts[0].http_status, 429);
    fx_stop(&f);
}
END_TEST

START_TEST(attempts_are_capped_and_recorded)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.max_attempts = 3;
    o.backoff_initial_ms = 10;
    fx f;
    fx_start(&f, 1, CFG_FAULT("{\"kind\":\"http_502_html\"}"), &o);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(gen(&f, "x", 0, &r, &e), e, SR_E_CLIENT_RETRY_EXHAUSTED);
    ck_assert_int_eq(r.n_attempts, 3);
    for (int a = 0; a < 3; a++) {
        ck_assert_int_eq(r.attempts[a].code, SR_E_CLIENT_HTTP_STATUS);
        ck_assert_int_eq(r.attempts[a].http_status, 502);
        ck_assert_int_eq(r.attempts[a].retried, a < 2);
    }
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 3);
    fx_stop(&f);
}
END_TEST

/* The quirk restores the reference's classification, and each catalogued case fails its way. */
START_TEST(quirk_retry_json_decode_only)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.quirks.retry_json_decode_only = 1;
    o.backoff_initial_ms = 10;
    struct {
        const char *cfg;
        int code;
        int hits;
    } cases[] = {
        {CFG_FAULT("{\"kind\":\"truncate_in_blob\",\"count\":1}"), SR_E_CLIENT_NOT_RETRIED, 1},
        {CFG_FAULT("{\"kind\":\"http_503_json\",\"count\":1}"), SR_E_CLIENT_HTTP_STATUS, 1},
        {CFG_FAULT("{\"kind\":\"http_429\",\"count\":1}"), SR_E_CLIENT_HTTP_STATUS, 1},
        {CFG_FAULT("{\"kind\":\"http_502_html\",\"count\":1}"), 0, 2},
        {CFG_FAULT("{\"kind\":\"truncate_after_blobs\",\"count\":1}"), 0, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fx f;
        fx_start(&f, 1, cases[i].cfg, &o);
        sr_client_result r;
        sr_err e = SR_ERR_INIT;
        int rc = gen(&f, "q", 0, &r, &e);
        ck_assert_msg(rc == cases[i].code, "case %zu: got %s (%s)", i, sr_code_name(rc), e.msg);
        ck_assert_int_eq(fx_count(&f, 0, "generate"), cases[i].hits);
        if (rc == SR_E_CLIENT_NOT_RETRIED)
            ck_assert_ptr_nonnull(strstr(e.msg, "splice.unterminated"));
        fx_stop(&f);
    }
}
END_TEST

static Suite *faults_suite(void)
{
    Suite *s = suite_create("client_faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, each_transient_fault_is_retried_to_success, 0,
                        (int)(sizeof TRANSIENT / sizeof TRANSIENT[0]));
    tcase_add_loop_test(tc, each_protocol_fault_fails_on_the_first_attempt, 0,
                        (int)(sizeof PROTOCOL / sizeof PROTOCOL[0]));
    tcase_add_test(tc, lookalike_and_extra_envelopes_are_ignored);
    tcase_add_test(tc, a_dribbled_body_is_spliced_while_it_streams);
    tcase_add_test(tc, a_stalled_engine_trips_the_deadline);
    tcase_add_test(tc, attempts_are_capped_and_recorded);
    tcase_add_test(tc, quirk_retry_json_decode_only);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(faults_suite());
    curl_global_cleanup();
    return rc;
}
