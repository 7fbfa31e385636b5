/*
 * engine: the state of one mock engine, independent of HTTP.
 *
 * Holds the routing oracle, the synthetic weight set (sr_weights) with the version the engine
 * reports, the fingerprints generation uses and those it held before its last update (for the
 * stale_prefix_cache fault), the fault plan, session turn counters (from X-Session-ID), request
 * counters and the weight-sync protocol state.
 *
 * Weight sync now: the protocol-order guards of skyrl-contract §8.3 (start while an update is
 * active, update or finish without start: SR_E_SYNC_ORDER, and the engine keeps serving), and a
 * synthetic apply that regenerates the weight set at a target version (sr_weights_reset), with
 * the weights-layer faults partial_weight_apply (the listed MoE layer slots keep their old bytes,
 * so exactly their fingerprints stay old), version_not_bumped (bytes change, the reported
 * version does not) and checksum_mismatch (the apply is refused with SR_E_DELTA_CHECKSUM and the
 * engine stays on its version). Delta and broadcast transports are the weight-sync issue's.
 *
 * Sessions: at most SR_ENGINE_MAX_SESSIONS are remembered; past that the table is cleared and
 * turn counting restarts (documented, not silent: the state reports session_resets).
 *
 * Ownership: sr_engine_new copies the config (not its fault cJSON, which it parses).
 * Thread-safety: every function may be called from any thread (internal locks), except new/free.
 */
#ifndef SR_ENGINE_ENGINE_H
#define SR_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "faults.h"
#include "gen.h"
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

void sr_engine_set_sleeping(sr_engine *e, int sleeping, int64_t level);
int sr_engine_sleeping(sr_engine *e);
void sr_engine_prefix_reset(sr_engine *e);
void sr_engine_set_init_info(sr_engine *e, const char *json);

/* ---- weight sync ---- */

/* skyrl_start_weight_update: SR_E_SYNC_ORDER if an update is already active. */
int sr_engine_sync_start(sr_engine *e, sr_err *err);

/* An update or finish phase: SR_E_SYNC_ORDER unless an update is active; finish ends it. */
int sr_engine_sync_phase(sr_engine *e, int finish, const char *method, sr_err *err);

/*
 * Synthetic apply of `target` (0..SR_WEIGHTS_MAX_VERSION) with the weights-layer fault `f`
 * (NULL for none). On success *version receives the version the engine now reports.
 */
int sr_engine_apply_version(sr_engine *e, int64_t target, const sr_fault *f, int64_t *version,
                            sr_err *err);

/* The version the engine reports. */
int64_t sr_engine_version(sr_engine *e);

/* What the HTTP layer knows, for the state document. */
typedef struct sr_engine_live {
    int paused;
    const char *pause_mode; /* "keep", "abort", "wait" or NULL */
    int64_t inflight, held, stalled;
} sr_engine_live;

/* Appends the /syncroll/v1/state document. */
int sr_engine_state_json(sr_buf *b, sr_engine *e, const sr_engine_live *live, sr_err *err);

#endif /* SR_ENGINE_ENGINE_H */
