/*
 * bench_splice: the response-body splice on the reference body of design.md §8 (16 choices,
 * 122,880 tokens in all, 48 layers, top-8, int16 expert ids below 512, token ids, some text;
 * `data` first, compact JSON: 121.3 MiB), against memcpy of the body in the same process:
 *
 *   splice.oneshot_1t       one-shot, 1 thread, warm splicer (target <= 1.4 x memcpy)
 *   splice.oneshot_2t       one-shot, 2 threads (stretch <= 1.0 x memcpy)
 *   splice.stream_64k       streaming in 64 KiB chunks, whole response
 *   splice.stream_finish    streaming: time after the last chunk (target <= 0.2 x memcpy)
 *   splice.naive_cjson      cJSON over the whole body, then decode and validate each envelope
 *
 * and on a small body like the mock engine's reply in the end-to-end benchmark (one choice, 64
 * generated tokens with logprobs, 120 route rows of [24, 8] int16, ~60 KB), streamed in 16 KiB
 * chunks as libcurl delivers them, against memcpy of that body (warm, in cache), per response,
 * with the base64 kernel SR_B64_AUTO picks (BENCH_B64=scalar|avx2|avx512vbmi forces one, to
 * compare kernels on these lines):
 *   splice.small_stream_60k  begin + feeds + finish (harness time per request is the target)
 *   splice.small_finish      the finish alone (parse, re-attach, validate)
 *   splice.small_after_wait  thread CPU of the same splice per response when its thread first
 *                            sleeps 20 us (as a client's thread waits for each response), against
 *                            the same without the sleep in the same run (ratio; cpu_us of both)
 *
 * The peak resident memory of streaming is measured in a fresh child process (spawned with
 * posix_spawn) that generates the body 64 KiB at a time and never holds it:
 * splice.stream_64k.peak_rss.{known,unknown} (Content-Length known or not), ratio = peak RSS /
 * (decoded + remainder + 16 MiB), target <= 1.
 *
 * Python baselines (issue 12): the body is written to a temporary file and
 * bench/reference_splice.py runs on it with Debian's python3 + numpy (BENCH_PYTHON overrides the
 * interpreter, BENCH_NO_PYTHON=1 skips it); its pysplice.* lines are passed through, then
 *   splice.oneshot_1t.vs_py_reference   ratio = syncroll one-shot / Python splice path
 *   splice.oneshot_1t.vs_py_naive       ratio = syncroll one-shot / Python json.loads + decode
 * each with speedup = 1 / ratio (target: speedup >= 15 over the reference path).
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "sr_base64.h"
#include "sr_buf.h"
#include "sr_envelope.h"
#include "sr_splice.h"

extern char **environ;

#define CHOICES   16
#define TOKENS    122880
#define LAYERS    48
#define TOPK      8
#define RAW_BLOCK (3 * 16384) /* raw route bytes encoded per step: 64 KiB of base64 */

/* ---- body generation, streamed through an emit callback ---- */

typedef void (*emit_fn)(void *ctx, const char *p, size_t n);

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t tokens_of(int c)
{
    /* 7,680 on average, varying by choice, 122,880 in all. */
    return (size_t)(7680 + ((c % 2) ? 1024 * (c % 4) : -1024 * ((c + 1) % 4)));
}

static void gen_routes(emit_fn emit, void *ctx, size_t t, uint64_t seed)
{
    size_t total = t * LAYERS * TOPK * 2;
    unsigned char *raw = malloc(RAW_BLOCK);
    char *b64 = malloc(sr_base64_encoded_len(RAW_BLOCK));
    for (size_t done = 0; done < total;) {
        size_t n = total - done < RAW_BLOCK ? total - done : RAW_BLOCK;
        for (size_t i = 0; i < n; i += 2) {
            uint16_t v = (uint16_t)(xs(&seed) % 512);
            if (done + i == 0)
                v = 511;
            memcpy(raw + i, &v, 2);
        }
        emit(ctx, b64, sr_base64_encode(b64, raw, n, SR_B64_AUTO));
        done += n;
    }
    free(raw);
    free(b64);
}

