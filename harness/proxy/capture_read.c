/* The capture reader (capture.h): an untrusted index parsed with bounds, bodies checked. */
#include "capture.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <xxhash.h>
#include <zstd.h>

#include "sr_file.h"

struct sr_capture {
    char *dir; /* NULL: bodies cannot be read */
    char upstream[SR_CAPTURE_STR_MAX];
    int64_t started_unix_ms;
    int redacted;
    sr_capture_exchange *x;
    size_t n, cap;
};

/* A line's context for messages: "capture.jsonl line N". */
typedef struct line_ctx {
    size_t line;
    sr_err *err;
} line_ctx;

static int corrupt(const line_ctx *c, const char *key, const char *what)
{
    return sr_err_set_at(c->err, SR_E_CAPTURE_CORRUPT, (int64_t)c->line,
                         SR_CAPTURE_INDEX " line %zu: \"%s\" %s", c->line, key, what);
}

/* An integer member in [lo, hi] (JSON numbers are doubles: exact below 2^53). */
static int get_int(int64_t *out, const cJSON *o, const char *key, int64_t lo, int64_t hi,
                   const line_ctx *c)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        return corrupt(c, key, "is missing or not a number");
    double d = v->valuedouble;
    if (!(d >= (double)lo && d <= (double)hi) || d != (double)(int64_t)d)
        return corrupt(c, key, "is not an integer in range");
    *out = (int64_t)d;
    return 0;
}

/* A string member (or null when `nullable`) copied into dst[cap]; "" for null. */
static int get_str(char *dst, size_t cap, const cJSON *o, const char *key, int nullable,
                   const line_ctx *c)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (nullable && cJSON_IsNull(v)) {
        dst[0] = '\0';
        return 0;
    }
    if (!cJSON_IsString(v))
        return corrupt(
            c, key, nullable ? "is missing or not a string or null" : "is missing or not a string");
    size_t len = strlen(v->valuestring);
    if (len >= cap)
        return corrupt(c, key, "is too long");
    memcpy(dst, v->valuestring, len + 1);
    return 0;
}

/* "bodies/<1..12 digits>.(req|resp).zst": nothing else may be opened. */
static int body_name_ok(const char *f)
{
    if (strncmp(f, "bodies/", 7) != 0)
        return 0;
    const char *p = f + 7;
    size_t digits = 0;
    while (isdigit((unsigned char)p[digits]))
        digits++;
    if (digits == 0 || digits > 12)
        return 0;
    return strcmp(p + digits, ".req.zst") == 0 || strcmp(p + digits, ".resp.zst") == 0;
}

static int get_body(sr_capture_body *b, const cJSON *o, const char *key, const line_ctx *c)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsObject(v))
        return corrupt(c, key, "is missing or not an object");
    int64_t bytes;
    char hex[32];
    int rc = get_str(b->file, sizeof b->file, v, "file", 0, c);
    if (!rc)
        rc = get_int(&bytes, v, "bytes", 0, INT64_C(1) << 52, c);
    if (!rc)
        rc = get_str(hex, sizeof hex, v, "xxh3", 0, c);
    if (!rc)
        rc = get_str(b->content_type, sizeof b->content_type, v, "content_type", 1, c);
    if (rc)
        return rc;
    if (b->file[0] && !body_name_ok(b->file))
        return corrupt(c, "file", "is not bodies/<digits>.req.zst or bodies/<digits>.resp.zst");
    if (!b->file[0] && bytes != 0)
        return corrupt(c, "file", "is empty for a body with bytes");
    char *end = NULL;
    if (strlen(hex) != 16 || !isxdigit((unsigned char)hex[0]))
        return corrupt(c, "xxh3", "is not 16 hex digits");
    errno = 0;
    unsigned long long h = strtoull(hex, &end, 16);
    if (errno || *end)
        return corrupt(c, "xxh3", "is not 16 hex digits");
    b->bytes = (uint64_t)bytes;
    b->xxh3 = (uint64_t)h;
    return 0;
}

