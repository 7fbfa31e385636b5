/* sr_hist: percentiles within 0.4 % of a sorted array on random data; exact merge. */
#include <math.h>
#include <string.h>

#include "sr_hist.h"
#include "sr_test.h"

static uint64_t rng(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Log-uniform values from 1 ns to about 100 s, the range latencies live in. */
static uint64_t sample(uint64_t *s)
{
    double u = (double)(rng(s) >> 11) * 0x1p-53;
    return (uint64_t)exp(u * log(1e11));
}

START_TEST(percentiles_match_sorted_array)
{
    const size_t n = 200000;
    uint64_t *v = malloc(n * sizeof(uint64_t));
    sr_hist *h;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_hist_new(&h, &e), e);
    uint64_t s = 42;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = sample(&s);
        sum += (double)v[i];
        sr_hist_record(h, v[i]);
    }
    qsort(v, n, sizeof(uint64_t), cmp_u64);
    const double ps[] = {0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
    for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
        size_t rank = ps[k] <= 0 ? 1 : (size_t)ceil(ps[k] / 100.0 * (double)n);
        uint64_t want = v[rank - 1];
        uint64_t got = sr_hist_percentile(h, ps[k]);
        double rel = want ? fabs((double)got - (double)want) / (double)want : (double)got;
        ck_assert_msg(rel <= 0.004, "p%g: got %llu want %llu (rel %.5f)", ps[k],
                      (unsigned long long)got, (unsigned long long)want, rel);
    }
    ck_assert_uint_eq(sr_hist_min(h), v[0]);
    ck_assert_uint_eq(sr_hist_max(h), v[n - 1]);
    ck_assert_uint_eq(sr_hist_count(h), n);
    ck_assert(fabs(sr_hist_mean(h) - sum / (double)n) / (sum / (double)n) < 1e-9);
    sr_hist_free(h);
    free(v);
}
END_TEST

START_TEST(small_values_are_exact_and_merge_is_exact)
{
    sr_hist *a, *b, *all;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_hist_new(&a, &e), e);
    ck_assert_sr_ok(sr_hist_new(&b, &e), e);
    ck_assert_sr_ok(sr_hist_new(&all, &e), e);
    ck_assert_uint_eq(sr_hist_percentile(a, 50), 0);
    uint64_t s = 7;
    for (int i = 0; i < 5000; i++) {
        uint64_t x = rng(&s) % 200;
        sr_hist_record(i % 2 ? a : b, x);
        sr_hist_record(all, x);
    }
    sr_hist_merge(a, b);
    ck_assert_uint_eq(sr_hist_count(a), 5000);
    for (size_t i = 0; i < sr_hist_buckets(); i++)
        ck_assert_uint_eq(sr_hist_bucket_count(a, i), sr_hist_bucket_count(all, i));
    for (double p = 0; p <= 100; p += 0.5)
        ck_assert_uint_eq(sr_hist_percentile(a, p), sr_hist_percentile(all, p));
    sr_hist_reset(a);
    sr_hist_record_n(a, UINT64_MAX, 3);
    ck_assert_uint_eq(sr_hist_percentile(a, 50), UINT64_MAX);
    sr_hist_free(a);
    sr_hist_free(b);
    sr_hist_free(all);
}
END_TEST

/* Every bucket of h equals its count in the dense reference r, and next_bucket visits exactly
 * the buckets in use. */
static void same_buckets(const sr_hist *h, const sr_hist *r)
{
    size_t nb = sr_hist_buckets(), i = 0;
    for (size_t k = 0; k < nb; k++)
        ck_assert_uint_eq(sr_hist_bucket_count(h, k), sr_hist_bucket_count(r, k));
    for (size_t k = sr_hist_next_bucket(h, 0); k < nb; k = sr_hist_next_bucket(h, k + 1), i++)
        ck_assert_uint_ne(sr_hist_bucket_count(h, k), 0);
    size_t used = 0;
    for (size_t k = 0; k < nb; k++)
        used += sr_hist_bucket_count(r, k) != 0;
    ck_assert_uint_eq(i, used);
    ck_assert_uint_eq(sr_hist_count(h), sr_hist_count(r));
    ck_assert_uint_eq(sr_hist_min(h), sr_hist_min(r));
    ck_assert_uint_eq(sr_hist_max(h), sr_hist_max(r));
    ck_assert_uint_eq(sr_hist_percentile(h, 50), sr_hist_percentile(r, 50));
    ck_assert_uint_eq(sr_hist_percentile(h, 99.9), sr_hist_percentile(r, 99.9));
}

/* Memory follows the samples: an empty histogram holds no buckets, a few samples a
 * few; past 256 distinct buckets it turns dense, and every count, merge and percentile equals a
 * dense histogram's through the change. */
