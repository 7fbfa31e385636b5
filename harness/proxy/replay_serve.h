/*
 * replay_serve: `syncroll replay --serve`, a capture (capture.h) played back as an engine
 * (libmicrohttpd), so a client can be re-run against exactly the bytes it got when the capture
 * was recorded.
 *
 * Matching, for each request that arrives:
 *   1. by session and turn: a request with X-Session-ID gets the answer of the n-th captured
 *      exchange of that session to the same endpoint (spec/endpoints.h; an unknown path: the
 *      same method and URI), in seq order, when it is the n-th such request the server has seen;
 *   2. else by body: the captured exchanges with the same method, URI (query included) and
 *      request body (its size and xxh3 digest), answered in seq order, the last one again once
 *      they are used up.
 * The answer is the recorded status, Content-Type and response bytes exactly. An exchange the
 * capture marks incomplete is sent as far as it was recorded and the connection then closed
 * (the client sees a cut body, as it did); one recorded with no answer (status 0) closes the
 * connection without one. Every answer carries X-Syncroll-Replay-Seq: the seq it replays.
 * A request with no match is answered 404 with the engines' JSON error body,
 * {"error":{"message":..,"type":"NotFoundError","code":404,"check":"replay.no_match"}};
 * a request body larger than max_request_bytes 413 resource.limit.
 *
 * A redacted capture (prompt token ids written as zeros) matches by session and turn only.
 * GET /syncroll/v1/replay answers the server's own state: {"exchanges":N,"answered":N,
 * "no_match":N}.
 *
 * Threads: libmicrohttpd's thread per connection (at most SR_PROXY_MAX_CONNECTIONS at once); the
 * turn counters sit behind one mutex.
 * Bodies are read from the capture when asked for (each is held whole while it is sent).
 * Ownership: the capture and the config's strings are borrowed and must outlive the server.
 */
#ifndef SR_PROXY_REPLAY_SERVE_H
#define SR_PROXY_REPLAY_SERVE_H

#include <stddef.h>

#include "capture.h"
#include "sr_err.h"

typedef struct sr_replay_serve_config {
    const sr_capture *capture;
    const char *listen_addr;  /* numeric IPv4 address; NULL: 127.0.0.1 */
    int port;                 /* 0: any free port */
    size_t max_request_bytes; /* 0: 64 MiB */
} sr_replay_serve_config;

typedef struct sr_replay_serve sr_replay_serve;

/* Indexes the capture, binds and starts serving. Errors: usage.invalid_argument (address),
 * engine.start (bind), resource.nomem. */
int sr_replay_serve_start(sr_replay_serve **out, const sr_replay_serve_config *cfg, sr_err *err);

const char *sr_replay_serve_url(const sr_replay_serve *s);

/* Stops serving and frees the server; NULL is a no-op. */
void sr_replay_serve_stop(sr_replay_serve *s);

#endif /* SR_PROXY_REPLAY_SERVE_H */
