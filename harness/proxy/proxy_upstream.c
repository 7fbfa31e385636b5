/* The proxy's upstream side: one curl transfer per request, driven from the connection's thread,
 * and the answer handed to libmicrohttpd as it arrives (proxy.h, "Streaming"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "proxy_priv.h"

int64_t px_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Headers a proxy must not pass on (RFC 9110 7.6.1), and those libmicrohttpd writes itself. */
static int hop_by_hop(const char *name, size_t len)
{
    static const char *const names[] = {
        "connection",     "keep-alive", "transfer-encoding",  "te",
        "trailer",        "upgrade",    "proxy-authenticate", "proxy-authorization",
        "content-length", "date"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && strncasecmp(name, names[i], len) == 0)
            return 1;
    return 0;
}

static size_t on_header(char *line, size_t size, size_t n, void *cls)
{
    px_req *r = cls;
    size_t len = size * n, l = len;
    while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
        l--;
    if (l >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        r->head.len = 0; /* a new status line: a 1xx before the final answer is dropped */
        return len;
    }
    if (l == 0) {
        long code = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200)
            r->head_done = 1;
        return len;
    }
    const char *colon = memchr(line, ':', l);
    if (!colon || hop_by_hop(line, (size_t)(colon - line)))
        return len;
    sr_err err = SR_ERR_INIT;
    if (sr_buf_append(&r->head, line, l, &err) || sr_buf_append(&r->head, "\n", 1, &err))
        return 0; /* out of memory: curl fails the transfer */
    return len;
}

/* The capture lost part of exchange r (here, beside the body stream that can lose it, so both
 * sides of the proxy call down into this file): counted (the proxy's exit status says so), printed,
 * and the exchange marked incomplete; the traffic goes on. */
void px_capture_failed(px_req *r, const sr_err *err)
{
    atomic_fetch_add(&r->p->capture_errors, 1);
    r->x.complete = 0;
    fprintf(stderr, "syncroll proxy: exchange %lld not recorded whole: %s: %s\n",
            (long long)r->x.seq, sr_code_name(err->code), err->msg);
}

static size_t on_body(char *data, size_t size, size_t n, void *cls)
{
    px_req *r = cls;
    size_t len = size * n;
    /* A route fault's answer longer than the bound is not rewritten: from here it streams on
     * unchanged, and the bytes held so far go out first (proxy.h, "Streaming"). */
    if (r->whole && !r->pick.f[SR_FL_TRANSPORT] &&
        r->pending.len + len > r->p->cfg.max_rewrite_bytes) {
        r->whole = 0;
        r->too_long = 1;
    }
    /* The client lags: pause the upstream rather than hold more (not for whole answers). */
    if (!r->whole && r->pending.len - r->off >= SR_PROXY_HOLD_BYTES) {
        r->paused = 1;
        return CURL_WRITEFUNC_PAUSE;
    }
    sr_err err = SR_ERR_INIT;
    if (r->resp_sink && sr_capture_sink_write(r->resp_sink, data, len, &err)) {
        sr_capture_sink_abandon(r->resp_sink); /* the capture lacks it; the client does not */
        r->resp_sink = NULL;
        px_capture_failed(r, &err);
    }
    if (sr_buf_append(&r->pending, data, len, &err))
        return 0;
    return len;
}

/* One step of the transfer: perform, collect its end and, with `wait`, wait up to 100 ms for
 * its socket. */
static void drive_step(px_req *r, int wait)
{
    int running = 0;
    curl_multi_perform(r->multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(r->multi, &left)))
        if (m->msg == CURLMSG_DONE) {
            r->done = 1;
            r->result = m->data.result;
        }
    if (!r->done && !running) {
        r->done = 1;
        r->result = CURLE_OK;
    }
    /* Wait for the socket only while nothing is held for the client: bytes already here (from
     * this perform, or delivered when a paused transfer was resumed) go out first. */
    if (!r->done && wait && r->off == r->pending.len)
        curl_multi_poll(r->multi, NULL, 0, 100, NULL);
}

