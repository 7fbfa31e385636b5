/* sr_npy: strict reader and np.save-identical writer of `.npy` 1.0 headers (see sr_npy.h). */
#include "sr_npy.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* np.save's descr of each dtype, indexed by sr_dtype; NULL where there is none. */
static const char *const npy_descrs[SR_DTYPE_COUNT] = {
    [SR_DTYPE_BOOL] = "|b1",    [SR_DTYPE_INT8] = "|i1",    [SR_DTYPE_UINT8] = "|u1",
    [SR_DTYPE_INT16] = "<i2",   [SR_DTYPE_UINT16] = "<u2",  [SR_DTYPE_INT32] = "<i4",
    [SR_DTYPE_UINT32] = "<u4",  [SR_DTYPE_INT64] = "<i8",   [SR_DTYPE_UINT64] = "<u8",
    [SR_DTYPE_FLOAT16] = "<f2", [SR_DTYPE_FLOAT32] = "<f4", [SR_DTYPE_FLOAT64] = "<f8",
};

const char *sr_npy_descr(sr_dtype dtype)
{
    if ((int)dtype <= SR_DTYPE_INVALID || dtype >= SR_DTYPE_COUNT)
        return NULL;
    return npy_descrs[dtype];
}

int sr_npy_header_extent(size_t *total, const uint8_t *buf, size_t len, sr_err *err)
{
    size_t have = len < sizeof npy_magic ? len : sizeof npy_magic;
    if (memcmp(buf, npy_magic, have) != 0)
        return sr_err_set_at(err, SR_E_NPY_MAGIC, 0,
                             "the .npy payload does not start with \"\\x93NUMPY\"");
    if (len < SR_NPY_PREFIX_LEN)
        return sr_err_set_at(err, SR_E_NPY_HEADER, (int64_t)len,
                             "the .npy payload has %zu bytes, fewer than its %d-byte prefix", len,
                             SR_NPY_PREFIX_LEN);
    if (buf[6] != 1 || buf[7] != 0)
        return sr_err_set_at(err, SR_E_NPY_VERSION, 6,
                             ".npy format version %u.%u, expected 1.0 (what np.save writes)",
                             buf[6], buf[7]);
    *total = SR_NPY_PREFIX_LEN + ((size_t)buf[8] | (size_t)buf[9] << 8);
    return 0;
}

/* A cursor over the header text [p, end); `base` turns pointers back into offsets in `buf`. */
typedef struct npy_cur {
    const uint8_t *p, *end, *base;
    sr_err *err;
} npy_cur;

static void skip_ws(npy_cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static int syntax(npy_cur *c, const char *what)
{
    const uint8_t *at = c->p < c->end ? c->p : c->end;
    return sr_err_set_at(c->err, SR_E_NPY_HEADER, at - c->base,
                         "the .npy header is not a dict literal of descr, fortran_order and shape: "
                         "%s at byte %td",
                         what, at - c->base);
}

static int expect_char(npy_cur *c, char ch, const char *what)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != (uint8_t)ch)
        return syntax(c, what);
    c->p++;
    return 0;
}

/* A quoted string without escapes; *s and *n point into the header. */
static int read_string(npy_cur *c, const char **s, size_t *n)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return syntax(c, "expected a quoted string");
    uint8_t q = *c->p++;
    const uint8_t *start = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p < 0x20 || *c->p > 0x7e)
            return syntax(c, "an escape or a non-printable byte inside a string");
        c->p++;
    }
    if (c->p >= c->end)
        return syntax(c, "an unterminated string");
    *s = (const char *)start;
    *n = (size_t)(c->p - start);
    c->p++;
    return 0;
}

static int read_descr(npy_cur *c, sr_dtype *out, sr_dtype_set allowed)
{
    const char *s;
    size_t n;
    int rc = read_string(c, &s, &n);
    if (rc)
        return rc;
    int64_t at = (const uint8_t *)s - c->base;
    sr_dtype d = SR_DTYPE_INVALID;
    for (int i = 1; i < SR_DTYPE_COUNT; i++)
        if (npy_descrs[i] && n == 3 && memcmp(npy_descrs[i] + 1, s + 1, 2) == 0)
            d = (sr_dtype)i;
    if (d == SR_DTYPE_INVALID || !strchr("<>|=", s[0]))
        return sr_err_set_at(c->err, SR_E_NPY_DESCR, at,
                             ".npy descr '%.*s' is not a byte order and a NumPy integer, bool or "
                             "float type (e.g. '<u2', '|u1')",
                             (int)(n < 16 ? n : 16), s);
    if (s[0] == '>' && sr_dtype_size(d) > 1)
        return sr_err_set_at(c->err, SR_E_NPY_BYTE_ORDER, at,
                             ".npy descr '%.3s' is big-endian; the wire is little-endian ('%s')", s,
                             npy_descrs[d]);
    if (s[0] != '<' && sr_dtype_size(d) > 1)
        return sr_err_set_at(c->err, SR_E_NPY_BYTE_ORDER, at,
                             ".npy descr '%.3s' has no little-endian mark ('%s' expected): its "
                             "bytes would be read in the reader's order",
                             s, npy_descrs[d]);
    if (allowed && !(allowed & SR_DTYPE_BIT(d))) {
        char names[128];
        return sr_err_set_at(c->err, SR_E_NPY_DESCR, at, ".npy dtype %s ('%.3s') is not one of %s",
                             sr_dtype_name(d), s, sr_dtype_set_str(allowed, names, sizeof names));
    }
    *out = d;
    return 0;
}

