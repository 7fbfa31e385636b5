/* The packed-array envelope: every worked vector and error case of skyrl.md §1.5, §2.1-§2.4
 * and the envelope rows of Appendix A, each asserting the named error. */
#include <string.h>

#include "sr_envelope.h"
#include "sr_test.h"

/* An owned array of the given dtype and shape filled from int64 values. */
static sr_ndarray make(sr_dtype dt, int ndim, const int64_t *shape, const int64_t *vals)
{
    sr_ndarray a;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(&a, dt, ndim, shape, &e), e);
    uint64_t n = sr_ndarray_numel(&a);
    for (uint64_t i = 0; i < n && vals; i++)
        sr_ndarray_set_i64(&a, i, vals[i]);
    return a;
}

static sr_ndarray arange(sr_dtype dt, int ndim, const int64_t *shape)
{
    sr_ndarray a = make(dt, ndim, shape, NULL);
    for (uint64_t i = 0; i < sr_ndarray_numel(&a); i++)
        sr_ndarray_set_i64(&a, i, (int64_t)i);
    return a;
}

/* Packs routes and returns the envelope text (caller frees). */
static char *pack_routes(const sr_ndarray *a)
{
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;
    ck_assert_sr_ok(sr_routes_pack(&b, a, NULL, SR_B64_AUTO, &e), e);
    return b.data;
}

/* Unpacks envelope text with a contract; the shape text is classified from the raw JSON. */
static int unpack_text(sr_ndarray *out, const char *json, const sr_contract *c, sr_err *e)
{
    cJSON *doc = cJSON_Parse(json);
    ck_assert_msg(doc != NULL, "test JSON does not parse: %s", json);
    const char *sh = strstr(json, "\"shape\":");
    int st = sh ? sr_envelope_shape_text(sh + 8, strlen(sh + 8)) : SR_SHAPE_TEXT_UNKNOWN;
    int rc = sr_envelope_unpack(out, doc, st, c, NULL, e);
    cJSON_Delete(doc);
    return rc;
}

START_TEST(worked_vectors_are_byte_identical)
{
    int64_t s322[3] = {3, 2, 2};
    sr_ndarray a = arange(SR_DTYPE_INT64, 3, s322);
    char *txt = pack_routes(&a);
    ck_assert_str_eq(txt, "{\"data\":\"AAECAwQFBgcICQoL\",\"shape\":[3,2,2],\"dtype\":\"uint8\"}");
    free(txt);
    sr_ndarray_release(&a);

    int64_t s113[3] = {1, 1, 3}, v123[3] = {1, 2, 3};
    a = make(SR_DTYPE_INT32, 3, s113, v123);
    txt = pack_routes(&a);
    ck_assert_str_eq(txt, "{\"data\":\"AQID\",\"shape\":[1,1,3],\"dtype\":\"uint8\"}");
    free(txt);
    sr_ndarray_release(&a);

    int64_t s112[3] = {1, 1, 2}, v256[2] = {0, 256}, v32768[2] = {0, 32768};
    a = make(SR_DTYPE_INT64, 3, s112, v256);
    txt = pack_routes(&a);
    ck_assert_str_eq(txt, "{\"data\":\"AAAAAQ==\",\"shape\":[1,1,2],\"dtype\":\"int16\"}");
    free(txt);
    sr_ndarray_release(&a);

    a = make(SR_DTYPE_INT64, 3, s112, v32768);
    txt = pack_routes(&a);
    ck_assert_str_eq(txt, "{\"data\":\"AAAAAACAAAA=\",\"shape\":[1,1,2],\"dtype\":\"int32\"}");
    free(txt);
    sr_ndarray_release(&a);
}
END_TEST

START_TEST(decode_worked_vector)
{
    sr_err e = SR_ERR_INIT;
    sr_contract rc = sr_contract_routes();
    sr_ndarray out;
    ck_assert_sr_ok(
        unpack_text(&out, "{\"data\":\"AQ==\",\"shape\":[1,1,1],\"dtype\":\"uint8\"}", &rc, &e), e);
    ck_assert_int_eq(out.dtype, SR_DTYPE_UINT8);
    ck_assert_int_eq(out.ndim, 3);
    ck_assert_int_eq(((unsigned char *)out.data)[0], 1);
    ck_assert_int_eq(out.owned, 1);
    sr_ndarray_release(&out);
}
END_TEST

