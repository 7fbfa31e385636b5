/* sr_delta: untrusted manifests, state files and payloads give named, located errors. */
#include <fcntl.h>
#include <errno.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "delta_fixture.h"
#include "sr_delta_priv.h"

/* ---- untrusted manifests ---- */

static const char k_manifest[] =
    "{\n"
    "  \"version\": 2,\n"
    "  \"base_version\": 1,\n"
    "  \"tensors\": [\n"
    "    {\"name\": \"a\", \"dtype\": \"float32\", \"shape\": [2, 3], \"uncompressed_num_bytes\": "
    "24, \"compressed_num_bytes\": 20, \"payload_file\": \"payload-000000.srdp\", "
    "\"payload_key\": \"a\", \"checksum\": \"000102030405060708090a0b0c0d0e0f\", "
    "\"checksum_algorithm\": \"xxh3-128\"}\n"
    "  ],\n"
    "  \"total_uncompressed_num_bytes\": 24,\n"
    "  \"total_compressed_num_bytes\": 20,\n"
    "  \"payload_files\": [\"payload-000000.srdp\"]\n"
    "}\n";

/* Parses k_manifest with `from` replaced by `to`; expects delta.manifest and `want` in the
 * message. */
static void bad_manifest(const char *from, const char *to, const char *want)
{
    char text[2048];
    const char *at = strstr(k_manifest, from);
    ck_assert_msg(at != NULL, "'%s' not in the template", from);
    size_t head = (size_t)(at - k_manifest);
    memcpy(text, k_manifest, head);
    snprintf(text + head, sizeof(text) - head, "%s%s", to, at + strlen(from));
    sr_err e = SR_ERR_INIT;
    sr_delta_manifest *m = (sr_delta_manifest *)1;
    ck_assert_sr_code(sr_delta_manifest_parse(&m, text, strlen(text), "m.json", &e), e,
                      SR_E_DELTA_MANIFEST);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(e.msg, want) != NULL, "'%s' not in '%s'", want, e.msg);
}

