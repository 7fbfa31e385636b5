#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "client_priv.h"

/* ---- the client's idle conns ---- */

int sr_client_pool_new(sr_conn_pool **out, sr_err *err)
{
    sr_conn_pool *p = calloc(1, sizeof *p);
    if (!p || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        *out = NULL;
        return sr_err_set(err, SR_E_NOMEM, "client: cannot create the conn pool");
    }
    *out = p;
    return 0;
}

void sr_client_pool_free(sr_conn_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        sr_client_conn_free(p->idle[i]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* An idle conn of the client, or a new one when none is idle. */
static int pool_take(sr_client_conn **out, const sr_client *c, sr_err *err)
{
    sr_conn_pool *p = c->pool;
    sr_client_conn *k = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->n)
        k = p->idle[--p->n];
    pthread_mutex_unlock(&p->mu);
    if (k) {
        *out = k;
        return 0;
    }
    return sr_client_conn_new(out, c, err);
}

/* Keeps k (and its kept-alive connections) for the next call; beyond the cap it is freed. */
static void pool_give(const sr_client *c, sr_client_conn *k)
{
    if (!k)
        return;
    sr_conn_pool *p = c->pool;
    pthread_mutex_lock(&p->mu);
    int kept = p->n < SR_CLIENT_POOL_MAX;
    if (kept)
        p->idle[p->n++] = k;
    pthread_mutex_unlock(&p->mu);
    if (!kept)
        sr_client_conn_free(k);
}

/* ---- jobs on threads ---- */

typedef struct par {
    sr_client_job_fn fn;
    void *ctx;
    size_t n_jobs;
    atomic_size_t next;
    int *rcs;
} par;

typedef struct worker {
    par *p;
    sr_client_conn *conn;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    par *p = w->p;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_jobs)
            break;
        int rc = p->fn(w->conn, i, p->ctx);
        if (p->rcs)
            p->rcs[i] = rc;
    }
    return NULL;
}

int sr_client_parallel(const sr_client *c, size_t n_jobs, int limit, sr_client_job_fn fn, void *ctx,
                       int *rcs, sr_err *err)
{
    if (!c || !fn || limit < 1)
        return sr_err_set(err, SR_E_INVAL, "client: parallel needs a job and a limit >= 1");
    if (n_jobs == 0)
        return 0;
    size_t nt = (size_t)limit < n_jobs ? (size_t)limit : n_jobs;
    worker *ws = calloc(nt, sizeof *ws);
    pthread_t *th = calloc(nt, sizeof *th);
    int *started = calloc(nt, sizeof *started);
    par p = {fn, ctx, n_jobs, 0, rcs};
    int rc = ws && th && started ? 0 : sr_err_set(err, SR_E_NOMEM, "client: parallel setup");
    for (size_t i = 0; !rc && i < nt; i++) {
        ws[i].p = &p;
        rc = pool_take(&ws[i].conn, c, err);
    }
    /* A thread that cannot start leaves its share to the others; worker 0 is this thread. */
    for (size_t i = 1; !rc && i < nt; i++)
        started[i] = pthread_create(&th[i], NULL, work, &ws[i]) == 0;
    if (!rc)
        work(&ws[0]);
    for (size_t i = 1; !rc && i < nt; i++)
        if (started[i])
            pthread_join(th[i], NULL);
    for (size_t i = 0; ws && i < nt; i++)
        pool_give(c, ws[i].conn);
    free(ws);
    free(th);
    free(started);
    return rc;
}
