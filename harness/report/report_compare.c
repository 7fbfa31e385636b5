/* p99 regressions of a run against a baseline run (sr_report_compare, report.h). */
#include "report_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cmp {
    sr_regression *v;
    size_t n, cap;
    double threshold;
    uint64_t floor_ns; /* increases up to this are ignored */
    size_t floored;    /* regressions by percentage that the floor ignored */
} cmp;

static int consider(cmp *c, const char *scope, int phase, const sr_hist *cur, const sr_hist *base,
                    sr_err *err)
{
    if (!sr_hist_count(cur) || !sr_hist_count(base))
        return 0;
    uint64_t b = sr_hist_percentile(base, 99), x = sr_hist_percentile(cur, 99);
    if (b == 0)
        return 0;
    double pct = ((double)x - (double)b) / (double)b * 100.0;
    if (!(pct > c->threshold))
        return 0;
    if (x - b <= c->floor_ns) {
        c->floored++;
        return 0;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        sr_regression *v = realloc(c->v, cap * sizeof(*v));
        if (!v)
            return sr_err_set(err, SR_E_NOMEM, "cannot list regressions");
        c->v = v;
        c->cap = cap;
    }
    sr_regression *r = &c->v[c->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->scope, sizeof(r->scope), "%s", scope);
    r->phase = (sr_phase)phase;
    r->base_p99 = b;
    r->cur_p99 = x;
    r->pct = pct;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    const sr_scenario_result *x = *(const sr_scenario_result *const *)a;
    const sr_scenario_result *y = *(const sr_scenario_result *const *)b;
    return strcmp(x->id, y->id);
}

/* The run's scenarios that have an id, sorted by id (caller frees). */
static const sr_scenario_result **sorted(const sr_run_result *run, size_t *n)
{
    const sr_scenario_result **v = calloc(run->n_scenarios + 1, sizeof(*v));
    *n = 0;
    for (size_t i = 0; v && i < run->n_scenarios; i++)
        if (run->scenarios[i]->id)
            v[(*n)++] = run->scenarios[i];
    if (v)
        qsort(v, *n, sizeof(*v), cmp_id);
    return v;
}

/*
 * Merges the run of executions v[*i..] that share v[*i]'s id into h[] and advances *i. 0, or
 * SR_E_NOMEM naming the scenario and the run (`which`): a comparison of histograms that miss
 * executions would be wrong, so the caller stops.
 */
static int merge_run(sr_hist *const *h, const sr_scenario_result **v, size_t n, size_t *i,
                     const char *which, sr_err *err)
{
    for (int p = 0; p < SR_PHASE_COUNT; p++)
        sr_hist_reset(h[p]);
    const char *id = v[*i]->id;
    for (; *i < n && strcmp(v[*i]->id, id) == 0; (*i)++)
        for (int p = 0; p < SR_PHASE_COUNT; p++)
            if (sr_hist_merge(h[p], v[*i]->phase[p]))
                return sr_err_set(err, SR_E_NOMEM,
                                  "--baseline: cannot merge the %s latencies of %s in the %s run",
                                  sr_phase_name((sr_phase)p), id, which);
    return 0;
}

/* Walks both runs' scenarios in id order and compares the ids they share. */
static int by_id(cmp *c, const sr_run_result *cur, const sr_run_result *base, sr_err *err)
{
    sr_hist *hc[SR_PHASE_COUNT] = {0}, *hb[SR_PHASE_COUNT] = {0};
    size_t nc, nb, i = 0, j = 0;
    const sr_scenario_result **vc = sorted(cur, &nc), **vb = sorted(base, &nb);
    int rc = vc && vb ? 0 : sr_err_set(err, SR_E_NOMEM, "cannot sort scenarios");
    for (int p = 0; p < SR_PHASE_COUNT && !rc; p++) {
        rc = sr_hist_new(&hc[p], err);
        if (!rc)
            rc = sr_hist_new(&hb[p], err);
    }
    while (!rc && i < nc && j < nb) {
        int d = strcmp(vc[i]->id, vb[j]->id);
        if (d < 0) {
            i++;
        } else if (d > 0) {
            j++;
        } else {
            const char *id = vc[i]->id;
            rc = merge_run(hc, vc, nc, &i, "current", err);
            if (!rc)
                rc = merge_run(hb, vb, nb, &j, "baseline", err);
            for (int p = 0; p < SR_PHASE_COUNT && !rc; p++)
                rc = consider(c, id, p, hc[p], hb[p], err);
        }
    }
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        sr_hist_free(hc[p]);
        sr_hist_free(hb[p]);
    }
    free(vc);
    free(vb);
    return rc;
}

/*
 * Largest increase first; equal increases by percentage, then scope and phase (stable). The
 * `scenario` phase (a scenario's wall time, engines' start included) holds every other phase,
 * so its regressions come after those of the phases that explain them.
 */
static int by_size(const void *pa, const void *pb)
{
    const sr_regression *a = pa, *b = pb;
    int wa = a->phase == SR_PHASE_SCENARIO, wb = b->phase == SR_PHASE_SCENARIO;
    if (wa != wb)
        return wa - wb;
    uint64_t da = a->cur_p99 - a->base_p99, db = b->cur_p99 - b->base_p99;
    if (da != db)
        return da > db ? -1 : 1;
    if (a->pct != b->pct)
        return a->pct > b->pct ? -1 : 1;
    int c = strcmp(a->scope, b->scope);
    return c ? c : (int)a->phase - (int)b->phase;
}

static int compare(cmp *c, const sr_run_result *cur, const sr_run_result *base, sr_err *err)
{
    if (!isfinite(c->threshold) || c->threshold < 0)
        return sr_err_set(err, SR_E_INVAL, "threshold must be a finite percentage >= 0, got %g",
                          c->threshold);
    int rc = 0;
    for (int p = 0; p < SR_PHASE_COUNT && !rc; p++)
        rc = consider(c, "run", p, cur->phase[p], base->phase[p], err);
    if (!rc)
        rc = by_id(c, cur, base, err);
    if (rc) {
        free(c->v);
        c->v = NULL;
        c->n = 0;
    }
    return rc;
}

int sr_report_compare(sr_regression **out, size_t *n, const sr_run_result *cur,
                      const sr_run_result *base, double threshold_pct, sr_err *err)
{
    if (!out || !n || !cur || !base)
        return sr_err_set(err, SR_E_INVAL, "sr_report_compare: bad argument");
    *out = NULL;
    *n = 0;
    cmp c = {NULL, 0, 0, threshold_pct, 0, 0};
    int rc = compare(&c, cur, base, err);
    *out = c.v;
    *n = c.n;
    return rc;
}

int sr_report_compare_sized(sr_regressions *out, const sr_run_result *cur,
                            const sr_run_result *base, double threshold_pct, uint64_t floor_ns,
                            sr_err *err)
{
    if (!out || !cur || !base)
        return sr_err_set(err, SR_E_INVAL, "sr_report_compare_sized: bad argument");
    memset(out, 0, sizeof(*out));
    cmp c = {NULL, 0, 0, threshold_pct, floor_ns, 0};
    int rc = compare(&c, cur, base, err);
    if (rc)
        return rc;
    if (c.n > 1)
        qsort(c.v, c.n, sizeof(sr_regression), by_size);
    out->v = c.v;
    out->n = c.n;
    out->under_floor = c.floored;
    return 0;
}
