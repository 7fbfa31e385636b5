/*
 * path: opening a folder by a path without following a symbolic link in any of its components.
 *
 * Checking a path (realpath, a prefix test) and then opening it by name leaves a window in which
 * an upper folder can be swapped for a symbolic link; O_NOFOLLOW guards only the last component.
 * sr_path_open_dir walks the path one component at a time, each opened with O_NOFOLLOW relative
 * to the folder before it, so no link anywhere in the path is ever followed: the folder it opens
 * is the one the path names in the tree as it is, or the call fails. Callers that confine a path
 * (the mock engine's sync_dirs) pass the canonical path they checked, which holds no link.
 *
 * Errors: SR_E_SYMLINK naming the component that is a link; SR_E_IO with the OS reason (and
 * *os_errno, when not NULL, its errno: ENOENT for a missing component, ENOTDIR for a file);
 * SR_E_INVAL for an empty path or one longer than 4095 bytes or with a component longer than
 * NAME_MAX. Thread-safe: no shared state.
 */
#ifndef SR_PATH_H
#define SR_PATH_H

#include "sr_err.h"

/*
 * Opens folder `path` (absolute, or relative to the working folder) read-only with O_DIRECTORY
 * and O_CLOEXEC into *fd (the caller closes it; -1 on error), following no symbolic link. With
 * `create` the last component is made (mode 0755) when missing; the folders above must exist.
 */
int sr_path_open_dir(int *fd, const char *path, int create, int *os_errno, sr_err *err);

#endif /* SR_PATH_H */
