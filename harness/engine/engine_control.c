/* The control plane of the mock engine (skyrl.md §4.4, §8): the dispatch, caches, sessions,
 * weight-sync phases, state; pause and sleep are in control_pause.c, the vllm routes in
 * control_vllm.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server_priv.h"
#include "sync_req.h"

/* Parses the body as a JSON object ({} when empty). NULL after an error response was queued. */
static cJSON *body_object(req *r, enum MHD_Result *ret)
{
    if (!r->body.len)
        return cJSON_CreateObject();
    cJSON *o = cJSON_ParseWithLength(r->body.data, r->body.len);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        *ret = sr_srv_error(r, 400, "BadRequestError", SR_E_ENGINE_REQUEST,
                            "the request body must be a JSON object");
        return NULL;
    }
    return o;
}

/* ---- weight sync ---- */

static enum MHD_Result sync_error(req *r, int rc, const sr_err *err)
{
    /* A symbolic link planted under a sync folder is refused like a path outside them. */
    if (rc == SR_E_ENGINE_FORBIDDEN_PATH || rc == SR_E_SYMLINK)
        return sr_srv_error(r, 403, "PermissionDeniedError", rc, err->msg);
    unsigned status = rc == SR_E_ENGINE_REQUEST ? 400 : 500;
    return sr_srv_error(r, status, status == 400 ? "BadRequestError" : "RuntimeError", rc,
                        err->msg);
}

static int get_version(const cJSON *o, const char *a, const char *b, int64_t *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (!x && b)
        x = cJSON_GetObjectItemCaseSensitive(o, b);
    if (!x)
        return 0;
    if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || x->valuedouble < 0 ||
        x->valuedouble > SR_WEIGHTS_MAX_VERSION)
        return -1;
    *v = (int64_t)x->valuedouble;
    return 1;
}

static enum MHD_Result apply(req *r, int64_t target)
{
    sr_err err = SR_ERR_INIT;
    int64_t v;
    int rc = sr_engine_apply_version(r->srv->e, target, r->pick.f[SR_FL_WEIGHTS], &v, &err);
    if (rc)
        return sync_error(r, rc, &err);
    char out[64];
    snprintf(out, sizeof(out), "{\"version\":%lld}", (long long)v);
    return sr_srv_ok(r, out);
}

/* The finish's kwargs.syncroll.target_version into *v (-1 when absent); -1 when it is not a
 * version (a finish past the ceiling is refused, not taken as one naming none). */
static int finish_target(const cJSON *kw, int64_t *v)
{
    const cJSON *sy = kw ? cJSON_GetObjectItemCaseSensitive(kw, "syncroll") : NULL;
    *v = -1;
    return sy && get_version(sy, "target_version", NULL, v) < 0 ? -1 : 0;
}

static enum MHD_Result do_collective(req *r, const cJSON *b)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(b, "method");
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(b, "kwargs");
    if (!cJSON_IsString(m))
        return sr_srv_bad_request(r, "collective_rpc needs a string \"method\"");
    if (kw && !cJSON_IsObject(kw) && !cJSON_IsNull(kw))
        return sr_srv_bad_request(r, "collective_rpc \"kwargs\" must be an object");
    const char *name = m->valuestring;
    const sr_fault *wf = r->pick.f[SR_FL_WEIGHTS];
    sr_err err = SR_ERR_INIT;
    int rc = 0;
    int64_t v;
    if (strcmp(name, "skyrl_start_weight_update") == 0) {
        rc = sr_engine_sync_start(r->srv->e, &err);
        if (!rc)
            sr_engine_note_fault(r->srv->e, wf);
    } else if (strcmp(name, "update_weights_nccl") == 0 ||
               strcmp(name, "update_weights_ipc") == 0) {
        const cJSON *ui = kw ? cJSON_GetObjectItemCaseSensitive(kw, "update_info") : NULL;
        if (!cJSON_IsObject(ui))
            return sr_srv_bad_request(r, "update_weights needs kwargs.update_info (an object)");
        int has = get_version(ui, "syncroll_version", NULL, &v);
        if (has < 0)
            return sr_srv_bad_request(
                r, "update_info.syncroll_version must be a non-negative integer");
        if (has && !(rc = sr_engine_sync_call(r->srv->e, SR_SC_UPDATE, name, &err)))
            return apply(r, v);
        if (!has)
            rc = sr_engine_sync_no_transfer(r->srv->e, name, &err);
    } else if (strcmp(name, "skyrl_finish_weight_update") == 0) {
        int64_t target;
        if (finish_target(kw, &target))
            return sr_srv_bad_request(r, "kwargs.syncroll.target_version must be a weight "
                                         "version (an integer 0..SR_WEIGHTS_MAX_VERSION, 100000)");
        rc = sr_engine_sync_finish(r->srv->e, target, wf, &v, &err);
    } else if (strcmp(name, "skyrl_sleep_for_weight_sync") == 0) {
        return sr_srv_rpc_sleep(r, kw);
    } else if (strcmp(name, "skyrl_wake_for_weight_sync") == 0) {
        return sr_srv_rpc_wake(r, kw);
    } else {
        return sr_srv_bad_request(r, "unknown collective_rpc method");
    }
    return rc ? sync_error(r, rc, &err) : sr_srv_ok(r, "{\"results\":[null]}");
}

