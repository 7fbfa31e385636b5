/*
 * rollout: the multi-turn agent loop of skyrl.md §6 against the generate client, with a
 * seeded environment, loss masks, logprobs and an incremental routed-expert trace.
 *
 * Multi-turn (token-in/token-out, the default; §6). input_ids starts as the prompt (P0 tokens).
 * Turn k (1, 2, ...):
 *   0. if len(input_ids) > max_input_length: stop_reason "length", stop (no request);
 *   1. generate with token_ids = input_ids, X-Session-ID = session_id and, with routes,
 *      routed_experts_prompt_start = the trace's prompt_start (0 on turn 1, then R_{k-1});
 *   2. record the routes: trace.record(P_k = len(input_ids), G_k, routes) -> R_k = P_k + G_k - 1
 *      rows held (the previous turn's last token, any added EOS and the observation are captured
 *      now as prompt tokens of this turn);
 *   3. if append_eos_after_stop and the turn finished "stop" without ending in eos_id: append
 *      eos_id to the turn's output with logprob 0.0 (after recording);
 *   4. the environment answers: done after env.max_turns turns, else obs_k observation tokens
 *      (count uniform in [obs_min, obs_max], ids uniform in [0, vocab), a pure function of
 *      (env.seed, k));
 *   5. response_end_idx = P_k + len(output) - 1; input_ids += output + obs; loss mask += 1 per
 *      output token (0 for an added EOS) + 0 per observation token; logprobs += the output's +
 *      0.0 per observation token; the after_turn hook runs (e.g. a weight sync between turns).
 * End: prompt_ids = input_ids[:P0]; response_ids = input_ids[P0 : response_end_idx + 1] (the final
 * observation dropped); the loss mask and logprobs are trimmed alike; if the trace holds rows,
 * finalize(token_count = P0 + len(response_ids), loss_mask = [0]*P0 + loss mask): [T, L, K] routes
 * whose first captured_rows rows were captured and the rest padding (sr_trace.h). Tail padding
 * is 1 row (model EOS) or 2 rows (added EOS, loss 0). Then, if any request was made, POST
 * /finish_session (best effort, as the reference's `finally`).
 *
 * Single-turn template (multi_turn = 0; §5.5): each turn's trailing model EOS is stripped before
 * the state update, and after the loop a synthetic EOS with loss mask 1 (logprob 0.0) is appended
 * unless the last stop reason is "length" or the response already ends in EOS. With routes this
 * mode is REFUSED (SR_E_ROLLOUT_CONFIG), as the reference eventually does (#2082): that EOS is
 * loss-active but the engine never evaluated it. The quirk synthetic_eos_loss_active lifts the
 * refusal and reproduces the defect (bug skyrl-synthetic-eos): finalize then fails with
 * trace.missing_route naming the token (err.offset) whenever the last turn stopped without EOS.
 *
 * Quirk overwrite_trace_each_turn (bug skyrl-overwrite-not-append, SkyRL #1530): every turn asks
 * for the whole conversation's routes (start 0) and replaces the trace with them, as before #1912.
 * Earlier turns' rows are then the engine's re-computation, which differs after a weight sync.
 *
 * Per-row weight versions (from the engine's "syncroll" key; -1 where unknown or padded):
 *   row_version[i]   the version of the forward pass that FIRST computed row i in this rollout,
 *                    i.e. the weights that sampled token i+1 when it was generated: what a
 *                    correct trace must replay;
 *   held_version[i]  the version of the pass whose routes the result holds for row i.
 * They differ only when rows were re-computed (overwrite quirk) across a weight change; a verifier
 * checks routes against the oracle at row_version and classifies a match at held_version as an
 * overwritten prefix.
 *
 * Version stamps (AReaL's output_versions, rllm's weight_version): with cfg->trainer_version, each
 * turn is stamped with the version the trainer declared current when the turn's request was SENT
 * (stamp_version), the policy the turn was dispatched under; the engine's own account of the pass
 * that sampled the turn's first token is first_version. The quirk stamp_version_at_response reads
 * the version when the response ARRIVES instead (areal-project/AReaL#1569, rllm-org/rllm#622): a
 * sync that lands while the request is in flight labels old-weights tokens with the new version,
 * so the verifier's trace.version_stamp sees a stamp newer than the pass that sampled them.
 *
 * Tokens per rollout: trace_opts.max_rows (<= 0: SR_TRACE_DEFAULT_MAX_ROWS) bounds the
 * conversation's tokens (input_ids: prompt, outputs, added EOS, observations), with or without
 * routes, and the route trace's rows; trace_opts.max_bytes bounds the trace's bytes. Past either,
 * the rollout fails with SR_E_ROLLOUT_TOKEN_LIMIT naming the count and the limit (the trace's own
 * resource.limit is reported as that).
 *
 * Errors: SR_E_ROLLOUT_CONFIG for a bad or refused configuration; SR_E_ROLLOUT_TOKEN_LIMIT
 * (above); otherwise the first failure of a turn (client.*, splice.*, envelope.*, trace.*), with
 * result->failed_turn set, or of the finalize (trace.*). The result keeps everything gathered up
 * to the failure.
 *
 * Ownership: a result owns its arrays; release with sr_rollout_result_release. Configs are
 * borrowed for the call. The rollout's working arrays and route trace are borrowed from the
 * conn's scratch and given back to it for the conn's next rollout (rollout_scratch.h). The
 * routes' storage comes from the client's block cache when it keeps a fitting block
 * (sr_client_blocks) and is always a plain malloc'd block, owned by the result (routes_block)
 * and borrowed by `routes` (routes.owned 0): the block stays allocated until
 * sr_rollout_result_release, which puts it back in that cache (the next rollout of any conn
 * decodes into pages already touched). A caller may replace `routes` with an array of its own
 * (owned 1: release frees it; the block still goes back); one that wants the rows past the
 * release copies them. The result holds a reference to the cache, so results may be released in
 * any order, from any thread, and after their client is freed (the block is then freed).
 * Thread-safety: a rollout runs on one conn (one thread); batches run rollouts on
 * sr_client_parallel's threads, each writing only its own result.
 */
