/* Tests of sr_trace's routed-expert trace (§5.3, §5.5, §5.6b): multi-turn suffixes, padding,
 * synthetic EOS, widening, its later fixes and quirks (§5.4), layer indices, and random
 * multi-turn traces against a direct computation. The token-metadata trace is in test_trace.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sr_test.h"
#include "sr_trace.h"
#include "trace_util.h"
#include "sr_mix.h"

static int64_t small_ids(uint64_t i)
{
    return (int64_t)(i * 7 % 200);
}

static sr_ndarray routes(sr_dtype dtype, int64_t rows, int64_t layers, int64_t topk)
{
    int64_t shape[3] = {rows, layers, topk};
    return make(dtype, 3, shape, small_ids);
}

static sr_route_trace *route_new(const sr_trace_opts *o)
{
    sr_route_trace *t;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_route_trace_new(&t, o, &err), err);
    return t;
}

static void record_ok(sr_route_trace *t, int64_t p, int64_t g, const sr_ndarray *r)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_route_trace_record(t, p, g, r, NULL, 0, &err), err);
}

/* ---- routed-expert trace (§5.7 test_routed_expert_trace_*) ---- */

/* Asserts that row `r` of [T, L, K] routes is the padding row 0..K-1 on every layer. */
static void assert_padding_row(const sr_ndarray *a, int64_t r)
{
    int64_t lk = a->shape[1] * a->shape[2];
    for (int64_t e = 0; e < lk; e++)
        ck_assert_int_eq(sr_ndarray_get_i64(a, (uint64_t)(r * lk + e)), e % a->shape[2]);
}

START_TEST(route_multiturn_suffix_and_terminal_gap)
{
    sr_route_trace *t = route_new(NULL);
    sr_ndarray r1 = routes(SR_DTYPE_INT64, 4, 2, 2), r2 = routes(SR_DTYPE_INT32, 4, 2, 2);
    record_ok(t, 3, 2, &r1);
    ck_assert_int_eq(sr_route_trace_prompt_start(t), 4);
    record_ok(t, 7, 2, &r2);
    ck_assert_int_eq(sr_route_trace_prompt_start(t), 8);
    uint8_t mask[9] = {0, 0, 0, 1, 1, 0, 0, 1, 1};
    sr_ndarray out, again;
    int64_t captured = -1;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 9, mask, 9, &err), err);
    ck_assert_int_eq(out.ndim, 3);
    ck_assert_int_eq(out.shape[0], 9);
    ck_assert_int_eq(out.shape[1], 2);
    ck_assert_int_eq(out.shape[2], 2);
    ck_assert_int_eq(out.dtype, SR_DTYPE_UINT8);
    ck_assert_int_eq(captured, 8);
    for (uint64_t i = 0; i < 16; i++) {
        ck_assert_int_eq(sr_ndarray_get_i64(&out, i), small_ids(i));
        ck_assert_int_eq(sr_ndarray_get_i64(&out, 16 + i), small_ids(i));
    }
    assert_padding_row(&out, 8);
    ck_assert_sr_code(sr_route_trace_finalize(&again, &captured, t, 9, mask, 9, &err), err,
                      SR_E_TRACE_FINALIZED);
    ck_assert_sr_code(sr_route_trace_record(t, 9, 1, &r1, NULL, 0, &err), err,
                      SR_E_TRACE_FINALIZED);
    sr_ndarray_release(&out);
    sr_route_trace_free(t);
    sr_ndarray_release(&r1);
    sr_ndarray_release(&r2);
}
END_TEST

