#include "request.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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

static int bad(const sr_json_doc *d, const cJSON *node, sr_err *err, const char *msg)
{
    return sr_json_error(d, node, err, SR_E_ENGINE_REQUEST, "%s", msg);
}

/* An integer literal that fits int64 (bools and fractions are not integers). */
static int is_int(const sr_json_doc *d, const cJSON *v)
{
    return cJSON_IsNumber(v) && sr_json_is_integer_literal(d, v) && fabs(v->valuedouble) < 9.2e18;
}

static int token_array(const sr_json_doc *d, const cJSON *arr, int64_t vocab, size_t max,
                       int32_t **out, size_t *n, const char *what, int allow_empty, sr_err *err)
{
    *out = NULL;
    *n = 0;
    if (!cJSON_IsArray(arr))
        return sr_json_error(d, arr, err, SR_E_ENGINE_REQUEST, "%s must be a list of integers",
                             what);
    size_t count = (size_t)cJSON_GetArraySize(arr);
    if (count == 0 && !allow_empty)
        return sr_json_error(d, arr, err, SR_E_ENGINE_REQUEST, "%s must not be empty", what);
    if (count > max)
        return sr_json_error(d, arr, err, SR_E_ENGINE_REQUEST, "%s has %zu entries, more than %zu",
                             what, count, max);
    int32_t *t = malloc((count ? count : 1) * sizeof(*t));
    if (!t)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu token ids", count);
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, arr)
    {
        if (!is_int(d, e) || e->valuedouble < 0 || e->valuedouble >= (double)vocab) {
            free(t);
            return sr_json_error(d, e, err, SR_E_ENGINE_REQUEST,
                                 "%s entries must be integers in [0, %lld)", what,
                                 (long long)vocab);
        }
        t[i++] = (int32_t)e->valuedouble;
    }
    *out = t;
    *n = i;
    return 0;
}

static int check_sampling_keys(const sr_json_doc *d, const cJSON *sp, sr_err *err)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, sp)
    {
        int known = 0;
        for (const char *const *k = SAMPLING_KEYS; *k && !known; k++)
            known = strcmp(*k, m->string) == 0;
        if (!known)
            return sr_json_error(d, m, err, SR_E_ENGINE_REQUEST,
                                 "unknown sampling parameter '%.64s'", m->string);
        if (!cJSON_IsNull(m) && !cJSON_IsNumber(m) && !cJSON_IsBool(m) &&
            strcmp(m->string, "stop") != 0 && strcmp(m->string, "stop_token_ids") != 0 &&
            strcmp(m->string, "bad_words") != 0 && strcmp(m->string, "logit_bias") != 0 &&
            strcmp(m->string, "allowed_token_ids") != 0 && strcmp(m->string, "extra_args") != 0 &&
            strcmp(m->string, "guided_decoding") != 0 &&
            strcmp(m->string, "structured_outputs") != 0 &&
            strcmp(m->string, "logits_processors") != 0 && strcmp(m->string, "output_kind") != 0)
            return sr_json_error(d, m, err, SR_E_ENGINE_REQUEST,
                                 "sampling parameter '%s' has the wrong type", m->string);
    }
    return 0;
}

/* An optional integer sampling parameter: null or absent keeps *out. */
static int opt_int(const sr_json_doc *d, const cJSON *sp, const char *key, int64_t lo, int64_t hi,
                   int64_t *out, int *present, sr_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sp, key);
    if (present)
        *present = 0;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!is_int(d, v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return sr_json_error(d, v, err, SR_E_ENGINE_REQUEST,
                             "sampling parameter '%s' must be an integer in [%lld, %lld]", key,
                             (long long)lo, (long long)hi);
    *out = (int64_t)v->valuedouble;
    if (present)
        *present = 1;
    return 0;
}

/* sampling_params.top_k as the later stack's capture check reads it (request.h): its integer
 * value, or its Python repr for the refusal. The engine checks it only for a capture request. */
static void read_top_k(sr_gen_request *r, const sr_json_doc *d, const cJSON *sp)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sp, "top_k");
    if (!v || cJSON_IsNull(v))
        return;
    if (cJSON_IsBool(v)) {
        /* isinstance(True, int) holds in Python: a boolean is the integer 1 or 0. */
        r->top_k_int = 1;
        r->top_k = cJSON_IsTrue(v);
        snprintf(r->top_k_repr, sizeof r->top_k_repr, "%s", cJSON_IsTrue(v) ? "True" : "False");
    } else if (is_int(d, v)) {
        r->top_k_int = 1;
        r->top_k = (int64_t)v->valuedouble;
        snprintf(r->top_k_repr, sizeof r->top_k_repr, "%lld", (long long)r->top_k);
    } else if (cJSON_IsNumber(v)) {
        /* Python's float repr: the shortest form that reads back, "2.0" for a whole number. */
        double x = v->valuedouble;
        if (x == floor(x) && fabs(x) < 1e16)
            snprintf(r->top_k_repr, sizeof r->top_k_repr, "%.1f", x);
        else if (snprintf(r->top_k_repr, sizeof r->top_k_repr, "%.15g", x) > 0 &&
                 strtod(r->top_k_repr, NULL) != x)
            snprintf(r->top_k_repr, sizeof r->top_k_repr, "%.17g", x);
    } else if (cJSON_IsString(v)) {
        snprintf(r->top_k_repr, sizeof r->top_k_repr, "'%.24s'", v->valuestring);
    } else {
        snprintf(r->top_k_repr, sizeof r->top_k_repr, "%s", cJSON_IsArray(v) ? "[...]" : "{...}");
    }
}

