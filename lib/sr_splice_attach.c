/* The second half of the splice: parse the text, re-attach blobs, validate, build the result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_splice_priv.h"

/* ---- result bookkeeping ---- */

void sr_splice_i_clear_result(sr_splicer *s)
{
    for (size_t i = 0; i < s->nblobs; i++) {
        free(s->blobs[i].err);
        s->blobs[i].err = NULL;
    }
    for (size_t i = 0; i < s->nentries; i++)
        cJSON_Delete((cJSON *)s->entries[i].sidecar);
    s->nentries = 0;
    s->doc = NULL; /* jdom's tree: released by the next parse */
    sr_buf_reset(&s->paths);
    memset(&s->res, 0, sizeof(s->res));
}

/*
 * One level of the walk: the member or element being visited. Paths are formatted from this
 * chain only when an entry or an error needs one, and each level's part at most once while it
 * visits the same item: w->path keeps the formatted levels (a prefix of the chain, ending at
 * each formatted level's `end`), so deep paths cost no more than when they were built eagerly.
 */
typedef struct path_frame {
    struct path_frame *up;
    const cJSON *item; /* the member (its key) or element */
    int index;         /* the element's index, or -1 for an object member */
    int formatted;     /* w->path holds this level's path up to `end` */
    size_t end;
} path_frame;

typedef struct walker {
    sr_splicer *s;
    size_t next_blob[SR_FIELDS_MAX];
    size_t next_int[SR_FIELDS_MAX];
    uint64_t name_lens; /* bit L - 1 set: some registered name is L bytes long */
    uint64_t first[4];  /* bit c set: some registered name begins with the byte c */
    path_frame *top;    /* the innermost level, or NULL at the root */
    sr_buf path;        /* the path of `top`, valid after make_path */
    /* The last key found unregistered: sr_jdom gives the members of an array of objects that
     * repeat a key one shared copy of it (64 "logprob" keys, one pointer), so a key at this
     * address is known unregistered without looking at its bytes. */
    const char *unregistered;
} walker;

/* Keys that sr_jdom_path_key writes as they are (an identifier) when they are at most this long;
 * a longer one it abbreviates. */
#define PATH_KEY_PLAIN_MAX 64

