/*
 * sr_hist: a log-linear latency histogram (HDR-style) with bounded relative error.
 *
 * Values are non-negative integers, by convention nanoseconds. Values below 256 are counted
 * exactly; above, each power of two is split into 128 equal buckets, so a bucket spans at most
 * 1/128 of its lower bound and a reported percentile (the bucket's midpoint, clamped to the
 * recorded min and max) is within 0.4 % of the true order statistic. The whole 64-bit range is
 * covered (7,424 buckets). Histograms recorded by different workers or engines merge exactly
 * (bucket-wise sums).
 *
 * Memory follows what was recorded: an empty histogram is its 80-byte header; its buckets are
 * allocated on the first sample, as a sorted list of the buckets in use (16 bytes each), which
 * becomes the dense array of all 7,424 buckets (58 KiB) only past 256 distinct buckets.
 *
 * Percentile p (0..100) is the value of rank ceil(p / 100 * count) in sorted order (rank 1 for
 * p = 0), as HdrHistogram and most load tools define it.
 *
 * Ownership: sr_hist_new allocates, sr_hist_free frees. Thread-safety: none; give each thread its
 * own histogram and merge them.
 */
#ifndef SR_HIST_H
#define SR_HIST_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"

typedef struct sr_hist sr_hist;

/* Creates an empty histogram (no bucket storage until its first sample). SR_E_NOMEM. */
int sr_hist_new(sr_hist **out, sr_err *err);

/* Creates an empty histogram with the dense array allocated up front (58 KiB): recording into
 * it and merging into it never fail. For aggregates (a run's totals). SR_E_NOMEM. */
int sr_hist_new_dense(sr_hist **out, sr_err *err);

/* Frees; NULL is a no-op. */
void sr_hist_free(sr_hist *h);

/* Forgets every value (a dense histogram stays dense). */
void sr_hist_reset(sr_hist *h);

/* Bytes the histogram holds on the heap (header and buckets). */
size_t sr_hist_bytes(const sr_hist *h);

/* Records `count` occurrences of value v. Returns 0, or SR_E_NOMEM when the bucket storage
 * cannot grow (the histogram is then unchanged). */
int sr_hist_record_n(sr_hist *h, uint64_t v, uint64_t count);

/* Records one value (as sr_hist_record_n). */
int sr_hist_record(sr_hist *h, uint64_t v);

/* Adds every value of src to dst. Returns 0, or SR_E_NOMEM with dst unchanged; never fails
 * when dst is dense (sr_hist_new_dense), which needs no room. */
int sr_hist_merge(sr_hist *dst, const sr_hist *src);

/* Number of values recorded; exact min and max (0 when empty); mean (0 when empty). */
uint64_t sr_hist_count(const sr_hist *h);
uint64_t sr_hist_min(const sr_hist *h);
uint64_t sr_hist_max(const sr_hist *h);
double sr_hist_mean(const sr_hist *h);

/* The p-th percentile (see above); 0 when empty. p outside [0, 100] is clamped. */
uint64_t sr_hist_percentile(const sr_hist *h, double p);

/* Bucket geometry, for reporters that draw the distribution: the number of buckets, and for
 * bucket i its count and its [lo, hi] value range. */
size_t sr_hist_buckets(void);
uint64_t sr_hist_bucket_count(const sr_hist *h, size_t i);
void sr_hist_bucket_range(size_t i, uint64_t *lo, uint64_t *hi);

/* The first bucket at or after i whose count is not zero, or sr_hist_buckets() if none: walks
 * the buckets in use without visiting the empty ones. */
size_t sr_hist_next_bucket(const sr_hist *h, size_t i);

#endif /* SR_HIST_H */
