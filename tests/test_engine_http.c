/*
 * The mock engine as an HTTP server facing careless or hostile clients (issue 21 items 3, 10, 11,
 * 13): sync_dir confinement (403 engine.forbidden_path), slowloris (head and body deadlines, the
 * cap on waiting connections), framing a careful server refuses before reading a body, strict
 * control-plane query parameters, and a bad --ready-fd. Raw loopback sockets where libcurl would
 * not send the bytes; no assertion depends on timing beyond generous bounds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "engine_util.h"
#include "scenario/scenario.h"
#include "sr_clock.h"

/* Sends `req` on a new connection and asserts the answer's status line and check name. */
static void expect_raw(const eng *e, const char *req, const char *status, const char *check)
{
    char buf[4096];
    sr_test_raw_read_all(sr_test_raw_send(e->port, req), buf, sizeof(buf));
    ck_assert_msg(strncmp(buf, status, strlen(status)) == 0, "want %s for %.60s...: %s", status,
                  req, buf);
    ck_assert_msg(!check || strstr(buf, check), "want %s in: %s", check, buf);
}

/* ---- item 13: sync_dir confinement ---- */

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* An engine whose server.sync_dirs names base/allowed refuses base/outside, a `..` out of the
 * allowed folder and a symlink inside it pointing out, with 403 engine.forbidden_path, and creates
 * nothing there; the allowed folder itself is not refused. Before the fix every sync_dir was
 * taken and receiver-<id> created in it. */
START_TEST(sync_dir_outside_sync_dirs_is_forbidden)
{
    char base[] = "/tmp/sr-http-sync-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(base));
    char allowed[128], outside[128], link[160], cfg[512], body[512];
    snprintf(allowed, sizeof(allowed), "%s/allowed", base);
    snprintf(outside, sizeof(outside), "%s/outside", base);
    snprintf(link, sizeof(link), "%s/link", allowed);
    ck_assert_int_eq(mkdir(allowed, 0700), 0);
    ck_assert_int_eq(mkdir(outside, 0700), 0);
    ck_assert_int_eq(symlink(outside, link), 0);
    snprintf(cfg, sizeof(cfg), "{\"id\":\"h\",\"server\":{\"sync_dirs\":[\"%s\"]}}", allowed);
    eng e;
    eng_start(&e, cfg);
    const char *bad[] = {outside, "%s/../outside", link, "/etc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char dir[256];
        snprintf(dir, sizeof(dir), bad[i], allowed);
        snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", dir);
        eng_expect(&e, "POST", "/fetch_weights", body, 403, "\"check\":\"engine.forbidden_path\"");
        snprintf(body, sizeof(body),
                 "{\"update_info\":{\"target_version\":1,\"version\":1,\"sync_dir\":\"%s\"}}", dir);
        eng_expect(&e, "POST", "/update_weights", body, 403, "engine.forbidden_path");
    }
    char rx[256];
    snprintf(rx, sizeof(rx), "%s/receiver-h", outside);
    ck_assert_msg(!exists(rx), "%s was created", rx);
    /* The allowed folder is not refused (nothing is published there: a named delta error) once
     * the receiver is initialised. */
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s/\"}", allowed);
    hresp r;
    http_req(&r, NULL, &e, "POST", "/fetch_weights", body, NULL, 20000);
    ck_assert_msg(r.status != 403 && r.status != 0, "allowed folder: %ld %s", r.status,
                  r.body.data);
    hresp_free(&r);
    snprintf(rx, sizeof(rx), "%s/receiver-h", allowed);
    ck_assert_msg(exists(rx), "%s was not created", rx);
    eng_stop(&e);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* An engine whose config names no folder (no server.sync_dirs key, null or []) writes nowhere:
 * a fetch_weights or update_weights into a folder under /tmp, or /tmp itself, is 403
 * engine.forbidden_path and creates nothing. Before, such an engine could write anywhere under
 * /tmp (the default root). */
