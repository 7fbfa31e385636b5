/*
 * The OR of the route values, from the splice to the trace (sr_ndarray.h sr_value_bound): the
 * splice's entry bound against a byte-by-byte OR of the decoded array for every dtype and every
 * length to 300, one-shot, threaded, streamed in random chunks and decoded at a destination that
 * holds or overflows; the client's result over real HTTP against the mock engine; and the route
 * trace's record, whose results and errors with the exact OR as its bound are those without it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "client_fixture.h"
#include "splice_harness.h"
#include "sr_mix.h"
#include "sr_trace.h"

/* The exact OR of a's elements, byte by byte: element i's bytes read little-endian. */
static sr_value_bound or_of(const sr_ndarray *a)
{
    sr_value_bound b = {1, 0};
    size_t w = sr_dtype_size(a->dtype);
    const unsigned char *p = a->data;
    for (size_t i = 0; w && i < a->nbytes; i++)
        b.value_or |= (uint64_t)p[i] << (8 * (i % w));
    return b;
}

static uint64_t rng_next(uint64_t *s)
{
    return sr_mix64(*s += SR_MIX_GOLDEN);
}

static int64_t rng_range(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* ---- the trace: bounded and unbounded records agree ---- */

static const sr_dtype INT_TYPES[8] = {SR_DTYPE_INT8,   SR_DTYPE_UINT8, SR_DTYPE_INT16,
                                      SR_DTYPE_UINT16, SR_DTYPE_INT32, SR_DTYPE_UINT32,
                                      SR_DTYPE_INT64,  SR_DTYPE_UINT64};

/* Values at the canonical rule's edges and the dtypes' (sr_ndarray_set_i64 truncates them to the
 * array's width: 256 is 0 in an int8, 32768 is -32768 in an int16). */
static const int64_t EDGES[] = {
    0,     1,     127,   128,       255,          256,          32767,
    32768, 65535, 65536, INT32_MAX, 0x80000000LL, 0xffffffffLL, 0x10000000000LL,
    -1,    -2,    -128,  -129,      -32768,       INT32_MIN};
#define N_EDGES (sizeof EDGES / sizeof EDGES[0])

/* Random [rows, L, K] routes: values below a random cap, sometimes an edge value or a negative
 * one, and (for a trace that accepts them) sometimes a masked row of -1. */
static sr_ndarray random_routes(uint64_t *s, int64_t rows, int64_t L, int64_t K, int masked)
{
    static const int64_t caps[8] = {
        4, 256, 257, 32768, 32769, (int64_t)1 << 31, ((int64_t)1 << 31) + 1, (int64_t)1 << 33};
    sr_dtype dt = INT_TYPES[rng_range(s, 0, 7)];
    int64_t shape[3] = {rows, L, K}, cap = caps[rng_range(s, 0, 7)];
    sr_ndarray a;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(&a, dt, 3, shape, &err), err);
    uint64_t n = sr_ndarray_numel(&a);
    for (uint64_t i = 0; i < n; i++)
        sr_ndarray_set_i64(&a, i, rng_range(s, 0, cap - 1));
    if (n && rng_range(s, 0, 3) == 0)
        sr_ndarray_set_i64(&a, (uint64_t)rng_range(s, 0, (int64_t)n - 1),
                           EDGES[rng_range(s, 0, N_EDGES - 1)]);
    if (n && rng_range(s, 0, 7) == 0)
        sr_ndarray_set_i64(&a, (uint64_t)rng_range(s, 0, (int64_t)n - 1), -rng_range(s, 1, 3));
    if (n && masked && rng_range(s, 0, 2) == 0) {
        uint64_t row = (uint64_t)rng_range(s, 0, rows - 1), lk = (uint64_t)(L * K);
        for (uint64_t i = 0; i < lk; i++)
            sr_ndarray_set_i64(&a, row * lk + i, -1);
    }
    return a;
}

typedef struct outcome_counts {
    int ok[SR_DTYPE_COUNT]; /* records that passed, by the trace's dtype after them */
    int negative, too_wide, rows, masked_ok, finalized;
} outcome_counts;

