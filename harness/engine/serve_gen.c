/* The generate endpoints of the mock engine: parse, hold while paused, run, time, deliver. */
#include <stdio.h>
#include <string.h>

#include "server_priv.h"

sr_jdom *sr_srv_jdom_take(sr_server *s)
{
    sr_jdom *j = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->njdoms > 0)
        j = s->jdoms[--s->njdoms];
    pthread_mutex_unlock(&s->mu);
    if (!j && sr_jdom_new(&j, SR_SERVER_JDOM_ARENA, NULL))
        j = NULL;
    return j;
}

void sr_srv_jdom_give(sr_server *s, sr_jdom *j)
{
    if (!j)
        return;
    if (sr_jdom_arena_bytes(j) <= SR_SERVER_JDOM_KEEP) {
        pthread_mutex_lock(&s->mu);
        int kept = s->njdoms < SR_SERVER_JDOM_POOL;
        if (kept)
            s->jdoms[s->njdoms++] = j;
        pthread_mutex_unlock(&s->mu);
        if (kept)
            return;
    }
    sr_jdom_free(j);
}

/* Tokens sampled by time t of a job whose forward passes started at r->t_start_ns. */
int64_t sr_srv_tokens_at(const req *r, int64_t t)
{
    const sr_engine_config *c = r->srv->cfg;
    double el_ms = (double)(t - r->t_start_ns) / 1e6;
    if (el_ms < c->prefill_ms)
        return 0;
    if (c->decode_ms <= 0)
        return r->job.G;
    int64_t k = 1 + (int64_t)((el_ms - c->prefill_ms) / c->decode_ms);
    return k < r->job.G ? k : r->job.G;
}

/* When the last token of the job is sampled (token 0 ends the prefill). */
static int64_t done_at(const req *r)
{
    const sr_engine_config *c = r->srv->cfg;
    double ms = c->prefill_ms + (r->job.G > 1 ? (double)(r->job.G - 1) * c->decode_ms : 0.0);
    return r->t_start_ns + (int64_t)(ms * 1e6);
}

/* What the request computed, for the session's next cache hit (prefix_omit.h): its prompt and
 * every generated token but the last, which no forward pass read. */
static int record_prefix(req *r, sr_err *err)
{
    sr_server *s = r->srv;
    if (!s->prefix || !r->route || !r->session[0])
        return 0;
    const sr_gen_job *j = &r->job;
    return sr_prefix_record(s->prefix, r->session, j->req.tokens, j->req.P, j->tokens, j->G - 1,
                            err);
}

enum MHD_Result sr_srv_deliver(req *r)
{
    sr_server *s = r->srv;
    sr_gen_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.oracle = sr_engine_oracle(s->e);
    ctx.engine_id = s->cfg->id;
    ctx.routes = s->cfg->routes;
    ctx.support = s->cfg->support;
    ctx.support_k = s->cfg->support_k;
    ctx.stack = s->cfg->stack;
    ctx.mask_chunk = s->cfg->mask_chunk;
    ctx.mask_rows = s->cfg->mask_rows;
    ctx.extra = s->cfg->extra;
    ctx.n_extra = s->cfg->n_extra;
    ctx.seed = s->cfg->seed;
    ctx.request_ordinal = r->ordinal;
    ctx.max_body = s->cfg->max_response_bytes;
    sr_err err = SR_ERR_INIT;
    if (record_prefix(r, &err))
        return sr_srv_error(r, 500, "InternalServerError", err.code, err.msg);
    if (sr_gen_body_dialect(&r->resp, &r->job, &ctx, &err)) {
        /* The reference server's own crash (gen_priv.h): no syncroll check. */
        int crash = r->job.crashed && err.code == SR_E_INTERNAL;
        return sr_srv_error(r, 500, "InternalServerError", crash ? 0 : err.code, err.msg);
    }
    sr_engine_add_clamped(s->e, r->job.clamped);
    return sr_srv_respond(r, 200, "application/json", &r->resp, 0);
}

