/* sr_jdom: the same trees as cJSON, the same refusals as cJSON plus RFC 8259, arena reuse. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jdom_oracle.h"
#include "sr_jdom.h"
#include "sr_test.h"

/* What cJSON does with t[0 .. n) in the splice: NUL required right after the text. */
static cJSON *cjson_parse(const char *t, size_t n)
{
    const char *end = NULL;
    return cJSON_ParseWithLengthOpts(t, n + 1, &end, 1);
}

/* Parses t[0 .. n) (t[n] == '\0') with both parsers and asserts equal trees. */
static void expect_same_n(sr_jdom *j, const char *t, size_t n)
{
    sr_err e = SR_ERR_INIT;
    cJSON *ref = cjson_parse(t, n);
    ck_assert_msg(ref != NULL, "cJSON refuses the table entry %s", t);
    cJSON *mine = NULL;
    ck_assert_sr_ok(sr_jdom_parse(j, t, n, &mine, &e), e);
    ck_assert_msg(oracle_same_root(ref, mine), "trees differ for %s", t);
    /* The tree works with cJSON's own readers and printer. */
    char *a = cJSON_PrintUnformatted(ref), *b = cJSON_PrintUnformatted(mine);
    ck_assert_str_eq(a, b);
    cJSON *dup = cJSON_Duplicate(mine, 1);
    ck_assert_msg(oracle_same_root(ref, dup), "cJSON_Duplicate of the tree differs for %s", t);
    cJSON_Delete(dup);
    free(a);
    free(b);
    cJSON_Delete(ref);
}

static void expect_same(sr_jdom *j, const char *t)
{
    expect_same_n(j, t, strlen(t));
}

static void expect_syntax_n(sr_jdom *j, const char *t, size_t n)
{
    sr_err e = SR_ERR_INIT;
    cJSON *mine = (cJSON *)&e; /* must be overwritten with NULL */
    ck_assert_sr_code(sr_jdom_parse(j, t, n, &mine, &e), e, SR_E_JSON_SYNTAX);
    ck_assert_ptr_null(mine);
    ck_assert_msg(e.offset >= 0 && (size_t)e.offset <= n, "offset %lld outside the text of %zu",
                  (long long)e.offset, n);
}

static void expect_syntax(sr_jdom *j, const char *t)
{
    expect_syntax_n(j, t, strlen(t));
}

static sr_jdom *new_jdom(size_t max)
{
    sr_err e = SR_ERR_INIT;
    sr_jdom *j = NULL;
    ck_assert_sr_ok(sr_jdom_new(&j, max, &e), e);
    return j;
}

/* n nested arrays (or objects {"k": ...} when obj) around 1; caller frees. */
static char *nested(int n, int obj)
{
    char *t = malloc((size_t)n * 6 + 2);
    size_t k = 0;
    for (int i = 0; i < n; i++)
        k += (size_t)sprintf(t + k, "%s", obj ? "{\"k\":" : "[");
    t[k++] = '1';
    for (int i = 0; i < n; i++)
        t[k++] = obj ? '}' : ']';
    t[k] = '\0';
    return t;
}

/* A splice remainder: 64 logprobs, finish_reason, a syncroll object, two envelope skeletons. */
static char *remainder_text(void)
{
    char *t = malloc(8192);
    size_t k = (size_t)sprintf(t, "{\"choices\":[{\"index\":0,\"logprobs\":{\"content\":[");
    for (int i = 0; i < 64; i++)
        k += (size_t)sprintf(t + k, "%s{\"logprob\":%.17g}", i ? "," : "",
                             -0.0123456789012345678 * (i + 1) * (i + 3));
    sprintf(t + k,
            "]},\"finish_reason\":\"length\",\"routed_experts\":{\"data\":\"\",\"shape\":"
            "[64,48,8],\"dtype\":\"uint8\"}}],\"syncroll\":{\"engine\":1,\"weight_version\":7,"
            "\"session\":\"s-12\",\"turn\":2},\"token_ids\":{\"data\":\"\",\"shape\":[64],"
            "\"dtype\":\"int32\"}}");
    return t;
}

