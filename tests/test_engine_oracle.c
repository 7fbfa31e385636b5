/*
 * POST /syncroll/v1/oracle over real HTTP (harness/engine/serve_oracle.c, oracle_req.h): its rows
 * are those a clean generate returns for the same sequence, in the skyrl, vllm and vllm-json
 * wires; they stay the truth while a route fault corrupts generate, and while every request but
 * this one answers an HTTP fault; they follow the weights after a sync; and every refusal names
 * its error. The body parser is also driven directly at its bounds.
 */
#include "engine_faults_util.h"
#include "engine/oracle_req.h"
#include "spec/dialect.h"
#include "spec/endpoints.h"
#include "spec/faults.h"

#define MAXN 64 /* tokens of a sequence in these tests */

/* A parsed oracle answer: shape [rows, L, K], the ids in C order, the version. */
typedef struct oans {
    int64_t shape[3];
    int32_t ids[MAXN * 2 * 4];
    long long version, row_start, row_end;
} oans;

/* POSTs {"token_ids": seq[0..n) <extra>} to the oracle route. */
static void oracle_post(hresp *r, const eng *e, const int32_t *seq, size_t n, const char *extra)
{
    sr_buf b = SR_BUF_INIT;
    sr_buf_puts(&b, "{\"token_ids\":[", NULL);
    for (size_t i = 0; i < n; i++)
        sr_buf_printf(&b, NULL, "%s%d", i ? "," : "", (int)seq[i]);
    sr_buf_printf(&b, NULL, "]%s}", extra ? extra : "");
    http_post(r, e, "/syncroll/v1/oracle", b.data);
    sr_buf_release(&b);
}

static long long num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "no number %s", key);
    return (long long)v->valuedouble;
}

/* Asks the oracle and parses its 200 answer; the nested lists must match "shape" exactly. */
static void oracle_ask(oans *a, const eng *e, const int32_t *seq, size_t n, const char *extra)
{
    hresp r;
    oracle_post(&r, e, seq, n, extra);
    ck_assert_msg(r.status == 200, "oracle: %ld %s", r.status, r.body.data);
    cJSON *d = cJSON_Parse(r.body.data);
    ck_assert_ptr_nonnull(d);
    memset(a, 0, sizeof(*a));
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(d, "shape");
    for (int k = 0; k < 3; k++)
        a->shape[k] = (int64_t)cJSON_GetArrayItem(shape, k)->valuedouble;
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(d, "dtype")->valuestring, "int32");
    a->version = num(d, "weight_version");
    a->row_start = num(d, "row_start");
    a->row_end = num(d, "row_end");
    ck_assert_int_eq(a->shape[0], a->row_end - a->row_start);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(d, "routes"), *row, *layer, *id;
    ck_assert_int_eq(cJSON_GetArraySize(rows), a->shape[0]);
    size_t at = 0;
    cJSON_ArrayForEach(row, rows)
    {
        ck_assert_int_eq(cJSON_GetArraySize(row), a->shape[1]);
        cJSON_ArrayForEach(layer, row)
        {
            ck_assert_int_eq(cJSON_GetArraySize(layer), a->shape[2]);
            cJSON_ArrayForEach(id, layer) a->ids[at++] = (int32_t)id->valuedouble;
        }
    }
    cJSON_Delete(d);
    hresp_free(&r);
}

/* The prompt followed by the token ids a generate reply returned (choices[0].token_ids, or
 * sglang's output_ids) into seq; returns the length. */
static size_t sequence_of(int32_t *seq, const int32_t *prompt, size_t P, const hresp *r)
{
    ck_assert_msg(r->status == 200, "generate: %ld %s", r->status, r->body.data);
    cJSON *d = cJSON_Parse(r->body.data);
    const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d, "choices"), 0);
    const cJSON *t, *ids = ch ? cJSON_GetObjectItemCaseSensitive(ch, "token_ids")
                              : cJSON_GetObjectItemCaseSensitive(d, "output_ids");
    ck_assert_msg(cJSON_IsArray(ids), "no token ids in %s", r->body.data);
    memcpy(seq, prompt, P * sizeof(*seq));
    size_t n = P;
    cJSON_ArrayForEach(t, ids)
    {
        ck_assert_uint_lt(n, MAXN);
        seq[n++] = (int32_t)t->valuedouble;
    }
    cJSON_Delete(d);
    return n;
}

