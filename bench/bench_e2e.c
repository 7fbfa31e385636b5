/*
 * bench_e2e: end-to-end throughput of the harness (issue 12, item 3) on scenarios/perf/
 * throughput.json (2 engines, 64 concurrent 3-turn R3 rollouts, a delta sync, 64 more, one
 * collation of all 128; BENCH_E2E_SCENARIO names another file).
 *
 * 1. Throughput: `syncroll run --out <tmp> <scenario>` as users run it, bench_reps(11) times; each
 *    run's results.json gives the scenario wall, the step timeline, the counters and the phase
 *    histograms. Medians over the runs:
 *      e2e.scenario          the scenario's wall time, engines' start and stop included (ratio 1)
 *      e2e.steps             first step start to last step end; ratio = share of the scenario;
 *                            rollouts_per_s, tokens_per_s (generated tokens verified),
 *                            route_bytes_per_s (captured route rows x layers x topk x itemsize),
 *                            response_bytes_per_s, requests_per_s, all over the steps' wall
 *      e2e.step.<kind>       time in steps of that kind (rollout steps include verification)
 *      e2e.engines           the scenario outside its steps (engines' start and stop, set-up)
 *      e2e.phase.<phase>     sum of the phase's samples; ratio = sum / scenario wall. request,
 *                            splice and record run on up to 64 threads at once, so their ratio is
 *                            busy thread-time per wall time and may exceed 1.
 * 2. Harness time per request: the same engines and rollouts run in THIS process with the
 *    client and rollout modules directly (no verification, no finish_session), and each rollout's
 *    thread CPU time (CLOCK_THREAD_CPUTIME_ID: libcurl, request building, the streaming splice,
 *    decoding, trace recording, finalize) is divided by its generate requests. The engines run
 *    in other processes, so none of their time is counted; waiting is not CPU time.
 *      e2e.harness_per_request  ratio = that time / (50 us + 1.2 x memcpy of the mean response
 *                               body), issue 12's target (<= 1)
 *    After each batch its requests are replayed with bare libcurl on as many threads
 *    (e2e_floor.h: kept-alive handles, bodies built beforehand, responses discarded unread):
 *      e2e.curl_floor_per_request  the thread CPU per request of that replay against the same
 *                               budget: what libcurl and the kernel's loopback TCP cost before
 *                               syncroll touches a byte (harness_minus_floor_us: the rest)
 * 3. Nightly suite: `syncroll run -j<cpus> scenarios/nightly` once (BENCH_NIGHTLY=0 skips it):
 *      e2e.nightly_suite        wall time; ratio against the 3-minute target
 * BENCH_E2E_ONLY=throughput, harness or nightly runs only that part (for profiling);
 * BENCH_E2E_PASSES=0 ends part 2 after its headline lines.
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <libgen.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "e2e_floor.h"
#include "e2e_pass.h"
#include "run/procs.h"
#include "report/result.h"
#include "run/rollout.h"
#include "scenario/scenario.h"
#include "sr_buf.h"
#include "sr_mix.h"

extern char **environ;

#define MAX_RUNS 64

static void die(const char *what, const sr_err *e)
{
    fprintf(stderr, "bench_e2e: %s%s%s\n", what, e ? ": " : "", e ? e->msg : "");
    exit(1);
}

/* ---- running syncroll ---- */

/* Runs argv with stdout and stderr into `log`; the wall time in ms, or < 0 if it failed. */
static double run_logged(char *const argv[], const char *log, int *status)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    double t0 = bench_now_ms();
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    waitpid(pid, status, 0);
    return bench_now_ms() - t0;
}

static void show_log(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[512];
    while (f && fgets(line, sizeof(line), f))
        fprintf(stderr, "  | %s", line);
    if (f)
        fclose(f);
}

