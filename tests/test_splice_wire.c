/*
 * The splice on the route wires of the engine dialects (string blobs: .npy, raw int32, nrlre1;
 * nested lists), one-shot, threaded and streamed in every chunking (splice_harness.h): values,
 * shapes and dtypes as the stacks' own decoders read them, bodies written with spaces decoded from
 * the document alike, and every named error.
 */
#include "sr_nested.h"
#include "sr_npy.h"
#include "sr_nrlre.h"
#include "splice_harness.h"
#include "sr_splice_priv.h"

static sr_fields *wire_fields_max(sr_field_kind kind, sr_field_wire wire, sr_dtype_set dtypes,
                                  const char *name, size_t max_bytes)
{
    sr_fields *f;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_new(&f, &err), err);
    sr_field_def d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    snprintf(d.name, sizeof d.name, "%s", name);
    d.wire = wire;
    d.dtypes = dtypes;
    d.ndim = kind == SR_FIELD_STRING && wire == SR_WIRE_RAW ? 1 : 3;
    d.nullable = 1;
    d.token_rows = 1;
    d.max_bytes = max_bytes;
    d.min = -1;
    d.max = INT32_MAX;
    ck_assert_sr_ok(sr_fields_add(f, &d, &err), err);
    sr_field_def t;
    memset(&t, 0, sizeof t);
    t.kind = SR_FIELD_INT_ARRAY;
    snprintf(t.name, sizeof t.name, "token_ids");
    t.max = INT32_MAX;
    ck_assert_sr_ok(sr_fields_add(f, &t, &err), err);
    return f;
}

static sr_fields *wire_fields(sr_field_kind kind, sr_field_wire wire, sr_dtype_set dtypes,
                              const char *name)
{
    return wire_fields_max(kind, wire, dtypes, name, 0);
}

/* The base64 of n bytes at p, in a static ring. */
static const char *b64(const void *p, size_t n)
{
    static char ring[4][1 << 16];
    static int slot;
    char *o = ring[slot++ & 3];
    ck_assert_uint_lt(sr_base64_encoded_len(n), sizeof ring[0]);
    o[sr_base64_encode(o, p, n, SR_B64_AUTO)] = '\0';
    return o;
}

/* A .npy file of rows x 2 x 3 uint16 values v(i) = i * 37 % 600 (experts > 255). */
static size_t npy_file(unsigned char *out, size_t rows, sr_dtype dt)
{
    int64_t shape[3] = {(int64_t)rows, 2, 3};
    size_t hl = 0;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_npy_write_header(&hl, (char *)out, SR_NPY_HEADER_MAX, dt, shape, 3, &err),
                    err);
    size_t isz = sr_dtype_size(dt);
    for (size_t i = 0; i < rows * 6; i++) {
        uint64_t v = (uint64_t)(i * 37 % (isz == 1 ? 256 : 600));
        memcpy(out + hl + i * isz, &v, isz);
    }
    return hl + rows * 6 * isz;
}

static void expect_values(const sr_ndarray *a, size_t n, int64_t mod)
{
    ck_assert_uint_eq((size_t)a->shape[0] * (a->ndim > 1 ? (size_t)(a->shape[1] * a->shape[2]) : 1),
                      n);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(sr_ndarray_get_i64(a, i), (int64_t)(i * 37 % (uint64_t)mod));
}

