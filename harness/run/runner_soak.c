/* Soak: the steps of a scenario again and again for a bounded time, with resource samples of
 * the harness process and a final look at every engine (runner_soak.h, FORMAT.md §15). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner_soak.h"
#include "spec/faults.h"
#include "sync/sync.h"

/* AddressSanitizer's quarantine keeps freed memory resident on purpose (up to 256 MiB), so the
 * resident size of a sanitized build says nothing about leaks; only descriptors are compared. */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_COMPARE_RSS 0
#else
#define SOAK_COMPARE_RSS 1
#endif

typedef struct soak_sample {
    int64_t fds; /* open descriptors, -1 if /proc could not be read */
    int64_t rss; /* resident bytes, -1 likewise */
} soak_sample;

/* Faults fired, summed by kind over the engines. */
typedef struct kind_count {
    char kind[SR_FAULT_ID_MAX];
    int64_t fired;
} kind_count;

typedef struct soak_totals {
    kind_count kinds[SR_FK_COUNT];
    int n_kinds;
    int64_t fired;
    int answering; /* engines whose state could be read at the end */
} soak_totals;

static int64_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int64_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    /* The directory stream's own descriptor was listed too. */
    return n - 1;
}

static int64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    long long size = 0, resident = 0;
    int ok = fscanf(f, "%lld %lld", &size, &resident) == 2;
    fclose(f);
    return ok ? (int64_t)resident * (int64_t)sysconf(_SC_PAGESIZE) : -1;
}

static soak_sample take_sample(void)
{
    soak_sample s = {open_fds(), resident_bytes()};
    return s;
}

/* Forgets the previous iteration's step states (its rollouts included). */
static void reset_steps(sr_scn_run *run)
{
    for (int i = 0; i < run->scn->n_steps; i++) {
        sr_step_state *st = &run->steps[i];
        for (int64_t j = 0; j < st->n_rollouts; j++)
            sr_rollout_result_release(&st->rollouts[j]);
        free(st->rollouts);
        memset(st, 0, sizeof(*st));
        sr_err_clear(&st->err);
    }
}

/* Another iteration would only repeat a failure: an engine is gone or the verdict is fail. */
static int should_stop(sr_scn_run *run)
{
    for (int i = 0; i < run->n_procs; i++)
        if (run->crashed[i])
            return 1;
    sr_scenario_result *r = run->res;
    int stop = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n_fired; i++)
        stop |= !r->fired[i].expected;
    pthread_mutex_unlock(&r->mu);
    return stop;
}

/* ---- the growth rule ---- */

void sr_soak_series_add(sr_soak_series *s, int64_t v)
{
    if (s->n == 0)
        s->first = v;
    s->last = v;
    s->n++;
    if (s->n_buckets > 0 && s->fill < s->width) {
        int b = s->n_buckets - 1;
        s->lo[b] = v < s->lo[b] ? v : s->lo[b];
        s->hi[b] = v > s->hi[b] ? v : s->hi[b];
        s->fill++;
        return;
    }
    /* Every bucket is full: neighbours merge, so buckets keep covering equal spans. */
    if (s->n_buckets == SR_SOAK_BUCKETS) {
        for (int i = 0; i < SR_SOAK_BUCKETS / 2; i++) {
            int64_t lo = s->lo[2 * i] < s->lo[2 * i + 1] ? s->lo[2 * i] : s->lo[2 * i + 1];
            int64_t hi = s->hi[2 * i] > s->hi[2 * i + 1] ? s->hi[2 * i] : s->hi[2 * i + 1];
            s->lo[i] = lo;
            s->hi[i] = hi;
        }
        s->n_buckets = SR_SOAK_BUCKETS / 2;
        s->width *= 2;
    }
    if (s->width == 0)
        s->width = 1;
    s->lo[s->n_buckets] = s->hi[s->n_buckets] = v;
    s->n_buckets++;
    s->fill = 1;
}

sr_soak_growth sr_soak_judge(const sr_soak_series *s, int64_t allowance)
{
    sr_soak_growth g;
    memset(&g, 0, sizeof(g));
    if (s->n < SR_SOAK_MIN_SAMPLES)
        return g;
    g.judged = 1;
    for (int w = 0; w < SR_SOAK_WINDOWS; w++) {
        int b0 = w * s->n_buckets / SR_SOAK_WINDOWS, b1 = (w + 1) * s->n_buckets / SR_SOAK_WINDOWS;
        g.floor[w] = s->lo[b0];
        int64_t ceiling = s->hi[b0];
        for (int b = b0 + 1; b < b1; b++) {
            g.floor[w] = s->lo[b] < g.floor[w] ? s->lo[b] : g.floor[w];
            ceiling = s->hi[b] > ceiling ? s->hi[b] : ceiling;
        }
        if (w == 0)
            g.early_ceiling = ceiling;
    }
    g.rising = 1;
    for (int w = 1; w < SR_SOAK_WINDOWS; w++)
        g.rising &= g.floor[w] > g.floor[w - 1];
    g.growth = g.floor[SR_SOAK_WINDOWS - 1] - g.early_ceiling;
    g.leak = g.rising && g.growth > allowance;
    return g;
}

