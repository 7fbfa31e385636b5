#include "gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen_priv.h"

const char *sr_gen_finish_name(sr_gen_finish f)
{
    switch (f) {
    case SR_GEN_STOP:
        return "stop";
    case SR_GEN_LENGTH:
        return "length";
    case SR_GEN_ABORT:
        return "abort";
    }
    return "stop";
}

int sr_gen_weights_copy(sr_gen_weights *dst, const sr_gen_weights *src, int num_layers, sr_err *err)
{
    if (dst == src)
        return 0;
    uint64_t *l = dst->layer_fps;
    if (!l) {
        l = malloc((size_t)num_layers * sizeof(*l));
        if (!l)
            return sr_err_set(err, SR_E_NOMEM, "cannot copy fingerprints");
    }
    memcpy(l, src->layer_fps, (size_t)num_layers * sizeof(*l));
    dst->layer_fps = l;
    dst->version = src->version;
    dst->global_fp = src->global_fp;
    return 0;
}

void sr_gen_weights_release(sr_gen_weights *w)
{
    free(w->layer_fps);
    w->layer_fps = NULL;
}

size_t sr_gen_row_bytes(const sr_gen_job *j, const sr_oracle *o)
{
    const sr_oracle_model *m = sr_oracle_model_of(o);
    return (size_t)m->num_layers * (size_t)m->topk * sr_dtype_size(j->gen_dtype);
}

sr_dtype sr_gen_dtype_holding(int64_t v)
{
    if (v < 256)
        return SR_DTYPE_UINT8;
    if (v < 32768)
        return SR_DTYPE_INT16;
    return SR_DTYPE_INT32;
}

int64_t sr_gen_get_el(const void *p, sr_dtype dt, size_t i)
{
    switch (dt) {
    case SR_DTYPE_INT8:
        return ((const int8_t *)p)[i];
    case SR_DTYPE_UINT8:
        return ((const uint8_t *)p)[i];
    case SR_DTYPE_INT16:
        return ((const int16_t *)p)[i];
    case SR_DTYPE_UINT16:
        return ((const uint16_t *)p)[i];
    case SR_DTYPE_INT32:
        return ((const int32_t *)p)[i];
    case SR_DTYPE_UINT32:
        return ((const uint32_t *)p)[i];
    case SR_DTYPE_INT64:
        return ((const int64_t *)p)[i];
    default:
        return 0;
    }
}

void sr_gen_set_el(void *p, sr_dtype dt, size_t i, int64_t v)
{
    switch (dt) {
    case SR_DTYPE_INT8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case SR_DTYPE_UINT8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case SR_DTYPE_INT16:
        ((int16_t *)p)[i] = (int16_t)v;
        break;
    case SR_DTYPE_UINT16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case SR_DTYPE_INT32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case SR_DTYPE_INT64:
        ((int64_t *)p)[i] = v;
        break;
    default:
        break;
    }
}

int sr_gen_add_last_row(sr_gen_job *j, const sr_oracle *o, sr_err *err)
{
    int64_t P = (int64_t)j->req.P, rows = j->row_hi - j->row_lo;
    if (j->G < 1 || j->row_hi != P + j->G - 1)
        return 0;
    size_t n = (size_t)(P + j->G);
    int32_t *all = malloc(n * sizeof(*all));
    if (!all)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu tokens", n);
    memcpy(all, j->req.tokens, (size_t)P * sizeof(*all));
    memcpy(all + P, j->tokens, (size_t)j->G * sizeof(*all));
    size_t off = (size_t)rows * sr_gen_row_bytes(j, o);
    int rc = sr_oracle_routes(j->routes + off, j->routes_cap - off, NULL, j->gen_dtype, o,
                              j->last.layer_fps, all, n, n - 1, n, err);
    free(all);
    if (rc)
        return rc;
    j->row_hi++;
    if (j->nspans)
        j->spans[j->nspans - 1].hi++;
    return 0;
}

