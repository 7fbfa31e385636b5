/*
 * unit.stats: check-body's statistics (lib/sr_stats.h) for every dtype at both extremes: exact
 * integers (int64 min, uint64 max), bools as 0/1 with non-canonical bytes counted, floats over
 * the finite values with NaN/inf counts, empty and all-NaN arrays without a range.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sr_stats.h"
#include "sr_test.h"

static sr_array_stats of(sr_dtype dt, const void *bytes, int64_t n)
{
    sr_ndarray a = SR_NDARRAY_INIT;
    a.dtype = dt;
    a.ndim = 1;
    a.shape[0] = n;
    a.data = (void *)bytes;
    a.nbytes = (size_t)n * sr_dtype_size(dt);
    sr_array_stats st;
    sr_array_stats_compute(&st, &a);
    return st;
}

static void expect_int(sr_array_stats st, const char *lo, const char *hi)
{
    char a[32], b[32];
    ck_assert(st.has_range);
    ck_assert_str_eq(sr_stats_int_text(&st, 0, a, sizeof(a)), lo);
    ck_assert_str_eq(sr_stats_int_text(&st, 1, b, sizeof(b)), hi);
}

START_TEST(integers_are_exact_at_both_extremes)
{
    int8_t i8[3] = {0, INT8_MIN, INT8_MAX};
    uint8_t u8[3] = {7, 0, UINT8_MAX};
    int16_t i16[3] = {0, INT16_MIN, INT16_MAX};
    uint16_t u16[3] = {7, 0, UINT16_MAX};
    int32_t i32[3] = {0, INT32_MIN, INT32_MAX};
    uint32_t u32[3] = {7, 0, UINT32_MAX};
    int64_t i64[3] = {0, INT64_MIN, INT64_MAX};
    uint64_t u64[3] = {7, 0, UINT64_MAX};
    expect_int(of(SR_DTYPE_INT8, i8, 3), "-128", "127");
    expect_int(of(SR_DTYPE_UINT8, u8, 3), "0", "255");
    expect_int(of(SR_DTYPE_INT16, i16, 3), "-32768", "32767");
    expect_int(of(SR_DTYPE_UINT16, u16, 3), "0", "65535");
    expect_int(of(SR_DTYPE_INT32, i32, 3), "-2147483648", "2147483647");
    expect_int(of(SR_DTYPE_UINT32, u32, 3), "0", "4294967295");
    expect_int(of(SR_DTYPE_INT64, i64, 3), "-9223372036854775808", "9223372036854775807");
    expect_int(of(SR_DTYPE_UINT64, u64, 3), "0", "18446744073709551615");
    uint64_t top[2] = {UINT64_MAX - 1, UINT64_MAX};
    expect_int(of(SR_DTYPE_UINT64, top, 2), "18446744073709551614", "18446744073709551615");
}
END_TEST

START_TEST(bools_are_zero_one_and_noncanonical_bytes_counted)
{
    uint8_t b[4] = {0, 1, 2, 255};
    sr_array_stats st = of(SR_DTYPE_BOOL, b, 4);
    expect_int(st, "0", "1");
    ck_assert_uint_eq(st.noncanonical_bool, 2);
    uint8_t t[2] = {2, 3};
    st = of(SR_DTYPE_BOOL, t, 2);
    expect_int(st, "1", "1");
    ck_assert_uint_eq(st.noncanonical_bool, 2);
}
END_TEST

START_TEST(floats_over_finite_values_with_counts)
{
    float f[6] = {NAN, -FLT_MAX, FLT_MAX, INFINITY, -INFINITY, FLT_MIN};
    sr_array_stats st = of(SR_DTYPE_FLOAT32, f, 6);
    ck_assert(st.kind == SR_STATS_FLOAT && st.has_range);
    ck_assert(st.fmin == -FLT_MAX && st.fmax == FLT_MAX);
    ck_assert_uint_eq(st.nan, 1);
    ck_assert_uint_eq(st.posinf, 1);
    ck_assert_uint_eq(st.neginf, 1);
    ck_assert_uint_eq(st.finite, 3);
    double d[3] = {-DBL_MAX, DBL_MAX, NAN};
    st = of(SR_DTYPE_FLOAT64, d, 3);
    ck_assert(st.fmin == -DBL_MAX && st.fmax == DBL_MAX && st.nan == 1);
    /* float16: 0xfbff = -65504, 0x7bff = 65504, 0x7e00 NaN, 0x7c00 +inf, 0x0001 = 2^-24. */
    uint16_t h[5] = {0xfbff, 0x7bff, 0x7e00, 0x7c00, 0x0001};
    st = of(SR_DTYPE_FLOAT16, h, 5);
    ck_assert(st.fmin == -65504.0 && st.fmax == 65504.0);
    ck_assert(st.nan == 1 && st.posinf == 1 && st.finite == 3);
    ck_assert(sr_half_to_double(0x0001) == ldexp(1.0, -24));
    ck_assert(sr_half_to_double(0x3c00) == 1.0);
    /* A NaN first does not hide the values after it; all NaN: no range. */
    float nanfirst[3] = {NAN, 2.0f, -1.0f};
    st = of(SR_DTYPE_FLOAT32, nanfirst, 3);
    ck_assert(st.fmin == -1.0 && st.fmax == 2.0);
    float allnan[2] = {NAN, NAN};
    st = of(SR_DTYPE_FLOAT32, allnan, 2);
    ck_assert(!st.has_range && st.nan == 2 && st.finite == 0);
}
END_TEST

START_TEST(empty_arrays_have_no_range)
{
    sr_array_stats st = of(SR_DTYPE_INT32, NULL, 0);
    char buf[32];
    ck_assert(!st.has_range && st.count == 0);
    ck_assert_str_eq(sr_stats_int_text(&st, 1, buf, sizeof(buf)), "");
    st = of(SR_DTYPE_FLOAT64, NULL, 0);
    ck_assert(!st.has_range && st.kind == SR_STATS_FLOAT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("stats");
    tcase_add_test(tc, integers_are_exact_at_both_extremes);
    tcase_add_test(tc, bools_are_zero_one_and_noncanonical_bytes_counted);
    tcase_add_test(tc, floats_over_finite_values_with_counts);
    tcase_add_test(tc, empty_arrays_have_no_range);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
