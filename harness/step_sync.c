/*
 * The sync_weights step: runs the weight-sync module (harness/sync.h) for one step and tells
 * the verifier the version the engines hold afterwards, so rows of later generates (and stale
 * rows) are checked against the right fingerprints. The dispatch table in runner_steps.c routes
 * every sync_weights step here.
 */
#include "runner.h"
#include "sync.h"
#include "verify.h"

int sr_step_sync_weights(sr_scn_run *run, int step, sr_err *err)
{
    int rc = sr_sync_step(&run->sync, run->res, run->scn, step, (const char *const *)run->urls,
                          (size_t)run->n_engines, run->opts->work_dir, err);
    if (run->sync && run->verifier)
        sr_verifier_note_version(run->verifier, sr_sync_version(run->sync));
    return rc;
}

void sr_step_sync_release(sr_scn_run *run)
{
    sr_sync_free(run->sync);
    run->sync = NULL;
}
