/* The runner's side of a sync: recording a result into a scenario result, and the
 * sync_weights step in one call (sync.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/scenario.h"
#include "sync_priv.h"

void sr_sync_report(sr_scenario_result *sc, const sr_sync_result *res, int64_t step)
{
    for (size_t i = 0; i < res->n_checks; i++) {
        sr_check_where w = res->checks[i].where;
        w.step = step;
        sr_result_check(sc, res->checks[i].name, NULL, &w, "%s", res->checks[i].message);
    }
    if (res->checks_dropped) {
        sr_check_where w = SR_CHECK_WHERE_NONE;
        w.step = step;
        /* Dropped checks repeat names already recorded; say how many so nothing is silent. */
        sr_result_check(sc, res->checks[SR_SYNC_MAX_CHECKS - 1].name, NULL, &w,
                        "%llu more sync findings were not kept",
                        (unsigned long long)res->checks_dropped);
    }
    if (res->phase_ran[SR_SYNC_PUBLISH])
        sr_result_record(sc, SR_PHASE_PUBLISH,
                         res->phase_ns[SR_SYNC_GATHER] + res->phase_ns[SR_SYNC_PUBLISH]);
    for (size_t i = 0; i < res->n_engines; i++)
        if (res->engines[i].apply_ns)
            sr_result_record(sc, SR_PHASE_APPLY, res->engines[i].apply_ns);
    sr_result_record(sc, SR_PHASE_SYNC_TOTAL, res->total_ns);
    sr_counters c;
    memset(&c, 0, sizeof(c));
    c.syncs = 1;
    sr_result_count(sc, &c);
}

int sr_sync_step_dir(char *out, size_t cap, const char *run_dir, sr_err *err)
{
    int n = snprintf(out, cap, "%s/sync", run_dir ? run_dir : ".");
    return n < 0 || (size_t)n >= cap ? sr_err_set(err, SR_E_INVAL, "sync: run folder path too long")
                                     : 0;
}

static int make_state(sr_sync **out, const sr_scenario *scn, const sr_scn_step *st,
                      const char *const *urls, size_t n_urls, const char *run_dir,
                      const sr_sync_opts *hook, sr_err *err)
{
    const sr_engine_config *c = &scn->engine;
    sr_weights_spec spec = sr_engine_config_weights(c);
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    int rc = sr_sync_transport_parse(&o.transport, scn->transport, err);
    char dir[4096];
    if (!rc)
        rc = sr_sync_step_dir(dir, sizeof(dir), run_dir, err);
    o.model = c->model_name;
    o.sync_dir = dir;
    o.deadline_ms = st->sync.deadline_ms;
    o.total_deadline_ms = st->sync.deadline_ms;
    o.workers_cap = (int)scn->workers_cap;
    o.workers_reserved = (int)scn->workers_reserved;
    o.cores = scn->pool_cores >= 0 ? (int)scn->pool_cores : SR_POOL_DETECT_CORES;
    o.initial_version = c->weight_version;
    o.control = c->sync_dialect;
    o.serial_update = scn->serial_update;
    o.on_applied = hook->on_applied;
    o.on_applied_ctx = hook->on_applied_ctx;
    o.api = scn->trainer_api >= 0 ? (sr_sync_api)scn->trainer_api : c->sync_version;
    return rc ? rc : sr_sync_new(out, urls, n_urls, &spec, &o, err);
}

int sr_sync_step(sr_sync **state, sr_scenario_result *sc, const struct sr_scenario *scn, int step,
                 const char *const *urls, size_t n_urls, const char *run_dir,
                 void (*on_applied)(void *ctx, int64_t version), void *ctx, sr_err *err)
{
    sr_sync_opts hook = SR_SYNC_OPTS_INIT;
    hook.on_applied = on_applied;
    hook.on_applied_ctx = ctx;
    if (!state || !sc || !scn || step < 0 || step >= scn->n_steps ||
        scn->steps[step].kind != SR_STEP_SYNC_WEIGHTS)
        return sr_err_set(err, SR_E_INVAL, "sync: step %d is not a sync_weights step", step);
    const sr_scn_step *st = &scn->steps[step];
    int rc = *state ? 0 : make_state(state, scn, st, urls, n_urls, run_dir, &hook, err);
    if (rc)
        return rc;
    sr_sync *s = *state;
    s->o.deadline_ms = st->sync.deadline_ms;
    s->o.total_deadline_ms = st->sync.deadline_ms;
    int64_t target = st->sync.version >= 0 ? st->sync.version : s->last_target + 1;
    sr_sync_result *res = malloc(sizeof(*res));
    if (!res)
        return sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate a result");
    rc = sr_sync_run(res, s, target, target, err);
    if (!rc)
        sr_sync_report(sc, res, step);
    free(res);
    return rc;
}