static void drive(px_req *r)
{
    drive_step(r, 1);
}

int px_forward(px_req *r, sr_err *err)
{
    sr_proxy *p = r->p;
    char url[SR_PROXY_UPSTREAM_MAX + SR_CAPTURE_STR_MAX];
    snprintf(url, sizeof url, "%s%s", p->upstream, r->x.uri);
    if (r->conn) {
        /* The connection's handles: reset options, keep the upstream connection. */
        if (!r->conn->multi)
            r->conn->multi = curl_multi_init();
        if (r->conn->easy)
            curl_easy_reset(r->conn->easy);
        else
            r->conn->easy = curl_easy_init();
        r->easy = r->conn->easy;
        r->multi = r->conn->multi;
    } else {
        r->easy = curl_easy_init();
        r->multi = curl_multi_init();
    }
    if (!r->easy || !r->multi)
        return sr_err_set(err, SR_E_NOMEM, "no memory for an upstream transfer");
    curl_easy_setopt(r->easy, CURLOPT_URL, url);
    curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
    curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    /* Larger reads from the upstream: fewer callbacks per large answer (libcurl's default is
     * 16 KiB). */
    curl_easy_setopt(r->easy, CURLOPT_BUFFERSIZE, 512L * 1024);
    if (strcmp(r->x.method, "GET") == 0) {
        curl_easy_setopt(r->easy, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(r->x.method, "HEAD") == 0) {
        curl_easy_setopt(r->easy, CURLOPT_NOBODY, 1L);
    } else {
        if (strcmp(r->x.method, "POST") != 0)
            curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, r->x.method);
        curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body.data ? r->body.data : "");
        curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
    }
    curl_multi_add_handle(r->multi, r->easy);
    while (!r->head_done && !r->done)
        drive(r);
    if (!r->head_done)
        return sr_err_set(err, SR_E_PROXY_UPSTREAM, "upstream %s: %s", url,
                          r->done ? curl_easy_strerror(r->result) : "no answer");
    r->x.t_head_us = -1; /* the caller stamps it */
    while (r->whole && !r->done)
        drive(r);
    return 0;
}

void px_upstream_release(px_req *r)
{
    if (r->multi && r->easy)
        curl_multi_remove_handle(r->multi, r->easy);
    if (r->easy && !r->conn)
        curl_easy_cleanup(r->easy);
    if (r->multi && !r->conn)
        curl_multi_cleanup(r->multi);
    curl_slist_free_all(r->hdrs);
    r->easy = NULL;
    r->multi = NULL;
    r->hdrs = NULL;
}

void px_conn_free(px_conn *c)
{
    if (!c)
        return;
    if (c->easy)
        curl_easy_cleanup(c->easy);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    free(c);
}

