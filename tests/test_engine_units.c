/* In-process units of the mock engine: fault plans, request parsing, config, body. The JSON
 * writer: test_engine_jsonw.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spec/engine_config.h"
#include "engine/engine_faults.h"
#include "engine/gen.h"
#include "engine/jsonw.h"
#include "engine/request.h"
#include "sr_envelope.h"
#include "sr_test.h"

static int parse_plan(const char *text, sr_faults **fs, sr_err *err)
{
    return sr_faults_parse_text(fs, text, strlen(text), 1, err);
}

START_TEST(test_fault_plan_errors_are_named)
{
    const char *bad[] = {
        "{}",
        "[1]",
        "[{}]",
        "[{\"kind\":\"frobnicate\"}]",
        "[{\"kind\":\"truncate\"}]",
        "[{\"kind\":\"truncate\",\"bytes\":-1}]",
        "[{\"kind\":\"truncate\",\"bytes\":1,\"bogus\":2}]",
        "[{\"kind\":\"reset\",\"bytes\":3}]",
        "[{\"kind\":\"reset\",\"endpoints\":[\"nowhere\"]}]",
        "[{\"kind\":\"reordered_envelope\",\"endpoints\":[\"health\"]}]",
        "[{\"kind\":\"version_not_bumped\",\"endpoints\":[\"generate\"]}]",
        "[{\"kind\":\"reset\",\"probability\":1.5}]",
        "[{\"kind\":\"reset\",\"nth\":0}]",
        "[{\"kind\":\"reset\",\"nth\":[]}]",
        "[{\"kind\":\"reset\",\"engines\":[64]}]",
        "[{\"kind\":\"reset\",\"turn\":\"2\"}]",
        "[{\"kind\":\"latency\"}]",
        "[{\"kind\":\"latency\",\"dist\":\"uniform\",\"min_ms\":5,\"max_ms\":1}]",
        "[{\"kind\":\"latency\",\"dist\":\"pareto\",\"ms\":1}]",
        "[{\"kind\":\"refuse\"}]",
        "[{\"kind\":\"dribble\",\"bytes_per_second\":0}]",
        "[{\"kind\":\"reset\",\"id\":\"x\"},{\"kind\":\"stall\",\"id\":\"x\"}]",
        "[{\"kind\":\"reset\",\"count\":1,\"count\":2}]",
        "not json",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sr_faults *fs = NULL;
        sr_err err = SR_ERR_INIT;
        int rc = parse_plan(bad[i], &fs, &err);
        ck_assert_msg(rc == SR_E_FAULT_SPEC && err.code == SR_E_FAULT_SPEC, "%s: %s (%s)", bad[i],
                      sr_code_name(rc), err.msg);
        ck_assert_ptr_null(fs);
    }
    /* Every kind has a stable name and parses with its required parameters. */
    for (int k = 0; k < SR_FK_COUNT; k++) {
        const char *name = sr_fault_kind_name((sr_fault_kind)k);
        ck_assert_ptr_nonnull(name);
        char text[256];
        const char *extra = k == SR_FK_TRUNCATE                 ? ",\"bytes\":1"
                            : k == SR_FK_LATENCY                ? ",\"ms\":1"
                            : k == SR_FK_REFUSE                 ? ",\"ms\":1"
                            : k == SR_FK_DRIBBLE                ? ",\"bytes_per_second\":10"
                            : k == SR_FK_PREFIX_CACHED_SENTINEL ? ",\"row\":1"
                            : k == SR_FK_ROUTES                 ? ",\"action\":{\"do\":\"zero\"}"
                                                                : "";
        snprintf(text, sizeof(text), "[{\"kind\":\"%s\"%s}]", name, extra);
        sr_faults *fs = NULL;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(parse_plan(text, &fs, &err), err);
        char id[80];
        snprintf(id, sizeof(id), "%s#0", name);
        ck_assert_str_eq(sr_faults_at(fs, 0)->id, id);
        sr_faults_free(fs);
    }
}
END_TEST