static cJSON *load_json(const char *path)
{
    sr_buf b = SR_BUF_INIT;
    FILE *f = fopen(path, "rb");
    char chunk[65536];
    size_t n;
    while (f && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        sr_buf_append(&b, chunk, n, NULL);
    if (f)
        fclose(f);
    cJSON *j = b.len ? cJSON_ParseWithLength(b.data, b.len) : NULL;
    sr_buf_release(&b);
    return j;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

/* ---- 1. throughput from results.json ---- */

enum { K_ROLLOUT, K_SYNC, K_COLLATE, K_OTHER, K_COUNT };
static const char *const k_kind[K_COUNT] = {"rollout", "sync_weights", "collate", "other"};

typedef struct e2e_run {
    double scenario_ms, steps_ms, kind_ms[K_COUNT];
    double phase_ms[SR_PHASE_COUNT], phase_n[SR_PHASE_COUNT];
    double cpu_ms[SR_PHASE_COUNT], cpu_n[SR_PHASE_COUNT]; /* the phases' sampled CPU time */
    double rollouts, tokens, rows, turns, bytes_received;
} e2e_run;

static int read_run(e2e_run *r, const cJSON *scn)
{
    memset(r, 0, sizeof(*r));
    const cJSON *verdict = cJSON_GetObjectItemCaseSensitive(scn, "verdict");
    if (!cJSON_IsString(verdict) || strcmp(verdict->valuestring, "pass") != 0)
        return -1;
    r->scenario_ms = num(scn, "wall_ms");
    double first = -1, last = 0;
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(scn, "steps"))
    {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(st, "kind");
        double a = num(st, "start_ms"), b = num(st, "end_ms");
        int k = K_OTHER;
        for (int i = 0; i < K_OTHER && cJSON_IsString(kind); i++)
            if (strcmp(kind->valuestring, k_kind[i]) == 0)
                k = i;
        r->kind_ms[k] += b - a;
        if (first < 0)
            first = a;
        last = b;
    }
    r->steps_ms = last - (first < 0 ? 0 : first);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(scn, "counters");
    r->rollouts = num(c, "rollouts_verified");
    r->tokens = num(c, "tokens_verified");
    r->rows = num(c, "rows_verified");
    r->turns = num(c, "turns");
    r->bytes_received = num(c, "bytes_received");
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(scn, "phases");
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(ph, sr_phase_name(p));
        r->phase_n[p] = num(h, "count");
        r->phase_ms[p] = num(cJSON_GetObjectItemCaseSensitive(h, "hist"), "sum_ns") / 1e6;
        const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(h, "cpu");
        r->cpu_n[p] = num(cpu, "count");
        r->cpu_ms[p] = num(cpu, "sum_ns") / 1e6;
    }
    return 0;
}

/* The median over runs of one member (or of a function of a run). */
static bench_stats over_runs(const e2e_run *runs, int n, double (*f)(const e2e_run *, int), int arg)
{
    double v[MAX_RUNS];
    for (int i = 0; i < n; i++)
        v[i] = f(&runs[i], arg);
    return bench_stats_of(v, n);
}

static double f_scenario(const e2e_run *r, int a)
{
    (void)a;
    return r->scenario_ms;
}
static double f_steps(const e2e_run *r, int a)
{
    (void)a;
    return r->steps_ms;
}
static double f_kind(const e2e_run *r, int k)
{
    return r->kind_ms[k];
}
static double f_outside(const e2e_run *r, int a)
{
    (void)a;
    return r->scenario_ms - r->steps_ms;
}
static double f_phase(const e2e_run *r, int p)
{
    return r->phase_ms[p];
}
static double f_phase_n(const e2e_run *r, int p)
{
    return r->phase_n[p];
}
static double f_cpu_mean_us(const e2e_run *r, int p)
{
    return r->cpu_n[p] > 0 ? r->cpu_ms[p] * 1e3 / r->cpu_n[p] : 0.0;
}
static double f_cpu_n(const e2e_run *r, int p)
{
    return r->cpu_n[p];
}

