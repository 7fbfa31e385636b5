/*
 * The one schema (harness/spec/): every bound of the model and fields sections through both
 * loaders -- the engine's config loader and the scenario loader -- with its named error code and
 * a message that names the key (scenario messages with file:line:col); the section key lists
 * against the scenario's key table; the two shapes of an engine config; the endpoint and check
 * tables both sides share.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/scenario.h"
#include "spec/checks.h"
#include "spec/endpoints.h"
#include "spec/engine_config.h"
#include "sr_test.h"

#define DOC_MAX 8192

/* A scenario and an engine config (shape 1) that hold `model` (JSON text) and `fields`. */
static void scenario_text(char *out, size_t cap, const char *model, const char *fields)
{
    snprintf(out, cap,
             "{\"id\": \"a\", \"description\": \"d\", \"model\": %s, \"fields\": %s, "
             "\"steps\": [{\"kind\": \"rollout\"}]}",
             model, fields);
}

static void engine_text(char *out, size_t cap, const char *model, const char *fields)
{
    snprintf(out, cap, "{\"model\": %s, \"fields\": %s}", model, fields);
}

static void assert_names(const sr_err *err, const char *where, const char *key)
{
    ck_assert_msg(strncmp(err->msg, where, strlen(where)) == 0, "expected '%s...', got '%s'", where,
                  err->msg);
    ck_assert_msg(strstr(err->msg, key) != NULL, "expected '%s' in '%s'", key, err->msg);
}

/* Both loaders refuse: the scenario with scn_code, the engine with engine.invalid_config. */
static void both_refuse(const char *model, const char *fields, int scn_code, const char *key)
{
    char text[DOC_MAX];
    sr_err err = SR_ERR_INIT;
    sr_scenario *s = NULL;
    scenario_text(text, sizeof(text), model, fields);
    ck_assert_sr_code(sr_scenario_parse(&s, text, strlen(text), "t.json", &err), err, scn_code);
    ck_assert_ptr_null(s);
    assert_names(&err, "t.json:1:", key);

    sr_engine_config c;
    sr_err e2 = SR_ERR_INIT;
    engine_text(text, sizeof(text), model, fields);
    ck_assert_sr_code(sr_engine_config_parse(&c, text, strlen(text), "e.json", 0, &e2), e2,
                      SR_E_ENGINE_CONFIG);
    assert_names(&e2, "e.json:1:", key);
    sr_engine_config_release(&c);
}

/* Both loaders accept, and agree on the model. */
static void both_accept(const char *model, const char *fields, sr_engine_config *out)
{
    char text[DOC_MAX];
    sr_err err = SR_ERR_INIT;
    sr_scenario *s = NULL;
    scenario_text(text, sizeof(text), model, fields);
    ck_assert_sr_ok(sr_scenario_parse(&s, text, strlen(text), "t.json", &err), err);
    engine_text(text, sizeof(text), model, fields);
    ck_assert_sr_ok(sr_engine_config_parse(out, text, strlen(text), "e.json", 0, &err), err);
    ck_assert_int_eq(s->engine.vocab, out->vocab);
    ck_assert_int_eq(s->engine.eos_id, out->eos_id);
    ck_assert_str_eq(s->engine.model_name, out->model_name);
    ck_assert_int_eq(s->engine.num_layers, out->num_layers);
    ck_assert_int_eq(s->engine.num_stops, out->num_stops);
    ck_assert_int_eq(s->engine.routes, out->routes);
    ck_assert_int_eq(s->engine.support, out->support);
    sr_scenario_free(s);
}

#define ROUTES "[\"routed_experts\"]"

START_TEST(test_vocab_bounds)
{
    sr_engine_config c;
    /* Range: json.schema in a scenario, engine.invalid_config in an engine config. */
    both_refuse("{\"vocab\": 0}", ROUTES, SR_E_JSON_SCHEMA, "'vocab'");
    both_refuse("{\"vocab\": 2147483649}", ROUTES, SR_E_JSON_SCHEMA, "'vocab'");
    /* The oracle takes one token without EOS (the scenario loader used to require 2). */
    both_accept("{\"vocab\": 1, \"eos_id\": -1}", ROUTES, &c);
    ck_assert_int_eq(c.vocab, 1);
    sr_engine_config_release(&c);
    /* With an EOS token it needs two. */
    both_refuse("{\"vocab\": 1, \"eos_id\": 0}", ROUTES, SR_E_SCENARIO, "model.vocab");
    both_accept("{\"vocab\": 2, \"eos_id\": 1}", ROUTES, &c);
    sr_engine_config_release(&c);
    both_accept("{\"vocab\": 2147483648, \"eos_id\": 2147483647}", ROUTES, &c);
    sr_engine_config_release(&c);
}
END_TEST

