/*
 * unit.engine_req_bounds: the limits of the mock engine's control-plane request parsers at,
 * before and past (docs/internals/testing.md, boundary checklist). vLLM's bodies (sync_req.h): a
 * weight version 0..SR_SYNC_REQ_MAX_VERSION as an integer or 1..10 digits, an opaque label of
 * 1..SR_SYNC_REQ_LABEL_MAX-1 bytes, a weight_checker baseline of at most SR_SYNC_REQ_MAX_BASELINE
 * names of 1..SR_SYNC_REQ_NAME_MAX-1 bytes with SR_SYNC_REQ_DIGEST_HEX hex digits each, and
 * /abort_requests with at most SR_SYNC_REQ_MAX_ABORT_IDS ids of 1..SR_SYNC_REQ_ID_MAX-1 bytes.
 * SGLang's bodies (sgl_req.h): master_port 0..65535, world_size 1..SR_SGL_MAX_WORLD, rank_offset
 * below world_size, the string keys' byte limits, a shape of at most SR_SGL_MAX_DIMS dims each in
 * [0, SR_SGL_MAX_DIM], at most SR_SGL_MAX_TENSORS names, at most SR_SGL_MAX_WORLD serialized
 * entries, and a weight_version string of 1..10 digits naming at most SR_SGL_MAX_VERSION. Every
 * refusal is engine.bad_request (SR_E_ENGINE_REQUEST) naming the key; every value inside is taken
 * and read back. The parsers are pure functions of the body (their HTTP routes are tested in
 * unit.engine_vllm, unit.engine_sglang and unit.engine_control).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sgl_req.h"
#include "engine/sync_req.h"
#include "sr_buf.h"
#include "sr_test.h"

/* `n` copies of character c, NUL-terminated, in a static buffer (n < 8192). */
static const char *run_of(char c, size_t n)
{
    static char s[8192];
    ck_assert_uint_lt(n, sizeof s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* The refusal of one body: engine.bad_request whose message holds `names`. */
#define REFUSED(call, e, names)                                                                    \
    do {                                                                                           \
        ck_assert_sr_code((call), (e), SR_E_ENGINE_REQUEST);                                       \
        ck_assert_msg(strstr((e).msg, (names)) != NULL, "message lacks \"%s\": %s", (names),       \
                      (e).msg);                                                                    \
        sr_err_clear(&(e));                                                                        \
    } while (0)

/* A version as an integer and as a string of digits, at 0, the ceiling and one past each end;
 * 10 digits (leading zeros) taken, 11 refused; the same through the label form. */
START_TEST(vllm_version_at_its_limits)
{
    sr_err e = SR_ERR_INIT;
    char body[256], label[SR_SYNC_REQ_LABEL_MAX];
    int64_t v = -2;
    static const struct {
        const char *value;
        int64_t want; /* -2: refused */
    } cs[] = {{"0", 0},
              {"-1", -2},
              {"100000", SR_SYNC_REQ_MAX_VERSION},
              {"100001", -2},
              {"99999.5", -2},
              {"\"0\"", 0},
              {"\"100000\"", SR_SYNC_REQ_MAX_VERSION},
              {"\"100001\"", -2},
              {"\"0000000007\"", 7},
              {"\"00000000007\"", -2},
              {"\"\"", -2}};
    ck_assert_int_eq(SR_SYNC_REQ_MAX_VERSION, 100000);
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        snprintf(body, sizeof body, "{\"new_version\":%s}", cs[i].value);
        int rc = sr_sync_req_version(&v, body, strlen(body), &e);
        if (cs[i].want == -2) {
            ck_assert_msg(rc == SR_E_ENGINE_REQUEST, "%s: taken as %lld", body, (long long)v);
            ck_assert_ptr_nonnull(strstr(e.msg, "new_version"));
            sr_err_clear(&e);
        } else {
            ck_assert_msg(rc == 0, "%s: %s", body, e.msg);
            ck_assert_int_eq(v, cs[i].want);
        }
        /* The label form: every string but the empty one is a label, digits past the ceiling
         * are refused; the numbers behave as above. */
        snprintf(body, sizeof body, "{\"weight_version\":%s}", cs[i].value);
        rc = sr_sync_req_finish_label(&v, label, body, strlen(body), &e);
        int digits_past =
            strcmp(cs[i].value, "\"100001\"") == 0 || strcmp(cs[i].value, "\"00000000007\"") == 0;
        int number_bad = cs[i].value[0] != '"' && cs[i].want == -2;
        if (digits_past || number_bad || strcmp(cs[i].value, "\"\"") == 0) {
            ck_assert_msg(rc == SR_E_ENGINE_REQUEST, "label %s: taken as %s", body, label);
            sr_err_clear(&e);
        } else {
            ck_assert_msg(rc == 0, "label %s: %s", body, e.msg);
            ck_assert_int_eq(v, cs[i].want);
        }
    }
}
END_TEST

/* An opaque label of 1 and SR_SYNC_REQ_LABEL_MAX-1 bytes is taken whole; one byte more and an
 * empty one are refused. */
START_TEST(vllm_label_length_at_its_limit)
{
    sr_err e = SR_ERR_INIT;
    char label[SR_SYNC_REQ_LABEL_MAX];
    int64_t v = 0;
    for (size_t n = 0; n <= SR_SYNC_REQ_LABEL_MAX; n++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b, "{\"new_version\":\"%s\"}", run_of('s', n));
        int rc = sr_sync_req_version_label(&v, label, b.data, b.len, &e);
        if (n >= 1 && n <= SR_SYNC_REQ_LABEL_MAX - 1) {
            ck_assert_msg(rc == 0, "label of %zu bytes: %s", n, e.msg);
            ck_assert_uint_eq(strlen(label), n);
            ck_assert_int_eq(v, -1);
        } else {
            REFUSED(rc, e, "new_version");
        }
        sr_buf_release(&b);
    }
}
END_TEST

