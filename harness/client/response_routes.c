/*
 * The routes of a dialect's spliced response (response.c reads the rest of its frame): found where
 * the wire puts them, checked against the model's layers and top_k, re-assembled where a wire
 * splits or omits rows, and mapped to the rows skyrl's wire carries for the same request. The two
 * helpers both files use (sr_client_grow, sr_client_entry_for) live here so that calls between
 * the two go one way only.
 */
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"

int sr_client_grow(void **p, size_t *cap, size_t need, size_t item, sr_err *err)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * item);
    if (!q)
        return sr_err_set(err, SR_E_NOMEM, "client: cannot allocate %zu response entries", n);
    *p = q;
    *cap = n;
    return 0;
}

const sr_splice_entry *sr_client_entry_for(const sr_splice_result *r, const cJSON *node)
{
    for (size_t i = 0; node && i < r->count; i++)
        if (r->entries[i].node == node)
            return &r->entries[i];
    return NULL;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* Where a wire's routes are, from its frame: the choice, the choice's message, SGLang's
 * meta_info, or Dynamo's nvext.engine_data (one row per encoding, as the engine writes them). */
static const cJSON *routes_node(const sr_dialect_desc *d, const sr_dialect_route *rt,
                                const cJSON *doc, const cJSON *c0, const char *key)
{
    if (rt->routes_ext)
        return get(get(doc, rt->routes_ext), key);
    switch (d->encoding) {
    case SR_ENC_FLAT_B64:
        return get(get(doc, "meta_info"), key);
    case SR_ENC_OBJECT:
        return get(get(get(doc, "nvext"), "engine_data"), key);
    case SR_ENC_NRLRE:
        return get(get(c0, "message"), key);
    default:
        return get(c0, key);
    }
}

/* Room for n bytes of re-assembled routes in the conn. */
static int rows_room(sr_client_conn *k, size_t n, sr_err *err)
{
    return sr_client_grow((void **)&k->rows, &k->rows_cap, n ? n : 1, 1, err);
}

/* Checks a [R, L, K] route array against the model's layers and top_k (when known). */
static int check_cell(const sr_client_opts *o, const sr_ndarray *a, const char *what, sr_err *err)
{
    if (a->ndim != 3)
        return sr_err_set(err, SR_E_WIRE_SHAPE, "%s has %d dimensions, not [rows, layers, top_k]",
                          what, a->ndim);
    if (a->shape[0] && ((o->route_layers && a->shape[1] != o->route_layers) ||
                        (o->route_topk && a->shape[2] != o->route_topk)))
        return sr_err_set(err, SR_E_WIRE_SHAPE,
                          "%s is [%lld, %lld, %lld]; the model has %lld layers and top_k %lld",
                          what, (long long)a->shape[0], (long long)a->shape[1],
                          (long long)a->shape[2], (long long)o->route_layers,
                          (long long)o->route_topk);
    return 0;
}

/* vLLM 0.21: prompt_routed_experts [P, L, K] then the choice's [G, L, K] as one int32 array of
 * P + G rows (the last, the pass on the last sampled token, is dropped by the caller). */
static int join_split(sr_ndarray *out, sr_client_conn *k, const sr_ndarray *p, const sr_ndarray *g,
                      const sr_client_opts *o, sr_err *err)
{
    int rc = check_cell(o, p, "prompt_routed_experts", err);
    if (!rc)
        rc = check_cell(o, g, "choices[0].routed_experts", err);
    if (rc)
        return rc;
    const sr_ndarray *shape = g->shape[0] ? g : p;
    if (p->shape[0] && g->shape[0] && (p->shape[1] != g->shape[1] || p->shape[2] != g->shape[2]))
        return sr_err_set(err, SR_E_WIRE_SHAPE,
                          "prompt_routed_experts rows are [%lld, %lld], the choice's [%lld, %lld]",
                          (long long)p->shape[1], (long long)p->shape[2], (long long)g->shape[1],
                          (long long)g->shape[2]);
    size_t cell = (size_t)(shape->shape[1] * shape->shape[2]);
    size_t n = (size_t)(p->shape[0] + g->shape[0]) * cell;
    if ((rc = rows_room(k, n * 4, err)))
        return rc;
    int32_t *dst = (int32_t *)k->rows;
    for (size_t i = 0; i < (size_t)p->shape[0] * cell; i++)
        *dst++ = (int32_t)sr_ndarray_get_i64(p, i);
    for (size_t i = 0; i < (size_t)g->shape[0] * cell; i++)
        *dst++ = (int32_t)sr_ndarray_get_i64(g, i);
    *out = *shape;
    out->dtype = SR_DTYPE_INT32;
    out->shape[0] = p->shape[0] + g->shape[0];
    out->data = k->rows;
    out->nbytes = n * 4;
    out->owned = 0;
    return 0;
}

/* The wire's route array as it came, [R, L, K], and the oracle row its first row is. */
static int wire_routes(sr_ndarray *a, int64_t *first_row, sr_client_result *out, sr_client_conn *k,
                       const sr_splice_result *r, const cJSON *c0, const sr_dialect_desc *d,
                       sr_err *err)
{
    const sr_client_opts *o = &k->c->opts;
    const sr_dialect_route *rt = &d->routes[o->dialect_route];
    const sr_splice_entry *e =
        sr_client_entry_for(r, routes_node(d, rt, r->doc, c0, "routed_experts"));
    if (!e || e->kind == SR_SPLICE_NULL)
        return sr_err_set(err, SR_E_CLIENT_ROUTES_MISSING, "%s must return routes at %s%s (got %s)",
                          d->name, rt->routes_ext ? rt->routes_ext : d->routes_at,
                          rt->routes_ext ? ".routed_experts" : "",
                          e ? "null" : "no routed_experts key");
    *a = e->array;
    /* A wire with a start begins at the start the request carried; one without, at row 0. */
    *first_row = d->routes[o->dialect_route].request.start_key && out->prompt_start_sent >= 0
                     ? out->prompt_start_sent
                     : 0;
    if (d->rows == SR_ROWS_SPLIT) {
        const sr_splice_entry *pe = sr_client_entry_for(r, get(r->doc, "prompt_routed_experts"));
        if (!pe || pe->kind == SR_SPLICE_NULL)
            return sr_err_set(err, SR_E_CLIENT_ROUTES_MISSING,
                              "vllm-json must return prompt_routed_experts beside the choice's "
                              "routed_experts");
        return join_split(a, k, &pe->array, &e->array, o, err);
    }
    if (o->quirks.npy_assume_uint8 && d->encoding == SR_ENC_NPY && a->dtype != SR_DTYPE_UINT8) {
        /* The defect: np.frombuffer(raw[header:], np.uint8).reshape(-1, L, K). */
        a->shape[0] *= (int64_t)sr_dtype_size(a->dtype);
        a->dtype = SR_DTYPE_UINT8;
    }
    if (o->quirks.sglang_rows_from_zero && d->encoding == SR_ENC_FLAT_B64)
        *first_row = 0; /* the defect: the rows taken as [0, ...), not [start, ...) */
    if (d->encoding == SR_ENC_FLAT_B64) {
        /* SGLang: flat int32, the client reshapes (-1, layers, top_k). */
        int64_t cell = o->route_layers * o->route_topk;
        if (!cell || a->shape[0] % cell)
            return sr_err_set(err, SR_E_WIRE_SHAPE,
                              "%s%s holds %lld values, not rows of %lld layers x top_k %lld",
                              rt->routes_ext ? rt->routes_ext : d->routes_at,
                              rt->routes_ext ? ".routed_experts" : "", (long long)a->shape[0],
                              (long long)o->route_layers, (long long)o->route_topk);
        a->ndim = 3;
        a->shape[1] = o->route_layers;
        a->shape[2] = o->route_topk;
        a->shape[0] /= cell;
    }
    if (d->encoding == SR_ENC_OBJECT) {
        /* Dynamo names the first row it kept: it must be the start the request asked for. */
        const cJSON *st = get(e->sidecar, "start");
        if (!cJSON_IsNumber(st) || st->valuedouble != (double)*first_row)
            return sr_err_set(err, SR_E_WIRE_SHAPE,
                              "nvext.engine_data.routed_experts.start is %s; the request's start "
                              "was %lld",
                              cJSON_IsNumber(st) ? "another row" : "missing",
                              (long long)*first_row);
    }
    return check_cell(o, a, d->routes_at, err);
}

/*
 * vllm#57025's omission: the rows end at P + G - 1, so they begin at P + G - 1 - rows. The
 * engine starts at max(start sent, num_cached_tokens) with num_cached_tokens <= P - 1, and the
 * caller can fill only the rows it holds (up to `want`) from its earlier turns.
 */
static int omitted_first(int64_t *first, const sr_client_result *out, const sr_client_req *req,
                         int64_t rows, int64_t want, sr_err *err)
{
    int64_t P = (int64_t)req->n_tokens, G = (int64_t)out->n_tokens;
    int64_t f = P + G - 1 - rows, sent = out->prompt_start_sent > 0 ? out->prompt_start_sent : 0;
    const char *why = f < sent    ? "before the start the request sent"
                      : f > P - 1 ? "past the last prompt token, which is always recomputed"
                      : f > want  ? "past the rows the caller holds from its earlier turns (a "
                                    "preempted request re-admitted, or an earlier attempt of "
                                    "this turn the engine cached and the caller never received)"
                                  : NULL;
    if (why)
        return sr_err_set(err, SR_E_CLIENT_OMITTED_START,
                          "with prefix omission the %lld route rows of a %lld-token prompt and "
                          "%lld generated tokens begin at row %lld, %s (start sent %lld, rows "
                          "held %lld): rows [%lld, %lld) can come from nowhere",
                          (long long)rows, (long long)P, (long long)G, (long long)f, why,
                          (long long)sent, (long long)want, (long long)(want < f ? want : f),
                          (long long)(want < f ? f : want));
    *first = f;
    return 0;
}

/* Maps the wire's rows to the ones skyrl's wire carries: [want, P + G - 1) of the oracle. */
static int to_oracle_rows(sr_client_result *out, const sr_client_req *req, sr_ndarray *a,
                          int64_t first_row, const sr_dialect_desc *d, int no_start,
                          int quirk_from_zero, int omit, sr_err *err)
{
    int rc;
    int64_t rows = a->shape[0];
    /* NeMo-RL appends one filler row, vLLM 0.21 the pass on the last sampled token. */
    if ((d->rows == SR_ROWS_FILLER || d->rows == SR_ROWS_SPLIT) && rows > 0)
        rows--;
    int64_t want = req->prompt_start >= 0 && !no_start ? req->prompt_start : 0;
    if (omit && (rc = omitted_first(&first_row, out, req, rows, want, err)))
        return rc;
    /* The defect slices its rows as numpy does: past the end is empty, not an error. */
    if (quirk_from_zero && want - first_row > rows)
        want = first_row + rows;
    if (want < first_row || want - first_row > rows)
        return sr_err_set(err, SR_E_WIRE_SHAPE,
                          "%s routes begin at row %lld with %lld rows; row %lld was asked for",
                          d->name, (long long)first_row, (long long)rows, (long long)want);
    size_t cell = (size_t)(a->shape[1] * a->shape[2]) * sr_dtype_size(a->dtype);
    size_t skip = (size_t)(want - first_row);
    out->routes = *a;
    out->routes.shape[0] = rows - (int64_t)skip;
    out->routes.data = a->data ? (unsigned char *)a->data + skip * cell : NULL;
    out->routes.nbytes = (size_t)out->routes.shape[0] * cell;
    out->routes.owned = 0;
    out->has_routes = 1;
    return 0;
}

/*
 * sglang#36404: masked padding rows hold -1 in every layer and slot, at prompt positions
 * p >= chunk with p % chunk < rows (scenarios/FORMAT.md §5b). Any other negative value keeps its
 * name, routes.negative. The rows are SGLang's int32, mapped to [first, P + G - 1).
 */
static int check_masked(const sr_client_result *out, const sr_client_req *req, int64_t first,
                        int64_t chunk, int64_t keep, sr_err *err)
{
    const sr_ndarray *a = &out->routes;
    size_t cell = (size_t)(a->shape[1] * a->shape[2]);
    const int32_t *v = a->data;
    for (int64_t r = 0; v && r < a->shape[0]; r++) {
        const int32_t *row = v + (size_t)r * cell;
        size_t neg = 0;
        for (size_t i = 0; i < cell; i++)
            neg += row[i] < 0;
        int64_t p = first + r;
        int in_region = p < (int64_t)req->n_tokens && p >= chunk && p % chunk < keep;
        int whole = neg == cell;
        for (size_t i = 0; whole && i < cell; i++)
            whole = row[i] == -1;
        if (neg && !(whole && in_region))
            return sr_err_set(err, SR_E_ROUTES_NEGATIVE,
                              "routed expert indices must be non-negative: row %lld holds %zu "
                              "negative values, and SGLang's masked padding (sglang#36404) is a "
                              "whole row of -1 at a prompt position p >= %lld with p %% %lld < "
                              "%lld",
                              (long long)p, neg, (long long)chunk, (long long)chunk,
                              (long long)keep);
    }
    return 0;
}

int sr_client_dialect_routes(sr_client_result *out, sr_client_conn *k, const sr_splice_result *r,
                             const cJSON *c0, const sr_client_req *req, sr_err *err)
{
    const sr_client_opts *o = &k->c->opts;
    const sr_dialect_desc *d = sr_dialect_get(o->dialect);
    sr_ndarray a;
    int64_t first_row = 0;
    int rc = wire_routes(&a, &first_row, out, k, r, c0, d, err);
    if (!rc)
        rc = to_oracle_rows(out, req, &a, first_row, d, o->quirks.no_prompt_start,
                            o->quirks.sglang_rows_from_zero,
                            o->omit_prefix && d->encoding == SR_ENC_NPY, err);
    /* Off, nothing is scanned: a -1 meets the trace's routes.negative as before. */
    if (!rc && o->mask_chunk > 0 && d->encoding == SR_ENC_FLAT_B64 &&
        out->routes.dtype == SR_DTYPE_INT32)
        rc = check_masked(
            out, req, req->prompt_start >= 0 && !o->quirks.no_prompt_start ? req->prompt_start : 0,
            o->mask_chunk, o->mask_rows, err);
    return rc;
}
