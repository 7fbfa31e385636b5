/*
 * Weight sync end to end against real engine processes: several versions in a row over both
 * transports (each verified, fingerprints checked independently against sr_weights_expected),
 * the pool sizes used on both sides, a zero-payload apply, the cache salt, and a rollout whose
 * generate straddles a keep-mode pause, verified row by row at each row's version.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <time.h>

#include "run/rollout.h"
#include "scenario/scenario.h"
#include "sr_hist.h"
#include "sync_fixture.h"

/* Engine i applied its last delta with min(payloads, pool_workers(32, 0)) workers. */
static void assert_apply_pool(sfx *x, int i, int64_t payloads)
{
    int p32 = sfx_pool(32);
    ck_assert_int_eq(x->r.engines[i].apply_max_workers, p32);
    ck_assert_int_eq(x->r.engines[i].engine_publish_pool, sfx_pool(8));
    ck_assert_int_eq(x->r.engines[i].apply_payloads, payloads);
    ck_assert_int_eq(x->r.engines[i].apply_workers, payloads < p32 ? (int)payloads : p32);
    ck_assert_int_ge(x->r.engines[i].apply_threads, payloads ? 1 : 0);
    ck_assert_int_le(x->r.engines[i].apply_threads, x->r.engines[i].apply_workers);
}

START_TEST(delta_versions_in_a_row)
{
    sfx x;
    sfx_start(&x, 2, SYNC_CFG, SR_SYNC_DELTA, NULL);
    ck_assert_str_eq(sr_sync_cache_salt(x.s), "default@0");
    for (int64_t v = 1; v <= 3; v++) {
        sfx_sync(&x, v, v);
        sfx_assert_clean(&x);
        ck_assert_int_eq(x.r.versions_published, 1);
        ck_assert_int_gt(x.r.records, 0);
        ck_assert_int_eq(x.r.publish_workers, sfx_pool(8));
        for (int i = 0; i < 2; i++) {
            ck_assert_int_eq(x.r.engines[i].version, v);
            assert_apply_pool(&x, i, (int64_t)x.r.records);
            sfx_assert_fps(&x, i, v);
        }
        for (int p = SR_SYNC_GATHER; p < SR_SYNC_PHASE_COUNT; p++)
            ck_assert_int_eq(x.r.phase_ran[p], p != SR_SYNC_INIT || v == 1); /* init once */
    }
    ck_assert_int_eq(sr_sync_version(x.s), 3);
    ck_assert_str_eq(sr_sync_cache_salt(x.s), "default@3");
    ck_assert_int_eq((int)sfx_state_num(&x, 0, "apply", "receiver_version"), 3);
    sfx_stop(&x);
}
END_TEST

START_TEST(broadcast_versions_in_a_row)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.bucket_bytes = 64 << 10; /* several buckets, some holding many tensors */
    o.send_workers = 2;
    sfx x;
    sfx_start(&x, 2, SYNC_CFG, SR_SYNC_BROADCAST, &o);
    for (int64_t v = 1; v <= 3; v++) {
        sfx_sync(&x, v, v);
        sfx_assert_clean(&x);
        ck_assert_int_gt(x.r.buckets, 2);
        ck_assert_int_eq(x.r.bytes_sent, sr_weights_total_bytes(sr_sync_weights(x.s)));
        for (int i = 0; i < 2; i++) {
            ck_assert_int_eq(x.r.engines[i].version, v);
            ck_assert_int_gt(x.r.engines[i].apply_payloads, 0);
            /* A broadcast bucket is received as one stream (workers 1); how many buckets were in
             * flight at once depends on scheduling, so only its bounds are asserted. */
            ck_assert_int_eq(x.r.engines[i].apply_workers, 1);
            int threads = (int)sfx_state_num(&x, i, "apply", "threads");
            ck_assert_int_ge(threads, 1);
            ck_assert_int_le(threads, o.send_workers);
            sfx_assert_fps(&x, i, v);
        }
        ck_assert_int_eq(x.r.phase_ran[SR_SYNC_INIT], v == 1);
        ck_assert_int_eq(x.r.phase_ran[SR_SYNC_FETCH], 0);
    }
    ck_assert_int_eq((int)sfx_state_num(&x, 1, "sync", "starts"), 3);
    ck_assert_int_eq((int)sfx_state_num(&x, 1, "sync", "finishes"), 3);
    ck_assert_int_eq((int)sfx_state_num(&x, 1, "apply", "commits"), 3);
    /* start + every bucket + finish, three times. */
    ck_assert_int_eq(fx_count(&x.f, 1, "collective_rpc"), 3 * (2 + (int64_t)x.r.buckets));
    sfx_stop(&x);
}
END_TEST