START_TEST(engine_without_sync_dirs_writes_nowhere)
{
    static const char *const cfgs[] = {"{\"id\":\"d\"}",
                                       "{\"id\":\"d\",\"server\":{\"sync_dirs\":null}}",
                                       "{\"id\":\"d\",\"server\":{\"sync_dirs\":[]}}"};
    char dir[] = "/tmp/sr-http-none-XXXXXX", body[256], rx[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(rx, sizeof(rx), "%s/receiver-d", dir);
    for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
        eng e;
        eng_start(&e, cfgs[i]);
        const char *dirs[] = {dir, "/tmp"};
        for (size_t j = 0; j < 2; j++) {
            snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", dirs[j]);
            eng_expect(&e, "POST", "/fetch_weights", body, 403,
                       "\"check\":\"engine.forbidden_path\"");
            snprintf(body, sizeof(body),
                     "{\"update_info\":{\"target_version\":1,\"version\":1,\"sync_dir\":\"%s\"}}",
                     dirs[j]);
            eng_expect(&e, "POST", "/update_weights", body, 403, "server.sync_dirs names none");
        }
        ck_assert_msg(!exists(rx), "%s was created (config %s)", rx, cfgs[i]);
        /* The synthetic update, which names no folder, still works. */
        eng_expect(&e, "POST", "/update_weights",
                   "{\"update_info\":{\"target_version\":1,\"version\":1}}", 200, NULL);
        eng_stop(&e);
    }
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* The engine config `syncroll run` writes names exactly the scenario's sync_dirs and then the
 * folder the runner gives (the run's sync folder); nothing else, /tmp included. A folder that is
 * not absolute, or a ninth one, is refused by name. */
START_TEST(run_engine_config_names_only_the_given_sync_dirs)
{
    static const char plain[] =
        "{\"id\":\"s\",\"description\":\"d\",\"steps\":[{\"kind\":\"rollout\"}]}";
    static const char named[] =
        "{\"id\":\"s\",\"description\":\"d\",\"steps\":[{\"kind\":"
        "\"rollout\"}],\"engines\":{\"server\":{\"sync_dirs\":[\"/data/a\"]}}}";
    char dir[] = "/tmp/sr-http-run-XXXXXX", path[128], want[160];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/engine.json", dir);
    snprintf(want, sizeof(want), "%s/sync", dir);
    sr_err err = SR_ERR_INIT;
    for (int k = 0; k < 2; k++) {
        const char *doc = k ? named : plain;
        sr_scenario *s = NULL;
        ck_assert_sr_ok(sr_scenario_parse(&s, doc, strlen(doc), "s.json", &err), err);
        sr_engine_config c;
        ck_assert_sr_ok(sr_scenario_write_engine(s, path, NULL, &err), err);
        ck_assert_sr_ok(sr_engine_config_load(&c, path, 0, &err), err);
        ck_assert_int_eq(c.n_sync_dirs, k);
        sr_engine_config_release(&c);
        ck_assert_sr_ok(sr_scenario_write_engine(s, path, want, &err), err);
        ck_assert_sr_ok(sr_engine_config_load(&c, path, 0, &err), err);
        ck_assert_int_eq(c.n_sync_dirs, k + 1);
        if (k)
            ck_assert_str_eq(c.sync_dirs[0], "/data/a");
        ck_assert_str_eq(c.sync_dirs[k], want);
        sr_engine_config_release(&c);
        ck_assert_sr_code(sr_scenario_write_engine(s, path, "sync", &err), err, SR_E_INVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "not an absolute path"));
        sr_scenario_free(s);
    }
    unlink(path);
    rmdir(dir);
}
END_TEST

/* ---- item 3: slowloris ---- */

#define TRICKLERS 300

typedef struct trickle {
    int port;
    _Atomic int stop; /* set by the main thread (volatile is no synchronisation: TSan) */
    int fd[TRICKLERS];
    long reconnects;
} trickle;

static int trickle_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Every 200 ms each connection sends one more byte of an endless request head; a connection the
 * engine closed is opened again, as a slowloris tool does. */
static void *trickle_main(void *arg)
{
    trickle *t = arg;
    static const char head[] = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    size_t sent[TRICKLERS] = {0};
    while (!t->stop) {
        for (int i = 0; i < TRICKLERS && !t->stop; i++) {
            char c = sent[i] < sizeof(head) - 1 ? head[sent[i]] : 'a';
            char tmp[512];
            ssize_t got = t->fd[i] >= 0 ? recv(t->fd[i], tmp, sizeof(tmp), MSG_DONTWAIT) : 0;
            if (t->fd[i] >= 0 && got != 0 &&
                (send(t->fd[i], &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1 || errno == EAGAIN ||
                 errno == ENOTCONN)) {
                sent[i]++;
                continue;
            }
            if (t->fd[i] >= 0) {
                close(t->fd[i]);
                t->reconnects++;
            }
            t->fd[i] = trickle_connect(t->port);
            sent[i] = 0;
        }
        usleep(200000);
    }
    return NULL;
}

/* With 300 connections trickling a request head a byte at a time (more than the 64 waiting
 * connections the engine is given here, the default before issue #20 raised it to 1024 for
 * SkyRL's bursts, so the eviction of the longest waiting is exercised), valid generates are still
 * answered well within 5 s each. Before the fix they waited in the listen backlog until the trickle
 * stopped or libmicrohttpd's 120 s idle timeout. */
START_TEST(slowloris_does_not_block_a_valid_client)
{
    eng e;
    eng_start(&e, "{\"seed\":5,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":8,\"topk\":2},"
                  "\"server\":{\"max_pending_connections\":64}}");
    trickle *t = calloc(1, sizeof(*t));
    ck_assert_ptr_nonnull(t);
    t->port = e.port;
    for (int i = 0; i < TRICKLERS; i++)
        t->fd[i] = -1;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, trickle_main, t), 0);
    sleep(2); /* let the trickle fill the engine */
    double worst = 0;
    for (int k = 0; k < 3; k++) {
        double t0 = sr_clock_ms();
        hresp r;
        http_req(&r, NULL, &e, "POST", "/skyrl/v1/generate",
                 "{\"token_ids\":[3,4,5],\"sampling_params\":{\"max_tokens\":4}}", NULL, 5000);
        double ms = sr_clock_ms() - t0;
        worst = ms > worst ? ms : worst;
        ck_assert_msg(r.status == 200,
                      "generate %d during the trickle: status %ld (%s) after %.0f ms", k, r.status,
                      r.errbuf, ms);
        hresp_free(&r);
    }
    t->stop = 1;
    pthread_join(th, NULL);
    fprintf(stderr, "slowloris: worst valid generate %.0f ms, %ld trickler reconnects\n", worst,
            t->reconnects);
    for (int i = 0; i < TRICKLERS; i++)
        if (t->fd[i] >= 0)
            close(t->fd[i]);
    free(t);
    eng_stop(&e);
}
END_TEST

