/* The mock engine's control plane over real HTTP: pause modes, sleep, weight-sync order, state. */
#include "engine_util.h"

/* 40 tokens at 25 ms each: long enough to be caught in flight by a pause. */
#define SLOW_CFG                                                                                   \
    "{\"id\":\"c0\",\"seed\":5,\"model\":{\"vocab\":2000,\"layers\":2,\"experts\":32,\"topk\":2,"  \
    "\"eos_id\":-1},\"timing\":{\"prefill_ms\":0,\"decode_ms_per_token\":25}}"
#define SLOW_REQ                                                                                   \
    "{\"token_ids\":[9,8,7,6],\"sampling_params\":{\"max_tokens\":40,\"logprobs\":0,"              \
    "\"routed_experts_prompt_start\":1}}"

static cJSON *choice_of(const hresp *r)
{
    cJSON *d = cJSON_Parse(r->body.data);
    ck_assert_msg(d != NULL, "not JSON: %s", r->body.data);
    return d;
}

static const cJSON *choice0(const cJSON *d)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(d, "choices"), 0);
}

/* Starts the slow engine, sends SLOW_REQ in the background and, once it is in flight, pauses the
 * engine in `mode` (keep, abort or wait; NULL: no mode, the default abort). */
static void pause_in_flight(eng *e, bg_req *b, const char *mode)
{
    eng_start(e, SLOW_CFG);
    bg_start(b, e, "/skyrl/v1/generate", SLOW_REQ);
    eng_wait_state(e, "inflight", 1);
    char path[32];
    snprintf(path, sizeof(path), mode ? "/pause?mode=%s" : "/pause", mode);
    hresp r;
    http_post(&r, e, path, NULL);
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
}

/* The version spans of a straddling response: [1, cut) at version 0, [cut, P+G-1) at version 1.
 * Returns k, the number of tokens generated before the update (cut = P + k - 1). */
static int straddle_tokens_before(const hresp *r)
{
    cJSON *d = choice_of(r);
    const cJSON *ch = choice0(d);
    const cJSON *rows = cJSON_GetObjectItem(cJSON_GetObjectItem(ch, "syncroll"), "rows");
    ck_assert_int_eq(cJSON_GetArraySize(rows), 2);
    const cJSON *s0 = cJSON_GetArrayItem(rows, 0), *s1 = cJSON_GetArrayItem(rows, 1);
    int cut = cJSON_GetArrayItem(s0, 1)->valueint; /* = P + k - 1 */
    ck_assert_int_eq(cJSON_GetArrayItem(s0, 0)->valueint, 1);
    ck_assert_int_eq(cJSON_GetArrayItem(s0, 2)->valueint, 0);
    ck_assert_int_eq(cJSON_GetArrayItem(s1, 0)->valueint, cut);
    ck_assert_int_eq(cJSON_GetArrayItem(s1, 1)->valueint, 4 + 40 - 1);
    ck_assert_int_eq(cJSON_GetArrayItem(s1, 2)->valueint, 1);
    cJSON_Delete(d);
    int k = cut - 3;
    ck_assert(k >= 1 && k < 40);
    return k;
}

/* The oracle's SLOW_REQ answer when the weights move to version 1 after k tokens: k tokens with
 * version 0, the rest continued with version 1; routes from row 1, 4 bytes a row. */
