/*
 * dialect: the data-plane wires of the engines syncroll imitates (issue #19), as one table.
 *
 * A dialect says how a generate request asks for routed experts and where and how the response
 * carries them. One row per dialect, read by the engine (which emits the wire) and, later, by the
 * client (which parses it): adding a wire is adding a row, never an `if` on a name. The sources
 * of every row (file, commit, PR) are cited in scenarios/FORMAT.md §5b.
 *
 *   name       generate paths                         routes in the response
 *   skyrl      /skyrl/v1/generate                     choices[i].routed_experts {data,shape,dtype}
 *   vllm       /inference/v1/generate, /v1/completions choices[i].routed_experts: base64 of .npy
 *   vllm-json  /inference/v1/generate, /v1/completions response prompt_routed_experts [P,L,K] +
 *                                                      choices[i].routed_experts [G,L,K], nested
 *                                                      lists
 *   sglang     /generate                              meta_info.routed_experts: base64 flat int32
 *              /v1/completions                        sglext.routed_experts (response level)
 *   dynamo     /v1/completions                        nvext.engine_data.routed_experts
 *                                                      {data,shape,start,dtype}, raw bytes
 *   nemo-rl    /v1/chat/completions                   choices[i].message.routed_experts
 *                                                      "nrlre1:<dtype>:<SxLxK>:<base64>"
 * The OpenAI completions routes of vllm, vllm-json and sglang return the choice's token_ids only
 * when the request sets return_token_ids (tokens_switch below), as those servers do.
 *
 * Rows of the oracle each wire carries (P prompt tokens, G generated, s the request's start):
 *   SR_ROWS_TRIMMED  [s, P+G-1)        skyrl, vllm, sglang (s = routed_experts_start_len), dynamo
 *   SR_ROWS_SPLIT    [0, P) and [P, P+G): the second region has one row per generated token,
 *                    the last one the forward pass on the last sampled token (vllm-json)
 *   SR_ROWS_FILLER   [0, P+G-1) then one filler row arange(K) on every layer (nemo-rl)
 *
 * Pure lookups in a constant table: thread-safe, nothing to free.
 */
#ifndef SR_SPEC_DIALECT_H
#define SR_SPEC_DIALECT_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"
#include "sr_fields.h"

/* The weight-sync control plane an engine speaks (engines.sync_dialect in a scenario, the top-level
 * `sync_dialect` of an engine config; names in engine_config.h). Each dialect's row names the
 * one its engines speak unless told otherwise. */
typedef enum sr_sync_dialect {
    SR_SYNC_DIALECT_SKYRL = 0, /* collective_rpc skyrl_*_weight_update, delta fetch/update */
    SR_SYNC_DIALECT_VLLM,      /* vLLM's native dev-mode routes: /start_weight_update, ... */
    SR_SYNC_DIALECT_SGLANG,    /* SGLang's routes: /init_weights_update_group, ... */
    SR_SYNC_DIALECT_COUNT
} sr_sync_dialect;

typedef enum sr_dialect {
    SR_DIALECT_SKYRL = 0,
    SR_DIALECT_VLLM,
    SR_DIALECT_VLLM_JSON,
    SR_DIALECT_SGLANG,
    SR_DIALECT_DYNAMO,
    SR_DIALECT_NEMO_RL,
    SR_DIALECT_COUNT
} sr_dialect;

/* Which oracle rows a wire carries (above). */
typedef enum sr_rows_rule { SR_ROWS_TRIMMED = 0, SR_ROWS_SPLIT, SR_ROWS_FILLER } sr_rows_rule;

/* How the route array is written. */
typedef enum sr_route_encoding {
    SR_ENC_ENVELOPE = 0, /* {"data": base64 raw, "shape": [..], "dtype": ".."} (skyrl) */
    SR_ENC_NPY,          /* base64 of the bytes np.save writes (lib/sr_npy.h) */
    SR_ENC_NESTED,       /* nested JSON integer lists */
    SR_ENC_FLAT_B64,     /* base64 of the raw C-order bytes, no shape (sglang) */
    SR_ENC_OBJECT,       /* {"data","shape","start","dtype"}, keys in that order (dynamo) */
    SR_ENC_NRLRE         /* "nrlre1:<dtype>:<SxLxK>:<base64>" (lib/sr_nrlre.h) */
} sr_route_encoding;

