/* syncroll report: re-render a run folder from its results.json; compare p99 to a baseline. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "commands.h"
#include "report/report.h"
#include "cmd_report_priv.h"

#define DEFAULT_REPORTS (SR_REPORT_TEXT | SR_REPORT_JUNIT | SR_REPORT_HTML)

static void usage(FILE *f)
{
    char all[128], dflt[128];
    fprintf(f,
            "usage: syncroll report RUN_DIR [--baseline OTHER_RUN] [--threshold PCT]\n"
            "                       [--floor MS] [--top N] [--report LIST]\n"
            "       syncroll report --merge OUT RUN_DIR...\n"
            "       syncroll report --history DIR [--last N] [--out OUT_DIR]\n\n"
            "Re-renders the reports of a run folder (RUN_DIR/results.json, as `syncroll run`\n"
            "wrote it) into RUN_DIR: summary.txt, junit.xml and report.html by default.\n\n"
            "  --report LIST      reporters to write: %s or all (default\n"
            "                     %s; json rewrites results.json itself)\n"
            "  --baseline DIR     compare with another run folder: list every phase whose p99\n"
            "                     regressed by more than the threshold, for the whole run and\n"
            "                     per scenario id present in both runs (repeats merged)\n"
            "  --threshold PCT    regression threshold in percent (default %.0f)\n"
            "  --floor MS         ignore a p99 that grew by no more than MS milliseconds\n"
            "                     (default %.1f; 0 keeps every one)\n"
            "  --top N            print the N largest regressions, largest increase first,\n"
            "                     and count the rest (default %d)\n\n"
            "RUN_DIR and DIR may also name a results.json file. Exit status: 0 reports written\n"
            "and no regression, 1 a p99 regressed, 2 usage error, unreadable or malformed\n"
            "results.json, or a report that could not be written.\n\n"
            "--merge OUT RUN_DIR...  merges the shard run folders of one run (`syncroll run`\n"
            "    with --shard or a CI system's shard variables) into the run folder OUT\n"
            "    (results.json, junit.xml, report.html, summary.txt). Shards of different runs\n"
            "    (git rev, run group, options, shard count) are refused (report.run_mismatch),\n"
            "    and so are two folders of one shard (report.shard_duplicate) and a scenario\n"
            "    that ran in two shards (report.scenario_twice): exit 2, nothing written. A\n"
            "    missing shard (report.shard_missing) is named; the reports of the shards\n"
            "    present are written marked partial and the exit status is 1. Otherwise the\n"
            "    exit status is run's: 1 when a scenario failed, errored or was interrupted or\n"
            "    a shard was partial, else 0. What each shard's report.html links to is copied\n"
            "    into OUT/shard-K (no symbolic link followed, 256 MiB in all), so the merged\n"
            "    report's links resolve from OUT alone.\n\n"
            "--history DIR [--last N] [--out OUT_DIR]  reads every run folder DIR/*/results.json\n"
            "    (one per night; symbolic links such as latest are not followed), keeps the\n"
            "    newest N by start time, and writes history.html and history.json into OUT_DIR\n"
            "    (default DIR): each scenario's verdict night by night, the scenarios failing\n"
            "    now (flaky or not) with their first failing night and the git revs around it,\n"
            "    flaky ones, p50/p99 trends per phase and per scenario. An unreadable, corrupt\n"
            "    or symlinked results.json is reported (SKIPPED) and left out. Exit status\n"
            "    0 written, 2 usage error, no readable night, or a file that could not be\n"
            "    written.\n",
            sr_report_names(all, sizeof(all), SR_REPORT_ALL, ","),
            sr_report_names(dflt, sizeof(dflt), DEFAULT_REPORTS, ","), SR_REPORT_DEFAULT_THRESHOLD,
            SR_REPORT_DEFAULT_FLOOR_NS / 1e6, SR_REPORT_DEFAULT_TOP);
}

typedef struct report_args {
    const char *run, *baseline;
    double threshold, floor_ms;
    long long top;
    unsigned which;
} report_args;