/* The envelope's keys are read in one pass over its members as cJSON's lookup reads them: with a
 * key repeated (cJSON's parser keeps both), the first member of each name is the one read, and
 * other members, under names that share a first byte with them or not, are not. */
START_TEST(repeated_keys_read_the_first)
{
    sr_err e = SR_ERR_INIT;
    sr_contract rc = sr_contract_routes();
    sr_ndarray out;
    ck_assert_sr_ok(unpack_text(&out,
                                "{\"d\":1,\"dtypes\":\"int64\",\"datas\":\"!\",\"s\":[2],"
                                "\"dtype\":\"uint8\",\"shape\":[1,1,2],\"data\":\"AQI=\","
                                "\"data\":\"!!!!\",\"shape\":[9],\"dtype\":\"float64\"}",
                                &rc, &e),
                    e);
    ck_assert_int_eq(out.dtype, SR_DTYPE_UINT8);
    ck_assert_int_eq(out.ndim, 3);
    ck_assert_int_eq(out.shape[2], 2);
    ck_assert_int_eq(((unsigned char *)out.data)[1], 2);
    sr_ndarray_release(&out);
    ck_assert(sr_envelope_is_reserved_key("data") && sr_envelope_is_reserved_key("dtype") &&
              sr_envelope_is_reserved_key("shape"));
    ck_assert(!sr_envelope_is_reserved_key("d") && !sr_envelope_is_reserved_key("datas") &&
              !sr_envelope_is_reserved_key("dtypes") && !sr_envelope_is_reserved_key("s") &&
              !sr_envelope_is_reserved_key("start") && !sr_envelope_is_reserved_key("") &&
              !sr_envelope_is_reserved_key(NULL));
}
END_TEST

/* The compaction table of test_packed_routed_experts_round_trip. */
START_TEST(canonical_dtype_table)
{
    struct {
        int64_t max;
        sr_dtype in, want;
    } rows[] = {
        {11, SR_DTYPE_INT64, SR_DTYPE_UINT8},    {255, SR_DTYPE_INT64, SR_DTYPE_UINT8},
        {256, SR_DTYPE_INT64, SR_DTYPE_INT16},   {32767, SR_DTYPE_INT64, SR_DTYPE_INT16},
        {32768, SR_DTYPE_INT64, SR_DTYPE_INT32}, {2147483647, SR_DTYPE_INT64, SR_DTYPE_INT32},
        {255, SR_DTYPE_UINT16, SR_DTYPE_UINT8},  {40000, SR_DTYPE_UINT32, SR_DTYPE_INT32},
    };
    sr_err e = SR_ERR_INIT;
    sr_contract c = sr_contract_routes();
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int64_t shape[3] = {2, 1, 2}, vals[4] = {0, 1, 2, rows[i].max};
        sr_ndarray a = make(rows[i].in, 3, shape, vals), packed;
        sr_buf b = SR_BUF_INIT;
        ck_assert_sr_ok(sr_routes_pack(&b, &a, NULL, SR_B64_AUTO, &e), e);
        ck_assert_sr_ok(unpack_text(&packed, b.data, &c, &e), e);
        ck_assert_int_eq(packed.dtype, rows[i].want);
        for (uint64_t k = 0; k < 4; k++)
            ck_assert_int_eq(sr_ndarray_get_i64(&packed, k), vals[k]);
        sr_ndarray_release(&packed);
        sr_ndarray_release(&a);
        sr_buf_release(&b);
    }
    /* Empty routes compact to uint8 and pack with empty data. */
    int64_t s022[3] = {0, 2, 2};
    sr_ndarray empty = make(SR_DTYPE_INT32, 3, s022, NULL);
    char *txt = pack_routes(&empty);
    ck_assert_str_eq(txt, "{\"data\":\"\",\"shape\":[0,2,2],\"dtype\":\"uint8\"}");
    sr_ndarray out;
    ck_assert_sr_ok(unpack_text(&out, txt, &c, &e), e);
    ck_assert_uint_eq(out.nbytes, 0);
    ck_assert_int_eq(out.shape[0], 0);
    sr_ndarray_release(&out);
    free(txt);
    sr_ndarray_release(&empty);
}
END_TEST

