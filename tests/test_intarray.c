/* sr_intarray: grammar, range checks, offsets, chunk invariance and a property test vs cJSON. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>

#include "sr_intarray.h"
#include "sr_test.h"

#define MAXV 4096

typedef struct parsed {
    int rc;
    int64_t offset;
    size_t count, end;
    int64_t v[MAXV];
} parsed;

static int64_t value_at(const void *dst, int width, size_t i)
{
    if (width == 4) {
        int32_t x;
        memcpy(&x, (const char *)dst + i * 4, 4);
        return x;
    }
    int64_t x;
    memcpy(&x, (const char *)dst + i * 8, 8);
    return x;
}

static parsed *parse_text(const char *s, int64_t min, int64_t max)
{
    static parsed p;
    static int64_t buf[MAXV + 8];
    memset(&p, 0, sizeof(p));
    size_t n = strlen(s);
    ck_assert_uint_le(sr_intarray_max_values(n), MAXV);
    sr_err err = SR_ERR_INIT;
    p.rc = sr_intarray_parse(buf, &p.count, &p.end, s, n, min, max, &err);
    ck_assert_int_eq(p.rc, err.code);
    p.offset = err.offset;
    int width = sr_intarray_dtype(min, max) == SR_DTYPE_INT32 ? 4 : 8;
    for (size_t i = 0; i < p.count; i++)
        p.v[i] = value_at(buf, width, i);
    return &p;
}

START_TEST(valid_arrays)
{
    parsed *p = parse_text("[]", 0, INT32_MAX);
    ck_assert_sr_ok(p->rc, (sr_err){0});
    ck_assert_uint_eq(p->count, 0);
    ck_assert_uint_eq(p->end, 2);
    p = parse_text(" [ \t\n\r]", 0, INT32_MAX);
    ck_assert_int_eq(p->rc, 0);
    ck_assert_uint_eq(p->end, 7);
    p = parse_text("[10,11,0,7]tail", 0, INT32_MAX);
    ck_assert_int_eq(p->rc, 0);
    ck_assert_uint_eq(p->count, 4);
    ck_assert_uint_eq(p->end, 11);
    ck_assert_int_eq(p->v[0], 10);
    ck_assert_int_eq(p->v[1], 11);
    ck_assert_int_eq(p->v[2], 0);
    ck_assert_int_eq(p->v[3], 7);
    p = parse_text("[ -5 , -0,\n2147483647 ]", INT32_MIN, INT32_MAX);
    ck_assert_int_eq(p->rc, 0);
    ck_assert_int_eq(p->v[0], -5);
    ck_assert_int_eq(p->v[1], 0);
    ck_assert_int_eq(p->v[2], INT32_MAX);
    p = parse_text("[-9223372036854775808,9223372036854775807]", INT64_MIN, INT64_MAX);
    ck_assert_int_eq(p->rc, 0);
    ck_assert_int_eq(p->v[0], INT64_MIN);
    ck_assert_int_eq(p->v[1], INT64_MAX);
    ck_assert_int_eq(sr_intarray_dtype(0, INT32_MAX), SR_DTYPE_INT32);
    ck_assert_int_eq(sr_intarray_dtype(0, (int64_t)INT32_MAX + 1), SR_DTYPE_INT64);
}
END_TEST

START_TEST(syntax_errors_are_named_with_offsets)
{
    static const struct {
        const char *text;
        int64_t offset;
    } cases[] = {
        {"[1,]", 3},   {"[,1]", 1},  {"[01]", 2},   {"[1.0]", 2},    {"[1e3]", 2},
        {"[+1]", 1},   {"[-]", 2},   {"[1 2]", 3},  {"[\"1\"]", 1},  {"[[1]]", 1},
        {"[1,,2]", 3}, {"[-01]", 3}, {"[1", 2},     {"1]", 0},       {"", 0},
        {"[true]", 1}, {"[1}", 2},   {"[0x10]", 2}, {"[1,\x01]", 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        parsed *p = parse_text(cases[i].text, INT32_MIN, INT32_MAX);
        ck_assert_msg(p->rc == SR_E_INTARRAY_SYNTAX, "case %zu '%s': got %s", i, cases[i].text,
                      sr_code_name(p->rc));
        ck_assert_msg(p->offset == cases[i].offset, "case %zu '%s': offset %lld, want %lld", i,
                      cases[i].text, (long long)p->offset, (long long)cases[i].offset);
    }
}
END_TEST

START_TEST(range_errors_are_named_with_offsets)
{
    parsed *p = parse_text("[1, 2147483648]", 0, INT32_MAX);
    ck_assert_int_eq(p->rc, SR_E_INTARRAY_STRICT);
    ck_assert_int_eq(p->offset, 4);
    p = parse_text("[0,-1]", 0, INT32_MAX);
    ck_assert_int_eq(p->rc, SR_E_INTARRAY_STRICT);
    ck_assert_int_eq(p->offset, 3);
    p = parse_text("[99999999999999999999]", INT64_MIN, INT64_MAX);
    ck_assert_int_eq(p->rc, SR_E_INTARRAY_STRICT);
    p = parse_text("[9223372036854775808]", INT64_MIN, INT64_MAX);
    ck_assert_int_eq(p->rc, SR_E_INTARRAY_STRICT);
    p = parse_text("[-9223372036854775809]", INT64_MIN, INT64_MAX);
    ck_assert_int_eq(p->rc, SR_E_INTARRAY_STRICT);
    p = parse_text("[123456789012345678901234567890]", INT64_MIN, INT64_MAX);
    ck_assert_int_eq(p->rc, SR_E_INTARRAY_STRICT);
    ck_assert_int_eq(p->offset, 1);
}
END_TEST

/* Feeds `s` after its '[' in pieces cut at `cuts` and returns the verdict. */
static void feed_split(parsed *out, const char *s, size_t n, const size_t *cuts, size_t ncuts)
{
    static int32_t buf[MAXV + 8];
    memset(out, 0, sizeof(*out));
    sr_intarray_parser p;
    sr_intarray_init(&p, 0, INT32_MAX);
    size_t at = 0;
    int done = 0;
    sr_err err = SR_ERR_INIT;
    for (size_t c = 0; c <= ncuts && !done && out->rc == 0; c++) {
        size_t to = c < ncuts ? cuts[c] : n;
        size_t used = 0;
        out->rc = sr_intarray_feed(&p, buf, s + at, to - at, &used, &done, &err);
        at += used;
    }
    out->offset = err.offset;
    out->count = (size_t)p.count;
    out->end = done ? at : SIZE_MAX;
    for (size_t i = 0; i < out->count; i++)
        out->v[i] = buf[i];
}

