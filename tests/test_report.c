/* Reporters on a synthetic run: list parsing, results.json round trip, JUnit, HTML, text, compare.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "report/report.h"
#include "report_synth.h"
#include "sr_test.h"

static char *render(const sr_run_result *run, unsigned bit)
{
    sr_buf b = SR_BUF_INIT;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_report_render(&b, run, bit, &e), e);
    ck_assert_ptr_nonnull(b.data);
    return b.data;
}

static size_t occurrences(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* 1 if s is valid UTF-8 without C0 controls other than tab, LF and CR. */
static int clean_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80             ? 1
                : (*p & 0xE0) == 0xC0 ? 2
                : (*p & 0xF0) == 0xE0 ? 3
                : (*p & 0xF8) == 0xF0 ? 4
                                      : 0;
        if (n == 0 || (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r'))
            return 0;
        for (int i = 1; i < n; i++)
            if ((p[i] & 0xC0) != 0x80)
                return 0;
        p += n;
    }
    return 1;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(parse_list)
{
    unsigned w = 0;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_report_parse_list(&w, "text,json", &e), e);
    ck_assert_uint_eq(w, SR_REPORT_TEXT | SR_REPORT_JSON);
    ck_assert_sr_ok(sr_report_parse_list(&w, " junit , html ", &e), e);
    ck_assert_uint_eq(w, SR_REPORT_JUNIT | SR_REPORT_HTML);
    ck_assert_sr_ok(sr_report_parse_list(&w, "all", &e), e);
    ck_assert_uint_eq(w, SR_REPORT_ALL);
    ck_assert_sr_code(sr_report_parse_list(&w, "text,pdf", &e), e, SR_E_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "pdf"));
    ck_assert_sr_code(sr_report_parse_list(&w, "", &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_report_parse_list(&w, "text,,json", &e), e, SR_E_INVAL);
    ck_assert_str_eq(sr_report_file_name(SR_REPORT_JUNIT), "junit.xml");
    ck_assert_ptr_null(sr_report_file_name(SR_REPORT_ALL));
    /* The names of the help texts come from the reporter table, in its order. */
    char names[128];
    ck_assert_str_eq(sr_report_names(names, sizeof(names), SR_REPORT_ALL, ","),
                     "text,json,junit,html");
    ck_assert_str_eq(sr_report_names(names, sizeof(names), SR_REPORT_HTML | SR_REPORT_TEXT, ", "),
                     "text, html");
    ck_assert_str_eq(sr_report_names(names, 7, SR_REPORT_ALL, ","), "text");
    /* Every row of the table parses back to its own bit and names its own file. */
    for (unsigned bit = 1; bit & SR_REPORT_ALL; bit <<= 1) {
        sr_report_names(names, sizeof(names), bit, ",");
        ck_assert_sr_ok(sr_report_parse_list(&w, names, &e), e);
        ck_assert_uint_eq(w, bit);
        ck_assert_ptr_nonnull(sr_report_file_name(bit));
    }
    ck_assert_uint_eq(SR_REPORT_ALL, (1u << SR_REPORTER_COUNT) - 1u);
}
END_TEST

START_TEST(latency_rows)
{
    sr_run_result *run = synth_run("/tmp/run", 1);
    sr_latency_row r;
    const sr_hist *h = run->phase[SR_PHASE_REQUEST];
    sr_report_latency(&r, h);
    ck_assert_uint_eq(r.count, sr_hist_count(h));
    ck_assert_uint_eq(r.p99, sr_hist_percentile(h, 99));
    ck_assert_uint_eq(r.p999, sr_hist_percentile(h, 99.9));
    ck_assert(r.min <= r.p50 && r.p50 <= r.p90 && r.p90 <= r.p99 && r.p99 <= r.max);
    sr_report_latency(&r, NULL);
    ck_assert_uint_eq(r.count, 0);
    sr_run_result_free(run);
}
END_TEST

