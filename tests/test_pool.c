/* Tests of sr_pool: cgroup quotas, permitted cores, pool sizing (§7.2) and the row fill (§7.1). */
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr_pool.h"
#include "sr_test.h"

/* ---- a fake cgroup tree ---- */

typedef struct fake_cg {
    char root[64];
} fake_cg;

static void cg_init(fake_cg *cg)
{
    snprintf(cg->root, sizeof(cg->root), "/tmp/sr_pool_test.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(cg->root));
}

static void cg_write(const fake_cg *cg, const char *rel, const char *text)
{
    char path[256];
    if (strncmp(rel, "cpu/", 4) == 0) {
        snprintf(path, sizeof(path), "%s/cpu", cg->root);
        mkdir(path, 0700);
    }
    snprintf(path, sizeof(path), "%s/%s", cg->root, rel);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void cg_v1(const fake_cg *cg, const char *quota, const char *period)
{
    cg_write(cg, "cpu/cpu.cfs_quota_us", quota);
    cg_write(cg, "cpu/cpu.cfs_period_us", period);
}

static void cg_cleanup(const fake_cg *cg)
{
    char path[256];
    const char *files[] = {"cpu.max", "cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", cg->root, files[i]);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s/cpu", cg->root);
    rmdir(path);
    rmdir(cg->root);
}

static int64_t quota_of(const fake_cg *cg)
{
    int64_t q = -7;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_cgroup_cpu_quota(&q, cg->root, &err), err);
    return q;
}

/* v2 alone: the quota in CPUs, or 0 for none. */
static int64_t quota_v2(const char *text)
{
    fake_cg cg;
    cg_init(&cg);
    cg_write(&cg, "cpu.max", text);
    int64_t q = quota_of(&cg);
    cg_cleanup(&cg);
    return q;
}

/* v1 alone. */
static int64_t quota_v1(const char *quota, const char *period)
{
    fake_cg cg;
    cg_init(&cg);
    cg_v1(&cg, quota, period);
    int64_t q = quota_of(&cg);
    cg_cleanup(&cg);
    return q;
}

START_TEST(cgroup_v2_quota)
{
    ck_assert_int_eq(quota_v2("400000 100000\n"), 4);
    ck_assert_int_eq(quota_v2("max 100000\n"), 0);
    ck_assert_int_eq(quota_v2("  200000\t100000  "), 2);
    ck_assert_int_eq(quota_v2("2.5e5 1e5"), 2);
}
END_TEST

START_TEST(cgroup_v2_max_falls_through_to_v1)
{
    fake_cg cg;
    cg_init(&cg);
    cg_write(&cg, "cpu.max", "max 100000\n");
    cg_v1(&cg, "300000\n", "100000\n");
    ck_assert_int_eq(quota_of(&cg), 3);
    /* A v2 answer, even a useless one, is final: v1 is not consulted. */
    cg_write(&cg, "cpu.max", "0 100000\n");
    ck_assert_int_eq(quota_of(&cg), 0);
    cg_write(&cg, "cpu.max", "100000 0\n");
    ck_assert_int_eq(quota_of(&cg), 0);
    /* Garbage in v2 says nothing, so v1 answers. */
    cg_write(&cg, "cpu.max", "lots of cpus\n");
    ck_assert_int_eq(quota_of(&cg), 3);
    cg_cleanup(&cg);
}
END_TEST

START_TEST(cgroup_v1_quota)
{
    ck_assert_int_eq(quota_v1("200000\n", "100000\n"), 2);
    ck_assert_int_eq(quota_v1("-1\n", "100000\n"), 0);
    ck_assert_int_eq(quota_v1("0\n", "100000\n"), 0);
    ck_assert_int_eq(quota_v1("200000\n", "0\n"), 0);
    ck_assert_int_eq(quota_v1("200000\n", "-5\n"), 0);
}
END_TEST

START_TEST(cgroup_missing_files)
{
    fake_cg cg;
    cg_init(&cg);
    ck_assert_int_eq(quota_of(&cg), 0);
    /* Only one of the two v1 files. */
    cg_write(&cg, "cpu/cpu.cfs_quota_us", "200000\n");
    ck_assert_int_eq(quota_of(&cg), 0);
    cg_cleanup(&cg);
    int64_t q = -1;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_cgroup_cpu_quota(&q, "/nonexistent/sr_pool_root", &err), err);
    ck_assert_int_eq(q, 0);
    ck_assert_sr_code(sr_cgroup_cpu_quota(NULL, cg.root, &err), err, SR_E_INVAL);
}
END_TEST

