/* Internal helpers shared by gen.c and gen_body.c; not part of the engine's interface. */
#ifndef SR_ENGINE_GEN_PRIV_H
#define SR_ENGINE_GEN_PRIV_H

#include "gen.h"

/* Bytes of one route row ([L, K] of the job's generation dtype). */
size_t sr_gen_row_bytes(const sr_gen_job *j, const sr_oracle *o);

/* The narrowest route dtype that can hold the value v (uint8, int16 or int32). */
sr_dtype sr_gen_dtype_holding(int64_t v);

#endif /* SR_ENGINE_GEN_PRIV_H */