START_TEST(every_split_gives_the_same_result)
{
    static const char *texts[] = {"1, 22 ,333,\n4444 ]x",
                                  "0,1,-0]",
                                  "12,01]",
                                  "7, 2147483648]",
                                  " ]",
                                  "5,6",
                                  "1.5]",
                                  "1 ,, 2]"};
    for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
        const char *s = texts[t];
        size_t n = strlen(s);
        parsed whole, split;
        feed_split(&whole, s, n, NULL, 0);
        for (size_t a = 0; a <= n; a++) {
            for (size_t b = a; b <= n; b++) {
                size_t cuts[2] = {a, b};
                feed_split(&split, s, n, cuts, 2);
                ck_assert_msg(split.rc == whole.rc && split.offset == whole.offset &&
                                  split.count == whole.count && split.end == whole.end,
                              "text %zu split %zu/%zu differs", t, a, b);
                ck_assert_mem_eq(split.v, whole.v, whole.count * sizeof(int64_t));
            }
        }
    }
}
END_TEST

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void put_ws(char *buf, size_t *n)
{
    static const char ws[] = " \t\n\r";
    if (rnd() % 3 == 0) {
        size_t k = rnd() % 3 + 1;
        for (size_t i = 0; i < k; i++)
            buf[(*n)++] = ws[rnd() % 4];
    }
}

