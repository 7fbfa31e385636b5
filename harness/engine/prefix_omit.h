/*
 * prefix_omit: the engine side of vLLM's routed-expert prefix omission
 * (vllm-project/vllm#57025 and #57966, `--enable-omit-prefix-routed-experts`; the scenario key
 * engines.omit_prefix_routes, vllm dialect only).
 *
 * With the option on, vLLM records a request's num_cached_tokens at its first successful cache
 * admission and returns prompt routes from max(routed_experts_prompt_start, num_cached_tokens);
 * the session id (X-Session-ID) is folded into the cache salt, so only requests of the same
 * session share cached blocks. The mock keeps, per session, the token ids the session's previous
 * request COMPUTED (its prompt and every generated token but the last, which no forward pass
 * read) and answers a new prompt with
 *     num_cached_tokens = floor(min(lcp(previous, prompt), P - 1) / block) * block
 * where lcp is the common prefix: vLLM's prefix cache hits whole blocks only ("the computed
 * blocks must be full") and at most P - 1 tokens, since the last prompt token is recomputed to
 * obtain logits (KVCacheManager.get_computed_blocks, vllm/v1/core/kv_cache_manager.py @
 * 003df2961dd8830c317a61f9745ccd557da9fa06: max_cache_hit_length = request.num_tokens - 1).
 * Only the session's latest request is remembered (vLLM could also hit blocks of older requests
 * of the same session; a shorter hit is always a legal answer, as after an eviction).
 *
 * Bounds: at most SR_PREFIX_MAX_SESSIONS sessions and max_tokens recorded tokens in all
 * (SR_PREFIX_MAX_TOKENS by default, 256 MiB); a record past either evicts the least recently used
 * other sessions until it fits, and those sessions' next requests miss (num_cached_tokens 0), as a
 * real cache that evicted their blocks answers. A single record longer than max_tokens is not kept
 * (its session misses next time).
 *
 * Thread-safety: every call locks the table. Ownership: the table copies what it records.
 */
#ifndef SR_ENGINE_PREFIX_OMIT_H
#define SR_ENGINE_PREFIX_OMIT_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"

#define SR_PREFIX_MAX_SESSIONS  1024
#define SR_PREFIX_MAX_TOKENS    ((size_t)64 << 20) /* default bound of the tokens recorded */
#define SR_PREFIX_BLOCK_DEFAULT 16 /* the KV block size a vLLM platform sets when none is given */
#define SR_PREFIX_BLOCK_MAX     4096

typedef struct sr_prefix_table sr_prefix_table;

/* max_tokens: the bound of the tokens recorded over all sessions; 0: SR_PREFIX_MAX_TOKENS. */
int sr_prefix_table_new(sr_prefix_table **out, size_t max_tokens, sr_err *err);
void sr_prefix_table_free(sr_prefix_table *t);

/*
 * The cache hit of a prompt against `held` computed tokens (pure): the common prefix, capped at
 * P - 1 and floored to a multiple of `block` (>= 1). 0 when P is 0.
 */
int64_t sr_prefix_hit(const int32_t *held, size_t n_held, const int32_t *prompt, size_t P,
                      int64_t block);

/* num_cached_tokens of `prompt` in `session` (sr_prefix_hit against the session's record; 0 for
 * an unknown or evicted session). Marks the session as recently used. */
int64_t sr_prefix_cached(sr_prefix_table *t, const char *session, const int32_t *prompt, size_t P,
                         int64_t block);

/*
 * Records what a request of `session` computed: the prompt's P tokens and the first `n_out` of
 * the generated ones (the caller passes G - 1). Replaces the session's record; may evict the
 * least recently used session. SR_E_NOMEM leaves the table as it was.
 */
int sr_prefix_record(sr_prefix_table *t, const char *session, const int32_t *prompt, size_t P,
                     const int32_t *out, int64_t n_out, sr_err *err);

/* Sessions evicted so far (for the state document and tests). */
int64_t sr_prefix_evictions(sr_prefix_table *t);

#endif /* SR_ENGINE_PREFIX_OMIT_H */