/* 1 for the bytes of an identifier (sr_jdom_path_key: letters, digits, '_'). */
static const unsigned char IDENT[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['_'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1,
    ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1,
    ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1,
    ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1,
    ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1,
    ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1};

/* Appends a member's key to the path as sr_jdom_path_key does: an identifier of at most
 * PATH_KEY_PLAIN_MAX bytes (every key of an engine's body) with one copy, as ".key" ("key" at the
 * start); any other key by that function (quoted, abbreviated). */
static int put_key(sr_buf *p, const char *key, sr_err *err)
{
    size_t n = 0;
    if (key[0] >= '0' && key[0] <= '9')
        return sr_jdom_path_key(p, key, err);
    while (n <= PATH_KEY_PLAIN_MAX && IDENT[(unsigned char)key[n]])
        n++;
    if (n == 0 || n > PATH_KEY_PLAIN_MAX || key[n] != '\0')
        return sr_jdom_path_key(p, key, err);
    int rc = sr_buf_reserve(p, n + 1, err);
    if (rc)
        return rc;
    if (p->len)
        p->data[p->len++] = '.';
    memcpy(p->data + p->len, key, n);
    p->len += n;
    p->data[p->len] = '\0';
    return 0;
}

/* Appends "[index]" to the path. */
static int put_index(sr_buf *p, int index, sr_err *err)
{
    char tmp[16];
    char *q = tmp + sizeof tmp;
    *--q = ']';
    unsigned u = (unsigned)index;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    *--q = '[';
    return sr_buf_append(p, q, (size_t)(tmp + sizeof tmp - q), err);
}

/* Makes w->path the path of the chain ending at f, formatting the levels not yet formatted. */
static int put_frames(walker *w, path_frame *f, sr_err *err)
{
    sr_buf *p = &w->path;
    if (!f || f->formatted) {
        p->len = f ? f->end : 0;
        p->data[p->len] = '\0';
        return 0;
    }
    int rc = put_frames(w, f->up, err);
    if (rc)
        return rc;
    rc = f->index >= 0 ? put_index(p, f->index, err)
                       : put_key(p, f->item->string ? f->item->string : "", err);
    if (rc)
        return rc;
    f->formatted = 1;
    f->end = p->len;
    return 0;
}

/* Formats the path of the current level into w->path (NUL-terminated). */
static int make_path(walker *w, sr_err *err)
{
    int rc = sr_buf_reserve(&w->path, 64, err);
    return rc ? rc : put_frames(w, w->top, err);
}

static int add_entry(walker *w, sr_splice_kind kind, const sr_field_def *d, const cJSON *node,
                     size_t ref, sr_err *err)
{
    sr_splicer *s = w->s;
    size_t cap = s->cap_entries;
    int rc = sr_splice_i_grow((void **)&s->entries, &s->cap_entries, s->nentries,
                              sizeof(sr_splice_entry), err);
    if (rc)
        return rc;
    if (cap != s->cap_entries) {
        size_t *a = realloc(s->entry_ref, s->cap_entries * sizeof(size_t));
        if (a)
            s->entry_ref = a;
        size_t *b = realloc(s->path_off, s->cap_entries * sizeof(size_t));
        if (b)
            s->path_off = b;
        if (!a || !b) {
            /* Keep the recorded capacity that all three arrays still have. */
            s->cap_entries = cap;
            return sr_err_set(err, SR_E_NOMEM, "splice: cannot grow the entry list");
        }
    }
    size_t i = s->nentries;
    sr_splice_entry *e = &s->entries[i];
    memset(e, 0, sizeof(*e));
    sr_ndarray none = SR_NDARRAY_INIT;
    e->array = none;
    e->kind = kind;
    e->field = d;
    e->node = node;
    e->b64_noncanonical = -1;
    s->entry_ref[i] = ref;
    s->path_off[i] = s->paths.len;
    rc = make_path(w, err);
    if (!rc)
        rc = sr_buf_append(&s->paths, w->path.data, w->path.len + 1, err);
    if (rc)
        return rc;
    s->nentries++;
    return 0;
}

/* The next blob of `field` in body order; blobs from escaped keys never find a home (§3.3). */
static size_t pop_blob(walker *w, uint32_t field)
{
    const sr_splicer *s = w->s;
    size_t i = w->next_blob[field];
    while (i < s->nblobs && (s->blobs[i].field != field || s->blobs[i].escaped))
        i++;
    w->next_blob[field] = i < s->nblobs ? i + 1 : s->nblobs;
    return i < s->nblobs ? i : SIZE_MAX;
}

static size_t pop_int(walker *w, uint32_t field)
{
    const sr_splicer *s = w->s;
    size_t i = w->next_int[field];
    while (i < s->nints && s->ints[i].field != field)
        i++;
    w->next_int[field] = i < s->nints ? i + 1 : s->nints;
    return i < s->nints ? i : SIZE_MAX;
}

static int walk(walker *w, cJSON *node, sr_err *err);

static int packed_member(walker *w, const sr_field_def *d, size_t f, cJSON *c, sr_err *err)
{
    cJSON *data = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "data") : NULL;
    int rc = 0;
    if (data) {
        size_t bi = pop_blob(w, (uint32_t)f);
        if (bi == SIZE_MAX || !cJSON_IsString(data) || data->valuestring[0] != '\0') {
            if ((rc = make_path(w, err)))
                return rc;
            return sr_err_set(err, SR_E_SPLICE_DRIFT,
                              "%s: packed %s survived the scan unspliced; the response-body "
                              "layout drifted",
                              w->path.data, d->name);
        }
        if (w->s->blobs[bi].lookalike) {
            if ((rc = make_path(w, err)))
                return rc;
            return sr_err_set_at(err, SR_E_SPLICE_MISATTRIBUTED, (int64_t)w->s->blobs[bi].body_off,
                                 "%s: took the blob at body byte %llu, cut at a key that only "
                                 "ends in \"%s\" (matched without its opening quote)",
                                 w->path.data, (unsigned long long)w->s->blobs[bi].body_off,
                                 d->name);
        }
        return add_entry(w, SR_SPLICE_ENVELOPE, d, c, bi, err);
    }
    rc = add_entry(w, cJSON_IsNull(c) ? SR_SPLICE_NULL : SR_SPLICE_ENVELOPE, d, c, SIZE_MAX, err);
    return rc ? rc : walk(w, c, err);
}