static int parse_exchange(sr_capture_exchange *x, const cJSON *o, const line_ctx *c)
{
    int64_t status;
    memset(x, 0, sizeof *x);
    if (!cJSON_IsObject(o))
        return corrupt(c, "(line)", "is not a JSON object");
    int rc = get_int(&x->seq, o, "seq", 1, SR_CAPTURE_MAX_EXCHANGES * INT64_C(1000), c);
    if (!rc)
        rc = get_str(x->session, sizeof x->session, o, "session", 1, c);
    if (!rc)
        rc = get_str(x->method, sizeof x->method, o, "method", 0, c);
    if (!rc)
        rc = get_str(x->uri, sizeof x->uri, o, "uri", 0, c);
    if (!rc)
        rc = get_str(x->endpoint, sizeof x->endpoint, o, "endpoint", 1, c);
    if (!rc && !(rc = get_int(&status, o, "status", 0, 999, c)))
        x->status = (int)status;
    if (!rc)
        rc = get_int(&x->t_start_us, o, "t_start_us", 0, INT64_C(1) << 52, c);
    if (!rc)
        rc = get_int(&x->t_head_us, o, "t_head_us", 0, INT64_C(1) << 52, c);
    if (!rc)
        rc = get_int(&x->t_end_us, o, "t_end_us", 0, INT64_C(1) << 52, c);
    if (!rc)
        rc = get_body(&x->request, o, "request", c);
    if (!rc)
        rc = get_body(&x->response, o, "response", c);
    if (!rc)
        rc = get_str(x->fault, sizeof x->fault, o, "fault", 1, c);
    if (rc)
        return rc;
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(o, "complete");
    if (!cJSON_IsBool(done))
        return corrupt(c, "complete", "is missing or not a boolean");
    x->complete = cJSON_IsTrue(done);
    if (x->uri[0] != '/')
        return corrupt(c, "uri", "does not start with '/'");
    if (x->t_head_us < x->t_start_us || x->t_end_us < x->t_start_us)
        return corrupt(c, "t_end_us", "is before t_start_us");
    return 0;
}

static int parse_header(sr_capture *cap, const cJSON *o, const line_ctx *c)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "syncroll_capture");
    if (!cJSON_IsObject(o) || !cJSON_IsNumber(v))
        return sr_err_set_at(c->err, SR_E_CAPTURE_VERSION, 1,
                             SR_CAPTURE_INDEX " line 1 is not a syncroll capture header");
    if (v->valuedouble != SR_CAPTURE_VERSION)
        return sr_err_set_at(c->err, SR_E_CAPTURE_VERSION, 1,
                             SR_CAPTURE_INDEX " is capture version %g; this build reads %d",
                             v->valuedouble, SR_CAPTURE_VERSION);
    int rc = get_str(cap->upstream, sizeof cap->upstream, o, "upstream", 0, c);
    if (!rc)
        rc = get_int(&cap->started_unix_ms, o, "started_unix_ms", 0, INT64_C(1) << 52, c);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "redacted");
    if (!rc && !cJSON_IsBool(r))
        rc = corrupt(c, "redacted", "is missing or not a boolean");
    if (!rc)
        cap->redacted = cJSON_IsTrue(r);
    return rc;
}

static int add_line(sr_capture *cap, const char *p, size_t len, size_t line, sr_err *err)
{
    line_ctx c = {line, err};
    if (len > SR_CAPTURE_MAX_LINE)
        return sr_err_set_at(err, SR_E_LIMIT, (int64_t)line,
                             SR_CAPTURE_INDEX " line %zu has %zu bytes, more than %u", line, len,
                             SR_CAPTURE_MAX_LINE);
    cJSON *o = cJSON_ParseWithLength(p, len);
    if (!o)
        return line == 1 ? sr_err_set_at(err, SR_E_CAPTURE_VERSION, 1,
                                         SR_CAPTURE_INDEX " line 1 is not JSON")
                         : corrupt(&c, "(line)", "is not JSON");
    int rc;
    if (line == 1) {
        rc = parse_header(cap, o, &c);
    } else if (cap->n >= SR_CAPTURE_MAX_EXCHANGES) {
        rc = sr_err_set_at(err, SR_E_LIMIT, (int64_t)line, "a capture holds at most %d exchanges",
                           SR_CAPTURE_MAX_EXCHANGES);
    } else {
        if (cap->n == cap->cap) {
            size_t nc = cap->cap ? cap->cap * 2 : 16;
            sr_capture_exchange *nx = realloc(cap->x, nc * sizeof *nx);
            if (!nx) {
                cJSON_Delete(o);
                return sr_err_set(err, SR_E_NOMEM, "no memory for %zu exchanges", nc);
            }
            cap->x = nx;
            cap->cap = nc;
        }
        rc = parse_exchange(&cap->x[cap->n], o, &c);
        if (!rc)
            cap->n++;
    }
    cJSON_Delete(o);
    return rc;
}

