/*
 * The RFC 8259 grammar check of the splice's parser text (sr_splice_priv.h): why cJSON failed
 * (the body was cut or is invalid), and whether a text cJSON accepted is JSON the reference's
 * parser accepts too. It runs on every response, so the common tokens take the short paths.
 */
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sr_splice_priv.h"
#include "sr_text.h"

enum {
    JP_COMPLETE = SR_SPLICE_JSON_COMPLETE,
    JP_PREFIX = SR_SPLICE_JSON_PREFIX,
    JP_INVALID = SR_SPLICE_JSON_INVALID,
    JP_UTF8 = SR_SPLICE_JSON_UTF8,
    JP_OVERFLOW = SR_SPLICE_JSON_OVERFLOW
};

static size_t jp_ws(const char *t, size_t n, size_t i)
{
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

static size_t jp_digits(const char *t, size_t n, size_t j)
{
    while (j < n && t[j] >= '0' && t[j] <= '9')
        j++;
    return j;
}

/* Scans a string starting at its opening quote; returns the offset after it, or n if cut. */
static int jp_string(const char *t, size_t n, size_t *i)
{
    size_t j = *i + 1;
    int pending = 0; /* a high surrogate escape waits for its low one */
    for (;;) {
        /* The common case first: a run of bytes that stand for themselves. */
        while (j < n && (unsigned char)t[j] >= 0x20 && t[j] != '"' && t[j] != '\\')
            j++;
        if (j >= n)
            break;
        unsigned char c = (unsigned char)t[j];
        if (c == '"') {
            size_t bad = sr_utf8_check(t + *i + 1, j - *i - 1);
            if (bad < j - *i - 1) {
                *i += 1 + bad;
                return JP_UTF8;
            }
            *i = j + 1;
            return JP_COMPLETE;
        }
        if (c < 0x20) {
            *i = j;
            return JP_INVALID;
        }
        if (j + 1 >= n)
            break;
        char e = t[j + 1];
        if (e == 'u') {
            unsigned cp = 0;
            for (size_t h = 2; h < 6; h++) {
                if (j + h >= n) {
                    *i = n;
                    return JP_PREFIX;
                }
                int v = sr_hex_digit((unsigned char)t[j + h]);
                if (v < 0) {
                    *i = j + h;
                    return JP_INVALID;
                }
                cp = cp << 4 | (unsigned)v;
            }
            /* A surrogate escape must be a high one followed by an escaped low one. */
            int low = cp >= 0xDC00 && cp <= 0xDFFF;
            if (low != pending) {
                *i = j;
                return JP_UTF8;
            }
            pending = cp >= 0xD800 && cp <= 0xDBFF;
            j += 6;
            if (pending && j + 1 < n && !(t[j] == '\\' && t[j + 1] == 'u')) {
                *i = j - 6;
                return JP_UTF8;
            }
            continue;
        }
        if (pending) {
            *i = j;
            return JP_UTF8;
        }
        switch (e) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            j += 2;
            continue;
        default:
            *i = j + 1;
            return JP_INVALID;
        }
    }
    *i = n;
    return JP_PREFIX;
}

/* Matches the literal `lit` of length L at *i (whose first byte is known to match). */
static int jp_literal(const char *t, size_t n, size_t *i, const char *lit, size_t L)
{
    size_t j = *i, k = 0;
    while (k < L && j + k < n && t[j + k] == lit[k])
        k++;
    *i = j + k;
    return k == L ? JP_COMPLETE : j + k == n ? JP_PREFIX : JP_INVALID;
}

/* Whether the number token t[0, n) rounds to +-infinity (strtod in the "C" locale). Only the
 * error paths run this check, so the copy and the locale cost nothing that matters. */
static int overflows(const char *t, size_t n)
{
    char small[64], *buf = n < sizeof(small) ? small : malloc(n + 1);
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!buf || !c) {
        if (buf != small)
            free(buf);
        if (c)
            freelocale(c);
        return 0;
    }
    memcpy(buf, t, n);
    buf[n] = '\0';
    int inf = isinf(strtod_l(buf, NULL, c)) != 0;
    freelocale(c);
    if (buf != small)
        free(buf);
    return inf;
}

/*
 * Scans a number or literal; JP_PREFIX if the text ends where the token could continue. Numbers
 * follow -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?; the first byte that cannot continue the number ends
 * it (COMPLETE) unless the grammar needs more (INVALID there).
 */