/* Texts both parsers accept, with every kind of value, escape and number edge. */
static const char *const k_same[] = {
    "0",
    "-0",
    "1",
    "-1",
    "1.5",
    "-1.2345678901234567",
    "0.1",
    "1E+2",
    "1e-2",
    "1e05",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483649",
    "2147483646.9",
    "-7.9",
    "9007199254740993",
    "18446744073709551615",
    "123456789012345678901234567890",
    "1e400",
    "-1e400",
    "1e-400",
    "4.9e-324",
    "2.2250738585072011e-308",
    "1.7976931348623157e308",
    "0.000000000000000000000000000001",
    "-0.0e-999999999999",
    "1e22",
    "1e23",
    "123e-22",
    "9007199254740992e-22",
    "9007199254740993e-22",
    "true",
    "false",
    "null",
    "\"\"",
    "\"abc\"",
    "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
    "\"\\u0041\\u00e9\\u20AC\\uFFFF\"",
    "\"\\uD83D\\uDE00 \\uDBFF\\uDFFF \\ud800\\udc00\"",
    "\"\\u0000abc\"",
    "\"a\\u0000\"",
    "\"caf\xc3\xa9 \xff\xfe\x7f\"",
    "[]",
    "{}",
    "[[]]",
    "[{}]",
    "{\"a\":{}}",
    " \t\r\n[1] \n",
    "[1,2,3]",
    "[1,[2,[3,[4]]],{\"a\":[5]}]",
    "{\"a\":1,\"a\":2,\"\":3}",
    "{\"k\\u00e9y\\n\":\"v\",\"x\":[true,false,null]}",
    "[\"a\",\"b\\\"c\"]",
    "{ \"a\" : [ 1 , 2 ] , \"b\" : { } }",
    "[-0.0,0e0,0E-0,-0e+0]",
    "{\"logprobs\":{\"content\":[{\"logprob\":-1.2345678901234567},{\"logprob\":-0.5}]}}"};

START_TEST(trees_equal_cjson)
{
    sr_jdom *j = new_jdom(0);
    for (size_t i = 0; i < sizeof(k_same) / sizeof(k_same[0]); i++)
        expect_same(j, k_same[i]);
    char *r = remainder_text();
    expect_same(j, r);
    free(r);
    char *deep = nested(SR_JDOM_MAX_DEPTH, 0);
    expect_same(j, deep);
    free(deep);
    deep = nested(SR_JDOM_MAX_DEPTH, 1);
    expect_same(j, deep);
    free(deep);
    sr_jdom_free(j);
}
END_TEST

/* Not JSON for anyone. */
static const char *const k_never[] = {"",
                                      " ",
                                      "[",
                                      "]",
                                      "{",
                                      "[1",
                                      "[1,",
                                      "{\"a\"",
                                      "{\"a\":",
                                      "{\"a\":1",
                                      "\"abc",
                                      "\"abc\\",
                                      "[1,]",
                                      "[,1]",
                                      "{\"a\":1,}",
                                      "{,}",
                                      "{\"a\" 1}",
                                      "{\"a\"}",
                                      "{a:1}",
                                      "{'a':1}",
                                      "[1 2]",
                                      "1 2",
                                      "[1]]",
                                      "[[1]",
                                      "[1]x",
                                      "[\"a\"\"b\"]",
                                      "{\"a\":1 \"b\":2}",
                                      "[-]",
                                      "[--1]",
                                      "[+1]",
                                      "[.5]",
                                      "[1e]",
                                      "[1e+]",
                                      "[1.5e]",
                                      "[0x10]",
                                      "[Infinity]",
                                      "[NaN]",
                                      "[-Infinity]",
                                      "[tru]",
                                      "[True]",
                                      "[nul]",
                                      "[nulll]",
                                      "[falsee]",
                                      "[truefalse]",
                                      "//c\n1",
                                      "\"\\x\"",
                                      "\"\\u12\"",
                                      "\"\\U0041\"",
                                      "\"\\'\"",
                                      "[1}",
                                      "{\"a\":1]"};

/* cJSON accepts these; RFC 8259 does not. */
static const char *const k_cjson_only[] = {
    "\"\\u12G4\"", "1.",       "-1.",          "[1.]",     "[1.e5]",
    "[01]",        "[-01]",    "[00]",         "[-.5]",    "\xEF\xBB\xBF[1]",
    "\x0b[1]",     "\f[1]",    "[1]\x01",      "[\x01 1]", "[\"a\x01\"]",
    "[\"\t\"]",    "[\"\n\"]", "{\"a\x1f\":1}"};

