/* syncroll serve: start a scenario's mock engines as child processes for external clients. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "spec/dialect.h"
#include "commands.h"
#include "spec/engine_config.h"
#include "run/procs.h"
#include "scenario/scenario.h"
#include "signals.h"
#include "sr_json.h"

static void usage(FILE *f)
{
    char planes[1024], names[SR_DIALECT_NAMES_MAX];
    fprintf(
        f,
        "usage: syncroll serve [--listen ADDR] [--ready-timeout SECONDS]\n"
        "                      [--stop-grace SECONDS] [--max-scenario-bytes N]\n"
        "                      [--sync-dialect skyrl|vllm|sglang] [--dialect D]\n"
        "                      SCENARIO_OR_CONFIG.json\n\n"
        "Starts the mock engines the file declares as `syncroll engine` child processes on free\n"
        "ports, prints one JSON line\n"
        "  {\"engines\":[{\"id\":..,\"index\":0,\"url\":\"http://127.0.0.1:PORT\",\"pid\":N},..]}\n"
        "and runs until SIGINT, SIGTERM or SIGHUP, then stops them (SIGTERM, then SIGKILL after\n"
        "the grace period). If an engine dies, the others are stopped and the exit status is 1.\n\n"
        "A scenario (scenarios/FORMAT.md; any file with a top-level key only scenarios have, such\n"
        "as steps or description) is loaded and checked as `syncroll run` loads it, and its\n"
        "engines.count engines get the engine config `syncroll run` gives them: seed, model,\n"
        "weights, fields, timing, server limits and engines.faults. That config is written to a\n"
        "private temporary directory ($TMPDIR or /tmp) that is removed once the engines are up,\n"
        "or when serve fails. The steps, client and timeout_ms are not used: the engines run "
        "until\n"
        "serve stops. A scenario with engines.urls has no engines to start (scenario.invalid).\n"
        "Any other file is an engine config; its count key is the number of engines.\n\n"
        "The engines have no authentication: bind them to loopback (the default). They write\n"
        "files only for /fetch_weights and /update_weights, and only under the folders of\n"
        "engines.server.sync_dirs (server.sync_dirs in an engine config); without it, none:\n"
        "every sync_dir is answered 403 engine.forbidden_path (docs/reference/engine.md,\n"
        "\"Trust model\").\n\n"
        "  --listen ADDR        address the engines bind (default 127.0.0.1)\n"
        "  --ready-timeout S    deadline for every engine to report its port (default: the\n"
        "                       scenario's engines.ready_timeout_ms, else 10)\n"
        "  --stop-grace S       SIGTERM to SIGKILL (default: the scenario's\n"
        "                       engines.stop_grace_ms, else 5)\n"
        "  --max-scenario-bytes N  refuse a larger scenario file (scenario.too_large; default\n"
        "                       4 MiB, at most 1 GiB), as run and lint do\n"
        "  --sync-dialect D     the weight-sync control plane the engines speak: skyrl\n"
        "                       (collective_rpc skyrl_*_weight_update, the delta store), vllm\n"
        "                       (vLLM's native /start_weight_update, /update_weights,\n"
        "                       /finish_weight_update, /weight_checker, ...) or sglang\n"
        "                       (SGLang's /init_weights_update_group,\n"
        "                       /update_weights_from_distributed, /pause_generation, ...);\n"
        "                       default: the file's engines.sync_dialect (sync_dialect in an\n"
        "                       engine config), else the control plane of --dialect or of the\n"
        "                       file's engines.dialect, else skyrl. The dialects' planes:\n"
        "%s"
        "                       docs/reference/engine.md (\"Weight-sync control planes\")\n"
        "                       lists the calls.\n"
        "  --dialect D          the generate wire the engines also serve, one of\n"
        "                       %s\n"
        "                       (docs/reference/engine.md, \"Engine dialects\");\n"
        "                       default: the file's engines.dialect (dialect in an engine\n"
        "                       config), else skyrl. /skyrl/v1/generate answers in every one.\n",
        sr_arg_sync_defaults(planes, sizeof(planes), "                         "),
        sr_dialect_names(names, sizeof(names), ", "));
}

typedef struct serve_args {
    const char *file, *listen;
    const char *sync_dialect; /* NULL: the file's */
    const char *dialect;      /* NULL: the file's */
    int ready_ms, grace_ms;
    int ready_set, grace_set;  /* given on the command line: they win over the scenario's */
    size_t max_scenario_bytes; /* 0: the loader's default */
} serve_args;

