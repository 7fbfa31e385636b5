#include "rollout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rollout_env.h"
#include "rollout_priv.h"
#include "rollout_scratch.h"
#include "sr_clock.h"

/* Tokens a rollout's arrays are sized for up front at most (setup). */
#define RESERVE_MAX ((size_t)1 << 14)

static int check_config(const sr_rollout_config *c, sr_err *err)
{
    const sr_rollout_env *e = &c->env;
    if (!c->prompt || c->prompt_len == 0)
        return sr_err_set(err, SR_E_ROLLOUT_CONFIG, "rollout: the prompt must not be empty");
    if (e->max_turns < 1 || e->max_turns > 1024)
        return sr_err_set(err, SR_E_ROLLOUT_CONFIG, "rollout: env.max_turns must be 1..1024");
    if (e->obs_min < 0 || e->obs_max < e->obs_min || e->obs_max > 65536 ||
        (e->obs_max > 0 && e->vocab < 1) || e->vocab > INT32_MAX)
        return sr_err_set(err, SR_E_ROLLOUT_CONFIG,
                          "rollout: env needs 0 <= obs_min <= obs_max <= 65536 and a vocab");
    if (c->append_eos_after_stop && c->eos_id < 0)
        return sr_err_set(err, SR_E_ROLLOUT_CONFIG,
                          "rollout: append_eos_after_stop needs an eos_id");
    if (c->eos_id > INT32_MAX)
        return sr_err_set(err, SR_E_ROLLOUT_CONFIG, "rollout: eos_id out of range");
    if (!c->multi_turn && c->routes && !c->quirks.synthetic_eos_loss_active)
        return sr_err_set(err, SR_E_ROLLOUT_CONFIG,
                          "rollout: routed experts with the single-turn chat template are "
                          "refused: the agent loop appends a synthetic EOS that is loss-active "
                          "but that the inference engine never evaluated (use multi_turn, or "
                          "the quirk synthetic_eos_loss_active to reproduce the defect)");
    return 0;
}

static int wants_logprobs(const cJSON *sp)
{
    const cJSON *l = sp ? cJSON_GetObjectItemCaseSensitive(sp, "logprobs") : NULL;
    return l && !cJSON_IsNull(l);
}

/* Copies the string src (NULL: "") into dst of `cap` bytes, cut to fit (as snprintf "%s"). */
static void copy_cut(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap - 1) : 0;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

static void turn_from_client(sr_rollout_turn *t, const sr_client_result *r)
{
    t->engine = r->engine;
    copy_cut(t->engine_id, sizeof t->engine_id, r->engine_id);
    t->http_status = r->http_status;
    t->start_sent = r->prompt_start_sent;
    t->weight_version = r->weight_version;
    t->request_ms = r->request_ms;
    t->splice_ms = r->splice_ms;
    t->decode_ms = r->decode_ms;
    t->wait_ms = r->wait_ms;
    t->cpu_sampled = r->cpu_sampled;
    t->request_cpu_ms = r->request_cpu_ms;
    t->splice_cpu_ms = r->splice_cpu_ms;
    t->bytes_sent = r->bytes_sent;
    t->bytes_received = r->bytes_received;
    t->bytes_total = r->bytes_total;
    t->n_attempts = r->n_attempts;
    t->attempts = r->n_attempts ? malloc((size_t)r->n_attempts * sizeof *t->attempts) : NULL;
    if (t->attempts)
        memcpy(t->attempts, r->attempts, (size_t)r->n_attempts * sizeof *t->attempts);
    else
        t->n_attempts = 0;
    if (r->has_routes)
        t->route_rows = r->routes.ndim ? r->routes.shape[0] : 0;
    copy_cut(t->finish_reason, sizeof t->finish_reason, r->finish_reason);
}

/* The version of the pass that computed oracle row `row` in the reply (its "syncroll" spans),
 * else the reply's weight_version (-1 when the engine said neither). */
static int64_t reply_version(const sr_client_result *r, int64_t row)
{
    for (size_t i = 0; i < r->n_spans; i++)
        if (r->spans[i].lo <= row && row < r->spans[i].hi)
            return r->spans[i].version;
    return r->n_spans ? -1 : r->weight_version;
}

