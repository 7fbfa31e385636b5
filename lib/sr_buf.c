/* The growable buffer (sr_buf.h). */
#include "sr_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_text.h"

static size_t limit_of(const sr_buf *b)
{
    return b->max ? b->max : SR_BUF_DEFAULT_MAX;
}

int sr_buf_reserve(sr_buf *b, size_t extra, sr_err *err)
{
    size_t max = limit_of(b);
    if (extra > max || b->len > max - extra)
        return sr_err_set(err, SR_E_LIMIT,
                          "buffer would grow to more than its maximum of %zu bytes", max);
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "cannot grow a buffer to %zu bytes", cap);
    b->data = p;
    b->cap = cap;
    return 0;
}

int sr_buf_append(sr_buf *b, const void *p, size_t n, sr_err *err)
{
    int rc = sr_buf_reserve(b, n, err);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int sr_buf_puts(sr_buf *b, const char *s, sr_err *err)
{
    return sr_buf_append(b, s, strlen(s), err);
}

int sr_buf_printf(sr_buf *b, sr_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return sr_err_set(err, SR_E_INVAL, "bad format string");
    int rc = sr_buf_reserve(b, (size_t)n, err);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int sr_buf_put_i64(sr_buf *b, long long v, sr_err *err)
{
    char tmp[24];
    char *e = tmp + sizeof(tmp);
    char *p = e;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    return sr_buf_append(b, p, (size_t)(e - p), err);
}

int sr_buf_put_json_string(sr_buf *b, const char *s, sr_err *err)
{
    int rc = sr_buf_append(b, "\"", 1, err);
    const unsigned char *p = (const unsigned char *)s;
    while (!rc && *p) {
        /* Bytes that need no escape go in runs (one append per run, not per byte). */
        const unsigned char *q = p;
        while (*q && *q != '"' && *q != '\\' && *q >= 0x20)
            q++;
        if (q > p) {
            rc = sr_buf_append(b, p, (size_t)(q - p), err);
            p = q;
            continue;
        }
        if (*p == '"' || *p == '\\')
            rc = sr_buf_printf(b, err, "\\%c", *p);
        else
            rc = sr_buf_printf(b, err, "\\u%04x", *p);
        p++;
    }
    return rc ? rc : sr_buf_append(b, "\"", 1, err);
}

int sr_buf_put_json_utf8(sr_buf *b, const char *json, size_t n, sr_err *err)
{
    const unsigned char *p = (const unsigned char *)json;
    size_t i = 0, start = 0;
    int rc = 0;
    while (!rc && i < n) {
        size_t k = sr_utf8_seq(p + i, n - i);
        if (k) {
            i += k;
            continue;
        }
        rc = sr_buf_append(b, p + start, i - start, err);
        rc = rc ? rc : sr_buf_puts(b, "\\ufffd", err);
        start = ++i;
    }
    return rc ? rc : sr_buf_append(b, p + start, n - start, err);
}

void sr_buf_reset(sr_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void sr_buf_release(sr_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
