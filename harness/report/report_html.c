/*
 * The html reporter: report.html (report.h). One self-contained page, written as well-formed
 * XHTML (so an XML parser checks it) that browsers read as HTML5: inline CSS, inline SVG, no
 * script, no external reference; links point only inside the run folder or the page.
 */
#include "report_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void text(sr_rw *w, const char *s)
{
    sr_rw_xml(w, s, 0);
}

static void tag_text(sr_rw *w, const char *open, const char *s, const char *close)
{
    sr_rw_puts(w, open);
    text(w, s);
    sr_rw_puts(w, close);
}

static void badge(sr_rw *w, sr_verdict v, const char *extra)
{
    sr_rw_printf(w, "<span class=\"badge %s%s\">%s</span>", sr_verdict_name(v), extra,
                 sr_verdict_name(v));
}

/* A merged run's shards: each one's run id, host and command. */
static void shards_table(sr_rw *w, const sr_run_header *h)
{
    sr_rw_puts(w, "<table id=\"shards\">\n<tr><th>shard</th><th>run</th><th>host</th>"
                  "<th>command</th></tr>\n");
    for (size_t i = 0; i < h->n_shards; i++) {
        const sr_merged_shard *m = &h->shards[i];
        sr_rw_printf(w, "<tr><td>%d/%d</td>", m->k, h->merged_of);
        tag_text(w, "<td>", m->run_id ? m->run_id : "?", "</td>");
        tag_text(w, "<td>", m->hostname ? m->hostname : "?", "</td>");
        tag_text(w, "<td><code>", m->command ? m->command : "?", "</code></td></tr>\n");
    }
    sr_rw_puts(w, "</table>\n");
}

static void header(sr_rw *w, const sr_run_result *run)
{
    const sr_run_header *h = &run->header;
    char t[32];
    tag_text(w, "<h1>syncroll run ", h->run_id ? h->run_id : "?", "</h1>\n");
    /* The partial-run banner: a run cut short must not read as a complete one. */
    if (run->partial)
        tag_text(w, "<p class=\"partial\" id=\"partial\">PARTIAL RUN: ",
                 run->partial_reason ? run->partial_reason : "the run did not finish",
                 run->counts[SR_VERDICT_INTERRUPTED]
                     ? "; the scenarios marked interrupted did not finish.</p>\n"
                     : ".</p>\n");
    sr_rw_puts(w, "<div>");
    for (int v = 0; v < SR_VERDICT_COUNT; v++) {
        sr_rw_printf(w, "<span class=\"badge big %s\">%zu %s</span>",
                     sr_verdict_name((sr_verdict)v), run->counts[v],
                     sr_verdict_name((sr_verdict)v));
    }
    sr_rw_puts(w, "</div>\n<p class=\"meta\">started ");
    text(w, h->start_iso[0] ? h->start_iso : "?");
    sr_rw_printf(w, ", wall %s, syncroll ", sr_report_fmt_ns(t, sizeof(t), run->wall_ms * 1e6));
    text(w, h->version ? h->version : "?");
    if (h->git_rev) {
        sr_rw_puts(w, " (git ");
        text(w, h->git_rev);
        sr_rw_puts(w, ")");
    }
    sr_rw_puts(w, ", ");
    text(w, h->hostname ? h->hostname : "?");
    sr_rw_puts(w, " (");
    text(w, h->arch ? h->arch : "?");
    sr_rw_printf(w, ", %d CPUs, ", h->cpus);
    text(w, h->kernel ? h->kernel : "?");
    sr_rw_puts(w, ")</p>\n<p class=\"meta\">command: <code>");
    text(w, h->command ? h->command : "?");
    sr_rw_puts(w, "</code>");
    if (h->has_seed)
        sr_rw_printf(w, " seed %llu", (unsigned long long)h->seed);
    sr_rw_printf(w, ", jobs %d, repeat %d", h->jobs, h->repeat);
    if (h->shard_n) {
        sr_rw_printf(w, ", shard %d/%d from ", h->shard_k, h->shard_n);
        text(w, h->shard_source ? h->shard_source : "?");
    }
    if (h->n_merged_from)
        sr_rw_printf(w, ", merged from %zu of %d shards", h->n_merged_from, h->merged_of);
    if (h->run_group) {
        sr_rw_puts(w, ", run group ");
        text(w, h->run_group);
    }
    sr_rw_puts(w, "</p>\n");
    if (h->n_shards)
        shards_table(w, h);
}