/* Sends turn k's generate into *r and records what the client did in the result's turn log. */
static int request_turn(rollout_state *s, int turn, sr_client_result *r, sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    sr_rollout_result *res = s->res;
    sr_rollout_turn *t = &res->turns[res->n_turns++];
    memset(t, 0, sizeof *t);
    t->prompt_len = (int64_t)s->ids_n;
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = s->ids;
    q.n_tokens = s->ids_n;
    q.sampling_params = c->sampling_params;
    q.model = c->model;
    q.cache_salt = c->cache_salt;
    q.session_id = c->session_id;
    q.turn = turn;
    q.return_routes = c->routes;
    q.return_support = c->sample_support;
    if (c->routes)
        q.prompt_start =
            c->quirks.overwrite_trace_each_turn ? 0 : sr_route_trace_prompt_start(s->trace);
    /* The routes are decoded straight into the trace's next rows, which the record then takes
     * without a copy (a hint: without room they are copied as before). */
    unsigned char *room = NULL;
    if (c->routes && !c->quirks.overwrite_trace_each_turn) {
        /* A new conn's trace knows no row size yet: the client's last one stands in, so that
         * the first turn's rows are not copied (a copy into fresh memory, a page fault a page). */
        sr_route_trace_hint_row_bytes(s->trace, sr_client_routes_row_bytes(s->k));
        if (sr_route_trace_room(s->trace, &room, &q.routes_dest_cap, NULL) == 0)
            q.routes_dest = room;
    }
    int64_t sent = c->trainer_version ? c->trainer_version(c->version_ctx) : -1;
    int rc = sr_client_generate(r, s->k, &q, err);
    if (c->on_reply)
        c->on_reply(c->reply_ctx, turn, &q, rc, r, rc ? err->msg : NULL);
    if (c->capture_bytes) {
        sr_rollout_exchange *e = &res->exchanges[(turn - 1) % SR_ROLLOUT_KEEP_EXCHANGES];
        sr_client_conn_take_exchange(s->k, &e->x);
        e->turn = turn;
    }
    turn_from_client(t, r);
    t->stamp_version = c->trainer_version && c->quirks.stamp_version_at_response
                           ? c->trainer_version(c->version_ctx)
                           : sent;
    t->first_version = rc ? -1 : reply_version(r, t->prompt_len - 1);
    if (rc)
        return rc;
    t->generated = (int64_t)r->n_tokens;
    if (s->collect_lp && !r->has_logprobs && r->n_tokens)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "logprobs were requested but the response carries none");
    return 0;
}

static int one_turn(rollout_state *s, int turn, sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    sr_client_result r;
    int rc = request_turn(s, turn, &r, err);
    sr_rollout_turn *t = &s->res->turns[s->res->n_turns - 1];
    if (!rc && c->routes) {
        double t0 = sr_client_now_ms();
        int64_t cpu0 = t->cpu_sampled ? sr_clock_cpu_ns() : 0;
        rc = sr_rollout_record(s, &r, err);
        t->record_ms = sr_client_now_ms() - t0;
        if (t->cpu_sampled)
            t->record_cpu_ms = (double)(sr_clock_cpu_ns() - cpu0) / 1e6;
    }
    if (!rc)
        rc = sr_rollout_env_obs(&s->obs, c, turn, s->ids, s->ids_n, r.token_ids, r.n_tokens, err);
    if (!rc)
        rc = c->multi_turn ? sr_rollout_update_multi(s, &r, t, err)
                           : sr_rollout_update_single(s, &r, t, err);
    if (!rc)
        t->obs_tokens = (int64_t)s->obs.n;
    if (!rc && c->after_turn)
        rc = c->after_turn(c->hook_ctx, turn, err);
    return rc;
}

static int loop(rollout_state *s, sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    sr_rollout_result *res = s->res;
    for (int turn = 1; turn <= c->env.max_turns; turn++) {
        if (c->max_input_length > 0 && (int64_t)s->ids_n > c->max_input_length) {
            snprintf(res->stop_reason, sizeof res->stop_reason, "length");
            break;
        }
        int rc = one_turn(s, turn, err);
        if (rc) {
            res->failed_turn = turn;
            return rc;
        }
        const sr_rollout_turn *t = &res->turns[res->n_turns - 1];
        copy_cut(res->stop_reason, sizeof res->stop_reason, t->finish_reason);
    }
    return 0;
}

