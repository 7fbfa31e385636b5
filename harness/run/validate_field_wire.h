/*
 * validate_field_wire: a field's value in each engine dialect's wire (spec/dialect.h
 * sr_dialect_field_def), for the battery of validate_field.h: writing an array the way the
 * engine writes it, finding a field's value in a raw body, and the corruptions of that value the
 * battery applies itself where the engine's body faults (skyrl's envelope only) do not reach.
 *
 * Wires, by the registry entry w that reads the field:
 *   SR_FIELD_PACKED   envelope {"data","shape","dtype"} (skyrl, dynamo)
 *   SR_FIELD_STRING   a base64 string: of a .npy file (npy), of the raw bytes (raw), or after
 *                     the "nrlre1:<dtype>:<SxLxK>:" prefix (nrlre)
 *   SR_FIELD_NESTED   nested JSON integer lists
 *
 * Corruptions (each with the named error the splice must give):
 *   bad_base64       a '!' in the field's base64 (every wire but nested)   base64.invalid_char
 *   not_string       the string replaced by the number 7 (string wires)    wire.not_string
 *   bad_leaf         the first integer leaf written 1.5 (nested)           nested.value
 *   duplicate_field  the field's member twice in its object (every wire)   json.duplicate_key
 *
 * Ownership: buffers are the caller's. Pure functions; thread-safe.
 */
#ifndef SR_VALIDATE_FIELD_WIRE_H
#define SR_VALIDATE_FIELD_WIRE_H

#include <stddef.h>

#include "sr_buf.h"
#include "sr_err.h"
#include "sr_fields.h"
#include "sr_ndarray.h"

/* "envelope", ".npy string", "raw string", "nrlre1 string" or "nested list" (static). */
const char *sr_vf_wire_name(const sr_field_def *w);

/* Appends a's value in wire w, as the engine writes it (a nested list of a's ndim levels;
 * nrlre needs ndim 3). Errors: SR_E_INVAL for a dtype the wire's header cannot name, SR_E_NOMEM,
 * SR_E_LIMIT from the buffer. */
int sr_vf_wire_put(sr_buf *b, const sr_field_def *w, const sr_ndarray *a, sr_err *err);

/* The value of the first `"<name>":` in body[0, len): its offset and length (an envelope object,
 * a string or nested lists, as written compactly). 0 when found, else -1. */
int sr_vf_wire_find(const char *body, size_t len, const char *name, size_t *off, size_t *vlen);

typedef enum sr_vf_edit {
    SR_VF_BAD_BASE64 = 0,
    SR_VF_NOT_STRING,
    SR_VF_BAD_LEAF,
    SR_VF_DUPLICATE
} sr_vf_edit;

typedef struct sr_vf_wire_fault {
    const char *name;
    sr_vf_edit edit;
    int expect; /* the sr_code the splice must give */
} sr_vf_wire_fault;

#define SR_VF_WIRE_FAULTS_MAX 4

/* The corruptions that apply to wire w, in order, into out; returns how many. */
size_t sr_vf_wire_faults(sr_vf_wire_fault out[SR_VF_WIRE_FAULTS_MAX], const sr_field_def *w);

/* `body` with edit e applied to the value of field w->name, into out (reset first). SR_E_INVAL
 * when the body holds no such value, or none the edit can change. */
int sr_vf_wire_corrupt(sr_buf *out, const char *body, size_t len, const sr_field_def *w,
                       sr_vf_edit e, sr_err *err);

#endif /* SR_VALIDATE_FIELD_WIRE_H */
