/*
 * No weight writer other than a bucket runs while a bucket is in flight (issue 32 item 3), over
 * real HTTP against engines in child processes with real folders: sglang's
 * update_weights_from_disk during a half-sent update_weights_from_distributed and skyrl's delta
 * fetch_weights and update_weights during a half-sent bucket are refused sync.concurrent_update,
 * the bucket then commits its own version alone; vllm's weight checker reset likewise. And the
 * delta routes stop at the one version ceiling, SR_WEIGHTS_MAX_VERSION (the receiver entry points
 * in process, the routes over HTTP).
 */
#include "engine/engine.h"
#include "engine_util.h"
#include "sr_delta.h"
#include "sync/checkpoint.h"

#define S_INIT                                                                                     \
    "{\"master_address\":\"127.0.0.1\",\"master_port\":29500,\"rank_offset\":1,"                   \
    "\"world_size\":2,\"group_name\":\"syncroll\",\"backend\":\"nccl\"}"
#define SKY_START "{\"method\":\"skyrl_start_weight_update\"}"
#define SKY_FIN   "{\"method\":\"skyrl_finish_weight_update\"}"

/* An engine config of `dialect` whose only sync_dir is dir, into out[cap]. */
static void cfg_of(char *out, size_t cap, const char *dialect, const char *dir)
{
    snprintf(out, cap,
             "{\"sync_dialect\":\"%s\",\"seed\":3,\"model\":{\"layers\":2},"
             "\"server\":{\"sync_dirs\":[\"%s\"]}}",
             dialect, dir);
}

static void rm_rf(const char *dir)
{
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The probe: update A (version 2) half sent, then a disk load of version 1: before, 200,
 * and A then answered "Succeeded" with a tensor of neither version. Now the load is refused
 * sync.concurrent_update, A commits version 2 alone, and the load goes through once A is in. */
START_TEST(sglang_disk_load_during_a_bucket)
{
    char dir[] = "/tmp/sr-writers-disk-XXXXXX", cfg[512], path[600], req[900];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    cfg_of(cfg, sizeof(cfg), "sglang", dir);
    sr_engine_config c;
    sr_weights *w2 = eng_weights_of(cfg, 2, &c), *w3 = eng_weights_of(cfg, 3, &c);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof(path), w3, dir, 3, 1, 1, &err), err);
    snprintf(req, sizeof(req), "{\"model_path\":\"%s\",\"weight_version\":\"3\"}", path);
    sr_buf a = SR_BUF_INIT;
    eng_bucket_of_plane(&a, w2, 2, 1);
    eng e;
    eng_start(&e, cfg);
    eng_call(&e, "/init_weights_update_group", S_INIT, 200, NULL);
    eng_partial p;
    eng_partial_start(&p, &e, &a, "/update_weights_from_distributed", a.len / 2);
    eng_wait_sync(&e, "buckets_in_flight", 1);
    eng_call(&e, "/update_weights_from_disk", req, 400, "sync.concurrent_update");
    hresp r;
    eng_partial_finish(&p, &r);
    ck_assert_msg(r.status == 200 && strstr(r.body.data, "\"success\":true"), "A: %ld %s", r.status,
                  r.body.data);
    hresp_free(&r);
    eng_expect_holds(&e, &c, 2, 2);
    eng_call(&e, "/update_weights_from_disk", req, 200, NULL);
    eng_expect_holds(&e, &c, 3, 3);
    eng_stop(&e);
    sr_buf_release(&a);
    sr_weights_free(w2);
    sr_weights_free(w3);
    sr_engine_config_release(&c);
    rm_rf(dir);
}
END_TEST

/* Version 1 of cfg's weights published as a delta into dir (version 0 its base). */
static void publish_v1(const char *cfg, const char *dir)
{
    sr_engine_config c;
    sr_weights *w[2] = {eng_weights_of(cfg, 0, &c), NULL};
    sr_engine_config_release(&c);
    w[1] = eng_weights_of(cfg, 1, &c);
    sr_engine_config_release(&c);
    size_t n = sr_weights_count(w[0]);
    sr_delta_tensor *v[2] = {calloc(n, sizeof(sr_delta_tensor)),
                             calloc(n, sizeof(sr_delta_tensor))};
    sr_err err = SR_ERR_INIT;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < n; i++) {
            sr_weights_info x;
            ck_assert_sr_ok(sr_weights_tensor(&x, w[k], i, &err), err);
            v[k][i] = (sr_delta_tensor){
                x.name,  sr_dtype_name(x.dtype), 2, {x.shape[0], x.shape[1]}, (void *)x.data,
                x.nbytes};
        }
    sr_delta_publish_opts o = SR_DELTA_PUBLISH_OPTS_INIT;
    o.fsync = 0;
    sr_delta_publisher *p;
    ck_assert_sr_ok(sr_delta_publisher_new(&p, dir, v[0], n, &o, &err), err);
    sr_delta_publish_result res;
    ck_assert_sr_ok(sr_delta_publish(&res, p, v[1], n, 1, &err), err);
    sr_delta_publisher_free(p);
    for (int k = 0; k < 2; k++) {
        free(v[k]);
        sr_weights_free(w[k]);
    }
}

