/* syncroll lint: validate scenario files without running them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "scenario/scenario.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: syncroll lint [--max-scenario-bytes N] [--force] [PATH...]\n\n"
            "Loads every scenario (a file, or every *.json under a directory, recursively;\n"
            "default: scenarios) exactly as `syncroll run` would, without running it, and\n"
            "reports each problem as FILE:LINE:COL: message [error name]. Each execution\n"
            "of a file's dialect matrix (engines.dialects) is made as run makes it, so a\n"
            "setting one of them refuses is reported too, and so are two scenarios with\n"
            "the same id. Exit status: 0 all valid, 2 otherwise.\n\n"
            "  --max-scenario-bytes N\n"
            "                   refuse scenario files larger than N bytes (default 4194304,\n"
            "                   at most 1073741824) with scenario.too_large, before parsing\n"
            "  --force          do not refuse a scenario whose memory estimate (local engines x\n"
            "                   (3 x weights.total_bytes + max_body_bytes + 32 MiB) + 3 x\n"
            "                   weights.total_bytes + 64 MiB) exceeds the machine's memory\n"
            "                   (resource.memory_estimate); the largest estimate is printed\n");
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

/*
 * Refuses a scenario whose memory estimate exceeds the machine's memory (unless `force`);
 * keeps the largest estimate in *top / *top_id. Returns 1 when refused.
 */
static int memory_check(const sr_scenario *s, int force, uint64_t *top, const char **top_id)
{
    uint64_t est = sr_scenario_memory_estimate(s);
    if (est > *top || !*top_id) {
        *top = est;
        *top_id = s->id;
    }
    sr_err err = SR_ERR_INIT;
    int rc = force ? 0 : sr_scenario_memory_check(s, sr_scenario_machine_memory(), &err);
    if (rc)
        fprintf(stderr, "%s; --force to lint anyway [%s]\n", err.msg, sr_code_name(rc));
    return rc != 0;
}

/* Options and paths: 0 to go on, 1 after --help, -1 on a usage error (reported). */
/*
 * Each execution of the file's matrix (engines.dialects) made as `syncroll run` makes it: a
 * setting that one dialect's execution refuses (e.g. a transport its control plane has not) is
 * malformed here too, not only when the run starts. 0 when every execution is accepted.
 */
static int dialects_check(const sr_scenario *s, const char *path, size_t max_bytes)
{
    for (int d = 0; d < SR_DIALECT_COUNT; d++) {
        if (!(s->dialects & (1u << d)))
            continue;
        sr_scenario *x = NULL;
        sr_err e = SR_ERR_INIT;
        int r = sr_scenario_load_max(&x, path, max_bytes, &e);
        if (!r)
            r = sr_scenario_for_dialect(x, (sr_dialect)d, &e);
        sr_scenario_free(x);
        if (r) {
            fprintf(stderr, "%s [%s]\n", e.msg, sr_code_name(r));
            return -1;
        }
    }
    return 0;
}

static int parse_args(int argc, char **argv, char **paths, size_t *n_paths, size_t *max_bytes,
                      int *force)
{
    static const char opt[] = "--max-scenario-bytes";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(a, "--force") == 0) {
            *force = 1;
            continue;
        }
        if (strncmp(a, opt, sizeof(opt) - 1) == 0 &&
            (!a[sizeof(opt) - 1] || a[sizeof(opt) - 1] == '=')) {
            const char *v =
                a[sizeof(opt) - 1] ? a + sizeof(opt) : (i + 1 < argc ? argv[++i] : NULL);
            if (sr_arg_scenario_bytes(v, max_bytes)) {
                fprintf(stderr, "syncroll lint: bad value for option '%s': %s\n", opt,
                        v ? v : "(missing)");
                return -1;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "syncroll lint: unknown option '%s'\n", a);
            usage(stderr);
            return -1;
        } else {
            paths[(*n_paths)++] = argv[i];
        }
    }
    return 0;
}

int sr_cmd_lint(int argc, char **argv)
{
    char *dflt[] = {"scenarios"};
    char **paths = calloc((size_t)argc + 1, sizeof(*paths));
    size_t n_paths = 0, max_bytes = 0;
    int force = 0;
    int st = paths ? parse_args(argc, argv, paths, &n_paths, &max_bytes, &force) : -1;
    if (st) {
        free(paths);
        return st > 0 ? SR_EXIT_OK : SR_EXIT_USAGE;
    }
    char **files = NULL;
    size_t n = 0;
    sr_err err = SR_ERR_INIT;
    int rc = n_paths ? sr_scenario_files(&files, &n, paths, n_paths, &err)
                     : sr_scenario_files(&files, &n, dflt, 1, &err);
    free(paths);
    if (rc) {
        fprintf(stderr, "syncroll lint: %s: %s\n", sr_code_name(err.code), err.msg);
        return SR_EXIT_USAGE;
    }
    sr_scenario **scn = calloc(n + 1, sizeof(*scn));
    size_t bad = 0;
    uint64_t top = 0;
    const char *top_id = NULL;
    for (size_t i = 0; scn && i < n; i++) {
        sr_err e = SR_ERR_INIT;
        int r = sr_scenario_load_max(&scn[i], files[i], max_bytes, &e);
        if (r) {
            fprintf(stderr, "%s [%s]\n", e.msg, sr_code_name(r));
            bad++;
        } else if (dialects_check(scn[i], files[i], max_bytes) ||
                   memory_check(scn[i], force, &top, &top_id)) {
            bad++;
        }
    }
    if (top_id)
        printf("memory estimate: at most %llu MiB (%s); this machine has %llu MiB\n",
               (unsigned long long)(top >> 20), top_id,
               (unsigned long long)(sr_scenario_machine_memory() >> 20));
    if (scn && duplicate_id(scn, n))
        bad++;
    if (!scn) {
        fprintf(stderr, "syncroll lint: resource.nomem: out of memory\n");
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
