/* Responses of the mock engine's server and the transport and HTTP faults that shape them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "jsonw.h"
#include "server_priv.h"

static size_t cut_for(const req *r, const sr_fault *t)
{
    return sr_fault_cut_offset(t, r->resp.data, r->resp.len);
}

static ssize_t read_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    req *r = cls;
    sr_server *s = r->srv;
    const sr_fault *t = r->transport;
    pthread_mutex_lock(&s->mu);
    int down = s->stopping || r->state == RS_SHUTDOWN;
    pthread_mutex_unlock(&s->mu);
    if (down)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    size_t limit = t->kind == SR_FK_DRIBBLE ? r->resp.len : r->cut;
    if (pos >= limit) {
        if (t->kind != SR_FK_STALL_MID_BODY || pos >= r->resp.len)
            return pos >= r->resp.len ? MHD_CONTENT_READER_END_OF_STREAM
                                      : MHD_CONTENT_READER_END_WITH_ERROR;
        pthread_mutex_lock(&s->mu);
        r->state = RS_STALLED;
        int held = sr_srv_suspend_locked(r);
        if (held)
            sr_srv_list_add_locked(&s->stalled, r, RL_STALLED);
        pthread_mutex_unlock(&s->mu);
        return held ? 0 : MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = limit - (size_t)pos < max ? limit - (size_t)pos : max;
    if (t->kind == SR_FK_DRIBBLE) {
        int64_t now = sr_srv_now_ns();
        if (now < r->next_send_ns) {
            pthread_mutex_lock(&s->mu);
            r->state = RS_SENDING;
            sr_srv_schedule_locked(r, r->next_send_ns);
            int down2 = r->state == RS_SHUTDOWN;
            pthread_mutex_unlock(&s->mu);
            return down2 ? MHD_CONTENT_READER_END_WITH_ERROR : 0;
        }
        /* Twenty slices a second keep the rate smooth without waking too often. */
        size_t chunk = (size_t)(t->bytes_per_second / 20.0);
        chunk = chunk ? chunk : 1;
        n = n < chunk ? n : chunk;
        r->next_send_ns = now + (int64_t)((double)n * 1e9 / t->bytes_per_second);
    }
    memcpy(buf, r->resp.data + pos, n);
    return (ssize_t)n;
}

static int is_delivery_fault(const sr_fault *t)
{
    return t && (t->kind == SR_FK_TRUNCATE || t->kind == SR_FK_TRUNCATE_IN_BLOB ||
                 t->kind == SR_FK_TRUNCATE_AFTER_BLOBS || t->kind == SR_FK_STALL_MID_BODY ||
                 t->kind == SR_FK_DRIBBLE);
}

