/* syncroll run, after the options: loading, selection, the run folder, rounds, reports. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd_run_priv.h"
#include "commands.h"
#include "report/report.h"
#include "report/term.h"
#include "run/runner.h"
#include "run/shard_balance.h"
#include "sr_clock.h"

static int mkdir_p(const char *path)
{
    char tmp[8192];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* ---- loading and selection ---- */

typedef struct loaded {
    sr_scenario **v;
    size_t n;
    const char **mine; /* --timings: the ids of this shard, sorted (borrowed from v) */
    size_t n_mine;
} loaded;

/*
 * l->v[l->n] was just loaded from `path`: one execution per dialect of its engines.dialects (the
 * loaded one for the first; the others loaded again), each appended to l.
 */
static int expand_dialects(loaded *l, const char *path, const run_args *a, sr_err *err)
{
    sr_scenario *base = l->v[l->n];
    unsigned mask = base->dialects;
    l->n++;
    if (!mask)
        return 0;
    int own = (int)base->engine.dialect, keep = -1, rc = 0;
    for (int d = 0; d < SR_DIALECT_COUNT && keep < 0; d++)
        if (mask & (1u << d))
            keep = d;
    /* The loaded one is the file's own dialect when listed (plain id), else the first listed. */
    if (mask & (1u << own))
        keep = own;
    else if ((rc = sr_scenario_for_dialect(base, (sr_dialect)keep, err)))
        return rc;
    for (int d = 0; d < SR_DIALECT_COUNT && !rc; d++) {
        if (!(mask & (1u << d)) || d == keep)
            continue;
        sr_scenario *s = NULL;
        rc = sr_scenario_load_max(&s, path, a->max_scenario_bytes, err);
        if (!rc)
            rc = sr_scenario_for_dialect(s, (sr_dialect)d, err);
        if (rc) {
            sr_scenario_free(s);
            return rc;
        }
        l->v[l->n++] = s;
    }
    return 0;
}

static int load_all(loaded *l, const run_args *a)
{
    char **files = NULL;
    size_t n = 0;
    sr_err err = SR_ERR_INIT;
    if (sr_scenario_files(&files, &n, a->paths, a->n_paths, &err)) {
        fprintf(stderr, "syncroll run: %s: %s\n", sr_code_name(err.code), err.msg);
        return -1;
    }
    /* A scenario runs at most once per dialect (engines.dialects). */
    l->v = calloc(n * SR_DIALECT_COUNT + 1, sizeof(*l->v));
    int bad = !l->v;
    for (size_t i = 0; l->v && i < n; i++) {
        sr_err e = SR_ERR_INIT;
        int rc = sr_scenario_load_max(&l->v[l->n], files[i], a->max_scenario_bytes, &e);
        if (rc) {
            fprintf(stderr, "%s [%s]\n", e.msg, sr_code_name(rc));
            bad = 1;
            continue;
        }
        size_t first = l->n;
        if (expand_dialects(l, files[i], a, &e) != 0) {
            fprintf(stderr, "%s [%s]\n", e.msg, sr_code_name(e.code));
            bad = 1;
        }
        for (size_t k = first; k < l->n; k++)
            for (size_t j = 0; j < k; j++)
                if (strcmp(l->v[j]->id, l->v[k]->id) == 0) {
                    fprintf(stderr, "%s: id '%s' is also the id of %s [scenario.invalid]\n",
                            files[i], l->v[k]->id, l->v[j]->path);
                    bad = 1;
                }
    }
    sr_scenario_files_free(files, n);
    return bad ? -1 : 0;
}

static int has_tag(const sr_scenario *s, const char *t)
{
    for (int i = 0; i < s->n_tags; i++)
        if (strcmp(s->tags[i], t) == 0)
            return 1;
    return 0;
}

static int tag_selected(const sr_scenario *s, const run_args *a)
{
    int any = a->n_tags == 0;
    for (size_t i = 0; i < a->n_tags; i++)
        any |= has_tag(s, a->tags[i]);
    for (size_t i = 0; i < a->n_exclude; i++)
        if (has_tag(s, a->exclude[i]))
            return 0;
    return any;
}

static int selected(const sr_scenario *s, const run_args *a)
{
    if (!tag_selected(s, a))
        return 0;
    if (a->shard.n && a->timings)
        return sr_shard_ids_has(a->shard_ids, a->n_shard_ids, s->id);
    return sr_shard_selects(&a->shard, s->id);
}

