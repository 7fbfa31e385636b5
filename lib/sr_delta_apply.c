#include "sr_delta_priv.h"
#include "sr_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>
#include <zstd.h>

/* Frames needing a larger window are refused: level <= 19 never does, and it bounds memory. */
#define WINDOW_LOG_MAX 23

struct sr_delta_receiver {
    char state_dir[4000];
    const sr_delta_tensor *local;
    size_t n;
    size_t *order;
    const sr_delta_tensor *base;
    size_t *base_of; /* base index of each local tensor */
    sr_delta_receiver_opts opts;
    /* The version the local tensors hold, -1 when unknown. The state file says what the folder
     * holds; receivers sharing a folder each track their own tensors here. */
    int64_t local_version;
};

/* One payload file of the version being applied. */
typedef struct pfile {
    const char *name;
    int fd;
    sr_delta_index index;
} pfile;

/* One record to apply. */
typedef struct ajob {
    const sr_delta_record *rec;
    const sr_delta_tensor *dst;
    int fd;
    const char *file;
    uint64_t offset;
} ajob;

typedef struct apply_ctx {
    ajob *jobs;
    size_t *by_size;
} apply_ctx;

typedef struct aworker {
    ZSTD_DCtx *dctx;
    unsigned char *scratch;
    XXH3_state_t *xxh;
    unsigned char *in;
    size_t in_cap;
} aworker;

/* ---- creation ---- */

static int map_base(sr_delta_receiver *rx, const sr_delta_tensor *base, size_t n_base, sr_err *err)
{
    size_t *border = NULL;
    int rc = sr_delta_set_index(&border, base, n_base, "base", err);
    if (rc)
        return rc;
    if (n_base != rx->n)
        rc = sr_err_set(err, SR_E_DELTA_TENSOR, "the base has %zu tensors, the local set %zu",
                        n_base, rx->n);
    rx->base_of = calloc(rx->n ? rx->n : 1, sizeof(size_t));
    if (!rc && !rx->base_of)
        rc = sr_err_set(err, SR_E_NOMEM, "cannot map the base");
    for (size_t i = 0; !rc && i < rx->n; i++) {
        int64_t b = sr_delta_set_find(border, base, n_base, rx->local[i].name);
        if (b < 0 || !sr_delta_same_layout(&base[b], &rx->local[i]))
            rc = sr_err_set_at(err, SR_E_DELTA_TENSOR, (int64_t)i,
                               "local tensor '%s' is missing from the base or differs from it",
                               rx->local[i].name);
        else
            rx->base_of[i] = (size_t)b;
    }
    free(border);
    return rc;
}

/*
 * A folder the receiver is given by path (its state folder, the sync_dir of a fetch), opened
 * following no link in any component (sr_path.h): the engine checks the canonical path against
 * its sync_dirs first, and a link swapped into an upper folder afterwards must not redirect it.
 */
static int open_given_dir(int *fd, const char *path, int create, sr_err *err)
{
    sr_err pe = SR_ERR_INIT;
    int rc = sr_path_open_dir(fd, path, create, NULL, &pe);
    if (!rc)
        return 0;
    return sr_err_set(err, rc == SR_E_SYMLINK ? SR_E_SYMLINK : SR_E_DELTA_IO, "%s", pe.msg);
}

int sr_delta_receiver_new(sr_delta_receiver **out, const char *state_dir,
                          const sr_delta_tensor *local, size_t n_local, const sr_delta_tensor *base,
                          size_t n_base, const sr_delta_receiver_opts *opts, sr_err *err)
{
    *out = NULL;
    sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
    if (opts)
        o = *opts;
    if (!state_dir || strlen(state_dir) >= 3900 || o.max_workers < 1 || (!base && !o.reset) ||
        o.lock_wait_ms < 0)
        return sr_err_set(err, SR_E_INVAL,
                          "receiver: bad state_dir, max_workers < 1, lock_wait_ms < 0, or neither "
                          "base nor reset");
    sr_delta_receiver *rx = calloc(1, sizeof(*rx));
    if (!rx)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a receiver");
    strcpy(rx->state_dir, state_dir);
    rx->local = local;
    rx->n = n_local;
    rx->opts = o;
    rx->local_version = -1;
    int rc = sr_delta_set_index(&rx->order, local, n_local, "local", err);
    if (!rc && base) {
        rx->base = base;
        rc = map_base(rx, base, n_base, err);
    }
    int dfd = -1;
    if (!rc)
        rc = open_given_dir(&dfd, state_dir, 1, err);
    if (dfd >= 0)
        close(dfd);
    if (rc) {
        sr_delta_receiver_free(rx);
        return rc;
    }
    *out = rx;
    return 0;
}

