/*
 * sr_nrlre: the prefix of NeMo-RL's "nrlre1:<dtype>:<SxLxK>:<base64>" routes string is written
 * as NeMo-RL's encoder writes it and every other spelling is a named error.
 */
#include <string.h>

#include "sr_nrlre.h"
#include "sr_test.h"

static int parse(const char *s, sr_nrlre_header *h, sr_err *err)
{
    return sr_nrlre_parse_prefix(h, s, strlen(s), err);
}

START_TEST(writes_what_the_encoder_writes)
{
    /* f"{_MAGIC}:{dtype_name}:{tokens}x{num_layers}x{topk}:{data}" */
    char buf[SR_NRLRE_PREFIX_MAX];
    size_t n = 0;
    sr_err err = SR_ERR_INIT;
    int64_t shape[3] = {12, 40, 8};
    ck_assert_sr_ok(sr_nrlre_write_prefix(&n, buf, sizeof buf, SR_DTYPE_INT16, shape, &err), err);
    ck_assert_uint_eq(n, strlen("nrlre1:int16:12x40x8:"));
    ck_assert(memcmp(buf, "nrlre1:int16:12x40x8:", n) == 0);
    int64_t zero[3] = {0, 2, 2};
    ck_assert_sr_ok(sr_nrlre_write_prefix(&n, buf, sizeof buf, SR_DTYPE_INT8, zero, &err), err);
    ck_assert(memcmp(buf, "nrlre1:int8:0x2x2:", n) == 0);
    ck_assert_sr_code(sr_nrlre_write_prefix(&n, buf, sizeof buf, SR_DTYPE_UINT8, shape, &err), err,
                      SR_E_INVAL);
    ck_assert_sr_code(sr_nrlre_write_prefix(&n, buf, 10, SR_DTYPE_INT16, shape, &err), err,
                      SR_E_LIMIT);
    int64_t big[3] = {INT64_MAX, INT64_MAX, INT64_MAX};
    ck_assert_sr_ok(sr_nrlre_write_prefix(&n, buf, sizeof buf, SR_DTYPE_INT32, big, &err), err);
}
END_TEST

START_TEST(parses_the_prefix)
{
    sr_nrlre_header h;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(parse("nrlre1:int16:3x2x4:AAEC", &h, &err), err);
    ck_assert_int_eq(h.dtype, SR_DTYPE_INT16);
    ck_assert_int_eq(h.shape[0], 3);
    ck_assert_int_eq(h.shape[1], 2);
    ck_assert_int_eq(h.shape[2], 4);
    ck_assert_uint_eq(h.data_offset, strlen("nrlre1:int16:3x2x4:"));
    ck_assert_uint_eq(h.data_bytes, 48);
    /* The base64 need not have arrived yet, nor exist (an empty array). */
    ck_assert_sr_ok(parse("nrlre1:int8:0x48x8:", &h, &err), err);
    ck_assert_uint_eq(h.data_bytes, 0);
    ck_assert_sr_ok(parse("nrlre1:int32:1x1x1:", &h, &err), err);
    ck_assert_uint_eq(h.data_bytes, 4);
}
END_TEST

START_TEST(names_each_violation)
{
    static const struct {
        const char *s;
        int code;
    } v[] = {
        {"nrlre2:int16:3x2x4:AAEC", SR_E_NRLRE_SYNTAX},
        {"NRLRE1:int16:3x2x4:AAEC", SR_E_NRLRE_SYNTAX},
        {"nrlre1", SR_E_NRLRE_SYNTAX},
        {"", SR_E_NRLRE_SYNTAX},
        {"nrlre1:int16", SR_E_NRLRE_SYNTAX},
        {"nrlre1:int16:3x2x4", SR_E_NRLRE_SYNTAX},
        {"nrlre1:uint8:3x2x4:AAEC", SR_E_NRLRE_DTYPE},
        {"nrlre1:int64:3x2x4:AAEC", SR_E_NRLRE_DTYPE},
        {"nrlre1:float32:3x2x4:", SR_E_NRLRE_DTYPE},
        {"nrlre1::3x2x4:", SR_E_NRLRE_DTYPE},
        {"nrlre1:int16:3x2:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:3x2x4x1:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:3X2X4:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:+3x2x4:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16: 3x2x4:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:1_0x2x4:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:03x2x4:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:-1x2x4:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:3x2x:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:x2x4:AAEC", SR_E_NRLRE_SHAPE},
        {"nrlre1:int16:99999999999999999999x2x4:", SR_E_NRLRE_SHAPE},
        {"nrlre1:int32:4294967296x4294967296x2:", SR_E_ENV_OVERFLOW},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        sr_nrlre_header h;
        sr_err err = SR_ERR_INIT;
        int rc = parse(v[i].s, &h, &err);
        ck_assert_msg(rc == v[i].code && err.code == v[i].code, "case %s: want %s, got %s: %s",
                      v[i].s, sr_code_name(v[i].code), sr_code_name(rc), err.msg);
    }
    /* The largest dimension is 2^63 - 1 exactly; one more is refused as a dimension. */
    sr_nrlre_header h2;
    sr_err e2 = SR_ERR_INIT;
    ck_assert_sr_ok(parse("nrlre1:int8:9223372036854775807x1x1:", &h2, &e2), e2);
    ck_assert_int_eq(h2.shape[0], INT64_MAX);
    ck_assert_sr_code(parse("nrlre1:int16:9223372036854775807x1x1:", &h2, &e2), e2,
                      SR_E_ENV_OVERFLOW);
    ck_assert_sr_code(parse("nrlre1:int8:9223372036854775808x1x1:", &h2, &e2), e2,
                      SR_E_NRLRE_SHAPE);
    /* A prefix longer than any the encoder writes never finds its colons. */
    char longs[200] = "nrlre1:int16:";
    memset(longs + strlen(longs), '1', 120);
    sr_nrlre_header h;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(parse(longs, &h, &err), err, SR_E_NRLRE_SYNTAX);
}
END_TEST

START_TEST(roundtrip_every_width)
{
    static const sr_dtype dts[] = {SR_DTYPE_INT8, SR_DTYPE_INT16, SR_DTYPE_INT32};
    int64_t dims[] = {0, 1, 9, 10, 123456, 3000000000LL};
    for (size_t d = 0; d < 3; d++)
        for (size_t a = 0; a < 6; a++)
            for (size_t b = 0; b < 6; b++) {
                int64_t shape[3] = {dims[a], dims[b], 8};
                char buf[SR_NRLRE_PREFIX_MAX + 1];
                size_t n = 0;
                sr_err err = SR_ERR_INIT;
                ck_assert_sr_ok(sr_nrlre_write_prefix(&n, buf, sizeof buf, dts[d], shape, &err),
                                err);
                sr_nrlre_header h;
                int rc = sr_nrlre_parse_prefix(&h, buf, n, &err);
                if (a == 5 && b == 5) { /* 3e9 x 3e9 x 8 elements */
                    ck_assert_sr_code(rc, err, SR_E_ENV_OVERFLOW);
                    continue;
                }
                ck_assert_sr_ok(rc, err);
                ck_assert_int_eq(h.dtype, dts[d]);
                ck_assert(memcmp(h.shape, shape, sizeof shape) == 0);
                ck_assert_uint_eq(h.data_offset, n);
            }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nrlre");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, writes_what_the_encoder_writes);
    tcase_add_test(tc, parses_the_prefix);
    tcase_add_test(tc, names_each_violation);
    tcase_add_test(tc, roundtrip_every_width);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
