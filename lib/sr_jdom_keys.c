/*
 * The duplicate-key rule of the reference parser mode (sr_jdom.h, SR_JDOM_REFERENCE), and the
 * JSON path notation of keys shared with the splice.
 */
#include <stdlib.h>
#include <string.h>

#include "sr_buf.h"
#include "sr_jdom_priv.h"
#include "sr_text.h"

/* Keys longer than this appear abbreviated in paths (`["<first bytes>..."]`). */
#define PATH_KEY_MAX 64

int sr_jdom_path_key(sr_buf *p, const char *key, sr_err *err)
{
    size_t klen = strlen(key);
    char shortkey[PATH_KEY_MAX + 4];
    if (klen > PATH_KEY_MAX) {
        memcpy(shortkey, key, PATH_KEY_MAX);
        memcpy(shortkey + PATH_KEY_MAX, "...", 4);
        key = shortkey;
    }
    int ident = (key[0] != '\0') && !(key[0] >= '0' && key[0] <= '9');
    for (const char *k = key; *k && ident; k++)
        ident = (*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
                *k == '_';
    if (ident) {
        int rc = p->len ? sr_buf_append(p, ".", 1, err) : 0;
        return rc ? rc : sr_buf_puts(p, key, err);
    }
    cJSON tmp = {.type = cJSON_String, .valuestring = (char *)key};
    char *q = cJSON_PrintUnformatted(&tmp);
    if (!q)
        return sr_err_set(err, SR_E_NOMEM, "json: cannot format a path");
    int rc = sr_buf_printf(p, err, "[%s]", q);
    free(q);
    return rc;
}

int sr_jdom_i_keys_grow(sr_jdom *j, sr_err *err)
{
    size_t nc = j->cap_keys ? j->cap_keys * 2 : 64;
    jdom_key *k = realloc(j->keys, nc * sizeof(*k));
    if (!k)
        return sr_err_set(err, SR_E_NOMEM, "json: cannot grow the key list to %zu keys", nc);
    j->keys = k;
    j->cap_keys = nc;
    return 0;
}

static int key_eq(const jdom_key *a, const jdom_key *b)
{
    return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

/* Orders keys by length, bytes, then text offset (so equal keys sit together, earliest first). */
static int key_cmp(const void *pa, const void *pb)
{
    const jdom_key *a = pa, *b = pb;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    int c = memcmp(a->s, b->s, a->len);
    if (c)
        return c;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* The path of the member whose key is `key` in the object stack[depth]. */
static int member_path(const sr_jdom *j, size_t depth, const char *key, sr_buf *path, sr_err *err)
{
    int rc = 0;
    for (size_t i = 1; i <= depth && !rc; i++) {
        const cJSON *parent = j->stack[i - 1], *child = j->stack[i];
        if ((parent->type & 0xFF) == cJSON_Object) {
            rc = sr_jdom_path_key(path, child->string ? child->string : "", err);
            continue;
        }
        long idx = 0;
        for (const cJSON *c = parent->child; c && c != child; c = c->next)
            idx++;
        rc = sr_buf_printf(path, err, "[%ld]", idx);
    }
    return rc ? rc : sr_jdom_path_key(path, key, err);
}

/* The second occurrence (earliest in the text) of a key that keys[0, n) holds twice, or NULL.
 * Sorts keys[0, n) when n is large. */
static const jdom_key *find_dup(jdom_key *keys, size_t n)
{
    const jdom_key *best = NULL;
    if (n <= 16) {
        for (size_t a = 1; a < n && !best; a++)
            for (size_t b = 0; b < a; b++)
                if (key_eq(&keys[a], &keys[b])) {
                    best = &keys[a];
                    break;
                }
        return best;
    }
    qsort(keys, n, sizeof(*keys), key_cmp);
    for (size_t i = 1; i < n; i++) {
        if (!key_eq(&keys[i], &keys[i - 1]) || (i >= 2 && key_eq(&keys[i], &keys[i - 2])))
            continue;
        if (!best || keys[i].off < best->off)
            best = &keys[i];
    }
    return best;
}

int sr_jdom_i_keys_close(sr_jdom *j, size_t depth, sr_err *err)
{
    size_t base = j->key_base[depth], n = j->nkeys - base;
    j->nkeys = base;
    if (n < 2)
        return 0;
    const jdom_key *dup = find_dup(j->keys + base, n);
    if (!dup || dup->off >= j->dup_off)
        return 0;
    sr_buf path = SR_BUF_INIT;
    int rc = member_path(j, depth, dup->s, &path, err);
    if (!rc) {
        char q[80];
        j->dup_off = dup->off;
        sr_err_set_at(&j->dup, SR_E_JSON_DUPLICATE_KEY, (int64_t)dup->off,
                      "json: %s: the key \"%s\" appears twice in one object (the reference "
                      "keeps the last silently)",
                      path.data, sr_quote_bytes(q, sizeof(q), dup->s, dup->len));
    }
    sr_buf_release(&path);
    return rc;
}
