/* sr_safetensors: the dtype table and the strict header parser (sr_safetensors.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sr_jdom.h"
#include "sr_safetensors.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[SR_ST_DTYPE_COUNT] = {
    [SR_ST_INVALID] = {"invalid", 0}, [SR_ST_BOOL] = {"BOOL", 1},
    [SR_ST_U8] = {"U8", 1},           [SR_ST_I8] = {"I8", 1},
    [SR_ST_F8_E5M2] = {"F8_E5M2", 1}, [SR_ST_F8_E4M3] = {"F8_E4M3", 1},
    [SR_ST_I16] = {"I16", 2},         [SR_ST_U16] = {"U16", 2},
    [SR_ST_F16] = {"F16", 2},         [SR_ST_BF16] = {"BF16", 2},
    [SR_ST_I32] = {"I32", 4},         [SR_ST_U32] = {"U32", 4},
    [SR_ST_F32] = {"F32", 4},         [SR_ST_F64] = {"F64", 8},
    [SR_ST_I64] = {"I64", 8},         [SR_ST_U64] = {"U64", 8},
};

const char *sr_st_dtype_name(sr_st_dtype d)
{
    return d > SR_ST_INVALID && d < SR_ST_DTYPE_COUNT ? dtypes[d].name : "invalid";
}

size_t sr_st_dtype_size(sr_st_dtype d)
{
    return d > SR_ST_INVALID && d < SR_ST_DTYPE_COUNT ? dtypes[d].size : 0;
}

sr_st_dtype sr_st_dtype_of(sr_dtype d)
{
    switch (d) {
    case SR_DTYPE_BOOL:
        return SR_ST_BOOL;
    case SR_DTYPE_INT8:
        return SR_ST_I8;
    case SR_DTYPE_UINT8:
        return SR_ST_U8;
    case SR_DTYPE_INT16:
        return SR_ST_I16;
    case SR_DTYPE_UINT16:
        return SR_ST_U16;
    case SR_DTYPE_INT32:
        return SR_ST_I32;
    case SR_DTYPE_UINT32:
        return SR_ST_U32;
    case SR_DTYPE_INT64:
        return SR_ST_I64;
    case SR_DTYPE_UINT64:
        return SR_ST_U64;
    case SR_DTYPE_FLOAT16:
        return SR_ST_F16;
    case SR_DTYPE_FLOAT32:
        return SR_ST_F32;
    case SR_DTYPE_FLOAT64:
        return SR_ST_F64;
    default:
        return SR_ST_INVALID;
    }
}

static sr_st_dtype dtype_from_name(const char *s)
{
    for (int d = SR_ST_INVALID + 1; d < SR_ST_DTYPE_COUNT; d++)
        if (!strcmp(s, dtypes[d].name))
            return (sr_st_dtype)d;
    return SR_ST_INVALID;
}

void sr_st_header_free(sr_st_header *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n_tensors; i++)
        free((char *)h->tensors[i].name);
    for (size_t i = 0; i < h->n_meta; i++) {
        free((char *)h->meta[i].key);
        free((char *)h->meta[i].value);
    }
    free(h->tensors);
    free(h->meta);
    free(h);
}

int sr_st_header_len(uint64_t *n, const unsigned char *buf, size_t len, uint64_t file_len,
                     sr_err *err)
{
    *n = 0;
    if (len < 8 || file_len < 8)
        return sr_err_set(err, SR_E_ST_TRUNCATED,
                          "safetensors: %llu bytes, fewer than the 8-byte header length",
                          (unsigned long long)(len < file_len ? len : file_len));
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | buf[i];
    if (v > SR_ST_HEADER_MAX)
        return sr_err_set(err, SR_E_ST_HEADER_TOO_LARGE,
                          "safetensors: header length %llu is above the cap of %llu bytes",
                          (unsigned long long)v, (unsigned long long)SR_ST_HEADER_MAX);
    if (v > file_len - 8)
        return sr_err_set(err, SR_E_ST_HEADER_LENGTH,
                          "safetensors: header length %llu runs past the end of the %llu-byte file",
                          (unsigned long long)v, (unsigned long long)file_len);
    *n = v;
    return 0;
}

/* A JSON integer as the format needs it: a plain literal, >= 0, below 2^53 (so exact). */
static int get_uint(const cJSON *it, uint64_t *out)
{
    if (!cJSON_IsNumber(it) || (it->type & SR_JDOM_NOT_INT))
        return -1;
    double v = it->valuedouble;
    if (!(v >= 0) || signbit(v) || v >= 0x1p53 || v != floor(v))
        return -1;
    *out = (uint64_t)v;
    return 0;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static int parse_meta(sr_st_header *h, const cJSON *m, sr_err *err)
{
    if (!cJSON_IsObject(m))
        return sr_err_set(err, SR_E_ST_METADATA, "safetensors: __metadata__ is not an object");
    int n = cJSON_GetArraySize(m);
    h->meta = calloc(n > 0 ? (size_t)n : 1, sizeof(*h->meta));
    if (!h->meta)
        return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for the metadata");
    const cJSON *kv;
    cJSON_ArrayForEach(kv, m)
    {
        if (!cJSON_IsString(kv) || (kv->type & SR_JDOM_HAS_NUL))
            return sr_err_set(err, SR_E_ST_METADATA,
                              "safetensors: __metadata__ member '%.200s' is not a string (without "
                              "NUL)",
                              kv->string);
        sr_st_meta *e = &h->meta[h->n_meta];
        e->key = dup_str(kv->string);
        e->value = dup_str(kv->valuestring);
        h->n_meta++;
        if (!e->key || !e->value)
            return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for the metadata");
    }
    return 0;
}

static int bad_entry(sr_err *err, const char *name, const char *what)
{
    return sr_err_set(err, SR_E_ST_TENSOR, "safetensors: tensor '%.200s': %s", name, what);
}

/* The shape and byte count of one entry; prod(shape) * itemsize into *bytes. */
static int parse_shape(sr_st_tensor *t, const cJSON *shape, uint64_t *bytes, sr_err *err)
{
    if (!cJSON_IsArray(shape))
        return bad_entry(err, t->name, "shape is not an array");
    int nd = cJSON_GetArraySize(shape);
    if (nd > SR_ST_NDIM_MAX)
        return sr_err_set(err, SR_E_ST_TENSOR, "safetensors: tensor '%.200s' has %d dims (most %d)",
                          t->name, nd, SR_ST_NDIM_MAX);
    uint64_t prod = sr_st_dtype_size(t->dtype);
    int overflow = 0;
    const cJSON *d;
    t->ndim = 0;
    cJSON_ArrayForEach(d, shape)
    {
        uint64_t v;
        if (get_uint(d, &v))
            return bad_entry(err, t->name, "a dim is not an integer in [0, 2^53)");
        t->shape[t->ndim++] = (int64_t)v;
        if (v && prod > UINT64_MAX / v)
            overflow = 1;
        prod *= v;
    }
    /* a 0 dim after an overflowing prefix still makes an empty tensor: check overflow after */
    int empty = 0;
    for (int i = 0; i < t->ndim; i++)
        empty |= t->shape[i] == 0;
    if (overflow && !empty)
        return sr_err_set(err, SR_E_ST_SHAPE_OVERFLOW,
                          "safetensors: tensor '%.200s': prod(shape) * %zu overflows 64 bits",
                          t->name, sr_st_dtype_size(t->dtype));
    *bytes = empty ? 0 : prod;
    return 0;
}

static int parse_entry(sr_st_tensor *t, const cJSON *e, sr_err *err)
{
    if (!cJSON_IsObject(e))
        return bad_entry(err, t->name, "the entry is not an object");
    const cJSON *dt = NULL, *shape = NULL, *off = NULL, *kv;
    cJSON_ArrayForEach(kv, e)
    {
        if (!strcmp(kv->string, "dtype"))
            dt = kv;
        else if (!strcmp(kv->string, "shape"))
            shape = kv;
        else if (!strcmp(kv->string, "data_offsets"))
            off = kv;
        else
            return sr_err_set(err, SR_E_ST_TENSOR,
                              "safetensors: tensor '%.200s': unknown key "
                              "'%.100s' (only dtype, shape, data_offsets)",
                              t->name, kv->string);
    }
    if (!dt || !shape || !off)
        return bad_entry(err, t->name, "dtype, shape and data_offsets are all required");
    if (!cJSON_IsString(dt))
        return bad_entry(err, t->name, "dtype is not a string");
    t->dtype = (dt->type & SR_JDOM_HAS_NUL) ? SR_ST_INVALID : dtype_from_name(dt->valuestring);
    if (t->dtype == SR_ST_INVALID)
        return sr_err_set(err, SR_E_ST_DTYPE, "safetensors: tensor '%.200s': unknown dtype '%.40s'",
                          t->name, dt->valuestring);
    uint64_t bytes = 0;
    int rc = parse_shape(t, shape, &bytes, err);
    if (rc)
        return rc;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || get_uint(off->child, &t->begin) ||
        get_uint(off->child->next, &t->end))
        return bad_entry(err, t->name, "data_offsets is not two integers in [0, 2^53)");
    if (t->begin > t->end || t->end - t->begin != bytes)
        return sr_err_set(err, SR_E_ST_BYTE_COUNT,
                          "safetensors: tensor '%.200s': data_offsets [%llu, %llu] hold %s bytes, "
                          "prod(shape) * itemsize is %llu",
                          t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
                          t->begin > t->end ? "a negative number of" : "another number of",
                          (unsigned long long)bytes);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const sr_st_tensor *)a)->name, ((const sr_st_tensor *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const sr_st_tensor *x = *(const sr_st_tensor *const *)a, *y = *(const sr_st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Tensors back to back from 0, covering the buffer exactly. */
static int check_layout(const sr_st_header *h, sr_err *err)
{
    const sr_st_tensor **o = malloc((h->n_tensors ? h->n_tensors : 1) * sizeof(*o));
    if (!o)
        return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for the offset check");
    for (size_t i = 0; i < h->n_tensors; i++)
        o[i] = &h->tensors[i];
    qsort(o, h->n_tensors, sizeof(*o), by_offset);
    uint64_t at = 0;
    int rc = 0;
    for (size_t i = 0; i < h->n_tensors && !rc; i++) {
        if (o[i]->begin != at)
            rc = sr_err_set(err, SR_E_ST_OFFSETS,
                            "safetensors: tensor '%.200s' starts at %llu, but the bytes before it "
                            "end at %llu (%s)",
                            o[i]->name, (unsigned long long)o[i]->begin, (unsigned long long)at,
                            o[i]->begin > at ? "a gap" : "an overlap");
        at = o[i]->end;
    }
    free(o);
    if (!rc && at != h->buffer_len)
        rc = sr_err_set(err, SR_E_ST_BUFFER,
                        "safetensors: the tensors cover %llu bytes, the byte buffer holds %llu",
                        (unsigned long long)at, (unsigned long long)h->buffer_len);
    return rc;
}

static int parse_root(sr_st_header *h, const cJSON *root, sr_err *err)
{
    if (!cJSON_IsObject(root))
        return sr_err_set(err, SR_E_ST_HEADER_JSON, "safetensors: the header is not a JSON object");
    size_t n = 0;
    const cJSON *kv;
    cJSON_ArrayForEach(kv, root) n += strcmp(kv->string, "__metadata__") != 0;
    h->tensors = calloc(n ? n : 1, sizeof(*h->tensors));
    if (!h->tensors)
        return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for %zu tensors", n);
    cJSON_ArrayForEach(kv, root)
    {
        int rc;
        if (!strcmp(kv->string, "__metadata__")) {
            if ((rc = parse_meta(h, kv, err)))
                return rc;
            continue;
        }
        size_t len = strlen(kv->string);
        if (!len || len > SR_ST_NAME_MAX || (kv->type & SR_JDOM_HAS_NUL))
            return sr_err_set(err, SR_E_ST_NAME,
                              "safetensors: tensor name '%.200s' is empty, longer than %d bytes "
                              "or holds a NUL",
                              kv->string, SR_ST_NAME_MAX);
        sr_st_tensor *t = &h->tensors[h->n_tensors];
        t->name = dup_str(kv->string);
        if (!t->name)
            return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for a name");
        h->n_tensors++;
        if ((rc = parse_entry(t, kv, err)))
            return rc;
    }
    qsort(h->tensors, h->n_tensors, sizeof(*h->tensors), by_name);
    return check_layout(h, err);
}

/* Parses the NUL-terminated header text; jdom's errors become the format's. */
static int parse_text(sr_st_header *h, const char *text, size_t n, sr_err *err)
{
    sr_jdom *j = NULL;
    cJSON *root = NULL;
    int rc = sr_jdom_new(&j, 0, err);
    if (!rc) {
        sr_jdom_set_flags(j, SR_JDOM_REFERENCE);
        rc = sr_jdom_parse(j, text, n, &root, err);
        if (rc && err && err->offset >= 0)
            err->offset += 8;
        if (rc == SR_E_JSON_DUPLICATE_KEY) {
            rc = SR_E_ST_DUPLICATE;
            if (err)
                err->code = rc;
        } else if (rc && rc != SR_E_NOMEM && rc != SR_E_LIMIT) {
            rc = SR_E_ST_HEADER_JSON;
            if (err)
                err->code = rc;
        }
        if (rc)
            sr_err_prefix(err, "safetensors header: ");
    }
    if (!rc)
        rc = parse_root(h, root, err);
    sr_jdom_free(j);
    return rc;
}

int sr_st_parse_header(sr_st_header **out, const unsigned char *buf, size_t len, uint64_t file_len,
                       sr_err *err)
{
    *out = NULL;
    uint64_t n;
    int rc = sr_st_header_len(&n, buf, len, file_len, err);
    if (rc)
        return rc;
    if (len - 8 < n)
        return sr_err_set(err, SR_E_INVAL, "safetensors: %zu bytes given, the header needs %llu",
                          len, (unsigned long long)(8 + n));
    if (n == 0 || buf[8] != '{') {
        rc = sr_err_set(err, SR_E_ST_HEADER_START,
                        "safetensors: the header does not start with '{'");
        if (err)
            err->offset = 8;
        return rc;
    }
    sr_st_header *h = calloc(1, sizeof(*h));
    char *text = malloc((size_t)n + 1);
    if (!h || !text) {
        free(h);
        free(text);
        return sr_err_set(err, SR_E_NOMEM, "safetensors: no memory for a %llu-byte header",
                          (unsigned long long)n);
    }
    memcpy(text, buf + 8, (size_t)n);
    text[n] = '\0';
    h->header_len = n;
    h->data_start = 8 + n;
    h->buffer_len = file_len - 8 - n;
    rc = parse_text(h, text, (size_t)n, err);
    free(text);
    if (rc) {
        sr_st_header_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

int64_t sr_st_header_find(const sr_st_header *h, const char *name)
{
    size_t lo = 0, hi = h->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(h->tensors[mid].name, name);
        if (!c)
            return (int64_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}
