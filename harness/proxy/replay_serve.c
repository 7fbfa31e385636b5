/* syncroll replay --serve: a capture played back as an engine (replay_serve.h). */
#include "replay_serve.h"

#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>
#include <xxhash.h>

#include "proxy.h"
#include "proxy_answer.h"
#include "spec/endpoints.h"
#include "sr_buf.h"

#define RS_MAX_REQUEST (64u << 20)
#define RS_MAX_BODY    ((size_t)4 << 30) /* a recorded answer is at most this large */

struct sr_replay_serve {
    sr_replay_serve_config cfg;
    char url[80];
    struct MHD_Daemon *d;
    /* Sessioned exchanges sorted by (session, endpoint, seq), and every exchange sorted by
     * (method, uri, request size and digest, seq). A group is a run of equal keys; the number
     * of requests a group has answered is kept at the group's first index. */
    const sr_capture_exchange **by_turn, **by_body;
    size_t n_turn, n_body;
    size_t *turn_used, *body_used;
    pthread_mutex_t mu;
    _Atomic int64_t answered, no_match;
};

/* One request: its key fields, filled as it arrives. */
typedef struct rs_req {
    char uri[SR_CAPTURE_STR_MAX];
    char method[16];
    char session[SR_CAPTURE_STR_MAX];
    char endpoint[64];
    sr_buf body;
    int too_large; /* 1: body over the bound; 2: URI too long */
    int begun;
} rs_req;

/* The endpoint part of a turn key: the endpoint's name, or for an unknown path method and URI. */
static int endpoint_cmp(const char *ea, const char *ma, const char *ua, const char *eb,
                        const char *mb, const char *ub)
{
    int c = strcmp(ea, eb);
    if (c || ea[0])
        return c;
    return (c = strcmp(ma, mb)) ? c : strcmp(ua, ub);
}

