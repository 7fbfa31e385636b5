/* The mock engine's HTTP server: the request flow, connection accounting, and the listener and
 * daemons with their start, tick and stop. The scheduler is in server_sched.c. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "jsonw.h"
#include "server_priv.h"

/* ---- request flow ---- */

static enum MHD_Result after_delay(req *r)
{
    const sr_fault *t = r->pick.f[SR_FL_TRANSPORT];
    if (t && t->kind == SR_FK_RESET)
        return sr_srv_reset(r);
    if (t && t->kind == SR_FK_REFUSE)
        return sr_srv_refuse(r, t);
    /* init_group_hang (sgl-project/sglang-omni#784): the init blocks as a process-group join
     * whose peer never comes, i.e. the request is held as a stall is, until the engine stops. */
    const sr_fault *w = r->pick.f[SR_FL_WEIGHTS];
    if ((t && t->kind == SR_FK_STALL) || (w && w->kind == SR_FK_INIT_GROUP_HANG)) {
        sr_server *s = r->srv;
        pthread_mutex_lock(&s->mu);
        r->state = RS_STALLED;
        if (sr_srv_suspend_locked(r))
            sr_srv_list_add_locked(&s->stalled, r, RL_STALLED);
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    if (r->pick.f[SR_FL_HTTP])
        return sr_srv_http_fault(r, r->pick.f[SR_FL_HTTP]);
    if ((r->ep == SR_EP_GENERATE || r->ep == SR_EP_NATIVE) && sr_engine_unservable(r->srv->e))
        return sr_srv_error(r, 500, "InternalServerError", 0,
                            "EngineCore encountered an issue: the model cannot serve since the "
                            "last weight update (generate_fails_after_update)");
    if (r->ep == SR_EP_GENERATE || r->ep == SR_EP_NATIVE)
        return sr_srv_generate(r);
    return sr_srv_control(r);
}

static enum MHD_Result first_final(req *r)
{
    sr_server *s = r->srv;
    if (r->over_limit) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "the engine already holds its limit of %d connections busy with a request "
                 "(engines.server.max_connections) and %d waiting for one "
                 "(engines.server.max_queued_requests); this connection is closed",
                 s->cfg->max_connections, s->cfg->max_queued);
        return sr_srv_error_close(r, 503, "ServiceUnavailableError", SR_E_ENGINE_CONN_LIMIT, msg);
    }
    if (r->ep < 0)
        return r->bad_method
                   ? sr_srv_error(r, 405, "MethodNotAllowedError", 0, "Method Not Allowed")
                   : sr_srv_error(r, 404, "NotFoundError", 0, "Not Found");
    if (r->too_large) {
        char msg[128];
        snprintf(msg, sizeof(msg), "request body larger than the engine's limit of %zu bytes",
                 s->cfg->max_body_bytes);
        return sr_srv_error(r, 413, "RequestTooLargeError", SR_E_LIMIT, msg);
    }
    r->ordinal = sr_engine_count(s->e, (sr_endpoint)r->ep);
    if (r->ep == SR_EP_GENERATE || r->ep == SR_EP_NATIVE) {
        const char *sid = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Session-ID");
        if (sid)
            snprintf(r->session, sizeof(r->session), "%s", sid);
        r->turn = sr_engine_session_turn(s->e, r->session);
    }
    sr_faults_pick(&r->pick, sr_engine_faults(s->e), s->cfg->index, (sr_endpoint)r->ep, r->turn);
    if (r->pick.f[SR_FL_DELAY] && r->pick.delay_ms > 0) {
        pthread_mutex_lock(&s->mu);
        r->state = RS_DELAY;
        sr_srv_schedule_locked(r, sr_srv_now_ns() + (int64_t)(r->pick.delay_ms * 1e6));
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    return after_delay(r);
}

static int path_known(const char *url)
{
    for (int i = 0; i < SR_EP_COUNT; i++)
        if (strcmp(url, sr_endpoint_path((sr_endpoint)i)) == 0)
            return 1;
    return 0;
}

/*
 * Takes one of the cfg->max_connections slots for a request that has arrived (its headers read),
 * or returns 0 when all are taken (admit then queues the request or refuses it). A connection holds
 * a slot while it has a request in progress (until on_completed), so the bound is on connections
 * that are busy, over every daemon: kept-alive connections waiting idle between requests do not
 * hold one (libmicrohttpd's own limit, conn_hard_limit, bounds the sockets). Lock-free.
 */
