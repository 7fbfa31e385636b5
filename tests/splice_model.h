/*
 * A slow, deliberately simple model of the reference client's splice and decode
 * (docs/reference/skyrl.md §2.2, §3, Appendix B), for differential tests of lib/sr_splice: the fuzz
 * target fuzz/fuzz_splice_diff.c and the ctest unit.splice_diff. Written from the contract, not
 * from syncroll's code:
 *
 *   1. load_packed_body's byte scan: every `:{"data":"` whose preceding bytes are `"field"` for a
 *      registered packed field (registration order, the quote before the name may be escaped --
 *      the reference does not look) cuts a blob up to the next '"'; none -> "unterminated".
 *   2. orjson's parse of the rest: a full recursive RFC 8259 parser: UTF-8 validated (overlongs,
 *      surrogates, > U+10FFFF refused), \u escapes paired, numbers strict, a double overflow
 *      (1e400) refused, an integer outside [-2^63, 2^64-1] read as a float, duplicate keys keep
 *      the LAST value at the FIRST key's position (a Python dict).
 *   3. _restore_packed_data: depth-first in document order; a registered key whose value is an
 *      object with "data" takes the field's next blob (none left -> layout drift) and is not
 *      recursed into; every other object and array is; blobs left over -> orphan.
 *   4. unpack_ndarray for every registered packed key found (null passes when nullable): an
 *      object; dtype, shape and data readable and data valid base64 (pybase64 validate=True:
 *      trailing bits dropped); dtype allowed; shape = ndim ints (no bool, no float) >= 0;
 *      bytes = prod(shape) * itemsize; numpy's size rule (itemsize * prod of the non-zero dims
 *      < 2^63); routes non-negative and in their canonical dtype.
 *   token_ids: the reference checks nothing; the model records each array of integers in
 *   [0, 2^31 - 1] as an entry.
 *
 * Classes where syncroll is documented to be stricter than the reference set `stricter`
 * (syncroll may refuse where the model accepts, never the other way round): a duplicate key
 * anywhere, nesting deeper than SM_DEPTH_STRICT, a token_ids value that is not such an array,
 * token_ids inside an envelope, and the reference defects syncroll fails closed on (a blob cut
 * at an escaped-quote key, a blob attached to an envelope it was not cut from: misattributed).
 *
 * Everything is static inline: include it where it is used.
 */
#ifndef SPLICE_MODEL_H
#define SPLICE_MODEL_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_base64.h"
#include "sr_dtype.h"
#include "sr_envelope.h"
#include "sr_err.h"
#include "sr_fields.h"
#include "sr_splice.h"

#define SM_DEPTH_STRICT 900 /* deeper than this: syncroll may refuse (json.too_deep) */
#define SM_DEPTH_MAX    4000
#define SM_MAX_ENTRIES  256

enum { SM_OK = 0, SM_JSON, SM_UNTERMINATED, SM_LAYOUT, SM_ORPHAN, SM_ENVELOPE };
enum { SM_NULL, SM_FALSE, SM_TRUE, SM_INT, SM_FLOAT, SM_STR, SM_ARR, SM_OBJ };

typedef struct sm_node sm_node;
struct sm_node {
    int type;
    int64_t i;       /* SM_INT (when it fits int64) */
    int big;         /* SM_INT above INT64_MAX (still < 2^64) */
    char *s;         /* SM_STR bytes (decoded), or an object's key */
    size_t slen;     /* SM_STR length */
    size_t text_off; /* SM_STR: offset of its opening quote in the parser text */
    sm_node **kids;  /* SM_ARR items, SM_OBJ values */
    char **keys;     /* SM_OBJ keys (NUL-terminated; a key with NUL is kept whole by klen) */
    size_t *klen;
    size_t n, cap;
};

typedef struct sm_entry {
    int field; /* registry index */
    int kind;  /* SR_SPLICE_* */
    sr_dtype dtype;
    int ndim;
    int64_t shape[SR_NDIM_MAX];
    size_t nbytes;
    uint64_t hash; /* FNV-1a of the decoded bytes (int arrays: int32 LE values) */
} sm_entry;

