/* The weight-sync faults (the weights layer, and serve_before_sync of the model layer: the sync
 * bugs of issue #20) produce exactly their declared effect on a real engine over HTTP: versions,
 * fingerprints and the generates served afterwards. */
#include "engine_faults_util.h"

START_TEST(test_weight_faults)
{
    const char *t = "{" BASE_MODEL "}";
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, t, strlen(t), "t", 0, &err), err);
    uint64_t g0, l0[2], g1, l1[2];
    expected_fps(&c, 0, &g0, l0);
    expected_fps(&c, 1, &g1, l1);
    struct {
        const char *fault;
        long status;
        int version;
        uint64_t g, l0, l1;
    } cases[] = {
        {"{\"kind\":\"partial_weight_apply\",\"layers\":[1]}", 200, 1, g1, l1[0], l0[1]},
        {"{\"kind\":\"version_not_bumped\"}", 200, 0, g1, l1[0], l1[1]},
        {"{\"kind\":\"checksum_mismatch\"}", 500, 0, g0, l0[0], l0[1]},
    };
    for (size_t i = 0; i < 3; i++) {
        eng e;
        start_with(&e, cases[i].fault);
        hresp r;
        http_post(&r, &e, "/update_weights", "{\"update_info\":{\"target_version\":1}}");
        ck_assert_msg(r.status == cases[i].status, "%s: %ld %s", cases[i].fault, r.status,
                      r.body.data);
        if (r.status == 500)
            ck_assert_ptr_nonnull(strstr(r.body.data, "\"check\":\"delta.checksum\""));
        hresp_free(&r);
        http_get(&r, &e, "/syncroll/v1/state");
        char want[200];
        snprintf(
            want, sizeof(want),
            "\"weight_version\":%d,\"weights_content_version\":%d,\"fingerprints\":{\"global\":"
            "\"%016llx\",\"layers\":[\"%016llx\",\"%016llx\"]}",
            cases[i].version, cases[i].status == 200 ? 1 : 0, (unsigned long long)cases[i].g,
            (unsigned long long)cases[i].l0, (unsigned long long)cases[i].l1);
        ck_assert_msg(strstr(r.body.data, want), "%s: %s not in %s", cases[i].fault, want,
                      r.body.data);
        hresp_free(&r);
        eng_stop(&e);
    }
    sr_engine_config_release(&c);
}
END_TEST

/* update_ok_no_transfer (lightseekorg/tokenspeed#1373): in the vllm control plane a bucket of
 * every tensor for version 1 is answered 200 and the finish reports version 1, but the engine
 * still holds version 0's bytes: its weight checker's compare against the version-1 digests
 * fails and its fingerprints are version 0's. */
START_TEST(test_update_ok_no_transfer)
{
#define NO_TRANSFER "{\"kind\":\"update_ok_no_transfer\",\"endpoints\":[\"update_weights\"]}"
    const char *t = "{" BASE_MODEL ",\"sync_dialect\":\"vllm\",\"faults\":[" NO_TRANSFER "]}";
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, t, strlen(t), "t", 0, &err), err);
    uint64_t g0, l0[2];
    expected_fps(&c, 0, &g0, l0);
    sr_weights_spec ws = sr_engine_config_weights(&c);
    sr_weights *w;
    ck_assert_sr_ok(sr_weights_new(&w, &ws, 1, &err), err);
    eng e;
    eng_start(&e, t);
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    sr_buf b = SR_BUF_INIT, base = SR_BUF_INIT;
    eng_bucket_of(&b, w, 1);
    hresp r;
    eng_post_bucket(&r, &e, &b);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_expect(&e, "POST", "/finish_weight_update", "{\"weight_version\":1}", 200, NULL);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"1\"}");
    eng_baseline_of(&base, w);
    sr_buf_append(&base, "", 0, NULL);
    eng_expect(&e, "POST", "/weight_checker", base.data, 200, "{\"match\":false");
    char want[128];
    snprintf(want, sizeof(want), "\"fingerprints\":{\"global\":\"%016llx\"",
             (unsigned long long)g0);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"update_ok_no_transfer\"");
    sr_buf_release(&b);
    sr_buf_release(&base);
    sr_weights_free(w);
    sr_engine_config_release(&c);
    eng_stop(&e);
}
END_TEST

