/* Parsing of fault objects and plans (spec/faults.h); the kinds are in fault_kinds.c. */
#include "faults.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints.h"
#include "sr_json.h"
#include "sr_suggest.h"

struct sr_fault_plan {
    size_t n;
    sr_fault f[SR_FAULT_MAX];
};

/* The fault being parsed, for messages. */
typedef struct pctx {
    size_t index;
    const char *kind;
    sr_err *err;
    const cJSON **where; /* set to a node inside the fault when an error is about it */
} pctx;

__attribute__((format(printf, 2, 3))) static int fail(const pctx *pc, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sr_err_set(pc->err, SR_E_FAULT_SPEC, "fault %zu (%s): %s", pc->index,
                      pc->kind ? pc->kind : "?", msg);
}

/* The JSON getters report SR_E_JSON_SCHEMA; a plan's errors are this fault's SR_E_FAULT_SPEC. */
static int relabel(const pctx *pc, int rc)
{
    if (rc != SR_E_JSON_SCHEMA)
        return rc;
    if (pc->err) {
        sr_err_prefix(pc->err, "fault %zu (%s): ", pc->index, pc->kind ? pc->kind : "?");
        pc->err->code = SR_E_FAULT_SPEC;
    }
    return SR_E_FAULT_SPEC;
}

static int has(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key) != NULL;
}

