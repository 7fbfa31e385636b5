/* The route-fault grammar's parser, writer and selection (spec/fault_grammar.h), and the located
 * message a scenario's bad selection gets (the loader and `syncroll lint` share it). */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "spec/engine_config.h"
#include "spec/fault_grammar.h"
#include "spec/faults.h"
#include "sr_test.h"

static int parse_rule(sr_route_rule *r, const char *select, const char *action, sr_err *err)
{
    cJSON *s = select ? cJSON_Parse(select) : NULL, *a = action ? cJSON_Parse(action) : NULL;
    ck_assert_msg(!select || s, "bad test JSON %s", select);
    ck_assert_msg(!action || a, "bad test JSON %s", action);
    int rc = sr_route_rule_parse(r, s, a, NULL, err);
    cJSON_Delete(s);
    cJSON_Delete(a);
    return rc;
}

/* Every bad number, name and shape is SR_E_FAULT_SPEC naming its key; names list the valid
 * values. */
START_TEST(test_errors_name_the_key_and_the_values)
{
    static const struct {
        const char *select, *action, *want;
    } bad[] = {
        {"{\"region\": \"boundary\"}", "{\"do\": \"zero\"}",
         "\"select.region\" must be one of: all, prompt, output, turn_boundary, chunk_boundary"},
        {NULL, "{\"do\": \"zap\"}", "\"action.do\" must be one of: zero, constant,"},
        {NULL, "{}", "\"action.do\" is required; valid values: zero,"},
        {NULL, NULL, "\"action\" is required"},
        {NULL, "[1]", "\"action\" must be an object"},
        {"[]", "{\"do\": \"zero\"}", "\"select\" must be an object"},
        {"{\"rows\": [-1]}", "{\"do\": \"zero\"}", "\"select.rows\" must be an integer in 0.."},
        {"{\"rows\": [1.5]}", "{\"do\": \"zero\"}", "\"select.rows\" must be an integer"},
        {"{\"rows\": []}", "{\"do\": \"zero\"}", "\"select.rows\" must be a list of 1 to 64"},
        {"{\"rows\": {\"from\": 5, \"to\": 4}}", "{\"do\": \"zero\"}",
         "\"select.rows.to\" must be an integer in 5.."},
        {"{\"rows\": {\"from\": 0, \"stride\": 0}}", "{\"do\": \"zero\"}",
         "\"select.rows.stride\" must be an integer in 1.."},
        {"{\"rows\": {\"from\": 1e300}}", "{\"do\": \"zero\"}", "\"select.rows.from\" must be"},
        {"{\"rows\": {\"block\": 5, \"every\": 4}}", "{\"do\": \"zero\"}",
         "\"select.rows.block\" must be an integer in 1..4"},
        {"{\"rows\": {\"every\": 4}}", "{\"do\": \"zero\"}", "blocks need \"block\" and \"every\""},
        {"{\"rows\": {\"from\": 1, \"every\": 4}}", "{\"do\": \"zero\"}",
         "unknown key \"select.rows.from\"; valid keys: block, every"},
        {"{\"rows\": 3}", "{\"do\": \"zero\"}", "\"select.rows\" must be a list of indices"},
        {"{\"layers\": [1024]}", "{\"do\": \"zero\"}",
         "\"select.layers\" must be an integer in 0..1023"},
        {"{\"field\": \"scores\"}", "{\"do\": \"zero\"}",
         "\"select.field\" must be one of: routed_experts, logprobs"},
        {"{\"field\": \"logprobs\"}", "{\"do\": \"zero\"}",
         "select.field logprobs takes \"action.do\" null or drop, not zero"},
        {"{\"field\": \"logprobs\", \"layers\": [0]}", "{\"do\": \"null\"}",
         "\"select.layers\" does not apply to select.field logprobs"},
        {"{\"field\": \"logprobs\", \"rows\": [0]}", "{\"do\": \"drop\"}",
         "action drop acts on the whole reply"},
        {NULL, "{\"do\": \"drop\"}", "action drop applies to select.field logprobs only"},
        {"{\"chunk\": 4}", "{\"do\": \"zero\"}",
         "\"select.chunk\" applies to region chunk_boundary"},
        {"{\"region\": \"chunk_boundary\", \"chunk\": 0}", "{\"do\": \"zero\"}",
         "\"select.chunk\" must be an integer in 1..1048576"},
        {"{\"regoin\": \"all\"}", "{\"do\": \"zero\"}",
         "unknown key \"select.regoin\"; valid keys: region, chunk, rows, layers, field"},
        {NULL, "{\"do\": \"zero\", \"value\": 3}", "action zero takes no \"action.value\""},
        {NULL, "{\"do\": \"constant\"}", "constant needs \"action.value\""},
        {NULL, "{\"do\": \"constant\", \"value\": 2147483648}",
         "\"action.value\" must be an integer"},
        {NULL, "{\"do\": \"shift\", \"k\": 0}", "\"action.k\" of shift must not be 0"},
        {NULL, "{\"do\": \"shift\", \"k\": 4097}",
         "\"action.k\" must be an integer in -4096..4096"},
        {NULL, "{\"do\": \"swap_layers\"}", "swap_layers needs \"action.layers\""},
        {NULL, "{\"do\": \"swap_layers\", \"layers\": [1, 1]}", "two distinct layers"},
        {NULL, "{\"do\": \"weight_version\"}", "weight_version needs \"action.version\""},
        {NULL, "{\"do\": \"truncate\", \"tokens\": -1}", "\"action.tokens\" must be an integer"},
        {NULL, "{\"do\": \"truncate\", \"partial\": 1}",
         "\"action.partial\" must be true or false"},
        {NULL, "{\"do\": \"mark_partial\", \"partial\": false}",
         "action mark_partial takes no \"action.partial\""},
        {"{\"rows\": [1]}", "{\"do\": \"drop_first\"}",
         "action drop_first acts on the whole reply"},
        {NULL, "{\"do\": \"zero\", \"do\": \"null\"}", "\"action.do\" is given twice"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sr_route_rule r;
        sr_err err = SR_ERR_INIT;
        int rc = parse_rule(&r, bad[i].select, bad[i].action, &err);
        ck_assert_msg(rc == SR_E_FAULT_SPEC, "case %zu: %s", i, sr_code_name(rc));
        ck_assert_msg(strstr(err.msg, bad[i].want) != NULL, "case %zu: \"%s\" lacks \"%s\"", i,
                      err.msg, bad[i].want);
        ck_assert_int_eq(r.active, 0);
    }
}
END_TEST

/* Written and parsed again, a rule is the same struct, member for member. */
START_TEST(test_writer_round_trips)
{
    static const struct {
        const char *select, *action;
    } ok[] = {
        {NULL, "{\"do\": \"zero\"}"},
        {"{\"region\": \"output\", \"rows\": [0, 7, 3], \"layers\": [1]}",
         "{\"do\": \"constant\", \"value\": 70000}"},
        {"{\"region\": \"chunk_boundary\", \"chunk\": 8, \"rows\": {\"from\": 1, \"to\": 9, "
         "\"stride\": 3}}",
         "{\"do\": \"shift\", \"k\": -2}"},
        {"{\"region\": \"prompt\", \"rows\": {\"block\": 2, \"every\": 5}}",
         "{\"do\": \"swap_layers\", \"layers\": [3, 0]}"},
        {"{\"region\": \"turn_boundary\"}", "{\"do\": \"weight_version\", \"version\": 4}"},
        {NULL, "{\"do\": \"truncate\", \"tokens\": 5, \"partial\": true}"},
        {NULL, "{\"do\": \"mark_partial\"}"},
        {NULL, "{\"do\": \"repeat_previous\"}"},
        {"{\"field\": \"logprobs\", \"region\": \"output\", \"rows\": [0, 2]}",
         "{\"do\": \"null\"}"},
        {"{\"field\": \"logprobs\"}", "{\"do\": \"drop\"}"},
        {"{\"field\": \"routed_experts\"}", "{\"do\": \"mark_partial\", \"tokens\": 0}"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        sr_route_rule a, b;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(parse_rule(&a, ok[i].select, ok[i].action, &err), err);
        cJSON *s = NULL, *act = NULL;
        ck_assert_sr_ok(sr_route_rule_write_json(&s, &act, &a, &err), err);
        /* Through text, as plans travel (the writer's integers are raw literals). */
        char *ts = cJSON_PrintUnformatted(s), *ta = cJSON_PrintUnformatted(act);
        ck_assert_sr_ok(parse_rule(&b, ts, ta, &err), err);
        free(ts);
        free(ta);
        ck_assert_msg(memcmp(&a, &b, sizeof(a)) == 0, "case %zu does not round-trip", i);
        cJSON_Delete(s);
        cJSON_Delete(act);
    }
}
END_TEST

/* The selection's positions (fault_grammar.h): regions, indices and layers. */
START_TEST(test_selection)
{
    sr_route_rule r;
    sr_err err = SR_ERR_INIT;
    /* P = 6, start 2. */
    ck_assert_sr_ok(parse_rule(&r,
                               "{\"region\": \"output\", \"rows\": {\"from\": 1, \"stride\": 2}}",
                               "{\"do\": \"zero\"}", &err),
                    err);
    for (int64_t p = 0; p < 14; p++)
        ck_assert_int_eq(sr_route_rule_covers(&r, p, 6, 2, -1), p >= 7 && (p - 7) % 2 == 0);
    ck_assert_sr_ok(parse_rule(&r, "{\"region\": \"turn_boundary\", \"layers\": [1]}",
                               "{\"do\": \"zero\"}", &err),
                    err);
    ck_assert(sr_route_rule_covers(&r, 2, 6, 2, 1));
    ck_assert(!sr_route_rule_covers(&r, 2, 6, 2, 0));
    ck_assert(!sr_route_rule_covers(&r, 3, 6, 2, 1));
    ck_assert(!sr_route_rule_covers(&r, 0, 6, 0, 1)); /* no start: no boundary */
    ck_assert_sr_ok(parse_rule(&r, "{\"region\": \"chunk_boundary\", \"chunk\": 4, \"rows\": [1]}",
                               "{\"do\": \"zero\"}", &err),
                    err);
    for (int64_t p = 0; p < 20; p++)
        ck_assert_int_eq(sr_route_rule_covers(&r, p, 12, 0, -1), p == 8);
    ck_assert_sr_ok(parse_rule(&r,
                               "{\"region\": \"prompt\", \"rows\": {\"block\": 2, \"every\": 4}}",
                               "{\"do\": \"zero\"}", &err),
                    err);
    for (int64_t p = 0; p < 12; p++)
        ck_assert_int_eq(sr_route_rule_covers(&r, p, 9, 0, -1), p < 9 && p % 4 < 2);
    char d[160];
    sr_route_rule_describe(d, sizeof(d), &r);
    ck_assert_str_eq(d, "region prompt, rows 2 of every 4: zero");
    /* The alias table's rules parse, and a kind outside it has none. */
    ck_assert_int_eq(sr_route_alias(&r, "duplicated_output_rows", &err), 1);
    sr_route_rule_describe(d, sizeof(d), &r);
    ck_assert_str_eq(d, "region output, rows from 1 stride 2: repeat_previous");
    ck_assert_int_eq(sr_route_alias(&r, "reset", &err), 0);
    /* The logprobs field: the later SkyRL stack's two faults are its rows. */
    ck_assert_int_eq(sr_route_alias(&r, "support_logprob_null", &err), 1);
    sr_route_rule_describe(d, sizeof(d), &r);
    ck_assert_str_eq(d, "field logprobs, region all: null");
    ck_assert(sr_route_rule_selects(&r));
    ck_assert(sr_route_rule_covers(&r, 9, 6, 0, -1));
    ck_assert_int_eq(sr_route_alias(&r, "support_no_logprobs", &err), 1);
    ck_assert_int_eq(r.field, SR_RF_LOGPROBS);
    ck_assert_int_eq(r.act, SR_RA_DROP);
    ck_assert(!sr_route_rule_selects(&r));
    const char *sel, *act;
    for (size_t i = 0; sr_route_alias_at(i, &sel, &act); i++)
        ck_assert_int_eq(sr_route_alias(&r, sr_route_alias_at(i, &sel, &act), &err), 1);
}
END_TEST

/* A bad selection in a scenario's plan is located at the offending value (file:line:col), as
 * `syncroll lint` prints it. */
START_TEST(test_bad_selection_is_located)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"{\"engines\": {\"faults\": [\n  {\"kind\": \"routes\",\n   \"select\": {\"region\": "
         "\"edge\"},\n   \"action\": {\"do\": \"zero\"}}]}}",
         "s.json:3:15: engines.faults: fault 0 (routes): \"select.region\" must be one of: all, "
         "prompt, output, turn_boundary, chunk_boundary"},
        {"{\"engines\": {\"faults\": [{\"kind\": \"routes\", \"select\": {\"rows\": {\"from\": 2,\n"
         "  \"stride\": -1}}, \"action\": {\"do\": \"zero\"}}]}}",
         "s.json:2:3: engines.faults: fault 0 (routes): \"select.rows.stride\" must be an "
         "integer in 1..2147483647"},
        {"{\"engines\": {\"faults\": [{\"kind\": \"routes\",\n \"action\": {\"do\": "
         "\"nothing\"}}]}}",
         "s.json:2:13: engines.faults: fault 0 (routes): \"action.do\" must be one of: zero, "
         "constant, repeat_previous, stale, weight_version, shift, swap_layers, drop_first, "
         "drop_last, append_last, truncate, mark_partial, null"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sr_engine_config c;
        sr_err err = SR_ERR_INIT;
        int rc = sr_engine_config_parse(&c, bad[i].text, strlen(bad[i].text), "s.json", 0, &err);
        ck_assert_int_ne(rc, 0);
        ck_assert_msg(strstr(err.msg, bad[i].msg) != NULL, "case %zu: \"%s\"", i, err.msg);
    }
}
END_TEST

