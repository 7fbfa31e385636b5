/*
 * verify_checks: the vocabulary of the verifier (check names, route-row classes), what both
 * verifications share about a rollout (where it came from, the rows the engine delivered), and
 * the collation checks. The lower half of the verifier: it uses nothing of verify.c, whose
 * rollout checks build on it.
 *
 * Check names. Errors raised by lower modules (the client, the splice, the trace, collation,
 * pool sizing, the replay-config check) become checks with the same dotted name as the error
 * (lib/sr_err.h; `syncroll errors` lists them). The verifier and the runner add their own, in
 * sr_check_info_at(): trace.row_mismatch, trace.token_mismatch, trace.logprob_mismatch,
 * trace.padding_row, trace.version_unknown, collate.alignment, collate.padding_rows,
 * collate.padding_mask, engine.crashed, engine.state, engine.control, step.deadline,
 * budget.latency, budget.no_samples, soak.resource_growth. scenarios/FORMAT.md documents them.
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
#include "sr_collate.h"
#include "sr_err.h"

/* ---- check names ---- */

typedef struct sr_check_info {
    const char *name;
    const char *doc;
} sr_check_info;

/* The verifier's and runner's own checks (not the module errors). */
size_t sr_check_info_count(void);
const sr_check_info *sr_check_info_at(size_t i);

/* 1 if `name` is one of those or the dotted name of an sr_err code. */
int sr_check_known(const char *name);

/* The class of a mismatching route row (verify.h says how a row is classified). */
typedef enum sr_row_class {
    SR_ROW_ALL_ZERO = 0,
    SR_ROW_DUPLICATED,
    SR_ROW_OVERWRITTEN,
    SR_ROW_OFF_BY_ONE,
    SR_ROW_STALE,
    SR_ROW_NEWER,
    SR_ROW_UNCLASSIFIED,
    SR_ROW_CLASS_COUNT
} sr_row_class;

/* "all_zero_capture", "duplicated_row", "overwritten_prefix", "off_by_one", "stale_weights",
 * "newer_weights", "unclassified"; NULL outside the enum. */
const char *sr_row_class_name(sr_row_class c);

/* The class called `name`, or -1. */
int sr_row_class_lookup(const char *name);

/* ---- what both verifications share ---- */

/* Where a rollout or collation came from, for messages and the result. */
typedef struct sr_verify_ctx {
    const char *scenario;  /* id */
    int64_t step;          /* step index */
    const char *step_name; /* step name */
    int multi_turn;        /* the rollout's mode (single-turn appends a synthetic EOS) */
    int64_t experts;       /* model.experts, for the expert-id range check; 0: unknown */
    sr_scenario_result *res;
} sr_verify_ctx;

/* The route rows the engine delivered for a rollout (P + G - 1 of its last turn), 0 if none. */
int64_t sr_verify_captured_rows(const sr_rollout_result *r);

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
