/* Every mock-engine fault produces exactly its declared effect, seen by a real HTTP client (the
 * weights kinds: test_engine_weight_faults.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "engine_faults_util.h"
#include "spec/dialect.h"

/* The faulted reply (first request) and a normal reply (second request) to REQ. */
static void faulted_and_normal(const eng *e, hresp *bad, hresp *good)
{
    http_post(bad, e, "/skyrl/v1/generate", REQ);
    http_post(good, e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(good->status, 200);
}

typedef struct body_case {
    const char *fault;
    int want; /* splice result */
    const char *needle;
} body_case;

static const body_case BODY_CASES[] = {
    {"{\"kind\":\"bad_base64\",\"nth\":1,\"offset\":3}", SR_E_B64_CHAR, NULL},
    {"{\"kind\":\"byte_count_off\",\"nth\":1}", SR_E_ENV_BYTE_COUNT, "\"shape\":[12,2,4]"},
    {"{\"kind\":\"non_canonical_dtype\",\"nth\":1}", SR_E_ENV_NON_CANONICAL, "\"dtype\":\"int16\""},
    {"{\"kind\":\"reordered_envelope\",\"nth\":1}", SR_E_SPLICE_DRIFT,
     "\"routed_experts\":{\"dtype\":\"uint8\",\"shape\":[11,2,4],\"data\":\""},
    {"{\"kind\":\"respaced_json\",\"nth\":1}", SR_E_SPLICE_DRIFT,
     "{\"choices\": [{\"token_ids\": ["},
    {"{\"kind\":\"data_null\",\"nth\":1}", SR_E_SPLICE_DRIFT, "\"routed_experts\":{\"data\":null,"},
    {"{\"kind\":\"lookalike_field\",\"nth\":1}", 0, "\"not_routed_experts\":{\"data\":\""},
    {"{\"kind\":\"escaped_quote_key\",\"nth\":1}", SR_E_SPLICE_ORPHAN,
     ",\"x\\\"routed_experts\":{\"data\":\""},
    {"{\"kind\":\"duplicate_field\",\"nth\":1}", SR_E_JSON_DUPLICATE_KEY, NULL},
    {"{\"kind\":\"extra_envelope\",\"nth\":1,\"key\":\"debug_routes\"}", 0,
     ",\"debug_routes\":{\"data\":\""},
    {"{\"kind\":\"deep_nesting\",\"nth\":1}", SR_E_JSON_TOO_DEEP, ",\"routed_experts_nest\":[[[["},
    {"{\"kind\":\"nested_envelope\",\"nth\":1}", SR_E_SPLICE_DRIFT,
     "\"routed_experts\":{\"data\":null,\"shape\":[11,2,4],\"dtype\":\"uint8\",\"debug\":{"
     "\"routed_experts\":{\"data\":\""},
    {"{\"kind\":\"truncate_in_blob\",\"nth\":1}", SR_E_SPLICE_UNTERMINATED, NULL},
    {"{\"kind\":\"truncate_after_blobs\",\"nth\":1}", SR_E_SPLICE_TRUNCATED, NULL},
};

START_TEST(test_body_faults_fail_the_splice_by_name)
{
    const body_case *c = &BODY_CASES[_i];
    eng e;
    start_with(&e, c->fault);
    hresp bad, good;
    faulted_and_normal(&e, &bad, &good);
    ck_assert_msg(bad.cc == CURLE_OK && bad.status == 200, "%s: cc %d status %ld", c->fault, bad.cc,
                  bad.status);
    if (c->needle)
        ck_assert_msg(strstr(bad.body.data, c->needle), "%s: '%s' not in %s", c->fault, c->needle,
                      bad.body.data);
    sr_splicer *sp;
    sr_fields *reg;
    const sr_splice_result *res;
    sr_err err = SR_ERR_INIT;
    int rc = splice_body(&sp, &reg, &bad.body, &res, &err);
    ck_assert_msg(rc == c->want, "%s: splice gave %s (%s), expected %s", c->fault, sr_code_name(rc),
                  err.msg, sr_code_name(c->want));
    if (c->want == 0) {
        /* The client that ignores look-alike and unregistered keys gets the true routes. */
        const sr_splice_entry *re = splice_find(res, "routed_experts");
        ck_assert_int_eq(re->array.shape[0], 11);
        sr_buf copy = SR_BUF_INIT;
        sr_buf_append(&copy, re->array.data, re->array.nbytes, NULL);
        sr_splicer_free(sp);
        sr_fields_free(reg);
        ck_assert_sr_ok(splice_body(&sp, &reg, &good.body, &res, &err), err);
        ck_assert_mem_eq(splice_find(res, "routed_experts")->array.data, copy.data, copy.len);
        sr_buf_release(&copy);
    }
    if (c->want == SR_E_SPLICE_UNTERMINATED || c->want == SR_E_SPLICE_TRUNCATED) {
        /* A truncation is a prefix of the true body. */
        ck_assert_int_lt(bad.body.len, good.body.len);
        ck_assert_mem_eq(bad.body.data, good.body.data, bad.body.len);
    }
    sr_splicer_free(sp);
    sr_fields_free(reg);
    hresp_free(&bad);
    hresp_free(&good);
    eng_stop(&e);
}
END_TEST

/* vllm's .npy routes (300 experts: uint16) with a big-endian or Fortran-order header: the body
 * stays valid JSON and base64, and the strict .npy reading names the header; the next reply,
 * without the fault, is read by the same registry. */
START_TEST(test_npy_header_faults)
{
    static const struct {
        const char *fault;
        int want;
        const char *descr;
    } cases[] = {
        {"{\"kind\":\"npy_big_endian\",\"nth\":1}", SR_E_NPY_BYTE_ORDER, "'>u2'"},
        {"{\"kind\":\"npy_fortran_order\",\"nth\":1}", SR_E_NPY_FORTRAN, "True"},
    };
    for (size_t c = 0; c < 2; c++) {
        eng e;
        char cfg[1024];
        snprintf(cfg, sizeof(cfg),
                 "{\"seed\":3,\"dialect\":\"vllm\",\"model\":{\"vocab\":1000,\"layers\":2,"
                 "\"experts\":300,\"topk\":4,\"eos_id\":-1},\"faults\":[%s]}",
                 cases[c].fault);
        eng_start(&e, cfg);
        hresp r[2];
        sr_fields *reg;
        sr_splicer *sp;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_fields_new(&reg, &err), err);
        ck_assert_sr_ok(sr_dialect_add_fields(reg, SR_DIALECT_VLLM, &err), err);
        ck_assert_sr_ok(sr_splicer_new(&sp, reg, NULL, &err), err);
        for (int i = 0; i < 2; i++) {
            http_post(&r[i], &e, "/inference/v1/generate", REQ);
            ck_assert_int_eq(r[i].status, 200);
            const sr_splice_result *res;
            int rc = sr_splice(sp, r[i].body.data, r[i].body.len, -1, &res, &err);
            ck_assert_msg(rc == (i ? 0 : cases[c].want), "%s reply %d: %s (%s)", cases[c].fault, i,
                          sr_code_name(rc), err.msg);
            if (i == 0)
                ck_assert_msg(strstr(err.msg, cases[c].descr), "%s", err.msg);
            else
                ck_assert_int_eq(res->entries[1].array.dtype, SR_DTYPE_UINT16);
            hresp_free(&r[i]);
        }
        sr_splicer_free(sp);
        sr_fields_free(reg);
        eng_stop(&e);
    }
}
END_TEST

