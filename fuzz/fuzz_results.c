/*
 * libFuzzer target for the results.json loader (sr_report_load_mem), which reads run folders
 * from other machines for `syncroll report`, --merge and --history: any bytes either fail with
 * a named error and no run, or give a run that every reporter renders, whose results.json loads
 * again, that merges (alone, and with itself: report.shard_duplicate when it is a shard) and
 * that a history of two nights of it analyses and renders.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/history.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render_all(const sr_run_result *run)
{
    for (unsigned bit = 1; bit & SR_REPORT_ALL; bit <<= 1) {
        sr_buf b = SR_BUF_INIT;
        sr_err e = SR_ERR_INIT;
        if (sr_report_render(&b, run, bit, &e)) {
            fprintf(stderr, "%s does not render: %s\n", sr_report_file_name(bit), e.msg);
            abort();
        }
        if (bit == SR_REPORT_JSON) {
            sr_run_result *again = NULL;
            if (sr_report_load_mem(&again, b.data, b.len, "again", &e)) {
                fprintf(stderr, "rendered results.json does not load: %s\n", e.msg);
                abort();
            }
            sr_run_result_free(again);
        }
        sr_buf_release(&b);
    }
}

static void merge(const sr_run_result *run)
{
    const sr_run_result *v[2] = {run, run};
    const char *names[2] = {"a", "b"};
    sr_run_result *m = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = sr_report_merge(&m, v, names, 1, &e);
    if (run->header.shard_n ? rc && rc != SR_E_REPORT_SHARD_MISSING
                            : rc != SR_E_REPORT_RUN_MISMATCH)
        abort();
    if (m)
        render_all(m);
    sr_run_result_free(m);
    m = NULL;
    rc = sr_report_merge(&m, v, names, 2, &e);
    if (m || rc != (run->header.shard_n ? SR_E_REPORT_SHARD_DUPLICATE : SR_E_REPORT_RUN_MISMATCH))
        abort();
}

static void history(const sr_run_result *run)
{
    sr_history *h = NULL;
    sr_err e = SR_ERR_INIT;
    if (sr_history_new(&h, &e) || sr_history_add(h, "a", run, &e) ||
        sr_history_add(h, "b", run, &e) || sr_history_skip(h, "c", SR_E_JSON_SYNTAX, "x", &e) ||
        sr_history_finish(h, 0, &e))
        abort();
    sr_buf b = SR_BUF_INIT;
    if (sr_history_render_text(&b, h, &e) || sr_history_render_json(&b, h, &e) ||
        sr_history_render_html(&b, h, &e))
        abort();
    sr_buf_release(&b);
    sr_history_free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_run_result *run = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = sr_report_load_mem(&run, (const char *)data, size, "fuzz.json", &e);
    if (rc) {
        if (e.code != rc || run || !sr_code_name(rc))
            abort();
        return 0;
    }
    render_all(run);
    merge(run);
    history(run);
    sr_run_result_free(run);
    return 0;
}
