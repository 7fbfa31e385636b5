/* Loading a scenario: steps, expect and budgets (scenario.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario_priv.h"
#include "spec/checks.h"
#include "sr_oracle.h"
#include "sr_suggest.h"
#include "sr_trace.h"
#include "sr_weights.h"

#define DAY_MS SR_SCN_MAX_TIMEOUT

int sr_scenario_known_check(const char *name)
{
    return sr_check_known(name);
}

int sr_scenario_known_class(const char *name)
{
    return sr_row_class_lookup(name) >= 0;
}

static int engine_index(scn_parse *p, const cJSON *obj, const char *key, int nullable, int64_t dflt,
                        int64_t *out)
{
    int64_t n = p->s->engine.count;
    int rc = sr_scn_int(p, obj, key, 0, SR_ENGINE_MAX_COUNT - 1, dflt, nullable, out);
    if (!rc && *out >= n)
        return sr_scn_fail(p, sr_scn_member(obj, key),
                           "'%s' is engine %lld but the scenario has %lld engine(s)", key,
                           (long long)*out, (long long)n);
    return rc;
}

static int min_max(scn_parse *p, const cJSON *st, const char *key, int64_t lo, int64_t hi,
                   int64_t dmin, int64_t dmax, int64_t *mn, int64_t *mx)
{
    const cJSON *o = sr_scn_member(st, key);
    char path[64];
    snprintf(path, sizeof(path), "steps.rollout.%s", key);
    *mn = dmin;
    *mx = dmax;
    if (!o)
        return 0;
    int rc = sr_scn_check_object(p, o, path);
    if (!rc)
        rc = sr_scn_int(p, o, "max", lo, hi, dmax, 0, mx);
    /* A lone bound drags the other default along, so {"max": 2} or {"min": 40} just work. */
    if (!rc)
        rc = sr_scn_int(p, o, "min", lo, hi, dmin < *mx ? dmin : *mx, 0, mn);
    if (!rc && !sr_scn_member(o, "max") && *mx < *mn)
        *mx = *mn;
    if (!rc && *mx < *mn)
        return sr_scn_fail(p, o, "%s.max (%lld) is below %s.min (%lld)", key, (long long)*mx, key,
                           (long long)*mn);
    return rc;
}

