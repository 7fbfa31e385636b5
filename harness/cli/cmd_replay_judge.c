/*
 * syncroll replay CAPTURE (no --list, --body or --serve): judges a capture with no engine
 * (run/replay_judge.h, shared with the scenario step `replay`), one result entry per session,
 * and prints and writes what `run` would.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd_replay_priv.h"
#include "report/report.h"
#include "run/replay_judge.h"

/* Prints the per-session lines and the last line as `run` does; the exit status. */
static int summarize(const sr_run_result *run)
{
    for (size_t i = 0; i < run->n_scenarios; i++) {
        const sr_scenario_result *s = run->scenarios[i];
        printf("%-5s %s", s->verdict == SR_VERDICT_PASS ? "PASS" : "FAIL", s->id);
        if (s->n_checks)
            printf("  %s: %s", s->checks[0].name, s->checks[0].message);
        else if (s->reason[0])
            printf("  %s", s->reason);
        putchar('\n');
    }
    size_t pass = run->counts[SR_VERDICT_PASS], bad = run->n_scenarios - pass;
    printf("%zu passed, %zu failed\n", pass, bad);
    return bad ? SR_EXIT_FAIL : SR_EXIT_OK;
}

int sr_replay_judge(const sr_capture *c, int dialect, const char *out)
{
    sr_err err = SR_ERR_INIT;
    sr_run_result *run = NULL;
    sr_replay_judge_opts o = SR_REPLAY_JUDGE_OPTS_INIT;
    o.dialect = dialect;
    int rc = sr_run_result_new(&run, &err);
    if (!rc) {
        o.run = run;
        rc = sr_replay_judge_capture(c, &o, &err);
    }
    if (o.unjudged)
        fprintf(stderr,
                "syncroll replay: note: %zu generate exchange(s) carry no X-Session-ID and are "
                "not judged (a conversation needs its session)\n",
                o.unjudged);
    int status = SR_EXIT_OK;
    if (!rc) {
        sr_run_result_finish(run, 0);
        status = summarize(run);
        if (out && mkdir(out, 0777) != 0 && errno != EEXIST)
            rc = sr_err_set(&err, SR_E_IO, "cannot create '%s': %s", out, strerror(errno));
        if (!rc && out)
            rc = sr_report_write(run, out, SR_REPORT_ALL, &err);
    }
    if (rc) {
        fprintf(stderr, "syncroll replay: %s: %s\n", sr_code_name(rc), err.msg);
        status = rc == SR_E_IO ? 3 : rc == SR_E_NOMEM ? SR_EXIT_FAIL : SR_EXIT_USAGE;
    }
    sr_run_result_free(run);
    return status;
}
