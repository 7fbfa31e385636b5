/*
 * Shared helpers for the Check suites. An error-path test asserts the *named* error, so a
 * failure prints both the expected and the actual dotted names and the message.
 */
#ifndef SR_TEST_H
#define SR_TEST_H

#include <check.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "sr_buf.h"
#include "sr_err.h"

/* Asserts that rc is the code `want` and that err carries the same code. */
#define ck_assert_sr_code(rc, err, want)                                                           \
    do {                                                                                           \
        int rc_ = (rc);                                                                            \
        int want_ = (want);                                                                        \
        ck_assert_msg(rc_ == want_ && (err).code == want_, "expected %s, got %s (err %s): %s",     \
                      sr_code_name(want_), sr_code_name(rc_) ? sr_code_name(rc_) : "?",            \
                      sr_code_name((err).code) ? sr_code_name((err).code) : "?", (err).msg);       \
    } while (0)

/* Asserts success and prints the error otherwise. */
#define ck_assert_sr_ok(rc, err)                                                                   \
    do {                                                                                           \
        int rc_ = (rc);                                                                            \
        ck_assert_msg(rc_ == 0, "expected success, got %s: %s",                                    \
                      sr_code_name(rc_) ? sr_code_name(rc_) : "?", (err).msg);                     \
    } while (0)

/* Runs a suite and returns the process exit status. */
/* The whole file at `path`, NUL-terminated (free it); fails the test if it cannot be read. */
static inline char *sr_test_read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    ck_assert_msg(n >= 0, "cannot size %s", path);
    char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    return b;
}

/* A raw TCP connection to 127.0.0.1:`port` (the socket; fails the test if it cannot connect),
 * with a 30 s receive timeout as a bound against a hang, not a timing assertion. */
static inline int sr_test_raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* sr_test_raw_connect, then sends all of `req` (may be ""). */
static inline int sr_test_raw_send(int port, const char *req)
{
    int fd = sr_test_raw_connect(port);
    size_t len = strlen(req);
    ck_assert_int_eq((long)send(fd, req, len, MSG_NOSIGNAL), (long)len);
    return fd;
}

/* Reads fd until the peer closes it (or the 30 s receive bound of sr_test_raw_connect passes)
 * into buf, NUL-terminated, at most cap - 1 bytes; closes fd. */
static inline void sr_test_raw_read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t n;
    while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
    close(fd);
}

/* Appends printf-style text (under 8 KiB a call) to b; fails the test on an error. */
static inline void sr_test_put(sr_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void sr_test_put(sr_buf *b, const char *fmt, ...)
{
    char tmp[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    ck_assert(n >= 0 && (size_t)n < sizeof tmp);
    sr_err e = SR_ERR_INIT;
    ck_assert_msg(sr_buf_append(b, tmp, (size_t)n, &e) == 0, "%s", e.msg);
}

static inline int sr_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* SR_TEST_H */