/* RFC 8259 allows these; cJSON refuses them. */
static const char *const k_rfc_only[] = {
    "\"\\uD800\"",          "\"\\uDC00\"",        "\"\\uDFFF\"",
    "\"\\uD800\\u0041\"",   "\"\\uD800\\uD800\"", "\"\\uD800x\"",
    "\"\\uD800\\\\uDC00\"", "\"\\uDBFF\\uE000\"", "{\"\\uDC00\":1}"};

START_TEST(refusals)
{
    sr_jdom *j = new_jdom(0);
    const char *const *tables[] = {k_never, k_cjson_only, k_rfc_only};
    size_t sizes[] = {sizeof(k_never) / sizeof(k_never[0]),
                      sizeof(k_cjson_only) / sizeof(k_cjson_only[0]),
                      sizeof(k_rfc_only) / sizeof(k_rfc_only[0])};
    for (size_t k = 0; k < 3; k++) {
        for (size_t i = 0; i < sizes[k]; i++) {
            const char *t = tables[k][i];
            size_t n = strlen(t);
            /* The tables themselves are checked: who accepts each entry is as its table says. */
            cJSON *ref = cjson_parse(t, n);
            ck_assert_msg((ref != NULL) == (k == 1) && oracle_rfc_valid(t, n) == (k == 2),
                          "table %zu is wrong about %s", k, t);
            cJSON_Delete(ref);
            expect_syntax(j, t);
        }
    }
    /* A NUL inside the text, and nesting one deeper than cJSON's limit. */
    expect_syntax_n(j, "[1]\0", 4);
    expect_syntax_n(j, "[\"a\0\"]", 6);
    char *deep = nested(SR_JDOM_MAX_DEPTH + 1, 0);
    ck_assert_ptr_null(cjson_parse(deep, strlen(deep)));
    expect_syntax(j, deep);
    free(deep);
    deep = nested(SR_JDOM_MAX_DEPTH + 1, 1);
    expect_syntax(j, deep);
    free(deep);
    /* The parser is still usable after refusals. */
    expect_same(j, "[1]");
    sr_jdom_free(j);
}
END_TEST

/* xorshift64: the deterministic generator of the randomised tests. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* One parse of both and the oracle's verdict; trees compared when both succeed. */
static void differential(sr_jdom *j, const char *t, size_t n)
{
    sr_err e = SR_ERR_INIT;
    cJSON *ref = cjson_parse(t, n), *mine = NULL;
    int want = ref && oracle_rfc_valid(t, n);
    int rc = sr_jdom_parse(j, t, n, &mine, &e);
    ck_assert_msg(rc == (want ? 0 : SR_E_JSON_SYNTAX), "%s for %.*s (want %s)", sr_code_name(rc),
                  (int)n, t, want ? "ok" : "json.syntax");
    if (want)
        ck_assert_msg(oracle_same_root(ref, mine), "trees differ for %.*s", (int)n, t);
    cJSON_Delete(ref);
}

START_TEST(mutations_agree_with_the_oracle)
{
    static const char *const seeds[] = {
        "{\"a\":[1,-2.5e3,\"x\\u00e9\\n\"],\"b\":{\"c\":null,\"d\":true}}",
        "[\"\\uD83D\\uDE00\",0.125,false,{}]",
        " {\"logprob\" : -1.2345678901234567 , \"t\":[ 1e-7, 10, 0 ] } ",
    };
    static const char alphabet[] = "{}[]:,\"\\u0123456789.eE+-tfnrl aDdC\x01\t\n\xff";
    sr_jdom *j = new_jdom(0);
    uint64_t s = 0x9E3779B97F4A7C15u;
    char buf[256];
    for (int it = 0; it < 60000; it++) {
        const char *seed = seeds[it % 3];
        size_t n = strlen(seed);
        memcpy(buf, seed, n + 1);
        for (int m = 0, k = 1 + (int)(next_rand(&s) % 3); m < k; m++) {
            size_t at = (size_t)(next_rand(&s) % n);
            char c = alphabet[next_rand(&s) % (sizeof(alphabet) - 1)];
            uint64_t op = next_rand(&s) % 3;
            if (op == 0) {
                buf[at] = c;
            } else if (op == 1 && n > 1) {
                memmove(buf + at, buf + at + 1, n - at);
                n--;
            } else if (n + 2 < sizeof(buf)) {
                memmove(buf + at + 1, buf + at, n - at + 1);
                buf[at] = c;
                n++;
            }
        }
        differential(j, buf, n);
    }
    sr_jdom_free(j);
}
END_TEST

