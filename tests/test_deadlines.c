/*
 * No unbounded waits (design.md §1): a stall provoked at every phase — connect (refused port,
 * blackholed listen queue), response headers, response body, control plane, every weight-sync
 * phase (delta and broadcast), engine start (an engine that never reports readiness) and a
 * `wait.until` step — ends as its named deadline failure within the configured time. Each bound
 * below is the configured deadline times 3 plus 10 s: a bound on a hang (the stalls never end by
 * themselves), not a measure of speed, so a loaded machine or a sanitizer build cannot fail it.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "run/runner.h"

/* This suite uses the engine-process part of the shared fixtures only. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "sync_fixture.h"
#pragma GCC diagnostic pop

#define SLACK     3.0
#define MARGIN_MS 10000.0
#define MODEL                                                                                      \
    "\"seed\":3,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":16,\"topk\":2,\"eos_id\":2,"      \
    "\"eos_rate\":0}"
#define CFG_FAULT(f) "{" MODEL ",\"faults\":[" f "]}"

static void assert_within(double elapsed_ms, double deadline_ms, const char *what)
{
    ck_assert_msg(elapsed_ms < SLACK * deadline_ms + MARGIN_MS,
                  "%s took %.0f ms, more than %.0fx its %.0f ms deadline and %.0f ms", what,
                  elapsed_ms, SLACK, deadline_ms, MARGIN_MS);
}

/* ---- the generate client: connect, headers, body ---- */

static sr_client_req one_request(cJSON **sp)
{
    static const int32_t prompt[4] = {9, 8, 7, 6};
    *sp = cJSON_CreateObject();
    cJSON_AddNumberToObject(*sp, "max_tokens", 4);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = prompt;
    q.n_tokens = 4;
    q.sampling_params = *sp;
    q.return_routes = 1;
    return q;
}

/* A generate against `url` with `deadline_ms`; returns the code, *ms the time it took and
 * *attempts the attempts it made. */
static int generate_on(const char *url, int64_t deadline_ms, double *ms, int *attempts, sr_err *err)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.deadline_ms = deadline_ms;
    o.max_attempts = SR_CLIENT_MAX_ATTEMPTS;
    sr_client *c = NULL;
    sr_client_conn *k = NULL;
    ck_assert_sr_ok(sr_client_new(&c, &url, 1, NULL, &o, err), *err);
    ck_assert_sr_ok(sr_client_conn_new(&k, c, err), *err);
    cJSON *sp;
    sr_client_req q = one_request(&sp);
    sr_client_result r;
    double t0 = sr_client_now_ms();
    int rc = sr_client_generate(&r, k, &q, err);
    *ms = sr_client_now_ms() - t0;
    *attempts = r.n_attempts;
    cJSON_Delete(sp);
    sr_client_conn_free(k);
    sr_client_free(c);
    return rc;
}

static int loopback_socket(struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof(*a);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)a, n), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)a, &n), 0);
    return fd;
}

/* Connect, refused: nothing listens on the port; every attempt is refused at once and the
 * retries stop at the request's deadline. */
START_TEST(connect_refused_ends_at_the_client_deadline)
{
    struct sockaddr_in a;
    int fd = loopback_socket(&a);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
    close(fd);
    sr_err err = SR_ERR_INIT;
    double ms;
    int attempts;
    ck_assert_sr_code(generate_on(url, 500, &ms, &attempts, &err), err, SR_E_CLIENT_DEADLINE);
    assert_within(ms, 500, "a refused connect");
    ck_assert_int_gt(attempts, 1); /* refused at once, retried until the deadline */
}
END_TEST

/* Connect, blackholed: a listener that never accepts and whose queue is full drops the SYN, so
 * the connection never completes; the deadline cuts it. */
START_TEST(connect_blackholed_ends_at_the_client_deadline)
{
    struct sockaddr_in a;
    int lfd = loopback_socket(&a);
    ck_assert_int_eq(listen(lfd, 0), 0);
    /* Fill the accept queue (backlog 0 admits one) so that later SYNs are dropped. */
    int fill[2];
    for (int i = 0; i < 2; i++) {
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        ck_assert_int_ge(fill[i], 0);
        connect(fill[i], (struct sockaddr *)&a, sizeof(a));
    }
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
    sr_err err = SR_ERR_INIT;
    double ms;
    int attempts;
    ck_assert_sr_code(generate_on(url, 500, &ms, &attempts, &err), err, SR_E_CLIENT_DEADLINE);
    assert_within(ms, 500, "a blackholed connect");
    ck_assert_int_eq(attempts, 1); /* the one connect hung until the deadline cut it */
    for (int i = 0; i < 2; i++)
        close(fill[i]);
    close(lfd);
}
END_TEST

