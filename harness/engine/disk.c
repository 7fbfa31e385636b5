/* The disk transport of the mock engine: a safetensors checkpoint folder read into the stage and
 * committed (SGLang's /update_weights_from_disk, data plane only); engine.h describes it. The
 * stage and the commit are engine_state.c's, as for the delta and broadcast transports. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "engine_state.h"
#include "sr_clock.h"
#include "sr_safetensors.h"

/* The checkpoint's tensors against the stage's: map[k] = stage index of checkpoint tensor k. */
static int match_tensors(size_t *map, sr_engine *e, const sr_st_checkpoint *c, sr_err *err)
{
    size_t n = sr_weights_count(e->stage);
    for (size_t i = 0; i < n; i++) {
        sr_weights_info w;
        int rc = sr_weights_tensor(&w, e->stage, i, err);
        if (rc)
            return rc;
        int64_t k = sr_st_checkpoint_find(c, w.name);
        if (k < 0)
            return sr_err_set(err, SR_E_ST_MISSING,
                              "update_weights_from_disk: the checkpoint lacks tensor '%s'", w.name);
        sr_st_info x;
        rc = sr_st_checkpoint_tensor(&x, c, (size_t)k, err);
        if (rc)
            return rc;
        if (x.t->dtype != sr_st_dtype_of(w.dtype) || x.t->ndim != 2 ||
            x.t->shape[0] != w.shape[0] || x.t->shape[1] != w.shape[1])
            return sr_err_set(err, SR_E_ST_MISMATCH,
                              "update_weights_from_disk: tensor '%s' is %s [%lld, %lld] here, the "
                              "checkpoint has %s with %d dims [%lld, ...]",
                              w.name, sr_st_dtype_name(sr_st_dtype_of(w.dtype)),
                              (long long)w.shape[0], (long long)w.shape[1],
                              sr_st_dtype_name(x.t->dtype), x.t->ndim,
                              (long long)(x.t->ndim ? x.t->shape[0] : 0));
        map[k] = i;
    }
    for (size_t k = 0; k < sr_st_checkpoint_count(c); k++) {
        sr_st_info x;
        size_t i;
        int rc = sr_st_checkpoint_tensor(&x, c, k, err);
        if (!rc && sr_weights_find(&i, e->stage, x.t->name, NULL))
            return sr_err_set(err, SR_E_ST_EXTRA,
                              "update_weights_from_disk: the checkpoint holds tensor '%.200s', "
                              "which this engine does not",
                              x.t->name);
        if (rc)
            return rc;
    }
    return 0;
}

/* The version to report: `target`, or the checkpoint's syncroll_version when target is -1; both
 * given must agree. */
static int pick_version(int64_t *v, int64_t target, const sr_st_checkpoint *c, sr_err *err)
{
    const char *mv = sr_st_checkpoint_meta(c, "syncroll_version");
    int64_t m = -1;
    if (mv) {
        char *end;
        errno = 0;
        long long x = strtoll(mv, &end, 10);
        if (errno || end == mv || *end || x < 0 || x > SR_WEIGHTS_MAX_VERSION)
            return sr_err_set(err, SR_E_ST_METADATA,
                              "update_weights_from_disk: syncroll_version '%.40s' is not a "
                              "version in 0..%d",
                              mv, SR_WEIGHTS_MAX_VERSION);
        m = x;
    }
    if (target >= 0 && m >= 0 && m != target)
        return sr_err_set(err, SR_E_ST_MISMATCH,
                          "update_weights_from_disk: the checkpoint is version %lld, the request "
                          "names %lld",
                          (long long)m, (long long)target);
    *v = target >= 0 ? target : m;
    if (*v < 0)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "update_weights_from_disk: no version given and the checkpoint names "
                          "none (__metadata__.syncroll_version)");
    return 0;
}

typedef struct load_ctx {
    sr_engine *e;
    const size_t *map;
} load_ctx;

static int dest_stage(void *ctx, size_t k, const sr_st_info *x, void **dst, sr_err *err)
{
    const load_ctx *l = ctx;
    const sr_delta_tensor *s = &l->e->stage_view[l->map[k]];
    if (s->nbytes != x->nbytes)
        return sr_err_set(err, SR_E_INTERNAL, "tensor '%s': %zu bytes in the stage, %zu on disk",
                          s->name, s->nbytes, x->nbytes);
    *dst = s->data;
    return 0;
}

