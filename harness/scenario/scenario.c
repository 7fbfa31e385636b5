/* Loading a scenario: the top level and the configuration sections (scenario.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario_priv.h"
#include "sr_oracle.h"
#include "sr_splice.h"
#include "sr_weights.h"

/* Largest seed: integers above 2^53 do not survive a JSON number exactly. */
#define SEED_MAX ((int64_t)1 << 53)
#define HOUR_MS  3600000

static int parse_stops(scn_parse *p, const cJSON *ss)
{
    sr_engine_config *c = &p->s->engine;
    if (!ss)
        return 0;
    if (!cJSON_IsArray(ss) || cJSON_GetArraySize(ss) > SR_ORACLE_MAX_STOPS)
        return sr_scn_fail(p, ss, "model.stop_sequences must be an array of at most %d arrays",
                           SR_ORACLE_MAX_STOPS);
    const cJSON *e;
    cJSON_ArrayForEach(e, ss)
    {
        int32_t *dst = c->stop_tokens + c->num_stops * SR_ORACLE_MAX_STOP_LEN;
        int n = 0;
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) < 1 ||
            cJSON_GetArraySize(e) > SR_ORACLE_MAX_STOP_LEN)
            return sr_scn_fail(p, e, "a stop sequence must be an array of 1..%d token ids",
                               SR_ORACLE_MAX_STOP_LEN);
        const cJSON *t;
        cJSON_ArrayForEach(t, e)
        {
            if (!cJSON_IsNumber(t) || !sr_json_is_integer_literal(p->doc, t) ||
                t->valuedouble < 0 || t->valuedouble >= (double)c->vocab)
                return sr_scn_fail(p, t, "stop sequence token ids must be in [0, vocab)");
            dst[n++] = (int32_t)t->valuedouble;
        }
        c->stops[c->num_stops].ids = dst;
        c->stops[c->num_stops++].len = n;
    }
    return 0;
}

static int parse_model(scn_parse *p, const cJSON *m)
{
    sr_engine_config *c = &p->s->engine;
    int rc = m ? sr_scn_check_object(p, m, "model") : 0;
    const char *name;
    int64_t v;
    if (!m)
        return 0;
    if (!rc && !(rc = sr_scn_str(p, m, "name", "default", NULL, &name))) {
        if (!*name || strlen(name) >= sizeof(c->model_name))
            return sr_scn_fail(p, sr_scn_member(m, "name"), "model.name must be 1..%zu bytes",
                               sizeof(c->model_name) - 1);
        snprintf(c->model_name, sizeof(c->model_name), "%s", name);
    }
    if (!rc)
        rc = sr_scn_int(p, m, "vocab", 2, SR_ORACLE_MAX_VOCAB, c->vocab, 0, &c->vocab);
    if (!rc && !(rc = sr_scn_int(p, m, "layers", 1, SR_ORACLE_MAX_LAYERS, c->num_layers, 0, &v))) {
        c->num_layers = (int)v;
        for (int i = 0; i < c->num_layers; i++)
            c->layer_indices[i] = i;
    }
    const cJSON *li = sr_scn_member(m, "layer_indices");
    if (!rc && li) {
        if (!cJSON_IsArray(li) || cJSON_GetArraySize(li) < 1 ||
            cJSON_GetArraySize(li) > SR_ORACLE_MAX_LAYERS)
            return sr_scn_fail(p, li, "model.layer_indices must be an array of 1..%d integers",
                               SR_ORACLE_MAX_LAYERS);
        if (sr_scn_member(m, "layers") && cJSON_GetArraySize(li) != c->num_layers)
            return sr_scn_fail(p, li, "model.layer_indices has %d entries but model.layers is %d",
                               cJSON_GetArraySize(li), c->num_layers);
        int n = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, li)
        {
            if (!cJSON_IsNumber(e) || !sr_json_is_integer_literal(p->doc, e) ||
                e->valuedouble < 0 || e->valuedouble > INT32_MAX ||
                (n > 0 && e->valuedouble <= c->layer_indices[n - 1]))
                return sr_scn_fail(p, e,
                                   "model.layer_indices must be strictly increasing integers "
                                   "in [0, 2^31-1]");
            c->layer_indices[n++] = (int32_t)e->valuedouble;
        }
        c->num_layers = n;
    }
    if (!rc)
        rc = sr_scn_int(p, m, "experts", 1, SR_ORACLE_MAX_EXPERTS, c->experts, 0, &c->experts);
    if (!rc && !(rc = sr_scn_int(p, m, "topk", 1, SR_ORACLE_MAX_TOPK, c->topk, 0, &v)))
        c->topk = (int)v;
    if (!rc)
        rc = sr_scn_int(p, m, "eos_id", -1, SR_ORACLE_MAX_VOCAB - 1, c->eos_id, 0, &c->eos_id);
    if (!rc)
        rc = sr_scn_num(p, m, "eos_rate", 0, 1, c->eos_rate, &c->eos_rate);
    if (!rc)
        rc = sr_scn_num(p, m, "logprob_scale", 0, SR_ORACLE_MAX_LP_SCALE, c->logprob_scale,
                        &c->logprob_scale);
    if (!rc)
        rc = sr_scn_num(p, m, "nonfinite_rate", 0, 1, c->nonfinite_rate, &c->nonfinite_rate);
    if (!rc)
        rc = parse_stops(p, sr_scn_member(m, "stop_sequences"));
    if (rc)
        return rc;
    /* The oracle is the judge of a model's consistency (top-k vs experts, EOS vs vocab). */
    sr_oracle_model om = sr_engine_config_model(c);
    sr_oracle *o = NULL;
    sr_err e2 = SR_ERR_INIT;
    rc = sr_oracle_new(&o, &om, &e2);
    sr_oracle_free(o);
    return rc ? sr_scn_fail(p, m, "model: %s", e2.msg) : 0;
}

