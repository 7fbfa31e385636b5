/* Tests of sr_trace's token-metadata trace (§5.2): chunks, schema, dtype widening and its
 * quirk (§5.4), limits and the capacity hint. The routed-expert trace is in test_route_trace.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sr_test.h"
#include "sr_trace.h"
#include "trace_util.h"

static sr_meta_trace *meta_new(const sr_trace_opts *o)
{
    sr_meta_trace *t;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_meta_trace_new(&t, o, &err), err);
    return t;
}

/* ---- token-metadata trace (§5.7 test_token_metadata_trace_*) ---- */

START_TEST(meta_chunks_and_independent_schema)
{
    sr_meta_trace *t = meta_new(NULL);
    sr_err err = SR_ERR_INIT;
    int64_t s2[2] = {2, 3}, s1[2] = {1, 3};
    sr_ndarray a = make(SR_DTYPE_INT32, 2, s2, iota), b = make(SR_DTYPE_INT32, 2, s1, iota);
    ck_assert_sr_ok(sr_meta_trace_append(t, &a, 2, &err), err);
    ck_assert_sr_ok(sr_meta_trace_append(t, &b, 1, &err), err);
    /* The trace copies: the caller may scribble on its chunks at once. */
    memset(a.data, 0xff, a.nbytes);
    ck_assert_int_eq(sr_meta_trace_rows(t), 3);
    sr_ndarray out;
    ck_assert_sr_code(sr_meta_trace_finalize(&out, t, 4, &err), err, SR_E_TRACE_ROW_COUNT);
    ck_assert_ptr_nonnull(strstr(err.msg, "expected 4"));
    ck_assert_sr_ok(sr_meta_trace_finalize(&out, t, 3, &err), err);
    sr_ndarray again;
    ck_assert_int_eq(out.ndim, 2);
    ck_assert_int_eq(out.shape[0], 3);
    ck_assert_int_eq(out.shape[1], 3);
    ck_assert_int_eq(out.dtype, SR_DTYPE_INT32);
    ck_assert_int_eq(out.owned, 1);
    int64_t want[9] = {0, 1, 2, 3, 4, 5, 0, 1, 2};
    for (int i = 0; i < 9; i++)
        ck_assert_int_eq(sr_ndarray_get_i64(&out, (uint64_t)i), want[i]);
    ck_assert_sr_code(sr_meta_trace_finalize(&again, t, 3, &err), err, SR_E_TRACE_FINALIZED);
    ck_assert_str_eq(err.msg, "token metadata trace is already finalized");
    ck_assert_sr_code(sr_meta_trace_append(t, &b, 1, &err), err, SR_E_TRACE_FINALIZED);
    sr_ndarray_release(&out);
    sr_meta_trace_free(t);

    /* A separate trace with one 0-row float32[4] chunk. */
    t = meta_new(NULL);
    int64_t s0[2] = {0, 4};
    sr_ndarray z = make(SR_DTYPE_FLOAT32, 2, s0, NULL);
    ck_assert_sr_ok(sr_meta_trace_append(t, &z, 0, &err), err);
    ck_assert_sr_ok(sr_meta_trace_finalize(&out, t, 0, &err), err);
    ck_assert_int_eq(out.shape[0], 0);
    ck_assert_int_eq(out.shape[1], 4);
    ck_assert_int_eq(out.dtype, SR_DTYPE_FLOAT32);
    ck_assert_sr_code(sr_meta_trace_finalize(&again, t, 0, &err), err, SR_E_TRACE_FINALIZED);
    sr_ndarray_release(&out);
    sr_meta_trace_free(t);
    sr_ndarray_release(&a);
    sr_ndarray_release(&b);
    sr_ndarray_release(&z);
}
END_TEST

