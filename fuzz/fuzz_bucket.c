/*
 * libFuzzer target for the mock engine's weight buckets (harness/engine/bucket.c): the body of
 * Content-Type application/x-syncroll-bucket (a JSON header line, '\n', the tensors' bytes) that
 * skyrl's collective_rpc update_weights_nccl, vLLM's POST /update_weights and SGLang's POST
 * /update_weights_from_distributed carry, driven through the entry points the HTTP layer calls
 * (engine.h: sr_engine_bucket_begin, then _feed for every piece, then _end or _abort) on a real
 * engine of each control plane (64 MoE layers, 1602 tensors of 256 B to 64 KiB), set up once per
 * process and made again after an update it committed, so every input meets an engine at version
 * 0 with its initial bytes. skyrl and vllm get a start before the bucket and a finish after it;
 * sglang's bucket is a whole update.
 *
 * Input: byte 0 picks the plane (% 3) and the size of the pieces the body is fed in (the header
 * line split anywhere, as libmicrohttpd hands a body over); byte 1 the weights fault of the
 * request (none, checksum_mismatch, update_ok_no_transfer, bucket_order_mismatch) and how the
 * request ends (the body complete; the connection closing after it; the same body sent twice);
 * the rest is the body. Seeds: fuzz/corpus/fuzz_bucket/ (buckets the trainer's
 * harness/sync/bcast.c wrote, behind their two bytes, and broken ones).
 *
 * Invariants. A refused bucket carries a named code and a message, which on the vllm and sglang
 * planes does not name skyrl's update_weights_nccl; the engine's version and every tensor's
 * digest stay as they were, and (skyrl, vllm) the finish refuses the spoiled update and commits
 * nothing. An accepted bucket had a header line whose tensors need exactly the bytes after it;
 * once committed the engine reports the header's syncroll.target_version, and without a fault
 * every tensor it names holds bytes whose xxh3-128 is the checksum sent (the tensors it does not
 * name keep theirs); with checksum_mismatch only a bucket of no tensors is accepted, with
 * update_ok_no_transfer no tensor changes. The same bucket sent twice in one update is refused
 * the second time when it carries a tensor (sglang: a whole update sent again is accepted
 * again). Afterwards no bucket stream is open and the plane's table is idle.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <xxhash.h>

#include "engine/engine.h"
#include "engine/engine_state.h"
#include "fuzz_check.h"
#include "sr_err.h"
#include "sr_weights.h"

enum { SKYRL, VLLM, SGLANG, PLANES };

static const char *const CFG[PLANES] = {
    "{\"sync_dialect\":\"skyrl\",\"seed\":3,\"model\":{\"layers\":64}}",
    "{\"sync_dialect\":\"vllm\",\"seed\":3,\"model\":{\"layers\":64}}",
    "{\"sync_dialect\":\"sglang\",\"seed\":3,\"model\":{\"layers\":64}}"};
/* The call each plane's bucket arrives on, named as the HTTP layer names it (server.c). */
static const char *const CALL[PLANES] = {"update_weights_nccl", "POST /update_weights",
                                         "POST /update_weights_from_distributed"};
static const size_t PIECE[8] = {0, 1, 2, 3, 7, 64, 511, 4096}; /* 0: the body at once */

typedef struct plane {
    sr_engine *e;
    int dirty;         /* an update was committed: make the engine again before the next input */
    uint64_t *hi, *lo; /* the model's digests as the engine was made */
} plane;

static plane P[PLANES];

/* The model's digests of a new engine: every input meets these. */
static void snapshot(plane *x)
{
    for (size_t i = 0; i < sr_weights_count(x->e->weights); i++) {
        sr_weights_info t;
        CHECK(sr_weights_tensor(&t, x->e->weights, i, NULL) == 0);
        x->hi[i] = t.digest_hi;
        x->lo[i] = t.digest_lo;
    }
}