/* A head or a body that does not arrive within its deadline is answered 408
 * engine.request_timeout and the connection closed (before: kept for 120 s of silence, for ever
 * while bytes trickle). */
START_TEST(slow_head_and_body_are_408)
{
    eng e;
    eng_start(&e, "{\"server\":{\"header_timeout_ms\":300,\"body_timeout_ms\":300}}");
    double t0 = sr_clock_ms();
    expect_raw(&e, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: a", "HTTP/1.1 408",
               "\"check\":\"engine.request_timeout\"");
    expect_raw(&e, "", "HTTP/1.1 408", "header_timeout_ms");
    expect_raw(&e,
               "POST /skyrl/v1/generate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
               "Content-Type: application/json\r\n\r\n{\"token_ids\"",
               "HTTP/1.1 408", "body_timeout_ms");
    ck_assert_msg(sr_clock_ms() - t0 < 20000, "the deadlines took %.0f ms", sr_clock_ms() - t0);
    /* A request that arrives at once is unaffected. */
    eng_expect(&e, "GET", "/health", NULL, 200, NULL);
    eng_stop(&e);
}
END_TEST

/* ---- item 10: framing and query parameters ---- */

START_TEST(framing_a_careful_server_refuses)
{
    eng e;
    eng_start(&e, "{\"server\":{\"max_body_bytes\":4096}}");
    /* A declared 2 GB body is 413 before any of it is read. */
    expect_raw(&e,
               "POST /skyrl/v1/generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 2147483648\r\n\r\n{",
               "HTTP/1.1 413", "\"check\":\"resource.limit\"");
    /* Conflicting Content-Length headers are 400. */
    expect_raw(&e,
               "POST /skyrl/v1/generate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
               "Content-Length: 3\r\n\r\n{}}",
               "HTTP/1.1 400", "\"check\":\"engine.bad_framing\"");
    /* A transfer coding other than chunked is 501, not a hang. */
    expect_raw(&e,
               "POST /skyrl/v1/generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n"
               "\r\n2\r\n{}\r\n0\r\n\r\n",
               "HTTP/1.1 501", "\"check\":\"engine.unsupported_encoding\"");
    /* Repeated equal lengths and plain chunked bodies still work. */
    expect_raw(&e,
               "POST /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n"
               "Content-Length: 2\r\n\r\n{}",
               "HTTP/1.1 405", NULL);
    expect_raw(&e,
               "POST /reset_prefix_cache HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
               "HTTP/1.1 200", NULL);
    eng_stop(&e);
}
END_TEST