START_TEST(route_only_pads_masked_suffix)
{
    for (int active = 0; active <= 1; active++) {
        sr_route_trace *t = route_new(NULL);
        sr_ndarray r = routes(SR_DTYPE_UINT8, 3, 2, 2);
        record_ok(t, 3, 1, &r);
        uint8_t mask[5] = {0, 0, 0, 0, (uint8_t)active};
        sr_ndarray out;
        int64_t captured = -1;
        sr_err err = SR_ERR_INIT;
        int rc = sr_route_trace_finalize(&out, &captured, t, 5, mask, 5, &err);
        if (active) {
            ck_assert_sr_code(rc, err, SR_E_TRACE_MISSING_ROUTE);
            ck_assert_int_eq(err.offset, 4);
            ck_assert_str_eq(err.msg,
                             "missing routed-expert row for loss-active target at token 4");
            ck_assert_int_eq(captured, -1);
            ck_assert_ptr_null(out.data);
            /* The failure left the trace usable. */
            mask[4] = 0;
            ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 5, mask, 5, &err), err);
        } else {
            ck_assert_sr_ok(rc, err);
        }
        ck_assert_int_eq(captured, 3);
        assert_padding_row(&out, 3);
        assert_padding_row(&out, 4);
        sr_ndarray_release(&out);
        sr_route_trace_free(t);
        sr_ndarray_release(&r);
    }
}
END_TEST

/* §5.5: the single-turn template's synthetic EOS (bug skyrl-synthetic-eos). */
START_TEST(route_synthetic_eos_examples)
{
    sr_ndarray r = routes(SR_DTYPE_UINT8, 7, 2, 2);
    sr_err err = SR_ERR_INIT;
    sr_ndarray out;
    int64_t captured = 0;
    /* Example A: stopped on a stop string; the EOS at position 8 is loss-active. */
    sr_route_trace *t = route_new(NULL);
    record_ok(t, 5, 3, &r);
    uint8_t mask_a[9] = {0, 0, 0, 0, 0, 1, 1, 1, 1};
    ck_assert_sr_code(sr_route_trace_finalize(&out, &captured, t, 9, mask_a, 9, &err), err,
                      SR_E_TRACE_MISSING_ROUTE);
    ck_assert_int_eq(err.offset, 8);
    ck_assert_str_eq(err.msg, "missing routed-expert row for loss-active target at token 8");
    sr_route_trace_free(t);
    /* Example B: the model emitted EOS; one padding row, nothing fabricated is counted. */
    t = route_new(NULL);
    record_ok(t, 5, 3, &r);
    uint8_t mask_b[8] = {0, 0, 0, 0, 0, 1, 1, 1};
    ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 8, mask_b, 8, &err), err);
    ck_assert_int_eq(out.shape[0], 8);
    ck_assert_int_eq(captured, 7);
    assert_padding_row(&out, 7);
    sr_ndarray_release(&out);
    sr_route_trace_free(t);
    sr_ndarray_release(&r);
}
END_TEST

/* Bug skyrl-dtype-lock: turn 1 uint8, turn 2 routes to expert 300 (int16). */
START_TEST(route_widens_when_a_later_turn_routes_to_a_high_expert)
{
    for (int quirk = 0; quirk <= 1; quirk++) {
        sr_trace_opts o = SR_TRACE_OPTS_INIT;
        o.lock_first_dtype = quirk;
        sr_route_trace *t = route_new(&o);
        sr_ndarray r1 = routes(SR_DTYPE_INT64, 4, 2, 2), r2 = routes(SR_DTYPE_INT64, 4, 2, 2);
        sr_ndarray_set_i64(&r2, 5, 300);
        record_ok(t, 3, 2, &r1);
        ck_assert_int_eq(sr_route_trace_dtype(t), SR_DTYPE_UINT8);
        sr_err err = SR_ERR_INIT;
        int rc = sr_route_trace_record(t, 7, 2, &r2, NULL, 0, &err);
        if (quirk) {
            ck_assert_sr_code(rc, err, SR_E_TRACE_SCHEMA);
            ck_assert_ptr_nonnull(
                strstr(err.msg, "schema changed from uint8[2, 2] to int16[2, 2]"));
            ck_assert_int_eq(sr_route_trace_prompt_start(t), 4);
        } else {
            ck_assert_sr_ok(rc, err);
            ck_assert_int_eq(sr_route_trace_dtype(t), SR_DTYPE_INT16);
            /* A later narrow turn keeps int16: never narrower. */
            sr_ndarray r3 = routes(SR_DTYPE_UINT8, 2, 2, 2);
            record_ok(t, 10, 1, &r3);
            uint8_t mask[11] = {0};
            sr_ndarray out;
            int64_t captured;
            ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 11, mask, 11, &err), err);
            ck_assert_int_eq(out.dtype, SR_DTYPE_INT16);
            for (uint64_t i = 0; i < 16; i++) {
                ck_assert_int_eq(sr_ndarray_get_i64(&out, i), small_ids(i));
                ck_assert_int_eq(sr_ndarray_get_i64(&out, 16 + i), i == 5 ? 300 : small_ids(i));
            }
            for (uint64_t i = 0; i < 8; i++)
                ck_assert_int_eq(sr_ndarray_get_i64(&out, 32 + i), small_ids(i));
            ck_assert_int_eq(captured, 10);
            assert_padding_row(&out, 10);
            sr_ndarray_release(&out);
            sr_ndarray_release(&r3);
        }
        sr_route_trace_free(t);
        sr_ndarray_release(&r1);
        sr_ndarray_release(&r2);
    }
}
END_TEST