static sr_engine *engine_of(int p)
{
    plane *x = &P[p];
    if (x->e && !x->dirty)
        return x->e;
    sr_engine_free(x->e);
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    CHECK(sr_engine_config_parse(&c, CFG[p], strlen(CFG[p]), "fuzz", 0, &err) == 0);
    CHECK(sr_engine_new(&x->e, &c, &err) == 0);
    sr_engine_config_release(&c);
    /* vllm needs its transfer engine, sglang its group, before an update. */
    if (p != SKYRL)
        CHECK(sr_engine_sync_call(x->e, SR_SC_INIT, NULL, &err) == 0);
    size_t n = sr_weights_count(x->e->weights);
    if (!x->hi) {
        x->hi = calloc(n, sizeof(uint64_t));
        x->lo = calloc(n, sizeof(uint64_t));
        CHECK(x->hi && x->lo);
    }
    snapshot(x);
    x->dirty = 0;
    return x->e;
}

/* Tensor i's digest is the one the engine was made with. */
static int unchanged(const plane *x, size_t i)
{
    sr_weights_info t;
    CHECK(sr_weights_tensor(&t, x->e->weights, i, NULL) == 0);
    return t.digest_hi == x->hi[i] && t.digest_lo == x->lo[i];
}

static void check_untouched(const plane *x)
{
    CHECK(sr_engine_version(x->e) == 0);
    for (size_t i = 0; i < sr_weights_count(x->e->weights); i++)
        CHECK(unchanged(x, i));
}

static void check_refused(int p, int rc, const sr_err *err)
{
    CHECK(rc == err->code && sr_code_name(rc) && err->msg[0]);
    if (p != SKYRL)
        CHECK(strncmp(err->msg, "update_weights_nccl", 19) != 0);
}

#define CLOSED 1 /* the connection closed before the end (no sr_code is positive) */

/* One bucket request: begin, the body in pieces, then end (or abort: CLOSED). */
static int send_bucket(sr_engine *e, int p, const char *body, size_t len, size_t piece,
                       const sr_fault *f, int close_early, sr_err *err)
{
    sr_bucket_rx *b;
    CHECK(sr_engine_bucket_begin(&b, e, CALL[p], err) == 0);
    for (size_t at = 0; at < len;) {
        size_t n = piece && len - at > piece ? piece : len - at;
        sr_engine_bucket_feed(b, body + at, n);
        at += n;
    }
    if (close_early) {
        sr_engine_bucket_abort(b);
        return CLOSED;
    }
    return sr_engine_bucket_end(b, f, err);
}

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static uint64_t hex64(const char *s)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++)
        v = v << 4 | (uint64_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
    return v;
}

/* An accepted bucket, read again from its body: the header's layout, the bytes its tensors need,
 * then (committed) the version and the bytes of every tensor. */
