/*
 * Collation benchmark (design.md §8): 32 samples of [T_i, 48, 8] int16 routes, left-padded
 * into [32, 10923, 48, 8] (256 MiB), into a warm reused output buffer, with 1 and 2 workers.
 * Baseline: memcpy of the output size in the same process.
 * Targets: 1 worker <= 1.2 x memcpy; 2 workers >= 1.4 x faster than 1 worker (ratio <= 0.714
 * on the collate_2w_vs_1w line).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "sr_collate.h"

enum { BATCH = 32, LAYERS = 48, TOPK = 8, T_MAX = 10923 };

typedef struct run_ctx {
    sr_collate_buf buf;
    const sr_collate_sample *samples;
    int workers;
} run_ctx;

static void run_collate(void *p)
{
    run_ctx *c = p;
    sr_collate_result r;
    sr_err err = SR_ERR_INIT;
    if (sr_collate_routes(&r, &c->buf, c->samples, BATCH, c->workers, &err)) {
        fprintf(stderr, "bench_collate: %s: %s\n", sr_code_name(err.code), err.msg);
        exit(1);
    }
    bench_sink(r.routes.data, r.routes.nbytes);
}

int main(void)
{
    sr_ndarray routes[BATCH];
    sr_collate_sample samples[BATCH];
    uint64_t state = 0x2079;
    size_t in_bytes = 0;
    for (int i = 0; i < BATCH; i++) {
        /* Real lengths between T_max / 2 and T_max (sample 0 is the longest); the trace captured
         * all but the last sampled token. */
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        int64_t real = i == 0 ? T_MAX : T_MAX / 2 + (int64_t)((state >> 33) % (T_MAX / 2));
        int64_t shape[3] = {real - 1, LAYERS, TOPK};
        sr_err err = SR_ERR_INIT;
        if (sr_ndarray_alloc(&routes[i], SR_DTYPE_INT16, 3, shape, &err)) {
            fprintf(stderr, "bench_collate: %s\n", err.msg);
            return 1;
        }
        int16_t *d = routes[i].data;
        size_t n = routes[i].nbytes / 2;
        for (size_t k = 0; k < n; k++)
            d[k] = (int16_t)((k * 2654435761u >> 7) % 512);
        in_bytes += routes[i].nbytes;
        sr_collate_sample s = SR_COLLATE_SAMPLE_INIT;
        s.routes = &routes[i];
        s.prompt_len = real / 4;
        s.response_len = real - real / 4;
        samples[i] = s;
    }
    size_t out_bytes = (size_t)BATCH * T_MAX * LAYERS * TOPK * 2;
    int reps = bench_reps(11);
    printf("# collate: %d samples, %zu MiB of routes in, %zu MiB out\n", BATCH, in_bytes >> 20,
           out_bytes >> 20);

    bench_stats mem = bench_memcpy(out_bytes, reps);
    bench_report("memcpy_256MiB", mem, mem, "memcpy_256MiB");

    run_ctx c = {SR_COLLATE_BUF_INIT, samples, 1};
    bench_stats one = bench_measure(run_collate, &c, reps);
    bench_report("collate_1w", one, mem, "memcpy_256MiB");
    c.workers = 2;
    bench_stats two = bench_measure(run_collate, &c, reps);
    bench_report("collate_2w", two, mem, "memcpy_256MiB");
    bench_report("collate_2w_vs_1w", two, one, "collate_1w");

    sr_collate_buf_release(&c.buf);
    for (int i = 0; i < BATCH; i++)
        sr_ndarray_release(&routes[i]);
    return 0;
}
