/*
 * runner_replay: the replay step. Judges the capture the step names (a folder `syncroll proxy
 * --record` wrote) exactly as `syncroll replay` does (replay_judge.h), with no engine, and
 * records its checks in the scenario's result: a capture of a faulty engine fails the scenario
 * with the check `syncroll replay` names (routes.invalid, trace.row_count, ...), so a captured
 * report runs as a scenario (`syncroll replay --to-scenario` writes one).
 */
#ifndef SR_RUNNER_REPLAY_H
#define SR_RUNNER_REPLAY_H

#include "runner_state.h"

/* The executor of a replay step (sr_step_fn): 0 when the capture was judged (its failures are
 * checks); else the capture's named error (capture.version, capture.truncated, capture.corrupt,
 * capture.body, resource.limit, ...; replay_judge.h), a harness error of the step. */
int sr_step_replay(sr_scn_run *run, int step, sr_err *err);

/* 1 when the scenario needs no engine: it names no engines.urls and every step is a replay
 * step (the runner then starts none). */
int sr_run_replay_only(const sr_scenario *s);

#endif /* SR_RUNNER_REPLAY_H */
