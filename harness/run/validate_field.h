/*
 * validate_field: the battery `syncroll validate-field` runs against one packed-field definition
 * (lib/sr_fields.h), on response bodies that a mock engine produced with the field beside the
 * routes (lib/sr_gen_extra.h), before the field ships.
 *
 * The bodies are in one engine dialect's wire (in->dialect; spec/dialect.h), and in->def is the
 * registry entry that reads the field there (sr_dialect_field_def): an envelope (skyrl, dynamo),
 * a base64 string (vllm .npy, sglang raw and flat, nemo-rl nrlre1) or nested integer lists
 * (vllm-json). "Envelope" below means the value in that wire; the values are compared as the
 * wire carries them (flat for raw, as integers for nested lists). Outside skyrl the engine's
 * body faults do not reach the field (in->faulted NULL): the fault check prints SKIP for them
 * and runs the battery's own corruptions of the wire instead (validate_field_wire.h).
 *
 * Checks, each printed as one line `  PASS|FAIL|INFO  <check>  <detail>`:
 *   emit        every clean body splices with the registry (built-ins + the file's definitions)
 *               and carries the field as an envelope beside a valid routed_experts envelope, in
 *               a dtype of the definition (a producer that violates the dtype list, ndim or
 *               canonical flag fails here with the named error), with the definition's declared
 *               shape and values (sr_field_check_array with T = the reply's generated tokens,
 *               flat in sglang's raw wire: fields.shape_mismatch, fields.out_of_range)
 *   round-trip  the decoded arrays equal what the engine emitted (for fields the engine emits
 *               from their definition, recomputed with sr_gen_extra_make), one-shot and streamed
 *               in 7-byte chunks alike (a failure names the first differing response and what
 *               differs: dtype, shape or the first element); and an array of every listed dtype,
 * packed with sr_envelope_pack into a body, comes back from splice + decode byte for byte (a dtype
 * no array can use under the definition, e.g. uint16 with canonical, fails) null `"<field>":null`
 * is accepted as nothing captured when the definition is nullable, and refused as
 * envelope.not_object when it is not fault       one line per packed-corruption fault of the engine
 * aimed at the field: the splice fails with exactly the named error of sr_vf_faults() (or, for the
 *               look-alike and the unregistered key, succeeds with the field's true values)
 *   one-pass    with the field registered, every clean body is spliced in one pass over its
 *               bytes (stats.passes == 1, each byte scanned once)
 *   throughput  (INFO) splice + decode of a body holding `rows` token rows of the field in each
 *               dtype it may use: decoded MB/s and the time as a multiple of memcpy of the body
 *   size        (INFO) wire bytes (envelope text) and decoded bytes per token, per dtype
 * The field is ready when no check FAILs.
 *
 * Ownership: everything is borrowed for the call. Thread-safety: none needed (one thread).
 * Errors: SR_E_NOMEM and other harness failures (not check failures, which are printed).
 */
#ifndef SR_VALIDATE_FIELD_H
#define SR_VALIDATE_FIELD_H

#include <stdint.h>
#include <stdio.h>

#include "sr_err.h"
#include "sr_fields.h"
#include "spec/dialect.h"

/* A packed-corruption fault of the engine and the outcome the splice must give (0: valid). */
typedef struct sr_vf_fault {
    const char *kind; /* engine fault kind (harness/spec/faults.h) */
    int expect;       /* sr_code, or 0 when the body must splice with the field's true values */
} sr_vf_fault;

/* The faults of the battery, in the order the engine is asked to fire them. */
const sr_vf_fault *sr_vf_faults(size_t *n);

/* One response body captured from the engine, with the prompt that asked for it. */
typedef struct sr_vf_body {
    const char *data;
    size_t len;
    const int32_t *prompt;
    size_t P;
} sr_vf_body;

typedef struct sr_vf_input {
    const sr_fields *registry; /* what the client would register: the dialect's + the file's */
    const sr_field_def *def;   /* the field under test as the client reads it (from registry, in
                                  the dialect's wire: spec/dialect.h sr_dialect_field_def) */
    const sr_field_def *src;   /* its packed definition (the contract: listed dtypes, ndim) */
    const sr_field_def *emit;  /* the packed definition the engine emits it from: src, or the
                                  producer's own (`validate-field --producer`) */
    int from_definition;       /* the engine emitted it from `emit` (values can be recomputed) */
    sr_dialect dialect;        /* the wire of the bodies */
    uint64_t seed;             /* the engine's seed */
    const sr_vf_body *clean;   /* bodies without faults */
    size_t n_clean;
    const sr_vf_body *faulted; /* faulted[i] was produced under sr_vf_faults()[i]; NULL when
                                  the engine's body faults do not apply to the wire */
    size_t rows;               /* token rows of the throughput body */
    FILE *out;
} sr_vf_input;

/* Runs the battery on one field, printing its lines; *failed receives the number of FAILs. */
int sr_vf_run(int *failed, const sr_vf_input *in, sr_err *err);

#endif /* SR_VALIDATE_FIELD_H */