static void fired_list(sr_rw *w, const sr_scenario_result *s)
{
    for (size_t i = 0; i < s->n_fired; i++) {
        sr_rw_puts(w, i ? "<br/>" : "");
        tag_text(w, "<code>", s->fired[i].name, "</code>");
        if (s->fired[i].count > 1)
            sr_rw_printf(w, " x%llu", (unsigned long long)s->fired[i].count);
        if (s->fired[i].expected)
            sr_rw_puts(w, " (expected)");
    }
}

/* The verdict table: failed and errored first, then interrupted, then the rest (report_priv.h);
 * a merged run has a column with the shard that ran each scenario. */
static void verdict_table(sr_rw *w, const sr_run_result *run)
{
    int merged = run->header.merged_of > 0;
    size_t *order = calloc(run->n_scenarios + 1, sizeof(size_t));
    if (!order) {
        w->rc = sr_err_set(w->err, SR_E_NOMEM, "cannot order %zu scenarios", run->n_scenarios);
        return;
    }
    sr_report_order(run, order);
    sr_rw_printf(w,
                 "<h2 id=\"verdicts\">Verdicts</h2>\n<table>\n<tr><th>verdict</th>"
                 "<th>scenario</th>%s<th>folder</th><th class=\"n\">wall</th>"
                 "<th>checks fired</th><th>reason</th></tr>\n",
                 merged ? "<th>shard</th>" : "");
    for (size_t j = 0; j < run->n_scenarios; j++) {
        size_t i = order[j];
        const sr_scenario_result *s = run->scenarios[i];
        char id[160], suite[256], t[32];
        sr_report_display_id(id, sizeof(id), s);
        sr_report_suite(suite, sizeof(suite), s->file);
        sr_rw_puts(w, "<tr><td>");
        badge(w, s->verdict, "");
        sr_rw_puts(w, "</td><td>");
        int failed = s->verdict == SR_VERDICT_FAIL || s->verdict == SR_VERDICT_ERROR;
        if (failed)
            sr_rw_printf(w, "<a href=\"#f-%zu\">", i);
        text(w, id);
        sr_rw_puts(w, failed ? "</a>" : "");
        if (merged && s->shard)
            sr_rw_printf(w, "</td><td>%d/%d", s->shard, run->header.merged_of);
        else if (merged)
            sr_rw_puts(w, "</td><td>");
        tag_text(w, "</td><td>", suite, "</td>");
        sr_rw_printf(
            w, "<td class=\"n\">%s</td><td>",
            s->verdict == SR_VERDICT_SKIP ? "" : sr_report_fmt_ns(t, sizeof(t), s->wall_ms * 1e6));
        fired_list(w, s);
        tag_text(w, "</td><td>", s->reason, "</td></tr>\n");
    }
    free(order);
    sr_rw_puts(w, "</table>\n");
}

static void where(sr_rw *w, const sr_check_where *x)
{
    static const char *const names[] = {"step", "engine", "sample", "turn", "row", "layer"};
    const int64_t v[] = {x->step, x->engine, x->sample, x->turn, x->row, x->layer};
    int any = 0;
    for (size_t i = 0; i < 6; i++)
        if (v[i] >= 0) {
            sr_rw_printf(w, "%s%s %lld", any ? ", " : "", names[i], (long long)v[i]);
            any = 1;
        }
}

/*
 * results.json may be crafted, so only a relative path that stays inside the run folder becomes
 * a link: no scheme ("javascript:", "http:"; any ':' before the first '/'), no leading '/' (an
 * absolute or "//host" path), no ".." segment, no backslash. Anything else is shown as text.
 */
static int safe_href(const char *p)
{
    size_t first = strcspn(p, "/");
    if (!*p || *p == '/' || memchr(p, ':', first) || strchr(p, '\\'))
        return 0;
    for (const char *s = p; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return 0;
        s += n + (s[n] == '/');
    }
    return 1;
}

static void link(sr_rw *w, const sr_run_result *run, const char *label, const char *path)
{
    if (!path)
        return;
    const char *rel = sr_report_relpath(run, path);
    if (!safe_href(rel)) {
        sr_rw_printf(w, "%s: ", label);
        text(w, rel);
        sr_rw_puts(w, " ");
        return;
    }
    sr_rw_printf(w, "%s: <a href=\"", label);
    sr_rw_xml(w, rel, 1);
    sr_rw_puts(w, "\">");
    text(w, rel);
    sr_rw_puts(w, "</a> ");
}

