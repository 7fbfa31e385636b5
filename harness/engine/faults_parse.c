/* Parsing of fault plans (faults.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults_priv.h"

typedef struct pctx {
    size_t index;
    const char *kind;
    sr_err *err;
} pctx;

#define FAIL(pc, ...) fail_at(pc, __VA_ARGS__)

__attribute__((format(printf, 2, 3))) static int fail_at(const pctx *pc, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sr_err_set(pc->err, SR_E_FAULT_SPEC, "fault %zu (%s): %s", pc->index,
                      pc->kind ? pc->kind : "?", msg);
}

static int get_int(const pctx *pc, const cJSON *obj, const char *key, int64_t lo, int64_t hi,
                   int64_t *out, int *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return FAIL(pc, "\"%s\" must be an integer in [%lld, %lld]", key, (long long)lo,
                    (long long)hi);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int get_num(const pctx *pc, const cJSON *obj, const char *key, double lo, double hi,
                   double *out, int *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return FAIL(pc, "\"%s\" must be a number in [%g, %g]", key, lo, hi);
    *out = v->valuedouble;
    return 0;
}

static int get_str(const pctx *pc, const cJSON *obj, const char *key, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap || v->valuestring[0] == '\0')
        return FAIL(pc, "\"%s\" must be a non-empty string shorter than %zu bytes", key, cap);
    strcpy(out, v->valuestring);
    return 0;
}

/* A list key may hold one integer or an array of them. */
static int get_int_list(const pctx *pc, const cJSON *obj, const char *key, int64_t lo, int64_t hi,
                        int64_t *out, int *n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *n = 0;
    if (!v)
        return 0;
    if (cJSON_IsNumber(v)) {
        *n = 1;
        return get_int(pc, obj, key, lo, hi, out, NULL);
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > SR_FAULT_MAX_LIST)
        return FAIL(pc, "\"%s\" must be an integer or an array of 1..%d integers", key,
                    SR_FAULT_MAX_LIST);
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) ||
            e->valuedouble < (double)lo || e->valuedouble > (double)hi)
            return FAIL(pc, "\"%s\" entries must be integers in [%lld, %lld]", key, (long long)lo,
                        (long long)hi);
        out[(*n)++] = (int64_t)e->valuedouble;
    }
    return 0;
}

static int parse_endpoints(const pctx *pc, const cJSON *obj, const kind_info *ki, uint32_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "endpoints");
    if (!v) {
        *out = ki->dflt_eps;
        return 0;
    }
    const cJSON *one = v;
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) < 1)
        return FAIL(pc, "\"endpoints\" must not be empty");
    if (!cJSON_IsArray(v) && !cJSON_IsString(v))
        return FAIL(pc, "\"endpoints\" must be a name or an array of names");
    *out = 0;
    for (const cJSON *e = cJSON_IsArray(v) ? v->child : one; e;
         e = cJSON_IsArray(v) ? e->next : NULL) {
        if (!cJSON_IsString(e))
            return FAIL(pc, "\"endpoints\" entries must be strings");
        if (strcmp(e->valuestring, "any") == 0) {
            *out |= ki->allowed_eps & ((1u << SR_EP_COUNT) - 1);
            continue;
        }
        int found = -1;
        for (int i = 0; i < SR_EP_COUNT; i++)
            if (strcmp(e->valuestring, sr_endpoint_name((sr_endpoint)i)) == 0 ||
                strcmp(e->valuestring, sr_endpoint_path((sr_endpoint)i)) == 0)
                found = i;
        if (found < 0)
            return FAIL(pc, "unknown endpoint \"%s\"", e->valuestring);
        if (!(ki->allowed_eps & EPB(found)))
            return FAIL(pc, "kind %s does not apply to endpoint %s", ki->name,
                        sr_endpoint_name((sr_endpoint)found));
        *out |= EPB(found);
    }
    return 0;
}

static int check_keys(const pctx *pc, const cJSON *obj, unsigned params)
{
    static const struct {
        const char *key;
        unsigned bit;
    } keys[] = {
        {"kind", 0},
        {"id", 0},
        {"engines", 0},
        {"endpoints", 0},
        {"nth", 0},
        {"turn", 0},
        {"probability", 0},
        {"count", 0},
        {"dist", P_LAT},
        {"ms", P_LAT | P_MS},
        {"min_ms", P_LAT},
        {"max_ms", P_LAT},
        {"median_ms", P_LAT},
        {"sigma", P_LAT},
        {"bytes", P_BYTES},
        {"offset", P_OFFSET},
        {"keep_length", P_KEEP},
        {"bytes_per_second", P_BPS},
        {"retry_after", P_RETRY},
        {"text", P_TEXT},
        {"row", P_ROWL},
        {"layer", P_ROWL},
        {"field", P_FIELD},
        {"key", P_KEY},
        {"layers", P_LAYERS},
    };
    const cJSON *m;
    cJSON_ArrayForEach(m, obj)
    {
        int ok = 0;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            if (strcmp(m->string, keys[i].key) == 0)
                ok = keys[i].bit == 0 || (keys[i].bit & params);
        if (!ok)
            return FAIL(pc, "unknown key \"%s\" for this kind", m->string);
        for (const cJSON *o = m->next; o; o = o->next)
            if (strcmp(o->string, m->string) == 0)
                return FAIL(pc, "key \"%s\" appears twice", m->string);
    }
    return 0;
}

