/* The fault-kind table and what is derived from it (spec/faults.h). */
#include <stdio.h>
#include <string.h>

/* sr_endpoint and its SR_EP_* values; spec/endpoints.h takes them over. */
#include "engine/faults.h"
#include "faults.h"

#define EPB(e)  (1u << (e))
#define EP_GEN  EPB(SR_EP_GENERATE)
#define EP_GENS (EPB(SR_EP_GENERATE) | EPB(SR_EP_NATIVE))
#define EP_SYNC (EPB(SR_EP_UPDATE_WEIGHTS) | EPB(SR_EP_COLLECTIVE_RPC) | EPB(SR_EP_FETCH_WEIGHTS))
#define EP_ANY  (~0u)
#define EP_WUPD EPB(SR_EP_UPDATE_WEIGHTS)
/* A list of keys as one macro argument. */
/* clang-format off */
#define P(...) {__VA_ARGS__}
#define NONE   {NULL}
/* clang-format on */
#define LATENCY P("dist", "ms", "min_ms", "max_ms", "median_ms", "sigma")
#define ROW_LYR P("row", "layer")
#define TRUNC   P("offset", "keep_length")

/* Model and body kinds may name only the skyrl generate endpoint (respaced_json also the native
 * one); delay, http and most transport kinds any endpoint; weights kinds the weight-sync ones. */
#define MODEL(k, n, params, doc) [k] = {k, n, SR_FL_MODEL, params, NONE, EP_GEN, EP_GEN, doc}
#define BODY(k, n, params, doc)  [k] = {k, n, SR_FL_BODY, params, NONE, EP_GEN, EP_GEN, doc}
#define HTTP(k, n, params, doc)  [k] = {k, n, SR_FL_HTTP, params, NONE, EP_GEN, EP_ANY, doc}
#define TRANSPORT(k, n, params, req, doc)                                                          \
    [k] = {k, n, SR_FL_TRANSPORT, params, req, EP_GEN, EP_ANY, doc}
/* Cuts placed by the blobs of a generate body. */
#define BLOB_CUT(k, n, doc)        [k] = {k, n, SR_FL_TRANSPORT, TRUNC, NONE, EP_GEN, EP_GEN, doc}
#define WEIGHTS(k, n, params, doc) [k] = {k, n, SR_FL_WEIGHTS, params, NONE, EP_WUPD, EP_SYNC, doc}

