/*
 * libFuzzer target for the route-fault grammar (spec/fault_grammar.h): any bytes are parsed as
 * JSON, then as a fault plan (a fault of kind "routes" reaches the grammar's parser through
 * sr_fault_parse) and, when the document is an object, its "select" and "action" as a rule. A
 * rule that parses must write back and parse again to the same struct, and its selection must
 * answer for any position without reading outside it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/fault_grammar.h"
#include "spec/faults.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rule(const cJSON *doc)
{
    sr_route_rule r, again;
    sr_err e = SR_ERR_INIT;
    const cJSON *where = NULL;
    int rc = sr_route_rule_parse(&r, cJSON_GetObjectItemCaseSensitive(doc, "select"),
                                 cJSON_GetObjectItemCaseSensitive(doc, "action"), &where, &e);
    if (rc) {
        if (rc != SR_E_FAULT_SPEC || e.code != rc || r.active)
            abort();
        return;
    }
    cJSON *s = NULL, *a = NULL;
    if (sr_route_rule_write_json(&s, &a, &r, &e))
        abort();
    char *ts = cJSON_PrintUnformatted(s), *ta = cJSON_PrintUnformatted(a);
    cJSON *ps = ts ? cJSON_Parse(ts) : NULL, *pa = ta ? cJSON_Parse(ta) : NULL;
    if (!ps || !pa || sr_route_rule_parse(&again, ps, pa, NULL, &e) ||
        memcmp(&r, &again, sizeof(r)) != 0) {
        fprintf(stderr, "rule does not round-trip: %s %s\n", ts ? ts : "?", ta ? ta : "?");
        abort();
    }
    char d[256];
    sr_route_rule_describe(d, sizeof(d), &r);
    for (int64_t p = 0; p < 40; p++)
        (void)sr_route_rule_covers(&r, p * 37, 20, p % 7, p % 3 - 1);
    free(ts);
    free(ta);
    cJSON_Delete(s);
    cJSON_Delete(a);
    cJSON_Delete(ps);
    cJSON_Delete(pa);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
    if (!doc)
        return 0;
    if (cJSON_IsObject(doc))
        check_rule(doc);
    sr_fault_plan *plan = NULL;
    sr_err e = SR_ERR_INIT;
    const cJSON *where = NULL;
    int rc = sr_fault_plan_parse(&plan, &where, cJSON_IsArray(doc) ? doc : NULL, &e);
    if (!rc) {
        cJSON *out = NULL;
        if (sr_fault_plan_write_json(&out, plan, &e))
            abort();
        cJSON_Delete(out);
    }
    sr_fault_plan_free(plan);
    cJSON_Delete(doc);
    return 0;
}
