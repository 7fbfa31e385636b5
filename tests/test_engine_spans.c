/*
 * The weight-version spans of one generation (engine/gen.h) across many syncs.
 *
 * A request held open across n weight syncs is one generation job continued n times: a keep-mode
 * pause froze it after k tokens, a sync changed the weights, the resume continued it from token
 * k with the new ones (serve_gen.c calls sr_gen_continue with the tokens sampled so far). Over
 * HTTP the engine takes k from its decode clock, so how many tokens separate two syncs depends on
 * timing; here the job is driven directly, each sync at its own token (k = 1, 2, ..., n), so
 * every run yields n + 1 spans exactly. Each case then checks what the verifier relies on: every
 * route row the reply labels with a version is the oracle's row under that version, and the
 * "syncroll" rows of the body say the same spans.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gen.h"
#include "engine/request.h"
#include "sr_test.h"

#define P    4  /* prompt tokens */
#define MAXT 24 /* max_tokens: more than the 23 syncs of the longest case */
#define L    2  /* MoE layers */

/* The weights after the sync to version v: fingerprints that differ for every version. */
static void weights_of(sr_gen_weights *w, uint64_t *fps, int64_t v)
{
    w->version = v;
    w->global_fp = 0x9e3779b97f4a7c15ULL * (uint64_t)(v + 1);
    for (int l = 0; l < L; l++)
        fps[l] = 0xc2b2ae3d27d4eb4fULL * (uint64_t)(v + 1) + (uint64_t)l * 0x165667b19e3779f9ULL;
    w->layer_fps = fps;
}

typedef struct fixture {
    sr_oracle *o;
    int32_t li[L];
} fixture;

static void fixture_open(fixture *f)
{
    sr_oracle_model m = SR_ORACLE_MODEL_INIT;
    f->li[0] = 0, f->li[1] = 1;
    m.vocab = 1000;
    m.num_layers = L;
    m.layer_indices = f->li;
    m.experts = 64;
    m.topk = 4;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_new(&f->o, &m, &err), err);
}

/* Starts the job under version 0 and continues it at tokens 1..n under versions 1..n. */
static void held_across(sr_gen_job *j, const fixture *f, int n)
{
    sr_gen_limits lim = {1000, 64, 4096};
    const char *text = "{\"sampling_params\":{\"max_tokens\":24,\"ignore_eos\":true,\"logprobs\":0,"
                       "\"routed_experts_prompt_start\":0},\"token_ids\":[5,6,7,8]}";
    sr_gen_request q = SR_GEN_REQUEST_INIT;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_gen_request_parse(&q, text, strlen(text), &lim, &err), err);
    ck_assert_sr_ok(sr_gen_job_init(j, &q, f->o, 0, 1, NULL, NULL, 1 << 20, &err), err);
    uint64_t fps[L];
    sr_gen_weights w;
    weights_of(&w, fps, 0);
    ck_assert_sr_ok(sr_gen_run(j, f->o, &w, NULL, &err), err);
    ck_assert_int_eq(j->G, MAXT);
    for (int v = 1; v <= n; v++) {
        weights_of(&w, fps, v);
        ck_assert_sr_ok(sr_gen_continue(j, f->o, &w, v, &err), err);
    }
    ck_assert_int_eq(j->G, MAXT);
    ck_assert_int_eq(j->row_lo, 0);
    ck_assert_int_eq(j->row_hi, P + MAXT - 1);
}

/* 1 if route row `row` of the job is the oracle's row under version v. */
static int row_is(const sr_gen_job *j, const fixture *f, int64_t row, int64_t v)
{
    int32_t all[P + MAXT];
    memcpy(all, j->req.tokens, P * sizeof(int32_t));
    memcpy(all + P, j->tokens, MAXT * sizeof(int32_t));
    uint64_t fps[L];
    sr_gen_weights w;
    weights_of(&w, fps, v);
    unsigned char want[64];
    size_t rb = (size_t)L * 4 * sr_dtype_size(j->gen_dtype);
    ck_assert_uint_le(rb, sizeof(want));
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_routes(want, sizeof(want), NULL, j->gen_dtype, f->o, w.layer_fps, all,
                                     P + MAXT, (size_t)row, (size_t)row + 1, &err),
                    err);
    return memcmp(want, j->routes + (size_t)(row - j->row_lo) * rb, rb) == 0;
}

