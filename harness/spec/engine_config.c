/* The engine config: defaults, the engine-side sections and the loader (engine_config.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_config.h"
#include "sr_buf.h"
#include "sr_file.h"
#include "sr_suggest.h"
#include "sr_weights.h"

static int check_section(const sr_spec_ctx *x, const cJSON *obj, const char *section,
                         const char *what)
{
    return what ? sr_json_check_keys(x->doc, obj, what, sr_spec_section_keys(section), x->err) : 0;
}

int sr_spec_parse_weights(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *w,
                          const char *what)
{
    const sr_json_doc *d = x->doc;
    sr_err *err = x->err;
    int rc = check_section(x, w, "weights", what);
    int64_t v;
    if (!rc &&
        !(rc = sr_json_get_int(d, w, "total_bytes", 0, (int64_t)SR_WEIGHTS_MIN_BYTES,
                               (int64_t)SR_WEIGHTS_MAX_BYTES, (int64_t)c->weight_bytes, &v, err)))
        c->weight_bytes = (size_t)v;
    if (!rc && !(rc = sr_json_get_int(d, w, "expert_tensors", 0, 1, SR_WEIGHTS_MAX_EXPERTS,
                                      c->expert_tensors, &v, err)))
        c->expert_tensors = (int)v;
    if (!rc)
        rc = sr_json_get_int(d, w, "version", 0, 0, SR_WEIGHTS_MAX_VERSION, c->weight_version,
                             &c->weight_version, err);
    if (!rc)
        rc = sr_json_get_double(d, w, "tensor_change_rate", 0, 0, 1, c->tensor_change_rate,
                                &c->tensor_change_rate, err);
    if (!rc)
        rc = sr_json_get_double(d, w, "block_change_rate", 0, 0, 1, c->block_change_rate,
                                &c->block_change_rate, err);
    return rc;
}

int sr_spec_parse_timing(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *t,
                         const char *what)
{
    int rc = check_section(x, t, "timing", what);
    if (!rc)
        rc = sr_json_get_double(x->doc, t, "prefill_ms", 0, 0, SR_ENGINE_MAX_TIMING_MS,
                                c->prefill_ms, &c->prefill_ms, x->err);
    if (!rc)
        rc = sr_json_get_double(x->doc, t, "decode_ms_per_token", 0, 0, SR_ENGINE_MAX_TIMING_MS,
                                c->decode_ms, &c->decode_ms, x->err);
    return rc;
}

/* server.sync_dirs: null (none), or absolute paths the engine may keep weight-sync state under. */
static int parse_sync_dirs(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *a)
{
    if (!a || cJSON_IsNull(a))
        return 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > SR_ENGINE_MAX_SYNC_DIRS)
        return sr_spec_fail(x, a, "server.sync_dirs must be null or an array of at most %d paths",
                            SR_ENGINE_MAX_SYNC_DIRS);
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        size_t len = cJSON_IsString(e) ? strlen(e->valuestring) : 0;
        if (!cJSON_IsString(e) || e->valuestring[0] != '/' || len >= SR_ENGINE_SYNC_DIR_MAX)
            return sr_spec_fail(x, e,
                                "server.sync_dirs entries must be absolute paths of 1..%d bytes",
                                SR_ENGINE_SYNC_DIR_MAX - 1);
        memcpy(c->sync_dirs[n++], e->valuestring, len + 1);
    }
    c->n_sync_dirs = n;
    return 0;
}

int sr_spec_parse_server(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *s,
                         const char *what)
{
    const sr_json_doc *d = x->doc;
    sr_err *err = x->err;
    int rc = check_section(x, s, "server", what);
    int64_t v;
    if (!rc && !(rc = sr_json_get_int(d, s, "threads", 0, 1, 64, c->threads, &v, err)))
        c->threads = (int)v;
    if (!rc &&
        !(rc = sr_json_get_int(d, s, "max_connections", 0, 1, 65536, c->max_connections, &v, err)))
        c->max_connections = (int)v;
    if (!rc && !(rc = sr_json_get_int(d, s, "max_body_bytes", 0, 1024, (int64_t)1 << 32,
                                      (int64_t)c->max_body_bytes, &v, err)))
        c->max_body_bytes = (size_t)v;
    if (!rc && !(rc = sr_json_get_int(d, s, "max_response_bytes", 0, 4096, (int64_t)1 << 34,
                                      (int64_t)c->max_response_bytes, &v, err)))
        c->max_response_bytes = (size_t)v;
    if (!rc)
        rc = sr_json_get_int(d, s, "max_tokens_default", 0, 1, SR_ORACLE_MAX_SEQ,
                             c->max_tokens_default, &c->max_tokens_default, err);
    if (!rc)
        rc =
            sr_json_get_int(d, s, "max_seq", 0, 2, SR_ORACLE_MAX_SEQ, c->max_seq, &c->max_seq, err);
    if (!rc && !(rc = sr_json_get_int(d, s, "world_size", 0, 1, 1 << 20, c->world_size, &v, err)))
        c->world_size = (int)v;
    if (!rc)
        rc = sr_json_get_bool(d, s, "lora", 0, c->lora, &c->lora, err);
    if (!rc && !(rc = sr_json_get_int(d, s, "header_timeout_ms", 0, 10, 600000,
                                      c->header_timeout_ms, &v, err)))
        c->header_timeout_ms = (int)v;
    if (!rc && !(rc = sr_json_get_int(d, s, "body_timeout_ms", 0, 10, 3600000, c->body_timeout_ms,
                                      &v, err)))
        c->body_timeout_ms = (int)v;
    if (!rc && !(rc = sr_json_get_int(d, s, "max_pending_connections", 0, 1, 65536, c->max_pending,
                                      &v, err)))
        c->max_pending = (int)v;
    if (!rc &&
        !(rc = sr_json_get_int(d, s, "max_queued_requests", 0, 0, 65536, c->max_queued, &v, err)))
        c->max_queued = (int)v;
    return rc ? rc : parse_sync_dirs(c, x, cJSON_GetObjectItemCaseSensitive(s, "sync_dirs"));
}

