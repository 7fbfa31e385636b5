/* The bodies of SGLang's weight-sync routes (sgl_req.h). */
#include "sgl_req.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_GROUP "weight_update_group"

static int bad(sr_err *err, const char *route, const char *what)
{
    return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s: %s", route, what);
}

/* The body as a JSON object; an empty body is {} when `empty_ok`. *out is freed by the caller. */
static int object_of(cJSON **out, const char *body, size_t len, int empty_ok, const char *route,
                     sr_err *err)
{
    *out = !len && empty_ok ? cJSON_CreateObject() : cJSON_ParseWithLength(body, len);
    if (cJSON_IsObject(*out))
        return 0;
    cJSON_Delete(*out);
    *out = NULL;
    return bad(err, route, "the request body must be a JSON object");
}

/* An optional boolean (null is the default). */
static int get_bool(int *out, const cJSON *o, const char *key, int dflt, const char *route,
                    sr_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = dflt;
    if (!x || cJSON_IsNull(x))
        return 0;
    if (!cJSON_IsBool(x))
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s: %s must be a boolean", route, key);
    *out = cJSON_IsTrue(x);
    return 0;
}

/* A string of 1..cap-1 bytes without NUL; `dflt` NULL: required. */
static int get_str(char *out, size_t cap, const cJSON *o, const char *key, const char *dflt,
                   const char *route, sr_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if ((!x || cJSON_IsNull(x)) && dflt) {
        snprintf(out, cap, "%s", dflt);
        return 0;
    }
    if (!x)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s needs \"%s\"", route, key);
    size_t n = cJSON_IsString(x) ? strlen(x->valuestring) : 0;
    if (n == 0 || n >= cap)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s: %s must be a string of 1..%zu bytes",
                          route, key, cap - 1);
    memcpy(out, x->valuestring, n + 1);
    return 0;
}

/* A required integer in [lo, hi]. */
static int get_int(int64_t *out, const cJSON *o, const char *key, int64_t lo, int64_t hi,
                   const char *route, sr_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!x)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s needs \"%s\"", route, key);
    double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    if (!(d == floor(d) && d >= (double)lo && d <= (double)hi))
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s: %s must be an integer in [%lld, %lld]",
                          route, key, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return 0;
}

/* weight_version: absent or null (-1), or the decimal digits of a version. */
static int get_version(int64_t *out, const cJSON *o, const char *key, int required,
                       const char *route, sr_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = -1;
    if (!required && (!x || cJSON_IsNull(x)))
        return 0;
    const char *s = cJSON_IsString(x) ? x->valuestring : "";
    size_t n = strlen(s);
    int ok = n >= 1 && n <= 10;
    int64_t v = 0;
    for (size_t i = 0; ok && i < n; i++) {
        ok = s[i] >= '0' && s[i] <= '9';
        v = v * 10 + (s[i] - '0');
    }
    if (!ok || v > SR_SGL_MAX_VERSION)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "%s: %s must be a string of the decimal digits of a weight version "
                          "0..%d",
                          route, key, SR_SGL_MAX_VERSION);
    *out = v;
    return 0;
}

/* load_format: absent, null or a string. */
static int get_format(char *out, const cJSON *o, const char *route, sr_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "load_format");
    out[0] = '\0';
    return !x || cJSON_IsNull(x)
               ? 0
               : get_str(out, SR_SGL_NAME_MAX, o, "load_format", NULL, route, err);
}

int sr_sgl_req_init(sr_sgl_init *out, const char *body, size_t len, sr_err *err)
{
    static const char R[] = "init_weights_update_group";
    memset(out, 0, sizeof(*out));
    cJSON *o;
    int64_t port = 0;
    int rc = object_of(&o, body, len, 0, R, err);
    if (!rc)
        rc = get_str(out->master_address, sizeof(out->master_address), o, "master_address", NULL, R,
                     err);
    if (!rc)
        rc = get_int(&port, o, "master_port", 0, 65535, R, err);
    if (!rc)
        rc = get_int(&out->world_size, o, "world_size", 1, SR_SGL_MAX_WORLD, R, err);
    if (!rc)
        rc = get_int(&out->rank_offset, o, "rank_offset", 0, out->world_size - 1, R, err);
    if (!rc)
        rc = get_str(out->group_name, sizeof(out->group_name), o, "group_name", NULL, R, err);
    if (!rc)
        rc = get_str(out->backend, sizeof(out->backend), o, "backend", "nccl", R, err);
    out->master_port = (int)port;
    cJSON_Delete(o);
    return rc;
}

