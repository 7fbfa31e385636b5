/*
 * Private to the sr_trace module (sr_trace.c, sr_route_trace.c): the token-metadata trace's
 * layout and the pieces of its append that the routed-expert trace reuses. Not installed, not
 * for other modules. Semantics are those of sr_trace.h.
 */
#ifndef SR_TRACE_PRIV_H
#define SR_TRACE_PRIV_H

#include "sr_trace.h"

struct sr_meta_trace {
    int64_t max_rows;
    size_t max_bytes;
    int lock_first_dtype;
    int64_t reserve_rows; /* the opts' capacity hint, used at the first append */
    int has_schema;
    sr_dtype dtype;
    int row_ndim;
    int64_t row_shape[SR_NDIM_MAX];
    size_t row_elems;    /* prod(row_shape) */
    int64_t rows;        /* rows held */
    unsigned char *data; /* rows * row_elems elements of dtype */
    size_t cap;          /* bytes allocated */
    int finalized;
    size_t handed_cap; /* bytes allocated at the array the last finalize handed over */
};

/* Initialises an embedded trace from options (NULL: defaults). */
void sr_trace_meta_init(sr_meta_trace *t, const sr_trace_opts *opts);

/* Empties the trace (finalized or not) under new options, keeping its storage and capacity. */
void sr_trace_meta_reset(sr_meta_trace *t, const sr_trace_opts *opts);

/* SR_E_INVAL unless `a` is non-NULL and its descriptor matches its bytes and alignment. */
int sr_trace_check_descriptor(const sr_ndarray *a, const char *what, sr_err *err);

/* Bytes of `rows` rows of the schema in `dtype`; SR_E_LIMIT past the trace's maxima. */
int sr_trace_meta_bytes_for(size_t *bytes, const sr_meta_trace *t, int64_t rows, sr_dtype dtype,
                            sr_err *err);

/* Capacity for `bytes` bytes in `dtype`, converting held rows on a widening; atomic. */
int sr_trace_meta_reserve(sr_meta_trace *t, sr_dtype dtype, size_t bytes, sr_err *err);

/* 1 if rows' trailing dimensions equal the trace's row shape. */
int sr_trace_meta_same_row_shape(const sr_meta_trace *t, const sr_ndarray *rows);

/* SR_E_TRACE_SCHEMA naming the old and the new schema. */
int sr_trace_meta_schema_error(const sr_meta_trace *t, const sr_ndarray *rows, sr_dtype incoming,
                               sr_err *err);

/* The append of §5.2 where the chunk counts as dtype `declared` for the schema. */
int sr_trace_meta_append_as(sr_meta_trace *t, const sr_ndarray *rows, sr_dtype declared,
                            int64_t expected_rows, sr_err *err);

#endif /* SR_TRACE_PRIV_H */
