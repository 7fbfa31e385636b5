/* The route-fault grammar (spec/fault_grammar.h): parser, writer, alias table, selection. */
#include "fault_grammar.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const REGION_NAMES[SR_RR_COUNT] = {"all", "prompt", "output", "turn_boundary",
                                                      "chunk_boundary"};

static const char *const ACTION_NAMES[SR_RA_COUNT] = {
    "zero",        "constant",   "repeat_previous", "stale",       "weight_version", "shift",
    "swap_layers", "drop_first", "drop_last",       "append_last", "truncate",       "mark_partial",
    "null",        "drop"};

static const char *const FIELD_NAMES[SR_RF_COUNT] = {"routed_experts", "logprobs"};

static const char *const SELECT_KEYS[] = {"region", "chunk", "rows", "layers", "field", NULL};
static const char *const ACTION_KEYS[] = {"do",      "value",  "k",       "layers",
                                          "version", "tokens", "partial", NULL};

/*
 * The alias table: each existing route fault as a rule. Its kind keeps its name (plans and
 * reports still say "routes_all_zero"); what the engine does for it is this rule and nothing
 * else.
 */
static const struct alias {
    const char *kind, *select, *action;
} ALIASES[] = {
    {"routes_all_zero", NULL, "{\"do\":\"zero\"}"},
    {"duplicated_output_rows", "{\"region\":\"output\",\"rows\":{\"from\":1,\"stride\":2}}",
     "{\"do\":\"repeat_previous\"}"},
    {"routes_dropped", NULL, "{\"do\":\"null\"}"},
    {"pd_decode_replica", "{\"region\":\"prompt\"}", "{\"do\":\"zero\"}"},
    {"stale_prefix_cache", "{\"region\":\"prompt\"}", "{\"do\":\"stale\"}"},
    {"rows_p_plus_g", NULL, "{\"do\":\"append_last\"}"},
    {"support_logprob_null", "{\"field\":\"logprobs\"}", "{\"do\":\"null\"}"},
    {"support_no_logprobs", "{\"field\":\"logprobs\"}", "{\"do\":\"drop\"}"},
};

const char *sr_route_region_name(sr_route_region r)
{
    return (unsigned)r < SR_RR_COUNT ? REGION_NAMES[r] : NULL;
}

const char *sr_route_action_name(sr_route_action a)
{
    return (unsigned)a < SR_RA_COUNT ? ACTION_NAMES[a] : NULL;
}

const char *sr_route_field_name(sr_route_field f)
{
    return (unsigned)f < SR_RF_COUNT ? FIELD_NAMES[f] : NULL;
}

int sr_route_rule_selects(const sr_route_rule *r)
{
    return r->act <= SR_RA_SWAP_LAYERS || (r->field == SR_RF_LOGPROBS && r->act == SR_RA_NULL);
}

/* ---- parsing ---- */

typedef struct gctx {
    const cJSON **where;
    sr_err *err;
} gctx;

__attribute__((format(printf, 3, 4))) static int fail(const gctx *g, const cJSON *at,
                                                      const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (g->where)
        *g->where = at;
    return sr_err_set(g->err, SR_E_FAULT_SPEC, "%s", msg);
}

static void join(char *buf, size_t cap, const char *const *names, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && names[i] && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", names[i]);
}

/* Only the keys `allowed` (NULL-terminated) in object o, called `what`. */
static int only_keys(const gctx *g, const cJSON *o, const char *what, const char *const *allowed)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, o)
    {
        int ok = 0;
        for (const char *const *k = allowed; *k && !ok; k++)
            ok = e->string && strcmp(e->string, *k) == 0;
        for (const cJSON *d = o->child; ok && d != e; d = d->next)
            if (strcmp(d->string, e->string) == 0)
                return fail(g, e, "\"%s.%s\" is given twice", what, e->string);
        if (!ok) {
            char list[200];
            size_t n = 0;
            while (allowed[n])
                n++;
            join(list, sizeof(list), allowed, n);
            return fail(g, e, "unknown key \"%s.%s\"; valid keys: %s", what,
                        e->string ? e->string : "?", list);
        }
    }
    return 0;
}

