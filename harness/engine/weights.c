/* The mock engine's real weight receiver: the staging copy, the delta receiver, the commit into
 * the model, and the "apply" part of the state document (engine.h, engine_priv.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_priv.h"
#include "jsonw.h"
#include "sr_clock.h"

/* The receiver's state lives in {sync_dir}/receiver-<engine id>; the id is made file-safe. */
#define RX_DIR_MAX 3800

int sr_engine_sync_init(sr_engine *e, sr_err *err)
{
    int rc = sr_delta_apply_workers(&e->st.max_workers, NULL, err);
    if (!rc)
        rc = sr_delta_publish_workers(&e->st.publish_workers, NULL, err);
    e->st.receiver_version = -1;
    e->bc.target = -1;
    size_t n = sr_weights_count(e->weights);
    e->bc.received = calloc(n ? n : 1, 1);
    if (!rc && !e->bc.received)
        rc = sr_err_set(err, SR_E_NOMEM, "cannot allocate the broadcast session");
    return rc;
}

void sr_engine_sync_release(sr_engine *e)
{
    sr_delta_receiver_free(e->rx);
    free(e->rx_sync_dir);
    free(e->stage_view);
    sr_weights_free(e->stage);
    free(e->bc.received);
}

/* ---- skip sets and pending faults ---- */

void sr_skip_add_fault(sr_skip_set *s, const sr_fault *f, int num_layers)
{
    if (!f || f->kind != SR_FK_PARTIAL_WEIGHT_APPLY || num_layers < 1)
        return;
    if (f->n_layers == 0) {
        s->bits[(num_layers - 1) / 64] |= 1ull << ((num_layers - 1) % 64);
        s->any = 1;
    }
    for (int i = 0; i < f->n_layers; i++)
        if (f->layers[i] >= 0 && f->layers[i] < num_layers) {
            s->bits[f->layers[i] / 64] |= 1ull << (f->layers[i] % 64);
            s->any = 1;
        }
}

int sr_skip_has(const sr_skip_set *s, int layer)
{
    return s->any && layer >= 0 && layer < SR_WEIGHTS_MAX_LAYERS &&
           (s->bits[layer / 64] >> (layer % 64) & 1);
}

void sr_engine_note_fault(sr_engine *e, const sr_fault *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&e->mu);
    sr_skip_add_fault(&e->pend_skip, f, e->cfg.num_layers);
    if (f->kind == SR_FK_VERSION_NOT_BUMPED)
        e->pend_not_bumped = 1;
    if (f->kind == SR_FK_CHECKSUM_MISMATCH)
        e->bc.corrupt = 1;
    pthread_mutex_unlock(&e->mu);
}

void sr_engine_take_pending(sr_engine *e, const sr_fault *f, sr_skip_set *skip, int *not_bumped)
{
    pthread_mutex_lock(&e->mu);
    *skip = e->pend_skip;
    *not_bumped = e->pend_not_bumped;
    memset(&e->pend_skip, 0, sizeof(e->pend_skip));
    e->pend_not_bumped = 0;
    pthread_mutex_unlock(&e->mu);
    sr_skip_add_fault(skip, f, e->cfg.num_layers);
    if (f && f->kind == SR_FK_VERSION_NOT_BUMPED)
        *not_bumped = 1;
}

void sr_engine_bcast_begin_locked(sr_engine *e)
{
    memset(e->bc.received, 0, sr_weights_count(e->weights));
    e->bc.target = -1;
    e->bc.buckets = 0;
    e->bc.failed = 0;
    e->bc.fail_code = 0;
    e->bc.fail_msg[0] = '\0';
    e->bc.corrupt = 0;
}

void sr_engine_publish_model(sr_engine *e, int64_t target, int not_bumped, const char *transport)
{
    size_t L = (size_t)e->cfg.num_layers;
    pthread_mutex_lock(&e->mu);
    e->prev_version = e->version;
    e->prev_global_fp = e->global_fp;
    memcpy(e->prev_layer_fps, e->layer_fps, L * sizeof(uint64_t));
    e->has_prev = 1;
    sr_weights_fingerprints(&e->global_fp, e->layer_fps, e->weights);
    if (!not_bumped)
        e->version = target;
    e->sync_applies++;
    e->st.transport = transport;
    pthread_mutex_unlock(&e->mu);
}

