/*
 * sr_weights: a synthetic MoE weight set of named tensors, with versions and fingerprints.
 *
 * The trainer side publishes versions of it, the mock engine holds and patches one, and the
 * routing oracle (sr_oracle) routes with its fingerprints: a partial, stale or corrupted weight
 * sync therefore shows up at exactly the layers whose bytes differ (docs/internals/design.md §3).
 *
 * ---- Tensors (names, dtypes, shapes) ----
 *
 * For each MoE layer with global index g (the oracle's layer_indices), and X = min(experts,
 * expert_tensors) expert tensors per layer (experts 0 .. X-1):
 *   layers.<g>.mlp.router.weight        float32 [router_rows, 64]
 *   layers.<g>.mlp.experts.<e>.w1       float16 [expert_rows, 64]      (also .w2 and .w3)
 * and two global tensors:
 *   embed_tokens.weight                 float16 [global_rows, 64]
 *   lm_head.weight                      float16 [global_rows, 64]
 * bfloat16 has no NumPy name, so float16 and float32 are used. <g> and <e> are decimal without
 * leading zeros. Shapes are synthetic: only the byte budget B = total_bytes decides them:
 *   global_rows = max(1, floor(B / 16 / 128))             (each global tensor ~ B/16)
 *   S           = floor((B - 2 * floor(B / 16)) / L)     (the share of one layer)
 *   router_rows = max(1, floor(S / 32 / 256))             (~ 1/32 of the layer)
 *   expert_rows = max(1, floor((S - router_rows * 256) / (3 * X) / 128))
 * Every tensor's byte size is a multiple of 64. The total never exceeds B
 * (SR_E_WEIGHTS_SPEC if the minimum of one row per tensor would).
 *
 * Tensors are indexed 0 .. count-1 in ascending strcmp() order of their names (so
 * "layers.10..." sorts before "layers.2..."); this is also the "name order" below.
 *
 * ---- Contents at version v (normative) ----
 *
 * G, mix(), draw(), unit() and below() are those of sr_oracle.h; tkey = XXH3_64bits_withSeed(
 * name bytes without the NUL, seed). A tensor of nbytes bytes has nblocks = nbytes / 64 blocks
 * of 64 bytes. At version u >= 1:
 *   tch(u)      = mix(tkey ^ mix(0x74656E736F726368 + u))
 *   changed(u)  = global tensor ? true : unit(tch(u)) < tensor_change_rate
 *   pick(u)     = below(mix(tch(u)), nblocks)              (a block that always changes)
 *   block b changes at u iff changed(u) and
 *               (b == pick(u) or unit(mix(tch(u) + G * (b + 1))) < block_change_rate)
 *   gen(b, v)   = the largest u in 1..v at which block b changes, or 0
 * Block b holds the 8 little-endian 64-bit words w_j = shape(draw(key, j)), j = 0..7, with
 *   key         = mix(mix(tkey + G * (b + 1)) + G * (gen(b, v) + 1))
 *   shape(x)    = float16: (x & 0x8FFF8FFF8FFF8FFF) | 0x2000200020002000
 *                 float32: (x & 0x81FFFFFF81FFFFFF) | 0x3C0000003C000000
 * so every element is a finite value of magnitude in [2^-7, 2^-3). Version v+1 thus differs
 * from v in the global tensors and in about tensor_change_rate of the layer tensors, each in
 * about block_change_rate of its 64-byte blocks (XOR deltas of mostly zero bytes); the other
 * tensors are byte-identical (a delta manifest omits them).
 *
 * ---- Fingerprints (normative) ----
 *
 *   digest(t)   = XXH3_128bits of the tensor's bytes as held now
 *   layer_fp[l] = XXH3_64bits (seed 0) of the concatenated canonical (big-endian, 16-byte)
 *                 digests of layer slot l's tensors in name order
 *   global_fp   = the same over the two global tensors (embed_tokens.weight, lm_head.weight)
 * (In Python: xxh3_64(b"".join(xxh3_128_digest(bytes) for each tensor in name order)).)
 * digest(t) is the xxh3-128 checksum a delta manifest carries for the tensor's new bytes.
 * Writing a tensor recomputes its digest and its layer's (or the global) fingerprint only.
 *
 * ---- Ownership, errors, thread-safety ----
 *
 * sr_weights is opaque and owns all tensor bytes (one 64-byte-aligned allocation); free it with
 * sr_weights_free. Names and data pointers returned by getters are borrowed and live as long as
 * the set (data changes in place on writes). Functions taking `const sr_weights *` may run
 * concurrently with each other; sr_weights_write, sr_weights_xor and sr_weights_reset need
 * exclusive access (the engine holds its own lock). No global mutable state.
 * Errors: SR_E_WEIGHTS_SPEC (bad spec or version), SR_E_WEIGHTS_UNKNOWN (name or index),
 * SR_E_WEIGHTS_SIZE (byte count differs from the tensor's), SR_E_NOMEM.
 */
#ifndef SR_WEIGHTS_H
#define SR_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"

