/* validate-field's captures (cmd_validate_field_priv.h): the generate requests in a dialect's
 * wire, sent one at a time to the engine validate-field started, and their raw bodies. */
#include <stdio.h>
#include <string.h>

#include "client/fanout.h"
#include "cmd_validate_field_priv.h"
#include "sr_clock.h"

#define GENERATE_MS 30000 /* the deadline of one captured generate */

static int put_key(sr_buf *b, int *first, const char *key, sr_err *err)
{
    int rc = sr_buf_printf(b, err, "%s\"%s\":", *first ? "" : ",", key);
    *first = 0;
    return rc;
}

/* The dialect's generate request (its first route, spec/dialect.h): the prompt, max tokens,
 * ignore_eos, routes from row 0 (the start where the wire has one, its routes switch). */
static int request_body(sr_buf *req, const sr_dialect_route *rt, const int32_t *prompt, size_t P,
                        int max_tokens, int capture, sr_err *err)
{
    const sr_dialect_request *q = &rt->request;
    int first = 1, rc = sr_buf_puts(req, "{", err);
    if (!rc && q->params) {
        int inner = 1;
        rc = put_key(req, &first, q->params, err);
        if (!rc)
            rc = sr_buf_puts(req, "{", err);
        if (!rc)
            rc = put_key(req, &inner, q->max_tokens_key, err);
        if (!rc)
            rc = sr_buf_printf(req, err, "%d,\"ignore_eos\":true", max_tokens);
        /* The later stack's capture request carries its top_k (the engine's support width). */
        if (!rc && capture)
            rc = sr_buf_puts(req, ",\"top_k\":4", err);
        if (!rc && q->start_key && q->start_in_params)
            rc = sr_buf_printf(req, err, ",\"%s\":0", q->start_key);
        if (!rc)
            rc = sr_buf_puts(req, "}", err);
    } else if (!rc) {
        rc = put_key(req, &first, q->max_tokens_key, err);
        if (!rc)
            rc = sr_buf_printf(req, err, "%d,\"ignore_eos\":true", max_tokens);
    }
    if (!rc && q->start_key && (!q->start_in_params || !q->params)) {
        rc = put_key(req, &first, q->start_key, err);
        if (!rc)
            rc = sr_buf_puts(req, "0", err);
    }
    if (!rc && q->routes_switch) {
        rc = put_key(req, &first, q->routes_switch, err);
        if (!rc)
            rc = sr_buf_puts(req, "true", err);
    }
    if (!rc && q->tokens_switch) {
        rc = put_key(req, &first, q->tokens_switch, err);
        if (!rc)
            rc = sr_buf_puts(req, "true", err);
    }
    if (!rc && rt->api != SR_API_SGLANG) {
        rc = put_key(req, &first, "model", err);
        if (!rc)
            rc = sr_buf_puts(req, "\"default\"", err);
    }
    if (!rc)
        rc = put_key(req, &first, q->tokens_key, err);
    if (!rc)
        rc = sr_buf_puts(req, "[", err);
    for (size_t i = 0; !rc && i < P; i++)
        rc = sr_buf_printf(req, err, i ? ",%d" : "%d", prompt[i]);
    if (!rc && capture)
        rc = sr_buf_puts(req, "],\"return_sample_support\":true}", err);
    else if (!rc)
        rc = sr_buf_puts(req, "]}", err);
    return rc;
}

/* One generate: prompt -> the raw response body (HTTP 200 required). */
static int generate(sr_buf *body, sr_fanout *fan, const sr_dialect_route *rt, const int32_t *prompt,
                    size_t P, int max_tokens, int capture, sr_err *err)
{
    sr_buf req = SR_BUF_INIT;
    int rc = request_body(&req, rt, prompt, P, max_tokens, capture, err);
    sr_fanout_seg seg = {req.data, req.len};
    sr_fanout_req r;
    memset(&r, 0, sizeof(r));
    r.path = rt->path;
    r.segs = &seg;
    r.nseg = 1;
    if (!rc)
        rc = sr_fanout_run(fan, &r, 1, 1, sr_clock_ms() + GENERATE_MS, GENERATE_MS, err);
    if (!rc && (r.code || r.status != 200))
        rc = sr_err_set(err, SR_E_CLIENT_TRANSPORT, "POST %s%s: %s (HTTP %ld)",
                        sr_fanout_url(fan, 0), r.path, r.code ? r.msg : "not 200", r.status);
    if (!rc) {
        /* The body moves to the caller's buffer. */
        sr_buf_release(body);
        *body = r.resp;
        r.resp = (sr_buf)SR_BUF_INIT;
    }
    sr_fanout_reqs_release(&r, 1);
    sr_buf_release(&req);
    return rc;
}

int sr_vf_capture_all(sr_vf_capture *cap, const char *url, sr_dialect d, int support, sr_err *err)
{
    sr_fanout *fan = NULL;
    const sr_dialect_route *rt = &sr_dialect_get(d)->routes[0];
    int rc = sr_fanout_new(&fan, &url, 1, 0, err);
    for (size_t i = 0; !rc && i < cap->n; i++) {
        size_t P = i < SR_VF_N_CLEAN ? 1 + 5 * i : 4;
        int32_t *p = cap->prompts + i * SR_VF_PROMPT_MAX;
        for (size_t j = 0; j < P; j++)
            p[j] = (int32_t)((i * 31 + j * 7 + 3) % 1000);
        cap->P[i] = P;
        rc = generate(&cap->bodies[i], fan, rt, p, P, i < SR_VF_N_CLEAN ? 1 + 2 * (int)i : 4,
                      support, err);
    }
    sr_fanout_free(fan);
    return rc;
}