/* ---- the stage and the delta receiver ---- */

static int stage_reset(void *ctx, sr_err *err)
{
    sr_engine *e = ctx;
    pthread_mutex_lock(&e->mu);
    e->st.resets++;
    pthread_mutex_unlock(&e->mu);
    if (e->stage_pristine)
        return 0;
    int rc = sr_weights_reset(e->stage, 0, err);
    e->stage_pristine = rc == 0;
    return rc;
}

int sr_engine_stage_ensure(sr_engine *e, sr_err *err)
{
    if (e->stage)
        return 0;
    size_t n = sr_weights_count(e->weights);
    int rc = sr_weights_new(&e->stage, sr_weights_spec_of(e->weights), 0, err);
    e->stage_view = rc ? NULL : calloc(n ? n : 1, sizeof(sr_delta_tensor));
    if (!rc && !e->stage_view)
        rc = sr_err_set(err, SR_E_NOMEM, "cannot allocate the staging view");
    for (size_t i = 0; !rc && i < n; i++) {
        sr_weights_info t;
        rc = sr_weights_tensor(&t, e->stage, i, err);
        /* The stage is the receiver's local checkpoint: it owns these bytes, and nothing reads
         * the stage's own digests (commits hash the model), so patching them in place is safe. */
        e->stage_view[i] = (sr_delta_tensor){
            t.name, sr_dtype_name(t.dtype), 2, {t.shape[0], t.shape[1]}, (void *)t.data, t.nbytes};
    }
    if (rc) {
        free(e->stage_view);
        sr_weights_free(e->stage);
        e->stage_view = NULL;
        e->stage = NULL;
        return rc;
    }
    e->stage_pristine = 1;
    return 0;
}

/* A fresh receiver for sync_dir, reset so its state (version 0) matches the stage. */
static int rx_create(sr_engine *e, const char *sync_dir, sr_err *err)
{
    char dir[RX_DIR_MAX + 128];
    int n = snprintf(dir, sizeof(dir), "%s/receiver-", sync_dir);
    for (const char *p = e->cfg.id; *p && (size_t)n + 1 < sizeof(dir); p++, n++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
        dir[n] = ok ? c : '_';
    }
    dir[n] = '\0';
    sr_delta_receiver_free(e->rx);
    e->rx = NULL;
    free(e->rx_sync_dir);
    e->rx_sync_dir = strdup(sync_dir);
    if (!e->rx_sync_dir)
        return sr_err_set(err, SR_E_NOMEM, "cannot copy the sync_dir");
    sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
    o.max_workers = e->st.max_workers;
    o.reset = stage_reset;
    o.reset_ctx = e;
    int rc = sr_delta_receiver_new(&e->rx, dir, e->stage_view, sr_weights_count(e->stage), NULL, 0,
                                   &o, err);
    return rc ? rc : sr_delta_receiver_reset(e->rx, err);
}

/* Called with apply held. */
static int rx_ensure(sr_engine *e, const char *sync_dir, sr_err *err)
{
    if (strlen(sync_dir) > RX_DIR_MAX)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "sync_dir is longer than %d bytes", RX_DIR_MAX);
    int rc = sr_engine_stage_ensure(e, err);
    if (rc)
        return rc;
    if (!e->rx || strcmp(e->rx_sync_dir, sync_dir) != 0)
        rc = rx_create(e, sync_dir, err);
    else if (e->stage_foreign)
        rc = sr_delta_receiver_reset(e->rx, err);
    if (!rc)
        e->stage_foreign = 0;
    return rc;
}

/* Reads a whole file of at most `max` bytes into a NUL-terminated buffer (free()). */
static int read_small(char **out, size_t *len, const char *path, size_t max, sr_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sr_err_set(err, SR_E_DELTA_MANIFEST, "%s: cannot open: %s", path, strerror(errno));
    char *b = malloc(max + 1);
    size_t n = b ? fread(b, 1, max + 1, f) : 0;
    fclose(f);
    if (!b)
        return sr_err_set(err, SR_E_NOMEM, "cannot read %s", path);
    if (n > max) {
        free(b);
        return sr_err_set(err, SR_E_DELTA_MANIFEST, "%s: larger than %zu bytes", path, max);
    }
    b[n] = '\0';
    *out = b;
    *len = n;
    return 0;
}

