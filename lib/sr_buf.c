#include "sr_buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static const char *file_kind(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a plain file";
}

int sr_file_open_regular(FILE **out, const char *path, sr_err *err)
{
    *out = NULL;
    /* O_NONBLOCK makes opening a FIFO without a writer return at once; it is cleared again
     * below for a regular file, where it changes nothing anyway. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return sr_err_set(err, SR_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sr_err_set(err, SR_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sr_err_set(err, SR_E_NOT_REGULAR, "%s: not a regular file (%s)", path,
                          file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        return sr_err_set(err, SR_E_IO, "%s: cannot open: %s", path, strerror(e));
    }
    *out = f;
    return 0;
}

/* The escape of byte c into e (at most 4 bytes); returns its length. */
static size_t quote_one(unsigned char c, char *e)
{
    static const char hex[] = "0123456789abcdef";
    if (c == '\\' || c == '\n' || c == '\r' || c == '\t') {
        e[0] = '\\';
        e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : '\\';
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        e[0] = (char)c;
        return 1;
    }
    e[0] = '\\';
    e[1] = 'x';
    e[2] = hex[c >> 4];
    e[3] = hex[c & 15];
    return 4;
}

const char *sr_quote_bytes(char *dst, size_t cap, const void *s, size_t n)
{
    const unsigned char *p = s;
    char e[4];
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += quote_one(p[i], e);
    /* All of it when it fits, else whole escapes up to cap - 4 and "...". */
    size_t room = total < cap ? total : cap >= 4 ? cap - 4 : 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = quote_one(p[i], e);
        if (o + k > room)
            break;
        memcpy(dst + o, e, k);
        o += k;
    }
    if (total >= cap && cap >= 4) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    if (cap)
        dst[o] = '\0';
    return dst;
}

const char *sr_quote_str(char *dst, size_t cap, const char *s)
{
    return sr_quote_bytes(dst, cap, s ? s : "", s ? strlen(s) : 0);
}

size_t sr_utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return len;
}

size_t sr_utf8_check(const void *s, size_t n)
{
    const unsigned char *p = s;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs, eight bytes at a time. */
        uint64_t w;
        while (i + 8 <= n && (memcpy(&w, p + i, 8), (w & 0x8080808080808080ull) == 0))
            i += 8;
        while (i < n && p[i] < 0x80)
            i++;
        if (i == n)
            break;
        size_t k = sr_utf8_seq(p + i, n - i);
        if (!k)
            return i;
        i += k;
    }
    return n;
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

int sr_buf_read_file(sr_buf *out, const char *path, size_t max, sr_err *err)
{
    FILE *f = NULL;
    int rc = sr_file_open_regular(&f, path, err);
    if (rc) {
        sr_buf_release(out);
        return rc;
    }
    rc = sr_buf_read_stream(out, f, path, max, err);
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
