/*
 * unit.fleet (issue 23): the shard of a CI job (harness/run/shard.h) from options and a fake
 * environment, the merge of shard runs (sr_report_merge) and the history of nights
 * (harness/report/history.h) on runs built in memory. Every error path asserts its named code.
 */
#include <string.h>

#include "report/history.h"
#include "report/report.h"
#include "run/shard.h"
#include "run/shard_balance.h"
#include "sr_test.h"

/* ---- the shard ---- */

/* A fake environment: "NAME=VALUE" strings, NULL-terminated. */
static const char *fake_get(void *ctx, const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = ctx; *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static int resolve(sr_shard *s, const char *opt, long long count, const char **env, sr_err *err)
{
    return sr_shard_resolve(s, opt, count, fake_get, (void *)env, err);
}

START_TEST(shard_sources)
{
    static const struct {
        const char *env[5];
        const char *opt;
        long long count;
        int k, n;
        const char *source;
    } cases[] = {
        {{NULL}, NULL, 0, 0, 0, ""},
        {{"BUILDKITE_PARALLEL_JOB=0", "BUILDKITE_PARALLEL_JOB_COUNT=4", NULL},
         NULL,
         0,
         1,
         4,
         "buildkite"},
        {{"BUILDKITE_PARALLEL_JOB=3", "BUILDKITE_PARALLEL_JOB_COUNT=4", NULL},
         NULL,
         4,
         4,
         4,
         "buildkite"},
        {{"JOB_COMPLETION_INDEX=2", "SYNCROLL_SHARD_COUNT=5", NULL}, NULL, 0, 3, 5, "kubernetes"},
        {{"JOB_COMPLETION_INDEX=0", NULL}, NULL, 2, 1, 2, "kubernetes"},
        {{"CI_NODE_INDEX=1", "CI_NODE_TOTAL=3", NULL}, NULL, 0, 1, 3, "gitlab"},
        {{"CI_NODE_TOTAL=1", NULL}, NULL, 0, 0, 0, ""},
        {{"CIRCLE_NODE_INDEX=2", "CIRCLE_NODE_TOTAL=3", NULL}, NULL, 0, 3, 3, "circleci"},
        {{"CIRCLE_NODE_INDEX=0", "CIRCLE_NODE_TOTAL=1", NULL}, NULL, 0, 1, 1, "circleci"},
        /* the same shard from two systems is one shard; the option ignores the environment */
        {{"CI_NODE_INDEX=2", "CI_NODE_TOTAL=4", "CIRCLE_NODE_INDEX=1", "CIRCLE_NODE_TOTAL=4"},
         NULL,
         0,
         2,
         4,
         "gitlab"},
        {{"CI_NODE_INDEX=x", NULL}, "3/7", 0, 3, 7, "option"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sr_shard s;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(
            resolve(&s, cases[i].opt, cases[i].count, (const char **)cases[i].env, &err), err);
        ck_assert_msg(s.k == cases[i].k && s.n == cases[i].n, "case %zu: %d/%d", i, s.k, s.n);
        ck_assert_str_eq(s.source, cases[i].source);
    }
}
END_TEST

START_TEST(shard_errors)
{
    static const struct {
        const char *env[5];
        const char *opt;
        long long count;
        const char *says;
    } cases[] = {
        {{"BUILDKITE_PARALLEL_JOB=+1", "BUILDKITE_PARALLEL_JOB_COUNT=4"}, NULL, 0, "'+1'"},
        {{"BUILDKITE_PARALLEL_JOB=4", "BUILDKITE_PARALLEL_JOB_COUNT=4"}, NULL, 0, "out of range"},
        {{"BUILDKITE_PARALLEL_JOB=1", "BUILDKITE_PARALLEL_JOB_COUNT=0"}, NULL, 0, "count"},
        {{"BUILDKITE_PARALLEL_JOB=1", "BUILDKITE_PARALLEL_JOB_COUNT=99999999"}, NULL, 0, "count"},
        {{"BUILDKITE_PARALLEL_JOB=1"}, NULL, 0, "gives no shard count"},
        {{"CI_NODE_INDEX=0", "CI_NODE_TOTAL=2"}, NULL, 0, "1-based"},
        {{"CI_NODE_TOTAL=2"}, NULL, 0, "is set but CI_NODE_INDEX is not"},
        {{"JOB_COMPLETION_INDEX=1"}, NULL, 0, "--shard-count"},
        {{"JOB_COMPLETION_INDEX=1", "SYNCROLL_SHARD_COUNT=2"}, NULL, 3, "conflicts"},
        {{"SYNCROLL_SHARD_COUNT=two"}, NULL, 0, "SYNCROLL_SHARD_COUNT='two'"},
        {{"CI_NODE_INDEX=1", "CI_NODE_TOTAL=2", "CIRCLE_NODE_INDEX=1", "CIRCLE_NODE_TOTAL=2"},
         NULL,
         0,
         "but circleci says 2/2"},
        {{"CIRCLE_NODE_INDEX=0", "CIRCLE_NODE_TOTAL=2"}, NULL, 3, "conflicts"},
        {{NULL}, NULL, 2, "without a shard index"},
        {{NULL}, "5/4", 0, "--shard '5/4'"},
        {{NULL}, "1/", 0, "--shard '1/'"},
        {{NULL}, "2/4", 3, "conflicts"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sr_shard s;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_code(
            resolve(&s, cases[i].opt, cases[i].count, (const char **)cases[i].env, &err), err,
            SR_E_SHARD_ENV);
        ck_assert_msg(strstr(err.msg, cases[i].says), "case %zu: '%s' lacks '%s'", i, err.msg,
                      cases[i].says);
        ck_assert_int_eq(s.n, 0);
    }
}
END_TEST

START_TEST(shard_partition_stable)
{
    /* Every id is in exactly one shard, and that shard depends on the id alone. */
    char id[32];
    int per[5] = {0};
    for (int i = 0; i < 400; i++) {
        snprintf(id, sizeof(id), "scenario-%d", i);
        int in = 0;
        for (int k = 1; k <= 5; k++) {
            sr_shard s = {k, 5, "option", ""};
            if (sr_shard_selects(&s, id)) {
                in++;
                per[k - 1]++;
            }
        }
        ck_assert_int_eq(in, 1);
    }
    for (int k = 0; k < 5; k++)
        ck_assert_msg(per[k] > 40, "shard %d holds %d of 400", k + 1, per[k]);
    ck_assert_uint_eq(sr_shard_hash(""), 0xcbf29ce484222325ull);
    ck_assert_uint_eq(sr_shard_hash("a"), 0xaf63dc4c8601ec8cull); /* FNV-1a 64 test vector */
}
END_TEST

/* ---- merge ---- */

static sr_run_result *shard_run(int k, int n, const char *rev, const char *const *ids,
                                const sr_verdict *v, size_t count)
{
    sr_run_result *r = NULL;
    ck_assert_int_eq(sr_run_result_new(&r, NULL), 0);
    sr_result_set_str(&r->header.git_rev, rev, NULL);
    sr_result_set_str(&r->header.run_group, "g1", NULL);
    sr_result_set_str(&r->header.selection, "paths=scenarios shards=4", NULL);
    char id[32];
    snprintf(id, sizeof(id), "run-%d", k);
    sr_result_set_str(&r->header.run_id, id, NULL);
    r->header.shard_k = k;
    r->header.shard_n = n;
    r->header.start_unix_ms = 1000 + k;
    for (size_t i = 0; i < count; i++) {
        sr_scenario_result *s;
        ck_assert_int_eq(sr_run_result_add_scenario(&s, r, NULL), 0);
        sr_result_set_str(&s->id, ids[i], NULL);
        sr_result_set_str(&s->file, ids[i], NULL);
        sr_result_record(s, SR_PHASE_REQUEST, 1000 * (uint64_t)(k + 1));
        if (v[i] == SR_VERDICT_FAIL)
            sr_result_check(s, "trace.row_mismatch", NULL, NULL, "x");
        sr_result_set_verdict(s, v[i], NULL);
    }
    sr_run_result_finish(r, 10);
    return r;
}

START_TEST(merge_shards)
{
    const char *a[] = {"b", "a"}, *b[] = {"c"}, *c[] = {"d"};
    const sr_verdict pa[] = {SR_VERDICT_PASS, SR_VERDICT_FAIL}, pb[] = {SR_VERDICT_PASS};
    sr_run_result *s1 = shard_run(1, 3, "r", a, pa, 2), *s2 = shard_run(2, 3, "r", b, pb, 1);
    sr_run_result *s3 = shard_run(3, 3, "r", c, pb, 1);
    const sr_run_result *v[] = {s3, s1, s2};
    const char *names[] = {"c3", "c1", "c2"};
    sr_run_result *m = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_report_merge(&m, v, names, 3, &err), err);
    ck_assert_uint_eq(m->n_scenarios, 4);
    ck_assert_str_eq(m->scenarios[0]->id, "a"); /* ordered by file */
    ck_assert_str_eq(m->scenarios[3]->id, "d");
    ck_assert_uint_eq(m->counts[SR_VERDICT_PASS], 3);
    ck_assert_uint_eq(m->counts[SR_VERDICT_FAIL], 1);
    ck_assert_uint_eq(m->scenarios[0]->n_fired, 1);
    ck_assert_str_eq(m->scenarios[0]->fired[0].name, "trace.row_mismatch");
    ck_assert_uint_eq(sr_hist_count(m->phase[SR_PHASE_REQUEST]), 4);
    ck_assert_int_eq(m->header.shard_n, 0);
    ck_assert_uint_eq(m->header.n_merged_from, 3);
    ck_assert_str_eq(m->header.merged_from[0], "run-1");
    /* each shard's host and command, the shard count, and which shard ran each scenario */
    ck_assert_int_eq(m->header.merged_of, 3);
    ck_assert_uint_eq(m->header.n_shards, 3);
    ck_assert_int_eq(m->header.shards[2].k, 3);
    ck_assert_str_eq(m->header.shards[0].run_id, "run-1");
    ck_assert_int_eq(m->scenarios[0]->shard, 1);
    ck_assert_int_eq(m->scenarios[3]->shard, 3);
    ck_assert_int_eq((int)m->header.start_unix_ms, 1001);
    ck_assert_int_eq(m->partial, 0);
    sr_run_result_free(m);

    /* a missing shard: merged all the same, partial, the shard named */
    const sr_run_result *two[] = {s1, s3};
    ck_assert_sr_code(sr_report_merge(&m, two, names, 2, &err), err, SR_E_REPORT_SHARD_MISSING);
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(strstr(err.msg, "shard 2/3 (merged:"), "%s", err.msg);
    ck_assert_int_eq(m->partial, 1);
    ck_assert_str_eq(m->partial_reason, "shard 2/3 missing");
    sr_run_result_free(m);
    sr_run_result_free(s1);
    sr_run_result_free(s2);
    sr_run_result_free(s3);
}
END_TEST

/* A merge missing its first, its middle or its last shard of three names that shard (and only
 * it), is partial, and still holds the other two shards' scenarios (docs/internals/testing.md,
 * boundary checklist: each member of a set, first and last). */
START_TEST(merge_names_a_missing_first_middle_or_last_shard)
{
    const char *ids[3][1] = {{"a"}, {"b"}, {"c"}};
    const sr_verdict p[] = {SR_VERDICT_PASS};
    sr_run_result *s[3];
    for (int k = 0; k < 3; k++)
        s[k] = shard_run(k + 1, 3, "r", ids[k], p, 1);
    const char *names[] = {"x", "y"};
    for (int missing = 1; missing <= 3; missing++) {
        const sr_run_result *two[2];
        size_t n = 0;
        for (int k = 1; k <= 3; k++)
            if (k != missing)
                two[n++] = s[k - 1];
        sr_run_result *m = NULL;
        sr_err err = SR_ERR_INIT;
        char want[64];
        ck_assert_sr_code(sr_report_merge(&m, two, names, 2, &err), err, SR_E_REPORT_SHARD_MISSING);
        snprintf(want, sizeof want, "1 of 3 shards missing: shard %d/3 (merged:", missing);
        ck_assert_msg(strstr(err.msg, want), "shard %d missing: %s", missing, err.msg);
        ck_assert_ptr_nonnull(m);
        snprintf(want, sizeof want, "shard %d/3 missing", missing);
        ck_assert_int_eq(m->partial, 1);
        ck_assert_str_eq(m->partial_reason, want);
        ck_assert_uint_eq(m->n_scenarios, 2);
        for (size_t i = 0; i < m->n_scenarios; i++)
            ck_assert_int_ne(m->scenarios[i]->shard, missing);
        sr_run_result_free(m);
    }
    for (int k = 0; k < 3; k++)
        sr_run_result_free(s[k]);
}
END_TEST

START_TEST(merge_refusals)
{
    const char *a[] = {"a"}, *b[] = {"b"};
    const sr_verdict p[] = {SR_VERDICT_PASS};
    sr_run_result *s1 = shard_run(1, 2, "r", a, p, 1), *s2 = shard_run(2, 2, "r", b, p, 1);
    sr_run_result *other = shard_run(2, 2, "other", b, p, 1), *n3 = shard_run(2, 3, "r", b, p, 1);
    sr_run_result *twice = shard_run(2, 2, "r", a, p, 1), *plain = shard_run(1, 2, "r", b, p, 1);
    plain->header.shard_n = plain->header.shard_k = 0;
    const char *names[] = {"x", "y"};
    static const struct {
        int which;
        int code;
        const char *says;
    } cases[] = {
        {0, SR_E_REPORT_RUN_MISMATCH, "git_rev 'other' vs 'r'"},
        {1, SR_E_REPORT_RUN_MISMATCH, "different shard counts"},
        {2, SR_E_REPORT_SCENARIO_TWICE, "scenario 'a' (repeat 1) ran twice"},
        {3, SR_E_REPORT_SHARD_DUPLICATE, "x and y both hold shard 1/2"},
        {4, SR_E_REPORT_RUN_MISMATCH, "y is not a shard"},
        {5, SR_E_REPORT_RUN_MISMATCH, "run_group"},
        /* the selection's message names the first word that differs, also where one line ends
         * first, and comes before the run group a derived group would show */
        {6, SR_E_REPORT_RUN_MISMATCH, "selection (options) 'paths=other' vs 'paths=scenarios'"},
        {7, SR_E_REPORT_RUN_MISMATCH, "selection (options) 'partition=hash-2' vs ''"},
    };
    sr_run_result *group = shard_run(2, 2, "r", b, p, 1);
    sr_result_set_str(&group->header.run_group, "g2", NULL);
    sr_run_result *path = shard_run(2, 2, "r", b, p, 1), *part = shard_run(2, 2, "r", b, p, 1);
    sr_result_set_str(&path->header.selection, "paths=other shards=4", NULL);
    sr_result_set_str(&path->header.run_group, "g3", NULL);
    sr_result_set_str(&part->header.selection, "paths=scenarios shards=4 partition=hash-2", NULL);
    const sr_run_result *second[] = {other, n3, twice, s1, plain, group, path, part};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const sr_run_result *v[] = {s1, second[cases[i].which]};
        sr_run_result *m = NULL;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_code(sr_report_merge(&m, v, names, 2, &err), err, cases[i].code);
        ck_assert_ptr_null(m);
        ck_assert_msg(strstr(err.msg, cases[i].says), "case %zu: %s", i, err.msg);
    }
    sr_run_result *m = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_report_merge(&m, NULL, names, 0, &err), err, SR_E_INVAL);
    sr_run_result *all[] = {s1, s2, other, n3, twice, plain, group, path, part};
    for (size_t i = 0; i < 9; i++)
        sr_run_result_free(all[i]);
}
END_TEST