static int parse_field_def(scn_parse *p, const cJSON *e, int index)
{
    char *txt = cJSON_PrintUnformatted(e);
    if (!txt)
        return sr_err_set(p->err, SR_E_NOMEM, "cannot print a field definition");
    sr_buf b = SR_BUF_INIT;
    char src[32];
    snprintf(src, sizeof(src), "fields[%d]", index);
    sr_err e2 = SR_ERR_INIT;
    int rc = sr_buf_printf(&b, p->err, "{\"fields\":[%s]}", txt);
    free(txt);
    if (!rc)
        rc = sr_fields_load_json(p->s->fields, b.data, b.len, src, &e2);
    sr_buf_release(&b);
    if (rc == SR_E_NOMEM)
        return sr_err_set(p->err, rc, "%s", e2.msg);
    return rc ? sr_scn_fail(p, e, "%s", e2.msg) : 0;
}

static int parse_fields(scn_parse *p, const cJSON *f)
{
    sr_engine_config *c = &p->s->engine;
    if (!f)
        return 0;
    if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) > SR_FIELDS_MAX)
        return sr_scn_fail(p, f, "fields must be an array of at most %d names or definitions",
                           SR_FIELDS_MAX);
    c->routes = c->support = 0;
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, f)
    {
        int rc = 0;
        if (cJSON_IsString(e) && strcmp(e->valuestring, "routed_experts") == 0)
            c->routes = 1;
        else if (cJSON_IsString(e) && strcmp(e->valuestring, "rollout_sample_support") == 0)
            c->support = 1;
        else if (cJSON_IsObject(e))
            rc = parse_field_def(p, e, i);
        else
            rc = sr_scn_fail(p, e,
                             "a fields entry is \"routed_experts\", \"rollout_sample_support\" or "
                             "a packed-field definition object (lib/sr_fields.h)");
        if (rc)
            return rc;
        i++;
    }
    cJSON_Delete(p->s->fields_json);
    p->s->fields_json = cJSON_Duplicate(f, 1);
    return p->s->fields_json ? 0 : sr_err_set(p->err, SR_E_NOMEM, "cannot copy fields");
}