/* A sharded run: this shard's ids of the scenarios the tags select, by the durations of --timings
 * (run/shard_balance.h, into l->mine and a->shard_ids) or by the hash (shard.h), and the whole
 * partition's fingerprint (a->partition_fp, in the run's selection line). 0, or -1 after
 * printing the error. */
static int partition(loaded *l, run_args *a)
{
    if (!a->shard.n)
        return 0;
    sr_err err = SR_ERR_INIT;
    const char **ids = calloc(l->n + 1, sizeof(char *));
    int *of = calloc(l->n + 1, sizeof(int));
    size_t n = 0;
    for (size_t i = 0; ids && i < l->n; i++)
        if (tag_selected(l->v[i], a))
            ids[n++] = l->v[i]->id;
    int rc = !ids || !of  ? sr_err_set(&err, SR_E_NOMEM, "cannot partition the scenarios")
             : a->timings ? sr_shard_balanced_ids(&l->mine, &l->n_mine, &a->partition_fp, &a->shard,
                                                  a->timings, ids, n, &err)
                          : 0;
    if (!rc && !a->timings) {
        for (size_t i = 0; i < n; i++)
            of[i] = sr_shard_of(&a->shard, ids[i]);
        a->partition_fp = sr_shard_partition_fp(ids, of, n);
    }
    free(ids);
    free(of);
    if (rc) {
        fprintf(stderr, "syncroll run: %s [%s]\n", err.msg, sr_code_name(rc));
        return -1;
    }
    if (!a->timings)
        return 0;
    a->shard_ids = l->mine;
    a->n_shard_ids = l->n_mine;
    fprintf(stderr, "syncroll run: shard %d/%d balanced by the durations of %s: %zu of %zu\n",
            a->shard.k, a->shard.n, a->timings, l->n_mine, n);
    return 0;
}

/*
 * Points <out>/latest at the run: a new symbolic link renamed over the old one, so a reader never
 * finds none. Anything there that is not a symbolic link (a file, a folder) is someone's data:
 * it is left alone with a warning, and so is a failure; neither changes the run's exit status
 * (latest is a convenience, the run folder is complete). No temporary link is left behind.
 */
static void point_latest(const char *out, const char *run_id)
{
    char tmp[4200], latest[4200];
    snprintf(tmp, sizeof(tmp), "%s/.latest-%ld", out, (long)getpid());
    snprintf(latest, sizeof(latest), "%s/latest", out);
    struct stat st;
    if (lstat(latest, &st) == 0 && !S_ISLNK(st.st_mode)) {
        fprintf(stderr,
                "syncroll run: warning: %s is a %s, not a symbolic link: left as it is, not "
                "pointed at %s\n",
                latest, S_ISDIR(st.st_mode) ? "folder" : "file", run_id);
        return;
    }
    unlink(tmp);
    if (symlink(run_id, tmp) != 0) {
        fprintf(stderr, "syncroll run: warning: cannot create %s: %s\n", tmp, strerror(errno));
        return;
    }
    if (rename(tmp, latest) != 0) {
        int e = errno;
        unlink(tmp);
        fprintf(stderr, "syncroll run: warning: cannot point %s at %s: %s\n", latest, run_id,
                strerror(e));
    }
}

/* Creates <out>/<run-id>/{scenarios,artifacts} and points <out>/latest at it. */
static int make_run_dir(char *dir, size_t cap, char *run_id, size_t idcap, const char *out)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    snprintf(run_id, idcap, "%s-%ld", stamp, (long)getpid());
    snprintf(dir, cap, "%s/%s", out, run_id);
    char sub[4200];
    int rc = mkdir_p(dir);
    snprintf(sub, sizeof(sub), "%s/scenarios", dir);
    rc = rc ? rc : mkdir_p(sub);
    snprintf(sub, sizeof(sub), "%s/artifacts", dir);
    rc = rc ? rc : mkdir_p(sub);
    if (rc)
        return rc;
    point_latest(out, run_id);
    return 0;
}

/* ---- executing rounds ---- */

typedef struct job {
    const sr_scenario *scn;
    sr_scenario_result *res;
    int repeat;
} job;

