/*
 * meta: metamorphic checks, the relations that must hold between an engine's responses whatever
 * its true routes are, so they judge an engine syncroll has no oracle for (a real vLLM or SGLang
 * behind `syncroll probe URL`, a scenario's engines.urls) as well as syncroll's own engines.
 *
 * Each relation is a named check (spec/checks.h; docs/reference/probe.md states each one):
 *   meta.determinism        the same request twice gives the same tokens and routes
 *   meta.prefix_consistency two prompts sharing a prefix give the same rows on it, cold and warm
 *                           cache, and again after a sync back to the same weights; where their
 *                           tokens part, not the same row (above the entropy floor)
 *   meta.multiturn_prefix   turn 2's rows for turn 1's positions equal turn 1's rows; after a
 *                           sync, turn 2 of a turn 1 from before it re-routes turn 1's prompt
 *                           with the new weights
 *   meta.row_count          every response that asked for routes carries rows [s, P+G-1)
 *   meta.value_sanity       ids in [0, experts), no duplicate inside a row's top-k, no sentinel
 *                           (negative id) outside its meaning, not all-zero, not a run of rows
 *                           that repeat their neighbour (above the entropy floor, meta_priv.h)
 *   meta.boundary_rows      the rows at the prompt/output boundary and at a turn boundary are
 *                           real routes (not zero, -1 or, above the floor, a copy of a
 *                           neighbour)
 *   meta.sync_effect        every sync completes, the plane's weight checker (if any) agrees
 *                           and the engine reports its version; after a
 *                           sync to perturbed weights the rows of every perturbed layer change;
 *                           after a sync back they return exactly (three syncs: to the model's
 *                           own weights, perturbed, back; the engine ends on its own weights)
 *   meta.cache_after_sync   after a sync, a prompt holding an earlier post-sync output gets the
 *                           rows that output had, not pre-sync ones (stale prefix cache)
 *   meta.missing_not_stale  a response that finished "abort" carries no routes or fewer rows
 *                           than its tokens, never complete stale rows (the client names such
 *                           an answer client.aborted_turn; the probe still judges its routes)
 *   meta.version_monotonic  the reported weight version never goes backwards
 *   meta.stack_contract     where the engine speaks the later SkyRL stack (a capture request is
 *                           answered with rollout_sample_support): the support is int32
 *                           [G, top_k], padded with trailing -1, each row holding its sampled
 *                           token; a capture request without top_k > 1 is HTTP 400. Skipped with
 *                           the reason when the engine does not speak it or opts.stack_client is
 *                           NULL.
 *
 * Every generate counts against opts.budget; a relation that would pass it, or that starts
 * after opts.deadline_ms, is skipped with the reason (sr_result_skip_check), as is every relation
 * that needs a weight sync when opts.sync is NULL (opts.no_sync says why). Nothing is sent to any
 * URL but the client's engines.
 *
 * Ownership: everything is borrowed; the checks go into `sc` (sr_result_check, thread-safe).
 * Errors: SR_E_INVAL (bad options), SR_E_NOMEM. A failed generate is not an error: it becomes a
 * check (meta.row_count for routes missing or a wire whose shape breaks the rows rule, else the
 * client's own named code).
 */
#ifndef SR_RUN_META_H
#define SR_RUN_META_H

#include <stdint.h>

#include "client/client.h"
#include "report/result.h"
#include "spec/dialect.h"
#include "sr_err.h"
#include "sync/sync.h"

typedef struct sr_meta_opts {
    sr_dialect dialect;  /* the client's wire (its rows rule and sentinels) */
    uint64_t seed;       /* prompts are drawn from it */
    int64_t budget;      /* generate requests at most, >= 0 (0: every relation is skipped) */
    double deadline_ms;  /* sr_clock_ms() after which no relation starts; 0: none */
    int64_t vocab;       /* prompt ids are drawn from [1, min(vocab, 1000)); 0: unknown, [1, 100) */
    int64_t experts;     /* the model's experts; 0: unknown (ids only checked >= 0) */
    sr_sync *sync;       /* weight-sync driver of the client's engine 0, or NULL */
    int64_t content;     /* the content version of the model's own weights (weights.version) */
    const char *no_sync; /* why sync is NULL (the skip reason) */
    sr_sync_dialect plane;
    int64_t max_tokens; /* generated tokens asked per request (8) */
    /* A client of the later SkyRL stack (client.stack 2086, skyrl dialect) over the same engine,
     * for meta.stack_contract; NULL: that relation is skipped for no_stack (or a stated reason). */
    const sr_client *stack_client;
    const char *no_stack;
} sr_meta_opts;

