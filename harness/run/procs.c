#include "procs.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sr_clock.h"

extern char **environ;

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

static int spawn_actions(posix_spawn_file_actions_t *fa, posix_spawnattr_t *at, int wfd)
{
    int rc = posix_spawn_file_actions_init(fa);
    if (rc)
        return rc;
    rc = posix_spawnattr_init(at);
    if (rc)
        return rc;
    rc = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(fa, wfd, SR_PROC_READY_FD);
    if (!rc)
        rc = posix_spawn_file_actions_addclosefrom_np(fa, SR_PROC_READY_FD + 1);
    sigset_t empty, deflt;
    sigemptyset(&empty);
    sigemptyset(&deflt);
    sigaddset(&deflt, SIGTERM);
    sigaddset(&deflt, SIGINT);
    sigaddset(&deflt, SIGPIPE);
    sigaddset(&deflt, SIGCHLD);
    sigaddset(&deflt, SIGXFSZ);
    if (!rc)
        rc = posix_spawnattr_setsigmask(at, &empty);
    if (!rc)
        rc = posix_spawnattr_setsigdefault(at, &deflt);
    /* A group of its own (pgid 0: the child's pid), signalled as a whole (procs.h). */
    if (!rc)
        rc = posix_spawnattr_setpgroup(at, 0);
    if (!rc)
        rc = posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                              POSIX_SPAWN_SETPGROUP);
    return rc;
}

/* The environment of a child: ours with SR_PROC_PARENT_ENV set to our pid (caller frees the
 * array and its last entry, envp[*last]). */
static char **child_env(size_t *last)
{
    size_t n = 0, m = 0;
    size_t klen = strlen(SR_PROC_PARENT_ENV);
    while (environ && environ[n])
        n++;
    char **v = calloc(n + 2, sizeof(char *));
    char *mine = malloc(klen + 24);
    if (!v || !mine) {
        free(v);
        free(mine);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], SR_PROC_PARENT_ENV, klen) != 0 || environ[i][klen] != '=')
            v[m++] = environ[i];
    snprintf(mine, klen + 24, "%s=%ld", SR_PROC_PARENT_ENV, (long)getpid());
    v[m] = mine;
    *last = m;
    return v;
}

int sr_proc_spawn(sr_proc *p, const char *path, char *const argv[], sr_err *err)
{
    sr_proc z = SR_PROC_INIT;
    *p = z;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return sr_err_set(err, SR_E_PROC_SPAWN, "pipe: %s", strerror(errno));
    /* dup2 onto the same number would keep close-on-exec, so keep the write end elsewhere. */
    if (fds[1] == SR_PROC_READY_FD || fds[0] == SR_PROC_READY_FD) {
        int moved = fcntl(fds[1], F_DUPFD_CLOEXEC, SR_PROC_READY_FD + 1);
        int movedr = fcntl(fds[0], F_DUPFD_CLOEXEC, SR_PROC_READY_FD + 1);
        close(fds[0]);
        close(fds[1]);
        fds[0] = movedr;
        fds[1] = moved;
        if (moved < 0 || movedr < 0) {
            if (moved >= 0)
                close(moved);
            if (movedr >= 0)
                close(movedr);
            return sr_err_set(err, SR_E_PROC_SPAWN, "fcntl: %s", strerror(errno));
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = spawn_actions(&fa, &at, fds[1]);
    pid_t pid = -1;
    size_t last = 0;
    char **env = child_env(&last);
    if (!rc && !env)
        rc = ENOMEM;
    if (!rc)
        rc = posix_spawn(&pid, path, &fa, &at, argv, env);
    if (env)
        free(env[last]);
    free(env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (rc) {
        close(fds[0]);
        return sr_err_set(err, SR_E_PROC_SPAWN, "cannot start %s: %s", path, strerror(rc));
    }
    p->pid = pid;
    p->pgid = pid;
    p->ready_fd = fds[0];
    p->pidfd = open_pidfd(pid);
    return 0;
}

int sr_proc_reg_init(sr_proc_reg *r)
{
    memset(r, 0, sizeof(*r));
    return pthread_mutex_init(&r->mu, NULL) ? SR_E_NOMEM : 0;
}

void sr_proc_reg_destroy(sr_proc_reg *r)
{
    free(r->v);
    r->v = NULL;
    r->n = r->cap = 0;
    pthread_mutex_destroy(&r->mu);
}

int sr_proc_signal(const sr_proc *p, int sig)
{
    if (p->pid <= 0) {
        errno = ESRCH;
        return -1;
    }
    return kill(p->pgid > 0 ? -p->pgid : p->pid, sig);
}

int sr_proc_reg_signal(sr_proc_reg *r, int sig)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n; i++)
        if (!r->v[i]->reaped && r->v[i]->pid > 0)
            n += sr_proc_signal(r->v[i], sig) == 0;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static void unregister(sr_proc *p)
{
    sr_proc_reg *r = p->reg;
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i] == p) {
            r->v[i] = r->v[--r->n];
            break;
        }
    pthread_mutex_unlock(&r->mu);
    p->reg = NULL;
}

