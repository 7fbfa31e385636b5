/* Internal helpers shared by gen.c and gen_body.c; not part of the engine's interface. */
#ifndef SR_ENGINE_GEN_PRIV_H
#define SR_ENGINE_GEN_PRIV_H

#include "gen.h"

/* Bytes of one route row ([L, K] of the job's generation dtype). */
size_t sr_gen_row_bytes(const sr_gen_job *j, const sr_oracle *o);

/* The narrowest route dtype that can hold the value v (uint8, int16 or int32). */
sr_dtype sr_gen_dtype_holding(int64_t v);

/* Element i of an integer array of dtype dt (int8..int64, uint8..uint32; 0 for others). */
int64_t sr_gen_get_el(const void *p, sr_dtype dt, size_t i);
/* Stores v (truncated to dt) as element i. */
void sr_gen_set_el(void *p, sr_dtype dt, size_t i, int64_t v);

/* Applies the job's model fault (gen.h) to its rows; *routes_null = 1 when the routes are
 * dropped. Once per body. */
int sr_gen_apply_model_fault(sr_gen_job *j, const sr_oracle *o, int *routes_null, sr_err *err);

/* Applies rule r (spec/fault_grammar.h) to the job's rows (gen_rules.c); *routes_null = 1 for
 * the action null. */
int sr_gen_apply_rule(sr_gen_job *j, const sr_oracle *o, const sr_route_rule *r, int *routes_null,
                      sr_err *err);

/* gen_logprobs.c: whether the job's model fault drops the logprobs (a rule on field logprobs with
 * action drop): the reply carries none. */
int sr_gen_logprobs_dropped(const sr_gen_job *j);

/* gen_logprobs.c: writes the logprob of generated token i: clamped as sr_gen_logprob_at, or null
 * for a non-finite value a rule on field logprobs with action null selects. */
int sr_gen_put_logprob(sr_buf *b, sr_gen_job *j, int64_t i, sr_err *err);

/* When the rows end at P+G-1: adds row P+G-1 (the forward pass on the last sampled token). */
int sr_gen_add_last_row(sr_gen_job *j, const sr_oracle *o, sr_err *err);

/* Appends `,"syncroll":{...}` (gen.h). */
int sr_gen_emit_syncroll(sr_buf *b, const sr_gen_job *j, const sr_gen_ctx *c, sr_err *err);

/* gen_logprobs.c: appends ,"logprobs":{"content":[{"logprob":x},..]} for the G generated tokens,
 * each value as sr_gen_put_logprob writes it (the ordinary and the capture path share it). */
int sr_gen_put_logprobs(sr_buf *b, sr_gen_job *j, sr_err *err);

/* sr_gen_put_logprobs, or null when not asked for, nothing when the model fault drops them. */
int sr_gen_emit_logprobs(sr_buf *b, sr_gen_job *j, sr_err *err);

/* gen_logprobs.c: the sampled token i's logprob, a non-finite one clamped to -9999.0 and counted
 * in j->clamped. */
double sr_gen_logprob_at(sr_gen_job *j, int64_t i);

/* gen_support.c: the 2079 stack's support rows (gen.h), G * S entries into `rows`. */
void sr_gen_support_rows_2079(int32_t *rows, const sr_gen_job *j, const sr_gen_ctx *c, size_t S);

/* gen_support.c: the later stack's sample support of a capture request, int32 [G, K] into *out
 * (malloc'd, the caller frees it): trailing -1 padding, the sampled token repaired into its row
 * unless the model fault is support_unrepaired. */
int sr_gen_support_rows(int32_t **out, const sr_gen_job *j, const sr_gen_ctx *c, int64_t K,
                        sr_err *err);

/* gen_support.c: `,"logprobs":{"content":[..]}` of a capture request, always present (the
 * reference asks vLLM for top_k logprobs), each value as sr_gen_put_logprob writes it. When the
 * model fault dropped them, the reference's handler fails: SR_E_INTERNAL with its AttributeError
 * and j->crashed set (the reply is the server's own 500). */
int sr_gen_emit_capture_logprobs(sr_buf *b, sr_gen_job *j, sr_err *err);

#endif /* SR_ENGINE_GEN_PRIV_H */
