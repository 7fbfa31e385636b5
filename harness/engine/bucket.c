/* Broadcast over HTTP on the engine side: buckets with their bytes (skyrl's update_weights_nccl,
 * vllm's POST /update_weights, sglang's POST /update_weights_from_distributed), and the finish that
 * commits them (engine.h, "Broadcast buckets"). Every message about a bucket names the call it
 * arrived on, as the HTTP layer named it at sr_engine_bucket_begin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "bucket_priv.h"
#include "engine.h"
#include "engine_state.h"
#include "sr_pool.h"

/* ---- streaming ---- */

struct sr_bucket_rx {
    sr_engine *e;
    sr_buf head;    /* the header line while it arrives */
    int in_payload; /* the header was parsed and the tensors claimed */
    bucket_plan bp;
    size_t item;     /* tensor being received */
    size_t item_off; /* bytes of it received */
    uint64_t extra;  /* bytes beyond the last tensor */
    XXH3_state_t *h;
    XXH128_hash_t *got; /* digest of each tensor as received */
    int corrupt;        /* a checksum_mismatch fault fired on start */
    int claimed;        /* the tensors were claimed in the update */
    uint64_t gen;       /* the generation of the update it was claimed in */
    int rc;             /* the first error; the rest of the body is drained */
    sr_err err;
    char call[64]; /* the call the bucket arrived on, for messages */
    int heading;   /* counted in bc.heading (begun in an active update, header not yet parsed) */
    uint64_t head_gen; /* the generation of the update it was begun in */
    int discarded;     /* that update was discarded while its header arrived: it is late */
};

/* 1 if a bucket still arriving writes one of bp's tensors. Called with mu held. */
static int tensors_busy(const sr_engine *e, const bucket_plan *bp)
{
    for (size_t i = 0; i < bp->n; i++)
        if (e->bc.busy[bp->items[i].index])
            return 1;
    return 0;
}

/* The bucket's header line is no longer arriving: it leaves bc.heading (if the update it was begun
 * in still runs). 1 when that update was discarded meanwhile. Called with mu held. */
static int unhead_locked(sr_bucket_rx *b)
{
    if (!b->heading)
        return 0;
    b->heading = 0;
    if (b->head_gen != b->e->bc.gen)
        return 1;
    b->e->bc.heading--;
    return 0;
}

/* A bucket of an update that a finish ended while it arrived (sync_table.h, finish_incomplete):
 * nothing of it is applied, and it says so rather than answering 200. */
static int late(sr_bucket_rx *b, sr_err *err)
{
    return sr_err_set(err, SR_E_SYNC_INCOMPLETE,
                      "%s: bucket %lld of version %lld arrived after the update it belonged to "
                      "was finished; that update was discarded and this bucket is not applied",
                      b->call, (long long)b->bp.index, (long long)b->bp.target);
}

/* The protocol checks and the claim of the bucket's tensors, under mu: they are busy until the
 * bucket ends (a whole update: until it is committed), and the bucket belongs to the update of
 * generation b->gen. A bucket whose update was discarded while its header arrived is late. */
