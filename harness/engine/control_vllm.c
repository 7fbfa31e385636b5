/* The vllm control plane of the mock engine (engines.sync_dialect "vllm"): vLLM's native
 * dev-mode weight-transfer routes with its answers (vllm/entrypoints/serve/dev/rlhf/
 * api_router.py), every ordering decision a cell of the vllm table (sync_table.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jsonw.h"
#include "server_priv.h"

/* {"detail": msg, "check": name} with `status`, FastAPI's HTTPException body plus the name. */
static enum MHD_Result detail(req *r, unsigned status, int code, const char *msg)
{
    sr_buf b = SR_BUF_INIT;
    int rc = sr_buf_puts(&b, "{\"detail\":", NULL);
    if (!rc)
        rc = sr_jw_str(&b, msg, NULL);
    if (!rc)
        rc = sr_buf_printf(&b, NULL, ",\"check\":\"%s\"}",
                           sr_code_name(code) ? sr_code_name(code) : "");
    if (rc) {
        sr_buf_release(&b);
        return MHD_NO;
    }
    return sr_srv_respond(r, status, "application/json", &b, 1);
}

/* A refusal of the engine: 409 for the table's protocol cells, 400 a bad body (or one in another
 * form of vLLM's API than the engine's sync_version), 500 otherwise. */
static enum MHD_Result refuse(req *r, int rc, const sr_err *err)
{
    unsigned status = rc == SR_E_SYNC_ORDER || rc == SR_E_SYNC_VERSION_BACKWARDS ||
                              rc == SR_E_SYNC_ENGINE_PAUSED || rc == SR_E_SYNC_INCOMPLETE ||
                              rc == SR_E_SYNC_CONCURRENT
                          ? 409
                      : rc == SR_E_ENGINE_REQUEST || rc == SR_E_SYNC_WIRE_VERSION ? 400
                                                                                  : 500;
    return detail(r, status, rc, err->msg);
}

static const char *body(req *r)
{
    return r->body.data ? r->body.data : "";
}

static enum MHD_Result update_weights(req *r)
{
    sr_err err = SR_ERR_INIT;
    const sr_fault *wf = r->pick.f[SR_FL_WEIGHTS];
    int rc;
    if (r->brx) {
        rc = sr_engine_bucket_end(r->brx, wf, &err);
        r->brx = NULL;
        return rc ? refuse(r, rc, &err) : sr_srv_ok(r, "{\"message\":\"Weights updated\"}");
    }
    cJSON *o = cJSON_ParseWithLength(body(r), r->body.len);
    const cJSON *ui = cJSON_GetObjectItemCaseSensitive(o, "update_info");
    int has = cJSON_IsObject(ui);
    rc = has ? sr_sync_req_wire_update(ui, r->srv->cfg->sync_version, "POST /update_weights", &err)
             : 0;
    cJSON_Delete(o);
    if (!has)
        return detail(r, 400, SR_E_ENGINE_REQUEST, "Missing 'update_info' in request body");
    if (rc)
        return refuse(r, rc, &err);
    rc = sr_engine_sync_no_transfer(r->srv->e, "update_weights", &err);
    return refuse(r, rc, &err);
}

static enum MHD_Result weight_checker(req *r)
{
    sr_server *s = r->srv;
    sr_err err = SR_ERR_INIT;
    sr_checker_req q = SR_CHECKER_REQ_INIT;
    int rc = sr_sync_req_checker(&q, body(r), r->body.len, &err);
    pthread_mutex_lock(&s->mu);
    int paused = s->paused || s->asleep;
    pthread_mutex_unlock(&s->mu);
    /* As vLLM: the engine's state is reported before a bad argument. */
    int st = sr_engine_sync_call(s->e, paused ? SR_SC_CHECK_PAUSED : SR_SC_CHECK, NULL, &err);
    if (st || rc) {
        sr_checker_req_release(&q);
        return refuse(r, st ? st : rc, &err);
    }
    sr_buf b = SR_BUF_INIT;
    if (q.action == SR_CHECK_RESET)
        rc = sr_engine_weights_reset(s->e, &err) ? err.code
                                                 : sr_buf_puts(&b, "{\"status\":\"reset\"}", &err);
    else if (q.action == SR_CHECK_COMPARE)
        rc = sr_engine_compare_json(&b, s->e, &q, &err);
    else
        rc = sr_engine_checksums_json(&b, s->e, &err);
    sr_checker_req_release(&q);
    if (rc) {
        sr_buf_release(&b);
        return refuse(r, rc, &err);
    }
    return sr_srv_respond(r, 200, "application/json", &b, 1);
}

