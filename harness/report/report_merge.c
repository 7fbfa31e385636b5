/* Merging the shard runs of one run into one (sr_report_merge, report.h). */
#include "report_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *or_null(const char *s)
{
    return s ? s : "null";
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The first space-separated word where selection lines x and y differ: *x and *y move to it and
 * *nx, *ny receive its lengths (the lines are long; the message names only what differs). Where
 * one line ends first, its word is empty and the other's is the extra one. */
static void first_difference(const char **x, int *nx, const char **y, int *ny)
{
    const char *a = *x, *b = *y;
    size_t la = strcspn(a, " "), lb = strcspn(b, " ");
    while (la == lb && memcmp(a, b, la) == 0 && a[la] && b[lb]) {
        a += la + 1;
        b += lb + 1;
        la = strcspn(a, " ");
        lb = strcspn(b, " ");
    }
    if (la == lb && memcmp(a, b, la) == 0) { /* equal words, and one line ends after them */
        a += la + (a[la] ? 1 : 0);
        b += lb + (b[lb] ? 1 : 0);
        la = strcspn(a, " ");
        lb = strcspn(b, " ");
    }
    *x = a, *nx = (int)(la > 200 ? 200 : la);
    *y = b, *ny = (int)(lb > 200 ? 200 : lb);
}

/* report.run_mismatch unless shard i belongs to the run of shard 0. */
static int check_same_run(const sr_run_result *const *v, const char *const *names, size_t i,
                          sr_err *err)
{
    const sr_run_header *a = &v[0]->header, *b = &v[i]->header;
    const char *what = NULL, *x = NULL, *y = NULL;
    if (!b->shard_n)
        return sr_err_set(err, SR_E_REPORT_RUN_MISMATCH,
                          "%s is not a shard (options.shard is null): nothing to merge it with",
                          names[i]);
    /* The selection before the run group: a derived group differs because the selection does,
     * and the selection's message names the option. */
    if (!same_str(a->git_rev, b->git_rev))
        what = "git_rev", x = a->git_rev, y = b->git_rev;
    else if (!same_str(a->selection, b->selection))
        what = "selection (options)", x = a->selection, y = b->selection;
    else if (!same_str(a->run_group, b->run_group))
        what = "run_group", x = a->run_group, y = b->run_group;
    int nx = 120, ny = 120;
    if (x && y && what && strcmp(what, "selection (options)") == 0)
        first_difference(&x, &nx, &y, &ny);
    if (what)
        return sr_err_set(err, SR_E_REPORT_RUN_MISMATCH,
                          "%s is not a shard of the run of %s: %s '%.*s' vs '%.*s'", names[i],
                          names[0], what, ny, or_null(y), nx, or_null(x));
    if (a->shard_n != b->shard_n)
        return sr_err_set(err, SR_E_REPORT_RUN_MISMATCH,
                          "%s is shard %d/%d but %s is shard %d/%d: different shard counts",
                          names[i], b->shard_k, b->shard_n, names[0], a->shard_k, a->shard_n);
    return 0;
}

/* One scenario execution of one shard, for finding one that ran twice. */
typedef struct entry {
    const sr_scenario_result *s;
    size_t shard;
} entry;

static int by_identity(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    int c = strcmp(a->s->id ? a->s->id : "", b->s->id ? b->s->id : "");
    if (c)
        return c;
    if (a->s->repeat != b->s->repeat)
        return a->s->repeat < b->s->repeat ? -1 : 1;
    return a->shard < b->shard ? -1 : a->shard > b->shard;
}

/* The order of the merged run: round by round, then by file and id, as one run lists them. */
static int by_position(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    if (a->s->repeat != b->s->repeat)
        return a->s->repeat < b->s->repeat ? -1 : 1;
    int c = strcmp(a->s->file ? a->s->file : "", b->s->file ? b->s->file : "");
    if (!c)
        c = strcmp(a->s->id ? a->s->id : "", b->s->id ? b->s->id : "");
    return c ? c : (a->shard < b->shard ? -1 : a->shard > b->shard);
}

/* Every execution of every shard, sorted by identity; report.scenario_twice on a repeat. */
static int collect(entry **out, size_t *n_out, const sr_run_result *const *v,
                   const char *const *names, size_t n, sr_err *err)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i]->n_scenarios;
    entry *e = calloc(total + 1, sizeof(entry));
    if (!e)
        return sr_err_set(err, SR_E_NOMEM, "cannot merge %zu scenario results", total);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < v[i]->n_scenarios; j++)
            e[k++] = (entry){v[i]->scenarios[j], i};
    qsort(e, total, sizeof(entry), by_identity);
    for (size_t i = 1; i < total; i++)
        if (same_str(e[i].s->id, e[i - 1].s->id) && e[i].s->repeat == e[i - 1].s->repeat) {
            const sr_run_header *a = &v[e[i - 1].shard]->header, *b = &v[e[i].shard]->header;
            int rc = sr_err_set(err, SR_E_REPORT_SCENARIO_TWICE,
                                "scenario '%.120s' (repeat %d) ran twice: in %s (shard %d/%d) "
                                "and in %s (shard %d/%d)",
                                or_null(e[i].s->id), e[i].s->repeat, names[e[i - 1].shard],
                                a->shard_k, a->shard_n, names[e[i].shard], b->shard_k, b->shard_n);
            free(e);
            return rc;
        }
    qsort(e, total, sizeof(entry), by_position);
    *out = e;
    *n_out = total;
    return 0;
}

