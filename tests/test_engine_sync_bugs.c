/* The weights faults of reported weight-sync bugs (finish after a failed chunk, an update that
 * leaves the engine unable to serve, a restart that loses the transfer group, a loader that
 * deletes the shared checkpoint, a level-2 wake without a reload) produce exactly their declared
 * effect on a real engine over HTTP, and the same calls without the fault do not. */
#include <sys/stat.h>

#include "engine_faults_util.h"
#include "sync/checkpoint.h"

/* Faults of this file's vllm engines: `extra` after the plane. */
static void start_vllm(eng *e, const char *faults)
{
    char cfg[1024];
    snprintf(cfg, sizeof(cfg), "{" BASE_MODEL ",\"sync_dialect\":\"vllm\",\"faults\":[%s]}",
             faults);
    eng_start(e, cfg);
}

/* The fingerprints the state reports: fp[0] global, fp[1] and fp[2] the MoE slots. */
static void state_fps(const eng *e, unsigned long long fp[3])
{
    hresp r;
    http_get(&r, e, "/syncroll/v1/state");
    ck_assert_int_eq(r.status, 200);
    cJSON *s = cJSON_Parse(r.body.data);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(s, "fingerprints");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(f, "global");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(f, "layers");
    ck_assert_msg(cJSON_IsString(g) && cJSON_GetArraySize(l) == 2, "%s", r.body.data);
    fp[0] = strtoull(g->valuestring, NULL, 16);
    for (int i = 0; i < 2; i++)
        fp[1 + i] = strtoull(cJSON_GetArrayItem(l, i)->valuestring, NULL, 16);
    cJSON_Delete(s);
    hresp_free(&r);
}

/* 1 when fp is exactly the fingerprints (g, l) of one version. */
static int fps_are(const unsigned long long fp[3], uint64_t g, const uint64_t *l)
{
    return fp[0] == g && fp[1] == l[0] && fp[2] == l[1];
}

/* One vllm-plane update to version 1 in two chunks (the first half of the tensors, then the
 * rest), the second corrupted in transit by the engine's checksum_mismatch fault; returns the
 * finish's status. */
static long two_chunks_second_fails(const eng *e, const sr_weights *w)
{
    size_t n = sr_weights_count(w), half = n / 2;
    sr_buf b1 = SR_BUF_INIT, b2 = SR_BUF_INIT;
    eng_bucket_range(&b1, w, 1, 0, 0, half, 0);
    eng_bucket_range(&b2, w, 1, 0, half, n - half, 1);
    eng_expect(e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
    eng_expect(e, "POST", "/start_weight_update", "{}", 200, NULL);
    hresp r;
    eng_post_bucket(&r, e, &b1);
    ck_assert_msg(r.status == 200, "chunk 1: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_post_bucket(&r, e, &b2);
    eng_expect_answer(&r, 500, "delta.checksum", "chunk 2");
    hresp_free(&r);
    http_post(&r, e, "/finish_weight_update", "{\"weight_version\":1}");
    long status = r.status;
    hresp_free(&r);
    sr_buf_release(&b1);
    sr_buf_release(&b2);
    return status;
}

/* publish_after_failed_chunk (lightseekorg/tokenspeed#672, review): after chunk 1 of version 1
 * landed and chunk 2 failed its checksum, the finish answers 200 and publishes version 1 over
 * weights that are neither version 0's nor version 1's. The same calls without the fault: the
 * finish refuses (500, the chunk's failure) and the engine keeps version 0 and its bytes (it
 * reports the label "default": nothing was ever published, vllm#49040). */
START_TEST(test_publish_after_failed_chunk)
{
#define CORRUPT_2 "{\"kind\":\"checksum_mismatch\",\"endpoints\":[\"update_weights\"],\"nth\":[2]}"
    const char *cfg = "{" BASE_MODEL "}";
    sr_engine_config c;
    sr_weights *w = eng_weights_of(cfg, 1, &c);
    uint64_t g[2], l[2][2];
    expected_fps(&c, 0, &g[0], l[0]);
    expected_fps(&c, 1, &g[1], l[1]);
    eng e;
    start_vllm(&e, CORRUPT_2);
    ck_assert_int_eq(two_chunks_second_fails(&e, w), 500);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"default\"}");
    unsigned long long fp[3];
    state_fps(&e, fp);
    ck_assert(fps_are(fp, g[0], l[0]));
    eng_stop(&e);
    start_vllm(&e, "{\"kind\":\"publish_after_failed_chunk\",\"endpoints\":[\"update_weights\"],"
                   "\"nth\":[1]}," CORRUPT_2);
    ck_assert_int_eq(two_chunks_second_fails(&e, w), 200);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"1\"}");
    state_fps(&e, fp);
    ck_assert_msg(!fps_are(fp, g[0], l[0]) && !fps_are(fp, g[1], l[1]),
                  "the published weights are a version's: %016llx %016llx %016llx", fp[0], fp[1],
                  fp[2]);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"kind\":\"publish_after_failed_chunk\",\"layer\":\"weights\",\"seen\":2,"
               "\"fired\":1");
    eng_expect(&e, "POST", "/skyrl/v1/generate", REQ, 200, "\"weight_version\":1");
    eng_stop(&e);
    sr_weights_free(w);
    sr_engine_config_release(&c);
}
END_TEST

