/* sr_client_parallel: jobs on a bounded set of threads, one pooled conn each (client.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "client_priv.h"

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
        rc = sr_client_pool_take(&ws[i].conn, c, err);
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
        sr_client_pool_give(c, ws[i].conn);
    free(ws);
    free(th);
    free(started);
    return rc;
}
