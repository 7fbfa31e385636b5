/* Reading files and streams whole into buffers, never blocking on a FIFO (sr_file.h). */
#include "sr_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int sr_file_read_stream(sr_buf *out, FILE *f, const char *name, size_t max, sr_err *err)
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

int sr_file_read(sr_buf *out, const char *path, size_t max, sr_err *err)
{
    FILE *f = NULL;
    int rc = sr_file_open_regular(&f, path, err);
    if (rc) {
        sr_buf_release(out);
        return rc;
    }
    rc = sr_file_read_stream(out, f, path, max, err);
    fclose(f);
    return rc;
}
