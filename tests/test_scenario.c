/*
 * The scenario format: the key table against scenarios/FORMAT.md (both ways), quirks, checks and
 * classifications against their documentation, loader errors with file:line:col, defaults, and
 * the expanded writer (every key of the table written, and a round trip that changes nothing).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "run/rollout.h"
#include "run/runner_steps.h"
#include "scenario/scenario.h"
#include "sr_pool.h"
#include "sr_replay_config.h"
#include "sr_test.h"
#include "sr_trace.h"
#include "spec/checks.h"

/* Every quirk field of the code base: a new one makes these fail until FORMAT.md and the quirk
 * table list it. */
_Static_assert(sizeof(sr_client_quirks) == 6 * sizeof(int), "client quirks changed");
_Static_assert(sizeof(sr_rollout_quirks) == 3 * sizeof(int), "rollout quirks changed");
_Static_assert(SR_QUIRK_COUNT == 14, "quirk table changed");

#define MAX_DOC 4096

typedef struct doc_rows {
    char *v[MAX_DOC];
    int n;
} doc_rows;

/* The first cells (between backticks) of the rows of every table in FORMAT.md whose header's
 * first cell is `header` (the documented convention). */
static void doc_first_cells(doc_rows *out, const char *header)
{
    char *text = sr_test_read_all(SYNCROLL_SOURCE_DIR "/scenarios/FORMAT.md");
    out->n = 0;
    int in_table = 0;
    char want[64];
    snprintf(want, sizeof(want), "| %s |", header);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] != '|') {
            in_table = 0;
            continue;
        }
        if (strncmp(line, want, strlen(want)) == 0) {
            in_table = 1;
            continue;
        }
        if (!in_table || strncmp(line, "| `", 3) != 0)
            continue;
        char *end = strchr(line + 3, '`');
        ck_assert_msg(end != NULL, "unterminated key cell: %s", line);
        ck_assert_int_lt(out->n, MAX_DOC);
        out->v[out->n++] = strndup(line + 3, (size_t)(end - line - 3));
    }
    free(text);
}

static void doc_free(doc_rows *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->v[i]);
}

static int doc_has(const doc_rows *d, const char *s)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->v[i], s) == 0)
            return 1;
    return 0;
}

START_TEST(test_keys_match_format_md)
{
    doc_rows d;
    doc_first_cells(&d, "key");
    ck_assert_int_gt(d.n, 50);
    for (size_t i = 0; i < sr_scenario_key_count(); i++)
        ck_assert_msg(doc_has(&d, sr_scenario_key_at(i)->path),
                      "the loader accepts `%s`, which FORMAT.md does not document",
                      sr_scenario_key_at(i)->path);
    for (int i = 0; i < d.n; i++) {
        int found = 0;
        for (size_t k = 0; k < sr_scenario_key_count() && !found; k++)
            found = strcmp(sr_scenario_key_at(k)->path, d.v[i]) == 0;
        ck_assert_msg(found, "FORMAT.md documents `%s`, which the loader does not accept", d.v[i]);
    }
    /* No key twice in either. */
    for (int i = 0; i < d.n; i++)
        for (int j = 0; j < i; j++)
            ck_assert_msg(strcmp(d.v[i], d.v[j]) != 0, "FORMAT.md documents `%s` twice", d.v[i]);
    doc_free(&d);
}
END_TEST

START_TEST(test_quirks_checks_classes_documented)
{
    doc_rows q, c, k;
    doc_first_cells(&q, "quirk");
    doc_first_cells(&c, "check");
    doc_first_cells(&k, "classification");
    ck_assert_int_eq(q.n, SR_QUIRK_COUNT);
    for (int i = 0; i < SR_QUIRK_COUNT; i++)
        ck_assert_msg(doc_has(&q, sr_quirk_info_of((sr_quirk)i)->name), "quirk %s undocumented",
                      sr_quirk_info_of((sr_quirk)i)->name);
    ck_assert_int_eq((size_t)c.n, sr_check_info_count());
    for (size_t i = 0; i < sr_check_info_count(); i++)
        ck_assert_msg(doc_has(&c, sr_check_info_at(i)->name), "check %s undocumented",
                      sr_check_info_at(i)->name);
    ck_assert_int_eq(k.n, SR_ROW_CLASS_COUNT);
    for (int i = 0; i < SR_ROW_CLASS_COUNT; i++)
        ck_assert(doc_has(&k, sr_row_class_name((sr_row_class)i)));
    doc_free(&q);
    doc_free(&c);
    doc_free(&k);
}
END_TEST

