/*
 * client: the generate client (skyrl.md §1.1, §1.2, §1.7, §4) over a list of engine URLs,
 * on libcurl.
 *
 * Data plane. One POST per generate, to ONE engine chosen stickily by the session id (FNV-1a of
 * its bytes, mixed, modulo the engine count; a request without a session id goes where the empty
 * id goes), as SkyRL's router does; the id travels as the header `X-Session-ID`. Retries stay on
 * the same engine (the reference retries against the same router). The path is
 * /skyrl/v1/generate when routes are requested, else /inference/v1/generate. The request body is
 * exactly §1.2: {"sampling_params":{<the caller's members in order>,
 * "routed_experts_prompt_start":s},"model":"...","token_ids":[...],"cache_salt":"..."} (the start
 * only when given, the salt only when not NULL).
 *
 * Other dialects (opts.dialect, spec/dialect.h; scenarios/FORMAT.md §5b): the request goes to the
 * dialect's route opts.dialect_route in that route's shape (body.c: token ids, the sampling
 * members in its params object or at the top level, max_tokens under its name, the start where
 * the wire has one, sglang's return_routed_experts / return_logprob switches), always through the
 * splice with the dialect's registry (sr_dialect_add_fields plus the caller's other fields); the
 * reply's frame is read by the dialect (response.c) and its routes mapped back to the rows the
 * skyrl wire carries for the same request, [start, P+G-1), with the named errors wire.*,
 * npy.*, nrlre.*, nested.*. A prefill/decode pair (opts.pd_*) sends every generate to the decode
 * engine and merges the prefill engine's prompt rows (sr_client_generate, generate.c).
 *
 * Client-side checks, before anything is sent (SR_E_CLIENT_INVALID, message as the reference):
 *   token_ids empty, or an id negative;
 *   prompt_start given (>= 0) without return_routes ("routed_experts_prompt_start requires
 *   return_routed_experts=True");
 *   prompt_start < -1 or > len(token_ids) ("... must be an integer within the prompt");
 *   sampling_params not an object; its "n" not a number or > 1 ("n > 1 is not supported");
 *   sampling_params already holding routed_experts_prompt_start (the request field carries it);
 *   cache_salt "" (vLLM rejects an empty salt; the reference would forward it);
 *   session_id longer than SR_CLIENT_SESSION_MAX or holding bytes outside 0x21..0x7e (it becomes
 *   a header line).
 *
 * The /skyrl/v1/generate response is spliced WHILE IT STREAMS: curl's write callback feeds
 * sr_splice_stream_feed, the stream having been begun with the Content-Length (or -1 when the
 * body is chunked), so blobs are decoded as they arrive. The native response is read into a
 * bounded buffer and parsed with cJSON (the splice is not used there). Then (§1.7): exactly one
 * choice; token_ids required; finish_reason required (string or null); logprobs null or
 * {"content":[{"logprob":x},..]} with one entry per token; routes requested but null or absent
 * -> SR_E_CLIENT_ROUTES_MISSING (never retried). The mock engine's extra per-choice key
 * "syncroll" ({"engine":id,"weight_version":v,"rows":[[lo,hi,v],..]}) is read when present.
 *
 * Attempt outcomes and the retry policy (every attempt is recorded in the result):
 *   transport failure (refused, reset, closed early, per-attempt timeout) -> client.transport,
 *     retried;
 *   2xx whose body fails the splice with a transient code (splice.unterminated, .truncated,
 *     .short_body, .invalid_json, intarray.syntax, json.invalid_utf8, json.number_overflow) or
 *     a native body that is not JSON (client.invalid_json), retried;
 *   2xx whose body breaks the contract (splice.layout_drift, envelope.*, json.duplicate_key,
 *     json.too_deep, client.bad_response, client.routes_missing, ...) -> that code at once,
 *     never retried;
 *   429 -> retried after max(Retry-After, backoff);
 *   5xx -> retried, whatever the body (POLICY for JSON-bodied 5xx: a 5xx says the server failed,
 *     not the request; a deterministic 500 costs `max_attempts` tries and ends in
 *     client.retry_exhausted naming the status and the server's message); a 503 whose JSON
 *     body names the check engine.connection_limit (a mock engine over its
 *     engines.server.max_connections) is the outcome engine.connection_limit instead of
 *     client.http_status, retried alike, so the final error names it (client.retry_exhausted
 *     "last engine.connection_limit"; engine.connection_limit itself where the quirk
 *     retry_json_decode_only declines to retry a JSON-bodied 5xx);
 *   other statuses (4xx, 3xx) -> client.http_status at once, never retried, with the server's
 *     text or error.message;
 *   2xx whose finish reason says the request was aborted -> client.aborted_turn (every dialect's
 *     form: choices[0].finish_reason "abort" on the skyrl, vLLM, Dynamo and NeMo-RL wires, as
 *     vllm/v1/engine/__init__.py FINISH_REASON_STRINGS; SGLang's meta_info.finish_reason
 *     {"type": "abort", "message", "status_code", "err_type"}, FINISH_ABORT.to_json in
 *     python/sglang/srt/managers/schedule_batch.py, and "abort" on its completions). The
 *     abort is recognised as soon as the finish reason is read, before the routes: an aborted
 *     reply without routes (vLLM's 0-token abort) is an aborted turn, not client.routes_missing.
 *     Never taken as a finished turn: with on_abort FAIL (the default) the request ends at once;
 *     with RETRY the attempt is retried like a transient failure (the partial output dropped).
 * Backoff before attempt k+1: min(backoff_max_ms, backoff_initial_ms * 2^(k-1)) scaled by
 * (1 - jitter * u), u in [0, 1) drawn from (seed, session id, turn, k) with splitmix64, so a
 * request's waits do not depend on scheduling. Every request has a total deadline (attempts and
 * waits included): a wait or an attempt that would pass it ends the request with client.deadline.
 * All attempts failing transiently -> client.retry_exhausted naming the last outcome.
 *
 * Quirks (legacy behaviours, off by default; bug catalogue rows):
 *   retry_json_decode_only  the reference's classification (§4.2): only transport failures and
 *                           bodies the JSON decoder rejects (splice.invalid_json,
 *                           splice.truncated, intarray.syntax, json.invalid_utf8,
 *                           json.number_overflow, client.invalid_json) on a non-4xx status are
 *                           retried. A body cut inside a blob (splice.unterminated) or short of
 *                           its Content-Length then fails at once with client.not_retried
 *                           (skyrl-retry-unterminated); a JSON-bodied 5xx or a 429 fails at once
 *                           with client.http_status (json-5xx-not-retried).
 *   no_prompt_start         routed_experts_prompt_start is never sent (the engine then returns
 *                           every row from 0 and the trace's row count breaks on turn 2).
 *   commit_aborted_turn     a reply that says "abort" is decoded as a finished one (its routes
 *                           required as usual): the defect of radixark/miles#3337 (an aborted
 *                           partial turn committed) and vllm-project/vime#49 (an abort without
 *                           routes raising client.routes_missing).
 *
 * Hidden re-sends: libcurl re-sends a request once, by itself, when a kept-alive connection dies
 * before any byte of the answer arrives (e.g. the engine's reset fault on a reused connection).
 * The engine then counts one more request than there are attempts; the attempt records it in
 * `resent` (counted with CURLOPT_PREREQFUNCTION), so attempts + resent = requests the engine
 * saw. A request that got any answer is never re-sent, so a protocol fault is hit exactly once.
 *
 * Control plane: sr_client_control sends one request to every engine (or one) concurrently
 * through a fan-out (fanout.h) made for the call, without retries (as the reference), each
 * bounded by control_timeout_ms (connecting also by connect_timeout_ms).
 *
 * Concurrency: an sr_client is immutable after sr_client_new (but for its pools of idle conns,
 * handles and threads, guarded by mutexes, and its block cache) and may be shared by any number
 * of threads. An sr_client_conn (one splicer and reused buffers) belongs to one thread at a time;
 * sr_client_parallel runs jobs on a bounded set of threads, one conn each, taken from the
 * client's pool and given back to it, so the warm buffers of one batch serve the next (at most
 * SR_CLIENT_POOL_MAX idle conns are kept). The threads are the client's too: the calling thread
 * and threads the client keeps between calls (at most SR_CLIENT_POOL_MAX idle ones, asleep; they
 * inherit the signal mask of the thread whose call started them), so a batch's jobs do not start
 * on fresh thread stacks, arenas and caches; sr_client_free ends them (no call may be running).
 * Kept-alive connections belong to the client, per engine: each attempt borrows a curl easy
 * handle whose one connection goes to its engine, and gives it back, so any thread reuses an
 * engine's idle connection; the client never has more handles (so connections) than conns +
 * engines - 1 (one thread keeps a connection to every engine), so its sockets settle once a batch
 * has run at full concurrency (a soak compares them across iterations). Handles and sockets are
 * released by sr_client_free. No global mutable state: the process must call sr_client_global_init
 * (curl_global_init(CURL_GLOBAL_DEFAULT)) once, from main() before any thread starts and before
 * the first client or fan-out (the client test suites call curl_global_init in theirs), and
 * sr_client_global_cleanup at exit.
 *
 * Ownership: everything an sr_client_result points to belongs to the conn and stays valid until
 * the next request on that conn or sr_client_conn_free. Units: times in milliseconds, sizes in
 * bytes.
 */
