/*
 * The verifier: rollouts built from the oracle itself, then corrupted one way at a time, must be
 * caught by the named check with the named classification; collations likewise. One case runs a
 * real engine whose stale_prefix_cache fault, after a weight update, serves rows of the old
 * version: they must be classified as stale weights, v-1.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_util.h"
#include "sr_collate.h"
#include "verify_util.h"

START_TEST(test_correct_rollout_verifies)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    ck_assert_int_eq(verify(&f, f.v, &r), 1);
    ck_assert_int_eq(f.res->n_fired, 0);
    ck_assert_int_eq(f.res->counters.tokens_verified, 12);
    ck_assert_int_eq(f.res->counters.rows_verified, 20);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_all_zero)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    memset(row_at(&r, 4, 1), 0, 4 * sizeof(int32_t));
    expect_class(&f, &r, "all_zero_capture", 4, 1);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

/* A failing row names the route fault of the plan whose selection holds it (FORMAT.md §5c). */
START_TEST(test_failure_names_the_fault_selection)
{
    const char *text =
        "[{\"kind\": \"routes\", \"id\": \"p5\", \"select\": {\"region\": \"prompt\", "
        "\"rows\": [5]}, \"action\": {\"do\": \"zero\"}},"
        " {\"kind\": \"routes\", \"id\": \"p4\", \"turn\": [1], \"select\": {\"region\": "
        "\"prompt\", \"rows\": [4], \"layers\": [1]}, \"action\": {\"do\": \"zero\"}}]";
    for (int covered = 0; covered < 2; covered++) {
        fx f;
        fx_init(&f);
        sr_fault_plan *plan = NULL;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_fault_plan_parse_text(&plan, text, strlen(text), &err), err);
        sr_rollout_result r;
        make_rollout(&r, &f, 9, 12, 0, 0, 0);
        memset(row_at(&r, covered ? 4 : 6, 1), 0, 4 * sizeof(int32_t));
        sr_verify_ctx ctx = {"s", 0, "rollout-0", 1, f.cfg.experts, f.res, plan};
        int ok = -1;
        ck_assert_sr_ok(sr_verify_rollout(&ok, f.v, &r, 3, &ctx, &err), err);
        ck_assert_int_eq(ok, 0);
        const sr_check *c = only_check(&f, "trace.row_mismatch");
        const char *want = "; in the selection of fault \"p4\" (routes: region prompt, rows [4], "
                           "layers [1]: zero)";
        ck_assert_msg((strstr(c->message, want) != NULL) == covered, "%s", c->message);
        ck_assert_msg(covered || strstr(c->message, "in the selection") == NULL, "%s", c->message);
        sr_fault_plan_free(plan);
        sr_rollout_result_release(&r);
        fx_free(&f);
    }
}
END_TEST

START_TEST(test_duplicated)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    for (int l = 0; l < 2; l++)
        memcpy(row_at(&r, 12, l), row_at(&r, 11, l), 4 * sizeof(int32_t));
    expect_class(&f, &r, "duplicated_row", 12, 0);
    ck_assert(strstr(f.res->checks[0].message, "(2 mismatching") != NULL);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_off_by_one)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    memcpy(row_at(&r, 5, 0), row_at(&r, 6, 0), 4 * sizeof(int32_t));
    expect_class(&f, &r, "off_by_one", 5, 0);
    ck_assert(strstr(f.res->checks[0].message, "oracle's row 6") != NULL);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_stale_and_newer)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    /* Tokens of version 2, routes of version 1, all claimed as version 2. */
    make_rollout(&r, &f, 9, 12, 2, 1, 2);
    expect_class(&f, &r, "stale_weights", 0, 0);
    ck_assert_msg(strstr(f.res->checks[0].message, "matches version 1 (v-1)") != NULL, "%s",
                  f.res->checks[0].message);
    ck_assert_int_eq(f.res->fired[0].count, 1);
    sr_rollout_result_release(&r);
    fx_free(&f);
    fx_init(&f);
    make_rollout(&r, &f, 9, 12, 0, 1, 0);
    expect_class(&f, &r, "newer_weights", 0, 0);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_overwritten_prefix)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    /* First computed at version 0, the result holds a re-computation at version 1. */
    make_rollout(&r, &f, 9, 12, 0, 1, 0);
    for (int i = 0; i < 21; i++)
        r.held_version[i] = 1;
    expect_class(&f, &r, "overwritten_prefix", 0, 0);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_unclassified_invalid_padding)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    int32_t *x = row_at(&r, 7, 1);
    int32_t odd[4] = {15, 14, 13, 12};
    if (memcmp(x, odd, sizeof(odd)) == 0)
        odd[0] = 11;
    memcpy(x, odd, sizeof(odd));
    expect_class(&f, &r, "unclassified", 7, 1);
    sr_rollout_result_release(&r);
    fx_free(&f);

    fx_init(&f);
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    row_at(&r, 2, 0)[1] = row_at(&r, 2, 0)[0]; /* a duplicate id within top-k */
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    ck_assert_int_eq(only_check(&f, "routes.invalid")->where.row, 2);
    sr_rollout_result_release(&r);
    fx_free(&f);

    fx_init(&f);
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    row_at(&r, 20, 1)[0] = 3; /* the padding row */
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    ck_assert_int_eq(only_check(&f, "trace.padding_row")->where.row, 20);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