static int read_bool(npy_cur *c, int *out)
{
    skip_ws(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
        *out = 1;
        c->p += 4;
    } else if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
        *out = 0;
        c->p += 5;
    } else {
        return syntax(c, "fortran_order is not True or False");
    }
    return 0;
}

static int read_dim(npy_cur *c, int64_t *out)
{
    const uint8_t *start = c->p;
    uint64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        uint64_t digit = (uint64_t)(*c->p - '0');
        if (v > ((uint64_t)INT64_MAX - digit) / 10)
            return sr_err_set_at(c->err, SR_E_NPY_SHAPE, start - c->base,
                                 ".npy shape has a dimension beyond 2^63 - 1");
        v = v * 10 + digit;
        c->p++;
    }
    if (c->p == start || (*start == '0' && c->p - start > 1))
        return sr_err_set_at(c->err, SR_E_NPY_SHAPE, start - c->base,
                             ".npy shape has a dimension that is not a decimal non-negative "
                             "integer at byte %td",
                             start - c->base);
    *out = (int64_t)v;
    return 0;
}

static int read_shape(npy_cur *c, sr_npy_header *h)
{
    int rc = expect_char(c, '(', "shape is not a tuple");
    if (rc)
        return rc;
    h->ndim = 0;
    int comma = 0;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') {
            c->p++;
            break;
        }
        if (h->ndim == SR_NDIM_MAX)
            return sr_err_set_at(c->err, SR_E_NPY_SHAPE, c->p - c->base,
                                 ".npy shape has more than %d dimensions", SR_NDIM_MAX);
        if (h->ndim > 0 && !comma)
            return syntax(c, "expected ',' or ')' in shape");
        if ((rc = read_dim(c, &h->shape[h->ndim])) != 0)
            return rc;
        h->ndim++;
        skip_ws(c);
        comma = c->p < c->end && *c->p == ',';
        if (comma)
            c->p++;
    }
    /* "(5)" is an int in Python, not a 1-tuple. */
    if (h->ndim == 1 && !comma)
        return syntax(c, "shape (n) is not a tuple; a 1-tuple is written (n,)");
    return 0;
}

enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4 };

static int read_member(npy_cur *c, sr_npy_header *h, unsigned *seen, sr_dtype_set allowed,
                       int *fortran)
{
    const char *k;
    size_t n;
    const uint8_t *kat = c->p;
    int rc = read_string(c, &k, &n);
    if (rc)
        return rc;
    unsigned key = n == 5 && !memcmp(k, "descr", 5)             ? KEY_DESCR
                   : n == 13 && !memcmp(k, "fortran_order", 13) ? KEY_FORTRAN
                   : n == 5 && !memcmp(k, "shape", 5)           ? KEY_SHAPE
                                                                : 0;
    if (!key || (*seen & key)) {
        c->p = kat;
        return syntax(c, key ? "a duplicated key" : "an unknown key");
    }
    *seen |= key;
    if ((rc = expect_char(c, ':', "expected ':' after a key")) != 0)
        return rc;
    if (key == KEY_DESCR)
        return read_descr(c, &h->dtype, allowed);
    if (key == KEY_FORTRAN)
        return read_bool(c, fortran);
    return read_shape(c, h);
}

