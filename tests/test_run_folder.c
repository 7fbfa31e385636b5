/*
 * unit.run_folder: removing a scenario's work folder (sr_run_remove_folder, cli/cmd_run_priv.h,
 * issue 29): everything inside goes, subfolders included (a weight sync publishes into
 * artifacts/<id>/sync/<version>/), and a symbolic link inside is removed as a link, never
 * followed: what it points to outside the folder stays. A folder that cannot be removed is
 * io.error naming it.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd_run_priv.h"
#include "sr_test.h"

static void put(const char *dir, const char *rel)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs("x\n", f);
    fclose(f);
}

static void sub(const char *dir, const char *rel)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    ck_assert_int_eq(mkdir(p, 0777), 0);
}

static int exists(const char *dir, const char *rel)
{
    char p[4096];
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

static Suite *suite(void)
{
    Suite *s = suite_create("run_folder");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, removes_subfolders_and_never_follows_links);
    tcase_add_test(tc, a_folder_that_is_a_link_or_missing_is_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
