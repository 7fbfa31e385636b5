/*
 * gen: one generate request of the mock engine, from the oracle to the response body.
 *
 * A job runs the routing oracle (sr_oracle) for a parsed request with the weight fingerprints
 * the engine holds, can be cut short (pause mode "abort") or continued after a weight update
 * (pause mode "keep": tokens already sampled stay, the rest is generated with the new weights,
 * so a request may straddle two versions), applies the engine-side model faults, and serialises
 * the reply exactly as the reference server does (skyrl.md §1.3, §1.4): compact JSON,
 * keys in reference order, logprobs clamped to -9999.0, routes rows [start, P+G-1) as a
 * canonical-dtype envelope, then the extra key "syncroll".
 *
 * /skyrl/v1/generate body:
 *   {"choices":[{"token_ids":[..],"finish_reason":"stop"|"length"|"abort",
 *                "logprobs":{"content":[{"logprob":-0.1},..]}|null,
 *                "routed_experts":{"data":..,"shape":[rows,L,K],"dtype":..}|null,
 *                "rollout_sample_support":{..,"shape":[G,S],"dtype":"int32"}|null  (if enabled)
 *                "<extra>":{..}  (one per field emitted from a definition, in order;
 *                                 lib/sr_gen_extra.h)
 *                "syncroll":{"engine":"engine-0","weight_version":v,
 *                            "rows":[[lo,hi,version],..],"faults":["kind",..]}}]}
 * "rows" lists the weight version of every forward pass the reply depends on, as half-open
 * spans of token positions: position i covers route row i and the token sampled from it
 * (token i+1). The spans cover [min(start, P-1), P+G-1). "faults" is present only when a model
 * or body fault fired.
 * /inference/v1/generate body (vLLM-like; clients read token_ids, finish_reason, logprobs):
 *   {"request_id":"<engine>-<n>","choices":[{"index":0,"token_ids":[..],"finish_reason":..,
 *    "logprobs":..,"syncroll":{..}}]}
 *
 * Another dialect's route (spec/dialect.h; j->route set): sr_gen_body_dialect (gen_dialect.c)
 * writes that wire's frame and routes from the same oracle rows, model faults applied first:
 * rows [start, P+G-1) for vllm, sglang and dynamo; [0, P+G) split into prompt_routed_experts
 * and choices[0].routed_experts for vllm-json (row P+G-1 computed as rows_p_plus_g does); rows
 * [0, P+G-1) plus a filler row arange(K) for nemo-rl; typed by the dialect's dtype rule
 * (scenarios/FORMAT.md §5b shows every frame). Body faults are not applied there.
 *
 * Sample support (rollout_sample_support), row j for generated token j, S = support_k: with
 * h = the oracle's prefix hash of tokens 0..P+j-1 and mix/draw/below as in sr_oracle.h,
 *   s = mix(h ^ 0x737570706F727431); entry 0 = token j;
 *   entry m (1..S-1) = below(draw(s, m - 1), vocab), or -1 (padding) if it equals an earlier entry.
 *
 * Model faults (faults.h), applied to the rows before packing (and before the tokens are
 * written, so a rule may cut them): a fault with a route rule (the kind routes and its aliases
 * routes_all_zero, duplicated_output_rows, routes_dropped, pd_decode_replica, stale_prefix_cache,
 * rows_p_plus_g; spec/fault_grammar.h) is applied by gen_rules.c and nothing else: its selection
 * of rows and layers gets its action ("stale" and "weight_version" compute rows with j->prev,
 * the previous weights or, for weight_version, those of the rule's version, which the server
 * puts there). The others:
 *   prompt_start_ignored   rows [0, P+G-1) whatever the request's start
 *   expert_out_of_range    row `row` (of those returned, clamped), layer `layer`: slot 0 = E
 *   expert_duplicate       same place: slot 1 = slot 0 (needs K >= 2)
 *   stale_draft_model      generated tokens 1, 2, 4, 5, 7, ... (the draft proposes two, the
 *                          target adds the third; token 0 is the prefill's) are sampled, and their
 * rows computed, with the fingerprints held before the last update (the speculative draft model's),
 * while "rows" claims the new version
 *
 * Ownership: a job owns its request (moved in), buffers and weight copies; sr_gen_job_release.
 * Thread-safety: a job belongs to one thread at a time; the oracle may be shared.
 */
#ifndef SR_ENGINE_GEN_H
#define SR_ENGINE_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "engine_faults.h"
#include "sr_fields.h"
#include "request.h"
#include "sr_buf.h"
#include "sr_dtype.h"
#include "sr_err.h"
#include "sr_oracle.h"
#include "spec/stack.h"

/* A weight state as the oracle sees it: reported version and fingerprints. */
typedef struct sr_gen_weights {
    int64_t version;
    uint64_t global_fp;
    uint64_t *layer_fps; /* num_layers entries; owned by whoever filled the struct */
} sr_gen_weights;

typedef enum sr_gen_finish { SR_GEN_STOP = 0, SR_GEN_LENGTH, SR_GEN_ABORT } sr_gen_finish;

