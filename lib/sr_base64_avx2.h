/*
 * sr_base64_avx2: the AVX2 kernels behind sr_base64 (private to lib/; callers use sr_base64.h).
 *
 * The kernels only do the bulk work: they stop at anything unusual and leave it to the scalar
 * code in sr_base64.c, which is what makes both paths give identical results, error codes and
 * offsets. They must only be called after sr_base64_cpu_has_avx2() returned 1. Nothing past the
 * reported output length is written: a decoding store may cover bytes past its own block, but
 * only bytes that a later store of the same call, in a group already checked, fills with decoded
 * bytes.
 *
 * Thread-safety: reentrant; no state.
 */
#ifndef SR_BASE64_AVX2_H
#define SR_BASE64_AVX2_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#define SR_B64_HAVE_AVX2_KERNELS 1
#else
#define SR_B64_HAVE_AVX2_KERNELS 0
#endif

/*
 * Calls with at least this many input bytes and a 32-byte aligned dst write with non-temporal
 * stores, which do not read the destination lines first (outputs this large would not stay in
 * the cache anyway). The callers align dst to use this path.
 */
#define SR_B64_NT_MIN ((size_t)8 << 20)

/*
 * Encodes whole 24-byte groups of src while at least 28 bytes remain (each group's loads read
 * 4 bytes past it). Writes 32 characters per group at dst. Returns the number of input bytes
 * encoded, a multiple of 24; the caller encodes the rest.
 */
size_t sr_b64_avx2_encode_bulk(char *dst, const unsigned char *src, size_t n);

/*
 * Decodes 32-character blocks of src while a whole block remains (groups of four blocks whose
 * validity is checked once, then single blocks). At the first byte outside
 * the alphabet ('=', '"' or any invalid byte) it decodes the complete quads before that byte's
 * quad and sets *stop to the byte's index; if it simply ran out of whole blocks, *stop = n.
 * Returns the number of characters decoded, a multiple of 4; exactly that / 4 * 3 bytes are
 * written at dst. With `lanes` non-NULL, every byte written at dst[j] is also OR-ed into bits
 * 8 * (j % 4) of *lanes (the stream's SR_B64_LANES, sr_base64.h), from the decoded vectors
 * rather than by reading the output again.
 */
size_t sr_b64_avx2_decode_bulk(unsigned char *dst, const char *src, size_t n, size_t *stop,
                               uint32_t *lanes);

#endif /* SR_BASE64_AVX2_H */