START_TEST(test_fault_picking)
{
    sr_faults *fs = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(parse_plan("[{\"kind\":\"reset\",\"nth\":[2,4]},"
                               "{\"kind\":\"stall\",\"count\":2},"
                               "{\"kind\":\"latency\",\"dist\":\"uniform\",\"min_ms\":10,"
                               "\"max_ms\":20,\"engines\":[0]},"
                               "{\"kind\":\"rows_p_plus_g\",\"turn\":[3]}]",
                               &fs, &err),
                    err);
    const char *want[] = {"stall", "reset", "stall", "reset", NULL, NULL};
    for (int i = 0; i < 6; i++) {
        sr_fault_pick p;
        sr_faults_pick(&p, fs, 0, SR_EP_GENERATE, i + 1);
        const sr_fault *t = p.f[SR_FL_TRANSPORT];
        if (want[i])
            ck_assert_str_eq(sr_fault_kind_name(t->kind), want[i]);
        else
            ck_assert_ptr_null(t);
        ck_assert_ptr_nonnull(p.f[SR_FL_DELAY]);
        ck_assert(p.delay_ms >= 10 && p.delay_ms <= 20);
        ck_assert((p.f[SR_FL_MODEL] != NULL) == (i + 1 == 3));
    }
    int64_t seen, fired;
    sr_faults_counters(fs, 1, &seen, &fired);
    /* stall saw 6 requests, fired on the 2 it had (1 and 3; reset took the layer on 2 and 4). */
    ck_assert_int_eq(seen, 6);
    ck_assert_int_eq(fired, 2);
    sr_fault_pick p;
    sr_faults_pick(&p, fs, 1, SR_EP_GENERATE, 0);
    ck_assert_ptr_null(p.f[SR_FL_DELAY]);
    sr_faults_pick(&p, fs, 0, SR_EP_HEALTH, 0);
    ck_assert_ptr_null(p.f[SR_FL_TRANSPORT]);
    sr_faults_free(fs);
    /* Lognormal delays: positive, bounded, and the same for the same seed and ordinal. */
    const char *ln = "[{\"kind\":\"latency\",\"dist\":\"lognormal\",\"median_ms\":50,"
                     "\"sigma\":1}]";
    sr_faults *a = NULL, *b = NULL;
    ck_assert_sr_ok(parse_plan(ln, &a, &err), err);
    ck_assert_sr_ok(parse_plan(ln, &b, &err), err);
    int below = 0;
    for (int i = 0; i < 200; i++) {
        sr_fault_pick pa, pb;
        sr_faults_pick(&pa, a, 0, SR_EP_GENERATE, 0);
        sr_faults_pick(&pb, b, 0, SR_EP_GENERATE, 0);
        ck_assert(pa.delay_ms == pb.delay_ms);
        ck_assert(pa.delay_ms > 0 && pa.delay_ms <= SR_FAULT_MAX_MS);
        below += pa.delay_ms < 50;
    }
    ck_assert_msg(below > 60 && below < 140, "%d of 200 below the median", below);
    sr_faults_free(a);
    sr_faults_free(b);
}
END_TEST

static sr_gen_limits LIM = {100, 16, 64};

