/*
 * Unit tests of sr_weights: spec validation with named errors, layout from the byte budget,
 * deterministic contents and golden fingerprints, the fingerprint definition, what a version
 * bump changes, and that full, partial and XOR updates move exactly the fingerprints of the
 * layers they touch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "sr_test.h"
#include "sr_weights.h"

enum { NL = 4 };
static const int32_t LAYERS[NL] = {1, 3, 10, 20};

static sr_weights_spec spec4(void)
{
    sr_weights_spec s = SR_WEIGHTS_SPEC_INIT;
    s.seed = 11;
    s.num_layers = NL;
    s.layer_indices = LAYERS;
    s.experts = 64;
    s.expert_tensors = 4;
    s.total_bytes = (size_t)1 << 20;
    return s;
}

static sr_weights *make(const sr_weights_spec *s, int64_t version)
{
    sr_weights *w = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_new(&w, s, version, &err), err);
    return w;
}

static sr_weights_info info(const sr_weights *w, size_t i)
{
    sr_weights_info t;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_tensor(&t, w, i, &err), err);
    return t;
}

typedef struct fps {
    uint64_t global;
    uint64_t layer[NL];
} fps;

static fps fps_of(const sr_weights *w)
{
    fps f;
    sr_weights_fingerprints(&f.global, f.layer, w);
    return f;
}

static void expect_invalid(const sr_weights_spec *s, int64_t version)
{
    sr_weights *w = (sr_weights *)1;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_weights_new(&w, s, version, &err), err, SR_E_WEIGHTS_SPEC);
    ck_assert_ptr_null(w);
}

START_TEST(test_invalid_specs)
{
    sr_weights_spec s = spec4();
    s.total_bytes = SR_WEIGHTS_MIN_BYTES - 1;
    expect_invalid(&s, 0);
    s.total_bytes = SR_WEIGHTS_MAX_BYTES + 1;
    expect_invalid(&s, 0);
    s = spec4();
    s.num_layers = 0;
    expect_invalid(&s, 0);
    static const int32_t down[NL] = {1, 3, 3, 20};
    s.num_layers = NL;
    s.layer_indices = down;
    expect_invalid(&s, 0);
    s = spec4();
    s.experts = 0;
    expect_invalid(&s, 0);
    s = spec4();
    s.expert_tensors = 0;
    expect_invalid(&s, 0);
    s.expert_tensors = SR_WEIGHTS_MAX_EXPERTS + 1;
    expect_invalid(&s, 0);
    s = spec4();
    s.block_change_rate = 1.01;
    expect_invalid(&s, 0);
    s = spec4();
    expect_invalid(&s, -1);
    expect_invalid(&s, SR_WEIGHTS_MAX_VERSION + 1);
    expect_invalid(NULL, 0);
    /* 1024 layers of 193 tensors do not fit in 1 MiB even at one row each. */
    int32_t *many = malloc(sizeof(int32_t) * SR_WEIGHTS_MAX_LAYERS);
    for (int l = 0; l < SR_WEIGHTS_MAX_LAYERS; l++)
        many[l] = l;
    s = spec4();
    s.num_layers = SR_WEIGHTS_MAX_LAYERS;
    s.layer_indices = many;
    s.expert_tensors = SR_WEIGHTS_MAX_EXPERTS;
    expect_invalid(&s, 0);
    free(many);
}
END_TEST

