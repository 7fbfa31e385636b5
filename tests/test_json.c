/* sr_json: positions, line:col errors and typed getters. */
#include <string.h>

#include "sr_json.h"
#include "sr_test.h"

static sr_json_doc *parse(const char *text)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = NULL;
    ck_assert_sr_ok(sr_json_parse(&d, text, strlen(text), "t.json", 0, &e), e);
    return d;
}

START_TEST(syntax_errors_have_line_and_column)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = NULL;
    const char *bad = "{\n  \"a\": 1,\n  \"b\": ]\n}";
    ck_assert_sr_code(sr_json_parse(&d, bad, strlen(bad), "s.json", 0, &e), e, SR_E_JSON_SYNTAX);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(e.msg, "s.json:3:8: invalid JSON");
    const char *trailing = "{\"a\":1} x";
    ck_assert_sr_code(sr_json_parse(&d, trailing, strlen(trailing), "s.json", 0, &e), e,
                      SR_E_JSON_SYNTAX);
    ck_assert_str_eq(e.msg, "s.json:1:9: invalid JSON");
    ck_assert_sr_code(sr_json_parse(&d, "{}", 2, "s.json", 1, &e), e, SR_E_LIMIT);
    /* cJSON would skip these as whitespace; strict JSON does not allow them. */
    const char *ctl = "{\"a\":\n\x1a 1}";
    ck_assert_sr_code(sr_json_parse(&d, ctl, strlen(ctl), "s.json", 0, &e), e, SR_E_JSON_SYNTAX);
    ck_assert_str_eq(e.msg, "s.json:2:1: invalid JSON (raw control character)");
    const char *bom = "\xEF\xBB\xBF{}";
    ck_assert_sr_code(sr_json_parse(&d, bom, strlen(bom), "s.json", 0, &e), e, SR_E_JSON_SYNTAX);
    /* The fuzzer's crasher (control bytes around keys) is refused without reading out of bounds. */
    const char *fz = "\x1a\x1a{\"pe\": [2, 3], \"\t\x01co\": 1}";
    ck_assert_sr_code(sr_json_parse(&d, fz, strlen(fz), "s.json", 0, &e), e, SR_E_JSON_SYNTAX);
    ck_assert_sr_code(sr_json_load_file(&d, "/nonexistent/x.json", 0, &e), e, SR_E_IO);
}
END_TEST

