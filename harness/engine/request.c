#include "request.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sr_jdom.h"
#include "sr_json.h"

/* The field names of vLLM's SamplingParams that a client may send. */
static const char *const SAMPLING_KEYS[] = {
    "n",
    "best_of",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "stop_token_ids",
    "bad_words",
    "ignore_eos",
    "max_tokens",
    "min_tokens",
    "logprobs",
    "prompt_logprobs",
    "flat_logprobs",
    "detokenize",
    "skip_special_tokens",
    "spaces_between_special_tokens",
    "include_stop_str_in_output",
    "truncate_prompt_tokens",
    "output_kind",
    "guided_decoding",
    "structured_outputs",
    "logit_bias",
    "allowed_token_ids",
    "extra_args",
    "logits_processors",
    "skip_clone",
    "routed_experts_prompt_start",
    NULL,
};

/*
 * The tree being read: an sr_json document (the message of every error names its line and
 * column), or, on the fast path, sr_jdom's tree under the reference rules, which has no positions:
 * there an error only says that the request must be read again by the document path, which then
 * gives the answer (the fast path decides nothing on its own).
 */
typedef struct rq {
    const sr_json_doc *d; /* NULL on the fast path */
    const cJSON *root;
    int fast;
} rq;

/* An error of the request at `node`: the document path's SR_E_ENGINE_REQUEST with its message,
 * the fast path's SR_E_ENGINE_REQUEST alone (nothing formatted). */
#define RQ_ERROR(x, node, err, ...)                                                                \
    ((x)->fast ? SR_E_ENGINE_REQUEST                                                               \
               : sr_json_error((x)->d, node, err, SR_E_ENGINE_REQUEST, __VA_ARGS__))

static int bad(const rq *x, const cJSON *node, sr_err *err, const char *msg)
{
    return RQ_ERROR(x, node, err, "%s", msg);
}

/* An integer literal that fits int64 (bools and fractions are not integers). sr_jdom's reference
 * rules mark a number written with a fraction or an exponent SR_JDOM_NOT_INT, the same literals
 * sr_json_is_integer_literal refuses from the text. */
static int is_int(const rq *x, const cJSON *v)
{
    if (!cJSON_IsNumber(v) || !(fabs(v->valuedouble) < 9.2e18))
        return 0;
    return x->fast ? !(v->type & SR_JDOM_NOT_INT) : sr_json_is_integer_literal(x->d, v);
}

static int token_array(const rq *x, const cJSON *arr, int64_t vocab, size_t max, int32_t **out,
                       size_t *n, const char *what, int allow_empty, sr_err *err)
{
    *out = NULL;
    *n = 0;
    if (!cJSON_IsArray(arr))
        return RQ_ERROR(x, arr, err, "%s must be a list of integers", what);
    size_t count = (size_t)cJSON_GetArraySize(arr);
    if (count == 0 && !allow_empty)
        return RQ_ERROR(x, arr, err, "%s must not be empty", what);
    if (count > max)
        return RQ_ERROR(x, arr, err, "%s has %zu entries, more than %zu", what, count, max);
    int32_t *t = malloc((count ? count : 1) * sizeof(*t));
    if (!t)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu token ids", count);
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, arr)
    {
        if (!is_int(x, e) || e->valuedouble < 0 || e->valuedouble >= (double)vocab) {
            free(t);
            return RQ_ERROR(x, e, err, "%s entries must be integers in [0, %lld)", what,
                            (long long)vocab);
        }
        t[i++] = (int32_t)e->valuedouble;
    }
    *out = t;
    *n = i;
    return 0;
}

static int check_sampling_keys(const rq *x, const cJSON *sp, sr_err *err)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, sp)
    {
        int known = 0;
        /* The first byte first: most names differ there, and strcmp is a call. */
        for (const char *const *k = SAMPLING_KEYS; *k && !known; k++)
            known = (*k)[0] == m->string[0] && strcmp(*k, m->string) == 0;
        if (!known)
            return RQ_ERROR(x, m, err, "unknown sampling parameter '%.64s'", m->string);
        if (!cJSON_IsNull(m) && !cJSON_IsNumber(m) && !cJSON_IsBool(m) &&
            strcmp(m->string, "stop") != 0 && strcmp(m->string, "stop_token_ids") != 0 &&
            strcmp(m->string, "bad_words") != 0 && strcmp(m->string, "logit_bias") != 0 &&
            strcmp(m->string, "allowed_token_ids") != 0 && strcmp(m->string, "extra_args") != 0 &&
            strcmp(m->string, "guided_decoding") != 0 &&
            strcmp(m->string, "structured_outputs") != 0 &&
            strcmp(m->string, "logits_processors") != 0 && strcmp(m->string, "output_kind") != 0)
            return RQ_ERROR(x, m, err, "sampling parameter '%s' has the wrong type", m->string);
    }
    return 0;
}