/* A compare baseline: names of 1 and SR_SYNC_REQ_NAME_MAX-1 bytes taken, 0 and NAME_MAX refused;
 * digests of exactly SR_SYNC_REQ_DIGEST_HEX hex digits taken (upper case folded), one fewer or
 * one more refused, a non-hex digit at the first and the last position refused. */
START_TEST(checker_baseline_entry_at_its_limits)
{
    sr_err e = SR_ERR_INIT;
    sr_checker_req r = SR_CHECKER_REQ_INIT;
    char hex[SR_SYNC_REQ_DIGEST_HEX + 2];
    memset(hex, 'A', sizeof hex);
    for (size_t n = 0; n <= SR_SYNC_REQ_NAME_MAX; n++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b, "{\"action\":\"compare\",\"baseline\":{\"%s\":\"%.*s\"}}", run_of('t', n),
                    SR_SYNC_REQ_DIGEST_HEX, hex);
        int rc = sr_sync_req_checker(&r, b.data, b.len, &e);
        if (n >= 1 && n <= SR_SYNC_REQ_NAME_MAX - 1) {
            ck_assert_msg(rc == 0, "name of %zu bytes: %s", n, e.msg);
            ck_assert_uint_eq(r.n_baseline, 1);
            ck_assert_uint_eq(strlen(r.baseline[0].name), n);
            ck_assert_str_eq(r.baseline[0].digest, run_of('a', SR_SYNC_REQ_DIGEST_HEX));
        } else {
            REFUSED(rc, e, "baseline entry 0");
        }
        sr_checker_req_release(&r);
        sr_buf_release(&b);
    }
    for (int d = -1; d <= 1; d++) {
        char body[256];
        snprintf(body, sizeof body, "{\"action\":\"compare\",\"baseline\":{\"w\":\"%.*s\"}}",
                 SR_SYNC_REQ_DIGEST_HEX + d, hex);
        int rc = sr_sync_req_checker(&r, body, strlen(body), &e);
        if (d == 0)
            ck_assert_msg(rc == 0, "%d digits: %s", SR_SYNC_REQ_DIGEST_HEX, e.msg);
        else
            REFUSED(rc, e, "hex checksum");
        sr_checker_req_release(&r);
    }
    for (int at = 0; at < SR_SYNC_REQ_DIGEST_HEX; at += SR_SYNC_REQ_DIGEST_HEX - 1) {
        char bad[SR_SYNC_REQ_DIGEST_HEX + 1], body[256];
        memset(bad, 'f', SR_SYNC_REQ_DIGEST_HEX);
        bad[SR_SYNC_REQ_DIGEST_HEX] = '\0';
        bad[at] = 'g';
        snprintf(body, sizeof body, "{\"action\":\"compare\",\"baseline\":{\"w\":\"%s\"}}", bad);
        REFUSED(sr_sync_req_checker(&r, body, strlen(body), &e), e, "hex checksum");
        sr_checker_req_release(&r);
    }
}
END_TEST