#define SR_META_OPTS_INIT                                                                          \
    {                                                                                              \
        SR_DIALECT_SKYRL, 1, 64, 0, 0, 0, NULL, 0, NULL, SR_SYNC_DIALECT_SKYRL, 8, NULL, NULL      \
    }

/* What a run of the relations did. */
typedef struct sr_meta_stats {
    int64_t requests; /* generates sent (each within the budget) */
    int64_t syncs;    /* weight syncs run */
    int held, failed; /* relations that held / failed (a relation counts once) */
    int skipped;      /* relations skipped */
} sr_meta_stats;

/* The relation names above, in documentation order; n gets the count. */
const char *const *sr_meta_checks(int *n);

/* The weight version engine 0 of c reports on control plane `plane` (-1: none), the version a
 * caller starts its sr_sync from. `initial` is the version of the checkpoint the engine started
 * on (the model's weights.version): vLLM's plane reports the label "default" until its first
 * publish, and a sync must start above the version the engine holds. */
int64_t sr_meta_engine_version(const sr_client *c, sr_sync_dialect plane, int64_t initial);

/*
 * Runs every relation against engine 0 of `c` (a client made for opts->dialect with the model's
 * route_layers and route_topk where the wire needs them) and records the checks that failed and
 * the ones skipped in `sc`; *st (may be NULL) says what ran. Returns 0 whatever the relations
 * found; a negative code only when it could not run.
 */
int sr_meta_run(sr_scenario_result *sc, const sr_client *c, const sr_meta_opts *opts,
                sr_meta_stats *st, sr_err *err);

/*
 * Judging recorded answers with no request of their own (`syncroll replay`, replay_judge.h):
 * the relations one answer, or one session's answers in turn order, can break. The model is
 * unknown: expert ids are only checked >= 0 (no upper bound).
 *   each answer that asked for routes: meta.row_count, meta.value_sanity, meta.boundary_rows at
 *     its prompt/output boundary and, on a wire that sends the route start, at the turn
 *     boundary (its first row when it asked from a start > 0); an answer that finished "abort"
 *     gets meta.missing_not_stale instead;
 *   across the turns: meta.version_monotonic (no answer reports a weight version below an
 *     earlier one's; answers that carry none are not compared) and meta.multiturn_prefix (the
 *     rows of positions an earlier answer also carried are equal, where both report the same
 *     version).
 * An answer the client failed for another reason is not judged (that failure is the client's
 * own check); one that did not ask for routes is judged for its version only. A relation fails
 * at most once per session, at its first failure.
 *
 * Use: sr_meta_replay_new per session, sr_meta_replay_keep with each turn's generate as the
 * client returned it (the rollout's on_reply hook: the answer is copied, since the result's
 * views die with the turn), then sr_meta_replay_judge once.
 * Ownership: the session state is the caller's (sr_meta_replay_free); arguments are borrowed.
 * Errors: SR_E_NOMEM; SR_E_INVAL for a NULL argument.
 */
typedef struct sr_meta_replay sr_meta_replay;

int sr_meta_replay_new(sr_meta_replay **out, sr_dialect dialect, sr_err *err);

/* Keeps 1-based turn `turn`'s answer: the request q, the client's return rc (0 or its error,
 * whose message is `why`) and its result res. */
int sr_meta_replay_keep(sr_meta_replay *m, int turn, const sr_client_req *q, int rc,
                        const sr_client_result *res, const char *why, sr_err *err);

/*
 * Judges the kept answers (above) into sc. Each failure is recorded where `at` says (its turn,
 * row and layer set per failure) with a message starting "<what> turn <k>: "; *failed (may be
 * NULL) gets how many relations failed. Returns 0 (SR_E_INVAL without a session or a result).
 */
int sr_meta_replay_judge(int *failed, sr_meta_replay *m, sr_scenario_result *sc,
                         const sr_check_where *at, const char *what, sr_err *err);

void sr_meta_replay_free(sr_meta_replay *m);

#endif /* SR_RUN_META_H */
