/*
 * A one-shot capture server for the client's tests: it accepts one connection, keeps the request
 * (headers and body, up to 8 KiB), answers it with a fixed JSON reply and closes. capture_try
 * makes a client and a conn against it and runs one generate; capture_try_warm runs a first
 * generate on a warm reply and then the one under test on the same conn. Each test file that
 * includes this gets its own copy (static functions).
 */
#ifndef SR_TEST_CLIENT_CAPTURE_H
#define SR_TEST_CLIENT_CAPTURE_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "sr_test.h"

typedef struct capture {
    sr_client *cl;
    sr_client_conn *k; /* kept until capture_done: the result points into it */
    int lfd, port;
    char req[8192];
    size_t len;
    const char *reply;
    pthread_t th;
} capture;

static inline void *capture_run(void *arg)
{
    capture *c = arg;
    int fd = accept(c->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    size_t want = SIZE_MAX;
    while (c->len < sizeof c->req - 1 && c->len < want) {
        ssize_t n = read(fd, c->req + c->len, sizeof c->req - 1 - c->len);
        if (n <= 0)
            break;
        c->len += (size_t)n;
        c->req[c->len] = '\0';
        char *end = strstr(c->req, "\r\n\r\n");
        char *cl = strcasestr(c->req, "Content-Length:");
        if (end && cl)
            want = (size_t)(end + 4 - c->req) + strtoul(cl + 15, NULL, 10);
    }
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n",
                      strlen(c->reply));
    ck_assert_int_eq((int)write(fd, head, (size_t)hn), hn);
    ck_assert_int_eq((int)write(fd, c->reply, strlen(c->reply)), (int)strlen(c->reply));
    close(fd);
    return NULL;
}

static inline void capture_start(capture *c, const char *reply)
{
    memset(c, 0, sizeof *c);
    c->reply = reply;
    c->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(c->lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(c->lfd, 4), 0);
    socklen_t al = sizeof a;
    getsockname(c->lfd, (struct sockaddr *)&a, &al);
    c->port = ntohs(a.sin_port);
    pthread_create(&c->th, NULL, capture_run, c);
}

static inline void capture_join(capture *c)
{
    pthread_join(c->th, NULL);
    close(c->lfd);
}

static inline const char *body_of(const capture *c)
{
    const char *b = strstr(c->req, "\r\n\r\n");
    return b ? b + 4 : "";
}

#define APPENDIX_REPLY                                                                             \
    "{\"choices\":[{\"token_ids\":[10,11],\"finish_reason\":\"stop\",\"logprobs\":{\"content\":"   \
    "[{\"logprob\":-0.1},{\"logprob\":-9999.0}]},\"routed_experts\":{\"data\":\"AAEC\",\"shape\":" \
    "[3,1,1],\"dtype\":\"uint8\"}}]}"

static inline int capture_try(capture *c, const sr_client_opts *o, sr_client_req *q,
                              sr_client_result *r, const char *reply, sr_err *e)
{
    capture_start(c, reply);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", c->port);
    const char *urls[] = {url};
    ck_assert_sr_ok(sr_client_new(&c->cl, urls, 1, NULL, o, e), *e);
    ck_assert_sr_ok(sr_client_conn_new(&c->k, c->cl, e), *e);
    int rc = sr_client_generate(r, c->k, q, e);
    capture_join(c);
    return rc;
}

static inline void capture_generate(capture *c, const sr_client_opts *o, sr_client_req *q,
                                    sr_client_result *r, const char *reply)
{
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(capture_try(c, o, q, r, reply, &e), e);
}

/* Two generates on one conn, the first answered with `warm`: the second reply is read into the
 * arrays the first one grew, as in a rollout's later turns. */
static inline int capture_try_warm(capture *c, sr_client_req *q, sr_client_result *r,
                                   const char *warm, const char *reply, sr_err *e)
{
    capture_start(c, warm);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", c->port);
    const char *urls[] = {url};
    ck_assert_sr_ok(sr_client_new(&c->cl, urls, 1, NULL, NULL, e), *e);
    ck_assert_sr_ok(sr_client_conn_new(&c->k, c->cl, e), *e);
    ck_assert_sr_ok(sr_client_generate(r, c->k, q, e), *e);
    pthread_join(c->th, NULL);
    c->reply = reply;
    c->len = 0;
    c->req[0] = '\0';
    pthread_create(&c->th, NULL, capture_run, c);
    int rc = sr_client_generate(r, c->k, q, e);
    capture_join(c);
    return rc;
}

static inline void capture_done(capture *c)
{
    sr_client_conn_free(c->k);
    sr_client_free(c->cl);
}

#endif /* SR_TEST_CLIENT_CAPTURE_H */