typedef struct sm_blob {
    size_t start, len; /* in the body */
    size_t text_off;   /* offset of the placeholder's opening quote in the parser text */
    int escaped;       /* the key's opening quote was escaped */
} sm_blob;

typedef struct sm_result {
    int status; /* SM_* */
    int stricter;
    int dup;         /* a duplicate key was seen (last value kept) */
    const char *why; /* a short reason for a refusal or for `stricter` */
    size_t n;
    sm_entry e[SM_MAX_ENTRIES];
} sm_result;

static inline uint64_t sm_fnv(const void *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}
#define SM_FNV0 14695981039346656037ull

/* ---- the JSON parser (orjson's rules) ---- */

typedef struct sm_parser {
    const unsigned char *t;
    size_t n, p;
    int depth, maxdepth, dup;
} sm_parser;

static inline void sm_free(sm_node *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->n; i++) {
        sm_free(x->kids[i]);
        if (x->keys)
            free(x->keys[i]);
    }
    free(x->kids);
    free(x->keys);
    free(x->klen);
    free(x->s);
    free(x);
}

static inline void sm_ws(sm_parser *q)
{
    while (q->p < q->n &&
           (q->t[q->p] == ' ' || q->t[q->p] == '\t' || q->t[q->p] == '\n' || q->t[q->p] == '\r'))
        q->p++;
}

static inline int sm_hex4(sm_parser *q, unsigned *v)
{
    *v = 0;
    if (q->n - q->p < 4)
        return -1;
    for (int k = 0; k < 4; k++) {
        unsigned c = q->t[q->p++], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 32) >= 'a' && (c | 32) <= 'f')
            d = (c | 32) - 'a' + 10;
        else
            return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

static inline void sm_put_utf8(char *o, size_t *len, unsigned cp)
{
    if (cp < 0x80) {
        o[(*len)++] = (char)cp;
    } else if (cp < 0x800) {
        o[(*len)++] = (char)(0xc0 | cp >> 6);
        o[(*len)++] = (char)(0x80 | (cp & 63));
    } else if (cp < 0x10000) {
        o[(*len)++] = (char)(0xe0 | cp >> 12);
        o[(*len)++] = (char)(0x80 | (cp >> 6 & 63));
        o[(*len)++] = (char)(0x80 | (cp & 63));
    } else {
        o[(*len)++] = (char)(0xf0 | cp >> 18);
        o[(*len)++] = (char)(0x80 | (cp >> 12 & 63));
        o[(*len)++] = (char)(0x80 | (cp >> 6 & 63));
        o[(*len)++] = (char)(0x80 | (cp & 63));
    }
}

