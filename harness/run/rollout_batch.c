/* Many rollouts over the client's engines with a bounded number in flight (rollout.h). */
#include <stdlib.h>

#include "rollout.h"

typedef struct batch {
    sr_rollout_result *results;
    const sr_rollout_config *cfgs;
} batch;

static int run_one(sr_client_conn *k, size_t i, void *ctx)
{
    batch *b = ctx;
    return sr_rollout_run(&b->results[i], k, &b->cfgs[i], NULL);
}

int sr_rollout_run_batch(sr_rollout_result *results, const sr_rollout_config *cfgs, size_t n,
                         const sr_client *c, int limit, sr_err *err)
{
    batch b = {results, cfgs};
    int *rcs = calloc(n ? n : 1, sizeof *rcs);
    if (!rcs)
        return sr_err_set(err, SR_E_NOMEM, "rollout: cannot allocate the batch");
    int rc = sr_client_parallel(c, n, limit, run_one, &b, rcs, err);
    for (size_t i = 0; !rc && i < n; i++)
        if (rcs[i]) {
            rc = rcs[i];
            if (err) {
                *err = results[i].err;
                sr_err_prefix(err, "rollout %zu: ", i);
            }
        }
    free(rcs);
    return rc;
}
