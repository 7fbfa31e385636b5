/*
 * sync: trainer-side weight-sync orchestration against a set of engines (skyrl.md §8.2,
 * §8.3), with a deadline on every phase and verification after every sync.
 *
 * The trainer holds a synthetic weight set (sr_weights) built from the engines' spec. A sync to
 * target version T sets those bytes to content version T (normally; see sr_sync_run), publishes
 * them, drives every engine through the protocol, always resumes, then verifies.
 *
 * Delta (docs/reference/skyrl.md §8.2):
 *   gather    the trainer's bytes at each version to publish
 *   publish   sr_delta_publish into opts.sync_dir of every version P+1 .. T not yet published
 *             (P = the last published; the delta store needs consecutive versions), with
 *             sr_pool_workers(workers_cap, workers_reserved) threads (the reference: cap 8,
 *             reserved 0)
 *   fetch     POST /fetch_weights {"target_version":T,"sync_dir":d} on every engine (they apply
 *             while still serving); a failure here ends the sync before any pause
 *   pause     POST /pause?mode=keep
 *   reset_cache POST /reset_prefix_cache {"reset_running_requests":true}
 *   start     POST /collective_rpc skyrl_start_weight_update
 *   update    POST /update_weights {"update_info":{"target_version":T,"version":T,"sync_dir":d}}
 *   finish    POST /collective_rpc skyrl_finish_weight_update
 *   resume    POST /resume, ALWAYS, whatever failed before (also after a failed fetch)
 *   verify    GET /syncroll/v1/state on every engine (see Verification)
 * Broadcast (§8.3, carried over HTTP): gather; publish = planning buckets of at most
 * opts.bucket_bytes (whole tensors in index order; a larger tensor travels alone) with their
 * xxh3-128 checksums; init (POST /init_weight_transfer_engine, on the first sync only); pause;
 * reset_cache; start; update = every bucket to every engine as update_weights_nccl with its
 * bytes (engine.h documents the body), opts.send_workers buckets in flight per engine and the
 * engines in parallel; finish (kwargs {"syncroll":{"target_version":T}}); resume; verify.
 * Once start succeeded on an engine, finish is always sent to it (even after a failed update),
 * so no engine is left with an active update unless finish itself fails; update runs only if
 * start succeeded everywhere. Each HTTP phase runs on every engine concurrently.
 *
 * Deadlines: every phase has one (opts.phase_deadline_ms[p], else opts.deadline_ms), and the
 * sync may have a total one (opts.total_deadline_ms). An HTTP phase's requests are cut at the
 * first that applies (sync.deadline naming the engine, the phase and the deadline); a local
 * phase (gather, publish) that overran is reported the same way after it ends. A phase that
 * fails ends the sequence (finish for started engines, resume and verify still run).
 *
 * Checks (sr_check from result.h, names from lib/sr_err.h), at most SR_SYNC_MAX_CHECKS kept:
 *   sync.deadline        a phase did not complete within its deadline
 *   sync.protocol_order  an engine refused a phase as out of order (start while active, ...)
 *   sync.checksum        an engine refused a payload whose checksum did not match
 *   sync.no_transfer     an engine refused an update call that would move no bytes
 *   sync.wire_version    an engine refused a request in the other form of vLLM's API (opts.api)
 *   sync.engine_failed   a phase failed on an engine otherwise (status, transport, refusal)
 *   sync.version_skew    after the sync an engine reports another version than it should
 *   sync.partial_update  after the sync an engine's bytes differ from the published ones, naming
 *                        the MoE layers (slot and global index) and the tensors
 *
 * Verification. After a completed sync every engine must report version T and hold the
 * published fingerprints (global and per layer); a layer or global mismatch fetches the engine's
 * per-tensor digests (?tensors=1) to name the tensors. After a failed sync every engine must
 * hold either its old state (the version and fingerprints it reported at the previous
 * verification; initially the initial version's) or the new one, never a mixture: a
 * half-applied update is sync.partial_update, fingerprints of one under the number of the other
 * sync.version_skew.
 *
 * Versions. sr_sync_version() is the version counter: the engines' initial version, set to T
 * after a sync whose protocol phases all succeeded on every engine (verification findings do not
 * hold it back: the engines did switch). The cache salt for later generates is
 * "<model>@<counter>" (docs/reference/skyrl.md §4.5).
 *
 * Ownership: sr_sync_new copies everything it is given; free with sr_sync_free. A result is a
 * plain struct filled by sr_sync_run (nothing to release). Units: ns in results, ms in options.
 * Thread-safety: an sr_sync belongs to one thread at a time; engines may be serving generates
 * from other threads during a sync (that is the point of keep-mode pause). The process must have
 * called sr_client_global_init (client/client.h).
 * Errors (return values, not checks): SR_E_INVAL (bad options, target), SR_E_NOMEM, the
 * publisher's SR_E_DELTA_* (the sync dir), SR_E_WEIGHTS_SPEC.
 */
