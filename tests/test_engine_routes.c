/* The route-fault grammar (spec/fault_grammar.h) at a real engine: what each selection and
 * action does to the rows a real HTTP client reads, that an alias kind is exactly its rule, and
 * that mark_partial answers "aborted" in the dialect's form; and omit_prefix_readmit, the fault of
 * vllm#57025's prefix omission (omit_util.h). */
#include "engine_faults_util.h"
#include "omit_util.h"
#include "spec/dialect.h"

#define ROW 8 /* bytes of one route row: 2 layers x top-4, uint8 */

/* The faulted reply (first request) and a normal one (second), routes and row counts. */
typedef struct pair {
    hresp bad, good;
    sr_buf rb, rg;
    int64_t nb, ng;
} pair;

static void routes_of(const hresp *r, sr_buf *out, int64_t *rows)
{
    sr_splicer *sp;
    sr_fields *reg;
    const sr_splice_result *res;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(splice_body(&sp, &reg, &r->body, &res, &err), err);
    const sr_splice_entry *re = splice_find(res, "routed_experts");
    ck_assert_ptr_nonnull(re);
    *rows = re->kind == SR_SPLICE_NULL ? -1 : re->array.shape[0];
    sr_buf_reset(out);
    sr_buf_append(out, re->array.data ? re->array.data : "", re->array.nbytes, NULL);
    sr_buf_append(out, "", 0, NULL);
    sr_splicer_free(sp);
    sr_fields_free(reg);
}

