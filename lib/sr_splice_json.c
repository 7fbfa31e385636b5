/*
 * The RFC 8259 grammar check of the splice's parser text (sr_splice_impl.h): why cJSON failed
 * (the body was cut or is invalid), and whether a text cJSON accepted is JSON the reference's
 * parser accepts too. It runs on every response, so the common tokens take the short paths.
 */
#include <stddef.h>

#include "sr_splice_impl.h"

enum {
    JP_COMPLETE = SR_SPLICE_JSON_COMPLETE,
    JP_PREFIX = SR_SPLICE_JSON_PREFIX,
    JP_INVALID = SR_SPLICE_JSON_INVALID
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
    for (;;) {
        /* The common case first: a run of bytes that stand for themselves. */
        while (j < n && (unsigned char)t[j] >= 0x20 && t[j] != '"' && t[j] != '\\')
            j++;
        if (j >= n)
            break;
        unsigned char c = (unsigned char)t[j];
        if (c == '"') {
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
            for (size_t h = 2; h < 6; h++) {
                if (j + h >= n) {
                    *i = n;
                    return JP_PREFIX;
                }
                char x = t[j + h];
                if (!((x >= '0' && x <= '9') || (x >= 'a' && x <= 'f') || (x >= 'A' && x <= 'F'))) {
                    *i = j + h;
                    return JP_INVALID;
                }
            }
            j += 6;
            continue;
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
    *i = j;
    /* A number may always continue at the end; the caller sees the end next. */
    return j == n ? JP_PREFIX : JP_COMPLETE;
invalid:
    *i = j;
    return JP_INVALID;
}

int sr_splice_i_json_check(const char *t, size_t n, size_t *bad)
{
    char stack[1024];
    size_t depth = 0, i = 0;
    enum { V, V_OR_END, K, K_OR_END, COLON, AFTER } st = V;
    for (;;) {
        i = jp_ws(t, n, i);
        if (i >= n)
            return (st == AFTER && depth == 0) ? JP_COMPLETE : JP_PREFIX;
        char c = t[i];
        *bad = i;
        if (st == AFTER) {
            if (depth == 0)
                return JP_INVALID; /* trailing bytes after the document */
            if (c == ',') {
                st = stack[depth - 1] == '{' ? K : V;
                i++;
            } else if ((c == '}' && stack[depth - 1] == '{') ||
                       (c == ']' && stack[depth - 1] == '[')) {
                depth--;
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
                depth--;
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
            depth--;
            st = AFTER;
            i++;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth == sizeof(stack))
                return JP_INVALID;
            stack[depth++] = c;
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
