/*
 * Every resource limit of docs/reference/reliability.md exists, is configurable, and a violation is
 * its named error: response body bytes (splice and client), decoded array bytes and shape products
 * (envelope, field registry), tokens per rollout (rollout.token_limit), scenario file size
 * (scenario.too_large), request body size at the engine (413), concurrent connections at the
 * engine (503 engine.connection_limit), artifact bytes (cut, not an error). Library limits are
 * table-driven; engine limits run against real engine processes.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* This suite uses only the engine-process part of the shared fixture. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "client_fixture.h"
#pragma GCC diagnostic pop
#include "report/artifacts.h"
#include "run/rollout.h"
#include "scenario/scenario.h"
#include "sr_envelope.h"
#include "sr_splice.h"
#include "sr_trace.h"

#define GOLDEN SYNCROLL_SOURCE_DIR "/fixtures/bodies/both_fields.body"
#define MODEL                                                                                      \
    "\"seed\":5,\"model\":{\"vocab\":64,\"layers\":4,\"experts\":64,\"topk\":8,\"eos_id\":2,"      \
    "\"eos_rate\":0}"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[*len] = '\0';
    return buf;
}

/* ---- library limits, one row each ---- */

/* A splicer over the built-in fields with `opts`; *f is freed by the caller. */
static int builtin_splicer(sr_splicer **s, sr_fields **f, const sr_splice_opts *o, sr_err *err)
{
    int rc = sr_fields_new(f, err);
    if (!rc)
        rc = sr_fields_add_builtins(*f, err);
    return rc ? rc : sr_splicer_new(s, *f, o, err);
}

/* Response body bytes, one-shot: the splicer's max_body. */
static int splice_one_shot(sr_err *err)
{
    size_t len;
    char *body = read_file(GOLDEN, &len);
    sr_splice_opts o = SR_SPLICE_OPTS_INIT;
    o.max_body = len - 1;
    sr_splicer *s = NULL;
    sr_fields *f = NULL;
    const sr_splice_result *res = NULL;
    int rc = builtin_splicer(&s, &f, &o, err);
    if (!rc)
        rc = sr_splice(s, body, len, -1, &res, err);
    sr_splicer_free(s);
    sr_fields_free(f);
    free(body);
    return rc;
}

/* Response body bytes, streaming (the client's path): the bound holds across chunks. */
static int splice_streaming(sr_err *err)
{
    size_t len;
    char *body = read_file(GOLDEN, &len);
    sr_splice_opts o = SR_SPLICE_OPTS_INIT;
    o.max_body = len / 2;
    sr_splicer *s = NULL;
    sr_fields *f = NULL;
    int rc = builtin_splicer(&s, &f, &o, err);
    if (!rc)
        rc = sr_splice_stream_begin(s, -1, err);
    for (size_t at = 0; !rc && at < len; at += 16)
        rc = sr_splice_stream_feed(s, body + at, len - at < 16 ? len - at : 16, err);
    sr_splicer_free(s);
    sr_fields_free(f);
    free(body);
    return rc;
}

static int unpack(const char *json, size_t max_bytes, sr_err *err)
{
    cJSON *env = cJSON_Parse(json);
    ck_assert_ptr_nonnull(env);
    sr_contract c = SR_CONTRACT_INIT;
    c.max_bytes = max_bytes;
    sr_ndarray a = SR_NDARRAY_INIT;
    int rc = sr_envelope_unpack(&a, env, SR_SHAPE_TEXT_INTEGERS, &c, NULL, err);
    sr_ndarray_release(&a);
    cJSON_Delete(env);
    return rc;
}

/* Decoded array bytes: the contract's max_bytes, checked before decoding. */
static int envelope_bytes(sr_err *err)
{
    return unpack("{\"data\":\"AAAAAAAAAAAAAAAAAAAAAA==\",\"shape\":[4,4],\"dtype\":\"uint8\"}", 8,
                  err);
}

