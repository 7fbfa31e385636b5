/*
 * The sampled tokens' logprobs as every dialect writes them (gen_priv.h): clamped as the
 * reference's ordinary path clamps a non-finite one (docs/reference/skyrl.md §1.6), or changed by
 * a route-fault rule on the field logprobs (spec/fault_grammar.h), the one place the engine acts
 * on such a rule. A request whose model fault has no such rule pays one pointer test per value.
 */
#include <math.h>

#include "gen_priv.h"
#include "jsonw.h"

/* generate_wire.py's CLAMPED_LOGPROB (skyrl.md §1.6). */
#define CLAMPED_LOGPROB -9999.0

double sr_gen_logprob_at(sr_gen_job *j, int64_t i)
{
    double v = j->logprobs[i];
    if (!isfinite(v)) {
        v = CLAMPED_LOGPROB;
        j->clamped++;
    }
    return v;
}

/* The job's rule on the logprobs field, or NULL. */
static const sr_route_rule *logprobs_rule(const sr_gen_job *j)
{
    const sr_fault *f = j->model_fault;
    return f && f->rule.active && f->rule.field == SR_RF_LOGPROBS ? &f->rule : NULL;
}

int sr_gen_logprobs_dropped(const sr_gen_job *j)
{
    const sr_route_rule *r = logprobs_rule(j);
    return r && r->act == SR_RA_DROP;
}

int sr_gen_put_logprob(sr_buf *b, sr_gen_job *j, int64_t i, sr_err *err)
{
    const sr_route_rule *r = logprobs_rule(j);
    int64_t P = (int64_t)j->req.P, start = j->req.has_route_start ? j->req.route_start : 0;
    /* Action null: the clamp is missing where the selection holds, and the serialiser writes a
     * non-finite value as null (orjson's form of NaN and the infinities). */
    if (r && r->act == SR_RA_NULL && !isfinite(j->logprobs[i]) &&
        sr_route_rule_covers(r, P + i, P, start, -1))
        return sr_buf_puts(b, "null", err);
    return sr_jw_double(b, sr_gen_logprob_at(j, i), err);
}

int sr_gen_put_logprobs(sr_buf *b, sr_gen_job *j, sr_err *err)
{
    int rc = sr_buf_reserve(b, (size_t)j->G * 40 + 32, err);
    if (!rc)
        rc = sr_buf_puts(b, ",\"logprobs\":{\"content\":[", err);
    for (int64_t i = 0; !rc && i < j->G; i++) {
        rc = sr_buf_puts(b, i ? ",{\"logprob\":" : "{\"logprob\":", err);
        if (!rc)
            rc = sr_gen_put_logprob(b, j, i, err);
        if (!rc)
            rc = sr_buf_puts(b, "}", err);
    }
    return rc ? rc : sr_buf_puts(b, "]}", err);
}
