/*
 * The signals of syncroll's long-running subcommands (engine, serve, run), taken synchronously: the
 * process blocks them and reads them from a signalfd, so no handler runs on an arbitrary thread
 * and the subcommand's own loop decides what each signal means (stop cleanly, reap a child,
 * write what it has so far).
 *
 * Call sr_signals_open on the main thread before any thread starts: a thread inherits the mask
 * of the thread that creates it, and a stop signal left unblocked in any thread may be delivered
 * there with its default action. Children started with sr_proc_spawn (run/procs.h) get an empty
 * mask and default dispositions back, so the blocking does not leak into them.
 *
 * Not thread-safe: one sr_signals per process, owned by the thread that opened it.
 */
#ifndef SR_CLI_SIGNALS_H
#define SR_CLI_SIGNALS_H

#include <signal.h>

#include "sr_err.h"

/* The signal sets of sr_signals_open, combined with |. */
#define SR_SIG_STOP   (1u << 0) /* SIGINT and SIGTERM: stop cleanly */
#define SR_SIG_HANGUP (1u << 1) /* SIGHUP: the controlling terminal or session went away */
#define SR_SIG_CHILD  (1u << 2) /* SIGCHLD: a child exited or stopped */

typedef struct sr_signals {
    int fd;       /* the signalfd (close-on-exec, non-blocking): poll it for POLLIN; -1 if none */
    sigset_t set; /* the signals blocked and read through fd */
} sr_signals;

/*
 * Blocks the signals of `which` (SR_SIG_* bits) in the calling thread and opens a signalfd for
 * them into *s; close it with sr_signals_close. Errors: SR_E_IO if the signalfd cannot be opened
 * (the signals stay blocked and s->fd is -1, so sr_signals_close is still safe).
 */
int sr_signals_open(sr_signals *s, unsigned which, sr_err *err);

/* The number of the next pending signal (SIGTERM, ...), consumed; 0 if none is pending, -1 if
 * the descriptor cannot be read. Never blocks. */
int sr_signals_next(sr_signals *s);

/* Closes the signalfd. The signals stay blocked: a process closes it on its way out, and a
 * stop signal arriving then must not kill it before it has cleaned up. */
void sr_signals_close(sr_signals *s);

/* Ignores SIGPIPE process-wide, so writing to a peer that went away fails with EPIPE (reported
 * where it happens) instead of ending the process. */
void sr_signals_ignore_pipe(void);

/* Ignores SIGXFSZ process-wide, so a write past RLIMIT_FSIZE fails with EFBIG (and is reported
 * with the file's name) instead of ending the process without a word. */
void sr_signals_ignore_file_size(void);

#endif /* SR_CLI_SIGNALS_H */