/* The body faults that make sense on the string wires and dynamo's object: a '!' in the base64,
 * and a shape (or, on sglang's shapeless flat int32, a byte count) one row off. */
START_TEST(test_body_faults_in_dialects)
{
    static const struct {
        sr_dialect d;
        const char *path;
        int bad_b64, count_off;
    } cases[] = {
        {SR_DIALECT_VLLM, "/inference/v1/generate", SR_E_B64_CHAR, SR_E_NPY_BYTE_COUNT},
        {SR_DIALECT_SGLANG, "/generate", SR_E_B64_CHAR, SR_E_WIRE_BYTE_COUNT},
        {SR_DIALECT_DYNAMO, "/v1/completions", SR_E_B64_CHAR, SR_E_ENV_BYTE_COUNT},
        {SR_DIALECT_NEMO_RL, "/v1/chat/completions", SR_E_B64_CHAR, SR_E_WIRE_BYTE_COUNT},
    };
    static const char *const faults[2] = {"{\"kind\":\"bad_base64\",\"nth\":1}",
                                          "{\"kind\":\"byte_count_off\",\"nth\":1}"};
    /* each dialect's own request shape, routes asked for */
    static const char *const reqs[] = {
        REQ,
        ("{\"input_ids\":[5,6,7,8,9,10],\"sampling_params\":{\"max_new_tokens\":8},"
         "\"return_routed_experts\":true}"),
        "{\"model\":\"default\",\"prompt\":[5,6,7,8,9,10],\"max_tokens\":8}",
        "{\"model\":\"default\",\"prompt_token_ids\":[5,6,7,8,9,10],\"max_tokens\":8}",
    };
    for (size_t c = 0; c < 4; c++) {
        for (int f = 0; f < 2; f++) {
            eng e;
            char cfg[1024];
            snprintf(cfg, sizeof(cfg), "{" BASE_MODEL ",\"dialect\":\"%s\",\"faults\":[%s]}",
                     sr_dialect_name(cases[c].d), faults[f]);
            eng_start(&e, cfg);
            sr_fields *reg;
            sr_splicer *sp;
            sr_err err = SR_ERR_INIT;
            ck_assert_sr_ok(sr_fields_new(&reg, &err), err);
            ck_assert_sr_ok(sr_dialect_add_fields(reg, cases[c].d, &err), err);
            ck_assert_sr_ok(sr_splicer_new(&sp, reg, NULL, &err), err);
            for (int i = 0; i < 2; i++) {
                hresp r;
                http_post(&r, &e, cases[c].path, reqs[c]);
                ck_assert_int_eq(r.status, 200);
                const sr_splice_result *res;
                int rc = sr_splice(sp, r.body.data, r.body.len, -1, &res, &err);
                int want = i ? 0 : f ? cases[c].count_off : cases[c].bad_b64;
                ck_assert_msg(rc == want, "%s %s reply %d: %s (%s), expected %s",
                              sr_dialect_name(cases[c].d), faults[f], i, sr_code_name(rc), err.msg,
                              sr_code_name(want));
                hresp_free(&r);
            }
            sr_splicer_free(sp);
            sr_fields_free(reg);
            eng_stop(&e);
        }
    }
}
END_TEST

