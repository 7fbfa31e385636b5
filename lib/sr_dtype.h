/*
 * sr_dtype: NumPy dtype names, item sizes and integer ranges.
 *
 * Packed arrays on the wire carry NumPy dtype *names* ("uint8", "int16", "float32", ...) with no
 * byte-order mark; the bytes are little-endian (skyrl.md §1.5). This module maps names to
 * an enum and back and answers size and range questions. Pure functions; thread-safe.
 */
#ifndef SR_DTYPE_H
#define SR_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"

typedef enum sr_dtype {
    SR_DTYPE_INVALID = 0,
    SR_DTYPE_BOOL,
    SR_DTYPE_INT8,
    SR_DTYPE_UINT8,
    SR_DTYPE_INT16,
    SR_DTYPE_UINT16,
    SR_DTYPE_INT32,
    SR_DTYPE_UINT32,
    SR_DTYPE_INT64,
    SR_DTYPE_UINT64,
    SR_DTYPE_FLOAT16,
    SR_DTYPE_FLOAT32,
    SR_DTYPE_FLOAT64,
    SR_DTYPE_COUNT
} sr_dtype;

/* A set of dtypes, as a bit mask of SR_DTYPE_BIT(d). */
typedef uint32_t sr_dtype_set;
#define SR_DTYPE_BIT(d) ((sr_dtype_set)1u << (d))

/* The dtypes routes may use on the wire: uint8, int16, int32 (no uint16). */
#define SR_ROUTE_DTYPES                                                                            \
    (SR_DTYPE_BIT(SR_DTYPE_UINT8) | SR_DTYPE_BIT(SR_DTYPE_INT16) | SR_DTYPE_BIT(SR_DTYPE_INT32))

/* NumPy name of a dtype ("uint8"); "invalid" for SR_DTYPE_INVALID or out-of-range values. */
const char *sr_dtype_name(sr_dtype d);

/*
 * Parses a NumPy dtype name of `len` bytes (not necessarily NUL-terminated). Only canonical
 * names are accepted ("float32", not "f4" or "<f4"). SR_E_DTYPE_UNKNOWN otherwise.
 */
int sr_dtype_from_name(sr_dtype *out, const char *name, size_t len, sr_err *err);

/* Item size in bytes; 0 for SR_DTYPE_INVALID. */
size_t sr_dtype_size(sr_dtype d);

/* 1 for the integer dtypes (int8..uint64; not bool), else 0. */
int sr_dtype_is_integer(sr_dtype d);

/* 1 for the signed integer dtypes, else 0. */
int sr_dtype_is_signed(sr_dtype d);

/* 1 for float16/float32/float64, else 0. */
int sr_dtype_is_float(sr_dtype d);

/*
 * Writes the names of the dtypes in `set`, sorted by name as Python's sorted() would, in the
 * form "['int16', 'int32', 'uint8']" into buf (always NUL-terminated). Returns buf.
 */
const char *sr_dtype_set_str(sr_dtype_set set, char *buf, size_t cap);

#endif /* SR_DTYPE_H */