void sr_delta_receiver_free(sr_delta_receiver *rx)
{
    if (!rx)
        return;
    free(rx->order);
    free(rx->base_of);
    free(rx);
}

/* ---- state ---- */

/* Opens the state folder (created if missing; never through a symlink at its name). */
static int open_state_dir(int *dfd, const sr_delta_receiver *rx, sr_err *err)
{
    return open_given_dir(dfd, rx->state_dir, 1, err);
}

static int read_state(sr_delta_state *out, int *exists, int dfd, const sr_delta_receiver *rx,
                      sr_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/state.json", rx->state_dir);
    memset(out, 0, sizeof(*out));
    char *text;
    size_t len;
    int missing;
    int rc = sr_delta_read_file(&text, &len, &missing, dfd, "state.json", path, SR_DELTA_STATE_MAX,
                                SR_E_DELTA_STATE, err);
    *exists = !rc && !missing;
    if (!rc && !missing)
        rc = sr_delta_state_parse(out, text, len, path, err);
    free(text);
    return rc;
}

int sr_delta_receiver_state(sr_delta_state *out, int *exists, const sr_delta_receiver *rx,
                            sr_err *err)
{
    int dfd;
    memset(out, 0, sizeof(*out));
    *exists = 0;
    int rc = open_state_dir(&dfd, rx, err);
    if (rc)
        return rc;
    rc = read_state(out, exists, dfd, rx, err);
    close(dfd);
    return rc;
}

static int write_state(const sr_delta_receiver *rx, int dfd, int64_t version, int in_progress,
                       int64_t target, sr_err *err)
{
    sr_delta_state s = {version, in_progress, target};
    char text[256];
    size_t n = sr_delta_state_render(text, sizeof(text), &s);
    return sr_delta_write_file(dfd, rx->state_dir, "state.json", text, n, rx->opts.fsync, err);
}

/* Opens the state folder and takes its lock: *dfd and *lfd to close (lock last). */
static int lock_folder(int *dfd, int *lfd, const sr_delta_receiver *rx, sr_err *err)
{
    *lfd = -1;
    int rc = open_state_dir(dfd, rx, err);
    char path[4096];
    snprintf(path, sizeof(path), "%s/lock", rx->state_dir);
    /* The reference blocks on this lock: the engines of one node share the folder. */
    if (!rc)
        rc = sr_delta_lock(lfd, *dfd, "lock", path, rx->opts.lock_wait_ms, err);
    if (rc && *dfd >= 0) {
        close(*dfd);
        *dfd = -1;
    }
    return rc;
}

static void unlock_folder(int dfd, int lfd)
{
    if (lfd >= 0)
        close(lfd);
    if (dfd >= 0)
        close(dfd);
}

static int copy_base_job(void *ctx, void *w, size_t k, sr_err *err)
{
    const sr_delta_receiver *rx = ctx;
    const sr_delta_tensor *dst = &rx->local[k];
    if (dst->nbytes)
        memcpy(dst->data, rx->base[rx->base_of[k]].data, dst->nbytes);
    return 0;
}

static int reset_local(sr_delta_receiver *rx, sr_err *err)
{
    rx->local_version = -1;
    int rc;
    if (rx->opts.reset) {
        sr_err e = SR_ERR_INIT;
        rc = rx->opts.reset(rx->opts.reset_ctx, &e);
        if (rc && err)
            *err = e;
    } else {
        sr_delta_team t = {NULL, NULL, copy_base_job, rx};
        int threads;
        rc = sr_delta_run(&threads, rx->n, rx->opts.max_workers, &t, err);
    }
    if (!rc)
        rx->local_version = 0;
    return rc;
}

