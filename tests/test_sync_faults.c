/*
 * Weight-sync failures, each a named check from real engine processes: a corrupted payload
 * (sync.checksum, the engine stays on its old version and the next sync recovers) over both
 * transports, a partial apply (sync.partial_update naming the skipped layers and tensors), an
 * unbumped version (sync.version_skew), a stalled finish (sync.deadline within the deadline),
 * start while an update is active (sync.protocol_order, the engine keeps serving), and a
 * malformed bucket.
 */
#include <curl/curl.h>

#include "sync_fixture.h"

static const sr_sync_transport BOTH[2] = {SR_SYNC_DELTA, SR_SYNC_BROADCAST};

START_TEST(corrupted_payload_keeps_the_old_version_and_the_next_sync_recovers)
{
    /* Delta: the fetch's payload is corrupted; broadcast: the first bucket's. */
    const char *cfg = _i == 0 ? SYNC_CFG_FAULTS("{\"kind\":\"checksum_mismatch\",\"endpoints\":"
                                                "[\"fetch_weights\"],\"count\":1}")
                              : SYNC_CFG_FAULTS("{\"kind\":\"checksum_mismatch\",\"endpoints\":"
                                                "[\"collective_rpc\"],\"count\":1}");
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.bucket_bytes = 128 << 10;
    sfx x;
    sfx_start(&x, 1, cfg, BOTH[_i], &o);
    sfx_sync(&x, 1, 1);
    const sr_check *c = sfx_check(&x, "sync.checksum");
    ck_assert_msg(c, "no sync.checksum (%zu checks)", x.r.n_checks);
    ck_assert_int_eq(c->where.engine, 0);
    ck_assert_ptr_nonnull(strstr(c->message, "hecksum mismatch"));
    ck_assert_int_eq(x.r.n_checks, 1); /* verification accepts the old state */
    ck_assert(!x.r.completed);
    ck_assert_int_eq(sr_sync_version(x.s), 0);
    ck_assert_int_eq(x.r.engines[0].version, 0);
    ck_assert(x.r.phase_ran[SR_SYNC_RESUME]);
    sfx_assert_fps(&x, 0, 0);
    sfx_assert_serves(&x, 0);
    /* The next sync (the fault fired once) recovers: the delta receiver resets and replays. */
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    sfx_assert_fps(&x, 0, 1);
    sfx_sync(&x, 2, 2);
    sfx_assert_clean(&x);
    if (_i == 0)
        ck_assert_int_ge((int)sfx_state_num(&x, 0, "apply", "receiver_resets"), 2);
    sfx_stop(&x);
}
END_TEST

/* The engine's routes after a partial apply are version 1's exactly at the layers it applied. */
static void assert_stale_layers_only(sfx *x, int stale_a, int stale_b)
{
    static const int32_t prompt[] = {3, 4, 5, 6, 7, 8, 9};
    cJSON *sp = cJSON_Parse("{\"max_tokens\":4}");
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = prompt;
    q.n_tokens = 7;
    q.sampling_params = sp;
    q.return_routes = 1;
    q.prompt_start = 0;
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_generate(&r, x->f.conn, &q, &e), e);
    ck_assert_int_eq(r.weight_version, 1);
    size_t rows = (size_t)r.routes.shape[0], L = (size_t)x->m.cfg.num_layers;
    size_t K = (size_t)x->m.cfg.topk, isz = sr_dtype_size(r.routes.dtype);
    /* Prompt rows only: the sampled tokens already depend on the (partly stale) weights. */
    uint8_t *want = fx_oracle_rows(&x->m, 1, prompt, 7, 6, r.routes.dtype);
    ck_assert_uint_ge(rows, 6);
    for (size_t l = 0; l < L; l++) {
        int same = 1;
        for (size_t i = 0; i < 6; i++)
            same &= memcmp(want + (i * L + l) * K * isz,
                           (const uint8_t *)r.routes.data + (i * L + l) * K * isz, K * isz) == 0;
        ck_assert_msg(same == !((int)l == stale_a || (int)l == stale_b),
                      "layer %zu: routes %s version 1's", l, same ? "equal" : "differ from");
    }
    free(want);
    cJSON_Delete(sp);
}

