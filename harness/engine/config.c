#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_gen_extra.h"
#include "sr_buf.h"
#include "sr_json.h"
#include "sr_weights.h"

void sr_engine_config_defaults(sr_engine_config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "engine-0");
    c->count = 1;
    c->seed = 1;
    snprintf(c->model_name, sizeof(c->model_name), "default");
    c->vocab = 32000;
    c->num_layers = 4;
    for (int i = 0; i < c->num_layers; i++)
        c->layer_indices[i] = i;
    c->experts = 64;
    c->topk = 8;
    c->eos_id = 2;
    c->eos_rate = 0.05;
    c->logprob_scale = 8.0;
    c->nonfinite_rate = 0.0;
    c->weight_bytes = SR_WEIGHTS_MIN_BYTES;
    c->expert_tensors = 8;
    c->tensor_change_rate = 0.75;
    c->block_change_rate = 0.125;
    c->routes = 1;
    c->support_k = 4;
    c->threads = 2;
    c->max_connections = 256;
    c->max_body_bytes = (size_t)16 << 20;
    c->max_response_bytes = (size_t)1 << 30;
    c->max_tokens_default = 16;
    c->max_seq = (int64_t)1 << 20;
    c->world_size = 1;
}

void sr_engine_config_id_for(char *out, size_t cap, const sr_engine_config *c, int index)
{
    if (!c->has_id)
        snprintf(out, cap, "engine-%d", index);
    else if (c->count > 1)
        snprintf(out, cap, "%.40s-%d", c->base_id, index);
    else
        snprintf(out, cap, "%s", c->base_id);
}

void sr_engine_config_release(sr_engine_config *c)
{
    cJSON_Delete(c->faults);
    sr_engine_config_defaults(c);
}

sr_oracle_model sr_engine_config_model(const sr_engine_config *c)
{
    sr_oracle_model m = SR_ORACLE_MODEL_INIT;
    m.seed = c->seed;
    m.vocab = c->vocab;
    m.num_layers = c->num_layers;
    m.layer_indices = c->layer_indices;
    m.experts = c->experts;
    m.topk = c->topk;
    m.eos_id = c->eos_id;
    m.eos_rate = c->eos_rate;
    m.num_stops = c->num_stops;
    m.stops = c->stops;
    m.logprob_scale = c->logprob_scale;
    m.nonfinite_rate = c->nonfinite_rate;
    return m;
}

/* Typed getters of sr_json report json.schema; a config problem is engine.invalid_config. */
static int recode(int rc, sr_err *err)
{
    if (rc && rc != SR_E_NOMEM) {
        if (err)
            err->code = SR_E_ENGINE_CONFIG;
        return SR_E_ENGINE_CONFIG;
    }
    return rc;
}

static int int_array(const sr_json_doc *d, const cJSON *arr, int32_t *out, int max, int64_t lo,
                     int64_t hi, int *n, const char *what, sr_err *err)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 || cJSON_GetArraySize(arr) > max)
        return sr_json_error(d, arr, err, SR_E_ENGINE_CONFIG,
                             "%s must be an array of 1..%d integers", what, max);
    *n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (!cJSON_IsNumber(e) || !sr_json_is_integer_literal(d, e) ||
            e->valuedouble < (double)lo || e->valuedouble > (double)hi)
            return sr_json_error(d, e, err, SR_E_ENGINE_CONFIG,
                                 "%s entries must be integers in [%lld, %lld]", what, (long long)lo,
                                 (long long)hi);
        out[(*n)++] = (int32_t)e->valuedouble;
    }
    return 0;
}

