/* sr_fields: built-ins, definition checks, JSON loading with line:col errors, narrowing. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr_fields.h"
#include "sr_test.h"

static sr_fields *builtins(void)
{
    sr_fields *f;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_new(&f, &err), err);
    ck_assert_sr_ok(sr_fields_add_builtins(f, &err), err);
    return f;
}

START_TEST(builtins_match_the_reference)
{
    sr_fields *f = builtins();
    ck_assert_uint_eq(sr_fields_count(f), 3);
    const sr_field_def *r = sr_fields_find(f, "routed_experts", 14);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->kind, SR_FIELD_PACKED);
    ck_assert_uint_eq(r->dtypes, SR_ROUTE_DTYPES);
    ck_assert_int_eq(r->ndim, 3);
    ck_assert_int_eq(r->canonical, 1);
    ck_assert_int_eq(r->nullable, 1);
    ck_assert_int_eq(r->token_rows, 1);
    ck_assert_uint_eq(sr_fields_index(f, r), 0);
    const sr_field_def *s = sr_fields_find(f, "rollout_sample_support", 22);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->dtypes, SR_DTYPE_BIT(SR_DTYPE_INT32));
    ck_assert_int_eq(s->ndim, 2);
    ck_assert_int_eq(s->canonical, 0);
    const sr_field_def *t = sr_fields_find(f, "token_ids", 9);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->kind, SR_FIELD_INT_ARRAY);
    ck_assert_int_eq(t->min, 0);
    ck_assert_int_eq(t->max, INT32_MAX);
    ck_assert_ptr_null(sr_fields_find(f, "routed_expert", 13));
    ck_assert_ptr_null(sr_fields_at(f, 3));

    sr_contract c = sr_field_contract(r);
    ck_assert_str_eq(c.name, "routed_experts");
    ck_assert_uint_eq(c.allowed, SR_ROUTE_DTYPES);
    ck_assert_int_eq(c.ndim, 3);
    ck_assert_int_eq(c.canonical_routes, 1);
    sr_fields_free(f);
}
END_TEST

static sr_field_def packed_def(const char *name)
{
    sr_field_def d;
    memset(&d, 0, sizeof(d));
    d.kind = SR_FIELD_PACKED;
    snprintf(d.name, sizeof(d.name), "%s", name);
    d.dtypes = SR_DTYPE_BIT(SR_DTYPE_INT32);
    d.ndim = 2;
    return d;
}

START_TEST(bad_definitions_are_named)
{
    sr_fields *f = builtins();
    sr_err err = SR_ERR_INIT;
    const char *names[] = {"",      "a\"b",  "a\\b",      "data",
                           "shape", "dtype", "tab\there", "routed_experts"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        sr_field_def d = packed_def(names[i]);
        ck_assert_sr_code(sr_fields_add(f, &d, &err), err, SR_E_FIELD_DEF);
    }
    sr_field_def d = packed_def("ok");
    d.ndim = 0;
    ck_assert_sr_code(sr_fields_add(f, &d, &err), err, SR_E_FIELD_DEF);
    d.ndim = 9;
    ck_assert_sr_code(sr_fields_add(f, &d, &err), err, SR_E_FIELD_DEF);
    d.ndim = 2;
    d.dtypes = 0;
    ck_assert_sr_code(sr_fields_add(f, &d, &err), err, SR_E_FIELD_DEF);
    d.dtypes = SR_DTYPE_BIT(SR_DTYPE_FLOAT32);
    d.canonical = 1;
    ck_assert_sr_code(sr_fields_add(f, &d, &err), err, SR_E_FIELD_DEF);
    d.kind = SR_FIELD_INT_ARRAY;
    d.min = 5;
    d.max = 4;
    ck_assert_sr_code(sr_fields_add(f, &d, &err), err, SR_E_FIELD_DEF);
    ck_assert_uint_eq(sr_fields_count(f), 3);
    for (int i = 0; sr_fields_count(f) < SR_FIELDS_MAX; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%d", i);
        sr_field_def ok = packed_def(name);
        ck_assert_sr_ok(sr_fields_add(f, &ok, &err), err);
    }
    sr_field_def extra = packed_def("one_too_many");
    ck_assert_sr_code(sr_fields_add(f, &extra, &err), err, SR_E_LIMIT);
    sr_fields_free(f);
}
END_TEST

START_TEST(fixture_definitions_load)
{
    sr_fields *f = builtins();
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(
        sr_fields_load_file(f, SYNCROLL_SOURCE_DIR "/fixtures/fields/logit_topk.json", &err), err);
    ck_assert_uint_eq(sr_fields_count(f), 6);
    const sr_field_def *l = sr_fields_find(f, "logit_topk", 10);
    ck_assert_ptr_nonnull(l);
    ck_assert_uint_eq(l->dtypes, SR_DTYPE_BIT(SR_DTYPE_INT32) | SR_DTYPE_BIT(SR_DTYPE_FLOAT32));
    ck_assert_int_eq(l->ndim, 2);
    ck_assert_int_eq(l->nullable, 0);
    ck_assert_int_eq(l->token_rows, 1);
    ck_assert_int_eq(l->canonical, 0);
    const sr_field_def *e = sr_fields_find(f, "expert_load", 11);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->canonical, 1);
    ck_assert_int_eq(e->nullable, 1);
    const sr_field_def *p = sr_fields_find(f, "prompt_ids", 10);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->kind, SR_FIELD_INT_ARRAY);
    ck_assert_int_eq(p->max, 262143);
    /* Loading it twice names the duplicate and changes nothing. */
    ck_assert_sr_code(
        sr_fields_load_file(f, SYNCROLL_SOURCE_DIR "/fixtures/fields/logit_topk.json", &err), err,
        SR_E_FIELD_DEF);
    ck_assert_ptr_nonnull(strstr(err.msg, "already registered"));
    ck_assert_uint_eq(sr_fields_count(f), 6);
    ck_assert_sr_code(sr_fields_load_file(f, "/nonexistent/fields.json", &err), err, SR_E_IO);
    sr_fields_free(f);
}
END_TEST

