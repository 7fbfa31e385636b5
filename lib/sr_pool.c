#include "sr_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- cgroup quota ---- */

/*
 * Reads a whole small file into buf as a NUL-terminated string. Returns 0 on success and -1 when
 * the file is missing, unreadable or longer than SR_POOL_FILE_MAX bytes; all of these mean "no
 * answer" to the caller, as OSError does in the reference.
 */
static int read_small_file(char *buf, size_t cap, const char *root, const char *rel)
{
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s", root, rel);
    if (n < 0 || (size_t)n >= sizeof(path))
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (;;) {
        ssize_t got = read(fd, buf + len, cap - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            close(fd);
            return -1;
        }
        if (got == 0)
            break;
        len += (size_t)got;
        if (len == cap - 1) {
            /* A file that fills the buffer is either too long or exactly at the limit; one more
             * byte tells which. */
            char extra;
            ssize_t more = read(fd, &extra, 1);
            close(fd);
            if (more != 0)
                return -1;
            buf[len] = '\0';
            return 0;
        }
    }
    close(fd);
    buf[len] = '\0';
    return 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/*
 * Parses exactly the decimal number in [s, s + len). Only digits, '.', exponent and signs are
 * allowed, so strtod's hexadecimal, "inf" and "nan" forms count as garbage: a non-finite quota
 * would crash the reference's floor() and means nothing useful here.
 */
static int parse_decimal(double *out, const char *s, size_t len)
{
    char tok[SR_POOL_FILE_MAX + 1];
    if (len == 0 || len > SR_POOL_FILE_MAX)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
            return -1;
    }
    memcpy(tok, s, len);
    tok[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(tok, &end);
    if (end != tok + len || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* Splits text on whitespace into at most `max` tokens; returns the token count (max + 1 when
 * there are more). */
static int split_ws(const char *text, const char **tok, size_t *tlen, int max)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        while (*p && is_space(*p))
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && !is_space(*p))
            p++;
        if (n == max)
            return max + 1;
        tok[n] = start;
        tlen[n] = (size_t)(p - start);
        n++;
    }
    return n;
}

/* cgroup v2: 1 with (quota, period) when cpu.max holds two numbers, 0 when it says nothing. */
static int quota_v2(double *quota, double *period, const char *root)
{
    char buf[SR_POOL_FILE_MAX + 1];
    if (read_small_file(buf, sizeof(buf), root, "cpu.max"))
        return 0;
    const char *tok[2];
    size_t tlen[2];
    if (split_ws(buf, tok, tlen, 2) != 2)
        return 0;
    if (tlen[0] == 3 && memcmp(tok[0], "max", 3) == 0)
        return 0;
    if (parse_decimal(quota, tok[0], tlen[0]) || parse_decimal(period, tok[1], tlen[1]))
        return 0;
    return 1;
}

static int read_number(double *out, const char *root, const char *rel)
{
    char buf[SR_POOL_FILE_MAX + 1];
    if (read_small_file(buf, sizeof(buf), root, rel))
        return -1;
    const char *tok[1];
    size_t tlen[1];
    if (split_ws(buf, tok, tlen, 1) != 1)
        return -1;
    return parse_decimal(out, tok[0], tlen[0]);
}

/* cgroup v1: 1 with (quota, period) when both files hold numbers and the quota is not negative. */
static int quota_v1(double *quota, double *period, const char *root)
{
    if (read_number(quota, root, "cpu/cpu.cfs_quota_us") ||
        read_number(period, root, "cpu/cpu.cfs_period_us"))
        return 0;
    return *quota >= 0;
}

int sr_cgroup_cpu_quota(int64_t *cpus, const char *cgroup_root, sr_err *err)
{
    if (!cpus)
        return sr_err_set(err, SR_E_INVAL, "sr_cgroup_cpu_quota needs an out-parameter");
    const char *root = cgroup_root ? cgroup_root : SR_POOL_CGROUP_ROOT;
    double quota = 0, period = 0;
    *cpus = 0;
    if (!quota_v2(&quota, &period, root) && !quota_v1(&quota, &period, root))
        return 0;
    if (quota <= 0 || period <= 0)
        return 0;
    double whole = floor(quota / period);
    if (!isfinite(whole) || whole >= 9.2e18)
        *cpus = INT64_MAX;
    else
        *cpus = whole < 1 ? 1 : (int64_t)whole;
    return 0;
}

/* ---- affinity and permitted cores ---- */

/* The default affinity source: the size of sched_getaffinity(0), growing the set when the
 * kernel's CPU mask is larger than the current guess. */
static int real_affinity(void *ctx, int64_t *count)
{
    (void)ctx;
    for (int ncpu = 1024; ncpu <= (1 << 20); ncpu *= 2) {
        cpu_set_t *set = CPU_ALLOC((size_t)ncpu);
        if (!set)
            return ENOMEM;
        size_t size = CPU_ALLOC_SIZE((size_t)ncpu);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            *count = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return 0;
        }
        int e = errno;
        CPU_FREE(set);
        if (e != EINVAL)
            return e ? e : EIO;
    }
    return EINVAL;
}

