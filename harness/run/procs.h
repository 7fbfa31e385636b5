/*
 * procs: child processes with a readiness pipe and a stop deadline (docs/internals/design.md §1).
 *
 * A child is started with posix_spawn (never fork: the caller may already run threads) with
 * stdin on /dev/null, stdout and stderr inherited, an empty signal mask and default dispositions,
 * and every descriptor of the parent closed except 0-2 and the write end of a fresh readiness
 * pipe, which the child finds at descriptor SR_PROC_READY_FD (pass e.g. "--ready-fd 3" in argv).
 * The child reports readiness by writing one line (at most SR_PROC_LINE_MAX - 1 bytes, e.g. its
 * port) and closing the descriptor. Every wait has a deadline. Stopping sends SIGTERM, waits up
 * to a grace period, then sends SIGKILL and reaps.
 *
 * Process groups and parent death. Every child leads a process group of its own
 * (POSIX_SPAWN_SETPGROUP), and every signal this module sends goes to that group, so an engine
 * started through a wrapper script (SYNCROLL_ENGINE) is stopped with everything the wrapper
 * started; when a child is reaped, whatever is left of its group gets SIGKILL. A terminal's ^C
 * reaches the harness only, which then stops its children itself. Every child finds the pid of
 * its spawner in the environment variable SYNCROLL_PARENT_PID (SR_PROC_PARENT_ENV), so that
 * `syncroll engine` can ask for a parent-death signal and check that its parent is still the
 * process that started it (cli/cmd_engine.c).
 *
 * A registry (sr_proc_reg) lists the children of a whole run, so that one thread (the run's
 * signal watcher) can signal every one of them while other threads own them: registered children
 * are reaped under the registry's lock, so a pid is never signalled after it was reaped (and
 * could be reused).
 *
 * Errors: SR_E_PROC_SPAWN (pipe or posix_spawn failed), SR_E_PROC_READY (no line before the
 * deadline; the child keeps running, stop it), SR_E_PROC_EXITED (the child closed the pipe or
 * exited before writing a line; the message carries its exit status or signal when known).
 *
 * Ownership: an sr_proc owns its pipe descriptor and pidfd until sr_proc_stop (or
 * sr_proc_release after the child is known to be gone). Thread-safety: an sr_proc belongs to one
 * thread; the functions do not touch global state (SIGCHLD handling is the caller's).
 */
#ifndef SR_PROCS_H
#define SR_PROCS_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "sr_err.h"

#define SR_PROC_READY_FD   3
#define SR_PROC_LINE_MAX   128
#define SR_PROC_PARENT_ENV "SYNCROLL_PARENT_PID"

struct sr_proc;

/* Every child of a run, for signalling them all from another thread (see above). */
typedef struct sr_proc_reg {
    pthread_mutex_t mu;
    struct sr_proc **v; /* borrowed: registered by sr_proc_spawn_in, removed by sr_procs_stop */
    size_t n, cap;
} sr_proc_reg;

typedef struct sr_proc {
    pid_t pid;                   /* -1 when not running */
    int ready_fd;                /* read end of the readiness pipe, -1 once read or closed */
    int pidfd;                   /* -1 when the kernel has no pidfd_open */
    int reaped;                  /* 1 once waited for */
    int status;                  /* wait status once reaped */
    char line[SR_PROC_LINE_MAX]; /* the readiness line, without the newline */
    size_t nline;
    int ready;        /* 1 once a full line arrived */
    pid_t pgid;       /* its process group (its pid), 0 if unknown */
    sr_proc_reg *reg; /* the registry it is listed in, or NULL */
} sr_proc;

#define SR_PROC_INIT                                                                               \
    {                                                                                              \
        -1, -1, -1, 0, 0, {0}, 0, 0, 0, NULL                                                       \
    }

/* Spawns `path` with `argv` (NULL-terminated; argv[0] is the name shown). */
int sr_proc_spawn(sr_proc *p, const char *path, char *const argv[], sr_err *err);

/* As sr_proc_spawn, and lists the child in `reg` (NULL: none) until sr_procs_stop. The sr_proc
 * must stay at its address meanwhile. Errors also SR_E_NOMEM (the child is then stopped). */
int sr_proc_spawn_in(sr_proc *p, sr_proc_reg *reg, const char *path, char *const argv[],
                     sr_err *err);

/* An empty registry; 0 or SR_E_NOMEM. */
int sr_proc_reg_init(sr_proc_reg *r);

/* Frees the registry's list (its children must have been stopped). */
void sr_proc_reg_destroy(sr_proc_reg *r);

/* Sends `sig` to the process group of every registered child not yet reaped; returns how many.
 * Safe from any thread. */
int sr_proc_reg_signal(sr_proc_reg *r, int sig);

/* Sends `sig` to the child's process group (its pid if it has none); 0, or -1 with errno. Not
 * after the child was reaped. */
int sr_proc_signal(const sr_proc *p, int sig);

/* Waits for the readiness lines of n children, all within timeout_ms. On error, err names the
 * first child (index) that failed. */
int sr_procs_wait_ready(sr_proc *ps, size_t n, int timeout_ms, sr_err *err);

/* Reaps without blocking: 1 if the child has exited (status in p->status), else 0. */
int sr_proc_poll_exit(sr_proc *p);

/*
 * Stops n children: SIGTERM to each, then waits up to grace_ms (shared) for all; any still
 * running gets SIGKILL and is reaped. Returns the number killed with SIGKILL (0: all stopped
 * cleanly). Releases the descriptors.
 */
int sr_procs_stop(sr_proc *ps, size_t n, int grace_ms);

/* Describes how a reaped child ended ("exited with status 2", "killed by signal 9"). */
const char *sr_proc_describe(const sr_proc *p, char *buf, size_t cap);

/*
 * The last lines of a child's log file `path` that fit in out[cap], on one line: newlines become
 * " | ", other control characters '?', a line cut at the front is dropped. "" when the file cannot
 * be read or is empty. For messages that say why a child ended (the cause is in its log).
 */
const char *sr_proc_log_tail(const char *path, char *out, size_t cap);

/* The path of the running executable (for spawning itself), into buf. */
int sr_proc_self_exe(char *buf, size_t cap, sr_err *err);

/*
 * The malloc policy of the harness process (every command but `engine`); main() calls it once,
 * before any thread starts.
 * Blocks up to SR_PROC_MMAP_THRESHOLD come from the heap and freed heap memory is kept for
 * reuse (up to SR_PROC_TRIM_THRESHOLD at the top of a heap) instead of going back to the kernel
 * after every batch: each rollout's result buffers (route traces of tens to hundreds of KiB) then
 * reuse the previous batch's pages instead of page-faulting fresh ones (bench/README.md,
 * "Profile findings"). Resident memory settles at the working set's peak. Process-wide by
 * nature (glibc's mallopt); a no-op under valgrind.
 */
#define SR_PROC_MMAP_THRESHOLD ((int)64 << 20)
#define SR_PROC_TRIM_THRESHOLD ((int)512 << 20)
void sr_proc_tune_malloc(void);

#endif /* SR_PROCS_H */
