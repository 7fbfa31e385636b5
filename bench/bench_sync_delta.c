/*
 * bench_sync_delta: publish and apply of the delta store (lib/sr_delta) on a synthetic weight
 * set, against memcpy of the same bytes (issue 7, item 7, delta half).
 *
 * Weight set: BENCH_DELTA_MIB (default 1024) MiB of float16 tensors of 4 MiB each. A changed
 * tensor has 1/8 of its 64-byte blocks regenerated (as lib/sr_weights does by default), so its
 * XOR patch is mostly zero bytes. Two change sets: "full" (every tensor changed) and "10pct"
 * (every tenth tensor changed; the others are identical and produce no record).
 *
 * publish: one sr_delta_publish of the whole set, alternating between the two weight versions
 *          so every repetition writes a delta of the same size; includes diffing, xxh3-128,
 *          zstd level 1, writing the payload files and the manifest, and every fsync.
 * apply:   one sr_delta_fetch of one published version into a receiver reset to the base
 *          (the reset is not timed); includes both state-file writes with their fsyncs, reading
 *          the manifest and the payloads (from the page cache: same host), decompression, XOR
 *          and checksum verification.
 * Workers: 1 and 2 (the publish and apply team sizes; this machine has 2 cores).
 * delta.publish.full.w2.nofsync repeats one case with fsync off, to show what fsync costs.
 * Files go to a fresh directory under $TMPDIR (default /tmp), removed at the end.
 * Every publish and apply line carries gbps= (10^9 bytes of weights per second; targets: apply
 * full w2 >= 1, publish >= 0.5).
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "sr_delta.h"

#define TENSOR_BYTES ((size_t)4 << 20)
#define BLOCK        64

typedef struct wset {
    size_t n;
    unsigned char *bytes;
    sr_delta_tensor *t;
} wset;

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A 64-byte block of finite float16 values of magnitude in [2^-7, 2^-3). */
static void fill_block(unsigned char *b, uint64_t *seed)
{
    for (int w = 0; w < BLOCK / 8; w++) {
        uint64_t x = (mix(seed) & 0x8FFF8FFF8FFF8FFFull) | 0x2000200020002000ull;
        memcpy(b + 8 * w, &x, 8);
    }
}

static void wset_alloc(wset *w, size_t total)
{
    w->n = total / TENSOR_BYTES;
    w->bytes = aligned_alloc(64, w->n * TENSOR_BYTES);
    w->t = calloc(w->n, sizeof(sr_delta_tensor));
    if (!w->bytes || !w->t) {
        fprintf(stderr, "bench_sync_delta: out of memory\n");
        exit(1);
    }
    static const char *const names[] = {"q", "k", "v", "o"};
    for (size_t i = 0; i < w->n; i++) {
        char *name = malloc(64);
        snprintf(name, 64, "layers.%zu.attn.%s.weight", i / 4, names[i % 4]);
        w->t[i] = (sr_delta_tensor){
            name, "float16", 2, {2048, 1024}, w->bytes + i * TENSOR_BYTES, TENSOR_BYTES};
    }
}

static void wset_free(wset *w)
{
    for (size_t i = 0; i < w->n; i++)
        free((char *)w->t[i].name);
    free(w->t);
    free(w->bytes);
}

