/*
 * history: many runs of one suite (one run folder per night) read as one timeline (issue 23):
 * each scenario's verdict night by night, where it started failing and the git revs around
 * that, which scenarios flake, and the run's p50/p99 per phase night by night.
 *
 * Building. sr_history_add takes one loaded run (sr_report_load) and keeps only what the
 * history needs (so a run may be freed at once: memory grows with nights x scenarios, not with
 * the runs' size); sr_history_skip records a night that could not be read, which is reported
 * and left out, never fatal. sr_history_finish orders the nights by start time (then name),
 * keeps the newest `last` and analyses them. Then the renderers read it.
 *
 * A scenario's verdict in a night merges its executions (repeats): `mixed` when one passed and
 * another failed or errored, else fail, error, pass, interrupted or skip; `absent` when the
 * night did not run it. Only pass (good) and fail, error (bad) and mixed (both) are judged:
 *   - flaky: a mixed night; or good and bad in two nights of one git rev; or at least
 *     SR_HISTORY_FLAKY_CHANGES changes between good and bad over the window;
 *   - failing: the newest judged verdict is bad or mixed (flaky or not: a scenario whose latest
 *     night failed is always listed as failing): `first_fail` is the first night of that bad
 *     streak, `last_pass` the good night before it (-1: bad since the window's first judged
 *     night), whose git revs bracket the change.
 *
 * A results.json may be crafted: a start time that is not shaped like an ISO 8601 time is kept
 * as "invalid"; every other string is escaped by the HTML and JSON renderers and cleaned of
 * control characters by the text renderer.
 *
 * Bounds: at most SR_HISTORY_MAX_NIGHTS nights (added or skipped) and SR_HISTORY_MAX_SCENARIOS
 * distinct ids; beyond them sr_history_add and sr_history_skip return SR_E_LIMIT. Strings are
 * copied as they are; the renderers escape them (HTML, JSON) or clean them (text).
 *
 * Errors: SR_E_INVAL, SR_E_NOMEM, SR_E_LIMIT. Ownership: sr_history_new's object is the
 * caller's (sr_history_free); every string in it is owned by it. Thread-safety: one thread
 * builds it; after sr_history_finish it may be read from several.
 */
#ifndef SR_HISTORY_H
#define SR_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "sr_buf.h"
#include "sr_err.h"

#define SR_HISTORY_MAX_NIGHTS    4096
#define SR_HISTORY_MAX_SCENARIOS 65536
#define SR_HISTORY_FLAKY_CHANGES 3

typedef enum sr_hcell {
    SR_HCELL_ABSENT = 0,
    SR_HCELL_PASS,
    SR_HCELL_FAIL,
    SR_HCELL_ERROR,
    SR_HCELL_MIXED, /* pass and fail/error among one night's executions */
    SR_HCELL_SKIP,
    SR_HCELL_INTERRUPTED,
    SR_HCELL_COUNT
} sr_hcell;

/* "absent", "pass", "fail", "error", "mixed", "skip", "interrupted". */
const char *sr_hcell_name(sr_hcell c);

typedef struct sr_hnight {
    char *name;                         /* the run folder's name */
    char *run_id, *git_rev, *run_group; /* NULL when unknown */
    char start_iso[32];
    int64_t start_unix_ms;
    int partial;
    size_t counts[SR_VERDICT_COUNT];
    uint64_t phase_count[SR_PHASE_COUNT]; /* samples per phase (run level) */
    double p50_ms[SR_PHASE_COUNT], p99_ms[SR_PHASE_COUNT];
    size_t order;      /* position when added (ties of start time) */
    uint32_t *cell_id; /* scenario index of each verdict below */
    uint8_t *cell;     /* sr_hcell */
    float *cell_wall;  /* the scenario's wall time in ms (its executions' mean); per cell */
    float *cell_p99;   /* per cell SR_PHASE_COUNT p99s in ms (the largest of its executions;
                        * -1: no sample) */
    size_t n_cells;
} sr_hnight;

typedef struct sr_hskip {
    char *name;
    int code;
    char message[SR_ERR_MSG_MAX];
} sr_hskip;

typedef struct sr_hscenario {
    char *id;
    uint8_t *timeline; /* sr_hcell per kept night, oldest first (after sr_history_finish) */
    float *wall_ms;    /* per kept night: its wall time in ms, -1 when absent */
    float *p99_ms;     /* per kept night, SR_PHASE_COUNT p99s in ms each, -1 for no sample */
    int flaky;
    char flaky_why[256];
    long first_fail, last_pass;  /* night indexes; -1 when none (see above) */
    int failing;                 /* newest judged verdict bad, and not flaky */
    size_t seen_night, seen_pos; /* building: the night (order + 1) last adding it, its cell */
} sr_hscenario;

typedef struct sr_history {
    sr_hnight *nights; /* oldest first after sr_history_finish */
    size_t n_nights, cap_nights;
    sr_hskip *skipped;
    size_t n_skipped, cap_skipped;
    size_t dropped; /* older nights left out by `last` */
    sr_hscenario *scenarios;
    size_t n_scenarios, cap_scenarios;
    uint32_t *index; /* open-addressing table of scenario ids (index + 1; 0 empty) */
    size_t index_cap;
} sr_history;

int sr_history_new(sr_history **out, sr_err *err);
void sr_history_free(sr_history *h);

/* Adds the run folder `name` as one night (the run is only read). */
int sr_history_add(sr_history *h, const char *name, const sr_run_result *run, sr_err *err);

/* Records a night that could not be read: its name, the error's code and message. */
int sr_history_skip(sr_history *h, const char *name, int code, const char *message, sr_err *err);

/* Orders and keeps the newest `last` nights (0: all), then computes timelines and verdicts. */
int sr_history_finish(sr_history *h, size_t last, sr_err *err);

/*
 * Renders the finished history, appended to `out`: `text` the terminal lines (one per skipped
 * night, failing scenario and flaky scenario, then a count line), `json` history.json (schema in
 * reports/README.md), `html` history.html (one self-contained page: tables, a verdict grid and
 * an inline SVG trend chart per phase, and per scenario a trend of its wall time and of each
 * phase's p99 night by night). SR_E_NOMEM, SR_E_LIMIT (SR_REPORT_MAX_BYTES).
 */
int sr_history_render_text(sr_buf *out, const sr_history *h, sr_err *err);
int sr_history_render_json(sr_buf *out, const sr_history *h, sr_err *err);
int sr_history_render_html(sr_buf *out, const sr_history *h, sr_err *err);

/* Writes history.html and history.json into the existing folder `dir`, each atomically
 * (SR_E_IO naming the file); both are attempted, the first error is returned. */
int sr_history_write(const sr_history *h, const char *dir, sr_err *err);

#endif /* SR_HISTORY_H */
