/*
 * proxy: `syncroll proxy`, a transparent HTTP proxy in front of one engine (libmicrohttpd in,
 * libcurl out) that forwards every request and streams every answer back unchanged, records the
 * traffic (capture.h) and applies syncroll's delay, http and transport faults (spec/faults.h) and
 * the route faults of the fault grammar (proxy_routes.h) to it with the engine's selection rules
 * (engine/engine_faults.h: endpoints, nth, turn by X-Session-ID, probability, count). A POST to a
 * generate route of the config's dialect is the endpoint generate, as that dialect's engine
 * counts it.
 *
 * Streaming: an answer is passed on as its bytes arrive, holding at most SR_PROXY_HOLD_BYTES of
 * it (the upstream transfer is paused while the client lags), so memory does not grow with the
 * body; only truncate_in_blob without an offset holds the first blob whole (it cuts at its
 * middle, which is known only at its end). A route fault reads its answer whole to rewrite it, up
 * to max_rewrite_bytes: a longer answer is streamed on unchanged from there (routes_unchanged).
 * An upstream that fails mid-body leaves the client the same cut whether or not a fault fired: the
 * upstream's announced length, the bytes it sent, then the connection closed. Requests are read
 * whole (at most max_request_bytes; a larger one is answered 413 resource.limit without being
 * forwarded).
 *
 * Answers the proxy makes itself carry a JSON error body as the engine's do:
 * {"error":{"message":..,"type":..,"code":N,"check":"<error name>"}}: 502 proxy.upstream when the
 * upstream cannot be reached or fails before its status line, 413 resource.limit. An upstream
 * that fails mid-body leaves the client a cut body (the connection closes), as the engine's own
 * failure would. Hop-by-hop headers (Connection, Keep-Alive, Transfer-Encoding, TE, Trailer,
 * Upgrade, Proxy-*) are not forwarded; Host is the upstream's.
 *
 * GET /syncroll/v1/proxy answers the proxy's own state (upstream, exchanges, upstream failures,
 * capture errors, per-fault seen/fired) and is not forwarded.
 *
 * Threads: libmicrohttpd's thread per connection (at most SR_PROXY_MAX_CONNECTIONS connections;
 * more are refused by libmicrohttpd); each request drives its own curl transfer in that thread.
 * Ownership: the config's strings, capture writer and plan are borrowed and must outlive the proxy.
 */
#ifndef SR_PROXY_H
#define SR_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "spec/faults.h"
#include "sr_err.h"

#define SR_PROXY_HOLD_BYTES      (1u << 20)   /* answer bytes held before the upstream is paused */
#define SR_PROXY_MAX_REQUEST     (64u << 20)  /* default bound on a request body */
#define SR_PROXY_MAX_REWRITE     (256u << 20) /* default bound on a route fault's answer */
#define SR_PROXY_UPSTREAM_MAX    512          /* bytes of the upstream URL, including the NUL */
#define SR_PROXY_MAX_CONNECTIONS 512          /* client connections (a thread each) at once */

typedef struct sr_proxy_config {
    const char *upstream;        /* "http://host:port" (no path) */
    const char *listen_addr;     /* numeric IPv4 address; NULL: 127.0.0.1 */
    int port;                    /* 0: any free port */
    sr_capture_writer *record;   /* NULL: no capture */
    int redact;                  /* capture: prompt token ids written as zeros */
    const sr_fault_plan *faults; /* NULL: none; as sr_proxy_check_faults accepts */
    uint64_t seed;               /* probability and latency draws */
    size_t max_request_bytes;    /* 0: SR_PROXY_MAX_REQUEST */
    size_t max_rewrite_bytes;    /* 0: SR_PROXY_MAX_REWRITE */
    int dialect; /* sr_dialect of the upstream: its generate routes are the endpoint generate */
} sr_proxy_config;

typedef struct sr_proxy sr_proxy;

/*
 * Checks that every fault of `plan` is one the proxy applies (delay, http or transport layer, or
 * a route fault of the grammar that needs nothing but the answer, sr_px_routes_supported):
 * SR_E_FAULT_SPEC naming the fault and why otherwise.
 */
int sr_proxy_check_faults(const sr_fault_plan *plan, sr_err *err);

/* Validates the config (upstream "http://" URL, faults), binds and starts serving.
 * Errors: usage.invalid_argument (bad upstream), fault.spec, engine.start (bind/daemon). */
int sr_proxy_start(sr_proxy **out, const sr_proxy_config *cfg, sr_err *err);

int sr_proxy_port(const sr_proxy *p);

/* Exchanges the capture could not record whole (a body or index line that could not be
 * written): each is also printed on standard error and marked "complete": false. The traffic
 * itself is never held up by the capture. */
int64_t sr_proxy_capture_errors(const sr_proxy *p);
const char *sr_proxy_url(const sr_proxy *p);

/* Stops serving (a stalled request is released and closed; every exchange in progress ends and
 * is recorded), frees the proxy, and returns sr_proxy_capture_errors as it stood then (0 for
 * NULL). */
int64_t sr_proxy_stop(sr_proxy *p);

#endif /* SR_PROXY_H */
