/*
 * sr_jdom: a strict RFC 8259 JSON parser that builds an ordinary cJSON tree inside a reusable
 * arena, so parsing allocates nothing once the arena has grown to its working size.
 *
 * The tree is made of plain `cJSON` structs, so every cJSON reader works on it unchanged
 * (cJSON_GetObjectItemCaseSensitive, cJSON_IsX, cJSON_GetArraySize, cJSON_ArrayForEach,
 * cJSON_PrintUnformatted, cJSON_Duplicate, ...). Every node, key and string value lives in the
 * arena of the sr_jdom that parsed it; nodes never move once made.
 *
 * Equivalence with cJSON 1.7.15: sr_jdom_parse accepts a text exactly when it is one RFC 8259
 * value (surrounding space, tab, LF and CR allowed) that cJSON_ParseWithLengthOpts (NUL
 * required at the end) also accepts, and the tree equals cJSON's in every field a reader sees:
 * type (true has valueint 1), string (the unescaped key), valuestring (unescaped exactly as
 * cJSON does, \u0000 included), valuedouble (bit for bit what strtod gives for the number's
 * characters), valueint (saturated at INT_MAX and INT_MIN, else truncated), child order, next
 * links and prev links (the first child's prev is the last child). Beyond the RFC grammar it
 * therefore refuses what cJSON refuses: a \u escape of a lone or unpaired UTF-16 surrogate, and
 * nesting deeper than SR_JDOM_MAX_DEPTH arrays and objects. Raw bytes of 0x80 and above are
 * copied as they are (no UTF-8 validation, as cJSON), unless the reference rules are on (below).
 * One addition: a node whose key or string value held an escaped NUL (\u0000) also carries
 * SR_JDOM_HAS_NUL in `type` (below), since the NUL-terminated string no longer shows where it was
 * cut; readers that mask the type with 0xFF, as cJSON_IsX and cJSON's functions do, see cJSON's.
 *
 * Ownership and lifetime: an sr_jdom owns its arena and the tree of its last parse. The tree is
 * read-only for callers and must never be passed to cJSON_Delete or changed with cJSON's
 * add/detach/replace functions; it stays valid until the next sr_jdom_parse, sr_jdom_reset or
 * sr_jdom_free of the same sr_jdom. The parsed text is not referenced after parse returns.
 * cJSON_Duplicate makes an ordinary, independently owned copy. Sizing: a tree takes
 * sizeof(cJSON) (64) bytes per value plus each key and string value and its NUL; chunks start
 * at 32 KiB and each new one is as large as all before it, so a steady workload settles on one
 * or two chunks and then allocates nothing.
 *
 * Errors: SR_E_JSON_SYNTAX (not exactly one JSON value, or a value cJSON refuses; the message
 * and err->offset give the first offending byte), SR_E_LIMIT (the tree needs more arena than
 * the sr_jdom's maximum), SR_E_NOMEM, SR_E_INVAL (NULL arguments, or t[n] is not NUL). After
 * an error *out is NULL and the arena keeps its memory for the next parse.
 *
 * The reference rules (sr_jdom_set_flags(j, SR_JDOM_REFERENCE); off by default) make the parser
 * refuse what the SkyRL reference client's parser (orjson) refuses beyond cJSON, and what
 * syncroll refuses on purpose, for the splice of response bodies (sr_splice.h):
 *   SR_E_JSON_UTF8          a key or string whose raw bytes are not UTF-8 (RFC 3629: overlong
 *                           forms, encoded surrogates, code points past U+10FFFF, cut sequences),
 *                           and a \u escape of a lone or unpaired surrogate (cJSON refuses those
 *                           as syntax errors)
 *   SR_E_JSON_NUMBER_OVERFLOW a number whose value rounds to +-infinity (1e400, -1e400);
 *                           underflow to zero (1e-400) is accepted, as strtod and orjson do
 *   SR_E_JSON_TOO_DEEP      more than SR_JDOM_MAX_DEPTH nested arrays and objects
 *   SR_E_JSON_DUPLICATE_KEY an object with the same key twice, compared byte for byte after
 *                           unescaping ("a" and "\u0061" are the same key, "a\u0000b" and
 *                           "a\u0000c" are not). Held until the whole text parsed: any other
 *                           error of the text wins wherever it is; the message names the member's
 *                           JSON path and the key, err->offset is the second key's quote.
 * These errors stop the parse at their first offending byte like a syntax error, except the
 * duplicate key. Number nodes whose literal has a fraction or an exponent (1.0, 1e2) also carry
 * SR_JDOM_NOT_INT in `type`, so a reader can tell them from integers cJSON stores the same way.
 *
 * Thread-safety: an sr_jdom and its tree belong to one thread at a time; distinct sr_jdom
 * objects are independent. Parsing does not depend on the process's locale.
 */