/* "32 32 33 32": the floors of a judged series. */
static void floors_text(char *out, size_t n, const sr_soak_growth *g, double unit)
{
    size_t used = 0;
    for (int w = 0; w < SR_SOAK_WINDOWS && used < n; w++)
        used += (size_t)snprintf(out + used, n - used, unit > 1 ? "%s%.1f" : "%s%.0f", w ? " " : "",
                                 (double)g->floor[w] / unit);
}

static void judge_one(sr_scn_run *run, const sr_soak_series *s, int64_t allowance, const char *what,
                      const char *units, double unit)
{
    sr_soak_growth g = sr_soak_judge(s, allowance);
    if (!g.leak)
        return;
    char floors[128];
    floors_text(floors, sizeof(floors), &g, unit);
    sr_run_check(run, -1, "soak.resource_growth",
                 "%s kept growing over %lld iterations after the warm-up: the minimum of each "
                 "quarter rose every quarter (%s %s), and the last quarter's minimum is %.1f %s "
                 "above the first quarter's maximum (allowed: +%.1f)",
                 what, (long long)s->n, floors, units, (double)g.growth / unit, units,
                 (double)allowance / unit);
}

static void resource_check(sr_scn_run *run, const sr_soak_series *fds, const sr_soak_series *rss,
                           int64_t iterations, int proc_ok)
{
    const sr_scenario *s = run->scn;
    const char *name = "soak.resource_growth";
    char why[SR_ERR_MSG_MAX];
    if (run->opts->jobs > 1) {
        snprintf(why, sizeof(why),
                 "descriptors and memory are the whole process's, and %d scenarios ran in "
                 "parallel; run the soak with -j 1",
                 run->opts->jobs);
        sr_result_skip_check(run->res, name, why);
        return;
    }
    if (!proc_ok || fds->n < SR_SOAK_MIN_SAMPLES) {
        snprintf(why, sizeof(why),
                 "%lld iterations ran, %lld of them warm-up; the growth rule needs %d samples "
                 "from the last warm-up iteration on%s",
                 (long long)iterations, (long long)s->soak_warmup_iterations, SR_SOAK_MIN_SAMPLES,
                 proc_ok ? "" : "; /proc/self could not be read");
        sr_result_skip_check(run->res, name, why);
        return;
    }
    judge_one(run, fds, s->soak_max_fd_growth, "open descriptors", "descriptors", 1.0);
    if (SOAK_COMPARE_RSS)
        judge_one(run, rss, s->soak_max_rss_growth, "resident memory", "MiB", 1048576.0);
}

static void add_faults(soak_totals *t, const cJSON *state)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(state, "faults"))
    {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(f, "kind");
        const cJSON *fired = cJSON_GetObjectItemCaseSensitive(f, "fired");
        if (!cJSON_IsString(kind) || !cJSON_IsNumber(fired))
            continue;
        int k = 0;
        while (k < t->n_kinds && strcmp(t->kinds[k].kind, kind->valuestring) != 0)
            k++;
        if (k == t->n_kinds && t->n_kinds < SR_FK_COUNT)
            snprintf(t->kinds[t->n_kinds++].kind, SR_FAULT_ID_MAX, "%s", kind->valuestring);
        if (k < t->n_kinds)
            t->kinds[k].fired += (int64_t)fired->valuedouble;
        t->fired += (int64_t)fired->valuedouble;
    }
}

/* Every engine must still answer at the end; their fault counters feed the summary. */
static void engines_at_end(sr_scn_run *run, soak_totals *t)
{
    for (int i = 0; i < run->n_procs; i++) {
        if (run->crashed[i])
            continue;
        cJSON *st = NULL;
        sr_err e = SR_ERR_INIT;
        int rc = sr_run_engine_state(&st, run, i, &e);
        if (rc)
            sr_run_check(run, -1, "engine.control",
                         "engine %d did not answer GET /syncroll/v1/state at the end of the "
                         "soak: %s: %s",
                         i, sr_code_name(rc), e.msg);
        else {
            t->answering++;
            add_faults(t, st);
        }
        cJSON_Delete(st);
    }
}