static void gen_body(emit_fn emit, void *ctx)
{
    sr_buf b = SR_BUF_INIT;
    uint64_t seed = 0x51ce5eedull;
    emit(ctx, "{\"choices\":[", 12);
    for (int c = 0; c < CHOICES; c++) {
        size_t t = tokens_of(c);
        sr_buf_reset(&b);
        sr_buf_puts(&b, c ? ",{\"token_ids\":[" : "{\"token_ids\":[", NULL);
        for (size_t i = 0; i < t; i++)
            sr_buf_printf(&b, NULL, i ? ",%u" : "%u", (unsigned)(xs(&seed) % 151936));
        sr_buf_puts(&b, "],\"finish_reason\":\"stop\",\"logprobs\":null,\"text\":\"", NULL);
        for (int i = 0; i < 700; i++)
            sr_buf_puts(&b, "The quick brown fox jumps over the lazy dog. ", NULL);
        sr_buf_puts(&b, "\",\"routed_experts\":{\"data\":\"", NULL);
        emit(ctx, b.data, b.len);
        gen_routes(emit, ctx, t, seed + (uint64_t)c);
        sr_buf_reset(&b);
        sr_buf_printf(&b, NULL, "\",\"shape\":[%zu,%d,%d],\"dtype\":\"int16\"}}", t, LAYERS, TOPK);
        emit(ctx, b.data, b.len);
    }
    emit(ctx, "]}", 2);
    sr_buf_release(&b);
}

static void emit_buf(void *ctx, const char *p, size_t n)
{
    sr_buf_append(ctx, p, n, NULL);
}

/* ---- timed runs ---- */

typedef struct run_ctx {
    sr_splicer *s;
    const char *body;
    size_t len;
    double finish_ms;
} run_ctx;

static void die(const char *what, const sr_err *err)
{
    fprintf(stderr, "bench_splice: %s: %s %s\n", what, sr_code_name(err->code), err->msg);
    exit(1);
}

static void oneshot(void *p)
{
    run_ctx *c = p;
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r;
    if (sr_splice(c->s, c->body, c->len, (int64_t)c->len, &r, &err))
        die("one-shot", &err);
}

static void streamed(void *p)
{
    run_ctx *c = p;
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r;
    if (sr_splice_stream_begin(c->s, (int64_t)c->len, &err))
        die("begin", &err);
    for (size_t at = 0; at < c->len; at += 65536) {
        size_t n = c->len - at < 65536 ? c->len - at : 65536;
        if (sr_splice_stream_feed(c->s, c->body + at, n, &err))
            die("feed", &err);
    }
    double t0 = bench_now_ms();
    if (sr_splice_stream_finish(c->s, &r, &err))
        die("finish", &err);
    c->finish_ms = bench_now_ms() - t0;
}

static void naive(void *p)
{
    run_ctx *c = p;
    static sr_arena *arena;
    sr_err err = SR_ERR_INIT;
    if (!arena && sr_arena_new(&arena, 0, &err))
        die("arena", &err);
    sr_arena_reset(arena);
    cJSON *doc = cJSON_ParseWithLength(c->body, c->len);
    if (!doc) {
        fprintf(stderr, "bench_splice: cJSON rejected the body\n");
        exit(1);
    }
    sr_contract k = sr_contract_routes();
    for (cJSON *ch = cJSON_GetObjectItem(doc, "choices")->child; ch; ch = ch->next) {
        sr_ndarray a;
        if (sr_envelope_unpack(&a, cJSON_GetObjectItem(ch, "routed_experts"), SR_SHAPE_TEXT_UNKNOWN,
                               &k, arena, &err))
            die("naive unpack", &err);
    }
    cJSON_Delete(doc);
}

static bench_stats finish_stats(run_ctx *c, int reps)
{
    double *t = malloc(sizeof(double) * (size_t)reps);
    streamed(c);
    for (int i = 0; i < reps; i++) {
        streamed(c);
        t[i] = c->finish_ms;
    }
    for (int i = 1; i < reps; i++) {
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    }
    bench_stats s = {t[reps / 2], t[0], t[reps - 1]};
    free(t);
    return s;
}

/* The base64 kernel of the splicers: SR_B64_AUTO, or the one BENCH_B64 names. */
static sr_b64_impl bench_b64(void)
{
    const char *v = getenv("BENCH_B64");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return SR_B64_AUTO;
    if (strcmp(v, "scalar") == 0)
        return SR_B64_SCALAR;
    if (strcmp(v, "avx2") == 0)
        return SR_B64_AVX2;
    if (strcmp(v, "avx512vbmi") == 0)
        return SR_B64_AVX512;
    fprintf(stderr, "bench_splice: BENCH_B64 must be auto, scalar, avx2 or avx512vbmi\n");
    exit(2);
}