static int parse_server(scn_parse *p, const cJSON *s)
{
    sr_engine_config *c = &p->s->engine;
    int64_t v;
    int rc = sr_scn_check_object(p, s, "engines.server");
    if (!rc && !(rc = sr_scn_int(p, s, "threads", 1, 64, c->threads, 0, &v)))
        c->threads = (int)v;
    if (!rc && !(rc = sr_scn_int(p, s, "max_connections", 1, 65536, c->max_connections, 0, &v)))
        c->max_connections = (int)v;
    if (!rc && !(rc = sr_scn_int(p, s, "max_body_bytes", 1024, (int64_t)1 << 32,
                                 (int64_t)c->max_body_bytes, 0, &v)))
        c->max_body_bytes = (size_t)v;
    if (!rc && !(rc = sr_scn_int(p, s, "max_response_bytes", 4096, (int64_t)1 << 34,
                                 (int64_t)c->max_response_bytes, 0, &v)))
        c->max_response_bytes = (size_t)v;
    if (!rc)
        rc = sr_scn_int(p, s, "max_tokens_default", 1, SR_ORACLE_MAX_SEQ, c->max_tokens_default, 0,
                        &c->max_tokens_default);
    if (!rc)
        rc = sr_scn_int(p, s, "max_seq", 2, SR_ORACLE_MAX_SEQ, c->max_seq, 0, &c->max_seq);
    if (!rc && !(rc = sr_scn_int(p, s, "world_size", 1, 1 << 20, c->world_size, 0, &v)))
        c->world_size = (int)v;
    if (!rc)
        rc = sr_scn_bool(p, s, "lora", c->lora, 0, &c->lora);
    return rc;
}

/* Each fault is checked on its own so an error points at the fault that has it. */
static int parse_faults(scn_parse *p, const cJSON *f)
{
    if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) > SR_FAULT_MAX)
        return sr_scn_fail(p, f, "engines.faults must be an array of at most %d faults",
                           SR_FAULT_MAX);
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, f)
    {
        sr_fault one;
        sr_err e2 = SR_ERR_INIT;
        if (sr_fault_parse(&one, e, i++, &e2))
            return sr_scn_fail(p, e, "engines.faults: %s", e2.msg);
    }
    cJSON_Delete(p->s->engine.faults);
    p->s->engine.faults = cJSON_Duplicate(f, 1);
    return p->s->engine.faults ? 0 : sr_err_set(p->err, SR_E_NOMEM, "cannot copy the faults");
}

static int parse_urls(scn_parse *p, const cJSON *u)
{
    if (!cJSON_IsArray(u) || cJSON_GetArraySize(u) < 1 ||
        cJSON_GetArraySize(u) > SR_CLIENT_MAX_ENGINES)
        return sr_scn_fail(p, u, "engines.urls must be null or an array of 1..%d URLs",
                           SR_CLIENT_MAX_ENGINES);
    const cJSON *e;
    cJSON_ArrayForEach(e, u)
    {
        if (!cJSON_IsString(e) || strlen(e->valuestring) >= SR_CLIENT_URL_MAX ||
            (strncmp(e->valuestring, "http://", 7) != 0 &&
             strncmp(e->valuestring, "https://", 8) != 0))
            return sr_scn_fail(p, e, "engines.urls entries must be http:// or https:// URLs");
        if (!(p->s->urls[p->s->n_urls++] = strdup(e->valuestring)))
            return sr_err_set(p->err, SR_E_NOMEM, "cannot copy a URL");
    }
    return 0;
}

