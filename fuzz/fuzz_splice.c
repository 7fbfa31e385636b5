/*
 * libFuzzer target: the response-body splice, one-shot vs streaming (and threaded one-shot).
 *
 * The whole input is the body (so fixtures/bodies/ is a useful seed corpus); the chunkings are
 * derived from a hash of the input, so mutations also vary them. For every input the one-shot
 * result (or error code, offset and message) must equal that of: the 2-thread one-shot, a stream
 * fed in 1-byte chunks (inputs up to 4 KiB), three random chunkings with a known length and one
 * without. Any difference aborts, and so does internal.bug from any body, and an entry whose
 * bound is not the OR of its values.
 *
 * Build (see fuzz/CMakeLists.txt): clang -fsanitize=fuzzer,address,undefined with the library
 * sources; run: ./fuzz_splice -max_total_time=30 fixtures/bodies
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_buf.h"
#include "sr_splice.h"

/*
 * fuzz_splice_wire.c defines SR_FUZZ_WIRE and includes this file: the registry is then that of
 * one engine dialect (spec/dialect.h: .npy, raw int32 and nrlre1 string blobs, nested lists, the
 * dynamo envelope), chosen by the first input byte modulo the dialect count; the rest is the body.
 */
#ifdef SR_FUZZ_WIRE
#include "spec/dialect.h"
#define SR_FUZZ_REGISTRIES SR_DIALECT_COUNT
#define SR_FUZZ_NAME       "fuzz_splice_wire"
#else
#define SR_FUZZ_REGISTRIES 1
#define SR_FUZZ_NAME       "fuzz_splice"
#endif

typedef struct fz {
    sr_fields *fields;
    sr_splicer *one, *two, *stream, *unknown;
} fz;

static int add_fields(sr_fields *f, int which, sr_err *err)
{
#ifdef SR_FUZZ_WIRE
    return sr_dialect_add_fields(f, (sr_dialect)which, err);
#else
    (void)which;
    return sr_fields_add_builtins(f, err);
#endif
}

static fz *state(int which)
{
    static fz all[SR_FUZZ_REGISTRIES];
    fz *zp = &all[which];
#define z (*zp)
    if (z.fields)
        return &z;
    sr_err err = SR_ERR_INIT;
    sr_splice_opts o = SR_SPLICE_OPTS_INIT, o2 = SR_SPLICE_OPTS_INIT;
    o.max_body = o2.max_body = 8 << 20;
    o2.threads = 2;
    o2.par_window = 32; /* tiny windows: window boundaries inside blobs of small inputs */
    if (sr_fields_new(&z.fields, &err) || add_fields(z.fields, which, &err) ||
        sr_splicer_new(&z.one, z.fields, &o, &err) || sr_splicer_new(&z.two, z.fields, &o2, &err) ||
        sr_splicer_new(&z.stream, z.fields, &o, &err) ||
        sr_splicer_new(&z.unknown, z.fields, &o, &err)) {
        fprintf(stderr, SR_FUZZ_NAME ": setup failed: %s\n", err.msg);
        abort();
    }
    return &z;
#undef z
}