int sr_gen_job_init(sr_gen_job *j, sr_gen_request *req, const sr_oracle *o, int native,
                    int want_routes, const sr_fault *model_fault, const sr_fault *body_fault,
                    size_t max_response, sr_err *err)
{
    memset(j, 0, sizeof(*j));
    j->req = *req;
    sr_gen_request z = SR_GEN_REQUEST_INIT;
    *req = z;
    const sr_oracle_model *m = sr_oracle_model_of(o);
    j->native = native;
    j->want_routes = want_routes && !native;
    j->model_fault = native ? NULL : model_fault;
    j->body_fault = body_fault;
    j->row_lo = j->req.route_start;
    if (j->model_fault && j->model_fault->kind == SR_FK_PROMPT_START_IGNORED)
        j->row_lo = 0;
    /* Holding E itself (not only E - 1) lets expert_out_of_range write E; a rule's constant may
     * be larger still. */
    int64_t hold = m->experts;
    if (j->model_fault && j->model_fault->rule.active &&
        j->model_fault->rule.act == SR_RA_CONSTANT && j->model_fault->rule.value > hold)
        hold = j->model_fault->rule.value;
    j->gen_dtype = sr_gen_dtype_holding(hold);
    size_t mt = (size_t)j->req.max_tokens;
    j->tokens = malloc(mt * sizeof(*j->tokens));
    j->logprobs = malloc(mt * sizeof(*j->logprobs));
    if (!j->tokens || !j->logprobs)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu tokens", mt);
    if (!j->want_routes)
        return 0;
    /* One row more than P+G-1 can need, for rows_p_plus_g. */
    size_t rows = j->req.P + mt - (size_t)j->row_lo;
    size_t rb = sr_gen_row_bytes(j, o);
    if (rb && rows > max_response / rb)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "routes for %zu rows could exceed the engine's maximum response of %zu "
                          "bytes; lower max_tokens",
                          rows, max_response);
    j->routes_cap = rows * rb;
    j->routes = malloc(j->routes_cap ? j->routes_cap : 1);
    if (!j->routes)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes of routes", j->routes_cap);
    return 0;
}

void sr_gen_job_release(sr_gen_job *j)
{
    sr_gen_request_release(&j->req);
    free(j->tokens);
    free(j->logprobs);
    free(j->routes);
    free(j->spans);
    sr_gen_weights_release(&j->last);
    sr_gen_weights_release(&j->prev);
    memset(j, 0, sizeof(*j));
}

static int64_t span_lo(const sr_gen_job *j)
{
    int64_t p1 = (int64_t)j->req.P - 1;
    return j->want_routes && j->row_lo < p1 ? j->row_lo : p1;
}

/* Drops span coverage at and after position `hi`. */
static void spans_clip(sr_gen_job *j, int64_t hi)
{
    size_t n = 0;
    for (size_t i = 0; i < j->nspans; i++) {
        if (j->spans[i].lo >= hi)
            continue;
        j->spans[n] = j->spans[i];
        if (j->spans[n].hi > hi)
            j->spans[n].hi = hi;
        n++;
    }
    j->nspans = n;
}

static int spans_push(sr_gen_job *j, int64_t lo, int64_t hi, int64_t version, sr_err *err)
{
    if (hi <= lo)
        return 0;
    if (j->nspans && j->spans[j->nspans - 1].version == version &&
        j->spans[j->nspans - 1].hi == lo) {
        j->spans[j->nspans - 1].hi = hi;
        return 0;
    }
    if (j->nspans == j->spans_cap) {
        /* Spans are disjoint and non-empty, so their count is bounded by the request's rows,
         * which sr_gen_job_init bounded by the maximum response: the list grows with the syncs
         * instead of merging versions (a merged span could name no single version). */
        size_t cap = j->spans_cap ? 2 * j->spans_cap : 4;
        sr_gen_span *g = realloc(j->spans, cap * sizeof(*g));
        if (!g)
            return sr_err_set(err, SR_E_NOMEM, "cannot hold %zu weight-version spans", cap);
        j->spans = g;
        j->spans_cap = cap;
    }
    j->spans[j->nspans++] = (sr_gen_span){lo, hi, version};
    return 0;
}

static void fill_oracle_req(sr_oracle_request *r, const sr_gen_job *j)
{
    sr_oracle_request z = SR_ORACLE_REQUEST_INIT;
    *r = z;
    r->max_tokens = (int32_t)j->req.max_tokens;
    r->ignore_eos = j->req.ignore_eos;
    r->stop_ids = j->req.stop_ids;
    r->num_stop_ids = j->req.n_stop_ids;
    r->route_dtype = j->gen_dtype;
}

/* Tokens the draft proposes (and the target accepts) between two of the target's own tokens. */
#define SR_GEN_DRAFT_TOKENS 2

/* stale_draft_model (sgl-project/sglang#28257): speculative decoding whose draft model kept the
 * weights before the last update. The target samples token 0 from the prefill and then one bonus
 * token after each run of SR_GEN_DRAFT_TOKENS accepted draft tokens; the accepted ones (and the
 * forward passes they come from) are the draft's, computed with `prev`, while the reply claims
 * the target's version throughout (the spans keep w's version). */