/*
 * checksum_mismatch on a fetch: flips one bit of the first local tensor the next version's
 * manifest patches. XOR is linear, so this is exactly a payload corrupted in transit: the
 * receiver's own checksum verification must catch it. Called with apply held.
 */
static int corrupt_next_payload(sr_engine *e, const char *sync_dir, sr_err *err)
{
    sr_delta_state s;
    int exists;
    int rc = sr_delta_receiver_state(&s, &exists, e->rx, err);
    if (!rc && (!exists || s.write_in_progress)) {
        rc = sr_delta_receiver_reset(e->rx, err);
        s.version = 0;
    }
    char path[RX_DIR_MAX + 64], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/delta-%08lld/manifest.json", sync_dir,
             (long long)s.version + 1);
    sr_delta_manifest *m = NULL;
    if (!rc)
        rc = read_small(&text, &len, path, SR_DELTA_MANIFEST_MAX, err);
    if (!rc)
        rc = sr_delta_manifest_parse(&m, text, len, path, err);
    for (size_t i = 0; !rc && i < m->n_tensors; i++) {
        size_t idx;
        if (sr_weights_find(&idx, e->stage, m->tensors[i].name, NULL) == 0 &&
            e->stage_view[idx].nbytes) {
            ((unsigned char *)e->stage_view[idx].data)[0] ^= 1;
            e->stage_pristine = 0;
            break;
        }
    }
    sr_delta_manifest_free(m);
    free(text);
    return rc;
}

int sr_engine_fetch(sr_engine *e, int64_t target, const char *sync_dir, const sr_fault *f,
                    int64_t *fetched, sr_err *err)
{
    if (target < 1 || target > SR_DELTA_MAX_VERSION || !sync_dir || !*sync_dir)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "fetch_weights needs target_version in 1..%d and a sync_dir",
                          SR_DELTA_MAX_VERSION);
    int corrupt = f && f->kind == SR_FK_CHECKSUM_MISMATCH;
    if (!corrupt)
        sr_engine_note_fault(e, f);
    sr_delta_fetch_result fr;
    memset(&fr, 0, sizeof(fr));
    pthread_mutex_lock(&e->apply);
    double t0 = sr_clock_ms();
    int rc = rx_ensure(e, sync_dir, err);
    if (!rc && corrupt)
        rc = corrupt_next_payload(e, sync_dir, err);
    if (!rc) {
        rc = sr_delta_fetch(&fr, e->rx, sync_dir, target, err);
        if (rc || fr.versions_applied)
            e->stage_pristine = 0;
    }
    pthread_mutex_lock(&e->mu);
    e->st.fetches++;
    e->st.fetch_failures += rc != 0;
    e->st.payloads = (int64_t)fr.last_payloads;
    e->st.workers = fr.last_workers;
    e->st.threads = fr.last_threads;
    e->st.receiver_version = fr.version;
    e->st.fetch_ms = sr_clock_ms() - t0;
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_unlock(&e->apply);
    *fetched = fr.version;
    return rc;
}

/* ---- commit ---- */

