#include "bench_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sr_clock.h"

double bench_now_ms(void)
{
    return sr_clock_ms();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bench_stats bench_stats_of(double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof(double), cmp_double);
    bench_stats s = {ms[n / 2], ms[0], ms[n - 1]};
    return s;
}

void bench_samples(double *ms, void (*fn)(void *ctx), void *ctx, int reps)
{
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now_ms();
        fn(ctx);
        ms[i] = bench_now_ms() - t0;
    }
}

bench_stats bench_measure(void (*fn)(void *ctx), void *ctx, int reps)
{
    if (reps < 1)
        reps = 1;
    double *t = malloc(sizeof(double) * (size_t)reps);
    fn(ctx);
    bench_samples(t, fn, ctx, reps);
    bench_stats s = bench_stats_of(t, reps);
    free(t);
    return s;
}

typedef struct memcpy_ctx {
    void *dst;
    const void *src;
    size_t n;
} memcpy_ctx;

static void do_memcpy(void *p)
{
    memcpy_ctx *c = p;
    memcpy(c->dst, c->src, c->n);
    bench_sink(c->dst, c->n);
}

bench_stats bench_memcpy(size_t n, int reps)
{
    memcpy_ctx c;
    void *src = malloc(n ? n : 1);
    void *dst = malloc(n ? n : 1);
    memset(src, 0x5a, n);
    memset(dst, 0, n);
    c.dst = dst;
    c.src = src;
    c.n = n;
    bench_stats s = bench_measure(do_memcpy, &c, reps);
    free(src);
    free(dst);
    return s;
}

void bench_measure_vs_memcpy(bench_stats *s, bench_stats *base, double *ms, void (*fn)(void *ctx),
                             void *ctx, size_t n, int reps)
{
    if (reps < 1)
        reps = 1;
    memcpy_ctx c;
    void *src = malloc(n ? n : 1);
    void *dst = malloc(n ? n : 1);
    double *t = malloc(sizeof(double) * 2 * (size_t)reps);
    memset(src, 0x5a, n);
    memset(dst, 0, n);
    c.dst = dst;
    c.src = src;
    c.n = n;
    do_memcpy(&c);
    fn(ctx);
    for (int i = 0; i < reps; i++) {
        bench_samples(t + reps + i, do_memcpy, &c, 1);
        bench_samples(t + i, fn, ctx, 1);
    }
    if (ms)
        memcpy(ms, t, sizeof(double) * (size_t)reps);
    *s = bench_stats_of(t, reps);
    *base = bench_stats_of(t + reps, reps);
    free(t);
    free(src);
    free(dst);
}

static void report_line(const char *name, bench_stats s, bench_stats base, const char *base_name,
                        const char *extra)
{
    double ratio = base.median_ms > 0 ? s.median_ms / base.median_ms : 0.0;
    printf("bench: %s median_ms=%.3f min_ms=%.3f max_ms=%.3f ratio=%.3f vs=%s%s%s\n", name,
           s.median_ms, s.min_ms, s.max_ms, ratio, base_name, *extra ? " " : "", extra);
    fflush(stdout);
}

void bench_report(const char *name, bench_stats s, bench_stats base, const char *base_name)
{
    report_line(name, s, base, base_name, "");
}

void bench_report_ex(const char *name, bench_stats s, bench_stats base, const char *base_name,
                     const char *extra_fmt, ...)
{
    char extra[512] = "";
    if (extra_fmt) {
        va_list ap;
        va_start(ap, extra_fmt);
        vsnprintf(extra, sizeof(extra), extra_fmt, ap);
        va_end(ap);
    }
    report_line(name, s, base, base_name, extra);
}

void bench_report_value(const char *name, double ratio, const char *base_name,
                        const char *extra_fmt, ...)
{
    char extra[512] = "";
    if (extra_fmt) {
        va_list ap;
        va_start(ap, extra_fmt);
        vsnprintf(extra, sizeof(extra), extra_fmt, ap);
        va_end(ap);
    }
    printf("bench: %s %s%sratio=%.3f vs=%s\n", name, extra, *extra ? " " : "", ratio, base_name);
    fflush(stdout);
}

int bench_reps(int dflt)
{
    const char *e = getenv("BENCH_REPS");
    if (e) {
        int v = atoi(e);
        if (v >= 11)
            return v;
    }
    return dflt < 11 ? 11 : dflt;
}

void bench_sink(const void *p, size_t n)
{
    __asm__ volatile("" : : "r"(p), "r"(n) : "memory");
}
