/*
 * The generate request body of every dialect, from its route's request shape (spec/dialect.h):
 * where the token ids, the sampling members, the route start and the routes switch go. For
 * skyrl's /skyrl/v1/generate (and vLLM's native route) this is exactly skyrl.md §1.2:
 * {"sampling_params":{<the caller's members in order>,"routed_experts_prompt_start":s},
 *  "model":"...","token_ids":[...],"return_sample_support":true,"cache_salt":"..."} (the switch
 * only when the later stack's request asks for the sample support).
 */
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"

/* "00" .. "99": two digits per division (token ids have 4-6 digits, and a request's new ids were
 * still 3.5 % of the client's instructions per request; bench/README.md). */
static const char k_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* Writes v in decimal at p and returns its byte count (at most 11). It stores 16 bytes at p, the
 * bytes past the count being scratch: the digits are made from the last one back, two per
 * division, in a local block whose fixed-size copy is two vector stores (a copy of the exact
 * length was a library call per id, a third of the function's instructions). */
static size_t put_int32(char *p, int32_t v)
{
    char digits[32];
    char *end = digits + 16, *q = end;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    while (u >= 100) {
        uint32_t r = u % 100;
        u /= 100;
        q -= 2;
        memcpy(q, k_pairs + 2 * r, 2);
    }
    if (u >= 10) {
        q -= 2;
        memcpy(q, k_pairs + 2 * u, 2);
    } else {
        *--q = (char)('0' + u);
    }
    if (v < 0)
        *--q = '-';
    memcpy(p, q, 16);
    return (size_t)(end - q);
}

/* Appends a member's value as cJSON prints it; integers (cJSON's "%d" case) and the literals
 * without cJSON's allocation and printf, which showed in the per-request profile. */
static int put_value(sr_buf *b, const cJSON *m, sr_err *err)
{
    if (cJSON_IsNumber(m) && m->valuedouble == (double)m->valueint) {
        char num[16];
        size_t n = put_int32(num, (int32_t)m->valueint);
        return sr_buf_append(b, num, n, err);
    }
    if (cJSON_IsTrue(m) || cJSON_IsFalse(m) || cJSON_IsNull(m))
        return sr_buf_puts(b, cJSON_IsTrue(m) ? "true" : cJSON_IsFalse(m) ? "false" : "null", err);
    char *v = cJSON_PrintUnformatted(m);
    if (!v)
        return sr_err_set(err, SR_E_NOMEM, "client: cannot print sampling_params");
    int rc = sr_buf_puts(b, v, err);
    free(v);
    return rc;
}

/* Appends `,"key":` (no comma when *first) and clears *first. */
static int put_key(sr_buf *b, int *first, const char *key, sr_err *err)
{
    int rc = *first ? 0 : sr_buf_puts(b, ",", err);
    *first = 0;
    if (!rc)
        rc = sr_buf_put_json_string(b, key, err);
    return rc ? rc : sr_buf_puts(b, ":", err);
}

/* The caller's sampling members, max_tokens under the wire's name for it; "logprobs" left out
 * where the wire asks for them with a switch (skip_logprobs). */
static int put_members(sr_buf *b, int *first, const cJSON *sp, const char *max_key,
                       int skip_logprobs, sr_err *err)
{
    int rc = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, sp)
    {
        if (skip_logprobs && strcmp(m->string, "logprobs") == 0)
            continue;
        const char *key = max_key && strcmp(m->string, "max_tokens") == 0 ? max_key : m->string;
        if (!rc)
            rc = put_key(b, first, key, err);
        if (!rc)
            rc = put_value(b, m, err);
    }
    return rc;
}

static int put_start(sr_buf *b, int *first, const char *key, int64_t start, sr_err *err)
{
    int rc = put_key(b, first, key, err);
    return rc ? rc : sr_buf_printf(b, err, "%lld", (long long)start);
}

/* Appends ids[0..n) as comma-separated decimals; `comma`: one goes before the first. */
static int put_ids(sr_buf *b, const int32_t *ids, size_t n, int comma, sr_err *err)
{
    int rc = n > (SIZE_MAX - 32) / 12
                 ? sr_err_set(err, SR_E_LIMIT, "client: %zu token ids do not fit a request body", n)
                 : sr_buf_reserve(b, n * 12 + 32, err);
    /* The reserve holds every id (at most 11 bytes and a comma each) and the 16 bytes the last
     * id's store takes, so ids are written in place: snprintf per id was 8 % of the client's CPU
     * per request (bench/README.md). */
    if (rc)
        return rc;
    /* A local cursor: stores through b->data would make the compiler reload b->len per id. */
    char *d = b->data + b->len;
    for (size_t i = 0; i < n; i++) {
        if (i || comma)
            *d++ = ',';
        d += put_int32(d, ids[i]);
    }
    *d = '\0';
    b->len = (size_t)(d - b->data);
    return 0;
}

void sr_ids_text_release(sr_ids_text *t)
{
    sr_buf_release(&t->text);
    free(t->ids);
    memset(t, 0, sizeof *t);
}