static int take_slot(sr_server *s)
{
    int_fast64_t n = atomic_load(&s->conns);
    do {
        if (n >= s->cfg->max_connections)
            return 0;
    } while (!atomic_compare_exchange_weak(&s->conns, &n, n + 1));
    return 1;
}

/*
 * Admission of a request that arrived (head read): a slot at once; else, under mu (so a slot
 * freed by on_completed cannot be missed), a slot after all, or a place in the FIFO queue (the
 * connection is suspended before its body is read and on_completed hands it the next free slot);
 * else it is over the limit. Returns 1 when the request was queued (the handler returns MHD_YES).
 */
static int admit(req *r)
{
    sr_server *s = r->srv;
    r->counted = take_slot(s);
    if (r->counted)
        return 0;
    int queued = 0;
    pthread_mutex_lock(&s->mu);
    r->counted = take_slot(s);
    if (!r->counted && s->queued.n < s->cfg->max_queued && sr_srv_suspend_locked(r)) {
        r->state = RS_QUEUED;
        sr_srv_list_add_locked(&s->queued, r, RL_QUEUED);
        if (s->queued.n > s->queued_peak)
            s->queued_peak = s->queued.n;
        queued = 1;
    } else if (!r->counted && r->state != RS_SHUTDOWN) {
        r->over_limit = 1;
        s->refused++;
    }
    pthread_mutex_unlock(&s->mu);
    /* A request now waits for a slot: the reaper's body deadline may have become shorter. */
    if (queued)
        sr_conn_wake(s);
    return queued;
}

/* Releases a completed request's slot, or hands it to the request queued longest. */
static void release_slot(sr_server *s)
{
    pthread_mutex_lock(&s->mu);
    req *q = s->queued.tail;
    if (q) {
        sr_srv_list_remove_locked(q);
        q->state = RS_NEW;
        q->counted = 1;
        q->admitted = 1;
        sr_srv_resume_locked(q);
    } else {
        atomic_fetch_sub(&s->conns, 1);
    }
    pthread_mutex_unlock(&s->mu);
}

/* The call a bucket body may arrive on at `ep` in this engine's control plane, as its messages
 * name it (the route a client posted to; skyrl's collective_rpc by its method); NULL where `ep`
 * takes no bucket. */
static const char *bucket_call(const sr_server *s, sr_endpoint ep)
{
    sr_sync_dialect d = s->cfg->sync_dialect;
    if (ep == SR_EP_COLLECTIVE_RPC)
        return "update_weights_nccl";
    if (ep == SR_EP_UPDATE_WEIGHTS && d == SR_SYNC_DIALECT_VLLM)
        return "POST /update_weights";
    if (ep == SR_EP_SGL_UPDATE_DIST && d == SR_SYNC_DIALECT_SGLANG)
        return "POST /update_weights_from_distributed";
    return NULL;
}

/* The first call for a request (its head): the request's state made, counted and admitted or
 * queued; *con_cls is set once it exists. */