START_TEST(npy_string_is_cut_and_read_by_its_header)
{
    use_fields(wire_fields(SR_FIELD_STRING, SR_WIRE_NPY,
                           SR_DTYPE_BIT(SR_DTYPE_UINT8) | SR_DTYPE_BIT(SR_DTYPE_UINT16),
                           "routed_experts"));
    static unsigned char file[8192];
    static char body[1 << 16];
    size_t n = npy_file(file, 40, SR_DTYPE_UINT16);
    snprintf(body, sizeof body,
             "{\"choices\":[{\"index\":0,\"token_ids\":[5,6],\"routed_experts\":\"%s\"}]}",
             b64(file, n));
    ck_assert_int_eq(check(body), 0);
    ck_assert_uint_eq(g_res->count, 2);
    const sr_splice_entry *e = entry(1);
    ck_assert_int_eq(e->kind, SR_SPLICE_STRING);
    ck_assert_int_eq(e->spliced, 1);
    ck_assert_int_eq(e->array.dtype, SR_DTYPE_UINT16);
    ck_assert_int_eq(e->array.ndim, 3);
    ck_assert_int_eq(e->array.shape[0], 40);
    ck_assert_str_eq(e->path, "choices[0].routed_experts");
    expect_values(&e->array, 240, 600);
    ck_assert_uint_eq(g_res->stats.blobs, 1);
    /* Written with a space: not cut, decoded from the document with the same result. */
    snprintf(body, sizeof body, "{\"choices\":[{\"routed_experts\": \"%s\"}]}", b64(file, n));
    ck_assert_int_eq(check(body), 0);
    e = entry(0);
    ck_assert_int_eq(e->spliced, 0);
    expect_values(&e->array, 240, 600);
    /* null is nothing captured. */
    ck_assert_int_eq(checkq("{'choices':[{'routed_experts':null}]}"), 0);
    ck_assert_int_eq(entry(0)->kind, SR_SPLICE_NULL);
}
END_TEST

/* A .npy payload with header byte `at` replaced by the text `with` (same length). */
static const char *npy_body_patched(const char *find, const char *with)
{
    static unsigned char file[8192];
    static char body[1 << 15];
    size_t n = npy_file(file, 4, SR_DTYPE_UINT16);
    char *h = memmem(file, 128, find, strlen(find));
    ck_assert_ptr_nonnull(h);
    memcpy(h, with, strlen(with));
    snprintf(body, sizeof body, "{\"routed_experts\":\"%s\"}", b64(file, n));
    return body;
}

START_TEST(npy_header_violations_are_named)
{
    use_fields(wire_fields(SR_FIELD_STRING, SR_WIRE_NPY,
                           SR_DTYPE_BIT(SR_DTYPE_UINT8) | SR_DTYPE_BIT(SR_DTYPE_UINT16),
                           "routed_experts"));
    ck_assert_int_eq(check(npy_body_patched("'<u2'", "'>u2'")), SR_E_NPY_BYTE_ORDER);
    ck_assert_int_eq(check(npy_body_patched("False", "True ")), SR_E_NPY_FORTRAN);
    ck_assert_int_eq(check(npy_body_patched("'<u2'", "'<i4'")), SR_E_NPY_DESCR);
    ck_assert_int_eq(check(npy_body_patched("NUMPY", "NUMPX")), SR_E_NPY_MAGIC);
    ck_assert_int_eq(check(npy_body_patched("(4, 2, 3)", "(5, 2, 3)")), SR_E_NPY_BYTE_COUNT);
    ck_assert_int_eq(check(npy_body_patched("(4, 2, 3)", "(4, 2, x)")), SR_E_NPY_SHAPE);
    /* Not a string; base64 errors inside the blob. */
    expect_error("{'routed_experts':17}", SR_E_WIRE_NOT_STRING, "base64 string");
    ck_assert_int_eq(checkq("{'routed_experts':'k05VTVB!'}"), SR_E_B64_CHAR);
}
END_TEST

START_TEST(raw_int32_string_is_one_flat_array)
{
    use_fields(
        wire_fields(SR_FIELD_STRING, SR_WIRE_RAW, SR_DTYPE_BIT(SR_DTYPE_INT32), "routed_experts"));
    int32_t v[300];
    for (size_t i = 0; i < 300; i++)
        v[i] = (int32_t)(i * 37 % 600);
    static char body[1 << 15];
    snprintf(body, sizeof body,
             "{\"text\":\"\",\"output_ids\":[1],\"meta_info\":{\"id\":\"x\",\"routed_experts\":"
             "\"%s\"}}",
             b64(v, sizeof v));
    ck_assert_int_eq(check(body), 0);
    const sr_splice_entry *e = entry(0);
    ck_assert_int_eq(e->array.dtype, SR_DTYPE_INT32);
    ck_assert_int_eq(e->array.ndim, 1);
    expect_values(&e->array, 300, 600);
    /* 7 bytes are not whole int32 elements. */
    snprintf(body, sizeof body, "{\"routed_experts\":\"%s\"}", b64(v, 7));
    ck_assert_int_eq(check(body), SR_E_WIRE_BYTE_COUNT);
    /* The empty string is zero rows. */
    ck_assert_int_eq(checkq("{'routed_experts':''}"), 0);
    ck_assert_int_eq(entry(0)->array.shape[0], 0);
}
END_TEST