/* A present string key must be non-empty and fit `cap` bytes with its NUL. */
static int get_str(const pctx *pc, const cJSON *obj, const char *key, char *out, size_t cap)
{
    const char *s = NULL;
    int rc = relabel(pc, sr_json_get_string(NULL, obj, key, 0, NULL, &s, pc->err));
    if (rc || !s)
        return rc;
    if (!s[0] || strlen(s) >= cap)
        return fail(pc, "\"%s\" must be a non-empty string shorter than %zu bytes", key, cap);
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

static int get_list(const pctx *pc, const cJSON *obj, const char *key, int64_t lo, int64_t hi,
                    int64_t *out, int *n)
{
    size_t got = 0;
    int rc = sr_json_get_int_list(NULL, obj, key, 0, lo, hi, out, SR_FAULT_MAX_LIST, &got, pc->err);
    *n = (int)got;
    return relabel(pc, rc);
}

/* ---- kind parameters: one row per key; a kind's row of the table names the keys it takes ---- */

typedef enum ptype { T_INT, T_NUM, T_BOOL, T_STR, T_DIST, T_LAYERS, T_SELECT, T_ACTION } ptype;

typedef struct param {
    const char *key;
    ptype type;
    int64_t ilo, ihi; /* range of T_INT and of T_LAYERS entries */
    double lo, hi;    /* range of T_NUM */
    size_t off;       /* of the member of sr_fault that receives it */
    size_t size;
    size_t given;    /* of the int member set to 1 when the key is present; 0: none (an optional
                      * value with no default, written back only when it was given) */
    const char *doc; /* one line for docs/reference/faults.md (sr_fault_param_doc) */
} param;

/* Offset and size of member m of sr_fault, which must have type T (AT) or be an array of T
 * (ATA): comparing pointers of distinct types is diagnosed at compile time. */
#define AT(m, T)                                                                                   \
    offsetof(sr_fault, m) + 0 * sizeof(&((sr_fault *)0)->m == (T *)0), sizeof(((sr_fault *)0)->m)
#define ATA(m, T)                                                                                  \
    offsetof(sr_fault, m) + 0 * sizeof(((sr_fault *)0)->m + 0 == (T *)0), sizeof(((sr_fault *)0)->m)
/* clang-format off */
#define INT(k, lo, hi, m, d) {k, T_INT, lo, hi, 0, 0, AT(m, int64_t), 0, d}
#define NUM(k, lo, hi, m, d) {k, T_NUM, 0, 0, lo, hi, AT(m, double), 0, d}
#define STR(k, m, d)         {k, T_STR, 0, 0, 0, 0, ATA(m, char), 0, d}
/* clang-format on */
/* An int64_t member whose presence int member g records. */
#define INT_GIVEN(k, lo, hi, m, g, d)                                                              \
    {                                                                                              \
        k, T_INT, lo, hi, 0, 0, AT(m, int64_t),                                                    \
            offsetof(sr_fault, g) + 0 * sizeof(&((sr_fault *)0)->g == (int *)0), d                 \
    }
#define BIG (INT64_MAX / 2)

static const param PARAMS[] = {
    {"dist", T_DIST, 0, 0, 0, 0, AT(dist, sr_latency_dist), 0,
     "latency's distribution: `fixed` (needs `ms`), `uniform` (needs `min_ms` <= `max_ms`) or "
     "`lognormal` (needs `median_ms`); default `fixed`"},
    NUM("ms", 0, SR_FAULT_MAX_MS, ms,
        "latency: the fixed delay; refuse: how long the port refuses connections"),
    NUM("min_ms", 0, SR_FAULT_MAX_MS, min_ms, "latency (uniform): the shortest delay"),
    NUM("max_ms", 0, SR_FAULT_MAX_MS, max_ms, "latency (uniform): the longest delay"),
    NUM("median_ms", 0, SR_FAULT_MAX_MS, median_ms, "latency (lognormal): the median delay"),
    NUM("sigma", 0, 4, sigma, "latency (lognormal): the log-space standard deviation; default 0.5"),
    INT_GIVEN("bytes", 0, BIG, bytes, has_bytes,
              "the body byte at which a transport fault cuts or stalls"),
    INT_GIVEN("offset", 0, BIG, bytes, has_bytes,
              "body faults: the byte of the blob to corrupt; truncate_in_blob and "
              "truncate_after_blobs: the cut's distance into or past the blob"),
    {"keep_length", T_BOOL, 0, 0, 0, 0, AT(keep_length, int), 0,
     "truncations: announce the full Content-Length and close after the cut; default false"},
    NUM("bytes_per_second", 1, 1e12, bytes_per_second, "dribble: the rate, sent in 1/20 s slices"),
    INT("retry_after", 0, 86400, retry_after,
        "http_429: the Retry-After header in seconds; default 1"),
    STR("text", text, "http faults: the body that replaces the default one"),
    INT("row", 0, INT32_MAX, row, "the route row a model fault changes"),
    INT("layer", 0, INT32_MAX, layer, "the MoE layer of that row"),
    STR("field", field, "the packed field a body fault corrupts; default `routed_experts`"),
    STR("key", key, "extra_envelope: the unregistered key; default `debug_routes`"),
    {"layers", T_LAYERS, 0, 1023, 0, 0, ATA(layers, int), 0,
     "weights faults: the MoE layer slots they affect; default the last"},
    INT("requests", 1, 1000000, requests,
        "ack_before_apply: generates answered before the deferred layers apply; default 1"),
    /* The grammar's two objects are one rule: "action" parses both, "select" writes both. */
    {"select", T_SELECT, 0, 0, 0, 0, AT(rule, sr_route_rule), 0,
     "routes: the rows the rule acts on (region, rows, layers, field; scenarios/FORMAT.md, "
     "\"Faults as data\"); default every row of routed_experts"},
    {"action", T_ACTION, 0, 0, 0, 0, AT(rule, sr_route_rule), 0,
     "routes: what the selected rows get (`do`: zero, constant, repeat_previous, stale, "
     "weight_version, shift, swap_layers, drop_first, drop_last, append_last, truncate, "
     "mark_partial, null; drop for field logprobs)"},
};

static const param *param_of(const char *key)
{
    for (size_t i = 0; i < sizeof(PARAMS) / sizeof(PARAMS[0]); i++)
        if (strcmp(PARAMS[i].key, key) == 0)
            return &PARAMS[i];
    return NULL;
}

size_t sr_fault_param_count(void)
{
    return sizeof(PARAMS) / sizeof(PARAMS[0]);
}

const char *sr_fault_param_describe(size_t i, char *type, size_t cap, const char **doc)
{
    if (i >= sr_fault_param_count())
        return NULL;
    const param *p = &PARAMS[i];
    switch (p->type) {
    case T_INT:
        if (p->ihi >= BIG)
            snprintf(type, cap, "integer >= %lld", (long long)p->ilo);
        else
            snprintf(type, cap, "integer %lld..%lld", (long long)p->ilo, (long long)p->ihi);
        break;
    case T_NUM:
        snprintf(type, cap, "number %.15g..%.15g", p->lo, p->hi);
        break;
    case T_BOOL:
        snprintf(type, cap, "boolean");
        break;
    case T_STR:
        snprintf(type, cap, "string");
        break;
    case T_DIST:
        snprintf(type, cap, "string");
        break;
    case T_LAYERS:
        snprintf(type, cap, "list of integers %lld..%lld", (long long)p->ilo, (long long)p->ihi);
        break;
    case T_SELECT:
    case T_ACTION:
        snprintf(type, cap, "object");
        break;
    }
    *doc = p->doc;
    return p->key;
}

static const char *const DIST_NAMES[] = {"fixed", "uniform", "lognormal"};

static int parse_dist(const pctx *pc, const cJSON *obj, sr_latency_dist *out)
{
    const char *s = NULL;
    int rc = relabel(pc, sr_json_get_string(NULL, obj, "dist", 0, NULL, &s, pc->err));
    for (int i = 0; !rc && s && i < 3; i++)
        if (strcmp(s, DIST_NAMES[i]) == 0) {
            *out = (sr_latency_dist)i;
            return 0;
        }
    return rc ? rc : fail(pc, "\"dist\" must be fixed, uniform or lognormal");
}

/* Parses present key p->key into its member of f. */
static int parse_param(const pctx *pc, const cJSON *obj, const param *p, sr_fault *f)
{
    char *dst = (char *)f + p->off;
    int64_t i64, list[SR_FAULT_MAX_LIST];
    int rc = 0, n = 0;
    if (p->given)
        *(int *)(void *)((char *)f + p->given) = 1;
    switch (p->type) {
    case T_INT:
        rc = sr_json_get_int(NULL, obj, p->key, 0, p->ilo, p->ihi, 0, &i64, pc->err);
        if (!rc)
            memcpy(dst, &i64, sizeof(i64));
        return relabel(pc, rc);
    case T_NUM:
        return relabel(pc, sr_json_get_double(NULL, obj, p->key, 0, p->lo, p->hi, 0,
                                              (double *)(void *)dst, pc->err));
    case T_BOOL:
        return relabel(pc, sr_json_get_bool(NULL, obj, p->key, 0, 0, (int *)(void *)dst, pc->err));
    case T_STR:
        return get_str(pc, obj, p->key, dst, p->size);
    case T_DIST:
        return parse_dist(pc, obj, (sr_latency_dist *)(void *)dst);
    case T_LAYERS:
        rc = get_list(pc, obj, p->key, p->ilo, p->ihi, list, &n);
        for (int k = 0; !rc && k < n; k++)
            ((int *)(void *)dst)[k] = (int)list[k];
        f->n_layers = rc ? 0 : n;
        return rc;
    case T_SELECT:
        return 0; /* parsed with "action" */
    case T_ACTION:
        rc = sr_route_rule_parse(&f->rule, cJSON_GetObjectItemCaseSensitive(obj, "select"),
                                 cJSON_GetObjectItemCaseSensitive(obj, p->key), pc->where, pc->err);
        if (rc && pc->err)
            sr_err_prefix(pc->err, "fault %zu (%s): ", pc->index, pc->kind ? pc->kind : "?");
        return rc;
    }
    return sr_err_set(pc->err, SR_E_INTERNAL, "parameter type %d", (int)p->type);
}

static int check_latency(const pctx *pc, const cJSON *obj, const sr_fault *f)
{
    switch (f->dist) {
    case SR_LAT_FIXED:
        return has(obj, "ms") ? 0 : fail(pc, "dist fixed needs \"ms\"");
    case SR_LAT_UNIFORM:
        if (!has(obj, "min_ms") || !has(obj, "max_ms") || f->min_ms > f->max_ms)
            return fail(pc, "dist uniform needs \"min_ms\" <= \"max_ms\"");
        return 0;
    case SR_LAT_LOGNORMAL:
        if (!has(obj, "median_ms"))
            return fail(pc, "dist lognormal needs \"median_ms\" (and optionally \"sigma\")");
        return 0;
    }
    return 0;
}

static int parse_params(const pctx *pc, const cJSON *obj, const sr_fault_kind_info *ki, sr_fault *f)
{
    int rc = 0;
    for (const char *const *k = ki->params; !rc && *k; k++) {
        const param *p = param_of(*k);
        if (!p)
            return sr_err_set(pc->err, SR_E_INTERNAL, "kind %s: no parser for \"%s\"", ki->name,
                              *k);
        if (has(obj, *k))
            rc = parse_param(pc, obj, p, f);
    }
    for (const char *const *k = ki->required; !rc && *k; k++)
        if (!has(obj, *k))
            rc = fail(pc, "\"%s\" is required", *k);
    if (!rc && f->kind == SR_FK_LATENCY)
        rc = check_latency(pc, obj, f);
    return rc;
}

/* ---- targeting ---- */

static int endpoint_bit(const pctx *pc, const char *name, const sr_fault_kind_info *ki,
                        uint64_t *mask)
{
    if (strcmp(name, "any") == 0) {
        *mask |= ki->allowed_endpoints & SR_EP_ALL;
        return 0;
    }
    for (int i = 0; i < SR_EP_COUNT; i++) {
        if (strcmp(name, sr_endpoint_name((sr_endpoint)i)) != 0 &&
            strcmp(name, sr_endpoint_path((sr_endpoint)i)) != 0)
            continue;
        if (!(ki->allowed_endpoints & SR_EP_BIT(i)))
            return fail(pc, "kind %s does not apply to endpoint %s", ki->name,
                        sr_endpoint_name((sr_endpoint)i));
        *mask |= SR_EP_BIT(i);
        return 0;
    }
    const char *names[2 * SR_EP_COUNT + 1];
    size_t n = 0;
    names[n++] = "any";
    for (int i = 0; i < SR_EP_COUNT; i++)
        if (ki->allowed_endpoints & SR_EP_BIT(i))
            names[n++] = sr_endpoint_name((sr_endpoint)i);
    char hint[300];
    sr_suggest_text(hint, sizeof(hint), name, names, n, "endpoints of this kind");
    return fail(pc, "unknown endpoint \"%s\"; %s", name, hint);
}

static int parse_endpoints(const pctx *pc, const cJSON *obj, const sr_fault_kind_info *ki,
                           uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "endpoints");
    if (!v) {
        *out = ki->default_endpoints;
        return 0;
    }
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) < 1)
        return fail(pc, "\"endpoints\" must not be empty");
    if (!cJSON_IsArray(v) && !cJSON_IsString(v))
        return fail(pc, "\"endpoints\" must be a name or an array of names");
    *out = 0;
    if (cJSON_IsString(v))
        return endpoint_bit(pc, v->valuestring, ki, out);
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsString(e))
            return fail(pc, "\"endpoints\" entries must be strings");
        int rc = endpoint_bit(pc, e->valuestring, ki, out);
        if (rc)
            return rc;
    }
    return 0;
}