static int claim(sr_bucket_rx *b, sr_err *err)
{
    sr_engine *e = b->e;
    const bucket_plan *bp = &b->bp;
    int rc = 0;
    pthread_mutex_lock(&e->mu);
    b->discarded = unhead_locked(b);
    sr_sync_call c = tensors_busy(e, bp) ? SR_SC_UPDATE_BUSY : SR_SC_UPDATE;
    if (b->discarded) {
        rc = late(b, err);
    } else if ((rc = sr_engine_sync_step_locked(e, c, NULL, err))) {
        /* refused by the control plane's table */
    } else if (bp->whole) {
        /* a whole update on its own: no session to match */
    } else if (e->bc.target >= 0 && e->bc.target != bp->target) {
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST,
                        "%s: bucket %lld targets version %lld, earlier buckets %lld", bp->call,
                        (long long)bp->index, (long long)bp->target, (long long)e->bc.target);
    }
    for (size_t i = 0; !rc && !bp->whole && i < bp->n; i++)
        if (e->bc.received[bp->items[i].index])
            rc = sr_err_set(err, SR_E_ENGINE_REQUEST,
                            "%s: tensor '%s' was already sent in this update", bp->call,
                            e->stage_view[bp->items[i].index].name);
    if (!rc && !bp->whole) {
        for (size_t i = 0; i < bp->n; i++)
            e->bc.received[bp->items[i].index] = 1;
        e->bc.target = bp->target;
        b->corrupt = e->bc.corrupt && bp->n > 0;
        if (bp->n)
            e->bc.corrupt = 0;
    }
    if (!rc) {
        for (size_t i = 0; i < bp->n; i++)
            e->bc.busy[bp->items[i].index] = 1;
        b->gen = e->bc.gen;
        /* "threads" of a broadcast: the most buckets received at once in this update. */
        if (e->bc.buckets == 0 && e->bc.streams == 0)
            e->st.threads = 0;
        e->bc.streams++;
        if (e->bc.streams > e->st.threads)
            e->st.threads = (int)e->bc.streams;
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int sr_engine_bucket_begin(sr_bucket_rx **out, sr_engine *e, const char *call, sr_err *err)
{
    sr_bucket_rx *b = calloc(1, sizeof(*b));
    if (!b || !(b->h = XXH3_createState())) {
        free(b);
        *out = NULL;
        return sr_err_set(err, SR_E_NOMEM, "cannot receive a bucket");
    }
    b->e = e;
    b->head.max = SR_BUCKET_HEADER_MAX;
    b->err = (sr_err)SR_ERR_INIT;
    snprintf(b->call, sizeof(b->call), "%s",
             call ? call : sr_sync_call_method(e->cfg.sync_dialect, SR_SC_UPDATE));
    b->bp.call = b->call;
    /* Counted from here: a finish must not acknowledge the update while this bucket's header line
     * is still arriving (it would be claimed into an update already committed), and no other
     * weight writer runs while the request is open. */
    pthread_mutex_lock(&e->mu);
    e->bc.open++;
    if (e->cfg.sync_dialect != SR_SYNC_DIALECT_SGLANG && e->sync_state == SR_SS_ACTIVE) {
        b->heading = 1;
        b->head_gen = e->bc.gen;
        e->bc.heading++;
    }
    pthread_mutex_unlock(&e->mu);
    *out = b;
    return 0;
}

/* The header is complete: plan, claim the tensors, make sure the stage exists. */
static int begin_payload(sr_bucket_rx *b)
{
    sr_engine *e = b->e;
    int rc = sr_bucket_parse_header(&b->bp, e, b->head.data, b->head.len, &b->err);
    b->got = rc ? NULL : calloc(b->bp.n ? b->bp.n : 1, sizeof(XXH128_hash_t));
    if (!rc && !b->got)
        rc = sr_err_set(&b->err, SR_E_NOMEM, "cannot receive a bucket");
    pthread_mutex_lock(&e->apply);
    if (!rc)
        rc = sr_engine_stage_ensure(e, &b->err);
    if (!rc)
        rc = claim(b, &b->err);
    b->claimed = rc == 0;
    if (!rc) {
        e->stage_pristine = 0;
        e->stage_foreign = 1;
    }
    pthread_mutex_unlock(&e->apply);
    b->in_payload = 1;
    XXH3_128bits_reset(b->h);
    return rc;
}

/* 1 once the update the bucket was claimed in has ended without it (a finish came while it
 * arrived): its bytes must no longer reach the stage. Takes mu. */
static int stale(sr_bucket_rx *b)
{
    if (!b->claimed || b->bp.whole)
        return 0;
    pthread_mutex_lock(&b->e->mu);
    int gone = b->gen != b->e->bc.gen;
    pthread_mutex_unlock(&b->e->mu);
    return gone;
}

/* Copies payload bytes into the stage, hashing each piece while it is hot. The stage is written
 * under apply with the generation checked, so a bucket of a discarded update never writes over
 * the next update's bytes. */
static void feed_payload(sr_bucket_rx *b, const unsigned char *p, size_t n)
{
    sr_engine *e = b->e;
    pthread_mutex_lock(&e->apply);
    if (stale(b))
        n = 0;
    while (n && b->item < b->bp.n) {
        const bucket_item *it = &b->bp.items[b->item];
        unsigned char *dst = (unsigned char *)e->stage_view[it->index].data + b->item_off;
        size_t c = it->nbytes - b->item_off < n ? it->nbytes - b->item_off : n;
        memcpy(dst, p, c);
        XXH3_128bits_update(b->h, dst, c);
        b->item_off += c;
        p += c;
        n -= c;
        if (b->item_off == it->nbytes) {
            b->got[b->item++] = XXH3_128bits_digest(b->h);
            b->item_off = 0;
            XXH3_128bits_reset(b->h);
        }
    }
    pthread_mutex_unlock(&e->apply);
    b->extra += n;
}

void sr_engine_bucket_feed(sr_bucket_rx *b, const char *p, size_t n)
{
    if (!b->in_payload) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (!b->rc && sr_buf_append(&b->head, p, take, NULL))
            b->rc = sr_bucket_bad(&b->err, b->call,
                                  "no header line (a JSON object, then '\\n', then the bytes) "
                                  "within SR_BUCKET_HEADER_MAX bytes");
        if (!nl)
            return;
        int rc = b->rc ? b->rc : begin_payload(b);
        if (!b->rc)
            b->rc = rc;
        p = nl + 1;
        n -= take + 1;
        b->in_payload = 1;
    }
    if (!b->rc)
        feed_payload(b, (const unsigned char *)p, n);
}

