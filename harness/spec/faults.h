/*
 * spec/faults: the fault plan's schema, shared by the scenario loader (which validates
 * `engines.faults`) and the mock engine (which applies it, engine/engine_faults.h).
 *
 * A plan is a JSON array of fault objects (the scenario's `engines.faults` embeds it verbatim):
 *
 *   {"kind": "truncate", "bytes": 100,            kind-specific parameters (the kind table)
 *    "id": "cut-turn-2",                          label used in reports (sr_fault_default_id)
 *    "engines": [0],                              engine indices (default: every engine)
 *    "endpoints": ["generate"],                   endpoint names or paths (default per kind)
 *    "nth": [2, 3],                               1-based ordinals among matching requests
 *    "turn": [2],                                 1-based turn within the X-Session-ID session
 *    "probability": 0.5,                          Bernoulli, seeded (default 1)
 *    "count": 1}                                  maximum firings (default unlimited)
 *
 * SR_FAULT_KIND_TABLE below is the one list of fault kinds: each row gives the enum value, the
 * stable name, the layer, the endpoints it reaches, the parameter keys the kind accepts and
 * requires, and a one-line description. The enum, name lookup, the layer, key validation and
 * the endpoint defaults are all derived from it, and so is the reference page
 * docs/reference/faults.md (`syncroll faults --markdown`, `make docs`; ctest docs.generated keeps
 * it current, tests/test_spec_faults.c reads it back and checks the engine's fault suite,
 * tests/test_engine_faults.c, against the table). Adding a kind: one row here, the code that
 * applies it in its layer of the engine (engine/), a case in tests/test_engine_faults.c, a
 * scenario that uses it, and `make docs`.
 *
 * Each kind belongs to one layer, and a request gets at most one fault per layer (the first
 * matching one in declaration order). Model and body kinds apply to the generate endpoints
 * only; weights kinds to the weight-sync endpoints only.
 *
 * A plan is parsed once, where its document is loaded (spec/engine_config.h's
 * sr_spec_parse_faults, for engine configs and scenarios alike), and travels typed from there;
 * sr_fault_plan_write_json writes it back (the expanded scenario, the engine config file).
 *
 * Errors: every problem is SR_E_FAULT_SPEC with a message "fault I (KIND): ..." naming the
 * fault's index and kind and the offending key; SR_E_NOMEM.
 * Thread-safety: the table is immutable; a parsed plan is read-only and may be shared.
 */
#ifndef SR_SPEC_FAULTS_H
#define SR_SPEC_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "fault_grammar.h"
#include "sr_err.h"

typedef enum sr_fault_layer {
    SR_FL_DELAY = 0,
    SR_FL_MODEL,
    SR_FL_BODY,
    SR_FL_HTTP,
    SR_FL_TRANSPORT,
    SR_FL_WEIGHTS,
    SR_FL_COUNT
} sr_fault_layer;

/* Which endpoints a kind may name, and the one it targets when the fault names none. */
typedef enum sr_fault_reach {
    SR_FR_ANY = 0,     /* any endpoint but oracle; default generate */
    SR_FR_GENERATE,    /* generate only */
    SR_FR_GENERATES,   /* generate and native_generate; default generate */
    SR_FR_WEIGHT_SYNC, /* update_weights (the default), collective_rpc, fetch_weights */
    SR_FR_SYNC_INIT,   /* init_weight_transfer_engine only (the default) */
} sr_fault_reach;

/* A list of parameter keys as one argument of X. */
/* clang-format off */
#define SR_FK_KEYS(...) {__VA_ARGS__}
#define SR_FK_NONE      {NULL}
/* clang-format on */
#define SR_FK_LATENCY_KEYS SR_FK_KEYS("dist", "ms", "min_ms", "max_ms", "median_ms", "sigma")

/*
 * The kind table, the one list of fault kinds:
 * X(symbol, "name", layer, reach, accepted keys, required keys, "description")
 * The description is FORMAT.md's "effect" cell, word for word.
 */
