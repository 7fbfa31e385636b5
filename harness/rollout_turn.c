/* The per-turn state updates, trace recording and the end of a rollout (rollout.h). */
#include <stdlib.h>
#include <string.h>

#include "rollout_priv.h"

static int64_t span_version(const sr_client_result *r, int64_t row)
{
    for (size_t i = 0; i < r->n_spans; i++)
        if (r->spans[i].lo <= row && row < r->spans[i].hi)
            return r->spans[i].version;
    return -1;
}

/* Rows [first, last) arrived in `r`: their held version, and the first version of new ones. */
static int note_versions(sr_rollout_state *s, const sr_client_result *r, int64_t first,
                         int64_t last, sr_err *err)
{
    size_t need = last > 0 ? (size_t)last : 1;
    int rc = sr_rollout_grow((void **)&s->row_ver, &s->ver_cap, need, sizeof(int64_t), err);
    if (!rc)
        rc = sr_rollout_grow((void **)&s->held_ver, &s->held_cap, need, sizeof(int64_t), err);
    if (rc)
        return rc;
    for (int64_t i = first; i < last; i++) {
        int64_t v = span_version(r, i);
        s->held_ver[i] = v;
        if ((size_t)i >= s->ver_n)
            s->row_ver[i] = v;
    }
    if ((size_t)last > s->ver_n)
        s->ver_n = (size_t)last;
    return 0;
}

int sr_rollout_record(sr_rollout_state *s, const sr_client_result *r, sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    int64_t P = (int64_t)s->ids_n, G = (int64_t)r->n_tokens;
    if (!c->quirks.overwrite_trace_each_turn) {
        int64_t first = sr_route_trace_prompt_start(s->trace);
        int rc = sr_route_trace_record(s->trace, P, G, &r->routes, NULL, 0, err);
        rc = sr_rollout_token_limit(s, rc, err);
        return rc ? rc : note_versions(s, r, first, sr_route_trace_prompt_start(s->trace), err);
    }
    /* Before #1912: the whole conversation's routes replace whatever the trace held. */
    sr_route_trace *t = NULL;
    int rc = sr_route_trace_new(&t, &c->trace_opts, err);
    if (!rc)
        rc = sr_route_trace_record(t, P, G, &r->routes, NULL, 0, err);
    rc = sr_rollout_token_limit(s, rc, err);
    if (rc) {
        sr_route_trace_free(t);
        return rc;
    }
    sr_route_trace_free(s->trace);
    s->trace = t;
    return note_versions(s, r, 0, sr_route_trace_prompt_start(t), err);
}

static int is_stop(const sr_client_result *r)
{
    return r->finish_reason && strcmp(r->finish_reason, "stop") == 0;
}

int sr_rollout_update_multi(sr_rollout_state *s, const sr_client_result *r, sr_rollout_turn *t,
                            sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    size_t G = r->n_tokens, P = s->ids_n;
    const double *lp = s->collect_lp && r->has_logprobs ? r->logprobs : NULL;
    int added = c->append_eos_after_stop && is_stop(r) &&
                (G == 0 || r->token_ids[G - 1] != (int32_t)c->eos_id);
    int32_t eos = (int32_t)c->eos_id;
    int rc = sr_rollout_push_ids(s, r->token_ids, G, err);
    if (!rc)
        rc = sr_rollout_push_mask(s, 1, lp, G, err);
    if (!rc && added)
        rc = sr_rollout_push_ids(s, &eos, 1, err);
    if (!rc && added)
        rc = sr_rollout_push_mask(s, 0, NULL, 1, err);
    s->response_end = (int64_t)(P + G + (size_t)added) - 1;
    if (!rc)
        rc = sr_rollout_push_ids(s, s->obs, s->obs_n, err);
    if (!rc)
        rc = sr_rollout_push_mask(s, 0, NULL, s->obs_n, err);
    t->added_eos = added;
    return rc;
}

int sr_rollout_update_single(sr_rollout_state *s, const sr_client_result *r, sr_rollout_turn *t,
                             sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    size_t G = r->n_tokens, P = s->ids_n;
    const double *lp = s->collect_lp && r->has_logprobs ? r->logprobs : NULL;
    /* The template path strips the model's EOS; it is re-added after the loop (§5.5). */
    size_t kept = G && c->eos_id >= 0 && r->token_ids[G - 1] == (int32_t)c->eos_id ? G - 1 : G;
    int rc = sr_rollout_push_ids(s, r->token_ids, kept, err);
    if (!rc)
        rc = sr_rollout_push_mask(s, 1, lp, kept, err);
    s->response_end = (int64_t)(P + kept) - 1;
    if (!rc)
        rc = sr_rollout_push_ids(s, s->obs, s->obs_n, err);
    if (!rc)
        rc = sr_rollout_push_mask(s, 0, NULL, s->obs_n, err);
    t->added_eos = 0;
    return rc;
}