/* vLLM 0.21's prefix-cache sentinel: the first `row` rows of prompt_routed_experts are -1, read
 * by the vllm-json registry (which allows -1 there only), the choice's rows untouched. */
START_TEST(test_prefix_cached_sentinel)
{
    eng e;
    eng_start(&e, "{\"seed\":3,\"dialect\":\"vllm-json\",\"model\":{\"vocab\":1000,\"layers\":2,"
                  "\"experts\":40,\"topk\":4,\"eos_id\":-1},\"faults\":["
                  "{\"kind\":\"prefix_cached_sentinel\",\"nth\":1,\"row\":3}]}");
    hresp r[2];
    sr_fields *reg;
    sr_splicer *sp;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_new(&reg, &err), err);
    ck_assert_sr_ok(sr_dialect_add_fields(reg, SR_DIALECT_VLLM_JSON, &err), err);
    ck_assert_sr_ok(sr_splicer_new(&sp, reg, NULL, &err), err);
    for (int i = 0; i < 2; i++) {
        http_post(&r[i], &e, "/inference/v1/generate", REQ);
        ck_assert_int_eq(r[i].status, 200);
        const sr_splice_result *res;
        ck_assert_sr_ok(sr_splice(sp, r[i].body.data, r[i].body.len, -1, &res, &err), err);
        const sr_splice_entry *pre = splice_find(res, "prompt_routed_experts");
        ck_assert_int_eq(pre->array.shape[0], 6);
        for (size_t k = 0; k < 6 * 8; k++) {
            int64_t v = sr_ndarray_get_i64(&pre->array, k);
            ck_assert_msg(i == 0 && k < 3 * 8 ? v == -1 : v >= 0, "reply %d value %zu is %lld", i,
                          k, (long long)v);
        }
        hresp_free(&r[i]);
    }
    sr_splicer_free(sp);
    sr_fields_free(reg);
    eng_stop(&e);
}
END_TEST

/* Routes of a reply as a byte copy and the row count. */
static void routes_of(const hresp *r, sr_buf *out, int64_t *rows)
{
    sr_splicer *sp;
    sr_fields *reg;
    const sr_splice_result *res;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(splice_body(&sp, &reg, &r->body, &res, &err), err);
    const sr_splice_entry *re = splice_find(res, "routed_experts");
    ck_assert_ptr_nonnull(re);
    *rows = re->kind == SR_SPLICE_NULL ? -1 : re->array.shape[0];
    sr_buf_reset(out);
    sr_buf_append(out, re->array.data ? re->array.data : "", re->array.nbytes, NULL);
    sr_buf_append(out, "", 0, NULL);
    sr_splicer_free(sp);
    sr_fields_free(reg);
}

