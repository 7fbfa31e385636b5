/* The fan-out (fanout.h): one multi handle over an easy handle per engine and in-flight slot. */
#include "fanout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client_priv.h"
#include "sr_clock.h"

/* One in-flight position of one engine. */
typedef struct slot {
    CURL *easy;               /* created on first use, kept with its settings reset per request */
    sr_fanout_req *busy;      /* the request it carries, NULL when idle */
    struct curl_slist *ctype; /* the headers of a request with its own Content-Type */
    char errbuf[CURL_ERROR_SIZE];
} slot;

struct sr_fanout {
    size_t n;
    char (*urls)[SR_CLIENT_URL_MAX];
    CURLM *multi; /* owns the connection cache, so connections outlive each run */
    slot *slots;  /* n * SR_FANOUT_MAX_INFLIGHT */
    struct curl_slist *json_hdr;
    int64_t connect_ms; /* 0: the deadline bounds connecting too */
};

static slot *slot_at(sr_fanout *f, size_t engine, int k)
{
    return &f->slots[engine * SR_FANOUT_MAX_INFLIGHT + (size_t)k];
}

int sr_fanout_new(sr_fanout **out, const char *const *urls, size_t n, int64_t connect_timeout_ms,
                  sr_err *err)
{
    *out = NULL;
    if (!urls || n < 1 || n > SR_CLIENT_MAX_ENGINES || connect_timeout_ms < 0)
        return sr_err_set(err, SR_E_INVAL,
                          "fanout: 1..%d engine URLs and a connect timeout >= 0 are needed",
                          SR_CLIENT_MAX_ENGINES);
    sr_fanout *f = calloc(1, sizeof(*f));
    if (!f)
        return sr_err_set(err, SR_E_NOMEM, "fanout: cannot allocate");
    f->n = n;
    f->connect_ms = connect_timeout_ms;
    f->urls = calloc(n, sizeof(*f->urls));
    f->slots = calloc(n * SR_FANOUT_MAX_INFLIGHT, sizeof(*f->slots));
    f->multi = curl_multi_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    /* curl would otherwise wait for "100 Continue" before sending bodies over 1 KiB. */
    f->json_hdr = h ? curl_slist_append(h, "Expect:") : NULL;
    if (!f->json_hdr)
        curl_slist_free_all(h);
    int rc = f->urls && f->slots && f->multi && f->json_hdr
                 ? 0
                 : sr_err_set(err, SR_E_NOMEM, "fanout: cannot set up HTTP");
    for (size_t i = 0; !rc && i < n; i++)
        if (sr_client_url_copy(f->urls[i], urls[i]))
            rc = sr_err_set(err, SR_E_INVAL, "fanout: engine URL %zu is empty or too long", i);
    if (rc) {
        sr_fanout_free(f);
        return rc;
    }
    *out = f;
    return 0;
}

void sr_fanout_free(sr_fanout *f)
{
    if (!f)
        return;
    for (size_t i = 0; f->slots && i < f->n * SR_FANOUT_MAX_INFLIGHT; i++) {
        if (f->slots[i].busy)
            curl_multi_remove_handle(f->multi, f->slots[i].easy);
        if (f->slots[i].easy)
            curl_easy_cleanup(f->slots[i].easy);
        curl_slist_free_all(f->slots[i].ctype);
    }
    if (f->multi)
        curl_multi_cleanup(f->multi);
    curl_slist_free_all(f->json_hdr);
    free(f->slots);
    free(f->urls);
    free(f);
}

const char *sr_fanout_url(const sr_fanout *f, int engine)
{
    return engine >= 0 && (size_t)engine < f->n ? f->urls[engine] : NULL;
}

void sr_fanout_reqs_release(sr_fanout_req *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sr_buf_release(&reqs[i].resp);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    sr_fanout_req *r = ud;
    size_t n = size * nmemb;
    return sr_buf_append(&r->resp, p, n, NULL) ? 0 : n;
}

/* Streams the body from its borrowed segments, so no bucket is copied into one buffer. */
static size_t on_read(char *dst, size_t size, size_t nmemb, void *ud)
{
    sr_fanout_req *r = ud;
    size_t cap = size * nmemb, got = 0;
    while (got < cap && r->seg_i < r->nseg) {
        const sr_fanout_seg *s = &r->segs[r->seg_i];
        size_t take = s->n - r->seg_off;
        if (take > cap - got)
            take = cap - got;
        memcpy(dst + got, (const char *)s->p + r->seg_off, take);
        got += take;
        r->seg_off += take;
        if (r->seg_off == s->n) {
            r->seg_i++;
            r->seg_off = 0;
        }
    }
    return got;
}