/* The registered field named `key`, or NULL; most keys are told apart by their first byte or
 * their length alone. */
static const sr_field_def *registered(const walker *w, const char *key)
{
    if (!key)
        return NULL;
    unsigned char c0 = (unsigned char)key[0];
    if (!((w->first[c0 >> 6] >> (c0 & 63)) & 1))
        return NULL;
    size_t n = strnlen(key, SR_FIELD_NAME_MAX + 1);
    if (n == 0 || n > SR_FIELD_NAME_MAX || !((w->name_lens >> (n - 1)) & 1))
        return NULL;
    return sr_fields_find(w->s->fields, key, n);
}

/* Whether a string-blob field's string is what the scan leaves of a cut one: "" (raw, npy) or
 * the nrlre1 prefix ending at its third ':'. */
static int looks_cut(const sr_field_def *d, const char *v)
{
    if (d->wire != SR_WIRE_NRLRE)
        return v[0] == '\0';
    int colons = 0;
    size_t n = 0;
    for (; v[n]; n++)
        colons += v[n] == ':';
    return colons == 3 && n > 0 && v[n - 1] == ':';
}

/* A string-blob field: its cut blob, or (ref SIZE_MAX) its value read from the document. */
static int string_member(walker *w, const sr_field_def *d, size_t f, cJSON *c, sr_err *err)
{
    if (cJSON_IsNull(c))
        return add_entry(w, SR_SPLICE_NULL, d, c, SIZE_MAX, err);
    size_t bi =
        cJSON_IsString(c) && looks_cut(d, c->valuestring) ? pop_blob(w, (uint32_t)f) : SIZE_MAX;
    int rc = add_entry(w, SR_SPLICE_STRING, d, c, bi, err);
    return rc ? rc : walk(w, c, err);
}

/* An array or object with members: the only nodes the walk descends into. */
static int has_members(const cJSON *node)
{
    int t = node->type & 0xFF;
    return (t == cJSON_Array || t == cJSON_Object) && node->child;
}

static int member(walker *w, cJSON *c, sr_err *err)
{
    sr_splicer *s = w->s;
    if (c->string && c->string == w->unregistered)
        return has_members(c) ? walk(w, c, err) : 0;
    const sr_field_def *d = registered(w, c->string);
    if (!d) {
        w->unregistered = c->string;
        return has_members(c) ? walk(w, c, err) : 0;
    }
    /* The parser refused every duplicate key (json.duplicate_key), so c is its object's only
     * member of this name, the one the reference's last-wins parser keeps too. */
    size_t f = sr_fields_index(s->fields, d);
    if (d->kind == SR_FIELD_PACKED)
        return packed_member(w, d, f, c, err);
    if (d->kind == SR_FIELD_STRING)
        return string_member(w, d, f, c, err);
    if (d->kind == SR_FIELD_NESTED)
        return add_entry(w, cJSON_IsNull(c) ? SR_SPLICE_NULL : SR_SPLICE_NESTED, d, c, SIZE_MAX,
                         err);
    if (cJSON_IsObject(c) && !c->child) {
        /* The placeholder of a spliced array; an empty object of the body itself finds none and
         * is refused with the values the reference never checks (sr_splice_check.c). */
        return add_entry(w, SR_SPLICE_INT_ARRAY, d, c, pop_int(w, (uint32_t)f), err);
    }
    /* Read from the document (sr_splice_check.c); envelopes inside are still re-attached, as
     * the reference does, so that a refusal of the values is all that differs from it. */
    int rc = cJSON_IsArray(c) || cJSON_IsObject(c)
                 ? add_entry(w, SR_SPLICE_INT_ARRAY, d, c, SIZE_MAX, err)
                 : 0;
    return rc ? rc : walk(w, c, err);
}