START_TEST(meta_rejects_invalid_chunks)
{
    sr_meta_trace *t = meta_new(NULL);
    sr_err err = SR_ERR_INIT;
    int64_t s2[2] = {2, 3}, s3[2] = {1, 4}, s0[1] = {0};
    sr_ndarray a = make(SR_DTYPE_INT32, 2, s2, iota);
    ck_assert_sr_code(sr_meta_trace_append(t, &a, 3, &err), err, SR_E_TRACE_ROW_COUNT);
    ck_assert_str_eq(err.msg, "token metadata has 2 rows, expected 3");
    ck_assert_sr_code(sr_meta_trace_append(t, &a, -1, &err), err, SR_E_TRACE_EXPECTED_ROWS);
    ck_assert_sr_code(sr_meta_trace_append(t, NULL, 0, &err), err, SR_E_INVAL);
    sr_ndarray scalar = make(SR_DTYPE_INT32, 0, s0, NULL);
    ck_assert_sr_code(sr_meta_trace_append(t, &scalar, 0, &err), err, SR_E_TRACE_NO_TOKEN_DIM);
    /* The nearest C analogue of a non-contiguous view: a descriptor whose bytes do not match. */
    sr_ndarray bad = a;
    bad.nbytes -= 4;
    ck_assert_sr_code(sr_meta_trace_append(t, &bad, 2, &err), err, SR_E_INVAL);
    bad = a;
    bad.data = (char *)a.data + 1;
    ck_assert_sr_code(sr_meta_trace_append(t, &bad, 2, &err), err, SR_E_INVAL);
    /* Nothing was held by the failed appends. */
    ck_assert_int_eq(sr_meta_trace_rows(t), 0);
    ck_assert_int_eq(sr_meta_trace_dtype(t), SR_DTYPE_INVALID);
    ck_assert_sr_ok(sr_meta_trace_append(t, &a, 2, &err), err);
    /* A trailing-shape change. */
    sr_ndarray c = make(SR_DTYPE_INT32, 2, s3, iota);
    ck_assert_sr_code(sr_meta_trace_append(t, &c, 1, &err), err, SR_E_TRACE_SCHEMA);
    ck_assert_ptr_nonnull(strstr(err.msg, "schema changed"));
    ck_assert_int_eq(sr_meta_trace_rows(t), 2);
    sr_ndarray out;
    ck_assert_sr_code(sr_meta_trace_finalize(&out, t, 5, &err), err, SR_E_TRACE_ROW_COUNT);
    /* A failed finalize leaves the trace usable. */
    ck_assert_sr_ok(sr_meta_trace_finalize(&out, t, 2, &err), err);
    sr_ndarray_release(&out);
    sr_meta_trace_free(t);

    t = meta_new(NULL);
    ck_assert_sr_code(sr_meta_trace_finalize(&out, t, 0, &err), err, SR_E_TRACE_NO_CHUNKS);
    ck_assert_str_eq(err.msg, "token metadata trace has no chunks");
    sr_meta_trace_free(t);
    sr_ndarray_release(&a);
    sr_ndarray_release(&c);
    sr_ndarray_release(&scalar);
}
END_TEST

/* int32 followed by int16: the reference at #2079 fails ("schema changed"), the fix widens. */
START_TEST(meta_dtype_change_widens_or_fails_with_quirk)
{
    int64_t s[2] = {2, 3};
    sr_ndarray a = make(SR_DTYPE_INT32, 2, s, iota), b = make(SR_DTYPE_INT16, 2, s, iota);
    sr_err err = SR_ERR_INIT;
    sr_meta_trace *t = meta_new(NULL);
    ck_assert_sr_ok(sr_meta_trace_append(t, &a, 2, &err), err);
    ck_assert_sr_ok(sr_meta_trace_append(t, &b, 2, &err), err);
    ck_assert_int_eq(sr_meta_trace_dtype(t), SR_DTYPE_INT32);
    sr_meta_trace_free(t);

    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.lock_first_dtype = 1;
    t = meta_new(&o);
    ck_assert_sr_ok(sr_meta_trace_append(t, &a, 2, &err), err);
    ck_assert_sr_code(sr_meta_trace_append(t, &b, 2, &err), err, SR_E_TRACE_SCHEMA);
    ck_assert_str_eq(err.msg, "token metadata schema changed from int32[3] to int16[3]");
    sr_meta_trace_free(t);
    sr_ndarray_release(&a);
    sr_ndarray_release(&b);
}
END_TEST

