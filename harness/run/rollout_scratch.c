#include "rollout_scratch.h"

#include <stdlib.h>

static void scratch_free(void *p)
{
    sr_rollout_scratch *x = p;
    if (!x)
        return;
    free(x->ids);
    free(x->mask);
    free(x->lp);
    free(x->row_ver);
    free(x->held_ver);
    free(x->obs);
    free(x->full);
    sr_route_trace_free(x->trace);
    free(x);
}

sr_rollout_scratch *sr_rollout_scratch_of(sr_client_conn *k)
{
    sr_rollout_scratch *x = sr_client_conn_scratch(k);
    if (x)
        return x;
    x = calloc(1, sizeof *x);
    if (x)
        sr_client_conn_set_scratch(k, x, scratch_free);
    return x;
}

/* Frees *p when its `cap` items of `item` bytes are past the bound. */
static void keep_one(void **p, size_t *cap, size_t item)
{
    if (*cap > SR_ROLLOUT_SCRATCH_KEEP / item) {
        free(*p);
        *p = NULL;
        *cap = 0;
    }
}

void sr_rollout_scratch_keep(sr_rollout_scratch *x)
{
    keep_one((void **)&x->ids, &x->ids_cap, sizeof(int32_t));
    keep_one((void **)&x->mask, &x->mask_cap, 1);
    keep_one((void **)&x->lp, &x->lp_cap, sizeof(double));
    keep_one((void **)&x->row_ver, &x->ver_cap, sizeof(int64_t));
    keep_one((void **)&x->held_ver, &x->held_cap, sizeof(int64_t));
    keep_one((void **)&x->obs, &x->obs_cap, sizeof(int32_t));
    keep_one((void **)&x->full, &x->full_cap, 1);
    if (x->trace && sr_route_trace_capacity(x->trace) > SR_ROLLOUT_SCRATCH_KEEP) {
        sr_route_trace_free(x->trace);
        x->trace = NULL;
    }
}
