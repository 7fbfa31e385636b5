#include "e2e_floor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "bench_util.h"
#include "sr_buf.h"
#include "sr_clock.h"
#include "sr_splice.h"

#define FLOOR_MAX_ENGINES 8

struct e2e_floor {
    int n_urls, threads;
    char urls[FLOOR_MAX_ENGINES][256];
    CURL **easy;            /* one per thread (multi mode: per slot), kept across batches */
    CURLM **multi;          /* multi mode: one per thread, NULL otherwise */
    int slots;              /* multi mode: easy handles in use (a multiple of threads) */
    int n_easy;             /* easy handles made */
    struct splice_slot *sp; /* e2e_floor_splice: one per easy handle, else NULL */
    int64_t pair_ns;        /* the thread CPU clock's cost per read pair, subtracted */
};

/* A slot's splicer (e2e_floor_splice) and what it measured. */
typedef struct splice_slot {
    sr_splicer *s;
    CURL *easy;
    double *bytes;   /* the replay thread's byte count */
    int begun, fail; /* a response is open; a splice of this replay failed */
    int64_t cpu_ns;  /* thread CPU inside begin, feeds and finish */
    int64_t spliced; /* responses spliced */
    int64_t pieces;  /* timed pieces (begin, each feed, finish), each holding one clock read */
    sr_buf last;     /* the last response's body, kept for the loop (outside the timed part) */
    sr_err err;
} splice_slot;

/* One request of the replay, built before the clock starts. */
typedef struct floor_req {
    sr_buf body;
    char url[300];
    char session[300];
} floor_req;

typedef struct floor_run {
    e2e_floor *f;
    floor_req *reqs;
    size_t n_reqs;
    atomic_size_t next;
    double *cpu_ms; /* per thread */
    double *bytes;  /* per thread */
    atomic_int failed;
} floor_run;

