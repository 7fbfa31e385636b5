#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"

static int grow(void **p, size_t *cap, size_t need, size_t item, sr_err *err)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * item);
    if (!q)
        return sr_err_set(err, SR_E_NOMEM, "client: cannot allocate %zu response entries", n);
    *p = q;
    *cap = n;
    return 0;
}

static const cJSON *the_choice(const cJSON *doc, sr_err *err)
{
    const cJSON *ch = cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "choices") : NULL;
    if (!cJSON_IsArray(ch))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE, "the response has no choices array"), NULL;
    int n = cJSON_GetArraySize(ch);
    const cJSON *c0 = cJSON_GetArrayItem(ch, 0);
    if (n != 1 || !cJSON_IsObject(c0))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "the response has %d choices; exactly one object was expected (n=1)", n),
               NULL;
    return c0;
}

/* Copies token ids from an integer array (spliced, 1-D int32/int64 in [0, 2^31-1]). */
static int tokens_from_array(sr_client_conn *k, const sr_ndarray *a, size_t *n, sr_err *err)
{
    size_t cnt = a->ndim == 1 ? (size_t)a->shape[0] : 0;
    if (a->ndim != 1)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE, "choices[0].token_ids is not 1-D");
    int rc = grow((void **)&k->tokens, &k->tokens_cap, cnt ? cnt : 1, sizeof(int32_t), err);
    for (size_t i = 0; !rc && i < cnt; i++) {
        int64_t v = sr_ndarray_get_i64(a, i);
        if (v < 0 || v > INT32_MAX)
            return sr_err_set_at(err, SR_E_CLIENT_BAD_RESPONSE, (int64_t)i,
                                 "choices[0].token_ids[%zu] = %lld is out of range", i,
                                 (long long)v);
        k->tokens[i] = (int32_t)v;
    }
    *n = cnt;
    return rc;
}

/* Copies token ids from a parsed JSON array of integers. */
static int tokens_from_json(sr_client_conn *k, const cJSON *arr, size_t *n, sr_err *err)
{
    if (!cJSON_IsArray(arr))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].token_ids is missing or not an array");
    size_t cnt = (size_t)cJSON_GetArraySize(arr), i = 0;
    int rc = grow((void **)&k->tokens, &k->tokens_cap, cnt ? cnt : 1, sizeof(int32_t), err);
    const cJSON *v;
    cJSON_ArrayForEach(v, arr)
    {
        if (rc)
            break;
        double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (d < 0 || d > INT32_MAX || d != floor(d))
            return sr_err_set_at(err, SR_E_CLIENT_BAD_RESPONSE, (int64_t)i,
                                 "choices[0].token_ids[%zu] is not a token id", i);
        k->tokens[i++] = (int32_t)d;
    }
    *n = cnt;
    return rc;
}

static int read_finish(sr_client_result *out, sr_client_conn *k, const cJSON *c0, sr_err *err)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
    if (cJSON_IsNull(f)) {
        out->finish_reason = NULL;
        return 0;
    }
    if (!cJSON_IsString(f) || strlen(f->valuestring) >= sizeof k->finish)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].finish_reason is missing or not a short string");
    strcpy(k->finish, f->valuestring);
    out->finish_reason = k->finish;
    return 0;
}

static int read_logprobs(sr_client_result *out, sr_client_conn *k, const cJSON *c0, sr_err *err)
{
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(c0, "logprobs");
    out->has_logprobs = 0;
    if (!lp || cJSON_IsNull(lp))
        return 0;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(lp, "content");
    if (!cJSON_IsArray(content))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].logprobs has no content array");
    size_t cnt = (size_t)cJSON_GetArraySize(content), i = 0;
    if (cnt == 0)
        return 0; /* the reference treats an empty content list as no logprobs */
    if (cnt != out->n_tokens)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].logprobs has %zu entries for %zu tokens", cnt, out->n_tokens);
    int rc = grow((void **)&k->logprobs, &k->logprobs_cap, cnt, sizeof(double), err);
    const cJSON *e;
    cJSON_ArrayForEach(e, content)
    {
        if (rc)
            return rc;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "logprob");
        if (!cJSON_IsNumber(v))
            return sr_err_set_at(err, SR_E_CLIENT_BAD_RESPONSE, (int64_t)i,
                                 "choices[0].logprobs.content[%zu].logprob is not a number", i);
        k->logprobs[i++] = v->valuedouble;
    }
    out->logprobs = k->logprobs;
    out->has_logprobs = 1;
    return rc;
}

