/* Private to harness/client: the client and conn layouts and the helpers the .c files share. */
#ifndef SR_CLIENT_PRIV_H
#define SR_CLIENT_PRIV_H

#include <pthread.h>

#include <curl/curl.h>

#include "client.h"
#include "sr_block_cache.h"
#include "sr_buf.h"
#include "sr_splice.h"

struct sr_client {
    size_t n;
    char urls[SR_CLIENT_MAX_ENGINES][SR_CLIENT_URL_MAX];
    sr_client_opts opts;
    const sr_fields *fields;
    sr_fields *own_fields;      /* the built-ins when the caller gave none */
    struct sr_conn_pool *pool;  /* idle conns kept for the next sr_client_parallel */
    sr_block_cache *blocks;     /* spare blocks for the layers above (sr_client_blocks) */
    struct sr_workers *workers; /* idle threads kept for the next sr_client_parallel */
    int64_t cpu_pair_ns; /* what two back-to-back thread CPU clock reads measure (cpu_every) */
};

/* Idle easy handles of one engine, each with at most one kept-alive connection, to it. */
typedef struct sr_easy_stack {
    CURL **e;
    size_t n, cap;
} sr_easy_stack;

/* Idle conns of a client and its easy handles per engine; the only part of an sr_client that
 * changes after sr_client_new. */
typedef struct sr_conn_pool {
    pthread_mutex_t mu;
    sr_client_conn *idle[SR_CLIENT_POOL_MAX];
    size_t n;
    size_t conns;   /* conns alive (pooled or not): at most one easy handle each is in use */
    size_t handles; /* easy handles alive, idle or in use; kept <= conns + engines - 1 */
    sr_easy_stack easy[SR_CLIENT_MAX_ENGINES];
    size_t route_row_bytes; /* sr_client_routes_row_bytes (atomic: any conn's thread) */
} sr_conn_pool;

/* The client's kept threads (workers.c): an empty set; freeing it stops and joins the idle
 * threads (none may be running a task then). SR_E_NOMEM. */
int sr_client_workers_new(struct sr_workers **out, sr_err *err);
void sr_client_workers_free(struct sr_workers *ws);

/* One kept thread, asleep until sr_client_worker_run hands it a task. */
typedef struct sr_worker sr_worker;

/* Up to `want` idle threads of the set into out (now the caller's); how many. Thread-safe. */
size_t sr_client_workers_take(struct sr_workers *ws, sr_worker **out, size_t want);

/* A new thread for the caller, or NULL when one cannot be started. */
sr_worker *sr_client_worker_new(void);

/* Has w run fn(arg) on its thread. w must have no task of its own still to take (one handed out
 * by workers_take or worker_new and not yet run, or whose last task has let its caller go). */
void sr_client_worker_run(sr_worker *w, void (*fn)(void *), void *arg);

/* Gives threads back to the set (idle); past SR_CLIENT_POOL_MAX they are stopped and joined.
 * Thread-safe. */
void sr_client_workers_give(struct sr_workers *ws, sr_worker **w, size_t n);

/* An idle conn of the client, or a new one when none is idle (SR_E_NOMEM). */
int sr_client_pool_take(sr_client_conn **out, const sr_client *c, sr_err *err);

/* Keeps k for the next call; beyond the cap it is freed. */
void sr_client_pool_give(const sr_client *c, sr_client_conn *k);

/*
 * An easy handle for an attempt on `engine`: an idle one whose kept-alive connection goes there;
 * else a new one while the client has fewer handles than conns + engines - 1 (so one thread keeps
 * a connection to every engine); else an idle handle of another engine (its connection is closed
 * when this attempt connects). NULL only when curl cannot make a handle. Kept-alive connections
 * thus belong to the client, per engine: any thread reuses an engine's idle connection, and the
 * client's handles (and sockets) stay within that bound, so they settle once a batch has run at
 * full concurrency (a soak compares them across iterations). *made is 1 when the handle is new
 * (the caller sets its fixed options: sr_client_easy_setup), else 0.
 * Thread-safe; the handle is the caller's until sr_client_easy_give.
 */
