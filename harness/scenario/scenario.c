/* Loading a scenario: the top level and the configuration sections (scenario.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario_priv.h"
#include "sr_file.h"
#include "sr_splice.h"
#include "sr_suggest.h"

#define HOUR_MS 3600000

/* The sections the engine config shares are parsed by the one schema (spec/engine_config.h):
 * type and range errors stay json.schema, rules beyond types are scenario.invalid. */
static sr_spec_ctx spec_ctx(const scn_parse *p)
{
    sr_spec_ctx x = {p->doc, SR_E_SCENARIO, p->err};
    return x;
}

static int load_model(scn_parse *p, const cJSON *m)
{
    if (!m)
        return 0;
    sr_spec_ctx x = spec_ctx(p);
    int rc = sr_scn_check_object(p, m, "model");
    return rc ? rc : sr_spec_parse_model(&p->s->engine, &x, m, NULL);
}

/* Definitions go into the client's registry; the array as written is kept for the writer. */
static int load_fields(scn_parse *p, const cJSON *f)
{
    if (!f)
        return 0;
    sr_spec_ctx x = spec_ctx(p);
    int rc = sr_spec_parse_fields(&p->s->engine, &x, f, SR_SPEC_DEFS_CLIENT, p->s->fields);
    if (rc)
        return rc;
    cJSON_Delete(p->s->fields_json);
    p->s->fields_json = cJSON_Duplicate(f, 1);
    return p->s->fields_json ? 0 : sr_err_set(p->err, SR_E_NOMEM, "cannot copy fields");
}

/* The plan is parsed whole by the one schema, so the engine gets it typed, as the loader saw it;
 * an error points at the fault that has it. */
static int parse_faults(scn_parse *p, const cJSON *f)
{
    if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) > SR_FAULT_MAX)
        return sr_scn_fail(p, f, "engines.faults must be an array of at most %d faults",
                           SR_FAULT_MAX);
    sr_spec_ctx x = spec_ctx(p);
    return sr_spec_parse_faults(&p->s->engine, &x, f, "engines.faults");
}

static int parse_urls(scn_parse *p, const cJSON *u)
{
    if (!cJSON_IsArray(u) || cJSON_GetArraySize(u) < 1 ||
        cJSON_GetArraySize(u) > SR_CLIENT_MAX_ENGINES)
        return sr_scn_fail(p, u, "engines.urls must be null or an array of 1..%d URLs",
                           SR_CLIENT_MAX_ENGINES);
    const cJSON *e;
    cJSON_ArrayForEach(e, u)
    {
        if (!cJSON_IsString(e) || strlen(e->valuestring) >= SR_CLIENT_URL_MAX ||
            (strncmp(e->valuestring, "http://", 7) != 0 &&
             strncmp(e->valuestring, "https://", 8) != 0))
            return sr_scn_fail(p, e, "engines.urls entries must be http:// or https:// URLs");
        if (!(p->s->urls[p->s->n_urls++] = strdup(e->valuestring)))
            return sr_err_set(p->err, SR_E_NOMEM, "cannot copy a URL");
    }
    return 0;
}

/* engines.dialects: names of spec/dialect.h's table, each once. */
static int parse_dialects(scn_parse *p, const cJSON *en)
{
    const cJSON *list = sr_scn_member(en, "dialects");
    if (!list)
        return 0;
    if (!cJSON_IsArray(list) || !list->child)
        return sr_scn_fail(p, list, "engines.dialects must be a non-empty list of dialect names");
    unsigned mask = 0;
    for (const cJSON *it = list->child; it; it = it->next) {
        int d = cJSON_IsString(it) ? sr_dialect_lookup(it->valuestring) : -1;
        char names[SR_DIALECT_NAMES_MAX];
        if (d < 0)
            return sr_scn_fail(p, it, "engines.dialects: not a dialect (one of %s)",
                               sr_dialect_names(names, sizeof(names), ", "));
        if (mask & (1u << d))
            return sr_scn_fail(p, it, "engines.dialects names %s twice", it->valuestring);
        mask |= 1u << d;
    }
    p->s->dialects = mask;
    return 0;
}

