/*
 * proxy/capture: what the writer records the reader gives back byte for byte, and a damaged
 * capture (cut index, bad line, a body file named outside bodies/, a body that does not match its
 * digest, a link in place of a body) is a named error, never a crash or an outside read.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/capture.h"
#include "sr_buf.h"
#include "sr_file.h"
#include "sr_test.h"

static void tmpdir(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/syncroll-capture-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rmtree(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Writes a capture of two exchanges into base/cap; returns the response body of exchange 2. */
static void write_two(const char *cap, sr_buf *resp2)
{
    sr_err e = SR_ERR_INIT;
    sr_capture_writer *w = NULL;
    ck_assert_sr_ok(sr_capture_writer_open(&w, cap, "http://127.0.0.1:1", 0, &e), e);
    for (int i = 0; i < 2; i++) {
        sr_capture_exchange x;
        memset(&x, 0, sizeof x);
        x.seq = sr_capture_next_seq(w);
        snprintf(x.method, sizeof x.method, "POST");
        snprintf(x.uri, sizeof x.uri, "/skyrl/v1/generate");
        snprintf(x.session, sizeof x.session, "s\"%d", i); /* a quote must survive the JSON */
        x.status = 200;
        x.complete = i == 0;
        sr_capture_sink *s = NULL;
        ck_assert_sr_ok(sr_capture_sink_open(&s, w, x.seq, "req", &e), e);
        ck_assert_sr_ok(sr_capture_sink_write(s, "{\"token_ids\":[1]}", 17, &e), e);
        ck_assert_sr_ok(sr_capture_sink_close(s, &x.request, &e), e);
        ck_assert_sr_ok(sr_capture_sink_open(&s, w, x.seq, "resp", &e), e);
        sr_buf body = SR_BUF_INIT;
        for (int k = 0; k < 100000 * (i + 1); k++) /* 100 KB, 200 KB: several zstd blocks */
            ck_assert_sr_ok(sr_buf_printf(&body, &e, "%c", 'a' + (k * 7 + i) % 26), e);
        ck_assert_sr_ok(sr_capture_sink_write(s, body.data, body.len / 2, &e), e);
        ck_assert_sr_ok(
            sr_capture_sink_write(s, body.data + body.len / 2, body.len - body.len / 2, &e), e);
        ck_assert_sr_ok(sr_capture_sink_close(s, &x.response, &e), e);
        x.t_start_us = 10 * i;
        x.t_head_us = x.t_end_us = 10 * i + 5;
        if (i == 1) {
            resp2->len = 0;
            ck_assert_sr_ok(sr_buf_append(resp2, body.data, body.len, &e), e);
        }
        sr_buf_release(&body);
        ck_assert_sr_ok(sr_capture_append(w, &x, &e), e);
    }
    ck_assert_sr_ok(sr_capture_writer_close(w, &e), e);
}

START_TEST(round_trip_gives_the_bytes_back)
{
    char base[64], cap[128];
    tmpdir(base, sizeof base);
    snprintf(cap, sizeof cap, "%s/cap", base);
    sr_buf want = SR_BUF_INIT, got = SR_BUF_INIT;
    write_two(cap, &want);
    sr_err e = SR_ERR_INIT;
    sr_capture *c = NULL;
    ck_assert_sr_ok(sr_capture_open(&c, cap, &e), e);
    ck_assert_uint_eq(sr_capture_count(c), 2);
    ck_assert_str_eq(sr_capture_upstream(c), "http://127.0.0.1:1");
    const sr_capture_exchange *x = sr_capture_at(c, 1);
    ck_assert_int_eq(x->seq, 2);
    ck_assert_str_eq(x->session, "s\"1");
    ck_assert_int_eq(x->complete, 0);
    ck_assert_int_eq(sr_capture_at(c, 0)->complete, 1);
    ck_assert_sr_ok(sr_capture_read_body(c, &x->response, &got, 1 << 20, &e), e);
    ck_assert_uint_eq(got.len, want.len);
    ck_assert_int_eq(memcmp(got.data, want.data, got.len), 0);
    ck_assert_sr_ok(sr_capture_read_body(c, &x->request, &got, 1 << 20, &e), e);
    ck_assert_str_eq(got.data, "{\"token_ids\":[1]}");
    /* The bound on a body is checked before it is inflated: one byte short is refused. */
    ck_assert_sr_code(sr_capture_read_body(c, &x->response, &got, want.len - 1, &e), e, SR_E_LIMIT);
    ck_assert_sr_ok(sr_capture_read_body(c, &x->response, &got, want.len, &e), e);
    sr_capture_free(c);
    /* A second capture into the same folder is refused: captures are never mixed. */
    sr_capture_writer *w = NULL;
    ck_assert_sr_code(sr_capture_writer_open(&w, cap, "http://x:1", 0, &e), e, SR_E_IO);
    sr_buf_release(&want);
    sr_buf_release(&got);
    rmtree(base);
}
END_TEST

static int parse(const char *text, sr_err *e)
{
    sr_capture *c = NULL;
    int rc = sr_capture_parse(&c, text, strlen(text), NULL, e);
    sr_capture_free(c);
    return rc;
}

#define HEAD                                                                                       \
    "{\"syncroll_capture\":1,\"upstream\":\"http://"                                               \
    "h:1\",\"started_unix_ms\":1,\"redacted\":false}\n"
#define BODY(f)                                                                                    \
    "{\"file\":\"" f "\",\"bytes\":0,\"xxh3\":\"0000000000000000\",\"content_type\":null}"
