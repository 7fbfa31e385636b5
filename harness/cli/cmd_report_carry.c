/*
 * report --merge: carrying what the shards' reports link to into the merged folder
 * (cmd_report_priv.h). The merged report.html must work from the merged folder alone (a CI job
 * often uploads only that folder), so every file or folder a shard's own report.html links to
 * is copied to OUT/shard-K/<the same relative path>, and the merged run's paths are pointed at
 * the copies. The links are read from the shard's report as rendered now, so whatever a
 * reporter links (artifacts, expanded scenario, engine logs, failure evidence) is carried
 * without this file knowing it.
 *
 * Everything is opened relative to a folder descriptor with O_NOFOLLOW: a link in a shard's
 * folder is never followed (a results.json may be crafted, and a shard folder may hold
 * symbolic links); only regular files and folders are copied. The copy is bounded
 * (SR_CARRY_MAX_BYTES in all, SR_CARRY_MAX_DEPTH, SR_CARRY_MAX_ENTRIES); what does not fit is
 * not carried, and the merged run then names its path in the shard's folder as text, not as a
 * link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"
#include "cmd_report_priv.h"

#define SR_CARRY_MAX_BYTES   ((uint64_t)256 << 20)
#define SR_CARRY_MAX_DEPTH   16
#define SR_CARRY_MAX_ENTRIES 100000

/* What was carried: the links copied in full, per shard index, as relative paths. */
typedef struct carried {
    char **rel;
    int *shard; /* the shard's k */
    size_t n, cap;
} carried;

typedef struct budget {
    uint64_t bytes;
    size_t entries;
    size_t skipped; /* symbolic links and special files inside a carried folder, left out */
    int cut;        /* something did not fit */
} budget;

static int copy_tree(int sdir, int ddir, const char *name, int depth, budget *b);

/* Copies one regular file (open as `fd`) to ddir/name; 0, or -1 when it did not fit or failed. */
static int copy_file(int fd, const struct stat *st, int ddir, const char *name, budget *b)
{
    if (b->bytes + (uint64_t)st->st_size > SR_CARRY_MAX_BYTES) {
        b->cut = 1;
        return -1;
    }
    int out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (out < 0)
        return errno == EEXIST ? 0 : -1; /* carried already, inside a linked folder */
    char buf[65536];
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -1 : 0;
            break;
        }
        if (b->bytes + (uint64_t)r > SR_CARRY_MAX_BYTES || write(out, buf, (size_t)r) != r) {
            b->cut |= b->bytes + (uint64_t)r > SR_CARRY_MAX_BYTES;
            rc = -1;
            break;
        }
        b->bytes += (uint64_t)r;
    }
    if (close(out) != 0)
        rc = -1;
    return rc;
}

/* Copies the entries of the open folder `fd` into ddir/name. */
static int copy_folder(int fd, int ddir, const char *name, int depth, budget *b)
{
    if (mkdirat(ddir, name, 0777) != 0 && errno != EEXIST)
        return -1;
    int dst = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int lfd = dst < 0 ? -1 : dup(fd);
    DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        if (dst >= 0)
            close(dst);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (copy_tree(fd, dst, e->d_name, depth + 1, b))
            rc = -1;
    }
    closedir(d);
    close(dst);
    return rc;
}

/* Copies sdir/name (a regular file or a folder, never a symbolic link) to ddir/name. */
static int copy_tree(int sdir, int ddir, const char *name, int depth, budget *b)
{
    if (depth > SR_CARRY_MAX_DEPTH || ++b->entries > SR_CARRY_MAX_ENTRIES) {
        b->cut = 1;
        return -1;
    }
    int fd = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ELOOP && depth > 0) {
        b->skipped++; /* a symbolic link inside a linked folder: left out, never followed */
        return 0;
    }
    if (fd < 0)
        return -1;
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) != 0)
        rc = -1;
    else if (S_ISREG(st.st_mode))
        rc = copy_file(fd, &st, ddir, name, b);
    else if (S_ISDIR(st.st_mode))
        rc = copy_folder(fd, ddir, name, depth, b);
    else if (depth > 0) {
        b->skipped++; /* a FIFO, socket or device inside a linked folder */
        rc = 0;
    }
    close(fd);
    return rc;
}