#ifndef SR_SYNC_H
#define SR_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "client/client.h"
#include "spec/engine_config.h"
#include "report/result.h"
#include "sr_err.h"
#include "sr_pool.h"
#include "sr_weights.h"

/* delta: SkyRL's delta store; broadcast: the loopback broadcast (NCCL's stand-in); disk: a
 * safetensors checkpoint folder per version (harness/sync/checkpoint.h) that SGLang's
 * /update_weights_from_disk loads. */
typedef enum sr_sync_transport {
    SR_SYNC_DELTA = 0,
    SR_SYNC_BROADCAST,
    SR_SYNC_DISK
} sr_sync_transport;

typedef enum sr_sync_phase {
    SR_SYNC_GATHER = 0,
    SR_SYNC_PUBLISH,
    SR_SYNC_INIT,
    SR_SYNC_FETCH,
    SR_SYNC_PAUSE,
    SR_SYNC_RESET_CACHE,
    SR_SYNC_START,
    SR_SYNC_UPDATE,
    SR_SYNC_FINISH,
    SR_SYNC_RESUME,
    SR_SYNC_VERIFY,
    SR_SYNC_PHASE_COUNT
} sr_sync_phase;

/* "gather", "publish", "init", "fetch", "pause", "reset_cache", "start", "update", "finish",
 * "resume", "verify"; NULL outside the enum. */
const char *sr_sync_phase_name(sr_sync_phase p);

/* "delta" or "broadcast" -> *out; SR_E_INVAL otherwise. */
int sr_sync_transport_parse(sr_sync_transport *out, const char *name, sr_err *err);

#define SR_SYNC_MAX_CHECKS     64
#define SR_SYNC_MAX_INFLIGHT   8                 /* send_workers ceiling */
#define SR_SYNC_DEFAULT_BUCKET ((size_t)8 << 20) /* fits the engines' default 16 MiB body */
#define SR_SYNC_SAME_BYTES     (-1)              /* sr_sync_run content: keep the bytes */

/*
 * Options. Plain struct: start from SR_SYNC_OPTS_INIT.
 *   transport          delta, broadcast, or disk (the sglang plane only: version v written as
 *                      {sync_dir}/v<v>/ in safetensors, loaded by /update_weights_from_disk;
 *                      not written nor loaded when its bytes equal the last version every engine
 *                      loaded and verified and every engine's state still reports them: then
 *                      only /update_weight_version sets the number)
 *   model              cache-salt prefix (the policy model's name); NULL: "default"
 *   sync_dir           delta: publish directory (created if missing, one level); unused by
 *                      broadcast (may be NULL). Each engine keeps its receiver state in
 *                      {sync_dir}/receiver-<engine id>/.
 *   deadline_ms        every phase's deadline (60000)
 *   phase_deadline_ms  > 0 overrides deadline_ms for that phase
 *   total_deadline_ms  > 0: the whole sync's deadline; a phase is cut at it if that comes before
 *                      its own, except finish, resume and verify (which keep their own, so no
 *                      engine is left mid-update or paused)
 *   workers_cap, workers_reserved  the publish/send pool: sr_pool_workers(cap, reserved) (8, 0)
 *   cores              SR_POOL_DETECT_CORES, or a core count to size the pool with
 *   send_workers       broadcast buckets in flight per engine, 1..SR_SYNC_MAX_INFLIGHT; 0: the
 *                      pool size (capped)
 *   bucket_bytes       broadcast bucket size (SR_SYNC_DEFAULT_BUCKET); engines stream buckets
 *                      into their stage, so their max_body_bytes does not bound it
 *   fsync              delta: fsync published files (1)
 *   initial_version    the version the engines hold when the sync object is made (0)
 *   verify             verify after every sync (1)
 *   serial_update      0 (the default): the update phase's request (delta: /update_weights;
 *                      disk: /update_weights_from_disk) goes to every engine at once; 1: to one
 *                      engine at a time in engine order, each sent after the previous engine
 *                      answered (or failed), within the same phase deadline; once one was cut
 *                      at that deadline, the later ones are not sent (sync.deadline). The broadcast
 *                      transport streams its buckets to every engine at once whatever this says.
 *   control            the engines' control plane (spec/engine_config.h): skyrl (above) or vllm,
 *                      which syncs by broadcast only (SR_E_INVAL with delta): init
 *                      POST /init_weight_transfer_engine, start POST /start_weight_update,
 *                      update every bucket as POST /update_weights (header {"update_info":..}),
 *                      finish POST /finish_weight_update {"weight_version":"T"}, and verify adds
 *                      POST /weight_checker {"action":"compare","baseline":{the trainer's
 *                      digests}} on every engine (a mismatch is sync.partial_update naming the
 *                      tensors; a refusal sync.engine_failed or the named check)
 *   api                the form of vLLM's weight-transfer API the vllm plane is spoken in
 *                      (engines.sync_version; spec/engine_config.h): SR_SYNC_API_50902 sends
 *                      "packed":true, "packed_buffer_size_bytes" (bucket_bytes) and
 *                      "packed_num_buffers" (the buckets in flight per engine) once in the init
 *                      info and no packed key in any update_info; SR_SYNC_API_31943 sends
 *                      "packed":true in every update_info and none in the init info. An engine
 *                      speaking the other form refuses with sync.wire_version. The other planes
 *                      ignore it.
 */
