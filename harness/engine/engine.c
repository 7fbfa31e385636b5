#include "engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine_state.h"
#include "jsonw.h"
#include "sr_weights.h"

#define SESSION_SLOTS 8192 /* a power of two above SR_ENGINE_MAX_SESSIONS */
#define TOMBSTONE     ((char *)1)

struct session_slot {
    char *key; /* NULL: empty; TOMBSTONE: deleted */
    int64_t turns;
};

int sr_engine_new(sr_engine **out, const sr_engine_config *cfg, sr_err *err)
{
    *out = NULL;
    /* The config checked these against its own dialect; --dialect may have named another. */
    if (cfg->omit_prefix && cfg->dialect != SR_DIALECT_VLLM)
        return sr_err_set(err, SR_E_ENGINE_CONFIG,
                          "omit_prefix_routes needs the vllm dialect (vllm-project/vllm#57025), "
                          "not %s",
                          sr_dialect_name(cfg->dialect));
    if (cfg->mask_chunk && cfg->dialect != SR_DIALECT_SGLANG)
        return sr_err_set(err, SR_E_ENGINE_CONFIG,
                          "masked_padding needs the sglang dialect (sgl-project/sglang#36404), "
                          "not %s",
                          sr_dialect_name(cfg->dialect));
    sr_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate an engine");
    e->cfg = *cfg;
    e->cfg.faults = NULL; /* the caller's; e->faults holds a copy */
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->apply, NULL);
    int L = cfg->num_layers;
    sr_oracle_model m = sr_engine_config_model(&e->cfg);
    int rc = sr_oracle_new(&e->oracle, &m, err);
    sr_weights_spec ws = sr_engine_config_weights(&e->cfg);
    if (!rc)
        rc = sr_weights_new(&e->weights, &ws, cfg->weight_version, err);
    if (!rc)
        rc = sr_faults_new(&e->faults, cfg->faults, cfg->seed, err);
    if (!rc)
        rc = sr_engine_sync_init(e, err);
    e->layer_fps = calloc((size_t)L, sizeof(uint64_t));
    e->prev_layer_fps = calloc((size_t)L, sizeof(uint64_t));
    e->sessions = calloc(SESSION_SLOTS, sizeof(session_slot));
    if (!rc && (!e->layer_fps || !e->prev_layer_fps || !e->sessions))
        rc = sr_err_set(err, SR_E_NOMEM, "cannot allocate engine state");
    if (rc) {
        sr_engine_free(e);
        return rc;
    }
    sr_weights_fingerprints(&e->global_fp, e->layer_fps, e->weights);
    e->version = cfg->weight_version;
    *out = e;
    return 0;
}

static void sessions_clear(sr_engine *e)
{
    for (size_t i = 0; i < SESSION_SLOTS; i++) {
        if (e->sessions[i].key && e->sessions[i].key != TOMBSTONE)
            free(e->sessions[i].key);
        e->sessions[i].key = NULL;
    }
    e->n_sessions = e->n_used = 0;
}

void sr_engine_free(sr_engine *e)
{
    if (!e)
        return;
    if (e->sessions)
        sessions_clear(e);
    free(e->sessions);
    free(e->layer_fps);
    free(e->prev_layer_fps);
    free(e->init_info);
    free(e->init_local_dir);
    sr_engine_sync_release(e);
    sr_oracle_free(e->oracle);
    sr_weights_free(e->weights);
    sr_faults_free(e->faults);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->apply);
    free(e);
}

const sr_engine_config *sr_engine_cfg(const sr_engine *e)
{
    return &e->cfg;
}

const sr_oracle *sr_engine_oracle(const sr_engine *e)
{
    return e->oracle;
}

sr_faults *sr_engine_faults(sr_engine *e)
{
    return e->faults;
}