/* An integer in lo..hi (a JSON number with no fraction). */
static int int_in(const gctx *g, const cJSON *v, const char *name, int64_t lo, int64_t hi,
                  int64_t *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble != floor(v->valuedouble) || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi)
        return fail(g, v, "\"%s\" must be an integer in %lld..%lld", name, (long long)lo,
                    (long long)hi);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int opt_int(const gctx *g, const cJSON *o, const char *what, const char *key, int64_t lo,
                   int64_t hi, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    char name[48];
    snprintf(name, sizeof(name), "%s.%s", what, key);
    return v ? int_in(g, v, name, lo, hi, out) : 0;
}

/* A list of 1..cap integers lo..hi. */
static int int_list(const gctx *g, const cJSON *v, const char *name, int64_t lo, int64_t hi,
                    int64_t *out, int cap, int *n)
{
    int size = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
    if (size < 1 || size > cap)
        return fail(g, v, "\"%s\" must be a list of 1 to %d integers in %lld..%lld", name, cap,
                    (long long)lo, (long long)hi);
    *n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        int rc = int_in(g, e, name, lo, hi, &out[*n]);
        if (rc)
            return rc;
        (*n)++;
    }
    return 0;
}

static int name_of(const gctx *g, const cJSON *o, const char *what, const char *key,
                   const char *const *names, int n, int dflt, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = dflt;
    if (!v && dflt >= 0)
        return 0;
    for (int i = 0; v && cJSON_IsString(v) && i < n; i++)
        if (strcmp(v->valuestring, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char list[240];
    join(list, sizeof(list), names, (size_t)n);
    if (!v)
        return fail(g, o, "\"%s.%s\" is required; valid values: %s", what, key, list);
    return fail(g, v, "\"%s.%s\" must be one of: %s", what, key, list);
}

static int parse_rows(const gctx *g, const cJSON *v, sr_route_rule *r)
{
    if (cJSON_IsArray(v)) {
        r->rows = SR_RW_LIST;
        return int_list(g, v, "select.rows", 0, INT32_MAX, r->row_list, SR_ROUTE_MAX_ROWS,
                        &r->n_rows);
    }
    if (!cJSON_IsObject(v))
        return fail(g, v,
                    "\"select.rows\" must be a list of indices, {\"from\", \"to\", \"stride\"} "
                    "or {\"block\", \"every\"}");
    static const char *const range_keys[] = {"from", "to", "stride", NULL};
    static const char *const block_keys[] = {"block", "every", NULL};
    int block = cJSON_GetObjectItemCaseSensitive(v, "block") ||
                cJSON_GetObjectItemCaseSensitive(v, "every");
    int rc = only_keys(g, v, "select.rows", block ? block_keys : range_keys);
    if (rc)
        return rc;
    if (block) {
        r->rows = SR_RW_BLOCK;
        r->block = r->every = 0;
        rc = opt_int(g, v, "select.rows", "every", 1, INT32_MAX, &r->every);
        if (!rc)
            rc = opt_int(g, v, "select.rows", "block", 1, r->every ? r->every : 1, &r->block);
        if (!rc && (!r->block || !r->every))
            rc = fail(g, v, "\"select.rows\" blocks need \"block\" and \"every\" (block <= every)");
        return rc;
    }
    r->rows = SR_RW_RANGE;
    rc = opt_int(g, v, "select.rows", "from", 0, INT32_MAX, &r->from);
    if (!rc)
        rc = opt_int(g, v, "select.rows", "to", r->from, INT32_MAX, &r->to);
    if (!rc)
        rc = opt_int(g, v, "select.rows", "stride", 1, INT32_MAX, &r->stride);
    return rc;
}

static int parse_layers(const gctx *g, const cJSON *v, const char *name, int *out, int *n)
{
    int64_t l[SR_ROUTE_MAX_LAYERS];
    int rc = int_list(g, v, name, 0, SR_ROUTE_MAX_LAYER, l, SR_ROUTE_MAX_LAYERS, n);
    for (int i = 0; !rc && i < *n; i++)
        out[i] = (int)l[i];
    return rc;
}

static int parse_select(const gctx *g, const cJSON *s, sr_route_rule *r)
{
    if (!s)
        return 0;
    if (!cJSON_IsObject(s))
        return fail(g, s,
                    "\"select\" must be an object (keys: region, chunk, rows, layers, field)");
    int rc = only_keys(g, s, "select", SELECT_KEYS), region = 0;
    if (!rc)
        rc = name_of(g, s, "select", "region", REGION_NAMES, SR_RR_COUNT, SR_RR_ALL, &region);
    r->region = (sr_route_region)region;
    if (!rc)
        rc = opt_int(g, s, "select", "chunk", 1, 1 << 20, &r->chunk);
    if (!rc && cJSON_GetObjectItemCaseSensitive(s, "chunk") && r->region != SR_RR_CHUNK_BOUNDARY)
        rc = fail(g, cJSON_GetObjectItemCaseSensitive(s, "chunk"),
                  "\"select.chunk\" applies to region chunk_boundary only");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "rows");
    if (!rc && v)
        rc = parse_rows(g, v, r);
    v = cJSON_GetObjectItemCaseSensitive(s, "layers");
    if (!rc && v)
        rc = parse_layers(g, v, "select.layers", r->layers, &r->n_layers);
    int field = 0;
    if (!rc)
        rc = name_of(g, s, "select", "field", FIELD_NAMES, SR_RF_COUNT, SR_RF_ROUTED_EXPERTS,
                     &field);
    r->field = (sr_route_field)field;
    return rc;
}

/* The keys each action takes besides "do". */
static int action_takes(sr_route_action a, const char *key)
{
    switch (a) {
    case SR_RA_CONSTANT:
        return strcmp(key, "value") == 0;
    case SR_RA_SHIFT:
        return strcmp(key, "k") == 0;
    case SR_RA_SWAP_LAYERS:
        return strcmp(key, "layers") == 0;
    case SR_RA_WEIGHT_VERSION:
        return strcmp(key, "version") == 0;
    case SR_RA_TRUNCATE:
        return strcmp(key, "tokens") == 0 || strcmp(key, "partial") == 0;
    case SR_RA_MARK_PARTIAL:
        return strcmp(key, "tokens") == 0;
    default:
        return 0;
    }
}

static int parse_action_params(const gctx *g, const cJSON *a, sr_route_rule *r)
{
    int rc = 0, n = 0;
    const cJSON *v;
    if (!rc)
        rc = opt_int(g, a, "action", "value", 0, INT32_MAX, &r->value);
    if (!rc)
        rc = opt_int(g, a, "action", "k", -SR_ROUTE_MAX_SHIFT, SR_ROUTE_MAX_SHIFT, &r->k);
    if (!rc && r->act == SR_RA_SHIFT && r->k == 0)
        rc = fail(g, a, "\"action.k\" of shift must not be 0 (default 1)");
    if (!rc)
        rc = opt_int(g, a, "action", "version", 0, INT32_MAX, &r->version);
    if (!rc)
        rc = opt_int(g, a, "action", "tokens", 0, INT32_MAX, &r->tokens);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(a, "layers"))) {
        int l[SR_ROUTE_MAX_LAYERS];
        rc = parse_layers(g, v, "action.layers", l, &n);
        if (!rc && (n != 2 || l[0] == l[1]))
            rc = fail(g, v, "\"action.layers\" of swap_layers must name two distinct layers");
        if (!rc)
            memcpy(r->swap, l, sizeof(r->swap));
    }
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(a, "partial"))) {
        if (!cJSON_IsBool(v))
            return fail(g, v, "\"action.partial\" must be true or false");
        r->partial = cJSON_IsTrue(v);
    }
    if (!rc && r->act == SR_RA_SWAP_LAYERS && !cJSON_GetObjectItemCaseSensitive(a, "layers"))
        rc = fail(g, a, "swap_layers needs \"action.layers\": two distinct layers");
    if (!rc && r->act == SR_RA_WEIGHT_VERSION && !cJSON_GetObjectItemCaseSensitive(a, "version"))
        rc = fail(g, a, "weight_version needs \"action.version\"");
    if (!rc && r->act == SR_RA_CONSTANT && !cJSON_GetObjectItemCaseSensitive(a, "value"))
        rc = fail(g, a, "constant needs \"action.value\"");
    return rc;
}