static enum MHD_Result do_bucket(req *r)
{
    sr_err err = SR_ERR_INIT;
    int rc = r->brx ? sr_engine_bucket_end(r->brx, r->pick.f[SR_FL_WEIGHTS], &err)
                    : sr_err_set(&err, SR_E_NOMEM, "cannot receive a bucket");
    r->brx = NULL;
    return rc ? sync_error(r, rc, &err) : sr_srv_ok(r, "{\"results\":[null]}");
}

static enum MHD_Result do_fetch(req *r, const cJSON *b)
{
    int64_t v = -1, fetched = -1;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(b, "sync_dir");
    if (get_version(b, "target_version", NULL, &v) <= 0 || !cJSON_IsString(d))
        return sr_srv_bad_request(
            r, "fetch_weights needs a non-negative integer \"target_version\" and a "
               "string \"sync_dir\"");
    sr_err err = SR_ERR_INIT;
    int rc =
        sr_engine_fetch(r->srv->e, v, d->valuestring, r->pick.f[SR_FL_WEIGHTS], &fetched, &err);
    if (rc)
        return sync_error(r, rc, &err);
    /* SkyRL's /fetch_weights answers {"status":"ok","result": <one dict per worker>}
     * (skyrl/backends/skyrl_train/inference_servers/vllm_server_actor.py, delta_engine.py);
     * "version" and "fetched_version" are syncroll's. */
    char out[200];
    snprintf(out, sizeof(out),
             "{\"status\":\"ok\",\"result\":[{\"status\":\"ok\",\"target_version\":%lld}],"
             "\"version\":%lld,\"fetched_version\":%lld}",
             (long long)v, (long long)sr_engine_version(r->srv->e), (long long)fetched);
    return sr_srv_ok(r, out);
}

static enum MHD_Result do_weights(req *r, const cJSON *b)
{
    int64_t v = -1;
    if (r->ep == SR_EP_INIT_TRANSFER) {
        const cJSON *ii = cJSON_GetObjectItemCaseSensitive(b, "init_info");
        if (!cJSON_IsObject(ii))
            return sr_srv_bad_request(
                r, "init_weight_transfer_engine needs \"init_info\" (an object)");
        sr_err err = SR_ERR_INIT;
        int rc = sr_engine_sync_call(r->srv->e, SR_SC_INIT, NULL, &err);
        if (rc)
            return sync_error(r, rc, &err);
        char *txt = cJSON_PrintUnformatted(ii);
        sr_engine_set_init_info(r->srv->e, txt);
        free(txt);
        return sr_srv_ok(r, NULL);
    }
    if (r->ep == SR_EP_FETCH_WEIGHTS)
        return do_fetch(r, b);
    const cJSON *ui = cJSON_GetObjectItemCaseSensitive(b, "update_info");
    if (!cJSON_IsObject(ui) || get_version(ui, "target_version", "version", &v) <= 0)
        return sr_srv_bad_request(
            r, "update_weights needs update_info.target_version (a non-negative integer)");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(ui, "sync_dir");
    if (d && !cJSON_IsString(d))
        return sr_srv_bad_request(r, "update_info.sync_dir must be a string");
    if (!d)
        return apply(r, v);
    sr_err err = SR_ERR_INIT;
    int64_t now;
    int rc =
        sr_engine_update_delta(r->srv->e, v, d->valuestring, r->pick.f[SR_FL_WEIGHTS], &now, &err);
    if (rc)
        return sync_error(r, rc, &err);
    char out[64];
    snprintf(out, sizeof(out), "{\"version\":%lld}", (long long)now);
    return sr_srv_ok(r, out);
}

/* ---- dispatch ---- */

