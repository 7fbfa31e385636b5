#include "sr_delta_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>
#include <zstd.h>

struct sr_delta_publisher {
    char *sync_dir;
    sr_delta_publish_opts opts;
    size_t n;
    sr_delta_tensor *snap; /* names, dtypes and bytes owned by the publisher */
    char *strings;
    unsigned char *bytes;
    size_t *order;
    int64_t version;
};

/* One given tensor matched to its snapshot slot, and what phase 1 made of it. */
typedef struct job {
    const sr_delta_tensor *in;
    size_t slot;
    int changed;
    unsigned char *blob; /* one zstd frame of in ^ snapshot, malloc'd */
    size_t blob_len;
    uint64_t hi, lo;
    int dirty; /* the scan found a byte that differs from the snapshot */
} job;

typedef struct pub_ctx {
    sr_delta_publisher *p;
    job *jobs;
    size_t *by_size; /* job indices, largest tensor first, to balance the team */
    size_t *dirty;   /* the dirty ones among them, in the same order */
} pub_ctx;

/* Bytes of tensors one scan worker compares, at least: below it a team costs more than it saves
 * (a sync in which nothing changed waited longer for its threads than for its memcmp). */
#define SR_DELTA_SCAN_BYTES_PER_WORKER ((size_t)8 << 20)

typedef struct worker {
    ZSTD_CCtx *cctx;
    unsigned char *scratch;
    XXH3_state_t *xxh;
} worker;

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