static enum MHD_Result on_head(sr_server *s, struct MHD_Connection *conn, const char *url,
                               const char *method, void **con_cls)
{
    req *r = calloc(1, sizeof(*r));
    if (!r)
        return MHD_NO;
    r->srv = s;
    r->conn = conn;
    r->ep = sr_endpoint_lookup(method, url);
    /* Another dialect's generate routes answer as "generate" (counters, faults). */
    r->route = s->cfg->dialect != SR_DIALECT_SKYRL && strcmp(method, "POST") == 0
                   ? sr_dialect_route_at(s->cfg->dialect, url)
                   : NULL;
    if (r->route)
        r->ep = SR_EP_GENERATE;
    r->bad_method = r->ep < 0 && path_known(url);
    r->body.max = s->cfg->max_body_bytes;
    const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
    const char *call = bucket_call(s, r->ep);
    if (call && ct && strncmp(ct, SR_ENGINE_BUCKET_CTYPE, strlen(SR_ENGINE_BUCKET_CTYPE)) == 0)
        sr_engine_bucket_begin(&r->brx, s->e, call, NULL); /* NULL: answered 500 at the end */
    pthread_mutex_lock(&s->mu);
    s->live_reqs++;
    pthread_mutex_unlock(&s->mu);
    *con_cls = r;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->cx = ci ? ci->socket_context : NULL;
    sr_conn_phase(s, r->cx, SR_CONN_BODY);
    int refused;
    enum MHD_Result ret = sr_srv_check_framing(r, &refused);
    if (refused) {
        sr_conn_phase(s, r->cx, SR_CONN_BUSY);
        return ret;
    }
    /* A queued request has no body deadline while it waits: its slot is not its to use. */
    if (admit(r))
        sr_conn_phase(s, r->cx, SR_CONN_BUSY);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    sr_server *s = cls;
    req *r = *con_cls;
    (void)version;
    if (!r)
        return on_head(s, conn, url, method, con_cls);
    if (r->admitted) {
        /* Resumed from the queue while its head was being processed: libmicrohttpd calls the
         * handler once more without data before it reads the body; that call is not the final
         * one (a request without a body gets another). */
        r->admitted = 0;
        sr_conn_phase(s, r->cx, SR_CONN_BODY);
        if (!*upload_size)
            return MHD_YES;
    }
    if (*upload_size) {
        if (r->brx) {
            if (!r->over_limit)
                sr_engine_bucket_feed(r->brx, upload_data, *upload_size);
        } else if (!r->too_large && !r->over_limit &&
                   sr_buf_append(&r->body, upload_data, *upload_size, NULL)) {
            r->too_large = 1;
            sr_buf_release(&r->body);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&s->mu);
    req_state st = r->state;
    pthread_mutex_unlock(&s->mu);
    switch (st) {
    case RS_NEW:
        sr_conn_phase(s, r->cx, SR_CONN_BUSY);
        return first_final(r);
    case RS_DELAY:
        return after_delay(r);
    case RS_WAIT_DONE:
        return sr_srv_pause_done(r);
    case RS_SHUTDOWN:
    case RS_STALLED:
    case RS_SENDING:
        return MHD_NO;
    default:
        return sr_srv_generate(r);
    }
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    sr_server *s = cls;
    req *r = *con_cls;
    (void)conn;
    (void)toe;
    if (!r)
        return;
    sr_conn_phase(s, r->cx, SR_CONN_KEPT);
    pthread_mutex_lock(&s->mu);
    /* Defensive: a request is only in the heap or a list while suspended, and suspended
     * connections are not completed, so normally there is nothing to remove here. */
    if (sr_srv_unschedule_locked(r) && r->state == RS_RUNNING)
        sr_srv_running_dec_locked(s);
    sr_srv_list_remove_locked(r);
    s->live_reqs--;
    /* No broadcast on s->cv: the scheduler thread waits there only for the heap's changes
     * (sr_srv_heap_push_locked signals) and for the stop; waking it for every completed request
     * cost a futex call and a thread switch per request. A removal above at most leaves it
     * to wake at the removed entry's time and find nothing due. */
    pthread_mutex_unlock(&s->mu);
    if (r->counted)
        release_slot(s);
    if (r->has_job)
        sr_gen_job_release(&r->job);
    sr_engine_bucket_abort(r->brx);
    sr_buf_release(&r->body);
    sr_buf_release(&r->resp);
    free(r);
    *con_cls = NULL;
}

/* Gives each new connection its context (server_conn.c), which records the daemon generation it
 * was accepted in (server_io.c's queue closes connections of a quiesced daemon after their
 * answer), and frees it when the connection closes. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    sr_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        sr_conn_closed(s, *socket_context);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    pthread_mutex_lock(&s->mu);
    uint64_t gen = s->daemon_gen;
    pthread_mutex_unlock(&s->mu);
    *socket_context = ci ? sr_conn_started(s, ci->connect_fd, gen) : NULL;
}

/* The daemon's own bound: the configured busy connections, the queued requests, the headroom
 * answered 503 and the connections waiting for a request, so a new connection is always accepted
 * (and, past max_pending, closes the one that waited longest) rather than left in the listen
 * backlog. */
static unsigned conn_hard_limit(const sr_server *s)
{
    return (unsigned)s->cfg->max_connections + (unsigned)s->cfg->max_queued +
           SR_SERVER_CONN_HEADROOM + (unsigned)s->cfg->max_pending;
}

/* ---- listener and daemons ---- */

static int make_listener(const struct sockaddr *sa, socklen_t len, sr_err *err)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return sr_err_set(err, SR_E_ENGINE_START, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, sa, len) != 0 || listen(fd, 1024) != 0) {
        int e = errno;
        close(fd);
        return sr_err_set(err, SR_E_ENGINE_START, "cannot listen: %s", strerror(e));
    }
    return fd;
}