static int parse_rollout(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    (void)self;
    static const char *const modes[] = {"multi_turn", "single_turn", NULL};
    const sr_engine_config *c = &p->s->engine;
    sr_scn_rollout *r = &step->rollout;
    const char *mode;
    int rc = sr_scn_bool(p, st, "async", 0, 0, &step->async);
    if (!rc)
        rc = sr_scn_int(p, st, "batch", 1, SR_SCN_MAX_BATCH, 1, 0, &r->batch);
    if (!rc)
        rc = sr_scn_int(p, st, "turns", 1, 1024, 1, 0, &r->turns);
    if (!rc)
        rc = min_max(p, st, "prompt_tokens", 1, SR_ORACLE_MAX_SEQ, 4, 16, &r->prompt_min,
                     &r->prompt_max);
    if (!rc)
        rc = min_max(p, st, "observation_tokens", 0, 65536, 2, 4, &r->obs_min, &r->obs_max);
    if (!rc)
        rc = sr_scn_int(p, st, "max_tokens", 1, SR_ORACLE_MAX_SEQ, 8, 0, &r->max_tokens);
    if (!rc && !(rc = sr_scn_str(p, st, "mode", "multi_turn", modes, &mode)))
        r->multi_turn = strcmp(mode, "multi_turn") == 0;
    if (!rc)
        rc = sr_scn_bool(p, st, "routes", 1, 0, &r->routes);
    if (!rc)
        rc = sr_scn_bool(p, st, "logprobs", 1, 0, &r->logprobs);
    if (!rc)
        rc = sr_scn_bool(p, st, "ignore_eos", 0, 0, &r->ignore_eos);
    if (!rc)
        rc = sr_scn_bool(p, st, "sample_support", 0, 0, &r->sample_support);
    /* Only the later stack asks for the support, and only skyrl's wire carries it. */
    if (!rc && r->sample_support && p->s->client.stack != SR_STACK_2086)
        return sr_scn_fail(p, sr_scn_member(st, "sample_support"),
                           "sample_support needs client.stack \"2086\" (the #2079 stack has no "
                           "per-request sample support)");
    if (!rc && r->sample_support &&
        (p->s->engine.dialect != SR_DIALECT_SKYRL || (p->s->dialects & ~1u)))
        return sr_scn_fail(p, sr_scn_member(st, "sample_support"),
                           "sample_support runs in the skyrl dialect only (no other wire carries "
                           "rollout_sample_support)");
    const cJSON *ids = sr_scn_member(st, "stop_token_ids");
    if (!rc && ids) {
        if (!cJSON_IsArray(ids) || cJSON_GetArraySize(ids) > SR_SCN_MAX_LIST)
            return sr_scn_fail(p, ids, "stop_token_ids must be an array of at most %d ids",
                               SR_SCN_MAX_LIST);
        const cJSON *e;
        cJSON_ArrayForEach(e, ids)
        {
            if (!cJSON_IsNumber(e) || !sr_json_is_integer_literal(p->doc, e) ||
                e->valuedouble < 0 || e->valuedouble >= (double)c->vocab)
                return sr_scn_fail(p, e, "stop_token_ids entries must be token ids in [0, vocab)");
            r->stop_ids[r->n_stop_ids++] = (int32_t)e->valuedouble;
        }
    }
    if (!rc)
        rc = sr_scn_bool(p, st, "append_eos_after_stop", 0, 0, &r->append_eos_after_stop);
    if (!rc && r->append_eos_after_stop && c->eos_id < 0)
        return sr_scn_fail(p, sr_scn_member(st, "append_eos_after_stop"),
                           "append_eos_after_stop needs model.eos_id >= 0");
    if (!rc)
        rc =
            sr_scn_int(p, st, "max_input_length", 0, SR_ORACLE_MAX_SEQ, 0, 0, &r->max_input_length);
    if (!rc)
        rc = sr_scn_bool(p, st, "finish_session", 1, 0, &r->finish_session);
    if (!rc)
        rc = sr_scn_int(p, st, "max_rollout_tokens", 1, SR_ORACLE_MAX_SEQ,
                        SR_TRACE_DEFAULT_MAX_ROWS, 0, &r->max_rollout_tokens);
    if (!rc)
        rc = sr_scn_int(p, st, "max_trace_bytes", 1, (int64_t)1 << 40,
                        (int64_t)SR_TRACE_DEFAULT_MAX_BYTES, 0, &r->max_trace_bytes);
    /* The longest trajectory must fit the engines' sequence bound, or the run fails for a
     * reason the scenario did not mean to test. */
    int64_t longest = r->prompt_max + r->turns * (r->max_tokens + 1 + r->obs_max);
    if (!rc && p->s->n_urls == 0 && longest > c->max_seq)
        return sr_scn_fail(p, st,
                           "a trajectory may reach %lld tokens, more than engines.server.max_seq "
                           "(%lld)",
                           (long long)longest, (long long)c->max_seq);
    return rc;
}

static int parse_sync(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    (void)self;
    int rc = sr_scn_bool(p, st, "async", 0, 0, &step->async);
    if (!rc)
        rc = sr_scn_int(p, st, "version", 0, SR_WEIGHTS_MAX_VERSION, -1, 1, &step->sync.version);
    if (!rc)
        rc = sr_scn_int(p, st, "deadline_ms", 1, DAY_MS, 60000, 0, &step->sync.deadline_ms);
    return rc;
}

static int find_step(const sr_scenario *s, int before, const char *name)
{
    for (int i = 0; i < before; i++)
        if (strcmp(s->steps[i].name, name) == 0)
            return i;
    return -1;
}

/* A list of names of earlier steps whose kind is accepted by `ok` (a bit mask of kinds). */
static int step_refs(scn_parse *p, const cJSON *list, int self, unsigned ok, int *out, int *n)
{
    *n = 0;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 ||
        cJSON_GetArraySize(list) > SR_SCN_MAX_LIST)
        return sr_scn_fail(p, list, "expected null or an array of 1..%d step names",
                           SR_SCN_MAX_LIST);
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        int j = cJSON_IsString(e) ? find_step(p->s, self, e->valuestring) : -1;
        if (j < 0)
            return sr_scn_fail(p, e, "not the name of an earlier step");
        const sr_scn_step *t = &p->s->steps[j];
        if (!(ok & (1u << t->kind)))
            return sr_scn_fail(p, e, "step %s is a %s step, which cannot be referenced here",
                               t->name, sr_step_kind_name(t->kind));
        out[(*n)++] = j;
    }
    return 0;
}