/* A string member `key` of `parent` naming a row of a table: absent keeps *out; a name `lookup`
 * does not know is an error at the key saying what it `must be`. */
/* The table names as functions of an int, for parse_table_name's suggestion. */
static const char *sync_name(int i)
{
    return sr_sync_dialect_name((sr_sync_dialect)i);
}

static const char *dialect_name(int i)
{
    return sr_dialect_name((sr_dialect)i);
}

static const char *stack_name(int i)
{
    return sr_stack_name((sr_stack)i);
}

static int parse_table_name(const sr_spec_ctx *x, const cJSON *parent, const char *key,
                            int (*lookup)(const char *), const char *(*name_of)(int), int count,
                            const char *must_be, int *out)
{
    const char *s = NULL;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(parent, key);
    int rc = n ? sr_json_get_string(x->doc, parent, key, 1, NULL, &s, x->err) : 0;
    if (rc || !n)
        return rc;
    int d = lookup(s);
    if (d < 0) {
        const char *names[16];
        for (int i = 0; i < count && i < 16; i++)
            names[i] = name_of(i);
        const char *near = sr_suggest_closest(s, names, (size_t)(count < 16 ? count : 16));
        return sr_spec_fail(x, n, "%s must be %s, not \"%.40s\"%s%s%s", key, must_be, s,
                            near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    *out = d;
    return 0;
}

int sr_spec_parse_sync_dialect(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent)
{
    int d = (int)c->sync_dialect;
    int rc = parse_table_name(x, parent, "sync_dialect", sr_sync_dialect_lookup, sync_name,
                              SR_SYNC_DIALECT_COUNT, "\"skyrl\", \"vllm\" or \"sglang\"", &d);
    c->sync_dialect = (sr_sync_dialect)d;
    if (!rc && cJSON_GetObjectItemCaseSensitive(parent, "sync_dialect"))
        c->sync_dialect_given = 1;
    return rc;
}

int sr_spec_parse_stack(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent)
{
    int st = (int)c->stack;
    int rc = cJSON_IsObject(parent)
                 ? parse_table_name(x, parent, "stack", sr_stack_lookup, stack_name, SR_STACK_COUNT,
                                    "\"2079\" or \"2086\"", &st)
                 : 0;
    c->stack = (sr_stack)st;
    return rc;
}

static const char *version_name(int i)
{
    return sr_sync_api_name((sr_sync_api)i);
}

int sr_spec_parse_sync_version(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent)
{
    int v = (int)c->sync_version;
    int rc = parse_table_name(x, parent, "sync_version", sr_sync_api_lookup, version_name,
                              SR_SYNC_API_COUNT, "\"vllm#50902\" or \"vllm#31943\"", &v);
    c->sync_version = (sr_sync_api)v;
    return rc;
}

int sr_spec_parse_omit(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent)
{
    int64_t v;
    int rc = sr_json_get_bool(x->doc, parent, "omit_prefix_routes", 0, c->omit_prefix,
                              &c->omit_prefix, x->err);
    if (!rc && !(rc = sr_json_get_int(x->doc, parent, "prefix_block", 0, 1, 4096, c->prefix_block,
                                      &v, x->err)))
        c->prefix_block = v;
    /* vllm#57025 is a vLLM server flag: no other wire has a start that omission could move. */
    if (!rc && c->omit_prefix && c->dialect != SR_DIALECT_VLLM)
        rc = sr_spec_fail(x, cJSON_GetObjectItemCaseSensitive(parent, "omit_prefix_routes"),
                          "omit_prefix_routes needs the vllm dialect (vllm-project/vllm#57025), "
                          "not %s",
                          sr_dialect_name(c->dialect));
    return rc;
}

int sr_spec_parse_masked(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(parent, "masked_padding");
    if (!m || cJSON_IsNull(m))
        return 0;
    if (!cJSON_IsObject(m))
        return sr_spec_fail(x, m, "masked_padding must be an object {\"chunk\", \"rows\"}");
    static const char *const keys[] = {"chunk", "rows", NULL};
    for (const cJSON *it = m->child; it; it = it->next) {
        int known = 0;
        for (int i = 0; keys[i]; i++)
            known |= strcmp(it->string, keys[i]) == 0;
        if (!known)
            return sr_spec_fail(x, it, "masked_padding: unknown key '%s' (chunk, rows)",
                                it->string);
    }
    int64_t chunk, rows;
    int rc = sr_json_get_int(x->doc, m, "chunk", 1, 1, 1 << 20, 0, &chunk, x->err);
    if (!rc)
        rc = sr_json_get_int(x->doc, m, "rows", 0, 1, chunk, 1, &rows, x->err);
    /* sglang#36404 is SGLang's capture site: no other wire sends its -1. */
    if (!rc && c->dialect != SR_DIALECT_SGLANG)
        rc = sr_spec_fail(x, m,
                          "masked_padding needs the sglang dialect (sgl-project/sglang#36404), "
                          "not %s",
                          sr_dialect_name(c->dialect));
    if (!rc) {
        c->mask_chunk = chunk;
        c->mask_rows = rows;
    }
    return rc;
}

int sr_spec_parse_dialect(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *parent)
{
    int d = (int)c->dialect;
    char want[SR_DIALECT_NAMES_MAX + 8], names[SR_DIALECT_NAMES_MAX];
    snprintf(want, sizeof(want), "one of %s", sr_dialect_names(names, sizeof(names), ", "));
    int rc = parse_table_name(x, parent, "dialect", sr_dialect_lookup, dialect_name,
                              SR_DIALECT_COUNT, want, &d);
    c->dialect = (sr_dialect)d;
    if (!rc && !c->sync_dialect_given && cJSON_GetObjectItemCaseSensitive(parent, "dialect"))
        c->sync_dialect = sr_dialect_sync_dialect((sr_dialect)d);
    return rc;
}

int sr_spec_parse_faults(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *faults,
                         const char *what)
{
    sr_fault_plan *plan = NULL;
    const cJSON *where = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = sr_fault_plan_parse(&plan, &where, faults, &e);
    if (rc == SR_E_NOMEM)
        return sr_err_set(x->err, rc, "%s: %s", what, e.msg);
    if (rc)
        return sr_spec_fail(x, where ? where : faults, "%s: %s", what, e.msg);
    sr_fault_plan_free(c->faults);
    c->faults = plan;
    return 0;
}

int sr_spec_check_extra_wire(const sr_engine_config *c, const sr_spec_ctx *x, const cJSON *root)
{
    for (int i = 0; i < c->n_extra; i++) {
        sr_field_def w;
        sr_err e = SR_ERR_INIT;
        int rc = sr_dialect_field_def(&w, &c->extra[i], c->dialect, &e);
        if (rc)
            return sr_spec_fail(x, cJSON_GetObjectItemCaseSensitive(root, "fields"), "%s: %s",
                                sr_code_name(rc), e.msg);
    }
    return 0;
}

/* A config problem of any kind is engine.invalid_config, as the engine has always said. */
static int recode(int rc, sr_err *err)
{
    if (rc && rc != SR_E_NOMEM) {
        if (err)
            err->code = SR_E_ENGINE_CONFIG;
        return SR_E_ENGINE_CONFIG;
    }
    return rc;
}

/*
 * The sections of either shape: `eng` is the root for an engine config, the `engines` object
 * for a scenario, whose other keys the scenario loader owns.
 */
static int parse_sections(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *root,
                          const cJSON *eng, int scenario)
{
    const sr_json_doc *d = x->doc;
    int rc = 0;
    int64_t v;
    const cJSON *n;
    if ((n = cJSON_GetObjectItemCaseSensitive(root, "model")))
        rc = sr_spec_parse_model(c, x, n, "model");
    if (!rc && (n = cJSON_GetObjectItemCaseSensitive(root, "weights")))
        rc = sr_spec_parse_weights(c, x, n, "weights");
    if (!rc && (n = cJSON_GetObjectItemCaseSensitive(root, "fields")))
        rc =
            sr_spec_parse_fields(c, x, n, scenario ? SR_SPEC_DEFS_IGNORE : SR_SPEC_DEFS_EMIT, NULL);
    if (!rc && !(rc = sr_json_get_int(d, eng, "sample_support_k", 0, 1, SR_ENGINE_MAX_SUPPORT_K,
                                      c->support_k, &v, x->err)))
        c->support_k = (int)v;
    if (!rc &&
        !(rc = sr_json_get_int(d, eng, "count", 0, 1, SR_ENGINE_MAX_COUNT, c->count, &v, x->err)))
        c->count = (int)v;
    if (!rc)
        rc = sr_spec_parse_sync_dialect(c, x, eng);
    if (!rc)
        rc = sr_spec_parse_sync_version(c, x, eng);
    if (!rc)
        rc = sr_spec_parse_dialect(c, x, eng);
    if (!rc)
        rc = sr_spec_parse_omit(c, x, eng);
    if (!rc)
        rc = sr_spec_parse_masked(c, x, eng);
    /* The stack is the scenario's client.stack: its engines speak what its client speaks. */
    if (!rc)
        rc = sr_spec_parse_stack(
            c, x, scenario ? cJSON_GetObjectItemCaseSensitive(root, "client") : root);
    if (!rc)
        rc = sr_spec_check_extra_wire(c, x, root);
    if (!rc && (n = cJSON_GetObjectItemCaseSensitive(eng, "timing")))
        rc = sr_spec_parse_timing(c, x, n, "timing");
    if (!rc && (n = cJSON_GetObjectItemCaseSensitive(eng, "server")))
        rc = sr_spec_parse_server(c, x, n, "server");
    if (!rc && (n = cJSON_GetObjectItemCaseSensitive(eng, "faults")))
        rc = sr_spec_parse_faults(c, x, n, scenario ? "engines.faults" : "faults");
    return rc;
}

/* The top-level keys of an engine config besides the sections. */
static int parse_identity(sr_engine_config *c, const sr_spec_ctx *x, const cJSON *root,
                          int scenario, int index)
{
    int64_t v;
    const char *s;
    int rc =
        sr_json_get_int(x->doc, root, "seed", 0, 0, SR_SPEC_SEED_MAX, (int64_t)c->seed, &v, x->err);
    if (!rc)
        c->seed = (uint64_t)v;
    c->index = index;
    if (scenario || rc)
        return rc;
    if (!(rc = sr_json_get_int(x->doc, root, "index", 0, 0, 63, index, &v, x->err)))
        c->index = (int)v;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
    if (rc || !id)
        return rc;
    rc = sr_json_get_string(x->doc, root, "id", 1, NULL, &s, x->err);
    if (!rc && (strlen(s) == 0 || strlen(s) >= sizeof(c->id)))
        rc = sr_spec_fail(x, id, "id must be 1..%zu bytes", sizeof(c->id) - 1);
    if (!rc) {
        snprintf(c->base_id, sizeof(c->base_id), "%s", s);
        c->has_id = 1;
    }
    return rc;
}

int sr_engine_config_parse(sr_engine_config *c, const char *text, size_t len, const char *source,
                           int index, sr_err *err)
{
    sr_engine_config_defaults(c);
    if (index < 0 || index > 63)
        return sr_err_set(err, SR_E_ENGINE_CONFIG, "engine index %d is outside 0..63", index);
    sr_json_doc *d = NULL;
    int rc = sr_json_parse(&d, text, len, source, 0, err);
    if (rc)
        return recode(rc, err);
    sr_spec_ctx x = {d, SR_E_ENGINE_CONFIG, err};
    const cJSON *root = sr_json_root(d);
    const cJSON *eng = cJSON_GetObjectItemCaseSensitive(root, "engines");
    int scenario = eng && cJSON_IsObject(eng);
    if (!cJSON_IsObject(root))
        rc = sr_spec_fail(&x, root, "an engine config must be an object");
    else if (!scenario)
        rc = check_section(&x, root, "", "engine config");
    if (!scenario)
        eng = root;
    if (!rc)
        rc = parse_identity(c, &x, root, scenario, index);
    if (!rc)
        rc = parse_sections(c, &x, root, eng, scenario);
    sr_engine_config_id_for(c->id, sizeof(c->id), c, c->index);
    sr_json_free(d);
    if (rc) {
        sr_fault_plan_free(c->faults);
        c->faults = NULL;
    }
    return recode(rc, err);
}

int sr_engine_config_load(sr_engine_config *c, const char *path, int index, sr_err *err)
{
    sr_engine_config_defaults(c);
    sr_buf b = SR_BUF_INIT;
    int rc = sr_file_read(&b, path, SR_JSON_DEFAULT_MAX, err);
    if (rc)
        sr_err_prefix(err, "engine config ");
    else
        rc = sr_engine_config_parse(c, b.data ? b.data : "", b.len, path, index, err);
    sr_buf_release(&b);
    return rc;
}
