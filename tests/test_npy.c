/*
 * sr_npy: the .npy 1.0 header writer matches np.save byte for byte (vectors recorded from NumPy
 * 1.24's np.save on this machine), the reader accepts what NumPy's reader accepts for route
 * arrays and names every violation.
 */
#include <stdint.h>
#include <string.h>

#include "sr_mix.h"
#include "sr_npy.h"
#include "sr_test.h"

/* Builds "\x93NUMPY\x01\x00" + HEADER_LEN + text (text must end with '\n') into buf. */
static size_t make_npy(uint8_t *buf, const char *text, const void *data, size_t n)
{
    size_t hl = strlen(text);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)(hl & 0xff);
    buf[9] = (uint8_t)(hl >> 8);
    memcpy(buf + 10, text, hl);
    if (n)
        memcpy(buf + 10 + hl, data, n);
    return 10 + hl + n;
}

/* Pads a dict text with spaces and '\n' so 10 + len is a multiple of `align`. */
static void pad_text(char *out, const char *dict, size_t align)
{
    size_t n = strlen(dict);
    size_t total = (10 + n + 1 + align - 1) / align * align;
    memcpy(out, dict, n);
    memset(out + n, ' ', total - 10 - n - 1);
    out[total - 10 - 1] = '\n';
    out[total - 10] = '\0';
}

