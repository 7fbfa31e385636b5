/* The delta transport of the mock engine: the receiver that patches the stage from a sync_dir
 * (POST /fetch_weights) and the commit of what it fetched (POST /update_weights with a
 * sync_dir); engine.h describes both. The stage and the commit are engine_state.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "engine_state.h"
#include "sr_buf.h"
#include "sr_clock.h"
#include "sr_file.h"

/* The receiver's state lives in the init info's local_checkpoint_dir, or else in
 * {sync_dir}/receiver-<engine id> (the id made file-safe). */
#define RX_DIR_MAX SR_ENGINE_PATH_MAX

/* ---- where the receiver may write ---- */

/*
 * The canonical form of `path` into out[RX_DIR_MAX + 1]: absolute (relative to the working
 * directory), without symlinks, "." or "..". The longest prefix that exists is resolved with
 * realpath; the components after it do not exist, so they cannot be links, but they must be
 * plain names. -1 when the path cannot be resolved that way.
 */
static int canonical(char *out, const char *path)
{
    char head[2 * RX_DIR_MAX + 2], cwd[RX_DIR_MAX + 1];
    int n = path[0] == '/'
                ? snprintf(head, sizeof(head), "%s", path)
                : snprintf(head, sizeof(head), "%s/%s", getcwd(cwd, sizeof(cwd)) ? cwd : "", path);
    if (n < 0 || (size_t)n >= sizeof(head) || head[0] != '/')
        return -1;
    size_t keep = (size_t)n; /* head[keep..] of the full path is the part that does not exist */
    char full[sizeof(head)];
    memcpy(full, head, (size_t)n + 1);
    for (;;) {
        while (keep > 1 && head[keep - 1] == '/')
            head[--keep] = '\0';
        char *r = realpath(head, NULL);
        if (r) {
            const char *rest = full + keep;
            while (*rest == '/')
                rest++;
            int m = snprintf(out, RX_DIR_MAX + 1, "%s%s%s", r, *rest && strcmp(r, "/") ? "/" : "",
                             rest);
            free(r);
            return m > 0 && m <= RX_DIR_MAX ? 0 : -1;
        }
        char *sl = strrchr(head, '/');
        if (errno != ENOENT || !sl || !strcmp(sl, "/.") || !strcmp(sl, "/.."))
            return -1;
        keep = (size_t)(sl - head);
        if (!keep)
            keep = 1, head[1] = '\0';
        else
            *sl = '\0';
    }
}

