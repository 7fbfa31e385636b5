#include "sr_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_buf.h"
#include "sr_file.h"
#include "sr_suggest.h"
#include "sr_text.h"

typedef struct pos_slot {
    const cJSON *node; /* NULL: empty slot */
    size_t key_off;    /* offset of the member's key, or value offset for non-members */
    size_t val_off;
} pos_slot;

struct sr_json_doc {
    cJSON *root;
    char *text; /* a NUL-terminated copy of the source */
    size_t len;
    char *name;
    pos_slot *slots; /* open-addressing table keyed by node pointer */
    size_t nslots;   /* a power of two */
};

static size_t hash_ptr(const void *p, size_t mask)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & mask;
}

static void slot_put(sr_json_doc *d, const cJSON *n, size_t key_off, size_t val_off)
{
    size_t mask = d->nslots - 1;
    size_t i = hash_ptr(n, mask);
    while (d->slots[i].node && d->slots[i].node != n)
        i = (i + 1) & mask;
    d->slots[i].node = n;
    d->slots[i].key_off = key_off;
    d->slots[i].val_off = val_off;
}

static const pos_slot *slot_get(const sr_json_doc *d, const cJSON *n)
{
    if (!d->nslots)
        return NULL;
    size_t mask = d->nslots - 1;
    size_t i = hash_ptr(n, mask);
    while (d->slots[i].node) {
        if (d->slots[i].node == n)
            return &d->slots[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

static size_t count_nodes(const cJSON *n)
{
    size_t c = 0;
    for (; n; n = n->next)
        c += 1 + count_nodes(n->child);
    return c;
}

/* ---- a scanner over text that cJSON already accepted ---- */

static size_t skip_ws(const char *t, size_t len, size_t i)
{
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

static size_t skip_string(const char *t, size_t len, size_t i)
{
    i++; /* opening quote */
    while (i < len && t[i] != '"')
        i += t[i] == '\\' ? 2 : 1;
    return i < len ? i + 1 : len;
}

static size_t skip_scalar(const char *t, size_t len, size_t i)
{
    if (i >= len)
        return len;
    if (t[i] == '"')
        return skip_string(t, len, i);
    while (i < len && t[i] != ',' && t[i] != ']' && t[i] != '}' && t[i] != ' ' && t[i] != '\t' &&
           t[i] != '\n' && t[i] != '\r')
        i++;
    return i;
}

/* Records the value starting at (after whitespace) i for node n; returns the offset after it. */
static size_t walk(sr_json_doc *d, const cJSON *n, size_t i, size_t key_off, int is_member)
{
    const char *t = d->text;
    size_t len = d->len;
    i = skip_ws(t, len, i);
    slot_put(d, n, is_member ? key_off : i, i);
    if (cJSON_IsObject(n)) {
        i++; /* '{' */
        for (const cJSON *c = n->child; c; c = c->next) {
            i = skip_ws(t, len, i);
            size_t k = i;
            i = skip_string(t, len, i);
            i = skip_ws(t, len, i) + 1; /* ':' */
            i = walk(d, c, i, k, 1);
            i = skip_ws(t, len, i);
            if (i < len && t[i] == ',')
                i++;
        }
        i = skip_ws(t, len, i);
        return i + 1; /* '}' */
    }
    if (cJSON_IsArray(n)) {
        i++; /* '[' */
        for (const cJSON *c = n->child; c; c = c->next) {
            i = walk(d, c, i, 0, 0);
            i = skip_ws(t, len, i);
            if (i < len && t[i] == ',')
                i++;
        }
        i = skip_ws(t, len, i);
        return i + 1; /* ']' */
    }
    return skip_scalar(t, len, i);
}

void sr_json_linecol(const char *text, size_t len, size_t offset, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static int raw_error(const sr_json_doc *d, size_t i, const char *what, sr_err *err)
{
    int line, col;
    sr_json_linecol(d->text, d->len, i, &line, &col);
    return sr_err_set_at(err, SR_E_JSON_SYNTAX, (int64_t)i, "%s:%d:%d: invalid JSON (%s)", d->name,
                         line, col, what);
}

/*
 * Checks the raw text before cJSON sees it. cJSON treats every byte <= 0x20 as whitespace,
 * accepts raw control characters inside strings and skips a byte-order mark; RFC 8259 allows
 * none of them (§7, §8.1), and the position walk relies on the strict grammar, so all are
 * syntax errors here. Strings are followed escape by escape, so that the offset of the first
 * \u0000 escape (which cJSON would silently cut the string at) is found too: *nul_at.
 */
static int check_raw(const sr_json_doc *d, size_t *nul_at, sr_err *err)
{
    const unsigned char *t = (const unsigned char *)d->text;
    size_t len = d->len;
    if (len >= 3 && t[0] == 0xEF && t[1] == 0xBB && t[2] == 0xBF)
        return raw_error(d, 0, "byte-order mark", err);
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = t[i];
        if (!in_str) {
            if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
                return raw_error(d, i, "raw control character", err);
            in_str = ch == '"';
        } else if (ch < 0x20) {
            return raw_error(d, i, "raw control character in a string", err);
        } else if (ch == '"') {
            in_str = 0;
        } else if (ch == '\\' && i + 1 < len) {
            if (*nul_at == SIZE_MAX && i + 5 < len && memcmp(t + i + 1, "u0000", 5) == 0)
                *nul_at = i;
            i++;
        }
    }
    return 0;
}

/* Finds the node whose key or string value holds the text offset `at` (a \u0000 escape). */
static const cJSON *find_nul(const sr_json_doc *d, const cJSON *n, size_t at, int *in_key)
{
    for (; n; n = n->next) {
        const pos_slot *s = slot_get(d, n);
        if (s && n->string && at > s->key_off && at < skip_string(d->text, d->len, s->key_off)) {
            *in_key = 1;
            return n;
        }
        if (s && cJSON_IsString(n) && at > s->val_off &&
            at < skip_string(d->text, d->len, s->val_off))
            return n;
        const cJSON *c = find_nul(d, n->child, at, in_key);
        if (c)
            return c;
    }
    return NULL;
}

/*
 * A \u0000 escape would cut the string at the NUL (cJSON strings are NUL-terminated), so that
 * "ok\u0000../../x" reads as "ok": refused as a schema error naming the key, at its position.
 */
static int refuse_nul(const sr_json_doc *d, size_t at, sr_err *err)
{
    int in_key = 0;
    const cJSON *n = find_nul(d, d->root, at, &in_key);
    char q[80];
    if (n && n->string)
        return sr_json_error(d, n, err, SR_E_JSON_SCHEMA,
                             "%s '%s' contains an escaped NUL (\\u0000), which a name, path or "
                             "dtype cannot hold",
                             in_key ? "key" : "the value of",
                             sr_quote_str(q, sizeof(q), n->string));
    int line, col;
    sr_json_linecol(d->text, d->len, at, &line, &col);
    return sr_err_set_at(err, SR_E_JSON_SCHEMA, (int64_t)at,
                         "%s:%d:%d: a string contains an escaped NUL (\\u0000), which a name, "
                         "path or dtype cannot hold",
                         d->name, line, col);
}

int sr_json_parse(sr_json_doc **out, const char *text, size_t len, const char *name,
                  size_t max_bytes, sr_err *err)
{
    *out = NULL;
    size_t max = max_bytes ? max_bytes : SR_JSON_DEFAULT_MAX;
    const char *nm = name ? name : "<input>";
    if (len > max)
        return sr_err_set(err, SR_E_LIMIT, "%s: %zu bytes exceeds the maximum of %zu", nm, len,
                          max);
    sr_json_doc *d = calloc(1, sizeof(*d));
    if (!d || !(d->text = malloc(len + 1)) || !(d->name = strdup(nm))) {
        sr_json_free(d);
        return sr_err_set(err, SR_E_NOMEM, "%s: cannot allocate a JSON document", nm);
    }
    memcpy(d->text, text, len);
    d->text[len] = '\0';
    d->len = len;
    size_t nul_at = SIZE_MAX;
    int rc = check_raw(d, &nul_at, err);
    if (rc) {
        sr_json_free(d);
        return rc;
    }
    const char *end = NULL;
    d->root = cJSON_ParseWithLengthOpts(d->text, len, &end, 0);
    size_t stop = end ? (size_t)(end - d->text) : 0;
    if (d->root && skip_ws(d->text, len, stop) != len) {
        cJSON_Delete(d->root);
        d->root = NULL;
        stop = skip_ws(d->text, len, stop);
    }
    /* On failure cJSON reports the error position through `end` as well; its global
     * cJSON_GetErrorPtr() is not used because it is shared between threads. */
    if (!d->root) {
        int line, col;
        sr_json_linecol(d->text, len, stop, &line, &col);
        rc = sr_err_set_at(err, SR_E_JSON_SYNTAX, (int64_t)stop, "%s:%d:%d: invalid JSON", nm, line,
                           col);
        sr_json_free(d);
        return rc;
    }
    size_t n = count_nodes(d->root);
    size_t cap = 16;
    while (cap < n * 2)
        cap *= 2;
    d->slots = calloc(cap, sizeof(pos_slot));
    if (!d->slots) {
        sr_json_free(d);
        return sr_err_set(err, SR_E_NOMEM, "%s: cannot index a JSON document", nm);
    }
    d->nslots = cap;
    walk(d, d->root, 0, 0, 0);
    if (nul_at != SIZE_MAX && (rc = refuse_nul(d, nul_at, err)) != 0) {
        sr_json_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

int sr_json_load_file(sr_json_doc **out, const char *path, size_t max_bytes, sr_err *err)
{
    *out = NULL;
    size_t max = max_bytes ? max_bytes : SR_JSON_DEFAULT_MAX;
    sr_buf b = SR_BUF_INIT;
    int rc = strcmp(path, "-") == 0 ? sr_file_read_stream(&b, stdin, path, max, err)
                                    : sr_file_read(&b, path, max, err);
    if (!rc)
        rc = sr_json_parse(out, b.data, b.len, path, max, err);
    sr_buf_release(&b);
    return rc;
}

void sr_json_free(sr_json_doc *d)
{
    if (!d)
        return;
    cJSON_Delete(d->root);
    free(d->text);
    free(d->name);
    free(d->slots);
    free(d);
}

const cJSON *sr_json_root(const sr_json_doc *d)
{
    return d->root;
}

const char *sr_json_name(const sr_json_doc *d)
{
    return d->name;
}

int sr_json_where(const sr_json_doc *d, const cJSON *node, int at_key, int *line, int *col)
{
    const pos_slot *s = d && node ? slot_get(d, node) : NULL;
    if (!s) {
        *line = 0;
        *col = 0;
        return -1;
    }
    sr_json_linecol(d->text, d->len, at_key ? s->key_off : s->val_off, line, col);
    return 0;
}

int sr_json_error(const sr_json_doc *d, const cJSON *node, sr_err *err, int code, const char *fmt,
                  ...)
{
    if (!err)
        return code;
    char msg[SR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!d)
        return sr_err_set(err, code, "%s", msg);
    int line, col;
    sr_json_where(d, node, 1, &line, &col);
    const pos_slot *s = node ? slot_get(d, node) : NULL;
    return sr_err_set_at(err, code, s ? (int64_t)s->key_off : -1, "%s:%d:%d: %s", d->name, line,
                         col, msg);
}

int sr_json_check_keys(const sr_json_doc *d, const cJSON *obj, const char *what,
                       const char *const *allowed, sr_err *err)
{
    if (!cJSON_IsObject(obj))
        return sr_json_error(d, obj, err, SR_E_JSON_SCHEMA, "%s must be an object", what);
    for (const cJSON *c = obj->child; c; c = c->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, c->string) == 0;
        if (!ok) {
            size_t n = 0;
            while (allowed[n])
                n++;
            char hint[512];
            sr_suggest_text(hint, sizeof(hint), c->string, allowed, n, "valid keys");
            return sr_json_error(d, c, err, SR_E_JSON_SCHEMA, "unknown key '%s' in %s; %s",
                                 c->string, what, hint);
        }
        for (const cJSON *p = obj->child; p != c; p = p->next) {
            if (strcmp(p->string, c->string) == 0)
                return sr_json_error(d, c, err, SR_E_JSON_SCHEMA, "key '%s' appears twice in %s",
                                     c->string, what);
        }
    }
    return 0;
}

int sr_json_is_integer_literal(const sr_json_doc *d, const cJSON *node)
{
    if (!d)
        return cJSON_IsNumber(node) && isfinite(node->valuedouble) &&
               node->valuedouble == floor(node->valuedouble);
    const pos_slot *s = slot_get(d, node);
    if (!s || !cJSON_IsNumber(node))
        return 0;
    for (size_t i = s->val_off; i < d->len; i++) {
        char ch = d->text[i];
        if (ch == '.' || ch == 'e' || ch == 'E')
            return 0;
        if (!(ch == '-' || (ch >= '0' && ch <= '9')))
            break;
    }
    return 1;
}

/* Looks a member up; returns 1 and sets *item when present. */
static int member(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                  const cJSON **item, sr_err *err, int *rc)
{
    *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    *rc = 0;
    if (*item)
        return 1;
    if (required)
        *rc = sr_json_error(d, obj, err, SR_E_JSON_SCHEMA, "missing required key '%s'", key);
    return 0;
}

/* The exact value of an integer literal from the source text: 0, or -1 past int64. cJSON's
 * double would round 2^53 + 1 to 2^53. */
static int literal_i64(const sr_json_doc *d, const cJSON *node, int64_t *out)
{
    const pos_slot *s = slot_get(d, node);
    size_t i = s ? s->val_off : d->len;
    int neg = i < d->len && d->text[i] == '-';
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (i += (size_t)neg; i < d->len && d->text[i] >= '0' && d->text[i] <= '9'; i++) {
        unsigned digit = (unsigned)(d->text[i] - '0');
        if (v > (lim - digit) / 10)
            return -1;
        v = v * 10 + digit;
    }
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return 0;
}

/* Checks one integer value; `what` names it in the message ("'nth'", "'nth' entries"). */
static int int_value(const sr_json_doc *d, const cJSON *it, const char *what, int64_t min,
                     int64_t max, int64_t *out, sr_err *err)
{
    double v = it->valuedouble;
    if (!cJSON_IsNumber(it) || !sr_json_is_integer_literal(d, it) || (!d && fabs(v) > 9.2e18))
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "%s must be an integer", what);
    /* With a document the literal is read exactly (v may be far beyond 64 bits); a detached
     * tree's value was bounded just above, so the cast is defined. */
    int64_t x = d ? 0 : (int64_t)v;
    if (d && literal_i64(d, it, &x) != 0)
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA,
                             "%s is out of range [%lld, %lld] (beyond 64 bits)", what,
                             (long long)min, (long long)max);
    if (x < min || x > max)
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "%s is %lld, outside [%lld, %lld]", what,
                             (long long)x, (long long)min, (long long)max);
    *out = x;
    return 0;
}

int sr_json_get_int(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                    int64_t min, int64_t max, int64_t dflt, int64_t *out, sr_err *err)
{
    const cJSON *it;
    int rc;
    *out = dflt;
    if (!member(d, obj, key, required, &it, err, &rc))
        return rc;
    char what[96];
    snprintf(what, sizeof(what), "'%s'", key);
    return int_value(d, it, what, min, max, out, err);
}

int sr_json_get_int_list(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                         int64_t min, int64_t max, int64_t *out, size_t max_n, size_t *n,
                         sr_err *err)
{
    const cJSON *it;
    int rc;
    char what[96];
    *n = 0;
    if (!member(d, obj, key, required, &it, err, &rc))
        return rc;
    snprintf(what, sizeof(what), "'%s'", key);
    if (cJSON_IsNumber(it) && max_n > 0) {
        rc = int_value(d, it, what, min, max, out, err);
        *n = rc ? 0 : 1;
        return rc;
    }
    int size = cJSON_IsArray(it) ? cJSON_GetArraySize(it) : 0;
    if (size < 1 || (size_t)size > max_n)
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA,
                             "'%s' must be an integer or an array of 1..%zu integers", key, max_n);
    snprintf(what, sizeof(what), "'%s' entries", key);
    for (const cJSON *e = it->child; e; e = e->next) {
        if ((rc = int_value(d, e, what, min, max, &out[*n], err)) != 0) {
            *n = 0;
            return rc;
        }
        (*n)++;
    }
    return 0;
}

int sr_json_get_double(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                       double min, double max, double dflt, double *out, sr_err *err)
{
    const cJSON *it;
    int rc;
    *out = dflt;
    if (!member(d, obj, key, required, &it, err, &rc))
        return rc;
    if (!cJSON_IsNumber(it))
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "'%s' must be a number", key);
    if (!(it->valuedouble >= min && it->valuedouble <= max))
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "'%s' is %g, outside [%g, %g]", key,
                             it->valuedouble, min, max);
    *out = it->valuedouble;
    return 0;
}