/* The merged header: shard 0's, with the start of the earliest shard and no shard of its own. */
static int merge_header(sr_run_result *m, const sr_run_result *const *v, size_t n)
{
    sr_run_header *h = &m->header;
    const sr_run_header *a = &v[0]->header;
    int bad = sr_result_set_str(&h->version, a->version, NULL) ||
              sr_result_set_str(&h->git_rev, a->git_rev, NULL) ||
              sr_result_set_str(&h->run_group, a->run_group, NULL) ||
              sr_result_set_str(&h->selection, a->selection, NULL) ||
              sr_result_set_str(&h->hostname, a->hostname, NULL) ||
              sr_result_set_str(&h->kernel, a->kernel, NULL) ||
              sr_result_set_str(&h->arch, a->arch, NULL) ||
              sr_result_set_str(&h->command, a->command, NULL);
    h->cpus = a->cpus;
    h->has_seed = a->has_seed;
    h->seed = a->seed;
    h->jobs = a->jobs;
    h->repeat = a->repeat;
    h->until_fail = a->until_fail;
    h->keep = a->keep;
    h->merged_of = a->shard_n;
    bad = bad || !(h->tags = calloc(a->n_tags + 1, sizeof(char *))) ||
          !(h->exclude_tags = calloc(a->n_exclude_tags + 1, sizeof(char *))) ||
          !(h->merged_from = calloc(n + 1, sizeof(char *))) ||
          !(h->shards = calloc(n + 1, sizeof(sr_merged_shard)));
    for (size_t i = 0; !bad && i < a->n_tags; i++)
        bad = sr_result_set_str(&h->tags[h->n_tags++], a->tags[i], NULL);
    for (size_t i = 0; !bad && i < a->n_exclude_tags; i++)
        bad = sr_result_set_str(&h->exclude_tags[h->n_exclude_tags++], a->exclude_tags[i], NULL);
    size_t first = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i]->header.start_unix_ms < v[first]->header.start_unix_ms)
            first = i;
    h->start_unix_ms = v[first]->header.start_unix_ms;
    memcpy(h->start_iso, v[first]->header.start_iso, sizeof(h->start_iso));
    /* merged_from and shards in shard order */
    for (int k = 1; !bad && k <= a->shard_n; k++)
        for (size_t i = 0; !bad && i < n; i++) {
            const sr_run_header *s = &v[i]->header;
            if (s->shard_k != k)
                continue;
            sr_merged_shard *d = &h->shards[h->n_shards++];
            d->k = k;
            bad = sr_result_set_str(&h->merged_from[h->n_merged_from++],
                                    s->run_id ? s->run_id : "?", NULL) ||
                  sr_result_set_str(&d->run_id, s->run_id, NULL) ||
                  sr_result_set_str(&d->hostname, s->hostname, NULL) ||
                  sr_result_set_str(&d->command, s->command, NULL);
        }
    return bad ? -1 : 0;
}

/* Wall time: from the earliest start to the latest end. */
static double merged_wall(const sr_run_result *const *v, size_t n, int64_t start)
{
    double end = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)(v[i]->header.start_unix_ms - start) + v[i]->wall_ms;
        end = e > end ? e : end;
    }
    return end;
}