static int is_bucket(req *r)
{
    const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
    return ct && strncmp(ct, SR_ENGINE_BUCKET_CTYPE, strlen(SR_ENGINE_BUCKET_CTYPE)) == 0;
}

static enum MHD_Result with_body(req *r)
{
    enum MHD_Result ret = MHD_NO;
    if (r->ep == SR_EP_COLLECTIVE_RPC && is_bucket(r))
        return do_bucket(r);
    sr_err err = SR_ERR_INIT;
    if (sr_sync_req_no_nul(r->body.data, r->body.len, "the request body", &err))
        return sr_srv_bad_request(r, err.msg);
    cJSON *b = body_object(r, &ret);
    if (!b)
        return ret;
    switch (r->ep) {
    case SR_EP_RESET_PREFIX: {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(b, "reset_running_requests");
        if (x && !cJSON_IsBool(x))
            ret = sr_srv_bad_request(r, "reset_running_requests must be a boolean");
        else {
            sr_engine_prefix_reset(r->srv->e);
            ret = sr_srv_ok(r, "{\"status\":\"ok\"}"); /* as SkyRL's vllm_server_actor.py */
        }
        break;
    }
    case SR_EP_FINISH_SESSION: {
        const char *sid = sr_srv_arg(r, "session_id");
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(b, "session_id");
        if (!sid && cJSON_IsString(x))
            sid = x->valuestring;
        sr_engine_session_finish(r->srv->e, sid);
        ret = sr_srv_ok(r, NULL);
        break;
    }
    case SR_EP_COLLECTIVE_RPC:
        ret = do_collective(r, b);
        break;
    default:
        ret = do_weights(r, b);
        break;
    }
    cJSON_Delete(b);
    return ret;
}

static enum MHD_Result do_state(req *r)
{
    sr_server *s = r->srv;
    sr_engine_live live;
    pthread_mutex_lock(&s->mu);
    live.paused = s->paused;
    live.pause_mode = s->pmode;
    live.sleep_weights = (s->asleep & SR_SLEEP_WEIGHTS) != 0;
    live.sleep_kv_cache = (s->asleep & SR_SLEEP_KV_CACHE) != 0;
    live.sleep_level = s->sleep_level;
    live.inflight = s->running;
    live.held = s->held.n;
    live.stalled = s->stalled.n;
    live.active = (int64_t)atomic_load(&s->conns);
    live.max_active = s->cfg->max_connections;
    live.queued = s->queued.n;
    live.max_queued = s->cfg->max_queued;
    live.queued_peak = s->queued_peak;
    live.refused = s->refused;
    pthread_mutex_unlock(&s->mu);
    const char *t = sr_srv_arg(r, "tensors");
    live.tensors = t && strcmp(t, "1") == 0;
    sr_buf b = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    if (sr_engine_state_json(&b, s->e, &live, &err)) {
        sr_buf_release(&b);
        return sr_srv_error(r, 500, "InternalServerError", err.code, err.msg);
    }
    return sr_srv_respond(r, 200, "application/json", &b, 1);
}

/* ---- query parameters ---- */

/* The query parameters the control endpoints read and the values each takes: one of `values`,
 * or (values NULL) a decimal integer in [lo, hi]. Other parameters are ignored, as vLLM does. */
typedef struct qparam {
    int ep;
    const char *name;
    const char *const *values;
    long long lo, hi;
} qparam;

static const char *const BOOLS[] = {"true", "false", NULL};
static const char *const MODES[] = {"abort", "keep", "wait", NULL};
static const char *const TAGS[] = {"weights", "kv_cache", NULL};
static const char *const FLAG[] = {"0", "1", NULL};

static const qparam QPARAMS[] = {
    {SR_EP_PAUSE, "mode", MODES, 0, 0},   {SR_EP_PAUSE, "clear_cache", BOOLS, 0, 0},
    {SR_EP_SLEEP, "level", NULL, 0, 2},   {SR_EP_SLEEP, "tags", TAGS, 0, 0},
    {SR_EP_SLEEP, "mode", MODES, 0, 0},   {SR_EP_WAKE_UP, "tags", TAGS, 0, 0},
    {SR_EP_STATE, "tensors", FLAG, 0, 0},
};

typedef struct qcheck {
    int ep;
    char msg[200]; /* "" while every parameter is valid */
} qcheck;