static int parse_model(sr_engine_config *c, const sr_json_doc *d, const cJSON *m, sr_err *err)
{
    static const char *const keys[] = {
        "name",   "vocab",    "layers",         "layer_indices", "experts",        "topk",
        "eos_id", "eos_rate", "stop_sequences", "logprob_scale", "nonfinite_rate", NULL};
    int rc = sr_json_check_keys(d, m, "model", keys, err);
    int64_t v;
    const char *s;
    if (!rc && !(rc = sr_json_get_string(d, m, "name", 0, c->model_name, &s, err)))
        snprintf(c->model_name, sizeof(c->model_name), "%s", s);
    if (!rc)
        rc = sr_json_get_int(d, m, "vocab", 0, 1, SR_ORACLE_MAX_VOCAB, c->vocab, &c->vocab, err);
    if (!rc && !(rc = sr_json_get_int(d, m, "layers", 0, 1, SR_ORACLE_MAX_LAYERS, c->num_layers, &v,
                                      err))) {
        c->num_layers = (int)v;
        for (int i = 0; i < c->num_layers; i++)
            c->layer_indices[i] = i;
    }
    const cJSON *li = cJSON_GetObjectItemCaseSensitive(m, "layer_indices");
    if (!rc && li) {
        int n;
        rc = int_array(d, li, c->layer_indices, SR_ORACLE_MAX_LAYERS, 0, INT32_MAX, &n,
                       "model.layer_indices", err);
        if (!rc && cJSON_GetObjectItemCaseSensitive(m, "layers") && n != c->num_layers)
            rc = sr_json_error(d, li, err, SR_E_ENGINE_CONFIG,
                               "model.layer_indices has %d entries but model.layers is %d", n,
                               c->num_layers);
        c->num_layers = n;
    }
    if (!rc)
        rc = sr_json_get_int(d, m, "experts", 0, 1, SR_ORACLE_MAX_EXPERTS, c->experts, &c->experts,
                             err);
    if (!rc && !(rc = sr_json_get_int(d, m, "topk", 0, 1, SR_ORACLE_MAX_TOPK, c->topk, &v, err)))
        c->topk = (int)v;
    if (!rc)
        rc =
            sr_json_get_int(d, m, "eos_id", 0, -1, SR_ORACLE_MAX_VOCAB, c->eos_id, &c->eos_id, err);
    if (!rc)
        rc = sr_json_get_double(d, m, "eos_rate", 0, 0, 1, c->eos_rate, &c->eos_rate, err);
    if (!rc)
        rc = sr_json_get_double(d, m, "logprob_scale", 0, 0, SR_ORACLE_MAX_LP_SCALE,
                                c->logprob_scale, &c->logprob_scale, err);
    if (!rc)
        rc = sr_json_get_double(d, m, "nonfinite_rate", 0, 0, 1, c->nonfinite_rate,
                                &c->nonfinite_rate, err);
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(m, "stop_sequences");
    if (!rc && ss) {
        if (!cJSON_IsArray(ss) || cJSON_GetArraySize(ss) > SR_ORACLE_MAX_STOPS)
            return sr_json_error(d, ss, err, SR_E_ENGINE_CONFIG,
                                 "model.stop_sequences must be an array of at most %d arrays",
                                 SR_ORACLE_MAX_STOPS);
        const cJSON *e;
        c->num_stops = 0;
        cJSON_ArrayForEach(e, ss)
        {
            int32_t *dst = c->stop_tokens + c->num_stops * SR_ORACLE_MAX_STOP_LEN;
            int n;
            rc = int_array(d, e, dst, SR_ORACLE_MAX_STOP_LEN, 0, INT32_MAX, &n,
                           "model.stop_sequences[i]", err);
            if (rc)
                break;
            c->stops[c->num_stops].ids = dst;
            c->stops[c->num_stops++].len = n;
        }
    }
    return rc;
}

