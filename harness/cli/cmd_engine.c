/* syncroll engine: one mock inference engine process (harness/engine/). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "args.h"
#include "spec/dialect.h"
#include "commands.h"
#include "signals.h"
#include "spec/engine_config.h"
#include "sr_clock.h"
#include "engine/engine.h"
#include "engine/server.h"
#include "run/procs.h"

static void usage(FILE *f)
{
    char names[SR_DIALECT_NAMES_MAX];
    fprintf(f,
            "usage: syncroll engine [--config FILE.json] [--index I] [--port P] [--listen ADDR]\n"
            "                       [--ready-fd N] [--lifetime SECONDS] [--sync-dialect D]\n"
            "                       [--dialect D]\n\n"
            "Runs one mock inference engine: /skyrl/v1/generate, /inference/v1/generate, the\n"
            "generate routes of its dialect, the control plane, /syncroll/v1/state and\n"
            "/syncroll/v1/oracle (the true route rows of a token sequence, which no fault\n"
            "reaches), with the faults the config declares.\n\n"
            "  --config FILE   engine config or scenario JSON (docs/reference/engine.md)\n"
            "  --index I       engine index in the scenario (fault targeting, default id)\n"
            "  --port P        TCP port, 0 for any free port (default 0)\n"
            "  --listen ADDR   numeric address to bind (default 127.0.0.1)\n"
            "  --ready-fd N    write the bound port and a newline to descriptor N, then close it\n"
            "  --lifetime S    watchdog: stop after S seconds even if nobody asks (default: none)\n"
            "  --sync-dialect D  weight-sync control plane, skyrl, vllm or sglang (default: the\n"
            "                  config's sync_dialect, else the control plane of the dialect)\n"
            "  --dialect D     generate wire: %s\n"
            "                  (default: the config's dialect, else skyrl)\n\n"
            "SIGTERM or SIGINT stop the engine cleanly (exit 0); the watchdog exits 1.\n",
            sr_dialect_names(names, sizeof(names), ", "));
}

typedef struct engine_args {
    const char *config, *listen;
    int index, port, ready_fd;
    double lifetime;
    int sync_dialect; /* -1: the config's */
    int dialect;      /* -1: the config's */
} engine_args;