static sr_splicer *splicer(const sr_fields *f, int threads)
{
    sr_splicer *s;
    sr_err err = SR_ERR_INIT;
    sr_splice_opts o = SR_SPLICE_OPTS_INIT;
    o.threads = threads;
    o.impl = bench_b64();
    if (sr_splicer_new(&s, f, &o, &err))
        die("splicer", &err);
    return s;
}

/* ---- a small body like the mock engine's reply (bench_e2e's requests) ---- */

#define SMALL_ROWS   120 /* prompt + generated tokens with routes */
#define SMALL_GEN    64  /* generated tokens: token ids and logprobs */
#define SMALL_LAYERS 24
#define SMALL_CHUNK  16384 /* libcurl's write-callback size */
#define SMALL_LOOP   200   /* responses per timed sample */

static void gen_small_body(sr_buf *b)
{
    uint64_t seed = 0x5a11b0d7ull;
    sr_buf_puts(b, "{\"choices\":[{\"token_ids\":[", NULL);
    for (int i = 0; i < SMALL_GEN; i++)
        sr_buf_printf(b, NULL, i ? ",%u" : "%u", (unsigned)(xs(&seed) % 32000));
    sr_buf_puts(b, "],\"finish_reason\":\"stop\",\"logprobs\":{\"content\":[", NULL);
    for (int i = 0; i < SMALL_GEN; i++)
        sr_buf_printf(b, NULL, "%s{\"logprob\":%.17g}", i ? "," : "",
                      -8.0 * (double)(xs(&seed) >> 11) / 9007199254740992.0);
    sr_buf_puts(b, "]},\"routed_experts\":{\"data\":\"", NULL);
    size_t raw_n = (size_t)SMALL_ROWS * SMALL_LAYERS * TOPK * 2;
    unsigned char *raw = malloc(raw_n);
    char *b64 = malloc(sr_base64_encoded_len(raw_n));
    for (size_t i = 0; i < raw_n; i += 2) {
        uint16_t v = (uint16_t)(xs(&seed) % 512);
        memcpy(raw + i, &v, 2);
    }
    sr_buf_append(b, b64, sr_base64_encode(b64, raw, raw_n, SR_B64_AUTO), NULL);
    sr_buf_printf(b, NULL,
                  "\",\"shape\":[%d,%d,%d],\"dtype\":\"int16\"},\"syncroll\":{\"engine\":"
                  "\"engine-0\",\"weight_version\":0,\"rows\":[[0,%d,0]]}}]}",
                  SMALL_ROWS, SMALL_LAYERS, TOPK, SMALL_ROWS);
    free(raw);
    free(b64);
}

typedef struct small_ctx {
    sr_splicer *s;
    const char *body;
    size_t len;
    char *dst;
    double finish_ms; /* finish time of the last sample, summed over its responses */
} small_ctx;

/* One response streamed in SMALL_CHUNK pieces: begin, feeds, finish; the finish's wall time
 * (ms). */
static double small_stream_one(small_ctx *c)
{
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r;
    if (sr_splice_stream_begin(c->s, (int64_t)c->len, &err))
        die("small begin", &err);
    for (size_t at = 0; at < c->len; at += SMALL_CHUNK) {
        size_t n = c->len - at < SMALL_CHUNK ? c->len - at : SMALL_CHUNK;
        if (sr_splice_stream_feed(c->s, c->body + at, n, &err))
            die("small feed", &err);
    }
    double t0 = bench_now_ms();
    if (sr_splice_stream_finish(c->s, &r, &err))
        die("small finish", &err);
    return bench_now_ms() - t0;
}

static void small_streams(void *p)
{
    small_ctx *c = p;
    c->finish_ms = 0;
    for (int k = 0; k < SMALL_LOOP; k++)
        c->finish_ms += small_stream_one(c);
}

