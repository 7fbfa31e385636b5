/* The rollout verifier: tokens, logprobs and route rows against the oracle (verify.h). */
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_oracle.h"
#include "verify_priv.h"

static int verify_tokens(sr_verify_rv *x, int64_t *verified)
{
    const sr_rollout_result *r = x->r;
    int64_t P0 = (int64_t)r->prompt_len;
    int64_t last = -1, gver = -1;
    uint64_t g = 0;
    /* The single-turn template's synthetic EOS is the agent loop's, not the engine's. */
    if (!x->ctx->multi_turn && r->response_len > 0)
        last = (int64_t)r->response_len - 1;
    for (int64_t j = 0; j < (int64_t)r->response_len; j++) {
        if (!r->loss_mask[j] || j == last)
            continue;
        int64_t q = P0 + j, ver = sr_verify_row_version(x, q - 1);
        char d[256];
        if (ver < 0) {
            snprintf(d, sizeof(d), "no weight version is known for the pass that sampled it");
            return sr_verify_record(x, "trace.version_unknown", NULL, sr_verify_turn_of(r, q), q,
                                    -1, d);
        }
        /* The global fingerprint is looked up (under the verifier's lock) once per version. */
        if (ver != gver) {
            int rc = sr_verifier_fingerprints(&g, NULL, x->v, ver, x->err);
            if (rc)
                return rc;
            gver = ver;
        }
        int32_t tok;
        double lp;
        sr_oracle_next(&tok, &lp, sr_verifier_oracle(x->v), g, x->h[q - 1]);
        if (!isfinite(lp))
            lp = SR_VERIFY_CLAMPED_LOGPROB;
        (*verified)++;
        if (tok != x->tok[q]) {
            snprintf(d, sizeof(d), "token %d differs from the oracle's %d (weight version %lld)",
                     x->tok[q], tok, (long long)ver);
            return sr_verify_record(x, "trace.token_mismatch", NULL, sr_verify_turn_of(r, q), q, -1,
                                    d);
        }
        if (r->logprobs && r->logprobs[j] != lp) {
            snprintf(d, sizeof(d), "logprob %.17g differs from the oracle's %.17g", r->logprobs[j],
                     lp);
            return sr_verify_record(x, "trace.logprob_mismatch", NULL, sr_verify_turn_of(r, q), q,
                                    -1, d);
        }
    }
    return 0;
}

static int fire_turn(void *ctx, const char *name, int64_t turn, const char *detail)
{
    return sr_verify_record(ctx, name, NULL, turn, -1, -1, detail);
}

static int failed_rollout(sr_verify_rv *x)
{
    const sr_rollout_result *r = x->r;
    const char *name = sr_code_name(r->code);
    int64_t row = r->code == SR_E_TRACE_MISSING_ROUTE ? r->err.offset : -1;
    return sr_verify_record(x, name ? name : "internal.bug", NULL,
                            r->failed_turn > 0 ? r->failed_turn : -1, row, -1, r->err.msg);
}

static int setup(sr_verify_rv *x)
{
    const sr_rollout_result *r = x->r;
    x->T = (int64_t)(r->prompt_len + r->response_len);
    x->tok = malloc((size_t)(x->T ? x->T : 1) * sizeof(int32_t));
    x->h = malloc((size_t)(x->T ? x->T : 1) * sizeof(uint64_t));
    if (!x->tok || !x->h)
        return sr_err_set(x->err, SR_E_NOMEM, "cannot allocate the verifier's buffers");
    memcpy(x->tok, r->prompt_ids, r->prompt_len * sizeof(int32_t));
    memcpy(x->tok + r->prompt_len, r->response_ids, r->response_len * sizeof(int32_t));
    x->C = sr_verify_captured_rows(r);
    if (r->routes.ndim == 3) {
        x->L = (int)r->routes.shape[1];
        x->K = (int)r->routes.shape[2];
        if (x->C > r->routes.shape[0])
            x->C = r->routes.shape[0];
    }
    if (x->v && x->T > 0) {
        uint64_t h = sr_oracle_prefix_empty(sr_verifier_oracle(x->v));
        for (int64_t i = 0; i < x->T; i++)
            x->h[i] = h = sr_oracle_prefix_push(h, x->tok[i]);
    }
    return 0;
}

int sr_verify_rollout(int *ok, sr_verifier *v, const sr_rollout_result *r, int64_t sample,
                      const sr_verify_ctx *ctx, sr_err *err)
{
    return sr_verify_rollout_fired(ok, v, r, sample, ctx, NULL, err);
}

int sr_verify_rollout_fired(int *ok, sr_verifier *v, const sr_rollout_result *r, int64_t sample,
                            const sr_verify_ctx *ctx, sr_verify_fired *fired, sr_err *err)
{
    sr_verify_rv x = {v, r, ctx, sample, NULL, 0, 0, NULL, 0, 0, 1, err, fired, NULL};
    if (fired)
        fired->n = 0;
    int rc = 0;
    *ok = 1;
    if (r->code) {
        rc = failed_rollout(&x);
        *ok = 0;
        return rc;
    }
    rc = setup(&x);
    if (!rc)
        rc = sr_verify_turn_log(r, fire_turn, &x);
    int routes = r->routes.ndim == 3 && x.K > 0;
    int64_t toks = 0, rows = 0;
    const sr_oracle_model *m = v ? sr_oracle_model_of(sr_verifier_oracle(v)) : NULL;
    if (!rc && routes && m && (x.L != m->num_layers || x.K != m->topk)) {
        char d[160];
        snprintf(d, sizeof(d), "routes are [%d layers, top-%d], the model has [%d, %d]", x.L, x.K,
                 m->num_layers, m->topk);
        rc = sr_verify_record(&x, "trace.row_mismatch", sr_row_class_name(SR_ROW_UNCLASSIFIED), -1,
                              -1, -1, d);
        routes = 0;
    }
    if (!rc && v)
        rc = verify_tokens(&x, &toks);
    if (!rc && v && routes)
        rc = sr_verify_rows(&x, &rows);
    if (!rc && !v) {
        const char *why = "external engines (engines.urls): the oracle's model is unknown";
        rc = sr_result_skip_check(ctx->res, "trace.token_mismatch", why);
        if (!rc)
            rc = sr_result_skip_check(ctx->res, "trace.logprob_mismatch", why);
        if (!rc)
            rc = sr_result_skip_check(ctx->res, "trace.row_mismatch", why);
    }
    if (!rc && routes)
        rc = sr_verify_valid(&x);
    if (!rc && routes)
        rc = sr_verify_padding(&x);
    sr_counters c;
    memset(&c, 0, sizeof(c));
    c.tokens_verified = toks;
    c.rows_verified = rows;
    sr_result_count(ctx->res, &c);
    free(x.tok);
    free(x.h);
    free(x.match);
    *ok = x.ok;
    return rc;
}
