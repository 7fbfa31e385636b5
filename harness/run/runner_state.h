/*
 * runner_state: the state of one running scenario (sr_scn_run) and the small helpers every
 * part of the runner uses on it: recording a check, joining an async step, reading an engine's
 * state. The lowest layer of the runner: the step executors (runner_rollout.c, runner_steps.c)
 * and the soak loop (runner_soak.c) build on it, the scenario lifecycle (runner.c) on top of
 * those; it uses none of them.
 *
 * Thread-safety: a runner call owns its sr_scn_run; async step threads read it and write only
 * their own sr_step_state and the result entry (through its locked functions). Engines, client
 * and verifier are shared read-only (the client and verifier are thread-safe). sr_run_check and
 * sr_run_engine_state may be called from any step thread; sr_step_join only from the thread
 * running the scenario's steps.
 */
#ifndef SR_RUNNER_STATE_H
#define SR_RUNNER_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "client/client.h"
#include "procs.h"
#include "report/result.h"
#include "rollout.h"
#include "scenario/scenario.h"
#include "verify.h"

/*
 * The stop switch of a whole run, shared by every scenario running in it (owned by the caller,
 * cli/cmd_run_exec.c). `signo` turns from 0 to the first stop signal's number (SIGINT, SIGTERM)
 * once, from any thread; the runner reads it at its safe points (before each step, soak iteration
 * and rollout, in its waits) and then ends the scenario with the verdict `interrupted` and the
 * check run.interrupted. Every engine the runner spawns is listed in `procs`, so the signal's
 * watcher can stop them all at once, which also ends any request still waiting on one of them.
 */
typedef struct sr_run_stop {
    atomic_int signo;
    sr_proc_reg procs;
} sr_run_stop;

/* How to run one scenario (runner.h, sr_run_scenario). */
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
    int64_t weight_version; /* the version the trainer declared current: weights.version first,
                               then each sync's target once every engine applied it, before
                               the resume (runner_steps.c); rollouts stamp turns with it */
    sr_step_state *steps;   /* one per scenario step */
    struct sr_sync *sync;   /* the weight-sync state of the sync_weights step (runner_steps.c),
                               NULL until a sync runs */
    int64_t iteration;      /* 0-based pass over the steps (soak, runner_soak.c) */
    cJSON *soak_base[SR_ENGINE_MAX_COUNT]; /* soak iteration k > 0: each engine's state when the
                                              iteration started (owned by runner_soak.c), the
                                              zero of check_state's and wait.until's counters;
                                              NULL otherwise (counters are absolute) */
    sr_run_stop *stop;                     /* the run's stop switch, or NULL (never interrupted) */
    atomic_llong evidence_used; /* bytes of failure evidence written (evidence.h, its cap) */
} sr_scn_run;

/* The stop signal's number once the run was interrupted (sr_run_stop), else 0. Any thread. */
int sr_run_stopped(const sr_scn_run *run);

/* A step executor: 0 when the step ran (its checks are in the result), else a harness error. */
typedef int (*sr_step_fn)(sr_scn_run *run, int step, sr_err *err);

/* A check at step `step` (-1: none; no sample/turn/row/layer), message printf-style. Returns
 * what sr_result_check returns (0, or SR_E_NOMEM when it could not be recorded). */
int sr_run_check(sr_scn_run *run, int step, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Joins step `step` if it runs asynchronously and is not joined yet (no-op otherwise), records
 * its end and code in the result, and returns its harness error (copied into err if not NULL). */
int sr_step_join(sr_scn_run *run, int step, sr_err *err);

/* GET /syncroll/v1/state of engine `engine` into *out (owned; cJSON_Delete). 0, or the
 * control-plane error with its message in err. */
int sr_run_engine_state(cJSON **out, sr_scn_run *run, int engine, sr_err *err);

/*
 * Soak iteration k > 0 (FORMAT.md §15): replaces `name`, the iteration-0 session id of sample i
 * of rollout step `step` ("<id>/<step>/<i>"), with "<id>/<step>.<k>/<i>", or
 * "<id>/<step>.<k>.<j>/<i>" with the smallest j >= 1 whose engine (sr_client_engine_for) is the
 * one the iteration-0 id goes to: every iteration sends new sessions, each sample to the same
 * engine, so per-engine counts and conditions repeat. `n` is the size of name.
 */
void sr_soak_session(char *name, size_t n, const sr_scn_run *run, int step, int64_t i);

#endif /* SR_RUNNER_STATE_H */
