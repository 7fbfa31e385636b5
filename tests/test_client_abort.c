/*
 * Aborted turns against the real mock engine, in every dialect: a generate in flight when the
 * engine pauses in abort mode (vLLM's /pause?mode=abort, SGLang's pause_generation default) is
 * answered with the dialect's abort form, and the client makes it the named outcome
 * client.aborted_turn, never a finished reply; with on_abort retry the turn is sent again and
 * completes; an abort without routes is an aborted turn, not client.routes_missing
 * (vllm-project/vime#49); the quirk commit_aborted_turn restores the defects.
 *
 * No timing assertion: the engine decodes a token every 50 ms for 100 tokens, the test pauses
 * once the engine's state says the request runs, so the abort lands mid-generation; a retried
 * request is held by the pause until the test has seen it held and resumes.
 */
#include <curl/curl.h>
#include <pthread.h>

#include "client_fixture.h"

#define SLOW_MODEL                                                                                 \
    "\"seed\":5,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":16,\"topk\":2,\"eos_id\":-1},"    \
    "\"timing\":{\"prefill_ms\":0,\"decode_ms_per_token\":50}"
#define MAX_TOKENS 100

static const int32_t IDS[] = {5, 6, 7, 8, 9};

/* One dialect route: the engine's dialect, the client's dialect and route index. */
typedef struct wire {
    const char *name;
    sr_dialect dialect;
    int route;
} wire;

static const wire WIRES[] = {
    {"skyrl", SR_DIALECT_SKYRL, 0},   {"vllm", SR_DIALECT_VLLM, 0},
    {"vllm", SR_DIALECT_VLLM, 1},     {"vllm-json", SR_DIALECT_VLLM_JSON, 0},
    {"sglang", SR_DIALECT_SGLANG, 0}, {"sglang", SR_DIALECT_SGLANG, 1},
    {"dynamo", SR_DIALECT_DYNAMO, 0}, {"nemo-rl", SR_DIALECT_NEMO_RL, 0},
};
#define N_WIRES ((int)(sizeof WIRES / sizeof WIRES[0]))

typedef struct bg_gen {
    pthread_t t;
    fx *f;
    sr_client_result r;
    sr_err e;
    int rc;
} bg_gen;

static void *gen_main(void *arg)
{
    bg_gen *b = arg;
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "max_tokens", MAX_TOKENS);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = IDS;
    q.n_tokens = 5;
    q.sampling_params = s;
    q.session_id = "abort";
    q.return_routes = 1;
    q.prompt_start = 0;
    b->e = (sr_err)SR_ERR_INIT;
    b->rc = sr_client_generate(&b->r, b->f->conn, &q, &b->e);
    cJSON_Delete(s);
    return NULL;
}

/* A number of engine 0's /syncroll/v1/state ("inflight", "held"). */
static int64_t state_num(fx *f, const char *key)
{
    sr_client_reply r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_control(&r, 1, f->client, 0, "GET", "/syncroll/v1/state", NULL, &e),
                    e);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r.body, key);
    ck_assert_msg(cJSON_IsNumber(v), "state has no %s", key);
    int64_t n = (int64_t)v->valuedouble;
    sr_client_reply_release(&r);
    return n;
}

/* Polls until `key` reaches n (bounded only by Check's timeout: no timing assertion). */
static void wait_state(fx *f, const char *key, int64_t n)
{
    while (state_num(f, key) < n)
        usleep(2000);
}

static void post(fx *f, const char *path)
{
    sr_client_reply r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_control(&r, 1, f->client, 0, "POST", path, NULL, &e), e);
    sr_client_reply_release(&r);
}

/* Starts an engine of wire w (with `faults`, a JSON array) and a client with `o` for it. */
static void start(fx *f, const wire *w, const char *faults, sr_client_opts *o)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "{" SLOW_MODEL ",\"dialect\":\"%s\",\"faults\":%s}", w->name, faults);
    o->dialect = w->dialect;
    o->dialect_route = w->route;
    o->route_layers = 2;
    o->route_topk = 2;
    o->backoff_initial_ms = 10;
    fx_start(f, 1, cfg, o);
}

/* Sends the slow generate in the background and aborts it once it runs. */
static void abort_in_flight(fx *f, bg_gen *b)
{
    b->f = f;
    ck_assert_int_eq(pthread_create(&b->t, NULL, gen_main, b), 0);
    wait_state(f, "inflight", 1);
    post(f, "/pause?mode=abort");
}

START_TEST(an_aborted_reply_is_client_aborted_turn)
{
    const wire *w = &WIRES[_i];
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    fx f;
    start(&f, w, "[]", &o);
    bg_gen b;
    abort_in_flight(&f, &b);
    pthread_join(b.t, NULL);
    ck_assert_msg(b.rc == SR_E_CLIENT_ABORTED_TURN && b.e.code == SR_E_CLIENT_ABORTED_TURN,
                  "%s route %d: %s (%s)", w->name, w->route, sr_code_name(b.rc), b.e.msg);
    ck_assert_ptr_nonnull(strstr(b.e.msg, "finish_reason \"abort\""));
    ck_assert_str_eq(b.r.finish_reason, "abort");
    ck_assert_int_lt((int)b.r.n_tokens, MAX_TOKENS);
    ck_assert_int_eq(b.r.n_attempts, 1);
    ck_assert_int_eq(b.r.attempts[0].code, SR_E_CLIENT_ABORTED_TURN);
    ck_assert_int_eq(b.r.attempts[0].http_status, 200);
    post(&f, "/resume");
    fx_stop(&f);
}
END_TEST