START_TEST(test_eos_id_bounds)
{
    sr_engine_config c;
    /* Range -1..2^31-1 (the engine's loader used to take 2^31). */
    both_refuse("{\"eos_id\": -2}", ROUTES, SR_E_JSON_SCHEMA, "'eos_id'");
    both_refuse("{\"eos_id\": 2147483648}", ROUTES, SR_E_JSON_SCHEMA, "'eos_id'");
    /* Below vocab, named as model.eos_id, also when eos_id is the default 2. */
    both_refuse("{\"vocab\": 100, \"eos_id\": 100}", ROUTES, SR_E_SCENARIO, "model.eos_id");
    both_refuse("{\"vocab\": 2}", ROUTES, SR_E_SCENARIO, "model.eos_id");
    both_accept("{\"vocab\": 100, \"eos_id\": 99}", ROUTES, &c);
    ck_assert_int_eq(c.eos_id, 99);
    sr_engine_config_release(&c);
}
END_TEST

START_TEST(test_model_name_bounds)
{
    char name[200], model[256];
    sr_engine_config c;
    /* 127 bytes are kept whole. */
    memset(name, 'n', 127);
    name[127] = '\0';
    snprintf(model, sizeof(model), "{\"name\": \"%s\"}", name);
    both_accept(model, ROUTES, &c);
    ck_assert_str_eq(c.model_name, name);
    sr_engine_config_release(&c);
    /* 128 bytes are an error naming the key (the engine's loader used to cut them to 127). */
    memset(name, 'n', 128);
    name[128] = '\0';
    snprintf(model, sizeof(model), "{\"name\": \"%s\"}", name);
    both_refuse(model, ROUTES, SR_E_SCENARIO, "model.name");
    /* Empty is an error too (the engine's loader used to take it). */
    both_refuse("{\"name\": \"\"}", ROUTES, SR_E_SCENARIO, "model.name");
    both_refuse("{\"name\": 7}", ROUTES, SR_E_JSON_SCHEMA, "'name'");
}
END_TEST

START_TEST(test_layers_stops_topk)
{
    sr_engine_config c;
    both_refuse("{\"layer_indices\": [3, 1]}", ROUTES, SR_E_SCENARIO, "model.layer_indices");
    both_refuse("{\"layer_indices\": []}", ROUTES, SR_E_SCENARIO, "model.layer_indices");
    both_refuse("{\"layers\": 2, \"layer_indices\": [1]}", ROUTES, SR_E_SCENARIO,
                "model.layer_indices");
    both_refuse("{\"layers\": 0}", ROUTES, SR_E_JSON_SCHEMA, "'layers'");
    both_accept("{\"layers\": 3, \"layer_indices\": [1, 3, 5]}", ROUTES, &c);
    ck_assert_int_eq(c.layer_indices[2], 5);
    sr_engine_config_release(&c);
    /* Stop tokens lie in [0, vocab) (the engine's loader used to take up to 2^31-1). */
    both_refuse("{\"vocab\": 10, \"stop_sequences\": [[1, 10]]}", ROUTES, SR_E_SCENARIO,
                "model.stop_sequences");
    both_refuse("{\"stop_sequences\": [[]]}", ROUTES, SR_E_SCENARIO, "model.stop_sequences");
    both_refuse("{\"stop_sequences\": 3}", ROUTES, SR_E_SCENARIO, "model.stop_sequences");
    both_accept("{\"vocab\": 10, \"stop_sequences\": [[1, 9], [3]]}", ROUTES, &c);
    ck_assert_int_eq(c.num_stops, 2);
    ck_assert_int_eq(c.stops[0].ids[1], 9);
    sr_engine_config_release(&c);
    /* What only the oracle checks is reported under model: by both. */
    both_refuse("{\"experts\": 4, \"topk\": 8}", ROUTES, SR_E_SCENARIO, "model: ");
    both_refuse("{\"topk\": 65}", ROUTES, SR_E_JSON_SCHEMA, "'topk'");
    both_refuse("{\"eos_rate\": 1.5}", ROUTES, SR_E_JSON_SCHEMA, "'eos_rate'");
    both_refuse("{\"vocabb\": 3}", ROUTES, SR_E_JSON_SCHEMA, "'vocabb'");
}
END_TEST

