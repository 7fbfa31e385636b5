/* Reads results.json back into a run (sr_report_load, report.h). */
#include "report_priv.h"
#include "report_load_priv.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_file.h"
#include "sr_json.h"

/*
 * The loader's getters. results.json writes null for "not applicable", so a null or absent
 * member (or a missing parent object) leaves *out as it is; once an error is kept nothing more
 * is looked at. sr_json's typed getters check the rest and place their errors.
 */

static void str_owned(ld *l, const cJSON *o, const char *k, char **dst)
{
    const char *s;
    if (sr_ld_skip(l, o, k) || (l->rc = sr_json_get_string(l->doc, o, k, 1, NULL, &s, l->err)))
        return;
    if (sr_result_set_str(dst, s, NULL))
        sr_ld_nomem(l);
}

static void str_fixed(ld *l, const cJSON *o, const char *k, char *buf, size_t cap)
{
    const char *s;
    if (!sr_ld_skip(l, o, k) && !(l->rc = sr_json_get_string(l->doc, o, k, 1, NULL, &s, l->err)))
        snprintf(buf, cap, "%s", s);
}

static void num(ld *l, const cJSON *o, const char *k, double *out)
{
    if (!sr_ld_skip(l, o, k))
        l->rc = sr_json_get_double(l->doc, o, k, 1, -DBL_MAX, DBL_MAX, *out, out, l->err);
}

static void integer(ld *l, const cJSON *o, const char *k, int64_t lo, int64_t hi, int64_t *out)
{
    if (!sr_ld_skip(l, o, k))
        l->rc = sr_json_get_int(l->doc, o, k, 1, lo, hi, *out, out, l->err);
}

/* Signed; null or absent is -1 (the model's "not applicable"). */
static int64_t get_opt(ld *l, const cJSON *o, const char *k)
{
    int64_t v = -1;
    integer(l, o, k, INT64_MIN, INT64_MAX, &v);
    return v;
}

static int get_int(ld *l, const cJSON *o, const char *k)
{
    int64_t v = 0;
    integer(l, o, k, INT_MIN, INT_MAX, &v);
    return (int)v;
}

static int get_bool(ld *l, const cJSON *o, const char *k)
{
    int v = 0;
    if (!sr_ld_skip(l, o, k))
        l->rc = sr_json_get_bool(l->doc, o, k, 1, 0, &v, l->err);
    return v;
}

static void strv(ld *l, const cJSON *o, const char *k, char ***v, size_t *n)
{
    const cJSON *a = sr_ld_get_typed(l, o, k, 1);
    int len = a ? cJSON_GetArraySize(a) : 0;
    if (!(*v = calloc((size_t)len + 1, sizeof(char *)))) {
        sr_ld_nomem(l);
        return;
    }
    const cJSON *x;
    cJSON_ArrayForEach(x, a)
    {
        if (!cJSON_IsString(x)) {
            sr_ld_fail(l, x, "'%s' must hold strings", k);
            return;
        }
        if (sr_result_set_str(&(*v)[(*n)++], x->valuestring, NULL)) {
            sr_ld_nomem(l);
            return;
        }
    }
}

static void counters(ld *l, const cJSON *o, sr_counters *c)
{
    c->rollouts_requested = (int64_t)sr_ld_get_u64(l, o, "rollouts_requested");
    c->rollouts_verified = (int64_t)sr_ld_get_u64(l, o, "rollouts_verified");
    c->rollouts_failed = (int64_t)sr_ld_get_u64(l, o, "rollouts_failed");
    c->turns = (int64_t)sr_ld_get_u64(l, o, "turns");
    c->attempts = (int64_t)sr_ld_get_u64(l, o, "attempts");
    c->retries = (int64_t)sr_ld_get_u64(l, o, "retries");
    c->bytes_sent = sr_ld_get_u64(l, o, "bytes_sent");
    c->bytes_received = sr_ld_get_u64(l, o, "bytes_received");
    c->tokens_verified = (int64_t)sr_ld_get_u64(l, o, "tokens_verified");
    c->rows_verified = (int64_t)sr_ld_get_u64(l, o, "rows_verified");
    c->collations = (int64_t)sr_ld_get_u64(l, o, "collations");
    c->syncs = (int64_t)sr_ld_get_u64(l, o, "syncs");
}

/* ---- scenarios ---- */

static sr_verdict verdict(ld *l, const cJSON *o, const char *k, sr_verdict dflt)
{
    char v[16] = "";
    str_fixed(l, o, k, v, sizeof(v));
    for (int i = 0; i < SR_VERDICT_COUNT && v[0]; i++)
        if (strcmp(v, sr_verdict_name((sr_verdict)i)) == 0)
            return (sr_verdict)i;
    if (v[0])
        sr_ld_fail(l, sr_ld_get(o, k), "unknown verdict '%s'", v);
    return dflt;
}

