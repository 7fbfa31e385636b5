/*
 * Shared by the splice suites (test_splice.c, test_splice_stream.c): every body goes through
 * check(), which splices it one-shot with 1 and 2 threads and streamed whole, in 1-byte chunks
 * (small bodies), in 7-byte and random chunks with and without a known length, and fails the test
 * unless all of them agree on the error (code, offset, message) or on the result (entries,
 * arrays, sidecars, bounds, document and statistics).
 */
#ifndef SPLICE_HARNESS_H
#define SPLICE_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_buf.h"
#include "sr_envelope.h"
#include "sr_splice.h"
#include "sr_test.h"

static sr_fields *g_fields;
static sr_splicer *g_one, *g_two, *g_stream, *g_unknown;
static const sr_splice_result *g_res;
static sr_err g_err;
static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static inline uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* Makes every splicer of the harness use registry `f` (taken over) and opts.strict_base64. */
static inline void use_fields_strict(sr_fields *f, int strict_base64)
{
    sr_splicer_free(g_one);
    sr_splicer_free(g_two);
    sr_splicer_free(g_stream);
    sr_splicer_free(g_unknown);
    if (g_fields && g_fields != f)
        sr_fields_free(g_fields);
    g_fields = f;
    sr_err err = SR_ERR_INIT;
    sr_splice_opts o = SR_SPLICE_OPTS_INIT, o2 = SR_SPLICE_OPTS_INIT;
    o2.threads = 2;
    o2.par_window = 16 + 16 * (rnd() % 4); /* tiny windows: many window boundaries per blob */
    o.max_body = o2.max_body = 64 << 20;
    o.strict_base64 = o2.strict_base64 = strict_base64;
    ck_assert_sr_ok(sr_splicer_new(&g_one, f, &o, &err), err);
    ck_assert_sr_ok(sr_splicer_new(&g_two, f, &o2, &err), err);
    ck_assert_sr_ok(sr_splicer_new(&g_stream, f, &o, &err), err);
    ck_assert_sr_ok(sr_splicer_new(&g_unknown, f, &o, &err), err);
}

static inline void use_fields(sr_fields *f)
{
    use_fields_strict(f, 0);
}

static inline sr_fields *builtin_fields(void)
{
    sr_fields *f;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_new(&f, &err), err);
    ck_assert_sr_ok(sr_fields_add_builtins(f, &err), err);
    return f;
}

static inline void setup(void)
{
    use_fields(builtin_fields());
}

static inline void teardown(void)
{
    sr_splicer_free(g_one);
    sr_splicer_free(g_two);
    sr_splicer_free(g_stream);
    sr_splicer_free(g_unknown);
    sr_fields_free(g_fields);
    g_one = g_two = g_stream = g_unknown = NULL;
    g_fields = NULL;
}

