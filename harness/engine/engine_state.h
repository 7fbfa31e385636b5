/*
 * engine_state: the state of one mock engine (struct sr_engine) and the transitions of its
 * weights that every update path shares: the stage, pending weights faults, the commit of the
 * stage into the model and the publication of the model's fingerprints and version. The lowest
 * layer of the engine: engine.c (lifecycle, sessions, protocol guards, synthetic apply, state
 * document), weights.c (the delta receiver), bucket.c (broadcast buckets) and disk.c (safetensors
 * checkpoints) build on it, and it uses none of them, nor their headers (engine.h included). Not
 * an interface: nothing outside
 * harness/engine includes it. sr_engine_version and sr_engine_note_fault are declared here for
 * the engine's own files and again in engine.h for its HTTP layer.
 *
 * Weight copies. `weights` is the model: the bytes the engine serves from, whose fingerprints
 * (global_fp, layer_fps) generation uses and the state document reports. `stage` is the local
 * checkpoint (allocated at the first real sync, at content version 0): the delta receiver
 * patches it while the engine keeps serving, broadcast buckets are written into it, and a
 * commit copies it into the model (skipping the layers a partial_weight_apply fault names) and
 * recomputes the model's fingerprints from the bytes it now holds.
 *
 * Locking: `mu` guards every member marked (mu); `apply` serialises every writer of `weights`,
 * `stage` and the receiver (fetch, bucket, commit, synthetic apply). Buckets therefore apply one
 * at a time, but a bucket's body is received (by its own HTTP thread) while another applies.
 * Lock order: apply, then mu.
 */
#ifndef SR_ENGINE_ENGINE_STATE_H
#define SR_ENGINE_ENGINE_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "spec/engine_config.h"
#include "engine_faults.h"
#include "sync_req.h" /* SR_SYNC_REQ_LABEL_MAX */
#include "sync_table.h"
#include "sr_delta.h"
#include "sr_err.h"
#include "sr_oracle.h"
#include "sr_weights.h"

#define SR_ENGINE_SKIP_WORDS (SR_WEIGHTS_MAX_LAYERS / 64)

/* MoE layer slots a commit leaves stale (partial_weight_apply). */
typedef struct sr_skip_set {
    int any;
    uint64_t bits[SR_ENGINE_SKIP_WORDS];
} sr_skip_set;

/* The same opaque type as engine.h's (C11 allows the repeated typedef). */
typedef struct sr_engine sr_engine;

/* A remembered X-Session-ID (engine.c). */
typedef struct session_slot session_slot;

/* What the receiver and the last apply did, for the state document. (mu) */
typedef struct sr_apply_stats {
    int max_workers;       /* pool_workers(cap 32, reserved 0): the apply ceiling */
    int publish_workers;   /* pool_workers(cap 8, reserved 0): the reference publisher's pool */
    const char *transport; /* "delta", "broadcast", "disk", "synthetic", "reset" (weight_checker),
                              "wake_without_reload" (a wake after sleep level 2),
                              "restart" (serve_before_sync) or NULL before any apply */
    int64_t payloads;      /* payloads of the last fetch's last version, or tensors of the last
                              bucket */
    int workers;           /* min(payloads, max_workers) used for it; 0 when nothing applied */
    int threads;           /* team size actually obtained */
    int64_t fetches, fetch_failures, buckets, bucket_failures, commits, committed_tensors;
    int64_t receiver_version; /* -1 before the first fetch */
    int64_t resets;           /* receiver resets (failure recovery, first use) */
    double fetch_ms, commit_ms;
} sr_apply_stats;

/* The broadcast update in progress (between start and finish). (mu) */
typedef struct sr_bcast {
    unsigned char *received; /* per tensor: 1 once a bucket delivered it in this update */
    int64_t target;          /* -1 until a bucket names it */
    int64_t buckets;
    int64_t streams;     /* buckets of this update being received now (header parsed) */
    int64_t heading;     /* buckets begun while this update was active whose header line is
                            still arriving: a finish refuses while streams or heading is non-zero */
    int64_t open;        /* bucket requests between sr_engine_bucket_begin and the end of
                            sr_engine_bucket_end, any plane and state: while one is open no other
                            weight writer runs (sr_engine_writers_idle_locked) */
    unsigned char *busy; /* per tensor: a bucket still arriving writes it (any plane) */
    uint64_t gen;        /* the update's generation: a start or a discarding finish moves it, so
                            a bucket of an update that ended knows it (atomic versions) */
    int failed;          /* a bucket failed: finish refuses to commit */
    int fail_code;       /* its sr_code */
    char fail_msg[SR_ERR_MSG_MAX];
    int corrupt; /* a checksum_mismatch fault fired on a request without a payload */
} sr_bcast;

/* ack_before_apply: the tensors of the deferred layer slots, holding the old bytes between the
 * snapshot and the publish, the new ones from the publish until they apply. */
