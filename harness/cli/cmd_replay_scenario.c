/*
 * syncroll replay --to-scenario CAPTURE OUT: a capture as a golden-fixture scenario.
 *
 * OUT must not exist or be an empty folder (replay.out_not_empty): the command writes a new
 * fixture, never over someone's files. It copies the capture's index and exactly the body files
 * the index names (byte for byte, each opened without following links) into
 * OUT/fixtures/capture/, judges the copy as the scenario will (run/replay_judge.h, which first
 * checks every body against its size and digest), and writes OUT/<id>.json: one replay step
 * naming fixtures/capture (relative to the scenario, so OUT can be moved or committed whole),
 * the dialect judged in, and an `expect` stating what the judging found (pass, or fail with
 * exactly the checks that fired), so the scenario passes as long as syncroll keeps finding
 * the same thing in those bytes. The written scenario is loaded back before the command
 * reports success. On any error what the command created is removed again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cmd_replay_priv.h"
#include "run/replay_judge.h"
#include "scenario/scenario.h"
#include "spec/dialect.h"

#define TS_PATH_MAX 4096
#define TS_FIXTURE  "fixtures/capture"

/* What the command created, removed again on failure (files, then folders, last first). */
typedef struct made {
    char **paths;
    size_t n, cap;
} made;

/* 1 when this command created `path` (a linear scan: only asked when a create finds it). */
static int made_has(const made *m, const char *path)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->paths[i], path) == 0)
            return 1;
    return 0;
}

static int made_add(made *m, const char *path, sr_err *err)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        char **p = realloc(m->paths, cap * sizeof *p);
        if (!p)
            return sr_err_set(err, SR_E_NOMEM, "no memory to list %zu files", cap);
        m->paths = p;
        m->cap = cap;
    }
    if (!(m->paths[m->n] = strdup(path)))
        return sr_err_set(err, SR_E_NOMEM, "no memory for a path");
    m->n++;
    return 0;
}

/* Removes everything listed (undo = 1) and frees the list. */
static void made_end(made *m, int undo)
{
    for (size_t i = m->n; i-- > 0;) {
        if (undo && unlink(m->paths[i]) != 0)
            rmdir(m->paths[i]); /* a folder: empty by now, its files were later entries */
        free(m->paths[i]);
    }
    free(m->paths);
}

static int make_dir(made *m, const char *path, sr_err *err)
{
    if (mkdir(path, 0777) != 0)
        return sr_err_set(err, SR_E_IO, "cannot create '%s': %s", path, strerror(errno));
    return made_add(m, path, err);
}

