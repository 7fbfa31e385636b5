/*
 * sr_jdom's numbers against strtod, bit for bit: millions of random decimals of 1 to 20
 * significant digits over the exponents of the power-of-five table and past it, exact ties
 * between two doubles that fit in 19 digits (the product method must hand them to the exact
 * one), the decimals next to them, and the edges (subnormal bounds, the largest double, powers of
 * ten, 2^53 +- 1, 19 and 20 digits). The digit runs read by the word (lib/sr_jdom.c, digit_run)
 * against strtod and against the byte loops (SR_JDOM_I_GENERAL) at every run length, every
 * byte after a run and every place the text can end.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_jdom.h"
#include "sr_jdom_priv.h"
#include "guard_page.h"
#include "sr_test.h"

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static sr_jdom *new_jdom(void)
{
    sr_jdom *j = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_jdom_new(&j, 0, &e), e);
    return j;
}

/* Parses the number text t and asserts that its value is strtod's, bit for bit. */
static void expect_strtod(sr_jdom *j, const char *t)
{
    cJSON *root = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_jdom_parse(j, t, strlen(t), &root, &e), e);
    ck_assert(cJSON_IsNumber(root));
    double want = strtod(t, NULL);
    ck_assert_msg(memcmp(&root->valuedouble, &want, sizeof(want)) == 0, "%s: %a, strtod %a", t,
                  root->valuedouble, want);
}

/* The digits of m (no sign), with a decimal point placed `frac` digits from the end (0: none)
 * and an exponent e (written when `with_e`). */
static void put_decimal(char *t, size_t cap, int neg, uint64_t m, int frac, int e, int with_e)
{
    char d[24];
    int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)m);
    size_t k = 0;
    if (neg)
        t[k++] = '-';
    if (frac >= n) {
        /* 0.000ddd */
        t[k++] = '0';
        t[k++] = '.';
        for (int i = 0; i < frac - n; i++)
            t[k++] = '0';
        memcpy(t + k, d, (size_t)n);
        k += (size_t)n;
    } else {
        memcpy(t + k, d, (size_t)(n - frac));
        k += (size_t)(n - frac);
        if (frac) {
            t[k++] = '.';
            memcpy(t + k, d + n - frac, (size_t)frac);
            k += (size_t)frac;
        }
    }
    if (with_e)
        k += (size_t)snprintf(t + k, cap - k, "e%d", e);
    t[k] = '\0';
}

/* 1..20 significant digits, the value's decimal exponent mostly within the table's -64..64 and
 * sometimes far past it: 3 million texts. */
START_TEST(random_decimals_match_strtod)
{
    sr_jdom *j = new_jdom();
    uint64_t s = 0x5EED0F5EED0F5EEDu;
    char t[96];
    for (int it = 0; it < 2000000; it++) {
        int digits = 1 + (int)(next_rand(&s) % 20);
        uint64_t m = next_rand(&s);
        if (digits < 20) {
            uint64_t p = 1;
            for (int i = 0; i < digits; i++)
                p *= 10;
            m %= p;
        }
        int frac = (int)(next_rand(&s) % 24);
        int span = it % 8 == 0 ? 700 : 150;
        int e = (int)(next_rand(&s) % (uint64_t)span) - span / 2;
        put_decimal(t, sizeof(t), (int)(next_rand(&s) & 1), m, frac, e, (it & 3) != 0);
        expect_strtod(j, t);
    }
    sr_jdom_free(j);
}
END_TEST

/* Logprob-like values: %.17g of a double in (-30, 0), the shape of a generate response. */
START_TEST(printed_doubles_match_strtod)
{
    sr_jdom *j = new_jdom();
    uint64_t s = 0x10C9B0B5u;
    char t[64];
    for (int it = 0; it < 1000000; it++) {
        double v = -30.0 * (double)(next_rand(&s) >> 11) / 9007199254740992.0;
        if (it % 4 == 0)
            v = ldexp(v, -(int)(next_rand(&s) % 60));
        snprintf(t, sizeof(t), it % 3 ? "%.17g" : "%.16g", v);
        expect_strtod(j, t);
        double back = strtod(t, NULL);
        if (it % 3)
            ck_assert(back == v);
    }
    sr_jdom_free(j);
}
END_TEST

/*
 * Exact ties: x * 2^s with x odd of 54 bits lies halfway between two doubles. For s >= 0 it is
 * an integer (written with a decimal exponent when x * 2^s is a multiple of a power of ten); for
 * s = -1..-3 its decimal x * 5^-s * 10^s has at most 19 digits. Also the decimals one unit in
 * the last place above and below each tie.
 */