typedef struct sr_sync_opts {
    sr_sync_transport transport;
    const char *model;
    const char *sync_dir;
    int64_t deadline_ms;
    int64_t phase_deadline_ms[SR_SYNC_PHASE_COUNT];
    int64_t total_deadline_ms;
    int workers_cap, workers_reserved;
    int cores;
    int send_workers;
    size_t bucket_bytes;
    int fsync;
    int64_t initial_version;
    int verify;
    int serial_update;
    sr_sync_dialect control;
    /* NULL, or called from the sync's thread once finish succeeded on every engine and before
     * the resume, with the target: the moment a trainer declares the new version current (AReaL
     * calls set_version between update_weights and resume). */
    void (*on_applied)(void *ctx, int64_t version);
    void *on_applied_ctx;
    sr_sync_api api;
} sr_sync_opts;

#define SR_SYNC_OPTS_INIT                                                                          \
    {                                                                                              \
        SR_SYNC_DELTA, NULL, NULL, 60000, {0}, 0, 8, 0, SR_POOL_DETECT_CORES, 0,                   \
            SR_SYNC_DEFAULT_BUCKET, 1, 0, 1, 0, SR_SYNC_DIALECT_SKYRL, NULL, NULL,                 \
            SR_SYNC_API_50902                                                                      \
    }

/* What one engine did in a sync. */
typedef struct sr_sync_engine_result {
    int64_t version;         /* reported after the sync, -1 if unknown */
    int ok;                  /* every phase succeeded and verification found nothing */
    uint64_t apply_ns;       /* its fetch_weights (delta) or all its buckets (broadcast) */
    int64_t apply_payloads;  /* from its state document ("apply"), -1 if unknown */
    int apply_workers;       /* min(payloads, pool_workers(32, 0)) it used */
    int apply_threads;       /* team size it obtained */
    int apply_max_workers;   /* its pool_workers(cap 32, reserved 0) */
    int engine_publish_pool; /* its pool_workers(cap 8, reserved 0) */
} sr_sync_engine_result;

/* What one sync did. Plain struct, nothing to release. */
typedef struct sr_sync_result {
    int64_t target_version;
    int64_t version;                        /* the counter after the sync */
    int completed;                          /* every protocol phase succeeded on every engine */
    int verified;                           /* verification ran and found nothing */
    uint64_t phase_ns[SR_SYNC_PHASE_COUNT]; /* wall time of each phase that ran */
    int phase_ran[SR_SYNC_PHASE_COUNT];
    uint64_t total_ns;
    int publish_workers;        /* the trainer's pool: sr_pool_workers(cap, reserved) */
    int64_t versions_published; /* delta versions written by this sync */
    size_t records;             /* delta records written (changed tensors) */
    uint64_t bytes_changed, bytes_compressed; /* delta: uncompressed and compressed payloads */
    size_t buckets;                           /* broadcast buckets per engine */
    uint64_t bytes_sent;                      /* broadcast: payload bytes per engine */
    size_t n_engines;
    sr_sync_engine_result engines[SR_CLIENT_MAX_ENGINES];
    sr_check checks[SR_SYNC_MAX_CHECKS];
    size_t n_checks;
    uint64_t checks_dropped;
} sr_sync_result;

