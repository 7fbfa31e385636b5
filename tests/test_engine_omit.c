/*
 * vLLM's routed-expert prefix omission in the mock engine (engines.omit_prefix_routes;
 * vllm-project/vllm#57025 and #57966, --enable-omit-prefix-routed-experts): the cache-hit rule
 * of harness/engine/prefix_omit.h (whole blocks, at most P - 1 tokens: vLLM's
 * KVCacheManager.get_computed_blocks, vllm/v1/core/kv_cache_manager.py @ 003df2961dd8), the
 * bounded session table, and over real HTTP: the session requirement (engine.session_required),
 * rows from max(start, num_cached_tokens) (read from the reply's "syncroll" spans, which begin
 * at the first row sent) and the option's dialect rule. The fault omit_prefix_readmit is fired
 * in test_engine_routes.c.
 */
#include "engine/engine.h"
#include "engine/prefix_omit.h"
#include "engine_util.h"
#include "omit_util.h"

#define OCFG                                                                                       \
    "{\"dialect\":\"vllm\",\"omit_prefix_routes\":true,\"seed\":5,\"model\":{\"layers\":2}}"
#define PATH "/inference/v1/generate"

START_TEST(hit_is_whole_blocks_and_at_most_p_minus_1)
{
    int32_t held[40], prompt[40];
    for (int i = 0; i < 40; i++)
        held[i] = prompt[i] = i + 3;
    /* 23 tokens in common: one whole block of 16. */
    ck_assert_int_eq(sr_prefix_hit(held, 23, prompt, 40, 16), 16);
    /* The whole prompt held: the last prompt token is recomputed, 31 -> one block at 16. */
    ck_assert_int_eq(sr_prefix_hit(held, 40, prompt, 32, 16), 16);
    /* P = 33 held entirely: 32 tokens may hit, two blocks. */
    ck_assert_int_eq(sr_prefix_hit(held, 40, prompt, 33, 16), 32);
    /* A difference inside the second block keeps the first. */
    prompt[20] = 999;
    ck_assert_int_eq(sr_prefix_hit(held, 40, prompt, 40, 16), 16);
    /* ... inside the first: nothing. */
    prompt[3] = 999;
    ck_assert_int_eq(sr_prefix_hit(held, 40, prompt, 40, 16), 0);
    /* Block 1: the common prefix itself, capped at P - 1. */
    ck_assert_int_eq(sr_prefix_hit(held, 40, prompt, 40, 1), 3);
    ck_assert_int_eq(sr_prefix_hit(held, 40, held, 7, 1), 6);
    ck_assert_int_eq(sr_prefix_hit(held, 40, prompt, 0, 16), 0);
}
END_TEST

START_TEST(table_evicts_the_least_recently_used_session)
{
    sr_prefix_table *t;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_prefix_table_new(&t, 0, &err), err);
    int32_t tok[20];
    for (int i = 0; i < 20; i++)
        tok[i] = i;
    char sid[32];
    for (int i = 0; i < SR_PREFIX_MAX_SESSIONS; i++) {
        snprintf(sid, sizeof(sid), "s%d", i);
        ck_assert_sr_ok(sr_prefix_record(t, sid, tok, 18, tok + 18, 1, &err), err);
    }
    /* s0 is used again, so s1 is now the least recently used. */
    ck_assert_int_eq(sr_prefix_cached(t, "s0", tok, 20, 16), 16);
    ck_assert_int_eq(sr_prefix_evictions(t), 0);
    ck_assert_sr_ok(sr_prefix_record(t, "new", tok, 18, tok + 18, 1, &err), err);
    ck_assert_int_eq(sr_prefix_evictions(t), 1);
    ck_assert_int_eq(sr_prefix_cached(t, "s1", tok, 20, 16), 0); /* evicted: a miss */
    ck_assert_int_eq(sr_prefix_cached(t, "s0", tok, 20, 16), 16);
    ck_assert_int_eq(sr_prefix_cached(t, "new", tok, 20, 16), 16);
    /* A session records its latest request only. */
    ck_assert_sr_ok(sr_prefix_record(t, "s0", tok + 1, 5, NULL, 0, &err), err);
    ck_assert_int_eq(sr_prefix_cached(t, "s0", tok, 20, 1), 0);
    sr_prefix_table_free(t);
}
END_TEST

START_TEST(table_bounds_the_tokens_it_records)
{
    sr_prefix_table *t;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_prefix_table_new(&t, 50, &err), err);
    int32_t tok[64];
    for (int i = 0; i < 64; i++)
        tok[i] = i;
    ck_assert_sr_ok(sr_prefix_record(t, "a", tok, 20, NULL, 0, &err), err);
    ck_assert_sr_ok(sr_prefix_record(t, "b", tok, 20, NULL, 0, &err), err);
    ck_assert_int_eq(sr_prefix_cached(t, "b", tok, 64, 1), 20);
    /* 20 + 20 + 20 > 50: a, the least recently used, goes. */
    ck_assert_sr_ok(sr_prefix_record(t, "c", tok, 20, NULL, 0, &err), err);
    ck_assert_int_eq(sr_prefix_evictions(t), 1);
    ck_assert_int_eq(sr_prefix_cached(t, "a", tok, 64, 1), 0);
    ck_assert_int_eq(sr_prefix_cached(t, "b", tok, 64, 1), 20);
    /* A session's own new record replaces its old one without evicting others: 20 + 30. */
    ck_assert_sr_ok(sr_prefix_record(t, "c", tok, 30, NULL, 0, &err), err);
    ck_assert_int_eq(sr_prefix_evictions(t), 1);
    ck_assert_int_eq(sr_prefix_cached(t, "c", tok, 64, 1), 30);
    /* Longer than the bound: not kept, and the session's old record goes too. */
    ck_assert_sr_ok(sr_prefix_record(t, "b", tok, 51, NULL, 0, &err), err);
    ck_assert_int_eq(sr_prefix_cached(t, "b", tok, 64, 1), 0);
    ck_assert_int_eq(sr_prefix_cached(t, "c", tok, 64, 1), 30);
    sr_prefix_table_free(t);
}
END_TEST