static int parse_action(const gctx *g, const cJSON *a, sr_route_rule *r)
{
    char list[240];
    join(list, sizeof(list), ACTION_NAMES, SR_RA_COUNT);
    if (!a)
        return fail(g, NULL, "\"action\" is required: {\"do\": one of %s}", list);
    if (!cJSON_IsObject(a))
        return fail(g, a, "\"action\" must be an object {\"do\": one of %s}", list);
    int rc = only_keys(g, a, "action", ACTION_KEYS), act = 0;
    if (!rc)
        rc = name_of(g, a, "action", "do", ACTION_NAMES, SR_RA_COUNT, -1, &act);
    r->act = (sr_route_action)act;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        if (rc || strcmp(e->string, "do") == 0 || action_takes(r->act, e->string))
            continue;
        rc = fail(g, e, "action %s takes no \"action.%s\"", ACTION_NAMES[r->act], e->string);
    }
    if (!rc)
        rc = parse_action_params(g, a, r);
    if (!rc && r->act == SR_RA_MARK_PARTIAL)
        r->partial = 1;
    /* Each field has its own actions: logprobs are values, not rows of experts. */
    if (!rc && r->field == SR_RF_LOGPROBS && r->act != SR_RA_NULL && r->act != SR_RA_DROP)
        rc = fail(g, a, "select.field logprobs takes \"action.do\" null or drop, not %s",
                  ACTION_NAMES[r->act]);
    if (!rc && r->field != SR_RF_LOGPROBS && r->act == SR_RA_DROP)
        rc = fail(g, a, "action drop applies to select.field logprobs only");
    return rc;
}

