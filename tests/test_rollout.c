/*
 * The agent loop of skyrl.md §6 against real mock-engine processes: prompt starts, loss
 * masks, finalized routes recomputed with the oracle for every row, retries inside rollouts,
 * 64 concurrent rollouts over 2 engines, and each quirk failing in its named way.
 */
#include <curl/curl.h>

#include "client_fixture.h"
#include "run/rollout.h"
#include "run/rollout_scratch.h"

#define MODEL_JSON                                                                                 \
    "\"seed\":23,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":16,\"topk\":2,\"eos_id\":2,"     \
    "\"eos_rate\":0.15}"
#define CFG_CLEAN    "{" MODEL_JSON "}"
#define CFG_FAULT(f) "{" MODEL_JSON ",\"faults\":[" f "]}"
/* eos never sampled; every non-EOS token is a request stop id: each turn is one "stop" token. */
#define CFG_NO_EOS                                                                                 \
    "{\"seed\":23,\"model\":{\"vocab\":16,\"layers\":2,\"experts\":16,\"topk\":2,\"eos_id\":2,"    \
    "\"eos_rate\":0}}"
#define STOP_ALL_BUT_EOS                                                                           \
    "{\"max_tokens\":4,\"logprobs\":0,\"stop_token_ids\":[0,1,3,4,5,6,7,8,9,10,11,12,13,14,15]}"

static const int32_t PROMPT[] = {9, 8, 7, 6, 5};

typedef struct rcase {
    sr_rollout_config cfg;
    cJSON *sampling;
    char session[32];
    int32_t prompt[16];
} rcase;

static void rcase_init(rcase *c, int turns, const char *sampling_json)
{
    memset(c, 0, sizeof *c);
    c->cfg = (sr_rollout_config)SR_ROLLOUT_CONFIG_INIT;
    c->sampling = cJSON_Parse(sampling_json ? sampling_json : "{\"max_tokens\":6,\"logprobs\":0}");
    memcpy(c->prompt, PROMPT, sizeof PROMPT);
    snprintf(c->session, sizeof c->session, "7_0");
    c->cfg.prompt = c->prompt;
    c->cfg.prompt_len = 5;
    c->cfg.session_id = c->session;
    c->cfg.sampling_params = c->sampling;
    c->cfg.routes = 1;
    c->cfg.append_eos_after_stop = 1;
    c->cfg.eos_id = 2;
    c->cfg.env = (sr_rollout_env){99, turns, 2, 4, 64};
}

static void rcase_free(rcase *c)
{
    cJSON_Delete(c->sampling);
}

/*
 * Every captured route row equals the oracle's at its row_version, padding rows are 0..K-1,
 * and every loss-active token is the oracle's sample from the previous row's weights.
 */
static void verify(fx_model *m, const sr_rollout_result *r)
{
    size_t T = r->prompt_len + r->response_len;
    int32_t *tok = malloc((T + 1) * sizeof *tok);
    memcpy(tok, r->prompt_ids, r->prompt_len * sizeof *tok);
    memcpy(tok + r->prompt_len, r->response_ids, r->response_len * sizeof *tok);
    ck_assert_int_eq(r->routes.ndim, 3);
    ck_assert_int_eq(r->routes.shape[0], (int64_t)T);
    size_t cap = (size_t)r->captured_rows, K = (size_t)m->cfg.topk, L = (size_t)m->cfg.num_layers;
    size_t rb = L * K * sr_dtype_size(r->routes.dtype);
    const uint8_t *got = r->routes.data;
    for (int64_t v = 0; v <= 4; v++) {
        uint8_t *want = NULL;
        for (size_t i = 0; i < cap; i++) {
            if (r->row_version[i] != v)
                continue;
            if (!want)
                want = fx_oracle_rows(m, v, tok, T, cap, r->routes.dtype);
            ck_assert_msg(memcmp(want + i * rb, got + i * rb, rb) == 0,
                          "row %zu differs from the oracle at version %lld", i, (long long)v);
        }
        free(want);
    }
    for (size_t i = 0; i < cap; i++)
        ck_assert_msg(r->row_version[i] >= 0 && r->row_version[i] <= 4, "row %zu has no version",
                      i);
    for (size_t i = cap; i < T; i++)
        for (size_t l = 0; l < L; l++)
            for (size_t k = 0; k < K; k++)
                ck_assert_int_eq(sr_ndarray_get_i64(&r->routes, (i * L + l) * K + k), (int64_t)k);
    /* Tokens: position p (loss-active) was sampled from prefix 0..p-1 with row p-1's weights. */
    uint64_t h = sr_oracle_prefix_empty(m->oracle);
    for (size_t p = 0; p + 1 < T; p++) {
        h = sr_oracle_prefix_push(h, tok[p]);
        size_t j = p + 1 - r->prompt_len;
        if (p + 1 < r->prompt_len || !r->loss_mask[j])
            continue;
        uint64_t g, fps[SR_ORACLE_MAX_LAYERS];
        sr_err e = SR_ERR_INIT;
        ck_assert_sr_ok(sr_weights_expected(&g, fps, &m->spec, r->row_version[p], &e), e);
        int32_t next;
        double lp;
        sr_oracle_next(&next, &lp, m->oracle, g, h);
        ck_assert_msg(next == tok[p + 1], "token %zu is not the oracle's", p + 1);
        ck_assert(r->logprobs && r->logprobs[j] == lp);
    }
    free(tok);
}

