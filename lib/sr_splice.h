/*
 * sr_splice: parse a generate response body whose packed blobs never reach the JSON parser
 * (docs/reference/skyrl.md §3), one-shot or streamed in arbitrary chunks.
 *
 * Algorithm (§3.2, in one left-to-right pass over the raw body whatever the number of fields):
 *   - The anchor is the 10 bytes `:{"data":"`. A registered packed field f matches when the
 *     bytes `"f"` (opening quote included) end exactly at the anchor; the first match in
 *     registration order wins. `not_routed_experts` therefore never matches `routed_experts`
 *     (unless opts.prefix_without_quote restores the reference's defect, see below).
 *   - The blob runs from after the anchor to the next '"'. It is decoded on the fly (fused
 *     stop-at-quote base64) into this splicer's output memory and replaced by "" in the text
 *     handed to the parser (sr_jdom, which builds cJSON nodes); no blob ever becomes a string.
 *   - Registered integer-array keys match `"k":[` the same way (an escaped opening quote does not
 *     match) and their text goes to sr_intarray instead; the parser sees `{}` in place of the
 *     array (an empty object: a consumer reading the document instead of the entries fails
 *     loudly rather than seeing no tokens). An array that is anything but integers in the field's
 *     range, compact or spaced, is handed back to the parser text at the first byte the fast path
 *     cannot take (its bytes are kept while it is read), so the parser meets it exactly as the
 *     reference's parser does; it is then read from the document, as is an array the scan did not
 *     match (written with spaces), with the same checks.
 *   - String-blob fields (sr_fields.h SR_FIELD_STRING: the .npy, raw int32 and nrlre1 route
 *     wires of other engine dialects) match `"f":"` right after a ':' the same way; the base64
 *     is decoded on the fly like an envelope's and the parser sees "" (nrlre1: its prefix
 *     "nrlre1:<dtype>:<shape>:" is copied to the text first). Such an entry is SR_SPLICE_STRING,
 *     its array read by the field's wire (a .npy header, the prefix, or 1-D elements); a string
 *     the scan did not cut (spaced JSON) is decoded from the document with the same checks.
 *     Nested-list fields (SR_FIELD_NESTED) are read from the document (lib/sr_nested.h) as
 *     SR_SPLICE_NESTED. Their errors: wire.not_string, wire.byte_count, npy.*, nrlre.*,
 *     nested.shape, nested.value, in step 4's document order.
 *   - After parsing, blobs are re-attached in document order per field: every object member whose
 *     key is a registered packed field and whose value is an object with a "data" member takes
 *     the field's next blob. Nothing is recursed into below a re-attached envelope.
 *   - Base64 is the reference's pybase64 validate=True: non-zero trailing bits in the last quad
 *     ("AR==") are dropped and noted (entry b64_noncanonical), unless opts.strict_base64 makes
 *     them base64.bad_padding; '=' after a complete quad ("AAAA=") is always refused.
 *   - Each envelope is validated with the field's contract (sr_envelope_unpack_decoded;
 *     canonical dtypes are checked from statistics gathered while decoding, so no second pass
 *     over the decoded bytes is needed). The same statistics are gathered for every packed field
 *     and handed on as the entry's `bound` (the OR of its values), so that a consumer (the route
 *     trace's record) need not pass over the values either.
 *
 * The remainder parser (sr_jdom with its reference rules, sr_jdom.h) accepts RFC 8259 JSON as the
 * reference's parser (orjson) does: strings must be UTF-8 (RFC 3629) without lone surrogate
 * escapes, numbers must not overflow a double, and arrays and objects nest at most 1000 deep.
 *
 * Duplicate keys: an object anywhere in the body's JSON (outside blobs) with the same key twice,
 * compared after unescaping (`"routed_experts"` and `"routed\u005fexperts"` are one key), is
 * json.duplicate_key (protocol), naming the member's JSON path and the key. The reference's
 * parser keeps the last value silently, so the reference may accept such a body (a first
 * `"routed_experts":null` is simply overwritten; a second "shape" wins) or orphan its blobs (a
 * second "choices"); a duplicate key means something rewrote the body, and syncroll fails closed
 * rather than accept values that could differ from the reference's. Consequently no body is
 * accepted whose values differ from a last-wins parse.
 *
 * Errors, in the order the reference meets them (whichever comes first is reported; results and
 * errors are identical one-shot, threaded and streamed in every chunking):
 *  1. While scanning, at the byte where they occur (they stop the scan):
 *   splice.body_too_large  more than max_body bytes (resource)
 *   splice.long_body       more bytes than the announced expected length (protocol)
 *  2. At the end of the body, as the reference's byte scan does before it parses:
 *   splice.unterminated    the body ends inside a blob (transient)
 *   splice.short_body      fewer bytes than the announced expected length (transient)
 *  3. JSON-level errors: the reference parses the whole remainder before it looks at any
 *     envelope, so these win over every error of step 4 wherever they are in the body; among
 *     them, the first in the text. All but the last are the reference's JSON decode errors, which
 *     its client retries:
 *   splice.truncated       the JSON text ends before the document does (transient)
 *   splice.invalid_json    the text without its blobs is not RFC 8259 JSON (transient)
 *   intarray.syntax        that error lies inside a registered integer array: [01], [1,], [1 2]
 *                          (transient)
 *   json.invalid_utf8      a key or string is not valid UTF-8, or holds a lone surrogate escape
 *                          (transient)
 *   json.number_overflow   a number rounds to +-infinity: 1e400, -1e400 (transient)
 *   json.too_deep          more than 1000 nested arrays and objects (protocol; never retried: the
 *                          body cannot pass on a retry; the reference crashes with a
 *                          RecursionError near this depth instead of classifying). Reported only
 *                          if the text has no other JSON-level error after the limit.
 *   json.duplicate_key     (above; protocol) reported only once the whole text parsed
 *  4. Envelope-level errors, walking the document in order:
 *   splice.layout_drift    a registered field holds an envelope the scan did not splice:
 *                          reordered keys, re-spaced JSON, "data":null, a key written with
 *                          escapes, or an unspliced envelope with a nested one inside (the
 *                          reference gives the outer "data":null the nested blob) (protocol)
 *   splice.misattributed   (opts.prefix_without_quote only) a blob cut at a look-alike key was
 *                          taken by a registered field's envelope, or found none (protocol)
 *   splice.orphan_blob     a spliced blob (or integer array) found no envelope of its field; a
 *                          blob cut at the escaped-quote key `x\"routed_experts` always does (the
 *                          reference may pair it by count with a reordered envelope) (protocol)
 *   envelope.*, base64.*, routes.negative   per envelope in document order (protocol); a
 *                          registered packed key holding a non-envelope value (string, number,
 *                          array, object without "data") is envelope.not_object or
 *                          envelope.invalid; null is accepted only if the field is nullable.
 *  5. Last, the one check the reference does not make:
 *   intarray.stricter_than_reference  a registered integer array is valid JSON but not integer
 *                          literals in the field's range ([-1], [1e2], [1.0], [2^31], ["7"], an
 *                          object) (protocol). The reference never checks token_ids values; when
 *                          this is the error, the reference would have accepted the body.
 * Where syncroll differs from the reference on purpose: duplicate keys (fails closed instead of
 * last-wins), nesting past 1000 (a named protocol error instead of a crash), the stricter integer
 * arrays, the nested envelope and the escaped-quote key (fail closed instead of misattributing a
 * blob), and look-alike keys (never matched, unless the quirk restores the defect).
 * err->offset is a byte offset in the raw body where one is known (else -1), and messages name
 * the JSON path ("choices[0].routed_experts"). After an error the splicer is reusable from
 * sr_splice / sr_splice_stream_begin.
 *
 * Output memory (the design choice for blobs of unknown size): decoded bytes are written once,
 * at their final address, into one contiguous region per response. Blob i starts 64-byte
 * aligned (8-byte aligned once 64 blobs have spent the alignment budget), and a region of
 * len / 4 * 3 + 4160 bytes provably holds every blob of a len-byte body (each blob costs at
 * least 14 bytes of body beyond its base64 text). When the length is known (one-shot, or a
 * stream begun with an expected length) the region is one block of this splicer's sr_arena,
 * reset per response, so a warm splicer touches no fresh pages. When it is not known, the
 * region is an address-space reservation of the bound for max_body made once with
 * mmap(MAP_NORESERVE) and kept: pages are committed only as blobs are written, and nothing is
 * ever copied or moved (except one blob that outgrows a caller's destination, below, which
 * moves into the region once). Integer arrays go to a separate growable buffer of the splicer.
 * sr_splice_set_dest lets one blob per response be decoded into the caller's memory instead.
 *
 * Streaming keeps only the text outside blobs and integer arrays (small), never the raw body.
 * Results and errors are identical to one-shot for every chunking.
 *
 * Threads: opts.threads > 1 makes one-shot decode each blob with OpenMP tasks over windows of
 * opts.par_window characters while one thread scans; windows past the (not yet known) end of a
 * blob are speculative and stop early. Results and errors are identical to threads = 1. On a
 * machine whose other cores are busy, the threads wait for each other at every blob and the
 * threaded path can be slower than one thread: use it on dedicated cores.
 *
 * Ownership: the result, its document, entries, paths and arrays belong to the splicer and stay
 * valid until the next sr_splice / sr_splice_stream_begin or sr_splicer_free. The document is a
 * tree of cJSON nodes in the splicer's arena (sr_jdom.h): read it with cJSON's readers, never
 * change or cJSON_Delete it or any node of it (entries' `node`s point into it); sr_splice_take_doc
 * gives an ordinary copy to keep longer. The registry must outlive the splicer.
 * Thread-safety: a splicer belongs to one thread at a time.
 */