/* A bad option value: named with its accepted range; -2 tells the caller not to print usage. */
static int bad_value(const char *opt, const char *v, const char *want)
{
    fprintf(stderr, "syncroll serve: %s: %s '%s': want %s\n", sr_code_name(SR_E_INVAL), opt, v,
            want);
    return -2;
}

/* An option serve does not take, or one without its value: named, then the usage (-1). */
static int unknown(const char *o)
{
    fprintf(stderr, "syncroll serve: %s: unknown or incomplete option '%s'\n",
            sr_code_name(SR_E_INVAL), o);
    return -1;
}

/* 0, -1 (usage: print it) or -2 (a bad value, already named). */
static int parse_args(serve_args *a, int argc, char **argv)
{
    a->file = NULL;
    a->listen = "127.0.0.1";
    a->ready_ms = 10000;
    a->grace_ms = 5000;
    a->ready_set = a->grace_set = 0;
    a->max_scenario_bytes = 0;
    a->sync_dialect = NULL;
    a->dialect = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (o[0] != '-' && !a->file) {
            a->file = o;
            continue;
        }
        if (i + 1 >= argc)
            return unknown(o);
        const char *v = argv[++i];
        double d;
        if (strcmp(o, "--listen") == 0) {
            a->listen = v;
        } else if (strcmp(o, "--ready-timeout") == 0) {
            if (sr_arg_double(v, 0.001, 3600, &d))
                return bad_value(o, v, "a number of seconds in [0.001, 3600]");
            a->ready_ms = (int)(d * 1000);
            a->ready_set = 1;
        } else if (strcmp(o, "--stop-grace") == 0) {
            if (sr_arg_double(v, 0, 3600, &d))
                return bad_value(o, v, "a number of seconds in [0, 3600]");
            a->grace_ms = (int)(d * 1000);
            a->grace_set = 1;
        } else if (strcmp(o, "--sync-dialect") == 0) {
            int sd;
            if (sr_arg_sync_dialect("serve", o, v, &sd))
                return -2;
            a->sync_dialect = v;
        } else if (strcmp(o, "--dialect") == 0) {
            int dd;
            if (sr_arg_dialect("serve", o, v, &dd))
                return -2;
            a->dialect = v;
        } else if (strcmp(o, "--max-scenario-bytes") == 0) {
            if (sr_arg_scenario_bytes(v, &a->max_scenario_bytes))
                return bad_value(o, v, "an integer of bytes in [1, 1073741824]");
        } else {
            return unknown(o);
        }
    }
    return a->file ? 0 : -1;
}

/* The engine config the engines are started with. */
typedef struct serve_plan {
    const char *config; /* the file given as is, or `path` */
    char dir[2048];     /* private temporary directory holding `path`; "" when there is none */
    char path[2560];
} serve_plan;

/* 1 for a top-level key of scenarios/FORMAT.md §2 that no engine config (spec/engine_config.h,
 * either shape) has. `engines` is not one: engine_config.h's second shape has it too. */
static int only_in_scenarios(const char *key)
{
    static const char *const shared[] = {"id",     "seed",    "model", "weights",
                                         "fields", "engines", NULL};
    for (int i = 0; shared[i]; i++)
        if (strcmp(key, shared[i]) == 0)
            return 0;
    for (size_t i = 0; i < sr_scenario_key_count(); i++) {
        const char *p = sr_scenario_key_at(i)->path;
        if (!strchr(p, '.') && strcmp(p, key) == 0)
            return 1;
    }
    return 0;
}

/* *out = 1 when the file is a scenario. A file that is not JSON at all is reported here with
 * sr_json's error (json.syntax, file:line:col), the code the scenario loader gives too. */
