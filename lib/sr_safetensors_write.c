/* sr_safetensors: the writer of files and checkpoint folders (sr_safetensors.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr_buf.h"
#include "sr_pool.h"
#include "sr_safetensors.h"

#define PATH_CAP 4096

static int io_err(sr_err *err, const char *what, const char *path)
{
    return sr_err_set(err, SR_E_IO, "safetensors: %s %.3000s: %s", what, path, strerror(errno));
}

/* write(2) all of p[0..n) (EINTR and short writes retried). */
static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int check_in(const sr_st_in *t, sr_err *err)
{
    size_t len = t->name ? strlen(t->name) : 0;
    if (!len || len > SR_ST_NAME_MAX || !strcmp(t->name, "__metadata__"))
        return sr_err_set(err, SR_E_INVAL, "safetensors: bad tensor name '%.200s'",
                          t->name ? t->name : "(null)");
    size_t isz = sr_st_dtype_size(t->dtype);
    if (!isz || t->ndim < 0 || t->ndim > SR_ST_NDIM_MAX || (t->ndim && !t->shape))
        return sr_err_set(err, SR_E_INVAL, "safetensors: tensor '%.200s': bad dtype or ndim",
                          t->name);
    uint64_t prod = isz;
    int empty = 0, overflow = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0 || (uint64_t)t->shape[i] >= ((uint64_t)1 << 53))
            return sr_err_set(err, SR_E_INVAL, "safetensors: tensor '%.200s': bad dim %lld",
                              t->name, (long long)t->shape[i]);
        uint64_t v = (uint64_t)t->shape[i];
        empty |= v == 0;
        overflow |= v && prod > UINT64_MAX / v;
        prod *= v;
    }
    if (empty)
        prod = 0;
    if ((overflow && !empty) || prod != t->nbytes || (t->nbytes && !t->data))
        return sr_err_set(err, SR_E_INVAL,
                          "safetensors: tensor '%.200s': %zu bytes given, its shape needs %llu",
                          t->name, t->nbytes, (unsigned long long)prod);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const sr_st_in *const *)a)->name, (*(const sr_st_in *const *)b)->name);
}

/* The header JSON of tensors o[0..n) (in name order), padded so that 8 + length % 8 == 0. */
static int build_header(sr_buf *b, const sr_st_in *const *o, size_t n, const sr_st_meta *m,
                        size_t n_meta, sr_err *err)
{
    int rc = sr_buf_puts(b, "{", err);
    if (n_meta && !rc) {
        rc = sr_buf_puts(b, "\"__metadata__\":{", err);
        for (size_t i = 0; i < n_meta && !rc; i++) {
            if (i)
                rc = sr_buf_puts(b, ",", err);
            rc = rc ? rc : sr_buf_put_json_string(b, m[i].key, err);
            rc = rc ? rc : sr_buf_puts(b, ":", err);
            rc = rc ? rc : sr_buf_put_json_string(b, m[i].value, err);
        }
        rc = rc ? rc : sr_buf_puts(b, n ? "}," : "}", err);
    }
    uint64_t at = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (i)
            rc = sr_buf_puts(b, ",", err);
        rc = rc ? rc : sr_buf_put_json_string(b, o[i]->name, err);
        rc = rc ? rc
                : sr_buf_printf(b, err, ":{\"dtype\":\"%s\",\"shape\":[",
                                sr_st_dtype_name(o[i]->dtype));
        for (int d = 0; d < o[i]->ndim && !rc; d++)
            rc = sr_buf_printf(b, err, "%s%lld", d ? "," : "", (long long)o[i]->shape[d]);
        rc = rc ? rc
                : sr_buf_printf(b, err, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                                (unsigned long long)(at + o[i]->nbytes));
        at += o[i]->nbytes;
    }
    rc = rc ? rc : sr_buf_puts(b, "}", err);
    while (!rc && (8 + b->len) % 8)
        rc = sr_buf_puts(b, " ", err);
    return rc;
}

/* The error of an open or create of `name` in folder dfd that failed: SR_E_SYMLINK for a
 * symlink there. */
static int open_err(sr_err *err, int dfd, const char *name, const char *what, const char *shown)
{
    int e = errno;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return sr_err_set(err, SR_E_SYMLINK,
                          "safetensors: %.3000s is a symlink; checkpoints are never written "
                          "through one",
                          shown);
    errno = e;
    return io_err(err, what, shown);
}

