/*
 * unit.verdict: a scenario's verdict from the checks that fired and its `expect`
 * (sr_run_judge, harness/run/runner_verdict.h; scenarios/FORMAT.md "expect"): every expected
 * check must fire -- the first one included --, no other check may, and the expected row
 * classifications likewise.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "report/result.h"
#include "run/runner_verdict.h"
#include "scenario/scenario.h"
#include "sr_test.h"

/* Judges a scenario with `expect` (a JSON object) after the checks `fired` (NULL-terminated,
 * "name" or "name/classification"); returns the verdict, the reason in `reason`. */
static sr_verdict judge(const char *expect, const char *const *fired, char *reason, size_t cap)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"id\": \"v\", \"description\": \"d\", \"steps\": [{\"kind\": \"rollout\"}], "
             "\"expect\": %s}",
             expect);
    sr_scenario *s = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&s, text, strlen(text), "v.json", &err), err);
    sr_run_result *run = NULL;
    sr_scenario_result *res = NULL;
    ck_assert_sr_ok(sr_run_result_new(&run, &err), err);
    ck_assert_sr_ok(sr_run_result_add_scenario(&res, run, &err), err);
    for (int i = 0; fired && fired[i]; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s", fired[i]);
        char *cls = strchr(name, '/');
        if (cls)
            *cls++ = '\0';
        ck_assert_int_eq(sr_result_check(res, name, cls, NULL, "fired %s", fired[i]), 0);
    }
    sr_run_judge(res, s);
    sr_verdict v = res->verdict;
    snprintf(reason, cap, "%s", res->reason);
    sr_run_result_free(run);
    sr_scenario_free(s);
    return v;
}

#define EXPECT_FAIL(checks) "{\"verdict\": \"fail\", \"checks\": " checks "}"

START_TEST(every_expected_check_must_fire)
{
    char why[SR_ERR_MSG_MAX];
    static const char *const both[] = {"trace.row_count", "sync.deadline", NULL};
    static const char *const second[] = {"sync.deadline", NULL};
    static const char *const first[] = {"trace.row_count", NULL};
    const char *expect = EXPECT_FAIL("[\"trace.row_count\", \"sync.deadline\"]");
    ck_assert_int_eq(judge(expect, both, why, sizeof(why)), SR_VERDICT_PASS);
    /* The first expected check missing fails the scenario as the second one missing does. */
    ck_assert_int_eq(judge(expect, second, why, sizeof(why)), SR_VERDICT_FAIL);
    ck_assert_str_eq(why, "expected trace.row_count did not fire");
    ck_assert_int_eq(judge(expect, first, why, sizeof(why)), SR_VERDICT_FAIL);
    ck_assert_str_eq(why, "expected sync.deadline did not fire");
    ck_assert_int_eq(judge(expect, NULL, why, sizeof(why)), SR_VERDICT_FAIL);
    ck_assert_str_eq(why, "expected trace.row_count did not fire");
}
END_TEST

START_TEST(unexpected_checks_fail)
{
    char why[SR_ERR_MSG_MAX];
    static const char *const extra[] = {"trace.row_count", "routes.invalid", NULL};
    ck_assert_int_eq(judge(EXPECT_FAIL("[\"trace.row_count\"]"), extra, why, sizeof(why)),
                     SR_VERDICT_FAIL);
    ck_assert_msg(strstr(why, "unexpected routes.invalid") == why, "reason '%s'", why);
    /* By default (verdict pass) any fired check fails the scenario. */
    static const char *const one[] = {"routes.invalid", NULL};
    ck_assert_int_eq(judge("{}", one, why, sizeof(why)), SR_VERDICT_FAIL);
    ck_assert_int_eq(judge("{}", NULL, why, sizeof(why)), SR_VERDICT_PASS);
}
END_TEST

START_TEST(expected_classifications)
{
    char why[SR_ERR_MSG_MAX];
    const char *expect = "{\"verdict\": \"fail\", \"checks\": [\"trace.row_mismatch\"], "
                         "\"classifications\": [\"stale_weights\"]}";
    static const char *const stale[] = {"trace.row_mismatch/stale_weights", NULL};
    static const char *const zero[] = {"trace.row_mismatch/all_zero_capture", NULL};
    ck_assert_int_eq(judge(expect, stale, why, sizeof(why)), SR_VERDICT_PASS);
    ck_assert_int_eq(judge(expect, zero, why, sizeof(why)), SR_VERDICT_FAIL);
    ck_assert_str_eq(why, "expected trace.row_mismatch classified stale_weights, not seen");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("verdict");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, every_expected_check_must_fire);
    tcase_add_test(tc, unexpected_checks_fail);
    tcase_add_test(tc, expected_classifications);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
