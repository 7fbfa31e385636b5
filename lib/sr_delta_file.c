#include "sr_delta_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- folders and files opened relative to a checked folder ---- */

/*
 * Why every name below a folder is opened with openat(..., O_NOFOLLOW): the folders live under
 * sync folders that other processes (a trainer, a user) may write, and a symlink planted at one
 * of our names would otherwise redirect a create, truncate or read to any file outside.
 */

/* The error of an openat that failed on `name`: a symlink there is SR_E_SYMLINK. */
static int open_failed(int at, const char *name, const char *shown, int e, const char *what,
                       sr_err *err)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return sr_err_set(err, SR_E_SYMLINK,
                          "%s: is a symlink; files of the delta store are never opened through "
                          "one",
                          shown);
    return sr_err_set(err, SR_E_DELTA_IO, "%s: cannot %s: %s", shown, what, strerror(e));
}

int sr_delta_open_dir(int *fd, int at, const char *name, int create, sr_err *err)
{
    *fd = -1;
    if (create && mkdirat(at, name, 0755) != 0 && errno != EEXIST)
        return sr_err_set(err, SR_E_DELTA_IO, "%s: cannot create: %s", name, strerror(errno));
    *fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0)
        return open_failed(at, name, name, errno, "open the folder", err);
    return 0;
}

int sr_delta_check_name(int dfd, const char *name, const char *shown, sr_err *err)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return sr_err_set(err, SR_E_SYMLINK,
                          "%s: is a symlink; files of the delta store are never written through "
                          "one",
                          shown);
    return 0;
}

/* ---- atomic files ---- */

