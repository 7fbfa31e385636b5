/* The capture writer (capture.h): zstd body streams and an append-only index. */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>
#include <zstd.h>

/* zstd level 1: the proxy sits on live traffic, so speed matters more than ratio. */
#define SR_CAPTURE_ZSTD_LEVEL 1

struct sr_capture_writer {
    char dir[4096];
    int index_fd;
    int bodies_fd; /* the bodies/ folder, for openat */
    pthread_mutex_t mu;
    _Atomic int64_t seq;
    struct timespec t0;
};

struct sr_capture_sink {
    int fd;
    char file[64];
    ZSTD_CCtx *z;
    XXH3_state_t *h;
    uint64_t bytes;
    char out[64 << 10];
};

static int64_t now_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000 + (t.tv_nsec - t0->tv_nsec) / 1000;
}

static int write_all(int fd, const void *p, size_t n, const char *what, sr_err *err)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return sr_err_set(err, SR_E_IO, "cannot write %s: %s", what, strerror(errno));
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int sr_capture_writer_open(sr_capture_writer **out, const char *dir, const char *upstream,
                           int redacted, sr_err *err)
{
    *out = NULL;
    if (strlen(dir) >= sizeof((sr_capture_writer *)0)->dir - 32)
        return sr_err_set(err, SR_E_IO, "capture folder name '%s' is too long", dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return sr_err_set(err, SR_E_IO, "cannot create capture folder '%s': %s", dir,
                          strerror(errno));
    sr_capture_writer *w = calloc(1, sizeof *w);
    if (!w)
        return sr_err_set(err, SR_E_NOMEM, "no memory for a capture writer");
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    w->index_fd = w->bodies_fd = -1;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = 0;
    if (dfd < 0)
        rc = sr_err_set(err, errno == ELOOP || errno == ENOTDIR ? SR_E_SYMLINK : SR_E_IO,
                        "cannot open capture folder '%s': %s", dir, strerror(errno));
    /* A capture is never appended to another one: an existing index is refused. */
    if (!rc &&
        (w->index_fd = openat(dfd, SR_CAPTURE_INDEX,
                              O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0)
        rc = sr_err_set(err, SR_E_IO, "cannot create '%s/" SR_CAPTURE_INDEX "': %s", dir,
                        strerror(errno));
    if (!rc && mkdirat(dfd, "bodies", 0755) != 0 && errno != EEXIST)
        rc = sr_err_set(err, SR_E_IO, "cannot create '%s/bodies': %s", dir, strerror(errno));
    if (!rc &&
        (w->bodies_fd = openat(dfd, "bodies", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        rc = sr_err_set(err, SR_E_IO, "cannot open '%s/bodies': %s", dir, strerror(errno));
    if (dfd >= 0)
        close(dfd);
    if (!rc) {
        pthread_mutex_init(&w->mu, NULL);
        clock_gettime(CLOCK_MONOTONIC, &w->t0);
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        sr_buf b = SR_BUF_INIT;
        rc = sr_buf_printf(&b, err, "{\"syncroll_capture\":%d,\"upstream\":", SR_CAPTURE_VERSION);
        if (!rc)
            rc = sr_buf_put_json_string(&b, upstream, err);
        if (!rc)
            rc = sr_buf_printf(&b, err, ",\"started_unix_ms\":%" PRId64 ",\"redacted\":%s}\n",
                               (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000,
                               redacted ? "true" : "false");
        if (!rc)
            rc = write_all(w->index_fd, b.data, b.len, "the capture header", err);
        sr_buf_release(&b);
        if (rc)
            pthread_mutex_destroy(&w->mu);
    }
    if (rc) {
        if (w->index_fd >= 0)
            close(w->index_fd);
        if (w->bodies_fd >= 0)
            close(w->bodies_fd);
        free(w);
        return rc;
    }
    *out = w;
    return 0;
}

int sr_capture_writer_close(sr_capture_writer *w, sr_err *err)
{
    if (!w)
        return 0;
    int rc = 0;
    if (fsync(w->index_fd) != 0)
        rc = sr_err_set(err, SR_E_IO, "cannot sync '%s/" SR_CAPTURE_INDEX "': %s", w->dir,
                        strerror(errno));
    close(w->index_fd);
    close(w->bodies_fd);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return rc;
}

int64_t sr_capture_next_seq(sr_capture_writer *w)
{
    return atomic_fetch_add(&w->seq, 1) + 1;
}

int64_t sr_capture_now_us(const sr_capture_writer *w)
{
    return now_since(&w->t0);
}

int sr_capture_sink_open(sr_capture_sink **out, sr_capture_writer *w, int64_t seq, const char *kind,
                         sr_err *err)
{
    *out = NULL;
    sr_capture_sink *s = calloc(1, sizeof *s);
    if (!s)
        return sr_err_set(err, SR_E_NOMEM, "no memory for a capture body");
    snprintf(s->file, sizeof s->file, "bodies/%06" PRId64 ".%s.zst", seq, kind);
    s->z = ZSTD_createCCtx();
    s->h = XXH3_createState();
    int rc = 0;
    if (!s->z || !s->h)
        rc = sr_err_set(err, SR_E_NOMEM, "no memory for a zstd stream");
    if (!rc) {
        ZSTD_CCtx_setParameter(s->z, ZSTD_c_compressionLevel, SR_CAPTURE_ZSTD_LEVEL);
        XXH3_64bits_reset(s->h);
        s->fd = openat(w->bodies_fd, s->file + 7,
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (s->fd < 0)
            rc = sr_err_set(err, SR_E_IO, "cannot create '%s/%s': %s", w->dir, s->file,
                            strerror(errno));
    }
    if (rc) {
        s->fd = -1;
        sr_capture_sink_abandon(s);
        return rc;
    }
    *out = s;
    return 0;
}

static int pump(sr_capture_sink *s, ZSTD_inBuffer *in, ZSTD_EndDirective mode, sr_err *err)
{
    size_t left;
    do {
        ZSTD_outBuffer ob = {s->out, sizeof s->out, 0};
        left = ZSTD_compressStream2(s->z, &ob, in, mode);
        if (ZSTD_isError(left))
            return sr_err_set(err, SR_E_IO, "zstd: %s", ZSTD_getErrorName(left));
        int rc = write_all(s->fd, s->out, ob.pos, s->file, err);
        if (rc)
            return rc;
    } while (mode == ZSTD_e_end ? left != 0 : in->pos < in->size);
    return 0;
}

int sr_capture_sink_write(sr_capture_sink *s, const void *data, size_t len, sr_err *err)
{
    if (!len)
        return 0;
    XXH3_64bits_update(s->h, data, len);
    s->bytes += len;
    ZSTD_inBuffer in = {data, len, 0};
    return pump(s, &in, ZSTD_e_continue, err);
}

int sr_capture_sink_close(sr_capture_sink *s, sr_capture_body *b, sr_err *err)
{
    ZSTD_inBuffer in = {NULL, 0, 0};
    int rc = pump(s, &in, ZSTD_e_end, err);
    if (!rc) {
        snprintf(b->file, sizeof b->file, "%s", s->file);
        b->bytes = s->bytes;
        b->xxh3 = XXH3_64bits_digest(s->h);
    }
    sr_capture_sink_abandon(s);
    return rc;
}

void sr_capture_sink_abandon(sr_capture_sink *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    ZSTD_freeCCtx(s->z);
    if (s->h)
        XXH3_freeState(s->h);
    free(s);
}

static int put_nullable(sr_buf *b, const char *key, const char *v, sr_err *err)
{
    int rc = sr_buf_printf(b, err, ",\"%s\":", key);
    if (!rc)
        rc = v[0] ? sr_buf_put_json_string(b, v, err) : sr_buf_puts(b, "null", err);
    return rc;
}

static int put_body(sr_buf *b, const char *key, const sr_capture_body *x, sr_err *err)
{
    int rc = sr_buf_printf(b, err, ",\"%s\":{\"file\":", key);
    if (!rc)
        rc = sr_buf_put_json_string(b, x->file, err);
    if (!rc)
        rc = sr_buf_printf(b, err, ",\"bytes\":%" PRIu64 ",\"xxh3\":\"%016" PRIx64 "\"", x->bytes,
                           x->xxh3);
    if (!rc)
        rc = put_nullable(b, "content_type", x->content_type, err);
    return rc ? rc : sr_buf_puts(b, "}", err);
}

int sr_capture_append(sr_capture_writer *w, const sr_capture_exchange *x, sr_err *err)
{
    sr_buf b = SR_BUF_INIT;
    int rc = sr_buf_printf(&b, err, "{\"seq\":%" PRId64, x->seq);
    if (!rc)
        rc = put_nullable(&b, "session", x->session, err);
    if (!rc)
        rc = sr_buf_puts(&b, ",\"method\":", err);
    if (!rc)
        rc = sr_buf_put_json_string(&b, x->method, err);
    if (!rc)
        rc = sr_buf_puts(&b, ",\"uri\":", err);
    if (!rc)
        rc = sr_buf_put_json_string(&b, x->uri, err);
    if (!rc)
        rc = put_nullable(&b, "endpoint", x->endpoint, err);
    if (!rc)
        rc = sr_buf_printf(&b, err,
                           ",\"status\":%d,\"t_start_us\":%" PRId64 ",\"t_head_us\":%" PRId64
                           ",\"t_end_us\":%" PRId64,
                           x->status, x->t_start_us, x->t_head_us, x->t_end_us);
    if (!rc)
        rc = put_body(&b, "request", &x->request, err);
    if (!rc)
        rc = put_body(&b, "response", &x->response, err);
    if (!rc)
        rc = sr_buf_printf(&b, err, ",\"complete\":%s", x->complete ? "true" : "false");
    if (!rc)
        rc = put_nullable(&b, "fault", x->fault, err);
    if (!rc)
        rc = sr_buf_puts(&b, "}\n", err);
    if (!rc && b.len > SR_CAPTURE_MAX_LINE)
        rc = sr_err_set(err, SR_E_LIMIT, "exchange %" PRId64 " needs a %zu-byte index line", x->seq,
                        b.len);
    if (!rc) {
        /* One write per line under the lock: lines never interleave. */
        pthread_mutex_lock(&w->mu);
        rc = write_all(w->index_fd, b.data, b.len, SR_CAPTURE_INDEX, err);
        pthread_mutex_unlock(&w->mu);
    }
    sr_buf_release(&b);
    return rc;
}
