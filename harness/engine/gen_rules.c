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
 * The rows stale and weight_version copy from, for every row the reply holds: as the weights in
 * j->prev compute them (NULL for the other actions, and when the engine has no such weights:
 * nothing to be stale against). Shift's copy of the rows as held is made by sr_route_rule_apply.
 */
static int source_rows(unsigned char **out, sr_gen_job *j, const sr_oracle *o,
                       const sr_route_rule *r, sr_err *err)
{
    size_t bytes = (size_t)(j->row_hi - j->row_lo) * sr_gen_row_bytes(j, o);
    *out = NULL;
    if ((r->act != SR_RA_STALE && r->act != SR_RA_WEIGHT_VERSION) || !j->has_prev)
        return 0;
    *out = malloc(bytes ? bytes : 1);
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes of routes", bytes);
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

/* truncate with partial, mark_partial: the tokens are cut too (the rows follow them). */
static void truncate_partial(sr_gen_job *j, const sr_route_rule *r, int *routes_null)
{
    /* Aborted before its first token: no forward pass, no rows (vllm-project/vime#49). */
    sr_gen_abort(j, r->tokens);
    *routes_null |= r->tokens == 0;
}

int sr_gen_apply_rule(sr_gen_job *j, const sr_oracle *o, const sr_route_rule *r, int *routes_null,
                      sr_err *err)
{
    const sr_oracle_model *m = sr_oracle_model_of(o);
    switch (r->act) {
    case SR_RA_NULL:
        *routes_null = 1;
        return 0;
    case SR_RA_APPEND_LAST:
        return sr_gen_add_last_row(j, o, err);
    case SR_RA_TRUNCATE:
    case SR_RA_MARK_PARTIAL:
        if (r->partial || r->act == SR_RA_MARK_PARTIAL) {
            truncate_partial(j, r, routes_null);
            return 0;
        }
        break;
    default:
        break;
    }
    /* The array itself is acted on by the code the proxy shares (spec/fault_apply.c). */
    sr_route_block b = {j->routes,
                        j->gen_dtype,
                        j->row_lo,
                        j->row_hi,
                        (size_t)m->num_layers,
                        (size_t)m->topk,
                        (int64_t)j->req.P,
                        j->req.has_route_start ? j->req.route_start : 0};
    unsigned char *src = NULL;
    int rc = source_rows(&src, j, o, r, err);
    if (!rc)
        rc = sr_route_rule_apply(&b, r, src, err);
    free(src);
    j->row_hi = b.hi;
    return rc;
}
