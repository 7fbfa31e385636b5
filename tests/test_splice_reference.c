/*
 * sr_splice at the reference's edges (issue #18): duplicate keys, invalid UTF-8 and lone
 * surrogates, numbers that overflow a double, nesting, token_ids syntax versus the stricter value
 * checks, and the precedence of JSON-level over envelope-level errors. Every body goes through
 * splice_harness.h's check(): one-shot with 1 and 2 threads and streamed in every chunking, all
 * of which must agree.
 */
#include "splice_harness.h"

/* JSON syntax errors inside token_ids are JSON decode errors to the reference: transient. */
START_TEST(integer_array_syntax_is_transient)
{
    static const char *const bad[] = {"[01]", "[1,]", "[1 2]", "[,1]", "[1,,2]",  "[-]",  "[1.]",
                                      "[+1]", "[1e]", "[1,2}", "[.5]", "[1,tru]", "[1]]", "[[1]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char q[128];
        snprintf(q, sizeof(q), "{'token_ids':%s,'x':1}", bad[i]);
        int rc = checkq(q);
        ck_assert_msg(rc == SR_E_INTARRAY_SYNTAX || rc == SR_E_SPLICE_JSON, "%s: got %s", bad[i],
                      sr_code_name(rc));
        ck_assert_int_eq(sr_code_class(rc), SR_CLASS_TRANSIENT);
        ck_assert(sr_splice_retryable(rc, 0) && sr_splice_retryable(rc, 1));
    }
    /* Inside the array the error keeps its precise name. */
    expect_error("{'token_ids':[01]}", SR_E_INTARRAY_SYNTAX, "token_ids is not valid JSON");
    ck_assert_int_eq(g_err.offset, 15);
    expect_error("{'token_ids':[1,]}", SR_E_INTARRAY_SYNTAX, NULL);
    expect_error("{'token_ids':[1 2]}", SR_E_INTARRAY_SYNTAX, NULL);
    /* After the array closed, the error is the body's. */
    expect_error("{'token_ids':[1]]}", SR_E_SPLICE_JSON, NULL);
    /* A number that overflows a double is a decode error too. */
    expect_error("{'token_ids':[1,1e400]}", SR_E_JSON_NUMBER_OVERFLOW, NULL);
    /* Cut inside the array: truncated. */
    ck_assert_sr_code(checkq("{'token_ids':[1,2"), g_err, SR_E_SPLICE_TRUNCATED);
}
END_TEST

/* Invalid UTF-8 and overflowing numbers anywhere in the text: transient, as the reference. */
START_TEST(utf8_and_number_overflow_are_transient)
{
    static const char *const utf8[] = {
        "\xc0\xaf",         /* overlong '/' */
        "\xe0\x80\xaf",     /* overlong, 3 bytes */
        "\xed\xa0\x80",     /* an encoded surrogate U+D800 */
        "\xf4\x90\x80\x80", /* U+110000 */
        "\xf5\x80\x80\x80", /* past U+10FFFF */
        "\xc3",             /* a truncated sequence */
        "\xe2\x82",         /* truncated, 3 bytes */
        "\x80",             /* a stray continuation byte */
        "\xff",
    };
    for (size_t i = 0; i < sizeof(utf8) / sizeof(utf8[0]); i++) {
        char body[160];
        int n = snprintf(body, sizeof(body), "{\"a\":\"x%sy\",\"choices\":[]}", utf8[i]);
        (void)n;
        ck_assert_sr_code(check(body), g_err, SR_E_JSON_UTF8);
        ck_assert_int_eq(g_err.offset, 7);
        ck_assert_int_eq(sr_code_class(g_err.code), SR_CLASS_TRANSIENT);
        /* In a key too. */
        snprintf(body, sizeof(body), "{\"k%s\":1}", utf8[i]);
        ck_assert_sr_code(check(body), g_err, SR_E_JSON_UTF8);
    }
    /* Valid UTF-8 of every length passes: e-acute, the euro sign, U+10FFFF, U+FFFD. */
    ck_assert_sr_ok(check("{\"a\":\"\xc3\xa9 \xe2\x82\xac \xf4\x8f\xbf\xbf \xef\xbf\xbd\"}"),
                    g_err);
    /* Lone surrogate escapes: orjson refuses them. */
    static const char *const lone[] = {"\\ud800", "\\udc00", "\\ud800\\u0041", "x\\udbff"};
    for (size_t i = 0; i < sizeof(lone) / sizeof(lone[0]); i++) {
        char body[96];
        snprintf(body, sizeof(body), "{\"a\":\"%s\"}", lone[i]);
        ck_assert_sr_code(check(body), g_err, SR_E_JSON_UTF8);
    }
    ck_assert_sr_ok(check("{\"a\":\"\\ud83d\\ude00\"}"), g_err);
    /* Numbers: 1e400 and -1e400 overflow; the largest double and underflow pass. */
    expect_error("{'a':1e400}", SR_E_JSON_NUMBER_OVERFLOW, "overflows a double");
    ck_assert_int_eq(g_err.offset, 5);
    expect_error("{'a':[-1e400]}", SR_E_JSON_NUMBER_OVERFLOW, NULL);
    expect_error("{'a':1.8e308}", SR_E_JSON_NUMBER_OVERFLOW, NULL);
    ck_assert_sr_ok(checkq("{'a':1.7976931348623157e308,'b':1e-400,'c':-0.0}"), g_err);
    ck_assert(sr_splice_retryable(SR_E_JSON_UTF8, 1));
    ck_assert(sr_splice_retryable(SR_E_JSON_NUMBER_OVERFLOW, 1));
}
END_TEST