static int parse_engines(scn_parse *p, const cJSON *en)
{
    sr_scenario *s = p->s;
    sr_engine_config *c = &s->engine;
    int64_t v;
    if (!en)
        return 0;
    int rc = sr_scn_check_object(p, en, "engines");
    if (!rc && !(rc = sr_scn_int(p, en, "count", 1, SR_ENGINE_MAX_COUNT, c->count, 0, &v)))
        c->count = (int)v;
    const cJSON *u = sr_scn_member(en, "urls");
    if (!rc && u && !cJSON_IsNull(u)) {
        rc = parse_urls(p, u);
        if (!rc && sr_scn_member(en, "count") && c->count != s->n_urls)
            return sr_scn_fail(p, u, "engines.urls has %d URLs but engines.count is %d", s->n_urls,
                               c->count);
        c->count = s->n_urls;
    }
    const cJSON *x;
    if (!rc && (x = sr_scn_member(en, "timing"))) {
        rc = sr_scn_check_object(p, x, "engines.timing");
        if (!rc)
            rc = sr_scn_num(p, x, "prefill_ms", 0, HOUR_MS, c->prefill_ms, &c->prefill_ms);
        if (!rc)
            rc = sr_scn_num(p, x, "decode_ms_per_token", 0, HOUR_MS, c->decode_ms, &c->decode_ms);
    }
    if (!rc && (x = sr_scn_member(en, "server")))
        rc = parse_server(p, x);
    if (!rc && (x = sr_scn_member(en, "faults")))
        rc = parse_faults(p, x);
    if (!rc && !(rc = sr_scn_int(p, en, "sample_support_k", 1, 1024, c->support_k, 0, &v)))
        c->support_k = (int)v;
    if (!rc)
        rc = sr_scn_int(p, en, "ready_timeout_ms", 100, HOUR_MS, s->ready_timeout_ms, 0,
                        &s->ready_timeout_ms);
    if (!rc)
        rc = sr_scn_int(p, en, "stop_grace_ms", 0, HOUR_MS, s->stop_grace_ms, 0, &s->stop_grace_ms);
    return rc;
}

static int parse_quirks(scn_parse *p, const cJSON *q)
{
    if (!q)
        return 0;
    if (!cJSON_IsArray(q))
        return sr_scn_fail(p, q, "client.quirks must be an array of quirk names");
    const cJSON *e;
    cJSON_ArrayForEach(e, q)
    {
        int found = -1;
        for (int i = 0; cJSON_IsString(e) && i < SR_QUIRK_COUNT; i++)
            if (strcmp(sr_quirk_info_of((sr_quirk)i)->name, e->valuestring) == 0)
                found = i;
        if (found < 0)
            return sr_scn_fail(p, e, "unknown quirk (see FORMAT.md, client.quirks)");
        if (p->s->quirks[found])
            return sr_scn_fail(p, e, "quirk %s is listed twice", e->valuestring);
        p->s->quirks[found] = 1;
    }
    return 0;
}