START_TEST(two_turn_rollout_sends_starts_0_and_r1)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    fx_model m;
    fx_model_load(&m, CFG_CLEAN);
    rcase c;
    rcase_init(&c, 2, NULL);
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c.cfg, &e), e);
    ck_assert_int_eq(r.n_turns, 2);
    const sr_rollout_turn *t1 = &r.turns[0], *t2 = &r.turns[1];
    int64_t R1 = t1->prompt_len + t1->generated - 1;
    ck_assert_int_eq(t1->prompt_len, 5);
    ck_assert_int_eq(t1->start_sent, 0);
    ck_assert_int_eq(t2->start_sent, R1);
    /* The engine's echo: it returned P2 + G2 - 1 - start rows, so it received start = R1. */
    ck_assert_int_eq(t2->prompt_len + t2->generated - 1 - t2->route_rows, R1);
    ck_assert_int_eq(t2->prompt_len,
                     t1->prompt_len + t1->generated + t1->added_eos + t1->obs_tokens);
    ck_assert_int_eq(r.captured_rows, t2->prompt_len + t2->generated - 1);
    /* Loss mask: turn 1's tokens 1 (added EOS 0), observation 0, turn 2's tokens 1. */
    size_t j = 0;
    for (int k = 0; k < 2; k++) {
        const sr_rollout_turn *t = &r.turns[k];
        for (int64_t i = 0; i < t->generated; i++, j++)
            ck_assert_int_eq(r.loss_mask[j], 1);
        if (t->added_eos) {
            ck_assert_int_eq(r.response_ids[j], 2);
            ck_assert_int_eq(r.loss_mask[j++], 0);
        }
        for (int64_t i = 0; k == 0 && i < t->obs_tokens; i++, j++) {
            ck_assert_int_eq(r.loss_mask[j], 0);
            ck_assert(r.logprobs[j] == 0.0);
        }
    }
    ck_assert_int_eq(j, r.response_len);
    ck_assert_int_eq(r.routes.shape[0] - r.captured_rows, 1 + t2->added_eos);
    ck_assert_str_eq(r.stop_reason, t2->finish_reason);
    ck_assert(t1->request_ms > 0 && t1->bytes_received > 0 && t1->n_attempts == 1);
    verify(&m, &r);
    ck_assert_int_eq(fx_count(&f, 0, "finish_session"), 1);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

/* cpu_every = 2 on a fresh conn: turn 1 is sampled (request, splice and record CPU time), turn 2
 * is not, and the finalize of a rollout with a sampled turn is measured too. */
START_TEST(sampled_turns_carry_their_cpu_time)
{
    fx f;
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.cpu_every = 2;
    fx_start(&f, 1, CFG_CLEAN, &o);
    rcase c;
    rcase_init(&c, 2, NULL);
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c.cfg, &e), e);
    ck_assert_int_eq(r.n_turns, 2);
    const sr_rollout_turn *t1 = &r.turns[0], *t2 = &r.turns[1];
    ck_assert(t1->cpu_sampled && !t2->cpu_sampled);
    ck_assert_msg(t1->request_cpu_ms > 0 && t1->splice_cpu_ms > 0 && t1->record_cpu_ms > 0,
                  "turn 1: request %g, splice %g, record %g ms of CPU", t1->request_cpu_ms,
                  t1->splice_cpu_ms, t1->record_cpu_ms);
    ck_assert(t2->request_cpu_ms == 0 && t2->splice_cpu_ms == 0 && t2->record_cpu_ms == 0);
    ck_assert(r.finalize_cpu_sampled && r.finalize_cpu_ms > 0);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_stop(&f);
}
END_TEST