static int parse_engines(scn_parse *p, const cJSON *en)
{
    sr_scenario *s = p->s;
    sr_engine_config *c = &s->engine;
    int64_t v;
    if (!en)
        return 0;
    int rc = sr_scn_check_object(p, en, "engines");
    if (!rc && !(rc = sr_scn_int(p, en, "count", 1, SR_ENGINE_MAX_COUNT, c->count, 0, &v)))
        c->count = (int)v;
    const cJSON *u = sr_scn_member(en, "urls");
    if (!rc && u && !cJSON_IsNull(u)) {
        rc = parse_urls(p, u);
        if (!rc && sr_scn_member(en, "count") && c->count != s->n_urls)
            return sr_scn_fail(p, u, "engines.urls has %d URLs but engines.count is %d", s->n_urls,
                               c->count);
        c->count = s->n_urls;
    }
    const cJSON *x;
    sr_spec_ctx sx = spec_ctx(p);
    if (!rc && (x = sr_scn_member(en, "timing")) &&
        !(rc = sr_scn_check_object(p, x, "engines.timing")))
        rc = sr_spec_parse_timing(c, &sx, x, NULL);
    if (!rc && (x = sr_scn_member(en, "server")) &&
        !(rc = sr_scn_check_object(p, x, "engines.server")))
        rc = sr_spec_parse_server(c, &sx, x, NULL);
    /* syncroll run adds the run's own sync folder to every engine's list (FORMAT.md). */
    if (!rc && x && c->n_sync_dirs >= SR_ENGINE_MAX_SYNC_DIRS)
        rc = sr_scn_fail(p, sr_scn_member(x, "sync_dirs"),
                         "engines.server.sync_dirs names %d folders; a scenario may name at most "
                         "%d (syncroll run adds the run's own sync folder)",
                         c->n_sync_dirs, SR_ENGINE_MAX_SYNC_DIRS - 1);
    if (!rc && (x = sr_scn_member(en, "faults")))
        rc = parse_faults(p, x);
    if (!rc)
        rc = sr_spec_parse_sync_dialect(c, &sx, en);
    if (!rc)
        rc = sr_spec_parse_sync_version(c, &sx, en);
    if (!rc)
        rc = sr_spec_parse_dialect(c, &sx, en);
    if (!rc)
        rc = parse_dialects(p, en);
    if (!rc)
        rc = sr_spec_parse_omit(c, &sx, en);
    if (!rc && c->omit_prefix && (s->dialects & ~(1u << SR_DIALECT_VLLM)))
        rc = sr_scn_fail(p, sr_scn_member(en, "dialects"),
                         "engines.omit_prefix_routes needs the vllm dialect only "
                         "(vllm-project/vllm#57025); engines.dialects names others");
    if (!rc)
        rc = sr_spec_parse_masked(c, &sx, en);
    if (!rc && c->mask_chunk && (s->dialects & ~(1u << SR_DIALECT_SGLANG)))
        rc = sr_scn_fail(p, sr_scn_member(en, "dialects"),
                         "engines.masked_padding needs the sglang dialect only "
                         "(sgl-project/sglang#36404); engines.dialects names others");
    if (!rc && !(rc = sr_scn_int(p, en, "sample_support_k", 1, SR_ENGINE_MAX_SUPPORT_K,
                                 c->support_k, 0, &v)))
        c->support_k = (int)v;
    if (!rc)
        rc = sr_scn_int(p, en, "ready_timeout_ms", 100, HOUR_MS, s->ready_timeout_ms, 0,
                        &s->ready_timeout_ms);
    if (!rc)
        rc = sr_scn_int(p, en, "stop_grace_ms", 0, HOUR_MS, s->stop_grace_ms, 0, &s->stop_grace_ms);
    return rc;
}