/* Shape products: overflow of the element count times the item size, before anything else. */
static int envelope_shape_product(sr_err *err)
{
    return unpack(
        "{\"data\":\"\",\"shape\":[4503599627370496,4503599627370496],\"dtype\":\"int32\"}", 0,
        err);
}

/* Decoded array bytes through the field registry (a definition's max_bytes) and the splice. */
static int registry_field_bytes(sr_err *err)
{
    static const char reg[] = "{\"fields\":[{\"name\":\"routed_experts\",\"dtypes\":[\"uint8\"],"
                              "\"ndim\":3,\"canonical\":true,\"nullable\":true,"
                              "\"token_rows\":true,\"max_bytes\":4}]}";
    size_t len;
    char *body = read_file(GOLDEN, &len);
    sr_fields *f = NULL;
    sr_splicer *s = NULL;
    const sr_splice_result *res = NULL;
    int rc = sr_fields_new(&f, err);
    if (!rc)
        rc = sr_fields_load_json(f, reg, sizeof(reg) - 1, "limits.json", err);
    if (!rc)
        rc = sr_splicer_new(&s, f, NULL, err);
    if (!rc)
        rc = sr_splice(s, body, len, -1, &res, err);
    sr_splicer_free(s);
    sr_fields_free(f);
    free(body);
    return rc;
}

/* Route-trace rows in the library: the trace's own max_rows is resource.limit (a rollout reports
 * it as rollout.token_limit, below). */
static int trace_rows(sr_err *err)
{
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.max_rows = 4;
    sr_route_trace *t = NULL;
    uint8_t rows[8 * 2 * 2] = {0};
    int64_t shape[3] = {8, 2, 2};
    sr_ndarray a = SR_NDARRAY_INIT;
    a.data = rows;
    a.dtype = SR_DTYPE_UINT8;
    a.ndim = 3;
    memcpy(a.shape, shape, sizeof(shape));
    a.nbytes = sizeof(rows);
    int rc = sr_route_trace_new(&t, &o, err);
    if (!rc)
        rc = sr_route_trace_record(t, 5, 4, &a, NULL, 0, err);
    sr_route_trace_free(t);
    return rc;
}

/* Scenario file size: sr_scenario_load_max (sr_scenario_load uses SR_SCN_MAX_FILE). */
static int scenario_size(sr_err *err)
{
    char path[] = "/tmp/syncroll-limits-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    static const char doc[] = "{\"id\":\"big\",\"description\":\"a file over its bound\","
                              "\"steps\":[{\"kind\":\"rollout\"}]}";
    ck_assert_int_eq((long)write(fd, doc, sizeof(doc) - 1), (long)sizeof(doc) - 1);
    close(fd);
    sr_scenario *s = NULL;
    int rc = sr_scenario_load_max(&s, path, 32, err);
    sr_scenario_free(s);
    ck_assert_msg(strstr(err->msg, path) && strstr(err->msg, " bytes") && strstr(err->msg, "32"),
                  "message names the file, its size and the limit: %s", err->msg);
    /* The same file loads under the default bound, so only the bound refused it. */
    sr_err e2 = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_load(&s, path, &e2), e2);
    sr_scenario_free(s);
    unlink(path);
    return rc;
}

/* Scenario text in memory over the bound (sr_scenario_parse, 4 MiB): the same error. */
static int scenario_text_size(sr_err *err)
{
    size_t len = (size_t)SR_SCN_MAX_FILE + 1;
    char *text = malloc(len);
    ck_assert_ptr_nonnull(text);
    memset(text, ' ', len);
    text[0] = '{';
    text[len - 1] = '}';
    sr_scenario *s = NULL;
    int rc = sr_scenario_parse(&s, text, len, "big.json", err);
    sr_scenario_free(s);
    free(text);
    return rc;
}

