/* Running one scenario: engines, steps, budgets, verdict (runner.h). */
#include "runner.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evidence.h"
#include "runner_probe.h"
#include "runner_replay.h"
#include "runner_soak.h"
#include "runner_steps.h"
#include "runner_verdict.h"
#include "sr_replay_config.h"
#include "sync/sync.h"

/* One generate in this many per client conn is measured in thread CPU time (results.json's
 * phases' "cpu"). */
#define SR_RUN_CPU_EVERY 4

/* Milliseconds since the scenario started. */
static double elapsed_ms(const sr_scn_run *run)
{
    return sr_client_now_ms() - run->t0_ms;
}

/* ---- engines ---- */

/* Fires engine.crashed for every spawned engine that has exited since the last poll. */
static void poll_engines(sr_scn_run *run, int step)
{
    for (int i = 0; i < run->n_procs; i++) {
        if (run->crashed[i] || !sr_proc_poll_exit(&run->procs[i]))
            continue;
        char how[64];
        run->crashed[i] = 1;
        sr_check_where w = SR_CHECK_WHERE_NONE;
        w.step = step;
        w.engine = i;
        sr_result_check(run->res, "engine.crashed", NULL, &w,
                        "scenario %s: engine %d (pid %ld) %s during the scenario (log: %s)",
                        run->scn->id, i, (long)run->procs[i].pid,
                        sr_proc_describe(&run->procs[i], how, sizeof(how)),
                        run->res->engines[i].log);
    }
}

static int spawn_one(sr_scn_run *run, int i, const char *cfg, sr_err *err)
{
    const sr_scenario *s = run->scn;
    char log[4096], idx[16], life[32];
    snprintf(log, sizeof(log), "%s/engine-%d.log", run->opts->work_dir, i);
    snprintf(idx, sizeof(idx), "%d", i);
    /* A soak keeps its engines for its whole duration, so the watchdog allows for it. */
    snprintf(life, sizeof(life), "%.3f", (double)(s->timeout_ms + s->soak_duration_ms) / 1000.0);
    sr_engine_run *er = &run->res->engines[i];
    er->index = i;
    er->pid = -1;
    int rc = sr_result_set_str(&er->log, log, err);
    /* sh only redirects the engine's output into its log, then becomes the engine (exec), so
     * the pid procs.h signals is the engine's own. */
    char *argv[] = {"sh",
                    "-c",
                    "exec \"$@\" >>\"$0\" 2>&1",
                    log,
                    (char *)run->opts->self_exe,
                    "engine",
                    "--port",
                    "0",
                    "--ready-fd",
                    "3",
                    "--config",
                    (char *)cfg,
                    "--index",
                    idx,
                    "--lifetime",
                    life,
                    NULL};
    /* sh would report a missing engine only as an early exit (engine.crashed); an engine that
     * cannot be executed at all is the harness's problem, so it is checked here. */
    if (!rc && access(run->opts->self_exe, X_OK) != 0)
        rc = sr_err_set(err, SR_E_PROC_SPAWN, "cannot execute the engine %s", run->opts->self_exe);
    sr_proc_reg *reg = run->stop ? &run->stop->procs : NULL;
    if (!rc)
        rc = sr_proc_spawn_in(&run->procs[i], reg, "/bin/sh", argv, err);
    if (!rc) {
        er->pid = (long)run->procs[i].pid;
        run->n_procs = i + 1;
        /* The pid (and process group) on disk, for whoever must make sure it is gone. */
        snprintf(log, sizeof(log), "%s/engine-%d.pid", run->opts->work_dir, i);
        FILE *f = fopen(log, "w");
        if (f) {
            fprintf(f, "%ld\n", (long)run->procs[i].pid);
            fclose(f);
        }
    }
    return rc;
}

/*
 * The folder the engines may write besides the scenario's sync_dirs: the absolute form of the
 * sync folder the scenario's sync_weights steps publish into (sr_sync_step_dir of work_dir).
 */
static int engines_sync_dir(char *out, size_t cap, const char *work_dir, sr_err *err)
{
    char *abs = realpath(work_dir, NULL);
    if (!abs)
        return sr_err_set(err, SR_E_IO, "%s: cannot resolve the work folder: %s", work_dir,
                          strerror(errno));
    int rc = sr_sync_step_dir(out, cap, abs, err);
    free(abs);
    return rc;
}

