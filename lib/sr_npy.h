/*
 * sr_npy: the NumPy `.npy` format, version 1.0, as vLLM's routed-experts wire carries it.
 *
 * vLLM (0.22+) returns each choice's routes as the base64 text of the bytes `np.save` writes for
 * a [tokens - 1, layers, top_k] uint8 or uint16 array; its users decode them with
 * `np.load(io.BytesIO(base64.b64decode(s)), allow_pickle=False)`. The file is:
 *
 *   bytes 0..5   magic "\x93NUMPY"
 *   bytes 6..7   format version, major then minor: 1, 0
 *   bytes 8..9   HEADER_LEN, little-endian uint16
 *   HEADER_LEN   an ASCII Python dict literal with exactly the keys 'descr', 'fortran_order' and
 *                'shape', padded with spaces and ended by '\n'
 *   the rest     the array's raw element bytes, C order when fortran_order is False
 *
 * np.save (NumPy 1.24 here, numpy/lib/format.py `_write_array_header`, `_wrap_header`) writes the
 * keys sorted, each as "'key': repr(value), ", then "}", then 21 - len(repr(shape[0])) spaces of
 * growth room (none for a 0-d array), then pads with spaces so that 10 + HEADER_LEN is a multiple
 * of 64 and ends with '\n'. One-byte dtypes are written '|u1', others '<u2', '<i2', '<i4', ...
 *
 * Parsing is strict where a route array can only be wrong: version 1.0 only (np.save writes 2.0
 * only for headers past 65535 bytes), the three keys once each (a Python dict literal would keep
 * the last of a duplicate; syncroll refuses it instead), descr with an explicit byte order: '<'
 * on a multi-byte type ('>' is npy.byte_order, and so are '|' and '=', since the bytes would be
 * read in the reader's order), any of '<', '>', '|', '=' on a one-byte type (NumPy reads them all
 * as the same type), fortran_order False, a shape tuple of
 * decimal non-negative integers with its element count times item size checked for overflow, and
 * a header ended by '\n'. Whitespace between tokens (space, tab) and either quote style are
 * accepted as NumPy's literal evaluation accepts them. Stricter than np.load, and documented so:
 * data past the array's bytes (np.load ignores it) is npy.byte_count.
 *
 * Pure functions over caller buffers; thread-safe.
 */
#ifndef SR_NPY_H
#define SR_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"
#include "sr_ndarray.h"

/* Bytes before the header text: magic (6), version (2), HEADER_LEN (2). */
#define SR_NPY_PREFIX_LEN 10
/* np.save aligns the data to this many bytes from the start of the file. */
#define SR_NPY_ALIGN 64
/* The largest header np.save writes for an SR_NDIM_MAX-d array of 64-bit dims, rounded up. */
#define SR_NPY_HEADER_MAX 320

typedef struct sr_npy_header {
    sr_dtype dtype;             /* from descr */
    int ndim;                   /* 0..SR_NDIM_MAX */
    int64_t shape[SR_NDIM_MAX]; /* each >= 0 */
    size_t data_offset;         /* SR_NPY_PREFIX_LEN + HEADER_LEN: where the elements start */
    size_t data_bytes;          /* prod(shape) * itemsize, overflow-checked */
} sr_npy_header;

/*
 * Reads the first SR_NPY_PREFIX_LEN bytes of `buf` (len bytes available) and stores in *total
 * the offset at which the elements start (10 + HEADER_LEN), so a streaming reader knows how many
 * bytes the header needs. Errors: npy.magic (not "\x93NUMPY"), npy.version (not 1.0),
 * npy.header (fewer than 10 bytes, with err->offset the count available).
 */
int sr_npy_header_extent(size_t *total, const uint8_t *buf, size_t len, sr_err *err);

/*
 * Parses the header at the start of `buf` (len bytes available, at least the extent above) into
 * *out. `allowed` limits the dtypes (0 allows every dtype sr_dtype knows); `ndim` >= 0 requires
 * that many dimensions, -1 accepts any. Errors, each naming what was found and what was expected:
 *   npy.magic, npy.version      as sr_npy_header_extent
 *   npy.header                  the header is cut short, is not a dict of exactly the three keys
 *                               (missing, unknown or duplicated key), is not ended by '\n', or a
 *                               value has the wrong literal type; err->offset is the byte offset
 *                               in `buf`
 *   npy.descr                   descr is not a dtype syncroll knows, or not one of `allowed`
 *   npy.byte_order              descr is big-endian ('>'), or native/not applicable ('=', '|')
 *                               on a multi-byte dtype
 *   npy.fortran_order           fortran_order is True
 *   npy.shape                   a dim is not a decimal non-negative integer, there are more than
 *                               SR_NDIM_MAX dims, or not `ndim` of them
 *   envelope.shape_overflow     prod(shape) * itemsize overflows
 */
int sr_npy_parse_header(sr_npy_header *out, const uint8_t *buf, size_t len, sr_dtype_set allowed,
                        int ndim, sr_err *err);

/*
 * Parses a whole `.npy` file of `len` bytes and returns a view of its elements in *out (data
 * points into `buf`; owned = 0). Errors: those of sr_npy_parse_header, and npy.byte_count when
 * the bytes after the header are not exactly data_bytes.
 */
int sr_npy_view(sr_ndarray *out, sr_npy_header *hdr, const uint8_t *buf, size_t len,
                sr_dtype_set allowed, int ndim, sr_err *err);

/*
 * Writes the header np.save would write for a C-order array of `dtype` and `shape` (ndim dims)
 * into buf (cap bytes) and stores its length (the data offset, a multiple of SR_NPY_ALIGN) in
 * *written. SR_E_INVAL for a dtype without a descr or a bad ndim, SR_E_LIMIT when cap is too
 * small (SR_NPY_HEADER_MAX always suffices).
 */
int sr_npy_write_header(size_t *written, char *buf, size_t cap, sr_dtype dtype,
                        const int64_t *shape, int ndim, sr_err *err);

/* The descr np.save writes for `dtype` ("|u1", "<u2", ...), or NULL if it has none. */
const char *sr_npy_descr(sr_dtype dtype);

#endif /* SR_NPY_H */