START_TEST(junit_structure_and_escaping)
{
    sr_run_result *run = synth_run("/tmp/run", 1);
    char *x = render(run, SR_REPORT_JUNIT);
    ck_assert_ptr_nonnull(strstr(x, "<testsuites name=\"syncroll\" tests=\"5\" failures=\"1\" "
                                    "errors=\"1\" skipped=\"1\""));
    ck_assert_uint_eq(occurrences(x, "<testsuite "), 3);
    ck_assert_ptr_nonnull(strstr(x, "<testsuite name=\"nightly\" tests=\"3\" failures=\"0\" "
                                    "errors=\"0\" skipped=\"1\""));
    ck_assert_ptr_nonnull(strstr(x, "<testsuite name=\"faults/http\" tests=\"1\" failures=\"0\" "
                                    "errors=\"1\" skipped=\"0\""));
    ck_assert_ptr_nonnull(strstr(x, "<testsuite name=\"bugs\" tests=\"1\" failures=\"1\" "
                                    "errors=\"0\" skipped=\"0\""));
    ck_assert_ptr_nonnull(strstr(x, "classname=\"syncroll.faults.http\""));
    ck_assert_uint_eq(occurrences(x, "<testcase "), 5);
    ck_assert_ptr_nonnull(strstr(x, "name=\"row-mismatch &lt;&amp;&gt;&quot;&apos;\""));
    ck_assert_ptr_nonnull(strstr(x, "name=\"minimal #2\""));
    ck_assert_ptr_nonnull(strstr(x, "<failure message=\"unexpected check trace.row_mismatch "
                                    "&lt;x&gt;\" type=\"trace.row_mismatch\">"));
    ck_assert_ptr_nonnull(strstr(x, "got &lt;3,7&gt; &amp; want \xEF\xBF\xBD \xEF\xBF\xBD [5,1]"));
    ck_assert_ptr_nonnull(strstr(x, "<error message=\"cannot spawn engine 0: No such file\" "
                                    "type=\"proc.spawn\">"));
    ck_assert_ptr_nonnull(strstr(x, "<skipped message=\"needs engines at engines.urls\"/>"));
    ck_assert_ptr_nonnull(strstr(x, "<property name=\"seed\" value=\"7\"/>"));
    ck_assert_ptr_nonnull(
        strstr(x, "<property name=\"repro\" value=\"syncroll run scenarios/bugs/row.json"));
    ck_assert_ptr_nonnull(strstr(x, "value=\"syncroll run --tag &quot;a&amp;b&quot; scenarios\""));
    ck_assert_ptr_nonnull(strstr(x, "hostname=\"ci&lt;&amp;&gt;host\""));
    ck_assert_ptr_nonnull(strstr(x, "timestamp=\"2025-01-31T12:00:00\""));
    ck_assert_ptr_nonnull(strstr(x, "expected check did not fire: sync.partial_update\n"));
    ck_assert_ptr_nonnull(strstr(x, "time=\"0.341\""));
    ck_assert(clean_utf8(x));
    ck_assert_uint_eq(occurrences(x, "<testsuites"), 1);
    free(x);
    sr_run_result_free(run);
}
END_TEST

START_TEST(html_self_contained)
{
    sr_run_result *run = synth_run("/tmp/run", 1);
    char *x = render(run, SR_REPORT_HTML);
    ck_assert(strncmp(x, "<!DOCTYPE html>\n<html", 21) == 0);
    ck_assert_ptr_null(strstr(x, "<script"));
    ck_assert_ptr_null(strstr(x, "<link"));
    ck_assert_ptr_null(strstr(x, "src="));
    ck_assert_ptr_null(strstr(x, "url("));
    ck_assert_ptr_null(strstr(x, "@import"));
    for (const char *p = x; (p = strstr(p, "href=\"")) != NULL; p += 6)
        ck_assert_msg(strncmp(p + 6, "http", 4) != 0 && p[6] != '/', "external link: %.60s", p);
    /* One histogram per phase (the synthetic run records every phase) and the timeline. */
    ck_assert_uint_eq(occurrences(x, "<svg "), SR_PHASE_COUNT + 1);
    ck_assert_ptr_nonnull(strstr(x, "row-mismatch &lt;&amp;&gt;\"'"));
    ck_assert_ptr_nonnull(strstr(x, "href=\"artifacts/row-mismatch &lt;&amp;&gt;&quot;&apos;\""));
    ck_assert_ptr_nonnull(strstr(x, "<pre>syncroll run scenarios/bugs/row.json --seed 7</pre>"));
    ck_assert_ptr_nonnull(strstr(x, "expected check did not fire: <code>sync.partial_update"));
    ck_assert_ptr_nonnull(strstr(x, "id=\"f-1\""));
    ck_assert_ptr_nonnull(strstr(x, "id=\"f-2\""));
    ck_assert_ptr_null(strstr(x, "id=\"f-0\""));
    ck_assert_ptr_nonnull(strstr(x, ">2 pass</span>"));
    ck_assert_ptr_nonnull(strstr(x, ">1 skip</span>"));
    ck_assert_ptr_nonnull(strstr(x, "stopped by proc.spawn"));
    ck_assert(clean_utf8(x));
    free(x);
    sr_run_result_free(run);
}
END_TEST

