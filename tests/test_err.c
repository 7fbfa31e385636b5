/* Meta-test of the error table: every code named, classed, described and unique. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sr_buf.h"
#include "sr_dtype.h"
#include "sr_file.h"
#include "sr_ndarray.h"
#include "sr_test.h"

START_TEST(every_code_has_name_class_and_doc)
{
    ck_assert_uint_gt(sr_code_count(), 10);
    for (size_t i = 0; i < sr_code_count(); i++) {
        int c = sr_code_at(i);
        const char *name = sr_code_name(c);
        ck_assert_int_lt(c, 0);
        ck_assert_ptr_nonnull(name);
        ck_assert_msg(strchr(name, '.') != NULL, "name %s is not dotted", name);
        for (const char *p = name; *p; p++)
            ck_assert_msg((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' ||
                              *p == '_',
                          "name %s has a character outside [a-z0-9._]", name);
        ck_assert_msg(sr_code_class(c) != SR_CLASS_NONE, "%s has no class", name);
        ck_assert_msg(sr_code_doc(c) && strlen(sr_code_doc(c)) > 8, "%s has no description", name);
        ck_assert_int_eq(sr_code_by_name(name), c);
        for (size_t j = i + 1; j < sr_code_count(); j++) {
            int d = sr_code_at(j);
            ck_assert_msg(c != d, "code %d appears twice", c);
            ck_assert_msg(strcmp(name, sr_code_name(d)) != 0, "name %s appears twice", name);
        }
    }
}
END_TEST

START_TEST(unknown_codes_and_ok)
{
    ck_assert_str_eq(sr_code_name(SR_OK), "ok");
    ck_assert_ptr_null(sr_code_name(-99999));
    ck_assert_int_eq(sr_code_class(-99999), SR_CLASS_NONE);
    ck_assert_int_eq(sr_code_by_name("no.such_code"), SR_OK);
    ck_assert_str_eq(sr_class_name(SR_CLASS_TRANSIENT), "transient");
    ck_assert_str_eq(sr_class_name(SR_CLASS_PROTOCOL), "protocol");
}
END_TEST

START_TEST(classes_match_what_callers_do)
{
    /* The retry policy depends on these: truncation is transient, drift is protocol. */
    ck_assert_int_eq(sr_code_class(SR_E_SPLICE_UNTERMINATED), SR_CLASS_TRANSIENT);
    ck_assert_int_eq(sr_code_class(SR_E_SPLICE_TRUNCATED), SR_CLASS_TRANSIENT);
    ck_assert_int_eq(sr_code_class(SR_E_SPLICE_DRIFT), SR_CLASS_PROTOCOL);
    ck_assert_int_eq(sr_code_class(SR_E_ENV_BYTE_COUNT), SR_CLASS_PROTOCOL);
    ck_assert_int_eq(sr_code_class(SR_E_NOMEM), SR_CLASS_RESOURCE);
}
END_TEST

