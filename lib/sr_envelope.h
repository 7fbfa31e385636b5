/*
 * sr_envelope: the packed n-d array envelope {"data":"<b64>","shape":[...],"dtype":"..."}
 * (docs/reference/skyrl.md §1.5, §2) and canonical routed-expert dtypes (§2.3, §2.4).
 *
 * Wire rules: `data` is the first key, then `shape`, then `dtype`, then sidecar keys in order;
 * compact JSON (no whitespace); `data` is strict standard base64 with padding of the array's
 * C-contiguous little-endian bytes (non-zero trailing bits dropped, as the reference's
 * pybase64 validate=True does: sr_base64.h); `dtype` is a NumPy dtype name; the decoded byte count
 * must equal prod(shape) * itemsize.
 *
 * Unpack performs the reference's checks in the reference's order (§2.2):
 *   1. payload not an object                          -> SR_E_ENV_NOT_OBJECT
 *   2. data/shape/dtype missing or of the wrong JSON type, or data not valid base64
 *                                                     -> SR_E_ENV_INVALID (base64 problems keep
 *                                                        their base64.* code), message prefixed
 *                                                        "invalid packed array envelope: "
 *   3. dtype not among the contract's allowed dtypes  -> SR_E_ENV_DTYPE
 *   4. shape not ndim non-negative integers (bools, floats like 1.0, negatives rejected)
 *                                                     -> SR_E_ENV_SHAPE
 *   5. decoded length != prod(shape) * itemsize       -> SR_E_ENV_BYTE_COUNT
 *   6. (canonical_routes only) negative value         -> SR_E_ROUTES_NEGATIVE
 *      declared dtype wider than the canonical one    -> SR_E_ENV_NON_CANONICAL
 * Beyond the reference: the shape product is checked for overflow (SR_E_ENV_OVERFLOW) and
 * against max_bytes (SR_E_ENV_TOO_LARGE) before anything is allocated; for the string path the
 * decoded size implied by the base64 length is also checked against max_bytes before decoding.
 *
 * Messages follow the reference's wording, e.g. "packed array data has 24 bytes, expected 32 for
 * float32[2, 4]" and "packed routed_experts uses non-canonical dtype int32; expected int16".
 *
 * Thread-safety: reentrant.
 */
#ifndef SR_ENVELOPE_H
#define SR_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sr_base64.h"
#include "sr_buf.h"
#include "sr_dtype.h"
#include "sr_err.h"
#include "sr_ndarray.h"

/* 1 GiB: the default maximum decoded size of one packed array. */
#define SR_ENVELOPE_DEFAULT_MAX ((size_t)1 << 30)

/* What a field accepts. Plain struct; fill with SR_CONTRACT_INIT then set what you need. */
typedef struct sr_contract {
    const char *name;     /* field name used in messages ("routed_experts"); NULL: "array" */
    sr_dtype_set allowed; /* allowed dtypes; 0 means any known dtype */
    int ndim;             /* required number of dimensions; -1 means any (<= SR_NDIM_MAX) */
    int canonical_routes; /* 1: integer values must use their smallest route dtype (§2.4) */
    size_t max_bytes;     /* maximum decoded bytes; 0 means SR_ENVELOPE_DEFAULT_MAX */
    sr_b64_impl impl;     /* base64 kernel for the string path; AUTO by default */
} sr_contract;

#define SR_CONTRACT_INIT                                                                           \
    {                                                                                              \
        NULL, 0, -1, 0, 0, SR_B64_AUTO                                                             \
    }

/* The contract of routed_experts: uint8/int16/int32, 3-D, canonical. */
sr_contract sr_contract_routes(void);

/*
 * cJSON keeps numbers only as doubles, so `1.0` and `1` look alike after parsing, yet the
 * reference rejects a float dimension. Callers that still have the raw JSON text of the shape
 * array say what it contained with one of these (see sr_envelope_shape_text()):
 */
#define SR_SHAPE_TEXT_UNKNOWN     0 /* text not seen: integral doubles are taken as integers */
#define SR_SHAPE_TEXT_INTEGERS    1 /* every number was written as an integer literal */
#define SR_SHAPE_TEXT_NON_INTEGER 2 /* a number had a fraction or an exponent: step 4 rejects */