static int parse_client(scn_parse *p, const cJSON *cl)
{
    sr_client_opts *o = &p->s->client;
    int64_t v;
    if (!cl)
        return 0;
    int rc = sr_scn_check_object(p, cl, "client");
    if (!rc &&
        !(rc = sr_scn_int(p, cl, "attempts", 1, SR_CLIENT_MAX_ATTEMPTS, o->max_attempts, 0, &v)))
        o->max_attempts = (int)v;
    if (!rc)
        rc = sr_scn_int(p, cl, "backoff_initial_ms", 0, HOUR_MS, o->backoff_initial_ms, 0,
                        &o->backoff_initial_ms);
    if (!rc)
        rc = sr_scn_int(p, cl, "backoff_max_ms", 0, HOUR_MS, o->backoff_max_ms, 0,
                        &o->backoff_max_ms);
    if (!rc)
        rc = sr_scn_num(p, cl, "jitter", 0, 1, o->jitter, &o->jitter);
    if (!rc)
        rc = sr_scn_int(p, cl, "deadline_ms", 1, SR_SCN_MAX_TIMEOUT, o->deadline_ms, 0,
                        &o->deadline_ms);
    if (!rc)
        rc = sr_scn_int(p, cl, "attempt_timeout_ms", 0, SR_SCN_MAX_TIMEOUT, o->attempt_timeout_ms,
                        0, &o->attempt_timeout_ms);
    if (!rc)
        rc = sr_scn_int(p, cl, "connect_timeout_ms", 1, HOUR_MS, o->connect_timeout_ms, 0,
                        &o->connect_timeout_ms);
    if (!rc)
        rc = sr_scn_int(p, cl, "control_timeout_ms", 1, HOUR_MS, o->control_timeout_ms, 0,
                        &o->control_timeout_ms);
    if (!rc && !(rc = sr_scn_int(p, cl, "max_body_bytes", 1024, (int64_t)1 << 34,
                                 (int64_t)o->max_body, 0, &v)))
        o->max_body = (size_t)v;
    if (!rc && !(rc = sr_scn_int(p, cl, "max_error_body_bytes", 0, (int64_t)1 << 24,
                                 (int64_t)o->max_error_body, 0, &v)))
        o->max_error_body = (size_t)v;
    if (!rc)
        rc = sr_scn_int(p, cl, "concurrency", 1, 256, p->s->concurrency, 0, &p->s->concurrency);
    if (!rc)
        rc = parse_quirks(p, sr_scn_member(cl, "quirks"));
    return rc;
}

static int parse_weights(scn_parse *p, const cJSON *w)
{
    sr_scenario *s = p->s;
    sr_engine_config *c = &s->engine;
    static const char *const transports[] = {"delta", "broadcast", NULL};
    int64_t v;
    const char *t;
    if (!w)
        return 0;
    int rc = sr_scn_check_object(p, w, "weights");
    if (!rc && !(rc = sr_scn_int(p, w, "total_bytes", (int64_t)SR_WEIGHTS_MIN_BYTES,
                                 (int64_t)SR_WEIGHTS_MAX_BYTES, (int64_t)c->weight_bytes, 0, &v)))
        c->weight_bytes = (size_t)v;
    if (!rc && !(rc = sr_scn_int(p, w, "expert_tensors", 1, SR_WEIGHTS_MAX_EXPERTS,
                                 c->expert_tensors, 0, &v)))
        c->expert_tensors = (int)v;
    if (!rc)
        rc = sr_scn_int(p, w, "version", 0, SR_WEIGHTS_MAX_VERSION, c->weight_version, 0,
                        &c->weight_version);
    if (!rc)
        rc = sr_scn_num(p, w, "tensor_change_rate", 0, 1, c->tensor_change_rate,
                        &c->tensor_change_rate);
    if (!rc)
        rc = sr_scn_num(p, w, "block_change_rate", 0, 1, c->block_change_rate,
                        &c->block_change_rate);
    if (!rc && !(rc = sr_scn_str(p, w, "transport", "delta", transports, &t)))
        snprintf(s->transport, sizeof(s->transport), "%s", t);
    const cJSON *x = sr_scn_member(w, "workers");
    if (!rc && x) {
        rc = sr_scn_check_object(p, x, "weights.workers");
        if (!rc)
            rc = sr_scn_int(p, x, "cap", 1, 1024, s->workers_cap, 0, &s->workers_cap);
        if (!rc)
            rc = sr_scn_int(p, x, "reserved_cores", 0, 1024, s->workers_reserved, 0,
                            &s->workers_reserved);
    }
    return rc;
}

