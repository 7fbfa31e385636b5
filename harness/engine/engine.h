/*
 * engine: the state of one mock engine, independent of HTTP.
 *
 * Holds the routing oracle, the synthetic weight set (sr_weights) with the version the engine
 * reports, the fingerprints generation uses and those it held before its last update (for the
 * stale_prefix_cache fault), the fault plan, session turn counters (from X-Session-ID), request
 * counters and the weight-sync protocol state.
 *
 * Weight sync: the protocol-order guards of docs/reference/skyrl.md §8.3 (start while an update is
 * active, update or finish without start: SR_E_SYNC_ORDER, and the engine keeps serving); the
 * real receiver of both transports (described below at sr_engine_fetch); and a
 * synthetic apply that regenerates the weight set at a target version (sr_weights_reset), kept
 * for requests that name no sync_dir and carry no payload. Weights-layer faults act on every
 * path: partial_weight_apply (the listed MoE layer slots keep their old bytes, so exactly their
 * fingerprints stay old), version_not_bumped (bytes change, the reported version does not) and
 * checksum_mismatch (a payload is corrupted, or the apply refused, with SR_E_DELTA_CHECKSUM; the
 * engine stays on its version).
 *
 * Sessions: at most SR_ENGINE_MAX_SESSIONS are remembered; past that the table is cleared and
 * turn counting restarts (documented, not silent: the state reports session_resets).
 *
 * This header is the engine module's interface to its HTTP layer (server*.c, engine_control.c,
 * serve_gen.c). Its functions live in the engine's layered files: engine_state.c (the state and
 * the weight transitions every update path shares: sr_engine_version, sr_engine_note_fault,
 * sr_engine_restart_weights, sr_engine_generate_answered),
 * weights.c (the delta transport: sr_engine_fetch, sr_engine_update_delta), bucket.c (the
 * broadcast transport: sr_engine_bucket_*, sr_engine_sync_finish; its header line parsed in
 * bucket_header.c) and disk.c (safetensors checkpoints: sr_engine_load_disk) build on
 * engine_state.c;
 * engine.c (everything else) on top.
 *
 * Ownership: sr_engine_new copies the config (not its fault cJSON, which it parses).
 * Thread-safety: every function may be called from any thread (internal locks), except new/free.
 */
#ifndef SR_ENGINE_ENGINE_H
#define SR_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "spec/engine_config.h"
#include "engine_faults.h"
#include "gen.h"
#include "spec/endpoints.h"
#include "sync_req.h"
#include "sync_table.h"
#include "sr_buf.h"
#include "sr_err.h"
#include "sr_oracle.h"

#define SR_ENGINE_MAX_SESSIONS 6144
#define SR_ENGINE_SESSION_MAX  256 /* longest X-Session-ID kept, in bytes */

typedef struct sr_engine sr_engine;

int sr_engine_new(sr_engine **out, const sr_engine_config *cfg, sr_err *err);
void sr_engine_free(sr_engine *e);

const sr_engine_config *sr_engine_cfg(const sr_engine *e);
const sr_oracle *sr_engine_oracle(const sr_engine *e);
sr_faults *sr_engine_faults(sr_engine *e);

/*
 * Copies the current weight state into *cur and the previous one into *prev (if there was an
 * update; *has_prev says so). Both get newly allocated layer_fps (sr_gen_weights_release).
 */
int sr_engine_weights_now(sr_engine *e, sr_gen_weights *cur, sr_gen_weights *prev, int *has_prev,
                          sr_err *err);

/* The 1-based turn of a new request in `session` (NULL or "" -> 0, no session). */
int64_t sr_engine_session_turn(sr_engine *e, const char *session);

/* Forgets a session (POST /finish_session). Returns 1 if it was known. */
int sr_engine_session_finish(sr_engine *e, const char *session);

/* Counts a request to `ep`, returning the engine-wide ordinal (1-based) of requests to it. */
int64_t sr_engine_count(sr_engine *e, sr_endpoint ep);

/* Adds n to the clamped-logprob counter. */
void sr_engine_add_clamped(sr_engine *e, int64_t n);

