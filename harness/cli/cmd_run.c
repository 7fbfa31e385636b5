/* syncroll run: select, run and report scenarios (runner.h, result.h, report/report.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "report/report.h"
#include "cmd_run_priv.h"
#include "signals.h"

static void usage(FILE *f)
{
    char names[128];
    fprintf(
        f,
        "usage: syncroll run [options] [PATH...]\n\n"
        "Runs scenario files (a file, or every *.json under a directory, recursively; default:\n"
        "scenarios), each against its own mock engines, and prints one line per scenario, a\n"
        "repro command per failure and the line `N passed, N failed[, N skipped]`.\n\n"
        "  --tag T          run only scenarios tagged T (repeatable: any of them)\n"
        "  --exclude-tag T  skip scenarios tagged T (repeatable)\n"
        "  --seed N         override every scenario's seed\n"
        "  -j, --jobs N     run N scenarios in parallel (default 1)\n"
        "  --repeat N       run every selected scenario N times (default 1)\n"
        "  --until-fail     repeat until a scenario fails (at most --repeat rounds if given)\n"
        "  --duration S     soak: run each scenario's steps again and again, on the same\n"
        "                   engines, until S seconds have passed (sets soak.duration_ms;\n"
        "                   checks that nothing is lost and that the harness's descriptors\n"
        "                   and memory stop growing; see scenarios/FORMAT.md §15)\n"
        "  --shard K/N      run only shard K of N (a stable partition: FNV-1a of the\n"
        "                   scenario id modulo N); without it, from the CI environment:\n"
        "                   BUILDKITE_PARALLEL_JOB/_COUNT (0-based), JOB_COMPLETION_INDEX\n"
        "                   (0-based, Kubernetes Indexed Jobs; count from --shard-count or\n"
        "                   SYNCROLL_SHARD_COUNT), CI_NODE_INDEX/CI_NODE_TOTAL (GitLab,\n"
        "                   1-based), CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL (0-based); the\n"
        "                   source used is printed; malformed or conflicting values are\n"
        "                   run.shard_env (exit 2)\n"
        "  --shard-count N  the shard count when the environment gives only an index\n"
        "  --timings PATH   balance the shards by recorded durations instead of the hash:\n"
        "                   PATH is a run folder, a results.json or a history folder\n"
        "                   (DIR/*/results.json, the newest night of each id); longest\n"
        "                   first, each to the least loaded shard; every job of the run\n"
        "                   must pass the same timings (the run records a fingerprint of\n"
        "                   the partition; report --merge refuses shards of two)\n"
        "  --run-group G    what makes shards one run for `syncroll report --merge` (also\n"
        "                   SYNCROLL_RUN_GROUP; default derived from the git rev and the\n"
        "                   options that select and run scenarios); [A-Za-z0-9._:-], <= 128\n"
        "  --list           print the ids of the selected scenarios (after sharding), one a\n"
        "                   line, and run nothing\n"
        "  --out DIR        write the run folder under DIR (default reports)\n"
        "  --keep           keep the work folders (engine logs) of passing scenarios too\n"
        "  --report LIST    reports to write: any of %s (default all)\n"
        "  --max-scenario-bytes N\n"
        "                   refuse scenario files larger than N bytes (default 4194304,\n"
        "                   at most 1073741824) with scenario.too_large, before parsing\n"
        "  --force          run a scenario whose memory estimate exceeds the machine's memory\n"
        "                   (without it such a scenario is refused before anything runs,\n"
        "                   resource.memory_estimate, as `syncroll lint` does; the estimate\n"
        "                   is in scenarios/FORMAT.md)\n\n"
        "The run folder DIR/<run-id>/ holds summary.txt, results.json, junit.xml, report.html,\n"
        "scenarios/<id>.json (every scenario expanded with its defaults) and artifacts/<id>/\n"
        "(engine config and logs of failures); DIR/latest, a symbolic link, points at it\n"
        "(anything else named latest is left alone, with a warning).\n\n"
        "SIGINT, SIGTERM or SIGHUP stops the run: no scenario starts, the running ones stop\n"
        "at their next step with the verdict `interrupted` (check run.interrupted), every\n"
        "engine is stopped and every report is written marked partial; a second signal kills\n"
        "the engines and exits at once.\n\n"
        "Exit status: 0 all passed, 1 a scenario failed or errored, 2 usage error, a\n"
        "malformed scenario or one beyond the machine's memory (nothing runs then), 3 a\n"
        "report could not be written (each file named on stderr), 130 / 143 / 129\n"
        "interrupted by SIGINT / SIGTERM / SIGHUP (also when the signal arrives while the\n"
        "reports are written).\n\n"
        "Environment: SYNCROLL_ENGINE=PATH runs the mock engines as `PATH engine ...` (another\n"
        "syncroll build) instead of this executable; one that cannot be executed makes each\n"
        "scenario's verdict error (proc.spawn).\n",
        sr_report_names(names, sizeof(names), SR_REPORT_ALL, ","));
}

