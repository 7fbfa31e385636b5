/* The json reporter: results.json (schema in reports/README.md; report.h). */
#include "report_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* cJSON calls return NULL when out of memory; `bad` remembers it for the whole document. */
typedef struct jw {
    int bad;
} jw;

static cJSON *chk(jw *j, cJSON *x)
{
    if (!x)
        j->bad = 1;
    return x;
}

static void add_str(jw *j, cJSON *o, const char *k, const char *v)
{
    if (!o)
        return;
    if (!v) {
        chk(j, cJSON_AddNullToObject(o, k));
        return;
    }
    char *u = sr_report_utf8_dup(v);
    chk(j, u ? cJSON_AddStringToObject(o, k, u) : NULL);
    free(u);
}

static void add_num(jw *j, cJSON *o, const char *k, double v)
{
    if (o)
        chk(j, cJSON_AddNumberToObject(o, k, v));
}

static void add_bool(jw *j, cJSON *o, const char *k, int v)
{
    if (o)
        chk(j, cJSON_AddBoolToObject(o, k, v));
}

static void add_opt(jw *j, cJSON *o, const char *k, int64_t v)
{
    if (v < 0 && o)
        chk(j, cJSON_AddNullToObject(o, k));
    else
        add_num(j, o, k, (double)v);
}

static void attach(jw *j, cJSON *parent, const char *k, cJSON *child)
{
    if (!child || !parent || !cJSON_AddItemToObject(parent, k, child)) {
        j->bad = 1;
        cJSON_Delete(child);
    }
}

static void push(jw *j, cJSON *arr, cJSON *item)
{
    if (!item || !arr || !cJSON_AddItemToArray(arr, item)) {
        j->bad = 1;
        cJSON_Delete(item);
    }
}

static cJSON *strv(jw *j, char *const *v, size_t n)
{
    cJSON *a = chk(j, cJSON_CreateArray());
    for (size_t i = 0; a && i < n; i++) {
        char *u = sr_report_utf8_dup(v[i] ? v[i] : "");
        push(j, a, u ? cJSON_CreateString(u) : NULL);
        free(u);
    }
    return a;
}

/* The exact histogram: sparse [bucket lower bound, count] pairs plus min, max and sum. */
static cJSON *hist_json(jw *j, const sr_hist *h)
{
    cJSON *o = chk(j, cJSON_CreateObject());
    uint64_t n = sr_hist_count(h);
    add_num(j, o, "min_ns", (double)sr_hist_min(h));
    add_num(j, o, "max_ns", (double)sr_hist_max(h));
    add_num(j, o, "sum_ns", n ? (double)llroundl((long double)sr_hist_mean(h) * n) : 0.0);
    cJSON *b = chk(j, cJSON_CreateArray());
    size_t nb = sr_hist_buckets();
    for (size_t i = sr_hist_next_bucket(h, 0); b && i < nb; i = sr_hist_next_bucket(h, i + 1)) {
        uint64_t c = sr_hist_bucket_count(h, i);
        uint64_t lo, hi;
        sr_hist_bucket_range(i, &lo, &hi);
        cJSON *pair = chk(j, cJSON_CreateArray());
        push(j, pair, cJSON_CreateNumber((double)lo));
        push(j, pair, cJSON_CreateNumber((double)c));
        push(j, b, pair);
    }
    attach(j, o, "buckets", b);
    return o;
}

/* A phase's thread CPU time: the sampled events' count, sum and mean. */
static cJSON *cpu_json(jw *j, const sr_phase_cpu *c)
{
    cJSON *o = chk(j, cJSON_CreateObject());
    add_num(j, o, "count", (double)c->count);
    add_num(j, o, "sum_ns", (double)c->sum_ns);
    add_num(j, o, "mean_ms", c->count ? (double)c->sum_ns / (double)c->count / 1e6 : 0.0);
    return o;
}