/* ---- loading ---- */

static sr_scenario *load_ok(const char *text)
{
    sr_scenario *s = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&s, text, strlen(text), "t.json", &err), err);
    return s;
}

/* Loads text that must fail with `code` and a message starting with `where`. */
static void load_bad(const char *text, int code, const char *where, const char *needle)
{
    sr_scenario *s = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_scenario_parse(&s, text, strlen(text), "t.json", &err), err, code);
    ck_assert_ptr_null(s);
    ck_assert_msg(strncmp(err.msg, where, strlen(where)) == 0, "expected '%s...', got '%s'", where,
                  err.msg);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "expected '%s' in '%s'", needle, err.msg);
}

#define MIN_STEPS "\"steps\": [{\"kind\": \"rollout\"}]"

START_TEST(test_defaults)
{
    sr_scenario *s = load_ok("{\"id\": \"a\", \"description\": \"d\", " MIN_STEPS "}");
    ck_assert_str_eq(s->id, "a");
    ck_assert_int_eq(s->seed, 1);
    ck_assert_int_eq(s->engine.count, 1);
    ck_assert_int_eq(s->engine.vocab, 32000);
    ck_assert_int_eq(s->engine.routes, 1);
    ck_assert_int_eq(s->client.max_attempts, 5);
    ck_assert_int_eq(s->client.on_abort, SR_CLIENT_ABORT_FAIL);
    ck_assert_int_eq(s->concurrency, 8);
    ck_assert_int_eq(s->n_steps, 1);
    ck_assert_str_eq(s->steps[0].name, "rollout-0");
    ck_assert_int_eq(s->steps[0].rollout.batch, 1);
    ck_assert_int_eq(s->steps[0].rollout.multi_turn, 1);
    ck_assert_int_eq(s->expect_verdict, SR_VERDICT_PASS);
    ck_assert_ptr_null(s->skip);
    sr_scenario_free(s);
}
END_TEST

START_TEST(test_errors_have_positions)
{
    /* A misspelled key, with its line and column. */
    load_bad("{\"id\": \"a\", \"description\": \"d\",\n  \"model\": {\"expertz\": 8},\n" MIN_STEPS
             "}",
             SR_E_JSON_SCHEMA, "t.json:2:13: ", "unknown key 'expertz' in model");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"sed\": 1, " MIN_STEPS "}", SR_E_JSON_SCHEMA,
             "t.json:1:33: ", "unknown key 'sed'");
    /* Wrong type, out of range, missing required keys. */
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"seed\": \"7\", " MIN_STEPS "}",
             SR_E_JSON_SCHEMA, "t.json:1:33: ", "must be an integer");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"count\": 65}, " MIN_STEPS "}",
             SR_E_JSON_SCHEMA, "t.json:1:45: ", "outside [1, 64]");
    load_bad("{\"description\": \"d\", " MIN_STEPS "}", SR_E_JSON_SCHEMA,
             "t.json:1:1: ", "missing required key 'id'");
    load_bad("{\"id\": \"a\", \"description\": \"d\"}", SR_E_JSON_SCHEMA,
             "t.json:1:1: ", "missing required key 'steps'");
    load_bad("{\"id\": \"a b\", \"description\": \"d\", " MIN_STEPS "}", SR_E_SCENARIO,
             "t.json:1:2: ", "id must be");
    /* Step keys are per kind. */
    load_bad("{\"id\": \"a\", \"description\": \"d\",\n \"steps\": [{\"kind\": \"pause\", "
             "\"batch\": 2}]}",
             SR_E_JSON_SCHEMA, "t.json:2:30: ", "unknown key 'batch' in steps.pause");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"nap\"}]}",
             SR_E_JSON_SCHEMA, "t.json:1:44: ", "unknown step kind 'nap'");
    /* client.on_abort names one of its policies, and lint lists them. */
    load_bad("{\"id\": \"a\", \"description\": \"d\",\n \"client\": {\"on_abort\": "
             "\"resume\"}, " MIN_STEPS "}",
             SR_E_JSON_SCHEMA, "t.json:2:13: ", "'on_abort' must be one of \"fail\", \"retry\"");
    /* Invalid JSON. */
    load_bad("{\"id\": \"a\",,}", SR_E_JSON_SYNTAX, "t.json:1:", "invalid JSON");
}
END_TEST

