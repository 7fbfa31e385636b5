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
 * k > 0 draws its prompts and environments from (seed, k) and names its sessions
 * "<id>/<step>.<k>/<i>", so no two iterations send the same requests. After each iteration the
 * runner samples the process's open descriptors and resident memory (/proc/self); at the end it
 * fires soak.resource_growth if either grew past its allowance after the warm-up iterations,
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
 * Step executors share sr_scn_run. The dispatch table is runner_steps.c's; sync_weights is
 * executed by sr_step_sync_weights (runner_steps.c) — the weight-sync module plugs in there.
 *
 * Thread-safety: a runner call owns its sr_scn_run; async step threads read it and write only
 * their own sr_step_state and the result entry (through its locked functions). Engines, client
 * and verifier are shared read-only (the client and verifier are thread-safe).
 */
#ifndef SR_RUNNER_H
#define SR_RUNNER_H

#include <pthread.h>
#include <stdint.h>

#include "client/client.h"
#include "procs.h"
#include "report/result.h"
#include "rollout.h"
#include "scenario/scenario.h"
#include "verify.h"

typedef struct sr_run_opts {
    const char *self_exe; /* the syncroll executable that engines are spawned from */
    const char *work_dir; /* this scenario's folder (exists; the runner writes into it) */
    const char *expanded; /* where to write the expanded scenario */
    const char *repro;    /* the repro command line to record */
    int repeat;           /* 1-based execution number */
    double run_t0_ms;     /* sr_client_now_ms() when the run started */
    int jobs;             /* scenarios running side by side in this process (min(-j, scenarios));
                             soak resource checks measure the whole process, so they need 1 (0
                             counts as 1) */
} sr_run_opts;

/* The runtime of one step. */
typedef struct sr_step_state {
    pthread_t thread;
    int async_started; /* a thread runs it */
    int joined;        /* finished and accounted for */
    int rc;            /* its harness error, 0 if none */
    sr_err err;
    double start_ms, end_ms;     /* since the scenario started */
    sr_rollout_result *rollouts; /* rollout steps: batch results (owned) */
    int64_t n_rollouts;
} sr_step_state;

/* Everything the steps of one running scenario share. */
typedef struct sr_scn_run {
    const sr_scenario *scn;
    sr_scenario_result *res;
    const sr_run_opts *opts;
    sr_proc procs[SR_ENGINE_MAX_COUNT];
    int n_procs;                      /* spawned engines (0 for external ones) */
    int crashed[SR_ENGINE_MAX_COUNT]; /* engine.crashed already fired for engine i */
    char *urls[SR_ENGINE_MAX_COUNT];
    int n_engines;
    sr_client *client;
    sr_verifier *verifier;  /* NULL for external engines */
    double t0_ms;           /* scenario start, sr_client_now_ms() */
    pthread_mutex_t mu;     /* guards weight_version */
    int64_t weight_version; /* the version the trainer last published (weights.version first) */
    sr_step_state *steps;   /* one per scenario step */
    struct sr_sync *sync;   /* the weight-sync state of step_sync.c, NULL until a sync runs */
    int64_t iteration;      /* 0-based pass over the steps (soak, runner_soak.c) */
} sr_scn_run;

/* A step executor: 0 when the step ran (its checks are in the result), else a harness error. */
typedef int (*sr_step_fn)(sr_scn_run *run, int step, sr_err *err);

/* The executor of a step kind (runner_steps.c). */
sr_step_fn sr_step_executor(sr_step_kind kind);

/* Executors defined outside runner_steps.c. */
int sr_step_sync_weights(sr_scn_run *run, int step, sr_err *err);

/* Frees what sr_step_sync_weights kept in run->sync (called once, at the scenario's end). */
void sr_step_sync_release(sr_scn_run *run);

/* Joins step `step` if it runs asynchronously (no-op otherwise); records its end and error. */
int sr_step_join(sr_scn_run *run, int step, sr_err *err);

/* A check at step `step` (no sample/turn/row/layer), message printf-style. */
int sr_run_check(sr_scn_run *run, int step, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Milliseconds since the scenario started. */
double sr_run_now_ms(const sr_scn_run *run);

/* Fires engine.crashed for every spawned engine that has exited since the last poll. */
void sr_run_poll_engines(sr_scn_run *run, int step);

/* Runs the steps once, or repeatedly for a soak (runner_soak.c); the steps of one iteration
 * through run_once (runner.c's pass over the steps, async ones joined). */
int sr_run_iterations(sr_scn_run *run, int (*run_once)(sr_scn_run *, sr_err *), sr_err *err);

/* Sets the verdict of a scenario whose steps ran, from its fired checks and `expect`. */
void sr_run_judge(sr_scenario_result *res, const sr_scenario *s);

/*
 * Runs one scenario (contract above) and fills `res` completely: identity, verdict, checks,
 * timings, counters, engines. Never fails: harness problems become the verdict `error`.
 */
void sr_run_scenario(sr_scenario_result *res, const sr_scenario *scn, const sr_run_opts *opts);

#endif /* SR_RUNNER_H */