static int jp_scalar(const char *t, size_t n, size_t *i)
{
    size_t j = *i;
    switch (t[j]) {
    case 't':
        return jp_literal(t, n, i, "true", 4);
    case 'f':
        return jp_literal(t, n, i, "false", 5);
    case 'n':
        return jp_literal(t, n, i, "null", 4);
    default:
        break;
    }
    if (t[j] == '-')
        j++;
    if (j < n) {
        if (t[j] == '0')
            j++;
        else if (t[j] >= '1' && t[j] <= '9')
            j = jp_digits(t, n, j + 1);
        else
            goto invalid;
    }
    if (j < n && t[j] == '.') {
        j++;
        if (j < n && !(t[j] >= '0' && t[j] <= '9'))
            goto invalid;
        j = jp_digits(t, n, j);
    }
    if (j < n && (t[j] == 'e' || t[j] == 'E')) {
        j++;
        if (j < n && (t[j] == '+' || t[j] == '-'))
            j++;
        if (j < n && !(t[j] >= '0' && t[j] <= '9'))
            goto invalid;
        j = jp_digits(t, n, j);
    }
    /* A number may always continue at the end; the caller sees the end next. */
    if (j == n) {
        *i = j;
        return JP_PREFIX;
    }
    if (overflows(t + *i, j - *i))
        return JP_OVERFLOW; /* *i stays at the number */
    *i = j;
    return JP_COMPLETE;
invalid:
    *i = j;
    return JP_INVALID;
}

/* The open containers: one bit per level (1 for an object), as deep as the text allows. */
typedef struct jp_stack {
    unsigned char *bits;
    size_t depth;
    const size_t *arrays; /* sorted text offsets of integer arrays read as text */
    size_t narrays, next;
    size_t *open; /* per open such array: its depth after the '[' (innermost last) */
    size_t *which;
    size_t nopen;
} jp_stack;

static int jp_is_obj(const jp_stack *st)
{
    size_t d = st->depth - 1;
    return (st->bits[d / 8] >> (d % 8)) & 1;
}

static void jp_push(jp_stack *st, char c, size_t at)
{
    size_t d = st->depth++;
    if (c == '{')
        st->bits[d / 8] |= (unsigned char)(1u << (d % 8));
    else
        st->bits[d / 8] &= (unsigned char)~(1u << (d % 8));
    while (st->next < st->narrays && st->arrays[st->next] < at)
        st->next++;
    if (c == '[' && st->next < st->narrays && st->arrays[st->next] == at) {
        st->open[st->nopen] = st->depth;
        st->which[st->nopen++] = st->next++;
    }
}

static void jp_pop(jp_stack *st)
{
    if (st->nopen && st->open[st->nopen - 1] == st->depth)
        st->nopen--;
    st->depth--;
}

static int jp_run(const char *t, size_t n, jp_stack *stk, size_t *bad)
{
    size_t i = 0;
    enum { V, V_OR_END, K, K_OR_END, COLON, AFTER } st = V;
    for (;;) {
        i = jp_ws(t, n, i);
        if (i >= n)
            return (st == AFTER && stk->depth == 0) ? JP_COMPLETE : JP_PREFIX;
        char c = t[i];
        *bad = i;
        if (st == AFTER) {
            if (stk->depth == 0)
                return JP_INVALID; /* trailing bytes after the document */
            int obj = jp_is_obj(stk);
            if (c == ',') {
                st = obj ? K : V;
                i++;
            } else if ((c == '}' && obj) || (c == ']' && !obj)) {
                jp_pop(stk);
                i++;
            } else {
                return JP_INVALID;
            }
            continue;
        }
        if (st == COLON) {
            if (c != ':')
                return JP_INVALID;
            st = V;
            i++;
            continue;
        }
        if (st == K || st == K_OR_END) {
            if (c == '}' && st == K_OR_END) {
                jp_pop(stk);
                st = AFTER;
                i++;
                continue;
            }
            if (c != '"')
                return JP_INVALID;
            int r = jp_string(t, n, &i);
            if (r != JP_COMPLETE) {
                *bad = i;
                return r;
            }
            st = COLON;
            continue;
        }
        if (c == ']' && st == V_OR_END) {
            jp_pop(stk);
            st = AFTER;
            i++;
            continue;
        }
        if (c == '{' || c == '[') {
            jp_push(stk, c, i);
            st = c == '{' ? K_OR_END : V_OR_END;
            i++;
            continue;
        }
        int r = c == '"' ? jp_string(t, n, &i) : jp_scalar(t, n, &i);
        if (r != JP_COMPLETE) {
            *bad = i;
            return r;
        }
        st = AFTER;
    }
}

int sr_splice_i_json_check(const char *t, size_t n, const size_t *arrays, size_t narrays,
                           size_t *bad, size_t *in_array)
{
    jp_stack st = {0};
    st.bits = malloc(n / 8 + 1);
    st.open = malloc((narrays + 1) * sizeof(size_t));
    st.which = malloc((narrays + 1) * sizeof(size_t));
    st.arrays = arrays;
    st.narrays = narrays;
    int r = SR_SPLICE_JSON_NOMEM;
    *bad = 0;
    *in_array = 0;
    if (st.bits && st.open && st.which) {
        r = jp_run(t, n, &st, bad);
        if (r != JP_COMPLETE && st.nopen)
            *in_array = st.which[st.nopen - 1] + 1;
    }
    free(st.bits);
    free(st.open);
    free(st.which);
    return r;
}