START_TEST(test_semantic_errors)
{
    /* References to steps. */
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"wait\", \"for\": "
             "[\"nope\"]}]}",
             SR_E_SCENARIO, "t.json:1:", "not the name of an earlier step");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"rollout\", "
             "\"name\": \"r\"}, {\"kind\": \"wait\", \"for\": [\"r\"]}]}",
             SR_E_SCENARIO, "t.json:1:", "not async");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"collate\"}]}",
             SR_E_SCENARIO, "t.json:1:", "needs an earlier rollout step");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"rollout\", "
             "\"name\": \"r\"}, {\"kind\": \"rollout\", \"name\": \"r\"}]}",
             SR_E_SCENARIO, "t.json:1:", "used twice");
    /* Engine indices, quirks, checks, classifications, phases. */
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"steps\": [{\"kind\": \"pause\", "
             "\"engine\": 1}]}",
             SR_E_SCENARIO, "t.json:1:", "the scenario has 1 engine");
    load_bad(
        "{\"id\": \"a\", \"description\": \"d\", \"client\": {\"quirks\": [\"nope\"]}, " MIN_STEPS
        "}",
        SR_E_SCENARIO, "t.json:1:", "unknown quirk");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"client\": {\"quirks\": "
             "[\"lock_first_dtype\", \"lock_first_dtype\"]}, " MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:1:", "quirk lock_first_dtype is listed twice");
    load_bad("{\"id\": \"a\", \"description\": \"d\", " MIN_STEPS
             ", \"expect\": {\"verdict\": \"fail\", \"checks\": [\"trace.row_mismach\"]}}",
             SR_E_SCENARIO, "t.json:1:", "not a check name");
    load_bad("{\"id\": \"a\", \"description\": \"d\", " MIN_STEPS ", \"expect\": {\"verdict\": "
             "\"fail\", \"checks\": [\"trace.row_count\"], \"classifications\": [\"off_by_one\"]}}",
             SR_E_SCENARIO, "t.json:1:", "need trace.row_mismatch");
    load_bad("{\"id\": \"a\", \"description\": \"d\", " MIN_STEPS
             ", \"expect\": {\"verdict\": \"fail\"}}",
             SR_E_SCENARIO, "t.json:1:", "needs the checks");
    load_bad("{\"id\": \"a\", \"description\": \"d\", " MIN_STEPS
             ", \"budgets\": [{\"phase\": \"lunch\", \"percentile\": 50, \"max_ms\": 1}]}",
             SR_E_SCENARIO, "t.json:1:", "unknown phase 'lunch'");
    /* A fault the engine would refuse points at the fault. */
    load_bad("{\"id\": \"a\", \"description\": \"d\",\n \"engines\": {\"faults\": [{\"kind\": "
             "\"reset\"}, {\"kind\": \"teleport\"}]},\n" MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:2:44: ", "engines.faults");
    /* The plan is parsed whole: a repeated id is the engine's own message, at the later id (or
     * at the fault whose default id it is). */
    load_bad("{\"id\": \"a\", \"description\": \"d\",\n \"engines\": {\"faults\": [{\"kind\": "
             "\"reset\", \"id\": \"x\"}, {\"kind\": \"stall\", \"id\": \"x\"}]},\n" MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:2:73: ", "engines.faults: fault 1: id \"x\" is used twice");
    load_bad("{\"id\": \"a\", \"description\": \"d\",\n \"engines\": {\"faults\": [{\"kind\": "
             "\"stall\", \"id\": \"reset#1\"}, {\"kind\": \"reset\"}]},\n" MIN_STEPS "}",
             SR_E_SCENARIO,
             "t.json:2:61: ", "engines.faults: fault 1: id \"reset#1\" is used twice");
    load_bad(
        "{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"faults\": []}, \"steps\": "
        "[{\"kind\": \"rollout\"}, {\"kind\": \"check_state\", \"faults_fired\": {\"x\": 1}}]}",
        SR_E_SCENARIO, "t.json:1:", "no fault of engines.faults has the id 'x'");
    /* The model is judged by the oracle. */
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"model\": {\"experts\": 4, \"topk\": "
             "8}, " MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:1:", "model:");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"urls\": "
             "[\"http://x:1\"]}, \"steps\": [{\"kind\": \"kill_engine\"}]}",
             SR_E_SCENARIO, "t.json:1:", "cannot kill external engines");
    load_bad(
        "{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"server\": {\"max_seq\": 64}}, "
        "\"steps\": [{\"kind\": \"rollout\", \"turns\": 4, \"max_tokens\": 16}]}",
        SR_E_SCENARIO, "t.json:1:", "more than engines.server.max_seq");
    /* weights.serial_update updates one engine at a time: not a broadcast, written or taken from
     * the plane, nor one that a dialect's execution would take. */
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"weights\": {\"transport\": "
             "\"broadcast\", \"serial_update\": true}, " MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:1:", "serial_update needs the delta or disk transport");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"sync_dialect\": "
             "\"vllm\"}, \"weights\": {\"serial_update\": true}, " MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:1:", "serial_update needs the delta or disk transport");
    load_bad(
        "{\"id\": \"a\", \"description\": \"d\", \"weights\": {\"serial_update\": 1}, " MIN_STEPS
        "}",
        SR_E_JSON_SCHEMA, "t.json:1:45: ", "'serial_update' must be true or false");
    static const char *const ok[] = {"delta", "disk", "broadcast"};
    for (int i = 0; i < 3; i++) {
        char text[400];
        snprintf(text, sizeof(text),
                 "{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"dialects\": "
                 "[\"vllm\"], \"sync_dialect\": \"%s\"}, \"weights\": {\"transport\": \"%s\", "
                 "\"serial_update\": %s}, " MIN_STEPS "}",
                 i == 1 ? "sglang" : "skyrl", ok[i], i < 2 ? "true" : "false");
        sr_scenario *s = NULL;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_scenario_parse(&s, text, strlen(text), "t.json", &err), err);
        ck_assert_int_eq(s->serial_update, i < 2);
        ck_assert_sr_ok(sr_scenario_for_dialect(s, SR_DIALECT_VLLM, &err), err);
        sr_scenario_free(s);
    }
    /* Unwritten transport: the vllm execution's plane takes a broadcast, which is refused. */
    const char *exec = "{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"dialects\": "
                       "[\"vllm\"]}, \"weights\": {\"serial_update\": true}, " MIN_STEPS "}";
    sr_scenario *s = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&s, exec, strlen(exec), "t.json", &err), err);
    ck_assert_sr_code(sr_scenario_for_dialect(s, SR_DIALECT_VLLM, &err), err, SR_E_SCENARIO);
    ck_assert_msg(strstr(err.msg, "vllm execution (engines.dialects): weights.serial_update needs"),
                  "%s", err.msg);
    sr_scenario_free(s);
}
END_TEST

