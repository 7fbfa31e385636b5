/* syncroll serve: start a scenario's mock engines as child processes for external clients. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "commands.h"
#include "engine/config.h"
#include "procs.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: syncroll serve [--listen ADDR] [--ready-timeout SECONDS]\n"
        "                      [--stop-grace SECONDS] SCENARIO_OR_CONFIG.json\n\n"
        "Starts the engines the file declares (engines.count, or count) as `syncroll engine`\n"
        "child processes on free ports, prints one JSON line\n"
        "  {\"engines\":[{\"id\":..,\"index\":0,\"url\":\"http://127.0.0.1:PORT\",\"pid\":N},..]}\n"
        "and runs until SIGINT or SIGTERM, then stops them (SIGTERM, then SIGKILL after the\n"
        "grace period). If an engine dies, the others are stopped and the exit status is 1.\n");
}

typedef struct serve_args {
    const char *file, *listen;
    int ready_ms, grace_ms;
} serve_args;

static int parse_args(serve_args *a, int argc, char **argv)
{
    a->file = NULL;
    a->listen = "127.0.0.1";
    a->ready_ms = 10000;
    a->grace_ms = 5000;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (o[0] != '-' && !a->file) {
            a->file = o;
            continue;
        }
        if (i + 1 >= argc)
            return -1;
        const char *v = argv[++i];
        char *end;
        double d = strtod(v, &end);
        if (strcmp(o, "--listen") == 0)
            a->listen = v;
        else if (strcmp(o, "--ready-timeout") == 0 && !*end && d > 0 && d < 3600)
            a->ready_ms = (int)(d * 1000);
        else if (strcmp(o, "--stop-grace") == 0 && !*end && d >= 0 && d < 3600)
            a->grace_ms = (int)(d * 1000);
        else
            return -1;
    }
    return a->file ? 0 : -1;
}

static int spawn_all(sr_proc *ps, int n, const serve_args *a, const char *self, sr_err *err)
{
    for (int i = 0; i < n; i++) {
        char idx[16];
        snprintf(idx, sizeof(idx), "%d", i);
        char *argv[] = {
            "syncroll",      "engine",  "--port", "0",        "--ready-fd",      "3", "--config",
            (char *)a->file, "--index", idx,      "--listen", (char *)a->listen, NULL};
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

/* Waits for SIGINT/SIGTERM (0) or a child's death (1). */
static int wait_for_end(int sfd, sr_proc *ps, int n)
{
    for (;;) {
        struct signalfd_siginfo si;
        struct pollfd p = {sfd, POLLIN, 0};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            return 1;
        if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
            continue;
        if (si.ssi_signo != SIGCHLD)
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

int sr_cmd_serve(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return SR_EXIT_OK;
    }
    serve_args a;
    if (parse_args(&a, argc, argv)) {
        usage(stderr);
        return SR_EXIT_USAGE;
    }
    sr_err err = SR_ERR_INIT;
    sr_engine_config cfg;
    int rc = sr_engine_config_load(&cfg, a.file, 0, &err);
    if (rc) {
        fprintf(stderr, "syncroll serve: %s: %s\n", sr_code_name(rc), err.msg);
        return sr_exit_for_code(rc);
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    char self[4096];
    sr_proc ps[SR_ENGINE_MAX_COUNT];
    int n = cfg.count;
    for (int i = 0; i < n; i++) {
        sr_proc z = SR_PROC_INIT;
        ps[i] = z;
    }
    rc = sfd < 0 ? sr_err_set(&err, SR_E_PROC_SPAWN, "signalfd failed") : 0;
    if (!rc)
        rc = sr_proc_self_exe(self, sizeof(self), &err);
    if (!rc)
        rc = spawn_all(ps, n, &a, self, &err);
    if (!rc)
        rc = sr_procs_wait_ready(ps, (size_t)n, a.ready_ms, &err);
    int status = SR_EXIT_OK;
    if (rc) {
        fprintf(stderr, "syncroll serve: %s: %s\n", sr_code_name(rc), err.msg);
        status = SR_EXIT_FAIL;
    } else {
        print_urls(ps, n, &cfg, a.listen);
        status = wait_for_end(sfd, ps, n) ? SR_EXIT_FAIL : SR_EXIT_OK;
    }
    int killed = sr_procs_stop(ps, (size_t)n, a.grace_ms);
    if (killed)
        fprintf(stderr, "syncroll serve: %d engine(s) needed SIGKILL\n", killed);
    sr_engine_config_release(&cfg);
    if (sfd >= 0)
        close(sfd);
    return status;
}
