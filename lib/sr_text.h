/*
 * sr_text: text helpers over untrusted bytes: quoting them printably for messages and
 * terminals, hexadecimal digits, and well-formed UTF-8 sequences (RFC 3629).
 *
 * Pure functions of their arguments: thread-safe, nothing to free.
 */
#ifndef SR_TEXT_H
#define SR_TEXT_H

#include <stddef.h>

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

#endif /* SR_TEXT_H */