static void straddle_expected(int k, int32_t tok[40], uint8_t routes[64 * 4])
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, SLOW_CFG, strlen(SLOW_CFG), "t", 0, &err), err);
    sr_oracle_model m = sr_engine_config_model(&c);
    sr_oracle *o;
    ck_assert_sr_ok(sr_oracle_new(&o, &m, &err), err);
    uint64_t g0, l0[2], g1, l1[2];
    expected_fps(&c, 0, &g0, l0);
    expected_fps(&c, 1, &g1, l1);
    int32_t prompt[44] = {9, 8, 7, 6};
    double lp[40];
    sr_oracle_request q = SR_ORACLE_REQUEST_INIT;
    q.prompt = prompt;
    q.prompt_len = 4;
    q.max_tokens = k;
    q.route_start = 1;
    q.route_dtype = SR_DTYPE_UINT8;
    sr_oracle_output out = SR_ORACLE_OUTPUT_INIT;
    out.tokens = tok;
    out.logprobs = lp;
    out.routes = routes;
    out.routes_cap = 64 * 4;
    ck_assert_sr_ok(sr_oracle_generate(&out, o, g0, l0, &q, &err), err);
    memcpy(prompt + 4, tok, (size_t)k * sizeof(int32_t));
    q.prompt_len = 4 + (size_t)k;
    q.max_tokens = 40 - k;
    q.prior_generated = (size_t)k;
    q.route_start = 4 + k - 1;
    out.tokens = tok + k;
    out.logprobs = lp + k;
    out.routes = routes + (size_t)(4 + k - 1 - 1) * 4;
    out.routes_cap = 64 * 4 - (size_t)(4 + k - 2) * 4;
    ck_assert_sr_ok(sr_oracle_generate(&out, o, g1, l1, &q, &err), err);
    sr_oracle_free(o);
    sr_engine_config_release(&c);
}

START_TEST(test_keep_pause_straddles_a_weight_update)
{
    eng e;
    bg_req b;
    hresp r;
    pause_in_flight(&e, &b, "keep");
    ck_assert_int_eq(eng_state_int(&e, "held"), 1);
    http_post(&r, &e, "/update_weights", "{\"update_info\":{\"target_version\":1}}");
    ck_assert_msg(r.status == 200, "%s", r.body.data);
    ck_assert_str_eq(r.body.data, "{\"version\":1}");
    hresp_free(&r);
    http_post(&r, &e, "/resume", NULL);
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    bg_join(&b);
    ck_assert_int_eq(b.r.status, 200);
    int32_t tok[40];
    uint8_t routes[64 * 4];
    straddle_expected(straddle_tokens_before(&b.r), tok, routes);
    sr_splicer *sp;
    sr_fields *reg;
    const sr_splice_result *res;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(splice_body(&sp, &reg, &b.r.body, &res, &err), err);
    const sr_splice_entry *ids = splice_find(res, "token_ids");
    const sr_splice_entry *re = splice_find(res, "routed_experts");
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(sr_ndarray_get_i64(&ids->array, (uint64_t)i), tok[i]);
    ck_assert_int_eq(re->array.shape[0], 4 + 40 - 1 - 1);
    ck_assert_mem_eq(re->array.data, routes, (size_t)(4 + 40 - 2) * 4);
    sr_splicer_free(sp);
    sr_fields_free(reg);
    hresp_free(&b.r);
    eng_stop(&e);
}
END_TEST

/* Loop index 0: mode=abort; 1: no mode, which must mean abort (the reference's default). */
START_TEST(test_abort_pause_cuts_in_flight)
{
    eng e;
    bg_req b;
    hresp r;
    pause_in_flight(&e, &b, _i ? NULL : "abort");
    bg_join(&b);
    ck_assert_int_eq(b.r.status, 200);
    cJSON *d = choice_of(&b.r);
    const cJSON *ch = choice0(d);
    ck_assert_str_eq(cJSON_GetObjectItem(ch, "finish_reason")->valuestring, "abort");
    int G = cJSON_GetArraySize(cJSON_GetObjectItem(ch, "token_ids"));
    ck_assert(G >= 1 && G < 40);
    const cJSON *shape = cJSON_GetObjectItem(cJSON_GetObjectItem(ch, "routed_experts"), "shape");
    ck_assert_int_eq(cJSON_GetArrayItem(shape, 0)->valueint, 4 + G - 1 - 1);
    cJSON_Delete(d);
    hresp_free(&b.r);
    /* While paused, a new generate is held until resume. */
    bg_start(&b, &e, "/skyrl/v1/generate",
             "{\"token_ids\":[1],\"sampling_params\":{\"max_tokens\":2}}");
    eng_wait_state(&e, "held", 1);
    http_post(&r, &e, "/resume", NULL);
    hresp_free(&r);
    bg_join(&b);
    ck_assert_int_eq(b.r.status, 200);
    ck_assert_ptr_nonnull(strstr(b.r.body.data, "\"finish_reason\":\"length\""));
    hresp_free(&b.r);
    eng_stop(&e);
}
END_TEST

