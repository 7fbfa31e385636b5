/*
 * history.html (history.h): one self-contained page, well-formed XHTML read as HTML5 like
 * report.html (inline CSS and SVG, no script, no external reference): the nights, the failing
 * and flaky scenarios, a verdict grid (scenario x night), a p50/p99 trend chart per phase and
 * a sparkline per scenario and phase.
 */
#include "history.h"

#include <stdio.h>
#include <string.h>

#include "report_priv.h"

static const char css_extra[] =
    ".grid td.c{padding:0;width:18px;height:18px;border:1px solid #fff}"
    ".grid th.v{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:400;"
    "font-size:11px;padding:4px 2px}\n"
    ".c.absent{background:#f3f4f6}.c.mixed{background:repeating-linear-gradient(45deg,"
    "#e3f4e8,#e3f4e8 4px,#fde4e4 4px,#fde4e4 8px)}\n"
    "td.c.pass{background:#7cc08f}td.c.fail{background:#e06666}td.c.error{background:#b76cc0}"
    "td.c.skip{background:#f0d080}td.c.interrupted{background:#f0a060}\n"
    "svg .p50{stroke:#4c78a8;fill:none;stroke-width:2}svg .p99{stroke:#e45756;fill:none;"
    "stroke-width:2}svg .d50{fill:#4c78a8}svg .d99{fill:#e45756}svg .gr{stroke:#eceff3}\n";

static void text(sr_rw *w, const char *s)
{
    sr_rw_xml(w, s ? s : "", 0);
}

static void rev(sr_rw *w, const char *r)
{
    char b[16];
    snprintf(b, sizeof(b), "%.12s", r ? r : "unknown");
    sr_rw_puts(w, "<code>");
    text(w, b);
    sr_rw_puts(w, "</code>");
}

static void night_cell(sr_rw *w, const sr_history *h, long i)
{
    sr_rw_puts(w, "<td>");
    if (i < 0) {
        sr_rw_puts(w, "none in the window</td><td></td>");
        return;
    }
    text(w, h->nights[i].name);
    sr_rw_puts(w, "</td><td>");
    rev(w, h->nights[i].git_rev);
    sr_rw_puts(w, "</td>");
}

static void nights_table(sr_rw *w, const sr_history *h)
{
    sr_rw_puts(w, "<h2>Nights</h2>\n<table><tr><th "
                  "class=\"n\">#</th><th>night</th><th>started</th><th>git</th>"
                  "<th class=\"n\">pass</th><th class=\"n\">fail</th><th class=\"n\">error</th>"
                  "<th class=\"n\">skip</th><th></th></tr>\n");
    for (size_t i = 0; i < h->n_nights; i++) {
        const sr_hnight *n = &h->nights[i];
        sr_rw_printf(w, "<tr><td class=\"n\">%zu</td><td>", i + 1);
        text(w, n->name);
        sr_rw_puts(w, "</td><td>");
        text(w, n->start_iso);
        sr_rw_puts(w, "</td><td>");
        rev(w, n->git_rev);
        sr_rw_printf(w,
                     "</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td><td class=\"n\">%zu"
                     "</td><td class=\"n\">%zu</td><td>%s</td></tr>\n",
                     n->counts[SR_VERDICT_PASS], n->counts[SR_VERDICT_FAIL],
                     n->counts[SR_VERDICT_ERROR], n->counts[SR_VERDICT_SKIP],
                     n->partial ? "partial" : "");
    }
    sr_rw_puts(w, "</table>\n");
    if (!h->n_skipped)
        return;
    sr_rw_puts(w, "<p class=\"partial\">Unreadable run folders, left out of the history:</p>\n"
                  "<table><tr><th>folder</th><th>error</th><th>message</th></tr>\n");
    for (size_t i = 0; i < h->n_skipped; i++) {
        sr_rw_puts(w, "<tr><td>");
        text(w, h->skipped[i].name);
        sr_rw_printf(w, "</td><td><code>%s</code></td><td>",
                     sr_report_code_name(h->skipped[i].code));
        text(w, h->skipped[i].message);
        sr_rw_puts(w, "</td></tr>\n");
    }
    sr_rw_puts(w, "</table>\n");
}

