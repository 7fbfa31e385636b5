/*
 * The fault plan's schema (harness/spec/faults.h): the kind table is whole and drives name
 * lookup, layers and key validation; parse errors are named; and the meta-test: the generated
 * docs/reference/faults.md lists exactly the table's kinds, with its layers, parameter keys,
 * required keys and descriptions, and the engine's fault suite fires every kind.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/faults.h"
#include "sr_test.h"

/* ---- the table ---- */

static int in_list(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0)
            return 1;
    return 0;
}

/* Parses one fault from JSON text. */
static int parse_one(const char *text, sr_fault *f, sr_err *err)
{
    cJSON *obj = cJSON_Parse(text);
    ck_assert_msg(obj != NULL, "bad test JSON: %s", text);
    int rc = sr_fault_parse(f, obj, 0, err);
    cJSON_Delete(obj);
    return rc;
}

/* {"kind": K, <its required keys with valid values>, <extra>} */
static void minimal_fault(char *out, size_t cap, const sr_fault_kind_info *ki, const char *extra)
{
    snprintf(out, cap, "{\"kind\": \"%s\"", ki->name);
    for (const char *const *r = ki->required; *r; r++)
        snprintf(out + strlen(out), cap - strlen(out), ", \"%s\": %s", *r,
                 strcmp(*r, "action") == 0 ? "{\"do\": \"zero\"}" : "1");
    if (ki->kind == SR_FK_LATENCY)
        snprintf(out + strlen(out), cap - strlen(out), ", \"ms\": 1");
    snprintf(out + strlen(out), cap - strlen(out), "%s}", extra);
}

START_TEST(test_table_is_whole)
{
    for (int k = 0; k < SR_FK_COUNT; k++) {
        const sr_fault_kind_info *ki = sr_fault_kind_info_of((sr_fault_kind)k);
        ck_assert_ptr_nonnull(ki);
        ck_assert_int_eq(ki->kind, k);
        ck_assert_msg(ki->name && ki->name[0], "kind %d has no name", k);
        ck_assert_int_eq(sr_fault_kind_lookup(ki->name), k);
        ck_assert_str_eq(sr_fault_kind_name((sr_fault_kind)k), ki->name);
        ck_assert_int_lt(ki->layer, SR_FL_COUNT);
        ck_assert_int_eq(sr_fault_kind_layer((sr_fault_kind)k), ki->layer);
        ck_assert_msg(ki->doc && ki->doc[0], "%s has no description", ki->name);
        ck_assert_msg((ki->default_endpoints & ~ki->allowed_endpoints) == 0,
                      "%s: a default endpoint it may not name", ki->name);
        for (const char *const *r = ki->required; *r; r++)
            ck_assert_msg(in_list(ki->params, *r), "%s requires %s, which it does not accept",
                          ki->name, *r);
        for (const char *const *p = ki->params; *p; p++)
            ck_assert_msg(!in_list(sr_fault_common_keys(), *p), "%s: %s is a targeting key",
                          ki->name, *p);
    }
    ck_assert_ptr_null(sr_fault_kind_info_of(SR_FK_COUNT));
    ck_assert_int_eq(sr_fault_kind_lookup("frobnicate"), -1);
    ck_assert_int_eq(sr_fault_kind_lookup(NULL), -1);
    for (int l = 0; l < SR_FL_COUNT; l++)
        for (int m = 0; m < l; m++)
            ck_assert_str_ne(sr_fault_layer_name((sr_fault_layer)l),
                             sr_fault_layer_name((sr_fault_layer)m));
    ck_assert_ptr_null(sr_fault_layer_name(SR_FL_COUNT));
}
END_TEST

/* Every key a kind lists reaches a parser (a null value is a type error, not an unknown key);
 * every parameter of other kinds is an unknown key; a kind parses with just its required keys. */
