/*
 * Every resource limit of README "Limits" exists, is configurable, and a violation is its named
 * error: response body bytes (splice and client), decoded array bytes and shape products
 * (envelope, field registry), tokens per rollout (trace rows), scenario file size, request body
 * size at the engine (413), concurrent connections at the engine, artifact bytes (cut, not an
 * error). Library limits are table-driven; engine limits run against real engine processes.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* This suite uses only the engine-process part of the shared fixture. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "client_fixture.h"
#pragma GCC diagnostic pop
#include "report/artifacts.h"
#include "rollout.h"
#include "scenario.h"
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

/* Tokens per rollout: the route trace's max_rows (a rollout's trace_opts.max_rows). */
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
    /* The same file loads under the default bound, so only the bound refused it. */
    sr_err e2 = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_load(&s, path, &e2), e2);
    sr_scenario_free(s);
    unlink(path);
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
    {"tokens per rollout (trace rows)", trace_rows, SR_E_LIMIT},
    {"scenario file size (configured)", scenario_size, SR_E_LIMIT},
    {"scenario file size (default 4 MiB)", scenario_size_default, SR_E_LIMIT},
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

/* Tokens per rollout, end to end: a rollout whose trace would pass trace_opts.max_rows fails
 * with resource.limit (and is reported as that check by the verifier). */
START_TEST(rollout_over_its_token_bound_is_resource_limit)
{
    fx f;
    fx_start(&f, 1, "{" MODEL "}", NULL);
    int32_t prompt[5] = {9, 8, 7, 6, 5};
    cJSON *sp = sampling(6);
    sr_rollout_config c = SR_ROLLOUT_CONFIG_INIT;
    c.prompt = prompt;
    c.prompt_len = 5;
    c.session_id = "limits_0";
    c.sampling_params = sp;
    c.routes = 1;
    c.env = (sr_rollout_env){3, 2, 2, 4, 64};
    c.trace_opts.max_rows = 6;
    sr_rollout_result r;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_rollout_run(&r, f.conn, &c, &err), err, SR_E_LIMIT);
    ck_assert_int_eq(r.code, SR_E_LIMIT);
    sr_rollout_result_release(&r);
    cJSON_Delete(sp);
    fx_stop(&f);
}
END_TEST

/* One kept-alive connection to the engine, proven accepted by an answered GET /health. */
static int hold_connection(const char *url)
{
    int port = atoi(strrchr(url, ':') + 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    static const char req[] = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq((long)write(fd, req, sizeof(req) - 1), (long)sizeof(req) - 1);
    char buf[512];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    ck_assert_int_gt(n, 12);
    buf[n] = '\0';
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "health: %s", buf);
    return fd;
}

/* Concurrent connections at the engine: at server.max_connections the engine stops accepting,
 * so a new connection waits in the kernel's listen backlog until one closes; the client's
 * deadline bounds the wait (client.deadline), and the engine serves again once one closes. */
START_TEST(engine_connections_over_their_bound_are_refused)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.deadline_ms = 400;
    fx f;
    fx_start(&f, 1, "{" MODEL ",\"server\":{\"threads\":1,\"max_connections\":1}}", &o);
    int held = hold_connection(f.urls[0]);
    int32_t prompt[4] = {9, 8, 7, 6};
    cJSON *sp = sampling(2);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = prompt;
    q.n_tokens = 4;
    q.sampling_params = sp;
    q.return_routes = 1;
    sr_client_result r;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_client_generate(&r, f.conn, &q, &err), err, SR_E_CLIENT_DEADLINE);
    ck_assert_int_eq(r.http_status, 0);
    /* With the connection released, the engine serves again. */
    close(held);
    sr_client_conn_free(f.conn);
    ck_assert_sr_ok(sr_client_conn_new(&f.conn, f.client, &err), err);
    int ok = -1;
    for (int i = 0; i < 50 && ok != 0; i++)
        ok = sr_client_generate(&r, f.conn, &q, &err);
    ck_assert_sr_ok(ok, err);
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
    suite_add_tcase(s, tc);
    tc = tcase_create("engines");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, engine_request_body_over_its_bound_is_413);
    tcase_add_test(tc, client_response_over_max_body_is_body_too_large);
    tcase_add_test(tc, rollout_over_its_token_bound_is_resource_limit);
    tcase_add_test(tc, engine_connections_over_their_bound_are_refused);
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
