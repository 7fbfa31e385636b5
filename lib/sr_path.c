/* Folders opened component by component, never through a symbolic link (sr_path.h). */
#include "sr_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_CAP 4096

/* Opens component `name` of folder `at`: 0 with *out, or -1 with errno. A component that is a
 * link gives ELOOP (O_NOFOLLOW with O_DIRECTORY), or ENOTDIR on some kernels: told apart by the
 * caller with fstatat. */
static int open_component(int at, const char *name, int create_it, int *out)
{
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create_it) {
        if (mkdirat(at, name, 0755) != 0 && errno != EEXIST)
            return -1;
        fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    *out = fd;
    return fd < 0 ? -1 : 0;
}

static int is_link(int at, const char *name)
{
    struct stat st;
    return fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

int sr_path_open_dir(int *fd, const char *path, int create, int *os_errno, sr_err *err)
{
    *fd = -1;
    if (os_errno)
        *os_errno = 0;
    size_t len = path ? strlen(path) : 0;
    if (len == 0 || len >= PATH_CAP)
        return sr_err_set(err, SR_E_INVAL, "folder path is empty or longer than %d bytes",
                          PATH_CAP - 1);
    char buf[PATH_CAP];
    memcpy(buf, path, len + 1);
    int cur = openat(AT_FDCWD, path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0) {
        int e = errno;
        if (os_errno)
            *os_errno = e;
        return sr_err_set(err, SR_E_IO, "%.3000s: cannot open its first folder: %s", path,
                          strerror(e));
    }
    char *save = NULL;
    char *comp = strtok_r(buf, "/", &save);
    while (comp) {
        char *next = strtok_r(NULL, "/", &save);
        if (strcmp(comp, ".") == 0) {
            comp = next;
            continue;
        }
        if (strlen(comp) > NAME_MAX) {
            close(cur);
            return sr_err_set(err, SR_E_INVAL, "%.3000s: a component is longer than %d bytes", path,
                              NAME_MAX);
        }
        int nfd;
        if (open_component(cur, comp, create && !next, &nfd) != 0) {
            int e = errno;
            int link = is_link(cur, comp);
            close(cur);
            if (os_errno)
                *os_errno = link ? ELOOP : e;
            if (link)
                return sr_err_set(err, SR_E_SYMLINK,
                                  "%.3000s: component '%.255s' is a symbolic link (never "
                                  "followed)",
                                  path, comp);
            return sr_err_set(err, SR_E_IO, "%.3000s: cannot open '%.255s': %s", path, comp,
                              strerror(e));
        }
        close(cur);
        cur = nfd;
        comp = next;
    }
    *fd = cur;
    return 0;
}
