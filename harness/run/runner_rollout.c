/* The rollout step: prompts, rollouts on the client's threads, per-rollout verification
 * (runner_rollout.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence.h"
#include "runner_rollout.h"
#include "sr_mix.h"

#define GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t draw(uint64_t s, uint64_t k)
{
    return sr_mix64(s + GOLDEN * (k + 1));
}

static uint64_t below(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

/* The seed of sample i of step `step`: prompts and environments are pure functions of it. */
static uint64_t sample_seed(uint64_t seed, int step, int64_t i)
{
    return draw(draw(seed ^ 0x726F6C6C6F757431ull, (uint64_t)step), (uint64_t)i);
}

typedef struct rbatch {
    sr_scn_run *run;
    int step;
    sr_rollout_config *cfgs;
    int32_t **prompts;
    char (*sessions)[SR_CLIENT_SESSION_MAX];
    cJSON *sampling;
} rbatch;

/* The version the trainer declares current (runner_state.h, weight_version). */
static int64_t trainer_version(void *ctx)
{
    sr_scn_run *run = ctx;
    pthread_mutex_lock(&run->mu);
    int64_t v = run->weight_version;
    pthread_mutex_unlock(&run->mu);
    return v;
}

static int make_configs(rbatch *b, sr_err *err)
{
    const sr_scenario *s = b->run->scn;
    const sr_scn_rollout *r = &s->steps[b->step].rollout;
    for (int64_t i = 0; i < r->batch; i++) {
        uint64_t ss = sample_seed(s->seed, b->step, i);
        /* Soak iterations after the first draw new prompts and environments (runner.h, soak). */
        if (b->run->iteration > 0)
            ss = draw(ss, 0x100 + (uint64_t)b->run->iteration);
        int64_t P = r->prompt_min +
                    (int64_t)below(draw(ss, 0), (uint64_t)(r->prompt_max - r->prompt_min + 1));
        if (!(b->prompts[i] = malloc((size_t)P * sizeof(int32_t))))
            return sr_err_set(err, SR_E_NOMEM, "cannot allocate a prompt");
        for (int64_t j = 0; j < P; j++)
            b->prompts[i][j] = (int32_t)below(draw(ss, (uint64_t)j + 2), (uint64_t)s->engine.vocab);
        snprintf(b->sessions[i], SR_CLIENT_SESSION_MAX, "%s/%s/%lld", s->id, s->steps[b->step].name,
                 (long long)i);
        if (b->run->iteration > 0)
            sr_soak_session(b->sessions[i], SR_CLIENT_SESSION_MAX, b->run, b->step, i);
        sr_rollout_config c = SR_ROLLOUT_CONFIG_INIT;
        c.prompt = b->prompts[i];
        c.prompt_len = (size_t)P;
        c.session_id = b->sessions[i];
        c.sampling_params = b->sampling;
        c.model = s->engine.model_name;
        c.routes = r->routes;
        c.sample_support = r->sample_support;
        c.multi_turn = r->multi_turn;
        c.append_eos_after_stop = r->append_eos_after_stop;
        c.eos_id = s->engine.eos_id;
        c.max_input_length = r->max_input_length;
        c.finish_session = r->finish_session;
        c.env.seed = draw(ss, 1);
        c.env.max_turns = (int)r->turns;
        c.env.obs_min = (int)r->obs_min;
        c.env.obs_max = (int)r->obs_max;
        c.env.vocab = s->engine.vocab;
        c.trace_opts.max_rows = r->max_rollout_tokens;
        c.trace_opts.max_bytes = (size_t)r->max_trace_bytes;
        c.trace_opts.lock_first_dtype = s->quirks[SR_QUIRK_LOCK_FIRST_DTYPE];
        /* The client admits sglang#36404's -1 rows only where they are documented. */
        c.trace_opts.masked_rows = s->engine.mask_chunk > 0;
        c.mask_chunk = s->engine.mask_chunk;
        c.mask_rows = s->engine.mask_rows;
        c.trace_opts.padding_as_captured = s->quirks[SR_QUIRK_PADDING_AS_CAPTURED];
        c.trace_opts.captured_only = s->client.stack == SR_STACK_2086;
        c.quirks.synthetic_eos_loss_active = s->quirks[SR_QUIRK_SYNTHETIC_EOS_LOSS_ACTIVE];
        c.quirks.overwrite_trace_each_turn = s->quirks[SR_QUIRK_OVERWRITE_TRACE_EACH_TURN];
        c.quirks.stamp_version_at_response = s->quirks[SR_QUIRK_STAMP_VERSION_AT_RESPONSE];
        c.trainer_version = trainer_version;
        c.version_ctx = b->run;
        /* A failing rollout's exchanges become its evidence (evidence.h). */
        c.capture_bytes = SR_EVIDENCE_EXCHANGE_BYTES;
        b->cfgs[i] = c;
    }
    return 0;
}