/* Arrival order: lines are written as exchanges end, seq numbers them as they arrive. */
static int by_seq(const void *a, const void *b)
{
    int64_t x = ((const sr_capture_exchange *)a)->seq, y = ((const sr_capture_exchange *)b)->seq;
    return (x > y) - (x < y);
}

int sr_capture_parse(sr_capture **out, const char *text, size_t len, const char *dir, sr_err *err)
{
    *out = NULL;
    sr_capture *cap = calloc(1, sizeof *cap);
    if (!cap || (dir && !(cap->dir = strdup(dir)))) {
        free(cap);
        return sr_err_set(err, SR_E_NOMEM, "no memory for a capture");
    }
    size_t line = 0, pos = 0;
    int rc = 0;
    while (!rc && pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        line++;
        if (!nl) {
            rc = sr_err_set_at(err, SR_E_CAPTURE_TRUNCATED, (int64_t)line,
                               SR_CAPTURE_INDEX " ends inside line %zu (%zu bytes without a "
                                                "newline): the proxy was stopped while writing it",
                               line, len - pos);
            break;
        }
        rc = add_line(cap, text + pos, (size_t)(nl - (text + pos)), line, err);
        pos = (size_t)(nl - text) + 1;
    }
    if (!rc && line == 0)
        rc = sr_err_set_at(err, SR_E_CAPTURE_VERSION, 0, SR_CAPTURE_INDEX " is empty");
    if (!rc && cap->n > 1)
        qsort(cap->x, cap->n, sizeof *cap->x, by_seq);
    if (rc) {
        sr_capture_free(cap);
        return rc;
    }
    *out = cap;
    return 0;
}

int sr_capture_open(sr_capture **out, const char *dir, sr_err *err)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/" SR_CAPTURE_INDEX, dir) >= sizeof path)
        return sr_err_set(err, SR_E_IO, "capture path '%s' is too long", dir);
    sr_buf b = SR_BUF_INIT;
    int rc = sr_file_read(&b, path, SR_CAPTURE_MAX_INDEX, err);
    if (!rc)
        rc = sr_capture_parse(out, b.data ? b.data : "", b.len, dir, err);
    sr_buf_release(&b);
    return rc;
}

void sr_capture_free(sr_capture *c)
{
    if (!c)
        return;
    free(c->dir);
    free(c->x);
    free(c);
}

const char *sr_capture_upstream(const sr_capture *c)
{
    return c->upstream;
}
int64_t sr_capture_started_unix_ms(const sr_capture *c)
{
    return c->started_unix_ms;
}
int sr_capture_redacted(const sr_capture *c)
{
    return c->redacted;
}
size_t sr_capture_count(const sr_capture *c)
{
    return c ? c->n : 0;
}
const sr_capture_exchange *sr_capture_at(const sr_capture *c, size_t i)
{
    return c && i < c->n ? &c->x[i] : NULL;
}