static int expected(const sr_scenario_result *s, const char *name)
{
    for (size_t i = 0; i < s->n_expect_checks; i++)
        if (strcmp(s->expect_checks[i], name) == 0)
            return 1;
    return 0;
}

static void load_checks(ld *l, const cJSON *o, sr_scenario_result *s)
{
    const cJSON *a = sr_ld_get_typed(l, o, "checks", 1), *x;
    int len = a ? cJSON_GetArraySize(a) : 0;
    size_t cap = len < SR_RESULT_MAX_CHECKS ? (size_t)len : SR_RESULT_MAX_CHECKS;
    if (cap && !(s->checks = calloc(cap, sizeof(sr_check)))) {
        sr_ld_nomem(l);
        return;
    }
    s->cap_checks = cap;
    cJSON_ArrayForEach(x, a)
    {
        if (s->n_checks == SR_RESULT_MAX_CHECKS)
            break;
        sr_check *c = &s->checks[s->n_checks++];
        str_fixed(l, x, "name", c->name, sizeof(c->name));
        str_fixed(l, x, "classification", c->classification, sizeof(c->classification));
        str_fixed(l, x, "message", c->message, sizeof(c->message));
        c->expected = get_bool(l, x, "expected");
        const cJSON *w = sr_ld_get_typed(l, x, "where", 0);
        c->where.step = get_opt(l, w, "step");
        c->where.engine = get_opt(l, w, "engine");
        c->where.sample = get_opt(l, w, "sample");
        c->where.turn = get_opt(l, w, "turn");
        c->where.row = get_opt(l, w, "row");
        c->where.layer = get_opt(l, w, "layer");
        /* Older results.json, written before failure evidence, have neither key. */
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "evidence")))
            str_fixed(l, x, "evidence", c->evidence, sizeof(c->evidence));
        c->evidence_cut = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "evidence_cut"));
    }
}

static void load_counts(ld *l, const cJSON *o, const char *k, sr_check_count **v, size_t *n,
                        const sr_scenario_result *s)
{
    const cJSON *m = sr_ld_get_typed(l, o, k, 0), *x;
    int len = m ? cJSON_GetArraySize(m) : 0;
    if (len && !(*v = calloc((size_t)len, sizeof(sr_check_count)))) {
        sr_ld_nomem(l);
        return;
    }
    cJSON_ArrayForEach(x, m)
    {
        sr_check_count *c = &(*v)[(*n)++];
        snprintf(c->name, sizeof(c->name), "%s", x->string);
        c->count = sr_ld_get_u64(l, m, x->string);
        c->expected = s ? expected(s, c->name) : 0;
    }
}

static void load_steps(ld *l, const cJSON *o, sr_scenario_result *s)
{
    const cJSON *a = sr_ld_get_typed(l, o, "steps", 1), *x;
    int len = a ? cJSON_GetArraySize(a) : 0;
    if (len && !(s->steps = calloc((size_t)len, sizeof(sr_step_timing)))) {
        sr_ld_nomem(l);
        return;
    }
    cJSON_ArrayForEach(x, a)
    {
        sr_step_timing *t = &s->steps[s->n_steps++];
        char code[SR_RESULT_NAME_MAX] = "";
        t->index = get_int(l, x, "index");
        str_fixed(l, x, "kind", t->kind, sizeof(t->kind));
        str_fixed(l, x, "name", t->name, sizeof(t->name));
        num(l, x, "start_ms", &t->start_ms);
        num(l, x, "end_ms", &t->end_ms);
        str_fixed(l, x, "error", code, sizeof(code));
        t->code = code[0] ? sr_code_by_name(code) : 0;
        if (code[0] && !t->code)
            t->code = SR_E_INTERNAL;
    }
}

static void load_engines(ld *l, const cJSON *o, sr_scenario_result *s)
{
    const cJSON *a = sr_ld_get_typed(l, o, "engines", 1), *x;
    int len = a ? cJSON_GetArraySize(a) : 0;
    if (len && !(s->engines = calloc((size_t)len, sizeof(sr_engine_run)))) {
        sr_ld_nomem(l);
        return;
    }
    cJSON_ArrayForEach(x, a)
    {
        sr_engine_run *e = &s->engines[s->n_engines++];
        e->index = get_int(l, x, "index");
        e->pid = (long)get_opt(l, x, "pid");
        str_owned(l, x, "url", &e->url);
        str_owned(l, x, "log", &e->log);
        str_owned(l, x, "exit", &e->exit);
    }
}

