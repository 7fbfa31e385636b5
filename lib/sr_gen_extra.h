/*
 * sr_gen_extra: packed fields beyond the built-ins, emitted by the mock engine from a field
 * definition (lib/sr_fields.h) with seeded values inside the definition's contract, so that a new
 * side channel can be exercised end to end before a real engine produces it
 * (`syncroll validate-field`, engine config `fields` entries that are definition objects).
 *
 * For a definition d and one reply (the request's prompt tokens and the generated tokens):
 *   seed    s = mix(engine seed, FNV-1a of d.name, every prompt token, every generated token)
 *   dtype   one of sr_gen_extra_dtypes(d), chosen by s, so that a series of requests exercises
 *           every dtype the engine can emit for the field
 *   shape   d.ndim axes. With a declared shape (d.has_shape): "T" is G, a fixed length is
 *           itself, "*" is as below. Without: axis 0 is G (one row per generated token) when
 *           d.token_rows, else 1 + s % 4; every other axis is 1 + h(name, axis) % 4, fixed per
 *           field as the width of a real side channel would be
 *   values  drawn per element with splitmix64 from s: integers anywhere in the dtype's range,
 *           except that with d.canonical they lie where the chosen dtype is exactly the smallest
 *           route dtype of the maximum (uint8 [0, 255], int16 [256, 32767], int32 [32768,
 *           2^31 - 1]); bool 0 or 1; floats finite in [-8, 8) (float16 as IEEE half bits); all
 *           little-endian. A declared range (d.has_range) narrows each: integers are uniform in
 *           its intersection with the above, floats in the range within the dtype's finite
 *           values (rounded into it). A dtype whose values cannot meet the range is not among
 *           sr_gen_extra_dtypes. An empty array under d.canonical is emitted as uint8 when
 *           allowed.
 * A definition whose canonical flag leaves no route dtype in its list cannot be emitted
 * (sr_gen_extra_dtypes returns 0; the engine config refuses it).
 *
 * Ownership: sr_gen_extra_make fills *out with malloc'ed bytes; sr_gen_extra_release frees them.
 * Errors: SR_E_NOMEM; SR_E_ENGINE_CONFIG for a definition that cannot be emitted; SR_E_LIMIT
 * when the array would exceed max_bytes; SR_E_ENV_OVERFLOW for a shape whose bytes overflow. Pure
 * functions of their arguments; thread-safe.
 */
#ifndef SR_GEN_EXTRA_H
#define SR_GEN_EXTRA_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"
#include "sr_fields.h"
#include "sr_ndarray.h"

typedef struct sr_gen_extra {
    sr_dtype dtype;
    int ndim;
    int64_t shape[SR_NDIM_MAX];
    size_t nbytes;
    unsigned char *bytes; /* nbytes (allocated with at least 1 byte) */
} sr_gen_extra;

/* The dtypes of d the engine can emit: d.dtypes, or only its route dtypes when canonical, less
 * those that hold no value of d's declared range. */
sr_dtype_set sr_gen_extra_dtypes(const sr_field_def *d);

/*
 * The array the engine emits for field d in a reply to `prompt` (P tokens) that generated `gen`
 * (G tokens), with the engine's seed. `max_bytes` bounds the array (0: none).
 */
int sr_gen_extra_make(sr_gen_extra *out, const sr_field_def *d, uint64_t seed,
                      const int32_t *prompt, size_t P, const int32_t *gen, size_t G,
                      size_t max_bytes, sr_err *err);

void sr_gen_extra_release(sr_gen_extra *x);

#endif /* SR_GEN_EXTRA_H */