/* An optional integer sampling parameter: null or absent keeps *out. */
static int opt_int(const rq *x, const cJSON *sp, const char *key, int64_t lo, int64_t hi,
                   int64_t *out, int *present, sr_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sp, key);
    if (present)
        *present = 0;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!is_int(x, v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return RQ_ERROR(x, v, err, "sampling parameter '%s' must be an integer in [%lld, %lld]",
                        key, (long long)lo, (long long)hi);
    *out = (int64_t)v->valuedouble;
    if (present)
        *present = 1;
    return 0;
}

/* sampling_params.top_k as the later stack's capture check reads it (request.h): its integer
 * value, or its Python repr for the refusal. The engine checks it only for a capture request. */
static void read_top_k(sr_gen_request *r, const rq *x, const cJSON *sp)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sp, "top_k");
    if (!v || cJSON_IsNull(v))
        return;
    if (cJSON_IsBool(v)) {
        /* isinstance(True, int) holds in Python: a boolean is the integer 1 or 0. */
        r->top_k_int = 1;
        r->top_k = cJSON_IsTrue(v);
        snprintf(r->top_k_repr, sizeof r->top_k_repr, "%s", cJSON_IsTrue(v) ? "True" : "False");
    } else if (is_int(x, v)) {
        r->top_k_int = 1;
        r->top_k = (int64_t)v->valuedouble;
        snprintf(r->top_k_repr, sizeof r->top_k_repr, "%lld", (long long)r->top_k);
    } else if (cJSON_IsNumber(v)) {
        /* Python's float repr: the shortest form that reads back, "2.0" for a whole number. */
        double f = v->valuedouble;
        if (f == floor(f) && fabs(f) < 1e16)
            snprintf(r->top_k_repr, sizeof r->top_k_repr, "%.1f", f);
        else if (snprintf(r->top_k_repr, sizeof r->top_k_repr, "%.15g", f) > 0 &&
                 strtod(r->top_k_repr, NULL) != f)
            snprintf(r->top_k_repr, sizeof r->top_k_repr, "%.17g", f);
    } else if (cJSON_IsString(v)) {
        snprintf(r->top_k_repr, sizeof r->top_k_repr, "'%.24s'", v->valuestring);
    } else {
        snprintf(r->top_k_repr, sizeof r->top_k_repr, "%s", cJSON_IsArray(v) ? "[...]" : "{...}");
    }
}

static int parse_sampling(sr_gen_request *r, const rq *x, const cJSON *sp, const sr_gen_limits *lim,
                          sr_err *err)
{
    if (!cJSON_IsObject(sp))
        return bad(x, sp, err, "sampling_params must be an object");
    int rc = check_sampling_keys(x, sp, err);
    int64_t n = 1;
    if (!rc)
        rc = opt_int(x, sp, "n", 1, 1, &n, NULL, err);
    r->max_tokens = lim->max_tokens_default;
    if (!rc)
        rc = opt_int(x, sp, "max_tokens", 1, lim->max_seq, &r->max_tokens, NULL, err);
    if (!rc)
        rc = opt_int(x, sp, "logprobs", 0, 1000, &r->logprobs, NULL, err);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sp, "ignore_eos");
    if (!rc && v && !cJSON_IsNull(v)) {
        if (!cJSON_IsBool(v))
            return bad(x, v, err, "sampling parameter 'ignore_eos' must be a boolean");
        r->ignore_eos = cJSON_IsTrue(v);
    }
    v = cJSON_GetObjectItemCaseSensitive(sp, "stop_token_ids");
    if (!rc && v && !cJSON_IsNull(v))
        rc = token_array(x, v, lim->vocab, 1024, &r->stop_ids, &r->n_stop_ids,
                         "sampling parameter 'stop_token_ids'", 1, err);
    v = cJSON_GetObjectItemCaseSensitive(sp, "stop");
    if (!rc && v && !cJSON_IsNull(v) && !cJSON_IsString(v)) {
        if (!cJSON_IsArray(v))
            return bad(x, v, err,
                       "sampling parameter 'stop' must be a string or a list of strings");
        const cJSON *e;
        cJSON_ArrayForEach(e, v) if (!cJSON_IsString(e)) return bad(
            x, e, err, "sampling parameter 'stop' must be a string or a list of strings");
    }
    read_top_k(r, x, sp);
    v = cJSON_GetObjectItemCaseSensitive(sp, "routed_experts_prompt_start");
    if (!rc && v && !cJSON_IsNull(v)) {
        if (!is_int(x, v) || v->valuedouble < 0 || v->valuedouble > (double)r->P)
            return bad(x, v, err,
                       "routed_experts_prompt_start must be an integer within the prompt");
        r->route_start = (int64_t)v->valuedouble;
        r->has_route_start = 1;
    }
    return rc;
}

