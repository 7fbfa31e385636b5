/*
 * The sync_weights step. Its execution belongs to the weight-sync module (harness/sync.h,
 * issue 7); until that lands, a scenario that reaches this step ends with the verdict `error`,
 * never a silent pass. The dispatch table in runner_steps.c routes every sync_weights step here,
 * so plugging the module in changes only this file:
 *   sr_step_sync_weights:  return sr_sync_step(&run->sync, run->res, run->scn, step,
 *                              (const char *const *)run->urls, (size_t)run->n_engines,
 *                              run->opts->work_dir, err);
 *                          (and sr_verifier_note_version(run->verifier, <new version>) when
 *                          the verifier is not NULL, so stale rows are classified against it)
 *   sr_step_sync_release:  sr_sync_free(run->sync);
 */
#include "runner.h"

int sr_step_sync_weights(sr_scn_run *run, int step, sr_err *err)
{
    (void)run;
    (void)step;
    return sr_err_set(err, SR_E_NOT_IMPLEMENTED, "sync_weights is not implemented yet");
}

void sr_step_sync_release(sr_scn_run *run)
{
    run->sync = NULL;
}