START_TEST(meta_widening_rules)
{
    struct {
        sr_dtype have, in, want; /* want INVALID: refused */
    } cases[] = {
        {SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT16},
        {SR_DTYPE_INT16, SR_DTYPE_INT32, SR_DTYPE_INT32},
        {SR_DTYPE_INT16, SR_DTYPE_UINT8, SR_DTYPE_INT16},
        {SR_DTYPE_INT32, SR_DTYPE_UINT16, SR_DTYPE_INT32},
        {SR_DTYPE_UINT8, SR_DTYPE_UINT32, SR_DTYPE_UINT32},
        {SR_DTYPE_INT64, SR_DTYPE_INT8, SR_DTYPE_INT64},
        {SR_DTYPE_FLOAT16, SR_DTYPE_FLOAT32, SR_DTYPE_FLOAT32},
        {SR_DTYPE_FLOAT64, SR_DTYPE_FLOAT32, SR_DTYPE_FLOAT64},
        {SR_DTYPE_BOOL, SR_DTYPE_BOOL, SR_DTYPE_BOOL},
        {SR_DTYPE_UINT8, SR_DTYPE_INT8, SR_DTYPE_INVALID},
        {SR_DTYPE_INT16, SR_DTYPE_UINT16, SR_DTYPE_INVALID},
        {SR_DTYPE_UINT64, SR_DTYPE_INT64, SR_DTYPE_INVALID},
        {SR_DTYPE_INT32, SR_DTYPE_FLOAT32, SR_DTYPE_INVALID},
        {SR_DTYPE_FLOAT64, SR_DTYPE_INT8, SR_DTYPE_INVALID},
        {SR_DTYPE_BOOL, SR_DTYPE_UINT8, SR_DTYPE_INVALID},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sr_dtype got = SR_DTYPE_INVALID;
        sr_err err = SR_ERR_INIT;
        int rc = sr_trace_widen_dtype(&got, cases[i].have, cases[i].in, &err);
        if (cases[i].want == SR_DTYPE_INVALID) {
            ck_assert_sr_code(rc, err, SR_E_TRACE_SCHEMA);
            ck_assert_ptr_nonnull(strstr(err.msg, "dtype changed from"));
        } else {
            ck_assert_sr_ok(rc, err);
            ck_assert_int_eq(got, cases[i].want);
        }
    }
}
END_TEST

