/*
 * The later stack's sample support on the client side (client.h, spec/stack.h): reading
 * rollout_sample_support from a spliced /skyrl/v1/generate choice, and naming the server's
 * refusal of a capture request.
 *
 * What the reference client does (NovaSky-AI/SkyRL #2082, commit 1c3510a4c,
 * remote_inference_client.py): with return_sample_support it requires the choice's
 * rollout_sample_support to be an envelope ("/skyrl/v1/generate must return packed
 * rollout_sample_support") and decodes it as int32 [tokens, top_k] (generate_wire.py
 * decode_packed_sample_support), then validate_sample_support (sample_support.py) refuses values
 * below -1 and padding that is not trailing; the generator's trace then takes exactly one row
 * per generated token. The membership of the sampled token in its row is the server's invariant
 * (vllm_server_actor.py repairs a miss by overwriting the row's weakest member); syncroll's client
 * checks it, so that a server without the repair is caught by name.
 */
#include <string.h>

#include "client_priv.h"

/* The message prefix of the server's refusal (vllm_server_actor.py, _skyrl_generate). */
#define TOP_K_REFUSAL "return_sample_support requires sampling_params.top_k > 1"

static const sr_splice_entry *entry_of(const sr_splice_result *r, const cJSON *node)
{
    for (size_t i = 0; node && i < r->count; i++)
        if (r->entries[i].node == node)
            return &r->entries[i];
    return NULL;
}

/* One row: values >= -1, padding only at the end, the sampled token among the valid members
 * (a row with no valid member at all is one the server's repair leaves alone). */
static int check_row(const int32_t *row, int64_t K, int32_t sampled, int64_t g, sr_err *err)
{
    int64_t valid = 0;
    int found = 0;
    for (int64_t e = 0; e < K; e++) {
        if (row[e] < -1)
            return sr_err_set_at(err, SR_E_CLIENT_SUPPORT_INVALID, g,
                                 "rollout_sample_support[%lld][%lld] = %d: sample support IDs must "
                                 "be -1 padding or non-negative vocab IDs",
                                 (long long)g, (long long)e, row[e]);
        if (row[e] >= 0 && valid != e)
            return sr_err_set_at(err, SR_E_CLIENT_SUPPORT_INVALID, g,
                                 "rollout_sample_support row %lld: sample support padding must be "
                                 "trailing -1 values",
                                 (long long)g);
        if (row[e] >= 0) {
            valid++;
            found |= row[e] == sampled;
        }
    }
    if (valid && !found)
        return sr_err_set_at(err, SR_E_CLIENT_SUPPORT_MEMBERSHIP, g,
                             "rollout_sample_support row %lld lacks its sampled token %d (%lld "
                             "members)",
                             (long long)g, sampled, (long long)valid);
    return 0;
}

int sr_client_read_support(sr_client_result *out, const sr_splice_result *r, const cJSON *c0,
                           sr_err *err)
{
    const cJSON *node = cJSON_GetObjectItemCaseSensitive(c0, "rollout_sample_support");
    const sr_splice_entry *e = entry_of(r, node);
    if (!e || e->kind != SR_SPLICE_ENVELOPE)
        return sr_err_set(err, SR_E_CLIENT_SUPPORT_MISSING,
                          "/skyrl/v1/generate must return packed rollout_sample_support (got %s)",
                          !node                ? "no rollout_sample_support key"
                          : cJSON_IsNull(node) ? "null"
                                               : "a value that is not an envelope");
    const sr_ndarray *a = &e->array;
    if (a->ndim != 2 || a->dtype != SR_DTYPE_INT32)
        return sr_err_set(err, SR_E_CLIENT_SUPPORT_INVALID,
                          "rollout_sample_support must be an int32 [tokens, top_k] array");
    if (a->shape[0] != (int64_t)out->n_tokens)
        return sr_err_set(err, SR_E_CLIENT_SUPPORT_INVALID,
                          "rollout_sample_support has %lld rows for %zu generated tokens",
                          (long long)a->shape[0], out->n_tokens);
    const int32_t *rows = (const int32_t *)a->data;
    int64_t K = a->shape[1];
    for (int64_t g = 0; g < a->shape[0]; g++) {
        int rc = check_row(rows + g * K, K, out->token_ids[g], g, err);
        if (rc)
            return rc;
    }
    out->support = *a;
    out->has_support = 1;
    return 0;
}

int sr_client_support_refusal(int status, const char *msg)
{
    return status == 400 && msg && strstr(msg, TOP_K_REFUSAL) != NULL;
}
