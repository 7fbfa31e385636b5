/*
 * sr_json: cJSON documents that remember where each value came from, and typed getters whose
 * errors say `file:line:col`.
 *
 * cJSON keeps no source positions, so after a successful parse sr_json walks the text once in
 * the same order as the tree and records, for every node, the byte offset of its value and (for
 * object members) of its key. Schema errors (unknown key, wrong type, out of range) then point
 * at the exact line and column, as users of scenario files and field definitions expect.
 *
 * Ownership: an sr_json_doc owns its tree and a copy of nothing else; the text passed to
 * sr_json_parse is copied, so the caller may free it. Nodes returned by sr_json_root and
 * cJSON accessors are borrowed and live until sr_json_free.
 *
 * Errors: SR_E_JSON_SYNTAX (not JSON; message "name:line:col: invalid JSON"),
 * SR_E_JSON_SCHEMA (a getter's key is missing, mistyped, out of range or unknown),
 * SR_E_LIMIT (document larger than max_bytes), SR_E_IO (file unreadable), SR_E_NOMEM.
 *
 * Detached trees: every getter, sr_json_check_keys and sr_json_error also accept doc == NULL,
 * for a cJSON tree that did not come from sr_json_parse (a copy, a tree built in memory). Their
 * messages then carry no "name:line:col: " prefix, and an integer is any integral number (the
 * source text is unknown, so 2.0 counts as 2).
 *
 * Thread-safety: a document may be read from several threads; parse and free are not shared.
 */
#ifndef SR_JSON_H
#define SR_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sr_err.h"

typedef struct sr_json_doc sr_json_doc;

/* 16 MiB: the default maximum size of a user-supplied JSON document. */
#define SR_JSON_DEFAULT_MAX ((size_t)16 << 20)

/*
 * Parses `len` bytes of `text` (need not be NUL-terminated). `name` (e.g. a file path) prefixes
 * every message; NULL means "<input>". max_bytes 0 means SR_JSON_DEFAULT_MAX. Trailing
 * non-whitespace after the document is a syntax error.
 */
int sr_json_parse(sr_json_doc **out, const char *text, size_t len, const char *name,
                  size_t max_bytes, sr_err *err);

/* Reads and parses a file ("-" is standard input). */
int sr_json_load_file(sr_json_doc **out, const char *path, size_t max_bytes, sr_err *err);

/* Frees the document; NULL is a no-op. */
void sr_json_free(sr_json_doc *doc);

/* The root value (borrowed). */
const cJSON *sr_json_root(const sr_json_doc *doc);

/* The name given at parse time. */
const char *sr_json_name(const sr_json_doc *doc);

/*
 * 1-based line and column of `node`: of its key if it is an object member and `at_key` is 1,
 * else of its value. Returns 0, or -1 if the node is not part of this document (then 0, 0).
 */
int sr_json_where(const sr_json_doc *doc, const cJSON *node, int at_key, int *line, int *col);

/* Line and column (1-based) of a byte offset in a text. */
void sr_json_linecol(const char *text, size_t len, size_t offset, int *line, int *col);

/*
 * Sets err to `code` with "name:line:col: " + message, positioned at `node` (its key when it is
 * an object member). Returns code.
 */
int sr_json_error(const sr_json_doc *doc, const cJSON *node, sr_err *err, int code, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));

/*
 * Fails with SR_E_JSON_SCHEMA at the first member of object `obj` whose key is not in `allowed`
 * (a NULL-terminated list), naming the key and the place (`what`, e.g. "model"), or at a key
 * that appears twice. Also fails if obj is not an object.
 */
int sr_json_check_keys(const sr_json_doc *doc, const cJSON *obj, const char *what,
                       const char *const *allowed, sr_err *err);

/*
 * Typed getters for member `key` of object `obj`. If the key is absent: *out = dflt and 0 when
 * `required` is 0, else SR_E_JSON_SCHEMA. A present key of the wrong type, or outside
 * [min, max], is SR_E_JSON_SCHEMA at its position. Integers must be written without fraction
 * or exponent and fit int64.
 */
int sr_json_get_int(const sr_json_doc *doc, const cJSON *obj, const char *key, int required,
                    int64_t min, int64_t max, int64_t dflt, int64_t *out, sr_err *err);
int sr_json_get_double(const sr_json_doc *doc, const cJSON *obj, const char *key, int required,
                       double min, double max, double dflt, double *out, sr_err *err);
int sr_json_get_bool(const sr_json_doc *doc, const cJSON *obj, const char *key, int required,
                     int dflt, int *out, sr_err *err);
/* *out is borrowed from the document (or is dflt). */
int sr_json_get_string(const sr_json_doc *doc, const cJSON *obj, const char *key, int required,
                       const char *dflt, const char **out, sr_err *err);

/*
 * Integer-list getter: member `key` holds one integer or an array of 1..max_n integers, each in
 * [min, max]; they are stored in out[0..*n). An absent key gives *n = 0 and 0 (or
 * SR_E_JSON_SCHEMA when `required`). The error names the offending entry's position.
 */
int sr_json_get_int_list(const sr_json_doc *doc, const cJSON *obj, const char *key, int required,
                         int64_t min, int64_t max, int64_t *out, size_t max_n, size_t *n,
                         sr_err *err);

/*
 * 1 if the node was written as an integer literal (no '.', 'e', 'E') in the source text; with
 * doc == NULL, 1 if it is a finite integral number.
 */
int sr_json_is_integer_literal(const sr_json_doc *doc, const cJSON *node);

/*
 * An unsigned 64-bit member (counters, byte totals, nanosecond sums, seeds), absent, mistyped or
 * out of [min, max] as for sr_json_get_int. An integer literal is read from the source text, so
 * values above 2^53 are exact; a number written with a fraction or an exponent counts when its
 * value is whole and below 2^64, as cJSON prints integers of more than 15 digits that way.
 */
int sr_json_get_u64(const sr_json_doc *doc, const cJSON *obj, const char *key, int required,
                    uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out, sr_err *err);

/* An object member, or an array member: *out is borrowed from the document (NULL when absent
 * and not required); any other type is SR_E_JSON_SCHEMA at its position. */
int sr_json_get_object(const sr_json_doc *doc, const cJSON *obj, const char *key, int required,
                       const cJSON **out, sr_err *err);
int sr_json_get_array(const sr_json_doc *doc, const cJSON *obj, const char *key, int required,
                      const cJSON **out, sr_err *err);

#endif /* SR_JSON_H */