START_TEST(manifest_errors_are_named_and_located)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_manifest *m = NULL;
    ck_assert_sr_ok(sr_delta_manifest_parse(&m, k_manifest, strlen(k_manifest), "m.json", &e), e);
    ck_assert_uint_eq(m->tensors[0].checksum_hi, 0x0001020304050607ull);
    ck_assert_uint_eq(m->tensors[0].checksum_lo, 0x08090a0b0c0d0e0full);
    ck_assert_uint_eq(m->tensors[0].payload_file_index, 0);
    sr_delta_manifest_free(m);

    bad_manifest("\"version\": 2", "\"version\": \"2\"",
                 "m.json:2:3: 'version' must be an integer");
    bad_manifest("\"version\": 2", "\"version\": 0", "m.json:2:3: 'version' is 0, outside");
    bad_manifest("\"base_version\": 1", "\"base_version\": 2", "m.json:3:3:");
    bad_manifest("[2, 3]", "[2, -3]", "m.json:5:");
    bad_manifest("[2, 3]", "[2, 3.0]", "non-negative integer");
    bad_manifest("[2, 3]", "[1, 1, 1, 1, 1, 1, 1, 1, 1]", "at most 8 dimensions");
    bad_manifest("[2, 3]", "[1099511627776, 1099511627776]", "differs from the shape");
    bad_manifest("\"uncompressed_num_bytes\": 24", "\"uncompressed_num_bytes\": 25",
                 "differs from the shape");
    bad_manifest("\"compressed_num_bytes\": 20", "\"compressed_num_bytes\": 100000", "outside");
    bad_manifest("\"float32\"", "\"float33\"", "unknown dtype 'float33'");
    bad_manifest("[\"payload-000000.srdp\"]", "[\"../payload-000000.srdp\"]", "plain file name");
    bad_manifest("[\"payload-000000.srdp\"]", "[\"sub/p.srdp\"]", "plain file name");
    bad_manifest("[\"payload-000000.srdp\"]", "[\"payload-000000.srdp\", \"payload-000000.srdp\"]",
                 "listed twice");
    bad_manifest("\"payload_file\": \"payload-000000.srdp\"", "\"payload_file\": \"p1.srdp\"",
                 "not in payload_files");
    bad_manifest("0a0b", "0A0B", "32 lowercase hex digits");
    bad_manifest("0e0f\"", "0e0f0\"", "32 lowercase hex digits");
    bad_manifest("\"xxh3-128\"", "\"md5\"", "checksum_algorithm must be 'xxh3-128'");
    bad_manifest(", \"checksum_algorithm\": \"xxh3-128\"", "",
                 "missing required key 'checksum_algorithm'");
    bad_manifest("\"payload_key\": \"a\"", "\"payload_key\": \"a\", \"extra\": 1",
                 "unknown key 'extra' in a tensor record");
    bad_manifest("\"name\": \"a\"", "\"name\": \"\"", "'name' must hold 1..");
    bad_manifest("\"total_compressed_num_bytes\": 20", "\"total_compressed_num_bytes\": 21",
                 "differ from the records' sums");
    bad_manifest("\"payload_files\"", "\"payload_filez\"", "unknown key 'payload_filez'");
    bad_manifest("\"tensors\": [", "\"tensors\": {\"x\": 1}, \"t\": [", "unknown key 't'");
    bad_manifest("\"xxh3-128\"}\n",
                 "\"xxh3-128\"},\n    {\"name\": \"a\", \"dtype\": \"uint8\", "
                 "\"shape\": [], \"uncompressed_num_bytes\": 1, \"compressed_num_bytes\": 1, "
                 "\"payload_file\": \"payload-000000.srdp\", \"payload_key\": \"b\", "
                 "\"checksum\": \"000102030405060708090a0b0c0d0e0f\", \"checksum_algorithm\": "
                 "\"xxh3-128\"}\n",
                 "tensor 'a' appears twice");

    /* Raw control characters and byte order marks are not JSON (cJSON would skip them). */
    bad_manifest("\"version\": 2", "\"version\":\x1a 2",
                 "m.json:2:13: a control character is not allowed in JSON");
    const char *bom = "\xEF\xBB\xBF{}";
    ck_assert_sr_code(sr_delta_manifest_parse(&m, bom, strlen(bom), "m.json", &e), e,
                      SR_E_DELTA_MANIFEST);
    ck_assert_str_eq(e.msg, "m.json:1:1: a byte order mark is not allowed in JSON");

    /* Not JSON, truncated, or too large. */
    const char *garbage = "garbage";
    ck_assert_sr_code(sr_delta_manifest_parse(&m, garbage, strlen(garbage), "m.json", &e), e,
                      SR_E_DELTA_MANIFEST);
    ck_assert_str_eq(e.msg, "m.json:1:1: invalid JSON");
    ck_assert_sr_code(sr_delta_manifest_parse(&m, k_manifest, 150, "m.json", &e), e,
                      SR_E_DELTA_MANIFEST);
    ck_assert_str_eq(e.msg, "m.json:5:87: invalid JSON"); /* in the cut-off key */
    ck_assert_sr_code(sr_delta_manifest_parse(&m, "", 0, "m.json", &e), e, SR_E_DELTA_MANIFEST);
    ck_assert_sr_code(sr_delta_manifest_parse(&m, "[]", 2, "m.json", &e), e, SR_E_DELTA_MANIFEST);
    ck_assert_ptr_nonnull(strstr(e.msg, "m.json:1:1:"));
    char *big = calloc(SR_DELTA_MANIFEST_MAX + 1, 1);
    ck_assert_sr_code(sr_delta_manifest_parse(&m, big, SR_DELTA_MANIFEST_MAX + 1, "m.json", &e), e,
                      SR_E_DELTA_MANIFEST);
    free(big);
}
END_TEST

/* Parses k_manifest with `from` replaced by `to`; returns the code (the message in *e). */
static int manifest_with(const char *from, const char *to, sr_err *e)
{
    static char text[8192];
    const char *at = strstr(k_manifest, from);
    ck_assert_msg(at != NULL, "'%s' not in the template", from);
    size_t head = (size_t)(at - k_manifest);
    memcpy(text, k_manifest, head);
    snprintf(text + head, sizeof(text) - head, "%s%s", to, at + strlen(from));
    sr_delta_manifest *m = NULL;
    int rc = sr_delta_manifest_parse(&m, text, strlen(text), "m.json", e);
    sr_delta_manifest_free(m);
    return rc;
}

