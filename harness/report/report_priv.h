/*
 * Private to harness/report: the reporter table entry, a sticky-error text writer, escaping and
 * the small formatting helpers the reporters share.
 */
#ifndef SR_REPORT_PRIV_H
#define SR_REPORT_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* A text writer over an sr_buf whose first error sticks: later calls do nothing. */
typedef struct sr_rw {
    sr_buf *b;
    int rc;
    sr_err *err;
} sr_rw;

void sr_rw_puts(sr_rw *w, const char *s);
void sr_rw_put(sr_rw *w, const char *p, size_t n); /* n bytes of p, as they are */
void sr_rw_printf(sr_rw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Appends s (NULL: nothing) as one-line-safe text: valid UTF-8, with invalid bytes and control
 * characters (C0 but tab, and DEL: they could drive a terminal) replaced by U+FFFD.
 */
void sr_rw_utf8(sr_rw *w, const char *s);

/*
 * Appends s escaped for XML character data (attr 0) or a double- or single-quoted attribute
 * value (attr 1: also quotes, tab and LF as character references; CR always is). Invalid
 * UTF-8, control characters XML 1.0 forbids and U+FFFE/U+FFFF become U+FFFD.
 */
void sr_rw_xml(sr_rw *w, const char *s, int attr);

/*
 * Copies s into a new string (caller frees) that is valid UTF-8 (invalid bytes -> U+FFFD;
 * control characters are kept, for JSON escapes them). NULL for NULL s or out of memory.
 */
char *sr_report_utf8_dup(const char *s);

/* One reporter of the table (SR_REPORTER_TABLE, report.h), as report.c lays it out. */
typedef struct sr_reporter {
    const char *name; /* "text" */
    unsigned bit;     /* SR_REPORT_TEXT */
    const char *file; /* "summary.txt" */
    void (*render)(sr_rw *w, const sr_run_result *run);
} sr_reporter;

void sr_report_text(sr_rw *w, const sr_run_result *run);
void sr_report_json(sr_rw *w, const sr_run_result *run);
void sr_report_junit(sr_rw *w, const sr_run_result *run);
void sr_report_html(sr_rw *w, const sr_run_result *run);

/* Writes `len` bytes to dir/name through a temporary file in dir and a rename (SR_E_IO). */
int sr_report_write_atomic(const char *dir, const char *name, const char *data, size_t len,
                           sr_err *err);

/* Caps `out` at SR_REPORT_MAX_BYTES unless it has a smaller maximum; returns a writer on it. */
sr_rw sr_report_writer(sr_buf *out, sr_err *err);

/*
 * The scenario list of a results.json text, found without parsing the whole text (report_split.c):
 * sr_report_split gives the offsets of the '[' and ']' of the top-level object's first member
 * called "scenarios" whose value is a list, or -1 when the text is not shaped so (the caller then
 * parses it whole, which names the error). sr_report_next_item gives the next item of that list,
 * t[*a .. *e), from *pos (start at open + 1, moved past the item and its comma): 1, 0 at the end,
 * -1 when the separators are not JSON. The items themselves are checked by the parser that reads
 * them. sr_report_relocate rewrites sr_json's "name:line:col: " prefix of err through `map`.
 */
int sr_report_split(const char *t, size_t n, size_t *open, size_t *close);
int sr_report_next_item(const char *t, size_t close, size_t *pos, size_t *a, size_t *e);
void sr_report_relocate(sr_err *err, const char *name, void (*map)(void *, int *, int *),
                        void *ctx);

/* The style sheet of report.html and history.html (inline CSS, no external reference). */
const char *sr_report_css(void);

/* HTML pieces drawn in report_svg.c. */
void sr_report_svg_hist(sr_rw *w, const sr_hist *h, const char *title);
void sr_report_svg_timeline(sr_rw *w, const sr_run_result *run);

/*
 * The scenario's line(s) as the terminal and summary.txt print them (newline-terminated):
 * "PASS  <id>  <wall> s", "FAIL  <id>  <wall> s  <reason>" + "      repro: <cmd>" +
 * "      artifacts: <dir>" (when kept), "ERROR ...", "INTR  <id>  <wall> s  <reason>" (with repro
 * and artifacts, as FAIL), "SKIP  <id>  <reason>". A repeat adds
 * " #<k>" to the id. `color` wraps the label in ANSI colours.
 */
void sr_report_line(sr_rw *w, const sr_scenario_result *s, int color);

/* The last line: "N passed, N failed[, N skipped][, N interrupted]\n" (errors count as
 * failed). */
void sr_report_summary_line(sr_rw *w, const size_t counts[SR_VERDICT_COUNT]);

/* Formats a duration in ns with a unit that keeps 3 significant digits: "812 ns", "1.05 ms". */
const char *sr_report_fmt_ns(char *buf, size_t cap, double ns);

/*
 * The JUnit suite (scenario folder) of a scenario file: its directory with everything up to and
 * including a "scenarios/" component removed ("scenarios/faults/http/x.json" -> "faults/http");
 * "scenarios" when nothing is left.
 */
void sr_report_suite(char *buf, size_t cap, const char *file);

/* `id` or "id #k" for repeats beyond the first. */
const char *sr_report_display_id(char *buf, size_t cap, const sr_scenario_result *s);

/*
 * A path of the run folder relative to the run folder: `path` without the header's out_dir
 * prefix when it has it, else `path` unchanged; NULL stays NULL.
 */
const char *sr_report_relpath(const sr_run_result *run, const char *path);

/*
 * The order verdict tables list a run's scenario executions in (report_text.c): failed and
 * errored first, then interrupted, then the rest, each in the run's order. Fills idx[0..n) with
 * indexes into run->scenarios (the caller's array of run->n_scenarios entries).
 */
void sr_report_order(const sr_run_result *run, size_t *idx);

/* How many of a group of repeated checks a failure shows before "... N more like these". */
#define SR_REPORT_GROUP_SHOWN 3

/*
 * Repeated checks (report_text.c): checks of one scenario with the same name, classification
 * and expectation form a group. sr_report_check_rank gives check k's 0-based position in its
 * group; sr_report_check_group_size the number of checks in k's group.
 */
size_t sr_report_check_rank(const sr_scenario_result *s, size_t k);
size_t sr_report_check_group_size(const sr_scenario_result *s, size_t k);

/* sr_code_name(code), or "unknown.error" for a code the table does not name. */
const char *sr_report_code_name(int code);

/* 1 if a check called `name` fired in s (reads `fired`; no lock: the run is finished). */
int sr_report_fired(const sr_scenario_result *s, const char *name);

/* The first fired check that was not expected, or NULL. */
const sr_check *sr_report_first_unexpected(const sr_scenario_result *s);

#endif /* SR_REPORT_PRIV_H */
