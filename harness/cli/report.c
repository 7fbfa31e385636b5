/* syncroll report: re-render a run folder from its results.json; compare p99 to a baseline. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "commands.h"
#include "report/report.h"

#define DEFAULT_REPORTS (SR_REPORT_TEXT | SR_REPORT_JUNIT | SR_REPORT_HTML)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: syncroll report RUN_DIR [--baseline OTHER_RUN] [--threshold PCT]\n"
            "                       [--report LIST]\n\n"
            "Re-renders the reports of a run folder (RUN_DIR/results.json, as `syncroll run`\n"
            "wrote it) into RUN_DIR: summary.txt, junit.xml and report.html by default.\n\n"
            "  --report LIST      reporters to write: text,json,junit,html or all (default\n"
            "                     text,junit,html; json rewrites results.json itself)\n"
            "  --baseline DIR     compare with another run folder: list every phase whose p99\n"
            "                     regressed by more than the threshold, for the whole run and\n"
            "                     per scenario id present in both runs (repeats merged)\n"
            "  --threshold PCT    regression threshold in percent (default %.0f)\n\n"
            "RUN_DIR and DIR may also name a results.json file. Exit status: 0 reports written\n"
            "and no regression, 1 a p99 regressed, 2 usage error, unreadable or malformed\n"
            "results.json, or a report that could not be written.\n",
            SR_REPORT_DEFAULT_THRESHOLD);
}

typedef struct report_args {
    const char *run, *baseline;
    double threshold;
    unsigned which;
} report_args;

/* 0 ok, 1 help printed, -1 usage error (printed). */
static int parse(report_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof(*a));
    a->threshold = SR_REPORT_DEFAULT_THRESHOLD;
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
        if (!v || (strcmp(o, "--baseline") && strcmp(o, "--threshold") && strcmp(o, "--report"))) {
            fprintf(stderr, "syncroll report: unknown or incomplete option '%s'\n", o);
            return -1;
        }
        i++;
        sr_err err = SR_ERR_INIT;
        if (strcmp(o, "--baseline") == 0) {
            a->baseline = v;
        } else if (strcmp(o, "--report") == 0) {
            if (sr_report_parse_list(&a->which, v, &err)) {
                fprintf(stderr, "syncroll report: %s\n", err.msg);
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

/* Splits a run argument into its folder and its results.json path. */
static int paths(const char *arg, char *dir, size_t dcap, char *json, size_t jcap)
{
    struct stat st;
    int is_dir = stat(arg, &st) == 0 && S_ISDIR(st.st_mode);
    if (is_dir) {
        snprintf(dir, dcap, "%s", arg);
        return (size_t)snprintf(json, jcap, "%s/results.json", arg) >= jcap ? -1 : 0;
    }
    snprintf(json, jcap, "%s", arg);
    const char *slash = strrchr(arg, '/');
    if (!slash)
        snprintf(dir, dcap, ".");
    else
        snprintf(dir, dcap, "%.*s", (int)(slash - arg), arg);
    return strlen(arg) >= jcap ? -1 : 0;
}

static int load(sr_run_result **out, const char *arg, char *dir, size_t dcap)
{
    char json[4200];
    sr_err err = SR_ERR_INIT;
    if (paths(arg, dir, dcap, json, sizeof(json))) {
        fprintf(stderr, "syncroll report: path too long: %s\n", arg);
        return -1;
    }
    if (sr_report_load(out, json, &err)) {
        fprintf(stderr, "syncroll report: %s [%s]\n", err.msg, sr_code_name(err.code));
        return -1;
    }
    return 0;
}

static void fmt_ms(char *buf, size_t cap, uint64_t ns)
{
    snprintf(buf, cap, "%.3f ms", (double)ns / 1e6);
}

static int compare(const sr_run_result *run, const report_args *a)
{
    char dir[4096];
    sr_run_result *base = NULL;
    if (load(&base, a->baseline, dir, sizeof(dir)))
        return SR_EXIT_USAGE;
    sr_regression *r = NULL;
    size_t n = 0;
    sr_err err = SR_ERR_INIT;
    int rc = sr_report_compare(&r, &n, run, base, a->threshold, &err);
    sr_run_result_free(base);
    if (rc) {
        fprintf(stderr, "syncroll report: %s\n", err.msg);
        return SR_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        char b[32], c[32];
        fmt_ms(b, sizeof(b), r[i].base_p99);
        fmt_ms(c, sizeof(c), r[i].cur_p99);
        printf("REGRESSED %s %s p99 %s -> %s (+%.1f%%)\n", r[i].scope, sr_phase_name(r[i].phase), b,
               c, r[i].pct);
    }
    free(r);
    if (n)
        printf("%zu p99 regression%s above %g%% against %s\n", n, n == 1 ? "" : "s", a->threshold,
               a->baseline);
    else
        printf("no p99 regression above %g%% against %s\n", a->threshold, a->baseline);
    return n ? SR_EXIT_FAIL : SR_EXIT_OK;
}

int sr_cmd_report(int argc, char **argv)
{
    report_args a;
    int p = parse(&a, argc, argv);
    if (p) {
        usage(p > 0 ? stdout : stderr);
        return p > 0 ? SR_EXIT_OK : SR_EXIT_USAGE;
    }
    char dir[4096];
    sr_run_result *run = NULL;
    if (load(&run, a.run, dir, sizeof(dir)))
        return SR_EXIT_USAGE;
    sr_err err = SR_ERR_INIT;
    int status = SR_EXIT_OK;
    if (sr_report_write(run, dir, a.which, &err)) {
        fprintf(stderr, "syncroll report: %s\n", err.msg);
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
