/* Bounded writers of failure artifacts (artifacts.h). */
#include "artifacts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "report_priv.h"
#include "sr_buf.h"
#include "sr_npy.h"

static int check_name(const char *dir, const char *name, char *path, size_t cap, sr_err *err)
{
    if (!dir || !name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0 || strlen(name) > SR_ARTIFACT_NAME_MAX)
        return sr_err_set(err, SR_E_INVAL, "artifact name '%s' is not a plain file name",
                          name ? name : "(null)");
    if ((size_t)snprintf(path, cap, "%s/%s", dir, name) >= cap)
        return sr_err_set(err, SR_E_INVAL, "artifact path too long: %s/%s", dir, name);
    return 0;
}

/* Appends "<name>: <what>\n" to dir/index.txt with a single write. */
static int index_line(const char *dir, const char *name, const char *what, sr_err *err)
{
    char path[4096], line[SR_ARTIFACT_NAME_MAX + 1024];
    snprintf(path, sizeof(path), "%s/index.txt", dir);
    int n = snprintf(line, sizeof(line), "%s: %s\n", name, what);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
    if (len == sizeof(line) - 1)
        line[len - 1] = '\n'; /* a cut line still ends the line */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return sr_err_set(err, SR_E_IO, "%s: cannot open: %s", path, strerror(errno));
    ssize_t w = write(fd, line, len);
    int e = errno;
    close(fd);
    if (w != (ssize_t)len)
        return sr_err_set(err, SR_E_IO, "%s: cannot append: %s", path, strerror(e));
    return 0;
}

static int write_file(const char *path, const void *data, size_t len, sr_err *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return sr_err_set(err, SR_E_IO, "%s: cannot create: %s", path, strerror(errno));
    int bad = len && fwrite(data, 1, len, f) != len;
    bad |= fclose(f) != 0;
    return bad ? sr_err_set(err, SR_E_IO, "%s: cannot write", path) : 0;
}

int sr_artifact_bytes(const char *dir, const char *name, const void *data, size_t len,
                      int64_t focus, size_t max, sr_err *err)
{
    return sr_artifact_bytes_as(dir, name, NULL, data, len, focus, max, err);
}

/* "<desc>; <part>" into out, or part alone. */
static const char *described(char *out, size_t cap, const char *desc, const char *part)
{
    if (!desc)
        return part;
    snprintf(out, cap, "%s; %s", desc, part);
    return out;
}

int sr_artifact_bytes_as(const char *dir, const char *name, const char *desc, const void *data,
                         size_t len, int64_t focus, size_t max, sr_err *err)
{
    char path[4096], what[200], line[600];
    int rc = check_name(dir, name, path, sizeof(path), err);
    if (rc)
        return rc;
    if (!data && len)
        return sr_err_set(err, SR_E_INVAL, "artifact %s: no data", name);
    max = max ? max : SR_ARTIFACT_MAX_BYTES;
    size_t a = 0, n = len;
    int centred = focus >= 0 && (uint64_t)focus < len;
    if (len > max) {
        n = max;
        if (centred) {
            a = (size_t)focus > max / 2 ? (size_t)focus - max / 2 : 0;
            a = a > len - max ? len - max : a;
            snprintf(what, sizeof(what), "bytes [%zu, %zu) of %zu (cut around byte %lld)", a, a + n,
                     len, (long long)focus);
        } else {
            snprintf(what, sizeof(what), "bytes [0, %zu) of %zu (cut to the head)", n, len);
        }
    } else {
        snprintf(what, sizeof(what), "all %zu bytes", len);
    }
    rc = write_file(path, (const char *)data + a, n, err);
    return rc ? rc : index_line(dir, name, described(line, sizeof(line), desc, what), err);
}

int sr_artifact_copy_tail(const char *dir, const char *name, const char *src, size_t max,
                          sr_err *err)
{
    return sr_artifact_copy_tail_as(dir, name, NULL, src, max, NULL, err);
}