static void verdict_lists(sr_rw *w, const sr_history *h)
{
    size_t failing = 0, flaky = 0;
    for (size_t i = 0; i < h->n_scenarios; i++) {
        failing += h->scenarios[i].failing;
        flaky += h->scenarios[i].flaky;
    }
    sr_rw_printf(w, "<h2>Failing now (%zu)</h2>\n", failing);
    if (failing)
        sr_rw_puts(w, "<table><tr><th>scenario</th><th>first failing night</th><th>git</th>"
                      "<th>last passing night</th><th>git</th></tr>\n");
    for (size_t i = 0; i < h->n_scenarios; i++) {
        const sr_hscenario *s = &h->scenarios[i];
        if (!s->failing)
            continue;
        sr_rw_puts(w, "<tr><td>");
        text(w, s->id);
        sr_rw_puts(w, s->flaky ? " <span class=\"badge skip\">flaky</span></td>" : "</td>");
        night_cell(w, h, s->first_fail);
        night_cell(w, h, s->last_pass);
        sr_rw_puts(w, "</tr>\n");
    }
    if (failing)
        sr_rw_puts(w, "</table>\n");
    sr_rw_printf(w, "<h2>Flaky (%zu)</h2>\n", flaky);
    if (flaky)
        sr_rw_puts(w, "<table><tr><th>scenario</th><th>why</th></tr>\n");
    for (size_t i = 0; i < h->n_scenarios; i++) {
        if (!h->scenarios[i].flaky)
            continue;
        sr_rw_puts(w, "<tr><td>");
        text(w, h->scenarios[i].id);
        sr_rw_puts(w, "</td><td>");
        text(w, h->scenarios[i].flaky_why);
        sr_rw_puts(w, "</td></tr>\n");
    }
    if (flaky)
        sr_rw_puts(w, "</table>\n");
}

static void grid(sr_rw *w, const sr_history *h)
{
    sr_rw_puts(w, "<h2>Verdicts night by night</h2>\n<table class=\"grid\"><tr><th>scenario</th>");
    for (size_t i = 0; i < h->n_nights; i++) {
        sr_rw_puts(w, "<th class=\"v\">");
        text(w, h->nights[i].name);
        sr_rw_puts(w, "</th>");
    }
    sr_rw_puts(w, "</tr>\n");
    /* failing first, then flaky, then the rest, each in the order first seen */
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < h->n_scenarios; i++) {
            const sr_hscenario *s = &h->scenarios[i];
            int group = s->failing ? 0 : s->flaky ? 1 : 2;
            if (group != pass)
                continue;
            sr_rw_puts(w, "<tr><td>");
            text(w, s->id);
            sr_rw_puts(w, group == 0   ? " <span class=\"badge fail\">failing</span>"
                          : group == 1 ? " <span class=\"badge skip\">flaky</span>"
                                       : "");
            sr_rw_puts(w, "</td>");
            for (size_t k = 0; k < h->n_nights; k++) {
                const char *c = sr_hcell_name((sr_hcell)s->timeline[k]);
                sr_rw_printf(w, "<td class=\"c %s\" title=\"", c);
                sr_rw_xml(w, h->nights[k].name, 1);
                sr_rw_printf(w, ": %s\"></td>", c);
            }
            sr_rw_puts(w, "</tr>\n");
        }
    sr_rw_puts(w, "</table>\n<p class=\"meta\">green pass, red fail, purple error, striped "
                  "passed and failed in one night, grey not run.</p>\n");
}

/* ---- trend charts ---- */

#define TW  420
#define TH  200
#define TX0 64
#define TX1 404
#define TY0 30
#define TY1 160

static double tx(size_t i, size_t n)
{
    return n > 1 ? TX0 + (double)i * (TX1 - TX0) / (double)(n - 1) : (TX0 + TX1) / 2.0;
}

static double ty(double v, double top)
{
    return TY1 - (top > 0 ? v / top : 0) * (TY1 - TY0);
}

