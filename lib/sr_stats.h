/*
 * sr_stats: exact summary statistics of an n-d array, as `syncroll check-body` reports them.
 *
 *   integers (int8..int64, uint8..uint64): exact min and max (int64 min -2^63 and uint64 max
 *       2^64-1 included); sr_stats_int_text prints them as exact decimal integers.
 *   bool: min and max as 0/1 (any non-zero byte is True, as numpy reads it), and the number of
 *       bytes that are neither 0 nor 1 (non-canonical bools; numpy itself writes only 0 and 1).
 *   floats (float16, float32, float64): counts of NaN, +inf and -inf, and min and max over the
 *       FINITE values only; `finite` is 0 when there is none (all NaN/inf, or empty), and min and
 *       max are then absent.
 * An empty array has no min and max (has_range 0).
 *
 * Thread-safety: reentrant. Ownership: nothing is kept.
 */
#ifndef SR_STATS_H
#define SR_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "sr_ndarray.h"

typedef enum sr_stats_kind {
    SR_STATS_NONE = 0, /* an invalid dtype */
    SR_STATS_SIGNED,   /* imin/imax */
    SR_STATS_UNSIGNED, /* umin/umax (bool too) */
    SR_STATS_FLOAT     /* fmin/fmax over the finite values, counts */
} sr_stats_kind;

typedef struct sr_array_stats {
    sr_stats_kind kind;
    uint64_t count;      /* elements */
    int has_range;       /* 1 if min and max exist (a non-empty array, a finite float) */
    int64_t imin, imax;  /* SR_STATS_SIGNED */
    uint64_t umin, umax; /* SR_STATS_UNSIGNED */
    double fmin, fmax;   /* SR_STATS_FLOAT */
    uint64_t nan, posinf, neginf, finite; /* SR_STATS_FLOAT */
    uint64_t noncanonical_bool;           /* bool: bytes other than 0 and 1 */
} sr_array_stats;

/* Computes the statistics of `a` (a valid array: numel elements of its dtype at a->data). */
void sr_array_stats_compute(sr_array_stats *st, const sr_ndarray *a);

/*
 * Writes the exact decimal min (want_max 0) or max (want_max 1) of an integer or bool result
 * into buf (at least 24 bytes) and returns buf; "" when it has no integer range.
 */
const char *sr_stats_int_text(const sr_array_stats *st, int want_max, char *buf, size_t cap);

/* A float16 (IEEE binary16 bits) as a double, exactly. */
double sr_half_to_double(uint16_t h);

#endif /* SR_STATS_H */
