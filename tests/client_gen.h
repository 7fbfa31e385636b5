/*
 * Shared by the client suites: the engine config, a fixed prompt, one generate of it and the
 * check of its routes against the oracle.
 */
#ifndef SR_CLIENT_GEN_H
#define SR_CLIENT_GEN_H

#include "client_fixture.h"

#define MODEL_JSON                                                                                 \
    "\"seed\":11,\"model\":{\"vocab\":64,\"layers\":2,\"experts\":16,\"topk\":2,\"eos_id\":2,"     \
    "\"eos_rate\":0.1}"
#define CFG_CLEAN    "{" MODEL_JSON "}"
#define CFG_FAULT(f) "{" MODEL_JSON ",\"faults\":[" f "]}"

static const int32_t PROMPT[] = {5, 6, 7, 8, 9, 10, 11};
#define PROMPT_LEN 7

static cJSON *sampling(int max_tokens)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "max_tokens", max_tokens);
    cJSON_AddNumberToObject(s, "logprobs", 0);
    return s;
}

/* A generate of PROMPT with routes from `start` (or no routes when start < -1). */
static int gen(fx *f, const char *session, int64_t start, sr_client_result *r, sr_err *e)
{
    cJSON *s = sampling(6);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = PROMPT;
    q.n_tokens = PROMPT_LEN;
    q.sampling_params = s;
    q.session_id = session;
    q.return_routes = start >= -1;
    q.prompt_start = start >= 0 ? start : -1;
    int rc = sr_client_generate(r, f->conn, &q, e);
    cJSON_Delete(s);
    return rc;
}

/* The routes of `r` equal the oracle's rows [start, P+G-1) at version 0. */
static inline void verify_routes(const char *cfg_json, const sr_client_result *r, int64_t start)
{
    fx_model m;
    fx_model_load(&m, cfg_json);
    size_t n = PROMPT_LEN + r->n_tokens;
    int32_t *tok = malloc(n * sizeof *tok);
    memcpy(tok, PROMPT, sizeof PROMPT);
    memcpy(tok + PROMPT_LEN, r->token_ids, r->n_tokens * sizeof *tok);
    size_t rows = n - 1;
    ck_assert(r->has_routes);
    ck_assert_int_eq(r->routes.shape[0], (int64_t)rows - start);
    uint8_t *want = fx_oracle_rows(&m, 0, tok, n, rows, r->routes.dtype);
    size_t rb = r->routes.nbytes / (rows - (size_t)start ? rows - (size_t)start : 1);
    ck_assert_msg(memcmp(want + (size_t)start * rb, r->routes.data, r->routes.nbytes) == 0,
                  "routes differ from the oracle");
    free(want);
    free(tok);
    fx_model_free(&m);
}

/* ---- a one-shot capture server, for the exact request bytes ---- */

#endif /* SR_CLIENT_GEN_H */
