/*
 * libFuzzer target for the mock engine's request handler, without sockets: any bytes are parsed
 * and validated as a generate body of one of the engine's dialects (harness/spec/dialect.h),
 * picked by the input's length: size % 7 is the dialect (6 is skyrl again), so every wire is
 * reached; skyrl's is a /skyrl/v1/generate body (sr_gen_request_parse), the others are parsed by
 * sr_gen_request_parse_as with the shape of one of the dialect's routes (the second one, where
 * there is one, when size / 7 is odd) and serialised by sr_gen_body_dialect. An accepted request
 * runs through generation and serialisation with a small model (the work an HTTP handler does after
 * parsing), and the reply must be one JSON document. A rejected request must carry
 * engine.bad_request (or resource.nomem) and leave nothing allocated.
 *
 * The engine comes from syncroll_fuzzharness (the harness built with the fuzzer's
 * instrumentation), linked like fuzz_scenario, so a change to the engine that breaks its link
 * breaks this target's build rather than going unnoticed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine/engine_faults.h"
#include "engine/gen.h"
#include "engine/request.h"
#include "sr_buf.h"
#include "sr_err.h"
#include "spec/dialect.h"
#include "sr_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sr_oracle *model(void)
{
    static sr_oracle *o;
    if (!o) {
        static const int32_t layers[3] = {0, 2, 5};
        sr_oracle_model m = SR_ORACLE_MODEL_INIT;
        m.seed = 1;
        m.vocab = 1000;
        m.num_layers = 3;
        m.layer_indices = layers;
        m.experts = 300;
        m.topk = 4;
        m.eos_id = 2;
        m.eos_rate = 0.1;
        m.nonfinite_rate = 0.1;
        if (sr_oracle_new(&o, &m, NULL))
            abort();
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_gen_limits lim = {1000, 8, 512};
    sr_gen_request q;
    sr_err err = SR_ERR_INIT;
    sr_dialect dia = (sr_dialect)(size % 7 % SR_DIALECT_COUNT);
    const sr_dialect_desc *desc = sr_dialect_get(dia);
    const sr_dialect_route *route = &desc->routes[0];
    if ((size / 7) % 2 && SR_DIALECT_MAX_ROUTES > 1 && desc->routes[1].path)
        route = &desc->routes[1];
    if (dia == SR_DIALECT_SKYRL)
        route = NULL;
    int rc =
        route ? sr_gen_request_parse_as(&q, (const char *)data, size, &lim, &route->request, &err)
              : sr_gen_request_parse(&q, (const char *)data, size, &lim, &err);
    if (rc) {
        if ((rc != SR_E_ENGINE_REQUEST && rc != SR_E_NOMEM) || err.code != rc || q.tokens)
            abort();
        return 0;
    }
    if (q.P < 1 || q.route_start < 0 || q.route_start > (int64_t)q.P || q.max_tokens < 1 ||
        (int64_t)q.P + q.max_tokens > lim.max_seq)
        abort();
    sr_oracle *o = model();
    sr_gen_job j;
    /* The first input byte picks a model fault and a body fault, so they are fuzzed too. */
    static sr_fault fm, fb;
    memset(&fm, 0, sizeof(fm));
    memset(&fb, 0, sizeof(fb));
    fm.kind = (sr_fault_kind)(SR_FK_ROUTES_ALL_ZERO + data[0] % 8);
    fb.kind = (sr_fault_kind)(SR_FK_BAD_BASE64 + (size > 1 ? data[1] : 0) % 10);
    strcpy(fb.field, "routed_experts");
    strcpy(fb.key, "extra");
    int faulty = size > 2 && (data[2] & 1);
    rc = sr_gen_job_init(&j, &q, o, 0, !q.no_routes, faulty ? &fm : NULL, faulty ? &fb : NULL,
                         1 << 24, &err);
    j.route = route;
    j.dialect = route ? desc : NULL;
    uint64_t fps[3] = {1, 2, 3};
    sr_gen_weights w = {0, 7, fps};
    if (!rc)
        rc = sr_gen_run(&j, o, &w, &w, &err);
    if (!rc && j.G > 1) {
        sr_gen_weights w2 = {1, 8, fps};
        rc = sr_gen_continue(&j, o, &w2, j.G / 2, &err);
    }
    sr_buf body = SR_BUF_INIT;
    sr_gen_ctx ctx = {.oracle = o,
                      .engine_id = "fuzz",
                      .routes = 1,
                      .support = 1,
                      .support_k = 3,
                      .request_ordinal = 1,
                      .max_body = 1 << 26,
                      .stack = SR_STACK_2079};
    if (!rc)
        rc = sr_gen_body_dialect(&body, &j, &ctx, &err);
    if (!rc && !faulty) {
        cJSON *d = cJSON_ParseWithLength(body.data, body.len);
        if (!d)
            abort();
        cJSON_Delete(d);
    }
    sr_buf_release(&body);
    sr_gen_job_release(&j);
    sr_gen_request_release(&q);
    return 0;
}
