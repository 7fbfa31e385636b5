/*
 * runner_steps: the step dispatch table, and the executors of every step kind but rollout
 * (runner_rollout.h): sync_weights (the weight-sync module, sync/sync.h, plugs in here),
 * collate, pause, resume, wait, check_state, kill_engine, sleep and wake_up (probe and replay:
 * runner_probe.h, runner_replay.h). scenarios/FORMAT.md describes what
 * each step does; runner.h how steps are run (in order, async ones on their own threads).
 */
#ifndef SR_RUNNER_STEPS_H
#define SR_RUNNER_STEPS_H

#include "runner_state.h"

/* The executor of a step kind (never NULL for a kind below SR_STEP_KIND_COUNT, as unit.scenario
 * checks); NULL outside the enum. */
sr_step_fn sr_step_executor(sr_step_kind kind);

/* Frees what the sync_weights steps kept in run->sync (called once, at the scenario's end). */
void sr_step_sync_release(sr_scn_run *run);

#endif /* SR_RUNNER_STEPS_H */