START_TEST(transient_faults_inside_rollouts_are_retried)
{
    static const char *cfg = CFG_FAULT(
        "{\"kind\":\"http_502_html\",\"nth\":[1]},{\"kind\":\"truncate_in_blob\",\"nth\":[3]},"
        "{\"kind\":\"reset\",\"nth\":[5]},{\"kind\":\"truncate_after_blobs\",\"nth\":[7]}");
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.backoff_initial_ms = 10;
    fx f;
    fx_start(&f, 1, cfg, &o);
    fx_model m;
    fx_model_load(&m, cfg);
    rcase c;
    rcase_init(&c, 4, NULL);
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c.cfg, &e), e);
    int attempts = 0;
    for (int k = 0; k < r.n_turns; k++)
        for (int a = 0; a < r.turns[k].n_attempts; a++)
            attempts += 1 + r.turns[k].attempts[a].resent;
    ck_assert_int_eq(r.n_turns, 4);
    ck_assert_int_eq(attempts, fx_count(&f, 0, "generate"));
    ck_assert_int_ge(attempts, r.n_turns + 3);
    verify(&m, &r);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

START_TEST(dropped_routes_fail_the_turn_by_name)
{
    static const char *cfg = CFG_FAULT("{\"kind\":\"routes_dropped\",\"nth\":[2]}");
    fx f;
    fx_start(&f, 1, cfg, NULL);
    rcase c;
    rcase_init(&c, 3, NULL);
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(sr_rollout_run(&r, f.conn, &c.cfg, &e), e, SR_E_CLIENT_ROUTES_MISSING);
    ck_assert_int_eq(r.code, SR_E_CLIENT_ROUTES_MISSING);
    ck_assert_int_eq(r.failed_turn, 2);
    ck_assert_int_eq(r.turns[1].n_attempts, 1);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 2);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_stop(&f);
}
END_TEST

#define BATCH 64

static void batch_cases(rcase *cs)
{
    for (int i = 0; i < BATCH; i++) {
        rcase_init(&cs[i], 2 + i % 3, NULL);
        snprintf(cs[i].session, sizeof cs[i].session, "%d_0", i);
        cs[i].cfg.prompt_len = 3 + (size_t)(i % 7);
        for (size_t p = 0; p < cs[i].cfg.prompt_len; p++)
            cs[i].prompt[p] = (int32_t)((i * 7 + (int)p * 13) % 64);
        cs[i].cfg.env.seed = 1000 + (uint64_t)i;
    }
}

START_TEST(concurrent_rollouts_over_two_engines_all_verify)
{
    fx f;
    fx_start(&f, 2, CFG_CLEAN, NULL);
    fx_model m;
    fx_model_load(&m, CFG_CLEAN);
    static rcase cs[BATCH];
    batch_cases(cs);
    sr_rollout_config cfgs[BATCH];
    for (int i = 0; i < BATCH; i++)
        cfgs[i] = cs[i].cfg;
    static sr_rollout_result a[BATCH], b[BATCH];
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run_batch(a, cfgs, BATCH, f.client, 16, &e), e);
    ck_assert_sr_ok(sr_rollout_run_batch(b, cfgs, BATCH, f.client, 3, &e), e);
    int per_engine[2] = {0, 0};
    for (int i = 0; i < BATCH; i++) {
        verify(&m, &a[i]);
        per_engine[a[i].turns[0].engine]++;
        ck_assert_int_eq(a[i].turns[0].engine, sr_client_engine_for(f.client, cs[i].session));
        /* Scheduling does not change a rollout: the second batch ran with another limit. */
        ck_assert_int_eq(a[i].response_len, b[i].response_len);
        ck_assert(memcmp(a[i].response_ids, b[i].response_ids, a[i].response_len * 4) == 0);
        ck_assert(sr_ndarray_equal(&a[i].routes, &b[i].routes));
        sr_rollout_result_release(&a[i]);
        sr_rollout_result_release(&b[i]);
        rcase_free(&cs[i]);
    }
    ck_assert(per_engine[0] > 0 && per_engine[1] > 0);
    ck_assert_int_gt(fx_count(&f, 0, "generate"), 0);
    ck_assert_int_gt(fx_count(&f, 1, "generate"), 0);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