START_TEST(compaction_rejects_invalid_routes)
{
    sr_err e = SR_ERR_INIT;
    sr_ndarray out;
    int64_t s1[1] = {3}, v1[3] = {1, 2, 3};
    sr_ndarray a = make(SR_DTYPE_INT64, 1, s1, v1);
    ck_assert_sr_code(sr_routes_compact(&out, &a, &e), e, SR_E_ROUTES_INVALID);
    ck_assert_msg(strstr(e.msg, "[tokens, layers, topk]") != NULL, "%s", e.msg);
    sr_ndarray_release(&a);

    int64_t s3[3] = {1, 1, 2}, vneg[2] = {0, -1}, vwide[2] = {0, (int64_t)1 << 31};
    a = make(SR_DTYPE_INT64, 3, s3, vneg);
    ck_assert_sr_code(sr_routes_compact(&out, &a, &e), e, SR_E_ROUTES_NEGATIVE);
    ck_assert_str_eq(e.msg, "routed expert indices must be non-negative");
    sr_ndarray_release(&a);

    a = make(SR_DTYPE_UINT64, 3, s3, vwide);
    ck_assert_sr_code(sr_routes_compact(&out, &a, &e), e, SR_E_ROUTES_TOO_WIDE);
    ck_assert_str_eq(e.msg, "routed expert index exceeds signed int32: 2147483648");
    sr_ndarray_release(&a);

    a = make(SR_DTYPE_FLOAT32, 3, s3, NULL);
    ck_assert_sr_code(sr_routes_compact(&out, &a, &e), e, SR_E_ROUTES_INVALID);
    sr_ndarray_release(&a);
    a = make(SR_DTYPE_BOOL, 3, s3, NULL);
    ck_assert_sr_code(sr_routes_compact(&out, &a, &e), e, SR_E_ROUTES_INVALID);
    sr_ndarray_release(&a);
}
END_TEST

START_TEST(pack_checks_dtype_then_sidecar)
{
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;
    int64_t s[2] = {2, 3};
    sr_ndarray f64 = make(SR_DTYPE_FLOAT64, 2, s, NULL);
    ck_assert_sr_code(
        sr_envelope_pack(&b, &f64, SR_DTYPE_BIT(SR_DTYPE_FLOAT32), NULL, SR_B64_AUTO, &e), e,
        SR_E_ENV_DTYPE);
    ck_assert_str_eq(e.msg, "packed array dtype 'float64' is not one of ['float32']");
    ck_assert_uint_eq(b.len, 0);

    cJSON *extra = cJSON_CreateObject();
    cJSON_AddNumberToObject(extra, "prompt_start", 4);
    cJSON_AddStringToObject(extra, "dtype", "x");
    cJSON_AddStringToObject(extra, "data", "y");
    sr_ndarray f32 = make(SR_DTYPE_FLOAT32, 2, s, NULL);
    ck_assert_sr_code(
        sr_envelope_pack(&b, &f32, SR_DTYPE_BIT(SR_DTYPE_FLOAT32), extra, SR_B64_AUTO, &e), e,
        SR_E_ENV_SIDECAR);
    ck_assert_str_eq(e.msg, "sidecar fields collide with envelope keys: ['data', 'dtype']");
    ck_assert_uint_eq(b.len, 0);
    cJSON_Delete(extra);
    sr_ndarray_release(&f64);
    sr_ndarray_release(&f32);
    sr_buf_release(&b);
}
END_TEST