/* Decompresses the open file `fd` (one zstd frame) into out, at most max bytes. */
static int inflate_fd(sr_buf *out, int fd, const char *path, size_t max, sr_err *err)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d)
        return sr_err_set(err, SR_E_NOMEM, "no memory for a zstd decoder");
    static const size_t IN = 64 << 10;
    char *in = malloc(IN);
    int rc = in ? 0 : sr_err_set(err, SR_E_NOMEM, "no memory to read '%s'", path);
    size_t last = 1; /* ZSTD_decompressStream's hint: 0 once a frame ended */
    ssize_t got = 0;
    while (!rc && (got = read(fd, in, IN)) > 0) {
        ZSTD_inBuffer ib = {in, (size_t)got, 0};
        while (!rc && ib.pos < ib.size) {
            if (last == 0)
                rc = sr_err_set(err, SR_E_CAPTURE_BODY, "'%s' holds bytes after its zstd frame",
                                path);
            else
                rc = sr_buf_reserve(out, 64 << 10, err);
            if (rc)
                break;
            ZSTD_outBuffer ob = {out->data + out->len, out->cap - out->len - 1, 0};
            last = ZSTD_decompressStream(d, &ob, &ib);
            if (ZSTD_isError(last))
                rc = sr_err_set(err, SR_E_CAPTURE_BODY, "'%s' is not a zstd frame: %s", path,
                                ZSTD_getErrorName(last));
            out->len += ob.pos;
            out->data[out->len] = '\0';
            if (!rc && out->len > max)
                rc = sr_err_set(err, SR_E_LIMIT, "'%s' decompresses to more than %zu bytes", path,
                                max);
        }
    }
    if (!rc && got < 0)
        rc = sr_err_set(err, SR_E_IO, "cannot read '%s': %s", path, strerror(errno));
    if (!rc && last != 0)
        rc = sr_err_set(err, SR_E_CAPTURE_BODY, "'%s' ends inside its zstd frame", path);
    free(in);
    ZSTD_freeDCtx(d);
    return rc;
}

int sr_capture_open_body(const char *dir, const char *file, sr_err *err)
{
    /* The folder, then `bodies` in it, then the file, each without following a link, so a
     * capture cannot point a body outside its own folder. */
    static const char sub[] = "bodies/";
    if (strncmp(file, sub, sizeof sub - 1) != 0 || strchr(file + sizeof sub - 1, '/'))
        return sr_err_set(err, SR_E_CAPTURE_BODY, "'%s' is not a file under bodies/", file);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int bfd = dfd < 0 ? -1 : openat(dfd, "bodies", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int fd = bfd < 0 ? -1 : openat(bfd, file + sizeof sub - 1, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if (bfd >= 0)
        close(bfd);
    if (dfd >= 0)
        close(dfd);
    if (fd >= 0)
        return fd;
    /* O_DIRECTORY | O_NOFOLLOW on a link to a folder fails ENOTDIR on Linux, O_NOFOLLOW on a
     * link to a file ELOOP. */
    struct stat st;
    char path[4096];
    snprintf(path, sizeof path, "%s/bodies", dir);
    int link = e == ELOOP || (e == ENOTDIR && lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
    return sr_err_set(err, link ? SR_E_SYMLINK : SR_E_CAPTURE_BODY, "cannot open '%s/%s': %s", dir,
                      file, link ? "a symbolic link is in the way" : strerror(e));
}

int sr_capture_read_body(const sr_capture *c, const sr_capture_body *b, sr_buf *out, size_t max,
                         sr_err *err)
{
    out->len = 0;
    if (!b->file[0])
        return 0;
    if (!c->dir)
        return sr_err_set(err, SR_E_CAPTURE_BODY, "no capture folder to read '%s' from", b->file);
    if (b->bytes > max)
        return sr_err_set(err, SR_E_LIMIT, "'%s' records %" PRIu64 " bytes, more than %zu", b->file,
                          b->bytes, max);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", c->dir, b->file) >= sizeof path)
        return sr_err_set(err, SR_E_IO, "body path in '%s' is too long", c->dir);
    int fd = sr_capture_open_body(c->dir, b->file, err);
    if (fd < 0)
        return fd;
    int rc = inflate_fd(out, fd, path, max, err);
    close(fd);
    if (!rc && out->len != b->bytes)
        rc = sr_err_set(err, SR_E_CAPTURE_BODY, "'%s' holds %zu bytes, the index records %" PRIu64,
                        path, out->len, b->bytes);
    if (!rc && XXH3_64bits(out->data, out->len) != b->xxh3)
        rc = sr_err_set(err, SR_E_CAPTURE_BODY, "'%s' does not match its recorded xxh3 %016" PRIx64,
                        path, b->xxh3);
    return rc;
}
