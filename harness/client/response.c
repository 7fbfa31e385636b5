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
    int rc = grow((void **)&k->tokens, &k->tokens_cap, cnt ? cnt : 1, sizeof(int32_t), err);
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
        int rc = cnt == want
                     ? grow((void **)&k->logprobs, &k->logprobs_cap, want, sizeof(double), err)
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
    int rc = grow((void **)&k->logprobs, &k->logprobs_cap, cnt ? cnt : 1, sizeof(double), err);
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
    int rc = grow((void **)&k->spans, &k->spans_cap, cnt ? cnt : 1, sizeof(sr_client_span), err);
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

static const sr_splice_entry *entry_for(const sr_splice_result *r, const cJSON *node)
{
    for (size_t i = 0; node && i < r->count; i++)
        if (r->entries[i].node == node)
            return &r->entries[i];
    return NULL;
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
    const sr_splice_entry *te = entry_for(r, tnode);
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
    const sr_splice_entry *re = entry_for(r, m[K_ROUTES]);
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
    int rc = grow((void **)&k->logprobs, &k->logprobs_cap, cnt ? cnt : 1, sizeof(double), err);
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

/* Where a wire's routes are, from its frame: the choice, the choice's message, SGLang's
 * meta_info, or Dynamo's nvext.engine_data (one row per encoding, as the engine writes them). */
static const cJSON *routes_node(const sr_dialect_desc *d, const sr_dialect_route *rt,
                                const cJSON *doc, const cJSON *c0, const char *key)
{
    if (rt->routes_ext)
        return get(get(doc, rt->routes_ext), key);
    switch (d->encoding) {
    case SR_ENC_FLAT_B64:
        return get(get(doc, "meta_info"), key);
    case SR_ENC_OBJECT:
        return get(get(get(doc, "nvext"), "engine_data"), key);
    case SR_ENC_NRLRE:
        return get(get(c0, "message"), key);
    default:
        return get(c0, key);
    }
}

/* Room for n bytes of re-assembled routes in the conn. */
static int rows_room(sr_client_conn *k, size_t n, sr_err *err)
{
    return grow((void **)&k->rows, &k->rows_cap, n ? n : 1, 1, err);
}

/* Checks a [R, L, K] route array against the model's layers and top_k (when known). */
static int check_cell(const sr_client_opts *o, const sr_ndarray *a, const char *what, sr_err *err)
{
    if (a->ndim != 3)
        return sr_err_set(err, SR_E_WIRE_SHAPE, "%s has %d dimensions, not [rows, layers, top_k]",
                          what, a->ndim);
    if (a->shape[0] && ((o->route_layers && a->shape[1] != o->route_layers) ||
                        (o->route_topk && a->shape[2] != o->route_topk)))
        return sr_err_set(err, SR_E_WIRE_SHAPE,
                          "%s is [%lld, %lld, %lld]; the model has %lld layers and top_k %lld",
                          what, (long long)a->shape[0], (long long)a->shape[1],
                          (long long)a->shape[2], (long long)o->route_layers,
                          (long long)o->route_topk);
    return 0;
}

/* vLLM 0.21: prompt_routed_experts [P, L, K] then the choice's [G, L, K] as one int32 array of
 * P + G rows (the last, the pass on the last sampled token, is dropped by the caller). */
static int join_split(sr_ndarray *out, sr_client_conn *k, const sr_ndarray *p, const sr_ndarray *g,
                      const sr_client_opts *o, sr_err *err)
{
    int rc = check_cell(o, p, "prompt_routed_experts", err);
    if (!rc)
        rc = check_cell(o, g, "choices[0].routed_experts", err);
    if (rc)
        return rc;
    const sr_ndarray *shape = g->shape[0] ? g : p;
    if (p->shape[0] && g->shape[0] && (p->shape[1] != g->shape[1] || p->shape[2] != g->shape[2]))
        return sr_err_set(err, SR_E_WIRE_SHAPE,
                          "prompt_routed_experts rows are [%lld, %lld], the choice's [%lld, %lld]",
                          (long long)p->shape[1], (long long)p->shape[2], (long long)g->shape[1],
                          (long long)g->shape[2]);
    size_t cell = (size_t)(shape->shape[1] * shape->shape[2]);
    size_t n = (size_t)(p->shape[0] + g->shape[0]) * cell;
    if ((rc = rows_room(k, n * 4, err)))
        return rc;
    int32_t *dst = (int32_t *)k->rows;
    for (size_t i = 0; i < (size_t)p->shape[0] * cell; i++)
        *dst++ = (int32_t)sr_ndarray_get_i64(p, i);
    for (size_t i = 0; i < (size_t)g->shape[0] * cell; i++)
        *dst++ = (int32_t)sr_ndarray_get_i64(g, i);
    *out = *shape;
    out->dtype = SR_DTYPE_INT32;
    out->shape[0] = p->shape[0] + g->shape[0];
    out->data = k->rows;
    out->nbytes = n * 4;
    out->owned = 0;
    return 0;
}

/* The wire's route array as it came, [R, L, K], and the oracle row its first row is. */
static int wire_routes(sr_ndarray *a, int64_t *first_row, sr_client_result *out, sr_client_conn *k,
                       const sr_splice_result *r, const cJSON *c0, const sr_dialect_desc *d,
                       sr_err *err)
{
    const sr_client_opts *o = &k->c->opts;
    const sr_dialect_route *rt = &d->routes[o->dialect_route];
    const sr_splice_entry *e = entry_for(r, routes_node(d, rt, r->doc, c0, "routed_experts"));
    if (!e || e->kind == SR_SPLICE_NULL)
        return sr_err_set(err, SR_E_CLIENT_ROUTES_MISSING, "%s must return routes at %s%s (got %s)",
                          d->name, rt->routes_ext ? rt->routes_ext : d->routes_at,
                          rt->routes_ext ? ".routed_experts" : "",
                          e ? "null" : "no routed_experts key");
    *a = e->array;
    /* A wire with a start begins at the start the request carried; one without, at row 0. */
    *first_row = d->routes[o->dialect_route].request.start_key && out->prompt_start_sent >= 0
                     ? out->prompt_start_sent
                     : 0;
    if (d->rows == SR_ROWS_SPLIT) {
        const sr_splice_entry *pe = entry_for(r, get(r->doc, "prompt_routed_experts"));
        if (!pe || pe->kind == SR_SPLICE_NULL)
            return sr_err_set(err, SR_E_CLIENT_ROUTES_MISSING,
                              "vllm-json must return prompt_routed_experts beside the choice's "
                              "routed_experts");
        return join_split(a, k, &pe->array, &e->array, o, err);
    }
    if (o->quirks.npy_assume_uint8 && d->encoding == SR_ENC_NPY && a->dtype != SR_DTYPE_UINT8) {
        /* The defect: np.frombuffer(raw[header:], np.uint8).reshape(-1, L, K). */
        a->shape[0] *= (int64_t)sr_dtype_size(a->dtype);
        a->dtype = SR_DTYPE_UINT8;
    }
    if (o->quirks.sglang_rows_from_zero && d->encoding == SR_ENC_FLAT_B64)
        *first_row = 0; /* the defect: the rows taken as [0, ...), not [start, ...) */
    if (d->encoding == SR_ENC_FLAT_B64) {
        /* SGLang: flat int32, the client reshapes (-1, layers, top_k). */
        int64_t cell = o->route_layers * o->route_topk;
        if (!cell || a->shape[0] % cell)
            return sr_err_set(err, SR_E_WIRE_SHAPE,
                              "%s%s holds %lld values, not rows of %lld layers x top_k %lld",
                              rt->routes_ext ? rt->routes_ext : d->routes_at,
                              rt->routes_ext ? ".routed_experts" : "", (long long)a->shape[0],
                              (long long)o->route_layers, (long long)o->route_topk);
        a->ndim = 3;
        a->shape[1] = o->route_layers;
        a->shape[2] = o->route_topk;
        a->shape[0] /= cell;
    }
    if (d->encoding == SR_ENC_OBJECT) {
        /* Dynamo names the first row it kept: it must be the start the request asked for. */
        const cJSON *st = get(e->sidecar, "start");
        if (!cJSON_IsNumber(st) || st->valuedouble != (double)*first_row)
            return sr_err_set(err, SR_E_WIRE_SHAPE,
                              "nvext.engine_data.routed_experts.start is %s; the request's start "
                              "was %lld",
                              cJSON_IsNumber(st) ? "another row" : "missing",
                              (long long)*first_row);
    }
    return check_cell(o, a, d->routes_at, err);
}

/*
 * vllm#57025's omission: the rows end at P + G - 1, so they begin at P + G - 1 - rows. The
 * engine starts at max(start sent, num_cached_tokens) with num_cached_tokens <= P - 1, and the
 * caller can fill only the rows it holds (up to `want`) from its earlier turns.
 */
static int omitted_first(int64_t *first, const sr_client_result *out, const sr_client_req *req,
                         int64_t rows, int64_t want, sr_err *err)
{
    int64_t P = (int64_t)req->n_tokens, G = (int64_t)out->n_tokens;
    int64_t f = P + G - 1 - rows, sent = out->prompt_start_sent > 0 ? out->prompt_start_sent : 0;
    const char *why = f < sent    ? "before the start the request sent"
                      : f > P - 1 ? "past the last prompt token, which is always recomputed"
                      : f > want  ? "past the rows the caller holds from its earlier turns (a "
                                    "preempted request re-admitted, or an earlier attempt of "
                                    "this turn the engine cached and the caller never received)"
                                  : NULL;
    if (why)
        return sr_err_set(err, SR_E_CLIENT_OMITTED_START,
                          "with prefix omission the %lld route rows of a %lld-token prompt and "
                          "%lld generated tokens begin at row %lld, %s (start sent %lld, rows "
                          "held %lld): rows [%lld, %lld) can come from nowhere",
                          (long long)rows, (long long)P, (long long)G, (long long)f, why,
                          (long long)sent, (long long)want, (long long)(want < f ? want : f),
                          (long long)(want < f ? f : want));
    *first = f;
    return 0;
}

/* Maps the wire's rows to the ones skyrl's wire carries: [want, P + G - 1) of the oracle. */
static int to_oracle_rows(sr_client_result *out, const sr_client_req *req, sr_ndarray *a,
                          int64_t first_row, const sr_dialect_desc *d, int no_start,
                          int quirk_from_zero, int omit, sr_err *err)
{
    int rc;
    int64_t rows = a->shape[0];
    /* NeMo-RL appends one filler row, vLLM 0.21 the pass on the last sampled token. */
    if ((d->rows == SR_ROWS_FILLER || d->rows == SR_ROWS_SPLIT) && rows > 0)
        rows--;
    int64_t want = req->prompt_start >= 0 && !no_start ? req->prompt_start : 0;
    if (omit && (rc = omitted_first(&first_row, out, req, rows, want, err)))
        return rc;
    /* The defect slices its rows as numpy does: past the end is empty, not an error. */
    if (quirk_from_zero && want - first_row > rows)
        want = first_row + rows;
    if (want < first_row || want - first_row > rows)
        return sr_err_set(err, SR_E_WIRE_SHAPE,
                          "%s routes begin at row %lld with %lld rows; row %lld was asked for",
                          d->name, (long long)first_row, (long long)rows, (long long)want);
    size_t cell = (size_t)(a->shape[1] * a->shape[2]) * sr_dtype_size(a->dtype);
    size_t skip = (size_t)(want - first_row);
    out->routes = *a;
    out->routes.shape[0] = rows - (int64_t)skip;
    out->routes.data = a->data ? (unsigned char *)a->data + skip * cell : NULL;
    out->routes.nbytes = (size_t)out->routes.shape[0] * cell;
    out->routes.owned = 0;
    out->has_routes = 1;
    return 0;
}

/*
 * sglang#36404: masked padding rows hold -1 in every layer and slot, at prompt positions
 * p >= chunk with p % chunk < rows (scenarios/FORMAT.md §5b). Any other negative value keeps its
 * name, routes.negative. The rows are SGLang's int32, mapped to [first, P + G - 1).
 */
static int check_masked(const sr_client_result *out, const sr_client_req *req, int64_t first,
                        int64_t chunk, int64_t keep, sr_err *err)
{
    const sr_ndarray *a = &out->routes;
    size_t cell = (size_t)(a->shape[1] * a->shape[2]);
    const int32_t *v = a->data;
    for (int64_t r = 0; v && r < a->shape[0]; r++) {
        const int32_t *row = v + (size_t)r * cell;
        size_t neg = 0;
        for (size_t i = 0; i < cell; i++)
            neg += row[i] < 0;
        int64_t p = first + r;
        int in_region = p < (int64_t)req->n_tokens && p >= chunk && p % chunk < keep;
        int whole = neg == cell;
        for (size_t i = 0; whole && i < cell; i++)
            whole = row[i] == -1;
        if (neg && !(whole && in_region))
            return sr_err_set(err, SR_E_ROUTES_NEGATIVE,
                              "routed expert indices must be non-negative: row %lld holds %zu "
                              "negative values, and SGLang's masked padding (sglang#36404) is a "
                              "whole row of -1 at a prompt position p >= %lld with p %% %lld < "
                              "%lld",
                              (long long)p, neg, (long long)chunk, (long long)chunk,
                              (long long)keep);
    }
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
    const sr_splice_entry *te = entry_for(r, tnode);
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
    sr_ndarray a;
    int64_t first_row = 0;
    rc = wire_routes(&a, &first_row, out, k, r, c0, d, err);
    if (!rc)
        rc = to_oracle_rows(out, req, &a, first_row, d, o->quirks.no_prompt_start,
                            o->quirks.sglang_rows_from_zero,
                            o->omit_prefix && d->encoding == SR_ENC_NPY, err);
    /* Off, nothing is scanned: a -1 meets the trace's routes.negative as before. */
    if (!rc && o->mask_chunk > 0 && d->encoding == SR_ENC_FLAT_B64 &&
        out->routes.dtype == SR_DTYPE_INT32)
        rc = check_masked(
            out, req, req->prompt_start >= 0 && !o->quirks.no_prompt_start ? req->prompt_start : 0,
            o->mask_chunk, o->mask_rows, err);
    return rc;
}