/* A baseline of n distinct names, each with a digest. */
static void baseline_body(sr_buf *b, size_t n)
{
    sr_test_put(b, "{\"action\":\"compare\",\"baseline\":{");
    for (size_t i = 0; i < n; i++)
        sr_test_put(b, "%s\"t%zu\":\"%s\"", i ? "," : "", i, run_of('0', SR_SYNC_REQ_DIGEST_HEX));
    sr_test_put(b, "}}");
}

/* SR_SYNC_REQ_MAX_BASELINE names are taken (the last one kept), one more is refused. */
START_TEST(checker_baseline_count_at_its_limit)
{
    sr_err e = SR_ERR_INIT;
    sr_checker_req r = SR_CHECKER_REQ_INIT;
    for (size_t n = SR_SYNC_REQ_MAX_BASELINE - 1; n <= SR_SYNC_REQ_MAX_BASELINE + 1; n++) {
        sr_buf b = SR_BUF_INIT;
        baseline_body(&b, n);
        int rc = sr_sync_req_checker(&r, b.data, b.len, &e);
        if (n <= SR_SYNC_REQ_MAX_BASELINE) {
            char last[32];
            snprintf(last, sizeof last, "t%zu", n - 1);
            ck_assert_msg(rc == 0, "%zu names: %s", n, e.msg);
            ck_assert_uint_eq(r.n_baseline, n);
            ck_assert_str_eq(r.baseline[n - 1].name, last);
        } else {
            REFUSED(rc, e, "at most 65536");
        }
        sr_checker_req_release(&r);
        sr_buf_release(&b);
    }
}
END_TEST

/* /abort_requests: SR_SYNC_REQ_MAX_ABORT_IDS ids taken, one more refused; an id of 1 and
 * SR_SYNC_REQ_ID_MAX-1 bytes taken, 0 and SR_SYNC_REQ_ID_MAX refused (also as the last id). */
START_TEST(abort_ids_at_their_limits)
{
    sr_err e = SR_ERR_INIT;
    sr_abort_req r = SR_ABORT_REQ_INIT;
    for (size_t n = SR_SYNC_REQ_MAX_ABORT_IDS - 1; n <= SR_SYNC_REQ_MAX_ABORT_IDS + 1; n++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b, "{\"request_ids\":[");
        for (size_t i = 0; i < n; i++)
            sr_test_put(&b, "%s\"r-%zu\"", i ? "," : "", i);
        sr_test_put(&b, "]}");
        int rc = sr_sync_req_abort(&r, b.data, b.len, &e);
        if (n <= SR_SYNC_REQ_MAX_ABORT_IDS) {
            char last[32];
            snprintf(last, sizeof last, "r-%zu", n - 1);
            ck_assert_msg(rc == 0, "%zu ids: %s", n, e.msg);
            ck_assert_uint_eq(r.n, n);
            ck_assert_str_eq(r.ids[n - 1], last);
        } else {
            REFUSED(rc, e, "at most 1024 request ids");
        }
        sr_abort_req_release(&r);
        sr_buf_release(&b);
    }
    for (size_t n = 0; n <= SR_SYNC_REQ_ID_MAX; n++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b, "{\"request_ids\":[\"first\",\"%s\"]}", run_of('q', n));
        int rc = sr_sync_req_abort(&r, b.data, b.len, &e);
        if (n >= 1 && n <= SR_SYNC_REQ_ID_MAX - 1) {
            ck_assert_msg(rc == 0, "an id of %zu bytes: %s", n, e.msg);
            ck_assert_uint_eq(strlen(r.ids[1]), n);
        } else {
            REFUSED(rc, e, "request_ids[1]");
        }
        sr_abort_req_release(&r);
        sr_buf_release(&b);
    }
}
END_TEST