START_TEST(writer_matches_np_save)
{
    /* np.save(io.BytesIO(), np.zeros(shape, dtype)) header texts, NumPy 1.24.2. */
    static const struct {
        sr_dtype dtype;
        int ndim;
        int64_t shape[3];
        const char *dict;
    } v[] = {
        {SR_DTYPE_UINT8,
         3,
         {3, 2, 2},
         "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 2, 2), }"},
        {SR_DTYPE_UINT16,
         3,
         {3, 2, 2},
         "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 2, 2), }"},
        {SR_DTYPE_UINT8, 0, {0}, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }"},
        {SR_DTYPE_UINT16,
         3,
         {0, 2, 2},
         "{'descr': '<u2', 'fortran_order': False, 'shape': (0, 2, 2), }"},
        {SR_DTYPE_UINT8, 1, {5}, "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }"},
        {SR_DTYPE_INT16,
         3,
         {3, 2, 2},
         "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 2, 2), }"},
        {SR_DTYPE_INT32,
         3,
         {3, 2, 2},
         "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2, 2), }"},
        {SR_DTYPE_UINT16,
         3,
         {30000, 48, 8},
         "{'descr': '<u2', 'fortran_order': False, 'shape': (30000, 48, 8), }"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char buf[SR_NPY_HEADER_MAX];
        size_t n = 0;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(
            sr_npy_write_header(&n, buf, sizeof buf, v[i].dtype, v[i].shape, v[i].ndim, &err), err);
        /* Every one of these is 10 + 118 bytes in NumPy's output. */
        ck_assert_uint_eq(n, 128);
        ck_assert(memcmp(buf, "\x93NUMPY\x01\x00\x76\x00", 10) == 0);
        size_t dl = strlen(v[i].dict);
        ck_assert_msg(memcmp(buf + 10, v[i].dict, dl) == 0, "vector %zu: %.*s", i, (int)dl,
                      buf + 10);
        for (size_t j = 10 + dl; j < n - 1; j++)
            ck_assert_int_eq(buf[j], ' ');
        ck_assert_int_eq(buf[n - 1], '\n');
    }
}
END_TEST

START_TEST(writer_pads_a_full_block_when_aligned)
{
    /* NumPy pads ARRAY_ALIGN - (10 + hlen) % 64 spaces: a full 64 when already aligned. Shape
     * (10**18, 10**18, ...) grows the text; check the rule over every ndim and dim width. */
    for (int ndim = 0; ndim <= SR_NDIM_MAX; ndim++)
        for (int digits = 1; digits <= 18; digits++) {
            int64_t shape[SR_NDIM_MAX], d = 1;
            for (int k = 1; k < digits; k++)
                d *= 10;
            for (int k = 0; k < ndim; k++)
                shape[k] = d;
            char buf[SR_NPY_HEADER_MAX];
            size_t n = 0;
            sr_err err = SR_ERR_INIT;
            ck_assert_sr_ok(
                sr_npy_write_header(&n, buf, sizeof buf, SR_DTYPE_UINT8, shape, ndim, &err), err);
            ck_assert_uint_eq(n % SR_NPY_ALIGN, 0);
            const char *end = memchr(buf + 10, '}', n - 10);
            ck_assert_ptr_nonnull(end);
            size_t text = (size_t)(end + 1 - buf) - 10;
            size_t growth = ndim ? (size_t)(21 - digits) : 0;
            size_t hlen = text + growth + 1;
            ck_assert_uint_eq(n - 10, hlen + (64 - (10 + hlen) % 64));
            sr_npy_header h;
            int rc = sr_npy_parse_header(&h, (const uint8_t *)buf, n, 0, ndim, &err);
            if ((digits - 1) * ndim >= 20) /* 10^20 or more one-byte elements */
                ck_assert_sr_code(rc, err, SR_E_ENV_OVERFLOW);
            else
                ck_assert_sr_ok(rc, err);
        }
}
END_TEST

/* The next splitmix64 draw of the state *s. */
static uint64_t draw(uint64_t *s)
{
    *s += SR_MIX_GOLDEN;
    return sr_mix64(*s);
}

START_TEST(roundtrip_random_shapes)
{
    uint64_t s = 42;
    static const sr_dtype dts[] = {SR_DTYPE_UINT8, SR_DTYPE_UINT16,  SR_DTYPE_INT16,
                                   SR_DTYPE_INT32, SR_DTYPE_FLOAT32, SR_DTYPE_BOOL};
    for (int it = 0; it < 2000; it++) {
        int ndim = (int)(draw(&s) % 5); /* dims < 12: at most 82944 bytes */
        int64_t shape[SR_NDIM_MAX];
        for (int k = 0; k < ndim; k++)
            shape[k] = (int64_t)(draw(&s) % 12);
        sr_dtype d = dts[draw(&s) % 6];
        static uint8_t buf[SR_NPY_HEADER_MAX + 12 * 12 * 12 * 12 * 4];
        size_t n = 0;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(
            sr_npy_write_header(&n, (char *)buf, SR_NPY_HEADER_MAX, d, shape, ndim, &err), err);
        size_t bytes = sr_dtype_size(d);
        for (int k = 0; k < ndim; k++)
            bytes *= (size_t)shape[k];
        memset(buf + n, 0x5a, bytes);
        sr_ndarray a = SR_NDARRAY_INIT;
        sr_npy_header h;
        ck_assert_sr_ok(sr_npy_view(&a, &h, buf, n + bytes, 0, ndim, &err), err);
        ck_assert_int_eq(a.dtype, d);
        ck_assert_int_eq(a.ndim, ndim);
        for (int k = 0; k < ndim; k++)
            ck_assert_int_eq(a.shape[k], shape[k]);
        ck_assert_ptr_eq(a.data, buf + n);
        ck_assert_uint_eq(a.nbytes, bytes);
        ck_assert_uint_eq(h.data_offset, n);
    }
}
END_TEST

START_TEST(reader_accepts_numpy_variants)
{
    /* What np.load accepts for a route array: either quote style, any key order, no trailing
     * comma, extra spaces, '<u1' for a one-byte type, and the 16-byte padding of old NumPy. */
    static const char *dicts[] = {
        "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 1, 1), }",
        "{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (2, 1, 1)}",
        "{'shape': (2, 1, 1), 'fortran_order': False, 'descr': '<u1'}",
        "{ 'descr' :'|u1' ,'fortran_order':False,'shape':( 2 ,1,1 , ) , }",
        "{'descr':\t'=u1', 'fortran_order': False, 'shape': (2, 1, 1)}",
    };
    uint8_t data[2] = {7, 9};
    for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++)
        for (size_t align = 16; align <= 64; align *= 4) {
            char text[400];
            pad_text(text, dicts[i], align);
            uint8_t buf[512];
            size_t n = make_npy(buf, text, data, 2);
            sr_ndarray a = SR_NDARRAY_INIT;
            sr_err err = SR_ERR_INIT;
            ck_assert_sr_ok(sr_npy_view(&a, NULL, buf, n, SR_DTYPE_BIT(SR_DTYPE_UINT8), 3, &err),
                            err);
            ck_assert_int_eq(((uint8_t *)a.data)[1], 9);
        }
}
END_TEST