typedef struct sr_sync sr_sync;

/*
 * A sync orchestrator over `n_urls` engines (base URLs, 1..SR_CLIENT_MAX_ENGINES) whose weights
 * follow `spec` (copied), starting at opts->initial_version. Builds the trainer's weight set
 * (and, for delta, the publisher, whose base is content version 0). Errors: SR_E_INVAL,
 * SR_E_WEIGHTS_SPEC, SR_E_DELTA_IO (sync_dir), SR_E_NOMEM.
 */
int sr_sync_new(sr_sync **out, const char *const *urls, size_t n_urls, const sr_weights_spec *spec,
                const sr_sync_opts *opts, sr_err *err);

void sr_sync_free(sr_sync *s);

/*
 * Runs one sync to `target` (delta: >= 1 and not below the last published version; broadcast:
 * >= 0) and fills *res (checks included). `content` is the content version the trainer's bytes
 * take (normally == target), or SR_SYNC_SAME_BYTES to keep the current bytes (a sync in which
 * nothing changed). Returns 0 when the sync ran, whatever the checks say; a negative code only
 * when it could not run (bad target, publish failure, memory).
 */
int sr_sync_run(sr_sync_result *res, sr_sync *s, int64_t target, int64_t content, sr_err *err);

/*
 * The control plane's own weight checker alone, for a caller that runs with opts.verify 0 (the
 * probe, which judges what any engine shows and not syncroll's state document): on the vllm
 * plane, every engine's POST /weight_checker compares what it holds with the bytes of s's last
 * sync, and a finding is added to res->checks as verify would add it (sync.partial_update naming
 * the tensors, or the failed call's code). On a plane without a checker it does nothing and sets
 * *asked (may be NULL) to 0, else 1. Returns 0, or a negative code when it could not ask.
 */
int sr_sync_check_weights(sr_sync_result *res, sr_sync *s, int *asked, sr_err *err);

/* The version counter (see Versions). */
int64_t sr_sync_version(const sr_sync *s);

/* The highest version a sync was run to (published), initially the initial version. */
int64_t sr_sync_last_target(const sr_sync *s);

/* "<model>@<counter>", borrowed until the next sr_sync_run or sr_sync_free. */
const char *sr_sync_cache_salt(const sr_sync *s);

/* The trainer's weights (borrowed; bytes of the last sync's content). */
const sr_weights *sr_sync_weights(const sr_sync *s);

/*
 * Records a result into a scenario result: every check (where.step = step), one "publish"
 * sample (gather + publish), one "apply" sample per engine, one "sync_total", and syncs += 1.
 */
void sr_sync_report(sr_scenario_result *sc, const sr_sync_result *res, int64_t step);

/*
 * The runner's sync_weights step in one call. *state is the scenario's orchestrator: NULL on the
 * first call, made then from the scenario (weight spec, model name, transport, weights.workers,
 * pool.cores, the initial weights.version) with its sync dir at {run_dir}/sync;
 * the caller frees it with sr_sync_free when the scenario ends. `step` is the step index in
 * scn->steps (its version -1 means sr_sync_last_target + 1, FORMAT.md's "last published version
 * + 1"; its deadline_ms is the sync's total deadline and every phase's). Runs
 * the sync and records it with sr_sync_report. `on_applied` (may be NULL) and its ctx become the
 * orchestrator's opts.on_applied when this call makes it. Returns 0 when the sync ran (checks
 * are in sc), else a harness error.
 */
struct sr_scenario;
int sr_sync_step(sr_sync **state, sr_scenario_result *sc, const struct sr_scenario *scn, int step,
                 const char *const *urls, size_t n_urls, const char *run_dir,
                 void (*on_applied)(void *ctx, int64_t version), void *ctx, sr_err *err);

/*
 * The sync folder of sr_sync_step, {run_dir}/sync ("." when run_dir is NULL), into out[cap]:
 * the folder the runner names in its engines' server.sync_dirs. SR_E_INVAL when it does not fit.
 */
int sr_sync_step_dir(char *out, size_t cap, const char *run_dir, sr_err *err);

#endif /* SR_SYNC_H */