/* Two results are the same rollout: ids, loss mask, logprobs, routes and row versions. */
static void assert_same_rollout(const sr_rollout_result *a, const sr_rollout_result *b)
{
    ck_assert_uint_eq(a->prompt_len, b->prompt_len);
    ck_assert_uint_eq(a->response_len, b->response_len);
    ck_assert_mem_eq(a->prompt_ids, b->prompt_ids, a->prompt_len * sizeof(int32_t));
    ck_assert_mem_eq(a->response_ids, b->response_ids, a->response_len * sizeof(int32_t));
    ck_assert_mem_eq(a->loss_mask, b->loss_mask, a->response_len);
    ck_assert_mem_eq(a->logprobs, b->logprobs, a->response_len * sizeof(double));
    ck_assert(sr_ndarray_equal(&a->routes, &b->routes));
    ck_assert_int_eq(a->captured_rows, b->captured_rows);
    ck_assert_mem_eq(a->row_version, b->row_version, (size_t)a->routes.shape[0] * 8);
    ck_assert_mem_eq(a->held_version, b->held_version, (size_t)a->routes.shape[0] * 8);
}

/*
 * Rollouts one after another on one conn work in the conn's scratch (rollout_scratch.h): the
 * second rollout with routes reuses the first one's arrays and trace, a rollout without
 * routes in between leaves no stale routes, and every result equals the same rollout on a new
 * conn, the first result intact after its arrays were reused.
 */
START_TEST(rollouts_on_one_conn_reuse_its_scratch)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    fx_model m;
    fx_model_load(&m, CFG_CLEAN);
    rcase a, plain;
    rcase_init(&a, 3, NULL);
    rcase_init(&plain, 2, NULL);
    plain.cfg.routes = 0;
    plain.cfg.env.seed = 5;
    sr_rollout_result r1, r2, rn, fresh;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run(&r1, f.conn, &a.cfg, &e), e);
    sr_rollout_scratch *x = sr_client_conn_scratch(f.conn);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(x->trace);
    const sr_route_trace *trace = x->trace;
    const int32_t *ids = x->ids;
    const int64_t *versions = x->row_ver;
    ck_assert_sr_ok(sr_rollout_run(&rn, f.conn, &plain.cfg, &e), e);
    ck_assert_int_eq(rn.routes.ndim, 0);
    ck_assert_int_eq(rn.captured_rows, 0);
    ck_assert_ptr_null(rn.row_version);
    ck_assert_ptr_eq(x->trace, trace); /* kept, unused, by the rollout without routes */
    ck_assert_sr_ok(sr_rollout_run(&r2, f.conn, &a.cfg, &e), e);
    ck_assert_ptr_eq(sr_client_conn_scratch(f.conn), x);
    ck_assert_ptr_eq(x->trace, trace);
    ck_assert_ptr_eq(x->ids, ids);
    ck_assert_ptr_eq(x->row_ver, versions);
    sr_client_conn *k;
    ck_assert_sr_ok(sr_client_conn_new(&k, f.client, &e), e);
    ck_assert_ptr_null(sr_client_conn_scratch(k));
    ck_assert_sr_ok(sr_rollout_run(&fresh, k, &a.cfg, &e), e);
    sr_client_conn_free(k);
    verify(&m, &r1);
    verify(&m, &r2);
    assert_same_rollout(&r1, &fresh);
    assert_same_rollout(&r2, &fresh);
    sr_rollout_result_release(&r1);
    sr_rollout_result_release(&r2);
    sr_rollout_result_release(&rn);
    sr_rollout_result_release(&fresh);
    rcase_free(&a);
    rcase_free(&plain);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

/* A weight sync between turns: every engine applies version `version` after turn `turn`. */
typedef struct sync_hook {
    const sr_client *client;
    int turn;
    int64_t version;
} sync_hook;

static int sync_after_turn(void *ctx, int turn, sr_err *err)
{
    sync_hook *h = ctx;
    if (turn != h->turn)
        return 0;
    char body[96];
    snprintf(body, sizeof body, "{\"update_info\":{\"target_version\":%lld}}",
             (long long)h->version);
    sr_client_reply rep[FX_MAX_ENGINES];
    int rc =
        sr_client_control(rep, FX_MAX_ENGINES, h->client, -1, "POST", "/update_weights", body, err);
    for (size_t i = 0; i < sr_client_engine_count(h->client); i++)
        sr_client_reply_release(&rep[i]);
    return rc;
}