/* sr_st_write_file of `name` in folder dfd (`path` names it in messages). */
static int write_file_at(int dfd, const char *name, const char *path, const sr_st_in *t, size_t n,
                         const sr_st_meta *m, size_t n_meta, sr_err *err)
{
    const sr_st_in **o = malloc((n ? n : 1) * sizeof(*o));
    if (!o)
        return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for %zu tensors", n);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        o[i] = &t[i];
        rc = check_in(&t[i], err);
    }
    if (!rc)
        qsort(o, n, sizeof(*o), by_name);
    for (size_t i = 1; i < n && !rc; i++)
        if (!strcmp(o[i - 1]->name, o[i]->name))
            rc = sr_err_set(err, SR_E_ST_DUPLICATE, "safetensors: tensor '%.200s' given twice",
                            o[i]->name);
    sr_buf h = SR_BUF_INIT;
    if (!rc)
        rc = build_header(&h, o, n, m, n_meta, err);
    int fd = -1;
    if (!rc &&
        (fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0)
        rc = open_err(err, dfd, name, "cannot create", path);
    if (!rc) {
        unsigned char len8[8];
        for (int i = 0; i < 8; i++)
            len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
        if (write_all(fd, len8, 8) || write_all(fd, h.data, h.len))
            rc = io_err(err, "cannot write", path);
    }
    for (size_t i = 0; i < n && !rc; i++)
        if (write_all(fd, o[i]->data, o[i]->nbytes))
            rc = io_err(err, "cannot write", path);
    if (!rc && fsync(fd))
        rc = io_err(err, "cannot fsync", path);
    if (fd >= 0 && close(fd) && !rc)
        rc = io_err(err, "cannot close", path);
    sr_buf_release(&h);
    free(o);
    return rc;
}

int sr_st_write_file(const char *path, const sr_st_in *t, size_t n, const sr_st_meta *m,
                     size_t n_meta, sr_err *err)
{
    return write_file_at(AT_FDCWD, path, path, t, n, m, n_meta, err);
}

/*
 * Removes the folder `name` of folder pfd that a crashed writer left, and the files in it (no
 * subfolders expected). The folder is opened without following a symlink at its name, and its
 * entries are unlinked relative to it: nothing outside can be removed.
 */
static int remove_partial(int pfd, const char *name, const char *shown, sr_err *err)
{
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : io_err(err, "cannot look at", shown);
    int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        int rc = open_err(err, pfd, name, "cannot open", shown);
        if (dfd >= 0)
            close(dfd);
        return rc;
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (unlinkat(dfd, de->d_name, 0))
            rc = io_err(err, "cannot remove a file in", shown);
    }
    closedir(d);
    if (!rc && unlinkat(pfd, name, AT_REMOVEDIR))
        rc = io_err(err, "cannot remove", shown);
    return rc;
}

/* One shard job of a checkpoint write. */
typedef struct shard_job {
    const char *dir; /* for messages */
    int dfd;
    const sr_st_in *t;   /* in name order */
    const size_t *first; /* shard s holds t[first[s] .. first[s + 1]) */
    int shards;
    const sr_st_meta *m;
    size_t n_meta;
} shard_job;

static int write_shard(void *ctx, int64_t s, sr_err *err)
{
    const shard_job *j = ctx;
    char p[PATH_CAP], name[64];
    if (j->shards == 1)
        snprintf(name, sizeof(name), "model.safetensors");
    else
        snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", (int)s + 1, j->shards);
    snprintf(p, sizeof(p), "%.3900s/%s", j->dir, name);
    return write_file_at(j->dfd, name, p, j->t + j->first[s], j->first[s + 1] - j->first[s], j->m,
                         j->n_meta, err);
}

static int in_by_name(const void *a, const void *b)
{
    return strcmp(((const sr_st_in *)a)->name, ((const sr_st_in *)b)->name);
}

/* Cuts tensors s[0..n) (name order) into `shards` runs of about equal bytes, none empty. */
static void plan_shards(size_t *first, const sr_st_in *s, size_t n, int shards)
{
    uint64_t total = 0, acc = 0;
    for (size_t i = 0; i < n; i++)
        total += s[i].nbytes;
    first[0] = 0;
    size_t i = 0;
    for (int k = 1; k < shards; k++) {
        uint64_t goal = total / (uint64_t)shards * (uint64_t)k;
        /* leave at least one tensor for each shard still to come */
        while (i < n - (size_t)(shards - k) && (i < first[k - 1] + 1 || acc < goal))
            acc += s[i++].nbytes;
        first[k] = i;
    }
    first[shards] = n;
}

/* Opens `parent`, the folder the checkpoint goes in (O_NOFOLLOW on its last component). */
static int open_parent(int *pfd, const char *parent, sr_err *err)
{
    *pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return *pfd < 0 ? open_err(err, AT_FDCWD, parent, "cannot open folder", parent) : 0;
}