/* An init body with one key replaced: `key` set to the JSON text `value`. */
static void init_body(sr_buf *b, const char *key, const char *value)
{
    static const char *const keys[] = {"master_address", "master_port", "rank_offset",
                                       "world_size",     "group_name",  "backend"};
    static const char *const dflt[] = {"\"127.0.0.1\"", "29500", "0", "2", "\"g\"", "\"nccl\""};
    sr_test_put(b, "{");
    for (size_t i = 0; i < 6; i++)
        sr_test_put(b, "%s\"%s\":%s", i ? "," : "", keys[i],
                    strcmp(keys[i], key) ? dflt[i] : value);
    sr_test_put(b, "}");
}

static int init_rc(sr_sgl_init *out, const char *key, const char *value, sr_err *e)
{
    sr_buf b = SR_BUF_INIT;
    init_body(&b, key, value);
    int rc = sr_sgl_req_init(out, b.data, b.len, e);
    sr_buf_release(&b);
    return rc;
}

/* SGLang's init: each integer at both ends of its range and one past each; rank_offset against
 * world_size; each string key at 1 and cap-1 bytes, and 0 and cap bytes refused. */
START_TEST(sgl_init_at_its_limits)
{
    sr_err e = SR_ERR_INIT;
    sr_sgl_init in;
    static const struct {
        const char *key, *value;
        int ok;
        int64_t got; /* the field read back (port, world_size or rank_offset) */
    } cs[] = {{"master_port", "0", 1, 0},  {"master_port", "65535", 1, 65535},
              {"master_port", "-1", 0, 0}, {"master_port", "65536", 0, 0},
              {"world_size", "1", 1, 1},   {"world_size", "1048576", 1, SR_SGL_MAX_WORLD},
              {"world_size", "0", 0, 0},   {"world_size", "1048577", 0, 0},
              {"rank_offset", "1", 1, 1},  {"rank_offset", "2", 0, 0},
              {"rank_offset", "-1", 0, 0}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        int rc = init_rc(&in, cs[i].key, cs[i].value, &e);
        if (!cs[i].ok) {
            REFUSED(rc, e, cs[i].key);
            continue;
        }
        ck_assert_msg(rc == 0, "%s %s: %s", cs[i].key, cs[i].value, e.msg);
        int64_t got = strcmp(cs[i].key, "master_port") == 0  ? in.master_port
                      : strcmp(cs[i].key, "world_size") == 0 ? in.world_size
                                                             : in.rank_offset;
        ck_assert_int_eq(got, cs[i].got);
    }
    static const struct {
        const char *key;
        size_t cap;
    } ss[] = {{"master_address", SR_SGL_ADDR_MAX},
              {"group_name", SR_SGL_NAME_MAX},
              {"backend", SR_SGL_NAME_MAX}};
    for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++)
        for (size_t n = 0; n <= ss[i].cap; n += (n == 1 ? ss[i].cap - 2 : 1)) {
            char v[8200];
            snprintf(v, sizeof v, "\"%s\"", run_of('h', n));
            int rc = init_rc(&in, ss[i].key, v, &e);
            if (n >= 1 && n <= ss[i].cap - 1)
                ck_assert_msg(rc == 0, "%s of %zu bytes: %s", ss[i].key, n, e.msg);
            else
                REFUSED(rc, e, ss[i].key);
        }
    ck_assert_sr_ok(init_rc(&in, "backend", "null", &e), e);
    ck_assert_str_eq(in.backend, "nccl");
}
END_TEST

/* A distributed update of one tensor with the shape given as JSON text. */
static int dist_shape_rc(const char *shape, sr_err *e)
{
    sr_sgl_dist d;
    char body[512];
    snprintf(body, sizeof body, "{\"names\":[\"w\"],\"dtypes\":[\"bfloat16\"],\"shapes\":[%s]}",
             shape);
    return sr_sgl_req_dist(&d, body, strlen(body), e);
}

/* A shape of 0 and SR_SGL_MAX_DIMS dims taken, one more refused; a dim of 0 and SR_SGL_MAX_DIM
 * taken, -1 and SR_SGL_MAX_DIM + 1 refused, at the first and at the last dim. */