START_TEST(numbers_are_bit_identical)
{
    sr_jdom *j = new_jdom(0);
    uint64_t s = 0x0123456789ABCDEFu;
    char t[96];
    for (int it = 0; it < 100000; it++) {
        size_t k = 0;
        if (next_rand(&s) & 1)
            t[k++] = '-';
        int id = 1 + (int)(next_rand(&s) % 20), fd = (int)(next_rand(&s) % 22);
        t[k++] = (char)('1' + next_rand(&s) % 9);
        for (int i = 1; i < id; i++)
            t[k++] = (char)('0' + next_rand(&s) % 10);
        if (it % 3 == 0 && id == 1)
            t[k - 1] = '0';
        if (fd) {
            t[k++] = '.';
            for (int i = 0; i < fd; i++)
                t[k++] = (char)('0' + next_rand(&s) % 10);
        }
        if (next_rand(&s) % 3 == 0)
            k += (size_t)sprintf(t + k, "e%d", (int)(next_rand(&s) % 700) - 350);
        t[k] = '\0';
        differential(j, t, k);
    }
    sr_jdom_free(j);
}
END_TEST

/*
 * Decimal strings of 15 to 19 digits at or next to the midpoint between two adjacent doubles,
 * where a rounding slip shows; 19 digits is the most the exact integer paths take. The
 * reference is strtod, which is what cJSON stores.
 */
START_TEST(midpoints_round_like_strtod)
{
    sr_jdom *j = new_jdom(0);
    uint64_t s = 0xD1B54A32D192ED03u;
    char t[80];
    for (int it = 0; it < 200000; it++) {
        double x = ldexp((double)(next_rand(&s) >> 11), (int)(next_rand(&s) % 190) - 140);
        double y = nextafter(x, INFINITY);
        long double mid = ((long double)x + (long double)y) / 2;
        int digits = 15 + (int)(next_rand(&s) % 5);
        int k = snprintf(t, sizeof(t), "%.*Le", digits - 1, mid);
        /* Nudge the last digit to land just below or above the midpoint as well. */
        char *e = strchr(t, 'e');
        uint64_t nudge = next_rand(&s) % 3;
        if (nudge == 1 && e[-1] > '0')
            e[-1]--;
        else if (nudge == 2 && e[-1] < '9')
            e[-1]++;
        cJSON *root = NULL;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_jdom_parse(j, t, (size_t)k, &root, &err), err);
        double want = strtod(t, NULL);
        ck_assert_msg(memcmp(&root->valuedouble, &want, sizeof(want)) == 0, "%s: %.17g, not %.17g",
                      t, root->valuedouble, want);
    }
    sr_jdom_free(j);
}
END_TEST

START_TEST(arena_is_reused)
{
    sr_err e = SR_ERR_INIT;
    sr_jdom *j = new_jdom(0);
    ck_assert_uint_eq(sr_jdom_arena_chunks(j), 0);
    /* Big enough to need several chunks. */
    size_t n = 0, cap = 400000;
    char *t = malloc(cap);
    t[n++] = '[';
    for (int i = 0; n + 64 < cap; i++)
        n += (size_t)sprintf(t + n, "%s{\"k%d\":\"v\\n%d\"}", i ? "," : "", i, i);
    t[n++] = ']';
    t[n] = '\0';
    cJSON *root = NULL;
    ck_assert_sr_ok(sr_jdom_parse(j, t, n, &root, &e), e);
    size_t chunks = sr_jdom_arena_chunks(j), bytes = sr_jdom_arena_bytes(j);
    size_t used = sr_jdom_arena_used(j);
    ck_assert_uint_gt(chunks, 1);
    ck_assert_uint_gt(used, 0);
    ck_assert_uint_le(used, bytes);
    int count = cJSON_GetArraySize(root);
    for (int pass = 0; pass < 3; pass++) {
        ck_assert_sr_ok(sr_jdom_parse(j, t, n, &root, &e), e);
        ck_assert_int_eq(cJSON_GetArraySize(root), count);
        ck_assert_uint_eq(sr_jdom_arena_chunks(j), chunks);
        ck_assert_uint_eq(sr_jdom_arena_bytes(j), bytes);
        ck_assert_uint_eq(sr_jdom_arena_used(j), used);
    }
    /* A smaller text after a bigger one allocates nothing either. */
    ck_assert_sr_ok(sr_jdom_parse(j, "{\"a\":[1,2]}", 11, &root, &e), e);
    ck_assert_uint_eq(sr_jdom_arena_chunks(j), chunks);
    /* The tree outlives the text it came from. */
    free(t);
    cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "a");
    ck_assert_int_eq(cJSON_GetArraySize(a), 2);
    ck_assert(cJSON_IsNumber(cJSON_GetArrayItem(a, 1)));
    sr_jdom_reset(j);
    ck_assert_uint_eq(sr_jdom_arena_used(j), 0);
    ck_assert_uint_eq(sr_jdom_arena_bytes(j), bytes);
    sr_jdom_free(j);
}
END_TEST