#ifndef SR_SPLICE_H
#define SR_SPLICE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sr_base64.h"
#include "sr_err.h"
#include "sr_fields.h"
#include "sr_ndarray.h"

/* 2 GiB: the default maximum body size. */
#define SR_SPLICE_DEFAULT_MAX_BODY ((size_t)2 << 30)

typedef struct sr_splice_opts {
    size_t max_body;   /* maximum body bytes; 0: SR_SPLICE_DEFAULT_MAX_BODY */
    int threads;       /* one-shot decoding threads; <= 1: fused, single-threaded */
    sr_b64_impl impl;  /* base64 kernel */
    size_t par_window; /* threaded decoding window in characters, a multiple of 16; 0: 256 KiB
                          (tests make it tiny to exercise window boundaries on small bodies) */
    /*
     * Quirk (bug skyrl-lookalike-suffix; default 0): match a packed field's key without its
     * opening quote, as the reference's prefix `name":{"data":"` did, so the blob of a key that
     * merely ends in the name (`not_routed_experts`) is spliced for the field. The splicer still
     * records where each blob was cut: a look-alike blob that an envelope of the field takes, or
     * that finds no envelope, is splice.misattributed. Never use it outside bug scenarios.
     */
    int prefix_without_quote;
    /*
     * 1: a blob whose last quad has non-zero trailing bits ("AR==") is base64.bad_padding. 0 (the
     * default, the reference's pybase64 validate=True): such bits are dropped and the entry's
     * b64_noncanonical says where they were (client.strict_base64 in a scenario).
     */
    int strict_base64;
} sr_splice_opts;