static void small_copies(void *p)
{
    small_ctx *c = p;
    for (int k = 0; k < SMALL_LOOP; k++) {
        memcpy(c->dst, c->body, c->len);
        bench_sink(c->dst, c->len);
    }
}

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Thread CPU (us) per response of SMALL_LOOP streamed responses; with `wait`, the thread sleeps
 * 20 us before each (outside the timed part), so each starts as a woken thread does: after the
 * core ran something else or idled. */
static double small_cpu_per_response(small_ctx *c, int wait)
{
    double total = 0;
    for (int k = 0; k < SMALL_LOOP; k++) {
        if (wait) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        double t0 = thread_cpu_us();
        small_stream_one(c);
        total += thread_cpu_us() - t0;
    }
    return total / SMALL_LOOP;
}

/* The same splice warm and after a wait, alternated, `reps` samples each (medians). */
static void bench_small_after_wait(small_ctx *c, int reps)
{
    double *t = malloc(sizeof(double) * 2 * (size_t)reps);
    for (int i = 0; i < reps; i++) {
        t[i] = small_cpu_per_response(c, 0) / 1e3;
        t[reps + i] = small_cpu_per_response(c, 1) / 1e3;
    }
    bench_stats warm = bench_stats_of(t, reps), woken = bench_stats_of(t + reps, reps);
    bench_report_ex("splice.small_after_wait", woken, warm, "splice.small_warm_cpu",
                    "cpu_us=%.2f warm_cpu_us=%.2f", woken.median_ms * 1e3, warm.median_ms * 1e3);
    free(t);
}

/* Streams and memcpy alternate, one sample of SMALL_LOOP responses each in turn; times are per
 * response. */
static void bench_small(const sr_fields *fields, int reps)
{
    sr_buf body = SR_BUF_INIT;
    gen_small_body(&body);
    small_ctx c = {splicer(fields, 1), body.data, body.len, malloc(body.len), 0};
    double *t = malloc(sizeof(double) * 3 * (size_t)reps);
    small_copies(&c);
    small_streams(&c);
    for (int i = 0; i < reps; i++) {
        bench_samples(t + i, small_copies, &c, 1);
        bench_samples(t + reps + i, small_streams, &c, 1);
        t[2 * reps + i] = c.finish_ms;
    }
    for (int i = 0; i < 3 * reps; i++)
        t[i] /= SMALL_LOOP;
    bench_stats m = bench_stats_of(t, reps), st = bench_stats_of(t + reps, reps),
                fi = bench_stats_of(t + 2 * reps, reps);
    const sr_splice_result *r;
    sr_err err = SR_ERR_INIT;
    if (sr_splice(c.s, body.data, body.len, -1, &r, &err))
        die("small check", &err);
    printf("# small body: %zu bytes, %llu text bytes, %zu blobs, %zu integer arrays, base64 %s\n",
           body.len, (unsigned long long)r->stats.text_bytes, r->stats.blobs, r->stats.int_arrays,
           sr_base64_impl_name(bench_b64()));
    bench_report_ex("splice.small_stream_60k", st, m, "memcpy_small_body", "us=%.2f memcpy_us=%.3f",
                    st.median_ms * 1e3, m.median_ms * 1e3);
    bench_report_ex("splice.small_finish", fi, m, "memcpy_small_body", "us=%.2f",
                    fi.median_ms * 1e3);
    bench_small_after_wait(&c, reps);
    free(t);
    free(c.dst);
    sr_splicer_free(c.s);
    sr_buf_release(&body);
}

/* ---- peak RSS of streaming, in a child that never holds the body ---- */

typedef struct feeder {
    sr_splicer *s;
    char chunk[65536];
    size_t used;
    uint64_t total;
} feeder;

static void emit_feed(void *ctx, const char *p, size_t n)
{
    feeder *f = ctx;
    while (n) {
        size_t k = sizeof(f->chunk) - f->used < n ? sizeof(f->chunk) - f->used : n;
        memcpy(f->chunk + f->used, p, k);
        f->used += k;
        p += k;
        n -= k;
        if (f->used == sizeof(f->chunk)) {
            sr_err err = SR_ERR_INIT;
            if (sr_splice_stream_feed(f->s, f->chunk, f->used, &err))
                die("child feed", &err);
            f->total += f->used;
            f->used = 0;
        }
    }
}

static void count_bytes(void *ctx, const char *p, size_t n)
{
    (void)p;
    *(uint64_t *)ctx += n;
}

