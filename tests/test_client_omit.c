/*
 * The client against an engine with vLLM's routed-expert prefix omission
 * (vllm-project/vllm#57025, --enable-omit-prefix-routed-experts; engines.omit_prefix_routes):
 * the reply's prompt rows start at max(routed_experts_prompt_start, num_cached_tokens), so the
 * client derives where they begin from P, G and their count, keeps the rows it holds for the
 * omitted span (the reply's rows are checked against the oracle from the caller's start on),
 * and names a start it cannot assemble client.omitted_start (the fault omit_prefix_readmit, the
 * preemption case vllm#57966 guards against). A client that takes the rows as beginning at the
 * start it sent misplaces them.
 */
#include <curl/curl.h>

#include "client_fixture.h"

#define CFG                                                                                        \
    "{\"dialect\":\"vllm\",\"omit_prefix_routes\":true,\"seed\":9,"                                \
    "\"model\":{\"vocab\":500,\"layers\":2,\"experts\":32,\"topk\":4,\"eos_id\":-1}%s}"
#define G 6

static sr_client_opts omit_opts(int omit, int zero)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.dialect = SR_DIALECT_VLLM;
    o.route_layers = 2;
    o.route_topk = 4;
    o.max_attempts = 1;
    o.omit_prefix = omit;
    o.route_start_zero = zero;
    return o;
}

/* One generate of ids[0..n) in session "s" needing rows from `start`. */
static int turn(fx *f, sr_client_result *r, const int32_t *ids, size_t n, int64_t start, sr_err *e)
{
    static const char sp[] = "{\"max_tokens\":6}";
    cJSON *params = cJSON_Parse(sp);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = ids;
    q.n_tokens = n;
    q.sampling_params = params;
    q.session_id = "s";
    q.return_routes = 1;
    q.prompt_start = start;
    int rc = sr_client_generate(r, f->conn, &q, e);
    cJSON_Delete(params);
    return rc;
}

/* Turn 1 (20 tokens) and the prompt of turn 2: turn 1's, its output and 20 more tokens. */
static size_t two_turns(fx *f, int32_t *ids, int64_t *held)
{
    for (int i = 0; i < 64; i++)
        ids[i] = 3 + i;
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(turn(f, &r, ids, 20, 0, &e), e);
    ck_assert_int_eq((int)r.n_tokens, G);
    ck_assert_int_eq((int)r.routes.shape[0], 20 + G - 1);
    memcpy(ids + 20, r.token_ids, G * sizeof(int32_t));
    *held = 20 + G - 1;
    return 20 + G + 20;
}

START_TEST(rows_from_the_cached_prefix_are_assembled_after_the_held_ones)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, CFG, "");
    sr_client_opts o = omit_opts(1, 1);
    fx f;
    fx_start(&f, 1, cfg, &o);
    fx_model m;
    fx_model_load(&m, cfg);
    int32_t ids[96];
    int64_t held;
    size_t P = two_turns(&f, ids, &held);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(turn(&f, &r, ids, P, held, &e), e);
    /* Sent from 0; the engine had 25 computed tokens in common -> rows from 16, of which the
     * client keeps those from its 25 held rows on: P + G - 1 - 25 rows. */
    ck_assert_int_eq((int)r.prompt_start_sent, 0);
    ck_assert_int_eq((int)r.routes.shape[0], (int)(P + G - 1 - held));
    memcpy(ids + P, r.token_ids, G * sizeof(int32_t));
    size_t rows = P + G - 1, cell = 2 * 4;
    uint8_t *want = fx_oracle_rows(&m, 0, ids, P + G, rows, SR_DTYPE_UINT8);
    ck_assert_int_eq(r.routes.dtype, SR_DTYPE_UINT8);
    ck_assert_mem_eq(r.routes.data, want + held * cell, (rows - held) * cell);
    free(want);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

START_TEST(rows_taken_from_the_start_sent_are_misplaced)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, CFG, "");
    sr_client_opts o = omit_opts(0, 1); /* the client that ignores the omission */
    fx f;
    fx_start(&f, 1, cfg, &o);
    int32_t ids[96];
    int64_t held;
    size_t P = two_turns(&f, ids, &held);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    /* Taken as rows from 0, the 16 omitted rows shift everything: the rows kept from the held
     * 25 on are 16 short (the trace's record refuses them, trace.row_count; a later turn whose
     * held rows exceed the reply's is wire.shape, as nightly vllm-omit-prefix shows). */
    ck_assert_sr_ok(turn(&f, &r, ids, P, held, &e), e);
    ck_assert_int_eq((int)r.routes.shape[0], (int)(P + G - 1 - held - 16));
    fx_stop(&f);
}
END_TEST

START_TEST(a_start_past_the_held_rows_is_client_omitted_start)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, CFG, ",\"faults\":[{\"kind\":\"omit_prefix_readmit\",\"turn\":[2]}]");
    sr_client_opts o = omit_opts(1, 0);
    fx f;
    fx_start(&f, 1, cfg, &o);
    int32_t ids[96];
    int64_t held;
    size_t P = two_turns(&f, ids, &held);
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    /* Re-admitted, its own 45 prompt tokens hit: rows from 32, past the 25 held. */
    ck_assert_int_eq(turn(&f, &r, ids, P, held, &e), SR_E_CLIENT_OMITTED_START);
    ck_assert_msg(strstr(e.msg, "begin at row 32, past the rows the caller holds"), "%s", e.msg);
    fx_stop(&f);
}
END_TEST

static Suite *omit_suite(void)
{
    Suite *s = suite_create("client_omit");
    TCase *tc = tcase_create("omit");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, rows_from_the_cached_prefix_are_assembled_after_the_held_ones);
    tcase_add_test(tc, rows_taken_from_the_start_sent_are_misplaced);
    tcase_add_test(tc, a_start_past_the_held_rows_is_client_omitted_start);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(omit_suite());
    curl_global_cleanup();
    return rc;
}