/*
 * POST /abort_requests {"request_ids": [id, ..]} as vLLM's router (vllm/entrypoints/serve/disagg/
 * api_router.py, attach_router): 400 "JSON decode error: ..." or "Missing 'request_ids' in
 * request body", else the abort of those requests and 200 with an empty body; the aborted
 * generates answer finish_reason "abort" with the tokens sampled so far.
 */
static enum MHD_Result abort_requests(req *r)
{
    sr_err err = SR_ERR_INIT;
    sr_abort_req q = SR_ABORT_REQ_INIT;
    int rc = sr_sync_req_abort(&q, body(r), r->body.len, &err);
    if (rc)
        return refuse(r, rc, &err);
    const char *ids[SR_SYNC_REQ_MAX_ABORT_IDS];
    for (size_t i = 0; i < q.n; i++)
        ids[i] = q.ids[i];
    sr_srv_abort_ids(r->srv, ids, q.n);
    sr_abort_req_release(&q);
    return sr_srv_ok(r, NULL);
}

/* 200 with `head` (the JSON text up to a string value), `label` as a JSON string, then "}". */
static enum MHD_Result respond_label(req *r, const char *head, const char *label)
{
    sr_buf b = SR_BUF_INIT;
    int rc = sr_buf_puts(&b, head, NULL);
    if (!rc)
        rc = sr_jw_str(&b, label, NULL);
    if (!rc)
        rc = sr_buf_puts(&b, "}", NULL);
    if (rc) {
        sr_buf_release(&b);
        return MHD_NO;
    }
    return sr_srv_respond(r, 200, "application/json", &b, 1);
}

/*
 * finish_weight_update and update_weight_version in vLLM's current form (vllm#49040): the version
 * is an opaque string, published only once the call succeeded; a digit string also moves the
 * mock's integer version (what its routes and the oracle follow).
 */
static enum MHD_Result with_label(req *r)
{
    sr_err err = SR_ERR_INIT;
    sr_engine *e = r->srv->e;
    int64_t v, now;
    char label[SR_SYNC_REQ_LABEL_MAX];
    int rc;
    if (r->ep == SR_EP_FINISH_UPDATE) {
        int64_t before = sr_engine_version(e);
        rc = sr_sync_req_finish_label(&v, label, body(r), r->body.len, &err);
        if (!rc)
            rc = sr_engine_sync_finish(e, v, r->pick.f[SR_FL_WEIGHTS], &now, &err);
        /* The label published is what the engine now holds: a weights fault that kept the
         * version (version_not_bumped) publishes nothing, one that moved it elsewhere
         * (version_regress) publishes that version, as the integer form reports them. */
        if (!rc && v >= 0 && now != v && now != before)
            snprintf(label, sizeof(label), "%lld", (long long)now);
        if (!rc && (v < 0 || now == v || now != before))
            sr_engine_publish_label(e, label);
        return rc ? refuse(r, rc, &err) : sr_srv_ok(r, "{\"message\":\"Weight update finished\"}");
    }
    rc = sr_sync_req_version_label(&v, label, body(r), r->body.len, &err);
    if (!rc && v >= 0 && !(rc = sr_engine_set_version(e, v, &err)))
        sr_engine_publish_label(e, label);
    else if (!rc && v < 0)
        rc = sr_engine_set_label(e, label, &err);
    if (rc)
        return refuse(r, rc, &err);
    return respond_label(r, "{\"success\":true,\"new_version\":", label);
}

/* GET /weight_info: {"weight_version": ...}, the label in the current form, the integer in the
 * earlier one. */
static enum MHD_Result weight_info(req *r)
{
    char label[SR_SYNC_REQ_LABEL_MAX];
    if (r->srv->cfg->sync_version == SR_SYNC_API_31943)
        snprintf(label, sizeof(label), "%lld", (long long)sr_engine_version(r->srv->e));
    else
        sr_engine_version_label(r->srv->e, label);
    return respond_label(r, "{\"weight_version\":", label);
}

