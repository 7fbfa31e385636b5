#include "sr_oracle.h"
#include "sr_mix.h"
#include "sr_ndarray.h"
#include "sr_oracle_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN        0x9E3779B97F4A7C15ull
#define PREFIX_DOMAIN 0x7072656669786831ull /* "prefixh1" */
#define NEXT_DOMAIN   0x6E657874746F6B31ull /* "nexttok1" */

struct sr_oracle {
    sr_oracle_model model; /* pointers below point into this object */
    int32_t *layers;
    sr_oracle_stopseq *stops;
    int32_t *stop_tokens;
    uint64_t *layer_gold; /* G * (g_l + 1) per layer slot, for the row filler */
};

static inline uint64_t draw(uint64_t s, uint64_t k)
{
    return sr_mix64(s + GOLDEN * (k + 1));
}

static inline double unit(uint64_t x)
{
    return (double)(x >> 11) * 0x1.0p-53;
}

static inline uint64_t below(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

/* ---- model validation ---- */

static int check_rate(double r, const char *name, sr_err *err)
{
    if (!(r >= 0.0 && r <= 1.0))
        return sr_err_set(err, SR_E_ORACLE_MODEL, "model %s must be in [0, 1], got %g", name, r);
    return 0;
}

static int check_shape(const sr_oracle_model *m, sr_err *err)
{
    if (m->vocab < 1 || m->vocab > SR_ORACLE_MAX_VOCAB)
        return sr_err_set(err, SR_E_ORACLE_MODEL, "model vocab must be in [1, 2^31], got %lld",
                          (long long)m->vocab);
    if (m->num_layers < 1 || m->num_layers > SR_ORACLE_MAX_LAYERS || !m->layer_indices)
        return sr_err_set(err, SR_E_ORACLE_MODEL,
                          "model needs 1..%d MoE layers with their indices, got %d",
                          SR_ORACLE_MAX_LAYERS, m->num_layers);
    for (int l = 0; l < m->num_layers; l++) {
        int32_t g = m->layer_indices[l];
        if (g < 0 || (l > 0 && g <= m->layer_indices[l - 1]))
            return sr_err_set_at(err, SR_E_ORACLE_MODEL, l,
                                 "model layer_indices must be non-negative and strictly "
                                 "increasing; entry %d is %d",
                                 l, (int)g);
    }
    if (m->experts < 1 || m->experts > SR_ORACLE_MAX_EXPERTS)
        return sr_err_set(err, SR_E_ORACLE_MODEL,
                          "model experts must be in [1, 2^31] (ids fit int32), got %lld",
                          (long long)m->experts);
    if (m->topk < 1 || m->topk > SR_ORACLE_MAX_TOPK || m->topk > m->experts)
        return sr_err_set(err, SR_E_ORACLE_MODEL,
                          "model topk must be in [1, min(experts=%lld, %d)], got %d",
                          (long long)m->experts, SR_ORACLE_MAX_TOPK, m->topk);
    if (m->eos_id < -1 || m->eos_id >= m->vocab)
        return sr_err_set(err, SR_E_ORACLE_MODEL,
                          "model eos_id must be -1 or in [0, %lld), got %lld", (long long)m->vocab,
                          (long long)m->eos_id);
    if (m->eos_id >= 0 && m->vocab < 2)
        return sr_err_set(err, SR_E_ORACLE_MODEL, "a model with an EOS token needs vocab >= 2");
    return 0;
}

static int check_behaviour(const sr_oracle_model *m, sr_err *err)
{
    int rc;
    if ((rc = check_rate(m->eos_rate, "eos_rate", err)) ||
        (rc = check_rate(m->nonfinite_rate, "nonfinite_rate", err)))
        return rc;
    if (!(m->logprob_scale >= 0.0 && m->logprob_scale <= SR_ORACLE_MAX_LP_SCALE))
        return sr_err_set(err, SR_E_ORACLE_MODEL, "model logprob_scale must be in [0, %g], got %g",
                          SR_ORACLE_MAX_LP_SCALE, m->logprob_scale);
    if (m->num_stops < 0 || m->num_stops > SR_ORACLE_MAX_STOPS || (m->num_stops && !m->stops))
        return sr_err_set(err, SR_E_ORACLE_MODEL, "model num_stops must be in [0, %d], got %d",
                          SR_ORACLE_MAX_STOPS, m->num_stops);
    for (int s = 0; s < m->num_stops; s++) {
        const sr_oracle_stopseq *q = &m->stops[s];
        if (q->len < 1 || q->len > SR_ORACLE_MAX_STOP_LEN || !q->ids)
            return sr_err_set_at(err, SR_E_ORACLE_MODEL, s,
                                 "model stop sequence %d must have 1..%d tokens, got %d", s,
                                 SR_ORACLE_MAX_STOP_LEN, q->len);
        for (int j = 0; j < q->len; j++)
            if (q->ids[j] < 0 || q->ids[j] >= m->vocab)
                return sr_err_set_at(err, SR_E_ORACLE_MODEL, s,
                                     "model stop sequence %d holds token %d outside [0, %lld)", s,
                                     (int)q->ids[j], (long long)m->vocab);
    }
    return 0;
}

int sr_oracle_new(sr_oracle **out, const sr_oracle_model *model, sr_err *err)
{
    *out = NULL;
    if (!model)
        return sr_err_set(err, SR_E_ORACLE_MODEL, "no model given");
    int rc;
    if ((rc = check_shape(model, err)) || (rc = check_behaviour(model, err)))
        return rc;
    size_t ntok = 0;
    for (int s = 0; s < model->num_stops; s++)
        ntok += (size_t)model->stops[s].len;
    sr_oracle *o = calloc(1, sizeof *o);
    if (!o)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the oracle");
    o->model = *model;
    o->layers = malloc(sizeof(int32_t) * (size_t)model->num_layers);
    o->stops = calloc((size_t)model->num_stops + 1, sizeof *o->stops);
    o->stop_tokens = malloc(sizeof(int32_t) * (ntok + 1));
    o->layer_gold = malloc(sizeof(uint64_t) * (size_t)model->num_layers);
    if (!o->layers || !o->stops || !o->stop_tokens || !o->layer_gold) {
        sr_oracle_free(o);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the oracle's model");
    }
    memcpy(o->layers, model->layer_indices, sizeof(int32_t) * (size_t)model->num_layers);
    for (int l = 0; l < model->num_layers; l++)
        o->layer_gold[l] = GOLDEN * ((uint64_t)o->layers[l] + 1);
    size_t at = 0;
    for (int s = 0; s < model->num_stops; s++) {
        memcpy(o->stop_tokens + at, model->stops[s].ids,
               sizeof(int32_t) * (size_t)model->stops[s].len);
        o->stops[s].ids = o->stop_tokens + at;
        o->stops[s].len = model->stops[s].len;
        at += (size_t)model->stops[s].len;
    }
    o->model.layer_indices = o->layers;
    o->model.stops = o->stops;
    *out = o;
    return 0;
}

void sr_oracle_free(sr_oracle *o)
{
    if (!o)
        return;
    free(o->layers);
    free(o->stops);
    free(o->stop_tokens);
    free(o->layer_gold);
    free(o);
}

const sr_oracle_model *sr_oracle_model_of(const sr_oracle *o)
{
    return &o->model;
}

void sr_oracle_i_shape_of(sr_oracle_i_shape *shape, const sr_oracle *o)
{
    shape->experts = (uint64_t)o->model.experts;
    shape->topk = o->model.topk;
    shape->num_layers = o->model.num_layers;
    shape->layer_gold = o->layer_gold;
}

/* ---- primitives ---- */

uint64_t sr_oracle_prefix_empty(const sr_oracle *o)
{
    return sr_mix64(o->model.seed ^ PREFIX_DOMAIN);
}

uint64_t sr_oracle_prefix_push(uint64_t h, int32_t token)
{
    return sr_mix64(h ^ sr_mix64((uint64_t)(uint32_t)token + GOLDEN));
}

void sr_oracle_route_row(int32_t *experts, const sr_oracle *o, int layer, uint64_t layer_fp,
                         uint64_t h)
{
    const uint64_t E = (uint64_t)o->model.experts;
    const int K = o->model.topk;
    uint64_t s = sr_mix64(sr_mix64(h ^ layer_fp) + GOLDEN * ((uint64_t)o->layers[layer] + 1));
    /* The draws do not depend on each other: computing them first lets them pipeline. */
    uint64_t r[SR_ORACLE_MAX_TOPK];
    for (int j = 0; j < K; j++)
        r[j] = (uint64_t)j + below(draw(s, (uint64_t)j), E - (uint64_t)j);
    sr_oracle_i_shuffle_sparse(experts, r, 1, K);
}

void sr_oracle_next(int32_t *token, double *logprob, const sr_oracle *o, uint64_t global_fp,
                    uint64_t h)
{
    const sr_oracle_model *m = &o->model;
    uint64_t z = sr_mix64(h ^ global_fp ^ NEXT_DOMAIN);
    uint64_t u0 = draw(z, 0), u1 = draw(z, 1), u2 = draw(z, 2), u3 = draw(z, 3);
    int is_eos = m->eos_id >= 0 && unit(u0) < m->eos_rate;
    uint64_t t;
    if (is_eos) {
        t = (uint64_t)m->eos_id;
    } else if (m->eos_id < 0) {
        t = below(u1, (uint64_t)m->vocab);
    } else {
        t = below(u1, (uint64_t)m->vocab - 1);
        if (t >= (uint64_t)m->eos_id)
            t++;
    }
    *token = (int32_t)t;
    double lp = 0.0 - m->logprob_scale * unit(u2);
    if (unit(u3) < m->nonfinite_rate) {
        static const double special[3] = {NAN, INFINITY, -INFINITY};
        lp = special[u3 % 3];
    }
    *logprob = lp;
}

/* ---- route rows over a token sequence ---- */

/*
 * A token sequence seen as the concatenation a[0..na) ++ b[0..nb), so generate can hash the
 * prompt and its own output without copying them together.
 */
typedef struct seq2 {
    const int32_t *a;
    size_t na;
    const int32_t *b;
    size_t nb;
} seq2;

static inline int32_t seq_at(const seq2 *s, size_t i)
{
    return i < s->na ? s->a[i] : s->b[i - s->na];
}

static int check_route_dtype(sr_dtype dtype, const sr_oracle *o, sr_err *err)
{
    int64_t cap;
    switch (dtype) {
    case SR_DTYPE_UINT8:
        cap = 256;
        break;
    case SR_DTYPE_INT16:
        cap = 32768;
        break;
    case SR_DTYPE_INT32:
        cap = (int64_t)1 << 31;
        break;
    default:
        return sr_err_set(err, SR_E_ORACLE_REQUEST,
                          "route dtype must be uint8, int16 or int32, got %s",
                          sr_dtype_name(dtype));
    }
    if (o->model.experts > cap)
        return sr_err_set(err, SR_E_ORACLE_REQUEST, "route dtype %s cannot hold %lld experts",
                          sr_dtype_name(dtype), (long long)o->model.experts);
    return 0;
}

/* Bytes of `rows` route rows in `dtype`, or SR_E_ORACLE_REQUEST if it does not fit in out_cap. */
static int check_route_cap(size_t rows, size_t out_cap, sr_dtype dtype, const sr_oracle *o,
                           sr_err *err)
{
    size_t per_row = (size_t)o->model.num_layers * (size_t)o->model.topk * sr_dtype_size(dtype);
    if (rows > SIZE_MAX / per_row || rows * per_row > out_cap)
        return sr_err_set(err, SR_E_ORACLE_REQUEST,
                          "route buffer of %zu bytes cannot hold %zu rows of %zu bytes", out_cap,
                          rows, per_row);
    return 0;
}

/*
 * Rows [begin, end) of `s`; dtype and capacity were checked by the caller, tokens too. The rows
 * come from the row filler (sr_oracle_rows.c), which computes what sr_oracle_route_row
 * defines with the draws vectorised. Returns the largest id written (-1 for no rows) when
 * want_max, else -1: one vectorised pass over the rows after they are written.
 */
static int32_t fill_routes(void *out, sr_dtype dtype, const sr_oracle *o, const uint64_t *layer_fps,
                           const seq2 *s, size_t begin, size_t end, int want_max)
{
    if (begin >= end)
        return -1;
    sr_oracle_i_shape shape;
    sr_oracle_i_shape_of(&shape, o);
    sr_oracle_i_rows w;
    sr_oracle_i_rows_init(&w, &shape, SR_ORACLE_I_AUTO);
    const size_t per_row = (size_t)o->model.num_layers * (size_t)o->model.topk;
    uint64_t h = sr_oracle_prefix_empty(o);
    for (size_t i = 0; i < begin; i++)
        h = sr_oracle_prefix_push(h, seq_at(s, i));
    size_t at = 0;
    for (size_t i = begin; i < end; i++) {
        h = sr_oracle_prefix_push(h, seq_at(s, i));
        sr_oracle_i_row(&w, out, at, dtype, layer_fps, h);
        at += per_row;
    }
    if (!want_max)
        return -1;
    sr_ndarray a = {dtype, 1, {(int64_t)at}, out, at * sr_dtype_size(dtype), 0};
    int64_t lo, hi;
    /* Cannot fail: the dtype is an integer one (checked by the caller). */
    if (sr_ndarray_minmax(&a, &lo, &hi, NULL))
        return -1;
    return (int32_t)hi;
}

static int check_tokens(const int32_t *t, size_t n, size_t base, const sr_oracle *o, sr_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (t[i] < 0 || t[i] >= o->model.vocab)
            return sr_err_set_at(err, SR_E_ORACLE_TOKEN, (int64_t)(base + i),
                                 "token %d at position %zu is outside [0, %lld)", (int)t[i],
                                 base + i, (long long)o->model.vocab);
    return 0;
}

int sr_oracle_routes(void *out, size_t out_cap, int32_t *max_expert, sr_dtype dtype,
                     const sr_oracle *o, const uint64_t *layer_fps, const int32_t *tokens, size_t n,
                     size_t row_begin, size_t row_end, sr_err *err)
{
    if (max_expert)
        *max_expert = -1;
    if (row_begin > row_end || row_end > n)
        return sr_err_set(err, SR_E_ORACLE_REQUEST,
                          "route rows [%zu, %zu) are not within %zu tokens", row_begin, row_end, n);
    int rc;
    if ((rc = check_route_dtype(dtype, o, err)) ||
        (rc = check_route_cap(row_end - row_begin, out_cap, dtype, o, err)) ||
        (rc = check_tokens(tokens, row_end, 0, o, err)))
        return rc;
    seq2 s = {tokens, row_end, NULL, 0};
    int32_t mx = fill_routes(out, dtype, o, layer_fps, &s, row_begin, row_end, max_expert != NULL);
    if (max_expert)
        *max_expert = mx;
    return 0;
}

int sr_oracle_routes_of(void *out, size_t out_cap, sr_dtype dtype, const sr_oracle *o,
                        const uint64_t *layer_fps, const uint64_t *h, size_t n, sr_err *err)
{
    int rc;
    if ((rc = check_route_dtype(dtype, o, err)) ||
        (rc = check_route_cap(n, out_cap, dtype, o, err)) || n == 0)
        return rc;
    sr_oracle_i_shape shape;
    sr_oracle_i_shape_of(&shape, o);
    sr_oracle_i_rows w;
    sr_oracle_i_rows_init(&w, &shape, SR_ORACLE_I_AUTO);
    const size_t per_row = (size_t)o->model.num_layers * (size_t)o->model.topk;
    for (size_t r = 0; r < n; r++)
        sr_oracle_i_row(&w, out, r * per_row, dtype, layer_fps, h[r]);
    return 0;
}

/* ---- generation ---- */

const char *sr_oracle_finish_name(sr_oracle_finish f)
{
    return f == SR_ORACLE_FINISH_STOP ? "stop" : "length";
}

static int check_request(const sr_oracle *o, const sr_oracle_request *r,
                         const sr_oracle_output *out, sr_err *err)
{
    if (!r->prompt || r->prompt_len < 1)
        return sr_err_set(err, SR_E_ORACLE_REQUEST, "the prompt is empty");
    if (r->max_tokens < 1 || r->max_tokens > SR_ORACLE_MAX_SEQ - 1 ||
        r->prompt_len > (size_t)(SR_ORACLE_MAX_SEQ - r->max_tokens))
        return sr_err_set(err, SR_E_ORACLE_REQUEST,
                          "max_tokens %d must be >= 1 and prompt (%zu) + max_tokens <= %lld",
                          (int)r->max_tokens, r->prompt_len, (long long)SR_ORACLE_MAX_SEQ);
    if (!out->tokens)
        return sr_err_set(err, SR_E_ORACLE_REQUEST, "no token buffer given");
    if (r->prior_generated > r->prompt_len)
        return sr_err_set(err, SR_E_ORACLE_REQUEST, "prior_generated %zu exceeds the prompt (%zu)",
                          r->prior_generated, r->prompt_len);
    if (r->num_stop_ids > SR_ORACLE_MAX_STOP_IDS || (r->num_stop_ids && !r->stop_ids))
        return sr_err_set(err, SR_E_ORACLE_REQUEST, "at most %d stop ids, got %zu",
                          SR_ORACLE_MAX_STOP_IDS, r->num_stop_ids);
    if (r->route_start < -1 || r->route_start > (int64_t)r->prompt_len)
        return sr_err_set(err, SR_E_ORACLE_REQUEST,
                          "routed_experts_prompt_start %lld must be in [0, %zu] (or -1: no routes)",
                          (long long)r->route_start, r->prompt_len);
    int rc;
    if (r->route_start >= 0) {
        if (!out->routes)
            return sr_err_set(err, SR_E_ORACLE_REQUEST, "routes requested but no route buffer");
        size_t rows = r->prompt_len + (size_t)r->max_tokens - 1 - (size_t)r->route_start;
        if ((rc = check_route_dtype(r->route_dtype, o, err)) ||
            (rc = check_route_cap(rows, out->routes_cap, r->route_dtype, o, err)))
            return rc;
    }
    if ((rc = check_tokens(r->prompt, r->prompt_len, 0, o, err)))
        return rc;
    if ((rc = check_tokens(r->stop_ids, r->num_stop_ids, 0, o, err)))
        sr_err_prefix(err, "stop_ids: ");
    return rc;
}

/* 1 if a model stop sequence ends at position n-1 of `s`, inside the generated tail from gen0. */
static int stop_seq_hit(const sr_oracle *o, const seq2 *s, size_t n, size_t gen0)
{
    for (int q = 0; q < o->model.num_stops; q++) {
        const sr_oracle_stopseq *st = &o->stops[q];
        size_t m = (size_t)st->len;
        if (n - gen0 < m)
            continue;
        size_t j = 0;
        while (j < m && seq_at(s, n - m + j) == st->ids[j])
            j++;
        if (j == m)
            return 1;
    }
    return 0;
}

static int should_stop(const sr_oracle *o, const sr_oracle_request *r, const seq2 *s, size_t n,
                       int32_t t)
{
    if (t == o->model.eos_id && !r->ignore_eos)
        return 1;
    for (size_t k = 0; k < r->num_stop_ids; k++)
        if (r->stop_ids[k] == t)
            return 1;
    return stop_seq_hit(o, s, n, r->prompt_len - r->prior_generated);
}

int sr_oracle_generate(sr_oracle_output *out, const sr_oracle *o, uint64_t global_fp,
                       const uint64_t *layer_fps, const sr_oracle_request *req, sr_err *err)
{
    out->num_tokens = 0;
    out->finish = SR_ORACLE_FINISH_LENGTH;
    out->num_rows = 0;
    out->routes_max = -1;
    int rc = check_request(o, req, out, err);
    if (rc)
        return rc;
    seq2 s = {req->prompt, req->prompt_len, out->tokens, 0};
    uint64_t h = sr_oracle_prefix_empty(o);
    for (size_t i = 0; i < req->prompt_len; i++)
        h = sr_oracle_prefix_push(h, req->prompt[i]);
    int32_t g = 0;
    for (;;) {
        int32_t t;
        double lp;
        sr_oracle_next(&t, &lp, o, global_fp, h);
        out->tokens[g] = t;
        if (out->logprobs)
            out->logprobs[g] = lp;
        g++;
        s.nb = (size_t)g;
        if (should_stop(o, req, &s, req->prompt_len + (size_t)g, t)) {
            out->finish = SR_ORACLE_FINISH_STOP;
            break;
        }
        if (g == req->max_tokens)
            break;
        h = sr_oracle_prefix_push(h, t);
    }
    out->num_tokens = g;
    if (req->route_start >= 0) {
        size_t end = req->prompt_len + (size_t)g - 1;
        out->routes_max = fill_routes(out->routes, req->route_dtype, o, layer_fps, &s,
                                      (size_t)req->route_start, end, 1);
        out->num_rows = (int64_t)(end - (size_t)req->route_start);
    }
    return 0;
}
