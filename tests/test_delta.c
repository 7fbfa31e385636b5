/* sr_delta: publish and apply of delta versions, recovery, worker counts, publisher errors. */
#include <xxhash.h>

#include "delta_fixture.h"
#include "sr_delta_priv.h"

/* ---- versions in a row ---- */

START_TEST(several_versions_in_a_row)
{
    fixture f;
    fx_init(&f);
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = new_pub(&f);
    sr_delta_receiver *rx = new_rx(&f, 4);

    mutate(&f.trainer, 0, 1, 0);
    mutate(&f.trainer, 3, 2, 0);
    sr_delta_publish_result pr = publish(p, &f, 2);
    ck_assert_int_eq(pr.version, 1);
    ck_assert_uint_eq(pr.records, 2);
    ck_assert_uint_eq(pr.unchanged, NT - 2);
    ck_assert_uint_eq(pr.payload_files, 1);
    ck_assert_int_eq(sr_delta_publisher_version(p), 1);

    /* The manifest lists only the changed tensors, in base order, with the new bytes' hash. */
    char path[256];
    path_of(path, sizeof(path), &f, 1, "manifest.json");
    size_t len;
    char *text = slurp(path, &len);
    sr_delta_manifest *m = NULL;
    ck_assert_sr_ok(sr_delta_manifest_parse(&m, text, len, path, &e), e);
    ck_assert_int_eq(m->version, 1);
    ck_assert_int_eq(m->base_version, 0);
    ck_assert_uint_eq(m->n_tensors, 2);
    ck_assert_str_eq(m->tensors[0].name, "embed.weight");
    ck_assert_str_eq(m->tensors[1].name, "lm_head.weight");
    ck_assert_str_eq(m->tensors[1].payload_key, "lm_head.weight");
    ck_assert_str_eq(m->tensors[1].dtype, "float32");
    ck_assert_int_eq(m->tensors[1].shape[0], 512);
    XXH128_hash_t h = XXH3_128bits(f.trainer.t[3].data, f.trainer.t[3].nbytes);
    ck_assert(m->tensors[1].checksum_hi == h.high64 && m->tensors[1].checksum_lo == h.low64);
    ck_assert_uint_eq(m->total_uncompressed_num_bytes,
                      f.trainer.t[0].nbytes + f.trainer.t[3].nbytes);
    ck_assert_uint_eq(m->total_compressed_num_bytes, pr.compressed_bytes);
    ck_assert_uint_eq(m->n_payload_files, 1);
    ck_assert_str_eq(m->payload_files[0], "payload-000000.srdp");
    sr_delta_manifest_free(m);
    free(text);

    /* First fetch: no state yet, so the receiver starts from the base. */
    sr_delta_fetch_result fr = fetch(rx, &f, 1);
    ck_assert_int_eq(fr.reset, 1);
    ck_assert_int_eq(fr.version, 1);
    ck_assert_uint_eq(fr.applied, 2);
    ck_assert(tset_equal(&f.local, &f.trainer));
    sr_delta_state s = read_state(rx);
    ck_assert(s.version == 1 && !s.write_in_progress && s.target_version == 1);

    mutate(&f.trainer, 1, 3, 0);
    mutate(&f.trainer, 4, 4, 1);
    ck_assert_uint_eq(publish(p, &f, 1).records, 2);
    mutate(&f.trainer, 3, 5, 1);
    ck_assert_uint_eq(publish(p, &f, 2).records, 1);
    fr = fetch(rx, &f, 3);
    ck_assert_int_eq(fr.reset, 0);
    ck_assert_int_eq(fr.from_version, 1);
    ck_assert_int_eq(fr.versions_applied, 2);
    ck_assert_uint_eq(fr.applied, 3);
    ck_assert(tset_equal(&f.local, &f.trainer));
    ck_assert_sr_ok(sr_delta_receiver_check_ready(rx, 3, &e), e);
    ck_assert_sr_code(sr_delta_receiver_check_ready(rx, 2, &e), e, SR_E_DELTA_VERSION);

    /* Same version again: nothing to do. Behind the receiver: an error. */
    fr = fetch(rx, &f, 3);
    ck_assert_int_eq(fr.versions_applied, 0);
    ck_assert_sr_code(sr_delta_fetch(&fr, rx, f.sync, 2, &e), e, SR_E_DELTA_VERSION);
    ck_assert_sr_ok(sr_delta_receiver_check_ready(rx, 3, &e), e);

    sr_delta_receiver_free(rx);
    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

START_TEST(zero_payload_versions_apply_nothing)
{
    fixture f;
    fx_init(&f);
    sr_delta_publisher *p = new_pub(&f);
    sr_delta_receiver *rx = new_rx(&f, 32);

    /* Nothing changed: a manifest with no records and no payload file. */
    sr_delta_publish_result pr = publish(p, &f, 2);
    ck_assert_uint_eq(pr.records, 0);
    ck_assert_uint_eq(pr.unchanged, NT);
    ck_assert_uint_eq(pr.payload_files, 0);
    ck_assert_int_eq(pr.workers, 0); /* nothing to diff: no team */
    sr_delta_fetch_result fr = fetch(rx, &f, 1);
    ck_assert_int_eq(fr.version, 1);
    ck_assert_uint_eq(fr.last_payloads, 0);
    ck_assert_int_eq(fr.last_workers, 0);
    ck_assert_int_eq(fr.last_threads, 0);

    /* Records exist, but none names a local tensor (the reference's zero-worker pool edge). */
    mutate(&f.trainer, 0, 11, 0);
    publish(p, &f, 1);
    sr_err e = SR_ERR_INIT;
    char state2[128];
    snprintf(state2, sizeof(state2), "%s/state2", f.root);
    sr_delta_receiver *rx2 = NULL;
    sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
    o.max_workers = 32;
    o.fsync = 0;
    ck_assert_sr_ok(sr_delta_receiver_new(&rx2, state2, &f.local.t[5], 1, &f.base.t[5], 1, &o, &e),
                    e);
    fr = fetch(rx2, &f, 2);
    ck_assert_int_eq(fr.version, 2);
    ck_assert_uint_eq(fr.skipped, 1);
    ck_assert_uint_eq(fr.last_payloads, 0);
    ck_assert_int_eq(fr.last_workers, 0);
    ck_assert_int_eq(fr.last_threads, 0);

    sr_delta_receiver_free(rx2);
    sr_delta_receiver_free(rx);
    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

static int fake_affinity(void *ctx, int64_t *count)
{
    *count = *(const int64_t *)ctx;
    return 0;
}

START_TEST(worker_counts_are_observable)
{
    fixture f;
    fx_init(&f);
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = new_pub(&f);
    for (int i = 0; i < 3; i++)
        mutate(&f.trainer, i, 20 + (uint64_t)i, 0);
    sr_delta_publish_result pr = publish(p, &f, 2);
    ck_assert_uint_eq(pr.records, 3);
    ck_assert_int_eq(pr.workers, 2);

    /* Apply uses min(#payloads, max_workers). */
    sr_delta_receiver *rx = new_rx(&f, 32);
    sr_delta_fetch_result fr = fetch(rx, &f, 1);
    ck_assert_uint_eq(fr.last_payloads, 3);
    ck_assert_int_eq(fr.last_workers, 3);
    ck_assert(fr.last_threads >= 1 && fr.last_threads <= 3);
    sr_delta_receiver_free(rx);

    /* A fresh state dir: ceiling 2 gives 2; ceiling 1 runs on the calling thread. */
    for (int cap = 1; cap <= 2; cap++) {
        char st[128];
        snprintf(st, sizeof(st), "%s/state-cap%d", f.root, cap);
        sr_delta_receiver *r2 = NULL;
        sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
        o.max_workers = cap;
        o.fsync = 0;
        ck_assert_sr_ok(sr_delta_receiver_new(&r2, st, f.local.t, NT, f.base.t, NT, &o, &e), e);
        fr = fetch(r2, &f, 1);
        ck_assert_int_eq(fr.last_workers, cap);
        ck_assert_int_eq(fr.last_threads, cap);
        sr_delta_receiver_free(r2);
    }

    /* The default sizes follow pool_workers: cap 8 to publish, cap 32 to apply, reserve 0. */
    char empty_cgroup[128];
    snprintf(empty_cgroup, sizeof(empty_cgroup), "%s/cgroup", f.root);
    ck_assert_int_eq(mkdir(empty_cgroup, 0755), 0);
    sr_cpu_topology topo = SR_CPU_TOPOLOGY_INIT;
    topo.cgroup_root = empty_cgroup;
    topo.affinity = fake_affinity;
    static const int64_t cpus[3] = {1, 12, 64}, want_pub[3] = {1, 8, 8},
                         want_apply[3] = {1, 12, 32};
    for (int i = 0; i < 3; i++) {
        int64_t n = cpus[i];
        topo.affinity_ctx = &n;
        int w = 0, a = 0;
        ck_assert_sr_ok(sr_delta_publish_workers(&w, &topo, &e), e);
        ck_assert_sr_ok(sr_delta_apply_workers(&a, &topo, &e), e);
        ck_assert_int_eq(w, want_pub[i]);
        ck_assert_int_eq(a, want_apply[i]);
    }

    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

/* ---- failures leave the state in progress; the next fetch resets and recovers ---- */

static void flip_byte(const char *path, long from_end)
{
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    off_t size = lseek(fd, 0, SEEK_END);
    unsigned char c;
    ck_assert_int_eq(pread(fd, &c, 1, size - from_end), 1);
    c ^= 0x40;
    ck_assert_int_eq(pwrite(fd, &c, 1, size - from_end), 1);
    close(fd);
}

START_TEST(corrupted_payload_is_a_checksum_error_and_recovers)
{
    fixture f;
    fx_init(&f);
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = new_pub(&f);
    sr_delta_receiver *rx = new_rx(&f, 2);
    mutate(&f.trainer, 1, 30, 0);
    publish(p, &f, 1);
    fetch(rx, &f, 1);

    /* v2 changes one tensor completely: incompressible bytes travel as a raw zstd block, so a
     * flipped byte near the end of the file still decodes, into wrong bytes. */
    mutate(&f.trainer, 3, 31, 1);
    publish(p, &f, 1);
    char path[256];
    path_of(path, sizeof(path), &f, 2, "payload-000000.srdp");
    flip_byte(path, 5);
    sr_delta_fetch_result fr;
    ck_assert_sr_code(sr_delta_fetch(&fr, rx, f.sync, 2, &e), e, SR_E_DELTA_CHECKSUM);
    ck_assert_ptr_nonnull(strstr(e.msg, "lm_head.weight"));
    ck_assert_int_eq(fr.version, 1);
    assert_in_progress(rx, 1, 2);
    ck_assert_sr_code(sr_delta_receiver_check_ready(rx, 1, &e), e, SR_E_DELTA_VERSION);

    /* Still corrupt: the retry resets from the base, replays v1 and fails again on v2. */
    ck_assert_sr_code(sr_delta_fetch(&fr, rx, f.sync, 2, &e), e, SR_E_DELTA_CHECKSUM);
    ck_assert_int_eq(fr.reset, 1);
    ck_assert_int_eq(fr.version, 1);

    /* Repaired payload: the next fetch resets from the base and reaches v2. */
    flip_byte(path, 5);
    fr = fetch(rx, &f, 2);
    ck_assert_int_eq(fr.reset, 1);
    ck_assert_int_eq(fr.from_version, 0);
    ck_assert_int_eq(fr.versions_applied, 2);
    ck_assert(tset_equal(&f.local, &f.trainer));
    ck_assert_sr_ok(sr_delta_receiver_check_ready(rx, 2, &e), e);

    /* Local bytes that drifted from version 2 also fail the checksum of v3. */
    mutate(&f.trainer, 2, 32, 0);
    publish(p, &f, 2);
    ((unsigned char *)f.local.t[2].data)[17] ^= 1;
    ck_assert_sr_code(sr_delta_fetch(&fr, rx, f.sync, 3, &e), e, SR_E_DELTA_CHECKSUM);
    assert_in_progress(rx, 2, 3);
    fr = fetch(rx, &f, 3);
    ck_assert_int_eq(fr.reset, 1);
    ck_assert(tset_equal(&f.local, &f.trainer));

    sr_delta_receiver_free(rx);
    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

START_TEST(version_and_base_version_mismatch)
{
    fixture f;
    fx_init(&f);
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = new_pub(&f);
    sr_delta_receiver *rx = new_rx(&f, 2);
    for (int v = 1; v <= 2; v++) {
        mutate(&f.trainer, v, 40 + (uint64_t)v, 0);
        publish(p, &f, 2);
    }
    fetch(rx, &f, 1);
    char path[256];
    path_of(path, sizeof(path), &f, 2, "manifest.json");
    edit(path, "\"base_version\": 1", "\"base_version\": 0");
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f.sync, 2, &e), e, SR_E_DELTA_VERSION);
    ck_assert_ptr_nonnull(strstr(e.msg, "base_version 0"));
    assert_in_progress(rx, 1, 2);
    edit(path, "\"base_version\": 0", "\"base_version\": 1");
    ck_assert_int_eq(fetch(rx, &f, 2).reset, 1);
    ck_assert(tset_equal(&f.local, &f.trainer));

    /* A folder whose manifest claims another version. */
    char dir3[256], m3[256];
    snprintf(dir3, sizeof(dir3), "%s/delta-00000003", f.sync);
    ck_assert_int_eq(mkdir(dir3, 0755), 0);
    path_of(m3, sizeof(m3), &f, 3, "manifest.json");
    size_t len;
    char *text = slurp(path, &len);
    spit(m3, text, len);
    free(text);
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f.sync, 3, &e), e, SR_E_DELTA_VERSION);
    /* A version that was never published. */
    ck_assert_int_eq(unlink(m3), 0);
    ck_assert_sr_ok(sr_delta_receiver_reset(rx, &e), e);
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f.sync, 9, &e), e, SR_E_DELTA_MANIFEST);
    ck_assert_ptr_nonnull(strstr(e.msg, "delta-00000003"));
    ck_assert_sr_code(sr_delta_fetch(NULL, rx, f.sync, 0, &e), e, SR_E_INVAL);

    sr_delta_receiver_free(rx);
    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

