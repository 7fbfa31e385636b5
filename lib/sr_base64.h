/*
 * sr_base64: strict RFC 4648 base64 (standard alphabet, '=' padding), scalar, AVX2 and AVX-512
 * VBMI.
 *
 * Strictness (matches pybase64's validate=True that the reference uses): only A-Z a-z 0-9 + /
 * and trailing '=' are accepted; whitespace, line breaks, the url-safe '-' '_' and '\' are
 * SR_E_B64_CHAR; a length that is not a multiple of 4 is SR_E_B64_LENGTH; '=' anywhere but the
 * last one or two positions of the last quad (so also "AAA=AAAA" and "AAAA=") is
 * SR_E_B64_PADDING. Every error sets err->offset to the offset of the first bad byte (relative
 * to the start of the encoded text; for SR_E_B64_LENGTH, the length).
 *
 * Non-zero trailing bits ("AR==": the R carries bits below the one decoded byte; "AAB=") are
 * accepted and dropped, as the reference does (skyrl.md Appendix B): the decoders report
 * the offset of the first such character as a note (noncanon_at, -1 if none), because the
 * text is not what a canonical encoder writes. With SR_B64_STRICT_BITS they are
 * SR_E_B64_PADDING instead (client.strict_base64).
 *
 * Precisely, the text is read quad by quad and the first of these rules that fails wins:
 *   - a byte outside the alphabet and not '=' is SR_E_B64_CHAR at that byte, wherever it is;
 *   - '=' in the first or second position of a quad, an alphabet byte after "xx=", or any byte
 *     after a padded quad is SR_E_B64_PADDING at that byte;
 *   - (SR_B64_STRICT_BITS only) a quad "xy==" whose y has non-zero low 4 bits is
 *     SR_E_B64_PADDING at y, and a quad "xyz=" whose z has non-zero low 2 bits is
 *     SR_E_B64_PADDING at z ("AR==" -> offset 1); without the flag that offset is the note;
 *   - an incomplete last quad is SR_E_B64_LENGTH at the length.
 * So "AR=A" is a padding error at offset 3 and "AA== " a character error at offset 4.
 *
 * Writes: the decoders write only decoded bytes (nothing past the decoded length, even though
 * dst must be sized for sr_base64_decoded_max), so two threads may decode the two halves of a
 * text, each a multiple of 4 characters without padding in the first, into one buffer. The
 * encoder writes exactly sr_base64_encoded_len(n) characters.
 *
 * Implementations: the scalar path uses 4-byte lookup tables; the AVX2 path implements the
 * published Muła–Lemire vector algorithm (written here), and the AVX-512 VBMI path ("avx512vbmi")
 * their later one for 64 characters at a time (one 128-entry byte permute for validity and
 * value; it encodes with the AVX2 kernel). SR_B64_AUTO picks AVX-512 VBMI when
 * __builtin_cpu_supports says the CPU has AVX-512 F, BW and VBMI and the OS saves their
 * registers (not under valgrind, which does not emulate AVX-512), else AVX2 when it has AVX2,
 * else scalar. Forcing any implementation gives identical results, including error codes and
 * offsets; tests check this on every length 0..2048. On the vector paths, calls with 8 MiB of
 * input or more write with non-temporal stores (as memcpy does for large copies), so their
 * output is not left in the cache.
 *
 * The fused decoder (sr_b64_stream) decodes up to the first '"' and reports where it stopped,
 * so the response-body splice locates and decodes a blob in one pass; fed chunk by chunk it
 * carries up to 3 bytes between calls.
 *
 * Thread-safety: all functions are reentrant; a stream belongs to one thread at a time.
 */
#ifndef SR_BASE64_H
#define SR_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"

typedef enum sr_b64_impl { SR_B64_AUTO = 0, SR_B64_SCALAR, SR_B64_AVX2, SR_B64_AVX512 } sr_b64_impl;

/* Decoding flags. */
#define SR_B64_STRICT_BITS 1u /* non-zero trailing bits before the padding: SR_E_B64_PADDING */
/* For streams (the one-shot decoders have nowhere to report it): sr_b64_stream.lanes gathers the
 * OR of the decoded bytes by position modulo 4 (the splice's dtype statistics), taken from the
 * decoder's registers on the vector paths instead of a second pass over the output. */
#define SR_B64_LANES 2u

/* 1 if this CPU can run the AVX2 path. */
int sr_base64_cpu_has_avx2(void);

/* 1 if this CPU (and OS) can run the AVX-512 VBMI path: AVX-512 F, BW and VBMI, and AVX2. */
int sr_base64_cpu_has_avx512vbmi(void);

/* AUTO and AVX512 -> the best supported (AVX512, else AVX2, else SCALAR); AVX2 -> AVX2, or
 * SCALAR on a CPU without AVX2; SCALAR -> SCALAR. */
sr_b64_impl sr_base64_resolve(sr_b64_impl want);

/* "scalar", "avx2" or "avx512vbmi" (after resolving). */
const char *sr_base64_impl_name(sr_b64_impl impl);

/* 4 * ceil(n / 3): the encoded length of n bytes. Callers check n < SIZE_MAX / 4 * 3. */
size_t sr_base64_encoded_len(size_t n);

/* An upper bound of the decoded length of n encoded characters: n / 4 * 3 + 3. */
size_t sr_base64_decoded_max(size_t n);

