/*
 * Helpers for the mock-engine suites: engines run as real child processes (this test binary
 * re-executed as `<test> engine ...`, which calls sr_cmd_engine) on port 0 with a readiness
 * pipe, and are talked to over real HTTP with libcurl. Nothing here sleeps to synchronise:
 * waits poll /syncroll/v1/state with a deadline.
 */
#ifndef SR_TEST_ENGINE_UTIL_H
#define SR_TEST_ENGINE_UTIL_H

#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/commands.h"
#include "spec/engine_config.h"
#include "run/procs.h"
#include "sr_buf.h"
#include "sr_fields.h"
#include "sr_oracle.h"
#include "sr_splice.h"
#include "sr_test.h"
#include "sr_weights.h"

/* Every engine suite's main: the binary doubles as the engine executable. */
#define ENGINE_TEST_MAIN(make_suite)                                                               \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        if (argc > 1 && strcmp(argv[1], "engine") == 0)                                            \
            return sr_cmd_engine(argc - 1, argv + 1);                                              \
        curl_global_init(CURL_GLOBAL_DEFAULT);                                                     \
        int rc_ = sr_test_run(make_suite());                                                       \
        curl_global_cleanup();                                                                     \
        return rc_;                                                                                \
    }

typedef struct eng {
    sr_proc p;
    char cfg[64];
    char url[96];
    int port;
} eng;

static inline void eng_start(eng *e, const char *config_json)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->cfg, sizeof(e->cfg), "/tmp/sr-engine-test-XXXXXX.json");
    int fd = mkstemps(e->cfg, 5);
    ck_assert_int_ge(fd, 0);
    size_t n = strlen(config_json);
    ck_assert_int_eq(write(fd, config_json, n), (ssize_t)n);
    close(fd);
    char self[4096];
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_proc_self_exe(self, sizeof(self), &err), err);
    char *argv[] = {"engine-under-test", "engine", "--config",   e->cfg, "--port", "0",
                    "--ready-fd",        "3",      "--lifetime", "120",  NULL};
    ck_assert_sr_ok(sr_proc_spawn(&e->p, self, argv, &err), err);
    ck_assert_sr_ok(sr_procs_wait_ready(&e->p, 1, 20000, &err), err);
    e->port = atoi(e->p.line);
    ck_assert_int_gt(e->port, 0);
    snprintf(e->url, sizeof(e->url), "http://127.0.0.1:%d", e->port);
}

/* Stops the engine and asserts it exited cleanly (status 0 on SIGTERM). */
static inline void eng_stop(eng *e)
{
    int killed = sr_procs_stop(&e->p, 1, 10000);
    unlink(e->cfg);
    ck_assert_int_eq(killed, 0);
    ck_assert_msg(WIFEXITED(e->p.status) && WEXITSTATUS(e->p.status) == 0,
                  "engine did not exit cleanly (wait status %d)", e->p.status);
}

typedef struct hresp {
    CURLcode cc;
    long status;
    sr_buf body;
    sr_buf hdr;
    int chunks;
    char errbuf[CURL_ERROR_SIZE];
} hresp;

static inline size_t hresp_body_cb(char *p, size_t sz, size_t n, void *ud)
{
    hresp *r = ud;
    r->chunks++;
    sr_buf_append(&r->body, p, sz * n, NULL);
    return sz * n;
}

static inline size_t hresp_hdr_cb(char *p, size_t sz, size_t n, void *ud)
{
    hresp *r = ud;
    sr_buf_append(&r->hdr, p, sz * n, NULL);
    return sz * n;
}

static inline void hresp_free(hresp *r)
{
    sr_buf_release(&r->body);
    sr_buf_release(&r->hdr);
}

/*
 * One request on handle `c` (NULL: a fresh handle and connection). `path` is appended to the
 * engine URL; body NULL means GET (unless method says otherwise); session sets X-Session-ID.
 */
