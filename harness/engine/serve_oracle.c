/*
 * POST /syncroll/v1/oracle: the true route rows of a token sequence under the weights the engine
 * holds now (oracle_req.h reads the body; docs/reference/engine.md describes the answer). It
 * reads the engine's fingerprints and its oracle and nothing of the generate path: no fault
 * reaches this route (spec/fault_kinds.c leaves it out of every plan), and a pause or a sleeping
 * memory tag does not hold it, so a test can ask for the truth while a fault corrupts what
 * generate returns.
 */
#include <stdio.h>
#include <stdlib.h>

#include "jsonw.h"
#include "oracle_req.h"
#include "server_priv.h"

/* Bytes of route rows computed per call of sr_oracle_routes. Each call hashes the prefix from
 * token 0 again, so fewer, larger calls cost less; the bound keeps the scratch buffer small
 * next to the answer, which the engine holds whole anyway. */
#define CHUNK_BYTES ((size_t)16 << 20)

/* Bytes of the answer's frame around the rows, at most: keys, the id, four integers. */
#define FRAME_BYTES ((uint64_t)512)

/* An upper bound on the answer's length: every id with the digits of the largest one and a
 * separator, two brackets and a separator per layer and per row, and the frame. */
static uint64_t answer_bound(int64_t rows, int L, int K, int64_t experts)
{
    uint64_t digits = 1;
    for (int64_t v = experts - 1; v >= 10; v /= 10)
        digits++;
    uint64_t per_layer = (uint64_t)K * (digits + 1) + 2;
    uint64_t per_row = (uint64_t)L * per_layer + 3;
    return FRAME_BYTES + (uint64_t)rows * per_row;
}

/* Writes rows [q->row_start, q->row_end) as nested lists [[[e, ..K], ..L], ..] into b. */
static int write_rows(sr_buf *b, const sr_oracle *o, const uint64_t *fps, const sr_oracle_req *q,
                      sr_err *err)
{
    const sr_oracle_model *m = sr_oracle_model_of(o);
    size_t L = (size_t)m->num_layers, K = (size_t)m->topk, row_ints = L * K;
    size_t rows = (size_t)(q->row_end - q->row_start);
    size_t per = CHUNK_BYTES / (row_ints * sizeof(int32_t));
    per = per < 1 ? 1 : per > rows ? rows : per;
    int32_t *chunk = malloc((per ? per : 1) * row_ints * sizeof(*chunk));
    if (!chunk)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu route rows", per);
    int rc = sr_buf_puts(b, "[", err);
    for (size_t lo = (size_t)q->row_start; !rc && lo < (size_t)q->row_end; lo += per) {
        size_t hi = lo + per < (size_t)q->row_end ? lo + per : (size_t)q->row_end;
        rc = sr_oracle_routes(chunk, per * row_ints * sizeof(*chunk), NULL, SR_DTYPE_INT32, o, fps,
                              q->tokens, q->n, lo, hi, err);
        for (size_t i = 0; !rc && i < hi - lo; i++) {
            rc = sr_buf_puts(b, lo + i > (size_t)q->row_start ? ",[" : "[", err);
            for (size_t l = 0; !rc && l < L; l++) {
                if (l)
                    rc = sr_buf_puts(b, ",", err);
                if (!rc)
                    rc = sr_jw_i32_array(b, chunk + (i * L + l) * K, K, err);
            }
            if (!rc)
                rc = sr_buf_puts(b, "]", err);
        }
    }
    free(chunk);
    return rc ? rc : sr_buf_puts(b, "]", err);
}

/* The answer: {"engine","weight_version","row_start","row_end","shape","dtype","routes"}. */
static int write_answer(sr_buf *b, const sr_server *s, const sr_gen_weights *w,
                        const sr_oracle_req *q, sr_err *err)
{
    const sr_oracle_model *m = sr_oracle_model_of(sr_engine_oracle(s->e));
    int rc = sr_buf_puts(b, "{\"engine\":", err);
    if (!rc)
        rc = sr_jw_str(b, s->cfg->id, err);
    if (!rc)
        rc = sr_buf_printf(b, err,
                           ",\"weight_version\":%lld,\"row_start\":%lld,\"row_end\":%lld,"
                           "\"shape\":[%lld,%d,%d],\"dtype\":\"int32\",\"routes\":",
                           (long long)w->version, (long long)q->row_start, (long long)q->row_end,
                           (long long)(q->row_end - q->row_start), m->num_layers, m->topk);
    if (!rc)
        rc = write_rows(b, sr_engine_oracle(s->e), w->layer_fps, q, err);
    return rc ? rc : sr_buf_puts(b, "}", err);
}

enum MHD_Result sr_srv_oracle(req *r)
{
    sr_server *s = r->srv;
    const sr_engine_config *c = s->cfg;
    sr_err err = SR_ERR_INIT;
    sr_oracle_req q = SR_ORACLE_REQ_INIT;
    const char *body = r->body.data ? r->body.data : "";
    int rc = sr_oracle_req_parse(&q, body, r->body.len, c->vocab, c->max_seq, &err);
    if (rc)
        return rc == SR_E_NOMEM ? sr_srv_error(r, 500, "InternalServerError", rc, err.msg)
                                : sr_srv_error(r, 400, "BadRequestError", rc, err.msg);
    int64_t rows = q.row_end - q.row_start;
    uint64_t bound = answer_bound(rows, c->num_layers, c->topk, c->experts);
    if (bound > c->max_response_bytes) {
        char msg[320];
        snprintf(msg, sizeof(msg),
                 "the answer of %lld rows x %d layers x %d experts could reach %llu bytes, more "
                 "than the engine's server.max_response_bytes (%zu); ask fewer rows (row_start, "
                 "row_end)",
                 (long long)rows, c->num_layers, c->topk, (unsigned long long)bound,
                 c->max_response_bytes);
        sr_oracle_req_release(&q);
        return sr_srv_error(r, 400, "BadRequestError", SR_E_ENGINE_REQUEST, msg);
    }
    sr_gen_weights cur = {0}, prev = {0};
    int has_prev = 0;
    sr_buf b = SR_BUF_INIT;
    rc = sr_engine_weights_now(s->e, &cur, &prev, &has_prev, &err);
    if (!rc)
        rc = write_answer(&b, s, &cur, &q, &err);
    sr_gen_weights_release(&cur);
    sr_gen_weights_release(&prev);
    sr_oracle_req_release(&q);
    if (rc) {
        sr_buf_release(&b);
        return sr_srv_error(r, 500, "InternalServerError", rc, err.msg);
    }
    return sr_srv_respond(r, 200, "application/json", &b, 1);
}
