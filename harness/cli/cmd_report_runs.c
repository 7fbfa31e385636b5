/* syncroll report over many run folders: loading one, --merge (shards) and --history (nights). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "report/history.h"
#include "report/report.h"
#include "cmd_report_priv.h"

/* Splits a run argument into its folder and its results.json path; -1 when too long. */
static int paths(const char *arg, char *dir, size_t dcap, char *json, size_t jcap)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(dir, dcap, "%s", arg);
        return (size_t)snprintf(json, jcap, "%s/results.json", arg) >= jcap ? -1 : 0;
    }
    snprintf(json, jcap, "%s", arg);
    const char *slash = strrchr(arg, '/');
    if (!slash)
        snprintf(dir, dcap, ".");
    else
        snprintf(dir, dcap, "%.*s", (int)(slash - arg), arg);
    return strlen(arg) >= jcap ? -1 : 0;
}

int sr_report_cli_load(sr_run_result **out, const char *arg, char *dir, size_t dcap)
{
    char json[4200];
    sr_err err = SR_ERR_INIT;
    if (paths(arg, dir, dcap, json, sizeof(json))) {
        fprintf(stderr, "syncroll report: path too long: %s\n", arg);
        return -1;
    }
    if (sr_report_load(out, json, &err)) {
        fprintf(stderr, "syncroll report: %s [%s]\n", err.msg, sr_code_name(err.code));
        return -1;
    }
    return 0;
}

/* ---- --merge ---- */

static void free_runs(sr_run_result **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        sr_run_result_free(v[i]);
    free(v);
}

/* Creates OUT and names the merged run after it; 0 or -1 (printed). */
static int prepare_out(sr_run_result *m, const char *out)
{
    sr_err err = SR_ERR_INIT;
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "syncroll report: cannot create %s: %s [io.error]\n", out, strerror(errno));
        return -1;
    }
    const char *base = strrchr(out, '/');
    base = base && base[1] ? base + 1 : out;
    if (sr_result_set_str(&m->header.out_dir, out, &err) ||
        sr_result_set_str(&m->header.run_id, base, &err)) {
        fprintf(stderr, "syncroll report: %s [%s]\n", err.msg, sr_code_name(err.code));
        return -1;
    }
    return 0;
}

/* Writes the merged run's reports into OUT; 0 or -1 (printed). */
static int write_merged(sr_run_result *m, const char *out)
{
    sr_err err = SR_ERR_INIT;
    if (sr_report_write(m, out, SR_REPORT_ALL, &err)) {
        fprintf(stderr, "syncroll report: %s [%s]\n", err.msg, sr_code_name(err.code));
        return -1;
    }
    return 0;
}

/* Loads the shards named by argv[1..n]; 0, or -1 after printing why (usage error). */
static int load_shards(sr_run_result **v, char **dirs, size_t n, char **argv)
{
    char dir[4096];
    /* Writing the merged run over one of its shards would destroy that shard. */
    char *out_real = realpath(argv[0], NULL);
    int bad = 0;
    for (size_t i = 0; !bad && i < n; i++) {
        bad = argv[i + 1][0] == '-' || sr_report_cli_load(&v[i], argv[i + 1], dir, sizeof(dir));
        if (argv[i + 1][0] == '-')
            fprintf(stderr, "syncroll report: --merge takes no option ('%s')\n", argv[i + 1]);
        char *in_real = bad || !out_real ? NULL : realpath(dir, NULL);
        if (in_real && strcmp(in_real, out_real) == 0) {
            fprintf(stderr,
                    "syncroll report: --merge: OUT %s is the run folder of %s; the merged run "
                    "would overwrite that shard [usage.invalid_argument]\n",
                    argv[0], argv[i + 1]);
            bad = 1;
        }
        free(in_real);
        if (!bad && !(dirs[i] = strdup(dir)))
            bad = 1;
    }
    free(out_real);
    return bad ? -1 : 0;
}

/*
 * The exit status of a merge, as `syncroll run` gives it: 1 when a scenario failed, errored or
 * was interrupted, or the merged run is partial (a shard missing or interrupted), else 0.
 */
static int merged_status(const sr_run_result *m)
{
    return m->counts[SR_VERDICT_FAIL] || m->counts[SR_VERDICT_ERROR] ||
                   m->counts[SR_VERDICT_INTERRUPTED] || m->partial
               ? SR_EXIT_FAIL
               : SR_EXIT_OK;
}