/* Scenario file size: the default bound (FORMAT.md: at most 4 MiB). */
static int scenario_size_default(sr_err *err)
{
    char path[] = "/tmp/syncroll-limits-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)SR_SCN_MAX_FILE + 1), 0);
    close(fd);
    sr_scenario *s = NULL;
    int rc = sr_scenario_load(&s, path, err);
    unlink(path);
    return rc;
}

typedef struct limit_case {
    const char *limit;
    int (*run)(sr_err *err);
    int want;
} limit_case;

static const limit_case CASES[] = {
    {"response body bytes, one-shot splice", splice_one_shot, SR_E_SPLICE_TOO_LARGE},
    {"response body bytes, streaming splice", splice_streaming, SR_E_SPLICE_TOO_LARGE},
    {"decoded array bytes", envelope_bytes, SR_E_ENV_TOO_LARGE},
    {"shape product", envelope_shape_product, SR_E_ENV_OVERFLOW},
    {"field registry max_bytes", registry_field_bytes, SR_E_ENV_TOO_LARGE},
    {"route-trace rows (library trace)", trace_rows, SR_E_LIMIT},
    {"scenario file size (configured)", scenario_size, SR_E_SCENARIO_TOO_LARGE},
    {"scenario file size (default 4 MiB)", scenario_size_default, SR_E_SCENARIO_TOO_LARGE},
    {"scenario text size (default 4 MiB)", scenario_text_size, SR_E_SCENARIO_TOO_LARGE},
};

START_TEST(library_limit_is_its_named_error)
{
    const limit_case *c = &CASES[_i];
    sr_err err = SR_ERR_INIT;
    int rc = c->run(&err);
    ck_assert_msg(rc == c->want && err.code == c->want, "%s: expected %s, got %s: %s", c->limit,
                  sr_code_name(c->want), sr_code_name(rc) ? sr_code_name(rc) : "?", err.msg);
}
END_TEST

/* ---- artifact bytes: a bound that cuts instead of failing ---- */

START_TEST(artifact_bytes_are_cut_to_their_bound)
{
    char dir[] = "/tmp/syncroll-artifacts-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char data[100];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)('a' + i % 26);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_artifact_bytes(dir, "response.bin", data, sizeof(data), 50, 16, &err), err);
    char path[256];
    snprintf(path, sizeof(path), "%s/response.bin", dir);
    size_t len;
    char *got = read_file(path, &len);
    ck_assert_uint_eq(len, 16);
    ck_assert_mem_eq(got, data + 42, 16);
    free(got);
    snprintf(path, sizeof(path), "%s/index.txt", dir);
    got = read_file(path, &len);
    ck_assert_msg(strstr(got, "bytes [42, 58) of 100 (cut around byte 50)"), "index: %s", got);
    free(got);
    unlink(path);
    snprintf(path, sizeof(path), "%s/response.bin", dir);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* ---- engine and client limits, against real engine processes ---- */

static cJSON *sampling(int max_tokens)
{
    cJSON *sp = cJSON_CreateObject();
    cJSON_AddNumberToObject(sp, "max_tokens", max_tokens);
    return sp;
}

/* Request body size at the engine: a body over server.max_body_bytes is answered 413, which
 * the client reports as client.http_status (never retried) with the engine's message. */
START_TEST(engine_request_body_over_its_bound_is_413)
{
    fx f;
    fx_start(&f, 1, "{" MODEL ",\"server\":{\"max_body_bytes\":1024}}", NULL);
    int32_t prompt[600];
    for (size_t i = 0; i < 600; i++)
        prompt[i] = (int32_t)(10 + i % 50);
    cJSON *sp = sampling(2);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = prompt;
    q.n_tokens = 600;
    q.sampling_params = sp;
    q.return_routes = 1;
    sr_client_result r;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_client_generate(&r, f.conn, &q, &err), err, SR_E_CLIENT_HTTP_STATUS);
    ck_assert_int_eq(r.http_status, 413);
    ck_assert_int_eq(r.n_attempts, 1);
    ck_assert_msg(strstr(err.msg, "1024"), "message names the bound: %s", err.msg);
    /* A request under the bound still succeeds on the same engine. */
    q.n_tokens = 8;
    ck_assert_sr_ok(sr_client_generate(&r, f.conn, &q, &err), err);
    cJSON_Delete(sp);
    fx_stop(&f);
}
END_TEST

