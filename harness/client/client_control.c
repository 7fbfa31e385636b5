/* Control-plane calls (client.h): one request to one engine or to each, concurrently, through a
 * fan-out made for the call, each outcome turned into an sr_client_reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"
#include "fanout.h"
#include "sr_clock.h"

/* Fills r from one engine's fan-out outcome (client.h states the reply's codes). */
static void to_reply(sr_client_reply *r, const sr_fanout_req *q, const sr_client_opts *o)
{
    r->http_status = (int)q->status;
    if (q->resp.len)
        r->body = cJSON_ParseWithLength(q->resp.data, q->resp.len);
    if (q->code == SR_E_CLIENT_DEADLINE) {
        r->code = SR_E_CLIENT_DEADLINE;
        snprintf(r->msg, sizeof r->msg, "no answer within %lld ms",
                 (long long)o->control_timeout_ms);
    } else if (q->code == SR_E_CLIENT_HTTP_STATUS) {
        r->code = SR_E_CLIENT_HTTP_STATUS;
        snprintf(r->msg, sizeof r->msg, "%s", q->msg); /* the fan-out's "HTTP <status>: <text>" */
    } else if (q->code) {
        r->code = SR_E_CLIENT_TRANSPORT;
        snprintf(r->msg, sizeof r->msg, "%s", q->msg);
    } else if (q->resp.len && !r->body) {
        r->code = SR_E_CLIENT_INVALID_JSON;
        snprintf(r->msg, sizeof r->msg, "the %zu-byte body is not JSON", q->resp.len);
    }
}

void sr_client_reply_release(sr_client_reply *r)
{
    if (!r)
        return;
    cJSON_Delete(r->body);
    memset(r, 0, sizeof *r);
}

int sr_client_control(sr_client_reply *replies, size_t n_replies, const sr_client *c, int engine,
                      const char *method, const char *path, const char *json_body, sr_err *err)
{
    size_t first = engine < 0 ? 0 : (size_t)engine, n = engine < 0 ? c->n : 1;
    int get = method && strcmp(method, "GET") == 0;
    if ((engine >= 0 && (size_t)engine >= c->n) || n_replies < n || !path || path[0] != '/' ||
        (!get && (!method || strcmp(method, "POST"))))
        return sr_err_set(err, SR_E_INVAL, "client: bad control-plane call");
    memset(replies, 0, n * sizeof *replies);
    const char *urls[SR_CLIENT_MAX_ENGINES];
    for (size_t i = 0; i < n; i++)
        urls[i] = c->urls[first + i];
    sr_fanout_req *reqs = calloc(n, sizeof *reqs);
    sr_fanout *f = NULL;
    int rc = reqs ? sr_fanout_new(&f, urls, n, c->opts.connect_timeout_ms, err)
                  : sr_err_set(err, SR_E_NOMEM, "client: cannot set up a call");
    sr_fanout_seg body = {json_body ? json_body : "", json_body ? strlen(json_body) : 0};
    for (size_t i = 0; !rc && i < n; i++) {
        reqs[i].engine = (int)i;
        reqs[i].get = get;
        reqs[i].path = path;
        reqs[i].segs = &body;
        reqs[i].nseg = 1;
    }
    int64_t budget = c->opts.control_timeout_ms;
    if (!rc)
        rc = sr_fanout_run(f, reqs, n, 1, sr_clock_ms() + (double)budget, budget, err);
    for (size_t i = 0; !rc && i < n; i++)
        to_reply(&replies[i], &reqs[i], &c->opts);
    /* Nothing was sent (no memory, a path too long): every reply says so, as the header promises.
     */
    for (size_t i = 0; rc && i < n; i++) {
        replies[i].code = rc;
        snprintf(replies[i].msg, sizeof replies[i].msg, "%s", err ? err->msg : "not sent");
    }
    for (size_t i = 0; !rc && i < n; i++)
        if (replies[i].code)
            rc = sr_err_set(err, replies[i].code, "engine %zu (%s) %s %s: %s", first + i,
                            c->urls[first + i], method, path, replies[i].msg);
    if (reqs)
        sr_fanout_reqs_release(reqs, n);
    sr_fanout_free(f);
    free(reqs);
    return rc;
}