static int parse_pool_trainer(scn_parse *p, const cJSON *pool, const cJSON *tr)
{
    sr_scenario *s = p->s;
    static const char *const aff[] = {"system", "error", NULL};
    static const char *const roles[] = {"policy", "ref", NULL};
    const char *t;
    int rc = 0;
    if (pool) {
        rc = sr_scn_check_object(p, pool, "pool");
        if (!rc)
            rc = sr_scn_int(p, pool, "cores", 1, 1 << 16, -1, 1, &s->pool_cores);
        if (!rc && !(rc = sr_scn_str(p, pool, "affinity", "system", aff, &t)))
            s->affinity_fails = strcmp(t, "error") == 0;
    }
    if (!rc && tr) {
        rc = sr_scn_check_object(p, tr, "trainer");
        if (!rc && !(rc = sr_scn_str(p, tr, "role", "policy", roles, &t)))
            snprintf(s->role, sizeof(s->role), "%s", t);
        if (!rc)
            rc = sr_scn_bool(p, tr, "routing_replay", s->routing_replay, 0, &s->routing_replay);
        if (!rc)
            rc = sr_scn_int(p, tr, "virtual_pipeline_size", 0, 1024, -1, 1, &s->vpp);
        s->vpp_set = s->vpp >= 0;
        if (!s->vpp_set)
            s->vpp = 0;
    }
    return rc;
}

static int check_id(scn_parse *p, const cJSON *root, const char *id)
{
    size_t n = strlen(id);
    int ok = n > 0 && n < SR_SCN_ID_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char ch = id[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '_' || ch == '-';
    }
    if (!ok || id[0] == '.')
        return sr_scn_fail(p, sr_scn_member(root, "id"),
                           "id must be 1..%d bytes of [A-Za-z0-9._-], not starting with '.'",
                           SR_SCN_ID_MAX - 1);
    snprintf(p->s->id, sizeof(p->s->id), "%s", id);
    return 0;
}

static void defaults(sr_scenario *s)
{
    sr_engine_config_defaults(&s->engine);
    s->seed = s->engine.seed;
    s->timeout_ms = 120000;
    s->ready_timeout_ms = 20000;
    s->stop_grace_ms = 5000;
    snprintf(s->transport, sizeof(s->transport), "delta");
    s->workers_cap = 32;
    s->workers_reserved = 8;
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.max_body = SR_SPLICE_DEFAULT_MAX_BODY;
    s->client = o;
    s->concurrency = 8;
    s->pool_cores = -1;
    s->routing_replay = 1;
    snprintf(s->role, sizeof(s->role), "policy");
    s->expect_verdict = SR_VERDICT_PASS;
    sr_scn_soak_defaults(s);
}

static int parse_top(scn_parse *p, const cJSON *root)
{
    sr_scenario *s = p->s;
    const char *str;
    int64_t v;
    int rc = sr_scn_check_object(p, root, "");
    if (!rc && !(rc = sr_json_get_string(p->doc, root, "id", 1, NULL, &str, p->err)))
        rc = check_id(p, root, str);
    if (!rc && !(rc = sr_json_get_string(p->doc, root, "description", 1, NULL, &str, p->err)))
        rc = (s->description = strdup(str)) ? 0 : SR_E_NOMEM;
    if (!rc)
        rc = sr_scn_strlist(p, root, "tags", SR_SCN_NAME_MAX, s->tags, &s->n_tags);
    if (!rc && !(rc = sr_scn_int(p, root, "seed", 0, SEED_MAX, (int64_t)s->seed, 0, &v)))
        s->seed = s->engine.seed = s->client.seed = (uint64_t)v;
    if (!rc)
        rc = sr_scn_int(p, root, "timeout_ms", 1000, SR_SCN_MAX_TIMEOUT, s->timeout_ms, 0,
                        &s->timeout_ms);
    const cJSON *sk = sr_scn_member(root, "skip");
    if (!rc && sk && !cJSON_IsNull(sk)) {
        if (!cJSON_IsString(sk) || !sk->valuestring[0])
            return sr_scn_fail(p, sk, "skip must be null or a non-empty reason");
        rc = (s->skip = strdup(sk->valuestring)) ? 0 : SR_E_NOMEM;
    }
    if (!rc)
        rc = parse_model(p, sr_scn_member(root, "model"));
    if (!rc)
        rc = parse_fields(p, sr_scn_member(root, "fields"));
    if (!rc)
        rc = parse_engines(p, sr_scn_member(root, "engines"));
    if (!rc)
        rc = parse_client(p, sr_scn_member(root, "client"));
    if (!rc)
        rc = parse_weights(p, sr_scn_member(root, "weights"));
    if (!rc)
        rc = parse_pool_trainer(p, sr_scn_member(root, "pool"), sr_scn_member(root, "trainer"));
    if (!rc)
        rc = sr_scn_parse_steps(p, root);
    if (!rc)
        rc = sr_scn_parse_expect(p, root);
    if (!rc)
        rc = sr_scn_parse_budgets(p, root);
    if (!rc)
        rc = sr_scn_parse_soak(p, root);
    if (rc == SR_E_NOMEM)
        sr_err_set(p->err, rc, "out of memory while loading a scenario");
    return rc;
}

