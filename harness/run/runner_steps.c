/* The step dispatch table and the executors of every step but rollout (runner_steps.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner_probe.h"
#include "runner_replay.h"
#include "runner_rollout.h"
#include "runner_steps.h"
#include "spec/endpoints.h"
#include "sr_pool.h"
#include "sync/sync.h"
#include "verify_checks.h"

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- collate ---- */

static int fail_affinity(void *ctx, int64_t *count)
{
    (void)ctx;
    (void)count;
    return EPERM;
}

/* The worker count of a collate step; a pool error is a check (1), not a harness error. */
static int collate_workers(sr_scn_run *run, int step, int *workers)
{
    const sr_scenario *s = run->scn;
    const sr_scn_collate *c = &s->steps[step].collate;
    if (c->workers > 0) {
        *workers = (int)c->workers;
        return 0;
    }
    sr_cpu_topology topo = SR_CPU_TOPOLOGY_INIT;
    if (s->affinity_fails)
        topo.affinity = fail_affinity;
    topo.affinity_error_fatal = s->quirks[SR_QUIRK_AFFINITY_ERROR_FATAL];
    int cores = s->pool_cores > 0 ? (int)s->pool_cores : SR_POOL_DETECT_CORES;
    sr_err e = SR_ERR_INIT;
    int rc = sr_pool_workers(workers, (int)c->cap, (int)c->reserved_cores, cores, &topo, &e);
    if (rc)
        sr_run_check(run, step, sr_code_name(rc), "sizing the collation workers: %s", e.msg);
    return rc ? 1 : 0;
}

typedef struct picked {
    const sr_rollout_result **r;
    int64_t *ids;
    sr_collate_sample *samples;
    size_t n;
} picked;

static int pick_samples(picked *pk, sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_collate *c = &run->scn->steps[step].collate;
    size_t total = 0;
    for (int i = 0; i < c->n_rollouts; i++) {
        int rc = sr_step_join(run, c->rollouts[i], err);
        if (rc)
            return rc;
        total += (size_t)run->steps[c->rollouts[i]].n_rollouts;
    }
    pk->r = calloc(total + 1, sizeof(*pk->r));
    pk->ids = calloc(total + 1, sizeof(*pk->ids));
    pk->samples = calloc(total + 1, sizeof(*pk->samples));
    if (!pk->r || !pk->ids || !pk->samples)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the collation samples");
    /* Failed rollouts are already accounted for by their checks; collation takes the rest. */
    for (int i = 0; i < c->n_rollouts; i++) {
        const sr_step_state *ss = &run->steps[c->rollouts[i]];
        for (int64_t j = 0; j < ss->n_rollouts; j++) {
            const sr_rollout_result *r = &ss->rollouts[j];
            if (r->code || r->routes.ndim != 3)
                continue;
            sr_collate_sample smp = SR_COLLATE_SAMPLE_INIT;
            smp.routes = &r->routes;
            smp.prompt_len = (int64_t)r->prompt_len;
            smp.response_len = (int64_t)r->response_len;
            smp.captured_rows = r->captured_rows;
            pk->r[pk->n] = r;
            pk->ids[pk->n] = j;
            pk->samples[pk->n++] = smp;
        }
    }
    return 0;
}

static int step_collate(sr_scn_run *run, int step, sr_err *err)
{
    picked pk = {NULL, NULL, NULL, 0};
    int rc = pick_samples(&pk, run, step, err);
    int workers = 0;
    if (!rc && pk.n == 0)
        sr_result_skip_check(run->res, "collate.alignment",
                             "a collate step had no successful rollout with routes to collate");
    if (!rc && pk.n > 0 && collate_workers(run, step, &workers) == 0) {
        sr_collate_buf buf = SR_COLLATE_BUF_INIT;
        sr_collate_result out;
        sr_err e = SR_ERR_INIT;
        double t0 = sr_client_now_ms();
        int crc = sr_collate_routes(&out, &buf, pk.samples, (int64_t)pk.n, workers, &e);
        sr_result_record(run->res, SR_PHASE_COLLATE, (uint64_t)((sr_client_now_ms() - t0) * 1e6));
        sr_counters c;
        memset(&c, 0, sizeof(c));
        c.collations = 1;
        sr_result_count(run->res, &c);
        if (crc) {
            sr_run_check(run, step, sr_code_name(crc), "collating %zu samples: %s", pk.n, e.msg);
        } else {
            const sr_scn_step *st = &run->scn->steps[step];
            sr_verify_ctx vc = {
                run->scn->id,           step, st->name, 1, run->scn->engine.experts, run->res,
                run->scn->engine.faults};
            int ok;
            rc = sr_verify_collation(&ok, &out, pk.r, pk.ids, pk.n, &vc, err);
        }
        sr_collate_buf_release(&buf);
    }
    free(pk.r);
    free(pk.ids);
    free(pk.samples);
    return rc;
}

