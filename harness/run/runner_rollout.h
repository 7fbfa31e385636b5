/*
 * runner_rollout: the rollout step. Draws the step's prompts and environments from the
 * scenario's seed (and, in a soak, the iteration), runs the batch on the client's threads
 * (rollout.h), verifies every rollout (verify.h) and keeps the results in the step's state for
 * the steps that need them (collate). Session ids are "<id>/<step>/<i>", or in soak iteration
 * k > 0 "<id>/<step>.<k>/<i>" made to reach the same engine (sr_soak_session, runner_state.h).
 */
#ifndef SR_RUNNER_ROLLOUT_H
#define SR_RUNNER_ROLLOUT_H

#include "runner_state.h"

/* The executor of a rollout step (sr_step_fn): 0 when the batch ran, with every rollout's
 * outcome recorded as counters and checks, else a harness error (out of memory, a verifier
 * error). */
int sr_step_rollout(sr_scn_run *run, int step, sr_err *err);

#endif /* SR_RUNNER_ROLLOUT_H */
