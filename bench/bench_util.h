/*
 * Shared benchmark plumbing. Every measurement is the median of >= 11 repetitions, reported as a
 * ratio against a baseline measured in the same process (absolute times drift on this shared
 * machine, perf-anchors.md), in exactly one line:
 *
 *   bench: <name> median_ms=<x> min_ms=<x> max_ms=<x> ratio=<x> vs=<baseline name>
 *
 * `make bench` collects these lines into reports/bench/latest.txt.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stddef.h>

typedef struct bench_stats {
    double median_ms, min_ms, max_ms;
} bench_stats;

/* Monotonic time in milliseconds. */
double bench_now_ms(void);

/* Runs fn(ctx) `reps` times (after one warm-up call) and returns the statistics. */
bench_stats bench_measure(void (*fn)(void *ctx), void *ctx, int reps);

/* Median time of memcpy of n bytes between two warm buffers, the usual baseline. */
bench_stats bench_memcpy(size_t n, int reps);

/* Prints one `bench:` line; ratio = s.median_ms / base.median_ms. */
void bench_report(const char *name, bench_stats s, bench_stats base, const char *base_name);

/* Number of repetitions: BENCH_REPS from the environment if set (>= 11), else `dflt`. */
int bench_reps(int dflt);

/* Prevents the compiler from discarding a computed value. */
void bench_sink(const void *p, size_t n);

#endif /* BENCH_UTIL_H */