START_TEST(err_set_formats_and_prefixes)
{
    sr_err e = SR_ERR_INIT;
    int rc = sr_err_set_at(&e, SR_E_B64_CHAR, 17, "bad byte 0x%02x", 0x2d);
    ck_assert_int_eq(rc, SR_E_B64_CHAR);
    ck_assert_int_eq(e.offset, 17);
    ck_assert_str_eq(e.msg, "bad byte 0x2d");
    sr_err_prefix(&e, "field %s: ", "routed_experts");
    ck_assert_str_eq(e.msg, "field routed_experts: bad byte 0x2d");
    ck_assert_int_eq(sr_err_set(NULL, SR_E_INVAL, "ignored"), SR_E_INVAL);
    char big[2000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    sr_err_set(&e, SR_E_INVAL, "%s", big);
    ck_assert_uint_eq(strlen(e.msg), SR_ERR_MSG_MAX - 1);
    sr_err_clear(&e);
    ck_assert_int_eq(e.code, 0);
    ck_assert_int_eq(e.offset, -1);
}
END_TEST

START_TEST(buf_respects_its_maximum)
{
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;
    b.max = 10;
    ck_assert_sr_ok(sr_buf_puts(&b, "0123456789", &e), e);
    ck_assert_sr_code(sr_buf_append(&b, "x", 1, &e), e, SR_E_LIMIT);
    ck_assert_uint_eq(b.len, 10);
    ck_assert_str_eq(b.data, "0123456789");
    sr_buf_reset(&b);
    ck_assert_sr_ok(sr_buf_put_i64(&b, -1234, &e), e);
    ck_assert_sr_code(sr_buf_printf(&b, &e, "%s", "567890"), e, SR_E_LIMIT);
    ck_assert_str_eq(b.data, "-1234");
    sr_buf_reset(&b);
    b.max = 0;
    ck_assert_sr_ok(sr_buf_put_i64(&b, -9223372036854775807LL - 1, &e), e);
    ck_assert_str_eq(b.data, "-9223372036854775808");
    sr_buf_reset(&b);
    ck_assert_sr_ok(sr_buf_put_json_string(&b, "a\"b\\c\n\x01/\xc3\xa9", &e), e);
    ck_assert_str_eq(b.data, "\"a\\\"b\\\\c\\u000a\\u0001/\xc3\xa9\"");
    sr_buf_release(&b);
}
END_TEST

/* The JSON string of every byte string (random, with many escapes) equals the byte-by-byte
 * definition of sr_buf.h: `\"`, `\\`, control bytes as \u00XX, every other byte verbatim. */
START_TEST(buf_json_string_matches_its_definition)
{
    uint64_t seed = 0x6a736f6eu;
    sr_err e = SR_ERR_INIT;
    sr_buf got = SR_BUF_INIT;
    char in[64], want[64 * 6 + 3];
    static const unsigned char pick[8] = {'"', '\\', '\n', 0x1f, 'a', 0xc3, 0x7f, ' '};
    for (int round = 0; round < 4000; round++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = (size_t)(seed >> 58);
        size_t w = 0;
        want[w++] = '"';
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            unsigned char c = (unsigned char)(seed >> 56);
            if (c == 0 || (seed >> 40 & 3) == 0)
                c = pick[(seed >> 33) % 8];
            in[i] = (char)c;
            if (c == '"' || c == '\\')
                w += (size_t)snprintf(want + w, sizeof want - w, "\\%c", c);
            else if (c < 0x20)
                w += (size_t)snprintf(want + w, sizeof want - w, "\\u%04x", c);
            else
                want[w++] = (char)c;
        }
        in[n] = '\0';
        want[w++] = '"';
        want[w] = '\0';
        sr_buf_reset(&got);
        ck_assert_sr_ok(sr_buf_put_json_string(&got, in, &e), e);
        ck_assert_str_eq(got.data, want);
    }
    sr_buf_release(&got);
}
END_TEST

/* Writes `n` bytes of a pattern to dir/name and returns the path in `path`. */
static void write_file(char *path, size_t cap, const char *dir, const char *name, size_t n)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_ne(fputc('a' + (int)(i % 26), f), EOF);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(buf_reads_a_file_within_its_limit)
{
    char dir[] = "/tmp/syncroll-buf-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256], empty[256], big[256];
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;

    write_file(path, sizeof(path), dir, "ten", 10);
    ck_assert_sr_ok(sr_file_read(&b, path, 10, &e), e);
    ck_assert_uint_eq(b.len, 10);
    ck_assert_str_eq(b.data, "abcdefghij");
    ck_assert_uint_eq(b.max, 10);

    ck_assert_sr_code(sr_file_read(&b, path, 9, &e), e, SR_E_LIMIT);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_ptr_nonnull(strstr(e.msg, path));
    ck_assert_ptr_nonnull(strstr(e.msg, " 10 bytes"));
    ck_assert_ptr_nonnull(strstr(e.msg, "limit of 9 bytes"));

    write_file(empty, sizeof(empty), dir, "empty", 0);
    ck_assert_sr_ok(sr_file_read(&b, empty, 1, &e), e);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_ptr_nonnull(b.data);
    ck_assert_str_eq(b.data, "");

    /* Larger than one allocation step, under the default maximum. */
    write_file(big, sizeof(big), dir, "big", 200000);
    ck_assert_sr_ok(sr_file_read(&b, big, 0, &e), e);
    ck_assert_uint_eq(b.len, 200000);
    ck_assert_int_eq(b.data[199999], 'a' + 199999 % 26);

    char missing[256];
    snprintf(missing, sizeof(missing), "%s/missing", dir);
    ck_assert_sr_code(sr_file_read(&b, missing, 10, &e), e, SR_E_IO);
    ck_assert_ptr_null(b.data);
    ck_assert_ptr_nonnull(strstr(e.msg, missing));
    ck_assert_ptr_nonnull(strstr(e.msg, "No such file"));

    /* A directory is not a regular file: refused by name before any read (issue #21 item 9). */
    ck_assert_sr_code(sr_file_read(&b, dir, 10, &e), e, SR_E_NOT_REGULAR);
    ck_assert_ptr_nonnull(strstr(e.msg, "not a regular file (a directory)"));

    unlink(path);
    unlink(empty);
    unlink(big);
    rmdir(dir);
    sr_buf_release(&b);
}
END_TEST