static int parse_quirks(scn_parse *p, const cJSON *q)
{
    if (!q)
        return 0;
    if (!cJSON_IsArray(q))
        return sr_scn_fail(p, q, "client.quirks must be an array of quirk names");
    const cJSON *e;
    cJSON_ArrayForEach(e, q)
    {
        int found = -1;
        for (int i = 0; cJSON_IsString(e) && i < SR_QUIRK_COUNT; i++)
            if (strcmp(sr_quirk_info_of((sr_quirk)i)->name, e->valuestring) == 0)
                found = i;
        if (found < 0) {
            const char *names[SR_QUIRK_COUNT];
            for (int i = 0; i < SR_QUIRK_COUNT; i++)
                names[i] = sr_quirk_info_of((sr_quirk)i)->name;
            char hint[400];
            sr_suggest_text(hint, sizeof(hint), cJSON_IsString(e) ? e->valuestring : "", names,
                            SR_QUIRK_COUNT, "quirks (FORMAT.md, client.quirks)");
            return sr_scn_fail(p, e, "unknown quirk; %s", hint);
        }
        if (p->s->quirks[found])
            return sr_scn_fail(p, e, "quirk %s is listed twice", e->valuestring);
        p->s->quirks[found] = 1;
    }
    return 0;
}

/* client.generate_path: one of the generate routes of every dialect the scenario runs in (its
 * engines.dialect and engines.dialects); kept as the route's index in engines.dialect. */
static int parse_generate_path(scn_parse *p, const cJSON *cl)
{
    const char *path = NULL;
    int rc = sr_scn_str(p, cl, "generate_path", NULL, NULL, &path);
    if (rc || !path)
        return rc;
    sr_scenario *s = p->s;
    unsigned mask = s->dialects | (1u << s->engine.dialect);
    for (int d = 0; d < SR_DIALECT_COUNT; d++) {
        if (!(mask & (1u << d)) || sr_dialect_route_at((sr_dialect)d, path))
            continue;
        const sr_dialect_desc *dd = sr_dialect_get((sr_dialect)d);
        return sr_scn_fail(p, sr_scn_member(cl, "generate_path"),
                           "client.generate_path %s is not a generate route of dialect %s (%s%s%s)",
                           path, dd->name, dd->routes[0].path, dd->routes[1].path ? ", " : "",
                           dd->routes[1].path ? dd->routes[1].path : "");
    }
    const sr_dialect_route *r = sr_dialect_route_at(s->engine.dialect, path);
    s->client.dialect_route = (int)(r - sr_dialect_get(s->engine.dialect)->routes);
    return 0;
}

/* client.pd: a prefill/decode pair among the scenario's engines (client.h, pd_*). */
static int parse_pd(scn_parse *p, const cJSON *pd)
{
    sr_client_opts *o = &p->s->client;
    int64_t pre = 0, dec = 1;
    if (!pd)
        return 0;
    int rc = sr_scn_check_object(p, pd, "client.pd");
    if (!rc)
        rc = sr_scn_int(p, pd, "prefill", 0, SR_CLIENT_MAX_ENGINES - 1, 0, 0, &pre);
    if (!rc)
        rc = sr_scn_int(p, pd, "decode", 0, SR_CLIENT_MAX_ENGINES - 1, 1, 0, &dec);
    if (!rc)
        rc = sr_scn_bool(p, pd, "merge", 1, 0, &o->pd_merge);
    int n = p->s->n_urls ? p->s->n_urls : p->s->engine.count;
    if (!rc && (pre == dec || pre >= n || dec >= n))
        rc = sr_scn_fail(p, pd,
                         "client.pd: prefill %lld and decode %lld must be two of the %d engines",
                         (long long)pre, (long long)dec, n);
    o->pd_prefill = (int)pre;
    o->pd_decode = (int)dec;
    return rc;
}