static int parse_args(engine_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof(*a));
    a->ready_fd = -1;
    a->sync_dialect = -1;
    a->dialect = -1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        long long n;
        double d;
        if (i + 1 >= argc) {
            fprintf(stderr, "syncroll engine: unknown or incomplete option '%s'\n", o);
            return -1;
        }
        const char *val = argv[++i];
        if (strcmp(o, "--config") == 0)
            a->config = val;
        else if (strcmp(o, "--listen") == 0)
            a->listen = val;
        else if (strcmp(o, "--index") == 0 && !sr_arg_int(val, 0, 63, &n))
            a->index = (int)n;
        else if (strcmp(o, "--port") == 0 && !sr_arg_int(val, 0, 65535, &n))
            a->port = (int)n;
        else if (strcmp(o, "--ready-fd") == 0 && !sr_arg_int(val, 0, 1 << 20, &n))
            a->ready_fd = (int)n;
        else if (strcmp(o, "--lifetime") == 0 && !sr_arg_double(val, 0.001, 1e7, &d))
            a->lifetime = d;
        else if (strcmp(o, "--sync-dialect") == 0) {
            if (sr_arg_sync_dialect("engine", o, val, &a->sync_dialect))
                return -1;
        } else if (strcmp(o, "--dialect") == 0) {
            if (sr_arg_dialect("engine", o, val, &a->dialect))
                return -1;
        } else {
            fprintf(stderr, "syncroll engine: bad option or value: %s %s\n", o, val);
            return -1;
        }
    }
    /* A zero-byte write fails with EBADF on a descriptor that is not open for writing. */
    if (a->ready_fd >= 0 && write(a->ready_fd, "", 0) != 0) {
        fprintf(stderr, "syncroll engine: --ready-fd %d: bad descriptor: %s\n", a->ready_fd,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* Serves until a signal or the watchdog; returns the exit status. */
static int serve_loop(sr_server *srv, sr_signals *sig, double lifetime)
{
    int64_t deadline = lifetime > 0 ? (int64_t)sr_clock_ms() + (int64_t)(lifetime * 1000) : -1;
    int64_t tick = -1;
    for (;;) {
        int64_t wait = -1;
        if (deadline >= 0)
            wait = deadline - (int64_t)sr_clock_ms();
        if (tick >= 0 && (wait < 0 || tick < wait))
            wait = tick;
        if (deadline >= 0 && deadline - (int64_t)sr_clock_ms() <= 0) {
            fprintf(stderr, "syncroll engine: lifetime of %g s reached, stopping\n", lifetime);
            return SR_EXIT_FAIL;
        }
        struct pollfd p[2] = {{sig->fd, POLLIN, 0}, {sr_server_wake_fd(srv), POLLIN, 0}};
        int r = poll(p, 2, wait < 0 ? -1 : (int)(wait > 1000000 ? 1000000 : wait));
        if (r < 0 && errno != EINTR)
            return SR_EXIT_FAIL;
        if (r > 0 && (p[0].revents & POLLIN) && sr_signals_next(sig))
            return SR_EXIT_OK;
        tick = sr_server_tick(srv);
    }
}

static int report_ready(int fd, int port)
{
    if (fd < 0)
        return 0;
    char line[32];
    int n = snprintf(line, sizeof(line), "%d\n", port);
    ssize_t w = write(fd, line, (size_t)n);
    close(fd);
    return w == n ? 0 : -1;
}

/* Reports an engine that could not start; its parent sees the readiness pipe close unanswered. */
static int start_failed(int rc, const sr_err *err, int ready_fd)
{
    fprintf(stderr, "syncroll engine: %s: %s\n", sr_code_name(rc), err->msg);
    if (ready_fd >= 0)
        close(ready_fd);
    return sr_exit_for_code(rc);
}

/*
 * Parent death: an engine started by syncroll (SR_PROC_PARENT_ENV names its spawner) asks the
 * kernel for SIGTERM when its parent dies, so a harness or serve killed with SIGKILL leaves no
 * engine behind. posix_spawn cannot set it in the child, so the engine does it first thing, then
 * checks that its parent is still the one that spawned it: if the spawner died in between, the
 * engine was re-parented already and stops now. Through a wrapper script (SYNCROLL_ENGINE) that
 * does not exec the engine, the parent is the wrapper: the signal then follows the wrapper, and
 * *watch (a pidfd of the spawner, or -1) lets a thread follow the spawner itself.
 * Returns 1 if the engine must not start.
 */
static int die_with_parent(int *watch)
{
    *watch = -1;
    const char *v = getenv(SR_PROC_PARENT_ENV);
    long long want;
    if (!v || sr_arg_int(v, 1, INT_MAX, &want))
        return 0;
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
        return 0;
    pid_t parent = getppid();
    if (parent == (pid_t)want)
        return 0;
        /* Not the spawner: a wrapper in between (the spawner still runs), or the spawner died. */
#ifdef SYS_pidfd_open
    *watch = (int)syscall(SYS_pidfd_open, (pid_t)want, 0);
    if (*watch >= 0)
        return 0;
#endif
    if (kill((pid_t)want, 0) == 0 || errno == EPERM)
        return 0;
    fprintf(stderr, "syncroll engine: the process that started it (pid %lld) is gone\n", want);
    return 1;
}

/* Waits for the spawner behind a wrapper to end, then stops the engine as SIGTERM would. */
static void *watch_spawner(void *arg)
{
    struct pollfd p = {(int)(intptr_t)arg, POLLIN, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
    kill(getpid(), SIGTERM);
    return NULL;
}

int sr_cmd_engine(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return SR_EXIT_OK;
    }
    engine_args a;
    if (parse_args(&a, argc, argv)) {
        usage(stderr);
        return SR_EXIT_USAGE;
    }
    sr_err err = SR_ERR_INIT;
    int spawner = -1;
    if (die_with_parent(&spawner))
        return start_failed(sr_err_set(&err, SR_E_PROC_EXITED, "parent gone"), &err, a.ready_fd);
    /* Stop signals are taken through a signalfd; they are blocked before any thread starts. */
    sr_signals sig;
    int rc = sr_signals_open(&sig, SR_SIG_STOP, &err);
    sr_signals_ignore_pipe();
    if (rc)
        return start_failed(rc, &err, a.ready_fd);
    /* Started after the signals are blocked, so it inherits the mask; it lives as long as the
     * process (detached; its pidfd is closed at exit). */
    pthread_t watcher;
    if (spawner >= 0 &&
        pthread_create(&watcher, NULL, watch_spawner, (void *)(intptr_t)spawner) == 0)
        pthread_detach(watcher);
    sr_engine_config cfg;
    rc = a.config ? sr_engine_config_load(&cfg, a.config, a.index, &err) : 0;
    if (!a.config) {
        sr_engine_config_defaults(&cfg);
        cfg.index = a.index;
        snprintf(cfg.id, sizeof(cfg.id), "engine-%d", a.index);
    }
    if (a.sync_dialect >= 0)
        cfg.sync_dialect = (sr_sync_dialect)a.sync_dialect;
    else if (a.dialect >= 0 && !cfg.sync_dialect_given)
        cfg.sync_dialect =
            sr_dialect_sync_dialect((sr_dialect)a.dialect); /* the dialect's control plane */
    if (a.dialect >= 0)
        cfg.dialect = (sr_dialect)a.dialect;
    /* The config checked its fields against its own dialect; --dialect may name another. */
    for (int i = 0; !rc && a.dialect >= 0 && i < cfg.n_extra; i++) {
        sr_field_def wire;
        rc = sr_dialect_field_def(&wire, &cfg.extra[i], cfg.dialect, &err);
    }
    sr_engine *e = NULL;
    sr_server *srv = NULL;
    if (!rc)
        rc = sr_engine_new(&e, &cfg, &err);
    if (!rc)
        rc = sr_server_start(&srv, e, a.listen, a.port, &err);
    sr_engine_config_release(&cfg);
    if (rc) {
        sr_engine_free(e);
        sr_signals_close(&sig);
        return start_failed(rc, &err, a.ready_fd);
    }
    int status = report_ready(a.ready_fd, sr_server_port(srv)) ? SR_EXIT_FAIL
                                                               : serve_loop(srv, &sig, a.lifetime);
    sr_server_stop(srv);
    sr_engine_free(e);
    sr_signals_close(&sig);
    return status;
}