/* A run group: 1-128 characters of [A-Za-z0-9._:-]. */
int sr_run_group_valid(const char *g)
{
    size_t n = strlen(g);
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)g[i]) && !strchr("._:-", g[i]))
            return 0;
    return 1;
}

static int add_tag(char ***v, size_t *n, const char *t)
{
    char **x = realloc(*v, (*n + 1) * sizeof(char *));
    if (!x)
        return -1;
    *v = x;
    return (x[(*n)++] = strdup(t)) ? 0 : -1;
}

/* One option with a value; returns 1 if consumed, 0 if unknown, -1 on a bad value. */
static int value_opt(run_args *a, const char *o, const char *v)
{
    long long x;
    if (strcmp(o, "--tag") == 0)
        return add_tag(&a->tags, &a->n_tags, v) ? -1 : 1;
    if (strcmp(o, "--exclude-tag") == 0)
        return add_tag(&a->exclude, &a->n_exclude, v) ? -1 : 1;
    if (strcmp(o, "--seed") == 0) {
        a->has_seed = 1;
        return sr_arg_int(v, 0, (long long)1 << 53, &x) ? -1 : (a->seed = (uint64_t)x, 1);
    }
    if (strcmp(o, "-j") == 0 || strcmp(o, "--jobs") == 0)
        return sr_arg_int(v, 1, 256, &x) ? -1 : (a->jobs = (int)x, 1);
    if (strcmp(o, "--repeat") == 0)
        return sr_arg_int(v, 1, 1000000, &x) ? -1 : (a->repeat = (int)x, a->has_repeat = 1, 1);
    if (strcmp(o, "--out") == 0)
        return *v ? (a->out = v, 1) : -1;
    if (strcmp(o, "--duration") == 0)
        return sr_arg_int(v, 1, 86400, &x) ? -1 : (a->duration_ms = x * 1000, 1);
    if (strcmp(o, "--max-scenario-bytes") == 0)
        return sr_arg_scenario_bytes(v, &a->max_scenario_bytes) ? -1 : 1;
    if (strcmp(o, "--report") == 0) {
        sr_err e = SR_ERR_INIT; /* the unknown name, the known ones and the closest */
        if (!sr_report_parse_list(&a->reports, v, &e))
            return 1;
        fprintf(stderr, "syncroll run: %s: %s\n", sr_code_name(e.code), e.msg);
        return -1;
    }
    if (strcmp(o, "--shard") == 0)
        return (a->shard_opt = v, 1);
    if (strcmp(o, "--shard-count") == 0)
        return sr_arg_int(v, 1, SR_SHARD_MAX, &x) ? -1 : (a->shard_count = x, 1);
    if (strcmp(o, "--run-group") == 0)
        return sr_run_group_valid(v) ? (a->run_group = v, 1) : -1;
    if (strcmp(o, "--timings") == 0)
        return *v ? (a->timings = v, 1) : -1;
    return 0;
}