/* ---- history ---- */

static void add_night(sr_history *h, const char *name, const char *rev, int64_t start,
                      const char *const *ids, const sr_verdict *v, size_t n)
{
    sr_run_result *r = shard_run(1, 1, rev, ids, v, n);
    r->header.start_unix_ms = start;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_history_add(h, name, r, &err), err);
    sr_run_result_free(r);
}

START_TEST(history_analysis)
{
    sr_history *h = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_history_new(&h, &err), err);
    const char *ids[] = {"ok", "breaks", "mixed", "mixed"};
    const sr_verdict P = SR_VERDICT_PASS, F = SR_VERDICT_FAIL;
    const sr_verdict n1[] = {P, P, P, P}, n2[] = {P, F, P, F}, n3[] = {P, F, P, P};
    /* added out of order: sorted by start time */
    add_night(h, "n3", "r2", 300, ids, n3, 3);
    add_night(h, "n1", "r1", 100, ids, n1, 3);
    add_night(h, "n2", "r2", 200, ids, n2, 4); /* mixed: one pass, one fail in a night */
    ck_assert_sr_ok(sr_history_skip(h, "bad", SR_E_JSON_SYNTAX, "x:1:1: invalid JSON", &err), err);
    ck_assert_sr_ok(sr_history_finish(h, 0, &err), err);
    ck_assert_uint_eq(h->n_nights, 3);
    ck_assert_str_eq(h->nights[0].name, "n1");
    ck_assert_uint_eq(h->n_scenarios, 3);
    const sr_hscenario *ok = &h->scenarios[0], *br = &h->scenarios[1], *mx = &h->scenarios[2];
    ck_assert_str_eq(br->id, "breaks"); /* indexed in the order first seen */
    ck_assert_int_eq(ok->failing || ok->flaky, 0);
    ck_assert_int_eq(br->failing, 1);
    ck_assert_int_eq((int)br->first_fail, 1);
    ck_assert_int_eq((int)br->last_pass, 0);
    ck_assert_int_eq(mx->flaky, 1);
    ck_assert_int_eq(mx->timeline[1], SR_HCELL_MIXED);
    ck_assert_msg(strstr(mx->flaky_why, "night n2"), "%s", mx->flaky_why);
    sr_buf b = SR_BUF_INIT;
    ck_assert_sr_ok(sr_history_render_text(&b, h, &err), err);
    ck_assert_ptr_nonnull(strstr(b.data, "SKIPPED bad: json.syntax: x:1:1: invalid JSON"));
    ck_assert_ptr_nonnull(strstr(b.data, "FAILING breaks: first failing night n2 (git r2)"));
    sr_buf_release(&b);
    sr_history_free(h);

    /* --last 1 keeps n3: "breaks" fails with no pass in the window, nothing flakes */
    ck_assert_sr_ok(sr_history_new(&h, &err), err);
    add_night(h, "n1", "r1", 100, ids, n1, 3);
    add_night(h, "n2", "r2", 200, ids, n2, 4);
    add_night(h, "n3", "r2", 300, ids, n3, 3);
    ck_assert_sr_ok(sr_history_finish(h, 1, &err), err);
    ck_assert_uint_eq(h->n_nights, 1);
    ck_assert_uint_eq(h->dropped, 2);
    ck_assert_int_eq(h->scenarios[1].failing, 1);
    ck_assert_int_eq((int)h->scenarios[1].last_pass, -1);
    ck_assert_int_eq(h->scenarios[2].flaky, 0);
    sr_history_free(h);
}
END_TEST