static int turn_cmp(const void *a, const void *b)
{
    const sr_capture_exchange *x = *(const sr_capture_exchange *const *)a;
    const sr_capture_exchange *y = *(const sr_capture_exchange *const *)b;
    int c = strcmp(x->session, y->session);
    if (!c)
        c = endpoint_cmp(x->endpoint, x->method, x->uri, y->endpoint, y->method, y->uri);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int body_key_cmp(const sr_capture_exchange *x, const char *method, const char *uri,
                        uint64_t bytes, uint64_t xxh3)
{
    int c = strcmp(x->method, method);
    if (!c)
        c = strcmp(x->uri, uri);
    if (!c)
        c = (x->request.bytes > bytes) - (x->request.bytes < bytes);
    if (!c)
        c = (x->request.xxh3 > xxh3) - (x->request.xxh3 < xxh3);
    return c;
}

static int body_cmp(const void *a, const void *b)
{
    const sr_capture_exchange *x = *(const sr_capture_exchange *const *)a;
    const sr_capture_exchange *y = *(const sr_capture_exchange *const *)b;
    int c = body_key_cmp(x, y->method, y->uri, y->request.bytes, y->request.xxh3);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* The exchange answering request r, or NULL; counts the request in its group. */
static const sr_capture_exchange *match(sr_replay_serve *s, const rs_req *r)
{
    const sr_capture_exchange *hit = NULL;
    pthread_mutex_lock(&s->mu);
    if (r->session[0]) { /* lower bound of (session, endpoint) */
        size_t lo = 0, hi = s->n_turn;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            const sr_capture_exchange *x = s->by_turn[mid];
            int c = strcmp(x->session, r->session);
            if (!c)
                c = endpoint_cmp(x->endpoint, x->method, x->uri, r->endpoint, r->method, r->uri);
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t n = 0;
        while (lo + n < s->n_turn && strcmp(s->by_turn[lo + n]->session, r->session) == 0 &&
               endpoint_cmp(s->by_turn[lo + n]->endpoint, s->by_turn[lo + n]->method,
                            s->by_turn[lo + n]->uri, r->endpoint, r->method, r->uri) == 0)
            n++;
        if (n && s->turn_used[lo] < n)
            hit = s->by_turn[lo + s->turn_used[lo]++];
    }
    if (!hit) {
        uint64_t bytes = r->body.len;
        uint64_t h = bytes ? XXH3_64bits(r->body.data, r->body.len) : 0;
        size_t lo = 0, hi = s->n_body;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (body_key_cmp(s->by_body[mid], r->method, r->uri, bytes, h) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t n = 0;
        while (lo + n < s->n_body &&
               body_key_cmp(s->by_body[lo + n], r->method, r->uri, bytes, h) == 0)
            n++;
        if (n) {
            size_t k = s->body_used[lo] < n ? s->body_used[lo]++ : n - 1;
            hit = s->by_body[lo + k];
        }
    }
    pthread_mutex_unlock(&s->mu);
    return hit;
}

/* A recorded answer as it is sent: complete ones with their length, incomplete ones cut. */
typedef struct rs_body {
    sr_buf b;
    size_t off;
    int complete;
} rs_body;

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    rs_body *rb = cls;
    (void)pos;
    if (rb->off >= rb->b.len)
        return rb->complete ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
    size_t n = rb->b.len - rb->off < max ? rb->b.len - rb->off : max;
    memcpy(buf, rb->b.data + rb->off, n);
    rb->off += n;
    return (ssize_t)n;
}

static void body_free(void *cls)
{
    rs_body *rb = cls;
    sr_buf_release(&rb->b);
    free(rb);
}

static enum MHD_Result answer_exchange(sr_replay_serve *s, struct MHD_Connection *c,
                                       const sr_capture_exchange *x)
{
    if (x->status < 100 || x->status > 999)
        return MHD_NO; /* recorded with no answer: the connection closes without one */
    rs_body *rb = calloc(1, sizeof *rb);
    sr_err err = SR_ERR_INIT;
    if (!rb)
        return MHD_NO;
    rb->b.max = RS_MAX_BODY;
    rb->complete = x->complete;
    if (sr_capture_read_body(s->cfg.capture, &x->response, &rb->b, RS_MAX_BODY, &err)) {
        body_free(rb);
        return sr_px_answer_error(c, 500, sr_code_name(err.code), err.msg);
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(
        rb->complete ? rb->b.len : MHD_SIZE_UNKNOWN, 64 << 10, body_read, rb, body_free);
    if (!resp) {
        body_free(rb);
        return MHD_NO;
    }
    if (x->response.content_type[0])
        MHD_add_response_header(resp, "Content-Type", x->response.content_type);
    char seq[24];
    snprintf(seq, sizeof seq, "%" PRId64, x->seq);
    MHD_add_response_header(resp, "X-Syncroll-Replay-Seq", seq);
    atomic_fetch_add(&s->answered, 1);
    enum MHD_Result res = MHD_queue_response(c, (unsigned)x->status, resp);
    MHD_destroy_response(resp);
    return res;
}

static enum MHD_Result handle(sr_replay_serve *s, rs_req *r, struct MHD_Connection *c,
                              const char *url)
{
    if (r->too_large)
        return sr_px_answer_error(c, r->too_large == 2 ? 414 : 413, "resource.limit",
                                  r->too_large == 2
                                      ? "the request URI is too long"
                                      : "the request body is larger than replay takes");
    if (strcmp(url, "/syncroll/v1/replay") == 0 && strcmp(r->method, "GET") == 0) {
        sr_buf b = SR_BUF_INIT;
        int rc = sr_buf_printf(
            &b, NULL, "{\"exchanges\":%zu,\"answered\":%" PRId64 ",\"no_match\":%" PRId64 "}",
            s->n_body, atomic_load(&s->answered), atomic_load(&s->no_match));
        return sr_px_queue_json(c, 200, &b, rc);
    }
    int ep = sr_endpoint_lookup(r->method, url);
    if (ep >= 0)
        snprintf(r->endpoint, sizeof r->endpoint, "%s", sr_endpoint_name((sr_endpoint)ep));
    const sr_capture_exchange *x = match(s, r);
    if (x)
        return answer_exchange(s, c, x);
    atomic_fetch_add(&s->no_match, 1);
    char msg[SR_CAPTURE_STR_MAX * 2 + 160];
    snprintf(msg, sizeof msg,
             "the capture has no answer for %s %s%s%s (no exchange of this session and turn, "
             "none with this method, URI and body)",
             r->method, r->uri, r->session[0] ? " of session " : "", r->session);
    return sr_px_answer_error(c, 404, sr_code_name(SR_E_REPLAY_NO_MATCH), msg);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)c;
    sr_replay_serve *s = cls;
    rs_req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->body.max = s->cfg.max_request_bytes;
    size_t n = strlen(uri);
    if (n >= sizeof r->uri)
        r->too_large = 2;
    else
        memcpy(r->uri, uri, n + 1);
    return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    rs_req *r = *con_cls;
    if (!r)
        return MHD_NO;
    if (!r->begun) {
        r->begun = 1;
        snprintf(r->method, sizeof r->method, "%s", method);
        const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Session-ID");
        if (sid && strlen(sid) < sizeof r->session)
            memcpy(r->session, sid, strlen(sid) + 1);
        return MHD_YES;
    }
    if (*upload_size) {
        sr_err err = SR_ERR_INIT;
        if (!r->too_large && sr_buf_append(&r->body, upload_data, *upload_size, &err))
            r->too_large = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    return handle(cls, r, c, url);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    rs_req *r = *con_cls;
    *con_cls = NULL;
    if (r)
        sr_buf_release(&r->body);
    free(r);
}

/* Sorts the capture's exchanges into the two match orders. */
static int build_index(sr_replay_serve *s, sr_err *err)
{
    size_t n = sr_capture_count(s->cfg.capture);
    s->by_turn = calloc(n ? n : 1, sizeof *s->by_turn);
    s->by_body = calloc(n ? n : 1, sizeof *s->by_body);
    s->turn_used = calloc(n ? n : 1, sizeof *s->turn_used);
    s->body_used = calloc(n ? n : 1, sizeof *s->body_used);
    if (!s->by_turn || !s->by_body || !s->turn_used || !s->body_used)
        return sr_err_set(err, SR_E_NOMEM, "no memory to index %zu exchanges", n);
    for (size_t i = 0; i < n; i++) {
        const sr_capture_exchange *x = sr_capture_at(s->cfg.capture, i);
        if (x->session[0])
            s->by_turn[s->n_turn++] = x;
        s->by_body[s->n_body++] = x;
    }
    qsort(s->by_turn, s->n_turn, sizeof *s->by_turn, turn_cmp);
    qsort(s->by_body, s->n_body, sizeof *s->by_body, body_cmp);
    return 0;
}

int sr_replay_serve_start(sr_replay_serve **out, const sr_replay_serve_config *cfg, sr_err *err)
{
    *out = NULL;
    sr_replay_serve *s = calloc(1, sizeof *s);
    if (!s)
        return sr_err_set(err, SR_E_NOMEM, "no memory for the replay server");
    s->cfg = *cfg;
    if (!s->cfg.max_request_bytes)
        s->cfg.max_request_bytes = RS_MAX_REQUEST;
    pthread_mutex_init(&s->mu, NULL);
    int rc = build_index(s, err);
    if (rc) {
        sr_replay_serve_stop(s);
        return rc;
    }
    struct sockaddr_in sin;
    const char *addr;
    if ((rc = sr_px_listen_addr(&sin, &addr, cfg->listen_addr, cfg->port, err))) {
        sr_replay_serve_stop(s);
        return rc;
    }
    s->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
        (uint16_t)cfg->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&sin, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)SR_PROXY_MAX_CONNECTIONS, MHD_OPTION_END);
    if (!s->d) {
        sr_replay_serve_stop(s);
        return sr_err_set(err, SR_E_ENGINE_START, "replay cannot listen on %s:%d", addr, cfg->port);
    }
    snprintf(s->url, sizeof s->url, "http://%s:%d", addr, sr_px_bound_port(s->d, cfg->port));
    *out = s;
    return 0;
}

const char *sr_replay_serve_url(const sr_replay_serve *s)
{
    return s->url;
}

void sr_replay_serve_stop(sr_replay_serve *s)
{
    if (!s)
        return;
    if (s->d)
        MHD_stop_daemon(s->d);
    free(s->by_turn);
    free(s->by_body);
    free(s->turn_used);
    free(s->body_used);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