START_TEST(test_wait_pause_drains_in_flight)
{
    eng e;
    bg_req b;
    hresp r;
    pause_in_flight(&e, &b, "wait");
    /* The pause returned only once nothing was in flight any more. */
    ck_assert_int_eq(eng_state_int(&e, "inflight"), 0);
    bg_join(&b);
    ck_assert_int_eq(b.r.status, 200);
    ck_assert_ptr_nonnull(strstr(b.r.body.data, "\"finish_reason\":\"length\""));
    hresp_free(&b.r);
    http_post(&r, &e, "/pause?mode=bogus", NULL);
    ck_assert_int_eq(r.status, 400);
    hresp_free(&r);
    eng_stop(&e);
}
END_TEST

START_TEST(test_control_endpoints)
{
    eng e;
    eng_start(&e, "{\"id\":\"k\",\"server\":{\"world_size\":4,\"sync_dirs\":[\"/tmp\"]}}");
    eng_expect(&e, "GET", "/health", NULL, 200, NULL);
    eng_expect(&e, "GET", "/get_world_size", NULL, 200, "{\"world_size\":4}");
    eng_expect(&e, "POST", "/sleep?level=2&tags=weights", "", 200, NULL);
    ck_assert_int_eq(eng_state_int(&e, "sleep_level"), 2);
    eng_expect(&e, "POST", "/wake_up", "", 200, NULL);
    eng_expect(&e, "POST", "/skyrl/v1/generate", "{\"token_ids\":[1]}", 200, NULL);
    eng_expect(&e, "POST", "/reset_prefix_cache", "{\"reset_running_requests\":true}", 200, NULL);
    eng_expect(&e, "POST", "/reset_prefix_cache", "{\"reset_running_requests\":1}", 400, NULL);
    eng_expect(&e, "POST", "/reset_prefix_cache", "not json", 400, NULL);
    /* One by the sleep (level >= 1 clears the prefix cache, as vLLM's sleep does), one here. */
    ck_assert_int_eq(eng_state_int(&e, "prefix_cache_resets"), 2);
    eng_expect(&e, "POST", "/finish_session?session_id=nobody", "", 200, NULL);
    eng_expect(&e, "POST", "/init_weight_transfer_engine",
               "{\"init_info\":{\"master_address\":\"127.0.0.1\",\"world_size\":2}}", 200, NULL);
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":3}", 400, NULL);
    /* A real fetch: a sync_dir that does not exist is a named error, and the engine serves on. */
    eng_expect(&e, "POST", "/fetch_weights",
               "{\"target_version\":1,\"sync_dir\":\"/tmp/syncroll-nonexistent-sync-dir\"}", 500,
               "\"check\":\"delta.io\"");
    eng_expect(&e, "POST", "/fetch_weights", "{}", 400, NULL);
    eng_expect(&e, "POST", "/update_weights", "{\"update_info\":{}}", 400, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"init_info\":{\"master_address\"");
    eng_stop(&e);
}
END_TEST

/* Waits up to 10 s for `held` requests held by the engine, or for b's request to end first
 * (returns 0 then: the engine answered instead of holding it). */
