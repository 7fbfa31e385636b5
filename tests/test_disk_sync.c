/* unit.disk_sync: issue #20's data plane on real files: the trainer writes version v of its
 * weights as a safetensors checkpoint folder (harness/sync/checkpoint.h) and a mock engine loads
 * it (sr_engine_load_disk): afterwards the engine reports v and its fingerprints are the
 * trainer's; a checkpoint that lacks, adds or changes a tensor is refused by name and leaves the
 * engine on its old version and fingerprints. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/gen.h"
#include "spec/engine_config.h"
#include "sr_delta.h"
#include "sr_safetensors.h"
#include "sr_test.h"
#include "sr_weights.h"
#include "sync/checkpoint.h"

#define CONFIG                                                                                     \
    "{\"seed\":5,\"model\":{\"vocab\":1000,\"layers\":3,\"experts\":16,\"topk\":2,\"eos_id\":-1}," \
    "\"weights\":{\"total_bytes\":2097152,\"expert_tensors\":4}%s}"

typedef struct fixture {
    sr_engine_config cfg;
    sr_engine *e;
    char dir[64];
} fixture;

/* An engine of CONFIG plus `extra` (may be NULL; one %s in it becomes the fresh folder's path). */
static void setup(fixture *x, const char *extra)
{
    snprintf(x->dir, sizeof x->dir, "/tmp/sr_disk_sync_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(x->dir));
    char more[256], text[1024];
    snprintf(more, sizeof more, extra ? extra : "", x->dir);
    snprintf(text, sizeof text, CONFIG, more);
    sr_err err = SR_ERR_INIT;
    sr_engine_config_defaults(&x->cfg);
    ck_assert_sr_ok(sr_engine_config_parse(&x->cfg, text, strlen(text), "test", 0, &err), err);
    ck_assert_sr_ok(sr_engine_new(&x->e, &x->cfg, &err), err);
}

static void teardown(fixture *x)
{
    sr_engine_free(x->e);
    sr_engine_config_release(&x->cfg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", x->dir);
    ck_assert_int_eq(system(cmd), 0);
}

static sr_weights *trainer_at(const fixture *x, int64_t v)
{
    sr_weights_spec spec = sr_engine_config_weights(&x->cfg);
    sr_weights *w = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_new(&w, &spec, v, &err), err);
    return w;
}

/* The engine's version and fingerprints equal the trainer's `w` (at version v). */
static void assert_engine_holds(const fixture *x, const sr_weights *w, int64_t v)
{
    sr_gen_weights cur, prev;
    int has_prev;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_weights_now(x->e, &cur, &prev, &has_prev, &err), err);
    uint64_t g, l[8];
    sr_weights_fingerprints(&g, l, w);
    ck_assert_int_eq(cur.version, v);
    ck_assert_uint_eq(cur.global_fp, g);
    for (int i = 0; i < x->cfg.num_layers; i++)
        ck_assert_uint_eq(cur.layer_fps[i], l[i]);
    sr_gen_weights_release(&cur);
    sr_gen_weights_release(&prev); /* allocated whether or not there was one */
}

START_TEST(load_versions_from_disk)
{
    fixture x;
    setup(&x, NULL);
    sr_err err = SR_ERR_INIT;
    sr_weights *w0 = trainer_at(&x, 0);
    assert_engine_holds(&x, w0, 0);
    /* version 3 in one file, version 4 in three shards, version 7 named by its metadata only */
    int64_t vs[3] = {3, 4, 7}, targets[3] = {3, 4, -1};
    int shards[3] = {1, 3, 2};
    for (int k = 0; k < 3; k++) {
        sr_weights *w = trainer_at(&x, vs[k]);
        char path[256];
        ck_assert_sr_ok(
            sr_sync_write_checkpoint(path, sizeof path, w, x.dir, vs[k], shards[k], 2, &err), err);
        char want[128];
        snprintf(want, sizeof want, "%s/v%lld", x.dir, (long long)vs[k]);
        ck_assert_str_eq(path, want);
        int64_t v = -2;
        ck_assert_sr_ok(sr_engine_load_disk(x.e, path, targets[k], NULL, &v, &err), err);
        ck_assert_int_eq(v, vs[k]);
        assert_engine_holds(&x, w, vs[k]);
        /* the same version cannot be written twice */
        ck_assert_sr_code(sr_sync_write_checkpoint(NULL, 0, w, x.dir, vs[k], 1, 1, &err), err,
                          SR_E_IO);
        sr_weights_free(w);
    }
    sr_weights_free(w0);
    teardown(&x);
}
END_TEST