/* Response body bytes at the client: max_body (scenario client.max_body_bytes) bounds the
 * streamed body; a protocol-independent resource error, not retried. */
START_TEST(client_response_over_max_body_is_body_too_large)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.max_body = 1024;
    fx f;
    fx_start(&f, 1, "{" MODEL "}", &o);
    int32_t prompt[8] = {9, 8, 7, 6, 5, 4, 3, 10};
    cJSON *sp = sampling(64);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = prompt;
    q.n_tokens = 8;
    q.sampling_params = sp;
    q.return_routes = 1;
    sr_client_result r;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_client_generate(&r, f.conn, &q, &err), err, SR_E_SPLICE_TOO_LARGE);
    ck_assert_int_eq(r.n_attempts, 1);
    cJSON_Delete(sp);
    fx_stop(&f);
}
END_TEST

/* Tokens per rollout, end to end: a rollout whose conversation or route trace would pass its
 * token limit (trace_opts.max_rows, scenario steps.rollout.max_rollout_tokens) or whose trace
 * would pass its bytes (trace_opts.max_bytes, steps.rollout.max_trace_bytes) fails with
 * rollout.token_limit naming the limit; with routes or without. */
START_TEST(rollout_over_its_token_bound_is_token_limit)
{
    static const struct {
        int routes;
        int64_t max_rows;
        size_t max_bytes;
        const char *names;
    } cases[] = {
        {1, 6, 0, "6 tokens"},        /* the trace's rows: 5 + 6 - 1 > 6 */
        {0, 6, 0, "more than 6"},     /* the conversation without a trace: 5 + 6 > 6 */
        {1, 0, 64, "64 route-trace"}, /* the trace's bytes: 10 rows of 4 x 8 bytes > 64 */
    };
    fx f;
    fx_start(&f, 1, "{" MODEL "}", NULL);
    int32_t prompt[5] = {9, 8, 7, 6, 5};
    cJSON *sp = sampling(6);
    cJSON_AddBoolToObject(sp, "ignore_eos", 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sr_rollout_config c = SR_ROLLOUT_CONFIG_INIT;
        c.prompt = prompt;
        c.prompt_len = 5;
        c.session_id = "limits_0";
        c.sampling_params = sp;
        c.routes = cases[i].routes;
        c.env = (sr_rollout_env){3, 2, 2, 4, 64};
        c.trace_opts.max_rows = cases[i].max_rows;
        c.trace_opts.max_bytes = cases[i].max_bytes;
        sr_rollout_result r;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_code(sr_rollout_run(&r, f.conn, &c, &err), err, SR_E_ROLLOUT_TOKEN_LIMIT);
        ck_assert_int_eq(r.code, SR_E_ROLLOUT_TOKEN_LIMIT);
        ck_assert_int_eq(r.failed_turn, 1);
        ck_assert_msg(strstr(err.msg, cases[i].names), "case %zu: message names the limit: %s", i,
                      err.msg);
        sr_rollout_result_release(&r);
    }
    /* The same rollout within its limits completes. */
    sr_rollout_config c = SR_ROLLOUT_CONFIG_INIT;
    c.prompt = prompt;
    c.prompt_len = 5;
    c.session_id = "limits_1";
    c.sampling_params = sp;
    c.env = (sr_rollout_env){3, 2, 2, 4, 64};
    c.trace_opts.max_rows = 64;
    sr_rollout_result r;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c, &err), err);
    sr_rollout_result_release(&r);
    cJSON_Delete(sp);
    fx_stop(&f);
}
END_TEST

