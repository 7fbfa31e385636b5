/*
 * sr_base64_avx512: the AVX-512 VBMI decoding kernel behind sr_base64 (private to lib/; callers
 * use sr_base64.h). Encoding on this implementation uses the AVX2 kernel (sr_base64_avx2.h).
 *
 * Like the AVX2 kernel, it only does the bulk work: it decodes whole quads of alphabet bytes and
 * stops at anything else, leaving that to the scalar state machine in sr_base64.c, which is what
 * makes every implementation give identical results, error codes and offsets. It must only be
 * called after sr_base64_cpu_has_avx512vbmi() returned 1. Nothing past the reported output
 * length is written: a store may cover bytes past its own block, but only bytes that a later
 * store of the same call, in a group already checked, fills with decoded bytes.
 *
 * Thread-safety: reentrant; no state.
 */
#ifndef SR_BASE64_AVX512_H
#define SR_BASE64_AVX512_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#define SR_B64_HAVE_AVX512_KERNELS 1
#else
#define SR_B64_HAVE_AVX512_KERNELS 0
#endif

/*
 * Decodes the whole quads of src up to the first byte outside the alphabet ('=', '"' or any
 * invalid byte): 64-character blocks (groups of four blocks whose validity is checked once,
 * then single blocks), then the last n % 64 characters with one masked load. Sets *stop to
 * the index of that first byte, or to n if there is none. Returns the number of characters
 * decoded, a multiple of 4 (the quads before *stop's quad, so fewer than 4 characters are left
 * when *stop = n); exactly that / 4 * 3 bytes are written at dst. This is what the AVX2 kernel
 * and the scalar quad loop after it do together, so the caller hands the same byte to its
 * state machine on every implementation.
 *
 * Calls with at least SR_B64_NT_MIN characters and a 64-byte aligned dst write the four-block
 * groups with non-temporal stores (the caller aligns dst to use this path).
 *
 * With `lanes` non-NULL, every byte written at dst[j] is also OR-ed into bits 8 * (j % 4) of
 * *lanes (the stream's SR_B64_LANES, sr_base64.h), from the decoded vectors rather than by
 * reading the output again.
 */
size_t sr_b64_avx512_decode_bulk(unsigned char *dst, const char *src, size_t n, size_t *stop,
                                 uint32_t *lanes);

#endif /* SR_BASE64_AVX512_H */
