/*
 * Private to harness/sync/: the orchestrator's layout and what each file offers the others. The
 * files form layers, none calling a file above it: phase.c (what every phase shares: names,
 * deadlines, findings, outcome codes) below bcast.c (the broadcast's buckets) and sync_verify.c
 * (the verification), those below sync.c (the orchestrator and its public API), that below step.c
 * (the runner's step). All HTTP goes through client/fanout.h. Not an interface.
 */
#ifndef SR_SYNC_PRIV_H
#define SR_SYNC_PRIV_H

#include "client/fanout.h"
#include "sr_buf.h"
#include "sr_delta.h"
#include "sync.h"

/* ---- the orchestrator ---- */

/* A bucket of the broadcast (bcast.c). */
typedef struct sync_bucket {
    size_t first, count; /* tensor indices [first, first + count) */
    sr_buf header;       /* the JSON line and its '\n' */
    sr_fanout_seg *segs; /* header, then every tensor */
    uint64_t bytes;      /* tensor bytes */
} sync_bucket;

struct sr_sync {
    sr_sync_opts o;
    char *model;
    char *sync_dir;
    char disk_path[4200]; /* disk transport: the folder of the version being synced */
    size_t n;
    sr_fanout *fan;
    sr_weights *w;   /* the trainer's weights */
    int64_t content; /* content version of w's bytes (-1 once SAME_BYTES changed nothing) */
    sr_delta_publisher *pub;
    sr_delta_tensor *view; /* w's tensors as the publisher sees them */
    int64_t version;       /* the counter */
    /* What each engine reported at the last verification (initially: the initial version's
     * fingerprints): version, then per engine num_layers layer fingerprints and the global. */
    int64_t *known_version;
    uint64_t *known_fp;
    unsigned char inited[SR_CLIENT_MAX_ENGINES]; /* the plane's init done, per engine */
    double t0_ms;                                /* when the current sync started */
    int64_t last_target; /* the highest version a sync was run to (initially the initial one) */
    int pool;            /* sr_pool_workers(cap, reserved) */
    char salt[192];
    sync_bucket *buckets;
    size_t n_buckets;
    /* Disk transport: the tensor digests (hi, lo per tensor) of the last version every engine
     * loaded and verified (disk_held_ok), and whether this sync's bytes equal them and every
     * engine still reports their fingerprints (disk_same: then no folder is written and nothing
     * loaded, only the version set). */
    uint64_t *disk_held;
    int disk_held_ok, disk_same;
};

/* The canonical xxh3-128 hex of a digest (high 64 bits first) into out[32], no NUL: written by
 * hand, as a plan of 1,002 tensors formats as many (printf was most of that time). */
static inline void sync_digest_hex(char *out, uint64_t hi, uint64_t lo)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[i] = hex[(hi >> (60 - 4 * i)) & 15];
        out[16 + i] = hex[(lo >> (60 - 4 * i)) & 15];
    }
}

/* ---- phase.c ---- */

/* Adds a check to res (dropped past SR_SYNC_MAX_CHECKS; not repeated for an engine that already
 * has one of that name). */
void sync_check(sr_sync_result *res, int code, int engine, int layer, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The deadline of phase p, in ms. */
int64_t sync_deadline(const sr_sync *s, sr_sync_phase p);

/* When phase p, starting now, must end (sr_clock_ms clock): its own deadline, or the sync's
 * total deadline if that comes first (not for finish, resume and verify); *budget_ms receives
 * the deadline that applies, for messages. */
double sync_phase_end(const sr_sync *s, sr_sync_phase p, int64_t *budget_ms);

/* The check code of a fan-out request's outcome: 0; sync.deadline for the client's deadline;
 * sync.protocol_order, sync.checksum or sync.no_transfer when the engine's error body names
 * sync.protocol_order, delta.checksum or sync.no_transfer; sync.engine_failed for any other
 * failure. */
int sync_code(const sr_fanout_req *r);

/*
 * The calls of one control plane (engines.sync_dialect), as the orchestrator makes them: a NULL
 * path is a call the plane does not have. Bodies with a format take the arguments named.
 */
typedef struct sync_plane {
    const char *init_path, *init_fmt;      /* per engine; fmt: rank_offset, world_size (%zu) */
    const char *pause_path, *pause_body;   /* generation pauses, in-flight requests kept */
    const char *reset_path, *reset_body;   /* the prefix cache */
    const char *start_path, *start_body;   /* start an update (NULL: each bucket is whole) */
    const char *bucket_path, *bucket_what; /* a bucket's route, and its name in findings */
    const char *bucket_open;               /* the header up to its lists */
    const char *dtype_key;                 /* the dtypes list's key */
    const char *bucket_mid;                /* after the lists, before "packed"; fmt: target */
    const char *bucket_close;              /* after the syncroll object */
    const char *finish_path, *finish_fmt;  /* fmt: target (%lld) */
    int finish_all_ok;                     /* finish goes to engines all of whose buckets landed,
                                            * not to every started one (no update to end) */
    const char *resume_path, *resume_body;
    int compare; /* the plane has vLLM's weight checker: compare after the sync */
} sync_plane;

/* The calls of plane d (a valid sr_sync_dialect). */
const sync_plane *sync_plane_of(sr_sync_dialect d);

/* ---- bcast.c ---- */

/* Plans the buckets of the current bytes for version `target`. */
int sync_bcast_plan(sr_sync *s, int64_t target, sr_sync_result *res, sr_err *err);

/* The buckets in flight per engine: opts.send_workers, else the pool size, at most
 * SR_SYNC_MAX_INFLIGHT. */
int sync_bcast_inflight(const sr_sync *s);

/* Sends every bucket to every engine whose `ok` is set; clears ok on failure. */
int sync_bcast_send(sr_sync *s, int *ok, sr_sync_result *res, sr_err *err);

void sync_bcast_free(sr_sync *s);

/* ---- sync_checker.c ---- */

/* The vllm control plane only: POST /weight_checker {"action":"compare","baseline":{the
 * trainer's digests}} on every engine; a mismatch is sync.partial_update naming the tensors, a
 * refusal its check. Returns a harness error only. */
int sync_compare_weights(sr_sync *s, sr_sync_result *res, sr_err *err);

/* ---- sync_verify.c ---- */

/*
 * Verifies every engine against the published state (target, the trainer's
 * fingerprints now) and, when the sync did not complete, also accepts the engine's old state
 * (known_version, known_fp); then records what each engine reported as its known state.
 */
int sync_verify(sr_sync *s, sr_sync_result *res, int64_t target, sr_err *err);

/* *hold = 1 when every engine's state reports the fingerprints of the trainer's weights as they
 * are now (the disk transport's skip, which must not trust a restarted engine); a request that
 * fails or answers otherwise gives 0, not an error. SR_E_NOMEM only. */
int sync_engines_hold(sr_sync *s, int *hold, sr_err *err);

#endif /* SR_SYNC_PRIV_H */