/*
 * poll, not epoll: with a thread pool and epoll, MHD_quiesce_daemon (the refuse fault) removes
 * the listen socket from every worker's epoll set from the calling thread while each worker may
 * remove it itself, and the loser's ENOENT is a libmicrohttpd panic (abort). With poll the
 * workers are told through their inter-thread channel and drop the socket themselves. The soak
 * (scenarios/soak) hit it about once per thousand refuse faults.
 */
static struct MHD_Daemon *start_daemon(sr_server *s, int fd)
{
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    if (s->sa.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET,
                            (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->cfg->threads,
                            MHD_OPTION_CONNECTION_LIMIT, conn_hard_limit(s),
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
}

static int parse_addr(sr_server *s, const char *addr, int port, sr_err *err)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    hints.ai_socktype = SOCK_STREAM;
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    if (getaddrinfo(addr, ps, &hints, &res) != 0 || !res)
        return sr_err_set(err, SR_E_ENGINE_START, "cannot parse listen address '%s'", addr);
    memcpy(&s->sa, res->ai_addr, res->ai_addrlen);
    s->salen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static int init_server(sr_server *s, sr_engine *e, sr_err *err)
{
    s->e = e;
    s->cfg = sr_engine_cfg(e);
    s->wake[0] = s->wake[1] = -1;
    s->owner_due_ns = INT64_MAX;
    atomic_init(&s->conns, 0);
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* Every connection of every daemon (the listening one and those quiesced by refuse faults)
     * can be in the heap at most once. */
    s->capheap = (size_t)conn_hard_limit(s) * (SR_SERVER_MAX_DAEMONS + 1) + 16;
    s->heap = calloc(s->capheap, sizeof(*s->heap));
    if (!s->heap)
        return sr_err_set(err, SR_E_ENGINE_START, "cannot allocate the server state");
    if (s->cfg->omit_prefix && sr_prefix_table_new(&s->prefix, 0, err))
        return SR_E_NOMEM;
    if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return sr_err_set(err, SR_E_ENGINE_START, "cannot create the scheduler's wake-up pipe: %s",
                          strerror(errno));
    return 0;
}

int sr_server_start(sr_server **out, sr_engine *e, const char *addr, int port, sr_err *err)
{
    *out = NULL;
    sr_server *s = calloc(1, sizeof(*s));
    if (!s)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the server");
    int rc = init_server(s, e, err);
    if (!rc)
        rc = parse_addr(s, addr ? addr : "127.0.0.1", port, err);
    int fd = rc ? -1 : make_listener((struct sockaddr *)&s->sa, s->salen, err);
    if (fd < 0 && !rc)
        rc = fd;
    if (!rc) {
        getsockname(fd, (struct sockaddr *)&s->sa, &s->salen);
        s->port = ntohs(s->sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&s->sa)->sin6_port
                                                    : ((struct sockaddr_in *)&s->sa)->sin_port);
        char host[INET6_ADDRSTRLEN] = "";
        getnameinfo((struct sockaddr *)&s->sa, s->salen, host, sizeof(host), NULL, 0,
                    NI_NUMERICHOST);
        snprintf(s->url, sizeof(s->url),
                 s->sa.ss_family == AF_INET6 ? "http://[%s]:%d" : "http://%s:%d", host, s->port);
        if (pthread_create(&s->sched, NULL, sr_srv_sched_main, s) != 0) {
            rc = sr_err_set(err, SR_E_ENGINE_START, "cannot start the scheduler thread");
        } else {
            s->sched_started = 1;
            /* Named before the engine reports ready, for people reading `top -H` and for
             * unit.engine_wakeups, which counts this thread's wake-ups. */
            pthread_setname_np(s->sched, "sr-sched");
        }
    }
    /* Under the lock, so handler threads (which take it) see everything the start did. */
    pthread_mutex_lock(&s->mu);
    /* libmicrohttpd says nothing of why; errno is what its last system call left (EMFILE for
     * its internal pipes or epoll under a low `ulimit -n`). */
    if (!rc && !(s->d = start_daemon(s, fd)))
        rc = sr_err_set(err, SR_E_ENGINE_START, "libmicrohttpd could not start (last OS error: %s)",
                        strerror(errno));
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        if (fd >= 0)
            close(fd);
        sr_server_stop(s);
        return rc;
    }
    *out = s;
    return 0;
}