/* Nothing changed: a manifest without records; the engines apply nothing (no zero-worker pool)
 * and still move to the new version. */
START_TEST(zero_payload_apply)
{
    sfx x;
    sfx_start(&x, 1, SYNC_CFG, SR_SYNC_DELTA, NULL);
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    sfx_sync(&x, 2, SR_SYNC_SAME_BYTES);
    sfx_assert_clean(&x);
    ck_assert_int_eq(x.r.versions_published, 1);
    ck_assert_int_eq(x.r.records, 0);
    assert_apply_pool(&x, 0, 0);
    ck_assert_int_eq(x.r.engines[0].apply_workers, 0);
    ck_assert_int_eq(x.r.engines[0].apply_threads, 0);
    ck_assert_int_eq(x.r.engines[0].version, 2);
    sfx_assert_fps(&x, 0, 1); /* the bytes of content version 1, now called version 2 */
    ck_assert_int_eq((int)sfx_state_num(&x, 0, "apply", "committed_tensors"), 0);
    sfx_stop(&x);
}
END_TEST

/* A publish pool sized by the scenario's cap and reserve, and a single send worker. */
START_TEST(pool_sizes_follow_the_options)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.workers_cap = 1;
    o.cores = 4;
    o.send_workers = 1;
    sfx x;
    sfx_start(&x, 1, SYNC_CFG, SR_SYNC_BROADCAST, &o);
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    ck_assert_int_eq(x.r.publish_workers, 1);
    sr_sync_free(x.s);
    o.workers_cap = 8;
    o.workers_reserved = 3;
    o.transport = SR_SYNC_DELTA;
    o.sync_dir = x.dir;
    o.fsync = 0;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_sync_new(&x.s, x.f.urls, 1, &x.m.spec, &o, &e), e);
    sfx_sync(&x, 1, 1);
    /* The engine's version is already 1 from the broadcast, and its receiver starts afresh. */
    sfx_assert_clean(&x);
    ck_assert_int_eq(x.r.publish_workers, 1); /* max(1, min(8, 4 - 3)) */
    sfx_stop(&x);
}
END_TEST

/* ---- a generate straddling a keep-mode pause ---- */

typedef struct bg_rollout {
    pthread_t t;
    sr_client_conn *k;
    sr_rollout_config cfg;
    sr_rollout_result r;
    int rc;
} bg_rollout;

static void *bg_main(void *arg)
{
    bg_rollout *b = arg;
    sr_err e = SR_ERR_INIT;
    b->rc = sr_rollout_run(&b->r, b->k, &b->cfg, &e);
    return NULL;
}

/* Every captured route row equals the oracle's at the row's own version. */
static void verify_rows(fx_model *m, const sr_rollout_result *r, int64_t max_v)
{
    size_t T = r->prompt_len + r->response_len;
    int32_t *tok = malloc(T * sizeof(*tok));
    memcpy(tok, r->prompt_ids, r->prompt_len * sizeof(*tok));
    memcpy(tok + r->prompt_len, r->response_ids, r->response_len * sizeof(*tok));
    size_t cap = (size_t)r->captured_rows;
    size_t rb = (size_t)m->cfg.num_layers * (size_t)m->cfg.topk * sr_dtype_size(r->routes.dtype);
    for (int64_t v = 0; v <= max_v; v++) {
        uint8_t *want = fx_oracle_rows(m, v, tok, T, cap, r->routes.dtype);
        for (size_t i = 0; i < cap; i++)
            if (r->row_version[i] == v)
                ck_assert_msg(
                    memcmp(want + i * rb, (const uint8_t *)r->routes.data + i * rb, rb) == 0,
                    "row %zu differs from the oracle at its version %lld", i, (long long)v);
        free(want);
    }
    for (size_t i = 0; i < cap; i++)
        ck_assert_msg(r->row_version[i] >= 0 && r->row_version[i] <= max_v, "row %zu: version %lld",
                      i, (long long)r->row_version[i]);
    free(tok);
}