/* vllm-project/vllm#57025's omission is vLLM's, sgl-project/sglang#36404's masked padding
 * SGLang's; a probe (session-less, comparing repeated replies) cannot run against omission. */
START_TEST(test_stack_options_need_their_dialect)
{
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"dialect\": \"sglang\", "
             "\"omit_prefix_routes\": true}, " MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:1:", "omit_prefix_routes needs the vllm dialect");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"dialect\": \"vllm\", "
             "\"dialects\": [\"vllm\", \"skyrl\"], \"omit_prefix_routes\": true}, " MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:1:", "needs the vllm dialect only");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"dialect\": \"vllm\", "
             "\"omit_prefix_routes\": true}, \"steps\": [{\"kind\": \"probe\"}]}",
             SR_E_SCENARIO,
             "t.json:1:", "a probe step cannot run against engines.omit_prefix_routes");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"dialect\": \"vllm\", "
             "\"masked_padding\": {\"chunk\": 16}}, " MIN_STEPS "}",
             SR_E_SCENARIO, "t.json:1:", "masked_padding needs the sglang dialect");
    load_bad("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"dialect\": \"sglang\", "
             "\"masked_padding\": {\"chunk\": 16, \"rows\": 17}}, " MIN_STEPS "}",
             SR_E_JSON_SCHEMA, "t.json:1:98: ", "'rows' is 17, outside [1, 16]");
    load_bad(
        "{\"id\": \"a\", \"description\": \"d\", \"client\": {\"route_start\": \"one\"}, " MIN_STEPS
        "}",
        SR_E_JSON_SCHEMA, "t.json:1:44: ", "must be one of \"held\", \"zero\"");
    sr_scenario *s = load_ok("{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"dialect\": "
                             "\"sglang\", \"masked_padding\": {\"chunk\": 16, \"rows\": 3}}, "
                             "\"client\": {\"route_start\": \"zero\"}, " MIN_STEPS "}");
    ck_assert_int_eq(s->engine.mask_chunk, 16);
    ck_assert_int_eq(s->engine.mask_rows, 3);
    ck_assert_int_eq(s->client.route_start_zero, 1);
    sr_scenario_free(s);
}
END_TEST