/* How the route dtype follows from the model's expert count E. */
typedef sr_dtype (*sr_dialect_dtype_fn)(int64_t experts);

#define SR_DIALECT_MAX_ROUTES 2

/*
 * Where a dialect's request keeps what the engine reads. `tokens_key`: the prompt's token ids.
 * `params`: the object holding max_tokens_key ("sampling_params"), or NULL for the top level.
 * `start_key`: the first route row asked for, in `params` when start_in_params (vLLM's
 * SamplingParams), else at the top level; NULL: the wire has no start (rows from 0).
 * `routes_switch`: a boolean the request must set true to get routes (sglang's
 * return_routed_experts); NULL: routes follow the engine's `fields` alone. `strict_params`:
 * `params` is vLLM's SamplingParams, validated as /skyrl/v1/generate validates it
 * (harness/engine/request.h); otherwise only the keys named here (and "logprobs", "ignore_eos")
 * are read.
 */
typedef struct sr_dialect_request {
    const char *tokens_key;
    const char *params;
    const char *max_tokens_key;
    const char *start_key;
    int start_in_params;
    const char *routes_switch;
    int strict_params;
    /* A top-level boolean that asks for the sampled tokens' logprobs (sglang's return_logprob);
     * NULL: the sampling member "logprobs" (an integer) asks, inside `params`. */
    const char *logprobs_switch;
    /* A top-level boolean the request must set true to get the sampled token ids in the choice
     * (the OpenAI completions routes of vLLM and SGLang: return_token_ids); NULL: always there. */
    const char *tokens_switch;
} sr_dialect_request;

/* The frame of a response around its choice(s). */
typedef enum sr_dialect_api {
    SR_API_SKYRL = 0, /* {"choices":[{...}]} */
    SR_API_NATIVE, /* vLLM /inference/v1/generate: {"request_id":..,"choices":[{"index":0,..}]} */
    SR_API_COMPLETIONS, /* OpenAI /v1/completions: {"id","object":"text_completion","model",..} */
    SR_API_CHAT,        /* OpenAI /v1/chat/completions: {"id","object":"chat.completion",..} */
    SR_API_SGLANG       /* SGLang /generate: {"text","output_ids","meta_info":{..}} */
} sr_dialect_api;

typedef struct sr_dialect_route {
    const char *path; /* POST path; NULL ends the list */
    sr_dialect_api api;
    sr_dialect_request request;
    /* A top-level object of the response that holds the routes on this route instead of the
     * dialect's own place (SGLang's OpenAI routes: "sglext"); NULL: the dialect's place. */
    const char *routes_ext;
} sr_dialect_route;

typedef struct sr_dialect_desc {
    const char *name;
    sr_dialect_route routes[SR_DIALECT_MAX_ROUTES];
    const char *routes_at; /* where the routes go in the response, for messages and docs */
    sr_route_encoding encoding;
    sr_rows_rule rows;
    sr_dialect_dtype_fn dtype; /* NULL: the envelope's canonical dtype (skyrl), or none (lists) */
    sr_sync_dialect sync;      /* the default control plane of its engines (sync_dialect) */
    const char *field_wire;    /* how a packed field travels in this wire (validate-field's help) */
} sr_dialect_desc;

/* The row of dialect d, or NULL outside the enum. */
const sr_dialect_desc *sr_dialect_get(sr_dialect d);

/* "skyrl", "vllm", ...; NULL outside the enum. */
const char *sr_dialect_name(sr_dialect d);

/* The dialect named `name`, or -1. */
int sr_dialect_lookup(const char *name);

/* Bytes enough for sr_dialect_names of the whole table with a separator of up to 8 bytes. */
#define SR_DIALECT_NAMES_MAX 256