/* ---- control plane state ---- */

void sr_engine_prefix_reset(sr_engine *e);
void sr_engine_set_init_info(sr_engine *e, const char *json);

/* ---- weight sync ---- */

/* Every protocol-order decision below is a cell of the engine's control-plane table
 * (sync_table.h, engines.sync_dialect); a refusal answers the cell's named error and the engine
 * keeps serving. */

/* Start a weight update (skyrl_start_weight_update, start_weight_update). */
int sr_engine_sync_start(sr_engine *e, sr_err *err);

/* A call that moves no data (an update of the synthetic kind, init, a version or weight check):
 * only the table's step, naming `method` (NULL: the plane's name). */
int sr_engine_sync_call(sr_engine *e, sr_sync_call c, const char *method, sr_err *err);

/*
 * Synthetic apply of `target` (0..SR_WEIGHTS_MAX_VERSION) with the weights-layer fault `f`
 * (NULL for none). On success *version receives the version the engine now reports.
 */
int sr_engine_apply_version(sr_engine *e, int64_t target, const sr_fault *f, int64_t *version,
                            sr_err *err);

/* The version the engine reports. */
int64_t sr_engine_version(sr_engine *e);

/* 1 once an update with the weights fault generate_fails_after_update was published (vllm-project/
 * vllm#57022, sgl-project/sglang#17107): the update was acknowledged, and from then on every
 * generate answers 500 and /health 503, as an engine whose parameters were left unloaded or whose
 * scheduler died. */
int sr_engine_unservable(sr_engine *e);