/* A string blob's size limit counts decoded bytes, not base64 padding: 1 and 2 int32 elements
 * (4 and 8 bytes, written with two and one '=') pass a max_bytes of exactly their size, one
 * element more is envelope.too_large (before, n / 4 * 3 refused both at the limit). */
START_TEST(raw_string_limit_is_exact_despite_padding)
{
    int32_t v[3] = {5, 6, 7};
    /* Compact bodies cut the blob; spaced ones decode it from the document: both are bounded. */
    static const char *const forms[] = {"{\"routed_experts\":\"%s\"}",
                                        "{\"routed_experts\": \"%s\"}"};
    for (size_t elems = 1; elems <= 2; elems++) {
        use_fields(wire_fields_max(SR_FIELD_STRING, SR_WIRE_RAW, SR_DTYPE_BIT(SR_DTYPE_INT32),
                                   "routed_experts", elems * sizeof(int32_t)));
        for (size_t k = 0; k < 2; k++) {
            static char body[256];
            snprintf(body, sizeof body, forms[k], b64(v, elems * 4));
            ck_assert_msg(check(body) == 0, "%zu elements, form %zu refused", elems, k);
            ck_assert_int_eq(entry(0)->array.shape[0], (int64_t)elems);
            snprintf(body, sizeof body, forms[k], b64(v, elems * 4 + 4));
            ck_assert_int_eq(check(body), SR_E_ENV_TOO_LARGE);
        }
    }
}
END_TEST

START_TEST(nrlre_prefix_stays_in_the_document)
{
    sr_dtype_set ints =
        SR_DTYPE_BIT(SR_DTYPE_INT8) | SR_DTYPE_BIT(SR_DTYPE_INT16) | SR_DTYPE_BIT(SR_DTYPE_INT32);
    use_fields(wire_fields(SR_FIELD_STRING, SR_WIRE_NRLRE, ints, "routed_experts"));
    int16_t v[5 * 6];
    for (size_t i = 0; i < 30; i++)
        v[i] = (int16_t)(i * 37 % 600);
    static char body[1 << 15];
    snprintf(body, sizeof body,
             "{\"choices\":[{\"message\":{\"routed_experts\":\"nrlre1:int16:5x2x3:%s\"}}]}",
             b64(v, sizeof v));
    ck_assert_int_eq(check(body), 0);
    const sr_splice_entry *e = entry(0);
    ck_assert_int_eq(e->spliced, 1);
    ck_assert_int_eq(e->array.dtype, SR_DTYPE_INT16);
    ck_assert_int_eq(e->array.shape[0], 5);
    ck_assert_int_eq(e->array.shape[2], 3);
    expect_values(&e->array, 30, 600);
    ck_assert_str_eq(e->node->valuestring, "nrlre1:int16:5x2x3:");
    /* The prefix promises more bytes than the base64 holds. */
    snprintf(body, sizeof body, "{\"routed_experts\":\"nrlre1:int16:6x2x3:%s\"}", b64(v, sizeof v));
    ck_assert_int_eq(check(body), SR_E_WIRE_BYTE_COUNT);
    /* A bad prefix is not cut: the document's string names what is wrong. */
    ck_assert_int_eq(checkq("{'routed_experts':'nrlre2:int16:1x1x1:AAA='}"), SR_E_NRLRE_SYNTAX);
    ck_assert_int_eq(checkq("{'routed_experts':'nrlre1:uint8:1x1x1:AA=='}"), SR_E_NRLRE_DTYPE);
    ck_assert_int_eq(checkq("{'routed_experts':'nrlre1:int8:1x1:AA=='}"), SR_E_NRLRE_SHAPE);
    ck_assert_int_eq(checkq("{'routed_experts':'nrlre1:int8'}"), SR_E_NRLRE_SYNTAX);
    /* Spaced: decoded from the document, base64 after the prefix. */
    snprintf(body, sizeof body, "{\"routed_experts\": \"nrlre1:int16:5x2x3:%s\"}",
             b64(v, sizeof v));
    ck_assert_int_eq(check(body), 0);
    expect_values(&entry(0)->array, 30, 600);
}
END_TEST