START_TEST(rollout_straddling_a_sync_verifies_row_by_row)
{
    const char *cfg = "{" SYNC_MODEL ",\"timing\":{\"decode_ms_per_token\":25}}";
    sfx x;
    sfx_start(&x, 1, cfg, SR_SYNC_DELTA, NULL);
    static const int32_t prompt[] = {5, 6, 7, 8, 9, 10};
    bg_rollout b;
    memset(&b, 0, sizeof(b));
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_conn_new(&b.k, x.f.client, &e), e);
    cJSON *sp = cJSON_Parse("{\"max_tokens\":48}");
    b.cfg = (sr_rollout_config)SR_ROLLOUT_CONFIG_INIT;
    b.cfg.prompt = prompt;
    b.cfg.prompt_len = 6;
    b.cfg.session_id = "straddle";
    b.cfg.sampling_params = sp;
    b.cfg.cache_salt = sr_sync_cache_salt(x.s);
    b.cfg.eos_id = 2;
    b.cfg.env = (sr_rollout_env){3, 1, 0, 0, 64};
    ck_assert_int_eq(pthread_create(&b.t, NULL, bg_main, &b), 0);
    /* Wait (bounded) until the generate is in flight, then sync while it decodes. */
    for (int i = 0; i < 4000 && sfx_state_num(&x, 0, "inflight", NULL) < 1; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ck_assert_int_eq((int)sfx_state_num(&x, 0, "inflight", NULL), 1);
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    pthread_join(b.t, NULL);
    ck_assert_msg(b.rc == 0, "rollout failed: %s", b.r.err.msg);
    /* Both versions appear: the rows before the pause at 0, the rest at 1. */
    int seen0 = 0, seen1 = 0;
    for (int64_t i = 0; i < b.r.captured_rows; i++) {
        seen0 |= b.r.row_version[i] == 0;
        seen1 |= b.r.row_version[i] == 1;
    }
    ck_assert_msg(seen0 && seen1, "the generate did not straddle the sync");
    verify_rows(&x.m, &b.r, 1);
    ck_assert_str_eq(sr_sync_cache_salt(x.s), "default@1");
    sr_rollout_result_release(&b.r);
    sr_client_conn_free(b.k);
    cJSON_Delete(sp);
    sfx_stop(&x);
}
END_TEST

/* ---- the runner's entry point ---- */

#define STEP_SCN                                                                                   \
    "{\"id\":\"sync-step\",\"description\":\"sr_sync_step\",\"seed\":7,"                           \
    "\"model\":{\"vocab\":64,\"layers\":2,\"experts\":8,\"topk\":2},"                              \
    "\"weights\":{\"transport\":\"%s\"},\"engines\":{\"count\":1%s},"                              \
    "\"steps\":[{\"kind\":\"sync_weights\"},{\"kind\":\"sync_weights\",\"deadline_ms\":400}],"     \
    "\"expect\":{\"verdict\":\"pass\"}}"

/* Two sync_weights steps of a scenario through sr_sync_step, as the runner runs them; with the
 * stall, the second step's finish hangs and its 400 ms deadline turns it into sync.deadline
 * (collective_rpc #4 is that finish for delta: start, finish, start, finish; #6 for broadcast
 * with its one bucket per sync). */