START_TEST(text_summary)
{
    sr_run_result *run = synth_run("/tmp/run", 1);
    char *x = render(run, SR_REPORT_TEXT);
    size_t n = strlen(x);
    const char *last = "\n2 passed, 2 failed, 1 skipped\n";
    ck_assert(n > strlen(last) && strcmp(x + n - strlen(last), last) == 0);
    ck_assert_ptr_nonnull(strstr(x, "PASS  minimal #2  0.10 s\n"));
    ck_assert_ptr_nonnull(strstr(x, "SKIP  external  needs engines at engines.urls\n"));
    ck_assert_ptr_nonnull(strstr(x, "      repro: syncroll run scenarios/bugs/row.json"));
    ck_assert_ptr_nonnull(strstr(x, "check trace.row_mismatch [off_by_one] (step 0, engine 1, "
                                    "sample 1, turn 2, row 41, layer 3): "));
    ck_assert_ptr_nonnull(strstr(x, "expected check did not fire: sync.partial_update"));
    ck_assert_ptr_nonnull(strstr(x, "step 3 (mystery) stopped: proc.spawn"));
    ck_assert_ptr_nonnull(strstr(x, "\nlatency          count        min        p50"));
    ck_assert_ptr_nonnull(strstr(x, "\nscenario "));
    ck_assert(clean_utf8(x));
    free(x);
    sr_run_result_free(run);
}
END_TEST

static void same_hist(const sr_hist *a, const sr_hist *b)
{
    ck_assert_uint_eq(sr_hist_count(a), sr_hist_count(b));
    ck_assert_uint_eq(sr_hist_min(a), sr_hist_min(b));
    ck_assert_uint_eq(sr_hist_max(a), sr_hist_max(b));
    double ma = sr_hist_mean(a), mb = sr_hist_mean(b);
    ck_assert_msg(fabs(ma - mb) <= 1e-12 * (ma > 1 ? ma : 1), "mean %.17g vs %.17g", ma, mb);
    for (size_t i = 0; i < sr_hist_buckets(); i++)
        ck_assert_uint_eq(sr_hist_bucket_count(a, i), sr_hist_bucket_count(b, i));
}

/* Writes the json of run to a file and loads it back. */
static sr_run_result *round_trip(const sr_run_result *run, char **json_out)
{
    char path[] = "/tmp/sr_report_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char *j = render(run, SR_REPORT_JSON);
    write_text(path, j);
    sr_run_result *back = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_report_load(&back, path, &e), e);
    unlink(path);
    *json_out = j;
    return back;
}