START_TEST(meta_widening_converts_held_rows)
{
    /* uint8 -> int16 -> int32 with negative int16 values, float16 -> float32 exactly. */
    int64_t s[1] = {3};
    sr_ndarray u8 = make(SR_DTYPE_UINT8, 1, s, NULL), i16 = make(SR_DTYPE_INT16, 1, s, NULL),
               i32 = make(SR_DTYPE_INT32, 1, s, NULL);
    int64_t v8[3] = {0, 200, 255}, v16[3] = {-300, 32767, -1}, v32[3] = {70000, -70000, 5};
    for (uint64_t i = 0; i < 3; i++) {
        sr_ndarray_set_i64(&u8, i, v8[i]);
        sr_ndarray_set_i64(&i16, i, v16[i]);
        sr_ndarray_set_i64(&i32, i, v32[i]);
    }
    sr_err err = SR_ERR_INIT;
    sr_meta_trace *t = meta_new(NULL);
    ck_assert_sr_ok(sr_meta_trace_append(t, &u8, 3, &err), err);
    ck_assert_sr_ok(sr_meta_trace_append(t, &i16, 3, &err), err);
    ck_assert_sr_ok(sr_meta_trace_append(t, &u8, 3, &err), err);
    ck_assert_sr_ok(sr_meta_trace_append(t, &i32, 3, &err), err);
    sr_ndarray out;
    ck_assert_sr_ok(sr_meta_trace_finalize(&out, t, 12, &err), err);
    ck_assert_int_eq(out.dtype, SR_DTYPE_INT32);
    const int64_t *src[4] = {v8, v16, v8, v32};
    for (uint64_t i = 0; i < 12; i++)
        ck_assert_int_eq(sr_ndarray_get_i64(&out, i), src[i / 3][i % 3]);
    sr_ndarray_release(&out);
    sr_meta_trace_free(t);

    /* float16 bits: 1.0, -2.5, smallest subnormal, +inf. */
    uint16_t h[4] = {0x3c00, 0xc100, 0x0001, 0x7c00};
    float f[4] = {0.5f, 0, 0, 0};
    int64_t s4[1] = {4};
    sr_ndarray hf = make(SR_DTYPE_FLOAT16, 1, s4, NULL), ff = make(SR_DTYPE_FLOAT32, 1, s4, NULL);
    memcpy(hf.data, h, sizeof(h));
    memcpy(ff.data, f, sizeof(f));
    t = meta_new(NULL);
    ck_assert_sr_ok(sr_meta_trace_append(t, &hf, 4, &err), err);
    ck_assert_sr_ok(sr_meta_trace_append(t, &ff, 4, &err), err);
    ck_assert_sr_ok(sr_meta_trace_finalize(&out, t, 8, &err), err);
    ck_assert_int_eq(out.dtype, SR_DTYPE_FLOAT32);
    const float *g = out.data;
    ck_assert(g[0] == 1.0f && g[1] == -2.5f && g[2] == 0x1p-24f && g[3] > 3e38f && g[4] == 0.5f);
    sr_ndarray_release(&out);
    sr_meta_trace_free(t);
    sr_ndarray_release(&u8);
    sr_ndarray_release(&i16);
    sr_ndarray_release(&i32);
    sr_ndarray_release(&hf);
    sr_ndarray_release(&ff);
}
END_TEST

START_TEST(meta_limits)
{
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.max_rows = 5;
    int64_t s[2] = {3, 2};
    sr_ndarray a = make(SR_DTYPE_INT16, 2, s, iota);
    sr_err err = SR_ERR_INIT;
    sr_meta_trace *t = meta_new(&o);
    ck_assert_sr_ok(sr_meta_trace_append(t, &a, 3, &err), err);
    ck_assert_sr_code(sr_meta_trace_append(t, &a, 3, &err), err, SR_E_LIMIT);
    ck_assert_int_eq(sr_meta_trace_rows(t), 3);
    sr_meta_trace_free(t);

    o.max_rows = 0;
    o.max_bytes = 20; /* 3 rows of 4 bytes fit, 6 do not */
    t = meta_new(&o);
    ck_assert_sr_ok(sr_meta_trace_append(t, &a, 3, &err), err);
    ck_assert_sr_code(sr_meta_trace_append(t, &a, 3, &err), err, SR_E_LIMIT);
    /* Widening counts too: 3 rows of int32[2] are 24 bytes. */
    sr_meta_trace_free(t);
    t = meta_new(&o);
    int64_t s1[2] = {1, 2};
    sr_ndarray w = make(SR_DTYPE_INT32, 2, s1, iota);
    ck_assert_sr_ok(sr_meta_trace_append(t, &a, 3, &err), err);
    ck_assert_sr_code(sr_meta_trace_append(t, &w, 1, &err), err, SR_E_LIMIT);
    ck_assert_int_eq(sr_meta_trace_dtype(t), SR_DTYPE_INT16);
    sr_meta_trace_free(t);
    sr_ndarray_release(&a);
    sr_ndarray_release(&w);
}
END_TEST

/* The capacity hint changes no result: the same rows, and the limits hold (a hint past them is
 * not used). */
