/* The dialect table (dialect.h); scenarios/FORMAT.md §3b cites the source of every row. */
#include "dialect.h"

#include <string.h>

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
        "token_ids", "sampling_params", "max_tokens", start, 1, NULL, 1                            \
    }
/* OpenAI completions: prompt token ids and vLLM's extra sampling keys at the top level. */
#define COMPLETIONS_REQ(start)                                                                     \
    {                                                                                              \
        "prompt", NULL, "max_tokens", start, 0, NULL, 0                                            \
    }
#define START "routed_experts_prompt_start"

static const sr_dialect_desc rows[SR_DIALECT_COUNT] = {
    [SR_DIALECT_SKYRL] = {"skyrl",
                          {{"/skyrl/v1/generate", SR_API_SKYRL, NATIVE_REQ(START)}},
                          "choices[i].routed_experts",
                          SR_ENC_ENVELOPE,
                          SR_ROWS_TRIMMED,
                          NULL},
    [SR_DIALECT_VLLM] = {"vllm",
                         {{"/inference/v1/generate", SR_API_NATIVE, NATIVE_REQ(START)},
                          {"/v1/completions", SR_API_COMPLETIONS, COMPLETIONS_REQ(START)}},
                         "choices[i].routed_experts",
                         SR_ENC_NPY,
                         SR_ROWS_TRIMMED,
                         vllm_dtype},
    /* 0.21 had no prompt start: both regions from row 0; nested lists carry no dtype. */
    [SR_DIALECT_VLLM_JSON] = {"vllm-json",
                              {{"/inference/v1/generate", SR_API_NATIVE, NATIVE_REQ(NULL)},
                               {"/v1/completions", SR_API_COMPLETIONS, COMPLETIONS_REQ(NULL)}},
                              "prompt_routed_experts + choices[i].routed_experts",
                              SR_ENC_NESTED,
                              SR_ROWS_SPLIT,
                              NULL},
    [SR_DIALECT_SGLANG] = {"sglang",
                           {{"/generate",
                             SR_API_SGLANG,
                             {"input_ids", "sampling_params", "max_new_tokens",
                              "routed_experts_start_len", 0, "return_routed_experts", 0}}},
                           "meta_info.routed_experts",
                           SR_ENC_FLAT_B64,
                           SR_ROWS_TRIMMED,
                           sglang_dtype},
    [SR_DIALECT_DYNAMO] = {"dynamo",
                           {{"/v1/completions", SR_API_COMPLETIONS, COMPLETIONS_REQ(START)}},
                           "nvext.engine_data.routed_experts",
                           SR_ENC_OBJECT,
                           SR_ROWS_TRIMMED,
                           vllm_dtype},
    [SR_DIALECT_NEMO_RL] = {"nemo-rl",
                            {{"/v1/chat/completions",
                              SR_API_CHAT,
                              {"prompt_token_ids", NULL, "max_tokens", NULL, 0, NULL, 0}}},
                            "choices[i].message.routed_experts",
                            SR_ENC_NRLRE,
                            SR_ROWS_FILLER,
                            nemo_dtype},
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

const char *sr_dialect_names(void)
{
    return "skyrl, vllm, vllm-json, sglang, dynamo, nemo-rl";
}

const sr_dialect_route *sr_dialect_route_at(sr_dialect d, const char *path)
{
    const sr_dialect_desc *r = sr_dialect_get(d);
    for (int i = 0; r && path && i < SR_DIALECT_MAX_ROUTES && r->routes[i].path; i++)
        if (strcmp(r->routes[i].path, path) == 0)
            return &r->routes[i];
    return NULL;
}