static int parse_weights(sr_engine_config *c, const sr_json_doc *d, const cJSON *w, sr_err *err)
{
    static const char *const keys[] = {"total_bytes",        "expert_tensors",    "version",
                                       "tensor_change_rate", "block_change_rate", NULL};
    int rc = sr_json_check_keys(d, w, "weights", keys, err);
    int64_t v;
    if (!rc &&
        !(rc = sr_json_get_int(d, w, "total_bytes", 0, (int64_t)SR_WEIGHTS_MIN_BYTES,
                               (int64_t)SR_WEIGHTS_MAX_BYTES, (int64_t)c->weight_bytes, &v, err)))
        c->weight_bytes = (size_t)v;
    if (!rc && !(rc = sr_json_get_int(d, w, "expert_tensors", 0, 1, SR_WEIGHTS_MAX_EXPERTS,
                                      c->expert_tensors, &v, err)))
        c->expert_tensors = (int)v;
    if (!rc)
        rc = sr_json_get_int(d, w, "version", 0, 0, SR_WEIGHTS_MAX_VERSION, c->weight_version,
                             &c->weight_version, err);
    if (!rc)
        rc = sr_json_get_double(d, w, "tensor_change_rate", 0, 0, 1, c->tensor_change_rate,
                                &c->tensor_change_rate, err);
    if (!rc)
        rc = sr_json_get_double(d, w, "block_change_rate", 0, 0, 1, c->block_change_rate,
                                &c->block_change_rate, err);
    return rc;
}

/* One definition object of `fields`: validated by the registry, then kept as an extra field. */
static int parse_extra(sr_engine_config *c, const sr_json_doc *d, const cJSON *e, sr_err *err)
{
    if (c->n_extra == SR_ENGINE_MAX_EXTRA)
        return sr_json_error(d, e, err, SR_E_ENGINE_CONFIG,
                             "at most %d fields may be emitted from a definition",
                             SR_ENGINE_MAX_EXTRA);
    char *txt = cJSON_PrintUnformatted(e);
    sr_buf b = SR_BUF_INIT;
    sr_fields *reg = NULL;
    sr_err e2 = SR_ERR_INIT;
    int rc = txt ? sr_buf_printf(&b, &e2, "{\"fields\":[%s]}", txt)
                 : sr_err_set(&e2, SR_E_NOMEM, "cannot print a field definition");
    free(txt);
    if (!rc)
        rc = sr_fields_new(&reg, &e2);
    if (!rc)
        rc = sr_fields_load_json(reg, b.data, b.len, "definition", &e2);
    const sr_field_def *def = rc ? NULL : sr_fields_at(reg, 0);
    if (!rc && (!def || def->kind != SR_FIELD_PACKED))
        rc = sr_err_set(&e2, SR_E_FIELD_DEF, "the engine emits packed fields only");
    if (!rc &&
        (strcmp(def->name, "routed_experts") == 0 ||
         strcmp(def->name, "rollout_sample_support") == 0 || strcmp(def->name, "token_ids") == 0))
        rc = sr_err_set(&e2, SR_E_FIELD_DEF, "%s is a built-in; list it by name", def->name);
    for (int i = 0; !rc && i < c->n_extra; i++)
        if (strcmp(c->extra[i].name, def->name) == 0)
            rc = sr_err_set(&e2, SR_E_FIELD_DEF, "%s is listed twice", def->name);
    if (!rc && !sr_gen_extra_dtypes(def))
        rc = sr_err_set(&e2, SR_E_FIELD_DEF,
                        "%s is canonical but allows none of uint8, int16, int32", def->name);
    if (!rc)
        c->extra[c->n_extra++] = *def;
    sr_fields_free(reg);
    sr_buf_release(&b);
    if (rc == SR_E_NOMEM)
        return sr_err_set(err, rc, "%s", e2.msg);
    return rc ? sr_json_error(d, e, err, SR_E_ENGINE_CONFIG, "%s", e2.msg) : 0;
}

static int parse_fields(sr_engine_config *c, const sr_json_doc *d, const cJSON *f, int scenario,
                        sr_err *err)
{
    if (!cJSON_IsArray(f))
        return sr_json_error(d, f, err, SR_E_ENGINE_CONFIG,
                             "fields must be an array of names or definitions");
    c->routes = c->support = 0;
    c->n_extra = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, f)
    {
        int rc = 0;
        if (cJSON_IsString(e) && strcmp(e->valuestring, "routed_experts") == 0)
            c->routes = 1;
        else if (cJSON_IsString(e) && strcmp(e->valuestring, "rollout_sample_support") == 0)
            c->support = 1;
        else if (cJSON_IsObject(e))
            rc = scenario ? 0 : parse_extra(c, d, e, err);
        else
            rc = sr_json_error(d, e, err, SR_E_ENGINE_CONFIG,
                               "the mock engine emits routed_experts, rollout_sample_support and "
                               "fields given by a definition object");
        if (rc)
            return rc;
    }
    return 0;
}