START_TEST(partial_apply_names_the_skipped_layers_and_tensors)
{
    /* On the broadcast path the fault must name collective_rpc (there is no update_weights). */
    const char *cfg = _i == 0
                          ? SYNC_CFG_FAULTS("{\"kind\":\"partial_weight_apply\",\"layers\":[1,2]}")
                          : SYNC_CFG_FAULTS("{\"kind\":\"partial_weight_apply\",\"layers\":[1,2],"
                                            "\"endpoints\":[\"collective_rpc\"],\"count\":1}");
    sfx x;
    sfx_start(&x, 1, cfg, BOTH[_i], NULL);
    sfx_sync(&x, 1, 1);
    ck_assert(x.r.completed); /* the protocol succeeded: only verification can tell */
    ck_assert(!x.r.verified);
    ck_assert_int_eq(x.r.n_checks, 1);
    const sr_check *c = sfx_check(&x, "sync.partial_update");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->where.engine, 0);
    ck_assert_int_eq(c->where.layer, 1);
    ck_assert_msg(strstr(c->message, "slots 1 (layers.1), 2 (layers.2);"), "%s", c->message);
    ck_assert_msg(strstr(c->message, "layers.1.mlp.") && strstr(c->message, "layers.2.mlp."), "%s",
                  c->message);
    ck_assert_msg(!strstr(c->message, "layers.0.") && !strstr(c->message, "layers.3."), "%s",
                  c->message);
    ck_assert_msg(!strstr(c->message, "global"), "%s", c->message);
    ck_assert_int_eq(x.r.engines[0].version, 1);
    assert_stale_layers_only(&x, 1, 2);
    sfx_stop(&x);
}
END_TEST

START_TEST(unbumped_version_is_version_skew)
{
    sfx x;
    sfx_start(&x, 1, SYNC_CFG_FAULTS("{\"kind\":\"version_not_bumped\",\"count\":1}"),
              SR_SYNC_DELTA, NULL);
    sfx_sync(&x, 1, 1);
    ck_assert_int_eq(x.r.n_checks, 1);
    const sr_check *c = sfx_check(&x, "sync.version_skew");
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(strstr(c->message, "reports weight version 0 after the sync to version 1") &&
                      strstr(c->message, "those of the new version"),
                  "%s", c->message);
    sfx_assert_fps(&x, 0, 1);
    sfx_stop(&x);
}
END_TEST

START_TEST(stalled_finish_is_a_deadline_within_the_deadline)
{
    /* Delta: collective_rpc #1 is start, #2 finish. */
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.phase_deadline_ms[SR_SYNC_FINISH] = 300;
    sfx x;
    sfx_start(&x, 1,
              SYNC_CFG_FAULTS("{\"kind\":\"stall\",\"endpoints\":[\"collective_rpc\"],"
                              "\"nth\":[2]}"),
              SR_SYNC_DELTA, &o);
    sfx_sync(&x, 1, 1);
    const sr_check *c = sfx_check(&x, "sync.deadline");
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(strstr(c->message, "(phase finish)") && strstr(c->message, "300 ms"), "%s",
                  c->message);
    ck_assert_int_eq(x.r.n_checks, 1); /* update_weights had switched it: the new state is whole */
    ck_assert(!x.r.completed);
    /* Cut at its deadline, not hung: a generous bound, not a timing measurement. */
    ck_assert_uint_lt(x.r.phase_ns[SR_SYNC_FINISH], 10ull * 1000000000ull);
    ck_assert(x.r.phase_ran[SR_SYNC_RESUME]);
    sfx_assert_serves(&x, 0);
    /* The finish never arrived, so the update is still active: the next start is refused
     * (SkyRL #1605's symptom), and the engine still serves. */
    sfx_sync(&x, 2, 2);
    ck_assert_int_eq(x.r.n_checks, 1); /* the engine is wholly on version 1: no mixture */
    c = sfx_check(&x, "sync.protocol_order");
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_nonnull(strstr(c->message, "already active"));
    sfx_assert_serves(&x, 0);
    sfx_stop(&x);
}
END_TEST