START_TEST(meta_reserve_hint_changes_nothing)
{
    int64_t s[2] = {3, 2};
    sr_ndarray a = make(SR_DTYPE_INT16, 2, s, iota);
    sr_err err = SR_ERR_INIT;
    sr_ndarray out[3];
    int64_t hints[3] = {0, 100, (int64_t)1 << 40};
    for (int h = 0; h < 3; h++) {
        sr_trace_opts o = SR_TRACE_OPTS_INIT;
        o.reserve_rows = hints[h];
        o.max_rows = 9;
        sr_meta_trace *t = meta_new(&o);
        for (int k = 0; k < 3; k++)
            ck_assert_sr_ok(sr_meta_trace_append(t, &a, 3, &err), err);
        ck_assert_sr_code(sr_meta_trace_append(t, &a, 3, &err), err, SR_E_LIMIT);
        ck_assert_sr_ok(sr_meta_trace_finalize(&out[h], t, 9, &err), err);
        sr_meta_trace_free(t);
    }
    for (int h = 1; h < 3; h++) {
        ck_assert_int_eq((long)out[h].nbytes, (long)out[0].nbytes);
        ck_assert_int_eq(out[h].shape[0], 9);
        ck_assert(memcmp(out[h].data, out[0].data, out[0].nbytes) == 0);
    }
    for (int h = 0; h < 3; h++)
        sr_ndarray_release(&out[h]);
    sr_ndarray_release(&a);
}
END_TEST

/* Byte and row limits at the limit, one before and one past: rows of 16 uint8 into max_bytes
 * 63, 64 and 65 (4 rows are 64 bytes), and into max_rows 3, 4 and 5. */
START_TEST(meta_limits_are_exact)
{
    int64_t s[2] = {1, 16};
    sr_ndarray a = make(SR_DTYPE_UINT8, 2, s, iota);
    sr_err err = SR_ERR_INIT;
    for (int by_rows = 0; by_rows < 2; by_rows++) {
        for (int64_t lim = 3; lim <= 5; lim++) {
            sr_trace_opts o = SR_TRACE_OPTS_INIT;
            if (by_rows)
                o.max_rows = lim + 1;
            else
                o.max_bytes = (size_t)(63 + lim - 3);
            sr_meta_trace *t = meta_new(&o);
            int64_t fit = by_rows ? lim + 1 : (int64_t)o.max_bytes / 16;
            for (int64_t r = 0; r < fit; r++)
                ck_assert_sr_ok(sr_meta_trace_append(t, &a, 1, &err), err);
            ck_assert_sr_code(sr_meta_trace_append(t, &a, 1, &err), err, SR_E_LIMIT);
            ck_assert_int_eq(sr_meta_trace_rows(t), fit);
            sr_meta_trace_free(t);
        }
    }
    /* 4 rows in one chunk into exactly 64 bytes. */
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.max_bytes = 64;
    int64_t s4[2] = {4, 16};
    sr_ndarray b = make(SR_DTYPE_UINT8, 2, s4, iota);
    sr_meta_trace *t = meta_new(&o);
    ck_assert_sr_ok(sr_meta_trace_append(t, &b, 4, &err), err);
    ck_assert_int_eq(sr_meta_trace_rows(t), 4);
    sr_meta_trace_free(t);
    o.max_bytes = 63;
    t = meta_new(&o);
    ck_assert_sr_code(sr_meta_trace_append(t, &b, 4, &err), err, SR_E_LIMIT);
    sr_meta_trace_free(t);
    sr_ndarray_release(&a);
    sr_ndarray_release(&b);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *m = tcase_create("meta");
    tcase_add_test(m, meta_chunks_and_independent_schema);
    tcase_add_test(m, meta_rejects_invalid_chunks);
    tcase_add_test(m, meta_dtype_change_widens_or_fails_with_quirk);
    tcase_add_test(m, meta_widening_rules);
    tcase_add_test(m, meta_widening_converts_held_rows);
    tcase_add_test(m, meta_limits);
    tcase_add_test(m, meta_reserve_hint_changes_nothing);
    tcase_add_test(m, meta_limits_are_exact);
    suite_add_tcase(s, m);
    return s;
}

int main(void)
{
    return sr_test_run(trace_suite());
}