static int64_t el(const sr_ndarray *a, size_t i)
{
    switch (a->dtype) {
    case SR_DTYPE_UINT8:
        return ((const uint8_t *)a->data)[i];
    case SR_DTYPE_INT16:
        return ((const int16_t *)a->data)[i];
    case SR_DTYPE_INT32:
        return ((const int32_t *)a->data)[i];
    default:
        ck_abort_msg("route dtype %s", sr_dtype_name(a->dtype));
    }
    return -1;
}

/* The route ids of a reply in `dialect` (fields `names`, concatenated, any shape) into out[0..):
 * returns how many. */
static size_t reply_ids(int32_t *out, size_t cap, const hresp *r, sr_dialect dialect,
                        const char *const *names)
{
    sr_fields *reg;
    sr_splicer *sp;
    const sr_splice_result *res;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_new(&reg, &err), err);
    ck_assert_sr_ok(sr_dialect_add_fields(reg, dialect, &err), err);
    ck_assert_sr_ok(sr_splicer_new(&sp, reg, NULL, &err), err);
    ck_assert_sr_ok(sr_splice(sp, r->body.data, r->body.len, -1, &res, &err), err);
    size_t at = 0;
    for (const char *const *nm = names; *nm; nm++) {
        const sr_splice_entry *en = splice_find(res, *nm);
        ck_assert_msg(en && en->array.data, "no route array %s in %s", *nm, r->body.data);
        size_t n = en->array.nbytes / sr_dtype_size(en->array.dtype);
        ck_assert_uint_le(at + n, cap);
        for (size_t i = 0; i < n; i++)
            out[at++] = (int32_t)el(&en->array, i);
    }
    sr_splicer_free(sp);
    sr_fields_free(reg);
    return at;
}

/* 1 when the reply's routes are exactly the oracle's answer, 0 when any id differs. */
static int same_rows(const hresp *r, sr_dialect dialect, const char *const *names, const oans *a)
{
    static int32_t ids[MAXN * 8];
    size_t n = reply_ids(ids, MAXN * 8, r, dialect, names);
    ck_assert_uint_eq(n, (size_t)(a->shape[0] * a->shape[1] * a->shape[2]));
    return memcmp(ids, a->ids, n * sizeof(int32_t)) == 0;
}

static const int32_t PROMPT[6] = {5, 6, 7, 8, 9, 10};
static const char *const SKYRL_ROUTES[] = {"routed_experts", NULL};

/* REQ (P = 6, start 2, 8 tokens) on /skyrl/v1/generate: the reply's 11 rows are the oracle's rows
 * [2, 13) of prompt + reply, asked with the default row_end (N - 1). */
START_TEST(skyrl_generate_equals_oracle)
{
    eng e;
    eng_start(&e, "{" BASE_MODEL "}");
    hresp g;
    http_post(&g, &e, "/skyrl/v1/generate", REQ);
    int32_t seq[MAXN];
    size_t n = sequence_of(seq, PROMPT, 6, &g);
    ck_assert_uint_eq(n, 14);
    oans a;
    oracle_ask(&a, &e, seq, n, ",\"row_start\":2");
    ck_assert_int_eq(a.shape[0], 11);
    ck_assert_int_eq(a.shape[1], 2);
    ck_assert_int_eq(a.shape[2], 4);
    ck_assert_int_eq(a.version, 0);
    ck_assert_msg(same_rows(&g, SR_DIALECT_SKYRL, SKYRL_ROUTES, &a), "rows differ: %s",
                  g.body.data);
    /* An explicit range is the same slice of the same rows. */
    oans b;
    oracle_ask(&b, &e, seq, n, ",\"row_start\":5,\"row_end\":9");
    ck_assert_int_eq(b.shape[0], 4);
    ck_assert_mem_eq(b.ids, a.ids + 3 * 8, 4 * 8 * sizeof(int32_t));
    hresp_free(&g);
    eng_stop(&e);
}
END_TEST