int sr_delta_publisher_new(sr_delta_publisher **out, const char *sync_dir,
                           const sr_delta_tensor *base, size_t n, const sr_delta_publish_opts *opts,
                           sr_err *err)
{
    *out = NULL;
    sr_delta_publish_opts o = SR_DELTA_PUBLISH_OPTS_INIT;
    if (opts)
        o = *opts;
    if (!sync_dir || o.start_version < 0 || o.start_version >= SR_DELTA_MAX_VERSION ||
        o.zstd_level < 1 || o.zstd_level > 19)
        return sr_err_set(err, SR_E_INVAL, "publisher: bad sync_dir, start_version or zstd level");
    struct stat st;
    if (stat(sync_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return sr_err_set(err, SR_E_DELTA_IO, "%s: not a directory", sync_dir);
    sr_delta_publisher *p = calloc(1, sizeof(*p));
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a publisher");
    int rc = sr_delta_set_index(&p->order, base, n, "base", err);
    if (rc) {
        free(p);
        return rc;
    }
    size_t strbytes = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        strbytes += strlen(base[i].name) + strlen(base[i].dtype) + 2;
        bytes += align64(base[i].nbytes);
    }
    p->n = n;
    p->opts = o;
    p->version = o.start_version;
    p->sync_dir = strdup(sync_dir);
    p->snap = calloc(n ? n : 1, sizeof(sr_delta_tensor));
    p->strings = malloc(strbytes + 1);
    p->bytes = aligned_alloc(64, bytes ? bytes : 64);
    if (!p->sync_dir || !p->snap || !p->strings || !p->bytes) {
        sr_delta_publisher_free(p);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a %zu-byte snapshot", bytes);
    }
    char *s = p->strings;
    unsigned char *b = p->bytes;
    for (size_t i = 0; i < n; i++) {
        p->snap[i] = base[i];
        p->snap[i].name = strcpy(s, base[i].name);
        s += strlen(s) + 1;
        p->snap[i].dtype = strcpy(s, base[i].dtype);
        s += strlen(s) + 1;
        p->snap[i].data = b;
        if (base[i].nbytes)
            memcpy(b, base[i].data, base[i].nbytes);
        b += align64(base[i].nbytes);
    }
    *out = p;
    return 0;
}

void sr_delta_publisher_free(sr_delta_publisher *p)
{
    if (!p)
        return;
    free(p->sync_dir);
    free(p->snap);
    free(p->strings);
    free(p->bytes);
    free(p->order);
    free(p);
}

int64_t sr_delta_publisher_version(const sr_delta_publisher *p)
{
    return p->version;
}

/* ---- phase 1: diff, checksum and compress each tensor ---- */

static void *worker_init(void *ctx)
{
    worker *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->cctx = ZSTD_createCCtx();
    w->scratch = malloc(SR_DELTA_CHUNK);
    w->xxh = XXH3_createState();
    if (!w->cctx || !w->scratch || !w->xxh) {
        ZSTD_freeCCtx(w->cctx);
        free(w->scratch);
        XXH3_freeState(w->xxh);
        free(w);
        return NULL;
    }
    return w;
}

static void worker_fini(void *ctx, void *wp)
{
    worker *w = wp;
    if (!w)
        return;
    ZSTD_freeCCtx(w->cctx);
    free(w->scratch);
    XXH3_freeState(w->xxh);
    free(w);
}

static void xor3(unsigned char *dst, const unsigned char *a, const unsigned char *b, size_t n)
{
    memcpy(dst, a, n);
    sr_delta_xor_into(dst, b, n);
}

static int zstd_fail(sr_err *err, const char *name, size_t code)
{
    return sr_err_set(err, SR_E_INTERNAL, "tensor '%s': zstd failed: %s", name,
                      ZSTD_getErrorName(code));
}

/* Streams the patch through zstd chunk by chunk, so it never exists in full. */
static int compress_patch(job *j, const unsigned char *nw, const unsigned char *old, worker *w,
                          int level, sr_err *err)
{
    size_t n = j->in->nbytes, cap = ZSTD_compressBound(n);
    const char *name = j->in->name;
    j->blob = malloc(cap);
    if (!j->blob)
        return sr_err_set(err, SR_E_NOMEM, "tensor '%s': cannot allocate %zu bytes", name, cap);
    size_t r = ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_and_parameters);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setPledgedSrcSize(w->cctx, n);
    if (ZSTD_isError(r))
        return zstd_fail(err, name, r);
    XXH3_128bits_reset(w->xxh);
    ZSTD_outBuffer out = {j->blob, cap, 0};
    for (size_t off = 0; off < n; off += SR_DELTA_CHUNK) {
        size_t len = n - off < SR_DELTA_CHUNK ? n - off : SR_DELTA_CHUNK;
        xor3(w->scratch, nw + off, old + off, len);
        XXH3_128bits_update(w->xxh, nw + off, len);
        ZSTD_inBuffer in = {w->scratch, len, 0};
        ZSTD_EndDirective mode = off + len == n ? ZSTD_e_end : ZSTD_e_continue;
        do {
            r = ZSTD_compressStream2(w->cctx, &out, &in, mode);
            if (ZSTD_isError(r))
                return zstd_fail(err, name, r);
        } while (mode == ZSTD_e_end ? r != 0 : in.pos < in.size);
    }
    XXH128_hash_t h = XXH3_128bits_digest(w->xxh);
    j->hi = h.high64;
    j->lo = h.low64;
    j->blob_len = out.pos;
    /* Shrinking a large block is cheap (mremap) and returns the unused bound to the system. */
    unsigned char *shrunk = realloc(j->blob, out.pos ? out.pos : 1);
    if (shrunk)
        j->blob = shrunk;
    j->changed = 1;
    return 0;
}

/* The scan: which tensors differ from the snapshot (memcmp stops at the first changed byte). */
static int scan_job(void *ctx, void *w, size_t k, sr_err *err)
{
    pub_ctx *c = ctx;
    job *j = &c->jobs[c->by_size[k]];
    j->dirty = j->in->nbytes && memcmp(j->in->data, c->p->snap[j->slot].data, j->in->nbytes) != 0;
    return 0;
}

/* The diff of a dirty tensor: XOR, checksum and compress. */
static int diff_job(void *ctx, void *w, size_t k, sr_err *err)
{
    pub_ctx *c = ctx;
    job *j = &c->jobs[c->dirty[k]];
    const unsigned char *nw = j->in->data, *old = c->p->snap[j->slot].data;
    return compress_patch(j, nw, old, w, c->p->opts.zstd_level, err);
}