/* The headers of a POST: the shared JSON ones, or the slot's own for another content type. */
static struct curl_slist *post_headers(sr_fanout *f, slot *sl, const char *ctype)
{
    curl_slist_free_all(sl->ctype);
    sl->ctype = NULL;
    if (!ctype)
        return f->json_hdr;
    char line[256];
    snprintf(line, sizeof(line), "Content-Type: %s", ctype);
    struct curl_slist *h = curl_slist_append(NULL, line);
    sl->ctype = h ? curl_slist_append(h, "Expect:") : NULL;
    if (!sl->ctype)
        curl_slist_free_all(h);
    return sl->ctype;
}

static void set_post(slot *sl, sr_fanout_req *r, struct curl_slist *hdr)
{
    CURL *e = sl->easy;
    uint64_t total = 0;
    for (size_t i = 0; i < r->nseg; i++)
        total += r->segs[i].n;
    r->seg_i = r->seg_off = 0;
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, r);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)total);
    curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 2L << 20);
}

/* Sends r on slot k of its engine; -1 if it could not be set up. */
static int start_req(sr_fanout *f, int k, sr_fanout_req *r, double deadline_ms)
{
    slot *sl = slot_at(f, (size_t)r->engine, k);
    if (!sl->easy && !(sl->easy = curl_easy_init()))
        return -1;
    CURL *e = sl->easy;
    curl_easy_reset(e);
    char url[SR_CLIENT_URL_MAX + SR_FANOUT_PATH_MAX];
    snprintf(url, sizeof(url), "%s%s", f->urls[r->engine], r->path);
    double left = deadline_ms - sr_clock_ms();
    long tmo = left < 1 ? 1 : (long)left;
    long cto = f->connect_ms > 0 && f->connect_ms < tmo ? (long)f->connect_ms : tmo;
    sr_client_easy_common(e, cto, sl->errbuf);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tmo);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    if (!r->resp.max)
        r->resp.max = SR_FANOUT_RESP_MAX;
    if (r->get) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        struct curl_slist *hdr = post_headers(f, sl, r->ctype);
        if (!hdr)
            return -1;
        set_post(sl, r, hdr);
    }
    if (curl_multi_add_handle(f->multi, e) != CURLM_OK)
        return -1;
    r->started = 1;
    r->start_ms = sr_clock_ms();
    sl->busy = r;
    return 0;
}

/* A non-2xx answer: its error body's check, and "HTTP <status>: <text>" with the text the
 * generate path gives too (sr_client_status_text: the message and [check], or the body cut to
 * one line without control bytes). */
static void http_failure(sr_fanout_req *r)
{
    cJSON *d = r->resp.len ? cJSON_ParseWithLength(r->resp.data, r->resp.len) : NULL;
    const char *check = sr_client_body_check(d);
    char text[256];
    snprintf(r->check, sizeof(r->check), "%s", check ? check : "");
    sr_client_status_text(text, sizeof text, r->resp.data ? r->resp.data : "", r->resp.len, d);
    r->code = SR_E_CLIENT_HTTP_STATUS;
    snprintf(r->msg, sizeof(r->msg), "HTTP %ld: %s", r->status, text);
    cJSON_Delete(d);
}

static void cut(sr_fanout_req *r, int64_t budget_ms)
{
    r->done = 1;
    r->end_ms = sr_clock_ms();
    r->code = SR_E_CLIENT_DEADLINE;
    snprintf(r->msg, sizeof(r->msg), "no answer before the deadline (%lld ms)",
             (long long)budget_ms);
}

static void finish_req(sr_fanout_req *r, CURLcode cc, CURL *e, const char *errbuf,
                       int64_t budget_ms)
{
    r->done = 1;
    r->end_ms = sr_clock_ms();
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        cut(r, budget_ms);
    } else if (cc != CURLE_OK) {
        r->code = SR_E_CLIENT_TRANSPORT;
        snprintf(r->msg, sizeof(r->msg), "transport: %s%s%s%s", curl_easy_strerror(cc),
                 errbuf[0] ? " (" : "", errbuf, errbuf[0] ? ")" : "");
    } else if (r->status < 200 || r->status > 299) {
        http_failure(r);
    }
}

