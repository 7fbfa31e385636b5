/*
 * rollout_scratch: the working arrays of a rollout (rollout.c), kept on the conn that carried it
 * (sr_client_conn_scratch) so that the next rollout on the same conn reuses them: the
 * conversation's token ids, loss mask and logprobs, the per-row versions, the observation, the
 * full loss mask of the finalize and the route trace (sr_route_trace_reset; its row storage is
 * what finalize hands over as the result's routes, so it is the one block allocated per
 * rollout). In steady state a rollout then allocates only what its result owns.
 *
 * Ownership: the conn owns its scratch (released with the conn). A rollout borrows the arrays
 * for its run and hands them back at its end, trimmed (sr_rollout_scratch_keep): a buffer past
 * SR_ROLLOUT_SCRATCH_KEEP bytes is freed instead of kept, so a conn that once carried a huge
 * rollout does not hold its memory for the client's lifetime. Thread-safety: the conn's (one
 * thread at a time).
 */
#ifndef SR_ROLLOUT_SCRATCH_H
#define SR_ROLLOUT_SCRATCH_H

#include <stddef.h>
#include <stdint.h>

#include "client/client.h"
#include "sr_trace.h"

/* Bytes of one buffer a conn keeps across rollouts at most (8 MiB). */
#define SR_ROLLOUT_SCRATCH_KEEP ((size_t)8 << 20)

typedef struct sr_rollout_scratch {
    int32_t *ids;
    size_t ids_cap;
    uint8_t *mask;
    size_t mask_cap;
    double *lp;
    size_t lp_cap;
    int64_t *row_ver, *held_ver;
    size_t ver_cap, held_cap;
    int32_t *obs;
    size_t obs_cap;
    uint8_t *full; /* the finalize's [T] loss mask */
    size_t full_cap;
    sr_route_trace *trace; /* NULL until a rollout with routes made one */
} sr_rollout_scratch;

/* The conn's scratch, made (empty) on first use; NULL only when it cannot be allocated (the
 * rollout then works on arrays of its own, as without a scratch). */
sr_rollout_scratch *sr_rollout_scratch_of(sr_client_conn *k);

/* Frees the buffers past SR_ROLLOUT_SCRATCH_KEEP bytes (their capacity back to 0). */
void sr_rollout_scratch_keep(sr_rollout_scratch *x);

#endif /* SR_ROLLOUT_SCRATCH_H */