START_TEST(ties_match_strtod)
{
    sr_jdom *j = new_jdom();
    uint64_t s = 0x7135u;
    char t[96];
    for (int it = 0; it < 400000; it++) {
        uint64_t x = ((next_rand(&s) >> 10) | ((uint64_t)1 << 53)) | 1u;
        int sh = (int)(next_rand(&s) % 13) - 3;
        uint64_t m;
        int frac = 0;
        if (sh >= 0) {
            if (sh > 9)
                sh = 9;
            m = x << sh;
        } else {
            uint64_t p5 = sh == -1 ? 5 : sh == -2 ? 25 : 125;
            if (x > UINT64_MAX / p5 || x * p5 >= 10000000000000000000u)
                continue;
            m = x * p5;
            frac = -sh;
        }
        for (int d = -1; d <= 1; d++) {
            uint64_t md = m + (uint64_t)(int64_t)d;
            put_decimal(t, sizeof(t), 0, md, frac, 0, 0);
            expect_strtod(j, t);
            /* The same value with its trailing zeros moved into an exponent. */
            int z = 0;
            while (md % 10 == 0 && z < 20) {
                md /= 10;
                z++;
            }
            if (z) {
                put_decimal(t, sizeof(t), 1, md, frac, z, 1);
                expect_strtod(j, t);
            }
        }
    }
    sr_jdom_free(j);
}
END_TEST

START_TEST(edges_match_strtod)
{
    static const char *const k_edges[] = {"0",
                                          "-0",
                                          "0.0",
                                          "0e-400",
                                          "1",
                                          "-1",
                                          "9007199254740991",
                                          "9007199254740992",
                                          "9007199254740993",
                                          "9007199254740994",
                                          "9007199254740995",
                                          "18014398509481985",
                                          "18014398509481987",
                                          "9223372036854775807",
                                          "9223372036854775808",
                                          "18446744073709551615",
                                          "18446744073709551616",
                                          "9999999999999999999",
                                          "10000000000000000000",
                                          "99999999999999999999",
                                          "1.7976931348623157e308",
                                          "1.7976931348623158e308",
                                          "1.7976931348623159e308",
                                          "2.2250738585072014e-308",
                                          "2.2250738585072011e-308",
                                          "2.2250738585072012e-308",
                                          "4.9406564584124654e-324",
                                          "2.4703282292062327e-324",
                                          "2.4703282292062328e-324",
                                          "1e-64",
                                          "1e-65",
                                          "1e64",
                                          "1e65",
                                          "9.999999999999999e-65",
                                          "1.0000000000000001e64",
                                          "0.1",
                                          "0.2",
                                          "0.3",
                                          "0.30000000000000004",
                                          "1e23",
                                          "8.988465674311579e307",
                                          "5e-324",
                                          "1e-22",
                                          "1e22",
                                          "1e-23",
                                          "123456789012345678e-64",
                                          "1234567890123456789e-64",
                                          "1234567890123456789e64",
                                          "1234567890123456789e45",
                                          "-0.0012345678901234567",
                                          "-1.2345678901234567e-05",
                                          "-29.999999999999996",
                                          "4503599627370496.5",
                                          "4503599627370497.5",
                                          "2.5e-1",
                                          "0.000000000000000000000001"};
    sr_jdom *j = new_jdom();
    for (size_t i = 0; i < sizeof(k_edges) / sizeof(k_edges[0]); i++)
        expect_strtod(j, k_edges[i]);
    /* Every power of ten of the table's range and past it, and its neighbours in 17 digits. */
    char t[64];
    for (int e = -80; e <= 80; e++) {
        snprintf(t, sizeof(t), "1e%d", e);
        expect_strtod(j, t);
        snprintf(t, sizeof(t), "9.9999999999999999e%d", e);
        expect_strtod(j, t);
        snprintf(t, sizeof(t), "1.0000000000000001e%d", e);
        expect_strtod(j, t);
        snprintf(t, sizeof(t), "1234567890123456789e%d", e);
        expect_strtod(j, t);
    }
    sr_jdom_free(j);
}
END_TEST

/* valueint as cJSON stores it: saturated, else truncated. */
static int saturated(double d)
{
    return d >= 2147483647.0 ? 2147483647 : d <= -2147483648.0 ? (-2147483647 - 1) : (int)d;
}

/* Parses text[0, n) (copied so that its NUL is the last byte before an unreadable page, so a
 * read past it faults: guard_page.h) under `flags` with and without the fast paths: the same code,
 * offset and message, or the same types, values and valueints along the first children. Returns the
 * fast parse's code; *num and *numint are the first number met on that walk, when one is. */
