/*
 * libFuzzer target for the proxy's route rewrite (proxy/proxy_routes.h, sr_px_routes_rewrite),
 * which reads a real engine's answer: any bytes, under one of several rules and on every
 * dialect's generate route, either are left unchanged (0, nothing written, a reason) or give an
 * answer (1) that, rewritten again under the same idempotent rule, comes out the same. The first
 * byte picks the rule, the second the route; the rest is the answer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy_routes.h"
#include "spec/dialect.h"
#include "spec/fault_grammar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Rules whose second application changes nothing more (zero, constant, null). */
static const char *const RULES[][2] = {
    {NULL, "{\"do\":\"zero\"}"},
    {"{\"region\":\"output\",\"rows\":{\"from\":1,\"stride\":2}}", "{\"do\":\"zero\"}"},
    {"{\"region\":\"turn_boundary\",\"layers\":[1]}", "{\"do\":\"constant\",\"value\":70000}"},
    {"{\"region\":\"chunk_boundary\",\"chunk\":2}", "{\"do\":\"constant\",\"value\":3}"},
    {NULL, "{\"do\":\"null\"}"},
    {"{\"region\":\"prompt\"}", "{\"do\":\"repeat_previous\"}"},
    {NULL, "{\"do\":\"drop_first\"}"},
    {NULL, "{\"do\":\"truncate\",\"tokens\":1}"},
    {NULL, "{\"do\":\"swap_layers\",\"layers\":[0,1]}"},
};
#define N_RULES    (sizeof RULES / sizeof RULES[0])
#define IDEMPOTENT 5 /* the first IDEMPOTENT rules */

static const char REQ[] = "{\"token_ids\":[1,2,3],\"prompt\":[1,2,3],\"input_ids\":[1,2,3],"
                          "\"prompt_token_ids\":[1,2,3],\"routed_experts_start_len\":1,"
                          "\"routed_experts_prompt_start\":1,\"sampling_params\":{\"max_tokens\":"
                          "4,\"routed_experts_prompt_start\":1}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t ri = data[0] % N_RULES;
    const char *paths[SR_DIALECT_COUNT * SR_DIALECT_MAX_ROUTES];
    size_t np = 0;
    for (int d = 0; d < SR_DIALECT_COUNT; d++)
        for (int i = 0; i < SR_DIALECT_MAX_ROUTES && sr_dialect_get((sr_dialect)d)->routes[i].path;
             i++)
            paths[np++] = sr_dialect_get((sr_dialect)d)->routes[i].path;
    const char *path = paths[data[1] % np];
    sr_route_rule r;
    sr_err err = SR_ERR_INIT;
    cJSON *sel = RULES[ri][0] ? cJSON_Parse(RULES[ri][0]) : NULL, *act = cJSON_Parse(RULES[ri][1]);
    if (sr_route_rule_parse(&r, sel, act, NULL, &err))
        abort();
    cJSON_Delete(sel);
    cJSON_Delete(act);
    const char *body = (const char *)data + 2;
    size_t len = size - 2;
    sr_buf out = SR_BUF_INIT, again = SR_BUF_INIT;
    const char *why = NULL;
    int rc = sr_px_routes_rewrite(&out, &why, path, REQ, strlen(REQ), body, len, &r, &err);
    if (rc < 0 && rc != SR_E_NOMEM && rc != SR_E_LIMIT) {
        fprintf(stderr, "unexpected error %s: %s\n", sr_code_name(rc), err.msg);
        abort();
    }
    if (rc == 0 && (!why || out.len))
        abort(); /* left unchanged: a reason, nothing written */
    if (rc == 1 && ri < IDEMPOTENT) {
        int rc2 =
            sr_px_routes_rewrite(&again, &why, path, REQ, strlen(REQ), out.data, out.len, &r, &err);
        /* null leaves no routes to find again; the others rewrite the same bytes. */
        if (rc2 == 1 && (again.len != out.len || memcmp(again.data, out.data, out.len) != 0)) {
            fprintf(stderr, "rule %zu is not idempotent on %s\n", ri, path);
            abort();
        }
    }
    sr_buf_release(&out);
    sr_buf_release(&again);
    return 0;
}
