/* Report files on disk, the terminal printer and the failure-artifact writers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_openpt, ptsname, open_memstream, nftw */
#endif
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/artifacts.h"
#include "report/report.h"
#include "report/term.h"
#include "report_synth.h"
#include "sr_test.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

static void rm_rf(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = malloc(8 << 20);
    size_t n = fread(buf, 1, (8 << 20) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

START_TEST(write_all_reports)
{
    char dir[] = "/tmp/sr_report_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    sr_run_result *run = synth_run(dir, 1);
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_report_write(run, dir, SR_REPORT_ALL, &e), e);
    const char *files[] = {"summary.txt", "results.json", "junit.xml", "report.html"};
    for (size_t i = 0; i < 4; i++) {
        char p[512];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        ck_assert_msg(stat(p, &st) == 0 && st.st_size > 100, "%s missing or empty", p);
    }
    /* Only what was asked for; no temporary file left behind. */
    char sub[512];
    snprintf(sub, sizeof(sub), "%s/only", dir);
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    ck_assert_sr_ok(sr_report_write(run, sub, SR_REPORT_JUNIT, &e), e);
    snprintf(sub, sizeof(sub), "%s/only/report.html", dir);
    ck_assert_int_ne(access(sub, F_OK), 0);
    snprintf(sub, sizeof(sub), "%s/only/.junit.xml.tmp-%ld", dir, (long)getpid());
    ck_assert_int_ne(access(sub, F_OK), 0);
    ck_assert_sr_code(sr_report_write(run, "/nonexistent/dir", SR_REPORT_TEXT, &e), e, SR_E_IO);
    ck_assert_sr_code(sr_report_write(run, dir, 0, &e), e, SR_E_INVAL);
    sr_run_result_free(run);
    rm_rf(dir);
}
END_TEST

static char *term_output(const sr_term_opts *o)
{
    sr_run_result *run = synth_run("/tmp/run", 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sr_term *t = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_term_start(&t, f, 4, o, &e), e);
    for (size_t i = 0; i < run->n_scenarios; i++) {
        if (i == 4)
            sr_term_add_total(t, 1);
        sr_term_scenario_done(t, run->scenarios[i]);
    }
    sr_term_note(t, "run folder: /tmp/run");
    sr_term_finish(t, run);
    fclose(f);
    sr_run_result_free(run);
    return buf;
}

/* results.json is read item by item: an error is still placed at its line and
 * column in the whole text, in an item, before the list and after it, pretty or on one line. */
START_TEST(load_errors_placed_in_whole_text)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"schema\": 1, \"run\": {}, \"scenarios\": [\n{\"id\": \"a\"},\n"
         "  {\"id\": \"b\", \"repeat\": \"x\"}\n], \"partial\": false}\n",
         "t.json:3:15: 'repeat' must be an integer"},
        {"{\"schema\": 1, \"run\": {}, \"scenarios\": [\n{\"id\": \"a\"},\n"
         "  {\"id\": \"b\", \"repeat\": tru}\n], \"partial\": false}\n",
         "t.json:3:25: invalid JSON"},
        {"{\"schema\": 1, \"run\": {}, \"scenarios\": [\n{\"id\": \"a\"},\n"
         "  {\"id\": \"b\"}\n], \"partial\": 7}\n",
         "t.json:4:4: 'partial' must be true or false"},
        {"{\"schema\": 1, \"run\": {}, \"scenarios\": [\n{\"id\": \"a\"},\n"
         "  {\"id\": \"b\"}\n],\n \"partial\": tru}\n",
         "t.json:5:13: invalid JSON"},
        {"{\"schema\":1,\"run\":{},\"scenarios\":[{\"id\":\"a\"},{\"id\":\"b\",\"repeat\":\"x\"}],"
         "\"partial\":false}",
         "t.json:1:56: 'repeat' must be an integer"},
        {"{\"schema\":1,\"run\":{},\"scenarios\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"partial\":7}",
         "t.json:1:58: 'partial' must be true or false"},
        {"{\"schema\": 2, \"run\": {}, \"scenarios\": [{\"id\": \"a\"}]}",
         "t.json:1:2: unsupported schema 2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sr_run_result *run = NULL;
        sr_err e = SR_ERR_INIT;
        ck_assert_int_ne(
            sr_report_load_mem(&run, cases[i].text, strlen(cases[i].text), "t.json", &e), 0);
        ck_assert_ptr_null(run);
        ck_assert_msg(strncmp(e.msg, cases[i].want, strlen(cases[i].want)) == 0,
                      "case %zu: '%s', expected '%s...'", i, e.msg, cases[i].want);
    }
}
END_TEST

