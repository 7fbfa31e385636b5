/*
 * The sglang control plane of the mock engine over real HTTP (engines.sync_dialect "sglang"):
 * the happy path (init_weights_update_group, pause_generation, a bucket of every tensor on
 * /update_weights_from_distributed, update_weight_version, continue_generation, the weights'
 * fingerprints those of the version sent) and every out-of-order cell of the sglang table
 * (harness/engine/sync_table.c) a request can reach, each answered 400 with SGLang's
 * {"success": false, "message": ...} body and the named check, after each of which the engine
 * still answers a generate. Also update_weights_from_tensor (validated, then refused),
 * update_weights_from_disk from a real safetensors checkpoint, the memory occupation, and the
 * plane's routes in other planes (404).
 */
#include <unistd.h>

#include "engine_util.h"
#include "sync/checkpoint.h"

#define SCFG "{\"sync_dialect\":\"sglang\",\"seed\":3,\"model\":{\"layers\":2}}"
#define GEN  "{\"token_ids\":[5,6,7],\"sampling_params\":{\"max_tokens\":3}}"
#define INIT                                                                                       \
    "{\"master_address\":\"127.0.0.1\",\"master_port\":29500,\"rank_offset\":1,"                   \
    "\"world_size\":2,\"group_name\":\"syncroll\",\"backend\":\"nccl\"}"
#define DIST_JSON                                                                                  \
    "{\"names\":[\"x\"],\"dtypes\":[\"bfloat16\"],\"shapes\":[[2,2]],\"group_name\":\"syncroll\"}"

/* A refused call: status, SGLang's body {"success":false,"message":..} with the check, and the
 * engine serving afterwards. */
static void refused(const eng *e, const char *method, const char *path, const char *body,
                    long status, const char *check)
{
    char want[96];
    snprintf(want, sizeof(want), "\"check\":\"%s\"", check);
    hresp r;
    http_req(&r, NULL, e, method, path, body, NULL, 20000);
    ck_assert_msg(r.status == status, "%s %s: status %ld, want %ld: %s", method, path, r.status,
                  status, r.body.data);
    ck_assert_msg(strncmp(r.body.data, "{\"success\":false,\"message\":\"", 28) == 0 &&
                      strstr(r.body.data, want),
                  "%s %s: want {\"success\":false,\"message\":..,%s}: %s", method, path, want,
                  r.body.data);
    hresp_free(&r);
    eng_expect(e, "POST", "/skyrl/v1/generate", GEN, 200, NULL);
}

/* An accepted call: 200 and {"success":true,"message":..}. */
static void accepted(const eng *e, const char *path, const char *body)
{
    eng_expect(e, "POST", path, body, 200, "{\"success\":true,\"message\":\"");
}

static sr_weights *weights_at(sr_engine_config *c, int64_t version)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(c, SCFG, strlen(SCFG), "t", 0, &err), err);
    sr_weights_spec ws = sr_engine_config_weights(c);
    sr_weights *w;
    ck_assert_sr_ok(sr_weights_new(&w, &ws, version, &err), err);
    return w;
}

static void post_bucket(const eng *e, const sr_buf *b, long status, const char *want)
{
    hresp r;
    eng_post_bucket_to(&r, e, b, "/update_weights_from_distributed");
    ck_assert_msg(r.status == status && strstr(r.body.data, want), "bucket: %ld %s", r.status,
                  r.body.data);
    hresp_free(&r);
}