int sr_server_port(const sr_server *s)
{
    return s->port;
}

const char *sr_server_url(const sr_server *s)
{
    return s->url;
}

int sr_server_wake_fd(const sr_server *s)
{
    return s->wake[0];
}

/* Retires quiesced daemons (refuse faults) whose last connection is gone; returns how many are
 * still draining. Stopping joins their threads, so it happens outside the lock. */
static int reap_old(sr_server *s)
{
    struct MHD_Daemon *done[SR_SERVER_MAX_DAEMONS];
    int ndone = 0, left;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->nold;) {
        const union MHD_DaemonInfo *di =
            MHD_get_daemon_info(s->old[i], MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!s->stopping && di && di->num_connections == 0) {
            done[ndone++] = s->old[i];
            s->old[i] = s->old[--s->nold];
        } else {
            i++;
        }
    }
    left = s->nold;
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < ndone; i++)
        MHD_stop_daemon(done[i]);
    return left;
}

int64_t sr_server_tick(sr_server *s)
{
    char tmp[64];
    while (read(s->wake[0], tmp, sizeof(tmp)) > 0)
        ;
    int draining = reap_old(s);
    int64_t due = sr_conn_reap(s);
    pthread_mutex_lock(&s->mu);
    int64_t ret = draining ? 1000 : -1;
    if (due >= 0 && (ret < 0 || due < ret))
        ret = due;
    if (s->refusing && !s->stopping) {
        int64_t now = sr_srv_now_ns();
        if (now < s->refuse_until_ns) {
            int64_t ms = (s->refuse_until_ns - now + 999999) / 1000000;
            ret = ret < 0 || ms < ret ? ms : ret;
        } else {
            int fd = make_listener((struct sockaddr *)&s->sa, s->salen, NULL);
            struct MHD_Daemon *d = fd >= 0 ? start_daemon(s, fd) : NULL;
            if (d) {
                s->d = d;
                s->refusing = 0;
            } else {
                if (fd >= 0)
                    close(fd);
                ret = 10; /* the port is briefly unavailable; try again shortly */
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    return ret;
}

static void release_all_locked(sr_server *s)
{
    while (s->nheap) {
        req *r = s->heap[0];
        sr_srv_unschedule_locked(r);
        r->state = RS_SHUTDOWN;
        sr_srv_resume_locked(r);
    }
    req_dlist *lists[] = {&s->held, &s->waiters, &s->stalled, &s->queued};
    for (size_t i = 0; i < 4; i++)
        while (lists[i]->head) {
            req *r = lists[i]->head;
            sr_srv_list_remove_locked(r);
            r->state = RS_SHUTDOWN;
            sr_srv_resume_locked(r);
        }
    s->running = 0;
}

void sr_server_stop(sr_server *s)
{
    if (!s)
        return;
    struct MHD_Daemon *ds[SR_SERVER_MAX_DAEMONS + 1];
    int nd = 0;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    release_all_locked(s);
    pthread_cond_broadcast(&s->cv);
    if (s->d)
        ds[nd++] = s->d;
    for (int i = 0; i < s->nold; i++)
        ds[nd++] = s->old[i];
    s->d = NULL;
    s->nold = 0;
    pthread_mutex_unlock(&s->mu);
    if (s->sched_started)
        pthread_join(s->sched, NULL);
    for (int i = 0; i < nd; i++)
        MHD_stop_daemon(ds[i]);
    if (s->wake[0] >= 0)
        close(s->wake[0]);
    if (s->wake[1] >= 0)
        close(s->wake[1]);
    free(s->heap);
    for (int i = 0; i < s->njdoms; i++)
        sr_jdom_free(s->jdoms[i]);
    sr_prefix_table_free(s->prefix);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
