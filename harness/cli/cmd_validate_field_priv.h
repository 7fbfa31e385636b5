/*
 * cmd_validate_field_priv: what validate-field's files share (cmd_validate_field.c, the battery
 * and its report; cmd_validate_field_capture.c, the generates that capture the bodies it judges).
 * Private to harness/cli/.
 */
#ifndef SR_CMD_VALIDATE_FIELD_PRIV_H
#define SR_CMD_VALIDATE_FIELD_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "spec/dialect.h"
#include "sr_buf.h"
#include "sr_err.h"

/* Clean requests captured before the fault requests. */
#define SR_VF_N_CLEAN 8
/* Prompt tokens stored per request in sr_vf_capture.prompts. */
#define SR_VF_PROMPT_MAX 64

/* The captured bodies, owned by the caller: n bodies, their prompts (SR_VF_PROMPT_MAX tokens a
 * request, the first P[i] used) and prompt lengths. */
typedef struct sr_vf_capture {
    sr_buf *bodies;
    int32_t *prompts;
    size_t *P;
    size_t n;
} sr_vf_capture;

/*
 * Sends cap->n generate requests to the engine at url in dialect d's wire (its first route) and
 * keeps each raw response body: SR_VF_N_CLEAN clean requests first (prompts of 1..36 tokens,
 * 1..15 generated), then one 4-token request per fault. support: the later stack's capture
 * request (top_k 4, return_sample_support). Fills prompts, P and bodies (each released and
 * replaced). Returns 0, or the first error (SR_E_CLIENT_TRANSPORT for an answer that is not a
 * 200, naming the URL) with err set.
 */
int sr_vf_capture_all(sr_vf_capture *cap, const char *url, sr_dialect d, int support, sr_err *err);

#endif /* SR_CMD_VALIDATE_FIELD_PRIV_H */
