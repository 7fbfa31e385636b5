/*
 * sr_nested: nested JSON integer lists as a rectangular n-d array (vLLM 0.21's routed experts,
 * `[[[e, ...], ...], ...]`, and its prompt_routed_experts with -1 at prefix-cached positions).
 *
 * The lists come from a parsed document (cJSON nodes, e.g. the splice's). A value of `ndim`
 * levels is read in two steps: sr_nested_shape walks it once and checks that it is rectangular
 * (every list at one level has the length of the first) with integer leaves exactly at depth
 * `ndim`; sr_nested_fill writes the values, C order, into the caller's memory as int32 or int64.
 * An empty list leaves the dimensions below it unknown: they are reported as 0 (so the element
 * count is 0 and nothing is written).
 *
 * Strict where a route id can only be wrong: a leaf must be a JSON integer literal (no fraction,
 * no exponent: sr_jdom marks such numbers SR_JDOM_NOT_INT; from plain cJSON, a number that is
 * not integral), within [min, max] and within +-2^53. Errors: nested.shape (not a list where one
 * is due, a list where an integer is due, a ragged level, more than SR_NDIM_MAX levels, the
 * element count overflows), nested.value (a leaf that is not an integer in range), both naming
 * the index path ("[3][0][1]"). Pure functions; thread-safe.
 */
#ifndef SR_NESTED_H
#define SR_NESTED_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sr_dtype.h"
#include "sr_err.h"
#include "sr_ndarray.h"

/* The shape of `node` as `ndim` (1..SR_NDIM_MAX) nested lists into shape[0..ndim-1], and the
 * element count into *count. Leaves are not checked here. */
int sr_nested_shape(int64_t *shape, size_t *count, const cJSON *node, int ndim, sr_err *err);

/* The dtype sr_nested_fill writes for values in [min, max]: int32 when it holds them, else int64. */
sr_dtype sr_nested_dtype(int64_t min, int64_t max);

/* Writes the values of `node` (of the shape sr_nested_shape gave) into dst, C order, as
 * sr_nested_dtype(min, max); dst holds count * itemsize bytes. */
int sr_nested_fill(void *dst, const cJSON *node, int ndim, const int64_t *shape, int64_t min,
                   int64_t max, sr_err *err);

#endif /* SR_NESTED_H */