/* The received digests against the sent ones; a checksum fault flips one received bit. */
static int verify(sr_bucket_rx *b, int corrupt, sr_err *err)
{
    sr_engine *e = b->e;
    for (size_t i = 0; i < b->bp.n; i++) {
        const bucket_item *it = &b->bp.items[i];
        const sr_delta_tensor *t = &e->stage_view[it->index];
        XXH128_hash_t h = b->got[i];
        if (i == 0 && corrupt && it->nbytes) {
            pthread_mutex_lock(&e->apply);
            ((unsigned char *)t->data)[0] ^= 1; /* one bit flipped in transit */
            h = XXH3_128bits(t->data, t->nbytes);
            pthread_mutex_unlock(&e->apply);
        }
        if (h.high64 != it->hi || h.low64 != it->lo)
            return sr_err_set(err, SR_E_DELTA_CHECKSUM,
                              "Checksum mismatch: tensor '%s' of bucket %lld arrived as "
                              "%016llx%016llx, sent as %016llx%016llx",
                              t->name, (long long)b->bp.index, (unsigned long long)h.high64,
                              (unsigned long long)h.low64, (unsigned long long)it->hi,
                              (unsigned long long)it->lo);
    }
    return 0;
}

static void bucket_free(sr_bucket_rx *b)
{
    sr_buf_release(&b->head);
    XXH3_freeState(b->h);
    free(b->bp.items);
    free(b->got);
    free(b);
}

/* update_ok_no_transfer: the bucket's tensors in the stage get the model's bytes back, as if the
 * payload had never been copied (lightseekorg/tokenspeed#1373: a 200 that moved nothing). */
static void undo_transfer(sr_bucket_rx *b)
{
    sr_engine *e = b->e;
    pthread_mutex_lock(&e->apply);
    for (size_t i = 0; i < b->bp.n; i++) {
        sr_weights_info m;
        size_t k = b->bp.items[i].index;
        if (!sr_weights_tensor(&m, e->weights, k, NULL) && m.nbytes == e->stage_view[k].nbytes)
            memcpy(e->stage_view[k].data, m.data, m.nbytes);
    }
    pthread_mutex_unlock(&e->apply);
}

/* The end of a whole update (sglang): the table's finish (finish_backwards below the version
 * held), then the commit of this request's tensors and the version it names. */