/* A check's failure evidence (sr_check.evidence, under the scenario's artifacts folder): a link
 * to its index.txt, and a note when the scenario's evidence cap left files out. */
static void evidence_link(sr_rw *w, const sr_run_result *run, const sr_scenario_result *s,
                          const sr_check *c)
{
    if (!c->evidence[0] || !s->artifacts)
        return;
    char path[8192];
    snprintf(path, sizeof(path), "%s/%s", s->artifacts, c->evidence);
    sr_rw_puts(w, "<br>");
    link(w, run, "evidence", path);
    if (c->evidence_cut)
        sr_rw_puts(w, "(cut: the scenario's evidence cap was reached; its index.txt lists what "
                      "was left out)");
}

static void failure(sr_rw *w, const sr_run_result *run, size_t i)
{
    const sr_scenario_result *s = run->scenarios[i];
    char id[160];
    sr_rw_printf(w, "<div class=\"failure%s\" id=\"f-%zu\">\n<h3>",
                 s->verdict == SR_VERDICT_ERROR ? " error" : "", i);
    badge(w, s->verdict, "");
    sr_rw_puts(w, " ");
    text(w, sr_report_display_id(id, sizeof(id), s));
    tag_text(w, "</h3>\n<p>", s->reason, "</p>\n");
    if (s->n_checks) {
        sr_rw_puts(w, "<table>\n<tr><th>check</th><th>class</th><th>where</th><th>message</th>"
                      "</tr>\n");
        for (size_t k = 0; k < s->n_checks; k++) {
            const sr_check *c = &s->checks[k];
            size_t rank = sr_report_check_rank(s, k), size = sr_report_check_group_size(s, k);
            if (rank >= SR_REPORT_GROUP_SHOWN)
                continue;
            tag_text(w, "<tr><td><code>", c->name, "</code>");
            sr_rw_puts(w, c->expected ? " (expected)" : "");
            if (rank == 0 && size > 1)
                sr_rw_printf(w, " x%zu", size);
            tag_text(w, "</td><td>", c->classification, "</td><td>");
            where(w, &c->where);
            tag_text(w, "</td><td>", c->message, "");
            evidence_link(w, run, s, c);
            sr_rw_puts(w, "</td></tr>\n");
            if (rank + 1 == SR_REPORT_GROUP_SHOWN && size > SR_REPORT_GROUP_SHOWN)
                sr_rw_printf(w,
                             "<tr><td colspan=\"4\">... %zu more like these (%zu in all)</td>"
                             "</tr>\n",
                             size - SR_REPORT_GROUP_SHOWN, size);
        }
        sr_rw_puts(w, "</table>\n");
        /* The cap is per scenario: say so even when the cut checks are past the shown ones. */
        for (size_t k = 0; k < s->n_checks; k++)
            if (s->checks[k].evidence_cut) {
                sr_rw_puts(w, "<p>Evidence cut: the scenario's evidence cap was reached; each "
                              "index.txt lists what was left out.</p>\n");
                break;
            }
        if (s->checks_dropped)
            sr_rw_printf(w, "<p>... %llu more firings not kept</p>\n",
                         (unsigned long long)s->checks_dropped);
    }
    for (size_t k = 0; k < s->n_expect_checks; k++)
        if (!sr_report_fired(s, s->expect_checks[k]))
            tag_text(w, "<p>expected check did not fire: <code>", s->expect_checks[k],
                     "</code></p>\n");
    tag_text(w, "<pre>", s->repro ? s->repro : "?", "</pre>\n<p class=\"meta\">");
    link(w, run, "artifacts", s->artifacts);
    link(w, run, "expanded scenario", s->expanded);
    for (size_t k = 0; k < s->n_engines; k++) {
        char label[32];
        snprintf(label, sizeof(label), "engine %d log", s->engines[k].index);
        link(w, run, label, s->engines[k].log);
    }
    sr_rw_puts(w, "</p>\n</div>\n");
}