static cJSON *phases(jw *j, sr_hist *const *h, const sr_phase_cpu *cpu)
{
    cJSON *o = chk(j, cJSON_CreateObject());
    for (int p = 0; o && p < SR_PHASE_COUNT; p++) {
        sr_latency_row r;
        sr_report_latency(&r, h[p]);
        cJSON *e = chk(j, cJSON_CreateObject());
        add_num(j, e, "count", (double)r.count);
        add_num(j, e, "min_ms", (double)r.min / 1e6);
        add_num(j, e, "p50_ms", (double)r.p50 / 1e6);
        add_num(j, e, "p90_ms", (double)r.p90 / 1e6);
        add_num(j, e, "p99_ms", (double)r.p99 / 1e6);
        add_num(j, e, "p999_ms", (double)r.p999 / 1e6);
        add_num(j, e, "max_ms", (double)r.max / 1e6);
        add_num(j, e, "mean_ms", r.mean / 1e6);
        attach(j, e, "hist", hist_json(j, h[p]));
        attach(j, e, "cpu", cpu_json(j, &cpu[p]));
        attach(j, o, sr_phase_name((sr_phase)p), e);
    }
    return o;
}

static cJSON *counters(jw *j, const sr_counters *c)
{
    cJSON *o = chk(j, cJSON_CreateObject());
    add_num(j, o, "rollouts_requested", (double)c->rollouts_requested);
    add_num(j, o, "rollouts_verified", (double)c->rollouts_verified);
    add_num(j, o, "rollouts_failed", (double)c->rollouts_failed);
    add_num(j, o, "turns", (double)c->turns);
    add_num(j, o, "attempts", (double)c->attempts);
    add_num(j, o, "retries", (double)c->retries);
    add_num(j, o, "bytes_sent", (double)c->bytes_sent);
    add_num(j, o, "bytes_received", (double)c->bytes_received);
    add_num(j, o, "tokens_verified", (double)c->tokens_verified);
    add_num(j, o, "rows_verified", (double)c->rows_verified);
    add_num(j, o, "collations", (double)c->collations);
    add_num(j, o, "syncs", (double)c->syncs);
    return o;
}

/* kept: the scenario's artifacts folder is there, so its evidence paths resolve. */
static cJSON *check_json(jw *j, const sr_check *c, int kept)
{
    cJSON *o = chk(j, cJSON_CreateObject());
    add_str(j, o, "name", c->name);
    add_str(j, o, "classification", c->classification[0] ? c->classification : NULL);
    add_str(j, o, "message", c->message);
    add_bool(j, o, "expected", c->expected);
    cJSON *w = chk(j, cJSON_CreateObject());
    add_opt(j, w, "step", c->where.step);
    add_opt(j, w, "engine", c->where.engine);
    add_opt(j, w, "sample", c->where.sample);
    add_opt(j, w, "turn", c->where.turn);
    add_opt(j, w, "row", c->where.row);
    add_opt(j, w, "layer", c->where.layer);
    attach(j, o, "where", w);
    add_str(j, o, "evidence", kept && c->evidence[0] ? c->evidence : NULL);
    add_bool(j, o, "evidence_cut", c->evidence_cut);
    return o;
}

static cJSON *counts(jw *j, const sr_check_count *c, size_t n)
{
    cJSON *o = chk(j, cJSON_CreateObject());
    for (size_t i = 0; o && i < n; i++)
        add_num(j, o, c[i].name, (double)c[i].count);
    return o;
}

static cJSON *steps_json(jw *j, const sr_scenario_result *s)
{
    cJSON *a = chk(j, cJSON_CreateArray());
    for (size_t i = 0; a && i < s->n_steps; i++) {
        const sr_step_timing *t = &s->steps[i];
        cJSON *e = chk(j, cJSON_CreateObject());
        add_num(j, e, "index", t->index);
        add_str(j, e, "kind", t->kind);
        add_str(j, e, "name", t->name);
        add_num(j, e, "start_ms", t->start_ms);
        add_num(j, e, "end_ms", t->end_ms);
        add_str(j, e, "error", t->code ? sr_report_code_name(t->code) : NULL);
        push(j, a, e);
    }
    return a;
}

static cJSON *engines_json(jw *j, const sr_scenario_result *s)
{
    cJSON *a = chk(j, cJSON_CreateArray());
    for (size_t i = 0; a && i < s->n_engines; i++) {
        const sr_engine_run *e = &s->engines[i];
        cJSON *x = chk(j, cJSON_CreateObject());
        add_num(j, x, "index", e->index);
        add_str(j, x, "url", e->url);
        add_opt(j, x, "pid", e->pid);
        add_str(j, x, "log", e->log);
        add_str(j, x, "exit", e->exit);
        push(j, a, x);
    }
    return a;
}