/* 1 when the canonical path `p` is the folder `root` (canonical) or inside it. */
static int is_inside(const char *p, const char *root)
{
    size_t n = strlen(root);
    if (n == 1)
        return 1; /* "/" */
    return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

int sr_engine_confine(char *out, sr_engine *e, const char *path, const char *what, sr_err *err)
{
    const sr_engine_config *c = &e->cfg;
    if (strlen(path) > RX_DIR_MAX)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s is longer than %d bytes", what, RX_DIR_MAX);
    if (canonical(out, path))
        return sr_err_set(err, SR_E_ENGINE_FORBIDDEN_PATH,
                          "%s '%.300s' cannot be resolved to a folder inside server.sync_dirs",
                          what, path);
    for (int i = 0; i < c->n_sync_dirs; i++) {
        char root[RX_DIR_MAX + 1];
        if (!canonical(root, c->sync_dirs[i]) && is_inside(out, root))
            return 0;
    }
    return sr_err_set(err, SR_E_ENGINE_FORBIDDEN_PATH,
                      "%s '%.300s' (%.300s) is outside the folders this engine may use "
                      "(server.sync_dirs%s)",
                      what, path, out, c->n_sync_dirs ? "" : " names none");
}

/* ---- the delta receiver ---- */

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

/*
 * The reference receiver (SkyRL's DeltaWeightTransferEngine, skyrl/backends/skyrl_train/
 * weight_sync/delta_engine.py) exists only after init_weight_transfer_engine: fetch_weights and
 * the delta update before it raise "has not been initialized". Refused as sync.protocol_order.
 */
static int require_init(sr_engine *e, const char *call, sr_err *err)
{
    pthread_mutex_lock(&e->mu);
    int uninit = e->sync_state == SR_SS_UNINIT;
    e->sync_order_errors += uninit;
    pthread_mutex_unlock(&e->mu);
    if (!uninit)
        return 0;
    return sr_err_set(err, SR_E_SYNC_ORDER,
                      "DeltaWeightTransferEngine has not been initialized (%s before "
                      "init_weight_transfer_engine)",
                      call);
}

/*
 * The folder of the receiver's state into out[RX_DIR_MAX + 128]: the init info's
 * local_checkpoint_dir when it named one (confined like a sync_dir), else
 * {sync_dir}/receiver-<engine id>.
 */
static int rx_state_dir(char *out, sr_engine *e, const char *sync_dir, sr_err *err)
{
    pthread_mutex_lock(&e->mu);
    char *local = e->init_local_dir ? strdup(e->init_local_dir) : NULL;
    int missing = e->init_local_dir && !local;
    pthread_mutex_unlock(&e->mu);
    if (missing)
        return sr_err_set(err, SR_E_NOMEM, "cannot copy the local_checkpoint_dir");
    if (local) {
        int rc = sr_engine_confine(out, e, local, "local_checkpoint_dir", err);
        if (rc)
            sr_err_prefix(err, "init_info.local_checkpoint_dir: ");
        free(local);
        return rc;
    }
    int n = snprintf(out, RX_DIR_MAX + 128, "%s/receiver-", sync_dir);
    for (const char *p = e->cfg.id; *p && (size_t)n + 1 < RX_DIR_MAX + 128; p++, n++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
        out[n] = ok ? c : '_';
    }
    out[n] = '\0';
    return 0;
}

/* A fresh receiver for sync_dir with its state in dir. It does not know which version the stage
 * holds, so its first fetch resets the stage; the folder is not written here: engines of one node
 * may share it (SkyRL's default), and another engine's state must survive this one's start. */
static int rx_create(sr_engine *e, const char *sync_dir, const char *dir, sr_err *err)
{
    sr_delta_receiver_free(e->rx);
    e->rx = NULL;
    free(e->rx_sync_dir);
    free(e->rx_state_dir);
    e->rx_sync_dir = strdup(sync_dir);
    e->rx_state_dir = strdup(dir);
    if (!e->rx_sync_dir || !e->rx_state_dir)
        return sr_err_set(err, SR_E_NOMEM, "cannot copy the sync_dir");
    sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
    o.max_workers = e->st.max_workers;
    o.reset = stage_reset;
    o.reset_ctx = e;
    int rc = sr_delta_receiver_new(&e->rx, dir, e->stage_view, sr_weights_count(e->stage), NULL, 0,
                                   &o, err);
    return rc;
}

/* Called with apply held; sync_dir is canonical (confine). */
static int rx_ensure(sr_engine *e, const char *sync_dir, sr_err *err)
{
    char dir[RX_DIR_MAX + 128];
    int rc = rx_state_dir(dir, e, sync_dir, err);
    if (!rc)
        rc = sr_engine_stage_ensure(e, err);
    if (rc)
        return rc;
    if (!e->rx || strcmp(e->rx_sync_dir, sync_dir) != 0 || strcmp(e->rx_state_dir, dir) != 0)
        rc = rx_create(e, sync_dir, dir, err);
    else if (e->stage_foreign)
        sr_delta_receiver_forget(e->rx);
    if (!rc)
        e->stage_foreign = 0;
    return rc;
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
    int64_t local = sr_delta_receiver_local_version(e->rx);
    /* The fetch will reset the stage when the folder's state is unusable or the stage's version
     * is unknown or past the folder's: reset it now so the flipped bit survives. */
    if (!rc && (!exists || s.write_in_progress || local < 0 || local > s.version)) {
        rc = sr_delta_receiver_reset_local(e->rx, err);
        local = 0;
    }
    s.version = local;
    char path[RX_DIR_MAX + 64];
    sr_buf text = SR_BUF_INIT;
    snprintf(path, sizeof(path), "%s/delta-%08lld/manifest.json", sync_dir,
             (long long)s.version + 1);
    sr_delta_manifest *m = NULL;
    /* Never blocks: a FIFO planted in the sync folder is io.not_regular_file. */
    if (!rc)
        rc = sr_file_read(&text, path, SR_DELTA_MANIFEST_MAX, err);
    if (!rc)
        rc = sr_delta_manifest_parse(&m, text.data, text.len, path, err);
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
    sr_buf_release(&text);
    return rc;
}

int sr_engine_fetch(sr_engine *e, int64_t target, const char *sync_dir, const sr_fault *f,
                    int64_t *fetched, sr_err *err)
{
    if (target < 1 || target > SR_WEIGHTS_MAX_VERSION || !sync_dir || !*sync_dir)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "fetch_weights needs target_version in 1..%d and a sync_dir",
                          SR_WEIGHTS_MAX_VERSION);
    char dir[RX_DIR_MAX + 1];
    int rc = sr_engine_confine(dir, e, sync_dir, "sync_dir", err);
    if (!rc)
        rc = require_init(e, "fetch_weights", err);
    if (rc)
        return rc;
    sync_dir = dir;
    int corrupt = f && f->kind == SR_FK_CHECKSUM_MISMATCH;
    if (!corrupt)
        sr_engine_note_fault(e, f);
    sr_delta_fetch_result fr;
    memset(&fr, 0, sizeof(fr));
    pthread_mutex_lock(&e->apply);
    double t0 = sr_clock_ms();
    rc = sr_engine_writers_idle(e, "fetch_weights", err);
    if (!rc)
        rc = rx_ensure(e, sync_dir, err);
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

int sr_engine_update_delta(sr_engine *e, int64_t target, const char *sync_dir, const sr_fault *f,
                           int64_t *version, sr_err *err)
{
    if (target < 1 || target > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "target version %lld is outside 1..%d",
                          (long long)target, SR_WEIGHTS_MAX_VERSION);
    char dir[RX_DIR_MAX + 1];
    int rc = sr_engine_confine(dir, e, sync_dir, "sync_dir", err);
    if (!rc)
        rc = require_init(e, "update_weights", err);
    if (rc)
        return rc;
    sync_dir = dir;
    sr_pending pend;
    sr_engine_take_pending(e, f, &pend);
    *version = sr_engine_version(e);
    if (f && f->kind == SR_FK_CHECKSUM_MISMATCH)
        return sr_err_set(err, SR_E_DELTA_CHECKSUM,
                          "Checksum mismatch while loading version %lld from the local checkpoint; "
                          "the engine stays on version %lld",
                          (long long)target, (long long)*version);
    pthread_mutex_lock(&e->apply);
    rc = sr_engine_writers_idle(e, "update_weights", err);
    if (!rc && (!e->rx || strcmp(e->rx_sync_dir, sync_dir) != 0))
        rc = sr_err_set(
            err, SR_E_DELTA_VERSION,
            "update_weights: nothing was fetched from sync_dir %s (fetch_weights first)", sync_dir);
    /* A bucket or a disk load wrote the stage after the fetch: committing it would label their
     * bytes with this delta version. */
    if (!rc && e->stage_foreign)
        rc = sr_err_set(err, SR_E_DELTA_VERSION,
                        "update_weights: a broadcast bucket or a disk load wrote the staged "
                        "weights after the last fetch_weights; fetch version %lld again first",
                        (long long)target);
    if (!rc)
        rc = sr_delta_receiver_check_ready(e->rx, target, err);
    if (!rc)
        rc = sr_engine_defer_save_locked(e, &pend, err);
    if (!rc)
        rc = sr_engine_commit_locked(e, NULL, &pend.skip, err);
    if (!rc)
        rc = sr_engine_publish_update(e, target, &pend, "delta", err);
    pthread_mutex_unlock(&e->apply);
    *version = sr_engine_version(e);
    return rc;
}