/* The reply's 4 generated tokens appended to ids[0..n). */
static int append_output(const hresp *r, int32_t *ids, int n)
{
    cJSON *doc = cJSON_Parse(r->body.data);
    ck_assert_ptr_nonnull(doc);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "choices"), 0);
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(c0, "token_ids")) ids[n++] = (int32_t)t->valueint;
    cJSON_Delete(doc);
    return n;
}

START_TEST(rows_start_at_the_cached_prefix_of_the_session)
{
    eng e;
    eng_start(&e, OCFG);
    int32_t ids[128];
    for (int i = 0; i < 128; i++)
        ids[i] = 10 + i;
    hresp r;
    /* vllm#57025 requires a session identity. */
    gen(&r, &e, NULL, ids, 20, 0);
    eng_expect_answer(&r, 400, "engine.session_required", "X-Session-ID");
    hresp_free(&r);
    /* Turn 1: nothing cached. */
    gen(&r, &e, "a", ids, 20, 0);
    ck_assert_int_eq(first_row(&r), 0);
    int n = append_output(&r, ids, 20);
    hresp_free(&r);
    ck_assert_int_eq(n, 24);
    /* Turn 2: 20 prompt + 3 computed outputs = 23 tokens in common -> one block, 16. */
    for (int i = n; i < 40; i++)
        ids[i] = 500 + i;
    gen(&r, &e, "a", ids, 40, 0);
    ck_assert_int_eq(first_row(&r), 16);
    hresp_free(&r);
    /* The same prompt again: the record is now turn 2's 43 computed tokens, of which 39 may
     * hit -> 32; a start past the hit wins: max(start, num_cached_tokens). */
    gen(&r, &e, "a", ids, 40, 0);
    ck_assert_int_eq(first_row(&r), 32);
    hresp_free(&r);
    gen(&r, &e, "a", ids, 40, 36);
    ck_assert_int_eq(first_row(&r), 36);
    hresp_free(&r);
    /* The same 33-token prompt again in session b: 32 tokens may hit (the last is recomputed),
     * so rows start at 32 = P - 1. Another session shares nothing (the id salts the cache). */
    gen(&r, &e, "b", ids, 33, 0);
    ck_assert_int_eq(first_row(&r), 0);
    hresp_free(&r);
    gen(&r, &e, "b", ids, 33, 0);
    ck_assert_int_eq(first_row(&r), 32);
    hresp_free(&r);
    gen(&r, &e, "c", ids, 33, 0);
    ck_assert_int_eq(first_row(&r), 0);
    hresp_free(&r);
    eng_stop(&e);
}
END_TEST

START_TEST(omission_needs_the_vllm_dialect)
{
    const char *cfg = "{\"dialect\":\"sglang\",\"omit_prefix_routes\":true}";
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_int_eq(sr_engine_config_parse(&c, cfg, strlen(cfg), "t", 0, &err),
                     SR_E_ENGINE_CONFIG);
    ck_assert_msg(strstr(err.msg, "omit_prefix_routes needs the vllm dialect"), "%s", err.msg);
    cfg = "{\"dialect\":\"vllm\",\"omit_prefix_routes\":true,\"prefix_block\":0}";
    ck_assert_int_eq(sr_engine_config_parse(&c, cfg, strlen(cfg), "t", 0, &err),
                     SR_E_ENGINE_CONFIG);
    cfg = "{\"dialect\":\"vllm\",\"omit_prefix_routes\":true}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, cfg, strlen(cfg), "t", 0, &err), err);
    ck_assert_int_eq(c.omit_prefix, 1);
    ck_assert_int_eq(c.prefix_block, SR_PREFIX_BLOCK_DEFAULT);
    /* `syncroll engine --dialect sglang` over such a config: the engine refuses to start. */
    c.dialect = SR_DIALECT_SGLANG;
    sr_engine *e = NULL;
    ck_assert_int_eq(sr_engine_new(&e, &c, &err), SR_E_ENGINE_CONFIG);
    ck_assert_ptr_null(e);
    sr_engine_config_release(&c);
}
END_TEST

static Suite *omit_suite(void)
{
    Suite *s = suite_create("engine_omit");
    TCase *tc = tcase_create("omit");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hit_is_whole_blocks_and_at_most_p_minus_1);
    tcase_add_test(tc, table_evicts_the_least_recently_used_session);
    tcase_add_test(tc, table_bounds_the_tokens_it_records);
    tcase_add_test(tc, rows_start_at_the_cached_prefix_of_the_session);
    tcase_add_test(tc, omission_needs_the_vllm_dialect);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(omit_suite)
