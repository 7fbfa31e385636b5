/*
 * spec/fault_grammar: route faults as data. A rule names a SELECTION of route rows (a region of
 * the reply, which rows of it, which MoE layers) and an ACTION on them; the fault kind "routes"
 * carries one in its "select" and "action" objects, and the alias kinds (routes_all_zero,
 * duplicated_output_rows, routes_dropped, pd_decode_replica, stale_prefix_cache, rows_p_plus_g,
 * support_logprob_null, support_no_logprobs) are rows of the alias table in fault_grammar.c,
 * written in the same JSON, with no code of their own. The engine (engine/gen_rules.c) and the
 * proxy (proxy/proxy_routes.c) apply a rule with sr_route_rule_apply; the verifier names the
 * rule whose selection holds a failing row (run/verify.c). scenarios/FORMAT.md ("Faults as
 * data") is the user's reference.
 *
 *   "select": {"region": "all" | "prompt" | "output" | "turn_boundary" | "chunk_boundary",
 *              "chunk": 16,                            chunk_boundary: the prefill chunk size
 *              "rows": [3, 5] | {"from": 0, "to": 10, "stride": 2} | {"block": 4, "every": 16},
 *              "layers": [0, 2],                       MoE layers (default all)
 *              "field": "routed_experts" | "logprobs"} the reply field (default routed_experts)
 *   "action": {"do": "zero" | "constant" | "repeat_previous" | "stale" | "weight_version" |
 *                    "shift" | "swap_layers" | "drop_first" | "drop_last" | "append_last" |
 *                    "truncate" | "mark_partial" | "null" | "drop",
 *              "value": 7, "k": 1, "layers": [0, 1], "version": 0, "tokens": 3, "partial": true}
 *
 * Positions. A route row is named by its token position p (row p is the forward pass on token
 * p). Regions: all = every position; prompt = p < P; output = p >= P; turn_boundary = the one
 * position the request's route start s names when s > 0 (the last token of the previous turn,
 * first computed by this request; empty on wires that send no start); chunk_boundary = the
 * prompt positions p > 0 with p % chunk == 0. A row's index in its region is p (all, prompt),
 * p - P (output), 0 (turn_boundary) or p / chunk - 1 (chunk_boundary); "rows" selects indices:
 * a list, a range (from <= i < to, (i - from) % stride == 0; "to" absent: no end) or blocks
 * (i % every < block). Rows the reply does not carry are not touched.
 *
 * Actions on the selected rows and layers: zero, constant (every slot = value), repeat_previous
 * (row p = row p-1 as held), stale (the engine's weights before its last update), weight_version
 * (the weights of `version`), shift (row p = the row held at p-k), swap_layers (layers[0] and
 * layers[1] exchanged). Whole-reply actions (the selection is not used): drop_first (rows move
 * up by one, the last goes), drop_last, append_last (row P+G-1, the pass on the last sampled
 * token), truncate (rows kept only for the first `tokens` generated tokens; with "partial": true
 * the tokens are cut too and the reply says the request was aborted), mark_partial (truncate
 * with partial), null (the field is null). A partial reply with 0 tokens carries no rows at all:
 * the field is null, as for a request aborted before its first forward pass.
 *
 * Field logprobs (the sampled tokens' logprobs; the one of generated token g is at position P+g,
 * so only the regions all and output hold any; no "select.layers"): null (a selected value that
 * is not finite is written as null, as orjson writes NaN and infinities, instead of the engine's
 * clamp) and drop (the engine got no logprobs: the field is absent, and the later SkyRL stack's
 * capture path fails on it with its 500 AttributeError). drop is a whole-reply action, and is
 * the logprobs field's only.
 *
 * Errors: SR_E_FAULT_SPEC with a message naming the key ("select.region", "action.do", ...) and
 * listing the valid values; *where (when not NULL) is the offending node.
 * Thread-safety: pure functions over immutable tables.
 */
#ifndef SR_SPEC_FAULT_GRAMMAR_H
#define SR_SPEC_FAULT_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sr_dtype.h"
#include "sr_err.h"

#define SR_ROUTE_MAX_ROWS   64   /* entries of a "rows" list */
#define SR_ROUTE_MAX_LAYERS 64   /* entries of a "layers" list */
#define SR_ROUTE_MAX_LAYER  1023 /* largest layer index a rule may name */
#define SR_ROUTE_MAX_SHIFT  4096 /* |k| of shift */

typedef enum sr_route_region {
    SR_RR_ALL = 0,
    SR_RR_PROMPT,
    SR_RR_OUTPUT,
    SR_RR_TURN_BOUNDARY,
    SR_RR_CHUNK_BOUNDARY,
    SR_RR_COUNT
} sr_route_region;

/* The reply field a rule reaches: the packed routes, or the per-token logprobs (`null` and `drop`
 * only). */
typedef enum sr_route_field {
    SR_RF_ROUTED_EXPERTS = 0,
    SR_RF_LOGPROBS,
    SR_RF_COUNT
} sr_route_field;

typedef enum sr_route_rows { SR_RW_ALL = 0, SR_RW_LIST, SR_RW_RANGE, SR_RW_BLOCK } sr_route_rows;