static int draft_decode(sr_gen_job *j, const sr_oracle *o, const sr_gen_weights *w,
                        const sr_gen_weights *prev, sr_err *err)
{
    sr_gen_weights draft = *prev;
    draft.version = w->version;
    int rc = 0;
    for (int64_t k = 1; !rc && k < j->G; k += SR_GEN_DRAFT_TOKENS + 1) {
        rc = sr_gen_continue(j, o, &draft, k, err);
        if (!rc && k + SR_GEN_DRAFT_TOKENS < j->G)
            rc = sr_gen_continue(j, o, w, k + SR_GEN_DRAFT_TOKENS, err);
    }
    return rc;
}

int sr_gen_run(sr_gen_job *j, const sr_oracle *o, const sr_gen_weights *w,
               const sr_gen_weights *prev, sr_err *err)
{
    int L = sr_oracle_model_of(o)->num_layers;
    sr_oracle_request r;
    fill_oracle_req(&r, j);
    r.prompt = j->req.tokens;
    r.prompt_len = j->req.P;
    r.route_start = j->want_routes ? j->row_lo : -1;
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = j->tokens;
    out.logprobs = j->logprobs;
    out.routes = j->routes;
    out.routes_cap = j->routes_cap;
    int rc = sr_oracle_generate(&out, o, w->global_fp, w->layer_fps, &r, err);
    if (rc)
        return rc;
    j->G = out.num_tokens;
    j->finish = out.finish == SR_ORACLE_FINISH_STOP ? SR_GEN_STOP : SR_GEN_LENGTH;
    j->row_hi = j->want_routes ? j->row_lo + out.num_rows : j->row_lo;
    rc = sr_gen_weights_copy(&j->last, w, L, err);
    if (!rc && prev) {
        rc = sr_gen_weights_copy(&j->prev, prev, L, err);
        j->has_prev = !rc;
    }
    j->nspans = 0;
    if (!rc)
        rc = spans_push(j, span_lo(j), (int64_t)j->req.P + j->G - 1, w->version, err);
    if (!rc && prev && j->model_fault && j->model_fault->kind == SR_FK_STALE_DRAFT_MODEL)
        rc = draft_decode(j, o, w, prev, err);
    return rc;
}

int sr_gen_continue(sr_gen_job *j, const sr_oracle *o, const sr_gen_weights *w, int64_t k,
                    sr_err *err)
{
    if (k <= 0)
        return sr_gen_run(j, o, w, j->has_prev ? &j->prev : NULL, err);
    if (k >= j->G)
        return 0;
    size_t P2 = j->req.P + (size_t)k;
    int32_t *prompt = malloc(P2 * sizeof(*prompt));
    if (!prompt)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu tokens", P2);
    memcpy(prompt, j->req.tokens, j->req.P * sizeof(*prompt));
    memcpy(prompt + j->req.P, j->tokens, (size_t)k * sizeof(*prompt));
    sr_oracle_request r;
    fill_oracle_req(&r, j);
    r.prompt = prompt;
    r.prompt_len = P2;
    r.max_tokens = (int32_t)(j->req.max_tokens - k);
    r.prior_generated = (size_t)k;
    r.route_start = j->want_routes ? (int64_t)P2 - 1 : -1;
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = j->tokens + k;
    out.logprobs = j->logprobs + k;
    if (j->want_routes) {
        size_t off = (size_t)((int64_t)P2 - 1 - j->row_lo) * sr_gen_row_bytes(j, o);
        out.routes = j->routes + off;
        out.routes_cap = j->routes_cap - off;
    }
    int rc = sr_oracle_generate(&out, o, w->global_fp, w->layer_fps, &r, err);
    free(prompt);
    if (rc)
        return rc;
    j->G = k + out.num_tokens;
    j->finish = out.finish == SR_ORACLE_FINISH_STOP ? SR_GEN_STOP : SR_GEN_LENGTH;
    if (j->want_routes)
        j->row_hi = (int64_t)P2 - 1 + out.num_rows;
    spans_clip(j, (int64_t)P2 - 1);
    rc = spans_push(j, (int64_t)P2 - 1, (int64_t)j->req.P + j->G - 1, w->version, err);
    if (rc)
        return rc;
    return sr_gen_weights_copy(&j->last, w, sr_oracle_model_of(o)->num_layers, err);
}

void sr_gen_abort(sr_gen_job *j, int64_t k)
{
    if (k < 0)
        k = 0;
    if (k > j->G)
        k = j->G;
    j->G = k;
    j->finish = SR_GEN_ABORT;
    int64_t hi = k > 0 ? (int64_t)j->req.P + k - 1 : j->row_lo;
    if (j->want_routes)
        j->row_hi = hi > j->row_lo ? hi : j->row_lo;
    if (k == 0)
        j->nspans = 0;
    else
        spans_clip(j, (int64_t)j->req.P + k - 1);
}