static int parse_sampling(sr_gen_request *r, const sr_json_doc *d, const cJSON *sp,
                          const sr_gen_limits *lim, sr_err *err)
{
    if (!cJSON_IsObject(sp))
        return bad(d, sp, err, "sampling_params must be an object");
    int rc = check_sampling_keys(d, sp, err);
    int64_t n = 1;
    if (!rc)
        rc = opt_int(d, sp, "n", 1, 1, &n, NULL, err);
    r->max_tokens = lim->max_tokens_default;
    if (!rc)
        rc = opt_int(d, sp, "max_tokens", 1, lim->max_seq, &r->max_tokens, NULL, err);
    if (!rc)
        rc = opt_int(d, sp, "logprobs", 0, 1000, &r->logprobs, NULL, err);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sp, "ignore_eos");
    if (!rc && v && !cJSON_IsNull(v)) {
        if (!cJSON_IsBool(v))
            return bad(d, v, err, "sampling parameter 'ignore_eos' must be a boolean");
        r->ignore_eos = cJSON_IsTrue(v);
    }
    v = cJSON_GetObjectItemCaseSensitive(sp, "stop_token_ids");
    if (!rc && v && !cJSON_IsNull(v))
        rc = token_array(d, v, lim->vocab, 1024, &r->stop_ids, &r->n_stop_ids,
                         "sampling parameter 'stop_token_ids'", 1, err);
    v = cJSON_GetObjectItemCaseSensitive(sp, "stop");
    if (!rc && v && !cJSON_IsNull(v) && !cJSON_IsString(v)) {
        if (!cJSON_IsArray(v))
            return bad(d, v, err,
                       "sampling parameter 'stop' must be a string or a list of strings");
        const cJSON *e;
        cJSON_ArrayForEach(e, v) if (!cJSON_IsString(e)) return bad(
            d, e, err, "sampling parameter 'stop' must be a string or a list of strings");
    }
    read_top_k(r, d, sp);
    v = cJSON_GetObjectItemCaseSensitive(sp, "routed_experts_prompt_start");
    if (!rc && v && !cJSON_IsNull(v)) {
        if (!is_int(d, v) || v->valuedouble < 0 || v->valuedouble > (double)r->P)
            return bad(d, v, err,
                       "routed_experts_prompt_start must be an integer within the prompt");
        r->route_start = (int64_t)v->valuedouble;
        r->has_route_start = 1;
    }
    return rc;
}

static int opt_string(const sr_json_doc *d, const cJSON *root, const char *key, int allow_empty,
                      char **out, sr_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || (cJSON_IsNull(v) && strcmp(key, "cache_salt") == 0))
        return 0;
    if (!cJSON_IsString(v) || (!allow_empty && v->valuestring[0] == '\0'))
        return sr_json_error(d, v, err, SR_E_ENGINE_REQUEST, "%s must be a%s string", key,
                             allow_empty ? "" : " non-empty");
    *out = strdup(v->valuestring);
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot copy %s", key);
    return 0;
}

static int opt_bool(const sr_json_doc *d, const cJSON *obj, const char *key, int *out, sr_err *err);

static int parse_root(sr_gen_request *r, const sr_json_doc *d, const sr_gen_limits *lim,
                      sr_err *err)
{
    const cJSON *root = sr_json_root(d);
    if (!cJSON_IsObject(root))
        return bad(d, root, err, "the request body must be a JSON object");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "token_ids");
    if (!tok)
        return bad(d, root, err, "token_ids is required");
    int rc = token_array(d, tok, lim->vocab, (size_t)lim->max_seq - 1, &r->tokens, &r->P,
                         "token_ids", 0, err);
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(root, "sampling_params");
    r->max_tokens = lim->max_tokens_default;
    if (!rc && sp && !cJSON_IsNull(sp))
        rc = parse_sampling(r, d, sp, lim, err);
    if (!rc && (int64_t)r->P + r->max_tokens > lim->max_seq)
        rc = sr_json_error(d, tok, err, SR_E_ENGINE_REQUEST,
                           "prompt length %zu plus max_tokens %lld exceeds the engine's maximum "
                           "sequence length %lld",
                           r->P, (long long)r->max_tokens, (long long)lim->max_seq);
    if (!rc)
        rc = opt_string(d, root, "model", 1, &r->model, err);
    if (!rc)
        rc = opt_string(d, root, "cache_salt", 0, &r->cache_salt, err);
    const cJSON *feat = cJSON_GetObjectItemCaseSensitive(root, "features");
    if (!rc && feat && !cJSON_IsNull(feat) && !cJSON_IsObject(feat))
        rc = bad(d, feat, err, "features must be an object or null");
    if (!rc)
        rc = opt_bool(d, root, "return_sample_support", &r->want_support, err);
    return rc;
}

