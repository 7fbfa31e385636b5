/* The control plane of the mock engine (skyrl-contract §4.4, §8): pause/resume, sleep, caches,
 * sessions, weight-sync phases, state. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server_priv.h"

static const char *arg(req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

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

static enum MHD_Result ok_empty(req *r)
{
    return sr_srv_respond_text(r, 200, NULL, "");
}

static enum MHD_Result ok_json(req *r, const char *json)
{
    return sr_srv_respond_text(r, 200, "application/json", json);
}

/* The answer to a pause or resume: vLLM's {"status": "paused"|"resumed"} in its control plane,
 * empty in skyrl's. */
static enum MHD_Result ok_status(req *r, const char *status)
{
    char out[48];
    if (r->srv->cfg->sync_dialect != SR_SYNC_DIALECT_VLLM)
        return ok_empty(r);
    snprintf(out, sizeof(out), "{\"status\":\"%s\"}", status);
    return ok_json(r, out);
}

enum MHD_Result sr_srv_pause_done(req *r)
{
    return ok_status(r, "paused");
}

static enum MHD_Result bad(req *r, const char *msg)
{
    return sr_srv_error(r, 400, "BadRequestError", SR_E_ENGINE_REQUEST, msg);
}

/* ---- pause / resume ---- */

static void freeze_or_abort_running_locked(sr_server *s, int keep)
{
    size_t n = 0;
    req **run = malloc((s->nheap ? s->nheap : 1) * sizeof(*run));
    if (!run)
        return;
    for (size_t i = 0; i < s->nheap; i++)
        if (s->heap[i]->state == RS_RUNNING)
            run[n++] = s->heap[i];
    int64_t now = sr_srv_now_ns();
    for (size_t i = 0; i < n; i++) {
        req *r = run[i];
        sr_srv_unschedule_locked(r);
        sr_srv_running_dec_locked(s);
        r->k_done = sr_srv_tokens_at(r, now);
        if (keep) {
            r->t_frozen_ns = now;
            r->state = RS_FROZEN;
            sr_srv_list_add_locked(&s->held, r, RL_HELD);
        } else {
            r->state = RS_ABORTING;
            sr_srv_resume_locked(r);
        }
    }
    free(run);
    if (keep)
        return;
    for (req *r = s->held.head, *next; r; r = next) {
        next = r->lnext;
        if (r->state != RS_FROZEN)
            continue;
        sr_srv_list_remove_locked(r);
        r->state = RS_ABORTING;
        sr_srv_resume_locked(r);
    }
}

/* The pause of the scheduler in `mode` (keep, abort or wait), for /pause and /sleep (vLLM pauses
 * the scheduler before it sleeps). MHD_YES once a wait-mode pause was suspended until nothing
 * runs; otherwise answers 200. Takes s->mu. */