#define SR_SPLICE_OPTS_INIT                                                                        \
    {                                                                                              \
        0, 1, SR_B64_AUTO, 0, 0, 0                                                                 \
    }

typedef enum sr_splice_kind {
    SR_SPLICE_ENVELOPE = 1, /* a packed field's envelope: `array` is the validated array */
    SR_SPLICE_NULL,         /* a nullable packed field holding null: `array` is empty */
    SR_SPLICE_INT_ARRAY,    /* an integer-array key: `array` is 1-D int32 or int64 */
    SR_SPLICE_STRING,       /* a string-blob field: `array` is the decoded payload (see below) */
    SR_SPLICE_NESTED        /* a nested-list field: `array` is its values, int32 or int64 */
} sr_splice_kind;

typedef struct sr_splice_entry {
    sr_splice_kind kind;
    const char *path;          /* JSON path, e.g. "choices[0].routed_experts" */
    const sr_field_def *field; /* the registry entry */
    sr_ndarray array;          /* a view (owned = 0) into the splicer's memory */
    const cJSON *node;         /* the value in the document (envelope, null, placeholder, array) */
    const cJSON *sidecar;      /* an object with copies of the sidecar members, or NULL if none */
    int spliced;               /* 1: cut from the raw body; 0: read from the parsed document */
    int64_t b64_noncanonical;  /* a note: body offset of a base64 character whose trailing bits
                                  were non-zero and dropped ("AR=="), or -1 (always -1 with
                                  opts.strict_base64, which refuses them) */
    /*
     * The OR of the array's values (sr_ndarray.h sr_value_bound: every element's bit pattern
     * ORed, zero-extended to 64 bits), taken from the decoder's statistics, so no pass over the
     * array is needed to learn it. Known (bound.known = 1) exactly for an SR_SPLICE_ENVELOPE
     * entry of dtype uint8, int8, int16, uint16, int32 or uint32, on every path (one-shot,
     * threaded, streamed in any chunking, decoded at or moved out of a sr_splice_set_dest
     * destination): the decoder ORs every decoded byte of a packed field's blob into the lane of
     * its position modulo 4, and for items of 1, 2 or 4 bytes those lanes give the elements' OR
     * exactly. Unknown (0, value_or 0) for every other entry: 8-byte dtypes (whose two halves
     * share the lanes), floats, null, integer arrays, string blobs and nested lists.
     */
    sr_value_bound bound;
} sr_splice_entry;