/* The scenario key: steps.rollout.max_rollout_tokens and max_trace_bytes load, default to the
 * trace's defaults, are range-checked, and round-trip through the expanded form. */
START_TEST(scenario_sets_the_rollout_token_limit)
{
    static const char doc[] =
        "{\"id\":\"tok\",\"description\":\"a rollout token limit\",\"steps\":["
        "{\"kind\":\"rollout\",\"max_rollout_tokens\":12,\"max_trace_bytes\":4096},"
        "{\"kind\":\"rollout\"}]}";
    sr_scenario *s = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&s, doc, sizeof(doc) - 1, "tok.json", &err), err);
    ck_assert_int_eq(s->steps[0].rollout.max_rollout_tokens, 12);
    ck_assert_int_eq(s->steps[0].rollout.max_trace_bytes, 4096);
    ck_assert_int_eq(s->steps[1].rollout.max_rollout_tokens, SR_TRACE_DEFAULT_MAX_ROWS);
    ck_assert_int_eq(s->steps[1].rollout.max_trace_bytes, (int64_t)SR_TRACE_DEFAULT_MAX_BYTES);
    sr_buf expanded = SR_BUF_INIT;
    ck_assert_sr_ok(sr_scenario_expanded_json(&expanded, s, &err), err);
    sr_scenario *t = NULL;
    ck_assert_sr_ok(sr_scenario_parse(&t, expanded.data, expanded.len, "x.json", &err), err);
    ck_assert_int_eq(t->steps[0].rollout.max_rollout_tokens, 12);
    ck_assert_int_eq(t->steps[0].rollout.max_trace_bytes, 4096);
    sr_buf_release(&expanded);
    sr_scenario_free(t);
    sr_scenario_free(s);
    static const char bad[] = "{\"id\":\"tok\",\"description\":\"d\",\"steps\":["
                              "{\"kind\":\"rollout\",\"max_rollout_tokens\":0}]}";
    ck_assert_sr_code(sr_scenario_parse(&s, bad, sizeof(bad) - 1, "bad.json", &err), err,
                      SR_E_JSON_SCHEMA);
}
END_TEST

/* A raw loopback connection to the engine at `url` that has sent `req`; the socket. */
static int send_raw(const char *url, const char *req)
{
    return sr_test_raw_send(atoi(strrchr(url, ':') + 1), req);
}

/* A connection busy with a request: a generate whose body never finishes arriving. */
static int hold_busy(const char *url)
{
    return send_raw(url, "POST /skyrl/v1/generate HTTP/1.1\r\nHost: x\r\n"
                         "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
}

/* GET /health on a new connection: the whole answer (the engine closes the connection after a
 * 503; after a 200 the answer is read up to its end and the connection closed here). */
static void get_health(const char *url, char *buf, size_t cap)
{
    sr_test_raw_read_all(
        send_raw(url, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), buf, cap);
}

/* A request over the engine's limit: GET /health is answered 503 with "Connection: close" and
 * the check engine.connection_limit in its JSON body, and then the engine closes it. The held
 * connections reach the engine asynchronously, so the first tries may still be answered. */
static void assert_refused_on_the_wire(const char *url)
{
    char buf[2048];
    for (int i = 0; i < 2000; i++) { /* a bound of 20 s on a hang, not a timing */
        get_health(url, buf, sizeof buf);
        if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
            break;
        usleep(10000);
    }
    ck_assert_msg(strncmp(buf, "HTTP/1.1 503", 12) == 0, "answer: %s", buf);
    ck_assert_msg(strcasestr(buf, "\r\nConnection: close\r\n"), "no Connection: close: %s", buf);
    ck_assert_msg(strstr(buf, "\"check\":\"engine.connection_limit\""), "no check: %s", buf);
    ck_assert_msg(strstr(buf, "engines.server.max_connections"), "no limit named: %s", buf);
}

/* Idle kept-alive connections hold no slot: with max_connections (2) idle connections open,
 * requests on two more are answered. */
static void assert_idle_connections_are_free(const char *url)
{
    int idle[2];
    char buf[512];
    for (int k = 0; k < 2; k++) {
        idle[k] = send_raw(url, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        ssize_t n = read(idle[k], buf, sizeof(buf) - 1);
        ck_assert_int_gt(n, 12);
        buf[n] = '\0';
        ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "health: %s", buf);
    }
    for (int k = 0; k < 2; k++) {
        get_health(url, buf, sizeof buf);
        ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "with idle connections: %s", buf);
    }
    close(idle[0]);
    close(idle[1]);
}