/* Headers and body: the engine accepts the request, then never answers (stall) or stops in the
 * middle of the body (stall_mid_body). */
static const char *const STALLS[] = {
    CFG_FAULT("{\"kind\":\"stall\"}"),
    CFG_FAULT("{\"kind\":\"stall_mid_body\"}"),
    CFG_FAULT("{\"kind\":\"stall_mid_body\",\"bytes\":1}"),
};

START_TEST(engine_stall_ends_at_the_client_deadline)
{
    fx f;
    fx_start(&f, 1, STALLS[_i], NULL);
    sr_err err = SR_ERR_INIT;
    double ms;
    int attempts;
    ck_assert_sr_code(generate_on(f.urls[0], 500, &ms, &attempts, &err), err, SR_E_CLIENT_DEADLINE);
    assert_within(ms, 500, STALLS[_i]);
    ck_assert_int_eq(attempts, 1);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 1);
    fx_stop(&f);
}
END_TEST

/* Control plane: a stalled pause is cut at control_timeout_ms. */
START_TEST(control_stall_ends_at_the_control_timeout)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.control_timeout_ms = 400;
    fx f;
    fx_start(&f, 1, CFG_FAULT("{\"kind\":\"stall\",\"endpoints\":[\"pause\"]}"), &o);
    sr_client_reply r;
    sr_err err = SR_ERR_INIT;
    double t0 = sr_client_now_ms();
    ck_assert_sr_code(sr_client_control(&r, 1, f.client, 0, "POST", "/pause?mode=keep", NULL, &err),
                      err, SR_E_CLIENT_DEADLINE);
    assert_within(sr_client_now_ms() - t0, 400, "a stalled pause");
    sr_client_reply_release(&r);
    fx_stop(&f);
}
END_TEST

/* ---- weight sync: every phase ---- */

typedef struct sync_stall {
    const char *phase;
    sr_sync_transport transport;
    const char *fault;
} sync_stall;

#define SYNC_STALL_MS 1500

#define STALL_AT(ep, extra) "{\"kind\":\"stall\",\"endpoints\":[\"" ep "\"]" extra "}"

static const sync_stall SYNC_STALLS[] = {
    {"fetch", SR_SYNC_DELTA, STALL_AT("fetch_weights", "")},
    {"pause", SR_SYNC_DELTA, STALL_AT("pause", "")},
    {"reset_cache", SR_SYNC_DELTA, STALL_AT("reset_prefix_cache", "")},
    {"start", SR_SYNC_DELTA, STALL_AT("collective_rpc", ",\"nth\":[1]")},
    {"update", SR_SYNC_DELTA, STALL_AT("update_weights", "")},
    {"finish", SR_SYNC_DELTA, STALL_AT("collective_rpc", ",\"nth\":[2]")},
    {"resume", SR_SYNC_DELTA, STALL_AT("resume", "")},
    {"verify", SR_SYNC_DELTA, STALL_AT("state", "")},
    {"init", SR_SYNC_BROADCAST, STALL_AT("init_weight_transfer_engine", "")},
    {"update", SR_SYNC_BROADCAST, STALL_AT("collective_rpc", ",\"nth\":[2]")},
};

START_TEST(sync_phase_stall_is_a_sync_deadline)
{
    const sync_stall *c = &SYNC_STALLS[_i];
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    /* Only the stalled phase has the short deadline; the phases before it (real HTTP, fsync)
     * keep the default 60 s, a bound on a hang: with one deadline for every phase (300 ms, then
     * 1500 ms) a loaded machine fired it in an earlier phase (fetch, under a load average of 18).
     */
    int found = 0;
    for (int p = 0; p < SR_SYNC_PHASE_COUNT; p++)
        if (strcmp(sr_sync_phase_name((sr_sync_phase)p), c->phase) == 0) {
            o.phase_deadline_ms[p] = SYNC_STALL_MS;
            found = 1;
        }
    ck_assert_msg(found, "no phase %s", c->phase);
    sfx x;
    char cfg[512];
    snprintf(cfg, sizeof(cfg), "{" SYNC_MODEL ",\"faults\":[%s]}", c->fault);
    sfx_start(&x, 1, cfg, c->transport, &o);
    double t0 = sr_client_now_ms();
    sfx_sync(&x, 1, 1);
    double ms = sr_client_now_ms() - t0;
    const sr_check *d = sfx_check(&x, "sync.deadline");
    ck_assert_msg(d != NULL, "phase %s (%s): no sync.deadline among %zu checks (first: %s)",
                  c->phase, c->fault, x.r.n_checks, x.r.n_checks ? x.r.checks[0].name : "none");
    ck_assert_msg(strstr(d->message, c->phase), "phase %s: %s", c->phase, d->message);
    assert_within(ms, SYNC_STALL_MS, c->phase);
    sfx_stop(&x);
}
END_TEST