/* Writes the shards into `tmp` (name `tname` in pfd), then renames it to `base` durably. */
static int write_folder(int pfd, const char *tname, const char *tmp, const char *base,
                        const char *dir, shard_job *j, int workers, sr_err *err)
{
    int rc = remove_partial(pfd, tname, tmp, err);
    if (!rc && mkdirat(pfd, tname, 0755))
        rc = open_err(err, pfd, tname, "cannot create", tmp);
    int tfd = -1;
    if (!rc && (tfd = openat(pfd, tname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        rc = open_err(err, pfd, tname, "cannot open", tmp);
    if (!rc) {
        j->dfd = tfd;
        rc = sr_fill_rows(j->shards, workers, write_shard, j, err);
    }
    if (!rc && fsync(tfd))
        rc = io_err(err, "cannot fsync folder", tmp);
    if (tfd >= 0)
        close(tfd);
    if (rc && tfd >= 0) {
        /* A write that failed midway (a full disk) leaves nothing behind: the partial folder
         * holds the space the caller's reports need. Its own error is the one returned. */
        sr_err ignored = SR_ERR_INIT;
        remove_partial(pfd, tname, tmp, &ignored);
    }
    struct stat st;
    if (!rc && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0)
        rc = S_ISLNK(st.st_mode) ? open_err(err, pfd, base, "", dir)
                                 : sr_err_set(err, SR_E_IO,
                                              "safetensors: checkpoint folder %.3000s already "
                                              "exists",
                                              dir);
    if (!rc && renameat(pfd, tname, pfd, base))
        rc = io_err(err, "cannot rename to", dir);
    if (!rc && fsync(pfd))
        rc = io_err(err, "cannot fsync the folder of", dir);
    return rc;
}

int sr_st_write_checkpoint(const char *dir, const sr_st_in *t, size_t n, const sr_st_meta *m,
                           size_t n_meta, int shards, int workers, sr_err *err)
{
    if (!dir || !*dir || shards < 1 || shards > SR_ST_MAX_SHARDS || (n && (size_t)shards > n) ||
        (!n && shards != 1) || workers < 1 || strlen(dir) > PATH_CAP - 64)
        return sr_err_set(err, SR_E_INVAL, "safetensors: bad checkpoint write arguments");
    char tmp[PATH_CAP], parent[PATH_CAP], base[PATH_CAP], tname[PATH_CAP];
    snprintf(tmp, sizeof(tmp), "%s.partial", dir);
    snprintf(parent, sizeof(parent), "%s", dir);
    char *sl = strrchr(parent, '/');
    snprintf(base, sizeof(base), "%s", sl ? sl + 1 : dir);
    if (!sl)
        snprintf(parent, sizeof(parent), ".");
    else
        sl == parent ? (void)(parent[1] = '\0') : (void)(*sl = '\0');
    snprintf(tname, sizeof(tname), "%.4000s.partial", base);
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return sr_err_set(err, SR_E_INVAL, "safetensors: checkpoint folder %.3000s has no name",
                          dir);
    int pfd;
    int rc = open_parent(&pfd, parent, err);
    if (rc)
        return rc;
    struct stat st;
    int there = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW);
    if (there == 0 || errno != ENOENT) {
        rc = there != 0            ? io_err(err, "cannot look at", dir)
             : S_ISLNK(st.st_mode) ? open_err(err, pfd, base, "", dir)
                                   : sr_err_set(err, SR_E_IO,
                                                "safetensors: checkpoint folder %.3000s already "
                                                "exists",
                                                dir);
        close(pfd);
        return rc;
    }
    sr_st_in *s = malloc((n ? n : 1) * sizeof(*s));
    size_t *first = malloc(((size_t)shards + 1) * sizeof(*first));
    rc = s && first ? 0 : sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for the plan");
    for (size_t i = 0; i < n && !rc; i++)
        rc = check_in(&t[i], err);
    if (!rc) {
        memcpy(s, t, n * sizeof(*s));
        qsort(s, n, sizeof(*s), in_by_name);
        for (size_t i = 1; i < n && !rc; i++)
            if (!strcmp(s[i - 1].name, s[i].name))
                rc = sr_err_set(err, SR_E_ST_DUPLICATE, "safetensors: tensor '%.200s' given twice",
                                s[i].name);
    }
    if (!rc) {
        plan_shards(first, s, n, shards);
        shard_job j = {tmp, -1, s, first, shards, m, n_meta};
        rc = write_folder(pfd, tname, tmp, base, dir, &j, workers, err);
    }
    close(pfd);
    free(s);
    free(first);
    return rc;
}