static int qvalue_ok(const qparam *p, const char *v)
{
    if (!v)
        return 0;
    if (p->values) {
        for (const char *const *x = p->values; *x; x++)
            if (strcmp(*x, v) == 0)
                return 1;
        return 0;
    }
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    return *v && *end == '\0' && errno == 0 && n >= p->lo && n <= p->hi;
}

static enum MHD_Result check_qparam(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    qcheck *q = cls;
    (void)kind;
    for (size_t i = 0; i < sizeof(QPARAMS) / sizeof(QPARAMS[0]); i++) {
        const qparam *p = &QPARAMS[i];
        if (p->ep != q->ep || strcmp(p->name, key) != 0 || qvalue_ok(p, value))
            continue;
        char want[96] = "";
        if (p->values)
            for (const char *const *x = p->values; *x; x++)
                snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",
                         x == p->values ? "" : ", ", *x);
        else
            snprintf(want, sizeof(want), "an integer in [%lld, %lld]", p->lo, p->hi);
        snprintf(q->msg, sizeof(q->msg), "query parameter '%s' must be %s%s, not '%.40s'", key,
                 p->values ? "one of " : "", want, value ? value : "");
        return MHD_NO;
    }
    return MHD_YES;
}

enum MHD_Result sr_srv_control(req *r)
{
    char tmp[64];
    qcheck q = {r->ep, ""};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, check_qparam, &q);
    if (q.msg[0])
        return sr_srv_bad_request(r, q.msg);
    sr_sync_dialect plane = r->srv->cfg->sync_dialect;
    int vllm = plane == SR_SYNC_DIALECT_VLLM;
    /* update_weight_version is SGLang's route too. */
    if (r->ep == SR_EP_UPDATE_VERSION && plane == SR_SYNC_DIALECT_SGLANG)
        return sr_srv_control_sglang(r);
    switch (r->ep) {
    case SR_EP_SGL_INIT_GROUP:
    case SR_EP_SGL_UPDATE_DIST:
    case SR_EP_SGL_UPDATE_TENSOR:
    case SR_EP_SGL_UPDATE_DISK:
    case SR_EP_SGL_DESTROY_GROUP:
    case SR_EP_SGL_PAUSE:
    case SR_EP_SGL_CONTINUE:
    case SR_EP_SGL_RELEASE_MEMORY:
    case SR_EP_SGL_RESUME_MEMORY:
    case SR_EP_SGL_WEIGHT_VERSION:
        /* SGLang's routes exist only in its control plane. */
        return plane == SR_SYNC_DIALECT_SGLANG
                   ? sr_srv_control_sglang(r)
                   : sr_srv_error(r, 404, "NotFoundError", 0,
                                  "Not Found (a route of the sglang control plane; this engine "
                                  "speaks another engines.sync_dialect)");
    case SR_EP_START_UPDATE:
    case SR_EP_FINISH_UPDATE:
    case SR_EP_UPDATE_VERSION:
    case SR_EP_WEIGHT_INFO:
    case SR_EP_WEIGHT_CHECKER:
    case SR_EP_IS_PAUSED:
    case SR_EP_ABORT_REQUESTS:
        /* vLLM's native routes exist only in its control plane. */
        return vllm ? sr_srv_control_vllm(r)
                    : sr_srv_error(r, 404, "NotFoundError", 0,
                                   "Not Found (a route of the vllm control plane; this engine "
                                   "speaks another engines.sync_dialect)");
    case SR_EP_INIT_TRANSFER:
    case SR_EP_UPDATE_WEIGHTS:
        if (vllm)
            return sr_srv_control_vllm(r);
        return with_body(r);
    case SR_EP_HEALTH:
        if (sr_engine_unservable(r->srv->e))
            return sr_srv_error(r, 503, "ServiceUnavailableError", 0,
                                "the engine cannot serve since the last weight update");
        return sr_srv_ok(r, NULL);
    case SR_EP_WORLD_SIZE:
        snprintf(tmp, sizeof(tmp), "{\"world_size\":%d}", r->srv->cfg->world_size);
        return sr_srv_ok(r, tmp);
    case SR_EP_STATE:
        return do_state(r);
    case SR_EP_ORACLE:
        return sr_srv_oracle(r);
    case SR_EP_PAUSE:
        return sr_srv_pause(r);
    case SR_EP_RESUME:
        return sr_srv_resume(r);
    case SR_EP_SLEEP:
        return sr_srv_sleep(r);
    case SR_EP_WAKE_UP:
        return sr_srv_wake_up(r);
    case SR_EP_IS_SLEEPING:
        return sr_srv_is_sleeping(r);
    default:
        return with_body(r);
    }
}
