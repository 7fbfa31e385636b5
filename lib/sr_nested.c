#include "sr_nested.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sr_jdom.h"

/* "[i0][i1]..." of the first `depth` indices into buf. */
static const char *index_path(char *buf, size_t cap, const int64_t *idx, int depth)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < depth && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "[%lld]", (long long)idx[d]);
    return buf;
}

int sr_nested_shape(int64_t *shape, size_t *count, const cJSON *node, int ndim, sr_err *err)
{
    if (ndim < 1 || ndim > SR_NDIM_MAX)
        return sr_err_set(err, SR_E_INVAL, "nested: ndim %d is not 1 to %d", ndim, SR_NDIM_MAX);
    /* The first list at every level gives the shape; the fill checks that the others agree. */
    const cJSON *n = node;
    size_t total = 1;
    for (int d = 0; d < ndim; d++) {
        if (!n) {
            shape[d] = 0;
            continue;
        }
        if (!cJSON_IsArray(n))
            return sr_err_set(err, SR_E_NESTED_SHAPE,
                              "nested routes: expected a list at depth %d, found %s", d,
                              cJSON_IsNumber(n) ? "a number" : "another value");
        int64_t len = cJSON_GetArraySize(n);
        shape[d] = len;
        if (len && total > SIZE_MAX / 8 / (size_t)len)
            return sr_err_set(err, SR_E_ENV_OVERFLOW,
                              "nested routes: the element count overflows");
        total *= (size_t)len;
        n = n->child;
    }
    if (n && cJSON_IsArray(n))
        return sr_err_set(err, SR_E_NESTED_SHAPE,
                          "nested routes: lists nest deeper than the %d levels expected", ndim);
    *count = total;
    return 0;
}

sr_dtype sr_nested_dtype(int64_t min, int64_t max)
{
    return min >= INT32_MIN && max <= INT32_MAX ? SR_DTYPE_INT32 : SR_DTYPE_INT64;
}

typedef struct fill_ctx {
    unsigned char *dst;
    size_t at, width;
    int ndim;
    const int64_t *shape;
    int64_t min, max;
    int64_t idx[SR_NDIM_MAX];
} fill_ctx;

static int leaf(fill_ctx *f, const cJSON *v, int depth, sr_err *err)
{
    char p[SR_NDIM_MAX * 22 + 1];
    if (cJSON_IsArray(v))
        return sr_err_set(err, SR_E_NESTED_SHAPE, "nested routes%s: a list where an integer is due",
                          index_path(p, sizeof p, f->idx, depth));
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || (v->type & SR_JDOM_NOT_INT) || x != floor(x) ||
        !(x > -9007199254740992.0 && x < 9007199254740992.0) || (int64_t)x < f->min ||
        (int64_t)x > f->max)
        return sr_err_set(err, SR_E_NESTED_VALUE,
                          "nested routes%s: not an integer literal in [%lld, %lld]",
                          index_path(p, sizeof p, f->idx, depth), (long long)f->min,
                          (long long)f->max);
    int64_t y = (int64_t)x;
    if (f->width == 4) {
        int32_t z = (int32_t)y;
        memcpy(f->dst + f->at, &z, 4);
    } else {
        memcpy(f->dst + f->at, &y, 8);
    }
    f->at += f->width;
    return 0;
}

static int fill(fill_ctx *f, const cJSON *n, int depth, sr_err *err)
{
    char p[SR_NDIM_MAX * 22 + 1];
    if (depth == f->ndim)
        return leaf(f, n, depth, err);
    if (!cJSON_IsArray(n) || cJSON_GetArraySize(n) != f->shape[depth])
        return sr_err_set(err, SR_E_NESTED_SHAPE,
                          "nested routes%s: expected a list of %lld, found %s",
                          index_path(p, sizeof p, f->idx, depth), (long long)f->shape[depth],
                          cJSON_IsArray(n) ? "a list of another length" : "no list");
    int64_t i = 0;
    for (const cJSON *c = n->child; c; c = c->next, i++) {
        f->idx[depth] = i;
        int rc = fill(f, c, depth + 1, err);
        if (rc)
            return rc;
    }
    return 0;
}

int sr_nested_fill(void *dst, const cJSON *node, int ndim, const int64_t *shape, int64_t min,
                   int64_t max, sr_err *err)
{
    fill_ctx f = {dst, 0, sr_dtype_size(sr_nested_dtype(min, max)), ndim, shape, min, max, {0}};
    if (ndim < 1 || ndim > SR_NDIM_MAX)
        return sr_err_set(err, SR_E_INVAL, "nested: ndim %d is not 1 to %d", ndim, SR_NDIM_MAX);
    return fill(&f, node, 0, err);
}
