/*
 * unit.engine_wakeups: a request on a kept-alive connection wakes no thread of the mock engine
 * but the libmicrohttpd worker that serves it, and the deadlines the owner's loop keeps still
 * fire.
 *
 * The engine's owner loop (sr_server_tick, the process's main thread) reaps connections past
 * their head or body deadline; the scheduler thread ("sr-sched") resumes suspended requests at
 * their time. Before issue 36's engine round every request wrote the owner's wake-up pipe (its
 * connection entered the then empty body list) and broadcast the scheduler's condition variable
 * (on_completed), so both threads woke once per request: two thread switches and three system
 * calls that the HTTP floor does not make. Their wake-ups are counted as the kernel counts them,
 * the threads' voluntary context switches (/proc/PID/task/TID/status); with every timeout far
 * away no tick is due during the test, so a thread that is not woken does not switch at all.
 */
#include <dirent.h>

#include "engine_util.h"

#define REQUESTS 300

#define GEN                                                                                        \
    "{\"sampling_params\":{\"max_tokens\":4,\"logprobs\":0},\"model\":\"default\","                \
    "\"token_ids\":[1,2,3,4]}"

/* A /proc file's text into buf (its size reads as 0, so sr_test_read_all does not apply); 0 when
 * it cannot be opened. */
static int proc_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 1;
}

/* The voluntary context switches of thread `tid` of process `pid`. */
static long long vol_switches(pid_t pid, pid_t tid)
{
    char path[96], text[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, (int)tid);
    ck_assert_msg(proc_text(path, text, sizeof text), "cannot read %s", path);
    const char *at = strstr(text, "\nvoluntary_ctxt_switches:");
    ck_assert_msg(at != NULL, "no voluntary_ctxt_switches in %s", path);
    return atoll(at + strlen("\nvoluntary_ctxt_switches:"));
}

/* The thread of `pid` whose name is `comm`, or 0. */
static pid_t thread_named(pid_t pid, const char *comm)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    pid_t found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[400], name[64];
        snprintf(path, sizeof path, "%s/%s/comm", dir, de->d_name);
        if (proc_text(path, name, sizeof name) && strncmp(name, comm, strlen(comm)) == 0 &&
            name[strlen(comm)] == '\n')
            found = (pid_t)atoi(de->d_name);
    }
    closedir(d);
    return found;
}

/* REQUESTS generates on one kept-alive connection switch the owner's thread and the scheduler's
 * a few times at most (the first request wakes the owner, which then waits for the far deadline
 * of a new request). Before the change each switched about once per request. */
START_TEST(kept_alive_requests_wake_neither_owner_nor_scheduler)
{
    eng e;
    eng_start(&e, "{\"server\":{\"threads\":2,\"header_timeout_ms\":600000,"
                  "\"body_timeout_ms\":600000}}");
    pid_t pid = e.p.pid, sched = thread_named(pid, "sr-sched");
    ck_assert_msg(sched > 0, "the scheduler thread is named sr-sched");
    CURL *c = curl_easy_init();
    hresp r;
    http_req(&r, c, &e, "POST", "/skyrl/v1/generate", GEN, NULL, 20000);
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    long long owner0 = vol_switches(pid, pid), sched0 = vol_switches(pid, sched);
    for (int i = 0; i < REQUESTS; i++) {
        http_req(&r, c, &e, "POST", "/skyrl/v1/generate", GEN, NULL, 20000);
        ck_assert_msg(r.status == 200, "request %d: status %ld: %s", i, r.status, r.body.data);
        hresp_free(&r);
    }
    long long owner = vol_switches(pid, pid) - owner0, sched_n = vol_switches(pid, sched) - sched0;
    curl_easy_cleanup(c);
    ck_assert_msg(owner <= 10, "the owner's thread switched %lld times in %d requests", owner,
                  REQUESTS);
    ck_assert_msg(sched_n <= 10, "the scheduler's thread switched %lld times in %d requests",
                  sched_n, REQUESTS);
    eng_stop(&e);
}
END_TEST

/* The owner is no longer woken per request, but a body that stops coming on a kept-alive
 * connection after fast requests still gets its 408 engine.request_timeout at body_timeout_ms:
 * the owner ticks at least that often while connections are open. */
START_TEST(body_deadline_after_kept_alive_requests)
{
    eng e;
    eng_start(&e, "{\"server\":{\"header_timeout_ms\":600000,\"body_timeout_ms\":300}}");
    int fd = sr_test_raw_connect(e.port);
    ck_assert_int_ge(fd, 0);
    const char *head = "POST /skyrl/v1/generate HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s";
    char req[512], buf[65536];
    for (int i = 0; i < 20; i++) {
        snprintf(req, sizeof req, head, strlen(GEN), GEN);
        ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
        /* One whole answer: the head, then Content-Length bytes. */
        size_t len = 0;
        const char *end = NULL;
        long long cl = -1;
        while (!end || len < (size_t)(end - buf) + 4 + (size_t)cl) {
            ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
            ck_assert_msg(n > 0, "answer %d cut after %zu bytes", i, len);
            len += (size_t)n;
            buf[len] = '\0';
            if (!end && (end = strstr(buf, "\r\n\r\n"))) {
                const char *h = strcasestr(buf, "Content-Length:");
                ck_assert_ptr_nonnull(h);
                cl = atoll(h + strlen("Content-Length:"));
            }
        }
        ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "answer %d: %.200s", i, buf);
        ck_assert_uint_eq(len, (size_t)(end - buf) + 4 + (size_t)cl);
    }
    snprintf(req, sizeof req, head, (size_t)1000, "{");
    ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    sr_test_raw_read_all(fd, buf, sizeof buf);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 408", 12) == 0, "the stalled body: %.300s", buf);
    ck_assert_msg(strstr(buf, "\"check\":\"engine.request_timeout\"") &&
                      strstr(buf, "engines.server.body_timeout_ms"),
                  "the 408 names its check and rule: %.400s", buf);
    eng_stop(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_wakeups");
    TCase *tc = tcase_create("wakeups");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kept_alive_requests_wake_neither_owner_nor_scheduler);
    tcase_add_test(tc, body_deadline_after_kept_alive_requests);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(suite)