/* The vllm wire (.npy routes, rows [start, P+G-1)) and vllm-json (prompt_routed_experts [0, P)
 * and routed_experts [P, P+G): row_end N, the last sampled token's forward pass included). */
START_TEST(other_dialects_equal_oracle)
{
    eng e;
    eng_start(&e, "{\"dialect\":\"vllm\"," BASE_MODEL "}");
    hresp g;
    http_post(&g, &e, "/inference/v1/generate", REQ);
    int32_t seq[MAXN];
    size_t n = sequence_of(seq, PROMPT, 6, &g);
    oans a;
    oracle_ask(&a, &e, seq, n, ",\"row_start\":2");
    ck_assert_int_eq(a.shape[0], 11);
    ck_assert_msg(same_rows(&g, SR_DIALECT_VLLM, SKYRL_ROUTES, &a), "vllm rows differ");
    hresp_free(&g);
    eng_stop(&e);

    eng_start(&e, "{\"dialect\":\"vllm-json\"," BASE_MODEL "}");
    http_post(&g, &e, "/inference/v1/generate", REQ);
    n = sequence_of(seq, PROMPT, 6, &g);
    char end[64];
    snprintf(end, sizeof(end), ",\"row_end\":%zu", n);
    oracle_ask(&a, &e, seq, n, end);
    ck_assert_int_eq(a.shape[0], 14);
    static const char *const split[] = {"prompt_routed_experts", "routed_experts", NULL};
    ck_assert_msg(same_rows(&g, SR_DIALECT_VLLM_JSON, split, &a), "vllm-json rows differ");
    hresp_free(&g);
    eng_stop(&e);
}
END_TEST

/* sglang with masked padding (chunk 4, 1 row): the reply's prompt row 4 is -1 everywhere, the
 * oracle's row 4 real expert ids, and every other row the same in both. */
START_TEST(sglang_masked_row_is_real_in_the_oracle)
{
    eng e;
    eng_start(&e, "{\"dialect\":\"sglang\",\"masked_padding\":{\"chunk\":4,\"rows\":1}," BASE_MODEL
                  "}");
    hresp g;
    http_post(&g, &e, "/generate",
              "{\"input_ids\":[5,6,7,8,9,10],\"sampling_params\":{\"max_new_tokens\":8},"
              "\"return_routed_experts\":true}");
    int32_t seq[MAXN], got[MAXN * 8];
    size_t n = sequence_of(seq, PROMPT, 6, &g);
    static const char *const flat[] = {"routed_experts", NULL};
    ck_assert_uint_eq(reply_ids(got, MAXN * 8, &g, SR_DIALECT_SGLANG, flat), (n - 1) * 8);
    oans a;
    oracle_ask(&a, &e, seq, n, NULL);
    ck_assert_int_eq(a.shape[0], (int64_t)n - 1);
    for (size_t i = 0; i < (n - 1) * 8; i++) {
        if (i / 8 == 4)
            ck_assert_msg(got[i] == -1 && a.ids[i] >= 0 && a.ids[i] < 40, "row 4: %d, oracle %d",
                          got[i], a.ids[i]);
        else
            ck_assert_int_eq(got[i], a.ids[i]);
    }
    hresp_free(&g);
    eng_stop(&e);
}
END_TEST

/* The oracle's rows of `seq` computed here, from the config and the weights of `version`. */
static void truth(int32_t *out, const char *cfg, int64_t version, const int32_t *seq, size_t n,
                  size_t lo, size_t hi)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, cfg, strlen(cfg), "t", 0, &err), err);
    sr_oracle_model m = sr_engine_config_model(&c);
    sr_oracle *o;
    ck_assert_sr_ok(sr_oracle_new(&o, &m, &err), err);
    uint64_t g, l[2];
    expected_fps(&c, version, &g, l);
    ck_assert_sr_ok(sr_oracle_routes(out, (hi - lo) * 8 * sizeof(int32_t), NULL, SR_DTYPE_INT32, o,
                                     l, seq, n, lo, hi, &err),
                    err);
    sr_oracle_free(o);
    sr_engine_config_release(&c);
}