/* Bug skyrl-padding-as-captured: the quirk reports the padded length as captured. */
START_TEST(route_quirk_padding_as_captured)
{
    for (int quirk = 0; quirk <= 1; quirk++) {
        sr_trace_opts o = SR_TRACE_OPTS_INIT;
        o.padding_as_captured = quirk;
        sr_route_trace *t = route_new(&o);
        sr_ndarray r = routes(SR_DTYPE_UINT8, 3, 1, 4);
        record_ok(t, 2, 2, &r);
        uint8_t mask[6] = {0, 0, 1, 1, 0, 0};
        sr_ndarray out;
        int64_t captured;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 6, mask, 6, &err), err);
        ck_assert_int_eq(captured, quirk ? 6 : 3);
        sr_ndarray_release(&out);
        sr_route_trace_free(t);
        sr_ndarray_release(&r);
    }
}
END_TEST

START_TEST(route_record_errors)
{
    sr_route_trace *t = route_new(NULL);
    sr_err err = SR_ERR_INIT;
    sr_ndarray r4 = routes(SR_DTYPE_UINT8, 4, 2, 2), k3 = routes(SR_DTYPE_UINT8, 4, 2, 3);
    record_ok(t, 3, 2, &r4);
    ck_assert_sr_code(sr_route_trace_record(t, 3, 2, &r4, NULL, 0, &err), err,
                      SR_E_TRACE_PROMPT_START);
    ck_assert_ptr_nonnull(strstr(err.msg, "routed-expert prompt start exceeds prompt length"));
    ck_assert_sr_code(sr_route_trace_record(t, 7, 0, &r4, NULL, 0, &err), err,
                      SR_E_TRACE_NO_GENERATION);
    ck_assert_str_eq(err.msg, "routed-expert generation must produce at least one token");
    ck_assert_sr_code(sr_route_trace_record(t, 7, 3, &r4, NULL, 0, &err), err,
                      SR_E_TRACE_ROW_COUNT);
    ck_assert_str_eq(err.msg, "token metadata has 4 rows, expected 5");
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, &k3, NULL, 0, &err), err, SR_E_TRACE_SCHEMA);
    int64_t s2[2] = {4, 4};
    sr_ndarray flat = make(SR_DTYPE_UINT8, 2, s2, iota);
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, &flat, NULL, 0, &err), err,
                      SR_E_ROUTES_INVALID);
    int64_t s3[3] = {4, 2, 2};
    sr_ndarray fl = make(SR_DTYPE_FLOAT32, 3, s3, NULL);
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, &fl, NULL, 0, &err), err, SR_E_ROUTES_INVALID);
    sr_ndarray neg = routes(SR_DTYPE_INT16, 4, 2, 2);
    sr_ndarray_set_i64(&neg, 3, -1);
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, &neg, NULL, 0, &err), err,
                      SR_E_ROUTES_NEGATIVE);
    sr_ndarray wide = routes(SR_DTYPE_INT64, 4, 2, 2);
    sr_ndarray_set_i64(&wide, 3, (int64_t)1 << 31);
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, &wide, NULL, 0, &err), err,
                      SR_E_ROUTES_TOO_WIDE);
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, NULL, NULL, 0, &err), err, SR_E_INVAL);
    /* None of the failures moved the trace. */
    ck_assert_int_eq(sr_route_trace_prompt_start(t), 4);
    record_ok(t, 7, 2, &r4);
    sr_route_trace_free(t);
    sr_ndarray_release(&r4);
    sr_ndarray_release(&k3);
    sr_ndarray_release(&flat);
    sr_ndarray_release(&fl);
    sr_ndarray_release(&neg);
    sr_ndarray_release(&wide);
}
END_TEST