static const sr_fault_kind_info KINDS[SR_FK_COUNT] = {
    [SR_FK_LATENCY] = {SR_FK_LATENCY, "latency", SR_FL_DELAY, LATENCY, NONE, EP_GEN, EP_ANY,
                       "answer delayed (fixed, uniform or lognormal), bytes unchanged"},
    MODEL(SR_FK_ROUTES_ALL_ZERO, "routes_all_zero", NONE, "every routed expert id is 0"),
    MODEL(SR_FK_ROWS_P_PLUS_G, "rows_p_plus_g", NONE,
          "one extra routes row, for the last sampled token"),
    MODEL(SR_FK_PROMPT_START_IGNORED, "prompt_start_ignored", NONE,
          "routes rows from 0 whatever the request's prompt start"),
    MODEL(SR_FK_DUPLICATED_OUTPUT_ROWS, "duplicated_output_rows", NONE,
          "every other output-token row repeats the row before it"),
    MODEL(SR_FK_EXPERT_OUT_OF_RANGE, "expert_out_of_range", ROW_LYR,
          "one expert id (at `row`, `layer`) equals the expert count"),
    MODEL(SR_FK_EXPERT_DUPLICATE, "expert_duplicate", ROW_LYR,
          "one row's second expert (at `row`, `layer`) repeats its first"),
    MODEL(SR_FK_ROUTES_DROPPED, "routes_dropped", NONE, "`routed_experts` is null"),
    MODEL(SR_FK_STALE_PREFIX_CACHE, "stale_prefix_cache", NONE,
          "prompt rows computed with the weights before the last update"),
    BODY(SR_FK_BAD_BASE64, "bad_base64", P("field", "offset"), "a `!` in the field's base64 blob"),
    BODY(SR_FK_BYTE_COUNT_OFF, "byte_count_off", P("field"),
         "the shape declares one row more than the data holds"),
    BODY(SR_FK_NON_CANONICAL_DTYPE, "non_canonical_dtype", NONE, "routes in the next wider dtype"),
    BODY(SR_FK_REORDERED_ENVELOPE, "reordered_envelope", P("field"),
         "the envelope's keys in the order dtype, shape, data"),
    [SR_FK_RESPACED_JSON] = {SR_FK_RESPACED_JSON, "respaced_json", SR_FL_BODY, NONE, NONE, EP_GEN,
                             EP_GENS, "the whole body with `\", \"` and `\": \"` separators"},
    BODY(SR_FK_DATA_NULL, "data_null", P("field"), "the field's envelope has `\"data\":null`"),
    BODY(SR_FK_LOOKALIKE_FIELD, "lookalike_field", P("field"),
         "a `not_<field>` envelope with other values before the real one"),
    BODY(SR_FK_ESCAPED_QUOTE_KEY, "escaped_quote_key", P("field"),
         "an extra `x\\\"<field>` envelope after the real one"),
    BODY(SR_FK_DUPLICATE_FIELD, "duplicate_field", P("field"), "the field twice in the choice"),
    BODY(SR_FK_EXTRA_ENVELOPE, "extra_envelope", P("field", "key"),
         "an unregistered key holding an envelope"),
    HTTP(SR_FK_HTTP_502_HTML, "http_502_html", P("text"), "a 502 with an HTML body"),
    HTTP(SR_FK_HTTP_503_JSON, "http_503_json", P("text"), "a 503 with a JSON error body"),
    HTTP(SR_FK_HTTP_429, "http_429", P("text", "retry_after"),
         "a 429 with `Retry-After` (seconds)"),
    HTTP(SR_FK_HTTP_400_TEXT, "http_400_text", P("text"), "a 400 with a plain-text body"),
    TRANSPORT(SR_FK_TRUNCATE, "truncate", P("bytes", "keep_length"), P("bytes"),
              "body cut at byte `bytes`"),
    BLOB_CUT(SR_FK_TRUNCATE_IN_BLOB, "truncate_in_blob",
             "body cut inside the first base64 blob (default: its middle)"),
    BLOB_CUT(SR_FK_TRUNCATE_AFTER_BLOBS, "truncate_after_blobs",
             "body cut just after the last blob's closing quote"),
    TRANSPORT(SR_FK_RESET, "reset", NONE, NONE, "TCP reset before any byte"),
    TRANSPORT(SR_FK_REFUSE, "refuse", P("ms"), P("ms"),
              "TCP reset, then the port refuses connections for `ms`"),
    TRANSPORT(SR_FK_STALL, "stall", NONE, NONE, "never answers (until the engine stops)"),
    TRANSPORT(SR_FK_STALL_MID_BODY, "stall_mid_body", P("bytes"), NONE,
              "sends `bytes` of the body (default half), then stalls"),
    TRANSPORT(SR_FK_DRIBBLE, "dribble", P("bytes_per_second"), P("bytes_per_second"),
              "body sent in 1/20 s slices at `bytes_per_second`"),
    WEIGHTS(SR_FK_PARTIAL_WEIGHT_APPLY, "partial_weight_apply", P("layers"),
            "the update skips the MoE layer slots `layers` (default: the last)"),
    WEIGHTS(SR_FK_VERSION_NOT_BUMPED, "version_not_bumped", NONE,
            "the update commits, but the reported version does not move"),
    WEIGHTS(SR_FK_CHECKSUM_MISMATCH, "checksum_mismatch", NONE,
            "the update fails its checksum (a payload bit flipped); the version stays"),
};

static const char *const LAYER_NAMES[SR_FL_COUNT] = {"delay", "model",     "body",
                                                     "http",  "transport", "weights"};

static const char *const COMMON_KEYS[] = {"kind", "id",          "engines", "endpoints", "nth",
                                          "turn", "probability", "count",   NULL};

const sr_fault_kind_info *sr_fault_kind_info_of(sr_fault_kind k)
{
    return (unsigned)k < SR_FK_COUNT ? &KINDS[k] : NULL;
}

int sr_fault_kind_lookup(const char *name)
{
    for (int i = 0; name && i < SR_FK_COUNT; i++)
        if (strcmp(name, KINDS[i].name) == 0)
            return i;
    return -1;
}

const char *sr_fault_kind_name(sr_fault_kind k)
{
    return (unsigned)k < SR_FK_COUNT ? KINDS[k].name : NULL;
}

sr_fault_layer sr_fault_kind_layer(sr_fault_kind k)
{
    return (unsigned)k < SR_FK_COUNT ? KINDS[k].layer : SR_FL_COUNT;
}

const char *sr_fault_layer_name(sr_fault_layer l)
{
    return (unsigned)l < SR_FL_COUNT ? LAYER_NAMES[l] : NULL;
}

const char *const *sr_fault_common_keys(void)
{
    return COMMON_KEYS;
}

int sr_fault_default_id(char *buf, size_t cap, const char *kind, size_t index)
{
    return snprintf(buf, cap, "%s#%zu", kind, index);
}
