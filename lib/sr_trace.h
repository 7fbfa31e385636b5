/*
 * sr_trace: the token-metadata trace and the routed-expert trace of a multi-turn trajectory
 * (docs/reference/skyrl.md §5.2, §5.3, with the later fixes of §5.4 and §5.6b).
 *
 * Token-metadata trace (sr_meta_trace). Rows of per-token metadata arrive in chunks, each with
 * the row count the caller expects; every row has the same row shape (the chunk's trailing
 * dimensions). append() checks, in this order (the reference's order):
 *   1. the trace is finalized                -> SR_E_TRACE_FINALIZED
 *   2. expected_rows < 0                     -> SR_E_TRACE_EXPECTED_ROWS
 *   3. rows is NULL, or its descriptor is inconsistent (nbytes != prod(shape) * itemsize, NULL
 *      data with bytes, data not aligned to the item size)
 *                                            -> SR_E_INVAL
 *   4. rows has no dimension (ndim 0)        -> SR_E_TRACE_NO_TOKEN_DIM
 *   5. shape[0] != expected_rows             -> SR_E_TRACE_ROW_COUNT
 *      ("token metadata has <n> rows, expected <e>")
 *   6. (the reference's non-contiguous check cannot happen: an sr_ndarray is C-contiguous)
 *   7. the first append fixes the schema (row shape, dtype), even with 0 rows. Later, a row shape
 *      change is SR_E_TRACE_SCHEMA. A dtype change widens the trace losslessly when NumPy's
 *      promotion of the two dtypes is one of them and stays in the same family (integer with
 *      integer, float with float): uint8 -> int16 -> int32, int16 + uint8 stays int16, float32 ->
 *      float64; never narrower, rows already held are converted. Other changes (uint8 + int8,
 *      int16 + uint16, int -> float, bool <-> int) are SR_E_TRACE_SCHEMA ("token metadata dtype
 *      changed from X to Y"). With the quirk `lock_first_dtype` (bug skyrl-dtype-lock) any dtype
 *      change is SR_E_TRACE_SCHEMA ("token metadata schema changed from ... to ..."), as in
 *      the reference at #2079.
 *   8. more than max_rows rows or max_bytes bytes in all -> SR_E_LIMIT.
 * A failed append leaves the trace exactly as it was. finalize(expected_rows) checks: finalized
 * -> SR_E_TRACE_FINALIZED; held rows != expected_rows -> SR_E_TRACE_ROW_COUNT (the trace stays
 * usable); no chunk ever appended -> SR_E_TRACE_NO_CHUNKS; then it marks the trace finalized
 * and hands over all rows as one array in the trace's (widest) dtype.
 *
 * Ownership: unlike the reference (which keeps the caller's chunks by reference), the trace
 * COPIES every chunk into storage it owns, so the caller may reuse or free a chunk as soon as
 * append returns. finalize() moves that storage into `out`, which the caller then owns
 * (out->owned = 1; release with sr_ndarray_release); a failed finalize sets `out` to
 * SR_NDARRAY_INIT. Traces are freed with their _free function, finalized or not (a routed-expert
 * trace with a block cache puts the storage it still holds back: sr_route_trace_set_cache).
 * The routed-expert trace lives in sr_route_trace.c; both share the private sr_trace_priv.h.
 *
 * Routed-expert trace (sr_route_trace). Holds the route rows captured so far for one
 * trajectory; a route row i holds the top-K experts of every MoE layer for the forward pass whose
 * input is token i (§5.1). prompt_start = rows held = the first token position whose route is
 * not yet held = the routed_experts_prompt_start of the next request.
 * record(prompt_token_count P, generated_token_count G, routes, layer_indices) checks:
 *   finalized -> SR_E_TRACE_FINALIZED; P < prompt_start -> SR_E_TRACE_PROMPT_START; G < 1 ->
 *   SR_E_TRACE_NO_GENERATION; routes not a 3-D integer array -> SR_E_ROUTES_INVALID; a negative
 *   index -> SR_E_ROUTES_NEGATIVE; an index beyond int32 -> SR_E_ROUTES_TOO_WIDE; invalid
 *   layer_indices -> SR_E_TRACE_LAYERS; then the routes are compacted to their canonical dtype
 *   (uint8/int16/int32, §2.3) and appended with expected_rows = P - prompt_start + G - 1 (so a
 *   count mismatch is SR_E_TRACE_ROW_COUNT and a [layers, topk] change SR_E_TRACE_SCHEMA; the
 *   dtype widens across turns unless `lock_first_dtype`).
 * Layer indices (§5.6b, optional): `layer_indices` names the MoE layer of each of the L route
 * layers; NULL stands for the identity 0..L-1 (as the reference's covering_all_layers). They
 * must be non-empty, strictly increasing, first >= 0, last <= 2^31-1 and exactly L of them
 * (all SR_E_TRACE_LAYERS, see sr_validate_layer_indices). The list is pinned by the first
 * record; a different list later is SR_E_TRACE_LAYERS ("routed-expert layer indices changed
 * mid-trajectory from (..) to (..)").
 * finalize(token_count T, loss_mask of T entries) checks, in this order:
 *   finalized -> SR_E_TRACE_FINALIZED; mask length != T -> SR_E_TRACE_LOSS_MASK;
 *   prompt_start > T -> SR_E_TRACE_TOO_MANY_ROWS; the first loss-active target j (mask[j] != 0)
 *   with j > prompt_start -> SR_E_TRACE_MISSING_ROUTE with err->offset = j and the message
 *   "missing routed-expert row for loss-active target at token <j>" (bug skyrl-synthetic-eos);
 *   nothing ever recorded -> SR_E_TRACE_EMPTY; rows or bytes beyond the maxima -> SR_E_LIMIT.
 * It then pads rows prompt_start..T-1 with the padding row (every layer holds 0, 1, ..., K-1,
 * distinct experts as Megatron's dropless dispatcher needs; the dtype widens if K-1 does not fit)
 * and returns the [T, L, K] array together with the number of CAPTURED rows (prompt_start before
 * padding), so padding is never mistaken for captured routes (SkyRL #2083). The quirk
 * `padding_as_captured` (bug skyrl-padding-as-captured) reports T instead. With `captured_only`
 * (the later stack, client.stack "2086": SkyRL #2083, commit 098017bff) nothing is padded: the
 * result is the [prompt_start, L, K] captured rows, and captured_rows is prompt_start; the checks
 * above are the same. A failed finalize leaves the trace usable.
 *
 * Units: rows and token counts are token positions; sizes are bytes.
 * Thread-safety: a trace belongs to one thread at a time; distinct traces are independent.
 */
