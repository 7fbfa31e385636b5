/*
 * verify: judges what a scenario produced against the routing oracle and the contracts, and
 * records every failure as a named check in the result model (result.h).
 *
 * The check names and row classes are spec/checks.h's; the context of a verification and the
 * collation checks are verify_checks.h's (included below); this header is the rollout verifier's.
 *
 * Rollouts (sr_verify_rollout). A rollout that failed is recorded as the check named by its
 * error, with the turn (and, for trace.missing_route, the token row) where it failed. A rollout
 * that completed is checked first against its turn log (a contract, also for external engines:
 * a turn committed although its reply said "abort" is client.aborted_turn, sr_verify_turn_log),
 * then position by position of prompt + response:
 *   - every loss-active response token (the engine's outputs; observations and added EOS are
 *     loss 0) against the oracle's next token after its prefix, with the global fingerprint of
 *     the weight version that sampled it (the version of row q-1 for token q);
 *   - its logprob, when logprobs were collected, against the oracle's (non-finite values as the
 *     engine's clamp, -9999.0), exactly;
 *   - every captured route row (rows [0, C) where C = P + G - 1 of the last turn, the rows the
 *     engine delivered) at every MoE layer against the oracle with the layer fingerprint of the
 *     version that FIRST computed the row (row_version in rollout.h);
 *   - the padding rows [C, T) of the finalized trace against the padding row 0, 1, ..., K-1;
 *   - (a contract, also for external engines) every captured row holds K distinct expert ids in
 *     [0, experts): a row that does not is routes.invalid and is not compared with the oracle.
 * A mismatching route row is classified (sr_row_class), in this order: all-zero capture (every
 * expert id 0); duplicated row (equals the row held before it); overwritten prefix (equals the
 * oracle at the version of the pass whose routes the result holds, held_version, which differs
 * from row_version); off by one (equals the oracle's row of a neighbour, i-1 or i+1); stale
 * weights / newer weights (equals the oracle at another weight version w < v / w > v, nearest
 * first; the message names w and k = v - w); else unclassified. One check is recorded per
 * rollout and classification (the first row of that class, with the count of mismatching
 * (row, layer) pairs of the class); messages name scenario, step, sample, turn, token row and
 * layer.
 *
 * Without a verifier (external engines, engines.urls), the oracle checks (tokens, logprobs,
 * route rows) are skipped and recorded as skipped with the reason; contract checks (errors of
 * the modules, padding rows, collation in verify_checks.h) still run.
 *
 * Thread-safety: an sr_verifier may be used by any number of threads at once (its fingerprint
 * cache is locked). Ownership: sr_verifier_new copies what it needs from the config.
 * Errors: SR_E_NOMEM; SR_E_ORACLE_MODEL / SR_E_WEIGHTS_SPEC for a config the oracle refuses.
 */
#ifndef SR_VERIFY_H
#define SR_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "report/result.h"
#include "rollout.h"
#include "spec/engine_config.h"
#include "sr_collate.h"
#include "sr_err.h"
#include "verify_checks.h"

/* The clamp the engine writes for a non-finite logprob (docs/reference/skyrl.md §1.6). */
#define SR_VERIFY_CLAMPED_LOGPROB (-9999.0)

/* Weight versions tried when classifying a row as stale or newer, nearest first. */
#define SR_VERIFY_MAX_CANDIDATES 64

/* ---- the verifier ---- */

typedef struct sr_verifier sr_verifier;

/* Builds the oracle and the weight spec of the engines' config (`cfg` is copied). */
int sr_verifier_new(sr_verifier **out, const sr_engine_config *cfg, sr_err *err);
void sr_verifier_free(sr_verifier *v);

/* The oracle (borrowed). */
const sr_oracle *sr_verifier_oracle(const sr_verifier *v);

/*
 * The fingerprints weight version `version` has (sr_weights_expected, cached): *global and
 * layers[0..num_layers). Either may be NULL.
 */
int sr_verifier_fingerprints(uint64_t *global, uint64_t *layers, sr_verifier *v, int64_t version,
                             sr_err *err);

/* Tells the verifier a version exists (published or applied): classification tries up to it. */
void sr_verifier_note_version(sr_verifier *v, int64_t version);

/*
 * Verifies rollout `sample` (contract above), recording checks in ctx->res. *ok = 1 when nothing
 * fired. `v` NULL skips the oracle checks (recorded as skipped). Returns 0 or SR_E_NOMEM /
 * a fingerprint error (a harness error, not a check).
 */
int sr_verify_rollout(int *ok, sr_verifier *v, const sr_rollout_result *r, int64_t sample,
                      const sr_verify_ctx *ctx, sr_err *err);

/* The checks one rollout fired (name, class, where, message), for its failure evidence. */
#define SR_VERIFY_FIRED_MAX 16

typedef struct sr_verify_fired {
    sr_check c[SR_VERIFY_FIRED_MAX]; /* the first SR_VERIFY_FIRED_MAX, in firing order */
    int n;
} sr_verify_fired;

/* sr_verify_rollout, and every check it records is also listed in *fired (n set to 0 first). */
int sr_verify_rollout_fired(int *ok, sr_verifier *v, const sr_rollout_result *r, int64_t sample,
                            const sr_verify_ctx *ctx, sr_verify_fired *fired, sr_err *err);

#endif /* SR_VERIFY_H */
