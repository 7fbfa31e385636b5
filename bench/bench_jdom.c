/*
 * bench_jdom: parsing a splice remainder (a mock engine's 64-token response body without its
 * blob and token ids, ~2.2 KB, as the skyrl client's splicer hands it over: 64 logprob objects,
 * finish_reason, the routes' envelope skeleton and the syncroll object) with cJSON (parse +
 * cJSON_Delete, what the splice did per response) against sr_jdom under the reference rules, as
 * the splice runs it (parse + reset into a warm arena). One repetition is a batch of BATCH
 * parses; the two are timed alternately so both see the same load. The ratio is jdom / cJSON
 * (issue 12: the lower the better).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "sr_jdom.h"

#define BATCH 2000

typedef struct jdom_ctx {
    const char *text;
    size_t n;
    sr_jdom *j;
    int failed;
} jdom_ctx;

/* Appends v as the mock engine writes it: the shortest digits that read back as v. */
static size_t put_shortest(char *dst, double v)
{
    for (int prec = 15;; prec++) {
        int k = sprintf(dst, "%.*g", prec, v);
        if (prec == 17 || strtod(dst, NULL) == v)
            return (size_t)k;
    }
}

/* The remainder of a mock engine's 64-token response once its blob and token ids are cut (the
 * splicer leaves "" for the blob and {} for the token ids). */
static char *remainder_text(size_t *n)
{
    char *t = malloc(8192);
    if (!t)
        return NULL;
    size_t k = (size_t)sprintf(t, "{\"choices\":[{\"token_ids\":{},\"finish_reason\":\"length\","
                                  "\"logprobs\":{\"content\":[");
    uint64_t s = 0x2545F4914F6CDD1Du;
    for (int i = 0; i < 64; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double lp = -8.0 * (double)(s >> 11) / (double)(1ull << 53);
        k += (size_t)sprintf(t + k, "%s{\"logprob\":", i ? "," : "");
        k += put_shortest(t + k, lp);
        t[k++] = '}';
    }
    k += (size_t)sprintf(t + k, "]},\"routed_experts\":{\"data\":\"\",\"shape\":[250,24,8],"
                                "\"dtype\":\"int16\"},\"syncroll\":{\"engine\":\"engine-0\","
                                "\"weight_version\":0,\"rows\":[[0,250,0]]}}]}");
    *n = k;
    return t;
}

static void run_cjson(void *p)
{
    jdom_ctx *c = p;
    for (int i = 0; i < BATCH; i++) {
        const char *end = NULL;
        cJSON *doc = cJSON_ParseWithLengthOpts(c->text, c->n + 1, &end, 1);
        c->failed |= doc == NULL;
        bench_sink(&doc, sizeof(doc));
        cJSON_Delete(doc);
    }
}

static void run_jdom(void *p)
{
    jdom_ctx *c = p;
    for (int i = 0; i < BATCH; i++) {
        cJSON *doc = NULL;
        c->failed |= sr_jdom_parse(c->j, c->text, c->n, &doc, NULL) != 0;
        bench_sink(&doc, sizeof(doc));
        sr_jdom_reset(c->j);
    }
}

/* Both parsers must print the same document before their times mean anything. */
static int same_output(jdom_ctx *c)
{
    const char *end = NULL;
    cJSON *a = cJSON_ParseWithLengthOpts(c->text, c->n + 1, &end, 1), *b = NULL;
    int ok = a && sr_jdom_parse(c->j, c->text, c->n, &b, NULL) == 0;
    char *pa = ok ? cJSON_PrintUnformatted(a) : NULL, *pb = ok ? cJSON_PrintUnformatted(b) : NULL;
    ok = ok && pa && pb && strcmp(pa, pb) == 0;
    free(pa);
    free(pb);
    cJSON_Delete(a);
    return ok;
}

int main(void)
{
    jdom_ctx c = {0};
    char *text = remainder_text(&c.n);
    c.text = text;
    if (!text || sr_jdom_new(&c.j, 0, NULL) != 0)
        return 1;
    sr_jdom_set_flags(c.j, SR_JDOM_REFERENCE);
    if (!same_output(&c)) {
        fprintf(stderr, "bench_jdom: set-up failed or the trees differ\n");
        return 1;
    }
    int reps = bench_reps(21);
    double *ms_c = calloc((size_t)reps, sizeof(double)),
           *ms_j = calloc((size_t)reps, sizeof(double));
    if (!ms_c || !ms_j)
        return 1;
    run_cjson(&c);
    run_jdom(&c);
    for (int r = 0; r < reps; r++) {
        bench_samples(&ms_c[r], run_cjson, &c, 1);
        bench_samples(&ms_j[r], run_jdom, &c, 1);
    }
    if (c.failed) {
        fprintf(stderr, "bench_jdom: a parse failed\n");
        return 1;
    }
    bench_stats sc = bench_stats_of(ms_c, reps), sj = bench_stats_of(ms_j, reps);
    bench_report_ex("cjson.parse_delete", sc, sc, "cjson.parse_delete", "bytes=%zu us=%.3f", c.n,
                    sc.median_ms * 1000.0 / BATCH);
    bench_report_ex("jdom.parse_remainder", sj, sc, "cjson.parse_delete",
                    "bytes=%zu us=%.3f arena_bytes=%zu", c.n, sj.median_ms * 1000.0 / BATCH,
                    sr_jdom_arena_bytes(c.j));
    free(ms_c);
    free(ms_j);
    sr_jdom_free(c.j);
    free(text);
    return 0;
}