/* Per second of the steps' wall: 0 rollouts, 1 tokens, 2 route bytes, 3 response bytes,
 * 4 requests. */
static double route_row_bytes;
static double f_rate(const e2e_run *r, int what)
{
    double v[5] = {r->rollouts, r->tokens, r->rows * route_row_bytes, r->bytes_received, r->turns};
    return r->steps_ms > 0 ? v[what] / (r->steps_ms / 1e3) : 0.0;
}

static void report_throughput(const e2e_run *runs, int n)
{
    bench_stats sc = over_runs(runs, n, f_scenario, 0);
    bench_report("e2e.scenario", sc, sc, "e2e.scenario");
    double rate[5];
    for (int w = 0; w < 5; w++)
        rate[w] = over_runs(runs, n, f_rate, w).median_ms;
    bench_report_ex("e2e.steps", over_runs(runs, n, f_steps, 0), sc, "e2e.scenario",
                    "rollouts_per_s=%.1f tokens_per_s=%.0f route_bytes_per_s=%.0f "
                    "response_bytes_per_s=%.0f requests_per_s=%.1f",
                    rate[0], rate[1], rate[2], rate[3], rate[4]);
    char name[64];
    for (int k = 0; k < K_COUNT; k++) {
        snprintf(name, sizeof(name), "e2e.step.%s", k_kind[k]);
        bench_report(name, over_runs(runs, n, f_kind, k), sc, "e2e.scenario");
    }
    bench_report("e2e.engines", over_runs(runs, n, f_outside, 0), sc, "e2e.scenario");
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        if (p == SR_PHASE_SCENARIO)
            continue;
        bench_stats s = over_runs(runs, n, f_phase, p);
        double count = over_runs(runs, n, f_phase_n, p).median_ms;
        snprintf(name, sizeof(name), "e2e.phase.%s", sr_phase_name(p));
        bench_report_ex(name, s, sc, "e2e.scenario",
                        "count=%.0f mean_us=%.1f cpu_count=%.0f cpu_mean_us=%.1f", count,
                        count > 0 ? s.median_ms * 1e3 / count : 0.0,
                        over_runs(runs, n, f_cpu_n, p).median_ms,
                        over_runs(runs, n, f_cpu_mean_us, p).median_ms);
    }
}