/* Whether an object whose first member is m holds only m, a scalar under the key the walk last
 * found unregistered (the logprob objects of a body, {"logprob":-0.25}): walking it would only
 * call member(), which returns 0 for it at once, so the walk steps over it. */
static int plain_one(const walker *w, const cJSON *m)
{
    return !m->next && m->string && m->string == w->unregistered && !has_members(m);
}

static int walk(walker *w, cJSON *node, sr_err *err)
{
    if (!has_members(node))
        return 0;
    path_frame f = {w->top, NULL, -1, 0, 0};
    w->top = &f;
    int rc = 0;
    if ((node->type & 0xFF) == cJSON_Array) {
        /* Elements the walk would not enter (scalars, empty containers, plain_one objects) are
         * stepped over in a loop of their own (a scalar or an empty container has no child),
         * without touching the frame, which only an entered element needs. */
        int i = 0;
        for (cJSON *c = node->child; c; c = c->next, i++) {
            const cJSON *m = c->child;
            int t = c->type & 0xFF;
            if (!m || (t == cJSON_Object ? plain_one(w, m) : t != cJSON_Array))
                continue;
            f.item = c;
            f.formatted = 0;
            f.index = i;
            if ((rc = walk(w, c, err)))
                break;
        }
    } else {
        for (cJSON *c = node->child; c && !rc; c = c->next) {
            f.item = c;
            f.formatted = 0;
            rc = member(w, c, err);
        }
    }
    w->top = f.up;
    return rc;
}

/* Blobs that found no envelope: unpopped ones and every escaped-key blob (§3.3). */
static int check_orphans(walker *w, sr_err *err)
{
    sr_splicer *s = w->s;
    size_t nf = sr_fields_count(s->fields);
    size_t orphans[SR_FIELDS_MAX] = {0}, int_orphans[SR_FIELDS_MAX] = {0};
    int64_t first = -1, first_int = -1;
    for (size_t i = 0; i < s->nblobs; i++) {
        const blob_rec *b = &s->blobs[i];
        if (i >= w->next_blob[b->field] && b->lookalike)
            return sr_err_set_at(err, SR_E_SPLICE_MISATTRIBUTED, (int64_t)b->body_off,
                                 "the blob at body byte %llu was cut for %s at a key that only "
                                 "ends in its name (matched without its opening quote)",
                                 (unsigned long long)b->body_off,
                                 sr_fields_at(s->fields, b->field)->name);
        if (i >= w->next_blob[b->field] || b->escaped) {
            orphans[b->field]++;
            if (first < 0)
                first = (int64_t)b->body_off;
        }
    }
    for (size_t i = 0; i < s->nints; i++) {
        if (i >= w->next_int[s->ints[i].field]) {
            int_orphans[s->ints[i].field]++;
            if (first_int < 0)
                first_int = (int64_t)s->ints[i].body_off;
        }
    }
    if (first < 0 && first_int < 0)
        return 0;
    size_t *counts = first >= 0 ? orphans : int_orphans;
    char list[512];
    size_t used = 0;
    for (size_t f = 0; f < nf && used < sizeof(list); f++) {
        if (counts[f])
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s: %zu",
                                     used ? ", " : "", sr_fields_at(s->fields, f)->name, counts[f]);
    }
    if (first >= 0)
        return sr_err_set_at(err, SR_E_SPLICE_ORPHAN, first,
                             "spliced packed blobs found no envelope in the response body: {%s}",
                             list);
    return sr_err_set_at(err, SR_E_SPLICE_ORPHAN, first_int,
                         "spliced integer arrays found no key in the response body: {%s}", list);
}

