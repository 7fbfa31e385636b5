/*
 * bench_disk_sync: issue #20's disk transport, SGLang's /update_weights_from_disk data plane:
 * the trainer writes a version of its weights as a safetensors checkpoint folder
 * (harness/sync/checkpoint.h) and a mock engine loads it (sr_engine_load_disk), 1 GiB of weights.
 *
 * Weights: the synthetic MoE set of lib/sr_weights at BENCH_DISK_MIB (default 1024, at most
 * 1024) MiB, 4 layers, 8 expert tensors a layer. The trainer holds two contents, versions 1 and
 * 2, and every repetition writes the next version number with them in turn, so every load
 * changes the engine's bytes (the commit copies the ~3/4 of tensors that differ).
 *
 * write:       sr_sync_write_checkpoint: 2 shards written by 2 threads, each file fsynced, the
 *              folder fsynced, renamed, its parent fsynced (a new folder every repetition).
 * apply:       sr_engine_load_disk of that folder with the engine's pool: min(tensors,
 *              pool_workers(cap 32)) = 2 workers on this 2-core machine; includes opening and
 *              parsing both headers, matching every tensor, pread into the stage (the bytes are
 *              in the page cache: the engine runs on the trainer's node), the commit into the
 *              model (compare, copy, xxh3-128 of each copied tensor, fingerprints). After each
 *              load the engine's fingerprints must equal the trainer's (else the bench fails).
 * write_apply: the two, back to back, per repetition (the time from the trainer's bytes to the
 *              engine serving them).
 * floor:       write(2) of the same bytes to one file and fsync, the storage's own limit.
 * Two places: "tmp" ($BENCH_DISK_DIR, else $TMPDIR, else /tmp: the disk here) and "shm"
 * (/dev/shm, tmpfs, where fsync costs nothing; skipped if it is missing). Every line carries
 * gbps= (10^9 bytes of weights per second; target: write_apply >= 1 GB/s with 2 workers).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "engine/engine.h"
#include "engine/engine_state.h"
#include "engine/gen.h"
#include "spec/engine_config.h"
#include "sr_weights.h"
#include "sync/checkpoint.h"

#define MAX_REPS 64

typedef struct disk_bench {
    sr_engine_config cfg;
    sr_engine *e;
    sr_weights *w[2];
    size_t total;
    char size_name[16]; /* "1GiB" or "<n>MiB": the requested budget */
    int reps;
    bench_stats mc;
    char base_name[64];
} disk_bench;

static double gbps(size_t bytes, bench_stats s)
{
    return (double)bytes / (s.median_ms * 1e6);
}