/* generate_fails_after_update (vllm-project/vllm#57022, sgl-project/sglang#17107): the update to
 * version 1 is answered 200 and the engine reports version 1, then every generate answers 500 and
 * /health 503. Without the fault the same update leaves the engine serving. */
START_TEST(test_generate_fails_after_update)
{
    for (int faulty = 0; faulty < 2; faulty++) {
        eng e;
        if (faulty)
            start_with(&e, "{\"kind\":\"generate_fails_after_update\"}");
        else
            eng_start(&e, "{" BASE_MODEL "}");
        eng_expect(&e, "POST", "/skyrl/v1/generate", REQ, 200, "\"weight_version\":0");
        eng_expect(&e, "GET", "/health", NULL, 200, NULL);
        eng_expect(&e, "POST", "/update_weights", "{\"update_info\":{\"target_version\":1}}", 200,
                   NULL);
        ck_assert_int_eq(eng_state_int(&e, "weight_version"), 1);
        for (int i = 0; i < 2; i++)
            eng_expect(&e, "POST", "/skyrl/v1/generate", REQ, faulty ? 500 : 200,
                       faulty ? "EngineCore encountered an issue" : "\"weight_version\":1");
        eng_expect(&e, "POST", "/inference/v1/generate", REQ, faulty ? 500 : 200, NULL);
        eng_expect(&e, "GET", "/health", NULL, faulty ? 503 : 200, NULL);
        eng_stop(&e);
    }
}
END_TEST

/* restart_loses_group (NVIDIA-NeMo/RL#3944, radixark/miles#2244): after a sync to version 1 in
 * the vllm plane, the fault's generate finds the engine restarted: it reports version 0 with
 * version 0's bytes, and the next update is refused (sync.protocol_order: no transfer group) until
 * the trainer inits again, after which a sync to version 2 lands. Without the fault the engine
 * keeps version 1 and its group: the next update needs no init. */
START_TEST(test_restart_loses_group)
{
    const char *cfg = "{" BASE_MODEL "}";
    sr_engine_config c;
    sr_weights *w1 = eng_weights_of(cfg, 1, &c), *w2;
    sr_weights_spec ws = sr_engine_config_weights(&c);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_new(&w2, &ws, 2, &err), err);
    sr_buf b1 = SR_BUF_INIT, b2 = SR_BUF_INIT;
    eng_bucket_of(&b1, w1, 1);
    eng_bucket_of(&b2, w2, 2);
    for (int faulty = 0; faulty < 2; faulty++) {
        eng e;
        start_vllm(&e, faulty ? "{\"kind\":\"restart_loses_group\",\"nth\":[1]}" : "");
        eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
        eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
        hresp r;
        eng_post_bucket(&r, &e, &b1);
        ck_assert_int_eq(r.status, 200);
        hresp_free(&r);
        eng_expect(&e, "POST", "/finish_weight_update", "{\"weight_version\":1}", 200, NULL);
        eng_expect_holds(&e, &c, 1, 1);
        eng_expect(&e, "POST", "/skyrl/v1/generate", REQ, 200,
                   faulty ? "\"weight_version\":0" : "\"weight_version\":1");
        eng_expect_holds(&e, &c, faulty ? 0 : 1, faulty ? 0 : 1);
        if (faulty) {
            eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"uninit\"");
            eng_call(&e, "/start_weight_update", "{}", 409, "sync.protocol_order");
            eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 200, NULL);
        }
        eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
        eng_post_bucket(&r, &e, &b2);
        ck_assert_int_eq(r.status, 200);
        hresp_free(&r);
        eng_expect(&e, "POST", "/finish_weight_update", "{\"weight_version\":2}", 200, NULL);
        eng_expect_holds(&e, &c, 2, 2);
        eng_stop(&e);
    }
    sr_buf_release(&b1);
    sr_buf_release(&b2);
    sr_weights_free(w1);
    sr_weights_free(w2);
    sr_engine_config_release(&c);
}
END_TEST

/* delete_checkpoint_after_load (areal-project/AReaL#710): two sglang engines load one checkpoint
 * folder of version 1, one after the other. With the fault on the first, its load answers 200 and
 * the folder is gone, so the second engine's load is refused (the folder cannot be opened) and it
 * stays on version 0. Without the fault both load version 1 and the folder stays. */