typedef struct floor_worker {
    floor_run *run;
    int index;
} floor_worker;

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The write callback of a splicing floor: every piece goes through the slot's splicer. */
static size_t splice_piece(char *p, size_t size, size_t nmemb, void *ud)
{
    splice_slot *x = ud;
    size_t n = size * nmemb;
    *x->bytes += (double)n;
    if (!x->begun) {
        curl_off_t cl = -1;
        curl_easy_getinfo(x->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
        sr_buf_reset(&x->last);
        int64_t t0 = sr_clock_cpu_ns();
        x->fail |= sr_splice_stream_begin(x->s, (int64_t)cl, &x->err) != 0;
        x->cpu_ns += sr_clock_cpu_ns() - t0;
        x->pieces++;
        x->begun = 1;
    }
    int64_t t0 = sr_clock_cpu_ns();
    x->fail |= sr_splice_stream_feed(x->s, p, n, &x->err) != 0;
    x->cpu_ns += sr_clock_cpu_ns() - t0;
    x->pieces++;
    x->fail |= sr_buf_append(&x->last, p, n, NULL) != 0;
    return n;
}

/* Ends a splicing slot's response (after its transfer is done). */
static void splice_end(splice_slot *x)
{
    if (!x->begun) {
        x->fail = 1; /* a 200 without a body is no response of the engine's */
        return;
    }
    const sr_splice_result *r;
    int64_t t0 = sr_clock_cpu_ns();
    x->fail |= sr_splice_stream_finish(x->s, &r, &x->err) != 0;
    x->cpu_ns += sr_clock_cpu_ns() - t0;
    x->pieces++;
    x->begun = 0;
    x->spliced++;
}

static size_t discard(char *p, size_t size, size_t nmemb, void *ud)
{
    (void)p;
    *(double *)ud += (double)(size * nmemb);
    return size * nmemb;
}

e2e_floor *e2e_floor_new(const char *const *urls, int n_urls, int threads)
{
    if (n_urls < 1 || n_urls > FLOOR_MAX_ENGINES || threads < 1)
        return NULL;
    e2e_floor *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->n_urls = n_urls;
    f->threads = threads;
    for (int i = 0; i < n_urls; i++)
        snprintf(f->urls[i], sizeof f->urls[i], "%s", urls[i]);
    f->easy = calloc((size_t)threads, sizeof *f->easy);
    f->n_easy = threads;
    for (int i = 0; f->easy && i < threads; i++) {
        f->easy[i] = curl_easy_init();
        if (!f->easy[i]) {
            e2e_floor_free(f);
            return NULL;
        }
    }
    if (!f->easy) {
        free(f);
        return NULL;
    }
    return f;
}

e2e_floor *e2e_floor_new_multi(const char *const *urls, int n_urls, int slots, int threads)
{
    if (threads < 1 || slots < threads)
        return NULL;
    e2e_floor *f = e2e_floor_new(urls, n_urls, slots);
    if (!f)
        return NULL;
    f->multi = calloc((size_t)threads, sizeof *f->multi);
    f->slots = slots - slots % threads; /* every thread drives the same number */
    f->threads = threads;
    for (int i = 0; f->multi && i < threads; i++)
        if (!(f->multi[i] = curl_multi_init()))
            break;
    if (!f->multi || !f->multi[threads - 1]) {
        e2e_floor_free(f);
        return NULL;
    }
    return f;
}

void e2e_floor_free(e2e_floor *f)
{
    if (!f)
        return;
    for (int i = 0; f->sp && i < f->n_easy; i++) {
        sr_splicer_free(f->sp[i].s);
        sr_buf_release(&f->sp[i].last);
    }
    free(f->sp);
    for (int i = 0; f->easy && i < f->n_easy; i++)
        if (f->easy[i])
            curl_easy_cleanup(f->easy[i]);
    for (int i = 0; f->multi && i < f->threads; i++)
        if (f->multi[i])
            curl_multi_cleanup(f->multi[i]);
    free(f->multi);
    free(f->easy);
    free(f);
}

/* The client's request body for turn k of result r (the layout of skyrl.md §1.2). */
static int build_body(sr_buf *b, const sr_rollout_result *r, const sr_rollout_turn *tu,
                      const char *model, const char *sp_text)
{
    size_t sp_len = strlen(sp_text);
    int rc = sr_buf_puts(b, "{\"sampling_params\":", NULL);
    if (!rc && tu->start_sent >= 0) {
        /* sp_text is "{...}": the start goes in before its closing brace. */
        rc = sr_buf_append(b, sp_text, sp_len - 1, NULL);
        if (!rc)
            rc = sr_buf_printf(b, NULL, "%s\"routed_experts_prompt_start\":%lld}",
                               sp_len > 2 ? "," : "", (long long)tu->start_sent);
    } else if (!rc) {
        rc = sr_buf_puts(b, sp_text, NULL);
    }
    if (!rc)
        rc = sr_buf_printf(b, NULL, ",\"model\":\"%s\",\"token_ids\":[", model);
    for (int64_t i = 0; !rc && i < tu->prompt_len; i++) {
        size_t j = (size_t)i;
        int32_t id = j < r->prompt_len ? r->prompt_ids[j] : r->response_ids[j - r->prompt_len];
        rc = sr_buf_printf(b, NULL, i ? ",%d" : "%d", (int)id);
    }
    return rc ? rc : sr_buf_puts(b, "]}", NULL);
}

static void *work(void *arg)
{
    floor_worker *w = arg;
    floor_run *run = w->run;
    CURL *e = run->f->easy[w->index];
    double bytes = 0;
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    splice_slot *x = run->f->sp ? &run->f->sp[w->index] : NULL;
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, x ? splice_piece : discard);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x ? (void *)x : (void *)&bytes);
    if (x)
        x->bytes = &bytes;
    double t0 = thread_cpu_ms();
    for (;;) {
        size_t i = atomic_fetch_add(&run->next, 1);
        if (i >= run->n_reqs)
            break;
        floor_req *q = &run->reqs[i];
        struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
        h = curl_slist_append(h, "Expect:");
        h = curl_slist_append(h, q->session);
        curl_easy_setopt(e, CURLOPT_URL, q->url);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body.data);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body.len);
        long status = 0;
        if (curl_easy_perform(e) != CURLE_OK ||
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200)
            atomic_store(&run->failed, 1);
        if (x)
            splice_end(x);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(h);
    }
    run->cpu_ms[w->index] = thread_cpu_ms() - t0;
    run->bytes[w->index] = bytes;
    return NULL;
}

static void easy_setup(CURL *e, double *bytes, splice_slot *x)
{
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, x ? splice_piece : discard);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x ? (void *)x : (void *)bytes);
    if (x)
        x->bytes = bytes;
}

/* Starts request q on slot easy e of multi m; the headers list is the slot's until done. */
static void start_multi(CURLM *m, CURL *e, const floor_req *q, struct curl_slist **h)
{
    *h = curl_slist_append(NULL, "Content-Type: application/json");
    *h = curl_slist_append(*h, "Expect:");
    *h = curl_slist_append(*h, q->session);
    curl_easy_setopt(e, CURLOPT_URL, q->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, *h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body.data);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body.len);
    curl_multi_add_handle(m, e);
}