/* One UTF-8 sequence at q->p (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). */
static inline int sm_utf8(sm_parser *q)
{
    const unsigned char *t = q->t;
    unsigned c = t[q->p];
    int need;
    unsigned cp, min;
    if (c < 0x80)
        return q->p++, 0;
    if (c >= 0xc2 && c <= 0xdf)
        need = 1, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        need = 2, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        need = 3, cp = c & 0x07, min = 0x10000;
    else
        return -1;
    if (q->n - q->p <= (size_t)need)
        return -1;
    for (int k = 1; k <= need; k++) {
        unsigned d = t[q->p + (size_t)k];
        if ((d & 0xc0) != 0x80)
            return -1;
        cp = cp << 6 | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    q->p += (size_t)need + 1;
    return 0;
}

/* A string at q->p (the opening quote); *out gets its decoded bytes. */
static inline int sm_string(sm_parser *q, char **out, size_t *olen)
{
    size_t start = ++q->p;
    char *o = malloc(q->n - start + 1);
    size_t len = 0;
    if (!o)
        return -1;
    while (q->p < q->n) {
        unsigned c = q->t[q->p];
        if (c == '"') {
            q->p++;
            o[len] = '\0';
            *out = o;
            *olen = len;
            return 0;
        }
        if (c < 0x20)
            break;
        if (c == '\\') {
            if (++q->p >= q->n)
                break;
            unsigned e = q->t[q->p++], cp;
            const char *simple = "\"\\/bfnrt", *val = "\"\\/\b\f\n\r\t";
            const char *hit = e ? strchr(simple, (int)e) : NULL;
            if (hit) {
                o[len++] = val[hit - simple];
                continue;
            }
            if (e != 'u' || sm_hex4(q, &cp))
                break;
            if (cp >= 0xdc00 && cp <= 0xdfff) {
                /* a lone low surrogate */
                break;
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (q->n - q->p < 6 || q->t[q->p] != '\\' || q->t[q->p + 1] != 'u') {
                    break;
                }
                q->p += 2;
                if (sm_hex4(q, &lo) || lo < 0xdc00 || lo > 0xdfff) {
                    break;
                }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            sm_put_utf8(o, &len, cp);
            continue;
        }
        size_t at = q->p;
        if (sm_utf8(q)) {
            break;
        }
        memcpy(o + len, q->t + at, q->p - at);
        len += q->p - at;
    }
    free(o);
    return -1;
}

static inline int sm_number(sm_parser *q, sm_node *x)
{
    size_t s = q->p;
    const unsigned char *t = q->t;
    int isf = 0;
    if (q->p < q->n && t[q->p] == '-')
        q->p++;
    if (q->p >= q->n || t[q->p] < '0' || t[q->p] > '9')
        return -1;
    if (t[q->p] == '0')
        q->p++;
    else
        while (q->p < q->n && t[q->p] >= '0' && t[q->p] <= '9')
            q->p++;
    if (q->p < q->n && t[q->p] == '.') {
        isf = 1;
        if (++q->p >= q->n || t[q->p] < '0' || t[q->p] > '9')
            return -1;
        while (q->p < q->n && t[q->p] >= '0' && t[q->p] <= '9')
            q->p++;
    }
    if (q->p < q->n && (t[q->p] == 'e' || t[q->p] == 'E')) {
        isf = 1;
        q->p++;
        if (q->p < q->n && (t[q->p] == '+' || t[q->p] == '-'))
            q->p++;
        if (q->p >= q->n || t[q->p] < '0' || t[q->p] > '9')
            return -1;
        while (q->p < q->n && t[q->p] >= '0' && t[q->p] <= '9')
            q->p++;
    }
    char buf[512];
    size_t len = q->p - s;
    if (len >= sizeof(buf))
        return -1; /* not a case the generator makes: treated as refused */
    memcpy(buf, t + s, len);
    buf[len] = '\0';
    if (isf) {
        double d = strtod(buf, NULL);
        if (isinf(d)) {
            /* 1e400: orjson refuses */
            return -1;
        }
        x->type = SM_FLOAT;
        return 0;
    }
    errno = 0;
    x->type = SM_INT;
    /* orjson reads an integer literal outside [-2^63, 2^64 - 1] as a float (ijl/orjson issues
     * #53, #308, #473); one beyond a double is "number out of range" (#118). */
    if (buf[0] == '-') {
        long long v = strtoll(buf, NULL, 10);
        if (errno) {
            x->type = SM_FLOAT;
            if (isinf(strtod(buf, NULL))) {
                return -1;
            }
            return 0;
        }
        x->i = v;
    } else {
        unsigned long long v = strtoull(buf, NULL, 10);
        if (errno) {
            x->type = SM_FLOAT;
            if (isinf(strtod(buf, NULL))) {
                return -1;
            }
            return 0;
        }
        x->big = v > (unsigned long long)INT64_MAX;
        x->i = x->big ? INT64_MAX : (int64_t)v;
    }
    return 0;
}

static inline int sm_push(sm_node *x, sm_node *kid, char *key, size_t klen)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 4;
        sm_node **k = realloc(x->kids, nc * sizeof(*k));
        if (!k)
            return -1;
        x->kids = k;
        if (x->type == SM_OBJ) {
            char **ks = realloc(x->keys, nc * sizeof(*ks));
            if (!ks)
                return -1;
            x->keys = ks;
            size_t *kl = realloc(x->klen, nc * sizeof(*kl));
            if (!kl)
                return -1;
            x->klen = kl;
        }
        x->cap = nc;
    }
    x->kids[x->n] = kid;
    if (x->type == SM_OBJ) {
        x->keys[x->n] = key;
        x->klen[x->n] = klen;
    }
    x->n++;
    return 0;
}