#ifndef SR_ROLLOUT_H
#define SR_ROLLOUT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "client/client.h"
#include "sr_err.h"
#include "sr_ndarray.h"
#include "sr_trace.h"

typedef struct sr_rollout_quirks {
    int synthetic_eos_loss_active;
    int overwrite_trace_each_turn;
    int stamp_version_at_response; /* (below, "Version stamps") */
} sr_rollout_quirks;

/* The version the trainer declares current, read by the rollout's thread (any thread). */
typedef int64_t (*sr_rollout_version_fn)(void *ctx);

/* The seeded environment. */
typedef struct sr_rollout_env {
    uint64_t seed;
    int max_turns;        /* 1 .. 1024: done after this many turns */
    int obs_min, obs_max; /* observation tokens per turn, 0 <= obs_min <= obs_max <= 65536 */
    int64_t vocab;        /* observation ids in [0, vocab); >= 1 when obs_max > 0 */
} sr_rollout_env;

/* Called after each turn k (1-based) once its state update is done; non-zero fails the rollout. */
typedef int (*sr_rollout_hook)(void *ctx, int turn, sr_err *err);

/* Called with each turn's generate as the client returned it, before the rollout uses it: the
 * request `q`, the client's return `rc` (0 or its error, whose message is `why`) and its result
 * `r` (views into the conn, valid only during the call). It cannot fail the rollout: a hook that
 * fails keeps that in its own context. */
typedef void (*sr_rollout_reply_hook)(void *ctx, int turn, const sr_client_req *q, int rc,
                                      const sr_client_result *r, const char *why);

