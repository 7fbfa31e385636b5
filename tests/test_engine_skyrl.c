/*
 * The skyrl control plane's lenient points of issue #20, tightened to what SkyRL's own server
 * and receiver do, over real HTTP: fetch_weights (and the delta update) before
 * init_weight_transfer_engine is refused as the reference receiver refuses it ("has not been
 * initialized", skyrl/backends/skyrl_train/weight_sync/delta_engine.py); the receiver's state
 * lives in the init info's local_checkpoint_dir when it names one; /reset_prefix_cache and
 * /fetch_weights answer {"status": "ok", ...} as skyrl/backends/skyrl_train/inference_servers/
 * vllm_server_actor.py does. Each test failed before the fix.
 */
#include <sys/stat.h>

#include "engine_util.h"
#include "sr_delta.h"

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A temporary folder base/ with base/sync in it, and an engine "k" allowed to write in base. */
typedef struct fix {
    char base[64], sync[96];
    eng e;
} fix;

static void fix_start(fix *f)
{
    snprintf(f->base, sizeof(f->base), "/tmp/sr-skyrl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->base));
    snprintf(f->sync, sizeof(f->sync), "%s/sync", f->base);
    ck_assert_int_eq(mkdir(f->sync, 0700), 0);
    char cfg[256];
    snprintf(cfg, sizeof(cfg),
             "{\"id\":\"k\",\"seed\":3,\"weights\":{\"total_bytes\":1048576},"
             "\"server\":{\"sync_dirs\":[\"%s\"]}}",
             f->base);
    eng_start(&f->e, cfg);
}

static void fix_stop(fix *f)
{
    eng_stop(&f->e);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->base);
    ck_assert_int_eq(system(cmd), 0);
}

/* Publishes version 1 of the engine's weights into f->sync (the trainer's delta store). */
static void publish_v1(fix *f)
{
    const char *t = "{\"seed\":3,\"weights\":{\"total_bytes\":1048576}}";
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, t, strlen(t), "t", 0, &err), err);
    sr_weights_spec ws = sr_engine_config_weights(&c);
    sr_weights *w[2];
    sr_delta_tensor *view[2];
    for (int v = 0; v < 2; v++) {
        ck_assert_sr_ok(sr_weights_new(&w[v], &ws, v, &err), err);
        size_t n = sr_weights_count(w[v]);
        view[v] = calloc(n, sizeof(sr_delta_tensor));
        for (size_t i = 0; i < n; i++) {
            sr_weights_info x;
            ck_assert_sr_ok(sr_weights_tensor(&x, w[v], i, &err), err);
            view[v][i] = (sr_delta_tensor){
                x.name,  sr_dtype_name(x.dtype), 2, {x.shape[0], x.shape[1]}, (void *)x.data,
                x.nbytes};
        }
    }
    size_t n = sr_weights_count(w[0]);
    sr_delta_publisher *pub = NULL;
    sr_delta_publish_opts o = SR_DELTA_PUBLISH_OPTS_INIT;
    ck_assert_sr_ok(sr_delta_publisher_new(&pub, f->sync, view[0], n, &o, &err), err);
    sr_delta_publish_result r;
    ck_assert_sr_ok(sr_delta_publish(&r, pub, view[1], n, 1, &err), err);
    sr_delta_publisher_free(pub);
    for (int v = 0; v < 2; v++) {
        free(view[v]);
        sr_weights_free(w[v]);
    }
    sr_engine_config_release(&c);
}

#define GEN "{\"sampling_params\":{\"max_tokens\":4},\"token_ids\":[1,2,3]}"

/* Before the fix a fetch_weights before init was accepted and fetched. Now it and the delta
 * update answer 500 sync.protocol_order with the reference's message, the engine serves on, and
 * after init the same fetch succeeds. */