static void bench_throughput(const char *syncroll, const char *scenario, const char *tmp, int reps)
{
    static e2e_run runs[MAX_RUNS];
    char out[600], log[700], res[700];
    snprintf(out, sizeof(out), "%s/runs", tmp);
    snprintf(log, sizeof(log), "%s/run.log", tmp);
    snprintf(res, sizeof(res), "%s/latest/results.json", out);
    char *argv[] = {(char *)syncroll, "run", "--out", out, (char *)scenario, NULL};
    int n = 0;
    for (int i = 0; i <= reps && n < MAX_RUNS; i++) {
        int st = 0;
        if (run_logged(argv, log, &st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_e2e: syncroll run %s failed:\n", scenario);
            show_log(log);
            exit(1);
        }
        cJSON *j = load_json(res);
        const cJSON *scns = cJSON_GetObjectItemCaseSensitive(j, "scenarios");
        e2e_run r;
        if (!j || cJSON_GetArraySize(scns) != 1 || read_run(&r, cJSON_GetArrayItem(scns, 0)))
            die("results.json of the throughput run is missing or not a pass", NULL);
        cJSON_Delete(j);
        if (i > 0) /* the first run warms the page cache and the binaries */
            runs[n++] = r;
    }
    printf("# e2e: %s, %d runs; per run %.0f rollouts, %.0f requests, %.0f tokens, %.0f route "
           "rows, %.1f MiB of responses\n",
           scenario, n, runs[0].rollouts, runs[0].turns, runs[0].tokens, runs[0].rows,
           runs[0].bytes_received / 1048576.0);
    report_throughput(runs, n);
}

/* ---- 2. harness time per request, in process ---- */

typedef struct hb {
    sr_rollout_config *cfgs;
    sr_rollout_result *res;
    double *cpu_ms;
    double *minflt; /* minor page faults of each rollout's thread during its job */
} hb;

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Minor page faults of the calling thread so far (fresh memory touched for the first time). */
static double thread_minflt(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? (double)ru.ru_minflt : 0.0;
}

/* CPU time of the whole process so far (every thread, thread creation included). */
static double process_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int hb_job(sr_client_conn *k, size_t i, void *ctx)
{
    hb *h = ctx;
    double f0 = thread_minflt();
    double t0 = thread_cpu_ms();
    int rc = sr_rollout_run(&h->res[i], k, &h->cfgs[i], NULL);
    h->cpu_ms[i] = thread_cpu_ms() - t0;
    h->minflt[i] = thread_minflt() - f0;
    return rc;
}

typedef struct copy_ctx {
    char *dst;
    const char *src;
    size_t n;
} copy_ctx;

/* 1000 copies per call: one copy of a response is a few microseconds. */
static void copy_1000(void *p)
{
    copy_ctx *c = p;
    for (int i = 0; i < 1000; i++) {
        memcpy(c->dst, c->src, c->n);
        bench_sink(c->dst, c->n);
    }
}

static uint64_t splitmix(uint64_t *s)
{
    return sr_mix64(*s += SR_MIX_GOLDEN);
}

/* The first rollout step's batch as rollout configs (prompts seeded per repetition). */
static void make_configs(sr_rollout_config *cfgs, int32_t **prompts, char (*sessions)[64],
                         const sr_scenario *s, const sr_scn_rollout *r, const cJSON *sp, int rep)
{
    uint64_t seed = s->seed * 1000003u + (uint64_t)rep;
    for (int64_t i = 0; i < r->batch; i++) {
        size_t P =
            (size_t)(r->prompt_min +
                     (int64_t)(splitmix(&seed) % (uint64_t)(r->prompt_max - r->prompt_min + 1)));
        prompts[i] = realloc(prompts[i], P * sizeof(int32_t));
        for (size_t j = 0; j < P; j++)
            prompts[i][j] = (int32_t)(splitmix(&seed) % (uint64_t)s->engine.vocab);
        snprintf(sessions[i], 64, "bench-e2e/%d/%lld", rep, (long long)i);
        sr_rollout_config c = SR_ROLLOUT_CONFIG_INIT;
        c.prompt = prompts[i];
        c.prompt_len = P;
        c.session_id = sessions[i];
        c.sampling_params = sp;
        c.model = s->engine.model_name;
        c.routes = r->routes;
        c.eos_id = s->engine.eos_id;
        c.finish_session = 0;
        c.env.seed = splitmix(&seed);
        c.env.max_turns = (int)r->turns;
        c.env.obs_min = (int)r->obs_min;
        c.env.obs_max = (int)r->obs_max;
        c.env.vocab = s->engine.vocab;
        cfgs[i] = c;
    }
}

typedef struct hb_totals {
    double cpu_ms, requests, bytes, splice_ms, record_ms, minflt, proc_ms;
} hb_totals;

/* One batch, then its requests replayed by the libcurl floor; adds the totals of both. */
static void hb_batch(hb_totals *t, e2e_floor_totals *ft, e2e_floor_totals *mt, hb *h,
                     const sr_client *c, size_t n, int limit, e2e_floor *floor, e2e_floor *mfloor,
                     const cJSON *sp)
{
    sr_err e = SR_ERR_INIT;
    int *rcs = calloc(n, sizeof(int));
    memset(h->res, 0, n * sizeof(*h->res));
    double p0 = process_cpu_ms();
    if (sr_client_parallel(c, n, limit, hb_job, h, rcs, &e))
        die("sr_client_parallel", &e);
    t->proc_ms += process_cpu_ms() - p0;
    for (size_t i = 0; i < n; i++) {
        if (rcs[i])
            die(h->res[i].err.msg, NULL);
        t->cpu_ms += h->cpu_ms[i];
        t->minflt += h->minflt[i];
        for (int k = 0; k < h->res[i].n_turns; k++) {
            const sr_rollout_turn *tu = &h->res[i].turns[k];
            t->requests += 1;
            t->bytes += (double)tu->bytes_received;
            t->splice_ms += tu->splice_ms;
            t->record_ms += tu->record_ms;
        }
    }
    if (e2e_floor_batch(floor, ft, h->res, h->cfgs, n, sp))
        die("the libcurl floor's replay failed", NULL);
    if (e2e_floor_batch(mfloor, mt, h->res, h->cfgs, n, sp))
        die("the libcurl multi floor's replay failed", NULL);
    for (size_t i = 0; i < n; i++)
        sr_rollout_result_release(&h->res[i]);
    free(rcs);
}

static void start_engines(sr_proc *ps, char (*urls)[160], int n, const char *syncroll,
                          const char *cfg)
{
    sr_err e = SR_ERR_INIT;
    char *argv[] = {"syncroll",   "engine", "--config",   (char *)cfg, "--port", "0",
                    "--ready-fd", "3",      "--lifetime", "900",       NULL};
    for (int i = 0; i < n; i++) {
        ps[i] = (sr_proc)SR_PROC_INIT;
        if (sr_proc_spawn(&ps[i], syncroll, argv, &e))
            die("engine", &e);
    }
    if (sr_procs_wait_ready(ps, (size_t)n, 30000, &e))
        die("engines not ready", &e);
    for (int i = 0; i < n; i++)
        snprintf(urls[i], sizeof(urls[i]), "http://127.0.0.1:%s", ps[i].line);
}

static const sr_scn_rollout *first_rollout(const sr_scenario *s)
{
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].kind == SR_STEP_ROLLOUT)
            return &s->steps[i].rollout;
    die("the scenario has no rollout step", NULL);
    return NULL;
}

