/*
 * Weight updates are atomic per version, over real HTTP against
 * engines in child processes: a finish while a bucket of the update is still arriving is refused
 * sync.incomplete_update and nothing of the update is applied, the late bucket is refused too;
 * two concurrent sglang updates of one tensor cannot mix their bytes (sync.concurrent_update);
 * the version guard holds when the call names no version; one version ceiling in every route;
 * an escaped NUL in a control-plane string is refused; a finish after a failed bucket says what
 * it discards; start_weight_update refuses a body that is not JSON.
 */
#include "engine/sync_req.h"
#include "engine_util.h"
#include "sync/checkpoint.h"

#define GEN  "{\"token_ids\":[5,6,7],\"sampling_params\":{\"max_tokens\":3}}"
#define VCFG "{\"sync_dialect\":\"vllm\",\"seed\":3,\"model\":{\"layers\":2}}"
#define KCFG "{\"sync_dialect\":\"skyrl\",\"seed\":3,\"model\":{\"layers\":2}}"
#define SCFG "{\"sync_dialect\":\"sglang\",\"seed\":3,\"model\":{\"layers\":2}}"
#define V_INIT                                                                                     \
    "{\"init_info\":{\"master_address\":\"127.0.0.1\",\"master_port\":29500,"                      \
    "\"rank_offset\":1,\"world_size\":2}}"
#define S_INIT                                                                                     \
    "{\"master_address\":\"127.0.0.1\",\"master_port\":29500,\"rank_offset\":1,"                   \
    "\"world_size\":2,\"group_name\":\"syncroll\",\"backend\":\"nccl\"}"
#define SKY_START "{\"method\":\"skyrl_start_weight_update\"}"
#define SKY_FIN   "{\"method\":\"skyrl_finish_weight_update\"}"

/* Buckets 0 and 1 of version 5 (the first half of the tensors, then the rest). */
typedef struct two {
    sr_buf b0, b1;
} two;

static void two_buckets(two *t, const sr_weights *w, int sgl)
{
    size_t n = sr_weights_count(w), h = n / 2;
    ck_assert_uint_ge(n, 2);
    t->b0 = (sr_buf)SR_BUF_INIT;
    t->b1 = (sr_buf)SR_BUF_INIT;
    eng_bucket_range(&t->b0, w, 5, sgl, 0, h, 0);
    eng_bucket_range(&t->b1, w, 5, sgl, h, n - h, 1);
}

static void two_free(two *t)
{
    sr_buf_release(&t->b0);
    sr_buf_release(&t->b1);
}

/* Bucket 0 in full, part of bucket 1, finish: refused, nothing applied; bucket
 * 1 completing later is refused too; then the same update sent whole commits. `path` is the
 * plane's bucket route, start/finish its calls, status its refusal status; `cut` the bytes of
 * bucket 1 sent before the finish, 0 for half of it (40: inside its header line, which the finish
 * once acknowledged: 200, version 5, a fingerprint of neither version). */
static void half_bucket_then_finish(const char *cfg, const char *path, const char *start_path,
                                    const char *start, const char *finish_path, const char *finish,
                                    long status, size_t cut)
{
    sr_engine_config c;
    sr_weights *w = eng_weights_of(cfg, 5, &c);
    two t;
    two_buckets(&t, w, 0);
    eng e;
    eng_start(&e, cfg);
    eng_call(&e, "/init_weight_transfer_engine", V_INIT, 200, NULL);
    eng_call(&e, start_path, start, 200, NULL);
    hresp r;
    eng_post_bucket_to(&r, &e, &t.b0, path);
    ck_assert_msg(r.status == 200, "bucket 0: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_partial p;
    if (cut)
        ck_assert_ptr_null(memchr(t.b1.data, '\n', cut)); /* inside the header line */
    eng_partial_start(&p, &e, &t.b1, path, cut ? cut : t.b1.len / 2);
    eng_wait_sync(&e, "buckets_in_flight", 1);
    eng_call(&e, finish_path, finish, status, "sync.incomplete_update");
    eng_expect_holds(&e, &c, 0, 0); /* no version, no byte of version 5 */
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"idle\"");
    eng_partial_finish(&p, &r);
    eng_expect_answer(&r, status, "sync.incomplete_update", "bucket 1 after the finish");
    hresp_free(&r);
    eng_expect_holds(&e, &c, 0, 0);
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, "\"finish_reason\"");
    /* The same update, every bucket whole before the finish, commits. */
    eng_call(&e, start_path, start, 200, NULL);
    eng_post_bucket_to(&r, &e, &t.b0, path);
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    eng_post_bucket_to(&r, &e, &t.b1, path);
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    eng_call(&e, finish_path, finish, 200, NULL);
    eng_expect_holds(&e, &c, 5, 5);
    eng_stop(&e);
    two_free(&t);
    sr_weights_free(w);
    sr_engine_config_release(&c);
}