/* The "rows" array of the body's syncroll key, as text. */
static void body_rows(char *out, size_t cap, sr_gen_job *j, const fixture *f)
{
    sr_gen_ctx ctx = {f->o, "e", 1, 0, 4, 1, 1 << 20, NULL, 0, 0, SR_STACK_2079, 0, 0};
    sr_buf body = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_gen_body(&body, j, &ctx, &err), err);
    const char *a = strstr(body.data, "\"rows\":[");
    ck_assert_ptr_nonnull(a);
    a += strlen("\"rows\":");
    const char *b = strstr(a, "]]");
    ck_assert_ptr_nonnull(b);
    snprintf(out, cap, "%.*s", (int)(b + 2 - a), a);
    sr_buf_release(&body);
}

/* n syncs: n + 1 spans, the prompt's rows under version 0, the row of token k - 1's pass under
 * version k (1 <= k < n), the rest under version n; each labelled row is its version's oracle
 * row. No count of syncs merges two versions into one span (the list grows). */
static void exact_spans(int n)
{
    fixture f;
    fixture_open(&f);
    sr_gen_job j;
    held_across(&j, &f, n);
    ck_assert_uint_eq(j.nspans, (size_t)n + 1);
    char want[2048], got[2048];
    size_t o = (size_t)snprintf(want, sizeof(want), "[[0,%d,0]", P);
    for (int k = 1; k < n; k++)
        o += (size_t)snprintf(want + o, sizeof(want) - o, ",[%d,%d,%d]", P + k - 1, P + k, k);
    snprintf(want + o, sizeof(want) - o, ",[%d,%d,%d]]", P + n - 1, P + MAXT - 1, n);
    body_rows(got, sizeof(got), &j, &f);
    ck_assert_str_eq(got, want);
    for (size_t s = 0; s < j.nspans; s++)
        for (int64_t row = j.spans[s].lo; row < j.spans[s].hi; row++)
            ck_assert_msg(row_is(&j, &f, row, j.spans[s].version), "%d syncs: row %lld v%lld", n,
                          (long long)row, (long long)j.spans[s].version);
    /* The two last versions' rows differ where they meet: a span merging them would be wrong. */
    ck_assert(row_is(&j, &f, P + n - 2, n - 1));
    ck_assert(!row_is(&j, &f, P + n - 2, n));
    sr_gen_job_release(&j);
    sr_oracle_free(f.o);
}

START_TEST(one_to_twenty_three_syncs_keep_every_version)
{
    /* 15, 16 and 17 spans were the cap's boundary when the list was fixed at 16 (a 17th span
     * merged the last two versions under -1, which the verifier then failed as
     * trace.version_unknown); 24 spans is one per generated token. */
    for (int n = 1; n <= MAXT - 1; n++)
        exact_spans(n);
}
END_TEST

/* The spans after an abort: cut at the kept tokens, still one per version. */
START_TEST(abort_keeps_the_versions_of_the_kept_rows)
{
    fixture f;
    fixture_open(&f);
    sr_gen_job j;
    held_across(&j, &f, 20);
    sr_gen_abort(&j, 10);
    /* Rows below P + 10 - 1 are kept: the prompt's under version 0, row P + k - 1 under version
     * k for k = 1 .. 9 (the row of version 10 is cut). */
    ck_assert_uint_eq(j.nspans, 10);
    ck_assert_int_eq(j.spans[9].lo, P + 8);
    ck_assert_int_eq(j.spans[9].hi, P + 9);
    ck_assert_int_eq(j.spans[9].version, 9);
    for (size_t s = 0; s < j.nspans; s++)
        for (int64_t row = j.spans[s].lo; row < j.spans[s].hi; row++)
            ck_assert(row_is(&j, &f, row, j.spans[s].version));
    sr_gen_job_release(&j);
    sr_oracle_free(f.o);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("engine_spans");
    TCase *tc = tcase_create("spans");
    tcase_add_test(tc, one_to_twenty_three_syncs_keep_every_version);
    tcase_add_test(tc, abort_keeps_the_versions_of_the_kept_rows);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(make_suite());
}