/* routes_all_zero on every generate: generate's rows are zeros, the oracle's the truth. An HTTP
 * fault on "any" endpoint answers every other request but leaves the oracle route alone. */
START_TEST(faults_do_not_reach_the_oracle)
{
    const char *cfg = "{" BASE_MODEL ",\"faults\":[{\"kind\":\"routes_all_zero\"}]}";
    eng e;
    eng_start(&e, cfg);
    hresp g;
    http_post(&g, &e, "/skyrl/v1/generate", REQ);
    ck_assert_msg(strstr(g.body.data, "routes_all_zero"), "fault did not fire: %s", g.body.data);
    int32_t seq[MAXN], want[MAXN * 8];
    size_t n = sequence_of(seq, PROMPT, 6, &g);
    oans a;
    oracle_ask(&a, &e, seq, n, ",\"row_start\":2");
    ck_assert_msg(!same_rows(&g, SR_DIALECT_SKYRL, SKYRL_ROUTES, &a), "the fault changed nothing");
    truth(want, cfg, 0, seq, n, 2, n - 1);
    ck_assert_mem_eq(a.ids, want, (n - 3) * 8 * sizeof(int32_t));
    hresp_free(&g);
    eng_stop(&e);

    eng_start(&e,
              "{" BASE_MODEL ",\"faults\":[{\"kind\":\"http_503_json\",\"endpoints\":\"any\"}]}");
    eng_expect(&e, "POST", "/skyrl/v1/generate", REQ, 503, "overloaded");
    oracle_ask(&a, &e, seq, n, ",\"row_start\":2");
    ck_assert_mem_eq(a.ids, want, (n - 3) * 8 * sizeof(int32_t));
    eng_stop(&e);
}
END_TEST

/* A plan cannot name the route, and "any" leaves it out (and only it), for every kind. */
START_TEST(plans_cannot_name_the_oracle)
{
    sr_fault_plan *p = NULL;
    sr_err err = SR_ERR_INIT;
    const char *named = "[{\"kind\":\"latency\",\"ms\":5,\"endpoints\":[\"oracle\"]}]";
    ck_assert_sr_code(sr_fault_plan_parse_text(&p, named, strlen(named), &err), err,
                      SR_E_FAULT_SPEC);
    ck_assert_msg(strstr(err.msg, "does not apply to endpoint oracle"), "%s", err.msg);
    const char *path = "[{\"kind\":\"reset\",\"endpoints\":\"/syncroll/v1/oracle\"}]";
    ck_assert_sr_code(sr_fault_plan_parse_text(&p, path, strlen(path), &err), err, SR_E_FAULT_SPEC);
    /* "any" is every endpoint but this one: abort_requests, the one before it, included. */
    const char *any = "[{\"kind\":\"latency\",\"ms\":5,\"endpoints\":\"any\"}]";
    ck_assert_sr_ok(sr_fault_plan_parse_text(&p, any, strlen(any), &err), err);
    ck_assert_uint_eq(sr_fault_plan_at(p, 0)->endpoints, SR_EP_ALL & ~SR_EP_BIT(SR_EP_ORACLE));
    sr_fault_plan_free(p);
    for (int k = 0; k < SR_FK_COUNT; k++) {
        const sr_fault_kind_info *ki = sr_fault_kind_info_of((sr_fault_kind)k);
        ck_assert_msg(!(ki->allowed_endpoints & SR_EP_BIT(SR_EP_ORACLE)), "%s may reach it",
                      ki->name);
    }
}
END_TEST

/* A synthetic update to version 1 changes the fingerprints: the oracle answers version 1's rows
 * (the truth at 1, no longer 0's), and they are a clean generate's after the sync. */
