/*
 * sr_intarray: a strict, incremental parser for JSON arrays of integers (token ids).
 *
 * cJSON spends about as long on the 123k token ids of a large response as memcpy takes for the
 * whole 121 MiB body (design.md §8), so the response-body splice hands registered
 * integer-array keys to this parser instead. Grammar (RFC 8259 restricted to integers):
 *
 *   array  = ws '[' ws [ value *( ws ',' ws value ) ] ws ']'
 *   value  = [ '-' ] ( '0' / [1-9] *DIGIT )          ws = *( ' ' / '\t' / '\n' / '\r' )
 *
 * Fractions, exponents, leading zeros, '+', strings, nesting, empty elements and trailing
 * commas are SR_E_INTARRAY_SYNTAX (err->offset: the offending byte). A value outside
 * [min, max], or beyond 64 bits, is SR_E_INTARRAY_STRICT (err->offset: the value's first byte).
 * "-0" is 0. Offsets count from the first byte fed to the parser (or of the text, for
 * sr_intarray_parse).
 *
 * Values are stored as int32 when [min, max] fits int32, else int64 (sr_intarray_dtype), in
 * native (little-endian) order.
 *
 * Thread-safety: reentrant; a parser belongs to one thread at a time.
 */
#ifndef SR_INTARRAY_H
#define SR_INTARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"

/* SR_DTYPE_INT32 if [min, max] fits int32, else SR_DTYPE_INT64. */
sr_dtype sr_intarray_dtype(int64_t min, int64_t max);

/*
 * Upper bound of the number of values that feeding n more bytes can complete: n / 2 + 1 (a
 * value needs a digit and a delimiter; one value may be pending from the previous feed).
 */
size_t sr_intarray_max_values(size_t n);

typedef struct sr_intarray_parser {
    int64_t min, max; /* accepted range */
    int width;        /* 4 or 8: bytes per stored value */
    int state;        /* internal */
    int neg;          /* the pending value has a '-' */
    int overflow;     /* the pending value passed 64 bits */
    uint64_t mag;     /* magnitude of the pending value */
    uint64_t start;   /* offset of the pending value's first byte */
    uint64_t pos;     /* bytes consumed so far */
    uint64_t count;   /* values stored so far */
} sr_intarray_parser;

/* Starts a parser positioned just after the opening '[' (the caller consumed it). */
void sr_intarray_init(sr_intarray_parser *p, int64_t min, int64_t max);

/*
 * Feeds n bytes. Stores each completed value at element p->count of `dst` (width p->width) and
 * increments p->count; the caller guarantees room for sr_intarray_max_values(n) more values.
 * When the closing ']' is consumed, *done = 1 and *consumed is the number of bytes up to and
 * including it; otherwise *consumed = n and *done = 0. Errors as described above; after an
 * error *consumed is the number of bytes before the one that raised it (the delimiter after an
 * out-of-range value), and the parser must be re-initialised.
 */
int sr_intarray_feed(sr_intarray_parser *p, void *dst, const char *s, size_t n, size_t *consumed,
                     int *done, sr_err *err);

/*
 * One-shot convenience: parses `ws [ ... ]` at the start of s (n bytes). dst must hold
 * sr_intarray_max_values(n) values of sr_intarray_dtype(min, max). On success *count is the
 * number of values and *end the offset just past ']' (trailing bytes are not examined). Text that
 * ends before ']' is SR_E_INTARRAY_SYNTAX at offset n.
 */
int sr_intarray_parse(void *dst, size_t *count, size_t *end, const char *s, size_t n, int64_t min,
                      int64_t max, sr_err *err);

#endif /* SR_INTARRAY_H */