typedef struct sr_splice_stats {
    int passes;             /* left-to-right traversals of the raw body (1) */
    uint64_t body_bytes;    /* raw bytes received */
    uint64_t bytes_scanned; /* raw bytes the scan handled, each exactly once (= body_bytes) */
    uint64_t text_bytes;    /* bytes handed to the JSON parser */
    uint64_t blob_chars;    /* base64 characters spliced */
    uint64_t decoded_bytes; /* bytes decoded from them */
    size_t blobs;           /* blobs spliced */
    size_t int_arrays;      /* integer arrays spliced */
} sr_splice_stats;

typedef struct sr_splice_result {
    const cJSON *doc;               /* the parsed document (blobs as "", int arrays as {}) */
    const sr_splice_entry *entries; /* every registered key found, in document order */
    size_t count;
    sr_splice_stats stats;
} sr_splice_result;

typedef struct sr_splicer sr_splicer;

/* Creates a splicer for the registry `fields` (borrowed). opts may be NULL. SR_E_INVAL for a
 * par_window that is not a multiple of 16. */
int sr_splicer_new(sr_splicer **out, const sr_fields *fields, const sr_splice_opts *opts,
                   sr_err *err);

/* Frees the splicer, its memory and its last result. NULL is a no-op. */
void sr_splicer_free(sr_splicer *s);

/*
 * One-shot: splices `len` bytes of `body` (borrowed for the call only). expected_len >= 0 is the
 * announced Content-Length (splice.short_body / splice.long_body when len differs); -1 if unknown.
 * On success *out points at the splicer's result.
 */
int sr_splice(sr_splicer *s, const char *body, size_t len, int64_t expected_len,
              const sr_splice_result **out, sr_err *err);

/* Streaming: starts a response. expected_len as for sr_splice. */
int sr_splice_stream_begin(sr_splicer *s, int64_t expected_len, sr_err *err);

/*
 * Feeds the next n bytes (borrowed for the call only; any size, including 0). Errors are sticky:
 * after one, every feed and the finish return the same code.
 */
int sr_splice_stream_feed(sr_splicer *s, const char *chunk, size_t n, sr_err *err);

/* Ends the response: checks, parses, re-attaches and validates. */
int sr_splice_stream_finish(sr_splicer *s, const sr_splice_result **out, sr_err *err);

/*
 * A destination for one blob per response (a performance hint; results and errors are the same
 * with or without it): in every response begun while it is set, the first blob cut for the
 * packed field named `field` is decoded at dst instead of the output region, as long as its
 * decoded bytes fit in `cap`; one that outgrows cap moves to the region as it is decoded. The
 * entry's array (and a failed blob's bytes) then point at dst. A caller that wants the decoded
 * array in its own storage (a route trace's next rows) saves the copy. dst is borrowed: it must
 * stay valid, and hold nothing the caller still needs, from each begin until the result is no
 * longer used; its bytes past the blob's are untouched. A field that is not a registered packed
 * one, a NULL field or dst, or a dst that is not 8-byte aligned (any dtype may arrive) clears
 * it, as does sr_splice_set_dest(s, NULL, NULL, 0). The threaded one-shot ignores it.
 */
void sr_splice_set_dest(sr_splicer *s, const char *field, void *dst, size_t cap);

/* A copy of the last result's document (NULL if none) that the caller frees with cJSON_Delete;
 * the result's doc is NULL afterwards (its entries' nodes stay valid until the next parse). */
cJSON *sr_splice_take_doc(sr_splicer *s);

/*
 * Whether a response that failed with `code` may be retried. Default: exactly the transient
 * codes. With retry_json_decode_only = 1 (the reference client's behaviour, skyrl.md §4.2,
 * kept as the client quirk `retry_json_decode_only`): only what the reference's JSON decoder
 * raises: splice.invalid_json, splice.truncated, intarray.syntax, json.invalid_utf8 and
 * json.number_overflow; a body cut inside a blob (splice.unterminated) or short of its
 * Content-Length is then not retried. json.duplicate_key and json.too_deep are never retried.
 */
int sr_splice_retryable(int code, int retry_json_decode_only);

#endif /* SR_SPLICE_H */
