/* Room for the reports on a full disk (cmd_run_priv.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/result.h"
#include "cmd_run_priv.h"

/* Removes the files of the folder `name` under the open folder dfd, then the folder; adds the
 * bytes removed to *bytes. Nothing is followed through a symbolic link. */
static void remove_version(int dfd, const char *name, unsigned long long *bytes)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    struct stat st;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
            fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            unlinkat(fd, de->d_name, 0) == 0)
            *bytes += (unsigned long long)st.st_size;
    closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

int sr_run_drop_checkpoints(const sr_run_result *run)
{
    int dropped = 0;
    for (size_t i = 0; i < run->n_scenarios; i++) {
        const sr_scenario_result *s = run->scenarios[i];
        char sync[4200];
        if (!s->artifacts ||
            (size_t)snprintf(sync, sizeof(sync), "%s/sync", s->artifacts) >= sizeof(sync))
            continue;
        int fd = open(sync, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        unsigned long long bytes = 0;
        struct dirent *de;
        struct stat st;
        while ((de = readdir(d)))
            if (de->d_name[0] != '.' && fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISDIR(st.st_mode)) {
                remove_version(fd, de->d_name, &bytes);
                rewinddir(d); /* the listing changed under readdir */
            }
        closedir(d);
        if (bytes) {
            fprintf(stderr,
                    "syncroll run: no room for the reports: removed the weight versions kept in "
                    "%s (%llu bytes; the repro command writes them again)\n",
                    sync, bytes);
            dropped++;
        }
    }
    return dropped;
}