int sr_artifact_copy_tail_as(const char *dir, const char *name, const char *desc, const char *src,
                             size_t max, size_t *written, sr_err *err)
{
    char path[4096], what[4300], buf[65536], line[4700];
    int rc = check_name(dir, name, path, sizeof(path), err);
    if (rc)
        return rc;
    if (!src)
        return sr_err_set(err, SR_E_INVAL, "artifact %s: no source file", name);
    max = max ? max : SR_ARTIFACT_MAX_BYTES;
    FILE *in = fopen(src, "rb");
    if (!in)
        return sr_err_set(err, SR_E_IO, "%s: cannot open: %s", src, strerror(errno));
    off_t size = fseeko(in, 0, SEEK_END) == 0 ? ftello(in) : -1;
    off_t start = size > (off_t)max ? size - (off_t)max : 0;
    FILE *out = size >= 0 && fseeko(in, start, SEEK_SET) == 0 ? fopen(path, "wb") : NULL;
    if (!out) {
        fclose(in);
        return sr_err_set(err, SR_E_IO, "%s: cannot copy %s", path, src);
    }
    size_t left = (size_t)(size - start), got;
    int bad = 0;
    while (left && !bad && (got = fread(buf, 1, left < sizeof(buf) ? left : sizeof(buf), in))) {
        bad = fwrite(buf, 1, got, out) != got;
        left -= got;
    }
    bad |= ferror(in);
    bad |= fclose(out) != 0;
    fclose(in);
    if (bad)
        return sr_err_set(err, SR_E_IO, "%s: cannot copy %s", path, src);
    if (start)
        snprintf(what, sizeof(what), "last %zu of %lld bytes of %s", (size_t)(size - start),
                 (long long)size, src);
    else
        snprintf(what, sizeof(what), "all %lld bytes of %s", (long long)size, src);
    if (written)
        *written = (size_t)(size - start);
    return index_line(dir, name, described(line, sizeof(line), desc, what), err);
}

int sr_artifact_text(const char *dir, const char *name, const char *desc, const char *text,
                     size_t len, sr_err *err)
{
    char path[4096];
    int rc = check_name(dir, name, path, sizeof(path), err);
    if (!rc && !text && len)
        rc = sr_err_set(err, SR_E_INVAL, "artifact %s: no text", name);
    rc = rc ? rc : write_file(path, text ? text : "", len, err);
    return rc ? rc : index_line(dir, name, desc ? desc : "text", err);
}

int sr_artifact_npy_i32(const char *dir, const char *name, const char *desc, const int32_t *data,
                        int64_t rows, int64_t cols, sr_err *err)
{
    char path[4096], head[SR_NPY_HEADER_MAX];
    int rc = check_name(dir, name, path, sizeof(path), err);
    if (rc)
        return rc;
    if (rows < 0 || cols < 0 || (rows > 0 && cols > 0 && !data) || rows > (1 << 24) ||
        cols > (1 << 16))
        return sr_err_set(err, SR_E_INVAL, "artifact %s: bad int32 matrix [%lld, %lld]", name,
                          (long long)rows, (long long)cols);
    int64_t shape[2] = {rows, cols};
    size_t hlen = 0;
    rc = sr_npy_write_header(&hlen, head, sizeof(head), SR_DTYPE_INT32, shape, 2, err);
    sr_buf b = SR_BUF_INIT;
    rc = rc ? rc : sr_buf_append(&b, head, hlen, err);
    /* Little-endian whatever the host: the header says "<i4". */
    for (int64_t i = 0; !rc && i < rows * cols; i++) {
        uint32_t v = (uint32_t)data[i];
        unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                               (unsigned char)(v >> 24)};
        rc = sr_buf_append(&b, le, 4, err);
    }
    rc = rc ? rc : write_file(path, b.data, b.len, err);
    sr_buf_release(&b);
    return rc ? rc : index_line(dir, name, desc ? desc : "int32 matrix", err);
}

int sr_artifact_note(const char *dir, const char *name, const char *desc, sr_err *err)
{
    char path[4096];
    int rc = check_name(dir, name, path, sizeof(path), err);
    return rc ? rc : index_line(dir, name, desc ? desc : "", err);
}

/* ---- trace rows ---- */

static int routes_ok(const sr_ndarray *a)
{
    return !a || (a->ndim == 3 && sr_dtype_is_integer(a->dtype) && (a->data || a->nbytes == 0) &&
                  a->shape[1] >= 0 && a->shape[2] >= 0);
}

