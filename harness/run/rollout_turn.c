/* The rollout state's growth, the per-turn state updates, the trace record and the end of a
 * rollout (rollout_priv.h). */
#include <stdlib.h>
#include <string.h>

#include "rollout_priv.h"

/* Longest trajectory a rollout may build, in tokens (the oracle's sequence bound). */
#define MAX_TOKENS ((size_t)1 << 24)

int sr_rollout_grow(void **p, size_t *cap, size_t need, size_t item, sr_err *err)
{
    if (need <= *cap)
        return 0;
    if (need > MAX_TOKENS)
        return sr_err_set(err, SR_E_LIMIT, "rollout: more than %zu tokens", MAX_TOKENS);
    size_t n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * item);
    if (!q)
        return sr_err_set(err, SR_E_NOMEM, "rollout: cannot grow to %zu entries", n);
    *p = q;
    *cap = n;
    return 0;
}

/* Appends n entries to a growable array of `item`-sized elements. */
static int push(void **arr, size_t *len, size_t *cap, const void *src, size_t n, size_t item,
                sr_err *err)
{
    int rc = sr_rollout_grow(arr, cap, *len + n + 1, item, err);
    if (!rc && n) {
        memcpy((char *)*arr + *len * item, src, n * item);
        *len += n;
    }
    return rc;
}

static int64_t token_limit(const sr_rollout_config *c)
{
    return c->trace_opts.max_rows > 0 ? c->trace_opts.max_rows : SR_TRACE_DEFAULT_MAX_ROWS;
}

int sr_rollout_token_limit(const rollout_state *s, int rc, sr_err *err)
{
    if (rc != SR_E_LIMIT)
        return rc;
    const sr_trace_opts *o = &s->cfg->trace_opts;
    sr_err_prefix(err, "rollout past its token limit (%lld tokens, %zu route-trace bytes): ",
                  (long long)token_limit(s->cfg),
                  o->max_bytes ? o->max_bytes : SR_TRACE_DEFAULT_MAX_BYTES);
    if (err)
        err->code = SR_E_ROLLOUT_TOKEN_LIMIT;
    return SR_E_ROLLOUT_TOKEN_LIMIT;
}

int sr_rollout_push_ids(rollout_state *s, const int32_t *ids, size_t n, sr_err *err)
{
    int64_t limit = token_limit(s->cfg);
    if (n > (size_t)limit || s->ids_n > (size_t)limit - n)
        return sr_err_set(err, SR_E_ROLLOUT_TOKEN_LIMIT,
                          "rollout past its token limit: the conversation would hold %zu tokens, "
                          "more than %lld",
                          s->ids_n + n, (long long)limit);
    return push((void **)&s->ids, &s->ids_n, &s->ids_cap, ids, n, sizeof(int32_t), err);
}

/* Appends n loss-mask entries of `value` and n logprobs (lp, or 0.0 each when lp is NULL). */
int sr_rollout_push_mask(rollout_state *s, uint8_t value, const double *lp, size_t n, sr_err *err)
{
    size_t m0 = s->mask_n;
    int rc = sr_rollout_grow((void **)&s->mask, &s->mask_cap, m0 + n + 1, 1, err);
    if (!rc)
        rc = sr_rollout_grow((void **)&s->lp, &s->lp_cap, m0 + n + 1, sizeof(double), err);
    if (rc)
        return rc;
    /* Block operations, not a loop per entry: the logprobs copied, or zeros (all bits 0). */
    memset(s->mask + m0, value, n);
    if (lp && n)
        memcpy(s->lp + m0, lp, n * sizeof(double));
    else if (n)
        memset(s->lp + m0, 0, n * sizeof(double));
    s->mask_n += n;
    return 0;
}

/* Writes v to p[lo, hi) (nothing when hi <= lo), four at a time. */
static void fill_rows(int64_t *p, int64_t lo, int64_t hi, int64_t v)
{
    int64_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        p[i] = v;
        p[i + 1] = v;
        p[i + 2] = v;
        p[i + 3] = v;
    }
    for (; i < hi; i++)
        p[i] = v;
}

/* Rows [first, last) arrived in `r`: their held version (the first span holding a row names it,
 * -1 when none does), and the first version of new ones. The spans are painted over the rows in
 * reverse order, so that the first span holding a row wins, instead of searched per row. */
static int note_versions(rollout_state *s, const sr_client_result *r, int64_t first, int64_t last,
                         sr_err *err)
{
    size_t need = last > 0 ? (size_t)last : 1;
    int rc = sr_rollout_grow((void **)&s->row_ver, &s->ver_cap, need, sizeof(int64_t), err);
    if (!rc)
        rc = sr_rollout_grow((void **)&s->held_ver, &s->held_cap, need, sizeof(int64_t), err);
    if (rc)
        return rc;
    for (int64_t i = first; i < last; i++)
        s->held_ver[i] = -1;
    for (size_t j = r->n_spans; j-- > 0;) {
        int64_t lo = r->spans[j].lo > first ? r->spans[j].lo : first;
        int64_t hi = r->spans[j].hi < last ? r->spans[j].hi : last;
        fill_rows(s->held_ver, lo, hi, r->spans[j].version);
    }
    int64_t fresh = (int64_t)s->ver_n > first ? (int64_t)s->ver_n : first;
    if (fresh < last)
        memcpy(s->row_ver + fresh, s->held_ver + fresh, (size_t)(last - fresh) * sizeof(int64_t));
    if ((size_t)last > s->ver_n)
        s->ver_n = (size_t)last;
    return 0;
}