static inline sm_node *sm_value(sm_parser *q);

static inline sm_node *sm_container(sm_parser *q, sm_node *x)
{
    int obj = x->type == SM_OBJ;
    char close = obj ? '}' : ']';
    q->p++;
    if (++q->depth > q->maxdepth)
        q->maxdepth = q->depth;
    if (q->depth > SM_DEPTH_MAX)
        goto bad;
    sm_ws(q);
    if (q->p < q->n && q->t[q->p] == close) {
        q->p++;
        q->depth--;
        return x;
    }
    for (;;) {
        char *key = NULL;
        size_t klen = 0;
        sm_ws(q);
        if (obj) {
            if (q->p >= q->n || q->t[q->p] != '"' || sm_string(q, &key, &klen))
                goto bad;
            sm_ws(q);
            if (q->p >= q->n || q->t[q->p] != ':') {
                free(key);
                goto bad;
            }
            q->p++;
        }
        sm_node *v = sm_value(q);
        if (!v) {
            free(key);
            goto bad;
        }
        size_t same = SIZE_MAX;
        for (size_t i = 0; obj && i < x->n; i++)
            if (x->klen[i] == klen && memcmp(x->keys[i], key, klen) == 0)
                same = i;
        if (same != SIZE_MAX) { /* a Python dict: the last value at the first position */
            q->dup = 1;
            sm_free(x->kids[same]);
            x->kids[same] = v;
            free(key);
        } else if (sm_push(x, v, key, klen)) {
            free(key);
            sm_free(v);
            goto bad;
        }
        sm_ws(q);
        if (q->p < q->n && q->t[q->p] == ',') {
            q->p++;
            continue;
        }
        if (q->p < q->n && q->t[q->p] == close) {
            q->p++;
            q->depth--;
            return x;
        }
        goto bad;
    }
bad:
    sm_free(x);
    return NULL;
}

static inline sm_node *sm_value(sm_parser *q)
{
    sm_ws(q);
    if (q->p >= q->n)
        return NULL;
    sm_node *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    unsigned c = q->t[q->p];
    static const char *const words[3] = {"null", "false", "true"};
    for (int w = 0; w < 3; w++) {
        size_t l = strlen(words[w]);
        if (q->n - q->p >= l && memcmp(q->t + q->p, words[w], l) == 0) {
            q->p += l;
            x->type = SM_NULL + w;
            return x;
        }
    }
    if (c == '"') {
        x->type = SM_STR;
        x->text_off = q->p;
        if (sm_string(q, &x->s, &x->slen) == 0)
            return x;
    } else if (c == '{' || c == '[') {
        x->type = c == '{' ? SM_OBJ : SM_ARR;
        return sm_container(q, x);
    } else if (sm_number(q, x) == 0) {
        return x;
    }
    free(x);
    return NULL;
}

/* ---- the reference's splice ---- */

typedef struct sm_state {
    const sr_fields *fields;
    const char *body;
    sm_blob *q[SR_FIELDS_MAX]; /* per-field FIFO of blobs */
    size_t qn[SR_FIELDS_MAX], qhead[SR_FIELDS_MAX];
    sm_result *r;
    int depth;
} sm_state;

static inline int sm_fail(sm_result *r, int status, const char *why)
{
    if (r->status == SM_OK) {
        r->status = status;
        r->why = why;
    }
    return -1;
}

static inline void sm_stricter(sm_result *r, const char *why)
{
    if (!r->stricter && r->status == SM_OK)
        r->why = why;
    r->stricter = 1;
}

static inline const sr_field_def *sm_field(const sm_state *st, const char *key, size_t klen,
                                           int *idx)
{
    for (size_t i = 0; i < sr_fields_count(st->fields); i++) {
        const sr_field_def *d = sr_fields_at(st->fields, i);
        if (d->name_len == klen && memcmp(d->name, key, klen) == 0) {
            *idx = (int)i;
            return d;
        }
    }
    return NULL;
}