static enum MHD_Result pause_scheduler(req *r, const char *mode)
{
    sr_server *s = r->srv;
    pthread_mutex_lock(&s->mu);
    s->paused = 1;
    s->pmode = mode;
    if (strcmp(mode, "wait") != 0)
        freeze_or_abort_running_locked(s, strcmp(mode, "keep") == 0);
    else if (s->running > 0) {
        r->state = RS_WAITING;
        if (sr_srv_suspend_locked(r))
            sr_srv_list_add_locked(&s->waiters, r, RL_WAITERS);
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    pthread_mutex_unlock(&s->mu);
    return ok_status(r, "paused");
}

static const char *pause_mode(req *r)
{
    const char *m = arg(r, "mode");
    return !m || strcmp(m, "abort") == 0 ? "abort"
           : strcmp(m, "keep") == 0      ? "keep"
           : strcmp(m, "wait") == 0      ? "wait"
                                         : NULL;
}

static enum MHD_Result do_pause(req *r)
{
    const char *mode = pause_mode(r);
    if (!mode)
        return bad(r, "mode must be keep, abort or wait");
    const char *cc = arg(r, "clear_cache");
    if (cc && strcmp(cc, "true") == 0)
        sr_engine_prefix_reset(r->srv->e);
    return pause_scheduler(r, mode);
}

/* Releases every held request (new ones and those frozen in flight) once the server is neither
 * paused nor has a memory tag asleep: a generate never runs on weights or a KV cache that sleep.
 * Called with s->mu held. */
static void release_held_locked(sr_server *s)
{
    if (s->paused || s->asleep)
        return;
    int64_t now = sr_srv_now_ns();
    while (s->held.head) {
        req *h = s->held.head;
        sr_srv_list_remove_locked(h);
        if (h->state == RS_FROZEN)
            h->t_start_ns += now - h->t_frozen_ns;
        h->state = RS_RESUMING;
        sr_srv_resume_locked(h);
    }
}

static enum MHD_Result do_resume(req *r)
{
    sr_server *s = r->srv;
    pthread_mutex_lock(&s->mu);
    s->paused = 0;
    s->pmode = NULL;
    release_held_locked(s);
    pthread_mutex_unlock(&s->mu);
    return ok_status(r, "resumed");
}

/* ---- sleep and wake: the memory tags weights and kv_cache ---- */

static enum MHD_Result add_tag(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    unsigned *mask = cls;
    (void)kind;
    if (strcmp(key, "tags") == 0 && value)
        *mask |= strcmp(value, "weights") == 0    ? SR_SLEEP_WEIGHTS
                 : strcmp(value, "kv_cache") == 0 ? SR_SLEEP_KV_CACHE
                                                  : 0;
    return MHD_YES;
}

/* The tags named by the query (?tags=a&tags=b, each already checked), 0 when none is. */
static unsigned query_tags(req *r)
{
    unsigned mask = 0;
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_tag, &mask);
    return mask;
}

/* POST /sleep?level=0|1|2&tags=..&mode=..: as vLLM's EngineCore.sleep, the scheduler pauses in
 * `mode` (default abort), then the tags sleep (given tags win over the level; level 0 sleeps
 * none, 1 and 2 both); level >= 1 also clears the prefix cache. */
static enum MHD_Result do_sleep(req *r)
{
    sr_server *s = r->srv;
    const char *lv = arg(r, "level");
    int64_t level = lv ? strtoll(lv, NULL, 10) : 1;
    unsigned tags = query_tags(r);
    const char *mode = pause_mode(r);
    if (!mode)
        return bad(r, "mode must be keep, abort or wait");
    if (!tags && level >= 1)
        tags = SR_SLEEP_ALL;
    if (level >= 1)
        sr_engine_prefix_reset(s->e);
    pthread_mutex_lock(&s->mu);
    s->asleep |= tags;
    s->sleep_level = level;
    pthread_mutex_unlock(&s->mu);
    return pause_scheduler(r, mode);
}

/* Wakes `tags`; with `resume` the scheduler resumes too (vLLM's wake_up always resumes it;
 * SkyRL's skyrl_wake_for_weight_sync does not). Held requests run once nothing sleeps. */
static void wake_tags(sr_server *s, unsigned tags, int resume)
{
    pthread_mutex_lock(&s->mu);
    s->asleep &= ~tags;
    if (resume) {
        s->paused = 0;
        s->pmode = NULL;
    }
    release_held_locked(s);
    pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result do_wake_up(req *r)
{
    unsigned tags = query_tags(r);
    wake_tags(r->srv, tags ? tags : SR_SLEEP_ALL, 1);
    return ok_empty(r);
}

/* The kwargs.tags of skyrl_wake_for_weight_sync: an array of "weights" / "kv_cache" (absent or
 * null: every tag). -1 for anything else. */
static int rpc_tags(const cJSON *kw, unsigned *mask)
{
    const cJSON *t = kw ? cJSON_GetObjectItemCaseSensitive(kw, "tags") : NULL;
    *mask = 0;
    if (!t || cJSON_IsNull(t)) {
        *mask = SR_SLEEP_ALL;
        return 0;
    }
    if (!cJSON_IsArray(t))
        return -1;
    const cJSON *x;
    cJSON_ArrayForEach(x, t)
    {
        if (!cJSON_IsString(x))
            return -1;
        unsigned bit = strcmp(x->valuestring, "weights") == 0    ? SR_SLEEP_WEIGHTS
                       : strcmp(x->valuestring, "kv_cache") == 0 ? SR_SLEEP_KV_CACHE
                                                                 : 0;
        if (!bit)
            return -1;
        *mask |= bit;
    }
    return 0;
}

static enum MHD_Result do_is_sleeping(req *r)
{
    sr_server *s = r->srv;
    pthread_mutex_lock(&s->mu);
    int sleeping = s->paused || s->asleep;
    pthread_mutex_unlock(&s->mu);
    return ok_json(r, sleeping ? "{\"is_sleeping\":true}" : "{\"is_sleeping\":false}");
}

/* ---- weight sync ---- */

static enum MHD_Result sync_error(req *r, int rc, const sr_err *err)
{
    if (rc == SR_E_ENGINE_FORBIDDEN_PATH)
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
        x->valuedouble > 1e9)
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
    return ok_json(r, out);
}

