/*
 * libFuzzer target for the NeMo-RL routes-string prefix (lib/sr_nrlre): any bytes are parsed; a
 * success must write back to a prefix that parses to the same header, and the header must lie
 * within the bytes given.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_nrlre.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_nrlre_header h;
    sr_err e = SR_ERR_INIT;
    int rc = sr_nrlre_parse_prefix(&h, (const char *)data, size, &e);
    CHECK(rc == e.code && (rc == 0 || sr_code_name(rc) != NULL));
    if (rc != 0)
        return 0;
    CHECK(h.data_offset <= size && h.data_offset <= SR_NRLRE_PREFIX_MAX);
    char buf[SR_NRLRE_PREFIX_MAX];
    size_t n = 0;
    CHECK(sr_nrlre_write_prefix(&n, buf, sizeof buf, h.dtype, h.shape, &e) == 0);
    /* Only plain decimal is accepted, so the prefix written back is the bytes parsed. */
    CHECK(n == h.data_offset && memcmp(buf, data, n) == 0);
    sr_nrlre_header g;
    CHECK(sr_nrlre_parse_prefix(&g, buf, n, &e) == 0);
    CHECK(g.dtype == h.dtype && memcmp(g.shape, h.shape, sizeof h.shape) == 0);
    CHECK(g.data_bytes == h.data_bytes);
    return 0;
}
