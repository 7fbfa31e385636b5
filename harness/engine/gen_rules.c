/*
 * The route-fault grammar applied to a job's rows (spec/fault_grammar.h): the one place the
 * engine acts on a rule, for the kind "routes" and for every kind that is an alias of a rule.
 * It runs only when the request's model fault has a rule, so a plan without one costs nothing
 * here.
 */
#include <stdlib.h>
#include <string.h>

#include "gen_priv.h"

/* Every generated and prompt token, for rows past the prompt. */
static int32_t *all_tokens(const sr_gen_job *j, size_t *n)
{
    *n = j->req.P + (size_t)j->G;
    int32_t *all = malloc((*n ? *n : 1) * sizeof(*all));
    if (!all)
        return NULL;
    memcpy(all, j->req.tokens, j->req.P * sizeof(*all));
    memcpy(all + j->req.P, j->tokens, (size_t)j->G * sizeof(*all));
    return all;
}

/*
 * The rows the action copies from, for every row the reply holds (NULL: the action writes
 * values, not rows): the rows as held (shift), or as the weights in j->prev compute them (stale,
 * weight_version; NULL as well when the engine has no such weights: nothing to be stale against).
 */
static int source_rows(unsigned char **out, sr_gen_job *j, const sr_oracle *o,
                       const sr_route_rule *r, sr_err *err)
{
    size_t bytes = (size_t)(j->row_hi - j->row_lo) * sr_gen_row_bytes(j, o);
    *out = NULL;
    if (r->act != SR_RA_SHIFT && r->act != SR_RA_STALE && r->act != SR_RA_WEIGHT_VERSION)
        return 0;
    if (r->act != SR_RA_SHIFT && !j->has_prev)
        return 0;
    *out = malloc(bytes ? bytes : 1);
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes of routes", bytes);
    if (r->act == SR_RA_SHIFT) {
        memcpy(*out, j->routes, bytes);
        return 0;
    }
    size_t n = 0;
    int32_t *all = all_tokens(j, &n);
    int rc =
        all ? sr_oracle_routes(*out, bytes ? bytes : 1, NULL, j->gen_dtype, o, j->prev.layer_fps,
                               all, n, (size_t)j->row_lo, (size_t)j->row_hi, err)
            : sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu tokens", n);
    free(all);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* The selected layers of row `row` (position p) get the action. */
static void act_on_row(sr_gen_job *j, const sr_route_rule *r, const unsigned char *src, int64_t p,
                       size_t L, size_t K, size_t rb)
{
    size_t es = sr_dtype_size(j->gen_dtype);
    unsigned char *row = j->routes + (size_t)(p - j->row_lo) * rb;
    const unsigned char *from = NULL;
    if (r->act == SR_RA_REPEAT_PREVIOUS && p - 1 >= j->row_lo)
        from = row - rb;
    else if (r->act == SR_RA_SHIFT && src && p - r->k >= j->row_lo && p - r->k < j->row_hi)
        from = src + (size_t)(p - r->k - j->row_lo) * rb;
    else if ((r->act == SR_RA_STALE || r->act == SR_RA_WEIGHT_VERSION) && src)
        from = src + (size_t)(p - j->row_lo) * rb;
    if (r->act == SR_RA_SWAP_LAYERS) {
        size_t a = (size_t)r->swap[0], b = (size_t)r->swap[1];
        unsigned char tmp[4 * 64];
        if (a >= L || b >= L || K * es > sizeof(tmp))
            return;
        memcpy(tmp, row + a * K * es, K * es);
        memcpy(row + a * K * es, row + b * K * es, K * es);
        memcpy(row + b * K * es, tmp, K * es);
        return;
    }
    int64_t start = j->req.has_route_start ? j->req.route_start : 0;
    for (size_t l = 0; l < L; l++) {
        if (!sr_route_rule_covers(r, p, (int64_t)j->req.P, start, (int64_t)l))
            continue;
        if (from)
            memcpy(row + l * K * es, from + l * K * es, K * es);
        else if (r->act == SR_RA_ZERO || r->act == SR_RA_CONSTANT)
            for (size_t k = 0; k < K; k++)
                sr_gen_set_el(row, j->gen_dtype, l * K + k, r->act == SR_RA_ZERO ? 0 : r->value);
    }
}

static void truncate_rows(sr_gen_job *j, const sr_route_rule *r, int *routes_null)
{
    if (r->partial) {
        /* Aborted before its first token: no forward pass, no rows (vllm-project/vime#49). */
        sr_gen_abort(j, r->tokens);
        *routes_null |= r->tokens == 0;
        return;
    }
    /* Rows for the first `tokens` generated tokens: positions up to P + tokens - 1. */
    int64_t hi = (int64_t)j->req.P + r->tokens - 1;
    if (hi < j->row_lo)
        hi = j->row_lo;
    if (hi < j->row_hi)
        j->row_hi = hi;
}

int sr_gen_apply_rule(sr_gen_job *j, const sr_oracle *o, const sr_route_rule *r, int *routes_null,
                      sr_err *err)
{
    const sr_oracle_model *m = sr_oracle_model_of(o);
    size_t L = (size_t)m->num_layers, K = (size_t)m->topk, rb = sr_gen_row_bytes(j, o);
    int64_t rows = j->row_hi - j->row_lo;
    switch (r->act) {
    case SR_RA_NULL:
        *routes_null = 1;
        return 0;
    case SR_RA_APPEND_LAST:
        return sr_gen_add_last_row(j, o, err);
    case SR_RA_DROP_LAST:
        j->row_hi -= rows > 0;
        return 0;
    case SR_RA_DROP_FIRST:
        if (rows > 0) {
            memmove(j->routes, j->routes + rb, (size_t)(rows - 1) * rb);
            j->row_hi--;
        }
        return 0;
    case SR_RA_TRUNCATE:
    case SR_RA_MARK_PARTIAL:
        truncate_rows(j, r, routes_null);
        return 0;
    default:
        break;
    }
    unsigned char *src = NULL;
    int rc = source_rows(&src, j, o, r, err);
    int64_t start = j->req.has_route_start ? j->req.route_start : 0;
    for (int64_t p = j->row_lo; !rc && p < j->row_hi; p++)
        if (sr_route_rule_covers(r, p, (int64_t)j->req.P, start, -1))
            act_on_row(j, r, src, p, L, K, rb);
    free(src);
    return rc;
}