/* 1: the engines run; 0: they could not start (engine.crashed fired); <0: harness error. */
static int start_engines(sr_scn_run *run, sr_err *err)
{
    const sr_scenario *s = run->scn;
    int n = s->engine.count;
    run->res->engines = calloc((size_t)n, sizeof(*run->res->engines));
    if (!run->res->engines)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the engine list");
    run->res->n_engines = (size_t)n;
    run->n_engines = n;
    if (s->n_urls) {
        for (int i = 0; i < n; i++) {
            run->res->engines[i].index = i;
            run->res->engines[i].pid = -1;
            if (!(run->urls[i] = strdup(s->urls[i])) ||
                sr_result_set_str(&run->res->engines[i].url, s->urls[i], err))
                return sr_err_set(err, SR_E_NOMEM, "cannot copy the engine URLs");
        }
        return 1;
    }
    char cfg[4096], sync[4200];
    snprintf(cfg, sizeof(cfg), "%s/engine.json", run->opts->work_dir);
    int rc = engines_sync_dir(sync, sizeof(sync), run->opts->work_dir, err);
    if (!rc)
        rc = sr_scenario_write_engine(s, cfg, sync, err);
    for (int i = 0; !rc && i < n; i++)
        rc = spawn_one(run, i, cfg, err);
    if (rc)
        return rc;
    sr_err e2 = SR_ERR_INIT;
    rc = sr_procs_wait_ready(run->procs, (size_t)n, (int)s->ready_timeout_ms, &e2);
    if (rc == SR_E_PROC_EXITED || rc == SR_E_PROC_READY) {
        /* The cause is usually in the engine's log (e2.offset is the engine that failed). */
        char tail[256] = "";
        if (e2.offset >= 0 && e2.offset < n)
            sr_proc_log_tail(run->res->engines[e2.offset].log, tail, sizeof(tail));
        sr_run_check(run, -1, "engine.crashed", "the engines did not become ready: %s (%s)%s%s",
                     e2.msg, sr_code_name(rc), tail[0] ? "; its log ends: " : "", tail);
        for (int i = 0; i < n; i++)
            run->crashed[i] = 1;
        return 0;
    }
    if (rc)
        return sr_err_set(err, rc, "%s", e2.msg);
    for (int i = 0; i < n; i++) {
        char url[160];
        snprintf(url, sizeof(url), "http://127.0.0.1:%s", run->procs[i].line);
        if (!(run->urls[i] = strdup(url)) || sr_result_set_str(&run->res->engines[i].url, url, err))
            return sr_err_set(err, SR_E_NOMEM, "cannot copy the engine URLs");
    }
    return 1;
}

static void stop_engines(sr_scn_run *run)
{
    if (!run->n_procs)
        return;
    poll_engines(run, -1);
    int alive[SR_ENGINE_MAX_COUNT];
    for (int i = 0; i < run->n_procs; i++)
        alive[i] = !run->procs[i].reaped;
    sr_procs_stop(run->procs, (size_t)run->n_procs, (int)run->scn->stop_grace_ms);
    for (int i = 0; i < run->n_procs; i++) {
        char how[64], txt[96];
        const sr_proc *p = &run->procs[i];
        sr_proc_describe(p, how, sizeof(how));
        int clean = WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0;
        snprintf(txt, sizeof(txt), "%s%s", alive[i] && clean ? "stopped" : how,
                 alive[i] && !clean ? " when stopped" : "");
        sr_result_set_str(&run->res->engines[i].exit, txt, NULL);
        if (alive[i] && !clean && WIFEXITED(p->status))
            sr_run_check(run, -1, "engine.crashed", "engine %d %s on SIGTERM (log: %s)", i, how,
                         run->res->engines[i].log);
    }
}

/* ---- steps ---- */

typedef struct async_arg {
    sr_scn_run *run;
    int step;
} async_arg;

static void *async_main(void *p)
{
    async_arg *a = p;
    sr_step_state *st = &a->run->steps[a->step];
    st->rc = sr_step_executor(a->run->scn->steps[a->step].kind)(a->run, a->step, &st->err);
    st->end_ms = elapsed_ms(a->run);
    free(a);
    return NULL;
}

