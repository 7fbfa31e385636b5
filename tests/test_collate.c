/* Tests of sr_collate (§7.3) against a plain reference collation written here, and of the
 * routing-replay configuration check (§9). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_collate.h"
#include "sr_replay_config.h"
#include "sr_test.h"
#include "sr_trace.h"
#include "sr_mix.h"

/* ---- helpers ---- */

static uint64_t rng_next(uint64_t *s)
{
    return sr_mix64(*s += SR_MIX_GOLDEN);
}

static int64_t rng_range(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* Routes [rows, L, K] of `dtype` with values seeded by `salt`, below `cap`. */
static sr_ndarray make_routes(sr_dtype dtype, int64_t rows, int64_t L, int64_t K, uint64_t salt,
                              int64_t cap)
{
    sr_ndarray a;
    sr_err err = SR_ERR_INIT;
    int64_t shape[3] = {rows, L, K};
    ck_assert_sr_ok(sr_ndarray_alloc(&a, dtype, 3, shape, &err), err);
    uint64_t n = sr_ndarray_numel(&a), s = salt;
    for (uint64_t i = 0; i < n; i++)
        sr_ndarray_set_i64(&a, i, (int64_t)(rng_next(&s) % (uint64_t)cap));
    return a;
}

static sr_collate_sample sample(const sr_ndarray *r, int64_t prompt, int64_t response)
{
    sr_collate_sample s = SR_COLLATE_SAMPLE_INIT;
    s.routes = r;
    s.prompt_len = prompt;
    s.response_len = response;
    return s;
}

/*
 * The plain reference: element by element, as the NumPy code reads. Output [B, T, L, K] in the
 * widest dtype and a mask, both owned.
 */
static void reference_collate(sr_ndarray *routes, uint8_t **mask, const sr_collate_sample *s,
                              int64_t n)
{
    int64_t t_max = 0, L = s[0].routes->shape[1], K = s[0].routes->shape[2];
    sr_dtype dt = s[0].routes->dtype;
    for (int64_t i = 0; i < n; i++) {
        int64_t real = s[i].prompt_len + s[i].response_len;
        t_max = real > t_max ? real : t_max;
        if (sr_dtype_size(s[i].routes->dtype) > sr_dtype_size(dt))
            dt = s[i].routes->dtype;
    }
    int64_t shape[4] = {n, t_max, L, K};
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(routes, dt, 4, shape, &err), err);
    *mask = malloc((size_t)(n * t_max));
    for (int64_t i = 0; i < n; i++) {
        int64_t pad = t_max - s[i].prompt_len - s[i].response_len;
        int64_t rows = s[i].captured_rows < 0 ? s[i].routes->shape[0] : s[i].captured_rows;
        for (int64_t t = 0; t < t_max; t++) {
            int real_row = t >= pad && t < pad + rows;
            (*mask)[i * t_max + t] = !real_row;
            for (int64_t l = 0; l < L; l++) {
                for (int64_t k = 0; k < K; k++) {
                    uint64_t at = (uint64_t)(((i * t_max + t) * L + l) * K + k);
                    int64_t v = k;
                    if (real_row)
                        v = sr_ndarray_get_i64(s[i].routes,
                                               (uint64_t)(((t - pad) * L + l) * K + k));
                    sr_ndarray_set_i64(routes, at, v);
                }
            }
        }
    }
}

/* Collates with `workers` and asserts bit-identity with the reference. */
static void assert_matches_reference(sr_collate_buf *buf, const sr_collate_sample *s, int64_t n,
                                     int workers)
{
    sr_collate_result got;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_collate_routes(&got, buf, s, n, workers, &err), err);
    sr_ndarray want;
    uint8_t *want_mask;
    reference_collate(&want, &want_mask, s, n);
    ck_assert_int_eq(got.routes.dtype, want.dtype);
    ck_assert_int_eq(got.routes.ndim, 4);
    for (int d = 0; d < 4; d++)
        ck_assert_int_eq(got.routes.shape[d], want.shape[d]);
    ck_assert_uint_eq(got.routes.nbytes, want.nbytes);
    ck_assert_int_eq(got.routes.owned, 0);
    ck_assert_msg(memcmp(got.routes.data, want.data, want.nbytes) == 0,
                  "collation differs from the reference with %d workers", workers);
    ck_assert_int_eq(got.padding_mask.dtype, SR_DTYPE_BOOL);
    ck_assert_int_eq(got.padding_mask.shape[0], n);
    ck_assert_int_eq(got.padding_mask.shape[1], got.t_max);
    ck_assert_int_eq(got.t_max, want.shape[1]);
    ck_assert(memcmp(got.padding_mask.data, want_mask, (size_t)(n * got.t_max)) == 0);
    ck_assert_int_eq(got.int32_batch, want.dtype == SR_DTYPE_INT32);
    sr_ndarray_release(&want);
    free(want_mask);
}

