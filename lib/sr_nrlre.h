/*
 * sr_nrlre: NeMo-RL's routed-experts string, version 1 ("nrlre1").
 *
 * NeMo-RL (NVIDIA-NeMo/RL#3292, nemo_rl/utils/routed_experts_codec.py) carries a sample's routes
 * as one JSON string
 *
 *   nrlre1:<dtype>:<S>x<L>x<K>:<base64>
 *
 * where dtype is one of "int8", "int16", "int32" (signed only: NeMo-RL marks missing rows with
 * -1), S, L and K are the [tokens, layers, top_k] shape joined by a lowercase 'x', and the base64
 * (standard alphabet, '=' padding, decoded with validate=True) holds the array's C-order
 * little-endian bytes, exactly prod(shape) * itemsize of them. Its decoder splits on the first
 * three ':' and reads each dim with Python's int(), which also takes "+3", " 3", "1_0" and "03";
 * its encoder writes plain decimal, and syncroll accepts only that (a stricter reading,
 * documented: any other spelling was not written by NeMo-RL's encoder).
 *
 * This module parses and writes the text before the base64 (the prefix); decoding the base64 is
 * the caller's (the splice decodes it in place, lib/sr_base64). Pure functions; thread-safe.
 */
#ifndef SR_NRLRE_H
#define SR_NRLRE_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"

/* "nrlre1:int16:" + three 19-digit dims with two 'x' + ':' fits in this many bytes. */
#define SR_NRLRE_PREFIX_MAX 80
/* The dtypes the string may name. */
#define SR_NRLRE_DTYPES                                                                            \
    (SR_DTYPE_BIT(SR_DTYPE_INT8) | SR_DTYPE_BIT(SR_DTYPE_INT16) | SR_DTYPE_BIT(SR_DTYPE_INT32))

typedef struct sr_nrlre_header {
    sr_dtype dtype;
    int64_t shape[3];   /* tokens, layers, top_k */
    size_t data_offset; /* where the base64 starts in the string */
    size_t data_bytes;  /* prod(shape) * itemsize, overflow-checked */
} sr_nrlre_header;

/*
 * Parses the prefix of the string s (n bytes available; the base64 after it need not be there
 * yet). Errors: nrlre.syntax (not "nrlre1:", a missing ':' within SR_NRLRE_PREFIX_MAX bytes --
 * with fewer bytes than that available and no ':' yet, the same error names the count),
 * nrlre.dtype (not int8/int16/int32), nrlre.shape (not three plain decimal non-negative dims
 * joined by 'x'), envelope.shape_overflow. err->offset is the byte offset in s.
 */
int sr_nrlre_parse_prefix(sr_nrlre_header *out, const char *s, size_t n, sr_err *err);

/*
 * Writes the prefix NeMo-RL's encoder writes for dtype and shape into buf (cap bytes, not
 * NUL-terminated) and its length into *written. SR_E_INVAL for a dtype other than
 * SR_NRLRE_DTYPES or a negative dim; SR_E_LIMIT when cap is too small.
 */
int sr_nrlre_write_prefix(size_t *written, char *buf, size_t cap, sr_dtype dtype,
                          const int64_t shape[3], sr_err *err);

#endif /* SR_NRLRE_H */