START_TEST(vllm_finish_with_a_bucket_arriving)
{
    half_bucket_then_finish(VCFG, "/update_weights", "/start_weight_update", "{}",
                            "/finish_weight_update", "{\"weight_version\":\"5\"}", 409, 0);
    half_bucket_then_finish(VCFG, "/update_weights", "/start_weight_update", "{}",
                            "/finish_weight_update", "{\"weight_version\":\"5\"}", 409, 40);
}
END_TEST

START_TEST(skyrl_finish_with_a_bucket_arriving)
{
    half_bucket_then_finish(KCFG, "/collective_rpc", "/collective_rpc", SKY_START,
                            "/collective_rpc", SKY_FIN, 500, 0);
    half_bucket_then_finish(KCFG, "/collective_rpc", "/collective_rpc", SKY_START,
                            "/collective_rpc", SKY_FIN, 500, 40);
}
END_TEST

/* Two concurrent update_weights_from_distributed of the same tensors: the
 * second is refused while the first arrives, the first commits its own bytes only. */
START_TEST(sglang_concurrent_updates_of_one_tensor)
{
    sr_engine_config c;
    sr_weights *wa = eng_weights_of(SCFG, 1, &c), *wb = eng_weights_of(SCFG, 2, &c);
    sr_buf a = SR_BUF_INIT, b = SR_BUF_INIT;
    eng_bucket_of_plane(&a, wa, 1, 1);
    eng_bucket_of_plane(&b, wb, 2, 1);
    eng e;
    eng_start(&e, SCFG);
    eng_call(&e, "/init_weights_update_group", S_INIT, 200, NULL);
    eng_partial p;
    eng_partial_start(&p, &e, &a, "/update_weights_from_distributed", a.len / 2);
    eng_wait_sync(&e, "buckets_in_flight", 1);
    hresp r;
    eng_post_bucket_to(&r, &e, &b, "/update_weights_from_distributed");
    eng_expect_answer(&r, 400, "sync.concurrent_update", "B while A arrives");
    hresp_free(&r);
    eng_partial_finish(&p, &r);
    ck_assert_msg(r.status == 200 && strstr(r.body.data, "\"success\":true"), "A: %ld %s", r.status,
                  r.body.data);
    hresp_free(&r);
    eng_expect_holds(&e, &c, 1, 1);
    /* B once A is answered: accepted. */
    eng_post_bucket_to(&r, &e, &b, "/update_weights_from_distributed");
    ck_assert_msg(r.status == 200, "B after A: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_expect_holds(&e, &c, 2, 2);
    eng_stop(&e);
    sr_buf_release(&a);
    sr_buf_release(&b);
    sr_weights_free(wa);
    sr_weights_free(wb);
    sr_engine_config_release(&c);
}
END_TEST

/* The backwards guard when the finish names no version (its buckets do). */
START_TEST(backwards_without_a_version)
{
    sr_engine_config c;
    sr_weights *w = eng_weights_of(VCFG, 3, &c);
    sr_buf b = SR_BUF_INIT;
    eng_bucket_of(&b, w, 3);
    hresp r;
    /* vllm at 100000, a bucket for 3, finish {}. */
    eng e;
    eng_start(&e, VCFG);
    eng_call(&e, "/init_weight_transfer_engine", V_INIT, 200, NULL);
    eng_call(&e, "/update_weight_version", "{\"new_version\":\"100000\"}", 200, NULL);
    eng_call(&e, "/start_weight_update", "{}", 200, NULL);
    eng_post_bucket_to(&r, &e, &b, "/update_weights");
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    eng_call(&e, "/finish_weight_update", "{}", 409, "sync.version_backwards");
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 100000);
    eng_stop(&e);
    /* skyrl at 100000 (a synthetic apply), a bucket for 3, finish with no kwargs. */
    eng_start(&e, KCFG);
    eng_call(&e, "/update_weights", "{\"update_info\":{\"target_version\":100000}}", 200, NULL);
    eng_call(&e, "/collective_rpc", SKY_START, 200, NULL);
    eng_post_bucket_to(&r, &e, &b, "/collective_rpc");
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    eng_call(&e, "/collective_rpc", "{\"method\":\"skyrl_finish_weight_update\",\"kwargs\":{}}",
             500, "sync.version_backwards");
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 100000);
    eng_stop(&e);
    sr_buf_release(&b);
    sr_weights_free(w);
    sr_engine_config_release(&c);
}
END_TEST

