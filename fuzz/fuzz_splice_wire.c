/*
 * libFuzzer target: the splice on the route wires of the engine dialects (string blobs: .npy,
 * raw int32, nrlre1; nested lists; dynamo's envelope), one-shot vs threaded vs streamed, exactly
 * as fuzz_splice does for skyrl's registry. The first input byte picks the dialect (modulo the
 * dialect count); seeds are fuzz/corpus/fuzz_splice_wire/ (the golden replies of
 * fixtures/dialects/ behind their dialect's byte).
 */
#define SR_FUZZ_WIRE 1
#include "fuzz_splice.c"