#ifndef SR_TRACE_H
#define SR_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "sr_block_cache.h"
#include "sr_dtype.h"
#include "sr_err.h"
#include "sr_ndarray.h"

/* Default bounds: 4 Mi rows (token positions) and 4 GiB of row data per trace. */
#define SR_TRACE_DEFAULT_MAX_ROWS  ((int64_t)1 << 22)
#define SR_TRACE_DEFAULT_MAX_BYTES ((size_t)1 << 32)

/* Options of both traces. Plain struct; start from SR_TRACE_OPTS_INIT. */
typedef struct sr_trace_opts {
    int64_t max_rows;        /* most rows the trace may hold; <= 0: SR_TRACE_DEFAULT_MAX_ROWS */
    size_t max_bytes;        /* most bytes of row data; 0: SR_TRACE_DEFAULT_MAX_BYTES */
    int lock_first_dtype;    /* quirk skyrl-dtype-lock: no widening, any dtype change fails */
    int padding_as_captured; /* quirk skyrl-padding-as-captured: finalize reports T captured */
    int captured_only;       /* the later stack (#2083): finalize returns the captured rows only */
    int64_t reserve_rows;    /* capacity hint: rows to allocate at the first append (0: grow as
                                needed); clamped to the bounds, changes no result */
    int masked_rows; /* SGLang's masked padding (sgl-project/sglang#36404): the value -1 is held
                        (the canonical dtype is then at least int16); the caller has checked that
                        each -1 fills a whole row where its wire documents one. Values below -1
                        are still SR_E_ROUTES_NEGATIVE */
} sr_trace_opts;