int sr_npy_parse_header(sr_npy_header *out, const uint8_t *buf, size_t len, sr_dtype_set allowed,
                        int ndim, sr_err *err)
{
    size_t total;
    int rc = sr_npy_header_extent(&total, buf, len, err);
    if (rc)
        return rc;
    if (len < total)
        return sr_err_set_at(err, SR_E_NPY_HEADER, (int64_t)len,
                             "the .npy header needs %zu bytes, the payload has %zu", total, len);
    if (total == SR_NPY_PREFIX_LEN || buf[total - 1] != '\n')
        return sr_err_set_at(err, SR_E_NPY_HEADER, (int64_t)total - 1,
                             "the .npy header is not ended by a newline");
    sr_npy_header h = {.dtype = SR_DTYPE_INVALID, .data_offset = total};
    npy_cur c = {buf + SR_NPY_PREFIX_LEN, buf + total - 1, buf, err};
    unsigned seen = 0;
    int fortran = 0;
    if ((rc = expect_char(&c, '{', "expected '{'")) != 0)
        return rc;
    for (;;) {
        skip_ws(&c);
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        if ((rc = read_member(&c, &h, &seen, allowed, &fortran)) != 0)
            return rc;
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',')
            c.p++;
        else if (c.p >= c.end || *c.p != '}')
            return syntax(&c, "expected ',' or '}'");
    }
    skip_ws(&c);
    if (c.p != c.end)
        return syntax(&c, "text after the dict");
    if (seen != (KEY_DESCR | KEY_FORTRAN | KEY_SHAPE))
        return syntax(&c, "a missing key");
    if (fortran)
        return sr_err_set(err, SR_E_NPY_FORTRAN,
                          ".npy fortran_order is True; routes must be C order");
    if (ndim >= 0 && h.ndim != ndim)
        return sr_err_set(err, SR_E_NPY_SHAPE, ".npy shape has %d dimensions, expected %d", h.ndim,
                          ndim);
    if ((rc = sr_shape_bytes(&h.data_bytes, NULL, h.shape, h.ndim, sr_dtype_size(h.dtype), err)))
        return rc;
    *out = h;
    return 0;
}

int sr_npy_view(sr_ndarray *out, sr_npy_header *hdr, const uint8_t *buf, size_t len,
                sr_dtype_set allowed, int ndim, sr_err *err)
{
    sr_npy_header h;
    int rc = sr_npy_parse_header(&h, buf, len, allowed, ndim, err);
    if (rc)
        return rc;
    if (len - h.data_offset != h.data_bytes) {
        char desc[160];
        return sr_err_set_at(err, SR_E_NPY_BYTE_COUNT, (int64_t)h.data_offset,
                             ".npy data has %zu bytes, expected %zu for %s", len - h.data_offset,
                             h.data_bytes,
                             sr_ndarray_desc(h.dtype, h.ndim, h.shape, desc, sizeof desc));
    }
    out->dtype = h.dtype;
    out->ndim = h.ndim;
    memcpy(out->shape, h.shape, sizeof h.shape);
    out->data = (void *)(buf + h.data_offset);
    out->nbytes = h.data_bytes;
    out->owned = 0;
    if (hdr)
        *hdr = h;
    return 0;
}

int sr_npy_write_header(size_t *written, char *buf, size_t cap, sr_dtype dtype,
                        const int64_t *shape, int ndim, sr_err *err)
{
    const char *descr = sr_npy_descr(dtype);
    if (!descr || ndim < 0 || ndim > SR_NDIM_MAX)
        return sr_err_set(err, SR_E_INVAL, "no .npy header for dtype %s with %d dimensions",
                          sr_dtype_name(dtype), ndim);
    char text[SR_NPY_HEADER_MAX];
    int n =
        snprintf(text, sizeof text, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    int first_len = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return sr_err_set(err, SR_E_INVAL, "negative dimension %" PRId64, shape[i]);
        int m =
            snprintf(text + n, sizeof text - (size_t)n, i ? ", %" PRId64 : "%" PRId64, shape[i]);
        if (i == 0)
            first_len = m;
        n += m;
    }
    n += snprintf(text + n, sizeof text - (size_t)n, "%s), }", ndim == 1 ? "," : "");
    /* np.save's growth room: 21 - len(repr(shape[0])) spaces, none for a 0-d array. */
    int growth = ndim > 0 ? 21 - first_len : 0;
    size_t hlen = (size_t)n + (size_t)growth + 1;
    size_t pad = SR_NPY_ALIGN - (SR_NPY_PREFIX_LEN + hlen) % SR_NPY_ALIGN;
    size_t total = SR_NPY_PREFIX_LEN + hlen + pad;
    if (total > cap)
        return sr_err_set(err, SR_E_LIMIT, ".npy header needs %zu bytes, buffer has %zu", total,
                          cap);
    memcpy(buf, npy_magic, sizeof npy_magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)((total - SR_NPY_PREFIX_LEN) & 0xff);
    buf[9] = (char)((total - SR_NPY_PREFIX_LEN) >> 8);
    memcpy(buf + SR_NPY_PREFIX_LEN, text, (size_t)n);
    memset(buf + SR_NPY_PREFIX_LEN + n, ' ', total - SR_NPY_PREFIX_LEN - (size_t)n - 1);
    buf[total - 1] = '\n';
    *written = total;
    return 0;
}