/* The backwards guard, sglang: update_weights_from_disk without weight_version at 5, the folder
 * holding version 1: refused, the engine stays on 5. */
START_TEST(sglang_disk_backwards_without_a_version)
{
    char dir[] = "/tmp/sr-atomic-disk-XXXXXX", cfg[512], path[600], req[900];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cfg, sizeof(cfg),
             "{\"sync_dialect\":\"sglang\",\"seed\":3,\"model\":{\"layers\":2},"
             "\"server\":{\"sync_dirs\":[\"%s\"]}}",
             dir);
    sr_engine_config c;
    sr_weights *w = eng_weights_of(SCFG, 1, &c);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof(path), w, dir, 1, 1, 1, &err), err);
    eng e;
    eng_start(&e, cfg);
    eng_call(&e, "/update_weight_version", "{\"new_version\":\"5\"}", 200, NULL);
    snprintf(req, sizeof(req), "{\"model_path\":\"%s\"}", path);
    eng_call(&e, "/update_weights_from_disk", req, 400, "sync.version_backwards");
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 5);
    /* From 0 the same folder loads, at the version it names. */
    eng_stop(&e);
    eng_start(&e, cfg);
    eng_call(&e, "/update_weights_from_disk", req, 200, NULL);
    eng_expect_holds(&e, &c, 1, 1);
    eng_stop(&e);
    sr_weights_free(w);
    sr_engine_config_release(&c);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* One ceiling, SR_WEIGHTS_MAX_VERSION, in every route: one before and at it
 * accepted, one past it refused engine.bad_request. */
START_TEST(one_version_ceiling)
{
    ck_assert_int_eq(SR_WEIGHTS_MAX_VERSION, 100000);
    eng e;
    eng_start(&e, VCFG);
    eng_call(&e, "/update_weight_version", "{\"new_version\":\"99999\"}", 200, NULL);
    eng_call(&e, "/update_weight_version", "{\"new_version\":100000}", 200, NULL);
    eng_call(&e, "/update_weight_version", "{\"new_version\":\"100001\"}", 400,
             "engine.bad_request");
    eng_call(&e, "/init_weight_transfer_engine", V_INIT, 200, NULL);
    eng_call(&e, "/start_weight_update", "{}", 200, NULL);
    /* The case: a finish to 200000 was accepted, then a bucket for 200001 refused. */
    eng_call(&e, "/finish_weight_update", "{\"weight_version\":\"200000\"}", 400,
             "engine.bad_request");
    eng_call(&e, "/finish_weight_update", "{\"weight_version\":\"100001\"}", 400,
             "engine.bad_request");
    eng_call(&e, "/finish_weight_update", "{\"weight_version\":100000}", 200, NULL);
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 100000);
    eng_stop(&e);
    /* Buckets: at the ceiling (the version held is 0), one past. */
    sr_engine_config c;
    sr_weights *w = eng_weights_of(VCFG, SR_WEIGHTS_MAX_VERSION, &c);
    sr_buf at = SR_BUF_INIT, past = SR_BUF_INIT;
    eng_bucket_of(&at, w, SR_WEIGHTS_MAX_VERSION);
    eng_bucket_of(&past, w, SR_WEIGHTS_MAX_VERSION + 1);
    eng_start(&e, VCFG);
    eng_call(&e, "/init_weight_transfer_engine", V_INIT, 200, NULL);
    eng_call(&e, "/start_weight_update", "{}", 200, NULL);
    hresp r;
    eng_post_bucket_to(&r, &e, &past, "/update_weights");
    eng_expect_answer(&r, 400, "engine.bad_request", "a bucket past the ceiling");
    hresp_free(&r);
    eng_call(&e, "/finish_weight_update", "{}", 400, "engine.bad_request"); /* spoiled by it */
    eng_call(&e, "/start_weight_update", "{}", 200, NULL);
    eng_post_bucket_to(&r, &e, &at, "/update_weights");
    ck_assert_msg(r.status == 200, "a bucket at the ceiling: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_call(&e, "/finish_weight_update", "{}", 200, NULL);
    eng_expect_holds(&e, &c, SR_WEIGHTS_MAX_VERSION, SR_WEIGHTS_MAX_VERSION);
    eng_stop(&e);
    /* skyrl's synthetic apply and finish, sglang's version and disk routes. */
    eng_start(&e, KCFG);
    eng_call(&e, "/update_weights", "{\"update_info\":{\"target_version\":100001}}", 400,
             "engine.bad_request");
    eng_call(&e, "/update_weights", "{\"update_info\":{\"target_version\":100000}}", 200, NULL);
    eng_call(&e, "/collective_rpc", SKY_START, 200, NULL);
    eng_call(&e, "/collective_rpc",
             "{\"method\":\"skyrl_finish_weight_update\",\"kwargs\":{\"syncroll\":"
             "{\"target_version\":100001}}}",
             400, "engine.bad_request");
    eng_stop(&e);
    eng_start(&e, SCFG);
    eng_call(&e, "/update_weight_version", "{\"new_version\":\"100001\"}", 400,
             "engine.bad_request");
    eng_call(&e, "/update_weight_version", "{\"new_version\":\"100000\"}", 200, NULL);
    eng_call(&e, "/update_weights_from_disk",
             "{\"model_path\":\"/x\",\"weight_version\":\"100001\"}", 400, "engine.bad_request");
    eng_stop(&e);
    sr_buf_release(&at);
    sr_buf_release(&past);
    sr_weights_free(w);
    sr_engine_config_release(&c);
}
END_TEST