START_TEST(test_keys_follow_the_table)
{
    char text[512];
    sr_fault f;
    for (int k = 0; k < SR_FK_COUNT; k++) {
        const sr_fault_kind_info *ki = sr_fault_kind_info_of((sr_fault_kind)k);
        sr_err err = SR_ERR_INIT;
        minimal_fault(text, sizeof(text), ki, "");
        ck_assert_sr_ok(parse_one(text, &f, &err), err);
        ck_assert_int_eq(f.kind, k);
        for (int o = 0; o < SR_FK_COUNT; o++) {
            const sr_fault_kind_info *other = sr_fault_kind_info_of((sr_fault_kind)o);
            for (const char *const *p = other->params; *p; p++) {
                char extra[64];
                snprintf(extra, sizeof(extra), ", \"%s\": null", *p);
                minimal_fault(text, sizeof(text), ki, extra);
                if (in_list(ki->required, *p) || (k == SR_FK_LATENCY && !strcmp(*p, "ms")))
                    continue; /* the key is already there: a duplicate */
                int rc = parse_one(text, &f, &err);
                ck_assert_sr_code(rc, err, SR_E_FAULT_SPEC);
                ck_assert_msg((strstr(err.msg, "unknown key") != NULL) != in_list(ki->params, *p),
                              "%s with %s: %s", ki->name, *p, err.msg);
            }
        }
        if (ki->required[0]) {
            snprintf(text, sizeof(text), "{\"kind\": \"%s\"}", ki->name);
            ck_assert_sr_code(parse_one(text, &f, &err), err, SR_E_FAULT_SPEC);
            ck_assert_msg(strstr(err.msg, "is required") != NULL, "%s", err.msg);
        }
    }
}
END_TEST

START_TEST(test_errors_are_named)
{
    sr_fault f;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(parse_one("{\"kind\": \"truncate\", \"bytes\": -1}", &f, &err), err,
                      SR_E_FAULT_SPEC);
    ck_assert_str_eq(err.msg,
                     "fault 0 (truncate): 'bytes' is -1, outside [0, 4611686018427387903]");
    ck_assert_sr_code(parse_one("{\"kind\": \"reset\", \"bytes\": 3}", &f, &err), err,
                      SR_E_FAULT_SPEC);
    ck_assert_str_eq(err.msg, "fault 0 (reset): unknown key 'bytes' in this kind of fault; valid "
                              "keys: kind, id, engines, endpoints, nth, turn, probability, count");
    ck_assert_sr_code(parse_one("{\"kind\": \"teleport\"}", &f, &err), err, SR_E_FAULT_SPEC);
    ck_assert_msg(strncmp(err.msg, "fault 0 (teleport): unknown fault kind", 38) == 0, "%s",
                  err.msg);
    ck_assert_sr_code(parse_one("{\"kind\": \"reset\", \"nth\": [1, 0]}", &f, &err), err,
                      SR_E_FAULT_SPEC);
    ck_assert_str_eq(err.msg,
                     "fault 0 (reset): 'nth' entries is 0, outside [1, 4611686018427387903]");
    ck_assert_sr_code(parse_one("{\"kind\": \"stall\", \"endpoints\": \"nowhere\"}", &f, &err), err,
                      SR_E_FAULT_SPEC);
    static const char unknown_ep[] =
        "fault 0 (stall): unknown endpoint \"nowhere\"; endpoints of this kind: any, generate, ";
    ck_assert_msg(strncmp(err.msg, unknown_ep, strlen(unknown_ep)) == 0, "%s", err.msg);
    ck_assert_sr_code(parse_one("{\"kind\": \"stall\", \"endpoints\": \"generat\"}", &f, &err), err,
                      SR_E_FAULT_SPEC);
    ck_assert_ptr_nonnull(
        strstr(err.msg, "unknown endpoint \"generat\"; did you mean 'generate'?"));
    /* Defaults and parsed values. */
    ck_assert_sr_ok(parse_one("{\"kind\": \"truncate_in_blob\", \"offset\": 7, \"nth\": 2,"
                              " \"engines\": [1, 3], \"keep_length\": true}",
                              &f, &err),
                    err);
    ck_assert_str_eq(f.id, "truncate_in_blob#0");
    ck_assert_int_eq(f.bytes, 7);
    ck_assert_int_eq(f.has_bytes, 1);
    ck_assert_int_eq(f.keep_length, 1);
    ck_assert_int_eq(f.n_nth, 1);
    ck_assert_int_eq(f.nth[0], 2);
    ck_assert_uint_eq(f.engines, 0xA);
    ck_assert_int_eq(f.count, -1);
    ck_assert(f.probability == 1.0);
    ck_assert_str_eq(f.field, "routed_experts");
    ck_assert_sr_ok(parse_one("{\"kind\": \"partial_weight_apply\", \"layers\": [1, 5]}", &f, &err),
                    err);
    ck_assert_int_eq(f.n_layers, 2);
    ck_assert_int_eq(f.layers[1], 5);
}
END_TEST