START_TEST(test_delete_checkpoint_after_load)
{
    for (int faulty = 0; faulty < 2; faulty++) {
        char dir[] = "/tmp/sr-sync-bugs-XXXXXX", cfg[2][600], path[600], req[900];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        for (int i = 0; i < 2; i++)
            snprintf(cfg[i], sizeof(cfg[i]),
                     "{" BASE_MODEL
                     ",\"sync_dialect\":\"sglang\",\"server\":{\"sync_dirs\":[\"%s\"]},"
                     "\"faults\":[%s]}",
                     dir,
                     i == 0 && faulty ? "{\"kind\":\"delete_checkpoint_after_load\",\"endpoints\":["
                                        "\"update_weights_from_disk\"]}"
                                      : "");
        sr_engine_config c;
        sr_weights *w = eng_weights_of(cfg[0], 1, &c);
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof(path), w, dir, 1, 2, 1, &err), err);
        snprintf(req, sizeof(req), "{\"model_path\":\"%s\",\"weight_version\":\"1\"}", path);
        eng first, second;
        eng_start(&first, cfg[0]);
        eng_start(&second, cfg[1]);
        eng_expect(&first, "POST", "/update_weights_from_disk", req, 200, "\"success\":true");
        struct stat st;
        ck_assert_int_eq(stat(path, &st) == 0, !faulty);
        eng_expect(&second, "POST", "/update_weights_from_disk", req, faulty ? 400 : 200,
                   faulty ? "cannot open checkpoint folder" : "\"success\":true");
        eng_expect_holds(&first, &c, 1, 1);
        eng_expect_holds(&second, &c, faulty ? 0 : 1, faulty ? 0 : 1);
        eng_stop(&first);
        eng_stop(&second);
        if (!faulty) {
            char f[700];
            for (int k = 1; k <= 2; k++) {
                snprintf(f, sizeof(f), "%s/model-%05d-of-00002.safetensors", path, k);
                ck_assert_int_eq(unlink(f), 0);
            }
            ck_assert_int_eq(rmdir(path), 0);
        }
        ck_assert_int_eq(rmdir(dir), 0);
        sr_weights_free(w);
        sr_engine_config_release(&c);
    }
}
END_TEST

/* The tokens, logprobs and routes of a skyrl reply: everything before its "syncroll" section. */
static size_t reply_head(const hresp *r)
{
    const char *tail = strstr(r->body.data, ",\"syncroll\":");
    ck_assert_ptr_nonnull(tail);
    return (size_t)(tail - r->body.data);
}

/* Sleep level 2 (huggingface/trl#5312, #5313): after an update to version 1, a level-1 sleep keeps
 * version 1's weights (case 0); a level-2 sleep and a wake leave the engine serving its initial
 * weights under version 1 (case 1: the same reply as a fresh engine's at version 0), and so does
 * the update to version 1 when it is sent while the engine sleeps (case 2: written into
 * discarded memory); an update after waking
 * the weights (case 3, the fix) serves version 1's weights. */
START_TEST(test_sleep_level2_wake_without_reload)
{
    const char *cfg = "{" BASE_MODEL "}";
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, cfg, strlen(cfg), "t", 0, &err), err);
    eng e;
    hresp v[2], got;
    for (int k = 0; k < 2; k++) {
        eng_start(&e, cfg);
        if (k)
            eng_call(&e, "/update_weights", "{\"update_info\":{\"target_version\":1}}", 200, NULL);
        http_post(&v[k], &e, "/skyrl/v1/generate", REQ);
        ck_assert_int_eq(v[k].status, 200);
        eng_stop(&e);
    }
    size_t n = reply_head(&v[0]);
    ck_assert_int_ne(strncmp(v[0].body.data, v[1].body.data, n), 0);
    for (int level = 1; level <= 4; level++) {
        const char *update = "{\"update_info\":{\"target_version\":1}}";
        eng_start(&e, cfg);
        eng_call(&e, "/update_weights",
                 level == 3 ? "{\"update_info\":{\"target_version\":0}}" : update, 200, NULL);
        eng_call(&e, level == 1 ? "/sleep?level=1" : "/sleep?level=2", "", 200, NULL);
        if (level == 3)
            eng_call(&e, "/update_weights", update, 200, NULL);
        eng_call(&e, "/wake_up?tags=weights", "", 200, NULL);
        if (level == 4)
            eng_call(&e, "/update_weights", update, 200, NULL);
        eng_call(&e, "/wake_up", "", 200, NULL);
        http_post(&got, &e, "/skyrl/v1/generate", REQ);
        ck_assert_int_eq(got.status, 200);
        ck_assert_ptr_nonnull(strstr(got.body.data, "\"weight_version\":1"));
        int stale = level == 2 || level == 3;
        ck_assert_msg(strncmp(got.body.data, v[stale ? 0 : 1].body.data, n) == 0, "case %d: %s",
                      level - 1, got.body.data);
        eng_expect_holds(&e, &c, 1, stale ? 0 : 1);
        hresp_free(&got);
        eng_stop(&e);
    }
    hresp_free(&v[0]), hresp_free(&v[1]);
    sr_engine_config_release(&c);
}
END_TEST

static Suite *sync_bugs_suite(void)
{
    Suite *s = suite_create("engine_sync_bugs");
    TCase *tc = tcase_create("sync_bugs");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_publish_after_failed_chunk);
    tcase_add_test(tc, test_generate_fails_after_update);
    tcase_add_test(tc, test_restart_loses_group);
    tcase_add_test(tc, test_delete_checkpoint_after_load);
    tcase_add_test(tc, test_sleep_level2_wake_without_reload);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(sync_bugs_suite)