START_TEST(nested_lists_are_rectangular_integers)
{
    use_fields(wire_fields(SR_FIELD_NESTED, SR_WIRE_RAW, 0, "prompt_routed_experts"));
    ck_assert_int_eq(checkq("{'prompt_routed_experts':[[[1,2],[3,-1]],[[5,6],[7,8]]]}"), 0);
    const sr_splice_entry *e = entry(0);
    ck_assert_int_eq(e->kind, SR_SPLICE_NESTED);
    ck_assert_int_eq(e->array.dtype, SR_DTYPE_INT32);
    ck_assert_int_eq(e->array.shape[0], 2);
    ck_assert_int_eq(e->array.shape[1], 2);
    ck_assert_int_eq(e->array.shape[2], 2);
    ck_assert_int_eq(sr_ndarray_get_i64(&e->array, 3), -1);
    ck_assert_int_eq(sr_ndarray_get_i64(&e->array, 7), 8);
    ck_assert_int_eq(checkq("{'prompt_routed_experts':[]}"), 0);
    ck_assert_int_eq(entry(0)->array.shape[0], 0);
    expect_error("{'prompt_routed_experts':[[[1,2],[3]]]}", SR_E_NESTED_SHAPE, "[0][1]");
    expect_error("{'prompt_routed_experts':[[[1,2]],[[3,4],[5,6]]]}", SR_E_NESTED_SHAPE, "[1]");
    expect_error("{'prompt_routed_experts':[[[1,[2]]]]}", SR_E_NESTED_SHAPE, "[0][0][1]");
    expect_error("{'prompt_routed_experts':[[[1,2.5]]]}", SR_E_NESTED_VALUE, "[0][0][1]");
    expect_error("{'prompt_routed_experts':[[[1,-2]]]}", SR_E_NESTED_VALUE, "[-1,");
    expect_error("{'prompt_routed_experts':[[[1,1e0]]]}", SR_E_NESTED_VALUE, NULL);
    expect_error("{'prompt_routed_experts':[[1,2]]}", SR_E_NESTED_SHAPE, "depth 2");
    expect_error("{'prompt_routed_experts':[[[[1]]]]}", SR_E_NESTED_SHAPE, "deeper");
}
END_TEST

START_TEST(string_field_names_are_long_enough_for_the_output_bound)
{
    sr_fields *f;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_new(&f, &err), err);
    sr_field_def d;
    memset(&d, 0, sizeof d);
    d.kind = SR_FIELD_STRING;
    snprintf(d.name, sizeof d.name, "re");
    d.wire = SR_WIRE_RAW;
    d.dtypes = SR_DTYPE_BIT(SR_DTYPE_INT32);
    d.ndim = 1;
    ck_assert_sr_code(sr_fields_add(f, &d, &err), err, SR_E_FIELD_DEF);
    snprintf(d.name, sizeof d.name, "routes");
    d.dtypes |= SR_DTYPE_BIT(SR_DTYPE_UINT8);
    ck_assert_sr_code(sr_fields_add(f, &d, &err), err, SR_E_FIELD_DEF);
    ck_assert_str_eq(strstr(err.msg, "exactly one dtype"), "exactly one dtype");
    const char *j = "{\"fields\":[{\"name\":\"routes\",\"dtypes\":[\"uint8\",\"uint16\"],"
                    "\"ndim\":3,\"wire\":\"npy\"}]}";
    ck_assert_sr_ok(sr_fields_load_json(f, j, strlen(j), "t", &err), err);
    ck_assert_int_eq(sr_fields_at(f, 0)->kind, SR_FIELD_STRING);
    ck_assert_int_eq(sr_fields_at(f, 0)->wire, SR_WIRE_NPY);
    const char *bad = "{\"fields\":[{\"name\":\"other\",\"dtypes\":[\"uint8\"],\"ndim\":3,"
                      "\"wire\":\"zip\"}]}";
    ck_assert_sr_code(sr_fields_load_json(f, bad, strlen(bad), "t", &err), err, SR_E_FIELD_DEF);
    sr_fields_free(f);
}
END_TEST

