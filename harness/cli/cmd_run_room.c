/* Removing folders without following links, and room for the reports on a full disk
 * (cmd_run_priv.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/result.h"
#include "cmd_run_priv.h"

/*
 * Empties the folder open as `fd` (closed here): every entry is removed relative to it
 * (unlinkat), subfolders first emptied through openat with O_NOFOLLOW | O_DIRECTORY, so a
 * symbolic link is removed as a link and never followed out of the run folder. `depth` bounds
 * the nesting (a work folder is shallow: artifacts/<id>/sync/<version>/...). Goes on past an
 * entry it cannot remove; returns 0, or the errno of the first failure with its entry in `what`.
 */
static int empty_folder(int fd, int depth, char *what, size_t cap)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return e;
    }
    int first = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            continue;
        int rc = errno;
        if (rc == EISDIR || rc == EPERM) {
            int sub = depth < 32 ? openat(dirfd(d), e->d_name,
                                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                 : -1;
            rc = sub < 0 ? (depth < 32 ? errno : ELOOP) : empty_folder(sub, depth + 1, NULL, 0);
            if (sub >= 0 && unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0 && !rc)
                rc = errno;
        }
        if (rc && !first) {
            first = rc;
            if (what)
                snprintf(what, cap, "%s", e->d_name);
        }
    }
    closedir(d);
    return first;
}

int sr_run_remove_at(int dfd, const char *name, const char *shown, sr_err *err)
{
    char what[256] = "";
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = fd < 0 ? errno : empty_folder(fd, 0, what, sizeof(what));
    if (!e && unlinkat(dfd, name, AT_REMOVEDIR) != 0)
        e = errno;
    if (e)
        return sr_err_set(err, SR_E_IO, "%s: cannot remove%s%s: %s", shown, what[0] ? " " : "",
                          what, strerror(e));
    return 0;
}

int sr_run_remove_folder(const char *dir, sr_err *err)
{
    return sr_run_remove_at(AT_FDCWD, dir, dir, err);
}

/* A scenario keeps a handful of versions; a sync/ folder with more is not ours to sweep. */
#define SR_ROOM_MAX_VERSIONS 1024

/*
 * The names of the folders (not starting with '.') in the open folder `fd`, listed once before
 * anything is removed, so that a folder that stays is not found again. At most
 * SR_ROOM_MAX_VERSIONS; returns how many, *names allocated (free each and the array).
 */
static size_t list_versions(int fd, char ***names)
{
    *names = NULL;
    int lfd = dup(fd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        return 0;
    }
    char **v = calloc(SR_ROOM_MAX_VERSIONS, sizeof(*v));
    size_t n = 0;
    struct dirent *de;
    struct stat st;
    while (v && n < SR_ROOM_MAX_VERSIONS && (de = readdir(d)))
        if (de->d_name[0] != '.' && fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode) && (v[n] = strdup(de->d_name)) != NULL)
            n++;
    closedir(d);
    *names = v;
    return n;
}

/* Removes each version folder of the sync/ folder `sync` once; returns how many went. */
static size_t drop_versions(const char *sync, FILE *say)
{
    int fd = open(sync, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char **names;
    size_t n = list_versions(fd, &names), removed = 0;
    for (size_t i = 0; i < n; i++) {
        char shown[4400];
        snprintf(shown, sizeof(shown), "%s/%s", sync, names[i]);
        sr_err e = SR_ERR_INIT;
        if (sr_run_remove_at(fd, names[i], shown, &e) == 0)
            removed++;
        else
            fprintf(say, "syncroll run: no room for the reports: a kept weight version stays: %s\n",
                    e.msg);
        free(names[i]);
    }
    free(names);
    close(fd);
    return removed;
}

int sr_run_drop_checkpoints(const sr_run_result *run, FILE *say)
{
    int dropped = 0;
    for (size_t i = 0; i < run->n_scenarios; i++) {
        const sr_scenario_result *s = run->scenarios[i];
        char sync[4200];
        if (!s->artifacts ||
            (size_t)snprintf(sync, sizeof(sync), "%s/sync", s->artifacts) >= sizeof(sync))
            continue;
        size_t removed = drop_versions(sync, say);
        if (removed) {
            fprintf(say,
                    "syncroll run: no room for the reports: removed the weight versions kept in "
                    "%s (%zu folder(s); the repro command writes them again)\n",
                    sync, removed);
            dropped++;
        }
    }
    return dropped;
}
