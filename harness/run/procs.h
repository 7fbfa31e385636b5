/*
 * procs: child processes with a readiness pipe and a stop deadline (DESIGN.md §2).
 *
 * A child is started with posix_spawn (never fork: the caller may already run threads) with
 * stdin on /dev/null, stdout and stderr inherited, an empty signal mask and default dispositions,
 * and every descriptor of the parent closed except 0-2 and the write end of a fresh readiness
 * pipe, which the child finds at descriptor SR_PROC_READY_FD (pass e.g. "--ready-fd 3" in argv).
 * The child reports readiness by writing one line (at most SR_PROC_LINE_MAX - 1 bytes, e.g. its
 * port) and closing the descriptor. Every wait has a deadline. Stopping sends SIGTERM, waits up
 * to a grace period, then sends SIGKILL and reaps.
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

#include <stddef.h>
#include <sys/types.h>

#include "sr_err.h"

#define SR_PROC_READY_FD 3
#define SR_PROC_LINE_MAX 128

typedef struct sr_proc {
    pid_t pid;                   /* -1 when not running */
    int ready_fd;                /* read end of the readiness pipe, -1 once read or closed */
    int pidfd;                   /* -1 when the kernel has no pidfd_open */
    int reaped;                  /* 1 once waited for */
    int status;                  /* wait status once reaped */
    char line[SR_PROC_LINE_MAX]; /* the readiness line, without the newline */
    size_t nline;
    int ready; /* 1 once a full line arrived */
} sr_proc;

#define SR_PROC_INIT                                                                               \
    {                                                                                              \
        -1, -1, -1, 0, 0, {0}, 0, 0                                                                \
    }

/* Spawns `path` with `argv` (NULL-terminated; argv[0] is the name shown). */
int sr_proc_spawn(sr_proc *p, const char *path, char *const argv[], sr_err *err);

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
