/* The dialect table (dialect.h); scenarios/FORMAT.md §5b cites the source of every row. */
#include "dialect.h"

#include <stdio.h>
#include <string.h>

#include "sr_gen_extra.h"
#include "sr_nrlre.h"

/* vLLM's RoutedExpertsManager: uint8 while every id fits (E <= 256), else uint16. */
static sr_dtype vllm_dtype(int64_t experts)
{
    return experts <= 256 ? SR_DTYPE_UINT8 : SR_DTYPE_UINT16;
}

/* SGLang's capturer buffers are torch.int32 whatever the model. */
static sr_dtype sglang_dtype(int64_t experts)
{
    (void)experts;
    return SR_DTYPE_INT32;
}

/* NeMo-RL's resolve_routed_experts_dtype: the narrowest signed type holding E - 1 and -1. */
static sr_dtype nemo_dtype(int64_t experts)
{
    if (experts <= 128)
        return SR_DTYPE_INT8;
    return experts <= 32768 ? SR_DTYPE_INT16 : SR_DTYPE_INT32;
}

/* vLLM's generate request: token_ids, SamplingParams holding routed_experts_prompt_start. */
#define NATIVE_REQ(start)                                                                          \
    {                                                                                              \
        "token_ids", "sampling_params", "max_tokens", start, 1, NULL, 1, NULL, NULL                \
    }
/* OpenAI completions: prompt token ids and the extra sampling keys at the top level; `routes`
 * asks for routes (sglang), `tokens` for the choice's token ids (vLLM's and SGLang's
 * return_token_ids). */
#define COMPLETIONS_REQ(start, routes, tokens)                                                     \
    {                                                                                              \
        "prompt", NULL, "max_tokens", start, 0, routes, 0, NULL, tokens                            \
    }
#define TOKENS "return_token_ids"
#define START  "routed_experts_prompt_start"

static const sr_dialect_desc rows[SR_DIALECT_COUNT] = {
    [SR_DIALECT_SKYRL] = {"skyrl",
                          {{"/skyrl/v1/generate", SR_API_SKYRL, NATIVE_REQ(START), NULL}},
                          "choices[i].routed_experts",
                          SR_ENC_ENVELOPE,
                          SR_ROWS_TRIMMED,
                          NULL,
                          SR_SYNC_DIALECT_SKYRL,
                          "an envelope {data,shape,dtype} in the choice"},
    [SR_DIALECT_VLLM] = {"vllm",
                         {{"/inference/v1/generate", SR_API_NATIVE, NATIVE_REQ(START), NULL},
                          {"/v1/completions", SR_API_COMPLETIONS,
                           COMPLETIONS_REQ(START, NULL, TOKENS), NULL}},
                         "choices[i].routed_experts",
                         SR_ENC_NPY,
                         SR_ROWS_TRIMMED,
                         vllm_dtype,
                         SR_SYNC_DIALECT_VLLM,
                         "a base64 .npy string in the choice (dtype and shape in its header)"},
    /* 0.21 had no prompt start: both regions from row 0; nested lists carry no dtype. */
    [SR_DIALECT_VLLM_JSON] = {"vllm-json",
                              {{"/inference/v1/generate", SR_API_NATIVE, NATIVE_REQ(NULL), NULL},
                               {"/v1/completions", SR_API_COMPLETIONS,
                                COMPLETIONS_REQ(NULL, NULL, TOKENS), NULL}},
                              "prompt_routed_experts + choices[i].routed_experts",
                              SR_ENC_NESTED,
                              SR_ROWS_SPLIT,
                              NULL,
                              SR_SYNC_DIALECT_VLLM,
                              "nested JSON integer lists in the choice: integer dtypes only "
                              "(no uint64)"},
    [SR_DIALECT_SGLANG] =
        {"sglang",
         {{"/generate",
           SR_API_SGLANG,
           {"input_ids", "sampling_params", "max_new_tokens", "routed_experts_start_len", 0,
            "return_routed_experts", 0, "return_logprob", NULL},
           NULL},
          /* CompletionRequest; the routes in CompletionResponse.sglext */
          {"/v1/completions", SR_API_COMPLETIONS,
           COMPLETIONS_REQ("routed_experts_start_len", "return_routed_experts", TOKENS), "sglext"}},
         "meta_info.routed_experts",
         SR_ENC_FLAT_B64,
         SR_ROWS_TRIMMED,
         sglang_dtype,
         SR_SYNC_DIALECT_SGLANG,
         "base64 of the raw bytes in meta_info, flat: one dtype only"},
    [SR_DIALECT_DYNAMO] = {"dynamo",
                           {{"/v1/completions", SR_API_COMPLETIONS,
                             COMPLETIONS_REQ(START, NULL, NULL), NULL}},
                           "nvext.engine_data.routed_experts",
                           SR_ENC_OBJECT,
                           SR_ROWS_TRIMMED,
                           vllm_dtype,
                           SR_SYNC_DIALECT_VLLM,
                           "an envelope {data,shape,dtype} under nvext.engine_data"},
    [SR_DIALECT_NEMO_RL] = {"nemo-rl",
                            {{"/v1/chat/completions",
                              SR_API_CHAT,
                              {"prompt_token_ids", NULL, "max_tokens", NULL, 0, NULL, 0, NULL,
                               NULL},
                              NULL}},
                            "choices[i].message.routed_experts",
                            SR_ENC_NRLRE,
                            SR_ROWS_FILLER,
                            nemo_dtype,
                            SR_SYNC_DIALECT_VLLM,
                            "an nrlre1 string in choices[0].message: 3-D int8/int16/int32 "
                            "fields only"},
};

