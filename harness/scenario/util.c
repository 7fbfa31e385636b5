/* Typed getters of the scenario loader, checked against the key table (scenario_priv.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scenario_priv.h"

/* Most members an object of the format may have (the top level has the most). */
#define MAX_MEMBERS 64

/* 1 if table path `kp` is "<prefix>.<name>" with no further dot, giving the name. */
static const char *child_of(const char *kp, const char *prefix)
{
    size_t n = strlen(prefix);
    if (n == 0)
        return strchr(kp, '.') ? NULL : kp;
    if (strncmp(kp, prefix, n) != 0 || kp[n] != '.')
        return NULL;
    const char *name = kp + n + 1;
    return strchr(name, '.') ? NULL : name;
}

int sr_scn_check_object(scn_parse *p, const cJSON *obj, const char *path)
{
    const char *allowed[MAX_MEMBERS + 1];
    size_t n = 0;
    char star[SR_SCN_NAME_MAX + 16] = "";
    if (strncmp(path, "steps.", 6) == 0 && !strchr(path + 6, '.'))
        snprintf(star, sizeof(star), "steps.*");
    for (size_t i = 0; i < sr_scenario_key_count() && n < MAX_MEMBERS; i++) {
        const char *kp = sr_scenario_key_at(i)->path;
        const char *name = child_of(kp, path);
        if (!name && star[0])
            name = child_of(kp, star);
        if (name)
            allowed[n++] = name;
    }
    allowed[n] = NULL;
    char what[96];
    snprintf(what, sizeof(what), "%s", path[0] ? path : "the scenario");
    return sr_json_check_keys(p->doc, obj, what, allowed, p->err);
}

const cJSON *sr_scn_member(const cJSON *obj, const char *key)
{
    return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

int sr_scn_fail(scn_parse *p, const cJSON *node, const char *fmt, ...)
{
    char msg[SR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sr_json_error(p->doc, node, p->err, SR_E_SCENARIO, "%s", msg);
}

int sr_scn_int(scn_parse *p, const cJSON *obj, const char *key, int64_t lo, int64_t hi,
               int64_t dflt, int nullable, int64_t *out)
{
    const cJSON *v = sr_scn_member(obj, key);
    if (nullable && v && cJSON_IsNull(v)) {
        *out = dflt;
        return 0;
    }
    if (v && !cJSON_IsNumber(v))
        return sr_json_error(p->doc, v, p->err, SR_E_JSON_SCHEMA, "'%s' must be an integer%s", key,
                             nullable ? " or null" : "");
    return sr_json_get_int(p->doc, obj, key, 0, lo, hi, dflt, out, p->err);
}

int sr_scn_num(scn_parse *p, const cJSON *obj, const char *key, double lo, double hi, double dflt,
               double *out)
{
    return sr_json_get_double(p->doc, obj, key, 0, lo, hi, dflt, out, p->err);
}

int sr_scn_bool(scn_parse *p, const cJSON *obj, const char *key, int dflt, int nullable, int *out)
{
    const cJSON *v = sr_scn_member(obj, key);
    if (nullable && v && cJSON_IsNull(v)) {
        *out = dflt;
        return 0;
    }
    if (v && !cJSON_IsBool(v))
        return sr_json_error(p->doc, v, p->err, SR_E_JSON_SCHEMA, "'%s' must be true or false%s",
                             key, nullable ? " or null" : "");
    return sr_json_get_bool(p->doc, obj, key, 0, dflt, out, p->err);
}

int sr_scn_str(scn_parse *p, const cJSON *obj, const char *key, const char *dflt,
               const char *const *choices, const char **out)
{
    int rc = sr_json_get_string(p->doc, obj, key, 0, dflt, out, p->err);
    if (rc || !choices)
        return rc;
    for (const char *const *c = choices; *c; c++)
        if (strcmp(*c, *out) == 0)
            return 0;
    char list[256] = "";
    for (const char *const *c = choices; *c; c++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"",
                 c == choices ? "" : ", ", *c);
    return sr_json_error(p->doc, sr_scn_member(obj, key), p->err, SR_E_JSON_SCHEMA,
                         "'%s' must be one of %s", key, list);
}

int sr_scn_strlist(scn_parse *p, const cJSON *obj, const char *key, size_t maxlen, char **out,
                   int *n)
{
    const cJSON *v = sr_scn_member(obj, key);
    *n = 0;
    if (!v)
        return 0;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > SR_SCN_MAX_LIST)
        return sr_json_error(p->doc, v, p->err, SR_E_JSON_SCHEMA,
                             "'%s' must be an array of at most %d strings", key, SR_SCN_MAX_LIST);
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsString(e) || !e->valuestring[0] || strlen(e->valuestring) >= maxlen)
            return sr_json_error(p->doc, e, p->err, SR_E_JSON_SCHEMA,
                                 "'%s' entries must be strings of 1..%zu bytes", key, maxlen - 1);
        for (int i = 0; i < *n; i++)
            if (strcmp(out[i], e->valuestring) == 0)
                return sr_json_error(p->doc, e, p->err, SR_E_JSON_SCHEMA, "'%s' lists \"%s\" twice",
                                     key, e->valuestring);
        if (!(out[*n] = strdup(e->valuestring)))
            return sr_err_set(p->err, SR_E_NOMEM, "cannot copy a string");
        (*n)++;
    }
    return 0;
}

int sr_scn_folder(scn_parse *p, const cJSON *at, const char *path, const char *holds,
                  const char *what, const char *hint, char *out, size_t cap)
{
    char joined[SR_SCN_PATH_MAX + 16], file[SR_SCN_PATH_MAX + 64];
    const char *slash = strrchr(p->s->path, '/');
    int dir = path[0] == '/' || !slash ? 0 : (int)(slash - p->s->path) + 1; /* with its '/' */
    if (!path[0] || (size_t)snprintf(joined, sizeof joined, "%.*s%s", dir, p->s->path, path) >= cap)
        return sr_scn_fail(p, at, "the path must be 1..%zu bytes", cap - 1);
    char *abs = realpath(joined, NULL);
    struct stat sb;
    int rc = 0;
    if (abs)
        snprintf(file, sizeof file, "%s/%s", abs, holds);
    if (!abs || strlen(abs) >= cap || stat(file, &sb) != 0 || !S_ISREG(sb.st_mode))
        rc = sr_scn_fail(p, at,
                         "no %s at '%s' (%s; a relative path is relative to the scenario's "
                         "folder)",
                         what, joined, hint);
    else
        snprintf(out, cap, "%s", abs);
    free(abs);
    return rc;
}
