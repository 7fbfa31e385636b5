#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"

static const cJSON *the_choice(const cJSON *doc, sr_err *err)
{
    const cJSON *ch = cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "choices") : NULL;
    if (!cJSON_IsArray(ch))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE, "the response has no choices array"), NULL;
    const cJSON *c0 = ch->child; /* one choice: a first element and no second */
    if (!c0 || c0->next || !cJSON_IsObject(c0))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "the response has %d choices; exactly one object was expected (n=1)",
                          cJSON_GetArraySize(ch)),
               NULL;
    return c0;
}

/* Copies token ids from an integer array (spliced, 1-D int32/int64 in [0, 2^31-1]). */
static int tokens_from_array(sr_client_conn *k, const sr_ndarray *a, size_t *n, sr_err *err)
{
    size_t cnt = a->ndim == 1 ? (size_t)a->shape[0] : 0;
    if (a->ndim != 1)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE, "choices[0].token_ids is not 1-D");
    int rc =
        sr_client_grow((void **)&k->tokens, &k->tokens_cap, cnt ? cnt : 1, sizeof(int32_t), err);
    size_t i = 0;
    if (!rc && a->dtype == SR_DTYPE_INT32) {
        /* The splice's own dtype for token ids: copied while none is negative, the rest (from
         * the first negative one, which is refused below) by the general loop. */
        const unsigned char *d = a->data;
        for (int32_t v; i < cnt; i++) {
            memcpy(&v, d + i * 4, 4);
            if (v < 0)
                break;
            k->tokens[i] = v;
        }
    }
    for (; !rc && i < cnt; i++) {
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
    int rc =
        sr_client_grow((void **)&k->tokens, &k->tokens_cap, cnt ? cnt : 1, sizeof(int32_t), err);
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

/* Keeps the finish reason string `f` in the conn; `what` is the message when it is not one. */
static int keep_finish(sr_client_result *out, sr_client_conn *k, const cJSON *f, const char *what,
                       sr_err *err)
{
    if (!cJSON_IsString(f) || strlen(f->valuestring) >= sizeof k->finish)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE, "%s", what);
    strcpy(k->finish, f->valuestring);
    out->finish_reason = k->finish;
    return 0;
}

/* The choice's finish_reason member f (NULL: none). */
static int read_finish(sr_client_result *out, sr_client_conn *k, const cJSON *f, sr_err *err)
{
    if (cJSON_IsNull(f)) {
        out->finish_reason = NULL;
        return 0;
    }
    return keep_finish(out, k, f, "choices[0].finish_reason is missing or not a short string", err);
}

/*
 * The choice's logprobs member lp (NULL: none), in one pass over its content in steady state:
 * the values are taken while the entries are counted, and the errors come in the order of
 * separate passes (an empty list, the count against the tokens, the allocation, the first entry
 * that is not a number).
 */
static int read_logprobs(sr_client_result *out, sr_client_conn *k, const cJSON *lp, sr_err *err)
{
    out->has_logprobs = 0;
    if (!lp || cJSON_IsNull(lp))
        return 0;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(lp, "content");
    if (!cJSON_IsArray(content))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].logprobs has no content array");
    size_t want = out->n_tokens, cnt = 0, bad = SIZE_MAX;
    const cJSON *e = content->child;
    if (want > k->logprobs_cap) {
        /* More tokens than ever before: counted first, so that a count that does not match is
         * named before an allocation that fails. */
        for (; e; e = e->next)
            cnt++;
        int rc = cnt == want ? sr_client_grow((void **)&k->logprobs, &k->logprobs_cap, want,
                                              sizeof(double), err)
                             : 0;
        if (rc)
            return rc;
        e = content->child;
        cnt = 0;
    }
    /* The engines write "logprob" first, and the parser gives the entries one copy of a key they
     * repeat: a first member whose name is at the address already found to be "logprob" is it,
     * with no comparison. Any other entry is searched, which finds the same (first) member. */
    size_t room = want <= k->logprobs_cap ? want : 0;
    const char *key = NULL;
    for (; e && cnt < room; e = e->next, cnt++) {
        const cJSON *v = e->child;
        if ((e->type & 0xFF) != cJSON_Object || !v || !v->string ||
            (v->string != key && strcmp(v->string, "logprob") != 0))
            v = cJSON_GetObjectItemCaseSensitive(e, "logprob");
        else
            key = v->string;
        if (!v || (v->type & 0xFF) != cJSON_Number) {
            bad = cnt;
            break;
        }
        k->logprobs[cnt] = v->valuedouble;
    }
    for (; e; e = e->next) /* the rest, only counted: past the tokens, or past a bad entry */
        cnt++;
    if (cnt == 0)
        return 0; /* the reference treats an empty content list as no logprobs */
    if (cnt != want)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].logprobs has %zu entries for %zu tokens", cnt, want);
    if (bad != SIZE_MAX)
        return sr_err_set_at(err, SR_E_CLIENT_BAD_RESPONSE, (int64_t)bad,
                             "choices[0].logprobs.content[%zu].logprob is not a number", bad);
    out->logprobs = k->logprobs;
    out->has_logprobs = 1;
    return 0;
}