START_TEST(scenario_steps_record_into_the_scenario_result)
{
    static const char *const transports[] = {"delta", "broadcast"};
    char text[1024];
    snprintf(text, sizeof(text), STEP_SCN, transports[_i % 2],
             _i < 2    ? ""
             : _i == 2 ? ",\"faults\":[{\"kind\":\"stall\",\"endpoints\":[\"collective_rpc\"],"
                         "\"nth\":[4]}]"
                       : ",\"faults\":[{\"kind\":\"stall\",\"endpoints\":[\"collective_rpc\"],"
                         "\"nth\":[6]}]");
    sr_scenario *scn;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&scn, text, strlen(text), "t.json", &e), e);
    char cfg[] = "/tmp/sr-sync-step-XXXXXX";
    int fd = mkstemp(cfg);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_sr_ok(sr_scenario_write_engine(scn, cfg, NULL, &e), e);
    FILE *f = fopen(cfg, "rb");
    char json[65536];
    size_t n = fread(json, 1, sizeof(json) - 1, f);
    fclose(f);
    json[n] = '\0';
    sfx x;
    sfx_start(&x, 1, json, SR_SYNC_DELTA, NULL);
    sr_run_result *run;
    sr_scenario_result *sc;
    ck_assert_sr_ok(sr_run_result_new(&run, &e), e);
    ck_assert_sr_ok(sr_run_result_add_scenario(&sc, run, &e), e);
    sr_sync *st = NULL;
    for (int step = 0; step < 2; step++)
        ck_assert_sr_ok(sr_sync_step(&st, sc, scn, step, x.f.urls, 1, x.dir, NULL, NULL, &e), e);
    ck_assert_int_eq(sc->counters.syncs, 2);
    ck_assert_int_eq(sr_hist_count(sc->phase[SR_PHASE_SYNC_TOTAL]), 2);
    ck_assert_int_eq(sr_hist_count(sc->phase[SR_PHASE_APPLY]), 2);
    ck_assert_int_eq(sr_hist_count(sc->phase[SR_PHASE_PUBLISH]), 2);
    if (_i < 2) {
        ck_assert_msg(sc->n_checks == 0, "%s", sc->n_checks ? sc->checks[0].message : "");
        ck_assert_int_eq(sr_sync_version(st), 2);
    } else {
        ck_assert(sr_result_fired(sc, "sync.deadline"));
        ck_assert_int_eq(sc->checks[0].where.step, 1);
        ck_assert_int_eq(sc->checks[0].where.engine, 0);
        ck_assert_msg(strstr(sc->checks[0].message, "(phase finish)"), "%s", sc->checks[0].message);
        ck_assert_int_eq(sr_sync_version(st), 1);
        ck_assert_int_eq(sr_sync_last_target(st), 2);
    }
    sr_sync_free(st);
    sr_run_result_free(run);
    sr_scenario_free(scn);
    unlink(cfg);
    sfx_stop(&x);
}
END_TEST

/* Bucket packing at the byte limit: bucket_bytes equal to the first two tensors' bytes puts
 * them in one bucket (as a greedy packing computed here says), one byte less splits them; the
 * whole set fits one bucket of exactly its size and two of one byte less. */
START_TEST(broadcast_bucket_fill_is_exact)
{
    sfx x;
    sfx_start(&x, 1, SYNC_CFG, SR_SYNC_BROADCAST, NULL);
    const sr_weights *w = sr_sync_weights(x.s);
    size_t n = sr_weights_count(w), total = sr_weights_total_bytes(w);
    size_t *sizes = calloc(n, sizeof *sizes);
    for (size_t i = 0; i < n; i++) {
        sr_weights_info t;
        sr_err e = SR_ERR_INIT;
        ck_assert_sr_ok(sr_weights_tensor(&t, w, i, &e), e);
        sizes[i] = t.nbytes;
    }
    sfx_stop(&x);
    ck_assert_uint_ge(n, 3);
    size_t limits[5] = {sizes[0] + sizes[1] - 1, sizes[0] + sizes[1], sizes[0] + sizes[1] + 1,
                        total - 1, total};
    for (int k = 0; k < 5; k++) {
        size_t want = 0, bytes = 0, count = 0;
        for (size_t i = 0; i < n; i++) {
            if (count && bytes + sizes[i] > limits[k]) {
                want++;
                bytes = count = 0;
            }
            bytes += sizes[i];
            count++;
        }
        want += count > 0;
        ck_assert_uint_eq(want, k == 4 ? 1 : k == 3 ? 2 : want);
        sr_sync_opts o = SR_SYNC_OPTS_INIT;
        o.bucket_bytes = limits[k];
        sfx_start(&x, 1, SYNC_CFG, SR_SYNC_BROADCAST, &o);
        sfx_sync(&x, 1, 1);
        sfx_assert_clean(&x);
        ck_assert_msg(x.r.buckets == want, "bucket_bytes %zu: %zu buckets, want %zu", limits[k],
                      (size_t)x.r.buckets, want);
        sfx_assert_fps(&x, 0, 1);
        sfx_stop(&x);
    }
    free(sizes);
}
END_TEST

static Suite *sync_suite(void)
{
    Suite *s = suite_create("sync");
    TCase *tc = tcase_create("sync");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, delta_versions_in_a_row);
    tcase_add_test(tc, broadcast_versions_in_a_row);
    tcase_add_test(tc, zero_payload_apply);
    tcase_add_test(tc, pool_sizes_follow_the_options);
    tcase_add_test(tc, rollout_straddling_a_sync_verifies_row_by_row);
    tcase_add_test(tc, broadcast_bucket_fill_is_exact);
    tcase_add_loop_test(tc, scenario_steps_record_into_the_scenario_result, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(sync_suite());
    curl_global_cleanup();
    return rc;
}