/* bucket_order_mismatch (NovaSky-AI/SkyRL#1816, comment): a bucket of every tensor (float16
 * experts and globals, float32 routers) for version 1 passes its checksums and the finish reports
 * version 1, but the engine unpacked it grouped by dtype: the weight checker's compare against
 * the version-1 digests fails and the fingerprints are neither version 0's nor version 1's. */
START_TEST(test_bucket_order_mismatch)
{
#define ORDER "{\"kind\":\"bucket_order_mismatch\",\"endpoints\":[\"update_weights\"]}"
    const char *t = "{" BASE_MODEL ",\"sync_dialect\":\"vllm\",\"faults\":[" ORDER "]}";
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, t, strlen(t), "t", 0, &err), err);
    uint64_t g[2], l[2][2];
    expected_fps(&c, 0, &g[0], l[0]);
    expected_fps(&c, 1, &g[1], l[1]);
    sr_weights_spec ws = sr_engine_config_weights(&c);
    sr_weights *w;
    ck_assert_sr_ok(sr_weights_new(&w, &ws, 1, &err), err);
    eng e;
    eng_start(&e, t);
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    sr_buf b = SR_BUF_INIT, base = SR_BUF_INIT;
    eng_bucket_of(&b, w, 1);
    hresp r;
    eng_post_bucket(&r, &e, &b);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_expect(&e, "POST", "/finish_weight_update", "{\"weight_version\":1}", 200, NULL);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"1\"}");
    eng_baseline_of(&base, w);
    sr_buf_append(&base, "", 0, NULL);
    eng_expect(&e, "POST", "/weight_checker", base.data, 200, "{\"match\":false");
    http_get(&r, &e, "/syncroll/v1/state");
    ck_assert_int_eq(r.status, 200);
    for (int v = 0; v < 2; v++) {
        char fp[3][24];
        snprintf(fp[0], sizeof(fp[0]), "\"%016llx\"", (unsigned long long)g[v]);
        snprintf(fp[1], sizeof(fp[1]), "\"%016llx\"", (unsigned long long)l[v][0]);
        snprintf(fp[2], sizeof(fp[2]), "\"%016llx\"", (unsigned long long)l[v][1]);
        /* Name order is embed, layer 0 experts, layer 0 router, ..., lm_head: grouped by dtype,
         * lm_head and every router move, so no fingerprint is a version's. */
        for (int k = 0; k < 3; k++)
            ck_assert_msg(!strstr(r.body.data, fp[k]), "fingerprint %d is version %d's: %s", k, v,
                          r.body.data);
    }
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"bucket_order_mismatch\""));
    hresp_free(&r);
    eng_expect(&e, "POST", "/skyrl/v1/generate", REQ, 200, "\"weight_version\":1");
    sr_buf_release(&b);
    sr_buf_release(&base);
    sr_weights_free(w);
    sr_engine_config_release(&c);
    eng_stop(&e);
}
END_TEST

/* The expected fingerprints of the BASE_MODEL engine at versions 0 and 1: g[v] global, l[v][slot].
 */
typedef struct base_fps {
    uint64_t g[2], l[2][2];
} base_fps;

static base_fps base_fingerprints(void)
{
    const char *t = "{" BASE_MODEL "}";
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, t, strlen(t), "t", 0, &err), err);
    base_fps f;
    expected_fps(&c, 0, &f.g[0], f.l[0]);
    expected_fps(&c, 1, &f.g[1], f.l[1]);
    sr_engine_config_release(&c);
    return f;
}

