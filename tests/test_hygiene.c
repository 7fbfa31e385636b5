/*
 * Issue #21, items 6, 7, 9 and 11 at the library level: readers never block on a FIFO, an
 * escaped NUL never silently cuts a name, untrusted bytes are quoted before they are printed,
 * raw control characters in JSON strings are refused and large integers are never rounded.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr_buf.h"
#include "sr_file.h"
#include "sr_jdom.h"
#include "sr_json.h"
#include "sr_test.h"
#include "sr_text.h"

/* A FIFO nobody writes to: a blocking open would hang, so Check's timeout would fail it. */
static void make_fifo(char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/syncroll-hygiene-%ld.fifo", (long)getpid());
    unlink(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
}

START_TEST(fifo_is_refused_not_waited_for)
{
    char path[128];
    make_fifo(path, sizeof(path));
    alarm(5); /* a regression hangs; the alarm turns the hang into a failure */
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;
    ck_assert_sr_code(sr_file_read(&b, path, 0, &e), e, SR_E_NOT_REGULAR);
    ck_assert_ptr_nonnull(strstr(e.msg, "not a regular file (a FIFO)"));
    ck_assert_ptr_null(b.data);
    sr_json_doc *d = NULL;
    ck_assert_sr_code(sr_json_load_file(&d, path, 0, &e), e, SR_E_NOT_REGULAR);
    ck_assert_ptr_null(d);
    FILE *f = NULL;
    ck_assert_sr_code(sr_file_open_regular(&f, "/tmp", &e), e, SR_E_NOT_REGULAR);
    ck_assert_ptr_nonnull(strstr(e.msg, "a directory"));
    alarm(0);
    unlink(path);
}
END_TEST

START_TEST(open_reports_the_real_errno)
{
    char a[128], b[128];
    snprintf(a, sizeof(a), "/tmp/syncroll-hygiene-%ld.a", (long)getpid());
    snprintf(b, sizeof(b), "/tmp/syncroll-hygiene-%ld.b", (long)getpid());
    unlink(a);
    unlink(b);
    ck_assert_int_eq(symlink(b, a), 0);
    ck_assert_int_eq(symlink(a, b), 0);
    sr_err e = SR_ERR_INIT;
    sr_buf buf = SR_BUF_INIT;
    ck_assert_sr_code(sr_file_read(&buf, a, 0, &e), e, SR_E_IO);
    ck_assert_ptr_nonnull(strstr(e.msg, strerror(ELOOP)));
    unlink(a);
    unlink(b);
}
END_TEST

START_TEST(quote_bytes)
{
    char out[64];
    ck_assert_str_eq(sr_quote_bytes(out, sizeof(out), "a\x1b[31m\n\t\\\xff", 10),
                     "a\\x1b[31m\\n\\t\\\\\\xff");
    ck_assert_str_eq(sr_quote_bytes(out, sizeof(out), "ok\0x", 4), "ok\\x00x");
    /* Cut at a whole escape, with "..." */
    char small[8];
    ck_assert_str_eq(sr_quote_bytes(small, sizeof(small), "\xff\xff\xff", 3), "\\xff...");
    ck_assert_str_eq(sr_quote_str(small, sizeof(small), "abcdefghij"), "abcd...");
    ck_assert_str_eq(sr_quote_str(small, sizeof(small), "abcdefg"), "abcdefg");
}
END_TEST

START_TEST(json_output_is_valid_utf8)
{
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;
    const char in[] = "{\"d\":\"u\xff\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80\xc3\"}";
    ck_assert_sr_ok(sr_buf_put_json_utf8(&b, in, sizeof(in) - 1, &e), e);
    ck_assert_str_eq(b.data, "{\"d\":\"u\\ufffd\xc3\xa9\\ufffd\\ufffd\\ufffd\xf0\x9f\x98\x80"
                             "\\ufffd\"}");
    sr_buf_release(&b);
}
END_TEST

START_TEST(json_refuses_nul_and_raw_controls)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = NULL;
    const char *nul = "{\n  \"id\": \"ok\\u0000../../x\"}";
    ck_assert_sr_code(sr_json_parse(&d, nul, strlen(nul), "s.json", 0, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "s.json:2:3: the value of 'id' contains an escaped NUL (\\u0000), "
                            "which a name, path or dtype cannot hold");
    const char *key = "{\"a\": [{\"b\\u0000c\": 1}]}";
    ck_assert_sr_code(sr_json_parse(&d, key, strlen(key), "k", 0, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_ptr_nonnull(strstr(e.msg, "k:1:9: key 'b' contains an escaped NUL"));
    const char *elem = "[\"x\\u0000\"]";
    ck_assert_sr_code(sr_json_parse(&d, elem, strlen(elem), "a", 0, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_ptr_nonnull(strstr(e.msg, "a string contains an escaped NUL"));
    /* An escaped backslash before u0000 is not an escape of NUL. */
    const char *ok = "{\"p\": \"a\\\\u0000\"}";
    ck_assert_sr_ok(sr_json_parse(&d, ok, strlen(ok), "ok", 0, &e), e);
    sr_json_free(d);
    d = NULL;
    const char *tab = "{\"id\": \"a\tb\"}", *nl = "{\"id\":\n\"a\nb\"}";
    ck_assert_sr_code(sr_json_parse(&d, tab, strlen(tab), "t", 0, &e), e, SR_E_JSON_SYNTAX);
    ck_assert_str_eq(e.msg, "t:1:10: invalid JSON (raw control character in a string)");
    ck_assert_sr_code(sr_json_parse(&d, nl, strlen(nl), "n", 0, &e), e, SR_E_JSON_SYNTAX);
    ck_assert_str_eq(e.msg, "n:2:3: invalid JSON (raw control character in a string)");
    ck_assert_ptr_null(d);
}
END_TEST

START_TEST(jdom_marks_strings_cut_at_nul)
{
    sr_err e = SR_ERR_INIT;
    sr_jdom *j = NULL;
    ck_assert_sr_ok(sr_jdom_new(&j, 0, &e), e);
    const char *t = "{\"dtype\":\"uint8\\u0000\",\"k\\u0000x\":{\"a\":1},\"ok\":\"\\u0001\"}";
    cJSON *root = NULL;
    ck_assert_sr_ok(sr_jdom_parse(j, t, strlen(t), &root, &e), e);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "k");
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(root, "ok");
    ck_assert(cJSON_IsString(dt) && (dt->type & SR_JDOM_HAS_NUL));
    ck_assert(cJSON_IsObject(k) && (k->type & SR_JDOM_HAS_NUL));
    ck_assert(cJSON_IsString(ok) && !(ok->type & SR_JDOM_HAS_NUL));
    ck_assert(!(root->type & SR_JDOM_HAS_NUL));
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(k, "a")->valueint, 1);
    sr_jdom_free(j);
}
END_TEST

START_TEST(get_int_reads_literals_exactly)
{
    sr_err e = SR_ERR_INIT;
    sr_json_doc *d = NULL;
    const char *t = "{\"a\": 9007199254740993, \"b\": -9223372036854775808, "
                    "\"c\": 9223372036854775808, \"m\": 9223372036854775807}";
    ck_assert_sr_ok(sr_json_parse(&d, t, strlen(t), "n", 0, &e), e);
    const cJSON *r = sr_json_root(d);
    int64_t v;
    ck_assert_sr_code(sr_json_get_int(d, r, "a", 1, 0, (int64_t)1 << 53, 0, &v, &e), e,
                      SR_E_JSON_SCHEMA);
    ck_assert_str_eq(e.msg, "n:1:2: 'a' is 9007199254740993, outside [0, 9007199254740992]");
    ck_assert_sr_ok(sr_json_get_int(d, r, "a", 1, 0, INT64_MAX, 0, &v, &e), e);
    ck_assert_int_eq(v, 9007199254740993LL);
    ck_assert_sr_ok(sr_json_get_int(d, r, "b", 1, INT64_MIN, 0, 0, &v, &e), e);
    ck_assert(v == INT64_MIN);
    ck_assert_sr_ok(sr_json_get_int(d, r, "m", 1, 0, INT64_MAX, 0, &v, &e), e);
    ck_assert(v == INT64_MAX);
    ck_assert_sr_code(sr_json_get_int(d, r, "c", 1, 0, INT64_MAX, 0, &v, &e), e, SR_E_JSON_SCHEMA);
    ck_assert_ptr_nonnull(strstr(e.msg, "'c' is out of range"));
    sr_json_free(d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hygiene");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, fifo_is_refused_not_waited_for);
    tcase_add_test(tc, open_reports_the_real_errno);
    tcase_add_test(tc, quote_bytes);
    tcase_add_test(tc, json_output_is_valid_utf8);
    tcase_add_test(tc, json_refuses_nul_and_raw_controls);
    tcase_add_test(tc, jdom_marks_strings_cut_at_nul);
    tcase_add_test(tc, get_int_reads_literals_exactly);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
