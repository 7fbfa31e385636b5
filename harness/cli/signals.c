/* Signal set-up of the long-running subcommands (signals.h). */
#include "signals.h"

#include <errno.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int sr_signals_open(sr_signals *s, unsigned which, sr_err *err)
{
    sigemptyset(&s->set);
    if (which & SR_SIG_STOP) {
        sigaddset(&s->set, SIGINT);
        sigaddset(&s->set, SIGTERM);
    }
    if (which & SR_SIG_HANGUP)
        sigaddset(&s->set, SIGHUP);
    if (which & SR_SIG_CHILD)
        sigaddset(&s->set, SIGCHLD);
    /* Blocked before the descriptor exists, so a signal arriving in between is kept pending
     * and read later rather than acted on with its default action. */
    sigprocmask(SIG_BLOCK, &s->set, NULL);
    s->fd = signalfd(-1, &s->set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s->fd < 0)
        return sr_err_set(err, SR_E_IO, "cannot open a signalfd: %s", strerror(errno));
    return 0;
}

int sr_signals_next(sr_signals *s)
{
    struct signalfd_siginfo si;
    ssize_t n;
    do
        n = read(s->fd, &si, sizeof(si));
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(si))
        return (int)si.ssi_signo;
    return n < 0 && errno == EAGAIN ? 0 : -1;
}

void sr_signals_close(sr_signals *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

void sr_signals_ignore_pipe(void)
{
    signal(SIGPIPE, SIG_IGN);
}

void sr_signals_ignore_file_size(void)
{
    signal(SIGXFSZ, SIG_IGN);
}