START_TEST(sgl_shape_at_its_limits)
{
    sr_err e = SR_ERR_INIT;
    char shape[256];
    for (int nd = 0; nd <= SR_SGL_MAX_DIMS + 1; nd++) {
        size_t k = (size_t)snprintf(shape, sizeof shape, "[");
        for (int i = 0; i < nd; i++)
            k += (size_t)snprintf(shape + k, sizeof shape - k, "%s1", i ? "," : "");
        snprintf(shape + k, sizeof shape - k, "]");
        int rc = dist_shape_rc(shape, &e);
        if (nd <= SR_SGL_MAX_DIMS)
            ck_assert_msg(rc == 0, "%d dims: %s", nd, e.msg);
        else
            REFUSED(rc, e, "at most 8 dims");
    }
    ck_assert_int_eq(SR_SGL_MAX_DIM, (int64_t)1 << 40);
    static const struct {
        const char *dim;
        int ok;
    } ds[] = {{"0", 1}, {"1099511627776", 1}, {"1099511627777", 0}, {"-1", 0}, {"0.5", 0}};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
        for (int last = 0; last <= 1; last++) {
            snprintf(shape, sizeof shape, last ? "[1,1,1,1,1,1,1,%s]" : "[%s,1]", ds[i].dim);
            int rc = dist_shape_rc(shape, &e);
            if (ds[i].ok)
                ck_assert_msg(rc == 0, "dim %s: %s", ds[i].dim, e.msg);
            else
                REFUSED(rc, e, "each an integer in [0, 2^40]");
        }
}
END_TEST

/* n names with dtypes and shapes of n + dd and n + ds entries. */
static int dist_count_rc(sr_sgl_dist *d, size_t n, int dd, int ds, sr_err *e)
{
    sr_buf b = SR_BUF_INIT;
    sr_test_put(&b, "{\"names\":[");
    for (size_t i = 0; i < n; i++)
        sr_test_put(&b, "%s\"w%zu\"", i ? "," : "", i);
    sr_test_put(&b, "],\"dtypes\":[");
    for (size_t i = 0; i < n + (size_t)dd; i++)
        sr_test_put(&b, "%s\"f\"", i ? "," : "");
    sr_test_put(&b, "],\"shapes\":[");
    for (size_t i = 0; i < n + (size_t)ds; i++)
        sr_test_put(&b, "%s[2]", i ? "," : "");
    sr_test_put(&b, "]}");
    int rc = sr_sgl_req_dist(d, b.data, b.len, e);
    sr_buf_release(&b);
    return rc;
}

/* SR_SGL_MAX_TENSORS names taken, one more refused; dtypes or shapes one longer or one shorter
 * than the names refused. */
