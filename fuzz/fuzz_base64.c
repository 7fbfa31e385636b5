/*
 * fuzz_base64: differential libFuzzer target for lib/sr_base64.
 *
 * Input: byte 0 gives h = data[0] % 16, the next h bytes are chunk sizes for the streaming
 * decoder (cycled; 0 is a valid empty feed), and the rest is the text. Checked, with abort()
 * on any difference:
 *   - scalar vs AVX2 vs AVX-512 VBMI plain decode: code, offset, length and bytes; no write past
 *     the output;
 *   - a successful decode re-encodes to the same text exactly when no trailing bits were
 *     dropped (the noncanon_at note is -1), and strict decoding (SR_B64_STRICT_BITS) succeeds
 *     exactly then, failing with SR_E_B64_PADDING at the note otherwise;
 *   - the text as raw bytes: scalar vs AVX2 encode, then decode back to the same bytes (AVX2
 *     and AVX-512 VBMI);
 *   - scalar vs AVX2 vs AVX-512 VBMI one-shot fused decode, and each of them vs the stream fed
 *     in chunks, whose SR_B64_LANES must agree too.
 * On a CPU without AVX2 or AVX-512 VBMI that side resolves to the best the CPU has and the
 * target still runs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sr_base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CANARY 0xa5

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

typedef struct result {
    int rc;
    int64_t offset;
    size_t len;      /* decoded bytes */
    size_t consumed; /* fused only */
    int found;       /* fused only */
    uint32_t lanes;  /* streamed only */
    unsigned char *out;
} result;

static unsigned char *out_buf(size_t n)
{
    size_t cap = sr_base64_decoded_max(n) + 1;
    unsigned char *p = malloc(cap);
    CHECK(p != NULL);
    memset(p, CANARY, cap);
    return p;
}

static void same(const result *a, const result *b)
{
    CHECK(a->rc == b->rc && a->offset == b->offset);
    if (a->rc == 0) {
        CHECK(a->len == b->len && a->consumed == b->consumed && a->found == b->found);
        CHECK(memcmp(a->out, b->out, a->len) == 0);
    }
}

static result plain(const char *text, size_t n, sr_b64_impl impl)
{
    result r = {0, -1, 0, 0, 0, 0, out_buf(n)};
    sr_err err = SR_ERR_INIT;
    r.rc = sr_base64_decode(r.out, &r.len, text, n, impl, &err);
    CHECK(r.rc == err.code);
    r.offset = err.offset;
    if (r.rc == 0)
        CHECK(r.out[r.len] == CANARY);
    else
        CHECK(r.rc == SR_E_B64_CHAR || r.rc == SR_E_B64_PADDING || r.rc == SR_E_B64_LENGTH);
    CHECK(r.rc == 0 ? r.offset == -1 : r.offset >= 0 && (uint64_t)r.offset <= n);
    return r;
}

static result fused(const char *text, size_t n, sr_b64_impl impl)
{
    result r = {0, -1, 0, 0, 0, 0, out_buf(n)};
    sr_err err = SR_ERR_INIT;
    r.rc = sr_base64_decode_until_quote(r.out, &r.len, text, n, &r.consumed, &r.found, impl, &err);
    CHECK(r.rc == err.code);
    r.offset = err.offset;
    if (r.rc == 0) {
        CHECK(r.out[r.len] == CANARY && r.consumed <= n);
        CHECK(r.found ? text[r.consumed] == '"' : r.consumed == n);
        CHECK(memchr(text, '"', r.consumed) == NULL);
    }
    return r;
}

/* Feeds the text in chunks of the given sizes, each chunk in its own heap block. */
static result streamed(const char *text, size_t n, sr_b64_impl impl, const uint8_t *sizes,
                       size_t nsizes)
{
    result r = {0, -1, 0, 0, 0, 0, out_buf(n)};
    sr_b64_stream s;
    sr_b64_stream_init_flags(&s, impl, SR_B64_LANES);
    size_t pos = 0;
    for (size_t i = 0; pos < n || i == 0; i++) {
        size_t c = nsizes ? sizes[i % nsizes] : n;
        if (nsizes && i % nsizes == nsizes - 1 && c == 0)
            c = 1; /* ensure progress */
        c = c < n - pos ? c : n - pos;
        char *chunk = malloc(c ? c : 1);
        CHECK(chunk != NULL);
        memcpy(chunk, text + pos, c);
        size_t consumed, before = r.len;
        int done;
        sr_err err = SR_ERR_INIT;
        r.rc = sr_b64_stream_feed(&s, r.out + r.len, &r.len, chunk, c, &consumed, &done, &err);
        free(chunk);
        if (r.rc) {
            CHECK(r.rc == err.code && r.len == before);
            r.offset = err.offset;
            return r;
        }
        CHECK(r.out[r.len] == CANARY && s.ncarry >= 0 && s.ncarry < 4);
        pos += consumed;
        CHECK(s.pos == pos && s.written == r.len);
        if (done) {
            r.found = 1;
            break;
        }
        CHECK(consumed == c);
    }
    r.consumed = pos;
    r.lanes = s.lanes;
    return r;
}

