/*
 * sr_pool: worker-pool sizing from the CPU topology, and a parallel row fill
 * (docs/reference/skyrl.md §7.1, §7.2).
 *
 * Pool sizing. sr_pool_workers() returns max(1, min(cap, cores - reserved)) where cores is
 * either given or detected as min(CPU affinity count, cgroup CPU quota):
 *   - affinity: the number of CPUs in the process's affinity mask (sched_getaffinity), or the
 *     value of an injected function. If that fails (or reports fewer than one CPU), the default
 *     falls back to the online CPU count (at least 1); the quirk `affinity_error_fatal` (bug
 * skyrl-affinity-oserror) instead returns SR_E_POOL_AFFINITY, as the reference crashes on an
 * OSError.
 *   - quota: cgroup v2 `<root>/cpu.max` is tried first. It must hold exactly two
 *     whitespace-separated numbers `quota period`; a quota of `max`, a missing or unreadable
 *     file, or text that is not two decimal numbers yields nothing and v1 is tried:
 *     `<root>/cpu/cpu.cfs_quota_us` and `<root>/cpu/cpu.cfs_period_us`, one decimal number each
 *     (surrounding whitespace allowed); missing, unreadable, garbage or a negative quota (the
 *     usual -1) yield nothing. A quota or period <= 0 from whichever version answered means no
 *     quota; otherwise the quota in CPUs is max(1, floor(quota / period)). Like the reference,
 *     only the namespace-root files are read (correct inside a container with a cgroup
 *     namespace). Beyond the reference: files are read up to SR_POOL_FILE_MAX bytes (a longer
 *     file is garbage), non-finite numbers (inf, nan), hexadecimal and Python's digit
 *     underscores are garbage, and a quota beyond INT_MAX CPUs is clamped.
 * Everything the detection reads is injectable through sr_cpu_topology so tests can cover
 * every case; NULL means the real machine.
 *
 * Row fill. sr_fill_rows(n, workers, fn, ctx) calls fn(ctx, row, err) for every row in
 * [0, n), each exactly once. With min(workers, n) == 1 it runs serially, in row order, on the
 * calling thread and stops at the first failing row. Otherwise it runs an OpenMP team of
 * min(workers, n) threads (the calling thread is one of them; OpenMP may give fewer threads),
 * every row runs even after a failure, and the error of the LOWEST failing row index is
 * returned, whatever the completion order. Callbacks must write disjoint memory and must not
 * rely on thread identity. The reference memoises its default worker count per process; this
 * library keeps no global state, so callers compute sr_default_fill_workers() once and keep it.
 *
 * Errors: SR_E_POOL_ARG (cap < 1, reserved < 0, row count < 0, workers < 1), SR_E_INVAL (NULL
 * callback or out-parameter), SR_E_POOL_AFFINITY (quirk only). A failing callback's own code
 * and message are returned unchanged; a callback that returns non-zero without a negative
 * sr_code, or without filling err, becomes SR_E_POOL_ROW naming the row (err->offset = row).
 *
 * Thread-safety: all functions are reentrant; sr_fill_rows may be called from several threads
 * at once (nested calls inside a parallel region get a team of one).
 */
#ifndef SR_POOL_H
#define SR_POOL_H

#include <stdint.h>

#include "sr_err.h"

/* The reference's defaults for batch filling (MAX_FILL_WORKERS, RESERVED_FILL_CORES). */
#define SR_FILL_MAX_WORKERS    32
#define SR_FILL_RESERVED_CORES 8
/* Pass as `cores` to sr_pool_workers to detect the permitted cores. */
#define SR_POOL_DETECT_CORES (-1)
/* Files under the cgroup root larger than this are treated as garbage. */
#define SR_POOL_FILE_MAX 256
/* The cgroup namespace root read by default. */
#define SR_POOL_CGROUP_ROOT "/sys/fs/cgroup"

/*
 * Where the CPU topology comes from. Plain struct; start from SR_CPU_TOPOLOGY_INIT.
 *   cgroup_root   directory holding cpu.max and cpu/cpu.cfs_*; NULL: SR_POOL_CGROUP_ROOT.
 *   affinity      returns 0 and the affinity CPU count in *count, or non-zero (an errno value)
 *                 on failure; NULL: sched_getaffinity of the calling process.
 *   affinity_ctx  passed to `affinity`.
 *   online_cpus   the online CPU count used by the fallback; <= 0: sysconf(_SC_NPROCESSORS_ONLN),
 *                 itself replaced by 1 when it fails.
 *   affinity_error_fatal  quirk skyrl-affinity-oserror: an affinity failure is SR_E_POOL_AFFINITY
 *                 instead of falling back to the online count.
 */
typedef struct sr_cpu_topology {
    const char *cgroup_root;
    int (*affinity)(void *ctx, int64_t *count);
    void *affinity_ctx;
    int64_t online_cpus;
    int affinity_error_fatal;
} sr_cpu_topology;

#define SR_CPU_TOPOLOGY_INIT                                                                       \
    {                                                                                              \
        NULL, NULL, NULL, 0, 0                                                                     \
    }

/*
 * The cgroup CPU quota in whole CPUs (>= 1), or 0 when there is none, read under `cgroup_root`
 * (NULL: SR_POOL_CGROUP_ROOT) as described above. Never fails on file contents; SR_E_INVAL only
 * for a NULL out-parameter.
 */
int sr_cgroup_cpu_quota(int64_t *cpus, const char *cgroup_root, sr_err *err);

/*
 * The permitted CPU count: the affinity count, or min(affinity, quota) when there is a quota;
 * at least 1, at most INT_MAX. `topo` may be NULL (the real machine). SR_E_POOL_AFFINITY only
 * with the quirk.
 */
int sr_permitted_cpu_cores(int *cores, const sr_cpu_topology *topo, sr_err *err);

/*
 * max(1, min(cap, cores - reserved)). `cores` >= 0 is used as given; SR_POOL_DETECT_CORES (any
 * negative value) detects it with sr_permitted_cpu_cores(topo). Errors, in this order:
 * cap < 1 -> SR_E_POOL_ARG "pool cap must be positive, got <cap>"; reserved < 0 ->
 * SR_E_POOL_ARG "reserved cores must be non-negative, got <r>"; detection errors.
 */
int sr_pool_workers(int *workers, int cap, int reserved, int cores, const sr_cpu_topology *topo,
                    sr_err *err);

/* The default fill width: sr_pool_workers(SR_FILL_MAX_WORKERS, SR_FILL_RESERVED_CORES, detect). */
int sr_default_fill_workers(int *workers, const sr_cpu_topology *topo, sr_err *err);

/*
 * Fills one row. Returns 0, or a negative sr_code with `err` filled (err is never NULL here and
 * is private to the call). Must only write memory that belongs to `row`.
 */
typedef int (*sr_fill_fn)(void *ctx, int64_t row, sr_err *err);

/*
 * Runs fn for rows 0..n-1 as described above. Checks, in this order: n < 0 -> SR_E_POOL_ARG
 * "row count must be non-negative, got <n>"; n == 0 -> returns 0 at once (fn is not called and
 * workers is not checked); workers < 1 -> SR_E_POOL_ARG "worker count must be positive, got <w>";
 * fn NULL -> SR_E_INVAL.
 */
int sr_fill_rows(int64_t n, int workers, sr_fill_fn fn, void *ctx, sr_err *err);

#endif /* SR_POOL_H */
