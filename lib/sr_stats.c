#include "sr_stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double sr_half_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)man, -24); /* subnormal (or zero) */
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp((double)(man | 0x400), exp - 25);
    return sign ? -v : v;
}

/* The element i of a float array as a double. */
static double float_at(const sr_ndarray *a, uint64_t i)
{
    const unsigned char *p = (const unsigned char *)a->data;
    if (a->dtype == SR_DTYPE_FLOAT16) {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        return sr_half_to_double(h);
    }
    if (a->dtype == SR_DTYPE_FLOAT32) {
        float f;
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    double d;
    memcpy(&d, p + i * 8, 8);
    return d;
}

static void float_stats(sr_array_stats *st, const sr_ndarray *a)
{
    st->kind = SR_STATS_FLOAT;
    for (uint64_t i = 0; i < st->count; i++) {
        double v = float_at(a, i);
        if (isnan(v)) {
            st->nan++;
        } else if (isinf(v)) {
            if (v > 0)
                st->posinf++;
            else
                st->neginf++;
        } else {
            if (!st->finite || v < st->fmin)
                st->fmin = v;
            if (!st->finite || v > st->fmax)
                st->fmax = v;
            st->finite++;
        }
    }
    st->has_range = st->finite > 0;
}

/* Element i of an integer or bool array: signed dtypes into *s, unsigned ones into *u (exact;
 * sr_ndarray_get_i64 saturates only uint64). */
static void int_at(const sr_ndarray *a, uint64_t i, int64_t *s, uint64_t *u)
{
    if (a->dtype == SR_DTYPE_UINT64) {
        memcpy(u, (const unsigned char *)a->data + i * 8, 8);
        return;
    }
    int64_t v = sr_ndarray_get_i64(a, i);
    if (sr_dtype_is_signed(a->dtype))
        *s = v;
    else
        *u = (uint64_t)v;
}

void sr_array_stats_compute(sr_array_stats *st, const sr_ndarray *a)
{
    memset(st, 0, sizeof(*st));
    if (a->dtype == SR_DTYPE_INVALID || a->dtype >= SR_DTYPE_COUNT)
        return;
    st->count = sr_ndarray_numel(a);
    if (sr_dtype_is_float(a->dtype)) {
        float_stats(st, a);
        return;
    }
    st->kind = sr_dtype_is_signed(a->dtype) ? SR_STATS_SIGNED : SR_STATS_UNSIGNED;
    st->has_range = st->count > 0;
    for (uint64_t i = 0; i < st->count; i++) {
        int64_t s = 0;
        uint64_t u = 0;
        int_at(a, i, &s, &u);
        if (a->dtype == SR_DTYPE_BOOL) {
            st->noncanonical_bool += u > 1;
            u = u != 0;
        }
        if (st->kind == SR_STATS_SIGNED) {
            st->imin = i == 0 || s < st->imin ? s : st->imin;
            st->imax = i == 0 || s > st->imax ? s : st->imax;
        } else {
            st->umin = i == 0 || u < st->umin ? u : st->umin;
            st->umax = i == 0 || u > st->umax ? u : st->umax;
        }
    }
}

const char *sr_stats_int_text(const sr_array_stats *st, int want_max, char *buf, size_t cap)
{
    if (!cap)
        return buf;
    buf[0] = '\0';
    if (!st->has_range)
        return buf;
    if (st->kind == SR_STATS_SIGNED)
        snprintf(buf, cap, "%lld", (long long)(want_max ? st->imax : st->imin));
    else if (st->kind == SR_STATS_UNSIGNED)
        snprintf(buf, cap, "%llu", (unsigned long long)(want_max ? st->umax : st->umin));
    return buf;
}