/* Multi mode: this thread's multi handle keeps up to its share of the slots in flight. */
static void *work_multi(void *arg)
{
    floor_worker *w = arg;
    floor_run *run = w->run;
    e2e_floor *f = run->f;
    CURLM *m = f->multi[w->index];
    int per = f->slots / f->threads;
    CURL **easy = f->easy + (size_t)w->index * (size_t)per;
    splice_slot *xs = f->sp ? f->sp + (size_t)w->index * (size_t)per : NULL;
    struct curl_slist *hdr[256] = {0};
    int free_slots[256], n_free = 0;
    double bytes = 0;
    if (per > 256)
        per = 256;
    for (int k = per - 1; k >= 0; k--) {
        easy_setup(easy[k], &bytes, xs ? &xs[k] : NULL);
        curl_easy_setopt(easy[k], CURLOPT_PRIVATE, (void *)(intptr_t)k);
        free_slots[n_free++] = k;
    }
    double t0 = thread_cpu_ms();
    int active = 0, drained = 0;
    for (;;) {
        while (n_free && !drained) {
            size_t i = atomic_fetch_add(&run->next, 1);
            if (i >= run->n_reqs) {
                drained = 1;
                break;
            }
            int k = free_slots[--n_free];
            start_multi(m, easy[k], &run->reqs[i], &hdr[k]);
            active++;
        }
        if (!active)
            break;
        int running = 0, left = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *e = msg->easy_handle;
            long status = 0;
            intptr_t k = 0;
            curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&k);
            if (msg->data.result != CURLE_OK ||
                curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200)
                atomic_store(&run->failed, 1);
            curl_multi_remove_handle(m, e);
            if (xs)
                splice_end(&xs[k]);
            curl_slist_free_all(hdr[k]);
            hdr[k] = NULL;
            free_slots[n_free++] = (int)k;
            active--;
        }
        if (active && running)
            curl_multi_poll(m, NULL, 0, 1000, NULL);
    }
    run->cpu_ms[w->index] = thread_cpu_ms() - t0;
    run->bytes[w->index] = bytes;
    return NULL;
}

/* Builds every turn's request of the batch; returns the count or -1. */
static long build_all(floor_req **out, e2e_floor *f, const sr_rollout_result *results,
                      const sr_rollout_config *cfgs, size_t n, const char *sp_text)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += (size_t)results[i].n_turns;
    floor_req *reqs = calloc(total ? total : 1, sizeof *reqs);
    if (!reqs)
        return -1;
    size_t k = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        for (int t = 0; t < results[i].n_turns; t++, k++) {
            const sr_rollout_turn *tu = &results[i].turns[t];
            floor_req *q = &reqs[k];
            q->body = (sr_buf)SR_BUF_INIT;
            bad |= tu->engine < 0 || tu->engine >= f->n_urls;
            snprintf(q->url, sizeof q->url, "%s/skyrl/v1/generate",
                     f->urls[tu->engine >= 0 && tu->engine < f->n_urls ? tu->engine : 0]);
            snprintf(q->session, sizeof q->session, "X-Session-ID: %s",
                     cfgs[i].session_id ? cfgs[i].session_id : "");
            const char *model = cfgs[i].model && cfgs[i].model[0] ? cfgs[i].model : "default";
            bad |= build_body(&q->body, &results[i], tu, model, sp_text) != 0;
        }
    }
    if (bad) {
        for (size_t i = 0; i < total; i++)
            sr_buf_release(&reqs[i].body);
        free(reqs);
        return -1;
    }
    *out = reqs;
    return (long)total;
}