/* ---- control plane ---- */

/* Sends one control call to `engine` (-1: all); a failure is the check engine.control. */
static int control(sr_scn_run *run, int step, int64_t engine, const char *method, const char *path)
{
    size_t n = engine < 0 ? (size_t)run->n_engines : 1;
    sr_client_reply *rep = calloc(n, sizeof(*rep));
    if (!rep)
        return SR_E_NOMEM;
    sr_err e = SR_ERR_INIT;
    int rc = sr_client_control(rep, n, run->client, (int)engine, method, path, NULL, &e);
    if (rc)
        sr_run_check(run, step, "engine.control", "%s %s: %s: %s", method, path, sr_code_name(rc),
                     e.msg);
    for (size_t i = 0; i < n; i++)
        sr_client_reply_release(&rep[i]);
    free(rep);
    return 0;
}

static int step_pause(sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_pause *p = &run->scn->steps[step].pause;
    char path[96];
    snprintf(path, sizeof(path), "/pause?mode=%s%s", p->mode,
             p->clear_cache ? "&clear_cache=true" : "");
    int rc = control(run, step, p->engine, "POST", path);
    return rc ? sr_err_set(err, rc, "out of memory in a pause step") : 0;
}

static int step_resume(sr_scn_run *run, int step, sr_err *err)
{
    int rc = control(run, step, run->scn->steps[step].resume_engine, "POST", "/resume");
    return rc ? sr_err_set(err, rc, "out of memory in a resume step") : 0;
}

/* vLLM's sleep: POST /sleep?level=L (the engine pauses, its memory tags sleep; level 2 discards
 * the weights). */
static int step_sleep(sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_sleep *p = &run->scn->steps[step].sleep;
    char path[64];
    snprintf(path, sizeof(path), "/sleep?level=%lld", (long long)p->level);
    int rc = control(run, step, p->engine, "POST", path);
    return rc ? sr_err_set(err, rc, "out of memory in a sleep step") : 0;
}

/* POST /wake_up[?tags=T]: wakes the tags (all: every tag) and resumes the scheduler. */
static int step_wake(sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_sleep *p = &run->scn->steps[step].sleep;
    char path[64];
    snprintf(path, sizeof(path), "/wake_up%s%s", strcmp(p->tags, "all") ? "?tags=" : "",
             strcmp(p->tags, "all") ? p->tags : "");
    int rc = control(run, step, p->engine, "POST", path);
    return rc ? sr_err_set(err, rc, "out of memory in a wake_up step") : 0;
}

static int64_t num_at(const cJSON *o, const char *key, const char *sub)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (sub)
        x = cJSON_GetObjectItemCaseSensitive(x, sub);
    if (cJSON_IsBool(x))
        return cJSON_IsTrue(x);
    return cJSON_IsNumber(x) ? (int64_t)x->valuedouble : INT64_MIN + 1;
}

static int64_t fault_fired(const cJSON *state, const char *id)
{
    if (!state)
        return 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(state, "faults"))
    {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(f, "id");
        if (cJSON_IsString(x) && strcmp(x->valuestring, id) == 0)
            return num_at(f, "fired", NULL);
    }
    return -1;
}

/* A counter of an engine's state from the start of the soak iteration (FORMAT.md §15):
 * absolute without a baseline (the first iteration, no soak). */
static int64_t since_base(const sr_scn_run *run, int engine, const cJSON *st, const char *key,
                          const char *sub)
{
    const cJSON *base = run->soak_base[engine];
    int64_t v = num_at(st, key, sub), b = base ? num_at(base, key, sub) : 0;
    return v == INT64_MIN + 1 || b == INT64_MIN + 1 ? v : v - b;
}