/*
 * A lower bound of the decoded length of the n characters at src: n / 4 * 3 less the trailing
 * '=' (at most two). It is the exact length of every text the decoder accepts, so a size limit
 * checked with it before decoding refuses exactly the arrays past the limit (a bound built on
 * n / 4 * 3 alone would also refuse an array of exactly the limit whose size is not a multiple
 * of 3). NULL src with n > 0 reads nothing and gives n / 4 * 3.
 */
size_t sr_base64_decoded_min(const char *src, size_t n);

/* Encodes n bytes into dst, which must hold sr_base64_encoded_len(n) bytes. No NUL is written.
 * Returns the number of characters written. */
size_t sr_base64_encode(char *dst, const void *src, size_t n, sr_b64_impl impl);

/*
 * Strictly decodes n characters into dst, which must hold sr_base64_decoded_max(n) bytes.
 * On success *out_len is the decoded length. Errors: SR_E_B64_LENGTH, SR_E_B64_CHAR,
 * SR_E_B64_PADDING with err->offset set; *out_len is then 0 and dst contents are unspecified.
 * '"' is an ordinary invalid character here. NULL out_len, or NULL src or dst with n > 0, is
 * SR_E_INVAL. Lenient about trailing bits (no flags); see sr_base64_decode_ex.
 */
int sr_base64_decode(void *dst, size_t *out_len, const char *src, size_t n, sr_b64_impl impl,
                     sr_err *err);

/* As sr_base64_decode with `flags` (SR_B64_*); on success *noncanon_at (if not NULL) is the
 * offset of the first character with non-zero trailing bits, or -1 (also -1 on error). */
int sr_base64_decode_ex(void *dst, size_t *out_len, const char *src, size_t n, sr_b64_impl impl,
                        unsigned flags, int64_t *noncanon_at, sr_err *err);

/* ---- fused stop-at-quote decoding ---- */

typedef struct sr_b64_stream {
    sr_b64_impl impl;       /* resolved at init */
    unsigned char carry[4]; /* bytes of an incomplete quad carried between feeds */
    int ncarry;             /* 0..3 */
    int closed;             /* 1: a padded quad was decoded, only '"' may follow;
                               2: finished (quote found or error), feeding is SR_E_INVAL */
    uint64_t pos;           /* characters consumed so far (for error offsets) */
    uint64_t written;       /* bytes decoded so far */
    unsigned flags;         /* SR_B64_* */
    int64_t noncanon_at;    /* offset of the first character with non-zero trailing bits, or -1 */
    uint32_t lanes;         /* SR_B64_LANES: the OR of decoded byte i (counted from the stream's
                               first) into bits 8 * (i % 4), over every successful feed; 0
                               without the flag */
} sr_b64_stream;

/* Starts a lenient stream (flags 0). */
void sr_b64_stream_init(sr_b64_stream *s, sr_b64_impl impl);

/* Starts a stream with decoding flags (SR_B64_*). */
void sr_b64_stream_init_flags(sr_b64_stream *s, sr_b64_impl impl, unsigned flags);

/*
 * Feeds n characters. Decodes into dst every complete quad up to the first '"' in src, writing
 * at most sr_base64_decoded_max(s->ncarry + n) bytes at dst, and adds the number written to
 * *written (the caller advances dst by it for the next feed).
 *
 * If a '"' is found at src[k]: the text before it (including carried bytes) must be complete,
 * valid base64; *consumed = k (the quote itself is not consumed) and *done = 1.
 * Otherwise: *consumed = n, *done = 0, and up to 3 trailing characters are carried inside the
 * stream for the next feed.
 *
 * Errors as sr_base64_decode, with err->offset relative to the first character ever fed; the
 * result (output, code, offset, consumed) is the same for every way of chunking the text. A
 * '"' with an incomplete quad before it is SR_E_B64_LENGTH at the quote. After an error or
 * once *done is 1 the stream is finished: a further feed is SR_E_INVAL until it is
 * re-initialised. NULL s, written, consumed or done, or NULL src or dst with n > 0, is
 * SR_E_INVAL.
 */
int sr_b64_stream_feed(sr_b64_stream *s, void *dst, size_t *written, const char *src, size_t n,
                       size_t *consumed, int *done, sr_err *err);

/*
 * One-shot fused decode: decodes from src up to the first '"'. *found is 1 if a quote was found
 * (at src[*consumed]); 0 if the text ran out first (then *consumed = n and the input is
 * unterminated; any complete quads were decoded, an incomplete last quad is checked as far as
 * it goes but is neither decoded nor an error). dst must hold sr_base64_decoded_max(n) bytes.
 * Same as one sr_b64_stream_feed of the whole text. Lenient about trailing bits.
 */
int sr_base64_decode_until_quote(void *dst, size_t *out_len, const char *src, size_t n,
                                 size_t *consumed, int *found, sr_b64_impl impl, sr_err *err);

/* As sr_base64_decode_until_quote with flags and the note of sr_base64_decode_ex. */
int sr_base64_decode_until_quote_ex(void *dst, size_t *out_len, const char *src, size_t n,
                                    size_t *consumed, int *found, sr_b64_impl impl, unsigned flags,
                                    int64_t *noncanon_at, sr_err *err);

#endif /* SR_BASE64_H */