/* Starts an engine with `fault`, optionally syncs it to version 1, and takes both replies. */
static void run_pair(pair *p, const char *fault, int sync)
{
    eng e;
    memset(p, 0, sizeof(*p));
    start_with(&e, fault);
    if (sync) {
        hresp r;
        http_post(&r, &e, "/update_weights", "{\"update_info\":{\"target_version\":1}}");
        ck_assert_int_eq(r.status, 200);
        hresp_free(&r);
    }
    http_post(&p->bad, &e, "/skyrl/v1/generate", REQ);
    http_post(&p->good, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(p->bad.status, 200);
    ck_assert_int_eq(p->good.status, 200);
    routes_of(&p->bad, &p->rb, &p->nb);
    routes_of(&p->good, &p->rg, &p->ng);
    eng_stop(&e);
}

static void pair_free(pair *p)
{
    hresp_free(&p->bad);
    hresp_free(&p->good);
    sr_buf_release(&p->rb);
    sr_buf_release(&p->rg);
}

/* Each alias kind answers byte for byte what its rule, written out as a "routes" fault, does. */
START_TEST(test_aliases_are_their_rules)
{
    static const struct {
        const char *alias, *rule;
        int sync;
    } cases[] = {
        {"routes_all_zero", "\"action\":{\"do\":\"zero\"}", 0},
        {"duplicated_output_rows",
         "\"select\":{\"region\":\"output\",\"rows\":{\"from\":1,\"stride\":2}},"
         "\"action\":{\"do\":\"repeat_previous\"}",
         0},
        {"routes_dropped", "\"action\":{\"do\":\"null\"}", 0},
        {"pd_decode_replica", "\"select\":{\"region\":\"prompt\"},\"action\":{\"do\":\"zero\"}", 0},
        {"stale_prefix_cache", "\"select\":{\"region\":\"prompt\"},\"action\":{\"do\":\"stale\"}",
         1},
        {"rows_p_plus_g", "\"action\":{\"do\":\"append_last\"}", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char a[128], r[512];
        snprintf(a, sizeof(a), "{\"kind\":\"%s\",\"nth\":1}", cases[i].alias);
        snprintf(r, sizeof(r), "{\"kind\":\"routes\",\"nth\":1,%s}", cases[i].rule);
        pair pa, pr;
        run_pair(&pa, a, cases[i].sync);
        run_pair(&pr, r, cases[i].sync);
        ck_assert_msg(pa.nb == pr.nb, "%s: %lld rows, its rule %lld", cases[i].alias,
                      (long long)pa.nb, (long long)pr.nb);
        ck_assert_msg(pa.rb.len == pr.rb.len && memcmp(pa.rb.data, pr.rb.data, pa.rb.len) == 0,
                      "%s: rows differ from its rule's", cases[i].alias);
        ck_assert_msg(pa.rb.len != pa.rg.len || memcmp(pa.rb.data, pa.rg.data, pa.rb.len) != 0 ||
                          pa.nb < 0,
                      "%s changed nothing", cases[i].alias);
        pair_free(&pa);
        pair_free(&pr);
    }
}
END_TEST

/* A list of rows of a region and one layer: exactly those cells change. REQ: P = 6, start 2,
 * 8 tokens, so the reply holds positions 2..12 (row index p - 2). */
START_TEST(test_selection_rows_and_layers)
{
    pair p;
    run_pair(&p,
             "{\"kind\":\"routes\",\"nth\":1,\"select\":{\"region\":\"output\",\"rows\":[0,2],"
             "\"layers\":[1]},\"action\":{\"do\":\"constant\",\"value\":39}}",
             0);
    ck_assert_int_eq(p.nb, p.ng);
    for (int pos = 2; pos < 13; pos++)
        for (int c = 0; c < ROW; c++) {
            unsigned char v = (unsigned char)p.rb.data[(pos - 2) * ROW + c];
            int hit = (pos == 6 || pos == 8) && c >= 4;
            ck_assert_msg(hit ? v == 39 : v == (unsigned char)p.rg.data[(pos - 2) * ROW + c],
                          "position %d cell %d is %u", pos, c, v);
        }
    pair_free(&p);
    /* Blocks of the whole reply: indices i % 4 < 1, i.e. positions 4, 8, 12. */
    run_pair(&p,
             "{\"kind\":\"routes\",\"nth\":1,\"select\":{\"rows\":{\"block\":1,\"every\":4}},"
             "\"action\":{\"do\":\"zero\"}}",
             0);
    for (int pos = 2; pos < 13; pos++) {
        const char *row = p.rb.data + (pos - 2) * ROW;
        if (pos % 4 == 0)
            ck_assert_mem_eq(row, "\0\0\0\0\0\0\0\0", ROW);
        else
            ck_assert_mem_eq(row, p.rg.data + (pos - 2) * ROW, ROW);
    }
    pair_free(&p);
    /* The turn boundary is the route start's row (position 2) alone. */
    run_pair(&p,
             "{\"kind\":\"routes\",\"nth\":1,\"select\":{\"region\":\"turn_boundary\"},"
             "\"action\":{\"do\":\"zero\"}}",
             0);
    ck_assert_mem_eq(p.rb.data, "\0\0\0\0\0\0\0\0", ROW);
    ck_assert_mem_eq(p.rb.data + ROW, p.rg.data + ROW, p.rg.len - ROW);
    pair_free(&p);
}
END_TEST

START_TEST(test_row_actions)
{
    pair p;
    run_pair(&p, "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"shift\",\"k\":1}}", 0);
    ck_assert_mem_eq(p.rb.data, p.rg.data, ROW); /* the first row has nothing before it */
    ck_assert_mem_eq(p.rb.data + ROW, p.rg.data, p.rg.len - ROW);
    pair_free(&p);
    run_pair(&p,
             "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"swap_layers\",\"layers\":[0,1]}}",
             0);
    for (int r = 0; r < 11; r++) {
        ck_assert_mem_eq(p.rb.data + r * ROW, p.rg.data + r * ROW + 4, 4);
        ck_assert_mem_eq(p.rb.data + r * ROW + 4, p.rg.data + r * ROW, 4);
    }
    pair_free(&p);
    run_pair(&p, "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"drop_first\"}}", 0);
    ck_assert_int_eq(p.nb, p.ng - 1);
    ck_assert_mem_eq(p.rb.data, p.rg.data + ROW, (size_t)p.nb * ROW);
    pair_free(&p);
    run_pair(&p, "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"drop_last\"}}", 0);
    ck_assert_int_eq(p.nb, p.ng - 1);
    ck_assert_mem_eq(p.rb.data, p.rg.data, (size_t)p.nb * ROW);
    pair_free(&p);
    /* After a sync to 1, rows of version 0 (the weights before it) under a reply claiming 1. */
    pair q;
    run_pair(&p,
             "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"weight_version\",\"version\":0}}",
             1);
    run_pair(&q, "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"stale\"}}", 1);
    ck_assert_ptr_nonnull(strstr(p.bad.body.data, "\"rows\":[[2,13,1]]"));
    ck_assert_mem_eq(p.rb.data, q.rb.data, p.rb.len);
    ck_assert(memcmp(p.rb.data, p.rg.data, p.rg.len) != 0);
    pair_free(&p);
    pair_free(&q);
}
END_TEST

/* truncate keeps the rows of the first `tokens` tokens and every token: a reply that looks
 * whole; with partial (mark_partial) the tokens go too and the reply says it was aborted. */
START_TEST(test_truncate_and_mark_partial)
{
    pair p;
    run_pair(&p, "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"truncate\",\"tokens\":3}}",
             0);
    ck_assert_int_eq(p.nb, 6 + 3 - 1 - 2);
    ck_assert_mem_eq(p.rb.data, p.rg.data, (size_t)p.nb * ROW);
    ck_assert_ptr_nonnull(strstr(p.bad.body.data, "\"finish_reason\":\"length\""));
    pair_free(&p);
    run_pair(
        &p, "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"mark_partial\",\"tokens\":3}}", 0);
    ck_assert_int_eq(p.nb, 6);
    ck_assert_ptr_nonnull(strstr(p.bad.body.data, "\"finish_reason\":\"abort\""));
    ck_assert_ptr_nonnull(strstr(p.bad.body.data, "\"rows\":[[2,8,0]]"));
    pair_free(&p);
    /* SGLang's form: meta_info.finish_reason {"type": "abort"}, three output ids. */
    eng e;
    eng_start(&e, "{" BASE_MODEL ",\"dialect\":\"sglang\",\"faults\":[{\"kind\":\"routes\","
                  "\"nth\":1,\"action\":{\"do\":\"mark_partial\",\"tokens\":3}}]}");
    hresp r;
    http_post(&r, &e, "/generate",
              "{\"input_ids\":[5,6,7,8,9,10],\"sampling_params\":{\"max_new_tokens\":8},"
              "\"return_routed_experts\":true}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"finish_reason\":{\"type\":\"abort\","));
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"completion_tokens\":3"));
    hresp_free(&r);
    eng_stop(&e);
}
END_TEST