/* ---- publisher ---- */

START_TEST(publisher_rejects_bad_input_and_keeps_its_version)
{
    fixture f;
    fx_init(&f);
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = new_pub(&f);
    sr_delta_tensor t[2] = {f.trainer.t[1], f.trainer.t[2]};
    t[0].shape[0] = 64;
    t[0].nbytes /= 2;
    ck_assert_sr_code(sr_delta_publish(NULL, p, t, 2, 1, &e), e, SR_E_DELTA_TENSOR);
    t[0] = f.trainer.t[1];
    t[0].dtype = "int32";
    ck_assert_sr_code(sr_delta_publish(NULL, p, t, 2, 1, &e), e, SR_E_DELTA_TENSOR);
    t[0] = f.trainer.t[2];
    ck_assert_sr_code(sr_delta_publish(NULL, p, t, 2, 1, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_delta_publish(NULL, p, f.trainer.t, NT, 0, &e), e, SR_E_INVAL);
    ck_assert_int_eq(sr_delta_publisher_version(p), 0);

    /* Unknown tensors are skipped; a subset is fine. */
    t[0] = f.trainer.t[1];
    t[0].name = "not.in.base";
    mutate(&f.trainer, 2, 80, 0);
    t[1] = f.trainer.t[2];
    sr_delta_publish_result r;
    ck_assert_sr_ok(sr_delta_publish(&r, p, t, 2, 2, &e), e);
    ck_assert_uint_eq(r.skipped, 1);
    ck_assert_uint_eq(r.records, 1);
    ck_assert_int_eq(r.workers, 1);

    /* A second publisher on the same folder must not overwrite version 1. */
    sr_delta_publisher *p2 = new_pub(&f);
    ck_assert_sr_code(sr_delta_publish(NULL, p2, f.trainer.t, NT, 1, &e), e, SR_E_DELTA_VERSION);
    ck_assert_int_eq(sr_delta_publisher_version(p2), 0);
    sr_delta_publisher_free(p2);

    /* Construction errors. */
    sr_delta_tensor bad = f.base.t[0];
    bad.dtype = "complex64";
    ck_assert_sr_code(sr_delta_publisher_new(&p2, f.sync, &bad, 1, NULL, &e), e, SR_E_INVAL);
    bad = f.base.t[0];
    bad.nbytes++;
    ck_assert_sr_code(sr_delta_publisher_new(&p2, f.sync, &bad, 1, NULL, &e), e, SR_E_INVAL);
    ck_assert_sr_code(sr_delta_publisher_new(&p2, "/nonexistent/sync", f.base.t, NT, NULL, &e), e,
                      SR_E_DELTA_IO);
    sr_delta_receiver *rx = NULL;
    sr_delta_tensor other[NT];
    memcpy(other, f.base.t, sizeof(other));
    other[2].dtype = "float16";
    ck_assert_sr_code(sr_delta_receiver_new(&rx, f.state, f.local.t, NT, other, NT, NULL, &e), e,
                      SR_E_DELTA_TENSOR);
    other[2] = f.base.t[0];
    ck_assert_sr_code(sr_delta_receiver_new(&rx, f.state, other, NT, f.base.t, NT, NULL, &e), e,
                      SR_E_INVAL);

    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

typedef struct reset_ctx {
    const fixture *f;
    int calls;
} reset_ctx;

static int reset_from_base(void *ctx, sr_err *err)
{
    reset_ctx *c = ctx;
    c->calls++;
    tset *local = (tset *)&c->f->local;
    tset_copy(local, &c->f->base);
    return 0;
}

START_TEST(many_payload_files_and_a_reset_callback)
{
    fixture f;
    fx_init(&f);
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = NULL;
    sr_delta_publish_opts po = SR_DELTA_PUBLISH_OPTS_INIT;
    po.max_file_bytes = 1;
    po.fsync = 1; /* once, so the fsync path runs in the tests too */
    ck_assert_sr_ok(sr_delta_publisher_new(&p, f.sync, f.base.t, NT, &po, &e), e);
    for (int i = 0; i < 4; i++)
        mutate(&f.trainer, i, 90 + (uint64_t)i, i == 3);
    sr_delta_publish_result r;
    ck_assert_sr_ok(sr_delta_publish(&r, p, f.trainer.t, NT, 2, &e), e);
    ck_assert_uint_eq(r.records, 4);
    ck_assert_uint_eq(r.payload_files, 4);

    reset_ctx rc = {&f, 0};
    sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
    o.max_workers = 2;
    o.reset = reset_from_base;
    o.reset_ctx = &rc;
    sr_delta_receiver *rx = NULL;
    ck_assert_sr_ok(sr_delta_receiver_new(&rx, f.state, f.local.t, NT, NULL, 0, &o, &e), e);
    sr_delta_fetch_result fr = fetch(rx, &f, 1);
    ck_assert_int_eq(rc.calls, 1);
    ck_assert_int_eq(fr.last_workers, 2);
    ck_assert(tset_equal(&f.local, &f.trainer));

    sr_delta_receiver_free(rx);
    sr_delta_publisher_free(p);
    fx_free(&f);
}
END_TEST

/* A payload header (magic, n, index_bytes, little-endian). */
static void payload_header(uint8_t *h, uint64_t n, uint64_t index_bytes)
{
    memcpy(h, SR_DELTA_PAYLOAD_MAGIC, 8);
    for (int i = 0; i < 8; i++) {
        h[8 + i] = (uint8_t)(n >> (8 * i));
        h[16 + i] = (uint8_t)(index_bytes >> (8 * i));
    }
}

/* A payload header's limits at, before and past: n up to SR_DELTA_MAX_TENSORS, index_bytes up
 * to the file's bytes after the header and up to the largest index of that many blobs; every
 * refusal is delta.payload (docs/internals/testing.md, boundary checklist). */
START_TEST(payload_header_limits_at_before_and_past)
{
    const uint64_t big =
        (uint64_t)SR_DELTA_MAX_TENSORS * (SR_DELTA_PAYLOAD_ENTRY_FIXED + SR_DELTA_NAME_MAX);
    const uint64_t huge = (uint64_t)1 << 50;
    const struct {
        uint64_t n, ib, fsize;
        int ok;
    } cs[] = {
        {SR_DELTA_MAX_TENSORS - 1, 100, 1000, 1},
        {SR_DELTA_MAX_TENSORS, 100, 1000, 1},
        {SR_DELTA_MAX_TENSORS + 1, 100, 1000, 0},
        {2, 1000 - SR_DELTA_PAYLOAD_HEADER - 1, 1000, 1},
        {2, 1000 - SR_DELTA_PAYLOAD_HEADER, 1000, 1},
        {2, 1000 - SR_DELTA_PAYLOAD_HEADER + 1, 1000, 0},
        {2, 0, SR_DELTA_PAYLOAD_HEADER, 1},
        {2, 0, SR_DELTA_PAYLOAD_HEADER - 1, 0},
        {2, big - 1, huge, 1}, /* the index's own cap, in a file large enough */
        {2, big, huge, 1},
        {2, big + 1, huge, 0},
    };
    uint8_t h[SR_DELTA_PAYLOAD_HEADER];
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        payload_header(h, cs[i].n, cs[i].ib);
        uint64_t gn = 0, gib = 0;
        sr_err e = SR_ERR_INIT;
        int rc = sr_delta_index_header(&gn, &gib, h, sizeof h, cs[i].fsize, "p", &e);
        if (cs[i].ok) {
            ck_assert_msg(rc == 0, "n %llu, index %llu, file %llu: %s", (unsigned long long)cs[i].n,
                          (unsigned long long)cs[i].ib, (unsigned long long)cs[i].fsize, e.msg);
            ck_assert_uint_eq(gn, cs[i].n);
            ck_assert_uint_eq(gib, cs[i].ib);
        } else {
            ck_assert_sr_code(rc, e, SR_E_DELTA_PAYLOAD);
        }
    }
    /* One header byte short is refused. */
    payload_header(h, 2, 0);
    sr_err e = SR_ERR_INIT;
    uint64_t gn, gib;
    ck_assert_sr_code(sr_delta_index_header(&gn, &gib, h, sizeof h - 1, 1000, "p", &e), e,
                      SR_E_DELTA_PAYLOAD);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("delta");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, several_versions_in_a_row);
    tcase_add_test(tc, zero_payload_versions_apply_nothing);
    tcase_add_test(tc, worker_counts_are_observable);
    tcase_add_test(tc, corrupted_payload_is_a_checksum_error_and_recovers);
    tcase_add_test(tc, version_and_base_version_mismatch);
    tcase_add_test(tc, publisher_rejects_bad_input_and_keeps_its_version);
    tcase_add_test(tc, many_payload_files_and_a_reset_callback);
    tcase_add_test(tc, payload_header_limits_at_before_and_past);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