START_TEST(test_fields_bounds)
{
    char fields[DOC_MAX];
    sr_engine_config c;
    /* At most SR_FIELDS_MAX entries (the engine's loader used to take any number). */
    size_t n = (size_t)snprintf(fields, sizeof(fields), "[");
    for (int i = 0; i <= SR_FIELDS_MAX; i++)
        n +=
            (size_t)snprintf(fields + n, sizeof(fields) - n, "%s\"routed_experts\"", i ? ", " : "");
    snprintf(fields + n, sizeof(fields) - n, "]");
    both_refuse("{}", fields, SR_E_SCENARIO, "fields");
    both_refuse("{}", "[\"logit_topk\"]", SR_E_SCENARIO, "fields entry");
    both_refuse("{}", "{}", SR_E_SCENARIO, "fields");
    both_accept("{}", "[\"rollout_sample_support\"]", &c);
    ck_assert_int_eq(c.routes, 0);
    ck_assert_int_eq(c.support, 1);
    sr_engine_config_release(&c);
}
END_TEST

/* A definition object: emitted by an engine config, the client's in a scenario, ignored when a
 * scenario is read as an engine config. */
START_TEST(test_field_definitions)
{
    const char *def = "{\"name\": \"logit_ids\", \"dtypes\": [\"int32\"], \"ndim\": 2}";
    char fields[512], text[DOC_MAX];
    snprintf(fields, sizeof(fields), "[\"routed_experts\", %s]", def);
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    engine_text(text, sizeof(text), "{}", fields);
    ck_assert_sr_ok(sr_engine_config_parse(&c, text, strlen(text), "e.json", 0, &err), err);
    ck_assert_int_eq(c.n_extra, 1);
    ck_assert_str_eq(c.extra[0].name, "logit_ids");
    sr_engine_config_release(&c);

    sr_scenario *s = NULL;
    scenario_text(text, sizeof(text), "{}", fields);
    ck_assert_sr_ok(sr_scenario_parse(&s, text, strlen(text), "t.json", &err), err);
    ck_assert_int_eq(s->engine.n_extra, 0);
    ck_assert_ptr_nonnull(sr_fields_find(s->fields, "logit_ids", strlen("logit_ids")));
    sr_scenario_free(s);

    snprintf(text, sizeof(text), "{\"fields\": %s, \"engines\": {\"count\": 1}}", fields);
    ck_assert_sr_ok(sr_engine_config_parse(&c, text, strlen(text), "e.json", 0, &err), err);
    ck_assert_int_eq(c.n_extra, 0);
    ck_assert_int_eq(c.routes, 1);
    sr_engine_config_release(&c);

    /* A built-in cannot be redefined for the engine. */
    both_refuse("{}", "[{\"name\": \"routed_experts\", \"dtypes\": [\"int32\"], \"ndim\": 3}]",
                SR_E_SCENARIO, "routed_experts");
}
END_TEST

