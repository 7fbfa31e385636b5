/*
 * sr_gen_extra: arrays of fields emitted from their definition stay inside the contract
 * (dtype list, ndim, token rows, canonical ranges), are pure functions of their inputs, cover
 * every emittable dtype over requests; and the engine config accepts definition objects in
 * `fields` with named errors for the ones it cannot emit.
 */
#include <string.h>

#include "spec/engine_config.h"
#include "sr_gen_extra.h"
#include "sr_envelope.h"
#include "sr_test.h"

static sr_field_def def_of(const char *json)
{
    sr_fields *f = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_new(&f, &err), err);
    ck_assert_sr_ok(sr_fields_load_json(f, json, strlen(json), "test", &err), err);
    sr_field_def d = *sr_fields_at(f, 0);
    sr_fields_free(f);
    return d;
}

static sr_ndarray view(const sr_gen_extra *x)
{
    sr_ndarray a = SR_NDARRAY_INIT;
    a.dtype = x->dtype;
    a.ndim = x->ndim;
    memcpy(a.shape, x->shape, sizeof(a.shape));
    a.data = x->bytes;
    a.nbytes = x->nbytes;
    return a;
}

START_TEST(canonical_values_fit_their_dtype)
{
    sr_field_def d = def_of("{\"fields\":[{\"name\":\"load\",\"dtypes\":[\"uint8\",\"int16\","
                            "\"int32\",\"int64\"],\"ndim\":3,\"canonical\":true}]}");
    ck_assert_uint_eq(sr_gen_extra_dtypes(&d), SR_ROUTE_DTYPES);
    sr_dtype_set seen = 0;
    for (int32_t r = 0; r < 64; r++) {
        int32_t prompt[2] = {r, 7}, gen[3] = {1, 2, r};
        sr_gen_extra x;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_gen_extra_make(&x, &d, 5, prompt, 2, gen, 3, 0, &err), err);
        ck_assert_int_eq(x.ndim, 3);
        ck_assert(x.shape[0] >= 1 && x.shape[0] <= 4); /* not token rows */
        sr_ndarray a = view(&x);
        /* The splice's own canonical check is the judge. */
        ck_assert_sr_ok(sr_routes_check_canonical(&a, "load", &err), err);
        seen |= SR_DTYPE_BIT(x.dtype);
        sr_gen_extra_release(&x);
    }
    ck_assert_uint_eq(seen, SR_ROUTE_DTYPES);
}
END_TEST

START_TEST(token_rows_shape_and_determinism)
{
    sr_field_def d = def_of("{\"fields\":[{\"name\":\"topk\",\"dtypes\":[\"float16\",\"float32\","
                            "\"bool\"],\"ndim\":2,\"token_rows\":true}]}");
    int32_t prompt[3] = {4, 5, 6}, gen[5] = {9, 8, 7, 6, 5};
    sr_gen_extra a, b, c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_gen_extra_make(&a, &d, 1, prompt, 3, gen, 5, 0, &err), err);
    ck_assert_sr_ok(sr_gen_extra_make(&b, &d, 1, prompt, 3, gen, 5, 0, &err), err);
    ck_assert_sr_ok(sr_gen_extra_make(&c, &d, 2, prompt, 3, gen, 5, 0, &err), err);
    ck_assert_int_eq(a.shape[0], 5);
    ck_assert_int_eq(a.shape[1], c.shape[1]); /* the width is fixed per field */
    ck_assert(d.dtypes & SR_DTYPE_BIT(a.dtype));
    ck_assert_uint_eq(a.nbytes, b.nbytes);
    ck_assert_int_eq(memcmp(a.bytes, b.bytes, a.nbytes), 0);
    if (a.dtype == SR_DTYPE_BOOL)
        for (size_t i = 0; i < a.nbytes; i++)
            ck_assert_uint_le(a.bytes[i], 1);
    sr_gen_extra_release(&a);
    sr_gen_extra_release(&b);
    sr_gen_extra_release(&c);
}
END_TEST

/* A declared shape and range: the engine emits [T, 8] (and a "*" axis, 1..4) with every value
 * inside the range, in every dtype it picks. */