/* Plain struct: start from SR_ROLLOUT_CONFIG_INIT. Everything is borrowed. */
typedef struct sr_rollout_config {
    const int32_t *prompt; /* the templated prompt, P0 >= 1 tokens */
    size_t prompt_len;
    const char *session_id;       /* X-Session-ID (NULL: none) */
    const cJSON *sampling_params; /* logprobs are collected when it has a non-null "logprobs" */
    const char *model;
    const char *cache_salt;
    int routes;                /* request and trace routed experts (R3) */
    int sample_support;        /* client.stack 2086: ask every turn for the sampler's support */
    int multi_turn;            /* 1: §6 path (default); 0: single-turn template */
    int append_eos_after_stop; /* multi-turn: append eos_id after a non-EOS stop (loss 0) */
    int64_t eos_id;            /* -1: no EOS token */
    int64_t max_input_length;  /* stop before a turn whose prompt is longer; <= 0: no limit */
    int finish_session;        /* POST /finish_session at the end (default 1) */
    sr_rollout_env env;
    sr_trace_opts trace_opts; /* max_rows, max_bytes: the tokens-per-rollout limit (above) */
    sr_rollout_quirks quirks;
    sr_rollout_hook after_turn; /* may be NULL */
    void *hook_ctx;
    size_t capture_bytes; /* > 0: keep the exchanges of the last turns (below), each response's
                             first capture_bytes bytes; 0: nothing is kept */
    sr_rollout_version_fn trainer_version; /* NULL: turns are not stamped (stamp_version -1) */
    void *version_ctx;
    /* A recorded conversation instead of the seeded environment (`syncroll replay`): script[k]
     * is the token_ids of turn k+2's request (script_n of them; env.max_turns = script_n + 1).
     * After turn k+1 the observation is what script[k] holds past input_ids and the turn's
     * output, which it must start with (else replay.prefix naming the first differing
     * position). NULL: the seeded environment. */
    const int32_t *const *script;
    const size_t *script_len;
    size_t script_n;
    /* SGLang's masked padding (sgl-project/sglang#36404; engines.masked_padding; 0: off): the
     * prompt rows p >= mask_chunk with p % mask_chunk < mask_rows may come back as -1 rows,
     * which the trace then holds (trace_opts.masked_rows) and the verifier does not compare.
     * Copied into the result. */
    int64_t mask_chunk, mask_rows;
    sr_rollout_reply_hook on_reply; /* may be NULL (`syncroll replay`'s meta checks) */
    void *reply_ctx;
} sr_rollout_config;

#define SR_ROLLOUT_CONFIG_INIT                                                                     \
    {                                                                                              \
        NULL, 0, NULL, NULL, NULL, NULL, 1, 0, 1, 0, -1, 0, 1, {0, 1, 0, 0, 0},                    \
            SR_TRACE_OPTS_INIT, {0, 0, 0}, NULL, NULL, 0, NULL, NULL, NULL, NULL, 0, 0, 0, NULL,   \
            NULL                                                                                   \
    }

/* What one turn did; timings in ms, sizes in bytes. */
typedef struct sr_rollout_turn {
    int engine;                              /* engine index the client addressed */
    char engine_id[SR_CLIENT_ENGINE_ID_MAX]; /* from "syncroll", "" if absent */
    int n_attempts;
    sr_client_attempt *attempts; /* n_attempts records (owned) */
    int http_status;
    int64_t prompt_len;     /* P_k */
    int64_t generated;      /* G_k (model tokens, before any added EOS) */
    int64_t obs_tokens;     /* observation tokens the environment answered */
    int64_t start_sent;     /* routed_experts_prompt_start in the body, -1 if none */
    int64_t route_rows;     /* rows the response carried */
    int64_t weight_version; /* the engine's weight_version for this reply, -1 if unknown */
    int64_t stamp_version;  /* the trainer's version stamped on the turn's output, -1: none */
    int64_t first_version;  /* the engine's version of the pass that sampled the turn's first
                               token (route row P_k - 1), -1 if it did not say */
    char finish_reason[16]; /* "" for null */
    int added_eos;
    double request_ms, splice_ms, decode_ms, wait_ms, record_ms;
    /* Thread CPU time of the turn's phases when the client sampled its generate (cpu_sampled;
     * sr_client_opts.cpu_every), else 0. */
    int cpu_sampled;
    double request_cpu_ms, splice_cpu_ms, record_cpu_ms;
    uint64_t bytes_sent, bytes_received, bytes_total;
} sr_rollout_turn;