/* The manifest's limits, at, before and past: a name and a payload key of SR_DELTA_NAME_MAX
 * bytes, a payload file name of SR_DELTA_FILE_NAME_MAX, a manifest of SR_DELTA_MANIFEST_MAX
 * bytes; and each of the checksum's 32 hex digits alone replaced by a non-digit ('g', an
 * upper-case 'A') is refused. */
START_TEST(manifest_limits_and_every_checksum_digit)
{
    sr_err e = SR_ERR_INIT;
    static char name[SR_DELTA_NAME_MAX + 2], to[SR_DELTA_NAME_MAX + 32];
    for (int d = -1; d <= 1; d++) {
        size_t len = (size_t)(SR_DELTA_NAME_MAX + d);
        memset(name, 'n', len);
        name[len] = '\0';
        snprintf(to, sizeof to, "\"name\": \"%s\"", name);
        int rc = manifest_with("\"name\": \"a\"", to, &e);
        ck_assert_int_eq(rc, d > 0 ? SR_E_DELTA_MANIFEST : 0);
        if (rc)
            ck_assert_ptr_nonnull(strstr(e.msg, "'name' must hold 1..1024 bytes"));
        snprintf(to, sizeof to, "\"payload_key\": \"%s\"", name);
        rc = manifest_with("\"payload_key\": \"a\"", to, &e);
        ck_assert_int_eq(rc, d > 0 ? SR_E_DELTA_MANIFEST : 0);
        if (rc)
            ck_assert_ptr_nonnull(strstr(e.msg, "'payload_key' must hold 1..1024 bytes"));
        name[SR_DELTA_FILE_NAME_MAX + d] = '\0';
        ck_assert_int_eq(sr_delta_valid_file_name(name), d <= 0);
    }
    const char *sum = "000102030405060708090a0b0c0d0e0f";
    char bad[40];
    for (int i = 0; i < 32; i++)
        for (int k = 0; k < 2; k++) {
            snprintf(bad, sizeof bad, "%s", sum);
            bad[i] = k ? 'A' : 'g';
            ck_assert_msg(manifest_with(sum, bad, &e) == SR_E_DELTA_MANIFEST, "digit %d", i);
            ck_assert_ptr_nonnull(strstr(e.msg, "32 lowercase hex digits"));
        }
    /* The checksum one digit short. */
    ck_assert_int_eq(manifest_with(sum, "000102030405060708090a0b0c0d0e0", &e),
                     SR_E_DELTA_MANIFEST);
    /* A manifest of exactly the maximum (the template padded with spaces) parses; one byte more
     * is refused by size. */
    size_t k = strlen(k_manifest);
    char *big = malloc(SR_DELTA_MANIFEST_MAX + 1);
    ck_assert_ptr_nonnull(big);
    memcpy(big, k_manifest, k);
    memset(big + k, ' ', SR_DELTA_MANIFEST_MAX + 1 - k);
    sr_delta_manifest *m = NULL;
    ck_assert_sr_ok(sr_delta_manifest_parse(&m, big, SR_DELTA_MANIFEST_MAX, "m.json", &e), e);
    sr_delta_manifest_free(m);
    m = NULL;
    ck_assert_sr_code(sr_delta_manifest_parse(&m, big, SR_DELTA_MANIFEST_MAX + 1, "m.json", &e), e,
                      SR_E_DELTA_MANIFEST);
    ck_assert_ptr_nonnull(strstr(e.msg, "exceeds the maximum"));
    free(big);
}
END_TEST

START_TEST(garbage_manifest_files_fail_the_fetch)
{
    fixture f;
    fx_init(&f);
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = new_pub(&f);
    sr_delta_receiver *rx = new_rx(&f, 2);
    mutate(&f.trainer, 0, 50, 0);
    publish(p, &f, 1);
    char path[256];
    path_of(path, sizeof(path), &f, 1, "manifest.json");
    size_t len;
    char *good = slurp(path, &len);
    spit(path, good, len / 2);
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f.sync, 1, &e), e, SR_E_DELTA_MANIFEST);
    ck_assert_msg(strstr(e.msg, "manifest.json:") && strstr(e.msg, ": invalid JSON"), "%s", e.msg);
    spit(path, "{\"version\": 1}", 14);
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f.sync, 1, &e), e, SR_E_DELTA_MANIFEST);
    ck_assert_ptr_nonnull(strstr(e.msg, "manifest.json:1:1: missing required key"));
    assert_in_progress(rx, 0, 1);
    spit(path, good, len);
    fetch(rx, &f, 1);
    ck_assert(tset_equal(&f.local, &f.trainer));
    free(good);
    sr_delta_receiver_free(rx);
    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