static int is_scenario(int *out, const char *file, size_t max_bytes, sr_err *err)
{
    *out = 0;
    sr_json_doc *d = NULL;
    /* Read under the larger of the JSON layer's default and --max-scenario-bytes, so the
     * scenario loader, not this peek, is what refuses a file over the latter. */
    int rc = sr_json_load_file(&d, file, max_bytes > SR_JSON_DEFAULT_MAX ? max_bytes : 0, err);
    if (rc)
        return rc;
    const cJSON *root = sr_json_root(d);
    const cJSON *m;
    if (cJSON_IsObject(root)) {
        cJSON_ArrayForEach(m, root)
        {
            if (m->string && only_in_scenarios(m->string))
                *out = 1;
        }
    }
    sr_json_free(d);
    return 0;
}

static int make_dir(serve_plan *p, sr_err *err)
{
    const char *t = getenv("TMPDIR");
    if (!t || !*t)
        t = "/tmp";
    int n = snprintf(p->dir, sizeof(p->dir), "%s/syncroll-serve-XXXXXX", t);
    if (n < 0 || (size_t)n >= sizeof(p->dir)) {
        p->dir[0] = '\0';
        return sr_err_set(err, SR_E_IO, "TMPDIR is longer than %zu bytes", sizeof(p->dir) - 24);
    }
    if (!mkdtemp(p->dir)) {
        int e = errno;
        p->dir[0] = '\0';
        return sr_err_set(err, SR_E_IO, "cannot create a temporary directory in %s: %s", t,
                          strerror(e));
    }
    snprintf(p->path, sizeof(p->path), "%s/engine.json", p->dir);
    p->config = p->path;
    return 0;
}

static void remove_dir(serve_plan *p)
{
    if (!p->dir[0])
        return;
    unlink(p->path);
    rmdir(p->dir);
    p->dir[0] = '\0';
}

/* Loads the scenario and writes the engine config the runner would give its engines. */
static int plan_scenario(serve_plan *p, serve_args *a, sr_err *err)
{
    sr_scenario *s = NULL;
    int rc = sr_scenario_load_max(&s, a->file, a->max_scenario_bytes, err);
    if (rc)
        return rc;
    if (s->n_urls)
        rc = sr_err_set(err, SR_E_SCENARIO,
                        "%s: engines.urls names external engines, so the scenario has no mock "
                        "engines to start",
                        a->file);
    if (!rc && !a->ready_set)
        a->ready_ms = (int)s->ready_timeout_ms;
    if (!rc && !a->grace_set)
        a->grace_ms = (int)s->stop_grace_ms;
    if (!rc)
        rc = make_dir(p, err);
    if (!rc)
        rc = sr_scenario_write_engine(s, p->path, NULL, err);
    sr_scenario_free(s);
    return rc;
}

static int spawn_all(sr_proc *ps, int n, const serve_args *a, const char *config, const char *self,
                     sr_err *err)
{
    for (int i = 0; i < n; i++) {
        char idx[16];
        snprintf(idx, sizeof(idx), "%d", i);
        char *argv[] = {
            "syncroll", "engine",       "--port",  "0",  "--ready-fd", "3",
            "--config", (char *)config, "--index", idx,  "--listen",   (char *)a->listen,
            NULL,       NULL,           NULL,      NULL, NULL};
        int k = 12;
        if (a->sync_dialect) {
            argv[k++] = "--sync-dialect";
            argv[k++] = (char *)a->sync_dialect;
        }
        if (a->dialect) {
            argv[k++] = "--dialect";
            argv[k++] = (char *)a->dialect;
        }
        int rc = sr_proc_spawn(&ps[i], self, argv, err);
        if (rc)
            return rc;
    }
    return 0;
}

static void print_urls(const sr_proc *ps, int n, const sr_engine_config *c, const char *listen)
{
    int v6 = strchr(listen, ':') != NULL;
    printf("{\"engines\":[");
    for (int i = 0; i < n; i++) {
        char id[SR_ENGINE_ID_MAX];
        sr_engine_config_id_for(id, sizeof(id), c, i);
        printf("%s{\"id\":\"%s\",\"index\":%d,\"url\":\"http://%s%s%s:%s\",\"pid\":%d}",
               i ? "," : "", id, i, v6 ? "[" : "", listen, v6 ? "]" : "", ps[i].line,
               (int)ps[i].pid);
    }
    printf("]}\n");
    fflush(stdout);
}