START_TEST(start_while_active_is_protocol_order_and_the_engine_serves)
{
    sfx x;
    sfx_start(&x, 2, SYNC_CFG, SR_SYNC_BROADCAST, NULL);
    sr_client_reply r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_control(&r, 1, x.f.client, 0, "POST", "/collective_rpc",
                                      "{\"method\":\"skyrl_start_weight_update\"}", &e),
                    e);
    sr_client_reply_release(&r);
    sfx_sync(&x, 1, 1);
    ck_assert_int_eq(x.r.n_checks, 1);
    const sr_check *c = sfx_check(&x, "sync.protocol_order");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->where.engine, 0);
    ck_assert_msg(strstr(c->message, "(phase start)"), "%s", c->message);
    ck_assert(!x.r.completed);
    ck_assert(!x.r.phase_ran[SR_SYNC_UPDATE]);
    ck_assert(x.r.phase_ran[SR_SYNC_FINISH]);
    /* rogue start, refused start; engine 1: start and finish only. */
    ck_assert_int_eq(fx_count(&x.f, 0, "collective_rpc"), 2);
    ck_assert_int_eq(fx_count(&x.f, 1, "collective_rpc"), 2);
    /* Engine 1 started, so it got its finish: no update is left active there. */
    ck_assert_int_eq((int)sfx_state_num(&x, 1, "sync", "active"), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(x.r.engines[i].version, 0);
        sfx_assert_serves(&x, i);
    }
    sfx_stop(&x);
}
END_TEST

static size_t sink(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

START_TEST(malformed_buckets_are_named_errors)
{
    sfx x;
    sfx_start(&x, 1, SYNC_CFG, SR_SYNC_BROADCAST, NULL);
    CURL *h = curl_easy_init();
    char url[256];
    snprintf(url, sizeof(url), "%s/collective_rpc", x.f.urls[0]);
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/x-syncroll-bucket");
    static const char *const bodies[] = {
        "no header line",
        "{\"method\":\"update_weights_nccl\",\"kwargs\":{\"update_info\":{\"names\":[\"nope\"],"
        "\"dtype_names\":[\"float16\"],\"shapes\":[[1,64]],\"syncroll\":{\"target_version\":1,"
        "\"bucket\":0,\"sizes\":[128],\"checksums\":[\"00000000000000000000000000000000\"]}}}}\n",
        "{\"method\":\"update_weights_nccl\",\"kwargs\":{\"update_info\":{\"names\":[],"
        "\"dtype_names\":[],\"shapes\":[],\"syncroll\":{\"target_version\":1,\"bucket\":0,"
        "\"sizes\":[],\"checksums\":[]}}}}\nstray"};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    /* Without an active update even a well-formed header is out of order. */
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, bodies[2]);
    ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    ck_assert_int_eq(st, 500);
    sr_client_reply rep;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_control(&rep, 1, x.f.client, 0, "POST", "/collective_rpc",
                                      "{\"method\":\"skyrl_start_weight_update\"}", &e),
                    e);
    sr_client_reply_release(&rep);
    for (size_t i = 0; i < 3; i++) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, bodies[i]);
        ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        ck_assert_int_eq(status, 400);
    }
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    /* The spoiled update is discarded by its finish, which ends it. */
    ck_assert_int_eq(sr_client_control(&rep, 1, x.f.client, 0, "POST", "/collective_rpc",
                                       "{\"method\":\"skyrl_finish_weight_update\"}", &e),
                     SR_E_CLIENT_HTTP_STATUS);
    ck_assert_int_eq(rep.http_status, 400);
    sr_client_reply_release(&rep);
    ck_assert_int_eq((int)sfx_state_num(&x, 0, "sync", "active"), 0);
    ck_assert_int_eq((int)sfx_state_num(&x, 0, "weight_version", NULL), 0);
    sfx_assert_serves(&x, 0);
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    sfx_stop(&x);
}
END_TEST

/* The vllm control plane from the trainer side (opts.control): a sync drives vLLM's native routes
 * (no collective_rpc), completes and verifies, and the weight checker proves each engine holds
 * the published bytes; with a layer left stale by the engine, the compare names it first as
 * sync.partial_update. The delta transport is refused for this plane. */
#define VLLM_CFG(f) "{" SYNC_MODEL ",\"sync_dialect\":\"vllm\",\"faults\":[" f "]}"