START_TEST(test_request_parse)
{
    sr_gen_request r;
    sr_err err = SR_ERR_INIT;
    const char *ok = "{\"sampling_params\":{\"max_tokens\":5,\"logprobs\":0,\"ignore_eos\":true,"
                     "\"stop_token_ids\":[3,4],\"routed_experts_prompt_start\":3},"
                     "\"model\":\"m\",\"token_ids\":[1,2,3],\"cache_salt\":\"s@1\"}";
    ck_assert_sr_ok(sr_gen_request_parse(&r, ok, strlen(ok), &LIM, &err), err);
    ck_assert_int_eq(r.P, 3);
    ck_assert_int_eq(r.max_tokens, 5);
    ck_assert_int_eq(r.logprobs, 0);
    ck_assert_int_eq(r.ignore_eos, 1);
    ck_assert_int_eq(r.n_stop_ids, 2);
    ck_assert_int_eq(r.route_start, 3);
    ck_assert_str_eq(r.model, "m");
    ck_assert_str_eq(r.cache_salt, "s@1");
    sr_gen_request_release(&r);
    const char *defaults = "{\"token_ids\":[0]}";
    ck_assert_sr_ok(sr_gen_request_parse(&r, defaults, strlen(defaults), &LIM, &err), err);
    ck_assert_int_eq(r.max_tokens, 16);
    ck_assert_int_eq(r.logprobs, -1);
    ck_assert_int_eq(r.route_start, 0);
    ck_assert_ptr_null(r.cache_salt);
    sr_gen_request_release(&r);
    const char *bad[] = {"",
                         "{",
                         "[]",
                         "{\"token_ids\":{}}",
                         "{\"token_ids\":[1e0]}",
                         "{\"token_ids\":[1],\"sampling_params\":{\"ignore_eos\":1}}",
                         "{\"token_ids\":[1],\"sampling_params\":{\"stop_token_ids\":[100]}}",
                         "{\"token_ids\":[1],\"sampling_params\":{\"stop\":[1]}}",
                         "{\"token_ids\":[1],\"sampling_params\":{\"temperature\":\"hot\"}}",
                         "{\"token_ids\":[1],\"features\":[]}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sr_err e2 = SR_ERR_INIT;
        ck_assert_sr_code(sr_gen_request_parse(&r, bad[i], strlen(bad[i]), &LIM, &e2), e2,
                          SR_E_ENGINE_REQUEST);
        ck_assert_ptr_null(r.tokens);
    }
}
END_TEST

