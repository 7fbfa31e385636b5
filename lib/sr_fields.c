#include "sr_fields.h"
#include "sr_fields_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_buf.h"
#include "sr_file.h"
#include "sr_intarray.h"
#include "sr_json.h"

struct sr_fields {
    size_t count;
    sr_field_def defs[SR_FIELDS_MAX];
};

int sr_fields_new(sr_fields **out, sr_err *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a field registry");
    return 0;
}

void sr_fields_free(sr_fields *f)
{
    free(f);
}

size_t sr_fields_count(const sr_fields *f)
{
    return f->count;
}

const sr_field_def *sr_fields_at(const sr_fields *f, size_t i)
{
    return i < f->count ? &f->defs[i] : NULL;
}

const sr_field_def *sr_fields_find(const sr_fields *f, const char *name, size_t len)
{
    for (size_t i = 0; i < f->count; i++) {
        if (f->defs[i].name_len == len && memcmp(f->defs[i].name, name, len) == 0)
            return &f->defs[i];
    }
    return NULL;
}

size_t sr_fields_index(const sr_fields *f, const sr_field_def *def)
{
    return (size_t)(def - f->defs);
}

sr_contract sr_field_contract(const sr_field_def *def)
{
    sr_contract c = SR_CONTRACT_INIT;
    c.name = def->name;
    c.allowed = def->dtypes;
    c.ndim = def->ndim;
    c.canonical_routes = def->canonical;
    c.max_bytes = def->max_bytes;
    return c;
}

/* Checks a definition; returns a static description of the first problem, or NULL. */
static const char *def_problem(const sr_field_def *d, size_t name_len)
{
    if (name_len == 0 || name_len > SR_FIELD_NAME_MAX)
        return "name must be 1 to 64 bytes";
    for (size_t i = 0; i < name_len; i++) {
        unsigned char c = (unsigned char)d->name[i];
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
            return "name must be printable ASCII without '\"' or '\\'";
    }
    if (sr_envelope_is_reserved_key(d->name))
        return "name must not be data, shape or dtype";
    if (d->kind == SR_FIELD_INT_ARRAY)
        return d->min > d->max ? "min must not exceed max" : NULL;
    if (d->kind == SR_FIELD_NESTED) {
        if (d->min > d->max)
            return "min must not exceed max";
        return d->ndim < 1 || d->ndim > SR_NDIM_MAX ? "ndim must be 1 to 8" : NULL;
    }
    if (d->kind == SR_FIELD_STRING) {
        if (d->wire != SR_WIRE_RAW && d->wire != SR_WIRE_NPY && d->wire != SR_WIRE_NRLRE)
            return "wire must be raw, npy or nrlre";
        if (d->wire == SR_WIRE_RAW && (d->dtypes & (d->dtypes - 1)))
            return "a raw string wire has exactly one dtype";
        if (d->canonical)
            return "canonical applies to packed envelopes only";
        /* `"name":""` must cost the body at least 10 bytes beyond the base64, so that the
         * splice's output bound (sr_splice.h, output memory) holds for string blobs too. */
        if (name_len < 5)
            return "a string-blob field's name must be at least 5 bytes";
    } else if (d->kind != SR_FIELD_PACKED) {
        return "kind must be packed, int_array, string or nested";
    }
    if (d->dtypes == 0 || (d->dtypes >> SR_DTYPE_COUNT) || (d->dtypes & 1u))
        return "dtypes must be a non-empty set of known dtypes";
    if (d->ndim < 1 || d->ndim > SR_NDIM_MAX)
        return "ndim must be 1 to 8";
    if (d->canonical) {
        for (int t = 1; t < SR_DTYPE_COUNT; t++) {
            if ((d->dtypes & SR_DTYPE_BIT(t)) && !sr_dtype_is_integer((sr_dtype)t))
                return "canonical requires integer dtypes";
        }
    }
    return sr_fields_constraint_problem(d);
}

int sr_fields_add(sr_fields *f, const sr_field_def *def, sr_err *err)
{
    size_t len = strnlen(def->name, sizeof(def->name));
    const char *why = def_problem(def, len);
    if (why)
        return sr_err_set(err, SR_E_FIELD_DEF, "field '%.*s': %s", (int)(len > 64 ? 64 : len),
                          def->name, why);
    if (sr_fields_find(f, def->name, len))
        return sr_err_set(err, SR_E_FIELD_DEF, "field '%s' is already registered", def->name);
    if (f->count == SR_FIELDS_MAX)
        return sr_err_set(err, SR_E_LIMIT, "a registry holds at most %d fields", SR_FIELDS_MAX);
    sr_field_def *d = &f->defs[f->count++];
    *d = *def;
    d->name_len = len;
    return 0;
}

static sr_field_def packed(const char *name, sr_dtype_set dtypes, int ndim, int canonical)
{
    sr_field_def d;
    memset(&d, 0, sizeof(d));
    d.kind = SR_FIELD_PACKED;
    snprintf(d.name, sizeof(d.name), "%s", name);
    d.dtypes = dtypes;
    d.ndim = ndim;
    d.canonical = canonical;
    d.nullable = 1;
    d.token_rows = 1;
    return d;
}