/*
 * ---- The real receiver (engine_state.c, weights.c, bucket.c) ----
 *
 * The engine holds two copies of its weights: the model (what it serves; its fingerprints feed
 * the oracle and the state document) and a stage, the local checkpoint, allocated at the first
 * real sync at content version 0. Applies write the stage while the engine keeps serving; a
 * commit then copies every stage tensor whose bytes differ into the model, except those of the
 * MoE layers a partial_weight_apply fault names, and the model's digests and fingerprints are
 * recomputed from the bytes it now holds. Only a successful commit changes the model, the
 * fingerprints and the reported version (unless version_not_bumped), so a failed sync leaves
 * the engine entirely on its old version.
 *
 * Delta (docs/reference/skyrl.md §8.2):
 *   POST /fetch_weights {"target_version": v, "sync_dir": d}: sr_delta_fetch into the stage with
 *     a receiver whose state lives in {d}/receiver-<engine id>/ or the init info's
 *     local_checkpoint_dir (created on the first fetch; the stage is reset to version 0 then,
 *     and again after a broadcast or disk load wrote it). Engines may share that folder: a
 *     fetch waits for its lock, and one that finds the folder at v already brings only its own
 *     stage there, leaving the folder as it is. The apply team is min(#payloads,
 *     pool_workers(cap 32, reserved 0)).
 *   POST /update_weights {"update_info": {"target_version": v, "version": v, "sync_dir": d}}:
 *     the receiver's validate_ready (SR_E_DELTA_VERSION unless it holds v), then the commit.
 *     Without "sync_dir" the synthetic apply above runs instead.
 * Broadcast (§8.3), between skyrl_start_weight_update and skyrl_finish_weight_update:
 *   POST /collective_rpc with Content-Type SR_ENGINE_BUCKET_CTYPE and the body
 *     <header>\n<bytes>
 *   where <header> is one line of JSON (at most SR_BUCKET_HEADER_MAX bytes):
 *     {"method":"update_weights_nccl","kwargs":{"update_info":{"names":[..],"dtype_names":[..],
 *      "shapes":[[..],..],"packed":true,"syncroll":{"target_version":v,"bucket":i,
 *      "sizes":[bytes,..],"checksums":["<xxh3-128, 32 hex>",..]}}}}
 *   and <bytes> the tensors' raw bytes concatenated in that order (exactly sum(sizes) bytes).
 *   In the vllm control plane the bucket is a POST /update_weights (between /start_weight_update
 *   and /finish_weight_update) whose header is vLLM's body {"update_info":{...same...}}.
 *   In the sglang plane it is a POST /update_weights_from_distributed whose header is SGLang's
 *   body {"names","dtypes","shapes","group_name","flush_cache","weight_version",
 *   "syncroll":{...}} (sgl_req.h); each such request is a whole update: the table steps update
 *   when the header arrives and finish when the bytes are in, and the request's own tensors are
 *   committed at its end under its target_version (no session, concurrent ones of other tensors
 *   commit apart; one naming a tensor another still arriving writes is refused
 *   SR_E_SYNC_CONCURRENT, so two updates never mix their bytes).
 *   Every name must be a tensor of the engine's set with the same dtype, shape and size, at
 *   most once per update. The body is not buffered: it streams into the stage as it arrives
 *   (like an NCCL receive, one stream per bucket; concurrent buckets are received in parallel,
 *   "threads" in the state then counts the most at once) and each tensor's checksum is verified
 *   at the end (SR_E_DELTA_CHECKSUM otherwise). Any failed bucket spoils the update. The
 *   engine's max_body_bytes does not bound a bucket: its tensors do.
 *   skyrl_finish_weight_update (kwargs may carry {"syncroll":{"target_version":v}}) ends the
 *   update in every case, and commits the tensors received only if no bucket failed and none is
 *   still arriving; otherwise it answers the first failure, or SR_E_SYNC_INCOMPLETE while a bucket
 *   arrives (that bucket is then refused SR_E_SYNC_INCOMPLETE too and writes nothing more), and
 *   the engine stays on its version: an update is applied whole or not at all (sync_table.h). A
 *   finish that names no version is guarded with its buckets' target_version.
 * Faults: a weights fault that fires on any sync request is remembered until the next commit
 * (partial_weight_apply, version_not_bumped). checksum_mismatch flips one bit of a payload: on
 * /fetch_weights in the first tensor the next manifest patches (the receiver's checksum fails,
 * its state stays in progress, and the next fetch resets and replays); on a bucket in its first
 * tensor; fired on start it corrupts the next bucket; on /update_weights or on a finish after
 * buckets it refuses the commit. A stall of a phase is the transport fault `stall` aimed at the
 * endpoint (and `nth` of the phase's request).
 *
 * /syncroll/v1/state gains "apply": {"transport", "max_workers" (pool_workers(32, 0)),
 * "publish_workers" (pool_workers(8, 0)), "payloads", "workers" and "threads" of the last
 * apply, "receiver_version", counters, "fetch_ms", "commit_ms"}; with ?tensors=1 also
 * "tensors": [{"name", "layer", "dtype", "shape", "digest"}] of the model.
 * (SR_ENGINE_BUCKET_CTYPE and SR_BUCKET_HEADER_MAX live in spec/endpoints.h: the trainer writes
 * buckets too.)
 */

/* Remembers a weights fault that fired on a sync request without a payload (start, or an update
 * of the synthetic kind) for the next commit or bucket. f NULL is a no-op. */
void sr_engine_note_fault(sr_engine *e, const sr_fault *f);

/* serve_before_sync (radixark/miles#1724): the engine comes back from a restart with its initial
 * checkpoint (the config's weight_version) and serves before any sync, under the version it held
 * (the fleet's): the fingerprints become the initial ones, the reported version stays. Takes
 * apply and mu. */
int sr_engine_restart_weights(sr_engine *e, sr_err *err);

/* restart_loses_group (NVIDIA-NeMo/RL#3944, radixark/miles#2244): the engine comes back from a
 * restart as a fresh process would: its initial checkpoint, reported as its initial version (the
 * version counter goes back; vLLM's label is "default" again), and no weight transfer group (the
 * control plane's state is uninit
 * again, the init info and the receiver's state are gone), so every update is refused until the
 * trainer inits the engine again. Takes apply and mu. */
int sr_engine_restart_fresh(sr_engine *e, sr_err *err);