START_TEST(test_seed_and_shapes)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    /* Seeds are exact JSON integers: 0..2^53 in both (the engine's loader took 2^63-1). */
    const char *ok = "{\"seed\": 9007199254740992}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, ok, strlen(ok), "e.json", 0, &err), err);
    ck_assert_uint_eq(c.seed, (uint64_t)1 << 53);
    sr_engine_config_release(&c);
    const char *big = "{\"seed\": 9007199254740994}";
    ck_assert_sr_code(sr_engine_config_parse(&c, big, strlen(big), "e.json", 0, &err), err,
                      SR_E_ENGINE_CONFIG);
    assert_names(&err, "e.json:1:", "'seed'");
    sr_engine_config_release(&c);
    sr_scenario *s = NULL;
    const char *sbig = "{\"id\": \"a\", \"description\": \"d\", \"seed\": 9007199254740994, "
                       "\"steps\": [{\"kind\": \"rollout\"}]}";
    ck_assert_sr_code(sr_scenario_parse(&s, sbig, strlen(sbig), "t.json", &err), err,
                      SR_E_JSON_SCHEMA);
    assert_names(&err, "t.json:1:", "'seed'");
    /* A scenario read as an engine config: sample_support_k, timing and server under engines,
     * the scenario's own keys ignored. */
    const char *sc = "{\"id\": \"a\", \"steps\": [], \"client\": {\"attempts\": 2},"
                     " \"engines\": {\"count\": 2, \"sample_support_k\": 9, \"urls\": null,"
                     " \"timing\": {\"prefill_ms\": 3}, \"server\": {\"threads\": 5}}}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, sc, strlen(sc), "s.json", 1, &err), err);
    ck_assert_int_eq(c.support_k, 9);
    ck_assert_int_eq(c.count, 2);
    ck_assert_int_eq(c.threads, 5);
    ck_assert(c.prefill_ms == 3.0);
    ck_assert_str_eq(c.id, "engine-1");
    sr_engine_config_release(&c);
    /* An engine config's own sections check their keys and name the section. */
    const char *typo = "{\"server\": {\"thread\": 5}}";
    ck_assert_sr_code(sr_engine_config_parse(&c, typo, strlen(typo), "e.json", 0, &err), err,
                      SR_E_ENGINE_CONFIG);
    assert_names(&err, "e.json:1:", "'thread' in server");
    sr_engine_config_release(&c);
}
END_TEST

/* 1 if the scenario's key table has exactly `keys` under `prefix.` (plus `extra`). */
static void table_has_section(const char *prefix, const char *section, const char *const *extra)
{
    const char *const *keys = sr_spec_section_keys(section);
    ck_assert_ptr_nonnull(keys);
    size_t want = 0, have = 0, plen = strlen(prefix);
    for (const char *const *k = keys; *k; k++, want++) {
        char path[128];
        snprintf(path, sizeof(path), "%s.%s", prefix, *k);
        int found = 0;
        for (size_t i = 0; i < sr_scenario_key_count() && !found; i++)
            found = strcmp(sr_scenario_key_at(i)->path, path) == 0;
        ck_assert_msg(found, "the schema has %s, the scenario's key table does not", path);
    }
    for (const char *const *k = extra; k && *k; k++)
        want++;
    for (size_t i = 0; i < sr_scenario_key_count(); i++) {
        const char *p = sr_scenario_key_at(i)->path;
        if (strncmp(p, prefix, plen) == 0 && p[plen] == '.' && !strchr(p + plen + 1, '.'))
            have++;
    }
    ck_assert_msg(have == want, "%s: the key table has %zu members, the schema %zu", prefix, have,
                  want);
}

START_TEST(test_section_keys_match_scenario_table)
{
    static const char *const weights_extra[] = {"transport", "sync_version", "serial_update",
                                                "workers", NULL};
    table_has_section("model", "model", NULL);
    table_has_section("weights", "weights", weights_extra);
    table_has_section("engines.timing", "timing", NULL);
    table_has_section("engines.server", "server", NULL);
    ck_assert_ptr_nonnull(sr_spec_section_keys(""));
    ck_assert_ptr_null(sr_spec_section_keys("steps"));
    ck_assert_ptr_null(sr_spec_section_keys(NULL));
}
END_TEST

