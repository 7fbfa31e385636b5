/* The model and fields sections of the one schema (engine_config.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_config.h"
#include "sr_buf.h"
#include "sr_gen_extra.h"

static const cJSON *member(const cJSON *obj, const char *key)
{
    return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* A name is copied only when given: the default is the buffer itself, and copying a string onto
 * itself is undefined. */
static int parse_name(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *m)
{
    const char *name;
    int rc = sr_json_get_string(x->doc, m, "name", 0, NULL, &name, x->err);
    if (rc || !name)
        return rc;
    if (!*name || strlen(name) >= sizeof(c->model_name))
        return sr_spec_fail(x, member(m, "name"), "model.name must be 1..%zu bytes, not %zu",
                            sizeof(c->model_name) - 1, strlen(name));
    memcpy(c->model_name, name, strlen(name) + 1);
    return 0;
}

static int parse_layer_indices(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *m,
                               const cJSON *li)
{
    int size = cJSON_IsArray(li) ? cJSON_GetArraySize(li) : 0;
    if (size < 1 || size > SR_ORACLE_MAX_LAYERS)
        return sr_spec_fail(x, li, "model.layer_indices must be an array of 1..%d integers",
                            SR_ORACLE_MAX_LAYERS);
    if (member(m, "layers") && size != c->num_layers)
        return sr_spec_fail(x, li, "model.layer_indices has %d entries but model.layers is %d",
                            size, c->num_layers);
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, li)
    {
        if (!cJSON_IsNumber(e) || !sr_json_is_integer_literal(x->doc, e) || e->valuedouble < 0 ||
            e->valuedouble > INT32_MAX || (n > 0 && e->valuedouble <= c->layer_indices[n - 1]))
            return sr_spec_fail(x, e,
                                "model.layer_indices must be strictly increasing integers in "
                                "[0, 2^31-1]");
        c->layer_indices[n++] = (int32_t)e->valuedouble;
    }
    c->num_layers = n;
    return 0;
}

/* Token ids are checked against the vocabulary parsed before them (the oracle's rule). */
static int parse_stops(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *ss)
{
    if (!cJSON_IsArray(ss) || cJSON_GetArraySize(ss) > SR_ORACLE_MAX_STOPS)
        return sr_spec_fail(x, ss, "model.stop_sequences must be an array of at most %d arrays",
                            SR_ORACLE_MAX_STOPS);
    c->num_stops = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ss)
    {
        int32_t *dst = c->stop_tokens + c->num_stops * SR_ORACLE_MAX_STOP_LEN;
        int n = 0;
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) < 1 ||
            cJSON_GetArraySize(e) > SR_ORACLE_MAX_STOP_LEN)
            return sr_spec_fail(x, e,
                                "model.stop_sequences[%d] must be an array of 1..%d token ids",
                                c->num_stops, SR_ORACLE_MAX_STOP_LEN);
        const cJSON *t;
        cJSON_ArrayForEach(t, e)
        {
            if (!cJSON_IsNumber(t) || !sr_json_is_integer_literal(x->doc, t) ||
                t->valuedouble < 0 || t->valuedouble >= (double)c->vocab)
                return sr_spec_fail(x, t,
                                    "model.stop_sequences token ids must be in [0, model.vocab) "
                                    "= [0, %lld)",
                                    (long long)c->vocab);
            dst[n++] = (int32_t)t->valuedouble;
        }
        c->stops[c->num_stops].ids = dst;
        c->stops[c->num_stops++].len = n;
    }
    return 0;
}

/*
 * The rules that tie keys together, named by key, then the oracle as the final judge of anything
 * else (top-k against experts, ...). The EOS rules are the oracle's own: a non-EOS draw picks
 * among vocab - 1 tokens, so a model with an EOS token needs two.
 */