/* Without the quirk a sync between turns is harmless: rows keep the version that made them. */
START_TEST(appended_trace_survives_a_weight_sync)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    fx_model m;
    fx_model_load(&m, CFG_CLEAN);
    rcase c;
    rcase_init(&c, 2, NULL);
    sync_hook h = {f.client, 1, 1};
    c.cfg.after_turn = sync_after_turn;
    c.cfg.hook_ctx = &h;
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c.cfg, &e), e);
    int64_t R1 = r.turns[0].prompt_len + r.turns[0].generated - 1;
    for (int64_t i = 0; i < r.captured_rows; i++) {
        ck_assert_int_eq(r.row_version[i], i < R1 ? 0 : 1);
        ck_assert_int_eq(r.held_version[i], r.row_version[i]);
    }
    ck_assert_int_eq(r.turns[1].weight_version, 1);
    verify(&m, &r);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

/*
 * Quirk overwrite_trace_each_turn (SkyRL #1530): turn 2 re-computes the whole prefix with the new
 * weights and replaces turn 1's rows, so the rows that sampled turn 1 are no longer the ones that
 * were used: they differ from the oracle at their row_version and match it at held_version.
 */
START_TEST(quirk_overwrite_trace_each_turn_overwrites_the_prefix)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    fx_model m;
    fx_model_load(&m, CFG_CLEAN);
    rcase c;
    rcase_init(&c, 2, NULL);
    sync_hook h = {f.client, 1, 1};
    c.cfg.after_turn = sync_after_turn;
    c.cfg.hook_ctx = &h;
    c.cfg.quirks.overwrite_trace_each_turn = 1;
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c.cfg, &e), e);
    ck_assert_int_eq(r.turns[1].start_sent, 0);
    int64_t R1 = r.turns[0].prompt_len + r.turns[0].generated - 1;
    size_t T = r.prompt_len + r.response_len;
    int32_t *tok = malloc(T * sizeof *tok);
    memcpy(tok, r.prompt_ids, r.prompt_len * 4);
    memcpy(tok + r.prompt_len, r.response_ids, r.response_len * 4);
    size_t rb = r.routes.nbytes / T;
    uint8_t *v0 = fx_oracle_rows(&m, 0, tok, T, (size_t)r.captured_rows, r.routes.dtype);
    uint8_t *v1 = fx_oracle_rows(&m, 1, tok, T, (size_t)r.captured_rows, r.routes.dtype);
    int64_t first_bad = -1;
    for (int64_t i = 0; i < r.captured_rows; i++) {
        ck_assert_int_eq(r.held_version[i], 1);
        ck_assert_int_eq(r.row_version[i], i < R1 ? 0 : 1);
        const uint8_t *got = (const uint8_t *)r.routes.data + (size_t)i * rb;
        ck_assert(memcmp(got, v1 + (size_t)i * rb, rb) == 0);
        if (first_bad < 0 && memcmp(got, v0 + (size_t)i * rb, rb) != 0)
            first_bad = i;
    }
    /* The mismatch lies in the prefix turn 1 had captured: an overwritten prefix. */
    ck_assert(first_bad >= 0 && first_bad < R1);
    free(v0);
    free(v1);
    free(tok);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

START_TEST(quirk_no_prompt_start_breaks_the_row_count_on_turn_2)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.quirks.no_prompt_start = 1;
    fx f;
    fx_start(&f, 1, CFG_CLEAN, &o);
    rcase c;
    rcase_init(&c, 2, NULL);
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(sr_rollout_run(&r, f.conn, &c.cfg, &e), e, SR_E_TRACE_ROW_COUNT);
    ck_assert_int_eq(r.failed_turn, 2);
    ck_assert_int_eq(r.turns[1].start_sent, -1);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_stop(&f);
}
END_TEST