static int wait_held_or_answered(const eng *e, bg_req *b, long long held)
{
    for (int i = 0; i < 10000; i++) {
        if (eng_state_int(e, "held") == held)
            return 1;
        if (pthread_tryjoin_np(b->t, NULL) == 0)
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("the engine neither held nor answered the request");
    return 0;
}

static const char *const SHORT_REQ = "{\"token_ids\":[1,2],\"sampling_params\":{\"max_tokens\":3}}";

/* Issue #20, SkyRL defect 1: SkyRL's fully-async offload sync pauses in keep mode, then sleeps the
 * allocator with collective_rpc skyrl_sleep_for_weight_sync; a generate arriving in that window
 * must wait and run after resume (in vLLM only the allocator sleeps), not get a 503. */
START_TEST(test_generate_waits_through_skyrl_offload_sync)
{
    eng e;
    bg_req b;
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    eng_expect(&e, "POST", "/pause?mode=keep&clear_cache=false", "", 200, NULL);
    eng_expect(&e, "POST", "/collective_rpc",
               "{\"method\":\"skyrl_sleep_for_weight_sync\",\"kwargs\":{\"offload_kv\":true}}", 200,
               NULL);
    bg_start(&b, &e, "/skyrl/v1/generate", SHORT_REQ);
    int held = wait_held_or_answered(&e, &b, 1);
    ck_assert_msg(held, "a generate during the offload sync was answered %ld: %s", b.r.status,
                  b.r.body.data);
    eng_expect(&e, "POST", "/collective_rpc",
               "{\"method\":\"skyrl_wake_for_weight_sync\",\"kwargs\":{\"tags\":[\"weights\"]}}",
               200, NULL);
    eng_expect(&e, "POST", "/collective_rpc",
               "{\"method\":\"skyrl_wake_for_weight_sync\",\"kwargs\":{\"tags\":[\"kv_cache\"]}}",
               200, NULL);
    /* Awake but still paused: the request still waits for resume. */
    ck_assert_int_eq(eng_state_int(&e, "held"), 1);
    eng_expect(&e, "POST", "/resume", "", 200, NULL);
    bg_join(&b);
    ck_assert_msg(b.r.status == 200, "status %ld: %s", b.r.status, b.r.body.data);
    ck_assert_ptr_nonnull(strstr(b.r.body.data, "\"finish_reason\":\"length\""));
    hresp_free(&b.r);
    eng_stop(&e);
}
END_TEST

/* Issue #20, SkyRL defect 4: weights and KV cache sleep and wake separately. After sleep?level=1
 * (both asleep) and wake_up?tags=weights the KV cache still sleeps, so a generate waits (as
 * vLLM's paused scheduler queues it: vllm/v1/engine/core.py sleep/wake_up) until
 * wake_up?tags=kv_cache; /is_sleeping says true until every tag is awake. */
START_TEST(test_sleep_tags_are_tracked_separately)
{
    eng e;
    bg_req b;
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    eng_expect(&e, "POST", "/sleep?level=1", "", 200, NULL);
    eng_expect(&e, "GET", "/is_sleeping", NULL, 200, "{\"is_sleeping\":true}");
    eng_expect(&e, "POST", "/wake_up?tags=weights", "", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"sleeping_tags\":[\"kv_cache\"]");
    eng_expect(&e, "GET", "/is_sleeping", NULL, 200, "{\"is_sleeping\":true}");
    bg_start(&b, &e, "/skyrl/v1/generate", SHORT_REQ);
    int held = wait_held_or_answered(&e, &b, 1);
    ck_assert_msg(held, "a generate with the KV cache asleep was answered %ld: %s", b.r.status,
                  b.r.body.data);
    eng_expect(&e, "POST", "/wake_up?tags=kv_cache", "", 200, NULL);
    bg_join(&b);
    ck_assert_msg(b.r.status == 200, "status %ld: %s", b.r.status, b.r.body.data);
    hresp_free(&b.r);
    eng_expect(&e, "GET", "/is_sleeping", NULL, 200, "{\"is_sleeping\":false}");
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"sleeping_tags\":[]");
    /* Tags name what sleeps: sleeping only the KV cache leaves the weights awake. */
    eng_expect(&e, "POST", "/sleep?tags=kv_cache", "", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"sleeping_tags\":[\"kv_cache\"]");
    eng_expect(&e, "POST", "/wake_up", "", 200, NULL);
    eng_expect(&e, "POST", "/skyrl/v1/generate", SHORT_REQ, 200, NULL);
    eng_stop(&e);
}
END_TEST