START_TEST(test_values)
{
    sr_scenario *s = load_ok(
        "{\"id\": \"v\", \"description\": \"d\", \"seed\": 9, \"tags\": [\"x\", \"y\"],"
        " \"model\": {\"layer_indices\": [1, 3], \"experts\": 300, \"topk\": 2, \"eos_id\": -1},"
        " \"fields\": [\"routed_experts\", {\"name\": \"logit_topk\", \"dtypes\": [\"int32\"],"
        "   \"ndim\": 2}],"
        " \"engines\": {\"count\": 3, \"faults\": [{\"kind\": \"reset\", \"id\": \"cut\"}]},"
        " \"client\": {\"quirks\": [\"no_prompt_start\", \"vpp1_rejected\"], \"concurrency\": 2,"
        "   \"strict_base64\": true},"
        " \"pool\": {\"cores\": 4, \"affinity\": \"error\"},"
        " \"trainer\": {\"virtual_pipeline_size\": 1},"
        " \"steps\": [{\"kind\": \"rollout\", \"name\": \"r\", \"async\": true,"
        "   \"prompt_tokens\": {\"max\": 2}},"
        "  {\"kind\": \"wait\", \"for\": [\"r\"]}, {\"kind\": \"collate\"},"
        "  {\"kind\": \"check_state\", \"engine\": 2, \"paused\": false,"
        "   \"requests\": {\"generate\": 3}, \"faults_fired\": {\"cut\": 1}},"
        "  {\"kind\": \"kill_engine\", \"engine\": 2, \"signal\": \"TERM\"}],"
        " \"expect\": {\"verdict\": \"fail\", \"checks\": [\"engine.crashed\"]},"
        " \"budgets\": [{\"phase\": \"request\", \"percentile\": 99.9, \"max_ms\": 5}]}");
    ck_assert_int_eq(s->seed, 9);
    ck_assert_int_eq(s->engine.seed, 9);
    ck_assert_int_eq(s->n_tags, 2);
    ck_assert_int_eq(s->engine.num_layers, 2);
    ck_assert_int_eq(s->engine.layer_indices[1], 3);
    ck_assert_int_eq(s->engine.eos_id, -1);
    ck_assert_ptr_nonnull(sr_fields_find(s->fields, "logit_topk", 10));
    ck_assert_int_eq(s->engine.count, 3);
    ck_assert(s->quirks[SR_QUIRK_NO_PROMPT_START] && s->quirks[SR_QUIRK_VPP1_REJECTED]);
    ck_assert(!s->quirks[SR_QUIRK_LOCK_FIRST_DTYPE]);
    ck_assert_int_eq(s->client.strict_base64, 1);
    ck_assert_int_eq(s->pool_cores, 4);
    ck_assert_int_eq(s->affinity_fails, 1);
    ck_assert(s->vpp_set && s->vpp == 1);
    ck_assert_int_eq(s->steps[0].rollout.prompt_min, 2);
    ck_assert_int_eq(s->steps[0].rollout.prompt_max, 2);
    ck_assert_int_eq(s->steps[1].wait.n_for, 1);
    ck_assert_int_eq(s->steps[2].collate.rollouts[0], 0);
    ck_assert_int_eq(s->steps[3].check.paused, 0);
    ck_assert_int_eq(s->steps[3].check.requests[SR_EP_GENERATE], 3);
    ck_assert_int_eq(s->steps[3].check.requests[SR_EP_PAUSE], SR_SCN_UNCHECKED);
    ck_assert_int_eq(s->steps[3].check.weight_version, SR_SCN_UNCHECKED);
    ck_assert_int_eq(s->steps[4].kill.sig_name[0], 'T');
    ck_assert_int_eq(s->budgets[0].phase, SR_PHASE_REQUEST);
    sr_scenario_free(s);
}
END_TEST