START_TEST(test_layout)
{
    sr_weights_spec s = spec4();
    sr_weights *w = make(&s, 0);
    size_t n = sr_weights_count(w);
    ck_assert_uint_eq(n, 2 + NL * (1 + 3 * 4));
    size_t total = 0;
    int per_layer[NL] = {0}, globals = 0;
    for (size_t i = 0; i < n; i++) {
        sr_weights_info t = info(w, i);
        if (i > 0)
            ck_assert_int_lt(strcmp(info(w, i - 1).name, t.name), 0);
        ck_assert_uint_eq(t.nbytes % 64, 0);
        ck_assert_uint_eq((uintptr_t)t.data % 64, 0);
        ck_assert_int_eq(t.shape[1], 64);
        ck_assert_uint_eq(t.nbytes,
                          (size_t)t.shape[0] * 64 * (t.dtype == SR_DTYPE_FLOAT32 ? 4 : 2));
        total += t.nbytes;
        if (t.layer < 0)
            globals++;
        else
            per_layer[t.layer]++;
        size_t j;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_weights_find(&j, w, t.name, &err), err);
        ck_assert_uint_eq(j, i);
    }
    ck_assert_int_eq(globals, 2);
    for (int l = 0; l < NL; l++)
        ck_assert_int_eq(per_layer[l], 13);
    ck_assert_uint_eq(total, sr_weights_total_bytes(w));
    ck_assert_uint_le(total, s.total_bytes);
    ck_assert_uint_ge(total, s.total_bytes - s.total_bytes / 20);

    size_t j;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_find(&j, w, "layers.10.mlp.router.weight", &err), err);
    sr_weights_info r = info(w, j);
    ck_assert_int_eq(r.dtype, SR_DTYPE_FLOAT32);
    ck_assert_int_eq(r.layer, 2);
    ck_assert_sr_ok(sr_weights_find(&j, w, "layers.20.mlp.experts.3.w3", &err), err);
    ck_assert_int_eq(info(w, j).dtype, SR_DTYPE_FLOAT16);
    ck_assert_int_eq(info(w, j).layer, 3);
    ck_assert_sr_ok(sr_weights_find(&j, w, "lm_head.weight", &err), err);
    ck_assert_int_eq(info(w, j).layer, -1);
    ck_assert_sr_code(sr_weights_find(&j, w, "layers.20.mlp.experts.4.w1", &err), err,
                      SR_E_WEIGHTS_UNKNOWN);
    ck_assert_sr_code(sr_weights_find(&j, w, "layers.2.mlp.router.weight", &err), err,
                      SR_E_WEIGHTS_UNKNOWN);
    sr_weights_info t;
    ck_assert_sr_code(sr_weights_tensor(&t, w, n, &err), err, SR_E_WEIGHTS_UNKNOWN);
    sr_weights_free(w);

    /* Fewer experts than the cap: one tensor triple per expert. */
    s.experts = 2;
    w = make(&s, 0);
    ck_assert_uint_eq(sr_weights_count(w), 2 + NL * (1 + 3 * 2));
    sr_weights_free(w);
    sr_weights_free(NULL);
}
END_TEST

START_TEST(test_determinism_and_golden)
{
    sr_weights_spec s = spec4();
    sr_weights *a = make(&s, 2), *b = make(&s, 2);
    for (size_t i = 0; i < sr_weights_count(a); i++) {
        sr_weights_info ta = info(a, i), tb = info(b, i);
        ck_assert_mem_eq(ta.data, tb.data, ta.nbytes);
    }
    fps fa = fps_of(a), fb = fps_of(b);
    ck_assert_mem_eq(&fa, &fb, sizeof fa);
    ck_assert_int_eq(sr_weights_version(a), 2);
    /* Golden fingerprints pin the documented content and fingerprint functions. */
    ck_assert_uint_eq(fa.global, 0x6a7e1e0c2b5b8697ull);
    ck_assert_uint_eq(fa.layer[0], 0x85ea0d7720a84162ull);
    ck_assert_uint_eq(fa.layer[3], 0xf6627a2fe902e8e4ull);
    /* Another seed gives other bytes everywhere. */
    s.seed = 12;
    sr_weights *c = make(&s, 2);
    fps fc = fps_of(c);
    ck_assert_uint_ne(fc.global, fa.global);
    for (int l = 0; l < NL; l++)
        ck_assert_uint_ne(fc.layer[l], fa.layer[l]);
    sr_weights_free(a);
    sr_weights_free(b);
    sr_weights_free(c);
}
END_TEST

/* Recomputes the fingerprints from the documented definition. */
START_TEST(test_fingerprint_definition)
{
    sr_weights_spec s = spec4();
    sr_weights *w = make(&s, 1);
    unsigned char buf[NL + 1][16 * 16];
    size_t len[NL + 1] = {0};
    for (size_t i = 0; i < sr_weights_count(w); i++) {
        sr_weights_info t = info(w, i);
        XXH128_hash_t d = XXH3_128bits(t.data, t.nbytes);
        ck_assert_uint_eq(d.high64, t.digest_hi);
        ck_assert_uint_eq(d.low64, t.digest_lo);
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, d);
        int g = t.layer < 0 ? NL : t.layer;
        memcpy(buf[g] + len[g], &c, sizeof c);
        len[g] += sizeof c;
    }
    fps f = fps_of(w);
    for (int l = 0; l < NL; l++)
        ck_assert_uint_eq(f.layer[l], XXH3_64bits(buf[l], len[l]));
    ck_assert_uint_eq(f.global, XXH3_64bits(buf[NL], len[NL]));
    sr_weights_free(w);
}
END_TEST

static size_t blocks_differing(const void *a, const void *b, size_t nbytes)
{
    size_t n = 0;
    for (size_t off = 0; off < nbytes; off += 64)
        n += memcmp((const char *)a + off, (const char *)b + off, 64) != 0;
    return n;
}

