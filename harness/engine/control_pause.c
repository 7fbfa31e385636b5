/* The pause and sleep of the mock engine (engine_control.c dispatches here): the scheduler's pause
 * in its three modes, resume, the memory tags weights and kv_cache that sleep and wake separately,
 * and the rule that a generate runs only while nothing is paused or asleep (server_priv.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server_priv.h"

/* The answer to a pause or resume: vLLM's {"status": "paused"|"resumed"} in its control plane,
 * SGLang's (http_server.py pause_generation, continue_generation) in sglang's, empty in skyrl's. */
static enum MHD_Result ok_status(req *r, const char *status)
{
    char out[96];
    if (r->srv->cfg->sync_dialect == SR_SYNC_DIALECT_SGLANG) {
        snprintf(out, sizeof(out),
                 "{\"message\":\"Generation %s successfully.\",\"status\":\"ok\"}",
                 strcmp(status, "paused") == 0 ? "paused" : "continued");
        return sr_srv_ok(r, out);
    }
    if (r->srv->cfg->sync_dialect != SR_SYNC_DIALECT_VLLM)
        return sr_srv_ok(r, NULL);
    snprintf(out, sizeof(out), "{\"status\":\"%s\"}", status);
    return sr_srv_ok(r, out);
}

enum MHD_Result sr_srv_pause_done(req *r)
{
    return ok_status(r, "paused");
}

/* ---- pause / resume ---- */

static void freeze_or_abort_running_locked(sr_server *s, int keep)
{
    size_t n = 0;
    req **run = malloc((s->nheap ? s->nheap : 1) * sizeof(*run));
    if (!run)
        return;
    for (size_t i = 0; i < s->nheap; i++)
        if (s->heap[i]->state == RS_RUNNING)
            run[n++] = s->heap[i];
    int64_t now = sr_srv_now_ns();
    for (size_t i = 0; i < n; i++) {
        req *r = run[i];
        sr_srv_unschedule_locked(r);
        sr_srv_running_dec_locked(s);
        r->k_done = sr_srv_tokens_at(r, now);
        if (keep) {
            r->t_frozen_ns = now;
            r->state = RS_FROZEN;
            sr_srv_list_add_locked(&s->held, r, RL_HELD);
        } else {
            r->state = RS_ABORTING;
            sr_srv_resume_locked(r);
        }
    }
    free(run);
    if (keep)
        return;
    for (req *r = s->held.head, *next; r; r = next) {
        next = r->lnext;
        if (r->state != RS_FROZEN)
            continue;
        sr_srv_list_remove_locked(r);
        r->state = RS_ABORTING;
        sr_srv_resume_locked(r);
    }
}

static int id_matches(const sr_server *s, const req *r, const char *const *ids, size_t n)
{
    char own[SR_ENGINE_SESSION_MAX + 96];
    int named = r->ep == SR_EP_NATIVE || r->route;
    snprintf(own, sizeof(own), "%s-%lld", s->cfg->id, (long long)r->ordinal);
    for (size_t i = 0; i < n; i++)
        if ((named && strcmp(ids[i], own) == 0) || (r->xrid[0] && strcmp(ids[i], r->xrid) == 0))
            return 1;
    return 0;
}

size_t sr_srv_abort_ids(sr_server *s, const char *const *ids, size_t n)
{
    size_t k = 0, m = 0;
    pthread_mutex_lock(&s->mu);
    /* Matches first: taking one out of the heap reorders it. */
    req **run = malloc((s->nheap ? s->nheap : 1) * sizeof(*run));
    for (size_t i = 0; run && i < s->nheap; i++)
        if (s->heap[i]->state == RS_RUNNING && id_matches(s, s->heap[i], ids, n))
            run[m++] = s->heap[i];
    int64_t now = sr_srv_now_ns();
    for (size_t i = 0; i < m; i++, k++) {
        req *r = run[i];
        sr_srv_unschedule_locked(r);
        sr_srv_running_dec_locked(s);
        r->k_done = sr_srv_tokens_at(r, now);
        r->state = RS_ABORTING;
        sr_srv_resume_locked(r);
    }
    free(run);
    for (req *r = s->held.head, *next; r; r = next) {
        next = r->lnext;
        if ((r->state != RS_FROZEN && r->state != RS_HELD) || !id_matches(s, r, ids, n))
            continue;
        sr_srv_list_remove_locked(r);
        r->state = RS_ABORTING;
        sr_srv_resume_locked(r);
        k++;
    }
    pthread_mutex_unlock(&s->mu);
    return k;
}