START_TEST(sgl_tensor_count_at_its_limit)
{
    sr_err e = SR_ERR_INIT;
    sr_sgl_dist d;
    for (size_t n = SR_SGL_MAX_TENSORS - 1; n <= SR_SGL_MAX_TENSORS + 1; n++) {
        int rc = dist_count_rc(&d, n, 0, 0, &e);
        if (n <= SR_SGL_MAX_TENSORS) {
            ck_assert_msg(rc == 0, "%zu names: %s", n, e.msg);
            ck_assert_int_eq(d.n, (int64_t)n);
        } else {
            REFUSED(rc, e, "same length (at most 65536)");
        }
    }
    static const int off[][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
    for (size_t i = 0; i < 4; i++)
        REFUSED(dist_count_rc(&d, 3, off[i][0], off[i][1], &e), e, "same length");
    ck_assert_sr_ok(dist_count_rc(&d, 3, 0, 0, &e), e);
    ck_assert_int_eq(d.n, 3);
}
END_TEST

/* update_weights_from_tensor: SR_SGL_MAX_WORLD serialized entries taken, one more refused. The
 * body is written directly (a million entries through put would dominate the suite's time). */
START_TEST(sgl_serialized_count_at_its_limit)
{
    sr_err e = SR_ERR_INIT;
    sr_sgl_tensor t;
    static const char head[] = "{\"serialized_named_tensors\":[";
    size_t cap = sizeof head + 3 * ((size_t)SR_SGL_MAX_WORLD + 1) + 4;
    char *body = malloc(cap);
    ck_assert_ptr_nonnull(body);
    for (size_t n = SR_SGL_MAX_WORLD - 1; n <= SR_SGL_MAX_WORLD + 1; n++) {
        size_t k = sizeof head - 1;
        memcpy(body, head, k);
        for (size_t i = 0; i < n; i++) {
            if (i)
                body[k++] = ',';
            body[k++] = '"';
            body[k++] = '"';
        }
        memcpy(body + k, "]}", 2);
        int rc = sr_sgl_req_tensor(&t, body, k + 2, &e);
        if (n <= SR_SGL_MAX_WORLD) {
            ck_assert_msg(rc == 0, "%zu entries: %s", n, e.msg);
            ck_assert_int_eq(t.n, (int64_t)n);
        } else {
            REFUSED(rc, e, "serialized_named_tensors");
        }
    }
    free(body);
}
END_TEST

/* SGLang's weight_version string and model_path: 10 digits and the ceiling taken, 11 digits and
 * one past the ceiling refused, on every route that reads it; model_path of SR_SGL_PATH_MAX-1
 * bytes taken, SR_SGL_PATH_MAX refused. */
START_TEST(sgl_version_and_path_at_their_limits)
{
    sr_err e = SR_ERR_INIT;
    static const struct {
        const char *v;
        int64_t want; /* -2: refused */
    } cs[] = {{"\"0\"", 0},
              {"\"100000\"", 100000},
              {"\"100001\"", -2},
              {"\"0000100000\"", 100000},
              {"\"00000100000\"", -2},
              {"\"\"", -2},
              {"100", -2}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        char body[256];
        int64_t v = -3;
        int abort_all = -1;
        snprintf(body, sizeof body, "{\"new_version\":%s}", cs[i].v);
        int rc = sr_sgl_req_version(&v, &abort_all, body, strlen(body), &e);
        sr_sgl_disk dk;
        snprintf(body, sizeof body, "{\"model_path\":\"/m\",\"weight_version\":%s}", cs[i].v);
        int rc2 = sr_sgl_req_disk(&dk, body, strlen(body), &e);
        sr_sgl_dist ds;
        snprintf(body, sizeof body,
                 "{\"names\":[],\"dtypes\":[],\"shapes\":[],\"weight_version\":%s}", cs[i].v);
        int rc3 = sr_sgl_req_dist(&ds, body, strlen(body), &e);
        if (cs[i].want == -2) {
            ck_assert_msg(rc == SR_E_ENGINE_REQUEST && rc2 == rc && rc3 == rc,
                          "%s taken (%d %d %d)", cs[i].v, rc, rc2, rc3);
            ck_assert_ptr_nonnull(strstr(e.msg, "weight_version"));
            sr_err_clear(&e);
        } else {
            ck_assert_msg(rc == 0 && rc2 == 0 && rc3 == 0, "%s: %s", cs[i].v, e.msg);
            ck_assert_int_eq(v, cs[i].want);
            ck_assert_int_eq(dk.weight_version, cs[i].want);
            ck_assert_int_eq(ds.weight_version, cs[i].want);
        }
    }
    static char path[SR_SGL_PATH_MAX + 2];
    for (size_t n = SR_SGL_PATH_MAX - 1; n <= SR_SGL_PATH_MAX; n++) {
        sr_buf b = SR_BUF_INIT;
        memset(path, 'p', n);
        path[0] = '/';
        path[n] = '\0';
        sr_test_put(&b, "{\"model_path\":\"%s\"}", path);
        sr_sgl_disk dk;
        int rc = sr_sgl_req_disk(&dk, b.data, b.len, &e);
        if (n < SR_SGL_PATH_MAX) {
            ck_assert_msg(rc == 0, "a path of %zu bytes: %s", n, e.msg);
            ck_assert_uint_eq(strlen(dk.model_path), n);
        } else {
            REFUSED(rc, e, "model_path");
        }
        sr_buf_release(&b);
    }
}
END_TEST

static Suite *engine_req_bounds_suite(void)
{
    Suite *s = suite_create("engine_req_bounds");
    TCase *tc = tcase_create("engine_req_bounds");
    tcase_add_test(tc, vllm_version_at_its_limits);
    tcase_add_test(tc, vllm_label_length_at_its_limit);
    tcase_add_test(tc, checker_baseline_entry_at_its_limits);
    tcase_add_test(tc, checker_baseline_count_at_its_limit);
    tcase_add_test(tc, abort_ids_at_their_limits);
    tcase_add_test(tc, sgl_init_at_its_limits);
    tcase_add_test(tc, sgl_shape_at_its_limits);
    tcase_add_test(tc, sgl_tensor_count_at_its_limit);
    tcase_add_test(tc, sgl_serialized_count_at_its_limit);
    tcase_add_test(tc, sgl_version_and_path_at_their_limits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(engine_req_bounds_suite());
}
