/*
 * sr_fields: the registry of keys that the response-body splice treats specially.
 *
 * Four kinds of entries (the last two carry the route wires of the other engine dialects):
 *   packed fields     keys whose value is a packed-array envelope {"data":"<b64>",...}
 *                     (skyrl.md §1.5): the splice cuts the blob out before the JSON parser
 *                     runs and decodes it. A definition says which dtypes and how many dimensions
 *                     the array may have, whether its values must use their smallest (canonical)
 *                     route dtype, whether JSON null is allowed, and whether axis 0 counts token
 *                     rows.
 *   integer arrays    keys whose value is a JSON array of integers (token_ids): the splice hands
 *                     the array text to sr_intarray instead of the JSON parser. A definition gives
 *                     the accepted value range.
 *   string blobs      keys whose value is a JSON string of base64 (SR_FIELD_STRING): the splice
 *                     cuts and decodes it like an envelope's blob; `wire` says what the bytes are:
 *                     raw elements of the field's one dtype (1-D, the reader reshapes), a .npy
 *                     file (dtype and shape from its header), or NeMo-RL's nrlre1 string (dtype
 *                     and shape from the text before the base64, which stays in the parsed
 *                     document). A string the scan did not cut (written with spaces) is decoded
 *                     from the document, with the same checks.
 *   nested lists      keys whose value is nested JSON integer lists of `ndim` levels
 *                     (SR_FIELD_NESTED, vLLM 0.21's routes): read from the parsed document into a
 *                     rectangular array (lib/sr_nested.h), values in [min, max].
 *
 * Built-ins (sr_fields_add_builtins): routed_experts (uint8/int16/int32, ndim 3, canonical,
 * nullable, token rows), rollout_sample_support (int32, ndim 2, nullable, token rows), and the
 * integer array token_ids in [0, 2^31 - 1].
 *
 * Names: 1..SR_FIELD_NAME_MAX bytes of printable ASCII without '"' or '\' (a name is matched
 * byte for byte against the raw body, so it must serialise as itself), not "data", "shape" or
 * "dtype", and unique within a registry.
 *
 * JSON definitions (files such as fixtures/fields/logit_topk.json):
 *   {"fields": [{"name": "logit_topk", "dtypes": ["int32"], "ndim": 2,
 *                "canonical": false, "nullable": true, "token_rows": true,
 *                "max_bytes": 1073741824}],
 *    "int_arrays": [{"name": "prompt_ids", "min": 0, "max": 262143}]}
 * "name", "dtypes" and "ndim" (1..SR_NDIM_MAX) are required for a field (ndim may be left out
 * when "shape" is given); the rest default to canonical false, nullable true, token_rows false,
 * max_bytes SR_ENVELOPE_DEFAULT_MAX, no shape and no value constraint. For an
 * integer array, "min" and "max" default to 0 and 2^31 - 1. "canonical" requires integer dtypes.
 * Every problem is SR_E_FIELD_DEF with "source:line:col: ..." (unparsable JSON, unknown or
 * duplicate keys, wrong types, bad names, duplicate names); SR_E_IO for an unreadable file.
 *
 * Declared shape and values (packed and string-blob fields; sr_field_check_array enforces them):
 *   "shape": ["T", 8]   one entry per axis: "T" (axis 0 only: the token dimension, one row per
 *                       token; it sets token_rows, and "token_rows": false with it is an error),
 *                       "*" (any length) or a fixed length 1..2^31 - 1. "ndim", when given too,
 *                       must equal the entry count. The fixed lengths times the widest listed
 *                       dtype (the bytes of one row) must not exceed max_bytes (or the default):
 *                       the product is computed without overflow. token_rows true needs "T" at
 *                       axis 0.
 *   "range": [lo, hi]   every value lies in [lo, hi] (inclusive): integers when the field lists
 *                       an integer dtype (an id range, e.g. [0, 255]; exact in int64), else
 *                       finite numbers; lo <= hi. For floats a range also requires finite values.
 *   "finite": true      float values must be finite (no NaN or infinity); default false.
 * Each bad entry is SR_E_FIELD_DEF naming the key and the axis ("shape: axis 1 must be ...").
 *
 * Ownership: a registry owns copies of its definitions; pointers returned by sr_fields_at and
 * sr_fields_find stay valid until the registry is freed or changed.
 * Thread-safety: a registry may be read from several threads; changes need one owner.
 */
#ifndef SR_FIELDS_H
#define SR_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_envelope.h"
#include "sr_err.h"
#include "sr_ndarray.h"

#define SR_FIELD_NAME_MAX 64
#define SR_FIELDS_MAX     32

typedef enum sr_field_kind {
    SR_FIELD_PACKED = 1,
    SR_FIELD_INT_ARRAY = 2,
    SR_FIELD_STRING = 3, /* a JSON string of base64 (after an optional text prefix), see `wire` */
    SR_FIELD_NESTED = 4  /* nested JSON integer lists of `ndim` levels, values in [min, max] */
} sr_field_kind;

/* What the base64 of an SR_FIELD_STRING carries (the engine dialects, harness/spec/dialect.h). */
typedef enum sr_field_wire {
    SR_WIRE_RAW = 0, /* C-order little-endian bytes of the field's one dtype, no shape (sglang) */
    SR_WIRE_NPY,     /* the bytes of a .npy v1.0 file (lib/sr_npy.h; vllm) */
    SR_WIRE_NRLRE    /* "nrlre1:<dtype>:<SxLxK>:" then the base64 (lib/sr_nrlre.h; nemo-rl) */
} sr_field_wire;

