/*
 * libFuzzer target for sr_jdom, differential against the installed cJSON: any bytes are parsed
 * by both; sr_jdom must succeed exactly when cJSON succeeds and the text is RFC 8259 JSON (the
 * independent grammar check of tests/jdom_oracle.h), and then build a tree equal to cJSON's in
 * every visible field. A second parse into the same arena must give the same tree and allocate
 * no chunk. Under the reference rules (SR_JDOM_REFERENCE) a text is accepted only if cJSON and
 * the grammar accept it and all of it is UTF-8 (bytes >= 0x80 of valid JSON are inside strings),
 * refused as json.syntax exactly when the default rules refuse it, and otherwise refused only
 * with a reference-rule code; invalid UTF-8 in an otherwise valid text is json.invalid_utf8.
 * Under both rules the parse with every fast path off (SR_JDOM_I_GENERAL: objects that repeat
 * the last key, keys compared with it by the word, digits and short strings read by the word)
 * must give the same code, offset and message, and an equal tree.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/jdom_oracle.h"
#include "sr_buf.h"
#include "sr_jdom.h"
#include "sr_jdom_priv.h"
#include "sr_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a and b equal in every field, sr_jdom's type bits included, and in their children. */
static int exact_same(const cJSON *a, const cJSON *b)
{
    if (a->type != b->type || a->valueint != b->valueint ||
        memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0 ||
        !oracle_same_str(a->string, b->string) ||
        !oracle_same_str(a->valuestring, b->valuestring) || !oracle_links_ok(a->child) ||
        !oracle_links_ok(b->child))
        return 0;
    const cJSON *x = a->child, *y = b->child;
    for (; x && y; x = x->next, y = y->next)
        if (!exact_same(x, y))
            return 0;
    return !x && !y;
}

/* The parse of t under `flags` without the fast path gives what `rc`, `e` and `root` (from the
 * parse with it) say. */
static void same_as_general(const char *t, size_t size, unsigned flags, int rc, const sr_err *e,
                            const cJSON *root)
{
    sr_jdom *g = NULL;
    sr_err ge = SR_ERR_INIT;
    if (sr_jdom_new(&g, 0, &ge) != 0)
        abort();
    sr_jdom_set_flags(g, flags | SR_JDOM_I_GENERAL);
    cJSON *groot = NULL;
    int grc = sr_jdom_parse(g, t, size, &groot, &ge);
    if (grc != rc || ge.code != e->code || ge.offset != e->offset || strcmp(ge.msg, e->msg) != 0)
        abort();
    if (rc == 0 && !exact_same(groot, root))
        abort();
    sr_jdom_free(g);
}

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
    same_as_general(t, size, 0, rc, &e, root);
    sr_jdom_set_flags(j, SR_JDOM_REFERENCE);
    sr_err re = SR_ERR_INIT;
    cJSON *rroot = NULL;
    int rrc = sr_jdom_parse(j, t, size, &rroot, &re);
    same_as_general(t, size, SR_JDOM_REFERENCE, rrc, &re, rroot);
    int utf8 = sr_utf8_check(t, size) == size;
    if ((rrc == 0) != (rroot != NULL) || (rrc && re.code != rrc))
        abort();
    if (rrc == 0 && (!want || !utf8))
        abort();
    if (!want && rrc != SR_E_JSON_SYNTAX && rrc != SR_E_JSON_UTF8 && rrc != SR_E_JSON_TOO_DEEP &&
        rrc != SR_E_JSON_NUMBER_OVERFLOW)
        abort();
    if (want && rrc != 0 && rrc != SR_E_JSON_UTF8 && rrc != SR_E_JSON_NUMBER_OVERFLOW &&
        rrc != SR_E_JSON_TOO_DEEP && rrc != SR_E_JSON_DUPLICATE_KEY)
        abort();
    if (want && !utf8 && rrc != SR_E_JSON_UTF8 && rrc != SR_E_JSON_NUMBER_OVERFLOW)
        abort();
    if (rrc && (re.offset < 0 || (size_t)re.offset > size))
        abort();
    sr_jdom_free(j);
    cJSON_Delete(ref);
    free(t);
    return 0;
}
