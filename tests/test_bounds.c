/*
 * unit.bounds: the harness's argument limits at, before and past (docs/internals/testing.md,
 * boundary checklist): the client's options, engine count, URL and session id lengths; the
 * fan-out's requests in flight, path length and engine index; the sync's engine count, send
 * workers, initial version, bucket size and deadline. Each refusal is SR_E_INVAL (the session
 * id: client.invalid) and each value inside is taken. Nothing here needs a live engine: the one
 * URL is a closed port, reached only by the requests the limits let through.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/fanout.h"
#include "sr_clock.h"
#include "sr_test.h"
#include "sync/sync.h"

#define CLOSED "http://127.0.0.1:9"

static const char *g_urls[SR_CLIENT_MAX_ENGINES + 1];

/* sr_client_new over the first n of g_urls with o; frees the client when it was made. */
static int client_rc(size_t n, const sr_client_opts *o, sr_err *e)
{
    sr_client *c = NULL;
    int rc = sr_client_new(&c, g_urls, n, NULL, o, e);
    ck_assert(rc || c);
    sr_client_free(c);
    return rc;
}

typedef struct opt_case {
    const char *what;
    int ok;
    sr_client_opts o;
} opt_case;

/* Each option of sr_client_opts at its limit, one inside and one past; the engine count too. */
START_TEST(client_options_at_their_limits)
{
    sr_err e = SR_ERR_INIT;
    opt_case cs[32];
    size_t n = 0;
#define CASE(label, good, field, value)                                                            \
    do {                                                                                           \
        cs[n].what = label;                                                                        \
        cs[n].ok = good;                                                                           \
        cs[n].o = (sr_client_opts)SR_CLIENT_OPTS_INIT;                                             \
        cs[n].o.field = value;                                                                     \
        n++;                                                                                       \
    } while (0)
    CASE("max_attempts 0", 0, max_attempts, 0);
    CASE("max_attempts 1", 1, max_attempts, 1);
    CASE("max_attempts max", 1, max_attempts, SR_CLIENT_MAX_ATTEMPTS);
    CASE("max_attempts max + 1", 0, max_attempts, SR_CLIENT_MAX_ATTEMPTS + 1);
    CASE("jitter 0", 1, jitter, 0.0);
    CASE("jitter 1", 1, jitter, 1.0);
    CASE("jitter 1 + 2^-20", 0, jitter, 1.0 + 1.0 / (1 << 20));
    CASE("jitter -2^-20", 0, jitter, -1.0 / (1 << 20));
    CASE("backoff_initial_ms -1", 0, backoff_initial_ms, -1);
    CASE("backoff_initial_ms 0", 1, backoff_initial_ms, 0);
    CASE("backoff_max_ms -1", 0, backoff_max_ms, -1);
    CASE("deadline_ms 0", 0, deadline_ms, 0);
    CASE("deadline_ms 1", 1, deadline_ms, 1);
    CASE("control_timeout_ms 0", 0, control_timeout_ms, 0);
    CASE("control_timeout_ms 1", 1, control_timeout_ms, 1);
    CASE("attempt_timeout_ms -1", 0, attempt_timeout_ms, -1);
    CASE("attempt_timeout_ms 0", 1, attempt_timeout_ms, 0);
    CASE("connect_timeout_ms -1", 0, connect_timeout_ms, -1);
    CASE("connect_timeout_ms 0", 1, connect_timeout_ms, 0);
    CASE("dialect_route -1", 0, dialect_route, -1);
    CASE("dialect_route 0", 1, dialect_route, 0);
    CASE("dialect_route max", 0, dialect_route, SR_DIALECT_MAX_ROUTES);
    CASE("route_layers -1", 0, route_layers, -1);
    CASE("route_topk -1", 0, route_topk, -1);
    CASE("pd_decode of 64 engines", 0, pd_decode, SR_CLIENT_MAX_ENGINES);
#undef CASE
    for (size_t i = 0; i < n; i++) {
        int rc = client_rc(2, &cs[i].o, &e);
        ck_assert_msg(cs[i].ok ? rc == 0 : rc == SR_E_INVAL, "%s: rc %d (%s)", cs[i].what, rc,
                      e.msg);
    }
    /* The engine count, 1 .. SR_CLIENT_MAX_ENGINES; the decode and prefill engines among them and
     * not the same one. */
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    for (size_t k = 0; k <= 2; k++) {
        ck_assert_int_eq(client_rc(k, &o, &e), k ? 0 : SR_E_INVAL);
        ck_assert_int_eq(client_rc(SR_CLIENT_MAX_ENGINES - 1 + k, &o, &e), k < 2 ? 0 : SR_E_INVAL);
    }
    o.pd_decode = 1;
    o.pd_prefill = 0;
    ck_assert_int_eq(client_rc(2, &o, &e), 0);
    ck_assert_int_eq(client_rc(1, &o, &e), SR_E_INVAL);
    o.pd_decode = 0;
    o.pd_prefill = 1;
    ck_assert_int_eq(client_rc(2, &o, &e), 0);
    ck_assert_int_eq(client_rc(1, &o, &e), SR_E_INVAL);
    o.pd_prefill = 0;
    ck_assert_int_eq(client_rc(2, &o, &e), SR_E_INVAL); /* the same engine */
}
END_TEST