static uint64_t mix(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* An entry's bound (sr_splice.h) must be the OR of its values, recomputed byte by byte. */
static void check_bound(const sr_splice_entry *e)
{
    if (!e->bound.known)
        return;
    size_t w = sr_dtype_size(e->array.dtype);
    const unsigned char *p = e->array.data;
    uint64_t want = 0;
    for (size_t i = 0; w && i < e->array.nbytes; i++)
        want |= (uint64_t)p[i] << (8 * (i % w));
    if (want != e->bound.value_or) {
        fprintf(stderr, SR_FUZZ_NAME ": %s's bound %llx is not the OR of its values, %llx\n",
                e->path, (unsigned long long)e->bound.value_or, (unsigned long long)want);
        abort();
    }
}

static char *fingerprint(int rc, const sr_err *err, const sr_splice_result *r)
{
    sr_buf b = SR_BUF_INIT;
    if (rc) {
        sr_buf_printf(&b, NULL, "error %d @%lld: %s", rc, (long long)err->offset, err->msg);
        return b.data;
    }
    sr_buf_printf(&b, NULL, "%llu %llu %zu %zu\n", (unsigned long long)r->stats.bytes_scanned,
                  (unsigned long long)r->stats.text_bytes, r->stats.blobs, r->stats.int_arrays);
    for (size_t i = 0; i < r->count; i++) {
        const sr_splice_entry *e = &r->entries[i];
        sr_buf_printf(&b, NULL, "%d %s %s %d %d %zu:", (int)e->kind, e->path, e->field->name,
                      (int)e->array.dtype, e->array.ndim, e->array.nbytes);
        for (int d = 0; d < e->array.ndim; d++)
            sr_buf_printf(&b, NULL, " %lld", (long long)e->array.shape[d]);
        sr_buf_append(&b, ":", 1, NULL);
        sr_buf_append(&b, e->array.data, e->array.nbytes, NULL);
        char *side = e->sidecar ? cJSON_PrintUnformatted(e->sidecar) : NULL;
        sr_buf_printf(&b, NULL, " %s or=%d:%llx\n", side ? side : "-", e->bound.known,
                      (unsigned long long)e->bound.value_or);
        free(side);
        check_bound(e);
    }
    char *doc = cJSON_PrintUnformatted(r->doc);
    sr_buf_puts(&b, doc ? doc : "?", NULL);
    free(doc);
    return b.data ? b.data : strdup("");
}

static char *stream(sr_splicer *s, const uint8_t *data, size_t size, int64_t expected,
                    uint64_t seed, size_t maxchunk)
{
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r = NULL;
    int rc = sr_splice_stream_begin(s, expected, &err);
    size_t at = 0;
    while (!rc && at < size) {
        size_t n = maxchunk == 1 ? 1 : (size_t)(mix(&seed) % (maxchunk + 1));
        if (n > size - at)
            n = size - at;
        rc = sr_splice_stream_feed(s, (const char *)data + at, n, &err);
        at += n;
    }
    if (!rc)
        rc = sr_splice_stream_finish(s, &r, &err);
    else
        sr_splice_stream_finish(s, &r, NULL);
    return fingerprint(rc, &err, r);
}

static void same(const char *want, char *got, const char *way)
{
    if (strcmp(want, got) != 0) {
        fprintf(stderr, SR_FUZZ_NAME ": %s differs from one-shot\n--- one-shot:\n%s\n--- %s:\n%s\n",
                way, want, way, got);
        abort();
    }
    free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef SR_FUZZ_WIRE
    if (size < 1)
        return 0;
    fz *z = state(data[0] % SR_FUZZ_REGISTRIES);
    data++;
    size--;
#else
    fz *z = state(0);
#endif
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ size;
    for (size_t i = 0; i < size; i += 1 + size / 16)
        seed = (seed ^ data[i]) * 0x100000001b3ull;
    seed |= 1;
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r = NULL;
    int rc = sr_splice(z->one, (const char *)data, size, -1, &r, &err);
    /* No body is an internal error: every refusal of the parser has its named class. */
    if (rc == SR_E_INTERNAL) {
        fprintf(stderr, SR_FUZZ_NAME ": internal.bug: %s\n", err.msg);
        abort();
    }
    char *want = fingerprint(rc, &err, r);
    sr_err err2 = SR_ERR_INIT;
    const sr_splice_result *r2 = NULL;
    int rc2 = sr_splice(z->two, (const char *)data, size, -1, &r2, &err2);
    same(want, fingerprint(rc2, &err2, r2), "2-thread one-shot");
    if (size <= 4096)
        same(want, stream(z->stream, data, size, -1, seed, 1), "1-byte stream");
    size_t chunks[3] = {7, 64, size / 2 + 1};
    for (int k = 0; k < 3; k++)
        same(want, stream(z->stream, data, size, (int64_t)size, seed + (uint64_t)k, chunks[k]),
             "random-chunk stream");
    same(want, stream(z->unknown, data, size, -1, seed ^ 0xabcdef, 256), "unknown-length stream");
    free(want);
    return 0;
}
