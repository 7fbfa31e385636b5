/*
 * faults: the mock engine's side of fault plans: which faults fire for a request, and their
 * counters. The plan's schema (kinds, layers, parameters, parsing) is spec/faults.h; the engine
 * gets its plan parsed, in its config (spec/engine_config.h), and builds these from it.
 *
 * Matching a request, in this order: engine index; endpoint; turn (requests without a session
 * have turn 0 and never match a turn filter); then the fault's own ordinal counter advances
 * (n = 1, 2, ...), and n must be in `nth` (if given); then the probability draw, a pure
 * function of (seed, fault position, n) so a rerun fires on the same requests; then `count`.
 * A request gets at most one fault per layer (the first matching one in declaration order;
 * later ones in that layer do not advance their counters past the ordinal check and are not
 * counted as fired).
 *
 * Errors: sr_faults_new SR_E_NOMEM; sr_faults_parse_text also as spec/faults.h (SR_E_FAULT_SPEC
 * naming the fault and the key).
 * Thread-safety: sr_faults_pick may run concurrently (counters are atomic); parse and free not.
 */
#ifndef SR_ENGINE_FAULTS_H
#define SR_ENGINE_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "spec/endpoints.h"
#include "spec/faults.h"
#include "sr_buf.h"
#include "sr_err.h"

typedef struct sr_faults sr_faults;

/*
 * The faults of `plan` (NULL: none; copied, so the caller keeps it) with fresh counters. `seed`
 * seeds the probability and latency draws. *out is freed with sr_faults_free.
 */
int sr_faults_new(sr_faults **out, const sr_fault_plan *plan, uint64_t seed, sr_err *err);

/* sr_fault_plan_parse_text, then sr_faults_new: from the JSON text of a plan (for tests). */
int sr_faults_parse_text(sr_faults **out, const char *text, size_t len, uint64_t seed, sr_err *err);

void sr_faults_free(sr_faults *fs);

size_t sr_faults_count(const sr_faults *fs);
const sr_fault *sr_faults_at(const sr_faults *fs, size_t i);

/* What fired for one request: at most one fault per layer. */
typedef struct sr_fault_pick {
    const sr_fault *f[SR_FL_COUNT]; /* NULL: nothing in that layer */
    int64_t ordinal[SR_FL_COUNT];   /* the fault's ordinal n for this request */
    double delay_ms;                /* the latency drawn, when f[SR_FL_DELAY] is set */
} sr_fault_pick;

/*
 * Decides which faults fire for a request to `ep` on engine `engine_index` whose session turn
 * is `turn` (1-based; 0 = no session). Updates the counters. Never fails.
 */
void sr_faults_pick(sr_fault_pick *out, sr_faults *fs, int engine_index, sr_endpoint ep,
                    int64_t turn);

/* Counters of fault i: requests that reached its ordinal check, and firings. */
void sr_faults_counters(const sr_faults *fs, size_t i, int64_t *seen, int64_t *fired);

/* Appends [{"id":..,"kind":..,"layer":..,"seen":n,"fired":n},...] to b. */
int sr_faults_state_json(sr_buf *b, const sr_faults *fs, sr_err *err);

#endif /* SR_ENGINE_FAULTS_H */