/* 0 ok, 1 help printed, -1 usage error (printed). */
static int parse(report_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof(*a));
    a->threshold = SR_REPORT_DEFAULT_THRESHOLD;
    a->floor_ms = SR_REPORT_DEFAULT_FLOOR_NS / 1e6;
    a->top = SR_REPORT_DEFAULT_TOP;
    a->which = DEFAULT_REPORTS;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0)
            return 1;
        if (o[0] != '-') {
            if (a->run) {
                fprintf(stderr, "syncroll report: one run folder only (got '%s' too)\n", o);
                return -1;
            }
            a->run = o;
            continue;
        }
        if (!v || (strcmp(o, "--baseline") && strcmp(o, "--threshold") && strcmp(o, "--report") &&
                   strcmp(o, "--floor") && strcmp(o, "--top"))) {
            fprintf(stderr, "syncroll report: unknown or incomplete option '%s'\n", o);
            return -1;
        }
        i++;
        sr_err err = SR_ERR_INIT;
        if (strcmp(o, "--baseline") == 0) {
            a->baseline = v;
        } else if (strcmp(o, "--report") == 0) {
            if (sr_report_parse_list(&a->which, v, &err)) {
                fprintf(stderr, "syncroll report: %s: %s\n", sr_code_name(err.code), err.msg);
                return -1;
            }
        } else if (strcmp(o, "--floor") == 0) {
            if (sr_arg_double(v, 0, 1e9, &a->floor_ms)) {
                fprintf(stderr, "syncroll report: bad value for --floor (milliseconds >= 0): %s\n",
                        v);
                return -1;
            }
        } else if (strcmp(o, "--top") == 0) {
            if (sr_arg_int(v, 1, 1000000, &a->top)) {
                fprintf(stderr, "syncroll report: bad value for --top (1 to 1000000): %s\n", v);
                return -1;
            }
        } else {
            if (sr_arg_double(v, 0, DBL_MAX, &a->threshold)) {
                fprintf(stderr, "syncroll report: bad value for --threshold: %s\n", v);
                return -1;
            }
        }
    }
    if (!a->run) {
        fprintf(stderr, "syncroll report: missing RUN_DIR\n");
        return -1;
    }
    return 0;
}

static void fmt_ms(char *buf, size_t cap, uint64_t ns)
{
    snprintf(buf, cap, "%.3f ms", (double)ns / 1e6);
}

/* Prints a string of results.json on the terminal: control characters become '?'. */
static void put_clean(const char *s)
{
    for (; s && *s; s++)
        putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static int compare(const sr_run_result *run, const report_args *a)
{
    char dir[4096];
    sr_run_result *base = NULL;
    if (sr_report_cli_load(&base, a->baseline, dir, sizeof(dir)))
        return SR_EXIT_USAGE;
    sr_regressions r;
    sr_err err = SR_ERR_INIT;
    int rc = sr_report_compare_sized(&r, run, base, a->threshold,
                                     (uint64_t)(a->floor_ms * 1e6 + 0.5), &err);
    sr_run_result_free(base);
    if (rc) {
        fprintf(stderr, "syncroll report: %s: %s\n", sr_code_name(err.code), err.msg);
        return SR_EXIT_USAGE;
    }
    size_t shown = r.n < (size_t)a->top ? r.n : (size_t)a->top;
    for (size_t i = 0; i < shown; i++) {
        char b[32], c[32];
        fmt_ms(b, sizeof(b), r.v[i].base_p99);
        fmt_ms(c, sizeof(c), r.v[i].cur_p99);
        printf("REGRESSED ");
        put_clean(r.v[i].scope);
        printf(" %s p99 %s -> %s (+%.3f ms, +%.1f%%)\n", sr_phase_name(r.v[i].phase), b, c,
               (double)(r.v[i].cur_p99 - r.v[i].base_p99) / 1e6, r.v[i].pct);
    }
    if (r.n > shown)
        printf("... %zu more regression%s, smaller (--top %zu shows them)\n", r.n - shown,
               r.n - shown == 1 ? "" : "s", r.n);
    free(r.v);
    if (r.n)
        printf("%zu p99 regression%s", r.n, r.n == 1 ? "" : "s");
    else
        printf("no p99 regression");
    printf(" above %g%% and %g ms against %s; %zu under the floor ignored\n", a->threshold,
           a->floor_ms, a->baseline, r.under_floor);
    return r.n ? SR_EXIT_FAIL : SR_EXIT_OK;
}

int sr_cmd_report(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--merge") == 0)
        return sr_report_cli_merge(argc - 2, argv + 2);
    if (argc > 1 && strcmp(argv[1], "--history") == 0)
        return sr_report_cli_history(argc - 2, argv + 2);
    report_args a;
    int p = parse(&a, argc, argv);
    if (p) {
        usage(p > 0 ? stdout : stderr);
        return p > 0 ? SR_EXIT_OK : SR_EXIT_USAGE;
    }
    char dir[4096];
    sr_run_result *run = NULL;
    if (sr_report_cli_load(&run, a.run, dir, sizeof(dir)))
        return SR_EXIT_USAGE;
    sr_err err = SR_ERR_INIT;
    int status = SR_EXIT_OK;
    if (sr_report_write(run, dir, a.which, &err)) {
        fprintf(stderr, "syncroll report: %s: %s\n", sr_code_name(err.code), err.msg);
        status = SR_EXIT_USAGE;
    } else {
        for (unsigned bit = 1; bit & SR_REPORT_ALL; bit <<= 1)
            if (a.which & bit)
                printf("wrote %s/%s\n", dir, sr_report_file_name(bit));
        size_t failed = run->counts[SR_VERDICT_FAIL] + run->counts[SR_VERDICT_ERROR];
        printf("%zu passed, %zu failed", run->counts[SR_VERDICT_PASS], failed);
        if (run->counts[SR_VERDICT_SKIP])
            printf(", %zu skipped", run->counts[SR_VERDICT_SKIP]);
        printf("\n");
    }
    if (status == SR_EXIT_OK && a.baseline)
        status = compare(run, &a);
    sr_run_result_free(run);
    return status;
}
