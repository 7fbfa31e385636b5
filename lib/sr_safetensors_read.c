/* sr_safetensors: the checkpoint folder reader (sr_safetensors.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr_pool.h"
#include "sr_safetensors.h"
#include "sr_path.h"

#define PATH_CAP 4096

typedef struct st_file {
    char *path; /* for messages; the file is opened by its name relative to the folder */
    const char *name;
    int fd;
    uint64_t size;
    sr_st_header *h;
} st_file;

struct sr_st_checkpoint {
    st_file *files;
    size_t n_files;
    sr_st_info *index; /* every tensor, by name */
    size_t n;
    uint64_t bytes;
};

void sr_st_checkpoint_free(sr_st_checkpoint *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_files; i++) {
        if (c->files[i].fd >= 0)
            close(c->files[i].fd);
        free(c->files[i].path);
        sr_st_header_free(c->files[i].h);
    }
    free(c->files);
    free(c->index);
    free(c);
}

/* pread(2) of exactly n bytes at off; -1 with errno, or 1 when the file ends first. */
static int pread_all(int fd, void *p, size_t n, uint64_t off)
{
    char *c = p;
    while (n) {
        ssize_t r = pread(fd, c, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return 1;
        c += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* 1 if s is exactly `n` decimal digits; their value into *v. */
static int digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        *v = *v * 10 + (s[i] - '0');
    }
    return 1;
}

/* model-<i>-of-<n>.safetensors with 5-digit i and n, 1 <= i <= n. */
static int shard_name(const char *s, int *i, int *n)
{
    return strlen(s) == 32 && !strncmp(s, "model-", 6) && digits(s + 6, 5, i) &&
           !strncmp(s + 11, "-of-", 4) && digits(s + 15, 5, n) && !strcmp(s + 20, ".safetensors") &&
           *i >= 1 && *i <= *n;
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

/* Opens the checkpoint folder itself (O_NOFOLLOW on its last component) into *dfd. */
/* The checkpoint folder, opened following no link in any component of `dir` (sr_path.h): the
 * engine checks the canonical path against its sync_dirs first, and a link swapped into an
 * upper folder afterwards must not redirect the read. */
static int open_folder(int *dfd, const char *dir, sr_err *err)
{
    int e = 0;
    sr_err pe = SR_ERR_INIT;
    int rc = sr_path_open_dir(dfd, dir, 0, &e, &pe);
    if (!rc)
        return 0;
    if (rc == SR_E_SYMLINK)
        return sr_err_set(err, SR_E_SYMLINK, "safetensors: checkpoint folder: %s", pe.msg);
    return sr_err_set(err, e == ENOENT || e == ENOTDIR ? SR_E_ST_CHECKPOINT : SR_E_IO,
                      "safetensors: cannot open checkpoint folder: %s", pe.msg);
}

/* The file names of the checkpoint in folder dfd (`dir`): into c->files (paths only). */
static int list_files(sr_st_checkpoint *c, int dfd, const char *dir, sr_err *err)
{
    int lfd = dup(dfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        return sr_err_set(err, SR_E_IO, "safetensors: cannot list checkpoint folder %.3000s: %s",
                          dir, strerror(errno));
    }
    int single = 0, of = 0, rc = 0, i, n;
    unsigned char *seen = NULL;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!ends_with(de->d_name, ".safetensors"))
            continue;
        if (!strcmp(de->d_name, "model.safetensors"))
            single = 1;
        else if (!shard_name(de->d_name, &i, &n))
            rc = sr_err_set(err, SR_E_ST_CHECKPOINT,
                            "safetensors: %.3000s/%.300s is neither model.safetensors nor "
                            "model-<i>-of-<n>.safetensors (5 digits each)",
                            dir, de->d_name);
        else if (of && n != of)
            rc = sr_err_set(err, SR_E_ST_CHECKPOINT,
                            "safetensors: %.3000s holds shards of %d and of %d files", dir, of, n);
        else {
            if (!seen && !(seen = calloc((size_t)n + 1, 1)))
                rc = sr_err_set(err, SR_E_NOMEM, "safetensors: no memory");
            of = n;
            if (seen)
                seen[i] = 1;
        }
    }
    closedir(d);
    if (!rc && single && of)
        rc = sr_err_set(err, SR_E_ST_CHECKPOINT,
                        "safetensors: %.3000s holds both model.safetensors and shards", dir);
    if (!rc && !single && !of)
        rc = sr_err_set(err, SR_E_ST_CHECKPOINT,
                        "safetensors: %.3000s holds no model.safetensors and no shards", dir);
    for (int k = 1; !rc && k <= of; k++)
        if (!seen[k])
            rc = sr_err_set(err, SR_E_ST_CHECKPOINT,
                            "safetensors: %.3000s lacks shard %05d of %05d", dir, k, of);
    free(seen);
    size_t count = single ? 1 : (size_t)of;
    if (!rc && !(c->files = calloc(count, sizeof(*c->files))))
        rc = sr_err_set(err, SR_E_NOMEM, "safetensors: no memory");
    for (size_t k = 0; !rc && k < count; k++) {
        char p[PATH_CAP];
        if (single)
            snprintf(p, sizeof(p), "%s/model.safetensors", dir);
        else
            snprintf(p, sizeof(p), "%s/model-%05zu-of-%05d.safetensors", dir, k + 1, of);
        c->files[k].fd = -1;
        c->n_files++;
        if (!(c->files[k].path = strdup(p)))
            rc = sr_err_set(err, SR_E_NOMEM, "safetensors: no memory");
        else
            c->files[k].name = c->files[k].path + strlen(dir) + 1;
    }
    return rc;
}