START_TEST(oracle_follows_a_weight_sync)
{
    const char *cfg = "{" BASE_MODEL "}";
    eng e;
    eng_start(&e, cfg);
    hresp g;
    http_post(&g, &e, "/skyrl/v1/generate", REQ);
    int32_t seq[MAXN], v0[MAXN * 8], v1[MAXN * 8];
    size_t n = sequence_of(seq, PROMPT, 6, &g);
    hresp_free(&g);
    oans before, after;
    oracle_ask(&before, &e, seq, n, NULL);
    eng_call(&e, "/update_weights", "{\"update_info\":{\"target_version\":1}}", 200, NULL);
    oracle_ask(&after, &e, seq, n, NULL);
    ck_assert_int_eq(before.version, 0);
    ck_assert_int_eq(after.version, 1);
    truth(v0, cfg, 0, seq, n, 0, n - 1);
    truth(v1, cfg, 1, seq, n, 0, n - 1);
    size_t bytes = (n - 1) * 8 * sizeof(int32_t);
    ck_assert_mem_eq(before.ids, v0, bytes);
    ck_assert_mem_eq(after.ids, v1, bytes);
    ck_assert_msg(memcmp(v0, v1, bytes) != 0, "version 1 routes as version 0");
    http_post(&g, &e, "/skyrl/v1/generate", REQ);
    n = sequence_of(seq, PROMPT, 6, &g);
    oracle_ask(&after, &e, seq, n, ",\"row_start\":2");
    ck_assert_int_eq(after.version, 1);
    ck_assert_msg(same_rows(&g, SR_DIALECT_SKYRL, SKYRL_ROUTES, &after), "rows differ after sync");
    hresp_free(&g);
    eng_stop(&e);
}
END_TEST

/* partial_weight_apply keeps layer 1's old weights: the oracle's rows are the held weights' (layer
 * 0 of version 1, layer 1 of version 0), as a clean generate's are. */
START_TEST(oracle_rows_are_the_held_weights)
{
    const char *cfg =
        "{" BASE_MODEL ",\"faults\":[{\"kind\":\"partial_weight_apply\",\"layers\":[1]}]}";
    eng e;
    eng_start(&e, cfg);
    eng_call(&e, "/update_weights", "{\"update_info\":{\"target_version\":1}}", 200, NULL);
    hresp g;
    http_post(&g, &e, "/skyrl/v1/generate", REQ);
    int32_t seq[MAXN], v0[MAXN * 8], v1[MAXN * 8];
    size_t n = sequence_of(seq, PROMPT, 6, &g);
    oans a;
    oracle_ask(&a, &e, seq, n, ",\"row_start\":2");
    ck_assert_int_eq(a.version, 1);
    ck_assert_msg(same_rows(&g, SR_DIALECT_SKYRL, SKYRL_ROUTES, &a), "rows differ");
    truth(v0, cfg, 0, seq, n, 2, n - 1);
    truth(v1, cfg, 1, seq, n, 2, n - 1);
    int layer1_differs = 0;
    for (size_t i = 0; i < (n - 3) * 8; i++) {
        ck_assert_int_eq(a.ids[i], i % 8 < 4 ? v1[i] : v0[i]);
        layer1_differs |= v0[i] != v1[i] && i % 8 >= 4;
    }
    ck_assert_msg(layer1_differs, "version 1 routes layer 1 as version 0 does");
    hresp_free(&g);
    eng_stop(&e);
}
END_TEST

/* A keep-mode pause holds generates, sleep puts memory to sleep: neither holds the oracle. */
START_TEST(pause_and_sleep_do_not_hold_it)
{
    eng e;
    eng_start(&e, "{" BASE_MODEL "}");
    int32_t seq[3] = {1, 2, 3};
    oans a, b;
    oracle_ask(&a, &e, seq, 3, NULL);
    eng_call(&e, "/pause?mode=keep", "", 200, NULL);
    oracle_ask(&b, &e, seq, 3, NULL);
    ck_assert_mem_eq(a.ids, b.ids, 2 * 8 * sizeof(int32_t));
    eng_call(&e, "/sleep?level=1", "", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"paused\":true");
    oracle_ask(&b, &e, seq, 3, NULL);
    ck_assert_mem_eq(a.ids, b.ids, 2 * 8 * sizeof(int32_t));
    eng_stop(&e);
}
END_TEST

/* POSTs body to the oracle route: the answer has `status`, names `check` and says `needle`. */
static void refused(const eng *e, const char *body, long status, const char *check,
                    const char *needle)
{
    hresp r;
    http_post(&r, e, "/syncroll/v1/oracle", body);
    eng_expect_answer(&r, status, check, body);
    ck_assert_msg(strstr(r.body.data, needle), "want %s in %s", needle, r.body.data);
    hresp_free(&r);
}

