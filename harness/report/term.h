/*
 * term: what `syncroll run` prints while it runs (docs/internals/design.md §6).
 *
 * One line per finished scenario (the lines of sr_report_line: "PASS  <id>  0.03 s",
 * "FAIL  <id>  0.03 s  <reason>" + "      repro: ..." + "      artifacts: ...", "ERROR ...",
 * "SKIP  <id>  <reason>"), and at the end the line CI reads: "N passed, N failed[, N skipped]".
 *
 * On a terminal (the stream is a TTY and the CI variable is unset or empty) a progress line
 * stays at the bottom and is redrawn after every scenario:
 *   "[ 7/11] 1 failed  0:03"  (done/total, failures so far, elapsed m:ss)
 * with the verdict labels in colour, unless NO_COLOR is set to any value or TERM is "dumb".
 * Otherwise output is plain lines only: no carriage returns and no escape sequences.
 *
 * Usage by the runner:
 *     sr_term *t; sr_term_start(&t, stdout, n_jobs, NULL, &err);
 *     ... from any worker thread, when a scenario ends: sr_term_scenario_done(t, res);
 *     ... when more work is queued (--repeat rounds, --until-fail): sr_term_add_total(t, n);
 *     sr_term_note(t, "run folder: reports/<run-id>");
 *     sr_term_finish(t, run);   (after sr_run_result_finish; prints the last line, frees t)
 *
 * Ownership: the sr_term is the caller's until sr_term_finish (or sr_term_free) releases it;
 * the stream stays the caller's. Thread-safety: scenario_done and add_total may be called from
 * several threads (the sr_term has its own lock, and nothing else should write the stream
 * meanwhile); start, finish and free belong to one thread. Errors: SR_E_INVAL, SR_E_NOMEM.
 */
#ifndef SR_TERM_H
#define SR_TERM_H

#include <stddef.h>
#include <stdio.h>

#include "result.h"
#include "sr_err.h"

typedef struct sr_term sr_term;

/* How to print; sr_term_detect fills it from the stream and the environment. */
typedef struct sr_term_opts {
    int progress; /* draw the progress line (TTY and not CI) */
    int color;    /* ANSI colours (progress, NO_COLOR unset, TERM not "dumb") */
} sr_term_opts;

/* Decides the options for stream f: TTY, CI, NO_COLOR and TERM as described above. */
void sr_term_detect(sr_term_opts *out, FILE *f);

/* Starts printing to f for `total` scenarios (0: not known yet); opts NULL: sr_term_detect. */
int sr_term_start(sr_term **out, FILE *f, size_t total, const sr_term_opts *opts, sr_err *err);

/* Adds scenarios to the expected total (more rounds). */
void sr_term_add_total(sr_term *t, size_t more);

/* Prints a finished scenario's line(s) and redraws the progress line. */
void sr_term_scenario_done(sr_term *t, const sr_scenario_result *s);

/* Prints one line of text (a newline is added) above the progress line, e.g. "run folder: ...". */
void sr_term_note(sr_term *t, const char *line);

/* Erases the progress line, prints "N passed, N failed[, N skipped]" from run->counts and
 * frees t. run NULL prints nothing more. */
void sr_term_finish(sr_term *t, const sr_run_result *run);

/* Frees without printing; NULL is a no-op. */
void sr_term_free(sr_term *t);

#endif /* SR_TERM_H */