static sr_field_def int_array(const char *name, int64_t min, int64_t max)
{
    sr_field_def d;
    memset(&d, 0, sizeof(d));
    d.kind = SR_FIELD_INT_ARRAY;
    snprintf(d.name, sizeof(d.name), "%s", name);
    d.min = min;
    d.max = max;
    return d;
}

static int add_builtins(sr_fields *f, int skip_defined, sr_err *err)
{
    sr_field_def defs[3] = {
        packed("routed_experts", SR_ROUTE_DTYPES, 3, 1),
        packed("rollout_sample_support", SR_DTYPE_BIT(SR_DTYPE_INT32), 2, 0),
        int_array("token_ids", 0, INT32_MAX),
    };
    for (int i = 0; i < 3; i++) {
        if (skip_defined && sr_fields_find(f, defs[i].name, strlen(defs[i].name)))
            continue;
        int rc = sr_fields_add(f, &defs[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

int sr_fields_add_builtins(sr_fields *f, sr_err *err)
{
    return add_builtins(f, 0, err);
}

int sr_fields_add_missing_builtins(sr_fields *f, sr_err *err)
{
    return add_builtins(f, 1, err);
}

int sr_fields_narrow(sr_fields **out, const sr_fields *f, const char *const *names, size_t n,
                     sr_err *err)
{
    *out = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!sr_fields_find(f, names[i], strlen(names[i])))
            return sr_err_set(err, SR_E_FIELD_UNKNOWN, "no registered field is named '%.64s'",
                              names[i]);
    }
    sr_fields *r;
    int rc = sr_fields_new(&r, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < f->count; i++) {
        for (size_t j = 0; j < n; j++) {
            if (strcmp(f->defs[i].name, names[j]) == 0) {
                r->defs[r->count++] = f->defs[i];
                break;
            }
        }
    }
    *out = r;
    return 0;
}

/* ---- JSON definitions ---- */

/* sr_json reports json.syntax / json.schema; a definition file turns both into fields.*. */
static int as_def_error(int rc, sr_err *err)
{
    if (rc == SR_E_JSON_SYNTAX || rc == SR_E_JSON_SCHEMA) {
        if (err)
            err->code = SR_E_FIELD_DEF;
        return SR_E_FIELD_DEF;
    }
    return rc;
}

static int read_name(sr_field_def *d, const sr_json_doc *doc, const cJSON *obj, sr_err *err)
{
    const char *name;
    int rc = sr_json_get_string(doc, obj, "name", 1, NULL, &name, err);
    if (rc)
        return rc;
    size_t len = strlen(name);
    if (len > SR_FIELD_NAME_MAX)
        return sr_json_error(doc, cJSON_GetObjectItemCaseSensitive(obj, "name"), err,
                             SR_E_FIELD_DEF, "name must be 1 to 64 bytes");
    memcpy(d->name, name, len + 1);
    return 0;
}

static int read_dtypes(sr_field_def *d, const sr_json_doc *doc, const cJSON *obj, sr_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "dtypes");
    if (!arr)
        return sr_json_error(doc, obj, err, SR_E_FIELD_DEF, "missing required key 'dtypes'");
    if (!cJSON_IsArray(arr) || !arr->child)
        return sr_json_error(doc, arr, err, SR_E_FIELD_DEF,
                             "'dtypes' must be a non-empty array of dtype names");
    for (const cJSON *it = arr->child; it; it = it->next) {
        sr_dtype t;
        if (!cJSON_IsString(it) ||
            sr_dtype_from_name(&t, it->valuestring, strlen(it->valuestring), NULL) != 0)
            return sr_json_error(doc, it, err, SR_E_FIELD_DEF,
                                 "not a NumPy dtype name (uint8, int16, int32, float32, ...)");
        if (d->dtypes & SR_DTYPE_BIT(t))
            return sr_json_error(doc, it, err, SR_E_FIELD_DEF, "dtype '%s' is listed twice",
                                 it->valuestring);
        d->dtypes |= SR_DTYPE_BIT(t);
    }
    return 0;
}

/* "wire": "envelope" (the default), or a string wire: "raw", "npy", "nrlre" (SR_FIELD_STRING). */
static int read_wire(sr_field_def *d, const sr_json_doc *doc, const cJSON *obj, sr_err *err)
{
    static const char *const names[] = {"raw", "npy", "nrlre"};
    const char *w = NULL;
    int rc = sr_json_get_string(doc, obj, "wire", 0, "envelope", &w, err);
    if (rc || strcmp(w, "envelope") == 0)
        return rc;
    for (int i = 0; i < 3; i++) {
        if (strcmp(w, names[i]) == 0) {
            d->kind = SR_FIELD_STRING;
            d->wire = (sr_field_wire)i;
            return 0;
        }
    }
    return sr_json_error(doc, cJSON_GetObjectItemCaseSensitive(obj, "wire"), err, SR_E_FIELD_DEF,
                         "wire must be envelope, raw, npy or nrlre");
}

static int read_packed(sr_field_def *d, const sr_json_doc *doc, const cJSON *obj, sr_err *err)
{
    static const char *const keys[] = {"name",     "dtypes",     "ndim",      "canonical",
                                       "nullable", "token_rows", "max_bytes", "wire",
                                       "shape",    "range",      "finite",    NULL};
    int64_t ndim = 0, maxb = 0;
    int rc = sr_json_check_keys(doc, obj, "a field definition", keys, err);
    memset(d, 0, sizeof(*d));
    d->kind = SR_FIELD_PACKED;
    if (rc || (rc = read_name(d, doc, obj, err)) || (rc = read_dtypes(d, doc, obj, err)) ||
        (rc = sr_json_get_int(doc, obj, "ndim", 0, 1, SR_NDIM_MAX, 0, &ndim, err)) ||
        (rc = sr_json_get_bool(doc, obj, "canonical", 0, 0, &d->canonical, err)) ||
        (rc = sr_json_get_bool(doc, obj, "nullable", 0, 1, &d->nullable, err)) ||
        (rc = sr_json_get_bool(doc, obj, "token_rows", 0, 0, &d->token_rows, err)) ||
        (rc = sr_json_get_int(doc, obj, "max_bytes", 0, 0, INT64_MAX, 0, &maxb, err)))
        return rc;
    d->ndim = (int)ndim;
    d->max_bytes = (size_t)maxb;
    rc = sr_fields_read_constraints(d, doc, obj, err);
    return rc ? rc : read_wire(d, doc, obj, err);
}

static int read_int_array(sr_field_def *d, const sr_json_doc *doc, const cJSON *obj, sr_err *err)
{
    static const char *const keys[] = {"name", "min", "max", NULL};
    int rc = sr_json_check_keys(doc, obj, "an integer-array definition", keys, err);
    memset(d, 0, sizeof(*d));
    d->kind = SR_FIELD_INT_ARRAY;
    if (rc || (rc = read_name(d, doc, obj, err)) ||
        (rc = sr_json_get_int(doc, obj, "min", 0, INT64_MIN, INT64_MAX, 0, &d->min, err)) ||
        (rc = sr_json_get_int(doc, obj, "max", 0, INT64_MIN, INT64_MAX, INT32_MAX, &d->max, err)))
        return rc;
    return 0;
}

/* Reads one list ("fields" or "int_arrays") into the staging registry. */
static int read_list(sr_fields *stage, const sr_fields *base, const sr_json_doc *doc,
                     const cJSON *root, const char *key, sr_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!arr)
        return 0;
    if (!cJSON_IsArray(arr))
        return sr_json_error(doc, arr, err, SR_E_FIELD_DEF, "'%s' must be an array", key);
    for (const cJSON *it = arr->child; it; it = it->next) {
        sr_field_def d;
        int rc = strcmp(key, "fields") == 0 ? read_packed(&d, doc, it, err)
                                            : read_int_array(&d, doc, it, err);
        if (rc)
            return rc;
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (sr_fields_find(base, d.name, strlen(d.name)))
            return sr_json_error(doc, at, err, SR_E_FIELD_DEF, "field '%s' is already registered",
                                 d.name);
        sr_err e = SR_ERR_INIT;
        rc = sr_fields_add(stage, &d, &e);
        if (rc)
            return sr_json_error(doc, at, err, rc, "%s", e.msg);
    }
    return 0;
}