START_TEST(test_default_ids_and_plans)
{
    char id[SR_FAULT_ID_MAX];
    sr_fault_default_id(id, sizeof(id), "reset", 3);
    ck_assert_str_eq(id, "reset#3");
    const char *text = "[{\"kind\": \"reset\"}, {\"kind\": \"stall\", \"id\": \"s\"},"
                       " {\"kind\": \"reset\"}]";
    sr_fault_plan *plan = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fault_plan_parse_text(&plan, text, strlen(text), &err), err);
    ck_assert_uint_eq(sr_fault_plan_count(plan), 3);
    ck_assert_str_eq(sr_fault_plan_at(plan, 0)->id, "reset#0");
    ck_assert_str_eq(sr_fault_plan_at(plan, 1)->id, "s");
    ck_assert_str_eq(sr_fault_plan_at(plan, 2)->id, "reset#2");
    ck_assert_ptr_null(sr_fault_plan_at(plan, 3));
    sr_fault_plan_free(plan);
    const char *dup = "[{\"kind\": \"reset\"}, {\"kind\": \"stall\", \"id\": \"reset#0\"}]";
    ck_assert_sr_code(sr_fault_plan_parse_text(&plan, dup, strlen(dup), &err), err,
                      SR_E_FAULT_SPEC);
    ck_assert_ptr_null(plan);
    ck_assert_sr_ok(sr_fault_plan_parse(&plan, NULL, NULL, &err), err);
    ck_assert_uint_eq(sr_fault_plan_count(plan), 0);
    sr_fault_plan_free(plan);
}
END_TEST

/* ---- the writer ---- */

/* A valid, non-default value (JSON text) of every parameter key: a key added to the table
 * without one here fails the round trip below. */
static const char *param_value(const char *key)
{
    static const struct {
        const char *key, *value;
    } V[] = {
        {"dist", "\"uniform\""},
        {"ms", "3.5"},
        {"min_ms", "0.1"},
        {"max_ms", "7.25"},
        {"median_ms", "4"},
        {"sigma", "1.25"},
        {"bytes", "1000000000000000"}, /* cJSON alone would print 1e+15 */
        {"offset", "17"},
        {"keep_length", "true"},
        {"bytes_per_second", "2048.5"},
        {"retry_after", "7"},
        {"text", "\"no \\\"way\\\"\""},
        {"row", "3"},
        {"layer", "1"},
        {"field", "\"rollout_sample_support\""},
        {"key", "\"dbg\""},
        {"layers", "[0, 2, 1023]"},
        {"requests", "4"},
        {"select", "{\"region\": \"output\", \"rows\": {\"from\": 1, \"to\": 9, "
                   "\"stride\": 2}, \"layers\": [0, 2]}"},
        {"action", "{\"do\": \"constant\", \"value\": 9}"},
    };
    for (size_t i = 0; i < sizeof(V) / sizeof(V[0]); i++)
        if (strcmp(V[i].key, key) == 0)
            return V[i].value;
    ck_abort_msg("no test value for parameter \"%s\"", key);
    return NULL;
}