static int run_step(sr_scn_run *run, int i, sr_err *err)
{
    const sr_scn_step *step = &run->scn->steps[i];
    sr_step_state *st = &run->steps[i];
    sr_step_timing *t = &run->res->steps[i];
    st->start_ms = t->start_ms = elapsed_ms(run);
    if (step->async) {
        async_arg *a = malloc(sizeof(*a));
        if (!a)
            return sr_err_set(err, SR_E_NOMEM, "cannot start an async step");
        a->run = run;
        a->step = i;
        if (pthread_create(&st->thread, NULL, async_main, a) != 0) {
            free(a);
            return sr_err_set(err, SR_E_NOMEM, "cannot start a thread for step %s", step->name);
        }
        st->async_started = 1;
        return 0;
    }
    int rc = sr_step_executor(step->kind)(run, i, err);
    st->end_ms = t->end_ms = elapsed_ms(run);
    st->joined = 1;
    t->code = rc;
    return rc;
}

static int join_all(sr_scn_run *run, sr_err *err)
{
    int first = 0;
    for (int i = 0; i < run->scn->n_steps; i++) {
        sr_err e2 = SR_ERR_INIT;
        int rc = sr_step_join(run, i, &e2);
        if (rc && !first) {
            first = rc;
            *err = e2;
        }
    }
    return first;
}

/* The trainer's routing-replay configuration (sr_replay_config.h); 1 if it was refused. */
static int trainer_check(sr_scn_run *run)
{
    const sr_scenario *s = run->scn;
    sr_replay_config c = SR_REPLAY_CONFIG_INIT;
    c.role = s->role;
    c.routing_replay = s->routing_replay;
    c.vpp_set = s->vpp_set;
    c.vpp = s->vpp;
    c.vpp1_rejected = s->quirks[SR_QUIRK_VPP1_REJECTED];
    sr_err e = SR_ERR_INIT;
    int rc = sr_replay_check_both(&c, &e);
    if (!rc)
        return 0;
    sr_run_check(run, -1, sr_code_name(rc), "trainer configuration refused, no step runs: %s",
                 e.msg);
    return 1;
}

static int make_client(sr_scn_run *run, sr_err *err)
{
    const sr_scenario *s = run->scn;
    sr_client_opts o = s->client;
    o.seed = s->seed;
    o.quirks.retry_json_decode_only = s->quirks[SR_QUIRK_RETRY_JSON_DECODE_ONLY];
    o.quirks.no_prompt_start = s->quirks[SR_QUIRK_NO_PROMPT_START];
    o.quirks.prefix_without_quote = s->quirks[SR_QUIRK_PREFIX_WITHOUT_QUOTE];
    o.quirks.npy_assume_uint8 = s->quirks[SR_QUIRK_NPY_ASSUME_UINT8];
    o.quirks.sglang_rows_from_zero = s->quirks[SR_QUIRK_SGLANG_ROWS_FROM_ZERO];
    o.quirks.commit_aborted_turn = s->quirks[SR_QUIRK_COMMIT_ABORTED_TURN];
    /* The engines' wire; the model's shape reshapes and checks what the wire carries. */
    o.dialect = s->engine.dialect;
    o.route_layers = s->engine.num_layers;
    o.route_topk = s->engine.topk;
    /* The caller that enabled vllm#57025's omission knows its replies may start later. */
    o.omit_prefix = s->engine.omit_prefix;
    o.mask_chunk = s->engine.mask_chunk;
    o.mask_rows = s->engine.mask_rows;
    /* results.json's phases in thread CPU time: one generate in SR_RUN_CPU_EVERY per conn (each
     * sampled one reads the thread CPU clock, a system call, about ten times). */
    o.cpu_every = SR_RUN_CPU_EVERY;
    int rc = sr_client_new(&run->client, (const char *const *)run->urls, (size_t)run->n_engines,
                           s->fields, &o, err);
    if (!rc && !s->n_urls)
        rc = sr_verifier_new(&run->verifier, &s->engine, err);
    return rc;
}