/* Writes the trainer's tensors at version v as `name` under x->dir, after `edit` changed them. */
static void write_edited(char *path, size_t cap, const fixture *x, const sr_weights *w,
                         const char *name, int edit)
{
    size_t n = sr_weights_count(w);
    sr_st_in *t = calloc(n + 1, sizeof(*t));
    sr_weights_info *info = calloc(n, sizeof(*info));
    static const int64_t one[1] = {1};
    static const unsigned char byte[1] = {7};
    sr_err err = SR_ERR_INIT;
    for (size_t i = 0; i < n; i++) {
        ck_assert_sr_ok(sr_weights_tensor(&info[i], w, i, &err), err);
        t[i] =
            (sr_st_in){info[i].name,  sr_st_dtype_of(info[i].dtype), 2, info[i].shape, info[i].data,
                       info[i].nbytes};
    }
    size_t m = n;
    if (edit == 0) /* drop the last tensor */
        m = n - 1;
    else if (edit == 1) /* one tensor more */
        t[m++] = (sr_st_in){"zz.extra", SR_ST_U8, 1, one, byte, 1};
    else if (edit == 2) /* same bytes, another dtype: I16 for F16 */
        for (size_t i = 0; i < n; i++)
            if (t[i].dtype == SR_ST_F16) {
                t[i].dtype = SR_ST_I16;
                break;
            }
    snprintf(path, cap, "%s/%s", x->dir, name);
    ck_assert_sr_ok(sr_st_write_checkpoint(path, t, m, NULL, 0, 1, 1, &err), err);
    free(t);
    free(info);
}

START_TEST(bad_checkpoints_leave_the_engine_alone)
{
    fixture x;
    setup(&x, NULL);
    sr_err err = SR_ERR_INIT;
    sr_weights *w2 = trainer_at(&x, 2), *w5 = trainer_at(&x, 5);
    char path[256];
    int64_t v;
    ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof path, w2, x.dir, 2, 1, 1, &err), err);
    ck_assert_sr_ok(sr_engine_load_disk(x.e, path, 2, NULL, &v, &err), err);
    static const int want[3] = {SR_E_ST_MISSING, SR_E_ST_EXTRA, SR_E_ST_MISMATCH};
    static const char *const names[3] = {"missing", "extra", "dtype"};
    for (int k = 0; k < 3; k++) {
        write_edited(path, sizeof path, &x, w5, names[k], k);
        ck_assert_sr_code(sr_engine_load_disk(x.e, path, 5, NULL, &v, &err), err, want[k]);
        ck_assert_int_eq(v, 2);
        assert_engine_holds(&x, w2, 2);
    }
    /* the request names another version than the checkpoint's metadata */
    ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof path, w5, x.dir, 5, 1, 1, &err), err);
    ck_assert_sr_code(sr_engine_load_disk(x.e, path, 6, NULL, &v, &err), err, SR_E_ST_MISMATCH);
    assert_engine_holds(&x, w2, 2);
    /* no checkpoint there, and a malformed file */
    ck_assert_sr_code(sr_engine_load_disk(x.e, x.dir, 5, NULL, &v, &err), err, SR_E_ST_CHECKPOINT);
    char file[300];
    snprintf(file, sizeof file, "%s/model.safetensors", path);
    ck_assert_int_eq(truncate(file, 100), 0);
    ck_assert_sr_code(sr_engine_load_disk(x.e, path, 5, NULL, &v, &err), err,
                      SR_E_ST_HEADER_LENGTH);
    assert_engine_holds(&x, w2, 2);
    /* and the engine still loads a good one afterwards */
    ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof path, w5, x.dir, 15, 1, 1, &err), err);
    ck_assert_sr_ok(sr_engine_load_disk(x.e, path, -1, NULL, &v, &err), err);
    ck_assert_int_eq(v, 15);
    assert_engine_holds(&x, w5, 15);
    sr_weights_free(w2);
    sr_weights_free(w5);
    teardown(&x);
}
END_TEST