START_TEST(cgroup_garbage_and_empty)
{
    const char *bad_v2[] = {"",           "\n",         "abc def",  "400000",   "1 2 3",
                            "inf 100000", "nan 100000", "0x10 0x1", "4e5 1e5x", "400000 max"};
    for (size_t i = 0; i < sizeof(bad_v2) / sizeof(bad_v2[0]); i++)
        ck_assert_msg(quota_v2(bad_v2[i]) == 0, "v2 '%s' must mean no quota", bad_v2[i]);
    ck_assert_int_eq(quota_v1("", "100000"), 0);
    ck_assert_int_eq(quota_v1("garbage", "100000"), 0);
    ck_assert_int_eq(quota_v1("200000", ""), 0);
    ck_assert_int_eq(quota_v1("200000 100000", "100000"), 0);
    /* A file longer than SR_POOL_FILE_MAX is garbage even if it starts with numbers. */
    char big[SR_POOL_FILE_MAX + 40];
    memset(big, ' ', sizeof(big));
    memcpy(big, "400000 100000", 13);
    big[sizeof(big) - 1] = '\0';
    ck_assert_int_eq(quota_v2(big), 0);
    /* A file of exactly SR_POOL_FILE_MAX bytes is still read. */
    big[SR_POOL_FILE_MAX] = '\0';
    ck_assert_int_eq(quota_v2(big), 4);
}
END_TEST

START_TEST(cgroup_fractional_quota_floors)
{
    ck_assert_int_eq(quota_v2("150000 100000"), 1);
    ck_assert_int_eq(quota_v2("50000 100000"), 1);
    ck_assert_int_eq(quota_v2("100000 100000"), 1);
    ck_assert_int_eq(quota_v2("250000 100000"), 2);
    ck_assert_int_eq(quota_v1("1", "100000"), 1);
    ck_assert_int_eq(quota_v2("1e30 1"), INT64_MAX);
}
END_TEST

/* ---- permitted cores ---- */

typedef struct fake_aff {
    int64_t count;
    int fail; /* errno to fail with, 0 to succeed */
    int calls;
} fake_aff;

static int fake_affinity(void *ctx, int64_t *count)
{
    fake_aff *a = ctx;
    a->calls++;
    if (a->fail)
        return a->fail;
    *count = a->count;
    return 0;
}

/* Permitted cores for an affinity count and a v2 quota in CPUs (0: no cgroup files). */
static int permitted(int64_t affinity, int quota)
{
    fake_cg cg;
    cg_init(&cg);
    if (quota > 0) {
        char text[64];
        snprintf(text, sizeof(text), "%d00000 100000\n", quota);
        cg_write(&cg, "cpu.max", text);
    }
    fake_aff a = {affinity, 0, 0};
    sr_cpu_topology topo = SR_CPU_TOPOLOGY_INIT;
    topo.cgroup_root = cg.root;
    topo.affinity = fake_affinity;
    topo.affinity_ctx = &a;
    int cores = -1;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_permitted_cpu_cores(&cores, &topo, &err), err);
    ck_assert_int_eq(a.calls, 1);
    cg_cleanup(&cg);
    return cores;
}