/* One shape: an array of at most SR_SGL_MAX_DIMS dims in [0, SR_SGL_MAX_DIM] whose product fits
 * in int64. */
static int check_shape(const cJSON *sh, const char *route, sr_err *err)
{
    int64_t elems = 1, dims = 0;
    if (!cJSON_IsArray(sh))
        return bad(err, route, "every shape must be an array of dims");
    for (const cJSON *d = sh->child; d; d = d->next) {
        double v = cJSON_IsNumber(d) ? d->valuedouble : -1;
        if (++dims > SR_SGL_MAX_DIMS || !(v == floor(v) && v >= 0 && v <= (double)SR_SGL_MAX_DIM))
            return sr_err_set(err, SR_E_ENGINE_REQUEST,
                              "%s: a shape has at most %d dims, each an integer in [0, 2^40]",
                              route, SR_SGL_MAX_DIMS);
        if (v > 0 && elems > INT64_MAX / (int64_t)v)
            return bad(err, route, "a shape's element count overflows");
        elems *= (int64_t)v;
    }
    return 0;
}

int sr_sgl_req_dist_obj(sr_sgl_dist *out, const cJSON *o, sr_err *err)
{
    static const char R[] = "update_weights_from_distributed";
    char fmt[SR_SGL_NAME_MAX];
    memset(out, 0, sizeof(*out));
    out->weight_version = -1;
    if (!cJSON_IsObject(o))
        return bad(err, R, "the request body must be a JSON object");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(o, "names");
    const cJSON *dtypes = cJSON_GetObjectItemCaseSensitive(o, "dtypes");
    const cJSON *shapes = cJSON_GetObjectItemCaseSensitive(o, "shapes");
    if (!cJSON_IsArray(names) || !cJSON_IsArray(dtypes) || !cJSON_IsArray(shapes))
        return bad(err, R, "names, dtypes and shapes must be arrays");
    int64_t n = cJSON_GetArraySize(names);
    if (n > SR_SGL_MAX_TENSORS || cJSON_GetArraySize(dtypes) != n ||
        cJSON_GetArraySize(shapes) != n)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "%s: names, dtypes and shapes need the same length (at most %d)", R,
                          SR_SGL_MAX_TENSORS);
    const cJSON *a = names->child, *b = dtypes->child, *c = shapes->child;
    for (; a && b && c; a = a->next, b = b->next, c = c->next) {
        if (!cJSON_IsString(a) || !a->valuestring[0] || !cJSON_IsString(b) || !b->valuestring[0])
            return bad(err, R, "every name and dtype must be a non-empty string");
        int rc = check_shape(c, R, err);
        if (rc)
            return rc;
    }
    out->n = n;
    int rc =
        get_str(out->group_name, sizeof(out->group_name), o, "group_name", DEFAULT_GROUP, R, err);
    if (!rc)
        rc = get_bool(&out->flush_cache, o, "flush_cache", 1, R, err);
    if (!rc)
        rc = get_bool(&out->abort_all_requests, o, "abort_all_requests", 0, R, err);
    if (!rc)
        rc = get_version(&out->weight_version, o, "weight_version", 0, R, err);
    if (!rc)
        rc = get_format(fmt, o, R, err);
    return rc;
}

int sr_sgl_req_dist(sr_sgl_dist *out, const char *body, size_t len, sr_err *err)
{
    cJSON *o;
    int rc = object_of(&o, body, len, 0, "update_weights_from_distributed", err);
    if (!rc)
        rc = sr_sgl_req_dist_obj(out, o, err);
    else
        memset(out, 0, sizeof(*out));
    cJSON_Delete(o);
    return rc;
}

int sr_sgl_req_tensor(sr_sgl_tensor *out, const char *body, size_t len, sr_err *err)
{
    static const char R[] = "update_weights_from_tensor";
    char fmt[SR_SGL_NAME_MAX];
    memset(out, 0, sizeof(*out));
    out->weight_version = -1;
    cJSON *o;
    int rc = object_of(&o, body, len, 0, R, err);
    const cJSON *t = rc ? NULL : cJSON_GetObjectItemCaseSensitive(o, "serialized_named_tensors");
    if (!rc && !cJSON_IsArray(t))
        rc = bad(err, R, "serialized_named_tensors must be an array (one entry per TP rank)");
    for (const cJSON *x = t ? t->child : NULL; !rc && x; x = x->next)
        if (!cJSON_IsString(x) || ++out->n > SR_SGL_MAX_WORLD)
            rc = bad(err, R, "every serialized_named_tensors entry must be a string");
    if (!rc)
        rc = get_format(fmt, o, R, err);
    if (!rc)
        rc = get_bool(&out->flush_cache, o, "flush_cache", 1, R, err);
    if (!rc)
        rc = get_bool(&out->abort_all_requests, o, "abort_all_requests", 0, R, err);
    if (!rc)
        rc = get_version(&out->weight_version, o, "weight_version", 0, R, err);
    cJSON_Delete(o);
    return rc;
}

