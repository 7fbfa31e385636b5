/* The expanded-scenario writer and the engine-config writer (scenario.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario_priv.h"

/* Integers are written as raw literals: cJSON would print 1e+15 for some, which is not an
 * integer literal to the loader, and the expanded file must load back unchanged. */
static void add_int(cJSON *o, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", (long long)v);
    cJSON_AddItemToObject(o, key, cJSON_CreateRaw(buf));
}

static void add_int_or_null(cJSON *o, const char *key, int64_t v, int is_null)
{
    if (is_null)
        cJSON_AddNullToObject(o, key);
    else
        add_int(o, key, v);
}

static cJSON *int_array(const int32_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        char buf[16];
        snprintf(buf, sizeof(buf), "%d", v[i]);
        cJSON_AddItemToArray(a, cJSON_CreateRaw(buf));
    }
    return a;
}

static cJSON *str_array(char *const *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static cJSON *model_json(const sr_engine_config *c)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", c->model_name);
    add_int(m, "vocab", c->vocab);
    add_int(m, "layers", c->num_layers);
    cJSON_AddItemToObject(m, "layer_indices", int_array(c->layer_indices, c->num_layers));
    add_int(m, "experts", c->experts);
    add_int(m, "topk", c->topk);
    add_int(m, "eos_id", c->eos_id);
    cJSON_AddNumberToObject(m, "eos_rate", c->eos_rate);
    cJSON *ss = cJSON_AddArrayToObject(m, "stop_sequences");
    for (int i = 0; i < c->num_stops; i++)
        cJSON_AddItemToArray(ss, int_array(c->stops[i].ids, c->stops[i].len));
    cJSON_AddNumberToObject(m, "logprob_scale", c->logprob_scale);
    cJSON_AddNumberToObject(m, "nonfinite_rate", c->nonfinite_rate);
    return m;
}

static cJSON *timing_json(const sr_engine_config *c)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "prefill_ms", c->prefill_ms);
    cJSON_AddNumberToObject(t, "decode_ms_per_token", c->decode_ms);
    return t;
}

static cJSON *server_json(const sr_engine_config *c)
{
    cJSON *s = cJSON_CreateObject();
    add_int(s, "threads", c->threads);
    add_int(s, "max_connections", c->max_connections);
    add_int(s, "max_body_bytes", (int64_t)c->max_body_bytes);
    add_int(s, "max_response_bytes", (int64_t)c->max_response_bytes);
    add_int(s, "max_tokens_default", c->max_tokens_default);
    add_int(s, "max_seq", c->max_seq);
    add_int(s, "world_size", c->world_size);
    cJSON_AddBoolToObject(s, "lora", c->lora);
    add_int(s, "header_timeout_ms", c->header_timeout_ms);
    add_int(s, "body_timeout_ms", c->body_timeout_ms);
    add_int(s, "max_pending_connections", c->max_pending);
    add_int(s, "max_queued_requests", c->max_queued);
    cJSON *a = cJSON_AddArrayToObject(s, "sync_dirs");
    for (int i = 0; i < c->n_sync_dirs; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(c->sync_dirs[i]));
    return s;
}

/* The typed plan, written by its schema's writer; NULL when out of memory. */
static cJSON *faults_json(const sr_engine_config *c)
{
    cJSON *a = NULL;
    return sr_fault_plan_write_json(&a, c->faults, NULL) ? NULL : a;
}

/* engines.masked_padding when on (sglang#36404); absent stays off. */
static void add_masked(cJSON *o, const sr_engine_config *c)
{
    cJSON *m = c->mask_chunk ? cJSON_AddObjectToObject(o, "masked_padding") : NULL;
    if (m) {
        add_int(m, "chunk", c->mask_chunk);
        add_int(m, "rows", c->mask_rows);
    }
}