static int parse_latency(const pctx *pc, const cJSON *obj, sr_fault *f)
{
    char dist[16] = "fixed";
    int rc = get_str(pc, obj, "dist", dist, sizeof(dist));
    int has_ms, has_min, has_max, has_med;
    double mx = SR_FAULT_MAX_MS;
    f->sigma = 0.5;
    if (!rc)
        rc = get_num(pc, obj, "ms", 0, mx, &f->ms, &has_ms);
    if (!rc)
        rc = get_num(pc, obj, "min_ms", 0, mx, &f->min_ms, &has_min);
    if (!rc)
        rc = get_num(pc, obj, "max_ms", 0, mx, &f->max_ms, &has_max);
    if (!rc)
        rc = get_num(pc, obj, "median_ms", 0, mx, &f->median_ms, &has_med);
    if (!rc)
        rc = get_num(pc, obj, "sigma", 0, 4, &f->sigma, NULL);
    if (rc)
        return rc;
    if (strcmp(dist, "fixed") == 0) {
        f->dist = SR_LAT_FIXED;
        if (!has_ms)
            return FAIL(pc, "dist fixed needs \"ms\"");
    } else if (strcmp(dist, "uniform") == 0) {
        f->dist = SR_LAT_UNIFORM;
        if (!has_min || !has_max || f->min_ms > f->max_ms)
            return FAIL(pc, "dist uniform needs \"min_ms\" <= \"max_ms\"");
    } else if (strcmp(dist, "lognormal") == 0) {
        f->dist = SR_LAT_LOGNORMAL;
        if (!has_med)
            return FAIL(pc, "dist lognormal needs \"median_ms\" (and optionally \"sigma\")");
    } else {
        return FAIL(pc, "\"dist\" must be fixed, uniform or lognormal");
    }
    return 0;
}

static int parse_params(const pctx *pc, const cJSON *obj, sr_fault *f)
{
    unsigned p = sr_fault_kinds[f->kind].params;
    int rc = 0, has;
    if (p & P_LAT)
        rc = parse_latency(pc, obj, f);
    if (!rc && (p & P_MS)) {
        rc = get_num(pc, obj, "ms", 0, SR_FAULT_MAX_MS, &f->ms, &has);
        if (!rc && !has)
            rc = FAIL(pc, "\"ms\" is required");
    }
    if (!rc && (p & P_BYTES))
        rc = get_int(pc, obj, "bytes", 0, INT64_MAX / 2, &f->bytes, &f->has_bytes);
    if (!rc && f->kind == SR_FK_TRUNCATE && !f->has_bytes)
        rc = FAIL(pc, "\"bytes\" is required");
    if (!rc && (p & P_OFFSET))
        rc = get_int(pc, obj, "offset", 0, INT64_MAX / 2, &f->bytes, &f->has_bytes);
    if (!rc && (p & P_KEEP)) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "keep_length");
        if (v && !cJSON_IsBool(v))
            rc = FAIL(pc, "\"keep_length\" must be true or false");
        f->keep_length = v && cJSON_IsTrue(v);
    }
    if (!rc && (p & P_BPS)) {
        rc = get_num(pc, obj, "bytes_per_second", 1, 1e12, &f->bytes_per_second, &has);
        if (!rc && !has)
            rc = FAIL(pc, "\"bytes_per_second\" is required");
    }
    f->retry_after = 1;
    if (!rc && (p & P_RETRY))
        rc = get_int(pc, obj, "retry_after", 0, 86400, &f->retry_after, NULL);
    if (!rc && (p & P_TEXT))
        rc = get_str(pc, obj, "text", f->text, sizeof(f->text));
    if (!rc && (p & P_ROWL))
        rc = get_int(pc, obj, "row", 0, INT32_MAX, &f->row, NULL);
    if (!rc && (p & P_ROWL))
        rc = get_int(pc, obj, "layer", 0, INT32_MAX, &f->layer, NULL);
    strcpy(f->field, "routed_experts");
    if (!rc && (p & P_FIELD))
        rc = get_str(pc, obj, "field", f->field, sizeof(f->field));
    strcpy(f->key, "debug_routes");
    if (!rc && (p & P_KEY))
        rc = get_str(pc, obj, "key", f->key, sizeof(f->key));
    if (!rc && (p & P_LAYERS)) {
        int64_t l[SR_FAULT_MAX_LIST];
        rc = get_int_list(pc, obj, "layers", 0, 1023, l, &f->n_layers);
        for (int i = 0; i < f->n_layers; i++)
            f->layers[i] = (int)l[i];
    }
    return rc;
}