/* ---- untrusted state files ---- */

static void bad_state(const char *text, const char *want)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_state s;
    ck_assert_sr_code(sr_delta_state_parse(&s, text, strlen(text), "state.json", &e), e,
                      SR_E_DELTA_STATE);
    ck_assert_msg(strstr(e.msg, want) != NULL, "'%s' not in '%s'", want, e.msg);
}

START_TEST(state_errors_are_named_and_located)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_state s;
    const char *ok = "{\"version\": 3, \"write_in_progress\": true, \"target_version\": 4}";
    ck_assert_sr_ok(sr_delta_state_parse(&s, ok, strlen(ok), "state.json", &e), e);
    ck_assert(s.version == 3 && s.write_in_progress == 1 && s.target_version == 4);
    char buf[256];
    ck_assert_uint_eq(sr_delta_state_render(buf, sizeof(buf), &s), strlen(buf));
    sr_delta_state back;
    ck_assert_sr_ok(sr_delta_state_parse(&back, buf, strlen(buf), "state.json", &e), e);
    ck_assert_mem_eq(&back, &s, sizeof(s));

    bad_state("{\"version\": 3, \"write_in_progress\": fals", "state.json:1:37: invalid JSON");
    bad_state("\x7f\x45LF", "state.json:1:1: invalid JSON");
    bad_state("{\"version\": -1, \"write_in_progress\": false, \"target_version\": 0}",
              "state.json:1:2: 'version' is -1, outside");
    bad_state("{\"version\": 1,\n \"write_in_progress\": 0, \"target_version\": 1}",
              "state.json:2:2: 'write_in_progress' must be true or false");
    bad_state("{\"version\": 1, \"write_in_progress\": false}", "missing required key");
    bad_state("{\"version\": 1, \"write_in_progress\": false, \"target_version\": 1, \"x\": 2}",
              "unknown key 'x'");
    bad_state("[1, 2]", "must be an object");
    bad_state("{\"version\": 1,\x0c \"write_in_progress\": true, \"target_version\": 1}",
              "state.json:1:15: a control character");
    char big[SR_DELTA_STATE_MAX + 2];
    memset(big, ' ', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    bad_state(big, "exceeds the maximum");
    /* The valid document padded with spaces to exactly SR_DELTA_STATE_MAX bytes parses, and to
     * one byte more is refused by size. */
    memcpy(big, ok, strlen(ok));
    ck_assert_sr_ok(sr_delta_state_parse(&s, big, SR_DELTA_STATE_MAX, "state.json", &e), e);
    ck_assert_int_eq(s.target_version, 4);
    ck_assert_sr_code(sr_delta_state_parse(&s, big, SR_DELTA_STATE_MAX + 1, "state.json", &e), e,
                      SR_E_DELTA_STATE);
    ck_assert_ptr_nonnull(strstr(e.msg, "exceeds the maximum"));
}
END_TEST

