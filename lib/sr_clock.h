/*
 * The one monotonic clock of syncroll (CLOCK_MONOTONIC): every timing, deadline and latency
 * sample in the library and the harness reads it through these functions, so all of them
 * measure on the same clock (sr_clock_cpu_ns is the one exception: thread CPU time, not a
 * clock of events). Thread-safe; no state.
 */
#ifndef SR_CLOCK_H
#define SR_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
static inline int64_t sr_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The same clock in milliseconds, with sub-millisecond fraction. */
static inline double sr_clock_ms(void)
{
    return (double)sr_clock_ns() / 1e6;
}

/* The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID): time it ran, not time
 * it waited. A system call (0.5-2 us on this project's virtual machines), so callers sample it
 * sparingly. */
static inline int64_t sr_clock_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The least of `tries` empty intervals of sr_clock_cpu_ns, in ns (0 if none was positive): part
 * of each read's own system call falls inside any interval it bounds, so code that sums many
 * short intervals subtracts this much from each. */
static inline int64_t sr_clock_cpu_pair_ns(int tries)
{
    int64_t best = INT64_MAX;
    for (int i = 0; i < tries; i++) {
        int64_t a = sr_clock_cpu_ns(), d = sr_clock_cpu_ns() - a;
        best = d < best ? d : best;
    }
    return best > 0 && best != INT64_MAX ? best : 0;
}

#endif /* SR_CLOCK_H */