/* 0 ok, 1 help printed, -1 usage error. */
static int parse_args(run_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof(*a));
    a->jobs = 1;
    a->repeat = 1;
    a->out = "reports";
    a->reports = SR_REPORT_ALL;
    a->paths = calloc((size_t)argc + 1, sizeof(char *));
    if (!a->paths)
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0)
            return 1;
        if (strcmp(o, "--until-fail") == 0) {
            a->until_fail = 1;
        } else if (strcmp(o, "--keep") == 0) {
            a->keep = 1;
        } else if (strcmp(o, "--list") == 0) {
            a->list = 1;
        } else if (strcmp(o, "--force") == 0) {
            a->force = 1;
        } else if (o[0] != '-') {
            a->paths[a->n_paths++] = argv[i];
        } else {
            /* "-j4" and "--opt=value" carry their value; otherwise it is the next argument. */
            char name[64];
            const char *eq = strchr(o, '=');
            const char *val = i + 1 < argc ? argv[i + 1] : NULL;
            int attached = 1;
            if (strncmp(o, "-j", 2) == 0 && o[2]) {
                snprintf(name, sizeof(name), "-j");
                val = o + 2;
            } else if (strncmp(o, "--", 2) == 0 && eq && (size_t)(eq - o) < sizeof(name)) {
                snprintf(name, sizeof(name), "%.*s", (int)(eq - o), o);
                val = eq + 1;
            } else {
                snprintf(name, sizeof(name), "%s", o);
                attached = 0;
            }
            int r = val ? value_opt(a, name, val) : 0;
            if (r <= 0) {
                fprintf(stderr, "syncroll run: %s option '%s'%s%s\n",
                        r < 0 ? "bad value for" : "unknown or incomplete", name, r < 0 ? ": " : "",
                        r < 0 ? val : "");
                return -1;
            }
            i += attached ? 0 : 1;
        }
    }
    if (!a->n_paths)
        a->paths[a->n_paths++] = "scenarios";
    return 0;
}

static void free_args(run_args *a)
{
    for (size_t i = 0; i < a->n_tags; i++)
        free(a->tags[i]);
    for (size_t i = 0; i < a->n_exclude; i++)
        free(a->exclude[i]);
    free(a->tags);
    free(a->exclude);
    free(a->paths);
}

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

/* The shard and the run group from the options and the environment; 0 or -1 (printed). */
static int resolve_env(run_args *a)
{
    sr_err err = SR_ERR_INIT;
    if (sr_shard_resolve(&a->shard, a->shard_opt, a->shard_count, env_get, NULL, &err)) {
        fprintf(stderr, "syncroll run: %s: %s\n", sr_code_name(err.code), err.msg);
        return -1;
    }
    if (a->shard.n)
        fprintf(stderr, "syncroll run: shard %d/%d from %s (%s)\n", a->shard.k, a->shard.n,
                a->shard.source, a->shard.detail);
    const char *g = getenv("SYNCROLL_RUN_GROUP");
    if (!a->run_group && g && *g) {
        if (!sr_run_group_valid(g)) {
            fprintf(stderr,
                    "syncroll run: usage.invalid_argument: SYNCROLL_RUN_GROUP='%.64s': "
                    "want 1-128 of [A-Za-z0-9._:-]\n",
                    g);
            return -1;
        }
        a->run_group = g;
    }
    return 0;
}

int sr_cmd_run(int argc, char **argv)
{
    run_args a;
    int p = parse_args(&a, argc, argv);
    if (!p && resolve_env(&a))
        p = -2;
    if (p) {
        if (p != -2)
            usage(p > 0 ? stdout : stderr);
        free_args(&a);
        return p > 0 ? SR_EXIT_OK : SR_EXIT_USAGE;
    }
    sr_signals_ignore_pipe();
    sr_signals_ignore_file_size();
    /* Stop signals are blocked here, before any thread starts, so every thread inherits the
     * mask and only the run's watcher (cmd_run_watch.c) sees them. SIGHUP (the terminal or the CI
     * session went away) stops the run as SIGTERM does: the reports are what is left of it.
     * libcurl's global state was initialised by main(), also before any thread. */
    sr_signals sig;
    sr_err err = SR_ERR_INIT;
    if (sr_signals_open(&sig, SR_SIG_STOP | SR_SIG_HANGUP, &err)) {
        fprintf(stderr, "syncroll run: %s: %s\n", sr_code_name(err.code), err.msg);
        free_args(&a);
        return SR_EXIT_FAIL;
    }
    int status = sr_run_main(&a, &sig, argc, argv);
    sr_signals_close(&sig);
    free_args(&a);
    return status;
}
