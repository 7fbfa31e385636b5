/* Inline SVG charts of report.html: a latency histogram per phase and the step timeline. */
#include "report_priv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SVG_NS "xmlns=\"http://www.w3.org/2000/svg\""

/* ---- latency histogram ---- */

#define HW   420 /* chart width */
#define HH   180 /* chart height */
#define HX0  40  /* plot left */
#define HX1  408 /* plot right */
#define HY0  44  /* plot top */
#define HY1  150 /* plot bottom (x axis) */
#define NBIN 48  /* display bins across the plot */

static double lg(double v)
{
    return log10(v < 1 ? 1 : v);
}

static double hx(double v, double a, double b)
{
    return HX0 + (lg(v) - a) / (b - a) * (HX1 - HX0);
}

static void marker(sr_rw *w, const char *name, uint64_t v, double a, double b, int row)
{
    char t[32];
    double x = hx((double)v, a, b);
    sr_rw_printf(w,
                 "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"mk\"/>"
                 "<text x=\"%.1f\" y=\"%d\" class=\"mkt\"%s>%s %s</text>\n",
                 x, HY0 - 2, x, HY1, x + (row ? -3 : 3), HY0 - 4 - 10 * row,
                 row ? " text-anchor=\"end\"" : "", name,
                 sr_report_fmt_ns(t, sizeof(t), (double)v));
}

/* A tick value (1, 2 or 5 times a power of ten ns) in the largest unit that keeps it >= 1. */
static void tick_label(char *buf, size_t cap, double ns)
{
    static const char *const units[] = {"ns", "\xC2\xB5s", "ms", "s"};
    int u = 0;
    while (u < 3 && ns >= 999.5) {
        ns /= 1000.0;
        u++;
    }
    snprintf(buf, cap, "%.0f %s", ns, units[u]);
}

