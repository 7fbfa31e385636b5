/*
 * libFuzzer target for sr_json: any bytes are parsed; on success every node's position is
 * looked up (the position walk must stay in step with cJSON and inside the text) and the typed
 * getters run on every object member.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sr_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void visit(const sr_json_doc *d, const cJSON *n, int depth)
{
    for (; n; n = n->next) {
        int line, col;
        if (sr_json_where(d, n, 1, &line, &col) != 0 || line < 1 || col < 1)
            abort();
        if (n->string)
            (void)sr_json_is_integer_literal(d, n);
        if (cJSON_IsObject(n)) {
            static const char *const none[] = {NULL};
            sr_err e = SR_ERR_INIT;
            (void)sr_json_check_keys(d, n, "object", none, &e);
            for (const cJSON *c = n->child; c; c = c->next) {
                int64_t i;
                double f;
                int b;
                const char *s;
                (void)sr_json_get_int(d, n, c->string, 1, INT64_MIN, INT64_MAX, 0, &i, &e);
                (void)sr_json_get_double(d, n, c->string, 1, -1e308, 1e308, 0, &f, &e);
                (void)sr_json_get_bool(d, n, c->string, 1, 0, &b, &e);
                (void)sr_json_get_string(d, n, c->string, 1, NULL, &s, &e);
            }
        }
        if (depth < 64)
            visit(d, n->child, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_json_doc *d = NULL;
    sr_err e = SR_ERR_INIT;
    if (sr_json_parse(&d, (const char *)data, size, "fuzz", 1 << 20, &e) == 0) {
        visit(d, sr_json_root(d), 0);
        sr_json_free(d);
    } else if (e.code == 0) {
        abort();
    }
    return 0;
}
