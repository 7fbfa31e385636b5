/*
 * unit.rollout_storage: where a rollout's routes live (run/rollout.h, "Ownership"). A result's
 * routes block goes back to its client's block cache when the result is released, and the next
 * batch's rollouts decode into those very blocks (counted by the cache, not by page faults);
 * results may be released in any order and after their client is gone; a result whose routes
 * were replaced does not give the replacement to the cache. Real mock engines over loopback.
 */
#include <curl/curl.h>

#include "client_fixture.h"
#include "run/rollout.h"

#define CFG_CLEAN                                                                                  \
    "{\"seed\":23,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":16,\"topk\":2,\"eos_id\":2,"    \
    "\"eos_rate\":0.15}}"
#define N 16

typedef struct batch {
    sr_rollout_config cfg[N];
    cJSON *sampling;
    char session[N][32];
    int32_t prompt[N][16];
} batch;

/* N rollouts of 2..4 turns with prompts of 3..9 tokens, each with its own session and seed. */
static void batch_init(batch *b)
{
    memset(b, 0, sizeof *b);
    b->sampling = cJSON_Parse("{\"max_tokens\":6,\"logprobs\":0}");
    for (int i = 0; i < N; i++) {
        sr_rollout_config c = SR_ROLLOUT_CONFIG_INIT;
        c.prompt_len = 3 + (size_t)(i % 7);
        for (size_t p = 0; p < c.prompt_len; p++)
            b->prompt[i][p] = (int32_t)((i * 7 + (int)p * 13) % 64);
        snprintf(b->session[i], sizeof b->session[i], "storage-%d", i);
        c.prompt = b->prompt[i];
        c.session_id = b->session[i];
        c.sampling_params = b->sampling;
        c.routes = 1;
        c.append_eos_after_stop = 1;
        c.eos_id = 2;
        c.env = (sr_rollout_env){500 + (uint64_t)i, 2 + i % 3, 2, 4, 64};
        b->cfg[i] = c;
    }
}

static sr_block_cache_stats cache_stats(sr_block_cache *c)
{
    sr_block_cache_stats s;
    sr_block_cache_stats_of(c, &s);
    return s;
}

static void run(sr_rollout_result *res, const batch *b, const fx *f, int limit)
{
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run_batch(res, b->cfg, N, f->client, limit, &e), e);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(res[i].routes.ndim, 3);
        ck_assert_ptr_eq(res[i].routes_block, res[i].routes.data);
        ck_assert_ptr_eq(res[i].routes_cache, sr_client_blocks(f->conn));
        ck_assert_uint_ge(res[i].routes_cap, res[i].routes.nbytes);
    }
}

/* A batch released (in reverse order) gives its N blocks to the cache; the same batch again
 * (another thread count) takes all N of them, decodes into them, and gets the same rollouts. */
START_TEST(the_next_batch_decodes_into_the_released_blocks)
{
    fx f;
    fx_start(&f, 2, CFG_CLEAN, NULL);
    static batch b;
    batch_init(&b);
    static sr_rollout_result a[N], r[N];
    sr_ndarray want[N];
    void *blocks[N];
    sr_block_cache *c = sr_client_blocks(f.conn);
    run(a, &b, &f, 4);
    sr_err e = SR_ERR_INIT;
    for (int i = 0; i < N; i++) {
        ck_assert_sr_ok(sr_ndarray_alloc(&want[i], a[i].routes.dtype, 3, a[i].routes.shape, &e), e);
        memcpy(want[i].data, a[i].routes.data, a[i].routes.nbytes);
        blocks[i] = a[i].routes_block;
    }
    sr_block_cache_stats s0 = cache_stats(c);
    for (int i = N - 1; i >= 0; i--)
        sr_rollout_result_release(&a[i]);
    sr_block_cache_stats s1 = cache_stats(c);
    ck_assert_uint_eq(s1.kept - s0.kept, N);
    ck_assert_uint_eq(s1.blocks, s0.blocks + N);
    run(r, &b, &f, 3);
    sr_block_cache_stats s2 = cache_stats(c);
    ck_assert_uint_eq(s2.hits - s1.hits, N);
    ck_assert_uint_eq(s2.misses, s1.misses);
    ck_assert_uint_eq(s2.blocks, s0.blocks);
    for (int i = 0; i < N; i++) {
        int reused = 0;
        for (int j = 0; j < N; j++)
            reused |= r[i].routes.data == blocks[j];
        ck_assert_msg(reused, "rollout %d decoded into a block no released result gave back", i);
        ck_assert(sr_ndarray_equal(&r[i].routes, &want[i]));
        sr_rollout_result_release(&r[i]);
        sr_ndarray_release(&want[i]);
    }
    cJSON_Delete(b.sampling);
    fx_stop(&f);
}
END_TEST

