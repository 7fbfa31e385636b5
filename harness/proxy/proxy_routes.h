/*
 * proxy_routes: the route faults of the fault grammar (spec/fault_grammar.h: the kind "routes"
 * and its aliases) applied by the proxy to a real engine's generate answer, read whole.
 *
 * The answer's wire is told from its bytes (sr_dialect_sniff, as check-body does); the request's
 * path must be a generate route of that dialect. The answer is spliced and validated by the
 * client's own code (lib/sr_splice.h with the dialect's registry, spec/dialect.h), so an answer
 * the client would refuse is never rewritten. Each route field is decoded, the rule applied by
 * the function the engine applies it with (sr_route_rule_apply) with the prompt length and route
 * start of the request, re-encoded in the same wire (skyrl's envelope in the narrowest route dtype
 * that holds its values, as the engine packs its own; the other wires in their dtype, which the
 * engine fixes per model), and written in place of the field's value; every other byte of the
 * answer is the engine's. Routes of no elements (a zero dimension) are left unchanged. Rows per
 * wire (spec/dialect.h): trimmed wires hold positions [start, ..) of a prompt of P tokens (P and
 * start from the request); vllm-json's two fields are one array of positions [0, P+G) split at P,
 * whose last row (added by the engine after the rule) the rule does not reach and which stays only
 * when the rule kept every other row; nemo-rl's last row is its filler and is kept as it is.
 * SGLang's flat wire carries no shape: its rows are P+G-1-start (G: the answer's token ids) and a
 * row is taken as one layer of L*K slots, so a rule that names layers (select.layers, swap_layers)
 * leaves such an answer unchanged.
 *
 * Thread-safety: pure functions over their arguments.
 */
#ifndef SR_PROXY_ROUTES_H
#define SR_PROXY_ROUTES_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "spec/dialect.h"
#include "spec/faults.h"
#include "sr_ndarray.h"
#include "sr_buf.h"
#include "sr_err.h"

/*
 * Whether the proxy applies fault f (the i-th of its plan): 1 for a route-grammar fault it can
 * apply to an answer alone; 0 for a fault that is not of the grammar; SR_E_FAULT_SPEC naming f
 * and why for a rule that needs the engine's own state (stale and weight_version: other
 * weights' rows; append_last: a forward pass; truncate with partial and mark_partial: the
 * tokens; a rule on the logprobs field: values before the engine clamped them).
 */
int sr_px_routes_supported(const sr_fault *f, size_t i, sr_err *err);

/*
 * Rewrites the generate answer body[0, len) to the request `req_body` at `path` (a URI; a query
 * is ignored) under rule r. When the rule was applied, *out holds the new answer (reset first)
 * and the return is 1. When the answer holds nothing to rewrite, or one the client's splice
 * refuses, or a shape the rule cannot be placed on, *out is left empty, *why (static text) says
 * why and the return is 0. SR_E_NOMEM and the buffer's SR_E_LIMIT otherwise.
 */
int sr_px_routes_rewrite(sr_buf *out, const char **why, const char *path, const char *req_body,
                         size_t req_len, const char *body, size_t len, const sr_route_rule *r,
                         sr_err *err);

/*
 * proxy_routes_wire.c, for proxy_routes.c: appends the value of one route field as encoding
 * `enc` writes it: array a ([rows, L, K], or 1-D for the flat wire; nested lists from int64
 * values) in a's dtype; `sidecar` (may be NULL) holds the envelope's other members (skyrl: after
 * dtype; dynamo: its "start", between shape and dtype). SR_E_INVAL for an array the encoding
 * cannot write (npy and nrlre: not 3-D or a dtype they do not name), SR_E_NOMEM, SR_E_LIMIT.
 */
int px_route_encode(sr_buf *b, sr_route_encoding enc, const sr_ndarray *a, const cJSON *sidecar,
                    sr_err *err);

#endif /* SR_PROXY_ROUTES_H */