static void compare(sr_scn_run *run, int step, int engine, const char *what, int64_t got,
                    int64_t want)
{
    if (want == SR_SCN_UNCHECKED || got == want)
        return;
    sr_check_where w = SR_CHECK_WHERE_NONE;
    w.step = step;
    w.engine = engine;
    sr_result_check(run->res, "engine.state", NULL, &w,
                    "scenario %s step %s: engine %d: %s is %lld, expected %lld", run->scn->id,
                    run->scn->steps[step].name, engine, what, (long long)got, (long long)want);
}

static void check_one(sr_scn_run *run, int step, int engine, const cJSON *st)
{
    const sr_scn_check_state *c = &run->scn->steps[step].check;
    compare(run, step, engine, "weight_version", num_at(st, "weight_version", NULL),
            c->weight_version);
    compare(run, step, engine, "paused", num_at(st, "paused", NULL), c->paused);
    compare(run, step, engine, "sleeping", num_at(st, "sleeping", NULL), c->sleeping);
    compare(run, step, engine, "sessions", since_base(run, engine, st, "sessions", NULL),
            c->sessions);
    compare(run, step, engine, "inflight", num_at(st, "inflight", NULL), c->inflight);
    compare(run, step, engine, "held", num_at(st, "held", NULL), c->held);
    for (int i = 0; i < SR_EP_COUNT; i++) {
        char what[64];
        snprintf(what, sizeof(what), "requests.%s", sr_endpoint_name((sr_endpoint)i));
        compare(run, step, engine, what,
                since_base(run, engine, st, "requests", sr_endpoint_name((sr_endpoint)i)),
                c->requests[i]);
    }
    for (int i = 0; i < c->n_faults_fired; i++) {
        char what[96];
        snprintf(what, sizeof(what), "faults[%s].fired", c->faults_fired[i].id);
        compare(run, step, engine, what,
                fault_fired(st, c->faults_fired[i].id) -
                    fault_fired(run->soak_base[engine], c->faults_fired[i].id),
                c->faults_fired[i].fired);
    }
}

static int step_check_state(sr_scn_run *run, int step, sr_err *err)
{
    int64_t one = run->scn->steps[step].check.engine;
    (void)err;
    for (int i = one < 0 ? 0 : (int)one; i < (one < 0 ? run->n_engines : (int)one + 1); i++) {
        cJSON *st = NULL;
        sr_err e = SR_ERR_INIT;
        int rc = sr_run_engine_state(&st, run, i, &e);
        if (rc)
            sr_run_check(run, step, "engine.control", "engine %d: GET /syncroll/v1/state: %s: %s",
                         i, sr_code_name(rc), e.msg);
        else
            check_one(run, step, i, st);
        cJSON_Delete(st);
    }
    return 0;
}

/* ---- wait ---- */

static int until_holds(const sr_scn_run *run, const sr_scn_wait *w, const cJSON *st)
{
    return (w->min_inflight < 0 || num_at(st, "inflight", NULL) >= w->min_inflight) &&
           (w->min_held < 0 || num_at(st, "held", NULL) >= w->min_held) &&
           (w->min_generate < 0 ||
            since_base(run, (int)w->engine, st, "requests", "generate") >= w->min_generate);
}

static int wait_until(sr_scn_run *run, int step)
{
    const sr_scn_wait *w = &run->scn->steps[step].wait;
    double deadline = sr_client_now_ms() + (double)w->timeout_ms;
    for (;;) {
        cJSON *st = NULL;
        sr_err e = SR_ERR_INIT;
        int rc = sr_run_engine_state(&st, run, (int)w->engine, &e);
        int ok = !rc && until_holds(run, w, st);
        cJSON_Delete(st);
        if (rc)
            return sr_run_check(run, step, "engine.control",
                                "engine %lld: GET /syncroll/v1/state: %s: %s", (long long)w->engine,
                                sr_code_name(rc), e.msg);
        if (ok || sr_run_stopped(run))
            return 0;
        if (sr_client_now_ms() >= deadline)
            return sr_run_check(run, step, "step.deadline",
                                "engine %lld did not reach the condition within %lld ms",
                                (long long)w->engine, (long long)w->timeout_ms);
        sleep_ms(w->poll_ms);
    }
}