START_TEST(route_finalize_errors)
{
    sr_err err = SR_ERR_INIT;
    sr_ndarray out;
    int64_t captured = 0;
    uint8_t mask[8] = {0};
    sr_route_trace *t = route_new(NULL);
    /* Nothing recorded. */
    ck_assert_sr_code(sr_route_trace_finalize(&out, &captured, t, 3, mask, 3, &err), err,
                      SR_E_TRACE_EMPTY);
    ck_assert_str_eq(err.msg, "cannot pad routed-expert trace before any routes are captured");
    ck_assert_sr_code(sr_route_trace_finalize(&out, &captured, t, 0, NULL, 0, &err), err,
                      SR_E_TRACE_EMPTY);
    sr_ndarray r = routes(SR_DTYPE_UINT8, 4, 2, 2);
    record_ok(t, 3, 2, &r);
    ck_assert_sr_code(sr_route_trace_finalize(&out, &captured, t, 6, mask, 5, &err), err,
                      SR_E_TRACE_LOSS_MASK);
    ck_assert_str_eq(err.msg, "loss mask has 5 entries, expected 6");
    ck_assert_sr_code(sr_route_trace_finalize(&out, &captured, t, 3, mask, 3, &err), err,
                      SR_E_TRACE_TOO_MANY_ROWS);
    ck_assert_str_eq(err.msg, "routed-expert trace has 4 rows for 3 tokens");
    /* The target at prompt_start is covered by the last captured row; one padding row. */
    mask[4] = 1;
    mask[3] = 1;
    ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 4 + 1, mask, 5, &err), err);
    ck_assert_int_eq(out.shape[0], 5);
    ck_assert_int_eq(captured, 4);
    sr_ndarray_release(&out);
    sr_route_trace_free(t);

    /* A padding beyond the row maximum. */
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.max_rows = 6;
    t = route_new(&o);
    record_ok(t, 3, 2, &r);
    memset(mask, 0, sizeof(mask));
    ck_assert_sr_code(sr_route_trace_finalize(&out, &captured, t, 8, mask, 8, &err), err,
                      SR_E_LIMIT);
    ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 6, mask, 6, &err), err);
    sr_ndarray_release(&out);
    sr_route_trace_free(t);
    sr_ndarray_release(&r);
}
END_TEST

START_TEST(route_padding_widens_for_large_topk)
{
    /* K = 300: the padding row holds 299, which uint8 cannot. */
    sr_route_trace *t = route_new(NULL);
    sr_ndarray r = routes(SR_DTYPE_UINT8, 2, 1, 300);
    record_ok(t, 2, 1, &r);
    uint8_t mask[4] = {0};
    sr_ndarray out;
    int64_t captured;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 4, mask, 4, &err), err);
    ck_assert_int_eq(out.dtype, SR_DTYPE_INT16);
    for (uint64_t i = 0; i < 600; i++)
        ck_assert_int_eq(sr_ndarray_get_i64(&out, i), small_ids(i));
    assert_padding_row(&out, 2);
    assert_padding_row(&out, 3);
    sr_ndarray_release(&out);
    sr_route_trace_free(t);
    sr_ndarray_release(&r);
}
END_TEST

/* ---- layer indices (§5.6b) ---- */

