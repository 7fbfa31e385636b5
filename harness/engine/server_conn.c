/* Connections of the mock engine's server while they wait for a request's head or body: the cap
 * on those waiting (eviction of the longest waiting) and the head and body deadlines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server_priv.h"

static void list_add(sr_conn_list *l, sr_conn *x, int phase, int64_t now)
{
    x->phase = phase;
    x->since_ns = now;
    x->list = l;
    x->prev = l->tail;
    x->next = NULL;
    if (l->tail)
        l->tail->next = x;
    else
        l->head = x;
    l->tail = x;
    l->n++;
}

static void list_remove(sr_conn *x)
{
    sr_conn_list *l = x->list;
    if (!l)
        return;
    if (x->prev)
        x->prev->next = x->next;
    else
        l->head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        l->tail = x->prev;
    l->n--;
    x->list = NULL;
    x->prev = x->next = NULL;
}

/* Wakes the owner's loop so that sr_server_tick learns of a new deadline. */
static void wake_owner(sr_server *s)
{
    ssize_t w = write(s->wake[1], "c", 1);
    (void)w;
}

/*
 * Whether a connection that starts to wait `limit_ms` now must wake the owner's loop: only when
 * its deadline comes before the time the loop calls sr_server_tick anyway (s->owner_due_ns, set
 * by sr_conn_reap). Every request of a kept-alive connection enters the body list, and a pipe
 * write plus a wake-up of the owner's thread per request cost more than the request's own locks.
 * A wake-up sets owner_due_ns to now: the owner ticks at once and its reap sees every connection
 * added until then. Called with s->mu held.
 */
static int must_wake_locked(sr_server *s, int64_t now, int limit_ms)
{
    if (now + (int64_t)limit_ms * 1000000 >= s->owner_due_ns)
        return 0;
    s->owner_due_ns = now;
    return 1;
}

static int body_limit(const sr_server *s, const char **why);

/*
 * Closes a waiting connection from outside its MHD thread: an answer naming why (when the peer
 * may be sending a request), then shutdown, which makes MHD see the end of the stream and close
 * the socket itself. Called with s->mu held: MHD notifies the close (sr_conn_closed, which takes
 * s->mu) before it closes the descriptor, so the descriptor is still this connection's.
 */
