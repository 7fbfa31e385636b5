/*
 * fuzz_delta_manifest: libFuzzer target for the untrusted documents of lib/sr_delta.
 *
 * The same input bytes are fed as:
 *   - manifest.json to sr_delta_manifest_parse: it must return 0 or delta.manifest / nomem
 *     with a message; on success every record must satisfy the documented invariants (byte
 *     count = shape product * item size, payload file listed and plain, sums equal the totals);
 *   - state.json to sr_delta_state_parse: 0 or delta.state; on success the rendered state must
 *     parse back to the same values;
 *   - a payload file (header, then index) to the container index parser: 0 or delta.payload /
 *     nomem; on success every blob lies inside the data area.
 * Any violation calls abort().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sr_delta.h"
#include "sr_delta_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

static void check_record(const sr_delta_manifest *m, const sr_delta_record *r)
{
    size_t item = sr_delta_dtype_size(r->dtype);
    CHECK(item > 0);
    CHECK(r->ndim >= 0 && r->ndim <= SR_NDIM_MAX);
    uint64_t bytes = item;
    for (int d = 0; d < r->ndim; d++) {
        CHECK(r->shape[d] >= 0);
        /* The parser proved the product fits; recompute it with a wide type. */
        unsigned __int128 p = (unsigned __int128)bytes * (uint64_t)r->shape[d];
        CHECK(p <= UINT64_MAX);
        bytes = (uint64_t)p;
    }
    CHECK(bytes == r->uncompressed_num_bytes);
    CHECK(r->uncompressed_num_bytes <= SR_DELTA_MAX_TENSOR_BYTES);
    CHECK(r->compressed_num_bytes >= 1);
    CHECK(r->payload_file_index < m->n_payload_files);
    CHECK(strcmp(m->payload_files[r->payload_file_index], r->payload_file) == 0);
    CHECK(sr_delta_valid_file_name(r->payload_file));
    CHECK(r->payload_file[0] != '.' && strchr(r->payload_file, '/') == NULL);
    size_t nl = strlen(r->name), kl = strlen(r->payload_key);
    CHECK(nl >= 1 && nl <= SR_DELTA_NAME_MAX && kl >= 1 && kl <= SR_DELTA_NAME_MAX);
}

static void fuzz_manifest(const uint8_t *data, size_t size)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_manifest *m = NULL;
    int rc = sr_delta_manifest_parse(&m, (const char *)data, size, "manifest.json", &e);
    if (rc) {
        CHECK(m == NULL);
        CHECK(rc == SR_E_DELTA_MANIFEST || rc == SR_E_NOMEM);
        CHECK(e.code == rc && e.msg[0] != '\0');
        return;
    }
    CHECK(m->version >= 1 && m->version <= SR_DELTA_MAX_VERSION);
    CHECK(m->base_version >= 0 && m->base_version < m->version);
    CHECK(m->n_tensors <= SR_DELTA_MAX_TENSORS);
    uint64_t tu = 0, tc = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        check_record(m, &m->tensors[i]);
        tu += m->tensors[i].uncompressed_num_bytes;
        tc += m->tensors[i].compressed_num_bytes;
        if (i > 0)
            CHECK(strcmp(m->tensors[i - 1].name, m->tensors[i].name) != 0);
    }
    CHECK(tu == m->total_uncompressed_num_bytes && tc == m->total_compressed_num_bytes);
    for (size_t i = 0; i < m->n_payload_files; i++)
        CHECK(sr_delta_valid_file_name(m->payload_files[i]));
    sr_delta_manifest_free(m);
}

static void fuzz_state(const uint8_t *data, size_t size)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_state s;
    int rc = sr_delta_state_parse(&s, (const char *)data, size, "state.json", &e);
    if (rc) {
        CHECK(rc == SR_E_DELTA_STATE || rc == SR_E_NOMEM);
        CHECK(e.code == rc && e.msg[0] != '\0');
        return;
    }
    CHECK(s.version >= 0 && s.version <= SR_DELTA_MAX_VERSION);
    CHECK(s.target_version >= 0 && s.target_version <= SR_DELTA_MAX_VERSION);
    CHECK(s.write_in_progress == 0 || s.write_in_progress == 1);
    char text[256];
    size_t n = sr_delta_state_render(text, sizeof(text), &s);
    sr_delta_state back;
    CHECK(sr_delta_state_parse(&back, text, n, "rendered", &e) == 0);
    CHECK(back.version == s.version && back.write_in_progress == s.write_in_progress &&
          back.target_version == s.target_version);
}

static void fuzz_payload_index(const uint8_t *data, size_t size)
{
    sr_err e = SR_ERR_INIT;
    uint64_t n, ibytes;
    int rc = sr_delta_index_header(&n, &ibytes, data, size, size, "payload", &e);
    if (rc) {
        CHECK(rc == SR_E_DELTA_PAYLOAD);
        return;
    }
    CHECK(SR_DELTA_PAYLOAD_HEADER + ibytes <= size);
    sr_delta_index ix;
    rc = sr_delta_index_parse(&ix, data + SR_DELTA_PAYLOAD_HEADER, (size_t)ibytes, n, size,
                              "payload", &e);
    if (rc) {
        CHECK(rc == SR_E_DELTA_PAYLOAD || rc == SR_E_NOMEM);
        return;
    }
    CHECK(ix.n == n);
    for (size_t i = 0; i < ix.n; i++) {
        const sr_delta_blob *b = &ix.blobs[i];
        CHECK(b->offset >= SR_DELTA_PAYLOAD_HEADER + ibytes);
        CHECK(b->offset <= size && b->length <= size - b->offset);
        CHECK(sr_delta_index_find(&ix, b->key) != NULL);
    }
    sr_delta_index_free(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_manifest(data, size);
    fuzz_state(data, size);
    fuzz_payload_index(data, size);
    return 0;
}
