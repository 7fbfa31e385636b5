/*
 * libFuzzer target for nested route lists (lib/sr_nested): the first byte picks ndim (1..8) and
 * the value range, the rest is parsed as JSON; a document sr_nested_shape accepts is filled, and
 * a success must have written exactly prod(shape) values in range, C order, each equal to the
 * leaf at its index (re-read by walking the document).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sr_nested.h"

#include "fuzz_check.h"

static const cJSON *at(const cJSON *n, const int64_t *shape, int ndim, size_t flat)
{
    for (int d = 0; d < ndim; d++) {
        size_t below = 1;
        for (int e = d + 1; e < ndim; e++)
            below *= (size_t)shape[e];
        n = cJSON_GetArrayItem(n, (int)(flat / below));
        flat %= below;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 16)
        return 0;
    int ndim = 1 + data[0] % 8;
    int64_t min = data[0] & 0x80 ? -1 : 0, max = data[0] & 0x40 ? INT64_MAX : 300;
    cJSON *doc = cJSON_ParseWithLength((const char *)data + 1, size - 1);
    if (!doc)
        return 0;
    int64_t shape[SR_NDIM_MAX];
    size_t count = 0;
    sr_err e = SR_ERR_INIT;
    int rc = sr_nested_shape(shape, &count, doc, ndim, &e);
    CHECK(rc == e.code);
    if (rc == 0 && count <= (1u << 20)) {
        size_t w = sr_dtype_size(sr_nested_dtype(min, max));
        unsigned char *buf = malloc(count * w + 1);
        CHECK(buf != NULL);
        rc = sr_nested_fill(buf, doc, ndim, shape, min, max, &e);
        CHECK(rc == e.code);
        CHECK(rc == 0 || rc == SR_E_NESTED_SHAPE || rc == SR_E_NESTED_VALUE);
        for (size_t i = 0; rc == 0 && i < count; i++) {
            int64_t v = 0;
            if (w == 4) {
                int32_t x;
                memcpy(&x, buf + i * 4, 4);
                v = x;
            } else {
                memcpy(&v, buf + i * 8, 8);
            }
            CHECK(v >= min && v <= max);
            const cJSON *leaf = at(doc, shape, ndim, i);
            CHECK(cJSON_IsNumber(leaf) && (double)v == leaf->valuedouble);
        }
        free(buf);
    } else {
        CHECK(rc == 0 || rc == SR_E_NESTED_SHAPE || rc == SR_E_ENV_OVERFLOW);
    }
    cJSON_Delete(doc);
    return 0;
}