typedef struct sr_deferred_tensor {
    size_t index;
    void *bytes;
    size_t n;
} sr_deferred_tensor;

typedef struct sr_deferred {
    sr_deferred_tensor *t;
    size_t n;
} sr_deferred;

struct sr_engine {
    sr_engine_config cfg;
    sr_oracle *oracle;
    sr_weights *weights; /* the model */
    sr_faults *faults;
    pthread_mutex_t mu;                        /* everything marked (mu) */
    pthread_mutex_t apply;                     /* serialises weight writers */
    int64_t version;                           /* (mu) reported */
    char version_label[SR_SYNC_REQ_LABEL_MAX]; /* (mu) vLLM's opaque version; "": "default" */
    uint64_t global_fp, prev_global_fp;        /* (mu) */
    uint64_t *layer_fps, *prev_layer_fps;      /* (mu) */
    int64_t prev_version;                      /* (mu) */
    int has_prev;                              /* (mu) */
    sr_sync_state sync_state;                  /* (mu) the control plane's state (sync_table.h) */
    int64_t sync_starts, sync_finishes, sync_applies, sync_order_errors; /* (mu) */
    int64_t prefix_resets;                                               /* (mu) */
    char *init_info;                                                     /* (mu) */
    char *init_local_dir; /* (mu) init_info.local_checkpoint_dir (the receiver's state), or NULL */
    session_slot *sessions; /* (mu) */
    size_t n_sessions, n_used;
    int64_t session_resets;
    _Atomic int64_t requests[SR_EP_COUNT];
    _Atomic int64_t clamped;
    /* the real receiver (apply) */
    sr_weights *stage;           /* NULL until the first real sync */
    sr_delta_tensor *stage_view; /* the stage's tensors as the delta receiver sees them */
    int stage_pristine;          /* 1 while the stage holds content version 0 untouched */
    int stage_foreign;           /* a broadcast wrote the stage: the receiver must reset */
    sr_delta_receiver *rx;
    char *rx_sync_dir;           /* the sync_dir the receiver was made for */
    char *rx_state_dir;          /* the folder of the receiver's state */
    sr_skip_set pend_skip;       /* (mu) weights faults waiting for the next commit */
    int pend_not_bumped;         /* (mu) */
    int pend_regress;            /* (mu) version_regress waiting for the next commit */
    int pend_fail_partial;       /* (mu) partial_apply_on_error, likewise (slots in pend_skip) */
    int pend_publish_failed;     /* (mu) publish_after_failed_chunk: this update's finish commits
                                    and publishes even after a failed chunk */
    int pend_unservable;         /* (mu) generate_fails_after_update waiting for the next commit */
    _Atomic int unservable;      /* generate_fails_after_update applied: generates fail */
    int weights_discarded;       /* (mu) a level-2 sleep dropped the weights; until the wake */
    sr_skip_set pend_defer;      /* (mu) ack_before_apply's layer slots for the next commit */
    int64_t pend_defer_requests; /* (mu) */
    sr_deferred defer;           /* (apply) */
    _Atomic int64_t defer_left;  /* generates to answer before `defer` applies; 0: nothing */
    sr_bcast bc;                 /* (mu) */
    sr_apply_stats st;           /* (mu) */
};

/* ---- the transitions every update path shares (engine_state.c) ---- */

/* 0 when a weight writer other than a bucket (disk load, delta fetch and update, the synthetic
 * apply, the weight checker's reset) may write: no bucket request is open and no broadcast update
 * holds accepted buckets that its finish has yet to commit. Otherwise SR_E_SYNC_CONCURRENT naming
 * `call`, so a bucket's verified bytes are never changed before its commit and a writer never
 * commits a bucket's half. Called with mu held (and apply, which the writer keeps while it
 * writes, so no bucket byte reaches the stage meanwhile). */
int sr_engine_writers_idle_locked(sr_engine *e, const char *call, sr_err *err);

/* sr_engine_writers_idle_locked taking mu. Called with apply held. */
int sr_engine_writers_idle(sr_engine *e, const char *call, sr_err *err);

/* The version the engine reports. (takes mu) */
int64_t sr_engine_version(sr_engine *e);

/* 1 once an update with generate_fails_after_update was published: generates fail. (atomic) */
int sr_engine_unservable(sr_engine *e);

/* Remembers a weights fault that fired on a sync request without a payload (start, or an update
 * of the synthetic kind) for the next commit or bucket. f NULL is a no-op. (takes mu) */
void sr_engine_note_fault(sr_engine *e, const sr_fault *f);

/* serve_before_sync's restart on the initial checkpoint (engine.h). (takes apply and mu) */
int sr_engine_restart_weights(sr_engine *e, sr_err *err);

/* restart_loses_group's restart of a fresh process (engine.h). (takes apply and mu) */
int sr_engine_restart_fresh(sr_engine *e, sr_err *err);