/* Top-k ids that share a residue mod 64 (the validity check's quick test) are told apart
 * exactly: distinct ones are a valid row that differs from the oracle's, a repeated one is
 * routes.invalid. */
START_TEST(test_distinct_ids_sharing_a_residue)
{
    static const int32_t distinct[4] = {1, 65, 129, 193}, repeated[4] = {1, 65, 129, 65};
    for (int w = 0; w < 2; w++) {
        fx f;
        fx_init_experts(&f, 200);
        sr_rollout_result r;
        make_rollout(&r, &f, 9, 12, 0, 0, 0);
        memcpy(row_at(&r, 5, 1), w ? repeated : distinct, sizeof(distinct));
        if (w == 0) {
            expect_class(&f, &r, "unclassified", 5, 1);
        } else {
            ck_assert_int_eq(verify(&f, f.v, &r), 0);
            ck_assert_int_eq(only_check(&f, "routes.invalid")->where.row, 5);
        }
        sr_rollout_result_release(&r);
        fx_free(&f);
    }
}
END_TEST

START_TEST(test_tokens_and_logprobs)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    r.logprobs[5] += 0.25;
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    const sr_check *c = only_check(&f, "trace.logprob_mismatch");
    ck_assert_int_eq(c->where.row, 14);
    sr_rollout_result_release(&r);
    fx_free(&f);

    fx_init(&f);
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    r.response_ids[11] = (r.response_ids[11] + 1) % 1000; /* the last token: no row after it */
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    ck_assert_int_eq(only_check(&f, "trace.token_mismatch")->where.row, 20);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_failed_rollout_and_external)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    r.code = SR_E_TRACE_ROW_COUNT;
    r.failed_turn = 2;
    sr_err_set(&r.err, SR_E_TRACE_ROW_COUNT, "token metadata has 23 rows, expected 11");
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    const sr_check *c = only_check(&f, "trace.row_count");
    ck_assert_int_eq(c->where.turn, 2);
    ck_assert(strstr(c->message, "expected 11") != NULL);
    sr_rollout_result_release(&r);
    fx_free(&f);

    /* Without the oracle: the oracle checks are skipped with a reason, contracts still run. */
    fx_init(&f);
    make_rollout(&r, &f, 9, 12, 0, 1, 0);
    ck_assert_int_eq(verify(&f, NULL, &r), 1);
    ck_assert_int_eq(f.res->n_fired, 0);
    ck_assert_int_eq(f.res->n_skipped, 3);
    ck_assert(strstr(f.res->skipped[0].reason, "engines.urls") != NULL);
    row_at(&r, 20, 0)[0] = 9;
    ck_assert_int_eq(verify(&f, NULL, &r), 0);
    only_check(&f, "trace.padding_row");
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

/* The turn log (sr_verify_turn_log): a committed aborted turn, a stamp newer than the pass that
 * sampled the turn's first token; neither needs the oracle. */
static void turn_log_case(const char *finish, int64_t stamp, int64_t first, int external,
                          const char *want, const char *needle)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    snprintf(r.turns[0].finish_reason, sizeof r.turns[0].finish_reason, "%s", finish);
    r.turns[0].stamp_version = stamp;
    r.turns[0].first_version = first;
    int ok = verify(&f, external ? NULL : f.v, &r);
    if (!want) {
        ck_assert_msg(ok == 1 && f.res->n_fired == 0, "%s stamp %lld first %lld: %zu fired", finish,
                      (long long)stamp, (long long)first, f.res->n_fired);
    } else {
        ck_assert_int_eq(ok, 0);
        const sr_check *c = only_check(&f, want);
        ck_assert_int_eq(c->where.turn, 1);
        ck_assert_msg(strstr(c->message, needle) != NULL, "%s", c->message);
    }
    sr_rollout_result_release(&r);
    fx_free(&f);
}