#ifndef SR_JDOM_H
#define SR_JDOM_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sr_buf.h"
#include "sr_err.h"

typedef struct sr_jdom sr_jdom;

/* cJSON's CJSON_NESTING_LIMIT: arrays and objects nested deeper than this are refused. */
#define SR_JDOM_MAX_DEPTH 1000

/*
 * Set in a node's `type`, above cJSON's bits, when its key or its string value held an escaped
 * NUL: the C string stops at the NUL, so "uint8\u0000x" reads as "uint8". A reader that turns
 * such a string into a name, path or dtype must refuse it (sr_envelope does for its keys and
 * dtype).
 */
#define SR_JDOM_HAS_NUL (1 << 12)

/* Set in a number node's `type` (reference rules only) when its literal had a fraction or an
 * exponent. */
#define SR_JDOM_NOT_INT (1 << 13)

/* sr_jdom_set_flags: the reference parser's rules (above). */
#define SR_JDOM_REFERENCE 1u

/* 1 GiB: the arena maximum used when sr_jdom_new is given 0. */
#define SR_JDOM_DEFAULT_MAX ((size_t)1 << 30)

/*
 * Creates an empty parser whose arena may hold at most `max_bytes` bytes of chunks (0 means
 * SR_JDOM_DEFAULT_MAX). Nothing is allocated for the arena until the first parse. *out belongs
 * to the caller (sr_jdom_free). Errors: SR_E_INVAL (out is NULL), SR_E_NOMEM.
 */
int sr_jdom_new(sr_jdom **out, size_t max_bytes, sr_err *err);

/* Frees the parser, its arena and its tree; NULL is a no-op. */
void sr_jdom_free(sr_jdom *j);

/*
 * Parses t[0 .. n), where t[n] must be '\0' (a NUL inside the text is a syntax error). No byte
 * past t[n] is read: the word-at-a-time paths stop where the word would end after the NUL. The
 * previous tree is released first (sr_jdom_reset). On success *out is the root, borrowed from
 * `j` (see the lifetime above); on error *out is NULL. Errors as listed above.
 */
int sr_jdom_parse(sr_jdom *j, const char *t, size_t n, cJSON **out, sr_err *err);

/* Sets the parser's rules for the next parses: 0 (cJSON's) or SR_JDOM_REFERENCE. */
void sr_jdom_set_flags(sr_jdom *j, unsigned flags);

/*
 * Appends one object key to a JSON path in `p`: ".key" (just "key" at the start) when the key is
 * an identifier ([A-Za-z_][A-Za-z0-9_]*), else `["<the key as a JSON string>"]`; keys longer than
 * 64 bytes are cut and end with "...". SR_E_NOMEM, SR_E_LIMIT.
 */
int sr_jdom_path_key(sr_buf *p, const char *key, sr_err *err);

/* Releases the tree (its nodes become invalid) and keeps the arena's chunks for reuse. */
void sr_jdom_reset(sr_jdom *j);

/* Bytes of arena chunks held (allocated once, kept across parses and resets). */
size_t sr_jdom_arena_bytes(const sr_jdom *j);

/* Number of arena chunks held; a parse that fits in them allocates nothing. */
size_t sr_jdom_arena_chunks(const sr_jdom *j);

/* Bytes of the arena the current tree occupies (alignment padding and unused chunk tails
 * included); 0 after a reset. */
size_t sr_jdom_arena_used(const sr_jdom *j);

#endif /* SR_JDOM_H */
