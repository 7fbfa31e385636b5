/*
 * The later stack's sample support (gen.h, spec/stack.h), as the reference server builds it
 * (NovaSky-AI/SkyRL #2082, commit 1c3510a4c, vllm_server_actor.py
 * _sample_support_from_flat_logprobs): per generated token, the sampler's top-k candidates in
 * descending order with the filtered ones as trailing -1, and, when the sampled token is not
 * among them (vLLM's approximate top-k/top-p pivot can leave it just past top_k), the row's
 * weakest member (its last valid slot) overwritten with the sampled id.
 */
#include <stdlib.h>

#include "gen_priv.h"
#include "jsonw.h"
#include "sr_mix.h"

/* A vocabulary id below `vocab` from a 64-bit draw (the oracle's `below`). */
static int32_t below(uint64_t x, int64_t vocab)
{
    return (int32_t)(((unsigned __int128)x * (uint64_t)vocab) >> 64);
}

/*
 * One row of K entries for the prefix hash h: valid candidates first, distinct (a few draws per
 * slot; a slot that finds no new id, as with a vocabulary smaller than K, ends the valid part),
 * then -1. One row in eight is cut short, as the top-p/min-p filters cut a support.
 */
static void candidates(int32_t *row, int64_t K, uint64_t h, int64_t vocab)
{
    uint64_t s = sr_mix64(h ^ 0x7375707032303836ULL);
    int64_t valid = K;
    if ((s >> 61) == 0)
        valid = 1 + (int64_t)((s >> 20) % (uint64_t)K);
    int64_t n = 0;
    for (uint64_t draw = 1; n < valid && draw <= (uint64_t)(4 * K + 8); draw++) {
        int32_t v = below(sr_mix64(s + 0x9E3779B97F4A7C15ULL * draw), vocab);
        int dup = 0;
        for (int64_t q = 0; q < n && !dup; q++)
            dup = row[q] == v;
        if (!dup)
            row[n++] = v;
    }
    for (int64_t e = n; e < K; e++)
        row[e] = -1;
}

/* The 2079 stack's support rows (gen.h): entry 0 the sampled token, then seeded ids, with -1
 * for an id drawn twice. `rows` holds G * S entries. */
void sr_gen_support_rows_2079(int32_t *rows, const sr_gen_job *j, const sr_gen_ctx *c, size_t S)
{
    const sr_oracle_model *m = sr_oracle_model_of(c->oracle);
    size_t G = (size_t)j->G;
    uint64_t h = sr_oracle_prefix_empty(c->oracle);
    for (size_t i = 0; i < j->req.P; i++)
        h = sr_oracle_prefix_push(h, j->req.tokens[i]);
    for (size_t g = 0; g < G; g++) {
        int32_t *row = rows + g * S;
        uint64_t s = sr_mix64(h ^ 0x737570706F727431ULL);
        row[0] = j->tokens[g];
        for (size_t e = 1; e < S; e++) {
            uint64_t x = sr_mix64(s + 0x9E3779B97F4A7C15ULL * e);
            int32_t v = (int32_t)(((unsigned __int128)x * (uint64_t)m->vocab) >> 64);
            for (size_t q = 0; q < e; q++)
                if (row[q] == v)
                    v = -1;
            row[e] = v;
        }
        h = sr_oracle_prefix_push(h, j->tokens[g]);
    }
}

int sr_gen_support_rows(int32_t **out, const sr_gen_job *j, const sr_gen_ctx *c, int64_t K,
                        sr_err *err)
{
    const sr_oracle_model *m = sr_oracle_model_of(c->oracle);
    size_t G = (size_t)j->G;
    int repair = !(j->model_fault && j->model_fault->kind == SR_FK_SUPPORT_UNREPAIRED);
    size_t cells = G * (size_t)K;
    int32_t *rows = malloc((cells > 0 ? cells : 1) * sizeof(*rows));
    if (!rows)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the sample support");
    uint64_t h = sr_oracle_prefix_empty(c->oracle);
    for (size_t i = 0; i < j->req.P; i++)
        h = sr_oracle_prefix_push(h, j->req.tokens[i]);
    for (size_t g = 0; g < G; g++) {
        int32_t *row = rows + g * (size_t)K;
        candidates(row, K, h, m->vocab);
        int64_t valid = 0, present = 0;
        for (int64_t e = 0; e < K; e++)
            if (row[e] >= 0) {
                valid++;
                present |= row[e] == j->tokens[g];
            }
        /* The reference's repair; fault support_unrepaired leaves the miss in place. */
        if (repair && !present && valid)
            row[valid - 1] = j->tokens[g];
        h = sr_oracle_prefix_push(h, j->tokens[g]);
    }
    *out = rows;
    return 0;
}

int sr_gen_emit_capture_logprobs(sr_buf *b, sr_gen_job *j, sr_err *err)
{
    /* The capture path reads the sampled-token scores from vLLM's output; when the engine gave
     * none (a rule dropped them), the reference's handler reads `.token_ids` of None and the
     * server answers 500 (the review of SkyRL #2086). */
    if (sr_gen_logprobs_dropped(j)) {
        j->crashed = 1;
        return sr_err_set(err, SR_E_INTERNAL,
                          "AttributeError: 'NoneType' object has no attribute 'token_ids'");
    }
    /* The values are clamped as the ordinary path does (skyrl.md §1.6), or written null where a
     * rule on the logprobs says so (the review of #2082 / #2237). */
    return sr_gen_put_logprobs(b, j, err);
}