static int opt_string(const rq *x, const cJSON *root, const char *key, int allow_empty, char **out,
                      sr_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || (cJSON_IsNull(v) && strcmp(key, "cache_salt") == 0))
        return 0;
    if (!cJSON_IsString(v) || (!allow_empty && v->valuestring[0] == '\0'))
        return RQ_ERROR(x, v, err, "%s must be a%s string", key, allow_empty ? "" : " non-empty");
    *out = strdup(v->valuestring);
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot copy %s", key);
    return 0;
}

static int opt_bool(const rq *x, const cJSON *obj, const char *key, int *out, sr_err *err);

static int parse_root(sr_gen_request *r, const rq *x, const sr_gen_limits *lim, sr_err *err)
{
    const cJSON *root = x->root;
    if (!cJSON_IsObject(root))
        return bad(x, root, err, "the request body must be a JSON object");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "token_ids");
    if (!tok)
        return bad(x, root, err, "token_ids is required");
    int rc = token_array(x, tok, lim->vocab, (size_t)lim->max_seq - 1, &r->tokens, &r->P,
                         "token_ids", 0, err);
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(root, "sampling_params");
    r->max_tokens = lim->max_tokens_default;
    if (!rc && sp && !cJSON_IsNull(sp))
        rc = parse_sampling(r, x, sp, lim, err);
    if (!rc && (int64_t)r->P + r->max_tokens > lim->max_seq)
        rc = RQ_ERROR(x, tok, err,
                      "prompt length %zu plus max_tokens %lld exceeds the engine's maximum "
                      "sequence length %lld",
                      r->P, (long long)r->max_tokens, (long long)lim->max_seq);
    if (!rc)
        rc = opt_string(x, root, "model", 1, &r->model, err);
    if (!rc)
        rc = opt_string(x, root, "cache_salt", 0, &r->cache_salt, err);
    const cJSON *feat = cJSON_GetObjectItemCaseSensitive(root, "features");
    if (!rc && feat && !cJSON_IsNull(feat) && !cJSON_IsObject(feat))
        rc = bad(x, feat, err, "features must be an object or null");
    if (!rc)
        rc = opt_bool(x, root, "return_sample_support", &r->want_support, err);
    return rc;
}

/* A boolean or null member of `obj` (absent or null keeps *out). */
static int opt_bool(const rq *x, const cJSON *obj, const char *key, int *out, sr_err *err)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsBool(v))
        return RQ_ERROR(x, v, err, "%s must be a boolean", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* The loose reading of sr_gen_request_parse_as (request.h) for wires other than SamplingParams. */
static int parse_shape(sr_gen_request *r, const rq *x, const sr_gen_limits *lim,
                       const sr_dialect_request *sh, sr_err *err)
{
    const cJSON *root = x->root;
    if (!cJSON_IsObject(root))
        return bad(x, root, err, "the request body must be a JSON object");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, sh->tokens_key);
    if (!tok)
        return RQ_ERROR(x, root, err, "%s is required (token ids)", sh->tokens_key);
    int rc = token_array(x, tok, lim->vocab, (size_t)lim->max_seq - 1, &r->tokens, &r->P,
                         sh->tokens_key, 0, err);
    const cJSON *params = root;
    if (!rc && sh->params) {
        params = cJSON_GetObjectItemCaseSensitive(root, sh->params);
        if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
            rc = RQ_ERROR(x, params, err, "%s must be an object", sh->params);
        params = cJSON_IsObject(params) ? params : NULL;
    }
    r->max_tokens = lim->max_tokens_default;
    if (!rc && params)
        rc = opt_int(x, params, sh->max_tokens_key, 1, lim->max_seq, &r->max_tokens, NULL, err);
    if (!rc)
        rc = opt_bool(x, params, "ignore_eos", &r->ignore_eos, err);
    int lp = 0;
    if (!rc && sh->logprobs_switch && !(rc = opt_bool(x, root, sh->logprobs_switch, &lp, err)))
        r->logprobs = lp ? 0 : r->logprobs; /* the sampled token's logprob only */
    else if (!rc && params && !sh->logprobs_switch)
        rc = opt_int(x, params, "logprobs", 0, 1000, &r->logprobs, NULL, err);
    const cJSON *at = sh->start_in_params ? params : root;
    if (!rc && sh->start_key && at)
        rc = opt_int(x, at, sh->start_key, 0, (int64_t)r->P, &r->route_start, &r->has_route_start,
                     err);
    int want = sh->routes_switch ? 0 : 1;
    if (!rc && sh->routes_switch)
        rc = opt_bool(x, root, sh->routes_switch, &want, err);
    r->no_routes = !want;
    int tokens = sh->tokens_switch ? 0 : 1;
    if (!rc && sh->tokens_switch)
        rc = opt_bool(x, root, sh->tokens_switch, &tokens, err);
    r->no_tokens = !tokens;
    if (!rc && (int64_t)r->P + r->max_tokens > lim->max_seq)
        rc = RQ_ERROR(x, tok, err,
                      "prompt length %zu plus %s %lld exceeds the engine's maximum "
                      "sequence length %lld",
                      r->P, sh->max_tokens_key, (long long)r->max_tokens, (long long)lim->max_seq);
    return rc ? rc : opt_string(x, root, "model", 1, &r->model, err);
}