static void load_scenario(ld *l, const cJSON *o, sr_scenario_result *s)
{
    if (!cJSON_IsObject(o)) {
        sr_ld_fail(l, o, "a scenario must be an object");
        return;
    }
    str_owned(l, o, "id", &s->id);
    str_owned(l, o, "file", &s->file);
    str_owned(l, o, "description", &s->description);
    strv(l, o, "tags", &s->tags, &s->n_tags);
    s->seed = sr_ld_get_u64(l, o, "seed");
    int64_t rep = 1;
    integer(l, o, "repeat", 1, INT_MAX, &rep);
    s->repeat = (int)rep;
    int64_t shard = 0;
    integer(l, o, "shard", 0, 1000000, &shard);
    s->shard = (int)shard;
    s->external = get_bool(l, o, "external_engines");
    s->verdict = verdict(l, o, "verdict", SR_VERDICT_PASS);
    str_fixed(l, o, "reason", s->reason, sizeof(s->reason));
    const cJSON *ex = sr_ld_get_typed(l, o, "expect", 0);
    s->expect_verdict = verdict(l, ex, "verdict", SR_VERDICT_PASS);
    strv(l, ex, "checks", &s->expect_checks, &s->n_expect_checks);
    load_checks(l, o, s);
    s->checks_dropped = sr_ld_get_u64(l, o, "checks_dropped");
    load_counts(l, o, "fired", &s->fired, &s->n_fired, s);
    load_counts(l, o, "classifications", &s->fired_classes, &s->n_fired_classes, NULL);
    const cJSON *sk = sr_ld_get_typed(l, o, "skipped_checks", 1), *x;
    int nsk = sk ? cJSON_GetArraySize(sk) : 0;
    if (nsk && !(s->skipped = calloc((size_t)nsk, sizeof(sr_skipped_check))))
        sr_ld_nomem(l);
    const cJSON *sk_list = s->skipped ? sk : NULL;
    cJSON_ArrayForEach(x, sk_list)
    {
        sr_skipped_check *c = &s->skipped[s->n_skipped++];
        str_fixed(l, x, "name", c->name, sizeof(c->name));
        str_fixed(l, x, "reason", c->reason, sizeof(c->reason));
    }
    str_owned(l, o, "repro", &s->repro);
    str_owned(l, o, "expanded", &s->expanded);
    str_owned(l, o, "artifacts", &s->artifacts);
    num(l, o, "start_ms", &s->start_ms);
    num(l, o, "wall_ms", &s->wall_ms);
    load_steps(l, o, s);
    load_engines(l, o, s);
    counters(l, sr_ld_get_typed(l, o, "counters", 0), &s->counters);
    sr_ld_phases(l, o, s->phase, s->cpu);
}

/* "K/N" with decimal digits only and 1 <= K <= N <= 1000000 (the shard counts `run` takes). */
static int parse_shard(const char *s, int *k, int *n)
{
    long v[2] = {0, 0};
    int part = 0, digits = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '/' && part == 0 && digits) {
            part = 1;
            digits = 0;
        } else if (*p >= '0' && *p <= '9' && digits < 7) {
            v[part] = v[part] * 10 + (*p - '0');
            digits++;
        } else {
            return -1;
        }
    }
    if (part != 1 || !digits || v[0] < 1 || v[0] > v[1] || v[1] > 1000000)
        return -1;
    *k = (int)v[0];
    *n = (int)v[1];
    return 0;
}

/* A merged run's "merged_of" and "shards" (report_json.c); absent in other runs. */
static void load_shards(ld *l, const cJSON *o, sr_run_header *h)
{
    int64_t of = 0;
    integer(l, o, "merged_of", 0, 1000000, &of);
    h->merged_of = (int)of;
    const cJSON *a = sr_ld_get(o, "shards") ? sr_ld_get_typed(l, o, "shards", 1) : NULL, *x;
    int n = a ? cJSON_GetArraySize(a) : 0;
    if (n && !(h->shards = calloc((size_t)n, sizeof(sr_merged_shard))))
        sr_ld_nomem(l);
    const cJSON *list = h->shards ? a : NULL;
    cJSON_ArrayForEach(x, list)
    {
        sr_merged_shard *m = &h->shards[h->n_shards++];
        int64_t k = 0;
        integer(l, x, "shard", 0, 1000000, &k);
        m->k = (int)k;
        str_owned(l, x, "run_id", &m->run_id);
        str_owned(l, x, "hostname", &m->hostname);
        str_owned(l, x, "command", &m->command);
    }
}

