/*
 * report: the reporters of a run (docs/internals/design.md §6) over the result model of result.h.
 *
 * Four reporters, each a separate file behind one table (SR_REPORTER_TABLE below), each writing
 * one file into the run folder <out>/<run-id>/:
 *   text   summary.txt   one line per scenario, failures with checks, repro and artifacts, the
 *                        latency table per phase, counters, and the last line
 *                        "N passed, N failed[, N skipped]" (errors count as failed);
 *   json   results.json  the whole model, with every phase histogram as sparse buckets so that
 *                        `syncroll report` re-renders (and merges) exactly; the schema is
 *                        documented in reports/README.md (schema 1);
 *   junit  junit.xml     testsuites -> one testsuite per scenario folder -> one testcase per
 *                        scenario execution; failure / error / skipped; properties; valid
 *                        against tests/junit.xsd;
 *   html   report.html   one self-contained page (no external assets, no script): verdict table,
 *                        failures (message, checks, repro, links to artifacts), latency table
 *                        and an inline SVG histogram per phase, a per-scenario step timeline.
 * Every output is valid UTF-8: bytes that are not (they may come from captured bodies) are
 * replaced by U+FFFD; XML outputs also drop the control characters XML 1.0 forbids.
 *
 * Latencies: the model's histograms hold nanoseconds (sr_hist); tables show count, min, p50,
 * p90, p99, p99.9, max and mean (sr_report_latency); text and JSON tables are in milliseconds.
 *
 * Files are written atomically (a temporary file in the same folder, then rename), so a reader
 * never sees half a report. `<out>/latest` is pointed at the newest run by the runner
 * (cli/cmd_run_exec.c) when it creates the run folder; re-rendering does not move it.
 *
 * Errors: SR_E_INVAL (NULL argument, unknown reporter name, empty `which`), SR_E_NOMEM,
 * SR_E_LIMIT (an output above SR_REPORT_MAX_BYTES), SR_E_IO (cannot write or rename);
 * sr_report_load: SR_E_IO, SR_E_JSON_SYNTAX, SR_E_JSON_SCHEMA (wrong type, unsupported schema,
 * a histogram whose buckets disagree with its count, min or max), SR_E_LIMIT (file too large).
 *
 * Thread-safety: every function reads the run only; the run must not change meanwhile (call
 * after sr_run_result_finish). Distinct runs may be reported from distinct threads.
 */
#ifndef SR_REPORT_H
#define SR_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "result.h"
#include "sr_buf.h"
#include "sr_err.h"
#include "sr_hist.h"

/*
 * The reporters, as one table: the symbol of its bit (SR_REPORT_<SYM>), its name in `--report`
 * lists, the file it writes and its render function (one file of this folder, declared in
 * report_priv.h). The bits, report.c's reporter array, the `--report` parser and its message,
 * and the reporter names in the help of `syncroll run` and `syncroll report`
 * (sr_report_names) all derive from it; a new reporter is one row here and its file.
 */
#define SR_REPORTER_TABLE(X)                                                                       \
    X(TEXT, "text", "summary.txt", sr_report_text)                                                 \
    X(JSON, "json", "results.json", sr_report_json)                                                \
    X(JUNIT, "junit", "junit.xml", sr_report_junit)                                                \
    X(HTML, "html", "report.html", sr_report_html)

/* The reporter's row in the table; SR_REPORTER_COUNT rows. */
enum {
#define SR_REPORTER_ROW(sym, name, file, render) SR_REPORTER_##sym,
    SR_REPORTER_TABLE(SR_REPORTER_ROW)
#undef SR_REPORTER_ROW
        SR_REPORTER_COUNT
};

/* Reporter bits for `which`: the bit of row i is 1u << i. */
enum {
#define SR_REPORTER_BIT(sym, name, file, render) SR_REPORT_##sym = 1u << SR_REPORTER_##sym,
    SR_REPORTER_TABLE(SR_REPORTER_BIT)
#undef SR_REPORTER_BIT
};
#define SR_REPORT_ALL ((1u << SR_REPORTER_COUNT) - 1u)

/* Largest output one reporter may produce, and the largest results.json sr_report_load reads. */
#define SR_REPORT_MAX_BYTES ((size_t)256 << 20)

/*
 * Parses a comma-separated list of reporter names ("text,json,junit,html", or "all") into bits.
 * Spaces around names are ignored. SR_E_INVAL names the unknown entry; an empty list is
 * SR_E_INVAL too.
 */
int sr_report_parse_list(unsigned *out, const char *list, sr_err *err);

/* The file name of one reporter bit ("results.json"), NULL if `bit` is not exactly one. */
const char *sr_report_file_name(unsigned bit);

/*
 * Writes the names of the reporters in `which` into dst (cap bytes, always NUL-terminated), in
 * table order and joined by `sep` (",": "text,json,junit,html"), for help texts; names that do
 * not fit are left out whole. Returns dst.
 */
const char *sr_report_names(char *dst, size_t cap, unsigned which, const char *sep);

/*
 * Writes the reports selected by `which` into the existing folder `dir` (normally the run's
 * header.out_dir). Every selected reporter is attempted; the first error is returned.
 */
