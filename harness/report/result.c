#include "result.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const verdict_names[SR_VERDICT_COUNT] = {"pass", "fail", "error", "skip",
                                                            "interrupted"};

static const char *const phase_names[SR_PHASE_COUNT] = {"request",  "splice",     "record",
                                                        "finalize", "collate",    "publish",
                                                        "apply",    "sync_total", "scenario"};

const char *sr_verdict_name(sr_verdict v)
{
    return (unsigned)v < SR_VERDICT_COUNT ? verdict_names[v] : NULL;
}

const char *sr_phase_name(sr_phase p)
{
    return (unsigned)p < SR_PHASE_COUNT ? phase_names[p] : NULL;
}

int sr_phase_lookup(const char *name)
{
    for (int i = 0; name && i < SR_PHASE_COUNT; i++)
        if (strcmp(phase_names[i], name) == 0)
            return i;
    return -1;
}

int sr_result_set_str(char **dst, const char *s, sr_err *err)
{
    char *c = NULL;
    if (s && !(c = strdup(s)))
        return sr_err_set(err, SR_E_NOMEM, "cannot copy a string of the result");
    free(*dst);
    *dst = c;
    return 0;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void scenario_free(sr_scenario_result *s)
{
    if (!s)
        return;
    free(s->id);
    free(s->file);
    free(s->expanded);
    free(s->artifacts);
    free(s->repro);
    free(s->description);
    free_strv(s->tags, s->n_tags);
    free_strv(s->expect_checks, s->n_expect_checks);
    free(s->checks);
    free(s->fired);
    free(s->fired_classes);
    free(s->skipped);
    free(s->steps);
    for (size_t i = 0; s->engines && i < s->n_engines; i++) {
        free(s->engines[i].url);
        free(s->engines[i].log);
        free(s->engines[i].exit);
    }
    free(s->engines);
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        sr_hist_free(s->phase[p]);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int sr_run_result_new(sr_run_result **out, sr_err *err)
{
    *out = NULL;
    sr_run_result *r = calloc(1, sizeof(*r));
    if (!r)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the run result");
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        int rc = sr_hist_new_dense(&r->phase[p], err);
        if (rc) {
            sr_run_result_free(r);
            return rc;
        }
    }
    *out = r;
    return 0;
}

void sr_run_result_free(sr_run_result *run)
{
    if (!run)
        return;
    sr_run_header *h = &run->header;
    free(h->version);
    free(h->git_rev);
    free(h->run_id);
    free(h->out_dir);
    free(h->hostname);
    free(h->kernel);
    free(h->arch);
    free(h->command);
    free_strv(h->tags, h->n_tags);
    free_strv(h->exclude_tags, h->n_exclude_tags);
    free(h->shard_source);
    free(h->shard_detail);
    free(h->run_group);
    free(h->selection);
    free_strv(h->merged_from, h->n_merged_from);
    for (size_t i = 0; i < h->n_shards; i++) {
        free(h->shards[i].run_id);
        free(h->shards[i].hostname);
        free(h->shards[i].command);
    }
    free(h->shards);
    for (size_t i = 0; i < run->n_scenarios; i++)
        scenario_free(run->scenarios[i]);
    free(run->scenarios);
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        sr_hist_free(run->phase[p]);
    free(run->partial_reason);
    free(run);
}

int sr_run_result_add_scenario(sr_scenario_result **out, sr_run_result *run, sr_err *err)
{
    *out = NULL;
    if (run->n_scenarios == run->cap_scenarios) {
        size_t cap = run->cap_scenarios ? run->cap_scenarios * 2 : 16;
        sr_scenario_result **v = realloc(run->scenarios, cap * sizeof(*v));
        if (!v)
            return sr_err_set(err, SR_E_NOMEM, "cannot grow the scenario list");
        run->scenarios = v;
        run->cap_scenarios = cap;
    }
    sr_scenario_result *s = calloc(1, sizeof(*s));
    if (!s)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a scenario result");
    pthread_mutex_init(&s->mu, NULL);
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        int rc = sr_hist_new(&s->phase[p], err);
        if (rc) {
            scenario_free(s);
            return rc;
        }
    }
    s->repeat = 1;
    s->expect_verdict = SR_VERDICT_PASS;
    run->scenarios[run->n_scenarios++] = s;
    *out = s;
    return 0;
}

