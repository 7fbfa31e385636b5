/*
 * runner_soak: the pass loop of a scenario. Runs the steps once, or, for a soak
 * (soak.duration_ms > 0, FORMAT.md §15; the contract is runner.h's), again and again on the same
 * engines, sampling the process's resources after each iteration and firing
 * soak.resource_growth, reading every engine's state and printing a summary at the end.
 */
#ifndef SR_RUNNER_SOAK_H
#define SR_RUNNER_SOAK_H

#include "runner_state.h"

/* Runs the steps of one iteration through run_once (the caller's pass over the steps, async
 * ones joined) once, or repeatedly for a soak. Returns the first harness error of run_once (err
 * set by it), else 0. */
int sr_run_iterations(sr_scn_run *run, int (*run_once)(sr_scn_run *, sr_err *), sr_err *err);

#endif /* SR_RUNNER_SOAK_H */
