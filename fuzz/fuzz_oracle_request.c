/*
 * libFuzzer target for the body of the mock engine's oracle route (harness/engine/oracle_req.h):
 * the first byte picks the vocabulary (1..256 token ids), the second the engine's max_seq
 * (1..256), the rest is the body. A refusal must be engine.bad_request, oracle.invalid_token or
 * resource.nomem, carry a message and leave no tokens; an accepted body has 1..max_seq tokens in
 * [0, vocab) and 0 <= row_start <= row_end <= n, and the request written back as JSON parses to
 * the same request.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/oracle_req.h"
#include "sr_buf.h"
#include "sr_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const sr_oracle_req *q, int64_t vocab, int64_t max_seq)
{
    if (!q->tokens || q->n < 1 || (int64_t)q->n > max_seq)
        abort();
    for (size_t i = 0; i < q->n; i++)
        if (q->tokens[i] < 0 || q->tokens[i] >= vocab)
            abort();
    if (q->row_start < 0 || q->row_start > q->row_end || q->row_end > (int64_t)q->n)
        abort();
}

/* The request written back as the body a client would send, parsed again: the same request. */
static void check_round_trip(const sr_oracle_req *q, int64_t vocab, int64_t max_seq)
{
    sr_buf b = SR_BUF_INIT;
    int rc = sr_buf_puts(&b, "{\"token_ids\":[", NULL);
    for (size_t i = 0; !rc && i < q->n; i++)
        rc = sr_buf_printf(&b, NULL, "%s%d", i ? "," : "", (int)q->tokens[i]);
    if (!rc)
        rc = sr_buf_printf(&b, NULL, "],\"row_start\":%lld,\"row_end\":%lld}",
                           (long long)q->row_start, (long long)q->row_end);
    if (rc) {
        sr_buf_release(&b);
        return; /* out of memory: nothing to compare */
    }
    sr_oracle_req again;
    sr_err err = SR_ERR_INIT;
    rc = sr_oracle_req_parse(&again, b.data, b.len, vocab, max_seq, &err);
    sr_buf_release(&b);
    if (rc == SR_E_NOMEM)
        return;
    if (rc || again.n != q->n || again.row_start != q->row_start || again.row_end != q->row_end ||
        memcmp(again.tokens, q->tokens, q->n * sizeof(*q->tokens)) != 0)
        abort();
    sr_oracle_req_release(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int64_t vocab = 1 + (int64_t)data[0], max_seq = 1 + (int64_t)data[1];
    sr_oracle_req q;
    sr_err err = SR_ERR_INIT;
    int rc = sr_oracle_req_parse(&q, (const char *)data + 2, size - 2, vocab, max_seq, &err);
    if (rc) {
        if ((rc != SR_E_ENGINE_REQUEST && rc != SR_E_ORACLE_TOKEN && rc != SR_E_NOMEM) ||
            err.code != rc || !err.msg[0] || q.tokens || q.n)
            abort();
        return 0;
    }
    check_accepted(&q, vocab, max_seq);
    check_round_trip(&q, vocab, max_seq);
    sr_oracle_req_release(&q);
    return 0;
}
