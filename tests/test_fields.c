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
 * name before anything is read (a FIFO was opened with fopen before and blocked). */
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