static void roundtrip(const unsigned char *raw, size_t n)
{
    size_t en = sr_base64_encoded_len(n);
    char *a = malloc(en + 1), *b = malloc(en + 1);
    CHECK(a != NULL && b != NULL);
    a[en] = b[en] = '#';
    CHECK(sr_base64_encode(a, raw, n, SR_B64_SCALAR) == en);
    CHECK(sr_base64_encode(b, raw, n, SR_B64_AVX2) == en);
    CHECK(memcmp(a, b, en) == 0 && a[en] == '#' && b[en] == '#');
    result d = plain(a, en, SR_B64_AVX2), v = plain(a, en, SR_B64_AVX512);
    CHECK(d.rc == 0 && d.len == n && memcmp(d.out, raw, n) == 0);
    CHECK(v.rc == 0 && v.len == n && memcmp(v.out, raw, n) == 0);
    free(d.out);
    free(v.out);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t h = data[0] % 16;
    if (h > size - 1)
        h = size - 1;
    const uint8_t *sizes = data + 1;
    size_t n = size - 1 - h;
    /* A heap copy of exactly n bytes, so that any read past the text is caught. */
    char *text = malloc(n ? n : 1);
    CHECK(text != NULL);
    memcpy(text, data + 1 + h, n);

    result ps = plain(text, n, SR_B64_SCALAR), pv = plain(text, n, SR_B64_AVX2);
    result pw = plain(text, n, SR_B64_AVX512);
    same(&ps, &pv);
    same(&ps, &pw);
    {
        unsigned char *o2 = out_buf(n);
        size_t l2;
        int64_t note = -2;
        sr_err e2 = SR_ERR_INIT;
        CHECK(sr_base64_decode_ex(o2, &l2, text, n, SR_B64_AVX2, 0, &note, &e2) == ps.rc);
        int rs =
            sr_base64_decode_ex(o2, &l2, text, n, SR_B64_SCALAR, SR_B64_STRICT_BITS, NULL, &e2);
        if (ps.rc == 0) {
            char *re = malloc(n + 1);
            CHECK(re != NULL);
            CHECK(sr_base64_encode(re, ps.out, ps.len, SR_B64_AVX2) == n);
            CHECK((memcmp(re, text, n) == 0) == (note == -1));
            CHECK(note == -1 ? rs == 0 && l2 == ps.len
                             : rs == SR_E_B64_PADDING && e2.offset == note);
            free(re);
        } else {
            CHECK(note == -1 && rs != 0);
        }
        free(o2);
    }
    roundtrip((const unsigned char *)text, n);

    result fs = fused(text, n, SR_B64_SCALAR), fv = fused(text, n, SR_B64_AVX2);
    result fw = fused(text, n, SR_B64_AVX512);
    same(&fs, &fv);
    same(&fs, &fw);
    result ss = streamed(text, n, SR_B64_SCALAR, sizes, h);
    result sv = streamed(text, n, SR_B64_AVX2, sizes, h);
    result sw = streamed(text, n, SR_B64_AVX512, sizes, h);
    same(&fs, &ss);
    same(&fv, &sv);
    same(&fw, &sw);
    if (ss.rc == 0)
        CHECK(sv.lanes == ss.lanes && sw.lanes == ss.lanes);

    /* The fused decoder is the plain decoder applied to the text before the first quote,
     * except that an unterminated text may end inside a quad. */
    const char *q = memchr(text, '"', n);
    result pq = plain(text, q ? (size_t)(q - text) : n, SR_B64_SCALAR);
    if (!q && pq.rc == SR_E_B64_LENGTH) {
        CHECK(fs.rc == 0 && !fs.found && fs.consumed == n && fs.len == (n - n % 4) / 4 * 3);
    } else {
        CHECK(fs.rc == pq.rc && fs.offset == pq.offset);
        if (fs.rc == 0)
            CHECK(fs.found == (q != NULL) && fs.len == pq.len &&
                  memcmp(fs.out, pq.out, fs.len) == 0);
    }

    result *all[] = {&ps, &pv, &pw, &fs, &fv, &fw, &ss, &sv, &sw, &pq};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        free(all[i]->out);
    free(text);
    return 0;
}