START_TEST(envelope_leads_with_data_and_keeps_sidecars)
{
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;
    int64_t s[2] = {2, 3};
    sr_ndarray a = make(SR_DTYPE_FLOAT32, 2, s, NULL);
    float *f = a.data;
    for (int i = 0; i < 6; i++)
        f[i] = (float)i * 0.5f - 1.0f;
    cJSON *extra = cJSON_Parse("{\"prompt_start\":4,\"labels\":[\"a\",\"b\"]}");
    ck_assert_sr_ok(
        sr_envelope_pack(&b, &a, SR_DTYPE_BIT(SR_DTYPE_FLOAT32), extra, SR_B64_AUTO, &e), e);
    ck_assert_msg(strncmp(b.data, "{\"data\":\"", 9) == 0, "%s", b.data);
    const char *tail = ",\"shape\":[2,3],\"dtype\":\"float32\",\"prompt_start\":4,"
                       "\"labels\":[\"a\",\"b\"]}";
    ck_assert_str_eq(b.data + b.len - strlen(tail), tail);

    sr_contract c = SR_CONTRACT_INIT;
    c.allowed = SR_DTYPE_BIT(SR_DTYPE_FLOAT32);
    c.ndim = 2;
    sr_ndarray out;
    cJSON *doc = cJSON_Parse(b.data);
    ck_assert_sr_ok(sr_envelope_unpack(&out, doc, SR_SHAPE_TEXT_INTEGERS, &c, NULL, &e), e);
    ck_assert(sr_ndarray_equal(&out, &a));
    int sidecars = 0;
    for (cJSON *it = doc->child; it; it = it->next)
        sidecars += !sr_envelope_is_reserved_key(it->string);
    ck_assert_int_eq(sidecars, 2);
    ck_assert_int_eq(cJSON_GetObjectItem(doc, "prompt_start")->valueint, 4);
    cJSON_Delete(doc);
    cJSON_Delete(extra);
    sr_ndarray_release(&out);
    sr_ndarray_release(&a);
    sr_buf_release(&b);
}
END_TEST

START_TEST(round_trips_int16_and_empty)
{
    sr_err e = SR_ERR_INIT;
    int64_t s322[3] = {3, 2, 2}, s03[2] = {0, 3};
    sr_ndarray a = arange(SR_DTYPE_INT16, 3, s322);
    sr_ndarray z = make(SR_DTYPE_FLOAT32, 2, s03, NULL);
    sr_contract c = SR_CONTRACT_INIT;
    sr_ndarray *arrs[2] = {&a, &z};
    for (int i = 0; i < 2; i++) {
        sr_buf b = SR_BUF_INIT;
        ck_assert_sr_ok(sr_envelope_pack(&b, arrs[i], 0, NULL, SR_B64_SCALAR, &e), e);
        sr_ndarray out;
        ck_assert_sr_ok(unpack_text(&out, b.data, &c, &e), e);
        ck_assert(sr_ndarray_equal(&out, arrs[i]));
        sr_ndarray_release(&out);
        sr_buf_release(&b);
    }
    sr_ndarray_release(&a);
    sr_ndarray_release(&z);
}
END_TEST