/* "37 -> 39 (quarter minimums 32 32 33 32)": the first and last sample and the floors. */
static void series_text(char *out, size_t n, const sr_soak_series *s, double unit,
                        const char *units)
{
    sr_soak_growth g = sr_soak_judge(s, 0);
    char floors[128] = "";
    if (g.judged)
        floors_text(floors, sizeof(floors), &g, unit);
    snprintf(out, n, unit > 1 ? "%.1f -> %.1f%s%s%s%s" : "%.0f -> %.0f%s%s%s%s",
             (double)s->first / unit, (double)s->last / unit, units,
             g.judged ? " (quarter minimums " : "", floors, g.judged ? ")" : "");
}

static void summary(sr_scn_run *run, const soak_totals *t, const sr_soak_series *fds,
                    const sr_soak_series *rss, int64_t iterations, double ms)
{
    const sr_counters *c = &run->res->counters;
    char kinds[1024] = "";
    size_t used = 0;
    for (int k = 0; k < t->n_kinds && used < sizeof(kinds); k++)
        used += (size_t)snprintf(kinds + used, sizeof(kinds) - used, "%s%s=%lld", k ? " " : "",
                                 t->kinds[k].kind, (long long)t->kinds[k].fired);
    char res[512], f[160], r[160];
    if (fds->n == 0)
        snprintf(res, sizeof(res), "harness resources not compared (%lld warm-up iterations)",
                 (long long)run->scn->soak_warmup_iterations);
    else {
        series_text(f, sizeof(f), fds, 1.0, "");
        series_text(r, sizeof(r), rss, 1048576.0, " MiB");
        snprintf(res, sizeof(res), "harness fds %s, RSS %s%s after %lld warm-up iterations", f, r,
                 SOAK_COMPARE_RSS ? "" : " (not compared: AddressSanitizer build)",
                 (long long)run->scn->soak_warmup_iterations);
    }
    fprintf(stderr,
            "syncroll run: soak %s: %lld iterations in %.1f s: %lld rollouts (%lld verified, "
            "%lld failed), %lld turns, %lld retries, %lld syncs, %lld faults fired (%s); %s; "
            "%d/%d engines answering\n",
            run->scn->id, (long long)iterations, ms / 1000.0, (long long)c->rollouts_requested,
            (long long)c->rollouts_verified, (long long)c->rollouts_failed, (long long)c->turns,
            (long long)c->retries, (long long)c->syncs, (long long)t->fired, kinds, res,
            t->answering, run->n_procs);
}

/* ---- what cannot repeat ---- */

/* The fault of the engines' plan with this id, copied into *out; 0 if there is none. */
static int find_fault(sr_fault *out, const sr_scenario *s, const char *id)
{
    const sr_fault *f = sr_fault_plan_find(s->engine.faults, id);
    if (f)
        *out = *f;
    return f != NULL;
}

static int check_state_unsupported(const sr_scenario *s, const sr_scn_step *st, char *why, size_t n)
{
    const sr_scn_check_state *c = &st->check;
    for (int i = 0; i < c->n_faults_fired; i++) {
        const char *id = c->faults_fired[i].id;
        sr_fault f;
        if (find_fault(&f, s, id) && (f.n_nth > 0 || f.count >= 0 || f.probability < 1.0)) {
            snprintf(why, n,
                     "step %s: check_state.faults_fired.%s: the fault fires %s, so its count "
                     "cannot repeat in a later iteration",
                     st->name, id,
                     f.n_nth > 0    ? "by nth ordinal over the engine's life"
                     : f.count >= 0 ? "at most `count` times over the engine's life"
                                    : "with a probability below 1");
            return 1;
        }
    }
    return 0;
}

int sr_soak_unsupported(const sr_scenario *s, char *why, size_t n)
{
    for (int i = 0; i < s->n_steps; i++) {
        const sr_scn_step *st = &s->steps[i];
        if (st->kind == SR_STEP_KILL_ENGINE) {
            snprintf(why, n, "step %s: kill_engine: a killed engine cannot serve another iteration",
                     st->name);
            return 1;
        }
        if (st->kind == SR_STEP_CHECK_STATE && check_state_unsupported(s, st, why, n))
            return 1;
    }
    for (int i = 0; i < s->n_budgets; i++)
        if (s->budgets[i].phase == SR_PHASE_SCENARIO) {
            snprintf(why, n,
                     "budgets[%d]: a budget on the scenario phase would hold the whole soak, not "
                     "one iteration",
                     i);
            return 1;
        }
    return 0;
}

/* ---- iterations ---- */

