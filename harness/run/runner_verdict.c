/* The verdict of a scenario from the checks that fired and its `expect` (runner_verdict.h). */
#include "runner_verdict.h"

#include <stdio.h>
#include <string.h>

static int in_list(char *const *v, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

static int fired_class(const sr_scenario_result *r, const char *c)
{
    for (size_t i = 0; i < r->n_fired_classes; i++)
        if (strcmp(r->fired_classes[i].name, c) == 0)
            return 1;
    return 0;
}

/* The first kept message of check `name`, or "". */
static const char *first_message(const sr_scenario_result *r, const char *name)
{
    for (size_t i = 0; i < r->n_checks; i++)
        if (strcmp(r->checks[i].name, name) == 0)
            return r->checks[i].message;
    return "";
}

void sr_run_judge(sr_scenario_result *res, const sr_scenario *s)
{
    /* An unexpected check is the most useful thing to print, then a missing one. */
    for (size_t i = 0; i < res->n_fired; i++) {
        const char *n = res->fired[i].name;
        if (s->expect_verdict == SR_VERDICT_PASS ||
            !in_list(s->expect_checks, s->n_expect_checks, n)) {
            sr_result_set_verdict(res, SR_VERDICT_FAIL, "%s%s: %s",
                                  s->expect_verdict == SR_VERDICT_FAIL ? "unexpected " : "", n,
                                  first_message(res, n));
            return;
        }
    }
    for (int i = 0; i < s->n_expect_checks; i++)
        if (!sr_result_fired(res, s->expect_checks[i])) {
            sr_result_set_verdict(res, SR_VERDICT_FAIL, "expected %s did not fire",
                                  s->expect_checks[i]);
            return;
        }
    for (int i = 0; i < s->n_expect_classes; i++)
        if (!fired_class(res, s->expect_classes[i])) {
            sr_result_set_verdict(res, SR_VERDICT_FAIL,
                                  "expected trace.row_mismatch classified %s, not seen",
                                  s->expect_classes[i]);
            return;
        }
    if (s->n_expect_classes)
        for (size_t i = 0; i < res->n_fired_classes; i++)
            if (!in_list(s->expect_classes, s->n_expect_classes, res->fired_classes[i].name)) {
                sr_result_set_verdict(res, SR_VERDICT_FAIL,
                                      "unexpected trace.row_mismatch classification %s",
                                      res->fired_classes[i].name);
                return;
            }
    sr_result_set_verdict(res, SR_VERDICT_PASS, NULL);
}