/* Waits for SIGINT/SIGTERM/SIGHUP (0) or a child's death (1). */
static int wait_for_end(sr_signals *sig, sr_proc *ps, int n)
{
    for (;;) {
        struct pollfd p = {sig->fd, POLLIN, 0};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            return 1;
        int signo = sr_signals_next(sig);
        if (signo <= 0)
            continue;
        if (signo != SIGCHLD)
            return 0;
        for (int i = 0; i < n; i++) {
            if (sr_proc_poll_exit(&ps[i])) {
                char how[64];
                fprintf(stderr, "syncroll serve: engine %d (pid %d) %s; stopping the others\n", i,
                        (int)ps[i].pid, sr_proc_describe(&ps[i], how, sizeof(how)));
                return 1;
            }
        }
    }
}

/* Starts the engines, serves until a stop signal or an engine's death, stops them. */
static int run_engines(const serve_args *a, serve_plan *p, const sr_engine_config *cfg,
                       sr_signals *sig)
{
    sr_err err = SR_ERR_INIT;
    char self[4096];
    sr_proc ps[SR_ENGINE_MAX_COUNT];
    int n = cfg->count;
    for (int i = 0; i < n; i++) {
        sr_proc z = SR_PROC_INIT;
        ps[i] = z;
    }
    int rc = sr_proc_self_exe(self, sizeof(self), &err);
    if (!rc)
        rc = spawn_all(ps, n, a, p->config, self, &err);
    if (!rc)
        rc = sr_procs_wait_ready(ps, (size_t)n, a->ready_ms, &err);
    int status = SR_EXIT_OK;
    if (rc) {
        fprintf(stderr, "syncroll serve: %s: %s\n", sr_code_name(rc), err.msg);
        status = SR_EXIT_FAIL;
    } else {
        /* Every engine has read its config, so nothing is left behind even if serve is killed. */
        remove_dir(p);
        print_urls(ps, n, cfg, a->listen);
        status = wait_for_end(sig, ps, n) ? SR_EXIT_FAIL : SR_EXIT_OK;
    }
    int killed = sr_procs_stop(ps, (size_t)n, a->grace_ms);
    if (killed)
        fprintf(stderr, "syncroll serve: %d engine(s) needed SIGKILL\n", killed);
    return status;
}

int sr_cmd_serve(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return SR_EXIT_OK;
    }
    serve_args a;
    int prc = parse_args(&a, argc, argv);
    if (prc) {
        if (prc == -1)
            usage(stderr);
        return SR_EXIT_USAGE;
    }
    /* Stop signals are blocked (and read from a signalfd) before the temporary directory exists,
     * so none can end serve without it being removed. */
    sr_signals sig;
    sr_err err = SR_ERR_INIT;
    int rc = sr_signals_open(&sig, SR_SIG_STOP | SR_SIG_HANGUP | SR_SIG_CHILD, &err);
    serve_plan p;
    p.config = a.file;
    p.dir[0] = '\0';
    sr_engine_config cfg;
    sr_engine_config_defaults(&cfg);
    int scenario = 0, loading = !rc;
    if (!rc)
        rc = is_scenario(&scenario, a.file, a.max_scenario_bytes, &err);
    if (!rc && scenario)
        rc = plan_scenario(&p, &a, &err);
    if (!rc)
        rc = sr_engine_config_load(&cfg, p.config, 0, &err);
    if (rc) {
        remove_dir(&p);
        sr_signals_close(&sig);
        fprintf(stderr, "syncroll serve: %s: %s\n", sr_code_name(rc), err.msg);
        /* A scenario file over the size limit is malformed input, and one that cannot be read
         * a bad argument, as for run and lint (exit 2). */
        return rc == SR_E_SCENARIO_TOO_LARGE || (loading && rc == SR_E_IO) ? SR_EXIT_USAGE
                                                                           : sr_exit_for_code(rc);
    }
    int status = run_engines(&a, &p, &cfg, &sig);
    sr_signals_close(&sig);
    remove_dir(&p);
    sr_engine_config_release(&cfg);
    return status;
}