static int parse_targeting(const pctx *pc, const cJSON *obj, const sr_fault_kind_info *ki,
                           sr_fault *f)
{
    int64_t list[SR_FAULT_MAX_LIST];
    int n = 0;
    int rc = get_str(pc, obj, "id", f->id, sizeof(f->id));
    if (!rc)
        rc = get_list(pc, obj, "engines", 0, 63, list, &n);
    f->engines = n ? 0 : ~(uint64_t)0;
    for (int i = 0; !rc && i < n; i++)
        f->engines |= (uint64_t)1 << list[i];
    if (!rc)
        rc = parse_endpoints(pc, obj, ki, &f->endpoints);
    if (!rc)
        rc = get_list(pc, obj, "nth", 1, INT64_MAX / 2, f->nth, &f->n_nth);
    if (!rc)
        rc = get_list(pc, obj, "turn", 1, INT32_MAX, f->turns, &f->n_turns);
    if (!rc)
        rc = relabel(pc, sr_json_get_double(NULL, obj, "probability", 0, 0, 1, 1.0, &f->probability,
                                            pc->err));
    if (!rc)
        rc = relabel(
            pc, sr_json_get_int(NULL, obj, "count", 0, 0, INT64_MAX / 2, -1, &f->count, pc->err));
    return rc;
}