/* Issue #19: the other wires' request shapes (spec/dialect.h), their keys and named errors. */
START_TEST(test_dialect_requests)
{
    sr_gen_request r;
    sr_err err = SR_ERR_INIT;
    const sr_dialect_request *sgl = &sr_dialect_get(SR_DIALECT_SGLANG)->routes[0].request;
    const char *ok = "{\"input_ids\":[1,2,3],\"return_routed_experts\":true,"
                     "\"routed_experts_start_len\":2,\"stream\":false,"
                     "\"sampling_params\":{\"max_new_tokens\":4,\"ignore_eos\":true}}";
    ck_assert_sr_ok(sr_gen_request_parse_as(&r, ok, strlen(ok), &LIM, sgl, &err), err);
    ck_assert_int_eq(r.P, 3);
    ck_assert_int_eq(r.max_tokens, 4);
    ck_assert_int_eq(r.route_start, 2);
    ck_assert_int_eq(r.ignore_eos, 1);
    ck_assert_int_eq(r.no_routes, 0);
    sr_gen_request_release(&r);
    const char *off = "{\"input_ids\":[1]}";
    ck_assert_sr_ok(sr_gen_request_parse_as(&r, off, strlen(off), &LIM, sgl, &err), err);
    ck_assert_int_eq(r.no_routes, 1);
    ck_assert_int_eq(r.max_tokens, 16);
    sr_gen_request_release(&r);
    /* vllm-json has no start: a given one is accepted (SamplingParams) and not used. */
    const sr_dialect_request *vj = &sr_dialect_get(SR_DIALECT_VLLM_JSON)->routes[0].request;
    const char *st =
        "{\"token_ids\":[1,2,3],\"sampling_params\":{\"routed_experts_prompt_start\":2}}";
    ck_assert_sr_ok(sr_gen_request_parse_as(&r, st, strlen(st), &LIM, vj, &err), err);
    ck_assert_int_eq(r.route_start, 0);
    sr_gen_request_release(&r);
    const sr_dialect_request *dyn = &sr_dialect_get(SR_DIALECT_DYNAMO)->routes[0].request;
    const sr_dialect_request *nemo = &sr_dialect_get(SR_DIALECT_NEMO_RL)->routes[0].request;
    const struct {
        const sr_dialect_request *shape;
        const char *body, *names;
    } bad[] = {
        {sgl, "{\"token_ids\":[1]}", "input_ids is required"},
        {sgl, "{\"input_ids\":[1],\"return_routed_experts\":1}", "return_routed_experts"},
        {sgl, "{\"input_ids\":[1,2],\"routed_experts_start_len\":3}", "routed_experts_start_len"},
        {sgl, "{\"input_ids\":[1],\"sampling_params\":[]}", "sampling_params"},
        {sgl, "{\"input_ids\":[1],\"sampling_params\":{\"max_new_tokens\":0}}", "max_new_tokens"},
        {dyn, "{\"prompt\":\"text\"}", "prompt"},
        {dyn, "{\"prompt\":[1,100]}", "prompt"},
        {dyn, "{\"prompt\":[1],\"max_tokens\":64}", "max_tokens"},
        {dyn, "{\"prompt\":[1],\"routed_experts_prompt_start\":true}",
         "routed_experts_prompt_start"},
        {nemo, "{\"messages\":[]}", "prompt_token_ids"},
        {nemo, "[1]", "JSON object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sr_err e2 = SR_ERR_INIT;
        ck_assert_sr_code(
            sr_gen_request_parse_as(&r, bad[i].body, strlen(bad[i].body), &LIM, bad[i].shape, &e2),
            e2, SR_E_ENGINE_REQUEST);
        ck_assert_msg(strstr(e2.msg, bad[i].names), "case %zu: '%s' does not name '%s'", i, e2.msg,
                      bad[i].names);
        ck_assert_ptr_null(r.tokens);
    }
    /* The table: names, paths, and engines.dialect / dialect in a config. */
    ck_assert_int_eq(sr_dialect_lookup("nemo-rl"), SR_DIALECT_NEMO_RL);
    ck_assert_int_eq(sr_dialect_lookup("sgl"), -1);
    ck_assert_ptr_nonnull(sr_dialect_route_at(SR_DIALECT_VLLM, "/v1/completions"));
    ck_assert_ptr_null(sr_dialect_route_at(SR_DIALECT_NEMO_RL, "/v1/completions"));
    /* SGLang's OpenAI completions route: routes in sglext, token ids only when asked. */
    const sr_dialect_route *sc = sr_dialect_route_at(SR_DIALECT_SGLANG, "/v1/completions");
    ck_assert_ptr_nonnull(sc);
    ck_assert_str_eq(sc->routes_ext, "sglext");
    const char *asked = "{\"prompt\":[1,2],\"return_routed_experts\":true,"
                        "\"routed_experts_start_len\":1,\"return_token_ids\":true}";
    ck_assert_sr_ok(sr_gen_request_parse_as(&r, asked, strlen(asked), &LIM, &sc->request, &err),
                    err);
    ck_assert_int_eq(r.no_routes, 0);
    ck_assert_int_eq(r.no_tokens, 0);
    ck_assert_int_eq(r.route_start, 1);
    sr_gen_request_release(&r);
    const char *plain = "{\"prompt\":[1,2]}";
    ck_assert_sr_ok(sr_gen_request_parse_as(&r, plain, strlen(plain), &LIM, &sc->request, &err),
                    err);
    ck_assert_int_eq(r.no_routes, 1);
    ck_assert_int_eq(r.no_tokens, 1);
    sr_gen_request_release(&r);
    const char *badtok = "{\"prompt\":[1],\"return_token_ids\":1}";
    sr_err e4 = SR_ERR_INIT;
    ck_assert_sr_code(sr_gen_request_parse_as(&r, badtok, strlen(badtok), &LIM, &sc->request, &e4),
                      e4, SR_E_ENGINE_REQUEST);
    ck_assert_msg(strstr(e4.msg, "return_token_ids"), "%s", e4.msg);
    sr_engine_config c;
    const char *cfg = "{\"dialect\":\"dynamo\"}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, cfg, strlen(cfg), "d.json", 0, &err), err);
    ck_assert_int_eq(c.dialect, SR_DIALECT_DYNAMO);
    /* Without a sync_dialect the dialect's control plane is the default (dynamo: vllm). */
    ck_assert_int_eq(c.sync_dialect, SR_SYNC_DIALECT_VLLM);
    sr_engine_config_release(&c);
    const char *badcfg = "{\"dialect\":\"sgl\"}";
    sr_err e3 = SR_ERR_INIT;
    ck_assert_sr_code(sr_engine_config_parse(&c, badcfg, strlen(badcfg), "d.json", 0, &e3), e3,
                      SR_E_ENGINE_CONFIG);
    ck_assert_msg(strstr(e3.msg, "d.json:1:") && strstr(e3.msg, "nemo-rl"), "%s", e3.msg);
}
END_TEST

/* Extra fields in each wire (sr_dialect_field_def): the converted kinds, and the fields a wire
 * cannot carry refused with dialect.field_unsupported, in a config too. */
START_TEST(test_dialect_field_wires)
{
    sr_err err = SR_ERR_INIT;
    sr_field_def d, w;
    memset(&d, 0, sizeof(d));
    d.kind = SR_FIELD_PACKED;
    snprintf(d.name, sizeof(d.name), "side_ids");
    d.dtypes = SR_DTYPE_BIT(SR_DTYPE_INT16);
    d.ndim = 3;
    d.nullable = 1;
    d.token_rows = 1;
    ck_assert_sr_ok(sr_dialect_field_def(&w, &d, SR_DIALECT_SKYRL, &err), err);
    ck_assert_int_eq(w.kind, SR_FIELD_PACKED);
    ck_assert_sr_ok(sr_dialect_field_def(&w, &d, SR_DIALECT_DYNAMO, &err), err);
    ck_assert_int_eq(w.kind, SR_FIELD_PACKED);
    ck_assert_sr_ok(sr_dialect_field_def(&w, &d, SR_DIALECT_VLLM, &err), err);
    ck_assert_int_eq(w.kind, SR_FIELD_STRING);
    ck_assert_int_eq(w.wire, SR_WIRE_NPY);
    ck_assert_sr_ok(sr_dialect_field_def(&w, &d, SR_DIALECT_SGLANG, &err), err);
    ck_assert_int_eq(w.wire, SR_WIRE_RAW);
    ck_assert_int_eq(w.ndim, 1);
    ck_assert_sr_ok(sr_dialect_field_def(&w, &d, SR_DIALECT_NEMO_RL, &err), err);
    ck_assert_int_eq(w.wire, SR_WIRE_NRLRE);
    ck_assert_sr_ok(sr_dialect_field_def(&w, &d, SR_DIALECT_VLLM_JSON, &err), err);
    ck_assert_int_eq(w.kind, SR_FIELD_NESTED);
    ck_assert_int_eq(w.min, INT16_MIN);
    ck_assert_int_eq(w.max, INT16_MAX);
    /* Two dtypes: raw bytes cannot say which. */
    sr_field_def two = d;
    two.dtypes |= SR_DTYPE_BIT(SR_DTYPE_INT32);
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(sr_dialect_field_def(&w, &two, SR_DIALECT_SGLANG, &e), e, SR_E_DIALECT_FIELD);
    ck_assert_msg(strstr(e.msg, "side_ids") && strstr(e.msg, "sglang"), "%s", e.msg);
    /* Floats: no nested integer lists, no nrlre1 string; 1-D: no nrlre1 string. */
    sr_field_def fl = d;
    fl.dtypes = SR_DTYPE_BIT(SR_DTYPE_FLOAT32);
    ck_assert_sr_code(sr_dialect_field_def(&w, &fl, SR_DIALECT_VLLM_JSON, &e), e,
                      SR_E_DIALECT_FIELD);
    ck_assert_sr_code(sr_dialect_field_def(&w, &fl, SR_DIALECT_NEMO_RL, &e), e, SR_E_DIALECT_FIELD);
    sr_field_def flat = d;
    flat.ndim = 1;
    ck_assert_sr_code(sr_dialect_field_def(&w, &flat, SR_DIALECT_NEMO_RL, &e), e,
                      SR_E_DIALECT_FIELD);
    /* A string wire's name needs 5 bytes. */
    sr_field_def shortname = d;
    snprintf(shortname.name, sizeof(shortname.name), "ids");
    ck_assert_sr_code(sr_dialect_field_def(&w, &shortname, SR_DIALECT_VLLM, &e), e,
                      SR_E_DIALECT_FIELD);
    ck_assert_sr_ok(sr_dialect_field_def(&w, &shortname, SR_DIALECT_DYNAMO, &err), err);
    /* At config time. */
    sr_engine_config c;
    const char *cfg = "{\"dialect\":\"nemo-rl\",\"fields\":[\"routed_experts\",{\"name\":"
                      "\"entropy\",\"dtypes\":[\"float32\"],\"ndim\":1}]}";
    ck_assert_sr_code(sr_engine_config_parse(&c, cfg, strlen(cfg), "d.json", 0, &e), e,
                      SR_E_ENGINE_CONFIG);
    ck_assert_msg(strstr(e.msg, "dialect.field_unsupported") && strstr(e.msg, "entropy"), "%s",
                  e.msg);
}
END_TEST

START_TEST(test_config_parse)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    const char *ok =
        "{\"id\":\"x\",\"count\":3,\"seed\":4,\"model\":{\"layer_indices\":[1,3,5],"
        "\"experts\":300,\"topk\":8,\"stop_sequences\":[[1,2],[3]]},"
        "\"fields\":[\"rollout_sample_support\"],\"timing\":{\"decode_ms_per_token\":2},"
        "\"faults\":[{\"kind\":\"reset\"}]}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, ok, strlen(ok), "ok.json", 2, &err), err);
    ck_assert_str_eq(c.id, "x-2");
    ck_assert_int_eq(c.num_layers, 3);
    ck_assert_int_eq(c.layer_indices[2], 5);
    ck_assert_int_eq(c.num_stops, 2);
    ck_assert_int_eq(c.stops[0].len, 2);
    ck_assert_int_eq(c.routes, 0);
    ck_assert_int_eq(c.support, 1);
    ck_assert_ptr_nonnull(c.faults);
    sr_engine_config_release(&c);
    /* A scenario-like document: engines.* and unknown scenario keys. */
    const char *sc = "{\"id\":\"scn\",\"steps\":[],\"seed\":2,\"engines\":{\"count\":2,"
                     "\"faults\":[{\"kind\":\"stall\"}]}}";
    ck_assert_sr_ok(sr_engine_config_parse(&c, sc, strlen(sc), "s.json", 1, &err), err);
    ck_assert_str_eq(c.id, "engine-1");
    ck_assert_int_eq(c.count, 2);
    ck_assert_ptr_nonnull(c.faults);
    sr_engine_config_release(&c);
    const char *bad[] = {"[]",
                         "{\"bogus\":1}",
                         "{\"model\":{\"vocab\":0}}",
                         "{\"model\":{\"layers\":2,\"layer_indices\":[1]}}",
                         "{\"fields\":[\"x\"]}",
                         "{\"server\":{\"threads\":0}}",
                         "{",
                         "{\"weights\":{\"total_bytes\":10}}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sr_err e2 = SR_ERR_INIT;
        ck_assert_sr_code(sr_engine_config_parse(&c, bad[i], strlen(bad[i]), "b.json", 0, &e2), e2,
                          SR_E_ENGINE_CONFIG);
    }
}
END_TEST