int sr_fields_load_json(sr_fields *f, const char *text, size_t len, const char *source, sr_err *err)
{
    sr_json_doc *doc;
    int rc = sr_json_parse(&doc, text, len, source ? source : "<field definitions>", 1u << 20, err);
    if (rc)
        return as_def_error(rc, err);
    static const char *const keys[] = {"fields", "int_arrays", NULL};
    const cJSON *root = sr_json_root(doc);
    sr_fields *stage;
    rc = sr_json_check_keys(doc, root, "a field registry", keys, err);
    if (!rc)
        rc = sr_fields_new(&stage, err);
    if (!rc) {
        /* Stage on a copy so that a bad definition leaves the registry unchanged. */
        *stage = *f;
        if (!(rc = read_list(stage, f, doc, root, "fields", err)) &&
            !(rc = read_list(stage, f, doc, root, "int_arrays", err)))
            *f = *stage;
        sr_fields_free(stage);
    }
    sr_json_free(doc);
    return as_def_error(rc, err);
}

int sr_fields_load_file(sr_fields *f, const char *path, sr_err *err)
{
    sr_buf b = SR_BUF_INIT;
    int rc = sr_file_read(&b, path, SR_FIELDS_MAX_FILE, err);
    if (!rc)
        rc = sr_fields_load_json(f, b.data, b.len, path, err);
    sr_buf_release(&b);
    return rc;
}