static void series(sr_rw *w, const sr_history *h, int p, int p99, double top)
{
    sr_rw_printf(w, "<polyline class=\"%s\" points=\"", p99 ? "p99" : "p50");
    for (size_t i = 0; i < h->n_nights; i++)
        if (h->nights[i].phase_count[p])
            sr_rw_printf(w, "%.1f,%.1f ", tx(i, h->n_nights),
                         ty(p99 ? h->nights[i].p99_ms[p] : h->nights[i].p50_ms[p], top));
    sr_rw_puts(w, "\"/>\n");
    for (size_t i = 0; i < h->n_nights; i++) {
        if (!h->nights[i].phase_count[p])
            continue;
        double v = p99 ? h->nights[i].p99_ms[p] : h->nights[i].p50_ms[p];
        sr_rw_printf(w, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"><title>",
                     p99 ? "d99" : "d50", tx(i, h->n_nights), ty(v, top));
        text(w, h->nights[i].name);
        char t[32];
        sr_rw_printf(w, ": %s %s</title></circle>\n", p99 ? "p99" : "p50",
                     sr_report_fmt_ns(t, sizeof(t), v * 1e6));
    }
}

static void trend(sr_rw *w, const sr_history *h, int p)
{
    double top = 0;
    for (size_t i = 0; i < h->n_nights; i++)
        if (h->nights[i].phase_count[p] && h->nights[i].p99_ms[p] > top)
            top = h->nights[i].p99_ms[p];
    if (top <= 0)
        return;
    top *= 1.1;
    sr_rw_printf(w,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" role=\"img\"><title>%s p50 and p99 by night</title>\n"
                 "<text x=\"%d\" y=\"16\" class=\"ct\">%s</text>"
                 "<text x=\"%d\" y=\"16\" class=\"mkt\" text-anchor=\"end\">p99</text>"
                 "<text x=\"%d\" y=\"16\" text-anchor=\"end\" style=\"fill:#4c78a8\">p50</text>\n",
                 TW, TH, TW, TH, sr_phase_name((sr_phase)p), TX0, sr_phase_name((sr_phase)p), TX1,
                 TX1 - 30);
    for (int g = 0; g <= 4; g++) {
        double v = top * g / 4.0, y = ty(v, top);
        char t[32];
        sr_rw_printf(w,
                     "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"gr\"/>"
                     "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                     TX0, y, TX1, y, TX0 - 4, y + 4,
                     g ? sr_report_fmt_ns(t, sizeof(t), v * 1e6) : "0");
    }
    sr_rw_printf(w, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"ax\"/>\n", TX0, TY1, TX1,
                 TY1);
    for (size_t i = 0; i < h->n_nights; i++) {
        sr_rw_printf(w, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%zu</text>\n",
                     tx(i, h->n_nights), TY1 + 16, i + 1);
    }
    sr_rw_printf(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">night</text>\n",
                 (TX0 + TX1) / 2, TY1 + 32);
    series(w, h, p, 0, top);
    series(w, h, p, 1, top);
    sr_rw_puts(w, "</svg>\n");
}

/* ---- per-scenario trends ---- */

#define SW 132
#define SH 30

/* A sparkline of one series (stride floats apart, -1: none) and its newest value. */
static void spark(sr_rw *w, const sr_history *h, const float *v, size_t stride)
{
    double top = 0;
    long last = -1;
    for (size_t k = 0; k < h->n_nights; k++)
        if (v[k * stride] >= 0) {
            top = v[k * stride] > top ? v[k * stride] : top;
            last = (long)k;
        }
    sr_rw_puts(w, "<td>");
    if (last < 0) {
        sr_rw_puts(w, "</td>");
        return;
    }
    sr_rw_printf(w,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" role=\"img\"><polyline class=\"p99\" points=\"",
                 SW, SH, SW, SH);
    for (size_t k = 0; k < h->n_nights; k++) {
        if (v[k * stride] < 0)
            continue;
        double x = h->n_nights > 1 ? 2 + (double)k * (SW - 4) / (double)(h->n_nights - 1) : SW / 2;
        double y = SH - 2 - (top > 0 ? v[k * stride] / top : 0) * (SH - 4);
        sr_rw_printf(w, "%.1f,%.1f ", x, y);
    }
    char t[32];
    sr_rw_printf(w, "\"/></svg> %s</td>", sr_report_fmt_ns(t, sizeof(t), v[last * stride] * 1e6));
}