/* The engine state's versions and fingerprints, as /syncroll/v1/state prints them: the global
 * tensors of content version `g`, MoE slot 0 of `a`, slot 1 of `b` (versions 0 or 1). */
static void want_fps(char *out, size_t n, int version, int content, const base_fps *f, int g, int a,
                     int b)
{
    snprintf(out, n,
             "\"weight_version\":%d,\"weights_content_version\":%d,\"fingerprints\":{\"global\":"
             "\"%016llx\",\"layers\":[\"%016llx\",\"%016llx\"]}",
             version, content, (unsigned long long)f->g[g], (unsigned long long)f->l[a][0],
             (unsigned long long)f->l[b][1]);
}

/* version_regress (marin-community/marin#1829): the first update (version 1) is clean; the second
 * (version 2, the fault's 2nd update_weights) commits, then the engine loads its stale initial
 * checkpoint and reports version 0, below the 1 it held, with version 0's fingerprints and
 * content. Without the fault the strict receiver refuses a finish naming a lower version
 * (unit.engine_control, test_skyrl_finish_backwards_is_refused). */
START_TEST(test_version_regress)
{
    base_fps f = base_fingerprints();
    eng e;
    start_with(&e, "{\"kind\":\"version_regress\",\"nth\":[2]}");
    hresp r;
    http_post(&r, &e, "/update_weights", "{\"update_info\":{\"target_version\":1}}");
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"weight_version\":1,");
    http_post(&r, &e, "/update_weights", "{\"update_info\":{\"target_version\":2}}");
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body.data);
    hresp_free(&r);
    char want[200];
    want_fps(want, sizeof(want), 0, 0, &f, 0, 0, 0);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"kind\":\"version_regress\",\"layer\":\"weights\",\"seen\":2,\"fired\":1");
    eng_stop(&e);
}
END_TEST

/* init_group_hang (sgl-project/sglang-omni#784): the first /init_weight_transfer_engine of the vllm
 * plane is never answered (the engine holds it as stalled), while generate and a second init
 * answer as usual: the engine keeps serving and its receiver was not moved by the hung call. */
START_TEST(test_init_group_hang)
{
    eng e;
    eng_start(&e, "{" BASE_MODEL ",\"sync_dialect\":\"vllm\",\"faults\":[{\"kind\":"
                  "\"init_group_hang\",\"nth\":[1]}]}");
    hresp hung, good;
    http_req(&hung, NULL, &e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", NULL,
             300);
    ck_assert_int_eq(hung.cc, CURLE_OPERATION_TIMEDOUT);
    ck_assert_int_eq(hung.body.len, 0);
    ck_assert_int_eq(eng_state_int(&e, "stalled"), 1);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"uninit\"");
    http_post(&good, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(good.status, 200);
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"kind\":\"init_group_hang\",\"layer\":\"weights\",\"seen\":2,\"fired\":1");
    hresp_free(&hung), hresp_free(&good), eng_stop(&e);
}
END_TEST

/* serve_before_sync (radixark/miles#1724): after a clean update to version 1, the fault's 2nd
 * generate finds the engine restarted on its initial checkpoint: it still reports version 1 but
 * holds version 0's fingerprints, and the generate it answers is version 0's (the same tokens as
 * a fresh engine's at version 0, others than version 1's). */