/* The pause of the scheduler in `mode` (keep, abort or wait), for /pause and /sleep (vLLM pauses
 * the scheduler before it sleeps). MHD_YES once a wait-mode pause was suspended until nothing
 * runs; otherwise answers 200. Takes s->mu. */
static enum MHD_Result pause_scheduler(req *r, const char *mode)
{
    sr_server *s = r->srv;
    pthread_mutex_lock(&s->mu);
    s->paused = 1;
    s->pmode = mode;
    if (strcmp(mode, "wait") != 0)
        freeze_or_abort_running_locked(s, strcmp(mode, "keep") == 0);
    else if (s->running > 0) {
        r->state = RS_WAITING;
        if (sr_srv_suspend_locked(r))
            sr_srv_list_add_locked(&s->waiters, r, RL_WAITERS);
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    pthread_mutex_unlock(&s->mu);
    return ok_status(r, "paused");
}

enum MHD_Result sr_srv_pause_mode(req *r, const char *mode)
{
    return pause_scheduler(r, mode);
}

static const char *pause_mode(req *r)
{
    const char *m = sr_srv_arg(r, "mode");
    return !m || strcmp(m, "abort") == 0 ? "abort"
           : strcmp(m, "keep") == 0      ? "keep"
           : strcmp(m, "wait") == 0      ? "wait"
                                         : NULL;
}

enum MHD_Result sr_srv_pause(req *r)
{
    const char *mode = pause_mode(r);
    if (!mode)
        return sr_srv_bad_request(r, "mode must be keep, abort or wait");
    const char *cc = sr_srv_arg(r, "clear_cache");
    if (cc && strcmp(cc, "true") == 0)
        sr_engine_prefix_reset(r->srv->e);
    return pause_scheduler(r, mode);
}

/* Releases every held request (new ones and those frozen in flight) once the server is neither
 * paused nor has a memory tag asleep: a generate never runs on weights or a KV cache that sleep.
 * Called with s->mu held. */
static void release_held_locked(sr_server *s)
{
    if (s->paused || s->asleep)
        return;
    int64_t now = sr_srv_now_ns();
    while (s->held.head) {
        req *h = s->held.head;
        sr_srv_list_remove_locked(h);
        if (h->state == RS_FROZEN)
            h->t_start_ns += now - h->t_frozen_ns;
        h->state = RS_RESUMING;
        sr_srv_resume_locked(h);
    }
}

enum MHD_Result sr_srv_resume(req *r)
{
    sr_server *s = r->srv;
    pthread_mutex_lock(&s->mu);
    s->paused = 0;
    s->pmode = NULL;
    release_held_locked(s);
    pthread_mutex_unlock(&s->mu);
    return ok_status(r, "resumed");
}

/* ---- sleep and wake: the memory tags weights and kv_cache ---- */

static enum MHD_Result add_tag(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    unsigned *mask = cls;
    (void)kind;
    if (strcmp(key, "tags") == 0 && value)
        *mask |= strcmp(value, "weights") == 0    ? SR_SLEEP_WEIGHTS
                 : strcmp(value, "kv_cache") == 0 ? SR_SLEEP_KV_CACHE
                                                  : 0;
    return MHD_YES;
}

/* The tags named by the query (?tags=a&tags=b, each already checked), 0 when none is. */
static unsigned query_tags(req *r)
{
    unsigned mask = 0;
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_tag, &mask);
    return mask;
}

/* POST /sleep?level=0|1|2&tags=..&mode=..: as vLLM's EngineCore.sleep, the scheduler pauses in
 * `mode` (default abort), then the tags sleep (given tags win over the level; level 0 sleeps
 * none, 1 and 2 both); level >= 1 also clears the prefix cache. */
enum MHD_Result sr_srv_sleep(req *r)
{
    sr_server *s = r->srv;
    const char *lv = sr_srv_arg(r, "level");
    int64_t level = lv ? strtoll(lv, NULL, 10) : 1;
    unsigned tags = query_tags(r);
    const char *mode = pause_mode(r);
    if (!mode)
        return sr_srv_bad_request(r, "mode must be keep, abort or wait");
    if (!tags && level >= 1)
        tags = SR_SLEEP_ALL;
    if (level >= 1)
        sr_engine_prefix_reset(s->e);
    /* Level 2 discards the weights (vLLM's Worker.sleep(level=2) backs up buffers only). */
    if (level >= 2 && (tags & SR_SLEEP_WEIGHTS))
        sr_engine_discard_weights(s->e);
    pthread_mutex_lock(&s->mu);
    s->asleep |= tags;
    s->sleep_level = level;
    pthread_mutex_unlock(&s->mu);
    return pause_scheduler(r, mode);
}