/* The same names and shapes pointing at other bytes. */
static sr_delta_tensor *view(const wset *names, unsigned char *bytes)
{
    sr_delta_tensor *t = malloc(names->n * sizeof(*t));
    for (size_t i = 0; i < names->n; i++) {
        t[i] = names->t[i];
        t[i].data = bytes + i * TENSOR_BYTES;
    }
    return t;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void rm_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void die(const char *what, const sr_err *e)
{
    fprintf(stderr, "bench_sync_delta: %s: %s: %s\n", what, sr_code_name(e->code), e->msg);
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bench_stats stats_of(double *t, int reps)
{
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    bench_stats s = {t[reps / 2], t[0], t[reps - 1]};
    return s;
}

/* ---- publish ---- */

typedef struct pub_case {
    const char *sync;
    const sr_delta_tensor *base, *next; /* the two versions alternated */
    size_t n;
    int workers;
    int fsync;
    uint64_t compressed; /* of the last publish */
} pub_case;

static bench_stats bench_publish(pub_case *c, int reps)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_publish_opts o = SR_DELTA_PUBLISH_OPTS_INIT;
    o.fsync = c->fsync;
    sr_delta_publisher *p = NULL;
    if (sr_delta_publisher_new(&p, c->sync, c->base, c->n, &o, &e))
        die("publisher", &e);
    double *t = malloc(sizeof(double) * (size_t)(reps + 1));
    for (int i = 0; i <= reps; i++) {
        int64_t v = sr_delta_publisher_version(p);
        char old[700];
        snprintf(old, sizeof(old), "%s/delta-%08lld", c->sync, (long long)v);
        rm_tree(old); /* bounds the disk use; not timed */
        sr_delta_publish_result r;
        double t0 = bench_now_ms();
        if (sr_delta_publish(&r, p, i % 2 ? c->base : c->next, c->n, c->workers, &e))
            die("publish", &e);
        t[i] = bench_now_ms() - t0;
        c->compressed = r.compressed_bytes;
    }
    bench_stats s = stats_of(t + 1, reps); /* the first run is the warm-up */
    free(t);
    char last[700];
    snprintf(last, sizeof(last), "%s/delta-%08lld", c->sync,
             (long long)sr_delta_publisher_version(p));
    rm_tree(last);
    sr_delta_publisher_free(p);
    return s;
}

/* ---- apply ---- */

static bench_stats bench_apply(const char *sync, const char *state, sr_delta_tensor *local,
                               const sr_delta_tensor *base, size_t n, int workers, int reps,
                               int *threads)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
    o.max_workers = workers;
    sr_delta_receiver *rx = NULL;
    if (sr_delta_receiver_new(&rx, state, local, n, base, n, &o, &e))
        die("receiver", &e);
    double *t = malloc(sizeof(double) * (size_t)(reps + 1));
    for (int i = 0; i <= reps; i++) {
        if (sr_delta_receiver_reset(rx, &e))
            die("reset", &e);
        sr_delta_fetch_result r;
        double t0 = bench_now_ms();
        if (sr_delta_fetch(&r, rx, sync, 1, &e))
            die("fetch", &e);
        t[i] = bench_now_ms() - t0;
        *threads = r.last_threads;
    }
    bench_stats s = stats_of(t + 1, reps);
    free(t);
    sr_delta_receiver_free(rx);
    return s;
}

/* Publishes base -> next as version 1 into `sync` (untimed set-up for the apply runs). */
static void publish_once(const char *sync, const sr_delta_tensor *base, const sr_delta_tensor *next,
                         size_t n)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = NULL;
    if (sr_delta_publisher_new(&p, sync, base, n, NULL, &e) ||
        sr_delta_publish(NULL, p, next, n, 2, &e))
        die("publish for apply", &e);
    sr_delta_publisher_free(p);
}

static double gbps(size_t bytes, bench_stats s)
{
    return s.median_ms > 0 ? (double)bytes / (s.median_ms * 1e6) : 0.0;
}

/* The benchmark's weights: version A, and the two next versions it publishes and applies. */
typedef struct delta_bench {
    wset a;
    size_t total;
    unsigned char *b;         /* version B: 1/8 of the blocks of every tensor regenerated */
    sr_delta_tensor *next[2]; /* "full" (all of B) and "10pct" (every tenth tensor from B) */
    char dir[512], sync[600], state[600];
    bench_stats mc; /* memcpy of the whole set: the baseline of every figure */
    char base_name[64];
    int reps;
} delta_bench;

static const char *const kind[2] = {"full", "10pct"};

static void make_versions(delta_bench *d, size_t total)
{
    wset_alloc(&d->a, total);
    d->total = total = d->a.n * TENSOR_BYTES;
    uint64_t seed = 1;
    for (size_t off = 0; off < total; off += BLOCK)
        fill_block(d->a.bytes + off, &seed);
    d->b = aligned_alloc(64, total);
    memcpy(d->b, d->a.bytes, total);
    for (size_t off = 0; off < total; off += BLOCK) {
        if (mix(&seed) % 8 == 0)
            fill_block(d->b + off, &seed);
    }
    sr_delta_tensor *full = view(&d->a, d->b);
    sr_delta_tensor *tenth = view(&d->a, d->a.bytes);
    for (size_t i = 0; i < d->a.n; i += 10)
        tenth[i].data = full[i].data;
    d->next[0] = full;
    d->next[1] = tenth;
}