/* A pipe has no size beforehand, so only reading past the limit can refuse it. */
static int read_pipe(sr_buf *b, const char *bytes, size_t max, sr_err *e)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq((int)write(fds[1], bytes, strlen(bytes)), (int)strlen(bytes));
    close(fds[1]);
    FILE *f = fdopen(fds[0], "rb");
    ck_assert_ptr_nonnull(f);
    int rc = sr_file_read_stream(b, f, "<pipe>", max, e);
    fclose(f);
    return rc;
}

START_TEST(buf_reads_a_stream_within_its_limit)
{
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;
    ck_assert_sr_ok(read_pipe(&b, "0123456789", 10, &e), e);
    ck_assert_str_eq(b.data, "0123456789");
    ck_assert_sr_code(read_pipe(&b, "0123456789", 9, &e), e, SR_E_LIMIT);
    ck_assert_ptr_nonnull(strstr(e.msg, "<pipe>: more than 9 bytes"));
    ck_assert_ptr_null(b.data);
    ck_assert_sr_ok(read_pipe(&b, "", 10, &e), e);
    ck_assert_str_eq(b.data, "");
    sr_buf_release(&b);
}
END_TEST

START_TEST(dtype_names_round_trip)
{
    sr_err e = SR_ERR_INIT;
    for (int d = SR_DTYPE_INVALID + 1; d < SR_DTYPE_COUNT; d++) {
        sr_dtype got;
        const char *n = sr_dtype_name((sr_dtype)d);
        ck_assert_sr_ok(sr_dtype_from_name(&got, n, strlen(n), &e), e);
        ck_assert_int_eq(got, d);
    }
    sr_dtype got;
    ck_assert_sr_code(sr_dtype_from_name(&got, "<f4", 3, &e), e, SR_E_DTYPE_UNKNOWN);
    ck_assert_sr_code(sr_dtype_from_name(&got, "int", 3, &e), e, SR_E_DTYPE_UNKNOWN);
    char buf[128];
    ck_assert_str_eq(sr_dtype_set_str(SR_ROUTE_DTYPES, buf, sizeof(buf)),
                     "['int16', 'int32', 'uint8']");
    ck_assert_uint_eq(sr_dtype_size(SR_DTYPE_INT16), 2);
    ck_assert(sr_dtype_is_signed(SR_DTYPE_INT32));
    ck_assert(!sr_dtype_is_integer(SR_DTYPE_BOOL));
}
END_TEST