/* An escaped NUL in a control-plane string is refused, in every plane, in a
 * JSON body and in a bucket's header; an escaped backslash before "u0000" is no NUL. */
START_TEST(escaped_nul_refused)
{
    const char *nul_msg = "escaped NUL";
    eng e;
    eng_start(&e, VCFG);
    hresp r;
    http_req(&r, NULL, &e, "POST", "/update_weight_version", "{\"new_version\":\"3\\u0000\"}", NULL,
             20000);
    eng_expect_answer(&r, 400, "engine.bad_request", "version 3\\u0000");
    ck_assert_ptr_nonnull(strstr(r.body.data, nul_msg));
    hresp_free(&r);
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 0);
    eng_call(&e, "/init_weight_transfer_engine",
             "{\"init_info\":{\"master_address\":\"a\\\\u0000b\",\"master_port\":1}}", 200, NULL);
    eng_call(&e, "/start_weight_update", "{}", 200, NULL);
    /* A bucket naming "<tensor>\u0000junk". */
    sr_engine_config c;
    sr_weights *w = eng_weights_of(VCFG, 5, &c);
    sr_buf b = SR_BUF_INIT, bad = SR_BUF_INIT;
    eng_bucket_of(&b, w, 5);
    sr_weights_info t;
    ck_assert_int_eq(sr_weights_tensor(&t, w, 0, NULL), 0);
    char name[96], junk[120];
    snprintf(name, sizeof(name), "\"%s\"", t.name);
    snprintf(junk, sizeof(junk), "\"%s\\u0000junk\"", t.name);
    const char *at = strstr(b.data, name);
    ck_assert_ptr_nonnull(at);
    sr_buf_append(&bad, b.data, (size_t)(at - b.data), NULL);
    sr_buf_puts(&bad, junk, NULL);
    sr_buf_append(&bad, at + strlen(name), b.len - (size_t)(at - b.data) - strlen(name), NULL);
    eng_post_bucket_to(&r, &e, &bad, "/update_weights");
    eng_expect_answer(&r, 400, "engine.bad_request", "tensor name with \\u0000junk");
    ck_assert_ptr_nonnull(strstr(r.body.data, nul_msg));
    hresp_free(&r);
    eng_stop(&e);
    /* skyrl: a collective_rpc method. */
    eng_start(&e, KCFG);
    http_req(&r, NULL, &e, "POST", "/collective_rpc",
             "{\"method\":\"skyrl_start_weight_update\\u0000x\"}", NULL, 20000);
    eng_expect_answer(&r, 400, "engine.bad_request", "skyrl method with \\u0000");
    ck_assert_ptr_nonnull(strstr(r.body.data, nul_msg));
    hresp_free(&r);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"starts\":0,");
    eng_stop(&e);
    /* sglang: a model_path. */
    eng_start(&e, SCFG);
    http_req(&r, NULL, &e, "POST", "/update_weights_from_disk",
             "{\"model_path\":\"/tmp/ok1\\u0000/../../x\"}", NULL, 20000);
    eng_expect_answer(&r, 400, "engine.bad_request", "model_path with \\u0000");
    ck_assert_ptr_nonnull(strstr(r.body.data, nul_msg));
    hresp_free(&r);
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, "\"finish_reason\"");
    eng_stop(&e);
    sr_buf_release(&b);
    sr_buf_release(&bad);
    sr_weights_free(w);
    sr_engine_config_release(&c);
}
END_TEST