/* Every kind with every targeting key and every parameter it takes, none at its default. */
static char *full_plan(void)
{
    size_t cap = 64 * 1024, len = 0;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    len += (size_t)snprintf(t + len, cap - len, "[");
    for (int k = 0; k < SR_FK_COUNT; k++) {
        const sr_fault_kind_info *ki = sr_fault_kind_info_of((sr_fault_kind)k);
        len += (size_t)snprintf(t + len, cap - len,
                                "%s{\"kind\": \"%s\", \"id\": \"full-%s\", \"engines\": [0, 3, 63],"
                                " \"endpoints\": \"any\", \"nth\": [1, 1000000000000000],"
                                " \"turn\": [2, 5], \"probability\": 0.3, \"count\": 4",
                                k ? ", " : "", ki->name, ki->name);
        for (const char *const *p = ki->params; *p; p++)
            len += (size_t)snprintf(t + len, cap - len, ", \"%s\": %s", *p, param_value(*p));
        len += (size_t)snprintf(t + len, cap - len, "}");
        ck_assert_uint_lt(len, cap - 1);
    }
    snprintf(t + len, cap - len, "]");
    return t;
}

/* Every kind with only what it requires: default ids, endpoints, parameters. */
static char *minimal_plan(void)
{
    size_t cap = 16 * 1024, len = 0;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    len += (size_t)snprintf(t + len, cap - len, "[");
    for (int k = 0; k < SR_FK_COUNT; k++) {
        char one[512];
        minimal_fault(one, sizeof(one), sr_fault_kind_info_of((sr_fault_kind)k), "");
        len += (size_t)snprintf(t + len, cap - len, "%s%s", k ? ", " : "", one);
    }
    snprintf(t + len, cap - len, "]");
    return t;
}

/* Writes plan `text` back, parses that again: the same structs, fault for fault (the parser
 * zeroes each struct first, so whole-struct equality is exact); writing again changes nothing.
 * Returns the written JSON (cJSON_Delete). */
static cJSON *assert_round_trip(const char *text)
{
    sr_fault_plan *a = NULL, *b = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fault_plan_parse_text(&a, text, strlen(text), &err), err);
    cJSON *w = NULL, *w2 = NULL;
    ck_assert_sr_ok(sr_fault_plan_write_json(&w, a, &err), err);
    char *out = cJSON_PrintUnformatted(w);
    ck_assert_ptr_nonnull(out);
    int rc = sr_fault_plan_parse_text(&b, out, strlen(out), &err);
    ck_assert_msg(rc == 0, "the written plan does not parse: %s\n%s", err.msg, out);
    ck_assert_uint_eq(sr_fault_plan_count(b), sr_fault_plan_count(a));
    for (size_t i = 0; i < sr_fault_plan_count(a); i++) {
        const sr_fault *fa = sr_fault_plan_at(a, i), *fb = sr_fault_plan_at(b, i);
        ck_assert_msg(memcmp(fa, fb, sizeof(*fa)) == 0, "fault %zu (%s, id %s) changed: %s", i,
                      sr_fault_kind_name(fa->kind), fa->id,
                      cJSON_PrintUnformatted(cJSON_GetArrayItem(w, (int)i)));
    }
    ck_assert_sr_ok(sr_fault_plan_write_json(&w2, b, &err), err);
    char *again = cJSON_PrintUnformatted(w2);
    ck_assert_str_eq(again, out);
    free(again);
    free(out);
    cJSON_Delete(w2);
    sr_fault_plan_free(a);
    sr_fault_plan_free(b);
    return w;
}