/* An engine URL of SR_CLIENT_URL_MAX - 1 bytes is taken, also with trailing slashes (which are
 * dropped), and one of SR_CLIENT_URL_MAX is refused, with or without them; so is a URL of
 * slashes only. */
START_TEST(client_url_length_at_its_limit)
{
    static char url[SR_CLIENT_URL_MAX + 8];
    const char *one[1] = {url};
    sr_err e = SR_ERR_INIT;
    for (int d = -2; d <= 0; d++) {
        for (int slashes = 0; slashes <= 2; slashes += 2) {
            size_t len = (size_t)(SR_CLIENT_URL_MAX + d);
            memset(url, 'u', len);
            memcpy(url + len, "//", (size_t)slashes);
            url[len + (size_t)slashes] = '\0';
            sr_client *c = NULL;
            int rc = sr_client_new(&c, one, 1, NULL, NULL, &e);
            ck_assert_msg(rc == (d < 0 ? 0 : SR_E_INVAL), "%zu bytes and %d slashes: rc %d", len,
                          slashes, rc);
            sr_client_free(c);
        }
    }
    snprintf(url, sizeof url, "///");
    sr_client *c = NULL;
    ck_assert_sr_code(sr_client_new(&c, one, 1, NULL, NULL, &e), e, SR_E_INVAL);
}
END_TEST

/* A session id of SR_CLIENT_SESSION_MAX bytes is sent (the closed port then fails the attempt);
 * one more byte is client.invalid before any attempt. */
START_TEST(session_id_length_at_its_limit)
{
    sr_client *cl;
    sr_client_conn *k;
    sr_err e = SR_ERR_INIT;
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.max_attempts = 1;
    ck_assert_sr_ok(sr_client_new(&cl, g_urls, 1, NULL, &o, &e), e);
    ck_assert_sr_ok(sr_client_conn_new(&k, cl, &e), e);
    static char sid[SR_CLIENT_SESSION_MAX + 2];
    static const int32_t ids[] = {1, 2, 3};
    for (int d = -1; d <= 1; d++) {
        memset(sid, 's', sizeof sid);
        sid[SR_CLIENT_SESSION_MAX + d] = '\0';
        sr_client_req q = SR_CLIENT_REQ_INIT;
        q.token_ids = ids;
        q.n_tokens = 3;
        q.session_id = sid;
        sr_client_result r;
        sr_err_clear(&e);
        int rc = sr_client_generate(&r, k, &q, &e);
        if (d > 0) {
            ck_assert_sr_code(rc, e, SR_E_CLIENT_INVALID);
            ck_assert_ptr_nonnull(strstr(e.msg, "session_id is longer than 256 bytes"));
            ck_assert_int_eq(r.n_attempts, 0);
        } else {
            ck_assert_msg(rc != 0 && rc != SR_E_CLIENT_INVALID, "%d bytes: rc %d (%s)",
                          SR_CLIENT_SESSION_MAX + d, rc, e.msg);
            ck_assert_int_eq(r.n_attempts, 1);
        }
    }
    sr_client_conn_free(k);
    sr_client_free(cl);
}
END_TEST

