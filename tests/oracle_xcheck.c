/*
 * Prints 300 seeded random oracle cases (model, token prefix, fingerprints -> route row and next
 * token) for tests/oracle_ref/xcheck.py, which recomputes them with a Python re-implementation
 * written from sr_oracle.h alone. Together they show the header documents the functions
 * precisely enough to re-implement them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sr_oracle.h"

static uint64_t next_rand(uint64_t *st)
{
    *st += 0x9E3779B97F4A7C15ull;
    uint64_t z = *st;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int one_case(uint64_t *st)
{
    int32_t layers[2] = {(int32_t)(next_rand(st) % 100), 0};
    layers[1] = layers[0] + 1 + (int32_t)(next_rand(st) % 5);
    static const int64_t es[] = {1, 4, 8, 255, 256, 300, 32768, 40000, 1 << 20, (int64_t)1 << 31};
    int64_t e = es[next_rand(st) % 10];
    int k = 1 + (int)(next_rand(st) % (uint64_t)(e < 64 ? e : 64));
    /* Half the cases have a tiny vocabulary, so that the non-EOS draw lands on the EOS id's
     * neighbours (the skip over eos_id) often, not once in 100000. */
    uint64_t vocab_range = next_rand(st) % 2 ? 8 : 100000;
    int64_t vocab = 1 + (int64_t)(next_rand(st) % vocab_range);
    int64_t eos = vocab >= 2 && next_rand(st) % 2 ? (int64_t)(next_rand(st) % (uint64_t)vocab) : -1;
    sr_oracle_model m = SR_ORACLE_MODEL_INIT;
    m.seed = next_rand(st);
    m.vocab = vocab;
    m.num_layers = 2;
    m.layer_indices = layers;
    m.experts = e;
    m.topk = k;
    m.eos_id = eos;
    m.eos_rate = (double)(next_rand(st) % 100) / 100.0;
    m.logprob_scale = (double)(next_rand(st) % 1000) / 7.0;
    m.nonfinite_rate = (double)(next_rand(st) % 3) / 2.0;
    sr_oracle *o;
    sr_err err = SR_ERR_INIT;
    if (sr_oracle_new(&o, &m, &err)) {
        fprintf(stderr, "oracle_xcheck: %s: %s\n", sr_code_name(err.code), err.msg);
        return 1;
    }
    uint64_t h = sr_oracle_prefix_empty(o);
    int n = 1 + (int)(next_rand(st) % 5);
    int32_t toks[5];
    printf("case %" PRIu64 " %lld %d %lld %lld %.17g %.17g %.17g %d %d toks", m.seed, (long long)e,
           k, (long long)vocab, (long long)eos, m.eos_rate, m.logprob_scale, m.nonfinite_rate,
           layers[0], layers[1]);
    for (int i = 0; i < n; i++) {
        int32_t t = (int32_t)(next_rand(st) % (uint64_t)vocab);
        h = sr_oracle_prefix_push(h, t);
        toks[i] = t;
        printf(" %d", t);
    }
    uint64_t fp = next_rand(st), f = next_rand(st);
    printf(" fp %" PRIu64 " F %" PRIu64 " row", fp, f);
    int32_t row[64];
    sr_oracle_route_row(row, o, 1, fp, h);
    for (int j = 0; j < k; j++)
        printf(" %d", row[j]);
    /* The rows the engine and the verifier use come from sr_oracle_routes (the row filler): the
     * same row there, so the Python check covers that path too. */
    uint64_t fps[2] = {~fp, fp};
    int32_t both[2 * 64];
    if (sr_oracle_routes(both, sizeof both, NULL, SR_DTYPE_INT32, o, fps, toks, (size_t)n,
                         (size_t)n - 1, (size_t)n, &err)) {
        fprintf(stderr, "oracle_xcheck: %s: %s\n", sr_code_name(err.code), err.msg);
        return 1;
    }
    for (int j = 0; j < k; j++)
        if (both[k + j] != row[j]) {
            fprintf(stderr, "oracle_xcheck: sr_oracle_routes gives %d at j = %d, the row %d\n",
                    (int)both[k + j], j, (int)row[j]);
            return 1;
        }
    int32_t t;
    double lp;
    sr_oracle_next(&t, &lp, o, f, h);
    printf(" next %d %.17g\n", t, lp);
    sr_oracle_free(o);
    return 0;
}

int main(void)
{
    uint64_t st = 12345;
    for (int c = 0; c < 300; c++) {
        if (one_case(&st))
            return 1;
    }
    return 0;
}