/* The partition's fingerprint: the order of the ids does not change it; a moved id, a missing
 * one or another one does. */
START_TEST(shard_partition_fingerprint)
{
    const char *ids[] = {"a", "b", "c", "d"}, *rev[] = {"d", "c", "b", "a"};
    const char *other[] = {"a", "b", "c", "e"};
    const int of[] = {1, 2, 1, 2}, rev_of[] = {2, 1, 2, 1}, moved[] = {1, 2, 2, 2};
    const int swapped[] = {2, 1, 2, 1};
    uint64_t fp = sr_shard_partition_fp(ids, of, 4);
    ck_assert_uint_eq(sr_shard_partition_fp(rev, rev_of, 4), fp);
    ck_assert_uint_ne(sr_shard_partition_fp(ids, moved, 4), fp);
    ck_assert_uint_ne(sr_shard_partition_fp(ids, swapped, 4), fp);
    ck_assert_uint_ne(sr_shard_partition_fp(ids, of, 3), fp);
    ck_assert_uint_ne(sr_shard_partition_fp(other, of, 4), fp);
    sr_shard s = {1, 4, "option", ""};
    for (int i = 0; i < 4; i++)
        for (int k = 1; k <= 4; k++) {
            s.k = k;
            ck_assert_int_eq(sr_shard_selects(&s, ids[i]), sr_shard_of(&s, ids[i]) == k);
        }
}
END_TEST