/* Each scenario's wall time and the p99 of each phase it recorded, night by night. */
static void scenario_trends(sr_rw *w, const sr_history *h)
{
    int used[SR_PHASE_COUNT] = {0};
    for (size_t i = 0; i < h->n_scenarios; i++)
        for (size_t k = 0; k < h->n_nights; k++)
            for (int p = 0; p < SR_PHASE_COUNT; p++)
                used[p] |= h->scenarios[i].p99_ms[k * SR_PHASE_COUNT + p] >= 0;
    sr_rw_puts(w, "<h2 id=\"scenario-trends\">Latency per scenario, night by night</h2>\n"
                  "<p class=\"meta\">each line scaled to its own maximum; the value is the "
                  "newest night's (wall time: the mean of the night's executions; p99: the "
                  "largest).</p>\n<table><tr><th>scenario</th><th>wall</th>");
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        if (used[p])
            sr_rw_printf(w, "<th>%s p99</th>", sr_phase_name((sr_phase)p));
    sr_rw_puts(w, "</tr>\n");
    for (size_t i = 0; i < h->n_scenarios; i++) {
        const sr_hscenario *s = &h->scenarios[i];
        sr_rw_puts(w, "<tr><td>");
        text(w, s->id);
        sr_rw_puts(w, "</td>");
        spark(w, h, s->wall_ms, 1);
        for (int p = 0; p < SR_PHASE_COUNT; p++)
            if (used[p])
                spark(w, h, &s->p99_ms[p], SR_PHASE_COUNT);
        sr_rw_puts(w, "</tr>\n");
    }
    sr_rw_puts(w, "</table>\n");
}

int sr_history_render_html(sr_buf *out, const sr_history *h, sr_err *err)
{
    sr_rw w = sr_report_writer(out, err);
    sr_rw_printf(&w,
                 "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n"
                 "<head>\n<meta charset=\"utf-8\"/>\n<title>syncroll history</title>\n"
                 "<style>\n%s%s</style>\n</head>\n<body>\n<h1>syncroll history: %zu nights</h1>\n",
                 sr_report_css(), css_extra, h->n_nights);
    if (h->n_nights) {
        sr_rw_puts(&w, "<p class=\"meta\">from ");
        text(&w, h->nights[0].start_iso);
        sr_rw_puts(&w, " to ");
        text(&w, h->nights[h->n_nights - 1].start_iso);
        sr_rw_printf(&w, "; %zu scenarios", h->n_scenarios);
    } else
        sr_rw_puts(&w, "<p class=\"meta\">no readable night");
    if (h->dropped)
        sr_rw_printf(&w, "; %zu older nights left out (--last)", h->dropped);
    sr_rw_puts(&w, "</p>\n");
    verdict_lists(&w, h);
    grid(&w, h);
    sr_rw_puts(&w, "<h2>Latency trends (run level, per phase)</h2>\n<p class=\"meta\">x: night "
                   "number as in the table below; blue p50, red p99.</p>\n<div class=\"charts\">");
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        trend(&w, h, p);
    sr_rw_puts(&w, "</div>\n");
    scenario_trends(&w, h);
    nights_table(&w, h);
    sr_rw_puts(&w, "<footer>syncroll report --history</footer>\n</body>\n</html>\n");
    return w.rc;
}

int sr_history_write(const sr_history *h, const char *dir, sr_err *err)
{
    static const char *const names[] = {"history.html", "history.json"};
    int first = 0;
    for (int i = 0; i < 2; i++) {
        sr_buf b = SR_BUF_INIT;
        sr_err e = SR_ERR_INIT;
        int rc = i ? sr_history_render_json(&b, h, &e) : sr_history_render_html(&b, h, &e);
        if (!rc)
            rc = sr_report_write_atomic(dir, names[i], b.data ? b.data : "", b.len, &e);
        sr_buf_release(&b);
        if (rc && !first) {
            first = rc;
            if (err)
                *err = e;
        }
    }
    return first;
}
