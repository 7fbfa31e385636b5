/*
 * sr_ndarray: C-contiguous n-d arrays and a reusable aligned arena.
 *
 * An sr_ndarray is a plain descriptor: dtype, ndim, shape and a pointer to little-endian,
 * C-contiguous element bytes. It owns its bytes only when `owned` is 1 (set by
 * sr_ndarray_alloc); otherwise the bytes belong to someone else (an arena, a caller buffer)
 * and must outlive the descriptor. sr_ndarray_release() frees owned bytes and is a no-op on
 * views.
 *
 * An sr_arena hands out 64-byte-aligned blocks from large chunks and keeps them across
 * sr_arena_reset(), so the second response decoded into the same arena touches no fresh pages
 * (a first touch costs ~3 µs per 4 KiB page here, more than the decode; design.md §8).
 * Blocks stay valid until the next reset or free. The arena has a byte maximum; exceeding it is
 * SR_E_LIMIT.
 *
 * Thread-safety: an arena belongs to one thread at a time; arrays are plain data.
 */
#ifndef SR_NDARRAY_H
#define SR_NDARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"

#define SR_NDIM_MAX 8

typedef struct sr_ndarray {
    sr_dtype dtype;
    int ndim;                   /* 0..SR_NDIM_MAX */
    int64_t shape[SR_NDIM_MAX]; /* each >= 0 */
    void *data;    /* C-contiguous little-endian elements; may be NULL if nbytes == 0 */
    size_t nbytes; /* prod(shape) * sr_dtype_size(dtype) */
    int owned;     /* 1: data was malloc'd by sr_ndarray_alloc and is freed by release */
} sr_ndarray;

#define SR_NDARRAY_INIT                                                                            \
    {                                                                                              \
        SR_DTYPE_INVALID, 0, {0}, NULL, 0, 0                                                       \
    }

/*
 * Computes prod(shape) * itemsize into *nbytes and prod(shape) into *numel (either may be
 * NULL), checking each dim for sign (SR_E_ENV_SHAPE) and, as numpy does ("array is too big"),
 * that itemsize times the product of the NON-ZERO dims fits in a signed 64-bit size
 * (SR_E_ENV_OVERFLOW): so [0, 2^32, 2^32] is refused although it holds no element, while
 * [0, 2^63-1] of uint8 is accepted. itemsize 0 counts as 1. An empty shape (ndim 0) has one
 * element.
 */
int sr_shape_bytes(size_t *nbytes, uint64_t *numel, const int64_t *shape, int ndim, size_t itemsize,
                   sr_err *err);

/* Number of elements, prod(shape). The shape must already be valid. */
uint64_t sr_ndarray_numel(const sr_ndarray *a);

/*
 * Fills `a` with a new owned, zeroed, 64-byte-aligned array. SR_E_INVAL for a bad dtype or
 * ndim, SR_E_ENV_OVERFLOW, SR_E_NOMEM. On failure `a` is left as SR_NDARRAY_INIT.
 */
int sr_ndarray_alloc(sr_ndarray *a, sr_dtype dtype, int ndim, const int64_t *shape, sr_err *err);

/* Frees owned bytes (if owned) and resets `a` to SR_NDARRAY_INIT. */
void sr_ndarray_release(sr_ndarray *a);

/*
 * Reads element i (flat, C order) of an integer or bool array as int64. uint64 values above
 * INT64_MAX saturate to INT64_MAX. Float arrays return 0 (callers check the dtype first).
 */
int64_t sr_ndarray_get_i64(const sr_ndarray *a, uint64_t i);

/* The index of the first negative value of v[0, n), or n when none is (token ids: eight at a
 * time, by the sign bits of their OR). */
size_t sr_i32_first_negative(const int32_t *v, size_t n);

/* Writes v to element i of an integer array, truncating to the dtype's width. */
void sr_ndarray_set_i64(sr_ndarray *a, uint64_t i, int64_t v);

/*
 * Minimum and maximum of an integer or bool array (saturating as sr_ndarray_get_i64). An empty
 * array gives min = max = 0. SR_E_INVAL for a float array.
 */
int sr_ndarray_minmax(const sr_ndarray *a, int64_t *min, int64_t *max, sr_err *err);

/*
 * What the producer of an integer array learned about its values while writing them, so that a
 * consumer can skip a pass of its own (the splice gathers it while decoding a blob:
 * sr_splice_entry.bound). When `known` is 1, `value_or` is the bitwise OR of every element's bit
 * pattern in its own width, zero-extended to 64 bits (an int8 -1 contributes 0xff, an int16 -1
 * 0xffff), and 0 for an empty array; so the bit of the dtype's sign is set exactly when some
 * element of a signed dtype is negative, and when none is, value_or < 2^k exactly when every
 * element is < 2^k. When `known` is 0 nothing is claimed and value_or is 0.
 */
typedef struct sr_value_bound {
    int known;
    uint64_t value_or;
} sr_value_bound;

#define SR_VALUE_BOUND_UNKNOWN                                                                     \
    {                                                                                              \
        0, 0                                                                                       \
    }

/* 1 if dtype, ndim, shape and bytes are equal, else 0. */
int sr_ndarray_equal(const sr_ndarray *a, const sr_ndarray *b);

/* Formats "uint8[3, 2, 2]" into buf (always NUL-terminated); returns buf. */
const char *sr_ndarray_desc(sr_dtype dtype, int ndim, const int64_t *shape, char *buf, size_t cap);

/* ---- arena ---- */

typedef struct sr_arena sr_arena;

/* Creates an arena that will hold at most `max_bytes` at once (0: SR_ARENA_DEFAULT_MAX). */
#define SR_ARENA_DEFAULT_MAX ((size_t)4 << 30)
int sr_arena_new(sr_arena **out, size_t max_bytes, sr_err *err);

/* Frees the arena and every block it handed out. NULL is a no-op. */
void sr_arena_free(sr_arena *ar);

/*
 * Returns a 64-byte-aligned block of n bytes (n may be 0: a valid non-NULL pointer), or NULL
 * with SR_E_LIMIT (past max_bytes) or SR_E_NOMEM in err. Contents are unspecified.
 */
void *sr_arena_alloc(sr_arena *ar, size_t n, sr_err *err);

/*
 * Invalidates every block and keeps the memory: the next allocations reuse it. After a reset,
 * if the previous use spilled over several chunks, they are merged into one chunk big enough
 * for the whole previous use, so steady state is one chunk and no fresh pages.
 */
void sr_arena_reset(sr_arena *ar);

/* Bytes handed out since the last reset (including alignment padding), and bytes held. */
size_t sr_arena_used(const sr_arena *ar);
size_t sr_arena_capacity(const sr_arena *ar);

#endif /* SR_NDARRAY_H */