START_TEST(test_writer_round_trips_every_kind)
{
    char *full = full_plan();
    cJSON *w = assert_round_trip(full);
    ck_assert_int_eq(cJSON_GetArraySize(w), SR_FK_COUNT);
    for (int k = 0; k < SR_FK_COUNT; k++) {
        const sr_fault_kind_info *ki = sr_fault_kind_info_of((sr_fault_kind)k);
        const cJSON *o = cJSON_GetArrayItem(w, k);
        for (const char *const *c = sr_fault_common_keys(); *c; c++)
            ck_assert_msg(cJSON_GetObjectItemCaseSensitive(o, *c), "%s: no \"%s\" written",
                          ki->name, *c);
        for (const char *const *p = ki->params; *p; p++)
            ck_assert_msg(cJSON_GetObjectItemCaseSensitive(o, *p), "%s: no \"%s\" written",
                          ki->name, *p);
    }
    /* Integers stay integer literals, however large. */
    char *out = cJSON_PrintUnformatted(w);
    ck_assert_ptr_nonnull(strstr(out, "\"bytes\":1000000000000000,"));
    ck_assert_ptr_nonnull(strstr(out, "\"nth\":[1,1000000000000000]"));
    free(out);
    cJSON_Delete(w);
    free(full);

    char *min = minimal_plan();
    w = assert_round_trip(min);
    /* Defaults are written out: the default id and endpoints; optional values are not. */
    const cJSON *reset = cJSON_GetArrayItem(w, SR_FK_RESET);
    char id[SR_FAULT_ID_MAX];
    sr_fault_default_id(id, sizeof(id), "reset", SR_FK_RESET);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(reset, "id")->valuestring, id);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(reset, "count"));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(reset, "engines"));
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(reset, "endpoints"));
    const cJSON *smb = cJSON_GetArrayItem(w, SR_FK_STALL_MID_BODY);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(smb, "bytes"));
    const cJSON *h400 = cJSON_GetArrayItem(w, SR_FK_HTTP_400_TEXT);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(h400, "text"));
    cJSON_Delete(w);
    free(min);

    /* The other latency shapes, given zeros and limits, every endpoint of a reach. */
    const char *edges =
        "[{\"kind\": \"latency\", \"dist\": \"lognormal\", \"median_ms\": 12.5, \"sigma\": 0},"
        " {\"kind\": \"latency\", \"ms\": 0.001, \"probability\": 0, \"count\": 0},"
        " {\"kind\": \"truncate_in_blob\", \"offset\": 0, \"keep_length\": false},"
        " {\"kind\": \"stall_mid_body\", \"bytes\": 0, \"engines\": [5]},"
        " {\"kind\": \"checksum_mismatch\", \"endpoints\": [\"update_weights\","
        "   \"/collective_rpc\", \"fetch_weights\"]},"
        " {\"kind\": \"respaced_json\", \"endpoints\": \"native_generate\", \"turn\": 1},"
        " {\"kind\": \"http_429\", \"retry_after\": 0, \"text\": \"x\"},"
        " {\"kind\": \"dribble\", \"bytes_per_second\": 1e12}]";
    cJSON_Delete(assert_round_trip(edges));

    /* An empty plan, and no plan, write an empty array. */
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fault_plan_write_json(&w, NULL, &err), err);
    ck_assert(cJSON_IsArray(w) && cJSON_GetArraySize(w) == 0);
    cJSON_Delete(w);
    /* Structs no parse gives are refused, not read past. */
    sr_fault f;
    ck_assert_sr_ok(parse_one("{\"kind\": \"latency\", \"ms\": 1}", &f, &err), err);
    f.dist = (sr_latency_dist)7;
    ck_assert_sr_code(sr_fault_write_json(&w, &f, &err), err, SR_E_INTERNAL);
    ck_assert_ptr_null(w);
    f.dist = SR_LAT_FIXED;
    f.n_nth = SR_FAULT_MAX_LIST + 1;
    ck_assert_sr_code(sr_fault_write_json(&w, &f, &err), err, SR_E_INTERNAL);
    f.n_nth = 0;
    f.kind = SR_FK_COUNT;
    ck_assert_sr_code(sr_fault_write_json(&w, &f, &err), err, SR_E_INTERNAL);
}
END_TEST

