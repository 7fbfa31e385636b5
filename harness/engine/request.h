/*
 * request: parsing and validation of a generate request body (docs/reference/skyrl.md §1.2, §1.3).
 *
 * Accepted body: a JSON object with
 *   "token_ids"        required, 1.. integers in [0, vocab) (integer literals only)
 *   "sampling_params"  optional object of vLLM SamplingParams fields. Unknown field names are
 *                      rejected (vLLM raises TypeError for them). Used here: max_tokens (null or
 *                      >= 1; default from the config), logprobs (null or >= 0), n (1 only),
 *                      ignore_eos (bool), stop_token_ids (null or ids in [0, vocab)),
 *                      routed_experts_prompt_start (null or an integer, not a bool, in [0, P]).
 *                      The others are type-checked loosely and ignored (no tokenizer: `stop`
 *                      strings cannot match).
 *   "model"            optional string; "cache_salt" optional non-empty string (vLLM rejects an
 *                      empty salt); "features" optional object or null (ignored);
 *                      "return_sample_support" optional boolean or null (want_support; the engine
 *                      acts on it under the later stack only, spec/stack.h).
 * Other top-level keys are ignored, as the reference handler ignores them. P + max_tokens must
 * not exceed max_seq.
 *
 * Every violation is SR_E_ENGINE_REQUEST with a message naming the key (and line:col), which the
 * server returns as HTTP 400 {"error":{"message":...,"type":"BadRequestError","code":400}}.
 * The parser never trusts sizes from the body: the body length is bounded by the caller and
 * every array is bounded by max_seq.
 *
 * Ownership: sr_gen_request owns its arrays and strings; release with sr_gen_request_release.
 * Thread-safety: reentrant.
 */
#ifndef SR_ENGINE_REQUEST_H
#define SR_ENGINE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "spec/dialect.h"
#include "sr_err.h"
#include "sr_jdom.h"

typedef struct sr_gen_limits {
    int64_t vocab;              /* token ids must be in [0, vocab) */
    int64_t max_tokens_default; /* when max_tokens is absent or null */
    int64_t max_seq;            /* bound on P + max_tokens */
} sr_gen_limits;

typedef struct sr_gen_request {
    int32_t *tokens; /* owned, P entries */
    size_t P;
    int64_t max_tokens;
    int64_t logprobs; /* -1: null (no logprobs) */
    int ignore_eos;
    int32_t *stop_ids; /* owned */
    size_t n_stop_ids;
    int64_t route_start; /* 0 unless routed_experts_prompt_start was given */
    int has_route_start;
    char *model;      /* owned, NULL if absent */
    char *cache_salt; /* owned, NULL if absent */
    int no_routes;    /* the dialect's routes switch was absent or false */
    int no_tokens;    /* the route's token-ids switch was absent or false */
    /* The later stack's sample-support capture (spec/stack.h): "return_sample_support" at the top
     * level (null or a boolean; true asks), and sampling_params.top_k as the server's check sees
     * it: top_k_int 1 when it is an integer literal (value in top_k), top_k_repr the value as
     * Python's repr prints it for the 400 ("None" when absent or null, "True", "2.5", ...). */
    int want_support;
    int top_k_int;
    int64_t top_k;
    char top_k_repr[32];
} sr_gen_request;

#define SR_GEN_REQUEST_INIT                                                                        \
    {                                                                                              \
        NULL, 0, 0, -1, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0, 0, 0, 0, "None"                        \
    }

/* Parses and validates `len` bytes. On error `out` is SR_GEN_REQUEST_INIT. */
int sr_gen_request_parse(sr_gen_request *out, const char *body, size_t len,
                         const sr_gen_limits *lim, sr_err *err);

/*
 * Parses a generate request of another wire (spec/dialect.h), whose keys `shape` names. With
 * shape->strict_params this is sr_gen_request_parse (the route start kept only when shape has a
 * start key). Otherwise, the body is a JSON object with:
 *   shape->tokens_key       required, 1.. token ids as above ("prompt", "input_ids", ...)
 *   shape->params           optional object (absent: the top level) holding
 *     shape->max_tokens_key   null or 1..max_seq (default from the config), and
 *     "ignore_eos"            null or a boolean
 *   shape->start_key        null or an integer in [0, P] (in params when start_in_params)
 *   shape->routes_switch    null or a boolean; routes only when true (no_routes otherwise)
 *   shape->tokens_switch    null or a boolean; token ids only when true (no_tokens otherwise)
 *   "model"                 optional string
 * Every other key is ignored (these wires carry many: messages, stream, nvext, ...). Errors as
 * sr_gen_request_parse: SR_E_ENGINE_REQUEST naming the key, SR_E_NOMEM.
 */
int sr_gen_request_parse_as(sr_gen_request *out, const char *body, size_t len,
                            const sr_gen_limits *lim, const sr_dialect_request *shape, sr_err *err);

/* The longest body sr_gen_request_parse_in reads on its fast path (32 KiB, ~5,000 token ids). */
#define SR_GEN_REQUEST_FAST_MAX ((size_t)32 << 10)

/*
 * sr_gen_request_parse_as (shape NULL: sr_gen_request_parse) with the same result, the same
 * errors and the same messages, faster. When `j` is not NULL, body[len] is read, and a body of at
 * most SR_GEN_REQUEST_FAST_MAX bytes with body[len] == '\0' is first parsed by `j` (an sr_jdom,
 * whose arena is reused from request to request; its rules are set to SR_JDOM_REFERENCE) instead
 * of as an sr_json document, which copies the text, allocates every node and indexes every
 * position. A body the fast path does not accept entirely (any error, a duplicate key, an escaped
 * NUL, text that is not UTF-8, a number that overflows, an arena past j's maximum) is read again
 * as a document, which decides and words the answer. On return `j` holds the body's tree
 * (sr_jdom_arena_used(j) > 0) exactly when the fast path read the request, and no tree
 * otherwise. `j` is not thread-safe: one call at a time per sr_jdom.
 */
int sr_gen_request_parse_in(sr_gen_request *out, const char *body, size_t len,
                            const sr_gen_limits *lim, const sr_dialect_request *shape, sr_jdom *j,
                            sr_err *err);

void sr_gen_request_release(sr_gen_request *r);

#endif /* SR_ENGINE_REQUEST_H */