/* ---- §7.3 cases ---- */

START_TEST(mixed_uint8_int16_matches_reference)
{
    /* uint8 + int16 -> int16, padding rows [0, 1, 2] on both sides. */
    sr_ndarray a = make_routes(SR_DTYPE_UINT8, 3, 2, 3, 1, 256);
    sr_ndarray b = make_routes(SR_DTYPE_INT16, 5, 2, 3, 2, 1000);
    sr_collate_sample s[2] = {sample(&a, 2, 3), sample(&b, 4, 2)};
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    assert_matches_reference(&buf, s, 2, 1);
    assert_matches_reference(&buf, s, 2, 2);
    /* Spot checks of the layout: sample 0 has pad 1, 3 route rows, then 2 padding rows. */
    sr_collate_result r;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_collate_routes(&r, &buf, s, 2, 1, &err), err);
    ck_assert_int_eq(r.routes.dtype, SR_DTYPE_INT16);
    ck_assert_int_eq(r.t_max, 6);
    const int16_t *o = r.routes.data;
    const uint8_t *m = r.padding_mask.data;
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 3; k++) {
            ck_assert_int_eq(o[(0 * 2 + l) * 3 + k], k); /* left pad, column 0 */
            ck_assert_int_eq(o[(5 * 2 + l) * 3 + k], k); /* tail, column 5 */
            ck_assert_int_eq(o[(1 * 2 + l) * 3 + k], ((const uint8_t *)a.data)[l * 3 + k]);
        }
    uint8_t want_mask[12] = {1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1};
    ck_assert(memcmp(m, want_mask, 12) == 0);
    ck_assert_int_eq(r.int32_batch, 0);
    sr_collate_buf_release(&buf);
    sr_ndarray_release(&a);
    sr_ndarray_release(&b);
}
END_TEST

START_TEST(canonical_dtypes_map_and_int32_flag)
{
    const sr_dtype types[3] = {SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT32};
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    for (int i = 0; i < 3; i++) {
        /* Small values in a wide dtype stay in that dtype: no re-compaction. */
        sr_ndarray a = make_routes(types[i], 4, 3, 2, 7, 100);
        sr_collate_sample s[1] = {sample(&a, 2, 3)};
        sr_collate_result r;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_collate_routes(&r, &buf, s, 1, 1, &err), err);
        ck_assert_int_eq(r.routes.dtype, types[i]);
        ck_assert_int_eq(r.int32_batch, types[i] == SR_DTYPE_INT32);
        assert_matches_reference(&buf, s, 1, 1);
        sr_ndarray_release(&a);
    }
    /* A uint8 sample and an int32 sample: int32 batch, flagged. */
    sr_ndarray a = make_routes(SR_DTYPE_UINT8, 2, 1, 2, 3, 256);
    sr_ndarray b = make_routes(SR_DTYPE_INT32, 2, 1, 2, 4, 1 << 20);
    sr_ndarray c = make_routes(SR_DTYPE_INT16, 1, 1, 2, 5, 30000);
    sr_collate_sample s[3] = {sample(&a, 1, 1), sample(&b, 2, 2), sample(&c, 0, 3)};
    assert_matches_reference(&buf, s, 3, 1);
    assert_matches_reference(&buf, s, 3, 3);
    sr_collate_buf_release(&buf);
    sr_ndarray_release(&a);
    sr_ndarray_release(&b);
    sr_ndarray_release(&c);
}
END_TEST