/* Brings the cache to r's ids: when they extend the cached ones (the next turn of the same
 * conversation) only the new ids are written, else all of them. On failure it is emptied. */
static int ids_update(sr_ids_text *t, const sr_client_req *r, sr_err *err)
{
    size_t n = r->n_tokens, have = t->n;
    if (!have || n < have || memcmp(r->token_ids, t->ids, have * sizeof(int32_t)) != 0) {
        have = 0;
        t->n = 0;
        sr_buf_reset(&t->text);
    }
    int rc = 0;
    if (n > t->cap) {
        int32_t *p = realloc(t->ids, n * sizeof(int32_t));
        rc = p ? 0 : sr_err_set(err, SR_E_NOMEM, "client: cannot keep %zu token ids", n);
        if (p) {
            t->ids = p;
            t->cap = n;
        }
    }
    if (!rc)
        rc = put_ids(&t->text, r->token_ids + have, n - have, have > 0, err);
    if (rc) {
        t->n = 0;
        sr_buf_reset(&t->text);
        return rc;
    }
    memcpy(t->ids + have, r->token_ids + have, (n - have) * sizeof(int32_t));
    t->n = n;
    return 0;
}

static int put_tokens(sr_buf *b, int *first, const char *key, const sr_client_req *r,
                      sr_ids_text *ids, sr_err *err)
{
    int rc = put_key(b, first, key, err);
    if (!rc)
        rc = sr_buf_puts(b, "[", err);
    if (!rc && ids)
        rc = ids_update(ids, r, err);
    if (!rc)
        rc = ids ? sr_buf_append(b, ids->text.data, ids->text.len, err)
                 : put_ids(b, r->token_ids, r->n_tokens, 0, err);
    return rc ? rc : sr_buf_puts(b, "]", err);
}

int sr_client_build_body(sr_buf *b, const sr_dialect_route *rt, const sr_client_req *r,
                         int64_t start, sr_ids_text *ids, sr_err *err)
{
    const sr_dialect_request *q = &rt->request;
    /* The key the caller's max_tokens goes under (sglang: max_new_tokens). */
    const char *max_key = strcmp(q->max_tokens_key, "max_tokens") ? q->max_tokens_key : NULL;
    int send_start = start >= 0 && q->start_key;
    int first = 1, rc = sr_buf_puts((sr_buf_reset(b), b), "{", err);
    if (!rc && q->params) {
        int inner = 1;
        rc = put_key(b, &first, q->params, err);
        if (!rc)
            rc = sr_buf_puts(b, "{", err);
        if (!rc && r->sampling_params)
            rc = put_members(b, &inner, r->sampling_params, max_key, q->logprobs_switch != NULL,
                             err);
        if (!rc && send_start && q->start_in_params)
            rc = put_start(b, &inner, q->start_key, start, err);
        if (!rc)
            rc = sr_buf_puts(b, "}", err);
    } else if (!rc && r->sampling_params) {
        rc = put_members(b, &first, r->sampling_params, max_key, q->logprobs_switch != NULL, err);
    }
    if (!rc && send_start && (!q->start_in_params || !q->params))
        rc = put_start(b, &first, q->start_key, start, err);
    if (!rc && q->routes_switch && r->return_routes) {
        rc = put_key(b, &first, q->routes_switch, err);
        if (!rc)
            rc = sr_buf_puts(b, "true", err);
    }
    if (!rc && q->tokens_switch) {
        rc = put_key(b, &first, q->tokens_switch, err);
        if (!rc)
            rc = sr_buf_puts(b, "true", err);
    }
    const cJSON *lp = r->sampling_params && q->logprobs_switch
                          ? cJSON_GetObjectItemCaseSensitive(r->sampling_params, "logprobs")
                          : NULL;
    if (!rc && lp && !cJSON_IsNull(lp)) {
        rc = put_key(b, &first, q->logprobs_switch, err);
        if (!rc)
            rc = sr_buf_puts(b, "true", err);
    }
    /* SGLang's GenerateReqInput has no model member. */
    if (!rc && rt->api != SR_API_SGLANG) {
        rc = put_key(b, &first, "model", err);
        if (!rc)
            rc = sr_buf_put_json_string(b, r->model && r->model[0] ? r->model : "default", err);
    }
    if (!rc)
        rc = put_tokens(b, &first, q->tokens_key, r, ids, err);
    /* The later stack's capture switch, right after token_ids as the reference's payload has it
     * (SkyRL #2082, remote_inference_client.py); generate.c allows it on skyrl's wire only. */
    if (!rc && r->return_support) {
        rc = put_key(b, &first, "return_sample_support", err);
        if (!rc)
            rc = sr_buf_puts(b, "true", err);
    }
    if (!rc && r->cache_salt && q->strict_params) {
        rc = put_key(b, &first, "cache_salt", err);
        if (!rc)
            rc = sr_buf_put_json_string(b, r->cache_salt, err);
    }
    return rc ? rc : sr_buf_puts(b, "}", err);
}