/* The OpenAI completions form (CompletionLogProbs): choices[0].logprobs.token_logprobs[i]. */
static int read_logprobs_completions(sr_client_result *out, sr_client_conn *k, const cJSON *lp,
                                     sr_err *err)
{
    out->has_logprobs = 0;
    if (!lp || cJSON_IsNull(lp))
        return 0;
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(lp, "token_logprobs");
    if (!cJSON_IsArray(tl))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].logprobs has no token_logprobs array");
    size_t cnt = (size_t)cJSON_GetArraySize(tl), i = 0;
    if (cnt != out->n_tokens)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].logprobs.token_logprobs has %zu entries for %zu tokens", cnt,
                          out->n_tokens);
    int rc =
        sr_client_grow((void **)&k->logprobs, &k->logprobs_cap, cnt ? cnt : 1, sizeof(double), err);
    const cJSON *v;
    cJSON_ArrayForEach(v, tl)
    {
        if (rc)
            return rc;
        if (!cJSON_IsNumber(v))
            return sr_err_set_at(err, SR_E_CLIENT_BAD_RESPONSE, (int64_t)i,
                                 "choices[0].logprobs.token_logprobs[%zu] is not a number", i);
        k->logprobs[i++] = v->valuedouble;
    }
    out->logprobs = k->logprobs;
    out->has_logprobs = cnt > 0;
    return rc;
}

static int read_spans(sr_client_result *out, sr_client_conn *k, const cJSON *rows, sr_err *err)
{
    size_t cnt = (size_t)cJSON_GetArraySize(rows), i = 0;
    int rc = sr_client_grow((void **)&k->spans, &k->spans_cap, cnt ? cnt : 1,
                            sizeof(sr_client_span), err);
    const cJSON *r;
    cJSON_ArrayForEach(r, rows)
    {
        if (rc)
            return rc;
        double v[3];
        /* The row's three elements by their links, and no fourth. */
        const cJSON *x = cJSON_IsArray(r) ? r->child : NULL;
        int ok = 1;
        for (int j = 0; ok && j < 3; j++) {
            ok = cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble) &&
                 fabs(x->valuedouble) < 9e15;
            v[j] = ok ? x->valuedouble : 0;
            x = ok ? x->next : NULL;
        }
        ok = ok && !x;
        if (!ok || v[0] > v[1])
            return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                              "choices[0].syncroll.rows[%zu] is not [lo, hi, version]", i);
        k->spans[i++] = (sr_client_span){(int64_t)v[0], (int64_t)v[1], (int64_t)v[2]};
    }
    out->spans = k->spans;
    out->n_spans = cnt;
    return 0;
}

/*
 * The members of o named keys[0, n) into got[0, n), in one pass over its members: each the first
 * member of its name before any member without one, NULL if none, as
 * cJSON_GetObjectItemCaseSensitive finds it. A name's first byte is compared before the rest, so
 * most pairs of a member and a key cost one comparison, not a call.
 */
