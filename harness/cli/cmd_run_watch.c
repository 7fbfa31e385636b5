/* syncroll run's stop signals: the watcher thread that turns SIGINT, SIGTERM and SIGHUP into the
 * run's stop switch and stops the engines (cmd_run_priv.h). */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "cmd_run_priv.h"
#include "sr_clock.h"

const char *sr_run_signal_name(int signo)
{
    return signo == SIGINT    ? "SIGINT"
           : signo == SIGTERM ? "SIGTERM"
           : signo == SIGHUP  ? "SIGHUP"
                              : "a stop signal";
}

/*
 * Reads SIGINT/SIGTERM/SIGHUP from the signalfd. The first one sets the stop switch, which the
 * runners read at their safe points, and sends SIGTERM to every engine's process group, which
 * also ends any request still waiting on one; engines still there a second later get SIGKILL
 * (every second, until the run is over), so no stalled step outlives the signal by much. A
 * second signal kills every engine and exits at once.
 */
static void *watch(void *arg)
{
    sr_run_watcher *w = arg;
    int first = 0;
    int64_t kill_at = -1;
    while (!atomic_load(&w->done)) {
        struct pollfd p = {w->sig->fd, POLLIN, 0};
        int r = poll(&p, 1, 50);
        if (kill_at >= 0 && (int64_t)sr_clock_ms() >= kill_at) {
            sr_proc_reg_signal(&w->stop->procs, SIGKILL);
            kill_at = (int64_t)sr_clock_ms() + 1000;
        }
        int signo = r > 0 ? sr_signals_next(w->sig) : 0;
        if (signo <= 0)
            continue;
        if (first) {
            sr_proc_reg_signal(&w->stop->procs, SIGKILL);
            fprintf(stderr, "syncroll run: %s again: engines killed, exiting without reports\n",
                    sr_run_signal_name(signo));
            _exit(128 + signo);
        }
        first = signo;
        atomic_store(&w->stop->signo, signo);
        fprintf(stderr,
                "syncroll run: %s: stopping (no new scenario starts, engines stopped, reports "
                "marked partial); a second signal exits at once\n",
                sr_run_signal_name(signo));
        sr_proc_reg_signal(&w->stop->procs, SIGTERM);
        kill_at = (int64_t)sr_clock_ms() + 1000;
    }
    return NULL;
}

void sr_run_watch_start(sr_run_watcher *w, sr_signals *sig, sr_run_stop *stop)
{
    w->sig = sig;
    w->stop = stop;
    atomic_store(&w->done, 0);
    w->started = sig && sig->fd >= 0 && pthread_create(&w->thread, NULL, watch, w) == 0;
    if (!w->started)
        fprintf(stderr, "syncroll run: warning: no signal watcher: SIGINT/SIGTERM/SIGHUP are held "
                        "until the run ends\n");
}

void sr_run_watch_stop(sr_run_watcher *w)
{
    atomic_store(&w->done, 1);
    if (w->started)
        pthread_join(w->thread, NULL);
    w->started = 0;
}