START_TEST(json_round_trip_is_exact)
{
    sr_run_result *run = synth_run("/tmp/run", 1);
    /* Thread CPU samples of two phases, in a scenario and in the run's sums. */
    sr_result_record_cpu(run->scenarios[0], SR_PHASE_SPLICE, 12345);
    sr_result_record_cpu(run->scenarios[0], SR_PHASE_SPLICE, 1000);
    sr_result_record_cpu(run->scenarios[2], SR_PHASE_RECORD, 777);
    sr_run_result_finish(run, run->wall_ms);
    ck_assert_uint_eq(run->cpu[SR_PHASE_SPLICE].count, 2);
    ck_assert_uint_eq(run->cpu[SR_PHASE_SPLICE].sum_ns, 13345);
    char *j1;
    sr_run_result *back = round_trip(run, &j1);
    cJSON *doc = cJSON_Parse(j1);
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "phases"), "splice"),
        "cpu");
    ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cpu, "count")) == 2);
    ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cpu, "sum_ns")) == 13345);
    cJSON_Delete(doc);
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        ck_assert_uint_eq(back->scenarios[0]->cpu[p].count, run->scenarios[0]->cpu[p].count);
        ck_assert_uint_eq(back->scenarios[0]->cpu[p].sum_ns, run->scenarios[0]->cpu[p].sum_ns);
        ck_assert_uint_eq(back->scenarios[2]->cpu[p].sum_ns, run->scenarios[2]->cpu[p].sum_ns);
    }
    ck_assert_uint_eq(back->scenarios[2]->cpu[SR_PHASE_RECORD].count, 1);
    char *j2 = render(back, SR_REPORT_JSON);
    ck_assert_str_eq(j1, j2);
    for (unsigned bit = SR_REPORT_TEXT; bit <= SR_REPORT_HTML; bit <<= 1) {
        char *a = render(run, bit), *b = render(back, bit);
        ck_assert_msg(strcmp(a, b) == 0, "%s differs after reload", sr_report_file_name(bit));
        free(a);
        free(b);
    }
    ck_assert_uint_eq(back->n_scenarios, run->n_scenarios);
    for (size_t i = 0; i < run->n_scenarios; i++)
        for (int p = 0; p < SR_PHASE_COUNT; p++)
            same_hist(run->scenarios[i]->phase[p], back->scenarios[i]->phase[p]);
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        same_hist(run->phase[p], back->phase[p]);
    ck_assert_str_eq(back->scenarios[1]->id, SYNTH_HOSTILE_ID);
    ck_assert_int_eq(back->scenarios[1]->fired[0].expected, 0);
    ck_assert_int_eq(back->scenarios[2]->steps[3].code, SR_E_PROC_SPAWN);
    ck_assert_int_eq(back->counts[SR_VERDICT_SKIP], 1);
    free(j1);
    free(j2);
    sr_run_result_free(back);
    sr_run_result_free(run);
}
END_TEST

/* A run cut short by a stop signal: every reporter marks it partial, results.json keeps the
 * mark and the verdict through a reload, and the interrupted scenario is a JUnit error. */
START_TEST(partial_run_in_every_report)
{
    sr_run_result *run = synth_run("/tmp/run", 0);
    sr_scenario_result *s = run->scenarios[0];
    sr_result_check(s, "run.interrupted", NULL, NULL, "SIGTERM arrived at step 1");
    sr_result_set_verdict(s, SR_VERDICT_INTERRUPTED, "run.interrupted: SIGTERM at step 1");
    run->partial = 1;
    ck_assert_int_eq(sr_result_set_str(&run->partial_reason, "interrupted by SIGTERM", NULL), 0);
    sr_run_result_finish(run, run->wall_ms);
    ck_assert_uint_eq(run->counts[SR_VERDICT_INTERRUPTED], 1);
    ck_assert_str_eq(sr_verdict_name(SR_VERDICT_INTERRUPTED), "interrupted");

    char *t = render(run, SR_REPORT_TEXT);
    ck_assert_ptr_nonnull(strstr(t, "\nPARTIAL RUN: interrupted by SIGTERM\n"));
    ck_assert_ptr_nonnull(strstr(t, "INTR  "));
    ck_assert_ptr_nonnull(strstr(t, ", 1 interrupted\n"));
    char *x = render(run, SR_REPORT_JUNIT);
    ck_assert_ptr_nonnull(strstr(x, "type=\"run.interrupted\""));
    ck_assert_ptr_nonnull(strstr(x, "<property name=\"partial\" value=\"interrupted by SIGTERM\""));
    char *h = render(run, SR_REPORT_HTML);
    ck_assert_ptr_nonnull(strstr(h, "<p class=\"partial\" id=\"partial\">PARTIAL RUN: "
                                    "interrupted by SIGTERM"));
    char *j1;
    sr_run_result *back = round_trip(run, &j1);
    ck_assert_ptr_nonnull(strstr(j1, "\"partial\":\ttrue"));
    ck_assert_int_eq(back->partial, 1);
    ck_assert_str_eq(back->partial_reason, "interrupted by SIGTERM");
    ck_assert_int_eq(back->scenarios[0]->verdict, SR_VERDICT_INTERRUPTED);
    char *j2 = render(back, SR_REPORT_JSON);
    ck_assert_str_eq(j1, j2);
    free(t), free(x), free(h), free(j1), free(j2);
    sr_run_result_free(back);
    sr_run_result_free(run);
}
END_TEST

