#include "e2e_pass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "report/result.h"
#include "sr_clock.h"
#include "run/verify.h"

/* ---- phases in thread CPU time ---- */

int e2e_rollout_job(sr_client_conn *k, size_t i, void *ctx)
{
    e2e_rollouts *c = ctx;
    return sr_rollout_run(&c->res[i], k, &c->cfgs[i], NULL);
}

static void cpu_add(e2e_cpu_totals *t, const sr_rollout_result *r)
{
    size_t item = sr_dtype_size(r->routes.dtype);
    double row_bytes =
        r->routes.ndim == 3 ? (double)(r->routes.shape[1] * r->routes.shape[2]) * (double)item : 0;
    for (int k = 0; k < r->n_turns; k++) {
        const sr_rollout_turn *tu = &r->turns[k];
        t->turns += 1;
        t->request_ms += tu->request_cpu_ms;
        t->splice_ms += tu->splice_cpu_ms;
        t->record_ms += tu->record_cpu_ms;
        t->route_bytes += (double)tu->route_rows * row_bytes;
        t->response_bytes += (double)tu->bytes_received;
    }
    t->rollouts += 1;
    t->finalize_ms += r->finalize_cpu_ms;
}

int e2e_cpu_pass(e2e_cpu_totals *t, const sr_client *c, const sr_rollout_config *cfgs, size_t n,
                 int limit)
{
    e2e_rollouts x = {cfgs, calloc(n, sizeof(sr_rollout_result))};
    int *rcs = calloc(n, sizeof(int));
    sr_err e = SR_ERR_INIT;
    int rc = x.res && rcs ? sr_client_parallel(c, n, limit, e2e_rollout_job, &x, rcs, &e) : -1;
    for (size_t i = 0; x.res && i < n; i++) {
        if (!rc && (rcs[i] || !x.res[i].turns[0].cpu_sampled))
            rc = -1;
        if (!rc)
            cpu_add(t, &x.res[i]);
        sr_rollout_result_release(&x.res[i]);
    }
    free(x.res);
    free(rcs);
    return rc;
}

/* ---- the client's throughput, rollouts verified ---- */

typedef struct rps_ctx {
    const sr_rollout_config *cfgs;
    sr_rollout_result *res;
    sr_verifier *v;
    sr_verify_ctx vc;
} rps_ctx;

/* A rollout, then its verification: a check that fires fails the job. */
static int rps_job(sr_client_conn *k, size_t i, void *ctx)
{
    rps_ctx *c = ctx;
    int rc = sr_rollout_run(&c->res[i], k, &c->cfgs[i], NULL);
    int ok = 0;
    if (!rc)
        rc = sr_verify_rollout(&ok, c->v, &c->res[i], (int64_t)i, &c->vc, NULL);
    return rc ? rc : ok ? 0 : -1;
}

int e2e_rps_pass(e2e_rps_totals *t, const sr_client *c, sr_verifier *v,
                 const sr_engine_config *engine, const sr_rollout_config *cfgs, size_t n, int limit,
                 e2e_floor *multi, const cJSON *sp)
{
    sr_run_result *run = NULL;
    sr_scenario_result *scn = NULL;
    rps_ctx x = {cfgs, calloc(n, sizeof(sr_rollout_result)), v, {0}};
    int *rcs = calloc(n, sizeof(int));
    sr_err e = SR_ERR_INIT;
    int rc = x.res && rcs ? 0 : -1;
    if (!rc)
        rc = sr_run_result_new(&run, &e);
    if (!rc)
        rc = sr_run_result_add_scenario(&scn, run, &e);
    x.vc = (sr_verify_ctx){.scenario = "bench-e2e",
                           .step = 0,
                           .step_name = "rollouts",
                           .multi_turn = cfgs[0].multi_turn,
                           .experts = engine->experts,
                           .res = scn};
    double w0 = bench_now_ms();
    if (!rc)
        rc = sr_client_parallel(c, n, limit, rps_job, &x, rcs, &e);
    double wall = bench_now_ms() - w0;
    for (size_t i = 0; !rc && i < n; i++)
        if (rcs[i])
            rc = -1;
    if (!rc) {
        t->wall_ms += wall;
        for (size_t i = 0; i < n; i++)
            t->requests += x.res[i].n_turns;
        rc = e2e_floor_batch(multi, &t->floor, x.res, cfgs, n, sp);
    }
    for (size_t i = 0; x.res && i < n; i++)
        sr_rollout_result_release(&x.res[i]);
    sr_run_result_free(run);
    free(x.res);
    free(rcs);
    return rc;
}