/*
 * Exchanges kept for failure evidence (capture_bytes > 0): the request and response bytes and
 * response headers of the last SR_ROLLOUT_KEEP_EXCHANGES turns, turn k in slot
 * (k - 1) % SR_ROLLOUT_KEEP_EXCHANGES (sr_client_exchange: the client hands its buffers over
 * without copying the request). A failed turn's exchange is its last attempt's.
 */
#define SR_ROLLOUT_KEEP_EXCHANGES 4

typedef struct sr_rollout_exchange {
    int turn; /* 1-based turn the slot holds, 0 when empty */
    sr_client_exchange x;
} sr_rollout_exchange;

typedef struct sr_rollout_result {
    int code;        /* 0 or the rollout's error */
    sr_err err;      /* its message */
    int failed_turn; /* 1-based turn of the failure, 0 for setup or finalize, -1 if none */
    int32_t *prompt_ids;
    size_t prompt_len;
    int32_t *response_ids;
    size_t response_len;
    uint8_t *loss_mask; /* response_len entries */
    double *logprobs;   /* response_len entries, NULL when not collected */
    char stop_reason[16];
    sr_ndarray routes;     /* [prompt_len + response_len, L, K], owned; empty without routes */
    int64_t captured_rows; /* rows captured (the rest is padding) */
    int64_t *row_version;  /* routes.shape[0] entries (see above), NULL without routes */
    int64_t *held_version;
    sr_rollout_turn *turns;
    int n_turns;
    double total_ms, finalize_ms;
    int finalize_cpu_sampled; /* a turn was sampled: finalize_cpu_ms holds its CPU time */
    double finalize_cpu_ms;
    sr_rollout_exchange exchanges[SR_ROLLOUT_KEEP_EXCHANGES]; /* (above) */
    int64_t mask_chunk, mask_rows; /* the config's (sglang#36404's masked padding) */
    /* The routes' storage (above, "Ownership"): a reference to the client's block cache, the
     * block finalize handed over (owned by the result; `routes` borrows it) and its size in
     * bytes; NULL, NULL, 0 without routes. */
    sr_block_cache *routes_cache;
    void *routes_block;
    size_t routes_cap;
} sr_rollout_result;

/* Runs one rollout on `k`. Returns result->code (0 or an error, also in err). */
int sr_rollout_run(sr_rollout_result *result, sr_client_conn *k, const sr_rollout_config *cfg,
                   sr_err *err);

/*
 * Runs n rollouts (cfgs[i] -> results[i]) with at most `limit` in flight, over the client's
 * engines. Results do not depend on scheduling (each rollout's requests, jitter and environment
 * are functions of its own config). Returns 0 if all succeeded, else the code of the lowest-index
 * failure with its message (prefixed "rollout i: ") in err; setup errors as sr_client_parallel.
 */
int sr_rollout_run_batch(sr_rollout_result *results, const sr_rollout_config *cfgs, size_t n,
                         const sr_client *c, int limit, sr_err *err);

void sr_rollout_result_release(sr_rollout_result *r);

/* The exchange of 1-based turn `turn` if it is still kept, else NULL. */
const sr_client_exchange *sr_rollout_exchange_of(const sr_rollout_result *r, int turn);

/* Frees the kept exchanges only (once a rollout is judged, its bytes are not needed). */
void sr_rollout_drop_exchanges(sr_rollout_result *r);

#endif /* SR_ROLLOUT_H */
