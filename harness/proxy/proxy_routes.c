/* Route faults applied to a real engine's answer (proxy_routes.h). */
#include "proxy_routes.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "spec/dialect.h"
#include "spec/fault_grammar.h"
#include "sr_base64.h"
#include "sr_envelope.h"
#include "sr_npy.h"
#include "sr_nrlre.h"
#include "sr_splice.h"

#define NPOS       ((size_t)-1)
#define MAX_DEPTH  1100 /* the splice refuses more than 1000 levels before this scan runs */
#define MAX_FIELDS 8    /* route fields of one answer (choices) the proxy rewrites */

int sr_px_routes_supported(const sr_fault *f, size_t i, sr_err *err)
{
    const sr_route_rule *r = &f->rule;
    if (!r->active)
        return 0;
    const char *why = NULL;
    if (r->field != SR_RF_ROUTED_EXPERTS)
        why = "a rule on the logprobs field changes values before the engine writes them, and "
              "the proxy sees only the written ones";
    else if (r->act == SR_RA_STALE || r->act == SR_RA_WEIGHT_VERSION)
        why = "it copies rows computed with other weights, which only the engine has";
    else if (r->act == SR_RA_APPEND_LAST)
        why = "it adds the forward pass on the last sampled token, which only the engine can run";
    else if (r->act == SR_RA_MARK_PARTIAL || (r->act == SR_RA_TRUNCATE && r->partial))
        why = "it cuts the generated tokens and the finish reason, not only the routes";
    if (why)
        return sr_err_set(err, SR_E_FAULT_SPEC,
                          "fault %zu (%s, id \"%s\"): the proxy cannot apply the route action "
                          "%s%s: %s (use it in the engine's engines.faults)",
                          i, sr_fault_kind_name(f->kind), f->id, sr_route_action_name(r->act),
                          r->act == SR_RA_TRUNCATE ? " with partial" : "", why);
    return 1;
}

/* ---- where a field's value is in the raw answer ---- */

typedef struct span {
    size_t b, e; /* [b, e): the value's bytes */
} span;