/* X-axis ticks at powers of ten (and 2x, 5x when the range is narrow). */
static void ticks(sr_rw *w, double a, double b)
{
    static const double steps[] = {1, 2, 5};
    int narrow = b - a < 1.5;
    for (int e = (int)floor(a); e <= (int)ceil(b); e++)
        for (size_t k = 0; k < (narrow ? 3u : 1u); k++) {
            double v = steps[k] * pow(10, e), x = lg(v);
            if (x < a || x > b)
                continue;
            char t[32];
            double px = HX0 + (x - a) / (b - a) * (HX1 - HX0);
            tick_label(t, sizeof(t), v);
            sr_rw_printf(w,
                         "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"ax\"/>"
                         "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                         px, HY1, px, HY1 + 4, px, HY1 + 16, t);
        }
}

void sr_report_svg_hist(sr_rw *w, const sr_hist *h, const char *title)
{
    sr_latency_row r;
    sr_report_latency(&r, h);
    if (!r.count)
        return;
    double a = lg((double)r.min), b = lg((double)r.max);
    if (b - a < 0.3) {
        double c = (a + b) / 2;
        a = c - 0.15, b = c + 0.15;
    }
    double pad = (b - a) * 0.03;
    a -= pad, b += pad;
    uint64_t bins[NBIN] = {0}, top = 0;
    size_t nb = sr_hist_buckets();
    for (size_t i = 0; i < nb; i++) {
        uint64_t c = sr_hist_bucket_count(h, i), lo, hi;
        if (!c)
            continue;
        sr_hist_bucket_range(i, &lo, &hi);
        double mid = (double)lo + (double)(hi - lo) / 2;
        mid = mid < (double)r.min ? (double)r.min : mid > (double)r.max ? (double)r.max : mid;
        int k = (int)floor((lg(mid) - a) / (b - a) * NBIN);
        bins[k < 0 ? 0 : k >= NBIN ? NBIN - 1 : k] += c;
    }
    for (int k = 0; k < NBIN; k++)
        top = bins[k] > top ? bins[k] : top;
    char t1[32], t2[32];
    sr_rw_printf(w, "<svg %s width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
                 SVG_NS, HW, HH, HW, HH);
    sr_rw_puts(w, "<title>");
    sr_rw_xml(w, title, 0);
    sr_rw_puts(w, " latency histogram</title>\n<text x=\"4\" y=\"12\" class=\"ct\">");
    sr_rw_xml(w, title, 0);
    sr_rw_printf(w, "</text><text x=\"%d\" y=\"12\" text-anchor=\"end\">n=%llu, mean %s</text>\n",
                 HW - 4, (unsigned long long)r.count, sr_report_fmt_ns(t1, sizeof(t1), r.mean));
    sr_rw_printf(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%llu</text>\n", HX0 - 4, HY0 + 4,
                 (unsigned long long)top);
    sr_rw_printf(w,
                 "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"ax\"/>"
                 "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"ax\"/>\n",
                 HX0, HY1, HX1, HY1, HX0, HY0, HX0, HY1);
    double bw = (double)(HX1 - HX0) / NBIN;
    for (int k = 0; k < NBIN; k++) {
        if (!bins[k])
            continue;
        double hgt = (double)bins[k] / (double)top * (HY1 - HY0);
        hgt = hgt < 1 ? 1 : hgt;
        double v0 = pow(10, a + (b - a) * k / NBIN), v1 = pow(10, a + (b - a) * (k + 1) / NBIN);
        sr_rw_printf(w,
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"bar\">"
                     "<title>%s to %s: %llu</title></rect>\n",
                     HX0 + bw * k + 0.5, HY1 - hgt, bw - 1 > 1 ? bw - 1 : 1, hgt,
                     sr_report_fmt_ns(t1, sizeof(t1), v0), sr_report_fmt_ns(t2, sizeof(t2), v1),
                     (unsigned long long)bins[k]);
    }
    ticks(w, a, b);
    marker(w, "p50", r.p50, a, b, 0);
    marker(w, "p99", r.p99, a, b, 1);
    sr_rw_puts(w, "</svg>\n");
}

/* ---- per-scenario step timeline ---- */

#define TL_LABEL    230 /* label gutter */
#define TL_PLOT     600 /* plot width; each row is scaled to its own scenario's wall time */
#define TL_RIGHT    80  /* duration label */
#define TL_ROW      18
#define TL_TOP      8
#define TL_MAX_ROWS 400

static const struct {
    const char *kind, *color;
} kinds[] = {
    {"rollout", "#4c78a8"},     {"sync_weights", "#f58518"}, {"collate", "#54a24b"},
    {"pause", "#b279a2"},       {"resume", "#9d755d"},       {"wait", "#bab0ac"},
    {"check_state", "#72b7b2"}, {"kill_engine", "#e45756"},
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static const char *kind_color(const char *kind, unsigned *seen)
{
    for (size_t i = 0; i < N_KINDS; i++)
        if (strcmp(kinds[i].kind, kind) == 0) {
            *seen |= 1u << i;
            return kinds[i].color;
        }
    *seen |= 1u << N_KINDS;
    return "#888888";
}

/* Copies at most `max` bytes of s, cut at a UTF-8 character boundary, with "..." when cut. */
static void clip(char *buf, size_t cap, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) {
        snprintf(buf, cap, "%s", s);
        return;
    }
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    snprintf(buf, cap, "%.*s...", (int)max, s);
}

static void timeline_row(sr_rw *w, const sr_scenario_result *s, int y, unsigned *seen)
{
    char id[160], lab[64], t[32];
    clip(lab, sizeof(lab), sr_report_display_id(id, sizeof(id), s), 34);
    sr_rw_printf(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", TL_LABEL - 6, y + 12);
    sr_rw_xml(w, lab, 0);
    sr_rw_printf(w, "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"bg-%s\"/>\n",
                 TL_LABEL, y + 2, TL_PLOT, TL_ROW - 4, sr_verdict_name(s->verdict));
    if (s->verdict == SR_VERDICT_SKIP || s->wall_ms <= 0) {
        sr_rw_printf(w, "<text x=\"%d\" y=\"%d\">%s</text>\n", TL_LABEL + 6, y + 12,
                     s->verdict == SR_VERDICT_SKIP ? "skipped" : "no timing");
        return;
    }
    for (size_t i = 0; i < s->n_steps; i++) {
        const sr_step_timing *st = &s->steps[i];
        double a = st->start_ms < 0 ? 0 : st->start_ms;
        double e = st->end_ms < 0 || st->end_ms > s->wall_ms ? s->wall_ms : st->end_ms;
        double x = TL_LABEL + a / s->wall_ms * TL_PLOT, wd = (e - a) / s->wall_ms * TL_PLOT;
        sr_rw_printf(w,
                     "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"%s>"
                     "<title>",
                     x, y + 3, wd < 1 ? 1 : wd, TL_ROW - 6, kind_color(st->kind, seen),
                     st->code ? " class=\"err\"" : "");
        sr_rw_xml(w, id, 0);
        sr_rw_printf(w, ": step %d ", st->index);
        sr_rw_xml(w, st->kind, 0);
        sr_rw_puts(w, " ");
        sr_rw_xml(w, st->name, 0);
        sr_rw_printf(w, " %.1f to %.1f ms%s%s</title></rect>\n", st->start_ms, st->end_ms,
                     st->code ? ", stopped by " : "",
                     st->code ? sr_report_code_name(st->code) : "");
    }
    sr_rw_printf(w, "<text x=\"%d\" y=\"%d\">%s</text>\n", TL_LABEL + TL_PLOT + 6, y + 12,
                 sr_report_fmt_ns(t, sizeof(t), s->wall_ms * 1e6));
}

void sr_report_svg_timeline(sr_rw *w, const sr_run_result *run)
{
    size_t rows = run->n_scenarios < TL_MAX_ROWS ? run->n_scenarios : TL_MAX_ROWS;
    int width = TL_LABEL + TL_PLOT + TL_RIGHT, height = TL_TOP + (int)rows * TL_ROW + 34;
    unsigned seen = 0;
    sr_rw_printf(w, "<svg %s width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
                 SVG_NS, width, height, width, height);
    sr_rw_puts(w, "<title>per-scenario step timeline</title>\n");
    for (size_t i = 0; i < rows; i++)
        timeline_row(w, run->scenarios[i], TL_TOP + (int)i * TL_ROW, &seen);
    int y = TL_TOP + (int)rows * TL_ROW + 18, x = TL_LABEL;
    for (size_t i = 0; i <= N_KINDS; i++) {
        if (!(seen & (1u << i)))
            continue;
        const char *k = i < N_KINDS ? kinds[i].kind : "other";
        sr_rw_printf(w,
                     "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                     "<text x=\"%d\" y=\"%d\">%s</text>\n",
                     x, y - 9, i < N_KINDS ? kinds[i].color : "#888888", x + 14, y, k);
        x += 24 + 7 * (int)strlen(k);
    }
    if (rows < run->n_scenarios)
        sr_rw_printf(w, "<text x=\"%d\" y=\"%d\">(first %zu of %zu scenarios)</text>\n", x, y, rows,
                     run->n_scenarios);
    sr_rw_puts(w, "</svg>\n");
}