static cJSON *sampling_params(const sr_scenario *s, const sr_scn_rollout *r)
{
    cJSON *sp = cJSON_CreateObject();
    if (!sp)
        return NULL;
    cJSON_AddNumberToObject(sp, "max_tokens", (double)r->max_tokens);
    /* A capture request carries the support width as top_k (engines.sample_support_k); the quirk
     * omit_top_k leaves it to the engine's default, as the generator reviewed on SkyRL #2084
     * does (skyrl_gym_generator.py sends the caller's sampling_params, not the resolved ones). */
    if (r->sample_support && !s->quirks[SR_QUIRK_OMIT_TOP_K])
        cJSON_AddNumberToObject(sp, "top_k", (double)s->engine.support_k);
    if (r->logprobs)
        cJSON_AddNumberToObject(sp, "logprobs", 0);
    if (r->ignore_eos)
        cJSON_AddBoolToObject(sp, "ignore_eos", 1);
    if (r->n_stop_ids) {
        cJSON *a = cJSON_AddArrayToObject(sp, "stop_token_ids");
        for (int i = 0; a && i < r->n_stop_ids; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber(r->stop_ids[i]));
    }
    return sp;
}

static uint64_t ns(double ms)
{
    return ms > 0 ? (uint64_t)(ms * 1e6) : 0;
}

/* Phases and counters of one finished rollout. */
static void account(sr_scenario_result *res, const sr_rollout_result *r, int routes)
{
    sr_counters c;
    memset(&c, 0, sizeof(c));
    for (int t = 0; t < r->n_turns; t++) {
        const sr_rollout_turn *tu = &r->turns[t];
        sr_result_record(res, SR_PHASE_REQUEST, ns(tu->request_ms));
        sr_result_record(res, SR_PHASE_SPLICE, ns(tu->splice_ms));
        if (routes && tu->record_ms > 0)
            sr_result_record(res, SR_PHASE_RECORD, ns(tu->record_ms));
        if (tu->cpu_sampled) {
            sr_result_record_cpu(res, SR_PHASE_REQUEST, ns(tu->request_cpu_ms));
            sr_result_record_cpu(res, SR_PHASE_SPLICE, ns(tu->splice_cpu_ms));
            if (routes && tu->record_ms > 0)
                sr_result_record_cpu(res, SR_PHASE_RECORD, ns(tu->record_cpu_ms));
        }
        c.turns++;
        c.attempts += tu->n_attempts;
        c.retries += tu->n_attempts > 1 ? tu->n_attempts - 1 : 0;
        c.bytes_sent += tu->bytes_sent * (uint64_t)tu->n_attempts;
        c.bytes_received += tu->bytes_total;
    }
    if (routes && r->code == 0 && r->routes.ndim == 3)
        sr_result_record(res, SR_PHASE_FINALIZE, ns(r->finalize_ms));
    if (routes && r->code == 0 && r->routes.ndim == 3 && r->finalize_cpu_sampled)
        sr_result_record_cpu(res, SR_PHASE_FINALIZE, ns(r->finalize_cpu_ms));
    sr_result_count(res, &c);
}