START_TEST(term_plain_lines)
{
    sr_term_opts o = {0, 0};
    char *x = term_output(&o);
    ck_assert_ptr_null(strchr(x, '\r'));
    ck_assert_ptr_null(strchr(x, '\033'));
    ck_assert_ptr_nonnull(strstr(x, "PASS  minimal  0.12 s\nFAIL  row-mismatch <&>\"'  0.34 s  "));
    ck_assert_ptr_nonnull(strstr(x, "\n      artifacts: /tmp/run/artifacts/row-mismatch"));
    ck_assert_ptr_nonnull(strstr(x, "ERROR engine-spawn  0.01 s  cannot spawn engine 0"));
    ck_assert_ptr_nonnull(strstr(x, "\nrun folder: /tmp/run\n2 passed, 2 failed, 1 skipped\n"));
    size_t n = strlen(x);
    ck_assert_str_eq(x + n - strlen("2 passed, 2 failed, 1 skipped\n"),
                     "2 passed, 2 failed, 1 skipped\n");
    free(x);
}
END_TEST

START_TEST(term_progress_and_colour)
{
    sr_term_opts o = {1, 1};
    char *x = term_output(&o);
    ck_assert_ptr_nonnull(strstr(x, "[1/4] 0 failed  0:00"));
    ck_assert_ptr_nonnull(strstr(x, "\r\033[K\033[1;31mFAIL \033[0m row-mismatch"));
    ck_assert_ptr_nonnull(strstr(x, "[2/4] \033[1;31m1 failed\033[0m"));
    ck_assert_ptr_nonnull(strstr(x, "[5/5] "));
    /* The progress line is erased before the last line, which stays last. */
    ck_assert_ptr_nonnull(strstr(x, "\r\033[K2 passed, 2 failed, 1 skipped\n"));
    free(x);
    o.color = 0;
    x = term_output(&o);
    ck_assert_ptr_null(strstr(x, "\033[1;31m"));
    ck_assert_ptr_nonnull(strstr(x, "[2/4] 1 failed"));
    free(x);
}
END_TEST

/* A pseudo-terminal, so sr_term_detect sees a TTY. */
static FILE *open_pty(void)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(m, 0);
    ck_assert_int_eq(grantpt(m), 0);
    ck_assert_int_eq(unlockpt(m), 0);
    FILE *f = fopen(ptsname(m), "w");
    ck_assert_ptr_nonnull(f);
    return f;
}

START_TEST(term_detect_environment)
{
    sr_term_opts o;
    FILE *tmp = tmpfile();
    unsetenv("CI");
    unsetenv("NO_COLOR");
    setenv("TERM", "xterm", 1);
    sr_term_detect(&o, tmp);
    ck_assert(!o.progress && !o.color);
    FILE *pty = open_pty();
    sr_term_detect(&o, pty);
    ck_assert(o.progress && o.color);
    setenv("NO_COLOR", "", 1);
    sr_term_detect(&o, pty);
    ck_assert(o.progress && !o.color);
    unsetenv("NO_COLOR");
    setenv("TERM", "dumb", 1);
    sr_term_detect(&o, pty);
    ck_assert(o.progress && !o.color);
    setenv("CI", "true", 1);
    sr_term_detect(&o, pty);
    ck_assert(!o.progress && !o.color);
    fclose(pty);
    fclose(tmp);
}
END_TEST