START_TEST(buckets_are_allocated_by_use)
{
    sr_hist *h, *r, *m;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_hist_new(&h, &e), e);
    ck_assert_sr_ok(sr_hist_new_dense(&r, &e), e);
    ck_assert_sr_ok(sr_hist_new(&m, &e), e);
    size_t empty = sr_hist_bytes(h);
    ck_assert_uint_lt(empty, 128);
    ck_assert_uint_gt(sr_hist_bytes(r), 7424 * 8);
    ck_assert_int_eq(sr_hist_record(h, 5000), 0);
    ck_assert_int_eq(sr_hist_record(r, 5000), 0);
    ck_assert_uint_le(sr_hist_bytes(h), empty + 64);
    same_buckets(h, r);
    uint64_t s = 7;
    for (int i = 0; i < 5000; i++) {
        uint64_t v = sample(&s);
        ck_assert_int_eq(sr_hist_record(h, v), 0);
        ck_assert_int_eq(sr_hist_record(r, v), 0);
        if (i < 40) /* m stays sparse: a sparse source merged into a dense and a sparse one */
            ck_assert_int_eq(sr_hist_record_n(m, v, 3), 0);
        if (i == 100)
            same_buckets(h, r); /* still sparse, in a sorted list of a hundred buckets */
    }
    ck_assert_uint_gt(sr_hist_bytes(h), 7424 * 8); /* dense by now */
    same_buckets(h, r);
    ck_assert_int_eq(sr_hist_merge(h, m), 0);
    ck_assert_int_eq(sr_hist_merge(r, m), 0);
    same_buckets(h, r);
    /* A dense source into a sparse destination turns it dense, bucket-wise sums. */
    sr_hist *m2;
    ck_assert_sr_ok(sr_hist_new(&m2, &e), e);
    ck_assert_int_eq(sr_hist_merge(m2, m), 0); /* sparse into empty sparse: a copy */
    same_buckets(m2, m);
    ck_assert_int_eq(sr_hist_merge(m, r), 0);
    ck_assert_uint_eq(sr_hist_count(m), sr_hist_count(r) + 120);
    for (size_t k = 0; k < sr_hist_buckets(); k++)
        ck_assert_uint_eq(sr_hist_bucket_count(m, k),
                          sr_hist_bucket_count(r, k) + sr_hist_bucket_count(m2, k));
    sr_hist_free(m2);
    sr_hist_reset(h);
    ck_assert_uint_eq(sr_hist_count(h), 0);
    ck_assert_uint_eq(sr_hist_next_bucket(h, 0), sr_hist_buckets());
    sr_hist_free(h);
    sr_hist_free(r);
    sr_hist_free(m);
}
END_TEST

START_TEST(bucket_ranges_tile_the_line)
{
    uint64_t prev_hi = 0;
    for (size_t i = 0; i < sr_hist_buckets(); i++) {
        uint64_t lo, hi;
        sr_hist_bucket_range(i, &lo, &hi);
        if (i > 0)
            ck_assert_uint_eq(lo, prev_hi + 1);
        ck_assert_uint_ge(hi, lo);
        if (lo >= 256)
            ck_assert((double)(hi - lo + 1) / (double)lo <= 1.0 / 128.0 + 1e-12);
        prev_hi = hi;
    }
    ck_assert_uint_eq(prev_hi, UINT64_MAX);
}
END_TEST

/* Nearest rank on small (exact) values: the percentile that lands exactly on a rank gives that
 * value, one just past it the next; p50 of {10, 20} is 10. */
START_TEST(percentile_rank_boundaries_are_exact)
{
    sr_hist *h;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_hist_new(&h, &e), e);
    sr_hist_record(h, 10);
    sr_hist_record(h, 20);
    ck_assert_uint_eq(sr_hist_percentile(h, 50), 10);
    ck_assert_uint_eq(sr_hist_percentile(h, 49), 10);
    ck_assert_uint_eq(sr_hist_percentile(h, 51), 20);
    sr_hist_free(h);
    ck_assert_sr_ok(sr_hist_new(&h, &e), e);
    for (uint64_t v = 1; v <= 10; v++)
        sr_hist_record(h, v);
    for (uint64_t k = 1; k <= 9; k++) {
        ck_assert_uint_eq(sr_hist_percentile(h, 10.0 * (double)k), k);
        ck_assert_uint_eq(sr_hist_percentile(h, 10.0 * (double)k - 1), k);
        ck_assert_uint_eq(sr_hist_percentile(h, 10.0 * (double)k + 1), k + 1);
    }
    sr_hist_free(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hist");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, percentiles_match_sorted_array);
    tcase_add_test(tc, small_values_are_exact_and_merge_is_exact);
    tcase_add_test(tc, bucket_ranges_tile_the_line);
    tcase_add_test(tc, buckets_are_allocated_by_use);
    tcase_add_test(tc, percentile_rank_boundaries_are_exact);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