/* Reads the tree of `x` into *out (SR_GEN_REQUEST_INIT first; released again on an error). */
static int read_tree(sr_gen_request *out, const rq *x, const sr_gen_limits *lim,
                     const sr_dialect_request *shape, sr_err *err)
{
    sr_gen_request r = SR_GEN_REQUEST_INIT;
    int rc = shape && !shape->strict_params ? parse_shape(&r, x, lim, shape, err)
                                            : parse_root(&r, x, lim, err);
    if (!rc && shape && shape->strict_params && !shape->start_key) {
        r.route_start = 0; /* a wire without a start (vLLM 0.21): the key is accepted, unused */
        r.has_route_start = 0;
    }
    if (rc)
        sr_gen_request_release(&r);
    *out = r;
    return rc;
}

/*
 * The fast path (request.h): sr_jdom under the reference rules, which accepts a subset of what
 * cJSON accepts and builds the same tree, and refuses duplicate keys, text that is not UTF-8 and
 * numbers that overflow; a body holding the text \u0000 (an escaped NUL, which the document path
 * refuses wherever it is) is left to that path, as is any error. Returns 0 when it read the
 * request, else nonzero (the caller then reads the body as a document).
 */
static int read_fast(sr_gen_request *out, const char *body, size_t len, const sr_gen_limits *lim,
                     const sr_dialect_request *shape, sr_jdom *j)
{
    if (!j)
        return 1;
    if (len > SR_GEN_REQUEST_FAST_MAX || body[len] != '\0' || memmem(body, len, "\\u0000", 6)) {
        sr_jdom_reset(j); /* no tree left from an earlier request (request.h) */
        return 1;
    }
    sr_jdom_set_flags(j, SR_JDOM_REFERENCE);
    cJSON *root = NULL;
    sr_err scratch = SR_ERR_INIT;
    if (sr_jdom_parse(j, body, len, &root, &scratch))
        return 1;
    rq x = {NULL, root, 1};
    int rc = read_tree(out, &x, lim, shape, &scratch);
    /* The tree stays until the next parse when it answered (request.h). */
    if (rc)
        sr_jdom_reset(j);
    return rc;
}

static int parse_any(sr_gen_request *out, const char *body, size_t len, const sr_gen_limits *lim,
                     const sr_dialect_request *shape, sr_jdom *j, sr_err *err)
{
    *out = (sr_gen_request)SR_GEN_REQUEST_INIT;
    if (!read_fast(out, body, len, lim, shape, j))
        return 0;
    sr_json_doc *d = NULL;
    int rc = sr_json_parse(&d, body, len, "request", len + 1, err);
    if (rc) {
        if (err && rc != SR_E_NOMEM)
            err->code = SR_E_ENGINE_REQUEST;
        return rc == SR_E_NOMEM ? rc : SR_E_ENGINE_REQUEST;
    }
    rq x = {d, sr_json_root(d), 0};
    rc = read_tree(out, &x, lim, shape, err);
    sr_json_free(d);
    return rc;
}

int sr_gen_request_parse(sr_gen_request *out, const char *body, size_t len,
                         const sr_gen_limits *lim, sr_err *err)
{
    return parse_any(out, body, len, lim, NULL, NULL, err);
}

int sr_gen_request_parse_as(sr_gen_request *out, const char *body, size_t len,
                            const sr_gen_limits *lim, const sr_dialect_request *shape, sr_err *err)
{
    return parse_any(out, body, len, lim, shape, NULL, err);
}

int sr_gen_request_parse_in(sr_gen_request *out, const char *body, size_t len,
                            const sr_gen_limits *lim, const sr_dialect_request *shape, sr_jdom *j,
                            sr_err *err)
{
    return parse_any(out, body, len, lim, shape, j, err);
}

void sr_gen_request_release(sr_gen_request *r)
{
    free(r->tokens);
    free(r->stop_ids);
    free(r->model);
    free(r->cache_salt);
    sr_gen_request z = SR_GEN_REQUEST_INIT;
    *r = z;
}
