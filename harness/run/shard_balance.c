/* Shards balanced by recorded durations (shard_balance.h). */
#include "shard_balance.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"

void sr_shard_timings_free(sr_shard_timings *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->ids[i]);
    free(t->ids);
    free(t->ms);
    memset(t, 0, sizeof(*t));
}

/* One id's duration: the mean over its executions, added when the id is not known yet. */
typedef struct acc {
    const char *id;
    double sum;
    size_t count;
} acc;

static int by_acc_id(const void *a, const void *b)
{
    return strcmp(((const acc *)a)->id, ((const acc *)b)->id);
}

/* Adds the run's ids that `t` does not hold yet (the newest night comes first). */
static int add_run(sr_shard_timings *t, const sr_run_result *run, sr_err *err)
{
    acc *v = calloc(run->n_scenarios + 1, sizeof(acc));
    if (!v)
        return sr_err_set(err, SR_E_NOMEM, "cannot read %zu timings", run->n_scenarios);
    size_t n = 0;
    for (size_t i = 0; i < run->n_scenarios; i++) {
        const sr_scenario_result *s = run->scenarios[i];
        if (s->id && s->verdict != SR_VERDICT_SKIP && s->verdict != SR_VERDICT_INTERRUPTED &&
            s->wall_ms > 0 && sr_shard_timings_get(t, s->id) < 0)
            v[n++] = (acc){s->id, s->wall_ms, 1};
    }
    qsort(v, n, sizeof(acc), by_acc_id);
    size_t m = 0; /* repeats of one id merged */
    for (size_t i = 0; i < n; i++) {
        if (m && strcmp(v[m - 1].id, v[i].id) == 0) {
            v[m - 1].sum += v[i].sum;
            v[m - 1].count++;
        } else {
            v[m++] = v[i];
        }
    }
    char **ids = realloc(t->ids, (t->n + m + 1) * sizeof(char *));
    if (ids)
        t->ids = ids;
    double *ms = ids ? realloc(t->ms, (t->n + m + 1) * sizeof(double)) : NULL;
    if (ms)
        t->ms = ms;
    int rc = ms ? 0 : SR_E_NOMEM;
    for (size_t i = 0; !rc && i < m; i++) {
        if (!(t->ids[t->n] = strdup(v[i].id)))
            rc = SR_E_NOMEM;
        else
            t->ms[t->n++] = v[i].sum / (double)v[i].count;
    }
    free(v);
    if (rc)
        return sr_err_set(err, SR_E_NOMEM, "cannot keep the timings");
    /* Sorted by id again, so that lookups can bisect. */
    acc *all = calloc(t->n + 1, sizeof(acc));
    if (!all)
        return sr_err_set(err, SR_E_NOMEM, "cannot sort the timings");
    for (size_t i = 0; i < t->n; i++)
        all[i] = (acc){t->ids[i], t->ms[i], 1};
    qsort(all, t->n, sizeof(acc), by_acc_id);
    for (size_t i = 0; i < t->n; i++) {
        t->ids[i] = (char *)all[i].id;
        t->ms[i] = all[i].sum;
    }
    free(all);
    return 0;
}

double sr_shard_timings_get(const sr_shard_timings *t, const char *id)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->ids[mid], id);
        if (!c)
            return t->ms[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int newest_first(const void *a, const void *b)
{
    int64_t x = (*(sr_run_result *const *)a)->header.start_unix_ms;
    int64_t y = (*(sr_run_result *const *)b)->header.start_unix_ms;
    return x > y ? -1 : x < y;
}

/* The nights of a history folder (DIR/<night>/results.json, no symbolic link), newest first. */
static int load_history(sr_shard_timings *t, const char *dir, sr_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return sr_err_set(err, SR_E_IO, "--timings %s: cannot read the folder: %s", dir,
                          strerror(errno));
    sr_run_result **v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        char p[4400];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        snprintf(p, sizeof(p), "%s/%s/results.json", dir, e->d_name);
        if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue; /* no results.json, or a symbolic link: not a night */
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            sr_run_result **x = realloc(v, cap * sizeof(*x));
            if (!x) {
                rc = sr_err_set(err, SR_E_NOMEM, "cannot list the nights of %s", dir);
                break;
            }
            v = x;
        }
        rc = sr_report_load(&v[n], p, err);
        n += rc == 0;
    }
    closedir(d);
    if (!rc && n > 1)
        qsort(v, n, sizeof(*v), newest_first);
    for (size_t i = 0; !rc && i < n; i++)
        rc = add_run(t, v[i], err);
    for (size_t i = 0; i < n; i++)
        sr_run_result_free(v[i]);
    free(v);
    return rc;
}