static enum MHD_Result with_version(req *r)
{
    if (r->srv->cfg->sync_version != SR_SYNC_API_31943)
        return with_label(r);
    sr_err err = SR_ERR_INIT;
    int64_t v;
    char out[96];
    int rc;
    if (r->ep == SR_EP_FINISH_UPDATE) {
        rc = sr_sync_req_finish(&v, body(r), r->body.len, &err);
        int64_t now;
        if (!rc)
            rc = sr_engine_sync_finish(r->srv->e, v, r->pick.f[SR_FL_WEIGHTS], &now, &err);
        return rc ? refuse(r, rc, &err) : sr_srv_ok(r, "{\"message\":\"Weight update finished\"}");
    }
    rc = sr_sync_req_version(&v, body(r), r->body.len, &err);
    if (!rc)
        rc = sr_engine_set_version(r->srv->e, v, &err);
    if (rc)
        return refuse(r, rc, &err);
    snprintf(out, sizeof(out), "{\"success\":true,\"new_version\":\"%lld\"}", (long long)v);
    return sr_srv_ok(r, out);
}

static enum MHD_Result init_transfer(req *r)
{
    sr_err err = SR_ERR_INIT;
    cJSON *o = cJSON_ParseWithLength(body(r), r->body.len);
    const cJSON *ii = cJSON_GetObjectItemCaseSensitive(o, "init_info");
    enum MHD_Result ret;
    if (!cJSON_IsObject(o))
        ret = detail(r, 400, SR_E_ENGINE_REQUEST, "Invalid JSON format");
    else if (!cJSON_IsObject(ii))
        ret = detail(r, 400, SR_E_ENGINE_REQUEST, "Missing 'init_info' in request body");
    else {
        /* The packed wire params of the current form, or a key of the other form (vllm#50902). */
        int rc = sr_sync_req_wire_init(ii, r->srv->cfg->sync_version, &err);
        if (!rc)
            rc = sr_engine_sync_call(r->srv->e, SR_SC_INIT, NULL, &err);
        char *txt = rc ? NULL : cJSON_PrintUnformatted(ii);
        if (txt)
            sr_engine_set_init_info(r->srv->e, txt);
        free(txt);
        ret = rc ? refuse(r, rc, &err)
                 : sr_srv_ok(r, "{\"message\":\"Weight transfer initialized\"}");
    }
    cJSON_Delete(o);
    return ret;
}

enum MHD_Result sr_srv_control_vllm(req *r)
{
    sr_server *s = r->srv;
    sr_err err = SR_ERR_INIT;
    int rc = sr_sync_req_no_nul(r->body.data, r->body.len, "the request body", &err);
    if (rc)
        return detail(r, 400, rc, err.msg);
    switch (r->ep) {
    case SR_EP_INIT_TRANSFER:
        return init_transfer(r);
    case SR_EP_START_UPDATE:
        rc = sr_sync_req_start(body(r), r->body.len, &err);
        if (!rc)
            rc = sr_engine_sync_start(s->e, &err);
        if (!rc)
            sr_engine_note_fault(s->e, r->pick.f[SR_FL_WEIGHTS]);
        return rc ? refuse(r, rc, &err) : sr_srv_ok(r, "{\"message\":\"Weight update started\"}");
    case SR_EP_UPDATE_WEIGHTS:
        return update_weights(r);
    case SR_EP_FINISH_UPDATE:
    case SR_EP_UPDATE_VERSION:
        return with_version(r);
    case SR_EP_WEIGHT_INFO:
        return weight_info(r);
    case SR_EP_WEIGHT_CHECKER:
        return weight_checker(r);
    case SR_EP_ABORT_REQUESTS:
        return abort_requests(r);
    case SR_EP_IS_PAUSED:
        pthread_mutex_lock(&s->mu);
        rc = s->paused;
        pthread_mutex_unlock(&s->mu);
        return sr_srv_ok(r, rc ? "{\"is_paused\":true}" : "{\"is_paused\":false}");
    default:
        return detail(r, 404, 0, "Not Found");
    }
}