/* ---- the lines ---- */

typedef struct copy_job {
    char *dst;
    const char *src;
    size_t n;
} copy_job;

/* 1000 copies per call: one copy is a few microseconds. */
static void copy_1000(void *p)
{
    copy_job *c = p;
    for (int i = 0; i < 1000; i++) {
        memcpy(c->dst, c->src, c->n);
        bench_sink(c->dst, c->n);
    }
}

/* The median time of one memcpy of `bytes` bytes, in us. */
static double memcpy_us(size_t bytes, int reps)
{
    char *src = malloc(bytes + 1), *dst = malloc(bytes + 1);
    memset(src, 'A', bytes + 1);
    memset(dst, 0, bytes + 1);
    copy_job cj = {dst, src, bytes};
    double us = bench_measure(copy_1000, &cj, reps).median_ms;
    free(src);
    free(dst);
    return us;
}

/* Reads one byte of every 64-byte line of p[0, n): what was in cache before is evicted. */
static unsigned read_lines(const char *p, size_t n)
{
    unsigned acc = 0;
    for (size_t i = 0; i < n; i += 64)
        acc += (unsigned char)p[i];
    return acc;
}

/* The mean thread CPU time of one memcpy of `bytes` bytes whose source and destination are out
 * of cache, in us: 64 buffer pairs in turn (a rollout's memory is touched again only after the
 * other 63 in flight have run), 8 MiB read between two copies. The budgets use the warm copy
 * (memcpy_us); this is the same copy under the conditions a rollout's splice and record meet.
 * NAN when its buffers cannot be allocated. */
static double memcpy_cold_us(size_t bytes)
{
    enum { PAIRS = 64, COPIES = 192 };
    const size_t evict = (size_t)8 << 20, stride = bytes + 64;
    char *mem = malloc(2 * PAIRS * stride + evict);
    if (!mem)
        return NAN; /* printed as nan: not measured */
    memset(mem, 'A', 2 * PAIRS * stride + evict);
    const char *ev = mem + 2 * PAIRS * stride;
    int64_t pair = sr_clock_cpu_pair_ns(16), total = 0;
    unsigned acc = 0;
    for (int i = 0; i < COPIES; i++) {
        char *src = mem + (size_t)(i % PAIRS) * 2 * stride, *dst = src + stride;
        acc += read_lines(ev, evict);
        int64_t t0 = sr_clock_cpu_ns();
        memcpy(dst, src, bytes);
        int64_t d = sr_clock_cpu_ns() - t0 - pair;
        total += d > 0 ? d : 0;
        bench_sink(dst, bytes);
    }
    bench_sink(&acc, sizeof acc);
    free(mem);
    return (double)total / COPIES / 1e3;
}

/* One CPU line: `mean_us` per event against `budget_us`. */
static void cpu_line(const char *name, double mean_us, double budget_us, const char *vs,
                     double memcpy_of_us, double cold_us, double events)
{
    bench_stats v = {mean_us / 1e3, mean_us / 1e3, mean_us / 1e3};
    bench_stats b = {budget_us / 1e3, budget_us / 1e3, budget_us / 1e3};
    bench_report_ex(name, v, b, vs,
                    "cpu_us=%.2f budget_us=%.2f memcpy_us=%.3f memcpy_cold_us=%.3f count=%.0f",
                    mean_us, budget_us, memcpy_of_us, cold_us, events);
}