int sr_engine_commit_locked(sr_engine *e, const unsigned char *only, const sr_skip_set *skip,
                            sr_err *err)
{
    double t0 = sr_clock_ms();
    size_t n = sr_weights_count(e->weights);
    int64_t committed = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        sr_weights_info m;
        if (only && !only[i])
            continue;
        rc = sr_weights_tensor(&m, e->weights, i, err);
        if (rc || (m.layer >= 0 && sr_skip_has(skip, m.layer)))
            continue;
        const sr_delta_tensor *s = &e->stage_view[i];
        if (memcmp(m.data, s->data, m.nbytes) == 0)
            continue;
        rc = sr_weights_write(e->weights, i, s->data, s->nbytes, err);
        committed++;
    }
    pthread_mutex_lock(&e->mu);
    e->st.commits++;
    e->st.committed_tensors = committed;
    e->st.commit_ms = sr_clock_ms() - t0;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int sr_engine_update_delta(sr_engine *e, int64_t target, const char *sync_dir, const sr_fault *f,
                           int64_t *version, sr_err *err)
{
    if (target < 1 || target > SR_DELTA_MAX_VERSION)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "target version %lld is outside 1..%d",
                          (long long)target, SR_DELTA_MAX_VERSION);
    sr_skip_set skip;
    int not_bumped;
    sr_engine_take_pending(e, f, &skip, &not_bumped);
    *version = sr_engine_version(e);
    if (f && f->kind == SR_FK_CHECKSUM_MISMATCH)
        return sr_err_set(err, SR_E_DELTA_CHECKSUM,
                          "Checksum mismatch while loading version %lld from the local checkpoint; "
                          "the engine stays on version %lld",
                          (long long)target, (long long)*version);
    pthread_mutex_lock(&e->apply);
    int rc = 0;
    if (!e->rx || strcmp(e->rx_sync_dir, sync_dir) != 0)
        rc = sr_err_set(
            err, SR_E_DELTA_VERSION,
            "update_weights: nothing was fetched from sync_dir %s (fetch_weights first)", sync_dir);
    if (!rc)
        rc = sr_delta_receiver_check_ready(e->rx, target, err);
    if (!rc)
        rc = sr_engine_commit_locked(e, NULL, &skip, err);
    if (!rc)
        sr_engine_publish_model(e, target, not_bumped, "delta");
    pthread_mutex_unlock(&e->apply);
    *version = sr_engine_version(e);
    return rc;
}

/* ---- state ---- */

int sr_engine_apply_state_locked(sr_buf *b, sr_engine *e, sr_err *err)
{
    const sr_apply_stats *s = &e->st;
    int rc = sr_buf_printf(
        b, err,
        ",\"apply\":{\"transport\":%s%s%s,\"max_workers\":%d,"
        "\"publish_workers\":%d,\"payloads\":%lld,\"workers\":%d,\"threads\":%d,"
        "\"receiver_version\":%lld,\"fetches\":%lld,\"fetch_failures\":%lld,"
        "\"receiver_resets\":%lld,\"buckets\":%lld,\"bucket_failures\":%lld,"
        "\"commits\":%lld,\"committed_tensors\":%lld,",
        s->transport ? "\"" : "", s->transport ? s->transport : "null", s->transport ? "\"" : "",
        s->max_workers, s->publish_workers, (long long)s->payloads, s->workers, s->threads,
        (long long)s->receiver_version, (long long)s->fetches, (long long)s->fetch_failures,
        (long long)s->resets, (long long)s->buckets, (long long)s->bucket_failures,
        (long long)s->commits, (long long)s->committed_tensors);
    if (!rc)
        rc = sr_buf_puts(b, "\"fetch_ms\":", err);
    if (!rc)
        rc = sr_jw_double(b, s->fetch_ms, err);
    if (!rc)
        rc = sr_buf_puts(b, ",\"commit_ms\":", err);
    if (!rc)
        rc = sr_jw_double(b, s->commit_ms, err);
    return rc ? rc : sr_buf_puts(b, "}", err);
}

int sr_engine_tensors_state(sr_buf *b, sr_engine *e, sr_err *err)
{
    pthread_mutex_lock(&e->apply);
    int rc = sr_buf_puts(b, ",\"tensors\":[", err);
    size_t n = sr_weights_count(e->weights);
    for (size_t i = 0; !rc && i < n; i++) {
        sr_weights_info t;
        rc = sr_weights_tensor(&t, e->weights, i, err);
        if (!rc)
            rc = sr_buf_puts(b, i ? ",{\"name\":" : "{\"name\":", err);
        if (!rc)
            rc = sr_jw_str(b, t.name, err);
        if (!rc)
            rc = sr_buf_printf(b, err, ",\"layer\":%d,\"digest\":\"%016llx%016llx\"}", t.layer,
                               (unsigned long long)t.digest_hi, (unsigned long long)t.digest_lo);
    }
    pthread_mutex_unlock(&e->apply);
    return rc ? rc : sr_buf_puts(b, "]", err);
}
