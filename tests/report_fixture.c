/*
 * report_fixture DIR [SCALE]: writes every report of the synthetic run (report_synth.h) into
 * DIR (created if missing), latencies multiplied by SCALE (default 1). Used by report_cli.sh to
 * validate junit.xml and report.html with xmllint and to drive `syncroll report`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "report/report.h"
#include "report_synth.h"

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: report_fixture DIR [SCALE]\n");
        return 2;
    }
    double scale = argc == 3 ? strtod(argv[2], NULL) : 1.0;
    if (mkdir(argv[1], 0777) != 0 && errno != EEXIST) {
        perror(argv[1]);
        return 2;
    }
    sr_run_result *run = synth_run(argv[1], scale > 0 ? scale : 1.0);
    sr_err err = SR_ERR_INIT;
    int rc = sr_report_write(run, argv[1], SR_REPORT_ALL, &err);
    if (rc)
        fprintf(stderr, "report_fixture: %s\n", err.msg);
    sr_run_result_free(run);
    return rc ? 1 : 0;
}