/* Error rows of §2.2 and Appendix A, in the reference's order. */
START_TEST(unpack_errors_are_named)
{
    sr_err e = SR_ERR_INIT;
    sr_contract rt = sr_contract_routes();
    sr_ndarray out;
    cJSON *arr = cJSON_Parse("[1,2]");
    ck_assert_sr_code(sr_envelope_unpack(&out, arr, 0, &rt, NULL, &e), e, SR_E_ENV_NOT_OBJECT);
    cJSON_Delete(arr);

    struct {
        const char *json;
        int code;
        const char *msg; /* exact message, or NULL */
    } rows[] = {
        {"{\"shape\":[1,1,1],\"dtype\":\"uint8\"}", SR_E_ENV_INVALID,
         "invalid packed array envelope: 'data'"},
        {"{\"data\":\"AQ==\",\"dtype\":\"uint8\"}", SR_E_ENV_INVALID,
         "invalid packed array envelope: 'shape'"},
        {"{\"data\":\"AQ==\",\"shape\":[1,1,1]}", SR_E_ENV_INVALID,
         "invalid packed array envelope: 'dtype'"},
        {"{\"data\":null,\"shape\":[1,1,1],\"dtype\":\"uint8\"}", SR_E_ENV_INVALID, NULL},
        {"{\"data\":\"AAAAA\",\"shape\":[1,1,1],\"dtype\":\"uint8\"}", SR_E_B64_LENGTH, NULL},
        {"{\"data\":\"!AAA\",\"shape\":[1,1,1],\"dtype\":\"uint8\"}", SR_E_B64_CHAR, NULL},
        {"{\"data\":\"AQ==\",\"shape\":[1,1,1],\"dtype\":\"uint16\"}", SR_E_ENV_DTYPE,
         "packed array dtype 'uint16' is not one of ['int16', 'int32', 'uint8']"},
        {"{\"data\":\"AQ==\",\"shape\":[1,1,1],\"dtype\":7}", SR_E_ENV_DTYPE,
         "packed array dtype 7 is not one of ['int16', 'int32', 'uint8']"},
        {"{\"data\":\"AQ==\",\"shape\":[true,1,1],\"dtype\":\"uint8\"}", SR_E_ENV_SHAPE,
         "packed array shape (True, 1, 1) is not 3 non-negative dimensions"},
        {"{\"data\":\"AQ==\",\"shape\":[1.0,1,1],\"dtype\":\"uint8\"}", SR_E_ENV_SHAPE, NULL},
        {"{\"data\":\"AQ==\",\"shape\":[1.5,1,1],\"dtype\":\"uint8\"}", SR_E_ENV_SHAPE, NULL},
        {"{\"data\":\"AQ==\",\"shape\":[-1,1,1],\"dtype\":\"uint8\"}", SR_E_ENV_SHAPE,
         "packed array shape (-1, 1, 1) is not 3 non-negative dimensions"},
        {"{\"data\":\"AQ==\",\"shape\":[1,1],\"dtype\":\"uint8\"}", SR_E_ENV_SHAPE,
         "packed array shape (1, 1) is not 3 non-negative dimensions"},
        {"{\"data\":\"AQ==\",\"shape\":[2,1,1],\"dtype\":\"uint8\"}", SR_E_ENV_BYTE_COUNT,
         "packed array data has 1 bytes, expected 2 for uint8[2, 1, 1]"},
        {"{\"data\":\"LAEAAA==\",\"shape\":[1,1,1],\"dtype\":\"int32\"}", SR_E_ENV_NON_CANONICAL,
         "packed routed_experts uses non-canonical dtype int32; expected int16"},
        {"{\"data\":\"\",\"shape\":[0,2,2],\"dtype\":\"int16\"}", SR_E_ENV_NON_CANONICAL,
         "packed routed_experts uses non-canonical dtype int16; expected uint8"},
        {"{\"data\":\"//8=\",\"shape\":[1,1,1],\"dtype\":\"int16\"}", SR_E_ROUTES_NEGATIVE, NULL},
        /* Order: a missing key is reported before a bad dtype, bad base64 before a bad shape. */
        {"{\"data\":\"AQ==\",\"dtype\":\"float64\"}", SR_E_ENV_INVALID, NULL},
        {"{\"data\":\"A-==\",\"shape\":[9],\"dtype\":\"float64\"}", SR_E_B64_CHAR, NULL},
        {"{\"data\":\"AQ==\",\"shape\":[9],\"dtype\":\"float64\"}", SR_E_ENV_DTYPE, NULL},
        {"{\"data\":\"AQ==\",\"shape\":[9],\"dtype\":\"uint8\"}", SR_E_ENV_SHAPE, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        sr_err_clear(&e);
        int rc = unpack_text(&out, rows[i].json, &rt, &e);
        ck_assert_msg(rc == rows[i].code && e.code == rows[i].code, "%s: expected %s, got %s: %s",
                      rows[i].json, sr_code_name(rows[i].code), sr_code_name(rc), e.msg);
        if (rows[i].msg)
            ck_assert_str_eq(e.msg, rows[i].msg);
        if (rows[i].code == SR_E_B64_CHAR || rows[i].code == SR_E_B64_LENGTH)
            ck_assert_msg(strncmp(e.msg, "invalid packed array envelope: ", 31) == 0, "%s", e.msg);
        ck_assert_ptr_null(out.data);
    }
}
END_TEST

START_TEST(byte_count_message_matches_reference)
{
    sr_err e = SR_ERR_INIT;
    sr_contract c = SR_CONTRACT_INIT;
    c.allowed = SR_DTYPE_BIT(SR_DTYPE_FLOAT32);
    c.ndim = 2;
    sr_ndarray out;
    /* 24 bytes of data for a float32[2, 4] (32 bytes). */
    ck_assert_sr_code(unpack_text(&out,
                                  "{\"data\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"shape\":[2,4],"
                                  "\"dtype\":\"float32\"}",
                                  &c, &e),
                      e, SR_E_ENV_BYTE_COUNT);
    ck_assert_str_eq(e.msg, "packed array data has 24 bytes, expected 32 for float32[2, 4]");
    /* Wrong ndim for a 2-D contract. */
    ck_assert_sr_code(
        unpack_text(&out, "{\"data\":\"\",\"shape\":[0],\"dtype\":\"float32\"}", &c, &e), e,
        SR_E_ENV_SHAPE);
    ck_assert_str_eq(e.msg, "packed array shape (0,) is not 2 non-negative dimensions");
}
END_TEST

START_TEST(limits_before_allocation)
{
    sr_err e = SR_ERR_INIT;
    sr_contract c = sr_contract_routes();
    sr_ndarray out;
    /* prod(shape) overflows 64 bits: named before anything is allocated. */
    ck_assert_sr_code(unpack_text(&out,
                                  "{\"data\":\"\",\"shape\":[4294967296,4294967296,4294967296],"
                                  "\"dtype\":\"uint8\"}",
                                  &c, &e),
                      e, SR_E_ENV_OVERFLOW);
    /* A zero dim does not excuse the others (numpy: "array is too big"). */
    ck_assert_sr_code(unpack_text(&out,
                                  "{\"data\":\"\",\"shape\":[0,4294967296,4294967296],"
                                  "\"dtype\":\"uint8\"}",
                                  &c, &e),
                      e, SR_E_ENV_OVERFLOW);
    ck_assert_sr_code(unpack_text(&out,
                                  "{\"data\":\"\",\"shape\":[0,2147483648,2147483648],"
                                  "\"dtype\":\"int16\"}",
                                  &c, &e),
                      e, SR_E_ENV_OVERFLOW);
    /* A declared shape bigger than the configured maximum. */
    c.max_bytes = 16;
    ck_assert_sr_code(
        unpack_text(&out, "{\"data\":\"\",\"shape\":[100,1,1],\"dtype\":\"uint8\"}", &c, &e), e,
        SR_E_ENV_TOO_LARGE);
    /* A data string whose decoded size would exceed the maximum is refused before decoding. */
    ck_assert_sr_code(unpack_text(&out,
                                  "{\"data\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"shape\":[21,1,1],"
                                  "\"dtype\":\"uint8\"}",
                                  &c, &e),
                      e, SR_E_ENV_TOO_LARGE);
}
END_TEST

/* The size bound counts decoded bytes, not base64 padding: an array of exactly max_bytes bytes
 * is taken whatever its size modulo 3, one byte more is refused (before, a 4-byte array with
 * max_bytes 4 was envelope.too_large: 8 characters counted as 6 bytes). */
START_TEST(limit_is_exact_for_every_padding)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    sr_err e = SR_ERR_INIT;
    sr_contract c = sr_contract_routes();
    for (size_t max = 1; max <= 13; max++) {
        c.max_bytes = max;
        for (size_t n = max - 1; n <= max + 1; n++) {
            if (n == 0)
                continue;
            /* n zero bytes in standard base64, padded. */
            char data[64] = {0};
            size_t len = (n + 2) / 3 * 4;
            for (size_t i = 0; i < len; i++)
                data[i] = b64[0];
            if (n % 3 == 1)
                data[len - 1] = data[len - 2] = '=';
            else if (n % 3 == 2)
                data[len - 1] = '=';
            char json[200];
            snprintf(json, sizeof(json),
                     "{\"data\":\"%s\",\"shape\":[%zu,1,1],\"dtype\":\"uint8\"}", data, n);
            sr_ndarray out;
            int rc = unpack_text(&out, json, &c, &e);
            if (n <= max) {
                ck_assert_msg(rc == 0, "max_bytes %zu, %zu bytes: %s", max, n, e.msg);
                ck_assert_uint_eq(out.nbytes, n);
                sr_ndarray_release(&out);
            } else {
                ck_assert_msg(rc == SR_E_ENV_TOO_LARGE, "max_bytes %zu, %zu bytes: rc %d", max, n,
                              rc);
            }
        }
    }
}
END_TEST