static enum MHD_Result queue(req *r, unsigned status, const char *ctype, const char *hname,
                             const char *hval)
{
    const sr_fault *t = r->pick.f[SR_FL_TRANSPORT];
    struct MHD_Response *resp;
    if (is_delivery_fault(t)) {
        r->transport = t;
        r->cut = cut_for(r, t);
        int clean_cut =
            t->kind != SR_FK_DRIBBLE && t->kind != SR_FK_STALL_MID_BODY && !t->keep_length;
        if (clean_cut)
            resp = MHD_create_response_from_buffer(r->cut, r->resp.data, MHD_RESPMEM_PERSISTENT);
        else
            resp = MHD_create_response_from_callback(r->resp.len, 64 * 1024, read_body, r, NULL);
    } else {
        resp = MHD_create_response_from_buffer(r->resp.len, r->resp.data, MHD_RESPMEM_PERSISTENT);
    }
    if (!resp)
        return MHD_NO;
    if (ctype)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (hname)
        MHD_add_response_header(resp, hname, hval);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pthread_mutex_lock(&r->srv->mu);
    r->state = RS_SENDING;
    /* A daemon quiesced by a refuse fault serves its open connections to the end, but closes
     * each after its answer: clients that keep connections alive (the client's conn pool) would
     * otherwise hold it, and its threads, forever, and it could never be retired. A connection's
     * socket context (sr_conn) records the daemon generation it was accepted in (server.c). */
    const sr_conn *cx = ci ? ci->socket_context : NULL;
    int old_daemon = cx && cx->gen != r->srv->daemon_gen;
    pthread_mutex_unlock(&r->srv->mu);
    if (old_daemon && !(hname && strcasecmp(hname, MHD_HTTP_HEADER_CONNECTION) == 0))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result sr_srv_respond(req *r, unsigned status, const char *ctype, sr_buf *body, int take)
{
    if (body != &r->resp) {
        sr_buf_reset(&r->resp);
        r->resp.max = 0;
        if (take) {
            sr_buf_release(&r->resp);
            r->resp = *body;
            sr_buf z = SR_BUF_INIT;
            *body = z;
        } else if (body && body->len && sr_buf_append(&r->resp, body->data, body->len, NULL)) {
            return MHD_NO;
        }
    }
    if (!r->resp.data && sr_buf_append(&r->resp, "", 0, NULL))
        return MHD_NO;
    return queue(r, status, ctype, NULL, NULL);
}

enum MHD_Result sr_srv_respond_text(req *r, unsigned status, const char *ctype, const char *text)
{
    sr_buf_reset(&r->resp);
    r->resp.max = 0;
    if (sr_buf_puts(&r->resp, text, NULL))
        return MHD_NO;
    return queue(r, status, ctype, NULL, NULL);
}

static int error_json(sr_buf *b, unsigned status, const char *type, int code, const char *msg)
{
    sr_buf_reset(b);
    b->max = 0;
    int rc = sr_buf_puts(b, "{\"error\":{\"message\":", NULL);
    if (!rc)
        rc = sr_jw_str(b, msg, NULL);
    if (!rc)
        rc = sr_buf_printf(b, NULL, ",\"type\":\"%s\",\"code\":%u", type, status);
    if (!rc && code)
        rc = sr_buf_printf(b, NULL, ",\"check\":\"%s\"", sr_code_name(code));
    return rc ? rc : sr_buf_puts(b, "}}", NULL);
}

enum MHD_Result sr_srv_error(req *r, unsigned status, const char *type, int code, const char *msg)
{
    if (error_json(&r->resp, status, type, code, msg))
        return MHD_NO;
    return queue(r, status, "application/json", NULL, NULL);
}

const char *sr_srv_arg(req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

enum MHD_Result sr_srv_ok(req *r, const char *json)
{
    return json ? sr_srv_respond_text(r, 200, "application/json", json)
                : sr_srv_respond_text(r, 200, NULL, "");
}

enum MHD_Result sr_srv_bad_request(req *r, const char *msg)
{
    return sr_srv_error(r, 400, "BadRequestError", SR_E_ENGINE_REQUEST, msg);
}

enum MHD_Result sr_srv_error_close(req *r, unsigned status, const char *type, int code,
                                   const char *msg)
{
    if (error_json(&r->resp, status, type, code, msg))
        return MHD_NO;
    return queue(r, status, "application/json", MHD_HTTP_HEADER_CONNECTION, "close");
}

/* ---- HTTP-layer faults ---- */

enum MHD_Result sr_srv_http_fault(req *r, const sr_fault *h)
{
    char num[32];
    switch (h->kind) {
    case SR_FK_HTTP_502_HTML:
        sr_buf_reset(&r->resp);
        if (sr_buf_printf(&r->resp, NULL,
                          "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
                          "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>%s</center>\r\n"
                          "</body>\r\n</html>\r\n",
                          h->text[0] ? h->text : "nginx"))
            return MHD_NO;
        return queue(r, 502, "text/html", NULL, NULL);
    case SR_FK_HTTP_503_JSON:
        if (error_json(&r->resp, 503, "ServiceUnavailableError", 0,
                       h->text[0] ? h->text : "The engine is overloaded; try again later."))
            return MHD_NO;
        return queue(r, 503, "application/json", NULL, NULL);
    case SR_FK_HTTP_429:
        if (error_json(&r->resp, 429, "RateLimitError", 0,
                       h->text[0] ? h->text : "Too many requests; retry later."))
            return MHD_NO;
        snprintf(num, sizeof(num), "%lld", (long long)h->retry_after);
        return queue(r, 429, "application/json", MHD_HTTP_HEADER_RETRY_AFTER, num);
    default:
        sr_buf_reset(&r->resp);
        if (sr_buf_puts(&r->resp, h->text[0] ? h->text : "prompt too long", NULL))
            return MHD_NO;
        return queue(r, 400, "text/plain", NULL, NULL);
    }
}

/* Sends a TCP reset: connect(AF_UNSPEC) disconnects the socket with an RST at once, before MHD
 * gets to close it gracefully (it would send a FIN first). */
enum MHD_Result sr_srv_reset(req *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) {
        struct linger lg = {1, 0};
        setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        struct sockaddr sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_family = AF_UNSPEC;
        (void)connect(ci->connect_fd, &sa, sizeof(sa));
    }
    return MHD_NO;
}

enum MHD_Result sr_srv_refuse(req *r, const sr_fault *t)
{
    sr_server *s = r->srv;
    int64_t until = sr_srv_now_ns() + (int64_t)(t->ms * 1e6);
    pthread_mutex_lock(&s->mu);
    if (!s->refusing && !s->stopping && s->d && s->nold < SR_SERVER_MAX_DAEMONS) {
        MHD_socket fd = MHD_quiesce_daemon(s->d);
        if (fd != MHD_INVALID_SOCKET)
            close(fd);
        s->old[s->nold++] = s->d;
        s->d = NULL;
        s->daemon_gen++;
        s->refusing = 1;
    }
    if (s->refusing && until > s->refuse_until_ns)
        s->refuse_until_ns = until;
    pthread_mutex_unlock(&s->mu);
    ssize_t w = write(s->wake[1], "r", 1);
    (void)w;
    return sr_srv_reset(r);
}

/* ---- framing of a request head (server_priv.h) ---- */

/* Counts the Content-Length and Transfer-Encoding headers of a request and whether the
 * Content-Length values agree (libmicrohttpd reads only the first of each). */
typedef struct framing {
    int n_len, n_te, len_differ;
    const char *len, *te;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    framing *f = cls;
    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        f->len_differ |= f->n_len++ && strcmp(f->len, value ? value : "") != 0;
        f->len = value ? value : "";
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->n_te++;
        f->te = value ? value : "";
    }
    return MHD_YES;
}