START_TEST(permitted_is_min_of_affinity_and_quota)
{
    ck_assert_int_eq(permitted(16, 4), 4);
    ck_assert_int_eq(permitted(4, 16), 4);
    ck_assert_int_eq(permitted(8, 8), 8);
    ck_assert_int_eq(permitted(12, 0), 12);
    ck_assert_int_eq(permitted((int64_t)INT_MAX + 5, 0), INT_MAX);
}
END_TEST

START_TEST(affinity_failure_falls_back_to_online_cpus)
{
    fake_cg cg;
    cg_init(&cg);
    fake_aff a = {0, EPERM, 0};
    sr_cpu_topology topo = SR_CPU_TOPOLOGY_INIT;
    topo.cgroup_root = cg.root;
    topo.affinity = fake_affinity;
    topo.affinity_ctx = &a;
    topo.online_cpus = 6;
    int cores = 0;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_permitted_cpu_cores(&cores, &topo, &err), err);
    ck_assert_int_eq(cores, 6);
    /* The quota still applies to the fallback. */
    cg_write(&cg, "cpu.max", "200000 100000\n");
    ck_assert_sr_ok(sr_permitted_cpu_cores(&cores, &topo, &err), err);
    ck_assert_int_eq(cores, 2);
    /* The real online count is used when no override is given. */
    topo.online_cpus = 0;
    cg_write(&cg, "cpu.max", "max 100000\n");
    ck_assert_sr_ok(sr_permitted_cpu_cores(&cores, &topo, &err), err);
    ck_assert_int_eq(cores, (int)sysconf(_SC_NPROCESSORS_ONLN));
    cg_cleanup(&cg);
}
END_TEST

START_TEST(quirk_affinity_error_fatal)
{
    fake_cg cg;
    cg_init(&cg);
    fake_aff a = {0, EIO, 0};
    sr_cpu_topology topo = SR_CPU_TOPOLOGY_INIT;
    topo.cgroup_root = cg.root;
    topo.affinity = fake_affinity;
    topo.affinity_ctx = &a;
    topo.online_cpus = 3;
    int workers = 0;
    sr_err err = SR_ERR_INIT;
    /* Default: sizing survives the failing affinity call. */
    ck_assert_sr_ok(sr_pool_workers(&workers, 32, 0, SR_POOL_DETECT_CORES, &topo, &err), err);
    ck_assert_int_eq(workers, 3);
    /* Quirk on: the reference's crash, as a named error. */
    topo.affinity_error_fatal = 1;
    ck_assert_sr_code(sr_pool_workers(&workers, 32, 0, SR_POOL_DETECT_CORES, &topo, &err), err,
                      SR_E_POOL_AFFINITY);
    ck_assert_sr_code(sr_default_fill_workers(&workers, &topo, &err), err, SR_E_POOL_AFFINITY);
    /* Quirk on but a working affinity call: no error. */
    a.fail = 0;
    a.count = 5;
    ck_assert_sr_ok(sr_pool_workers(&workers, 32, 0, SR_POOL_DETECT_CORES, &topo, &err), err);
    ck_assert_int_eq(workers, 5);
    cg_cleanup(&cg);
}
END_TEST

START_TEST(real_machine_topology)
{
    int cores = 0, workers = 0;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_permitted_cpu_cores(&cores, NULL, &err), err);
    ck_assert_int_ge(cores, 1);
    ck_assert_sr_ok(sr_default_fill_workers(&workers, NULL, &err), err);
    ck_assert_int_ge(workers, 1);
    ck_assert_int_le(workers, SR_FILL_MAX_WORKERS);
}
END_TEST

/* ---- pool sizing ---- */

static int pool(int cap, int reserved, int cores)
{
    int w = -1;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_pool_workers(&w, cap, reserved, cores, NULL, &err), err);
    return w;
}