#define ROW 8 /* bytes of one route row: 2 layers x top-4, uint8 */

START_TEST(test_model_faults)
{
    eng e;
    hresp bad, good;
    sr_buf rb = SR_BUF_INIT, rg = SR_BUF_INIT;
    int64_t nb, ng;

    start_with(&e, "{\"kind\":\"routes_all_zero\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    routes_of(&bad, &rb, &nb);
    routes_of(&good, &rg, &ng);
    ck_assert_int_eq(nb, 11);
    for (size_t i = 0; i < rb.len; i++)
        ck_assert_int_eq(rb.data[i], 0);
    ck_assert_ptr_nonnull(strstr(bad.body.data, "\"faults\":[\"routes_all_zero\"]"));
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"rows_p_plus_g\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    routes_of(&bad, &rb, &nb);
    routes_of(&good, &rg, &ng);
    ck_assert_int_eq(nb, ng + 1);
    ck_assert_mem_eq(rb.data, rg.data, rg.len);
    ck_assert_ptr_nonnull(strstr(bad.body.data, "\"rows\":[[2,14,0]]"));
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"prompt_start_ignored\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    routes_of(&bad, &rb, &nb);
    routes_of(&good, &rg, &ng);
    ck_assert_int_eq(nb, 6 + 8 - 1);
    ck_assert_mem_eq(rb.data + 2 * ROW, rg.data, rg.len);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"duplicated_output_rows\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    routes_of(&bad, &rb, &nb);
    routes_of(&good, &rg, &ng);
    ck_assert_int_eq(nb, ng);
    for (int p = 2; p < 13; p++) { /* positions; row index p - 2 */
        const char *row = rb.data + (p - 2) * ROW;
        if (p >= 7 && (p - 6) % 2 == 1)
            ck_assert_mem_eq(row, rb.data + (p - 3) * ROW, ROW);
        else
            ck_assert_mem_eq(row, rg.data + (p - 2) * ROW, ROW);
    }
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"expert_out_of_range\",\"nth\":1,\"row\":3,\"layer\":1}");
    faulted_and_normal(&e, &bad, &good);
    routes_of(&bad, &rb, &nb);
    ck_assert_int_eq((unsigned char)rb.data[3 * ROW + 4], 40);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"expert_duplicate\",\"nth\":1,\"row\":0,\"layer\":0}");
    faulted_and_normal(&e, &bad, &good);
    routes_of(&bad, &rb, &nb);
    ck_assert_int_eq(rb.data[0], rb.data[1]);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"pd_decode_replica\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    routes_of(&bad, &rb, &nb);
    routes_of(&good, &rg, &ng);
    ck_assert_int_eq(nb, ng);
    for (size_t i = 0; i < 4 * ROW; i++) /* rows 2..5, the prompt's from the start on */
        ck_assert_int_eq(rb.data[i], 0);
    ck_assert_mem_eq(rb.data + 4 * ROW, rg.data + 4 * ROW, rg.len - 4 * ROW);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"routes_dropped\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    routes_of(&bad, &rb, &nb);
    ck_assert_int_eq(nb, -1);
    ck_assert_ptr_nonnull(strstr(bad.body.data, "\"routed_experts\":null,\"syncroll\""));
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);
    sr_buf_release(&rb);
    sr_buf_release(&rg);
}
END_TEST

/* The later stack's support faults (client.stack "2086"; NovaSky-AI/SkyRL #2082 at 1c3510a4c,
 * vllm_server_actor.py, and the reviews of #2082/#2237 and #2086), on a capture request. */
#define SUPPORT_REQ                                                                                \
    "{\"sampling_params\":{\"max_tokens\":8,\"top_k\":4},\"model\":\"default\","                   \
    "\"token_ids\":[5,6,7,8,9,10],\"return_sample_support\":true}"