const sr_dialect_desc *sr_dialect_get(sr_dialect d)
{
    return (unsigned)d < SR_DIALECT_COUNT ? &rows[d] : NULL;
}

const char *sr_dialect_name(sr_dialect d)
{
    return (unsigned)d < SR_DIALECT_COUNT ? rows[d].name : NULL;
}

int sr_dialect_lookup(const char *name)
{
    for (int i = 0; name && i < SR_DIALECT_COUNT; i++)
        if (strcmp(rows[i].name, name) == 0)
            return i;
    return -1;
}

const char *sr_dialect_names(char *dst, size_t cap, const char *sep)
{
    size_t len = 0;
    if (!cap)
        return dst;
    dst[0] = '\0';
    for (int i = 0; i < SR_DIALECT_COUNT; i++) {
        int n = snprintf(dst + len, cap - len, "%s%s", len ? sep : "", rows[i].name);
        if (n < 0 || (size_t)n >= cap - len) {
            dst[len] = '\0'; /* only whole names */
            break;
        }
        len += (size_t)n;
    }
    return dst;
}

sr_sync_dialect sr_dialect_sync_dialect(sr_dialect d)
{
    return (unsigned)d < SR_DIALECT_COUNT ? rows[d].sync : SR_SYNC_DIALECT_SKYRL;
}

const sr_dialect_route *sr_dialect_route_at(sr_dialect d, const char *path)
{
    const sr_dialect_desc *r = sr_dialect_get(d);
    for (int i = 0; r && path && i < SR_DIALECT_MAX_ROUTES && r->routes[i].path; i++)
        if (strcmp(r->routes[i].path, path) == 0)
            return &r->routes[i];
    return NULL;
}

/* ---- the client's reading of each wire ---- */

static sr_field_def route_def(sr_field_kind kind, sr_field_wire wire, const char *name,
                              sr_dtype_set dtypes, int ndim, int64_t min)
{
    sr_field_def d;
    memset(&d, 0, sizeof(d));
    d.kind = kind;
    snprintf(d.name, sizeof(d.name), "%s", name);
    d.wire = wire;
    d.dtypes = dtypes;
    d.ndim = ndim;
    d.nullable = 1;
    d.token_rows = 1;
    d.min = min;
    d.max = INT32_MAX;
    return d;
}

#define U8_U16 (SR_DTYPE_BIT(SR_DTYPE_UINT8) | SR_DTYPE_BIT(SR_DTYPE_UINT16))