static void find_members(const cJSON *o, const char *const *keys, const cJSON **got, size_t n)
{
    size_t left = n;
    for (size_t i = 0; i < n; i++)
        got[i] = NULL;
    for (const cJSON *m = o ? o->child : NULL; m && m->string && left; m = m->next)
        for (size_t i = 0; i < n; i++)
            if (!got[i] && m->string[0] == keys[i][0] && strcmp(m->string, keys[i]) == 0) {
                got[i] = m;
                left--;
                break;
            }
}

/* The mock engine's extension key, the choice's syncroll member s; other servers do not send
 * it. */
static int read_syncroll(sr_client_result *out, sr_client_conn *k, const cJSON *s, sr_err *err)
{
    static const char *const keys[3] = {"engine", "weight_version", "rows"};
    const cJSON *got[3];
    if (!s)
        return 0;
    find_members(s, keys, got, 3);
    const cJSON *id = got[0], *wv = got[1], *rows = got[2];
    if (!cJSON_IsObject(s) || !cJSON_IsString(id) || !cJSON_IsNumber(wv) ||
        (rows && !cJSON_IsArray(rows)))
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "choices[0].syncroll is not {engine, weight_version, rows}");
    /* As snprintf's "%s" into the array: cut to fit, always terminated. */
    size_t n = strnlen(id->valuestring, sizeof out->engine_id - 1);
    memcpy(out->engine_id, id->valuestring, n);
    out->engine_id[n] = '\0';
    out->weight_version = (int64_t)wv->valuedouble;
    return rows ? read_spans(out, k, rows, err) : 0;
}

/* The choice's members the decoders read, found in one pass (find_members). */
enum { K_TOKENS, K_FINISH, K_LOGPROBS, K_SYNCROLL, K_ROUTES, K_COUNT };
static const char *const CHOICE_KEYS[K_COUNT] = {"token_ids", "finish_reason", "logprobs",
                                                 "syncroll", "routed_experts"};

static int read_common(sr_client_result *out, sr_client_conn *k, const cJSON *const *m, sr_err *err)
{
    int rc = read_finish(out, k, m[K_FINISH], err);
    if (!rc)
        rc = read_logprobs(out, k, m[K_LOGPROBS], err);
    if (!rc)
        rc = read_syncroll(out, k, m[K_SYNCROLL], err);
    return rc;
}

int sr_client_decode_spliced(sr_client_result *out, sr_client_conn *k, const sr_splice_result *r,
                             int want_routes, int want_support, sr_err *err)
{
    const cJSON *c0 = the_choice(r->doc, err);
    if (!c0)
        return err ? err->code : SR_E_CLIENT_BAD_RESPONSE;
    const cJSON *m[K_COUNT];
    find_members(c0, CHOICE_KEYS, m, K_COUNT);
    const cJSON *tnode = m[K_TOKENS];
    const sr_splice_entry *te = sr_client_entry_for(r, tnode);
    int rc = te && te->kind == SR_SPLICE_INT_ARRAY
                 ? tokens_from_array(k, &te->array, &out->n_tokens, err)
                 : tokens_from_json(k, tnode, &out->n_tokens, err);
    out->token_ids = k->tokens;
    if (!rc)
        rc = read_common(out, k, m, err);
    if (!rc && want_support)
        rc = sr_client_read_support(out, r, c0, err);
    if (rc || !want_routes)
        return rc;
    const sr_splice_entry *re = sr_client_entry_for(r, m[K_ROUTES]);
    if (!re || re->kind != SR_SPLICE_ENVELOPE)
        return sr_err_set(err, SR_E_CLIENT_ROUTES_MISSING,
                          "/skyrl/v1/generate must return packed routed_experts (got %s)",
                          re ? "null" : "no routed_experts key");
    out->routes = re->array;
    out->routes_bound = re->bound;
    out->has_routes = 1;
    return 0;
}

int sr_client_decode_native(sr_client_result *out, sr_client_conn *k, const cJSON *doc, sr_err *err)
{
    const cJSON *c0 = the_choice(doc, err);
    if (!c0)
        return err ? err->code : SR_E_CLIENT_BAD_RESPONSE;
    const cJSON *m[K_COUNT];
    find_members(c0, CHOICE_KEYS, m, K_COUNT);
    int rc = tokens_from_json(k, m[K_TOKENS], &out->n_tokens, err);
    out->token_ids = k->tokens;
    return rc ? rc : read_common(out, k, m, err);
}