/* ---- the expanded writer ---- */

/* Collects the table paths present in an expanded document. */
static void collect(const cJSON *node, const char *path, doc_rows *seen)
{
    if (cJSON_IsArray(node)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, node) collect(e, path, seen);
        return;
    }
    if (!cJSON_IsObject(node))
        return;
    const cJSON *kind = strcmp(path, "steps") == 0 ? cJSON_GetObjectItem(node, "kind") : NULL;
    const cJSON *m;
    cJSON_ArrayForEach(m, node)
    {
        char p[256];
        if (kind && (strcmp(m->string, "kind") == 0 || strcmp(m->string, "name") == 0))
            snprintf(p, sizeof(p), "steps.*.%s", m->string);
        else if (kind)
            snprintf(p, sizeof(p), "steps.%s.%s", kind->valuestring, m->string);
        else
            snprintf(p, sizeof(p), "%s%s%s", path, path[0] ? "." : "", m->string);
        if (!doc_has(seen, p) && seen->n < MAX_DOC)
            seen->v[seen->n++] = strdup(p);
        const char *type = NULL;
        for (size_t i = 0; i < sr_scenario_key_count(); i++)
            if (strcmp(sr_scenario_key_at(i)->path, p) == 0)
                type = sr_scenario_key_at(i)->type;
        ck_assert_msg(type != NULL, "the expanded writer wrote `%s`, which is not in the table", p);
        if (strcmp(type, "map") != 0 && strcmp(type, "plan") != 0 && strcmp(p, "fields") != 0)
            collect(m, kind ? (strncmp(p, "steps.*", 7) ? p : "steps") : p, seen);
    }
}

static char *expand(const sr_scenario *s)
{
    sr_buf b = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_expanded_json(&b, s, &err), err);
    return b.data;
}

/* Expands a scenario, reloads the expansion, expands again: the texts must be identical. */
static void round_trip(const sr_scenario *s, doc_rows *seen)
{
    char *a = expand(s);
    sr_scenario *s2 = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&s2, a, strlen(a), "expanded.json", &err), err);
    char *b = expand(s2);
    ck_assert_str_eq(a, b);
    cJSON *doc = cJSON_Parse(a);
    ck_assert_ptr_nonnull(doc);
    collect(doc, "", seen);
    cJSON_Delete(doc);
    free(a);
    free(b);
    sr_scenario_free(s2);
}

START_TEST(test_expanded_round_trip_covers_every_key)
{
    doc_rows seen = {{0}, 0};
    char *paths[] = {SYNCROLL_SOURCE_DIR "/scenarios", SYNCROLL_SOURCE_DIR "/tests/scenarios"};
    char **files = NULL;
    size_t n = 0;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_files(&files, &n, paths, 2, &err), err);
    for (size_t i = 0; i < n; i++) {
        if (strstr(files[i], "/malformed/"))
            continue;
        sr_scenario *s = NULL;
        ck_assert_sr_ok(sr_scenario_load(&s, files[i], &err), err);
        round_trip(s, &seen);
        sr_scenario_free(s);
    }
    sr_scenario_files_free(files, n);
    /* Every key of the table appears in some expanded scenario, so the writer covers it. */
    for (size_t i = 0; i < sr_scenario_key_count(); i++) {
        const char *p = sr_scenario_key_at(i)->path;
        ck_assert_msg(doc_has(&seen, p), "no expanded scenario writes `%s`", p);
    }
    doc_free(&seen);
}
END_TEST

/* The engine config the runner writes carries the scenario's typed plan: the engine loads the
 * same faults, member for member, and check_state finds faults by their (default) ids. */