/* The targeting keys and the kind's parameters, and no key twice. */
static int check_keys(const pctx *pc, const cJSON *obj, const sr_fault_kind_info *ki)
{
    const char *allowed[16 + SR_FAULT_MAX_PARAMS];
    size_t n = 0;
    for (const char *const *k = sr_fault_common_keys(); *k && n < 16; k++)
        allowed[n++] = *k;
    for (const char *const *k = ki->params; *k; k++)
        allowed[n++] = *k;
    allowed[n] = NULL;
    return relabel(pc, sr_json_check_keys(NULL, obj, "this kind of fault", allowed, pc->err));
}

static void defaults(sr_fault *f, const sr_fault_kind_info *ki, size_t index)
{
    sr_fault_default_id(f->id, sizeof(f->id), ki->name, index);
    f->probability = 1.0;
    f->count = -1;
    f->dist = SR_LAT_FIXED;
    f->sigma = 0.5;
    f->retry_after = 1;
    f->requests = 1;
    memcpy(f->field, "routed_experts", sizeof("routed_experts"));
    memcpy(f->key, "debug_routes", sizeof("debug_routes"));
}

static int fault_parse_at(sr_fault *f, const cJSON *obj, size_t index, const cJSON **where,
                          sr_err *err)
{
    pctx pc = {index, NULL, err, where};
    memset(f, 0, sizeof(*f));
    f->kind = SR_FK_COUNT;
    if (!cJSON_IsObject(obj))
        return fail(&pc, "a fault must be a JSON object");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    if (!cJSON_IsString(k))
        return fail(&pc, "\"kind\" (a string) is required");
    pc.kind = k->valuestring;
    int kind = sr_fault_kind_lookup(k->valuestring);
    if (kind < 0) {
        const char *names[SR_FK_COUNT];
        for (int i = 0; i < SR_FK_COUNT; i++)
            names[i] = sr_fault_kind_name((sr_fault_kind)i);
        char hint[360];
        sr_suggest_text(hint, sizeof(hint), k->valuestring, names, SR_FK_COUNT,
                        "kinds (all of them: `syncroll faults`)");
        return fail(&pc, "unknown fault kind; %s", hint);
    }
    const sr_fault_kind_info *ki = sr_fault_kind_info_of((sr_fault_kind)kind);
    f->kind = ki->kind;
    defaults(f, ki, index);
    int rc = check_keys(&pc, obj, ki);
    if (!rc)
        rc = parse_targeting(&pc, obj, ki, f);
    if (!rc)
        rc = parse_params(&pc, obj, ki, f);
    if (!rc && sr_route_alias(&f->rule, ki->name, err) < 0)
        rc = SR_E_INTERNAL;
    return rc;
}

