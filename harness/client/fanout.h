/*
 * fanout: many plain HTTP requests to a set of engines at once, on libcurl's multi interface,
 * under one absolute deadline. The trainer side's bulk transfers go through it: the weight-sync
 * phases (one request per engine), the broadcast's buckets (many per engine, several in flight),
 * the state reads of verification, and raw captures (validate-field). Nothing is retried and no
 * body is interpreted beyond an error body's {"error":{"message","check"}}: the caller reads the
 * raw response body.
 *
 * Scheduling. sr_fanout_run sends each engine's requests in array order, at most `inflight` at a
 * time per engine, the engines concurrently. After a request of an engine fails, that engine's
 * remaining requests are not started (started = 0, code 0). Every request still running at the
 * deadline is cut, and every request of a healthy engine not started by then is not sent; both
 * get SR_E_CLIENT_DEADLINE.
 *
 * Connections. An sr_fanout keeps one easy handle per (engine, in-flight slot) and one multi
 * handle whose connection cache outlives each run, so the connections of one run serve the next.
 * A request's transfer timeout is what is left of the deadline when it starts; its connect
 * timeout the same, or connect_timeout_ms if that is shorter. The handles carry the client's
 * common options (sr_client_easy_common): no proxy (an http_proxy in the environment is
 * ignored: engines are addressed directly) and no redirects.
 *
 * Outcomes (sr_fanout_req.code; msg says more, with the deadline as given in budget_ms):
 *   0                        a 2xx arrived; resp holds the body
 *   SR_E_CLIENT_DEADLINE     "no answer before the deadline (B ms)" (timed out or cut) or
 *                            "not sent: the deadline (B ms) passed first"
 *   SR_E_CLIENT_TRANSPORT    "transport: <curl's error> (<its detail>)" (refused, reset, a
 *                            response body over resp.max, ...)
 *   SR_E_CLIENT_HTTP_STATUS  "HTTP <status>: <error.message>[ [<check>]]", or the body's
 *                            text cut to one line without control bytes when it has no
 *                            error.message (as the generate path says it); check receives
 *                            error.check of a JSON error body ("" if none)
 *
 * Ownership: the fanout copies the URLs; a request's path, body segments and content type are
 * borrowed and must stay valid until sr_fanout_run returns. resp belongs to the
 * request: release it with sr_fanout_reqs_release. Units: ms on the sr_clock_ms clock
 * (lib/sr_clock.h), bytes.
 * Thread-safety: an sr_fanout belongs to one thread at a time. The process must have called
 * sr_client_global_init (client.h).
 */
#ifndef SR_CLIENT_FANOUT_H
#define SR_CLIENT_FANOUT_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "sr_buf.h"
#include "sr_err.h"

#define SR_FANOUT_MAX_INFLIGHT 8                  /* requests in flight per engine, at most */
#define SR_FANOUT_PATH_MAX     2048               /* bytes of a path with its query, with NUL */
#define SR_FANOUT_CHECK_MAX    64                 /* bytes of an error body's check name */
#define SR_FANOUT_RESP_MAX     ((size_t)64 << 20) /* default bound of a response body */

/* One piece of a request body (borrowed). */
typedef struct sr_fanout_seg {
    const void *p;
    size_t n;
} sr_fanout_seg;

/* One request to one engine, and what came of it. Zero it, then set the inputs. */
typedef struct sr_fanout_req {
    /* inputs */
    int engine;                /* 0 .. engine count - 1 */
    int get;                   /* 1: GET (no body), else POST */
    const char *path;          /* "/pause?mode=keep": with its query (borrowed) */
    const char *ctype;         /* POST: the Content-Type; NULL: application/json */
    const sr_fanout_seg *segs; /* POST: the body, these segments in order (borrowed) */
    size_t nseg;               /* 0: an empty body */
    /* outcome */
    int started, done;               /* it was sent; it ended (answered, failed or cut) */
    int code;                        /* 0 or an SR_E_CLIENT_* code (see above) */
    long status;                     /* HTTP status, 0 if none arrived */
    char check[SR_FANOUT_CHECK_MAX]; /* error.check of a non-2xx JSON body, or "" */
    sr_buf resp;                     /* the response body; resp.max 0: SR_FANOUT_RESP_MAX */
    char msg[SR_ERR_MSG_MAX];
    double start_ms, end_ms; /* sr_clock_ms when it was sent and when it ended */
    /* the body's progress (private) */
    size_t seg_i, seg_off;
} sr_fanout_req;

typedef struct sr_fanout sr_fanout;

/*
 * Creates a fan-out over `n` engine base URLs (1 .. SR_CLIENT_MAX_ENGINES, copied; trailing '/'
 * dropped). connect_timeout_ms > 0 bounds each connection attempt; 0: only the deadline does.
 * Errors: SR_E_INVAL (no URLs, too many, one empty or too long, a negative timeout), SR_E_NOMEM.
 */
int sr_fanout_new(sr_fanout **out, const char *const *urls, size_t n, int64_t connect_timeout_ms,
                  sr_err *err);

/* Frees f, its handles and connections; NULL is a no-op. */
void sr_fanout_free(sr_fanout *f);

/* Engine i's base URL (owned by f), NULL out of range. */
const char *sr_fanout_url(const sr_fanout *f, int engine);

/*
 * Runs reqs[0..n) as described above, until each has ended or deadline_ms (absolute, sr_clock_ms)
 * has passed; budget_ms is that deadline as a duration, named in messages. inflight is
 * 1 .. SR_FANOUT_MAX_INFLIGHT. Returns 0 when the requests ran (their outcomes are in reqs),
 * SR_E_INVAL (inflight; an engine out of range; a path NULL, not starting with '/' or of
 * SR_FANOUT_PATH_MAX bytes or more) before anything is sent, or SR_E_NOMEM when a
 * transfer could not be set up (requests already running are then abandoned: done = 0).
 */
int sr_fanout_run(sr_fanout *f, sr_fanout_req *reqs, size_t n, int inflight, double deadline_ms,
                  int64_t budget_ms, sr_err *err);

/* Releases the response bodies of reqs[0..n). */
void sr_fanout_reqs_release(sr_fanout_req *reqs, size_t n);

#endif /* SR_CLIENT_FANOUT_H */