/* docs/reference/skyrl.md Appendix A: the reply body, byte for byte, up to the syncroll key. */
START_TEST(test_body_is_reference_bytes)
{
    sr_oracle_model m = SR_ORACLE_MODEL_INIT;
    int32_t li[2] = {0, 1};
    m.vocab = 100;
    m.num_layers = 2;
    m.layer_indices = li;
    m.experts = 8;
    m.topk = 2;
    sr_oracle *o;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_oracle_new(&o, &m, &err), err);
    sr_gen_request q = SR_GEN_REQUEST_INIT;
    const char *text = "{\"sampling_params\":{\"temperature\":1.0,\"max_tokens\":2,\"logprobs\":0,"
                       "\"routed_experts_prompt_start\":5},\"model\":\"default\","
                       "\"token_ids\":[1,2,3,4,5,6,7],\"cache_salt\":\"policy@3\"}";
    sr_gen_limits lim = {100, 16, 1024};
    ck_assert_sr_ok(sr_gen_request_parse(&q, text, strlen(text), &lim, &err), err);
    sr_gen_job j;
    ck_assert_sr_ok(sr_gen_job_init(&j, &q, o, 0, 1, NULL, NULL, 1 << 20, &err), err);
    /* Stand in for a generation: tokens [10,11], logprobs [-0.1, NaN], rows [5, 8). */
    j.tokens[0] = 10, j.tokens[1] = 11;
    j.logprobs[0] = -0.1, j.logprobs[1] = NAN;
    j.G = 2;
    j.finish = SR_GEN_STOP;
    j.row_hi = 8;
    uint8_t routes[12] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 2, 4, 6};
    memcpy(j.routes, routes, sizeof(routes));
    uint64_t fps[2] = {0, 0};
    j.last.layer_fps = malloc(sizeof(fps));
    memcpy(j.last.layer_fps, fps, sizeof(fps));
    sr_gen_ctx ctx = {o, "e", 1, 0, 4, 1, 1 << 20, NULL, 0, 0, SR_STACK_2079, 0, 0};
    sr_buf body = SR_BUF_INIT;
    ck_assert_sr_ok(sr_gen_body(&body, &j, &ctx, &err), err);
    sr_ndarray a = SR_NDARRAY_INIT;
    a.dtype = SR_DTYPE_UINT8;
    a.ndim = 3;
    a.shape[0] = 3, a.shape[1] = 2, a.shape[2] = 2;
    a.data = routes;
    a.nbytes = 12;
    sr_buf want = SR_BUF_INIT;
    sr_buf_puts(&want,
                "{\"choices\":[{\"token_ids\":[10,11],\"finish_reason\":\"stop\",\"logprobs\":"
                "{\"content\":[{\"logprob\":-0.1},{\"logprob\":-9999.0}]},"
                "\"routed_experts\":",
                NULL);
    ck_assert_sr_ok(sr_routes_pack(&want, &a, NULL, SR_B64_AUTO, &err), err);
    sr_buf_puts(&want, ",\"syncroll\":", NULL);
    ck_assert_int_eq(strncmp(body.data, want.data, want.len), 0);
    ck_assert_int_eq(j.clamped, 1);
    sr_buf_release(&want);
    sr_buf_release(&body);
    sr_gen_job_release(&j);
    sr_oracle_free(o);
}
END_TEST

static Suite *units_suite(void)
{
    Suite *s = suite_create("engine_units");
    TCase *tc = tcase_create("units");
    tcase_add_test(tc, test_fault_plan_errors_are_named);
    tcase_add_test(tc, test_fault_picking);
    tcase_add_test(tc, test_request_parse);
    tcase_add_test(tc, test_dialect_requests);
    tcase_add_test(tc, test_dialect_field_wires);
    tcase_add_test(tc, test_config_parse);
    tcase_add_test(tc, test_body_is_reference_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(units_suite());
}