/* skyrl: a bucket of version 5 half sent; the delta fetch and the delta update of version 1 (and
 * a synthetic update) are refused (before: the fetch answered 200 and rewrote the stage under the
 * bucket, whose finish then committed a tensor of neither version); the update commits version 5
 * alone. */
START_TEST(skyrl_delta_during_a_bucket)
{
    char dir[] = "/tmp/sr-writers-delta-XXXXXX", cfg[512], fetch[700], upd[700];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    cfg_of(cfg, sizeof(cfg), "skyrl", dir);
    publish_v1(cfg, dir);
    snprintf(fetch, sizeof(fetch), "{\"target_version\":1,\"sync_dir\":\"%s\"}", dir);
    snprintf(upd, sizeof(upd), "{\"update_info\":{\"target_version\":1,\"sync_dir\":\"%s\"}}", dir);
    sr_engine_config c;
    sr_weights *w5 = eng_weights_of(cfg, 5, &c);
    sr_buf b = SR_BUF_INIT;
    eng_bucket_of(&b, w5, 5);
    eng e;
    eng_start(&e, cfg);
    eng_call(&e, "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    /* Fetched before the update starts: the delta update has something to commit. */
    eng_call(&e, "/fetch_weights", fetch, 200, NULL);
    eng_call(&e, "/collective_rpc", SKY_START, 200, NULL);
    eng_partial p;
    eng_partial_start(&p, &e, &b, "/collective_rpc", b.len / 2);
    eng_wait_sync(&e, "buckets_in_flight", 1);
    eng_call(&e, "/fetch_weights", fetch, 500, "sync.concurrent_update");
    eng_call(&e, "/update_weights", upd, 500, "sync.concurrent_update");
    /* The synthetic apply (no sync_dir) writes the model: refused the same. */
    eng_call(&e, "/update_weights", "{\"update_info\":{\"target_version\":7}}", 500,
             "sync.concurrent_update");
    hresp r;
    eng_partial_finish(&p, &r);
    ck_assert_msg(r.status == 200, "the bucket: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    /* Between the bucket and the finish its verified bytes wait in the stage: still refused. */
    eng_call(&e, "/fetch_weights", fetch, 500, "sync.concurrent_update");
    eng_call(&e, "/collective_rpc", SKY_FIN, 200, NULL);
    eng_expect_holds(&e, &c, 5, 5);
    /* The stage fetched before now holds the bucket's bytes: the delta update refuses to commit
     * them as version 1 (before: 200, version 1 with version 5's bytes). */
    eng_call(&e, "/update_weights", upd, 500, "delta.version");
    eng_expect_holds(&e, &c, 5, 5);
    /* Once the update is committed the delta transport works again. */
    eng_call(&e, "/fetch_weights", fetch, 200, NULL);
    eng_stop(&e);
    sr_buf_release(&b);
    sr_weights_free(w5);
    sr_engine_config_release(&c);
    rm_rf(dir);
}
END_TEST

/* vllm: the weight checker's reset (it overwrites the model) while a bucket of version 5 is half
 * sent, and while the update holds that bucket before its finish: refused 409, the update then
 * commits version 5 alone; after it the reset works. */
START_TEST(vllm_checker_reset_during_a_bucket)
{
    const char *cfg = "{\"sync_dialect\":\"vllm\",\"seed\":3,\"model\":{\"layers\":2}}";
    const char *reset = "{\"action\":\"reset\"}";
    sr_engine_config c;
    sr_weights *w5 = eng_weights_of(cfg, 5, &c);
    sr_buf b = SR_BUF_INIT;
    eng_bucket_of(&b, w5, 5);
    eng e;
    eng_start(&e, cfg);
    eng_call(&e, "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    eng_call(&e, "/start_weight_update", "{}", 200, NULL);
    eng_partial p;
    eng_partial_start(&p, &e, &b, "/update_weights", b.len / 2);
    eng_wait_sync(&e, "buckets_in_flight", 1);
    eng_call(&e, "/weight_checker", reset, 409, "sync.concurrent_update");
    hresp r;
    eng_partial_finish(&p, &r);
    ck_assert_msg(r.status == 200, "the bucket: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_call(&e, "/weight_checker", reset, 409, "sync.concurrent_update");
    eng_call(&e, "/finish_weight_update", "{\"weight_version\":\"5\"}", 200, NULL);
    eng_expect_holds(&e, &c, 5, 5);
    eng_call(&e, "/weight_checker", reset, 200, NULL);
    eng_stop(&e);
    sr_buf_release(&b);
    sr_weights_free(w5);
    sr_engine_config_release(&c);
}
END_TEST

/* Issue 32 item 6 for the delta routes: fetch_weights and update_weights with a sync_dir accepted
 * up to SR_DELTA_MAX_VERSION (99,999,999) in the engine; now SR_WEIGHTS_MAX_VERSION, as everywhere
 * else. The routes parse the version with that ceiling first, so the receiver entry points are
 * called in process as well, on a real folder. */
START_TEST(delta_version_ceiling)
{
    char dir[] = "/tmp/sr-writers-ceil-XXXXXX", cfg[512], body[700];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    cfg_of(cfg, sizeof(cfg), "skyrl", dir);
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, cfg, strlen(cfg), "t", 0, &err), err);
    sr_engine *en;
    ck_assert_sr_ok(sr_engine_new(&en, &c, &err), err);
    ck_assert_sr_ok(sr_engine_sync_call(en, SR_SC_INIT, NULL, &err), err);
    int64_t got;
    err = (sr_err)SR_ERR_INIT;
    ck_assert_int_eq(sr_engine_fetch(en, SR_WEIGHTS_MAX_VERSION + 1, dir, NULL, &got, &err),
                     SR_E_ENGINE_REQUEST);
    ck_assert_ptr_nonnull(strstr(err.msg, "1..100000"));
    err = (sr_err)SR_ERR_INIT;
    ck_assert_int_eq(sr_engine_update_delta(en, SR_WEIGHTS_MAX_VERSION + 1, dir, NULL, &got, &err),
                     SR_E_ENGINE_REQUEST);
    ck_assert_ptr_nonnull(strstr(err.msg, "1..100000"));
    /* At the ceiling the version is taken: the folder holds no version 1, a delta error. */
    err = (sr_err)SR_ERR_INIT;
    int rc = sr_engine_fetch(en, SR_WEIGHTS_MAX_VERSION, dir, NULL, &got, &err);
    ck_assert_msg(rc != 0 && rc != SR_E_ENGINE_REQUEST, "fetch at the ceiling: %d %s", rc, err.msg);
    sr_engine_free(en);
    /* Over HTTP the same, route by route. */
    eng e;
    eng_start(&e, cfg);
    eng_call(&e, "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    snprintf(body, sizeof(body), "{\"target_version\":100001,\"sync_dir\":\"%s\"}", dir);
    eng_call(&e, "/fetch_weights", body, 400, "engine.bad_request");
    snprintf(body, sizeof(body),
             "{\"update_info\":{\"target_version\":100001,\"sync_dir\":\"%s\"}}", dir);
    eng_call(&e, "/update_weights", body, 400, "engine.bad_request");
    snprintf(body, sizeof(body), "{\"target_version\":100000,\"sync_dir\":\"%s\"}", dir);
    hresp r;
    http_req(&r, NULL, &e, "POST", "/fetch_weights", body, NULL, 20000);
    ck_assert_msg(r.status == 500 && strstr(r.body.data, "\"check\":\"delta.") &&
                      !strstr(r.body.data, "engine.bad_request"),
                  "fetch at the ceiling: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_stop(&e);
    sr_engine_config_release(&c);
    rm_rf(dir);
}
END_TEST

static Suite *writers_suite(void)
{
    Suite *s = suite_create("sync_writers");
    TCase *tc = tcase_create("writers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sglang_disk_load_during_a_bucket);
    tcase_add_test(tc, skyrl_delta_during_a_bucket);
    tcase_add_test(tc, vllm_checker_reset_during_a_bucket);
    tcase_add_test(tc, delta_version_ceiling);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(writers_suite)
