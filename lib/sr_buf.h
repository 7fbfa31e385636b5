/*
 * sr_buf: a growable byte buffer with a hard maximum size.
 *
 * Every growable buffer has a maximum (conventions.md §3): appending past `max` fails with
 * SR_E_LIMIT and leaves the buffer unchanged. The buffer owns `data`; release it with
 * sr_buf_release(). `data` is always NUL-terminated when len > 0 or after any append, so text
 * can be printed directly; the NUL is not counted in `len`.
 *
 * Thread-safety: none; one owner at a time.
 */
#ifndef SR_BUF_H
#define SR_BUF_H

#include <stddef.h>
#include <stdio.h>

#include "sr_err.h"

typedef struct sr_buf {
    char *data; /* owned; NULL until the first append */
    size_t len; /* bytes used, excluding the terminating NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* maximum len; 0 means SR_BUF_DEFAULT_MAX */
} sr_buf;

/* 1 GiB: the default ceiling for a buffer whose owner did not choose one. */
#define SR_BUF_DEFAULT_MAX ((size_t)1 << 30)

#define SR_BUF_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

/* Makes room for `extra` more bytes (plus the NUL). SR_E_LIMIT past max, SR_E_NOMEM. */
int sr_buf_reserve(sr_buf *b, size_t extra, sr_err *err);

/* Appends `n` bytes. */
int sr_buf_append(sr_buf *b, const void *p, size_t n, sr_err *err);

/* Appends a NUL-terminated string. */
int sr_buf_puts(sr_buf *b, const char *s, sr_err *err);

/* Appends printf-style text. */
int sr_buf_printf(sr_buf *b, sr_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends the decimal text of a signed 64-bit integer. */
int sr_buf_put_i64(sr_buf *b, long long v, sr_err *err);

/*
 * Appends `s` (NUL-terminated) as a JSON string literal: quotes, `\"` and `\\` escaped,
 * control bytes as `\u00XX`, every other byte (UTF-8 included) verbatim, as orjson writes.
 */
int sr_buf_put_json_string(sr_buf *b, const char *s, sr_err *err);

/*
 * Appends the JSON text `json` (n bytes, e.g. from cJSON_Print*) with every byte that is not
 * part of a well-formed UTF-8 sequence (stray continuation bytes, overlong forms, surrogates,
 * code points past U+10FFFF, cut sequences) replaced by the escape \ufffd, so that the output
 * is valid UTF-8 whatever bytes the strings held. Bytes >= 0x80 occur only inside JSON strings,
 * where the escape is valid. Control bytes are left to the printer (cJSON escapes them).
 */
int sr_buf_put_json_utf8(sr_buf *b, const char *json, size_t n, sr_err *err);

/* Sets len to 0 and keeps the allocation. */
void sr_buf_reset(sr_buf *b);

/* Frees the data and returns the buffer to SR_BUF_INIT (keeping max). */
void sr_buf_release(sr_buf *b);

#endif /* SR_BUF_H */
