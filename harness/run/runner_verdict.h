/*
 * runner_verdict: the verdict of a scenario whose steps ran, from the checks that fired and its
 * `expect` (scenarios/FORMAT.md).
 */
#ifndef SR_RUNNER_VERDICT_H
#define SR_RUNNER_VERDICT_H

#include "report/result.h"
#include "scenario/scenario.h"

/* Sets the verdict of `res` from its fired checks and the expectations of `s`: fail, with the
 * first reason found (a check fired that is not expected, an expected check or row class did not
 * fire, a row class fired that is not expected), else pass. */
void sr_run_judge(sr_scenario_result *res, const sr_scenario *s);

#endif /* SR_RUNNER_VERDICT_H */