static void start_2086(eng *e, const char *fault, const char *model_extra)
{
    char cfg[1024];
    snprintf(cfg, sizeof(cfg),
             "{\"seed\":3,\"model\":{\"vocab\":1000,\"layers\":2,\"experts\":40,\"topk\":4,"
             "\"eos_id\":-1%s},\"stack\":\"2086\",\"faults\":[%s]}",
             model_extra, fault);
    eng_start(e, cfg);
}

/* Rows (of G, top_k 4) of a reply that lack their sampled token. */
static int rows_missing_sampled(const hresp *h)
{
    sr_splicer *sp;
    sr_fields *reg;
    const sr_splice_result *res;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(splice_body(&sp, &reg, &h->body, &res, &err), err);
    const sr_splice_entry *se = splice_find(res, "rollout_sample_support");
    const sr_splice_entry *te = splice_find(res, "token_ids"); /* spliced as an int array */
    ck_assert_int_eq(se->array.shape[0], te->array.shape[0]);
    ck_assert_int_eq(se->array.shape[1], 4);
    int missing = 0;
    for (int g = 0; g < (int)te->array.shape[0]; g++) {
        int32_t tok = (int32_t)sr_ndarray_get_i64(&te->array, (size_t)g), found = 0;
        for (int k = 0; k < 4; k++)
            found |= ((const int32_t *)se->array.data)[g * 4 + k] == tok;
        missing += !found;
    }
    sr_splicer_free(sp);
    sr_fields_free(reg);
    return missing;
}

START_TEST(test_support_faults)
{
    eng e;
    hresp bad, good;
    start_2086(&e, "{\"kind\":\"support_unrepaired\",\"nth\":1}", "");
    http_post(&bad, &e, "/skyrl/v1/generate", SUPPORT_REQ);
    http_post(&good, &e, "/skyrl/v1/generate", SUPPORT_REQ);
    ck_assert_int_eq(bad.status, 200);
    ck_assert_int_eq(good.status, 200);
    ck_assert_int_gt(rows_missing_sampled(&bad), 0);
    ck_assert_int_eq(rows_missing_sampled(&good), 0);
    ck_assert_ptr_nonnull(strstr(bad.body.data, "\"faults\":[\"support_unrepaired\"]"));
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    /* Every logprob non-finite: null under the fault, the -9999.0 floor without it. */
    start_2086(&e, "{\"kind\":\"support_logprob_null\",\"nth\":1}", ",\"nonfinite_rate\":1");
    http_post(&bad, &e, "/skyrl/v1/generate", SUPPORT_REQ);
    http_post(&good, &e, "/skyrl/v1/generate", SUPPORT_REQ);
    ck_assert_ptr_nonnull(strstr(bad.body.data, "\"logprobs\":{\"content\":[{\"logprob\":null},"));
    ck_assert_ptr_null(strstr(good.body.data, "null},"));
    ck_assert_ptr_nonnull(strstr(good.body.data, "{\"logprob\":-9999.0},"));
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_2086(&e, "{\"kind\":\"support_no_logprobs\",\"nth\":1}", "");
    http_post(&bad, &e, "/skyrl/v1/generate", SUPPORT_REQ);
    http_post(&good, &e, "/skyrl/v1/generate", SUPPORT_REQ);
    ck_assert_int_eq(bad.status, 500);
    ck_assert_ptr_nonnull(
        strstr(bad.body.data, "AttributeError: 'NoneType' object has no attribute 'token_ids'"));
    ck_assert_int_eq(good.status, 200);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);
}
END_TEST

START_TEST(test_stale_prefix_cache)
{
    eng e;
    start_with(&e, "{\"kind\":\"stale_prefix_cache\",\"nth\":1}");
    hresp r;
    http_post(&r, &e, "/update_weights", "{\"update_info\":{\"target_version\":1}}");
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    hresp bad, good;
    faulted_and_normal(&e, &bad, &good);
    sr_buf rb = SR_BUF_INIT, rg = SR_BUF_INIT;
    int64_t nb, ng;
    routes_of(&bad, &rb, &nb);
    routes_of(&good, &rg, &ng);
    /* Both claim version 1, but the prompt rows [2, 6) of the faulted reply are version 0's. */
    ck_assert_ptr_nonnull(strstr(bad.body.data, "\"rows\":[[2,13,1]]"));
    ck_assert_mem_eq(rb.data + 4 * ROW, rg.data + 4 * ROW, (size_t)(nb - 4) * ROW);
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    const char *t = "{" BASE_MODEL "}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, t, strlen(t), "t", 0, &err), err);
    sr_oracle_model m = sr_engine_config_model(&c);
    sr_oracle *o;
    ck_assert_sr_ok(sr_oracle_new(&o, &m, &err), err);
    uint64_t g0, l0[2];
    expected_fps(&c, 0, &g0, l0);
    int32_t prompt[6] = {5, 6, 7, 8, 9, 10};
    uint8_t old[4 * ROW];
    ck_assert_sr_ok(
        sr_oracle_routes(old, sizeof(old), NULL, SR_DTYPE_UINT8, o, l0, prompt, 6, 2, 6, &err),
        err);
    ck_assert_mem_eq(rb.data, old, sizeof(old));
    ck_assert(memcmp(rg.data, old, sizeof(old)) != 0);
    sr_oracle_free(o);
    sr_engine_config_release(&c);
    sr_buf_release(&rb);
    sr_buf_release(&rg);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);
}
END_TEST

