/* The state of one running scenario and its shared helpers (runner_state.h). */
#include "runner_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sr_run_check(sr_scn_run *run, int step, const char *name, const char *fmt, ...)
{
    char msg[SR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sr_check_where w = SR_CHECK_WHERE_NONE;
    w.step = step;
    return sr_result_check(run->res, name, NULL, &w, "scenario %s%s%s: %s", run->scn->id,
                           step >= 0 ? " step " : "", step >= 0 ? run->scn->steps[step].name : "",
                           msg);
}

int sr_run_stopped(const sr_scn_run *run)
{
    return run->stop ? atomic_load(&run->stop->signo) : 0;
}

int sr_step_join(sr_scn_run *run, int step, sr_err *err)
{
    sr_step_state *st = &run->steps[step];
    if (st->async_started && !st->joined) {
        pthread_join(st->thread, NULL);
        st->joined = 1;
        sr_step_timing *t = &run->res->steps[step];
        t->end_ms = st->end_ms;
        t->code = st->rc;
        if (st->rc && err)
            *err = st->err;
        return st->rc;
    }
    return 0;
}

int sr_run_engine_state(cJSON **out, sr_scn_run *run, int engine, sr_err *err)
{
    sr_client_reply rep;
    memset(&rep, 0, sizeof(rep));
    *out = NULL;
    int rc =
        sr_client_control(&rep, 1, run->client, engine, "GET", "/syncroll/v1/state", NULL, err);
    if (!rc && !cJSON_IsObject(rep.body))
        rc = sr_err_set(err, SR_E_CLIENT_INVALID_JSON, "the state is not a JSON object");
    if (!rc) {
        *out = rep.body;
        rep.body = NULL;
    }
    sr_client_reply_release(&rep);
    return rc;
}

void sr_soak_session(char *name, size_t n, const sr_scn_run *run, int step, int64_t i)
{
    const sr_scenario *s = run->scn;
    int engine = sr_client_engine_for(run->client, name);
    char id[SR_CLIENT_SESSION_MAX];
    /* Each j is a fresh uniform draw of the engine, so about n_engines tries find one; the
     * bound only keeps the loop finite. */
    for (long long j = 0; j < 65536; j++) {
        if (j == 0)
            snprintf(id, sizeof(id), "%s/%s.%lld/%lld", s->id, s->steps[step].name,
                     (long long)run->iteration, (long long)i);
        else
            snprintf(id, sizeof(id), "%s/%s.%lld.%lld/%lld", s->id, s->steps[step].name,
                     (long long)run->iteration, j, (long long)i);
        if (sr_client_engine_for(run->client, id) == engine)
            break;
    }
    snprintf(name, n, "%s", id);
}
