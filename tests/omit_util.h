/*
 * Helpers of the prefix-omission engine tests (vllm-project/vllm#57025; test_engine_omit.c,
 * test_engine_routes.c): a vllm generate in a session, and the first route row a reply sent.
 */
#ifndef SR_TEST_OMIT_UTIL_H
#define SR_TEST_OMIT_UTIL_H

#include "engine_util.h"

#define PATH "/inference/v1/generate"

/* A generate of `n` tokens ids[0..n) in `session` asking rows from `start`; returns the reply. */
static inline void gen(hresp *r, const eng *e, const char *session, const int32_t *ids, int n,
                       int start)
{
    sr_buf b = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_buf_printf(&b, &err, "{\"token_ids\":["), err);
    for (int i = 0; i < n; i++)
        ck_assert_sr_ok(sr_buf_printf(&b, &err, "%s%d", i ? "," : "", (int)ids[i]), err);
    ck_assert_sr_ok(sr_buf_printf(&b, &err,
                                  "],\"sampling_params\":{\"max_tokens\":4,\"ignore_eos\":true,"
                                  "\"routed_experts_prompt_start\":%d}}",
                                  start),
                    err);
    http_req(r, NULL, e, "POST", PATH, b.data, session, 20000);
    sr_buf_release(&b);
}

/* The first row the reply sent: its "syncroll" spans begin there (gen.h). */
static inline long long first_row(const hresp *r)
{
    ck_assert_msg(r->status == 200, "status %ld: %s", r->status, r->body.data);
    const char *p = strstr(r->body.data, "\"rows\":[[");
    ck_assert_msg(p != NULL, "no spans in %s", r->body.data);
    return atoll(p + 9);
}

#endif /* SR_TEST_OMIT_UTIL_H */