START_TEST(layer_indices_validation)
{
    sr_err err = SR_ERR_INIT;
    int64_t ok[4] = {1, 3, 5, 7}, eq[2] = {2, 2}, desc[2] = {3, 1}, neg[2] = {-1, 2},
            deep[2] = {0, (int64_t)1 << 31};
    ck_assert_sr_ok(sr_validate_layer_indices(ok, 4, &err), err);
    ck_assert_sr_code(sr_validate_layer_indices(ok, 0, &err), err, SR_E_TRACE_LAYERS);
    ck_assert_str_eq(err.msg, "routed-expert layer indices must name at least one MoE layer");
    ck_assert_sr_code(sr_validate_layer_indices(eq, 2, &err), err, SR_E_TRACE_LAYERS);
    ck_assert_str_eq(err.msg,
                     "routed-expert layer indices must be strictly increasing, got (2, 2)");
    ck_assert_sr_code(sr_validate_layer_indices(desc, 2, &err), err, SR_E_TRACE_LAYERS);
    ck_assert_sr_code(sr_validate_layer_indices(neg, 2, &err), err, SR_E_TRACE_LAYERS);
    ck_assert_str_eq(err.msg, "routed-expert layer indices must be non-negative, got (-1, 2)");
    ck_assert_sr_code(sr_validate_layer_indices(deep, 2, &err), err, SR_E_TRACE_LAYERS);
    ck_assert_str_eq(err.msg, "routed-expert layer index 2147483648 is deeper than any model");
    int64_t one[1] = {4};
    ck_assert_sr_ok(sr_validate_layer_indices(one, 1, &err), err);
}
END_TEST

START_TEST(layer_indices_pinned_at_first_record)
{
    int64_t layers[2] = {1, 3}, other[2] = {1, 5}, three[3] = {1, 3, 5}, id[2] = {0, 1};
    sr_ndarray r = routes(SR_DTYPE_UINT8, 4, 2, 2);
    sr_err err = SR_ERR_INIT;
    sr_route_trace *t = route_new(NULL);
    ck_assert_ptr_null(sr_route_trace_layers(t, NULL));
    ck_assert_sr_code(sr_route_trace_record(t, 3, 2, &r, three, 3, &err), err, SR_E_TRACE_LAYERS);
    ck_assert_str_eq(
        err.msg, "routed experts cover 2 layers but 3 layer indices were carried alongside them");
    ck_assert_sr_ok(sr_route_trace_record(t, 3, 2, &r, layers, 2, &err), err);
    size_t n = 0;
    const int64_t *pinned = sr_route_trace_layers(t, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(pinned[0], 1);
    ck_assert_int_eq(pinned[1], 3);
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, &r, other, 2, &err), err, SR_E_TRACE_LAYERS);
    ck_assert_str_eq(err.msg,
                     "routed-expert layer indices changed mid-trajectory from (1, 3) to (1, 5)");
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, &r, NULL, 0, &err), err, SR_E_TRACE_LAYERS);
    ck_assert_int_eq(sr_route_trace_prompt_start(t), 4);
    ck_assert_sr_ok(sr_route_trace_record(t, 7, 2, &r, layers, 2, &err), err);
    /* §5.6b example: 8 rows captured, finalize(10, last entry 0). */
    uint8_t mask[10] = {0, 0, 0, 1, 1, 0, 0, 1, 1, 0};
    sr_ndarray out;
    int64_t captured;
    ck_assert_sr_ok(sr_route_trace_finalize(&out, &captured, t, 10, mask, 10, &err), err);
    ck_assert_int_eq(out.shape[0], 10);
    ck_assert_int_eq(captured, 8);
    sr_ndarray_release(&out);
    sr_route_trace_free(t);

    /* No list means the identity, so an explicit identity later is the same list. */
    t = route_new(NULL);
    record_ok(t, 3, 2, &r);
    ck_assert_sr_ok(sr_route_trace_record(t, 7, 2, &r, id, 2, &err), err);
    /* finalize(6, [0,0,0,1,1,1]) after one record(P=3, G=2): missing at token 5. */
    sr_route_trace_free(t);
    t = route_new(NULL);
    ck_assert_sr_ok(sr_route_trace_record(t, 3, 2, &r, layers, 2, &err), err);
    uint8_t m6[6] = {0, 0, 0, 1, 1, 1};
    ck_assert_sr_code(sr_route_trace_finalize(&out, &captured, t, 6, m6, 6, &err), err,
                      SR_E_TRACE_MISSING_ROUTE);
    ck_assert_int_eq(err.offset, 5);
    sr_route_trace_free(t);
    sr_ndarray_release(&r);
}
END_TEST

/* ---- property: random multi-turn traces against a direct computation ---- */