/* Sleep level 2 (vLLM's POST /sleep?level=2 with the weights tag asleep) discards the model's
 * weights: sr_engine_discard_weights marks them gone, and what an update writes while they sleep
 * is lost with them. sr_engine_wake_weights, at the wake of the weights tag, maps the memory
 * again with nothing loaded into it: the engine serves its initial checkpoint (the config's
 * weight_version) under the version it holds, i.e. stale weights, until an update after the wake
 * (vLLM's reload_weights, a weight sync) writes the model (huggingface/trl#5312, #5313: a GRPO
 * trainer synced vLLM's level-2-slept weights before waking it, and not after). Take apply and
 * mu. */
void sr_engine_discard_weights(sr_engine *e);
int sr_engine_wake_weights(sr_engine *e, sr_err *err);

/* A generate was answered: counts down an ack_before_apply deferral, whose deferred layers apply
 * (fingerprints included, the version unchanged) when it reaches 0. No-op without one. */
void sr_engine_generate_answered(sr_engine *e);

/*
 * Disk (disk.c; SGLang's POST /update_weights_from_disk {"model_path": d}, issue #20: the data
 * plane only, the HTTP endpoint calls this): reads the safetensors checkpoint folder `dir`
 * (lib/sr_safetensors.h: model.safetensors or a full shard set; harness/sync/checkpoint.h writes
 * one per version as <dir>/v<version>/) into the stage with pread, min(tensors, pool_workers(cap
 * 32, reserved 0)) threads, then commits as the other transports do and reports version `target`
 * (-1: the checkpoint's __metadata__.syncroll_version; both given must agree, else
 * st.tensor_mismatch). Before any byte is read every tensor the engine holds must be in the
 * checkpoint with the same dtype and shape (st.missing_tensor, st.tensor_mismatch) and the
 * checkpoint must hold no other (st.extra_tensor); a malformed file is its st.* error. Any
 * failure leaves the model, the fingerprints and the version as they were (the stage is spoilt,
 * so the delta receiver resets at its next fetch). Weights faults apply as on the other paths;
 * checksum_mismatch refuses the load (SR_E_DELTA_CHECKSUM). The state's "apply" reports
 * transport "disk", payloads = tensors, workers, and fetch_ms = the read. The path is not
 * confined to server.sync_dirs (the engine only reads it); the HTTP layer decides what it may
 * name. *version receives the version reported afterwards.
 */
int sr_engine_load_disk(sr_engine *e, const char *dir, int64_t target, const sr_fault *f,
                        int64_t *version, sr_err *err);

/* Longest path a request may name (sync_dir, model_path), in bytes. */
#define SR_ENGINE_PATH_MAX 3800

/* Confines a path a request names (`what` in messages: "sync_dir", "model_path") to the folders
 * of server.sync_dirs: out[SR_ENGINE_PATH_MAX + 1] receives its canonical form, which the caller
 * then uses; SR_E_ENGINE_FORBIDDEN_PATH outside them (or when the config names none),
 * SR_E_ENGINE_REQUEST when longer than SR_ENGINE_PATH_MAX. (weights.c) */
int sr_engine_confine(char *out, sr_engine *e, const char *path, const char *what, sr_err *err);

/* POST /fetch_weights; *fetched receives the receiver's version afterwards. */
int sr_engine_fetch(sr_engine *e, int64_t target, const char *sync_dir, const sr_fault *f,
                    int64_t *fetched, sr_err *err);

/* POST /update_weights with a sync_dir; *version receives the reported version. */
int sr_engine_update_delta(sr_engine *e, int64_t target, const char *sync_dir, const sr_fault *f,
                           int64_t *version, sr_err *err);

/*
 * One broadcast bucket, received as it streams: begin when the request starts, feed every piece
 * of the body (errors are remembered and the rest is drained), end when the body is complete
 * (f: the weights fault picked for the request; returns the bucket's outcome and frees it), or
 * abort if the connection goes away first. The tensors are claimed and copied into the stage as
 * the bytes arrive, each hashed while hot, and verified at the end. `call` names the call the
 * bucket arrived on in every message about it ("update_weights_nccl", "POST /update_weights",
 * "POST /update_weights_from_distributed"; copied, at most 63 bytes kept); NULL: the plane's name
 * of its update call (sync_table.h).
 */
