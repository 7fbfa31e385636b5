/*
 * The mock engine's bucket receiver in process (harness/engine/bucket.c; engine.h, "One broadcast
 * bucket"), driven through the entry points the HTTP layer calls (begin, feed, end), as
 * fuzz/fuzz_bucket.c drives them: a refused bucket's message names the call its caller named
 * (NULL: the plane's update call), and the header's syncroll keys are matched case-sensitively
 * like every other key of it (fuzz_bucket's invariant check stopped on a bucket whose
 * "Target_Version" the engine had taken for target_version and committed; that input is
 * fuzz/corpus/fuzz_bucket/vllm-target-version-case).
 */
#include "engine/engine.h"
#include "engine_util.h"

#define VCFG "{\"sync_dialect\":\"vllm\",\"seed\":3,\"model\":{\"layers\":2}}"
#define SCFG "{\"sync_dialect\":\"sglang\",\"seed\":3,\"model\":{\"layers\":2}}"

/* An engine of config `text` ready for a bucket (vllm: initialised and started; sglang: its group
 * initialised), and the trainer's weights at version 1 in *w. */
static sr_engine *ready(const char *text, sr_weights **w)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, text, strlen(text), "t", 0, &err), err);
    sr_engine *e;
    ck_assert_sr_ok(sr_engine_new(&e, &c, &err), err);
    sr_weights_spec ws = sr_engine_config_weights(&c);
    ck_assert_sr_ok(sr_weights_new(w, &ws, 1, &err), err);
    ck_assert_sr_ok(sr_engine_sync_call(e, SR_SC_INIT, NULL, &err), err);
    if (c.sync_dialect == SR_SYNC_DIALECT_VLLM)
        ck_assert_sr_ok(sr_engine_sync_start(e, &err), err);
    sr_engine_config_release(&c);
    return e;
}

/* One bucket request of the first `len` bytes of b, arriving on `call`. */
static int post(sr_engine *e, const char *call, const sr_buf *b, size_t len, sr_err *err)
{
    sr_bucket_rx *rx;
    ck_assert_sr_ok(sr_engine_bucket_begin(&rx, e, call, err), *err);
    sr_engine_bucket_feed(rx, b->data, len);
    return sr_engine_bucket_end(rx, NULL, err);
}

static void refused_naming(sr_engine *e, const char *call, const sr_buf *b, size_t len,
                           const char *want)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(post(e, call, b, len, &err), err, SR_E_ENGINE_REQUEST);
    ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "want '%s...', got '%s'", want,
                  err.msg);
}

START_TEST(test_messages_name_the_call)
{
    static const char *const cfg[2] = {VCFG, SCFG};
    static const char *const route[2] = {"POST /update_weights",
                                         "POST /update_weights_from_distributed"};
    static const char *const plane[2] = {"update_weights", "update_weights_from_distributed"};
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 3; c++) {
            /* A fresh engine each time: a refused bucket spoils (vllm) the update it is in. */
            sr_weights *w;
            sr_engine *e = ready(cfg[k], &w);
            sr_buf b = SR_BUF_INIT;
            eng_bucket_of_plane(&b, w, 1, k);
            char want[128];
            if (c == 0) /* one byte short: refused at the end, by the bucket layer */
                snprintf(want, sizeof(want), "%s: the tensors need ", route[k]);
            else if (c == 1) /* no header line at all */
                snprintf(want, sizeof(want), "%s bucket: no header line", route[k]);
            else /* no call named: the plane's name of its update call */
                snprintf(want, sizeof(want), "%s: the tensors need ", plane[k]);
            refused_naming(e, c < 2 ? route[k] : NULL, &b, c == 1 ? 10 : b.len - 1, want);
            ck_assert_int_eq(sr_engine_version(e), 0);
            sr_buf_release(&b);
            sr_weights_free(w);
            sr_engine_free(e);
        }
}
END_TEST

START_TEST(test_header_keys_are_case_sensitive)
{
    static const char *const cfg[2] = {VCFG, SCFG};
    static const char *const key[2] = {"\"target_version\"", "\"bucket\""};
    static const char *const odd[2] = {"\"Target_Version\"", "\"BUCKET\""};
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 2; j++) {
            sr_weights *w;
            sr_engine *e = ready(cfg[k], &w);
            sr_buf b = SR_BUF_INIT;
            eng_bucket_of_plane(&b, w, 1, k);
            char *at = strstr(b.data, key[j]);
            ck_assert_ptr_nonnull(at);
            memcpy(at, odd[j], strlen(odd[j]));
            sr_err err = SR_ERR_INIT;
            ck_assert_sr_code(post(e, NULL, &b, b.len, &err), err, SR_E_ENGINE_REQUEST);
            ck_assert_msg(strstr(err.msg, "syncroll {target_version, bucket, sizes, checksums}"),
                          "%s", err.msg);
            int64_t v = -1;
            if (k == 0) /* the spoiled update is discarded */
                ck_assert_int_ne(sr_engine_sync_finish(e, -1, NULL, &v, &err), 0);
            ck_assert_int_eq(sr_engine_version(e), 0);
            /* The same bucket with the key as sent is taken. */
            memcpy(at, key[j], strlen(key[j]));
            if (k == 0)
                ck_assert_sr_ok(sr_engine_sync_start(e, &err), err);
            ck_assert_sr_ok(post(e, NULL, &b, b.len, &err), err);
            if (k == 0)
                ck_assert_sr_ok(sr_engine_sync_finish(e, -1, NULL, &v, &err), err);
            ck_assert_int_eq(sr_engine_version(e), 1);
            sr_buf_release(&b);
            sr_weights_free(w);
            sr_engine_free(e);
        }
}
END_TEST