static int parse_collate(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    sr_scn_collate *c = &step->collate;
    const cJSON *r = sr_scn_member(st, "rollouts");
    int rc = 0;
    if (r && !cJSON_IsNull(r)) {
        rc = step_refs(p, r, self, 1u << SR_STEP_ROLLOUT, c->rollouts, &c->n_rollouts);
        c->explicit_rollouts = 1;
    } else {
        for (int j = self - 1; j >= 0 && !c->n_rollouts; j--)
            if (p->s->steps[j].kind == SR_STEP_ROLLOUT)
                c->rollouts[c->n_rollouts++] = j;
        if (!c->n_rollouts)
            return sr_scn_fail(p, st, "a collate step needs an earlier rollout step");
    }
    if (!rc)
        rc = sr_scn_int(p, st, "workers", 0, 1024, 0, 0, &c->workers);
    if (!rc)
        rc = sr_scn_int(p, st, "cap", 1, 1024, 32, 0, &c->cap);
    if (!rc)
        rc = sr_scn_int(p, st, "reserved_cores", 0, 1024, 8, 0, &c->reserved_cores);
    return rc;
}

static int parse_wait(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    sr_scn_wait *w = &step->wait;
    const cJSON *f = sr_scn_member(st, "for"), *u = sr_scn_member(st, "until");
    int rc = 0;
    w->engine = 0;
    w->min_inflight = w->min_held = w->min_generate = -1;
    if (f && !cJSON_IsNull(f)) {
        unsigned ok = (1u << SR_STEP_ROLLOUT) | (1u << SR_STEP_SYNC_WEIGHTS);
        rc = step_refs(p, f, self, ok, w->for_steps, &w->n_for);
        for (int i = 0; !rc && i < w->n_for; i++)
            if (!p->s->steps[w->for_steps[i]].async)
                return sr_scn_fail(p, f, "step %s is not async; only async steps can be waited for",
                                   p->s->steps[w->for_steps[i]].name);
        w->has_for = 1;
    }
    if (!rc && u && !cJSON_IsNull(u)) {
        if (w->has_for)
            return sr_scn_fail(p, u, "a wait step takes `for` or `until`, not both");
        w->has_until = 1;
        rc = sr_scn_check_object(p, u, "steps.wait.until");
        if (!rc)
            rc = engine_index(p, u, "engine", 0, 0, &w->engine);
        if (!rc)
            rc = sr_scn_int(p, u, "min_inflight", 0, 1 << 20, -1, 1, &w->min_inflight);
        if (!rc)
            rc = sr_scn_int(p, u, "min_held", 0, 1 << 20, -1, 1, &w->min_held);
        if (!rc)
            rc = sr_scn_int(p, u, "min_generate_requests", 0, INT32_MAX, -1, 1, &w->min_generate);
        if (!rc && w->min_inflight < 0 && w->min_held < 0 && w->min_generate < 0)
            return sr_scn_fail(p, u, "until needs at least one condition");
    }
    if (!rc)
        rc = sr_scn_int(p, st, "timeout_ms", 1, DAY_MS, 10000, 0, &w->timeout_ms);
    if (!rc)
        rc = sr_scn_int(p, st, "poll_ms", 1, 10000, 5, 0, &w->poll_ms);
    if (!rc && w->has_until && p->s->n_urls > 0)
        return sr_scn_fail(p, u,
                           "wait.until reads /syncroll/v1/state, which external engines "
                           "do not serve");
    return rc;
}

