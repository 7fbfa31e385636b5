#include "procs.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
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
    if (!rc)
        rc = posix_spawnattr_setsigmask(at, &empty);
    if (!rc)
        rc = posix_spawnattr_setsigdefault(at, &deflt);
    if (!rc)
        rc = posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    return rc;
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
    if (!rc)
        rc = posix_spawn(&pid, path, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (rc) {
        close(fds[0]);
        return sr_err_set(err, SR_E_PROC_SPAWN, "cannot start %s: %s", path, strerror(rc));
    }
    p->pid = pid;
    p->ready_fd = fds[0];
    p->pidfd = open_pidfd(pid);
    return 0;
}

int sr_proc_poll_exit(sr_proc *p)
{
    if (p->reaped)
        return 1;
    if (p->pid <= 0)
        return 1;
    int st;
    pid_t r = waitpid(p->pid, &st, WNOHANG);
    if (r == p->pid) {
        p->reaped = 1;
        p->status = st;
        return 1;
    }
    return 0;
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

static int not_ready_error(sr_proc *p, size_t i, sr_err *err)
{
    char how[64];
    /* The pipe closed: the child is exiting or has exited; reap it if it is gone already. */
    sr_proc_poll_exit(p);
    if (p->ready_fd >= 0) {
        close(p->ready_fd);
        p->ready_fd = -1;
    }
    return sr_err_set_at(err, SR_E_PROC_EXITED, (int64_t)i,
                         "child %zu (pid %d) closed its readiness pipe before reporting ready (%s)",
                         i, (int)p->pid, sr_proc_describe(p, how, sizeof(how)));
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
            kill(ps[i].pid, SIGTERM);
    wait_all(ps, n, (int64_t)sr_clock_ms() + grace_ms);
    int killed = 0;
    for (size_t i = 0; i < n; i++) {
        if (ps[i].pid > 0 && !sr_proc_poll_exit(&ps[i])) {
            kill(ps[i].pid, SIGKILL);
            int st;
            while (waitpid(ps[i].pid, &st, 0) < 0 && errno == EINTR)
                ;
            ps[i].reaped = 1;
            ps[i].status = st;
            killed++;
        }
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