START_TEST(non_canonical_dtypes_rejected)
{
    sr_ndarray ok = make_routes(SR_DTYPE_UINT8, 2, 1, 2, 1, 10);
    const sr_dtype bad[4] = {SR_DTYPE_UINT16, SR_DTYPE_INT64, SR_DTYPE_INT8, SR_DTYPE_UINT32};
    for (int i = 0; i < 4; i++) {
        sr_ndarray b = make_routes(bad[i], 2, 1, 2, 1, 10);
        sr_collate_sample s[3] = {sample(&ok, 1, 2), sample(&ok, 1, 2), sample(&b, 1, 2)};
        sr_collate_buf buf = SR_COLLATE_BUF_INIT;
        sr_collate_result r;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_code(sr_collate_routes(&r, &buf, s, 3, 1, &err), err, SR_E_COLLATE_INPUT);
        ck_assert_int_eq(err.offset, 2);
        ck_assert_ptr_nonnull(strstr(err.msg, "canonical routed-expert dtype"));
        ck_assert_ptr_nonnull(strstr(err.msg, "at sample 2"));
        ck_assert_ptr_nonnull(strstr(err.msg, sr_dtype_name(bad[i])));
        ck_assert_ptr_null(r.routes.data);
        /* Validation fails before anything is allocated or written. */
        ck_assert_ptr_null(buf.routes);
        sr_ndarray_release(&b);
    }
    sr_ndarray_release(&ok);
}
END_TEST

/* A call that must fail: its code, error offset and a phrase of its message. */
typedef struct bad_call {
    sr_collate_sample s[2];
    int64_t n;
    int code;
    int64_t offset;
    const char *text;
} bad_call;

/* Runs every call on one buffer, which validation never allocates. */
static void expect_bad_calls(const bad_call *c, size_t n)
{
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    sr_collate_result r;
    for (size_t i = 0; i < n; i++) {
        sr_err err = SR_ERR_INIT;
        int rc = sr_collate_routes(&r, &buf, c[i].s, c[i].n, 1, &err);
        ck_assert_sr_code(rc, err, c[i].code);
        ck_assert_int_eq(err.offset, c[i].offset);
        ck_assert_msg(strstr(err.msg, c[i].text) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
                      c[i].text);
    }
    ck_assert_ptr_null(buf.routes);
    sr_collate_buf_release(&buf);
}

/* Shapes: no samples, a NULL array, no rows, a flat array, no experts, no layers, a mismatch. */
START_TEST(validation_errors_name_the_sample)
{
    sr_ndarray ok = make_routes(SR_DTYPE_INT16, 3, 2, 2, 1, 100);
    sr_ndarray empty = make_routes(SR_DTYPE_INT16, 0, 2, 2, 1, 100);
    sr_ndarray k0 = make_routes(SR_DTYPE_INT16, 3, 2, 0, 1, 100);
    sr_ndarray l0 = make_routes(SR_DTYPE_INT16, 3, 0, 2, 1, 100);
    sr_ndarray l3 = make_routes(SR_DTYPE_INT16, 3, 3, 2, 1, 100);
    sr_ndarray flat;
    int64_t s2[2] = {3, 4};
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(&flat, SR_DTYPE_INT16, 2, s2, &err), err);
    const int in = SR_E_COLLATE_INPUT;
    const char *every = "must contain routes for every trajectory";
    const bad_call cases[] = {
        {{sample(&ok, 1, 3), sample(&ok, 1, 3)}, 0, in, -1, every},
        {{sample(&ok, 1, 3), sample(NULL, 1, 3)},
         2,
         in,
         1,
         "entries must be NumPy arrays, got NULL at sample 1"},
        {{sample(&empty, 1, 3), sample(&ok, 1, 3)}, 2, in, 0, every},
        {{sample(&flat, 1, 3), sample(&ok, 1, 3)}, 2, in, 0, every},
        {{sample(&k0, 1, 3), sample(&ok, 1, 3)}, 2, in, 0, "at least one expert per layer"},
        {{sample(&l0, 1, 3), sample(&ok, 1, 3)}, 2, in, 0, "at least one MoE layer"},
        {{sample(&ok, 1, 3), sample(&l3, 1, 3)},
         2,
         in,
         1,
         "must share [layers, topk], got shape int16[3, 3, 2] at sample 1"},
        {{sample(&ok, 1, 3), sample(&flat, 1, 3)}, 2, in, 1, "must share [layers, topk]"},
    };
    expect_bad_calls(cases, sizeof(cases) / sizeof(cases[0]));
    sr_ndarray_release(&ok);
    sr_ndarray_release(&empty);
    sr_ndarray_release(&k0);
    sr_ndarray_release(&l0);
    sr_ndarray_release(&l3);
    sr_ndarray_release(&flat);
}
END_TEST