static int parse_timing(sr_engine_config *c, const sr_json_doc *d, const cJSON *t, sr_err *err)
{
    static const char *const keys[] = {"prefill_ms", "decode_ms_per_token", NULL};
    int rc = sr_json_check_keys(d, t, "timing", keys, err);
    if (!rc)
        rc =
            sr_json_get_double(d, t, "prefill_ms", 0, 0, 3.6e6, c->prefill_ms, &c->prefill_ms, err);
    if (!rc)
        rc = sr_json_get_double(d, t, "decode_ms_per_token", 0, 0, 3.6e6, c->decode_ms,
                                &c->decode_ms, err);
    return rc;
}

static int parse_server(sr_engine_config *c, const sr_json_doc *d, const cJSON *s, sr_err *err)
{
    static const char *const keys[] = {"threads",
                                       "max_connections",
                                       "max_body_bytes",
                                       "max_response_bytes",
                                       "max_tokens_default",
                                       "max_seq",
                                       "world_size",
                                       "lora",
                                       NULL};
    int rc = sr_json_check_keys(d, s, "server", keys, err);
    int64_t v;
    if (!rc && !(rc = sr_json_get_int(d, s, "threads", 0, 1, 64, c->threads, &v, err)))
        c->threads = (int)v;
    if (!rc &&
        !(rc = sr_json_get_int(d, s, "max_connections", 0, 1, 65536, c->max_connections, &v, err)))
        c->max_connections = (int)v;
    if (!rc && !(rc = sr_json_get_int(d, s, "max_body_bytes", 0, 1024, (int64_t)1 << 32,
                                      (int64_t)c->max_body_bytes, &v, err)))
        c->max_body_bytes = (size_t)v;
    if (!rc && !(rc = sr_json_get_int(d, s, "max_response_bytes", 0, 4096, (int64_t)1 << 34,
                                      (int64_t)c->max_response_bytes, &v, err)))
        c->max_response_bytes = (size_t)v;
    if (!rc)
        rc = sr_json_get_int(d, s, "max_tokens_default", 0, 1, SR_ORACLE_MAX_SEQ,
                             c->max_tokens_default, &c->max_tokens_default, err);
    if (!rc)
        rc =
            sr_json_get_int(d, s, "max_seq", 0, 2, SR_ORACLE_MAX_SEQ, c->max_seq, &c->max_seq, err);
    if (!rc && !(rc = sr_json_get_int(d, s, "world_size", 0, 1, 1 << 20, c->world_size, &v, err)))
        c->world_size = (int)v;
    if (!rc)
        rc = sr_json_get_bool(d, s, "lora", 0, c->lora, &c->lora, err);
    return rc;
}

static int parse_sections(sr_engine_config *c, const sr_json_doc *d, const cJSON *root,
                          const cJSON *eng, int scenario, sr_err *err)
{
    int rc = 0;
    int64_t v;
    const cJSON *x;
    if ((x = cJSON_GetObjectItemCaseSensitive(root, "model")))
        rc = parse_model(c, d, x, err);
    if (!rc && (x = cJSON_GetObjectItemCaseSensitive(root, "weights")))
        rc = parse_weights(c, d, x, err);
    if (!rc && (x = cJSON_GetObjectItemCaseSensitive(root, "fields")))
        rc = parse_fields(c, d, x, scenario, err);
    if (!rc &&
        !(rc = sr_json_get_int(d, root, "sample_support_k", 0, 1, 1024, c->support_k, &v, err)))
        c->support_k = (int)v;
    if (!rc &&
        !(rc = sr_json_get_int(d, eng, "count", 0, 1, SR_ENGINE_MAX_COUNT, c->count, &v, err)))
        c->count = (int)v;
    if (!rc && (x = cJSON_GetObjectItemCaseSensitive(eng, "timing")))
        rc = parse_timing(c, d, x, err);
    if (!rc && (x = cJSON_GetObjectItemCaseSensitive(eng, "server")))
        rc = parse_server(c, d, x, err);
    if (!rc && (x = cJSON_GetObjectItemCaseSensitive(eng, "faults"))) {
        c->faults = cJSON_Duplicate(x, 1);
        if (!c->faults)
            rc = sr_err_set(err, SR_E_NOMEM, "cannot copy the fault plan");
    }
    return rc;
}