/* A copy of n items of `size` bytes (NULL when n is 0); -1 when out of memory. */
static int dup_items(void *dst, const void *src, size_t n, size_t size)
{
    void *c = NULL;
    if (n && src && !(c = malloc(n * size)))
        return -1;
    if (c)
        memcpy(c, src, n * size);
    *(void **)dst = c;
    return 0;
}

static int dup_strv(char ***dst, size_t *dn, char *const *src, size_t n)
{
    *dn = 0;
    if (!(*dst = calloc(n + 1, sizeof(char *))))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (sr_result_set_str(&(*dst)[(*dn)++], src[i], NULL))
            return -1;
    return 0;
}

/* Copies everything of src but its lock and histograms into the fresh entry d. */
static int copy_members(sr_scenario_result *d, const sr_scenario_result *src)
{
    int bad =
        sr_result_set_str(&d->id, src->id, NULL) || sr_result_set_str(&d->file, src->file, NULL) ||
        sr_result_set_str(&d->expanded, src->expanded, NULL) ||
        sr_result_set_str(&d->artifacts, src->artifacts, NULL) ||
        sr_result_set_str(&d->repro, src->repro, NULL) ||
        sr_result_set_str(&d->description, src->description, NULL) ||
        dup_strv(&d->tags, &d->n_tags, src->tags, src->n_tags) ||
        dup_strv(&d->expect_checks, &d->n_expect_checks, src->expect_checks, src->n_expect_checks);
    d->seed = src->seed;
    d->repeat = src->repeat;
    d->shard = src->shard;
    d->external = src->external;
    d->verdict = src->verdict;
    memcpy(d->reason, src->reason, sizeof(d->reason));
    d->expect_verdict = src->expect_verdict;
    d->checks_dropped = src->checks_dropped;
    d->start_ms = src->start_ms;
    d->wall_ms = src->wall_ms;
    d->counters = src->counters;
    memcpy(d->cpu, src->cpu, sizeof(d->cpu));
    bad = bad || dup_items(&d->checks, src->checks, src->n_checks, sizeof(sr_check));
    d->n_checks = d->cap_checks = bad ? 0 : src->n_checks;
    bad = bad || dup_items(&d->fired, src->fired, src->n_fired, sizeof(sr_check_count));
    d->n_fired = bad ? 0 : src->n_fired;
    bad = bad || dup_items(&d->fired_classes, src->fired_classes, src->n_fired_classes,
                           sizeof(sr_check_count));
    d->n_fired_classes = bad ? 0 : src->n_fired_classes;
    bad = bad || dup_items(&d->skipped, src->skipped, src->n_skipped, sizeof(sr_skipped_check));
    d->n_skipped = bad ? 0 : src->n_skipped;
    bad = bad || dup_items(&d->steps, src->steps, src->n_steps, sizeof(sr_step_timing));
    d->n_steps = bad ? 0 : src->n_steps;
    if (bad || (src->n_engines && !(d->engines = calloc(src->n_engines, sizeof(sr_engine_run)))))
        return -1;
    for (size_t i = 0; i < src->n_engines; i++, d->n_engines++) {
        sr_engine_run *e = &d->engines[i];
        const sr_engine_run *f = &src->engines[i];
        e->index = f->index;
        e->pid = f->pid;
        if (sr_result_set_str(&e->url, f->url, NULL) || sr_result_set_str(&e->log, f->log, NULL) ||
            sr_result_set_str(&e->exit, f->exit, NULL))
            return -1;
    }
    return 0;
}