#ifndef SR_CLIENT_CLIENT_H
#define SR_CLIENT_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sr_block_cache.h"
#include "sr_buf.h"
#include "sr_clock.h"
#include "sr_err.h"
#include "sr_fields.h"
#include "sr_ndarray.h"
#include "spec/dialect.h"
#include "spec/stack.h"

#define SR_CLIENT_MAX_ENGINES   64
#define SR_CLIENT_MAX_ATTEMPTS  64
#define SR_CLIENT_URL_MAX       512 /* bytes of a base URL, including the NUL */
#define SR_CLIENT_SESSION_MAX   256 /* bytes of a session id */
#define SR_CLIENT_ENGINE_ID_MAX 64  /* bytes of the engine id kept from "syncroll", with NUL */
#define SR_CLIENT_POOL_MAX      256 /* idle conns a client keeps between sr_client_parallel calls */
#define SR_CLIENT_BLOCKS_MAX    256 /* spare blocks a client keeps (sr_client_blocks) */
#define SR_CLIENT_BLOCK_MAX     ((size_t)8 << 20)   /* bytes of one block it keeps at most */
#define SR_CLIENT_BLOCKS_BYTES  ((size_t)256 << 20) /* bytes of all the blocks it keeps */

/* Legacy behaviours, each reproducing a catalogued defect. */
typedef struct sr_client_quirks {
    int retry_json_decode_only;
    int no_prompt_start;
    int prefix_without_quote;  /* the splice's quirk of the same name (sr_splice.h) */
    int npy_assume_uint8;      /* vllm: the bytes after the .npy header read as uint8 whatever the
                                  descr says (uint16 routes of > 256 experts become twice the rows) */
    int sglang_rows_from_zero; /* sglang: the flat routes taken as rows from 0, not from the
                                  routed_experts_start_len the request sent */
    int commit_aborted_turn;   /* a reply whose finish_reason is "abort" is taken as a finished
                                  turn (radixark/miles#3337), and its routes are required like any
                                  other's (vllm-project/vime#49: a 0-token abort without routes
                                  raises client.routes_missing) */
} sr_client_quirks;

