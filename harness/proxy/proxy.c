/* syncroll proxy: the server side (proxy.h): requests in, faults picked, exchanges recorded. */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "proxy_answer.h"
#include "proxy_priv.h"
#include "proxy_routes.h"
#include "spec/dialect.h"
#include "spec/endpoints.h"

int sr_proxy_check_faults(const sr_fault_plan *plan, sr_err *err)
{
    for (size_t i = 0; i < sr_fault_plan_count(plan); i++) {
        const sr_fault *f = sr_fault_plan_at(plan, i);
        sr_fault_layer l = sr_fault_kind_layer(f->kind);
        int route = l == SR_FL_MODEL ? sr_px_routes_supported(f, i, err) : 0;
        if (route < 0)
            return route;
        if (l != SR_FL_DELAY && l != SR_FL_HTTP && l != SR_FL_TRANSPORT && !route)
            return sr_err_set(err, SR_E_FAULT_SPEC,
                              "fault %zu (%s): the proxy applies the delay, http and transport "
                              "layers and the route faults of the fault grammar; this kind is of "
                              "the %s layer (use it in the engine's engines.faults)",
                              i, sr_fault_kind_name(f->kind), sr_fault_layer_name(l));
        if (f->kind == SR_FK_REFUSE)
            return sr_err_set(err, SR_E_FAULT_SPEC,
                              "fault %zu (refuse): the proxy cannot close its own port for a "
                              "window; use reset",
                              i);
    }
    return 0;
}

/* A route fault fired for r: the answer, read whole, is rewritten in place (proxy_routes.h).
 * One the fault cannot be placed on goes out as the engine wrote it, named on standard error
 * and counted in routes_unchanged. The capture already holds the engine's bytes. */
static void rewrite_routes(px_req *r, unsigned status)
{
    const sr_fault *f = r->pick.f[SR_FL_MODEL];
    const char *why = "the engine answered with an error status";
    sr_buf out = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    int rc = 0;
    if (r->too_long)
        why = "the answer is longer than --max-rewrite-bytes (streamed on unchanged)";
    else if (status == 200 && r->result == CURLE_OK)
        rc = sr_px_routes_rewrite(&out, &why, r->x.uri, r->body.data, r->body.len,
                                  r->pending.data ? r->pending.data : "", r->pending.len, &f->rule,
                                  &err);
    else if (r->result != CURLE_OK)
        why = "the engine's answer ended early";
    if (rc == 1) {
        sr_buf_release(&r->pending);
        r->pending = out;
        return;
    }
    sr_buf_release(&out);
    atomic_fetch_add(&r->p->routes_unchanged, 1);
    fprintf(stderr, "syncroll proxy: fault \"%s\" (%s) left %s %s unchanged: %s\n", f->id,
            sr_fault_kind_name(f->kind), r->x.method, r->x.uri, rc < 0 ? err.msg : why);
}