int sr_report_write(const sr_run_result *run, const char *dir, unsigned which, sr_err *err);

/* Renders one reporter (exactly one bit) into `out` (appended), without touching the disk. */
int sr_report_render(sr_buf *out, const sr_run_result *run, unsigned bit, sr_err *err);

/*
 * Reads a results.json written by the json reporter back into a new run (*out, the caller's,
 * freed with sr_run_result_free), histograms included, and calls sr_run_result_finish. Keys it
 * does not know are ignored (a newer writer); missing ones take empty values. Rendering the
 * loaded run gives the same reports, results.json included, byte for byte (integers up to 2^53
 * are exact; JSON numbers are doubles).
 */
int sr_report_load(sr_run_result **out, const char *path, sr_err *err);

/* The same from `len` bytes in memory; `name` prefixes messages (NULL: "<input>"). */
int sr_report_load_mem(sr_run_result **out, const char *data, size_t len, const char *name,
                       sr_err *err);

/*
 * Merges the shard runs of one run (`syncroll run` on N CI jobs, each with shard K/N) into a
 * new run *out (the caller's, freed with sr_run_result_free): every scenario execution of every
 * shard, copied, ordered round by round and then by file and id; the header of the first shard
 * (version, git rev, run group, options, machine, command) with no shard of its own, the
 * earliest start, the wall time from it to the latest end, `merged_from` listing the
 * shards' run ids in shard order, `shards` the same with each shard's host and command,
 * `merged_of` the shard count; each scenario's `shard` says which shard ran it. A shard that
 * was partial makes the merge partial. A pure
 * function: the shards are only read. `names[i]` (e.g. the folder) names shard i in messages.
 *
 * Errors, each naming the shards involved: SR_E_REPORT_RUN_MISMATCH (a run that is not a
 * shard, or shards whose git rev, run group, selection options or shard count differ),
 * SR_E_REPORT_SHARD_DUPLICATE (two inputs hold the same shard K), SR_E_REPORT_SCENARIO_TWICE
 * (one scenario id and repeat in two shards), SR_E_INVAL, SR_E_NOMEM; *out is then NULL.
 * SR_E_REPORT_SHARD_MISSING (shards of 1..N absent, each listed) is the one error with *out
 * set: the merge of the shards present, marked partial ("shard 3/4 missing").
 */
int sr_report_merge(sr_run_result **out, const sr_run_result *const *shards,
                    const char *const *names, size_t n, sr_err *err);

/* One row of a latency table, in nanoseconds. */
typedef struct sr_latency_row {
    uint64_t count, min, p50, p90, p99, p999, max;
    double mean;
} sr_latency_row;

/* Fills a latency row from a histogram (all zero when it is empty). */
void sr_report_latency(sr_latency_row *out, const sr_hist *h);

/* One phase whose p99 regressed against a baseline. */
typedef struct sr_regression {
    char scope[128]; /* "run" or a scenario id */
    sr_phase phase;
    uint64_t base_p99, cur_p99; /* nanoseconds */
    double pct;                 /* (cur - base) / base * 100 */
} sr_regression;

/*
 * Compares p99 per phase of `cur` against `base`: for the whole run, and for every scenario id
 * present in both (repeats merged). A phase regresses when both sides recorded at least one
 * sample, base p99 > 0 and cur p99 exceeds it by more than threshold_pct percent. Writes every
 * regression to *out (the caller frees it with free(); NULL when there is none) and their
 * number to *n. SR_E_INVAL for a negative or non-finite threshold; SR_E_NOMEM.
 */
int sr_report_compare(sr_regression **out, size_t *n, const sr_run_result *cur,
                      const sr_run_result *base, double threshold_pct, sr_err *err);

/* The default threshold of `syncroll report --baseline`, in percent. */
#define SR_REPORT_DEFAULT_THRESHOLD 20.0

/* The default absolute floor of `syncroll report --baseline` (0.1 ms), in nanoseconds. */
#define SR_REPORT_DEFAULT_FLOOR_NS 100000u

/* The default number of regressions `syncroll report --baseline` prints (--top). */
#define SR_REPORT_DEFAULT_TOP 10

/* The regressions of sr_report_compare_sized. */
typedef struct sr_regressions {
    sr_regression *v; /* largest increase first; the caller frees it with free() */
    size_t n;
    size_t under_floor; /* above the threshold in percent, but by no more than the floor */
} sr_regressions;

/*
 * sr_report_compare, for people: a regression must also grow p99 by more than `floor_ns`
 * nanoseconds (a phase of 2 us that became 3 us is +50 % but no signal), and the list is
 * ordered by the size of the increase in nanoseconds, largest first (then by percentage,
 * scope, phase), except that the `scenario` phase, which holds all the others, comes after
 * every other phase. Those ignored by the floor are counted in under_floor. The same errors.
 */
int sr_report_compare_sized(sr_regressions *out, const sr_run_result *cur,
                            const sr_run_result *base, double threshold_pct, uint64_t floor_ns,
                            sr_err *err);

#endif /* SR_REPORT_H */
