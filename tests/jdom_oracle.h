/*
 * The oracle that tests/test_jdom.c and fuzz/fuzz_jdom.c hold sr_jdom to, written apart from
 * it: an RFC 8259 grammar check (bounds-checked, recursive, no cJSON quirks) and a comparison
 * of two cJSON trees in every field a reader can see. sr_jdom must accept a text exactly when
 * cJSON accepts it and oracle_rfc_valid does, and then build a tree oracle_same_tree calls
 * equal to cJSON's.
 */
#ifndef JDOM_ORACLE_H
#define JDOM_ORACLE_H

#include <stddef.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sr_jdom.h" /* SR_JDOM_HAS_NUL, the one documented addition to cJSON's tree */

/* Deeper than cJSON's limit, so the limit itself is tested against cJSON, not against us. */
#define ORACLE_MAX_DEPTH 1100

static int oracle_value(const unsigned char *t, size_t n, size_t *i, int depth);

static void oracle_ws(const unsigned char *t, size_t n, size_t *i)
{
    while (*i < n && (t[*i] == ' ' || t[*i] == '\t' || t[*i] == '\n' || t[*i] == '\r'))
        (*i)++;
}

static int oracle_digits(const unsigned char *t, size_t n, size_t *i)
{
    size_t s = *i;
    while (*i < n && t[*i] >= '0' && t[*i] <= '9')
        (*i)++;
    return *i > s;
}

static int oracle_number(const unsigned char *t, size_t n, size_t *i)
{
    if (*i < n && t[*i] == '-')
        (*i)++;
    if (*i < n && t[*i] == '0')
        (*i)++;
    else if (!(*i < n && t[*i] >= '1' && t[*i] <= '9') || !oracle_digits(t, n, i))
        return 0;
    if (*i < n && t[*i] == '.') {
        (*i)++;
        if (!oracle_digits(t, n, i))
            return 0;
    }
    if (*i < n && (t[*i] == 'e' || t[*i] == 'E')) {
        (*i)++;
        if (*i < n && (t[*i] == '+' || t[*i] == '-'))
            (*i)++;
        if (!oracle_digits(t, n, i))
            return 0;
    }
    return 1;
}

static int oracle_string(const unsigned char *t, size_t n, size_t *i)
{
    for ((*i)++; *i < n; (*i)++) {
        unsigned char c = t[*i];
        if (c == '"') {
            (*i)++;
            return 1;
        }
        if (c < 0x20)
            return 0;
        if (c != '\\')
            continue;
        if (++*i >= n)
            return 0;
        if (t[*i] == 'u') {
            for (int k = 0; k < 4; k++) {
                if (++*i >= n || !strchr("0123456789abcdefABCDEF", t[*i]) || t[*i] == '\0')
                    return 0;
            }
        } else if (t[*i] == '\0' || !strchr("\"\\/bfnrt", t[*i])) {
            return 0;
        }
    }
    return 0;
}

static int oracle_container(const unsigned char *t, size_t n, size_t *i, int depth)
{
    unsigned char close = t[*i] == '{' ? '}' : ']';
    (*i)++;
    oracle_ws(t, n, i);
    if (*i < n && t[*i] == close) {
        (*i)++;
        return 1;
    }
    for (;;) {
        if (close == '}') {
            if (!(*i < n && t[*i] == '"') || !oracle_string(t, n, i))
                return 0;
            oracle_ws(t, n, i);
            if (!(*i < n && t[*i] == ':'))
                return 0;
            (*i)++;
        }
        if (!oracle_value(t, n, i, depth + 1))
            return 0;
        if (*i < n && t[*i] == close) {
            (*i)++;
            return 1;
        }
        if (!(*i < n && t[*i] == ','))
            return 0;
        (*i)++;
        oracle_ws(t, n, i);
    }
}

/* One value with the whitespace around it, starting at *i. */
static int oracle_value(const unsigned char *t, size_t n, size_t *i, int depth)
{
    static const char *const lits[] = {"true", "false", "null"};
    int ok = 0;
    oracle_ws(t, n, i);
    if (*i >= n || depth > ORACLE_MAX_DEPTH)
        return 0;
    if (t[*i] == '{' || t[*i] == '[') {
        ok = oracle_container(t, n, i, depth);
    } else if (t[*i] == '"') {
        ok = oracle_string(t, n, i);
    } else if (t[*i] == '-' || (t[*i] >= '0' && t[*i] <= '9')) {
        ok = oracle_number(t, n, i);
    } else {
        for (int k = 0; k < 3 && !ok; k++) {
            size_t L = strlen(lits[k]);
            if (n - *i >= L && memcmp(t + *i, lits[k], L) == 0) {
                *i += L;
                ok = 1;
            }
        }
    }
    oracle_ws(t, n, i);
    return ok;
}

/* 1 if t[0 .. n) is exactly one RFC 8259 JSON value with optional whitespace around it. */
static int oracle_rfc_valid(const char *t, size_t n)
{
    size_t i = 0;
    return oracle_value((const unsigned char *)t, n, &i, 0) && i == n;
}

/* 1 if both strings are NULL or both hold the same bytes up to their NUL. */
static int oracle_same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* 1 if `first`'s sibling list is linked as cJSON links it (first->prev is the last). */
static int oracle_links_ok(const cJSON *first)
{
    const cJSON *prev = NULL;
    for (const cJSON *c = first; c; prev = c, c = c->next)
        if (c != first && c->prev != prev)
            return 0;
    return !first || first->prev == prev;
}

/* 1 if the trees at a and b agree in every field a reader can see, recursively. */
static int oracle_same_tree(const cJSON *a, const cJSON *b)
{
    if (a->type != (b->type & ~SR_JDOM_HAS_NUL) || a->valueint != b->valueint ||
        memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0 ||
        !oracle_same_str(a->string, b->string) || !oracle_same_str(a->valuestring, b->valuestring))
        return 0;
    if (!oracle_links_ok(a->child) || !oracle_links_ok(b->child))
        return 0;
    const cJSON *x = a->child, *y = b->child;
    for (; x && y; x = x->next, y = y->next)
        if (!oracle_same_tree(x, y))
            return 0;
    return !x && !y;
}

/* oracle_same_tree for two roots, whose next and prev must both be NULL. */
static int oracle_same_root(const cJSON *a, const cJSON *b)
{
    return a && b && !a->next && !a->prev && !b->next && !b->prev && oracle_same_tree(a, b);
}

#endif /* JDOM_ORACLE_H */