/* Rows a rollout holds at most when every turn generates max_tokens: the trace's capacity hint
 * (capped: a huge max_tokens should not allocate up front what EOS usually makes unused). */
static int64_t rows_hint(const sr_rollout_config *c)
{
    const cJSON *m = c->sampling_params
                         ? cJSON_GetObjectItemCaseSensitive(c->sampling_params, "max_tokens")
                         : NULL;
    if (!cJSON_IsNumber(m) || !(m->valuedouble >= 1 && m->valuedouble <= 1e6) ||
        c->env.max_turns < 1 || c->env.max_turns > 10000)
        return 0;
    int64_t obs = c->env.obs_max > 0 ? c->env.obs_max : 0;
    int64_t rows =
        (int64_t)c->prompt_len + (int64_t)c->env.max_turns * ((int64_t)m->valuedouble + obs);
    return rows < ((int64_t)1 << 18) ? rows : ((int64_t)1 << 18);
}

static int setup(rollout_state *s, sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    s->collect_lp = wants_logprobs(c->sampling_params);
    s->response_end = (int64_t)c->prompt_len - 1;
    s->res->turns = calloc((size_t)c->env.max_turns, sizeof *s->res->turns);
    if (!s->res->turns)
        return sr_err_set(err, SR_E_NOMEM, "rollout: cannot allocate the turn log");
    /* The conversation's bound up front: one allocation per array per rollout, not a realloc
     * (and copy) in the turns that cross a power of two. Up to RESERVE_MAX tokens. */
    size_t hint = (size_t)rows_hint(c) + 1;
    if (hint > RESERVE_MAX)
        hint = RESERVE_MAX; /* past it, doubling: a long bound is rarely all used */
    int rc = 0;
    if (!rc && hint > 1)
        rc = sr_rollout_grow((void **)&s->ids, &s->ids_cap, hint, sizeof(int32_t), err);
    if (!rc && hint > 1)
        rc = sr_rollout_grow((void **)&s->mask, &s->mask_cap, hint, 1, err);
    if (!rc && hint > 1)
        rc = sr_rollout_grow((void **)&s->lp, &s->lp_cap, hint, sizeof(double), err);
    if (!rc && c->routes && hint > 1)
        rc = sr_rollout_grow((void **)&s->row_ver, &s->ver_cap, hint, sizeof(int64_t), err);
    if (!rc && c->routes && hint > 1)
        rc = sr_rollout_grow((void **)&s->held_ver, &s->held_cap, hint, sizeof(int64_t), err);
    if (!rc)
        rc = sr_rollout_push_ids(s, c->prompt, c->prompt_len, err);
    size_t neg = rc ? c->prompt_len : sr_i32_first_negative(c->prompt, c->prompt_len);
    if (neg < c->prompt_len)
        rc = sr_err_set(err, SR_E_ROLLOUT_CONFIG, "rollout: prompt[%zu] is negative", neg);
    if (!rc && c->routes) {
        sr_trace_opts o = c->trace_opts;
        if (!o.reserve_rows)
            o.reserve_rows = rows_hint(c);
        /* The conn's trace from its last rollout is emptied, its storage kept. */
        if (s->x && s->x->trace) {
            s->trace = s->x->trace;
            s->x->trace = NULL;
            sr_route_trace_reset(s->trace, &o);
        } else {
            rc = sr_route_trace_new(&s->trace, &o, err);
        }
        /* The trace reserves its rows in a block another rollout's result gave back. */
        if (!rc)
            sr_route_trace_set_cache(s->trace, sr_client_blocks(s->k));
    }
    return rc;
}

/* Borrows the conn's scratch arrays (rollout_scratch.h) for this rollout. */
static void state_take(rollout_state *s)
{
    sr_rollout_scratch *x = s->x;
    s->ids = x->ids, s->ids_cap = x->ids_cap;
    s->mask = x->mask, s->mask_cap = x->mask_cap;
    s->lp = x->lp, s->lp_cap = x->lp_cap;
    s->row_ver = x->row_ver, s->ver_cap = x->ver_cap;
    s->held_ver = x->held_ver, s->held_cap = x->held_cap;
    s->obs.ids = x->obs, s->obs.cap = x->obs_cap;
    s->full = x->full, s->full_cap = x->full_cap;
}