CURL *sr_client_easy_take(const sr_client *c, int engine, int *made);

/* Gives e back as an idle handle of `engine` (the engine of the attempt it last carried). */
void sr_client_easy_give(const sr_client *c, int engine, CURL *e);

/* Copies an engine base URL into dst (SR_CLIENT_URL_MAX bytes) without its trailing '/'s;
 * -1 if it is NULL, empty or too long. */
int sr_client_url_copy(char *dst, const char *url);

/* The decimal text of the token ids of a conn's last request ("1,2,3", no brackets) and those ids:
 * the next turn of a conversation repeats them as its prefix, so only the new ids are written
 * (body.c). Grown, never shrunk; owned by the conn. */
typedef struct sr_ids_text {
    sr_buf text;
    int32_t *ids;
    size_t n, cap;
} sr_ids_text;

struct sr_client_conn {
    const sr_client *c;
    CURL *easy; /* during an attempt only: a handle of engine `engine` (sr_client_easy_take) */
    int engine; /* the engine of the current generate */
    sr_splicer *splicer;
    sr_buf req_body;   /* the request body of the current generate */
    sr_buf body;       /* a native or non-2xx response body */
    sr_buf url;        /* base URL + path */
    cJSON *native_doc; /* the parsed native body of the last attempt */
    int32_t *tokens;
    size_t tokens_cap;
    double *logprobs;
    size_t logprobs_cap;
    sr_client_span *spans;
    size_t spans_cap;
    char finish[32];
    unsigned char *rows; /* routes a wire had to be re-assembled into (response.c) */
    size_t rows_cap;
    unsigned char *pd_rows; /* the prefill replica's rows of the current generate (generate.c) */
    size_t pd_rows_cap;
    char errbuf[CURL_ERROR_SIZE];
    sr_ids_text ids_text;       /* the last request's token ids as text (body.c) */
    struct curl_slist *headers; /* the request headers, kept while the session is the same */
    char headers_session[SR_CLIENT_SESSION_MAX + 1]; /* ... the session they name ("": none) */
    uint64_t generates;     /* generates begun on this conn (the CPU sampling's count) */
    int cpu_sample;         /* the current generate measures its phases' thread CPU time */
    size_t capture;         /* response bytes captured per attempt; 0: capture off */
    sr_client_exchange cap; /* the last generate's exchange (request: swapped in after it) */
    void *scratch;          /* the caller's per-conn scratch (sr_client_conn_scratch), owned */
    void (*scratch_release)(void *);
};

/* What one attempt produced besides its sr_client_attempt record. */
typedef struct sr_xfer_out {
    const sr_splice_result *spliced; /* 2xx on the splice path */
    const cJSON *native;             /* 2xx on the native path (owned by the conn) */
    int body_json;                   /* non-2xx: the body parsed as JSON */
    int timed_out;                   /* curl's timeout fired */
    int64_t retry_after_ms;          /* Retry-After of a 429/503, -1 if none */
    double splice_ms;
    double splice_cpu_ms; /* thread CPU inside the splice, when the generate is sampled */
} sr_xfer_out;

/* Sleeps ms milliseconds (restarting after signals). */
void sr_client_sleep_ms(int64_t ms);

/* Applies the options every transfer shares (no signals, HTTP/1.1, no delay, no redirects, no
 * proxy, the connect timeout in ms, errbuf of CURL_ERROR_SIZE bytes for curl's messages). */
void sr_client_easy_common(CURL *e, int64_t connect_timeout_ms, char *errbuf);

/* The options of a generate handle that do not change between its attempts, set once when the
 * client makes it (sr_client_easy_take's *made): those of sr_client_easy_common but the error
 * buffer, a POST, and the attempt's write and pre-request callbacks (whose data each attempt sets).
 */
void sr_client_easy_setup(CURL *e, int64_t connect_timeout_ms);

