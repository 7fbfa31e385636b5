/*
 * oracle_req: the body of POST /syncroll/v1/oracle, the engine's true route rows for a token
 * sequence (docs/reference/engine.md, "The oracle route"), parsed strictly from untrusted bytes.
 *
 * Accepted body: a JSON object with these keys and no other:
 *   "token_ids"  required: 1 .. max_seq integer literals, each in [0, vocab): the sequence
 *                t[0..N), usually a prompt followed by the tokens a generate returned
 *   "row_start"  optional (absent or null: 0): an integer literal in [0, N]
 *   "row_end"    optional (absent or null: N - 1, the rows a generate that returned t computed,
 *                since no forward pass read its last token): an integer literal in
 *                [row_start, N]
 * Row i is the forward pass whose input is token i (lib/sr_oracle.h); rows [row_start, row_end)
 * are asked. A body holding an escaped NUL (\u0000) in any string is refused, as the control
 * plane's bodies are (sync_req.h).
 *
 * Errors: SR_E_ORACLE_TOKEN (oracle.invalid_token) for a token id outside [0, vocab);
 * SR_E_ENGINE_REQUEST (engine.bad_request) for everything else: not JSON, not an object, a key
 * unknown, missing or given twice, a type, a bound (the message names the key and, where there is
 * one, its line:col); SR_E_NOMEM. The caller bounds the body's length (server.max_body_bytes);
 * the parser bounds the token count by max_seq before it allocates.
 *
 * Ownership: an sr_oracle_req owns its tokens; release with sr_oracle_req_release. On error the
 * result is SR_ORACLE_REQ_INIT. Thread-safety: reentrant.
 */
#ifndef SR_ENGINE_ORACLE_REQ_H
#define SR_ENGINE_ORACLE_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"

typedef struct sr_oracle_req {
    int32_t *tokens; /* owned, n entries */
    size_t n;
    int64_t row_start, row_end; /* 0 <= row_start <= row_end <= n */
} sr_oracle_req;

#define SR_ORACLE_REQ_INIT                                                                         \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

/* Parses `len` bytes of `body` for a model of `vocab` token ids and an engine whose sequences
 * hold at most `max_seq` tokens (both >= 1). */
int sr_oracle_req_parse(sr_oracle_req *out, const char *body, size_t len, int64_t vocab,
                        int64_t max_seq, sr_err *err);

void sr_oracle_req_release(sr_oracle_req *q);

#endif /* SR_ENGINE_ORACLE_REQ_H */