START_TEST(test_weight_sync_protocol_order)
{
    eng e;
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    const char *start = "{\"method\":\"skyrl_start_weight_update\",\"kwargs\":"
                        "{\"is_checkpoint_format\":true}}";
    const char *upd = "{\"method\":\"update_weights_nccl\",\"kwargs\":{\"update_info\":"
                      "{\"names\":[],\"dtype_names\":[],\"shapes\":[],\"packed\":true}}}";
    const char *fin = "{\"method\":\"skyrl_finish_weight_update\"}";
    eng_expect(&e, "POST", "/collective_rpc", upd, 500, "\"check\":\"sync.protocol_order\"");
    eng_expect(&e, "POST", "/collective_rpc", fin, 500, "\"check\":\"sync.protocol_order\"");
    eng_expect(&e, "POST", "/collective_rpc", start, 200, "{\"results\":[null]}");
    eng_expect(&e, "POST", "/collective_rpc", start, 500,
               "called while a weight update is already active");
    /* The engine keeps serving through a protocol error. */
    eng_expect(&e, "POST", "/skyrl/v1/generate", "{\"token_ids\":[1]}", 200, NULL);
    eng_expect(&e, "POST", "/collective_rpc", fin, 200, NULL);
    eng_expect(&e, "POST", "/collective_rpc", "{\"method\":\"frob\"}", 400, NULL);
    eng_expect(&e, "POST", "/collective_rpc", "{\"kwargs\":{}}", 400, NULL);
    hresp r;
    http_get(&r, &e, "/syncroll/v1/state");
    ck_assert_ptr_nonnull(strstr(
        r.body.data, "\"sync\":{\"active\":false,\"starts\":1,"
                     "\"finishes\":1,\"applies\":0,\"protocol_errors\":3,\"dialect\":\"skyrl\","
                     "\"state\":\"idle\",\"buckets_in_flight\":0}"));
    hresp_free(&r);
    /* A synthetic apply moves the version and the fingerprints to the expected ones. */
    eng_expect(&e, "POST", "/update_weights", "{\"update_info\":{\"target_version\":3}}", 200,
               "{\"version\":3}");
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    const char *t = "{\"model\":{\"layers\":2}}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, t, strlen(t), "t", 0, &err), err);
    uint64_t g, l[2];
    expected_fps(&c, 3, &g, l);
    char want[128];
    snprintf(want, sizeof(want), "\"fingerprints\":{\"global\":\"%016llx\",\"layers\":[\"%016llx\"",
             (unsigned long long)g, (unsigned long long)l[0]);
    http_get(&r, &e, "/syncroll/v1/state");
    ck_assert_msg(strstr(r.body.data, want), "%s not in %s", want, r.body.data);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"weight_version\":3"));
    hresp_free(&r);
    sr_engine_config_release(&c);
    eng_stop(&e);
}
END_TEST

/* Issue #20, SkyRL defect 3: update_weights_nccl or update_weights_ipc as JSON only (no bucket
 * bytes follow: the mock has no NCCL group and cannot open IPC handles) moves nothing, so it must
 * fail loudly, sync.no_transfer, and spoil the update: finish answers the same failure and the
 * engine stays on its version and keeps serving. Before: start, update and finish all answered
 * 200 and nothing changed. */