/* Opens file f of folder dfd (regular only, never through a symlink, never blocking on a FIFO)
 * and parses its header. */
static int open_file(st_file *f, int dfd, sr_err *err)
{
    f->fd = openat(dfd, f->name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    struct stat st;
    if (f->fd < 0 && fstatat(dfd, f->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return sr_err_set(err, SR_E_SYMLINK,
                          "safetensors: %.3000s is a symlink; checkpoint files are never read "
                          "through one",
                          f->path);
    if (f->fd < 0 || fstat(f->fd, &st))
        return sr_err_set(err, SR_E_IO, "safetensors: cannot open %.3000s: %s", f->path,
                          strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sr_err_set(err, SR_E_NOT_REGULAR, "safetensors: %.3000s is not a regular file",
                          f->path);
    f->size = (uint64_t)st.st_size;
    unsigned char len8[8];
    uint64_t n = 0;
    int r = pread_all(f->fd, len8, f->size < 8 ? (size_t)f->size : 8, 0);
    if (r < 0)
        return sr_err_set(err, SR_E_IO, "safetensors: cannot read %.3000s: %s", f->path,
                          strerror(errno));
    int rc = sr_st_header_len(&n, len8, f->size < 8 ? (size_t)f->size : 8, f->size, err);
    unsigned char *buf = rc ? NULL : malloc((size_t)n + 8);
    if (!rc && !buf)
        rc = sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for a %llu-byte header",
                        (unsigned long long)n);
    if (!rc && (r = pread_all(f->fd, buf, (size_t)n + 8, 0)) != 0)
        rc = sr_err_set(err, SR_E_IO, "safetensors: cannot read the header of %.3000s: %s", f->path,
                        r < 0 ? strerror(errno) : "the file shrank");
    if (!rc)
        rc = sr_st_parse_header(&f->h, buf, (size_t)n + 8, f->size, err);
    free(buf);
    if (rc)
        sr_err_prefix(err, "%.3000s: ", f->path);
    return rc;
}

static int info_by_name(const void *a, const void *b)
{
    return strcmp(((const sr_st_info *)a)->t->name, ((const sr_st_info *)b)->t->name);
}

static int build_index(sr_st_checkpoint *c, sr_err *err)
{
    size_t n = 0;
    for (size_t f = 0; f < c->n_files; f++)
        n += c->files[f].h->n_tensors;
    if (!(c->index = calloc(n ? n : 1, sizeof(*c->index))))
        return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for %zu tensors", n);
    for (size_t f = 0; f < c->n_files; f++)
        for (size_t i = 0; i < c->files[f].h->n_tensors; i++) {
            sr_st_info *x = &c->index[c->n++];
            x->t = &c->files[f].h->tensors[i];
            x->nbytes = (size_t)(x->t->end - x->t->begin);
            x->file = (int)f;
            c->bytes += x->nbytes;
        }
    qsort(c->index, c->n, sizeof(*c->index), info_by_name);
    for (size_t i = 1; i < c->n; i++)
        if (!strcmp(c->index[i - 1].t->name, c->index[i].t->name))
            return sr_err_set(err, SR_E_ST_DUPLICATE,
                              "safetensors: tensor '%.200s' is in both %.1500s and %.1500s",
                              c->index[i].t->name, c->files[c->index[i - 1].file].path,
                              c->files[c->index[i].file].path);
    return 0;
}

int sr_st_checkpoint_open(sr_st_checkpoint **out, const char *dir, sr_err *err)
{
    *out = NULL;
    if (!dir || strlen(dir) > PATH_CAP - 64)
        return sr_err_set(err, SR_E_INVAL, "safetensors: no checkpoint folder, or a too long one");
    sr_st_checkpoint *c = calloc(1, sizeof(*c));
    if (!c)
        return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory");
    int dfd = -1;
    int rc = open_folder(&dfd, dir, err);
    rc = rc ? rc : list_files(c, dfd, dir, err);
    for (size_t f = 0; !rc && f < c->n_files; f++)
        rc = open_file(&c->files[f], dfd, err);
    if (dfd >= 0)
        close(dfd);
    if (!rc)
        rc = build_index(c, err);
    if (rc) {
        sr_st_checkpoint_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

size_t sr_st_checkpoint_count(const sr_st_checkpoint *c)
{
    return c->n;
}

size_t sr_st_checkpoint_files(const sr_st_checkpoint *c)
{
    return c->n_files;
}

uint64_t sr_st_checkpoint_bytes(const sr_st_checkpoint *c)
{
    return c->bytes;
}

int sr_st_checkpoint_tensor(sr_st_info *out, const sr_st_checkpoint *c, size_t i, sr_err *err)
{
    if (i >= c->n)
        return sr_err_set(err, SR_E_INVAL, "safetensors: tensor %zu of %zu", i, c->n);
    *out = c->index[i];
    return 0;
}

int64_t sr_st_checkpoint_find(const sr_st_checkpoint *c, const char *name)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = strcmp(c->index[mid].t->name, name);
        if (!k)
            return (int64_t)mid;
        if (k < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

const sr_st_header *sr_st_checkpoint_header(const sr_st_checkpoint *c, size_t f)
{
    return f < c->n_files ? c->files[f].h : NULL;
}

const char *sr_st_checkpoint_meta(const sr_st_checkpoint *c, const char *key)
{
    const sr_st_header *h = c->n_files ? c->files[0].h : NULL;
    for (size_t i = 0; h && i < h->n_meta; i++)
        if (!strcmp(h->meta[i].key, key))
            return h->meta[i].value;
    return NULL;
}

/* One pread of the read plan. */
typedef struct piece {
    int fd;
    const char *path;
    uint64_t off;
    void *dst;
    size_t len;
} piece;

static int read_piece(void *ctx, int64_t row, sr_err *err)
{
    const piece *p = &((const piece *)ctx)[row];
    int r = pread_all(p->fd, p->dst, p->len, p->off);
    if (r)
        return sr_err_set(err, SR_E_IO, "safetensors: cannot read %zu bytes at %llu of %.3000s: %s",
                          p->len, (unsigned long long)p->off, p->path,
                          r < 0 ? strerror(errno) : "the file shrank");
    return 0;
}

int sr_st_checkpoint_read(sr_st_checkpoint *c, int workers, sr_st_dest_fn dest, void *ctx,
                          sr_st_read_stats *stats, sr_err *err)
{
    if (stats)
        memset(stats, 0, sizeof(*stats));
    if (!dest || workers < 1)
        return sr_err_set(err, SR_E_INVAL, "safetensors: read needs a dest callback and workers");
    size_t np = 0;
    for (size_t i = 0; i < c->n; i++)
        np += (c->index[i].nbytes + SR_ST_PIECE - 1) / SR_ST_PIECE;
    piece *ps = malloc((np ? np : 1) * sizeof(*ps));
    if (!ps)
        return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for %zu pieces", np);
    size_t k = 0;
    uint64_t bytes = 0;
    int rc = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const sr_st_info *x = &c->index[i];
        void *dst = NULL;
        rc = dest(ctx, i, x, &dst, err);
        if (rc || !dst)
            continue;
        const st_file *f = &c->files[x->file];
        for (size_t at = 0; at < x->nbytes; at += SR_ST_PIECE) {
            size_t len = x->nbytes - at < SR_ST_PIECE ? x->nbytes - at : SR_ST_PIECE;
            ps[k++] =
                (piece){f->fd, f->path, f->h->data_start + x->t->begin + at, (char *)dst + at, len};
            bytes += len;
        }
    }
    int team = k < (size_t)workers ? (int)k : workers;
    if (!rc && k)
        rc = sr_fill_rows((int64_t)k, team, read_piece, ps, err);
    free(ps);
    if (stats && !rc) {
        stats->bytes = bytes;
        stats->pieces = (int64_t)k;
        stats->workers = team;
    }
    return rc;
}