static int check_model(const sr_engine_config *c, const sr_spec_ctx *x, const cJSON *m)
{
    const cJSON *eos = member(m, "eos_id"), *voc = member(m, "vocab");
    if (c->eos_id >= c->vocab)
        return sr_spec_fail(x,
                            eos   ? eos
                            : voc ? voc
                                  : m,
                            "model.eos_id is %lld but must be -1 or below model.vocab (%lld)",
                            (long long)c->eos_id, (long long)c->vocab);
    if (c->eos_id >= 0 && c->vocab < 2)
        return sr_spec_fail(x, voc ? voc : m,
                            "model.vocab is %lld but must be at least 2 when model.eos_id is a "
                            "token (%lld; -1 means none)",
                            (long long)c->vocab, (long long)c->eos_id);
    sr_oracle_model om = sr_engine_config_model(c);
    sr_oracle *o = NULL;
    sr_err e2 = SR_ERR_INIT;
    int rc = sr_oracle_new(&o, &om, &e2);
    sr_oracle_free(o);
    if (rc == SR_E_NOMEM)
        return sr_err_set(x->err, rc, "%s", e2.msg);
    return rc ? sr_spec_fail(x, m, "model: %s", e2.msg) : 0;
}

int sr_spec_parse_model(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *m, const char *what)
{
    const sr_json_doc *d = x->doc;
    sr_err *err = x->err;
    int rc = what ? sr_json_check_keys(d, m, what, sr_spec_section_keys("model"), err) : 0;
    int64_t v;
    if (!rc)
        rc = parse_name(c, x, m);
    if (!rc)
        rc = sr_json_get_int(d, m, "vocab", 0, 1, SR_ORACLE_MAX_VOCAB, c->vocab, &c->vocab, err);
    if (!rc && !(rc = sr_json_get_int(d, m, "layers", 0, 1, SR_ORACLE_MAX_LAYERS, c->num_layers, &v,
                                      err))) {
        c->num_layers = (int)v;
        for (int i = 0; i < c->num_layers; i++)
            c->layer_indices[i] = i;
    }
    if (!rc && member(m, "layer_indices"))
        rc = parse_layer_indices(c, x, m, member(m, "layer_indices"));
    if (!rc)
        rc = sr_json_get_int(d, m, "experts", 0, 1, SR_ORACLE_MAX_EXPERTS, c->experts, &c->experts,
                             err);
    if (!rc && !(rc = sr_json_get_int(d, m, "topk", 0, 1, SR_ORACLE_MAX_TOPK, c->topk, &v, err)))
        c->topk = (int)v;
    if (!rc)
        rc = sr_json_get_int(d, m, "eos_id", 0, -1, SR_ORACLE_MAX_VOCAB - 1, c->eos_id, &c->eos_id,
                             err);
    if (!rc)
        rc = sr_json_get_double(d, m, "eos_rate", 0, 0, 1, c->eos_rate, &c->eos_rate, err);
    if (!rc)
        rc = sr_json_get_double(d, m, "logprob_scale", 0, 0, SR_ORACLE_MAX_LP_SCALE,
                                c->logprob_scale, &c->logprob_scale, err);
    if (!rc)
        rc = sr_json_get_double(d, m, "nonfinite_rate", 0, 0, 1, c->nonfinite_rate,
                                &c->nonfinite_rate, err);
    if (!rc && member(m, "stop_sequences"))
        rc = parse_stops(c, x, member(m, "stop_sequences"));
    return rc ? rc : check_model(c, x, m);
}

/* The registry is the judge of a definition; `e2` carries its message to the caller. */
static int load_definition(sr_fields *reg, const cJSON *e, const char *source, sr_err *e2)
{
    char *txt = cJSON_PrintUnformatted(e);
    if (!txt)
        return sr_err_set(e2, SR_E_NOMEM, "cannot print a field definition");
    sr_buf b = SR_BUF_INIT;
    int rc = sr_buf_printf(&b, e2, "{\"fields\":[%s]}", txt);
    free(txt);
    if (!rc)
        rc = sr_fields_load_json(reg, b.data, b.len, source, e2);
    sr_buf_release(&b);
    return rc;
}

/* A definition the engine emits: packed, not a built-in, listed once, with a dtype it can
 * write. */