START_TEST(test_json_only_update_moves_no_bytes_and_fails)
{
    eng e;
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    const char *start = "{\"method\":\"skyrl_start_weight_update\",\"kwargs\":"
                        "{\"is_checkpoint_format\":true}}";
    const char *fin = "{\"method\":\"skyrl_finish_weight_update\"}";
    const char *upd[2] = {
        "{\"method\":\"update_weights_nccl\",\"kwargs\":{\"update_info\":{\"names\":[\"layers.0."
        "experts.0\"],\"dtype_names\":[\"bfloat16\"],\"shapes\":[[4,4]],\"packed\":true}}}",
        "{\"method\":\"update_weights_ipc\",\"kwargs\":{\"update_info\":{\"names\":[],"
        "\"dtype_names\":[],\"shapes\":[],\"sizes\":[],\"ipc_handles_pickled\":\"gAN9cQAu\"}}}"};
    for (int k = 0; k < 2; k++) {
        eng_expect(&e, "POST", "/collective_rpc", start, 200, NULL);
        eng_expect(&e, "POST", "/collective_rpc", upd[k], 500, "\"check\":\"sync.no_transfer\"");
        eng_expect(&e, "POST", "/collective_rpc", fin, 500, "\"check\":\"sync.no_transfer\"");
        ck_assert_int_eq(eng_state_int(&e, "weight_version"), 0);
        eng_expect(&e, "POST", "/skyrl/v1/generate", "{\"token_ids\":[1]}", 200, NULL);
    }
    /* The update ended with the failed finish: a new one starts. */
    eng_expect(&e, "POST", "/collective_rpc", start, 200, NULL);
    eng_expect(&e, "POST", "/collective_rpc", fin, 200, NULL);
    eng_stop(&e);
}
END_TEST

/* The skyrl table's version cell over HTTP: a finish naming (kwargs.syncroll.target_version) a
 * version below the one held is sync.version_backwards, ends the update and leaves the version;
 * the engine serves on and the next start is accepted. */
START_TEST(test_skyrl_finish_backwards_is_refused)
{
    eng e;
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    eng_expect(&e, "POST", "/update_weights", "{\"update_info\":{\"target_version\":3}}", 200,
               "{\"version\":3}");
    const char *start = "{\"method\":\"skyrl_start_weight_update\"}";
    eng_expect(&e, "POST", "/collective_rpc", start, 200, NULL);
    eng_expect(&e, "POST", "/collective_rpc",
               "{\"method\":\"skyrl_finish_weight_update\",\"kwargs\":{\"syncroll\":"
               "{\"target_version\":2}}}",
               500, "\"check\":\"sync.version_backwards\"");
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 3);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"idle\"");
    eng_expect(&e, "POST", "/skyrl/v1/generate", "{\"token_ids\":[1]}", 200, NULL);
    eng_expect(&e, "POST", "/collective_rpc", start, 200, NULL);
    eng_stop(&e);
}
END_TEST

/* The sleep level is an integer in [0, 2]: each level inside is taken (and woken), -1 and 3
 * just outside are 400 with the range named, and so is a non-integer. */
START_TEST(test_sleep_level_range_is_exact)
{
    eng e;
    eng_start(&e, "{\"id\":\"k\"}");
    for (int level = -2; level <= 4; level++) {
        char path[64];
        snprintf(path, sizeof path, "/sleep?level=%d", level);
        if (level >= 0 && level <= 2) {
            eng_expect(&e, "POST", path, "", 200, NULL);
            ck_assert_int_eq(eng_state_int(&e, "sleep_level"), level);
            eng_expect(&e, "POST", "/wake_up", "", 200, NULL);
        } else {
            eng_expect(&e, "POST", path, "", 400, "an integer in [0, 2]");
            eng_expect(&e, "GET", "/is_sleeping", NULL, 200, "{\"is_sleeping\":false}");
        }
    }
    eng_expect(&e, "POST", "/sleep?level=1.5", "", 400, "an integer in [0, 2]");
    eng_expect(&e, "POST", "/sleep?level=", "", 400, "an integer in [0, 2]");
    eng_stop(&e);
}
END_TEST

/* Waits for b's request to be held, checks it still is after `partial` (a wake that leaves
 * something asleep or paused), then that `last` releases it into a 200. */
static void held_until(eng *e, bg_req *b, const char *partial, const char *last)
{
    bg_start(b, e, "/skyrl/v1/generate", SHORT_REQ);
    int held = wait_held_or_answered(e, b, 1);
    ck_assert_msg(held, "answered %ld while asleep or paused: %s", b->r.status, b->r.body.data);
    if (partial) {
        eng_expect(e, "POST", partial, "", 200, NULL);
        ck_assert_int_eq(eng_state_int(e, "held"), 1);
        eng_expect(e, "GET", "/is_sleeping", NULL, 200, "{\"is_sleeping\":true}");
    }
    eng_expect(e, "POST", last, "", 200, NULL);
    bg_join(b);
    ck_assert_msg(b->r.status == 200, "status %ld: %s", b->r.status, b->r.body.data);
    hresp_free(&b->r);
    eng_expect(e, "GET", "/is_sleeping", NULL, 200, "{\"is_sleeping\":false}");
}

