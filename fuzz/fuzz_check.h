/*
 * The fuzz targets' invariant check: CHECK(c) aborts with the line when c is false, so libFuzzer
 * keeps the input as a crasher. Also declares the libFuzzer entry point every target defines.
 */
#ifndef SR_FUZZ_CHECK_H
#define SR_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "CHECK failed line %d\n", __LINE__);                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* SR_FUZZ_CHECK_H */