/* ---- the other dialects' frames (spec/dialect.h) ---- */

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* SGLang: meta_info.finish_reason is {"type": "stop", ...} or null. */
static int read_finish_object(sr_client_result *out, sr_client_conn *k, const cJSON *meta,
                              sr_err *err)
{
    const cJSON *f = get(meta, "finish_reason");
    if (!f || cJSON_IsNull(f)) {
        out->finish_reason = NULL;
        return 0;
    }
    return keep_finish(out, k, get(f, "type"),
                       "meta_info.finish_reason is not null or {\"type\": <short string>}", err);
}

/* SGLang: meta_info.output_token_logprobs [[logprob, token_id, text], ..], one per token. */
static int read_logprobs_sglang(sr_client_result *out, sr_client_conn *k, const cJSON *meta,
                                sr_err *err)
{
    const cJSON *lp = get(meta, "output_token_logprobs");
    out->has_logprobs = 0;
    if (!lp || cJSON_IsNull(lp))
        return 0;
    size_t cnt = cJSON_IsArray(lp) ? (size_t)cJSON_GetArraySize(lp) : 0, i = 0;
    if (!cJSON_IsArray(lp) || cnt != out->n_tokens)
        return sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE,
                          "meta_info.output_token_logprobs is not a list of %zu entries",
                          out->n_tokens);
    int rc =
        sr_client_grow((void **)&k->logprobs, &k->logprobs_cap, cnt ? cnt : 1, sizeof(double), err);
    const cJSON *e;
    cJSON_ArrayForEach(e, lp)
    {
        const cJSON *v = cJSON_IsArray(e) ? e->child : NULL;
        if (rc || !cJSON_IsNumber(v))
            return rc ? rc
                      : sr_err_set_at(err, SR_E_CLIENT_BAD_RESPONSE, (int64_t)i,
                                      "meta_info.output_token_logprobs[%zu] is not [logprob, ..]",
                                      i);
        k->logprobs[i++] = v->valuedouble;
    }
    out->logprobs = k->logprobs;
    out->has_logprobs = cnt > 0;
    return 0;
}

int sr_client_decode_dialect(sr_client_result *out, sr_client_conn *k, const sr_splice_result *r,
                             const sr_client_req *req, sr_err *err)
{
    const sr_client_opts *o = &k->c->opts;
    const sr_dialect_desc *d = sr_dialect_get(o->dialect);
    const sr_dialect_route *rt = &d->routes[o->dialect_route];
    int sgl = rt->api == SR_API_SGLANG;
    const cJSON *c0 = sgl ? r->doc : the_choice(r->doc, err);
    if (!c0 || !cJSON_IsObject(c0))
        return c0 ? sr_err_set(err, SR_E_CLIENT_BAD_RESPONSE, "the response is not an object")
                  : (err ? err->code : SR_E_CLIENT_BAD_RESPONSE);
    const char *tkey = sgl ? "output_ids" : "token_ids";
    const cJSON *tnode = cJSON_GetObjectItemCaseSensitive(c0, tkey);
    const sr_splice_entry *te = sr_client_entry_for(r, tnode);
    int rc = te && te->kind == SR_SPLICE_INT_ARRAY
                 ? tokens_from_array(k, &te->array, &out->n_tokens, err)
                 : tokens_from_json(k, tnode, &out->n_tokens, err);
    out->token_ids = k->tokens;
    if (!rc)
        rc = sgl ? read_finish_object(out, k, get(c0, "meta_info"), err)
                 : read_finish(out, k, get(c0, "finish_reason"), err);
    if (!rc && sgl)
        rc = read_logprobs_sglang(out, k, get(c0, "meta_info"), err);
    else if (!rc)
        rc = rt->api == SR_API_COMPLETIONS
                 ? read_logprobs_completions(out, k, get(c0, "logprobs"), err)
                 : read_logprobs(out, k, get(c0, "logprobs"), err);
    if (!rc)
        rc = read_syncroll(out, k, get(c0, "syncroll"), err);
    if (rc || !req->return_routes)
        return rc;
    return sr_client_dialect_routes(out, k, r, c0, req, err);
}