static int64_t finish_target(const cJSON *kw)
{
    const cJSON *sy = kw ? cJSON_GetObjectItemCaseSensitive(kw, "syncroll") : NULL;
    int64_t v = -1;
    return sy && get_version(sy, "target_version", NULL, &v) > 0 ? v : -1;
}

static enum MHD_Result do_collective(req *r, const cJSON *b)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(b, "method");
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(b, "kwargs");
    if (!cJSON_IsString(m))
        return bad(r, "collective_rpc needs a string \"method\"");
    if (kw && !cJSON_IsObject(kw) && !cJSON_IsNull(kw))
        return bad(r, "collective_rpc \"kwargs\" must be an object");
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
            return bad(r, "update_weights needs kwargs.update_info (an object)");
        int has = get_version(ui, "syncroll_version", NULL, &v);
        if (has < 0)
            return bad(r, "update_info.syncroll_version must be a non-negative integer");
        if (has && !(rc = sr_engine_sync_call(r->srv->e, SR_SC_UPDATE, name, &err)))
            return apply(r, v);
        if (!has)
            rc = sr_engine_sync_no_transfer(r->srv->e, name, &err);
    } else if (strcmp(name, "skyrl_finish_weight_update") == 0) {
        rc = sr_engine_sync_finish(r->srv->e, finish_target(kw), wf, &v, &err);
    } else if (strcmp(name, "skyrl_sleep_for_weight_sync") == 0) {
        /* SkyRL's worker extension sleeps the allocator only (both tags; offload_kv says whether
         * the KV cache is kept on the CPU, which the mock's cache does not need): the scheduler
         * is not paused, the caller holds its own keep-mode pause. */
        const cJSON *ok = kw ? cJSON_GetObjectItemCaseSensitive(kw, "offload_kv") : NULL;
        if (ok && !cJSON_IsBool(ok))
            return bad(r, "skyrl_sleep_for_weight_sync kwargs.offload_kv must be a boolean");
        pthread_mutex_lock(&r->srv->mu);
        r->srv->asleep = SR_SLEEP_ALL;
        pthread_mutex_unlock(&r->srv->mu);
    } else if (strcmp(name, "skyrl_wake_for_weight_sync") == 0) {
        unsigned tags;
        if (rpc_tags(kw, &tags))
            return bad(r, "skyrl_wake_for_weight_sync kwargs.tags must be an array of "
                          "\"weights\" and \"kv_cache\"");
        wake_tags(r->srv, tags, 0);
    } else {
        return bad(r, "unknown collective_rpc method");
    }
    return rc ? sync_error(r, rc, &err) : ok_json(r, "{\"results\":[null]}");
}

static enum MHD_Result do_bucket(req *r)
{
    sr_err err = SR_ERR_INIT;
    int rc = r->brx ? sr_engine_bucket_end(r->brx, r->pick.f[SR_FL_WEIGHTS], &err)
                    : sr_err_set(&err, SR_E_NOMEM, "cannot receive a bucket");
    r->brx = NULL;
    return rc ? sync_error(r, rc, &err) : ok_json(r, "{\"results\":[null]}");
}