/* The plan names the node an error is about, for the loaders' file:line:col. */
START_TEST(test_plan_errors_are_located)
{
    const char *text =
        "[{\"kind\": \"reset\", \"id\": \"x\"}, {\"kind\": \"stall\", \"id\": \"x\"},"
        " {\"kind\": \"teleport\"}]";
    cJSON *doc = cJSON_Parse(text);
    sr_fault_plan *plan = NULL;
    const cJSON *where = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_fault_plan_parse(&plan, &where, doc, &err), err, SR_E_FAULT_SPEC);
    ck_assert_ptr_null(plan);
    ck_assert_str_eq(err.msg, "fault 1: id \"x\" is used twice");
    ck_assert_ptr_eq(where, cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(doc, 1), "id"));
    cJSON_DeleteItemFromArray(doc, 1);
    ck_assert_sr_code(sr_fault_plan_parse(&plan, &where, doc, &err), err, SR_E_FAULT_SPEC);
    ck_assert_ptr_eq(where, cJSON_GetArrayItem(doc, 1));
    cJSON_DeleteItemFromArray(doc, 1);
    ck_assert_sr_ok(sr_fault_plan_parse(&plan, &where, doc, &err), err);
    ck_assert_ptr_null(where);
    ck_assert_ptr_eq(sr_fault_plan_find(plan, "x"), sr_fault_plan_at(plan, 0));
    ck_assert_ptr_null(sr_fault_plan_find(plan, "reset#0"));
    ck_assert_ptr_null(sr_fault_plan_find(NULL, "x"));
    sr_fault_plan_free(plan);
    cJSON_Delete(doc);
    doc = cJSON_Parse("{\"kind\": \"reset\"}");
    ck_assert_sr_code(sr_fault_plan_parse(&plan, &where, doc, &err), err, SR_E_FAULT_SPEC);
    ck_assert_ptr_eq(where, doc);
    cJSON_Delete(doc);
}
END_TEST

/* ---- the documentation ---- */

#define MAX_ROWS  256
#define MAX_CELLS 8

/* One table of a Markdown file: its body rows, split into trimmed cells. */
typedef struct md_table {
    char *text; /* owns the cells */
    char *cell[MAX_ROWS][MAX_CELLS];
    int n_cells[MAX_ROWS];
    int n;
} md_table;

static char *trim(char *s)
{
    while (*s == ' ')
        s++;
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ')
        s[--n] = '\0';
    return s;
}

/* Splits a row "| a | b |" in place at the pipes that are not escaped. */
static int split_row(char *line, char **cells)
{
    int n = 0;
    char *start = line + 1;
    for (char *c = line + 1; *c; c++) {
        if (*c != '|' || c[-1] == '\\')
            continue;
        *c = '\0';
        if (n < MAX_CELLS)
            cells[n++] = trim(start);
        start = c + 1;
    }
    return n;
}

/* The body rows of the one table of `path` whose header line starts with `header`. */
static void md_read(md_table *t, const char *path, const char *header)
{
    t->text = sr_test_read_all(path);
    t->n = 0;
    int tables = 0, in_table = 0;
    for (char *line = strtok(t->text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] != '|') {
            in_table = 0;
            continue;
        }
        if (strncmp(line, header, strlen(header)) == 0) {
            in_table = 1;
            tables++;
            continue;
        }
        if (!in_table || strncmp(line, "|---", 4) == 0)
            continue;
        ck_assert_int_lt(t->n, MAX_ROWS);
        t->n_cells[t->n] = split_row(line, t->cell[t->n]);
        t->n++;
    }
    ck_assert_msg(tables == 1, "%s: %d tables with the header \"%s\", expected 1", path, tables,
                  header);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The words between backticks in a cell, each once, sorted and joined by spaces. */