/* VmHWM of this process's address space (getrusage's maxrss would also count the parent's
 * when posix_spawn shares its memory until exec). */
static long vm_hwm_kib(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (fp && fgets(line, sizeof(line), fp)) {
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    }
    if (fp)
        fclose(fp);
    return kib;
}

static int rss_child(const sr_fields *fields, int known)
{
    static feeder f;
    uint64_t len = 0;
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r;
    if (known)
        gen_body(count_bytes, &len);
    f.s = splicer(fields, 1);
    if (sr_splice_stream_begin(f.s, known ? (int64_t)len : -1, &err))
        die("child begin", &err);
    gen_body(emit_feed, &f);
    if (f.used && sr_splice_stream_feed(f.s, f.chunk, f.used, &err))
        die("child feed", &err);
    if (sr_splice_stream_finish(f.s, &r, &err))
        die("child finish", &err);
    double mib = 1024.0 * 1024.0;
    double peak = (double)vm_hwm_kib() * 1024.0 / mib;
    double dec = (double)r->stats.decoded_bytes / mib, rem = (double)r->stats.text_bytes / mib;
    char name[64];
    snprintf(name, sizeof(name), "splice.stream_64k.peak_rss.%s", known ? "known" : "unknown");
    bench_report_value(name, peak / (dec + rem + 16.0), "decoded+remainder+16MiB",
                       "peak_mib=%.1f decoded_mib=%.1f remainder_mib=%.2f limit_mib=%.1f", peak,
                       dec, rem, dec + rem + 16.0);
    sr_splicer_free(f.s);
    return 0;
}

static void spawn_rss_child(const char *self, const char *mode)
{
    pid_t pid;
    char *argv[] = {(char *)self, "--rss-child", (char *)mode, NULL};
    fflush(stdout);
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0) {
        printf("# splice.stream_64k peak_rss: could not spawn the measuring child\n");
        return;
    }
    int st;
    waitpid(pid, &st, 0);
}

/* ---- the Python baselines on the same body ---- */

/* Writes the body to a fresh temporary file; its path goes to `path`. */
static int write_body(char *path, size_t cap, const sr_buf *body)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, cap, "%s/bench_splice_body_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < body->len) {
        ssize_t w = write(fd, body->data + done, body->len - done);
        if (w <= 0) {
            close(fd);
            unlink(path);
            return -1;
        }
        done += (size_t)w;
    }
    close(fd);
    return 0;
}

/* Parses `bench: <want> median_ms=.. min_ms=.. max_ms=..` into *s; 1 if the line is that one. */
static int parse_line(const char *line, const char *want, bench_stats *s)
{
    char name[128];
    bench_stats t;
    if (sscanf(line, "bench: %127s median_ms=%lf min_ms=%lf max_ms=%lf", name, &t.median_ms,
               &t.min_ms, &t.max_ms) != 4 ||
        strcmp(name, want) != 0)
        return 0;
    *s = t;
    return 1;
}