static void close_locked(sr_conn *x, unsigned status, int code, const char *msg)
{
    if (status) {
        char body[512], out[1024];
        int nb = snprintf(body, sizeof(body),
                          "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"code\":%u,"
                          "\"check\":\"%s\"}}",
                          msg, status == 408 ? "RequestTimeoutError" : "ServiceUnavailableError",
                          status, sr_code_name(code));
        int n =
            snprintf(out, sizeof(out),
                     "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     status, status == 408 ? "Request Timeout" : "Service Unavailable", nb, body);
        ssize_t w = send(x->fd, out, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)w;
    }
    shutdown(x->fd, SHUT_RDWR);
    list_remove(x);
    x->phase = SR_CONN_CLOSING;
}

sr_conn *sr_conn_started(sr_server *s, int fd, uint64_t gen)
{
    sr_conn *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->fd = fd;
    x->gen = gen;
    int64_t now = sr_srv_now_ns();
    pthread_mutex_lock(&s->mu);
    if (s->fresh.n + s->kept.n >= s->cfg->max_pending) {
        /* A connection sending its head slowly is the likelier attacker; an idle kept-alive one
         * is dropped only when no new connection waits. The newcomer is never the victim. */
        if (s->fresh.head)
            close_locked(s->fresh.head, 503, SR_E_ENGINE_PENDING_LIMIT,
                         "the engine holds its limit of connections waiting for a request "
                         "(engines.server.max_pending_connections); this one waited longest");
        else if (s->kept.head)
            close_locked(s->kept.head, 0, 0, NULL);
        s->evicted++;
    }
    int wake = must_wake_locked(s, now, s->cfg->header_timeout_ms);
    list_add(&s->fresh, x, SR_CONN_FRESH, now);
    s->open_conns++;
    pthread_mutex_unlock(&s->mu);
    if (wake)
        wake_owner(s);
    return x;
}

void sr_conn_closed(sr_server *s, sr_conn *x)
{
    if (!x)
        return;
    pthread_mutex_lock(&s->mu);
    list_remove(x);
    s->open_conns--;
    pthread_mutex_unlock(&s->mu);
    free(x);
}

void sr_conn_phase(sr_server *s, sr_conn *x, int phase)
{
    if (!x)
        return;
    int wake = 0;
    pthread_mutex_lock(&s->mu);
    if (x->phase != SR_CONN_CLOSING && x->phase != phase) {
        list_remove(x);
        if (phase == SR_CONN_BODY) {
            const char *why;
            int64_t now = sr_srv_now_ns();
            wake = must_wake_locked(s, now, body_limit(s, &why));
            list_add(&s->body, x, phase, now);
        } else if (phase == SR_CONN_KEPT) {
            list_add(&s->kept, x, phase, sr_srv_now_ns());
        } else {
            x->phase = phase;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (wake)
        wake_owner(s);
}

/* Closes the connections of `l` (oldest first) waiting since before `limit_ms` ago (`why` names
 * the limit); returns the milliseconds until the next one is due, or -1. */
static int64_t reap_list(sr_conn_list *l, int limit_ms, int64_t now, const char *what,
                         const char *why)
{
    int64_t limit = (int64_t)limit_ms * 1000000;
    while (l->head && now - l->head->since_ns >= limit) {
        char msg[300];
        snprintf(msg, sizeof(msg), "the request's %s did not arrive within %d ms (%s)", what,
                 limit_ms, why);
        close_locked(l->head, 408, SR_E_ENGINE_REQUEST_TIMEOUT, msg);
    }
    return l->head ? (l->head->since_ns + limit - now + 999999) / 1000000 : -1;
}

int sr_conn_body_cap(const sr_server *s)
{
    int m = s->cfg->max_connections;
    return m - (m / 8 > 1 ? m / 8 : 1);
}

/*
 * The time a request body may take: body_timeout_ms, or, while requests wait for a busy slot and
 * at least sr_conn_body_cap of the slots are held by connections still sending a body, no more
 * than a head may take (header_timeout_ms). Slow bodies would otherwise hold every slot until
 * body_timeout_ms and starve the requests queued behind them.
 */
static int body_limit(const sr_server *s, const char **why)
{
    int limit = s->cfg->body_timeout_ms;
    *why = "engines.server.body_timeout_ms";
    if (s->queued.n > 0 && s->body.n >= sr_conn_body_cap(s) && s->cfg->header_timeout_ms < limit) {
        limit = s->cfg->header_timeout_ms;
        *why = "engines.server.header_timeout_ms: requests wait for a busy slot while most slots "
               "are held by connections sending a body";
    }
    return limit;
}

int64_t sr_conn_reap(sr_server *s)
{
    int64_t now = sr_srv_now_ns();
    pthread_mutex_lock(&s->mu);
    int64_t a = reap_list(&s->fresh, s->cfg->header_timeout_ms, now, "head",
                          "engines.server.header_timeout_ms");
    const char *why;
    int limit = body_limit(s, &why);
    int64_t b = reap_list(&s->body, limit, now, "body", why);
    int64_t due = a < 0 ? b : (b < 0 || a < b ? a : b);
    /* While connections are open, the owner ticks at least every shortest wait a connection can
     * start now (header or body), so that a kept-alive connection's next request, whose deadline
     * is later, need not wake it (must_wake_locked): one tick per that wait instead of a wake-up
     * per request. */
    int64_t beat = s->cfg->header_timeout_ms < limit ? s->cfg->header_timeout_ms : limit;
    if (s->open_conns > 0 && (due < 0 || beat < due))
        due = beat;
    s->owner_due_ns = due < 0 ? INT64_MAX : now + due * 1000000;
    pthread_mutex_unlock(&s->mu);
    return due;
}

void sr_conn_wake(sr_server *s)
{
    wake_owner(s);
}