/* A partial reply with 0 tokens: the request was aborted before its first forward pass, so it
 * carries no tokens and no rows at all, the field null (vllm-project/vime#49). */
START_TEST(test_mark_partial_zero_tokens_has_no_routes)
{
    pair p;
    run_pair(
        &p, "{\"kind\":\"routes\",\"nth\":1,\"action\":{\"do\":\"mark_partial\",\"tokens\":0}}", 0);
    ck_assert_int_eq(p.nb, -1);
    ck_assert_int_eq(p.ng, 6 + 8 - 1 - 2);
    ck_assert_ptr_nonnull(strstr(p.bad.body.data, "\"token_ids\":[],\"finish_reason\":\"abort\""));
    pair_free(&p);
}
END_TEST

/* Starts an engine whose every logprob is non-finite, with `fault`, on `stack` ("2079" or
 * "2086") and `dialect`. */
static void start_nonfinite(eng *e, const char *fault, const char *stack, const char *dialect)
{
    char cfg[1024];
    snprintf(cfg, sizeof(cfg),
             "{\"seed\":3,\"model\":{\"vocab\":1000,\"layers\":2,\"experts\":40,\"topk\":4,"
             "\"eos_id\":-1,\"nonfinite_rate\":1},\"stack\":\"%s\",\"dialect\":\"%s\","
             "\"faults\":[%s]}",
             stack, dialect, fault);
    eng_start(e, cfg);
}

/* select.field logprobs: null writes the selected non-finite values as null (the rest keep the
 * clamp), and the routes are not touched. */
START_TEST(test_logprobs_null_selects_tokens)
{
    eng e;
    hresp bad, good;
    start_nonfinite(&e,
                    "{\"kind\":\"routes\",\"nth\":1,\"select\":{\"field\":\"logprobs\","
                    "\"region\":\"output\",\"rows\":[1,3]},\"action\":{\"do\":\"null\"}}",
                    "2079", "skyrl");
    http_post(&bad, &e, "/skyrl/v1/generate", REQ);
    http_post(&good, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(bad.status, 200);
    ck_assert_ptr_nonnull(
        strstr(bad.body.data, "\"content\":[{\"logprob\":-9999.0},{\"logprob\":null},"
                              "{\"logprob\":-9999.0},{\"logprob\":null},{\"logprob\":-9999.0},"));
    ck_assert_ptr_null(strstr(good.body.data, "null}"));
    sr_buf rb = SR_BUF_INIT, rg = SR_BUF_INIT;
    int64_t nb, ng;
    routes_of(&bad, &rb, &nb);
    routes_of(&good, &rg, &ng);
    ck_assert_int_eq(nb, ng);
    ck_assert_mem_eq(rb.data, rg.data, (size_t)nb * ROW);
    sr_buf_release(&rb), sr_buf_release(&rg);
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);
}
END_TEST

