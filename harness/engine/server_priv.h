/*
 * Internal state of the mock engine's HTTP server, shared by server.c (request flow, connection
 * accounting, listener and daemons), server_sched.c (scheduler heap, wait lists, scheduler
 * thread), server_io.c (responses, transport and HTTP faults), engine_control.c, control_pause.c
 * and control_vllm.c (control plane), serve_gen.c (generate path and delivery) and serve_oracle.c
 * (the oracle route). Not an interface: nothing outside harness/engine includes it.
 *
 * Locking: one mutex, srv->mu, guards the scheduler heap, the wait lists, the pause state and
 * every req field marked (mu). A req is in at most one of the heap and the lists, and only
 * while its connection is suspended; whoever removes it resumes the connection, exactly once.
 * Lock order: srv->mu, then MHD's internal locks (MHD_suspend/resume_connection are called with
 * srv->mu held); MHD callbacks never run with an MHD lock that we would need.
 */
#ifndef SR_ENGINE_SERVER_PRIV_H
#define SR_ENGINE_SERVER_PRIV_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "gen.h"
#include "prefix_omit.h"
#include "server.h"

typedef enum req_state {
    RS_NEW = 0,   /* body being received, or first final call */
    RS_DELAY,     /* waiting out a latency fault (heap) */
    RS_HELD,      /* arrived while paused, generation not started (list held) */
    RS_RUNNING,   /* generation computed, delivery scheduled at its simulated end (heap) */
    RS_FROZEN,    /* in flight when a keep-mode pause came (list held) */
    RS_ABORTING,  /* in flight when an abort-mode pause came: resumed to answer "abort" */
    RS_RESUMING,  /* released by /resume: continue generating with the current weights */
    RS_DUE,       /* scheduled time reached: deliver */
    RS_WAITING,   /* a pause?mode=wait request waiting for in-flight requests (list waiters) */
    RS_WAIT_DONE, /* the wait is over: answer 200 */
    RS_STALLED,   /* stall fault: never answers (list stalled) */
    RS_SENDING,   /* response queued; the content reader may still suspend (dribble, stall) */
    RS_QUEUED,    /* arrived over max_connections: waits for a slot (list queued) */
    RS_SHUTDOWN   /* the server is stopping: close */
} req_state;

typedef enum req_list { RL_NONE = 0, RL_HELD, RL_WAITERS, RL_STALLED, RL_QUEUED } req_list;

/*
 * A connection, from accept (MHD's NOTIFY_STARTED) to close (NOTIFY_CLOSED): its socket context.
 * While it waits for a request's head (new, or kept alive after a request) or for a body it is in
 * one of the server's lists fresh, kept or body, oldest first (server_conn.c).
 */
enum {
    SR_CONN_FRESH = 1, /* accepted, no request head yet (header_timeout_ms) */
    SR_CONN_KEPT,      /* kept alive after a request, waiting for the next head */
    SR_CONN_BODY,      /* head received, body still arriving (body_timeout_ms) */
    SR_CONN_BUSY,      /* request complete, being answered */
    SR_CONN_CLOSING    /* closed by the server (deadline or cap); MHD will notify */
};
typedef struct sr_conn sr_conn;
typedef struct sr_conn_list {
    sr_conn *head, *tail;
    int64_t n;
} sr_conn_list;
struct sr_conn {
    uint64_t gen; /* the daemon generation it was accepted in (refuse faults) */
    int fd;
    int phase;            /* (mu) */
    int64_t since_ns;     /* (mu) when it entered its list */
    sr_conn_list *list;   /* (mu) */
    sr_conn *prev, *next; /* (mu) */
};

typedef struct req req;
struct req {
    sr_server *srv;
    struct MHD_Connection *conn;
    sr_conn *cx; /* its connection's context (NULL if it could not be allocated) */
    int ep;      /* sr_endpoint, or -1 for an unknown path */
    const sr_dialect_route *route; /* the engine dialect's generate route at this path, or NULL */
    int bad_method;
    sr_buf body;
    sr_bucket_rx *brx; /* a broadcast bucket streaming into the stage instead of `body` */
    int too_large;
    int over_limit; /* arrived with cfg->max_connections requests in progress: answered 503 */
    int counted;    /* holds one of those slots until on_completed */
    int admitted;   /* was queued and took a slot: its body deadline starts at the next call */
    char session[SR_ENGINE_SESSION_MAX + 1];
    char xrid[SR_ENGINE_SESSION_MAX + 1]; /* a generate's X-Request-Id header, or "" */
    int64_t turn, ordinal;
    sr_fault_pick pick;
    req_state state;    /* (mu) */
    int64_t wake_ns;    /* (mu) heap key */
    size_t heap_pos;    /* (mu) index in the heap + 1; 0 when not in it */
    req_list list;      /* (mu) */
    req *lprev, *lnext; /* (mu) */
    int has_job;
    sr_gen_job job;
    int64_t t_start_ns;  /* simulated start of the forward passes (shifted by pauses) */
    int64_t t_frozen_ns; /* when a keep-mode pause froze it */
    int64_t k_done;      /* tokens sampled when frozen or aborted */
    /* response delivery */
    sr_buf resp;
    size_t cut;           /* transport faults: bytes to send before stopping */
    int64_t next_send_ns; /* dribble */
    const sr_fault *transport;
};