static void ticked(const char *cell, char *out, size_t cap)
{
    char *w[32];
    int n = 0;
    for (const char *c = strchr(cell, '`'); c && n < 32; c = strchr(c + 1, '`')) {
        const char *end = strchr(c + 1, '`');
        if (!end)
            break;
        w[n++] = strndup(c + 1, (size_t)(end - c - 1));
        c = end;
    }
    qsort(w, (size_t)n, sizeof(w[0]), cmp_str);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i == 0 || strcmp(w[i], w[i - 1]) != 0)
            snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? " " : "", w[i]);
    }
    for (int i = 0; i < n; i++)
        free(w[i]);
}

/* The table's parameter keys in the same form: sorted, joined by spaces. */
static void table_params(const sr_fault_kind_info *ki, char *out, size_t cap)
{
    char cell[512] = "";
    for (const char *const *p = ki->params; *p; p++)
        snprintf(cell + strlen(cell), sizeof(cell) - strlen(cell), " `%s`", *p);
    ticked(cell, out, cap);
}

/* The kind named by a first or second cell: exactly one word in backticks. */
static int kind_of_cell(const char *cell, const char *where)
{
    size_t n = strlen(cell);
    ck_assert_msg(n > 2 && cell[0] == '`' && cell[n - 1] == '`' && !memchr(cell + 1, '`', n - 2),
                  "%s: the kind cell \"%s\" must be one name in backticks", where, cell);
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)(n - 2), cell + 1);
    int k = sr_fault_kind_lookup(name);
    ck_assert_msg(k >= 0, "%s documents the fault kind `%s`, which the kind table lacks", where,
                  name);
    return k;
}

/* docs/reference/faults.md, generated by `syncroll faults --markdown` (ctest docs.generated keeps
 * it equal to the generator), is read back here against the table itself: so the generator
 * cannot drop or garble a kind, a layer, a parameter, a required mark or a description. */
START_TEST(test_faults_md_lists_the_kinds)
{
    md_table t;
    int seen[SR_FK_COUNT] = {0};
    const char *page = "docs/reference/faults.md";
    md_read(&t, SYNCROLL_SOURCE_DIR "/docs/reference/faults.md", "| fault | layer | parameters |");
    for (int i = 0; i < t.n; i++) {
        ck_assert_int_eq(t.n_cells[i], 6);
        int k = kind_of_cell(t.cell[i][0], page);
        const sr_fault_kind_info *ki = sr_fault_kind_info_of((sr_fault_kind)k);
        ck_assert_msg(!seen[k]++, "%s lists `%s` twice", page, ki->name);
        ck_assert_msg(strcmp(t.cell[i][1], sr_fault_layer_name(ki->layer)) == 0,
                      "%s: `%s` is in layer %s, not %s", page, ki->name,
                      sr_fault_layer_name(ki->layer), t.cell[i][1]);
        char doc[256], want[256];
        ticked(t.cell[i][2], doc, sizeof(doc));
        table_params(ki, want, sizeof(want));
        ck_assert_msg(strcmp(doc, want) == 0, "%s: `%s` takes [%s], the table says [%s]", page,
                      ki->name, doc, want);
        for (const char *const *p = ki->params; *p; p++) {
            char req[80];
            snprintf(req, sizeof(req), "`%s` (required)", *p);
            ck_assert_msg((strstr(t.cell[i][2], req) != NULL) == in_list(ki->required, *p),
                          "%s: `%s`'s key %s is %srequired", page, ki->name, *p,
                          in_list(ki->required, *p) ? "" : "not ");
        }
        ck_assert_msg(strcmp(t.cell[i][5], ki->doc) == 0,
                      "%s: `%s` is described as \"%s\", the table says \"%s\"", page, ki->name,
                      t.cell[i][5], ki->doc);
    }
    for (int k = 0; k < SR_FK_COUNT; k++)
        ck_assert_msg(seen[k], "the kind table has `%s`, which %s does not describe",
                      sr_fault_kind_name((sr_fault_kind)k), page);
    free(t.text);
}
END_TEST