/* A boolean or null member of `obj` (absent or null keeps *out). */
static int opt_bool(const sr_json_doc *d, const cJSON *obj, const char *key, int *out, sr_err *err)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsBool(v))
        return sr_json_error(d, v, err, SR_E_ENGINE_REQUEST, "%s must be a boolean", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* The loose reading of sr_gen_request_parse_as (request.h) for wires other than SamplingParams. */
static int parse_shape(sr_gen_request *r, const sr_json_doc *d, const sr_gen_limits *lim,
                       const sr_dialect_request *sh, sr_err *err)
{
    const cJSON *root = sr_json_root(d);
    if (!cJSON_IsObject(root))
        return bad(d, root, err, "the request body must be a JSON object");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, sh->tokens_key);
    if (!tok)
        return sr_json_error(d, root, err, SR_E_ENGINE_REQUEST, "%s is required (token ids)",
                             sh->tokens_key);
    int rc = token_array(d, tok, lim->vocab, (size_t)lim->max_seq - 1, &r->tokens, &r->P,
                         sh->tokens_key, 0, err);
    const cJSON *params = root;
    if (!rc && sh->params) {
        params = cJSON_GetObjectItemCaseSensitive(root, sh->params);
        if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
            rc = sr_json_error(d, params, err, SR_E_ENGINE_REQUEST, "%s must be an object",
                               sh->params);
        params = cJSON_IsObject(params) ? params : NULL;
    }
    r->max_tokens = lim->max_tokens_default;
    if (!rc && params)
        rc = opt_int(d, params, sh->max_tokens_key, 1, lim->max_seq, &r->max_tokens, NULL, err);
    if (!rc)
        rc = opt_bool(d, params, "ignore_eos", &r->ignore_eos, err);
    int lp = 0;
    if (!rc && sh->logprobs_switch && !(rc = opt_bool(d, root, sh->logprobs_switch, &lp, err)))
        r->logprobs = lp ? 0 : r->logprobs; /* the sampled token's logprob only */
    else if (!rc && params && !sh->logprobs_switch)
        rc = opt_int(d, params, "logprobs", 0, 1000, &r->logprobs, NULL, err);
    const cJSON *at = sh->start_in_params ? params : root;
    if (!rc && sh->start_key && at)
        rc = opt_int(d, at, sh->start_key, 0, (int64_t)r->P, &r->route_start, &r->has_route_start,
                     err);
    int want = sh->routes_switch ? 0 : 1;
    if (!rc && sh->routes_switch)
        rc = opt_bool(d, root, sh->routes_switch, &want, err);
    r->no_routes = !want;
    int tokens = sh->tokens_switch ? 0 : 1;
    if (!rc && sh->tokens_switch)
        rc = opt_bool(d, root, sh->tokens_switch, &tokens, err);
    r->no_tokens = !tokens;
    if (!rc && (int64_t)r->P + r->max_tokens > lim->max_seq)
        rc = sr_json_error(d, tok, err, SR_E_ENGINE_REQUEST,
                           "prompt length %zu plus %s %lld exceeds the engine's maximum "
                           "sequence length %lld",
                           r->P, sh->max_tokens_key, (long long)r->max_tokens,
                           (long long)lim->max_seq);
    return rc ? rc : opt_string(d, root, "model", 1, &r->model, err);
}

static int parse_any(sr_gen_request *out, const char *body, size_t len, const sr_gen_limits *lim,
                     const sr_dialect_request *shape, sr_err *err)
{
    sr_gen_request r = SR_GEN_REQUEST_INIT;
    *out = r;
    sr_json_doc *d = NULL;
    int rc = sr_json_parse(&d, body, len, "request", len + 1, err);
    if (rc) {
        if (err && rc != SR_E_NOMEM)
            err->code = SR_E_ENGINE_REQUEST;
        return rc == SR_E_NOMEM ? rc : SR_E_ENGINE_REQUEST;
    }
    rc = shape && !shape->strict_params ? parse_shape(&r, d, lim, shape, err)
                                        : parse_root(&r, d, lim, err);
    sr_json_free(d);
    if (!rc && shape && shape->strict_params && !shape->start_key) {
        r.route_start = 0; /* a wire without a start (vLLM 0.21): the key is accepted, unused */
        r.has_route_start = 0;
    }
    if (rc) {
        sr_gen_request_release(&r);
        return rc;
    }
    *out = r;
    return 0;
}

int sr_gen_request_parse(sr_gen_request *out, const char *body, size_t len,
                         const sr_gen_limits *lim, sr_err *err)
{
    return parse_any(out, body, len, lim, NULL, err);
}

int sr_gen_request_parse_as(sr_gen_request *out, const char *body, size_t len,
                            const sr_gen_limits *lim, const sr_dialect_request *shape, sr_err *err)
{
    return parse_any(out, body, len, lim, shape, err);
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