START_TEST(test_version_bump)
{
    sr_weights_spec s = spec4();
    sr_weights *v0 = make(&s, 4), *v1 = make(&s, 5);
    fps f0 = fps_of(v0), f1 = fps_of(v1);
    ck_assert_uint_ne(f0.global, f1.global);
    int unchanged = 0, changed = 0, layers_changed = 0;
    size_t diff_blocks = 0, blocks = 0;
    for (size_t i = 0; i < sr_weights_count(v0); i++) {
        sr_weights_info a = info(v0, i), b = info(v1, i);
        size_t d = blocks_differing(a.data, b.data, a.nbytes);
        ck_assert_int_eq(d == 0, a.digest_hi == b.digest_hi && a.digest_lo == b.digest_lo);
        if (a.layer < 0)
            ck_assert_uint_gt(d, 0); /* the global tensors change at every version */
        if (d == 0) {
            unchanged++;
            continue;
        }
        changed++;
        diff_blocks += d;
        blocks += a.nbytes / 64;
    }
    for (int l = 0; l < NL; l++)
        layers_changed += f0.layer[l] != f1.layer[l];
    ck_assert_int_gt(unchanged, 0); /* a delta manifest omits these */
    ck_assert_int_gt(changed, 2);
    ck_assert_int_gt(layers_changed, 0);
    /* About block_change_rate (1/8) of a changed tensor's blocks differ. */
    ck_assert_uint_gt(diff_blocks * 16, blocks);
    ck_assert_uint_lt(diff_blocks * 5, blocks);
    sr_weights_free(v0);
    sr_weights_free(v1);
}
END_TEST

/* Writes tensor i of `src` into `dst` when `layer` is -2 (all) or the tensor's layer. */
static void apply(sr_weights *dst, const sr_weights *src, int layer)
{
    sr_err err = SR_ERR_INIT;
    for (size_t i = 0; i < sr_weights_count(src); i++) {
        sr_weights_info t = info(src, i);
        if (layer != -2 && t.layer != layer)
            continue;
        ck_assert_sr_ok(sr_weights_write(dst, i, t.data, t.nbytes, &err), err);
    }
}

START_TEST(test_full_and_partial_update)
{
    sr_weights_spec s = spec4();
    s.tensor_change_rate = 1.0; /* every layer changes between these versions */
    sr_weights *w = make(&s, 0), *v1 = make(&s, 1);
    fps f0 = fps_of(w), f1 = fps_of(v1);
    for (int l = 0; l < NL; l++)
        ck_assert_uint_ne(f0.layer[l], f1.layer[l]);
    /* Applying only layer 2's tensors moves exactly layer 2's fingerprint. */
    apply(w, v1, 2);
    fps fp = fps_of(w);
    for (int l = 0; l < NL; l++)
        ck_assert_uint_eq(fp.layer[l], l == 2 ? f1.layer[l] : f0.layer[l]);
    ck_assert_uint_eq(fp.global, f0.global);
    /* Half of layer 0's tensors: layer 0 is neither version, the others are untouched. */
    sr_err err = SR_ERR_INIT;
    int k = 0;
    for (size_t i = 0; i < sr_weights_count(v1); i++) {
        sr_weights_info t = info(v1, i);
        if (t.layer == 0 && k++ % 2 == 0)
            ck_assert_sr_ok(sr_weights_write(w, i, t.data, t.nbytes, &err), err);
    }
    fp = fps_of(w);
    ck_assert_uint_ne(fp.layer[0], f0.layer[0]);
    ck_assert_uint_ne(fp.layer[0], f1.layer[0]);
    ck_assert_uint_eq(fp.layer[1], f0.layer[1]);
    ck_assert_uint_eq(fp.layer[2], f1.layer[2]);
    /* The exact bytes of every tensor of version 1 give version 1's fingerprints. */
    apply(w, v1, -2);
    fp = fps_of(w);
    ck_assert_mem_eq(&fp, &f1, sizeof fp);
    ck_assert_int_eq(sr_weights_version(w), 0); /* writes do not relabel the set */
    sr_weights_free(w);
    sr_weights_free(v1);
}
END_TEST