int sr_engine_config_parse(sr_engine_config *c, const char *text, size_t len, const char *source,
                           int index, sr_err *err)
{
    sr_engine_config_defaults(c);
    if (index < 0 || index > 63)
        return sr_err_set(err, SR_E_ENGINE_CONFIG, "engine index %d is outside 0..63", index);
    sr_json_doc *d = NULL;
    int rc = sr_json_parse(&d, text, len, source, 0, err);
    if (rc)
        return recode(rc, err);
    const cJSON *root = sr_json_root(d);
    if (!cJSON_IsObject(root)) {
        rc = sr_json_error(d, root, err, SR_E_ENGINE_CONFIG, "an engine config must be an object");
        sr_json_free(d);
        return rc;
    }
    const cJSON *eng = cJSON_GetObjectItemCaseSensitive(root, "engines");
    int scenario = eng && cJSON_IsObject(eng);
    if (!scenario) {
        static const char *const keys[] = {"id",     "index",   "seed",   "count",
                                           "model",  "weights", "fields", "sample_support_k",
                                           "timing", "server",  "faults", NULL};
        rc = sr_json_check_keys(d, root, "engine config", keys, err);
        eng = root;
    }
    int64_t v;
    const char *s;
    if (!rc)
        rc = sr_json_get_int(d, root, "seed", 0, 0, INT64_MAX, (int64_t)c->seed, &v, err);
    if (!rc)
        c->seed = (uint64_t)v;
    c->index = index;
    if (!rc && !scenario && !(rc = sr_json_get_int(d, root, "index", 0, 0, 63, index, &v, err)))
        c->index = (int)v;
    if (!rc && !scenario && cJSON_GetObjectItemCaseSensitive(root, "id")) {
        rc = sr_json_get_string(d, root, "id", 1, NULL, &s, err);
        if (!rc && (strlen(s) == 0 || strlen(s) >= sizeof(c->id)))
            rc = sr_json_error(d, cJSON_GetObjectItemCaseSensitive(root, "id"), err,
                               SR_E_ENGINE_CONFIG, "id must be 1..%zu bytes", sizeof(c->id) - 1);
        if (!rc) {
            snprintf(c->base_id, sizeof(c->base_id), "%s", s);
            c->has_id = 1;
        }
    }
    if (!rc)
        rc = parse_sections(c, d, root, eng, scenario, err);
    sr_engine_config_id_for(c->id, sizeof(c->id), c, c->index);
    sr_json_free(d);
    if (rc) {
        cJSON_Delete(c->faults);
        c->faults = NULL;
    }
    return recode(rc, err);
}

int sr_engine_config_load(sr_engine_config *c, const char *path, int index, sr_err *err)
{
    sr_engine_config_defaults(c);
    sr_buf b = SR_BUF_INIT;
    int rc = sr_buf_read_file(&b, path, SR_JSON_DEFAULT_MAX, err);
    if (rc)
        sr_err_prefix(err, "engine config ");
    else
        rc = sr_engine_config_parse(c, b.data ? b.data : "", b.len, path, index, err);
    sr_buf_release(&b);
    return rc;
}

sr_weights_spec sr_engine_config_weights(const sr_engine_config *c)
{
    sr_weights_spec ws = SR_WEIGHTS_SPEC_INIT;
    ws.seed = c->seed;
    ws.num_layers = c->num_layers;
    ws.layer_indices = c->layer_indices;
    ws.experts = c->experts;
    ws.expert_tensors = c->expert_tensors;
    ws.total_bytes = c->weight_bytes;
    ws.tensor_change_rate = c->tensor_change_rate;
    ws.block_change_rate = c->block_change_rate;
    return ws;
}