/* The fan-out: 1 .. SR_FANOUT_MAX_INFLIGHT requests in flight per engine, paths shorter than
 * SR_FANOUT_PATH_MAX, engine indices 0 .. n-1. */
START_TEST(fanout_arguments_at_their_limits)
{
    sr_fanout *f;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fanout_new(&f, g_urls, 2, 1000, &e), e);
    static char path[SR_FANOUT_PATH_MAX + 1];
    for (int in = 0; in <= SR_FANOUT_MAX_INFLIGHT + 1; in++) {
        int rc = sr_fanout_run(f, NULL, 0, in, sr_clock_ms() + 10000, 10000, &e);
        ck_assert_int_eq(rc, in >= 1 && in <= SR_FANOUT_MAX_INFLIGHT ? 0 : SR_E_INVAL);
    }
    for (int d = -1; d <= 0; d++) {
        memset(path, 'p', sizeof path);
        path[0] = '/';
        path[SR_FANOUT_PATH_MAX + d] = '\0';
        sr_fanout_req q = {.engine = 0, .get = 1, .path = path};
        int rc = sr_fanout_run(f, &q, 1, 1, sr_clock_ms() + 10000, 10000, &e);
        ck_assert_int_eq(rc, d < 0 ? 0 : SR_E_INVAL);
        sr_fanout_reqs_release(&q, 1);
    }
    for (int engine = -1; engine <= 2; engine++) {
        sr_fanout_req q = {.engine = engine, .get = 1, .path = "/health"};
        int rc = sr_fanout_run(f, &q, 1, 1, sr_clock_ms() + 10000, 10000, &e);
        ck_assert_int_eq(rc, engine >= 0 && engine <= 1 ? 0 : SR_E_INVAL);
        sr_fanout_reqs_release(&q, 1);
    }
    sr_fanout_free(f);
}
END_TEST

/* sr_sync_new over the first n of g_urls (broadcast, a 1 MiB model of 2 layers). */
static int sync_rc(size_t n, const sr_sync_opts *o, sr_err *e)
{
    static const int32_t layers[2] = {1, 3};
    sr_weights_spec spec = SR_WEIGHTS_SPEC_INIT;
    spec.num_layers = 2;
    spec.layer_indices = layers;
    spec.experts = 4;
    spec.expert_tensors = 2;
    sr_sync *s = NULL;
    int rc = sr_sync_new(&s, g_urls, n, &spec, o, e);
    ck_assert(rc || s);
    sr_sync_free(s);
    return rc;
}

/* The sync's options at their limits: engines 1 .. SR_CLIENT_MAX_ENGINES, send_workers 0 ..
 * SR_SYNC_MAX_INFLIGHT, initial_version 0 .. SR_WEIGHTS_MAX_VERSION, bucket_bytes and
 * deadline_ms from 1, total_deadline_ms from 0. */
