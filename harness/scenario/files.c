/* Finding scenario files under paths (scenario.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scenario.h"

/* Deepest directory nesting searched (a guard against symlink loops). */
#define MAX_DEPTH 32

typedef struct flist {
    char **v;
    size_t n, cap;
} flist;

static int push(flist *l, const char *path, sr_err *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        char **v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return sr_err_set(err, SR_E_NOMEM, "cannot grow the file list");
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path)))
        return sr_err_set(err, SR_E_NOMEM, "cannot copy a path");
    l->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int walk(flist *l, const char *dir, int depth, sr_err *err)
{
    if (depth > MAX_DEPTH)
        return sr_err_set(err, SR_E_IO, "%s: nested more than %d directories deep", dir, MAX_DEPTH);
    DIR *d = opendir(dir);
    if (!d)
        return sr_err_set(err, SR_E_IO, "%s: cannot read the directory: %s", dir, strerror(errno));
    flist here = {NULL, 0, 0};
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            rc = push(&here, e->d_name, err);
    closedir(d);
    if (here.n)
        qsort(here.v, here.n, sizeof(char *), by_name);
    for (size_t i = 0; !rc && i < here.n; i++) {
        char path[4096];
        struct stat st;
        int len =
            snprintf(path, sizeof(path), "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", here.v[i]);
        if (len < 0 || (size_t)len >= sizeof(path))
            rc = sr_err_set(err, SR_E_IO, "%s/%s: path too long", dir, here.v[i]);
        else if (stat(path, &st) != 0)
            rc = sr_err_set(err, SR_E_IO, "%s: cannot stat: %s", path, strerror(errno));
        else if (S_ISDIR(st.st_mode))
            rc = walk(l, path, depth + 1, err);
        else if (S_ISREG(st.st_mode) && ends_with(path, ".json") && !ends_with(path, ".field.json"))
            rc = push(l, path, err);
    }
    sr_scenario_files_free(here.v, here.n);
    return rc;
}

int sr_scenario_files(char ***out, size_t *n, char *const *paths, size_t n_paths, sr_err *err)
{
    flist l = {NULL, 0, 0};
    int rc = 0;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; !rc && i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0)
            rc = sr_err_set(err, SR_E_IO, "%s: %s", paths[i], strerror(errno));
        else if (S_ISDIR(st.st_mode))
            rc = walk(&l, paths[i], 0, err);
        else
            rc = push(&l, paths[i], err);
    }
    if (rc) {
        sr_scenario_files_free(l.v, l.n);
        return rc;
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

void sr_scenario_files_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}
