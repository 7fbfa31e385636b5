/*
 * st_xcheck: the C side of unit.safetensors_numpy (tests/safetensors_numpy.py).
 *   st_xcheck write DIR SHARDS  writes the fixed checkpoint below to DIR (a new folder)
 *   st_xcheck dump DIR          opens the checkpoint DIR, reads it with 2 workers and prints
 *                               one line per tensor in name order:
 *                               <name> <dtype> <d0,d1,..|-> <hex of the bytes|->
 *                               then "meta <key> <value>" lines of the first file; or one line
 *                               "error <dotted code name>" (exit 0) when it is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_safetensors.h"

static int write_fixed(const char *dir, int shards)
{
    static float f32[6] = {-1, -0.5f, 0, 0.5f, 1, 1.5f};
    static uint16_t f16[5] = {0x3C00, 0x4000, 0xC000, 0x3800, 0};
    static uint16_t bf16[4] = {0x3F80, 0x4000, 0xBF80, 0};
    static int64_t i64[1] = {-123456789012345LL};
    static int32_t i32[3] = {-1, 0, 2147483647};
    static double f64[2] = {3.25, -1e300};
    static const int64_t s23[2] = {2, 3}, s5[1] = {5}, s0[2] = {0, 4}, s31[2] = {3, 1},
                         s22[2] = {2, 2}, s2[1] = {2};
    sr_st_in t[] = {
        {"model.layers.0.mlp.weight", SR_ST_F32, 2, s23, f32, sizeof f32},
        {"b.half", SR_ST_F16, 1, s5, f16, sizeof f16},
        {"c.bf16/with \"quote\"", SR_ST_BF16, 2, s22, bf16, sizeof bf16},
        {"scalar", SR_ST_I64, 0, NULL, i64, sizeof i64},
        {"empty", SR_ST_U8, 2, s0, NULL, 0},
        {"ints", SR_ST_I32, 2, s31, i32, sizeof i32},
        {"doubles", SR_ST_F64, 1, s2, f64, sizeof f64},
    };
    sr_st_meta m[2] = {{"format", "pt"}, {"syncroll_version", "7"}};
    sr_err err = SR_ERR_INIT;
    if (sr_st_write_checkpoint(dir, t, sizeof t / sizeof t[0], m, 2, shards, 2, &err)) {
        fprintf(stderr, "st_xcheck: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int dest(void *ctx, size_t i, const sr_st_info *x, void **dst, sr_err *err)
{
    unsigned char **bufs = ctx;
    bufs[i] = malloc(x->nbytes ? x->nbytes : 1);
    *dst = bufs[i];
    return bufs[i] ? 0 : sr_err_set(err, SR_E_NOMEM, "no memory");
}

static int dump(const char *dir)
{
    sr_err err = SR_ERR_INIT;
    sr_st_checkpoint *c = NULL;
    int rc = sr_st_checkpoint_open(&c, dir, &err);
    size_t n = rc ? 0 : sr_st_checkpoint_count(c);
    unsigned char **bufs = calloc(n ? n : 1, sizeof(*bufs));
    if (!rc)
        rc = sr_st_checkpoint_read(c, 2, dest, bufs, NULL, &err);
    if (rc) {
        printf("error %s\n", sr_code_name(rc));
        fprintf(stderr, "st_xcheck: %s\n", err.msg);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        sr_st_info x;
        sr_st_checkpoint_tensor(&x, c, i, NULL);
        printf("%s %s ", x.t->name, sr_st_dtype_name(x.t->dtype));
        for (int d = 0; d < x.t->ndim; d++)
            printf("%s%lld", d ? "," : "", (long long)x.t->shape[d]);
        printf("%s ", x.t->ndim ? "" : "-");
        for (size_t k = 0; k < x.nbytes; k++)
            printf("%02x", bufs[i][k]);
        printf("%s\n", x.nbytes ? "" : "-");
    }
    const sr_st_header *h = rc ? NULL : sr_st_checkpoint_header(c, 0);
    for (size_t i = 0; h && i < h->n_meta; i++)
        printf("meta %s %s\n", h->meta[i].key, h->meta[i].value);
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
    sr_st_checkpoint_free(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "write"))
        return write_fixed(argv[2], atoi(argv[3]));
    if (argc == 3 && !strcmp(argv[1], "dump"))
        return dump(argv[2]);
    fprintf(stderr, "usage: st_xcheck write DIR SHARDS | dump DIR\n");
    return 2;
}