/*
 * A link stays inside the folder it is relative to: not empty, no leading '/', no ".."
 * segment, no scheme (':' before the first '/'), no backslash; report.html links only such.
 */
static int inside(const char *p)
{
    size_t first = strcspn(p, "/");
    if (!*p || *p == '/' || memchr(p, ':', first) || strchr(p, '\\'))
        return 0;
    for (const char *s = p; *s;) {
        size_t n = strcspn(s, "/");
        if ((n == 2 && s[0] == '.' && s[1] == '.') || (n == 1 && s[0] == '.'))
            return 0;
        s += n + (s[n] == '/');
    }
    return 1;
}

/* Copies base/rel to OUT/shard-K/rel: every folder of rel is opened without following links. */
static int carry_one(int src, int dst, const char *rel, budget *b)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s", rel) >= (int)sizeof(path))
        return -1;
    int s = dup(src), d = dup(dst), rc = 0;
    char *part = path, *slash;
    while (rc == 0 && s >= 0 && d >= 0 && (slash = strchr(part, '/')) != NULL) {
        *slash = '\0';
        if (*part) {
            int ns = openat(s, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (ns >= 0 && mkdirat(d, part, 0777) != 0 && errno != EEXIST) {
                close(ns);
                ns = -1;
            }
            int nd = ns < 0 ? -1 : openat(d, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            close(s);
            close(d);
            s = ns;
            d = nd;
        }
        part = slash + 1;
    }
    rc = s < 0 || d < 0 || !*part ? -1 : copy_tree(s, d, part, 0, b);
    if (s >= 0)
        close(s);
    if (d >= 0)
        close(d);
    return rc;
}

/* Decodes the character references report.html writes in attributes, in place. */
static void unescape(char *s)
{
    static const struct {
        const char *ref;
        char c;
    } refs[] = {{"&amp;", '&'},  {"&lt;", '<'},  {"&gt;", '>'},   {"&quot;", '"'}, {"&apos;", '\''},
                {"&#39;", '\''}, {"&#9;", '\t'}, {"&#10;", '\n'}, {"&#13;", '\r'}};
    char *w = s;
    while (*s) {
        size_t i = 0, n = sizeof(refs) / sizeof(refs[0]);
        while (*s == '&' && i < n && strncmp(s, refs[i].ref, strlen(refs[i].ref)) != 0)
            i++;
        if (*s == '&' && i < n) {
            *w++ = refs[i].c;
            s += strlen(refs[i].ref);
        } else {
            *w++ = *s++;
        }
    }
    *w = '\0';
}

static int note(carried *c, const char *rel, int k)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        char **r = realloc(c->rel, cap * sizeof(char *));
        if (r)
            c->rel = r;
        int *s = r ? realloc(c->shard, cap * sizeof(int)) : NULL;
        if (!s)
            return -1;
        c->shard = s;
        c->cap = cap;
    }
    if (!(c->rel[c->n] = strdup(rel)))
        return -1;
    c->shard[c->n++] = k;
    return 0;
}

/* 1 if rel of shard k, or a folder holding it, was carried. */
static int was_carried(const carried *c, int k, const char *rel)
{
    for (size_t i = 0; i < c->n; i++) {
        size_t n = strlen(c->rel[i]);
        if (c->shard[i] == k && strncmp(rel, c->rel[i], n) == 0 && (!rel[n] || rel[n] == '/'))
            return 1;
    }
    return 0;
}

/* Every link of shard `run`'s report.html, carried from `dir` into dst (OUT/shard-K). */
static int carry_shard(carried *c, const sr_run_result *run, int src, int dst, budget *b,
                       size_t *failed)
{
    sr_buf html = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    if (sr_report_render(&html, run, SR_REPORT_HTML, &err)) {
        fprintf(stderr, "syncroll report: %s [%s]\n", err.msg, sr_code_name(err.code));
        sr_buf_release(&html);
        return -1;
    }
    int rc = 0;
    for (const char *p = html.data; !rc && p && (p = strstr(p, "href=\"")) != NULL;) {
        p += 6;
        const char *end = strchr(p, '"');
        if (!end)
            break;
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "%.*s", (int)(end - p < PATH_MAX - 1 ? end - p : 0), p);
        p = end;
        unescape(rel);
        if (rel[0] == '#' || !inside(rel) || was_carried(c, run->header.shard_k, rel))
            continue;
        if (carry_one(src, dst, rel, b) == 0)
            rc = note(c, rel, run->header.shard_k);
        else
            ++*failed;
    }
    sr_buf_release(&html);
    return rc;
}

