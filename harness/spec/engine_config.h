/*
 * engine_config: the ONE typed schema of a mock engine's configuration -- model, weights,
 * emitted fields, timing, server limits, fault plan -- and its parser, shared by the engine's
 * config loader (`syncroll engine --config FILE`) and the scenario loader (scenarios/FORMAT.md),
 * so a file means the same to both and a bound cannot drift between them.
 *
 * Two JSON shapes are accepted by sr_engine_config_parse:
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
 *                "max_seq": 1048576, "world_size": 1, "lora": false,
 *                "header_timeout_ms": 5000, "body_timeout_ms": 60000,
 *                "max_pending_connections": 1024, "max_queued_requests": 1024,
 *                "sync_dirs": []},
 *     "dialect": "skyrl", "sync_dialect": "skyrl", "stack": "2079",
 *     "sync_version": "vllm#50902",
 *     "faults": [ ... see spec/faults.h ... ]}
 *    server.header_timeout_ms (10..600000) bounds the time from a connection's accept to the end
 *    of its first request's headers, server.body_timeout_ms (10..3600000) the time from the end
 *    of a request's headers to the end of its body; server.max_pending_connections (1..65536)
 *    caps the connections open without a request in progress, server.max_queued_requests
 *    (0..65536) the requests that arrived while max_connections were in progress and wait for a
 *    slot (server.h says what happens at each). server.sync_dirs: an array of at most
 *    SR_ENGINE_MAX_SYNC_DIRS absolute paths (1..SR_ENGINE_SYNC_DIR_MAX - 1 bytes each): the only
 *    folders under which the engine may read and write weight-sync state (the sync_dir of
 *    /fetch_weights and /update_weights). null, [] or no key: no folder at all (every sync_dir is
 *    refused; the synthetic update without one still works).
 *    `count` is read by `syncroll serve` only (number of engines; engine i gets index i and the
 *    id sr_engine_config_id_for gives).
 *
 *    A `fields` entry may also be a packed-field definition object in the registry format of
 *    lib/sr_fields.h ({"name": "logit_topk", "dtypes": ["float32"], "ndim": 2, ...}): the engine
 *    then emits that field in every /skyrl/v1/generate choice, after the built-ins, with the
 *    seeded values of lib/sr_gen_extra.h (at most SR_ENGINE_MAX_EXTRA; the name must not be a
 *    built-in; body faults target it by its name in their "field").
 *
 * 2. A scenario-like document: the same top-level `seed`, `model`, `weights` (the engine's keys
 *    only), `fields`, plus an `engines` object holding `count`, `faults`, `timing`, `server` and
 *    `sample_support_k`, and `client.stack` (the engine speaks the scenario's stack); every other
 * key (steps, expect, client, engines.urls, ...) is ignored here, the scenario loader owns them.
 * Definition objects in a scenario's `fields` are the client's (scenarios/FORMAT.md §4) and are
 * ignored.
 *
 * Defaults are those shown above, except layer_indices 0..layers-1 (layers default 4).
 *
 * Bounds (the same in both loaders; FORMAT.md §3 lists them). The oracle (lib/sr_oracle.h) is the
 * judge of a model, and a model it would refuse is refused here, naming the key:
 *   seed            0..2^53 (larger integers do not survive a JSON number exactly)
 *   model.name      1..127 bytes (SR_ENGINE_MODEL_NAME_MAX - 1); longer is an error, never cut
 *   model.vocab     1..2^31, and at least 2 when model.eos_id is a token (not -1)
 *   model.eos_id    -1..2^31-1 and below model.vocab
 *   model.layer_indices  1..1024 strictly increasing integers in [0, 2^31-1]; as many as
 *                   model.layers when both are given
 *   model.stop_sequences  at most 64 arrays of 1..64 token ids, each in [0, model.vocab)
 *   fields          at most SR_FIELDS_MAX entries
 * (Before the one parser, the engine's loader took vocab >= 1 and eos_id <= 2^31, cut an
 * over-long model name to 127 bytes, took any layer index or stop token up to 2^31-1 and any
 * seed up to 2^63-1, and read a scenario's sample_support_k from the top level instead of
 * `engines`; the scenario loader took vocab >= 2 only. Both now follow the oracle.)
 *
 * Errors. sr_engine_config_parse/load: SR_E_ENGINE_CONFIG for every problem (the message starts
 * with "FILE:LINE:COL: " where there is a position and names the key), SR_E_IO for an unreadable
 * file, SR_E_NOMEM. The section parsers (sr_spec_parse_*) are what both loaders call; they
 * report SR_E_JSON_SCHEMA for a wrong type or a value outside its range (from lib/sr_json.h),
 * the context's `code` for a rule beyond types (name length, keys that must agree, what the
 * oracle refuses), SR_E_NOMEM; sr_engine_config_parse turns the first two into
 * SR_E_ENGINE_CONFIG, the scenario loader keeps json.schema and uses SR_E_SCENARIO for rules.
 *
 * Faults. The plan (`faults`, or `engines.faults` of a scenario) is parsed whole, once, by
 * sr_spec_parse_faults when the document loads, into the typed plan of spec/faults.h: the engine
 * builds its runtime faults from it (engine/engine_faults.h, sr_faults_new) and the scenario writer
 * writes it back with sr_fault_plan_write_json. A fault the plan refuses (a bad kind, key or
 * value, a repeated id) is an error at that fault: "FILE:LINE:COL: faults: fault I (KIND): ..."
 * (engine.invalid_config; "engines.faults: " in a scenario read as an engine config). JSON null
 * is no faults here; the scenario loader asks for an array.
 *
 * Ownership: sr_engine_config is a plain struct owning its fault plan (`faults`, freed by
 * sr_engine_config_release). Its stop sequences point into the struct itself (stop_tokens) and a
 * copy made with `=` shares the plan: such a copy must not outlive the original and must not be
 * released (set its `faults` to NULL first if it is).
 * Thread-safety: parsing writes only the config it is given; a parsed config may be read by any
 * number of threads.
 */