/* NULL when the fault plan cannot be written (out of memory): a plan must never go missing. */
static cJSON *engines_json(const sr_scenario *s)
{
    const sr_engine_config *c = &s->engine;
    cJSON *faults = faults_json(c);
    cJSON *e = faults ? cJSON_CreateObject() : NULL;
    if (!e) {
        cJSON_Delete(faults);
        return NULL;
    }
    add_int(e, "count", c->count);
    if (s->n_urls)
        cJSON_AddItemToObject(e, "urls", str_array(s->urls, s->n_urls));
    else
        cJSON_AddNullToObject(e, "urls");
    cJSON_AddItemToObject(e, "timing", timing_json(c));
    cJSON_AddItemToObject(e, "server", server_json(c));
    cJSON_AddItemToObject(e, "faults", faults);
    add_int(e, "sample_support_k", c->support_k);
    cJSON_AddStringToObject(e, "sync_dialect", sr_sync_dialect_name(c->sync_dialect));
    cJSON_AddStringToObject(e, "sync_version", sr_sync_api_name(c->sync_version));
    cJSON_AddStringToObject(e, "dialect", sr_dialect_name(c->dialect));
    cJSON_AddBoolToObject(e, "omit_prefix_routes", c->omit_prefix);
    add_int(e, "prefix_block", c->prefix_block);
    add_masked(e, c);
    if (s->dialects) {
        cJSON *list = cJSON_AddArrayToObject(e, "dialects");
        for (int d = 0; list && d < SR_DIALECT_COUNT; d++)
            if (s->dialects & (1u << d))
                cJSON_AddItemToArray(list, cJSON_CreateString(sr_dialect_name((sr_dialect)d)));
    }
    add_int(e, "ready_timeout_ms", s->ready_timeout_ms);
    add_int(e, "stop_grace_ms", s->stop_grace_ms);
    return e;
}

static cJSON *client_json(const sr_scenario *s)
{
    const sr_client_opts *o = &s->client;
    cJSON *c = cJSON_CreateObject();
    add_int(c, "attempts", o->max_attempts);
    add_int(c, "backoff_initial_ms", o->backoff_initial_ms);
    add_int(c, "backoff_max_ms", o->backoff_max_ms);
    cJSON_AddNumberToObject(c, "jitter", o->jitter);
    add_int(c, "deadline_ms", o->deadline_ms);
    add_int(c, "attempt_timeout_ms", o->attempt_timeout_ms);
    add_int(c, "connect_timeout_ms", o->connect_timeout_ms);
    add_int(c, "control_timeout_ms", o->control_timeout_ms);
    add_int(c, "max_body_bytes", (int64_t)o->max_body);
    add_int(c, "max_error_body_bytes", (int64_t)o->max_error_body);
    add_int(c, "concurrency", s->concurrency);
    cJSON_AddBoolToObject(c, "strict_base64", o->strict_base64);
    cJSON_AddStringToObject(c, "stack", sr_stack_name(o->stack));
    if (o->dialect_route) /* a route other than the dialect's first (client.generate_path) */
        cJSON_AddStringToObject(c, "generate_path",
                                sr_dialect_get(s->engine.dialect)->routes[o->dialect_route].path);
    cJSON_AddStringToObject(c, "on_abort", SR_CLIENT_ON_ABORT_NAMES[o->on_abort]);
    cJSON_AddStringToObject(c, "route_start", SR_CLIENT_ROUTE_START_NAMES[o->route_start_zero]);
    if (o->pd_decode >= 0) {
        cJSON *pd = cJSON_AddObjectToObject(c, "pd");
        add_int(pd, "prefill", o->pd_prefill);
        add_int(pd, "decode", o->pd_decode);
        cJSON_AddBoolToObject(pd, "merge", o->pd_merge);
    }
    cJSON *q = cJSON_AddArrayToObject(c, "quirks");
    for (int i = 0; i < SR_QUIRK_COUNT; i++)
        if (s->quirks[i])
            cJSON_AddItemToArray(q, cJSON_CreateString(sr_quirk_info_of((sr_quirk)i)->name));
    return c;
}

static cJSON *weights_json(const sr_scenario *s)
{
    const sr_engine_config *c = &s->engine;
    cJSON *w = cJSON_CreateObject();
    add_int(w, "total_bytes", (int64_t)c->weight_bytes);
    add_int(w, "expert_tensors", c->expert_tensors);
    add_int(w, "version", c->weight_version);
    cJSON_AddNumberToObject(w, "tensor_change_rate", c->tensor_change_rate);
    cJSON_AddNumberToObject(w, "block_change_rate", c->block_change_rate);
    cJSON_AddStringToObject(w, "transport", s->transport);
    if (s->trainer_api >= 0)
        cJSON_AddStringToObject(w, "sync_version", sr_sync_api_name((sr_sync_api)s->trainer_api));
    cJSON_AddBoolToObject(w, "serial_update", s->serial_update);
    cJSON *k = cJSON_AddObjectToObject(w, "workers");
    add_int(k, "cap", s->workers_cap);
    add_int(k, "reserved_cores", s->workers_reserved);
    return w;
}

