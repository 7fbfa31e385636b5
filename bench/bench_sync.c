/*
 * bench_sync: weight sync through real engine processes over loopback (issue 7, item 7; the
 * delta store alone is bench_sync_delta.c).
 *
 * broadcast: a 1 GiB synthetic weight set (lib/sr_weights: 4 MoE layers, 8 expert tensors of
 *   each kind per layer, 2 global tensors of 64 MiB) sent to one `syncroll engine` as
 *   update_weights_nccl buckets of 64 MiB over HTTP, with 1 and 2 buckets in flight.
 *   Every repetition syncs to the next content version (the trainer's regeneration, "gather",
 *   is not timed), so the engine's commit really copies the changed tensors.
 *     .update  the update phase: every byte over loopback, copied into the engine's stage and
 *              its xxh3-128 verified (the engine's apply team: min(#tensors, pool_workers(32, 0)))
 *     .sync    the whole sync without gather: bucket planning, pause, reset_cache, start,
 *              update, finish (the commit into the model and its fingerprints), resume, verify
 *   both against memcpy of the same 1 GiB.
 * overhead: a sync in which nothing changed, 1,002 tensors (40 layers x 25 + 2) in 1 MiB, to
 *   one engine: delta (publish of an empty manifest, fetch, the whole protocol, verification)
 *   and broadcast (which sends every byte every time). Reported against the 5 ms target.
 * The engine's receiver fsyncs its state file as the reference does; the trainer's publish
 * fsync is on. The broadcast lines carry gbps= (10^9 bytes/s of the 1 GiB; target >= 1).
 */
#include <curl/curl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "spec/engine_config.h"
#include "run/procs.h"
#include "sync/sync.h"

#define GIB ((size_t)1 << 30)

static const char *BIG_CFG =
    "{\"seed\":5,\"model\":{\"layers\":4,\"experts\":8,\"topk\":2,\"vocab\":256},"
    "\"weights\":{\"total_bytes\":1073741824,\"expert_tensors\":8},"
    "\"server\":{\"threads\":4,\"max_body_bytes\":268435456}}";
/* The sync folder, the only one the engine may write (server.sync_dirs), then extra keys. */
static const char *SMALL_CFG_FMT =
    "{\"seed\":5,\"model\":{\"layers\":40,\"experts\":8,\"topk\":2,\"vocab\":256},"
    "\"weights\":{\"total_bytes\":1048576,\"expert_tensors\":8},"
    "\"server\":{\"threads\":4,\"sync_dirs\":[\"%s\"]}%s}";
/* The second %s of SMALL_CFG_FMT for an engine speaking vLLM's native control plane. */
static const char *VLLM_PLANE = ",\"sync_dialect\":\"vllm\"";
static const char *SGLANG_PLANE = ",\"sync_dialect\":\"sglang\"";

typedef struct engine {
    sr_proc p;
    char cfg[64];
    char url[SR_PROC_LINE_MAX + 32];
    sr_weights_spec spec;
    sr_engine_config c;
} engine;

static void die(const char *what, const sr_err *e)
{
    fprintf(stderr, "bench_sync: %s: %s\n", what, e ? e->msg : "");
    exit(1);
}

static void engine_start(engine *g, const char *json)
{
    sr_err e = SR_ERR_INIT;
    snprintf(g->cfg, sizeof(g->cfg), "/tmp/bench-sync-XXXXXX");
    int fd = mkstemp(g->cfg);
    if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t)strlen(json))
        die("cannot write the engine config", NULL);
    close(fd);
    if (sr_engine_config_parse(&g->c, json, strlen(json), "bench", 0, &e))
        die("config", &e);
    g->spec = sr_engine_config_weights(&g->c);
    char self[4096], exe[4200];
    if (sr_proc_self_exe(self, sizeof(self), &e))
        die("self", &e);
    snprintf(exe, sizeof(exe), "%s/harness/syncroll", dirname(dirname(self)));
    char *argv[] = {"syncroll",   "engine", "--config",   g->cfg, "--port", "0",
                    "--ready-fd", "3",      "--lifetime", "900",  NULL};
    g->p = (sr_proc)SR_PROC_INIT;
    if (sr_proc_spawn(&g->p, exe, argv, &e) || sr_procs_wait_ready(&g->p, 1, 120000, &e))
        die("engine", &e);
    snprintf(g->url, sizeof(g->url), "http://127.0.0.1:%s", g->p.line);
}

static void engine_stop(engine *g)
{
    sr_procs_stop(&g->p, 1, 10000);
    unlink(g->cfg);
    sr_engine_config_release(&g->c);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bench_stats stats_of(double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof(double), cmp_double);
    bench_stats s = {ms[n / 2], ms[0], ms[n - 1]};
    return s;
}

static void run_sync(sr_sync_result *r, sr_sync *s, int64_t target, int64_t content)
{
    sr_err e = SR_ERR_INIT;
    if (sr_sync_run(r, s, target, content, &e))
        die("sync", &e);
    if (r->n_checks)
        fprintf(stderr, "bench_sync: sync %lld: %s: %s\n", (long long)target, r->checks[0].name,
                r->checks[0].message);
    if (!r->completed || !r->verified)
        die("a sync failed", NULL);
    /* BENCH_SYNC_PHASES=1 prints where each sync's time went. */
    if (getenv("BENCH_SYNC_PHASES")) {
        for (int p = 0; p < SR_SYNC_PHASE_COUNT; p++)
            if (r->phase_ran[p])
                fprintf(stderr, " %s=%.2f", sr_sync_phase_name(p), (double)r->phase_ns[p] / 1e6);
        fprintf(stderr, " total=%.2fms\n", (double)r->total_ns / 1e6);
    }
}