/* Random arrays of integers below 2^53 in magnitude: the fast parser and cJSON agree exactly. */
START_TEST(property_matches_cjson_on_valid_arrays)
{
    static char text[1 << 16];
    static int64_t want[MAXV];
    for (int iter = 0; iter < 400; iter++) {
        size_t n = 0, k = rnd() % 200;
        int64_t lo = (rnd() & 1) ? 0 : -((int64_t)1 << 53), hi = (int64_t)1 << 53;
        put_ws(text, &n);
        text[n++] = '[';
        for (size_t i = 0; i < k; i++) {
            put_ws(text, &n);
            int64_t v;
            switch (rnd() % 4) {
            case 0:
                v = (int64_t)(rnd() % 10);
                break;
            case 1:
                v = (int64_t)(rnd() % 600000);
                break;
            case 2:
                v = (int64_t)(rnd() % ((uint64_t)1 << 53));
                break;
            default:
                v = INT32_MAX - (int64_t)(rnd() % 3);
                break;
            }
            if (lo < 0 && (rnd() & 1))
                v = -v;
            want[i] = v;
            n += (size_t)snprintf(text + n, sizeof(text) - n, "%lld", (long long)v);
            put_ws(text, &n);
            if (i + 1 < k)
                text[n++] = ',';
        }
        put_ws(text, &n);
        text[n++] = ']';
        text[n] = '\0';
        parsed *p = parse_text(text, lo, hi);
        ck_assert_msg(p->rc == 0, "iteration %d: %s", iter, sr_code_name(p->rc));
        cJSON *ref = cJSON_Parse(text);
        ck_assert_ptr_nonnull(ref);
        ck_assert_uint_eq((size_t)cJSON_GetArraySize(ref), p->count);
        size_t i = 0;
        for (cJSON *it = ref->child; it; it = it->next, i++) {
            ck_assert_msg(cJSON_IsNumber(it) && (int64_t)it->valuedouble == p->v[i],
                          "iteration %d item %zu", iter, i);
            ck_assert_int_eq(p->v[i], want[i]);
        }
        cJSON_Delete(ref);
    }
}
END_TEST

/* Mutations that make the text invalid JSON: cJSON rejects them, and so does the fast parser. */
START_TEST(property_rejects_what_cjson_rejects)
{
    static const char *bad[] = {",", "[", "}", "x", "1 2", "-", "\"", ",,"};
    static char text[4096];
    for (int iter = 0; iter < 400; iter++) {
        size_t n = 0, k = rnd() % 20 + 1, at = rnd() % k;
        text[n++] = '[';
        for (size_t i = 0; i < k; i++) {
            if (i == at)
                n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", bad[rnd() % 8]);
            else
                n += (size_t)snprintf(text + n, sizeof(text) - n, "%u", (unsigned)(rnd() % 1000));
            if (i + 1 < k)
                text[n++] = ',';
        }
        text[n++] = ']';
        text[n] = '\0';
        cJSON *ref = cJSON_Parse(text);
        parsed *p = parse_text(text, 0, INT32_MAX);
        if (!ref)
            ck_assert_msg(p->rc == SR_E_INTARRAY_SYNTAX, "'%s' accepted", text);
        cJSON_Delete(ref);
    }
}
END_TEST

/* After an error, *consumed stops before the byte that raised it (the splice hands the array's
 * bytes up to there back to the JSON parser). */