/* Lengths: a negative one, more rows than tokens, an overflowing sum. */
START_TEST(length_errors_name_the_sample)
{
    sr_ndarray ok = make_routes(SR_DTYPE_INT16, 3, 2, 2, 1, 100);
    const bad_call cases[] = {
        {{sample(&ok, 1, 3), sample(&ok, -1, 3)}, 2, SR_E_COLLATE_INPUT, 1, "negative"},
        {{sample(&ok, 1, 3), sample(&ok, 1, 1)},
         2,
         SR_E_COLLATE_ROWS,
         1,
         "Trajectory 1 has 3 route rows for 2 tokens"},
        {{sample(&ok, 1, 2), sample(&ok, INT64_MAX, 1)}, 2, SR_E_COLLATE_INPUT, 1, "overflow"},
    };
    expect_bad_calls(cases, sizeof(cases) / sizeof(cases[0]));
    sr_ndarray_release(&ok);
}
END_TEST

/* captured_rows out of range, a NULL sample list, a negative worker count, a broken array. */
START_TEST(captured_rows_and_arguments_are_checked)
{
    sr_ndarray ok = make_routes(SR_DTYPE_INT16, 3, 2, 2, 1, 100);
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    sr_collate_result r;
    sr_err err = SR_ERR_INIT;
    /* captured_rows: more than held, below -1, and zero. */
    sr_collate_sample s[2] = {sample(&ok, 1, 3), sample(&ok, 1, 3)};
    s[1].captured_rows = 4;
    ck_assert_sr_code(sr_collate_routes(&r, &buf, s, 2, 1, &err), err, SR_E_COLLATE_INPUT);
    ck_assert_int_eq(err.offset, 1);
    s[1].captured_rows = -2;
    ck_assert_sr_code(sr_collate_routes(&r, &buf, s, 2, 1, &err), err, SR_E_COLLATE_INPUT);
    s[1].captured_rows = 0;
    ck_assert_sr_code(sr_collate_routes(&r, &buf, s, 2, 1, &err), err, SR_E_COLLATE_ROWS);
    ck_assert_str_eq(err.msg, "Trajectory 1 has 0 route rows for 4 tokens");
    /* A NULL sample list and a negative worker count. */
    ck_assert_sr_code(sr_collate_routes(&r, &buf, NULL, 2, 1, &err), err, SR_E_COLLATE_INPUT);
    s[1].captured_rows = -1;
    ck_assert_sr_code(sr_collate_routes(&r, &buf, s, 2, -1, &err), err, SR_E_POOL_ARG);
    /* An inconsistent descriptor. */
    sr_ndarray broken = ok;
    broken.nbytes = 7;
    s[0].routes = &broken;
    ck_assert_sr_code(sr_collate_routes(&r, &buf, s, 2, 1, &err), err, SR_E_COLLATE_INPUT);
    ck_assert_int_eq(err.offset, 0);
    ck_assert_ptr_null(buf.routes);
    sr_collate_buf_release(&buf);
    sr_ndarray_release(&ok);
}
END_TEST

START_TEST(buffer_maximum_and_reuse)
{
    sr_ndarray a = make_routes(SR_DTYPE_INT16, 10, 4, 4, 9, 500);
    sr_collate_sample s[2] = {sample(&a, 4, 8), sample(&a, 6, 4)};
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    buf.max_bytes = 2 * 12 * 4 * 4 * 2 - 1; /* one byte short */
    sr_collate_result r;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_collate_routes(&r, &buf, s, 2, 1, &err), err, SR_E_LIMIT);
    buf.max_bytes += 1;
    ck_assert_sr_ok(sr_collate_routes(&r, &buf, s, 2, 1, &err), err);
    void *first = buf.routes;
    /* A smaller batch reuses the storage (grow-only) and is still exact. */
    sr_collate_sample one[1] = {sample(&a, 5, 5)};
    assert_matches_reference(&buf, one, 1, 2);
    ck_assert_ptr_eq(buf.routes, first);
    assert_matches_reference(&buf, s, 2, 0); /* 0 workers: the machine's default */
    ck_assert_ptr_eq(buf.routes, first);
    size_t max = buf.max_bytes;
    sr_collate_buf_release(&buf);
    ck_assert_ptr_null(buf.routes);
    ck_assert_uint_eq(buf.max_bytes, max);
    sr_ndarray_release(&a);
}
END_TEST