int sr_engine_weights_now(sr_engine *e, sr_gen_weights *cur, sr_gen_weights *prev, int *has_prev,
                          sr_err *err)
{
    size_t L = (size_t)e->cfg.num_layers;
    cur->layer_fps = malloc(L * sizeof(uint64_t));
    prev->layer_fps = malloc(L * sizeof(uint64_t));
    if (!cur->layer_fps || !prev->layer_fps) {
        sr_gen_weights_release(cur);
        sr_gen_weights_release(prev);
        return sr_err_set(err, SR_E_NOMEM, "cannot copy fingerprints");
    }
    pthread_mutex_lock(&e->mu);
    cur->version = e->version;
    cur->global_fp = e->global_fp;
    memcpy(cur->layer_fps, e->layer_fps, L * sizeof(uint64_t));
    prev->version = e->prev_version;
    prev->global_fp = e->prev_global_fp;
    memcpy(prev->layer_fps, e->prev_layer_fps, L * sizeof(uint64_t));
    *has_prev = e->has_prev;
    pthread_mutex_unlock(&e->mu);
    return 0;
}

/* FNV-1a: session ids are short strings chosen by the client. */
static size_t session_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (size_t)(h ^ (h >> 29));
}

/* The slot holding `key`, or the insertion slot (first tombstone or empty) when absent. */
static session_slot *session_find(sr_engine *e, const char *key, int *found)
{
    size_t mask = SESSION_SLOTS - 1, i = session_hash(key) & mask;
    session_slot *ins = NULL;
    for (size_t probe = 0; probe < SESSION_SLOTS; probe++, i = (i + 1) & mask) {
        session_slot *s = &e->sessions[i];
        if (!s->key) {
            *found = 0;
            return ins ? ins : s;
        }
        if (s->key == TOMBSTONE) {
            if (!ins)
                ins = s;
        } else if (strcmp(s->key, key) == 0) {
            *found = 1;
            return s;
        }
    }
    *found = 0;
    return ins;
}

