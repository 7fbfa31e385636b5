/*
 * The junit reporter: junit.xml (report.h), in the structure of the common Ant/Jenkins JUnit
 * schema (tests/junit.xsd): testsuites -> testsuite per scenario folder -> testcase per scenario
 * execution, with testcase properties as pytest and Jenkins write them.
 */
#include "report_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void attr(sr_rw *w, const char *name, const char *v)
{
    sr_rw_printf(w, " %s=\"", name);
    sr_rw_xml(w, v ? v : "", 1);
    sr_rw_puts(w, "\"");
}

static void property(sr_rw *w, const char *indent, const char *name, const char *v)
{
    if (!v)
        return;
    sr_rw_printf(w, "%s<property", indent);
    attr(w, "name", name);
    attr(w, "value", v);
    sr_rw_puts(w, "/>\n");
}

/*
 * JUnit timestamps carry no zone (the Ant schema's pattern); ours are UTC. A start time that is
 * not "YYYY-mm-ddTHH:MM:SS..." (a hand-edited results.json) becomes the epoch.
 */
static void timestamp(char *buf, size_t cap, const char *iso)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    int ok = iso != NULL && strlen(iso) >= sizeof(shape) - 1;
    for (size_t i = 0; ok && i < sizeof(shape) - 1; i++)
        ok = shape[i] == 'd' ? iso[i] >= '0' && iso[i] <= '9' : iso[i] == shape[i];
    snprintf(buf, cap, "%.19s", ok ? iso : "1970-01-01T00:00:00");
}

typedef struct tally {
    size_t tests, failures, errors, skipped;
    double ms;
} tally;

static void count(tally *t, const sr_scenario_result *s)
{
    t->tests++;
    t->failures += s->verdict == SR_VERDICT_FAIL;
    /* An interrupted scenario did not finish: an error (CI shows it), never a pass or skip. */
    t->errors += s->verdict == SR_VERDICT_ERROR || s->verdict == SR_VERDICT_INTERRUPTED;
    t->skipped += s->verdict == SR_VERDICT_SKIP;
    t->ms += s->wall_ms > 0 ? s->wall_ms : 0;
}

static void tally_attrs(sr_rw *w, const tally *t)
{
    sr_rw_printf(w, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.3f\"",
                 t->tests, t->failures, t->errors, t->skipped, t->ms / 1000.0);
}

/* The details of a failure or an error: reason, checks, repro, artifacts. */
static void details(sr_rw *w, const sr_scenario_result *s)
{
    sr_rw_xml(w, s->reason, 0);
    sr_rw_puts(w, "\n");
    for (size_t i = 0; i < s->n_checks; i++) {
        const sr_check *c = &s->checks[i];
        sr_rw_puts(w, c->expected ? "expected check " : "check ");
        sr_rw_xml(w, c->name, 0);
        if (c->classification[0]) {
            sr_rw_puts(w, " [");
            sr_rw_xml(w, c->classification, 0);
            sr_rw_puts(w, "]");
        }
        sr_rw_puts(w, ": ");
        sr_rw_xml(w, c->message, 0);
        sr_rw_puts(w, "\n");
    }
    if (s->checks_dropped)
        sr_rw_printf(w, "... %llu more firings not kept\n", (unsigned long long)s->checks_dropped);
    for (size_t i = 0; i < s->n_expect_checks; i++)
        if (!sr_report_fired(s, s->expect_checks[i])) {
            sr_rw_puts(w, "expected check did not fire: ");
            sr_rw_xml(w, s->expect_checks[i], 0);
            sr_rw_puts(w, "\n");
        }
    sr_rw_puts(w, "repro: ");
    sr_rw_xml(w, s->repro ? s->repro : "?", 0);
    sr_rw_puts(w, "\n");
    if (s->artifacts) {
        sr_rw_puts(w, "artifacts: ");
        sr_rw_xml(w, s->artifacts, 0);
        sr_rw_puts(w, "\n");
    }
}