int e2e_floor_batch(e2e_floor *f, e2e_floor_totals *t, const sr_rollout_result *results,
                    const sr_rollout_config *cfgs, size_t n, const cJSON *sp)
{
    char *sp_text = cJSON_PrintUnformatted(sp);
    floor_req *reqs = NULL;
    long nr = sp_text ? build_all(&reqs, f, results, cfgs, n, sp_text) : -1;
    free(sp_text);
    floor_run run = {f,
                     reqs,
                     nr > 0 ? (size_t)nr : 0,
                     0,
                     calloc((size_t)f->threads, sizeof(double)),
                     calloc((size_t)f->threads, sizeof(double)),
                     0};
    int rc = nr < 0 || !run.cpu_ms || !run.bytes ? -1 : 0;
    int nt = f->threads < (int)run.n_reqs ? f->threads : (int)run.n_reqs;
    floor_worker *ws = calloc((size_t)(nt > 0 ? nt : 1), sizeof *ws);
    pthread_t *th = calloc((size_t)(nt > 0 ? nt : 1), sizeof *th);
    if (!ws || !th)
        rc = -1;
    int started = 0;
    double w0 = bench_now_ms();
    for (int i = 0; !rc && i < nt; i++, started++) {
        ws[i] = (floor_worker){&run, i};
        if (pthread_create(&th[i], NULL, f->multi ? work_multi : work, &ws[i]) != 0) {
            rc = -1;
            break;
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    t->wall_ms += bench_now_ms() - w0;
    if (!rc && atomic_load(&run.failed))
        rc = -1;
    for (int i = 0; !rc && i < nt; i++) {
        t->cpu_ms += run.cpu_ms[i];
        t->bytes += run.bytes[i];
    }
    for (int i = 0; f->sp && i < f->n_easy; i++) {
        splice_slot *x = &f->sp[i];
        if (!rc && x->fail) {
            fprintf(stderr, "floor splice: %s\n", x->err.msg);
            rc = -1;
        }
        t->splice_cpu_ms += (double)(x->cpu_ns - x->pieces * f->pair_ns) / 1e6;
        t->spliced += (double)x->spliced;
        x->cpu_ns = x->spliced = x->pieces = 0;
        x->fail = x->begun = 0;
    }
    if (!rc)
        t->requests += (double)run.n_reqs;
    for (size_t i = 0; i < run.n_reqs; i++)
        sr_buf_release(&reqs[i].body);
    free(reqs);
    free(run.cpu_ms);
    free(run.bytes);
    free(ws);
    free(th);
    return rc;
}

int e2e_floor_splice(e2e_floor *f, const sr_fields *fields)
{
    if (f->sp)
        return 0;
    f->sp = calloc((size_t)f->n_easy, sizeof *f->sp);
    if (!f->sp)
        return -1;
    f->pair_ns = sr_clock_cpu_pair_ns(64);
    for (int i = 0; i < f->n_easy; i++) {
        f->sp[i].easy = f->easy[i];
        f->sp[i].last = (sr_buf)SR_BUF_INIT;
        f->sp[i].err = (sr_err)SR_ERR_INIT;
        if (sr_splicer_new(&f->sp[i].s, fields, NULL, &f->sp[i].err))
            return -1;
    }
    return 0;
}

/* One kept body through its slot's splicer in pieces of libcurl's write size, timed as the
 * replay times its pieces; the thread CPU in ns, or -1 when the splice failed. */
static int64_t splice_kept(splice_slot *x, int64_t pair_ns)
{
    const size_t piece = 16384; /* CURL_MAX_WRITE_SIZE */
    const sr_splice_result *r;
    int64_t t0 = sr_clock_cpu_ns();
    int bad = sr_splice_stream_begin(x->s, (int64_t)x->last.len, &x->err) != 0;
    int64_t cpu = sr_clock_cpu_ns() - t0 - pair_ns;
    for (size_t at = 0; at < x->last.len; at += piece) {
        size_t n = x->last.len - at < piece ? x->last.len - at : piece;
        t0 = sr_clock_cpu_ns();
        bad |= sr_splice_stream_feed(x->s, x->last.data + at, n, &x->err) != 0;
        cpu += sr_clock_cpu_ns() - t0 - pair_ns;
    }
    t0 = sr_clock_cpu_ns();
    bad |= sr_splice_stream_finish(x->s, &r, &x->err) != 0;
    cpu += sr_clock_cpu_ns() - t0 - pair_ns;
    return bad ? -1 : cpu;
}

int e2e_floor_splice_loop(e2e_floor *f, int rounds, double *cpu_us)
{
    int64_t total = 0, count = 0;
    for (int r = 0; f->sp && r < rounds; r++)
        for (int i = 0; i < f->n_easy; i++) {
            if (!f->sp[i].last.len)
                continue;
            int64_t ns = splice_kept(&f->sp[i], f->pair_ns);
            if (ns < 0) {
                fprintf(stderr, "floor splice loop: %s\n", f->sp[i].err.msg);
                return -1;
            }
            total += ns;
            count++;
        }
    if (!count)
        return -1;
    *cpu_us = (double)total / 1e3 / (double)count;
    return 0;
}