START_TEST(captured_rows_mask_the_trace_padding)
{
    /* A finalized trace: 4 captured rows padded to 6; the mask must call rows 4, 5 padding. */
    for (int quirk = 0; quirk <= 1; quirk++) {
        sr_trace_opts o = SR_TRACE_OPTS_INIT;
        o.padding_as_captured = quirk;
        sr_route_trace *t;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_route_trace_new(&t, &o, &err), err);
        sr_ndarray rec = make_routes(SR_DTYPE_UINT8, 4, 2, 2, 11, 64);
        ck_assert_sr_ok(sr_route_trace_record(t, 3, 2, &rec, NULL, 0, &err), err);
        uint8_t lm[6] = {0, 0, 0, 1, 1, 0};
        sr_ndarray fin;
        int64_t captured;
        ck_assert_sr_ok(sr_route_trace_finalize(&fin, &captured, t, 6, lm, 6, &err), err);
        sr_collate_sample s = sample(&fin, 3, 3);
        s.captured_rows = captured;
        sr_collate_buf buf = SR_COLLATE_BUF_INIT;
        sr_collate_result r;
        ck_assert_sr_ok(sr_collate_routes(&r, &buf, &s, 1, 1, &err), err);
        const uint8_t *m = r.padding_mask.data;
        int64_t marked = 0;
        for (int64_t i = 0; i < 6; i++)
            marked += m[i];
        /* Without the quirk the two padding rows are masked; with it nothing is (the bug). */
        ck_assert_int_eq(marked, quirk ? 0 : 2);
        ck_assert_int_eq(m[5], quirk ? 0 : 1);
        assert_matches_reference(&buf, &s, 1, 1);
        sr_collate_buf_release(&buf);
        sr_ndarray_release(&fin);
        sr_ndarray_release(&rec);
        sr_route_trace_free(t);
    }
}
END_TEST

START_TEST(captured_prefix_of_a_longer_array)
{
    /* Rows past captured_rows are not copied even when they hold other values. */
    sr_ndarray a = make_routes(SR_DTYPE_INT16, 6, 2, 3, 13, 9000);
    sr_ndarray b = make_routes(SR_DTYPE_UINT8, 2, 2, 3, 14, 200);
    sr_collate_sample s[2] = {sample(&a, 2, 5), sample(&b, 1, 2)};
    s[0].captured_rows = 3;
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    assert_matches_reference(&buf, s, 2, 1);
    assert_matches_reference(&buf, s, 2, 2);
    sr_collate_buf_release(&buf);
    sr_ndarray_release(&a);
    sr_ndarray_release(&b);
}
END_TEST

START_TEST(inputs_are_not_modified)
{
    sr_ndarray a = make_routes(SR_DTYPE_UINT8, 5, 3, 2, 21, 256);
    sr_ndarray copy = make_routes(SR_DTYPE_UINT8, 5, 3, 2, 21, 256);
    sr_collate_sample s[2] = {sample(&a, 3, 3), sample(&a, 5, 5)};
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    assert_matches_reference(&buf, s, 2, 2);
    ck_assert(sr_ndarray_equal(&a, &copy));
    sr_collate_buf_release(&buf);
    sr_ndarray_release(&a);
    sr_ndarray_release(&copy);
}
END_TEST

START_TEST(long_padding_spans_exceed_the_pattern_block)
{
    /* Rows of 48 x 8 int32 (1536 bytes): padding spans of ~100 rows take several copies of the
     * prebuilt padding block, on both sides. */
    sr_ndarray a = make_routes(SR_DTYPE_INT32, 3, 48, 8, 31, 70000);
    sr_ndarray b = make_routes(SR_DTYPE_UINT8, 40, 48, 8, 32, 256);
    sr_collate_sample s[3] = {sample(&a, 1, 2), sample(&b, 60, 50), sample(&a, 50, 10)};
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    assert_matches_reference(&buf, s, 3, 1);
    assert_matches_reference(&buf, s, 3, 2);
    sr_collate_buf_release(&buf);
    sr_ndarray_release(&a);
    sr_ndarray_release(&b);
}
END_TEST

