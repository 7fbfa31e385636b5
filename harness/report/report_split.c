/*
 * Finds the scenario executions of a results.json without parsing it whole (report_priv.h), so
 * that sr_report_load parses one execution at a time: a parsed tree costs ~20 KB per execution,
 * the executions themselves far less.
 */
#include "report_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_json.h"

static size_t ws(const char *t, size_t n, size_t i)
{
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

/*
 * The end of the JSON value at t[i] (one past its last byte), found by following strings and
 * brackets only, or SIZE_MAX when the text ends first. Whether the value is valid is left to
 * the parser that reads it afterwards.
 */
static size_t skip_value(const char *t, size_t n, size_t i)
{
    size_t depth = 0;
    while (i < n) {
        char c = t[i];
        if (c == '"') {
            for (i++; i < n && t[i] != '"'; i++)
                if (t[i] == '\\')
                    i++;
            if (i >= n)
                return SIZE_MAX;
            i++;
        } else if (c == '{' || c == '[') {
            depth++;
            i++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return i; /* a scalar's end at its container's close */
            depth--;
            i++;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
            return i;
        } else {
            i++;
        }
        if (depth == 0 && (c == '"' || c == '}' || c == ']'))
            return i;
    }
    return depth == 0 ? i : SIZE_MAX;
}

int sr_report_split(const char *t, size_t n, size_t *open, size_t *close)
{
    size_t i = ws(t, n, 0);
    if (i >= n || t[i] != '{')
        return -1;
    i = ws(t, n, i + 1);
    if (i < n && t[i] == '}')
        return -1;
    while (i < n && t[i] == '"') {
        size_t k = i, ke = skip_value(t, n, i), v = ke;
        if (v == SIZE_MAX || (v = ws(t, n, v)) >= n || t[v] != ':')
            return -1;
        v = ws(t, n, v + 1);
        size_t e = v < n ? skip_value(t, n, v) : SIZE_MAX;
        if (e == SIZE_MAX || e == v)
            return -1;
        if (e - v >= 2 && t[v] == '[' && t[e - 1] == ']' && ke - k == 11 &&
            memcmp(t + k, "\"scenarios\"", 11) == 0) {
            *open = v;
            *close = e - 1;
            return 0;
        }
        i = ws(t, n, e);
        if (i >= n || t[i] != ',')
            return -1;
        i = ws(t, n, i + 1);
    }
    return -1;
}

int sr_report_next_item(const char *t, size_t close, size_t *pos, size_t *a, size_t *e)
{
    size_t i = ws(t, close, *pos);
    if (i >= close)
        return 0;
    size_t end = skip_value(t, close, i);
    if (end == SIZE_MAX || end == i)
        return -1;
    size_t j = ws(t, close, end);
    if (j < close && (t[j] != ',' || ws(t, close, j + 1) >= close))
        return -1; /* not a comma, or a comma before the closing bracket */
    *a = i;
    *e = end;
    *pos = j < close ? j + 1 : close;
    return 1;
}

/*
 * Rewrites the "name:line:col: " that sr_json puts before its messages, through `map`: errors
 * found in a piece of the text are placed in the whole text.
 */
void sr_report_relocate(sr_err *err, const char *name, void (*map)(void *, int *, int *), void *ctx)
{
    if (!err || !err->code)
        return;
    size_t k = strlen(name);
    int line, col, used = 0;
    if (strncmp(err->msg, name, k) != 0 ||
        sscanf(err->msg + k, ":%d:%d: %n", &line, &col, &used) != 2 || used == 0)
        return;
    char rest[SR_ERR_MSG_MAX];
    snprintf(rest, sizeof(rest), "%s", err->msg + k + (size_t)used);
    map(ctx, &line, &col);
    int head = snprintf(err->msg, sizeof(err->msg), "%s:%d:%d: ", name, line, col);
    size_t room = head > 0 && (size_t)head < sizeof(err->msg) ? sizeof(err->msg) - (size_t)head : 0;
    if (!room)
        return; /* the name alone fills the message */
    size_t len = strnlen(rest, sizeof(rest) - 1);
    if (len >= room)
        len = room - 1;
    memcpy(err->msg + head, rest, len);
    err->msg[(size_t)head + len] = '\0';
    err->offset = -1;
}
