/*
 * history_fixture DIR: writes ten synthetic nights of one suite as run folders DIR/night-01 ..
 * DIR/night-10 (every report, with sr_report_write), one day apart, for `syncroll report
 * --history` (tests/fleet_history.sh):
 *   steady-a, steady-b   pass every night;
 *   regressing           passes nights 1-6 and fails from night 7 (git rev r3 -> r4) on;
 *   flaky                fails nights 3 and 5 (rev r2 and r3; each rev has a passing night too);
 *   late-error           errors from night 9 (rev r5, its first night) on;
 *   new-scenario         appears on night 5 and passes.
 * Git revs change every two nights (r1 nights 1-2, r2 3-4, r3 5-6, r4 7-8, r5 9-10). The
 * request phase's latencies grow by 10 % a night (a drifting p99); every night also has
 * scenario, splice and sync_total samples.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/report.h"
/* Only its header and scenario helpers are used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "report_synth.h"

static void scenario(sr_run_result *run, const char *id, sr_verdict v, double scale, uint64_t seed)
{
    char file[128];
    snprintf(file, sizeof(file), "scenarios/nightly/%s.json", id);
    sr_scenario_result *s = synth_add(run, id, file, 1, 0, 50);
    synth_phases(s, seed, scale);
    if (v == SR_VERDICT_FAIL)
        sr_result_check(s, "trace.row_mismatch", "off_by_one", NULL, "row 3 differs");
    if (v != SR_VERDICT_PASS)
        sr_result_set_verdict(s, v, "synthetic %s", sr_verdict_name(v));
}

static int night(const char *root, int k)
{
    char dir[4096], rev[64], id[64];
    snprintf(dir, sizeof(dir), "%s/night-%02d", root, k);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return -1;
    sr_run_result *run = NULL;
    if (sr_run_result_new(&run, NULL))
        return -1;
    synth_header(&run->header, dir);
    int r = (k + 1) / 2;
    snprintf(rev, sizeof(rev), "r%d%038d", r, r);
    sr_result_set_str(&run->header.git_rev, rev, NULL);
    snprintf(id, sizeof(id), "202601%02d-020000-%d", k, 100 + k);
    sr_result_set_str(&run->header.run_id, id, NULL);
    run->header.start_unix_ms = 1767232800000 + (int64_t)k * 86400000;
    snprintf(run->header.start_iso, sizeof(run->header.start_iso), "2026-01-%02dT02:00:00Z", k);
    double scale = 1.0;
    for (int i = 1; i < k; i++)
        scale *= 1.1;
    scenario(run, "steady-a", SR_VERDICT_PASS, scale, 10 + k);
    scenario(run, "steady-b", SR_VERDICT_PASS, scale, 20 + k);
    scenario(run, "regressing", k >= 7 ? SR_VERDICT_FAIL : SR_VERDICT_PASS, scale, 30 + k);
    scenario(run, "flaky", k == 3 || k == 5 ? SR_VERDICT_FAIL : SR_VERDICT_PASS, scale, 40 + k);
    scenario(run, "late-error", k >= 9 ? SR_VERDICT_ERROR : SR_VERDICT_PASS, scale, 50 + k);
    if (k >= 5)
        scenario(run, "new-scenario", SR_VERDICT_PASS, scale, 60 + k);
    sr_run_result_finish(run, 300);
    sr_err err = SR_ERR_INIT;
    int rc = sr_report_write(run, dir, SR_REPORT_ALL, &err);
    if (rc)
        fprintf(stderr, "history_fixture: %s\n", err.msg);
    sr_run_result_free(run);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: history_fixture DIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0777) != 0 && errno != EEXIST) {
        perror(argv[1]);
        return 2;
    }
    for (int k = 1; k <= 10; k++)
        if (night(argv[1], k))
            return 1;
    return 0;
}