#define SR_TRACE_OPTS_INIT                                                                         \
    {                                                                                              \
        0, 0, 0, 0, 0, 0, 0                                                                        \
    }

/* ---- token-metadata trace ---- */

typedef struct sr_meta_trace sr_meta_trace;

/* Creates an empty trace; opts may be NULL (defaults). SR_E_NOMEM. */
int sr_meta_trace_new(sr_meta_trace **out, const sr_trace_opts *opts, sr_err *err);

/* Frees the trace and its rows. NULL is a no-op. */
void sr_meta_trace_free(sr_meta_trace *t);

/* Appends a copy of `rows` (checks above). */
int sr_meta_trace_append(sr_meta_trace *t, const sr_ndarray *rows, int64_t expected_rows,
                         sr_err *err);

/* Finalizes into `out` (owned by the caller; checks above). On error `out` is SR_NDARRAY_INIT. */
int sr_meta_trace_finalize(sr_ndarray *out, sr_meta_trace *t, int64_t expected_rows, sr_err *err);

/* Rows held so far. */
int64_t sr_meta_trace_rows(const sr_meta_trace *t);

/* The current (widest) dtype; SR_DTYPE_INVALID before the first append. */
sr_dtype sr_meta_trace_dtype(const sr_meta_trace *t);

/*
 * The lossless widening of `have` by `incoming` as described above: *out = the wider dtype, or
 * SR_E_TRACE_SCHEMA "token metadata dtype changed from <have> to <incoming>".
 */
int sr_trace_widen_dtype(sr_dtype *out, sr_dtype have, sr_dtype incoming, sr_err *err);

/* ---- routed-expert trace ---- */

typedef struct sr_route_trace sr_route_trace;

/* Creates an empty routed-expert trace; opts may be NULL. SR_E_NOMEM. */
int sr_route_trace_new(sr_route_trace **out, const sr_trace_opts *opts, sr_err *err);

/* Frees the trace. NULL is a no-op. */
void sr_route_trace_free(sr_route_trace *t);

/* Rows captured so far (the next request's routed_experts_prompt_start). */
int64_t sr_route_trace_prompt_start(const sr_route_trace *t);

/* The trace's route dtype (uint8/int16/int32); SR_DTYPE_INVALID before the first record. */
sr_dtype sr_route_trace_dtype(const sr_route_trace *t);

/*
 * The pinned layer indices (borrowed, valid until the trace is freed) and their count; NULL and
 * 0 before the first record.
 */
const int64_t *sr_route_trace_layers(const sr_route_trace *t, size_t *count);

/*
 * Records one generation (checks above). `routes` is [rows, L, K] of any integer dtype and is
 * copied (unless it already lies where the rows go: sr_route_trace_room); `layer_indices`
 * (n_layers entries) may be NULL for the identity mapping.
 */
int sr_route_trace_record(sr_route_trace *t, int64_t prompt_token_count,
                          int64_t generated_token_count, const sr_ndarray *routes,
                          const int64_t *layer_indices, size_t n_layers, sr_err *err);

/*
 * sr_route_trace_record with what the caller knows of the routes' values (sr_ndarray.h; NULL or
 * bound->known = 0: nothing, exactly sr_route_trace_record). A known bound must be the exact OR
 * of `routes`' elements (the splice's sr_splice_entry.bound is): with it the record learns that
 * no value is negative and the canonical dtype without a pass over the values whenever the bound
 * settles them (routes of 1, 2 or 4-byte items whose OR has no sign bit and fits int32);
 * otherwise it makes the pass as without it. The result, the trace's contents and every error
 * (code and message) are the same with and without the bound.
 */
int sr_route_trace_record_bounded(sr_route_trace *t, int64_t prompt_token_count,
                                  int64_t generated_token_count, const sr_ndarray *routes,
                                  const int64_t *layer_indices, size_t n_layers,
                                  const sr_value_bound *bound, sr_err *err);