/* Cells of state uninit (no group). */
START_TEST(out_of_order_without_a_group)
{
    eng e;
    eng_start(&e, SCFG);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"dialect\":\"sglang\",\"state\":\"uninit\"");
    refused(&e, "POST", "/update_weights_from_distributed", DIST_JSON, 400, "sync.protocol_order");
    refused(&e, "POST", "/destroy_weights_update_group", "{}", 400, "sync.protocol_order");
    sr_engine_config c;
    sr_weights *w = weights_at(&c, 1);
    sr_buf b = SR_BUF_INIT;
    eng_bucket_of_plane(&b, w, 1, 1);
    post_bucket(&e, &b, 400, "no weights update group");
    eng_expect(&e, "GET", "/get_weight_version", NULL, 200, "{\"weight_version\":\"0\"}");
    /* update_weight_version needs no group; a lower version is refused. */
    eng_expect(&e, "POST", "/update_weight_version", "{\"new_version\":\"3\"}", 200,
               "{\"success\":true,\"message\":\"Weight version updated to 3\","
               "\"new_version\":\"3\"}");
    refused(&e, "POST", "/update_weight_version", "{\"new_version\":\"1\"}", 400,
            "sync.version_backwards");
    /* Bad bodies are named. */
    refused(&e, "POST", "/update_weight_version", "{\"new_version\":3}", 400, "engine.bad_request");
    refused(&e, "POST", "/init_weights_update_group", "{\"master_address\":\"h\"}", 400,
            "engine.bad_request");
    refused(&e, "POST", "/init_weights_update_group",
            "{\"master_address\":\"h\",\"master_port\":1,\"rank_offset\":2,\"world_size\":2,"
            "\"group_name\":\"g\"}",
            400, "engine.bad_request");
    refused(&e, "POST", "/pause_generation", "{\"mode\":\"keep\"}", 400, "engine.bad_request");
    refused(&e, "POST", "/update_weights_from_distributed",
            "{\"names\":[\"x\"],\"dtypes\":[],\"shapes\":[]}", 400, "engine.bad_request");
    refused(&e, "POST", "/update_weights_from_distributed",
            "{\"names\":[\"x\"],\"dtypes\":[\"f\"],\"shapes\":[[1099511627776,1099511627776]]}",
            400, "engine.bad_request");
    refused(&e, "POST", "/release_memory_occupation", "{\"tags\":[\"gpu\"]}", 400,
            "engine.bad_request");
    /* Validated, then refused by name. */
    refused(&e, "POST", "/update_weights_from_tensor",
            "{\"serialized_named_tensors\":[\"AAAA\"],\"flush_cache\":true}", 400,
            "sglang.unsupported");
    refused(&e, "POST", "/update_weights_from_tensor", "{\"serialized_named_tensors\":\"x\"}", 400,
            "engine.bad_request");
    /* No server.sync_dirs: no folder may be named. */
    refused(&e, "POST", "/update_weights_from_disk",
            "{\"model_path\":\"/ckpt/step-3\",\"load_format\":\"auto\","
            "\"abort_all_requests\":false,\"weight_version\":\"3\",\"flush_cache\":true}",
            403, "engine.forbidden_path");
    refused(&e, "POST", "/update_weights_from_disk", "{\"load_format\":\"auto\"}", 400,
            "engine.bad_request");
    /* A skyrl or vllm call has no cell here. */
    eng_expect(&e, "POST", "/start_weight_update", "{}", 404, NULL);
    sr_buf_release(&b);
    sr_weights_free(w);
    sr_engine_config_release(&c);
    eng_stop(&e);
}
END_TEST

START_TEST(happy_path_and_out_of_order_with_a_group)
{
    eng e;
    eng_start(&e, SCFG);
    accepted(&e, "/init_weights_update_group", INIT);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"idle\"");
    refused(&e, "POST", "/init_weights_update_group", INIT, 400, "sync.protocol_order");
    /* JSON alone names tensors an NCCL broadcast would carry: nothing can move. */
    refused(&e, "POST", "/update_weights_from_distributed", DIST_JSON, 400, "sync.no_transfer");
    /* The data moves while generation is paused, as a trainer does it. */
    eng_expect(&e, "POST", "/pause_generation", "{\"mode\":\"in_place\"}", 200,
               "{\"message\":\"Generation paused successfully.\",\"status\":\"ok\"}");
    sr_engine_config c;
    sr_weights *w = weights_at(&c, 2);
    sr_buf b = SR_BUF_INIT;
    eng_bucket_of_plane(&b, w, 2, 1);
    post_bucket(&e, &b, 200, "{\"success\":true,\"message\":\"");
    eng_expect(&e, "GET", "/get_weight_version", NULL, 200, "{\"weight_version\":\"2\"}");
    /* A refused bucket's message names the route it was posted to, not skyrl's method. */
    sr_buf cut = SR_BUF_INIT;
    ck_assert_int_eq(sr_buf_append(&cut, b.data, b.len - 1, NULL), 0);
    post_bucket(&e, &cut, 400,
                "\"message\":\"POST /update_weights_from_distributed: the tensors need ");
    sr_buf_release(&cut);
    accepted(&e, "/update_weight_version", "{\"new_version\":\"2\",\"abort_all_requests\":false}");
    eng_expect(&e, "POST", "/continue_generation", "", 200,
               "{\"message\":\"Generation continued successfully.\",\"status\":\"ok\"}");
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, NULL);
    /* The engine holds what was sent: version 2's fingerprints. */
    uint64_t g, l[2];
    expected_fps(&c, 2, &g, l);
    char want[160];
    snprintf(want, sizeof(want), "\"fingerprints\":{\"global\":\"%016llx\"", (unsigned long long)g);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    /* A bucket naming a version below the held one is refused; the engine stays on 2. */
    sr_weights *w1 = weights_at(&c, 1);
    sr_buf b1 = SR_BUF_INIT;
    eng_bucket_of_plane(&b1, w1, 1, 1);
    post_bucket(&e, &b1, 400, "\"check\":\"sync.version_backwards\"");
    refused(&e, "POST", "/update_weight_version", "{\"new_version\":\"1\"}", 400,
            "sync.version_backwards");
    eng_expect(&e, "POST", "/weight_checker", "{\"action\":\"checksum\"}", 404, NULL);
    eng_expect(&e, "GET", "/get_weight_version", NULL, 200, "{\"weight_version\":\"2\"}");
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, NULL);
    /* Memory occupation: released, generate waits; resumed, it runs. */
    eng_expect(&e, "POST", "/release_memory_occupation", "{\"tags\":[\"weights\"]}", 200, "null");
    eng_expect(&e, "GET", "/is_sleeping", NULL, 200, "true");
    eng_expect(&e, "POST", "/resume_memory_occupation", "{}", 200, "null");
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, NULL);
    /* Destroy ends the group: updates are refused again, a new group may start. */
    accepted(&e, "/destroy_weights_update_group", "{\"group_name\":\"syncroll\"}");
    post_bucket(&e, &b, 400, "\"check\":\"sync.protocol_order\"");
    accepted(&e, "/init_weights_update_group", INIT);
    eng_expect(&e, "POST", "/pause_generation", "", 200, "\"status\":\"ok\"");
    eng_expect(&e, "POST", "/continue_generation", "{}", 200, "\"status\":\"ok\"");
    sr_buf_release(&b);
    sr_buf_release(&b1);
    sr_weights_free(w);
    sr_weights_free(w1);
    sr_engine_config_release(&c);
    eng_stop(&e);
    /* SGLang's data plane picks its control plane: /generate answers around the weight routes. */
    eng_start(&e, "{\"dialect\":\"sglang\",\"model\":{\"layers\":2}}");
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"dialect\":\"sglang\"");
#define SGEN "{\"input_ids\":[5,6,7],\"sampling_params\":{\"max_new_tokens\":3}}"
    eng_expect(&e, "POST", "/generate", SGEN, 200, "\"meta_info\"");
    accepted(&e, "/init_weights_update_group", INIT);
    eng_expect(&e, "POST", "/pause_generation", "{\"mode\":\"abort\"}", 200, "\"status\":\"ok\"");
    eng_expect(&e, "POST", "/update_weights_from_distributed", DIST_JSON, 400,
               "\"check\":\"sync.no_transfer\"");
    eng_expect(&e, "POST", "/continue_generation", "", 200, "\"status\":\"ok\"");
    eng_expect(&e, "POST", "/generate", SGEN, 200, "\"meta_info\"");
    eng_stop(&e);
    /* The other planes do not have these routes. */
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    eng_expect(&e, "POST", "/init_weights_update_group", INIT, 404, "sglang");
    eng_expect(&e, "GET", "/get_weight_version", NULL, 404, NULL);
    eng_stop(&e);
}
END_TEST