START_TEST(weights_faults_apply_to_disk_loads)
{
    fixture x;
    setup(&x, NULL);
    sr_err err = SR_ERR_INIT;
    sr_weights *w0 = trainer_at(&x, 0), *w3 = trainer_at(&x, 3);
    sr_fault f;
    memset(&f, 0, sizeof f);
    f.kind = SR_FK_CHECKSUM_MISMATCH;
    char path[256];
    int64_t v;
    ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof path, w3, x.dir, 3, 1, 1, &err), err);
    ck_assert_sr_code(sr_engine_load_disk(x.e, path, 3, &f, &v, &err), err, SR_E_DELTA_CHECKSUM);
    assert_engine_holds(&x, w0, 0);
    /* partial_weight_apply on layer slot 1: that slot keeps version 0's bytes, the rest is v3 */
    f.kind = SR_FK_PARTIAL_WEIGHT_APPLY;
    f.layers[0] = 1;
    f.n_layers = 1;
    ck_assert_sr_ok(sr_engine_load_disk(x.e, path, 3, &f, &v, &err), err);
    ck_assert_int_eq(v, 3);
    sr_gen_weights cur, prev;
    int has_prev;
    ck_assert_sr_ok(sr_engine_weights_now(x.e, &cur, &prev, &has_prev, &err), err);
    uint64_t g0, l0[8], g3, l3[8];
    sr_weights_fingerprints(&g0, l0, w0);
    sr_weights_fingerprints(&g3, l3, w3);
    ck_assert_uint_eq(cur.global_fp, g3);
    ck_assert_uint_eq(cur.layer_fps[0], l3[0]);
    ck_assert_uint_eq(cur.layer_fps[1], l0[1]);
    ck_assert_uint_ne(l0[1], l3[1]);
    ck_assert_uint_eq(cur.layer_fps[2], l3[2]);
    sr_gen_weights_release(&cur);
    sr_gen_weights_release(&prev); /* allocated whether or not there was one */
    /* loading the same folder again without the fault completes it */
    ck_assert_sr_ok(sr_engine_load_disk(x.e, path, 3, NULL, &v, &err), err);
    assert_engine_holds(&x, w3, 3);
    sr_weights_free(w0);
    sr_weights_free(w3);
    teardown(&x);
}
END_TEST

/* The trainer's set as the delta store sees it (views into w). */
static sr_delta_tensor *delta_view(const sr_weights *w)
{
    size_t n = sr_weights_count(w);
    sr_delta_tensor *t = calloc(n, sizeof(*t));
    for (size_t i = 0; i < n; i++) {
        sr_weights_info x;
        sr_weights_tensor(&x, w, i, NULL);
        t[i] = (sr_delta_tensor){
            x.name, sr_dtype_name(x.dtype), 2, {x.shape[0], x.shape[1]}, (void *)x.data, x.nbytes};
    }
    return t;
}

/* A disk load between two delta syncs: the stage then holds bytes the delta receiver did not
 * write, so its next fetch must start over from version 0 rather than patch them. */
START_TEST(delta_after_disk_resets_the_receiver)
{
    fixture x;
    char sync[160];
    setup(&x, ",\"server\":{\"sync_dirs\":[\"%s\"]}");
    snprintf(sync, sizeof sync, "%s/sync", x.dir);
    ck_assert_int_eq(mkdir(sync, 0755), 0);
    sr_err err = SR_ERR_INIT;
    sr_weights *w[3] = {trainer_at(&x, 0), trainer_at(&x, 1), trainer_at(&x, 2)};
    sr_delta_tensor *base = delta_view(w[0]);
    size_t n = sr_weights_count(w[0]);
    sr_delta_publisher *pub = NULL;
    sr_delta_publish_opts o = SR_DELTA_PUBLISH_OPTS_INIT;
    ck_assert_sr_ok(sr_delta_publisher_new(&pub, sync, base, n, &o, &err), err);
    for (int v = 1; v <= 2; v++) {
        sr_delta_tensor *t = delta_view(w[v]);
        sr_delta_publish_result r;
        ck_assert_sr_ok(sr_delta_publish(&r, pub, t, n, 1, &err), err);
        free(t);
    }
    int64_t got;
    /* The delta receiver exists after init only (SkyRL's DeltaWeightTransferEngine). */
    ck_assert_sr_ok(sr_engine_sync_call(x.e, SR_SC_INIT, NULL, &err), err);
    ck_assert_sr_ok(sr_engine_fetch(x.e, 1, sync, NULL, &got, &err), err);
    ck_assert_sr_ok(sr_engine_update_delta(x.e, 1, sync, NULL, &got, &err), err);
    assert_engine_holds(&x, w[1], 1);
    sr_weights *w9 = trainer_at(&x, 9);
    char path[256];
    ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof path, w9, x.dir, 9, 2, 2, &err), err);
    ck_assert_sr_ok(sr_engine_load_disk(x.e, path, 9, NULL, &got, &err), err);
    assert_engine_holds(&x, w9, 9);
    ck_assert_sr_ok(sr_engine_fetch(x.e, 2, sync, NULL, &got, &err), err);
    ck_assert_int_eq(got, 2);
    ck_assert_sr_ok(sr_engine_update_delta(x.e, 2, sync, NULL, &got, &err), err);
    assert_engine_holds(&x, w[2], 2);
    sr_delta_publisher_free(pub);
    free(base);
    for (int v = 0; v < 3; v++)
        sr_weights_free(w[v]);
    sr_weights_free(w9);
    teardown(&x);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("disk_sync");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, load_versions_from_disk);
    tcase_add_test(tc, bad_checkpoints_leave_the_engine_alone);
    tcase_add_test(tc, weights_faults_apply_to_disk_loads);
    tcase_add_test(tc, delta_after_disk_resets_the_receiver);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