/* Both traces' records of the same routes end alike: code, message, offset, dtype, rows. */
static int record_both(sr_route_trace *bounded, sr_route_trace *plain, int64_t p, int64_t g,
                       const sr_ndarray *r, outcome_counts *c)
{
    sr_value_bound bound = or_of(r);
    sr_err e1 = SR_ERR_INIT, e2 = SR_ERR_INIT;
    int rc1 = sr_route_trace_record_bounded(bounded, p, g, r, NULL, 0, &bound, &e1);
    int rc2 = sr_route_trace_record(plain, p, g, r, NULL, 0, &e2);
    ck_assert_msg(
        rc1 == rc2 && e1.code == e2.code && e1.offset == e2.offset && strcmp(e1.msg, e2.msg) == 0,
        "%s with OR %llx: bounded %s '%s', plain %s '%s'", sr_dtype_name(r->dtype),
        (unsigned long long)bound.value_or, sr_code_name(rc1), e1.msg, sr_code_name(rc2), e2.msg);
    ck_assert_int_eq(sr_route_trace_dtype(bounded), sr_route_trace_dtype(plain));
    ck_assert_int_eq(sr_route_trace_prompt_start(bounded), sr_route_trace_prompt_start(plain));
    c->negative += rc1 == SR_E_ROUTES_NEGATIVE;
    c->too_wide += rc1 == SR_E_ROUTES_TOO_WIDE;
    c->rows += rc1 == SR_E_TRACE_ROW_COUNT;
    if (!rc1) {
        c->ok[sr_route_trace_dtype(plain)]++;
        int64_t lo, hi;
        ck_assert_sr_ok(sr_ndarray_minmax(r, &lo, &hi, &e1), e1);
        c->masked_ok += lo == -1;
    }
    return rc1;
}

/* One random trajectory on two traces, one recorded with the exact OR as bound, one without. */
static void one_trajectory(uint64_t *s, outcome_counts *c)
{
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.masked_rows = (int)rng_range(s, 0, 1);
    sr_route_trace *t1, *t2;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_route_trace_new(&t1, &o, &err), err);
    ck_assert_sr_ok(sr_route_trace_new(&t2, &o, &err), err);
    int64_t L = rng_range(s, 1, 3), K = rng_range(s, 1, 3), ps = 0, p = rng_range(s, 0, 4);
    int64_t turns = rng_range(s, 1, 3);
    for (int64_t turn = 0; turn < turns; turn++) {
        int64_t g = rng_range(s, 1, 3), rows = p - ps + g - 1;
        rows += rng_range(s, 0, 11) == 0; /* sometimes one row too many: trace.row_count */
        sr_ndarray r = random_routes(s, rows, L, K, o.masked_rows);
        int rc = record_both(t1, t2, p, g, &r, c);
        sr_ndarray_release(&r);
        if (rc)
            break;
        ps = sr_route_trace_prompt_start(t2);
        p = ps + 1 + rng_range(s, 0, 3);
    }
    /* The rows held are the same bytes. */
    int64_t T = sr_route_trace_prompt_start(t2) + 1;
    uint8_t *mask = calloc((size_t)T, 1);
    sr_ndarray out1, out2;
    int64_t cap1 = -1, cap2 = -1;
    sr_err e1 = SR_ERR_INIT, e2 = SR_ERR_INIT;
    int rc1 = sr_route_trace_finalize(&out1, &cap1, t1, T, mask, T, &e1);
    int rc2 = sr_route_trace_finalize(&out2, &cap2, t2, T, mask, T, &e2);
    ck_assert_int_eq(rc1, rc2);
    ck_assert_str_eq(e1.msg, e2.msg);
    if (!rc1) {
        ck_assert_int_eq(cap1, cap2);
        ck_assert_msg(sr_ndarray_equal(&out1, &out2), "finalized routes differ");
        c->finalized++;
        sr_ndarray_release(&out1);
        sr_ndarray_release(&out2);
    }
    free(mask);
    sr_route_trace_free(t1);
    sr_route_trace_free(t2);
}

START_TEST(record_with_the_exact_or_is_the_record_without_it)
{
    uint64_t seed = 0x0b0d38u;
    outcome_counts c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 4000; i++)
        one_trajectory(&seed, &c);
    /* Every outcome the bound could change was met, many times each. */
    ck_assert_int_gt(c.ok[SR_DTYPE_UINT8], 100);
    ck_assert_int_gt(c.ok[SR_DTYPE_INT16], 100);
    ck_assert_int_gt(c.ok[SR_DTYPE_INT32], 100);
    ck_assert_int_gt(c.negative, 100);
    ck_assert_int_gt(c.too_wide, 100);
    ck_assert_int_gt(c.rows, 100);
    ck_assert_int_gt(c.masked_ok, 50);
    ck_assert_int_gt(c.finalized, 1000);
}
END_TEST