int sr_json_get_bool(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                     int dflt, int *out, sr_err *err)
{
    const cJSON *it;
    int rc;
    *out = dflt;
    if (!member(d, obj, key, required, &it, err, &rc))
        return rc;
    if (!cJSON_IsBool(it))
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "'%s' must be true or false", key);
    *out = cJSON_IsTrue(it);
    return 0;
}

int sr_json_get_string(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                       const char *dflt, const char **out, sr_err *err)
{
    const cJSON *it;
    int rc;
    *out = dflt;
    if (!member(d, obj, key, required, &it, err, &rc))
        return rc;
    if (!cJSON_IsString(it))
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "'%s' must be a string", key);
    *out = it->valuestring;
    return 0;
}

/* The value of an integer literal, digit by digit from the source: 0, or -1 on a sign or on
 * overflow past 2^64 - 1. */
static int literal_u64(const sr_json_doc *d, const cJSON *node, uint64_t *out)
{
    const pos_slot *s = slot_get(d, node);
    uint64_t v = 0;
    size_t i = s ? s->val_off : d->len;
    if (i >= d->len || d->text[i] == '-')
        return -1;
    for (; i < d->len && d->text[i] >= '0' && d->text[i] <= '9'; i++) {
        unsigned digit = (unsigned)(d->text[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return -1;
        v = v * 10 + digit;
    }
    *out = v;
    return 0;
}

int sr_json_get_u64(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                    uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out, sr_err *err)
{
    const cJSON *it;
    int rc;
    *out = dflt;
    if (!member(d, obj, key, required, &it, err, &rc))
        return rc;
    uint64_t x = 0;
    int ok;
    if (d && sr_json_is_integer_literal(d, it)) {
        ok = literal_u64(d, it, &x) == 0; /* a detached tree (d NULL) has no source text */
    } else {
        double v = it->valuedouble;
        ok = cJSON_IsNumber(it) && v >= 0 && v < 0x1p64 && v == floor(v);
        x = ok ? (uint64_t)v : 0;
    }
    if (!ok)
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "'%s' must be an unsigned integer", key);
    if (x < min || x > max)
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "'%s' is %llu, outside [%llu, %llu]",
                             key, (unsigned long long)x, (unsigned long long)min,
                             (unsigned long long)max);
    *out = x;
    return 0;
}

/* A member of cJSON type `type` (cJSON_Object or cJSON_Array), named `what` in errors. */
static int get_container(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                         int type, const char *what, const cJSON **out, sr_err *err)
{
    const cJSON *it;
    int rc;
    *out = NULL;
    if (!member(d, obj, key, required, &it, err, &rc))
        return rc;
    if ((it->type & 0xFF) != type)
        return sr_json_error(d, it, err, SR_E_JSON_SCHEMA, "'%s' must be %s", key, what);
    *out = it;
    return 0;
}

int sr_json_get_object(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                       const cJSON **out, sr_err *err)
{
    return get_container(d, obj, key, required, cJSON_Object, "an object", out, err);
}

int sr_json_get_array(const sr_json_doc *d, const cJSON *obj, const char *key, int required,
                      const cJSON **out, sr_err *err)
{
    return get_container(d, obj, key, required, cJSON_Array, "an array", out, err);
}