static int read_spans(sr_client_result *out, sr_client_conn *k, const cJSON *rows, sr_err *err)
{
    size_t cnt = (size_t)cJSON_GetArraySize(rows), i = 0;
    int rc = grow((void **)&k->spans, &k->spans_cap, cnt ? cnt : 1, sizeof(sr_client_span), err);
    const cJSON *r;
    cJSON_ArrayForEach(r, rows)
    {
        if (rc)
            return rc;
        double v[3];
        int ok = cJSON_IsArray(r) && cJSON_GetArraySize(r) == 3;
        for (int j = 0; ok && j < 3; j++) {
            const cJSON *x = cJSON_GetArrayItem(r, j);
            ok = cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble) &&
                 fabs(x->valuedouble) < 9e15;
            v[j] = ok ? x->valuedouble : 0;
        }
        if (!ok || v[0] > v[1])
            return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                              "choices[0].syncroll.rows[%zu] is not [lo, hi, version]", i);
        k->spans[i++] = (sr_client_span){(int64_t)v[0], (int64_t)v[1], (int64_t)v[2]};
    }
    out->spans = k->spans;
    out->n_spans = cnt;
    return 0;
}

/* The mock engine's extension key; other servers do not send it. */
static int read_syncroll(sr_client_result *out, sr_client_conn *k, const cJSON *c0, sr_err *err)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(c0, "syncroll");
    if (!s)
        return 0;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(s, "engine");
    const cJSON *wv = cJSON_GetObjectItemCaseSensitive(s, "weight_version");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(s, "rows");
    if (!cJSON_IsObject(s) || !cJSON_IsString(id) || !cJSON_IsNumber(wv) ||
        (rows && !cJSON_IsArray(rows)))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].syncroll is not {engine, weight_version, rows}");
    snprintf(out->engine_id, sizeof out->engine_id, "%s", id->valuestring);
    out->weight_version = (int64_t)wv->valuedouble;
    return rows ? read_spans(out, k, rows, err) : 0;
}

static int read_common(sr_client_result *out, sr_client_conn *k, const cJSON *c0, sr_err *err)
{
    int rc = read_finish(out, k, c0, err);
    if (!rc)
        rc = read_logprobs(out, k, c0, err);
    if (!rc)
        rc = read_syncroll(out, k, c0, err);
    return rc;
}

static const sr_splice_entry *entry_for(const sr_splice_result *r, const cJSON *node)
{
    for (size_t i = 0; node && i < r->count; i++)
        if (r->entries[i].node == node)
            return &r->entries[i];
    return NULL;
}

int sr_client_decode_spliced(sr_client_result *out, sr_client_conn *k, const sr_splice_result *r,
                             int want_routes, sr_err *err)
{
    const cJSON *c0 = the_choice(r->doc, err);
    if (!c0)
        return err ? err->code : SR_E_CLIENT_BAD_RESPONSE;
    const cJSON *tnode = cJSON_GetObjectItemCaseSensitive(c0, "token_ids");
    const sr_splice_entry *te = entry_for(r, tnode);
    int rc = te && te->kind == SR_SPLICE_INT_ARRAY
                 ? tokens_from_array(k, &te->array, &out->n_tokens, err)
                 : tokens_from_json(k, tnode, &out->n_tokens, err);
    out->token_ids = k->tokens;
    if (!rc)
        rc = read_common(out, k, c0, err);
    if (rc || !want_routes)
        return rc;
    const sr_splice_entry *re =
        entry_for(r, cJSON_GetObjectItemCaseSensitive(c0, "routed_experts"));
    if (!re || re->kind != SR_SPLICE_ENVELOPE)
        return sr_err_set(err, SR_E_CLIENT_ROUTES_MISSING,
                          "/skyrl/v1/generate must return packed routed_experts (got %s)",
                          re ? "null" : "no routed_experts key");
    out->routes = re->array;
    out->has_routes = 1;
    return 0;
}

int sr_client_decode_native(sr_client_result *out, sr_client_conn *k, const cJSON *doc, sr_err *err)
{
    const cJSON *c0 = the_choice(doc, err);
    if (!c0)
        return err ? err->code : SR_E_CLIENT_BAD_RESPONSE;
    int rc =
        tokens_from_json(k, cJSON_GetObjectItemCaseSensitive(c0, "token_ids"), &out->n_tokens, err);
    out->token_ids = k->tokens;
    return rc ? rc : read_common(out, k, c0, err);
}