int sr_fault_parse(sr_fault *f, const cJSON *obj, size_t index, sr_err *err)
{
    return fault_parse_at(f, obj, index, NULL, err);
}

/* ---- plans ---- */

static int parse_plan(sr_fault_plan *p, const cJSON **where, const cJSON *plan, sr_err *err)
{
    for (const cJSON *e = plan->child; e; e = e->next, p->n++) {
        const cJSON *inner = NULL;
        int rc = fault_parse_at(&p->f[p->n], e, p->n, &inner, err);
        *where = inner ? inner : e;
        for (size_t j = 0; !rc && j < p->n; j++) {
            if (strcmp(p->f[j].id, p->f[p->n].id) != 0)
                continue;
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
            *where = id ? id : e;
            rc = sr_err_set(err, SR_E_FAULT_SPEC, "fault %zu: id \"%s\" is used twice", p->n,
                            p->f[p->n].id);
        }
        if (rc)
            return rc;
    }
    return 0;
}

int sr_fault_plan_parse(sr_fault_plan **out, const cJSON **where, const cJSON *plan, sr_err *err)
{
    const cJSON *at = plan;
    *out = NULL;
    if (where)
        *where = NULL;
    if (plan && !cJSON_IsArray(plan) && !cJSON_IsNull(plan)) {
        if (where)
            *where = plan;
        return sr_err_set(err, SR_E_FAULT_SPEC, "the plan must be a JSON array of fault objects");
    }
    int n = plan && cJSON_IsArray(plan) ? cJSON_GetArraySize(plan) : 0;
    if (n > SR_FAULT_MAX) {
        if (where)
            *where = plan;
        return sr_err_set(err, SR_E_FAULT_SPEC, "at most %d faults may be declared, got %d",
                          SR_FAULT_MAX, n);
    }
    sr_fault_plan *p = calloc(1, sizeof(*p));
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a fault plan");
    int rc = n ? parse_plan(p, &at, plan, err) : 0;
    if (rc) {
        if (where)
            *where = at;
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int sr_fault_plan_parse_text(sr_fault_plan **out, const char *text, size_t len, sr_err *err)
{
    *out = NULL;
    cJSON *doc = cJSON_ParseWithLength(text, len);
    if (!doc)
        return sr_err_set(err, SR_E_FAULT_SPEC, "the fault plan is not valid JSON");
    int rc = sr_fault_plan_parse(out, NULL, doc, err);
    cJSON_Delete(doc);
    return rc;
}

void sr_fault_plan_free(sr_fault_plan *plan)
{
    free(plan);
}

size_t sr_fault_plan_count(const sr_fault_plan *plan)
{
    return plan ? plan->n : 0;
}

const sr_fault *sr_fault_plan_at(const sr_fault_plan *plan, size_t i)
{
    return plan && i < plan->n ? &plan->f[i] : NULL;
}

const sr_fault *sr_fault_plan_find(const sr_fault_plan *plan, const char *id)
{
    for (size_t i = 0; id && i < sr_fault_plan_count(plan); i++)
        if (strcmp(plan->f[i].id, id) == 0)
            return &plan->f[i];
    return NULL;
}

/* ---- writing: the parser's rows, read the other way ---- */

/* Integers as raw literals: cJSON prints large ones with an exponent, which the parser does not
 * take for an integer. */
static cJSON *int_item(int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "%lld", (long long)v);
    return cJSON_CreateRaw(buf);
}

static cJSON *int_array(const int64_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, int_item(v[i]))) {
            cJSON_Delete(a);
            a = NULL;
        }
    return a;
}