#ifndef SR_SPEC_ENGINE_CONFIG_H
#define SR_SPEC_ENGINE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "dialect.h"
#include "faults.h"
#include "sr_err.h"
#include "sr_fields.h"
#include "stack.h"
#include "sr_json.h"
#include "sr_oracle.h"
#include "sr_weights.h"

#define SR_ENGINE_ID_MAX         64
#define SR_ENGINE_MAX_EXTRA      8     /* packed fields emitted from a definition */
#define SR_ENGINE_MAX_COUNT      64    /* engines one `serve` may start */
#define SR_ENGINE_MODEL_NAME_MAX 128   /* model.name bytes, including the NUL */
#define SR_ENGINE_MAX_SUPPORT_K  1024  /* sample_support_k */
#define SR_ENGINE_MAX_TIMING_MS  3.6e6 /* timing.prefill_ms and decode_ms_per_token: an hour */
#define SR_SPEC_SEED_MAX         ((int64_t)1 << 53) /* seeds: exact as a JSON number */

/* server.sync_dirs: entries, bytes of one (with the NUL). */
#define SR_ENGINE_MAX_SYNC_DIRS 8
#define SR_ENGINE_SYNC_DIR_MAX  1024

/* "skyrl", "vllm", "sglang"; NULL outside the enum. */
const char *sr_sync_dialect_name(sr_sync_dialect d);
/* The dialect named `name`, or -1. */
int sr_sync_dialect_lookup(const char *name);
/* (The enum sr_sync_dialect is in dialect.h, whose table gives each data-plane dialect its
 * default control plane: sr_dialect_sync_dialect.) */

/*
 * The form of vLLM's weight-transfer API the vllm control plane speaks (`sync_version` of an
 * engine config, engines.sync_version of a scenario; the other planes ignore it):
 *   "vllm#50902" (the default, vLLM's current form): `packed`, `packed_buffer_size_bytes` and
 *     `packed_num_buffers` travel once, in the init_info of /init_weight_transfer_engine
 *     (vllm/distributed/weight_transfer/nccl_common.py NCCLWeightTransferInitInfo, vllm#50902;
 *     the IPC backend since vllm#48981), and each update_info carries parameter metadata only;
 *     the weight version is an opaque string that starts as "default" and is published only by a
 *     successful finish_weight_update or by /update_weight_version (vllm#49040).
 *   "vllm#31943" (the earlier form, vLLM's first native NCCL API): `packed` and the buffer
 *     geometry ride in every update_info and the init_info has no such keys; versions are the
 *     engine's integers (GET /weight_info answers "0" before any update).
 */