static void check_budgets(sr_scn_run *run)
{
    const sr_scenario *s = run->scn;
    for (int i = 0; i < s->n_budgets; i++) {
        const sr_scn_budget *b = &s->budgets[i];
        const sr_hist *h = run->res->phase[b->phase];
        if (sr_hist_count(h) == 0) {
            sr_run_check(run, -1, "budget.no_samples", "budget %d: phase %s recorded nothing", i,
                         sr_phase_name(b->phase));
            continue;
        }
        double got = (double)sr_hist_percentile(h, b->percentile) / 1e6;
        if (got > b->max_ms)
            sr_run_check(run, -1, "budget.latency",
                         "phase %s p%g is %.3f ms, over its budget of %.3f ms (%llu samples)",
                         sr_phase_name(b->phase), b->percentile, got, b->max_ms,
                         (unsigned long long)sr_hist_count(h));
    }
}

/* Every rollout requested was verified or failed with a named check. */
static int accounting(sr_scn_run *run, sr_err *err)
{
    const sr_counters *c = &run->res->counters;
    if (c->rollouts_requested != c->rollouts_verified + c->rollouts_failed)
        return sr_err_set(err, SR_E_INTERNAL,
                          "accounting: %lld rollouts requested, %lld verified, %lld failed",
                          (long long)c->rollouts_requested, (long long)c->rollouts_verified,
                          (long long)c->rollouts_failed);
    return 0;
}

static int run_steps(sr_scn_run *run, sr_err *err)
{
    int rc = 0;
    for (int i = 0; !rc && i < run->scn->n_steps && !sr_run_stopped(run); i++) {
        rc = run_step(run, i, err);
        poll_engines(run, i);
    }
    sr_err e2 = SR_ERR_INIT;
    int rc2 = join_all(run, &e2);
    if (!rc && rc2) {
        rc = rc2;
        *err = e2;
    }
    return rc;
}

static int init_result(sr_scenario_result *res, const sr_scenario *s, const sr_run_opts *o)
{
    int rc = sr_result_set_str(&res->id, s->id, NULL);
    rc = rc ? rc : sr_result_set_str(&res->file, s->path, NULL);
    rc = rc ? rc : sr_result_set_str(&res->description, s->description, NULL);
    rc = rc ? rc : sr_result_set_str(&res->expanded, o->expanded, NULL);
    rc = rc ? rc : sr_result_set_str(&res->artifacts, o->work_dir, NULL);
    rc = rc ? rc : sr_result_set_str(&res->repro, o->repro, NULL);
    res->seed = s->seed;
    res->repeat = o->repeat;
    res->external = s->n_urls > 0;
    res->expect_verdict = s->expect_verdict;
    res->tags = calloc((size_t)s->n_tags + 1, sizeof(char *));
    res->expect_checks = calloc((size_t)s->n_expect_checks + 1, sizeof(char *));
    res->steps = calloc((size_t)s->n_steps, sizeof(*res->steps));
    if (!res->tags || !res->expect_checks || !res->steps)
        return SR_E_NOMEM;
    for (int i = 0; !rc && i < s->n_tags; i++)
        rc = sr_result_set_str(&res->tags[res->n_tags++], s->tags[i], NULL);
    for (int i = 0; !rc && i < s->n_expect_checks; i++)
        rc = sr_result_set_str(&res->expect_checks[res->n_expect_checks++], s->expect_checks[i],
                               NULL);
    res->n_steps = (size_t)s->n_steps;
    for (int i = 0; i < s->n_steps; i++) {
        sr_step_timing *t = &res->steps[i];
        t->index = i;
        snprintf(t->kind, sizeof(t->kind), "%s", sr_step_kind_name(s->steps[i].kind));
        snprintf(t->name, sizeof(t->name), "%s", s->steps[i].name);
        t->start_ms = t->end_ms = -1;
    }
    return rc;
}

static void run_free(sr_scn_run *run)
{
    for (int i = 0; run->steps && i < run->scn->n_steps; i++) {
        for (int64_t j = 0; j < run->steps[i].n_rollouts; j++)
            sr_rollout_result_release(&run->steps[i].rollouts[j]);
        free(run->steps[i].rollouts);
    }
    free(run->steps);
    sr_step_sync_release(run);
    for (int i = 0; i < run->n_engines; i++)
        free(run->urls[i]);
    sr_client_free(run->client);
    sr_verifier_free(run->verifier);
    pthread_mutex_destroy(&run->mu);
}