static int parse_counts_map(scn_parse *p, const cJSON *m, sr_scn_check_state *c, int faults)
{
    if (!cJSON_IsObject(m))
        return sr_scn_fail(p, m, "expected an object of names to counts");
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
    {
        if (!cJSON_IsNumber(e) || !sr_json_is_integer_literal(p->doc, e) || e->valuedouble < 0 ||
            e->valuedouble > 9e15)
            return sr_scn_fail(p, e, "'%s' must be a non-negative integer", e->string);
        int64_t v = (int64_t)e->valuedouble;
        if (faults) {
            if (!sr_fault_plan_find(p->s->engine.faults, e->string))
                return sr_scn_fail(p, e,
                                   "no fault of engines.faults has the id '%s' (default "
                                   "ids are <kind>#<index>)",
                                   e->string);
            sr_scn_fault_count *fc = &c->faults_fired[c->n_faults_fired++];
            snprintf(fc->id, sizeof(fc->id), "%s", e->string);
            fc->fired = v;
            continue;
        }
        int ep = -1;
        for (int i = 0; i < SR_EP_COUNT; i++)
            if (strcmp(sr_endpoint_name((sr_endpoint)i), e->string) == 0)
                ep = i;
        if (ep < 0)
            return sr_scn_fail(p, e, "'%s' is not an endpoint name (faults.h)", e->string);
        c->requests[ep] = v;
    }
    return 0;
}

static int parse_check_state(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    (void)self;
    sr_scn_check_state *c = &step->check;
    struct {
        const char *key;
        int64_t *dst;
        int is_bool;
    } f[] = {{"weight_version", &c->weight_version, 0},
             {"paused", &c->paused, 1},
             {"sleeping", &c->sleeping, 1},
             {"sessions", &c->sessions, 0},
             {"inflight", &c->inflight, 0},
             {"held", &c->held, 0}};
    int rc = engine_index(p, st, "engine", 1, -1, &c->engine);
    for (size_t i = 0; !rc && i < sizeof(f) / sizeof(f[0]); i++) {
        *f[i].dst = SR_SCN_UNCHECKED;
        const cJSON *v = sr_scn_member(st, f[i].key);
        if (!v || cJSON_IsNull(v))
            continue;
        int b;
        if (f[i].is_bool && !(rc = sr_scn_bool(p, st, f[i].key, 0, 0, &b)))
            *f[i].dst = b;
        else if (!f[i].is_bool)
            rc = sr_scn_int(p, st, f[i].key, 0, INT64_MAX / 2, 0, 0, f[i].dst);
    }
    for (int i = 0; i < SR_EP_COUNT; i++)
        c->requests[i] = SR_SCN_UNCHECKED;
    const cJSON *m;
    if (!rc && p->s->n_urls > 0)
        return sr_scn_fail(p, st,
                           "check_state reads /syncroll/v1/state, which external engines "
                           "do not serve");
    if (!rc && (m = sr_scn_member(st, "requests")))
        rc = parse_counts_map(p, m, c, 0);
    if (!rc && (m = sr_scn_member(st, "faults_fired")))
        rc = parse_counts_map(p, m, c, 1);
    return rc;
}

static int parse_pause(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    static const char *const modes[] = {"keep", "abort", "wait", NULL};
    const char *t;
    (void)self;
    int rc = engine_index(p, st, "engine", 1, -1, &step->pause.engine);
    if (!rc && !(rc = sr_scn_str(p, st, "mode", "keep", modes, &t)))
        snprintf(step->pause.mode, sizeof(step->pause.mode), "%s", t);
    if (!rc)
        rc = sr_scn_bool(p, st, "clear_cache", 0, 0, &step->pause.clear_cache);
    return rc;
}

static int parse_resume(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    (void)self;
    return engine_index(p, st, "engine", 1, -1, &step->resume_engine);
}

static int parse_sleep(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    (void)self;
    int rc = engine_index(p, st, "engine", 1, -1, &step->sleep.engine);
    if (!rc)
        rc = sr_scn_int(p, st, "level", 0, 2, 1, 0, &step->sleep.level);
    return rc;
}

static int parse_wake(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    static const char *const tags[] = {"all", "weights", "kv_cache", NULL};
    const char *t;
    (void)self;
    int rc = engine_index(p, st, "engine", 1, -1, &step->sleep.engine);
    if (!rc && !(rc = sr_scn_str(p, st, "tags", "all", tags, &t)))
        snprintf(step->sleep.tags, sizeof(step->sleep.tags), "%s", t);
    return rc;
}

