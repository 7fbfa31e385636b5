/*
 * Issue 32 item 11 over real HTTP: connections whose request body never completes must not
 * starve generation for engines.server.body_timeout_ms. While requests wait for a busy slot and
 * at least max_connections - max(1, max_connections / 8) slots are held by connections still
 * sending a body, a body gets no more time than a head (header_timeout_ms): the slow ones are
 * answered 408 engine.request_timeout naming the rule and their slots go to the queue.
 */
#include <sys/socket.h>

#include "engine_util.h"

#define SLOW 10 /* more than max_connections (8): every slot held, two more queued */

/* What the engine already sent on fd (never waits: an answer sent before the generate was
 * served is in the socket's buffer by now). */
static void read_sent(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t n;
    while (len < cap - 1 && (n = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
}

/* Before the fix the generate waited in the queue behind the slow bodies until body_timeout_ms
 * (an hour here) and its client gave up after 20 s (status 0). Now it is answered 200 and each
 * slow body that held a slot gets 408 engine.request_timeout naming header_timeout_ms. */
START_TEST(slow_bodies_do_not_starve_a_generate)
{
    eng e;
    eng_start(&e, "{\"server\":{\"max_connections\":8,\"max_queued_requests\":64,"
                  "\"header_timeout_ms\":1000,\"body_timeout_ms\":3600000}}");
    const char *slow = "POST /skyrl/v1/generate HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";
    int fd[SLOW];
    for (int i = 0; i < SLOW; i++) {
        fd[i] = sr_test_raw_send(e.port, slow);
        ck_assert_int_ge(fd[i], 0);
    }
    /* The generate connects after every slow head was sent, so it queues behind them. */
    hresp r;
    http_req(&r, NULL, &e, "POST", "/skyrl/v1/generate",
             "{\"sampling_params\":{\"max_tokens\":2},\"token_ids\":[1,2]}", NULL, 20000);
    ck_assert_msg(r.status == 200, "generate behind slow bodies: status %ld (%s) %s", r.status,
                  r.errbuf, r.body.data);
    hresp_free(&r);
    /* The slots were all taken (requests queued), and every slow body answered so far was
     * closed 408 naming the rule. */
    http_get(&r, &e, "/syncroll/v1/state");
    cJSON *st = cJSON_Parse(r.body.data);
    const cJSON *c = cJSON_GetObjectItem(st, "connections");
    ck_assert_msg(cJSON_IsObject(c), "no connections in %s", r.body.data);
    ck_assert_msg(cJSON_GetObjectItem(c, "queued_peak")->valueint >= 1, "no request queued: %s",
                  r.body.data);
    cJSON_Delete(st);
    hresp_free(&r);
    /* The generate got a slot only after a slow body that held one was closed, so that 408 is
     * in its socket already: at least one, and nothing else was answered. */
    int timed_out = 0;
    for (int i = 0; i < SLOW; i++) {
        char buf[4096];
        read_sent(fd[i], buf, sizeof(buf));
        int is408 = strncmp(buf, "HTTP/1.1 408", 12) == 0 &&
                    strstr(buf, "\"check\":\"engine.request_timeout\"") &&
                    strstr(buf, "header_timeout_ms");
        ck_assert_msg(!*buf || is408, "%s", buf);
        timed_out += is408;
        close(fd[i]);
    }
    ck_assert_msg(timed_out >= 1, "no slow body was answered 408 naming header_timeout_ms");
    eng_stop(&e);
}
END_TEST

static Suite *body_cap_suite(void)
{
    Suite *s = suite_create("engine_body_cap");
    TCase *tc = tcase_create("body_cap");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, slow_bodies_do_not_starve_a_generate);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(body_cap_suite)