int sr_run_result_add_copy(sr_scenario_result **out, sr_run_result *run,
                           const sr_scenario_result *src, sr_err *err)
{
    sr_scenario_result *d;
    int rc = sr_run_result_add_scenario(&d, run, err);
    if (rc)
        return rc;
    *out = d;
    if (copy_members(d, src))
        return sr_err_set(err, SR_E_NOMEM, "cannot copy scenario result '%s'",
                          src->id ? src->id : "?");
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        if (sr_hist_merge(d->phase[p], src->phase[p]))
            return sr_err_set(err, SR_E_NOMEM, "cannot copy the %s histogram of '%s'",
                              sr_phase_name((sr_phase)p), src->id ? src->id : "?");
    return 0;
}

static int is_expected(const sr_scenario_result *s, const char *name)
{
    for (size_t i = 0; i < s->n_expect_checks; i++)
        if (strcmp(s->expect_checks[i], name) == 0)
            return 1;
    return 0;
}

/* Counts one firing of `name` in a count list; the caller holds the lock. */
static int count_in(sr_check_count **list, size_t *n, const char *name, int expected)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i].name, name) == 0) {
            (*list)[i].count++;
            return 0;
        }
    sr_check_count *v = realloc(*list, (*n + 1) * sizeof(*v));
    if (!v)
        return SR_E_NOMEM;
    *list = v;
    sr_check_count *c = &v[(*n)++];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->count = 1;
    c->expected = expected;
    return 0;
}

/* Room for one more kept check, doubling from 4 (the lock is held): most executions fire none,
 * and a full list of SR_RESULT_MAX_CHECKS is 178 KiB. */
static int grow_checks(sr_scenario_result *s)
{
    if (s->n_checks < s->cap_checks)
        return 0;
    size_t cap = s->cap_checks ? s->cap_checks * 2 : 4;
    if (cap > SR_RESULT_MAX_CHECKS)
        cap = SR_RESULT_MAX_CHECKS;
    sr_check *v = realloc(s->checks, cap * sizeof(*v));
    if (!v)
        return SR_E_NOMEM;
    s->checks = v;
    s->cap_checks = cap;
    return 0;
}