/* What the client does with a reply that says finish_reason "abort" (client.on_abort). */
typedef enum sr_client_on_abort {
    SR_CLIENT_ABORT_FAIL = 0, /* the request ends with client.aborted_turn at once */
    SR_CLIENT_ABORT_RETRY     /* the attempt is retried like a transient failure (backoff, the
                                 attempt budget and the deadline); when the budget is spent,
                                 client.retry_exhausted naming client.aborted_turn */
} sr_client_on_abort;

/* The names of client.on_abort, indexed by sr_client_on_abort, NULL-terminated. */
#define SR_CLIENT_ON_ABORT_NAMES    ((const char *const[]){"fail", "retry", NULL})
#define SR_CLIENT_ROUTE_START_NAMES ((const char *const[]){"held", "zero", NULL})

/* Options. Plain struct: start from SR_CLIENT_OPTS_INIT. */
typedef struct sr_client_opts {
    int max_attempts;           /* 1 .. SR_CLIENT_MAX_ATTEMPTS attempts in all (5) */
    int64_t backoff_initial_ms; /* wait after the first failure, before jitter (50) */
    int64_t backoff_max_ms;     /* cap of the exponential wait (2000) */
    double jitter;              /* 0 .. 1: fraction of the wait that is randomised (0.5) */
    uint64_t seed;              /* jitter seed (normally the scenario seed) */
    int64_t deadline_ms;        /* total per generate, waits included (60000) */
    int64_t attempt_timeout_ms; /* per attempt; 0: only the deadline bounds an attempt */
    int64_t connect_timeout_ms; /* per connection attempt (5000) */
    int64_t control_timeout_ms; /* per control-plane call (30000) */
    size_t max_body;            /* largest response body; 0: SR_SPLICE_DEFAULT_MAX_BODY */
    size_t max_error_body;      /* bytes of a non-2xx body kept for the message (65536) */
    sr_client_quirks quirks;
    int strict_base64; /* 1: non-zero trailing base64 bits are base64.bad_padding (sr_splice.h) */
    /* The wire (spec/dialect.h; default skyrl) and which of its generate routes (0: the first,
     * e.g. vLLM's /inference/v1/generate; 1: its /v1/completions). */
    sr_dialect dialect;
    int dialect_route;
    /* The model's MoE layers and top_k: a wire without a shape (sglang's flat int32) is reshaped
     * by them, and every wire's shape is checked against them (wire.shape); 0: not known. */
    int64_t route_layers, route_topk;
    /*
     * Prefill/decode disaggregation (vllm-project/router#184): with pd_decode >= 0 every generate
     * goes to engine pd_decode (not by session); with pd_merge as well, each generate that asks
     * for routes is first sent to engine pd_prefill with max_tokens 1, and its rows (the prompt's,
     * from the start on) replace the decode reply's prompt-region rows, which a decode replica
     * never computed. pd_merge 0 is the unmerged router's defect. -1: off.
     */
    int pd_prefill, pd_decode, pd_merge;
    sr_client_on_abort on_abort; /* (above; SR_CLIENT_ABORT_FAIL) */
    /* The SkyRL contract (spec/stack.h; client.stack): with SR_STACK_2086 a request may ask for
     * the sampler's support (sr_client_req.return_support). Default SR_STACK_2079. */
    sr_stack stack;
    /* Thread CPU time of the phases (sr_client_result.cpu_sampled): measured on the first generate
     * of every conn and then on one in cpu_every; 0 never. Each sampled generate reads the thread
     * CPU clock about ten times (a system call each), hence the sampling. */
    int cpu_every;
    /*
     * vLLM's routed-expert prefix omission (vllm-project/vllm#57025; engines.omit_prefix_routes):
     * the engine sends prompt rows from max(start sent, num_cached_tokens), so where a reply's
     * rows begin is derived from their count, first = P + G - 1 - rows, and must lie in
     * [start sent, min(P - 1, rows the caller holds = sr_client_req.prompt_start)]; else
     * client.omitted_start. The rows the caller holds are kept for the omitted span (the reply's
     * first prompt_start - first rows are skipped). 0: rows begin at the start sent.
     */
    int omit_prefix;
    /* client.route_start "zero": routed_experts_prompt_start 0 is sent on every turn while rows
     * are still needed from sr_client_req.prompt_start on (the earlier rows are skipped): the
     * caller that relies on the engine's omission instead of its own start. 0: "held". */
    int route_start_zero;
    /* SGLang's masked padding (sgl-project/sglang#36404; engines.masked_padding, sglang dialect
     * only; 0: off): a route value -1 is accepted only as a whole row (every layer and slot) at
     * a prompt position p >= mask_chunk with p % mask_chunk < mask_rows; any other negative value
     * is routes.negative, as without the option. */
    int64_t mask_chunk, mask_rows;
} sr_client_opts;