START_TEST(pool_workers_formula)
{
    ck_assert_int_eq(pool(32, 8, 64), 32);
    ck_assert_int_eq(pool(32, 8, 24), 16);
    ck_assert_int_eq(pool(32, 8, 8), 1);
    ck_assert_int_eq(pool(1, 0, 64), 1);
    ck_assert_int_eq(pool(32, 0, 0), 1);
    ck_assert_int_eq(pool(INT_MAX, 0, INT_MAX), INT_MAX);
}
END_TEST

START_TEST(pool_workers_detected_defaults)
{
    /* Affinity 64, quota 12 CPUs, cap 32, reserve 4 -> 8. */
    fake_cg cg;
    cg_init(&cg);
    cg_write(&cg, "cpu.max", "1200000 100000\n");
    fake_aff a = {64, 0, 0};
    sr_cpu_topology topo = SR_CPU_TOPOLOGY_INIT;
    topo.cgroup_root = cg.root;
    topo.affinity = fake_affinity;
    topo.affinity_ctx = &a;
    int w = 0;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_pool_workers(&w, 32, 4, SR_POOL_DETECT_CORES, &topo, &err), err);
    ck_assert_int_eq(w, 8);
    /* The fill default (cap 32, reserve 8): 12 - 8 = 4. */
    ck_assert_sr_ok(sr_default_fill_workers(&w, &topo, &err), err);
    ck_assert_int_eq(w, 4);
    cg_cleanup(&cg);
}
END_TEST

START_TEST(pool_workers_argument_errors)
{
    int w = 0;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_pool_workers(&w, 0, 0, 8, NULL, &err), err, SR_E_POOL_ARG);
    ck_assert_str_eq(err.msg, "pool cap must be positive, got 0");
    ck_assert_sr_code(sr_pool_workers(&w, -1, 0, 8, NULL, &err), err, SR_E_POOL_ARG);
    ck_assert_sr_code(sr_pool_workers(&w, 4, -1, 8, NULL, &err), err, SR_E_POOL_ARG);
    ck_assert_str_eq(err.msg, "reserved cores must be non-negative, got -1");
    /* The cap is checked before the reserve. */
    ck_assert_sr_code(sr_pool_workers(&w, 0, -1, 8, NULL, &err), err, SR_E_POOL_ARG);
    ck_assert_str_eq(err.msg, "pool cap must be positive, got 0");
    ck_assert_sr_code(sr_pool_workers(NULL, 4, 0, 8, NULL, &err), err, SR_E_INVAL);
}
END_TEST

/* ---- row fill ---- */

typedef struct fill_probe {
    int64_t n;
    int *count;     /* per row */
    int64_t *order; /* serial order of calls */
    int64_t next;   /* calls so far (serial runs only) */
    pthread_t caller;
    int off_caller;       /* any row ran on another thread */
    int in_parallel;      /* any row ran inside an active parallel region */
    const int *fail_code; /* per row: 0, or the code the row returns */
} fill_probe;

static int probe_row(void *ctx, int64_t row, sr_err *err)
{
    fill_probe *p = ctx;
    p->count[row]++;
    if (!pthread_equal(pthread_self(), p->caller)) {
#pragma omp atomic write
        p->off_caller = 1;
    }
    if (omp_in_parallel()) {
#pragma omp atomic write
        p->in_parallel = 1;
    }
    if (omp_get_num_threads() == 1)
        p->order[p->next++] = row;
    if (p->fail_code && p->fail_code[row]) {
        if (p->fail_code[row] < 0)
            return sr_err_set_at(err, p->fail_code[row], row, "row %lld broke", (long long)row);
        return p->fail_code[row];
    }
    return 0;
}

static void probe_init(fill_probe *p, int64_t n)
{
    memset(p, 0, sizeof(*p));
    p->n = n;
    p->count = calloc((size_t)n + 1, sizeof(int));
    p->order = calloc((size_t)n + 1, sizeof(int64_t));
    p->caller = pthread_self();
}

static void probe_free(fill_probe *p)
{
    free(p->count);
    free(p->order);
}