#define SR_FAULT_KIND_TABLE(X)                                                                     \
    X(SR_FK_LATENCY, "latency", SR_FL_DELAY, SR_FR_ANY, SR_FK_LATENCY_KEYS, SR_FK_NONE,            \
      "answer delayed (fixed, uniform or lognormal), bytes unchanged")                             \
    X(SR_FK_ROUTES_ALL_ZERO, "routes_all_zero", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,           \
      SR_FK_NONE, "every routed expert id is 0")                                                   \
    X(SR_FK_ROWS_P_PLUS_G, "rows_p_plus_g", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE, SR_FK_NONE,   \
      "one extra routes row, for the last sampled token")                                          \
    X(SR_FK_PROMPT_START_IGNORED, "prompt_start_ignored", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE, \
      SR_FK_NONE, "routes rows from 0 whatever the request's prompt start")                        \
    X(SR_FK_DUPLICATED_OUTPUT_ROWS, "duplicated_output_rows", SR_FL_MODEL, SR_FR_GENERATE,         \
      SR_FK_NONE, SR_FK_NONE, "every other output-token row repeats the row before it")            \
    X(SR_FK_EXPERT_OUT_OF_RANGE, "expert_out_of_range", SR_FL_MODEL, SR_FR_GENERATE,               \
      SR_FK_KEYS("row", "layer"), SR_FK_NONE,                                                      \
      "one expert id (at `row`, `layer`) equals the expert count")                                 \
    X(SR_FK_EXPERT_DUPLICATE, "expert_duplicate", SR_FL_MODEL, SR_FR_GENERATE,                     \
      SR_FK_KEYS("row", "layer"), SR_FK_NONE,                                                      \
      "one row's second expert (at `row`, `layer`) repeats its first")                             \
    X(SR_FK_ROUTES_DROPPED, "routes_dropped", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE, SR_FK_NONE, \
      "`routed_experts` is null")                                                                  \
    X(SR_FK_STALE_PREFIX_CACHE, "stale_prefix_cache", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,     \
      SR_FK_NONE, "prompt rows computed with the weights before the last update")                  \
    X(SR_FK_SERVE_BEFORE_SYNC, "serve_before_sync", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,       \
      SR_FK_NONE,                                                                                  \
      "the engine restarts on its initial weights and serves, before any sync, under the version " \
      "it held")                                                                                   \
    X(SR_FK_PREFIX_CACHED_SENTINEL, "prefix_cached_sentinel", SR_FL_MODEL, SR_FR_GENERATE,         \
      SR_FK_KEYS("row"), SR_FK_KEYS("row"),                                                        \
      "vllm-json (vLLM 0.21): the first `row` prompt rows, positions served from the prefix "      \
      "cache, are -1 in prompt_routed_experts")                                                    \
    X(SR_FK_OMIT_PREFIX_READMIT, "omit_prefix_readmit", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,   \
      SR_FK_NONE,                                                                                  \
      "engines.omit_prefix_routes: the request is preempted after its prefill and its "            \
      "num_cached_tokens re-recorded at re-admission, when its own prompt blocks hit (the prompt " \
      "rounded down to blocks, at most P - 1), so rows the caller never received are omitted "     \
      "(vllm#57966 records the first admission and keeps it across preemption)")                   \
    X(SR_FK_PD_DECODE_REPLICA, "pd_decode_replica", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,       \
      SR_FK_NONE,                                                                                  \
      "the decode replica of a prefill/decode pair: it never ran the prompt's forward pass, so "   \
      "its prompt-region rows are invalid (zeros) until a router merges the prefill's")            \
    X(SR_FK_STALE_DRAFT_MODEL, "stale_draft_model", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,       \
      SR_FK_NONE,                                                                                  \
      "after an update, the accepted draft tokens (two of every three generated after the "        \
      "first) are sampled and routed with the weights before it, under the new version")           \
    X(SR_FK_ROUTES, "routes", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_KEYS("select", "action"),         \
      SR_FK_KEYS("action"),                                                                        \
      "the rows `select` names get `action` (the route-fault grammar, spec/fault_grammar.h)")      \
    X(SR_FK_SUPPORT_UNREPAIRED, "support_unrepaired", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,     \
      SR_FK_NONE,                                                                                  \
      "client.stack 2086: a capture request's support rows that lack their sampled token are "     \
      "not repaired (the server's overwrite of the weakest member is missing)")                    \
    X(SR_FK_SUPPORT_LOGPROB_NULL, "support_logprob_null", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE, \
      SR_FK_NONE,                                                                                  \
      "a non-finite sampled logprob is written as null, not clamped (SkyRL #2082/#2237 review; "   \
      "the grammar's field logprobs, action null)")                                                \
    X(SR_FK_SUPPORT_NO_LOGPROBS, "support_no_logprobs", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,   \
      SR_FK_NONE,                                                                                  \
      "vLLM returns no logprobs: a reply has none, and client.stack 2086's capture path answers "  \
      "500 AttributeError (SkyRL #2086 review; the grammar's field logprobs, action drop)")        \
    X(SR_FK_RESTART_LOSES_GROUP, "restart_loses_group", SR_FL_MODEL, SR_FR_GENERATE, SR_FK_NONE,   \
      SR_FK_NONE,                                                                                  \
      "the engine restarts on its initial weights before answering: its weight version goes back " \
      "to the initial one and its weight transfer group is gone (the next sync's first call is "   \
      "refused until a new init)")                                                                 \
    X(SR_FK_BAD_BASE64, "bad_base64", SR_FL_BODY, SR_FR_GENERATE, SR_FK_KEYS("field", "offset"),   \
      SR_FK_NONE, "a `!` in the field's base64 blob")                                              \
    X(SR_FK_BYTE_COUNT_OFF, "byte_count_off", SR_FL_BODY, SR_FR_GENERATE, SR_FK_KEYS("field"),     \
      SR_FK_NONE, "the shape declares one row more than the data holds")                           \
    X(SR_FK_NON_CANONICAL_DTYPE, "non_canonical_dtype", SR_FL_BODY, SR_FR_GENERATE, SR_FK_NONE,    \
      SR_FK_NONE, "routes in the next wider dtype")                                                \
    X(SR_FK_NPY_BIG_ENDIAN, "npy_big_endian", SR_FL_BODY, SR_FR_GENERATE, SR_FK_NONE, SR_FK_NONE,  \
      "vllm's .npy routes written big-endian (descr '>u2', bytes swapped), as np.save of a "       \
      "byte-swapped array writes them")                                                            \
    X(SR_FK_NPY_FORTRAN_ORDER, "npy_fortran_order", SR_FL_BODY, SR_FR_GENERATE, SR_FK_NONE,        \
      SR_FK_NONE,                                                                                  \
      "vllm's .npy routes written in Fortran order (fortran_order True, elements "                 \
      "column-major)")                                                                             \
    X(SR_FK_REORDERED_ENVELOPE, "reordered_envelope", SR_FL_BODY, SR_FR_GENERATE,                  \
      SR_FK_KEYS("field"), SR_FK_NONE, "the envelope's keys in the order dtype, shape, data")      \
    X(SR_FK_RESPACED_JSON, "respaced_json", SR_FL_BODY, SR_FR_GENERATES, SR_FK_NONE, SR_FK_NONE,   \
      "the whole body with `\", \"` and `\": \"` separators")                                      \
    X(SR_FK_DATA_NULL, "data_null", SR_FL_BODY, SR_FR_GENERATE, SR_FK_KEYS("field"), SR_FK_NONE,   \
      "the field's envelope has `\"data\":null`")                                                  \
    X(SR_FK_LOOKALIKE_FIELD, "lookalike_field", SR_FL_BODY, SR_FR_GENERATE, SR_FK_KEYS("field"),   \
      SR_FK_NONE, "a `not_<field>` envelope with other values before the real one")                \
    X(SR_FK_ESCAPED_QUOTE_KEY, "escaped_quote_key", SR_FL_BODY, SR_FR_GENERATE,                    \
      SR_FK_KEYS("field"), SR_FK_NONE, "an extra `x\\\"<field>` envelope after the real one")      \
    X(SR_FK_DUPLICATE_FIELD, "duplicate_field", SR_FL_BODY, SR_FR_GENERATE, SR_FK_KEYS("field"),   \
      SR_FK_NONE, "the field twice in the choice")                                                 \
    X(SR_FK_EXTRA_ENVELOPE, "extra_envelope", SR_FL_BODY, SR_FR_GENERATE,                          \
      SR_FK_KEYS("field", "key"), SR_FK_NONE, "an unregistered key holding an envelope")           \
    X(SR_FK_DEEP_NESTING, "deep_nesting", SR_FL_BODY, SR_FR_GENERATE, SR_FK_KEYS("field"),         \
      SR_FK_NONE, "a `<field>_nest` key after the field holding arrays nested 1010 deep")          \
    X(SR_FK_NESTED_ENVELOPE, "nested_envelope", SR_FL_BODY, SR_FR_GENERATE, SR_FK_KEYS("field"),   \
      SR_FK_NONE, "the field's envelope with `\"data\":null` and its real envelope in a sidecar")  \
    X(SR_FK_HTTP_502_HTML, "http_502_html", SR_FL_HTTP, SR_FR_ANY, SR_FK_KEYS("text"), SR_FK_NONE, \
      "a 502 with an HTML body")                                                                   \
    X(SR_FK_HTTP_503_JSON, "http_503_json", SR_FL_HTTP, SR_FR_ANY, SR_FK_KEYS("text"), SR_FK_NONE, \
      "a 503 with a JSON error body")                                                              \
    X(SR_FK_HTTP_429, "http_429", SR_FL_HTTP, SR_FR_ANY, SR_FK_KEYS("text", "retry_after"),        \
      SR_FK_NONE, "a 429 with `Retry-After` (seconds)")                                            \
    X(SR_FK_HTTP_400_TEXT, "http_400_text", SR_FL_HTTP, SR_FR_ANY, SR_FK_KEYS("text"), SR_FK_NONE, \
      "a 400 with a plain-text body")                                                              \
    X(SR_FK_TRUNCATE, "truncate", SR_FL_TRANSPORT, SR_FR_ANY, SR_FK_KEYS("bytes", "keep_length"),  \
      SR_FK_KEYS("bytes"), "body cut at byte `bytes`")                                             \
    X(SR_FK_TRUNCATE_IN_BLOB, "truncate_in_blob", SR_FL_TRANSPORT, SR_FR_GENERATE,                 \
      SR_FK_KEYS("offset", "keep_length"), SR_FK_NONE,                                             \
      "body cut inside the first base64 blob (default: its middle)")                               \
    X(SR_FK_TRUNCATE_AFTER_BLOBS, "truncate_after_blobs", SR_FL_TRANSPORT, SR_FR_GENERATE,         \
      SR_FK_KEYS("offset", "keep_length"), SR_FK_NONE,                                             \
      "body cut just after the last blob's closing quote")                                         \
    X(SR_FK_RESET, "reset", SR_FL_TRANSPORT, SR_FR_ANY, SR_FK_NONE, SR_FK_NONE,                    \
      "TCP reset before any byte")                                                                 \
    X(SR_FK_REFUSE, "refuse", SR_FL_TRANSPORT, SR_FR_ANY, SR_FK_KEYS("ms"), SR_FK_KEYS("ms"),      \
      "TCP reset, then the port refuses connections for `ms`")                                     \
    X(SR_FK_STALL, "stall", SR_FL_TRANSPORT, SR_FR_ANY, SR_FK_NONE, SR_FK_NONE,                    \
      "never answers (until the engine stops)")                                                    \
    X(SR_FK_STALL_MID_BODY, "stall_mid_body", SR_FL_TRANSPORT, SR_FR_ANY, SR_FK_KEYS("bytes"),     \
      SR_FK_NONE, "sends `bytes` of the body (default half), then stalls")                         \
    X(SR_FK_DRIBBLE, "dribble", SR_FL_TRANSPORT, SR_FR_ANY, SR_FK_KEYS("bytes_per_second"),        \
      SR_FK_KEYS("bytes_per_second"), "body sent in 1/20 s slices at `bytes_per_second`")          \
    X(SR_FK_PARTIAL_WEIGHT_APPLY, "partial_weight_apply", SR_FL_WEIGHTS, SR_FR_WEIGHT_SYNC,        \
      SR_FK_KEYS("layers"), SR_FK_NONE,                                                            \
      "the update skips the MoE layer slots `layers` (default: the last)")                         \
    X(SR_FK_VERSION_NOT_BUMPED, "version_not_bumped", SR_FL_WEIGHTS, SR_FR_WEIGHT_SYNC,            \
      SR_FK_NONE, SR_FK_NONE, "the update commits, but the reported version does not move")        \
    X(SR_FK_CHECKSUM_MISMATCH, "checksum_mismatch", SR_FL_WEIGHTS, SR_FR_WEIGHT_SYNC, SR_FK_NONE,  \
      SR_FK_NONE, "the update fails its checksum (a payload bit flipped); the version stays")      \
    X(SR_FK_UPDATE_OK_NO_TRANSFER, "update_ok_no_transfer", SR_FL_WEIGHTS, SR_FR_WEIGHT_SYNC,      \
      SR_FK_NONE, SR_FK_NONE,                                                                      \
      "a broadcast bucket is answered 200 but its bytes never land; finish reports the new "       \
      "version")                                                                                   \
    X(SR_FK_VERSION_REGRESS, "version_regress", SR_FL_WEIGHTS, SR_FR_WEIGHT_SYNC, SR_FK_NONE,      \
      SR_FK_NONE,                                                                                  \
      "the update loads the stale initial checkpoint instead and reports its version, below the "  \
      "held one")                                                                                  \
    X(SR_FK_INIT_GROUP_HANG, "init_group_hang", SR_FL_WEIGHTS, SR_FR_SYNC_INIT, SR_FK_NONE,        \
      SR_FK_NONE,                                                                                  \
      "init_weight_transfer_engine never answers (the trainer never joins the group), until the "  \
      "engine stops")                                                                              \
    X(SR_FK_ACK_BEFORE_APPLY, "ack_before_apply", SR_FL_WEIGHTS, SR_FR_WEIGHT_SYNC,                \
      SR_FK_KEYS("layers", "requests"), SR_FK_NONE,                                                \
      "the update is acknowledged with the MoE layer slots `layers` (default: the last) still "    \
      "old; they apply once `requests` (default 1) more generates are answered")                   \
    X(SR_FK_PARTIAL_APPLY_ON_ERROR, "partial_apply_on_error", SR_FL_WEIGHTS, SR_FR_WEIGHT_SYNC,    \
      SR_FK_KEYS("layers"), SR_FK_NONE,                                                            \
      "the update fails after applying all but the MoE layer slots `layers` (default: the last) "  \
      "and reports the old version")                                                               \
    X(SR_FK_BUCKET_ORDER_MISMATCH, "bucket_order_mismatch", SR_FL_WEIGHTS, SR_FR_WEIGHT_SYNC,      \
      SR_FK_NONE, SR_FK_NONE,                                                                      \
      "a mixed-dtype broadcast bucket is unpacked grouped by dtype, not in its metadata's order: " \
      "each tensor gets another offset's bytes, silently (checksums pass)")                        \
    X(SR_FK_PUBLISH_AFTER_FAILED_CHUNK, "publish_after_failed_chunk", SR_FL_WEIGHTS,               \
      SR_FR_WEIGHT_SYNC, SR_FK_NONE, SR_FK_NONE,                                                   \
      "the finish of a broadcast update whose chunk failed commits what the chunks wrote and "     \
      "publishes the new version, answering 200")                                                  \
    X(SR_FK_GENERATE_FAILS_AFTER_UPDATE, "generate_fails_after_update", SR_FL_WEIGHTS,             \
      SR_FR_WEIGHT_SYNC, SR_FK_NONE, SR_FK_NONE,                                                   \
      "the update is applied and acknowledged, then every generate answers 500 and /health 503 "   \
      "(parameters left unloaded, a scheduler that died) until the engine stops")                  \
    X(SR_FK_DELETE_CHECKPOINT_AFTER_LOAD, "delete_checkpoint_after_load", SR_FL_WEIGHTS,           \
      SR_FR_WEIGHT_SYNC, SR_FK_NONE, SR_FK_NONE,                                                   \
      "after a load from disk succeeds, the engine removes the checkpoint folder it read (its "    \
      "files, then the folder), whoever else still has to load it")