static int parse_client(scn_parse *p, const cJSON *cl)
{
    sr_client_opts *o = &p->s->client;
    int64_t v;
    const char *t = NULL;
    if (!cl)
        return 0;
    int rc = sr_scn_check_object(p, cl, "client");
    if (!rc &&
        !(rc = sr_scn_int(p, cl, "attempts", 1, SR_CLIENT_MAX_ATTEMPTS, o->max_attempts, 0, &v)))
        o->max_attempts = (int)v;
    if (!rc)
        rc = sr_scn_int(p, cl, "backoff_initial_ms", 0, HOUR_MS, o->backoff_initial_ms, 0,
                        &o->backoff_initial_ms);
    if (!rc)
        rc = sr_scn_int(p, cl, "backoff_max_ms", 0, HOUR_MS, o->backoff_max_ms, 0,
                        &o->backoff_max_ms);
    if (!rc)
        rc = sr_scn_num(p, cl, "jitter", 0, 1, o->jitter, &o->jitter);
    if (!rc)
        rc = sr_scn_int(p, cl, "deadline_ms", 1, SR_SCN_MAX_TIMEOUT, o->deadline_ms, 0,
                        &o->deadline_ms);
    if (!rc)
        rc = sr_scn_int(p, cl, "attempt_timeout_ms", 0, SR_SCN_MAX_TIMEOUT, o->attempt_timeout_ms,
                        0, &o->attempt_timeout_ms);
    if (!rc)
        rc = sr_scn_int(p, cl, "connect_timeout_ms", 1, HOUR_MS, o->connect_timeout_ms, 0,
                        &o->connect_timeout_ms);
    if (!rc)
        rc = sr_scn_int(p, cl, "control_timeout_ms", 1, HOUR_MS, o->control_timeout_ms, 0,
                        &o->control_timeout_ms);
    if (!rc && !(rc = sr_scn_int(p, cl, "max_body_bytes", 1024, (int64_t)1 << 34,
                                 (int64_t)o->max_body, 0, &v)))
        o->max_body = (size_t)v;
    if (!rc && !(rc = sr_scn_int(p, cl, "max_error_body_bytes", 0, (int64_t)1 << 24,
                                 (int64_t)o->max_error_body, 0, &v)))
        o->max_error_body = (size_t)v;
    if (!rc)
        rc = sr_scn_int(p, cl, "concurrency", 1, 256, p->s->concurrency, 0, &p->s->concurrency);
    if (!rc)
        rc = sr_scn_bool(p, cl, "strict_base64", o->strict_base64, 0, &o->strict_base64);
    if (!rc) {
        /* client.stack (spec/stack.h): the client's contract and its engines'. */
        sr_spec_ctx sx = spec_ctx(p);
        rc = sr_spec_parse_stack(&p->s->engine, &sx, cl);
        o->stack = p->s->engine.stack;
    }
    if (!rc)
        rc = parse_generate_path(p, cl);
    if (!rc && !(rc = sr_scn_str(p, cl, "on_abort", "fail", SR_CLIENT_ON_ABORT_NAMES, &t)))
        o->on_abort = strcmp(t, "retry") == 0 ? SR_CLIENT_ABORT_RETRY : SR_CLIENT_ABORT_FAIL;
    if (!rc && !(rc = sr_scn_str(p, cl, "route_start", "held", SR_CLIENT_ROUTE_START_NAMES, &t)))
        o->route_start_zero = strcmp(t, "zero") == 0;
    if (!rc)
        rc = parse_pd(p, sr_scn_member(cl, "pd"));
    if (!rc)
        rc = parse_quirks(p, sr_scn_member(cl, "quirks"));
    return rc;
}

/* weights.transport follows the sync plane unless written: delta for skyrl, broadcast for the
 * others. -1: a transport the plane cannot move; -2: weights.serial_update with a broadcast. */
static int plane_transport(sr_scenario *s)
{
    int skyrl = s->engine.sync_dialect == SR_SYNC_DIALECT_SKYRL;
    if (!s->transport_given)
        snprintf(s->transport, sizeof(s->transport), "%s", skyrl ? "delta" : "broadcast");
    if (strcmp(s->transport, "disk") == 0)
        return s->engine.sync_dialect == SR_SYNC_DIALECT_SGLANG ? 0 : -1;
    if (!skyrl && strcmp(s->transport, "delta") == 0)
        return -1;
    return s->serial_update && strcmp(s->transport, "broadcast") == 0 ? -2 : 0;
}

#define SERIAL_BROADCAST_MSG                                                                       \
    "weights.serial_update needs the delta or disk transport: a broadcast streams its buckets to " \
    "every engine at once"