static void check_every_row_once(int workers)
{
    fill_probe p;
    probe_init(&p, 1000);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fill_rows(p.n, workers, probe_row, &p, &err), err);
    for (int64_t i = 0; i < p.n; i++)
        ck_assert_msg(p.count[i] == 1, "row %lld ran %d times with %d workers", (long long)i,
                      p.count[i], workers);
    probe_free(&p);
}

START_TEST(fill_every_row_exactly_once)
{
    int dflt = 0;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_default_fill_workers(&dflt, NULL, &err), err);
    check_every_row_once(dflt);
    check_every_row_once(1);
    check_every_row_once(2);
    check_every_row_once(4);
    check_every_row_once(64);
}
END_TEST

START_TEST(fill_one_worker_serial_in_order_on_caller)
{
    /* Also min(workers, n) == 1: many workers for a single row run it serially. */
    for (int w = 1; w <= 8; w += 7) {
        int64_t n = w == 1 ? 50 : 1;
        fill_probe p;
        probe_init(&p, n);
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_fill_rows(n, w, probe_row, &p, &err), err);
        ck_assert_int_eq(p.next, n);
        for (int64_t i = 0; i < n; i++)
            ck_assert_int_eq(p.order[i], i);
        ck_assert_int_eq(p.off_caller, 0);
        ck_assert_int_eq(p.in_parallel, 0);
        probe_free(&p);
    }
}
END_TEST

START_TEST(fill_several_workers_run_in_a_team)
{
    /* OpenMP makes the caller thread 0 of the team, so "never on the caller" (a Python pool)
     * becomes "inside an active parallel region". */
    fill_probe p;
    probe_init(&p, 64);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fill_rows(p.n, 4, probe_row, &p, &err), err);
    ck_assert_int_eq(p.in_parallel, 1);
    probe_free(&p);
}
END_TEST

START_TEST(fill_zero_rows_is_a_no_op)
{
    fill_probe p;
    probe_init(&p, 1);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fill_rows(0, 4, probe_row, &p, &err), err);
    ck_assert_sr_ok(sr_fill_rows(0, 0, probe_row, &p, &err), err);
    ck_assert_sr_ok(sr_fill_rows(0, -5, NULL, NULL, &err), err);
    ck_assert_int_eq(p.count[0], 0);
    probe_free(&p);
}
END_TEST

START_TEST(fill_argument_errors)
{
    fill_probe p;
    probe_init(&p, 4);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_fill_rows(-1, 4, probe_row, &p, &err), err, SR_E_POOL_ARG);
    ck_assert_str_eq(err.msg, "row count must be non-negative, got -1");
    ck_assert_sr_code(sr_fill_rows(4, 0, probe_row, &p, &err), err, SR_E_POOL_ARG);
    ck_assert_str_eq(err.msg, "worker count must be positive, got 0");
    ck_assert_sr_code(sr_fill_rows(4, -2, probe_row, &p, &err), err, SR_E_POOL_ARG);
    ck_assert_sr_code(sr_fill_rows(4, 2, NULL, &p, &err), err, SR_E_INVAL);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(p.count[i], 0);
    probe_free(&p);
}
END_TEST

START_TEST(fill_error_propagates_serial)
{
    int codes[40] = {0};
    codes[7] = SR_E_COLLATE_ROWS;
    codes[20] = SR_E_NOMEM;
    fill_probe p;
    probe_init(&p, 40);
    p.fail_code = codes;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_fill_rows(40, 1, probe_row, &p, &err), err, SR_E_COLLATE_ROWS);
    ck_assert_int_eq(err.offset, 7);
    ck_assert_str_eq(err.msg, "row 7 broke");
    /* Serial stops at the failing row. */
    ck_assert_int_eq(p.count[7], 1);
    ck_assert_int_eq(p.count[8], 0);
    probe_free(&p);
}
END_TEST