#define SR_CLIENT_OPTS_INIT                                                                        \
    {                                                                                              \
        5, 50, 2000, 0.5, 0, 60000, 0, 5000, 30000, 0, 65536, {0, 0, 0, 0, 0, 0}, 0,               \
            SR_DIALECT_SKYRL, 0, 0, 0, -1, -1, 1, SR_CLIENT_ABORT_FAIL, SR_STACK_2079, 0, 0, 0, 0, \
            0                                                                                      \
    }

/* One generate request. Plain struct: start from SR_CLIENT_REQ_INIT. Everything is borrowed. */
typedef struct sr_client_req {
    const int32_t *token_ids; /* the full prompt */
    size_t n_tokens;
    const cJSON *sampling_params; /* an object (copied into the body in member order) or NULL */
    const char *model;            /* NULL or "": "default" */
    const char *cache_salt;       /* NULL: omitted */
    const char *session_id;       /* NULL or "": no X-Session-ID header */
    int return_routes;            /* 1: /skyrl/v1/generate, routes required */
    int64_t prompt_start;         /* -1: not given; else 0 .. n_tokens */
    int64_t turn;                 /* enters the jitter seed together with the session id */
    int return_support;           /* 1: "return_sample_support": true (stack 2086, skyrl only);
                                     /skyrl/v1/generate, rollout_sample_support required */
    /* Optional, skyrl's packed routes only: memory (8-byte aligned, routes_dest_cap bytes) where
     * the reply's routed_experts are decoded when they fit (sr_splice_set_dest), so the result's
     * routes point there and a route trace's room (sr_route_trace_room) takes them without a
     * copy. Borrowed for the call; its bytes are overwritten. NULL: the conn's splicer memory. */
    void *routes_dest;
    size_t routes_dest_cap;
} sr_client_req;