/* The single-turn template's synthetic EOS (loss mask 1, logprob 0.0) after the response. */
static int synthetic_eos(sr_rollout_state *s, size_t *resp_len, sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    size_t P0 = c->prompt_len, n = *resp_len;
    int32_t eos = (int32_t)c->eos_id;
    if (c->multi_turn || c->eos_id < 0 || strcmp(s->res->stop_reason, "length") == 0 ||
        (n && s->ids[P0 + n - 1] == eos))
        return 0;
    s->ids_n = P0 + n;
    s->mask_n = n;
    int rc = sr_rollout_push_ids(s, &eos, 1, err);
    if (!rc)
        rc = sr_rollout_push_mask(s, 1, NULL, 1, err);
    if (!rc)
        *resp_len = n + 1;
    return rc;
}

static void *dup_bytes(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n)
        memcpy(q, p, n);
    return q;
}

static int cut_outputs(sr_rollout_state *s, size_t resp_len, sr_err *err)
{
    sr_rollout_result *res = s->res;
    size_t P0 = s->cfg->prompt_len;
    res->prompt_len = P0;
    res->response_len = resp_len;
    res->prompt_ids = dup_bytes(s->ids, P0 * sizeof(int32_t));
    res->response_ids = dup_bytes(s->ids + P0, resp_len * sizeof(int32_t));
    res->loss_mask = dup_bytes(s->mask, resp_len);
    if (s->collect_lp)
        res->logprobs = dup_bytes(s->lp, resp_len * sizeof(double));
    if (!res->prompt_ids || !res->response_ids || !res->loss_mask ||
        (s->collect_lp && !res->logprobs))
        return sr_err_set(err, SR_E_NOMEM, "rollout: cannot copy the outputs");
    return 0;
}

static int finalize_routes(sr_rollout_state *s, sr_err *err)
{
    sr_rollout_result *res = s->res;
    size_t P0 = s->cfg->prompt_len, T = P0 + res->response_len;
    uint8_t *full = calloc(T ? T : 1, 1);
    if (!full)
        return sr_err_set(err, SR_E_NOMEM, "rollout: cannot build the loss mask");
    memcpy(full + P0, res->loss_mask, res->response_len);
    double t0 = sr_client_now_ms();
    int rc = sr_route_trace_finalize(&res->routes, &res->captured_rows, s->trace, (int64_t)T, full,
                                     (int64_t)T, err);
    res->finalize_ms = sr_client_now_ms() - t0;
    free(full);
    if (rc)
        return sr_rollout_token_limit(s, rc, err);
    size_t rows = (size_t)res->routes.shape[0];
    res->row_version = malloc((rows ? rows : 1) * sizeof(int64_t));
    res->held_version = malloc((rows ? rows : 1) * sizeof(int64_t));
    if (!res->row_version || !res->held_version)
        return sr_err_set(err, SR_E_NOMEM, "rollout: cannot allocate row versions");
    for (size_t i = 0; i < rows; i++) {
        int captured = i < s->ver_n && (int64_t)i < res->captured_rows;
        res->row_version[i] = captured ? s->row_ver[i] : -1;
        res->held_version[i] = captured ? s->held_ver[i] : -1;
    }
    return 0;
}

int sr_rollout_finish(sr_rollout_state *s, int finalize, sr_err *err)
{
    size_t P0 = s->cfg->prompt_len;
    if (s->ids_n < P0 || !s->ids)
        return 0; /* refused or failed before the prompt was in place: nothing to cut */
    size_t resp_len = s->response_end + 1 > (int64_t)P0 ? (size_t)(s->response_end + 1) - P0 : 0;
    /* After a failed turn the arrays may be shorter than the last response end claims. */
    if (resp_len > s->mask_n)
        resp_len = s->mask_n;
    if (resp_len > s->ids_n - P0)
        resp_len = s->ids_n - P0;
    int rc = finalize ? synthetic_eos(s, &resp_len, err) : 0;
    if (!rc)
        rc = cut_outputs(s, resp_len, err);
    if (!rc && finalize && s->trace && sr_route_trace_prompt_start(s->trace) > 0)
        rc = finalize_routes(s, err);
    return rc;
}