/* Every byte of a tensor's 128-bit checksum counts: a bucket whose first or last tensor's
 * checksum has one of its 16 bytes changed (hex digits 2b, 2b+1) is refused with
 * delta.checksum and leaves the version where it was, on both planes; the bucket as sent is
 * taken. */
START_TEST(test_every_checksum_byte_is_compared)
{
    static const char *const cfg[2] = {VCFG, SCFG};
    for (int k = 0; k < 2; k++)
        for (int which = 0; which < 2; which++)
            for (int byte = 0; byte <= 16; byte++) {
                sr_weights *w;
                sr_engine *e = ready(cfg[k], &w);
                sr_buf b = SR_BUF_INIT;
                eng_bucket_of_plane(&b, w, 1, k);
                char *list = strstr(b.data, "\"checksums\":[\"");
                ck_assert_ptr_nonnull(list);
                /* The first checksum follows the key; the last ends 2 bytes before the ']'. */
                char *sum = which == 0 ? list + 14 : strchr(list, ']') - 33;
                ck_assert_int_eq(sum[-1], '"');
                ck_assert_int_eq(sum[32], '"');
                sr_err err = SR_ERR_INIT;
                if (byte < 16) {
                    char *d = sum + 2 * byte + (byte % 2); /* the high or the low digit */
                    *d = *d == '0' ? '1' : '0';
                    ck_assert_msg(post(e, NULL, &b, b.len, &err) == SR_E_DELTA_CHECKSUM,
                                  "plane %d tensor %s byte %d: %s", k, which ? "last" : "first",
                                  byte, err.msg);
                    ck_assert_ptr_nonnull(strstr(err.msg, "Checksum mismatch"));
                    ck_assert_int_eq(sr_engine_version(e), 0);
                } else {
                    int64_t v = -1;
                    ck_assert_sr_ok(post(e, NULL, &b, b.len, &err), err);
                    if (k == 0)
                        ck_assert_sr_ok(sr_engine_sync_finish(e, -1, NULL, &v, &err), err);
                    ck_assert_int_eq(sr_engine_version(e), 1);
                }
                sr_buf_release(&b);
                sr_weights_free(w);
                sr_engine_free(e);
            }
}
END_TEST

/* The header line at its limit, fed in 1 MiB pieces (it grows across calls): padded with spaces
 * after its '{' to exactly SR_BUCKET_HEADER_MAX bytes before the '\n' (and one fewer) the bucket
 * is taken; one byte more is refused by name and commits nothing. */
START_TEST(test_header_line_at_its_limit)
{
    for (int d = -1; d <= 1; d++) {
        sr_weights *w;
        sr_engine *e = ready(VCFG, &w);
        sr_buf b = SR_BUF_INIT;
        eng_bucket_of_plane(&b, w, 1, 0);
        size_t head = (size_t)((char *)memchr(b.data, '\n', b.len) - b.data);
        size_t want = (size_t)((int64_t)SR_BUCKET_HEADER_MAX + d), pad = want - head;
        char *big = malloc(b.len + pad);
        ck_assert_ptr_nonnull(big);
        big[0] = '{';
        memset(big + 1, ' ', pad);
        memcpy(big + 1 + pad, b.data + 1, b.len - 1);
        sr_bucket_rx *rx;
        sr_err err = SR_ERR_INIT;
        ck_assert_sr_ok(sr_engine_bucket_begin(&rx, e, NULL, &err), err);
        /* In pieces of 1 MiB: the header grows across calls. */
        for (size_t at = 0; at < b.len + pad; at += (size_t)1 << 20) {
            size_t n = b.len + pad - at < ((size_t)1 << 20) ? b.len + pad - at : (size_t)1 << 20;
            sr_engine_bucket_feed(rx, big + at, n);
        }
        int rc = sr_engine_bucket_end(rx, NULL, &err);
        if (d > 0) {
            ck_assert_sr_code(rc, err, SR_E_ENGINE_REQUEST);
            ck_assert_ptr_nonnull(strstr(err.msg, "within SR_BUCKET_HEADER_MAX bytes"));
            ck_assert_int_eq(sr_engine_version(e), 0);
        } else {
            int64_t v = -1;
            ck_assert_sr_ok(rc, err);
            ck_assert_sr_ok(sr_engine_sync_finish(e, -1, NULL, &v, &err), err);
            ck_assert_int_eq(sr_engine_version(e), 1);
        }
        free(big);
        sr_buf_release(&b);
        sr_weights_free(w);
        sr_engine_free(e);
    }
}
END_TEST

static Suite *bucket_suite(void)
{
    Suite *s = suite_create("engine_bucket");
    TCase *tc = tcase_create("bucket");
    tcase_add_test(tc, test_messages_name_the_call);
    tcase_add_test(tc, test_header_keys_are_case_sensitive);
    tcase_add_test(tc, test_every_checksum_byte_is_compared);
    tcase_add_test(tc, test_header_line_at_its_limit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(bucket_suite());
}
