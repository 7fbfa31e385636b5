/* The weight-sync HTTP fan-out: curl multi over kept-alive handles, a deadline per call, request
 * bodies streamed from borrowed segments (sync_priv.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "sync_priv.h"

#define RESP_MAX ((size_t)64 << 20)

struct sync_http {
    size_t n;
    char **urls;
    CURLM *multi; /* owns the connection cache, so connections outlive each call */
    CURL *easy[SR_CLIENT_MAX_ENGINES][SR_SYNC_MAX_INFLIGHT];
    sync_req *busy[SR_CLIENT_MAX_ENGINES][SR_SYNC_MAX_INFLIGHT];
    struct curl_slist *json_hdr, *bucket_hdr;
};

double sync_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int sync_http_new(sync_http **out, const char *const *urls, size_t n, sr_err *err)
{
    *out = NULL;
    sync_http *h = calloc(1, sizeof(*h));
    if (!h)
        return sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate the HTTP state");
    h->n = n;
    h->urls = calloc(n, sizeof(char *));
    h->multi = curl_multi_init();
    h->json_hdr =
        curl_slist_append(curl_slist_append(NULL, "Content-Type: application/json"), "Expect:");
    h->bucket_hdr = curl_slist_append(
        curl_slist_append(NULL, "Content-Type: application/x-syncroll-bucket"), "Expect:");
    int rc = h->urls && h->multi && h->json_hdr && h->bucket_hdr
                 ? 0
                 : sr_err_set(err, SR_E_NOMEM, "sync: cannot set up HTTP");
    for (size_t i = 0; !rc && i < n; i++) {
        size_t len = strlen(urls[i]);
        while (len && urls[i][len - 1] == '/')
            len--;
        h->urls[i] = strndup(urls[i], len);
        if (!h->urls[i])
            rc = sr_err_set(err, SR_E_NOMEM, "sync: cannot copy a URL");
    }
    if (rc) {
        sync_http_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

void sync_http_free(sync_http *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        for (int k = 0; k < SR_SYNC_MAX_INFLIGHT; k++)
            if (h->easy[i][k])
                curl_easy_cleanup(h->easy[i][k]);
    for (size_t i = 0; h->urls && i < h->n; i++)
        free(h->urls[i]);
    free(h->urls);
    if (h->multi)
        curl_multi_cleanup(h->multi);
    curl_slist_free_all(h->json_hdr);
    curl_slist_free_all(h->bucket_hdr);
    free(h);
}

const char *sync_http_url(const sync_http *h, int engine)
{
    return h->urls[engine];
}

void sync_reqs_release(sync_req *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sr_buf_release(&reqs[i].resp);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    sync_req *r = ud;
    size_t n = size * nmemb;
    return sr_buf_append(&r->resp, p, n, NULL) ? 0 : n;
}

static size_t on_read(char *dst, size_t size, size_t nmemb, void *ud)
{
    sync_req *r = ud;
    size_t cap = size * nmemb, got = 0;
    while (got < cap && r->seg_i < r->nseg) {
        const sync_seg *s = &r->segs[r->seg_i];
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

static int start_req(sync_http *h, int slot, sync_req *r, double deadline_ms)
{
    CURL **ep = &h->easy[r->engine][slot];
    if (!*ep && !(*ep = curl_easy_init()))
        return -1;
    CURL *e = *ep;
    curl_easy_reset(e);
    char url[SR_CLIENT_URL_MAX + 256];
    snprintf(url, sizeof(url), "%s%s", h->urls[r->engine], r->path);
    double left = deadline_ms - sync_now_ms();
    long tmo = left < 1 ? 1 : (long)left;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tmo);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, tmo);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    r->resp.max = RESP_MAX;
    if (r->get) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        uint64_t total = 0;
        for (size_t i = 0; i < r->nseg; i++)
            total += r->segs[i].n;
        r->seg_i = r->seg_off = 0;
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->ctype ? h->bucket_hdr : h->json_hdr);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, r);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)total);
        curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 2L << 20);
    }
    r->started = 1;
    r->start_ms = sync_now_ms();
    h->busy[r->engine][slot] = r;
    return curl_multi_add_handle(h->multi, e) == CURLM_OK ? 0 : -1;
}

/* The engine's error body {"error":{"message","check",..}} -> our code and message. */
static void classify(sync_req *r)
{
    cJSON *d = r->resp.len ? cJSON_ParseWithLength(r->resp.data, r->resp.len) : NULL;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(d, "error");
    const cJSON *chk = cJSON_GetObjectItemCaseSensitive(e, "check");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    const char *check = cJSON_IsString(chk) ? chk->valuestring : "";
    r->code = strcmp(check, "sync.protocol_order") == 0 ? SR_E_SYNC_ORDER
              : strcmp(check, "delta.checksum") == 0    ? SR_E_SYNC_CHECKSUM
                                                        : SR_E_SYNC_FAILED;
    snprintf(r->msg, sizeof(r->msg), "HTTP %ld%s%s: %.300s", r->status, *check ? " " : "", check,
             cJSON_IsString(msg) ? msg->valuestring : (r->resp.data ? r->resp.data : ""));
    cJSON_Delete(d);
}