static int commit_job(void *ctx, void *w, size_t k, sr_err *err)
{
    pub_ctx *c = ctx;
    job *j = &c->jobs[c->dirty[k]];
    if (j->changed)
        memcpy(c->p->snap[j->slot].data, j->in->data, j->in->nbytes);
    return 0;
}

/* ---- phase 2: write the version folder ---- */

static int write_payload(int vfd, const char *vdir, size_t file, const job *const *recs, size_t n,
                         int do_fsync, sr_err *err)
{
    const char **keys = malloc((n ? n : 1) * sizeof(char *));
    uint64_t *lens = malloc((n ? n : 1) * sizeof(uint64_t));
    sr_buf hdr = SR_BUF_INIT;
    int rc = keys && lens ? 0 : sr_err_set(err, SR_E_NOMEM, "cannot allocate a payload index");
    for (size_t i = 0; !rc && i < n; i++) {
        keys[i] = recs[i]->in->name;
        lens[i] = recs[i]->blob_len;
    }
    rc = rc ? rc : sr_delta_index_render(&hdr, keys, lens, n, err);
    char name[64];
    sr_delta_payload_name(name, sizeof(name), file);
    sr_delta_afile f;
    if (!rc && (rc = sr_delta_afile_open(&f, vfd, vdir, name, err)) == 0) {
        rc = sr_delta_afile_write(&f, hdr.data, hdr.len, err);
        for (size_t i = 0; !rc && i < n; i++)
            rc = sr_delta_afile_write(&f, recs[i]->blob, recs[i]->blob_len, err);
        if (rc)
            sr_delta_afile_abort(&f);
        else
            rc = sr_delta_afile_commit(&f, do_fsync, err);
    }
    sr_buf_release(&hdr);
    free(keys);
    free(lens);
    return rc;
}

/* Groups the changed jobs (in snapshot order) into payload files and writes them. */
static int write_payloads(sr_delta_out_record *recs, const job **changed, size_t n, size_t *n_files,
                          int vfd, const char *vdir, const sr_delta_publish_opts *o, sr_err *err)
{
    uint64_t max = o->max_file_bytes ? o->max_file_bytes : SR_DELTA_DEFAULT_FILE_BYTES;
    size_t file = 0, first = 0;
    uint64_t size = 0;
    int rc = 0;
    for (size_t i = 0; i <= n && !rc; i++) {
        int close_file = i == n || (i > first && size + changed[i]->blob_len > max);
        if (close_file && i > first) {
            rc = write_payload(vfd, vdir, file, changed + first, i - first, o->fsync, err);
            file++;
            first = i;
            size = 0;
        }
        if (i < n) {
            size += changed[i]->blob_len;
            recs[i].file = file;
        }
    }
    *n_files = file;
    return rc;
}

static int write_manifest(int sfd, int vfd, const char *vdir, const sr_delta_publisher *p,
                          const sr_delta_out_record *recs, size_t n, size_t n_files, sr_err *err)
{
    sr_buf m = SR_BUF_INIT;
    m.max = SR_DELTA_MANIFEST_MAX;
    int rc = sr_delta_manifest_render(&m, p->version + 1, p->version, recs, n, n_files, err);
    rc = rc ? rc
            : sr_delta_write_file(vfd, vdir, "manifest.json", m.data, m.len, p->opts.fsync, err);
    sr_buf_release(&m);
    if (!rc && p->opts.fsync && (rc = sr_delta_fsync_dir(sfd, p->sync_dir, err)) != 0) {
        /* Not durably published: withdraw it so that a retry can publish this version again. */
        unlinkat(vfd, "manifest.json", 0);
    }
    return rc;
}