#define SR_CLIENT_REQ_INIT                                                                         \
    {                                                                                              \
        NULL, 0, NULL, NULL, NULL, NULL, 0, -1, 0, 0, NULL, 0                                      \
    }

/* One attempt of a request. */
typedef struct sr_client_attempt {
    int code;           /* 0 or the outcome's sr_code (client.transport, splice.*, ...) */
    int http_status;    /* 0 when no status line arrived */
    int curl_code;      /* CURLcode of the transfer */
    int retried;        /* 1 if another attempt followed */
    int new_connection; /* 1: a new connection was opened; 0: a kept-alive one was reused */
    double start_ms;    /* since the request began */
    double elapsed_ms;  /* duration of the attempt */
    double wait_ms;     /* backoff / Retry-After wait after it */
    uint64_t bytes;     /* response body bytes received */
    int resent;         /* times libcurl re-sent the request on its own (see below) */
    int chunks;         /* pieces the body arrived in (each fed to the splice as it came) */
} sr_client_attempt;

/* A half-open span of token positions [lo, hi) computed with weight version `version`. */
typedef struct sr_client_span {
    int64_t lo, hi, version;
} sr_client_span;

/* The outcome of sr_client_generate: filled on success and (attempts, timing) on failure. */
typedef struct sr_client_result {
    int engine;                /* index of the engine that was addressed, -1 before routing */
    const char *url;           /* its base URL (owned by the client) */
    const char *path;          /* "/skyrl/v1/generate" or "/inference/v1/generate" */
    int64_t prompt_start_sent; /* the start the body carried, -1 if none */
    /* decoded response */
    const int32_t *token_ids;
    size_t n_tokens;
    const double *logprobs; /* n_tokens entries when has_logprobs */
    int has_logprobs;
    const char *finish_reason; /* "stop", "length", "abort", ...; NULL for JSON null */
    int has_routes;
    sr_ndarray routes; /* [rows, L, K] view into the conn's splicer */
    /* The OR of the routes' values (sr_ndarray.h), for sr_route_trace_record_bounded: known when
     * the routes are a packed envelope's array exactly as the splice decoded it (skyrl's wire,
     * without pd_merge, which replaces rows); unknown otherwise (other dialects' routes are
     * re-sliced or read from strings). */
    sr_value_bound routes_bound;
    int has_support;    /* return_support: rollout_sample_support was read and checked */
    sr_ndarray support; /* int32 [n_tokens, top_k] view into the conn's splicer */
    /* the engine's "syncroll" key; engine_id "" and weight_version -1 when absent */
    char engine_id[SR_CLIENT_ENGINE_ID_MAX];
    int64_t weight_version;
    const sr_client_span *spans;
    size_t n_spans;
    /* attempts */
    sr_client_attempt attempts[SR_CLIENT_MAX_ATTEMPTS];
    int n_attempts;
    int http_status; /* of the last attempt */
    /* timing (ms) and sizes (bytes) */
    double request_ms;       /* first attempt start to return, waits included */
    double splice_ms;        /* inside the splice (feeds + finish) or JSON parse, last attempt */
    double decode_ms;        /* reading the parsed response into this result, last attempt */
    double wait_ms;          /* sum of waits between attempts */
    uint64_t bytes_sent;     /* request body of one attempt */
    uint64_t bytes_received; /* response body of the last attempt */
    uint64_t bytes_total;    /* response bodies of all attempts */
    /* Thread CPU time (ms) of a generate the conn sampled (opts.cpu_every; else 0): the whole
     * generate, and inside the splice (feeds + finish) or JSON parse of the last attempt. */
    int cpu_sampled;
    double request_cpu_ms, splice_cpu_ms;
} sr_client_result;

