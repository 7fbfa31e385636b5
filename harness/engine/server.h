/*
 * server: the mock engine's HTTP server on libmicrohttpd.
 *
 * A thread pool (cfg->threads workers, poll) serves at most cfg->max_connections connections busy
 * with a request at once. A request that arrives (its head read) when that many are in progress
 * waits, its connection suspended before its body is read, in a FIFO queue of at most
 * cfg->max_queued requests, and takes the slot of the next request to complete (in arrival
 * order; no deadline runs while it waits, the client's own bounds it); one that finds the queue
 * full too is answered 503 with "Connection: close" and the check engine.connection_limit. The
 * defaults (256 active, 1024 queued, 1024 pending) admit SkyRL's default of 512 concurrent
 * generates per engine. Kept-alive connections idle between requests hold no slot. After a refuse
 * fault the quiesced daemon answers its open connections with "Connection: close", so kept-alive
 * clients move to the new listener. Request bodies above cfg->max_body_bytes are answered 413
 * without being kept; unknown paths 404, known paths with another method 405, malformed requests
 * 400, all with a JSON error body
 * {"error":{"message":..,"type":..,"code":N,"check":"<sr_err name>"}}.
 *
 * Slow clients (slowloris): a connection that has not sent a whole request head within
 * cfg->header_timeout_ms of its accept, or a request whose body has not fully arrived within
 * cfg->body_timeout_ms of its head, is answered 408 engine.request_timeout and closed (by
 * sr_server_tick). While requests wait in the queue for a slot and at least max_connections -
 * max(1, max_connections / 8) slots are held by connections still sending a body, a body gets no
 * more than header_timeout_ms (408 naming that rule): slow bodies cannot hold every slot until
 * body_timeout_ms and starve the requests behind them (server_conn.c). At most
 * cfg->max_pending connections may wait without a request in progress
 * (new, or kept alive between requests); a new connection past that closes the one waiting
 * longest (a new one is answered 503 engine.pending_limit, a kept-alive one closed silently).
 * libmicrohttpd's socket limit is max_connections + max_queued + SR_SERVER_CONN_HEADROOM (16) +
 * max_pending, so a new connection is always accepted rather than left in the listen backlog.
 *
 * Framing refused before the body is read, each with "Connection: close": a Transfer-Encoding
 * other than chunked 501 engine.unsupported_encoding; Content-Length values that disagree, or
 * beside Transfer-Encoding, 400 engine.bad_framing; a Content-Length over max_body_bytes 413
 * resource.limit (not for broadcast buckets). libmicrohttpd itself answers a chunk-size line
 * longer than its read buffer (32 KiB per connection) with 500 (0.9.75; 413 from 1.0.0): it
 * parses chunk lines before the handler sees any body byte and offers no option or callback to
 * answer otherwise (docs/reference/reliability.md gives the details).
 *
 * The sync_dir of /fetch_weights and /update_weights must resolve (realpath, so neither `..` nor
 * a symlink escapes) inside a folder of cfg->sync_dirs (none when the config names none); any
 * other is answered 403 engine.forbidden_path and nothing is created (weights.c); so is the
 * model_path of the sglang plane's /update_weights_from_disk (read only, control_sglang.c).
 *
 * Nothing blocks a worker thread: waits (latency faults, simulated decode time, pauses, stalls,
 * dribbling) suspend the connection, and a scheduler thread resumes it at its deadline. Keep-mode
 * pauses freeze in-flight generates and continue them after /resume with the weights current then.
 *
 * The listener is created here (loopback unless told otherwise) so port 0 yields a real port.
 * The `refuse` fault stops listening for its window (connections are refused by the kernel) and
 * sr_server_tick, called from the owner's loop, listens again on the same port when it ends.
 *
 * Ownership: the server borrows the engine, which must outlive it. Thread-safety: start, tick and
 * stop belong to one thread (the owner's main loop); the rest runs on MHD's and the scheduler's.
 */
#ifndef SR_ENGINE_SERVER_H
#define SR_ENGINE_SERVER_H

#include <stdint.h>

#include "engine.h"
#include "sr_err.h"

typedef struct sr_server sr_server;

/*
 * Binds `addr` (numeric IPv4 or IPv6; NULL means 127.0.0.1) port `port` (0: any free port) and
 * starts serving. SR_E_ENGINE_START on bind/listen/daemon failure.
 */
int sr_server_start(sr_server **out, sr_engine *e, const char *addr, int port, sr_err *err);

/* The bound port, and the base URL ("http://127.0.0.1:PORT"). */
int sr_server_port(const sr_server *s);
const char *sr_server_url(const sr_server *s);

/* A descriptor that becomes readable when sr_server_tick has work; drain it by calling tick. */
int sr_server_wake_fd(const sr_server *s);

/*
 * Housekeeping outside the handler threads (listening again after a refuse window). Returns the
 * number of milliseconds after which it wants to be called again, or -1 if it needs nothing.
 */
int64_t sr_server_tick(sr_server *s);

/*
 * Stops serving: every held, stalled or scheduled connection is closed, the scheduler joined,
 * the daemons stopped. NULL is a no-op.
 */
void sr_server_stop(sr_server *s);

#endif /* SR_ENGINE_SERVER_H */
