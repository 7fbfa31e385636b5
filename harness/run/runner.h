/*
 * runner: executes one loaded scenario (scenario.h) into its result entry (result.h).
 *
 * Lifecycle of one scenario: write the expanded scenario and the engine config into the work
 * folder; start the engines (`syncroll engine --port 0 --ready-fd 3 --lifetime <timeout_ms>` via
 * procs.h, stderr and stdout to <work>/engine-<i>.log) and wait for their readiness lines within
 * engines.ready_timeout_ms, or take engines.urls; run the trainer-config check (trainer.*); run
 * the steps in order; join every async step still running; check the budgets; stop the engines
 * (SIGTERM, SIGKILL after engines.stop_grace_ms); judge the verdict against `expect`.
 *
 * Soak (soak.duration_ms > 0, FORMAT.md §15; runner_soak.c): the steps run again and again on
 * the same engines, a new iteration starting while less than the duration has passed. Iteration
 * k > 0 draws its prompts and environments from (seed, k) and names its sessions afresh
 * (sr_soak_session: each sample stays on the engine it had in the first iteration), so no two
 * iterations send the same requests; explicit sync versions and check_state / wait counters are
 * taken relative to the iteration (runner_soak.h). After each iteration the runner samples the
 * process's open descriptors and resident memory (/proc/self); at the end it fires
 * soak.resource_growth when the growth rule of FORMAT.md §15 finds a leak (quarter minimums
 * rising, the last above the first quarter's maximum by more than the allowance),
 * reads every engine's state (engine.control if one does not answer) and prints one summary
 * line on standard error. Iterations stop early once a check the scenario does not expect has
 * fired or an engine has crashed. The engines' watchdog is timeout_ms + soak.duration_ms.
 *
 * Steps run on the calling thread, except steps with "async": true, which run on a thread of
 * their own until a `wait` step (or a step that needs their result, such as `collate`, or the
 * end of the scenario) joins them. After every step the runner polls the engines: one that has
 * exited fires engine.crashed (once per engine). A harness error (a step that cannot run, a
 * spawn failure, out of memory) makes the verdict `error`; checks make it `fail` unless
 * expected.
 *
 * The runner is layered, each file using only those below it: runner_state.h (the run state,
 * sr_scn_run, and its small helpers) at the bottom; on it the rollout step (runner_rollout.h),
 * the other steps with the dispatch table (runner_steps.h, which names the rollout executor)
 * and the soak loop (runner_soak.h); the verdict (runner_verdict.h) stands alone; runner.c, the
 * scenario's lifecycle, is on top.
 *
 * Thread-safety: sr_run_scenario may run several scenarios at once on different threads (each
 * call owns its state); runner_state.h says how a scenario's own step threads share it.
 */
#ifndef SR_RUNNER_H
#define SR_RUNNER_H

#include "report/result.h"
#include "runner_state.h"
#include "scenario/scenario.h"

/*
 * Runs one scenario (contract above) and fills `res` completely: identity, verdict, checks,
 * timings, counters, engines. Never fails: harness problems become the verdict `error`.
 * sr_run_opts is runner_state.h's.
 */
void sr_run_scenario(sr_scenario_result *res, const sr_scenario *scn, const sr_run_opts *opts);

/*
 * As sr_run_scenario, under the run's stop switch `stop` (runner_state.h; NULL: none): its
 * engines are listed there, and once a stop signal is recorded the scenario stops at its next
 * safe point with the verdict `interrupted` and the check run.interrupted (whatever else fired).
 */
void sr_run_scenario_in(sr_scenario_result *res, const sr_scenario *scn, const sr_run_opts *opts,
                        sr_run_stop *stop);

#endif /* SR_RUNNER_H */
