/*
 * libFuzzer target for the results.json loader (sr_report_load_mem), which reads run folders
 * from other machines for `syncroll report`, --merge and --history: any bytes either fail with
 * a named error and no run, or give a run that every reporter renders, whose results.json loads
 * again, that merges (alone, and with itself: report.shard_duplicate when it is a shard) and
 * that a history of two nights of it analyses and renders; and it accepts only texts that parse
 * whole as JSON (the loader parses the scenario list item by item).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/history.h"
#include "report/report.h"
#include "sr_json.h"

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

/*
 * The loader reads the scenario list item by item (harness/report/report_split.c) instead of
 * parsing the whole text: it must never accept a text that is not one JSON document, and a text
 * that is not JSON must fail to load (its error may differ when the text has several faults).
 */
static void same_as_whole(const uint8_t *data, size_t size, int loaded_rc)
{
    sr_json_doc *doc = NULL;
    sr_err e = SR_ERR_INIT;
    int whole =
        sr_json_parse(&doc, (const char *)data, size, "whole.json", SR_REPORT_MAX_BYTES, &e);
    sr_json_free(doc);
    if (!loaded_rc && whole) {
        fprintf(stderr, "loaded a text that does not parse whole: %s\n", e.msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_run_result *run = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = sr_report_load_mem(&run, (const char *)data, size, "fuzz.json", &e);
    same_as_whole(data, size, rc);
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
