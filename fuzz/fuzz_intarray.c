/*
 * libFuzzer target for the integer-array parser: one-shot parsing under five ranges must agree
 * with feeding the same bytes in 3-byte chunks (values, end offset, error code and offset).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_intarray.h"

#include "fuzz_check.h"

static void fz_ints(const uint8_t *data, size_t size)
{
    static const int64_t ranges[][2] = {
        {0, INT32_MAX}, {-5, 5}, {INT64_MIN, INT64_MAX}, {7, 9}, {-100, -1}};
    const char *s = (const char *)data;
    for (int k = 0; k < 5; k++) {
        size_t cap = sr_intarray_max_values(size) * 8 + 8;
        unsigned char *d1 = malloc(cap), *d2 = malloc(cap);
        size_t count = 0, end = 0;
        sr_err e1 = SR_ERR_INIT;
        int r1 = sr_intarray_parse(d1, &count, &end, s, size, ranges[k][0], ranges[k][1], &e1);
        CHECK(r1 == e1.code);
        if (r1 == 0)
            CHECK(end <= size && count <= sr_intarray_max_values(size));
        /* stream the part after '[' in 3-byte chunks */
        size_t i = 0;
        while (i < size && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
            i++;
        if (i < size && s[i] == '[') {
            sr_intarray_parser p;
            sr_intarray_init(&p, ranges[k][0], ranges[k][1]);
            p.pos = i + 1;
            size_t at = i + 1;
            int done = 0, rc = 0;
            sr_err e2 = SR_ERR_INIT;
            while (at < size && !done && !rc) {
                size_t n = size - at < 3 ? size - at : 3, used;
                rc = sr_intarray_feed(&p, d2, s + at, n, &used, &done, &e2);
                if (!rc)
                    at += used;
            }
            if (r1 == 0) {
                CHECK(rc == 0 && done && at == end && p.count == count);
                CHECK(memcmp(d1, d2, count * (size_t)p.width) == 0);
            } else if (rc) {
                CHECK(rc == r1 && e2.offset == e1.offset);
            } else
                CHECK(!done && r1 == SR_E_INTARRAY_SYNTAX);
        }
        free(d1);
        free(d2);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_ints(data, size);
    return 0;
}