int sr_dialect_add_fields(sr_fields *f, sr_dialect d, sr_err *err)
{
    sr_field_def defs[2 + SR_DIALECT_MAX_ROUTES];
    char names[SR_DIALECT_NAMES_MAX];
    int n = 0;
    switch (d) {
    case SR_DIALECT_SKYRL:
        return sr_fields_add_missing_builtins(f, err);
    case SR_DIALECT_VLLM:
        defs[n++] = route_def(SR_FIELD_STRING, SR_WIRE_NPY, "routed_experts", U8_U16, 3, 0);
        break;
    case SR_DIALECT_VLLM_JSON:
        defs[n++] = route_def(SR_FIELD_NESTED, SR_WIRE_RAW, "routed_experts", 0, 3, 0);
        defs[n++] = route_def(SR_FIELD_NESTED, SR_WIRE_RAW, "prompt_routed_experts", 0, 3, -1);
        break;
    case SR_DIALECT_SGLANG:
        defs[n++] = route_def(SR_FIELD_STRING, SR_WIRE_RAW, "routed_experts",
                              SR_DTYPE_BIT(SR_DTYPE_INT32), 1, 0);
        break;
    case SR_DIALECT_DYNAMO:
        defs[n++] = route_def(SR_FIELD_PACKED, SR_WIRE_RAW, "routed_experts", U8_U16, 3, 0);
        break;
    case SR_DIALECT_NEMO_RL:
        defs[n++] =
            route_def(SR_FIELD_STRING, SR_WIRE_NRLRE, "routed_experts", SR_NRLRE_DTYPES, 3, 0);
        break;
    default:
        return sr_err_set(err, SR_E_INVAL, "dialect %d is not one of %s", (int)d,
                          sr_dialect_names(names, sizeof(names), ", "));
    }
    /* The sampled token ids of every route (sglang: output_ids on /generate, token_ids on its
     * OpenAI route), spliced as integer arrays. */
    for (int r = 0; r < SR_DIALECT_MAX_ROUTES && rows[d].routes[r].path; r++) {
        sr_field_def ids;
        memset(&ids, 0, sizeof(ids));
        ids.kind = SR_FIELD_INT_ARRAY;
        snprintf(ids.name, sizeof(ids.name), "%s",
                 rows[d].routes[r].api == SR_API_SGLANG ? "output_ids" : "token_ids");
        ids.max = INT32_MAX;
        defs[n++] = ids;
    }
    for (int i = 0; i < n; i++) {
        if (sr_fields_find(f, defs[i].name, strlen(defs[i].name)))
            continue;
        int dup = 0;
        for (int k = 0; k < i; k++)
            dup |= strcmp(defs[k].name, defs[i].name) == 0;
        if (dup)
            continue;
        int rc = sr_fields_add(f, &defs[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Which dtypes of a packed definition the engine can emit (canonical narrows them). */
static sr_dtype_set emitted(const sr_field_def *def)
{
    return sr_gen_extra_dtypes(def) & def->dtypes;
}

static int refuse(sr_err *err, const sr_field_def *def, sr_dialect d, const char *why)
{
    return sr_err_set(err, SR_E_DIALECT_FIELD, "%s cannot be carried in the %s wire: %s", def->name,
                      sr_dialect_name(d), why);
}

/* The union of the value ranges of `set` (integer dtypes other than uint64). */
static void int_range(sr_dtype_set set, int64_t *lo, int64_t *hi)
{
    *lo = INT64_MAX;
    *hi = INT64_MIN;
    for (int t = 1; t < SR_DTYPE_COUNT; t++) {
        if (!(set >> t & 1))
            continue;
        unsigned bits = (unsigned)sr_dtype_size((sr_dtype)t) * 8u;
        int64_t a = !sr_dtype_is_signed((sr_dtype)t) ? 0
                    : bits == 64                     ? INT64_MIN
                                                     : -((int64_t)1 << (bits - 1));
        int64_t b = sr_dtype_is_signed((sr_dtype)t) || bits == 64
                        ? (int64_t)(((uint64_t)1 << (bits - 1)) - 1)
                        : (int64_t)(((uint64_t)1 << bits) - 1);
        *lo = a < *lo ? a : *lo;
        *hi = b > *hi ? b : *hi;
    }
}

int sr_dialect_field_def(sr_field_def *out, const sr_field_def *def, sr_dialect d, sr_err *err)
{
    char names[SR_DIALECT_NAMES_MAX];
    if ((int)d < 0 || d >= SR_DIALECT_COUNT || def->kind != SR_FIELD_PACKED)
        return sr_err_set(err, SR_E_INVAL, "no %s wire for %s",
                          sr_dialect_names(names, sizeof(names), ", "), def->name);
    *out = *def;
    sr_route_encoding enc = rows[d].encoding;
    if (enc == SR_ENC_ENVELOPE || enc == SR_ENC_OBJECT)
        return 0;
    sr_dtype_set can = emitted(def);
    if (enc == SR_ENC_NESTED) {
        for (int t = 1; t < SR_DTYPE_COUNT; t++)
            if ((can >> t & 1) && (!sr_dtype_is_integer((sr_dtype)t) || t == SR_DTYPE_UINT64))
                return refuse(err, def, d,
                              "nested JSON lists carry integer dtypes only (not "
                              "bool, floats or uint64)");
        out->kind = SR_FIELD_NESTED;
        out->canonical = 0;
        int_range(can, &out->min, &out->max);
        return 0;
    }
    if (strlen(def->name) < 5)
        return refuse(err, def, d, "a string-blob field's name must be at least 5 bytes");
    out->kind = SR_FIELD_STRING;
    out->canonical = 0;
    if (enc == SR_ENC_NPY) {
        out->wire = SR_WIRE_NPY;
        out->dtypes = can;
        return 0;
    }
    if (enc == SR_ENC_FLAT_B64) {
        if (can & (can - 1))
            return refuse(err, def, d,
                          "raw bytes do not say their dtype, so the field must "
                          "have exactly one dtype the engine can emit");
        out->wire = SR_WIRE_RAW;
        out->dtypes = can;
        out->ndim = 1;
        out->token_rows = 0;
        out->has_shape = 0; /* flat: sr_field_check_array checks the count against def's shape */
        return 0;
    }
    if (def->ndim != 3 || (can & ~SR_NRLRE_DTYPES))
        return refuse(err, def, d, "an nrlre1 string carries 3-D int8, int16 or int32 arrays only");
    out->wire = SR_WIRE_NRLRE;
    out->dtypes = can;
    return 0;
}

/* The byte patterns that tell a dialect (dialect.h), in no particular order. */
static const struct {
    sr_dialect d;
    const char *pat;
} SNIFF[] = {
    {SR_DIALECT_SGLANG, "\"meta_info\":{"},
    {SR_DIALECT_SGLANG, "\"sglext\":{\"routed_experts\":"},
    {SR_DIALECT_DYNAMO, "\"nvext\":{\"engine_data\":"},
    {SR_DIALECT_VLLM_JSON, "\"prompt_routed_experts\":"},
    {SR_DIALECT_VLLM_JSON, "\"routed_experts\":["},
    {SR_DIALECT_VLLM, "\"routed_experts\":\"k05VTVBZ"},
    {SR_DIALECT_NEMO_RL, "\"routed_experts\":\"nrlre1:"},
    {SR_DIALECT_SKYRL, "\"routed_experts\":{\"data\":"},
};

int sr_dialect_sniff(const char *body, size_t len, const char **why, sr_err *err)
{
    unsigned seen = 0;
    char all[SR_DIALECT_NAMES_MAX];
    const char *first = NULL;
    int found = -1;
    for (size_t i = 0; i < sizeof(SNIFF) / sizeof(SNIFF[0]); i++) {
        if (!memmem(body, len, SNIFF[i].pat, strlen(SNIFF[i].pat)))
            continue;
        /* dynamo's routes are an envelope too: its nvext wins over skyrl's pattern */
        if (SNIFF[i].d == SR_DIALECT_SKYRL && (seen & (1u << SR_DIALECT_DYNAMO)))
            continue;
        if (!(seen & (1u << SNIFF[i].d)) && found < 0) {
            found = (int)SNIFF[i].d;
            first = SNIFF[i].pat;
        }
        seen |= 1u << SNIFF[i].d;
    }
    if (found >= 0 && !(seen & ~(1u << found))) {
        if (why)
            *why = first;
        return found;
    }
    if (!seen)
        return sr_err_set(err, SR_E_DIALECT_AMBIGUOUS,
                          "no key of the body tells its dialect (no routes, meta_info or nvext); "
                          "name one with --dialect (%s)",
                          sr_dialect_names(all, sizeof(all), ", ")),
               -1;
    char names[128] = "";
    size_t used = 0;
    for (int d = 0; d < SR_DIALECT_COUNT; d++)
        if (seen & (1u << d))
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "",
                                     rows[d].name);
    return sr_err_set(err, SR_E_DIALECT_AMBIGUOUS,
                      "the body has keys of several dialects (%s); name one with --dialect", names),
           -1;
}