/* Fixed durations: the longest-first greedy partition, within max(1.2 x mean, longest). */
START_TEST(shard_balance_fixed)
{
    char *tid[] = {"a", "b", "c", "d", "e", "f"}; /* sorted, as sr_shard_timings_load keeps */
    double tms[] = {100, 90, 60, 50, 40, 10};
    sr_shard_timings t = {tid, tms, 6};
    const char *ids[] = {"f", "e", "d", "c", "b", "a", "new"}; /* "new": the mean, 58.33 */
    int of[7];
    double load[3];
    sr_shard s = {2, 3, "option", ""};
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_shard_balance(of, load, &s, ids, 7, &t, &err), err);
    /* longest first, each to the least loaded: a -> 1, b -> 2, c -> 3, new -> 3, d -> 2,
     * e -> 1, f -> 3; loads 140, 140, 128.3 */
    const int want[] = {3, 1, 2, 3, 2, 1, 3};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(of[i], want[i]);
    ck_assert(load[0] == 140 && load[1] == 140 && load[2] > 128.3 && load[2] < 128.4);
    ck_assert(140 <= 1.2 * (load[0] + load[1] + load[2]) / 3);
    ck_assert(sr_shard_timings_get(&t, "c") == 60 && sr_shard_timings_get(&t, "zz") < 0);
    const char **mine = NULL;
    size_t n = 0;
    ck_assert_sr_code(
        sr_shard_balanced_ids(&mine, &n, NULL, &s, "/nonexistent/t.json", ids, 7, &err), err,
        SR_E_IO);
    ck_assert_ptr_null(mine);
    ck_assert_sr_code(sr_shard_balance(of, NULL, &(sr_shard){0, 0, "", ""}, ids, 7, &t, &err), err,
                      SR_E_INVAL);
}
END_TEST