typedef struct sr_bucket_rx sr_bucket_rx;
int sr_engine_bucket_begin(sr_bucket_rx **out, sr_engine *e, const char *call, sr_err *err);
void sr_engine_bucket_feed(sr_bucket_rx *b, const char *p, size_t n);
int sr_engine_bucket_end(sr_bucket_rx *b, const sr_fault *f, sr_err *err);
void sr_engine_bucket_abort(sr_bucket_rx *b);

/*
 * update_weights_nccl / update_weights_ipc as JSON only (no bucket bytes, no synthetic
 * syncroll_version): nothing can move, so SR_E_SYNC_NO_TRANSFER, and the active update is
 * spoiled (finish answers the same failure and commits nothing); SR_E_SYNC_ORDER without an
 * active update.
 */
int sr_engine_sync_no_transfer(sr_engine *e, const char *method, sr_err *err);

/* skyrl_finish_weight_update; target -1 when the request names none. */
int sr_engine_sync_finish(sr_engine *e, int64_t target, const sr_fault *f, int64_t *version,
                          sr_err *err);

/* ---- vLLM's weight checker and version (engine_checker.c) ---- */

/* Appends {"checksums":{name: "<xxh3-128, 32 hex>"}} of every tensor the model holds. */
int sr_engine_checksums_json(sr_buf *b, sr_engine *e, sr_err *err);

/* Appends {"match": bool, "mismatches": [names]}: the model's tensors whose digest differs from
 * the baseline's or that it does not name, then the baseline's names the model does not hold. */
int sr_engine_compare_json(sr_buf *b, sr_engine *e, const sr_checker_req *q, sr_err *err);

/* weight_checker reset: overwrites the model with bytes no sync publishes (the content of version
 * SR_WEIGHTS_MAX_VERSION), as vLLM overwrites its weights with random values; the fingerprints
 * follow, the reported version does not move. */
int sr_engine_weights_reset(sr_engine *e, sr_err *err);

/* update_weight_version: the table's set_version step (backwards if below the held version),
 * then the reported version becomes `version` (the weights do not change). */
int sr_engine_set_version(sr_engine *e, int64_t version, sr_err *err);

/*
 * vLLM's opaque weight version (engines.sync_version "vllm#50902"; vllm#49040): every engine
 * starts with "default", and a label is published only after the call naming it succeeded (a
 * finish_weight_update, an update_weight_version); a failed finish publishes nothing and a finish
 * naming none keeps the label. sr_engine_version_label copies the current one into
 * out[SR_SYNC_REQ_LABEL_MAX]; sr_engine_publish_label makes `label` (1..SR_SYNC_REQ_LABEL_MAX-1
 * bytes; "" is ignored) the current one. sr_engine_set_label is update_weight_version for a label
 * that names no integer version: the table's set_version step, then the label (the integer
 * version and the weights do not move).
 */
void sr_engine_version_label(sr_engine *e, char *out);
void sr_engine_publish_label(sr_engine *e, const char *label);
int sr_engine_set_label(sr_engine *e, const char *label, sr_err *err);

/* What the HTTP layer knows, for the state document. */
typedef struct sr_engine_live {
    int paused;
    const char *pause_mode;            /* "keep", "abort", "wait" or NULL */
    int sleep_weights, sleep_kv_cache; /* 1 while that memory tag sleeps */
    int64_t sleep_level;               /* the level of the last /sleep (0 before any) */
    int64_t inflight, held, stalled;
    /* connections: busy with a request (at most max_active), requests queued for a slot (at
     * most max_queued; the most at once), requests refused engine.connection_limit */
    int64_t active, max_active, queued, max_queued, queued_peak, refused;
    int tensors; /* 1: add every model tensor's name, layer and digest (?tensors=1) */
} sr_engine_live;

/* Appends the /syncroll/v1/state document. */
int sr_engine_state_json(sr_buf *b, sr_engine *e, const sr_engine_live *live, sr_err *err);

#endif /* SR_ENGINE_ENGINE_H */