START_TEST(test_endpoints_and_checks)
{
    for (int i = 0; i < SR_EP_COUNT; i++) {
        sr_endpoint ep = (sr_endpoint)i;
        ck_assert_ptr_nonnull(sr_endpoint_name(ep));
        ck_assert_int_eq(sr_endpoint_lookup(sr_endpoint_method(ep), sr_endpoint_path(ep)), i);
        for (int j = 0; j < i; j++)
            ck_assert_str_ne(sr_endpoint_name(ep), sr_endpoint_name((sr_endpoint)j));
    }
    ck_assert_str_eq(sr_endpoint_path(SR_EP_GENERATE), "/skyrl/v1/generate");
    ck_assert_int_eq(sr_endpoint_lookup("GET", "/skyrl/v1/generate"), -1);
    ck_assert_ptr_null(sr_endpoint_name(SR_EP_COUNT));
    ck_assert_int_eq(sr_endpoint_lookup(NULL, "/health"), -1);

    ck_assert_int_gt(sr_check_info_count(), 0);
    for (size_t i = 0; i < sr_check_info_count(); i++)
        ck_assert(sr_check_known(sr_check_info_at(i)->name));
    ck_assert(sr_check_known("trace.row_count")); /* an sr_err name */
    ck_assert(!sr_check_known("trace.row_cnt"));
    ck_assert(!sr_check_known(NULL));
    ck_assert_ptr_null(sr_check_info_at(sr_check_info_count()));
    for (int i = 0; i < SR_ROW_CLASS_COUNT; i++)
        ck_assert_int_eq(sr_row_class_lookup(sr_row_class_name((sr_row_class)i)), i);
    ck_assert_int_eq(sr_row_class_lookup("stale"), -1);
    ck_assert_int_eq(sr_row_class_lookup(NULL), -1);
}
END_TEST

/* The fault plan is parsed once, typed, by the engine config's loader too; a plan it refuses is
 * engine.invalid_config at the fault, with the plan's own message. */
/* sync_version (vLLM's weight-transfer form; spec/engine_config.h): "vllm#50902" by default, the
 * earlier "vllm#31943" when named, anything else an error at the key naming both and the nearest
 * (vllm#50902 moved packed to the init info: vllm/distributed/weight_transfer/nccl_common.py). */
START_TEST(test_sync_version_names_a_form)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    const char *dflt = "{\"sync_dialect\": \"vllm\"}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, dflt, strlen(dflt), "e.json", 0, &err), err);
    ck_assert_int_eq(c.sync_version, SR_SYNC_API_50902);
    sr_engine_config_release(&c);
    const char *old = "{\"sync_version\": \"vllm#31943\"}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, old, strlen(old), "e.json", 0, &err), err);
    ck_assert_int_eq(c.sync_version, SR_SYNC_API_31943);
    sr_engine_config_release(&c);
    const char *scn = "{\"engines\": {\"sync_version\": \"vllm#31943\"}, \"steps\": []}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, scn, strlen(scn), "s.json", 0, &err), err);
    ck_assert_int_eq(c.sync_version, SR_SYNC_API_31943);
    sr_engine_config_release(&c);
    const char *bad = "{\"sync_version\": \"vllm#50903\"}";
    ck_assert_sr_code(sr_engine_config_parse(&c, bad, strlen(bad), "e.json", 0, &err), err,
                      SR_E_ENGINE_CONFIG);
    ck_assert_msg(strstr(err.msg, "e.json:1:") &&
                      strstr(err.msg, "sync_version must be \"vllm#50902\" or \"vllm#31943\"") &&
                      strstr(err.msg, "did you mean 'vllm#50902'?"),
                  "%s", err.msg);
    sr_engine_config_release(&c);
}
END_TEST

