/* The body of POST /syncroll/v1/oracle (oracle_req.h). */
#include "oracle_req.h"

#include <math.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "sr_json.h"
#include "sync_req.h"

static const char *const KEYS[] = {"token_ids", "row_start", "row_end", NULL};

/* An integer literal that fits int64 (bools, fractions and exponents are not integers). */
static int is_int(const sr_json_doc *d, const cJSON *v)
{
    return cJSON_IsNumber(v) && sr_json_is_integer_literal(d, v) && fabs(v->valuedouble) < 9.2e18;
}

static int tokens_of(sr_oracle_req *q, const sr_json_doc *d, const cJSON *arr, int64_t vocab,
                     int64_t max_seq, sr_err *err)
{
    if (!cJSON_IsArray(arr))
        return sr_json_error(d, arr, err, SR_E_ENGINE_REQUEST,
                             "token_ids must be a list of integers");
    /* cJSON counts an array by walking it: the body's length bounds that walk. */
    size_t count = (size_t)cJSON_GetArraySize(arr);
    if (count == 0)
        return sr_json_error(d, arr, err, SR_E_ENGINE_REQUEST, "token_ids must not be empty");
    if ((int64_t)count > max_seq)
        return sr_json_error(d, arr, err, SR_E_ENGINE_REQUEST,
                             "token_ids has %zu entries, more than the engine's maximum sequence "
                             "length %lld (server.max_seq)",
                             count, (long long)max_seq);
    q->tokens = malloc(count * sizeof(*q->tokens));
    if (!q->tokens)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu token ids", count);
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        /* An integer literal too long for 64 bits is still an integer: out of the vocabulary
         * like any other, not a type error. */
        if (!cJSON_IsNumber(e) || !sr_json_is_integer_literal(d, e))
            return sr_json_error(d, e, err, SR_E_ENGINE_REQUEST,
                                 "token_ids entry %zu is not an integer", q->n);
        if (!is_int(d, e))
            return sr_json_error(d, e, err, SR_E_ORACLE_TOKEN,
                                 "token_ids entry %zu is an integer out of range, outside the "
                                 "model's vocabulary [0, %lld)",
                                 q->n, (long long)vocab);
        if (e->valuedouble < 0 || e->valuedouble >= (double)vocab)
            return sr_json_error(d, e, err, SR_E_ORACLE_TOKEN,
                                 "token_ids entry %zu is %.0f, outside the model's vocabulary "
                                 "[0, %lld)",
                                 q->n, e->valuedouble, (long long)vocab);
        q->tokens[q->n++] = (int32_t)e->valuedouble;
    }
    return 0;
}

/* An optional row bound: absent or null keeps *out; else an integer in [lo, hi]. */
static int row_of(const sr_json_doc *d, const cJSON *root, const char *key, int64_t lo, int64_t hi,
                  int64_t *out, sr_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!is_int(d, v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return sr_json_error(d, v, err, SR_E_ENGINE_REQUEST,
                             "%s must be an integer in [%lld, %lld] (%zu token ids)", key,
                             (long long)lo, (long long)hi, (size_t)hi);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int parse_root(sr_oracle_req *q, const sr_json_doc *d, int64_t vocab, int64_t max_seq,
                      sr_err *err)
{
    const cJSON *root = sr_json_root(d);
    if (!cJSON_IsObject(root))
        return sr_json_error(d, root, err, SR_E_ENGINE_REQUEST,
                             "the request body must be a JSON object");
    if (sr_json_check_keys(d, root, "the oracle request", KEYS, err)) {
        if (err)
            err->code = SR_E_ENGINE_REQUEST;
        return SR_E_ENGINE_REQUEST;
    }
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "token_ids");
    if (!tok)
        return sr_json_error(d, root, err, SR_E_ENGINE_REQUEST, "token_ids is required");
    int rc = tokens_of(q, d, tok, vocab, max_seq, err);
    int64_t n = (int64_t)q->n;
    if (!rc)
        rc = row_of(d, root, "row_start", 0, n, &q->row_start, err);
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(root, "row_end");
    q->row_end = n - 1;
    if (!rc && (!end || cJSON_IsNull(end)) && q->row_start > n - 1)
        rc = sr_json_error(d, root, err, SR_E_ENGINE_REQUEST,
                           "row_start %lld is past the default row_end %lld (the %lld token ids "
                           "less one); give row_end",
                           (long long)q->row_start, (long long)(n - 1), (long long)n);
    if (!rc)
        rc = row_of(d, root, "row_end", q->row_start, n, &q->row_end, err);
    return rc;
}

int sr_oracle_req_parse(sr_oracle_req *out, const char *body, size_t len, int64_t vocab,
                        int64_t max_seq, sr_err *err)
{
    sr_oracle_req q = SR_ORACLE_REQ_INIT;
    *out = q;
    int rc = sr_sync_req_no_nul(body, len, "the oracle request", err);
    if (rc)
        return rc;
    sr_json_doc *d = NULL;
    rc = sr_json_parse(&d, body, len, "request", len + 1, err);
    if (rc) {
        /* Not JSON is the caller's contract broken, whatever the JSON layer calls it. */
        if (rc != SR_E_NOMEM) {
            if (err)
                err->code = SR_E_ENGINE_REQUEST;
            rc = SR_E_ENGINE_REQUEST;
        }
        return rc;
    }
    rc = parse_root(&q, d, vocab, max_seq, err);
    sr_json_free(d);
    if (rc) {
        sr_oracle_req_release(&q);
        return rc;
    }
    *out = q;
    return 0;
}

void sr_oracle_req_release(sr_oracle_req *q)
{
    free(q->tokens);
    sr_oracle_req z = SR_ORACLE_REQ_INIT;
    *q = z;
}