static inline void http_req(hresp *r, CURL *c, const eng *e, const char *method, const char *path,
                            const char *body, const char *session, long timeout_ms)
{
    memset(r, 0, sizeof(*r));
    CURL *h = c ? c : curl_easy_init();
    char url[256];
    snprintf(url, sizeof(url), "%s%s", e->url, path);
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    char sh[300];
    if (session) {
        snprintf(sh, sizeof(sh), "X-Session-ID: %s", session);
        hd = curl_slist_append(hd, sh);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, hresp_body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, hresp_hdr_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 30000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    r->cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    sr_buf_append(&r->body, "", 0, NULL);
    sr_buf_append(&r->hdr, "", 0, NULL);
    curl_slist_free_all(hd);
    if (!c)
        curl_easy_cleanup(h);
}

static inline void http_post(hresp *r, const eng *e, const char *path, const char *body)
{
    http_req(r, NULL, e, "POST", path, body ? body : "", NULL, 0);
}

static inline void http_get(hresp *r, const eng *e, const char *path)
{
    http_req(r, NULL, e, "GET", path, NULL, NULL, 0);
}

/* One request on a fresh connection (20 s bound); asserts its status and, unless `needle` is
 * NULL, that the body contains it. */
static inline void eng_expect(const eng *e, const char *method, const char *path, const char *body,
                              long status, const char *needle)
{
    hresp r;
    http_req(&r, NULL, e, method, path, body, NULL, 20000);
    ck_assert_msg(r.status == status, "%s %s: status %ld, want %ld: %s", method, path, r.status,
                  status, r.body.data);
    ck_assert_msg(!needle || strstr(r.body.data, needle), "%s %s: want %s in %s", method, path,
                  needle, r.body.data);
    hresp_free(&r);
}

/* Reads an integer member of the engine state. */
static inline long long eng_state_int(const eng *e, const char *key)
{
    hresp r;
    http_get(&r, e, "/syncroll/v1/state");
    ck_assert_int_eq(r.status, 200);
    cJSON *s = cJSON_Parse(r.body.data);
    ck_assert_ptr_nonnull(s);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, key);
    ck_assert_msg(cJSON_IsNumber(v), "state has no number '%s'", key);
    long long x = (long long)v->valuedouble;
    cJSON_Delete(s);
    hresp_free(&r);
    return x;
}

/* Polls the state until `key` equals want, failing after 20 s. */
static inline void eng_wait_state(const eng *e, const char *key, long long want)
{
    for (int i = 0; i < 20000; i++) {
        if (eng_state_int(e, key) == want)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("engine state '%s' never reached %lld", key, want);
}

/* A generate request running on its own thread. */
typedef struct bg_req {
    pthread_t t;
    const eng *e;
    const char *path, *body;
    hresp r;
} bg_req;

static inline void *bg_main(void *arg)
{
    bg_req *b = arg;
    http_req(&b->r, NULL, b->e, "POST", b->path, b->body, NULL, 60000);
    return NULL;
}

static inline void bg_start(bg_req *b, const eng *e, const char *path, const char *body)
{
    b->e = e;
    b->path = path;
    b->body = body;
    ck_assert_int_eq(pthread_create(&b->t, NULL, bg_main, b), 0);
}

static inline void bg_join(bg_req *b)
{
    pthread_join(b->t, NULL);
}

/* Splices a body with the built-in registry; returns the code, *res valid until sp is freed. */
static inline int splice_body(sr_splicer **sp, sr_fields **reg, const sr_buf *body,
                              const sr_splice_result **res, sr_err *err)
{
    ck_assert_int_eq(sr_fields_new(reg, NULL), 0);
    ck_assert_int_eq(sr_fields_add_builtins(*reg, NULL), 0);
    ck_assert_int_eq(sr_splicer_new(sp, *reg, NULL, NULL), 0);
    return sr_splice(*sp, body->data, body->len, -1, res, err);
}

static inline const sr_splice_entry *splice_find(const sr_splice_result *res, const char *field)
{
    for (size_t i = 0; i < res->count; i++)
        if (strcmp(res->entries[i].field->name, field) == 0)
            return &res->entries[i];
    return NULL;
}

/* Expected fingerprints of `cfg`'s weights at `version` (into global and layers[]). */
static inline void expected_fps(const sr_engine_config *c, int64_t version, uint64_t *global,
                                uint64_t *layers)
{
    sr_weights_spec ws = sr_engine_config_weights(c);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_expected(global, layers, &ws, version, &err), err);
}

/* The weights of content version `version` under engine config text `cfg` (parsed into *c). */
static inline sr_weights *eng_weights_of(const char *cfg, int64_t version, sr_engine_config *c)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(c, cfg, strlen(cfg), "t", 0, &err), err);
    sr_weights_spec ws = sr_engine_config_weights(c);
    sr_weights *w;
    ck_assert_sr_ok(sr_weights_new(&w, &ws, version, &err), err);
    return w;
}

/* The answer must have `status` and name `check` (the plane's body shape carries it). */
static inline void eng_expect_answer(const hresp *r, long status, const char *check,
                                     const char *what)
{
    char want[96];
    snprintf(want, sizeof(want), "\"check\":\"%s\"", check);
    ck_assert_msg(r->status == status && strstr(r->body.data, want), "%s: %ld %s, want %ld with %s",
                  what, r->status, r->body.data, status, want);
}