/* The verdict of a scenario the run's stop signal cut short (sr_run_stop). */
static void interrupted(sr_scn_run *run)
{
    int signo = sr_run_stopped(run);
    const sr_scenario_result *res = run->res;
    int step = -1;
    for (size_t i = 0; i < res->n_steps; i++)
        if (res->steps[i].start_ms >= 0)
            step = (int)i;
    char where[160] = "before its first step";
    if (step >= 0)
        snprintf(where, sizeof(where), "at step %s (%d of %d)", res->steps[step].name, step + 1,
                 run->scn->n_steps);
    sr_run_check(run, -1, "run.interrupted",
                 "%s arrived %s; the engines were stopped and the scenario did not finish",
                 signo == SIGINT    ? "SIGINT"
                 : signo == SIGTERM ? "SIGTERM"
                                    : "a stop signal",
                 where);
    sr_result_set_verdict(run->res, SR_VERDICT_INTERRUPTED,
                          "run.interrupted: %s %s (checks after it may be its consequences)",
                          signo == SIGINT    ? "SIGINT"
                          : signo == SIGTERM ? "SIGTERM"
                                             : "stop signal",
                          where);
}

static void execute(sr_scn_run *run)
{
    sr_scenario_result *res = run->res;
    sr_err err = SR_ERR_INIT;
    int rc = sr_scenario_write_expanded(run->scn, run->opts->expanded, &err);
    int up = 0;
    if (!rc && run->scn->skip) {
        sr_result_set_verdict(res, SR_VERDICT_SKIP, "%s", run->scn->skip);
        return;
    }
    if (!rc)
        rc = (run->steps = calloc((size_t)run->scn->n_steps, sizeof(*run->steps)))
                 ? 0
                 : sr_err_set(&err, SR_E_NOMEM, "cannot allocate the step states");
    /* A scenario of replay steps only judges captures: it needs no engine and no client. */
    int bare = sr_run_replay_only(run->scn);
    if (bare)
        up = 1;
    else if (!rc && (up = start_engines(run, &err)) < 0)
        rc = up;
    if (!rc && up == 1 && !bare)
        rc = make_client(run, &err);
    if (!rc && up == 1 && !trainer_check(run))
        rc = sr_run_iterations(run, run_steps, &err);
    if (!rc && up == 1)
        rc = sr_run_probe_external(run, &err);
    stop_engines(run);
    if (sr_run_stopped(run)) {
        interrupted(run);
        return;
    }
    /* The scenario phase ends here so that a budget can hold it too. */
    sr_result_record(res, SR_PHASE_SCENARIO, (uint64_t)(elapsed_ms(run) * 1e6));
    if (!rc && up == 1)
        check_budgets(run);
    if (!rc)
        rc = accounting(run, &err);
    if (rc) {
        sr_result_set_verdict(res, SR_VERDICT_ERROR, "%s: %s", sr_code_name(rc), err.msg);
        return;
    }
    sr_run_judge(res, run->scn);
    if (sr_evidence_scenario(run, &err) != 0)
        fprintf(stderr, "syncroll run: %s: the failure evidence: %s\n", run->scn->id, err.msg);
}

void sr_run_scenario(sr_scenario_result *res, const sr_scenario *scn, const sr_run_opts *opts)
{
    sr_run_scenario_in(res, scn, opts, NULL);
}

void sr_run_scenario_in(sr_scenario_result *res, const sr_scenario *scn, const sr_run_opts *opts,
                        sr_run_stop *stop)
{
    sr_scn_run run;
    memset(&run, 0, sizeof(run));
    run.stop = stop;
    run.scn = scn;
    run.res = res;
    run.opts = opts;
    run.t0_ms = sr_client_now_ms();
    run.weight_version = scn->engine.weight_version;
    pthread_mutex_init(&run.mu, NULL);
    for (int i = 0; i < SR_ENGINE_MAX_COUNT; i++) {
        sr_proc z = SR_PROC_INIT;
        run.procs[i] = z;
    }
    res->start_ms = run.t0_ms - opts->run_t0_ms;
    if (init_result(res, scn, opts))
        sr_result_set_verdict(res, SR_VERDICT_ERROR, "out of memory");
    else
        execute(&run);
    run_free(&run);
    res->wall_ms = elapsed_ms(&run);
}
