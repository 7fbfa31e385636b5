/* In-process units of the mock engine's JSON writer (harness/engine/jsonw.h): floats as orjson
 * writes them (the shortest text that reads back), strings and arrays. The engine's other units:
 * test_engine_units.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/jsonw.h"
#include "sr_test.h"

START_TEST(test_floats_like_orjson)
{
    struct {
        double v;
        const char *s;
    } g[] = {
        {-0.1, "-0.1"},
        {-9999.0, "-9999.0"},
        {0.0, "0.0"},
        {-0.0, "-0.0"},
        {1.0, "1.0"},
        {1e-5, "0.00001"},
        {1.5e-5, "0.000015"},
        {1e-6, "1e-6"},
        {-1.25e-7, "-1.25e-7"},
        {123.456, "123.456"},
        {1e15, "1000000000000000.0"},
        {1e16, "1e16"},
        {1.5e16, "1.5e16"},
        {0.1 + 0.2, "0.30000000000000004"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e308"},
        {-1.101633146222965, "-1.101633146222965"},
        {NAN, "null"},
        {INFINITY, "null"},
        {-INFINITY, "null"},
    };
    for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
        char buf[SR_JW_DOUBLE_MAX];
        sr_jw_format_double(buf, g[i].v);
        ck_assert_str_eq(buf, g[i].s);
    }
    /* Every formatted value reads back as itself. */
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof(v));
        if (!isfinite(v))
            continue;
        char buf[SR_JW_DOUBLE_MAX];
        sr_jw_format_double(buf, v);
        ck_assert_msg(strtod(buf, NULL) == v, "%s", buf);
    }
}
END_TEST

/* The significant digits of a formatted number ("-0.00015" -> "15", "1.25e-7" -> "125"). */
static void sig_digits(char *out, const char *num)
{
    size_t n = 0;
    for (const char *p = num; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && (n || *p != '0'))
            out[n++] = *p;
    while (n > 1 && out[n - 1] == '0')
        n--;
    out[n] = '\0';
}

/* The definition: the digits of the fewest significant digits that read back (a power of two's
 * neighbour above aside, which the writer may prefer: those are left to the read-back check). */
static void shortest_by_definition(char *out, double a)
{
    char tmp[48], best[48] = "";
    for (int p = 17; p >= 1; p--) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, a);
        if (strtod(tmp, NULL) != a)
            break;
        memcpy(best, tmp, sizeof tmp);
    }
    sig_digits(out, best);
}

/* Random bit patterns and logprob-like values (-8 x uniform, as the oracle draws them): the
 * writer's digits are the shortest that read back. */
START_TEST(test_floats_are_the_shortest_that_read_back)
{
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (int i = 0; i < 60000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v;
        if (i % 2) {
            memcpy(&v, &x, sizeof(v));
        } else {
            v = -8.0 * (double)(x >> 11) * 0x1.0p-53;
            if (i % 6 == 0) /* short decimals too: 1-6 digit values */
                v = (double)(int64_t)(x % 2000000) / 1000.0;
        }
        int e2;
        if (!isfinite(v) || v == 0.0 || frexp(fabs(v), &e2) == 0.5)
            continue;
        char buf[SR_JW_DOUBLE_MAX], got[32], want[32];
        sr_jw_format_double(buf, v);
        ck_assert_msg(strtod(buf, NULL) == v, "%s", buf);
        sig_digits(got, buf);
        shortest_by_definition(want, fabs(v));
        ck_assert_msg(strcmp(got, want) == 0, "%.17g written as %s, shortest digits %s", v, buf,
                      want);
    }
}
END_TEST

/* One value through both paths of the writer: the integer one and the C library's. */
static void same_both_ways(double v)
{
    char got[SR_JW_DOUBLE_MAX], want[SR_JW_DOUBLE_MAX];
    sr_jw_format_double(got, v);
    sr_jw_format_double_libc(want, v);
    ck_assert_msg(strcmp(got, want) == 0, "%a (%.17g): integer path %s, C library %s", v, v, got,
                  want);
}

/*
 * The integer path (10^-6 <= |v| < 10) against snprintf/strtod: logprob-like values, random bit
 * patterns of the range, every power of two in it (the gap below is half) and its neighbours,
 * short decimals, binary fractions whose 16- or 17-digit rounding is an exact tie, the
 * neighbours of every decade boundary and of the range's ends.
 */
START_TEST(test_floats_integer_path_matches_libc)
{
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 30000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        same_both_ways(-8.0 * (double)(x >> 11) * 0x1.0p-53);
        /* exponents 2^-21 .. 2^4 with random significands */
        uint64_t bits = (x & ((1ull << 52) - 1)) | (uint64_t)(1002 + (x >> 58) % 28) << 52;
        double v;
        memcpy(&v, &bits, sizeof v);
        same_both_ways(v);
    }
    for (int e = -25; e <= 5; e++) {
        double p2 = ldexp(1.0, e);
        same_both_ways(p2);
        same_both_ways(nextafter(p2, 0.0));
        same_both_ways(nextafter(p2, 100.0));
    }
    for (int k = 1; k < 20000; k++) {
        same_both_ways((double)k / 1024.0); /* exact binary fractions: ties at short lengths */
        same_both_ways((double)k * 1e-5);
        same_both_ways(-(double)k / 65536.0);
    }
    /* Odd multiples of 2^-14 .. 2^-24: exact expansions of 17-19 digits, so the 16- and 17-digit
     * roundings meet exact ties (1 + 2^-17 = 1.00000762939453125). */
    for (int e = 14; e <= 24; e++)
        for (uint64_t k = 1; k < 6000; k += 2) {
            same_both_ways(ldexp((double)k, -e));
            same_both_ways(ldexp((double)((1ull << e) + k), -e));
        }
    for (int t = -7; t <= 1; t++) {
        double d = pow(10.0, t);
        double near[] = {d,       nextafter(d, 0.0),       nextafter(d, 100.0),
                         9.5 * d, nextafter(9.5 * d, 0.0), nextafter(9.5 * d, 100.0)};
        for (size_t j = 0; j < sizeof near / sizeof near[0]; j++) {
            same_both_ways(near[j]);
            same_both_ways(-near[j]);
        }
    }
}
END_TEST

START_TEST(test_strings_and_arrays)
{
    sr_buf b = SR_BUF_INIT;
    ck_assert_int_eq(sr_jw_string(&b, "a\"b\\c\n\x01/\xc3\xa9", 10, NULL), 0);
    ck_assert_str_eq(b.data, "\"a\\\"b\\\\c\\n\\u0001/\xc3\xa9\"");
    sr_buf_reset(&b);
    int32_t v[] = {0, -1, 2147483647, (int32_t)-2147483647 - 1};
    ck_assert_int_eq(sr_jw_i32_array(&b, v, 4, NULL), 0);
    ck_assert_str_eq(b.data, "[0,-1,2147483647,-2147483648]");
    sr_buf_reset(&b);
    ck_assert_int_eq(sr_jw_i32_array(&b, v, 0, NULL), 0);
    ck_assert_str_eq(b.data, "[]");
    sr_buf_release(&b);
}
END_TEST

static Suite *jsonw_suite(void)
{
    Suite *s = suite_create("engine_jsonw");
    TCase *tc = tcase_create("jsonw");
    tcase_add_test(tc, test_floats_like_orjson);
    tcase_add_test(tc, test_floats_are_the_shortest_that_read_back);
    tcase_add_test(tc, test_floats_integer_path_matches_libc);
    tcase_add_test(tc, test_strings_and_arrays);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(jsonw_suite());
}