int sr_result_check(sr_scenario_result *s, const char *name, const char *classification,
                    const sr_check_where *where, const char *fmt, ...)
{
    static const sr_check_where none = SR_CHECK_WHERE_NONE;
    int expected = is_expected(s, name);
    pthread_mutex_lock(&s->mu);
    int rc = count_in(&s->fired, &s->n_fired, name, expected);
    if (!rc && classification && *classification)
        rc = count_in(&s->fired_classes, &s->n_fired_classes, classification, 0);
    if (!rc && s->n_checks >= SR_RESULT_MAX_CHECKS) {
        s->checks_dropped++;
    } else if (!rc) {
        rc = grow_checks(s);
        if (!rc) {
            sr_check *c = &s->checks[s->n_checks++];
            memset(c, 0, sizeof(*c));
            snprintf(c->name, sizeof(c->name), "%s", name);
            snprintf(c->classification, sizeof(c->classification), "%s",
                     classification ? classification : "");
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->message, sizeof(c->message), fmt, ap);
            va_end(ap);
            c->where = where ? *where : none;
            c->expected = expected;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

size_t sr_result_set_evidence(sr_scenario_result *s, int64_t step, int64_t sample, const char *path,
                              int cut)
{
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_checks; i++) {
        sr_check *c = &s->checks[i];
        if (c->evidence[0] || (step < 0 && c->expected) ||
            (step >= 0 && (c->where.step != step || c->where.sample != sample)))
            continue;
        snprintf(c->evidence, sizeof(c->evidence), "%s", path);
        c->evidence_cut = cut;
        n++;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

int sr_result_skip_check(sr_scenario_result *s, const char *name, const char *reason)
{
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    size_t i = 0;
    while (i < s->n_skipped && strcmp(s->skipped[i].name, name) != 0)
        i++;
    if (i == s->n_skipped) {
        sr_skipped_check *v = realloc(s->skipped, (s->n_skipped + 1) * sizeof(*v));
        if (!v) {
            rc = SR_E_NOMEM;
        } else {
            s->skipped = v;
            snprintf(v[i].name, sizeof(v[i].name), "%s", name);
            snprintf(v[i].reason, sizeof(v[i].reason), "%s", reason);
            s->n_skipped++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void sr_result_record(sr_scenario_result *s, sr_phase phase, uint64_t ns)
{
    if ((unsigned)phase >= SR_PHASE_COUNT)
        return;
    pthread_mutex_lock(&s->mu);
    int rc = sr_hist_record(s->phase[phase], ns);
    pthread_mutex_unlock(&s->mu);
    if (rc)
        sr_result_check(s, sr_code_name(SR_E_NOMEM), NULL, NULL,
                        "a %s sample of %llu ns was lost: out of memory for its histogram",
                        sr_phase_name(phase), (unsigned long long)ns);
}

void sr_result_record_cpu(sr_scenario_result *s, sr_phase phase, uint64_t ns)
{
    if ((unsigned)phase >= SR_PHASE_COUNT)
        return;
    pthread_mutex_lock(&s->mu);
    s->cpu[phase].count++;
    s->cpu[phase].sum_ns += ns;
    pthread_mutex_unlock(&s->mu);
}

static void add_counters(sr_counters *d, const sr_counters *a)
{
    d->rollouts_requested += a->rollouts_requested;
    d->rollouts_verified += a->rollouts_verified;
    d->rollouts_failed += a->rollouts_failed;
    d->turns += a->turns;
    d->attempts += a->attempts;
    d->retries += a->retries;
    d->bytes_sent += a->bytes_sent;
    d->bytes_received += a->bytes_received;
    d->tokens_verified += a->tokens_verified;
    d->rows_verified += a->rows_verified;
    d->collations += a->collations;
    d->syncs += a->syncs;
}

void sr_result_count(sr_scenario_result *s, const sr_counters *delta)
{
    pthread_mutex_lock(&s->mu);
    add_counters(&s->counters, delta);
    pthread_mutex_unlock(&s->mu);
}

int sr_result_fired(sr_scenario_result *s, const char *name)
{
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_fired && !found; i++)
        found = strcmp(s->fired[i].name, name) == 0;
    pthread_mutex_unlock(&s->mu);
    return found;
}

void sr_result_set_verdict(sr_scenario_result *s, sr_verdict v, const char *fmt, ...)
{
    s->verdict = v;
    s->reason[0] = '\0';
    if (!fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
    va_end(ap);
}

void sr_run_result_finish(sr_run_result *run, double wall_ms)
{
    memset(run->counts, 0, sizeof(run->counts));
    memset(&run->counters, 0, sizeof(run->counters));
    memset(run->cpu, 0, sizeof(run->cpu));
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        sr_hist_reset(run->phase[p]);
    for (size_t i = 0; i < run->n_scenarios; i++) {
        const sr_scenario_result *s = run->scenarios[i];
        if ((unsigned)s->verdict < SR_VERDICT_COUNT)
            run->counts[s->verdict]++;
        add_counters(&run->counters, &s->counters);
        /* The run's histograms are dense (sr_run_result_new) and never replaced, and a merge
         * into a dense histogram needs no room (sr_hist.h), so none can fail here. */
        for (int p = 0; p < SR_PHASE_COUNT; p++) {
            (void)sr_hist_merge(run->phase[p], s->phase[p]);
            run->cpu[p].count += s->cpu[p].count;
            run->cpu[p].sum_ns += s->cpu[p].sum_ns;
        }
    }
    run->wall_ms = wall_ms;
}