/* Reads the checkpoint into the stage and commits it. Called with apply held. */
static int load_locked(sr_engine *e, const sr_st_checkpoint *c, int64_t v, sr_pending *pend,
                       sr_err *err)
{
    int rc = sr_engine_writers_idle(e, "update_weights_from_disk", err);
    if (!rc)
        rc = sr_engine_stage_ensure(e, err);
    size_t n = sr_st_checkpoint_count(c);
    size_t *map = rc ? NULL : calloc(n ? n : 1, sizeof(*map));
    if (!rc && !map)
        rc = sr_err_set(err, SR_E_NOMEM, "no memory for %zu tensors", n);
    if (!rc)
        rc = match_tensors(map, e, c, err);
    sr_st_read_stats rs = {0, 0, 0};
    double t0 = sr_clock_ms();
    if (!rc) {
        /* the stage now holds bytes no receiver knows: the delta receiver must reset */
        e->stage_pristine = 0;
        e->stage_foreign = 1;
        int cap = e->st.max_workers > 0 ? e->st.max_workers : 1;
        int workers = n < (size_t)cap ? (int)(n ? n : 1) : cap;
        load_ctx l = {e, map};
        rc = sr_st_checkpoint_read((sr_st_checkpoint *)c, workers, dest_stage, &l, &rs, err);
    }
    pthread_mutex_lock(&e->mu);
    e->st.fetches++;
    e->st.fetch_failures += rc != 0;
    e->st.payloads = (int64_t)n;
    e->st.workers = rs.workers;
    e->st.threads = rs.workers;
    e->st.fetch_ms = sr_clock_ms() - t0;
    pthread_mutex_unlock(&e->mu);
    free(map);
    if (!rc)
        rc = sr_engine_defer_save_locked(e, pend, err);
    if (!rc)
        rc = sr_engine_commit_locked(e, NULL, &pend->skip, err);
    if (!rc)
        rc = sr_engine_publish_update(e, v, pend, "disk", err);
    return rc;
}

/* delete_checkpoint_after_load (areal-project/AReaL#710): the loader removes the checkpoint
 * folder it read, its files then itself, ignoring errors, as AReaL's rollout worker did with
 * shutil.rmtree(path, ignore_errors=True) when clear_checkpoint_after_load was left on. The folder
 * is opened without following a symlink and its entries are removed relative to it; a checkpoint
 * holds no subfolders. */
static void remove_checkpoint(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            unlinkat(dfd, de->d_name, 0);
    closedir(d);
    rmdir(dir);
}

int sr_engine_load_disk(sr_engine *e, const char *dir, int64_t target, const sr_fault *f,
                        int64_t *version, sr_err *err)
{
    *version = sr_engine_version(e);
    if (!dir || !*dir || target < -1 || target > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "update_weights_from_disk needs a model_path and a version in -1..%d",
                          SR_WEIGHTS_MAX_VERSION);
    sr_pending pend;
    sr_engine_take_pending(e, f, &pend);
    if (f && f->kind == SR_FK_CHECKSUM_MISMATCH)
        return sr_err_set(
            err, SR_E_DELTA_CHECKSUM,
            "Checksum mismatch while loading %.300s; the engine stays on version %lld", dir,
            (long long)*version);
    sr_st_checkpoint *c = NULL;
    int64_t v = -1;
    int rc = sr_st_checkpoint_open(&c, dir, err);
    if (!rc)
        rc = pick_version(&v, target, c, err);
    if (!rc) {
        pthread_mutex_lock(&e->apply);
        rc = load_locked(e, c, v, &pend, err);
        pthread_mutex_unlock(&e->apply);
    }
    sr_st_checkpoint_free(c);
    if (!rc && f && f->kind == SR_FK_DELETE_CHECKPOINT_AFTER_LOAD)
        remove_checkpoint(dir);
    if (rc)
        sr_err_prefix(err, "the engine stays on version %lld: ", (long long)sr_engine_version(e));
    *version = sr_engine_version(e);
    return rc;
}