/* Histograms of awkward shapes survive the JSON round trip exactly. */
START_TEST(hist_round_trip_shapes)
{
    static const struct {
        uint64_t lo, span;
        int n;
    } shapes[] = {
        {5, 0, 1},    {123456789, 0, 3},         {1000, 1, 2},
        {300, 3, 50}, {1u << 20, 1u << 30, 400}, {1, 1000000000000ull, 1000},
        {0, 2, 9},
    };
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        sr_run_result *run = synth_run("/tmp/run", 1);
        sr_scenario_result *s = run->scenarios[0];
        sr_hist_reset(s->phase[SR_PHASE_APPLY]);
        uint64_t st = k + 99;
        for (int i = 0; i < shapes[k].n; i++)
            sr_hist_record(s->phase[SR_PHASE_APPLY],
                           shapes[k].lo +
                               (shapes[k].span ? synth_rng(&st) % (shapes[k].span + 1) : 0));
        sr_run_result_finish(run, run->wall_ms);
        char *j;
        sr_run_result *back = round_trip(run, &j);
        same_hist(s->phase[SR_PHASE_APPLY], back->scenarios[0]->phase[SR_PHASE_APPLY]);
        free(j);
        sr_run_result_free(back);
        sr_run_result_free(run);
    }
}
END_TEST

static int load_text(const char *text, sr_err *e)
{
    char path[] = "/tmp/sr_report_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    write_text(path, text);
    sr_run_result *run = (sr_run_result *)1;
    int rc = sr_report_load(&run, path, e);
    ck_assert_ptr_null(run);
    unlink(path);
    return rc;
}