static void finish_req(sync_req *r, CURLcode cc, CURL *e, int64_t budget_ms)
{
    r->done = 1;
    r->end_ms = sync_now_ms();
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        r->code = SR_E_SYNC_DEADLINE;
        snprintf(r->msg, sizeof(r->msg), "no answer before the deadline (%lld ms)",
                 (long long)budget_ms);
    } else if (cc != CURLE_OK) {
        r->code = SR_E_SYNC_FAILED;
        snprintf(r->msg, sizeof(r->msg), "transport: %s", curl_easy_strerror(cc));
    } else if (r->status < 200 || r->status > 299) {
        classify(r);
    }
}

/* Takes finished transfers off the multi handle; returns how many. */
static int reap(sync_http *h, int *failed, int64_t budget_ms)
{
    int n = 0, left;
    CURLMsg *m;
    while ((m = curl_multi_info_read(h->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        sync_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode cc = m->data.result;
        CURL *e = m->easy_handle;
        curl_multi_remove_handle(h->multi, e);
        for (int k = 0; k < SR_SYNC_MAX_INFLIGHT; k++)
            if (h->busy[r->engine][k] == r)
                h->busy[r->engine][k] = NULL;
        finish_req(r, cc, e, budget_ms);
        if (r->code)
            failed[r->engine] = 1;
        n++;
    }
    return n;
}

/* Cuts everything still running at the deadline. */
static void cut_all(sync_http *h, int64_t budget_ms)
{
    for (size_t i = 0; i < h->n; i++)
        for (int k = 0; k < SR_SYNC_MAX_INFLIGHT; k++) {
            sync_req *r = h->busy[i][k];
            if (!r)
                continue;
            curl_multi_remove_handle(h->multi, h->easy[i][k]);
            h->busy[i][k] = NULL;
            r->done = 1;
            r->end_ms = sync_now_ms();
            r->code = SR_E_SYNC_DEADLINE;
            snprintf(r->msg, sizeof(r->msg), "no answer before the deadline (%lld ms)",
                     (long long)budget_ms);
        }
}

/* Starts queued requests of every engine that has room. Returns -1 on a curl failure. */
static int fill(sync_http *h, sync_req *reqs, size_t n, size_t *next, const int *failed,
                int inflight, double deadline_ms)
{
    for (size_t i = 0; i < h->n; i++) {
        for (int k = 0; k < inflight && !failed[i]; k++) {
            if (h->busy[i][k])
                continue;
            while (next[i] < n && reqs[next[i]].engine != (int)i)
                next[i]++;
            if (next[i] >= n)
                break;
            if (start_req(h, k, &reqs[next[i]++], deadline_ms))
                return -1;
        }
    }
    return 0;
}

int sync_http_run(sync_http *h, sync_req *reqs, size_t n, int inflight, double deadline_ms,
                  int64_t budget_ms, sr_err *err)
{
    if (inflight < 1 || inflight > SR_SYNC_MAX_INFLIGHT)
        return sr_err_set(err, SR_E_INVAL, "sync: %d requests in flight per engine", inflight);
    for (size_t i = 0; i < n; i++)
        if (reqs[i].engine < 0 || (size_t)reqs[i].engine >= h->n)
            return sr_err_set(err, SR_E_INVAL, "sync: request for engine %d", reqs[i].engine);
    size_t next[SR_CLIENT_MAX_ENGINES] = {0};
    int failed[SR_CLIENT_MAX_ENGINES] = {0};
    int running = 1;
    while (running) {
        if (fill(h, reqs, n, next, failed, inflight, deadline_ms))
            return sr_err_set(err, SR_E_NOMEM, "sync: cannot start a transfer");
        int still = 0;
        curl_multi_perform(h->multi, &still);
        reap(h, failed, budget_ms);
        running = 0;
        for (size_t i = 0; i < h->n && !running; i++)
            for (int k = 0; k < SR_SYNC_MAX_INFLIGHT; k++)
                running |= h->busy[i][k] != NULL;
        for (size_t i = 0; i < n && !running; i++)
            running = !reqs[i].started && !failed[reqs[i].engine];
        double left = deadline_ms - sync_now_ms();
        if (running && left <= 0) {
            cut_all(h, budget_ms);
            break;
        }
        if (running && still)
            curl_multi_poll(h->multi, NULL, 0, left < 50 ? (int)left + 1 : 50, NULL);
    }
    for (size_t i = 0; i < n; i++)
        if (!reqs[i].started && !failed[reqs[i].engine]) {
            reqs[i].code = SR_E_SYNC_DEADLINE;
            snprintf(reqs[i].msg, sizeof(reqs[i].msg),
                     "not sent: the deadline (%lld ms) passed first", (long long)budget_ms);
        }
    return 0;
}
