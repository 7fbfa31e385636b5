/*
 * sr_oracle: the routing oracle, a deterministic mock MoE language model.
 *
 * Every token, logprob and route row the mock engine emits is a pure function of (scenario
 * seed, model shape, weight fingerprints, token prefix), so the verifier can recompute each one
 * exactly (design.md §2). Route rows at MoE layer l depend on the fingerprint of the weights the
 * engine actually applied for layer l (sr_weights), so stale, partial or corrupted weight syncs
 * show up as wrong routes at exactly the affected layers; tokens and logprobs depend on the
 * fingerprint of the global tensors (embedding, output head). Layer fingerprints are indexed by
 * MoE layer slot (0 .. num_layers-1, in layer_indices order), exactly as
 * sr_weights_fingerprints() returns them for the same layer_indices.
 *
 * Row semantics (skyrl.md §5.1): row i holds the routes of the forward pass whose input is
 * token i; a request with prompt length P producing G tokens yields rows 0 .. P+G-2 (P+G-1
 * rows), and routed_experts_prompt_start = s asks for rows [s, P+G-1).
 *
 * ---- The exact functions (normative; another program must reproduce them bit for bit) ----
 *
 * All integers are unsigned 64-bit, arithmetic is modulo 2^64, ^ is XOR, >> is a logical shift.
 * Token ids are non-negative and enter the hashes as their value (t, not a byte string).
 *
 *   G          = 0x9E3779B97F4A7C15
 *   mix(z)     = z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB;
 *                z ^= z >> 31; return z                      (the splitmix64 finaliser)
 *   draw(s, k) = mix(s + G * (k + 1))       (output k = 0, 1, ... of splitmix64 from state s)
 *   unit(x)    = (x >> 11) * 2^-53          (a double in [0, 1), exact)
 *   below(x,n) = (x * n) >> 64 computed on the 128-bit product (uniform in [0, n))
 *
 * Prefix hash (O(1) per appended token, so an n-token sequence costs O(n)):
 *   h_empty      = mix(seed ^ 0x7072656669786831)
 *   push(h, t)   = mix(h ^ mix(t + G))
 *   h_i          = hash of tokens 0..i = push(...push(push(h_empty, t_0), t_1)..., t_i)
 *
 * Route row i at MoE layer slot l (0 <= l < num_layers, global layer index g_l = layer_indices[l],
 * layer fingerprint f_l):
 *   s   = mix(mix(h_i ^ f_l) + G * (g_l + 1))
 *   x_j = draw(s, j) for j = 0 .. K-1
 *   A partial Fisher-Yates shuffle of the virtual array a = [0, 1, ..., E-1]:
 *     for j = 0 .. K-1: r = j + below(x_j, E - j); swap(a[j], a[r]); expert_j = a[j]
 *   The row is [expert_0, ..., expert_{K-1}] in that order: K distinct ids in [0, E). (Only the
 *   touched slots need storing; K draws exactly, no rejection.)
 *
 * Next token after tokens 0..i (the token the forward pass on token i samples), with global
 * fingerprint F:
 *   z  = mix(h_i ^ F ^ 0x6E657874746F6B31)
 *   u0 = draw(z, 0), u1 = draw(z, 1), u2 = draw(z, 2), u3 = draw(z, 3)   (always all four)
 *   EOS:      is_eos = (eos_id >= 0) and unit(u0) < eos_rate
 *   token:    is_eos                  -> eos_id
 *             eos_id < 0              -> below(u1, vocab)
 *             otherwise               -> t = below(u1, vocab - 1); t + 1 if t >= eos_id else t
 *             (so a non-EOS draw never yields eos_id and the EOS rate is exact)
 *   logprob:  lp = 0.0 - logprob_scale * unit(u2)       (IEEE double; in (-scale, 0], never -0.0)
 *             if unit(u3) < nonfinite_rate: lp = [NaN, +inf, -inf][u3 mod 3]
 *
 * Stop rules of sr_oracle_generate, checked after each generated token in this order; the
 * first that holds ends the generation and the token stays in the output (as vLLM does for EOS
 * and stop_token_ids):
 *   1. token == eos_id and not ignore_eos                    -> "stop"
 *   2. token is one of the request's stop_ids                -> "stop"
 *   3. a model stop sequence s (length m) equals the last m generated tokens (the match must lie
 *      entirely inside the generated tokens; a continuation's prior_generated prompt tail
 *      counts as generated)                                  -> "stop"
 *   4. max_tokens tokens were generated                      -> "length"
 *
 * ---- Ownership, errors, thread-safety ----
 *
 * sr_oracle is opaque and immutable after sr_oracle_new (which deep-copies the model: layer
 * indices and stop sequences); free it with sr_oracle_free. Every function taking a
 * `const sr_oracle *` may run concurrently on the same oracle. Invalid models fail with
 * SR_E_ORACLE_MODEL, tokens outside [0, vocab) with SR_E_ORACLE_TOKEN, bad requests with
 * SR_E_ORACLE_REQUEST, allocation failure with SR_E_NOMEM.
 */