/* Runs reference_splice.py on the body; its lines are echoed. 0 when both paths were timed. */
static int run_python(const sr_buf *body, int reps, bench_stats *ref, bench_stats *naive)
{
    const char *py = getenv("BENCH_PYTHON");
    const char *script = getenv("BENCH_REFERENCE_SPLICE");
    char path[512], reps_s[16], script_buf[600];
    if (!py || !*py)
        py = "/usr/bin/python3";
    if (!script || !*script) {
        snprintf(script_buf, sizeof(script_buf), "%s/bench/reference_splice.py", SR_SOURCE_DIR);
        script = script_buf;
    }
    if (write_body(path, sizeof(path), body)) {
        printf("# python baseline: cannot write the body to a temporary file\n");
        return -1;
    }
    snprintf(reps_s, sizeof(reps_s), "%d", reps);
    int fds[2];
    pid_t pid = -1;
    int found = 0;
    if (pipe(fds) == 0) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        char *argv[] = {(char *)py, (char *)script, path, reps_s, NULL};
        fflush(stdout);
        if (posix_spawn(&pid, py, &fa, NULL, argv, environ) != 0)
            pid = -1;
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        FILE *in = fdopen(fds[0], "r");
        char line[512];
        while (in && fgets(line, sizeof(line), in)) {
            fputs(line, stdout);
            found |= parse_line(line, "pysplice.reference", ref) ? 1 : 0;
            found |= parse_line(line, "pysplice.naive", naive) ? 2 : 0;
        }
        fflush(stdout);
        if (in)
            fclose(in);
    }
    int st = 0;
    if (pid > 0)
        waitpid(pid, &st, 0);
    unlink(path);
    if (pid <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || found != 3) {
        printf("# python baseline: %s %s did not give both timings (needs Debian's python3 and "
               "python3-numpy: make deps)\n",
               py, script);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    sr_fields *fields;
    sr_err err = SR_ERR_INIT;
    if (sr_fields_new(&fields, &err) || sr_fields_add_builtins(fields, &err))
        die("fields", &err);
    if (argc == 3 && strcmp(argv[1], "--rss-child") == 0)
        return rss_child(fields, strcmp(argv[2], "known") == 0);
    /* BENCH_SPLICE_ONLY=small runs only the small-body lines (for profiling). */
    const char *only = getenv("BENCH_SPLICE_ONLY");
    if (only && strcmp(only, "small") == 0) {
        bench_small(fields, bench_reps(11));
        sr_fields_free(fields);
        return 0;
    }

    sr_buf body = SR_BUF_INIT;
    body.max = (size_t)1 << 30;
    gen_body(emit_buf, &body);
    int reps = bench_reps(11);
    printf("# splice body: %zu bytes (%.1f MiB), %d choices, %d tokens, [T,%d,%d] int16\n",
           body.len, (double)body.len / 1048576.0, CHOICES, TOKENS, LAYERS, TOPK);
    /* One-shot and memcpy alternate (bench_measure_vs_memcpy); the one-shot samples are kept and
     * pooled with a second set taken after the Python baseline, so a load change on this shared
     * machine favours neither side. */
    run_ctx c = {splicer(fields, 1), body.data, body.len, 0};
    double *one_ms = malloc(sizeof(double) * 2 * (size_t)reps);
    bench_stats m, one;
    bench_measure_vs_memcpy(&one, &m, one_ms, oneshot, &c, body.len, reps);
    bench_report("splice.memcpy_body", m, m, "memcpy_body");
    bench_report("splice.oneshot_1t", one, m, "memcpy_body");
    const sr_splice_result *r;
    if (sr_splice(c.s, body.data, body.len, -1, &r, &err))
        die("check", &err);
    printf("# one-shot: %zu blobs, %zu integer arrays, %llu decoded bytes, %llu text bytes, "
           "%d pass(es) over the body\n",
           r->stats.blobs, r->stats.int_arrays, (unsigned long long)r->stats.decoded_bytes,
           (unsigned long long)r->stats.text_bytes, r->stats.passes);

    run_ctx c2 = {splicer(fields, 2), body.data, body.len, 0};
    bench_report("splice.oneshot_2t", bench_measure(oneshot, &c2, reps), m, "memcpy_body");
    bench_report("splice.stream_64k", bench_measure(streamed, &c, reps), m, "memcpy_body");
    bench_report("splice.stream_finish", finish_stats(&c, reps), m, "memcpy_body");
    bench_report("splice.naive_cjson", bench_measure(naive, &c, reps < 11 ? reps : 11), m,
                 "memcpy_body");
    const char *nopy = getenv("BENCH_NO_PYTHON");
    bench_stats py_ref, py_naive;
    if (!(nopy && *nopy && strcmp(nopy, "0") != 0) &&
        run_python(&body, reps, &py_ref, &py_naive) == 0) {
        oneshot(&c);
        bench_samples(one_ms + reps, oneshot, &c, reps);
        one = bench_stats_of(one_ms, 2 * reps);
        bench_report_ex("splice.oneshot_1t.vs_py_reference", one, py_ref, "pysplice.reference",
                        "speedup=%.1f", py_ref.median_ms / one.median_ms);
        bench_report_ex("splice.oneshot_1t.vs_py_naive", one, py_naive, "pysplice.naive",
                        "speedup=%.1f", py_naive.median_ms / one.median_ms);
    }
    free(one_ms);
    bench_small(fields, reps);
    sr_splicer_free(c.s);
    sr_splicer_free(c2.s);
    sr_buf_release(&body);
    spawn_rss_child(argv[0], "known");
    spawn_rss_child(argv[0], "unknown");
    sr_fields_free(fields);
    return 0;
}