/* Random batches: shapes, dtypes, lengths and captured prefixes, for 1, 2 and 3 workers. */
START_TEST(property_random_batches)
{
    const sr_dtype types[3] = {SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT32};
    const int64_t caps[3] = {256, 32768, (int64_t)1 << 31};
    uint64_t seed = 0xc011a7eu;
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    for (int iter = 0; iter < 150; iter++) {
        int64_t n = rng_range(&seed, 1, 9), L = rng_range(&seed, 1, 4), K = rng_range(&seed, 1, 5);
        sr_ndarray arrays[9];
        sr_collate_sample s[9];
        for (int64_t i = 0; i < n; i++) {
            int ti = (int)rng_range(&seed, 0, 2);
            int64_t real = rng_range(&seed, 1, 40);
            int64_t held = rng_range(&seed, 1, real);
            arrays[i] = make_routes(types[ti], held, L, K, rng_next(&seed), caps[ti]);
            int64_t prompt = rng_range(&seed, 0, real);
            s[i] = sample(&arrays[i], prompt, real - prompt);
            if (rng_range(&seed, 0, 1))
                s[i].captured_rows = rng_range(&seed, 1, held);
        }
        assert_matches_reference(&buf, s, n, (int)rng_range(&seed, 1, 3));
        for (int64_t i = 0; i < n; i++)
            sr_ndarray_release(&arrays[i]);
    }
    sr_collate_buf_release(&buf);
}
END_TEST

/* ---- §9 routing replay versus virtual pipeline parallelism ---- */

static sr_replay_config replay(int on, int set, int64_t vpp, int quirk)
{
    sr_replay_config c = SR_REPLAY_CONFIG_INIT;
    c.routing_replay = on;
    c.vpp_set = set;
    c.vpp = vpp;
    c.vpp1_rejected = quirk;
    return c;
}

START_TEST(replay_refuses_interleaved_pipelines)
{
    sr_err err = SR_ERR_INIT;
    for (int64_t vpp = 2; vpp <= 4; vpp += 2) {
        sr_replay_config c = replay(1, 1, vpp, 0);
        ck_assert_sr_code(sr_replay_check_config(&c, &err), err, SR_E_CONFIG_VPP);
        ck_assert_str_eq(err.msg, "policy.megatron_config: moe_enable_routing_replay is "
                                  "incompatible with virtual_pipeline_model_parallel_size -- "
                                  "interleaved chunks desync the replay FIFO. Unset "
                                  "virtual_pipeline_model_parallel_size.");
        ck_assert_sr_code(sr_replay_check_worker(&c, &err), err, SR_E_CONFIG_VPP);
        char want[64];
        snprintf(want, sizeof(want), "virtual_pipeline_model_parallel_size=%lld:", (long long)vpp);
        ck_assert_ptr_nonnull(strstr(err.msg, want));
        ck_assert_sr_code(sr_replay_check_both(&c, &err), err, SR_E_CONFIG_VPP);
        c.role = "ref";
        ck_assert_sr_code(sr_replay_check_config(&c, &err), err, SR_E_CONFIG_VPP);
        ck_assert_ptr_nonnull(strstr(err.msg, "ref.megatron_config"));
    }
}
END_TEST

START_TEST(replay_accepts_one_zero_unset_and_replay_off)
{
    sr_err err = SR_ERR_INIT;
    sr_replay_config ok[5] = {replay(1, 1, 1, 0), replay(1, 1, 0, 0), replay(1, 0, 0, 0),
                              replay(1, 0, 7, 0), replay(0, 1, 2, 0)};
    for (int i = 0; i < 5; i++) {
        ck_assert_sr_ok(sr_replay_check_config(&ok[i], &err), err);
        ck_assert_sr_ok(sr_replay_check_worker(&ok[i], &err), err);
        ck_assert_sr_ok(sr_replay_check_both(&ok[i], &err), err);
    }
    sr_replay_config neg = replay(1, 1, -1, 0);
    ck_assert_sr_code(sr_replay_check_config(&neg, &err), err, SR_E_INVAL);
    ck_assert_sr_code(sr_replay_check_worker(&neg, &err), err, SR_E_INVAL);
    ck_assert_sr_code(sr_replay_check_both(&neg, &err), err, SR_E_INVAL);
    ck_assert_sr_code(sr_replay_check_config(NULL, &err), err, SR_E_INVAL);
}
END_TEST