/* A registry path that is a FIFO without a writer, a folder or a file past 1 MiB is refused by
 * name before anything is read (a FIFO was opened with fopen before and blocked); a file of
 * exactly 1 MiB is read. */
START_TEST(registry_file_must_be_a_small_regular_file)
{
    sr_fields *f = builtins();
    sr_err err = SR_ERR_INIT;
    char dir[] = "/tmp/sr-fields-XXXXXX", fifo[64], big[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    snprintf(big, sizeof(big), "%s/big.json", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_sr_code(sr_fields_load_file(f, fifo, &err), err, SR_E_NOT_REGULAR);
    ck_assert_ptr_nonnull(strstr(err.msg, "a FIFO"));
    ck_assert_sr_code(sr_fields_load_file(f, dir, &err), err, SR_E_NOT_REGULAR);
    FILE *b = fopen(big, "wb");
    ck_assert_ptr_nonnull(b);
    fputs("{\"fields\": [], \"pad\": \"", b);
    for (size_t i = 0; i < SR_FIELDS_MAX_FILE; i++)
        fputc('x', b);
    fputs("\"}", b);
    fclose(b);
    ck_assert_sr_code(sr_fields_load_file(f, big, &err), err, SR_E_LIMIT);
    ck_assert_uint_eq(sr_fields_count(f), 3);
    /* An empty registry padded with spaces to exactly SR_FIELDS_MAX_FILE bytes loads; one byte
     * more is over the limit. */
    for (size_t extra = 0; extra <= 1; extra++) {
        b = fopen(big, "wb");
        ck_assert_ptr_nonnull(b);
        const char *head = "{\"fields\": []";
        fputs(head, b);
        for (size_t i = strlen(head) + 1; i < SR_FIELDS_MAX_FILE + extra; i++)
            fputc(' ', b);
        fputc('}', b);
        ck_assert_int_eq(ftell(b), (long)(SR_FIELDS_MAX_FILE + extra));
        fclose(b);
        int rc = sr_fields_load_file(f, big, &err);
        ck_assert_msg(rc == (extra ? SR_E_LIMIT : 0), "%zu bytes: rc %d (%s)",
                      SR_FIELDS_MAX_FILE + extra, rc, err.msg);
        ck_assert_uint_eq(sr_fields_count(f), 3);
    }
    unlink(fifo);
    unlink(big);
    rmdir(dir);
    sr_fields_free(f);
}
END_TEST

/* Loads `text` into a fresh built-in registry and expects fields.invalid_definition. */
static void expect_bad(const char *text, const char *where)
{
    sr_fields *f = builtins();
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_fields_load_json(f, text, strlen(text), "defs.json", &err), err,
                      SR_E_FIELD_DEF);
    ck_assert_msg(strstr(err.msg, where) != NULL, "message '%s' lacks '%s'", err.msg, where);
    ck_assert_uint_eq(sr_fields_count(f), 3);
    sr_fields_free(f);
}

START_TEST(json_errors_carry_line_and_column)
{
    expect_bad("{\n  \"fields\": [\n    {\"name\": \"x\",, \"ndim\": 2}\n  ]\n}\n", "defs.json:3:");
    expect_bad("{\"fields\": [", "defs.json:1:");
    expect_bad("{\n  \"fieldz\": []\n}", "defs.json:2:3");
    expect_bad("{\"fields\": [\n {\"name\": \"a\", \"dtypes\": [\"int32\"], \"ndim\": 2,\n"
               "  \"colour\": 1}]}",
               "defs.json:3:3");
    expect_bad("{\"fields\": [{\"name\": \"a\", \"dtypes\": [\"int33\"], \"ndim\": 2}]}",
               "defs.json:1:");
    expect_bad("{\"fields\": [{\"name\": \"a\", \"dtypes\": [\"int32\"], \"ndim\": \"2\"}]}",
               "ndim");
    expect_bad("{\"fields\": [{\"name\": \"a\", \"dtypes\": [], \"ndim\": 2}]}", "dtypes");
    expect_bad("{\"fields\": [{\"name\": \"a\", \"dtypes\": [\"int32\"]}]}", "ndim");
    expect_bad("{\"fields\": [{\"name\": \"data\", \"dtypes\": [\"int32\"], \"ndim\": 2}]}",
               "data");
    expect_bad("{\"fields\": [{\"name\": \"routed_experts\", \"dtypes\": [\"int32\"], \"ndim\": "
               "2}]}",
               "already registered");
    expect_bad("{\"fields\": [{\"name\": \"a\", \"dtypes\": [\"float32\"], \"ndim\": 2, "
               "\"canonical\": true}]}",
               "canonical");
    expect_bad("{\"fields\": [{\"name\": \"a\", \"dtypes\": [\"int32\"], \"ndim\": 2},\n"
               "            {\"name\": \"a\", \"dtypes\": [\"int32\"], \"ndim\": 2}]}",
               "defs.json:2:");
    expect_bad("{\"int_arrays\": [{\"name\": \"ids\", \"min\": 3, \"max\": 2}]}", "min");
    expect_bad("[]", "defs.json:1:1");
}
END_TEST

START_TEST(narrowing_keeps_registry_order)
{
    sr_fields *f = builtins(), *n;
    sr_err err = SR_ERR_INIT;
    const char *names[] = {"token_ids", "rollout_sample_support"};
    ck_assert_sr_ok(sr_fields_narrow(&n, f, names, 2, &err), err);
    ck_assert_uint_eq(sr_fields_count(n), 2);
    ck_assert_str_eq(sr_fields_at(n, 0)->name, "rollout_sample_support");
    ck_assert_str_eq(sr_fields_at(n, 1)->name, "token_ids");
    sr_fields_free(n);
    const char *bad[] = {"routed_experts", "not_a_field"};
    ck_assert_sr_code(sr_fields_narrow(&n, f, bad, 2, &err), err, SR_E_FIELD_UNKNOWN);
    ck_assert_ptr_null(n);
    sr_fields_free(f);
}
END_TEST

/* "shape", "range" and "finite": what they set, and each bad form named with its position. */
START_TEST(declared_shapes_and_ranges)
{
    sr_fields *f = builtins();
    sr_err err = SR_ERR_INIT;
    const char *ok = "{\"fields\": [{\"name\": \"logit_topk\", \"dtypes\": [\"float16\"],"
                     " \"shape\": [\"T\", 8], \"range\": [-4, 4.5], \"finite\": true},"
                     " {\"name\": \"topk_ids\", \"dtypes\": [\"int32\"], \"ndim\": 3,"
                     " \"shape\": [\"*\", 2, 4], \"range\": [0, 255]}]}";
    ck_assert_sr_ok(sr_fields_load_json(f, ok, strlen(ok), "defs.json", &err), err);
    const sr_field_def *l = sr_fields_find(f, "logit_topk", 10);
    ck_assert_int_eq(l->has_shape, 1);
    ck_assert_int_eq(l->ndim, 2);
    ck_assert_int_eq(l->token_rows, 1);
    ck_assert_int_eq(l->dims[0], SR_FIELD_DIM_T);
    ck_assert_int_eq(l->dims[1], 8);
    ck_assert_int_eq(l->has_range, 1);
    ck_assert(l->range_lo == -4.0 && l->range_hi == 4.5);
    ck_assert_int_eq(l->finite, 1);
    char buf[64];
    ck_assert_str_eq(sr_field_shape_str(l, buf, sizeof(buf)), "[T, 8]");
    const sr_field_def *t = sr_fields_find(f, "topk_ids", 8);
    ck_assert_int_eq(t->token_rows, 0);
    ck_assert_str_eq(sr_field_shape_str(t, buf, sizeof(buf)), "[*, 2, 4]");
    ck_assert_int_eq(t->range_min, 0);
    ck_assert_int_eq(t->range_max, 255);
    sr_fields_free(f);

#define DEF(extra) "{\"fields\": [{\"name\": \"x\", \"dtypes\": [\"int32\"], " extra "}]}"
    expect_bad(DEF("\"shape\": [8, \"T\"]"), "defs.json:1:61: shape: \"T\" (the token dimension) "
                                             "is allowed at axis 0 only, here at axis 1");
    expect_bad(DEF("\"shape\": [\"T\", 0]"), "shape: axis 1 must be \"T\" (axis 0), \"*\" or an "
                                             "integer length 1..2147483647");
    expect_bad(DEF("\"shape\": [\"T\", 2.5]"), "shape: axis 1 must be");
    expect_bad(DEF("\"shape\": [\"T\", \"N\"]"), "shape: axis 1 must be");
    expect_bad(DEF("\"shape\": []"), "shape must be a non-empty array");
    expect_bad(DEF("\"shape\": [1,1,1,1,1,1,1,1,1]"), "shape: at most 8 axes");
    expect_bad(DEF("\"ndim\": 3, \"shape\": [\"T\", 8]"), "shape has 2 axes but ndim is 3");
    expect_bad(DEF("\"token_rows\": false, \"shape\": [\"T\", 8]"),
               "token_rows is false, but shape[0] is \"T\"");
    expect_bad(DEF("\"token_rows\": true, \"shape\": [\"*\", 8]"),
               "token_rows is true, but shape[0] is not \"T\"");
    /* The product of the fixed lengths overflows 64 bits: refused before it is computed. */
    expect_bad(DEF("\"shape\": [\"T\", 2147483647, 2147483647, 2147483647]"),
               "shape: the fixed lengths times the widest dtype exceed max_bytes");
    expect_bad(DEF("\"max_bytes\": 100, \"shape\": [\"T\", 26]"), "exceed max_bytes");
    expect_bad(DEF("\"ndim\": 2"
                   ", \"range\": [0.5, 3]"),
               "range: the field lists an integer dtype, so its bounds must be integers");
    expect_bad(DEF("\"ndim\": 2, \"range\": [3, 2]"), "range: lo must not exceed hi");
    expect_bad(DEF("\"ndim\": 2, \"range\": [3]"), "range must be [lo, hi]");
    expect_bad(DEF("\"ndim\": 2, \"finite\": 1"), "finite");
    expect_bad(DEF("\"canonical\": false"), "missing required key 'ndim'");
#undef DEF
}
END_TEST

static sr_ndarray arr(sr_dtype t, int ndim, int64_t a0, int64_t a1, void *data)
{
    sr_ndarray a = SR_NDARRAY_INIT;
    a.dtype = t;
    a.ndim = ndim;
    a.shape[0] = a0;
    a.shape[1] = a1;
    a.data = data;
    a.nbytes = (size_t)(a0 * (ndim > 1 ? a1 : 1)) * sr_dtype_size(t);
    return a;
}

/* sr_field_check_array: the declared shape (also in a flat wire) and values, with named errors. */
START_TEST(arrays_are_checked_against_the_declaration)
{
    sr_fields *f = builtins();
    sr_err err = SR_ERR_INIT;
    const char *txt = "{\"fields\": [{\"name\": \"ids\", \"dtypes\": [\"int32\"],"
                      " \"shape\": [\"T\", 4], \"range\": [0, 255]},"
                      " {\"name\": \"scores\", \"dtypes\": [\"float32\"],"
                      " \"shape\": [\"T\", 2], \"finite\": true}]}";
    ck_assert_sr_ok(sr_fields_load_json(f, txt, strlen(txt), "d", &err), err);
    const sr_field_def *ids = sr_fields_find(f, "ids", 3), *sc = sr_fields_find(f, "scores", 6);
    int32_t v[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};
    sr_ndarray a = arr(SR_DTYPE_INT32, 2, 3, 4, v);
    ck_assert_sr_ok(sr_field_check_array(ids, &a, 3, 0, &err), err);
    ck_assert_sr_ok(sr_field_check_array(ids, &a, -1, 0, &err), err);
    ck_assert_sr_code(sr_field_check_array(ids, &a, 2, 0, &err), err, SR_E_FIELD_SHAPE);
    ck_assert_str_eq(err.msg, "ids: axis 0 (T) has 3 rows, the reply has 2 tokens (declared "
                              "shape [T, 4])");
    sr_ndarray b = arr(SR_DTYPE_INT32, 2, 4, 3, v);
    ck_assert_sr_code(sr_field_check_array(ids, &b, 4, 0, &err), err, SR_E_FIELD_SHAPE);
    ck_assert_str_eq(err.msg, "ids: axis 1 has length 3, the definition declares 4 (shape [T, 4])");
    /* Flat (sglang's raw bytes): the count against T x 4. */
    sr_ndarray flat = arr(SR_DTYPE_INT32, 1, 12, 0, v);
    ck_assert_sr_ok(sr_field_check_array(ids, &flat, 3, 1, &err), err);
    ck_assert_sr_code(sr_field_check_array(ids, &flat, 4, 1, &err), err, SR_E_FIELD_SHAPE);
    ck_assert_str_eq(err.msg, "ids: 12 elements in the flat wire = T x 3 for T = 4 tokens: the "
                              "trailing size is 3, the definition declares 4 (shape [T, 4])");
    sr_ndarray odd = arr(SR_DTYPE_INT32, 1, 10, 0, v);
    ck_assert_sr_code(sr_field_check_array(ids, &odd, -1, 1, &err), err, SR_E_FIELD_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a multiple of the trailing size 4"));
    v[5] = 256;
    v[9] = -1;
    ck_assert_sr_code(sr_field_check_array(ids, &a, 3, 0, &err), err, SR_E_FIELD_RANGE);
    ck_assert_str_eq(err.msg, "ids: element 5 (flat index) is 256; the definition declares "
                              "values in [0, 255] (2 of 12 elements outside)");
    float s[4] = {1.0f, -2.0f, 0.5f, 0.0f};
    sr_ndarray c = arr(SR_DTYPE_FLOAT32, 2, 2, 2, s);
    ck_assert_sr_ok(sr_field_check_array(sc, &c, 2, 0, &err), err);
    s[3] = 1.0f / 0.0f;
    ck_assert_sr_code(sr_field_check_array(sc, &c, 2, 0, &err), err, SR_E_FIELD_RANGE);
    ck_assert_ptr_nonnull(strstr(err.msg, "element 3 (flat index) is inf; the definition "
                                          "declares finite values (1 of 4"));
    sr_fields_free(f);
}
END_TEST

/* Name length, name characters and value ranges each at the limit, one before and one past. */
START_TEST(definition_limits_are_exact)
{
    sr_err err = SR_ERR_INIT;
    sr_fields *f;
    ck_assert_sr_ok(sr_fields_new(&f, &err), err);
    /* Names of 63 and 64 bytes are accepted; 65 bytes (the array full, no NUL) are not. */
    for (size_t len = SR_FIELD_NAME_MAX - 1; len <= SR_FIELD_NAME_MAX + 1; len++) {
        for (int kind = 0; kind < 2; kind++) {
            sr_field_def d = packed_def("");
            if (kind) {
                d.kind = SR_FIELD_INT_ARRAY;
                d.min = 0;
                d.max = 10;
            }
            memset(d.name, kind ? 'a' : 'b', len);
            if (len < sizeof d.name)
                d.name[len] = '\0';
            int rc = sr_fields_add(f, &d, &err);
            ck_assert_msg(rc == (len <= SR_FIELD_NAME_MAX ? 0 : SR_E_FIELD_DEF),
                          "name of %zu bytes (kind %d): rc %d", len, kind, rc);
        }
    }
    /* Printable ASCII is 0x20..0x7e: the bytes on either side of both ends. */
    const struct {
        unsigned char c;
        int ok;
    } chars[] = {{0x1f, 0}, {0x20, 1}, {0x21, 1}, {0x7d, 1}, {0x7e, 1}, {0x7f, 0}, {0x80, 0}};
    for (size_t k = 0; k < sizeof chars / sizeof chars[0]; k++) {
        sr_field_def d = packed_def("");
        snprintf(d.name, sizeof d.name, "ab%c%zu", chars[k].c, k);
        int rc = sr_fields_add(f, &d, &err);
        ck_assert_msg(rc == (chars[k].ok ? 0 : SR_E_FIELD_DEF), "byte 0x%02x: rc %d", chars[k].c,
                      rc);
    }
    /* min == max (one allowed value) is a valid range for int_array and nested; min > max not. */
    for (int kind = 0; kind < 2; kind++) {
        for (int64_t max = 2; max <= 4; max++) {
            sr_field_def d = packed_def("");
            snprintf(d.name, sizeof d.name, "range%d_%lld", kind, (long long)max);
            d.kind = kind ? SR_FIELD_NESTED : SR_FIELD_INT_ARRAY;
            d.ndim = 1;
            d.dtypes = 0;
            d.min = 3;
            d.max = max;
            int rc = sr_fields_add(f, &d, &err);
            ck_assert_msg(rc == (max >= 3 ? 0 : SR_E_FIELD_DEF), "kind %d [3, %lld]: rc %d (%s)",
                          kind, (long long)max, rc, err.msg);
        }
    }
    sr_fields_free(f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fields");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, builtins_match_the_reference);
    tcase_add_test(tc, bad_definitions_are_named);
    tcase_add_test(tc, fixture_definitions_load);
    tcase_add_test(tc, registry_file_must_be_a_small_regular_file);
    tcase_add_test(tc, json_errors_carry_line_and_column);
    tcase_add_test(tc, narrowing_keeps_registry_order);
    tcase_add_test(tc, declared_shapes_and_ranges);
    tcase_add_test(tc, arrays_are_checked_against_the_declaration);
    tcase_add_test(tc, definition_limits_are_exact);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