START_TEST(unpack_decoded_validates_spliced_blobs)
{
    sr_err e = SR_ERR_INIT;
    sr_contract c = sr_contract_routes();
    cJSON *doc = cJSON_Parse("{\"data\":\"\",\"shape\":[3,2,2],\"dtype\":\"uint8\"}");
    unsigned char bytes[12];
    for (int i = 0; i < 12; i++)
        bytes[i] = (unsigned char)i;
    sr_ndarray out;
    ck_assert_sr_ok(
        sr_envelope_unpack_decoded(&out, doc, SR_SHAPE_TEXT_INTEGERS, bytes, 12, &c, &e), e);
    ck_assert_ptr_eq(out.data, bytes);
    ck_assert_int_eq(out.owned, 0);
    ck_assert_int_eq(out.shape[2], 2);
    ck_assert_sr_code(
        sr_envelope_unpack_decoded(&out, doc, SR_SHAPE_TEXT_INTEGERS, bytes, 11, &c, &e), e,
        SR_E_ENV_BYTE_COUNT);
    ck_assert_sr_code(
        sr_envelope_unpack_decoded(&out, doc, SR_SHAPE_TEXT_NON_INTEGER, bytes, 12, &c, &e), e,
        SR_E_ENV_SHAPE);
    cJSON_Delete(doc);
}
END_TEST