#define SR_FK_ENUM_(sym, ...) sym,
typedef enum sr_fault_kind { SR_FAULT_KIND_TABLE(SR_FK_ENUM_) SR_FK_COUNT } sr_fault_kind;
#undef SR_FK_ENUM_

#define SR_FAULT_MAX_PARAMS 8 /* parameter keys of one kind, including the NULL end */

/* One row of the kind table. */
typedef struct sr_fault_kind_info {
    sr_fault_kind kind;
    const char *name; /* stable name in plans and reports ("truncate_in_blob") */
    sr_fault_layer layer;
    sr_fault_reach reach;
    const char *params[SR_FAULT_MAX_PARAMS];   /* keys it accepts besides the targeting ones */
    const char *required[SR_FAULT_MAX_PARAMS]; /* of those, the ones it requires */
    uint64_t default_endpoints; /* endpoint mask (bit = sr_endpoint) when the fault names none */
    uint64_t allowed_endpoints; /* endpoints it may name (from reach) */
    const char *doc;            /* one line: what the engine does (FORMAT.md's "effect") */
} sr_fault_kind_info;

/* The row of kind k; NULL for an invalid kind. */
const sr_fault_kind_info *sr_fault_kind_info_of(sr_fault_kind k);

/* The kind called `name`, or -1. */
int sr_fault_kind_lookup(const char *name);