/*
 * Classifies the raw text of a JSON array starting at p[0] == '[' (n bytes available): returns
 * SR_SHAPE_TEXT_NON_INTEGER if a number inside it has '.', 'e' or 'E', SR_SHAPE_TEXT_INTEGERS if
 * the array closes and has none, SR_SHAPE_TEXT_UNKNOWN if p is not an array or it does not close
 * within n bytes. Strings and nesting are not expected in a shape and yield UNKNOWN.
 */
int sr_envelope_shape_text(const char *p, size_t n);

/* 1 for "data", "shape" and "dtype"; 0 for sidecar keys. */
int sr_envelope_is_reserved_key(const char *key);

/*
 * Appends the envelope of `a` to `out`: {"data":"...","shape":[...],"dtype":"..."} followed by
 * the members of `extra` (a cJSON object, or NULL), each printed compactly, in order.
 * Errors (checked in the reference's order, §2.1): a's dtype not in `allowed` (0 = any) ->
 * SR_E_ENV_DTYPE; an extra key equal to data/shape/dtype -> SR_E_ENV_SIDECAR ("sidecar fields
 * collide with envelope keys: ['dtype']"); SR_E_LIMIT/SR_E_NOMEM from the buffer. On error
 * nothing is appended.
 */
int sr_envelope_pack(sr_buf *out, const sr_ndarray *a, sr_dtype_set allowed, const cJSON *extra,
                     sr_b64_impl impl, sr_err *err);

/*
 * Unpacks an envelope whose "data" is a base64 string inside `payload`. `shape_text` is one of
 * SR_SHAPE_TEXT_* (UNKNOWN when the raw text is not at hand). The array bytes are
 * decoded into `arena` (a view; valid until the arena is reset), or, if arena is NULL, into a
 * new owned allocation (out->owned = 1; release with sr_ndarray_release). On error `out` is
 * SR_NDARRAY_INIT. Sidecar keys are the members of payload other than the reserved three.
 */
int sr_envelope_unpack(sr_ndarray *out, const cJSON *payload, int shape_text, const sr_contract *c,
                       sr_arena *arena, sr_err *err);

/*
 * Validates an envelope whose blob was already decoded elsewhere (the response-body splice):
 * `payload` must still contain "data" (any string, normally the "" the splice left) plus shape
 * and dtype; `bytes`/`nbytes` are the decoded blob. Performs checks 1-6 above except the base64
 * decoding itself. On success `out` is a view over `bytes` (out->owned = 0).
 */
int sr_envelope_unpack_decoded(sr_ndarray *out, const cJSON *payload, int shape_text, void *bytes,
                               size_t nbytes, const sr_contract *c, sr_err *err);

/* ---- routed experts ---- */

/*
 * The canonical (smallest) route dtype for a maximum index: < 256 uint8, < 32768 int16,
 * < 2^31 int32; otherwise SR_E_ROUTES_TOO_WIDE ("routed expert index exceeds signed int32: N").
 */
int sr_routes_canonical_dtype(sr_dtype *out, int64_t max, sr_err *err);

/*
 * Checks that integer array `a` is valid routes in its canonical dtype: 3-D integer
 * (SR_E_ROUTES_INVALID), non-negative (SR_E_ROUTES_NEGATIVE), and declared dtype equal to the
 * canonical one (SR_E_ENV_NON_CANONICAL, naming `field`, e.g. "packed routed_experts uses
 * non-canonical dtype int16; expected uint8").
 */
int sr_routes_check_canonical(const sr_ndarray *a, const char *field, sr_err *err);

/*
 * Compacts routes to their canonical dtype (§2.3): `in` must be a 3-D integer array
 * (SR_E_ROUTES_INVALID: "routed expert indices must be an integer [tokens, layers, topk] array,
 * got shape (..) and dtype .."), non-negative (SR_E_ROUTES_NEGATIVE) and below 2^31
 * (SR_E_ROUTES_TOO_WIDE). `out` receives a new owned array (release with sr_ndarray_release).
 */
int sr_routes_compact(sr_ndarray *out, const sr_ndarray *in, sr_err *err);

/* Compacts `routes` and appends its envelope (route dtypes only) to `out`, as pack_routed_experts.
 */
int sr_routes_pack(sr_buf *out, const sr_ndarray *routes, const cJSON *extra, sr_b64_impl impl,
                   sr_err *err);

#endif /* SR_ENVELOPE_H */