/* Adds `item` (which may be NULL: out of memory) as o[key]; 0 or -1. */
static int add(cJSON *o, const char *key, cJSON *item)
{
    if (cJSON_AddItemToObject(o, key, item))
        return 0;
    cJSON_Delete(item);
    return -1;
}

#define NOT_PARSED (-2) /* a value the parser never gives: SR_E_INTERNAL */

static int listed(int n)
{
    return n >= 0 && n <= SR_FAULT_MAX_LIST;
}

/* The rule's "select" and "action"; 0, -1 or NOT_PARSED. */
static int write_rule(cJSON *o, const sr_fault *f)
{
    cJSON *sel = NULL, *act = NULL;
    int rc = sr_route_rule_write_json(&sel, &act, &f->rule, NULL);
    if (rc)
        return rc == SR_E_NOMEM ? -1 : NOT_PARSED;
    if (add(o, "select", sel)) {
        cJSON_Delete(act);
        return -1;
    }
    return add(o, "action", act);
}

/* Writes parameter p of f, unless it is an absent optional value; 0, -1 (out of memory) or
 * NOT_PARSED. */
static int write_param(cJSON *o, const param *p, const sr_fault *f)
{
    const char *src = (const char *)f + p->off;
    int64_t list[SR_FAULT_MAX_LIST];
    sr_latency_dist d;
    if (p->given && !*(const int *)(const void *)((const char *)f + p->given))
        return 0;
    switch (p->type) {
    case T_INT:
        return add(o, p->key, int_item(*(const int64_t *)(const void *)src));
    case T_NUM:
        return add(o, p->key, cJSON_CreateNumber(*(const double *)(const void *)src));
    case T_BOOL:
        return add(o, p->key, cJSON_CreateBool(*(const int *)(const void *)src));
    case T_STR:
        return src[0] ? add(o, p->key, cJSON_CreateString(src)) : 0;
    case T_DIST:
        d = *(const sr_latency_dist *)(const void *)src;
        return (unsigned)d < 3 ? add(o, p->key, cJSON_CreateString(DIST_NAMES[d])) : NOT_PARSED;
    case T_LAYERS:
        if (!listed(f->n_layers))
            return NOT_PARSED;
        for (int k = 0; k < f->n_layers; k++)
            list[k] = ((const int *)(const void *)src)[k];
        return f->n_layers ? add(o, p->key, int_array(list, f->n_layers)) : 0;
    case T_SELECT:
        return write_rule(o, f);
    case T_ACTION:
        return 0; /* written with "select" */
    }
    return NOT_PARSED;
}

