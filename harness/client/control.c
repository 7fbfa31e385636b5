#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"

/* One engine's transfer of a control-plane call. */
typedef struct ctl {
    CURL *easy;
    sr_buf body;
    char errbuf[CURL_ERROR_SIZE];
    size_t slot;
} ctl;

static size_t ctl_write(char *p, size_t size, size_t nmemb, void *ud)
{
    ctl *t = ud;
    size_t n = size * nmemb;
    return sr_buf_append(&t->body, p, n, NULL) ? 0 : n;
}

static int ctl_setup(ctl *t, const sr_client *c, size_t engine, const char *method,
                     const char *path, const char *json_body, struct curl_slist *headers,
                     sr_err *err)
{
    char url[SR_CLIENT_URL_MAX + 1024];
    if ((size_t)snprintf(url, sizeof url, "%s%s", c->urls[engine], path) >= sizeof url)
        return sr_err_set(err, SR_E_INVAL, "client: control path too long");
    t->easy = curl_easy_init();
    if (!t->easy)
        return sr_err_set(err, SR_E_NOMEM, "client: curl_easy_init failed");
    t->body.max = (size_t)64 << 20;
    CURL *e = t->easy;
    sr_client_easy_common(e, c->opts.connect_timeout_ms, t->errbuf);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->opts.control_timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, ctl_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        return 0;
    }
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    /* curl copies the body, so the caller's string need not outlive the call's setup. */
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)(json_body ? strlen(json_body) : 0));
    curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, json_body ? json_body : "");
    return 0;
}

static void ctl_finish(sr_client_reply *r, ctl *t, CURLcode cc, const sr_client_opts *o)
{
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    r->http_status = (int)status;
    if (t->body.len)
        r->body = cJSON_ParseWithLength(t->body.data, t->body.len);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        r->code = SR_E_CLIENT_DEADLINE;
        snprintf(r->msg, sizeof r->msg, "no answer within %lld ms",
                 (long long)o->control_timeout_ms);
    } else if (cc != CURLE_OK) {
        r->code = SR_E_CLIENT_TRANSPORT;
        snprintf(r->msg, sizeof r->msg, "%s (%s)", curl_easy_strerror(cc), t->errbuf);
    } else if (status < 200 || status > 299) {
        char text[256];
        sr_client_status_text(text, sizeof text, t->body.data ? t->body.data : "", t->body.len,
                              r->body);
        r->code = SR_E_CLIENT_HTTP_STATUS;
        snprintf(r->msg, sizeof r->msg, "HTTP %ld: %s", status, text);
    } else if (t->body.len && !r->body) {
        r->code = SR_E_CLIENT_INVALID_JSON;
        snprintf(r->msg, sizeof r->msg, "the %zu-byte body is not JSON", t->body.len);
    }
}

static void run_multi(CURLM *m, sr_client_reply *replies, const sr_client_opts *o)
{
    int running = 0;
    do {
        curl_multi_perform(m, &running);
        if (running)
            curl_multi_poll(m, NULL, 0, 100, NULL);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            ctl *t = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            if (t)
                ctl_finish(&replies[t->slot], t, msg->data.result, o);
        }
    } while (running);
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
    if ((engine >= 0 && (size_t)engine >= c->n) || n_replies < n || !path || path[0] != '/' ||
        (strcmp(method, "GET") && strcmp(method, "POST")))
        return sr_err_set(err, SR_E_INVAL, "client: bad control-plane call");
    memset(replies, 0, n * sizeof *replies);
    ctl *ts = calloc(n, sizeof *ts);
    CURLM *m = curl_multi_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *h2 = h ? curl_slist_append(h, "Expect:") : NULL;
    int rc = ts && m && h2 ? 0 : sr_err_set(err, SR_E_NOMEM, "client: cannot set up a call");
    for (size_t i = 0; !rc && i < n; i++) {
        ts[i].slot = i;
        rc = ctl_setup(&ts[i], c, first + i, method, path, json_body, h2, err);
        if (!rc)
            curl_multi_add_handle(m, ts[i].easy);
    }
    if (!rc)
        run_multi(m, replies, &c->opts);
    for (size_t i = 0; ts && i < n; i++) {
        if (ts[i].easy) {
            curl_multi_remove_handle(m, ts[i].easy);
            curl_easy_cleanup(ts[i].easy);
        }
        sr_buf_release(&ts[i].body);
    }
    for (size_t i = 0; !rc && i < n; i++)
        if (replies[i].code)
            rc = sr_err_set(err, replies[i].code, "engine %zu (%s) %s %s: %s", first + i,
                            c->urls[first + i], method, path, replies[i].msg);
    free(ts);
    curl_multi_cleanup(m);
    curl_slist_free_all(h);
    return rc;
}