/*
 * The one framing case the engine cannot answer itself (docs/reference/reliability.md): a
 * chunk-size line whose extension does not fit the connection's 32 KiB read buffer is answered by
 * libmicrohttpd 0.9.75 with its own 500 (1.0.0 and later: 413) before the application sees a byte
 * of it. Pinned here so a library change shows, and so that it stays an answer and a closed
 * connection, never a hang or a crash: the engine serves the next request, and an extension that
 * fits is ignored.
 */
START_TEST(oversized_chunk_extension_is_the_library_answer)
{
    eng e;
    eng_start(&e, "{}");
    static const char head[] = "POST /reset_prefix_cache HTTP/1.1\r\nHost: x\r\nConnection: "
                               "close\r\nTransfer-Encoding: chunked\r\n\r\n2;";
    static const char tail[] = "\r\n{}\r\n0\r\n\r\n";
    const size_t sizes[] = {100000, 16000};
    for (int k = 0; k < 2; k++) {
        size_t n = sizeof(head) - 1 + sizes[k] + sizeof(tail);
        char *req = malloc(n), buf[4096];
        ck_assert_ptr_nonnull(req);
        memcpy(req, head, sizeof(head) - 1);
        memset(req + sizeof(head) - 1, 'a', sizes[k]);
        memcpy(req + sizeof(head) - 1 + sizes[k], tail, sizeof(tail));
        sr_test_raw_read_all(sr_test_raw_send(e.port, req), buf, sizeof(buf));
        free(req);
        if (k == 0)
            ck_assert_msg(strncmp(buf, "HTTP/1.1 500", 12) == 0 ||
                              strncmp(buf, "HTTP/1.1 413", 12) == 0,
                          "100 KB chunk extension: %.80s", buf);
        else
            ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "16 KB extension: %.80s", buf);
        eng_expect(&e, "GET", "/health", NULL, 200, NULL);
    }
    eng_stop(&e);
}
END_TEST

START_TEST(control_query_parameters_are_checked)
{
    eng e;
    eng_start(&e, "{}");
    eng_expect(&e, "POST", "/sleep?level=abc", "", 400, "query parameter 'level'");
    eng_expect(&e, "POST", "/sleep?level=", "", 400, "engine.bad_request");
    eng_expect(&e, "POST", "/sleep?level=99999999999999999999", "", 400, "level");
    ck_assert_int_eq(eng_state_int(&e, "sleep_level"), 0);
    eng_expect(&e, "POST", "/sleep?level=2&tags=weights", "", 200, NULL);
    ck_assert_int_eq(eng_state_int(&e, "sleep_level"), 2);
    eng_expect(&e, "POST", "/wake_up?tags=everything", "", 400, "query parameter 'tags'");
    eng_expect(&e, "POST", "/wake_up?tags=weights&tags=kv_cache", "", 200, NULL);
    eng_expect(&e, "POST", "/pause?mode=", "", 400, "'mode'");
    eng_expect(&e, "POST", "/pause?clear_cache=yes", "", 400, "'clear_cache'");
    eng_expect(&e, "GET", "/syncroll/v1/state?tensors=yes", NULL, 400, "'tensors'");
    eng_stop(&e);
}
END_TEST