static int write_targeting(cJSON *o, const sr_fault *f, const sr_fault_kind_info *ki)
{
    int64_t list[64];
    if (!listed(f->n_nth) || !listed(f->n_turns))
        return NOT_PARSED;
    int n = 0, rc = add(o, "kind", cJSON_CreateString(ki->name));
    if (!rc)
        rc = add(o, "id", cJSON_CreateString(f->id));
    for (int i = 0; i < 64; i++)
        if (f->engines >> i & 1)
            list[n++] = i;
    if (!rc && n < 64)
        rc = add(o, "engines", int_array(list, n));
    cJSON *eps = rc ? NULL : cJSON_AddArrayToObject(o, "endpoints");
    for (int i = 0; eps && i < SR_EP_COUNT; i++)
        if ((f->endpoints >> i & 1) &&
            !cJSON_AddItemToArray(eps, cJSON_CreateString(sr_endpoint_name((sr_endpoint)i))))
            eps = NULL;
    if (!eps)
        rc = -1;
    if (!rc && f->n_nth)
        rc = add(o, "nth", int_array(f->nth, f->n_nth));
    if (!rc && f->n_turns)
        rc = add(o, "turn", int_array(f->turns, f->n_turns));
    if (!rc)
        rc = add(o, "probability", cJSON_CreateNumber(f->probability));
    if (!rc && f->count >= 0)
        rc = add(o, "count", int_item(f->count));
    return rc;
}

int sr_fault_write_json(cJSON **out, const sr_fault *f, sr_err *err)
{
    *out = NULL;
    const sr_fault_kind_info *ki = sr_fault_kind_info_of(f->kind);
    if (!ki)
        return sr_err_set(err, SR_E_INTERNAL, "fault kind %d is not in the table", (int)f->kind);
    cJSON *o = cJSON_CreateObject();
    int rc = o ? write_targeting(o, f, ki) : -1;
    for (const char *const *k = ki->params; !rc && *k; k++) {
        const param *p = param_of(*k);
        if (!p) {
            cJSON_Delete(o);
            return sr_err_set(err, SR_E_INTERNAL, "kind %s: no writer for \"%s\"", ki->name, *k);
        }
        rc = write_param(o, p, f);
    }
    cJSON_Delete(rc ? o : NULL);
    if (rc == NOT_PARSED)
        return sr_err_set(err, SR_E_INTERNAL, "fault %.64s holds a value no plan parses to", f->id);
    if (rc)
        return sr_err_set(err, SR_E_NOMEM, "cannot write fault %.64s", f->id);
    *out = o;
    return 0;
}

int sr_fault_plan_write_json(cJSON **out, const sr_fault_plan *plan, sr_err *err)
{
    *out = cJSON_CreateArray();
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot write the fault plan");
    for (size_t i = 0; i < sr_fault_plan_count(plan); i++) {
        cJSON *f = NULL;
        int rc = sr_fault_write_json(&f, &plan->f[i], err);
        if (!rc && !cJSON_AddItemToArray(*out, f)) {
            cJSON_Delete(f);
            rc = sr_err_set(err, SR_E_NOMEM, "cannot write the fault plan");
        }
        if (rc) {
            cJSON_Delete(*out);
            *out = NULL;
            return rc;
        }
    }
    return 0;
}