START_TEST(corrupt_state_file_is_reported_and_reset_recovers)
{
    fixture f;
    fx_init(&f);
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = new_pub(&f);
    sr_delta_receiver *rx = new_rx(&f, 2);
    mutate(&f.trainer, 2, 60, 0);
    publish(p, &f, 1);
    fetch(rx, &f, 1);
    char path[256];
    snprintf(path, sizeof(path), "%s/state.json", f.state);
    spit(path, "{\"version\": 1, \"write_in", 24);
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f.sync, 1, &e), e, SR_E_DELTA_STATE);
    ck_assert_msg(strstr(e.msg, "state.json:1:") != NULL, "%s", e.msg);
    ck_assert_sr_code(sr_delta_receiver_check_ready(rx, 1, &e), e, SR_E_DELTA_STATE);
    ck_assert_sr_ok(sr_delta_receiver_reset(rx, &e), e);
    ck_assert(tset_equal(&f.local, &f.base));
    sr_delta_state s = read_state(rx);
    ck_assert(s.version == 0 && !s.write_in_progress && s.target_version == 0);
    ck_assert_int_eq(fetch(rx, &f, 1).reset, 0);
    ck_assert(tset_equal(&f.local, &f.trainer));

    /* A second fetch while the lock is held elsewhere fails when its lock wait has passed. */
    char lock[256];
    snprintf(lock, sizeof(lock), "%s/lock", f.state);
    int fd = open(lock, O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f.sync, 1, &e), e, SR_E_DELTA_LOCKED);
    close(fd);
    fetch(rx, &f, 1);

    sr_delta_receiver_free(rx);
    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

/* ---- untrusted payloads ---- */

/* Writes version v by hand: one record for tensor ti whose blob is `blob`. */
static void hand_version(const fixture *f, int64_t v, int ti, const void *blob, size_t blob_len,
                         uint64_t hi, uint64_t lo)
{
    sr_err e = SR_ERR_INIT;
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/delta-%08lld", f->sync, (long long)v);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(dfd, 0);
    sr_buf b = SR_BUF_INIT;
    const char *key = f->trainer.t[ti].name;
    uint64_t l = blob_len;
    ck_assert_sr_ok(sr_delta_index_render(&b, &key, &l, 1, &e), e);
    ck_assert_sr_ok(sr_buf_append(&b, blob, blob_len, &e), e);
    ck_assert_sr_ok(sr_delta_write_file(dfd, dir, "payload-000000.srdp", b.data, b.len, 0, &e), e);
    sr_buf_reset(&b);
    sr_delta_out_record r = {&f->trainer.t[ti], blob_len, hi, lo, 0};
    ck_assert_sr_ok(sr_delta_manifest_render(&b, v, v - 1, &r, 1, 1, &e), e);
    ck_assert_sr_ok(sr_delta_write_file(dfd, dir, "manifest.json", b.data, b.len, 0, &e), e);
    sr_buf_release(&b);
    close(dfd);
}

static void expect_fetch_error(sr_delta_receiver *rx, const fixture *f, int64_t v, int code,
                               const char *want)
{
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f->sync, v, &e), e, code);
    ck_assert_msg(strstr(e.msg, want) != NULL, "'%s' not in '%s'", want, e.msg);
}

static void remove_version(const fixture *f, int64_t v)
{
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/delta-%08lld", f->sync, (long long)v);
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* zstd frames of the wrong content size, without one, with stray bytes or another checksum. */
START_TEST(payload_sizes_and_frames_are_checked)
{
    fixture f;
    fx_init(&f);
    sr_delta_receiver *rx = new_rx(&f, 2);
    const int ti = 1; /* layers.0.w1, 8192 bytes */
    size_t n = f.trainer.t[ti].nbytes;
    unsigned char *patch = calloc(n + 1, 1);
    patch[5] = 1;
    size_t cap = ZSTD_compressBound(n + 1) + 64;
    unsigned char *frame = malloc(cap);

    /* A frame announcing one byte fewer than the tensor holds. */
    size_t z = ZSTD_compress(frame, cap, patch, n - 1, 1);
    ck_assert(!ZSTD_isError(z));
    hand_version(&f, 1, ti, frame, z, 0, 0);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_PAYLOAD, "content size");
    remove_version(&f, 1);

    /* A frame without a content size. */
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    ZSTD_outBuffer out = {frame, cap, 0};
    ZSTD_inBuffer in = {patch, n, 0};
    ck_assert_uint_eq(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end), 0);
    ZSTD_freeCCtx(cc);
    hand_version(&f, 1, ti, frame, out.pos, 0, 0);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_PAYLOAD, "content size");
    remove_version(&f, 1);

    /* The right frame followed by stray bytes. */
    z = ZSTD_compress(frame, cap, patch, n, 1);
    frame[z] = 0x55;
    hand_version(&f, 1, ti, frame, z + 1, 0, 0);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_PAYLOAD, "stray bytes");
    remove_version(&f, 1);

    /* The right frame with a checksum of other bytes. */
    hand_version(&f, 1, ti, frame, z, 1, 2);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_CHECKSUM, "00000000000000010000000000000002");
    remove_version(&f, 1);

    /* The right frame and checksum: applies. */
    tset_copy(&f.trainer, &f.base);
    ((unsigned char *)f.trainer.t[ti].data)[5] ^= 1;
    XXH128_hash_t h = XXH3_128bits(f.trainer.t[ti].data, n);
    /* Every byte of the 128-bit digest counts: the right checksum with any one of its 16 bytes
     * changed (the manifest's hex digits 2b, 2b+1) fails. */
    for (int b = 0; b < 16; b++) {
        uint64_t hi = h.high64, lo = h.low64;
        if (b < 8)
            hi ^= 0x80ull << (8 * (7 - b));
        else
            lo ^= 0x01ull << (8 * (15 - b));
        hand_version(&f, 1, ti, frame, z, hi, lo);
        expect_fetch_error(rx, &f, 1, SR_E_DELTA_CHECKSUM, "checksum");
        remove_version(&f, 1);
    }
    hand_version(&f, 1, ti, frame, z, h.high64, h.low64);
    fetch(rx, &f, 1);
    ck_assert(tset_equal(&f.local, &f.trainer));
    free(patch);
    free(frame);
    sr_delta_receiver_free(rx);
    fx_free(&f);
}
END_TEST