START_TEST(vllm_plane_sync_is_checked_by_the_weight_checker)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.control = SR_SYNC_DIALECT_VLLM;
    sfx x;
    sfx_start(&x, 2, VLLM_CFG(""), SR_SYNC_BROADCAST, &o);
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    sfx_sync(&x, 2, 2);
    sfx_assert_clean(&x);
    for (int i = 0; i < 2; i++) {
        cJSON *st = sfx_state(&x, i);
        const cJSON *rq = cJSON_GetObjectItem(st, "requests");
        ck_assert_int_eq(cJSON_GetObjectItem(rq, "start_weight_update")->valueint, 2);
        ck_assert_int_eq(cJSON_GetObjectItem(rq, "finish_weight_update")->valueint, 2);
        ck_assert_int_eq(cJSON_GetObjectItem(rq, "weight_checker")->valueint, 2);
        ck_assert_int_eq(cJSON_GetObjectItem(rq, "collective_rpc")->valueint, 0);
        cJSON_Delete(st);
    }
    sfx_stop(&x);
    sfx_start(&x, 1,
              VLLM_CFG("{\"kind\":\"partial_weight_apply\",\"endpoints\":[\"update_weights\"],"
                       "\"layers\":[1],\"count\":1}"),
              SR_SYNC_BROADCAST, &o);
    sfx_sync(&x, 1, 1);
    const sr_check *c = sfx_check(&x, "sync.partial_update");
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(strstr(c->message, "weight_checker compare") && strstr(c->message, "layers.1"),
                  "%s", c->message);
    sfx_stop(&x);
    sr_sync *s = NULL;
    sr_err e = SR_ERR_INIT;
    fx_model m;
    fx_model_load(&m, SYNC_CFG);
    const char *url = "http://127.0.0.1:9";
    o.sync_dir = "/tmp";
    ck_assert_sr_code(sr_sync_new(&s, &url, 1, &m.spec, &o, &e), e, SR_E_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "vllm control plane syncs by broadcast"));
    fx_model_free(&m);
}
END_TEST

/* The sglang control plane from the trainer side: a sync drives SGLang's routes (group init once,
 * pause_generation, whole-update buckets on /update_weights_from_distributed,
 * update_weight_version, continue_generation; no collective_rpc, no start or finish) and verifies;
 * an engine whose group was destroyed refuses the buckets 400 sync.protocol_order, which the
 * trainer reports for that engine, and every engine is resumed and serves. The delta transport is
 * refused for this plane. */
#define SGL_CFG "{" SYNC_MODEL ",\"sync_dialect\":\"sglang\"}"

START_TEST(sglang_plane_sync_and_a_lost_group)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.control = SR_SYNC_DIALECT_SGLANG;
    sfx x;
    sfx_start(&x, 2, SGL_CFG, SR_SYNC_BROADCAST, &o);
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    sfx_sync(&x, 2, 2);
    sfx_assert_clean(&x);
    const char *want[][2] = {{"init_weights_update_group", "1"},
                             {"pause_generation", "2"},
                             {"continue_generation", "2"},
                             {"update_weight_version", "2"},
                             {"collective_rpc", "0"},
                             {"start_weight_update", "0"},
                             {"pause", "0"}};
    for (int i = 0; i < 2; i++) {
        for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
            ck_assert_msg(fx_count(&x.f, i, want[k][0]) == atoi(want[k][1]), "engine %d: %s %d", i,
                          want[k][0], (int)fx_count(&x.f, i, want[k][0]));
        ck_assert(fx_count(&x.f, i, "update_weights_from_distributed") >= 2);
        sfx_assert_fps(&x, i, 2);
    }
    sr_client_reply r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(
        sr_client_control(&r, 1, x.f.client, 0, "POST", "/destroy_weights_update_group", "{}", &e),
        e);
    sr_client_reply_release(&r);
    sfx_sync(&x, 3, 3);
    const sr_check *c = sfx_check(&x, "sync.protocol_order");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->where.engine, 0);
    ck_assert_msg(strstr(c->message, "/update_weights_from_distributed") &&
                      strstr(c->message, "no weights update group"),
                  "%s", c->message);
    ck_assert(!x.r.completed);
    /* Engine 0 got no version; engine 1 took the update; both are resumed and serve. */
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weight_version"), 2);
    ck_assert_int_eq(fx_count(&x.f, 1, "update_weight_version"), 3);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(fx_count(&x.f, i, "continue_generation"), 3);
        sfx_assert_serves(&x, i);
    }
    sfx_stop(&x);
    /* A weights fault aimed at SGLang's update route: the commits skip the layers it names and
     * verification finds them stale. */
    sfx_start(&x, 1,
              "{" SYNC_MODEL ",\"sync_dialect\":\"sglang\",\"faults\":[{\"kind\":"
              "\"partial_weight_apply\",\"layers\":[1],\"endpoints\":"
              "[\"update_weights_from_distributed\"]}]}",
              SR_SYNC_BROADCAST, &o);
    sfx_sync(&x, 1, 1);
    ck_assert(x.r.completed && !x.r.verified);
    c = sfx_check(&x, "sync.partial_update");
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(strstr(c->message, "layers.1"), "%s", c->message);
    sfx_stop(&x);
    sr_sync *s = NULL;
    fx_model m;
    fx_model_load(&m, SYNC_CFG);
    const char *url = "http://127.0.0.1:9";
    o.sync_dir = "/tmp";
    o.transport = SR_SYNC_DELTA;
    ck_assert_sr_code(sr_sync_new(&s, &url, 1, &m.spec, &o, &e), e, SR_E_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "sglang control plane syncs by broadcast"));
    fx_model_free(&m);
}
END_TEST