static void load_header(ld *l, const cJSON *o, sr_run_header *h)
{
    str_owned(l, o, "version", &h->version);
    str_owned(l, o, "git_rev", &h->git_rev);
    str_owned(l, o, "run_id", &h->run_id);
    str_owned(l, o, "run_group", &h->run_group);
    str_owned(l, o, "selection", &h->selection);
    if (sr_ld_get(o, "merged_from"))
        strv(l, o, "merged_from", &h->merged_from, &h->n_merged_from);
    load_shards(l, o, h);
    str_owned(l, o, "out_dir", &h->out_dir);
    const cJSON *m = sr_ld_get_typed(l, o, "machine", 0);
    str_owned(l, m, "hostname", &h->hostname);
    str_owned(l, m, "kernel", &h->kernel);
    str_owned(l, m, "arch", &h->arch);
    h->cpus = get_int(l, m, "cpus");
    str_owned(l, o, "command", &h->command);
    h->has_seed = sr_ld_get(o, "seed") != NULL;
    h->seed = sr_ld_get_u64(l, o, "seed");
    const cJSON *op = sr_ld_get_typed(l, o, "options", 0);
    h->jobs = get_int(l, op, "jobs");
    h->repeat = get_int(l, op, "repeat");
    h->until_fail = get_bool(l, op, "until_fail");
    char shard[32] = "";
    str_fixed(l, op, "shard", shard, sizeof(shard));
    if (shard[0] && parse_shard(shard, &h->shard_k, &h->shard_n))
        sr_ld_fail(l, sr_ld_get(op, "shard"),
                   "'shard' must be \"K/N\" with 1 <= K <= N <= 1000000");
    str_owned(l, op, "shard_source", &h->shard_source);
    str_owned(l, op, "shard_detail", &h->shard_detail);
    strv(l, op, "tags", &h->tags, &h->n_tags);
    strv(l, op, "exclude_tags", &h->exclude_tags, &h->n_exclude_tags);
    h->keep = get_bool(l, op, "keep");
    const cJSON *t = sr_ld_get_typed(l, o, "start", 0);
    str_fixed(l, t, "iso", h->start_iso, sizeof(h->start_iso));
    h->start_unix_ms = get_opt(l, t, "unix_ms");
}

/* Where the scenario list was cut out of the text (positions for messages). */
typedef struct cut {
    int open_line, open_col;   /* the '[' in the whole text */
    int close_line, close_col; /* the ']' in the whole text */
    int item_line, item_col;   /* the item being read */
} cut;

/* A position in the text without the list's items to one in the whole text. */
static void map_outer(void *ctx, int *line, int *col)
{
    const cut *c = ctx;
    int ol = c->open_line, oc = c->open_col + 1; /* ']' follows '[' in the short text */
    if (*line < ol || (*line == ol && *col < oc))
        return;
    if (*line == ol)
        *col = *col - oc + c->close_col;
    *line += c->close_line - ol;
}

/* A position in one item to one in the whole text. */
static void map_item(void *ctx, int *line, int *col)
{
    const cut *c = ctx;
    if (*line == 1)
        *col += c->item_col - 1;
    *line += c->item_line - 1;
}

/* Reads the header and totals of the parsed document into a new run (*out). */
static int load_outer(sr_run_result **out, ld *l, double *wall)
{
    const cJSON *root = sr_json_root(l->doc);
    int64_t schema = 0;
    if (!cJSON_IsObject(root))
        sr_ld_fail(l, root, "results.json must be an object");
    integer(l, root, "schema", 0, 1000000000, &schema);
    if (!l->rc && schema != SR_RESULT_SCHEMA_VERSION)
        sr_ld_fail(l, sr_ld_get(root, "schema"), "unsupported schema %lld (this syncroll reads %d)",
                   (long long)schema, SR_RESULT_SCHEMA_VERSION);
    const cJSON *run_j = sr_ld_get_typed(l, root, "run", 0);
    sr_ld_get_typed(l, root, "scenarios", 1);
    sr_run_result *run = NULL;
    if (!l->rc && sr_run_result_new(&run, l->err))
        l->rc = SR_E_NOMEM;
    if (!l->rc)
        load_header(l, run_j, &run->header);
    num(l, run_j, "wall_ms", wall);
    if (!l->rc) {
        run->partial = get_bool(l, root, "partial");
        str_owned(l, root, "partial_reason", &run->partial_reason);
    }
    *out = run;
    return l->rc;
}