/* After a run: deliver now, or wait for the simulated end of the forward passes. */
static enum MHD_Result schedule_or_deliver(req *r)
{
    sr_server *s = r->srv;
    int64_t now = sr_srv_now_ns(), done = done_at(r);
    pthread_mutex_lock(&s->mu);
    const char *mode = s->paused ? s->pmode : NULL;
    if (done <= now || (mode && strcmp(mode, "abort") == 0)) {
        pthread_mutex_unlock(&s->mu);
        if (done > now)
            sr_gen_abort(&r->job, sr_srv_tokens_at(r, now));
        return sr_srv_deliver(r);
    }
    if (mode && strcmp(mode, "keep") == 0) {
        r->k_done = sr_srv_tokens_at(r, now);
        r->t_frozen_ns = now;
        r->state = RS_FROZEN;
        if (sr_srv_suspend_locked(r))
            sr_srv_list_add_locked(&s->held, r, RL_HELD);
    } else {
        r->state = RS_RUNNING;
        if (sr_srv_suspend_locked(r)) {
            s->running++;
            sr_srv_heap_push_locked(s, r, done);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return MHD_YES;
}

/* A rule that serves rows of another weight version (weight_version): its fingerprints take the
 * place of the previous weights, which the job's rule reads. Only a request whose model fault
 * has such a rule pays for it. */
static int other_version(const req *r, sr_gen_weights *prev, int *has_prev, sr_err *err)
{
    const sr_fault *mf = r->pick.f[SR_FL_MODEL];
    if (!mf || !mf->rule.active || mf->rule.act != SR_RA_WEIGHT_VERSION)
        return 0;
    sr_weights_spec ws = sr_engine_config_weights(r->srv->cfg);
    int rc = sr_weights_expected(&prev->global_fp, prev->layer_fps, &ws, mf->rule.version, err);
    prev->version = mf->rule.version;
    *has_prev = !rc;
    return rc;
}

static enum MHD_Result run(req *r, int fresh)
{
    sr_server *s = r->srv;
    sr_gen_weights cur = {0}, prev = {0};
    int has_prev = 0;
    sr_err err = SR_ERR_INIT;
    int rc = sr_engine_weights_now(s->e, &cur, &prev, &has_prev, &err);
    if (!rc)
        rc = other_version(r, &prev, &has_prev, &err);
    if (!rc && fresh)
        rc = sr_gen_run(&r->job, sr_engine_oracle(s->e), &cur, has_prev ? &prev : NULL, &err);
    else if (!rc)
        rc = sr_gen_continue(&r->job, sr_engine_oracle(s->e), &cur, r->k_done, &err);
    sr_gen_weights_release(&cur);
    sr_gen_weights_release(&prev);
    if (rc)
        return sr_srv_error(r, 500, "InternalServerError", rc, err.msg);
    sr_engine_generate_answered(s->e);
    if (fresh || r->k_done <= 0)
        r->t_start_ns = sr_srv_now_ns();
    return schedule_or_deliver(r);
}

/*
 * vllm#57025 (engines.omit_prefix_routes): a generate needs X-Session-ID, and its routes start
 * at max(routed_experts_prompt_start, num_cached_tokens). The fault omit_prefix_readmit counts
 * the request's own prompt blocks as cached, as a re-admission after a preemption does when
 * num_cached_tokens is recorded again. Returns 0 or SR_E_ENGINE_SESSION_REQUIRED.
 */
static int omit_prefix(req *r, sr_gen_request *q, sr_err *err)
{
    sr_server *s = r->srv;
    if (!s->prefix || !r->route)
        return 0;
    /* The PR requires a stable session identity; the status and text are not in its
     * description, so the mock's 400 names its own check (scenarios/FORMAT.md §5b). */
    if (!r->session[0])
        return sr_err_set(err, SR_E_ENGINE_SESSION_REQUIRED,
                          "--enable-omit-prefix-routed-experts requires a stable session "
                          "identity: send the X-Session-ID header");
    int64_t B = s->cfg->prefix_block, P = (int64_t)q->P;
    int64_t cached = sr_prefix_cached(s->prefix, r->session, q->tokens, q->P, B);
    const sr_fault *mf = r->pick.f[SR_FL_MODEL];
    if (mf && mf->kind == SR_FK_OMIT_PREFIX_READMIT && P > 0)
        cached = (P - 1) - (P - 1) % B;
    if (cached > q->route_start) {
        q->route_start = cached;
        q->has_route_start = 1;
    }
    return 0;
}

static enum MHD_Result start(req *r)
{
    sr_server *s = r->srv;
    const sr_engine_config *c = s->cfg;
    sr_err err = SR_ERR_INIT;
    sr_gen_limits lim = {c->vocab, c->max_tokens_default, c->max_seq};
    sr_gen_request q = SR_GEN_REQUEST_INIT;
    if (r->ep == SR_EP_GENERATE && !r->route && c->lora)
        return sr_srv_error(r, 400, "BadRequestError", SR_E_ENGINE_REQUEST,
                            "/skyrl/v1/generate does not support LoRA.");
    const char *body = r->body.data ? r->body.data : "";
    /* /abort_requests may name it by this header (control_pause.c). */
    const char *xr = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
    if (xr)
        snprintf(r->xrid, sizeof(r->xrid), "%s", xr);
    /* The body is NUL-terminated (sr_buf), as the parser's fast path needs. */
    sr_jdom *j = sr_srv_jdom_take(s);
    int bad = sr_gen_request_parse_in(&q, body, r->body.len, &lim,
                                      r->route ? &r->route->request : NULL, j, &err);
    sr_srv_jdom_give(s, j);
    if (bad)
        return sr_srv_error(r, err.code == SR_E_NOMEM ? 500 : 400,
                            err.code == SR_E_NOMEM ? "InternalServerError" : "BadRequestError",
                            err.code, err.msg);
    /* The later stack's capture switch, on /skyrl/v1/generate only; a 2079 server ignores it. */
    if (c->stack != SR_STACK_2086 || r->ep != SR_EP_GENERATE || r->route)
        q.want_support = 0;
    if (q.want_support && (!q.top_k_int || q.top_k <= 1)) {
        /* SkyRL #2082 (vllm_server_actor.py): an unbounded or degenerate top_k has no support. */
        char msg[200];
        snprintf(msg, sizeof msg,
                 "return_sample_support requires sampling_params.top_k > 1, got %s. "
                 "Sample-support capture is opt-in per request.",
                 q.top_k_repr);
        sr_gen_request_release(&q);
        return sr_srv_error(r, 400, "BadRequestError", SR_E_ENGINE_REQUEST, msg);
    }
    if (q.want_support && (q.top_k > SR_ENGINE_MAX_SUPPORT_K || q.top_k > c->vocab)) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "sampling_params.top_k %lld exceeds the engine's max_logprobs (%d, and the "
                 "vocabulary of %lld)",
                 (long long)q.top_k, SR_ENGINE_MAX_SUPPORT_K, (long long)c->vocab);
        sr_gen_request_release(&q);
        return sr_srv_error(r, 400, "BadRequestError", SR_E_ENGINE_REQUEST, msg);
    }
    if (omit_prefix(r, &q, &err)) {
        sr_gen_request_release(&q);
        return sr_srv_error(r, 400, "BadRequestError", err.code, err.msg);
    }
    int want = c->routes && !q.no_routes;
    int rc =
        sr_gen_job_init(&r->job, &q, sr_engine_oracle(s->e), r->ep == SR_EP_NATIVE, want,
                        r->pick.f[SR_FL_MODEL], r->pick.f[SR_FL_BODY], c->max_response_bytes, &err);
    r->job.route = r->route;
    r->job.dialect = r->route ? sr_dialect_get(c->dialect) : NULL;
    r->has_job = 1;
    sr_gen_request_release(&q);
    const sr_fault *mf = r->pick.f[SR_FL_MODEL];
    if (!rc && mf && mf->kind == SR_FK_SERVE_BEFORE_SYNC && r->ep == SR_EP_GENERATE)
        rc = sr_engine_restart_weights(s->e, &err);
    if (!rc && mf && mf->kind == SR_FK_RESTART_LOSES_GROUP && r->ep == SR_EP_GENERATE)
        rc = sr_engine_restart_fresh(s->e, &err);
    if (rc)
        return sr_srv_error(r, rc == SR_E_ENGINE_REQUEST ? 400 : 500,
                            rc == SR_E_ENGINE_REQUEST ? "BadRequestError" : "InternalServerError",
                            rc, err.msg);
    pthread_mutex_lock(&s->mu);
    /* Paused, or a memory tag asleep: held until resume and wake (control_pause.c releases it). */
    if (s->paused || s->asleep) {
        r->state = RS_HELD;
        r->k_done = -1;
        if (sr_srv_suspend_locked(r))
            sr_srv_list_add_locked(&s->held, r, RL_HELD);
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    pthread_mutex_unlock(&s->mu);
    return run(r, 1);
}

enum MHD_Result sr_srv_generate(req *r)
{
    sr_server *s = r->srv;
    pthread_mutex_lock(&s->mu);
    req_state st = r->state;
    pthread_mutex_unlock(&s->mu);
    switch (st) {
    case RS_NEW:
    case RS_DELAY:
        return start(r);
    case RS_RESUMING:
        return run(r, r->k_done < 0);
    case RS_ABORTING:
        sr_gen_abort(&r->job, r->k_done);
        return sr_srv_deliver(r);
    case RS_DUE:
        return sr_srv_deliver(r);
    default:
        return MHD_NO;
    }
}
