/* One attempt of a generate on a conn's easy handle, and the pieces every transfer of the client
 * layer shares (client_priv.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client_priv.h"
#include "sr_clock.h"

void sr_client_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The options of sr_client_easy_common but the error buffer. */
static void easy_shared(CURL *e, int64_t connect_timeout_ms)
{
    /* Threads share the process: curl must not use signals for its timeouts. */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
}

void sr_client_easy_common(CURL *e, int64_t connect_timeout_ms, char *errbuf)
{
    easy_shared(e, connect_timeout_ms);
    errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
}

/* Transfer state shared with curl's callbacks during one attempt. */
typedef enum body_mode { MODE_NONE = 0, MODE_SPLICE, MODE_NATIVE, MODE_ERROR } body_mode;

typedef struct xfer {
    sr_client_conn *k;
    int want_splice;
    body_mode mode;
    long status;
    int64_t content_length;
    int stop_rc; /* why the write callback stopped the transfer (0: it did not) */
    sr_err stop_err;
    double splice_ms;
    int64_t splice_cpu_ns; /* on a sampled generate (k->cpu_sample) */
    uint64_t bytes;
    int sends; /* times curl was about to send the request */
    int chunks;
} xfer;

/* The start of a timed piece of splice work: the wall clock, and the thread CPU clock when the
 * generate is sampled for it (client.h, cpu_every). */
typedef struct tick {
    double wall;
    int64_t cpu;
} tick;

static tick tick_start(const xfer *x)
{
    tick t = {sr_clock_ms(), x->k->cpu_sample ? sr_clock_cpu_ns() : 0};
    return t;
}

static void tick_add(xfer *x, tick t0)
{
    x->splice_ms += sr_clock_ms() - t0.wall;
    if (x->k->cpu_sample) {
        int64_t d = sr_clock_cpu_ns() - t0.cpu - x->k->c->cpu_pair_ns;
        x->splice_cpu_ns += d > 0 ? d : 0;
    }
}

static void start_body(xfer *x)
{
    CURL *e = x->k->easy;
    curl_off_t cl = -1;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &x->status);
    curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    x->content_length = cl >= 0 ? (int64_t)cl : -1;
    sr_buf_reset(&x->k->body);
    if (x->status < 200 || x->status > 299) {
        x->mode = MODE_ERROR;
        return;
    }
    if (!x->want_splice) {
        x->mode = MODE_NATIVE;
        return;
    }
    x->mode = MODE_SPLICE;
    tick t0 = tick_start(x);
    x->stop_rc = sr_splice_stream_begin(x->k->splicer, x->content_length, &x->stop_err);
    tick_add(x, t0);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (x->mode == MODE_NONE)
        start_body(x);
    if (x->stop_rc)
        return 0;
    x->bytes += n;
    x->chunks++;
    sr_client_conn *k = x->k;
    if (k->capture && k->cap.response.len < k->capture) {
        size_t room = k->capture - k->cap.response.len;
        sr_buf_append(&k->cap.response, p, n < room ? n : room, NULL);
    }
    if (x->mode == MODE_SPLICE) {
        tick t0 = tick_start(x);
        x->stop_rc = sr_splice_stream_feed(k->splicer, p, n, &x->stop_err);
        tick_add(x, t0);
        return x->stop_rc ? 0 : n;
    }
    if (x->mode == MODE_NATIVE) {
        x->stop_rc = sr_buf_append(&k->body, p, n, &x->stop_err);
        return x->stop_rc ? 0 : n;
    }
    /* A non-2xx body is only read for its message: keep a bounded prefix, drain the rest. */
    size_t room =
        k->c->opts.max_error_body > k->body.len ? k->c->opts.max_error_body - k->body.len : 0;
    if (room && sr_buf_append(&k->body, p, n < room ? n : room, NULL))
        return 0;
    return n;
}

/* Capture on: the status lines and response headers of the attempt, bounded. */
static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    sr_buf *h = ud;
    size_t n = size * nmemb;
    if (h->len + n <= SR_CLIENT_CAPTURE_HEADERS)
        sr_buf_append(h, p, n, NULL);
    return n;
}

