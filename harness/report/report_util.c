/* Shared writer, UTF-8 and XML escaping, and formatting helpers of the reporters. */
#include "report_priv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sr_rw_puts(sr_rw *w, const char *s)
{
    if (!w->rc && s)
        w->rc = sr_buf_puts(w->b, s, w->err);
}

void sr_rw_printf(sr_rw *w, const char *fmt, ...)
{
    if (w->rc)
        return;
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        w->rc = sr_err_set(w->err, SR_E_INTERNAL, "bad format in a reporter");
        return;
    }
    if ((size_t)n < sizeof(small)) {
        w->rc = sr_buf_append(w->b, small, (size_t)n, w->err);
        return;
    }
    /* Long output (a message plus context) is formatted straight into the buffer. */
    w->rc = sr_buf_reserve(w->b, (size_t)n, w->err);
    if (w->rc)
        return;
    va_start(ap, fmt);
    vsnprintf(w->b->data + w->b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    w->b->len += (size_t)n;
}

void sr_rw_put(sr_rw *w, const char *p, size_t n)
{
    if (!w->rc && n)
        w->rc = sr_buf_append(w->b, p, n, w->err);
}

static void put_n(sr_rw *w, const char *p, size_t n)
{
    sr_rw_put(w, p, n);
}

/*
 * Length of the valid UTF-8 sequence at p (1..4), its code point in *cp, or 0 if the bytes are
 * not one (overlong forms, surrogates and values above U+10FFFF are invalid too).
 */
static size_t utf8_seq(const unsigned char *p, uint32_t *cp)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        n = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, v = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

static const char replacement[] = "\xEF\xBF\xBD";

/* Appends s as valid UTF-8; with `controls` 0, C0 controls (but tab) and DEL become U+FFFD. */
static void utf8(sr_rw *w, const char *s, int controls)
{
    if (!s)
        return;
    const unsigned char *p = (const unsigned char *)s;
    while (*p && !w->rc) {
        const unsigned char *run = p;
        uint32_t cp;
        size_t n;
        while (*p && (n = utf8_seq(p, &cp)) > 0 &&
               (controls || cp == '\t' || (cp >= 0x20 && cp != 0x7F)))
            p += n;
        put_n(w, (const char *)run, (size_t)(p - run));
        if (*p) {
            put_n(w, replacement, 3);
            n = utf8_seq(p, &cp);
            p += n ? n : 1;
        }
    }
}

void sr_rw_utf8(sr_rw *w, const char *s)
{
    utf8(w, s, 0);
}

char *sr_report_utf8_dup(const char *s)
{
    if (!s)
        return NULL;
    sr_buf b = SR_BUF_INIT;
    sr_rw w = {&b, 0, NULL};
    utf8(&w, s, 1);
    if (w.rc || !b.data) {
        sr_buf_release(&b);
        return w.rc ? NULL : strdup("");
    }
    return b.data;
}

static int xml_char_ok(uint32_t c)
{
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
           (c >= 0xE000 && c <= 0xFFFD) || c >= 0x10000;
}

void sr_rw_xml(sr_rw *w, const char *s, int attr)
{
    if (!s)
        return;
    const unsigned char *p = (const unsigned char *)s;
    while (*p && !w->rc) {
        uint32_t cp = 0;
        size_t n = utf8_seq(p, &cp);
        if (n == 0 || !xml_char_ok(cp)) {
            put_n(w, replacement, 3);
            p += n ? n : 1;
            continue;
        }
        const char *esc = NULL;
        switch (cp) {
        case '&':
            esc = "&amp;";
            break;
        case '<':
            esc = "&lt;";
            break;
        case '>':
            esc = "&gt;";
            break;
        case '"':
            esc = attr ? "&quot;" : NULL;
            break;
        case '\'':
            esc = attr ? "&apos;" : NULL;
            break;
        case '\t':
            esc = attr ? "&#9;" : NULL;
            break;
        case '\n':
            esc = attr ? "&#10;" : NULL;
            break;
        case '\r':
            esc = "&#13;";
            break;
        default:
            break;
        }
        if (esc)
            sr_rw_puts(w, esc);
        else
            put_n(w, (const char *)p, n);
        p += n;
    }
}