int e2e_cpu_lines(const e2e_batches *b, const char *const *urls, int ne, const sr_fields *fields,
                  const sr_client_opts *opts, double floor_us, int reps)
{
    sr_client *c;
    if (sr_client_new(&c, urls, (size_t)ne, fields, opts, NULL))
        return -1;
    e2e_cpu_totals t;
    memset(&t, 0, sizeof t);
    int rc = 0;
    for (int k = 0; !rc && k < 3; k++) {
        b->make(b->ctx, b->cfgs, 1000 + k);
        rc = e2e_cpu_pass(&t, c, b->cfgs, b->n, b->limit);
    }
    sr_client_free(c);
    if (rc || t.turns < 1 || t.rollouts < 1)
        return -1;
    double resp = memcpy_us((size_t)(t.response_bytes / t.turns), reps);
    double routes = memcpy_us((size_t)(t.route_bytes / t.turns), reps);
    double per_rollout = memcpy_us((size_t)(t.route_bytes / t.rollouts), reps);
    double resp_cold = memcpy_cold_us((size_t)(t.response_bytes / t.turns));
    double routes_cold = memcpy_cold_us((size_t)(t.route_bytes / t.turns));
    double per_rollout_cold = memcpy_cold_us((size_t)(t.route_bytes / t.rollouts));
    cpu_line("e2e.cpu.splice", t.splice_ms * 1e3 / t.turns, 3 * resp + 3, "3xmemcpy(response)+3us",
             resp, resp_cold, t.turns);
    cpu_line("e2e.cpu.record", t.record_ms * 1e3 / t.turns, 3 * routes + 2, "3xmemcpy(routes)+2us",
             routes, routes_cold, t.turns);
    cpu_line("e2e.cpu.request", t.request_ms * 1e3 / t.turns, floor_us, "curl_floor_per_request",
             resp, resp_cold, t.turns);
    cpu_line("e2e.cpu.finalize", t.finalize_ms * 1e3 / t.rollouts, 3 * per_rollout + 2,
             "3xmemcpy(rollout_routes)+2us", per_rollout, per_rollout_cold, t.rollouts);
    return 0;
}

int e2e_rps_line(const e2e_batches *b, const sr_client *c, const sr_engine_config *engine,
                 e2e_floor *multi, const cJSON *sp, int reps)
{
    double *ms = calloc((size_t)reps, sizeof(double)), *fms = calloc((size_t)reps, sizeof(double));
    e2e_rps_totals all;
    memset(&all, 0, sizeof all);
    sr_verifier *v = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = ms && fms && !sr_verifier_new(&v, engine, &e) ? 0 : -1;
    for (int k = 0; !rc && k <= reps; k++) {
        e2e_rps_totals t;
        memset(&t, 0, sizeof t);
        b->make(b->ctx, b->cfgs, 2000 + k);
        rc = e2e_rps_pass(&t, c, v, engine, b->cfgs, b->n, b->limit, multi, sp);
        if (rc || k == 0)
            continue; /* the first batch warms up */
        ms[k - 1] = t.wall_ms / t.requests;
        fms[k - 1] = t.floor.wall_ms / t.floor.requests;
        all.requests += t.requests;
        all.wall_ms += t.wall_ms;
        all.floor.requests += t.floor.requests;
        all.floor.wall_ms += t.floor.wall_ms;
    }
    if (!rc) {
        double rps = all.requests / (all.wall_ms / 1e3);
        double floor_rps = all.floor.requests / (all.floor.wall_ms / 1e3);
        bench_report_ex("e2e.client_rps", bench_stats_of(ms, reps), bench_stats_of(fms, reps),
                        "curl_multi_floor",
                        "rps=%.0f floor_rps=%.0f vs_floor=%.3f in_flight=%d requests=%.0f", rps,
                        floor_rps, rps / floor_rps, b->limit, all.requests);
    }
    sr_verifier_free(v);
    free(ms);
    free(fms);
    return rc;
}