/* POSTs `body` to `path`: the answer has `status` and, when `check` is not NULL, names it. */
static inline void eng_call(const eng *e, const char *path, const char *body, long status,
                            const char *check)
{
    hresp r;
    http_req(&r, NULL, e, "POST", path, body, NULL, 20000);
    if (check)
        eng_expect_answer(&r, status, check, path);
    else
        ck_assert_msg(r.status == status, "%s %s: %ld %s, want %ld", path, body, r.status,
                      r.body.data, status);
    hresp_free(&r);
}

/* The engine reports version v and its global fingerprint is exactly content version `bytes`'s. */
static inline void eng_expect_holds(const eng *e, const sr_engine_config *c, long long v,
                                    int64_t bytes)
{
    ck_assert_int_eq(eng_state_int(e, "weight_version"), v);
    uint64_t g, l[2];
    expected_fps(c, bytes, &g, l);
    char want[96];
    snprintf(want, sizeof(want), "\"fingerprints\":{\"global\":\"%016llx\"", (unsigned long long)g);
    eng_expect(e, "GET", "/syncroll/v1/state", NULL, 200, want);
}

/* ---- weight sync over HTTP (the vllm control plane and the weights faults) ---- */

/* A bucket of every tensor of w for `target`: vLLM's /update_weights body (sgl: SGLang's
 * /update_weights_from_distributed body, with weight_version) as the header line, with syncroll's
 * sizes and checksums, then the raw bytes (engine.h). */
static inline void eng_bucket_range(sr_buf *b, const sr_weights *w, int64_t target, int sgl,
                                    size_t first, size_t count, int index);

static inline void eng_bucket_of_plane(sr_buf *b, const sr_weights *w, int64_t target, int sgl)
{
    eng_bucket_range(b, w, target, sgl, 0, sr_weights_count(w), 0);
}

/* The same for tensors first .. first+count-1 of w as bucket number `index`. */
static inline void eng_bucket_range(sr_buf *b, const sr_weights *w, int64_t target, int sgl,
                                    size_t first, size_t count, int index)
{
    const char *keys[5] = {"names", sgl ? "dtypes" : "dtype_names", "shapes", "sizes", "checksums"};
    ck_assert_int_eq(sr_buf_puts(b, sgl ? "{" : "{\"update_info\":{", NULL), 0);
    for (int k = 0; k < 5; k++) {
        if (k == 3 && sgl)
            sr_buf_printf(b, NULL, "\"group_name\":\"syncroll\",\"weight_version\":\"%lld\",",
                          (long long)target);
        /* vLLM's update_info carries no packed key since vllm#50902 (the init info does). */
        if (k == 3)
            sr_buf_printf(b, NULL, "%s\"syncroll\":{\"target_version\":%lld,\"bucket\":%d,",
                          sgl ? "\"packed\":true," : "", (long long)target, index);
        sr_buf_printf(b, NULL, "\"%s\":[", keys[k]);
        for (size_t i = first; i < first + count; i++) {
            sr_weights_info t;
            ck_assert_int_eq(sr_weights_tensor(&t, w, i, NULL), 0);
            const char *sep = i > first ? "," : "";
            if (k == 0)
                sr_buf_printf(b, NULL, "%s\"%s\"", sep, t.name);
            else if (k == 1)
                sr_buf_printf(b, NULL, "%s\"%s\"", sep, sr_dtype_name(t.dtype));
            else if (k == 2)
                sr_buf_printf(b, NULL, "%s[%lld,%lld]", sep, (long long)t.shape[0],
                              (long long)t.shape[1]);
            else if (k == 3)
                sr_buf_printf(b, NULL, "%s%zu", sep, t.nbytes);
            else
                sr_buf_printf(b, NULL, "%s\"%016llx%016llx\"", sep, (unsigned long long)t.digest_hi,
                              (unsigned long long)t.digest_lo);
        }
        sr_buf_puts(b, k < 4 ? "]," : sgl ? "]}}\n" : "]}}}\n", NULL);
    }
    for (size_t i = first; i < first + count; i++) {
        sr_weights_info t;
        sr_weights_tensor(&t, w, i, NULL);
        ck_assert_int_eq(sr_buf_append(b, t.data, t.nbytes, NULL), 0);
    }
}