START_TEST(unknown_and_duplicate_keys_are_located)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = parse("{\n \"model\": {\"layers\": 2,\n   \"expertz\": 8}}");
    const cJSON *model = cJSON_GetObjectItem(sr_json_root(d), "model");
    static const char *const allowed[] = {"layers", "experts", NULL};
    ck_assert_sr_code(sr_json_check_keys(d, model, "model", allowed, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "t.json:3:4: unknown key 'expertz' in model; did you mean 'experts'? "
                            "valid keys: layers, experts");
    sr_json_free(d);

    d = parse("{\"layers\": 2, \"layers\": 3}");
    ck_assert_sr_code(sr_json_check_keys(d, sr_json_root(d), "model", allowed, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "t.json:1:15: key 'layers' appears twice in model");
    sr_json_free(d);
}
END_TEST

START_TEST(typed_getters)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = parse("{\"i\": 7, \"f\": 1.0, \"big\": 1e3, \"s\": \"x\", \"b\": true,"
                           " \"n\": -3, \"arr\": [1, 2.5, \"q\\\"\", {\"k\": [true]}]}");
    const cJSON *r = sr_json_root(d);
    int64_t i;
    double f;
    int b;
    const char *s;
    ck_assert_sr_ok(sr_json_get_int(d, r, "i", 1, 0, 10, 0, &i, &e), e);
    ck_assert_int_eq(i, 7);
    ck_assert_sr_code(sr_json_get_int(d, r, "f", 1, 0, 10, 0, &i, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "t.json:1:10: 'f' must be an integer");
    ck_assert_sr_code(sr_json_get_int(d, r, "big", 1, 0, 10000, 0, &i, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_sr_code(sr_json_get_int(d, r, "n", 1, 0, 10, 0, &i, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_msg(strstr(e.msg, "outside [0, 10]") != NULL, "%s", e.msg);
    ck_assert_sr_code(sr_json_get_int(d, r, "missing", 1, 0, 10, 0, &i, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_sr_ok(sr_json_get_int(d, r, "missing", 0, 0, 10, 5, &i, &e), e);
    ck_assert_int_eq(i, 5);
    ck_assert_sr_ok(sr_json_get_double(d, r, "f", 1, 0, 2, 0, &f, &e), e);
    ck_assert(f == 1.0);
    ck_assert_sr_code(sr_json_get_double(d, r, "s", 1, 0, 2, 0, &f, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_sr_ok(sr_json_get_bool(d, r, "b", 1, 0, &b, &e), e);
    ck_assert_int_eq(b, 1);
    ck_assert_sr_code(sr_json_get_bool(d, r, "i", 1, 0, &b, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_sr_ok(sr_json_get_string(d, r, "s", 1, NULL, &s, &e), e);
    ck_assert_str_eq(s, "x");
    /* Positions survive strings with escaped quotes and nesting. */
    const cJSON *arr = cJSON_GetObjectItem(r, "arr");
    const cJSON *inner = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 3), "k")->child;
    int line, col;
    ck_assert_int_eq(sr_json_where(d, inner, 0, &line, &col), 0);
    ck_assert_int_eq(line, 1);
    const char *text = "{\"i\": 7, \"f\": 1.0, \"big\": 1e3, \"s\": \"x\", \"b\": true,"
                       " \"n\": -3, \"arr\": [1, 2.5, \"q\\\"\", {\"k\": [true]}]}";
    ck_assert_int_eq(col, (int)(strstr(text, "true]") - text) + 1);
    ck_assert(sr_json_is_integer_literal(d, cJSON_GetArrayItem(arr, 0)));
    ck_assert(!sr_json_is_integer_literal(d, cJSON_GetArrayItem(arr, 1)));
    sr_json_free(d);
}
END_TEST

/* An integer or a list of integers, located at the offending entry. */
START_TEST(int_lists)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = parse("{\"one\": 3, \"many\": [1, 2, 3], \"empty\": [],\n"
                           " \"bad\": [1, 99], \"frac\": [1.5], \"str\": \"2\"}");
    const cJSON *r = sr_json_root(d);
    int64_t v[4];
    size_t n = 9;
    ck_assert_sr_ok(sr_json_get_int_list(d, r, "one", 1, 0, 10, v, 4, &n, &e), e);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(v[0], 3);
    ck_assert_sr_ok(sr_json_get_int_list(d, r, "many", 1, 0, 10, v, 4, &n, &e), e);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(v[2], 3);
    ck_assert_sr_ok(sr_json_get_int_list(d, r, "absent", 0, 0, 10, v, 4, &n, &e), e);
    ck_assert_uint_eq(n, 0);
    ck_assert_sr_code(sr_json_get_int_list(d, r, "absent", 1, 0, 10, v, 4, &n, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_sr_code(sr_json_get_int_list(d, r, "many", 1, 0, 10, v, 2, &n, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "t.json:1:12: 'many' must be an integer or an array of 1..2 integers");
    ck_assert_sr_code(sr_json_get_int_list(d, r, "empty", 1, 0, 10, v, 4, &n, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_sr_code(sr_json_get_int_list(d, r, "bad", 1, 0, 10, v, 4, &n, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "t.json:2:13: 'bad' entries is 99, outside [0, 10]");
    ck_assert_uint_eq(n, 0);
    ck_assert_sr_code(sr_json_get_int_list(d, r, "frac", 1, 0, 10, v, 4, &n, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_sr_code(sr_json_get_int_list(d, r, "str", 1, 0, 10, v, 4, &n, &e), e,
                      SR_E_JSON_SCHEMA);
    sr_json_free(d);
}
END_TEST

/* Above 2^53 a double cannot hold every integer: the literal is read exactly instead. */
START_TEST(u64_and_container_getters)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = parse("{\"max\": 18446744073709551615, \"odd\": 9007199254740993,"
                           " \"over\": 18446744073709551616, \"neg\": -1, \"exp\": 1.5e+16,"
                           " \"frac\": 2.5, \"o\": {}, \"a\": []}");
    const cJSON *r = sr_json_root(d), *c;
    uint64_t u;
    ck_assert_sr_ok(sr_json_get_u64(d, r, "max", 1, 0, UINT64_MAX, 0, &u, &e), e);
    ck_assert(u == UINT64_MAX);
    ck_assert_sr_ok(sr_json_get_u64(d, r, "odd", 1, 0, UINT64_MAX, 0, &u, &e), e);
    ck_assert(u == 9007199254740993ULL);
    ck_assert_sr_ok(sr_json_get_u64(d, r, "exp", 1, 0, UINT64_MAX, 0, &u, &e), e);
    ck_assert(u == 15000000000000000ULL);
    ck_assert_sr_code(sr_json_get_u64(d, r, "over", 1, 0, UINT64_MAX, 0, &u, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "t.json:1:56: 'over' must be an unsigned integer");
    ck_assert_sr_code(sr_json_get_u64(d, r, "neg", 1, 0, UINT64_MAX, 0, &u, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_sr_code(sr_json_get_u64(d, r, "frac", 1, 0, UINT64_MAX, 0, &u, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_sr_code(sr_json_get_u64(d, r, "odd", 1, 0, 10, 0, &u, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_msg(strstr(e.msg, "is 9007199254740993, outside [0, 10]") != NULL, "%s", e.msg);
    ck_assert_sr_ok(sr_json_get_u64(d, r, "missing", 0, 0, 10, 7, &u, &e), e);
    ck_assert(u == 7);
    ck_assert_sr_ok(sr_json_get_object(d, r, "o", 1, &c, &e), e);
    ck_assert(cJSON_IsObject(c));
    ck_assert_sr_ok(sr_json_get_array(d, r, "a", 1, &c, &e), e);
    ck_assert(cJSON_IsArray(c));
    ck_assert_sr_code(sr_json_get_object(d, r, "a", 1, &c, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(e.msg, "'a' must be an object") != NULL, "%s", e.msg);
    ck_assert_sr_code(sr_json_get_array(d, r, "o", 1, &c, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_sr_code(sr_json_get_array(d, r, "missing", 1, &c, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_sr_ok(sr_json_get_array(d, r, "missing", 0, &c, &e), e);
    ck_assert_ptr_null(c);
    sr_json_free(d);
}
END_TEST

/* A tree that sr_json_parse did not build: no positions, integral numbers are integers. */
START_TEST(detached_trees)
{
    sr_err e = SR_ERR_INIT;
    cJSON *r = cJSON_Parse("{\"i\": 2.0, \"f\": 2.5, \"l\": [1.0, 2], \"x\": 1}");
    int64_t i, v[4];
    size_t n;
    ck_assert_sr_ok(sr_json_get_int(NULL, r, "i", 1, 0, 10, 0, &i, &e), e);
    ck_assert_int_eq(i, 2);
    ck_assert_sr_code(sr_json_get_int(NULL, r, "f", 1, 0, 10, 0, &i, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "'f' must be an integer");
    ck_assert_sr_ok(sr_json_get_int_list(NULL, r, "l", 1, 0, 10, v, 4, &n, &e), e);
    ck_assert_uint_eq(n, 2);
    uint64_t u = 0;
    ck_assert_sr_ok(sr_json_get_u64(NULL, r, "i", 1, 0, 10, 0, &u, &e), e);
    ck_assert(u == 2);
    static const char *const allowed[] = {"i", "f", "l", NULL};
    ck_assert_sr_code(sr_json_check_keys(NULL, r, "obj", allowed, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "unknown key 'x' in obj; valid keys: i, f, l");
    int line, col;
    ck_assert_int_eq(sr_json_where(NULL, r, 0, &line, &col), -1);
    cJSON_Delete(r);
}
END_TEST

/* A literal far beyond 64 bits is an out-of-range error, read from the text, never converted
 * from its double (which would be undefined behaviour; found by fuzz_json). */
START_TEST(huge_integer_literals)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = parse("{\"big\": 332333333333333333333333333333333333333333333333333333,"
                           " \"neg\": -26666666666666666666666666666666666666666666}");
    const cJSON *r = sr_json_root(d);
    int64_t v = 7;
    ck_assert_sr_code(sr_json_get_int(d, r, "big", 1, 0, 10, 0, &v, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_msg(strstr(e.msg, "beyond 64 bits") != NULL, "%s", e.msg);
    ck_assert_sr_code(sr_json_get_int(d, r, "neg", 1, INT64_MIN, INT64_MAX, 0, &v, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_msg(strstr(e.msg, "beyond 64 bits") != NULL, "%s", e.msg);
    sr_json_free(d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, syntax_errors_have_line_and_column);
    tcase_add_test(tc, unknown_and_duplicate_keys_are_located);
    tcase_add_test(tc, typed_getters);
    tcase_add_test(tc, huge_integer_literals);
    tcase_add_test(tc, int_lists);
    tcase_add_test(tc, detached_trees);
    tcase_add_test(tc, u64_and_container_getters);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
