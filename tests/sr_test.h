/*
 * Shared helpers for the Check suites. An error-path test asserts the *named* error, so a
 * failure prints both the expected and the actual dotted names and the message.
 */
#ifndef SR_TEST_H
#define SR_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "sr_err.h"

/* Asserts that rc is the code `want` and that err carries the same code. */
#define ck_assert_sr_code(rc, err, want)                                                           \
    do {                                                                                           \
        int rc_ = (rc);                                                                            \
        int want_ = (want);                                                                        \
        ck_assert_msg(rc_ == want_ && (err).code == want_,                                         \
                      "expected %s, got %s (err %s): %s", sr_code_name(want_),                     \
                      sr_code_name(rc_) ? sr_code_name(rc_) : "?",                                 \
                      sr_code_name((err).code) ? sr_code_name((err).code) : "?", (err).msg);      \
    } while (0)

/* Asserts success and prints the error otherwise. */
#define ck_assert_sr_ok(rc, err)                                                                   \
    do {                                                                                           \
        int rc_ = (rc);                                                                            \
        ck_assert_msg(rc_ == 0, "expected success, got %s: %s",                                    \
                      sr_code_name(rc_) ? sr_code_name(rc_) : "?", (err).msg);                    \
    } while (0)

/* Runs a suite and returns the process exit status. */
static inline int sr_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* SR_TEST_H */