/* The verifier's localisation: the first route fault whose targeting and selection hold the row. */
START_TEST(test_plan_locates_the_selection)
{
    const char *text =
        "[{\"kind\": \"reset\"},"
        " {\"kind\": \"routes\", \"id\": \"odd\", \"turn\": [2], \"engines\": [1],"
        "  \"select\": {\"region\": \"output\", \"rows\": {\"from\": 1, \"stride\": 2},"
        "  \"layers\": [0]}, \"action\": {\"do\": \"constant\", \"value\": 7}},"
        " {\"kind\": \"routes\", \"id\": \"cut\", \"turn\": [3],"
        "  \"action\": {\"do\": \"truncate\", \"tokens\": 2}},"
        " {\"kind\": \"pd_decode_replica\", \"turn\": [4]},"
        " {\"kind\": \"support_logprob_null\", \"turn\": [5]}]";
    sr_fault_plan *plan = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fault_plan_parse_text(&plan, text, strlen(text), &err), err);
    char buf[320];
    /* P = 10: output index 1 is position 11. */
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 1, 2, 11, 10, 0, 0), 1);
    ck_assert_str_eq(buf, "fault \"odd\" (routes: region output, rows from 1 stride 2, layers "
                          "[0]: constant 7)");
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 1, 2, 11, 10, 0, 1), 0);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 1, 2, 12, 10, 0, 0), 0);
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 0, 2, 11, 10, 0, 0), 0);
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 1, 1, 11, 10, 0, 0), 0);
    /* A whole-reply action holds every row of its turn, and a check with no row. */
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 0, 3, -1, 10, 0, -1), 1);
    ck_assert_str_eq(buf, "fault \"cut\" (routes: region all: truncate to 2 tokens)");
    /* An alias names its kind and its rule. */
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 0, 4, 3, 10, 0, 1), 1);
    ck_assert_str_eq(buf, "fault \"pd_decode_replica#3\" (pd_decode_replica: region prompt: zero)");
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 0, 4, 10, 10, 0, 1), 0);
    /* A rule on the logprobs holds no route row, not even a whole-reply one. */
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 0, 5, 11, 10, 0, 0), 0);
    ck_assert_int_eq(sr_fault_plan_locate(buf, sizeof(buf), plan, 0, 5, -1, 10, 0, -1), 0);
    sr_fault_plan_free(plan);
}
END_TEST