static inline const sm_node *sm_member(const sm_node *o, const char *key)
{
    for (size_t i = 0; o && o->type == SM_OBJ && i < o->n; i++)
        if (o->klen[i] == strlen(key) && memcmp(o->keys[i], key, o->klen[i]) == 0)
            return o->kids[i];
    return NULL;
}

/* unpack_ndarray (+ route compaction) of `v`, whose blob is b (NULL: data was not spliced). */
static inline int sm_unpack(sm_state *st, const sr_field_def *d, int idx, const sm_node *v,
                            const sm_blob *b)
{
    sm_result *r = st->r;
    if (v->type != SM_OBJ)
        return sm_fail(r, SM_ENVELOPE, "payload not an object");
    const sm_node *dt = sm_member(v, "dtype"), *sh = sm_member(v, "shape");
    if (!dt || !sh || !b || (sh->type != SM_ARR && sh->type != SM_STR && sh->type != SM_OBJ))
        return sm_fail(r, SM_ENVELOPE, "invalid packed array envelope");
    const char *txt = st->body + b->start;
    unsigned char *bytes = malloc(sr_base64_decoded_max(b->len) + 1);
    size_t nb = 0;
    if (!bytes || sr_base64_decode(bytes, &nb, txt, b->len, SR_B64_SCALAR, NULL)) {
        free(bytes);
        return sm_fail(r, SM_ENVELOPE, "invalid base64");
    }
    sr_dtype dtype = SR_DTYPE_INVALID;
    int rc = -1;
    if (dt->type != SM_STR || strlen(dt->s) != dt->slen ||
        sr_dtype_from_name(&dtype, dt->s, dt->slen, NULL) || !(d->dtypes & SR_DTYPE_BIT(dtype))) {
        sm_fail(r, SM_ENVELOPE, "dtype");
        goto out;
    }
    /* tuple(shape): a string gives its characters, an object its keys: never ints. */
    size_t ndim = sh->type == SM_STR ? sh->slen : sh->n;
    int ok = sh->type == SM_ARR && ndim == (size_t)d->ndim;
    unsigned __int128 prod = 1, nz = sr_dtype_size(dtype);
    int64_t shape[SR_NDIM_MAX] = {0};
    for (size_t k = 0; ok && k < ndim; k++) {
        const sm_node *x = sh->kids[k];
        ok = x->type == SM_INT && !x->big && x->i >= 0;
        if (ok) {
            shape[k] = x->i;
            prod *= (uint64_t)x->i;
            if (prod > ((unsigned __int128)1 << 64))
                prod = (unsigned __int128)1 << 64;
            if (x->i)
                nz *= (uint64_t)x->i;
            if (nz > ((unsigned __int128)1 << 64))
                nz = (unsigned __int128)1 << 64;
        }
    }
    if (!ok) {
        sm_fail(r, SM_ENVELOPE, "shape");
        goto out;
    }
    if (prod * sr_dtype_size(dtype) != nb) {
        sm_fail(r, SM_ENVELOPE, "byte count");
        goto out;
    }
    if (nz >= ((unsigned __int128)1 << 63)) {
        sm_fail(r, SM_ENVELOPE, "array is too big");
        goto out;
    }
    if (d->canonical) {
        int64_t lo = 0, hi = 0;
        size_t item = sr_dtype_size(dtype);
        for (size_t k = 0; k < nb / item; k++) {
            int64_t x = dtype == SR_DTYPE_UINT8 ? bytes[k]
                        : dtype == SR_DTYPE_INT16
                            ? (int16_t)(bytes[2 * k] | bytes[2 * k + 1] << 8)
                            : (int32_t)((uint32_t)bytes[4 * k] | (uint32_t)bytes[4 * k + 1] << 8 |
                                        (uint32_t)bytes[4 * k + 2] << 16 |
                                        (uint32_t)bytes[4 * k + 3] << 24);
            lo = k == 0 || x < lo ? x : lo;
            hi = k == 0 || x > hi ? x : hi;
        }
        sr_dtype want = hi < 256 ? SR_DTYPE_UINT8 : hi < 32768 ? SR_DTYPE_INT16 : SR_DTYPE_INT32;
        if (lo < 0 || want != dtype) {
            sm_fail(r, SM_ENVELOPE, lo < 0 ? "negative routes" : "non-canonical dtype");
            goto out;
        }
    }
    if (r->n < SM_MAX_ENTRIES) {
        sm_entry *e = &r->e[r->n++];
        e->field = idx;
        e->kind = SR_SPLICE_ENVELOPE;
        e->dtype = dtype;
        e->ndim = (int)ndim;
        memcpy(e->shape, shape, sizeof(shape));
        e->nbytes = nb;
        e->hash = sm_fnv(bytes, nb, SM_FNV0);
    }
    rc = 0;
out:
    free(bytes);
    return rc;
}