static int parse_kill(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    static const char *const sigs[] = {"KILL", "TERM", "SEGV", "ABRT", NULL};
    static const int signos[] = {SIGKILL, SIGTERM, SIGSEGV, SIGABRT};
    const char *t;
    (void)self;
    if (p->s->n_urls > 0)
        return sr_scn_fail(p, st, "kill_engine cannot kill external engines (engines.urls)");
    int rc = engine_index(p, st, "engine", 0, 0, &step->kill.engine);
    if (!rc && !(rc = sr_scn_str(p, st, "signal", "KILL", sigs, &t))) {
        snprintf(step->kill.sig_name, sizeof(step->kill.sig_name), "%s", t);
        for (int i = 0; sigs[i]; i++)
            if (strcmp(sigs[i], t) == 0)
                step->kill.sig = signos[i];
    }
    return rc;
}

static int parse_probe(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    (void)self;
    int rc = engine_index(p, st, "engine", 0, 0, &step->probe.engine);
    if (!rc)
        rc = sr_scn_int(p, st, "budget", 1, 10000, 40, 0, &step->probe.budget);
    if (!rc)
        rc = sr_scn_bool(p, st, "sync", 0, 0, &step->probe.sync);
    /* The probe's requests carry no X-Session-ID, and its relations compare whole replies of a
     * repeated request, which vllm#57025's omission shortens on the repeat. */
    if (!rc && p->s->engine.omit_prefix)
        rc = sr_scn_fail(p, st,
                         "a probe step cannot run against engines.omit_prefix_routes "
                         "(its requests carry no X-Session-ID and its relations compare "
                         "whole replies of repeated requests)");
    return rc;
}

/* The capture folder, resolved against the scenario's folder (or taken as written when
 * absolute); it must hold a capture index, so lint finds a fixture that is not there. */
static int parse_replay(scn_parse *p, const cJSON *st, sr_scn_step *step, int self)
{
    const char *cap = NULL, *dia = NULL;
    const cJSON *d = sr_scn_member(st, "dialect");
    (void)self;
    int rc = sr_json_get_string(p->doc, st, "capture", 1, NULL, &cap, p->err);
    if (!rc)
        rc = sr_scn_folder(p, sr_scn_member(st, "capture"), cap, "capture.jsonl", "capture",
                           "a folder holding capture.jsonl, as `syncroll proxy "
                           "--record` writes",
                           step->replay.capture, sizeof step->replay.capture);
    step->replay.dialect = -1;
    if (!rc && d && !cJSON_IsNull(d) &&
        !(rc = sr_json_get_string(p->doc, st, "dialect", 0, NULL, &dia, p->err)) &&
        (step->replay.dialect = sr_dialect_lookup(dia)) < 0) {
        char names[256];
        rc = sr_scn_fail(p, d, "'dialect' %s is not a dialect (one of %s)", dia,
                         sr_dialect_names(names, sizeof names, ", "));
    }
    return rc;
}

/* The parser of each step kind, from the step-kind table (scenario.h). */
typedef int (*step_parser)(scn_parse *p, const cJSON *st, sr_scn_step *step, int self);
static const step_parser parsers[SR_STEP_KIND_COUNT] = {
#define PARSER_ROW(name, sym, parse, write, doc) [SR_STEP_##sym] = parse,
    SR_STEP_KIND_TABLE(PARSER_ROW)
#undef PARSER_ROW
};

static int parse_name(scn_parse *p, const cJSON *st, sr_scn_step *step, int i)
{
    const char *name;
    char dflt[SR_SCN_NAME_MAX];
    snprintf(dflt, sizeof(dflt), "%s-%d", sr_step_kind_name(step->kind), i);
    int rc = sr_scn_str(p, st, "name", dflt, NULL, &name);
    if (rc)
        return rc;
    size_t n = strlen(name);
    int ok = n > 0 && n < SR_SCN_NAME_MAX;
    for (size_t k = 0; ok && k < n; k++)
        ok = (name[k] >= 'a' && name[k] <= 'z') || (name[k] >= 'A' && name[k] <= 'Z') ||
             (name[k] >= '0' && name[k] <= '9') || strchr("._-", name[k]);
    if (!ok)
        return sr_scn_fail(p, sr_scn_member(st, "name"),
                           "a step name is 1..%d bytes of [A-Za-z0-9._-]", SR_SCN_NAME_MAX - 1);
    if (find_step(p->s, i, name) >= 0)
        return sr_scn_fail(p, sr_scn_member(st, "name") ? sr_scn_member(st, "name") : st,
                           "step name '%s' is used twice", name);
    snprintf(step->name, sizeof(step->name), "%s", name);
    return 0;
}