/* A path of a shard's run folder relative to it, as report.html links it; else `path`. */
static const char *relative(const sr_run_result *run, const char *path)
{
    const char *d = run->header.out_dir;
    size_t n = d ? strlen(d) : 0;
    if (n && strncmp(path, d, n) == 0 && path[n] == '/' && path[n + 1])
        return path + n + 1;
    return path;
}

/* Points one path of a merged scenario at its copy, or names the shard's file as text. */
static int repoint(char **path, const sr_run_result *shard, const char *dir, const char *out,
                   const carried *c)
{
    if (!*path)
        return 0;
    const char *rel = relative(shard, *path);
    char buf[3 * PATH_MAX];
    if (was_carried(c, shard->header.shard_k, rel))
        snprintf(buf, sizeof(buf), "%s/shard-%d/%s", out, shard->header.shard_k, rel);
    else if (rel != *path) {
        /* Not carried: the absolute path in the shard's folder, which report.html shows as
         * text (a relative path there would be a link that does not resolve). */
        char *abs = realpath(dir, NULL);
        snprintf(buf, sizeof(buf), "%s/%s", abs ? abs : dir, rel);
        free(abs);
    } else
        return 0;
    return sr_result_set_str(path, buf, NULL);
}

int sr_report_cli_carry(sr_run_result *m, sr_run_result *const *shards, const char *const *dirs,
                        size_t n, const char *out)
{
    carried c = {0};
    budget b = {0};
    size_t failed = 0;
    int ofd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = ofd < 0 ? -1 : 0;
    for (size_t i = 0; !rc && i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "shard-%d", shards[i]->header.shard_k);
        int src = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int dst = src < 0 || (mkdirat(ofd, name, 0777) != 0 && errno != EEXIST)
                      ? -1
                      : openat(ofd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src >= 0 && dst >= 0)
            rc = carry_shard(&c, shards[i], src, dst, &b, &failed);
        else
            failed++;
        if (src >= 0)
            close(src);
        if (dst >= 0)
            close(dst);
    }
    if (ofd >= 0)
        close(ofd);
    for (size_t j = 0; !rc && j < m->n_scenarios; j++) {
        sr_scenario_result *s = m->scenarios[j];
        size_t i = 0;
        while (i < n && shards[i]->header.shard_k != s->shard)
            i++;
        if (i == n)
            continue;
        rc = repoint(&s->artifacts, shards[i], dirs[i], out, &c) ||
             repoint(&s->expanded, shards[i], dirs[i], out, &c);
        for (size_t k = 0; !rc && k < s->n_engines; k++)
            rc = repoint(&s->engines[k].log, shards[i], dirs[i], out, &c);
    }
    if (rc)
        fprintf(stderr, "syncroll report: cannot carry the shards' links into %s [io.error]\n",
                out);
    else
        printf("carried %zu linked file%s and folder%s (%.1f MiB) into %s/shard-*%s\n", c.n,
               c.n == 1 ? "" : "s", c.n == 1 ? "" : "s", (double)b.bytes / 1048576.0, out,
               b.cut ? "; the rest is over the 256 MiB bound" : "");
    if (!rc && b.skipped)
        printf("%zu symbolic link%s or special file%s inside carried folders left out\n", b.skipped,
               b.skipped == 1 ? "" : "s", b.skipped == 1 ? "" : "s");
    if (!rc && failed)
        printf("%zu link%s not carried (over the bound, unreadable or a symbolic link): the "
               "merged report names them in the shard folders\n",
               failed, failed == 1 ? "" : "s");
    for (size_t i = 0; i < c.n; i++)
        free(c.rel[i]);
    free(c.rel);
    free(c.shard);
    return rc;
}
