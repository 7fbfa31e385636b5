/* sr_client_parallel: jobs on a bounded set of threads, one pooled conn each (client.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "client_priv.h"

/* ---- jobs on threads ---- */

/* One sr_client_parallel call: its jobs, and the count of workers still running them. */
typedef struct par {
    sr_client_job_fn fn;
    void *ctx;
    size_t n_jobs;
    atomic_size_t next;
    int *rcs;
    pthread_mutex_t mu;
    pthread_cond_t done;
    size_t running; /* workers of this call that have not finished (under mu) */
} par;

/*
 * A thread the client keeps between calls (client.h, "Concurrency"): it sleeps on its own
 * condition until a call hands it a task (the call's jobs and a conn) or the client stops it.
 * Kept threads are why a rollout's thread does not start on fresh memory every batch: its stack,
 * its malloc arena and thread cache stay warm (bench/README.md, "Seventh round").
 */
typedef struct sr_worker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    par *task; /* (under mu) the call it works for, NULL while idle */
    sr_client_conn *conn;
    int stop; /* (under mu) the client is done with it */
} sr_worker;

/* The idle workers of a client; the only part of the thread machinery the client owns. */
struct sr_workers {
    pthread_mutex_t mu;
    sr_worker *idle[SR_CLIENT_POOL_MAX];
    size_t n;
};

/* Claims and runs the call's jobs until none is left. */
static void run_jobs(par *p, sr_client_conn *conn)
{
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_jobs)
            break;
        int rc = p->fn(conn, i, p->ctx);
        if (p->rcs)
            p->rcs[i] = rc;
    }
}

static void *worker_main(void *arg)
{
    sr_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->task && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->task)
            break;
        par *p = w->task;
        sr_client_conn *conn = w->conn;
        pthread_mutex_unlock(&w->mu);
        run_jobs(p, conn);
        pthread_mutex_lock(&w->mu);
        /* Idle again before the call can see it finished (and hand it out again). */
        w->task = NULL;
        w->conn = NULL;
        pthread_mutex_unlock(&w->mu);
        /* The last touch of `p`: the call may return (and its frame go) as soon as it sees 0. */
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0)
            pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* A new idle worker thread, or NULL when it cannot be made. */
static sr_worker *worker_new(void)
{
    sr_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return NULL;
    }
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

/* Stops an idle worker and waits for its thread to end. */
static void worker_stop(sr_worker *w)
{
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static void worker_start(sr_worker *w, par *p, sr_client_conn *conn)
{
    pthread_mutex_lock(&w->mu);
    w->task = p;
    w->conn = conn;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int sr_client_workers_new(struct sr_workers **out, sr_err *err)
{
    struct sr_workers *ws = calloc(1, sizeof *ws);
    if (!ws || pthread_mutex_init(&ws->mu, NULL) != 0) {
        free(ws);
        *out = NULL;
        return sr_err_set(err, SR_E_NOMEM, "client: cannot create the worker pool");
    }
    *out = ws;
    return 0;
}

void sr_client_workers_free(struct sr_workers *ws)
{
    if (!ws)
        return;
    for (size_t i = 0; i < ws->n; i++)
        worker_stop(ws->idle[i]);
    pthread_mutex_destroy(&ws->mu);
    free(ws);
}

/* Up to `want` idle workers into out; how many. */
static size_t workers_take_idle(struct sr_workers *ws, sr_worker **out, size_t want)
{
    size_t got = 0;
    pthread_mutex_lock(&ws->mu);
    while (got < want && ws->n)
        out[got++] = ws->idle[--ws->n];
    pthread_mutex_unlock(&ws->mu);
    return got;
}

/* Gives idle workers back; those past SR_CLIENT_POOL_MAX are stopped. */
static void workers_give(struct sr_workers *ws, sr_worker **w, size_t n)
{
    size_t i = 0;
    pthread_mutex_lock(&ws->mu);
    for (; i < n && ws->n < SR_CLIENT_POOL_MAX; i++)
        ws->idle[ws->n++] = w[i];
    pthread_mutex_unlock(&ws->mu);
    for (; i < n; i++)
        worker_stop(w[i]);
}

/* Runs the call: worker 0 is the calling thread, the others are the client's kept threads. */
static void run_call(const sr_client *c, par *p, sr_client_conn **conns, size_t nt)
{
    sr_worker **ws = nt > 1 ? calloc(nt - 1, sizeof *ws) : NULL;
    /* A thread that cannot start leaves its share to the others. */
    size_t got = ws ? workers_take_idle(c->workers, ws, nt - 1) : 0;
    pthread_mutex_lock(&p->mu);
    p->running = got;
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < got; i++)
        worker_start(ws[i], p, conns[i + 1]);
    /* Too few idle: new threads, each started as soon as it exists (as the earlier ones work). */
    while (ws && got < nt - 1 && (ws[got] = worker_new()) != NULL) {
        pthread_mutex_lock(&p->mu);
        p->running++;
        pthread_mutex_unlock(&p->mu);
        worker_start(ws[got], p, conns[got + 1]);
        got++;
    }
    run_jobs(p, conns[0]);
    pthread_mutex_lock(&p->mu);
    while (p->running)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    workers_give(c->workers, ws, got);
    free(ws);
}

int sr_client_parallel(const sr_client *c, size_t n_jobs, int limit, sr_client_job_fn fn, void *ctx,
                       int *rcs, sr_err *err)
{
    if (!c || !fn || limit < 1)
        return sr_err_set(err, SR_E_INVAL, "client: parallel needs a job and a limit >= 1");
    if (n_jobs == 0)
        return 0;
    size_t nt = (size_t)limit < n_jobs ? (size_t)limit : n_jobs;
    sr_client_conn **conns = calloc(nt, sizeof *conns);
    par p = {fn, ctx, n_jobs, 0, rcs, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    int rc = conns ? 0 : sr_err_set(err, SR_E_NOMEM, "client: parallel setup");
    for (size_t i = 0; !rc && i < nt; i++)
        rc = sr_client_pool_take(&conns[i], c, err);
    if (!rc)
        run_call(c, &p, conns, nt);
    for (size_t i = 0; conns && i < nt; i++)
        sr_client_pool_give(c, conns[i]);
    free(conns);
    pthread_cond_destroy(&p.done);
    pthread_mutex_destroy(&p.mu);
    return rc;
}