START_TEST(test_engine_config_carries_the_plan)
{
    sr_scenario *s = load_ok(
        "{\"id\": \"f\", \"description\": \"d\", \"engines\": {\"count\": 2, \"faults\": ["
        "{\"kind\": \"truncate\", \"bytes\": 1000000000000000, \"nth\": [2], \"engines\": [1]},"
        " {\"kind\": \"latency\", \"dist\": \"uniform\", \"min_ms\": 1, \"max_ms\": 2.5,"
        "  \"probability\": 0.25, \"id\": \"slow\"},"
        " {\"kind\": \"http_429\", \"endpoints\": [\"update_weights\"], \"count\": 1}]},"
        " \"steps\": [{\"kind\": \"rollout\"},"
        "  {\"kind\": \"check_state\", \"faults_fired\": {\"truncate#0\": 0, \"slow\": 1}}]}");
    ck_assert_uint_eq(sr_fault_plan_count(s->engine.faults), 3);
    ck_assert_str_eq(sr_fault_plan_at(s->engine.faults, 2)->id, "http_429#2");
    char path[] = "/tmp/syncroll_test_engine_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_write_engine(s, path, NULL, &err), err);
    sr_engine_config c;
    ck_assert_sr_ok(sr_engine_config_load(&c, path, 1, &err), err);
    unlink(path);
    ck_assert_uint_eq(sr_fault_plan_count(c.faults), 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_mem_eq(sr_fault_plan_at(c.faults, i), sr_fault_plan_at(s->engine.faults, i),
                         sizeof(sr_fault));
    sr_engine_config_release(&c);
    sr_scenario_free(s);
}
END_TEST

START_TEST(test_seed_override_and_names)
{
    sr_scenario *s = load_ok("{\"id\": \"a\", \"description\": \"d\", " MIN_STEPS "}");
    sr_scenario_set_seed(s, 42);
    ck_assert_int_eq(s->seed, 42);
    ck_assert_int_eq(s->engine.seed, 42);
    ck_assert_int_eq(s->client.seed, 42);
    sr_scenario_free(s);
    ck_assert(sr_scenario_known_check("trace.row_count"));
    ck_assert(sr_scenario_known_check("collate.padding_mask"));
    ck_assert(!sr_scenario_known_check("trace.row_cnt"));
    ck_assert(sr_scenario_known_class("stale_weights"));
    ck_assert(!sr_scenario_known_class("stale"));
    ck_assert_str_eq(sr_step_kind_name(SR_STEP_KILL_ENGINE), "kill_engine");
    ck_assert_ptr_null(sr_step_kind_name(SR_STEP_KIND_COUNT));
}
END_TEST

/* The longest trajectory (prompt max + turns * (max_tokens + 1 + observation max)) against
 * engines.server.max_seq at, one below and one above: each term of the sum counts. */
START_TEST(test_longest_trajectory_limit_is_exact)
{
    const struct {
        int turns, max_tokens, obs_max;
        int64_t longest;
    } shapes[] = {{1, 20, 0, 31}, {2, 10, 0, 32}, {2, 5, 5, 32}, {3, 3, 1, 25}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        for (int64_t seq = shapes[k].longest - 1; seq <= shapes[k].longest + 1; seq++) {
            char text[512];
            snprintf(text, sizeof text,
                     "{\"id\": \"a\", \"description\": \"d\", \"engines\": {\"server\": "
                     "{\"max_seq\": %lld}}, \"steps\": [{\"kind\": \"rollout\", \"turns\": %d, "
                     "\"max_tokens\": %d, \"prompt_tokens\": {\"min\": 10, \"max\": 10}, "
                     "\"observation_tokens\": {\"min\": 0, \"max\": %d}}]}",
                     (long long)seq, shapes[k].turns, shapes[k].max_tokens, shapes[k].obs_max);
            if (seq >= shapes[k].longest) {
                sr_scenario_free(load_ok(text));
            } else {
                char want[128];
                snprintf(want, sizeof want, "may reach %lld tokens, more than",
                         (long long)shapes[k].longest);
                load_bad(text, SR_E_SCENARIO, "t.json:1:", want);
            }
        }
    }
}
END_TEST

/* The step-kind table (scenario.h) is the one list of kinds: every kind has a name that looks
 * itself up, a runner executor (run/runner_steps.c is checked against the table at compile time
 * for its size; a NULL hole shows here), and a section of FORMAT.md §10 headed by its name and
 * the table's description. */
START_TEST(test_step_kind_table)
{
    char *text = sr_test_read_all(SYNCROLL_SOURCE_DIR "/scenarios/FORMAT.md");
    for (int k = 0; k < SR_STEP_KIND_COUNT; k++) {
        const char *name = sr_step_kind_name((sr_step_kind)k);
        ck_assert_ptr_nonnull(name);
        ck_assert_int_eq(sr_step_kind_lookup(name), k);
        ck_assert_msg(sr_step_executor((sr_step_kind)k) != NULL,
                      "step kind %s has no executor in run/runner_steps.c", name);
        const char *doc = sr_step_kind_doc((sr_step_kind)k);
        ck_assert_msg(doc && *doc && !strchr(doc, '\n'), "step kind %s: no one-line doc", name);
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "`%s`", name);
        int found = 0;
        for (const char *l = text; l && *l && !found;
             l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            const char *end = strchr(l, '\n');
            size_t n = end ? (size_t)(end - l) : strlen(l);
            char line[256];
            snprintf(line, sizeof(line), "%.*s", (int)(n < 255 ? n : 255), l);
            found = strncmp(line, "### ", 4) == 0 && strstr(line, quoted) && strstr(line, doc);
        }
        ck_assert_msg(found, "FORMAT.md has no heading \"### ... %s...: %s\"", quoted, doc);
    }
    ck_assert_int_eq(sr_step_kind_lookup("abort"), -1);
    ck_assert_ptr_null(sr_step_kind_doc(SR_STEP_KIND_COUNT));
    ck_assert_ptr_null(sr_step_executor(SR_STEP_KIND_COUNT));
    free(text);
}
END_TEST

