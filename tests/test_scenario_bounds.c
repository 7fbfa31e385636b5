/*
 * unit.scenario_bounds: the scenario loader's list limits at, before and past
 * (docs/internals/testing.md, boundary checklist): steps (1..SR_SCN_MAX_STEPS), tags (at most
 * SR_SCN_MAX_LIST names of 1..SR_SCN_NAME_MAX-1 bytes), budgets (at most SR_SCN_MAX_BUDGETS), a
 * rollout's stop_token_ids (at most SR_SCN_MAX_LIST ids below the vocabulary) and a collate step's
 * rollouts (1..SR_SCN_MAX_LIST step names). Each refusal asserts the named error and the message
 * that names the key; each value inside is taken and read back.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scenario/scenario.h"
#include "sr_buf.h"
#include "sr_test.h"

/* Parses b; on success returns the scenario (free it), else asserts `code` and `needle`. */
static sr_scenario *parse(const sr_buf *b, int ok, int code, const char *needle, const char *what)
{
    sr_scenario *s = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = sr_scenario_parse(&s, b->data, b->len, "t.json", &e);
    if (ok) {
        ck_assert_msg(rc == 0, "%s: %s", what, e.msg);
        return s;
    }
    ck_assert_msg(rc == code && e.code == code, "%s: want %s, got %s: %s", what, sr_code_name(code),
                  sr_code_name(rc) ? sr_code_name(rc) : "ok", e.msg);
    ck_assert_msg(strstr(e.msg, needle), "%s: want \"%s\" in: %s", what, needle, e.msg);
    sr_scenario_free(s);
    return NULL;
}

/* 0, 1, SR_SCN_MAX_STEPS - 1 and SR_SCN_MAX_STEPS steps; one more refused. */
START_TEST(steps_at_their_limit)
{
    static const int ns[] = {0, 1, SR_SCN_MAX_STEPS - 1, SR_SCN_MAX_STEPS, SR_SCN_MAX_STEPS + 1};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b, "{\"id\": \"a\", \"description\": \"d\", \"steps\": [");
        for (int k = 0; k < ns[i]; k++)
            sr_test_put(&b, "%s{\"kind\": \"rollout\"}", k ? ", " : "");
        sr_test_put(&b, "]}");
        char what[32];
        snprintf(what, sizeof what, "%d steps", ns[i]);
        int ok = ns[i] >= 1 && ns[i] <= SR_SCN_MAX_STEPS;
        sr_scenario *s =
            parse(&b, ok, SR_E_JSON_SCHEMA, "'steps' must be an array of 1..256", what);
        if (s) {
            ck_assert_int_eq(s->n_steps, ns[i]);
            sr_scenario_free(s);
        }
        sr_buf_release(&b);
    }
}
END_TEST

/* SR_SCN_MAX_LIST tags taken, one more refused; a tag of SR_SCN_NAME_MAX - 1 bytes taken, one
 * byte more refused (as the first and as the last tag). */
START_TEST(tags_at_their_limits)
{
    for (int n = SR_SCN_MAX_LIST - 1; n <= SR_SCN_MAX_LIST + 1; n++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b,
                    "{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"rollout\"}], "
                    "\"tags\": [");
        for (int k = 0; k < n; k++)
            sr_test_put(&b, "%s\"t%d\"", k ? ", " : "", k);
        sr_test_put(&b, "]}");
        char what[32];
        snprintf(what, sizeof what, "%d tags", n);
        sr_scenario *s =
            parse(&b, n <= SR_SCN_MAX_LIST, SR_E_JSON_SCHEMA, "'tags' must be an array", what);
        if (s) {
            ck_assert_int_eq(s->n_tags, n);
            sr_scenario_free(s);
        }
        sr_buf_release(&b);
    }
    char name[SR_SCN_NAME_MAX + 1];
    for (size_t len = SR_SCN_NAME_MAX - 1; len <= SR_SCN_NAME_MAX; len++)
        for (int last = 0; last <= 1; last++) {
            memset(name, 'x', len);
            name[len] = '\0';
            sr_buf b = SR_BUF_INIT;
            sr_test_put(
                &b, "{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"rollout\"}], "
                    "\"tags\": [");
            sr_test_put(&b, last ? "\"a\", \"%s\"]}" : "\"%s\", \"a\"]}", name);
            char what[48];
            snprintf(what, sizeof what, "a tag of %zu bytes (%s)", len, last ? "last" : "first");
            sr_scenario *s = parse(&b, len < SR_SCN_NAME_MAX, SR_E_JSON_SCHEMA, "tags", what);
            if (s) {
                ck_assert_uint_eq(strlen(s->tags[last]), len);
                sr_scenario_free(s);
            }
            sr_buf_release(&b);
        }
}
END_TEST

