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
 * Opens `path` for reading without ever blocking: the open is O_NONBLOCK (a FIFO with no writer
 * would otherwise wait forever), and anything but a regular file is refused before a byte is
 * read. On success *out is a blocking stream the caller closes with fclose.
 * Errors: SR_E_IO "<path>: cannot open: <errno text>" (the real errno: ENOENT, ELOOP, EACCES, ...);
 * SR_E_NOT_REGULAR "<path>: not a regular file (a FIFO|a character device|...)".
 */
int sr_file_open_regular(FILE **out, const char *path, sr_err *err);

/*
 * Writes the `n` bytes at `s` (untrusted: any bytes) into dst (cap >= 4 bytes, always
 * NUL-terminated) as printable ASCII for messages and terminals: bytes 0x20..0x7e as they are
 * except the backslash (doubled), newline, CR and tab as the C escapes \n, \r, \t, and every
 * other byte as \xHH (lower-case hex). When the
 * result does not fit, it is cut at a whole escape and ends with "...". Returns dst.
 */
const char *sr_quote_bytes(char *dst, size_t cap, const void *s, size_t n);

/* sr_quote_bytes of a NUL-terminated string. */
const char *sr_quote_str(char *dst, size_t cap, const char *s);

/* The value of the hexadecimal digit c (0-9, a-f, A-F), or -1 (JSON's \u escapes). */
int sr_hex_digit(unsigned char c);

/*
 * Length of the well-formed UTF-8 sequence at p (n >= 1 bytes left; RFC 3629 section 4, the
 * table of well-formed byte sequences), or 0 when the bytes there are not one: a stray
 * continuation byte, an overlong form (C0, C1, E0 80-9F, F0 80-8F), an encoded surrogate
 * (ED A0-BF), a code point past U+10FFFF (F4 90-BF, F5-FF) or a sequence cut by the end.
 */
size_t sr_utf8_seq(const unsigned char *p, size_t n);

/* Offset of the first byte of s[0, n) that does not start a well-formed UTF-8 sequence, or n
 * when all of it is UTF-8. ASCII runs are skipped eight bytes at a time. */
size_t sr_utf8_check(const void *s, size_t n);

/*
 * Appends the JSON text `json` (n bytes, e.g. from cJSON_Print*) with every byte that is not
 * part of a well-formed UTF-8 sequence (stray continuation bytes, overlong forms, surrogates,
 * code points past U+10FFFF, cut sequences) replaced by the escape \ufffd, so that the output
 * is valid UTF-8 whatever bytes the strings held. Bytes >= 0x80 occur only inside JSON strings,
 * where the escape is valid. Control bytes are left to the printer (cJSON escapes them).
 */
int sr_buf_put_json_utf8(sr_buf *b, const char *json, size_t n, sr_err *err);

/*
 * Reads the whole file at `path` into `out` (initialised: SR_BUF_INIT or a buffer in use), which
 * is released first and whose `max` becomes `max` (0: SR_BUF_DEFAULT_MAX). A file of exactly
 * `max` bytes fits. On success `out` holds the bytes, NUL-terminated with `data` never NULL (an
 * empty file gives ""); the caller releases it with sr_buf_release. On failure `out` holds
 * nothing (data NULL, len 0).
 * The file is opened with sr_file_open_regular, so a FIFO, device or directory is refused with
 * SR_E_NOT_REGULAR instead of blocking.
 * Errors: SR_E_IO "<path>: cannot open: <errno text>" or "<path>: read error: <errno text>";
 * SR_E_LIMIT "<path>: <size> bytes, larger than the limit of <max> bytes" (a stream whose size
 * is not known beforehand gives its size as "more than <max>"); SR_E_NOMEM.
 */
int sr_buf_read_file(sr_buf *out, const char *path, size_t max, sr_err *err);

/*
 * As sr_buf_read_file for an open stream (e.g. stdin), read to its end and not closed; `name`
 * stands for the path in messages.
 */
int sr_buf_read_stream(sr_buf *out, FILE *f, const char *name, size_t max, sr_err *err);

/* Sets len to 0 and keeps the allocation. */
void sr_buf_reset(sr_buf *b);

/* Frees the data and returns the buffer to SR_BUF_INIT (keeping max). */
void sr_buf_release(sr_buf *b);

#endif /* SR_BUF_H */
