/*
 * The trainer side of vLLM's two weight-transfer forms (sr_sync_opts.api, engines.sync_version),
 * against real engine processes:
 * - "vllm#50902" (vllm/distributed/weight_transfer/nccl_common.py NCCLWeightTransferInitInfo,
 *   vllm#50902 for NCCL and vllm#48981 for IPC): the trainer sends packed,
 *   packed_buffer_size_bytes and packed_num_buffers once in the init info and no packed key in any
 *   update_info;
 * - "vllm#31943" (the first native NCCL API): packed in every update_info, none in the init info.
 * A trainer speaking the form its engines speak syncs and verifies; one speaking the other form
 * is refused with the named finding sync.wire_version naming the moved key, in either direction.
 */
#include <curl/curl.h>

#include "sync_fixture.h"

#define CFG_OF(v) "{" SYNC_MODEL ",\"sync_dialect\":\"vllm\",\"sync_version\":\"" v "\"}"

static const char *const ENGINE_CFG[2] = {CFG_OF("vllm#50902"), CFG_OF("vllm#31943")};
static const sr_sync_api API[2] = {SR_SYNC_API_50902, SR_SYNC_API_31943};

static void start(sfx *x, int engine_form, int trainer_form)
{
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.control = SR_SYNC_DIALECT_VLLM;
    o.api = API[trainer_form];
    o.bucket_bytes = 256 << 10;
    o.send_workers = 2;
    sfx_start(x, 1, ENGINE_CFG[engine_form], SR_SYNC_BROADCAST, &o);
}

/* A generate's prompt routes equal the oracle's at version `v`: the engine holds v's bytes. */
static void assert_routes_at(sfx *x, int64_t v)
{
    static const int32_t prompt[] = {3, 4, 5, 6, 7, 8, 9};
    cJSON *sp = cJSON_Parse("{\"max_tokens\":2}");
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = prompt;
    q.n_tokens = 7;
    q.sampling_params = sp;
    q.return_routes = 1;
    q.prompt_start = 0;
    sr_client_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_generate(&r, x->f.conn, &q, &e), e);
    ck_assert_int_eq(r.weight_version, v);
    size_t L = (size_t)x->m.cfg.num_layers, K = (size_t)x->m.cfg.topk;
    size_t isz = sr_dtype_size(r.routes.dtype);
    uint8_t *want = fx_oracle_rows(&x->m, v, prompt, 7, 6, r.routes.dtype);
    ck_assert_uint_ge((size_t)r.routes.shape[0], 6);
    ck_assert_int_eq(memcmp(want, r.routes.data, 6 * L * K * isz), 0);
    free(want);
    cJSON_Delete(sp);
}

/* The trainer speaks both forms: each syncs twice and verifies against engines of its form. */
START_TEST(trainer_speaks_the_form_of_its_engines)
{
    sfx x;
    start(&x, _i, _i);
    sfx_sync(&x, 1, 1);
    sfx_assert_clean(&x);
    sfx_sync(&x, 2, 2);
    sfx_assert_clean(&x);
    assert_routes_at(&x, 2);
    cJSON *st = sfx_state(&x, 0);
    const cJSON *ii = cJSON_GetObjectItemCaseSensitive(st, "init_info");
    ck_assert_ptr_nonnull(ii);
    const cJSON *packed = cJSON_GetObjectItemCaseSensitive(ii, "packed");
    if (_i == 0) {
        ck_assert(cJSON_IsTrue(packed));
        ck_assert_int_eq(
            cJSON_GetObjectItemCaseSensitive(ii, "packed_buffer_size_bytes")->valuedouble,
            256 << 10);
        ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(ii, "packed_num_buffers")->valueint, 2);
    } else {
        ck_assert_ptr_null(packed);
    }
    cJSON_Delete(st);
    sfx_stop(&x);
}
END_TEST

/* The old shape to a current engine (packed per round: every bucket refused), and the current
 * shape to an old engine (packed in the init info: init refused); the engine stays on its
 * version either way. */
START_TEST(the_other_form_is_refused_naming_the_moved_key)
{
    sfx x;
    start(&x, _i, 1 - _i);
    sfx_sync(&x, 1, 1);
    const sr_check *c = sfx_check(&x, "sync.wire_version");
    ck_assert_msg(c, "no sync.wire_version (%zu checks: %s)", x.r.n_checks,
                  x.r.n_checks ? x.r.checks[0].name : "");
    ck_assert_msg(strstr(c->message, "unexpected keyword argument 'packed'"), "%s", c->message);
    ck_assert_msg(strstr(c->message, _i == 0 ? "moved 'packed' to the init_info"
                                             : "rides in every update_info"),
                  "%s", c->message);
    ck_assert(!x.r.completed);
    ck_assert_int_eq((int)sfx_state_num(&x, 0, "weight_version", NULL), 0);
    /* A refused init sends no update; a refused bucket's update is finished and discarded. */
    ck_assert_int_eq(fx_count(&x.f, 0, "start_weight_update"), _i == 0 ? 1 : 0);
    assert_routes_at(&x, 0);
    sfx_stop(&x);
}
END_TEST

static Suite *api_suite(void)
{
    Suite *s = suite_create("sync_vllm_api");
    TCase *tc = tcase_create("sync_vllm_api");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, trainer_speaks_the_form_of_its_engines, 0, 2);
    tcase_add_loop_test(tc, the_other_form_is_refused_naming_the_moved_key, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(api_suite());
    curl_global_cleanup();
    return rc;
}