static int parse_dict(const char *dict, sr_dtype_set allowed, int ndim, sr_err *err)
{
    char text[400];
    pad_text(text, dict, 64);
    uint8_t buf[512];
    size_t n = make_npy(buf, text, NULL, 0);
    sr_npy_header h;
    return sr_npy_parse_header(&h, buf, n, allowed, ndim, err);
}

START_TEST(reader_names_each_violation)
{
    static const struct {
        const char *dict;
        int code;
    } v[] = {
        {"{'descr': '>u2', 'fortran_order': False, 'shape': (1, 1, 1), }", SR_E_NPY_BYTE_ORDER},
        {"{'descr': '|u2', 'fortran_order': False, 'shape': (1, 1, 1), }", SR_E_NPY_BYTE_ORDER},
        {"{'descr': '=i4', 'fortran_order': False, 'shape': (1, 1, 1), }", SR_E_NPY_BYTE_ORDER},
        {"{'descr': '<u2', 'fortran_order': True, 'shape': (1, 1, 1), }", SR_E_NPY_FORTRAN},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (1, 1, 1), }", SR_E_NPY_DESCR},
        {"{'descr': 'u2', 'fortran_order': False, 'shape': (1, 1, 1), }", SR_E_NPY_DESCR},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), }", SR_E_NPY_DESCR},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (1, -1, 1), }", SR_E_NPY_SHAPE},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (1, 01, 1), }", SR_E_NPY_SHAPE},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (1, 1_0, 1), }", SR_E_NPY_HEADER},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (1, 1), }", SR_E_NPY_SHAPE},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (99999999999999999999, 1, 1), }",
         SR_E_NPY_SHAPE},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }",
         SR_E_ENV_OVERFLOW},
        {"{'descr': '<u2', 'fortran_order': False}", SR_E_NPY_HEADER},
        {"{'descr': '<u2', 'descr': '<u2', 'fortran_order': False, 'shape': (1, 1, 1)}",
         SR_E_NPY_HEADER},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (1, 1, 1), 'x': 1}", SR_E_NPY_HEADER},
        {"{'descr': '<u2', 'fortran_order': 0, 'shape': (1, 1, 1)}", SR_E_NPY_HEADER},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': [1, 1, 1]}", SR_E_NPY_HEADER},
        {"{'descr': '<u\\x32', 'fortran_order': False, 'shape': (1, 1, 1)}", SR_E_NPY_HEADER},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (1, 1, 1)} x", SR_E_NPY_HEADER},
        {"{'descr': '<u2' 'fortran_order': False, 'shape': (1, 1, 1)}", SR_E_NPY_HEADER},
        {"['descr', '<u2']", SR_E_NPY_HEADER},
    };
    sr_dtype_set routes = SR_DTYPE_BIT(SR_DTYPE_UINT8) | SR_DTYPE_BIT(SR_DTYPE_UINT16) |
                          SR_DTYPE_BIT(SR_DTYPE_INT16) | SR_DTYPE_BIT(SR_DTYPE_INT32);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        sr_err err = SR_ERR_INIT;
        int rc = parse_dict(v[i].dict, routes, 3, &err);
        ck_assert_msg(rc == v[i].code && err.code == v[i].code, "case %zu %s: want %s, got %s: %s",
                      i, v[i].dict, sr_code_name(v[i].code), sr_code_name(rc), err.msg);
    }
    /* The largest dimension is 2^63 - 1 exactly: fine for one-byte items, an overflow of the
     * array size for wider ones; one more is not a dimension at all. */
    sr_err e2 = SR_ERR_INIT;
    ck_assert_sr_ok(parse_dict("{'descr': '|u1', 'fortran_order': False, 'shape': "
                               "(9223372036854775807,)}",
                               0, 1, &e2),
                    e2);
    ck_assert_sr_code(parse_dict("{'descr': '<u2', 'fortran_order': False, 'shape': "
                                 "(9223372036854775807,)}",
                                 0, 1, &e2),
                      e2, SR_E_ENV_OVERFLOW);
    ck_assert_sr_code(parse_dict("{'descr': '|u1', 'fortran_order': False, 'shape': "
                                 "(9223372036854775808,)}",
                                 0, 1, &e2),
                      e2, SR_E_NPY_SHAPE);
    /* "(5)" is not a 1-tuple; "(5,)" is. */
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(
        parse_dict("{'descr': '|u1', 'fortran_order': False, 'shape': (5)}", 0, 1, &err), err,
        SR_E_NPY_HEADER);
    ck_assert_sr_ok(
        parse_dict("{'descr': '|u1', 'fortran_order': False, 'shape': (5,)}", 0, 1, &err), err);
    ck_assert_sr_ok(parse_dict("{'descr': '|u1', 'fortran_order': False, 'shape': ()}", 0, 0, &err),
                    err);
}
END_TEST

