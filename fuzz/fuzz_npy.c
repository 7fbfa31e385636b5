/*
 * libFuzzer target for the `.npy` header reader (lib/sr_npy): any bytes are parsed under three
 * contracts (any dtype and ndim, routes of ndim 3, one-byte arrays of ndim 1). A success must
 * describe an array whose header, written back by sr_npy_write_header, parses to the same
 * description, and a view must cover exactly the bytes after the header.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_npy.h"

#include "fuzz_check.h"

static void roundtrip(const sr_npy_header *h)
{
    char buf[SR_NPY_HEADER_MAX];
    size_t n = 0;
    sr_err e = SR_ERR_INIT;
    CHECK(sr_npy_write_header(&n, buf, sizeof buf, h->dtype, h->shape, h->ndim, &e) == 0);
    CHECK(n % SR_NPY_ALIGN == 0 && buf[n - 1] == '\n');
    sr_npy_header g;
    CHECK(sr_npy_parse_header(&g, (const uint8_t *)buf, n, 0, h->ndim, &e) == 0);
    CHECK(g.dtype == h->dtype && g.ndim == h->ndim && g.data_bytes == h->data_bytes);
    CHECK(memcmp(g.shape, h->shape, sizeof(int64_t) * (size_t)h->ndim) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct {
        sr_dtype_set allowed;
        int ndim;
    } cs[3] = {
        {0, -1},
        {SR_DTYPE_BIT(SR_DTYPE_UINT8) | SR_DTYPE_BIT(SR_DTYPE_UINT16), 3},
        {SR_DTYPE_BIT(SR_DTYPE_UINT8) | SR_DTYPE_BIT(SR_DTYPE_INT8), 1},
    };
    for (int k = 0; k < 3; k++) {
        sr_npy_header h;
        sr_err e = SR_ERR_INIT;
        int rc = sr_npy_parse_header(&h, data, size, cs[k].allowed, cs[k].ndim, &e);
        CHECK(rc == e.code && (rc == 0 || sr_code_name(rc) != NULL));
        if (rc == 0) {
            CHECK(h.data_offset <= size && h.ndim >= 0 && h.ndim <= SR_NDIM_MAX);
            roundtrip(&h);
        }
        sr_ndarray a = SR_NDARRAY_INIT;
        rc = sr_npy_view(&a, NULL, data, size, cs[k].allowed, cs[k].ndim, &e);
        if (rc == 0) {
            CHECK(a.owned == 0 && (const uint8_t *)a.data + a.nbytes == data + size);
            volatile uint8_t sink = 0;
            for (size_t i = 0; i < a.nbytes; i++)
                sink ^= ((const uint8_t *)a.data)[i];
            (void)sink;
        }
    }
    return 0;
}
