/*
 * evidence: what a failing check leaves for triage, written into the scenario's work folder
 * (artifacts/<id>/, runner.h) under evidence/ with the bounded writers of report/artifacts.h.
 * Only checks the scenario does not expect get evidence (an expected check is not a failure).
 *
 * A failing rollout (sr_evidence_rollout, from the rollout step once the rollout is judged):
 * evidence/step<S>-sample<I>/ (".it<K>" appended in soak iteration K > 0) holding
 *   index.txt              one line per file: "<file>: <what it holds>; <which part>", and a
 *                          line for every file left out and why;
 *   checks.txt             the checks the rollout fired (name, class, step, sample, turn, row,
 *                          layer, message);
 *   exchange-turn<T>.txt   for the failed turn and every turn a check names: method and URL,
 *                          request headers, the last attempt's status line and response headers,
 *                          every attempt (outcome, status, start, duration, wait, bytes) and the
 *                          turn's timings;
 *   request-turn<T>.bin    the request body as sent, response-turn<T>.bin the last attempt's
 *                          response body as received, each at most SR_EVIDENCE_EXCHANGE_BYTES
 *                          (the rollout keeps the exchanges of its last SR_ROLLOUT_KEEP_EXCHANGES
 *                          turns: an older turn is listed as not kept);
 *   rows-<R>.txt, rows-<R>-got.npy, rows-<R>-want.npy   for a route check at token row R
 *                          (trace.row_mismatch, routes.invalid, trace.padding_row): the rows
 *                          R-3..R+3 at every layer, got (the rollout's trace) and want (the
 *                          oracle at the weight version that first computed the row; padding
 *                          rows want 0..K-1; no oracle for external engines: -1), as text with
 *                          '!' where they differ, and as int32 [N, 5 + K] matrices whose columns
 *                          are sample, turn, row, layer, weight version, expert 0..K-1;
 *   engine-<E>.log         the last SR_EVIDENCE_LOG_TAIL bytes of the log of each engine a kept
 *                          exchange went to;
 *   scenario.json          the expanded scenario; repro.txt the one-line repro command.
 * The rollout's checks in the result model get evidence = "evidence/step<S>-sample<I>/index.txt".
 *
 * Every other failing check (sr_evidence_scenario, once the scenario is judged): evidence/scenario/
 * with index.txt, checks.txt (those checks), the engines' log tails, scenario.json and repro.txt.
 *
 * Bounds: the files of one scenario execution total at most SR_EVIDENCE_SCENARIO_BYTES; a file
 * that would pass it is not written (its index.txt line says so) and the checks of that folder
 * get evidence_cut = 1, which the reports show.
 *
 * Thread-safety: sr_evidence_rollout may run on any rollout thread (distinct folders; the budget
 * is atomic); sr_evidence_scenario on the scenario's thread after every step joined.
 * Errors: SR_E_IO, SR_E_NOMEM (a harness error: the caller reports it, the verdict stands).
 */
#ifndef SR_EVIDENCE_H
#define SR_EVIDENCE_H

#include <stdint.h>

#include "runner_state.h"
#include "verify.h"

#define SR_EVIDENCE_SCENARIO_BYTES ((int64_t)16 << 20) /* 16 MiB per scenario execution */
#define SR_EVIDENCE_EXCHANGE_BYTES ((size_t)1 << 20)   /* 1 MiB per request or response */
#define SR_EVIDENCE_LOG_TAIL       ((size_t)64 << 10)  /* 64 KiB per engine log */
#define SR_EVIDENCE_ROW_CONTEXT    3                   /* rows either side of a route check's */

/*
 * Writes the evidence of rollout `sample` of step `step` (above), which fired the checks in
 * `fired`, if one of them is not expected; `session` is its X-Session-ID. 0 or an error.
 */
int sr_evidence_rollout(sr_scn_run *run, int step, int64_t sample, const char *session,
                        const sr_rollout_result *r, const sr_verify_fired *fired, sr_err *err);

/* Writes evidence/scenario/ for the unexpected checks that have no evidence yet (above). */
int sr_evidence_scenario(sr_scn_run *run, sr_err *err);

#endif /* SR_EVIDENCE_H */