#ifndef SR_ORACLE_H
#define SR_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"

/* Bounds of a model shape. Expert ids must fit a signed int32 on the wire, hence 2^31. */
#define SR_ORACLE_MAX_VOCAB    ((int64_t)1 << 31)
#define SR_ORACLE_MAX_LAYERS   1024
#define SR_ORACLE_MAX_EXPERTS  ((int64_t)1 << 31)
#define SR_ORACLE_MAX_TOPK     64
#define SR_ORACLE_MAX_STOPS    64                 /* model stop sequences */
#define SR_ORACLE_MAX_STOP_LEN 64                 /* tokens per stop sequence */
#define SR_ORACLE_MAX_STOP_IDS 1024               /* request-level stop token ids */
#define SR_ORACLE_MAX_SEQ      ((int64_t)1 << 24) /* prompt length + max_tokens */
#define SR_ORACLE_MAX_LP_SCALE 1.0e6

/* One stop sequence of token ids (1 .. SR_ORACLE_MAX_STOP_LEN ids, each in [0, vocab)). */
typedef struct sr_oracle_stopseq {
    const int32_t *ids;
    int len;
} sr_oracle_stopseq;

/*
 * Model shape. Plain struct: start from SR_ORACLE_MODEL_INIT and set the fields. Validated by
 * sr_oracle_new (SR_E_ORACLE_MODEL names the offending field):
 *   vocab          1 .. SR_ORACLE_MAX_VOCAB (token ids in [0, vocab)); >= 2 if eos_id >= 0
 *   num_layers     1 .. SR_ORACLE_MAX_LAYERS MoE layers
 *   layer_indices  num_layers global layer indices, >= 0, strictly increasing
 *   experts        E, 1 .. SR_ORACLE_MAX_EXPERTS (> 256 and > 32768 widen the route dtype)
 *   topk           K, 1 .. min(E, SR_ORACLE_MAX_TOPK)
 *   eos_id         -1 (no EOS token) or in [0, vocab)
 *   eos_rate       probability of EOS per generated token, in [0, 1]
 *   stops          num_stops (0 .. SR_ORACLE_MAX_STOPS) stop sequences
 *   logprob_scale  logprobs lie in (-scale, 0]; finite, 0 .. SR_ORACLE_MAX_LP_SCALE
 *   nonfinite_rate probability that a logprob is NaN/+inf/-inf (to exercise clamping), [0, 1]
 */
typedef struct sr_oracle_model {
    uint64_t seed;
    int64_t vocab;
    int num_layers;
    const int32_t *layer_indices;
    int64_t experts;
    int topk;
    int64_t eos_id;
    double eos_rate;
    int num_stops;
    const sr_oracle_stopseq *stops;
    double logprob_scale;
    double nonfinite_rate;
} sr_oracle_model;

#define SR_ORACLE_MODEL_INIT                                                                       \
    {                                                                                              \
        0, 0, 0, NULL, 0, 0, -1, 0.0, 0, NULL, 8.0, 0.0                                            \
    }

typedef struct sr_oracle sr_oracle;

/* Validates and deep-copies `model` into a new oracle (*out, freed with sr_oracle_free). */
int sr_oracle_new(sr_oracle **out, const sr_oracle_model *model, sr_err *err);

/* Frees an oracle. NULL is a no-op. */
void sr_oracle_free(sr_oracle *o);

/* The oracle's copy of its model (borrowed; pointers inside live as long as the oracle). */
const sr_oracle_model *sr_oracle_model_of(const sr_oracle *o);

/* ---- the primitive functions (documented above) ---- */

/* h_empty for this oracle's seed. */
uint64_t sr_oracle_prefix_empty(const sr_oracle *o);

/* push(h, token): the prefix hash after appending `token` (>= 0; not range-checked here). */
uint64_t sr_oracle_prefix_push(uint64_t h, int32_t token);

/*
 * Writes the K experts of the route row for prefix hash `h` (= h_i) at MoE layer slot `layer`
 * (0 <= layer < num_layers, not checked) with that layer's fingerprint into experts[0..K).
 */
void sr_oracle_route_row(int32_t *experts, const sr_oracle *o, int layer, uint64_t layer_fp,
                         uint64_t h);

/* The token sampled after prefix hash `h` and its logprob (before any clamping). */
void sr_oracle_next(int32_t *token, double *logprob, const sr_oracle *o, uint64_t global_fp,
                    uint64_t h);

/*
 * Route rows [row_begin, row_end) of the token sequence tokens[0..n) into `out`, a C-order
 * [row_end - row_begin, num_layers, K] array of `dtype` (uint8, int16 or int32, which must hold
 * E - 1) of at least out_cap bytes. layer_fps has num_layers entries. Requires
 * row_begin <= row_end <= n. *max_expert (may be NULL) receives the largest id written, or -1
 * for no rows: the caller picks the canonical wire dtype from it. Errors: SR_E_ORACLE_TOKEN for a
 * token out of range among tokens[0..row_end), SR_E_ORACLE_REQUEST for the range, dtype or
 * capacity. Cost: O(row_end) prefix hashing plus about 160 instructions per (row, layer) at K = 8
 * and E = 64 with AVX2, 290 without (the row filler of sr_oracle_priv.h, which computes what
 * sr_oracle_route_row defines); callers with many rows may split [row_begin, row_end) across
 * threads.
 */