/* Bug skyrl-vpp1: the config level rejects 1 while the worker accepts it. */
START_TEST(quirk_vpp1_rejected_is_detectable)
{
    sr_err err = SR_ERR_INIT;
    sr_replay_config c = replay(1, 1, 1, 1);
    ck_assert_sr_code(sr_replay_check_config(&c, &err), err, SR_E_CONFIG_VPP);
    ck_assert_sr_ok(sr_replay_check_worker(&c, &err), err);
    ck_assert_sr_code(sr_replay_check_both(&c, &err), err, SR_E_CONFIG_INCONSISTENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "config level config.vpp_incompatible, worker level ok"));
    /* Without the quirk, both levels accept 1. */
    c.vpp1_rejected = 0;
    ck_assert_sr_ok(sr_replay_check_both(&c, &err), err);
    /* The quirk changes nothing where the reference is consistent. */
    sr_replay_config z = replay(1, 1, 0, 1), two = replay(1, 1, 2, 1), unset = replay(1, 0, 0, 1);
    ck_assert_sr_ok(sr_replay_check_both(&z, &err), err);
    ck_assert_sr_ok(sr_replay_check_both(&unset, &err), err);
    ck_assert_sr_code(sr_replay_check_both(&two, &err), err, SR_E_CONFIG_VPP);
}
END_TEST

/* Every dimension of a later sample is compared with the first: layers and topk each one less
 * and one more, at the second and at the last of three samples; equal shapes collate. */
START_TEST(every_dimension_of_every_sample_is_checked)
{
    sr_ndarray first = make_routes(SR_DTYPE_UINT8, 3, 2, 4, 1, 100);
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    for (int dim = 1; dim <= 2; dim++) {
        for (int delta = -1; delta <= 1; delta++) {
            int64_t L = 2 + (dim == 1 ? delta : 0), K = 4 + (dim == 2 ? delta : 0);
            sr_ndarray odd = make_routes(SR_DTYPE_UINT8, 3, L, K, 2, 100);
            for (int at = 1; at <= 2; at++) {
                sr_collate_sample s[3] = {sample(&first, 2, 1), sample(&first, 2, 1),
                                          sample(&first, 2, 1)};
                s[at] = sample(&odd, 2, 1);
                sr_collate_result r;
                int rc = sr_collate_routes(&r, &buf, s, 3, 1, &err);
                if (delta == 0) {
                    ck_assert_sr_ok(rc, err);
                } else {
                    ck_assert_msg(rc == SR_E_COLLATE_INPUT,
                                  "shape [3, %lld, %lld] at sample %d: rc %d", (long long)L,
                                  (long long)K, at, rc);
                    ck_assert_int_eq(err.offset, at);
                    ck_assert_ptr_nonnull(strstr(err.msg, "must share [layers, topk]"));
                }
            }
            sr_ndarray_release(&odd);
        }
    }
    sr_collate_buf_release(&buf);
    sr_ndarray_release(&first);
}
END_TEST

/* An array of `ndim` dimensions (2, 3 or 4) holding the bytes of a [3, 2, 4] uint8 one. */
static sr_ndarray routes_of_rank(int ndim)
{
    const int64_t shapes[3][4] = {{3, 8}, {3, 2, 4}, {3, 2, 4, 1}};
    sr_ndarray a;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(&a, SR_DTYPE_UINT8, ndim, shapes[ndim - 2], &err), err);
    memset(a.data, 1, a.nbytes);
    return a;
}

/* The rank is checked for every sample: 2 or 4 dimensions at the first, the second or the last
 * of three samples is refused naming that sample, 3 everywhere collates; the smallest shape
 * [1, 1, 1] (each dimension at its limit) collates too. */