static int commit_whole(sr_bucket_rx *b, sr_err *err)
{
    sr_engine *e = b->e;
    size_t n = sr_weights_count(e->weights);
    unsigned char *only = calloc(n ? n : 1, 1);
    if (!only)
        return sr_err_set(err, SR_E_NOMEM, "cannot commit a bucket");
    for (size_t i = 0; i < b->bp.n; i++)
        only[b->bp.items[i].index] = 1;
    int64_t target = b->bp.target;
    pthread_mutex_lock(&e->mu);
    int rc = sr_engine_sync_step_locked(
        e, target < e->version ? SR_SC_FINISH_BACKWARDS : SR_SC_FINISH, NULL, err);
    e->sync_finishes++;
    pthread_mutex_unlock(&e->mu);
    sr_pending pend;
    sr_engine_take_pending(e, NULL, &pend);
    if (!rc) {
        pthread_mutex_lock(&e->apply);
        rc = sr_engine_defer_save_locked(e, &pend, err);
        if (!rc)
            rc = sr_engine_commit_locked(e, only, &pend.skip, err);
        if (!rc)
            rc = sr_engine_publish_update(e, target, &pend, "broadcast", err);
        pthread_mutex_unlock(&e->apply);
    }
    if (!rc && b->bp.flush)
        sr_engine_prefix_reset(e);
    free(only);
    return rc;
}

/* bucket_order_mismatch (NovaSky-AI/SkyRL#1816, comment): the receiver unpacks a mixed-dtype
 * bucket with its tensors grouped by dtype (in the order the dtypes first appear) while the
 * sender packed them in the metadata's order, so each tensor gets the bytes at the wrong offset.
 * The checksums were verified first: the garbage lands silently, as in the report. A bucket of
 * one dtype unpacks the same either way. */
static int unpack_grouped(sr_bucket_rx *b, sr_err *err)
{
    sr_engine *e = b->e;
    size_t n = b->bp.n, *order = malloc((n ? n : 1) * sizeof(size_t));
    unsigned char *payload = malloc(b->bp.payload_len ? b->bp.payload_len : 1);
    int rc = 0;
    if (!order || !payload) {
        rc = sr_err_set(err, SR_E_NOMEM, "cannot unpack a bucket of %zu bytes", b->bp.payload_len);
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d = e->stage_view[b->bp.items[i].index].dtype;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = strcmp(e->stage_view[b->bp.items[j].index].dtype, d) != 0;
        for (size_t j = i; first && j < n; j++)
            if (strcmp(e->stage_view[b->bp.items[j].index].dtype, d) == 0)
                order[k++] = j;
    }
    pthread_mutex_lock(&e->apply);
    for (size_t i = 0; i < n; i++)
        memcpy(payload + b->bp.items[i].offset, e->stage_view[b->bp.items[i].index].data,
               b->bp.items[i].nbytes);
    size_t off = 0;
    for (size_t j = 0; j < n; j++) {
        const bucket_item *it = &b->bp.items[order[j]];
        memcpy(e->stage_view[it->index].data, payload + off, it->nbytes);
        off += it->nbytes;
    }
    pthread_mutex_unlock(&e->apply);
out:
    free(order);
    free(payload);
    return rc;
}

/* The tensors a bucket held are free again. Called with mu held. */
static void release_busy(sr_bucket_rx *b)
{
    for (size_t i = 0; i < b->bp.n; i++)
        b->e->bc.busy[b->bp.items[i].index] = 0;
}