static void failures(sr_rw *w, const sr_run_result *run)
{
    size_t n = run->counts[SR_VERDICT_FAIL] + run->counts[SR_VERDICT_ERROR];
    sr_rw_printf(w, "<h2 id=\"failures\">Failures (%zu)</h2>\n", n);
    if (!n)
        sr_rw_puts(w, "<p>None.</p>\n");
    for (size_t i = 0; i < run->n_scenarios; i++) {
        sr_verdict v = run->scenarios[i]->verdict;
        if (v == SR_VERDICT_FAIL || v == SR_VERDICT_ERROR)
            failure(w, run, i);
    }
}

static void latency(sr_rw *w, const sr_run_result *run)
{
    static const char *const cols[] = {"count", "min", "p50", "p90", "p99", "p99.9", "max", "mean"};
    sr_rw_puts(w, "<h2 id=\"latency\">Latency per phase (all scenarios)</h2>\n<table>\n"
                  "<tr><th>phase</th>");
    for (size_t c = 0; c < 8; c++)
        sr_rw_printf(w, "<th class=\"n\">%s</th>", cols[c]);
    sr_rw_puts(w, "</tr>\n");
    int any = 0;
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        sr_latency_row r;
        sr_report_latency(&r, run->phase[p]);
        if (!r.count)
            continue;
        any = 1;
        const double v[] = {(double)r.min,  (double)r.p50, (double)r.p90, (double)r.p99,
                            (double)r.p999, (double)r.max, r.mean};
        sr_rw_printf(w, "<tr><td>%s</td><td class=\"n\">%llu</td>", sr_phase_name((sr_phase)p),
                     (unsigned long long)r.count);
        for (size_t c = 0; c < 7; c++) {
            char t[32];
            sr_rw_printf(w, "<td class=\"n\">%s</td>", sr_report_fmt_ns(t, sizeof(t), v[c]));
        }
        sr_rw_puts(w, "</tr>\n");
    }
    sr_rw_puts(w, "</table>\n");
    if (!any)
        sr_rw_puts(w, "<p>No phase recorded a sample.</p>\n");
    sr_rw_puts(w, "<div class=\"charts\">\n");
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        sr_report_svg_hist(w, run->phase[p], sr_phase_name((sr_phase)p));
    sr_rw_puts(w, "</div>\n");
}

static void counters(sr_rw *w, const sr_counters *c)
{
    const struct {
        const char *name;
        long long v;
    } rows[] = {
        {"rollouts requested", (long long)c->rollouts_requested},
        {"rollouts verified", (long long)c->rollouts_verified},
        {"rollouts failed", (long long)c->rollouts_failed},
        {"turns", (long long)c->turns},
        {"HTTP attempts", (long long)c->attempts},
        {"retries", (long long)c->retries},
        {"bytes sent", (long long)c->bytes_sent},
        {"bytes received", (long long)c->bytes_received},
        {"tokens verified", (long long)c->tokens_verified},
        {"route rows verified", (long long)c->rows_verified},
        {"collations", (long long)c->collations},
        {"weight syncs", (long long)c->syncs},
    };
    sr_rw_puts(w, "<h2 id=\"counters\">Counters</h2>\n<table>\n");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        sr_rw_printf(w, "<tr><td>%s</td><td class=\"n\">%lld</td></tr>\n", rows[i].name, rows[i].v);
    sr_rw_puts(w, "</table>\n");
}

void sr_report_html(sr_rw *w, const sr_run_result *run)
{
    sr_rw_puts(w, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n"
                  "<head>\n<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" "
                  "content=\"width=device-width, initial-scale=1\"/>\n");
    tag_text(w, "<title>syncroll run ", run->header.run_id ? run->header.run_id : "?",
             "</title>\n");
    sr_rw_printf(w, "<style>\n%s</style>\n</head>\n<body>\n", sr_report_css());
    header(w, run);
    verdict_table(w, run);
    failures(w, run);
    latency(w, run);
    sr_rw_puts(w, "<h2 id=\"timeline\">Timeline (each row scaled to its scenario's wall time)"
                  "</h2>\n");
    sr_report_svg_timeline(w, run);
    counters(w, &run->counters);
    sr_rw_puts(w, "<footer>Written by syncroll ");
    text(w, run->header.version ? run->header.version : "?");
    sr_rw_puts(w, "; the run folder also holds results.json, junit.xml and summary.txt."
                  "</footer>\n</body>\n</html>\n");
}