/* OUT: created, or an existing empty folder (kept on failure: it was there before). */
static int prepare_out(made *m, const char *out, sr_err *err)
{
    struct stat sb;
    if (lstat(out, &sb) != 0)
        return errno == ENOENT ? make_dir(m, out, err)
                               : sr_err_set(err, SR_E_IO, "'%s': %s", out, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return sr_err_set(err, SR_E_REPLAY_OUT_NOT_EMPTY, "'%s' exists and is not a folder", out);
    int rc = 0;
    DIR *d = opendir(out);
    if (!d)
        return sr_err_set(err, SR_E_IO, "cannot read '%s': %s", out, strerror(errno));
    for (struct dirent *e; !rc && (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rc = sr_err_set(err, SR_E_REPLAY_OUT_NOT_EMPTY,
                            "'%s' is not empty (it holds '%s'); give a new folder", out, e->d_name);
    closedir(d);
    return rc;
}

/* dst = a/b, refusing a path that does not fit. */
static int join(char *dst, size_t cap, const char *a, const char *b, sr_err *err)
{
    int n = snprintf(dst, cap, "%s/%s", a, b);
    if (n < 0 || (size_t)n >= cap)
        return sr_err_set(err, SR_E_INVAL, "the path '%s/%s' is longer than %zu bytes", a, b,
                          cap - 1);
    return 0;
}

/*
 * Copies the open file `in` (named `from`; closed here) to the new file `to` byte for byte, no
 * link followed. A `to` that exists already was copied by this command from the same index
 * entry name (OUT started empty): two exchanges may name one body file; it is copied once.
 */
static int copy_file(made *m, int in, const char *from, const char *to, int *copied, sr_err *err)
{
    *copied = 0;
    struct stat sb;
    if (fstat(in, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(in);
        return sr_err_set(err, SR_E_NOT_REGULAR, "'%s' is not a regular file", from);
    }
    int outfd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (outfd < 0 && errno == EEXIST && made_has(m, to)) {
        close(in);
        return 0;
    }
    int rc = outfd < 0 ? sr_err_set(err, SR_E_IO, "cannot create '%s': %s", to, strerror(errno))
                       : made_add(m, to, err);
    *copied = !rc;
    char buf[1 << 16];
    for (ssize_t n; !rc && (n = read(in, buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || write(outfd, buf, (size_t)n) != n)
            rc = sr_err_set(err, SR_E_IO, "copying '%s' to '%s': %s", from, to, strerror(errno));
    }
    if (outfd >= 0 && close(outfd) != 0 && !rc)
        rc = sr_err_set(err, SR_E_IO, "closing '%s': %s", to, strerror(errno));
    close(in);
    return rc;
}

/* The index and every body file it names, from capture dir `src` into `dst` (created). */
static int copy_capture(made *m, const sr_capture *c, const char *src, const char *dst,
                        size_t *n_bodies, sr_err *err)
{
    char from[TS_PATH_MAX], to[TS_PATH_MAX];
    int rc = make_dir(m, dst, err);
    if (!rc && !(rc = join(to, sizeof to, dst, "bodies", err)))
        rc = make_dir(m, to, err);
    int copied;
    if (!rc && !(rc = join(from, sizeof from, src, SR_CAPTURE_INDEX, err)) &&
        !(rc = join(to, sizeof to, dst, SR_CAPTURE_INDEX, err))) {
        int in = open(from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        rc = in < 0 ? sr_err_set(err, errno == ELOOP ? SR_E_SYMLINK : SR_E_CAPTURE_BODY,
                                 "cannot open '%s': %s", from, strerror(errno))
                    : copy_file(m, in, from, to, &copied, err);
    }
    for (size_t i = 0; !rc && i < sr_capture_count(c); i++) {
        const sr_capture_exchange *x = sr_capture_at(c, i);
        const sr_capture_body *b[2] = {&x->request, &x->response};
        for (int k = 0; !rc && k < 2; k++) {
            if (!b[k]->file[0])
                continue;
            if (!(rc = join(from, sizeof from, src, b[k]->file, err)) &&
                !(rc = join(to, sizeof to, dst, b[k]->file, err))) {
                int in = sr_capture_open_body(src, b[k]->file, err);
                rc = in < 0 ? in : copy_file(m, in, from, to, &copied, err);
                *n_bodies += !rc && copied;
            }
        }
    }
    return rc;
}

/* The scenario id: OUT's last component in [A-Za-z0-9._-], not starting with '.'. */
static void scenario_id(char *id, size_t cap, const char *out)
{
    size_t len = strlen(out);
    while (len > 1 && out[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && out[start - 1] != '/')
        start--;
    size_t n = 0;
    for (size_t i = start; i < len && n + 1 < cap; i++) {
        char ch = out[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '-' || ch == '_' || (ch == '.' && n > 0);
        if (ok)
            id[n++] = ch;
        else if (n > 0 && id[n - 1] != '-')
            id[n++] = '-';
    }
    id[n] = '\0';
    if (!n)
        snprintf(id, cap, "replay");
}

/* 1 when `id` is one of the ", "-separated names of `list` (a whole name, not a part of one). */
static int listed(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; (p = strstr(p, id)) != NULL; p += n)
        if ((p == list || (p >= list + 2 && p[-2] == ',' && p[-1] == ' ')) &&
            (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

/* One line: where the capture came from, the proxy faults that fired in it, what was found. */
static void describe(char *dst, size_t cap, const sr_capture *c, const sr_scenario_result *res,
                     const char *dialect)
{
    char faults[512] = "";
    size_t nf = 0;
    for (size_t i = 0; i < sr_capture_count(c); i++) {
        const char *f = sr_capture_at(c, i)->fault;
        if (!f[0] || listed(faults, f))
            continue;
        size_t used = strlen(faults);
        snprintf(faults + used, sizeof faults - used, "%s%s", nf++ ? ", " : "", f);
    }
    const sr_counters *k = &res->counters;
    int n = snprintf(dst, cap,
                     "replay of %lld session(s) (%zu exchanges, %s wire) captured by syncroll "
                     "proxy in front of %s%s",
                     (long long)k->rollouts_requested, sr_capture_count(c), dialect,
                     sr_capture_upstream(c), sr_capture_redacted(c) ? ", prompts redacted" : "");
    if (n > 0 && (size_t)n < cap && nf)
        n += snprintf(dst + n, cap - (size_t)n, "; the proxy injected fault(s) %s", faults);
    if (n > 0 && (size_t)n < cap)
        snprintf(dst + n, cap - (size_t)n, "; judged: %s", res->n_fired ? "" : "clean");
    for (size_t i = 0; i < res->n_fired && strlen(dst) + 1 < cap; i++) {
        size_t used = strlen(dst);
        snprintf(dst + used, cap - used, "%s%s x%llu", i ? ", " : "", res->fired[i].name,
                 (unsigned long long)res->fired[i].count);
    }
}

/* The scenario document: one replay step and the expectation of what was found. */
static cJSON *scenario_doc(const char *id, const char *desc, const char *dialect,
                           const sr_scenario_result *res, int expect_found)
{
    cJSON *doc = cJSON_CreateObject(), *tags, *steps, *st, *ex, *checks;
    cJSON_AddStringToObject(doc, "id", id);
    cJSON_AddStringToObject(doc, "description", desc);
    tags = cJSON_AddArrayToObject(doc, "tags");
    cJSON_AddItemToArray(tags, cJSON_CreateString("replay"));
    steps = cJSON_AddArrayToObject(doc, "steps");
    st = cJSON_CreateObject();
    cJSON_AddItemToArray(steps, st);
    cJSON_AddStringToObject(st, "kind", "replay");
    cJSON_AddStringToObject(st, "name", "capture");
    cJSON_AddStringToObject(st, "capture", TS_FIXTURE);
    cJSON_AddStringToObject(st, "dialect", dialect);
    ex = cJSON_AddObjectToObject(doc, "expect");
    int fail = expect_found && res->n_fired;
    cJSON_AddStringToObject(ex, "verdict", fail ? "fail" : "pass");
    if (fail) {
        checks = cJSON_AddArrayToObject(ex, "checks");
        for (size_t i = 0; i < res->n_fired; i++)
            cJSON_AddItemToArray(checks, cJSON_CreateString(res->fired[i].name));
    }
    return doc;
}

static int write_text(made *m, const char *path, const char *text, sr_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0)
        return sr_err_set(err, SR_E_IO, "cannot create '%s': %s", path, strerror(errno));
    int rc = made_add(m, path, err);
    size_t len = strlen(text);
    if (!rc && (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1))
        rc = sr_err_set(err, SR_E_IO, "writing '%s': %s", path, strerror(errno));
    if (close(fd) != 0 && !rc)
        rc = sr_err_set(err, SR_E_IO, "closing '%s': %s", path, strerror(errno));
    return rc;
}

/* Judges the copy in `dst` into res as the scenario's step will; the dialect in *dialect. */
static int judge_copy(sr_scenario_result *res, int *dialect, const char *dst, const char *id,
                      sr_err *err)
{
    sr_capture *c = NULL;
    int rc = sr_capture_open(&c, dst, err);
    sr_replay_judge_opts o = SR_REPLAY_JUDGE_OPTS_INIT;
    o.dialect = *dialect;
    o.res = res;
    o.scenario = id;
    o.step = 0;
    o.step_name = "capture";
    if (!rc)
        rc = sr_replay_judge_capture(c, &o, err);
    *dialect = o.dialect_used;
    sr_capture_free(c);
    return rc;
}

static int to_scenario(made *m, const sr_capture *c, const char *src, const char *out, int dialect,
                       int expect_found, sr_err *err)
{
    char dst[TS_PATH_MAX], file[TS_PATH_MAX], id[SR_SCN_ID_MAX], desc[2048];
    size_t n_bodies = 0;
    sr_run_result *run = NULL;
    sr_scenario_result *res = NULL;
    scenario_id(id, sizeof id, out);
    int rc = prepare_out(m, out, err);
    if (!rc && !(rc = join(dst, sizeof dst, out, "fixtures", err)))
        rc = make_dir(m, dst, err);
    if (!rc && !(rc = join(dst, sizeof dst, out, TS_FIXTURE, err)))
        rc = copy_capture(m, c, src, dst, &n_bodies, err);
    char name[SR_SCN_ID_MAX + 8];
    snprintf(name, sizeof name, "%s.json", id);
    if (!rc)
        rc = sr_run_result_new(&run, err);
    if (!rc)
        rc = sr_run_result_add_scenario(&res, run, err);
    if (!rc)
        rc = judge_copy(res, &dialect, dst, id, err);
    const char *dname = rc ? "" : sr_dialect_name((sr_dialect)dialect);
    cJSON *doc = NULL;
    char *text = NULL;
    if (!rc) {
        describe(desc, sizeof desc, c, res, dname);
        doc = scenario_doc(id, desc, dname, res, expect_found);
        text = doc ? cJSON_Print(doc) : NULL;
        rc = text ? 0 : sr_err_set(err, SR_E_NOMEM, "no memory for the scenario");
    }
    if (!rc && !(rc = join(file, sizeof file, out, name, err)))
        rc = write_text(m, file, text, err);
    sr_scenario *check = NULL;
    if (!rc && (rc = sr_scenario_load(&check, file, err)) != 0)
        sr_err_prefix(err, "the written scenario does not load: ");
    if (!rc) {
        printf("wrote %s (capture.jsonl and %zu bodies, every body verified)\n", dst, n_bodies);
        int fail = expect_found && res->n_fired;
        printf("wrote %s: a replay step (%s wire), expect %s", file, dname,
               fail ? "fail:" : "pass");
        for (size_t i = 0; fail && i < res->n_fired; i++)
            printf(" %s", res->fired[i].name);
        if (res->n_fired && !fail) {
            printf(" (a failing case: judging found");
            for (size_t i = 0; i < res->n_fired; i++)
                printf(" %s", res->fired[i].name);
            printf(")");
        }
        printf("\n%s: %lld session(s) judged, %lld passed, %lld failed\n", id,
               (long long)res->counters.rollouts_requested,
               (long long)res->counters.rollouts_verified,
               (long long)res->counters.rollouts_failed);
        printf("run it: syncroll run %s\n", file);
    }
    sr_scenario_free(check);
    cJSON_free(text);
    cJSON_Delete(doc);
    sr_run_result_free(run);
    return rc;
}

int sr_replay_to_scenario(const sr_capture *c, const char *capture, const char *out, int dialect,
                          int expect_found)
{
    sr_err err = SR_ERR_INIT;
    made m = {NULL, 0, 0};
    int rc = to_scenario(&m, c, capture, out, dialect, expect_found, &err);
    made_end(&m, rc != 0);
    if (!rc)
        return SR_EXIT_OK;
    fprintf(stderr, "syncroll replay: %s: %s\n", sr_code_name(rc), err.msg);
    return rc == SR_E_IO ? 3 : rc == SR_E_NOMEM ? SR_EXIT_FAIL : SR_EXIT_USAGE;
}