/* The disk transport on the sglang plane: a version whose bytes equal the last version every
 * engine loaded and verified, and still reports holding, writes no folder and loads nothing (only
 * update_weight_version), and still verifies. An engine whose weights were reset since (as a
 * restart would) gets the folder written and loaded again, and so does one after a load that
 * failed (checksum_mismatch on the third update_weights_from_disk): both heal the engine. */
#define DISK_CFG                                                                                   \
    "{" SYNC_MODEL ",\"sync_dialect\":\"sglang\",\"faults\":[{\"kind\":\"checksum_mismatch\","     \
    "\"endpoints\":[\"update_weights_from_disk\"],\"nth\":[3]},"                                   \
    "{\"kind\":\"serve_before_sync\",\"nth\":[1]}]}"

static int folder_exists(const sfx *x, int v)
{
    char p[200];
    struct stat st;
    snprintf(p, sizeof(p), "%s/v%d", x->dir, v);
    return stat(p, &st) == 0;
}

START_TEST(disk_skips_a_version_of_the_same_bytes)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.control = SR_SYNC_DIALECT_SGLANG;
    sfx x;
    sfx_start(&x, 1, DISK_CFG, SR_SYNC_DISK, &o);
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    ck_assert(folder_exists(&x, 1));
    sfx_sync(&x, 2, SR_SYNC_SAME_BYTES);
    sfx_assert_clean(&x);
    ck_assert(!folder_exists(&x, 2));
    ck_assert(!x.r.phase_ran[SR_SYNC_UPDATE]);
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weights_from_disk"), 1);
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weight_version"), 2);
    ck_assert_int_eq((int)sfx_state_num(&x, 0, "weight_version", NULL), 2);
    sfx_assert_fps(&x, 0, 1);
    /* The engine restarts on its initial weights at its first generate (serve_before_sync):
     * the same bytes are written and loaded again. */
    sr_client_reply rp;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_control(&rp, 1, x.f.client, 0, "POST", "/skyrl/v1/generate",
                                      "{\"token_ids\":[1,2,3],\"sampling_params\":"
                                      "{\"max_tokens\":2}}",
                                      &e),
                    e);
    ck_assert_int_eq(rp.http_status, 200);
    sr_client_reply_release(&rp);
    sfx_assert_fps(&x, 0, 0);
    sfx_sync(&x, 3, SR_SYNC_SAME_BYTES);
    sfx_assert_clean(&x);
    ck_assert(folder_exists(&x, 3));
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weights_from_disk"), 2);
    sfx_assert_fps(&x, 0, 1);
    /* New bytes whose load fails: the engine stays on the old bytes. */
    sfx_sync(&x, 4, 4);
    ck_assert_ptr_nonnull(sfx_check(&x, "sync.checksum"));
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weights_from_disk"), 3);
    /* The same bytes again: not skipped, since no engine verifiably holds them. */
    sfx_sync(&x, 5, SR_SYNC_SAME_BYTES);
    sfx_assert_clean(&x);
    ck_assert(folder_exists(&x, 5));
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weights_from_disk"), 4);
    sfx_assert_fps(&x, 0, 4);
    sfx_assert_serves(&x, 0);
    sfx_stop(&x);
}
END_TEST

/* Bytes loaded without verification (sr_sync_opts.verify off) were never verified as held: syncing
 * the same bytes again loads them again rather than only setting the number, although the engine
 * reports holding them. */