/* Every refusal over HTTP names its error; the engine keeps answering. */
START_TEST(refusals_are_named)
{
    eng e;
    eng_start(&e, "{" BASE_MODEL ",\"server\":{\"max_body_bytes\":1024,"
                  "\"max_response_bytes\":4096}}");
    refused(&e, "{\"token_ids\":[5,6,1000]}", 400, "oracle.invalid_token", "entry 2 is 1000");
    refused(&e, "{\"token_ids\":[-1]}", 400, "oracle.invalid_token", "vocabulary [0, 1000)");
    refused(&e, "{\"token_ids\":[5,99999999999999999999]}", 400, "oracle.invalid_token",
            "entry 1 is an integer out of range");
    refused(&e, "{\"token_ids\":[5,6", 400, "engine.bad_request", "invalid JSON");
    refused(&e, "[5,6]", 400, "engine.bad_request", "must be a JSON object");
    refused(&e, "{\"token_ids\":\"5,6\"}", 400, "engine.bad_request", "list of integers");
    refused(&e, "{\"token_ids\":[[5,6]]}", 400, "engine.bad_request", "not an integer");
    refused(&e, "{\"token_ids\":[5,6.0]}", 400, "engine.bad_request", "not an integer");
    refused(&e, "{\"token_ids\":[]}", 400, "engine.bad_request", "must not be empty");
    refused(&e, "{}", 400, "engine.bad_request", "token_ids is required");
    refused(&e, "{\"token_ids\":[5],\"prompt\":[1]}", 400, "engine.bad_request", "unknown key");
    refused(&e, "{\"token_ids\":[5,6],\"row_start\":3}", 400, "engine.bad_request", "row_start");
    refused(&e, "{\"token_ids\":[5,6],\"row_start\":2}", 400, "engine.bad_request", "give row_end");
    refused(&e, "{\"token_ids\":[5,6],\"row_start\":1,\"row_end\":0}", 400, "engine.bad_request",
            "row_end must be an integer in [1, 2]");
    refused(&e, "{\"token_ids\":[5,6],\"row_end\":true}", 400, "engine.bad_request", "row_end");
    refused(&e, "{\"token_ids\":[5,6],\"row_start\":\"\\u0000\"}", 400, "engine.bad_request",
            "NUL");
    /* 200 tokens: 199 rows could pass the 4096-byte answer bound. */
    sr_buf big = SR_BUF_INIT;
    sr_buf_puts(&big, "{\"token_ids\":[1", NULL);
    for (int i = 1; i < 200; i++)
        sr_buf_puts(&big, ",1", NULL);
    sr_buf_puts(&big, "]}", NULL);
    refused(&e, big.data, 400, "engine.bad_request", "server.max_response_bytes");
    /* Past max_body_bytes (1024): the server's own 413 before any parse. */
    for (int i = 0; i < 800; i++)
        sr_buf_puts(&big, " ", NULL);
    refused(&e, big.data, 413, "resource.limit", "larger than the engine's limit");
    sr_buf_release(&big);
    int32_t one[2] = {5, 6};
    oans a;
    oracle_ask(&a, &e, one, 2, NULL);
    ck_assert_int_eq(a.shape[0], 1);
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 0);
    eng_stop(&e);
}
END_TEST

