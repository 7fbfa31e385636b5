/* proxy_priv: what the proxy's files share (proxy.c: server and requests; proxy_upstream.c: the
 * curl side and the answer's delivery). Private to harness/proxy/. */
#ifndef SR_PROXY_PRIV_H
#define SR_PROXY_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include <curl/curl.h>
#include <microhttpd.h>

#include "engine/engine_faults.h"
#include "proxy.h"
#include "sr_buf.h"

#define PX_SESSIONS 4096 /* sessions whose turns are counted; the table restarts when full */

typedef struct px_session {
    char *key;
    int64_t turns;
} px_session;

struct sr_proxy {
    sr_proxy_config cfg;
    char upstream[SR_PROXY_UPSTREAM_MAX];
    char url[80];
    int port;
    struct MHD_Daemon *d;
    sr_faults *faults; /* NULL: none */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* stalls wait on it until stopping */
    int stopping;
    px_session sessions[PX_SESSIONS];
    size_t n_sessions;
    _Atomic int64_t exchanges, failures;
    _Atomic int64_t capture_errors;   /* exchanges the capture could not keep whole */
    _Atomic int64_t routes_unchanged; /* answers a fired route fault could not be placed on */
};

/* A client connection's upstream side, kept across its requests: one easy handle and the multi
 * handle whose connection cache keeps the upstream connection alive (keep-alive end to end). */
typedef struct px_conn {
    CURL *easy;
    CURLM *multi;
} px_conn;

/* One exchange, from the request's head to the end of its answer. */
typedef struct px_req {
    sr_proxy *p;
    sr_capture_exchange x; /* what the capture records (seq, times, bodies) */
    sr_buf body;           /* the request body */
    int too_large;
    int local; /* answered by the proxy itself (its state): not forwarded, not recorded */
    sr_fault_pick pick;
    /* upstream transfer (easy and multi belong to conn when there is one) */
    px_conn *conn;
    CURL *easy;
    CURLM *multi;
    struct curl_slist *hdrs;
    sr_buf head;     /* upstream response header lines to pass on ("Name: value\n") */
    int head_done;   /* the final status line and headers are in */
    int done;        /* the transfer ended */
    CURLcode result; /* its result once done */
    int paused;
    /* the answer as it streams: pending[off, len) not yet handed to the client */
    sr_buf pending;
    size_t off;
    int whole;     /* a body-shaping or route fault: the answer is read whole before delivery */
    int too_long;  /* a route fault's answer passed max_rewrite_bytes: streamed on unchanged */
    int cut_short; /* a whole answer the upstream ended early: delivered as it came, then closed */
    size_t cut;    /* bytes delivered before the cut (whole answers) */
    uint64_t sent; /* bytes handed to the client */
    int64_t next_send_ns;
    sr_capture_sink *req_sink, *resp_sink;
} px_req;

/* Starts the upstream transfer of r and drives it until its head is in (or it failed). */
int px_forward(px_req *r, sr_err *err);

/* The answer for r once its head is in: upstream status, headers and a streaming body. */
struct MHD_Response *px_stream_response(px_req *r, unsigned *status);

/* Ends r's transfer and frees its curl state, or gives it back to its connection (idempotent). */
void px_upstream_release(px_req *r);

/* The capture lost part of exchange r: counted in capture_errors, printed on standard error, the
 * exchange marked incomplete. The traffic goes on. */
void px_capture_failed(px_req *r, const sr_err *err);

/* Frees a connection's upstream side (NULL is a no-op). */
void px_conn_free(px_conn *c);

/* Monotonic nanoseconds. */
int64_t px_now_ns(void);

#endif /* SR_PROXY_PRIV_H */