START_TEST(test_fault_plan_is_typed)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    const char *ok = "{\"seed\": 3, \"faults\": [{\"kind\": \"reset\", \"nth\": [2]},"
                     " {\"kind\": \"truncate\", \"bytes\": 9, \"id\": \"cut\"}]}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, ok, strlen(ok), "e.json", 0, &err), err);
    ck_assert_uint_eq(sr_fault_plan_count(c.faults), 2);
    ck_assert_str_eq(sr_fault_plan_at(c.faults, 0)->id, "reset#0");
    ck_assert_int_eq(sr_fault_plan_at(c.faults, 1)->bytes, 9);
    ck_assert_ptr_nonnull(sr_fault_plan_find(c.faults, "cut"));
    sr_engine_config_release(&c);
    ck_assert_ptr_null(c.faults);
    /* A scenario-shaped document: engines.faults. JSON null: no faults. */
    const char *scn = "{\"engines\": {\"faults\": [{\"kind\": \"stall\"}]}, \"steps\": []}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, scn, strlen(scn), "s.json", 0, &err), err);
    ck_assert_int_eq(sr_fault_plan_at(c.faults, 0)->kind, SR_FK_STALL);
    sr_engine_config_release(&c);
    const char *none = "{\"faults\": null}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, none, strlen(none), "n.json", 0, &err), err);
    ck_assert_uint_eq(sr_fault_plan_count(c.faults), 0);
    sr_engine_config_release(&c);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"{\"faults\": [{\"kind\": \"reset\"},\n {\"kind\": \"resett\"}]}",
         "e.json:2:2: faults: fault 1 (resett): unknown fault kind; did you mean 'reset'? kinds "
         "(all of them: `syncroll faults`): latency, routes_all_zero, rows_p_plus_g, "},
        {"{\"faults\": [{\"kind\": \"reset\", \"id\": \"x\"}, {\"kind\": \"stall\", \"id\": "
         "\"x\"}]}",
         "e.json:1:61: faults: fault 1: id \"x\" is used twice"},
        {"{\"faults\": {\"kind\": \"reset\"}}",
         "e.json:1:2: faults: the plan must be a JSON array of fault objects"},
        {"{\"engines\": {\"faults\": [{\"kind\": \"reset\", \"bytes\": 1}]}}",
         "e.json:1:25: engines.faults: fault 0 (reset): unknown key 'bytes' in this kind of "
         "fault; valid keys: kind, id, engines, endpoints, nth, turn, probability, count"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_sr_code(
            sr_engine_config_parse(&c, bad[i].text, strlen(bad[i].text), "e.json", 0, &err), err,
            SR_E_ENGINE_CONFIG);
        /* A message that lists many names is compared on its beginning. */
        ck_assert_msg(strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) == 0,
                      "message '%s' does not start with '%s'", err.msg, bad[i].msg);
        ck_assert_ptr_null(c.faults);
        sr_engine_config_release(&c);
    }
}
END_TEST

/* model.layer_indices holds 1 to SR_ORACLE_MAX_LAYERS entries: 1023 and 1024 (with and without
 * a matching "layers") are accepted, 1025 is refused by both loaders. */
START_TEST(test_layer_count_limits_are_exact)
{
    static char model[DOC_MAX - 512];
    for (int count = SR_ORACLE_MAX_LAYERS - 1; count <= SR_ORACLE_MAX_LAYERS + 1; count++) {
        for (int with_layers = 0; with_layers < 2; with_layers++) {
            size_t n = 0;
            if (with_layers)
                n += (size_t)snprintf(model + n, sizeof model - n, "{\"layers\": %d, ", count);
            else
                n += (size_t)snprintf(model + n, sizeof model - n, "{");
            n += (size_t)snprintf(model + n, sizeof model - n, "\"layer_indices\": [");
            for (int i = 0; i < count; i++)
                n += (size_t)snprintf(model + n, sizeof model - n, "%s%d", i ? "," : "", i);
            ck_assert_uint_lt(n + 2, sizeof model);
            snprintf(model + n, sizeof model - n, "]}");
            if (count <= SR_ORACLE_MAX_LAYERS) {
                sr_engine_config c;
                both_accept(model, ROUTES, &c);
                ck_assert_int_eq(c.num_layers, count);
                ck_assert_int_eq(c.layer_indices[count - 1], count - 1);
                sr_engine_config_release(&c);
            } else if (with_layers) {
                both_refuse(model, ROUTES, SR_E_JSON_SCHEMA, "'layers'");
            } else {
                both_refuse(model, ROUTES, SR_E_SCENARIO, "model.layer_indices");
            }
        }
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("spec");
    TCase *t = tcase_create("schema");
    tcase_add_test(t, test_vocab_bounds);
    tcase_add_test(t, test_eos_id_bounds);
    tcase_add_test(t, test_model_name_bounds);
    tcase_add_test(t, test_layers_stops_topk);
    tcase_add_test(t, test_fields_bounds);
    tcase_add_test(t, test_field_definitions);
    tcase_add_test(t, test_seed_and_shapes);
    tcase_add_test(t, test_section_keys_match_scenario_table);
    tcase_add_test(t, test_endpoints_and_checks);
    tcase_add_test(t, test_fault_plan_is_typed);
    tcase_add_test(t, test_sync_version_names_a_form);
    tcase_add_test(t, test_layer_count_limits_are_exact);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