/* Stable name of a kind ("truncate_in_blob"); NULL for an invalid kind. */
const char *sr_fault_kind_name(sr_fault_kind k);

/* Layer of a kind; SR_FL_COUNT for an invalid kind. */
sr_fault_layer sr_fault_kind_layer(sr_fault_kind k);

/* Name of a layer ("transport"); NULL for an invalid layer. */
const char *sr_fault_layer_name(sr_fault_layer l);

/*
 * The targeting keys every kind accepts ("kind", "id", "engines", "endpoints", "nth", "turn",
 * "probability", "count"), NULL-terminated.
 */
const char *const *sr_fault_common_keys(void);

/*
 * The parameter table, for generated docs: the number of parameter keys, and for key i its name
 * (the return value, borrowed; NULL past the end), its type and range written into `type` (cap
 * bytes, "integer 0..86400") and its one-line meaning in *doc (borrowed).
 */
size_t sr_fault_param_count(void);
const char *sr_fault_param_describe(size_t i, char *type, size_t cap, const char **doc);

/*
 * Writes the id of a fault that has no "id": "<kind>#<index>" (index 0-based in the plan).
 * Returns the length it needed, as snprintf.
 */
int sr_fault_default_id(char *buf, size_t cap, const char *kind, size_t index);

/* Latency distributions. */
typedef enum sr_latency_dist { SR_LAT_FIXED = 0, SR_LAT_UNIFORM, SR_LAT_LOGNORMAL } sr_latency_dist;

