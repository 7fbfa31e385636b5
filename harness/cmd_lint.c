/* syncroll lint: validate scenario files without running them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "scenario.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: syncroll lint [PATH...]\n\n"
               "Loads every scenario (a file, or every *.json under a directory, recursively;\n"
               "default: scenarios) exactly as `syncroll run` would, without running it, and\n"
               "reports each problem as FILE:LINE:COL: message [error name]. Two scenarios\n"
               "with the same id are an error too. Exit status: 0 all valid, 2 otherwise.\n");
}

/* Reports a duplicate id among the first n loaded scenarios; 1 if there was one. */
static int duplicate_id(sr_scenario *const *scn, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; scn[i] && j < i; j++)
            if (scn[j] && strcmp(scn[i]->id, scn[j]->id) == 0) {
                fprintf(stderr, "%s: id '%s' is also the id of %s [scenario.invalid]\n",
                        scn[i]->path, scn[i]->id, scn[j]->path);
                return 1;
            }
    return 0;
}

int sr_cmd_lint(int argc, char **argv)
{
    char *dflt[] = {"scenarios"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return SR_EXIT_OK;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "syncroll lint: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return SR_EXIT_USAGE;
        }
    }
    char **files = NULL;
    size_t n = 0;
    sr_err err = SR_ERR_INIT;
    int rc = argc > 1 ? sr_scenario_files(&files, &n, argv + 1, (size_t)argc - 1, &err)
                      : sr_scenario_files(&files, &n, dflt, 1, &err);
    if (rc) {
        fprintf(stderr, "syncroll lint: %s\n", err.msg);
        return SR_EXIT_USAGE;
    }
    sr_scenario **scn = calloc(n + 1, sizeof(*scn));
    size_t bad = 0;
    for (size_t i = 0; scn && i < n; i++) {
        sr_err e = SR_ERR_INIT;
        int r = sr_scenario_load(&scn[i], files[i], &e);
        if (r) {
            fprintf(stderr, "%s [%s]\n", e.msg, sr_code_name(r));
            bad++;
        }
    }
    if (scn && duplicate_id(scn, n))
        bad++;
    if (!scn) {
        fprintf(stderr, "syncroll lint: out of memory\n");
        bad = 1;
    } else if (bad) {
        printf("%zu of %zu scenario file(s) malformed\n", bad, n);
    } else {
        printf("%zu scenario file(s) valid\n", n);
    }
    for (size_t i = 0; scn && i < n; i++)
        sr_scenario_free(scn[i]);
    free(scn);
    sr_scenario_files_free(files, n);
    return bad ? SR_EXIT_USAGE : SR_EXIT_OK;
}