static int load_weights(scn_parse *p, const cJSON *w)
{
    sr_scenario *s = p->s;
    sr_engine_config *c = &s->engine;
    static const char *const transports[] = {"delta", "broadcast", "disk", NULL};
    const char *t;
    if (!w)
        return 0;
    sr_spec_ctx x = spec_ctx(p);
    int rc = sr_scn_check_object(p, w, "weights");
    if (!rc)
        rc = sr_spec_parse_weights(c, &x, w, NULL);
    if (!rc && !(rc = sr_scn_str(p, w, "transport", "delta", transports, &t)))
        snprintf(s->transport, sizeof(s->transport), "%s", t);
    s->transport_given = sr_scn_member(w, "transport") != NULL;
    /* The trainer's form of vLLM's API, to drive engines of the other form on purpose. */
    static const char *const apis[] = {"vllm#50902", "vllm#31943", NULL};
    if (!rc && sr_scn_member(w, "sync_version") &&
        !(rc = sr_scn_str(p, w, "sync_version", "vllm#50902", apis, &t)))
        s->trainer_api = sr_sync_api_lookup(t);
    if (!rc)
        rc = sr_scn_bool(p, w, "serial_update", 0, 0, &s->serial_update);
    const cJSON *k = sr_scn_member(w, "workers");
    if (!rc && k) {
        rc = sr_scn_check_object(p, k, "weights.workers");
        if (!rc)
            rc = sr_scn_int(p, k, "cap", 1, 1024, s->workers_cap, 0, &s->workers_cap);
        if (!rc)
            rc = sr_scn_int(p, k, "reserved_cores", 0, 1024, s->workers_reserved, 0,
                            &s->workers_reserved);
    }
    return rc;
}

static int parse_pool_trainer(scn_parse *p, const cJSON *pool, const cJSON *tr)
{
    sr_scenario *s = p->s;
    static const char *const aff[] = {"system", "error", NULL};
    static const char *const roles[] = {"policy", "ref", NULL};
    const char *t;
    int rc = 0;
    if (pool) {
        rc = sr_scn_check_object(p, pool, "pool");
        if (!rc)
            rc = sr_scn_int(p, pool, "cores", 1, 1 << 16, -1, 1, &s->pool_cores);
        if (!rc && !(rc = sr_scn_str(p, pool, "affinity", "system", aff, &t)))
            s->affinity_fails = strcmp(t, "error") == 0;
    }
    if (!rc && tr) {
        rc = sr_scn_check_object(p, tr, "trainer");
        if (!rc && !(rc = sr_scn_str(p, tr, "role", "policy", roles, &t)))
            snprintf(s->role, sizeof(s->role), "%s", t);
        if (!rc)
            rc = sr_scn_bool(p, tr, "routing_replay", s->routing_replay, 0, &s->routing_replay);
        if (!rc)
            rc = sr_scn_int(p, tr, "virtual_pipeline_size", 0, 1024, -1, 1, &s->vpp);
        s->vpp_set = s->vpp >= 0;
        if (!s->vpp_set)
            s->vpp = 0;
    }
    return rc;
}

static int check_id(scn_parse *p, const cJSON *root, const char *id)
{
    size_t n = strlen(id);
    int ok = n > 0 && n < SR_SCN_ID_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char ch = id[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '_' || ch == '-';
    }
    if (!ok || id[0] == '.')
        return sr_scn_fail(p, sr_scn_member(root, "id"),
                           "id must be 1..%d bytes of [A-Za-z0-9._-], not starting with '.'",
                           SR_SCN_ID_MAX - 1);
    snprintf(p->s->id, sizeof(p->s->id), "%s", id);
    return 0;
}

static void defaults(sr_scenario *s)
{
    sr_engine_config_defaults(&s->engine);
    s->seed = s->engine.seed;
    s->timeout_ms = 120000;
    s->ready_timeout_ms = 20000;
    s->stop_grace_ms = 5000;
    snprintf(s->transport, sizeof(s->transport), "delta");
    s->trainer_api = -1;
    s->workers_cap = 32;
    s->workers_reserved = 8;
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.max_body = SR_SPLICE_DEFAULT_MAX_BODY;
    s->client = o;
    s->concurrency = 8;
    s->pool_cores = -1;
    s->routing_replay = 1;
    snprintf(s->role, sizeof(s->role), "policy");
    s->expect_verdict = SR_VERDICT_PASS;
    sr_scn_soak_defaults(s);
}