/* Sleep level 2 and the wake after it (engine.h). (take mu; the wake takes apply first) */
void sr_engine_discard_weights(sr_engine *e);
int sr_engine_wake_weights(sr_engine *e, sr_err *err);

/* ack_before_apply's countdown (engine.h). (takes apply and mu) */
void sr_engine_generate_answered(sr_engine *e);

/* Sets up the apply statistics (pool sizes) and the broadcast session at engine creation. */
int sr_engine_sync_init(sr_engine *e, sr_err *err);

/* Frees the stage, the receiver and the broadcast session. */
void sr_engine_sync_release(sr_engine *e);

/* Allocates the stage (content version 0) and its receiver view if needed. Called with apply
 * held. */
int sr_engine_stage_ensure(sr_engine *e, sr_err *err);

/* Adds fault f's layers (partial_weight_apply; none = the last slot) to `s`. */
void sr_skip_add_fault(sr_skip_set *s, const sr_fault *f, int num_layers);

/* 1 if MoE layer slot `layer` (>= 0) is in `s`. */
int sr_skip_has(const sr_skip_set *s, int layer);

/* The weights faults one commit applies: the layer slots it skips, whether the version stays
 * (version_not_bumped), whether the stale checkpoint is loaded instead (version_regress), the
 * layer slots whose apply is deferred (ack_before_apply), whether the update fails with the rest
 * applied (partial_apply_on_error, its slots in `skip`). */
typedef struct sr_pending {
    sr_skip_set skip;
    int not_bumped;
    int regress;
    int fail_partial;       /* partial_apply_on_error: the update fails after its commit */
    int unservable;         /* generate_fails_after_update: serving fails once it is published */
    sr_skip_set defer;      /* ack_before_apply: layer slots applied only after ... */
    int64_t defer_requests; /* ... this many more generates are answered */
} sr_pending;

/* Takes the pending commit faults, merged with `f`, and clears them. (takes mu) */
void sr_engine_take_pending(sr_engine *e, const sr_fault *f, sr_pending *p);

/* Starts a broadcast session: clears the received set. Called with mu held. */
void sr_engine_bcast_begin_locked(sr_engine *e);

/* Ends the session's buckets still arriving without applying them (a finish while one arrives):
 * the generation moves on, so each of them stops writing the stage and is answered
 * sync.incomplete_update; their tensors are free again. Called with mu held. */
void sr_engine_bcast_discard_locked(sr_engine *e);

/*
 * Looks call `c` up in the table of the engine's control plane at its current state and moves to
 * the cell's next state. A refusal counts a protocol error and fills err with the cell's code and
 * message, naming `method` (NULL: the plane's name of the call). Called with mu held.
 */
int sr_engine_sync_step_locked(sr_engine *e, sr_sync_call c, const char *method, sr_err *err);

/* Spoils the active broadcast update with its first failure (code, message): finish will answer
 * it and commit nothing. No-op without an active update or after an earlier failure. Called with
 * mu held. */
void sr_engine_bcast_spoil_locked(sr_engine *e, int code, const char *msg);

/* Publishes the model's fingerprints and `target` (unless not_bumped) after a commit: the old
 * ones become the previous weights. Called with apply held; takes mu. */
void sr_engine_publish_model(sr_engine *e, int64_t target, int not_bumped, const char *transport);

/* Publishes a committed update to `target` with the pending faults `p` (sr_engine_publish_model).
 * version_regress (marin-community/marin#1829, a stale checkpoint accepted): the engine then
 * loads its stale checkpoint instead, the initial weights (engine config weight_version), and
 * reports that version, lower than the one it held after an earlier sync; the strict receiver
 * would refuse a finish naming it (finish_backwards, sync.version_backwards), the faulty one
 * takes it. partial_apply_on_error (sgl-project/sglang-omni#784): the fingerprints of what was
 * committed are published, the version stays, and the update fails (SR_E_SYNC_FAILED). Called with
 * apply held; takes mu. */
int sr_engine_publish_update(sr_engine *e, int64_t target, const sr_pending *p,
                             const char *transport, sr_err *err);

/* ack_before_apply (modelscope/ms-swift#10207), before the commit of an update with pending faults
 * `p`: applies an earlier deferral still waiting, then snapshots the current (old) bytes of the
 * tensors of p's deferred layer slots; sr_engine_publish_update puts them back and keeps the new
 * ones until p->defer_requests generates are answered (sr_engine_generate_answered). Called with
 * apply held; takes mu. */
int sr_engine_defer_save_locked(sr_engine *e, const sr_pending *p, sr_err *err);

/*
 * Copies every stage tensor whose bytes differ from the model's into the model (only those with
 * only[i] set, when `only` is not NULL), except the tensors of the layers in `skip`; the model
 * recomputes each written tensor's digest and its layer's fingerprint. Called with apply held.
 */
int sr_engine_commit_locked(sr_engine *e, const unsigned char *only, const sr_skip_set *skip,
                            sr_err *err);

#endif /* SR_ENGINE_ENGINE_STATE_H */