/* Payload files that are missing, garbage, truncated, or disagree with the manifest. */
START_TEST(payload_files_are_checked)
{
    fixture f;
    fx_init(&f);
    sr_delta_receiver *rx = new_rx(&f, 2);
    sr_delta_publisher *p = new_pub(&f);
    tset_copy(&f.trainer, &f.base);
    mutate(&f.trainer, 3, 70, 0);
    publish(p, &f, 1);
    char path[256], mpath[256];
    path_of(path, sizeof(path), &f, 1, "payload-000000.srdp");
    path_of(mpath, sizeof(mpath), &f, 1, "manifest.json");
    size_t len;
    char *good = slurp(path, &len);
    spit(path, "hello", 5);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_PAYLOAD, "not a payload file");
    spit(path, good, 40);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_PAYLOAD, "payload-000000.srdp");
    spit(path, good, len - 1);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_PAYLOAD, "outside the data area");
    unlink(path);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_PAYLOAD, "cannot open");
    spit(path, good, len);
    char from[96], to[96];
    size_t blob = len - SR_DELTA_PAYLOAD_HEADER - SR_DELTA_PAYLOAD_ENTRY_FIXED - 14;
    snprintf(from, sizeof(from), "\"compressed_num_bytes\": %zu,", blob);
    snprintf(to, sizeof(to), "\"compressed_num_bytes\": %zu,", blob - 1);
    edit(mpath, from, to);
    snprintf(from, sizeof(from), "\"total_compressed_num_bytes\": %zu,", blob);
    snprintf(to, sizeof(to), "\"total_compressed_num_bytes\": %zu,", blob - 1);
    edit(mpath, from, to);
    expect_fetch_error(rx, &f, 1, SR_E_DELTA_PAYLOAD, "of another size");
    free(good);
    sr_delta_publisher_free(p);
    sr_delta_receiver_free(rx);
    fx_free(&f);
}
END_TEST