/* ---- the splice: the entry's bound is the OR of the decoded values ---- */

/* Builtins plus "vals": a non-canonical 1-D packed field of every integer dtype and float32. */
static sr_fields *bound_fields(void)
{
    sr_fields *f = builtin_fields();
    sr_field_def d;
    memset(&d, 0, sizeof d);
    d.kind = SR_FIELD_PACKED;
    snprintf(d.name, sizeof d.name, "vals");
    for (int i = 0; i < 8; i++)
        d.dtypes |= SR_DTYPE_BIT(INT_TYPES[i]);
    d.dtypes |= SR_DTYPE_BIT(SR_DTYPE_FLOAT32);
    d.ndim = 1;
    d.nullable = 1;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_add(f, &d, &err), err);
    return f;
}

/* Random bytes for n items of w bytes: all bits, small values, or values with one high bit. */
static void fill(uint64_t *s, unsigned char *p, size_t n, size_t w)
{
    int mode = (int)rng_range(s, 0, 2);
    for (size_t i = 0; i < n * w; i++) {
        unsigned char b = (unsigned char)rng_next(s);
        p[i] = mode == 0 ? b : i % w == 0 ? b & 0x3f : 0;
    }
    if (mode == 2 && n)
        p[(size_t)rng_range(s, 0, (int64_t)n - 1) * w + w - 1] |= (unsigned char)(1u << (n % 8));
}

/* Canonical routes of n rows [n, 1, 1]: uint8 any value, int16 and int32 with their largest
 * value past the narrower dtype's range. */
static sr_dtype canonical_routes(uint64_t *s, unsigned char *p, size_t n)
{
    static const sr_dtype route_types[3] = {SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT32};
    sr_dtype dt = n ? route_types[rng_range(s, 0, 2)] : SR_DTYPE_UINT8;
    size_t w = sr_dtype_size(dt);
    int64_t lo = dt == SR_DTYPE_INT16 ? 256 : 32768, hi = dt == SR_DTYPE_INT16 ? 32767 : INT32_MAX;
    for (size_t i = 0; i < n; i++) {
        int64_t v = dt == SR_DTYPE_UINT8 ? rng_range(s, 0, 255) : rng_range(s, 0, hi);
        if (dt != SR_DTYPE_UINT8 && i == n / 2)
            v = rng_range(s, lo, hi);
        memcpy(p + i * w, &v, w); /* little-endian host (sr_ndarray.h) */
    }
    return dt;
}

/* A body with "vals" of dtype dt and canonical routed_experts; returns its length. */
static size_t bound_body(char *out, size_t cap, const unsigned char *vals, size_t n, sr_dtype dt,
                         const unsigned char *routes, size_t rn, sr_dtype rdt)
{
    char *v64 = malloc(sr_base64_encoded_len(n * 8) + 1);
    char *r64 = malloc(sr_base64_encoded_len(rn * 4) + 1);
    v64[sr_base64_encode(v64, vals, n * sr_dtype_size(dt), SR_B64_AUTO)] = '\0';
    r64[sr_base64_encode(r64, routes, rn * sr_dtype_size(rdt), SR_B64_AUTO)] = '\0';
    int len = snprintf(out, cap,
                       "{\"choices\":[{\"vals\":{\"data\":\"%s\",\"shape\":[%zu],\"dtype\":\"%s\"},"
                       "\"routed_experts\":{\"data\":\"%s\",\"shape\":[%zu,1,1],\"dtype\":\"%s\"},"
                       "\"token_ids\":[1,2]}]}",
                       v64, n, sr_dtype_name(dt), r64, rn, sr_dtype_name(rdt));
    ck_assert(len > 0 && (size_t)len < cap);
    free(v64);
    free(r64);
    return (size_t)len;
}