const char *sr_report_fmt_ns(char *buf, size_t cap, double ns)
{
    static const char *const units[] = {"ns", "\xC2\xB5s", "ms", "s"};
    int u = 0;
    double v = ns < 0 ? 0 : ns;
    while (u < 3 && v >= 999.5) {
        v /= 1000.0;
        u++;
    }
    if (u == 0 || v >= 99.95)
        snprintf(buf, cap, "%.0f %s", v, units[u]);
    else if (v >= 9.995)
        snprintf(buf, cap, "%.1f %s", v, units[u]);
    else
        snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

void sr_report_suite(char *buf, size_t cap, const char *file)
{
    const char *f = file ? file : "";
    while (f[0] == '.' && f[1] == '/')
        f += 2;
    const char *slash = strrchr(f, '/');
    size_t dlen = slash ? (size_t)(slash - f) : 0;
    /* The part after the last path component named "scenarios". */
    const char *start = f;
    for (const char *p = f; p < f + dlen; p++) {
        int at_seg = p == f || p[-1] == '/';
        if (at_seg && strncmp(p, "scenarios", 9) == 0 && (p + 9 == f + dlen || p[9] == '/'))
            start = p + 9 < f + dlen ? p + 10 : f + dlen;
    }
    while (start < f + dlen && *start == '/')
        start++;
    size_t n = (size_t)(f + dlen - start);
    if (n == 0)
        snprintf(buf, cap, "scenarios");
    else
        snprintf(buf, cap, "%.*s", (int)n, start);
}

const char *sr_report_display_id(char *buf, size_t cap, const sr_scenario_result *s)
{
    const char *id = s->id ? s->id : "?";
    if (s->repeat > 1)
        snprintf(buf, cap, "%s #%d", id, s->repeat);
    else
        snprintf(buf, cap, "%s", id);
    return buf;
}

const char *sr_report_relpath(const sr_run_result *run, const char *path)
{
    const char *d = run->header.out_dir;
    if (!path || !d || !*d)
        return path;
    size_t n = strlen(d);
    if (strncmp(path, d, n) == 0 && path[n] == '/' && path[n + 1])
        return path + n + 1;
    return path;
}

const char *sr_report_code_name(int code)
{
    const char *n = sr_code_name(code);
    return n ? n : "unknown.error";
}

int sr_report_fired(const sr_scenario_result *s, const char *name)
{
    for (size_t j = 0; j < s->n_fired; j++)
        if (strcmp(s->fired[j].name, name) == 0)
            return 1;
    return 0;
}

const sr_check *sr_report_first_unexpected(const sr_scenario_result *s)
{
    for (size_t i = 0; i < s->n_checks; i++)
        if (!s->checks[i].expected)
            return &s->checks[i];
    return NULL;
}

static const char *label(sr_verdict v)
{
    switch (v) {
    case SR_VERDICT_PASS:
        return "PASS ";
    case SR_VERDICT_FAIL:
        return "FAIL ";
    case SR_VERDICT_ERROR:
        return "ERROR";
    case SR_VERDICT_INTERRUPTED:
        return "INTR ";
    default:
        return "SKIP ";
    }
}

static const char *ansi(sr_verdict v)
{
    switch (v) {
    case SR_VERDICT_PASS:
        return "\033[32m";
    case SR_VERDICT_FAIL:
        return "\033[1;31m";
    case SR_VERDICT_ERROR:
        return "\033[1;35m";
    case SR_VERDICT_INTERRUPTED:
        return "\033[1;33m";
    default:
        return "\033[33m";
    }
}

void sr_report_line(sr_rw *w, const sr_scenario_result *s, int color)
{
    char id[160];
    sr_report_display_id(id, sizeof(id), s);
    if (color)
        sr_rw_printf(w, "%s%s\033[0m ", ansi(s->verdict), label(s->verdict));
    else
        sr_rw_printf(w, "%s ", label(s->verdict));
    sr_rw_utf8(w, id);
    if (s->verdict == SR_VERDICT_SKIP) {
        sr_rw_puts(w, "  ");
        sr_rw_utf8(w, s->reason);
        sr_rw_puts(w, "\n");
        return;
    }
    sr_rw_printf(w, "  %.2f s", s->wall_ms / 1000.0);
    if (s->verdict == SR_VERDICT_PASS) {
        sr_rw_puts(w, "\n");
        return;
    }
    sr_rw_puts(w, "  ");
    sr_rw_utf8(w, s->reason);
    sr_rw_puts(w, "\n      repro: ");
    sr_rw_utf8(w, s->repro ? s->repro : "?");
    sr_rw_puts(w, "\n");
    if (s->artifacts) {
        sr_rw_puts(w, "      artifacts: ");
        sr_rw_utf8(w, s->artifacts);
        sr_rw_puts(w, "\n");
    }
}

void sr_report_summary_line(sr_rw *w, const size_t counts[SR_VERDICT_COUNT])
{
    sr_rw_printf(w, "%zu passed, %zu failed", counts[SR_VERDICT_PASS],
                 counts[SR_VERDICT_FAIL] + counts[SR_VERDICT_ERROR]);
    if (counts[SR_VERDICT_SKIP])
        sr_rw_printf(w, ", %zu skipped", counts[SR_VERDICT_SKIP]);
    if (counts[SR_VERDICT_INTERRUPTED])
        sr_rw_printf(w, ", %zu interrupted", counts[SR_VERDICT_INTERRUPTED]);
    sr_rw_puts(w, "\n");
}

/* The latency row of a histogram (report.h); every reporter prints its phases with it. */
void sr_report_latency(sr_latency_row *out, const sr_hist *h)
{
    memset(out, 0, sizeof(*out));
    if (!h || !sr_hist_count(h))
        return;
    out->count = sr_hist_count(h);
    out->min = sr_hist_min(h);
    out->p50 = sr_hist_percentile(h, 50);
    out->p90 = sr_hist_percentile(h, 90);
    out->p99 = sr_hist_percentile(h, 99);
    out->p999 = sr_hist_percentile(h, 99.9);
    out->max = sr_hist_max(h);
    out->mean = sr_hist_mean(h);
}

static const char css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px 32px;"
    "color:#1d232a;background:#fff;max-width:1200px}\n"
    "h1{font-size:21px;margin:0 0 6px}h2{font-size:16px;margin:30px 0 10px;padding-bottom:4px;"
    "border-bottom:1px solid #dde2e8}h3{font-size:14px;margin:0 0 6px}\n"
    ".meta{color:#5b6670;font-size:12px;margin:2px 0}\n"
    ".badge{display:inline-block;padding:2px 9px;border-radius:10px;font-weight:600;"
    "font-size:12px}\n"
    ".big{font-size:14px;padding:4px 12px;margin:8px 8px 8px 0}\n"
    ".pass{background:#e3f4e8;color:#17692f}.fail{background:#fde4e4;color:#a4161a}"
    ".error{background:#f6e3f7;color:#7a1f84}.skip{background:#fff3d6;color:#8a5a00}\n"
    ".interrupted{background:#ffe1c2;color:#8a3b00}\n"
    ".partial{border:2px solid #c25400;background:#fff0e0;color:#6b2c00;padding:10px 14px;"
    "border-radius:6px;font-weight:600}\n"
    "table{border-collapse:collapse;font-size:13px;margin:4px 0}th,td{padding:4px 10px;"
    "border-bottom:1px solid #eceff3;text-align:left;vertical-align:top}th{background:#f5f7f9;"
    "font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:"
    "nowrap}\n"
    "code,pre{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}"
    "code{background:#f2f4f7;padding:1px 4px;border-radius:3px}\n"
    "pre{background:#f5f7f9;padding:8px 10px;white-space:pre-wrap;word-break:break-all;"
    "margin:6px 0}\n"
    ".failure{border-left:4px solid #a4161a;padding:6px 14px;margin:14px 0;background:#fffafa}"
    ".failure.error{border-left-color:#7a1f84;background:#fffaff;color:inherit}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:14px}"
    ".charts svg{border:1px solid #eceff3;border-radius:4px}\n"
    "svg text{font:11px system-ui,sans-serif;fill:#3b4650}svg .ct{font-weight:600;fill:#1d232a}"
    "svg .ax{stroke:#9aa5b1;stroke-width:1}svg .bar{fill:#4c78a8}"
    "svg .mk{stroke:#e45756;stroke-dasharray:3 2}svg .mkt{fill:#c0392b}"
    "svg .err{stroke:#a4161a;stroke-width:2}\n"
    "svg .bg-pass{fill:#f1f8f3}svg .bg-fail{fill:#fdf0f0}svg .bg-error{fill:#f9f0fa}"
    "svg .bg-skip{fill:#fff9ea}\n"
    "a{color:#1f5fa8}footer{margin-top:36px;color:#8a949e;font-size:12px}\n";

const char *sr_report_css(void)
{
    return css;
}

sr_rw sr_report_writer(sr_buf *out, sr_err *err)
{
    if (!out->max || out->max > SR_REPORT_MAX_BYTES)
        out->max = SR_REPORT_MAX_BYTES;
    sr_rw w = {out, 0, err};
    return w;
}