#define SR_WEIGHTS_MIN_BYTES   ((size_t)1 << 20)
#define SR_WEIGHTS_MAX_BYTES   ((size_t)1 << 30)
#define SR_WEIGHTS_MAX_LAYERS  1024
#define SR_WEIGHTS_MAX_EXPERTS 64 /* cap on expert_tensors per layer */
#define SR_WEIGHTS_MAX_VERSION 100000
#define SR_WEIGHTS_NAME_MAX    64 /* longest tensor name, including the NUL */

/*
 * Plain struct: start from SR_WEIGHTS_SPEC_INIT.
 *   seed               content seed (normally the scenario seed)
 *   num_layers         1 .. SR_WEIGHTS_MAX_LAYERS MoE layers
 *   layer_indices      their global indices, >= 0, strictly increasing (copied)
 *   experts            E of the model, >= 1
 *   expert_tensors     cap X on expert tensors per layer, 1 .. SR_WEIGHTS_MAX_EXPERTS
 *   total_bytes        budget B, SR_WEIGHTS_MIN_BYTES .. SR_WEIGHTS_MAX_BYTES
 *   tensor_change_rate probability that a layer tensor changes at a version, [0, 1]
 *   block_change_rate  fraction of a changed tensor's 64-byte blocks that change, [0, 1]
 */
typedef struct sr_weights_spec {
    uint64_t seed;
    int num_layers;
    const int32_t *layer_indices;
    int64_t experts;
    int expert_tensors;
    size_t total_bytes;
    double tensor_change_rate;
    double block_change_rate;
} sr_weights_spec;

#define SR_WEIGHTS_SPEC_INIT                                                                       \
    {                                                                                              \
        0, 0, NULL, 0, 8, (size_t)1 << 20, 0.75, 0.125                                             \
    }

/* One tensor, as returned by sr_weights_tensor. */
typedef struct sr_weights_info {
    const char *name;   /* borrowed */
    sr_dtype dtype;     /* SR_DTYPE_FLOAT16 or SR_DTYPE_FLOAT32 */
    int64_t shape[2];   /* [rows, 64] */
    size_t nbytes;      /* rows * 64 * itemsize, a multiple of 64 */
    int layer;          /* MoE layer slot 0 .. num_layers-1, or -1 for a global tensor */
    const void *data;   /* borrowed, nbytes bytes, 64-byte aligned */
    uint64_t digest_hi; /* XXH3-128 of data: high64 (printed first in the canonical hex) */
    uint64_t digest_lo; /*                   low64 */
} sr_weights_info;

typedef struct sr_weights sr_weights;

/* Builds the set at `version` (0 .. SR_WEIGHTS_MAX_VERSION) into *out (sr_weights_free). */
int sr_weights_new(sr_weights **out, const sr_weights_spec *spec, int64_t version, sr_err *err);

/* Frees the set. NULL is a no-op. */
void sr_weights_free(sr_weights *w);

/* Regenerates every tensor in place as `version` (discarding all writes); no new pages. */
int sr_weights_reset(sr_weights *w, int64_t version, sr_err *err);

/* The set's spec (borrowed; layer_indices points into the set). */
const sr_weights_spec *sr_weights_spec_of(const sr_weights *w);

/* The version last generated by new/reset; writes do not change it. */
int64_t sr_weights_version(const sr_weights *w);

/* Number of tensors, and the sum of their byte sizes. */
size_t sr_weights_count(const sr_weights *w);
size_t sr_weights_total_bytes(const sr_weights *w);

/* Tensor `index` (0 .. count-1) into *out; SR_E_WEIGHTS_UNKNOWN for a bad index. */
int sr_weights_tensor(sr_weights_info *out, const sr_weights *w, size_t index, sr_err *err);

/* Index of the tensor called `name` (binary search); SR_E_WEIGHTS_UNKNOWN if there is none. */
int sr_weights_find(size_t *index, const sr_weights *w, const char *name, sr_err *err);

/*
 * Replaces tensor `index`'s bytes with bytes[0..n) (n must equal its nbytes, else
 * SR_E_WEIGHTS_SIZE and nothing changes), then recomputes its digest and the fingerprint of its
 * layer (or the global one).
 */
int sr_weights_write(sr_weights *w, size_t index, const void *bytes, size_t n, sr_err *err);

/*
 * XORs patch[0..n) into tensor `index` (n must equal its nbytes) and recomputes as
 * sr_weights_write does. XOR is its own inverse: applying the same patch again restores the
 * previous bytes (a receiver can undo a patch whose checksum does not match).
 */
int sr_weights_xor(sr_weights *w, size_t index, const void *patch, size_t n, sr_err *err);

/* Current fingerprints: *global and layers[0..num_layers) (either may be NULL). */
void sr_weights_fingerprints(uint64_t *global, uint64_t *layers, const sr_weights *w);

/*
 * The fingerprints a set built from `spec` at `version` would have, computed tensor by tensor
 * in a scratch buffer of the largest tensor's size, without holding the whole set (for the
 * verifier). Same errors as sr_weights_new.
 */
int sr_weights_expected(uint64_t *global, uint64_t *layers, const sr_weights_spec *spec,
                        int64_t version, sr_err *err);

#endif /* SR_WEIGHTS_H */
