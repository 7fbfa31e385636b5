/*
 * runner_soak: the pass loop of a scenario. Runs the steps once, or, for a soak
 * (soak.duration_ms > 0, FORMAT.md §15; the contract is runner.h's), again and again on the same
 * engines, sampling the process's resources after each iteration and firing
 * soak.resource_growth, reading every engine's state and printing a summary at the end.
 */
#ifndef SR_RUNNER_SOAK_H
#define SR_RUNNER_SOAK_H

#include <stddef.h>
#include <stdint.h>

#include "runner_state.h"

/* Runs the steps of one iteration through run_once (the caller's pass over the steps, async
 * ones joined) once, or repeatedly for a soak. A scenario that cannot repeat
 * (sr_soak_unsupported) runs once, with soak.unsupported skipped and its reason. Returns the
 * first harness error of run_once (err set by it), else 0. */
int sr_run_iterations(sr_scn_run *run, int (*run_once)(sr_scn_run *, sr_err *), sr_err *err);

/*
 * 1 and the reason in why (naming the step and key) when the steps of `s` cannot repeat on the
 * same engines, else 0 (FORMAT.md §15 lists the rules): a kill_engine step; a faults_fired count
 * of a fault limited by nth, count or a probability below 1; a budget on the `scenario` phase
 * (it covers the whole soak, not one iteration).
 */
int sr_soak_unsupported(const sr_scenario *s, char *why, size_t n);

/*
 * The growth rule of soak.resource_growth (FORMAT.md §15) on one resource's samples, one per
 * iteration after the warm-up. The series keeps each of at most SR_SOAK_BUCKETS buckets of
 * consecutive samples as its minimum and maximum, merging neighbours when full, so a long soak
 * holds a fixed amount of memory. Start from a zeroed struct.
 */
#define SR_SOAK_BUCKETS     64 /* even */
#define SR_SOAK_WINDOWS     4
#define SR_SOAK_MIN_SAMPLES 4 /* one per window */

typedef struct sr_soak_series {
    int64_t lo[SR_SOAK_BUCKETS], hi[SR_SOAK_BUCKETS];
    int64_t width;       /* samples in a full bucket (a power of two) */
    int64_t fill;        /* samples in the last bucket */
    int n_buckets;       /* buckets in use */
    int64_t n;           /* samples added */
    int64_t first, last; /* the first and the last sample */
} sr_soak_series;

void sr_soak_series_add(sr_soak_series *s, int64_t v);

typedef struct sr_soak_growth {
    int judged;                     /* 0: fewer than SR_SOAK_MIN_SAMPLES samples */
    int rising;                     /* every window's floor is above the one before */
    int leak;                       /* rising, and growth > the allowance */
    int64_t floor[SR_SOAK_WINDOWS]; /* each window's minimum, early to late */
    int64_t early_ceiling;          /* the early window's maximum */
    int64_t growth;                 /* floor[late] - early_ceiling */
} sr_soak_growth;

/* Splits the samples into SR_SOAK_WINDOWS consecutive windows of (nearly) equal length and
 * judges: a leak when the floors rise window after window and the late floor exceeds the early
 * ceiling by more than `allowance`. */
sr_soak_growth sr_soak_judge(const sr_soak_series *s, int64_t allowance);

#endif /* SR_RUNNER_SOAK_H */