static int check_end(sr_splicer *s, sr_err *err)
{
    if (s->mode == M_BLOB || s->mode == M_SKIP || s->mode == M_LOCATE) {
        const blob_rec *b = &s->blobs[s->nblobs - 1];
        return sr_err_set_at(err, SR_E_SPLICE_UNTERMINATED, (int64_t)b->body_off,
                             "unterminated base64 data for %s in the response body",
                             sr_fields_at(s->fields, b->field)->name);
    }
    /* A short body is short wherever it was cut: inside an integer array as in the JSON text
     * (the reference's client never retries a body short of its Content-Length). */
    if (s->expected >= 0 && s->pos < (uint64_t)s->expected)
        return sr_err_set_at(err, SR_E_SPLICE_SHORT, (int64_t)s->pos,
                             "the body ended after %llu of its announced %lld bytes",
                             (unsigned long long)s->pos, (long long)s->expected);
    /* Cut inside an integer array: the parser sees the rest of the text, so an error earlier in
     * it comes first, as in the reference; the cut is then splice.truncated. */
    return s->mode == M_INTS ? sr_splice_i_hand_back(s, err) : 0;
}

/* The parser refused the text with `rc` (je): the error the reference's order gives (header). */
static int classify(sr_splicer *s, int rc, const sr_err *je, sr_err *err)
{
    const char *t = s->text.data ? s->text.data : "";
    size_t n = s->text.len, bad = 0, in_array = 0;
    if (rc == SR_E_JSON_DUPLICATE_KEY || rc == SR_E_JSON_UTF8 || rc == SR_E_JSON_NUMBER_OVERFLOW) {
        /* The parser met them in text order (a duplicate only once the text was all valid). */
        uint64_t at = sr_splice_i_body_of(s, (size_t)je->offset);
        if (err) {
            *err = *je;
            err->offset = (int64_t)at;
            sr_err_prefix(err, "splice: body byte %llu: ", (unsigned long long)at);
        }
        return rc;
    }
    /* Syntax and too deep: the grammar check says whether the body was cut, where the first
     * error of the whole text is, and whether there is one past a nesting too deep. */
    int why = sr_splice_i_json_check(t, n, s->fallback, s->nfallback, &bad, &in_array);
    uint64_t at = sr_splice_i_body_of(s, bad);
    switch (why) {
    case SR_SPLICE_JSON_PREFIX:
        return sr_err_set_at(err, SR_E_SPLICE_TRUNCATED, (int64_t)s->pos,
                             "the response body ends before its JSON document does (%llu bytes)",
                             (unsigned long long)s->pos);
    case SR_SPLICE_JSON_UTF8:
        return sr_err_set_at(err, SR_E_JSON_UTF8, (int64_t)at,
                             "a string of the response body's JSON is not valid UTF-8 at body "
                             "byte %llu (the reference's parser refuses it)",
                             (unsigned long long)at);
    case SR_SPLICE_JSON_OVERFLOW:
        return sr_err_set_at(err, SR_E_JSON_NUMBER_OVERFLOW, (int64_t)at,
                             "the number at body byte %llu overflows a double (the reference's "
                             "parser refuses it)",
                             (unsigned long long)at);
    case SR_SPLICE_JSON_INVALID:
        if (in_array)
            return sr_err_set_at(err, SR_E_INTARRAY_SYNTAX, (int64_t)at,
                                 "the integer array %s is not valid JSON at body byte %llu",
                                 sr_fields_at(s->fields, s->fallback_field[in_array - 1])->name,
                                 (unsigned long long)at);
        return sr_err_set_at(err, SR_E_SPLICE_JSON, (int64_t)at,
                             "the response body is not valid JSON at byte %llu",
                             (unsigned long long)at);
    case SR_SPLICE_JSON_COMPLETE:
        if (rc == SR_E_JSON_TOO_DEEP) {
            uint64_t deep = sr_splice_i_body_of(s, (size_t)je->offset);
            return sr_err_set_at(err, SR_E_JSON_TOO_DEEP, (int64_t)deep,
                                 "the response body's JSON nests arrays and objects deeper than "
                                 "%d levels at body byte %llu",
                                 SR_JDOM_MAX_DEPTH, (unsigned long long)deep);
        }
        return sr_err_set(err, SR_E_INTERNAL,
                          "splice: the parser refused JSON the grammar check accepts");
    default:
        return sr_err_set(err, SR_E_NOMEM, "splice: cannot allocate the grammar check's stack");
    }
}