typedef enum sr_route_action {
    SR_RA_ZERO = 0,
    SR_RA_CONSTANT,
    SR_RA_REPEAT_PREVIOUS,
    SR_RA_STALE,
    SR_RA_WEIGHT_VERSION,
    SR_RA_SHIFT,
    SR_RA_SWAP_LAYERS,
    SR_RA_DROP_FIRST,
    SR_RA_DROP_LAST,
    SR_RA_APPEND_LAST,
    SR_RA_TRUNCATE,
    SR_RA_MARK_PARTIAL,
    SR_RA_NULL,
    SR_RA_DROP,
    SR_RA_COUNT
} sr_route_action;

/* A parsed rule; every member is set by the parser (defaults included), so two rules parsed
 * from equivalent JSON compare equal member for member. */
typedef struct sr_route_rule {
    int active; /* 0: the fault has no rule */
    sr_route_field field;
    sr_route_region region;
    int64_t chunk; /* chunk_boundary's chunk size, 1..2^20 (default 16) */
    sr_route_rows rows;
    int64_t row_list[SR_ROUTE_MAX_ROWS];
    int n_rows;
    int64_t from, to, stride; /* SR_RW_RANGE; to = -1: no end */
    int64_t block, every;     /* SR_RW_BLOCK */
    int layers[SR_ROUTE_MAX_LAYERS];
    int n_layers; /* 0: every layer */
    sr_route_action act;
    int64_t value;   /* constant: 0..INT32_MAX */
    int64_t k;       /* shift: -4096..4096, not 0 */
    int swap[2];     /* swap_layers: two distinct layers */
    int64_t version; /* weight_version: 0..2^31-1 */
    int64_t tokens;  /* truncate, mark_partial: generated tokens kept, 0..2^31-1 */
    int partial;     /* truncate: cut the tokens too and answer "aborted" (mark_partial: 1) */
} sr_route_rule;

/*
 * Parses `select` (may be NULL: every row) and `action` (required) into *out. On an error, *where
 * (when not NULL) is the node the message is about.
 */
int sr_route_rule_parse(sr_route_rule *out, const cJSON *select, const cJSON *action,
                        const cJSON **where, sr_err *err);

/* The inverse: new objects (cJSON_Delete) that sr_route_rule_parse reads back member for member.
 * SR_E_NOMEM, SR_E_INTERNAL for a rule no parse gives. */
int sr_route_rule_write_json(cJSON **select, cJSON **action, const sr_route_rule *r, sr_err *err);

/*
 * The alias table: when the kind called `kind_name` is an alias of a rule, *out is that rule and
 * the return is 1; 0 when it is not an alias; a negative code when the table's own JSON does not
 * parse (SR_E_INTERNAL).
 */
int sr_route_alias(sr_route_rule *out, const char *kind_name, sr_err *err);

/* The alias table's rows, for docs: the i-th kind name (NULL past the end) and its rule's JSON
 * text in *select and *action (borrowed; *select may be NULL). */
const char *sr_route_alias_at(size_t i, const char **select, const char **action);

/*
 * Whether the rule's selection holds the row at token position `pos` in a reply to a prompt of
 * P tokens whose route start is `start` (0: none). `layer` < 0 asks about the row, whatever the
 * layer.
 */
int sr_route_rule_covers(const sr_route_rule *r, int64_t pos, int64_t P, int64_t start,
                         int64_t layer);

/*
 * A decoded route array a rule acts on: rows for token positions [lo, hi), each L x K elements
 * of an integer `dtype`, C order, in `data` (the caller's). P is the prompt's token count and
 * `start` the request's route start (0: none), as for sr_route_rule_covers.
 */
typedef struct sr_route_block {
    unsigned char *data;
    sr_dtype dtype;
    int64_t lo, hi;
    size_t L, K;
    int64_t P, start;
} sr_route_block;

/*
 * Applies rule r (field routed_experts) to b in place, the same for the engine's rows and for
 * the rows of a real engine's answer (spec/fault_apply.c): zero, constant (the value truncated
 * to b's dtype: the caller widens it first), repeat_previous, shift and swap_layers on the
 * selected rows and layers; stale and weight_version copy the selected rows from `src` (rows of
 * the same positions as b's, or NULL: nothing to copy from, nothing changes); drop_first,
 * drop_last and truncate without partial move b->hi (drop_first moves the rows up). `src` is
 * not read by the other actions. The actions that need more than the array (null, append_last,
 * mark_partial, truncate with partial) and a rule on the logprobs field are SR_E_INTERNAL: the
 * caller acts on them. Rows of no slots (L or K zero) are left as they are in O(1), whatever
 * their count. SR_E_NOMEM.
 */
int sr_route_rule_apply(sr_route_block *b, const sr_route_rule *r, const unsigned char *src,
                        sr_err *err);

/* Whether the rule's action uses the selection (not a whole-reply action). */
int sr_route_rule_selects(const sr_route_rule *r);

/* Writes "region output, rows from 1 stride 2, layers all: repeat_previous" into buf. */
void sr_route_rule_describe(char *buf, size_t cap, const sr_route_rule *r);

/* Stable names ("turn_boundary", "mark_partial"); NULL out of range. */
const char *sr_route_region_name(sr_route_region r);
const char *sr_route_action_name(sr_route_action a);
const char *sr_route_field_name(sr_route_field f);

#endif /* SR_SPEC_FAULT_GRAMMAR_H */
