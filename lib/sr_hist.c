#include "sr_hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXACT 256u     /* values below are their own bucket */
#define SUB_BITS 7u    /* 128 sub-buckets per power of two */
#define SUB (1u << SUB_BITS)
#define FIRST_EXP 8u   /* 2^8 = EXACT */
#define NBUCKETS (EXACT + (64u - FIRST_EXP) * SUB)

struct sr_hist {
    uint64_t count, min, max;
    long double sum; /* for the mean; long double keeps ns sums of days exact enough */
    uint64_t b[NBUCKETS];
};

static size_t bucket_of(uint64_t v)
{
    if (v < EXACT)
        return (size_t)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    unsigned sub = (unsigned)(v >> (e - SUB_BITS)) & (SUB - 1u);
    return EXACT + (size_t)(e - FIRST_EXP) * SUB + sub;
}

void sr_hist_bucket_range(size_t i, uint64_t *lo, uint64_t *hi)
{
    if (i < EXACT) {
        *lo = *hi = i;
        return;
    }
    size_t k = i - EXACT;
    unsigned e = FIRST_EXP + (unsigned)(k / SUB);
    uint64_t sub = k % SUB;
    unsigned shift = e - SUB_BITS;
    *lo = (SUB + sub) << shift;
    *hi = *lo + ((uint64_t)1 << shift) - 1;
}

size_t sr_hist_buckets(void)
{
    return NBUCKETS;
}

int sr_hist_new(sr_hist **out, sr_err *err)
{
    *out = calloc(1, sizeof(sr_hist));
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a histogram");
    return 0;
}

void sr_hist_free(sr_hist *h)
{
    free(h);
}

void sr_hist_reset(sr_hist *h)
{
    memset(h, 0, sizeof(*h));
}

void sr_hist_record_n(sr_hist *h, uint64_t v, uint64_t count)
{
    if (count == 0)
        return;
    if (h->count == 0 || v < h->min)
        h->min = v;
    if (h->count == 0 || v > h->max)
        h->max = v;
    h->count += count;
    h->sum += (long double)v * (long double)count;
    h->b[bucket_of(v)] += count;
}

void sr_hist_record(sr_hist *h, uint64_t v)
{
    sr_hist_record_n(h, v, 1);
}

void sr_hist_merge(sr_hist *dst, const sr_hist *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0 || src->min < dst->min)
        dst->min = src->min;
    if (dst->count == 0 || src->max > dst->max)
        dst->max = src->max;
    dst->count += src->count;
    dst->sum += src->sum;
    for (size_t i = 0; i < NBUCKETS; i++)
        dst->b[i] += src->b[i];
}

uint64_t sr_hist_count(const sr_hist *h)
{
    return h->count;
}

uint64_t sr_hist_min(const sr_hist *h)
{
    return h->min;
}

uint64_t sr_hist_max(const sr_hist *h)
{
    return h->max;
}

double sr_hist_mean(const sr_hist *h)
{
    return h->count ? (double)(h->sum / (long double)h->count) : 0.0;
}

uint64_t sr_hist_bucket_count(const sr_hist *h, size_t i)
{
    return i < NBUCKETS ? h->b[i] : 0;
}

uint64_t sr_hist_percentile(const sr_hist *h, double p)
{
    if (h->count == 0)
        return 0;
    if (!(p > 0))
        return h->min;
    if (p >= 100)
        return h->max;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < NBUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            sr_hist_bucket_range(i, &lo, &hi);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid < h->min)
                mid = h->min;
            if (mid > h->max)
                mid = h->max;
            return mid;
        }
    }
    return h->max;
}
