/*
 * sr_path: a folder opened by path follows no symbolic link in any component, and the two
 * readers of untrusted folders that use it (the delta receiver's state folder and sync_dir, the
 * safetensors checkpoint folder) refuse a link in an upper folder with io.symlink instead of
 * reading or writing through it. Before, only the last component was opened with O_NOFOLLOW, so
 * a folder swapped for a link after the engine checked the path was followed.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr_delta.h"
#include "sr_path.h"
#include "sr_safetensors.h"
#include "sr_test.h"

typedef struct tree {
    char base[64];
    char real[128], link[128], outside[128];
} tree;

/* base/real/ (a folder), base/outside/ (a folder), base/link -> outside. */
static void make_tree(tree *t)
{
    snprintf(t->base, sizeof(t->base), "/tmp/syncroll-path-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t->base));
    snprintf(t->real, sizeof(t->real), "%s/real", t->base);
    snprintf(t->outside, sizeof(t->outside), "%s/outside", t->base);
    snprintf(t->link, sizeof(t->link), "%s/link", t->base);
    ck_assert_int_eq(mkdir(t->real, 0755), 0);
    ck_assert_int_eq(mkdir(t->outside, 0755), 0);
    ck_assert_int_eq(symlink(t->outside, t->link), 0);
}

static void drop_tree(const tree *t)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->base);
    ck_assert_int_eq(system(cmd), 0);
}

static int exists(const char *dir, const char *name)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    struct stat st;
    return lstat(p, &st) == 0;
}

START_TEST(open_dir_follows_no_link_in_any_component)
{
    tree t;
    make_tree(&t);
    sr_err e = SR_ERR_INIT;
    char p[300];
    int fd, os = 0;
    /* A plain path opens; the last component is created on request. */
    snprintf(p, sizeof(p), "%s/new", t.real);
    ck_assert_sr_ok(sr_path_open_dir(&fd, p, 1, &os, &e), e);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert(exists(t.real, "new"));
    /* The link as the last component, and as an upper one: refused, nothing made outside. */
    ck_assert_sr_code(sr_path_open_dir(&fd, t.link, 0, &os, &e), e, SR_E_SYMLINK);
    ck_assert_int_eq(fd, -1);
    ck_assert_int_eq(os, ELOOP);
    ck_assert_ptr_nonnull(strstr(e.msg, "'link'"));
    snprintf(p, sizeof(p), "%s/made", t.link);
    ck_assert_sr_code(sr_path_open_dir(&fd, p, 1, &os, &e), e, SR_E_SYMLINK);
    ck_assert(!exists(t.outside, "made"));
    /* A missing folder: io.error with ENOENT; a file where a folder should be: ENOTDIR. */
    snprintf(p, sizeof(p), "%s/nope/deeper", t.real);
    ck_assert_sr_code(sr_path_open_dir(&fd, p, 1, &os, &e), e, SR_E_IO);
    ck_assert_int_eq(os, ENOENT);
    snprintf(p, sizeof(p), "%s/file", t.real);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_sr_code(sr_path_open_dir(&fd, p, 0, &os, &e), e, SR_E_IO);
    ck_assert_int_eq(os, ENOTDIR);
    ck_assert_sr_code(sr_path_open_dir(&fd, "", 0, &os, &e), e, SR_E_INVAL);
    drop_tree(&t);
}
END_TEST

/* The receiver's state folder below a linked folder: io.symlink, no state written outside. */
START_TEST(receiver_refuses_a_link_above_its_state_folder)
{
    tree t;
    make_tree(&t);
    sr_err e = SR_ERR_INIT;
    float local[4] = {0}, base[4] = {1, 2, 3, 4};
    sr_delta_tensor lt = {"w", "float32", 1, {4}, local, sizeof(local)};
    sr_delta_tensor bt = {"w", "float32", 1, {4}, base, sizeof(base)};
    sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
    o.fsync = 0;
    o.lock_wait_ms = 0;
    char state[256];
    snprintf(state, sizeof(state), "%s/state", t.link);
    sr_delta_receiver *rx = NULL;
    ck_assert_sr_code(sr_delta_receiver_new(&rx, state, &lt, 1, &bt, 1, &o, &e), e, SR_E_SYMLINK);
    ck_assert_ptr_null(rx);
    ck_assert(!exists(t.outside, "state"));
    /* The same receiver under the real folder works. */
    snprintf(state, sizeof(state), "%s/state", t.real);
    ck_assert_sr_ok(sr_delta_receiver_new(&rx, state, &lt, 1, &bt, 1, &o, &e), e);
    ck_assert_sr_ok(sr_delta_receiver_reset(rx, &e), e);
    ck_assert(exists(state, "state.json"));
    /* A fetch whose sync_dir sits below the link: refused before anything is read there. */
    char sync[256];
    snprintf(sync, sizeof(sync), "%s/sync", t.link);
    ck_assert_int_eq(mkdir(sync, 0755), 0);
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, sync, 1, &e), e, SR_E_SYMLINK);
    sr_delta_receiver_free(rx);
    drop_tree(&t);
}
END_TEST

/* A checkpoint folder below a linked folder: io.symlink (before: opened, then "no files"). */
START_TEST(checkpoint_reader_refuses_a_link_above_its_folder)
{
    tree t;
    make_tree(&t);
    sr_err e = SR_ERR_INIT;
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/ckpt", t.outside);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(dir, sizeof(dir), "%s/ckpt", t.link);
    sr_st_checkpoint *c = NULL;
    ck_assert_sr_code(sr_st_checkpoint_open(&c, dir, &e), e, SR_E_SYMLINK);
    ck_assert_ptr_null(c);
    /* Through the real path the (empty) folder is read and found wanting. */
    snprintf(dir, sizeof(dir), "%s/ckpt", t.outside);
    ck_assert_sr_code(sr_st_checkpoint_open(&c, dir, &e), e, SR_E_ST_CHECKPOINT);
    drop_tree(&t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("path");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, open_dir_follows_no_link_in_any_component);
    tcase_add_test(tc, receiver_refuses_a_link_above_its_state_folder);
    tcase_add_test(tc, checkpoint_reader_refuses_a_link_above_its_folder);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