/* Writes the version folder's files under the open folders sfd (sync_dir) and vfd (vdir). */
static int write_files(const sr_delta_publisher *p, int sfd, int vfd, const char *vdir, job *jobs,
                       size_t njobs, sr_delta_publish_result *res, sr_err *err)
{
    char mpath[4200];
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", vdir);
    struct stat st;
    int rc = sr_delta_check_name(vfd, "manifest.json", mpath, err);
    if (rc)
        return rc;
    if (fstatat(vfd, "manifest.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
        return sr_err_set(err, SR_E_DELTA_VERSION, "%s already exists: version %lld was published",
                          mpath, (long long)(p->version + 1));
    const job **changed = malloc((njobs ? njobs : 1) * sizeof(job *));
    sr_delta_out_record *recs = calloc(njobs ? njobs : 1, sizeof(*recs));
    if (!changed || !recs) {
        free(changed);
        free(recs);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu records", njobs);
    }
    size_t n = 0;
    for (size_t i = 0; i < njobs; i++) {
        if (!jobs[i].changed)
            continue;
        changed[n] = &jobs[i];
        recs[n] = (sr_delta_out_record){&p->snap[jobs[i].slot], jobs[i].blob_len, jobs[i].hi,
                                        jobs[i].lo, 0};
        res->uncompressed_bytes += jobs[i].in->nbytes;
        res->compressed_bytes += jobs[i].blob_len;
        n++;
    }
    res->records = n;
    rc = write_payloads(recs, changed, n, &res->payload_files, vfd, vdir, &p->opts, err);
    if (!rc && p->opts.fsync && res->payload_files)
        rc = sr_delta_fsync_dir(vfd, vdir, err);
    rc = rc ? rc : write_manifest(sfd, vfd, vdir, p, recs, n, res->payload_files, err);
    free(changed);
    free(recs);
    return rc;
}

static int write_version(const sr_delta_publisher *p, job *jobs, size_t njobs,
                         sr_delta_publish_result *res, sr_err *err)
{
    char vdir[4096], vname[32];
    snprintf(vname, sizeof(vname), "delta-%08lld", (long long)(p->version + 1));
    int len = snprintf(vdir, sizeof(vdir), "%s/%s", p->sync_dir, vname);
    if (len < 0 || (size_t)len >= sizeof(vdir) - 64)
        return sr_err_set(err, SR_E_DELTA_IO, "%s: path too long", p->sync_dir);
    int sfd = -1, vfd = -1;
    int rc = sr_delta_open_dir(&sfd, AT_FDCWD, p->sync_dir, 0, err);
    if (!rc) {
        rc = sr_delta_open_dir(&vfd, sfd, vname, 1, err);
        if (rc)
            sr_err_prefix(err, "%s/", p->sync_dir);
    }
    rc = rc ? rc : write_files(p, sfd, vfd, vdir, jobs, njobs, res, err);
    if (vfd >= 0)
        close(vfd);
    if (sfd >= 0)
        close(sfd);
    return rc;
}

/* ---- publish ---- */

static int cmp_job_slot(const void *a, const void *b)
{
    size_t x = ((const job *)a)->slot, y = ((const job *)b)->slot;
    return (x > y) - (x < y);
}

/* Matches the given tensors to snapshot slots (snapshot order), skipping unknown names. */
static int match_jobs(job **out, size_t *njobs, size_t *skipped, const sr_delta_publisher *p,
                      const sr_delta_tensor *t, size_t n, sr_err *err)
{
    size_t *order = NULL;
    int rc = sr_delta_set_index(&order, t, n, "publish", err);
    free(order);
    if (rc)
        return rc;
    job *jobs = calloc(n ? n : 1, sizeof(job));
    if (!jobs)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu jobs", n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s = sr_delta_set_find(p->order, p->snap, p->n, t[i].name);
        if (s < 0) {
            (*skipped)++;
            continue;
        }
        if (!sr_delta_same_layout(&t[i], &p->snap[s])) {
            free(jobs);
            return sr_err_set_at(err, SR_E_DELTA_TENSOR, (int64_t)i,
                                 "tensor '%s': dtype, shape or size differ from the base (%s, "
                                 "%zu bytes, given %s, %zu bytes)",
                                 t[i].name, p->snap[s].dtype, p->snap[s].nbytes, t[i].dtype,
                                 t[i].nbytes);
        }
        jobs[m++] = (job){&t[i], (size_t)s, 0, NULL, 0, 0, 0, 0};
    }
    qsort(jobs, m, sizeof(job), cmp_job_slot);
    *out = jobs;
    *njobs = m;
    return 0;
}

static void free_jobs(job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(jobs[i].blob);
    free(jobs);
}

int sr_delta_publish(sr_delta_publish_result *res, sr_delta_publisher *p,
                     const sr_delta_tensor *tensors, size_t n, int workers, sr_err *err)
{
    sr_delta_publish_result r;
    memset(&r, 0, sizeof(r));
    if (res)
        *res = r;
    if (!p || workers < 1 || (n && !tensors))
        return sr_err_set(err, SR_E_INVAL, "publish: NULL publisher or tensors, or workers %d < 1",
                          workers);
    if (p->version >= SR_DELTA_MAX_VERSION)
        return sr_err_set(err, SR_E_DELTA_VERSION, "version %lld is the last one allowed",
                          (long long)p->version);
    pub_ctx c = {p, NULL, NULL, NULL};
    size_t njobs = 0;
    int rc = match_jobs(&c.jobs, &njobs, &r.skipped, p, tensors, n, err);
    if (rc)
        return rc;
    size_t *sizes = malloc((njobs ? njobs : 1) * sizeof(size_t));
    rc = sizes ? 0 : sr_err_set(err, SR_E_NOMEM, "cannot allocate a schedule");
    for (size_t i = 0; !rc && i < njobs; i++)
        sizes[i] = c.jobs[i].in->nbytes;
    rc = rc ? rc : sr_delta_schedule_by_size(&c.by_size, sizes, njobs, err);
    free(sizes);
    /* Scan with a team sized by the bytes, then diff and commit only the dirty tensors: a
     * version in which nothing changed starts no team at all. */
    size_t total = 0, ndirty = 0;
    for (size_t i = 0; i < njobs; i++)
        total += c.jobs[i].in->nbytes;
    size_t scanners = 1 + total / SR_DELTA_SCAN_BYTES_PER_WORKER;
    int threads = 0, scan_threads = 0;
    sr_delta_team scan = {NULL, NULL, scan_job, &c};
    rc = rc ? rc
            : sr_delta_run(&scan_threads, njobs,
                           scanners < (size_t)workers ? (int)scanners : workers, &scan, err);
    c.dirty = rc ? NULL : malloc((njobs ? njobs : 1) * sizeof(size_t));
    rc = rc ? rc : c.dirty ? 0 : sr_err_set(err, SR_E_NOMEM, "cannot allocate a schedule");
    for (size_t k = 0; !rc && k < njobs; k++)
        if (c.jobs[c.by_size[k]].dirty)
            c.dirty[ndirty++] = c.by_size[k];
    sr_delta_team diff = {worker_init, worker_fini, diff_job, &c};
    rc = rc ? rc : sr_delta_run(&threads, ndirty, workers, &diff, err);
    r.version = p->version + 1;
    r.workers = threads;
    rc = rc ? rc : write_version(p, c.jobs, njobs, &r, err);
    /* The snapshot moves to the new bytes only once the version is on disk, so a failed
     * publish can simply be retried. */
    sr_delta_team commit = {NULL, NULL, commit_job, &c};
    int unused;
    rc = rc ? rc : sr_delta_run(&unused, ndirty, workers, &commit, err);
    if (!rc) {
        p->version++;
        r.unchanged = njobs - r.records;
        if (res)
            *res = r;
    }
    free(c.by_size);
    free(c.dirty);
    free_jobs(c.jobs, njobs);
    return rc;
}
