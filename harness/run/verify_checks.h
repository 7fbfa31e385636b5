/*
 * verify_checks: what both verifications share about a rollout (where it came from, the rows
 * the engine delivered), and the collation checks. The lower half of the verifier: it uses
 * nothing of verify.c, whose rollout checks build on it. The check names and route-row classes
 * both record are spec/checks.h's.
 *
 * Collation (sr_verify_collation): for every sample, the route rows sit at columns pad + r
 * (collate.alignment), every other column is the padding row (collate.padding_rows), and the
 * mask is 1 exactly on the left padding and the columns past the CAPTURED rows, as the engine
 * delivered them (collate.padding_mask) — so a trace that reports padding as captured is caught.
 * These are contract checks: they need no oracle and run for external engines too.
 *
 * Thread-safety: every function may be called from any thread; the tables are constant.
 */
#ifndef SR_VERIFY_CHECKS_H
#define SR_VERIFY_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "report/result.h"
#include "rollout.h"
#include "spec/checks.h"
#include "spec/faults.h"
#include "sr_collate.h"
#include "sr_err.h"

/* ---- what both verifications share ---- */

/* Where a rollout or collation came from, for messages and the result. */
typedef struct sr_verify_ctx {
    const char *scenario;  /* id */
    int64_t step;          /* step index */
    const char *step_name; /* step name */
    int multi_turn;        /* the rollout's mode (single-turn appends a synthetic EOS) */
    int64_t experts;       /* model.experts, for the expert-id range check; 0: unknown */
    sr_scenario_result *res;
    const sr_fault_plan *faults; /* the scenario's engine faults, or NULL: a failing route row
                                    names the route fault whose selection holds it */
} sr_verify_ctx;

/* The route rows the engine delivered for a rollout (P + G - 1 of its last turn), 0 if none. */
int64_t sr_verify_captured_rows(const sr_rollout_result *r);

/* Records one check of the turn log: its name, 1-based turn and message; 0 or a harness error. */
typedef int (*sr_verify_turn_fire)(void *ctx, const char *name, int64_t turn, const char *detail);

/*
 * The turn log's contract, with no oracle (so for external engines too), over the turns a
 * rollout committed (every turn of a rollout that succeeded): a committed turn whose finish
 * reason is "abort" fires client.aborted_turn — the engine cut it short, and only the quirk
 * commit_aborted_turn lets such a turn through (radixark/miles#3337); a turn whose stamp
 * (rollout.h, "Version stamps") is newer than the engine's version of the pass that sampled its
 * first token fires trace.version_stamp naming both versions (areal-project/AReaL#1569,
 * rllm-org/rllm#622). Calls fire once per finding; returns 0 or the first non-zero fire
 * returned.
 */
int sr_verify_turn_log(const sr_rollout_result *r, sr_verify_turn_fire fire, void *ctx);

/* ---- collation ---- */

/*
 * Verifies a collated batch of n samples (contract above): samples[i] is the rollout collated as
 * row i, with sample_ids[i] its index within its own step (for messages). Checks are recorded in
 * ctx->res; *ok = 1 when nothing fired. Returns 0, SR_E_INTERNAL for a result of the wrong
 * shape, or the error of recording a check (a harness error, not a check).
 */
int sr_verify_collation(int *ok, const sr_collate_result *c,
                        const sr_rollout_result *const *samples, const int64_t *sample_ids,
                        size_t n, const sr_verify_ctx *ctx, sr_err *err);

#endif /* SR_VERIFY_CHECKS_H */
