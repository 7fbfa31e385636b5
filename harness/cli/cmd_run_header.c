/* syncroll run: what a run records about itself (results.json "run"): the machine, the git rev,
 * the options, the shard, the selection and the run group (cmd_run_priv.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "report/result.h"
#include "sr_buf.h"
#include "cmd_run_priv.h"

/* The first line of a file, without its line end, into buf; 0 or -1. */
static int first_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    buf[ok ? strcspn(buf, "\r\n") : 0] = '\0';
    return ok ? 0 : -1;
}

/* The commit of `ref` (e.g. "refs/heads/main") under git folder `dir`, loose or packed. */
static int read_ref(const char *dir, const char *ref, char *out, size_t cap)
{
    char path[8300], line[512];
    snprintf(path, sizeof(path), "%s/%s", dir, ref);
    if (first_line(path, out, cap) == 0)
        return 0;
    snprintf(path, sizeof(path), "%s/packed-refs", dir);
    FILE *f = fopen(path, "r");
    int found = -1;
    while (f && found && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *sp = strchr(line, ' ');
        if (sp && strcmp(sp + 1, ref) == 0 && (size_t)(sp - line) < cap) {
            snprintf(out, cap, "%.*s", (int)(sp - line), line);
            found = 0;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/*
 * The commit the source tree is at: SYNCROLL_GIT_REV when set (a CI checkout without .git),
 * else read from SYNCROLL_SOURCE_DIR/.git, a folder or, in a worktree, a "gitdir:" file whose
 * branch refs live in the common folder it names.
 */
static void git_rev(sr_run_header *h)
{
    char git[4096], common[8300], head[512], rev[128];
    const char *env = getenv("SYNCROLL_GIT_REV");
    if (env && *env) {
        sr_result_set_str(&h->git_rev, env, NULL);
        return;
    }
    snprintf(git, sizeof(git), "%s/.git", SYNCROLL_SOURCE_DIR);
    struct stat st;
    if (stat(git, &st) == 0 && S_ISREG(st.st_mode)) {
        if (first_line(git, head, sizeof(head)) || strncmp(head, "gitdir: ", 8) != 0)
            return;
        if (head[8] == '/')
            snprintf(git, sizeof(git), "%s", head + 8);
        else
            snprintf(git, sizeof(git), "%s/%s", SYNCROLL_SOURCE_DIR, head + 8);
    }
    char path[4200];
    snprintf(path, sizeof(path), "%s/commondir", git);
    if (first_line(path, head, sizeof(head)) != 0)
        snprintf(common, sizeof(common), "%s", git);
    else if (head[0] == '/')
        snprintf(common, sizeof(common), "%s", head);
    else
        snprintf(common, sizeof(common), "%s/%s", git, head);
    snprintf(path, sizeof(path), "%s/HEAD", git);
    if (first_line(path, head, sizeof(head)))
        return;
    if (strncmp(head, "ref: ", 5) != 0) {
        sr_result_set_str(&h->git_rev, head, NULL);
        return;
    }
    if (read_ref(git, head + 5, rev, sizeof(rev)) == 0 ||
        read_ref(common, head + 5, rev, sizeof(rev)) == 0)
        sr_result_set_str(&h->git_rev, rev, NULL);
}

/* Appends " key=v1,v2" to b. */
static int add_list(sr_buf *b, const char *key, char *const *v, size_t n, sr_err *err)
{
    int rc = sr_buf_printf(b, err, " %s=", key);
    for (size_t i = 0; !rc && i < n; i++)
        rc = sr_buf_printf(b, err, "%s%s", i ? "," : "", v[i]);
    return rc;
}

/*
 * The options that decide which scenarios run and how, in one canonical line (not -j, --keep,
 * --out or --report, which change neither), and the run group: --run-group or
 * SYNCROLL_RUN_GROUP, else "auto-" and FNV-1a 64 of the git rev and that line. The line is never
 * cut: a long path list must not push the partition out of it (report --merge compares lines).
 * Returns 0 or SR_E_NOMEM.
 */
static int selection(sr_run_header *h, const run_args *a, sr_err *err)
{
    sr_buf b = SR_BUF_INIT, key = SR_BUF_INIT;
    char seed[32] = "-";
    if (a->has_seed)
        snprintf(seed, sizeof(seed), "%llu", (unsigned long long)a->seed);
    int rc = add_list(&b, "paths", a->paths, a->n_paths, err);
    rc = rc ? rc : add_list(&b, "tags", a->tags, a->n_tags, err);
    rc = rc ? rc : add_list(&b, "exclude_tags", a->exclude, a->n_exclude, err);
    if (!rc)
        rc = sr_buf_printf(
            &b, err,
            " seed=%s repeat=%d until_fail=%d duration_ms=%lld max_scenario_bytes=%zu shards=%d",
            seed, a->repeat, a->until_fail, (long long)a->duration_ms, a->max_scenario_bytes,
            a->shard.n);
    /* The partition itself: shards given other timings, or that saw other scenarios, are parts
     * of different partitions, and a merge of them would miss scenarios while running others
     * twice. */
    if (!rc && a->shard.n)
        rc = sr_buf_printf(&b, err, " partition=%s-%016llx", a->timings ? "timings" : "hash",
                           (unsigned long long)a->partition_fp);
    rc = rc ? rc : sr_result_set_str(&h->selection, b.data + 1, err);
    if (!rc && a->run_group)
        rc = sr_result_set_str(&h->run_group, a->run_group, err);
    else if (!rc) {
        char group[32];
        rc = sr_buf_printf(&key, err, "%s\n%s", h->git_rev ? h->git_rev : "", b.data + 1);
        snprintf(group, sizeof(group), "auto-%016llx",
                 rc ? 0ull : (unsigned long long)sr_shard_hash(key.data));
        rc = rc ? rc : sr_result_set_str(&h->run_group, group, err);
    }
    sr_buf_release(&b);
    sr_buf_release(&key);
    return rc;
}

int sr_run_fill_header(sr_run_header *h, const run_args *a, int argc, char **argv,
                       const char *run_id, const char *dir, sr_err *err)
{
    struct utsname u;
    char buf[4096] = "";
    sr_result_set_str(&h->version, SYNCROLL_VERSION, NULL);
    git_rev(h);
    sr_result_set_str(&h->run_id, run_id, NULL);
    sr_result_set_str(&h->out_dir, dir, NULL);
    if (uname(&u) == 0) {
        sr_result_set_str(&h->hostname, u.nodename, NULL);
        snprintf(buf, sizeof(buf), "%s %s", u.sysname, u.release);
        sr_result_set_str(&h->kernel, buf, NULL);
        sr_result_set_str(&h->arch, u.machine, NULL);
    }
    h->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    buf[0] = '\0';
    snprintf(buf, sizeof(buf), "syncroll");
    for (int i = 0; i < argc; i++)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " %s", argv[i]);
    sr_result_set_str(&h->command, buf, NULL);
    h->has_seed = a->has_seed;
    h->seed = a->seed;
    h->jobs = a->jobs;
    h->repeat = a->repeat;
    h->until_fail = a->until_fail;
    h->shard_k = a->shard.k;
    h->shard_n = a->shard.n;
    if (a->shard.n) {
        sr_result_set_str(&h->shard_source, a->shard.source, NULL);
        sr_result_set_str(&h->shard_detail, a->shard.detail, NULL);
    }
    h->keep = a->keep;
    h->tags = calloc(a->n_tags + 1, sizeof(char *));
    h->exclude_tags = calloc(a->n_exclude + 1, sizeof(char *));
    for (size_t i = 0; h->tags && i < a->n_tags; i++)
        sr_result_set_str(&h->tags[h->n_tags++], a->tags[i], NULL);
    for (size_t i = 0; h->exclude_tags && i < a->n_exclude; i++)
        sr_result_set_str(&h->exclude_tags[h->n_exclude_tags++], a->exclude[i], NULL);
    int rc = selection(h, a, err);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->start_unix_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    strftime(h->start_iso, sizeof(h->start_iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return rc;
}