int sr_engine_bucket_end(sr_bucket_rx *b, const sr_fault *f, sr_err *err)
{
    sr_engine *e = b->e;
    int rc = b->rc;
    if (rc && err)
        *err = b->err;
    if (stale(b))
        rc = late(b, err); /* its bytes may be the next update's: nothing to verify */
    if (!rc && !b->in_payload)
        rc = sr_bucket_bad(err, b->call,
                           "no header line (a JSON object, then '\\n', then the bytes)");
    if (!rc && (b->item < b->bp.n || b->extra))
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST,
                        "%s: the tensors need %zu bytes after the header, the body carries %s",
                        b->call, b->bp.payload_len, b->extra ? "more" : "fewer");
    if (!rc && f && f->kind != SR_FK_CHECKSUM_MISMATCH)
        sr_engine_note_fault(e, f);
    if (!rc)
        rc = verify(b, b->corrupt || (f && f->kind == SR_FK_CHECKSUM_MISMATCH), err);
    if (!rc && f && f->kind == SR_FK_UPDATE_OK_NO_TRANSFER)
        undo_transfer(b);
    if (!rc && f && f->kind == SR_FK_BUCKET_ORDER_MISMATCH)
        rc = unpack_grouped(b, err);
    pthread_mutex_lock(&e->mu);
    /* Decided under mu with the finish: either this bucket ends before it (and is counted in its
     * update) or the finish discarded the update first and the bucket is late. */
    int head_late = unhead_locked(b); /* always: a header never parsed leaves bc.heading here */
    int gone = (b->claimed && !b->bp.whole && b->gen != e->bc.gen) || b->discarded || head_late;
    if (gone && rc != SR_E_SYNC_INCOMPLETE)
        rc = late(b, err);
    e->st.buckets++;
    if (b->claimed && !gone) {
        e->bc.streams--;
        e->st.payloads = (int64_t)b->bp.n;
        e->st.workers = 1;
        if (!b->bp.whole)
            release_busy(b);
    }
    if (rc) {
        e->st.bucket_failures++;
        /* A bucket that reached the update spoils it: finish will refuse to commit. A refusal of
         * the table (order, a busy tensor) never reached it, and a late bucket's update is gone. */
        if (rc != SR_E_SYNC_ORDER && rc != SR_E_SYNC_CONCURRENT && !gone)
            sr_engine_bcast_spoil_locked(e, rc, err ? err->msg : "");
    } else {
        e->bc.buckets++;
    }
    pthread_mutex_unlock(&e->mu);
    if (!rc && b->bp.whole)
        rc = commit_whole(b, err);
    if (b->claimed && b->bp.whole) {
        /* A whole update's tensors stay busy until it is committed, so a concurrent update of
         * one of them cannot mix its bytes in (sync.concurrent_update). */
        pthread_mutex_lock(&e->mu);
        release_busy(b);
        pthread_mutex_unlock(&e->mu);
    }
    pthread_mutex_lock(&e->mu);
    e->bc.open--;
    pthread_mutex_unlock(&e->mu);
    bucket_free(b);
    return rc;
}

void sr_engine_bucket_abort(sr_bucket_rx *b)
{
    if (!b)
        return;
    sr_err err = SR_ERR_INIT;
    sr_err_set(&err, SR_E_ENGINE_REQUEST, "%s: the connection closed mid-body", b->call);
    if (!b->rc) {
        b->rc = err.code;
        b->err = err;
    }
    sr_engine_bucket_end(b, NULL, NULL);
}

int sr_engine_sync_no_transfer(sr_engine *e, const char *method, sr_err *err)
{
    int rc = sr_engine_sync_call(e, SR_SC_UPDATE, method, err);
    if (rc)
        return rc;
    sr_err_set(err, SR_E_SYNC_NO_TRANSFER,
               "%s carried no tensor bytes: this engine receives broadcast weights only as a "
               "bucket body (Content-Type " SR_ENGINE_BUCKET_CTYPE
               ") and cannot open NCCL groups or IPC handles, so the call would be a silent "
               "no-op; the update is spoiled and finish discards it",
               method);
    pthread_mutex_lock(&e->mu);
    sr_engine_bcast_spoil_locked(e, SR_E_SYNC_NO_TRANSFER, err->msg);
    pthread_mutex_unlock(&e->mu);
    return SR_E_SYNC_NO_TRANSFER;
}