typedef struct sr_client sr_client;
typedef struct sr_client_conn sr_client_conn;

/*
 * Creates a client over `n_urls` engine base URLs ("http://127.0.0.1:40123", copied; a trailing
 * '/' is dropped), 1 .. SR_CLIENT_MAX_ENGINES. `fields` is the splice registry (borrowed; must
 * outlive the client); NULL uses the built-ins. opts may be NULL. Errors: SR_E_INVAL (no URLs,
 * too many, one too long or empty, bad options), SR_E_NOMEM.
 */
int sr_client_new(sr_client **out, const char *const *urls, size_t n_urls, const sr_fields *fields,
                  const sr_client_opts *opts, sr_err *err);

/* Frees the client, its idle conns and its connections. Every conn the caller made with
 * sr_client_conn_new must be freed first. NULL is a no-op. */
void sr_client_free(sr_client *c);

const sr_client_opts *sr_client_options(const sr_client *c);
size_t sr_client_engine_count(const sr_client *c);
const char *sr_client_engine_url(const sr_client *c, size_t i);

/* The engine a session id is routed to (NULL is the empty id). */
int sr_client_engine_for(const sr_client *c, const char *session_id);

/*
 * A connection context for one thread (splicer, buffers; the connections are the client's, see
 * "Concurrency"). SR_E_NOMEM. A conn belongs to its client: free it with sr_client_conn_free
 * before sr_client_free (the conn gives its share of the client's idle handles back).
 */
int sr_client_conn_new(sr_client_conn **out, const sr_client *c, sr_err *err);
void sr_client_conn_free(sr_client_conn *k);