START_TEST(sync_options_at_their_limits)
{
    sr_err e = SR_ERR_INIT;
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.transport = SR_SYNC_BROADCAST;
    ck_assert_int_eq(sync_rc(0, &o, &e), SR_E_INVAL);
    ck_assert_sr_ok(sync_rc(1, &o, &e), e);
    ck_assert_sr_ok(sync_rc(SR_CLIENT_MAX_ENGINES, &o, &e), e);
    ck_assert_int_eq(sync_rc(SR_CLIENT_MAX_ENGINES + 1, &o, &e), SR_E_INVAL);
    static const struct {
        int field;
        int64_t value;
        int ok;
    } cs[] = {
        {0, -1, 0},
        {0, 0, 1},
        {0, SR_SYNC_MAX_INFLIGHT, 1},
        {0, SR_SYNC_MAX_INFLIGHT + 1, 0},
        {1, -1, 0},
        {1, 0, 1},
        {1, SR_WEIGHTS_MAX_VERSION, 1},
        {1, SR_WEIGHTS_MAX_VERSION + 1, 0},
        {2, 0, 0},
        {2, 1, 1},
        {3, 0, 0},
        {3, 1, 1},
        {4, -1, 0},
        {4, 0, 1},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        sr_sync_opts x = o;
        if (cs[i].field == 0)
            x.send_workers = (int)cs[i].value;
        else if (cs[i].field == 1)
            x.initial_version = cs[i].value;
        else if (cs[i].field == 2)
            x.bucket_bytes = (size_t)cs[i].value;
        else if (cs[i].field == 3)
            x.deadline_ms = cs[i].value;
        else
            x.total_deadline_ms = cs[i].value;
        int rc = sync_rc(1, &x, &e);
        ck_assert_msg(cs[i].ok ? rc == 0 : rc == SR_E_INVAL, "field %d value %lld: rc %d (%s)",
                      cs[i].field, (long long)cs[i].value, rc, e.msg);
    }
}
END_TEST

/* sr_sync_run's target and content: past their ranges (-1 and SR_WEIGHTS_MAX_VERSION + 1;
 * content below SR_SYNC_SAME_BYTES) it does not run; at the top (the engine a closed port) it
 * runs and reports the engine failed. */
START_TEST(sync_run_target_at_its_limits)
{
    static const int32_t layers[2] = {1, 3};
    sr_weights_spec spec = SR_WEIGHTS_SPEC_INIT;
    spec.num_layers = 2;
    spec.layer_indices = layers;
    spec.experts = 4;
    spec.expert_tensors = 2;
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.transport = SR_SYNC_BROADCAST;
    o.deadline_ms = 5000;
    sr_sync *s = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_sync_new(&s, g_urls, 1, &spec, &o, &e), e);
    static const int64_t bad[][2] = {{-1, 1},
                                     {SR_WEIGHTS_MAX_VERSION + 1, 1},
                                     {1, SR_SYNC_SAME_BYTES - 1},
                                     {1, SR_WEIGHTS_MAX_VERSION + 1}};
    static sr_sync_result r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_sr_code(sr_sync_run(&r, s, bad[i][0], bad[i][1], &e), e, SR_E_INVAL);
        ck_assert_ptr_nonnull(strstr(e.msg, "out of range"));
    }
    ck_assert_int_eq(sr_sync_last_target(s), 0);
    ck_assert_sr_ok(sr_sync_run(&r, s, SR_WEIGHTS_MAX_VERSION, SR_SYNC_SAME_BYTES, &e), e);
    ck_assert_int_eq(r.engines[0].ok, 0);
    ck_assert_int_eq(r.completed, 0);
    ck_assert_int_eq(sr_sync_last_target(s), SR_WEIGHTS_MAX_VERSION);
    sr_sync_free(s);
}
END_TEST

static Suite *bounds_suite(void)
{
    Suite *s = suite_create("bounds");
    TCase *tc = tcase_create("bounds");
    tcase_add_test(tc, client_options_at_their_limits);
    tcase_add_test(tc, client_url_length_at_its_limit);
    tcase_add_test(tc, session_id_length_at_its_limit);
    tcase_add_test(tc, fanout_arguments_at_their_limits);
    tcase_add_test(tc, sync_options_at_their_limits);
    tcase_add_test(tc, sync_run_target_at_its_limits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    for (size_t i = 0; i <= SR_CLIENT_MAX_ENGINES; i++)
        g_urls[i] = CLOSED;
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(bounds_suite());
    curl_global_cleanup();
    return rc;
}