/* update_weights_from_disk reads a safetensors checkpoint folder inside server.sync_dirs
 * (harness/engine/disk.c) and reports its version; the set_version cells guard the version. */
START_TEST(update_from_disk)
{
    char dir[] = "/tmp/sr-sgl-disk-XXXXXX", cfg[512], path[600], req[900];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cfg, sizeof(cfg),
             "{\"sync_dialect\":\"sglang\",\"seed\":3,\"model\":{\"layers\":2},"
             "\"server\":{\"sync_dirs\":[\"%s\"]}}",
             dir);
    sr_engine_config c;
    sr_weights *w = weights_at(&c, 3);
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_sync_write_checkpoint(path, sizeof(path), w, dir, 3, 1, 1, &err), err);
    eng e;
    eng_start(&e, cfg);
    snprintf(req, sizeof(req), "{\"model_path\":\"%s\",\"load_format\":\"gguf\"}", path);
    refused(&e, "POST", "/update_weights_from_disk", req, 400, "sglang.unsupported");
    refused(&e, "POST", "/update_weights_from_disk", "{\"model_path\":\"/etc\"}", 403,
            "engine.forbidden_path");
    snprintf(req, sizeof(req),
             "{\"model_path\":\"%s\",\"load_format\":\"auto\",\"weight_version\":\"3\"}", path);
    eng_expect(&e, "POST", "/update_weights_from_disk", req, 200,
               "{\"success\":true,\"message\":\"Succeeded to update model weights. Weight "
               "version is 3.\",\"num_paused_requests\":0}");
    eng_expect(&e, "GET", "/get_weight_version", NULL, 200, "{\"weight_version\":\"3\"}");
    uint64_t g, l[2];
    expected_fps(&c, 3, &g, l);
    char want[96];
    snprintf(want, sizeof(want), "\"fingerprints\":{\"global\":\"%016llx\"", (unsigned long long)g);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, NULL);
    snprintf(req, sizeof(req), "{\"model_path\":\"%s\",\"weight_version\":\"1\"}", path);
    refused(&e, "POST", "/update_weights_from_disk", req, 400, "sync.version_backwards");
    eng_stop(&e);
    sr_weights_free(w);
    sr_engine_config_release(&c);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *sglang_suite(void)
{
    Suite *s = suite_create("engine_sglang");
    TCase *tc = tcase_create("sglang");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, out_of_order_without_a_group);
    tcase_add_test(tc, happy_path_and_out_of_order_with_a_group);
    tcase_add_test(tc, update_from_disk);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(sglang_suite)