/* A list of suspended requests, newest at the head, oldest at the tail. */
typedef struct req_dlist {
    req *head, *tail;
    int64_t n;
} req_dlist;

#define SR_SERVER_MAX_DAEMONS 16

/* The memory tags that sleep and wake separately (vLLM's CuMemAllocator tags). */
#define SR_SLEEP_WEIGHTS  1u
#define SR_SLEEP_KV_CACHE 2u
#define SR_SLEEP_ALL      (SR_SLEEP_WEIGHTS | SR_SLEEP_KV_CACHE)

/*
 * Connections a daemon accepts beyond cfg->max_connections + cfg->max_queued only to answer them
 * 503 (engine.connection_limit) and close them.
 */
#define SR_SERVER_CONN_HEADROOM 16

/* Idle sr_jdom parsers kept for the generate requests' fast path (serve_gen.c): at most this
 * many, each with an arena of at most SR_SERVER_JDOM_ARENA bytes, and one that grew past
 * SR_SERVER_JDOM_KEEP bytes (a long prompt) is freed rather than kept. */
#define SR_SERVER_JDOM_POOL  8
#define SR_SERVER_JDOM_ARENA ((size_t)1 << 20)
#define SR_SERVER_JDOM_KEEP  ((size_t)256 << 10)

struct sr_server {
    sr_engine *e;
    const sr_engine_config *cfg;
    sr_prefix_table *prefix; /* engines.omit_prefix_routes only, else NULL (prefix_omit.h) */
    struct sockaddr_storage sa;
    socklen_t salen;
    int port;
    char url[96];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct MHD_Daemon *d;                          /* (mu) the listening daemon */
    struct MHD_Daemon *old[SR_SERVER_MAX_DAEMONS]; /* (mu) quiesced by refuse faults */
    int nold;                                      /* (mu) */
    int refusing;                                  /* (mu) */
    int64_t refuse_until_ns;                       /* (mu) */
    int wake[2];                                   /* pipe: handlers -> main loop */
    /* scheduler */
    req **heap; /* (mu) */
    size_t nheap, capheap;
    pthread_t sched;
    int sched_started;
    int stopping; /* (mu) */
    /* pause and sleep: a generate runs only while the server is not paused and no memory tag
     * sleeps (SR_SLEEP_* bits); otherwise it is held until both hold (control_pause.c) */
    int paused;          /* (mu) */
    const char *pmode;   /* (mu) */
    unsigned asleep;     /* (mu) SR_SLEEP_WEIGHTS | SR_SLEEP_KV_CACHE */
    int64_t sleep_level; /* (mu) the level of the last /sleep */
    req_dlist held;      /* (mu) */
    req_dlist waiters;   /* (mu) */
    req_dlist stalled;   /* (mu) */
    req_dlist queued;    /* (mu) over max_connections, oldest at the tail (FIFO) */
    int64_t queued_peak; /* (mu) most queued at once */
    int64_t refused;     /* (mu) answered engine.connection_limit */
    int64_t running;     /* (mu) reqs in RS_RUNNING */
    int64_t live_reqs;   /* (mu) reqs allocated and not completed */
    /* Connections with a request in progress, at most cfg->max_connections, over every daemon
     * (the listening one and those draining after a refuse fault); see take_slot, lock-free. */
    atomic_int_fast64_t conns;
    /* Incremented (under mu) when a refuse fault quiesces the listening daemon; each connection
     * records the generation it was accepted in (on_connection), so answers on connections of a
     * quiesced daemon can close them. */
    uint64_t daemon_gen;
    /* Connections waiting for a request's head or body (server_conn.c). */
    sr_conn_list fresh, kept, body; /* (mu) */
    /* (mu) The time by which the owner's loop calls sr_server_tick again, as the last
     * sr_conn_reap computed it (INT64_MAX: no deadline pending, it sleeps until woken). */
    int64_t owner_due_ns;
    int64_t open_conns; /* (mu) connections with a context (sr_conn_started, not yet closed) */
    sr_jdom *jdoms[SR_SERVER_JDOM_POOL]; /* (mu) idle parsers (sr_srv_jdom_take) */
    int njdoms;                          /* (mu) */
    int64_t evicted;                     /* (mu) closed to stay within cfg->max_pending */
};