/* Per-request CPU ms of every batch (index 0 is the warm-up batch) for the harness, the libcurl
 * floor and the multi floor, and the totals of the measured batches. */
typedef struct hb_series {
    double *harness, *floor, *multi;
    hb_totals all;
    e2e_floor_totals fall;
} hb_series;

/* The floors replaying the harness's requests: one easy handle a slot, and libcurl multi. */
typedef struct hb_floors {
    e2e_floor *easy, *multi;
    int threads, slots;
} hb_floors;

static void hb_floors_open(hb_floors *f, const char *const *urls, int ne, int concurrency, size_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    f->threads = cpus > 1 ? (int)cpus : 1;
    f->slots = concurrency < (int)n ? concurrency : (int)n;
    f->easy = e2e_floor_new(urls, ne, f->slots);
    f->multi =
        e2e_floor_new_multi(urls, ne, f->slots < f->threads ? f->threads : f->slots, f->threads);
    if (!f->easy || !f->multi)
        die("the libcurl floor", NULL);
}

static void hb_measure(hb_series *m, hb *h, const sr_client *c, const sr_scenario *s,
                       const sr_scn_rollout *r, const cJSON *sp, const hb_floors *fl, int reps)
{
    size_t n = (size_t)r->batch;
    int32_t **prompts = calloc(n, sizeof(int32_t *));
    char(*sessions)[64] = calloc(n, 64);
    for (int rep = 0; rep <= reps; rep++) {
        hb_totals t = {0, 0, 0, 0, 0, 0, 0};
        e2e_floor_totals ft = {0, 0, 0, 0, 0, 0}, mt = {0, 0, 0, 0, 0, 0};
        make_configs(h->cfgs, prompts, sessions, s, r, sp, rep);
        hb_batch(&t, &ft, &mt, h, c, n, (int)s->concurrency, fl->easy, fl->multi, sp);
        m->harness[rep] = t.cpu_ms / t.requests;
        m->floor[rep] = ft.cpu_ms / ft.requests;
        m->multi[rep] = mt.cpu_ms / mt.requests;
        if (rep > 0) { /* the first batch opens the connections and warms the engines */
            m->fall.cpu_ms += ft.cpu_ms;
            m->fall.requests += ft.requests;
            m->fall.bytes += ft.bytes;
            m->all.cpu_ms += t.cpu_ms;
            m->all.requests += t.requests;
            m->all.bytes += t.bytes;
            m->all.splice_ms += t.splice_ms;
            m->all.record_ms += t.record_ms;
            m->all.minflt += t.minflt;
            m->all.proc_ms += t.proc_ms;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(prompts[i]);
    free(prompts);
    free(sessions);
}

/* The budget: 50 us plus 1.2 memcpy of the mean response, per request. */
static void hb_report(const hb_series *m, const hb_floors *fl, int reps)
{
    const hb_totals *all = &m->all;
    size_t mean_bytes = (size_t)(all->bytes / all->requests);
    char *src = malloc(mean_bytes + 1), *dst = malloc(mean_bytes + 1);
    memset(src, 'A', mean_bytes + 1);
    memset(dst, 0, mean_bytes + 1);
    copy_ctx cc = {dst, src, mean_bytes};
    bench_stats mc = bench_measure(copy_1000, &cc, reps);
    double copy_ms = mc.median_ms / 1000.0;
    bench_stats budget = {0.050 + 1.2 * copy_ms, 0, 0};
    char bname[96];
    snprintf(bname, sizeof(bname), "budget_50us+1.2xmemcpy_%zuB", mean_bytes);
    bench_stats hs = bench_stats_of(m->harness + 1, reps), fs = bench_stats_of(m->floor + 1, reps);
    bench_report_ex("e2e.harness_per_request", hs, budget, bname,
                    "budget_us=%.2f memcpy_us=%.3f mean_response_bytes=%zu requests=%.0f "
                    "splice_wall_us=%.1f record_wall_us=%.1f harness_minus_floor_us=%.1f "
                    "minflt_per_request=%.2f process_cpu_us=%.1f",
                    budget.median_ms * 1e3, copy_ms * 1e3, mean_bytes, all->requests,
                    all->splice_ms * 1e3 / all->requests, all->record_ms * 1e3 / all->requests,
                    (hs.median_ms - fs.median_ms) * 1e3, all->minflt / all->requests,
                    all->proc_ms * 1e3 / all->requests);
    bench_report_ex("e2e.curl_floor_per_request", fs, budget, bname,
                    "mean_response_bytes=%.0f requests=%.0f harness_minus_floor_us=%.1f",
                    m->fall.bytes / m->fall.requests, m->fall.requests,
                    (hs.median_ms - fs.median_ms) * 1e3);
    bench_report_ex("e2e.curl_multi_floor_per_request", bench_stats_of(m->multi + 1, reps), budget,
                    bname, "threads=%d in_flight=%d", fl->threads,
                    fl->slots - fl->slots % fl->threads);
    free(src);
    free(dst);
}

/* The configs of the extra passes' batches (e2e_pass.h), made as hb_measure makes its own. */
typedef struct hb_maker {
    int32_t **prompts;
    char (*sessions)[64];
    const sr_scenario *s;
    const sr_scn_rollout *r;
    const cJSON *sp;
} hb_maker;

static void hb_make(void *ctx, sr_rollout_config *cfgs, int rep)
{
    hb_maker *m = ctx;
    make_configs(cfgs, m->prompts, m->sessions, m->s, m->r, m->sp, rep);
}

/* The phases in thread CPU time and the client's throughput (e2e_pass.h). */
static void hb_passes(hb *h, const sr_client *c, const sr_scenario *s, const sr_scn_rollout *r,
                      const cJSON *sp, const char *const *urls, int ne, e2e_floor *multi,
                      double floor_us, int reps)
{
    size_t n = (size_t)r->batch;
    hb_maker mk = {calloc(n, sizeof(int32_t *)), calloc(n, 64), s, r, sp};
    e2e_batches b = {h->cfgs, n, (int)s->concurrency, hb_make, &mk};
    sr_client_opts o = s->client;
    o.cpu_every = 1;
    if (e2e_cpu_lines(&b, urls, ne, s->fields, &o, floor_us, reps))
        die("the CPU pass failed", NULL);
    if (e2e_rps_line(&b, c, &s->engine, multi, sp, reps))
        die("the throughput pass failed (a rollout, a check or the floor's replay)", NULL);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (e2e_splice_lines(&b, c, urls, ne, s->fields, sp, cpus > 1 ? (int)cpus : 1, reps))
        die("the splice pass failed (a rollout, a replay or a splice)", NULL);
    for (size_t i = 0; i < n; i++)
        free(mk.prompts[i]);
    free(mk.prompts);
    free(mk.sessions);
}

static void bench_harness(const sr_scenario *s, const char *syncroll, const char *tmp, int reps)
{
    const sr_scn_rollout *r = first_rollout(s);
    char cfg[600];
    snprintf(cfg, sizeof(cfg), "%s/engine.json", tmp);
    sr_err e = SR_ERR_INIT;
    if (sr_scenario_write_engine(s, cfg, NULL, &e))
        die("engine config", &e);
    int ne = s->engine.count;
    sr_proc ps[8];
    char urls[8][160];
    const char *url_p[8];
    if (ne < 1 || ne > 8)
        die("the scenario needs 1..8 engines", NULL);
    start_engines(ps, urls, ne, syncroll, cfg);
    for (int i = 0; i < ne; i++)
        url_p[i] = urls[i];
    sr_client *c;
    if (sr_client_new(&c, url_p, (size_t)ne, s->fields, &s->client, &e))
        die("client", &e);
    cJSON *sp = cJSON_CreateObject();
    cJSON_AddNumberToObject(sp, "max_tokens", (double)r->max_tokens);
    if (r->logprobs)
        cJSON_AddNumberToObject(sp, "logprobs", 0);
    size_t n = (size_t)r->batch;
    hb h = {calloc(n, sizeof(sr_rollout_config)), calloc(n, sizeof(sr_rollout_result)),
            calloc(n, sizeof(double)), calloc(n, sizeof(double))};
    hb_floors fl;
    hb_floors_open(&fl, url_p, ne, (int)s->concurrency, n);
    hb_series m = {calloc((size_t)reps + 1, sizeof(double)),
                   calloc((size_t)reps + 1, sizeof(double)),
                   calloc((size_t)reps + 1, sizeof(double)),
                   {0, 0, 0, 0, 0, 0, 0},
                   {0, 0, 0, 0, 0, 0}};
    hb_measure(&m, &h, c, s, r, sp, &fl, reps);
    hb_report(&m, &fl, reps);
    /* BENCH_E2E_PASSES=0 stops after the headline (a profile of the harness's batches only). */
    const char *passes = getenv("BENCH_E2E_PASSES");
    if (!passes || strcmp(passes, "0") != 0)
        hb_passes(&h, c, s, r, sp, url_p, ne, fl.multi,
                  bench_stats_of(m.floor + 1, reps).median_ms * 1e3, reps);
    e2e_floor_free(fl.easy);
    e2e_floor_free(fl.multi);
    free(m.harness);
    free(m.floor);
    free(m.multi);
    free(h.cfgs);
    free(h.res);
    free(h.cpu_ms);
    free(h.minflt);
    cJSON_Delete(sp);
    sr_client_free(c);
    sr_procs_stop(ps, (size_t)ne, 5000);
    unlink(cfg);
}

/* ---- 3. the nightly suite ---- */

static void bench_nightly(const char *syncroll, const char *tmp)
{
    char dir[600], out[600], log[700], jobs[32];
    snprintf(dir, sizeof(dir), "%s/scenarios/nightly", SR_SOURCE_DIR);
    snprintf(out, sizeof(out), "%s/nightly", tmp);
    snprintf(log, sizeof(log), "%s/nightly.log", tmp);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(jobs, sizeof(jobs), "-j%ld", cpus > 0 ? cpus : 1);
    struct stat st;
    if (stat(dir, &st) != 0) {
        printf("# e2e.nightly_suite: %s does not exist\n", dir);
        return;
    }
    char *argv[] = {(char *)syncroll, "run", jobs, "--out", out, dir, NULL};
    int status = 0;
    double ms = run_logged(argv, log, &status);
    if (ms < 0)
        die("cannot run the nightly suite", NULL);
    char res[700];
    snprintf(res, sizeof(res), "%s/latest/results.json", out);
    cJSON *j = load_json(res);
    const cJSON *totals = cJSON_GetObjectItemCaseSensitive(j, "totals");
    bench_stats s = {ms, ms, ms}, target = {180000.0, 180000.0, 180000.0};
    bench_report_ex("e2e.nightly_suite", s, target, "target_3min",
                    "scenarios=%d pass=%.0f fail=%.0f error=%.0f jobs=%ld runs=1",
                    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "scenarios")),
                    num(totals, "pass"), num(totals, "fail"), num(totals, "error"), cpus);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        printf("# e2e.nightly_suite: syncroll run exited with status %d (not every scenario "
               "passed; see %s while this runs)\n",
               WIFEXITED(status) ? WEXITSTATUS(status) : -1, log);
    cJSON_Delete(j);
}

