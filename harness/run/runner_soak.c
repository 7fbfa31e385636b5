/* Soak: the steps of a scenario again and again for a bounded time, with resource samples of
 * the harness process and a final look at every engine (runner_soak.h, FORMAT.md §15). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner_soak.h"

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

static void resource_check(sr_scn_run *run, const soak_sample *base, const soak_sample *last,
                           int64_t iterations)
{
    const sr_scenario *s = run->scn;
    const char *name = "soak.resource_growth";
    char why[SR_ERR_MSG_MAX];
    if (run->opts->jobs > 1) {
        snprintf(why, sizeof(why),
                 "descriptors and memory are the whole process's, and %d scenarios ran in "
                 "parallel; run the soak with -j 1",
                 run->opts->jobs);
        sr_scenario_skip_check(run->res, name, why);
        return;
    }
    if (iterations <= s->soak_warmup_iterations || base->fds < 0 || base->rss < 0 ||
        last->fds < 0 || last->rss < 0) {
        snprintf(why, sizeof(why), "%lld iterations ran, %lld of them warm-up%s",
                 (long long)iterations, (long long)s->soak_warmup_iterations,
                 iterations > s->soak_warmup_iterations ? "; /proc/self could not be read" : "");
        sr_scenario_skip_check(run->res, name, why);
        return;
    }
    if (last->fds > base->fds + s->soak_max_fd_growth)
        sr_run_check(run, -1, name,
                     "open descriptors grew from %lld after %lld warm-up iterations to %lld after "
                     "%lld (allowed: +%lld)",
                     (long long)base->fds, (long long)s->soak_warmup_iterations,
                     (long long)last->fds, (long long)iterations, (long long)s->soak_max_fd_growth);
    if (SOAK_COMPARE_RSS && last->rss > base->rss + s->soak_max_rss_growth)
        sr_run_check(run, -1, name,
                     "resident memory grew from %.1f MiB after %lld warm-up iterations to %.1f "
                     "MiB after %lld (allowed: +%.1f MiB)",
                     (double)base->rss / 1048576.0, (long long)s->soak_warmup_iterations,
                     (double)last->rss / 1048576.0, (long long)iterations,
                     (double)s->soak_max_rss_growth / 1048576.0);
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

static void summary(sr_scn_run *run, const soak_totals *t, const soak_sample *base,
                    const soak_sample *last, int64_t iterations, double ms)
{
    const sr_counters *c = &run->res->counters;
    char kinds[1024] = "";
    size_t used = 0;
    for (int k = 0; k < t->n_kinds && used < sizeof(kinds); k++)
        used += (size_t)snprintf(kinds + used, sizeof(kinds) - used, "%s%s=%lld", k ? " " : "",
                                 t->kinds[k].kind, (long long)t->kinds[k].fired);
    char res[256];
    if (base->fds < 0 || base->rss < 0 || last->fds < 0 || last->rss < 0)
        snprintf(res, sizeof(res), "harness resources not compared (%lld warm-up iterations)",
                 (long long)run->scn->soak_warmup_iterations);
    else
        snprintf(res, sizeof(res),
                 "harness fds %lld -> %lld, RSS %.1f -> %.1f MiB%s after %lld warm-up iterations",
                 (long long)base->fds, (long long)last->fds, (double)base->rss / 1048576.0,
                 (double)last->rss / 1048576.0,
                 SOAK_COMPARE_RSS ? "" : " (not compared: AddressSanitizer build)",
                 (long long)run->scn->soak_warmup_iterations);
    fprintf(stderr,
            "syncroll run: soak %s: %lld iterations in %.1f s: %lld rollouts (%lld verified, "
            "%lld failed), %lld turns, %lld retries, %lld syncs, %lld faults fired (%s); %s; "
            "%d/%d engines answering\n",
            run->scn->id, (long long)iterations, ms / 1000.0, (long long)c->rollouts_requested,
            (long long)c->rollouts_verified, (long long)c->rollouts_failed, (long long)c->turns,
            (long long)c->retries, (long long)c->syncs, (long long)t->fired, kinds, res,
            t->answering, run->n_procs);
}

int sr_run_iterations(sr_scn_run *run, int (*run_once)(sr_scn_run *, sr_err *), sr_err *err)
{
    const sr_scenario *s = run->scn;
    if (s->soak_duration_ms <= 0)
        return run_once(run, err);
    soak_sample base = {-1, -1}, last = {-1, -1};
    double t0 = sr_client_now_ms();
    int rc = 0;
    for (run->iteration = 0;; run->iteration++) {
        if (run->iteration > 0)
            reset_steps(run);
        rc = run_once(run, err);
        last = take_sample();
        if (run->iteration + 1 == s->soak_warmup_iterations)
            base = last;
        if (rc || should_stop(run) || sr_run_stopped(run) ||
            sr_client_now_ms() - t0 >= (double)s->soak_duration_ms)
            break;
    }
    /* An interrupted soak is judged by runner.c (run.interrupted), not by its resources. */
    if (rc || sr_run_stopped(run))
        return rc;
    int64_t iterations = run->iteration + 1;
    soak_totals t;
    memset(&t, 0, sizeof(t));
    resource_check(run, &base, &last, iterations);
    engines_at_end(run, &t);
    summary(run, &t, &base, &last, iterations, sr_client_now_ms() - t0);
    return 0;
}