int sr_sgl_req_disk(sr_sgl_disk *out, const char *body, size_t len, sr_err *err)
{
    static const char R[] = "update_weights_from_disk";
    memset(out, 0, sizeof(*out));
    out->weight_version = -1;
    cJSON *o;
    int rc = object_of(&o, body, len, 0, R, err);
    if (!rc)
        rc = get_str(out->model_path, sizeof(out->model_path), o, "model_path", NULL, R, err);
    if (!rc)
        rc = get_format(out->load_format, o, R, err);
    if (!rc)
        rc = get_bool(&out->abort_all_requests, o, "abort_all_requests", 0, R, err);
    if (!rc)
        rc = get_bool(&out->flush_cache, o, "flush_cache", 1, R, err);
    if (!rc)
        rc = get_version(&out->weight_version, o, "weight_version", 0, R, err);
    cJSON_Delete(o);
    return rc;
}

int sr_sgl_req_destroy(char group_name[SR_SGL_NAME_MAX], const char *body, size_t len, sr_err *err)
{
    static const char R[] = "destroy_weights_update_group";
    cJSON *o;
    group_name[0] = '\0';
    int rc = object_of(&o, body, len, 1, R, err);
    if (!rc)
        rc = get_str(group_name, SR_SGL_NAME_MAX, o, "group_name", DEFAULT_GROUP, R, err);
    cJSON_Delete(o);
    return rc;
}

int sr_sgl_req_pause(sr_sgl_pause_mode *mode, const char *body, size_t len, sr_err *err)
{
    static const char R[] = "pause_generation";
    static const char *const MODES[] = {"abort", "retract", "in_place"};
    char m[SR_SGL_NAME_MAX];
    cJSON *o;
    *mode = SR_SGL_ABORT;
    int rc = object_of(&o, body, len, 1, R, err);
    if (!rc)
        rc = get_str(m, sizeof(m), o, "mode", "abort", R, err);
    cJSON_Delete(o);
    if (rc)
        return rc;
    for (int i = 0; i < 3; i++)
        if (strcmp(m, MODES[i]) == 0) {
            *mode = (sr_sgl_pause_mode)i;
            return 0;
        }
    return bad(err, R, "mode must be abort, retract or in_place");
}

int sr_sgl_req_tags(unsigned *mask, const char *body, size_t len, sr_err *err)
{
    static const char R[] = "memory occupation";
    static const char *const TAGS[] = {"weights", "kv_cache", "cuda_graph"};
    cJSON *o;
    *mask = SR_SGL_TAG_ALL;
    int rc = object_of(&o, body, len, 1, R, err);
    const cJSON *t = rc ? NULL : cJSON_GetObjectItemCaseSensitive(o, "tags");
    if (!rc && t && !cJSON_IsNull(t)) {
        *mask = 0;
        if (!cJSON_IsArray(t))
            rc = bad(err, R, "tags must be null or an array of weights, kv_cache, cuda_graph");
        for (const cJSON *x = t->child; !rc && x; x = x->next) {
            unsigned bit = 0;
            for (unsigned i = 0; cJSON_IsString(x) && i < 3; i++)
                if (strcmp(x->valuestring, TAGS[i]) == 0)
                    bit = 1u << i;
            if (!bit)
                rc = bad(err, R, "every tag must be weights, kv_cache or cuda_graph");
            *mask |= bit;
        }
    }
    cJSON_Delete(o);
    return rc;
}

int sr_sgl_req_version(int64_t *version, int *abort_all, const char *body, size_t len, sr_err *err)
{
    static const char R[] = "update_weight_version";
    cJSON *o;
    *version = -1;
    *abort_all = 0;
    int rc = object_of(&o, body, len, 0, R, err);
    if (!rc)
        rc = get_version(version, o, "new_version", 1, R, err);
    if (!rc)
        rc = get_bool(abort_all, o, "abort_all_requests", 0, R, err);
    cJSON_Delete(o);
    return rc;
}