/* Prints "[e0, e1, ...]" for (row, layer) of a, or "-" when the row is not there. */
static void entry(sr_rw *w, const sr_ndarray *a, int64_t row, int64_t layer)
{
    if (!a || row >= a->shape[0] || layer >= a->shape[1]) {
        sr_rw_puts(w, "-");
        return;
    }
    int64_t k = a->shape[2], shown = k < 16 ? k : 16;
    uint64_t base = ((uint64_t)row * (uint64_t)a->shape[1] + (uint64_t)layer) * (uint64_t)k;
    sr_rw_puts(w, "[");
    for (int64_t i = 0; i < shown; i++)
        sr_rw_printf(w, "%s%lld", i ? ", " : "", (long long)sr_ndarray_get_i64(a, base + i));
    sr_rw_puts(w, k > shown ? ", ...]" : "]");
}

static int differs(const sr_ndarray *g, const sr_ndarray *x, int64_t row, int64_t layer)
{
    if (!g || !x || row >= g->shape[0] || row >= x->shape[0])
        return 1;
    int64_t k = g->shape[2];
    uint64_t base = ((uint64_t)row * (uint64_t)g->shape[1] + (uint64_t)layer) * (uint64_t)k;
    for (int64_t i = 0; i < k; i++)
        if (sr_ndarray_get_i64(g, base + i) != sr_ndarray_get_i64(x, base + i))
            return 1;
    return 0;
}

static void trace_table(sr_rw *w, const sr_ndarray *got, const sr_ndarray *want, int64_t row,
                        int64_t ctx)
{
    char d1[96], d2[96];
    int same = got && want && got->shape[1] == want->shape[1] && got->shape[2] == want->shape[2];
    int64_t rows = 0, layers = 0;
    for (int s = 0; s < 2; s++) {
        const sr_ndarray *a = s ? want : got;
        if (a) {
            rows = a->shape[0] > rows ? a->shape[0] : rows;
            layers = a->shape[1] > layers ? a->shape[1] : layers;
        }
    }
    int64_t lo = row - ctx < 0 ? 0 : row - ctx, hi = row + ctx + 1 < rows ? row + ctx + 1 : rows;
    sr_rw_printf(w, "# route rows %lld..%lld around row %lld; got %s, want %s%s\n", (long long)lo,
                 (long long)hi - 1, (long long)row,
                 got ? sr_ndarray_desc(got->dtype, 3, got->shape, d1, sizeof(d1)) : "none",
                 want ? sr_ndarray_desc(want->dtype, 3, want->shape, d2, sizeof(d2)) : "none",
                 same ? "" : " (different geometry: not compared)");
    sr_rw_puts(w, "# row layer got want\n");
    for (int64_t r = lo; r < hi && !w->rc; r++)
        for (int64_t l = 0; l < layers; l++) {
            sr_rw_printf(w, "%lld %lld ", (long long)r, (long long)l);
            entry(w, got, r, l);
            sr_rw_puts(w, " ");
            entry(w, want, r, l);
            sr_rw_puts(w, same && differs(got, want, r, l) ? " !\n" : "\n");
        }
}

int sr_artifact_trace_rows(const char *dir, const char *name, const sr_ndarray *got,
                           const sr_ndarray *want, int64_t row, int64_t context, sr_err *err)
{
    char path[4096], what[160];
    int rc = check_name(dir, name, path, sizeof(path), err);
    if (rc)
        return rc;
    if (!routes_ok(got) || !routes_ok(want) || row < 0)
        return sr_err_set(err, SR_E_INVAL,
                          "artifact %s: routes must be [rows, layers, topk] integer arrays and "
                          "the row >= 0",
                          name);
    int64_t ctx = context <= 0 ? 3 : context;
    ctx = ctx > SR_ARTIFACT_MAX_CONTEXT ? SR_ARTIFACT_MAX_CONTEXT : ctx;
    sr_buf b = SR_BUF_INIT;
    b.max = (size_t)16 << 20;
    sr_rw w = {&b, 0, err};
    trace_table(&w, got, want, row, ctx);
    rc = w.rc ? w.rc : write_file(path, b.data ? b.data : "", b.len, err);
    sr_buf_release(&b);
    snprintf(what, sizeof(what), "decoded route rows %lld +- %lld (got, want)", (long long)row,
             (long long)ctx);
    return rc ? rc : index_line(dir, name, what, err);
}
