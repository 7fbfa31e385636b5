/* Strict JSON into cJSON nodes carved from a reusable arena (see sr_jdom.h). */
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sr_buf.h"
#include "sr_jdom_priv.h"
#include "sr_text.h"

/* ---- nodes (the arena, its growth, errors and strings: sr_jdom_str.c) ---- */

static inline __attribute__((always_inline)) cJSON *new_node(jdom_parser *p)
{
    cJSON *c = take(p, sizeof(cJSON), _Alignof(cJSON));
    if (c)
        memset(c, 0, sizeof(*c));
    return c;
}

/* Appends a child; the first child's prev always points at the last, as cJSON leaves it. */
static inline __attribute__((always_inline)) cJSON *new_child(jdom_parser *p, cJSON *parent)
{
    cJSON *c = new_node(p);
    if (!c)
        return NULL;
    cJSON *first = parent->child;
    if (!first) {
        parent->child = c;
        c->prev = c;
    } else {
        cJSON *last = first->prev;
        last->next = c;
        c->prev = last;
        first->prev = c;
    }
    return c;
}

static const unsigned char *skip_ws(const unsigned char *s)
{
    while (*s <= ' ' && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
        s++;
    return s;
}

/* ---- numbers ---- */

/*
 * strtod of the token's characters (in the "C" locale), which is what cJSON stores. Long tokens
 * are copied into the arena for the call and the bytes given back afterwards.
 */
static int convert_slow(jdom_parser *p, const unsigned char *s, size_t len, double *out)
{
    sr_jdom *j = p->j;
    char small[64], *buf = small;
    chunk *cur = j->cur;
    uintptr_t pos = j->pos, lim = j->lim;
    size_t behind = j->behind;
    if (len >= sizeof(small) && !(buf = take(p, len + 1, 1)))
        return p->rc;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *e = NULL;
    *out = strtod_l(buf, &e, j->c_locale);
    j->cur = cur;
    j->pos = pos;
    j->lim = lim;
    j->behind = behind;
    if (e != buf + len)
        return p->rc = sr_err_set_at(p->err, SR_E_INTERNAL, (int64_t)(s - p->t),
                                     "json: strtod read %td of the %zu characters of a number",
                                     e - buf, len);
    return 0;
}

/* Powers of ten of the digit runs: a run of k < 8 digits scales the mantissa by k_run10[k]. */
static const uint64_t k_run10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

/* The high bit of every byte of w that is not an ASCII digit. Exact for the lowest such byte:
 * '0'..'9' + 0x46 and - 0x30 neither carry nor borrow, so the bytes below it pass nothing up. */
static inline uint64_t non_digits(uint64_t w)
{
    return ((w + 0x4646464646464646ull) | (w - 0x3030303030303030ull)) & 0x8080808080808080ull;
}

/* The value of the eight digit values (0..9) in the bytes of d, the first digit the lowest
 * byte: pairs, then quads, then the eight. */
static inline uint64_t eight_values(uint64_t d)
{
    d = (d * 2561) >> 8;
    d = ((d & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
    return (uint32_t)(((d & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32);
}

/*
 * Gathers the digit run at q into *m (m = m * 10 + digit, modulo 2^64) and counts it in *nd,
 * eight bytes a step where eight are readable: a step takes the step's k leading digits at once
 * (shifted to the top of the word, so the bytes after them fall off and zeros lead) and ends the
 * run when k < 8. It leaves the text's last bytes to the byte loop. Returns where it stopped. m
 * is used only while nd <= 19 (parse_number), where it is exact; past that it may wrap.
 */
static inline __attribute__((always_inline)) const unsigned char *
digit_run(const jdom_parser *p, const unsigned char *q, uint64_t *m, size_t *nd)
{
    while ((uintptr_t)q <= p->wlim) {
        uint64_t w, bad;
        memcpy(&w, q, 8);
        bad = non_digits(w);
        if (!bad) {
            *m = *m * 100000000u + eight_values(w & 0x0F0F0F0F0F0F0F0Full);
            *nd += 8;
            q += 8;
            continue;
        }
        size_t k = (size_t)__builtin_ctzll(bad) >> 3;
        if (k == 0)
            break;
        *m = *m * k_run10[k] + eight_values((w & 0x0F0F0F0F0F0F0F0Full) << (64 - 8 * k));
        *nd += k;
        q += k;
        break;
    }
    return q;
}

/* The digits at q that digit_run left, one by one, as it gathers them. */
static inline __attribute__((always_inline)) const unsigned char *
digit_bytes(const unsigned char *q, uint64_t *m, size_t *nd)
{
    for (; *q >= '0' && *q <= '9'; q++, ++*nd)
        *m = *m * 10 + (uint64_t)(*q - '0');
    return q;
}

/*
 * Parses -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at *ps. A number of up to 19 digits
 * (leading zeros of the fraction included) is gathered into an integer mantissa m, and
 * value = m * 10^e10 is rounded exactly as strtod rounds it:
 * by one double operation when m and the power of ten are exact doubles (Clinger's fast path),
 * else by 128-bit integer arithmetic (sr_jdom_num.c), else (and for longer numbers) by strtod
 * itself.
 */
static inline __attribute__((always_inline)) int parse_number(jdom_parser *p,
                                                              const unsigned char **ps, cJSON *node)
{
    const unsigned char *s = *ps, *q = s;
    uint64_t m = 0;
    size_t nd = 0, frac = 0;
    int exp = 0, eneg = 0, neg = *q == '-', integral = 1;
    q += neg;
    if (*q == '0') {
        q++;
    } else if (*q >= '1' && *q <= '9') {
        /* The first digit alone: most integer parts (a logprob's) have one. */
        m = (uint64_t)(*q++ - '0');
        nd = 1;
        if (*q >= '0' && *q <= '9')
            q = digit_bytes(digit_run(p, q, &m, &nd), &m, &nd);
    } else {
        return sr_jdom_i_syntax(p, q, "a number needs a digit here");
    }
    if (*q == '.') {
        integral = 0;
        if (!(*++q >= '0' && *q <= '9'))
            return sr_jdom_i_syntax(p, q, "a digit must follow the decimal point");
        const unsigned char *f = q;
        q = digit_bytes(digit_run(p, q, &m, &nd), &m, &nd);
        frac = (size_t)(q - f);
    }
    if (*q == 'e' || *q == 'E') {
        integral = 0;
        q++;
        if (*q == '+' || *q == '-')
            eneg = *q++ == '-';
        if (!(*q >= '0' && *q <= '9'))
            return sr_jdom_i_syntax(p, q, "an exponent needs a digit");
        for (; *q >= '0' && *q <= '9'; q++)
            exp = exp < 100000 ? exp * 10 + (*q - '0') : exp;
    }
    /* m holds the digits exactly while nd <= 19 (a longer number goes to strtod); nd <= 19
     * also bounds frac, so e10 cannot overflow. */
    int e10 = nd <= 19 ? (eneg ? -exp : exp) - (int)frac : INT_MAX;
    double d = 0;
    if (e10 == INT_MAX || !sr_jdom_i_decimal(m, e10, &d)) {
        if (convert_slow(p, s, (size_t)(q - s), &d))
            return p->rc;
        /* strtod read the sign. Only its values can be infinite: the others are below
         * 2^64 * 10^64. */
        if ((p->j->flags & SR_JDOM_REFERENCE) && isinf(d))
            return sr_jdom_i_fail_at(p, SR_E_JSON_NUMBER_OVERFLOW, s,
                                     "a number that overflows a double");
    } else {
        d = neg ? -d : d;
    }
    node->type |= cJSON_Number | (integral ? 0 : p->not_int);
    node->valuedouble = d;
    /* Saturated as cJSON does (d >= INT_MAX gives INT_MAX, d <= INT_MIN gives INT_MIN), with a
     * clamp the compiler makes two min/max instructions. */
    double c = d < (double)INT_MAX ? d : (double)INT_MAX;
    c = c > (double)INT_MIN ? c : (double)INT_MIN;
    node->valueint = (int)c;
    *ps = q;
    return 0;
}

/* ---- values ---- */

static int literal(jdom_parser *p, const unsigned char **ps, const char *lit, size_t len)
{
    const unsigned char *s = *ps;
    for (size_t i = 0; i < len; i++)
        if (s[i] != (unsigned char)lit[i])
            return sr_jdom_i_syntax(p, s + i,
                                    "invalid literal (true, false and null are the only ones)");
    *ps = s + len;
    return 0;
}

/* A value other than an array or object, at *ps. */
static int parse_scalar(jdom_parser *p, const unsigned char **ps, cJSON *node)
{
    switch (**ps) {
    case '"': {
        size_t len;
        if (sr_jdom_i_parse_string(p, ps, &node->valuestring, &len))
            return p->rc;
        node->type |= cJSON_String | (p->nul ? SR_JDOM_HAS_NUL : 0);
        return 0;
    }
    case 't':
        node->type |= cJSON_True;
        node->valueint = 1;
        return literal(p, ps, "true", 4);
    case 'f':
        node->type |= cJSON_False;
        return literal(p, ps, "false", 5);
    case 'n':
        node->type |= cJSON_NULL;
        return literal(p, ps, "null", 4);
    default:
        if (**ps == '-' || (**ps >= '0' && **ps <= '9'))
            return parse_number(p, ps, node);
        return sr_jdom_i_syntax(p, *ps,
                                *ps == p->end ? "the text ends where a value should start"
                                              : "a value cannot start with this byte");
    }
}

/* Sets p->kw, p->km, p->kq and p->kpat_len from p->last_key (see jdom_parser), whose text has
 * its opening quote at `at`. */
static void key_pattern(jdom_parser *p, const unsigned char *at)
{
    unsigned char w[16] = {0};
    size_t n = p->last_len + 2;
    p->kpat_len = 0;
    if (!p->last_key || n > sizeof(w) || (p->j->flags & SR_JDOM_I_GENERAL))
        return;
    /* The key has no escape, so its text is its bytes, then the closing quote. */
    if (p->end - at >= 16)
        memcpy(w, at + 1, sizeof(w));
    else
        memcpy(w, at + 1, n - 1);
    w[n - 1] = ':';
    memcpy(p->kw, w, sizeof(w));
    p->km[0] = sr_jdom_i_low_bytes(n);
    p->km[1] = n > 8 ? sr_jdom_i_low_bytes(n - 8) : 0;
    p->kq[0] = sr_jdom_i_low_bytes(n - 1);
    p->kq[1] = n > 9 ? sr_jdom_i_low_bytes(n - 9) : 0;
    p->kw[0] &= p->km[0];
    p->kw[1] &= p->km[1];
    p->kpat_len = n;
}

/* Whether the key whose quote is at `at` is the last escape-free key again: its bytes (no quote,
 * backslash, control byte or NUL, and valid UTF-8 under the reference rules) are then exactly
 * this key's text. Two word compares with its pattern where it has one and 16 bytes are
 * readable; else one memcmp where the text has the key's bytes and the closing quote's before
 * its end, or a byte compare that stops at the first difference, so it never reads past the
 * text's NUL. */
static inline int same_key(const jdom_parser *p, const unsigned char *at)
{
    const unsigned char *k = (const unsigned char *)p->last_key;
    size_t len = p->last_len, i = 0;
    if (p->kpat_len && p->end - at >= 16) {
        uint64_t w0, w1;
        memcpy(&w0, at + 1, 8);
        memcpy(&w1, at + 9, 8);
        return !(((w0 ^ p->kw[0]) & p->kq[0]) | ((w1 ^ p->kw[1]) & p->kq[1]));
    }
    if (k && (size_t)(p->end - at) > len + 1)
        i = memcmp(at + 1, k, len) == 0 ? len : 0; /* the text holds at[1 .. len + 1] */
    else
        while (k && i < len && at[1 + i] == k[i])
            i++;
    return k && i == len && at[1 + len] == '"';
}

/* An object member's key and colon, at *ps (whitespace skipped), into node->string. */
static int parse_key(jdom_parser *p, const unsigned char **ps, cJSON *node)
{
    if (**ps != '"')
        return sr_jdom_i_syntax(p, *ps, "expected a string key");
    const unsigned char *at = *ps;
    size_t len = p->last_len;
    if (same_key(p, at)) {
        node->string = (char *)p->last_key;
        *ps = at + len + 2;
    } else {
        if (sr_jdom_i_parse_string(p, ps, &node->string, &len))
            return p->rc;
        node->type |= p->nul ? SR_JDOM_HAS_NUL : 0;
        p->last_key = p->esc ? NULL : node->string;
        p->last_len = len;
        key_pattern(p, at);
    }
    int rc = (p->j->flags & SR_JDOM_REFERENCE)
                 ? sr_jdom_i_key_push(p->j, node->string, len, (size_t)(at - p->t), p->err)
                 : 0;
    if (rc)
        return p->rc = rc;
    const unsigned char *s = skip_ws(*ps);
    if (*s != ':')
        return sr_jdom_i_syntax(p, s, "expected ':' after a key");
    *ps = skip_ws(s + 1);
    return 0;
}

/* At the '{' at o: whether the text goes on with `"<the last key>":` and a value other than an
 * array or object, without whitespace; *v is then the value's first byte. */
static inline int repeats_key(const jdom_parser *p, const unsigned char *o, const unsigned char **v)
{
    const unsigned char *at = o + 1; /* the key's quote */
    uint64_t w0, w1;
    /* The text's NUL at p->end is readable, so 16 bytes after the quote are when at + 16 <= end. */
    if (!p->kpat_len || *at != '"' || p->end - at < 16)
        return 0;
    memcpy(&w0, at + 1, 8);
    memcpy(&w1, at + 9, 8);
    if (((w0 ^ p->kw[0]) & p->km[0]) | ((w1 ^ p->kw[1]) & p->km[1]))
        return 0;
    const unsigned char *x = at + 1 + p->kpat_len;
    if (*x == '{' || *x == '[' || skip_ws(x) != x)
        return 0;
    *v = x;
    return 1;
}

/*
 * The fast path of the arrays of one-key objects in response bodies ({"logprob":-0.25}): at the
 * '{' of *pobj (*ps), an object of the form repeats_key accepts. Makes the member and parses its
 * value exactly as the general path does (parse_tree and parse_key: the node, the key's record
 * under the reference rules, the value; the same errors in the same order), without the general
 * loop's turns. When the object closes at once and is an element of an array followed by ','
 * and another object of that form, the next object is made and filled the same way (new_child,
 * as the loop would). Returns 0 when the first object is not of that form (nothing done), 1 with
 * *ps after the value of a member whose object does not close at once (that object in *pobj,
 * its key_base[depth] set), 2 with *ps after the '}' of the last object made, or the error.
 */
static int one_member(jdom_parser *p, const unsigned char **ps, cJSON **pobj, size_t depth)
{
    sr_jdom *j = p->j;
    const unsigned char *s = *ps, *v;
    cJSON *obj = *pobj, *arr = depth ? j->stack[depth - 1] : NULL;
    if (!repeats_key(p, s, &v))
        return 0;
    if (arr && (arr->type & 0xFF) != cJSON_Array)
        arr = NULL;
    int ref = (j->flags & SR_JDOM_REFERENCE) != 0;
    for (;;) {
        cJSON *c = new_node(p);
        if (!c)
            return p->rc;
        obj->child = c;
        c->prev = c;
        c->string = (char *)p->last_key;
        j->key_base[depth] = j->nkeys;
        if (ref) {
            int rc = sr_jdom_i_key_push(j, c->string, p->last_len, (size_t)(s + 1 - p->t), p->err);
            if (rc)
                return p->rc = rc;
        }
        s = v;
        /* A number (a logprob's) here, without parse_scalar's dispatch. */
        if (*s == '-' || (*s >= '0' && *s <= '9') ? parse_number(p, &s, c) : parse_scalar(p, &s, c))
            return p->rc;
        if (*s != '}') {
            *ps = s;
            *pobj = obj;
            return 1;
        }
        /* Closed at once, as parse_tree closes an object of one key. */
        s++;
        if (ref)
            j->nkeys = j->key_base[depth];
        if (!arr || s[0] != ',' || s[1] != '{' || !repeats_key(p, s + 1, &v))
            break;
        s++;
        if (!(obj = new_child(p, arr)))
            return p->rc;
        obj->type |= cJSON_Object;
    }
    *ps = s;
    return 2;
}

/*
 * The whole text, iteratively: j->stack holds the open arrays and objects. Each turn of the
 * loop fills `node` with the value at s, then closes containers until a comma continues one.
 */
static int parse_tree(jdom_parser *p, cJSON **root)
{
    cJSON **stack = p->j->stack;
    size_t depth = 0;
    int ref = (p->j->flags & SR_JDOM_REFERENCE) != 0;
    const unsigned char *s = skip_ws(p->t);
    cJSON *parent = NULL, *node = new_node(p);
    if (!(*root = node))
        return p->rc;
    for (;;) {
        unsigned char c = *s;
        if (c == '{' || c == '[') {
            if (depth == SR_JDOM_MAX_DEPTH)
                return sr_jdom_i_fail_at(p, ref ? SR_E_JSON_TOO_DEEP : SR_E_JSON_SYNTAX, s,
                                         "arrays and objects nested deeper than 1000");
            node->type |= c == '{' ? cJSON_Object : cJSON_Array;
            int one = c == '{' ? one_member(p, &s, &node, depth) : 0;
            if (one < 0)
                return p->rc;
            if (one == 2) {
                /* Closed at once (one_member closed it as the loop below would). */
            } else if (one) {
                stack[depth++] = parent = node;
                node = node->child;
            } else {
                s = skip_ws(s + 1);
                if (*s != (c == '{' ? '}' : ']')) {
                    p->j->key_base[depth] = p->j->nkeys;
                    stack[depth++] = parent = node;
                    if (!(node = new_child(p, parent)))
                        return p->rc;
                    if (c == '{' && parse_key(p, &s, node))
                        return p->rc;
                    continue;
                }
                s++;
            }
        } else if (parse_scalar(p, &s, node)) {
            return p->rc;
        }
        for (;;) {
            s = skip_ws(s);
            if (depth == 0)
                return s == p->end ? 0 : sr_jdom_i_syntax(p, s, "bytes after the JSON value");
            parent = stack[depth - 1];
            int obj = (parent->type & 0xFF) == cJSON_Object;
            if (*s == ',')
                break;
            if (*s != (obj ? '}' : ']'))
                return sr_jdom_i_syntax(p, s, obj ? "expected ',' or '}'" : "expected ',' or ']'");
            s++;
            depth--;
            /* An object of fewer than two keys (most of a body's) cannot repeat one. */
            int rc = 0;
            if (ref && obj) {
                if (p->j->nkeys - p->j->key_base[depth] < 2)
                    p->j->nkeys = p->j->key_base[depth];
                else
                    rc = sr_jdom_i_keys_close(p->j, depth, p->err);
            }
            if (rc)
                return p->rc = rc;
        }
        s = skip_ws(s + 1);
        if (!(node = new_child(p, parent)))
            return p->rc;
        if ((parent->type & 0xFF) == cJSON_Object && parse_key(p, &s, node))
            return p->rc;
    }
}

/* ---- public ---- */

int sr_jdom_new(sr_jdom **out, size_t max_bytes, sr_err *err)
{
    if (!out)
        return sr_err_set(err, SR_E_INVAL, "sr_jdom_new: out is NULL");
    *out = NULL;
    sr_jdom *j = calloc(1, sizeof(*j));
    if (!j)
        return sr_err_set(err, SR_E_NOMEM, "json: cannot allocate a parser");
    j->max = max_bytes ? max_bytes : SR_JDOM_DEFAULT_MAX;
    j->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!j->c_locale) {
        free(j);
        return sr_err_set(err, SR_E_NOMEM, "json: cannot create the C locale for numbers");
    }
    *out = j;
    return 0;
}

void sr_jdom_free(sr_jdom *j)
{
    if (!j)
        return;
    for (chunk *c = j->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    freelocale(j->c_locale);
    free(j->keys);
    free(j);
}

void sr_jdom_reset(sr_jdom *j)
{
    if (!j)
        return;
    j->cur = NULL;
    j->pos = j->lim = 0;
    j->behind = 0;
}

int sr_jdom_parse(sr_jdom *j, const char *t, size_t n, cJSON **out, sr_err *err)
{
    if (out)
        *out = NULL;
    if (!j || !t || !out)
        return sr_err_set(err, SR_E_INVAL, "sr_jdom_parse: NULL argument");
    if (t[n] != '\0')
        return sr_err_set(err, SR_E_INVAL, "sr_jdom_parse: the text is not followed by a NUL");
    sr_jdom_reset(j);
    j->nkeys = 0;
    j->dup_off = SIZE_MAX;
    int general = (j->flags & SR_JDOM_I_GENERAL) != 0;
    jdom_parser p = {.j = j,
                     .t = (const unsigned char *)t,
                     .end = (const unsigned char *)t + n,
                     .err = err,
                     .not_int = (j->flags & SR_JDOM_REFERENCE) ? SR_JDOM_NOT_INT : 0,
                     .wlim = general || n < 8 ? 0 : (uintptr_t)t + n - 8,
                     .slim = general || n < 16 ? 0 : (uintptr_t)t + n - 16};
    cJSON *root = NULL;
    int rc = parse_tree(&p, &root);
    if (!rc && j->dup_off != SIZE_MAX) {
        /* Held until now: an error of the text itself anywhere comes first. */
        if (err)
            *err = j->dup;
        rc = SR_E_JSON_DUPLICATE_KEY;
    }
    if (rc) {
        sr_jdom_reset(j);
        return rc;
    }
    *out = root;
    return 0;
}

void sr_jdom_set_flags(sr_jdom *j, unsigned flags)
{
    if (j)
        j->flags = flags;
}

size_t sr_jdom_arena_bytes(const sr_jdom *j)
{
    return j ? j->capacity : 0;
}

size_t sr_jdom_arena_chunks(const sr_jdom *j)
{
    return j ? j->nchunks : 0;
}

size_t sr_jdom_arena_used(const sr_jdom *j)
{
    if (!j || !j->cur)
        return 0;
    return j->behind + (size_t)(j->pos - (uintptr_t)CHUNK_DATA(j->cur));
}