/*
 * The conn's caller scratch: one pointer the layer above the client (the rollout) keeps its
 * per-worker buffers in, so the rollouts a conn carries one after another (a pooled conn lives
 * as long as its client) reuse them instead of allocating per rollout. NULL on a new conn. The
 * conn owns what it points to once set: sr_client_conn_free calls release(ptr) (set with
 * sr_client_conn_set_scratch; a later call frees the previous scratch first, unless it is the
 * same pointer). One thread at a time, as the conn.
 */
void *sr_client_conn_scratch(const sr_client_conn *k);

/* Bytes of one route row (layers x top-k x the wire's item size) of the last generate with
 * routes that any conn of k's client decoded; 0 before the first. A hint for the caller's
 * storage (sr_route_trace_hint_row_bytes); thread-safe. */
size_t sr_client_routes_row_bytes(const sr_client_conn *k);

/*
 * The client's cache of spare blocks (sr_block_cache.h) for the layers above, shared by all its
 * conns: storage that outlives a conn's work (a rollout's routes, owned by its result) is put
 * back there when its owner releases it and taken by the next rollout of any conn, pages
 * already touched. At most SR_CLIENT_BLOCKS_MAX blocks of at most SR_CLIENT_BLOCK_MAX bytes,
 * SR_CLIENT_BLOCKS_BYTES in all. Borrowed: a holder that outlives the conn's use takes its own
 * reference (sr_block_cache_ref); sr_client_free closes the cache, so blocks put back after it
 * are freed. Thread-safe.
 */
sr_block_cache *sr_client_blocks(const sr_client_conn *k);
void sr_client_conn_set_scratch(sr_client_conn *k, void *ptr, void (*release)(void *));

/*
 * Sends a generate with retries (policy above) and fills *out. Returns 0 or the final error:
 * SR_E_CLIENT_INVALID, SR_E_CLIENT_ROUTES_MISSING, SR_E_CLIENT_BAD_RESPONSE,
 * SR_E_CLIENT_HTTP_STATUS, SR_E_CLIENT_DEADLINE, SR_E_CLIENT_RETRY_EXHAUSTED,
 * SR_E_CLIENT_NOT_RETRIED, SR_E_ENGINE_CONN_LIMIT, a protocol code of the splice or envelope,
 * SR_E_NOMEM/SR_E_LIMIT. A non-2xx message is the server's text or error.message, followed by
 * " [check]" when its JSON body names one (error.check, as the mock engine's do).
 */
int sr_client_generate(sr_client_result *out, sr_client_conn *k, const sr_client_req *req,
                       sr_err *err);

/*
 * Best effort POST /finish_session?session_id=<id> to the session's engine (bounded by
 * control_timeout_ms); a NULL or empty id is a no-op. Errors are swallowed as the reference does;
 * the return value is 0 or what happened (for logs), never worth failing a rollout for.
 */
int sr_client_finish_session(sr_client_conn *k, const char *session_id);

/* ---- exchange capture (failure evidence) ---- */

/*
 * What a conn keeps of its last generate while capture is on (sr_client_conn_capture), for the
 * failure evidence of a run (harness/run/evidence.h): the request body as sent (the very buffer
 * the request was built in), the first `cap` bytes of the LAST attempt's response body with the
 * count of bytes it received in all, and that attempt's status line and response headers (at
 * most SR_CLIENT_CAPTURE_HEADERS bytes). Timings are the result's attempts. Off by default;
 * with capture on, the only work added to a request is copying at most `cap` response bytes per
 * attempt and the header lines (the request body is handed over by swapping buffers, not
 * copied).
 */
#define SR_CLIENT_CAPTURE_HEADERS 4096

typedef struct sr_client_exchange {
    sr_buf request;          /* the request body, all of it */
    sr_buf response;         /* the first `cap` bytes of the last attempt's response body */
    uint64_t response_bytes; /* body bytes the last attempt received (>= response.len) */
    sr_buf headers;          /* status line(s) and response headers of the last attempt */
} sr_client_exchange;