/* Takes finished transfers off the multi handle, marking their engines failed as they fail. */
static void reap(sr_fanout *f, int *failed, int64_t budget_ms)
{
    int left;
    CURLMsg *m;
    while ((m = curl_multi_info_read(f->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        sr_fanout_req *r = NULL;
        CURL *e = m->easy_handle;
        CURLcode cc = m->data.result;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
        curl_multi_remove_handle(f->multi, e);
        const char *errbuf = "";
        for (int k = 0; k < SR_FANOUT_MAX_INFLIGHT; k++) {
            slot *sl = slot_at(f, (size_t)r->engine, k);
            if (sl->busy == r) {
                sl->busy = NULL;
                errbuf = sl->errbuf;
            }
        }
        finish_req(r, cc, e, errbuf, budget_ms);
        if (r->code)
            failed[r->engine] = 1;
    }
}

/* Takes every running transfer off the multi handle; with mark, each is cut at the deadline. */
static void drop_all(sr_fanout *f, int mark, int64_t budget_ms)
{
    for (size_t i = 0; i < f->n * SR_FANOUT_MAX_INFLIGHT; i++) {
        slot *sl = &f->slots[i];
        if (!sl->busy)
            continue;
        curl_multi_remove_handle(f->multi, sl->easy);
        if (mark)
            cut(sl->busy, budget_ms);
        sl->busy = NULL;
    }
}

/* Starts queued requests of every engine that has room; -1 if one could not be set up. */
static int fill(sr_fanout *f, sr_fanout_req *reqs, size_t n, size_t *next, const int *failed,
                int inflight, double deadline_ms)
{
    for (size_t i = 0; i < f->n; i++) {
        for (int k = 0; k < inflight && !failed[i]; k++) {
            if (slot_at(f, i, k)->busy)
                continue;
            while (next[i] < n && reqs[next[i]].engine != (int)i)
                next[i]++;
            if (next[i] >= n)
                break;
            if (start_req(f, k, &reqs[next[i]++], deadline_ms))
                return -1;
        }
    }
    return 0;
}

/* 1 while a transfer runs or a healthy engine has a request not yet sent. */
static int pending(sr_fanout *f, const sr_fanout_req *reqs, size_t n, const int *failed)
{
    for (size_t i = 0; i < f->n * SR_FANOUT_MAX_INFLIGHT; i++)
        if (f->slots[i].busy)
            return 1;
    for (size_t i = 0; i < n; i++)
        if (!reqs[i].started && !failed[reqs[i].engine])
            return 1;
    return 0;
}

int sr_fanout_run(sr_fanout *f, sr_fanout_req *reqs, size_t n, int inflight, double deadline_ms,
                  int64_t budget_ms, sr_err *err)
{
    if (inflight < 1 || inflight > SR_FANOUT_MAX_INFLIGHT)
        return sr_err_set(err, SR_E_INVAL, "fanout: %d requests in flight per engine", inflight);
    for (size_t i = 0; i < n; i++) {
        const char *p = reqs[i].path;
        if (reqs[i].engine < 0 || (size_t)reqs[i].engine >= f->n)
            return sr_err_set(err, SR_E_INVAL, "fanout: request for engine %d", reqs[i].engine);
        if (!p || p[0] != '/' || strlen(p) >= SR_FANOUT_PATH_MAX)
            return sr_err_set(err, SR_E_INVAL, "fanout: request %zu has no path or one too long",
                              i);
    }
    size_t next[SR_CLIENT_MAX_ENGINES] = {0};
    int failed[SR_CLIENT_MAX_ENGINES] = {0};
    for (;;) {
        if (fill(f, reqs, n, next, failed, inflight, deadline_ms)) {
            drop_all(f, 0, budget_ms);
            return sr_err_set(err, SR_E_NOMEM, "fanout: cannot start a transfer");
        }
        int still = 0;
        curl_multi_perform(f->multi, &still);
        reap(f, failed, budget_ms);
        if (!pending(f, reqs, n, failed))
            break;
        double left = deadline_ms - sr_clock_ms();
        if (left <= 0) {
            drop_all(f, 1, budget_ms);
            break;
        }
        if (still)
            curl_multi_poll(f->multi, NULL, 0, left < 50 ? (int)left + 1 : 50, NULL);
    }
    for (size_t i = 0; i < n; i++)
        if (!reqs[i].started && !failed[reqs[i].engine]) {
            reqs[i].code = SR_E_CLIENT_DEADLINE;
            snprintf(reqs[i].msg, sizeof(reqs[i].msg),
                     "not sent: the deadline (%lld ms) passed first", (long long)budget_ms);
        }
    return 0;
}