START_TEST(consumed_stops_at_the_error)
{
    static const struct {
        const char *text;
        int code;
        size_t consumed;
    } cases[] = {{"1,2,x]", SR_E_INTARRAY_SYNTAX, 4}, {"1,-5,3]", SR_E_INTARRAY_STRICT, 4},
                 {"12.5]", SR_E_INTARRAY_SYNTAX, 2},  {"01]", SR_E_INTARRAY_SYNTAX, 1},
                 {"1 2]", SR_E_INTARRAY_SYNTAX, 2},   {"\"a\"]", SR_E_INTARRAY_SYNTAX, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sr_intarray_parser p;
        sr_intarray_init(&p, 0, INT32_MAX);
        int32_t buf[16];
        size_t used = 99;
        int done = 0;
        sr_err err = SR_ERR_INIT;
        int rc =
            sr_intarray_feed(&p, buf, cases[i].text, strlen(cases[i].text), &used, &done, &err);
        ck_assert_msg(rc == cases[i].code, "'%s': %s", cases[i].text, sr_code_name(rc));
        ck_assert_msg(used == cases[i].consumed, "'%s': consumed %zu", cases[i].text, used);
    }
}
END_TEST

/* The compact fast path checks the range too: in a long array the value at each position is
 * accepted at max and refused one past it, for short (SWAR) and long (9 digits) values. */
START_TEST(fast_path_range_at_every_position)
{
    const int64_t maxes[3] = {99, 1234567, 123456789};
    for (int m = 0; m < 3; m++) {
        for (int k = 0; k < 21; k++) {
            for (int past = 0; past < 3; past++) {
                /* past 0: max, 1: max + 1, 2: max - 1 */
                int64_t v = maxes[m] + (past == 1 ? 1 : past == 2 ? -1 : 0);
                char s[512];
                size_t n = 0, at = 0;
                s[n++] = '[';
                for (int i = 0; i < 21; i++) {
                    if (i == k)
                        at = n;
                    n += (size_t)snprintf(s + n, sizeof s - n, "%s%lld", i ? "," : "",
                                          (long long)(i == k ? v : 1));
                    if (i == k && i)
                        at++;
                }
                snprintf(s + n, sizeof s - n, "]");
                parsed *p = parse_text(s, 0, maxes[m]);
                if (past == 1) {
                    ck_assert_msg(p->rc == SR_E_INTARRAY_STRICT, "%s max %lld: rc %d", s,
                                  (long long)maxes[m], p->rc);
                    ck_assert_int_eq(p->offset, at);
                } else {
                    ck_assert_msg(p->rc == 0, "%s max %lld: rc %d", s, (long long)maxes[m], p->rc);
                    ck_assert_int_eq(p->count, 21);
                    ck_assert_int_eq(p->v[k], v);
                }
            }
        }
    }
}
END_TEST

/* One case of the range table: `n` values, all `fill` but `v` at index k; checks the verdict (a
 * refusal names SR_E_INTARRAY_STRICT at the value's first byte) and every value taken. */
static void range_case(int64_t min, int64_t max, int n, int64_t fill, int k, int64_t v, int ok)
{
    static char s[64 * 24];
    size_t len = 0, at = 0;
    s[len++] = '[';
    for (int i = 0; i < n; i++) {
        if (i)
            s[len++] = ',';
        if (i == k)
            at = len;
        len += (size_t)snprintf(s + len, sizeof s - len, "%lld", (long long)(i == k ? v : fill));
    }
    snprintf(s + len, sizeof s - len, "]");
    parsed *p = parse_text(s, min, max);
    if (!ok) {
        ck_assert_msg(p->rc == SR_E_INTARRAY_STRICT, "[%lld, %lld] %lld at %d of %d: rc %d",
                      (long long)min, (long long)max, (long long)v, k, n, p->rc);
        ck_assert_int_eq(p->offset, at);
        return;
    }
    ck_assert_msg(p->rc == 0, "[%lld, %lld] %lld at %d of %d: rc %d", (long long)min,
                  (long long)max, (long long)v, k, n, p->rc);
    ck_assert_int_eq(p->count, n);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(p->v[i], i == k ? v : fill);
}

/* The range at every position of a long compact array, for maxima at each digit-count border of
 * the fast path (SWAR up to 7 digits, the loop for 8 to 18, the general path past 18) and both
 * element widths: max and max - 1 are taken and max + 1 refused at each of 48 positions (more
 * than two 20-byte look-ahead windows and the tail the general path takes), with short (1) and
 * long (max) neighbours; a negative minimum is exact at each position too, and minima of 1 and 2
 * (the fast path takes only values from 1 up, so it must give way to the general path for a
 * minimum above 1) refuse 0 and 1. */
START_TEST(range_table_every_position_both_widths)
{
    const int64_t maxes[] = {9,
                             99,
                             9999999,
                             10000000,
                             99999999,
                             999999999,
                             INT32_MAX,
                             (int64_t)INT32_MAX + 1,
                             999999999999999999ll,
                             1000000000000000000ll,
                             INT64_MAX - 1};
    const int n = 48;
    for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
        int64_t max = maxes[m], min = -max;
        for (int k = 0; k < n; k++) {
            for (int f = 0; f < 2; f++) {
                int64_t fill = f ? max : 1;
                range_case(0, max, n, fill, k, max, 1);
                range_case(0, max, n, fill, k, max - 1, 1);
                range_case(0, max, n, fill, k, max + 1, 0);
                range_case(min, max, n, fill, k, max + 1, 0);
                range_case(min, max, n, fill, k, min, 1);
                range_case(min, max, n, fill, k, min - 1, 0);
                range_case(1, max, n, fill, k, 0, 0);
                range_case(1, max, n, fill, k, 1, 1);
                range_case(2, max, n, f ? max : 2, k, 1, 0);
                range_case(2, max, n, f ? max : 2, k, 2, 1);
            }
        }
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("intarray");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, valid_arrays);
    tcase_add_test(tc, syntax_errors_are_named_with_offsets);
    tcase_add_test(tc, range_errors_are_named_with_offsets);
    tcase_add_test(tc, every_split_gives_the_same_result);
    tcase_add_test(tc, property_matches_cjson_on_valid_arrays);
    tcase_add_test(tc, property_rejects_what_cjson_rejects);
    tcase_add_test(tc, consumed_stops_at_the_error);
    tcase_add_test(tc, fast_path_range_at_every_position);
    tcase_add_test(tc, range_table_every_position_both_widths);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
