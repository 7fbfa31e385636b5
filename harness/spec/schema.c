/*
 * The ground floor of the schema (engine_config.h): the config's defaults, identity and derived
 * views (the oracle model, the weight spec), the key list of every section, and the located
 * error every parser of the schema reports through. The section parsers (model.c) and the
 * document loader (engine_config.c) build on it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_config.h"
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
    c->prefix_block = 16; /* SR_PREFIX_BLOCK_DEFAULT (prefix_omit.h) */
    c->threads = 2;
    c->max_connections = 256;
    c->max_body_bytes = (size_t)16 << 20;
    c->max_response_bytes = (size_t)1 << 30;
    c->max_tokens_default = 16;
    c->max_seq = (int64_t)1 << 20;
    c->world_size = 1;
    c->header_timeout_ms = 5000;
    c->body_timeout_ms = 60000;
    c->max_pending = 1024;
    c->max_queued = 1024;
}

static const char *const DIALECTS[SR_SYNC_DIALECT_COUNT] = {"skyrl", "vllm", "sglang"};

const char *sr_sync_dialect_name(sr_sync_dialect d)
{
    return (unsigned)d < SR_SYNC_DIALECT_COUNT ? DIALECTS[d] : NULL;
}

static const char *const SYNC_VERSIONS[SR_SYNC_API_COUNT] = {"vllm#50902", "vllm#31943"};

const char *sr_sync_api_name(sr_sync_api v)
{
    return (unsigned)v < SR_SYNC_API_COUNT ? SYNC_VERSIONS[v] : NULL;
}

int sr_sync_api_lookup(const char *name)
{
    for (int i = 0; name && i < SR_SYNC_API_COUNT; i++)
        if (strcmp(SYNC_VERSIONS[i], name) == 0)
            return i;
    return -1;
}

int sr_sync_dialect_lookup(const char *name)
{
    for (int i = 0; name && i < SR_SYNC_DIALECT_COUNT; i++)
        if (strcmp(DIALECTS[i], name) == 0)
            return i;
    return -1;
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
    sr_fault_plan_free(c->faults);
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

const char *const *sr_spec_section_keys(const char *section)
{
    static const char *const model[] = {
        "name",   "vocab",    "layers",         "layer_indices", "experts",        "topk",
        "eos_id", "eos_rate", "stop_sequences", "logprob_scale", "nonfinite_rate", NULL};
    static const char *const weights[] = {"total_bytes",        "expert_tensors",    "version",
                                          "tensor_change_rate", "block_change_rate", NULL};
    static const char *const timing[] = {"prefill_ms", "decode_ms_per_token", NULL};
    static const char *const server[] = {"threads",
                                         "max_connections",
                                         "max_body_bytes",
                                         "max_response_bytes",
                                         "max_tokens_default",
                                         "max_seq",
                                         "world_size",
                                         "lora",
                                         "header_timeout_ms",
                                         "body_timeout_ms",
                                         "max_pending_connections",
                                         "max_queued_requests",
                                         "sync_dirs",
                                         NULL};
    static const char *const top[] = {
        "id",           "index",          "seed",   "count",
        "model",        "weights",        "fields", "sample_support_k",
        "timing",       "server",         "faults", "sync_dialect",
        "sync_version", "dialect",        "stack",  "omit_prefix_routes",
        "prefix_block", "masked_padding", NULL};
    static const struct {
        const char *name;
        const char *const *keys;
    } sections[] = {
        {"model", model}, {"weights", weights}, {"timing", timing}, {"server", server}, {"", top}};
    for (size_t i = 0; section && i < sizeof(sections) / sizeof(sections[0]); i++)
        if (strcmp(section, sections[i].name) == 0)
            return sections[i].keys;
    return NULL;
}

int sr_spec_fail(const sr_spec_ctx *x, const cJSON *node, const char *fmt, ...)
{
    char msg[SR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sr_json_error(x->doc, node, x->err, x->code, "%s", msg);
}