int sr_delta_receiver_reset(sr_delta_receiver *rx, sr_err *err)
{
    int dfd, lfd;
    int rc = lock_folder(&dfd, &lfd, rx, err);
    if (rc)
        return rc;
    rc = reset_local(rx, err);
    rc = rc ? rc : write_state(rx, dfd, 0, 0, 0, err);
    unlock_folder(dfd, lfd);
    return rc;
}

int sr_delta_receiver_reset_local(sr_delta_receiver *rx, sr_err *err)
{
    return reset_local(rx, err);
}

void sr_delta_receiver_forget(sr_delta_receiver *rx)
{
    rx->local_version = -1;
}

int64_t sr_delta_receiver_local_version(const sr_delta_receiver *rx)
{
    return rx->local_version;
}

int sr_delta_receiver_check_ready(const sr_delta_receiver *rx, int64_t target, sr_err *err)
{
    sr_delta_state s;
    int exists;
    int rc = sr_delta_receiver_state(&s, &exists, rx, err);
    if (rc)
        return rc;
    if (!exists || s.write_in_progress || s.version != target)
        return sr_err_set(
            err, SR_E_DELTA_VERSION, "receiver not ready for version %lld: %s (version %lld)",
            (long long)target,
            !exists ? "no state" : (s.write_in_progress ? "a write is in progress" : "at"),
            (long long)s.version);
    if (rx->local_version != target)
        return sr_err_set(err, SR_E_DELTA_VERSION,
                          "receiver not ready for version %lld: the folder holds it, this "
                          "receiver's tensors are at %lld (fetch first)",
                          (long long)target, (long long)rx->local_version);
    return 0;
}

/* ---- applying one payload ---- */

static void *aworker_init(void *ctx)
{
    aworker *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->dctx = ZSTD_createDCtx();
    w->scratch = malloc(SR_DELTA_CHUNK);
    w->xxh = XXH3_createState();
    if (!w->dctx || !w->scratch || !w->xxh ||
        ZSTD_isError(ZSTD_DCtx_setParameter(w->dctx, ZSTD_d_windowLogMax, WINDOW_LOG_MAX))) {
        ZSTD_freeDCtx(w->dctx);
        free(w->scratch);
        XXH3_freeState(w->xxh);
        free(w);
        return NULL;
    }
    return w;
}

static void aworker_fini(void *ctx, void *wp)
{
    aworker *w = wp;
    if (!w)
        return;
    ZSTD_freeDCtx(w->dctx);
    free(w->scratch);
    XXH3_freeState(w->xxh);
    free(w->in);
    free(w);
}

