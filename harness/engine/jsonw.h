/*
 * jsonw: the small JSON writer of the mock engine. Output is compact and byte-identical to what
 * orjson (the reference server's serialiser, skyrl.md §1.3) writes for the same values:
 * no whitespace, keys in the order the caller writes them, non-ASCII and '/' not escaped.
 *
 * Floats follow orjson's f64 format (the Ryu "pretty" format): the shortest digit string that
 * reads back as the same double, written as
 *   decimal notation with at least one fractional digit when the decimal exponent kk (the value
 *   is in [10^(kk-1), 10^kk)) satisfies -5 < kk <= 16:  -0.1, -9999.0, 0.00001, 123.456;
 *   otherwise d[.ddd]e<exp> with no '+' and no leading zeros in the exponent:  1e-6, 1.5e16;
 *   zero as 0.0 or -0.0; NaN and infinities as null (orjson's behaviour, the reason the server
 *   clamps logprobs first, §1.6).
 *
 * All appenders take an sr_buf (whose maximum bounds the output) and return 0, SR_E_LIMIT or
 * SR_E_NOMEM; on error the buffer may hold a partial value. Thread-safety: reentrant.
 */
#ifndef SR_ENGINE_JSONW_H
#define SR_ENGINE_JSONW_H

#include <stddef.h>
#include <stdint.h>

#include "sr_buf.h"
#include "sr_err.h"

/* Longest text sr_jw_format_double writes, plus the NUL. */
#define SR_JW_DOUBLE_MAX 32

/* Formats v as orjson would into dst (>= SR_JW_DOUBLE_MAX bytes, NUL-terminated); returns the
 * length. */
size_t sr_jw_format_double(char *dst, double v);

/* The same text found with the C library alone (snprintf and strtod per probed precision):
 * sr_jw_format_double decides most values (10^-6 <= |v| < 10) in integer arithmetic instead,
 * and tests compare the two. */
size_t sr_jw_format_double_libc(char *dst, double v);

/* Appends v formatted as above. */
int sr_jw_double(sr_buf *b, double v, sr_err *err);

/* Appends n bytes of s as a JSON string (quoted; '"', '\\' and control bytes escaped). */
int sr_jw_string(sr_buf *b, const char *s, size_t n, sr_err *err);

/* Appends a NUL-terminated string as a JSON string. */
int sr_jw_str(sr_buf *b, const char *s, sr_err *err);

/* Appends [v0,v1,...] for n int32 values. */
int sr_jw_i32_array(sr_buf *b, const int32_t *v, size_t n, sr_err *err);

/* Appends the decimal text of v (no quotes), as printf's "%lld" writes it. */
int sr_jw_i64(sr_buf *b, int64_t v, sr_err *err);

/* Appends the NUL-terminated strings a, s and c, none NULL, as printf's "%s%s%s" writes them,
 * with one reservation (the reply's keys and names, in place of sr_buf_printf's two formattings).
 */
int sr_jw_cat(sr_buf *b, const char *a, const char *s, const char *c, sr_err *err);

/* Appends a 64-bit value as a quoted 16-digit lowercase hex string ("00ab..."). */
int sr_jw_hex64(sr_buf *b, uint64_t v, sr_err *err);

#endif /* SR_ENGINE_JSONW_H */