/* vllm-project/vime#49: an abort whose reply carries no routes is the aborted turn it is; the
 * quirk (the reference that checks the routes first) raises client.routes_missing instead. */
START_TEST(an_abort_without_routes_is_an_aborted_turn)
{
    const wire *w = &WIRES[_i];
    for (int quirk = 0; quirk < 2; quirk++) {
        sr_client_opts o = SR_CLIENT_OPTS_INIT;
        o.quirks.commit_aborted_turn = quirk;
        fx f;
        start(&f, w, "[{\"kind\":\"routes_dropped\"}]", &o);
        bg_gen b;
        abort_in_flight(&f, &b);
        pthread_join(b.t, NULL);
        int want = quirk ? SR_E_CLIENT_ROUTES_MISSING : SR_E_CLIENT_ABORTED_TURN;
        ck_assert_msg(b.rc == want, "%s route %d quirk %d: %s (%s)", w->name, w->route, quirk,
                      sr_code_name(b.rc), b.e.msg);
        post(&f, "/resume");
        fx_stop(&f);
    }
}
END_TEST

/* radixark/miles#3337: with the quirk the aborted partial reply is a success, "abort" and all. */
START_TEST(quirk_commit_aborted_turn_takes_the_partial_reply)
{
    const wire *w = &WIRES[_i];
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.quirks.commit_aborted_turn = 1;
    fx f;
    start(&f, w, "[]", &o);
    bg_gen b;
    abort_in_flight(&f, &b);
    pthread_join(b.t, NULL);
    ck_assert_sr_ok(b.rc, b.e);
    ck_assert_str_eq(b.r.finish_reason, "abort");
    ck_assert_int_lt((int)b.r.n_tokens, MAX_TOKENS);
    ck_assert(b.r.has_routes);
    post(&f, "/resume");
    fx_stop(&f);
}
END_TEST

/* client.on_abort "retry": the aborted attempt is recorded, the turn is sent again (held by the
 * pause until the resume) and completes with every token. */
static void retry_case(const wire *w)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.on_abort = SR_CLIENT_ABORT_RETRY;
    fx f;
    start(&f, w, "[]", &o);
    bg_gen b;
    abort_in_flight(&f, &b);
    wait_state(&f, "held", 1);
    post(&f, "/resume");
    pthread_join(b.t, NULL);
    ck_assert_msg(b.rc == 0, "%s route %d: %s (%s)", w->name, w->route, sr_code_name(b.rc),
                  b.e.msg);
    ck_assert_int_eq(b.r.n_attempts, 2);
    ck_assert_int_eq(b.r.attempts[0].code, SR_E_CLIENT_ABORTED_TURN);
    ck_assert_int_eq(b.r.attempts[0].retried, 1);
    ck_assert_int_eq(b.r.attempts[1].code, 0);
    ck_assert_str_eq(b.r.finish_reason, "length");
    ck_assert_int_eq((int)b.r.n_tokens, MAX_TOKENS);
    fx_stop(&f);
}

START_TEST(on_abort_retry_sends_the_turn_again_skyrl)
{
    retry_case(&WIRES[0]);
}
END_TEST

START_TEST(on_abort_retry_sends_the_turn_again_sglang)
{
    retry_case(&WIRES[4]);
}
END_TEST

/* With on_abort "retry" and one attempt only, the spent budget names the aborted turn. */
START_TEST(on_abort_retry_spent_names_the_aborted_turn)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.on_abort = SR_CLIENT_ABORT_RETRY;
    o.max_attempts = 1;
    fx f;
    start(&f, &WIRES[0], "[]", &o);
    bg_gen b;
    abort_in_flight(&f, &b);
    pthread_join(b.t, NULL);
    ck_assert_msg(b.rc == SR_E_CLIENT_RETRY_EXHAUSTED, "%s (%s)", sr_code_name(b.rc), b.e.msg);
    ck_assert_ptr_nonnull(strstr(b.e.msg, "client.aborted_turn"));
    post(&f, "/resume");
    fx_stop(&f);
}
END_TEST

static Suite *abort_suite(void)
{
    Suite *s = suite_create("client_abort");
    TCase *tc = tcase_create("abort");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, an_aborted_reply_is_client_aborted_turn, 0, N_WIRES);
    tcase_add_loop_test(tc, an_abort_without_routes_is_an_aborted_turn, 0, N_WIRES);
    tcase_add_loop_test(tc, quirk_commit_aborted_turn_takes_the_partial_reply, 0, N_WIRES);
    /* The retry is the client's own loop, the same for every wire once the abort is recognised
     * (above): the envelope wire and SGLang's object form, each request running to its end. */
    tcase_add_test(tc, on_abort_retry_sends_the_turn_again_skyrl);
    tcase_add_test(tc, on_abort_retry_sends_the_turn_again_sglang);
    tcase_add_test(tc, on_abort_retry_spent_names_the_aborted_turn);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(abort_suite());
    curl_global_cleanup();
    return rc;
}