static inline uint64_t fnv(const void *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* Everything a result says, as text. */
static inline char *fingerprint(int rc, const sr_err *err, const sr_splice_result *r)
{
    sr_buf b = SR_BUF_INIT;
    if (rc) {
        sr_buf_printf(&b, NULL, "error %s @%lld: %s", sr_code_name(rc), (long long)err->offset,
                      err->msg);
        return b.data;
    }
    const sr_splice_stats *st = &r->stats;
    sr_buf_printf(&b, NULL,
                  "passes=%d body=%llu scanned=%llu text=%llu chars=%llu dec=%llu "
                  "blobs=%zu ints=%zu\n",
                  st->passes, (unsigned long long)st->body_bytes,
                  (unsigned long long)st->bytes_scanned, (unsigned long long)st->text_bytes,
                  (unsigned long long)st->blob_chars, (unsigned long long)st->decoded_bytes,
                  st->blobs, st->int_arrays);
    for (size_t i = 0; i < r->count; i++) {
        const sr_splice_entry *e = &r->entries[i];
        char desc[128], *side = e->sidecar ? cJSON_PrintUnformatted(e->sidecar) : NULL;
        sr_buf_printf(
            &b, NULL, "%d %s %s %s %zu %d %016llx %s nc=%lld or=%d:%llx\n", (int)e->kind, e->path,
            e->field->name,
            sr_ndarray_desc(e->array.dtype, e->array.ndim, e->array.shape, desc, sizeof(desc)),
            e->array.nbytes, e->spliced, (unsigned long long)fnv(e->array.data, e->array.nbytes),
            side ? side : "-", (long long)e->b64_noncanonical, e->bound.known,
            (unsigned long long)e->bound.value_or);
        ck_assert_msg(e->array.nbytes == 0 || ((uintptr_t)e->array.data & 7) == 0,
                      "entry %zu is not 8-byte aligned", i);
        free(side);
    }
    char *doc = cJSON_PrintUnformatted(r->doc);
    sr_buf_puts(&b, doc, NULL);
    free(doc);
    return b.data;
}

static inline char *run_stream(sr_splicer *s, const char *body, size_t len, int64_t expected,
                               int64_t begin_len, size_t chunk, int random)
{
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r = NULL;
    int rc = sr_splice_stream_begin(s, begin_len, &err);
    ck_assert_sr_ok(rc, err);
    (void)expected;
    size_t at = 0;
    while (at < len && rc == 0) {
        size_t n = random ? (size_t)(rnd() % (chunk + 1)) : chunk;
        if (n > len - at)
            n = len - at;
        /* Each chunk in its own block, followed by a byte the body does not have there: a scan
         * that reads past its chunk (which a real client may reuse) sees it and goes wrong. */
        char *c = malloc(n + 1);
        ck_assert_ptr_nonnull(c);
        memcpy(c, body + at, n);
        c[n] = 'x';
        rc = sr_splice_stream_feed(s, c, n, &err);
        free(c);
        at += n;
    }
    if (rc == 0)
        rc = sr_splice_stream_finish(s, &r, &err);
    else {
        sr_err again = SR_ERR_INIT;
        ck_assert_int_eq(sr_splice_stream_finish(s, &r, &again), rc);
        ck_assert_int_eq(again.code, rc);
    }
    return fingerprint(rc, &err, r);
}

/* Splices `body` every way; returns the one-shot code, leaving g_res / g_err set. */
static inline int check_len(const char *body, size_t len, int64_t expected)
{
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r2 = NULL;
    int rc2 = sr_splice(g_two, body, len, expected, &r2, &err);
    char *want2 = fingerprint(rc2, &err, r2);
    memset(&g_err, 0, sizeof(g_err));
    int rc = sr_splice(g_one, body, len, expected, &g_res, &g_err);
    ck_assert_int_eq(rc, g_err.code);
    char *want = fingerprint(rc, &g_err, g_res);
    ck_assert_msg(strcmp(want, want2) == 0, "threaded one-shot differs:\n%s\n--- vs ---\n%s", want,
                  want2);
    free(want2);
    char *got[6];
    int ways = 0;
    got[ways++] = run_stream(g_stream, body, len, expected, expected, len ? len : 1, 0);
    if (len <= 6000)
        got[ways++] = run_stream(g_stream, body, len, expected, expected, 1, 0);
    got[ways++] = run_stream(g_stream, body, len, expected, expected, 7, 0);
    got[ways++] = run_stream(g_stream, body, len, expected, expected, len / 3 + 1, 1);
    if (expected < 0)
        got[ways++] = run_stream(g_unknown, body, len, expected, -1, 4096 + rnd() % 70000, 1);
    for (int w = 0; w < ways; w++) {
        ck_assert_msg(strcmp(want, got[w]) == 0, "stream way %d differs:\n%s\n--- vs ---\n%s", w,
                      want, got[w]);
        free(got[w]);
    }
    free(want);
    /* The one-shot result is still the last one of g_one. */
    return rc;
}

/* Test bodies are written with ' for " (and \' for an escaped quote). */
static inline const char *J(const char *q)
{
    static char ring[8][8192];
    static int slot;
    char *o = ring[slot++ & 7];
    size_t i = 0;
    for (; q[i]; i++)
        o[i] = q[i] == '\'' ? '"' : q[i];
    o[i] = '\0';
    return o;
}

static inline int check(const char *body)
{
    return check_len(body, strlen(body), -1);
}

static inline int checkq(const char *q)
{
    return check(J(q));
}

static inline const sr_splice_entry *entry(size_t i)
{
    ck_assert_ptr_nonnull(g_res);
    ck_assert_uint_lt(i, g_res->count);
    return &g_res->entries[i];
}

static inline void expect_error(const char *q, int code, const char *needle)
{
    int rc = checkq(q);
    ck_assert_sr_code(rc, g_err, code);
    if (needle)
        ck_assert_msg(strstr(g_err.msg, needle) != NULL, "message '%s' lacks '%s'", g_err.msg,
                      needle);
}

#define ROUTES_12 "'routed_experts':{'data':'AAECAwQFBgcICQoL','shape':[3,2,2],'dtype':'uint8'}"

#endif /* SPLICE_HARNESS_H */