static cJSON *expect_json(const sr_scenario *s)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "verdict", sr_verdict_name(s->expect_verdict));
    cJSON_AddItemToObject(e, "checks", str_array(s->expect_checks, s->n_expect_checks));
    cJSON_AddItemToObject(e, "classifications", str_array(s->expect_classes, s->n_expect_classes));
    return e;
}

static cJSON *budgets_json(const sr_scenario *s)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < s->n_budgets; i++) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "phase", sr_phase_name(s->budgets[i].phase));
        cJSON_AddNumberToObject(b, "percentile", s->budgets[i].percentile);
        cJSON_AddNumberToObject(b, "max_ms", s->budgets[i].max_ms);
        cJSON_AddItemToArray(a, b);
    }
    return a;
}

static cJSON *expanded(const sr_scenario *s)
{
    cJSON *engines = engines_json(s);
    cJSON *r = engines ? cJSON_CreateObject() : NULL;
    if (!r) {
        cJSON_Delete(engines);
        return NULL;
    }
    cJSON_AddStringToObject(r, "id", s->id);
    cJSON_AddStringToObject(r, "description", s->description);
    cJSON_AddItemToObject(r, "tags", str_array(s->tags, s->n_tags));
    add_int(r, "seed", (int64_t)s->seed);
    add_int(r, "timeout_ms", s->timeout_ms);
    if (s->skip)
        cJSON_AddStringToObject(r, "skip", s->skip);
    else
        cJSON_AddNullToObject(r, "skip");
    cJSON_AddItemToObject(r, "model", model_json(&s->engine));
    if (s->fields_json) {
        cJSON_AddItemToObject(r, "fields", cJSON_Duplicate(s->fields_json, 1));
    } else {
        cJSON *f = cJSON_AddArrayToObject(r, "fields");
        if (s->engine.routes)
            cJSON_AddItemToArray(f, cJSON_CreateString("routed_experts"));
        if (s->engine.support)
            cJSON_AddItemToArray(f, cJSON_CreateString("rollout_sample_support"));
    }
    cJSON_AddItemToObject(r, "engines", engines);
    cJSON_AddItemToObject(r, "client", client_json(s));
    cJSON_AddItemToObject(r, "weights", weights_json(s));
    cJSON *p = cJSON_AddObjectToObject(r, "pool");
    add_int_or_null(p, "cores", s->pool_cores, s->pool_cores < 0);
    cJSON_AddStringToObject(p, "affinity", s->affinity_fails ? "error" : "system");
    cJSON *t = cJSON_AddObjectToObject(r, "trainer");
    cJSON_AddStringToObject(t, "role", s->role);
    cJSON_AddBoolToObject(t, "routing_replay", s->routing_replay);
    add_int_or_null(t, "virtual_pipeline_size", s->vpp, !s->vpp_set);
    cJSON_AddItemToObject(r, "steps", sr_scn_steps_json(s));
    cJSON_AddItemToObject(r, "expect", expect_json(s));
    cJSON_AddItemToObject(r, "budgets", budgets_json(s));
    cJSON_AddItemToObject(r, "soak", sr_scn_soak_json(s));
    return r;
}

static int print_into(sr_buf *b, cJSON *doc, sr_err *err)
{
    char *txt = doc ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (!txt)
        return sr_err_set(err, SR_E_NOMEM, "cannot print the expanded scenario");
    int rc = sr_buf_puts(b, txt, err);
    if (!rc)
        rc = sr_buf_puts(b, "\n", err);
    free(txt);
    return rc;
}

int sr_scenario_expanded_json(sr_buf *b, const sr_scenario *s, sr_err *err)
{
    return print_into(b, expanded(s), err);
}

static int write_file(const char *path, const sr_buf *b, sr_err *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return sr_err_set(err, SR_E_IO, "%s: cannot create: %s", path, strerror(errno));
    size_t w = b->len ? fwrite(b->data, 1, b->len, f) : 0;
    int e = w != b->len ? errno : 0;
    if (fclose(f) != 0 && !e)
        e = errno;
    return e || w != b->len
               ? sr_err_set(err, SR_E_IO, "%s: cannot write: %s", path, strerror(e ? e : EIO))
               : 0;
}