/* An unknown expect.checks name: the closest of the verifier's own checks and the module errors,
 * and the own checks listed (`syncroll errors` lists the module errors, too many to print). */
static int unknown_check(scn_parse *p, const cJSON *at, const char *name)
{
    size_t own = sr_check_info_count(), n = own + sr_code_count();
    const char **names = calloc(n, sizeof(*names));
    if (!names)
        return sr_err_set(p->err, SR_E_NOMEM, "cannot list the check names");
    for (size_t i = 0; i < own; i++)
        names[i] = sr_check_info_at(i)->name;
    for (size_t i = own; i < n; i++)
        names[i] = sr_code_name(sr_code_at(i - own));
    const char *near = sr_suggest_closest(name, names, n);
    char hint[360];
    sr_suggest_text(hint, sizeof(hint), name, names, own,
                    "the verifier's checks (`syncroll errors` lists the module errors)");
    int rc = near && !sr_suggest_closest(name, names, own)
                 ? sr_scn_fail(p, at, "'%s' is not a check name; did you mean '%s'? %s", name, near,
                               hint)
                 : sr_scn_fail(p, at, "'%s' is not a check name; %s", name, hint);
    free(names);
    return rc;
}

static int parse_step(scn_parse *p, const cJSON *st, int i)
{
    sr_scn_step *step = &p->s->steps[i];
    const char *kind;
    if (!cJSON_IsObject(st))
        return sr_scn_fail(p, st, "a step must be an object");
    int rc = sr_json_get_string(p->doc, st, "kind", 1, NULL, &kind, p->err);
    if (rc)
        return rc;
    int k = sr_step_kind_lookup(kind);
    if (k < 0) {
        const char *names[SR_STEP_KIND_COUNT];
        for (int j = 0; j < SR_STEP_KIND_COUNT; j++)
            names[j] = sr_step_kind_name((sr_step_kind)j);
        char hint[400];
        sr_suggest_text(hint, sizeof(hint), kind, names, SR_STEP_KIND_COUNT, "step kinds");
        return sr_json_error(p->doc, sr_scn_member(st, "kind"), p->err, SR_E_JSON_SCHEMA,
                             "unknown step kind '%s'; %s", kind, hint);
    }
    step->kind = (sr_step_kind)k;
    int line = 0, col = 0;
    sr_json_where(p->doc, st, 0, &line, &col);
    step->line = line;
    char path[48];
    snprintf(path, sizeof(path), "steps.%s", kind);
    rc = sr_scn_check_object(p, st, path);
    if (!rc)
        rc = parse_name(p, st, step, i);
    if (rc)
        return rc;
    return parsers[step->kind](p, st, step, i);
}

int sr_scn_parse_steps(scn_parse *p, const cJSON *root)
{
    const cJSON *steps = sr_scn_member(root, "steps");
    if (!steps)
        return sr_json_error(p->doc, root, p->err, SR_E_JSON_SCHEMA,
                             "missing required key 'steps'");
    if (!cJSON_IsArray(steps) || cJSON_GetArraySize(steps) < 1 ||
        cJSON_GetArraySize(steps) > SR_SCN_MAX_STEPS)
        return sr_json_error(p->doc, steps, p->err, SR_E_JSON_SCHEMA,
                             "'steps' must be an array of 1..%d steps", SR_SCN_MAX_STEPS);
    int n = cJSON_GetArraySize(steps);
    p->s->steps = calloc((size_t)n, sizeof(*p->s->steps));
    if (!p->s->steps)
        return SR_E_NOMEM;
    int i = 0;
    const cJSON *st;
    cJSON_ArrayForEach(st, steps)
    {
        int rc = parse_step(p, st, i);
        if (rc)
            return rc;
        p->s->n_steps = ++i;
    }
    return 0;
}