/* ---- waiting connections (server_conn.c) ---- */

/* A new connection (NOTIFY_STARTED): enters `fresh`; when cfg->max_pending connections already
 * wait, the one waiting longest is closed first (in `fresh`: answered 503 engine.pending_limit;
 * else an idle kept-alive one, silently). NULL when out of memory (the connection is then not
 * tracked). */
sr_conn *sr_conn_started(sr_server *s, int fd, uint64_t gen);
/* NOTIFY_CLOSED: leaves its list and is freed. NULL is a no-op. */
void sr_conn_closed(sr_server *s, sr_conn *x);
/* Moves x to SR_CONN_BODY (head received), SR_CONN_BUSY (body complete) or SR_CONN_KEPT (request
 * answered, connection kept). A closing connection stays closing. NULL is a no-op. */
void sr_conn_phase(sr_server *s, sr_conn *x, int phase);
/* Closes every connection past its deadline (fresh: header_timeout_ms since accept; body:
 * body_timeout_ms since the head, or header_timeout_ms while requests wait for a slot and at
 * least sr_conn_body_cap slots are held by connections sending a body) with 408
 * engine.request_timeout; returns the milliseconds until the next deadline, or -1 when none is
 * pending. Called from sr_server_tick. */
int64_t sr_conn_reap(sr_server *s);
/* max_connections - max(1, max_connections / 8): the body-sending slot holders past which slow
 * bodies lose their long deadline while requests are queued. */
int sr_conn_body_cap(const sr_server *s);
/* Wakes the owner's loop so that sr_server_tick recomputes the deadlines. */
void sr_conn_wake(sr_server *s);

/* Monotonic nanoseconds (server_sched.c). */
int64_t sr_srv_now_ns(void);

/* Queues a complete response (status, content type, body bytes; the body is copied or, when
 * take is 1, its buffer is handed to MHD). Returns the MHD result for the handler. */
enum MHD_Result sr_srv_respond(req *r, unsigned status, const char *ctype, sr_buf *body, int take);
enum MHD_Result sr_srv_respond_text(req *r, unsigned status, const char *ctype, const char *text);

/* {"error":{"message":..,"type":..,"code":status,"check":name}} with status. */
enum MHD_Result sr_srv_error(req *r, unsigned status, const char *type, int code, const char *msg);
/* The value of query parameter `name`, or NULL. */
const char *sr_srv_arg(req *r, const char *name);
/* 200 with `json` (application/json), or an empty body when json is NULL. */
enum MHD_Result sr_srv_ok(req *r, const char *json);
/* 400 engine.bad_request with `msg`. */
enum MHD_Result sr_srv_bad_request(req *r, const char *msg);
/* The same with "Connection: close": the connection is closed once the answer is sent. */
enum MHD_Result sr_srv_error_close(req *r, unsigned status, const char *type, int code,
                                   const char *msg);
/*
 * Refuses, before the body is read, framing a careful HTTP/1.1 server refuses (RFC 9112 §6): a
 * transfer coding other than chunked (501), Content-Length values that disagree or one beside
 * Transfer-Encoding (400), a declared body over max_body_bytes (413; a broadcast bucket is bounded
 * by its tensors instead), each answered with Connection: close. *refused = 1 when it answered;
 * MHD_YES when the request may go on.
 */
enum MHD_Result sr_srv_check_framing(req *r, int *refused);

/* The scheduler (server_sched.c). */

/* Suspends r's connection unless the server is stopping (then r becomes RS_SHUTDOWN and
 * 0 is returned; the caller returns MHD_YES and the next call closes it). */
int sr_srv_suspend_locked(req *r);
/* Suspends r's connection and schedules its resumption at wake_ns (state set by caller). */
void sr_srv_schedule_locked(req *r, int64_t wake_ns);
/* Adds an already suspended r to the heap. */
void sr_srv_heap_push_locked(sr_server *s, req *r, int64_t wake_ns);
/* Removes r from the heap if it is there (1) or not (0). */
int sr_srv_unschedule_locked(req *r);
/* Suspends r into a list / takes it out (the caller resumes it). */
void sr_srv_list_add_locked(req_dlist *l, req *r, req_list which);
void sr_srv_list_remove_locked(req *r);
void sr_srv_resume_locked(req *r);
/* The scheduler thread (arg: the sr_server): resumes each heap entry at its wake time, marking
 * RS_RUNNING ones RS_DUE, until srv->stopping. Started by sr_server_start, joined by
 * sr_server_stop. */
