/*
 * The file system surface under sync folders (symbolic links, one local checkpoint folder
 * shared by two engines), with real files and, for the engine, real HTTP to engine child
 * processes:
 *   - a symlink planted at every name the delta receiver (lock, state.json, .state.json.tmp,
 *     receiver-<id>, the version folder, manifest.json, a payload file), the delta publisher
 *     (version folder, payload and manifest files and their temporary names) and the checkpoint
 *     writer (v<N>, v<N>.partial) use is refused as io.symlink, and the file or folder it points
 *     to outside is neither changed nor created;
 *   - /update_weights_from_disk refuses a symlinked model.safetensors or shard (io.symlink);
 *   - two engines sharing one local_checkpoint_dir (SkyRL's default) both reach the version:
 *     a fetch waits for the folder's lock, and the second engine's fetch leaves a folder that
 *     already holds the version as it is.
 * Each failed before the fix (see each test's comment).
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "engine_util.h"
#include "sr_delta.h"
#include "sync/checkpoint.h"

#define CHECK "\"check\":\"io.symlink\""

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* 1 when the file holds exactly `text`. */
static int holds(const char *path, const char *text)
{
    char buf[256] = {0};
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

/* Runs a shell command built from fmt (paths are single-quoted by the callers). */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* Number of entries of a folder, . and .. excluded. */
static int entries(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    int n = -1;
    ck_assert_int_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* base/ (the engines' sync_dirs) with base/sync in it, and out/ outside every sync folder. */
typedef struct fix {
    char base[64], sync[96], out[64];
} fix;

static void fix_init(fix *f)
{
    snprintf(f->base, sizeof(f->base), "/tmp/sr-safety-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->base));
    snprintf(f->out, sizeof(f->out), "/tmp/sr-safety-out-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->out));
    snprintf(f->sync, sizeof(f->sync), "%s/sync", f->base);
    ck_assert_int_eq(mkdir(f->sync, 0700), 0);
}

static void fix_free(fix *f)
{
    sh("rm -rf '%s' '%s'", f->base, f->out);
}

static void start_engine(eng *e, const fix *f, const char *id, const char *dialect)
{
    char cfg[512];
    snprintf(cfg, sizeof(cfg),
             "{\"id\":\"%s\",%s\"seed\":3,\"weights\":{\"total_bytes\":1048576},"
             "\"server\":{\"sync_dirs\":[\"%s\"]}}",
             id, dialect, f->base);
    eng_start(e, cfg);
}

#define WCFG "{\"seed\":3,\"weights\":{\"total_bytes\":1048576}}"

static sr_weights *weights_at(int64_t v)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, WCFG, strlen(WCFG), "t", 0, &err), err);
    sr_weights_spec ws = sr_engine_config_weights(&c);
    sr_weights *w;
    ck_assert_sr_ok(sr_weights_new(&w, &ws, v, &err), err);
    sr_engine_config_release(&c);
    return w;
}

static sr_delta_tensor *view_of(const sr_weights *w)
{
    sr_err err = SR_ERR_INIT;
    size_t n = sr_weights_count(w);
    sr_delta_tensor *v = calloc(n, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        sr_weights_info x;
        ck_assert_sr_ok(sr_weights_tensor(&x, w, i, &err), err);
        v[i] = (sr_delta_tensor){
            x.name, sr_dtype_name(x.dtype), 2, {x.shape[0], x.shape[1]}, (void *)x.data, x.nbytes};
    }
    return v;
}

/* A publisher of the engine weights (version 0) into `dir`, and version 1's tensors. */
typedef struct pub {
    sr_weights *w[2];
    sr_delta_tensor *view[2];
    sr_delta_publisher *p;
    size_t n;
} pub;

static void pub_new(pub *p, const char *dir)
{
    sr_err err = SR_ERR_INIT;
    for (int v = 0; v < 2; v++) {
        p->w[v] = weights_at(v);
        p->view[v] = view_of(p->w[v]);
    }
    p->n = sr_weights_count(p->w[0]);
    sr_delta_publish_opts o = SR_DELTA_PUBLISH_OPTS_INIT;
    o.fsync = 0;
    ck_assert_sr_ok(sr_delta_publisher_new(&p->p, dir, p->view[0], p->n, &o, &err), err);
}

static int pub_v1(pub *p, sr_err *err)
{
    sr_delta_publish_result r;
    return sr_delta_publish(&r, p->p, p->view[1], p->n, 1, err);
}

static void pub_free(pub *p)
{
    sr_delta_publisher_free(p->p);
    for (int v = 0; v < 2; v++) {
        free(p->view[v]);
        sr_weights_free(p->w[v]);
    }
}

static void publish_v1(const char *dir)
{
    pub p;
    pub_new(&p, dir);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(pub_v1(&p, &err), err);
    pub_free(&p);
}

/* POST /fetch_weights of version 1 from f->sync: the status and body. */
static void fetch_v1(const eng *e, const fix *f, long status, const char *needle)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", f->sync);
    eng_expect(e, "POST", "/fetch_weights", body, status, needle);
}

/* Before the fix the receiver opened lock (O_CREAT) and .state.json.tmp (O_CREAT | O_TRUNC)
 * through symlinks and followed a symlinked receiver-<id>: an outside file was created or
 * overwritten. Now every one of its names, in receiver-<id> and in a local_checkpoint_dir, is
 * io.symlink, the outside file keeps its bytes and a missing one is not created; the version
 * folder, manifest and payload it reads are refused the same way. */
START_TEST(receiver_refuses_every_planted_symlink)
{
    fix f;
    fix_init(&f);
    publish_v1(f.sync);
    eng e;
    start_engine(&e, &f, "k", "");
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    char rx[160], lcd[160], link[256], victim[160], absent[160];
    snprintf(rx, sizeof(rx), "%s/receiver-k", f.sync);
    snprintf(lcd, sizeof(lcd), "%s/lcd", f.base);
    snprintf(victim, sizeof(victim), "%s/victim", f.out);
    snprintf(absent, sizeof(absent), "%s/absent", f.out);
    const char *names[] = {"lock", "state.json", ".state.json.tmp"};
    for (int where = 0; where < 2; where++) {
        const char *dir = where ? lcd : rx;
        if (where) {
            char body[300];
            snprintf(body, sizeof(body), "{\"init_info\":{\"local_checkpoint_dir\":\"%s\"}}", lcd);
            eng_expect(&e, "POST", "/init_weight_transfer_engine", body, 200, NULL);
        }
        for (int i = 0; i < 3; i++)
            for (int missing = 0; missing < 2; missing++) {
                sh("rm -rf '%s' && mkdir '%s'", dir, dir);
                spit(victim, "keep");
                snprintf(link, sizeof(link), "%s/%s", dir, names[i]);
                ck_assert_int_eq(symlink(missing ? absent : victim, link), 0);
                fetch_v1(&e, &f, 403, CHECK);
                ck_assert_msg(holds(victim, "keep"), "%s: the outside file changed", link);
                ck_assert_msg(!exists(absent), "%s: the outside file was created", link);
            }
        /* Without the link the same fetch succeeds. */
        sh("rm -rf '%s' && mkdir '%s'", dir, dir);
        fetch_v1(&e, &f, 200, "\"fetched_version\":1");
    }
    /* The state folder itself a symlink to an outside folder. */
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    sh("rm -rf '%s' && find '%s' -mindepth 1 -delete", rx, f.out);
    ck_assert_int_eq(symlink(f.out, rx), 0);
    fetch_v1(&e, &f, 403, CHECK);
    ck_assert_int_eq(entries(f.out), 0);
    ck_assert_int_eq(unlink(rx), 0);
    /* What the receiver reads: the version folder, its manifest and a payload file. */
    char vdir[160], moved[160];
    snprintf(vdir, sizeof(vdir), "%s/delta-00000001", f.sync);
    snprintf(moved, sizeof(moved), "%s/delta-00000001", f.out);
    const char *reads[] = {"", "/manifest.json", "/payload-000000.srdp"};
    for (int i = 0; i < 3; i++) {
        char from[256], to[256];
        snprintf(from, sizeof(from), "%s%s", vdir, reads[i]);
        snprintf(to, sizeof(to), "%s%s", moved, reads[i]);
        sh("rm -rf '%s' && cp -a '%s' '%s'", moved, vdir, moved);
        sh("rm -rf '%s' && ln -s '%s' '%s'", from, to, from);
        fetch_v1(&e, &f, 403, CHECK);
        sh("rm -f '%s' && cp -a '%s' '%s'", from, to, from);
    }
    fetch_v1(&e, &f, 200, "\"fetched_version\":1");
    eng_expect(&e, "POST", "/skyrl/v1/generate",
               "{\"sampling_params\":{\"max_tokens\":2},\"token_ids\":[1,2]}", 200, NULL);
    eng_stop(&e);
    fix_free(&f);
}
END_TEST

/* Before the fix the publisher created its files by path (O_CREAT | O_TRUNC through a symlinked
 * temporary name, a symlinked version folder followed). Now every name is io.symlink and the
 * outside file keeps its bytes, a missing one is not created, and after the link is gone the
 * same publish succeeds. */
START_TEST(publisher_refuses_every_planted_symlink)
{
    fix f;
    fix_init(&f);
    pub p;
    pub_new(&p, f.sync);
    sr_err err = SR_ERR_INIT;
    char vdir[160], victim[160], absent[160], link[256];
    snprintf(vdir, sizeof(vdir), "%s/delta-00000001", f.sync);
    snprintf(victim, sizeof(victim), "%s/victim", f.out);
    snprintf(absent, sizeof(absent), "%s/absent", f.out);
    /* The version folder a symlink to an outside folder. */
    ck_assert_int_eq(symlink(f.out, vdir), 0);
    ck_assert_sr_code(pub_v1(&p, &err), err, SR_E_SYMLINK);
    ck_assert_int_eq(entries(f.out), 0);
    ck_assert_int_eq(unlink(vdir), 0);
    const char *names[] = {".payload-000000.srdp.tmp", "payload-000000.srdp", ".manifest.json.tmp",
                           "manifest.json"};
    for (int i = 0; i < 4; i++)
        for (int missing = 0; missing < 2; missing++) {
            sh("rm -rf '%s' && mkdir '%s'", vdir, vdir);
            spit(victim, "keep");
            snprintf(link, sizeof(link), "%s/%s", vdir, names[i]);
            ck_assert_int_eq(symlink(missing ? absent : victim, link), 0);
            ck_assert_sr_code(pub_v1(&p, &err), err, SR_E_SYMLINK);
            ck_assert_msg(holds(victim, "keep"), "%s: the outside file changed", link);
            ck_assert_msg(!exists(absent), "%s: the outside file was created", link);
        }
    sh("rm -rf '%s' && mkdir '%s'", vdir, vdir);
    ck_assert_sr_ok(pub_v1(&p, &err), err);
    pub_free(&p);
    fix_free(&f);
}
END_TEST

/* Before the fix the checkpoint writer emptied a v<N>.partial by opendir() of its path: a
 * symlink there to an outside folder had every file in that folder unlinked. Now v<N> and
 * v<N>.partial as symlinks are io.symlink with the outside folder untouched, and a link left
 * inside a crashed writer's v<N>.partial is removed, not followed. */
START_TEST(checkpoint_writer_refuses_planted_symlinks)
{
    fix f;
    fix_init(&f);
    sr_weights *w = weights_at(1);
    sr_err err = SR_ERR_INIT;
    char v1[160], partial[160], victim[160], link[256];
    snprintf(v1, sizeof(v1), "%s/v1", f.sync);
    snprintf(partial, sizeof(partial), "%s/v1.partial", f.sync);
    snprintf(victim, sizeof(victim), "%s/victim", f.out);
    spit(victim, "keep");
    ck_assert_int_eq(symlink(f.out, v1), 0);
    ck_assert_sr_code(sr_sync_write_checkpoint(NULL, 0, w, f.sync, 1, 1, 1, &err), err,
                      SR_E_SYMLINK);
    ck_assert_int_eq(unlink(v1), 0);
    ck_assert_int_eq(symlink(f.out, partial), 0);
    ck_assert_sr_code(sr_sync_write_checkpoint(NULL, 0, w, f.sync, 1, 2, 1, &err), err,
                      SR_E_SYMLINK);
    ck_assert_msg(holds(victim, "keep"), "the outside folder was emptied");
    ck_assert_int_eq(unlink(partial), 0);
    ck_assert_int_eq(mkdir(partial, 0755), 0);
    snprintf(link, sizeof(link), "%s/model.safetensors", partial);
    ck_assert_int_eq(symlink(victim, link), 0);
    ck_assert_sr_ok(sr_sync_write_checkpoint(NULL, 0, w, f.sync, 1, 1, 1, &err), err);
    ck_assert_msg(holds(victim, "keep"), "the outside file changed");
    ck_assert(!exists(partial));
    sr_weights_free(w);
    fix_free(&f);
}
END_TEST

/* Before the fix /update_weights_from_disk opened model.safetensors and shards by path: a
 * symlink to a checkpoint outside server.sync_dirs was loaded (200). Now it is 400 io.symlink
 * and the engine stays on its version; the real files load. Version v is written in v shards. */
START_TEST(disk_load_refuses_symlinked_files)
{
    fix f;
    fix_init(&f);
    sr_weights *w = weights_at(3);
    sr_err err = SR_ERR_INIT;
    char outside[160], inside[160], req[400], link[300], real[300];
    for (int shards = 1; shards <= 2; shards++) {
        ck_assert_sr_ok(
            sr_sync_write_checkpoint(outside, sizeof(outside), w, f.out, shards, shards, 1, &err),
            err);
        ck_assert_sr_ok(
            sr_sync_write_checkpoint(inside, sizeof(inside), w, f.sync, shards, shards, 1, &err),
            err);
    }
    eng e;
    start_engine(&e, &f, "d", "\"sync_dialect\":\"sglang\",");
    const char *files[] = {"model.safetensors", "model-00002-of-00002.safetensors"};
    for (int shards = 1; shards <= 2; shards++) {
        snprintf(inside, sizeof(inside), "%s/v%d", f.sync, shards);
        snprintf(link, sizeof(link), "%s/%s", inside, files[shards - 1]);
        snprintf(real, sizeof(real), "%s/v%d/%s", f.out, shards, files[shards - 1]);
        sh("mv '%s' '%s.real'", link, link);
        ck_assert_int_eq(symlink(real, link), 0);
        snprintf(req, sizeof(req), "{\"model_path\":\"%s\",\"weight_version\":\"%d\"}", inside,
                 shards);
        eng_expect(&e, "POST", "/update_weights_from_disk", req, 400, CHECK);
        char want[64];
        snprintf(want, sizeof(want), "{\"weight_version\":\"%d\"}", shards - 1);
        eng_expect(&e, "GET", "/get_weight_version", NULL, 200, want);
        ck_assert_int_eq(unlink(link), 0);
        sh("mv '%s.real' '%s'", link, link);
        eng_expect(&e, "POST", "/update_weights_from_disk", req, 200, "\"success\":true");
    }
    eng_stop(&e);
    sr_weights_free(w);
    fix_free(&f);
}
END_TEST

typedef struct bg_fetch {
    const eng *e;
    const fix *f;
    hresp r;
    atomic_int returned; /* set once the fetch has its answer */
} bg_fetch;

static void *bg_fetch_run(void *arg)
{
    bg_fetch *b = arg;
    char body[256];
    snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", b->f->sync);
    http_req(&b->r, NULL, b->e, "POST", "/fetch_weights", body, NULL, 60000);
    atomic_store(&b->returned, 1);
    return NULL;
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_ino;
}

static void same_fingerprint(const eng *a, const eng *b)
{
    hresp ra, rb;
    http_get(&ra, a, "/syncroll/v1/state");
    http_get(&rb, b, "/syncroll/v1/state");
    const char *fa = strstr(ra.body.data, "\"fingerprints\":");
    const char *fb = strstr(rb.body.data, "\"fingerprints\":");
    ck_assert_ptr_nonnull(fa);
    ck_assert_ptr_nonnull(fb);
    ck_assert_msg(strncmp(fa, fb, 60) == 0, "fingerprints differ: %.60s / %.60s", fa, fb);
    hresp_free(&ra);
    hresp_free(&rb);
}

/* SkyRL's default puts every engine of a node in one local checkpoint folder. Before
 * the fix the second engine's fetch failed at once with 500 "cannot lock" while the first held
 * the lock, and its receiver rewrote the folder's state when it started. Now, with SkyRL's
 * call sequence (init on both with the same local_checkpoint_dir, fetch on both, update on
 * both): a fetch waits for the lock, the second engine's fetch leaves the folder's state.json
 * as it is (same inode: not rewritten), both engines reach version 1 with the same weights. */
START_TEST(two_engines_share_one_local_checkpoint_folder)
{
    fix f;
    fix_init(&f);
    publish_v1(f.sync);
    eng a, b;
    start_engine(&a, &f, "a", "");
    start_engine(&b, &f, "b", "");
    char lcd[160], body[400], state[200], lock[200];
    snprintf(lcd, sizeof(lcd), "%s/local_ckpt", f.base);
    snprintf(state, sizeof(state), "%s/state.json", lcd);
    snprintf(lock, sizeof(lock), "%s/lock", lcd);
    snprintf(body, sizeof(body),
             "{\"init_info\":{\"base_model_path\":\"m\",\"local_checkpoint_dir\":\"%s\"}}", lcd);
    eng_expect(&a, "POST", "/init_weight_transfer_engine", body, 200, NULL);
    eng_expect(&b, "POST", "/init_weight_transfer_engine", body, 200, NULL);
    /* Engine a's fetch finds the folder's lock held (by this test, as by another engine's
     * fetch) and waits for it. */
    ck_assert_int_eq(mkdir(lcd, 0755), 0);
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);
    bg_fetch bg = {&a, &f, {0}, 0};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, bg_fetch_run, &bg), 0);
    /* The nap gives the fetch time to reach the lock. What is asserted is the order: the
     * fetch has not returned while the lock is still held (a fetch that fails at once on a
     * held lock has returned by now), and it then returns with the version. */
    struct timespec nap = {0, 300 * 1000000L};
    nanosleep(&nap, NULL);
    ck_assert_msg(!atomic_load(&bg.returned),
                  "the fetch returned while the folder's lock was still held");
    close(fd);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(bg.r.status == 200 && strstr(bg.r.body.data, "\"fetched_version\":1"),
                  "fetch while the lock was held: %ld %s", bg.r.status, bg.r.body.data);
    hresp_free(&bg.r);
    ino_t before = inode_of(state);
    fetch_v1(&b, &f, 200, "\"fetched_version\":1");
    ck_assert_msg(inode_of(state) == before, "the second engine rewrote %s", state);
    snprintf(body, sizeof(body),
             "{\"update_info\":{\"target_version\":1,\"version\":1,\"sync_dir\":\"%s\"}}", f.sync);
    eng_expect(&a, "POST", "/update_weights", body, 200, "{\"version\":1}");
    eng_expect(&b, "POST", "/update_weights", body, 200, "{\"version\":1}");
    same_fingerprint(&a, &b);
    const char *gen = "{\"sampling_params\":{\"max_tokens\":2},\"token_ids\":[1,2]}";
    eng_expect(&a, "POST", "/skyrl/v1/generate", gen, 200, "\"weight_version\":1");
    eng_expect(&b, "POST", "/skyrl/v1/generate", gen, 200, "\"weight_version\":1");
    eng_stop(&a);
    eng_stop(&b);
    fix_free(&f);
}
END_TEST

static Suite *safety_suite(void)
{
    Suite *s = suite_create("sync_safety");
    TCase *tc = tcase_create("sync_folders");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, receiver_refuses_every_planted_symlink);
    tcase_add_test(tc, publisher_refuses_every_planted_symlink);
    tcase_add_test(tc, checkpoint_writer_refuses_planted_symlinks);
    tcase_add_test(tc, disk_load_refuses_symlinked_files);
    tcase_add_test(tc, two_engines_share_one_local_checkpoint_folder);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(safety_suite)