static inline void eng_bucket_of(sr_buf *b, const sr_weights *w, int64_t target)
{
    eng_bucket_of_plane(b, w, target, 0);
}

/* POSTs bucket b to `path` with the bucket Content-Type. */
static inline void eng_post_bucket_to(hresp *r, const eng *e, const sr_buf *b, const char *path)
{
    memset(r, 0, sizeof(*r));
    CURL *h = curl_easy_init();
    char url[200];
    snprintf(url, sizeof(url), "%s%s", e->url, path);
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/x-syncroll-bucket");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, b->data);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, hresp_body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    r->cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    sr_buf_append(&r->body, "", 0, NULL);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
}

/* A bucket in flight: the first `sent` bytes of `b` POSTed over a raw connection whose
 * Content-Length announces all of b, so the engine holds the bucket arriving until
 * eng_partial_finish sends the rest (or eng_partial_drop closes the connection). */
typedef struct eng_partial {
    int fd;
    const sr_buf *b;
    size_t sent;
} eng_partial;

static inline void eng_partial_start(eng_partial *p, const eng *e, const sr_buf *b,
                                     const char *path, size_t upto)
{
    char head[400];
    snprintf(head, sizeof(head),
             "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
             "application/x-syncroll-bucket\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
             path, b->len);
    p->fd = sr_test_raw_send(e->port, head);
    p->b = b;
    p->sent = upto;
    ck_assert_int_eq((long)send(p->fd, b->data, upto, MSG_NOSIGNAL), (long)upto);
}

/* Sends the rest of the bucket and reads the answer (status and body) into r. */
static inline void eng_partial_finish(eng_partial *p, hresp *r)
{
    memset(r, 0, sizeof(*r));
    size_t left = p->b->len - p->sent;
    ck_assert_int_eq((long)send(p->fd, p->b->data + p->sent, left, MSG_NOSIGNAL), (long)left);
    sr_buf all = SR_BUF_INIT;
    char tmp[4096];
    ssize_t k;
    while ((k = recv(p->fd, tmp, sizeof(tmp), 0)) > 0)
        ck_assert_int_eq(sr_buf_append(&all, tmp, (size_t)k, NULL), 0);
    sr_buf_append(&all, "", 0, NULL);
    close(p->fd);
    ck_assert_msg(all.len && sscanf(all.data, "HTTP/1.1 %ld", &r->status) == 1,
                  "no HTTP answer to the bucket: %.200s", all.len ? all.data : "");
    const char *body = strstr(all.data, "\r\n\r\n");
    sr_buf_puts(&r->body, body ? body + 4 : "", NULL);
    sr_buf_append(&r->body, "", 0, NULL);
    sr_buf_release(&all);
}

static inline void eng_partial_drop(eng_partial *p)
{
    close(p->fd);
}

/* An integer member of the state's "sync" object. */
static inline long long eng_sync_int(const eng *e, const char *key)
{
    hresp r;
    http_get(&r, e, "/syncroll/v1/state");
    ck_assert_int_eq(r.status, 200);
    cJSON *s = cJSON_Parse(r.body.data);
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "sync"), key);
    ck_assert_msg(cJSON_IsNumber(v), "state.sync has no number '%s'", key);
    long long x = (long long)v->valuedouble;
    cJSON_Delete(s);
    hresp_free(&r);
    return x;
}

/* Polls until state.sync.`key` equals want, failing after 20 s (a bound, not a timing). */
static inline void eng_wait_sync(const eng *e, const char *key, long long want)
{
    for (int i = 0; i < 20000; i++) {
        if (eng_sync_int(e, key) == want)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("engine state sync.%s never reached %lld", key, want);
}

static inline void eng_post_bucket(hresp *r, const eng *e, const sr_buf *b)
{
    eng_post_bucket_to(r, e, b, "/update_weights");
}

/* {"action":"compare","baseline":{name: digest}} of w's tensors. */
static inline void eng_baseline_of(sr_buf *b, const sr_weights *w)
{
    sr_buf_puts(b, "{\"action\":\"compare\",\"baseline\":{", NULL);
    for (size_t i = 0; i < sr_weights_count(w); i++) {
        sr_weights_info t;
        sr_weights_tensor(&t, w, i, NULL);
        sr_buf_printf(b, NULL, "%s\"%s\":\"%016llx%016llx\"", i ? "," : "", t.name,
                      (unsigned long long)t.digest_hi, (unsigned long long)t.digest_lo);
    }
    sr_buf_puts(b, "}}", NULL);
}

#endif /* SR_TEST_ENGINE_UTIL_H */
