/*
 * unit.run_folder: removing a scenario's work folder (sr_run_remove_folder, cli/cmd_run_priv.h):
 * everything inside goes, subfolders included (a weight sync publishes into
 * artifacts/<id>/sync/<version>/), and a symbolic link inside is removed as a link, never
 * followed: what it points to outside the folder stays. A folder that cannot be removed is
 * io.error naming it. Making room for the reports (sr_run_drop_checkpoints) removes a kept
 * version holding a symbolic link, a subfolder and a FIFO, never follows the link, ends when a
 * version cannot be removed, and names it.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd_run_priv.h"
#include "report/result.h"
#include "sr_test.h"

static void put(const char *dir, const char *rel)
{
    char p[8400];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs("x\n", f);
    fclose(f);
}

static void sub(const char *dir, const char *rel)
{
    char p[8400];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    ck_assert_int_eq(mkdir(p, 0777), 0);
}

static int exists(const char *dir, const char *rel)
{
    char p[8400];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    return lstat(p, &st) == 0;
}

START_TEST(removes_subfolders_and_never_follows_links)
{
    char top[] = "/tmp/syncroll-rmtest-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(top));
    char work[4200], outside[4200], link[4300];
    snprintf(work, sizeof(work), "%s/work", top);
    snprintf(outside, sizeof(outside), "%s/outside", top);
    ck_assert_int_eq(mkdir(work, 0777), 0);
    ck_assert_int_eq(mkdir(outside, 0777), 0);
    put(outside, "keep.txt");
    put(work, "engine-0.log");
    sub(work, "sync");
    sub(work, "sync/v1");
    put(work, "sync/v1/model.safetensors");
    sub(work, "evidence");
    sub(work, "evidence/step0-sample1");
    put(work, "evidence/step0-sample1/index.txt");
    /* Links out of the folder: to a folder (with a file in it) and to a file. */
    snprintf(link, sizeof(link), "%s/sync/out-dir", work);
    ck_assert_int_eq(symlink(outside, link), 0);
    snprintf(link, sizeof(link), "%s/out-file", work);
    snprintf(outside + strlen(outside), sizeof(outside) - strlen(outside), "/keep.txt");
    ck_assert_int_eq(symlink(outside, link), 0);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_run_remove_folder(work, &err), err);
    ck_assert_msg(!exists(top, "work"), "the work folder is still there");
    ck_assert_msg(exists(top, "outside/keep.txt"), "a file outside the folder was removed");
    ck_assert_int_eq(unlink(outside), 0);
    snprintf(outside, sizeof(outside), "%s/outside", top);
    ck_assert_int_eq(rmdir(outside), 0);
    ck_assert_int_eq(rmdir(top), 0);
}
END_TEST

START_TEST(a_folder_that_is_a_link_or_missing_is_named)
{
    char top[] = "/tmp/syncroll-rmtest-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(top));
    char target[4200], link[4200];
    snprintf(target, sizeof(target), "%s/target", top);
    snprintf(link, sizeof(link), "%s/link", top);
    ck_assert_int_eq(mkdir(target, 0777), 0);
    put(target, "keep.txt");
    ck_assert_int_eq(symlink(target, link), 0);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_run_remove_folder(link, &err), err, SR_E_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, link));
    ck_assert_msg(exists(top, "target/keep.txt"), "the link's target was emptied");
    sr_err e2 = SR_ERR_INIT;
    ck_assert_sr_code(sr_run_remove_folder("/nonexistent/syncroll-work", &e2), e2, SR_E_IO);
    unlink(link);
    put(target, "keep.txt");
    char p[4300];
    snprintf(p, sizeof(p), "%s/keep.txt", target);
    unlink(p);
    rmdir(target);
    rmdir(top);
}
END_TEST

/* Makes `levels` nested folders "d/d/d/..." under dir/rel. */
static void nest(const char *dir, const char *rel, int levels)
{
    char p[8192];
    int n = snprintf(p, sizeof(p), "%s/%s", dir, rel);
    for (int i = 0; i < levels; i++) {
        n += snprintf(p + n, sizeof(p) - (size_t)n, "/d");
        ck_assert_int_eq(mkdir(p, 0777), 0);
    }
}

START_TEST(dropping_kept_versions_ends_and_never_follows_links)
{
    char top[] = "/tmp/syncroll-roomtest-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(top));
    char work[4200], p[4400];
    snprintf(work, sizeof(work), "%s/work", top);
    sub(top, "outside");
    put(top, "outside/keep.txt");
    sub(top, "work");
    sub(work, "sync");
    /* v1: a shard, a link to a file and one to a folder outside, a subfolder, a FIFO. */
    sub(work, "sync/v1");
    put(work, "sync/v1/model.safetensors");
    snprintf(p, sizeof(p), "%s/sync/v1/out-file", work);
    ck_assert_int_eq(symlink("../../../outside/keep.txt", p), 0);
    snprintf(p, sizeof(p), "%s/sync/v1/out-dir", work);
    ck_assert_int_eq(symlink("../../../outside", p), 0);
    sub(work, "sync/v1/part");
    put(work, "sync/v1/part/shard-1.safetensors");
    snprintf(p, sizeof(p), "%s/sync/v1/pipe", work);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    /* v2: nested deeper than the removal's bound, so it stays (the removal is bounded). */
    sub(work, "sync/v2");
    nest(work, "sync/v2", 40);
    put(work, "sync/notes.txt");

    sr_run_result *run = NULL;
    sr_scenario_result *s = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_run_result_new(&run, &err), err);
    ck_assert_sr_ok(sr_run_result_add_scenario(&s, run, &err), err);
    ck_assert_sr_ok(sr_result_set_str(&s->artifacts, work, &err), err);
    FILE *say = tmpfile();
    ck_assert_ptr_nonnull(say);
    ck_assert_int_eq(sr_run_drop_checkpoints(run, say), 1);
    char said[4096] = "";
    rewind(say);
    said[fread(said, 1, sizeof(said) - 1, say)] = '\0';
    fclose(say);
    ck_assert_msg(!exists(work, "sync/v1"), "v1 (a link, a subfolder, a FIFO) was not removed");
    ck_assert_msg(exists(top, "outside/keep.txt"), "the link was followed: %s", said);
    ck_assert_msg(exists(work, "sync/v2") && exists(work, "sync/notes.txt"), "%s", said);
    snprintf(p, sizeof(p), "a kept weight version stays: %s/sync/v2: cannot remove d", work);
    ck_assert_msg(strstr(said, p), "v2 is not named as staying: %s", said);
    snprintf(p, sizeof(p), "removed the weight versions kept in %s/sync (1 folder(s);", work);
    ck_assert_msg(strstr(said, p), "the removal is not said: %s", said);
    sr_run_result_free(run);
    snprintf(p, sizeof(p), "rm -rf '%s'", top);
    ck_assert_int_eq(system(p), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("run_folder");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, removes_subfolders_and_never_follows_links);
    tcase_add_test(tc, a_folder_that_is_a_link_or_missing_is_named);
    tcase_add_test(tc, dropping_kept_versions_ends_and_never_follows_links);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
