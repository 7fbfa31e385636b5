/*
 * Private to the sr_ndarray module (sr_ndarray.c, sr_ndarray_avx2.c): the AVX2 kernels of
 * sr_ndarray_minmax, called only after a run-time CPU check (sr_base64_cpu_has_avx2).
 */
#ifndef SR_NDARRAY_PRIV_H
#define SR_NDARRAY_PRIV_H

#include <stddef.h>
#include <stdint.h>

/* Minimum and maximum of q[0, n - n % 128) (n >= 128 elements; the caller does the tail). */
void sr_ndarray_i_minmax_u8_avx2(const uint8_t *q, size_t n, uint8_t *lo, uint8_t *hi);

/* Minimum and maximum of q[0, n - n % 64) (n >= 64 elements; the caller does the tail). */
void sr_ndarray_i_minmax_i16_avx2(const int16_t *q, size_t n, int16_t *lo, int16_t *hi);

#endif /* SR_NDARRAY_PRIV_H */