#define SR_CLIENT_EXCHANGE_INIT                                                                    \
    {                                                                                              \
        SR_BUF_INIT, SR_BUF_INIT, 0, SR_BUF_INIT                                                   \
    }

/* Turns capture on (cap > 0: response bytes kept per attempt) or off (0) for k's next generates. */
void sr_client_conn_capture(sr_client_conn *k, size_t cap);

/*
 * Swaps what k captured of its last generate with *x: *x then holds that exchange, and k reuses
 * the buffers *x held (emptied) for its next generate. Nothing is copied.
 */
void sr_client_conn_take_exchange(sr_client_conn *k, sr_client_exchange *x);

/* Frees the buffers of x (which stays usable, empty). */
void sr_client_exchange_release(sr_client_exchange *x);

/* ---- control plane ---- */

/* One engine's answer to a control-plane call. */
typedef struct sr_client_reply {
    int code;        /* 0, SR_E_CLIENT_TRANSPORT, _DEADLINE, _HTTP_STATUS or _INVALID_JSON */
    int http_status; /* 0 if none arrived */
    cJSON *body;     /* parsed JSON body (owned), NULL if empty or not JSON */
    char msg[SR_ERR_MSG_MAX];
} sr_client_reply;

/*
 * Sends `method` (GET or POST) to `path` ("/pause?mode=keep", with its query) on engine
 * `engine` (0 .. n-1) or on every engine (-1), concurrently; `json_body` (may be NULL) is sent
 * as application/json. replies[] needs one slot per engine addressed (n_replies; slot i is
 * engine i, or slot 0 for a single engine). No retries. Returns 0 when every engine answered
 * 2xx, else the first failing engine's code (in engine order) with its message in err; every
 * reply is filled either way. Release the replies with sr_client_reply_release.
 */
int sr_client_control(sr_client_reply *replies, size_t n_replies, const sr_client *c, int engine,
                      const char *method, const char *path, const char *json_body, sr_err *err);

void sr_client_reply_release(sr_client_reply *r);

/* The monotonic clock every timing of the client uses, in ms: sr_clock_ms (lib/sr_clock.h), under
 * the name its callers in run/ and cli/ know. New code calls sr_clock_ms. */
static inline double sr_client_now_ms(void)
{
    return sr_clock_ms();
}

/* ---- process ---- */

/*
 * The HTTP layer's process-wide set-up and tear-down (libcurl's global state): see Concurrency
 * above for when to call them. Returns 0 or SR_E_INTERNAL (libcurl could not start).
 */
int sr_client_global_init(sr_err *err);
void sr_client_global_cleanup(void);

/* ---- concurrency ---- */

/* A job of sr_client_parallel; its return value is stored for the caller (see below). */
typedef int (*sr_client_job_fn)(sr_client_conn *k, size_t index, void *ctx);

/*
 * Runs fn(conn, i, ctx) for every i in 0 .. n_jobs-1 on min(limit, n_jobs) threads (limit >= 1):
 * the calling thread and threads the client keeps idle between calls (made when too few are
 * idle; see "Concurrency"), each with its own conn (so its buffers are reused across that
 * thread's jobs; the conns come from and return to the client's idle pool, so also across
 * calls). Jobs
 * are claimed in index order; a job must write only its own slot of any shared output. rcs (may
 * be NULL) receives every job's return value. If a thread cannot be started the others (or the
 * calling thread) take its share. Returns 0, or SR_E_INVAL (no fn, limit < 1) / SR_E_NOMEM
 * (conns could not be created; then no job has run).
 */
int sr_client_parallel(const sr_client *c, size_t n_jobs, int limit, sr_client_job_fn fn, void *ctx,
                       int *rcs, sr_err *err);

#endif /* SR_CLIENT_CLIENT_H */