static inline void sm_ints(sm_state *st, int idx, const sr_field_def *d, const sm_node *v)
{
    sm_result *r = st->r;
    int ok = v->type == SM_ARR;
    uint64_t h = SM_FNV0;
    for (size_t k = 0; ok && k < v->n; k++) {
        const sm_node *x = v->kids[k];
        ok = x->type == SM_INT && !x->big && x->i >= d->min && x->i <= d->max &&
             x->i <= INT32_MAX && x->i >= INT32_MIN;
        int32_t w = ok ? (int32_t)x->i : 0;
        unsigned char le[4] = {(unsigned char)w, (unsigned char)(w >> 8), (unsigned char)(w >> 16),
                               (unsigned char)((uint32_t)w >> 24)};
        h = sm_fnv(le, 4, h);
    }
    if (!ok) {
        sm_stricter(r, "token_ids value checks");
        return;
    }
    if (r->n < SM_MAX_ENTRIES) {
        sm_entry *e = &r->e[r->n++];
        memset(e, 0, sizeof(*e));
        e->field = idx;
        e->kind = SR_SPLICE_INT_ARRAY;
        e->dtype = SR_DTYPE_INT32;
        e->ndim = 1;
        e->shape[0] = (int64_t)v->n;
        e->nbytes = v->n * 4;
        e->hash = h;
    }
}

/* Marks token_ids anywhere below an attached envelope: syncroll refuses what it cut there. */
static inline void sm_ints_below(sm_state *st, const sm_node *x)
{
    int idx;
    for (size_t i = 0; i < x->n; i++) {
        const sr_field_def *d =
            x->type == SM_OBJ ? sm_field(st, x->keys[i], x->klen[i], &idx) : NULL;
        if (d && d->kind == SR_FIELD_INT_ARRAY)
            sm_stricter(st->r, "token_ids inside an envelope");
        if (x->kids[i]->type == SM_OBJ || x->kids[i]->type == SM_ARR)
            sm_ints_below(st, x->kids[i]);
    }
}

/* _restore_packed_data, then the decode of what it found, in document order. */
static inline int sm_walk(sm_state *st, const sm_node *x)
{
    for (size_t i = 0; i < x->n; i++) {
        const sm_node *v = x->kids[i];
        int idx = -1;
        const sr_field_def *d =
            x->type == SM_OBJ ? sm_field(st, x->keys[i], x->klen[i], &idx) : NULL;
        if (d && d->kind == SR_FIELD_INT_ARRAY) {
            sm_ints(st, idx, d, v);
            continue;
        }
        if (d && v->type == SM_OBJ && sm_member(v, "data")) {
            if (st->qhead[idx] == st->qn[idx])
                return sm_fail(st->r, SM_LAYOUT, "envelope survived unspliced");
            const sm_blob *b = &st->q[idx][st->qhead[idx]++];
            const sm_node *data = sm_member(v, "data");
            if (data->type != SM_STR || data->text_off != b->text_off)
                sm_stricter(st->r, "a blob attached to an envelope it was not cut from");
            sm_ints_below(st, v);
            if (sm_unpack(st, d, idx, v, b))
                return -1;
            continue;
        }
        if (d && v->type == SM_NULL) {
            if (!d->nullable)
                return sm_fail(st->r, SM_ENVELOPE, "null for a non-nullable field");
            if (st->r->n < SM_MAX_ENTRIES) {
                sm_entry *e = &st->r->e[st->r->n++];
                memset(e, 0, sizeof(*e));
                e->field = idx;
                e->kind = SR_SPLICE_NULL;
                e->hash = SM_FNV0;
            }
            continue;
        }
        if (d) /* a registered packed key holding something else: unpack refuses it */
            return sm_fail(st->r, SM_ENVELOPE, "not an envelope");
        if ((v->type == SM_OBJ || v->type == SM_ARR) && sm_walk(st, v))
            return -1;
    }
    return 0;
}

