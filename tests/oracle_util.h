/*
 * Shared by the oracle suites (unit.oracle, unit.oracle_generate): a small three-layer model, its
 * layer fingerprints, a checked constructor and the distinct-and-in-range test of a route row.
 */
#ifndef SR_ORACLE_UTIL_H
#define SR_ORACLE_UTIL_H

#include <stdint.h>

#include "sr_oracle.h"
#include "sr_test.h"

/* The small model's layer count and top-k, for buffer sizes. */
enum { L3 = 3, K8 = 8 };

static const int32_t LAYERS3[3] = {1, 5, 9};
static const uint64_t FPS3[3] = {0x2222, 0x3333, 0x4444};

static sr_oracle_model small_model(void)
{
    sr_oracle_model m = SR_ORACLE_MODEL_INIT;
    m.seed = 42;
    m.vocab = 1000;
    m.num_layers = 3;
    m.layer_indices = LAYERS3;
    m.experts = 256;
    m.topk = 8;
    m.eos_id = 2;
    m.eos_rate = 0.1;
    return m;
}

static sr_oracle *make(const sr_oracle_model *m)
{
    sr_oracle *o = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_new(&o, m, &err), err);
    return o;
}

static int row_distinct_in_range(const int32_t *row, int K, int64_t E)
{
    for (int j = 0; j < K; j++) {
        if (row[j] < 0 || row[j] >= E)
            return 0;
        for (int q = 0; q < j; q++)
            if (row[q] == row[j])
                return 0;
    }
    return 1;
}

#endif /* SR_ORACLE_UTIL_H */