/* select.field logprobs, drop: the reply has no logprobs in the dialect's form; the later stack's
 * capture path reads them and answers the reference's own 500. */
START_TEST(test_logprobs_drop)
{
    static const char *drop = "{\"kind\":\"routes\",\"nth\":1,\"select\":{\"field\":"
                              "\"logprobs\"},\"action\":{\"do\":\"drop\"}}";
    eng e;
    hresp bad, good;
    start_nonfinite(&e, drop, "2079", "skyrl");
    http_post(&bad, &e, "/skyrl/v1/generate", REQ);
    http_post(&good, &e, "/skyrl/v1/generate", REQ);
    ck_assert_int_eq(bad.status, 200);
    ck_assert_ptr_null(strstr(bad.body.data, "\"logprobs\""));
    ck_assert_ptr_nonnull(strstr(good.body.data, "\"logprobs\":{\"content\":["));
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    static const char *sgl = "{\"input_ids\":[5,6,7,8,9,10],\"sampling_params\":"
                             "{\"max_new_tokens\":8},\"return_logprob\":true}";
    start_nonfinite(&e, drop, "2079", "sglang");
    http_post(&bad, &e, "/generate", sgl);
    http_post(&good, &e, "/generate", sgl);
    ck_assert_int_eq(bad.status, 200);
    ck_assert_ptr_null(strstr(bad.body.data, "output_token_logprobs"));
    ck_assert_ptr_nonnull(strstr(good.body.data, "\"output_token_logprobs\":[[-9999.0,"));
    hresp_free(&bad), hresp_free(&good), eng_stop(&e);

    start_nonfinite(&e, drop, "2086", "skyrl");
    http_post(&bad, &e, "/skyrl/v1/generate",
              "{\"sampling_params\":{\"max_tokens\":8,\"top_k\":4},\"model\":\"default\","
              "\"token_ids\":[5,6,7,8,9,10],\"return_sample_support\":true}");
    ck_assert_int_eq(bad.status, 500);
    ck_assert_ptr_nonnull(
        strstr(bad.body.data, "AttributeError: 'NoneType' object has no attribute 'token_ids'"));
    hresp_free(&bad), eng_stop(&e);
}
END_TEST

/* vllm#57025's omission with the fault omit_prefix_readmit: a request preempted after its prefill
 * records num_cached_tokens again at re-admission, counting its own prompt blocks (what
 * vllm#57966 avoids by keeping the first admission's). */
START_TEST(test_omit_prefix_readmit)
{
    eng e;
    eng_start(&e, "{\"dialect\":\"vllm\",\"omit_prefix_routes\":true,\"prefix_block\":8,"
                  "\"faults\":[{\"kind\":\"omit_prefix_readmit\",\"turn\":[2]}]}");
    int32_t ids[64];
    for (int i = 0; i < 64; i++)
        ids[i] = 7 + i;
    hresp r;
    gen(&r, &e, "s", ids, 10, 0);
    ck_assert_int_eq(first_row(&r), 0);
    hresp_free(&r);
    /* Turn 2 of 30 tokens (10 in common with turn 1): re-admitted, its own prompt hits, in
     * blocks of 8 up to P - 1 = 29 -> 24, past the 13 rows the caller holds. */
    gen(&r, &e, "s", ids + 20, 30, 13);
    ck_assert_int_eq(first_row(&r), 24);
    hresp_free(&r);
    eng_stop(&e);
}
END_TEST

static Suite *routes_suite(void)
{
    Suite *s = suite_create("engine_routes");
    TCase *tc = tcase_create("routes");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_aliases_are_their_rules);
    tcase_add_test(tc, test_selection_rows_and_layers);
    tcase_add_test(tc, test_row_actions);
    tcase_add_test(tc, test_truncate_and_mark_partial);
    tcase_add_test(tc, test_mark_partial_zero_tokens_has_no_routes);
    tcase_add_test(tc, test_logprobs_null_selects_tokens);
    tcase_add_test(tc, test_logprobs_drop);
    tcase_add_test(tc, test_omit_prefix_readmit);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(routes_suite)