int sr_report_cli_merge(int argc, char **argv)
{
    if (argc < 2 || argv[0][0] == '-') {
        fprintf(stderr, "syncroll report: --merge needs OUT and at least one RUN_DIR\n");
        return SR_EXIT_USAGE;
    }
    size_t n = (size_t)argc - 1;
    sr_run_result **v = calloc(n, sizeof(*v));
    char **dirs = calloc(n + 1, sizeof(char *));
    sr_run_result *m = NULL;
    sr_err err = SR_ERR_INIT;
    int rc = 0, status = SR_EXIT_USAGE;
    if (v && dirs && !load_shards(v, dirs, n, argv)) {
        rc = sr_report_merge(&m, (const sr_run_result *const *)v, (const char *const *)argv + 1, n,
                             &err);
        if (rc)
            fprintf(stderr, "syncroll report: %s: %s\n", sr_code_name(rc), err.msg);
    }
    if (m && !prepare_out(m, argv[0]) &&
        !sr_report_cli_carry(m, v, (const char *const *)dirs, n, argv[0]) &&
        !write_merged(m, argv[0])) {
        printf("merged %zu shard%s into %s%s\n", n, n == 1 ? "" : "s", argv[0],
               m->partial ? " (partial)" : "");
        size_t failed = m->counts[SR_VERDICT_FAIL] + m->counts[SR_VERDICT_ERROR];
        printf("%zu passed, %zu failed", m->counts[SR_VERDICT_PASS], failed);
        if (m->counts[SR_VERDICT_SKIP])
            printf(", %zu skipped", m->counts[SR_VERDICT_SKIP]);
        if (m->counts[SR_VERDICT_INTERRUPTED])
            printf(", %zu interrupted", m->counts[SR_VERDICT_INTERRUPTED]);
        printf("\n");
        status = rc ? SR_EXIT_FAIL : merged_status(m);
    }
    sr_run_result_free(m);
    free_runs(v, n);
    for (size_t i = 0; dirs && i < n; i++)
        free(dirs[i]);
    free(dirs);
    return status;
}

/* ---- --history ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of DIR's subfolders (no symbolic links), sorted; NULL-terminated, or NULL. */
static char **list_folders(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    size_t cap = 16;
    char **v = calloc(cap + 1, sizeof(char *));
    struct dirent *e;
    *n = 0;
    while (v && (e = readdir(d)) != NULL) {
        char p[8192];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (*n == cap) {
            char **x = realloc(v, (cap * 2 + 1) * sizeof(char *));
            if (!x)
                break;
            v = x;
            cap *= 2;
        }
        if ((v[*n] = strdup(e->d_name)) != NULL)
            v[++*n] = NULL;
    }
    closedir(d);
    if (v)
        qsort(v, *n, sizeof(char *), by_name);
    return v;
}

/*
 * Reads DIR/name/results.json relative to the open folder `dfd` without following a symbolic
 * link at either step (openat with O_NOFOLLOW): a linked night or results.json would count a
 * night twice or read any file. 0 and the bytes in *data (the caller frees), 1 when the folder
 * has no results.json, or an sr_code with the message in *e.
 */