/* The check name a failure is typed with: the first unexpected one, else an unfired one. */
static const char *failure_type(const sr_scenario_result *s)
{
    const sr_check *c = sr_report_first_unexpected(s);
    if (c)
        return c->name;
    for (size_t i = 0; i < s->n_expect_checks; i++)
        if (!sr_report_fired(s, s->expect_checks[i]))
            return s->expect_checks[i];
    return "expect.verdict";
}

static const char *error_type(const sr_scenario_result *s)
{
    for (size_t i = 0; i < s->n_steps; i++)
        if (s->steps[i].code)
            return sr_report_code_name(s->steps[i].code);
    return "harness.error";
}

static void system_out(sr_rw *w, const sr_scenario_result *s)
{
    if (!s->n_steps && !s->n_fired && !s->n_skipped)
        return;
    sr_rw_puts(w, "      <system-out>");
    for (size_t i = 0; i < s->n_steps; i++) {
        const sr_step_timing *t = &s->steps[i];
        sr_rw_printf(w, "step %d ", t->index);
        sr_rw_xml(w, t->kind, 0);
        if (t->name[0]) {
            sr_rw_puts(w, " ");
            sr_rw_xml(w, t->name, 0);
        }
        sr_rw_printf(w, ": %.3f..%.3f ms%s%s\n", t->start_ms, t->end_ms, t->code ? " error " : "",
                     t->code ? sr_report_code_name(t->code) : "");
    }
    for (size_t i = 0; i < s->n_fired; i++) {
        sr_rw_puts(w, "fired ");
        sr_rw_xml(w, s->fired[i].name, 0);
        sr_rw_printf(w, " x%llu%s\n", (unsigned long long)s->fired[i].count,
                     s->fired[i].expected ? " (expected)" : "");
    }
    for (size_t i = 0; i < s->n_skipped; i++) {
        sr_rw_puts(w, "skipped check ");
        sr_rw_xml(w, s->skipped[i].name, 0);
        sr_rw_puts(w, ": ");
        sr_rw_xml(w, s->skipped[i].reason, 0);
        sr_rw_puts(w, "\n");
    }
    sr_rw_puts(w, "</system-out>\n");
}

static void testcase(sr_rw *w, const sr_scenario_result *s, const char *suite)
{
    char id[160], cls[300], num[32];
    snprintf(cls, sizeof(cls), "syncroll.%s", suite);
    for (char *p = cls; *p; p++)
        *p = *p == '/' ? '.' : *p;
    sr_rw_puts(w, "    <testcase");
    attr(w, "name", sr_report_display_id(id, sizeof(id), s));
    attr(w, "classname", cls);
    sr_rw_printf(w, " time=\"%.3f\"", (s->wall_ms > 0 ? s->wall_ms : 0) / 1000.0);
    if (s->file)
        attr(w, "file", s->file);
    sr_rw_puts(w, ">\n      <properties>\n");
    snprintf(num, sizeof(num), "%llu", (unsigned long long)s->seed);
    property(w, "        ", "seed", num);
    property(w, "        ", "repro", s->repro);
    if (s->repeat > 1) {
        snprintf(num, sizeof(num), "%d", s->repeat);
        property(w, "        ", "repeat", num);
    }
    property(w, "        ", "expanded", s->expanded);
    property(w, "        ", "artifacts", s->artifacts);
    sr_rw_puts(w, "      </properties>\n");
    if (s->verdict == SR_VERDICT_SKIP) {
        sr_rw_puts(w, "      <skipped");
        attr(w, "message", s->reason);
        sr_rw_puts(w, "/>\n");
    } else if (s->verdict == SR_VERDICT_FAIL || s->verdict == SR_VERDICT_ERROR ||
               s->verdict == SR_VERDICT_INTERRUPTED) {
        const char *tag = s->verdict == SR_VERDICT_FAIL ? "failure" : "error";
        sr_rw_printf(w, "      <%s", tag);
        attr(w, "message", s->reason);
        attr(w, "type",
             s->verdict == SR_VERDICT_FAIL          ? failure_type(s)
             : s->verdict == SR_VERDICT_INTERRUPTED ? "run.interrupted"
                                                    : error_type(s));
        sr_rw_puts(w, ">");
        details(w, s);
        sr_rw_printf(w, "</%s>\n", tag);
    }
    if (s->verdict != SR_VERDICT_SKIP)
        system_out(w, s);
    sr_rw_puts(w, "    </testcase>\n");
}

