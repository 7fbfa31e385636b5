/*
 * replay_judge: judges a capture of `syncroll proxy --record` (proxy/capture.h) with no engine.
 * `syncroll replay CAPTURE` and the scenario step `replay` (runner_replay.h) both call it, so a
 * capture gets the same checks on the command line and in a scenario.
 *
 * First every body of the capture is read back and checked against its recorded size and
 * digest: a damaged capture is its named error (capture.body, ...) before anything is judged,
 * never a check that only looks like the engine's fault. Each session (X-Session-ID) is then
 * one conversation. Its generate exchanges, in seq order, are its turns (an exchange whose
 * request repeats the one before it byte for byte is a retry of the same turn). The session is
 * run as a rollout (rollout.h) by syncroll's own client against the capture played back
 * in-process (proxy/replay_serve.h): turn 1's request gives the prompt and sampling parameters,
 * each later request's token_ids the conversation (sr_rollout_config.script), so every captured
 * body is spliced and validated as the client does live (with its retries served by the
 * recorded retries), the routes are assembled into the session's trace with the prompt-start
 * arithmetic and finalized, and the verifier's contract checks run on the result (verify.h,
 * without an oracle, the expert count unknown); then the meta relations that judge answers
 * already given run on each turn's answer as the client decoded it (meta.h, sr_meta_replay_*,
 * kept by the rollout's on_reply hook), named like the contract checks, and a session where one
 * fails fails. The sessions that finished with routes are collated as one batch and the
 * collation's contract checks run. Why a loopback playback rather
 * than a decode of each buffer: the client's streaming splice, its retry policy and its dialect
 * decoders are then the very code that judged the live traffic.
 *
 * The dialect is the given one, else told from the first 2xx answer of a session's generate (as
 * check-body does).
 *
 * Where the checks go (sr_replay_judge_opts):
 *   - `run` set: one entry per session in `run` (its id the session id, its verdict pass, fail,
 *     or error when the session cannot be planned: a request that is not JSON or lacks its
 *     token ids), and one entry "collate" when a session finished with routes;
 *   - else every check into the one entry `res` (a scenario's), the messages naming `scenario`,
 *     `step_name` and the session; each session is counted as a rollout (requested, then
 *     verified or failed) and the collation as one; a session that cannot be planned is then an
 *     error of the whole judgement (capture.corrupt naming the session).
 *
 * Errors (the capture's, not checks): capture.body, capture.corrupt, resource.limit (a body
 * larger than 1 GiB), usage.invalid_argument (no answered generate of a session to tell the
 * dialect from, or none on a generate route of the dialect), engine.start (the loopback
 * playback could not bind), resource.nomem.
 * Ownership: everything is borrowed. Threads: one caller; the playback runs its own.
 */
#ifndef SR_REPLAY_JUDGE_H
#define SR_REPLAY_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/capture.h"
#include "report/result.h"
#include "sr_err.h"

typedef struct sr_replay_judge_opts {
    int dialect;        /* an sr_dialect, or -1: told from the answers */
    sr_run_result *run; /* one entry per session here, or NULL: everything into res */
    sr_scenario_result *res;
    const char *scenario;  /* res: the scenario id for messages */
    int64_t step;          /* res: the step index */
    const char *step_name; /* res: the step name */
    size_t unjudged;       /* out: generate exchanges without an X-Session-ID (not judged) */
    int dialect_used;      /* out: the dialect judged in */
} sr_replay_judge_opts;

#define SR_REPLAY_JUDGE_OPTS_INIT                                                                  \
    {                                                                                              \
        -1, NULL, NULL, NULL, -1, NULL, 0, -1                                                      \
    }

/* Judges capture c (contract above). 0 when judged, the failures being checks. */
int sr_replay_judge_capture(const sr_capture *c, sr_replay_judge_opts *o, sr_err *err);

#endif /* SR_REPLAY_JUDGE_H */