/* The bytes before `anchor` are `"name"` (the quote may be escaped). */
static inline int sm_key_before(const char *body, size_t anchor, const sr_field_def *d)
{
    size_t k = d->name_len + 2;
    return anchor >= k && body[anchor - k] == '"' && body[anchor - 1] == '"' &&
           memcmp(body + anchor - k + 1, d->name, d->name_len) == 0;
}

/* Runs the model on `len` bytes of `body` with registry `fields` (packed fields and integer
 * arrays as registered). */
static inline void sm_run(sm_result *r, const sr_fields *fields, const char *body, size_t len)
{
    static const char anchor[] = ":{\"data\":\"";
    memset(r, 0, sizeof(*r));
    sm_state st;
    memset(&st, 0, sizeof(st));
    st.fields = fields;
    st.body = body;
    st.r = r;
    char *text = malloc(len + 1);
    size_t tl = 0, copied = 0, scan = 0;
    if (!text) {
        sm_fail(r, SM_JSON, "out of memory");
        return;
    }
    for (;;) {
        const char *a = NULL;
        for (size_t p = scan; p + 10 <= len && !a; p++)
            if (memcmp(body + p, anchor, 10) == 0)
                a = body + p;
        if (!a)
            break;
        size_t at = (size_t)(a - body);
        int idx = -1;
        for (size_t i = 0; i < sr_fields_count(fields) && idx < 0; i++) {
            const sr_field_def *d = sr_fields_at(fields, i);
            if (d->kind == SR_FIELD_PACKED && sm_key_before(body, at, d))
                idx = (int)i;
        }
        if (idx < 0) {
            scan = at + 10;
            continue;
        }
        size_t start = at + 10, end = start;
        while (end < len && body[end] != '"')
            end++;
        if (end == len) {
            sm_fail(r, SM_UNTERMINATED, "unterminated base64");
            for (size_t i = 0; i < SR_FIELDS_MAX; i++)
                free(st.q[i]);
            free(text);
            return;
        }
        memcpy(text + tl, body + copied, start - copied);
        tl += start - copied;
        sm_blob *nq = realloc(st.q[idx], (st.qn[idx] + 1) * sizeof(sm_blob));
        if (!nq)
            break;
        st.q[idx] = nq;
        const sr_field_def *d = sr_fields_at(fields, (size_t)idx);
        size_t qpos = at - d->name_len - 2, bs = 0;
        while (qpos > bs && body[qpos - 1 - bs] == '\\')
            bs++;
        sm_blob b = {start, end - start, tl - 1, (int)(bs % 2)};
        if (b.escaped)
            sm_stricter(r, "a blob cut at an escaped-quote key");
        st.q[idx][st.qn[idx]++] = b;
        copied = scan = end;
    }
    memcpy(text + tl, body + copied, len - copied);
    tl += len - copied;
    sm_parser q = {(const unsigned char *)text, tl, 0, 0, 0, 0};
    sm_node *doc = sm_value(&q);
    if (doc) {
        sm_ws(&q);
        if (q.p != q.n) {
            sm_free(doc);
            doc = NULL;
        }
    }
    r->dup = q.dup;
    if (q.dup)
        sm_stricter(r, "duplicate keys");
    if (q.maxdepth > SM_DEPTH_STRICT)
        sm_stricter(r, "deep nesting");
    if (!doc) {
        sm_fail(r, SM_JSON, "JSON decode error");
    } else if ((doc->type == SM_OBJ || doc->type == SM_ARR) && sm_walk(&st, doc) == 0) {
        for (size_t i = 0; i < SR_FIELDS_MAX; i++)
            if (st.qhead[i] != st.qn[i])
                sm_fail(r, SM_ORPHAN, "spliced blobs found no envelope");
    } else if (doc->type != SM_OBJ && doc->type != SM_ARR) {
        for (size_t i = 0; i < SR_FIELDS_MAX; i++)
            if (st.qn[i])
                sm_fail(r, SM_ORPHAN, "spliced blobs found no envelope");
    }
    sm_free(doc);
    for (size_t i = 0; i < SR_FIELDS_MAX; i++)
        free(st.q[i]);
    free(text);
}