static int stopping(sr_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    int s = p->stopping;
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* stall_mid_body: hold the connection until the proxy stops. */
static void stall(sr_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    while (!p->stopping)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* A whole answer (a body-shaping or route fault fired), delivered up to its cut. */
static ssize_t read_whole(px_req *r, uint64_t pos, char *buf, size_t max)
{
    const sr_fault *t = r->cut_short ? NULL : r->pick.f[SR_FL_TRANSPORT];
    size_t len = r->pending.len;
    size_t limit = !t || t->kind == SR_FK_DRIBBLE ? len : r->cut;
    if (pos >= limit) {
        if (t && t->kind == SR_FK_STALL_MID_BODY && pos < len)
            stall(r->p);
        /* An answer the upstream cut ends as the upstream ended it: the connection closes. */
        return pos >= len && !r->cut_short ? MHD_CONTENT_READER_END_OF_STREAM
                                           : MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = limit - (size_t)pos < max ? limit - (size_t)pos : max;
    if (t && t->kind == SR_FK_DRIBBLE) {
        int64_t wait = r->next_send_ns - px_now_ns();
        if (wait > 0) {
            struct timespec ts = {wait / 1000000000, wait % 1000000000};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
        }
        size_t chunk = (size_t)(t->bytes_per_second / 20.0); /* twenty slices a second */
        n = n < (chunk ? chunk : 1) ? n : (chunk ? chunk : 1);
        r->next_send_ns = px_now_ns() + (int64_t)((double)n * 1e9 / t->bytes_per_second);
    }
    memcpy(buf, r->pending.data + pos, n);
    r->sent = pos + n;
    return (ssize_t)n;
}

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
    px_req *r = cls;
    if (stopping(r->p))
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (r->whole)
        return read_whole(r, pos, buf, max);
    /* Keep what is held at the front, so the buffer stays within the hold bound plus a block. */
    if (r->off && r->off >= r->pending.len - r->off) {
        memmove(r->pending.data, r->pending.data + r->off, r->pending.len - r->off);
        r->pending.len -= r->off;
        r->off = 0;
    }
    while (r->off == r->pending.len && !r->done) {
        r->off = r->pending.len = 0;
        if (r->paused) {
            r->paused = 0;
            curl_easy_pause(r->easy, CURLPAUSE_CONT);
        }
        drive(r);
        if (stopping(r->p))
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    /* Hand libmicrohttpd whole blocks when the bytes are there: what the upstream has already
     * sent is collected without waiting, so one send carries up to `max` bytes, not one curl
     * write (16 KiB), and the client does not wait on many small segments. */
    for (int i = 0; i < 64 && !r->done && r->pending.len - r->off < max; i++) {
        size_t before = r->pending.len;
        if (r->paused) {
            r->paused = 0;
            curl_easy_pause(r->easy, CURLPAUSE_CONT);
        }
        drive_step(r, 0);
        if (r->pending.len == before || r->paused)
            break;
    }
    if (r->off == r->pending.len) {
        if (r->result != CURLE_OK) {
            atomic_fetch_add(&r->p->failures, 1);
            r->x.complete = 0;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = r->pending.len - r->off < max ? r->pending.len - r->off : max;
    memcpy(buf, r->pending.data + r->off, n);
    r->off += n;
    r->sent += n;
    return (ssize_t)n;
}

struct MHD_Response *px_stream_response(px_req *r, unsigned *status)
{
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    *status = (unsigned)code;
    uint64_t size = MHD_SIZE_UNKNOWN;
    curl_off_t cl = -1;
    curl_easy_getinfo(r->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    if (r->whole && r->done && r->result != CURLE_OK) {
        /* The upstream failed mid-body: the client gets its cut whatever fault fired (none is
         * applied to a part of an answer), announced as the upstream announced it. */
        r->cut_short = 1;
        atomic_fetch_add(&r->p->failures, 1);
        r->x.complete = 0;
        if (cl >= 0)
            size = (uint64_t)cl;
    } else if (r->whole && !r->pick.f[SR_FL_TRANSPORT]) {
        size = r->pending.len; /* a route fault's answer, whole (its own length) */
    } else if (r->whole) {
        const sr_fault *t = r->pick.f[SR_FL_TRANSPORT];
        r->cut = sr_fault_cut_offset(t, r->pending.data ? r->pending.data : "", r->pending.len);
        /* A plain truncate announces the cut length; the others announce the whole answer and
         * close after the cut, as the engine does. */
        int clean = t->kind == SR_FK_TRUNCATE_IN_BLOB || t->kind == SR_FK_TRUNCATE ||
                    t->kind == SR_FK_TRUNCATE_AFTER_BLOBS;
        size = clean && !t->keep_length ? r->cut : r->pending.len;
    } else if (cl >= 0) {
        size = (uint64_t)cl;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_callback(size, 64 * 1024, read_stream, r, NULL);
    if (!resp)
        return NULL;
    for (char *line = r->head.data; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *colon = strchr(line, ':');
        if (colon) {
            *colon = '\0';
            const char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            MHD_add_response_header(resp, line, v);
        }
        line = nl ? nl + 1 : NULL;
    }
    return resp;
}
