/* The engine's state and the weight transitions every update path shares (engine_state.h). */
#include "engine_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_clock.h"

/* ---- set-up ---- */

int sr_engine_sync_init(sr_engine *e, sr_err *err)
{
    int rc = sr_delta_apply_workers(&e->st.max_workers, NULL, err);
    if (!rc)
        rc = sr_delta_publish_workers(&e->st.publish_workers, NULL, err);
    e->st.receiver_version = -1;
    e->bc.target = -1;
    size_t n = sr_weights_count(e->weights);
    e->bc.received = calloc(n ? n : 1, 1);
    e->bc.busy = calloc(n ? n : 1, 1);
    if (!rc && (!e->bc.received || !e->bc.busy))
        rc = sr_err_set(err, SR_E_NOMEM, "cannot allocate the broadcast session");
    return rc;
}

/* ack_before_apply's deferral dropped (with apply held, or at release). */
static void defer_free(sr_engine *e)
{
    for (size_t i = 0; i < e->defer.n; i++)
        free(e->defer.t[i].bytes);
    free(e->defer.t);
    e->defer.t = NULL;
    e->defer.n = 0;
    atomic_store(&e->defer_left, 0);
}

void sr_engine_sync_release(sr_engine *e)
{
    sr_delta_receiver_free(e->rx);
    free(e->rx_sync_dir);
    free(e->rx_state_dir);
    free(e->stage_view);
    sr_weights_free(e->stage);
    free(e->bc.received);
    free(e->bc.busy);
    defer_free(e);
}

/* ---- skip sets and pending faults ---- */