static int parse_one(sr_fault *f, const cJSON *obj, size_t index, sr_err *err)
{
    pctx pc = {index, NULL, err};
    if (!cJSON_IsObject(obj))
        return FAIL(&pc, "a fault must be a JSON object");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    if (!cJSON_IsString(k))
        return FAIL(&pc, "\"kind\" (a string) is required");
    pc.kind = k->valuestring;
    f->kind = SR_FK_COUNT;
    for (int i = 0; i < SR_FK_COUNT; i++)
        if (strcmp(k->valuestring, sr_fault_kinds[i].name) == 0)
            f->kind = (sr_fault_kind)i;
    if (f->kind == SR_FK_COUNT)
        return FAIL(&pc, "unknown fault kind (see `syncroll engine --faults`)");
    const kind_info *ki = &sr_fault_kinds[f->kind];
    int rc = check_keys(&pc, obj, ki->params);
    snprintf(f->id, sizeof(f->id), "%s#%zu", ki->name, index);
    if (!rc)
        rc = get_str(&pc, obj, "id", f->id, sizeof(f->id));
    int64_t list[SR_FAULT_MAX_LIST];
    int n = 0;
    if (!rc)
        rc = get_int_list(&pc, obj, "engines", 0, 63, list, &n);
    f->engines = n ? 0 : ~(uint64_t)0;
    for (int i = 0; i < n; i++)
        f->engines |= (uint64_t)1 << list[i];
    if (!rc)
        rc = parse_endpoints(&pc, obj, ki, &f->endpoints);
    if (!rc)
        rc = get_int_list(&pc, obj, "nth", 1, INT64_MAX / 2, f->nth, &f->n_nth);
    if (!rc)
        rc = get_int_list(&pc, obj, "turn", 1, INT32_MAX, f->turns, &f->n_turns);
    f->probability = 1.0;
    if (!rc)
        rc = get_num(&pc, obj, "probability", 0, 1, &f->probability, NULL);
    f->count = -1;
    if (!rc)
        rc = get_int(&pc, obj, "count", 0, INT64_MAX / 2, &f->count, NULL);
    if (!rc)
        rc = parse_params(&pc, obj, f);
    return rc;
}

int sr_faults_parse(sr_faults **out, const cJSON *plan, uint64_t seed, sr_err *err)
{
    *out = NULL;
    if (plan && !cJSON_IsArray(plan) && !cJSON_IsNull(plan))
        return sr_err_set(err, SR_E_FAULT_SPEC, "faults must be a JSON array of fault objects");
    int n = plan && cJSON_IsArray(plan) ? cJSON_GetArraySize(plan) : 0;
    if (n > SR_FAULT_MAX)
        return sr_err_set(err, SR_E_FAULT_SPEC, "at most %d faults may be declared, got %d",
                          SR_FAULT_MAX, n);
    sr_faults *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a fault plan");
    fs->seed = seed;
    const cJSON *e = n ? plan->child : NULL;
    size_t i = 0;
    for (; e; e = e->next) {
        int rc = parse_one(&fs->f[i], e, i, err);
        if (rc) {
            free(fs);
            return rc;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(fs->f[j].id, fs->f[i].id) == 0) {
                sr_err_set(err, SR_E_FAULT_SPEC, "fault %zu: id \"%s\" is used twice", i,
                           fs->f[i].id);
                free(fs);
                return SR_E_FAULT_SPEC;
            }
        i++;
    }
    fs->n = i;
    *out = fs;
    return 0;
}

int sr_faults_parse_text(sr_faults **out, const char *text, size_t len, uint64_t seed, sr_err *err)
{
    *out = NULL;
    cJSON *doc = cJSON_ParseWithLength(text, len);
    if (!doc)
        return sr_err_set(err, SR_E_FAULT_SPEC, "the fault plan is not valid JSON");
    int rc = sr_faults_parse(out, doc, seed, err);
    cJSON_Delete(doc);
    return rc;
}
