/*
 * libFuzzer target for sr_jdom, differential against the installed cJSON: any bytes are parsed
 * by both; sr_jdom must succeed exactly when cJSON succeeds and the text is RFC 8259 JSON (the
 * independent grammar check of tests/jdom_oracle.h), and then build a tree equal to cJSON's in
 * every visible field. A second parse into the same arena must give the same tree and allocate
 * no chunk.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/jdom_oracle.h"
#include "sr_jdom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t)
        return 0;
    memcpy(t, data, size);
    t[size] = '\0';
    const char *end = NULL;
    cJSON *ref = cJSON_ParseWithLengthOpts(t, size + 1, &end, 1);
    int want = ref && oracle_rfc_valid(t, size);

    sr_jdom *j = NULL;
    sr_err e = SR_ERR_INIT;
    if (sr_jdom_new(&j, 0, &e) != 0)
        abort();
    cJSON *root = NULL;
    int rc = sr_jdom_parse(j, t, size, &root, &e);
    if (rc != (want ? 0 : SR_E_JSON_SYNTAX) || e.code != rc || (rc == 0) != (root != NULL))
        abort();
    if (rc && (e.offset < 0 || (size_t)e.offset > size))
        abort();
    if (rc == 0) {
        if (!oracle_same_root(ref, root))
            abort();
        size_t chunks = sr_jdom_arena_chunks(j), used = sr_jdom_arena_used(j);
        /* The tree must not point into the text, which the caller may reuse. */
        memset(t, 'x', size);
        if (!oracle_same_root(ref, root))
            abort();
        memcpy(t, data, size);
        if (sr_jdom_parse(j, t, size, &root, &e) != 0 || !oracle_same_root(ref, root) ||
            sr_jdom_arena_chunks(j) != chunks || sr_jdom_arena_used(j) != used)
            abort();
    }
    sr_jdom_free(j);
    cJSON_Delete(ref);
    free(t);
    return 0;
}