int sr_scenario_write_expanded(const sr_scenario *s, const char *path, sr_err *err)
{
    sr_buf b = SR_BUF_INIT;
    int rc = sr_scenario_expanded_json(&b, s, err);
    if (!rc)
        rc = write_file(path, &b, err);
    sr_buf_release(&b);
    return rc;
}

/* The engine config (shape 1): the scenario's sync_dirs, then `sync_dir` when not NULL; NULL
 * when out of memory. */
static cJSON *engine_config_json(const sr_engine_config *c, const char *sync_dir)
{
    cJSON *faults = faults_json(c);
    cJSON *r = faults ? cJSON_CreateObject() : NULL;
    if (!r) {
        cJSON_Delete(faults);
        return NULL;
    }
    add_int(r, "seed", (int64_t)c->seed);
    add_int(r, "count", c->count);
    cJSON_AddItemToObject(r, "model", model_json(c));
    cJSON *w = cJSON_AddObjectToObject(r, "weights");
    add_int(w, "total_bytes", (int64_t)c->weight_bytes);
    add_int(w, "expert_tensors", c->expert_tensors);
    add_int(w, "version", c->weight_version);
    cJSON_AddNumberToObject(w, "tensor_change_rate", c->tensor_change_rate);
    cJSON_AddNumberToObject(w, "block_change_rate", c->block_change_rate);
    cJSON *f = cJSON_AddArrayToObject(r, "fields");
    if (c->routes)
        cJSON_AddItemToArray(f, cJSON_CreateString("routed_experts"));
    if (c->support)
        cJSON_AddItemToArray(f, cJSON_CreateString("rollout_sample_support"));
    add_int(r, "sample_support_k", c->support_k);
    /* Only a sync dialect the scenario names: a defaulted one (the dialect's control plane) must
     * stay a default, so that `engine --dialect D` / `serve --dialect D` give the engine D's. */
    if (c->sync_dialect_given)
        cJSON_AddStringToObject(r, "sync_dialect", sr_sync_dialect_name(c->sync_dialect));
    cJSON_AddStringToObject(r, "sync_version", sr_sync_api_name(c->sync_version));
    cJSON_AddStringToObject(r, "dialect", sr_dialect_name(c->dialect));
    cJSON_AddBoolToObject(r, "omit_prefix_routes", c->omit_prefix);
    add_int(r, "prefix_block", c->prefix_block);
    add_masked(r, c);
    cJSON_AddStringToObject(r, "stack", sr_stack_name(c->stack));
    cJSON_AddItemToObject(r, "timing", timing_json(c));
    cJSON *sv = server_json(c);
    if (sync_dir)
        cJSON_AddItemToArray(cJSON_GetObjectItem(sv, "sync_dirs"), cJSON_CreateString(sync_dir));
    cJSON_AddItemToObject(r, "server", sv);
    cJSON_AddItemToObject(r, "faults", faults);
    return r;
}

int sr_scenario_write_engine(const sr_scenario *s, const char *path, const char *sync_dir,
                             sr_err *err)
{
    if (sync_dir && (sync_dir[0] != '/' || strlen(sync_dir) >= SR_ENGINE_SYNC_DIR_MAX))
        return sr_err_set(err, SR_E_INVAL,
                          "%s: the engines' sync folder '%.200s' is not an absolute path of at "
                          "most %d bytes",
                          path, sync_dir, SR_ENGINE_SYNC_DIR_MAX - 1);
    if (sync_dir && s->engine.n_sync_dirs >= SR_ENGINE_MAX_SYNC_DIRS)
        return sr_err_set(err, SR_E_INVAL,
                          "%s: engines.server.sync_dirs names %d folders, no room for the run's "
                          "sync folder (at most %d in all)",
                          path, s->engine.n_sync_dirs, SR_ENGINE_MAX_SYNC_DIRS);
    sr_buf b = SR_BUF_INIT;
    int rc = print_into(&b, engine_config_json(&s->engine, sync_dir), err);
    if (!rc)
        rc = write_file(path, &b, err);
    sr_buf_release(&b);
    return rc;
}