START_TEST(history_limits)
{
    sr_history *h = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_history_new(&h, &err), err);
    for (int i = 0; i < SR_HISTORY_MAX_NIGHTS; i++)
        ck_assert_sr_ok(sr_history_skip(h, "x", SR_E_IO, "", &err), err);
    ck_assert_sr_code(sr_history_skip(h, "y", SR_E_IO, "", &err), err, SR_E_LIMIT);
    const char *ids[] = {"a"};
    const sr_verdict p[] = {SR_VERDICT_PASS};
    sr_run_result *r = shard_run(1, 1, "r", ids, p, 1);
    ck_assert_sr_code(sr_history_add(h, "z", r, &err), err, SR_E_LIMIT);
    sr_run_result_free(r);
    sr_history_free(h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fleet");
    TCase *tc = tcase_create("fleet");
    tcase_add_test(tc, shard_sources);
    tcase_add_test(tc, shard_errors);
    tcase_add_test(tc, shard_partition_stable);
    tcase_add_test(tc, merge_shards);
    tcase_add_test(tc, merge_names_a_missing_first_middle_or_last_shard);
    tcase_add_test(tc, merge_refusals);
    tcase_add_test(tc, history_analysis);
    tcase_add_test(tc, history_limits);
    tcase_add_test(tc, shard_balance_fixed);
    tcase_add_test(tc, shard_partition_fingerprint);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