static uint64_t rng_next(uint64_t *s)
{
    return sr_mix64(*s += SR_MIX_GOLDEN);
}

static int64_t rng_range(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

static sr_dtype canonical(int64_t max)
{
    return max < 256 ? SR_DTYPE_UINT8 : max < 32768 ? SR_DTYPE_INT16 : SR_DTYPE_INT32;
}

static sr_dtype wider(sr_dtype a, sr_dtype b)
{
    return sr_dtype_size(a) >= sr_dtype_size(b) ? a : b;
}

/* With `in_room`, most turns' rows are first written into the trace's room
 * (sr_route_trace_room), at the append position or past it, and recorded from there. */
static sr_ndarray in_room_view(uint64_t *seed, sr_route_trace *t, const sr_ndarray *r)
{
    unsigned char *at = NULL;
    size_t room = 0, off = rng_range(seed, 0, 1) ? 0 : 8 * (size_t)rng_range(seed, 1, 4);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_route_trace_room(t, &at, &room, &err), err);
    if (!at || rng_range(seed, 0, 3) == 0 || room < off + r->nbytes ||
        (uintptr_t)(at + off) % sr_dtype_size(r->dtype))
        return *r;
    sr_ndarray v = *r;
    v.data = memcpy(at + off, r->data, r->nbytes);
    v.owned = 0;
    return v;
}

/* One random trajectory: the trace is driven turn by turn while the expected result is computed
 * directly from the recorded rows, the mask and §5.1's rule. With `reuse` the trajectory runs on
 * that trace after a reset, else on a new trace; `in_room` as for in_room_view. */
static void one_random_trajectory(uint64_t *seed, sr_route_trace *reuse, int in_room)
{
    const sr_dtype in_types[3] = {SR_DTYPE_INT64, SR_DTYPE_INT32, SR_DTYPE_UINT16};
    const int64_t caps[3] = {200, 5000, 100000};
    int64_t L = rng_range(seed, 1, 3), K = rng_range(seed, 1, 4), turns = rng_range(seed, 1, 5);
    int64_t lk = L * K, tokens = rng_range(seed, 1, 6), ps = 0;
    int64_t *ref = malloc(sizeof(int64_t) * (size_t)(64 * lk));
    sr_dtype want_dtype = SR_DTYPE_UINT8;
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.reserve_rows = in_room ? rng_range(seed, 0, 40) : 0;
    sr_route_trace *t = reuse ? reuse : route_new(&o);
    if (reuse)
        sr_route_trace_reset(reuse, &o);
    /* A row-size guess (sr_route_trace_hint_row_bytes), right (4 x L x K: int32) or wrong, for
     * a trace that knows none: the results are the same. */
    if (in_room && rng_range(seed, 0, 1))
        sr_route_trace_hint_row_bytes(t, (size_t)(lk * rng_range(seed, 1, 8)));
    sr_err err = SR_ERR_INIT;
    for (int64_t turn = 0; turn < turns; turn++) {
        int64_t p = tokens, g = rng_range(seed, 1, 5), rows = p - ps + g - 1;
        int64_t cap = caps[rng_range(seed, 0, 2)], hi = 0;
        int64_t shape[3] = {rows, L, K};
        sr_dtype dt = in_types[rng_range(seed, 0, 2)];
        if (in_room && rng_range(seed, 0, 1)) { /* often the dtype the trace keeps: in place */
            dt = SR_DTYPE_INT32;
            cap = caps[2];
        }
        sr_ndarray r = make(dt, 3, shape, NULL);
        for (int64_t e = 0; e < rows * lk; e++) {
            int64_t v = rng_range(seed, 0, cap - 1);
            if (r.dtype == SR_DTYPE_UINT16)
                v &= 0xffff;
            hi = v > hi ? v : hi;
            sr_ndarray_set_i64(&r, (uint64_t)e, v);
            ref[ps * lk + e] = v;
        }
        sr_ndarray v = in_room ? in_room_view(seed, t, &r) : r;
        ck_assert_sr_ok(sr_route_trace_record(t, p, g, &v, NULL, 0, &err), err);
        want_dtype = wider(want_dtype, canonical(hi));
        ps += rows;
        ck_assert_int_eq(sr_route_trace_prompt_start(t), ps);
        tokens = p + g + rng_range(seed, 0, 4); /* observation tokens of the next turn */
        sr_ndarray_release(&r);
    }
    /* The final token count: the held rows +1 (last sampled token), maybe a synthetic EOS, or
     * sometimes one short (too many rows). */
    int64_t T = ps + rng_range(seed, 0, 2) - (rng_range(seed, 0, 9) == 0 ? 2 : 0);
    T = T < 0 ? 0 : T;
    uint8_t *mask = calloc((size_t)T + 1, 1);
    for (int64_t j = 0; j < T; j++)
        mask[j] = rng_range(seed, 0, 2) == 0;
    int64_t missing = -1;
    for (int64_t j = ps + 1; j < T && missing < 0; j++)
        missing = mask[j] ? j : -1;
    sr_ndarray out;
    int64_t captured = -1;
    int rc = sr_route_trace_finalize(&out, &captured, t, T, mask, T, &err);
    if (ps > T) {
        ck_assert_sr_code(rc, err, SR_E_TRACE_TOO_MANY_ROWS);
    } else if (missing >= 0) {
        ck_assert_sr_code(rc, err, SR_E_TRACE_MISSING_ROUTE);
        ck_assert_int_eq(err.offset, missing);
    } else {
        ck_assert_sr_ok(rc, err);
        ck_assert_int_eq(captured, ps);
        ck_assert_int_eq(out.shape[0], T);
        if (T > ps)
            want_dtype = wider(want_dtype, canonical(K - 1));
        ck_assert_int_eq(out.dtype, want_dtype);
        for (int64_t e = 0; e < T * lk; e++) {
            int64_t want = e < ps * lk ? ref[e] : e % K;
            ck_assert_int_eq(sr_ndarray_get_i64(&out, (uint64_t)e), want);
        }
        sr_ndarray_release(&out);
    }
    free(mask);
    free(ref);
    if (!reuse)
        sr_route_trace_free(t);
}

