/*
 * A route rule's action on a decoded route array (spec/fault_grammar.h, sr_route_rule_apply):
 * the one place both the engine (engine/gen_rules.c, on the rows it computed) and the proxy
 * (proxy/proxy_routes.c, on the rows a real engine answered) act on a rule, so the two cannot
 * drift apart.
 */
#include <stdlib.h>
#include <string.h>

#include "fault_grammar.h"
#include "sr_ndarray.h"

/* Element i of the block's data as int64 (integer route dtypes only). */
static void set_el(const sr_route_block *b, size_t i, int64_t v)
{
    size_t n = (size_t)(b->hi - b->lo) * b->L * b->K;
    sr_ndarray a = {b->dtype, 1, {(int64_t)n}, b->data, n * sr_dtype_size(b->dtype), 0};
    sr_ndarray_set_i64(&a, i, v);
}

/* The selected layers of the row at position p get the action; `src` holds the rows the action
 * copies from (the rows as they were, for shift; other weights' rows for stale and
 * weight_version), or NULL. */
static void act_on_row(const sr_route_block *b, const sr_route_rule *r, const unsigned char *src,
                       int64_t p, size_t rb)
{
    size_t es = sr_dtype_size(b->dtype), L = b->L, K = b->K;
    unsigned char *row = b->data + (size_t)(p - b->lo) * rb;
    const unsigned char *from = NULL;
    if (r->act == SR_RA_REPEAT_PREVIOUS && p - 1 >= b->lo)
        from = row - rb;
    else if (r->act == SR_RA_SHIFT && src && p - r->k >= b->lo && p - r->k < b->hi)
        from = src + (size_t)(p - r->k - b->lo) * rb;
    else if ((r->act == SR_RA_STALE || r->act == SR_RA_WEIGHT_VERSION) && src)
        from = src + (size_t)(p - b->lo) * rb;
    if (r->act == SR_RA_SWAP_LAYERS) {
        size_t x = (size_t)r->swap[0], y = (size_t)r->swap[1];
        unsigned char tmp[4 * 64];
        if (x >= L || y >= L || K * es > sizeof(tmp))
            return;
        memcpy(tmp, row + x * K * es, K * es);
        memcpy(row + x * K * es, row + y * K * es, K * es);
        memcpy(row + y * K * es, tmp, K * es);
        return;
    }
    for (size_t l = 0; l < L; l++) {
        if (!sr_route_rule_covers(r, p, b->P, b->start, (int64_t)l))
            continue;
        if (from)
            memcpy(row + l * K * es, from + l * K * es, K * es);
        else if (r->act == SR_RA_ZERO || r->act == SR_RA_CONSTANT)
            for (size_t k = 0; k < K; k++)
                set_el(b, (size_t)(p - b->lo) * L * K + l * K + k,
                       r->act == SR_RA_ZERO ? 0 : r->value);
    }
}

/* The whole-array actions that change the row count; 1 when r is one of them. */
static int act_on_rows(sr_route_block *b, const sr_route_rule *r, size_t rb)
{
    int64_t rows = b->hi - b->lo;
    switch (r->act) {
    case SR_RA_DROP_LAST:
        b->hi -= rows > 0;
        return 1;
    case SR_RA_DROP_FIRST:
        if (rows > 0) {
            memmove(b->data, b->data + rb, (size_t)(rows - 1) * rb);
            b->hi--;
        }
        return 1;
    case SR_RA_TRUNCATE: {
        /* Rows for the first `tokens` generated tokens: positions up to P + tokens - 1. */
        int64_t hi = b->P + r->tokens - 1;
        if (hi < b->lo)
            hi = b->lo;
        if (hi < b->hi)
            b->hi = hi;
        return 1;
    }
    default:
        return 0;
    }
}

int sr_route_rule_apply(sr_route_block *b, const sr_route_rule *r, const unsigned char *src,
                        sr_err *err)
{
    size_t rb = b->L * b->K * sr_dtype_size(b->dtype);
    if (r->field != SR_RF_ROUTED_EXPERTS || r->act == SR_RA_NULL || r->act == SR_RA_APPEND_LAST ||
        r->act == SR_RA_MARK_PARTIAL || (r->act == SR_RA_TRUNCATE && r->partial))
        return sr_err_set(err, SR_E_INTERNAL,
                          "route action %s%s is not one sr_route_rule_apply takes (the caller's)",
                          sr_route_action_name(r->act), r->partial ? " with partial" : "");
    if (act_on_rows(b, r, rb))
        return 0;
    /* Rows of no slots (a zero-size layer or top-k dimension) hold nothing to act on: their
     * count, which only a shape announces, must not bound the work. */
    if (rb == 0)
        return 0;
    size_t bytes = (size_t)(b->hi - b->lo) * rb;
    unsigned char *held = NULL;
    if (r->act == SR_RA_SHIFT) {
        /* Shift reads the rows as they were before any of them moved. */
        held = malloc(bytes ? bytes : 1);
        if (!held)
            return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes of routes", bytes);
        memcpy(held, b->data, bytes);
        src = held;
    }
    for (int64_t p = b->lo; p < b->hi; p++)
        if (sr_route_rule_covers(r, p, b->P, b->start, -1))
            act_on_row(b, r, src, p, rb);
    free(held);
    return 0;
}
