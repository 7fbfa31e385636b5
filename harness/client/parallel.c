/* sr_client_parallel: jobs on a bounded set of threads, one pooled conn each (client.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "client_priv.h"

/* ---- jobs on threads ---- */

/* One sr_client_parallel call: its jobs, and the count of threads still running them. */
typedef struct par {
    sr_client_job_fn fn;
    void *ctx;
    size_t n_jobs;
    atomic_size_t next;
    int *rcs;
    pthread_mutex_t mu;
    pthread_cond_t done;
    size_t running; /* kept threads of this call that have not finished (under mu) */
} par;

/* What one kept thread does for a call: the call and its conn. */
typedef struct share {
    par *p;
    sr_client_conn *conn;
} share;

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

/* A kept thread's task: its share of the jobs, then the count down. Its last touch of the call:
 * the call may return (and its frame go) as soon as it sees 0. */
static void share_main(void *arg)
{
    share *s = arg;
    par *p = s->p;
    run_jobs(p, s->conn);
    pthread_mutex_lock(&p->mu);
    if (--p->running == 0)
        pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
}

static void start_share(par *p, share *s, sr_worker *w, sr_client_conn *conn)
{
    s->p = p;
    s->conn = conn;
    pthread_mutex_lock(&p->mu);
    p->running++;
    pthread_mutex_unlock(&p->mu);
    sr_client_worker_run(w, share_main, s);
}

/* Runs the call: worker 0 is the calling thread, the others are the client's kept threads. */
static void run_call(const sr_client *c, par *p, sr_client_conn **conns, size_t nt)
{
    sr_worker **ws = nt > 1 ? calloc(nt - 1, sizeof *ws) : NULL;
    share *sh = nt > 1 ? calloc(nt - 1, sizeof *sh) : NULL;
    size_t got = ws && sh ? sr_client_workers_take(c->workers, ws, nt - 1) : 0;
    for (size_t i = 0; i < got; i++)
        start_share(p, &sh[i], ws[i], conns[i + 1]);
    /* Too few idle: new threads, each started as soon as it exists (as the earlier ones work);
     * a thread that cannot start leaves its share to the others. */
    while (ws && sh && got < nt - 1 && (ws[got] = sr_client_worker_new()) != NULL) {
        start_share(p, &sh[got], ws[got], conns[got + 1]);
        got++;
    }
    run_jobs(p, conns[0]);
    pthread_mutex_lock(&p->mu);
    while (p->running)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    sr_client_workers_give(c->workers, ws, got);
    free(ws);
    free(sh);
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