START_TEST(limit_and_arguments)
{
    sr_err e = SR_ERR_INIT;
    cJSON *root = NULL;
    /* Room for two nodes and 8 bytes: "[1]" fits, "[1,2]" does not. */
    sr_jdom *j = new_jdom(2 * sizeof(cJSON) + 8);
    ck_assert_sr_ok(sr_jdom_parse(j, "[1]", 3, &root, &e), e);
    ck_assert_sr_code(sr_jdom_parse(j, "[1,2]", 5, &root, &e), e, SR_E_LIMIT);
    ck_assert_ptr_null(root);
    ck_assert_uint_le(sr_jdom_arena_bytes(j), 2 * sizeof(cJSON) + 8);
    /* A long string or number needs its bytes in the arena too. */
    ck_assert_sr_code(
        sr_jdom_parse(j, "[\"0123456789012345678901234567890123456789\"]", 44, &root, &e), e,
        SR_E_LIMIT);
    ck_assert_sr_ok(sr_jdom_parse(j, "[\"ab\"]", 6, &root, &e), e);
    ck_assert_str_eq(root->child->valuestring, "ab");
    ck_assert_sr_code(sr_jdom_parse(j, "[1]x", 3, &root, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_jdom_parse(j, NULL, 0, &root, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_jdom_new(NULL, 0, &e), e, SR_E_INVAL);
    sr_jdom_free(j);
    sr_jdom_free(NULL);
}
END_TEST

START_TEST(long_numbers_use_the_arena_briefly)
{
    /* A number longer than the stack copy goes through the arena, then its bytes come back. */
    sr_jdom *j = new_jdom(0);
    char t[400];
    memset(t, '7', 300);
    memcpy(t + 300, ".5e-290", 8);
    expect_same(j, t);
    t[0] = '[';
    t[1] = '0';
    t[2] = '.';
    memcpy(t + 300, "]", 2);
    expect_same(j, t);
    sr_jdom_free(j);
}
END_TEST

/* The reference rules (SR_JDOM_REFERENCE): what orjson refuses beyond cJSON, and duplicate keys. */
static void expect_ref(sr_jdom *j, const char *t, int code, int64_t offset)
{
    sr_err e = SR_ERR_INIT;
    cJSON *mine = (cJSON *)&e;
    int rc = sr_jdom_parse(j, t, strlen(t), &mine, &e);
    ck_assert_msg(rc == code, "%s: got %s (%s), want %s", t, sr_code_name(rc), e.msg,
                  sr_code_name(code));
    if (code) {
        ck_assert_ptr_null(mine);
        ck_assert_msg(e.offset == offset, "%s: offset %lld, want %lld", t, (long long)e.offset,
                      (long long)offset);
    }
}

START_TEST(reference_rules)
{
    sr_jdom *j = new_jdom(0);
    /* Off by default: cJSON's acceptance. */
    expect_ref(j, "{\"a\":\"\xff\",\"a\":1e400}", 0, -1);
    sr_jdom_set_flags(j, SR_JDOM_REFERENCE);
    expect_ref(j, "[\"ok \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]", 0, -1);
    expect_ref(j, "[\"ab\xc0\xaf\"]", SR_E_JSON_UTF8, 4);
    expect_ref(j, "[\"\\n\xed\xa0\x80\"]", SR_E_JSON_UTF8, 4); /* after an escape too */
    expect_ref(j, "{\"k\xf5\x80\x80\x80\":1}", SR_E_JSON_UTF8, 3);
    expect_ref(j, "[\"\\ud800\"]", SR_E_JSON_UTF8, 2);
    expect_ref(j, "[\"\\udc00\"]", SR_E_JSON_UTF8, 2);
    expect_ref(j, "[\"\\ud83d\\ude00\"]", 0, -1);
    expect_ref(j, "[1e400]", SR_E_JSON_NUMBER_OVERFLOW, 1);
    expect_ref(j, "[0,-1e400]", SR_E_JSON_NUMBER_OVERFLOW, 3);
    expect_ref(j, "[1e-400,1.7976931348623157e308]", 0, -1);
    /* Duplicates: held until the end, so a later syntax error wins; exact after unescaping. */
    expect_ref(j, "{\"a\":1,\"b\":{\"c\":[{\"d\":1,\"d\":2}]}}", SR_E_JSON_DUPLICATE_KEY, 24);
    expect_ref(j, "{\"a\":1,\"a\":2,\"z\":tru}", SR_E_JSON_SYNTAX, 20);
    expect_ref(j, "{\"a\":1,\"\\u0061\":2}", SR_E_JSON_DUPLICATE_KEY, 7);
    expect_ref(j, "{\"a\\u0000b\":1,\"a\\u0000c\":2}", 0, -1);
    expect_ref(j, "[{\"a\":1},{\"a\":1}]", 0, -1);
    sr_err e = SR_ERR_INIT;
    cJSON *root = NULL;
    const char *two = "{\"x\":[{\"k\":1,\"k\":2}]}";
    ck_assert_sr_code(sr_jdom_parse(j, two, strlen(two), &root, &e), e, SR_E_JSON_DUPLICATE_KEY);
    ck_assert_msg(strstr(e.msg, "x[0].k: the key \"k\" appears twice"), "%s", e.msg);
    /* The first duplicate in the text, also in a large (sorted) object. */
    char big[4096];
    size_t k = (size_t)sprintf(big, "{");
    for (int i = 0; i < 100; i++)
        k += (size_t)sprintf(big + k, "\"k%d\":0,", i);
    sprintf(big + k, "\"k90\":1,\"k3\":1}");
    ck_assert_sr_code(sr_jdom_parse(j, big, strlen(big), &root, &e), e, SR_E_JSON_DUPLICATE_KEY);
    ck_assert_int_eq(e.offset, (int64_t)k);
    /* Depth: 1000 pass, 1001 is json.too_deep. */
    char *ok = nested(SR_JDOM_MAX_DEPTH, 0), *deep = nested(SR_JDOM_MAX_DEPTH + 1, 1);
    expect_ref(j, ok, 0, -1);
    expect_ref(j, deep, SR_E_JSON_TOO_DEEP, 5 * SR_JDOM_MAX_DEPTH);
    free(ok);
    free(deep);
    /* Number literals with a fraction or exponent are marked. */
    ck_assert_sr_ok(sr_jdom_parse(j, "[1,1.0,1e0,-0]", 14, &root, &e), e);
    ck_assert(!(root->child->type & SR_JDOM_NOT_INT));
    ck_assert(root->child->next->type & SR_JDOM_NOT_INT);
    ck_assert(root->child->next->next->type & SR_JDOM_NOT_INT);
    ck_assert(!(root->child->prev->type & SR_JDOM_NOT_INT));
    ck_assert(cJSON_IsNumber(root->child->next));
    sr_jdom_free(j);
}
END_TEST

/* Arrays of objects whose keys repeat, as a response's logprobs do (the parser takes the last
 * escape-free key's copy when the next key's text equals it): keys that extend, shorten or
 * escape the previous one, hold raw UTF-8 or an escaped NUL, among numbers of 1 to 24 digits,
 * all agree with cJSON and the oracle; under the reference rules a key twice in one object
 * (compared after unescaping) is json.duplicate_key, and the same key in sibling objects is not. */
START_TEST(repeated_keys_agree_with_the_oracle)
{
    /* Each key's JSON text and its identity after unescaping (0: "logprob"). */
    static const struct {
        const char *text;
        int id;
    } keys[] = {
        {"logprob", 0},           {"logprob", 0},       {"logpro", 1},        {"logprobs", 2},
        {"logprob\\\\", 3},       {"log\\u0070rob", 0}, {"lo\\u0000g", 4},    {"", 5},
        {"\xc3\xa9t\xc3\xa9", 6}, {"logprob\\\"", 7},   {"logprob\\u0000", 8}};
    const size_t nk = sizeof keys / sizeof keys[0];
    sr_jdom *j = new_jdom(0), *r = new_jdom(0);
    sr_jdom_set_flags(r, SR_JDOM_REFERENCE);
    uint64_t s = 0x243F6A8885A308D3u;
    char t[4096];
    for (int it = 0; it < 20000; it++) {
        size_t k = (size_t)sprintf(t, "[");
        int objs = 1 + (int)(next_rand(&s) % 6), dup = 0;
        for (int o = 0; o < objs; o++) {
            int members = 1 + (int)(next_rand(&s) % 3), seen = 0;
            k += (size_t)sprintf(t + k, "%s{", o ? "," : "");
            for (int m = 0; m < members; m++) {
                size_t key = next_rand(&s) % 3 ? 0 : next_rand(&s) % nk;
                dup |= (seen >> keys[key].id) & 1;
                seen |= 1 << keys[key].id;
                k += (size_t)sprintf(t + k, "%s\"%s\":-", m ? "," : "", keys[key].text);
                int digits = 1 + (int)(next_rand(&s) % 24), point = 1 + (int)(next_rand(&s) % 24);
                t[k++] = (char)('1' + next_rand(&s) % 9);
                for (int d = 1; d < digits; d++) {
                    if (d == point)
                        t[k++] = '.';
                    t[k++] = (char)('0' + next_rand(&s) % 10);
                }
            }
            t[k++] = '}';
        }
        t[k++] = ']';
        t[k] = '\0';
        differential(j, t, k);
        sr_err e = SR_ERR_INIT;
        cJSON *root = NULL;
        int rc = sr_jdom_parse(r, t, k, &root, &e);
        ck_assert_msg(rc == (dup ? SR_E_JSON_DUPLICATE_KEY : 0), "%s: %s", t, sr_code_name(rc));
    }
    sr_jdom_free(j);
    sr_jdom_free(r);
}
END_TEST

/* \u escapes at each UTF-8 width boundary (1/2, 2/3 bytes; the surrogate pair limits) give the
 * exact bytes, checked directly and not only against cJSON. */
START_TEST(unicode_escapes_at_width_boundaries)
{
    const struct {
        const char *esc;
        const char *utf8;
    } cases[] = {
        {"\\u007F", "\x7f"},
        {"\\u0080", "\xc2\x80"},
        {"\\u07FF", "\xdf\xbf"},
        {"\\u0800", "\xe0\xa0\x80"},
        {"\\u0801", "\xe0\xa0\x81"},
        {"\\uFFFF", "\xef\xbf\xbf"},
        {"\\uE000", "\xee\x80\x80"},
        {"\\uD800\\uDC00", "\xf0\x90\x80\x80"},
        {"\\uDBFF\\uDFFF", "\xf4\x8f\xbf\xbf"},
    };
    sr_jdom *j = new_jdom(0);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char t[64];
        snprintf(t, sizeof t, "[\"%s\"]", cases[k].esc);
        expect_same(j, t);
        sr_err e = SR_ERR_INIT;
        cJSON *mine = NULL;
        ck_assert_sr_ok(sr_jdom_parse(j, t, strlen(t), &mine, &e), e);
        const char *s = cJSON_GetStringValue(cJSON_GetArrayItem(mine, 0));
        ck_assert_ptr_nonnull(s);
        ck_assert_msg(strcmp(s, cases[k].utf8) == 0, "%s decodes to %zu bytes, want %zu",
                      cases[k].esc, strlen(s), strlen(cases[k].utf8));
    }
    sr_jdom_free(j);
}
END_TEST

static Suite *jdom_suite(void)
{
    Suite *s = suite_create("jdom");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, trees_equal_cjson);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, mutations_agree_with_the_oracle);
    tcase_add_test(tc, numbers_are_bit_identical);
    tcase_add_test(tc, midpoints_round_like_strtod);
    tcase_add_test(tc, arena_is_reused);
    tcase_add_test(tc, limit_and_arguments);
    tcase_add_test(tc, long_numbers_use_the_arena_briefly);
    tcase_add_test(tc, reference_rules);
    tcase_add_test(tc, repeated_keys_agree_with_the_oracle);
    tcase_add_test(tc, unicode_escapes_at_width_boundaries);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(jdom_suite());
}
