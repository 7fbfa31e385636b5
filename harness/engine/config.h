/*
 * config: the configuration of one mock engine (`syncroll engine --config FILE`).
 *
 * Two JSON shapes are accepted:
 *
 * 1. An engine config (every key optional; unknown keys are errors):
 *    {"id": "engine-0", "index": 0, "seed": 1, "count": 1,
 *     "model": {"name": "default", "vocab": 32000, "layers": 4 | "layer_indices": [..],
 *               "experts": 64, "topk": 8, "eos_id": 2, "eos_rate": 0.05,
 *               "stop_sequences": [[..], ..], "logprob_scale": 8.0, "nonfinite_rate": 0.0},
 *     "weights": {"total_bytes": 1048576, "expert_tensors": 8, "version": 0,
 *                 "tensor_change_rate": 0.75, "block_change_rate": 0.125},
 *     "fields": ["routed_experts", "rollout_sample_support"], "sample_support_k": 4,
 *     "timing": {"prefill_ms": 0, "decode_ms_per_token": 0},
 *     "server": {"threads": 2, "max_connections": 256, "max_body_bytes": 16777216,
 *                "max_response_bytes": 1073741824, "max_tokens_default": 16,
 *                "max_seq": 1048576, "world_size": 1, "lora": false},
 *     "faults": [ ... see faults.h ... ]}
 *    `count` is read by `syncroll serve` only (number of engines; engine i gets index i and the
 *    id sr_engine_config_id_for gives).
 *
 *    A `fields` entry may also be a packed-field definition object in the registry format of
 *    lib/sr_fields.h ({"name": "logit_topk", "dtypes": ["float32"], "ndim": 2, ...}): the engine
 *    then emits that field in every /skyrl/v1/generate choice, after the built-ins, with the
 *    seeded values of lib/sr_gen_extra.h (at most SR_ENGINE_MAX_EXTRA; the name must not be a built-in;
 *    body faults target it by its name in their "field").
 *
 * 2. A scenario-like document: the same top-level `seed`, `model`, `weights`, `fields`, plus an
 *    `engines` object holding `count`, `faults`, `timing` and `server`; every other top-level key
 *    (steps, expect, client, ...) is ignored here, the scenario loader owns them. Definition
 *    objects in a scenario's `fields` are the client's (scenarios/FORMAT.md §4) and are ignored.
 *
 * Defaults are those shown above, except layer_indices 0..layers-1 (layers default 4).
 * Ownership: sr_engine_config is a plain struct owning its fault plan (cJSON, deep copy);
 * release with sr_engine_config_release. Errors: SR_E_ENGINE_CONFIG naming the key.
 */
#ifndef SR_ENGINE_CONFIG_H
#define SR_ENGINE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sr_err.h"
#include "sr_fields.h"
#include "sr_oracle.h"
#include "sr_weights.h"

#define SR_ENGINE_ID_MAX    64
#define SR_ENGINE_MAX_EXTRA 8  /* packed fields emitted from a definition */
#define SR_ENGINE_MAX_COUNT 64 /* engines one `serve` may start */

typedef struct sr_engine_config {
    char id[SR_ENGINE_ID_MAX];      /* this engine's id (see sr_engine_config_id_for) */
    char base_id[SR_ENGINE_ID_MAX]; /* the "id" key, if given */
    int has_id;
    int index; /* engine index used by fault targeting, 0..63 */
    int count; /* engines for `serve` */
    uint64_t seed;
    /* model */
    char model_name[128];
    int64_t vocab;
    int num_layers;
    int32_t layer_indices[SR_ORACLE_MAX_LAYERS];
    int64_t experts;
    int topk;
    int64_t eos_id;
    double eos_rate;
    double logprob_scale;
    double nonfinite_rate;
    int num_stops;
    sr_oracle_stopseq stops[SR_ORACLE_MAX_STOPS];
    int32_t stop_tokens[SR_ORACLE_MAX_STOPS * SR_ORACLE_MAX_STOP_LEN];
    /* weights */
    size_t weight_bytes;
    int expert_tensors;
    double tensor_change_rate;
    double block_change_rate;
    int64_t weight_version;
    /* packed fields emitted by /skyrl/v1/generate */
    int routes;  /* routed_experts (on by default) */
    int support; /* rollout_sample_support */
    int support_k;
    sr_field_def extra[SR_ENGINE_MAX_EXTRA]; /* emitted from their definition (lib/sr_gen_extra.h) */
    int n_extra;
    /* timing of the simulated forward passes */
    double prefill_ms;
    double decode_ms;
    /* server */
    int threads;
    int max_connections;
    size_t max_body_bytes;
    size_t max_response_bytes;
    int64_t max_tokens_default;
    int64_t max_seq;
    int world_size;
    int lora;
    cJSON *faults; /* owned; NULL: no faults */
} sr_engine_config;

/* The id of engine `index`: "engine-<index>" without an "id" key; the key's value when count is
 * 1; "<id>-<index>" otherwise. */
void sr_engine_config_id_for(char *out, size_t cap, const sr_engine_config *c, int index);

/* Fills `c` with the defaults (no faults). */
void sr_engine_config_defaults(sr_engine_config *c);

/*
 * Fills `c` from a JSON document (either shape) for engine `index` (0-based; the index also
 * selects nothing else: every engine shares the document). `source` names the file in messages.
 */
int sr_engine_config_parse(sr_engine_config *c, const char *text, size_t len, const char *source,
                           int index, sr_err *err);

/* Reads a file (at most 16 MiB) and parses it. */
int sr_engine_config_load(sr_engine_config *c, const char *path, int index, sr_err *err);

/* Frees what the config owns and resets it to the defaults. */
void sr_engine_config_release(sr_engine_config *c);

/* The oracle model of the config (pointers into c). */
sr_oracle_model sr_engine_config_model(const sr_engine_config *c);

/* The synthetic weight spec of the config (layer_indices points into c): the engine, the
 * verifier and the weight-sync trainer all derive their weights from it. */
sr_weights_spec sr_engine_config_weights(const sr_engine_config *c);

#endif /* SR_ENGINE_CONFIG_H */