START_TEST(single_turn_template_with_routes_is_refused)
{
    fx f;
    fx_start(&f, 1, CFG_NO_EOS, NULL);
    rcase c;
    rcase_init(&c, 2, STOP_ALL_BUT_EOS);
    c.cfg.env.vocab = 16;
    c.cfg.multi_turn = 0;
    c.cfg.append_eos_after_stop = 0;
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(sr_rollout_run(&r, f.conn, &c.cfg, &e), e, SR_E_ROLLOUT_CONFIG);
    ck_assert_int_eq(r.failed_turn, 0);
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 0);
    sr_rollout_result_release(&r);

    /* Without routes the template path runs and appends its loss-active synthetic EOS. */
    c.cfg.routes = 0;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c.cfg, &e), e);
    ck_assert_str_eq(r.stop_reason, "stop");
    ck_assert_int_eq(r.response_ids[r.response_len - 1], 2);
    ck_assert_int_eq(r.loss_mask[r.response_len - 1], 1);
    ck_assert_int_eq(r.routes.ndim, 0);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_stop(&f);
}
END_TEST

/*
 * Quirk synthetic_eos_loss_active (skyrl-synthetic-eos): the last turn stops on a stop id, the
 * template appends a loss-active EOS after the last captured row, and finalize names that token.
 * The same run in multi-turn mode (added EOS with loss 0) verifies.
 */
START_TEST(quirk_synthetic_eos_loss_active_names_the_token)
{
    fx f;
    fx_start(&f, 1, CFG_NO_EOS, NULL);
    fx_model m;
    fx_model_load(&m, CFG_NO_EOS);
    rcase c;
    rcase_init(&c, 2, STOP_ALL_BUT_EOS);
    c.cfg.env.vocab = 16;
    c.cfg.multi_turn = 0;
    c.cfg.append_eos_after_stop = 0;
    c.cfg.quirks.synthetic_eos_loss_active = 1;
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(sr_rollout_run(&r, f.conn, &c.cfg, &e), e, SR_E_TRACE_MISSING_ROUTE);
    int64_t T = (int64_t)(r.prompt_len + r.response_len);
    ck_assert_int_eq(e.offset, T - 1);
    ck_assert_int_eq(r.response_ids[r.response_len - 1], 2);
    ck_assert_int_eq(r.failed_turn, 0);
    sr_rollout_result_release(&r);

    c.cfg.multi_turn = 1;
    c.cfg.append_eos_after_stop = 1;
    c.cfg.quirks.synthetic_eos_loss_active = 0;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c.cfg, &e), e);
    ck_assert(r.turns[1].added_eos);
    ck_assert_int_eq(r.routes.shape[0] - r.captured_rows, 2);
    verify(&m, &r);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

START_TEST(the_length_limit_ends_the_rollout)
{
    fx f;
    fx_start(&f, 1, CFG_CLEAN, NULL);
    fx_model m;
    fx_model_load(&m, CFG_CLEAN);
    rcase c;
    rcase_init(&c, 5, NULL);
    c.cfg.max_input_length = 6;
    sr_rollout_result r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_rollout_run(&r, f.conn, &c.cfg, &e), e);
    ck_assert_int_eq(r.n_turns, 1);
    ck_assert_str_eq(r.stop_reason, "length");
    verify(&m, &r);
    sr_rollout_result_release(&r);
    rcase_free(&c);
    fx_model_free(&m);
    fx_stop(&f);
}
END_TEST

static Suite *rollout_suite(void)
{
    Suite *s = suite_create("rollout");
    TCase *tc = tcase_create("rollout");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, two_turn_rollout_sends_starts_0_and_r1);
    tcase_add_test(tc, sampled_turns_carry_their_cpu_time);
    tcase_add_test(tc, transient_faults_inside_rollouts_are_retried);
    tcase_add_test(tc, dropped_routes_fail_the_turn_by_name);
    tcase_add_test(tc, concurrent_rollouts_over_two_engines_all_verify);
    tcase_add_test(tc, rollouts_on_one_conn_reuse_its_scratch);
    tcase_add_test(tc, appended_trace_survives_a_weight_sync);
    tcase_add_test(tc, quirk_overwrite_trace_each_turn_overwrites_the_prefix);
    tcase_add_test(tc, quirk_no_prompt_start_breaks_the_row_count_on_turn_2);
    tcase_add_test(tc, single_turn_template_with_routes_is_refused);
    tcase_add_test(tc, quirk_synthetic_eos_loss_active_names_the_token);
    tcase_add_test(tc, the_length_limit_ends_the_rollout);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(rollout_suite());
    curl_global_cleanup();
    return rc;
}