static void check_accepted(const plane *x, int p, const char *body, size_t len, int fault,
                           int committed)
{
    const char *nl = memchr(body, '\n', len);
    CHECK(nl);
    cJSON *h = cJSON_ParseWithLength(body, (size_t)(nl - body));
    const cJSON *ui = p == SGLANG        ? h
                      : get(h, "method") ? get(get(h, "kwargs"), "update_info")
                                         : get(h, "update_info");
    const cJSON *sy = get(ui, "syncroll"), *names = get(ui, "names");
    const cJSON *sums = get(sy, "checksums"), *tv = get(sy, "target_version");
    CHECK(cJSON_IsArray(names) && cJSON_IsArray(sums) && cJSON_IsNumber(tv));
    CHECK(fault != SR_FK_CHECKSUM_MISMATCH || !names->child);
    size_t n = sr_weights_count(x->e->weights), need = 0;
    unsigned char *named = calloc(n ? n : 1, 1);
    CHECK(named);
    const cJSON *a = names->child, *s = sums->child;
    for (; a; a = a->next, s = s->next) {
        size_t k;
        sr_weights_info t;
        CHECK(s && cJSON_IsString(a) && cJSON_IsString(s) && strlen(s->valuestring) == 32);
        CHECK(sr_weights_find(&k, x->e->weights, a->valuestring, NULL) == 0 && !named[k]);
        CHECK(sr_weights_tensor(&t, x->e->weights, k, NULL) == 0);
        named[k] = 1;
        need += t.nbytes;
        if (!committed)
            continue;
        /* The model's digest is that of the bytes it holds, ... */
        XXH128_hash_t d = XXH3_128bits(t.data, t.nbytes);
        CHECK(t.digest_hi == d.high64 && t.digest_lo == d.low64);
        /* ... which are the ones sent (a bucket of mixed dtypes unpacked by dtype gets others) */
        if (fault == SR_FK_UPDATE_OK_NO_TRANSFER)
            CHECK(unchanged(x, k));
        else if (fault != SR_FK_BUCKET_ORDER_MISMATCH)
            CHECK(d.high64 == hex64(s->valuestring) && d.low64 == hex64(s->valuestring + 16));
    }
    CHECK(need == len - (size_t)(nl - body) - 1);
    if (committed) {
        CHECK(sr_engine_version(x->e) == (int64_t)tv->valuedouble);
        for (size_t i = 0; i < n; i++)
            CHECK(named[i] || unchanged(x, i));
    }
    free(named);
    cJSON_Delete(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const sr_fault_kind FAULTS[4] = {SR_FK_COUNT /* none */, SR_FK_CHECKSUM_MISMATCH,
                                            SR_FK_UPDATE_OK_NO_TRANSFER,
                                            SR_FK_BUCKET_ORDER_MISMATCH};
    if (size < 2)
        return 0;
    int p = data[0] % PLANES, ends = data[1] / 4 % 3;
    size_t piece = PIECE[data[0] / PLANES % 8];
    sr_fault f;
    memset(&f, 0, sizeof(f));
    f.kind = FAULTS[data[1] % 4];
    const sr_fault *fp = data[1] % 4 ? &f : NULL;
    int fault = fp ? (int)f.kind : -1;
    const char *body = (const char *)data + 2;
    size_t len = size - 2;
    sr_engine *e = engine_of(p);
    plane *x = &P[p];
    sr_err err = SR_ERR_INIT, ferr = SR_ERR_INIT;
    int whole = p == SGLANG;
    if (!whole)
        CHECK(sr_engine_sync_start(e, &err) == 0);
    int rc = send_bucket(e, p, body, len, piece, fp, ends == 1, &err);
    if (rc && rc != CLOSED)
        check_refused(p, rc, &err);
    if (rc)
        check_untouched(x);
    else
        check_accepted(x, p, body, len, fault, whole);
    int rc2 = 0; /* the second sending's outcome */
    if (ends == 2 && !rc) {
        sr_err err2 = SR_ERR_INIT;
        int carried = !whole && memchr(e->bc.received, 1, sr_weights_count(e->weights)) != NULL;
        rc2 = send_bucket(e, p, body, len, piece, fp, 0, &err2);
        if (whole)
            CHECK(rc2 == 0);
        else if (carried)
            CHECK(rc2 != 0);
        if (rc2)
            check_refused(p, rc2, &err2);
    }
    if (!whole) {
        int64_t v = -1;
        int frc = sr_engine_sync_finish(e, -1, NULL, &v, &ferr);
        CHECK(v == sr_engine_version(e));
        if (rc || rc2) {
            CHECK(frc != 0 && frc == ferr.code && sr_code_name(frc));
            check_untouched(x);
        } else {
            CHECK(frc == 0);
            check_accepted(x, p, body, len, fault, 1);
        }
    } else if (!rc) {
        check_accepted(x, p, body, len, fault, 1);
    }
    CHECK(e->bc.streams == 0 && e->sync_state == SR_SS_IDLE);
    x->dirty = rc == 0; /* a commit (sglang) or the finish's may have changed the model */
    return 0;
}