static int read_blob(aworker *w, const ajob *j, sr_err *err)
{
    size_t n = (size_t)j->rec->compressed_num_bytes;
    if (n > w->in_cap) {
        unsigned char *b = realloc(w->in, n);
        if (!b)
            return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes for a payload", n);
        w->in = b;
        w->in_cap = n;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(j->fd, w->in + got, n - got, (off_t)(j->offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return sr_err_set(err, SR_E_DELTA_IO, "%s: read failed: %s", j->file, strerror(errno));
        if (r == 0)
            return sr_err_set(err, SR_E_DELTA_PAYLOAD, "%s: blob of '%s' is truncated", j->file,
                              j->rec->name);
        got += (size_t)r;
    }
    return 0;
}

static int bad_frame(sr_err *err, const ajob *j, const char *what)
{
    return sr_err_set(err, SR_E_DELTA_PAYLOAD, "%s: payload of '%s': %s", j->file, j->rec->name,
                      what);
}

/* Decompresses chunk by chunk, XORing each into place and hashing the result while hot. */
static int xor_frame(aworker *w, const ajob *j, sr_err *err)
{
    unsigned char *dst = j->dst->data;
    size_t n = j->dst->nbytes, done = 0, len = (size_t)j->rec->compressed_num_bytes;
    ZSTD_DCtx_reset(w->dctx, ZSTD_reset_session_only);
    XXH3_128bits_reset(w->xxh);
    ZSTD_inBuffer in = {w->in, len, 0};
    for (;;) {
        ZSTD_outBuffer out = {w->scratch, SR_DELTA_CHUNK, 0};
        size_t r = ZSTD_decompressStream(w->dctx, &out, &in);
        if (ZSTD_isError(r))
            return bad_frame(err, j, ZSTD_getErrorName(r));
        if (out.pos > n - done)
            return bad_frame(err, j, "decompresses to more bytes than the tensor holds");
        sr_delta_xor_into(dst + done, w->scratch, out.pos);
        XXH3_128bits_update(w->xxh, dst + done, out.pos);
        done += out.pos;
        if (r == 0)
            break;
        if (in.pos == in.size && out.pos < out.size)
            return bad_frame(err, j, "the zstd frame is truncated");
    }
    if (in.pos != in.size || done != n)
        return bad_frame(err, j, "stray bytes after the zstd frame, or too few bytes");
    XXH128_hash_t h = XXH3_128bits_digest(w->xxh);
    if (h.high64 != j->rec->checksum_hi || h.low64 != j->rec->checksum_lo) {
        char want[33], got[33];
        sr_delta_hex128(want, j->rec->checksum_hi, j->rec->checksum_lo);
        sr_delta_hex128(got, h.high64, h.low64);
        return sr_err_set(err, SR_E_DELTA_CHECKSUM,
                          "tensor '%s': checksum mismatch after apply: manifest %s, applied %s",
                          j->rec->name, want, got);
    }
    return 0;
}

static int apply_job(void *ctx, void *wp, size_t k, sr_err *err)
{
    apply_ctx *c = ctx;
    const ajob *j = &c->jobs[c->by_size[k]];
    aworker *w = wp;
    int rc = read_blob(w, j, err);
    if (rc)
        return rc;
    unsigned long long fcs = ZSTD_getFrameContentSize(w->in, (size_t)j->rec->compressed_num_bytes);
    if (fcs == ZSTD_CONTENTSIZE_ERROR || fcs == ZSTD_CONTENTSIZE_UNKNOWN ||
        fcs != j->rec->uncompressed_num_bytes)
        return bad_frame(err, j,
                         "the zstd frame's content size is missing or differs from "
                         "uncompressed_num_bytes");
    return xor_frame(w, j, err);
}

/* ---- applying one version ---- */

typedef struct version_plan {
    sr_delta_manifest *m;
    pfile *files; /* parallel to m->payload_files; fd -1 when not needed */
    ajob *jobs;
    size_t njobs;
} version_plan;

static void plan_free(version_plan *vp)
{
    for (size_t i = 0; vp->files && i < vp->m->n_payload_files; i++) {
        if (vp->files[i].fd >= 0)
            close(vp->files[i].fd);
        sr_delta_index_free(&vp->files[i].index);
    }
    free(vp->files);
    free(vp->jobs);
    sr_delta_manifest_free(vp->m);
}

/* Checks every applicable record against the local tensor and its blob before any write. */
static int plan_jobs(version_plan *vp, const sr_delta_receiver *rx, int vfd, const char *vdir,
                     size_t *skipped, sr_err *err)
{
    const sr_delta_manifest *m = vp->m;
    vp->files = calloc(m->n_payload_files ? m->n_payload_files : 1, sizeof(pfile));
    vp->jobs = calloc(m->n_tensors ? m->n_tensors : 1, sizeof(ajob));
    if (!vp->files || !vp->jobs)
        return sr_err_set(err, SR_E_NOMEM, "cannot plan %zu records", m->n_tensors);
    for (size_t i = 0; i < m->n_payload_files; i++)
        vp->files[i] = (pfile){m->payload_files[i], -1, {NULL, 0, NULL}};
    for (size_t i = 0; i < m->n_tensors; i++) {
        const sr_delta_record *r = &m->tensors[i];
        int64_t li = sr_delta_set_find(rx->order, rx->local, rx->n, r->name);
        if (li < 0) {
            (*skipped)++;
            continue;
        }
        const sr_delta_tensor *t = &rx->local[li];
        sr_delta_tensor as_rec = {r->name, r->dtype, r->ndim,
                                  {0},     NULL,     (size_t)r->uncompressed_num_bytes};
        memcpy(as_rec.shape, r->shape, sizeof(as_rec.shape));
        if (!sr_delta_same_layout(&as_rec, t))
            return sr_err_set_at(err, SR_E_DELTA_TENSOR, (int64_t)i,
                                 "tensor '%s': the manifest's dtype, shape or size (%s, %llu "
                                 "bytes) differ from the local tensor's (%s, %zu bytes)",
                                 r->name, r->dtype, (unsigned long long)r->uncompressed_num_bytes,
                                 t->dtype, t->nbytes);
        pfile *f = &vp->files[r->payload_file_index];
        int rc = f->fd < 0 ? sr_delta_open_payload(&f->fd, &f->index, vfd, vdir, f->name, err) : 0;
        if (rc)
            return rc;
        const sr_delta_blob *b = sr_delta_index_find(&f->index, r->payload_key);
        if (!b || b->length != r->compressed_num_bytes)
            return sr_err_set(err, SR_E_DELTA_PAYLOAD,
                              "%s/%s: blob '%s' is %s (manifest: %llu bytes)", vdir, f->name,
                              r->payload_key, b ? "of another size" : "missing",
                              (unsigned long long)r->compressed_num_bytes);
        vp->jobs[vp->njobs++] = (ajob){r, t, f->fd, f->name, b->offset};
    }
    return 0;
}

/* The in-progress marker of a fetch from `from` to `target`, written once before the first byte
 * of a local tensor changes (or when a version fails): a fetch whose versions apply nothing
 * leaves the tensors as they were and needs no marker, which saves its two fsyncs. A marker
 * with dfd -1 writes nothing: the local tensors catch up with what the folder already holds. */
typedef struct marker {
    int64_t from, target;
    int written;
    int dfd;
} marker;

static int mark_in_progress(const sr_delta_receiver *rx, marker *mk, sr_err *err)
{
    if (mk->written || mk->dfd < 0)
        return 0;
    int rc = write_state(rx, mk->dfd, mk->from, 1, mk->target, err);
    mk->written = rc == 0;
    return rc;
}

static int apply_version(sr_delta_fetch_result *res, const sr_delta_receiver *rx, int sfd,
                         const char *sync_dir, int64_t v, marker *mk, sr_err *err)
{
    version_plan vp = {NULL, NULL, NULL, 0};
    char vdir[4096];
    snprintf(vdir, sizeof(vdir), "%s/delta-%08lld", sync_dir, (long long)v);
    int vfd = -1;
    int rc = sr_delta_open_version(&vfd, sfd, sync_dir, v, err);
    rc = rc ? rc : sr_delta_load_manifest(&vp.m, vfd, vdir, v, v - 1, err);
    rc = rc ? rc : plan_jobs(&vp, rx, vfd, vdir, &res->skipped, err);
    apply_ctx c = {vp.jobs, NULL};
    size_t *sizes = rc ? NULL : malloc((vp.njobs ? vp.njobs : 1) * sizeof(size_t));
    if (!rc && !sizes)
        rc = sr_err_set(err, SR_E_NOMEM, "cannot allocate a schedule");
    for (size_t i = 0; !rc && i < vp.njobs; i++)
        sizes[i] = vp.jobs[i].dst->nbytes;
    rc = rc ? rc : sr_delta_schedule_by_size(&c.by_size, sizes, vp.njobs, err);
    free(sizes);
    if (!rc) {
        /* sr_delta_run starts no team at all for zero jobs: the reference's zero-worker pool
         * edge cannot happen here. */
        res->last_payloads = vp.njobs;
        res->last_workers =
            vp.njobs < (size_t)rx->opts.max_workers ? (int)vp.njobs : rx->opts.max_workers;
        sr_delta_team t = {aworker_init, aworker_fini, apply_job, &c};
        rc = vp.njobs ? mark_in_progress(rx, mk, err) : 0;
        rc = rc ? rc : sr_delta_run(&res->last_threads, vp.njobs, rx->opts.max_workers, &t, err);
        if (!rc)
            res->applied += vp.njobs;
    }
    free(c.by_size);
    plan_free(&vp);
    if (vfd >= 0)
        close(vfd);
    return rc;
}

/* ---- fetch ---- */

/* Applies versions (from, to] to the local tensors; mk says whether the folder is marked. */
static int apply_range(sr_delta_fetch_result *res, sr_delta_receiver *rx, int sfd,
                       const char *sync_dir, int64_t from, int64_t to, marker *mk, sr_err *err)
{
    int rc = 0;
    for (int64_t v = from + 1; !rc && v <= to; v++) {
        rc = apply_version(res, rx, sfd, sync_dir, v, mk, err);
        if (!rc) {
            res->version = v;
            res->versions_applied++;
            rx->local_version = v;
        }
    }
    if (rc)
        rx->local_version = -1; /* half-applied: the next fetch resets the tensors */
    return rc;
}

static int fetch_locked(sr_delta_fetch_result *res, sr_delta_receiver *rx, int dfd, int sfd,
                        const char *sync_dir, int64_t target, sr_err *err)
{
    sr_delta_state s;
    int exists;
    int rc = read_state(&s, &exists, dfd, rx, err);
    if (rc)
        return rc;
    /* What the folder holds: nothing usable when there is no state or a write broke off. */
    int64_t folder = !exists || s.write_in_progress ? 0 : s.version;
    if (folder > target)
        return sr_err_set(err, SR_E_DELTA_VERSION, "the receiver is at version %lld, ahead of %lld",
                          (long long)folder, (long long)target);
    if (rx->local_version < 0 || rx->local_version > folder) {
        rc = reset_local(rx, err);
        if (rc)
            return rc;
        res->reset = 1;
    }
    res->from_version = res->version = rx->local_version;
    /* Another receiver sharing the folder may have brought it further than these tensors: they
     * catch up by reading the versions, and the folder is left as it is. */
    marker none = {0, 0, 0, -1};
    rc = apply_range(res, rx, sfd, sync_dir, rx->local_version, folder, &none, err);
    if (rc || folder == target)
        return rc;
    marker mk = {folder, target, 0, dfd};
    rc = apply_range(res, rx, sfd, sync_dir, folder, target, &mk, err);
    if (rc) {
        /* A failed version leaves the marker whatever it reached, so the next fetch resets. */
        sr_err ignored = SR_ERR_INIT;
        mark_in_progress(rx, &mk, &ignored);
        return rc;
    }
    return write_state(rx, dfd, target, 0, target, err);
}

int sr_delta_fetch(sr_delta_fetch_result *res, sr_delta_receiver *rx, const char *sync_dir,
                   int64_t target, sr_err *err)
{
    sr_delta_fetch_result r;
    memset(&r, 0, sizeof(r));
    int rc;
    if (!rx || !sync_dir || target < 1 || target > SR_DELTA_MAX_VERSION) {
        rc = sr_err_set(err, SR_E_INVAL,
                        "fetch: NULL receiver or sync_dir, or target %lld "
                        "outside [1, %d]",
                        (long long)target, SR_DELTA_MAX_VERSION);
    } else {
        int dfd, lfd, sfd = -1;
        rc = lock_folder(&dfd, &lfd, rx, err);
        if (!rc) {
            rc = open_given_dir(&sfd, sync_dir, 0, err);
            rc = rc ? rc : fetch_locked(&r, rx, dfd, sfd, sync_dir, target, err);
            if (sfd >= 0)
                close(sfd);
            unlock_folder(dfd, lfd);
        }
    }
    if (res)
        *res = r;
    return rc;
}