/* ---- main ---- */

static void rm_tree(const char *dir)
{
    char *argv[] = {"/bin/rm", "-rf", (char *)dir, NULL};
    pid_t pid;
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) == 0)
        waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    sr_err e = SR_ERR_INIT;
    char self[4096], syncroll[4200], scenario_buf[600];
    if (sr_proc_self_exe(self, sizeof(self), &e))
        die("self", &e);
    (void)argv;
    snprintf(syncroll, sizeof(syncroll), "%s/harness/syncroll", dirname(dirname(self)));
    const char *scenario = getenv("BENCH_E2E_SCENARIO");
    if (!scenario || !*scenario) {
        snprintf(scenario_buf, sizeof(scenario_buf), "%s/scenarios/perf/throughput.json",
                 SR_SOURCE_DIR);
        scenario = scenario_buf;
    }
    sr_scenario *s;
    if (sr_scenario_load(&s, scenario, &e))
        die("scenario", &e);
    route_row_bytes = (double)s->engine.num_layers * s->engine.topk *
                      (s->engine.experts > 32768 ? 4
                       : s->engine.experts > 256 ? 2
                                                 : 1);
    const char *t = getenv("TMPDIR");
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s/bench_e2e_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmp))
        die("mkdtemp", NULL);
    /* The process set-up of harness/main.c, so part 2 measures the harness as syncroll runs it. */
    sr_proc_tune_malloc();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int reps = bench_reps(11);
    /* BENCH_E2E_ONLY=throughput|harness|nightly runs one part (for profiling). */
    const char *only = getenv("BENCH_E2E_ONLY");
    const char *nightly = getenv("BENCH_NIGHTLY");
    if (!only || strcmp(only, "throughput") == 0)
        bench_throughput(syncroll, scenario, tmp, reps);
    if (!only || strcmp(only, "harness") == 0)
        bench_harness(s, syncroll, tmp, reps);
    if ((!only && (!nightly || strcmp(nightly, "0") != 0)) ||
        (only && strcmp(only, "nightly") == 0))
        bench_nightly(syncroll, tmp);
    curl_global_cleanup();
    sr_scenario_free(s);
    rm_tree(tmp);
    return 0;
}
