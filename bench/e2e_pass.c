#include "e2e_pass.h"

#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "report/result.h"
#include "run/verify.h"

/* ---- phases in thread CPU time ---- */

typedef struct cpu_ctx {
    const sr_rollout_config *cfgs;
    sr_rollout_result *res;
} cpu_ctx;

static int cpu_job(sr_client_conn *k, size_t i, void *ctx)
{
    cpu_ctx *c = ctx;
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
    cpu_ctx x = {cfgs, calloc(n, sizeof(sr_rollout_result))};
    int *rcs = calloc(n, sizeof(int));
    sr_err e = SR_ERR_INIT;
    int rc = x.res && rcs ? sr_client_parallel(c, n, limit, cpu_job, &x, rcs, &e) : -1;
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

int e2e_rps_pass(e2e_rps_totals *t, const sr_client *c, const sr_engine_config *engine,
                 const sr_rollout_config *cfgs, size_t n, int limit, e2e_floor *multi,
                 const cJSON *sp)
{
    sr_run_result *run = NULL;
    sr_scenario_result *scn = NULL;
    rps_ctx x = {cfgs, calloc(n, sizeof(sr_rollout_result)), NULL, {0}};
    int *rcs = calloc(n, sizeof(int));
    sr_err e = SR_ERR_INIT;
    int rc = x.res && rcs ? 0 : -1;
    if (!rc)
        rc = sr_run_result_new(&run, &e);
    if (!rc)
        rc = sr_run_result_add_scenario(&scn, run, &e);
    if (!rc)
        rc = sr_verifier_new(&x.v, engine, &e);
    x.vc = (sr_verify_ctx){"bench-e2e", 0, "rollouts", cfgs[0].multi_turn, engine->experts, scn};
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
    sr_verifier_free(x.v);
    sr_run_result_free(run);
    free(x.res);
    free(rcs);
    return rc;
}