typedef struct pool {
    job *jobs;
    size_t n;
    atomic_size_t next;
    const char *dir, *self;
    double t0;
    int keep;
    int n_jobs;                /* min(-j, scenarios in the round), for sr_run_opts */
    int64_t duration_ms;       /* --duration, for the repro line */
    size_t max_scenario_bytes; /* --max-scenario-bytes, likewise */
    pthread_mutex_t print;
    sr_term *term;
    sr_run_stop stop; /* the run's stop switch (runner_state.h), set by the watcher */
} pool;

static void run_job(pool *p, const job *j)
{
    char work[4300], expanded[4300], repro[4400];
    if (j->repeat > 1)
        snprintf(work, sizeof(work), "%s/artifacts/%s.%d", p->dir, j->scn->id, j->repeat);
    else
        snprintf(work, sizeof(work), "%s/artifacts/%s", p->dir, j->scn->id);
    snprintf(expanded, sizeof(expanded), "%s/scenarios/%s.json", p->dir, j->scn->id);
    snprintf(repro, sizeof(repro), "syncroll run %s --seed %llu", j->scn->path,
             (unsigned long long)j->scn->seed);
    if (p->duration_ms)
        snprintf(repro + strlen(repro), sizeof(repro) - strlen(repro), " --duration %lld",
                 (long long)(p->duration_ms / 1000));
    if (p->max_scenario_bytes)
        snprintf(repro + strlen(repro), sizeof(repro) - strlen(repro), " --max-scenario-bytes %zu",
                 p->max_scenario_bytes);
    if (atomic_load(&p->stop.signo)) {
        /* Not started: the run is stopping. Listed all the same, so the report is complete
         * about what was selected. */
        sr_result_set_str(&j->res->id, j->scn->id, NULL);
        sr_result_set_str(&j->res->file, j->scn->path, NULL);
        sr_result_set_str(&j->res->repro, repro, NULL);
        j->res->seed = j->scn->seed;
        j->res->repeat = j->repeat;
        sr_result_check(j->res, "run.interrupted", NULL, NULL,
                        "scenario %s: %s arrived before it started", j->scn->id,
                        sr_run_signal_name(atomic_load(&p->stop.signo)));
        sr_result_set_verdict(j->res, SR_VERDICT_INTERRUPTED, "run.interrupted: not started");
    } else if (mkdir_p(work) != 0) {
        sr_result_set_str(&j->res->id, j->scn->id, NULL);
        sr_result_set_verdict(j->res, SR_VERDICT_ERROR, "cannot create %s: %s", work,
                              strerror(errno));
    } else {
        sr_run_opts o = {p->self, work, expanded, repro, j->repeat, p->t0, p->n_jobs};
        sr_run_scenario_in(j->res, j->scn, &o, &p->stop);
        if ((j->res->verdict == SR_VERDICT_PASS || j->res->verdict == SR_VERDICT_SKIP) &&
            !p->keep) {
            sr_err re = SR_ERR_INIT;
            if (sr_run_remove_folder(work, &re) != 0)
                fprintf(stderr, "syncroll run: warning: %s\n", re.msg);
            sr_result_set_str(&j->res->artifacts, NULL, NULL);
        }
    }
    pthread_mutex_lock(&p->print);
    sr_term_scenario_done(p->term, j->res);
    pthread_mutex_unlock(&p->print);
}

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            return NULL;
        run_job(p, &p->jobs[i]);
    }
}