/* The nested leaf range is inclusive at both ends: a value equal to max or min is written, one
 * past either is nested.value, at the first and at the last index. */
START_TEST(nested_values_at_the_range_limits)
{
    const struct {
        const char *json;
        int64_t min, max;
        int code;
    } cases[] = {
        {"[[1,7]]", 0, 7, 0},
        {"[[7,1]]", 0, 7, 0},
        {"[[1,8]]", 0, 7, SR_E_NESTED_VALUE},
        {"[[8,1]]", 0, 7, SR_E_NESTED_VALUE},
        {"[[1,6]]", 0, 7, 0},
        {"[[3,0]]", 0, 7, 0},
        {"[[0,3]]", 0, 7, 0},
        {"[[3,-1]]", 0, 7, SR_E_NESTED_VALUE},
        {"[[-1,3]]", 0, 7, SR_E_NESTED_VALUE},
        {"[[-1,3]]", -1, 7, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cJSON *doc = cJSON_Parse(cases[k].json);
        ck_assert_ptr_nonnull(doc);
        int64_t shape[2];
        size_t count = 0;
        int32_t out[2] = {0, 0};
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_nested_shape(shape, &count, doc, 2, &err), err);
        ck_assert_int_eq(count, 2);
        int rc = sr_nested_fill(out, doc, 2, shape, cases[k].min, cases[k].max, &err);
        ck_assert_msg(rc == cases[k].code, "%s in [%lld, %lld]: rc %d (%s), want %d", cases[k].json,
                      (long long)cases[k].min, (long long)cases[k].max, rc, err.msg, cases[k].code);
        if (!rc) {
            ck_assert_int_eq(sr_nested_dtype(cases[k].min, cases[k].max), SR_DTYPE_INT32);
            cJSON *row = cJSON_GetArrayItem(doc, 0);
            ck_assert_int_eq(out[0], (int32_t)cJSON_GetArrayItem(row, 0)->valuedouble);
            ck_assert_int_eq(out[1], (int32_t)cJSON_GetArrayItem(row, 1)->valuedouble);
        }
        cJSON_Delete(doc);
    }
}
END_TEST

/* The lane OR of the threaded windows (sr_splice_i_lane_or: each decoded byte ORed into the
 * lane of its position modulo 4, which the dtype sniff reads) against a byte-by-byte OR, for
 * every length to 300 at every starting position, one bit at a time at every offset: a lane or
 * a 16-byte part of a vector block that is dropped shows as a missing bit. */
START_TEST(window_lane_or_counts_every_byte_in_its_lane)
{
    static unsigned char buf[320];
    for (size_t n = 0; n <= 300; n++) {
        for (size_t pos = 0; pos < 4; pos++) {
            for (size_t at = 0; at < n; at++) {
                memset(buf, 0, sizeof buf);
                buf[at] = (unsigned char)(1u << (at % 8));
                uint32_t acc = 0x01000000u; /* kept */
                sr_splice_i_lane_or(&acc, buf, n, pos);
                uint32_t want = 0x01000000u | (uint32_t)buf[at] << (8 * ((pos + at) & 3));
                ck_assert_msg(acc == want, "n %zu pos %zu byte %zu: lanes %08x, want %08x", n, pos,
                              at, acc, want);
            }
        }
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("splice_wire");
    TCase *t = tcase_create("wires");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, npy_string_is_cut_and_read_by_its_header);
    tcase_add_test(t, npy_header_violations_are_named);
    tcase_add_test(t, raw_int32_string_is_one_flat_array);
    tcase_add_test(t, raw_string_limit_is_exact_despite_padding);
    tcase_add_test(t, nrlre_prefix_stays_in_the_document);
    tcase_add_test(t, nested_lists_are_rectangular_integers);
    tcase_add_test(t, string_field_names_are_long_enough_for_the_output_bound);
    tcase_add_test(t, nested_values_at_the_range_limits);
    tcase_add_test(t, window_lane_or_counts_every_byte_in_its_lane);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