#define SR_FAULT_MAX      64       /* faults in one plan */
#define SR_FAULT_MAX_LIST 64       /* entries of nth / turn / engines / layers lists */
#define SR_FAULT_ID_MAX   64       /* label length, including the NUL */
#define SR_FAULT_TEXT_MAX 256      /* http_400_text body and similar, including the NUL */
#define SR_FAULT_MAX_MS   86400000 /* one day: the longest delay or window a fault may ask for */

/* One declared fault, parsed; parameters a kind does not take keep their defaults. */
typedef struct sr_fault {
    sr_fault_kind kind;
    char id[SR_FAULT_ID_MAX];
    uint64_t engines;   /* bit mask of engine indices 0..63; all ones = any */
    uint64_t endpoints; /* bit mask of sr_endpoint */
    int64_t nth[SR_FAULT_MAX_LIST];
    int n_nth;
    int64_t turns[SR_FAULT_MAX_LIST];
    int n_turns;
    double probability; /* 0..1 */
    int64_t count;      /* maximum firings, -1 unlimited */
    /* latency */
    sr_latency_dist dist;
    double ms, min_ms, max_ms, median_ms, sigma;
    /* truncation / stalls: "bytes" or "offset", see FORMAT.md */
    int64_t bytes;
    int has_bytes;
    int keep_length; /* truncate*: 1 announces the full Content-Length and closes after the cut */
    double bytes_per_second; /* dribble */
    int64_t retry_after;     /* http_429, seconds */
    /* routes corruption */
    int64_t row, layer;
    char field[SR_FAULT_ID_MAX];   /* body faults: the packed field they corrupt */
    char key[SR_FAULT_ID_MAX];     /* extra_envelope: the unregistered key */
    char text[SR_FAULT_TEXT_MAX];  /* http_400_text body, http_5xx message */
    int layers[SR_FAULT_MAX_LIST]; /* partial_weight_apply, ack_before_apply,
                                      partial_apply_on_error: MoE layer slots */
    int n_layers;
    int64_t requests;   /* ack_before_apply: generates answered before the deferred layers apply */
    sr_route_rule rule; /* routes, and the kinds that are aliases of a rule: what the engine does
                           (spec/fault_grammar.h); rule.active 0 for every other kind */
} sr_fault;