/* From the opening quote at i: the index after the closing quote, NPOS if there is none. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    for (size_t j = i + 1;;) {
        const char *q = j < n ? memchr(s + j, '"', n - j) : NULL;
        if (!q)
            return NPOS;
        size_t at = (size_t)(q - s), bs = 0;
        while (at - bs > i + 1 && s[at - bs - 1] == '\\')
            bs++;
        if (bs % 2 == 0)
            return at + 1;
        j = at + 1;
    }
}

/* From the first byte of a value at i: the index after it, NPOS if it does not end. */
static size_t skip_value(const char *s, size_t n, size_t i)
{
    if (i < n && s[i] == '"')
        return skip_string(s, n, i);
    if (i < n && (s[i] == '{' || s[i] == '[')) {
        size_t depth = 0;
        while (i < n) {
            if (s[i] == '"') {
                if ((i = skip_string(s, n, i)) == NPOS)
                    return NPOS;
                continue;
            }
            if (s[i] == '{' || s[i] == '[')
                depth++;
            else if ((s[i] == '}' || s[i] == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return NPOS;
    }
    while (i < n && s[i] && !strchr(",}] \t\r\n", s[i]))
        i++;
    return i;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * The values of every object member whose key is written exactly `key` (no escapes), in document
 * order: the first `max` into out; returns how many there are, or -1 for text that is not JSON.
 * The splice has already accepted the answer; this scan only finds byte positions. A key written
 * with escapes never gets here (the splice refuses it as splice.layout_drift, or the wire is not
 * told from the bytes), so the caller's check that the counts agree is a guard that the positions
 * are the values the splice read, not a path an answer is expected to take.
 */
static int find_members(const char *s, size_t n, const char *key, span *out, int max)
{
    unsigned char stack[MAX_DEPTH];
    size_t depth = 0, klen = strlen(key), i = 0;
    int expect_key = 0, count = 0;
    while (i < n) {
        char c = s[i];
        if (c == '{' || c == '[') {
            if (depth == MAX_DEPTH)
                return -1;
            stack[depth++] = (unsigned char)c;
            expect_key = c == '{';
            i++;
        } else if (c == '}' || c == ']') {
            if (!depth)
                return -1;
            depth--;
            expect_key = 0;
            i++;
        } else if (c == ',') {
            expect_key = depth && stack[depth - 1] == '{';
            i++;
        } else if (c == '"') {
            size_t e = skip_string(s, n, i);
            if (e == NPOS)
                return -1;
            int hit = expect_key && e - i - 2 == klen && memcmp(s + i + 1, key, klen) == 0;
            expect_key = 0;
            i = e;
            if (!hit)
                continue;
            while (i < n && is_ws(s[i]))
                i++;
            if (i >= n || s[i++] != ':')
                return -1;
            while (i < n && is_ws(s[i]))
                i++;
            size_t ve = skip_value(s, n, i);
            if (ve == NPOS)
                return -1;
            if (count < max)
                out[count] = (span){i, ve};
            count++;
            i = ve;
        } else {
            i++;
        }
    }
    return count;
}

/* ---- the request: prompt length and route start ---- */

/* Whether v is an integer JSON number in [0, 2^53) (exact in a double). */
static int is_count(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9007199254740992.0 &&
           (double)(int64_t)v->valuedouble == v->valuedouble;
}

/* The prompt's token count from its value t: a flat list of integer ids, or one such list in a
 * list (vLLM's completions take [[ids]] as the one prompt [ids]); NULL, else why not. */
static const char *prompt_length(int64_t *P, const cJSON *t)
{
    if (!cJSON_IsArray(t))
        return "its request holds no prompt token ids";
    if (cJSON_GetArraySize(t) == 1 && cJSON_IsArray(t->child))
        t = t->child;
    const cJSON *e;
    cJSON_ArrayForEach(e, t)
    {
        if (!is_count(e))
            return "its request's prompt is not a list of integer token ids (nor one such list "
                   "in a list)";
    }
    *P = cJSON_GetArraySize(t);
    return NULL;
}

/* The request's prompt length *P and route start *start; NULL, else why they cannot be told. */
static const char *request_positions(int64_t *P, int64_t *start, const sr_dialect_route *rt,
                                     const char *req, size_t n)
{
    cJSON *doc = req && n ? cJSON_ParseWithLength(req, n) : NULL;
    const cJSON *t = doc ? cJSON_GetObjectItemCaseSensitive(doc, rt->request.tokens_key) : NULL;
    const char *why = prompt_length(P, t);
    *start = 0;
    const sr_dialect_request *q = &rt->request;
    const cJSON *holder = doc;
    if (!why && q->start_key && q->start_in_params && q->params)
        holder = cJSON_GetObjectItemCaseSensitive(doc, q->params);
    const cJSON *s = !why && q->start_key && holder
                         ? cJSON_GetObjectItemCaseSensitive(holder, q->start_key)
                         : NULL;
    if (cJSON_IsNumber(s) && s->valuedouble > 0 && s->valuedouble < 1e12)
        *start = (int64_t)s->valuedouble;
    cJSON_Delete(doc);
    return why;
}

/* ---- the rewrite ---- */

/* One route field of the answer: where its value is, and its values (an owned copy). */
typedef struct field_val {
    const sr_splice_entry *e;
    span at;
    sr_ndarray a;
    sr_buf text; /* the value rewritten */
} field_val;

typedef struct rewrite {
    sr_dialect d;
    const sr_dialect_desc *desc;
    const sr_splice_result *res;
    field_val f[MAX_FIELDS + 1]; /* routed_experts in document order, then vllm-json's prompt's */
    int n_routes, n_prompt;
    int64_t P, start;
} rewrite;

/* Copies entry e's array into v->a (owned); nested values as int64. */
static int copy_entry(field_val *v, const sr_splice_entry *e, sr_err *err)
{
    const sr_ndarray *a = &e->array;
    sr_dtype dt = e->kind == SR_SPLICE_NESTED ? SR_DTYPE_INT64 : a->dtype;
    int rc = sr_ndarray_alloc(&v->a, dt, a->ndim, a->shape, err);
    uint64_t n = sr_ndarray_numel(a);
    if (!rc && dt == a->dtype)
        memcpy(v->a.data, a->data, a->nbytes);
    else
        for (uint64_t i = 0; !rc && i < n; i++)
            sr_ndarray_set_i64(&v->a, i, sr_ndarray_get_i64(a, i));
    v->e = e;
    return rc;
}

/* The answer's route fields (SR_E_INVAL when there is none to rewrite, with *why). */
static int collect(rewrite *w, const char *body, size_t len, const char **why, sr_err *err)
{
    span at[MAX_FIELDS + 1];
    for (size_t i = 0; i < w->res->count; i++) {
        const sr_splice_entry *e = &w->res->entries[i];
        int prompt = strcmp(e->field->name, "prompt_routed_experts") == 0;
        if (!prompt && strcmp(e->field->name, "routed_experts") != 0)
            continue;
        if (e->kind == SR_SPLICE_NULL) {
            *why = "its routes are null";
            return SR_E_INVAL;
        }
        if (w->n_routes + w->n_prompt >= MAX_FIELDS || (prompt && w->n_prompt)) {
            *why = "it holds more route fields than the proxy rewrites (one choice at most for "
                   "vllm-json, eight otherwise)";
            return SR_E_INVAL;
        }
        const cJSON *start =
            e->sidecar ? cJSON_GetObjectItemCaseSensitive(e->sidecar, "start") : NULL;
        if (w->desc->encoding == SR_ENC_OBJECT && start && !is_count(start)) {
            /* Written back as an integer: only a value that is one. */
            *why = "its routes' start is not an integer in [0, 2^53)";
            return SR_E_INVAL;
        }
        int slot = prompt ? MAX_FIELDS : w->n_routes;
        int rc = copy_entry(&w->f[slot], e, err);
        if (rc)
            return rc;
        prompt ? w->n_prompt++ : w->n_routes++;
    }
    int found = find_members(body, len, "routed_experts", at, MAX_FIELDS);
    int found_p = find_members(body, len, "prompt_routed_experts", at + MAX_FIELDS, 1);
    if (!w->n_routes || found != w->n_routes || found_p != w->n_prompt ||
        (w->desc->rows == SR_ROWS_SPLIT && (w->n_routes != 1 || w->n_prompt != 1))) {
        *why = w->n_routes ? "its route keys are not where the splice read them"
                           : "it carries no routes";
        return SR_E_INVAL;
    }
    for (int i = 0; i < w->n_routes; i++)
        w->f[i].at = at[i];
    w->f[MAX_FIELDS].at = at[MAX_FIELDS];
    return 0;
}

/* The generated tokens of the choice route entry e belongs to, for the flat wire: the token-id
 * array under the same answer element (SGLang with n > 1 answers a list, one object per choice:
 * "[1].meta_info.routed_experts" pairs with "[1].output_ids"), or the answer's first one when
 * the routes are not inside a list; -1 when there is none. */
static int64_t answer_tokens(const sr_splice_result *res, const sr_splice_entry *e)
{
    const char *close = strchr(e->path, ']');
    size_t prefix = close ? (size_t)(close - e->path) + 1 : 0;
    for (size_t i = 0; i < res->count; i++)
        if (res->entries[i].kind == SR_SPLICE_INT_ARRAY &&
            strncmp(res->entries[i].path, e->path, prefix) == 0)
            return res->entries[i].array.shape[0];
    return -1;
}

/* a's elements re-typed to dt (values kept; a's old data freed). */
static int retype(sr_ndarray *a, sr_dtype dt, sr_err *err)
{
    if (a->dtype == dt)
        return 0;
    sr_ndarray out = SR_NDARRAY_INIT;
    int rc = sr_ndarray_alloc(&out, dt, a->ndim, a->shape, err);
    for (uint64_t i = 0, n = sr_ndarray_numel(a); !rc && i < n; i++)
        sr_ndarray_set_i64(&out, i, sr_ndarray_get_i64(a, i));
    if (rc)
        return rc;
    sr_ndarray_release(a);
    *a = out;
    return 0;
}

/* skyrl's envelope holds a constant its dtype cannot: widened to the route dtype that does (only
 * then: a copy in a wider dtype costs memory on a large answer). */
static int widen_for(sr_ndarray *a, const sr_route_rule *r, sr_err *err)
{
    size_t bits = sr_dtype_size(a->dtype) * 8 - (sr_dtype_is_signed(a->dtype) ? 1 : 0);
    if (r->act != SR_RA_CONSTANT || bits >= 63 || r->value < ((int64_t)1 << bits))
        return 0;
    sr_dtype dt;
    int rc = sr_routes_canonical_dtype(&dt, r->value, err);
    return rc ? rc : retype(a, dt, err);
}

/* skyrl's envelope: the routes after the rule in the narrowest route dtype that holds their
 * largest value, as the engine packs its own (engine/gen_body.c), so a rule that zeroes int16
 * routes writes uint8 and a constant past uint8 widens them; the client refuses any other. */
static int canonical(sr_ndarray *a, sr_err *err)
{
    int64_t max = 0;
    for (uint64_t i = 0, n = sr_ndarray_numel(a); i < n; i++) {
        int64_t v = sr_ndarray_get_i64(a, i);
        max = v > max ? v : max;
    }
    sr_dtype dt;
    int rc = sr_routes_canonical_dtype(&dt, max, err);
    return rc ? rc : retype(a, dt, err);
}

/* Sets a's first dimension to `rows` (its bytes stay where they are). */
static void set_rows(sr_ndarray *a, int64_t rows)
{
    uint64_t per = 1;
    for (int i = 1; i < a->ndim; i++)
        per *= (uint64_t)a->shape[i];
    a->shape[0] = rows;
    a->nbytes = (size_t)((uint64_t)rows * per) * sr_dtype_size(a->dtype);
}

/* The rule on rows [lo, lo + rows) of a, each L x K slots; *kept is how many rows remain. */
static int apply_block(sr_ndarray *a, int64_t rows, size_t L, size_t K, const rewrite *w,
                       int64_t lo, const sr_route_rule *r, int64_t *kept, sr_err *err)
{
    sr_route_block b = {a->data, a->dtype, lo, lo + rows, L, K, w->P, w->start};
    int rc = sr_route_rule_apply(&b, r, NULL, err);
    *kept = b.hi - b.lo;
    return rc;
}

/* vllm-json: the prompt's rows and the choice's as one array of positions [0, P+G), split at P
 * again after the rule. */
static int apply_split(rewrite *w, const sr_route_rule *r, sr_err *err)
{
    sr_ndarray *pa = &w->f[MAX_FIELDS].a, *ga = &w->f[0].a, all = SR_NDARRAY_INIT;
    if (pa->ndim != 3 || ga->ndim != 3 || pa->shape[1] != ga->shape[1] ||
        pa->shape[2] != ga->shape[2])
        return SR_E_INVAL;
    int64_t shape[3] = {pa->shape[0] + ga->shape[0], pa->shape[1], pa->shape[2]}, kept = 0;
    int rc = sr_ndarray_alloc(&all, SR_DTYPE_INT64, 3, shape, err);
    if (rc)
        return rc;
    memcpy(all.data, pa->data, pa->nbytes);
    memcpy((char *)all.data + pa->nbytes, ga->data, ga->nbytes);
    w->P = pa->shape[0];
    w->start = 0;
    /* Row P+G-1, the pass on the last sampled token, is added by the engine after the rule
     * (engine/gen_dialect.c): the rule does not reach it, and it stays only where the rule left
     * the other rows' end where it was (a shorter array gets no last row). */
    int64_t rows = shape[0] - (ga->shape[0] > 0);
    rc = apply_block(&all, rows, (size_t)shape[1], (size_t)shape[2], w, 0, r, &kept, err);
    kept += ga->shape[0] > 0 && kept == rows;
    int64_t prompt = kept < w->P ? kept : w->P;
    size_t rb = (size_t)(shape[1] * shape[2]) * sizeof(int64_t);
    if (!rc) {
        set_rows(pa, prompt);
        set_rows(ga, kept - prompt);
        memcpy(pa->data, all.data, pa->nbytes);
        memcpy(ga->data, (char *)all.data + (size_t)prompt * rb, ga->nbytes);
    }
    sr_ndarray_release(&all);
    return rc;
}

/* The rule on every route field of the answer; SR_E_INVAL (with *why) for a shape it cannot be
 * placed on. */
static int apply_all(rewrite *w, const sr_route_rule *r, const char **why, sr_err *err)
{
    if (r->act == SR_RA_NULL)
        return 0; /* every route field becomes null */
    if (w->desc->rows == SR_ROWS_SPLIT) {
        int rc = apply_split(w, r, err);
        if (rc == SR_E_INVAL)
            *why = "its two route fields do not have the same layers and top_k";
        return rc;
    }
    for (int i = 0; i < w->n_routes; i++) {
        sr_ndarray *a = &w->f[i].a;
        int64_t rows, kept = 0, filler = w->desc->rows == SR_ROWS_FILLER;
        size_t L, K;
        if (sr_ndarray_numel(a) == 0) {
            /* A shape with a zero dimension holds nothing, whatever its row count says. */
            *why = "its routes hold no elements (a dimension of their shape is 0)";
            return SR_E_INVAL;
        }
        if (a->ndim == 3) {
            rows = a->shape[0] - (filler && a->shape[0] > 0);
            L = (size_t)a->shape[1];
            K = (size_t)a->shape[2];
        } else {
            /* The flat wire: rows from the request and the answer's tokens, one "layer" a row. */
            int64_t G = answer_tokens(w->res, w->f[i].e), n = a->ndim == 1 ? a->shape[0] : -1;
            rows = w->P + G - 1 - w->start;
            if (G < 0 || n < 0 || rows <= 0 || n % rows) {
                *why = "its flat routes do not divide into the rows the request and answer say";
                return SR_E_INVAL;
            }
            if (r->n_layers || r->act == SR_RA_SWAP_LAYERS) {
                *why = "its flat routes name no layers, and the rule selects layers";
                return SR_E_INVAL;
            }
            L = 1;
            K = (size_t)(n / rows);
        }
        /* The envelope widens first for a constant its dtype cannot hold, and is packed again
         * in its canonical dtype below. */
        int env = w->desc->encoding == SR_ENC_ENVELOPE;
        int rc = env ? widen_for(a, r, err) : 0;
        if (!rc)
            rc = apply_block(a, rows, L, K, w, filler ? 0 : w->start, r, &kept, err);
        if (rc)
            return rc;
        size_t rb = L * K * sr_dtype_size(a->dtype);
        if (filler && a->shape[0] > 0) /* NeMo-RL's filler row stays last */
            memmove((char *)a->data + (size_t)kept * rb, (char *)a->data + (size_t)rows * rb, rb);
        if (a->ndim == 3)
            set_rows(a, kept + (filler && a->shape[0] > 0));
        else
            set_rows(a, kept * (int64_t)L * (int64_t)K);
        if (env && (rc = canonical(a, err)))
            return rc;
    }
    return 0;
}

/* *out = body with each field's value replaced by its text, in document order. */
static int assemble(sr_buf *out, rewrite *w, const char *body, size_t len, sr_err *err)
{
    field_val *order[MAX_FIELDS + 1];
    int n = 0;
    for (int i = 0; i < w->n_routes; i++)
        order[n++] = &w->f[i];
    if (w->n_prompt)
        order[n++] = &w->f[MAX_FIELDS];
    for (int i = 1; i < n; i++) /* a few fields: insertion sort by position */
        for (int j = i; j > 0 && order[j]->at.b < order[j - 1]->at.b; j--) {
            field_val *t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    size_t from = 0;
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        rc = sr_buf_append(out, body + from, order[i]->at.b - from, err);
        if (!rc)
            rc = sr_buf_append(out, order[i]->text.data, order[i]->text.len, err);
        from = order[i]->at.e;
    }
    return rc ? rc : sr_buf_append(out, body + from, len - from, err);
}

/* Splices, collects, applies, encodes and assembles; SR_E_INVAL with *why to leave it. */
static int rewrite_spliced(sr_buf *out, rewrite *w, const sr_dialect_route *rt,
                           const char *req_body, size_t req_len, const char *body, size_t len,
                           const sr_route_rule *r, const char **why, sr_err *err)
{
    int rc = collect(w, body, len, why, err);
    if (!rc && w->desc->rows != SR_ROWS_SPLIT &&
        (*why = request_positions(&w->P, &w->start, rt, req_body, req_len)))
        rc = SR_E_INVAL;
    if (!rc)
        rc = apply_all(w, r, why, err);
    for (int i = 0; !rc && i <= MAX_FIELDS; i++)
        if (w->f[i].e)
            rc = r->act == SR_RA_NULL ? sr_buf_puts(&w->f[i].text, "null", err)
                                      : px_route_encode(&w->f[i].text, w->desc->encoding,
                                                        &w->f[i].a, w->f[i].e->sidecar, err);
    return rc ? rc : assemble(out, w, body, len, err);
}

int sr_px_routes_rewrite(sr_buf *out, const char **why, const char *path, const char *req_body,
                         size_t req_len, const char *body, size_t len, const sr_route_rule *r,
                         sr_err *err)
{
    sr_buf_reset(out);
    *why = NULL;
    rewrite w;
    memset(&w, 0, sizeof w);
    sr_err quiet = SR_ERR_INIT;
    const char *pattern = NULL;
    int d = sr_dialect_sniff(body, len, &pattern, &quiet);
    char p[256];
    size_t pl = strcspn(path, "?");
    const sr_dialect_route *rt = NULL;
    if (d >= 0 && pl < sizeof p) {
        memcpy(p, path, pl);
        p[pl] = '\0';
        rt = sr_dialect_route_at((sr_dialect)d, p);
    }
    if (!rt) {
        *why = d < 0 ? "it carries no routes of one known wire"
                     : "its request's path is not a generate route of the answer's wire";
        return 0;
    }
    w.d = (sr_dialect)d;
    w.desc = sr_dialect_get(w.d);
    sr_fields *reg = NULL;
    sr_splicer *sp = NULL;
    int rc = sr_fields_new(&reg, err);
    if (!rc)
        rc = sr_dialect_add_fields(reg, w.d, err);
    if (!rc)
        rc = sr_splicer_new(&sp, reg, NULL, err);
    if (!rc && sr_splice(sp, body, len, -1, &w.res, &quiet)) {
        *why = "the client's splice refuses it";
        rc = SR_E_INVAL;
    }
    if (!rc)
        rc = rewrite_spliced(out, &w, rt, req_body, req_len, body, len, r, why, err);
    for (int i = 0; i <= MAX_FIELDS; i++) {
        sr_ndarray_release(&w.f[i].a);
        sr_buf_release(&w.f[i].text);
    }
    sr_splicer_free(sp);
    sr_fields_free(reg);
    if (rc == SR_E_INVAL && *why) {
        sr_buf_reset(out);
        return 0;
    }
    return rc ? rc : 1;
}
