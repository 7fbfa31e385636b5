/*
 * The lane OR of decoded blob bytes (sr_splice_priv.h): the splice's dtype sniff ORs every
 * decoded byte into the lane of its position modulo 4, over whole blobs. The parallel windows
 * use this pass over their output; the single-threaded scan and the sequential redo of a blob
 * take the same OR from the base64 stream (SR_B64_LANES), which gathers it while decoding.
 */
#include <string.h>

#include "sr_base64.h"
#include "sr_splice_priv.h"

void sr_splice_i_lane_or(uint32_t *acc, const unsigned char *p, size_t n, size_t pos)
{
    uint32_t a = *acc;
    while (n && (pos & 3)) {
        a |= (uint32_t)*p++ << (8 * (pos & 3));
        pos++;
        n--;
    }
    uint64_t all = 0;
#if defined(__x86_64__) || defined(__i386__)
    if (n >= 128 && sr_base64_cpu_has_avx2()) {
        all = sr_splice_i_or_avx2(p, n);
        p += n - n % 128;
        n %= 128;
    }
#endif
    /* Portable vector types (SSE2 on any x86-64): four 16-byte accumulators per 64 bytes. */
    typedef uint64_t v2u64 __attribute__((vector_size(16)));
    v2u64 w0 = {0, 0}, w1 = w0, w2 = w0, w3 = w0;
    while (n >= 64) {
        v2u64 x0, x1, x2, x3;
        memcpy(&x0, p, 16);
        memcpy(&x1, p + 16, 16);
        memcpy(&x2, p + 32, 16);
        memcpy(&x3, p + 48, 16);
        w0 |= x0;
        w1 |= x1;
        w2 |= x2;
        w3 |= x3;
        p += 64;
        n -= 64;
    }
    v2u64 wv = w0 | w1 | w2 | w3;
    all |= wv[0] | wv[1];
    a |= (uint32_t)all | (uint32_t)(all >> 32);
    for (size_t i = 0; i < n; i++)
        a |= (uint32_t)p[i] << (8 * (i & 3));
    *acc = a;
}