/* ---- the runner: engine start and wait steps ---- */

typedef struct scn_env {
    char dir[64];
    char work[128], expanded[160], script[160];
    sr_run_result *run;
    sr_scenario *scn;
    sr_scenario_result *res;
} scn_env;

static void scn_run(scn_env *e, const char *text, const char *engine)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->dir, sizeof(e->dir), "/tmp/syncroll-deadlines-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(e->dir));
    snprintf(e->work, sizeof(e->work), "%s/work", e->dir);
    snprintf(e->expanded, sizeof(e->expanded), "%s/expanded.json", e->dir);
    ck_assert_int_eq(mkdir(e->work, 0777), 0);
    char exe[4200];
    if (engine) {
        snprintf(e->script, sizeof(e->script), "%s/engine.sh", e->dir);
        FILE *f = fopen(e->script, "w");
        ck_assert_ptr_nonnull(f);
        fputs(engine, f);
        fclose(f);
        ck_assert_int_eq(chmod(e->script, 0755), 0);
        snprintf(exe, sizeof(exe), "%s", e->script);
    } else {
        fx_syncroll_path(exe, sizeof(exe));
    }
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&e->scn, text, strlen(text), "deadline.json", &err), err);
    ck_assert_sr_ok(sr_run_result_new(&e->run, &err), err);
    ck_assert_sr_ok(sr_run_result_add_scenario(&e->res, e->run, &err), err);
    sr_run_opts o = {exe, e->work, e->expanded, "repro", 1, sr_client_now_ms(), 1};
    sr_run_scenario(e->res, e->scn, &o);
}

static void scn_free(scn_env *e)
{
    sr_run_result_free(e->run);
    sr_scenario_free(e->scn);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Engine start: an engine (SYNCROLL_ENGINE, here opts.self_exe) that never writes its
 * readiness line is engine.crashed after engines.ready_timeout_ms, and the scenario ends. */
START_TEST(engine_that_never_gets_ready_is_engine_crashed)
{
    scn_env e;
    scn_run(&e,
            "{\"id\":\"never-ready\",\"description\":\"d\",\"engines\":{\"ready_timeout_ms\":1000,"
            "\"stop_grace_ms\":1000},\"steps\":[{\"kind\":\"rollout\"}]}",
            "#!/bin/sh\nexec sleep 60\n");
    ck_assert(sr_result_fired(e.res, "engine.crashed"));
    ck_assert_int_eq(e.res->verdict, SR_VERDICT_FAIL);
    ck_assert_msg(strstr(e.res->reason, "did not become ready"), "reason: %s", e.res->reason);
    assert_within(e.res->wall_ms, 1000, "waiting for readiness");
    scn_free(&e);
}
END_TEST

/* A wait.until condition that never holds is step.deadline after its timeout_ms. */
START_TEST(wait_until_never_true_is_a_step_deadline)
{
    scn_env e;
    scn_run(&e,
            "{\"id\":\"never-inflight\",\"description\":\"d\",\"steps\":[{\"kind\":\"wait\","
            "\"until\":{\"min_inflight\":1},\"timeout_ms\":300}],"
            "\"expect\":{\"verdict\":\"fail\",\"checks\":[\"step.deadline\"]}}",
            NULL);
    ck_assert(sr_result_fired(e.res, "step.deadline"));
    ck_assert_int_eq(e.res->verdict, SR_VERDICT_PASS);
    const sr_step_timing *t = &e.res->steps[0];
    assert_within(t->end_ms - t->start_ms, 300, "the wait step");
    scn_free(&e);
}
END_TEST

static Suite *deadlines_suite(void)
{
    Suite *s = suite_create("deadlines");
    TCase *tc = tcase_create("client");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, connect_refused_ends_at_the_client_deadline);
    tcase_add_test(tc, connect_blackholed_ends_at_the_client_deadline);
    tcase_add_loop_test(tc, engine_stall_ends_at_the_client_deadline, 0,
                        (int)(sizeof(STALLS) / sizeof(STALLS[0])));
    tcase_add_test(tc, control_stall_ends_at_the_control_timeout);
    suite_add_tcase(s, tc);
    tc = tcase_create("sync");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, sync_phase_stall_is_a_sync_deadline, 0,
                        (int)(sizeof(SYNC_STALLS) / sizeof(SYNC_STALLS[0])));
    suite_add_tcase(s, tc);
    tc = tcase_create("runner");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, engine_that_never_gets_ready_is_engine_crashed);
    tcase_add_test(tc, wait_until_never_true_is_a_step_deadline);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(deadlines_suite());
    curl_global_cleanup();
    return rc;
}