int sr_oracle_routes(void *out, size_t out_cap, int32_t *max_expert, sr_dtype dtype,
                     const sr_oracle *o, const uint64_t *layer_fps, const int32_t *tokens, size_t n,
                     size_t row_begin, size_t row_end, sr_err *err);

/*
 * The route rows of the prefix hashes h[0..n) into `out`, a C-order [n, num_layers, K] array of
 * `dtype` (uint8, int16 or int32, which must hold E - 1) of at least out_cap bytes: row r at
 * layer slot l is what sr_oracle_route_row writes for (l, layer_fps[l], h[r]). For a caller that
 * holds the prefix hashes already (the verifier: rows of one weight version at a time, in the
 * dtype of the trace it compares them with). layer_fps has num_layers entries. Errors:
 * SR_E_ORACLE_REQUEST for the dtype or the capacity. Cost: the row filler's (sr_oracle_routes)
 * without the prefix hashing, plus E stores per call; its working state (about 24 KiB) is on the
 * stack.
 */
int sr_oracle_routes_of(void *out, size_t out_cap, sr_dtype dtype, const sr_oracle *o,
                        const uint64_t *layer_fps, const uint64_t *h, size_t n, sr_err *err);

/* ---- generation ---- */

typedef enum sr_oracle_finish {
    SR_ORACLE_FINISH_STOP = 0,
    SR_ORACLE_FINISH_LENGTH = 1
} sr_oracle_finish;

/* "stop" or "length" (the wire's finish_reason). */
const char *sr_oracle_finish_name(sr_oracle_finish f);

/*
 * A generate request. Plain struct: start from SR_ORACLE_REQUEST_INIT.
 *   prompt, prompt_len   P >= 1 tokens, each in [0, vocab)
 *   max_tokens           1 .. ; P + max_tokens <= SR_ORACLE_MAX_SEQ
 *   ignore_eos           1: EOS does not stop (vLLM's ignore_eos)
 *   stop_ids             request-level stop token ids (vLLM's stop_token_ids), each in [0, vocab)
 *   prior_generated      0 .. P: the last prior_generated prompt tokens count as already
 *                        generated for stop-sequence matching, so a generation split in two
 *                        calls (e.g. across a weight update) stops where one call would
 *   route_start          -1: no routes; else 0 .. P: write rows [route_start, P+G-1)
 *   route_dtype          uint8, int16 or int32; must hold E - 1
 */
typedef struct sr_oracle_request {
    const int32_t *prompt;
    size_t prompt_len;
    int32_t max_tokens;
    int ignore_eos;
    const int32_t *stop_ids;
    size_t num_stop_ids;
    size_t prior_generated;
    int64_t route_start;
    sr_dtype route_dtype;
} sr_oracle_request;

#define SR_ORACLE_REQUEST_INIT                                                                     \
    {                                                                                              \
        NULL, 0, 0, 0, NULL, 0, 0, -1, SR_DTYPE_INT32                                              \
    }

/*
 * Caller buffers and results of sr_oracle_generate. The caller sets the buffers; generate fills
 * the results.
 *   tokens       capacity >= max_tokens
 *   logprobs     capacity >= max_tokens, or NULL if not wanted
 *   routes       when route_start >= 0: capacity routes_cap bytes >= (P + max_tokens - 1 -
 *                route_start) * num_layers * K * itemsize (checked before generating)
 *   num_tokens   G, 1 .. max_tokens
 *   finish       why generation ended
 *   num_rows     rows written, P + G - 1 - route_start (0 without routes)
 *   routes_max   largest expert id written, -1 if none (pick the canonical dtype from it)
 */
typedef struct sr_oracle_output {
    int32_t *tokens;
    double *logprobs;
    void *routes;
    size_t routes_cap;
    int32_t num_tokens;
    sr_oracle_finish finish;
    int64_t num_rows;
    int32_t routes_max;
} sr_oracle_output;

#define SR_ORACLE_OUTPUT_INIT                                                                      \
    {                                                                                              \
        NULL, NULL, NULL, 0, 0, SR_ORACLE_FINISH_LENGTH, 0, -1                                     \
    }

/*
 * Generates tokens from req->prompt with fingerprints (global_fp, layer_fps[num_layers]) and
 * fills `out` (see above). Cost O(P + G) prefix hashing plus O(rows * num_layers * K) routes.
 * Errors: SR_E_ORACLE_REQUEST, SR_E_ORACLE_TOKEN (a prompt token or stop id out of range). On
 * error the results in `out` are reset and the buffers' contents are unspecified.
 */
int sr_oracle_generate(sr_oracle_output *out, const sr_oracle *o, uint64_t global_fp,
                       const uint64_t *layer_fps, const sr_oracle_request *req, sr_err *err);

#endif /* SR_ORACLE_H */