int sr_rollout_record(rollout_state *s, const sr_client_result *r, sr_err *err)
{
    const sr_rollout_config *c = s->cfg;
    int64_t P = (int64_t)s->ids_n, G = (int64_t)r->n_tokens;
    if (!c->quirks.overwrite_trace_each_turn) {
        int64_t first = sr_route_trace_prompt_start(s->trace);
        /* The splice's OR of the routes spares the record its pass over them (sr_trace.h). */
        int rc = sr_route_trace_record_bounded(s->trace, P, G, &r->routes, NULL, 0,
                                               &r->routes_bound, err);
        rc = sr_rollout_token_limit(s, rc, err);
        return rc ? rc : note_versions(s, r, first, sr_route_trace_prompt_start(s->trace), err);
    }
    /* Before #1912: the whole conversation's routes replace whatever the trace held. */
    sr_route_trace *t = NULL;
    int rc = sr_route_trace_new(&t, &c->trace_opts, err);
    if (!rc)
        rc = sr_route_trace_record_bounded(t, P, G, &r->routes, NULL, 0, &r->routes_bound, err);
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

int sr_rollout_update_multi(rollout_state *s, const sr_client_result *r, sr_rollout_turn *t,
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
        rc = sr_rollout_push_ids(s, s->obs.ids, s->obs.n, err);
    if (!rc)
        rc = sr_rollout_push_mask(s, 0, NULL, s->obs.n, err);
    t->added_eos = added;
    return rc;
}

int sr_rollout_update_single(rollout_state *s, const sr_client_result *r, sr_rollout_turn *t,
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
        rc = sr_rollout_push_ids(s, s->obs.ids, s->obs.n, err);
    if (!rc)
        rc = sr_rollout_push_mask(s, 0, NULL, s->obs.n, err);
    t->added_eos = 0;
    return rc;
}

/* The single-turn template's synthetic EOS (loss mask 1, logprob 0.0) after the response. */
static int synthetic_eos(rollout_state *s, size_t *resp_len, sr_err *err)
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

static int cut_outputs(rollout_state *s, size_t resp_len, sr_err *err)
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

static int finalize_routes(rollout_state *s, sr_err *err)
{
    sr_rollout_result *res = s->res;
    size_t P0 = s->cfg->prompt_len, T = P0 + res->response_len;
    int rc = sr_rollout_grow((void **)&s->full, &s->full_cap, T ? T : 1, 1, err);
    if (rc)
        return rc;
    uint8_t *full = s->full;
    memset(full, 0, P0);
    memcpy(full + P0, res->loss_mask, res->response_len);
    double t0 = sr_client_now_ms();
    int cpu = 0; /* measured when the client sampled any of the rollout's generates */
    for (int i = 0; i < res->n_turns; i++)
        cpu |= res->turns[i].cpu_sampled;
    int64_t cpu0 = cpu ? sr_clock_cpu_ns() : 0;
    /* The trace's storage becomes the result's routes (no copy); the trace object stays on
     * the conn for the next rollout. */
    rc = sr_route_trace_finalize(&res->routes, &res->captured_rows, s->trace, (int64_t)T, full,
                                 (int64_t)T, err);
    res->finalize_ms = sr_client_now_ms() - t0;
    if (cpu) {
        res->finalize_cpu_sampled = 1;
        res->finalize_cpu_ms = (double)(sr_clock_cpu_ns() - cpu0) / 1e6;
    }
    if (rc)
        return sr_rollout_token_limit(s, rc, err);
    /* The result owns the block and `routes` borrows it, so the block cannot be freed (and its
     * address reused) before the result is released, which puts it back in the client's cache
     * with the size finalize gave (rollout.h). */
    res->routes_cache = sr_block_cache_ref(sr_client_blocks(s->k));
    res->routes_block = res->routes.data;
    res->routes_cap = sr_route_trace_handed_capacity(s->trace);
    res->routes.owned = 0;
    size_t rows = (size_t)res->routes.shape[0];
    res->row_version = malloc((rows ? rows : 1) * sizeof(int64_t));
    res->held_version = malloc((rows ? rows : 1) * sizeof(int64_t));
    if (!res->row_version || !res->held_version)
        return sr_err_set(err, SR_E_NOMEM, "rollout: cannot allocate row versions");
    /* The captured rows (those below both the versions noted and the trace's captured count)
     * keep their versions, one block copy each; the padding rows have none (-1). */
    size_t cap = rows < s->ver_n ? rows : s->ver_n;
    if (res->captured_rows < (int64_t)cap)
        cap = res->captured_rows > 0 ? (size_t)res->captured_rows : 0;
    if (cap) {
        memcpy(res->row_version, s->row_ver, cap * sizeof(int64_t));
        memcpy(res->held_version, s->held_ver, cap * sizeof(int64_t));
    }
    for (size_t i = cap; i < rows; i++)
        res->row_version[i] = res->held_version[i] = -1;
    return 0;
}

int sr_rollout_finish(rollout_state *s, int finalize, sr_err *err)
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
