/*
 * Private to the sr_base64 module (sr_base64.c) and its tests: which bulk kernel a stream's
 * decoding runs. Every implementation gives the same results by design (sr_base64.h), so a
 * dispatch that quietly ran another kernel could not be seen in any output; the tests ask here.
 *
 * Thread-safety: reentrant; reads the stream only.
 */
#ifndef SR_BASE64_PRIV_H
#define SR_BASE64_PRIV_H

#include "sr_base64.h"

/* The kernel sr_b64_stream_feed and the one-shot decoders run for a stream set up as `s` is:
 * SR_B64_AVX512, SR_B64_AVX2 or SR_B64_SCALAR (the scalar quad loop). s is not NULL. */
sr_b64_impl sr_b64_i_stream_kernel(const sr_b64_stream *s);

#endif /* SR_BASE64_PRIV_H */