START_TEST(load_errors_are_named)
{
    sr_err e = SR_ERR_INIT;
    sr_run_result *run = NULL;
    ck_assert_sr_code(sr_report_load(&run, "/nonexistent/results.json", &e), e, SR_E_IO);
    ck_assert_sr_code(load_text("{\"schema\": 1,", &e), e, SR_E_JSON_SYNTAX);
    ck_assert_sr_code(load_text("[1]", &e), e, SR_E_JSON_SCHEMA);
    ck_assert_sr_code(load_text("{\"schema\": 2, \"scenarios\": []}", &e), e, SR_E_JSON_SCHEMA);
    ck_assert_ptr_nonnull(strstr(e.msg, "unsupported schema 2"));
    ck_assert_sr_code(load_text("{\"schema\": 1, \"scenarios\": {}}", &e), e, SR_E_JSON_SCHEMA);
    ck_assert_sr_code(load_text("{\"schema\": 1, \"scenarios\": [{\"verdict\": \"meh\"}]}", &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_sr_code(load_text("{\"schema\": 1, \"scenarios\": [{\"id\": 5}]}", &e), e,
                      SR_E_JSON_SCHEMA);
    /* Buckets that do not add up to the count. */
    ck_assert_sr_code(load_text("{\"schema\": 1, \"scenarios\": [{\"phases\": {\"request\": "
                                "{\"count\": 3, \"hist\": {\"min_ns\": 5, \"max_ns\": 9, "
                                "\"sum_ns\": 20, \"buckets\": [[5, 1], [9, 1]]}}}}]}",
                                &e),
                      e, SR_E_JSON_SCHEMA);
    /* A lower bound that is not a bucket's. */
    ck_assert_sr_code(load_text("{\"schema\": 1, \"scenarios\": [{\"phases\": {\"request\": "
                                "{\"count\": 1, \"hist\": {\"min_ns\": 300, \"max_ns\": 300, "
                                "\"sum_ns\": 300, \"buckets\": [[257, 1]]}}}}]}",
                                &e),
                      e, SR_E_JSON_SCHEMA);
    /* Samples without a histogram. */
    ck_assert_sr_code(load_text("{\"schema\": 1, \"scenarios\": [{\"phases\": {\"request\": "
                                "{\"count\": 1}}}]}",
                                &e),
                      e, SR_E_JSON_SCHEMA);
}
END_TEST

START_TEST(compare_finds_p99_regressions)
{
    sr_run_result *base = synth_run("/tmp/a", 1), *slow = synth_run("/tmp/b", 2);
    sr_regression *r = NULL;
    size_t n = 0;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_report_compare(&r, &n, slow, base, 20, &e), e);
    /* Every phase doubled: 9 for the run, 9 for "minimal" (two executions merged), 9 for the
     * hostile id; none for the two scenarios without samples. */
    ck_assert_uint_eq(n, 9 + 9 + 9);
    ck_assert_str_eq(r[0].scope, "run");
    ck_assert_int_eq(r[0].phase, SR_PHASE_REQUEST);
    ck_assert(r[0].pct > 90 && r[0].pct < 110);
    free(r);
    ck_assert_sr_ok(sr_report_compare(&r, &n, slow, base, 150, &e), e);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(r);
    ck_assert_sr_ok(sr_report_compare(&r, &n, base, slow, 0, &e), e);
    ck_assert_uint_eq(n, 0);
    ck_assert_sr_code(sr_report_compare(&r, &n, slow, base, -1, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_report_compare(&r, &n, slow, base, NAN, &e), e, SR_E_INVAL);
    sr_run_result_free(base);
    sr_run_result_free(slow);
}
END_TEST

/* Messages are made valid UTF-8 at each edge of the surrogate range and of the code space, in
 * every report (JUnit's XML filter, the JSON and text writers): the neighbours U+D7FF, U+E000
 * and U+10FFFF pass, U+D800, U+DFFF and U+110000 become U+FFFD. */
START_TEST(utf8_edges_in_messages)
{
    sr_run_result *run = NULL;
    ck_assert_int_eq(sr_run_result_new(&run, NULL), 0);
    synth_header(&run->header, "/tmp/run");
    sr_scenario_result *a = synth_add(run, "u", "scenarios/bugs/u.json", 1, 0, 1);
    sr_result_check(a, "trace.row_mismatch", "x", NULL,
                    "A\xED\x9F\xBF|B\xED\xA0\x80|C\xED\xBF\xBF|D\xEE\x80\x80|E\xF4\x8F\xBF\xBF|"
                    "F\xF4\x90\x80\x80|G");
    sr_result_set_verdict(a, SR_VERDICT_FAIL, "v\xED\xBF\xBF|\xED\x9F\xBF");
    sr_run_result_finish(run, 1);
    const unsigned kinds[3] = {SR_REPORT_JUNIT, SR_REPORT_JSON, SR_REPORT_TEXT};
    for (int k = 0; k < 3; k++) {
        char *x = render(run, kinds[k]);
        if (kinds[k] != SR_REPORT_TEXT) { /* the summary shows the verdict, not the checks */
            ck_assert_ptr_nonnull(strstr(x, "A\xED\x9F\xBF|B\xEF\xBF\xBD"));
            ck_assert_ptr_nonnull(strstr(x, "|C\xEF\xBF\xBD"));
            ck_assert_ptr_nonnull(strstr(x, "|D\xEE\x80\x80|E\xF4\x8F\xBF\xBF|F\xEF\xBF\xBD"));
        }
        ck_assert_msg(strstr(x, "v\xEF\xBF\xBD") != NULL, "report %u: verdict reason", kinds[k]);
        ck_assert_msg(strstr(x, "\xED\xA0\x80") == NULL, "report %u keeps U+D800", kinds[k]);
        ck_assert_msg(strstr(x, "\xED\xBF\xBF") == NULL, "report %u keeps U+DFFF", kinds[k]);
        ck_assert_msg(strstr(x, "\xF4\x90\x80\x80") == NULL, "report %u keeps U+110000", kinds[k]);
        ck_assert(clean_utf8(x));
        free(x);
    }
    sr_run_result_free(run);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("core");
    /* Check's 4 s default is a time limit on a loaded CI machine, not a property of reports. */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, parse_list);
    tcase_add_test(tc, latency_rows);
    tcase_add_test(tc, junit_structure_and_escaping);
    tcase_add_test(tc, html_self_contained);
    tcase_add_test(tc, text_summary);
    tcase_add_test(tc, json_round_trip_is_exact);
    tcase_add_test(tc, partial_run_in_every_report);
    tcase_add_test(tc, hist_round_trip_shapes);
    tcase_add_test(tc, load_errors_are_named);
    tcase_add_test(tc, compare_finds_p99_regressions);
    tcase_add_test(tc, utf8_edges_in_messages);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