/*
 * Runs one attempt: POST k->req_body to k->url (engine k->engine's, on a handle taken for the
 * attempt and given back after it) with `headers`, the response spliced while it streams
 * (splice = 1) or read into k->body. timeout_ms bounds the whole attempt. Fills `att`
 * (code, status, curl code, bytes, new_connection) and `out`; returns att->code with a message
 * in err.
 */
int sr_client_attempt_run(sr_client_conn *k, int splice, const struct curl_slist *headers,
                          int64_t timeout_ms, sr_client_attempt *att, sr_xfer_out *out,
                          sr_err *err);

/* Reads a spliced response into `out` (the rules of skyrl.md §1.7, see client.h); with
 * want_support, rollout_sample_support too (sr_client_read_support). */
int sr_client_decode_spliced(sr_client_result *out, sr_client_conn *k, const sr_splice_result *r,
                             int want_routes, int want_support, sr_err *err);

/*
 * support.c: reads the choice c0's rollout_sample_support into out->support (out->token_ids
 * already read): an envelope (else SR_E_CLIENT_SUPPORT_MISSING), int32 [n_tokens, K] with values
 * >= -1 and only trailing -1 padding (else SR_E_CLIENT_SUPPORT_INVALID), every row that has a
 * member holding its sampled token (else SR_E_CLIENT_SUPPORT_MEMBERSHIP, err->offset the row).
 */
int sr_client_read_support(sr_client_result *out, const sr_splice_result *r, const cJSON *c0,
                           sr_err *err);

/* 1 when a non-2xx answer is the server's refusal of return_sample_support for its top_k. */
int sr_client_support_refusal(int status, const char *msg);

/* The request body of `r` in the shape of route `rt` (body.c), the route start `start` (-1: none)
 * where the wire carries one. */
int sr_client_build_body(sr_buf *b, const sr_dialect_route *rt, const sr_client_req *r,
                         int64_t start, sr_ids_text *ids, sr_err *err);
/* (ids: the conn's cache of the last ids' text, reused when r's ids extend them; NULL: none) */

/* Frees what an sr_ids_text holds and empties it. */
void sr_ids_text_release(sr_ids_text *t);

/* Reads a spliced response of a dialect other than skyrl into `out` (response.c): its frame, its
 * routes mapped to the rows skyrl's wire carries for the same request. */
int sr_client_decode_dialect(sr_client_result *out, sr_client_conn *k, const sr_splice_result *r,
                             const sr_client_req *req, sr_err *err);

/* response_routes.c: the routes of the dialect response r (its choice or frame c0, the rest of it
 * already read into `out`) in out->routes, mapped to the rows skyrl's wire carries for `req`. */
int sr_client_dialect_routes(sr_client_result *out, sr_client_conn *k, const sr_splice_result *r,
                             const cJSON *c0, const sr_client_req *req, sr_err *err);

/* Grows the array *p of *cap items of `item` bytes to hold `need` (doubling, from 64); on failure
 * *p and *cap are unchanged (SR_E_NOMEM). In response_routes.c, as the next one. */
int sr_client_grow(void **p, size_t *cap, size_t need, size_t item, sr_err *err);

/* The splice entry whose node is `node` (a member of r's doc), or NULL; borrowed from r. */
const sr_splice_entry *sr_client_entry_for(const sr_splice_result *r, const cJSON *node);

/* Reads a parsed native response into `out`. */
int sr_client_decode_native(sr_client_result *out, sr_client_conn *k, const cJSON *doc,
                            sr_err *err);

/* error.check of a JSON error body {"error":{"check":..}} (the mock engine names its check
 * there), or NULL; borrowed from doc. */
const char *sr_client_body_check(const cJSON *doc);
/* (error.check, or "check" beside a {"detail": ..} body or a {"success": false, ..} body) */

/* The message of a non-2xx body: error.message of a JSON body, else its text (cut, one line). */
void sr_client_status_text(char *out, size_t cap, const char *body, size_t len, const cJSON *doc);

#endif /* SR_CLIENT_PRIV_H */