static int parse(sr_splicer *s, sr_err *err)
{
    const char *t = s->text.data ? s->text.data : "";
    size_t n = s->text.len;
    s->doc = NULL;
    /* jdom accepts exactly one RFC 8259 value under the reference's rules (sr_jdom.h), into its
     * reused arena (a cJSON parse and delete per response was a quarter of the client's CPU per
     * request). */
    sr_err je;
    sr_err_empty(&je);
    int rc = n ? sr_jdom_parse(s->jdom, t, n, &s->doc, &je) : SR_E_JSON_SYNTAX;
    if (!rc)
        return 0;
    s->doc = NULL;
    if (rc != SR_E_JSON_SYNTAX && rc != SR_E_JSON_TOO_DEEP && rc != SR_E_JSON_DUPLICATE_KEY &&
        rc != SR_E_JSON_UTF8 && rc != SR_E_JSON_NUMBER_OVERFLOW) {
        if (err) {
            *err = je;
            sr_err_prefix(err, "splice: the response body's JSON: ");
        }
        return rc;
    }
    return classify(s, rc, &je, err);
}

int sr_splice_i_finish(sr_splicer *s, sr_err *err)
{
    sr_err e; /* written and read only on failure */
    sr_err_empty(&e);
    /* The walker on the stack, its path buffer borrowed from the splicer (kept across bodies). */
    walker wk;
    walker *w = &wk;
    memset(w, 0, sizeof(*w));
    w->s = s;
    w->path = s->walk_path;
    sr_buf_reset(&w->path);
    for (size_t i = 0; i < sr_fields_count(s->fields); i++) {
        const sr_field_def *d = sr_fields_at(s->fields, i);
        unsigned char c0 = (unsigned char)d->name[0];
        w->name_lens |= (uint64_t)1 << (d->name_len - 1);
        w->first[c0 >> 6] |= (uint64_t)1 << (c0 & 63);
    }
    /* Paths of legitimate bodies are a few times shorter than the non-blob text; a bound
     * proportional to it turns a pathological body (thousands of entries nested a thousand
     * deep) into resource.limit instead of a gigabyte of path strings. */
    size_t bound = ((size_t)64 << 10) + 64 * s->text.len;
    s->paths.max = bound < SR_BUF_DEFAULT_MAX && bound > s->text.len ? bound : SR_BUF_DEFAULT_MAX;
    int rc = check_end(s, &e);
    if (!rc)
        rc = parse(s, &e);
    if (!rc)
        rc = walk(w, s->doc, &e);
    if (!rc)
        rc = check_orphans(w, &e);
    s->walk_path = w->path;
    if (!rc)
        rc = sr_splice_i_validate(s, &e);
    if (rc) {
        if (err)
            *err = e;
        return rc;
    }
    sr_splice_result *r = &s->res;
    r->doc = s->doc;
    r->entries = s->entries;
    r->count = s->nentries;
    r->stats.passes = s->scanned ? 1 : 0;
    r->stats.body_bytes = s->pos;
    r->stats.bytes_scanned = s->scanned;
    r->stats.text_bytes = s->text.len;
    r->stats.blobs = s->nblobs;
    r->stats.int_arrays = s->nints;
    for (size_t i = 0; i < s->nblobs; i++) {
        r->stats.blob_chars += s->blobs[i].chars;
        r->stats.decoded_bytes += s->blobs[i].nbytes;
    }
    return 0;
}
