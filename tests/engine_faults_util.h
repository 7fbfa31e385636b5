/*
 * The fault suites' shared fixtures (test_engine_faults.c, test_engine_weight_faults.c): a small
 * model, one generate request, and an engine started with one fault.
 */
#ifndef SR_TEST_ENGINE_FAULTS_UTIL_H
#define SR_TEST_ENGINE_FAULTS_UTIL_H

#include "engine_util.h"

#define BASE_MODEL                                                                                 \
    "\"seed\":3,\"model\":{\"vocab\":1000,\"layers\":2,\"experts\":40,\"topk\":4,\"eos_id\":-1}"
#define REQ                                                                                        \
    "{\"sampling_params\":{\"max_tokens\":8,\"logprobs\":0,\"routed_experts_prompt_start\":2},"    \
    "\"model\":\"default\",\"token_ids\":[5,6,7,8,9,10]}"

/* Starts an engine whose plan is `fault` (one JSON object) targeted at the first generate. */
static inline void start_with(eng *e, const char *fault)
{
    char cfg[1024];
    snprintf(cfg, sizeof(cfg), "{" BASE_MODEL ",\"faults\":[%s]}", fault);
    eng_start(e, cfg);
}

#endif /* SR_TEST_ENGINE_FAULTS_UTIL_H */