START_TEST(rank_of_every_sample_is_checked)
{
    sr_ndarray three = routes_of_rank(3);
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    sr_collate_result r;
    sr_err err = SR_ERR_INIT;
    for (int ndim = 2; ndim <= 4; ndim++) {
        sr_ndarray odd = routes_of_rank(ndim);
        for (int at = 0; at < 3; at++) {
            sr_collate_sample s[3] = {sample(&three, 2, 1), sample(&three, 2, 1),
                                      sample(&three, 2, 1)};
            s[at] = sample(&odd, 2, 1);
            int rc = sr_collate_routes(&r, &buf, s, 3, 1, &err);
            if (ndim == 3) {
                ck_assert_sr_ok(rc, err);
                continue;
            }
            ck_assert_msg(rc == SR_E_COLLATE_INPUT, "rank %d at sample %d: rc %d", ndim, at, rc);
            ck_assert_int_eq(err.offset, at);
            ck_assert_ptr_nonnull(strstr(err.msg, at ? "must share [layers, topk]"
                                                     : "must contain routes for every"));
        }
        sr_ndarray_release(&odd);
    }
    sr_ndarray one = make_routes(SR_DTYPE_UINT8, 1, 1, 1, 3, 100);
    sr_collate_sample s1[2] = {sample(&one, 1, 0), sample(&one, 0, 1)};
    ck_assert_sr_ok(sr_collate_routes(&r, &buf, s1, 2, 1, &err), err);
    ck_assert_int_eq(r.t_max, 1);
    sr_ndarray_release(&one);
    sr_ndarray_release(&three);
    sr_collate_buf_release(&buf);
}
END_TEST

/* Row counts at their limits at the first, the second and the last of three samples: rows equal
 * to the tokens collate and one more is SR_E_COLLATE_ROWS; captured_rows equal to the rows held
 * collate and one more is SR_E_COLLATE_INPUT; captured_rows 1 collates and 0 is refused. */
START_TEST(row_limits_at_every_sample)
{
    sr_ndarray a = make_routes(SR_DTYPE_INT16, 4, 2, 2, 5, 100);
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    sr_collate_result r;
    sr_err err = SR_ERR_INIT;
    for (int at = 0; at < 3; at++) {
        for (int c = 0; c < 6; c++) {
            sr_collate_sample s[3] = {sample(&a, 3, 2), sample(&a, 3, 2), sample(&a, 3, 2)};
            /* c: 0 rows == tokens, 1 one row more, 2 captured == held, 3 held + 1,
             * 4 captured 1, 5 captured 0. */
            static const int64_t tokens[6] = {4, 3, 5, 5, 5, 5}, cap[6] = {-1, -1, 4, 5, 1, 0};
            s[at].prompt_len = tokens[c] - 1;
            s[at].response_len = 1;
            s[at].captured_rows = cap[c];
            int rc = sr_collate_routes(&r, &buf, s, 3, 1, &err);
            int want = c == 1 || c == 5 ? SR_E_COLLATE_ROWS : c == 3 ? SR_E_COLLATE_INPUT : 0;
            ck_assert_msg(rc == want, "case %d at sample %d: rc %d (%s)", c, at, rc, err.msg);
            if (want)
                ck_assert_int_eq(err.offset, at);
        }
    }
    sr_ndarray_release(&a);
    sr_collate_buf_release(&buf);
}
END_TEST

static Suite *collate_suite(void)
{
    Suite *s = suite_create("collate");
    TCase *c = tcase_create("collate");
    tcase_add_test(c, mixed_uint8_int16_matches_reference);
    tcase_add_test(c, canonical_dtypes_map_and_int32_flag);
    tcase_add_test(c, non_canonical_dtypes_rejected);
    tcase_add_test(c, validation_errors_name_the_sample);
    tcase_add_test(c, length_errors_name_the_sample);
    tcase_add_test(c, captured_rows_and_arguments_are_checked);
    tcase_add_test(c, buffer_maximum_and_reuse);
    tcase_add_test(c, captured_rows_mask_the_trace_padding);
    tcase_add_test(c, captured_prefix_of_a_longer_array);
    tcase_add_test(c, inputs_are_not_modified);
    tcase_add_test(c, long_padding_spans_exceed_the_pattern_block);
    tcase_add_test(c, property_random_batches);
    tcase_add_test(c, rank_of_every_sample_is_checked);
    tcase_add_test(c, row_limits_at_every_sample);
    suite_add_tcase(s, c);
    TCase *r = tcase_create("replay_config");
    tcase_add_test(r, replay_refuses_interleaved_pipelines);
    tcase_add_test(r, replay_accepts_one_zero_unset_and_replay_off);
    tcase_add_test(r, quirk_vpp1_rejected_is_detectable);
    tcase_add_test(r, every_dimension_of_every_sample_is_checked);
    suite_add_tcase(s, r);
    return s;
}

int main(void)
{
    return sr_test_run(collate_suite());
}