/*
 * The steps of iteration k > 0: explicit sync versions and check_state weight versions move on
 * by the versions published before the iteration, so each iteration syncs to new versions (a
 * delta store refuses an older one) and checks the ones it synced.
 */
static void shift_versions(sr_scn_step *steps, const sr_scenario *s, int64_t offset)
{
    for (int i = 0; i < s->n_steps; i++) {
        steps[i] = s->steps[i];
        if (steps[i].kind == SR_STEP_SYNC_WEIGHTS && steps[i].sync.version >= 0)
            steps[i].sync.version += offset;
        if (steps[i].kind == SR_STEP_CHECK_STATE &&
            steps[i].check.weight_version != SR_SCN_UNCHECKED)
            steps[i].check.weight_version += offset;
    }
}

/* Reads every engine's state as the baseline of the next iteration's counters (runner_state.h). */
static void read_baselines(sr_scn_run *run)
{
    for (int i = 0; i < run->n_engines && i < SR_ENGINE_MAX_COUNT; i++) {
        cJSON_Delete(run->soak_base[i]);
        run->soak_base[i] = NULL;
        sr_err e = SR_ERR_INIT;
        int rc = sr_run_engine_state(&run->soak_base[i], run, i, &e);
        if (rc)
            sr_run_check(run, -1, "engine.control",
                         "engine %d: GET /syncroll/v1/state before soak iteration %lld: %s: %s", i,
                         (long long)run->iteration, sr_code_name(rc), e.msg);
    }
}

static void free_baselines(sr_scn_run *run)
{
    for (int i = 0; i < SR_ENGINE_MAX_COUNT; i++) {
        cJSON_Delete(run->soak_base[i]);
        run->soak_base[i] = NULL;
    }
}

static int run_once_unsupported(sr_scn_run *run, int (*run_once)(sr_scn_run *, sr_err *),
                                sr_err *err)
{
    char why[SR_ERR_MSG_MAX];
    if (!sr_soak_unsupported(run->scn, why, sizeof(why)))
        return -1;
    fprintf(stderr,
            "syncroll run: soak %s: not repeated (soak.unsupported): %s; the steps ran once\n",
            run->scn->id, why);
    sr_result_skip_check(run->res, "soak.unsupported", why);
    sr_result_skip_check(run->res, "soak.resource_growth",
                         "the scenario cannot soak (soak.unsupported)");
    return run_once(run, err);
}

int sr_run_iterations(sr_scn_run *run, int (*run_once)(sr_scn_run *, sr_err *), sr_err *err)
{
    const sr_scenario *s = run->scn;
    if (s->soak_duration_ms <= 0)
        return run_once(run, err);
    int rc = run_once_unsupported(run, run_once, err);
    if (rc != -1)
        return rc;
    /* Iteration k's view of the scenario: the same, with its own steps (shift_versions). */
    sr_scenario *view = malloc(sizeof(*view));
    sr_scn_step *steps = calloc((size_t)s->n_steps + 1, sizeof(*steps));
    if (!view || !steps) {
        free(view);
        free(steps);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the soak's steps");
    }
    sr_soak_series fds, rss;
    memset(&fds, 0, sizeof(fds));
    memset(&rss, 0, sizeof(rss));
    int proc_ok = 1;
    double t0 = sr_client_now_ms();
    for (run->iteration = 0;; run->iteration++) {
        if (run->iteration > 0) {
            read_baselines(run);
            *view = *s;
            shift_versions(steps, s,
                           run->sync ? sr_sync_last_target(run->sync) - s->engine.weight_version
                                     : 0);
            view->steps = steps;
            run->scn = view;
        }
        rc = run_once(run, err);
        run->scn = s;
        /* Sampled with the iteration's results released, the same phase every time. */
        reset_steps(run);
        soak_sample x = take_sample();
        if (run->iteration + 1 >= s->soak_warmup_iterations) {
            proc_ok &= x.fds >= 0 && x.rss >= 0;
            sr_soak_series_add(&fds, x.fds);
            sr_soak_series_add(&rss, x.rss);
        }
        if (rc || should_stop(run) || sr_run_stopped(run) ||
            sr_client_now_ms() - t0 >= (double)s->soak_duration_ms)
            break;
    }
    free_baselines(run);
    free(steps);
    free(view);
    /* An interrupted soak is judged by runner.c (run.interrupted), not by its resources. */
    if (rc || sr_run_stopped(run))
        return rc;
    int64_t iterations = run->iteration + 1;
    soak_totals t;
    memset(&t, 0, sizeof(t));
    resource_check(run, &fds, &rss, iterations, proc_ok);
    engines_at_end(run, &t);
    summary(run, &t, &fds, &rss, iterations, sr_client_now_ms() - t0);
    return 0;
}