/* A private directory under $TMPDIR (or /tmp) holding sync/ and state/; 0, or -1 (reported). */
static int make_dirs(delta_bench *d)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof(d->dir), "%s/bench_sync_delta_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(d->dir)) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(d->sync, sizeof(d->sync), "%s/sync", d->dir);
    snprintf(d->state, sizeof(d->state), "%s/state", d->dir);
    mkdir(d->sync, 0755);
    return 0;
}

static void run_publish(const delta_bench *d)
{
    for (int k = 0; k < 2; k++) {
        for (int w = 1; w <= 2; w++) {
            pub_case c = {d->sync, d->a.t, d->next[k], d->a.n, w, 1, 0};
            bench_stats s = bench_publish(&c, d->reps);
            char name[64];
            snprintf(name, sizeof(name), "delta.publish.%s.w%d", kind[k], w);
            bench_report_ex(name, s, d->mc, d->base_name, "gbps=%.3f", gbps(d->total, s));
            printf("# %s: %.2f GB/s of weights, %.1f MiB compressed\n", name, gbps(d->total, s),
                   (double)c.compressed / (1 << 20));
        }
    }
    /* The share of fsync in the full publish: the same run with fsync off. */
    pub_case nf = {d->sync, d->a.t, d->next[0], d->a.n, 2, 0, 0};
    bench_stats s_nf = bench_publish(&nf, d->reps);
    bench_report_ex("delta.publish.full.w2.nofsync", s_nf, d->mc, d->base_name, "gbps=%.3f",
                    gbps(d->total, s_nf));
    printf("# delta.publish.full.w2.nofsync: %.2f GB/s of weights (fsync off: not a product "
           "setting, shows what fsync costs)\n",
           gbps(d->total, s_nf));
}

/* Applies each next version onto a copy of A; 0, or 1 if a result differs from the version. */
static int run_apply(const delta_bench *d)
{
    unsigned char *local_bytes = aligned_alloc(64, d->total);
    memcpy(local_bytes, d->a.bytes, d->total);
    sr_delta_tensor *local = view(&d->a, local_bytes);
    int bad = 0;
    for (int k = 0; k < 2 && !bad; k++) {
        rm_tree(d->sync);
        mkdir(d->sync, 0755);
        publish_once(d->sync, d->a.t, d->next[k], d->a.n);
        for (int w = 1; w <= 2 && !bad; w++) {
            int threads = 0;
            bench_stats s =
                bench_apply(d->sync, d->state, local, d->a.t, d->a.n, w, d->reps, &threads);
            char name[64];
            snprintf(name, sizeof(name), "delta.apply.%s.w%d", kind[k], w);
            bench_report_ex(name, s, d->mc, d->base_name, "gbps=%.3f", gbps(d->total, s));
            printf("# %s: %.2f GB/s of weights (%d threads)\n", name, gbps(d->total, s), threads);
            for (size_t i = 0; i < d->a.n && !bad; i++) {
                if (memcmp(local[i].data, d->next[k][i].data, TENSOR_BYTES) != 0) {
                    fprintf(stderr, "bench_sync_delta: %s: tensor %zu differs\n", name, i);
                    bad = 1;
                }
            }
        }
    }
    free(local);
    free(local_bytes);
    return bad;
}

int main(void)
{
    const char *mib_env = getenv("BENCH_DELTA_MIB");
    size_t mib = mib_env && atoi(mib_env) >= 8 ? (size_t)atoi(mib_env) : 1024;
    delta_bench d;
    d.reps = bench_reps(11);
    make_versions(&d, mib << 20);
    if (make_dirs(&d))
        return 1;
    snprintf(d.base_name, sizeof(d.base_name), "memcpy_%zuMiB", d.total >> 20);
    d.mc = bench_memcpy(d.total, d.reps);
    bench_report("delta.memcpy", d.mc, d.mc, d.base_name);
    printf("# delta: %zu float16 tensors, %zu MiB; changed tensors have 1/8 of their 64-byte "
           "blocks new; fsync on; %.2f GB/s memcpy\n",
           d.a.n, d.total >> 20, gbps(d.total, d.mc));
    run_publish(&d);
    int bad = run_apply(&d);
    rm_tree(d.dir);
    free(d.next[0]);
    free(d.next[1]);
    free(d.b);
    wset_free(&d.a);
    return bad;
}