int sr_scn_parse_expect(scn_parse *p, const cJSON *root)
{
    static const char *const verdicts[] = {"pass", "fail", NULL};
    sr_scenario *s = p->s;
    const cJSON *ex = sr_scn_member(root, "expect");
    const char *v;
    if (!ex)
        return 0;
    int rc = sr_scn_check_object(p, ex, "expect");
    if (!rc && !(rc = sr_scn_str(p, ex, "verdict", "pass", verdicts, &v)))
        s->expect_verdict = strcmp(v, "fail") == 0 ? SR_VERDICT_FAIL : SR_VERDICT_PASS;
    if (!rc)
        rc = sr_scn_strlist(p, ex, "checks", SR_RESULT_NAME_MAX, s->expect_checks,
                            &s->n_expect_checks);
    if (!rc)
        rc = sr_scn_strlist(p, ex, "classifications", SR_RESULT_NAME_MAX, s->expect_classes,
                            &s->n_expect_classes);
    const cJSON *checks = sr_scn_member(ex, "checks"),
                *classes = sr_scn_member(ex, "classifications");
    for (int i = 0; !rc && i < s->n_expect_checks; i++)
        if (!sr_scenario_known_check(s->expect_checks[i]))
            return unknown_check(p, cJSON_GetArrayItem(checks, i), s->expect_checks[i]);
    for (int i = 0; !rc && i < s->n_expect_classes; i++)
        if (!sr_scenario_known_class(s->expect_classes[i])) {
            const char *names[SR_ROW_CLASS_COUNT];
            for (int c = 0; c < SR_ROW_CLASS_COUNT; c++)
                names[c] = sr_row_class_name((sr_row_class)c);
            char hint[300];
            sr_suggest_text(hint, sizeof(hint), s->expect_classes[i], names, SR_ROW_CLASS_COUNT,
                            "classifications");
            return sr_scn_fail(p, cJSON_GetArrayItem(classes, i),
                               "'%s' is not a classification of trace.row_mismatch; %s",
                               s->expect_classes[i], hint);
        }
    if (!rc && s->expect_verdict == SR_VERDICT_PASS && (s->n_expect_checks || s->n_expect_classes))
        return sr_scn_fail(p, ex, "expect.verdict \"pass\" takes no checks or classifications");
    if (!rc && s->expect_verdict == SR_VERDICT_FAIL && !s->n_expect_checks)
        return sr_scn_fail(p, ex, "expect.verdict \"fail\" needs the checks that must fire");
    int has_rm = 0;
    for (int i = 0; i < s->n_expect_checks; i++)
        has_rm |= strcmp(s->expect_checks[i], "trace.row_mismatch") == 0;
    if (!rc && s->n_expect_classes && !has_rm)
        return sr_scn_fail(p, classes, "classifications need trace.row_mismatch in expect.checks");
    return rc;
}

int sr_scn_parse_budgets(scn_parse *p, const cJSON *root)
{
    const cJSON *b = sr_scn_member(root, "budgets");
    if (!b)
        return 0;
    if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) > SR_SCN_MAX_BUDGETS)
        return sr_json_error(p->doc, b, p->err, SR_E_JSON_SCHEMA,
                             "'budgets' must be an array of at most %d budgets",
                             SR_SCN_MAX_BUDGETS);
    const cJSON *e;
    cJSON_ArrayForEach(e, b)
    {
        sr_scn_budget *bu = &p->s->budgets[p->s->n_budgets];
        const char *ph;
        int rc = sr_scn_check_object(p, e, "budgets");
        if (!rc)
            rc = sr_json_get_string(p->doc, e, "phase", 1, NULL, &ph, p->err);
        if (!rc && sr_phase_lookup(ph) < 0)
            return sr_scn_fail(p, sr_scn_member(e, "phase"), "unknown phase '%s'", ph);
        if (!rc)
            rc = sr_json_get_double(p->doc, e, "percentile", 1, 0, 100, 0, &bu->percentile, p->err);
        if (!rc)
            rc = sr_json_get_double(p->doc, e, "max_ms", 1, 1e-6, DAY_MS, 0, &bu->max_ms, p->err);
        if (rc)
            return rc;
        bu->phase = (sr_phase)sr_phase_lookup(ph);
        p->s->n_budgets++;
    }
    return 0;
}