int sr_engine_sync_finish(sr_engine *e, int64_t target, const sr_fault *f, int64_t *version,
                          sr_err *err)
{
    size_t n = sr_weights_count(e->weights);
    unsigned char *got = malloc(n ? n : 1);
    if (!got)
        return sr_err_set(err, SR_E_NOMEM, "cannot snapshot the broadcast session");
    if (f && f->kind != SR_FK_CHECKSUM_MISMATCH)
        sr_engine_note_fault(e, f);
    int rc = 0;
    int64_t buckets = 0;
    pthread_mutex_lock(&e->mu);
    int was_active = e->sync_state == SR_SS_ACTIVE;
    /* The version the update goes to: the finish's, else its buckets' (the guard against going
     * backwards holds either way). */
    int64_t to = target >= 0 ? target : was_active ? e->bc.target : -1;
    /* A bucket still arriving, its header line included, makes the update incomplete. */
    sr_sync_call call = was_active && (e->bc.streams > 0 || e->bc.heading > 0)
                            ? SR_SC_FINISH_INCOMPLETE
                        : to >= 0 && to < e->version ? SR_SC_FINISH_BACKWARDS
                                                     : SR_SC_FINISH;
    /* publish_after_failed_chunk (lightseekorg/tokenspeed#672, review): the finish ends the
     * update as if every chunk had landed: what the chunks wrote, the failed one's bytes too, is
     * committed and the version published. */
    int publish_failed = was_active && (e->pend_publish_failed ||
                                        (f && f->kind == SR_FK_PUBLISH_AFTER_FAILED_CHUNK));
    e->pend_publish_failed = 0;
    rc = sr_engine_sync_step_locked(e, call, NULL, err);
    if (rc == SR_E_SYNC_INCOMPLETE)
        sr_engine_bcast_discard_locked(e);
    if (!was_active && !rc)
        rc = sr_err_set(err, SR_E_INTERNAL, "the weight-sync table finished an inactive update");
    if (was_active) {
        buckets = e->bc.buckets;
        if (rc) {
            /* refused by the table (a bucket still arriving, a version going backwards): the
             * update is discarded */
        } else if (!e->bc.failed && buckets &&
                   (e->bc.corrupt || (f && f->kind == SR_FK_CHECKSUM_MISMATCH)))
            rc = sr_err_set(err, SR_E_DELTA_CHECKSUM,
                            "Checksum mismatch found while finishing the update");
        else if (e->bc.failed && !publish_failed)
            rc = sr_err_set(err, e->bc.fail_code, "%s", e->bc.fail_msg);
        else if (target >= 0 && e->bc.target >= 0 && target != e->bc.target)
            rc = sr_err_set(err, SR_E_ENGINE_REQUEST,
                            "finish targets version %lld, the buckets %lld", (long long)target,
                            (long long)e->bc.target);
        target = to;
        /* vLLM's finish_weight_update(weight_version) sets the version it names whatever came
         * before it (LLM.finish_weight_update calls set_weight_version): with no bucket that is a
         * label alone, and the routes keep following the bytes the engine holds. */
        if (!rc && !buckets && target > e->version && e->cfg.sync_dialect == SR_SYNC_DIALECT_VLLM)
            e->version = target;
        memcpy(got, e->bc.received, n);
        /* The update ends here whatever happened (the table's next state), so a failed one never
         * blocks the next start. */
        e->sync_finishes++;
    }
    int64_t cur = e->version;
    pthread_mutex_unlock(&e->mu);
    if (rc == SR_E_SYNC_ORDER) {
        free(got);
        *version = cur;
        return rc;
    }
    if (rc && target >= 0)
        sr_err_prefix(err, "the update to version %lld is discarded, the engine stays on %lld: ",
                      (long long)target, (long long)cur);
    else if (rc)
        sr_err_prefix(err,
                      "the update is discarded (neither the finish nor an accepted bucket named "
                      "its version), the engine stays on %lld: ",
                      (long long)cur);
    sr_pending pend;
    sr_engine_take_pending(e, NULL, &pend);
    if (!rc && (buckets || (publish_failed && target >= 0))) {
        pthread_mutex_lock(&e->apply);
        rc = sr_engine_defer_save_locked(e, &pend, err);
        if (!rc)
            rc = sr_engine_commit_locked(e, got, &pend.skip, err);
        if (!rc)
            rc = sr_engine_publish_update(e, target, &pend, "broadcast", err);
        pthread_mutex_unlock(&e->apply);
    }
    free(got);
    *version = sr_engine_version(e);
    return rc;
}
