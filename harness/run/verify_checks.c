/* Captured rows and the collation checks (verify_checks.h). */
#include "verify_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what both verifications share ---- */

int64_t sr_verify_captured_rows(const sr_rollout_result *r)
{
    for (int k = r->n_turns - 1; k >= 0; k--)
        if (r->turns[k].generated > 0)
            return r->turns[k].prompt_len + r->turns[k].generated - 1;
    return 0;
}

int sr_verify_turn_log(const sr_rollout_result *r, sr_verify_turn_fire fire, void *ctx)
{
    char d[240];
    for (int k = 0; !r->code && k < r->n_turns; k++) {
        const sr_rollout_turn *t = &r->turns[k];
        int rc = 0;
        if (strcmp(t->finish_reason, "abort") == 0) {
            snprintf(d, sizeof(d),
                     "turn committed as finished although the engine answered finish_reason "
                     "\"abort\" after %lld token%s (a partial turn)",
                     (long long)t->generated, t->generated == 1 ? "" : "s");
            rc = fire(ctx, "client.aborted_turn", k + 1, d);
        }
        /* A stamp read at dispatch is never newer than the pass: the trainer declares a version
         * only once every engine holds it (runner_steps.c). */
        if (!rc && t->generated > 0 && t->stamp_version >= 0 && t->first_version >= 0 &&
            t->stamp_version > t->first_version) {
            snprintf(d, sizeof(d),
                     "version mismatch: the turn is stamped with weight version %lld but the "
                     "engine sampled its first token with version %lld (the sample claims to "
                     "be %lld version(s) fresher than it is)",
                     (long long)t->stamp_version, (long long)t->first_version,
                     (long long)(t->stamp_version - t->first_version));
            rc = fire(ctx, "trace.version_stamp", k + 1, d);
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- collation ---- */

static int64_t elem(const void *data, sr_dtype dt, size_t i)
{
    switch (dt) {
    case SR_DTYPE_UINT8:
        return ((const uint8_t *)data)[i];
    case SR_DTYPE_INT16:
        return ((const int16_t *)data)[i];
    case SR_DTYPE_INT32:
        return ((const int32_t *)data)[i];
    default:
        return INT64_MIN;
    }
}

/* First failure of one check within one sample, and how many columns failed it. */
typedef struct tally {
    int64_t count, col;
    char detail[160];
} tally;

static void note(tally *t, int64_t col, const char *detail)
{
    if (t->count++ == 0) {
        t->col = col;
        snprintf(t->detail, sizeof(t->detail), "%s", detail);
    }
}

/* Compares batch row (b, c) with the sample's row r, or with the padding row when r < 0. */
static int row_equal(const sr_collate_result *cr, int64_t b, int64_t c, const sr_ndarray *rt,
                     int64_t r)
{
    int64_t L = cr->routes.shape[2], K = cr->routes.shape[3];
    size_t base = (size_t)((b * cr->t_max + c) * L * K);
    for (int64_t l = 0; l < L; l++)
        for (int64_t k = 0; k < K; k++) {
            int64_t got = elem(cr->routes.data, cr->routes.dtype, base + (size_t)(l * K + k));
            int64_t want = r < 0 ? k : elem(rt->data, rt->dtype, (size_t)((r * L + l) * K + k));
            if (got != want)
                return 0;
        }
    return 1;
}

static int report(const sr_verify_ctx *ctx, const char *name, const tally *t, int64_t b,
                  int64_t sample)
{
    sr_check_where w = SR_CHECK_WHERE_NONE;
    w.step = ctx->step;
    w.sample = sample;
    w.row = t->col;
    return sr_result_check(ctx->res, name, NULL, &w,
                           "scenario %s step %s: batch row %lld (sample %lld) column %lld: %s "
                           "(%lld column(s) in this row)",
                           ctx->scenario, ctx->step_name, (long long)b, (long long)sample,
                           (long long)t->col, t->detail, (long long)t->count);
}

static int verify_sample(int *ok, const sr_collate_result *cr, const sr_rollout_result *r,
                         int64_t b, int64_t sample, const sr_verify_ctx *ctx)
{
    int64_t real = (int64_t)(r->prompt_len + r->response_len);
    int64_t pad = cr->t_max - real, cap = sr_verify_captured_rows(r);
    const uint8_t *mask = (const uint8_t *)cr->padding_mask.data + b * cr->t_max;
    tally al = {0, 0, ""}, pr = {0, 0, ""}, pm = {0, 0, ""};
    char d[160];
    for (int64_t c = 0; c < cr->t_max; c++) {
        int captured = c >= pad && c < pad + cap;
        if (captured && !row_equal(cr, b, c, &r->routes, c - pad)) {
            snprintf(d, sizeof(d), "differs from the sample's route row %ld", (long)(c - pad));
            note(&al, c, d);
        } else if (!captured && !row_equal(cr, b, c, NULL, -1)) {
            snprintf(d, sizeof(d), "is not the padding row 0..K-1");
            note(&pr, c, d);
        }
        if ((mask[c] != 0) == captured) {
            snprintf(d, sizeof(d), "mask is %d but the column is %s", mask[c] != 0,
                     captured ? "a captured route row" : "padding (not captured)");
            note(&pm, c, d);
        }
    }
    int rc = 0;
    if (al.count)
        rc = report(ctx, "collate.alignment", &al, b, sample);
    if (!rc && pr.count)
        rc = report(ctx, "collate.padding_rows", &pr, b, sample);
    if (!rc && pm.count)
        rc = report(ctx, "collate.padding_mask", &pm, b, sample);
    if (al.count || pr.count || pm.count)
        *ok = 0;
    return rc;
}

int sr_verify_collation(int *ok, const sr_collate_result *c,
                        const sr_rollout_result *const *samples, const int64_t *sample_ids,
                        size_t n, const sr_verify_ctx *ctx, sr_err *err)
{
    *ok = 1;
    if (c->routes.ndim != 4 || c->padding_mask.ndim != 2 || c->routes.shape[0] != (int64_t)n)
        return sr_err_set(err, SR_E_INTERNAL, "collation result has an unexpected shape");
    for (size_t b = 0; b < n; b++) {
        int rc = verify_sample(ok, c, samples[b], (int64_t)b, sample_ids[b], ctx);
        if (rc)
            return sr_err_set(err, rc, "cannot record a collation check");
    }
    return 0;
}