START_TEST(test_http_faults)
{
    eng e;
    hresp bad, good;
    start_with(&e, "{\"kind\":\"http_502_html\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    ck_assert_int_eq(bad.status, 502);
    ck_assert_ptr_nonnull(strstr(bad.hdr.data, "Content-Type: text/html"));
    ck_assert_int_eq(strncmp(bad.body.data, "<html>", 6), 0);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"http_503_json\",\"nth\":1,\"text\":\"busy\"}");
    faulted_and_normal(&e, &bad, &good);
    ck_assert_int_eq(bad.status, 503);
    ck_assert_str_eq(bad.body.data, "{\"error\":{\"message\":\"busy\",\"type\":"
                                    "\"ServiceUnavailableError\",\"code\":503}}");
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"http_429\",\"nth\":1,\"retry_after\":7}");
    faulted_and_normal(&e, &bad, &good);
    ck_assert_int_eq(bad.status, 429);
    ck_assert_msg(strstr(bad.hdr.data, "Retry-After: 7\r\n"), "%s", bad.hdr.data);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"http_400_text\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    ck_assert_int_eq(bad.status, 400);
    ck_assert_ptr_nonnull(strstr(bad.hdr.data, "Content-Type: text/plain"));
    ck_assert_str_eq(bad.body.data, "prompt too long");
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);
}
END_TEST

START_TEST(test_truncate_at_byte_n)
{
    eng e;
    hresp bad, good;
    start_with(&e, "{\"kind\":\"truncate\",\"nth\":1,\"bytes\":100}");
    faulted_and_normal(&e, &bad, &good);
    ck_assert_int_eq(bad.cc, CURLE_OK);
    ck_assert_int_eq(bad.body.len, 100);
    ck_assert_mem_eq(bad.body.data, good.body.data, 100);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    /* keep_length announces the whole body and closes after byte N. */
    start_with(&e, "{\"kind\":\"truncate\",\"nth\":1,\"bytes\":100,\"keep_length\":true}");
    faulted_and_normal(&e, &bad, &good);
    ck_assert_int_eq(bad.cc, CURLE_PARTIAL_FILE);
    ck_assert_int_eq(bad.body.len, 100);
    ck_assert_mem_eq(bad.body.data, good.body.data, 100);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);
}
END_TEST

/* GET /health on the raw kept-alive connection fd; the answer's head (status line, headers). */
static void raw_health(int fd, char *buf, size_t cap)
{
    static const char req[] = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq((long)write(fd, req, sizeof(req) - 1), (long)sizeof(req) - 1);
    ssize_t n = read(fd, buf, cap - 1);
    ck_assert_int_gt(n, 12);
    buf[n] = '\0';
}

/* A kept-alive connection to the engine (the socket), its first /health answered 200. */
static int raw_keepalive(const eng *e, char *buf, size_t cap)
{
    int fd = sr_test_raw_connect(e->port);
    raw_health(fd, buf, cap);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "health: %s", buf);
    ck_assert_msg(!strcasestr(buf, "\r\nConnection: close\r\n"), "closed at once: %s", buf);
    return fd;
}