void *sr_srv_sched_main(void *arg);

/* A parser for one request body (an idle one, else a new one; NULL when none can be made, and
 * the caller then parses without), and its return: kept for the next request unless the pool is
 * full or its arena grew past SR_SERVER_JDOM_KEEP. NULL is a no-op (serve_gen.c). */
sr_jdom *sr_srv_jdom_take(sr_server *s);
void sr_srv_jdom_give(sr_server *s, sr_jdom *j);

/* Tokens a running job has sampled by time t (serve_gen.c). */
int64_t sr_srv_tokens_at(const req *r, int64_t t);
/* The generate endpoints (serve_gen.c). */
enum MHD_Result sr_srv_generate(req *r);

/* POST /syncroll/v1/oracle (serve_oracle.c): the true route rows of a token sequence under the
 * engine's current weights; no fault, pause or sleep touches it. */
enum MHD_Result sr_srv_oracle(req *r);

/* Aborts the in-flight generates named by `ids` (n of them): a generate whose reply carries
 * "request_id" "<engine id>-<ordinal>" (native and dialect routes) or whose X-Request-Id header
 * is the id. Running, frozen and held ones finish now with finish_reason "abort" and the tokens
 * sampled so far; others (finished, unknown) are ignored, as vLLM ignores unknown ids. Returns
 * how many were aborted. Takes s->mu (control_pause.c). */
size_t sr_srv_abort_ids(sr_server *s, const char *const *ids, size_t n);
/* The control endpoints (engine_control.c). */
enum MHD_Result sr_srv_control(req *r);
/* The vllm control plane's weight-transfer routes (control_vllm.c): init, start, update (a
 * bucket or JSON), finish, update_weight_version, weight_info, weight_checker, is_paused. */
enum MHD_Result sr_srv_control_vllm(req *r);
/* The sglang control plane's routes (control_sglang.c): the weights update group, updates from
 * distributed (a bucket or JSON), tensor and disk, update_weight_version, get_weight_version,
 * pause_generation, continue_generation and the memory occupation. */
enum MHD_Result sr_srv_control_sglang(req *r);
/* Pause and sleep (control_pause.c): /pause, /resume, /sleep, /wake_up, /is_sleeping, the
 * collective_rpc skyrl_sleep_for_weight_sync / skyrl_wake_for_weight_sync (kwargs may be NULL),
 * and the answer of a wait-mode pause once nothing runs any more. */
enum MHD_Result sr_srv_pause(req *r);
enum MHD_Result sr_srv_resume(req *r);
enum MHD_Result sr_srv_sleep(req *r);
enum MHD_Result sr_srv_wake_up(req *r);
enum MHD_Result sr_srv_is_sleeping(req *r);
enum MHD_Result sr_srv_rpc_sleep(req *r, const cJSON *kw);
enum MHD_Result sr_srv_rpc_wake(req *r, const cJSON *kw);
enum MHD_Result sr_srv_pause_done(req *r);
/* The scheduler's pause in `mode` ("keep", "abort" or "wait"), answered as /pause is. */
enum MHD_Result sr_srv_pause_mode(req *r, const char *mode);
/* SGLang's memory occupation: release (1) puts the SR_SLEEP_* `tags` to sleep and freezes what
 * runs; resume (0) wakes them (held requests run once nothing sleeps or is paused). Takes mu. */
void sr_srv_memory(sr_server *s, unsigned tags, int release);

/* Called when a RUNNING request leaves that state: wakes pause?mode=wait requests at zero
 * (server_sched.c). */
void sr_srv_running_dec_locked(sr_server *s);

/* The HTTP-layer fault response, a TCP reset, and a refuse window followed by a reset
 * (server_io.c). Each returns what the access handler returns. */
enum MHD_Result sr_srv_http_fault(req *r, const sr_fault *h);
enum MHD_Result sr_srv_reset(req *r);
enum MHD_Result sr_srv_refuse(req *r, const sr_fault *t);

/* Delivery of a finished generate reply with its transport fault (serve_gen.c). */
enum MHD_Result sr_srv_deliver(req *r);

#endif /* SR_ENGINE_SERVER_PRIV_H */