typedef struct sr_field_def {
    sr_field_kind kind;
    char name[SR_FIELD_NAME_MAX + 1];
    size_t name_len;
    /* SR_FIELD_PACKED */
    sr_dtype_set dtypes; /* allowed dtypes (non-empty) */
    int ndim;            /* 1..SR_NDIM_MAX */
    int canonical;       /* values must use their smallest route dtype (§2.3) */
    int nullable;        /* JSON null means "nothing captured" and is accepted */
    int token_rows;      /* axis 0 counts token rows */
    size_t max_bytes;    /* maximum decoded bytes; 0: SR_ENVELOPE_DEFAULT_MAX */
    /* SR_FIELD_INT_ARRAY and SR_FIELD_NESTED */
    int64_t min, max; /* accepted value range */
    /* SR_FIELD_STRING (dtypes, ndim, nullable, token_rows and max_bytes apply as for packed) */
    sr_field_wire wire;
    /* SR_FIELD_PACKED and SR_FIELD_STRING: the declared shape and value constraints */
    int has_shape;                /* dims holds ndim entries */
    int64_t dims[SR_NDIM_MAX];    /* SR_FIELD_DIM_T, SR_FIELD_DIM_ANY or a fixed length >= 1 */
    int has_range;                /* values lie in [range_lo, range_hi] */
    int64_t range_min, range_max; /* the range as integers (integer dtypes) */
    double range_lo, range_hi;    /* the range as doubles (float dtypes) */
    int finite;                   /* float values must be finite (also implied by has_range) */
} sr_field_def;

#define SR_FIELD_DIM_T   (-1) /* "T": one row per token */
#define SR_FIELD_DIM_ANY (-2) /* "*": any length */

typedef struct sr_fields sr_fields;

/* Creates an empty registry. */
int sr_fields_new(sr_fields **out, sr_err *err);

/* Frees the registry; NULL is a no-op. */
void sr_fields_free(sr_fields *f);

/* Adds routed_experts, rollout_sample_support and token_ids (see above). */
int sr_fields_add_builtins(sr_fields *f, sr_err *err);

/* Adds each built-in whose name `f` does not hold yet: loading a file first and then calling
 * this lets the file's definition of a built-in name replace it (check-body --field-registry:
 * rollout_sample_support with any dtype is the #2079 contract). */
int sr_fields_add_missing_builtins(sr_fields *f, sr_err *err);

/*
 * Validates and copies one definition (name_len is recomputed from name). SR_E_FIELD_DEF for a
 * bad definition or a duplicate name, SR_E_LIMIT past SR_FIELDS_MAX entries.
 */
int sr_fields_add(sr_fields *f, const sr_field_def *def, sr_err *err);

/*
 * Adds every definition of a JSON document (`len` bytes, need not be NUL-terminated); `source`
 * names it in messages. All or nothing: on error the registry is unchanged.
 */
int sr_fields_load_json(sr_fields *f, const char *text, size_t len, const char *source,
                        sr_err *err);

/* The largest registry file sr_fields_load_file reads. */
#define SR_FIELDS_MAX_FILE ((size_t)1 << 20)

/*
 * Reads the file at `path` with sr_file_read (never blocking: a FIFO, device or directory is
 * SR_E_NOT_REGULAR before a byte is read) and calls sr_fields_load_json. Errors beyond
 * sr_fields_load_json's: SR_E_IO (cannot open or read, with the OS reason), SR_E_NOT_REGULAR,
 * SR_E_LIMIT past SR_FIELDS_MAX_FILE bytes, SR_E_NOMEM.
 */
int sr_fields_load_file(sr_fields *f, const char *path, sr_err *err);

/*
 * A new registry holding only the named entries of `f`, in f's order. An unknown name is
 * SR_E_FIELD_UNKNOWN. (The reference's `fields=` argument narrows the registry this way.)
 */
int sr_fields_narrow(sr_fields **out, const sr_fields *f, const char *const *names, size_t n,
                     sr_err *err);

size_t sr_fields_count(const sr_fields *f);

/* The i-th definition (registration order), or NULL. */
const sr_field_def *sr_fields_at(const sr_fields *f, size_t i);

/* The definition named by `len` bytes at `name`, or NULL. */
const sr_field_def *sr_fields_find(const sr_fields *f, const char *name, size_t len);

/* Index of `def` in its registry (def must come from sr_fields_at/find of `f`). */
size_t sr_fields_index(const sr_fields *f, const sr_field_def *def);

/*
 * Checks a decoded array of field d against d's declared shape and value constraints (a no-op
 * without them). `tokens` is the number of token rows expected for a "T" axis, or -1 when not
 * known. `flat`: the wire carries no shape (sglang's raw bytes, read 1-D): the element count must
 * then be a multiple of the fixed trailing lengths (tokens times their product when tokens is
 * known, and only when every axis past 0 is fixed). SR_E_FIELD_SHAPE names the axis, its length
 * and the declared shape ("logit_topk: axis 1 has length 7, the definition declares 8 (shape [T,
 * 8])"); SR_E_FIELD_RANGE names the first bad element's index and value and how many are bad.
 * A mismatching ndim (an unflat array) is SR_E_FIELD_SHAPE too.
 */
int sr_field_check_array(const sr_field_def *d, const sr_ndarray *a, int64_t tokens, int flat,
                         sr_err *err);

/* "[T, 8]" (or "" without a declared shape) into buf; returns buf. */
const char *sr_field_shape_str(const sr_field_def *d, char *buf, size_t cap);

/*
 * The envelope contract of a packed field: name (borrowed from def), allowed dtypes, ndim,
 * canonical_routes and max_bytes. `impl` is SR_B64_AUTO.
 */
sr_contract sr_field_contract(const sr_field_def *def);

#endif /* SR_FIELDS_H */
