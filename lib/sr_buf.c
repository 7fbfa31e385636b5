#include "sr_buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    int rc = sr_buf_puts(b, "\"", err);
    for (const unsigned char *p = (const unsigned char *)s; !rc && *p; p++) {
        if (*p == '"' || *p == '\\')
            rc = sr_buf_printf(b, err, "\\%c", *p);
        else if (*p < 0x20)
            rc = sr_buf_printf(b, err, "\\u%04x", *p);
        else
            rc = sr_buf_append(b, p, 1, err);
    }
    return rc ? rc : sr_buf_puts(b, "\"", err);
}

/* Bytes asked of the allocator at a time when the stream's size is not known. */
#define READ_STEP ((size_t)64 << 10)

static int read_limit(const char *name, const char *size, size_t max, sr_err *err)
{
    return sr_err_set(err, SR_E_LIMIT, "%s: %s bytes, larger than the limit of %zu bytes", name,
                      size, max);
}

/* Reads into the free room of `out` directly; `out->max` is the bound. */
static int read_all(sr_buf *out, FILE *f, const char *name, sr_err *err)
{
    size_t max = out->max;
    errno = 0;
    for (;;) {
        if (out->len == max || out->cap <= out->len + 1) {
            /* Full: probe for end-of-file before growing, as a regular file's size was exact
             * and only end-of-file here proves that a stream of exactly `max` bytes fits. */
            int c = fgetc(f);
            if (c == EOF)
                break;
            if (out->len == max) {
                char more[48];
                snprintf(more, sizeof(more), "more than %zu", max);
                return read_limit(name, more, max, err);
            }
            int rc =
                sr_buf_reserve(out, max - out->len < READ_STEP ? max - out->len : READ_STEP, err);
            if (rc)
                return rc;
            out->data[out->len++] = (char)c;
            out->data[out->len] = '\0';
            continue;
        }
        size_t room = out->cap - out->len - 1;
        if (room > max - out->len)
            room = max - out->len;
        size_t n = fread(out->data + out->len, 1, room, f);
        out->len += n;
        out->data[out->len] = '\0';
        if (n < room)
            break;
    }
    if (ferror(f))
        return sr_err_set(err, SR_E_IO, "%s: read error: %s", name, strerror(errno ? errno : EIO));
    return 0;
}

/* Sizes the buffer from fstat when `f` is a regular file, refusing one that is too big. */
static int read_prepare(sr_buf *out, FILE *f, const char *name, size_t max, sr_err *err)
{
    sr_buf_release(out);
    out->max = max ? max : SR_BUF_DEFAULT_MAX;
    size_t hint = 0;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        if ((unsigned long long)st.st_size > out->max) {
            char size[32];
            snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
            return read_limit(name, size, out->max, err);
        }
        hint = (size_t)st.st_size;
    }
    /* Exactly the file's size (sr_buf_reserve would round up to a power of two), and at least
     * the NUL so that an empty file still gives data == "". */
    out->data = malloc(hint + 1);
    if (!out->data)
        return sr_err_set(err, SR_E_NOMEM, "%s: cannot allocate %zu bytes", name, hint + 1);
    out->cap = hint + 1;
    out->data[0] = '\0';
    return 0;
}

int sr_buf_read_stream(sr_buf *out, FILE *f, const char *name, size_t max, sr_err *err)
{
    int rc = read_prepare(out, f, name, max, err);
    if (!rc)
        rc = read_all(out, f, name, err);
    if (rc)
        sr_buf_release(out);
    return rc;
}

int sr_buf_read_file(sr_buf *out, const char *path, size_t max, sr_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        sr_buf_release(out);
        return sr_err_set(err, SR_E_IO, "%s: cannot open: %s", path, strerror(e));
    }
    int rc = sr_buf_read_stream(out, f, path, max, err);
    fclose(f);
    return rc;
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