/* Entry e's bound is known exactly for 1, 2 and 4-byte integers, and then the values' OR. */
static void expect_bound(const sr_splice_entry *e, const char *way)
{
    sr_dtype dt = e->array.dtype;
    size_t w = sr_dtype_size(dt);
    int known = sr_dtype_is_integer(dt) && w <= 4;
    ck_assert_int_eq(e->kind, SR_SPLICE_ENVELOPE);
    ck_assert_msg(e->bound.known == known, "%s: %s[%lld] bound known %d", way, sr_dtype_name(dt),
                  (long long)e->array.shape[0], e->bound.known);
    uint64_t want = known ? or_of(&e->array).value_or : 0;
    ck_assert_msg(e->bound.value_or == want, "%s: %s[%lld] OR %llx, bytes give %llx", way,
                  sr_dtype_name(dt), (long long)e->array.shape[0],
                  (unsigned long long)e->bound.value_or, (unsigned long long)want);
}

/* Streams `body` in random chunks into the stream splicer, with a destination of `dest_cap`
 * bytes for "vals" when dest_cap > 0, and checks both entries' bounds. Returns 1 if "vals" was
 * decoded at the destination, 2 if it outgrew it and moved, else 0. */
static int stream_and_expect(uint64_t *s, const char *body, size_t len, size_t dest_cap)
{
    static _Alignas(64) unsigned char dest[4096];
    if (dest_cap)
        sr_splice_set_dest(g_stream, "vals", dest, dest_cap);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_splice_stream_begin(g_stream, rng_range(s, 0, 1) ? (int64_t)len : -1, &err),
                    err);
    for (size_t at = 0; at < len;) {
        size_t n = (size_t)rng_range(s, 0, 97);
        n = n > len - at ? len - at : n;
        ck_assert_sr_ok(sr_splice_stream_feed(g_stream, body + at, n, &err), err);
        at += n;
    }
    const sr_splice_result *r;
    ck_assert_sr_ok(sr_splice_stream_finish(g_stream, &r, &err), err);
    ck_assert_uint_ge(r->count, 2);
    expect_bound(&r->entries[0], dest_cap ? "stream to a destination" : "stream");
    expect_bound(&r->entries[1], "stream");
    sr_splice_set_dest(g_stream, NULL, NULL, 0);
    if (!dest_cap)
        return 0;
    return r->entries[0].array.data == (void *)dest ? 1 : r->entries[0].array.nbytes ? 2 : 0;
}

START_TEST(splice_bound_is_the_or_of_the_decoded_values)
{
    static const sr_dtype types[9] = {SR_DTYPE_INT8,   SR_DTYPE_UINT8,  SR_DTYPE_INT16,
                                      SR_DTYPE_UINT16, SR_DTYPE_INT32,  SR_DTYPE_UINT32,
                                      SR_DTYPE_INT64,  SR_DTYPE_UINT64, SR_DTYPE_FLOAT32};
    use_fields(bound_fields());
    uint64_t seed = 0xb0b38u;
    size_t cap = 16384;
    char *body = malloc(cap);
    unsigned char vals[300 * 8], routes[300 * 4];
    int ways[3] = {0, 0, 0};
    for (int t = 0; t < 9; t++) {
        for (size_t n = 0; n <= 300; n++) {
            size_t w = sr_dtype_size(types[t]);
            fill(&seed, vals, n, w);
            size_t rn = (size_t)rng_range(&seed, 0, 300);
            sr_dtype rdt = canonical_routes(&seed, routes, rn);
            size_t len = bound_body(body, cap, vals, n, types[t], routes, rn, rdt);
            /* One-shot (check_len: threaded and streamed ways give the same entries, bounds
             * included), then the bounds themselves. */
            ck_assert_sr_ok(check_len(body, len, (int64_t)len), g_err);
            ck_assert_uint_eq(entry(0)->array.nbytes, n * w);
            ck_assert_msg(memcmp(entry(0)->array.data, vals, n * w) == 0, "values differ");
            expect_bound(entry(0), "one-shot");
            expect_bound(entry(1), "one-shot");
            const sr_splice_result *r2;
            sr_err err = SR_ERR_INIT;
            ck_assert_sr_ok(sr_splice(g_two, body, len, -1, &r2, &err), err);
            expect_bound(&r2->entries[0], "threaded");
            expect_bound(&r2->entries[1], "threaded");
            /* Streamed in random chunks, plainly and into a destination that holds the values
             * or overflows (their bytes then move to the output region mid-blob). */
            stream_and_expect(&seed, body, len, 0);
            ways[stream_and_expect(&seed, body, len, 8 * (size_t)rng_range(&seed, 1, 512))]++;
        }
    }
    /* Both destination paths were taken often. */
    ck_assert_int_gt(ways[1], 200);
    ck_assert_int_gt(ways[2], 200);
    free(body);
}
END_TEST