static cJSON *scenario_json(jw *j, const sr_scenario_result *s)
{
    cJSON *o = chk(j, cJSON_CreateObject());
    add_str(j, o, "id", s->id);
    add_str(j, o, "file", s->file);
    add_str(j, o, "description", s->description);
    attach(j, o, "tags", strv(j, s->tags, s->n_tags));
    add_num(j, o, "seed", (double)s->seed);
    add_num(j, o, "repeat", s->repeat);
    if (s->shard)
        add_num(j, o, "shard", s->shard);
    add_bool(j, o, "external_engines", s->external);
    add_str(j, o, "verdict", sr_verdict_name(s->verdict));
    add_str(j, o, "reason", s->reason[0] ? s->reason : NULL);
    cJSON *ex = chk(j, cJSON_CreateObject());
    add_str(j, ex, "verdict", sr_verdict_name(s->expect_verdict));
    attach(j, ex, "checks", strv(j, s->expect_checks, s->n_expect_checks));
    attach(j, o, "expect", ex);
    cJSON *ck = chk(j, cJSON_CreateArray());
    for (size_t i = 0; ck && i < s->n_checks; i++)
        push(j, ck, check_json(j, &s->checks[i], s->artifacts != NULL));
    attach(j, o, "checks", ck);
    add_num(j, o, "checks_dropped", (double)s->checks_dropped);
    attach(j, o, "fired", counts(j, s->fired, s->n_fired));
    attach(j, o, "classifications", counts(j, s->fired_classes, s->n_fired_classes));
    cJSON *sk = chk(j, cJSON_CreateArray());
    for (size_t i = 0; sk && i < s->n_skipped; i++) {
        cJSON *e = chk(j, cJSON_CreateObject());
        add_str(j, e, "name", s->skipped[i].name);
        add_str(j, e, "reason", s->skipped[i].reason);
        push(j, sk, e);
    }
    attach(j, o, "skipped_checks", sk);
    add_str(j, o, "repro", s->repro);
    add_str(j, o, "expanded", s->expanded);
    add_str(j, o, "artifacts", s->artifacts);
    add_num(j, o, "start_ms", s->start_ms);
    add_num(j, o, "wall_ms", s->wall_ms);
    attach(j, o, "steps", steps_json(j, s));
    attach(j, o, "engines", engines_json(j, s));
    attach(j, o, "counters", counters(j, &s->counters));
    attach(j, o, "phases", phases(j, s->phase, s->cpu));
    return o;
}

/* A merged run's shards: [{"shard": k, "run_id", "hostname", "command"}] in shard order. */
static cJSON *shards_json(jw *j, const sr_run_header *h)
{
    cJSON *a = chk(j, cJSON_CreateArray());
    for (size_t i = 0; a && i < h->n_shards; i++) {
        cJSON *e = chk(j, cJSON_CreateObject());
        add_num(j, e, "shard", h->shards[i].k);
        add_str(j, e, "run_id", h->shards[i].run_id);
        add_str(j, e, "hostname", h->shards[i].hostname);
        add_str(j, e, "command", h->shards[i].command);
        push(j, a, e);
    }
    return a;
}

static cJSON *header_json(jw *j, const sr_run_result *run)
{
    const sr_run_header *h = &run->header;
    cJSON *o = chk(j, cJSON_CreateObject());
    add_str(j, o, "version", h->version);
    add_str(j, o, "git_rev", h->git_rev);
    add_str(j, o, "run_id", h->run_id);
    add_str(j, o, "run_group", h->run_group);
    add_str(j, o, "selection", h->selection);
    if (h->merged_from)
        attach(j, o, "merged_from", strv(j, h->merged_from, h->n_merged_from));
    else
        add_str(j, o, "merged_from", NULL);
    if (h->merged_of) {
        add_num(j, o, "merged_of", h->merged_of);
        attach(j, o, "shards", shards_json(j, h));
    }
    add_str(j, o, "out_dir", h->out_dir);
    cJSON *m = chk(j, cJSON_CreateObject());
    add_str(j, m, "hostname", h->hostname);
    add_str(j, m, "kernel", h->kernel);
    add_str(j, m, "arch", h->arch);
    add_num(j, m, "cpus", h->cpus);
    attach(j, o, "machine", m);
    add_str(j, o, "command", h->command);
    if (h->has_seed)
        add_num(j, o, "seed", (double)h->seed);
    else
        add_str(j, o, "seed", NULL);
    cJSON *op = chk(j, cJSON_CreateObject());
    add_num(j, op, "jobs", h->jobs);
    add_num(j, op, "repeat", h->repeat);
    add_bool(j, op, "until_fail", h->until_fail);
    char sh[32];
    snprintf(sh, sizeof(sh), "%d/%d", h->shard_k, h->shard_n);
    add_str(j, op, "shard", h->shard_n ? sh : NULL);
    add_str(j, op, "shard_source", h->shard_source);
    add_str(j, op, "shard_detail", h->shard_detail);
    attach(j, op, "tags", strv(j, h->tags, h->n_tags));
    attach(j, op, "exclude_tags", strv(j, h->exclude_tags, h->n_exclude_tags));
    add_bool(j, op, "keep", h->keep);
    attach(j, o, "options", op);
    cJSON *t = chk(j, cJSON_CreateObject());
    add_str(j, t, "iso", h->start_iso);
    add_num(j, t, "unix_ms", (double)h->start_unix_ms);
    attach(j, o, "start", t);
    add_num(j, o, "wall_ms", run->wall_ms);
    return o;
}