static void die(const char *what, const sr_err *err)
{
    fprintf(stderr, "bench_disk_sync: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

static void rm_tree(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_disk_sync: cannot remove %s\n", dir);
}

static void setup(disk_bench *d, size_t mib)
{
    char text[512];
    snprintf(text, sizeof(text),
             "{\"seed\":11,\"model\":{\"vocab\":1000,\"layers\":4,\"experts\":64,\"topk\":8,"
             "\"eos_id\":-1},\"weights\":{\"total_bytes\":%zu,\"expert_tensors\":8}}",
             mib << 20);
    sr_err err = SR_ERR_INIT;
    sr_engine_config_defaults(&d->cfg);
    if (sr_engine_config_parse(&d->cfg, text, strlen(text), "bench", 0, &err) ||
        sr_engine_new(&d->e, &d->cfg, &err))
        die("engine", &err);
    sr_weights_spec spec = sr_engine_config_weights(&d->cfg);
    for (int k = 0; k < 2; k++)
        if (sr_weights_new(&d->w[k], &spec, k + 1, &err))
            die("weights", &err);
    d->total = sr_weights_total_bytes(d->w[0]);
}

/* The engine holds the trainer's set w (fingerprints); exits otherwise. */
static void check_engine(const disk_bench *d, const sr_weights *w, int64_t v)
{
    sr_gen_weights cur, prev;
    int has_prev;
    sr_err err = SR_ERR_INIT;
    if (sr_engine_weights_now(d->e, &cur, &prev, &has_prev, &err))
        die("state", &err);
    uint64_t g, l[4];
    sr_weights_fingerprints(&g, l, w);
    int ok = cur.version == v && cur.global_fp == g;
    for (int i = 0; i < 4; i++)
        ok &= cur.layer_fps[i] == l[i];
    sr_gen_weights_release(&cur);
    if (has_prev)
        sr_gen_weights_release(&prev);
    if (!ok) {
        fprintf(stderr, "bench_disk_sync: version %lld: the engine's fingerprints differ\n",
                (long long)v);
        exit(1);
    }
}

/* write(2) + fsync of the trainer's bytes to one file in dir, timed; the storage's floor. */
static double floor_once(const disk_bench *d, const char *dir)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/floor.bin", dir);
    double t0 = bench_now_ms();
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int ok = fd >= 0;
    for (size_t i = 0; ok && i < sr_weights_count(d->w[0]); i++) {
        sr_weights_info t;
        sr_weights_tensor(&t, d->w[0], i, NULL);
        ok = write(fd, t.data, t.nbytes) == (ssize_t)t.nbytes;
    }
    ok = ok && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    double ms = bench_now_ms() - t0;
    unlink(p);
    if (!ok) {
        fprintf(stderr, "bench_disk_sync: cannot write %s\n", p);
        exit(1);
    }
    return ms;
}

static void run_place(disk_bench *d, const char *place, const char *root, int64_t *version)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/bench_disk_sync_XXXXXX", root);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    double wr[MAX_REPS], ap[MAX_REPS], both[MAX_REPS], fl[MAX_REPS], rd[MAX_REPS], cm[MAX_REPS];
    char prev[600] = "";
    /* one untimed warm-up round (page cache, stage allocation), then the repetitions */
    for (int r = -1; r < d->reps; r++) {
        sr_err err = SR_ERR_INIT;
        int64_t v = ++*version;
        const sr_weights *w = d->w[v % 2];
        char path[600];
        double t0 = bench_now_ms();
        if (sr_sync_write_checkpoint(path, sizeof(path), w, dir, v, 2, 2, &err))
            die("write", &err);
        double t1 = bench_now_ms();
        int64_t got;
        if (sr_engine_load_disk(d->e, path, v, NULL, &got, &err))
            die("load", &err);
        double t2 = bench_now_ms();
        check_engine(d, w, v);
        if (*prev)
            rm_tree(prev);
        snprintf(prev, sizeof(prev), "%s", path);
        if (r < 0)
            continue;
        pthread_mutex_lock(&d->e->mu);
        rd[r] = d->e->st.fetch_ms;
        cm[r] = d->e->st.commit_ms;
        pthread_mutex_unlock(&d->e->mu);
        wr[r] = t1 - t0;
        ap[r] = t2 - t1;
        both[r] = t2 - t0;
        fl[r] = floor_once(d, dir);
    }
    rm_tree(dir);
    bench_stats srd = bench_stats_of(rd, d->reps), scm = bench_stats_of(cm, d->reps);
    printf("# disk.apply.%s.%s: of it the pread into the stage %.1f ms, the commit into the model "
           "%.1f ms (medians)\n",
           d->size_name, place, srd.median_ms, scm.median_ms);
    char name[128];
    const char *what[4] = {"write", "apply", "write_apply", "floor.write_fsync"};
    double *ms[4] = {wr, ap, both, fl};
    for (int k = 0; k < 4; k++) {
        bench_stats s = bench_stats_of(ms[k], d->reps);
        snprintf(name, sizeof(name), "disk.%s.%s%s.%s", what[k], d->size_name,
                 k == 1 || k == 2 ? ".w2" : "", place);
        bench_report_ex(name, s, d->mc, d->base_name, "gbps=%.3f", gbps(d->total, s));
        printf("# %s: %.2f GB/s of weights\n", name, gbps(d->total, s));
    }
}

int main(void)
{
    const char *mib_env = getenv("BENCH_DISK_MIB");
    size_t mib =
        mib_env && atoi(mib_env) >= 1 && atoi(mib_env) <= 1024 ? (size_t)atoi(mib_env) : 1024;
    disk_bench d;
    memset(&d, 0, sizeof(d));
    d.reps = bench_reps(5);
    if (d.reps > MAX_REPS)
        d.reps = MAX_REPS;
    setup(&d, mib);
    if (mib == 1024)
        snprintf(d.size_name, sizeof(d.size_name), "1GiB");
    else
        snprintf(d.size_name, sizeof(d.size_name), "%zuMiB", mib);
    snprintf(d.base_name, sizeof(d.base_name), "memcpy_%zuMiB", d.total >> 20);
    d.mc = bench_memcpy(d.total, d.reps);
    printf("# disk: %zu tensors, %zu MiB of float16/float32 weights; 2 shards, 2 workers; %.2f "
           "GB/s memcpy\n",
           sr_weights_count(d.w[0]), d.total >> 20, gbps(d.total, d.mc));
    const char *root = getenv("BENCH_DISK_DIR");
    if (!root)
        root = getenv("TMPDIR");
    int64_t version = 0;
    run_place(&d, "tmp", root ? root : "/tmp", &version);
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
        run_place(&d, "shm", "/dev/shm", &version);
    else
        printf("# disk: /dev/shm is missing: the shm lines are skipped\n");
    sr_weights_free(d.w[0]);
    sr_weights_free(d.w[1]);
    sr_engine_free(d.e);
    sr_engine_config_release(&d.cfg);
    return 0;
}