START_TEST(fill_error_of_lowest_row_parallel)
{
    /* Many failing rows with distinct codes; whatever the completion order, row 3's error wins
     * and every row still runs. */
    enum { N = 4000 };
    int *codes = calloc(N, sizeof(int));
    int table[] = {SR_E_NOMEM, SR_E_LIMIT, SR_E_INVAL, SR_E_IO};
    for (int i = N - 1; i >= 3; i -= 97)
        codes[i] = table[i % 4];
    codes[3] = SR_E_COLLATE_INPUT;
    for (int w = 2; w <= 4; w += 2) {
        fill_probe p;
        probe_init(&p, N);
        p.fail_code = codes;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_code(sr_fill_rows(N, w, probe_row, &p, &err), err, SR_E_COLLATE_INPUT);
        ck_assert_int_eq(err.offset, 3);
        ck_assert_str_eq(err.msg, "row 3 broke");
        for (int i = 0; i < N; i++)
            ck_assert_int_eq(p.count[i], 1);
        probe_free(&p);
    }
    free(codes);
}
END_TEST

START_TEST(fill_callback_without_sr_code)
{
    int codes[10] = {0};
    codes[6] = 1;      /* a positive status */
    codes[8] = -12345; /* an unknown code */
    for (int w = 1; w <= 3; w += 2) {
        fill_probe p;
        probe_init(&p, 10);
        p.fail_code = codes;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_code(sr_fill_rows(10, w, probe_row, &p, &err), err, SR_E_POOL_ROW);
        ck_assert_int_eq(err.offset, 6);
        probe_free(&p);
    }
}
END_TEST

/* The quota applies at one CPU too: quotas 1, 2 and 3 (one before, at and past the affinity
 * count 2..4 around them) each give the smaller of the two. */
START_TEST(permitted_quota_limits_are_exact)
{
    for (int quota = 1; quota <= 3; quota++) {
        for (int64_t aff = quota - 1 < 1 ? 1 : quota - 1; aff <= quota + 1; aff++) {
            int want = aff < quota ? (int)aff : quota;
            ck_assert_msg(permitted(aff, quota) == want, "affinity %lld quota %d: want %d",
                          (long long)aff, quota, want);
        }
    }
    ck_assert_int_eq(permitted(4, 1), 1);
}
END_TEST

static Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *q = tcase_create("cgroup");
    tcase_add_test(q, cgroup_v2_quota);
    tcase_add_test(q, cgroup_v2_max_falls_through_to_v1);
    tcase_add_test(q, cgroup_v1_quota);
    tcase_add_test(q, cgroup_missing_files);
    tcase_add_test(q, cgroup_garbage_and_empty);
    tcase_add_test(q, cgroup_fractional_quota_floors);
    suite_add_tcase(s, q);
    TCase *c = tcase_create("cores");
    tcase_add_test(c, permitted_is_min_of_affinity_and_quota);
    tcase_add_test(c, affinity_failure_falls_back_to_online_cpus);
    tcase_add_test(c, quirk_affinity_error_fatal);
    tcase_add_test(c, real_machine_topology);
    tcase_add_test(c, pool_workers_formula);
    tcase_add_test(c, pool_workers_detected_defaults);
    tcase_add_test(c, pool_workers_argument_errors);
    suite_add_tcase(s, c);
    TCase *f = tcase_create("fill");
    tcase_add_test(f, fill_every_row_exactly_once);
    tcase_add_test(f, fill_one_worker_serial_in_order_on_caller);
    tcase_add_test(f, fill_several_workers_run_in_a_team);
    tcase_add_test(f, fill_zero_rows_is_a_no_op);
    tcase_add_test(f, fill_argument_errors);
    tcase_add_test(f, fill_error_propagates_serial);
    tcase_add_test(f, fill_error_of_lowest_row_parallel);
    tcase_add_test(f, fill_callback_without_sr_code);
    tcase_add_test(f, permitted_quota_limits_are_exact);
    suite_add_tcase(s, f);
    return s;
}

int main(void)
{
    return sr_test_run(pool_suite());
}