static int rollout_job(sr_client_conn *k, size_t i, void *ctx)
{
    rbatch *b = ctx;
    sr_scn_run *run = b->run;
    const sr_scn_step *st = &run->scn->steps[b->step];
    sr_rollout_result *r = &run->steps[b->step].rollouts[i];
    if (sr_run_stopped(run)) {
        /* Not sent: the run is stopping. It counts as failed, so every rollout is accounted
         * for; the scenario's verdict is `interrupted` anyway (runner.c). */
        sr_counters c;
        memset(&c, 0, sizeof(c));
        c.rollouts_failed = 1;
        sr_result_count(run->res, &c);
        return 0;
    }
    sr_rollout_run(r, k, &b->cfgs[i], NULL);
    account(run->res, r, st->rollout.routes);
    sr_verify_ctx vc = {run->scn->id,
                        b->step,
                        st->name,
                        st->rollout.multi_turn,
                        run->scn->engine.experts,
                        run->res,
                        run->scn->engine.faults};
    int ok = 0;
    sr_err err = SR_ERR_INIT;
    sr_verify_fired fired;
    int rc = sr_verify_rollout_fired(&ok, run->verifier, r, (int64_t)i, &vc, &fired, &err);
    sr_err e2 = SR_ERR_INIT;
    if (!rc && !ok &&
        sr_evidence_rollout(run, b->step, (int64_t)i, b->sessions[i], r, &fired, &e2) != 0)
        fprintf(stderr, "syncroll run: %s: the evidence of rollout %zu: %s\n", run->scn->id, i,
                e2.msg);
    /* Judged: its bytes are no longer needed (a passing rollout's are freed at once). */
    sr_rollout_drop_exchanges(r);
    sr_counters c;
    memset(&c, 0, sizeof(c));
    if (ok)
        c.rollouts_verified = 1;
    else
        c.rollouts_failed = 1;
    sr_result_count(run->res, &c);
    if (rc)
        fprintf(stderr, "syncroll run: %s: verifying rollout %zu: %s\n", run->scn->id, i, err.msg);
    return rc;
}

static void batch_free(rbatch *b, int64_t n)
{
    for (int64_t i = 0; b->prompts && i < n; i++)
        free(b->prompts[i]);
    free(b->prompts);
    free(b->cfgs);
    free(b->sessions);
    cJSON_Delete(b->sampling);
}

int sr_step_rollout(sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_rollout *r = &run->scn->steps[step].rollout;
    sr_step_state *ss = &run->steps[step];
    int64_t n = r->batch;
    rbatch b = {run,
                step,
                calloc((size_t)n, sizeof(sr_rollout_config)),
                calloc((size_t)n, sizeof(int32_t *)),
                calloc((size_t)n, SR_CLIENT_SESSION_MAX),
                sampling_params(run->scn, r)};
    ss->rollouts = calloc((size_t)n, sizeof(sr_rollout_result));
    int *rcs = calloc((size_t)n, sizeof(int));
    int rc = b.cfgs && b.prompts && b.sessions && b.sampling && ss->rollouts && rcs
                 ? 0
                 : sr_err_set(err, SR_E_NOMEM, "cannot allocate a rollout batch");
    if (!rc)
        rc = make_configs(&b, err);
    if (!rc) {
        ss->n_rollouts = n;
        sr_counters c;
        memset(&c, 0, sizeof(c));
        c.rollouts_requested = n;
        sr_result_count(run->res, &c);
        rc = sr_client_parallel(run->client, (size_t)n, (int)run->scn->concurrency, rollout_job, &b,
                                rcs, err);
    }
    for (int64_t i = 0; !rc && i < n; i++)
        if (rcs[i])
            rc = sr_err_set(err, rcs[i], "verifying rollout %lld of step %s failed", (long long)i,
                            run->scn->steps[step].name);
    free(rcs);
    batch_free(&b, n);
    return rc;
}