START_TEST(prefix_and_framing_errors)
{
    uint8_t buf[600];
    char text[400];
    pad_text(text, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 1, 1), }", 64);
    uint8_t data[3] = {1, 2, 3};
    size_t n = make_npy(buf, text, data, 2);
    sr_ndarray a = SR_NDARRAY_INIT;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_npy_view(&a, NULL, buf, n, 0, 3, &err), err);
    /* One byte short, one byte long. */
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, n - 1, 0, 3, &err), err, SR_E_NPY_BYTE_COUNT);
    ck_assert_str_eq(err.msg, ".npy data has 1 bytes, expected 2 for uint8[2, 1, 1]");
    n = make_npy(buf, text, data, 3);
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, n, 0, 3, &err), err, SR_E_NPY_BYTE_COUNT);
    /* Cut inside the header, and inside the prefix. */
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, 60, 0, 3, &err), err, SR_E_NPY_HEADER);
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, 8, 0, 3, &err), err, SR_E_NPY_HEADER);
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, 0, 0, 3, &err), err, SR_E_NPY_HEADER);
    /* Version 2.0 and a bad magic. */
    buf[6] = 2;
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, n, 0, 3, &err), err, SR_E_NPY_VERSION);
    buf[6] = 1;
    buf[1] = 'M';
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, n, 0, 3, &err), err, SR_E_NPY_MAGIC);
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, 3, 0, 3, &err), err, SR_E_NPY_MAGIC);
    buf[1] = 'N';
    /* No final newline. */
    buf[10 + strlen(text) - 1] = ' ';
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, n, 0, 3, &err), err, SR_E_NPY_HEADER);
    /* HEADER_LEN 0. */
    buf[8] = buf[9] = 0;
    ck_assert_sr_code(sr_npy_view(&a, NULL, buf, n, 0, 3, &err), err, SR_E_NPY_HEADER);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, writer_matches_np_save);
    tcase_add_test(tc, writer_pads_a_full_block_when_aligned);
    tcase_add_test(tc, roundtrip_random_shapes);
    tcase_add_test(tc, reader_accepts_numpy_variants);
    tcase_add_test(tc, reader_names_each_violation);
    tcase_add_test(tc, prefix_and_framing_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