/* Appends every scenario of a parsed list to the run. */
static int load_list(ld *l, sr_run_result *run, const cJSON *list)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, list)
    {
        sr_scenario_result *s;
        if (sr_run_result_add_scenario(&s, run, l->err))
            return l->rc = SR_E_NOMEM;
        load_scenario(l, x, s);
        if (l->rc)
            break;
    }
    return l->rc;
}

/* Parses and appends one item t[a .. e) of the scenario list, placing errors in the text. */
static int load_item(sr_run_result *run, const char *t, size_t a, size_t e, const char *name,
                     cut *c, sr_err *err)
{
    sr_json_doc *doc = NULL;
    sr_scenario_result *s;
    int rc = sr_json_parse(&doc, t + a, e - a, name, SR_REPORT_MAX_BYTES, err);
    if (!rc && sr_run_result_add_scenario(&s, run, err))
        rc = SR_E_NOMEM;
    if (!rc) {
        ld l = {doc, err, 0};
        load_scenario(&l, sr_json_root(doc), s);
        rc = l.rc;
    }
    sr_json_free(doc);
    if (rc && rc != SR_E_NOMEM) {
        sr_json_linecol(t, e, a, &c->item_line, &c->item_col);
        sr_report_relocate(err, name, map_item, c);
    }
    return rc;
}

/*
 * Builds the run of a results.json text. The scenario list is read item by item, each parsed
 * alone and freed before the next (sr_report_split), so the parsed trees never hold more than
 * the header and one execution; a text not shaped so is parsed whole, which names its error.
 */
static int load_text(sr_run_result **out, const char *t, size_t n, const char *name, sr_err *err)
{
    size_t open, close;
    int whole = sr_report_split(t, n, &open, &close) != 0;
    size_t pos = open + 1, a, e;
    for (int k; !whole && (k = sr_report_next_item(t, close, &pos, &a, &e)) != 0;)
        whole = k < 0;
    char *outer = whole ? NULL : malloc(n - (close - open) + 2);
    if (!whole && !outer)
        return sr_err_set(err, SR_E_NOMEM, "%s: cannot load results.json", name);
    if (outer) {
        memcpy(outer, t, open + 1);
        memcpy(outer + open + 1, t + close, n - close);
    }
    size_t outer_len = whole ? n : n - (close - open - 1);
    sr_json_doc *doc = NULL;
    cut c = {0};
    int rc = sr_json_parse(&doc, outer ? outer : t, outer_len, name, SR_REPORT_MAX_BYTES, err);
    free(outer);
    ld l = {doc, err, rc};
    sr_run_result *run = NULL;
    double wall = 0;
    if (!rc && load_outer(&run, &l, &wall) == 0) {
        const cJSON *root = sr_json_root(doc);
        if (whole) {
            load_list(&l, run, sr_ld_get(root, "scenarios"));
        } else {
            for (pos = open + 1; !l.rc && sr_report_next_item(t, close, &pos, &a, &e) == 1;)
                l.rc = load_item(run, t, a, e, name, &c, err);
        }
    } else if (!whole && l.rc != SR_E_NOMEM) {
        /* An error of the text around the list: placed as if the list's items were there. */
        sr_json_linecol(t, n, open, &c.open_line, &c.open_col);
        sr_json_linecol(t, n, close, &c.close_line, &c.close_col);
        sr_report_relocate(err, name, map_outer, &c);
    }
    sr_json_free(doc);
    if (l.rc) {
        sr_run_result_free(run);
        return l.rc;
    }
    sr_run_result_finish(run, wall);
    *out = run;
    return 0;
}

int sr_report_load(sr_run_result **out, const char *path, sr_err *err)
{
    if (!out || !path)
        return sr_err_set(err, SR_E_INVAL, "sr_report_load: no path");
    *out = NULL;
    sr_buf b = SR_BUF_INIT;
    int rc = strcmp(path, "-") == 0 ? sr_file_read_stream(&b, stdin, path, SR_REPORT_MAX_BYTES, err)
                                    : sr_file_read(&b, path, SR_REPORT_MAX_BYTES, err);
    if (!rc)
        rc = load_text(out, b.data, b.len, path, err);
    sr_buf_release(&b);
    return rc;
}

int sr_report_load_mem(sr_run_result **out, const char *data, size_t len, const char *name,
                       sr_err *err)
{
    if (!out || (!data && len))
        return sr_err_set(err, SR_E_INVAL, "sr_report_load_mem: no data");
    *out = NULL;
    if (len > SR_REPORT_MAX_BYTES)
        return sr_err_set(err, SR_E_LIMIT, "%s: %zu bytes exceeds the maximum of %zu",
                          name ? name : "<input>", len, SR_REPORT_MAX_BYTES);
    return load_text(out, data ? data : "", len, name ? name : "<input>", err);
}