/*
 * Parses fault object `obj`, the index-th of its plan (the index names it in errors and in its
 * default id), into *out. Does not check that its id is unique in the plan.
 */
int sr_fault_parse(sr_fault *out, const cJSON *obj, size_t index, sr_err *err);

/* A parsed plan: opaque, read-only. */
typedef struct sr_fault_plan sr_fault_plan;

/*
 * Parses a whole plan from a cJSON array (NULL, JSON null or an empty array: no faults): at most
 * SR_FAULT_MAX faults, each as sr_fault_parse, ids unique (a repeated id is
 * "fault I: id \"ID\" is used twice" at the later fault). *out is freed with
 * sr_fault_plan_free. On an error, *where (when `where` is not NULL) is the node the error is
 * about, for a located message: the fault that has it (for a repeated id its "id" member, when it
 * has one), or `plan` itself when it is not an array or is too long; NULL otherwise.
 */
int sr_fault_plan_parse(sr_fault_plan **out, const cJSON **where, const cJSON *plan, sr_err *err);

/* As sr_fault_plan_parse, from JSON text (`len` bytes). */
int sr_fault_plan_parse_text(sr_fault_plan **out, const char *text, size_t len, sr_err *err);

/* NULL is a no-op. */
void sr_fault_plan_free(sr_fault_plan *plan);

