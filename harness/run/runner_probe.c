/* The probe step (runner_probe.h). */
#include <string.h>

#include "meta.h"
#include "runner_probe.h"

/* A client for engine `engine` alone, in the scenario's dialect and model shape. */
static int probe_client(sr_client **out, const sr_scn_run *run, int64_t engine, sr_err *err)
{
    const sr_scenario *s = run->scn;
    sr_client_opts o = s->client;
    o.seed = s->seed;
    o.dialect = s->engine.dialect;
    o.route_layers = s->engine.num_layers;
    o.route_topk = s->engine.topk;
    o.pd_prefill = o.pd_decode = -1; /* one engine: no prefill/decode pair */
    const char *urls[1] = {run->urls[engine]};
    return sr_client_new(out, urls, 1, s->fields, &o, err);
}

/* The sync driver over that engine, starting at the version it reports (the relations read it
 * again); NULL in *out with the reason in *why when it reports none. */
static int probe_sync(sr_sync **out, const char **why, const sr_scn_run *run, const sr_client *c,
                      int64_t engine, sr_err *err)
{
    const sr_engine_config *m = &run->scn->engine;
    *out = NULL;
    int64_t v = sr_meta_engine_version(c, m->sync_dialect, m->weight_version);
    if (v < 0) {
        *why = "the engine reports no weight version on its control plane";
        return 0;
    }
    sr_weights_spec spec = sr_engine_config_weights(m);
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.transport = SR_SYNC_BROADCAST;
    o.model = m->model_name;
    o.verify = 0; /* the relations judge the syncs from what any engine shows */
    o.initial_version = v;
    o.control = m->sync_dialect;
    o.workers_cap = 2;
    const char *urls[1] = {run->urls[engine]};
    return sr_sync_new(out, urls, 1, &spec, &o, err);
}

/* The relations against `engine` with `budget` generates, syncing when `sync`. */
static int probe_run(sr_scn_run *run, int64_t engine, int64_t budget, int sync, sr_err *err)
{
    const sr_engine_config *m = &run->scn->engine;
    if (engine >= run->n_engines)
        return sr_err_set(err, SR_E_INVAL, "probe: engine %lld of %d", (long long)engine,
                          run->n_engines);
    sr_client *c = NULL;
    int rc = probe_client(&c, run, engine, err);
    sr_meta_opts o = SR_META_OPTS_INIT;
    o.dialect = m->dialect;
    o.seed = run->scn->seed;
    o.budget = budget;
    o.vocab = m->vocab;
    o.experts = m->experts;
    o.content = m->weight_version;
    o.plane = m->sync_dialect;
    o.no_sync = sync ? NULL : "the probe's sync is false";
    /* The scenario's client speaks its client.stack: the later stack's relation needs it. */
    o.stack_client =
        m->dialect == SR_DIALECT_SKYRL && run->scn->client.stack == SR_STACK_2086 ? c : NULL;
    o.no_stack = m->dialect != SR_DIALECT_SKYRL ? "the dialect is not skyrl: only SkyRL's wire "
                                                  "has sample-support capture"
                                                : "the scenario's client.stack is \"2079\"";
    if (!rc && sync)
        rc = probe_sync(&o.sync, &o.no_sync, run, c, engine, err);
    if (!rc)
        rc = sr_meta_run(run->res, c, &o, NULL, err);
    sr_sync_free(o.sync);
    sr_client_free(c);
    return rc;
}

int sr_step_probe(sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_probe *p = &run->scn->steps[step].probe;
    return probe_run(run, p->engine, p->budget, p->sync, err);
}

int sr_run_probe_external(sr_scn_run *run, sr_err *err)
{
    const sr_scenario *s = run->scn;
    /* vllm#57025's omission refuses the probe's session-less requests (steps.c). */
    if (!s->n_urls || s->engine.omit_prefix || sr_run_stopped(run))
        return 0;
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].kind == SR_STEP_PROBE)
            return 0;
    return probe_run(run, 0, SR_RUN_PROBE_BUDGET, 0, err);
}