/* Concurrent connections at the engine: idle kept-alive ones hold no slot; with
 * server.max_connections (2) connections busy with a request, a request on a further connection
 * is answered 503 engine.connection_limit and that connection closed; the client retries it as
 * the 503 it is, records every attempt as engine.connection_limit and names it as the last
 * outcome of client.retry_exhausted. Once a busy connection closes, the engine serves again. */
START_TEST(engine_connections_over_their_bound_are_named)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.max_attempts = 3;
    o.backoff_initial_ms = 1;
    o.backoff_max_ms = 2;
    fx f;
    fx_start(&f, 1,
             "{" MODEL
             ",\"server\":{\"threads\":1,\"max_connections\":2,\"max_queued_requests\":0}}",
             &o);
    assert_idle_connections_are_free(f.urls[0]);
    int held[2] = {hold_busy(f.urls[0]), hold_busy(f.urls[0])};
    assert_refused_on_the_wire(f.urls[0]);
    int32_t prompt[4] = {9, 8, 7, 6};
    cJSON *sp = sampling(2);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = prompt;
    q.n_tokens = 4;
    q.sampling_params = sp;
    q.return_routes = 1;
    sr_client_result r;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_client_generate(&r, f.conn, &q, &err), err, SR_E_CLIENT_RETRY_EXHAUSTED);
    ck_assert_int_eq(r.http_status, 503);
    ck_assert_int_eq(r.n_attempts, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(r.attempts[i].code, SR_E_ENGINE_CONN_LIMIT);
    ck_assert_msg(strstr(err.msg, "last engine.connection_limit") &&
                      strstr(err.msg, "[engine.connection_limit]"),
                  "message: %s", err.msg);
    /* With a held connection released, the engine serves again. The engine notices the close
     * asynchronously, so the first tries may still find it full. */
    close(held[0]);
    int ok = -1;
    for (int i = 0; i < 2000 && ok != 0; i++) { /* a bound of 20 s on a hang, not a timing */
        ok = sr_client_generate(&r, f.conn, &q, &err);
        if (ok) {
            ck_assert_sr_code(ok, err, SR_E_CLIENT_RETRY_EXHAUSTED);
            usleep(10000);
        }
    }
    ck_assert_sr_ok(ok, err);
    close(held[1]);
    cJSON_Delete(sp);
    fx_stop(&f);
}
END_TEST

static Suite *limits_suite(void)
{
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("library");
    tcase_add_loop_test(tc, library_limit_is_its_named_error, 0,
                        (int)(sizeof(CASES) / sizeof(CASES[0])));
    tcase_add_test(tc, artifact_bytes_are_cut_to_their_bound);
    tcase_add_test(tc, scenario_sets_the_rollout_token_limit);
    suite_add_tcase(s, tc);
    tc = tcase_create("engines");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, engine_request_body_over_its_bound_is_413);
    tcase_add_test(tc, client_response_over_max_body_is_body_too_large);
    tcase_add_test(tc, rollout_over_its_token_bound_is_token_limit);
    tcase_add_test(tc, engine_connections_over_their_bound_are_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(limits_suite());
    curl_global_cleanup();
    return rc;
}