START_TEST(disk_reloads_bytes_that_were_never_verified)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.control = SR_SYNC_DIALECT_SGLANG;
    o.verify = 0;
    sfx x;
    sfx_start(&x, 1, "{" SYNC_MODEL ",\"sync_dialect\":\"sglang\"}", SR_SYNC_DISK, &o);
    sfx_sync(&x, 1, 1);
    ck_assert_uint_eq(x.r.n_checks, 0);
    ck_assert(x.r.completed && !x.r.verified);
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weights_from_disk"), 1);
    sfx_assert_fps(&x, 0, 1);
    sfx_sync(&x, 2, SR_SYNC_SAME_BYTES);
    ck_assert_uint_eq(x.r.n_checks, 0);
    ck_assert(x.r.completed && !x.r.verified);
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weights_from_disk"), 2);
    ck_assert_int_eq((int)sfx_state_num(&x, 0, "weight_version", NULL), 2);
    sfx_stop(&x);
}
END_TEST

/* weights.serial_update: the disk load goes to one engine at a time in engine order, each after
 * the previous one answered, so what an engine did in its load is done before the next one's
 * starts. Three engines, delete_checkpoint_after_load (areal-project/AReaL#710) on engine f alone:
 * the engines up to f load version 1, engine f then removes the folder, and every later engine's
 * load finds none (sync.engine_failed naming it) and stays on version 0. No timing decides it. */
START_TEST(serial_update_orders_the_disk_loads)
{
    int f = _i;
    char cfg[400];
    snprintf(cfg, sizeof(cfg),
             "{" SYNC_MODEL ",\"sync_dialect\":\"sglang\",\"faults\":[{\"kind\":"
             "\"delete_checkpoint_after_load\",\"endpoints\":[\"update_weights_from_disk\"],"
             "\"engines\":[%d]}]}",
             f);
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.control = SR_SYNC_DIALECT_SGLANG;
    o.serial_update = 1;
    sfx x;
    sfx_start(&x, 3, cfg, SR_SYNC_DISK, &o);
    sfx_sync(&x, 1, 1);
    ck_assert(!folder_exists(&x, 1));
    size_t failed = 0;
    unsigned named = 0;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(fx_count(&x.f, i, "update_weights_from_disk"), 1);
        ck_assert_int_eq((int)sfx_state_num(&x, i, "weight_version", NULL), i <= f ? 1 : 0);
        ck_assert_int_eq(x.r.engines[i].ok, i <= f);
    }
    for (size_t k = 0; k < x.r.n_checks; k++) {
        const sr_check *c = &x.r.checks[k];
        if (strcmp(c->name, "sync.engine_failed") != 0)
            continue;
        failed++;
        ck_assert_msg(strstr(c->message, "cannot open checkpoint folder"), "%s", c->message);
        int at = -1;
        ck_assert_msg(sscanf(c->message, "engine %d ", &at) == 1 && at > f && !(named & 1u << at),
                      "%s", c->message);
        named |= 1u << at;
    }
    ck_assert_uint_eq(failed, (size_t)(2 - f));
    if (f == 2)
        sfx_assert_clean(&x);
    sfx_stop(&x);
}
END_TEST

/* weights.serial_update on the delta transport: engine 0's update_weights stalls (no answer, cut
 * at the phase's 300 ms deadline), so engine 1's is never sent and is named sync.deadline as not
 * sent; at once, both would have it. */
START_TEST(serial_update_holds_the_next_delta_update_until_an_answer)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.serial_update = 1;
    o.phase_deadline_ms[SR_SYNC_UPDATE] = 300;
    sfx x;
    sfx_start(&x, 2,
              SYNC_CFG_FAULTS("{\"kind\":\"stall\",\"endpoints\":[\"update_weights\"],"
                              "\"engines\":[0]}"),
              SR_SYNC_DELTA, &o);
    sfx_sync(&x, 1, 1);
    const sr_check *c = sfx_check(&x, "sync.deadline");
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(strstr(c->message, "engine 0 ") == c->message, "%s", c->message);
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weights"), 1);
    ck_assert_int_eq(fx_count(&x.f, 1, "update_weights"), 0);
    c = NULL;
    for (size_t k = 0; k < x.r.n_checks; k++)
        if (strstr(x.r.checks[k].message, "engine 1 ") == x.r.checks[k].message)
            c = &x.r.checks[k];
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->name, "sync.deadline");
    ck_assert_msg(strstr(c->message, "not sent: the phase's deadline (300 ms) passed"), "%s",
                  c->message);
    ck_assert(!x.r.completed);
    sfx_stop(&x);
}
END_TEST