START_TEST(property_random_multiturn_traces)
{
    uint64_t seed = 0x5eed2079u;
    for (int i = 0; i < 400; i++)
        one_random_trajectory(&seed, NULL, 0);
}
END_TEST

/* The same trajectories on ONE trace reset between them: each result is that of a new trace,
 * whatever dtype, shape, layers or failure the previous trajectory left behind. */
START_TEST(property_random_multiturn_traces_on_one_reused_trace)
{
    uint64_t seed = 0x5eed2079u;
    sr_route_trace *t = route_new(NULL);
    for (int i = 0; i < 400; i++)
        one_random_trajectory(&seed, t, 0);
    sr_route_trace_free(t);
}
END_TEST

/* Rows written into the trace's room (where sr_client's routes_dest decodes them) give the same
 * trajectories: taken in place at the append position in the trace's dtype, copied out first
 * anywhere else or when the record widens, moves or converts the storage under them. */
START_TEST(property_random_traces_recorded_from_the_trace_room)
{
    uint64_t seed = 0x5eed2080u;
    sr_route_trace *t = route_new(NULL);
    for (int i = 0; i < 600; i++)
        one_random_trajectory(&seed, i % 2 ? t : NULL, 1);
    sr_route_trace_free(t);
}
END_TEST

/* A reset keeps the storage an unfinalized trace holds (none after a finalize moved it out),
 * forgets the pinned layers and the finalized state and applies new options; arrays finalized
 * earlier stay intact. */
