/* meta.stack_contract (meta_priv.h): the later SkyRL stack's sample-support rules, asked of an
 * engine that speaks them (docs/reference/skyrl.md §10). */
#include <stdio.h>
#include <string.h>

#include "meta_priv.h"

#define NAME   "meta.stack_contract"
#define TOP_K  4 /* the support width a capture request asks for */
#define PROMPT 8

/* The answer's support against the rules: int32 [G, TOP_K], values >= -1, -1 only as trailing
 * padding, each row holding its sampled token. The client refuses most of this already (as
 * client.support_*); this judges what it let through, so the relation stands on its own. */
static void judge(sr_meta_ctx *x, const sr_client_result *res)
{
    const sr_ndarray *a = &res->support;
    if (a->ndim != 2 || a->shape[0] != (int64_t)res->n_tokens || a->shape[1] != TOP_K) {
        sr_meta_fail(x, NAME, -1, -1,
                     "a capture request with top_k %d got support of %d dimension(s), not "
                     "int32 [%zu, %d]",
                     TOP_K, a->ndim, res->n_tokens, TOP_K);
        return;
    }
    for (size_t g = 0; g < res->n_tokens; g++) {
        int pad = 0, member = 0, valid = 0;
        for (int j = 0; j < TOP_K; j++) {
            int64_t v = sr_ndarray_get_i64(a, g * TOP_K + (size_t)j);
            if (v < -1 || (v >= 0 && pad)) {
                sr_meta_fail(x, NAME, (int64_t)g, -1,
                             "support row %zu slot %d holds %lld: only trailing -1 padding may "
                             "follow the candidates",
                             g, j, (long long)v);
                return;
            }
            pad |= v == -1;
            valid += v >= 0;
            member |= v == res->token_ids[g];
        }
        if (valid && !member) {
            sr_meta_fail(x, NAME, (int64_t)g, -1,
                         "support row %zu does not hold its sampled token %d (the server "
                         "overwrites the weakest member with it)",
                         g, res->token_ids[g]);
            return;
        }
    }
}

/* One capture request over conn k; top_k <= 0 leaves it out. Returns the client's code. */
static int capture(sr_meta_ctx *x, sr_client_conn *k, int top_k, sr_client_result *res, sr_err *e)
{
    int32_t p[PROMPT];
    sr_meta_prompt(x, p, PROMPT);
    cJSON *sp = cJSON_CreateObject();
    if (!sp || !cJSON_AddNumberToObject(sp, "max_tokens", (double)x->o->max_tokens) ||
        !cJSON_AddNumberToObject(sp, "temperature", 0) ||
        (top_k > 0 && !cJSON_AddNumberToObject(sp, "top_k", top_k))) {
        cJSON_Delete(sp);
        return sr_err_set(e, SR_E_NOMEM, "cannot build sampling params");
    }
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = p;
    q.n_tokens = PROMPT;
    q.sampling_params = sp;
    q.return_routes = 1;
    q.prompt_start = 0;
    q.return_support = 1;
    x->st->requests++;
    int rc = sr_client_generate(res, k, &q, e);
    cJSON_Delete(sp);
    return rc;
}

/* The two requests: with top_k (support expected; its absence says the engine does not speak
 * the stack), then without (a 400 expected). */
static int ask(sr_meta_ctx *x, sr_client_conn *k)
{
    sr_client_result res;
    sr_err e = SR_ERR_INIT;
    int rc = capture(x, k, TOP_K, &res, &e);
    if (rc == SR_E_NOMEM)
        return rc;
    if (rc == SR_E_CLIENT_SUPPORT_MISSING || (!rc && !res.has_support)) {
        x->skipped |= 1u << sr_meta_index(NAME);
        sr_result_skip_check(x->sc, NAME,
                             "the engine did not answer a capture request "
                             "(return_sample_support, top_k 4) with rollout_sample_support: it "
                             "does not speak the later SkyRL stack");
        return 0;
    }
    if (rc) {
        sr_meta_fail(x, NAME, -1, -1, "a capture request with top_k %d: %s: %s", TOP_K,
                     sr_code_name(rc), e.msg);
        return 0;
    }
    judge(x, &res);
    if (!sr_meta_afford(x, NAME, 1))
        return 0;
    sr_err e2 = SR_ERR_INIT;
    rc = capture(x, k, 0, &res, &e2);
    if (rc == SR_E_NOMEM)
        return rc;
    if (!rc)
        sr_meta_fail(x, NAME, -1, -1,
                     "a capture request without top_k was answered (%zu tokens); the rule is "
                     "HTTP 400 (top_k > 1 required)",
                     res.n_tokens);
    else if (rc != SR_E_CLIENT_SUPPORT_TOP_K)
        sr_meta_fail(x, NAME, -1, -1,
                     "a capture request without top_k: %s, not the 400 of the rule: %s",
                     sr_code_name(rc), e2.msg);
    return 0;
}

int sr_meta_stack_contract(sr_meta_ctx *x, sr_err *err)
{
    if (!x->o->stack_client) {
        x->skipped |= 1u << sr_meta_index(NAME);
        sr_result_skip_check(x->sc, NAME,
                             x->o->no_stack ? x->o->no_stack
                                            : "no client of the later SkyRL stack (skyrl only)");
        return 0;
    }
    if (!sr_meta_afford(x, NAME, 1))
        return 0;
    sr_client_conn *k = NULL;
    int rc = sr_client_conn_new(&k, x->o->stack_client, err);
    if (rc)
        return rc;
    rc = ask(x, k);
    sr_client_conn_free(k);
    return rc == SR_E_NOMEM ? sr_err_set(err, rc, "meta: out of memory in a capture request") : rc;
}
