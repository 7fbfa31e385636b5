/* Private to runner*.c and step_*.c: the step executors of the dispatch table. */
#ifndef SR_RUNNER_PRIV_H
#define SR_RUNNER_PRIV_H

#include "runner.h"

int sr_step_rollout(sr_scn_run *run, int step, sr_err *err);
int sr_step_collate(sr_scn_run *run, int step, sr_err *err);
int sr_step_pause(sr_scn_run *run, int step, sr_err *err);
int sr_step_resume(sr_scn_run *run, int step, sr_err *err);
int sr_step_wait(sr_scn_run *run, int step, sr_err *err);
int sr_step_check_state(sr_scn_run *run, int step, sr_err *err);
int sr_step_kill_engine(sr_scn_run *run, int step, sr_err *err);

/* GET /syncroll/v1/state of engine `engine` into *out (owned; cJSON_Delete). 0, or the
 * control-plane error with its message in err. */
int sr_run_engine_state(cJSON **out, sr_scn_run *run, int engine, sr_err *err);

#endif /* SR_RUNNER_PRIV_H */