static int on_prereq(void *ud, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port)
{
    (void)conn_primary_ip;
    (void)conn_local_ip;
    (void)conn_primary_port;
    (void)conn_local_port;
    ((xfer *)ud)->sends++;
    return CURL_PREREQFUNC_OK;
}

const char *sr_client_body_check(const cJSON *doc)
{
    const cJSON *e = doc ? cJSON_GetObjectItemCaseSensitive(doc, "error") : NULL;
    const cJSON *c = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "check") : NULL;
    /* The mock's vllm control plane answers FastAPI's {"detail": ..} with the check beside it,
     * its sglang plane SGLang's {"success": false, "message": ..}. */
    if (!c && doc &&
        (cJSON_GetObjectItemCaseSensitive(doc, "detail") ||
         cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "success"))))
        c = cJSON_GetObjectItemCaseSensitive(doc, "check");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

void sr_client_status_text(char *out, size_t cap, const char *body, size_t len, const cJSON *doc)
{
    const cJSON *e = doc ? cJSON_GetObjectItemCaseSensitive(doc, "error") : NULL;
    const cJSON *m = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : NULL;
    const char *check = sr_client_body_check(doc);
    if (cJSON_IsString(m)) {
        if (check)
            snprintf(out, cap, "%s [%s]", m->valuestring, check);
        else
            snprintf(out, cap, "%s", m->valuestring);
        return;
    }
    size_t j = 0;
    for (size_t i = 0; i < len && j + 1 < cap && j < 200; i++) {
        unsigned char ch = (unsigned char)body[i];
        out[j++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
    }
    out[j] = '\0';
}

static int finish_error_body(xfer *x, sr_client_attempt *att, sr_xfer_out *out, sr_err *err)
{
    sr_client_conn *k = x->k;
    cJSON *doc = k->body.len ? cJSON_ParseWithLength(k->body.data, k->body.len) : NULL;
    out->body_json = doc != NULL;
    curl_off_t ra = -1;
    if (curl_easy_getinfo(k->easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        out->retry_after_ms = (int64_t)ra * 1000;
    char text[256];
    sr_client_status_text(text, sizeof text, k->body.data ? k->body.data : "", k->body.len, doc);
    /* An engine over its connection limit says so by name; retry.c retries it as the 503 it is. */
    const char *check = sr_client_body_check(doc);
    int code = x->status == 503 && check && strcmp(check, "engine.connection_limit") == 0
                   ? SR_E_ENGINE_CONN_LIMIT
                   : SR_E_CLIENT_HTTP_STATUS;
    cJSON_Delete(doc);
    att->code = sr_err_set(err, code, "HTTP %ld: %s", x->status, text);
    return att->code;
}

static int finish_native(xfer *x, sr_client_attempt *att, sr_xfer_out *out, sr_err *err)
{
    sr_client_conn *k = x->k;
    tick t0 = tick_start(x);
    cJSON_Delete(k->native_doc);
    k->native_doc = cJSON_ParseWithLength(k->body.data ? k->body.data : "", k->body.len);
    tick_add(x, t0);
    if (!k->native_doc)
        return att->code = sr_err_set(err, SR_E_CLIENT_INVALID_JSON,
                                      "the %zu-byte native response body is not JSON", k->body.len);
    out->native = k->native_doc;
    return 0;
}

static int finish_splice(xfer *x, CURLcode cc, sr_client_attempt *att, sr_xfer_out *out,
                         sr_err *err)
{
    tick t0 = tick_start(x);
    int rc = sr_splice_stream_finish(x->k->splicer, &out->spliced, err);
    tick_add(x, t0);
    if (rc) {
        out->spliced = NULL;
        if (cc != CURLE_OK)
            sr_err_prefix(err, "(transfer ended: %s) ", curl_easy_strerror(cc));
        return att->code = rc;
    }
    if (cc != CURLE_OK) {
        /* The body is complete and valid, yet the transfer failed afterwards: distrust it. */
        out->spliced = NULL;
        return att->code = sr_err_set(err, SR_E_CLIENT_TRANSPORT, "%s after a complete body",
                                      curl_easy_strerror(cc));
    }
    return 0;
}

static int finish_attempt(xfer *x, CURLcode cc, sr_client_attempt *att, sr_xfer_out *out,
                          sr_err *err)
{
    sr_client_conn *k = x->k;
    if (x->stop_rc) {
        if (err)
            *err = x->stop_err;
        return att->code = x->stop_rc;
    }
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        out->timed_out = 1;
        return att->code = sr_err_set(err, SR_E_CLIENT_TRANSPORT, "timed out: %s",
                                      k->errbuf[0] ? k->errbuf : curl_easy_strerror(cc));
    }
    if (x->mode == MODE_SPLICE)
        return finish_splice(x, cc, att, out, err);
    if (cc != CURLE_OK)
        return att->code = sr_err_set(err, SR_E_CLIENT_TRANSPORT, "%s (%s)", curl_easy_strerror(cc),
                                      k->errbuf);
    if (x->mode == MODE_ERROR)
        return finish_error_body(x, att, out, err);
    if (x->mode == MODE_NATIVE)
        return finish_native(x, att, out, err);
    return att->code = sr_err_set(err, SR_E_CLIENT_TRANSPORT, "no response");
}

void sr_client_easy_setup(CURL *e, int64_t connect_timeout_ms)
{
    easy_shared(e, connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
}

int sr_client_attempt_run(sr_client_conn *k, int splice, const struct curl_slist *headers,
                          int64_t timeout_ms, sr_client_attempt *att, sr_xfer_out *out, sr_err *err)
{
    xfer x = {k, splice, MODE_NONE, 0, -1, 0, SR_ERR_INIT, 0, 0, 0, 0, 0};
    memset(out, 0, sizeof *out);
    out->retry_after_ms = -1;
    int made = 0;
    CURL *e = sr_client_easy_take(k->c, k->engine, &made);
    if (!e)
        return att->code = sr_err_set(err, SR_E_NOMEM, "client: curl_easy_init failed");
    if (made)
        sr_client_easy_setup(e, k->c->opts.connect_timeout_ms);
    k->easy = e;
    /* The options every attempt shares were set when the handle was made
     * (sr_client_easy_setup); these are the attempt's own. */
    k->errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, k->errbuf);
    curl_easy_setopt(e, CURLOPT_URL, k->url.data);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, k->req_body.data);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)k->req_body.len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, &x);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
    k->body.max = splice ? k->c->opts.max_error_body + 1 : k->c->opts.max_body;
    if (k->capture) {
        sr_buf_reset(&k->cap.response);
        sr_buf_reset(&k->cap.headers);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &k->cap.headers);
    }
    CURLcode cc = curl_easy_perform(e);
    k->cap.response_bytes = x.bytes;
    if (x.mode == MODE_NONE && cc == CURLE_OK)
        start_body(&x);
    long conns = 0;
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &conns);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &x.status);
    att->http_status = (int)x.status;
    att->curl_code = (int)cc;
    att->new_connection = conns > 0;
    int rc = finish_attempt(&x, cc, att, out, err);
    att->bytes = x.bytes;
    att->resent = x.sends > 1 ? x.sends - 1 : 0;
    att->chunks = x.chunks;
    out->splice_ms = x.splice_ms;
    out->splice_cpu_ms = (double)x.splice_cpu_ns / 1e6;
    /* Nothing else may point at this attempt's stack frame. */
    curl_easy_setopt(e, CURLOPT_WRITEDATA, NULL);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, NULL);
    if (k->capture) {
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, NULL);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, NULL);
    }
    /* An idle handle points at nothing of this conn (every attempt sets them again). */
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
    k->easy = NULL;
    sr_client_easy_give(k->c, k->engine, e);
    return rc;
}