static void bench_broadcast(const bench_stats *base, int reps)
{
    engine g;
    engine_start(&g, BIG_CFG);
    double *upd = malloc(sizeof(double) * (size_t)reps),
           *all = malloc(sizeof(double) * (size_t)reps);
    for (int workers = 1; workers <= 2; workers++) {
        sr_sync_opts o = SR_SYNC_OPTS_INIT;
        o.transport = SR_SYNC_BROADCAST;
        o.bucket_bytes = (size_t)64 << 20;
        o.send_workers = workers;
        o.deadline_ms = 120000;
        sr_sync *s;
        sr_err e = SR_ERR_INIT;
        const char *url = g.url;
        if (sr_sync_new(&s, &url, 1, &g.spec, &o, &e))
            die("sync_new", &e);
        sr_sync_result *r = malloc(sizeof(*r));
        int64_t base_v = workers == 1 ? 0 : reps + 1;
        run_sync(r, s, base_v + 1, base_v + 1); /* warm-up: stage pages, connections */
        for (int i = 0; i < reps; i++) {
            int64_t v = base_v + 2 + i;
            run_sync(r, s, v, v);
            upd[i] = (double)r->phase_ns[SR_SYNC_UPDATE] / 1e6;
            all[i] = (double)(r->total_ns - r->phase_ns[SR_SYNC_GATHER]) / 1e6;
        }
        char name[96];
        bench_stats su = stats_of(upd, reps), sa = stats_of(all, reps);
        snprintf(name, sizeof(name), "sync.broadcast.1GiB.w%d.update", workers);
        bench_report_ex(name, su, *base, "memcpy_1GiB", "gbps=%.3f",
                        (double)GIB / (su.median_ms * 1e6));
        snprintf(name, sizeof(name), "sync.broadcast.1GiB.w%d.sync", workers);
        bench_report_ex(name, sa, *base, "memcpy_1GiB", "gbps=%.3f",
                        (double)GIB / (sa.median_ms * 1e6));
        free(r);
        sr_sync_free(s);
    }
    free(upd);
    free(all);
    engine_stop(&g);
}

static void bench_overhead(sr_sync_transport t, int fsync, sr_sync_dialect control,
                           const char *name, int reps)
{
    engine g;
    char dir[64], cfg[512];
    snprintf(dir, sizeof(dir), "/tmp/bench-sync-dir-XXXXXX");
    if (!mkdtemp(dir))
        die("mkdtemp", NULL);
    snprintf(cfg, sizeof(cfg), SMALL_CFG_FMT, dir,
             control == SR_SYNC_DIALECT_VLLM     ? VLLM_PLANE
             : control == SR_SYNC_DIALECT_SGLANG ? SGLANG_PLANE
                                                 : "");
    engine_start(&g, cfg);
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.transport = t;
    o.sync_dir = dir;
    o.fsync = fsync;
    o.control = control;
    sr_sync *s;
    sr_err e = SR_ERR_INIT;
    const char *url = g.url;
    if (sr_sync_new(&s, &url, 1, &g.spec, &o, &e))
        die("sync_new", &e);
    sr_sync_result *r = malloc(sizeof(*r));
    double *ms = malloc(sizeof(double) * (size_t)reps);
    run_sync(r, s, 1, 1); /* the first sync changes the bytes and sets everything up */
    run_sync(r, s, 2, SR_SYNC_SAME_BYTES);
    for (int i = 0; i < reps; i++) {
        run_sync(r, s, 3 + i, SR_SYNC_SAME_BYTES);
        ms[i] = (double)r->total_ns / 1e6;
    }
    if (sr_weights_count(sr_sync_weights(s)) < 1000)
        die("the overhead set has fewer than 1,000 tensors", NULL);
    bench_stats target = {5.0, 5.0, 5.0};
    bench_report(name, stats_of(ms, reps), target, "target_5ms");
    free(ms);
    free(r);
    sr_sync_free(s);
    engine_stop(&g);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int reps = bench_reps(11);
    bench_stats base = bench_memcpy(GIB, reps);
    bench_report("memcpy.1GiB", base, base, "memcpy_1GiB");
    const sr_sync_dialect sky = SR_SYNC_DIALECT_SKYRL;
    bench_overhead(SR_SYNC_DELTA, 1, sky, "sync.overhead.nothing_changed.1002_tensors.delta",
                   5 * reps);
    bench_overhead(SR_SYNC_DELTA, 0, sky,
                   "sync.overhead.nothing_changed.1002_tensors.delta.nofsync", 5 * reps);
    bench_overhead(SR_SYNC_BROADCAST, 1, sky,
                   "sync.overhead.nothing_changed.1002_tensors.broadcast", 5 * reps);
    /* The vllm plane: broadcast plus a weight_checker compare of every tensor after each sync. */
    bench_overhead(SR_SYNC_BROADCAST, 1, SR_SYNC_DIALECT_VLLM,
                   "sync.overhead.nothing_changed.1002_tensors.vllm", 5 * reps);
    /* The sglang plane: whole-update buckets on /update_weights_from_distributed, and from disk
     * (a checkpoint folder written and loaded per version, nothing changed). */
    bench_overhead(SR_SYNC_BROADCAST, 1, SR_SYNC_DIALECT_SGLANG,
                   "sync.overhead.nothing_changed.1002_tensors.sglang", 5 * reps);
    bench_overhead(SR_SYNC_DISK, 1, SR_SYNC_DIALECT_SGLANG,
                   "sync.overhead.nothing_changed.1002_tensors.sglang_disk", 5 * reps);
    if (getenv("BENCH_SYNC_OVERHEAD_ONLY"))
        return 0;
    bench_broadcast(&base, reps);
    curl_global_cleanup();
    return 0;
}