/*
 * Room for the next record's rows to be written in place (a performance hint: a record's result
 * is the same wherever its routes lie). *at is where rows in the trace's dtype would go, after
 * the rows held, and *room the bytes free there; both NULL/0 when the trace cannot tell (no row
 * size known yet: the first trajectory's first record; reserve_rows unset) or has no room. A
 * trace without storage reserves reserve_rows rows of the last record's row size (kept by a
 * reset) first. A record whose routes lie exactly at *at in the trace's dtype takes them
 * without a copy; routes anywhere else in the room are copied out before the trace changes.
 * Valid until the next record, finalize, reset or free. SR_E_NOMEM.
 */
int sr_route_trace_room(sr_route_trace *t, unsigned char **at, size_t *room, sr_err *err);

/*
 * A guess of the row size in bytes (layers x top-k x the dtype's item) for sr_route_trace_room
 * while the trace knows none (before its first record, on a trace no reset carried one over):
 * e.g. what another trajectory of the same engines recorded, so that the first record of a new
 * trace can be decoded in place too. 0 or a trace that knows its row size: no effect. A wrong
 * guess costs a copy, never a different result.
 */
void sr_route_trace_hint_row_bytes(sr_route_trace *t, size_t bytes);

/*
 * Finalizes (checks above): `out` receives the padded [token_count, L, K] routes (owned by the
 * caller) and `captured_rows` the number of rows that were captured, not padded. loss_mask has
 * loss_mask_len entries, non-zero meaning loss-active; it may be NULL only when its length is 0.
 * captured_rows may be NULL. On error `out` is SR_NDARRAY_INIT and *captured_rows is unchanged
 * (so finalizing again into an `out` that still holds an array would lose it: use another one).
 */
int sr_route_trace_finalize(sr_ndarray *out, int64_t *captured_rows, sr_route_trace *t,
                            int64_t token_count, const uint8_t *loss_mask, int64_t loss_mask_len,
                            sr_err *err);

/*
 * Empties the trace (finalized or not) for the next trajectory under `opts` (NULL: defaults):
 * afterwards it behaves exactly as a new trace made with those options, but keeps the row
 * storage it still holds (none after a finalize, which moved it out; see
 * sr_route_trace_capacity), the room of its layer list and its block cache
 * (sr_route_trace_set_cache), so a trace reused across trajectories allocates only the rows each
 * finalize hands over (none when its cache keeps a fitting block). Arrays finalized from it
 * earlier are unaffected.
 */
void sr_route_trace_reset(sr_route_trace *t, const sr_trace_opts *opts);

/* Bytes of row storage the trace holds (what a reset keeps). */
size_t sr_route_trace_capacity(const sr_route_trace *t);

/*
 * Where the trace's row storage comes from and goes back to (sr_block_cache.h; NULL: none, the
 * default): the reserve of sr_route_trace_room takes a kept block of reserve_rows rows' bytes up
 * to twice that (else allocates one, as without a cache), and sr_route_trace_free puts the
 * storage it still holds back. The storage a finalize hands over is a plain malloc'd block like
 * any other (its owner frees it, or puts it back with the size of
 * sr_route_trace_handed_capacity). The trace holds its own reference to the cache, kept by a
 * reset and dropped by sr_route_trace_free or a later call. Changes no result.
 */
void sr_route_trace_set_cache(sr_route_trace *t, sr_block_cache *cache);

/*
 * Bytes allocated at the array the last successful finalize handed over (>= its nbytes; the
 * size to give sr_block_cache_put); 0 before any finalize and after a reset.
 */
size_t sr_route_trace_handed_capacity(const sr_route_trace *t);

/*
 * Validates MoE layer indices (§5.6b), checks in this order: n == 0 -> "routed-expert layer
 * indices must name at least one MoE layer"; a neighbour equal or descending -> "...must be
 * strictly increasing, got (..)"; first < 0 -> "...must be non-negative, got (..)"; last >
 * 2^31-1 -> "routed-expert layer index <n> is deeper than any model". All SR_E_TRACE_LAYERS.
 */
int sr_validate_layer_indices(const int64_t *idx, size_t n, sr_err *err);

#endif /* SR_TRACE_H */