/* ---- the client: a generate's routes carry their OR ---- */

#define BOUND_CFG(experts)                                                                         \
    "{\"seed\":38,\"model\":{\"vocab\":64,\"layers\":3,\"experts\":" experts                       \
    ",\"topk\":4,\"eos_id\":-1}}"

static const int32_t BPROMPT[] = {5, 6, 7, 8, 9, 10, 11, 12, 13};

static int bound_gen(fx *f, int64_t start, void *dest, size_t dest_cap, sr_client_result *r,
                     sr_err *e)
{
    cJSON *sp = cJSON_Parse("{\"max_tokens\":12}");
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = BPROMPT;
    q.n_tokens = sizeof BPROMPT / sizeof BPROMPT[0];
    q.sampling_params = sp;
    q.session_id = "bound";
    q.return_routes = 1;
    q.prompt_start = start;
    q.routes_dest = dest;
    q.routes_dest_cap = dest_cap;
    int rc = sr_client_generate(r, f->conn, &q, e);
    cJSON_Delete(sp);
    return rc;
}

START_TEST(client_result_carries_the_routes_or)
{
    /* 16 experts: uint8 routes; 3000: int16; 100000: int32 (the engine's canonical dtypes). */
    static const char *const cfgs[3] = {BOUND_CFG("16"), BOUND_CFG("3000"), BOUND_CFG("100000")};
    static const sr_dtype dts[3] = {SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT32};
    static _Alignas(64) unsigned char dest[1 << 14];
    for (int c = 0; c < 3; c++) {
        fx f;
        fx_start(&f, 1, cfgs[c], NULL);
        for (int way = 0; way < 3; way++) {
            /* Into the splice's region, into a destination, and into one too small for them. */
            size_t cap = way == 0 ? 0 : way == 1 ? sizeof dest : 16;
            sr_client_result r;
            sr_err e = SR_ERR_INIT;
            ck_assert_sr_ok(bound_gen(&f, way, cap ? dest : NULL, cap, &r, &e), e);
            ck_assert(r.has_routes);
            ck_assert_int_eq(r.routes.dtype, dts[c]);
            ck_assert_int_gt(r.routes.shape[0], 8);
            ck_assert(r.routes.data == (void *)dest || way != 1);
            ck_assert_msg(r.routes_bound.known, "cfg %d way %d: bound unknown", c, way);
            ck_assert_uint_eq(r.routes_bound.value_or, or_of(&r.routes).value_or);
            ck_assert_uint_ne(r.routes_bound.value_or, 0);
        }
        fx_stop(&f);
    }
}
END_TEST

START_TEST(client_result_of_merged_prefill_rows_has_no_bound)
{
    /* pd_merge replaces the decode reply's prompt rows by the prefill's: the splice's OR was of
     * the rows replaced, so the result claims none. */
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.pd_prefill = 0;
    o.pd_decode = 1;
    o.pd_merge = 1;
    fx f;
    fx_start(&f, 2, BOUND_CFG("300"), &o);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(bound_gen(&f, 0, NULL, 0, &r, &e), e);
    ck_assert(r.has_routes);
    ck_assert_int_eq(r.routes_bound.known, 0);
    ck_assert_uint_eq(r.routes_bound.value_or, 0);
    fx_stop(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("route_bound");
    TCase *t = tcase_create("trace");
    tcase_add_test(t, record_with_the_exact_or_is_the_record_without_it);
    suite_add_tcase(s, t);
    TCase *sp = tcase_create("splice");
    tcase_add_checked_fixture(sp, setup, teardown);
    tcase_add_test(sp, splice_bound_is_the_or_of_the_decoded_values);
    suite_add_tcase(s, sp);
    TCase *c = tcase_create("client");
    tcase_add_test(c, client_result_carries_the_routes_or);
    tcase_add_test(c, client_result_of_merged_prefill_rows_has_no_bound);
    suite_add_tcase(s, c);
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(s);
    curl_global_cleanup();
    return rc;
}