START_TEST(test_reset_and_refuse)
{
    eng e;
    hresp bad, good;
    start_with(&e, "{\"kind\":\"reset\",\"nth\":1}");
    faulted_and_normal(&e, &bad, &good);
    ck_assert_msg(bad.cc == CURLE_RECV_ERROR && strstr(bad.errbuf, "reset"), "cc %d: %s", bad.cc,
                  bad.errbuf);
    ck_assert_int_eq(bad.body.len, 0);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"refuse\",\"nth\":1,\"ms\":1500}");
    char head[1024];
    int kept = raw_keepalive(&e, head, sizeof head);
    http_post(&bad, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(bad.cc, CURLE_RECV_ERROR);
    /* The quiesced daemon still answers the connection it had, and closes it after: a client
     * that keeps connections alive would otherwise pin the old daemon forever. */
    raw_health(kept, head, sizeof head);
    ck_assert_msg(strncmp(head, "HTTP/1.1 200", 12) == 0, "old daemon: %s", head);
    ck_assert_msg(strcasestr(head, "\r\nConnection: close\r\n"), "kept open: %s", head);
    close(kept);
    http_get(&good, &e, "/health");
    /* Nothing is served in the window. Usually the connection is refused outright; under heavy
     * load a connection can reach the listen queue in the instant before the listener closes
     * and is then reset by the kernel, which a client sees as a reset, not a refusal. */
    ck_assert_msg(good.cc == CURLE_COULDNT_CONNECT ||
                      (good.cc == CURLE_RECV_ERROR && strstr(good.errbuf, "reset")),
                  "cc %d: %s", good.cc, good.errbuf);
    ck_assert_int_eq(good.status, 0);
    hresp_free(&bad), hresp_free(&good);
    /* The engine listens again on the same port once the window is over. */
    int ok = 0;
    for (int i = 0; i < 4000 && !ok; i++) {
        http_get(&good, &e, "/health");
        ok = good.cc == CURLE_OK && good.status == 200;
        hresp_free(&good);
        struct timespec ts = {0, 2000000};
        if (!ok)
            nanosleep(&ts, NULL);
    }
    ck_assert(ok);
    eng_stop(&e);
}
END_TEST

START_TEST(test_stalls_and_dribble)
{
    eng e;
    hresp bad, good;
    start_with(&e, "{\"kind\":\"stall\",\"nth\":1}");
    http_req(&bad, NULL, &e, "POST", "/skyrl/v1/generate", REQ, NULL, 300);
    ck_assert_int_eq(bad.cc, CURLE_OPERATION_TIMEDOUT);
    ck_assert_int_eq(bad.body.len, 0);
    http_post(&good, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(good.status, 200);
    ck_assert_int_eq(eng_state_int(&e, "stalled"), 1);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"stall_mid_body\",\"nth\":1,\"bytes\":50}");
    http_req(&bad, NULL, &e, "POST", "/skyrl/v1/generate", REQ, NULL, 300);
    http_post(&good, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(bad.cc, CURLE_OPERATION_TIMEDOUT);
    ck_assert_int_eq(bad.status, 200);
    ck_assert_int_eq(bad.body.len, 50);
    ck_assert_mem_eq(bad.body.data, good.body.data, 50);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_with(&e, "{\"kind\":\"dribble\",\"nth\":1,\"bytes_per_second\":4000}");
    faulted_and_normal(&e, &bad, &good);
    ck_assert_int_eq(bad.cc, CURLE_OK);
    ck_assert_str_eq(bad.body.data, good.body.data);
    /* 200-byte slices: the body arrived in several reads. */
    ck_assert_int_ge(bad.chunks, (int)(good.body.len / 200));
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);
}
END_TEST

START_TEST(test_latency_delays_only)
{
    eng e;
    hresp bad, good;
    start_with(&e, "{\"kind\":\"latency\",\"nth\":1,\"dist\":\"fixed\",\"ms\":120}");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    http_post(&bad, &e, "/skyrl/v1/generate", REQ);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    http_post(&good, &e, "/skyrl/v1/generate", REQ);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    /* A lower bound only: the engine cannot answer before its delay. */
    ck_assert_msg(ms >= 120.0, "answered after %.1f ms", ms);
    ck_assert_str_eq(bad.body.data, good.body.data);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);
}
END_TEST