START_TEST(shape_text_classifier)
{
    ck_assert_int_eq(sr_envelope_shape_text("[1,2,3],", 8), SR_SHAPE_TEXT_INTEGERS);
    ck_assert_int_eq(sr_envelope_shape_text("[1.0,2]", 7), SR_SHAPE_TEXT_NON_INTEGER);
    ck_assert_int_eq(sr_envelope_shape_text("[1e3]", 5), SR_SHAPE_TEXT_NON_INTEGER);
    ck_assert_int_eq(sr_envelope_shape_text("[1,2", 4), SR_SHAPE_TEXT_UNKNOWN);
    ck_assert_int_eq(sr_envelope_shape_text("{}", 2), SR_SHAPE_TEXT_UNKNOWN);
    ck_assert_int_eq(sr_envelope_shape_text("[\"1\"]", 5), SR_SHAPE_TEXT_UNKNOWN);
}
END_TEST

START_TEST(arena_decoding_is_a_view)
{
    sr_err e = SR_ERR_INIT;
    sr_arena *ar;
    ck_assert_sr_ok(sr_arena_new(&ar, 0, &e), e);
    sr_contract c = sr_contract_routes();
    cJSON *doc =
        cJSON_Parse("{\"data\":\"AAECAwQFBgcICQoL\",\"shape\":[3,2,2],\"dtype\":\"uint8\"}");
    sr_ndarray out;
    ck_assert_sr_ok(sr_envelope_unpack(&out, doc, SR_SHAPE_TEXT_INTEGERS, &c, ar, &e), e);
    ck_assert_int_eq(out.owned, 0);
    ck_assert_uint_eq((uintptr_t)out.data % 64, 0);
    ck_assert_int_eq(((unsigned char *)out.data)[11], 11);
    sr_ndarray_release(&out); /* a no-op on views */
    cJSON_Delete(doc);
    sr_arena_free(ar);
}
END_TEST

/* Review regression: a full arena with err == NULL returned the arena's code through a NULL
 * pointer (crash) instead of returning it. */
START_TEST(arena_limit_with_null_err_is_named)
{
    sr_err e = SR_ERR_INIT;
    sr_arena *ar;
    ck_assert_sr_ok(sr_arena_new(&ar, 128, &e), e);
    sr_contract c = sr_contract_routes();
    char text[400];
    char data[169];
    memset(data, 'A', 168);
    data[168] = '\0';
    snprintf(text, sizeof(text), "{\"data\":\"%s\",\"shape\":[126,1,1],\"dtype\":\"uint8\"}", data);
    cJSON *doc = cJSON_Parse(text);
    sr_ndarray out;
    ck_assert_sr_code(sr_envelope_unpack(&out, doc, SR_SHAPE_TEXT_INTEGERS, &c, ar, &e), e,
                      SR_E_LIMIT);
    ck_assert_int_eq(sr_envelope_unpack(&out, doc, SR_SHAPE_TEXT_INTEGERS, &c, ar, NULL),
                     SR_E_LIMIT);
    ck_assert_ptr_null(out.data);
    cJSON_Delete(doc);
    sr_arena_free(ar);
}
END_TEST

