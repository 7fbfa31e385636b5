/*
 * unit.engine_body_limit: the engine's request-body bound (engines.server.max_body_bytes) at,
 * before and past, over real HTTP (docs/internals/testing.md, boundary checklist). The bound is
 * compared twice: against a declared Content-Length before any byte is read, and against the
 * bytes received for a chunked body. A body of exactly max_body_bytes is served either way; one
 * byte more is 413 resource.limit either way. The configured bound's own range (1024..2^32) is
 * checked at both ends by the config parser (engine.invalid_config naming the key).
 */
#include <unistd.h>

#include "engine_util.h"

#define LIMIT 1024

/* A JSON object of exactly n bytes: '{', spaces, '}'. */
static char *object_of(size_t n)
{
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    memset(s, ' ', n);
    s[0] = '{';
    s[n - 1] = '}';
    s[n] = '\0';
    return s;
}

/* POSTs an n-byte body to /reset_prefix_cache, with a Content-Length or in two chunks, and
 * returns the answer's text in buf. */
static void post_of(const eng *e, size_t n, int chunked, char *buf, size_t cap)
{
    char *body = object_of(n);
    sr_buf req = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    int rc = sr_buf_printf(&req, &err,
                           "POST /reset_prefix_cache HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                           "Content-Type: application/json\r\n");
    size_t h = n / 2;
    if (!rc && chunked)
        rc = sr_buf_printf(
            &req, &err, "Transfer-Encoding: chunked\r\n\r\n%zx\r\n%.*s\r\n%zx\r\n%s\r\n0\r\n\r\n",
            h, (int)h, body, n - h, body + h);
    else if (!rc)
        rc = sr_buf_printf(&req, &err, "Content-Length: %zu\r\n\r\n%s", n, body);
    ck_assert_sr_ok(rc, err);
    sr_test_raw_read_all(sr_test_raw_send(e->port, req.data), buf, cap);
    sr_buf_release(&req);
    free(body);
}

/* Bodies of LIMIT - 1 and LIMIT bytes are served (200), LIMIT + 1 is 413 resource.limit naming
 * the bound: declared with Content-Length (refused by the declared length, before the body is
 * read) and sent chunked (refused by the bytes received). */
START_TEST(request_body_at_its_limit)
{
    eng e;
    eng_start(&e, "{\"server\":{\"max_body_bytes\":1024}}");
    char buf[4096];
    for (int chunked = 0; chunked <= 1; chunked++)
        for (size_t n = LIMIT - 1; n <= LIMIT + 1; n++) {
            post_of(&e, n, chunked, buf, sizeof buf);
            if (n <= LIMIT) {
                ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%zu bytes%s: %.200s", n,
                              chunked ? " chunked" : "", buf);
            } else {
                ck_assert_msg(strncmp(buf, "HTTP/1.1 413", 12) == 0, "%zu bytes%s: %.200s", n,
                              chunked ? " chunked" : "", buf);
                ck_assert_msg(strstr(buf, "\"check\":\"resource.limit\"") && strstr(buf, "1024"),
                              "413 names its check and bound: %.400s", buf);
                /* A declared length is refused before the body is read, by its own message. */
                const char *which = chunked ? "request body larger than" : "(Content-Length)";
                ck_assert_msg(strstr(buf, which), "%zu bytes%s: want \"%s\" in %.400s", n,
                              chunked ? " chunked" : "", which, buf);
            }
        }
    eng_stop(&e);
}
END_TEST

/* engines.server.max_body_bytes itself: 1024 and 2^32 taken, 1023 and 2^32 + 1 refused
 * (json.schema) naming the key. */
START_TEST(configured_bound_at_its_range)
{
    static const struct {
        const char *v;
        int ok;
    } cs[] = {{"1023", 0}, {"1024", 1}, {"4294967296", 1}, {"4294967297", 0}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"server\":{\"max_body_bytes\":%s}}", cs[i].v);
        sr_engine_config c;
        sr_err err = SR_ERR_INIT;
        int rc = sr_engine_config_parse(&c, json, strlen(json), "test", 0, &err);
        if (cs[i].ok) {
            ck_assert_msg(rc == 0, "max_body_bytes %s: %s", cs[i].v, err.msg);
            ck_assert_uint_eq(c.max_body_bytes, strtoull(cs[i].v, NULL, 10));
        } else {
            ck_assert_sr_code(rc, err, SR_E_ENGINE_CONFIG);
            ck_assert_msg(strstr(err.msg, "max_body_bytes"), "the message names the key: %s",
                          err.msg);
        }
        sr_engine_config_release(&c);
    }
}
END_TEST

static Suite *engine_body_limit_suite(void)
{
    Suite *s = suite_create("engine_body_limit");
    TCase *tc = tcase_create("engine_body_limit");
    tcase_add_test(tc, request_body_at_its_limit);
    tcase_add_test(tc, configured_bound_at_its_range);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(engine_body_limit_suite)