static int step_wait(sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_wait *w = &run->scn->steps[step].wait;
    if (w->has_until)
        return wait_until(run, step) == SR_E_NOMEM ? sr_err_set(err, SR_E_NOMEM, "wait") : 0;
    int first = 0;
    /* Without `for`, every async step started so far is joined. */
    for (int i = 0; i < step; i++) {
        int wanted = !w->has_for;
        for (int j = 0; j < w->n_for; j++)
            wanted |= w->for_steps[j] == i;
        sr_err e = SR_ERR_INIT;
        int rc = wanted ? sr_step_join(run, i, &e) : 0;
        if (rc && !first) {
            first = rc;
            *err = e;
        }
    }
    return first;
}

/* ---- kill_engine ---- */

static int step_kill_engine(sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_kill *k = &run->scn->steps[step].kill;
    sr_proc *p = &run->procs[k->engine];
    if (k->engine >= run->n_procs || p->pid <= 0 || p->reaped)
        return 0; /* already gone: engine.crashed has fired or will */
    if (sr_proc_signal(p, k->sig) != 0)
        return sr_err_set(err, SR_E_INTERNAL, "kill(%ld, SIG%s) failed", (long)p->pid, k->sig_name);
    double deadline = sr_client_now_ms() + (double)run->scn->ready_timeout_ms;
    while (!sr_proc_poll_exit(p)) {
        if (sr_run_stopped(run))
            return 0;
        if (sr_client_now_ms() >= deadline)
            return sr_err_set(err, SR_E_INTERNAL, "engine %lld survived SIG%s",
                              (long long)k->engine, k->sig_name);
        sleep_ms(1);
    }
    /* sr_proc_poll_exit reaped it; the poll after this step reports it as engine.crashed. */
    return 0;
}

/* ---- sync_weights ---- */

/*
 * The sync_weights step: runs the weight-sync module (sync/sync.h) for one step and tells the
 * verifier the version the engines hold afterwards, so rows of later generates (and stale rows)
 * are checked against the right fingerprints.
 */
/* The trainer declares the version current once every engine applied it, before the resume
 * (sync.h, on_applied): the version a rollout stamps on the turns it sends from then on. */
static void trainer_applied(void *ctx, int64_t version)
{
    sr_scn_run *run = ctx;
    pthread_mutex_lock(&run->mu);
    run->weight_version = version;
    pthread_mutex_unlock(&run->mu);
}

static int step_sync_weights(sr_scn_run *run, int step, sr_err *err)
{
    int rc = sr_sync_step(&run->sync, run->res, run->scn, step, (const char *const *)run->urls,
                          (size_t)run->n_engines, run->opts->work_dir, trainer_applied, run, err);
    if (run->sync && run->verifier)
        sr_verifier_note_version(run->verifier, sr_sync_version(run->sync));
    return rc;
}

void sr_step_sync_release(sr_scn_run *run)
{
    sr_sync_free(run->sync);
    run->sync = NULL;
}

/* ---- dispatch ---- */

/*
 * The executor of each step kind. The step-kind table (scenario/scenario.h) cannot name run/
 * code, so this array is written here and checked against it: a kind added at the end of the
 * table without an executor fails the assertion below, and one added in the middle leaves a NULL
 * entry that unit.scenario's executor test names.
 */
static const sr_step_fn executors[] = {
    [SR_STEP_ROLLOUT] = sr_step_rollout,
    [SR_STEP_SYNC_WEIGHTS] = step_sync_weights,
    [SR_STEP_COLLATE] = step_collate,
    [SR_STEP_PAUSE] = step_pause,
    [SR_STEP_RESUME] = step_resume,
    [SR_STEP_WAIT] = step_wait,
    [SR_STEP_CHECK_STATE] = step_check_state,
    [SR_STEP_KILL_ENGINE] = step_kill_engine,
    [SR_STEP_PROBE] = sr_step_probe,
    [SR_STEP_SLEEP] = step_sleep,
    [SR_STEP_WAKE_UP] = step_wake,
    [SR_STEP_REPLAY] = sr_step_replay,
};
_Static_assert(sizeof(executors) / sizeof(executors[0]) == SR_STEP_KIND_COUNT,
               "every step kind of SR_STEP_KIND_TABLE needs its executor here");

sr_step_fn sr_step_executor(sr_step_kind kind)
{
    return (unsigned)kind < SR_STEP_KIND_COUNT ? executors[kind] : NULL;
}
