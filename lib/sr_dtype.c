#include "sr_dtype.h"

#include <stdio.h>
#include <string.h>

typedef struct dtype_info {
    const char *name;
    size_t size;
    unsigned char is_int, is_signed, is_float;
} dtype_info;

static const dtype_info k_info[SR_DTYPE_COUNT] = {
    [SR_DTYPE_INVALID] = {"invalid", 0, 0, 0, 0}, [SR_DTYPE_BOOL] = {"bool", 1, 0, 0, 0},
    [SR_DTYPE_INT8] = {"int8", 1, 1, 1, 0},       [SR_DTYPE_UINT8] = {"uint8", 1, 1, 0, 0},
    [SR_DTYPE_INT16] = {"int16", 2, 1, 1, 0},     [SR_DTYPE_UINT16] = {"uint16", 2, 1, 0, 0},
    [SR_DTYPE_INT32] = {"int32", 4, 1, 1, 0},     [SR_DTYPE_UINT32] = {"uint32", 4, 1, 0, 0},
    [SR_DTYPE_INT64] = {"int64", 8, 1, 1, 0},     [SR_DTYPE_UINT64] = {"uint64", 8, 1, 0, 0},
    [SR_DTYPE_FLOAT16] = {"float16", 2, 0, 1, 1}, [SR_DTYPE_FLOAT32] = {"float32", 4, 0, 1, 1},
    [SR_DTYPE_FLOAT64] = {"float64", 8, 0, 1, 1},
};

static int valid(sr_dtype d)
{
    return d > SR_DTYPE_INVALID && d < SR_DTYPE_COUNT;
}

const char *sr_dtype_name(sr_dtype d)
{
    return valid(d) ? k_info[d].name : "invalid";
}

int sr_dtype_from_name(sr_dtype *out, const char *name, size_t len, sr_err *err)
{
    for (int d = SR_DTYPE_INVALID + 1; d < SR_DTYPE_COUNT; d++) {
        const char *n = k_info[d].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) {
            *out = (sr_dtype)d;
            return 0;
        }
    }
    *out = SR_DTYPE_INVALID;
    return sr_err_set(err, SR_E_DTYPE_UNKNOWN, "unknown dtype name '%.*s'",
                      (int)(len > 64 ? 64 : len), name);
}

size_t sr_dtype_size(sr_dtype d)
{
    return valid(d) ? k_info[d].size : 0;
}

int sr_dtype_is_integer(sr_dtype d)
{
    return valid(d) && k_info[d].is_int;
}

int sr_dtype_is_signed(sr_dtype d)
{
    return valid(d) && k_info[d].is_signed;
}

int sr_dtype_is_float(sr_dtype d)
{
    return valid(d) && k_info[d].is_float;
}

const char *sr_dtype_set_str(sr_dtype_set set, char *buf, size_t cap)
{
    const char *names[SR_DTYPE_COUNT];
    int n = 0;
    for (int d = SR_DTYPE_INVALID + 1; d < SR_DTYPE_COUNT; d++) {
        if (set & SR_DTYPE_BIT(d))
            names[n++] = k_info[d].name;
    }
    /* Insertion sort by strcmp, which matches Python's sorted() on ASCII names. */
    for (int i = 1; i < n; i++) {
        const char *v = names[i];
        int j = i - 1;
        while (j >= 0 && strcmp(names[j], v) > 0) {
            names[j + 1] = names[j];
            j--;
        }
        names[j + 1] = v;
    }
    size_t used = 0;
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf + used, cap - used, "[");
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s'%s'", i ? ", " : "", names[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}