static int read_night(int dfd, const char *name, char **data, size_t *len, sr_err *e)
{
    int nfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (nfd < 0)
        return errno == ENOTDIR || errno == ELOOP
                   ? sr_err_set(e, SR_E_NOT_REGULAR, "%s is a symbolic link: not followed", name)
                   : sr_err_set(e, SR_E_IO, "cannot open %s: %s", name, strerror(errno));
    int fd = openat(nfd, "results.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int saved = errno;
    close(nfd);
    if (fd < 0 && saved == ENOENT)
        return 1;
    if (fd < 0)
        return saved == ELOOP ? sr_err_set(e, SR_E_NOT_REGULAR,
                                           "%s/results.json is a symbolic link: not followed", name)
                              : sr_err_set(e, SR_E_IO, "cannot open %s/results.json: %s", name,
                                           strerror(saved));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = sr_err_set(e, SR_E_NOT_REGULAR, "%s/results.json is not a regular file", name);
    else if ((uint64_t)st.st_size > SR_REPORT_MAX_BYTES)
        rc = sr_err_set(e, SR_E_LIMIT, "%s/results.json is larger than %zu bytes", name,
                        SR_REPORT_MAX_BYTES);
    else if (!(*data = malloc((size_t)st.st_size + 1)))
        rc = sr_err_set(e, SR_E_NOMEM, "cannot read %s/results.json", name);
    size_t got = 0;
    while (!rc && got < (size_t)st.st_size) {
        ssize_t r = read(fd, *data + got, (size_t)st.st_size - got);
        if (r <= 0 && !(r < 0 && errno == EINTR))
            rc = sr_err_set(e, SR_E_IO, "cannot read %s/results.json: %s", name,
                            r ? strerror(errno) : "file shrank");
        got += r > 0 ? (size_t)r : 0;
    }
    close(fd);
    *len = got;
    return rc;
}

/* Adds one folder: a night, a skipped night (printed as SKIPPED), or nothing. */
static int add_folder(sr_history *h, int dfd, const char *name, sr_err *err)
{
    char *data = NULL;
    size_t len = 0;
    sr_run_result *run = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = read_night(dfd, name, &data, &len, &e);
    if (rc == 1)
        return 0;
    if (!rc) {
        char label[4200];
        snprintf(label, sizeof(label), "%s/results.json", name);
        rc = sr_report_load_mem(&run, data, len, label, &e);
    }
    free(data);
    if (rc)
        return sr_history_skip(h, name, rc, e.msg, err);
    rc = sr_history_add(h, name, run, err);
    sr_run_result_free(run);
    return rc;
}

typedef struct history_args {
    const char *dir, *out;
    size_t last;
} history_args;

static int history_parse(history_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof(*a));
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        if (o[0] != '-' && !a->dir) {
            a->dir = o;
        } else if (strcmp(o, "--last") == 0 && !sr_arg_int(v, 1, SR_HISTORY_MAX_NIGHTS, &x)) {
            a->last = (size_t)x;
            i++;
        } else if (strcmp(o, "--out") == 0 && v && *v) {
            a->out = v;
            i++;
        } else {
            fprintf(stderr, "syncroll report: --history: unknown option or bad value '%s'\n", o);
            return -1;
        }
    }
    if (!a->dir) {
        fprintf(stderr, "syncroll report: --history needs DIR\n");
        return -1;
    }
    if (!a->out)
        a->out = a->dir;
    return 0;
}

int sr_report_cli_history(int argc, char **argv)
{
    history_args a;
    if (history_parse(&a, argc, argv))
        return SR_EXIT_USAGE;
    size_t n = 0;
    char **names = list_folders(a.dir, &n);
    if (!names) {
        fprintf(stderr, "syncroll report: cannot read the folder %s: %s [io.error]\n", a.dir,
                strerror(errno));
        return SR_EXIT_USAGE;
    }
    sr_history *h = NULL;
    sr_err err = SR_ERR_INIT;
    int dfd = open(a.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = dfd < 0 ? sr_err_set(&err, SR_E_IO, "cannot open %s: %s", a.dir, strerror(errno))
                     : sr_history_new(&h, &err);
    for (size_t i = 0; !rc && i < n; i++)
        rc = add_folder(h, dfd, names[i], &err);
    if (dfd >= 0)
        close(dfd);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    rc = rc ? rc : sr_history_finish(h, a.last, &err);
    sr_buf text = SR_BUF_INIT;
    rc = rc ? rc : sr_history_render_text(&text, h, &err);
    if (!rc)
        fwrite(text.data, 1, text.len, stdout);
    sr_buf_release(&text);
    if (!rc && !h->n_nights)
        rc =
            sr_err_set(&err, SR_E_INVAL, "%s holds no readable run folder (*/results.json)", a.dir);
    if (!rc && mkdir(a.out, 0777) != 0 && errno != EEXIST)
        rc = sr_err_set(&err, SR_E_IO, "cannot create %s: %s", a.out, strerror(errno));
    if (!rc)
        rc = sr_history_write(h, a.out, &err);
    if (!rc)
        printf("wrote %s/history.html\nwrote %s/history.json\n", a.out, a.out);
    else
        fprintf(stderr, "syncroll report: %s: %s\n", sr_code_name(rc), err.msg);
    sr_history_free(h);
    return rc ? SR_EXIT_USAGE : SR_EXIT_OK;
}