START_TEST(declared_shape_and_range_are_emitted)
{
    sr_field_def d = def_of("{\"fields\":[{\"name\":\"logit_topk\",\"dtypes\":[\"float16\","
                            "\"float32\",\"float64\"],\"shape\":[\"T\",8],\"range\":[-0.5,2]}]}");
    sr_field_def ids = def_of("{\"fields\":[{\"name\":\"topk_ids\",\"dtypes\":[\"uint8\","
                              "\"int16\",\"int64\"],\"shape\":[\"*\",3,2],\"range\":[7,300]}]}");
    sr_err err = SR_ERR_INIT;
    /* uint8 cannot hold 256..300 but holds 7..255: all three dtypes stay emittable. */
    ck_assert_uint_eq(sr_gen_extra_dtypes(&ids), ids.dtypes);
    for (int32_t k = 0; k < 24; k++) {
        int32_t prompt[2] = {k, 3}, gen[5] = {9, 8, 7, 6, k};
        sr_gen_extra x;
        ck_assert_sr_ok(sr_gen_extra_make(&x, &d, 1, prompt, 2, gen, 5, 0, &err), err);
        sr_ndarray a = view(&x);
        ck_assert_int_eq(x.ndim, 2);
        ck_assert_int_eq(x.shape[0], 5);
        ck_assert_int_eq(x.shape[1], 8);
        ck_assert_sr_ok(sr_field_check_array(&d, &a, 5, 0, &err), err);
        sr_gen_extra_release(&x);
        ck_assert_sr_ok(sr_gen_extra_make(&x, &ids, 1, prompt, 2, gen, 5, 0, &err), err);
        a = view(&x);
        ck_assert_int_eq(x.ndim, 3);
        ck_assert(x.shape[0] >= 1 && x.shape[0] <= 4);
        ck_assert_int_eq(x.shape[1], 3);
        ck_assert_int_eq(x.shape[2], 2);
        ck_assert_sr_ok(sr_field_check_array(&ids, &a, -1, 0, &err), err);
        sr_gen_extra_release(&x);
    }
    /* A range no listed dtype can hold leaves nothing to emit. */
    sr_field_def none = def_of("{\"fields\":[{\"name\":\"small\",\"dtypes\":[\"uint8\"],"
                               "\"ndim\":1,\"range\":[300,400]}]}");
    ck_assert_uint_eq(sr_gen_extra_dtypes(&none), 0);
}
END_TEST

START_TEST(refusals_are_named)
{
    sr_field_def d = def_of(
        "{\"fields\":[{\"name\":\"u\",\"dtypes\":[\"uint16\"],\"ndim\":1,\"canonical\":true}]}");
    sr_gen_extra x;
    sr_err err = SR_ERR_INIT;
    int32_t t[1] = {1};
    ck_assert_sr_code(sr_gen_extra_make(&x, &d, 1, t, 1, t, 1, 0, &err), err, SR_E_ENGINE_CONFIG);
    sr_field_def big =
        def_of("{\"fields\":[{\"name\":\"b\",\"dtypes\":[\"int64\"],\"ndim\":1,\"token_rows\":"
               "true}]}");
    int32_t g[4] = {1, 2, 3, 4};
    ck_assert_sr_code(sr_gen_extra_make(&x, &big, 1, t, 1, g, 4, 16, &err), err, SR_E_LIMIT);
}
END_TEST

START_TEST(engine_config_definitions)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    const char *ok = "{\"fields\":[\"routed_experts\",{\"name\":\"topk\",\"dtypes\":[\"int32\"],"
                     "\"ndim\":2}]}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, ok, strlen(ok), "t", 0, &err), err);
    ck_assert_int_eq(c.routes, 1);
    ck_assert_int_eq(c.n_extra, 1);
    ck_assert_str_eq(c.extra[0].name, "topk");
    sr_engine_config_release(&c);
    const char *builtin = "{\"fields\":[{\"name\":\"rollout_sample_support\",\"dtypes\":"
                          "[\"int32\"],\"ndim\":2}]}";
    ck_assert_sr_code(sr_engine_config_parse(&c, builtin, strlen(builtin), "t", 0, &err), err,
                      SR_E_ENGINE_CONFIG);
    sr_engine_config_release(&c);
    const char *twice = "{\"fields\":[{\"name\":\"a\",\"dtypes\":[\"int32\"],\"ndim\":1},"
                        "{\"name\":\"a\",\"dtypes\":[\"int32\"],\"ndim\":1}]}";
    ck_assert_sr_code(sr_engine_config_parse(&c, twice, strlen(twice), "t", 0, &err), err,
                      SR_E_ENGINE_CONFIG);
    sr_engine_config_release(&c);
    /* A scenario's definitions are the client's: the engine ignores them. */
    const char *scn = "{\"engines\":{\"count\":1},\"fields\":[\"routed_experts\",{\"name\":\"a\","
                      "\"dtypes\":[\"int32\"],\"ndim\":1}]}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, scn, strlen(scn), "t", 0, &err), err);
    ck_assert_int_eq(c.n_extra, 0);
    sr_engine_config_release(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gen_extra");
    TCase *t = tcase_create("gen_extra");
    tcase_add_test(t, canonical_values_fit_their_dtype);
    tcase_add_test(t, token_rows_shape_and_determinism);
    tcase_add_test(t, refusals_are_named);
    tcase_add_test(t, declared_shape_and_range_are_emitted);
    tcase_add_test(t, engine_config_definitions);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