/* Appends "; " and a printf-style note to the merged run's partial reason. */
static int add_partial(sr_run_result *m, const char *fmt, const char *a, int k, int n)
{
    char buf[2 * SR_ERR_MSG_MAX], part[SR_ERR_MSG_MAX];
    snprintf(part, sizeof(part), fmt, k, n, a);
    snprintf(buf, sizeof(buf), "%.*s%s%s", SR_ERR_MSG_MAX,
             m->partial_reason ? m->partial_reason : "", m->partial_reason ? "; " : "", part);
    m->partial = 1;
    return sr_result_set_str(&m->partial_reason, buf, NULL);
}

/* Names the missing shards in *err and the partial reason; returns their number or -1. */
static int missing_shards(sr_run_result *m, const sr_run_result *const *v, const char *const *names,
                          size_t n, sr_err *err)
{
    int total = v[0]->header.shard_n, missing = 0;
    char list[SR_ERR_MSG_MAX] = "", have[SR_ERR_MSG_MAX] = "";
    for (int k = 1; k <= total; k++) {
        size_t i = 0;
        while (i < n && v[i]->header.shard_k != k)
            i++;
        size_t len = strlen(i < n ? have : list);
        char *dst = i < n ? have : list;
        if (len + 32 < SR_ERR_MSG_MAX && i < n)
            snprintf(dst + len, SR_ERR_MSG_MAX - len, "%s%d/%d (%.64s)", len ? ", " : "", k, total,
                     names[i]);
        else if (len + 32 < SR_ERR_MSG_MAX)
            snprintf(dst + len, SR_ERR_MSG_MAX - len, "%s%d/%d", len ? ", " : "", k, total);
        if (i == n) {
            missing++;
            if (add_partial(m, "shard %d/%d missing%s", "", k, total))
                return -1;
        }
    }
    if (missing)
        sr_err_set(err, SR_E_REPORT_SHARD_MISSING,
                   "%d of %d shards missing: shard %s (merged: %s); the merged run is partial",
                   missing, total, list, have);
    return missing;
}

static int check_inputs(const sr_run_result *const *v, const char *const *names, size_t n,
                        sr_err *err)
{
    if (!v || !names || !n)
        return sr_err_set(err, SR_E_INVAL, "sr_report_merge: no shard to merge");
    for (size_t i = 0; i < n; i++) {
        int rc = check_same_run(v, names, i, err);
        if (rc)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (v[j]->header.shard_k == v[i]->header.shard_k)
                return sr_err_set(err, SR_E_REPORT_SHARD_DUPLICATE,
                                  "%s and %s both hold shard %d/%d", names[j], names[i],
                                  v[i]->header.shard_k, v[i]->header.shard_n);
    }
    return 0;
}

int sr_report_merge(sr_run_result **out, const sr_run_result *const *shards,
                    const char *const *names, size_t n, sr_err *err)
{
    if (!out)
        return sr_err_set(err, SR_E_INVAL, "sr_report_merge: no output");
    *out = NULL;
    entry *e = NULL;
    size_t ne = 0;
    int rc = check_inputs(shards, names, n, err);
    rc = rc ? rc : collect(&e, &ne, shards, names, n, err);
    sr_run_result *m = NULL;
    rc = rc ? rc : sr_run_result_new(&m, err);
    if (!rc && merge_header(m, shards, n))
        rc = sr_err_set(err, SR_E_NOMEM, "cannot build the merged run's header");
    for (size_t i = 0; !rc && i < ne; i++) {
        sr_scenario_result *s;
        rc = sr_run_result_add_copy(&s, m, e[i].s, err);
        if (!rc)
            s->shard = shards[e[i].shard]->header.shard_k;
    }
    for (size_t i = 0; !rc && i < n; i++)
        if (shards[i]->partial &&
            add_partial(m, "shard %d/%d: %s", or_null(shards[i]->partial_reason),
                        shards[i]->header.shard_k, shards[i]->header.shard_n))
            rc = sr_err_set(err, SR_E_NOMEM, "cannot note a partial shard");
    free(e);
    int missing = rc ? 0 : missing_shards(m, shards, names, n, err);
    if (missing < 0)
        rc = sr_err_set(err, SR_E_NOMEM, "cannot note a missing shard");
    if (rc) {
        sr_run_result_free(m);
        return rc;
    }
    sr_run_result_finish(m, merged_wall(shards, n, m->header.start_unix_ms));
    *out = m;
    return missing ? SR_E_REPORT_SHARD_MISSING : 0;
}
