/*
 * Private to the rollout verifier's files (verify.h): one rollout's verification state and what
 * its checks share. verifier.c defines the verifier object and the recording of a check,
 * verify_rows.c the route-row checks, verify.c the rollout's checks in their order.
 */
#ifndef SR_VERIFY_PRIV_H
#define SR_VERIFY_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "rollout.h"
#include "sr_err.h"
#include "verify.h"

/* One rollout's verification: borrowed inputs, buffers owned until the verification returns. */
typedef struct sr_verify_rv {
    sr_verifier *v; /* NULL: no oracle (external engines) */
    const sr_rollout_result *r;
    const sr_verify_ctx *ctx;
    int64_t sample;
    int32_t *tok; /* prompt + response */
    int64_t T, C; /* tokens, captured rows */
    uint64_t *h;  /* prefix hash of tokens 0..i */
    int L, K;
    int ok;
    sr_err *err;
    sr_verify_fired *fired; /* NULL: not listed */
    uint8_t *match;         /* [C] or NULL: 1 where the row equals the oracle's at every layer
                               and so holds K distinct ids in range (sr_verify_rows) */
} sr_verify_rv;

/* The largest weight version the verifier knows of (sr_verifier_note_version). */
int64_t sr_verify_max_version(sr_verifier *v);

/* The 1-based turn whose request first produced token position q (or row q), 0 if none. */
int64_t sr_verify_turn_of(const sr_rollout_result *r, int64_t q);

/* The 1-based turn whose request first computed route row `row` (the turn that held token
 * position row + 1): fault selectors count turns the same way. */
int64_t sr_verify_turn_of_row(const sr_rollout_result *r, int64_t row);

/* The weight version that first computed row `row`, -1 if none is known. */
int64_t sr_verify_row_version(const sr_verify_rv *x, int64_t row);

/*
 * Records check `name` (class `cls` or NULL) of the rollout at turn, row and layer (-1: none)
 * with `detail`, in the result and in x->fired; clears x->ok. 0 or the recording's error.
 */
int sr_verify_record(sr_verify_rv *x, const char *name, const char *cls, int64_t turn, int64_t row,
                     int64_t layer, const char *detail);

/* Every captured row against the oracle (verify.h), counting the rows in *verified; 0 or a
 * harness error. Sets x->match (freed by the caller) when an equal row is known valid. */
int sr_verify_rows(sr_verify_rv *x, int64_t *verified);

/* routes.invalid: the contract check of every captured row, without the oracle. */
int sr_verify_valid(sr_verify_rv *x);

/* trace.padding_row: rows [C, T) of the finalized trace against 0..K-1. */
int sr_verify_padding(sr_verify_rv *x);

#endif /* SR_VERIFY_PRIV_H */
