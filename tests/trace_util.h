/*
 * Shared by the trace suites (unit.trace, unit.route_trace): owned test arrays built from an
 * element function.
 */
#ifndef SR_TRACE_UTIL_H
#define SR_TRACE_UTIL_H

#include <stdint.h>

#include "sr_test.h"
#include "sr_trace.h"

/* An owned array of `dtype` and `shape` with element i = f(i). */
static sr_ndarray make(sr_dtype dtype, int ndim, const int64_t *shape, int64_t (*f)(uint64_t))
{
    sr_ndarray a;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(&a, dtype, ndim, shape, &err), err);
    uint64_t n = sr_ndarray_numel(&a);
    for (uint64_t i = 0; i < n && f; i++)
        sr_ndarray_set_i64(&a, i, f(i));
    return a;
}

static int64_t iota(uint64_t i)
{
    return (int64_t)i;
}

#endif /* SR_TRACE_UTIL_H */