/* The scan itself: escapes followed string by string. */
START_TEST(nul_scan_units)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_int_eq(sr_sync_req_no_nul("{\"a\":\"x\\u0000\"}", 15, "t", &err),
                     SR_E_ENGINE_REQUEST);
    ck_assert_int_eq(sr_sync_req_no_nul("{\"a\\u0000\":1}", 13, "t", &err), SR_E_ENGINE_REQUEST);
    ck_assert_int_eq(sr_sync_req_no_nul("{\"a\":\"x\\\\u0000\"}", 16, "t", &err), 0);
    ck_assert_int_eq(sr_sync_req_no_nul("{\"a\":\"\\u00001\"}", 14, "t", &err),
                     SR_E_ENGINE_REQUEST);
    ck_assert_int_eq(sr_sync_req_no_nul("{\"a\":\"\\u0001\"}", 13, "t", &err), 0);
    ck_assert_int_eq(sr_sync_req_no_nul("{\"a\":1}\0", 8, "t", &err), SR_E_ENGINE_REQUEST);
    /* A NUL byte right after a backslash (found by fuzz_sync_request). */
    ck_assert_int_eq(sr_sync_req_no_nul("{\"a\":\"\\\0\"}", 10, "t", &err), SR_E_ENGINE_REQUEST);
    ck_assert_int_eq(sr_sync_req_no_nul("\"\\u000", 6, "t", &err), 0);
    ck_assert_int_eq(sr_sync_req_no_nul(NULL, 0, "t", &err), 0);
}
END_TEST

/* A finish after a failed bucket names no version -1; start_weight_update
 * refuses a body that is not JSON as finish does. */
START_TEST(finish_after_a_failed_bucket_and_start_body)
{
    eng e;
    eng_start(&e, VCFG);
    eng_call(&e, "/init_weight_transfer_engine", V_INIT, 200, NULL);
    eng_call(&e, "/start_weight_update", "not json", 400, "engine.bad_request");
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"idle\"");
    eng_call(&e, "/finish_weight_update", "not json", 400, "engine.bad_request");
    eng_call(&e, "/start_weight_update", "{\"is_checkpoint_format\":true}", 200, NULL);
    sr_buf b = SR_BUF_INIT;
    sr_buf_puts(&b, "{\"update_info\":{\"names\":[\"no.such.tensor\"]}}\n", NULL);
    hresp r;
    eng_post_bucket_to(&r, &e, &b, "/update_weights");
    eng_expect_answer(&r, 400, "engine.bad_request", "a bad bucket");
    hresp_free(&r);
    http_req(&r, NULL, &e, "POST", "/finish_weight_update", "{}", NULL, 20000);
    eng_expect_answer(&r, 400, "engine.bad_request", "finish after it");
    ck_assert_msg(!strstr(r.body.data, "-1") &&
                      strstr(r.body.data, "the update is discarded (neither the finish nor an "
                                          "accepted bucket named its version), the engine stays "
                                          "on 0"),
                  "finish after a failed bucket: %s", r.body.data);
    hresp_free(&r);
    sr_buf_release(&b);
    eng_stop(&e);
}
END_TEST

static Suite *atomic_suite(void)
{
    Suite *s = suite_create("sync_atomic");
    TCase *tc = tcase_create("atomic");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, vllm_finish_with_a_bucket_arriving);
    tcase_add_test(tc, skyrl_finish_with_a_bucket_arriving);
    tcase_add_test(tc, sglang_concurrent_updates_of_one_tensor);
    tcase_add_test(tc, backwards_without_a_version);
    tcase_add_test(tc, sglang_disk_backwards_without_a_version);
    tcase_add_test(tc, one_version_ceiling);
    tcase_add_test(tc, escaped_nul_refused);
    tcase_add_test(tc, nul_scan_units);
    tcase_add_test(tc, finish_after_a_failed_bucket_and_start_body);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(atomic_suite)