START_TEST(test_targeting)
{
    eng e;
    hresp r;
    char cfg[1024];
    snprintf(
        cfg, sizeof(cfg),
        "{" BASE_MODEL ",\"faults\":["
        "{\"kind\":\"http_503_json\",\"id\":\"by-nth\",\"nth\":[2,3]},"
        "{\"kind\":\"http_429\",\"id\":\"by-turn\",\"turn\":2,\"count\":1},"
        "{\"kind\":\"http_502_html\",\"id\":\"other-engine\",\"engines\":[1]},"
        "{\"kind\":\"http_400_text\",\"id\":\"health\",\"endpoints\":[\"health\"],\"count\":1}]}");
    eng_start(&e, cfg);
    long want[] = {200, 503, 503, 200, 200};
    for (int i = 0; i < 5; i++) {
        http_post(&r, &e, "/skyrl/v1/generate", REQ);
        ck_assert_msg(r.status == want[i], "request %d: %ld", i + 1, r.status);
        hresp_free(&r);
    }
    /* Turn 2 of session A (the nth counter of by-nth is past its list by now). */
    long turns[] = {200, 429, 200};
    for (int i = 0; i < 3; i++) {
        http_req(&r, NULL, &e, "POST", "/skyrl/v1/generate", REQ, "A", 0);
        ck_assert_msg(r.status == turns[i], "turn %d: %ld", i + 1, r.status);
        hresp_free(&r);
    }
    /* count 1: a second session's turn 2 is not faulted. */
    http_req(&r, NULL, &e, "POST", "/skyrl/v1/generate", REQ, "B", 0);
    hresp_free(&r);
    http_req(&r, NULL, &e, "POST", "/skyrl/v1/generate", REQ, "B", 0);
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    http_get(&r, &e, "/health");
    ck_assert_int_eq(r.status, 400);
    hresp_free(&r);
    http_get(&r, &e, "/health");
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    http_get(&r, &e, "/syncroll/v1/state");
    ck_assert_msg(strstr(r.body.data, "{\"id\":\"by-nth\",\"kind\":\"http_503_json\",\"layer\":"
                                      "\"http\",\"seen\":10,\"fired\":2}"),
                  "%s", r.body.data);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"id\":\"other-engine\",\"kind\":\"http_502_html\","
                                              "\"layer\":\"http\",\"seen\":0,\"fired\":0}"));
    hresp_free(&r);
    eng_stop(&e);
}
END_TEST

/* The fire pattern of a probability fault over 40 requests, as a bit string. */
static void pattern(const char *cfg, char *bits)
{
    eng e;
    eng_start(&e, cfg);
    CURL *h = curl_easy_init();
    for (int i = 0; i < 40; i++) {
        hresp r;
        http_req(&r, h, &e, "POST", "/skyrl/v1/generate", "{\"token_ids\":[1]}", NULL, 0);
        bits[i] = r.status == 503 ? '1' : '0';
        hresp_free(&r);
    }
    bits[40] = '\0';
    curl_easy_cleanup(h);
    eng_stop(&e);
}

START_TEST(test_probability_is_seeded)
{
    const char *cfg = "{\"seed\":9,\"faults\":[{\"kind\":\"http_503_json\",\"probability\":0.5}]}";
    const char *other =
        "{\"seed\":10,\"faults\":[{\"kind\":\"http_503_json\",\"probability\":0.5}]}";
    char a[41], b[41], c[41];
    pattern(cfg, a);
    pattern(cfg, b);
    pattern(other, c);
    ck_assert_str_eq(a, b);
    ck_assert_str_ne(a, c);
    int ones = 0;
    for (int i = 0; i < 40; i++)
        ones += a[i] == '1';
    ck_assert_msg(ones > 5 && ones < 35, "%s", a);
}
END_TEST

static Suite *faults_suite(void)
{
    Suite *s = suite_create("engine_faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_body_faults_fail_the_splice_by_name, 0,
                        (int)(sizeof(BODY_CASES) / sizeof(BODY_CASES[0])));
    tcase_add_test(tc, test_model_faults);
    tcase_add_test(tc, test_npy_header_faults);
    tcase_add_test(tc, test_prefix_cached_sentinel);
    tcase_add_test(tc, test_body_faults_in_dialects);
    tcase_add_test(tc, test_stale_prefix_cache);
    tcase_add_test(tc, test_support_faults);
    tcase_add_test(tc, test_http_faults);
    tcase_add_test(tc, test_truncate_at_byte_n);
    tcase_add_test(tc, test_reset_and_refuse);
    tcase_add_test(tc, test_stalls_and_dribble);
    tcase_add_test(tc, test_latency_delays_only);
    tcase_add_test(tc, test_targeting);
    tcase_add_test(tc, test_probability_is_seeded);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(faults_suite)