START_TEST(shape_product_overflow_is_named)
{
    sr_err e = SR_ERR_INIT;
    size_t nb;
    uint64_t ne;
    int64_t ok[3] = {3, 2, 2};
    ck_assert_sr_ok(sr_shape_bytes(&nb, &ne, ok, 3, 2, &e), e);
    ck_assert_uint_eq(nb, 24);
    ck_assert_uint_eq(ne, 12);
    int64_t big[3] = {INT64_MAX, INT64_MAX, 2};
    ck_assert_sr_code(sr_shape_bytes(&nb, &ne, big, 3, 1, &e), e, SR_E_ENV_OVERFLOW);
    int64_t items[2] = {(int64_t)1 << 62, 2};
    ck_assert_sr_code(sr_shape_bytes(&nb, NULL, items, 2, 4, &e), e, SR_E_ENV_OVERFLOW);
    int64_t neg[2] = {1, -1};
    ck_assert_sr_code(sr_shape_bytes(&nb, NULL, neg, 2, 1, &e), e, SR_E_ENV_SHAPE);
    /* numpy: itemsize * prod(non-zero dims) must fit in intp, even for an empty array. */
    int64_t zero[3] = {0, INT64_MAX, INT64_MAX};
    ck_assert_sr_code(sr_shape_bytes(&nb, &ne, zero, 3, 8, &e), e, SR_E_ENV_OVERFLOW);
    int64_t z32[3] = {0, (int64_t)1 << 32, (int64_t)1 << 32};
    ck_assert_sr_code(sr_shape_bytes(&nb, &ne, z32, 3, 1, &e), e, SR_E_ENV_OVERFLOW);
    int64_t z31[3] = {0, (int64_t)1 << 31, (int64_t)1 << 31}; /* 2^62: numpy accepts uint8 */
    ck_assert_sr_ok(sr_shape_bytes(&nb, &ne, z31, 3, 1, &e), e);
    ck_assert_uint_eq(nb, 0);
    ck_assert_uint_eq(ne, 0);
    ck_assert_sr_code(sr_shape_bytes(&nb, &ne, z31, 3, 2, &e), e, SR_E_ENV_OVERFLOW); /* int16 */
    int64_t zmax[2] = {0, INT64_MAX}; /* numpy: uint8 ok, int16 too big */
    ck_assert_sr_ok(sr_shape_bytes(&nb, &ne, zmax, 2, 1, &e), e);
    ck_assert_sr_code(sr_shape_bytes(&nb, &ne, zmax, 2, 2, &e), e, SR_E_ENV_OVERFLOW);
    int64_t z62[3] = {0, (int64_t)1 << 62, 2}; /* 2^63: too big even for uint8 */
    ck_assert_sr_code(sr_shape_bytes(&nb, &ne, z62, 3, 1, &e), e, SR_E_ENV_OVERFLOW);
}
END_TEST

START_TEST(arena_reuses_memory_and_aligns)
{
    sr_err e = SR_ERR_INIT;
    sr_arena *ar;
    ck_assert_sr_ok(sr_arena_new(&ar, 64 << 20, &e), e);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 10; i++) {
            unsigned char *p = sr_arena_alloc(ar, (size_t)(i + 1) * 300000 + 7, &e);
            ck_assert_ptr_nonnull(p);
            ck_assert_uint_eq((uintptr_t)p % 64, 0);
            memset(p, i, (size_t)(i + 1) * 300000 + 7);
        }
        size_t cap = sr_arena_capacity(ar);
        sr_arena_reset(ar);
        if (round > 0)
            ck_assert_uint_eq(sr_arena_capacity(ar), cap); /* steady state: no new memory */
    }
    ck_assert_ptr_null(sr_arena_alloc(ar, (size_t)65 << 20, &e));
    ck_assert_int_eq(e.code, SR_E_LIMIT);
    sr_arena_free(ar);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("err");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, every_code_has_name_class_and_doc);
    tcase_add_test(tc, unknown_codes_and_ok);
    tcase_add_test(tc, classes_match_what_callers_do);
    tcase_add_test(tc, err_set_formats_and_prefixes);
    tcase_add_test(tc, buf_respects_its_maximum);
    tcase_add_test(tc, buf_reads_a_file_within_its_limit);
    tcase_add_test(tc, buf_reads_a_stream_within_its_limit);
    tcase_add_test(tc, buf_json_string_matches_its_definition);
    tcase_add_test(tc, dtype_names_round_trip);
    tcase_add_test(tc, shape_product_overflow_is_named);
    tcase_add_test(tc, arena_reuses_memory_and_aligns);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