static enum MHD_Result do_fetch(req *r, const cJSON *b)
{
    int64_t v = -1, fetched = -1;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(b, "sync_dir");
    if (get_version(b, "target_version", NULL, &v) <= 0 || !cJSON_IsString(d))
        return bad(r, "fetch_weights needs a non-negative integer \"target_version\" and a "
                      "string \"sync_dir\"");
    sr_err err = SR_ERR_INIT;
    int rc =
        sr_engine_fetch(r->srv->e, v, d->valuestring, r->pick.f[SR_FL_WEIGHTS], &fetched, &err);
    if (rc)
        return sync_error(r, rc, &err);
    char out[96];
    snprintf(out, sizeof(out), "{\"version\":%lld,\"fetched_version\":%lld}",
             (long long)sr_engine_version(r->srv->e), (long long)fetched);
    return ok_json(r, out);
}

static enum MHD_Result do_weights(req *r, const cJSON *b)
{
    int64_t v = -1;
    if (r->ep == SR_EP_INIT_TRANSFER) {
        const cJSON *ii = cJSON_GetObjectItemCaseSensitive(b, "init_info");
        if (!cJSON_IsObject(ii))
            return bad(r, "init_weight_transfer_engine needs \"init_info\" (an object)");
        sr_err err = SR_ERR_INIT;
        int rc = sr_engine_sync_call(r->srv->e, SR_SC_INIT, NULL, &err);
        if (rc)
            return sync_error(r, rc, &err);
        char *txt = cJSON_PrintUnformatted(ii);
        sr_engine_set_init_info(r->srv->e, txt);
        free(txt);
        return ok_empty(r);
    }
    if (r->ep == SR_EP_FETCH_WEIGHTS)
        return do_fetch(r, b);
    const cJSON *ui = cJSON_GetObjectItemCaseSensitive(b, "update_info");
    if (!cJSON_IsObject(ui) || get_version(ui, "target_version", "version", &v) <= 0)
        return bad(r, "update_weights needs update_info.target_version (a non-negative integer)");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(ui, "sync_dir");
    if (d && !cJSON_IsString(d))
        return bad(r, "update_info.sync_dir must be a string");
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
    return ok_json(r, out);
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
    cJSON *b = body_object(r, &ret);
    if (!b)
        return ret;
    switch (r->ep) {
    case SR_EP_RESET_PREFIX: {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(b, "reset_running_requests");
        if (x && !cJSON_IsBool(x))
            ret = bad(r, "reset_running_requests must be a boolean");
        else {
            sr_engine_prefix_reset(r->srv->e);
            ret = ok_empty(r);
        }
        break;
    }
    case SR_EP_FINISH_SESSION: {
        const char *sid = arg(r, "session_id");
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(b, "session_id");
        if (!sid && cJSON_IsString(x))
            sid = x->valuestring;
        sr_engine_session_finish(r->srv->e, sid);
        ret = ok_empty(r);
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
    const char *t = arg(r, "tensors");
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
        return bad(r, q.msg);
    int vllm = r->srv->cfg->sync_dialect == SR_SYNC_DIALECT_VLLM;
    switch (r->ep) {
    case SR_EP_START_UPDATE:
    case SR_EP_FINISH_UPDATE:
    case SR_EP_UPDATE_VERSION:
    case SR_EP_WEIGHT_INFO:
    case SR_EP_WEIGHT_CHECKER:
    case SR_EP_IS_PAUSED:
        /* vLLM's native routes exist only in its control plane. */
        return vllm ? sr_srv_control_vllm(r)
                    : sr_srv_error(r, 404, "NotFoundError", 0,
                                   "Not Found (a route of the vllm control plane; this engine "
                                   "speaks engines.sync_dialect \"skyrl\")");
    case SR_EP_INIT_TRANSFER:
    case SR_EP_UPDATE_WEIGHTS:
        if (vllm)
            return sr_srv_control_vllm(r);
        return with_body(r);
    case SR_EP_HEALTH:
        return ok_empty(r);
    case SR_EP_WORLD_SIZE:
        snprintf(tmp, sizeof(tmp), "{\"world_size\":%d}", r->srv->cfg->world_size);
        return ok_json(r, tmp);
    case SR_EP_STATE:
        return do_state(r);
    case SR_EP_PAUSE:
        return do_pause(r);
    case SR_EP_RESUME:
        return do_resume(r);
    case SR_EP_SLEEP:
        return do_sleep(r);
    case SR_EP_WAKE_UP:
        return do_wake_up(r);
    case SR_EP_IS_SLEEPING:
        return do_is_sleeping(r);
    default:
        return with_body(r);
    }
}