/* The parser alone, at its bounds: max_seq, literals, defaults, and nothing left on error. */
START_TEST(parser_bounds)
{
    sr_oracle_req q;
    sr_err err = SR_ERR_INIT;
    const char *ok = "{\"token_ids\":[0,1,2],\"row_start\":null,\"row_end\":null}";
    ck_assert_sr_ok(sr_oracle_req_parse(&q, ok, strlen(ok), 3, 3, &err), err);
    ck_assert_uint_eq(q.n, 3);
    ck_assert_int_eq(q.row_start, 0);
    ck_assert_int_eq(q.row_end, 2);
    sr_oracle_req_release(&q);
    ck_assert_sr_code(sr_oracle_req_parse(&q, ok, strlen(ok), 3, 2, &err), err,
                      SR_E_ENGINE_REQUEST);
    ck_assert_msg(strstr(err.msg, "more than the engine's maximum sequence length 2"), "%s",
                  err.msg);
    ck_assert_ptr_null(q.tokens);
    /* Each bad body has one name, and the message says what is wrong. */
    static const struct {
        const char *body;
        int code;
        const char *says;
    } bad[] = {
        {"{\"token_ids\":[1e0]}", SR_E_ENGINE_REQUEST, "token_ids entry 0 is not an integer"},
        {"{\"token_ids\":[true]}", SR_E_ENGINE_REQUEST, "token_ids entry 0 is not an integer"},
        {"{\"token_ids\":[1],\"row_end\":1.0}", SR_E_ENGINE_REQUEST,
         "row_end must be an integer in [0, 1]"},
        {"{\"token_ids\":[1],\"token_ids\":[1]}", SR_E_ENGINE_REQUEST,
         "key 'token_ids' appears twice"},
        /* 20 digits: an integer out of range, named as any other id outside the vocabulary;
         * both signs, one past the largest int64, and a fraction that long. */
        {"{\"token_ids\":[99999999999999999999]}", SR_E_ORACLE_TOKEN,
         "token_ids entry 0 is an integer out of range, outside the model's vocabulary "
         "[0, 3)"},
        {"{\"token_ids\":[1,-99999999999999999999]}", SR_E_ORACLE_TOKEN,
         "token_ids entry 1 is an integer out of range"},
        {"{\"token_ids\":[9223372036854775808]}", SR_E_ORACLE_TOKEN,
         "token_ids entry 0 is an integer out of range"},
        {"{\"token_ids\":[4000000000]}", SR_E_ORACLE_TOKEN,
         "token_ids entry 0 is 4000000000, outside the model's vocabulary [0, 3)"},
        {"{\"token_ids\":[99999999999999999999.0]}", SR_E_ENGINE_REQUEST,
         "token_ids entry 0 is not an integer"},
        {"", SR_E_ENGINE_REQUEST, "request:1:1: invalid JSON"},
        {"{\"token_ids\":[1]} x", SR_E_ENGINE_REQUEST, "request:1:19: invalid JSON"},
        {"{\"token_ids\":[1],\"row_start\":-1}", SR_E_ENGINE_REQUEST,
         "row_start must be an integer in [0, 1]"},
        {"{\"token_ids\":[3]}", SR_E_ORACLE_TOKEN,
         "token_ids entry 0 is 3, outside the model's vocabulary [0, 3)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = sr_oracle_req_parse(&q, bad[i].body, strlen(bad[i].body), 3, 8, &err);
        ck_assert_msg(rc == bad[i].code, "%s: %s, want %s", bad[i].body, sr_code_name(rc),
                      sr_code_name(bad[i].code));
        ck_assert_int_eq(err.code, rc);
        ck_assert_msg(strstr(err.msg, bad[i].says), "%s: %s", bad[i].body, err.msg);
        ck_assert_ptr_null(q.tokens);
    }
    const char *all = "{\"token_ids\":[2,1],\"row_start\":2,\"row_end\":2}";
    ck_assert_sr_ok(sr_oracle_req_parse(&q, all, strlen(all), 3, 8, &err), err);
    ck_assert_int_eq(q.row_end - q.row_start, 0);
    sr_oracle_req_release(&q);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("engine_oracle");
    TCase *tc = tcase_create("oracle");
    tcase_add_test(tc, skyrl_generate_equals_oracle);
    tcase_add_test(tc, other_dialects_equal_oracle);
    tcase_add_test(tc, sglang_masked_row_is_real_in_the_oracle);
    tcase_add_test(tc, faults_do_not_reach_the_oracle);
    tcase_add_test(tc, plans_cannot_name_the_oracle);
    tcase_add_test(tc, oracle_follows_a_weight_sync);
    tcase_add_test(tc, oracle_rows_are_the_held_weights);
    tcase_add_test(tc, pause_and_sleep_do_not_hold_it);
    tcase_add_test(tc, refusals_are_named);
    tcase_add_test(tc, parser_bounds);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(make_suite)