static int parse_top(scn_parse *p, const cJSON *root)
{
    sr_scenario *s = p->s;
    const char *str;
    int64_t v;
    int rc = sr_scn_check_object(p, root, "");
    if (!rc && !(rc = sr_json_get_string(p->doc, root, "id", 1, NULL, &str, p->err)))
        rc = check_id(p, root, str);
    if (!rc && !(rc = sr_json_get_string(p->doc, root, "description", 1, NULL, &str, p->err)))
        rc = (s->description = strdup(str)) ? 0 : SR_E_NOMEM;
    if (!rc)
        rc = sr_scn_strlist(p, root, "tags", SR_SCN_NAME_MAX, s->tags, &s->n_tags);
    if (!rc && !(rc = sr_scn_int(p, root, "seed", 0, SR_SPEC_SEED_MAX, (int64_t)s->seed, 0, &v)))
        s->seed = s->engine.seed = s->client.seed = (uint64_t)v;
    if (!rc)
        rc = sr_scn_int(p, root, "timeout_ms", 1000, SR_SCN_MAX_TIMEOUT, s->timeout_ms, 0,
                        &s->timeout_ms);
    const cJSON *sk = sr_scn_member(root, "skip");
    if (!rc && sk && !cJSON_IsNull(sk)) {
        if (!cJSON_IsString(sk) || !sk->valuestring[0])
            return sr_scn_fail(p, sk, "skip must be null or a non-empty reason");
        rc = (s->skip = strdup(sk->valuestring)) ? 0 : SR_E_NOMEM;
    }
    if (!rc)
        rc = load_model(p, sr_scn_member(root, "model"));
    if (!rc)
        rc = load_fields(p, sr_scn_member(root, "fields"));
    if (!rc)
        rc = parse_engines(p, sr_scn_member(root, "engines"));
    if (!rc)
        rc = parse_client(p, sr_scn_member(root, "client"));
    if (!rc)
        rc = load_weights(p, sr_scn_member(root, "weights"));
    const cJSON *w = sr_scn_member(root, "weights");
    int pt = rc ? 0 : plane_transport(s);
    if (pt == -2)
        rc = sr_scn_fail(p, sr_scn_member(w, "serial_update"), SERIAL_BROADCAST_MSG);
    else if (pt)
        rc = sr_scn_fail(p, sr_scn_member(w, "transport"),
                         "weights.transport \"%s\" with engines.sync_dialect \"%s\": only the "
                         "skyrl plane has a delta store, and only the sglang plane loads from disk "
                         "(the others sync by broadcast)",
                         s->transport, sr_sync_dialect_name(s->engine.sync_dialect));
    if (!rc)
        rc = parse_pool_trainer(p, sr_scn_member(root, "pool"), sr_scn_member(root, "trainer"));
    if (!rc)
        rc = sr_scn_parse_steps(p, root);
    if (!rc)
        rc = sr_scn_parse_expect(p, root);
    if (!rc)
        rc = sr_scn_parse_budgets(p, root);
    if (!rc)
        rc = sr_scn_parse_soak(p, root);
    if (rc == SR_E_NOMEM)
        sr_err_set(p->err, rc, "out of memory while loading a scenario");
    return rc;
}