enum MHD_Result sr_srv_check_framing(req *r, int *refused)
{
    framing f = {0, 0, 0, "", ""};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_framing, &f);
    char msg[200];
    *refused = 1;
    if (f.n_te && (f.n_te > 1 || strcasecmp(f.te, "chunked") != 0)) {
        snprintf(msg, sizeof(msg), "Transfer-Encoding '%.64s' is not implemented (only chunked)",
                 f.te);
        return sr_srv_error_close(r, 501, "NotImplementedError", SR_E_ENGINE_UNSUPPORTED, msg);
    }
    if (f.len_differ || (f.n_len && f.n_te))
        return sr_srv_error_close(r, 400, "BadRequestError", SR_E_ENGINE_BAD_FRAMING,
                                  f.n_te ? "Content-Length beside Transfer-Encoding"
                                         : "conflicting Content-Length headers");
    char *end = NULL;
    unsigned long long n = f.n_len ? strtoull(f.len, &end, 10) : 0;
    if (f.n_len && !r->brx && end && end != f.len && *end == '\0' &&
        n > r->srv->cfg->max_body_bytes) {
        snprintf(msg, sizeof(msg),
                 "request body of %llu bytes (Content-Length) is larger than the engine's limit "
                 "of %zu bytes",
                 n, r->srv->cfg->max_body_bytes);
        return sr_srv_error_close(r, 413, "RequestTooLargeError", SR_E_LIMIT, msg);
    }
    *refused = 0;
    return MHD_YES;
}