static int both_ways(sr_jdom *fast, sr_jdom *gen, const char *text, size_t n, unsigned flags,
                     double *num, int *numint)
{
    char *t = guard_copy(text, n);
    sr_jdom_set_flags(fast, flags);
    sr_jdom_set_flags(gen, flags | SR_JDOM_I_GENERAL);
    sr_err ef = SR_ERR_INIT, eg = SR_ERR_INIT;
    cJSON *rf = NULL, *rg = NULL;
    int cf = sr_jdom_parse(fast, t, n, &rf, &ef), cg = sr_jdom_parse(gen, t, n, &rg, &eg);
    ck_assert_msg(cf == cg && ef.offset == eg.offset && strcmp(ef.msg, eg.msg) == 0,
                  "flags %u, '%s': fast %s@%lld '%s', bytes %s@%lld '%s'", flags, t,
                  sr_code_name(cf), (long long)ef.offset, ef.msg, sr_code_name(cg),
                  (long long)eg.offset, eg.msg);
    if (cf == 0) {
        const cJSON *a = rf, *b = rg;
        for (; a && b; a = a->child ? a->child : a->next, b = b->child ? b->child : b->next) {
            ck_assert_msg(a->type == b->type && a->valueint == b->valueint &&
                              memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) == 0,
                          "flags %u, '%s': %a (%d) against %a (%d)", flags, t, a->valuedouble,
                          a->valueint, b->valuedouble, b->valueint);
            if (cJSON_IsNumber(a) && num) {
                *num = a->valuedouble;
                *numint = a->valueint;
                num = NULL;
            }
        }
        ck_assert(!a && !b);
    }
    return cf;
}

/* Number texts of every digit count either side of the word steps (1-22 integer and fraction
 * digits: 8 and 16 exactly, 19 and past it), with and without an exponent, followed by every
 * kind of byte (the ends of a number, bytes just outside '0'..'9', and bytes past 0x80 whose
 * sums with the digit test's constants carry), placed where 8 bytes are readable and where the
 * text ends inside the run, and cut at every byte. */
START_TEST(digit_runs_at_every_boundary)
{
    static const char *const after[] = {"",     "}",    ",",    " ",    ".",    "e",
                                        "E",    ":",    "/",    "x",    "\x7f", "\x80",
                                        "\xb9", "\xba", "\xc0", "\xff", "-"};
    static const char *const exps[] = {"", "e5", "E-3", "e+12", "e0400", "e-0"};
    sr_jdom *fast = new_jdom(), *gen = new_jdom();
    uint64_t s = 0x8D1B17Eu;
    char num[96], t[160];
    int parsed = 0;
    for (int ni = 0; ni <= 22; ni++) {
        for (int nf = 0; nf <= 22; nf++) {
            for (size_t x = 0; x < sizeof exps / sizeof exps[0]; x++) {
                size_t k = 0;
                if (next_rand(&s) & 1)
                    num[k++] = '-';
                /* ni == 0: the integer part "0". */
                for (int i = 0; i < (ni ? ni : 1); i++)
                    num[k++] = (char)(i == 0 && ni ? '1' + next_rand(&s) % 9
                                      : ni         ? '0' + next_rand(&s) % 10
                                                   : '0');
                if (nf) {
                    num[k++] = '.';
                    for (int i = 0; i < nf; i++)
                        num[k++] = (char)('0' + next_rand(&s) % 10);
                }
                k += (size_t)sprintf(num + k, "%s", exps[x]);
                num[k] = '\0';
                for (size_t a = 0; a < sizeof after / sizeof after[0]; a++) {
                    /* The number alone (its run reaches the text's end), then padded so that
                     * every step of the run reads a whole word, in an array and an object. */
                    int n1 = snprintf(t, sizeof t, "%s%s", num, after[a]);
                    double d = 0;
                    int vi = 0;
                    int rc = both_ways(fast, gen, t, (size_t)n1, SR_JDOM_REFERENCE, &d, &vi);
                    both_ways(fast, gen, t, (size_t)n1, 0, NULL, NULL);
                    if (rc == 0) {
                        double want = strtod(num, NULL);
                        ck_assert_msg(memcmp(&d, &want, sizeof d) == 0, "%s: %a, strtod %a", num, d,
                                      want);
                        ck_assert_int_eq(vi, saturated(want));
                        parsed++;
                    }
                    int n2 = snprintf(t, sizeof t, "[%s%s                ]", num, after[a]);
                    both_ways(fast, gen, t, (size_t)n2, SR_JDOM_REFERENCE, NULL, NULL);
                    int n3 = snprintf(t, sizeof t, "{\"logprob\":%s%s}", num, after[a]);
                    for (int cut = 0; cut <= n3; cut++)
                        both_ways(fast, gen, t, (size_t)cut, SR_JDOM_REFERENCE, NULL, NULL);
                }
            }
        }
    }
    /* Most texts of a number followed by nothing, '}' or ',' parse as a number. */
    ck_assert_int_gt(parsed, 23 * 23 * 4);
    /* -0 keeps its sign whatever the path. */
    double d = 1;
    int vi = 1;
    ck_assert_int_eq(both_ways(fast, gen, "-0.000000000000000000000", 24, 0, &d, &vi), 0);
    ck_assert(signbit(d) && d == 0 && vi == 0);
    sr_jdom_free(fast);
    sr_jdom_free(gen);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jdom_num");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, random_decimals_match_strtod);
    tcase_add_test(tc, printed_doubles_match_strtod);
    tcase_add_test(tc, ties_match_strtod);
    tcase_add_test(tc, edges_match_strtod);
    tcase_add_test(tc, digit_runs_at_every_boundary);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
