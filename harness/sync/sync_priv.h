/* Private to harness/sync*.c: the orchestrator's layout, its HTTP fan-out and the helpers the
 * files share. Not an interface. */
#ifndef SR_SYNC_PRIV_H
#define SR_SYNC_PRIV_H

#include <curl/curl.h>

#include "sr_buf.h"
#include "sr_delta.h"
#include "sync.h"

/* ---- HTTP fan-out (sync_http.c) ---- */

/* One piece of a request body (borrowed). */
typedef struct sync_seg {
    const void *p;
    size_t n;
} sync_seg;

/* One request to one engine, and what came of it. */
typedef struct sync_req {
    int engine;
    int get;           /* 1: GET, else POST */
    char path[192];    /* with its query */
    const char *ctype; /* NULL: application/json */
    const sync_seg *segs;
    size_t nseg;
    /* progress of the body (internal) */
    size_t seg_i, seg_off;
    /* outcome */
    int started, done;
    int code; /* 0, SR_E_SYNC_DEADLINE, _ORDER, _CHECKSUM or _FAILED */
    long status;
    sr_buf resp; /* the response body */
    char msg[SR_ERR_MSG_MAX];
    double start_ms, end_ms;
} sync_req;

typedef struct sync_http sync_http;

int sync_http_new(sync_http **out, const char *const *urls, size_t n, sr_err *err);
void sync_http_free(sync_http *h);
const char *sync_http_url(const sync_http *h, int engine);

/*
 * Runs reqs: each engine's requests in array order, at most `inflight` at a time per engine, the
 * engines concurrently. After a failure on an engine its remaining requests are not started
 * (done = 0). Every request still running at deadline_ms (absolute, sync_now_ms clock) is cut
 * and gets SR_E_SYNC_DEADLINE, as does every request of a healthy engine not started by then.
 * budget_ms is the phase's deadline as a duration, for messages. Returns 0, or
 * SR_E_NOMEM/SR_E_INVAL when it could not run.
 */
int sync_http_run(sync_http *h, sync_req *reqs, size_t n, int inflight, double deadline_ms,
                  int64_t budget_ms, sr_err *err);

/* Releases the response buffers of reqs[0..n). */
void sync_reqs_release(sync_req *reqs, size_t n);

double sync_now_ms(void);

/* ---- the orchestrator ---- */

/* A bucket of the broadcast (sync_bcast.c). */
typedef struct sync_bucket {
    size_t first, count; /* tensor indices [first, first + count) */
    sr_buf header;       /* the JSON line and its '\n' */
    sync_seg *segs;      /* header, then every tensor */
    uint64_t bytes;      /* tensor bytes */
} sync_bucket;

struct sr_sync {
    sr_sync_opts o;
    char *model;
    char *sync_dir;
    size_t n;
    sync_http *http;
    sr_weights *w;   /* the trainer's weights */
    int64_t content; /* content version of w's bytes (-1 once SAME_BYTES changed nothing) */
    sr_delta_publisher *pub;
    sr_delta_tensor *view; /* w's tensors as the publisher sees them */
    int64_t version;       /* the counter */
    /* What each engine reported at the last verification (initially: the initial version's
     * fingerprints): version, then per engine num_layers layer fingerprints and the global. */
    int64_t *known_version;
    uint64_t *known_fp;
    int inited;          /* broadcast: init_weight_transfer_engine done */
    double t0_ms;        /* when the current sync started */
    int64_t last_target; /* the highest version a sync was run to (initially the initial one) */
    int pool;            /* sr_pool_workers(cap, reserved) */
    char salt[192];
    sync_bucket *buckets;
    size_t n_buckets;
};

/* Adds a check to res (dropped past SR_SYNC_MAX_CHECKS; not repeated for an engine that already
 * has one of that name). */
void sync_check(sr_sync_result *res, int code, int engine, int layer, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The deadline of phase p, in ms. */
int64_t sync_deadline(const sr_sync *s, sr_sync_phase p);

/* When phase p, starting now, must end (sync_now_ms clock): its own deadline, or the sync's
 * total deadline if that comes first (not for finish, resume and verify); *budget_ms receives
 * the deadline that applies, for messages. */
double sync_phase_end(const sr_sync *s, sr_sync_phase p, int64_t *budget_ms);

/* Plans the buckets of the current bytes for version `target` (sync_bcast.c). */
int sync_bcast_plan(sr_sync *s, int64_t target, sr_sync_result *res, sr_err *err);

/* Sends every bucket to every engine whose `ok` is set; clears ok on failure. */
int sync_bcast_send(sr_sync *s, int *ok, sr_sync_result *res, sr_err *err);

void sync_bcast_free(sr_sync *s);

/*
 * Verifies every engine (sync_verify.c) against the published state (target, the trainer's
 * fingerprints now) and, when the sync did not complete, also accepts the engine's old state
 * (known_version, known_fp); then records what each engine reported as its known state.
 */
int sync_verify(sr_sync *s, sr_sync_result *res, int64_t target, sr_err *err);

#endif /* SR_SYNC_PRIV_H */