int sr_shard_timings_load(sr_shard_timings *out, const char *path, sr_err *err)
{
    if (!out || !path)
        return sr_err_set(err, SR_E_INVAL, "sr_shard_timings_load: bad argument");
    memset(out, 0, sizeof(*out));
    char file[4200];
    struct stat st;
    int rc;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(file, sizeof(file), "%s/results.json", path);
        if (stat(file, &st) != 0)
            rc = load_history(out, path, err);
        else {
            sr_run_result *run = NULL;
            rc = sr_report_load(&run, file, err);
            rc = rc ? rc : add_run(out, run, err);
            sr_run_result_free(run);
        }
    } else {
        sr_run_result *run = NULL;
        rc = sr_report_load(&run, path, err);
        rc = rc ? rc : add_run(out, run, err);
        sr_run_result_free(run);
    }
    if (!rc && !out->n)
        rc = sr_err_set(err, SR_E_INVAL, "--timings %s holds no scenario duration", path);
    if (rc)
        sr_shard_timings_free(out);
    return rc;
}

static int by_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

int sr_shard_balanced_ids(const char ***mine, size_t *n_mine, uint64_t *fp, const sr_shard *s,
                          const char *path, const char *const *ids, size_t n, sr_err *err)
{
    if (!mine || !n_mine || !s || !path || (n && !ids))
        return sr_err_set(err, SR_E_INVAL, "sr_shard_balanced_ids: bad argument");
    *mine = NULL;
    *n_mine = 0;
    sr_shard_timings t;
    const char **v = calloc(n + 1, sizeof(char *));
    int *of = calloc(n + 1, sizeof(int));
    int rc = !v || !of ? sr_err_set(err, SR_E_NOMEM, "cannot balance %zu scenarios", n)
                       : sr_shard_timings_load(&t, path, err);
    if (!rc) {
        rc = sr_shard_balance(of, NULL, s, ids, n, &t, err);
        sr_shard_timings_free(&t);
    }
    size_t k = 0;
    for (size_t i = 0; !rc && i < n; i++)
        if (of[i] == s->k)
            v[k++] = ids[i];
    if (!rc && fp)
        *fp = sr_shard_partition_fp(ids, of, n);
    free(of);
    if (rc) {
        free(v);
        return rc;
    }
    qsort(v, k, sizeof(char *), by_str);
    *mine = v;
    *n_mine = k;
    return 0;
}

int sr_shard_ids_has(const char *const *mine, size_t n_mine, const char *id)
{
    return mine && bsearch(&id, mine, n_mine, sizeof(char *), by_str) != NULL;
}

typedef struct item {
    const char *id;
    size_t index;
    double ms;
} item;

static int longest_first(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->ms != y->ms)
        return x->ms > y->ms ? -1 : 1;
    return strcmp(x->id, y->id);
}

int sr_shard_balance(int *shard_of, double *load_ms, const sr_shard *s, const char *const *ids,
                     size_t n, const sr_shard_timings *t, sr_err *err)
{
    if (!shard_of || !s || s->n < 1 || (n && !ids) || !t)
        return sr_err_set(err, SR_E_INVAL, "sr_shard_balance: bad argument");
    item *v = calloc(n + 1, sizeof(item));
    double *load = calloc((size_t)s->n, sizeof(double));
    if (!v || !load) {
        free(v);
        free(load);
        return sr_err_set(err, SR_E_NOMEM, "cannot balance %zu scenarios", n);
    }
    double sum = 0;
    size_t known = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = (item){ids[i], i, sr_shard_timings_get(t, ids[i])};
        if (v[i].ms >= 0) {
            sum += v[i].ms;
            known++;
        }
    }
    /* An id with no recorded duration counts as the mean of the recorded ones. */
    double mean = known ? sum / (double)known : 1.0;
    for (size_t i = 0; i < n; i++)
        if (v[i].ms < 0)
            v[i].ms = mean;
    qsort(v, n, sizeof(item), longest_first);
    for (size_t i = 0; i < n; i++) {
        int best = 0;
        for (int k = 1; k < s->n; k++)
            if (load[k] < load[best])
                best = k;
        load[best] += v[i].ms;
        shard_of[v[i].index] = best + 1;
    }
    if (load_ms)
        memcpy(load_ms, load, (size_t)s->n * sizeof(double));
    free(v);
    free(load);
    return 0;
}