/* Nesting deeper than the parser's 1000 levels: protocol, never retried. */
START_TEST(too_deep_is_protocol)
{
    for (int depth = 999; depth <= 1002; depth++) {
        sr_buf b = SR_BUF_INIT;
        sr_buf_puts(&b, "{\"a\":", NULL);
        for (int i = 1; i < depth; i++)
            sr_buf_puts(&b, "[", NULL);
        for (int i = 1; i < depth; i++)
            sr_buf_puts(&b, "]", NULL);
        sr_buf_puts(&b, "}", NULL);
        int rc = check(b.data);
        if (depth <= 1000)
            ck_assert_sr_ok(rc, g_err);
        else
            ck_assert_sr_code(rc, g_err, SR_E_JSON_TOO_DEEP);
        /* A JSON error anywhere after the deep part wins (the reference parses first). */
        if (depth > 1000) {
            size_t base = b.len - 1; /* without the closing brace */
            static const struct {
                const char *tail;
                int code;
            } after[] = {{",\"b\":\"\xff\"}", SR_E_JSON_UTF8},
                         {",\"b\":\"\\udc00\"}", SR_E_JSON_UTF8},
                         {",\"b\":1e999}", SR_E_JSON_NUMBER_OVERFLOW},
                         {",\"b\":01}", SR_E_SPLICE_JSON},
                         {",\"b\":[1,2", SR_E_SPLICE_TRUNCATED}};
            for (size_t k = 0; k < sizeof(after) / sizeof(after[0]); k++) {
                b.len = base;
                sr_buf_puts(&b, after[k].tail, NULL);
                ck_assert_sr_code(check(b.data), g_err, after[k].code);
            }
        }
        sr_buf_release(&b);
    }
    ck_assert_int_eq(sr_code_class(SR_E_JSON_TOO_DEEP), SR_CLASS_PROTOCOL);
    ck_assert(!sr_splice_retryable(SR_E_JSON_TOO_DEEP, 0));
    ck_assert(!sr_splice_retryable(SR_E_JSON_TOO_DEEP, 1));
}
END_TEST

/* Any JSON-level error wins over every envelope-level one, wherever it is in the body. */
START_TEST(json_errors_take_precedence)
{
    static const char *const env_bad[] = {
        "'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'uint16'}",    /* dtype */
        "'routed_experts':{'data':'AQ==','shape':[1.0,1,1],'dtype':'uint8'}",   /* shape */
        "'routed_experts':{'data':'/w==','shape':[1,1,1],'dtype':'int16'}",     /* bytes */
        "'routed_experts':{'data':'!','shape':[1,1,1],'dtype':'uint8'}",        /* base64 */
        "'routed_experts':{'dtype':'uint8','shape':[1,1,1],'data':'AQ=='}",     /* drift */
        "'x\\'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'uint8'}", /* orphan */
        "'d':1,'d':2",                                                          /* duplicate */
        "'token_ids':[-1]",                                                     /* stricter */
    };
    static const struct {
        const char *text;
        int code;
    } json_bad[] = {
        {"'s':'\xff'", SR_E_JSON_UTF8},    {"'n':1e400", SR_E_JSON_NUMBER_OVERFLOW},
        {"'t':[01]", SR_E_SPLICE_JSON},    {"'token_ids':[1,]", SR_E_INTARRAY_SYNTAX},
        {"'s':'\\ud800'", SR_E_JSON_UTF8},
    };
    for (size_t i = 0; i < sizeof(env_bad) / sizeof(env_bad[0]); i++) {
        for (size_t j = 0; j < sizeof(json_bad) / sizeof(json_bad[0]); j++) {
            for (int first = 0; first < 2; first++) {
                char q[512];
                snprintf(q, sizeof(q), "{'a':{%s},'b':{%s}}", first ? json_bad[j].text : env_bad[i],
                         first ? env_bad[i] : json_bad[j].text);
                int rc = checkq(q);
                ck_assert_msg(rc == json_bad[j].code, "%s: got %s, want %s", q, sr_code_name(rc),
                              sr_code_name(json_bad[j].code));
            }
        }
        /* And truncation after the envelope error. */
        char q[512];
        snprintf(q, sizeof(q), "{'a':{%s},'b':[1,2", env_bad[i]);
        ck_assert_msg(checkq(q) == SR_E_SPLICE_TRUNCATED, "%s: got %s", q,
                      sr_code_name(g_err.code));
    }
    /* Among the envelope-level errors, the reference's own checks come before the stricter ones:
     * a token_ids value error never hides an envelope error. */
    expect_error("{'token_ids':[-1]," ROUTES_12 ",'routed_experts_x':1,'b':{'routed_experts':"
                 "{'data':'AQ==','shape':[1,1,1],'dtype':'uint16'}}}",
                 SR_E_ENV_DTYPE, NULL);
}
END_TEST