/* Weight-version spans of one generation: rows [lo, hi) were computed under `version`. The
 * spans are disjoint and never empty, so a job holds at most one per row whatever the number of
 * syncs during the request, and every row keeps the version that computed it. */

typedef struct sr_gen_span {
    int64_t lo, hi, version;
} sr_gen_span;

/* What the body builder needs besides the job. */
typedef struct sr_gen_ctx {
    const sr_oracle *oracle;
    const char *engine_id;
    int routes;    /* emit routed_experts */
    int support;   /* emit rollout_sample_support (2079 stack: in every reply) */
    int support_k; /* S */
    int64_t request_ordinal;
    size_t max_body; /* bound of the body buffer */
    const sr_field_def
        *extra; /* fields emitted from their definition (lib/sr_gen_extra.h), or NULL */
    int n_extra;
    uint64_t seed;  /* the engine's seed, for the extra fields' values */
    sr_stack stack; /* spec/stack.h: 2086 answers the request's return_sample_support */
    /* sglang#36404's masked padding (engines.masked_padding; 0: off): prompt rows p >= mask_chunk
     * with p % mask_chunk < mask_rows are -1 in every layer and slot */
    int64_t mask_chunk, mask_rows;
} sr_gen_ctx;

typedef struct sr_gen_job {
    sr_gen_request req; /* owned */
    int native;         /* /inference/v1/generate of the skyrl dialect (no routes) */
    /* Another wire's generate route (spec/dialect.h; set by the caller after sr_gen_job_init),
     * or NULL for /skyrl/v1/generate and the skyrl dialect's native route. */
    const sr_dialect_desc *dialect;
    const sr_dialect_route *route;
    int want_routes;
    int64_t row_lo; /* first computed row */
    int32_t *tokens;
    double *logprobs;
    int64_t G;
    sr_gen_finish finish;
    unsigned char *routes; /* rows [row_lo, row_hi) of gen_dtype, [rows, L, K] */
    size_t routes_cap;
    int64_t row_hi;
    sr_dtype gen_dtype;
    sr_gen_span *spans; /* owned; nspans in use of spans_cap */
    size_t nspans, spans_cap;
    sr_gen_weights last; /* the weights of the latest forward pass (owned copy) */
    sr_gen_weights prev; /* the engine's previous weights at start, for stale_prefix_cache */
    int has_prev;
    int64_t clamped; /* logprobs clamped when the body was built */
    int crashed; /* the body failed as the reference server itself fails (a 500, no syncroll code)
                  */
    const sr_fault *model_fault;
    const sr_fault *body_fault;
} sr_gen_job;

/*
 * Prepares a job: takes ownership of *req (reset to SR_GEN_REQUEST_INIT), sizes the buffers.
 * `model_fault` (may be NULL) is the model-layer fault picked for the request;
 * `max_response` bounds the routes buffer (SR_E_ENGINE_REQUEST when the request could exceed it).
 */
int sr_gen_job_init(sr_gen_job *j, sr_gen_request *req, const sr_oracle *o, int native,
                    int want_routes, const sr_fault *model_fault, const sr_fault *body_fault,
                    size_t max_response, sr_err *err);

void sr_gen_job_release(sr_gen_job *j);

/*
 * Generates from scratch with `w` (prev: the engine's previous weights or NULL). Replaces any
 * earlier result.
 */
int sr_gen_run(sr_gen_job *j, const sr_oracle *o, const sr_gen_weights *w,
               const sr_gen_weights *prev, sr_err *err);

/*
 * Keeps the first k tokens (1 <= k < G) and generates the rest with `w` (a weight update
 * happened while the request was held). k outside that range: nothing to redo for k >= G; a
 * fresh run for k <= 0.
 */
int sr_gen_continue(sr_gen_job *j, const sr_oracle *o, const sr_gen_weights *w, int64_t k,
                    sr_err *err);

/* Cuts the result to the first k tokens (0 <= k <= G) with finish_reason "abort". */
void sr_gen_abort(sr_gen_job *j, int64_t k);

/* Serialises the reply (model and body faults applied) into `out` (reset first). */
int sr_gen_body(sr_buf *out, sr_gen_job *j, const sr_gen_ctx *ctx, sr_err *err);

/*
 * Serialises the reply in the job's wire: sr_gen_body when j->route is NULL, else the
 * dialect's body (gen_dialect.c: the same oracle rows and model faults, the dialect's rows rule,
 * dtype rule, encoding and frame; body faults apply to the skyrl envelope only).
 */
int sr_gen_body_dialect(sr_buf *out, sr_gen_job *j, const sr_gen_ctx *ctx, sr_err *err);

/* "stop", "length" or "abort". */
const char *sr_gen_finish_name(sr_gen_finish f);

/* Copies a weight state (allocating layer_fps); release with sr_gen_weights_release. */
int sr_gen_weights_copy(sr_gen_weights *dst, const sr_gen_weights *src, int num_layers,
                        sr_err *err);
void sr_gen_weights_release(sr_gen_weights *w);

#endif /* SR_ENGINE_GEN_H */