static void rule_defaults(sr_route_rule *r)
{
    memset(r, 0, sizeof(*r));
    r->active = 1;
    r->chunk = 16;
    r->to = -1;
    r->stride = 1;
    r->k = 1;
}

int sr_route_rule_parse(sr_route_rule *out, const cJSON *select, const cJSON *action,
                        const cJSON **where, sr_err *err)
{
    gctx g = {where, err};
    rule_defaults(out);
    int rc = parse_select(&g, select, out);
    if (!rc)
        rc = parse_action(&g, action, out);
    if (!rc && select && out->field == SR_RF_LOGPROBS &&
        cJSON_GetObjectItemCaseSensitive(select, "layers"))
        rc = fail(&g, cJSON_GetObjectItemCaseSensitive(select, "layers"),
                  "\"select.layers\" does not apply to select.field logprobs");
    if (!rc && select && !sr_route_rule_selects(out) &&
        (cJSON_GetObjectItemCaseSensitive(select, "rows") ||
         cJSON_GetObjectItemCaseSensitive(select, "layers")))
        rc = fail(&g, select,
                  "action %s acts on the whole reply: \"select.rows\" and \"select.layers\" "
                  "do not apply",
                  ACTION_NAMES[out->act]);
    if (rc)
        out->active = 0;
    return rc;
}

int sr_route_alias(sr_route_rule *out, const char *kind_name, sr_err *err)
{
    for (size_t i = 0; kind_name && i < sizeof(ALIASES) / sizeof(ALIASES[0]); i++) {
        if (strcmp(ALIASES[i].kind, kind_name) != 0)
            continue;
        cJSON *s = ALIASES[i].select ? cJSON_Parse(ALIASES[i].select) : NULL;
        cJSON *a = cJSON_Parse(ALIASES[i].action);
        int rc = sr_route_rule_parse(out, s, a, NULL, err);
        cJSON_Delete(s);
        cJSON_Delete(a);
        if (rc)
            return sr_err_set(err, SR_E_INTERNAL, "alias %s: %s", kind_name, err ? err->msg : "");
        return 1;
    }
    return 0;
}

const char *sr_route_alias_at(size_t i, const char **select, const char **action)
{
    if (i >= sizeof(ALIASES) / sizeof(ALIASES[0]))
        return NULL;
    *select = ALIASES[i].select;
    *action = ALIASES[i].action;
    return ALIASES[i].kind;
}

/* ---- selection ---- */

/* The row's index in its region, or -1 when the region does not hold it. */
static int64_t region_index(const sr_route_rule *r, int64_t pos, int64_t P, int64_t start)
{
    switch (r->region) {
    case SR_RR_ALL:
        return pos;
    case SR_RR_PROMPT:
        return pos < P ? pos : -1;
    case SR_RR_OUTPUT:
        return pos >= P ? pos - P : -1;
    case SR_RR_TURN_BOUNDARY:
        return start > 0 && pos == start ? 0 : -1;
    case SR_RR_CHUNK_BOUNDARY:
        return pos > 0 && pos < P && pos % r->chunk == 0 ? pos / r->chunk - 1 : -1;
    case SR_RR_COUNT:
        break;
    }
    return -1;
}

