/* syncroll report over many run folders: loading one, --merge (shards) and --history (nights). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "commands.h"
#include "report/history.h"
#include "report/report.h"
#include "report_cli.h"

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

/* Writes the merged run into OUT (created if missing); 0 or -1 (printed). */
static int write_merged(sr_run_result *m, const char *out)
{
    sr_err err = SR_ERR_INIT;
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "syncroll report: cannot create %s: %s [io.error]\n", out, strerror(errno));
        return -1;
    }
    const char *base = strrchr(out, '/');
    base = base && base[1] ? base + 1 : out;
    if (sr_result_set_str(&m->header.out_dir, out, &err) ||
        sr_result_set_str(&m->header.run_id, base, &err) ||
        sr_report_write(m, out, SR_REPORT_ALL, &err)) {
        fprintf(stderr, "syncroll report: %s [%s]\n", err.msg, sr_code_name(err.code));
        return -1;
    }
    return 0;
}

int sr_report_cli_merge(int argc, char **argv)
{
    if (argc < 2 || argv[0][0] == '-') {
        fprintf(stderr, "syncroll report: --merge needs OUT and at least one RUN_DIR\n");
        return SR_EXIT_USAGE;
    }
    size_t n = (size_t)argc - 1;
    sr_run_result **v = calloc(n, sizeof(*v));
    if (!v)
        return SR_EXIT_FAIL;
    char dir[4096];
    /* Writing the merged run over one of its shards would destroy that shard. */
    char *out_real = realpath(argv[0], NULL);
    for (size_t i = 0; i < n; i++) {
        int bad = argv[i + 1][0] == '-' || sr_report_cli_load(&v[i], argv[i + 1], dir, sizeof(dir));
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
        if (bad) {
            free(out_real);
            free_runs(v, n);
            return SR_EXIT_USAGE;
        }
    }
    free(out_real);
    sr_run_result *m = NULL;
    sr_err err = SR_ERR_INIT;
    int rc = sr_report_merge(&m, (const sr_run_result *const *)v, (const char *const *)argv + 1, n,
                             &err);
    free_runs(v, n);
    if (rc)
        fprintf(stderr, "syncroll report: %s: %s\n", sr_code_name(rc), err.msg);
    if (!m)
        return SR_EXIT_USAGE;
    int status = rc ? SR_EXIT_FAIL : SR_EXIT_OK;
    if (write_merged(m, argv[0]))
        status = SR_EXIT_USAGE;
    else {
        printf("merged %zu shard%s into %s%s\n", n, n == 1 ? "" : "s", argv[0],
               m->partial ? " (partial)" : "");
        size_t failed = m->counts[SR_VERDICT_FAIL] + m->counts[SR_VERDICT_ERROR];
        printf("%zu passed, %zu failed", m->counts[SR_VERDICT_PASS], failed);
        if (m->counts[SR_VERDICT_SKIP])
            printf(", %zu skipped", m->counts[SR_VERDICT_SKIP]);
        printf("\n");
    }
    sr_run_result_free(m);
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

/* Adds one folder: a night, a skipped night, or nothing (no results.json). */
static int add_folder(sr_history *h, const char *dir, const char *name, sr_err *err)
{
    char json[8300];
    struct stat st;
    snprintf(json, sizeof(json), "%s/%s/results.json", dir, name);
    if (lstat(json, &st) != 0 && errno == ENOENT)
        return 0;
    sr_run_result *run = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = sr_report_load(&run, json, &e);
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
    int rc = sr_history_new(&h, &err);
    for (size_t i = 0; !rc && i < n; i++)
        rc = add_folder(h, a.dir, names[i], &err);
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
