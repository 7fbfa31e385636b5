/*
 * libFuzzer target: the splice against the reference model (tests/splice_model.h,
 * tests/splice_diff.h). An input starting with '{' is a body as it is (fixtures/bodies/ and
 * fixtures/conformance/ seed it); any other input drives the body generator: byte 0 picks the
 * mutation rate, the rest are the generator's random choices. Every body is spliced one-shot,
 * threaded (16-character windows) and streamed in two chunkings; all must agree exactly, and the
 * outcome must agree with the model: never accepted with values that differ from the
 * reference's, refused where the reference accepts only in the documented stricter classes.
 * Any difference prints the report and aborts.
 *
 * Run: ./fuzz_splice_diff -max_total_time=60 fixtures/bodies fixtures/conformance
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "splice_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sd_ctx ctx;
    static int ready;
    static char msg[16384];
    if (!ready) {
        if (sd_init(&ctx)) {
            fprintf(stderr, "fuzz_splice_diff: setup failed\n");
            abort();
        }
        ready = 1;
    }
    if (size == 0)
        return 0;
    const char *bad;
    sr_buf b = SR_BUF_INIT;
    if (data[0] == '{') {
        bad = sd_check(&ctx, (const char *)data, size, msg, sizeof(msg));
    } else {
        sd_rng r = {0x2545f4914f6cdd1dull ^ size, data + 1, size - 1, 0};
        sd_plan p = sd_plan_all(1 + data[0] % 24);
        sd_generate(&b, &r, &p);
        bad = sd_check(&ctx, b.data ? b.data : "", b.len, msg, sizeof(msg));
    }
    if (bad) {
        fprintf(stderr, "fuzz_splice_diff: %s\nbody (%zu bytes): %.*s\n", bad,
                data[0] == '{' ? size : b.len, (int)(data[0] == '{' ? size : b.len),
                data[0] == '{' ? (const char *)data : b.data);
        abort();
    }
    sr_buf_release(&b);
    return 0;
}