/* Prints a tree with cJSON's layout and appends it to w; `indent` tabs follow every newline, as
 * if the tree were printed that deep inside a larger one (strings never hold a raw newline). */
static void put_tree(sr_rw *w, cJSON *tree, int bad, int indent)
{
    char *txt = bad ? NULL : cJSON_Print(tree);
    cJSON_Delete(tree);
    if (!txt) {
        if (!w->rc)
            w->rc = sr_err_set(w->err, SR_E_NOMEM, "cannot build results.json");
        return;
    }
    static const char tabs[] = "\t\t\t\t";
    const char *p = txt;
    for (const char *nl; (nl = strchr(p, '\n')); p = nl + 1) {
        sr_rw_put(w, p, (size_t)(nl - p) + 1);
        sr_rw_put(w, tabs, (size_t)indent);
    }
    sr_rw_puts(w, p);
    free(txt);
}

/*
 * The document is printed one scenario execution at a time: the run's tree with an empty
 * "scenarios" list, cut where that list opens, then each execution's tree at the depth it has
 * inside the list. The bytes are those of printing the whole tree at once, but only one
 * execution's tree exists at a time (a whole run's tree took ~20 KB per execution).
 */
void sr_report_json(sr_rw *w, const sr_run_result *run)
{
    jw j = {0};
    cJSON *root = chk(&j, cJSON_CreateObject());
    add_num(&j, root, "schema", SR_RESULT_SCHEMA_VERSION);
    /* A run cut short by a stop signal: the scenarios marked "interrupted" did not finish. */
    add_bool(&j, root, "partial", run->partial);
    add_str(&j, root, "partial_reason", run->partial ? run->partial_reason : NULL);
    attach(&j, root, "run", header_json(&j, run));
    cJSON *tot = chk(&j, cJSON_CreateObject());
    for (int v = 0; v < SR_VERDICT_COUNT; v++)
        add_num(&j, tot, sr_verdict_name((sr_verdict)v), (double)run->counts[v]);
    attach(&j, tot, "counters", counters(&j, &run->counters));
    attach(&j, root, "totals", tot);
    attach(&j, root, "phases", phases(&j, run->phase, run->cpu));
    attach(&j, root, "scenarios", chk(&j, cJSON_CreateArray()));
    char *txt = j.bad ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    /* "scenarios" is the last member, so the text ends with its empty list. */
    static const char tail[] = "\"scenarios\":\t[]\n}";
    size_t n = txt ? strlen(txt) : 0, nt = sizeof(tail) - 1;
    if (!txt || n < nt || strcmp(txt + n - nt, tail) != 0) {
        free(txt);
        if (!w->rc)
            w->rc = sr_err_set(w->err, SR_E_NOMEM, "cannot build results.json");
        return;
    }
    sr_rw_put(w, txt, n - 3); /* up to and with the '[' */
    free(txt);
    for (size_t i = 0; i < run->n_scenarios && !w->rc; i++) {
        if (i)
            sr_rw_puts(w, ", ");
        jw js = {0};
        cJSON *sc = scenario_json(&js, run->scenarios[i]);
        put_tree(w, sc, js.bad, 2);
    }
    sr_rw_puts(w, "]\n}\n");
}