int sr_delta_afile_open(sr_delta_afile *f, int dfd, const char *dir, const char *name, sr_err *err)
{
    f->fd = -1;
    f->dfd = dfd;
    int a = snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
    int b = snprintf(f->tmp, sizeof(f->tmp), "%s/.%s.tmp", dir, name);
    int c = snprintf(f->name, sizeof(f->name), "%s", name);
    int d = snprintf(f->tmp_name, sizeof(f->tmp_name), ".%s.tmp", name);
    if (a < 0 || b < 0 || c < 0 || d < 0 || (size_t)a >= sizeof(f->path) ||
        (size_t)b >= sizeof(f->tmp) || (size_t)c >= sizeof(f->name) ||
        (size_t)d >= sizeof(f->tmp_name))
        return sr_err_set(err, SR_E_DELTA_IO, "%s/%s: path too long", dir, name);
    int rc = sr_delta_check_name(dfd, name, f->path, err);
    if (rc)
        return rc;
    /* O_EXCL | O_NOFOLLOW: a symlink or a hard link planted at the temporary name is never
     * written through; a regular file left there by a crash is removed and created anew. */
    for (int attempt = 0; attempt < 2; attempt++) {
        f->fd =
            openat(dfd, f->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (f->fd >= 0)
            return 0;
        int e = errno;
        struct stat st;
        if (e == EEXIST && attempt == 0 &&
            fstatat(dfd, f->tmp_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            unlinkat(dfd, f->tmp_name, 0) == 0)
            continue;
        return open_failed(dfd, f->tmp_name, f->tmp, e, "create", err);
    }
    return sr_err_set(err, SR_E_DELTA_IO, "%s: cannot create", f->tmp);
}

int sr_delta_afile_write(sr_delta_afile *f, const void *p, size_t n, sr_err *err)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(f->fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return sr_err_set(err, SR_E_DELTA_IO, "%s: write failed: %s", f->tmp,
                              w < 0 ? strerror(errno) : "no progress");
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

void sr_delta_afile_abort(sr_delta_afile *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        unlinkat(f->dfd, f->tmp_name, 0);
    }
    f->fd = -1;
}

int sr_delta_afile_commit(sr_delta_afile *f, int do_fsync, sr_err *err)
{
    if (do_fsync && fsync(f->fd) != 0) {
        int rc = sr_err_set(err, SR_E_DELTA_IO, "%s: fsync failed: %s", f->tmp, strerror(errno));
        sr_delta_afile_abort(f);
        return rc;
    }
    int c = close(f->fd);
    f->fd = -1;
    /* renameat replaces a symlink at the final name rather than following it; refusing one is
     * only so that a planted link is reported, not silently dropped. */
    int rc = c != 0
                 ? sr_err_set(err, SR_E_DELTA_IO, "%s: close failed: %s", f->tmp, strerror(errno))
                 : sr_delta_check_name(f->dfd, f->name, f->path, err);
    if (!rc && renameat(f->dfd, f->tmp_name, f->dfd, f->name) != 0)
        rc = sr_err_set(err, SR_E_DELTA_IO, "%s: rename failed: %s", f->path, strerror(errno));
    if (rc)
        unlinkat(f->dfd, f->tmp_name, 0);
    return rc;
}

int sr_delta_write_file(int dfd, const char *dir, const char *name, const void *p, size_t n,
                        int do_fsync, sr_err *err)
{
    sr_delta_afile f;
    int rc = sr_delta_afile_open(&f, dfd, dir, name, err);
    if (rc)
        return rc;
    rc = sr_delta_afile_write(&f, p, n, err);
    if (rc) {
        sr_delta_afile_abort(&f);
        return rc;
    }
    rc = sr_delta_afile_commit(&f, do_fsync, err);
    return rc ? rc : (do_fsync ? sr_delta_fsync_dir(dfd, dir, err) : 0);
}

int sr_delta_fsync_dir(int dfd, const char *dir, sr_err *err)
{
    if (fsync(dfd) != 0)
        return sr_err_set(err, SR_E_DELTA_IO, "%s: directory fsync failed: %s", dir,
                          strerror(errno));
    return 0;
}

int sr_delta_open_file(int *fd, int dfd, const char *name, const char *shown, int *missing,
                       sr_err *err)
{
    *missing = 0;
    /* O_NONBLOCK: a FIFO planted in place of the file must not block the open. */
    *fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (*fd >= 0)
        return 0;
    if (errno == ENOENT) {
        *missing = 1;
        return 0;
    }
    return open_failed(dfd, name, shown, errno, "open", err);
}

int sr_delta_read_file(char **buf, size_t *len, int *missing, int dfd, const char *name,
                       const char *shown, size_t max, int too_large_code, sr_err *err)
{
    *buf = NULL;
    *len = 0;
    int fd;
    int rc = sr_delta_open_file(&fd, dfd, name, shown, missing, err);
    if (rc || *missing)
        return rc;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sr_err_set(err, SR_E_DELTA_IO, "%s: not a readable regular file", shown);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return sr_err_set(err, too_large_code, "%s: %lld bytes exceed the maximum of %zu", shown,
                          (long long)st.st_size, max);
    }
    size_t n = (size_t)st.st_size;
    char *b = malloc(n + 1);
    if (!b) {
        close(fd);
        return sr_err_set(err, SR_E_NOMEM, "%s: cannot allocate %zu bytes", shown, n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    /* A file that shrank while being read is read as what remains; the parser judges it. */
    b[got] = '\0';
    *buf = b;
    *len = got;
    return 0;
}

/* ---- the writer lock ---- */

int sr_delta_lock(int *fd, int dfd, const char *name, const char *shown, int wait_ms, sr_err *err)
{
    *fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (*fd < 0) {
        /* The reason is this call's: a second look at a file that could not be created would
         * only find it missing. A symbolic link in its place is named as one. */
        int e = errno;
        *fd = -1;
        return open_failed(dfd, name, shown, e, "open", err);
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long nap_us = 1000;
    for (;;) {
        if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        int e = errno;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited =
            (double)(now.tv_sec - t0.tv_sec) * 1e3 + (double)(now.tv_nsec - t0.tv_nsec) / 1e6;
        if ((e != EWOULDBLOCK && e != EINTR) || waited >= wait_ms) {
            close(*fd);
            *fd = -1;
            if (e != EWOULDBLOCK && e != EINTR)
                return sr_err_set(err, SR_E_DELTA_IO, "%s: cannot lock: %s", shown, strerror(e));
            return sr_err_set(err, SR_E_DELTA_LOCKED,
                              "%s: another receiver still held the lock after %d ms", shown,
                              wait_ms);
        }
        /* flock has no timeout: poll with a growing nap (1 ms .. 50 ms). */
        usleep((useconds_t)nap_us);
        nap_us = nap_us < 50000 ? nap_us * 2 : 50000;
    }
}

/* ---- payload container ---- */

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int sr_delta_index_render(sr_buf *out, const char *const *keys, const uint64_t *lengths, size_t n,
                          sr_err *err)
{
    uint64_t index_bytes = 0;
    for (size_t i = 0; i < n; i++)
        index_bytes += SR_DELTA_PAYLOAD_ENTRY_FIXED + strlen(keys[i]);
    uint8_t hdr[SR_DELTA_PAYLOAD_HEADER];
    memcpy(hdr, SR_DELTA_PAYLOAD_MAGIC, 8);
    put_u64(hdr + 8, n);
    put_u64(hdr + 16, index_bytes);
    int rc = sr_buf_append(out, hdr, sizeof(hdr), err);
    uint64_t offset = SR_DELTA_PAYLOAD_HEADER + index_bytes;
    for (size_t i = 0; !rc && i < n; i++) {
        uint8_t e[SR_DELTA_PAYLOAD_ENTRY_FIXED];
        size_t klen = strlen(keys[i]);
        put_u64(e, offset);
        put_u64(e + 8, lengths[i]);
        for (int b = 0; b < 4; b++)
            e[16 + b] = (uint8_t)((uint32_t)klen >> (8 * b));
        rc = sr_buf_append(out, e, sizeof(e), err);
        rc = rc ? rc : sr_buf_append(out, keys[i], klen, err);
        offset += lengths[i];
    }
    return rc;
}

int sr_delta_index_header(uint64_t *n, uint64_t *index_bytes, const uint8_t *hdr, size_t len,
                          uint64_t file_size, const char *name, sr_err *err)
{
    if (len < SR_DELTA_PAYLOAD_HEADER || file_size < SR_DELTA_PAYLOAD_HEADER ||
        memcmp(hdr, SR_DELTA_PAYLOAD_MAGIC, 8) != 0)
        return sr_err_set(err, SR_E_DELTA_PAYLOAD, "%s: not a payload file (bad magic or size)",
                          name);
    *n = get_u64(hdr + 8);
    *index_bytes = get_u64(hdr + 16);
    if (*n > SR_DELTA_MAX_TENSORS ||
        *index_bytes >
            (uint64_t)SR_DELTA_MAX_TENSORS * (SR_DELTA_PAYLOAD_ENTRY_FIXED + SR_DELTA_NAME_MAX) ||
        *index_bytes > file_size - SR_DELTA_PAYLOAD_HEADER)
        return sr_err_set(err, SR_E_DELTA_PAYLOAD,
                          "%s: %llu blobs in a %llu-byte index do not fit the limits or the file",
                          name, (unsigned long long)*n, (unsigned long long)*index_bytes);
    return 0;
}

static int cmp_blob(const void *a, const void *b)
{
    return strcmp(((const sr_delta_blob *)a)->key, ((const sr_delta_blob *)b)->key);
}

static int parse_entries(sr_delta_index *ix, const uint8_t *p, size_t len, uint64_t n,
                         uint64_t file_size, const char *name, sr_err *err)
{
    uint64_t data_start = SR_DELTA_PAYLOAD_HEADER + (uint64_t)len;
    size_t at = 0, kat = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (len - at < SR_DELTA_PAYLOAD_ENTRY_FIXED)
            return sr_err_set_at(err, SR_E_DELTA_PAYLOAD, (int64_t)at,
                                 "%s: index entry %llu is truncated", name, (unsigned long long)i);
        uint64_t off = get_u64(p + at), length = get_u64(p + at + 8);
        uint32_t klen = get_u32(p + at + 16);
        at += SR_DELTA_PAYLOAD_ENTRY_FIXED;
        if (klen == 0 || klen > SR_DELTA_NAME_MAX || klen > len - at ||
            memchr(p + at, 0, klen) != NULL)
            return sr_err_set_at(err, SR_E_DELTA_PAYLOAD, (int64_t)at,
                                 "%s: index entry %llu has a bad key", name, (unsigned long long)i);
        if (off < data_start || off > file_size || length > file_size - off)
            return sr_err_set_at(err, SR_E_DELTA_PAYLOAD, (int64_t)at,
                                 "%s: blob %llu lies outside the data area", name,
                                 (unsigned long long)i);
        memcpy(ix->keys + kat, p + at, klen);
        ix->keys[kat + klen] = '\0';
        ix->blobs[i] = (sr_delta_blob){ix->keys + kat, off, length};
        kat += klen + 1;
        at += klen;
    }
    if (at != len)
        return sr_err_set_at(err, SR_E_DELTA_PAYLOAD, (int64_t)at,
                             "%s: %zu stray bytes after the index", name, len - at);
    return 0;
}

int sr_delta_index_parse(sr_delta_index *out, const uint8_t *index, size_t len, uint64_t n,
                         uint64_t file_size, const char *name, sr_err *err)
{
    memset(out, 0, sizeof(*out));
    if (n > SR_DELTA_MAX_TENSORS || n > len / (SR_DELTA_PAYLOAD_ENTRY_FIXED + 1) ||
        len > file_size || file_size - len < SR_DELTA_PAYLOAD_HEADER)
        return sr_err_set(err, SR_E_DELTA_PAYLOAD, "%s: %llu blobs cannot fit the index", name,
                          (unsigned long long)n);
    /* Keys take at most len bytes, plus one NUL each. */
    out->blobs = malloc((n ? n : 1) * sizeof(sr_delta_blob));
    out->keys = malloc(len + n + 1);
    if (!out->blobs || !out->keys) {
        sr_delta_index_free(out);
        return sr_err_set(err, SR_E_NOMEM, "%s: cannot allocate the index", name);
    }
    int rc = parse_entries(out, index, len, n, file_size, name, err);
    if (!rc) {
        out->n = (size_t)n;
        qsort(out->blobs, out->n, sizeof(sr_delta_blob), cmp_blob);
        for (size_t i = 1; i < out->n && !rc; i++) {
            if (strcmp(out->blobs[i - 1].key, out->blobs[i].key) == 0)
                rc = sr_err_set(err, SR_E_DELTA_PAYLOAD, "%s: key '%s' appears twice", name,
                                out->blobs[i].key);
        }
    }
    if (rc)
        sr_delta_index_free(out);
    return rc;
}

const sr_delta_blob *sr_delta_index_find(const sr_delta_index *ix, const char *key)
{
    sr_delta_blob k = {key, 0, 0};
    return bsearch(&k, ix->blobs, ix->n, sizeof(sr_delta_blob), cmp_blob);
}

void sr_delta_index_free(sr_delta_index *ix)
{
    free(ix->blobs);
    free(ix->keys);
    memset(ix, 0, sizeof(*ix));
}