START_TEST(artifact_bytes_bounded)
{
    char dir[] = "/tmp/sr_art_XXXXXX", p[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char data[1000];
    for (int i = 0; i < 1000; i++)
        data[i] = (char)(i % 251);
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_artifact_bytes(dir, "small.bin", data, 100, -1, 0, &e), e);
    ck_assert_sr_ok(sr_artifact_bytes(dir, "head.bin", data, 1000, -1, 64, &e), e);
    ck_assert_sr_ok(sr_artifact_bytes(dir, "mid.bin", data, 1000, 500, 64, &e), e);
    ck_assert_sr_ok(sr_artifact_bytes(dir, "end.bin", data, 1000, 990, 64, &e), e);
    size_t n;
    snprintf(p, sizeof(p), "%s/small.bin", dir);
    char *x = slurp(p, &n);
    ck_assert(n == 100 && memcmp(x, data, 100) == 0);
    free(x);
    snprintf(p, sizeof(p), "%s/mid.bin", dir);
    x = slurp(p, &n);
    ck_assert(n == 64 && memcmp(x, data + 468, 64) == 0);
    free(x);
    snprintf(p, sizeof(p), "%s/end.bin", dir);
    x = slurp(p, &n);
    ck_assert(n == 64 && memcmp(x, data + 936, 64) == 0);
    free(x);
    snprintf(p, sizeof(p), "%s/index.txt", dir);
    x = slurp(p, NULL);
    ck_assert_ptr_nonnull(strstr(x, "small.bin: all 100 bytes\n"));
    ck_assert_ptr_nonnull(strstr(x, "head.bin: bytes [0, 64) of 1000 (cut to the head)\n"));
    ck_assert_ptr_nonnull(strstr(x, "mid.bin: bytes [468, 532) of 1000 (cut around byte 500)\n"));
    free(x);
    ck_assert_sr_code(sr_artifact_bytes(dir, "../x", data, 1, -1, 0, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_artifact_bytes(dir, "..", data, 1, -1, 0, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_artifact_bytes(dir, "", data, 1, -1, 0, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_artifact_bytes(dir, "a", NULL, 1, -1, 0, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_artifact_bytes("/nonexistent", "a", data, 1, -1, 0, &e), e, SR_E_IO);
    rm_rf(dir);
}
END_TEST

/* sr_artifact_bytes at, before and past its bound: 63 and 64 bytes under max 64 are kept whole,
 * 65 are cut; a focus on the last byte centres the cut (at its end), a focus one past the data is
 * no focus (the head). */
START_TEST(artifact_bytes_at_its_limit)
{
    char dir[] = "/tmp/sr_art_XXXXXX", p[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char data[65];
    for (int i = 0; i < 65; i++)
        data[i] = (char)(i + 1);
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_artifact_bytes(dir, "a63.bin", data, 63, -1, 64, &e), e);
    ck_assert_sr_ok(sr_artifact_bytes(dir, "a64.bin", data, 64, -1, 64, &e), e);
    ck_assert_sr_ok(sr_artifact_bytes(dir, "a65.bin", data, 65, -1, 64, &e), e);
    ck_assert_sr_ok(sr_artifact_bytes(dir, "last.bin", data, 65, 64, 64, &e), e);
    ck_assert_sr_ok(sr_artifact_bytes(dir, "past.bin", data, 65, 65, 64, &e), e);
    static const struct {
        const char *name;
        size_t n, from;
    } want[] = {{"a63.bin", 63, 0},
                {"a64.bin", 64, 0},
                {"a65.bin", 64, 0},
                {"last.bin", 64, 1},
                {"past.bin", 64, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        size_t n;
        snprintf(p, sizeof(p), "%s/%s", dir, want[i].name);
        char *x = slurp(p, &n);
        ck_assert_msg(n == want[i].n && memcmp(x, data + want[i].from, n) == 0,
                      "%s: %zu bytes, want %zu from %zu", want[i].name, n, want[i].n, want[i].from);
        free(x);
    }
    snprintf(p, sizeof(p), "%s/index.txt", dir);
    char *x = slurp(p, NULL);
    static const char *const lines[] = {"a63.bin: all 63 bytes\n", "a64.bin: all 64 bytes\n",
                                        "a65.bin: bytes [0, 64) of 65 (cut to the head)\n",
                                        "last.bin: bytes [1, 65) of 65 (cut around byte 64)\n",
                                        "past.bin: bytes [0, 64) of 65 (cut to the head)\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(x, lines[i]), "index lacks %s: %s", lines[i], x);
    free(x);
    rm_rf(dir);
}
END_TEST

START_TEST(artifact_copy_tail)
{
    char dir[] = "/tmp/sr_art_XXXXXX", src[512], p[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(src, sizeof(src), "%s/engine.log", dir);
    FILE *f = fopen(src, "w");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "line %04d\n", i);
    fclose(f);
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_artifact_copy_tail(dir, "tail.log", src, 20, &e), e);
    snprintf(p, sizeof(p), "%s/tail.log", dir);
    char *x = slurp(p, NULL);
    ck_assert_str_eq(x, "line 0998\nline 0999\n");
    free(x);
    ck_assert_sr_ok(sr_artifact_copy_tail(dir, "all.log", src, 0, &e), e);
    snprintf(p, sizeof(p), "%s/all.log", dir);
    size_t n;
    x = slurp(p, &n);
    ck_assert_uint_eq(n, 10000);
    free(x);
    snprintf(p, sizeof(p), "%s/index.txt", dir);
    x = slurp(p, NULL);
    ck_assert_ptr_nonnull(strstr(x, "tail.log: last 20 of 10000 bytes of "));
    free(x);
    ck_assert_sr_code(sr_artifact_copy_tail(dir, "x.log", "/nonexistent", 0, &e), e, SR_E_IO);
    rm_rf(dir);
}
END_TEST

START_TEST(artifact_trace_rows)
{
    char dir[] = "/tmp/sr_art_XXXXXX", p[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    sr_ndarray got = SR_NDARRAY_INIT, want = SR_NDARRAY_INIT;
    sr_err e = SR_ERR_INIT;
    int64_t gs[3] = {10, 2, 2}, ws[3] = {11, 2, 2};
    ck_assert_sr_ok(sr_ndarray_alloc(&got, SR_DTYPE_UINT8, 3, gs, &e), e);
    ck_assert_sr_ok(sr_ndarray_alloc(&want, SR_DTYPE_INT16, 3, ws, &e), e);
    for (uint64_t i = 0; i < 44; i++) {
        if (i < 40)
            sr_ndarray_set_i64(&got, i, (int64_t)(i % 7));
        sr_ndarray_set_i64(&want, i, (int64_t)(i % 7));
    }
    sr_ndarray_set_i64(&got, (6 * 2 + 1) * 2 + 1, 99); /* row 6, layer 1, second expert */
    ck_assert_sr_ok(sr_artifact_trace_rows(dir, "trace.txt", &got, &want, 6, 4, &e), e);
    snprintf(p, sizeof(p), "%s/trace.txt", dir);
    char *x = slurp(p, NULL);
    ck_assert_ptr_nonnull(strstr(x, "# route rows 2..10 around row 6; got uint8[10, 2, 2], "
                                    "want int16[11, 2, 2]\n"));
    ck_assert_ptr_nonnull(strstr(x, "\n6 0 [3, 4] [3, 4]\n6 1 [5, 99] [5, 6] !\n"));
    ck_assert_ptr_nonnull(strstr(x, "\n10 1 - [0, 1] !\n"));
    free(x);
    int64_t bad[2] = {3, 3};
    sr_ndarray flat = SR_NDARRAY_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(&flat, SR_DTYPE_INT32, 2, bad, &e), e);
    ck_assert_sr_code(sr_artifact_trace_rows(dir, "t2.txt", &flat, &want, 1, 0, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_artifact_trace_rows(dir, "t2.txt", &got, &want, -1, 0, &e), e, SR_E_INVAL);
    ck_assert_sr_ok(sr_artifact_trace_rows(dir, "t3.txt", NULL, &want, 0, 0, &e), e);
    sr_ndarray_release(&flat);
    sr_ndarray_release(&got);
    sr_ndarray_release(&want);
    rm_rf(dir);
}
END_TEST

/* options.shard "K/N" needs 1 <= K <= N <= 1000000: K at 1 and at N, N at its maximum are
 * loaded; K 0, K one past N and N one past the maximum are refused. */
START_TEST(load_shard_bounds_are_exact)
{
    static const struct {
        const char *shard;
        int ok, k, n;
    } cases[] = {{"1/4", 1, 1, 4},       {"3/4", 1, 3, 4},
                 {"4/4", 1, 4, 4},       {"5/4", 0, 0, 0},
                 {"0/4", 0, 0, 0},       {"1/1", 1, 1, 1},
                 {"2/1", 0, 0, 0},       {"1000000/1000000", 1, 1000000, 1000000},
                 {"1/1000001", 0, 0, 0}, {"1000001/1000000", 0, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"schema\": 1, \"run\": {\"options\": {\"shard\": \"%s\"}}, \"scenarios\": "
                 "[{\"id\": \"a\"}], \"partial\": false}",
                 cases[i].shard);
        sr_run_result *run = NULL;
        sr_err e = SR_ERR_INIT;
        int rc = sr_report_load_mem(&run, text, strlen(text), "t.json", &e);
        if (cases[i].ok) {
            ck_assert_msg(rc == 0, "shard %s: %s", cases[i].shard, e.msg);
            ck_assert_int_eq(run->header.shard_k, cases[i].k);
            ck_assert_int_eq(run->header.shard_n, cases[i].n);
            sr_run_result_free(run);
        } else {
            ck_assert_msg(rc == SR_E_JSON_SCHEMA, "shard %s: rc %d (%s)", cases[i].shard, rc,
                          e.msg);
            ck_assert_ptr_null(run);
            ck_assert_ptr_nonnull(strstr(e.msg, "'shard' must be \"K/N\""));
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report_io");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, write_all_reports);
    tcase_add_test(tc, term_plain_lines);
    tcase_add_test(tc, term_progress_and_colour);
    tcase_add_test(tc, term_detect_environment);
    tcase_add_test(tc, artifact_bytes_bounded);
    tcase_add_test(tc, artifact_bytes_at_its_limit);
    tcase_add_test(tc, artifact_copy_tail);
    tcase_add_test(tc, artifact_trace_rows);
    tcase_add_test(tc, load_errors_placed_in_whole_text);
    tcase_add_test(tc, load_shard_bounds_are_exact);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