/* Number of faults (0 for NULL) and the i-th (borrowed; NULL if out of range). */
size_t sr_fault_plan_count(const sr_fault_plan *plan);
const sr_fault *sr_fault_plan_at(const sr_fault_plan *plan, size_t i);

/*
 * Where body-shaping transport fault `t` (truncate, truncate_in_blob, truncate_after_blobs,
 * stall_mid_body) cuts an answer of `len` bytes: the number of bytes sent before the cut (len for
 * any other kind). truncate_in_blob cuts inside the first base64 blob ("data":"..."), at its
 * middle or `offset` characters in; truncate_after_blobs just after the last blob's closing
 * quote (plus `offset`). Used by the mock engine and the proxy alike (fault_cut.c).
 */
size_t sr_fault_cut_offset(const sr_fault *t, const char *body, size_t len);

/* The fault of `plan` whose id (given or default) is `id` (borrowed), or NULL. */
const sr_fault *sr_fault_plan_find(const sr_fault_plan *plan, const char *id);

/*
 * The first fault of `plan` with a route rule (the kind routes or an alias of a rule) whose
 * targeting and selection hold route row `pos` (at MoE layer `layer`, < 0: any) of turn `turn`
 * on engine `engine` (< 0: any), for a prompt of P tokens with route start `start` (0: none);
 * whole-reply actions hold every row of the turns they target. Writes
 * `fault "ID" (KIND: <selection>: <action>)` into buf and returns 1; 0 (buf "") when none does.
 * What the fault's nth, probability and count decided is the engine's: the answer is the
 * selection that holds the row, not a proof that it fired.
 */
int sr_fault_plan_locate(char *buf, size_t cap, const sr_fault_plan *plan, int engine, int64_t turn,
                         int64_t pos, int64_t P, int64_t start, int64_t layer);

/*
 * The writer, the inverse of the parser: *out is a new JSON object (cJSON_Delete) for fault f,
 * written from the kind table's row and the parameter rows the parser uses, so no kind has code
 * of its own. It holds the targeting keys "kind", "id" (a default one too), "engines" (unless
 * any engine), "endpoints" (as names), "nth" and "turn" (unless empty), "probability" and
 * "count" (unless unlimited), then every parameter key the kind accepts: an optional offset
 * ("bytes", "offset") only when it was given, a string only when it is not empty (the http
 * faults' "text"), a list only when it has entries ("layers"); every other key with its value,
 * defaults included. Integers are raw integer literals (cJSON would write large ones with an
 * exponent). For a fault from sr_fault_parse at index i, sr_fault_parse of the printed object at
 * index i gives back the same struct, member for member; what it writes for other structs is
 * unspecified (but a kind outside the table, a latency dist outside the enum or a list count
 * outside 0..SR_FAULT_MAX_LIST is SR_E_INTERNAL, never read past the struct). Errors: SR_E_NOMEM,
 * SR_E_INTERNAL.
 */
int sr_fault_write_json(cJSON **out, const sr_fault *f, sr_err *err);

/* The plan as a JSON array of sr_fault_write_json objects (NULL: an empty array). */
int sr_fault_plan_write_json(cJSON **out, const sr_fault_plan *plan, sr_err *err);

#endif /* SR_SPEC_FAULTS_H */
