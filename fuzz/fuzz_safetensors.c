/*
 * libFuzzer target for the safetensors header parser (lib/sr_safetensors): any bytes are parsed
 * as a whole file. A refusal must carry a named code; a success must describe tensors that lie
 * back to back inside the file, sorted by unique name, each of prod(shape) * itemsize bytes,
 * covering the byte buffer exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sr_safetensors.h"

#include "fuzz_check.h"

static void check_header(const sr_st_header *h, size_t size)
{
    CHECK(h->data_start == 8 + h->header_len && h->data_start + h->buffer_len == size);
    uint64_t total = 0;
    for (size_t i = 0; i < h->n_tensors; i++) {
        const sr_st_tensor *t = &h->tensors[i];
        CHECK(t->name[0] != '\0' && strlen(t->name) <= SR_ST_NAME_MAX);
        CHECK(i == 0 || strcmp(h->tensors[i - 1].name, t->name) < 0);
        CHECK(t->begin <= t->end && t->end <= h->buffer_len);
        CHECK(sr_st_dtype_size(t->dtype) > 0 && t->ndim >= 0 && t->ndim <= SR_ST_NDIM_MAX);
        uint64_t prod = sr_st_dtype_size(t->dtype);
        for (int d = 0; d < t->ndim; d++)
            prod *= (uint64_t)t->shape[d];
        CHECK(prod == t->end - t->begin);
        CHECK(sr_st_header_find(h, t->name) == (int64_t)i);
        total += t->end - t->begin;
    }
    CHECK(total == h->buffer_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_st_header *h = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = sr_st_parse_header(&h, data, size, size, &e);
    CHECK(rc == e.code && (rc == 0 || sr_code_name(rc) != NULL));
    CHECK((rc == 0) == (h != NULL));
    if (h)
        check_header(h, size);
    sr_st_header_free(h);
    /* the length prefix alone, against a longer claimed file */
    uint64_t n;
    sr_err e2 = SR_ERR_INIT;
    rc = sr_st_header_len(&n, data, size, (uint64_t)size + 100, &e2);
    CHECK(rc == e2.code && (rc != 0 || n <= SR_ST_HEADER_MAX));
    return 0;
}
