/* The expanded writer of the steps (scenario.h): every key of each step kind, defaults filled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario_priv.h"

static void add_int(cJSON *o, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", (long long)v);
    cJSON_AddItemToObject(o, key, cJSON_CreateRaw(buf));
}

/* An integer, or null when `v` is the "not given" value `none`. */
static void add_opt(cJSON *o, const char *key, int64_t v, int64_t none)
{
    if (v == none)
        cJSON_AddNullToObject(o, key);
    else
        add_int(o, key, v);
}

static void add_bool_opt(cJSON *o, const char *key, int64_t v)
{
    if (v == SR_SCN_UNCHECKED)
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddBoolToObject(o, key, v != 0);
}

static cJSON *names(const sr_scenario *s, const int *idx, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(s->steps[idx[i]].name));
    return a;
}

static cJSON *min_max(int64_t mn, int64_t mx)
{
    cJSON *o = cJSON_CreateObject();
    add_int(o, "min", mn);
    add_int(o, "max", mx);
    return o;
}

static void write_rollout(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    const sr_scn_rollout *r = &st->rollout;
    cJSON_AddBoolToObject(o, "async", st->async);
    add_int(o, "batch", r->batch);
    add_int(o, "turns", r->turns);
    cJSON_AddItemToObject(o, "prompt_tokens", min_max(r->prompt_min, r->prompt_max));
    cJSON_AddItemToObject(o, "observation_tokens", min_max(r->obs_min, r->obs_max));
    add_int(o, "max_tokens", r->max_tokens);
    cJSON_AddStringToObject(o, "mode", r->multi_turn ? "multi_turn" : "single_turn");
    cJSON_AddBoolToObject(o, "routes", r->routes);
    cJSON_AddBoolToObject(o, "logprobs", r->logprobs);
    cJSON_AddBoolToObject(o, "ignore_eos", r->ignore_eos);
    cJSON_AddBoolToObject(o, "sample_support", r->sample_support);
    cJSON *ids = cJSON_AddArrayToObject(o, "stop_token_ids");
    for (int i = 0; i < r->n_stop_ids; i++) {
        char buf[16];
        snprintf(buf, sizeof(buf), "%d", r->stop_ids[i]);
        cJSON_AddItemToArray(ids, cJSON_CreateRaw(buf));
    }
    cJSON_AddBoolToObject(o, "append_eos_after_stop", r->append_eos_after_stop);
    add_int(o, "max_input_length", r->max_input_length);
    cJSON_AddBoolToObject(o, "finish_session", r->finish_session);
    add_int(o, "max_rollout_tokens", r->max_rollout_tokens);
    add_int(o, "max_trace_bytes", r->max_trace_bytes);
}

static void write_wait(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    const sr_scn_wait *w = &st->wait;
    if (w->has_for)
        cJSON_AddItemToObject(o, "for", names(s, w->for_steps, w->n_for));
    else
        cJSON_AddNullToObject(o, "for");
    if (w->has_until) {
        cJSON *u = cJSON_AddObjectToObject(o, "until");
        add_int(u, "engine", w->engine);
        add_opt(u, "min_inflight", w->min_inflight, -1);
        add_opt(u, "min_held", w->min_held, -1);
        add_opt(u, "min_generate_requests", w->min_generate, -1);
    } else {
        cJSON_AddNullToObject(o, "until");
    }
    add_int(o, "timeout_ms", w->timeout_ms);
    add_int(o, "poll_ms", w->poll_ms);
}

static void write_check_state(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    const sr_scn_check_state *c = &st->check;
    (void)s;
    add_opt(o, "engine", c->engine, -1);
    add_opt(o, "weight_version", c->weight_version, SR_SCN_UNCHECKED);
    add_bool_opt(o, "paused", c->paused);
    add_bool_opt(o, "sleeping", c->sleeping);
    add_opt(o, "sessions", c->sessions, SR_SCN_UNCHECKED);
    add_opt(o, "inflight", c->inflight, SR_SCN_UNCHECKED);
    add_opt(o, "held", c->held, SR_SCN_UNCHECKED);
    cJSON *rq = cJSON_AddObjectToObject(o, "requests");
    for (int i = 0; i < SR_EP_COUNT; i++)
        if (c->requests[i] != SR_SCN_UNCHECKED)
            add_int(rq, sr_endpoint_name((sr_endpoint)i), c->requests[i]);
    cJSON *ff = cJSON_AddObjectToObject(o, "faults_fired");
    for (int i = 0; i < c->n_faults_fired; i++)
        add_int(ff, c->faults_fired[i].id, c->faults_fired[i].fired);
}

static void write_sync(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    cJSON_AddBoolToObject(o, "async", st->async);
    add_opt(o, "version", st->sync.version, -1);
    add_int(o, "deadline_ms", st->sync.deadline_ms);
}

static void write_collate(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    cJSON_AddItemToObject(o, "rollouts", names(s, st->collate.rollouts, st->collate.n_rollouts));
    add_int(o, "workers", st->collate.workers);
    add_int(o, "cap", st->collate.cap);
    add_int(o, "reserved_cores", st->collate.reserved_cores);
}

static void write_pause(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    add_opt(o, "engine", st->pause.engine, -1);
    cJSON_AddStringToObject(o, "mode", st->pause.mode);
    cJSON_AddBoolToObject(o, "clear_cache", st->pause.clear_cache);
}

static void write_resume(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    add_opt(o, "engine", st->resume_engine, -1);
}

static void write_sleep(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    add_opt(o, "engine", st->sleep.engine, -1);
    add_int(o, "level", st->sleep.level);
}

static void write_wake(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    add_opt(o, "engine", st->sleep.engine, -1);
    cJSON_AddStringToObject(o, "tags", st->sleep.tags);
}

static void write_kill(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    add_int(o, "engine", st->kill.engine);
    cJSON_AddStringToObject(o, "signal", st->kill.sig_name);
}

static void write_probe(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    add_int(o, "engine", st->probe.engine);
    add_int(o, "budget", st->probe.budget);
    cJSON_AddBoolToObject(o, "sync", st->probe.sync);
}

/* The capture as the absolute path it was resolved to, so the expanded copy (written elsewhere)
 * finds the same capture. */
static void write_replay(cJSON *o, const sr_scenario *s, const sr_scn_step *st)
{
    (void)s;
    cJSON_AddStringToObject(o, "capture", st->replay.capture);
    if (st->replay.dialect < 0)
        cJSON_AddNullToObject(o, "dialect");
    else
        cJSON_AddStringToObject(o, "dialect", sr_dialect_name((sr_dialect)st->replay.dialect));
}

/* The writer of each step kind's members, from the step-kind table (scenario.h). */
typedef void (*step_writer)(cJSON *o, const sr_scenario *s, const sr_scn_step *st);
static const step_writer writers[SR_STEP_KIND_COUNT] = {
#define WRITER_ROW(name, sym, parse, write, doc) [SR_STEP_##sym] = write,
    SR_STEP_KIND_TABLE(WRITER_ROW)
#undef WRITER_ROW
};

cJSON *sr_scn_steps_json(const sr_scenario *s)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < s->n_steps; i++) {
        const sr_scn_step *st = &s->steps[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kind", sr_step_kind_name(st->kind));
        cJSON_AddStringToObject(o, "name", st->name);
        writers[st->kind](o, s, st);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}
