/*
 * stack: which SkyRL contract a scenario speaks (`client.stack`, scenarios/FORMAT.md §6;
 * docs/reference/skyrl.md §10). The client and the mock engines of a scenario speak the same one.
 *
 *   "2079"  NovaSky-AI/SkyRL #2079 at a604e5ccc (the default): no per-request sample support (an
 *           engine started with rollout_sample_support in `fields` emits it in every reply), and
 *           RoutedExpertTrace.finalize pads the uncovered tail to the token count.
 *   "2086"  the later stack, #2082 to #2086 (head 3308bd18d; #2082 merged as #2237): a request
 *           asks for the sampler's support with a top-level "return_sample_support": true and the
 *           client then uses /skyrl/v1/generate; the server refuses a top_k that is not an
 *           integer > 1 (HTTP 400), answers rollout_sample_support int32 [G, top_k] (each row
 *           padded at its end with -1, the sampled token a member of its row) after
 *           routed_experts in every /skyrl/v1/generate choice (null when not asked for); and
 *           finalize returns only the captured rows (#2083, commit 098017bff).
 * The sample-support part applies to the skyrl dialect (the only wire that carries the field);
 * the finalize part to every dialect (it is the client's trace).
 *
 * Pure lookups: thread-safe, nothing to free.
 */
#ifndef SR_SPEC_STACK_H
#define SR_SPEC_STACK_H

#include <string.h>

typedef enum sr_stack { SR_STACK_2079 = 0, SR_STACK_2086 = 1, SR_STACK_COUNT } sr_stack;

/* "2079" or "2086" (never NULL for a valid value). */
static inline const char *sr_stack_name(sr_stack s)
{
    return s == SR_STACK_2086 ? "2086" : "2079";
}

/* The stack named `name`, or -1. */
static inline int sr_stack_lookup(const char *name)
{
    if (name && strcmp(name, "2079") == 0)
        return SR_STACK_2079;
    if (name && strcmp(name, "2086") == 0)
        return SR_STACK_2086;
    return -1;
}

/*
 * The stack's contract of rollout_sample_support in the registry format of lib/sr_fields.h (what
 * `check-body --stack` and `validate-field --stack` read; fixtures/fields/sample_support_<S>.json
 * holds the same definition, and tests/test_skyrl_stack.c keeps the two equal):
 *   2079: any NumPy dtype, 2-D (the #2079 splice checks no dtype; its tests decode float32);
 *   2086: int32, 2-D (generate_wire.py SAMPLE_SUPPORT_DTYPES at 1c3510a4c), the built-in.
 * Both nullable, axis 0 the generated tokens.
 */
static inline const char *sr_stack_support_json(sr_stack s)
{
    return s == SR_STACK_2086
               ? "{\"fields\":[{\"name\":\"rollout_sample_support\",\"dtypes\":[\"int32\"],"
                 "\"ndim\":2,\"nullable\":true,\"token_rows\":true}]}"
               : "{\"fields\":[{\"name\":\"rollout_sample_support\",\"dtypes\":[\"bool\",\"int8\","
                 "\"uint8\",\"int16\",\"uint16\",\"int32\",\"uint32\",\"int64\",\"uint64\","
                 "\"float16\",\"float32\",\"float64\"],\"ndim\":2,\"nullable\":true}]}";
}

#endif /* SR_SPEC_STACK_H */
