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

/* "00" .. "99": the one or two leading digits of an integer of nine or ten digits. */
static const char k_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* The eight decimal digits of u < 10^8, most significant first, one per byte (0-9, not yet
 * ASCII): u is split into two 4-digit halves, each half into two 2-digit lanes and each lane into
 * two digits by multiplying by a reciprocal, all lanes in one 64-bit word (10486 / 2^20 is
 * 1/100 exactly enough for lanes below 10^4, 103 / 2^10 is 1/10 for lanes below 100, and no
 * lane's product reaches the next lane). No division and no branch. */
static inline __attribute__((always_inline)) uint64_t eight_digits(uint32_t u)
{
    uint64_t x = (uint64_t)(u / 10000) | ((uint64_t)(u % 10000) << 32);
    uint64_t y = ((x * 10486) >> 20) & 0x0000007F0000007Full;
    uint64_t w = y | ((x - y * 100) << 16);
    uint64_t t = ((w * 103) >> 10) & 0x000F000F000F000Full;
    return t | ((w - t * 10) << 8);
}

/* Writes v in decimal at p and returns its byte count (at most 11). It stores up to 11 bytes at
 * p, the bytes past the count being scratch. Below 10^8 (every token id of a real vocabulary)
 * the digits come from eight_digits, the leading zeros are counted from its lowest non-zero byte
 * and shifted out, and one 8-byte store writes them: a loop of two digits per division was ~50
 * instructions per id and mispredicted on the id's width (bench/README.md, ninth round). */
static inline __attribute__((always_inline)) size_t put_int32(char *p, int32_t v)
{
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    size_t n = v < 0;
    *p = '-'; /* kept only when v < 0: the digits start at p + n */
    if (u >= 100000000u) {
        uint32_t top = u / 100000000u; /* 1 .. 21 */
        u -= top * 100000000u;
        if (top >= 10) {
            memcpy(p + n, k_pairs + 2 * top, 2);
            n += 2;
        } else {
            p[n++] = (char)('0' + top);
        }
        uint64_t all = eight_digits(u) + 0x3030303030303030ull;
        memcpy(p + n, &all, 8);
        return n + 8;
    }
    uint64_t raw = eight_digits(u);
    /* Leading zero digits are the low zero bytes; the sentinel keeps the last digit (u == 0). */
    unsigned lz = (unsigned)__builtin_ctzll(raw | (1ull << 56)) >> 3;
    uint64_t text = (raw + 0x3030303030303030ull) >> (8 * lz);
    memcpy(p + n, &text, 8);
    return n + 8 - lz;
}

/* Appends the literal s (a string constant: its length is known here; "" s refuses a pointer). */
#define PUT_LIT(b, s, err) sr_buf_append((b), "" s, sizeof("" s) - 1, (err))

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

/* Appends `,"key":` (no comma when *first) and clears *first. A key with no byte to escape (every
 * key of a dialect's request shape) goes in one reserve and copy; the general path took three
 * appends and a run-by-run escape (~400 instructions a key, bench/README.md, ninth round). */
static int put_key(sr_buf *b, int *first, const char *key, sr_err *err)
{
    size_t n = 0;
    int plain = 1;
    for (; key[n]; n++)
        plain &= key[n] != '"' && key[n] != '\\' && (unsigned char)key[n] >= 0x20;
    int comma = !*first;
    *first = 0;
    if (plain) {
        int rc = sr_buf_reserve(b, n + 4, err);
        if (rc)
            return rc;
        char *d = b->data + b->len;
        *d = ',';
        d += comma;
        *d++ = '"';
        memcpy(d, key, n);
        d += n;
        memcpy(d, "\":", 3); /* with the terminating NUL */
        b->len = (size_t)(d + 2 - b->data);
        return 0;
    }
    int rc = comma ? PUT_LIT(b, ",", err) : 0;
    if (!rc)
        rc = sr_buf_put_json_string(b, key, err);
    return rc ? rc : PUT_LIT(b, ":", err);
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
    return rc ? rc : sr_buf_put_i64(b, (long long)start, err);
}

/* Appends ids[0..n) as comma-separated decimals; `comma`: one goes before the first. */
static int put_ids(sr_buf *b, const int32_t *ids, size_t n, int comma, sr_err *err)
{
    int rc = n > (SIZE_MAX - 32) / 12
                 ? sr_err_set(err, SR_E_LIMIT, "client: %zu token ids do not fit a request body", n)
                 : sr_buf_reserve(b, n * 12 + 32, err);
    /* The reserve holds every id (at most 11 bytes and a comma each) and the 11 bytes the last
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
        rc = PUT_LIT(b, "[", err);
    if (!rc && ids)
        rc = ids_update(ids, r, err);
    if (!rc)
        rc = ids ? sr_buf_append(b, ids->text.data, ids->text.len, err)
                 : put_ids(b, r->token_ids, r->n_tokens, 0, err);
    return rc ? rc : PUT_LIT(b, "]", err);
}

int sr_client_build_body(sr_buf *b, const sr_dialect_route *rt, const sr_client_req *r,
                         int64_t start, sr_ids_text *ids, sr_err *err)
{
    const sr_dialect_request *q = &rt->request;
    /* The key the caller's max_tokens goes under (sglang: max_new_tokens). */
    const char *max_key = strcmp(q->max_tokens_key, "max_tokens") ? q->max_tokens_key : NULL;
    int send_start = start >= 0 && q->start_key;
    int first = 1, rc = PUT_LIT((sr_buf_reset(b), b), "{", err);
    if (!rc && q->params) {
        int inner = 1;
        rc = put_key(b, &first, q->params, err);
        if (!rc)
            rc = PUT_LIT(b, "{", err);
        if (!rc && r->sampling_params)
            rc = put_members(b, &inner, r->sampling_params, max_key, q->logprobs_switch != NULL,
                             err);
        if (!rc && send_start && q->start_in_params)
            rc = put_start(b, &inner, q->start_key, start, err);
        if (!rc)
            rc = PUT_LIT(b, "}", err);
    } else if (!rc && r->sampling_params) {
        rc = put_members(b, &first, r->sampling_params, max_key, q->logprobs_switch != NULL, err);
    }
    if (!rc && send_start && (!q->start_in_params || !q->params))
        rc = put_start(b, &first, q->start_key, start, err);
    if (!rc && q->routes_switch && r->return_routes) {
        rc = put_key(b, &first, q->routes_switch, err);
        if (!rc)
            rc = PUT_LIT(b, "true", err);
    }
    if (!rc && q->tokens_switch) {
        rc = put_key(b, &first, q->tokens_switch, err);
        if (!rc)
            rc = PUT_LIT(b, "true", err);
    }
    const cJSON *lp = r->sampling_params && q->logprobs_switch
                          ? cJSON_GetObjectItemCaseSensitive(r->sampling_params, "logprobs")
                          : NULL;
    if (!rc && lp && !cJSON_IsNull(lp)) {
        rc = put_key(b, &first, q->logprobs_switch, err);
        if (!rc)
            rc = PUT_LIT(b, "true", err);
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
            rc = PUT_LIT(b, "true", err);
    }
    if (!rc && r->cache_salt && q->strict_params) {
        rc = put_key(b, &first, "cache_salt", err);
        if (!rc)
            rc = sr_buf_put_json_string(b, r->cache_salt, err);
    }
    return rc ? rc : PUT_LIT(b, "}", err);
}