START_TEST(reset_keeps_storage_and_forgets_the_trajectory)
{
    int64_t layers[2] = {1, 3}, other[2] = {1, 5};
    sr_ndarray big = routes(SR_DTYPE_INT16, 40, 2, 2), small = routes(SR_DTYPE_UINT8, 4, 2, 2);
    sr_ndarray_set_i64(&big, 5, 300); /* canonical int16 */
    sr_err err = SR_ERR_INIT;
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.reserve_rows = 64;
    sr_route_trace *t = route_new(&o);
    ck_assert_uint_eq(sr_route_trace_capacity(t), 0);
    ck_assert_sr_ok(sr_route_trace_record(t, 3, 38, &big, layers, 2, &err), err);
    size_t cap = sr_route_trace_capacity(t);
    ck_assert_uint_ge(cap, 64 * 2 * 2 * 2);
    /* Reset before a finalize: the storage stays for the next trajectory. */
    sr_route_trace_reset(t, &o);
    ck_assert_int_eq(sr_route_trace_prompt_start(t), 0);
    ck_assert_uint_eq(sr_route_trace_capacity(t), cap);
    ck_assert_sr_ok(sr_route_trace_record(t, 3, 38, &big, layers, 2, &err), err);
    ck_assert_uint_eq(sr_route_trace_capacity(t), cap);
    uint8_t mask[41] = {0};
    sr_ndarray first, second;
    int64_t captured = -1;
    ck_assert_sr_ok(sr_route_trace_finalize(&first, &captured, t, 41, mask, 41, &err), err);
    ck_assert_int_eq(captured, 40);
    ck_assert_uint_eq(sr_route_trace_capacity(t), 0); /* moved into `first` */
    ck_assert_sr_code(sr_route_trace_record(t, 41, 1, &small, NULL, 0, &err), err,
                      SR_E_TRACE_FINALIZED);
    /* The next trajectory: other layers and dtype, captured_only. */
    o.captured_only = 1;
    sr_route_trace_reset(t, &o);
    ck_assert_int_eq(sr_route_trace_prompt_start(t), 0);
    ck_assert_int_eq(sr_route_trace_dtype(t), SR_DTYPE_INVALID);
    ck_assert_ptr_null(sr_route_trace_layers(t, NULL));
    ck_assert_sr_ok(sr_route_trace_record(t, 3, 2, &small, other, 2, &err), err);
    size_t n = 0;
    ck_assert_int_eq(sr_route_trace_layers(t, &n)[1], 5);
    ck_assert_sr_code(sr_route_trace_record(t, 7, 2, &small, layers, 2, &err), err,
                      SR_E_TRACE_LAYERS);
    ck_assert_sr_ok(sr_route_trace_finalize(&second, &captured, t, 5, mask, 5, &err), err);
    ck_assert_int_eq(captured, 4);
    ck_assert_int_eq(second.shape[0], 4); /* captured_only: nothing padded */
    ck_assert_int_eq(second.dtype, SR_DTYPE_UINT8);
    ck_assert_mem_eq(second.data, small.data, small.nbytes);
    /* The first array still holds the first trajectory (rows, then padding). */
    ck_assert_int_eq(first.dtype, SR_DTYPE_INT16);
    ck_assert_mem_eq(first.data, big.data, big.nbytes);
    assert_padding_row(&first, 40);
    sr_ndarray_release(&first);
    sr_ndarray_release(&second);
    sr_ndarray_release(&big);
    sr_ndarray_release(&small);
    sr_route_trace_free(t);
}
END_TEST

static Suite *route_trace_suite(void)
{
    Suite *s = suite_create("route_trace");
    TCase *r = tcase_create("routes");
    tcase_add_test(r, route_multiturn_suffix_and_terminal_gap);
    tcase_add_test(r, route_only_pads_masked_suffix);
    tcase_add_test(r, route_synthetic_eos_examples);
    tcase_add_test(r, route_widens_when_a_later_turn_routes_to_a_high_expert);
    tcase_add_test(r, route_quirk_padding_as_captured);
    tcase_add_test(r, route_record_errors);
    tcase_add_test(r, route_finalize_errors);
    tcase_add_test(r, route_padding_widens_for_large_topk);
    tcase_add_test(r, layer_indices_validation);
    tcase_add_test(r, layer_indices_pinned_at_first_record);
    tcase_add_test(r, property_random_multiturn_traces);
    tcase_add_test(r, property_random_multiturn_traces_on_one_reused_trace);
    tcase_add_test(r, property_random_traces_recorded_from_the_trace_room);
    tcase_add_test(r, reset_keeps_storage_and_forgets_the_trajectory);
    suite_add_tcase(s, r);
    return s;
}

int main(void)
{
    return sr_test_run(route_trace_suite());
}