static int parse_max(sr_scenario **out, const char *text, size_t len, const char *name,
                     size_t max_bytes, sr_err *err)
{
    *out = NULL;
    sr_scenario *s = calloc(1, sizeof(*s));
    if (!s)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a scenario");
    defaults(s);
    sr_json_doc *doc = NULL;
    int rc = (s->path = strdup(name ? name : "<input>")) ? 0 : SR_E_NOMEM;
    if (!rc)
        rc = sr_fields_new(&s->fields, err);
    if (!rc)
        rc = sr_fields_add_builtins(s->fields, err);
    if (!rc && len > max_bytes)
        rc = sr_err_set(err, SR_E_SCENARIO_TOO_LARGE,
                        "%s: %zu bytes, larger than the limit of %zu bytes", s->path, len,
                        max_bytes);
    if (!rc)
        rc = sr_json_parse(&doc, text, len, s->path, max_bytes, err);
    if (!rc) {
        scn_parse p = {doc, s, err};
        rc = parse_top(&p, sr_json_root(doc));
    }
    sr_json_free(doc);
    if (rc) {
        if (rc == SR_E_NOMEM)
            sr_err_set(err, rc, "out of memory while loading a scenario");
        sr_scenario_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int sr_scenario_parse(sr_scenario **out, const char *text, size_t len, const char *name,
                      sr_err *err)
{
    return parse_max(out, text, len, name, SR_SCN_MAX_FILE, err);
}

int sr_scenario_load(sr_scenario **out, const char *path, sr_err *err)
{
    return sr_scenario_load_max(out, path, SR_SCN_MAX_FILE, err);
}

int sr_scenario_load_max(sr_scenario **out, const char *path, size_t max_bytes, sr_err *err)
{
    *out = NULL;
    max_bytes = max_bytes ? max_bytes : SR_SCN_MAX_FILE;
    sr_buf b = SR_BUF_INIT;
    int rc = sr_file_read(&b, path, max_bytes, err);
    /* Its message already names the file, its size and the bound. */
    if (rc == SR_E_LIMIT)
        rc = err ? (err->code = SR_E_SCENARIO_TOO_LARGE) : SR_E_SCENARIO_TOO_LARGE;
    if (!rc)
        rc = parse_max(out, b.data ? b.data : "", b.len, path, max_bytes, err);
    sr_buf_release(&b);
    return rc;
}

void sr_scenario_free(sr_scenario *s)
{
    if (!s)
        return;
    free(s->path);
    free(s->description);
    free(s->skip);
    for (int i = 0; i < s->n_tags; i++)
        free(s->tags[i]);
    for (int i = 0; i < s->n_urls; i++)
        free(s->urls[i]);
    for (int i = 0; i < s->n_expect_checks; i++)
        free(s->expect_checks[i]);
    for (int i = 0; i < s->n_expect_classes; i++)
        free(s->expect_classes[i]);
    sr_engine_config_release(&s->engine);
    sr_fields_free(s->fields);
    cJSON_Delete(s->fields_json);
    free(s->steps);
    free(s);
}

void sr_scenario_set_seed(sr_scenario *s, uint64_t seed)
{
    s->seed = s->engine.seed = s->client.seed = seed;
}

int sr_scenario_for_dialect(sr_scenario *s, sr_dialect d, sr_err *err)
{
    const char *name = sr_dialect_name(d);
    if (!name)
        return sr_err_set(err, SR_E_INVAL, "dialect %d is not in the table", (int)d);
    /* The same generate path in the new dialect (the loader checked that it has it). */
    const char *path = sr_dialect_get(s->engine.dialect)->routes[s->client.dialect_route].path;
    const sr_dialect_route *r = sr_dialect_route_at(d, path);
    s->client.dialect_route = r ? (int)(r - sr_dialect_get(d)->routes) : 0;
    if (d != s->engine.dialect) {
        size_t n = strlen(s->id), m = strlen(name);
        if (n + 1 + m >= SR_SCN_ID_MAX)
            return sr_err_set(err, SR_E_SCENARIO,
                              "%s: id '%s.%s' of its %s execution (engines.dialects) is longer "
                              "than %d bytes",
                              s->path, s->id, name, name, SR_SCN_ID_MAX - 1);
        s->id[n] = '.';
        memcpy(s->id + n + 1, name, m + 1);
    }
    s->engine.dialect = d;
    /* The execution's control plane and transport follow its dialect unless the file names them. */
    if (!s->engine.sync_dialect_given)
        s->engine.sync_dialect = sr_dialect_sync_dialect((sr_dialect)d);
    int pt = plane_transport(s);
    if (pt == -2)
        return sr_err_set(err, SR_E_SCENARIO, "%s: its %s execution (engines.dialects): %s",
                          s->path, name, SERIAL_BROADCAST_MSG);
    if (pt)
        return sr_err_set(err, SR_E_SCENARIO,
                          "%s: its %s execution (engines.dialects) syncs with the %s plane, which "
                          "cannot move weights.transport \"%s\"",
                          s->path, name, sr_sync_dialect_name(s->engine.sync_dialect),
                          s->transport);
    return 0;
}