/* The replay step: its capture resolved to an absolute path that must hold capture.jsonl (so
 * lint finds a missing fixture at the key), its dialect a name of the table or null. */
START_TEST(test_replay_step)
{
#define REPLAY_DOC(cap, rest)                                                                      \
    "{\"id\": \"r\", \"description\": \"d\", \"steps\": [{\"kind\": \"replay\", \"capture\": "     \
    "\"" cap "\"" rest "}]}"
#define FIXTURE SYNCROLL_SOURCE_DIR "/scenarios/examples/replay-all-zero/fixtures/capture"
    sr_scenario *s = load_ok(REPLAY_DOC(FIXTURE "/", ""));
    char *abs = realpath(FIXTURE, NULL);
    ck_assert_ptr_nonnull(abs);
    ck_assert_str_eq(s->steps[0].replay.capture, abs);
    ck_assert_int_eq(s->steps[0].replay.dialect, -1);
    sr_scenario_free(s);
    s = load_ok(REPLAY_DOC(FIXTURE, ", \"dialect\": \"vllm\""));
    ck_assert_int_eq(s->steps[0].replay.dialect, SR_DIALECT_VLLM);
    sr_scenario_free(s);
    free(abs);
    load_bad(REPLAY_DOC(FIXTURE "/nowhere", ""), SR_E_SCENARIO, "t.json:1:", "no capture at");
    load_bad(REPLAY_DOC(SYNCROLL_SOURCE_DIR "/scenarios", ""), SR_E_SCENARIO,
             "t.json:1:", "no capture at");
    load_bad(REPLAY_DOC(FIXTURE, ", \"dialect\": \"vlm\""), SR_E_SCENARIO,
             "t.json:1:", "is not a dialect");
    load_bad("{\"id\": \"r\", \"description\": \"d\", \"steps\": [{\"kind\": \"replay\"}]}",
             SR_E_JSON_SCHEMA, "t.json:1:", "capture");
#undef FIXTURE
#undef REPLAY_DOC
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scenario");
    TCase *t = tcase_create("format");
    tcase_add_test(t, test_keys_match_format_md);
    tcase_add_test(t, test_quirks_checks_classes_documented);
    tcase_add_test(t, test_defaults);
    tcase_add_test(t, test_errors_have_positions);
    tcase_add_test(t, test_semantic_errors);
    tcase_add_test(t, test_values);
    tcase_add_test(t, test_stack_options_need_their_dialect);
    tcase_add_test(t, test_expanded_round_trip_covers_every_key);
    tcase_add_test(t, test_engine_config_carries_the_plan);
    tcase_add_test(t, test_seed_override_and_names);
    tcase_add_test(t, test_longest_trajectory_limit_is_exact);
    tcase_add_test(t, test_step_kind_table);
    tcase_add_test(t, test_replay_step);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