START_TEST(test_serve_before_sync)
{
    base_fps f = base_fingerprints();
    eng fresh, e;
    hresp v0, v1, bad;
    eng_start(&fresh, "{" BASE_MODEL "}");
    http_post(&v0, &fresh, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(v0.status, 200);
    eng_stop(&fresh);
    start_with(&e, "{\"kind\":\"serve_before_sync\",\"nth\":[2]}");
    eng_expect(&e, "POST", "/update_weights", "{\"update_info\":{\"target_version\":1}}", 200,
               NULL);
    http_post(&v1, &e, "/skyrl/v1/generate", REQ);
    http_post(&bad, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(v1.status, 200);
    ck_assert_int_eq(bad.status, 200);
    /* Tokens, logprobs and routes: everything before the "syncroll" section (the version and the
     * faults fired, which differ by design). */
    const char *tail = strstr(v0.body.data, ",\"syncroll\":");
    ck_assert_ptr_nonnull(tail);
    size_t n = (size_t)(tail - v0.body.data);
    ck_assert_int_ne(strncmp(v1.body.data, v0.body.data, n), 0);
    ck_assert_int_eq(strncmp(bad.body.data, v0.body.data, n), 0);
    char want[200];
    want_fps(want, sizeof(want), 1, 0, &f, 0, 0, 0);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"kind\":\"serve_before_sync\",\"layer\":\"model\",\"seen\":2,\"fired\":1");
    hresp_free(&v0), hresp_free(&v1), hresp_free(&bad), eng_stop(&e);
}
END_TEST

/* The token_ids of a skyrl generate reply (at most cap); returns how many. */
static int reply_tokens(int32_t *out, int cap, const char *body)
{
    const char *p = strstr(body, "\"token_ids\":[");
    ck_assert_ptr_nonnull(p);
    p += strlen("\"token_ids\":[");
    int n = 0;
    while (*p && *p != ']' && n < cap) {
        char *end;
        out[n++] = (int32_t)strtol(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Token `k` (0-based among the generated) as the oracle samples it after prompt + tok[0..k) with
 * the fingerprints (g, l): one step of the speculative schedule. */
static int32_t oracle_token(const sr_oracle *o, const int32_t *prompt, size_t P, const int32_t *tok,
                            int k, uint64_t g, const uint64_t *l)
{
    int32_t in[64], one[8];
    memcpy(in, prompt, P * sizeof(int32_t));
    memcpy(in + P, tok, (size_t)k * sizeof(int32_t));
    sr_oracle_request r = SR_ORACLE_REQUEST_INIT;
    r.prompt = in;
    r.prompt_len = P + (size_t)k;
    r.max_tokens = 1;
    r.prior_generated = (size_t)k;
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = one;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_generate(&out, o, g, l, &r, &err), err);
    return one[0];
}

/* stale_draft_model (sgl-project/sglang#28257): before any update the fault changes nothing (a
 * fresh engine's body); after the update to version 1 the reply claims version 1 throughout, but
 * tokens 1, 2, 4, 5, 7 are the draft's, sampled with version 0's fingerprints, and tokens 0, 3, 6
 * the target's, with version 1's (checked step by step against the oracle). */
START_TEST(test_stale_draft_model)
{
    const char *t = "{" BASE_MODEL "}";
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, t, strlen(t), "t", 0, &err), err);
    sr_oracle_model m = sr_engine_config_model(&c);
    sr_oracle *o;
    ck_assert_sr_ok(sr_oracle_new(&o, &m, &err), err);
    uint64_t g[2], l[2][2];
    expected_fps(&c, 0, &g[0], l[0]);
    expected_fps(&c, 1, &g[1], l[1]);
    eng fresh, e;
    hresp v0, before, after;
    eng_start(&fresh, t);
    http_post(&v0, &fresh, "/skyrl/v1/generate", REQ);
    eng_stop(&fresh);
    start_with(&e, "{\"kind\":\"stale_draft_model\"}");
    http_post(&before, &e, "/skyrl/v1/generate", REQ);
    const char *tail = strstr(v0.body.data, ",\"syncroll\":");
    ck_assert_ptr_nonnull(tail);
    ck_assert_int_eq(strncmp(before.body.data, v0.body.data, (size_t)(tail - v0.body.data)), 0);
    eng_expect(&e, "POST", "/update_weights", "{\"update_info\":{\"target_version\":1}}", 200,
               NULL);
    http_post(&after, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(after.status, 200);
    ck_assert_ptr_nonnull(strstr(after.body.data, "\"rows\":[[2,13,1]]"));
    int32_t tok[8], prompt[6] = {5, 6, 7, 8, 9, 10};
    ck_assert_int_eq(reply_tokens(tok, 8, after.body.data), 8);
    int drafted = 0;
    for (int k = 0; k < 8; k++) {
        int draft = k % 3 != 0;
        int32_t want = oracle_token(o, prompt, 6, tok, k, g[!draft], l[!draft]);
        int32_t other = oracle_token(o, prompt, 6, tok, k, g[draft], l[draft]);
        ck_assert_msg(tok[k] == want, "token %d: %d, the %s's would be %d", k, tok[k],
                      draft ? "draft" : "target", want);
        drafted += draft && want != other;
    }
    ck_assert_int_gt(drafted, 0); /* the stale draft changed some token */
    hresp_free(&v0), hresp_free(&before), hresp_free(&after), eng_stop(&e);
    sr_oracle_free(o);
    sr_engine_config_release(&c);
}
END_TEST

/* ack_before_apply (modelscope/ms-swift#10207): the update to version 1 is acknowledged with MoE
 * layer slot 1 (the last) still at version 0; the 2 generates answered next are computed with
 * it (the same body both times), and after them the slot applies: the fingerprints become version
 * 1's and the third generate's body differs. Counts, not time. */
START_TEST(test_ack_before_apply)
{
    base_fps f = base_fingerprints();
    eng e;
    start_with(&e, "{\"kind\":\"ack_before_apply\",\"requests\":2}");
    eng_expect(&e, "POST", "/update_weights", "{\"update_info\":{\"target_version\":1}}", 200,
               NULL);
    char want[200];
    want_fps(want, sizeof(want), 1, 1, &f, 1, 1, 0);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    hresp a, b, after;
    http_post(&a, &e, "/skyrl/v1/generate", REQ);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    http_post(&b, &e, "/skyrl/v1/generate", REQ);
    want_fps(want, sizeof(want), 1, 1, &f, 1, 1, 1);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    http_post(&after, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(a.status, 200);
    ck_assert_int_eq(after.status, 200);
    ck_assert_str_eq(a.body.data, b.body.data);
    ck_assert_str_ne(a.body.data, after.body.data);
    hresp_free(&a), hresp_free(&b), hresp_free(&after), eng_stop(&e);
}
END_TEST

/* partial_apply_on_error (sgl-project/sglang-omni#784): the update to version 1 fails (500,
 * sync.engine_failed naming slot 1) after applying everything but MoE layer slot 1; the engine
 * still reports version 0 while holding version 1's global tensors and slot 0, and keeps
 * serving. */
START_TEST(test_partial_apply_on_error)
{
    base_fps f = base_fingerprints();
    eng e;
    start_with(&e, "{\"kind\":\"partial_apply_on_error\"}");
    eng_expect(&e, "POST", "/update_weights", "{\"update_info\":{\"target_version\":1}}", 500,
               "\"check\":\"sync.engine_failed\"");
    char want[200];
    want_fps(want, sizeof(want), 0, 1, &f, 1, 1, 0);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    eng_expect(&e, "POST", "/skyrl/v1/generate", REQ, 200, "\"weight_version\":0");
    eng_stop(&e);
}
END_TEST

static Suite *weight_faults_suite(void)
{
    Suite *s = suite_create("engine_weight_faults");
    TCase *tc = tcase_create("weight_faults");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_weight_faults);
    tcase_add_test(tc, test_update_ok_no_transfer);
    tcase_add_test(tc, test_version_regress);
    tcase_add_test(tc, test_init_group_hang);
    tcase_add_test(tc, test_serve_before_sync);
    tcase_add_test(tc, test_stale_draft_model);
    tcase_add_test(tc, test_ack_before_apply);
    tcase_add_test(tc, test_partial_apply_on_error);
    tcase_add_test(tc, test_bucket_order_mismatch);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(weight_faults_suite)