/* Wakes `tags`; with `resume` the scheduler resumes too (vLLM's wake_up always resumes it;
 * SkyRL's skyrl_wake_for_weight_sync does not). Held requests run once nothing sleeps. */
static void wake_tags(sr_server *s, unsigned tags, int resume)
{
    if (tags & SR_SLEEP_WEIGHTS) {
        sr_err err = SR_ERR_INIT;
        sr_engine_wake_weights(s->e, &err); /* rewriting the model's own tensors cannot fail */
    }
    pthread_mutex_lock(&s->mu);
    s->asleep &= ~tags;
    if (resume) {
        s->paused = 0;
        s->pmode = NULL;
    }
    release_held_locked(s);
    pthread_mutex_unlock(&s->mu);
}

void sr_srv_memory(sr_server *s, unsigned tags, int release)
{
    if (!release) {
        wake_tags(s, tags, 0);
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->asleep |= tags;
    freeze_or_abort_running_locked(s, 1);
    pthread_mutex_unlock(&s->mu);
}

enum MHD_Result sr_srv_wake_up(req *r)
{
    unsigned tags = query_tags(r);
    wake_tags(r->srv, tags ? tags : SR_SLEEP_ALL, 1);
    return sr_srv_ok(r, NULL);
}

/* The kwargs.tags of skyrl_wake_for_weight_sync: an array of "weights" / "kv_cache" (absent or
 * null: every tag). -1 for anything else. */
static int rpc_tags(const cJSON *kw, unsigned *mask)
{
    const cJSON *t = kw ? cJSON_GetObjectItemCaseSensitive(kw, "tags") : NULL;
    *mask = 0;
    if (!t || cJSON_IsNull(t)) {
        *mask = SR_SLEEP_ALL;
        return 0;
    }
    if (!cJSON_IsArray(t))
        return -1;
    const cJSON *x;
    cJSON_ArrayForEach(x, t)
    {
        if (!cJSON_IsString(x))
            return -1;
        unsigned bit = strcmp(x->valuestring, "weights") == 0    ? SR_SLEEP_WEIGHTS
                       : strcmp(x->valuestring, "kv_cache") == 0 ? SR_SLEEP_KV_CACHE
                                                                 : 0;
        if (!bit)
            return -1;
        *mask |= bit;
    }
    return 0;
}

enum MHD_Result sr_srv_is_sleeping(req *r)
{
    sr_server *s = r->srv;
    pthread_mutex_lock(&s->mu);
    int sleeping = s->paused || s->asleep;
    pthread_mutex_unlock(&s->mu);
    return sr_srv_ok(r, sleeping ? "{\"is_sleeping\":true}" : "{\"is_sleeping\":false}");
}

enum MHD_Result sr_srv_rpc_sleep(req *r, const cJSON *kw)
{
    /* SkyRL's worker extension sleeps the allocator only (both tags; offload_kv says whether the
     * KV cache is kept on the CPU, which the mock's cache does not need): the scheduler is not
     * paused, the caller holds its own keep-mode pause. */
    const cJSON *ok = kw ? cJSON_GetObjectItemCaseSensitive(kw, "offload_kv") : NULL;
    if (ok && !cJSON_IsBool(ok))
        return sr_srv_bad_request(
            r, "skyrl_sleep_for_weight_sync kwargs.offload_kv must be a boolean");
    pthread_mutex_lock(&r->srv->mu);
    r->srv->asleep = SR_SLEEP_ALL;
    pthread_mutex_unlock(&r->srv->mu);
    return sr_srv_ok(r, "{\"results\":[null]}");
}

enum MHD_Result sr_srv_rpc_wake(req *r, const cJSON *kw)
{
    unsigned tags;
    if (rpc_tags(kw, &tags))
        return sr_srv_bad_request(
            r, "skyrl_wake_for_weight_sync kwargs.tags must be an array of \"weights\" "
               "and \"kv_cache\"");
    wake_tags(r->srv, tags, 0);
    return sr_srv_ok(r, "{\"results\":[null]}");
}