START_TEST(test_turn_log)
{
    turn_log_case("length", 0, 0, 0, NULL, NULL);
    turn_log_case("abort", 0, 0, 0, "client.aborted_turn", "finish_reason \"abort\" after 12");
    turn_log_case("abort", -1, -1, 1, "client.aborted_turn", "partial turn");
    turn_log_case("length", 1, 0, 0, "trace.version_stamp",
                  "stamped with weight version 1 but the engine sampled its first token with "
                  "version 0");
    turn_log_case("length", 3, 1, 1, "trace.version_stamp", "2 version(s) fresher");
    /* Older stamps (dispatched before a sync the request then straddled) and unknowns pass. */
    turn_log_case("length", 0, 1, 0, NULL, NULL);
    turn_log_case("length", -1, 1, 0, NULL, NULL);
    turn_log_case("length", 1, -1, 0, NULL, NULL);
    /* A failed rollout committed nothing: only its own error is recorded. */
    fx f;
    fx_init(&f);
    sr_rollout_result r;
    make_rollout(&r, &f, 9, 12, 0, 0, 0);
    snprintf(r.turns[0].finish_reason, sizeof r.turns[0].finish_reason, "abort");
    r.turns[0].stamp_version = 5;
    r.code = SR_E_CLIENT_ABORTED_TURN;
    r.failed_turn = 1;
    sr_err_set(&r.err, SR_E_CLIENT_ABORTED_TURN, "the engine answered finish_reason \"abort\"");
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    ck_assert_int_eq(only_check(&f, "client.aborted_turn")->where.turn, 1);
    sr_rollout_result_release(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_collation)
{
    fx f;
    fx_init(&f);
    sr_rollout_result r[2];
    make_rollout(&r[0], &f, 5, 6, 0, 0, 0);
    make_rollout(&r[1], &f, 9, 12, 0, 0, 0);
    const sr_rollout_result *rp[2] = {&r[0], &r[1]};
    int64_t ids[2] = {0, 1};
    sr_collate_sample smp[2];
    for (int i = 0; i < 2; i++) {
        sr_collate_sample s = SR_COLLATE_SAMPLE_INIT;
        s.routes = &r[i].routes;
        s.prompt_len = (int64_t)r[i].prompt_len;
        s.response_len = (int64_t)r[i].response_len;
        s.captured_rows = r[i].captured_rows;
        smp[i] = s;
    }
    sr_collate_buf buf = SR_COLLATE_BUF_INIT;
    sr_collate_result out;
    sr_err err = SR_ERR_INIT;
    sr_verify_ctx ctx = {"s", 1, "collate-1", 1, 16, f.res, NULL};
    int ok = -1;
    ck_assert_sr_ok(sr_collate_routes(&out, &buf, smp, 2, 1, &err), err);
    ck_assert_sr_ok(sr_verify_collation(&ok, &out, rp, ids, 2, &ctx, &err), err);
    ck_assert_int_eq(ok, 1);
    /* Padding reported as captured (SkyRL #2083). */
    smp[0].captured_rows = 11;
    ck_assert_sr_ok(sr_collate_routes(&out, &buf, smp, 2, 1, &err), err);
    ck_assert_sr_ok(sr_verify_collation(&ok, &out, rp, ids, 2, &ctx, &err), err);
    ck_assert_int_eq(ok, 0);
    const sr_check *c = only_check(&f, "collate.padding_mask");
    ck_assert_int_eq(c->where.sample, 0);
    ck_assert_int_eq(c->where.row, 20); /* T_max 21, pad 10: column 20 is sample 0's padding */
    /* A misplaced row and a bad padding column. */
    smp[0].captured_rows = 10;
    ck_assert_sr_ok(sr_collate_routes(&out, &buf, smp, 2, 1, &err), err);
    int32_t *b = out.routes.data;
    b[(0 * 21 + 12) * 8 + 0] ^= 1; /* sample 0, column 12 = its row 2 */
    b[(0 * 21 + 3) * 8 + 0] = 9;   /* sample 0, column 3 = left padding */
    ck_assert_sr_ok(sr_verify_collation(&ok, &out, rp, ids, 2, &ctx, &err), err);
    ck_assert(sr_result_fired(f.res, "collate.alignment"));
    ck_assert(sr_result_fired(f.res, "collate.padding_rows"));
    sr_collate_buf_release(&buf);
    sr_rollout_result_release(&r[0]);
    sr_rollout_result_release(&r[1]);
    fx_free(&f);
}
END_TEST

/* The engine's stale_prefix_cache fault after a real weight update: rows of version 0 under
 * the claim of version 1. */
START_TEST(test_engine_stale_prefix_cache)
{
    eng e;
    eng_start(&e, "{\"seed\": 5, \"model\": {\"vocab\": 1000, \"layers\": 2, \"experts\": 16, "
                  "\"topk\": 4, \"eos_rate\": 0},"
                  " \"faults\": [{\"kind\": \"stale_prefix_cache\"}]}");
    hresp h;
    http_post(&h, &e, "/update_weights", "{\"update_info\": {\"target_version\": 1}}");
    ck_assert_int_eq(h.status, 200);
    hresp_free(&h);
    sr_engine_config cfg;
    sr_err err = SR_ERR_INIT;
    const char *cfg_text = "{\"seed\": 5, \"model\": {\"vocab\": 1000, \"layers\": 2, "
                           "\"experts\": 16, \"topk\": 4, \"eos_rate\": 0}}";
    ck_assert_sr_ok(sr_engine_config_parse(&cfg, cfg_text, strlen(cfg_text), "t", 0, &err), err);
    fx f;
    fx_init(&f);
    sr_verifier_free(f.v);
    ck_assert_sr_ok(sr_verifier_new(&f.v, &cfg, &err), err);
    sr_verifier_note_version(f.v, 1);
    const char *urls[] = {e.url};
    sr_client *c = NULL;
    sr_client_conn *k = NULL;
    ck_assert_sr_ok(sr_client_new(&c, urls, 1, NULL, NULL, &err), err);
    ck_assert_sr_ok(sr_client_conn_new(&k, c, &err), err);
    int32_t prompt[6] = {5, 6, 7, 8, 9, 10};
    cJSON *sp = cJSON_Parse("{\"max_tokens\": 6, \"ignore_eos\": true, \"logprobs\": 0}");
    sr_rollout_config rc = SR_ROLLOUT_CONFIG_INIT;
    rc.prompt = prompt;
    rc.prompt_len = 6;
    rc.session_id = "stale";
    rc.sampling_params = sp;
    rc.env.max_turns = 2;
    rc.env.obs_min = rc.env.obs_max = 2;
    rc.env.vocab = 1000;
    sr_rollout_result r;
    ck_assert_sr_ok(sr_rollout_run(&r, k, &rc, &err), err);
    ck_assert_int_eq(r.row_version[0], 1);
    ck_assert_int_eq(verify(&f, f.v, &r), 0);
    const sr_check *ch = only_check(&f, "trace.row_mismatch");
    ck_assert_str_eq(ch->classification, "stale_weights");
    ck_assert_msg(strstr(ch->message, "matches version 0 (v-1)") != NULL, "%s", ch->message);
    sr_rollout_result_release(&r);
    cJSON_Delete(sp);
    sr_client_conn_free(k);
    sr_client_free(c);
    fx_free(&f);
    sr_engine_config_release(&cfg);
    eng_stop(&e);
}
END_TEST

static Suite *verify_suite(void)
{
    Suite *s = suite_create("verify");
    TCase *t = tcase_create("rollouts");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_correct_rollout_verifies);
    tcase_add_test(t, test_all_zero);
    tcase_add_test(t, test_failure_names_the_fault_selection);
    tcase_add_test(t, test_duplicated);
    tcase_add_test(t, test_off_by_one);
    tcase_add_test(t, test_stale_and_newer);
    tcase_add_test(t, test_overwritten_prefix);
    tcase_add_test(t, test_unclassified_invalid_padding);
    tcase_add_test(t, test_distinct_ids_sharing_a_residue);
    tcase_add_test(t, test_tokens_and_logprobs);
    tcase_add_test(t, test_failed_rollout_and_external);
    tcase_add_test(t, test_turn_log);
    tcase_add_test(t, test_collation);
    tcase_add_test(t, test_engine_stale_prefix_cache);
    suite_add_tcase(s, t);
    return s;
}

ENGINE_TEST_MAIN(verify_suite)
