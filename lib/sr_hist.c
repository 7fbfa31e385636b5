#include "sr_hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXACT     256u /* values below are their own bucket */
#define SUB_BITS  7u   /* 128 sub-buckets per power of two */
#define SUB       (1u << SUB_BITS)
#define FIRST_EXP 8u /* 2^8 = EXACT */
#define NBUCKETS  (EXACT + (64u - FIRST_EXP) * SUB)

/*
 * A histogram starts with no bucket storage at all. Its first samples go into a sorted list of
 * (bucket, count) pairs, 16 bytes per bucket in use; past SPARSE_MAX distinct buckets (4 KiB)
 * the list is replaced by the dense array of every bucket (58 KiB), whose lookups are direct.
 * A run keeps a histogram per phase per scenario execution, most of them empty or holding a
 * handful of samples, so memory follows what was measured instead of the bucket geometry.
 */
#define SPARSE_MAX 256u

typedef struct slot {
    uint64_t c;
    uint32_t i;
} slot;

struct sr_hist {
    uint64_t count, min, max;
    long double sum; /* for the mean; long double keeps ns sums of days exact enough */
    slot *sp;        /* sorted by bucket, n of cap used; NULL when dense or empty */
    uint32_t n, cap;
    uint64_t *dense; /* NBUCKETS counts, or NULL while sparse */
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

/* Switches h to the dense array (keeps h as it was when out of memory). */
static int to_dense(sr_hist *h)
{
    if (h->dense)
        return 0;
    uint64_t *d = calloc(NBUCKETS, sizeof(*d));
    if (!d)
        return SR_E_NOMEM;
    for (uint32_t k = 0; k < h->n; k++)
        d[h->sp[k].i] = h->sp[k].c;
    free(h->sp);
    h->sp = NULL;
    h->n = h->cap = 0;
    h->dense = d;
    return 0;
}

/* Makes room for `extra` more sparse buckets, or goes dense when they would not stay sparse. */
static int reserve(sr_hist *h, size_t extra)
{
    if (h->dense)
        return 0;
    size_t need = (size_t)h->n + extra;
    if (need > SPARSE_MAX)
        return to_dense(h);
    if (need <= h->cap)
        return 0;
    size_t cap = h->cap ? h->cap : 2;
    while (cap < need)
        cap *= 2;
    slot *v = realloc(h->sp, cap * sizeof(*v));
    if (!v)
        return SR_E_NOMEM;
    h->sp = v;
    h->cap = (uint32_t)cap;
    return 0;
}

/* Position of bucket i in the sparse list, or where it would go (*found 0). */
static uint32_t find(const sr_hist *h, size_t i, int *found)
{
    uint32_t a = 0, b = h->n;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (h->sp[m].i < i)
            a = m + 1;
        else
            b = m;
    }
    *found = a < h->n && h->sp[a].i == i;
    return a;
}

/* Adds c to bucket i; the caller reserved room for one more sparse bucket. */
static void bucket_add(sr_hist *h, size_t i, uint64_t c)
{
    if (h->dense) {
        h->dense[i] += c;
        return;
    }
    int found;
    uint32_t k = find(h, i, &found);
    if (!found) {
        memmove(&h->sp[k + 1], &h->sp[k], (h->n - k) * sizeof(slot));
        h->sp[k].i = (uint32_t)i;
        h->sp[k].c = 0;
        h->n++;
    }
    h->sp[k].c += c;
}

static int new_hist(sr_hist **out, int dense, sr_err *err)
{
    *out = calloc(1, sizeof(sr_hist));
    if (*out && dense && to_dense(*out)) {
        free(*out);
        *out = NULL;
    }
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a histogram");
    return 0;
}

int sr_hist_new(sr_hist **out, sr_err *err)
{
    return new_hist(out, 0, err);
}

int sr_hist_new_dense(sr_hist **out, sr_err *err)
{
    return new_hist(out, 1, err);
}

void sr_hist_free(sr_hist *h)
{
    if (!h)
        return;
    free(h->sp);
    free(h->dense);
    free(h);
}

void sr_hist_reset(sr_hist *h)
{
    free(h->sp);
    h->sp = NULL;
    h->n = h->cap = 0;
    if (h->dense)
        memset(h->dense, 0, NBUCKETS * sizeof(*h->dense));
    h->count = h->min = h->max = 0;
    h->sum = 0;
}

size_t sr_hist_bytes(const sr_hist *h)
{
    if (!h)
        return 0;
    return sizeof(*h) + (size_t)h->cap * sizeof(slot) +
           (h->dense ? NBUCKETS * sizeof(*h->dense) : 0);
}

int sr_hist_record_n(sr_hist *h, uint64_t v, uint64_t count)
{
    if (count == 0)
        return 0;
    if (reserve(h, 1))
        return SR_E_NOMEM;
    bucket_add(h, bucket_of(v), count);
    if (h->count == 0 || v < h->min)
        h->min = v;
    if (h->count == 0 || v > h->max)
        h->max = v;
    h->count += count;
    h->sum += (long double)v * (long double)count;
    return 0;
}

int sr_hist_record(sr_hist *h, uint64_t v)
{
    return sr_hist_record_n(h, v, 1);
}

int sr_hist_merge(sr_hist *dst, const sr_hist *src)
{
    if (src->count == 0)
        return 0;
    /* Room first, so that an allocation failure leaves dst as it was. */
    if (src->dense ? to_dense(dst) : reserve(dst, src->n))
        return SR_E_NOMEM;
    if (src->dense) {
        for (size_t i = 0; i < NBUCKETS; i++)
            if (src->dense[i])
                bucket_add(dst, i, src->dense[i]);
    } else {
        for (uint32_t k = 0; k < src->n; k++)
            bucket_add(dst, src->sp[k].i, src->sp[k].c);
    }
    if (dst->count == 0 || src->min < dst->min)
        dst->min = src->min;
    if (dst->count == 0 || src->max > dst->max)
        dst->max = src->max;
    dst->count += src->count;
    dst->sum += src->sum;
    return 0;
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
    if (i >= NBUCKETS)
        return 0;
    if (h->dense)
        return h->dense[i];
    int found;
    uint32_t k = h->n ? find(h, i, &found) : 0;
    return h->n && found ? h->sp[k].c : 0;
}

size_t sr_hist_next_bucket(const sr_hist *h, size_t i)
{
    if (h->dense) {
        while (i < NBUCKETS && !h->dense[i])
            i++;
        return i;
    }
    int found;
    uint32_t k = h->n ? find(h, i, &found) : 0;
    return k < h->n ? h->sp[k].i : NBUCKETS;
}

/* The bucket's midpoint, clamped to the recorded range. */
static uint64_t mid_of(const sr_hist *h, size_t i)
{
    uint64_t lo, hi;
    sr_hist_bucket_range(i, &lo, &hi);
    uint64_t mid = lo + (hi - lo) / 2;
    if (mid < h->min)
        mid = h->min;
    if (mid > h->max)
        mid = h->max;
    return mid;
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
    for (size_t i = sr_hist_next_bucket(h, 0); i < NBUCKETS; i = sr_hist_next_bucket(h, i + 1)) {
        seen += sr_hist_bucket_count(h, i);
        if (seen >= rank)
            return mid_of(h, i);
    }
    return h->max;
}