typedef enum sr_sync_api {
    SR_SYNC_API_50902 = 0,
    SR_SYNC_API_31943,
    SR_SYNC_API_COUNT
} sr_sync_api;
/* "vllm#50902", "vllm#31943"; NULL outside the enum. */
const char *sr_sync_api_name(sr_sync_api v);
/* The form named `name`, or -1. */
int sr_sync_api_lookup(const char *name);

typedef struct sr_engine_config {
    char id[SR_ENGINE_ID_MAX];      /* this engine's id (see sr_engine_config_id_for) */
    char base_id[SR_ENGINE_ID_MAX]; /* the "id" key, if given */
    int has_id;
    int index; /* engine index used by fault targeting, 0..63 */
    int count; /* engines for `serve` */
    uint64_t seed;
    /* model */
    char model_name[SR_ENGINE_MODEL_NAME_MAX];
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
    int support; /* rollout_sample_support (the 2079 stack: in every reply) */
    int support_k;
    sr_stack stack; /* the SkyRL contract (spec/stack.h): top-level "stack" of an engine config,
                       client.stack of a scenario; "2079" by default */
    sr_field_def extra[SR_ENGINE_MAX_EXTRA]; /* emitted from their definition (sr_gen_extra.h) */
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
    int header_timeout_ms;
    int body_timeout_ms;
    int max_pending;              /* server.max_pending_connections */
    int max_queued;               /* server.max_queued_requests */
    sr_sync_dialect sync_dialect; /* sync_dialect (top level of the config) */
    int sync_dialect_given;       /* 1: the config named sync_dialect (else the dialect's) */
    sr_sync_api sync_version;     /* sync_version: the form of vLLM's API the vllm plane speaks */
    sr_dialect dialect;           /* the data-plane wire (spec/dialect.h; engines.dialect) */
    int n_sync_dirs;              /* server.sync_dirs; 0: the engine may write no folder */
    char sync_dirs[SR_ENGINE_MAX_SYNC_DIRS][SR_ENGINE_SYNC_DIR_MAX];
    int world_size;
    int lora;
    /* vLLM's routed-expert prefix omission (vllm#57025; engine/prefix_omit.h): prompt routes
     * from max(start, num_cached_tokens), num_cached_tokens counted in blocks of prefix_block */
    int omit_prefix;      /* omit_prefix_routes (vllm dialect only) */
    int64_t prefix_block; /* prefix_block, default SR_PREFIX_BLOCK_DEFAULT (16) */
    /* SGLang's masked padding (sglang#36404; masked_padding {"chunk","rows"}, sglang dialect
     * only): prompt rows p >= mask_chunk with p % mask_chunk < mask_rows are -1. 0: off */
    int64_t mask_chunk, mask_rows;
    sr_fault_plan *faults; /* owned, parsed once (sr_spec_parse_faults); NULL: no faults */
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

/* ---- the sections, shared by both loaders ---- */

/* Where a section parser reports: the document (for file:line:col), the code of a rule beyond
 * types (SR_E_ENGINE_CONFIG or SR_E_SCENARIO) and the error to fill. */
typedef struct sr_spec_ctx {
    const sr_json_doc *doc;
    int code;
    sr_err *err;
} sr_spec_ctx;

/* Sets x->err to x->code with "name:line:col: " + message at `node`; returns x->code. */
int sr_spec_fail(const sr_spec_ctx *x, const cJSON *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * The member names a section accepts, NULL-terminated (static, borrowed): section "model",
 * "weights", "timing", "server", or "" for the top level of an engine config (shape 1); NULL for
 * any other section. The scenario's key table lists the same names under model.*, weights.*
 * (plus the scenario's own transport and workers), engines.timing.* and engines.server.*.
 */
const char *const *sr_spec_section_keys(const char *section);

/*
 * Each parser reads the members of one JSON object of x->doc into c; an absent member keeps its
 * current value. With `what` not NULL the object's members are first checked against
 * sr_spec_section_keys (`what` names the object in the message, e.g. "engines.server"); with
 * NULL the caller has checked them. Errors: see the header comment.
 *
 * sr_spec_parse_model also checks the whole model against the oracle (sr_oracle_new).
 */
int sr_spec_parse_model(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *model,
                        const char *what);
int sr_spec_parse_weights(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *weights,
                          const char *what);
int sr_spec_parse_timing(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *timing,
                         const char *what);
int sr_spec_parse_server(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *server,
                         const char *what);

/*
 * The fault plan `faults` (a JSON array, or null for none), parsed whole by sr_fault_plan_parse
 * into c->faults, which it replaces (the old plan is freed; on an error c->faults is unchanged).
 * A fault it refuses is x->code at that fault (at a repeated id, at the later "id"; at `faults`
 * when it is not an array or too long) with the message "<what>: <the plan's message>", e.g.
 * "t.json:2:25: engines.faults: fault 0 (nope): unknown fault kind"; SR_E_NOMEM.
 */
int sr_spec_parse_faults(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *faults,
                         const char *what);

/*
 * `sync_dialect` of `parent` (the engine config's root, a scenario's `engines`): absent keeps
 * c->sync_dialect; "skyrl", "vllm" or "sglang" (c->sync_dialect_given becomes 1); anything else
 * is an error at the key.
 */
int sr_spec_parse_sync_dialect(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent);

/*
 * `omit_prefix_routes` (boolean, default false) and `prefix_block` (integer 1..4096, default 16)
 * of `parent` (as above); omission needs the vllm dialect (c->dialect, parsed first): with
 * another it is an error at the key.
 */
int sr_spec_parse_omit(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent);

/*
 * `masked_padding` of `parent` (as above): absent or null keeps it off; an object
 * {"chunk": 1..2^20 (required), "rows": 1..chunk (default 1)} turns it on. It needs the sglang
 * dialect (c->dialect, parsed first): with another it is an error at the key.
 */
int sr_spec_parse_masked(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent);

/* `sync_version` of `parent` (as above): absent keeps c->sync_version; "vllm#50902" or
 * "vllm#31943"; anything else is an error at the key. */
int sr_spec_parse_sync_version(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent);

/*
 * `dialect` of `parent` (as above): absent keeps c->dialect (default skyrl); a name of
 * spec/dialect.h's table; anything else is an error at the key naming the dialects. Unless a
 * sync_dialect was given, c->sync_dialect becomes the dialect's control plane
 * (sr_dialect_sync_dialect).
 */
int sr_spec_parse_dialect(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent);

/*
 * `stack` of `parent` (an engine config's root, a scenario's `client`; NULL or not an object:
 * nothing): absent keeps c->stack (default "2079"); "2079" or "2086" (spec/stack.h); anything else
 * is an error at the key naming both.
 */
int sr_spec_parse_stack(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent);

/*
 * Every field c emits from its definition must be carried by c->dialect's wire
 * (sr_dialect_field_def): the first that is not fails at `fields` of `root`, the message naming
 * dialect.field_unsupported and the reason (the config's code stays x->code). Called after the
 * dialect is known (`syncroll engine --dialect D` checks its fields again against D).
 */
int sr_spec_check_extra_wire(const sr_engine_config *c, const sr_spec_ctx *x, const cJSON *root);

/* What becomes of the definition objects of a `fields` array. */
typedef enum sr_spec_defs {
    SR_SPEC_DEFS_EMIT = 0, /* an engine config: the engine emits them (c->extra) */
    SR_SPEC_DEFS_IGNORE,   /* a scenario read as an engine config: they are the client's */
    SR_SPEC_DEFS_CLIENT    /* the scenario loader: added to the client's registry `client` */
} sr_spec_defs;

/*
 * The `fields` array: at most SR_FIELDS_MAX entries, each "routed_experts",
 * "rollout_sample_support" or a definition object (lib/sr_fields.h) handled as `defs` says
 * (`client` is used with SR_SPEC_DEFS_CLIENT only, and must then not be NULL: SR_E_INVAL; a
 * definition it refuses is an error at the entry). Sets c->routes and c->support to what the array
 * lists.
 */
int sr_spec_parse_fields(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *fields,
                         sr_spec_defs defs, sr_fields *client);

#endif /* SR_SPEC_ENGINE_CONFIG_H */