static int check_extra(const sr_engine_config *c, const sr_field_def *def, sr_err *e2)
{
    if (def->kind != SR_FIELD_PACKED)
        return sr_err_set(e2, SR_E_FIELD_DEF, "the engine emits packed fields only");
    if (strcmp(def->name, "routed_experts") == 0 ||
        strcmp(def->name, "rollout_sample_support") == 0 || strcmp(def->name, "token_ids") == 0)
        return sr_err_set(e2, SR_E_FIELD_DEF, "%s is a built-in; list it by name", def->name);
    for (int i = 0; i < c->n_extra; i++)
        if (strcmp(c->extra[i].name, def->name) == 0)
            return sr_err_set(e2, SR_E_FIELD_DEF, "%s is listed twice", def->name);
    if (!sr_gen_extra_dtypes(def))
        return sr_err_set(e2, SR_E_FIELD_DEF,
                          "%s is canonical but allows none of uint8, int16, int32", def->name);
    return 0;
}

static int add_extra(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *e)
{
    if (c->n_extra == SR_ENGINE_MAX_EXTRA)
        return sr_spec_fail(x, e, "at most %d fields may be emitted from a definition",
                            SR_ENGINE_MAX_EXTRA);
    sr_fields *reg = NULL;
    sr_err e2 = SR_ERR_INIT;
    int rc = sr_fields_new(&reg, &e2);
    if (!rc)
        rc = load_definition(reg, e, "definition", &e2);
    const sr_field_def *def = rc ? NULL : sr_fields_at(reg, 0);
    if (!rc && !def)
        rc = sr_err_set(&e2, SR_E_FIELD_DEF, "the definition defines no field");
    if (!rc)
        rc = check_extra(c, def, &e2);
    if (!rc)
        c->extra[c->n_extra++] = *def;
    sr_fields_free(reg);
    if (rc == SR_E_NOMEM)
        return sr_err_set(x->err, rc, "%s", e2.msg);
    return rc ? sr_spec_fail(x, e, "%s", e2.msg) : 0;
}

static int add_client_definition(sr_fields *client, const sr_spec_ctx *x, const cJSON *e, int index)
{
    char src[32];
    snprintf(src, sizeof(src), "fields[%d]", index);
    sr_err e2 = SR_ERR_INIT;
    int rc = load_definition(client, e, src, &e2);
    if (rc == SR_E_NOMEM)
        return sr_err_set(x->err, rc, "%s", e2.msg);
    return rc ? sr_spec_fail(x, e, "%s", e2.msg) : 0;
}

int sr_spec_parse_fields(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *f,
                         sr_spec_defs defs, sr_fields *client)
{
    if (defs == SR_SPEC_DEFS_CLIENT && !client)
        return sr_err_set(x->err, SR_E_INVAL, "fields: no client registry to add definitions to");
    if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) > SR_FIELDS_MAX)
        return sr_spec_fail(x, f, "fields must be an array of at most %d names or definitions",
                            SR_FIELDS_MAX);
    c->routes = c->support = 0;
    if (defs == SR_SPEC_DEFS_EMIT)
        c->n_extra = 0;
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, f)
    {
        int rc = 0;
        if (cJSON_IsString(e) && strcmp(e->valuestring, "routed_experts") == 0)
            c->routes = 1;
        else if (cJSON_IsString(e) && strcmp(e->valuestring, "rollout_sample_support") == 0)
            c->support = 1;
        else if (cJSON_IsObject(e) && defs == SR_SPEC_DEFS_EMIT)
            rc = add_extra(c, x, e);
        else if (cJSON_IsObject(e) && defs == SR_SPEC_DEFS_CLIENT)
            rc = add_client_definition(client, x, e, i);
        else if (!cJSON_IsObject(e))
            rc = sr_spec_fail(x, e,
                              "a fields entry is \"routed_experts\", \"rollout_sample_support\" "
                              "or a packed-field definition object (lib/sr_fields.h)");
        if (rc)
            return rc;
        i++;
    }
    return 0;
}