/* FORMAT.md's alias table is the code's, row for row. */
START_TEST(test_format_md_lists_the_aliases)
{
    char *doc = sr_test_read_all(SYNCROLL_SOURCE_DIR "/scenarios/FORMAT.md");
    const char *sel, *act, *kind;
    for (size_t i = 0; (kind = sr_route_alias_at(i, &sel, &act)) != NULL; i++) {
        char row[400], ssel[160] = "", sact[160];
        if (sel)
            snprintf(ssel, sizeof(ssel), "`%s`", sel);
        snprintf(sact, sizeof(sact), "`%s`", act);
        /* The table writes the JSON with spaces after ':' and ','. */
        char *parts[2] = {ssel, sact};
        for (int p = 0; p < 2; p++) {
            char tmp[160];
            size_t n = 0;
            for (const char *c = parts[p]; *c && n + 2 < sizeof(tmp); c++) {
                tmp[n++] = *c;
                if (*c == ':' || *c == ',')
                    tmp[n++] = ' ';
            }
            tmp[n] = 0;
            memcpy(parts[p], tmp, n + 1);
        }
        snprintf(row, sizeof(row), "| `%s` | %s%s| %s |", kind, ssel, sel ? " " : "", sact);
        ck_assert_msg(strstr(doc, row) != NULL, "FORMAT.md lacks the alias row %s", row);
    }
    free(doc);
}
END_TEST

static Suite *grammar_suite(void)
{
    Suite *s = suite_create("spec_fault_grammar");
    TCase *tc = tcase_create("grammar");
    tcase_add_test(tc, test_errors_name_the_key_and_the_values);
    tcase_add_test(tc, test_writer_round_trips);
    tcase_add_test(tc, test_selection);
    tcase_add_test(tc, test_bad_selection_is_located);
    tcase_add_test(tc, test_plan_locates_the_selection);
    tcase_add_test(tc, test_format_md_lists_the_aliases);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(grammar_suite());
}