/* f's `layers` (none: the last slot) into `s`. */
static void add_layers(sr_skip_set *s, const sr_fault *f, int num_layers)
{
    if (num_layers < 1)
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

void sr_skip_add_fault(sr_skip_set *s, const sr_fault *f, int num_layers)
{
    if (f && (f->kind == SR_FK_PARTIAL_WEIGHT_APPLY || f->kind == SR_FK_PARTIAL_APPLY_ON_ERROR))
        add_layers(s, f, num_layers);
}

/* ack_before_apply's layers and count into (defer, requests). */
static void add_deferral(sr_skip_set *defer, int64_t *requests, const sr_fault *f, int num_layers)
{
    if (!f || f->kind != SR_FK_ACK_BEFORE_APPLY)
        return;
    add_layers(defer, f, num_layers);
    *requests = f->requests;
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
    if (f->kind == SR_FK_VERSION_REGRESS)
        e->pend_regress = 1;
    if (f->kind == SR_FK_PARTIAL_APPLY_ON_ERROR)
        e->pend_fail_partial = 1;
    add_deferral(&e->pend_defer, &e->pend_defer_requests, f, e->cfg.num_layers);
    if (f->kind == SR_FK_CHECKSUM_MISMATCH)
        e->bc.corrupt = 1;
    if (f->kind == SR_FK_PUBLISH_AFTER_FAILED_CHUNK)
        e->pend_publish_failed = 1;
    if (f->kind == SR_FK_GENERATE_FAILS_AFTER_UPDATE)
        e->pend_unservable = 1;
    pthread_mutex_unlock(&e->mu);
}

void sr_engine_take_pending(sr_engine *e, const sr_fault *f, sr_pending *p)
{
    pthread_mutex_lock(&e->mu);
    p->skip = e->pend_skip;
    p->not_bumped = e->pend_not_bumped;
    p->regress = e->pend_regress;
    p->fail_partial = e->pend_fail_partial;
    p->unservable = e->pend_unservable;
    p->defer = e->pend_defer;
    p->defer_requests = e->pend_defer_requests;
    memset(&e->pend_skip, 0, sizeof(e->pend_skip));
    memset(&e->pend_defer, 0, sizeof(e->pend_defer));
    e->pend_not_bumped = 0;
    e->pend_regress = 0;
    e->pend_fail_partial = 0;
    e->pend_unservable = 0;
    e->pend_defer_requests = 0;
    pthread_mutex_unlock(&e->mu);
    sr_skip_add_fault(&p->skip, f, e->cfg.num_layers);
    add_deferral(&p->defer, &p->defer_requests, f, e->cfg.num_layers);
    if (f && f->kind == SR_FK_VERSION_NOT_BUMPED)
        p->not_bumped = 1;
    if (f && f->kind == SR_FK_VERSION_REGRESS)
        p->regress = 1;
    if (f && f->kind == SR_FK_PARTIAL_APPLY_ON_ERROR)
        p->fail_partial = 1;
    if (f && f->kind == SR_FK_GENERATE_FAILS_AFTER_UPDATE)
        p->unservable = 1;
}

/* ---- the broadcast session ---- */

void sr_engine_bcast_begin_locked(sr_engine *e)
{
    memset(e->bc.received, 0, sr_weights_count(e->weights));
    e->bc.target = -1;
    e->bc.buckets = 0;
    e->bc.failed = 0;
    e->bc.fail_code = 0;
    e->bc.fail_msg[0] = '\0';
    e->bc.corrupt = 0;
    e->bc.heading = 0;
    e->bc.gen++;
    e->pend_publish_failed = 0;
}

void sr_engine_bcast_discard_locked(sr_engine *e)
{
    if (e->cfg.sync_dialect == SR_SYNC_DIALECT_SGLANG || (e->bc.streams == 0 && e->bc.heading == 0))
        return;
    memset(e->bc.busy, 0, sr_weights_count(e->weights));
    e->bc.streams = 0;
    e->bc.heading = 0;
    e->bc.gen++;
}

int sr_engine_writers_idle_locked(sr_engine *e, const char *call, sr_err *err)
{
    int pending = e->sync_state == SR_SS_ACTIVE && e->bc.buckets > 0;
    if (e->bc.open == 0 && !pending)
        return 0;
    return sr_err_set(err, SR_E_SYNC_CONCURRENT,
                      "%s: refused while %s; it would write weights under them (retry once the "
                      "update is answered)",
                      call,
                      e->bc.open ? "a bucket of a broadcast update is still arriving"
                                 : "a broadcast update holds buckets its finish has not committed");
}

int sr_engine_writers_idle(sr_engine *e, const char *call, sr_err *err)
{
    pthread_mutex_lock(&e->mu);
    int rc = sr_engine_writers_idle_locked(e, call, err);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int sr_engine_sync_step_locked(sr_engine *e, sr_sync_call c, const char *method, sr_err *err)
{
    sr_sync_dialect d = e->cfg.sync_dialect;
    const sr_sync_cell *cell = sr_sync_table_cell(d, e->sync_state, c);
    if (!cell)
        return sr_err_set(err, SR_E_INTERNAL, "no weight-sync table cell for call %d", (int)c);
    e->sync_state = cell->next;
    if (!cell->code)
        return 0;
    e->sync_order_errors++;
    return sr_err_set(err, cell->code, cell->msg, method ? method : sr_sync_call_method(d, c));
}

void sr_engine_bcast_spoil_locked(sr_engine *e, int code, const char *msg)
{
    if (e->sync_state != SR_SS_ACTIVE || e->bc.failed)
        return;
    e->bc.failed = 1;
    e->bc.fail_code = code;
    snprintf(e->bc.fail_msg, sizeof(e->bc.fail_msg), "%s", msg ? msg : "");
}

/* ---- the model ---- */

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

/* The initial checkpoint (content of the config's weight_version) back in the model, reported as
 * that version, or under the version held when keep_version. Called with apply held. */
static int load_initial_locked(sr_engine *e, int keep_version, const char *transport, sr_err *err)
{
    int64_t initial = e->cfg.weight_version;
    int rc = sr_weights_reset(e->weights, initial, err);
    if (!rc)
        sr_engine_publish_model(e, initial, keep_version, transport);
    return rc;
}

/* ---- ack_before_apply's deferral (apply held) ---- */

/* The deferred (new) bytes land; the fingerprints follow, the version stays. */
static int defer_apply_locked(sr_engine *e, sr_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < e->defer.n; i++)
        rc = sr_weights_write(e->weights, e->defer.t[i].index, e->defer.t[i].bytes, e->defer.t[i].n,
                              err);
    defer_free(e);
    pthread_mutex_lock(&e->mu);
    sr_weights_fingerprints(&e->global_fp, e->layer_fps, e->weights);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int sr_engine_defer_save_locked(sr_engine *e, const sr_pending *p, sr_err *err)
{
    int rc = atomic_load(&e->defer_left) > 0 ? defer_apply_locked(e, err) : 0;
    defer_free(e);
    size_t n = sr_weights_count(e->weights);
    if (rc || !p->defer.any)
        return rc;
    e->defer.t = calloc(n ? n : 1, sizeof(*e->defer.t));
    if (!e->defer.t)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the deferred apply");
    for (size_t i = 0; !rc && i < n; i++) {
        sr_weights_info m;
        rc = sr_weights_tensor(&m, e->weights, i, err);
        if (rc || m.layer < 0 || !sr_skip_has(&p->defer, m.layer))
            continue;
        sr_deferred_tensor *t = &e->defer.t[e->defer.n];
        t->bytes = malloc(m.nbytes ? m.nbytes : 1);
        if (!t->bytes)
            return sr_err_set(err, SR_E_NOMEM, "cannot save %zu bytes of %s", m.nbytes, m.name);
        memcpy(t->bytes, m.data, m.nbytes);
        t->index = i;
        t->n = m.nbytes;
        e->defer.n++;
    }
    return rc;
}

/* After the commit: the saved old bytes go back into the model, the new ones wait. */
static int defer_arm_locked(sr_engine *e, int64_t requests, sr_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < e->defer.n; i++) {
        sr_deferred_tensor *t = &e->defer.t[i];
        sr_weights_info m;
        void *fresh = malloc(t->n ? t->n : 1);
        rc = fresh ? sr_weights_tensor(&m, e->weights, t->index, err)
                   : sr_err_set(err, SR_E_NOMEM, "cannot keep %zu deferred bytes", t->n);
        if (!rc)
            memcpy(fresh, m.data, t->n);
        if (!rc)
            rc = sr_weights_write(e->weights, t->index, t->bytes, t->n, err);
        free(rc ? fresh : t->bytes);
        if (!rc)
            t->bytes = fresh;
    }
    if (rc)
        defer_free(e);
    else
        atomic_store(&e->defer_left, requests > 0 ? requests : 1);
    return rc;
}

void sr_engine_generate_answered(sr_engine *e)
{
    if (atomic_load(&e->defer_left) <= 0)
        return;
    pthread_mutex_lock(&e->apply);
    if (atomic_load(&e->defer_left) > 0 && atomic_fetch_sub(&e->defer_left, 1) == 1) {
        sr_err err = SR_ERR_INIT;
        defer_apply_locked(e, &err); /* writes of a saved tensor of its own size cannot fail */
    }
    pthread_mutex_unlock(&e->apply);
}

int sr_engine_publish_update(sr_engine *e, int64_t target, const sr_pending *p,
                             const char *transport, sr_err *err)
{
    if (p->regress)
        return load_initial_locked(e, 0, transport, err);
    if (p->fail_partial) {
        char left[96] = "";
        size_t used = 0;
        for (int l = 0; l < e->cfg.num_layers && used + 12 < sizeof(left); l++)
            if (sr_skip_has(&p->skip, l))
                used +=
                    (size_t)snprintf(left + used, sizeof(left) - used, "%s%d", used ? ", " : "", l);
        int64_t held = sr_engine_version(e);
        sr_engine_publish_model(e, target, 1, transport);
        return sr_err_set(err, SR_E_SYNC_FAILED,
                          "Failed to update weights to version %lld: an error after every tensor "
                          "but those of MoE layer slots %s was applied; the engine still reports "
                          "version %lld",
                          (long long)target, left, (long long)held);
    }
    int rc = p->defer.any && e->defer.n ? defer_arm_locked(e, p->defer_requests, err) : 0;
    if (!rc)
        sr_engine_publish_model(e, target, p->not_bumped, transport);
    /* generate_fails_after_update (vllm-project/vllm#57022, sgl-project/sglang#17107): the update
     * is acknowledged, and the engine can no longer serve from then on. */
    if (!rc && p->unservable)
        atomic_store(&e->unservable, 1);
    return rc;
}

int sr_engine_restart_weights(sr_engine *e, sr_err *err)
{
    pthread_mutex_lock(&e->apply);
    int rc = load_initial_locked(e, 1, "restart", err);
    pthread_mutex_unlock(&e->apply);
    return rc;
}

void sr_engine_discard_weights(sr_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->weights_discarded = 1;
    pthread_mutex_unlock(&e->mu);
}

int sr_engine_wake_weights(sr_engine *e, sr_err *err)
{
    pthread_mutex_lock(&e->apply);
    pthread_mutex_lock(&e->mu);
    int gone = e->weights_discarded;
    e->weights_discarded = 0;
    pthread_mutex_unlock(&e->mu);
    /* Woken without a reload: the initial checkpoint's bytes, under the version held. */
    int rc = gone ? load_initial_locked(e, 1, "wake_without_reload", err) : 0;
    pthread_mutex_unlock(&e->apply);
    return rc;
}

int sr_engine_unservable(sr_engine *e)
{
    return atomic_load(&e->unservable);
}

int sr_engine_restart_fresh(sr_engine *e, sr_err *err)
{
    pthread_mutex_lock(&e->apply);
    int rc = load_initial_locked(e, 0, "restart", err);
    pthread_mutex_lock(&e->mu);
    e->sync_state = SR_SS_UNINIT;
    free(e->init_info);
    free(e->init_local_dir);
    e->init_info = NULL;
    e->init_local_dir = NULL;
    e->version_label[0] = '\0'; /* a fresh process reports vLLM's "default" again */
    /* The local checkpoint of the process that died is no reference for the next delta. */
    e->stage_foreign = 1;
    sr_engine_bcast_begin_locked(e);
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_unlock(&e->apply);
    return rc;
}

int64_t sr_engine_version(sr_engine *e)
{
    pthread_mutex_lock(&e->mu);
    int64_t v = e->version;
    pthread_mutex_unlock(&e->mu);
    return v;
}

/* ---- the stage ---- */

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
