/* The replay step (runner_replay.h). */
#include <stdio.h>

#include "proxy/capture.h"
#include "replay_judge.h"
#include "runner_replay.h"

int sr_step_replay(sr_scn_run *run, int step, sr_err *err)
{
    const sr_scn_step *st = &run->scn->steps[step];
    sr_capture *c = NULL;
    int rc = sr_capture_open(&c, st->replay.capture, err);
    sr_replay_judge_opts o = SR_REPLAY_JUDGE_OPTS_INIT;
    o.dialect = st->replay.dialect;
    o.res = run->res;
    o.scenario = run->scn->id;
    o.step = step;
    o.step_name = st->name;
    if (!rc)
        rc = sr_replay_judge_capture(c, &o, err);
    if (rc)
        sr_err_prefix(err, "step %s: capture %s: ", st->name, st->replay.capture);
    if (!rc && o.unjudged)
        fprintf(stderr,
                "syncroll run: %s: step %s: note: %zu generate exchange(s) carry no "
                "X-Session-ID and are not judged (a conversation needs its session)\n",
                run->scn->id, st->name, o.unjudged);
    sr_capture_free(c);
    return rc;
}

int sr_run_replay_only(const sr_scenario *s)
{
    if (s->n_urls)
        return 0;
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].kind != SR_STEP_REPLAY)
            return 0;
    return 1;
}