#define LINE(seq, file)                                                                            \
    "{\"seq\":" seq ",\"session\":null,\"method\":\"GET\",\"uri\":\"/health\",\"endpoint\":null,"  \
    "\"status\":200,\"t_start_us\":1,\"t_head_us\":2,\"t_end_us\":3,\"request\":" BODY(            \
        "") ",\"response\":" BODY(file) ",\"complete\":true,\"fault\":null}\n"

START_TEST(damaged_indexes_are_named)
{
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(parse(HEAD LINE("1", "") LINE("2", ""), &e), e);
    ck_assert_sr_code(parse("", &e), e, SR_E_CAPTURE_VERSION);
    ck_assert_sr_code(parse("{\"syncroll_capture\":2}\n", &e), e, SR_E_CAPTURE_VERSION);
    ck_assert_sr_code(parse("not json\n", &e), e, SR_E_CAPTURE_VERSION);
    /* Cut anywhere inside the last line: truncated, whatever the cut. */
    const char *whole = HEAD LINE("1", "");
    for (size_t cut = strlen(HEAD) + 1; cut < strlen(whole); cut += 7) {
        char *t = strndup(whole, cut);
        ck_assert_sr_code(parse(t, &e), e, SR_E_CAPTURE_TRUNCATED);
        free(t);
    }
    ck_assert_sr_code(parse(HEAD "{\"seq\":1}\n", &e), e, SR_E_CAPTURE_CORRUPT);
    ck_assert_msg(strstr(e.msg, "line 2") != NULL, "%s", e.msg);
    ck_assert_sr_code(parse(HEAD LINE("0", ""), &e), e, SR_E_CAPTURE_CORRUPT);
    ck_assert_sr_code(parse(HEAD LINE("1.5", ""), &e), e, SR_E_CAPTURE_CORRUPT);
    ck_assert_sr_code(parse(HEAD "[1]\n", &e), e, SR_E_CAPTURE_CORRUPT);
    /* Body files outside bodies/ are refused before anything is opened. */
    static const char *const bad[] = {"../x.zst",
                                      "bodies/../../etc/passwd",
                                      "/etc/passwd",
                                      "bodies/1.zst",
                                      "bodies/x.req.zst",
                                      "bodies/1.req.zst/",
                                      "bodies/1234567890123.req.zst"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char t[2048];
        snprintf(t, sizeof t,
                 HEAD "{\"seq\":1,\"session\":null,\"method\":\"GET\",\"uri\":\"/h\","
                      "\"endpoint\":null,\"status\":200,\"t_start_us\":1,\"t_head_us\":2,"
                      "\"t_end_us\":3,\"request\":" BODY(
                          "") ",\"response\":{\"file\":\"%s\","
                              "\"bytes\":0,\"xxh3\":\"0000000000000000\",\"content_type\":null},"
                              "\"complete\":true,\"fault\":null}\n",
                 bad[i]);
        ck_assert_sr_code(parse(t, &e), e, SR_E_CAPTURE_CORRUPT);
        ck_assert_msg(strstr(e.msg, "\"file\"") != NULL, "%s: %s", bad[i], e.msg);
    }
    ck_assert_sr_ok(parse(HEAD LINE("1", "bodies/1.resp.zst"), &e), e);
}
END_TEST

START_TEST(damaged_bodies_are_named)
{
    char base[64], cap[128], path[256];
    tmpdir(base, sizeof base);
    snprintf(cap, sizeof cap, "%s/cap", base);
    sr_buf want = SR_BUF_INIT, got = SR_BUF_INIT;
    write_two(cap, &want);
    sr_err e = SR_ERR_INIT;
    sr_capture *c = NULL;
    ck_assert_sr_ok(sr_capture_open(&c, cap, &e), e);
    const sr_capture_exchange *x = sr_capture_at(c, 1);
    snprintf(path, sizeof path, "%s/%s", cap, x->response.file);
    /* One flipped byte in the frame: zstd's own check or the digest refuses it. */
    sr_buf raw = SR_BUF_INIT;
    ck_assert_sr_ok(sr_file_read(&raw, path, 1 << 20, &e), e);
    for (size_t at = 0; at < raw.len; at += raw.len / 9 + 1) {
        FILE *f = fopen(path, "wb");
        raw.data[at] ^= 0x5a;
        fwrite(raw.data, 1, raw.len, f);
        fclose(f);
        raw.data[at] ^= 0x5a;
        int rc = sr_capture_read_body(c, &x->response, &got, 1 << 20, &e);
        ck_assert_msg(rc == SR_E_CAPTURE_BODY, "flip at %zu: %s", at, sr_code_name(rc));
    }
    /* Cut short, then missing, then a link in its place. */
    ck_assert_int_eq(truncate(path, (off_t)raw.len / 2), 0);
    ck_assert_sr_code(sr_capture_read_body(c, &x->response, &got, 1 << 20, &e), e,
                      SR_E_CAPTURE_BODY);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_sr_code(sr_capture_read_body(c, &x->response, &got, 1 << 20, &e), e,
                      SR_E_CAPTURE_BODY);
    char other[256];
    snprintf(other, sizeof other, "%s/%s", cap, sr_capture_at(c, 0)->response.file);
    ck_assert_int_eq(symlink(other, path), 0);
    ck_assert_sr_code(sr_capture_read_body(c, &x->response, &got, 1 << 20, &e), e, SR_E_SYMLINK);
    sr_capture_free(c);
    sr_buf_release(&raw);
    sr_buf_release(&want);
    sr_buf_release(&got);
    rmtree(base);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("capture");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trip_gives_the_bytes_back);
    tcase_add_test(tc, damaged_indexes_are_named);
    tcase_add_test(tc, damaged_bodies_are_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