int sr_route_rule_covers(const sr_route_rule *r, int64_t pos, int64_t P, int64_t start,
                         int64_t layer)
{
    int64_t i = region_index(r, pos, P, start);
    if (i < 0)
        return 0;
    int hit = 1;
    switch (r->rows) {
    case SR_RW_LIST:
        hit = 0;
        for (int k = 0; k < r->n_rows && !hit; k++)
            hit = r->row_list[k] == i;
        break;
    case SR_RW_RANGE:
        hit = i >= r->from && (r->to < 0 || i < r->to) && (i - r->from) % r->stride == 0;
        break;
    case SR_RW_BLOCK:
        hit = i % r->every < r->block;
        break;
    case SR_RW_ALL:
        break;
    }
    if (!hit || layer < 0 || !r->n_layers)
        return hit;
    for (int k = 0; k < r->n_layers; k++)
        if (r->layers[k] == layer)
            return 1;
    return 0;
}

/* ---- writing and describing ---- */

static cJSON *ints(const int64_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        char buf[24];
        snprintf(buf, sizeof(buf), "%lld", (long long)v[i]);
        if (!cJSON_AddItemToArray(a, cJSON_CreateRaw(buf))) {
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static cJSON *int_layers(const int *l, int n)
{
    int64_t v[SR_ROUTE_MAX_LAYERS];
    for (int i = 0; i < n && i < SR_ROUTE_MAX_LAYERS; i++)
        v[i] = l[i];
    return ints(v, n);
}

static int put(cJSON *o, const char *key, cJSON *item)
{
    if (item && cJSON_AddItemToObject(o, key, item))
        return 0;
    cJSON_Delete(item);
    return -1;
}

static int put_int(cJSON *o, const char *key, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "%lld", (long long)v);
    return put(o, key, cJSON_CreateRaw(buf));
}

static int write_rows(cJSON *s, const sr_route_rule *r)
{
    if (r->rows == SR_RW_LIST)
        return put(s, "rows", ints(r->row_list, r->n_rows));
    if (r->rows == SR_RW_ALL)
        return 0;
    cJSON *o = cJSON_CreateObject();
    int rc = o ? 0 : -1;
    if (!rc && r->rows == SR_RW_BLOCK) {
        rc = put_int(o, "block", r->block);
        if (!rc)
            rc = put_int(o, "every", r->every);
    }
    if (!rc && r->rows == SR_RW_RANGE) {
        rc = put_int(o, "from", r->from);
        if (!rc && r->to >= 0)
            rc = put_int(o, "to", r->to);
        if (!rc)
            rc = put_int(o, "stride", r->stride);
    }
    return rc ? (cJSON_Delete(o), -1) : put(s, "rows", o);
}

static int write_action(cJSON *a, const sr_route_rule *r)
{
    int rc = put(a, "do", cJSON_CreateString(ACTION_NAMES[r->act]));
    if (!rc && r->act == SR_RA_CONSTANT)
        rc = put_int(a, "value", r->value);
    if (!rc && r->act == SR_RA_SHIFT)
        rc = put_int(a, "k", r->k);
    if (!rc && r->act == SR_RA_SWAP_LAYERS)
        rc = put(a, "layers", int_layers(r->swap, 2));
    if (!rc && r->act == SR_RA_WEIGHT_VERSION)
        rc = put_int(a, "version", r->version);
    if (!rc && (r->act == SR_RA_TRUNCATE || r->act == SR_RA_MARK_PARTIAL))
        rc = put_int(a, "tokens", r->tokens);
    if (!rc && r->act == SR_RA_TRUNCATE)
        rc = put(a, "partial", cJSON_CreateBool(r->partial));
    return rc;
}

int sr_route_rule_write_json(cJSON **select, cJSON **action, const sr_route_rule *r, sr_err *err)
{
    *select = *action = NULL;
    if ((unsigned)r->region >= SR_RR_COUNT || (unsigned)r->act >= SR_RA_COUNT ||
        (unsigned)r->field >= SR_RF_COUNT || r->n_rows < 0 || r->n_rows > SR_ROUTE_MAX_ROWS ||
        r->n_layers < 0 || r->n_layers > SR_ROUTE_MAX_LAYERS || (unsigned)r->rows > SR_RW_BLOCK)
        return sr_err_set(err, SR_E_INTERNAL, "a route rule holds a value no plan parses to");
    cJSON *s = cJSON_CreateObject(), *a = cJSON_CreateObject();
    int rc = s && a ? put(s, "region", cJSON_CreateString(REGION_NAMES[r->region])) : -1;
    if (!rc && r->region == SR_RR_CHUNK_BOUNDARY)
        rc = put_int(s, "chunk", r->chunk);
    if (!rc && r->field != SR_RF_ROUTED_EXPERTS)
        rc = put(s, "field", cJSON_CreateString(FIELD_NAMES[r->field]));
    if (!rc && sr_route_rule_selects(r))
        rc = write_rows(s, r);
    if (!rc && r->n_layers && sr_route_rule_selects(r))
        rc = put(s, "layers", int_layers(r->layers, r->n_layers));
    if (!rc)
        rc = write_action(a, r);
    if (rc) {
        cJSON_Delete(s);
        cJSON_Delete(a);
        return sr_err_set(err, SR_E_NOMEM, "cannot write a route rule");
    }
    *select = s;
    *action = a;
    return 0;
}

void sr_route_rule_describe(char *buf, size_t cap, const sr_route_rule *r)
{
    size_t n = 0;
    if (r->field != SR_RF_ROUTED_EXPERTS)
        n = (size_t)snprintf(buf, cap, "field %s, ", sr_route_field_name(r->field));
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "region %s", sr_route_region_name(r->region));
    if (n < cap && r->region == SR_RR_CHUNK_BOUNDARY)
        n += (size_t)snprintf(buf + n, cap - n, " (chunk %lld)", (long long)r->chunk);
    if (n < cap && r->rows == SR_RW_LIST) {
        n += (size_t)snprintf(buf + n, cap - n, ", rows [");
        for (int i = 0; i < r->n_rows && n < cap; i++)
            n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "",
                                  (long long)r->row_list[i]);
        n += n < cap ? (size_t)snprintf(buf + n, cap - n, "]") : 0;
    } else if (n < cap && r->rows == SR_RW_RANGE) {
        n += (size_t)snprintf(buf + n, cap - n, ", rows from %lld", (long long)r->from);
        if (n < cap && r->to >= 0)
            n += (size_t)snprintf(buf + n, cap - n, " to %lld", (long long)r->to);
        if (n < cap)
            n += (size_t)snprintf(buf + n, cap - n, " stride %lld", (long long)r->stride);
    } else if (n < cap && r->rows == SR_RW_BLOCK) {
        n += (size_t)snprintf(buf + n, cap - n, ", rows %lld of every %lld", (long long)r->block,
                              (long long)r->every);
    }
    if (n < cap && r->n_layers) {
        n += (size_t)snprintf(buf + n, cap - n, ", layers [");
        for (int i = 0; i < r->n_layers && n < cap; i++)
            n += (size_t)snprintf(buf + n, cap - n, "%s%d", i ? "," : "", r->layers[i]);
        n += n < cap ? (size_t)snprintf(buf + n, cap - n, "]") : 0;
    }
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, ": %s", sr_route_action_name(r->act));
    if (n >= cap)
        return;
    if (r->act == SR_RA_CONSTANT)
        snprintf(buf + n, cap - n, " %lld", (long long)r->value);
    else if (r->act == SR_RA_SHIFT)
        snprintf(buf + n, cap - n, " by %lld", (long long)r->k);
    else if (r->act == SR_RA_SWAP_LAYERS)
        snprintf(buf + n, cap - n, " %d and %d", r->swap[0], r->swap[1]);
    else if (r->act == SR_RA_WEIGHT_VERSION)
        snprintf(buf + n, cap - n, " %lld", (long long)r->version);
    else if (r->act == SR_RA_TRUNCATE || r->act == SR_RA_MARK_PARTIAL)
        snprintf(buf + n, cap - n, " to %lld tokens%s", (long long)r->tokens,
                 r->act == SR_RA_TRUNCATE && r->partial ? ", partial" : "");
}