/* The partial wake in the other order: with the KV cache awake and the weights asleep a request
 * is still held (across the wake, which resumes the scheduler) until the weights wake. Level 0
 * sleeps no tag but pauses, so a request is held until wake_up; tags given with level 0 win
 * over it, and both tags in one wake_up release the request at once. */
START_TEST(test_request_held_across_a_partial_wake)
{
    eng e;
    bg_req b;
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    eng_expect(&e, "POST", "/sleep?level=2", "", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"sleeping_tags\":[\"weights\",\"kv_cache\"]");
    held_until(&e, &b, "/wake_up?tags=kv_cache", "/wake_up?tags=weights");
    eng_expect(&e, "POST", "/sleep?level=0", "", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"sleeping_tags\":[]");
    eng_expect(&e, "GET", "/is_sleeping", NULL, 200, "{\"is_sleeping\":true}");
    held_until(&e, &b, NULL, "/wake_up");
    eng_expect(&e, "POST", "/sleep?level=0&tags=weights", "", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"sleeping_tags\":[\"weights\"]");
    held_until(&e, &b, "/wake_up?tags=kv_cache", "/wake_up?tags=kv_cache&tags=weights");
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"sleeping_tags\":[]");
    eng_stop(&e);
}
END_TEST

/* The weight version parameters of the control plane at their limits: update_info's
 * target_version (and its alias version) and update_weights_nccl's syncroll_version take 0 ..
 * SR_WEIGHTS_MAX_VERSION (100000) and refuse -1, 100001 and 1.5 with 400 naming the field;
 * a finish naming 100001 is refused the same way, and one naming 100000 is judged (the version
 * held is 100000: no update was streamed, so nothing is committed). */
START_TEST(test_version_parameters_at_their_limits)
{
    eng e;
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    static const char *const bad[] = {"-1", "100001", "1.5", "\"3\""};
    char body[200], want[32];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(body, sizeof body, "{\"update_info\":{\"target_version\":%s}}", bad[i]);
        eng_expect(&e, "POST", "/update_weights", body, 400, "update_info.target_version");
        snprintf(body, sizeof body, "{\"update_info\":{\"version\":%s}}", bad[i]);
        eng_expect(&e, "POST", "/update_weights", body, 400, "update_info.target_version");
        snprintf(body, sizeof body,
                 "{\"method\":\"update_weights_nccl\",\"kwargs\":{\"update_info\":"
                 "{\"syncroll_version\":%s}}}",
                 bad[i]);
        eng_expect(&e, "POST", "/collective_rpc", body, 400, "syncroll_version must be");
        snprintf(body, sizeof body,
                 "{\"method\":\"skyrl_finish_weight_update\",\"kwargs\":{\"syncroll\":"
                 "{\"target_version\":%s}}}",
                 bad[i]);
        eng_expect(&e, "POST", "/collective_rpc", body, 400, "must be a weight version");
    }
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 0);
    static const long long good[] = {0, 1, 99999, 100000};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(body, sizeof body, "{\"update_info\":{\"%s\":%lld}}",
                 i % 2 ? "version" : "target_version", good[i]);
        snprintf(want, sizeof want, "{\"version\":%lld}", good[i]);
        eng_expect(&e, "POST", "/update_weights", body, 200, want);
    }
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 100000);
    eng_expect(&e, "POST", "/collective_rpc", "{\"method\":\"skyrl_start_weight_update\"}", 200,
               NULL);
    eng_expect(&e, "POST", "/collective_rpc",
               "{\"method\":\"skyrl_finish_weight_update\",\"kwargs\":{\"syncroll\":"
               "{\"target_version\":100000}}}",
               200, NULL);
    ck_assert_int_eq(eng_state_int(&e, "weight_version"), 100000);
    eng_stop(&e);
}
END_TEST