/* SR_SCN_MAX_BUDGETS budgets taken, one more refused. */
START_TEST(budgets_at_their_limit)
{
    for (int n = SR_SCN_MAX_BUDGETS - 1; n <= SR_SCN_MAX_BUDGETS + 1; n++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b,
                    "{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"rollout\"}], "
                    "\"budgets\": [");
        for (int k = 0; k < n; k++)
            sr_test_put(&b, "%s{\"phase\": \"request\", \"percentile\": 50, \"max_ms\": %d}",
                        k ? ", " : "", k + 1);
        sr_test_put(&b, "]}");
        char what[32];
        snprintf(what, sizeof what, "%d budgets", n);
        sr_scenario *s = parse(&b, n <= SR_SCN_MAX_BUDGETS, SR_E_JSON_SCHEMA,
                               "'budgets' must be an array of at most 64", what);
        if (s) {
            ck_assert_int_eq(s->n_budgets, n);
            ck_assert(s->budgets[n - 1].max_ms == n);
            sr_scenario_free(s);
        }
        sr_buf_release(&b);
    }
}
END_TEST

/* A rollout's stop_token_ids: SR_SCN_MAX_LIST ids taken, one more refused; the largest id below
 * the vocabulary (32000 by default) taken, the vocabulary itself refused, as the last id. */
START_TEST(stop_token_ids_at_their_limits)
{
    for (int n = SR_SCN_MAX_LIST - 1; n <= SR_SCN_MAX_LIST + 1; n++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b,
                    "{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"rollout\", "
                    "\"stop_token_ids\": [");
        for (int k = 0; k < n; k++)
            sr_test_put(&b, "%s%d", k ? ", " : "", k + 1);
        sr_test_put(&b, "]}]}");
        char what[32];
        snprintf(what, sizeof what, "%d stop ids", n);
        sr_scenario *s = parse(&b, n <= SR_SCN_MAX_LIST, SR_E_SCENARIO,
                               "stop_token_ids must be an array of at most 64", what);
        sr_scenario_free(s);
        sr_buf_release(&b);
    }
    for (int id = 31999; id <= 32000; id++) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b,
                    "{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"rollout\", "
                    "\"stop_token_ids\": [0, %d]}]}",
                    id);
        char what[32];
        snprintf(what, sizeof what, "stop id %d", id);
        sr_scenario *s = parse(&b, id < 32000, SR_E_SCENARIO, "stop_token_ids", what);
        sr_scenario_free(s);
        sr_buf_release(&b);
    }
}
END_TEST

/* A collate step naming SR_SCN_MAX_LIST earlier rollouts is taken, one more refused, none
 * refused. */
START_TEST(collate_rollouts_at_their_limit)
{
    for (int n = 0; n <= SR_SCN_MAX_LIST + 1; n += n == 1 ? SR_SCN_MAX_LIST - 2 : 1) {
        sr_buf b = SR_BUF_INIT;
        sr_test_put(&b, "{\"id\": \"a\", \"description\": \"d\", \"steps\": [");
        for (int k = 0; k < SR_SCN_MAX_LIST + 1; k++)
            sr_test_put(&b, "{\"kind\": \"rollout\", \"name\": \"r%d\"}, ", k);
        sr_test_put(&b, "{\"kind\": \"collate\", \"rollouts\": [");
        for (int k = 0; k < n; k++)
            sr_test_put(&b, "%s\"r%d\"", k ? ", " : "", k);
        sr_test_put(&b, "]}]}");
        char what[32];
        snprintf(what, sizeof what, "%d rollouts named", n);
        int ok = n >= 1 && n <= SR_SCN_MAX_LIST;
        sr_scenario *s = parse(&b, ok, SR_E_SCENARIO, "array of 1..64 step names", what);
        if (s) {
            const sr_scn_step *c = &s->steps[s->n_steps - 1];
            ck_assert_int_eq(c->collate.n_rollouts, n);
            sr_scenario_free(s);
        }
        sr_buf_release(&b);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scenario_bounds");
    TCase *tc = tcase_create("scenario_bounds");
    tcase_add_test(tc, steps_at_their_limit);
    tcase_add_test(tc, tags_at_their_limits);
    tcase_add_test(tc, budgets_at_their_limit);
    tcase_add_test(tc, stop_token_ids_at_their_limits);
    tcase_add_test(tc, collate_rollouts_at_their_limit);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