/* The 1-based turn of a new generate in `session` (0 without one), as the engine counts it. */
static int64_t session_turn(sr_proxy *p, const char *session)
{
    if (!session[0])
        return 0;
    uint64_t h = 1469598103934665603ull;
    for (const char *c = session; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    pthread_mutex_lock(&p->mu);
    if (p->n_sessions >= PX_SESSIONS * 7 / 8) { /* full: start again, as the engine does */
        for (size_t i = 0; i < PX_SESSIONS; i++) {
            free(p->sessions[i].key);
            p->sessions[i].key = NULL;
        }
        p->n_sessions = 0;
    }
    size_t i = (size_t)(h % PX_SESSIONS);
    while (p->sessions[i].key && strcmp(p->sessions[i].key, session) != 0)
        i = (i + 1) % PX_SESSIONS;
    int64_t turn = 0;
    if (p->sessions[i].key) {
        turn = ++p->sessions[i].turns;
    } else if ((p->sessions[i].key = strdup(session))) {
        p->sessions[i].turns = turn = 1;
        p->n_sessions++;
    }
    pthread_mutex_unlock(&p->mu);
    return turn;
}

/* The http layer's answers, made by the proxy without forwarding (spec/faults.h). */
static enum MHD_Result answer_http_fault(struct MHD_Connection *c, const sr_fault *f)
{
    const char *text = f->text[0] ? f->text : NULL;
    struct MHD_Response *resp;
    unsigned status;
    char buf[SR_FAULT_TEXT_MAX + 128];
    switch (f->kind) {
    case SR_FK_HTTP_502_HTML:
        status = 502;
        snprintf(buf, sizeof buf, "<html><body><h1>502 Bad Gateway</h1>%s</body></html>",
                 text ? text : "");
        break;
    case SR_FK_HTTP_429:
        status = 429;
        snprintf(buf, sizeof buf, "{\"error\":{\"message\":\"%s\",\"code\":429}}",
                 text ? text : "rate limited");
        break;
    case SR_FK_HTTP_400_TEXT:
        status = 400;
        snprintf(buf, sizeof buf, "%s", text ? text : "bad request");
        break;
    default:
        status = 503;
        snprintf(buf, sizeof buf, "{\"error\":{\"message\":\"%s\",\"code\":503}}",
                 text ? text : "service unavailable");
    }
    resp = MHD_create_response_from_buffer(strlen(buf), buf, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type",
                            status == 502   ? "text/html"
                            : status == 400 ? "text/plain"
                                            : "application/json");
    if (f->kind == SR_FK_HTTP_429) {
        char ra[24];
        snprintf(ra, sizeof ra, "%" PRId64, f->retry_after > 0 ? f->retry_after : 1);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result answer_state(sr_proxy *p, struct MHD_Connection *c)
{
    sr_buf b = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    int rc = sr_buf_puts(&b, "{\"upstream\":", &err);
    if (!rc)
        rc = sr_buf_put_json_string(&b, p->upstream, &err);
    if (!rc)
        rc = sr_buf_printf(&b, &err,
                           ",\"exchanges\":%" PRId64 ",\"upstream_failures\":%" PRId64
                           ",\"capture_errors\":%" PRId64 ",\"routes_unchanged\":%" PRId64
                           ",\"faults\":",
                           atomic_load(&p->exchanges), atomic_load(&p->failures),
                           atomic_load(&p->capture_errors), atomic_load(&p->routes_unchanged));
    if (!rc)
        rc = p->faults ? sr_faults_state_json(&b, p->faults, &err) : sr_buf_puts(&b, "[]", &err);
    if (!rc)
        rc = sr_buf_puts(&b, "}", &err);
    return sr_px_queue_json(c, 200, &b, rc);
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    (void)kind;
    px_req *r = cls;
    static const char *const skip[] = {"host",    "content-length",     "connection", "keep-alive",
                                       "expect",  "transfer-encoding",  "te",         "upgrade",
                                       "trailer", "proxy-authorization"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strcasecmp(k, skip[i]) == 0)
            return MHD_YES;
    char line[8192];
    if ((size_t)snprintf(line, sizeof line, "%s: %s", k, v ? v : "") < sizeof line) {
        struct curl_slist *n = curl_slist_append(r->hdrs, line);
        if (n)
            r->hdrs = n;
    }
    return MHD_YES;
}

/* The request body as the capture keeps it: with --redact-prompts, the prompt's token ids of a
 * JSON body ("token_ids", "prompt_token_ids", "input_ids" at the top level) written as zeros. */
static int record_request(px_req *r, sr_err *err)
{
    sr_capture_writer *w = r->p->cfg.record;
    const char *data = r->body.data ? r->body.data : "";
    size_t len = r->body.len;
    char *redacted = NULL;
    if (r->p->cfg.redact && len) {
        cJSON *doc = cJSON_ParseWithLength(data, len);
        static const char *const keys[] = {"token_ids", "prompt_token_ids", "input_ids"};
        for (size_t i = 0; doc && i < 3; i++) {
            cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, keys[i]), *e;
            if (!cJSON_IsArray(a))
                continue;
            cJSON_ArrayForEach(e, a)
            {
                if (cJSON_IsNumber(e))
                    cJSON_SetNumberValue(e, 0);
            }
        }
        if (doc && (redacted = cJSON_PrintUnformatted(doc))) {
            data = redacted;
            len = strlen(redacted);
        }
        cJSON_Delete(doc);
    }
    int rc = 0;
    if (len) {
        rc = sr_capture_sink_open(&r->req_sink, w, r->x.seq, "req", err);
        if (!rc)
            rc = sr_capture_sink_write(r->req_sink, data, len, err);
        if (!rc)
            rc = sr_capture_sink_close(r->req_sink, &r->x.request, err);
        r->req_sink = NULL;
    }
    free(redacted);
    return rc;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)c;
    px_req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->p = cls;
    r->x.complete = 1;
    r->body.max = r->p->cfg.max_request_bytes;
    size_t n = strlen(uri);
    if (n >= sizeof r->x.uri)
        r->too_large = 2; /* answered 414 */
    else
        memcpy(r->x.uri, uri, n + 1);
    return r;
}

/* The request head: what the capture and the fault selection need. */
static void begin(px_req *r, struct MHD_Connection *c, const char *method)
{
    sr_proxy *p = r->p;
    snprintf(r->x.method, sizeof r->x.method, "%s", method);
    const char *s = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Session-ID");
    if (s && strlen(s) < sizeof r->x.session)
        memcpy(r->x.session, s, strlen(s) + 1);
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    snprintf(r->x.request.content_type, sizeof r->x.request.content_type, "%s", ct ? ct : "");
    r->x.seq = p->cfg.record ? sr_capture_next_seq(p->cfg.record) : 0;
    r->x.t_start_us = p->cfg.record ? sr_capture_now_us(p->cfg.record) : 0;
    MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, r);
    r->hdrs = curl_slist_append(r->hdrs, "Expect:"); /* no 100-continue round trip */
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000.0),
                          (long)((ms - (double)(time_t)(ms / 1000.0) * 1000.0) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static enum MHD_Result handle(px_req *r, struct MHD_Connection *c, const char *url)
{
    sr_proxy *p = r->p;
    if (r->too_large)
        return sr_px_answer_error(c, r->too_large == 2 ? 414 : 413, "resource.limit",
                                  r->too_large == 2
                                      ? "the request URI is too long for the proxy"
                                      : "the request body is larger than the proxy takes");
    if (strcmp(url, "/syncroll/v1/proxy") == 0 && strcmp(r->x.method, "GET") == 0) {
        r->local = 1;
        return answer_state(p, c);
    }
    atomic_fetch_add(&p->exchanges, 1);
    int ep = sr_endpoint_lookup(r->x.method, url);
    /* Another dialect's generate routes are "generate", as that dialect's engine counts them. */
    if (p->cfg.dialect != SR_DIALECT_SKYRL && strcmp(r->x.method, "POST") == 0 &&
        sr_dialect_route_at((sr_dialect)p->cfg.dialect, url))
        ep = SR_EP_GENERATE;
    if (ep >= 0)
        snprintf(r->x.endpoint, sizeof r->x.endpoint, "%s", sr_endpoint_name((sr_endpoint)ep));
    if (p->faults && ep >= 0) {
        int64_t turn =
            ep == SR_EP_GENERATE || ep == SR_EP_NATIVE ? session_turn(p, r->x.session) : 0;
        sr_faults_pick(&r->pick, p->faults, 0, (sr_endpoint)ep, turn);
    }
    for (int l = 0; l < SR_FL_COUNT; l++)
        if (r->pick.f[l] && !r->x.fault[0])
            snprintf(r->x.fault, sizeof r->x.fault, "%s", r->pick.f[l]->id);
    if (r->pick.f[SR_FL_DELAY])
        sleep_ms(r->pick.delay_ms);
    if (r->pick.f[SR_FL_HTTP])
        return answer_http_fault(c, r->pick.f[SR_FL_HTTP]);
    const sr_fault *t = r->pick.f[SR_FL_TRANSPORT];
    if (t && t->kind == SR_FK_STALL) {
        pthread_mutex_lock(&p->mu);
        while (!p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    if (t && (t->kind == SR_FK_RESET || t->kind == SR_FK_STALL)) {
        r->x.complete = 0;
        return MHD_NO; /* the connection closes without an answer */
    }
    /* truncate*, stall_mid_body, dribble: read whole, then cut; a route fault: read whole, then
     * rewrite. */
    r->whole = t != NULL || r->pick.f[SR_FL_MODEL] != NULL;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->conn = ci ? ci->socket_context : NULL;
    sr_err err = SR_ERR_INIT;
    if (p->cfg.record && record_request(r, &err))
        px_capture_failed(r, &err);
    if (p->cfg.record &&
        sr_capture_sink_open(&r->resp_sink, p->cfg.record, r->x.seq, "resp", &err)) {
        r->resp_sink = NULL;
        px_capture_failed(r, &err);
    }
    if (px_forward(r, &err)) {
        atomic_fetch_add(&p->failures, 1);
        r->x.complete = 0;
        return sr_px_answer_error(c, 502, "proxy.upstream", err.msg);
    }
    if (p->cfg.record)
        r->x.t_head_us = sr_capture_now_us(p->cfg.record);
    if (r->pick.f[SR_FL_MODEL]) {
        long code = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
        rewrite_routes(r, (unsigned)code);
    }
    unsigned status = 0;
    struct MHD_Response *resp = px_stream_response(r, &status);
    if (!resp)
        return MHD_NO;
    r->x.status = (int)status;
    enum MHD_Result res = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    px_req *r = *con_cls;
    if (!r)
        return MHD_NO;
    if (!r->x.method[0]) {
        begin(r, c, method);
        return MHD_YES;
    }
    if (*upload_size) {
        sr_err err = SR_ERR_INIT;
        if (!r->too_large && sr_buf_append(&r->body, upload_data, *upload_size, &err))
            r->too_large = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    return handle(r, c, url);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    sr_proxy *p = cls;
    px_req *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        r->x.complete = 0;
    if (r->whole && r->sent < r->pending.len)
        r->x.complete = 0;
    if (p->cfg.record && r->x.method[0] && r->x.seq && !r->local) {
        sr_err err = SR_ERR_INIT;
        /* The rest of the upstream answer, if the client stopped reading, is not waited for. */
        snprintf(r->x.response.content_type, sizeof r->x.response.content_type, "%s", "");
        if (r->easy) {
            char *ct = NULL;
            curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
            if (ct)
                snprintf(r->x.response.content_type, sizeof r->x.response.content_type, "%s", ct);
            if (!r->done)
                r->x.complete = 0;
        }
        if (r->resp_sink && sr_capture_sink_close(r->resp_sink, &r->x.response, &err))
            px_capture_failed(r, &err);
        r->resp_sink = NULL;
        r->x.t_end_us = sr_capture_now_us(p->cfg.record);
        if (r->x.t_head_us < r->x.t_start_us)
            r->x.t_head_us = r->x.t_end_us;
        if (sr_capture_append(p->cfg.record, &r->x, &err))
            px_capture_failed(r, &err);
    }
    sr_capture_sink_abandon(r->req_sink);
    sr_capture_sink_abandon(r->resp_sink);
    px_upstream_release(r);
    sr_buf_release(&r->body);
    sr_buf_release(&r->head);
    sr_buf_release(&r->pending);
    free(r);
}

/* A client connection's upstream handles live as long as it (px_conn). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    (void)c;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        *socket_context = calloc(1, sizeof(px_conn));
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        px_conn_free(*socket_context);
        *socket_context = NULL;
    }
}

int sr_proxy_start(sr_proxy **out, const sr_proxy_config *cfg, sr_err *err)
{
    *out = NULL;
    size_t ulen = cfg->upstream ? strlen(cfg->upstream) : 0;
    while (ulen && cfg->upstream[ulen - 1] == '/')
        ulen--;
    if (ulen <= 7 || strncmp(cfg->upstream, "http://", 7) != 0 || ulen >= SR_PROXY_UPSTREAM_MAX ||
        memchr(cfg->upstream + 7, '/', ulen - 7))
        return sr_err_set(err, SR_E_INVAL,
                          "--upstream '%s' is not http://HOST:PORT (no path; https is not "
                          "proxied)",
                          cfg->upstream ? cfg->upstream : "");
    int rc = sr_proxy_check_faults(cfg->faults, err);
    if (rc)
        return rc;
    sr_proxy *p = calloc(1, sizeof *p);
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "no memory for the proxy");
    p->cfg = *cfg;
    if (!p->cfg.max_request_bytes)
        p->cfg.max_request_bytes = SR_PROXY_MAX_REQUEST;
    if (!p->cfg.max_rewrite_bytes)
        p->cfg.max_rewrite_bytes = SR_PROXY_MAX_REWRITE;
    memcpy(p->upstream, cfg->upstream, ulen);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (cfg->faults && (rc = sr_faults_new(&p->faults, cfg->faults, cfg->seed, err))) {
        sr_proxy_stop(p);
        return rc;
    }
    struct sockaddr_in sin;
    const char *addr;
    if ((rc = sr_px_listen_addr(&sin, &addr, cfg->listen_addr, cfg->port, err))) {
        sr_proxy_stop(p);
        return rc;
    }
    p->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
        (uint16_t)cfg->port, NULL, NULL, on_request, p, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&sin, MHD_OPTION_URI_LOG_CALLBACK, on_uri, p,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, p, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        p, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)SR_PROXY_MAX_CONNECTIONS, MHD_OPTION_END);
    if (!p->d) {
        sr_proxy_stop(p);
        return sr_err_set(err, SR_E_ENGINE_START, "the proxy cannot listen on %s:%d", addr,
                          cfg->port);
    }
    p->port = sr_px_bound_port(p->d, cfg->port);
    snprintf(p->url, sizeof p->url, "http://%s:%d", addr, p->port);
    *out = p;
    return 0;
}

int sr_proxy_port(const sr_proxy *p)
{
    return p->port;
}
const char *sr_proxy_url(const sr_proxy *p)
{
    return p->url;
}

int64_t sr_proxy_stop(sr_proxy *p)
{
    if (!p)
        return 0;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (p->d)
        MHD_stop_daemon(p->d);
    sr_faults_free(p->faults);
    for (size_t i = 0; i < PX_SESSIONS; i++)
        free(p->sessions[i].key);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    int64_t lost = atomic_load(&p->capture_errors);
    free(p);
    return lost;
}