/* Enum-valued body fields refuse their neighbours by name: skyrl_wake_for_weight_sync's tags (a
 * tag one letter short or long, a string for the array, a number in it; null wakes every tag,
 * [] none), skyrl_sleep_for_weight_sync's offload_kv (a string for the boolean) and
 * /weight_checker's action (a plural, a capital, a trailing space, empty). */
START_TEST(test_enum_body_fields_refuse_their_neighbours)
{
    eng e;
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    static const char *const bad_tags[] = {"[\"weight\"]", "[\"kv_caches\"]",
                                           "[\"kv_cache\",\"x\"]", "\"weights\"", "[1]"};
    char body[200];
    eng_expect(&e, "POST", "/sleep?level=1", "", 200, NULL);
    for (size_t i = 0; i < sizeof bad_tags / sizeof bad_tags[0]; i++) {
        snprintf(body, sizeof body,
                 "{\"method\":\"skyrl_wake_for_weight_sync\",\"kwargs\":{\"tags\":%s}}",
                 bad_tags[i]);
        eng_expect(&e, "POST", "/collective_rpc", body, 400, "kwargs.tags must be an array");
    }
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"sleeping_tags\":[\"weights\",\"kv_cache\"]");
    eng_expect(&e, "POST", "/collective_rpc",
               "{\"method\":\"skyrl_wake_for_weight_sync\",\"kwargs\":{\"tags\":[]}}", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"sleeping_tags\":[\"weights\",\"kv_cache\"]");
    eng_expect(&e, "POST", "/collective_rpc",
               "{\"method\":\"skyrl_wake_for_weight_sync\",\"kwargs\":{\"tags\":null}}", 200, NULL);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"sleeping_tags\":[]");
    eng_expect(&e, "POST", "/collective_rpc",
               "{\"method\":\"skyrl_sleep_for_weight_sync\",\"kwargs\":{\"offload_kv\":\"true\"}}",
               400, "offload_kv must be a boolean");
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"sleeping_tags\":[]");
    eng_stop(&e);
    eng_start(&e, "{\"sync_dialect\":\"vllm\",\"model\":{\"layers\":2}}");
    static const char *const bad_actions[] = {"checksums", "Checksum", "reset ", ""};
    for (size_t i = 0; i < sizeof bad_actions / sizeof bad_actions[0]; i++) {
        snprintf(body, sizeof body, "{\"action\":\"%s\"}", bad_actions[i]);
        eng_expect(&e, "POST", "/weight_checker", body, 400,
                   "action must be one of checksum|reset|compare");
    }
    eng_expect(&e, "POST", "/weight_checker", "{\"action\":\"checksum\"}", 200, "{\"checksums\":{");
    eng_stop(&e);
}
END_TEST

static Suite *control_suite(void)
{
    Suite *s = suite_create("engine_control");
    TCase *tc = tcase_create("control");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_keep_pause_straddles_a_weight_update);
    tcase_add_loop_test(tc, test_abort_pause_cuts_in_flight, 0, 2);
    tcase_add_test(tc, test_wait_pause_drains_in_flight);
    tcase_add_test(tc, test_control_endpoints);
    tcase_add_test(tc, test_weight_sync_protocol_order);
    tcase_add_test(tc, test_generate_waits_through_skyrl_offload_sync);
    tcase_add_test(tc, test_sleep_tags_are_tracked_separately);
    tcase_add_test(tc, test_request_held_across_a_partial_wake);
    tcase_add_test(tc, test_json_only_update_moves_no_bytes_and_fails);
    tcase_add_test(tc, test_skyrl_finish_backwards_is_refused);
    tcase_add_test(tc, test_sleep_level_range_is_exact);
    tcase_add_test(tc, test_version_parameters_at_their_limits);
    tcase_add_test(tc, test_enum_body_fields_refuse_their_neighbours);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(control_suite)