/*
 * Writes the names of the table's dialects into dst (cap bytes, always NUL-terminated), in table
 * order and joined by `sep` (", ": "skyrl, vllm, vllm-json, sglang, dynamo, nemo-rl"); names that
 * do not fit are left out whole. For messages and help texts, which never list them by hand.
 * Returns dst.
 */
const char *sr_dialect_names(char *dst, size_t cap, const char *sep);

/* The default weight-sync control plane of dialect d's engines (its row's `sync`); skyrl outside
 * the enum. */
sr_sync_dialect sr_dialect_sync_dialect(sr_dialect d);

/*
 * Adds to `f` the splice registry entries that read dialect d's responses: its route field(s)
 * (skyrl: the built-ins; vllm: routed_experts as a .npy string of uint8/uint16; vllm-json:
 * routed_experts and prompt_routed_experts as nested lists, the prompt's with -1 allowed;
 * sglang: routed_experts as raw int32; dynamo: routed_experts as an envelope of uint8/uint16 with
 * its "start" sidecar; nemo-rl: routed_experts as an nrlre1 string) and the integer arrays of
 * the token ids of each of its routes (token_ids; sglang's /generate: output_ids). Entries whose
 * name `f` holds already are kept as they are. SR_E_INVAL outside the enum, and sr_fields_add's
 * errors.
 */
int sr_dialect_add_fields(sr_fields *f, sr_dialect d, sr_err *err);

/*
 * The dialect a raw response body is written in, told from the byte patterns of its frame and
 * routes (no parse; keys written compactly, as every engine writes them):
 *   sglang     "meta_info":{ or "sglext":{"routed_experts":
 *   dynamo     "nvext":{"engine_data":
 *   vllm-json  "prompt_routed_experts": or "routed_experts":[
 *   vllm       "routed_experts":"k05VTVBZ   (the base64 of the .npy magic \x93NUMPY)
 *   nemo-rl    "routed_experts":"nrlre1:
 *   skyrl      "routed_experts":{"data":    without "nvext"
 * Returns the one dialect whose patterns occur and sets *why (static) to the pattern that told;
 * -1 with dialect.ambiguous in err when none occurs (e.g. a body without routes: the frames of
 * several dialects look alike) or patterns of two dialects do.
 */
int sr_dialect_sniff(const char *body, size_t len, const char **why, sr_err *err);

/*
 * The registry entry that reads packed field `def` (a definition the engine emits from,
 * lib/sr_gen_extra.h) in dialect d's wire, at its routes' place; *out is `def` converted:
 *   skyrl, dynamo  the envelope itself (dynamo's under nvext.engine_data, no "start")
 *   vllm           SR_FIELD_STRING wire npy: dtype and shape from the .npy header
 *   sglang         SR_FIELD_STRING wire raw: flat (ndim 1, no token rows) in the one dtype the
 *                  engine can emit for def; refused when it can emit more than one (raw bytes do
 *                  not say which)
 *   nemo-rl        SR_FIELD_STRING wire nrlre: only 3-D fields whose dtypes are all int8, int16
 *                  or int32 (the nrlre1 prefix names no other)
 *   vllm-json      SR_FIELD_NESTED of def's ndim levels, [min, max] the union of its dtypes'
 *                  ranges: only integer dtypes other than uint64 (bool, floats and uint64 do not
 *                  fit JSON integers read as int64)
 * A string wire needs a name of 5 bytes or more (lib/sr_fields.h). canonical is dropped outside
 * the envelope (the wire's own dtype rules apply). Errors: SR_E_DIALECT_FIELD naming the field,
 * the dialect and the reason; SR_E_INVAL outside the enum or for a def that is not packed.
 */
int sr_dialect_field_def(sr_field_def *out, const sr_field_def *def, sr_dialect d, sr_err *err);

/* The generate route of dialect d at `path`, or NULL. */
const sr_dialect_route *sr_dialect_route_at(sr_dialect d, const char *path);

#endif /* SR_SPEC_DIALECT_H */