START_TEST(test_xor_and_write_errors)
{
    sr_weights_spec s = spec4();
    sr_weights *w = make(&s, 3), *v4 = make(&s, 4);
    fps f3 = fps_of(w), f4 = fps_of(v4);
    sr_err err = SR_ERR_INIT;
    size_t n = sr_weights_count(w);
    unsigned char **patch = calloc(n, sizeof *patch);
    for (size_t i = 0; i < n; i++) {
        sr_weights_info a = info(w, i), b = info(v4, i);
        patch[i] = malloc(a.nbytes);
        for (size_t j = 0; j < a.nbytes; j++)
            patch[i][j] = ((const unsigned char *)a.data)[j] ^ ((const unsigned char *)b.data)[j];
        ck_assert_sr_ok(sr_weights_xor(w, i, patch[i], a.nbytes, &err), err);
    }
    fps fx = fps_of(w);
    ck_assert_mem_eq(&fx, &f4, sizeof fx);
    for (size_t i = 0; i < n; i++) /* the same patch again undoes it */
        ck_assert_sr_ok(sr_weights_xor(w, i, patch[i], info(w, i).nbytes, &err), err);
    fx = fps_of(w);
    ck_assert_mem_eq(&fx, &f3, sizeof fx);

    sr_weights_info t = info(w, 0);
    ck_assert_sr_code(sr_weights_write(w, 0, patch[0], t.nbytes - 1, &err), err, SR_E_WEIGHTS_SIZE);
    ck_assert_sr_code(sr_weights_xor(w, 0, patch[0], t.nbytes + 64, &err), err, SR_E_WEIGHTS_SIZE);
    ck_assert_sr_code(sr_weights_write(w, n, patch[0], t.nbytes, &err), err, SR_E_WEIGHTS_UNKNOWN);
    fx = fps_of(w);
    ck_assert_mem_eq(&fx, &f3, sizeof fx); /* failed writes change nothing */
    for (size_t i = 0; i < n; i++)
        free(patch[i]);
    free(patch);
    sr_weights_free(w);
    sr_weights_free(v4);
}
END_TEST

START_TEST(test_reset_and_expected)
{
    sr_weights_spec s = spec4();
    sr_weights *w = make(&s, 0), *v7 = make(&s, 7);
    fps f7 = fps_of(v7), fe;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_expected(&fe.global, fe.layer, &s, 7, &err), err);
    ck_assert_mem_eq(&fe, &f7, sizeof fe);
    ck_assert_sr_ok(sr_weights_reset(w, 7, &err), err);
    fps fr = fps_of(w);
    ck_assert_mem_eq(&fr, &f7, sizeof fr);
    ck_assert_int_eq(sr_weights_version(w), 7);
    for (size_t i = 0; i < sr_weights_count(w); i++)
        ck_assert_mem_eq(info(w, i).data, info(v7, i).data, info(w, i).nbytes);
    ck_assert_sr_code(sr_weights_reset(w, -1, &err), err, SR_E_WEIGHTS_SPEC);
    ck_assert_sr_code(
        sr_weights_expected(&fe.global, fe.layer, &s, SR_WEIGHTS_MAX_VERSION + 1, &err), err,
        SR_E_WEIGHTS_SPEC);
    ck_assert_int_eq(sr_weights_spec_of(w)->num_layers, NL);
    sr_weights_free(w);
    sr_weights_free(v7);
}
END_TEST

/* The version range is inclusive: SR_WEIGHTS_MAX_VERSION itself is built (the expected
 * fingerprints, on a small set), one past it is weights.invalid_spec; 0 and -1 likewise. */
START_TEST(test_version_limits_are_exact)
{
    static const int32_t one[1] = {0};
    sr_weights_spec s = SR_WEIGHTS_SPEC_INIT;
    s.seed = 5;
    s.num_layers = 1;
    s.layer_indices = one;
    s.experts = 4;
    s.expert_tensors = 2;
    s.total_bytes = (size_t)1 << 20;
    uint64_t g = 0, l[1] = {0}, g0 = 0, l0[1] = {0};
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_expected(&g, l, &s, SR_WEIGHTS_MAX_VERSION, &err), err);
    ck_assert_sr_ok(sr_weights_expected(&g0, l0, &s, 0, &err), err);
    ck_assert(g != g0);
    ck_assert_sr_code(sr_weights_expected(&g, l, &s, SR_WEIGHTS_MAX_VERSION + 1, &err), err,
                      SR_E_WEIGHTS_SPEC);
    ck_assert_sr_code(sr_weights_expected(&g, l, &s, -1, &err), err, SR_E_WEIGHTS_SPEC);
}
END_TEST

static Suite *weights_suite(void)
{
    Suite *s = suite_create("weights");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_invalid_specs);
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_determinism_and_golden);
    tcase_add_test(tc, test_fingerprint_definition);
    tcase_add_test(tc, test_version_bump);
    tcase_add_test(tc, test_full_and_partial_update);
    tcase_add_test(tc, test_xor_and_write_errors);
    tcase_add_test(tc, test_reset_and_expected);
    tcase_add_test(tc, test_version_limits_are_exact);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(weights_suite());
}