START_TEST(duplicate_keys_are_named)
{
    expect_error("{'choices':[{" ROUTES_12 "," ROUTES_12 "}]}", SR_E_JSON_DUPLICATE_KEY,
                 "choices[0].routed_experts: the key \"routed_experts\" appears twice");
    /* First null: the reference silently takes the second; refused here. */
    expect_error("{'routed_experts':null," ROUTES_12 "}", SR_E_JSON_DUPLICATE_KEY, NULL);
    expect_error("{'token_ids':[1],'token_ids':[2]}", SR_E_JSON_DUPLICATE_KEY, "token_ids");
    /* Any key, at any depth, inside envelopes too; keys compare after unescaping. */
    expect_error("{" ROUTES_12 ",'a':{'b':[{'x':1,'y':2,'x':3}]}}", SR_E_JSON_DUPLICATE_KEY,
                 "a.b[0].x: the key");
    expect_error(
        "{'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'uint8','shape':[1,1,1]}}",
        SR_E_JSON_DUPLICATE_KEY, "routed_experts.shape");
    expect_error("{'choices':[],"
                 "'choices':[]}",
                 SR_E_JSON_DUPLICATE_KEY, NULL);
    ck_assert_sr_code(check("{\"routed_experts\":null,\"routed\\u005fexperts\":null}"), g_err,
                      SR_E_JSON_DUPLICATE_KEY);
    ck_assert_sr_code(check("{\"a\":1,\"\\u0061\":2}"), g_err, SR_E_JSON_DUPLICATE_KEY);
    /* Keys that differ only after an escaped NUL are different keys. */
    ck_assert_sr_ok(check("{\"a\\u0000b\":1,\"a\\u0000c\":2}"), g_err);
    /* A large object goes through the sorted check: the duplicate earliest in the text. */
    sr_buf big = SR_BUF_INIT;
    sr_buf_puts(&big, "{", NULL);
    for (int i = 0; i < 200; i++)
        sr_buf_printf(&big, NULL, "\"k%d\":%d,", i, i);
    sr_buf_puts(&big, "\"k150\":0,\"k7\":0}", NULL);
    ck_assert_sr_code(check(big.data), g_err, SR_E_JSON_DUPLICATE_KEY);
    ck_assert_msg(strstr(g_err.msg, "\"k150\""), "%s", g_err.msg);
    ck_assert_int_eq(g_err.offset, (int64_t)(strstr(big.data, "\"k150\":0") - big.data));
    sr_buf_release(&big);
    ck_assert_int_eq(sr_code_class(SR_E_JSON_DUPLICATE_KEY), SR_CLASS_PROTOCOL);
    ck_assert(!sr_splice_retryable(SR_E_JSON_DUPLICATE_KEY, 0));
    ck_assert(!sr_splice_retryable(SR_E_JSON_DUPLICATE_KEY, 1));
    /* The same key in different objects is fine. */
    ck_assert_sr_ok(checkq("{'a':{" ROUTES_12 "},'b':{" ROUTES_12 "}}"), g_err);
    ck_assert_uint_eq(g_res->count, 2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("splice_reference");
    TCase *tc = tcase_create("edges");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, integer_array_syntax_is_transient);
    tcase_add_test(tc, utf8_and_number_overflow_are_transient);
    tcase_add_test(tc, too_deep_is_protocol);
    tcase_add_test(tc, json_errors_take_precedence);
    tcase_add_test(tc, duplicate_keys_are_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