static int parse_max(sr_scenario **out, const char *text, size_t len, const char *name,
                     size_t max_bytes, sr_err *err)
{
    *out = NULL;
    sr_scenario *s = calloc(1, sizeof(*s));
    if (!s)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a scenario");
    defaults(s);
    sr_json_doc *doc = NULL;
    int rc = (s->path = strdup(name ? name : "<input>")) ? 0 : SR_E_NOMEM;
    if (!rc)
        rc = sr_fields_new(&s->fields, err);
    if (!rc)
        rc = sr_fields_add_builtins(s->fields, err);
    if (!rc && len > max_bytes)
        rc = sr_err_set(err, SR_E_SCENARIO_TOO_LARGE,
                        "%s: %zu bytes, larger than the limit of %zu bytes", s->path, len,
                        max_bytes);
    if (!rc)
        rc = sr_json_parse(&doc, text, len, s->path, max_bytes, err);
    if (!rc) {
        scn_parse p = {doc, s, err};
        rc = parse_top(&p, sr_json_root(doc));
    }
    sr_json_free(doc);
    if (rc) {
        if (rc == SR_E_NOMEM)
            sr_err_set(err, rc, "out of memory while loading a scenario");
        sr_scenario_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int sr_scenario_parse(sr_scenario **out, const char *text, size_t len, const char *name,
                      sr_err *err)
{
    return parse_max(out, text, len, name, SR_SCN_MAX_FILE, err);
}

int sr_scenario_load(sr_scenario **out, const char *path, sr_err *err)
{
    return sr_scenario_load_max(out, path, SR_SCN_MAX_FILE, err);
}

int sr_scenario_load_max(sr_scenario **out, const char *path, size_t max_bytes, sr_err *err)
{
    *out = NULL;
    max_bytes = max_bytes ? max_bytes : SR_SCN_MAX_FILE;
    sr_buf b = SR_BUF_INIT;
    int rc = sr_buf_read_file(&b, path, max_bytes, err);
    /* Its message already names the file, its size and the bound. */
    if (rc == SR_E_LIMIT)
        rc = err ? (err->code = SR_E_SCENARIO_TOO_LARGE) : SR_E_SCENARIO_TOO_LARGE;
    if (!rc)
        rc = parse_max(out, b.data ? b.data : "", b.len, path, max_bytes, err);
    sr_buf_release(&b);
    return rc;
}

void sr_scenario_free(sr_scenario *s)
{
    if (!s)
        return;
    free(s->path);
    free(s->description);
    free(s->skip);
    for (int i = 0; i < s->n_tags; i++)
        free(s->tags[i]);
    for (int i = 0; i < s->n_urls; i++)
        free(s->urls[i]);
    for (int i = 0; i < s->n_expect_checks; i++)
        free(s->expect_checks[i]);
    for (int i = 0; i < s->n_expect_classes; i++)
        free(s->expect_classes[i]);
    sr_engine_config_release(&s->engine);
    sr_fields_free(s->fields);
    cJSON_Delete(s->fields_json);
    free(s->steps);
    free(s);
}

void sr_scenario_set_seed(sr_scenario *s, uint64_t seed)
{
    s->seed = s->engine.seed = s->client.seed = seed;
}
