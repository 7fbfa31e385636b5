/* The threads a client keeps between sr_client_parallel calls (client_priv.h, client.h). */
#include <pthread.h>
#include <stdlib.h>

#include "client_priv.h"

/*
 * A kept thread: it sleeps on its own condition until it is handed a task or stopped. It takes
 * a task (clears it) before running it, so a task whose last act lets its caller hand the thread
 * out again (parallel.c) never has the next task overwritten; the thread finds it on its next
 * look. Kept threads are why a rollout's thread does not start on fresh memory every batch: its
 * stack, its malloc arena and thread cache stay warm (bench/README.md, "Seventh round").
 */
struct sr_worker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void *); /* (under mu) the next task, NULL while none */
    void *arg;
    int stop; /* (under mu) the client is done with it */
};

/* The idle threads of a client. */
struct sr_workers {
    pthread_mutex_t mu;
    sr_worker *idle[SR_CLIENT_POOL_MAX];
    size_t n;
};

static void *worker_main(void *arg)
{
    sr_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->fn && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->fn)
            break;
        void (*fn)(void *) = w->fn;
        void *task = w->arg;
        w->fn = NULL;
        w->arg = NULL;
        pthread_mutex_unlock(&w->mu);
        fn(task);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

sr_worker *sr_client_worker_new(void)
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

/* Stops an idle thread and waits for it to end. */
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

void sr_client_worker_run(sr_worker *w, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&w->mu);
    w->fn = fn;
    w->arg = arg;
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

size_t sr_client_workers_take(struct sr_workers *ws, sr_worker **out, size_t want)
{
    size_t got = 0;
    pthread_mutex_lock(&ws->mu);
    while (got < want && ws->n)
        out[got++] = ws->idle[--ws->n];
    pthread_mutex_unlock(&ws->mu);
    return got;
}

void sr_client_workers_give(struct sr_workers *ws, sr_worker **w, size_t n)
{
    size_t i = 0;
    pthread_mutex_lock(&ws->mu);
    for (; i < n && ws->n < SR_CLIENT_POOL_MAX; i++)
        ws->idle[ws->n++] = w[i];
    pthread_mutex_unlock(&ws->mu);
    for (; i < n; i++)
        worker_stop(w[i]);
}
