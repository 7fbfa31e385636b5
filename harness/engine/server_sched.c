/* The mock engine's scheduler: the min-heap of suspended requests keyed on their wake time, the
 * wait lists, and the thread that resumes each request when its time comes. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "server_priv.h"
#include "sr_clock.h"

int64_t sr_srv_now_ns(void)
{
    return sr_clock_ns();
}

/* ---- scheduler heap (min-heap on wake_ns) ---- */

static void heap_set(sr_server *s, size_t i, req *r)
{
    s->heap[i] = r;
    r->heap_pos = i + 1;
}

static void heap_up(sr_server *s, size_t i)
{
    req *r = s->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->heap[p]->wake_ns <= r->wake_ns)
            break;
        heap_set(s, i, s->heap[p]);
        i = p;
    }
    heap_set(s, i, r);
}

static void heap_down(sr_server *s, size_t i)
{
    req *r = s->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && s->heap[c + 1]->wake_ns < s->heap[c]->wake_ns)
            c++;
        if (s->heap[c]->wake_ns >= r->wake_ns)
            break;
        heap_set(s, i, s->heap[c]);
        i = c;
    }
    heap_set(s, i, r);
}

void sr_srv_heap_push_locked(sr_server *s, req *r, int64_t wake_ns)
{
    /* The heap was sized for every connection all daemons can hold; see sr_server_start. */
    r->wake_ns = wake_ns;
    s->heap[s->nheap++] = r;
    heap_up(s, s->nheap - 1);
    pthread_cond_signal(&s->cv);
}

int sr_srv_unschedule_locked(req *r)
{
    sr_server *s = r->srv;
    if (!r->heap_pos)
        return 0;
    size_t i = r->heap_pos - 1;
    r->heap_pos = 0;
    req *last = s->heap[--s->nheap];
    if (i < s->nheap) {
        heap_set(s, i, last);
        heap_up(s, i);
        heap_down(s, last->heap_pos - 1);
    }
    return 1;
}

int sr_srv_suspend_locked(req *r)
{
    if (r->srv->stopping) {
        r->state = RS_SHUTDOWN;
        return 0;
    }
    MHD_suspend_connection(r->conn);
    return 1;
}

void sr_srv_schedule_locked(req *r, int64_t wake_ns)
{
    if (sr_srv_suspend_locked(r))
        sr_srv_heap_push_locked(r->srv, r, wake_ns);
}

void sr_srv_list_add_locked(req_dlist *l, req *r, req_list which)
{
    r->list = which;
    r->lprev = NULL;
    r->lnext = l->head;
    if (l->head)
        l->head->lprev = r;
    else
        l->tail = r;
    l->head = r;
    l->n++;
}

static req_dlist *list_of(sr_server *s, req_list which)
{
    switch (which) {
    case RL_HELD:
        return &s->held;
    case RL_WAITERS:
        return &s->waiters;
    case RL_STALLED:
        return &s->stalled;
    case RL_QUEUED:
        return &s->queued;
    case RL_NONE:
        break;
    }
    return NULL;
}

void sr_srv_list_remove_locked(req *r)
{
    req_dlist *l = list_of(r->srv, r->list);
    if (!l)
        return;
    if (r->lprev)
        r->lprev->lnext = r->lnext;
    else
        l->head = r->lnext;
    if (r->lnext)
        r->lnext->lprev = r->lprev;
    else
        l->tail = r->lprev;
    r->lprev = r->lnext = NULL;
    r->list = RL_NONE;
    l->n--;
}

void sr_srv_resume_locked(req *r)
{
    MHD_resume_connection(r->conn);
}

void sr_srv_running_dec_locked(sr_server *s)
{
    if (--s->running > 0)
        return;
    while (s->waiters.head) {
        req *w = s->waiters.head;
        sr_srv_list_remove_locked(w);
        w->state = RS_WAIT_DONE;
        sr_srv_resume_locked(w);
    }
}

void *sr_srv_sched_main(void *arg)
{
    sr_server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        if (s->nheap == 0) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        req *top = s->heap[0];
        int64_t now = sr_srv_now_ns();
        if (top->wake_ns <= now) {
            sr_srv_unschedule_locked(top);
            if (top->state == RS_RUNNING) {
                top->state = RS_DUE;
                sr_srv_running_dec_locked(s);
            }
            sr_srv_resume_locked(top);
            continue;
        }
        struct timespec ts = {(time_t)(top->wake_ns / 1000000000),
                              (long)(top->wake_ns % 1000000000)};
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
