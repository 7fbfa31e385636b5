/*
 * bench_proxy: `syncroll proxy` (proxy/proxy.h) in this process, in front of a minimal
 * libmicrohttpd upstream in this process that answers from memory (so the upstream costs as
 * little as HTTP can), against a libcurl client on one keep-alive connection.
 *
 *   proxy.small_added       a 2 KiB answer, sequential requests: p50 through the proxy minus
 *                           p50 straight to the upstream, in the same run (added_us=; target
 *                           <= 100 us, what Toxiproxy's users quote for its overhead)
 *   proxy.passthrough       a 121.3 MiB answer (the reference body's size) streamed through the
 *                           proxy, first to last byte (gbps=; target >= 1 GB/s), against the same
 *                           transfer straight from the upstream
 *   proxy.peak_rss_growth   VmHWM growth of the process across the large transfers through the
 *                           proxy, against 32 MiB (ratio <= 1: the proxy holds at most 1 MiB of
 *                           an answer, so its memory does not grow with the body)
 */
#include <curl/curl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "proxy/proxy.h"

#define SMALL_BYTES 2048
#define LARGE_BYTES ((size_t)127189078) /* 121.3 MiB */

typedef struct upstream {
    char *small, *large;
} upstream;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **ctx)
{
    (void)method;
    (void)version;
    (void)data;
    upstream *u = cls;
    if (!*ctx) {
        *ctx = u;
        return MHD_YES;
    }
    if (*size) {
        *size = 0;
        return MHD_YES;
    }
    int large = strcmp(url, "/large") == 0;
    struct MHD_Response *r = MHD_create_response_from_buffer(
        large ? LARGE_BYTES : SMALL_BYTES, large ? u->large : u->small, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result res = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return res;
}

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += sz * n;
    return sz * n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* n sequential GETs of `path` on one keep-alive connection; per-request times into t. */
static int loop(const char *base, const char *path, int n, double *t, size_t *bytes)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", base, path);
    CURL *h = curl_easy_init();
    size_t got = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    int rc = 0;
    for (int i = -2; i < n && !rc; i++) { /* two warm-up requests */
        got = 0;
        double t0 = bench_now_ms();
        CURLcode cc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (cc != CURLE_OK || status != 200) {
            fprintf(stderr, "bench_proxy: %s: %s, status %ld\n", url, curl_easy_strerror(cc),
                    status);
            rc = -1;
        }
        if (i >= 0)
            t[i] = bench_now_ms() - t0;
    }
    *bytes = got;
    curl_easy_cleanup(h);
    return rc;
}

static long vm_hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    upstream u = {malloc(SMALL_BYTES), malloc(LARGE_BYTES)};
    memset(u.small, 'x', SMALL_BYTES);
    for (size_t i = 0; i < LARGE_BYTES; i++)
        u.large[i] = (char)('A' + i % 61);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
                                                MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
                                            0, NULL, NULL, answer, &u, MHD_OPTION_END);
    if (!d)
        return 1;
    char up[64];
    snprintf(up, sizeof up, "http://127.0.0.1:%u",
             (unsigned)MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
    sr_proxy_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.upstream = up;
    cfg.seed = 1;
    sr_proxy *p = NULL;
    sr_err err = SR_ERR_INIT;
    if (sr_proxy_start(&p, &cfg, &err)) {
        fprintf(stderr, "bench_proxy: %s\n", err.msg);
        return 1;
    }
    int n = bench_reps(11) * 200, reps = bench_reps(11);
    double *direct = malloc(sizeof(double) * (size_t)n), *via = malloc(sizeof(double) * (size_t)n);
    size_t bytes = 0;
    int rc = 0;
    /* Alternate blocks of direct and proxied requests so both see the same load. */
    for (int b = 0; b < 10 && !rc; b++)
        rc = loop(up, "/small", n / 10, direct + b * (n / 10), &bytes) ||
             loop(sr_proxy_url(p), "/small", n / 10, via + b * (n / 10), &bytes);
    if (!rc) {
        int m = n / 10 * 10;
        qsort(direct, (size_t)m, sizeof(double), cmp_double);
        qsort(via, (size_t)m, sizeof(double), cmp_double);
        bench_stats sv = {via[m / 2], via[0], via[m - 1]},
                    sd = {direct[m / 2], direct[0], direct[m - 1]};
        bench_report_ex("proxy.small_added", sv, sd, "direct_small", "added_us=%.1f",
                        (sv.median_ms - sd.median_ms) * 1e3);
    }
    long hwm0 = vm_hwm_kib();
    double *ld = malloc(sizeof(double) * (size_t)reps), *lv = malloc(sizeof(double) * (size_t)reps);
    for (int i = 0; i < reps && !rc; i++) {
        rc = loop(up, "/large", 1, ld + i, &bytes) ||
             loop(sr_proxy_url(p), "/large", 1, lv + i, &bytes);
        if (!rc && bytes != LARGE_BYTES) {
            fprintf(stderr, "bench_proxy: the proxied answer has %zu bytes, not %zu\n", bytes,
                    LARGE_BYTES);
            rc = -1;
        }
    }
    long hwm1 = vm_hwm_kib();
    if (!rc) {
        qsort(ld, (size_t)reps, sizeof(double), cmp_double);
        qsort(lv, (size_t)reps, sizeof(double), cmp_double);
        bench_stats sv = {lv[reps / 2], lv[0], lv[reps - 1]},
                    sd = {ld[reps / 2], ld[0], ld[reps - 1]};
        bench_report_ex("proxy.passthrough", sv, sd, "direct_121MiB", "gbps=%.3f direct_gbps=%.3f",
                        (double)LARGE_BYTES / (sv.median_ms * 1e6),
                        (double)LARGE_BYTES / (sd.median_ms * 1e6));
        bench_report_value("proxy.peak_rss_growth", (double)(hwm1 - hwm0) / (32.0 * 1024), "32MiB",
                           "growth_mib=%.1f", (double)(hwm1 - hwm0) / 1024.0);
    }
    sr_proxy_stop(p);
    MHD_stop_daemon(d);
    free(direct);
    free(via);
    free(ld);
    free(lv);
    free(u.small);
    free(u.large);
    curl_global_cleanup();
    return rc ? 1 : 0;
}