int sr_proc_spawn_in(sr_proc *p, sr_proc_reg *reg, const char *path, char *const argv[],
                     sr_err *err)
{
    int rc = sr_proc_spawn(p, path, argv, err);
    if (rc || !reg)
        return rc;
    pthread_mutex_lock(&reg->mu);
    if (reg->n == reg->cap) {
        size_t cap = reg->cap ? reg->cap * 2 : 64;
        sr_proc **v = realloc(reg->v, cap * sizeof(*v));
        if (v) {
            reg->v = v;
            reg->cap = cap;
        }
    }
    int ok = reg->n < reg->cap;
    if (ok) {
        reg->v[reg->n++] = p;
        p->reg = reg;
    }
    pthread_mutex_unlock(&reg->mu);
    if (!ok) {
        sr_procs_stop(p, 1, 0);
        return sr_err_set(err, SR_E_NOMEM, "cannot list the child %s", path);
    }
    return 0;
}

/*
 * Reaps the child if it has exited (waiting for that when `block`): 1 once reaped, else 0.
 * The exit is seen first without reaping (WNOWAIT), so the group's leftovers can be killed while
 * the pid is still ours, and the reaping itself happens under the registry's lock.
 */
static int reap(sr_proc *p, int block)
{
    if (p->reaped || p->pid <= 0)
        return 1;
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    int r;
    do
        r = waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno == ECHILD) {
        p->reaped = 1; /* reaped elsewhere: its pid is no longer ours to signal */
        return 1;
    }
    if (r < 0)
        return 0;
    if (si.si_pid == 0)
        return 0; /* still running */
    if (p->pgid > 0)
        kill(-p->pgid, SIGKILL);
    if (p->reg)
        pthread_mutex_lock(&p->reg->mu);
    int st = 0;
    if (waitpid(p->pid, &st, 0) == p->pid)
        p->status = st;
    p->reaped = 1;
    if (p->reg)
        pthread_mutex_unlock(&p->reg->mu);
    return 1;
}

int sr_proc_poll_exit(sr_proc *p)
{
    return reap(p, 0);
}

const char *sr_proc_describe(const sr_proc *p, char *buf, size_t cap)
{
    if (!p->reaped)
        snprintf(buf, cap, "still running");
    else if (WIFEXITED(p->status))
        snprintf(buf, cap, "exited with status %d", WEXITSTATUS(p->status));
    else if (WIFSIGNALED(p->status))
        snprintf(buf, cap, "killed by signal %d", WTERMSIG(p->status));
    else
        snprintf(buf, cap, "ended with wait status %d", p->status);
    return buf;
}

const char *sr_proc_log_tail(const char *path, char *out, size_t cap)
{
    if (!cap)
        return out;
    out[0] = '\0';
    char raw[512];
    size_t want = cap / 2 < sizeof(raw) ? cap / 2 : sizeof(raw); /* room for " | " expansions */
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -1;
    if (fd < 0)
        return out;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t at = end > (off_t)want ? end - (off_t)want : 0;
    ssize_t n = end > 0 ? pread(fd, raw, (size_t)(end - at), at) : 0;
    close(fd);
    if (n <= 0)
        return out;
    size_t i = 0, o = 0;
    if (at > 0) /* the first line is cut: start after its end */
        while (i < (size_t)n && raw[i++] != '\n')
            ;
    while ((size_t)n > i && (raw[n - 1] == '\n' || raw[n - 1] == '\r'))
        n--;
    for (; i < (size_t)n && o + 4 < cap; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '\n') {
            memcpy(out + o, " | ", 3);
            o += 3;
        } else {
            out[o++] = c < 0x20 || c == 0x7F ? '?' : (char)c;
        }
    }
    out[o] = '\0';
    return out;
}

/* Reads what is available; returns 1 when the line is complete, -1 on EOF before it, else 0. */
static int read_line(sr_proc *p)
{
    char tmp[SR_PROC_LINE_MAX];
    ssize_t n = read(p->ready_fd, tmp, sizeof(tmp));
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -1;
    if (n == 0)
        return -1;
    for (ssize_t i = 0; i < n; i++) {
        if (tmp[i] == '\n') {
            p->line[p->nline] = '\0';
            p->ready = 1;
            close(p->ready_fd);
            p->ready_fd = -1;
            return 1;
        }
        if (p->nline + 1 < sizeof(p->line))
            p->line[p->nline++] = tmp[i];
    }
    return 0;
}

#define READY_EXIT_WAIT_MS   2000
#define READY_EXIT_WAIT_TEXT "2 s"