/* A serial update cut at the deadline after an earlier engine took part of it says so: engine 1
 * stalls, engine 0 answered after its 100 ms latency, and engine 1's check names when it was
 * sent, so a slow engine 0 does not read as engine 1's fault alone. (The 2 s deadline only
 * bounds engine 0's 100 ms answer.) */
START_TEST(serial_update_cut_names_when_it_was_sent)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.serial_update = 1;
    o.phase_deadline_ms[SR_SYNC_UPDATE] = 2000;
    sfx x;
    sfx_start(
        &x, 2,
        SYNC_CFG_FAULTS("{\"kind\":\"latency\",\"ms\":100,\"endpoints\":[\"update_weights\"],"
                        "\"engines\":[0]},{\"kind\":\"stall\",\"endpoints\":[\"update_weights\"],"
                        "\"engines\":[1]}"),
        SR_SYNC_DELTA, &o);
    sfx_sync(&x, 1, 1);
    ck_assert_int_eq(fx_count(&x.f, 0, "update_weights"), 1);
    ck_assert_int_eq(fx_count(&x.f, 1, "update_weights"), 1);
    const sr_check *c = sfx_check(&x, "sync.deadline");
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(strstr(c->message, "engine 1 ") == c->message, "%s", c->message);
    const char *sent = strstr(c->message, " (sent ");
    ck_assert_msg(sent && strstr(sent, " ms into the phase's 2000 ms, after the engines before it "
                                       "updated one at a time)"),
                  "%s", c->message);
    ck_assert_int_ge(atoi(sent + strlen(" (sent ")), 100);
    sfx_stop(&x);
}
END_TEST

/* Verification compares every layer's fingerprint: a partial apply that skips only the first
 * or only the last MoE layer slot (of 4) is named at that slot. */
START_TEST(partial_apply_of_the_first_or_last_layer_is_found)
{
    const char *cfgs[2] = {SYNC_CFG_FAULTS("{\"kind\":\"partial_weight_apply\",\"layers\":[0]}"),
                           SYNC_CFG_FAULTS("{\"kind\":\"partial_weight_apply\",\"layers\":[3]}")};
    for (int k = 0; k < 2; k++) {
        sfx x;
        sfx_start(&x, 1, cfgs[k], SR_SYNC_DELTA, NULL);
        sfx_sync(&x, 1, 1);
        ck_assert(x.r.completed);
        ck_assert(!x.r.verified);
        const sr_check *c = sfx_check(&x, "sync.partial_update");
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(c->where.layer, k ? 3 : 0);
        ck_assert_msg(strstr(c->message, k ? "slot 3 (layers.3);" : "slot 0 (layers.0);"), "%s",
                      c->message);
        sfx_stop(&x);
    }
}
END_TEST

static Suite *faults_suite(void)
{
    Suite *s = suite_create("sync_faults");
    TCase *tc = tcase_create("sync_faults");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, corrupted_payload_keeps_the_old_version_and_the_next_sync_recovers, 0,
                        2);
    tcase_add_loop_test(tc, partial_apply_names_the_skipped_layers_and_tensors, 0, 2);
    tcase_add_test(tc, unbumped_version_is_version_skew);
    tcase_add_test(tc, stalled_finish_is_a_deadline_within_the_deadline);
    tcase_add_test(tc, start_while_active_is_protocol_order_and_the_engine_serves);
    tcase_add_test(tc, malformed_buckets_are_named_errors);
    tcase_add_test(tc, vllm_plane_sync_is_checked_by_the_weight_checker);
    tcase_add_test(tc, sglang_plane_sync_and_a_lost_group);
    tcase_add_test(tc, disk_skips_a_version_of_the_same_bytes);
    tcase_add_test(tc, disk_reloads_bytes_that_were_never_verified);
    tcase_add_loop_test(tc, serial_update_orders_the_disk_loads, 0, 3);
    tcase_add_test(tc, serial_update_holds_the_next_delta_update_until_an_answer);
    tcase_add_test(tc, serial_update_cut_names_when_it_was_sent);
    tcase_add_test(tc, partial_apply_of_the_first_or_last_layer_is_found);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(faults_suite());
    curl_global_cleanup();
    return rc;
}