static void run_round(pool *p, int jobs)
{
    size_t nt = (size_t)jobs < p->n ? (size_t)jobs : p->n;
    pthread_t th[256];
    size_t started = 0;
    atomic_store(&p->next, 0);
    for (size_t i = 1; i < nt; i++)
        if (pthread_create(&th[started], NULL, worker, p) == 0)
            started++;
    worker(p);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* Runs the rounds; returns 1 if any scenario failed or errored. */
static int run_rounds(sr_run_result *run, const loaded *l, const run_args *a, pool *p)
{
    int any_fail = 0;
    p->jobs = calloc(l->n + 1, sizeof(job));
    if (!p->jobs)
        return 1;
    for (int round = 1; !a->until_fail || !any_fail; round++) {
        if (round > a->repeat && (!a->until_fail || a->has_repeat))
            break;
        if (atomic_load(&p->stop.signo))
            break;
        p->n = 0;
        for (size_t i = 0; i < l->n; i++) {
            if (!selected(l->v[i], a))
                continue;
            job *j = &p->jobs[p->n++];
            j->scn = l->v[i];
            j->repeat = round;
            if (sr_run_result_add_scenario(&j->res, run, NULL))
                return 1;
        }
        if (!p->n)
            break;
        sr_term_add_total(p->term, p->n);
        /* Scenarios that really run side by side in this round (the soak's resource check). */
        p->n_jobs = (size_t)a->jobs < p->n ? a->jobs : (int)p->n;
        run_round(p, a->jobs);
        for (size_t i = 0; i < p->n; i++)
            any_fail |= p->jobs[i].res->verdict == SR_VERDICT_FAIL ||
                        p->jobs[i].res->verdict == SR_VERDICT_ERROR;
    }
    free(p->jobs);
    return any_fail;
}

/* Writes the reports of `which`; the bits of those that could not be written go to *failed,
 * their errors to errs (indexed by bit position). */
static void try_reports(const sr_run_result *run, const char *dir, unsigned which, unsigned *failed,
                        int *no_room, sr_err *errs)
{
    *failed = 0;
    *no_room = 0;
    for (unsigned bit = 1, k = 0; bit & SR_REPORT_ALL; bit <<= 1, k++) {
        sr_err_clear(&errs[k]);
        int os = 0;
        if ((which & bit) && sr_report_write_os(run, dir, bit, &os, &errs[k])) {
            *failed |= bit;
            *no_room |= os == ENOSPC || os == EDQUOT;
        }
    }
}

/*
 * Writes every selected report. When one cannot be written for lack of room (ENOSPC or EDQUOT),
 * the weight versions failed scenarios keep are removed and the failed reports tried again: the
 * reports come before the largest artifacts. Any other failure (a file size limit, a permission)
 * keeps them, since removing them would not help. Each report still not written is named on
 * stderr. Returns how many.
 */
static int write_reports(const sr_run_result *run, const char *dir, unsigned which)
{
    sr_err errs[8];
    unsigned failed;
    int no_room;
    try_reports(run, dir, which, &failed, &no_room, errs);
    if (failed && no_room && sr_run_drop_checkpoints(run, stderr))
        try_reports(run, dir, failed, &failed, &no_room, errs);
    int n = 0;
    for (unsigned bit = 1, k = 0; bit & SR_REPORT_ALL; bit <<= 1, k++)
        if (failed & bit) {
            fprintf(stderr, "syncroll run: report %s not written: %s\n", sr_report_file_name(bit),
                    errs[k].msg);
            n++;
        }
    return n;
}

/*
 * lint's memory check (scenario.h) over the selected scenarios, unless --force: each one whose
 * estimate exceeds the machine's memory is named with resource.memory_estimate. Returns 1 when
 * one was refused (nothing runs then).
 */
static int memory_refused(const loaded *l, const run_args *a)
{
    uint64_t machine = sr_scenario_machine_memory();
    int refused = 0;
    for (size_t i = 0; !a->force && i < l->n; i++) {
        sr_err e = SR_ERR_INIT;
        int rc = selected(l->v[i], a) ? sr_scenario_memory_check(l->v[i], machine, &e) : 0;
        if (rc) {
            fprintf(stderr, "%s; --force to run anyway [%s]\n", e.msg, sr_code_name(rc));
            refused = 1;
        }
    }
    return refused;
}

static void free_loaded(loaded *l)
{
    for (size_t i = 0; i < l->n; i++)
        sr_scenario_free(l->v[i]);
    free(l->v);
    free(l->mine);
}

/* Runs every round under the signal watcher, then reports; returns the exit status. */
static int run_and_report(sr_run_result *run, const loaded *l, const run_args *a, pool *p,
                          sr_signals *sig)
{
    sr_run_watcher w;
    sr_run_watch_start(&w, sig, &p->stop);
    int failed = run_rounds(run, l, a, p);
    /* Every runner has stopped its engines; whatever a failed stop left is killed here. */
    sr_proc_reg_signal(&p->stop.procs, SIGKILL);
    sr_run_watch_stop(&w);
    int signo = atomic_load(&p->stop.signo);
    sr_run_result_finish(run, sr_client_now_ms() - p->t0);
    if (signo) {
        char why[128];
        snprintf(why, sizeof(why), "interrupted by %s", sr_run_signal_name(signo));
        run->partial = 1;
        sr_result_set_str(&run->partial_reason, why, NULL);
    }
    int bad_reports = write_reports(run, p->dir, a->reports);
    char note[4300];
    snprintf(note, sizeof(note), "run folder: %s", p->dir);
    sr_term_note(p->term, note);
    if (signo) {
        snprintf(note, sizeof(note), "PARTIAL: %s; the reports say which scenarios did not finish",
                 run->partial_reason ? run->partial_reason : "interrupted");
        sr_term_note(p->term, note);
    }
    sr_term_finish(p->term, run);
    /* A stop signal that arrived while the reports were written (the watcher had ended) is
     * still pending: the reports are complete, but the exit status says the run was stopped. */
    int late = signo || !sig || sig->fd < 0 ? 0 : sr_signals_next(sig);
    if (late > 0) {
        fprintf(stderr,
                "syncroll run: %s while the reports were written: they are complete; exit %d\n",
                sr_run_signal_name(late), 128 + late);
        signo = late;
    }
    if (bad_reports)
        fprintf(stderr, "syncroll run: %d report(s) could not be written (exit status %d)\n",
                bad_reports, signo ? 128 + signo : SR_RUN_EXIT_REPORT);
    if (signo)
        return 128 + signo;
    if (bad_reports)
        return SR_RUN_EXIT_REPORT;
    return failed ? SR_EXIT_FAIL : SR_EXIT_OK;
}

int sr_run_main(const run_args *args, sr_signals *sig, int argc, char **argv)
{
    run_args shard_args = *args; /* plus this shard's ids when --timings balances */
    const run_args *a = &shard_args;
    loaded l = {NULL, 0, NULL, 0};
    if (load_all(&l, a) || partition(&l, &shard_args) || memory_refused(&l, a)) {
        free_loaded(&l);
        return SR_EXIT_USAGE;
    }
    for (size_t i = 0; a->has_seed && i < l.n; i++)
        sr_scenario_set_seed(l.v[i], a->seed);
    for (size_t i = 0; a->duration_ms && i < l.n; i++)
        l.v[i]->soak_duration_ms = a->duration_ms;
    if (a->list) {
        for (size_t i = 0; i < l.n; i++)
            if (selected(l.v[i], a))
                printf("%s\n", l.v[i]->id);
        free_loaded(&l);
        return SR_EXIT_OK;
    }
    char dir[4096], run_id[64], self[4096];
    sr_err err = SR_ERR_INIT;
    sr_run_result *run = NULL;
    int status = SR_EXIT_USAGE;
    pool p;
    memset(&p, 0, sizeof(p));
    if (make_run_dir(dir, sizeof(dir), run_id, sizeof(run_id), a->out) != 0)
        fprintf(stderr, "syncroll run: io.error: cannot create the run folder under %s: %s\n",
                a->out, strerror(errno));
    else if (sr_proc_self_exe(self, sizeof(self), &err) || sr_run_result_new(&run, &err))
        fprintf(stderr, "syncroll run: %s: %s\n", sr_code_name(err.code), err.msg);
    else if (sr_proc_reg_init(&p.stop.procs))
        status = SR_EXIT_FAIL;
    else {
        p.dir = dir;
        /* SYNCROLL_ENGINE runs the mock engines from another syncroll build. */
        const char *engine = getenv("SYNCROLL_ENGINE");
        p.self = engine && *engine ? engine : self;
        p.keep = a->keep;
        p.duration_ms = a->duration_ms;
        p.max_scenario_bytes = a->max_scenario_bytes;
        p.t0 = sr_client_now_ms();
        atomic_store(&p.stop.signo, 0);
        pthread_mutex_init(&p.print, NULL);
        if (sr_run_fill_header(&run->header, a, argc, argv, run_id, dir, &err) ||
            sr_term_start(&p.term, stdout, 0, NULL, &err)) {
            fprintf(stderr, "syncroll run: %s: %s\n", sr_code_name(err.code), err.msg);
            status = SR_EXIT_FAIL;
        } else
            status = run_and_report(run, &l, a, &p, sig);
        pthread_mutex_destroy(&p.print);
        sr_proc_reg_destroy(&p.stop.procs);
    }
    sr_run_result_free(run);
    free_loaded(&l);
    return status;
}