static int not_ready_error(sr_proc *p, size_t i, sr_err *err)
{
    char how[64];
    /* The pipe closed: the child is exiting or has exited. Its exit status is the cause the
     * user needs ("exited with status 2", "killed by signal 11"), so it is waited for, up to
     * READY_EXIT_WAIT_MS: a child that closed the pipe and lives on is said to be so. */
    int64_t until = (int64_t)sr_clock_ms() + READY_EXIT_WAIT_MS;
    while (!sr_proc_poll_exit(p) && !p->reaped && (int64_t)sr_clock_ms() < until)
        poll(NULL, 0, 5);
    if (p->ready_fd >= 0) {
        close(p->ready_fd);
        p->ready_fd = -1;
    }
    return sr_err_set_at(err, SR_E_PROC_EXITED, (int64_t)i,
                         "child %zu (pid %d) closed its readiness pipe before reporting ready "
                         "(%s%s)",
                         i, (int)p->pid, sr_proc_describe(p, how, sizeof(how)),
                         p->reaped ? "" : " " READY_EXIT_WAIT_TEXT " later");
}

int sr_procs_wait_ready(sr_proc *ps, size_t n, int timeout_ms, sr_err *err)
{
    int64_t deadline = (int64_t)sr_clock_ms() + timeout_ms;
    struct pollfd pfd[64];
    size_t idx[64];
    for (;;) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (ps[i].ready)
                continue;
            if (ps[i].ready_fd < 0)
                return not_ready_error(&ps[i], i, err);
            if (m < 64) {
                pfd[m].fd = ps[i].ready_fd;
                pfd[m].events = POLLIN;
                idx[m++] = i;
            }
        }
        if (m == 0)
            return 0;
        int64_t left = deadline - (int64_t)sr_clock_ms();
        if (left <= 0) {
            return sr_err_set_at(err, SR_E_PROC_READY, (int64_t)idx[0],
                                 "child %zu (pid %d) did not report ready within %d ms", idx[0],
                                 (int)ps[idx[0]].pid, timeout_ms);
        }
        int r = poll(pfd, m, (int)(left > 1000000 ? 1000000 : left));
        if (r < 0 && errno != EINTR)
            return sr_err_set(err, SR_E_PROC_SPAWN, "poll: %s", strerror(errno));
        for (size_t k = 0; r > 0 && k < m; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (read_line(&ps[idx[k]]) < 0)
                return not_ready_error(&ps[idx[k]], idx[k], err);
        }
    }
}

/* Waits until every child in ps is reaped or the deadline passes. */
static void wait_all(sr_proc *ps, size_t n, int64_t deadline)
{
    for (;;) {
        struct pollfd pfd[64];
        size_t m = 0, left_n = 0;
        for (size_t i = 0; i < n; i++) {
            if (ps[i].pid <= 0 || sr_proc_poll_exit(&ps[i]))
                continue;
            left_n++;
            if (ps[i].pidfd >= 0 && m < 64) {
                pfd[m].fd = ps[i].pidfd;
                pfd[m++].events = POLLIN;
            }
        }
        int64_t left = deadline - (int64_t)sr_clock_ms();
        if (left_n == 0 || left <= 0)
            return;
        /* Without pidfds (old kernels), poll in short steps. */
        int step = m == left_n ? (int)left : (left < 5 ? (int)left : 5);
        if (poll(m ? pfd : NULL, m, step) < 0 && errno != EINTR)
            return;
    }
}

int sr_procs_stop(sr_proc *ps, size_t n, int grace_ms)
{
    for (size_t i = 0; i < n; i++)
        if (ps[i].pid > 0 && !sr_proc_poll_exit(&ps[i]))
            sr_proc_signal(&ps[i], SIGTERM);
    wait_all(ps, n, (int64_t)sr_clock_ms() + grace_ms);
    int killed = 0;
    for (size_t i = 0; i < n; i++) {
        if (ps[i].pid > 0 && !sr_proc_poll_exit(&ps[i])) {
            sr_proc_signal(&ps[i], SIGKILL);
            reap(&ps[i], 1);
            killed++;
        }
        unregister(&ps[i]);
        if (ps[i].ready_fd >= 0)
            close(ps[i].ready_fd);
        if (ps[i].pidfd >= 0)
            close(ps[i].pidfd);
        ps[i].ready_fd = ps[i].pidfd = -1;
    }
    return killed;
}

int sr_proc_self_exe(char *buf, size_t cap, sr_err *err)
{
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0 || (size_t)n >= cap - 1)
        return sr_err_set(err, SR_E_PROC_SPAWN, "cannot find the running executable");
    buf[n] = '\0';
    return 0;
}

void sr_proc_tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, SR_PROC_MMAP_THRESHOLD);
    mallopt(M_TRIM_THRESHOLD, SR_PROC_TRIM_THRESHOLD);
}