/* Results released after their client was freed (odd ones first): the closed cache frees their
 * blocks instead of keeping them, and the holder's reference keeps it valid until the last. */
START_TEST(results_outlive_their_client)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    static batch b;
    batch_init(&b);
    static sr_rollout_result a[N];
    run(a, &b, &f, 4);
    sr_block_cache *c = sr_block_cache_ref(sr_client_blocks(f.conn));
    sr_block_cache_stats s0 = cache_stats(c);
    fx_stop(&f);
    for (int odd = 1; odd >= 0; odd--)
        for (int i = odd; i < N; i += 2)
            sr_rollout_result_release(&a[i]);
    sr_block_cache_stats s1 = cache_stats(c);
    ck_assert_uint_eq(s1.kept, s0.kept);
    ck_assert_uint_eq(s1.freed - s0.freed, N);
    ck_assert_uint_eq(s1.blocks, 0);
    sr_block_cache_unref(c);
    cJSON_Delete(b.sampling);
}
END_TEST

/* A caller that replaced a result's routes (as a test may) releases the replacement as its own,
 * even when it released the old array first: the result owns the block (routes borrow it), so
 * the block is not freed before the result is released (no address of it can come back from a
 * later malloc), and the cache receives that block with the size finalize gave. */
START_TEST(replaced_routes_are_not_given_to_the_cache)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    static batch b;
    batch_init(&b);
    static sr_rollout_result a[N];
    run(a, &b, &f, 2);
    sr_block_cache *c = sr_client_blocks(f.conn);
    sr_block_cache_stats s0 = cache_stats(c);
    ck_assert_int_eq(a[0].routes.owned, 0);
    ck_assert_ptr_eq(a[0].routes.data, a[0].routes_block);
    void *block = a[0].routes_block;
    size_t cap = a[0].routes_cap;
    ck_assert_uint_ge(cap, a[0].routes.nbytes);
    sr_ndarray other;
    sr_err e = SR_ERR_INIT;
    int64_t shape[3] = {1, 2, 2};
    sr_ndarray_release(&a[0].routes); /* first: borrowed, so the block stays allocated */
    ck_assert_ptr_eq(a[0].routes_block, block);
    ck_assert_sr_ok(sr_ndarray_alloc(&other, SR_DTYPE_UINT8, 3, shape, &e), e);
    a[0].routes = other;
    sr_rollout_result_release(&a[0]);
    sr_block_cache_stats s1 = cache_stats(c);
    ck_assert_uint_eq(s1.kept, s0.kept + 1);
    ck_assert_uint_eq(s1.bytes, s0.bytes + cap);
    ck_assert_uint_eq(s1.freed, s0.freed);
    for (int i = 1; i < N; i++)
        sr_rollout_result_release(&a[i]);
    ck_assert_uint_eq(cache_stats(c).kept, s0.kept + N);
    cJSON_Delete(b.sampling);
    fx_stop(&f);
}
END_TEST

static Suite *storage_suite(void)
{
    Suite *s = suite_create("rollout_storage");
    TCase *tc = tcase_create("storage");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, the_next_batch_decodes_into_the_released_blocks);
    tcase_add_test(tc, results_outlive_their_client);
    tcase_add_test(tc, replaced_routes_are_not_given_to_the_cache);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(storage_suite());
    curl_global_cleanup();
    return rc;
}
