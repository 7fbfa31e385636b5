/* sr_nrlre: the prefix of NeMo-RL's "nrlre1:" routes string (see sr_nrlre.h). */
#include "sr_nrlre.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sr_ndarray.h"

static const char nrlre_magic[] = "nrlre1:";

/* The index of the next ':' in s[from, limit), or -1. */
static int64_t find_colon(const char *s, size_t from, size_t limit)
{
    const char *c = from < limit ? memchr(s + from, ':', limit - from) : NULL;
    return c ? c - s : -1;
}

static int parse_dims(sr_nrlre_header *h, const char *s, size_t from, size_t to, sr_err *err)
{
    int k = 0;
    size_t i = from;
    for (;;) {
        size_t start = i;
        uint64_t v = 0;
        while (i < to && s[i] >= '0' && s[i] <= '9') {
            uint64_t digit = (uint64_t)(s[i] - '0');
            if (v > ((uint64_t)INT64_MAX - digit) / 10)
                return sr_err_set_at(err, SR_E_NRLRE_SHAPE, (int64_t)start,
                                     "nrlre1 shape dimension %d is beyond 2^63 - 1", k);
            v = v * 10 + digit;
            i++;
        }
        if (i == start || (s[start] == '0' && i - start > 1))
            return sr_err_set_at(err, SR_E_NRLRE_SHAPE, (int64_t)start,
                                 "nrlre1 shape '%.*s' is not <S>x<L>x<K> in plain decimal",
                                 (int)(to - from > 64 ? 64 : to - from), s + from);
        h->shape[k++] = (int64_t)v;
        if (k == 3 && i == to)
            return 0;
        if (k == 3 || i == to || s[i] != 'x')
            return sr_err_set_at(err, SR_E_NRLRE_SHAPE, (int64_t)i,
                                 "nrlre1 shape '%.*s' is not <S>x<L>x<K> in plain decimal",
                                 (int)(to - from > 64 ? 64 : to - from), s + from);
        i++;
    }
}

int sr_nrlre_parse_prefix(sr_nrlre_header *out, const char *s, size_t n, sr_err *err)
{
    size_t m = sizeof nrlre_magic - 1;
    if (memcmp(s, nrlre_magic, n < m ? n : m) != 0 || n < m)
        return sr_err_set_at(err, SR_E_NRLRE_SYNTAX, 0,
                             "the routes string does not start with \"nrlre1:\"");
    size_t limit = n < SR_NRLRE_PREFIX_MAX ? n : SR_NRLRE_PREFIX_MAX;
    int64_t c1 = find_colon(s, m, limit);
    int64_t c2 = c1 < 0 ? -1 : find_colon(s, (size_t)c1 + 1, limit);
    if (c2 < 0)
        return sr_err_set_at(err, SR_E_NRLRE_SYNTAX, (int64_t)limit,
                             "the nrlre1 string has no '<dtype>:<SxLxK>:' within its first %zu "
                             "bytes",
                             limit);
    sr_nrlre_header h = {.dtype = SR_DTYPE_INVALID};
    const char *name = s + m;
    size_t len = (size_t)c1 - m;
    sr_dtype d;
    if (sr_dtype_from_name(&d, name, len, NULL) != 0 || !(SR_NRLRE_DTYPES & SR_DTYPE_BIT(d)))
        return sr_err_set_at(err, SR_E_NRLRE_DTYPE, (int64_t)m,
                             "nrlre1 dtype '%.*s' is not one of int8, int16, int32",
                             (int)(len > 32 ? 32 : len), name);
    h.dtype = d;
    int rc = parse_dims(&h, s, (size_t)c1 + 1, (size_t)c2, err);
    if (rc)
        return rc;
    if ((rc = sr_shape_bytes(&h.data_bytes, NULL, h.shape, 3, sr_dtype_size(d), err)) != 0)
        return rc;
    h.data_offset = (size_t)c2 + 1;
    *out = h;
    return 0;
}

int sr_nrlre_write_prefix(size_t *written, char *buf, size_t cap, sr_dtype dtype,
                          const int64_t shape[3], sr_err *err)
{
    if ((int)dtype <= SR_DTYPE_INVALID || dtype >= SR_DTYPE_COUNT ||
        !(SR_NRLRE_DTYPES & SR_DTYPE_BIT(dtype)) || shape[0] < 0 || shape[1] < 0 || shape[2] < 0)
        return sr_err_set(err, SR_E_INVAL, "no nrlre1 prefix for %s routes of a negative shape",
                          sr_dtype_name(dtype));
    char tmp[SR_NRLRE_PREFIX_MAX + 8];
    int n = snprintf(tmp, sizeof tmp, "nrlre1:%s:%" PRId64 "x%" PRId64 "x%" PRId64 ":",
                     sr_dtype_name(dtype), shape[0], shape[1], shape[2]);
    if (n < 0 || (size_t)n > cap)
        return sr_err_set(err, SR_E_LIMIT, "nrlre1 prefix needs %d bytes, buffer has %zu", n, cap);
    memcpy(buf, tmp, (size_t)n);
    *written = (size_t)n;
    return 0;
}