/* Gives the arrays back to the conn's scratch (trimmed to its bound), or frees them. */
static void state_free(rollout_state *s)
{
    sr_rollout_scratch *x = s->x;
    if (x) {
        x->ids = s->ids, x->ids_cap = s->ids_cap;
        x->mask = s->mask, x->mask_cap = s->mask_cap;
        x->lp = s->lp, x->lp_cap = s->lp_cap;
        x->row_ver = s->row_ver, x->ver_cap = s->ver_cap;
        x->held_ver = s->held_ver, x->held_cap = s->held_cap;
        x->obs = s->obs.ids, x->obs_cap = s->obs.cap;
        x->full = s->full, x->full_cap = s->full_cap;
        if (s->trace) {
            sr_route_trace_free(x->trace);
            x->trace = s->trace;
        }
        sr_rollout_scratch_keep(x);
        return;
    }
    sr_route_trace_free(s->trace);
    free(s->ids);
    free(s->mask);
    free(s->lp);
    free(s->obs.ids);
    free(s->row_ver);
    free(s->held_ver);
    free(s->full);
}

int sr_rollout_run(sr_rollout_result *res, sr_client_conn *k, const sr_rollout_config *cfg,
                   sr_err *err)
{
    memset(res, 0, sizeof *res);
    res->failed_turn = -1;
    res->err = (sr_err)SR_ERR_INIT;
    res->routes = (sr_ndarray)SR_NDARRAY_INIT;
    res->mask_chunk = cfg->mask_chunk;
    res->mask_rows = cfg->mask_rows;
    double t0 = sr_client_now_ms();
    rollout_state s;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    s.k = k;
    s.res = res;
    s.x = sr_rollout_scratch_of(k);
    if (s.x)
        state_take(&s);
    sr_client_conn_capture(k, cfg->capture_bytes);
    int rc = check_config(cfg, &res->err);
    if (!rc)
        rc = setup(&s, &res->err);
    if (rc)
        res->failed_turn = 0;
    if (!rc)
        rc = loop(&s, &res->err);
    /* The outputs are cut even after a failure, so a report can show how far the rollout got. */
    sr_err scratch = SR_ERR_INIT;
    int rc2 = sr_rollout_finish(&s, rc == 0, rc ? &scratch : &res->err);
    if (!rc && rc2)
        res->failed_turn = 0;
    rc = rc ? rc : rc2;
    if (cfg->finish_session && res->n_turns > 0)
        sr_client_finish_session(k, cfg->session_id);
    state_free(&s);
    res->total_ms = sr_client_now_ms() - t0;
    res->code = rc;
    if (rc && err)
        *err = res->err;
    return rc;
}

void sr_rollout_result_release(sr_rollout_result *r)
{
    if (!r)
        return;
    free(r->prompt_ids);
    free(r->response_ids);
    free(r->loss_mask);
    free(r->logprobs);
    /* `routes` borrows routes_block (owned 0) unless the caller replaced it with an array of
     * its own, released here as such; the block itself goes back with the size finalize gave. */
    sr_ndarray_release(&r->routes);
    sr_block_cache_put(r->routes_cache, r->routes_block, r->routes_cap);
    sr_block_cache_unref(r->routes_cache);
    free(r->row_version);
    free(r->held_version);
    for (int i = 0; r->turns && i < r->n_turns; i++)
        free(r->turns[i].attempts);
    free(r->turns);
    sr_rollout_drop_exchanges(r);
    memset(r, 0, sizeof *r);
}

const sr_client_exchange *sr_rollout_exchange_of(const sr_rollout_result *r, int turn)
{
    const sr_rollout_exchange *e =
        turn > 0 ? &r->exchanges[(turn - 1) % SR_ROLLOUT_KEEP_EXCHANGES] : NULL;
    return e && e->turn == turn ? &e->x : NULL;
}

void sr_rollout_drop_exchanges(sr_rollout_result *r)
{
    for (int i = 0; i < SR_ROLLOUT_KEEP_EXCHANGES; i++) {
        sr_client_exchange_release(&r->exchanges[i].x);
        r->exchanges[i].turn = 0;
    }
}
