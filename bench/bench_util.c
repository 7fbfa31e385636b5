#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bench_stats bench_measure(void (*fn)(void *ctx), void *ctx, int reps)
{
    if (reps < 1)
        reps = 1;
    double *t = malloc(sizeof(double) * (size_t)reps);
    fn(ctx);
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now_ms();
        fn(ctx);
        t[i] = bench_now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    bench_stats s = {t[reps / 2], t[0], t[reps - 1]};
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

void bench_report(const char *name, bench_stats s, bench_stats base, const char *base_name)
{
    double ratio = base.median_ms > 0 ? s.median_ms / base.median_ms : 0.0;
    printf("bench: %s median_ms=%.3f min_ms=%.3f max_ms=%.3f ratio=%.3f vs=%s\n", name,
           s.median_ms, s.min_ms, s.max_ms, ratio, base_name);
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