/* ---- the comparison ---- */

/* A summary of a syncroll result in the model's terms, or of its error. */
static inline void sm_from_splice(sm_result *o, const sr_fields *f, int rc,
                                  const sr_splice_result *r)
{
    memset(o, 0, sizeof(*o));
    if (rc) {
        o->status = -rc;
        return;
    }
    for (size_t i = 0; i < r->count && o->n < SM_MAX_ENTRIES; i++) {
        const sr_splice_entry *x = &r->entries[i];
        sm_entry *e = &o->e[o->n++];
        memset(e, 0, sizeof(*e));
        e->field = (int)sr_fields_index(f, x->field);
        e->kind = (int)x->kind;
        if (x->kind != SR_SPLICE_NULL) {
            e->dtype = x->array.dtype;
            e->ndim = x->array.ndim;
            memcpy(e->shape, x->array.shape, sizeof(int64_t) * (size_t)x->array.ndim);
            e->nbytes = x->array.nbytes;
        }
        e->hash = sm_fnv(x->array.data, x->kind == SR_SPLICE_NULL ? 0 : x->array.nbytes, SM_FNV0);
    }
}

static inline int sm_same_entries(const sm_result *a, const sm_result *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const sm_entry *x = &a->e[i], *y = &b->e[i];
        if (x->field != y->field || x->kind != y->kind || x->dtype != y->dtype ||
            x->ndim != y->ndim || x->nbytes != y->nbytes || x->hash != y->hash ||
            memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
            return 0;
    }
    return 1;
}

/*
 * Checks syncroll's outcome (rc, result) against the model's `m`. Returns NULL if they agree
 * as documented, else a static message. Rules: syncroll accepting means the model accepts
 * with exactly the same entries; syncroll refusing where the model accepts is allowed only in
 * the stricter classes; when both refuse, a model JSON decode error (not stricter) must be a
 * transient error in syncroll, and an envelope, layout or orphan error a protocol one; a body
 * cut inside a blob may be refused with any class.
 */
static inline const char *sm_compare(const sm_result *m, const sr_fields *f, int rc,
                                     const sr_splice_result *res)
{
    if (rc == 0) {
        if (m->status != SM_OK)
            return "syncroll accepts a body the reference refuses";
        sm_result s;
        sm_from_splice(&s, f, 0, res);
        if (!sm_same_entries(m, &s))
            return "syncroll accepts with values that differ from the reference's";
        return NULL;
    }
    sr_class cls = sr_code_class(rc);
    if (m->status == SM_OK)
        return m->stricter ? NULL : "syncroll refuses a body the reference accepts";
    if (m->stricter)
        return NULL;
    /* "unterminated base64" is a ValueError the reference does not retry, while syncroll's
     * splice.unterminated is transient by design (quirk retry_json_decode_only restores the
     * reference): any refusal agrees. */
    if (m->status == SM_JSON && cls != SR_CLASS_TRANSIENT)
        return "the reference's JSON decode error is not transient in syncroll";
    if (m->status >= SM_LAYOUT && cls != SR_CLASS_PROTOCOL)
        return "the reference's envelope error is not a protocol error in syncroll";
    return NULL;
}

#endif /* SPLICE_MODEL_H */