/* The engine's dispatch: tests/test_engine_faults.c, tests/test_engine_weight_faults.c and
 * tests/test_engine_sync_bugs.c fire every kind of the table at a real engine and check its
 * effect, so a kind without such a test is a kind the engine may ignore. */
START_TEST(test_engine_suite_fires_every_kind)
{
    char *t[4] = {sr_test_read_all(SYNCROLL_SOURCE_DIR "/tests/test_engine_faults.c"),
                  sr_test_read_all(SYNCROLL_SOURCE_DIR "/tests/test_engine_weight_faults.c"),
                  sr_test_read_all(SYNCROLL_SOURCE_DIR "/tests/test_engine_routes.c"),
                  sr_test_read_all(SYNCROLL_SOURCE_DIR "/tests/test_engine_sync_bugs.c")};
    for (int k = 0; k < SR_FK_COUNT; k++) {
        char tight[96], spaced[96];
        const char *name = sr_fault_kind_name((sr_fault_kind)k);
        snprintf(tight, sizeof(tight), "\\\"kind\\\":\\\"%s\\\"", name);
        snprintf(spaced, sizeof(spaced), "\\\"kind\\\": \\\"%s\\\"", name);
        int fired = 0;
        for (int i = 0; i < 4; i++)
            fired |= strstr(t[i], tight) || strstr(t[i], spaced);
        ck_assert_msg(fired,
                      "the kind table has `%s`, which none of tests/test_engine_faults.c, "
                      "tests/test_engine_weight_faults.c, tests/test_engine_routes.c and "
                      "tests/test_engine_sync_bugs.c fires",
                      name);
    }
    for (int i = 0; i < 4; i++)
        free(t[i]);
}
END_TEST

/* A uniform latency needs min_ms <= max_ms: equal (one allowed delay) is accepted, one
 * millisecond more or less on either side decides. */
START_TEST(test_uniform_latency_bounds_are_inclusive)
{
    const struct {
        const char *min, *max;
        int code;
    } cases[] = {{"5", "5", 0},
                 {"5", "6", 0},
                 {"5", "4", SR_E_FAULT_SPEC},
                 {"4", "5", 0},
                 {"6", "5", SR_E_FAULT_SPEC},
                 {"0", "0", 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"kind\": \"latency\", \"dist\": \"uniform\", \"min_ms\": %s, \"max_ms\": %s}",
                 cases[k].min, cases[k].max);
        sr_fault f;
        sr_err err = SR_ERR_INIT;
        int rc = parse_one(text, &f, &err);
        ck_assert_msg(rc == cases[k].code, "%s: rc %d (%s)", text, rc, err.msg);
        if (rc)
            ck_assert_ptr_nonnull(strstr(err.msg, "\"min_ms\" <= \"max_ms\""));
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("spec_faults");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, test_table_is_whole);
    tcase_add_test(tc, test_keys_follow_the_table);
    tcase_add_test(tc, test_errors_are_named);
    tcase_add_test(tc, test_default_ids_and_plans);
    tcase_add_test(tc, test_writer_round_trips_every_kind);
    tcase_add_test(tc, test_plan_errors_are_located);
    suite_add_tcase(s, tc);
    TCase *doc = tcase_create("docs");
    tcase_add_test(doc, test_faults_md_lists_the_kinds);
    tcase_add_test(doc, test_engine_suite_fires_every_kind);
    tcase_add_test(doc, test_uniform_latency_bounds_are_inclusive);
    suite_add_tcase(s, doc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
