/* bench_e2e's splice pass (e2e_pass.h, e2e_splice_lines): the client's splice driven by bare
 * libcurl, against the same splice of the same bodies in a loop. */
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "e2e_pass.h"
#include "sr_fields.h"

/* One batch through the client, then its requests replayed by both splicing floors; the splice's
 * CPU per response of each replay, and of the easy floor's kept bodies in a loop. */
static int splice_batch(double out[3], const e2e_batches *b, const sr_client *c, e2e_floor *easy,
                        e2e_floor *multi, const cJSON *sp)
{
    e2e_rollouts x = {b->cfgs, calloc(b->n, sizeof(sr_rollout_result))};
    int *rcs = calloc(b->n, sizeof(int));
    int rc =
        x.res && rcs ? sr_client_parallel(c, b->n, b->limit, e2e_rollout_job, &x, rcs, NULL) : -1;
    for (size_t i = 0; !rc && i < b->n; i++)
        rc = rcs[i] ? -1 : 0;
    e2e_floor_totals et, mt;
    memset(&et, 0, sizeof et);
    memset(&mt, 0, sizeof mt);
    if (!rc)
        rc = e2e_floor_batch(easy, &et, x.res, b->cfgs, b->n, sp);
    if (!rc)
        rc = e2e_floor_batch(multi, &mt, x.res, b->cfgs, b->n, sp);
    if (!rc)
        rc = e2e_floor_splice_loop(easy, 3, &out[2]);
    if (!rc && (et.spliced < 1 || mt.spliced < 1))
        rc = -1;
    if (!rc) {
        out[0] = et.splice_cpu_ms * 1e3 / et.spliced;
        out[1] = mt.splice_cpu_ms * 1e3 / mt.spliced;
    }
    for (size_t i = 0; x.res && i < b->n; i++)
        sr_rollout_result_release(&x.res[i]);
    free(x.res);
    free(rcs);
    return rc;
}

/* The series (us per response, one value per measured batch) as bench_stats in ms. */
static bench_stats us_stats(const double *us, int n)
{
    double *ms = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; ms && i < n; i++)
        ms[i] = us[i] / 1e3;
    bench_stats s = ms ? bench_stats_of(ms, n) : (bench_stats){0, 0, 0};
    free(ms);
    return s;
}

int e2e_splice_lines(const e2e_batches *b, const sr_client *c, const char *const *urls, int ne,
                     const sr_fields *fields, const cJSON *sp, int threads, int reps)
{
    sr_fields *own = NULL;
    if (!fields && (sr_fields_new(&own, NULL) || sr_fields_add_builtins(own, NULL))) {
        sr_fields_free(own);
        return -1;
    }
    int slots = b->limit < (int)b->n ? b->limit : (int)b->n;
    e2e_floor *easy = e2e_floor_new(urls, ne, slots);
    e2e_floor *multi = e2e_floor_new_multi(urls, ne, slots < threads ? threads : slots, threads);
    double *v = calloc((size_t)reps * 3, sizeof(double));
    int rc = easy && multi && v && !e2e_floor_splice(easy, fields ? fields : own) &&
                     !e2e_floor_splice(multi, fields ? fields : own)
                 ? 0
                 : -1;
    for (int k = 0; !rc && k <= reps; k++) {
        double out[3];
        b->make(b->ctx, b->cfgs, 3000 + k);
        rc = splice_batch(out, b, c, easy, multi, sp);
        if (rc || k == 0)
            continue; /* the first batch opens the floors' connections */
        v[k - 1] = out[0];
        v[reps + k - 1] = out[1];
        v[2 * reps + k - 1] = out[2];
    }
    if (!rc) {
        bench_stats es = us_stats(v, reps), ms = us_stats(v + reps, reps),
                    ls = us_stats(v + 2 * reps, reps);
        bench_report_ex("e2e.splice_in_libcurl", es, ls, "splice_loop_same_bodies",
                        "cpu_us=%.2f loop_cpu_us=%.2f threads=%d", es.median_ms * 1e3,
                        ls.median_ms * 1e3, slots);
        bench_report_ex("e2e.splice_in_libcurl_multi", ms, ls, "splice_loop_same_bodies",
                        "cpu_us=%.2f loop_cpu_us=%.2f threads=%d in_flight=%d", ms.median_ms * 1e3,
                        ls.median_ms * 1e3, threads,
                        (slots < threads ? threads : slots) -
                            (slots < threads ? threads : slots) % threads);
    }
    e2e_floor_free(easy);
    e2e_floor_free(multi);
    sr_fields_free(own);
    free(v);
    return rc;
}