START_TEST(payload_index_is_validated)
{
    sr_err e = SR_ERR_INIT;
    sr_buf b = SR_BUF_INIT;
    const char *keys[2] = {"w", "v"};
    uint64_t lens[2] = {3, 4};
    ck_assert_sr_ok(sr_delta_index_render(&b, keys, lens, 2, &e), e);
    size_t ilen = b.len - SR_DELTA_PAYLOAD_HEADER;
    uint64_t fsize = b.len + 7, n, ib;
    const uint8_t *hdr = (const uint8_t *)b.data;
    ck_assert_sr_ok(sr_delta_index_header(&n, &ib, hdr, b.len, fsize, "p", &e), e);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(ib, ilen);
    sr_delta_index ix;
    ck_assert_sr_ok(
        sr_delta_index_parse(&ix, hdr + SR_DELTA_PAYLOAD_HEADER, ilen, 2, fsize, "p", &e), e);
    const sr_delta_blob *v = sr_delta_index_find(&ix, "v");
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(v->offset, b.len + 3);
    ck_assert_uint_eq(v->length, 4);
    ck_assert_ptr_null(sr_delta_index_find(&ix, "x"));
    sr_delta_index_free(&ix);

    /* The blobs must fit in the file; the count must fit the index. */
    ck_assert_sr_code(
        sr_delta_index_parse(&ix, hdr + SR_DELTA_PAYLOAD_HEADER, ilen, 2, fsize - 1, "p", &e), e,
        SR_E_DELTA_PAYLOAD);
    ck_assert_sr_code(
        sr_delta_index_parse(&ix, hdr + SR_DELTA_PAYLOAD_HEADER, ilen, 3, fsize, "p", &e), e,
        SR_E_DELTA_PAYLOAD);
    ck_assert_sr_code(sr_delta_index_header(&n, &ib, hdr, 10, fsize, "p", &e), e,
                      SR_E_DELTA_PAYLOAD);
    ck_assert_sr_code(sr_delta_index_header(&n, &ib, hdr, b.len, 30, "p", &e), e,
                      SR_E_DELTA_PAYLOAD);
    sr_buf_release(&b);

    /* Duplicate keys. */
    const char *dup[2] = {"k", "k"};
    ck_assert_sr_ok(sr_delta_index_render(&b, dup, lens, 2, &e), e);
    ilen = b.len - SR_DELTA_PAYLOAD_HEADER;
    ck_assert_sr_code(sr_delta_index_parse(&ix, (const uint8_t *)b.data + SR_DELTA_PAYLOAD_HEADER,
                                           ilen, 2, b.len + 7, "p", &e),
                      e, SR_E_DELTA_PAYLOAD);
    ck_assert_ptr_nonnull(strstr(e.msg, "appears twice"));
    sr_buf_release(&b);
}
END_TEST

/* ---- the writer lock ---- */

/* A lock file that cannot be created names the OS reason: sysfs refuses to create files, even
 * to root (EACCES; EROFS where it is mounted read-only), and the file is not there, so a retry
 * that only opens it would say ENOENT. A symbolic link in its place is still io.symlink. */
START_TEST(lock_open_failure_names_the_reason)
{
    char dir[] = "/tmp/syncroll-lock-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(dfd, 0);
    ck_assert_int_eq(symlinkat("/nonexistent-target", dfd, "link"), 0);
    sr_err e = SR_ERR_INIT;
    int fd = -1;
    ck_assert_sr_code(sr_delta_lock(&fd, dfd, "link", "d/link", 0, &e), e, SR_E_SYMLINK);
    ck_assert_int_eq(fd, -1);
    unlinkat(dfd, "link", 0);
    close(dfd);
    ck_assert_int_eq(rmdir(dir), 0);

    int sys = open("/sys/kernel", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_msg(sys >= 0, "/sys/kernel: %s", strerror(errno));
    sr_err e2 = SR_ERR_INIT;
    ck_assert_sr_code(sr_delta_lock(&fd, sys, "syncroll-lock", "sys/lock", 0, &e2), e2,
                      SR_E_DELTA_IO);
    close(sys);
    char acces[128], rofs[128];
    snprintf(acces, sizeof(acces), "sys/lock: cannot open: %s", strerror(EACCES));
    snprintf(rofs, sizeof(rofs), "sys/lock: cannot open: %s", strerror(EROFS));
    ck_assert_msg(strstr(e2.msg, acces) || strstr(e2.msg, rofs), "no OS reason: %s", e2.msg);
    ck_assert_int_eq(fd, -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("delta_input");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, manifest_errors_are_named_and_located);
    tcase_add_test(tc, manifest_limits_and_every_checksum_digit);
    tcase_add_test(tc, garbage_manifest_files_fail_the_fetch);
    tcase_add_test(tc, state_errors_are_named_and_located);
    tcase_add_test(tc, corrupt_state_file_is_reported_and_reset_recovers);
    tcase_add_test(tc, payload_sizes_and_frames_are_checked);
    tcase_add_test(tc, payload_files_are_checked);
    tcase_add_test(tc, payload_index_is_validated);
    tcase_add_test(tc, lock_open_failure_names_the_reason);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