/* ---- issue #20, SkyRL defect 2: the reference client's default concurrency ---- */

#define BURST 600 /* above SkyRL's default of 512 concurrent generates per engine */

/* BURST generates at once, each on its own connection (libcurl multi), against an engine with
 * the default server limits and 400 ms of simulated decode per request, so that far more than
 * max_connections (256) are in progress at the same time: every one must be answered 200, the
 * ones beyond the active limit queued rather than refused (the state's connection counters show
 * the queue was used). Before: those beyond 256 got 503 engine.connection_limit. */
START_TEST(default_limits_admit_the_reference_concurrency)
{
    eng e;
    eng_start(&e, "{\"seed\":5,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":8,\"topk\":2,"
                  "\"eos_id\":-1},\"timing\":{\"prefill_ms\":0,\"decode_ms_per_token\":50}}");
    char url[160];
    snprintf(url, sizeof(url), "%s/skyrl/v1/generate", e.url);
    const char *body = "{\"token_ids\":[3,4,5],\"sampling_params\":{\"max_tokens\":9}}";
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
    static hresp rs[BURST];
    CURL *hs[BURST];
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    for (int i = 0; i < BURST; i++) {
        memset(&rs[i], 0, sizeof(rs[i]));
        hs[i] = curl_easy_init();
        curl_easy_setopt(hs[i], CURLOPT_URL, url);
        curl_easy_setopt(hs[i], CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(hs[i], CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(hs[i], CURLOPT_WRITEFUNCTION, hresp_body_cb);
        curl_easy_setopt(hs[i], CURLOPT_WRITEDATA, &rs[i]);
        curl_easy_setopt(hs[i], CURLOPT_TIMEOUT_MS, 120000L);
        curl_easy_setopt(hs[i], CURLOPT_FORBID_REUSE, 1L);
        curl_easy_setopt(hs[i], CURLOPT_NOSIGNAL, 1L);
        curl_multi_add_handle(m, hs[i]);
    }
    int running = 1;
    while (running) {
        ck_assert_int_eq(curl_multi_perform(m, &running), CURLM_OK);
        if (running)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    int ok = 0, refused = 0;
    for (int i = 0; i < BURST; i++) {
        long st = 0;
        curl_easy_getinfo(hs[i], CURLINFO_RESPONSE_CODE, &st);
        ok += st == 200;
        refused += st == 503;
        curl_multi_remove_handle(m, hs[i]);
        curl_easy_cleanup(hs[i]);
        hresp_free(&rs[i]);
    }
    curl_slist_free_all(hd);
    curl_multi_cleanup(m);
    ck_assert_msg(ok == BURST, "%d of %d generates answered 200 (%d refused 503)", ok, BURST,
                  refused);
    hresp r;
    http_get(&r, &e, "/syncroll/v1/state");
    cJSON *st = cJSON_Parse(r.body.data);
    const cJSON *c = cJSON_GetObjectItem(st, "connections");
    ck_assert_msg(cJSON_IsObject(c), "no connections in %s", r.body.data);
    ck_assert_int_eq(cJSON_GetObjectItem(c, "max_active")->valueint, 256);
    ck_assert_msg(cJSON_GetObjectItem(c, "queued_peak")->valueint > 0, "the queue was not used: %s",
                  r.body.data);
    ck_assert_int_eq(cJSON_GetObjectItem(c, "queued")->valueint, 0);
    ck_assert_int_eq(cJSON_GetObjectItem(c, "refused")->valueint, 0);
    cJSON_Delete(st);
    hresp_free(&r);
    eng_stop(&e);
}
END_TEST

/* The queue itself: with both slots of max_connections 2 held by requests whose bodies never
 * end and room for one queued request, of two GET /health on new connections one waits in the
 * queue and the other is refused 503 engine.connection_limit naming both limits; once a held
 * connection closes, the queued one (a request without a body) is answered 200. */
START_TEST(requests_over_the_active_limit_queue_then_refuse)
{
    eng e;
    eng_start(&e, "{\"server\":{\"max_connections\":2,\"max_queued_requests\":1}}");
    const char *busy = "POST /skyrl/v1/generate HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";
    const char *health = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    int held[2] = {sr_test_raw_send(e.port, busy), sr_test_raw_send(e.port, busy)};
    /* The held requests reach the engine asynchronously: probe with one request at a time until
     * one is not answered at once (both slots are held, so it waits in the queue). A probe that
     * finds a free slot is answered 200 and closed; it never stays queued, so the one queue place
     * is free for the probe that counts. */
    char buf[2][4096];
    int fd[2] = {-1, -1}, queued = 0, refused = 1;
    for (int tries = 0; tries < 200 && fd[queued] < 0; tries++) {
        int p = sr_test_raw_send(e.port, health);
        struct timeval tv = {1, 0};
        setsockopt(p, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ssize_t n = read(p, buf[queued], sizeof(buf[queued]) - 1);
        buf[queued][n > 0 ? n : 0] = '\0';
        if (n > 0) {
            ck_assert_msg(strncmp(buf[queued], "HTTP/1.1 200", 12) == 0, "probe: %s", buf[queued]);
            close(p);
            usleep(10000);
            continue;
        }
        fd[queued] = p;
    }
    ck_assert_int_ge(fd[queued], 0);
    /* Both slots held and the queue full: the next request is refused at once. */
    fd[refused] = sr_test_raw_send(e.port, health);
    struct timeval tv5 = {5, 0};
    setsockopt(fd[refused], SOL_SOCKET, SO_RCVTIMEO, &tv5, sizeof(tv5));
    sr_test_raw_read_all(fd[refused], buf[refused], sizeof(buf[refused]));
    ck_assert_msg(strncmp(buf[refused], "HTTP/1.1 503", 12) == 0 &&
                      strstr(buf[refused], "\"check\":\"engine.connection_limit\"") &&
                      strstr(buf[refused], "engines.server.max_queued_requests"),
                  "refusal: %s", buf[refused]);
    close(fd[refused]);
    close(held[0]);
    struct timeval tv = {30, 0};
    setsockopt(fd[queued], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sr_test_raw_read_all(fd[queued], buf[queued], sizeof(buf[queued]));
    ck_assert_msg(strncmp(buf[queued], "HTTP/1.1 200", 12) == 0, "queued: %s", buf[queued]);
    close(held[1]);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"queued\":0,\"max_queued\":1,");
    eng_stop(&e);
}
END_TEST

/* ---- item 11: --ready-fd ---- */

START_TEST(bad_ready_fd_is_named_and_exit_2)
{
    char self[4096], out[] = "/tmp/sr-http-readyfd-XXXXXX";
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_proc_self_exe(self, sizeof(self), &err), err);
    int fd = mkstemp(out);
    ck_assert_int_ge(fd, 0);
    close(fd);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, out, O_WRONLY | O_TRUNC, 0600);
    char *argv[] = {"t", "engine", "--ready-fd", "999", NULL};
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, self, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "wait status %d", st);
    char buf[2048] = "";
    FILE *f = fopen(out, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(out);
    ck_assert_msg(strstr(buf, "--ready-fd 999: bad descriptor"), "stderr: %s", buf);
}
END_TEST

static Suite *http_suite(void)
{
    Suite *s = suite_create("engine_http");
    TCase *tc = tcase_create("http");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sync_dir_outside_sync_dirs_is_forbidden);
    tcase_add_test(tc, engine_without_sync_dirs_writes_nowhere);
    tcase_add_test(tc, run_engine_config_names_only_the_given_sync_dirs);
    tcase_add_test(tc, slowloris_does_not_block_a_valid_client);
    tcase_add_test(tc, slow_head_and_body_are_408);
    tcase_add_test(tc, framing_a_careful_server_refuses);
    tcase_add_test(tc, oversized_chunk_extension_is_the_library_answer);
    tcase_add_test(tc, control_query_parameters_are_checked);
    tcase_add_test(tc, bad_ready_fd_is_named_and_exit_2);
    tcase_add_test(tc, default_limits_admit_the_reference_concurrency);
    tcase_add_test(tc, requests_over_the_active_limit_queue_then_refuse);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(http_suite)