static void suite_properties(sr_rw *w, const sr_run_result *run)
{
    const sr_run_header *h = &run->header;
    char num[32];
    sr_rw_puts(w, "    <properties>\n");
    if (run->partial)
        property(w, "      ", "partial",
                 run->partial_reason ? run->partial_reason : "the run did not finish");
    property(w, "      ", "run_id", h->run_id);
    property(w, "      ", "version", h->version);
    property(w, "      ", "git_rev", h->git_rev);
    property(w, "      ", "command", h->command);
    property(w, "      ", "run_group", h->run_group);
    if (h->shard_n) {
        snprintf(num, sizeof(num), "%d/%d", h->shard_k, h->shard_n);
        property(w, "      ", "shard", num);
    }
    if (h->n_merged_from) {
        snprintf(num, sizeof(num), "%zu", h->n_merged_from);
        property(w, "      ", "merged_shards", num);
    }
    if (h->has_seed) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)h->seed);
        property(w, "      ", "seed", num);
    }
    sr_rw_puts(w, "    </properties>\n");
}

void sr_report_junit(sr_rw *w, const sr_run_result *run)
{
    size_t n = run->n_scenarios, n_suites = 0;
    char ts[32], (*suite)[256] = calloc(n + 1, sizeof(*suite));
    size_t *of = calloc(n + 1, sizeof(size_t)), *first = calloc(n + 1, sizeof(size_t));
    size_t *order = calloc(n + 1, sizeof(size_t));
    if (!suite || !of || !first || !order) {
        if (!w->rc)
            w->rc = sr_err_set(w->err, SR_E_NOMEM, "cannot build junit.xml");
        free(suite), free(of), free(first), free(order);
        return;
    }
    /* In each suite, failed and errored test cases first (report_priv.h), as the other tables. */
    sr_report_order(run, order);
    /* Suites in order of first appearance; of[i] is scenario i's suite. */
    tally all = {0};
    for (size_t i = 0; i < n; i++) {
        sr_report_suite(suite[i], sizeof(suite[i]), run->scenarios[i]->file);
        count(&all, run->scenarios[i]);
        size_t k = 0;
        while (k < n_suites && strcmp(suite[first[k]], suite[i]) != 0)
            k++;
        if (k == n_suites)
            first[n_suites++] = i;
        of[i] = k;
    }
    timestamp(ts, sizeof(ts), run->header.start_iso);
    sr_rw_puts(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"syncroll\"");
    tally_attrs(w, &all);
    sr_rw_printf(w, " timestamp=\"%s\">\n", ts);
    for (size_t k = 0; k < n_suites; k++) {
        const char *name = suite[first[k]];
        tally t = {0};
        for (size_t j = first[k]; j < n; j++)
            if (of[j] == k)
                count(&t, run->scenarios[j]);
        sr_rw_puts(w, "  <testsuite");
        attr(w, "name", name);
        tally_attrs(w, &t);
        sr_rw_printf(w, " timestamp=\"%s\"", ts);
        attr(w, "hostname", run->header.hostname ? run->header.hostname : "localhost");
        sr_rw_printf(w, " id=\"%zu\">\n", k);
        suite_properties(w, run);
        for (size_t j = 0; j < n; j++)
            if (of[order[j]] == k)
                testcase(w, run->scenarios[order[j]], name);
        sr_rw_puts(w, "  </testsuite>\n");
    }
    sr_rw_puts(w, "</testsuites>\n");
    free(suite), free(of), free(first), free(order);
}
