/*
 * Shared benchmark plumbing. Every measurement is the median of >= 11 repetitions, reported as a
 * ratio against a baseline measured in the same process (absolute times drift on this shared
 * machine, design.md §8), in exactly one line:
 *
 *   bench: <name> median_ms=<x> min_ms=<x> max_ms=<x> ratio=<x> vs=<baseline name> [key=<x>...]
 *
 * A measurement that is not a time (a peak RSS, a rate) drops the three times and keeps ratio
 * and vs: `bench: <name> [key=<x>...] ratio=<x> vs=<limit name>`. Optional key=value fields
 * carry what a target in other units needs (gbps=, rps=, speedup=, ...). Names, keys and values
 * hold no spaces. `make bench` collects the lines into reports/bench/latest.txt and .json and
 * judges them against bench/targets.txt (bench/README.md).
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

/* Statistics of n >= 1 samples in milliseconds (sorts them in place). */
bench_stats bench_stats_of(double *ms, int n);

/* Runs fn(ctx) `reps` times without a warm-up, storing each time (ms) in ms[0 .. reps-1]. */
void bench_samples(double *ms, void (*fn)(void *ctx), void *ctx, int reps);

/* Median time of memcpy of n bytes between two warm buffers, the usual baseline. */
bench_stats bench_memcpy(size_t n, int reps);

/*
 * Times fn(ctx) and memcpy of n bytes alternately, one repetition of each in turn after one
 * warm-up call of each, so both see the same load on this shared machine (a baseline measured
 * during a quiet moment and a measurement during a busy one distort the ratio). fn's times go to
 * ms[0 .. reps-1] (may be NULL); the statistics to *s and *base.
 */
void bench_measure_vs_memcpy(bench_stats *s, bench_stats *base, double *ms, void (*fn)(void *ctx),
                             void *ctx, size_t n, int reps);

/* Prints one `bench:` line; ratio = s.median_ms / base.median_ms. */
void bench_report(const char *name, bench_stats s, bench_stats base, const char *base_name);

/*
 * bench_report with extra ` key=value` fields after vs: `extra_fmt` is a printf format producing
 * them separated by spaces (e.g. "gbps=%.3f"), or NULL.
 */
void bench_report_ex(const char *name, bench_stats s, bench_stats base, const char *base_name,
                     const char *extra_fmt, ...) __attribute__((format(printf, 5, 6)));

/* A line without times: `bench: <name> <extra> ratio=<ratio> vs=<base_name>`. */
void bench_report_value(const char *name, double ratio, const char *base_name,
                        const char *extra_fmt, ...) __attribute__((format(printf, 4, 5)));

/* Number of repetitions: BENCH_REPS from the environment if set (>= 11), else `dflt`. */
int bench_reps(int dflt);

/* Prevents the compiler from discarding a computed value. */
void bench_sink(const void *p, size_t n);

#endif /* BENCH_UTIL_H */