/* The min/max scan runs in fixed blocks (64 elements, or 64 bytes with SSE2 and 128 bytes with
 * AVX2 for uint8 and int16): the extreme is found at every position of several whole blocks and
 * of the scalar tail, for every integer width. */
START_TEST(minmax_finds_extremes_at_every_block_position)
{
    const sr_dtype dts[4] = {SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT32, SR_DTYPE_INT64};
    int64_t shape[1] = {300};
    sr_err e = SR_ERR_INIT;
    for (int d = 0; d < 4; d++) {
        int64_t lo = dts[d] == SR_DTYPE_UINT8 ? 0 : -1, hi = dts[d] == SR_DTYPE_UINT8 ? 200 : 300;
        for (int64_t pos = 0; pos < shape[0]; pos++) {
            sr_ndarray a = make(dts[d], 1, shape, NULL);
            for (int64_t i = 0; i < shape[0]; i++)
                sr_ndarray_set_i64(&a, (uint64_t)i, 1);
            sr_ndarray_set_i64(&a, (uint64_t)pos, lo);
            int64_t mn = 0, mx = 0;
            ck_assert_sr_ok(sr_ndarray_minmax(&a, &mn, &mx, &e), e);
            ck_assert_msg(mn == lo && mx == 1, "%s min at %lld: got [%lld, %lld]",
                          sr_dtype_name(dts[d]), (long long)pos, (long long)mn, (long long)mx);
            sr_ndarray_set_i64(&a, (uint64_t)pos, hi);
            ck_assert_sr_ok(sr_ndarray_minmax(&a, &mn, &mx, &e), e);
            ck_assert_msg(mn == 1 && mx == hi, "%s max at %lld: got [%lld, %lld]",
                          sr_dtype_name(dts[d]), (long long)pos, (long long)mn, (long long)mx);
            sr_ndarray_release(&a);
        }
    }
    /* Through the packer: int16 routes [64,1,1] with -1 only at the last element of the block. */
    int64_t s64[3] = {64, 1, 1};
    sr_ndarray a = make(SR_DTYPE_INT16, 3, s64, NULL);
    for (int64_t i = 0; i < 64; i++)
        sr_ndarray_set_i64(&a, (uint64_t)i, i == 63 ? -1 : 1);
    sr_buf b = SR_BUF_INIT;
    ck_assert_sr_code(sr_routes_pack(&b, &a, NULL, SR_B64_AUTO, &e), e, SR_E_ROUTES_NEGATIVE);
    sr_buf_release(&b);
    sr_ndarray_release(&a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("envelope");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, worked_vectors_are_byte_identical);
    tcase_add_test(tc, decode_worked_vector);
    tcase_add_test(tc, canonical_dtype_table);
    tcase_add_test(tc, compaction_rejects_invalid_routes);
    tcase_add_test(tc, pack_checks_dtype_then_sidecar);
    tcase_add_test(tc, envelope_leads_with_data_and_keeps_sidecars);
    tcase_add_test(tc, round_trips_int16_and_empty);
    tcase_add_test(tc, unpack_errors_are_named);
    tcase_add_test(tc, byte_count_message_matches_reference);
    tcase_add_test(tc, limits_before_allocation);
    tcase_add_test(tc, limit_is_exact_for_every_padding);
    tcase_add_test(tc, unpack_decoded_validates_spliced_blobs);
    tcase_add_test(tc, shape_text_classifier);
    tcase_add_test(tc, arena_decoding_is_a_view);
    tcase_add_test(tc, arena_limit_with_null_err_is_named);
    tcase_add_test(tc, minmax_finds_extremes_at_every_block_position);
    tcase_add_test(tc, repeated_keys_read_the_first);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