START_TEST(fetch_before_init_is_not_initialized)
{
    fix f;
    fix_start(&f);
    publish_v1(&f);
    char body[256];
    snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", f.sync);
    hresp r;
    http_post(&r, &f.e, "/fetch_weights", body);
    ck_assert_int_eq(r.status, 500);
    ck_assert_msg(strstr(r.body.data, "DeltaWeightTransferEngine has not been initialized") &&
                      strstr(r.body.data, "\"check\":\"sync.protocol_order\""),
                  "%s", r.body.data);
    hresp_free(&r);
    snprintf(body, sizeof(body),
             "{\"update_info\":{\"target_version\":1,\"version\":1,\"sync_dir\":\"%s\"}}", f.sync);
    eng_expect(&f.e, "POST", "/update_weights", body, 500, "has not been initialized");
    eng_expect(&f.e, "POST", "/skyrl/v1/generate", GEN, 200, "\"weight_version\":0");
    eng_expect(&f.e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", f.sync);
    eng_expect(&f.e, "POST", "/fetch_weights", body, 200, "\"fetched_version\":1");
    fix_stop(&f);
}
END_TEST

/* Before the fix the receiver's state went to {sync_dir}/receiver-<id> whatever the init info
 * said. Now an init naming local_checkpoint_dir puts it there (and nothing under sync_dir), a
 * later init without one goes back to sync_dir, and a local_checkpoint_dir outside
 * server.sync_dirs is refused at the fetch (403 engine.forbidden_path). */
START_TEST(receiver_state_under_local_checkpoint_dir)
{
    fix f;
    fix_start(&f);
    publish_v1(&f);
    char body[512], lcd[128], under_sync[160];
    snprintf(lcd, sizeof(lcd), "%s/local-ckpt", f.base);
    snprintf(under_sync, sizeof(under_sync), "%s/receiver-k", f.sync);
    snprintf(body, sizeof(body),
             "{\"init_info\":{\"base_model_path\":\"m\",\"local_checkpoint_dir\":\"%s\"}}", lcd);
    eng_expect(&f.e, "POST", "/init_weight_transfer_engine", body, 200, NULL);
    snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", f.sync);
    eng_expect(&f.e, "POST", "/fetch_weights", body, 200, "\"fetched_version\":1");
    ck_assert_msg(exists(lcd), "%s was not created", lcd);
    ck_assert_msg(!exists(under_sync), "%s was created", under_sync);
    snprintf(body, sizeof(body),
             "{\"update_info\":{\"target_version\":1,\"version\":1,\"sync_dir\":\"%s\"}}", f.sync);
    eng_expect(&f.e, "POST", "/update_weights", body, 200, "{\"version\":1}");
    /* An init without it: the state goes back under sync_dir. */
    eng_expect(&f.e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", f.sync);
    eng_expect(&f.e, "POST", "/fetch_weights", body, 200, "\"fetched_version\":1");
    ck_assert_msg(exists(under_sync), "%s was not created", under_sync);
    /* Outside the folders the engine may write. */
    eng_expect(&f.e, "POST", "/init_weight_transfer_engine",
               "{\"init_info\":{\"local_checkpoint_dir\":\"/etc/sr-skyrl\"}}", 200, NULL);
    eng_expect(&f.e, "POST", "/fetch_weights", body, 403, "init_info.local_checkpoint_dir");
    ck_assert(!exists("/etc/sr-skyrl"));
    eng_expect(&f.e, "POST", "/skyrl/v1/generate", GEN, 200, "\"weight_version\":1");
    fix_stop(&f);
}
END_TEST

/* Before the fix /reset_prefix_cache answered an empty body and /fetch_weights only syncroll's
 * keys; SkyRL's server answers {"status": "ok"} and {"status": "ok", "result": [...]}. */
START_TEST(control_responses_say_status_ok)
{
    fix f;
    fix_start(&f);
    publish_v1(&f);
    hresp r;
    http_post(&r, &f.e, "/reset_prefix_cache", "{\"reset_running_requests\":true}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body.data, "{\"status\":\"ok\"}");
    hresp_free(&r);
    eng_expect(&f.e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    char body[256];
    snprintf(body, sizeof(body), "{\"target_version\":1,\"sync_dir\":\"%s\"}", f.sync);
    http_post(&r, &f.e, "/fetch_weights", body);
    ck_assert_int_eq(r.status, 200);
    const char *want = "{\"status\":\"ok\",\"result\":[{\"status\":\"ok\",\"target_version\":1}],";
    ck_assert_msg(strncmp(r.body.data, want, strlen(want)) == 0, "%s", r.body.data);
    hresp_free(&r);
    fix_stop(&f);
}
END_TEST

static Suite *skyrl_suite(void)
{
    Suite *s = suite_create("engine_skyrl");
    TCase *tc = tcase_create("lenient_points");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fetch_before_init_is_not_initialized);
    tcase_add_test(tc, receiver_state_under_local_checkpoint_dir);
    tcase_add_test(tc, control_responses_say_status_ok);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(skyrl_suite)