static int64_t online_cpus(const sr_cpu_topology *topo)
{
    if (topo && topo->online_cpus > 0)
        return topo->online_cpus;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

int sr_permitted_cpu_cores(int *cores, const sr_cpu_topology *topo, sr_err *err)
{
    if (!cores)
        return sr_err_set(err, SR_E_INVAL, "sr_permitted_cpu_cores needs an out-parameter");
    int (*aff)(void *, int64_t *) = topo && topo->affinity ? topo->affinity : real_affinity;
    void *actx = topo ? topo->affinity_ctx : NULL;
    int64_t n = 0;
    int e = aff(actx, &n);
    if (e != 0 || n < 1) {
        if (topo && topo->affinity_error_fatal)
            return sr_err_set(err, SR_E_POOL_AFFINITY,
                              "cannot read the CPU affinity of the process: %s",
                              e ? strerror(e) : "empty affinity mask");
        n = online_cpus(topo);
    }
    int64_t quota = 0;
    int rc = sr_cgroup_cpu_quota(&quota, topo ? topo->cgroup_root : NULL, err);
    if (rc)
        return rc;
    if (quota > 0 && quota < n)
        n = quota;
    *cores = n > INT_MAX ? INT_MAX : (int)n;
    return 0;
}

int sr_pool_workers(int *workers, int cap, int reserved, int cores, const sr_cpu_topology *topo,
                    sr_err *err)
{
    if (!workers)
        return sr_err_set(err, SR_E_INVAL, "sr_pool_workers needs an out-parameter");
    if (cap < 1)
        return sr_err_set(err, SR_E_POOL_ARG, "pool cap must be positive, got %d", cap);
    if (reserved < 0)
        return sr_err_set(err, SR_E_POOL_ARG, "reserved cores must be non-negative, got %d",
                          reserved);
    if (cores < 0) {
        int rc = sr_permitted_cpu_cores(&cores, topo, err);
        if (rc)
            return rc;
    }
    int avail = cores - reserved; /* both are non-negative, so this cannot overflow */
    int w = avail < cap ? avail : cap;
    *workers = w < 1 ? 1 : w;
    return 0;
}

int sr_default_fill_workers(int *workers, const sr_cpu_topology *topo, sr_err *err)
{
    return sr_pool_workers(workers, SR_FILL_MAX_WORKERS, SR_FILL_RESERVED_CORES,
                           SR_POOL_DETECT_CORES, topo, err);
}

/* ---- row fill ---- */

/* Gives a failed row a well-formed error: a known negative code and a message. */
static int normalize_row_error(sr_err *e, int rc, int64_t row)
{
    if (rc > 0 || sr_code_name(rc) == NULL)
        return sr_err_set_at(e, SR_E_POOL_ROW, row, "row %lld failed with status %d",
                             (long long)row, rc);
    if (e->code == 0)
        return sr_err_set_at(e, rc, row, "row %lld failed", (long long)row);
    e->code = rc;
    return rc;
}

static int fill_serial(int64_t n, sr_fill_fn fn, void *ctx, sr_err *err)
{
    sr_err local = SR_ERR_INIT;
    for (int64_t r = 0; r < n; r++) {
        int rc = fn(ctx, r, &local);
        if (rc) {
            rc = normalize_row_error(&local, rc, r);
            if (err)
                *err = local;
            return rc;
        }
    }
    return 0;
}

static int fill_parallel(int64_t n, int team, sr_fill_fn fn, void *ctx, sr_err *err)
{
    int64_t first_row = INT64_MAX;
    int first_rc = 0;
    sr_err first_err = SR_ERR_INIT;
    /* Chunks of several rows keep scheduling cheap for tiny rows while leaving enough chunks to
     * balance rows of uneven cost. */
    int64_t chunk = n / ((int64_t)team * 8);
    if (chunk < 1)
        chunk = 1;
#pragma omp parallel num_threads(team) default(none)                                               \
    shared(n, fn, ctx, chunk, first_row, first_rc, first_err)
    {
        int64_t my_row = INT64_MAX;
        int my_rc = 0;
        sr_err my_err = SR_ERR_INIT;
        sr_err tmp;
#pragma omp for schedule(dynamic, chunk)
        for (int64_t r = 0; r < n; r++) {
            sr_err_clear(&tmp);
            int rc = fn(ctx, r, &tmp);
            if (rc && r < my_row) {
                my_rc = normalize_row_error(&tmp, rc, r);
                my_row = r;
                my_err = tmp;
            }
        }
#pragma omp critical(sr_fill_rows_merge)
        {
            if (my_row < first_row) {
                first_row = my_row;
                first_rc = my_rc;
                first_err = my_err;
            }
        }
    }
    if (first_rc && err)
        *err = first_err;
    return first_rc;
}

int sr_fill_rows(int64_t n, int workers, sr_fill_fn fn, void *ctx, sr_err *err)
{
    if (n < 0)
        return sr_err_set(err, SR_E_POOL_ARG, "row count must be non-negative, got %lld",
                          (long long)n);
    if (n == 0)
        return 0;
    if (workers < 1)
        return sr_err_set(err, SR_E_POOL_ARG, "worker count must be positive, got %d", workers);
    if (!fn)
        return sr_err_set(err, SR_E_INVAL, "sr_fill_rows needs a row callback");
    int team = (int64_t)workers < n ? workers : (int)n;
    if (team == 1)
        return fill_serial(n, fn, ctx, err);
    return fill_parallel(n, team, fn, ctx, err);
}
