/*
 * sr_collate: left-padded collation of routed-expert routes into one batch
 * (docs/reference/skyrl.md §7.3, SkyRL preprocess._collate_rollout_expert_indices and
 * make_router_padding_mask).
 *
 * Layout. Sample i has real length real_i = prompt_i + response_i tokens and captured_i route
 * rows. The batch is [B, T_max, L, K] with T_max = max(real_i); sample i is left-padded by
 * pad_i = T_max - real_i, so its route row r sits at column pad_i + r (aligned to its first real
 * token). Every other column (the left padding and the columns past the captured rows) holds the
 * padding row: every layer 0, 1, ..., K-1 (distinct experts, as Megatron's dropless dispatcher
 * needs). The router padding mask [B, T_max] (bool, 1 byte per entry) is 1 for the left padding
 * and for columns at or past pad_i + captured_i, 0 for captured route rows. The batch dtype is the
 * widest input dtype (uint8 < int16 < int32); narrower samples are widened exactly.
 *
 * Captured rows. sr_route_trace_finalize returns a padded array plus the number of captured
 * rows; pass both (routes and captured_rows) so the mask never counts padding as captured
 * (SkyRL #2083). captured_rows = -1 means every row of `routes` was captured (the reference's
 * input, which holds only the captured prefix).
 *
 * Validation happens before any worker starts, so errors are deterministic; each names the
 * sample (err->offset = sample index) and uses the reference's wording:
 *   no samples                                   -> SR_E_COLLATE_INPUT "rollout_expert_indices
 *                                                   must contain routes for every trajectory"
 *   routes NULL or an inconsistent descriptor    -> SR_E_COLLATE_INPUT "... must be NumPy arrays"
 *   dtype not uint8/int16/int32                  -> SR_E_COLLATE_INPUT "...canonical routed-expert
 *                                                   dtype (uint8, int16, int32), got X at sample i"
 *                                                   (no re-compaction: the sender is trusted)
 *   first sample not 3-D with >= 1 row           -> SR_E_COLLATE_INPUT "...routes for every
 *                                                   trajectory"
 *   first sample with K < 1 (or, beyond the reference, L < 1)
 *                                                -> SR_E_COLLATE_INPUT "...at least one expert
 *                                                   per layer" / "...at least one MoE layer"
 *   a sample not 3-D or of another [L, K]        -> SR_E_COLLATE_INPUT "...must share [layers,
 *                                                   topk], got shape X at sample i"
 *   negative lengths, length overflow, captured_rows < -1 or > rows held
 *                                                -> SR_E_COLLATE_INPUT
 *   captured rows < 1 or > real length           -> SR_E_COLLATE_ROWS "Trajectory i has <rows>
 *                                                   route rows for <real> tokens"
 *   output larger than the buffer's maximum      -> SR_E_LIMIT; allocation -> SR_E_NOMEM
 *   workers < 0                                  -> SR_E_POOL_ARG
 * A non-contiguous or read-only NumPy input (accepted by the reference after a copy) cannot be
 * expressed as an sr_ndarray, which is always C-contiguous and only read here.
 *
 * Ownership. The output lives in a caller-owned, reusable sr_collate_buf: it only grows (never
 * shrinks) up to its maximum, so collating batch after batch into the same buffer touches no
 * fresh pages. The result arrays are views into the buffer (owned = 0), valid until the next
 * sr_collate_routes on the same buffer or sr_collate_buf_release. Inputs are only read.
 *
 * Workers. `workers` >= 1 is used as given (capped at B); 0 means sr_default_fill_workers() of
 * the real machine. Samples are filled in parallel with sr_fill_rows; each worker writes only its
 * own samples' slices of the output and mask.
 *
 * Thread-safety: one call per buffer at a time; distinct buffers are independent.
 */
#ifndef SR_COLLATE_H
#define SR_COLLATE_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"
#include "sr_ndarray.h"

/* 4 GiB: the default maximum of the routes output of one buffer. */
#define SR_COLLATE_DEFAULT_MAX ((size_t)1 << 32)

/* One trajectory. Plain struct; start from SR_COLLATE_SAMPLE_INIT. */
typedef struct sr_collate_sample {
    const sr_ndarray *routes; /* [rows, L, K] uint8/int16/int32, borrowed */
    int64_t prompt_len;       /* prompt tokens */
    int64_t response_len;     /* response tokens */
    int64_t captured_rows;    /* leading rows of routes that were captured; -1: all of them */
} sr_collate_sample;

#define SR_COLLATE_SAMPLE_INIT                                                                     \
    {                                                                                              \
        NULL, 0, 0, -1                                                                             \
    }

/* Reusable output storage. Start from SR_COLLATE_BUF_INIT; set max_bytes if you like. */
typedef struct sr_collate_buf {
    void *routes;       /* owned */
    size_t routes_cap;  /* bytes allocated */
    uint8_t *mask;      /* owned */
    size_t mask_cap;    /* bytes allocated */
    void *pattern;      /* owned: prebuilt padding rows */
    size_t pattern_cap; /* bytes allocated */
    size_t max_bytes;   /* most bytes of routes output; 0: SR_COLLATE_DEFAULT_MAX */
} sr_collate_buf;

#define SR_COLLATE_BUF_INIT                                                                        \
    {                                                                                              \
        NULL, 0, NULL, 0, NULL, 0, 0                                                               \
    }

/* Frees the storage and returns the buffer to SR_COLLATE_BUF_INIT, keeping max_bytes. */
void sr_collate_buf_release(sr_collate_buf *buf);

/* The collated batch; arrays are views into the buffer. */
typedef struct sr_collate_result {
    sr_ndarray routes;       /* [B, T_max, L, K] in the batch dtype */
    sr_ndarray padding_mask; /* bool [B, T_max]; 1 = padding (left pad or not captured) */
    int64_t t_max;           /* max(prompt_i + response_i) */
    int int32_batch;         /* 1 when the batch dtype is int32: the reference logs a warning
                                ("...doubles this buffer...": the server is not compacting) */
} sr_collate_result;

/*
 * Collates `n_samples` samples (contract above). On error `out` is zeroed (views
 * SR_NDARRAY_INIT) and the buffer keeps its storage.
 */
int sr_collate_routes(sr_collate_result *out, sr_collate_buf *buf, const sr_collate_sample *samples,
                      int64_t n_samples, int workers, sr_err *err);

#endif /* SR_COLLATE_H */