int64_t sr_engine_session_turn(sr_engine *e, const char *session)
{
    if (!session || !*session)
        return 0;
    pthread_mutex_lock(&e->mu);
    int found;
    session_slot *s = session_find(e, session, &found);
    if (!found &&
        (e->n_sessions >= SR_ENGINE_MAX_SESSIONS || e->n_used >= SESSION_SLOTS * 7 / 8 || !s)) {
        sessions_clear(e);
        e->session_resets++;
        s = session_find(e, session, &found);
    }
    int64_t turn = 0;
    if (found) {
        turn = ++s->turns;
    } else {
        char *k = strndup(session, SR_ENGINE_SESSION_MAX);
        if (k) {
            if (!s->key)
                e->n_used++;
            s->key = k;
            s->turns = 1;
            e->n_sessions++;
            turn = 1;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return turn;
}

int sr_engine_session_finish(sr_engine *e, const char *session)
{
    if (!session || !*session)
        return 0;
    pthread_mutex_lock(&e->mu);
    int found;
    session_slot *s = session_find(e, session, &found);
    if (found) {
        free(s->key);
        s->key = TOMBSTONE;
        e->n_sessions--;
    }
    pthread_mutex_unlock(&e->mu);
    return found;
}

int64_t sr_engine_count(sr_engine *e, sr_endpoint ep)
{
    return atomic_fetch_add(&e->requests[ep], 1) + 1;
}

void sr_engine_add_clamped(sr_engine *e, int64_t n)
{
    atomic_fetch_add(&e->clamped, n);
}

void sr_engine_prefix_reset(sr_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->prefix_resets++;
    pthread_mutex_unlock(&e->mu);
}

void sr_engine_set_init_info(sr_engine *e, const char *json)
{
    char *copy = json ? strdup(json) : NULL, *dir = NULL;
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "local_checkpoint_dir");
    if (cJSON_IsString(d) && d->valuestring[0])
        dir = strdup(d->valuestring);
    cJSON_Delete(o);
    pthread_mutex_lock(&e->mu);
    free(e->init_info);
    e->init_info = copy;
    free(e->init_local_dir);
    e->init_local_dir = dir;
    pthread_mutex_unlock(&e->mu);
}

int sr_engine_sync_start(sr_engine *e, sr_err *err)
{
    pthread_mutex_lock(&e->mu);
    int rc = sr_engine_sync_step_locked(e, SR_SC_START, NULL, err);
    if (!rc) {
        e->sync_starts++;
        sr_engine_bcast_begin_locked(e);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int sr_engine_sync_call(sr_engine *e, sr_sync_call c, const char *method, sr_err *err)
{
    pthread_mutex_lock(&e->mu);
    int rc = sr_engine_sync_step_locked(e, c, method, err);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* Tensors of the layer slots a partial_weight_apply fault leaves stale, saved across a reset. */
typedef struct saved_tensor {
    size_t index;
    void *bytes;
    size_t n;
} saved_tensor;

static int reset_keeping(sr_engine *e, int64_t target, const sr_skip_set *skip, sr_err *err)
{
    size_t count = sr_weights_count(e->weights), nsaved = 0;
    saved_tensor *saved = calloc(count ? count : 1, sizeof(*saved));
    if (!saved)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the apply plan");
    int rc = 0;
    for (size_t i = 0; !rc && i < count; i++) {
        sr_weights_info info;
        rc = sr_weights_tensor(&info, e->weights, i, err);
        if (rc || info.layer < 0 || !sr_skip_has(skip, info.layer))
            continue;
        saved[nsaved].bytes = malloc(info.nbytes);
        if (!saved[nsaved].bytes) {
            rc = sr_err_set(err, SR_E_NOMEM, "cannot save %zu bytes", info.nbytes);
            break;
        }
        memcpy(saved[nsaved].bytes, info.data, info.nbytes);
        saved[nsaved].index = i;
        saved[nsaved++].n = info.nbytes;
    }
    if (!rc)
        rc = sr_weights_reset(e->weights, target, err);
    for (size_t i = 0; i < nsaved; i++) {
        if (!rc)
            rc = sr_weights_write(e->weights, saved[i].index, saved[i].bytes, saved[i].n, err);
        free(saved[i].bytes);
    }
    free(saved);
    return rc;
}

int sr_engine_apply_version(sr_engine *e, int64_t target, const sr_fault *f, int64_t *version,
                            sr_err *err)
{
    if (target < 0 || target > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "target version %lld is outside 0..%d",
                          (long long)target, SR_WEIGHTS_MAX_VERSION);
    sr_pending pend;
    sr_engine_take_pending(e, f, &pend);
    if (f && f->kind == SR_FK_CHECKSUM_MISMATCH) {
        *version = sr_engine_version(e);
        return sr_err_set(err, SR_E_DELTA_CHECKSUM,
                          "Checksum mismatch while applying version %lld; the engine stays on "
                          "version %lld",
                          (long long)target, (long long)*version);
    }
    pthread_mutex_lock(&e->apply);
    int rc = sr_engine_writers_idle(e, "update_weights", err);
    if (!rc)
        rc = sr_engine_defer_save_locked(e, &pend, err);
    if (!rc)
        rc = reset_keeping(e, target, &pend.skip, err);
    if (!rc)
        rc = sr_engine_publish_update(e, target, &pend, "synthetic", err);
    pthread_mutex_unlock(&e->apply);
    *version = sr_engine_version(e);
    return rc;
}

static int state_sync(sr_buf *b, sr_engine *e, sr_err *err)
{
    return sr_buf_printf(
        b, err,
        ",\"sync\":{\"active\":%s,\"starts\":%lld,\"finishes\":%lld,"
        "\"applies\":%lld,\"protocol_errors\":%lld,\"dialect\":\"%s\",\"state\":\"%s\","
        "\"buckets_in_flight\":%lld}",
        e->sync_state == SR_SS_ACTIVE ? "true" : "false", (long long)e->sync_starts,
        (long long)e->sync_finishes, (long long)e->sync_applies, (long long)e->sync_order_errors,
        sr_sync_dialect_name(e->cfg.sync_dialect), sr_sync_state_name(e->sync_state),
        (long long)(e->bc.streams + e->bc.heading));
}

/* The "apply" member: what the receiver and the last apply did. Called with mu held. */
static int state_apply(sr_buf *b, sr_engine *e, sr_err *err)
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

/* The model's tensors (?tensors=1). Takes apply, so it reads no half-written tensor. */
static int state_tensors(sr_buf *b, sr_engine *e, sr_err *err)
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
        /* dtype and shape too: what an outside trainer needs to write a bucket header. */
        if (!rc)
            rc = sr_buf_printf(b, err,
                               ",\"layer\":%d,\"dtype\":\"%s\",\"shape\":[%lld,%lld],"
                               "\"digest\":\"%016llx%016llx\"}",
                               t.layer, sr_dtype_name(t.dtype), (long long)t.shape[0],
                               (long long)t.shape[1], (unsigned long long)t.digest_hi,
                               (unsigned long long)t.digest_lo);
    }
    pthread_mutex_unlock(&e->apply);
    return rc ? rc : sr_buf_puts(b, "]", err);
}

static int state_locked(sr_buf *b, sr_engine *e, sr_err *err)
{
    int rc = sr_buf_printf(b, err,
                           ",\"weight_version\":%lld,\"weights_content_version\":%lld,"
                           "\"fingerprints\":{\"global\":",
                           (long long)e->version, (long long)sr_weights_version(e->weights));
    if (!rc)
        rc = sr_jw_hex64(b, e->global_fp, err);
    if (!rc)
        rc = sr_buf_puts(b, ",\"layers\":[", err);
    for (int i = 0; !rc && i < e->cfg.num_layers; i++) {
        if (i)
            rc = sr_buf_puts(b, ",", err);
        if (!rc)
            rc = sr_jw_hex64(b, e->layer_fps[i], err);
    }
    if (!rc)
        rc = sr_buf_printf(
            b, err, "]},\"prefix_cache_resets\":%lld,\"sessions\":%zu,\"session_resets\":%lld",
            (long long)e->prefix_resets, e->n_sessions, (long long)e->session_resets);
    if (!rc)
        rc = state_sync(b, e, err);
    if (!rc)
        rc = state_apply(b, e, err);
    if (!rc && e->init_info)
        rc = sr_buf_printf(b, err, ",\"init_info\":%s", e->init_info);
    return rc;
}

int sr_engine_state_json(sr_buf *b, sr_engine *e, const sr_engine_live *live, sr_err *err)
{
    int rc = sr_buf_puts(b, "{\"engine\":", err);
    if (!rc)
        rc = sr_jw_str(b, e->cfg.id, err);
    if (!rc)
        rc = sr_buf_printf(b, err, ",\"index\":%d,\"pid\":%ld,\"dialect\":\"%s\"", e->cfg.index,
                           (long)getpid(), sr_dialect_name(e->cfg.dialect));
    pthread_mutex_lock(&e->mu);
    if (!rc)
        rc = state_locked(b, e, err);
    pthread_mutex_unlock(&e->mu);
    if (!rc)
        rc = sr_buf_printf(
            b, err, ",\"sleeping\":%s,\"sleeping_tags\":[%s%s%s],\"sleep_level\":%lld",
            live->sleep_weights || live->sleep_kv_cache ? "true" : "false",
            live->sleep_weights ? "\"weights\"" : "",
            live->sleep_weights && live->sleep_kv_cache ? "," : "",
            live->sleep_kv_cache ? "\"kv_cache\"" : "", (long long)live->sleep_level);
    if (!rc)
        rc = sr_buf_printf(b, err,
                           ",\"connections\":{\"active\":%lld,\"max_active\":%lld,\"queued\":%lld,"
                           "\"max_queued\":%lld,\"queued_peak\":%lld,\"refused\":%lld}",
                           (long long)live->active, (long long)live->max_active,
                           (long long)live->queued, (long long)live->max_queued,
                           (long long)live->queued_peak, (long long)live->refused);
    if (!rc)
        rc = sr_buf_printf(b, err,
                           ",\"paused\":%s,\"pause_mode\":%s%s%s,\"inflight\":%lld,\"held\":%lld,"
                           "\"stalled\":%lld,\"clamped_logprobs\":%lld,\"requests\":{",
                           live->paused ? "true" : "false", live->pause_mode ? "\"" : "",
                           live->pause_mode ? live->pause_mode : "null",
                           live->pause_mode ? "\"" : "", (long long)live->inflight,
                           (long long)live->held, (long long)live->stalled,
                           (long long)atomic_load(&e->clamped));
    for (int i = 0; !rc && i < SR_EP_COUNT; i++)
        rc = sr_buf_printf(b, err, "%s\"%s\":%lld", i ? "," : "", sr_endpoint_name(i),
                           (long long)atomic_load(&e->requests[i]));
    if (!rc)
        rc = sr_buf_puts(b, "},\"faults\":", err);
    if (!rc)
        rc = sr_faults_state_json(b, e->faults, err);
    if (!rc && live->tensors)
        rc = state_tensors(b, e, err);
    return rc ? rc : sr_buf_puts(b, "}", err);
}
