/* Closest-name suggestions for unknown-name errors (sr_suggest.h). */
#include "sr_suggest.h"

#include <stdio.h>
#include <string.h>

size_t sr_suggest_distance(const char *a, const char *b)
{
    /* Three rows of the dynamic programme suffice for the adjacent swap. */
    size_t n = strnlen(a, SR_SUGGEST_LEN_MAX), m = strnlen(b, SR_SUGGEST_LEN_MAX);
    size_t rows[3][SR_SUGGEST_LEN_MAX + 1];
    size_t *two = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = prev[j - 1] + cost;
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                two[j - 2] + 1 < best)
                best = two[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = two;
        two = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

/* One name starts with the other (both non-empty). */
static int prefix_of(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    return n && m && strncmp(a, b, n < m ? n : m) == 0;
}

const char *sr_suggest_closest(const char *word, const char *const *names, size_t n)
{
    size_t len = strnlen(word, SR_SUGGEST_LEN_MAX);
    /* A word of one or two bytes is close to too much to suggest by distance. */
    size_t limit = len < 3 ? 0 : len / 3 > 1 ? len / 3 : 1;
    const char *best = NULL, *shared = NULL;
    size_t best_d = (size_t)-1, shared_n = 0;
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            continue;
        size_t d = sr_suggest_distance(word, names[i]);
        if (d < best_d && (d <= limit || prefix_of(word, names[i]))) {
            best = names[i];
            best_d = d;
        }
        size_t c = 0;
        while (c < SR_SUGGEST_LEN_MAX && word[c] && word[c] == names[i][c])
            c++;
        if (c > shared_n) {
            shared = names[i];
            shared_n = c;
        }
    }
    /* No typo: the name that shares the longest beginning, when that is a word's worth. */
    return best ? best : shared_n >= 4 && shared_n >= limit ? shared : NULL;
}

const char *sr_suggest_text(char *buf, size_t cap, const char *word, const char *const *names,
                            size_t n, const char *what)
{
    const char *near = sr_suggest_closest(word, names, n);
    size_t at = 0;
    int w = near ? snprintf(buf, cap, "did you mean '%s'? %s: ", near, what ? what : "valid")
                 : snprintf(buf, cap, "%s: ", what ? what : "valid");
    at = w > 0 ? (size_t)w : 0;
    for (size_t i = 0; i < n && at < cap; i++) {
        if (!names[i])
            continue;
        w = snprintf(buf + at, cap - at, "%s%s", at && buf[at - 1] != ' ' ? ", " : "", names[i]);
        at += w > 0 ? (size_t)w : 0;
    }
    if (at >= cap && cap >= 4)
        memcpy(buf + cap - 4, "...", 4);
    return buf;
}
