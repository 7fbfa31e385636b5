/*
 * sr_delta_priv: helpers shared by the sr_delta_*.c files; not part of the public API (the fuzz
 * target also uses the payload index parser). Same error and thread-safety rules as sr_delta.h.
 */
#ifndef SR_DELTA_PRIV_H
#define SR_DELTA_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "sr_buf.h"
#include "sr_delta.h"

/* Bytes processed per step when XORing, hashing and (de)compressing, to stay in L2 cache. */
#define SR_DELTA_CHUNK ((size_t)128 << 10)

#define SR_DELTA_PAYLOAD_MAGIC       "SRDPAY01"
#define SR_DELTA_PAYLOAD_HEADER      24 /* magic, n, index_bytes */
#define SR_DELTA_PAYLOAD_ENTRY_FIXED 20 /* offset, length, key_len */

/* ---- sr_delta_set.c: tensor lists ---- */

/*
 * Checks a caller's tensor list (names, dtypes, sizes, uniqueness; `what` names it in messages)
 * and returns in *order (caller frees) the indices sorted by name, for sr_delta_set_find.
 * Errors: SR_E_INVAL, SR_E_NOMEM.
 */
int sr_delta_set_index(size_t **order, const sr_delta_tensor *t, size_t n, const char *what,
                       sr_err *err);

/* Index in t of the tensor called `name` (binary search over `order`), or -1. */
int64_t sr_delta_set_find(const size_t *order, const sr_delta_tensor *t, size_t n,
                          const char *name);

/* 1 if a and b have equal dtype names, shapes and byte counts. */
int sr_delta_same_layout(const sr_delta_tensor *a, const sr_delta_tensor *b);

/* XORs n bytes: dst[i] ^= src[i]. */
void sr_delta_xor_into(void *dst, const void *src, size_t n);

/*
 * Work for a team: job(ctx, w, k, err) for k in [0, njobs), where w is the calling worker's
 * state from init(ctx) (NULL if init is NULL; an init that returns NULL makes that worker's
 * jobs fail with SR_E_NOMEM) and is released with fini(ctx, w). Jobs must write disjoint
 * memory.
 */
typedef struct sr_delta_team {
    void *(*init)(void *ctx);
    void (*fini)(void *ctx, void *w);
    int (*job)(void *ctx, void *w, size_t k, sr_err *err);
    void *ctx;
} sr_delta_team;

/*
 * Runs every job with min(workers, njobs) threads (serially on the calling thread for one; no
 * team at all for zero jobs), dynamically scheduled in index order, all jobs even after a
 * failure. Returns the error of the lowest failing job. *threads = the team size obtained
 * (0 for zero jobs).
 */
int sr_delta_run(int *threads, size_t njobs, int workers, const sr_delta_team *team, sr_err *err);

/* Job indices 0..n-1 ordered by nbytes[i] descending (ties by index), for sr_delta_run. */
int sr_delta_schedule_by_size(size_t **out, const size_t *nbytes, size_t n, sr_err *err);

/* ---- sr_delta_manifest.c: documents ---- */

/* Writes the 32 lowercase hex digits of an xxh3-128 hash and a NUL into out[33]. */
void sr_delta_hex128(char out[33], uint64_t hi, uint64_t lo);

/* 1 if `s` is an acceptable payload file name (see sr_delta.h). */
int sr_delta_valid_file_name(const char *s);

/* One record to render: the tensor, its blob and where the blob went. */
typedef struct sr_delta_out_record {
    const sr_delta_tensor *t;
    uint64_t compressed;
    uint64_t checksum_hi, checksum_lo;
    size_t file;
} sr_delta_out_record;

/* The name of payload file i ("payload-000000.srdp") into out (>= 32 bytes). */
void sr_delta_payload_name(char *out, size_t cap, size_t i);

/* Appends manifest.json text for these records and n_files payload files to `out`. */
int sr_delta_manifest_render(sr_buf *out, int64_t version, int64_t base_version,
                             const sr_delta_out_record *recs, size_t n, size_t n_files,
                             sr_err *err);

/* Formats a state document into buf; returns its length. */
size_t sr_delta_state_render(char *buf, size_t cap, const sr_delta_state *s);

/* ---- sr_delta_file.c: files and the payload container ---- */

/*
 * Folders and files under a sync folder are opened relative to a folder descriptor with
 * O_NOFOLLOW (openat, mkdirat, renameat, unlinkat): a symlink planted at any name the store uses
 * is SR_E_SYMLINK and nothing is created, truncated or read through it. A root given by
 * path (the caller checked it) may have symlinks above its last component, not at it.
 */

/*
 * Opens the folder `name` relative to `at` (AT_FDCWD for a path) into *fd (caller closes) with
 * O_DIRECTORY | O_NOFOLLOW, creating it first (one level) when `create`. SR_E_SYMLINK,
 * SR_E_DELTA_IO.
 */
int sr_delta_open_dir(int *fd, int at, const char *name, int create, sr_err *err);

/* SR_E_SYMLINK (`shown` names it) when `name` in folder dfd is a symlink, else 0. */
int sr_delta_check_name(int dfd, const char *name, const char *shown, sr_err *err);

/*
 * A file being written atomically: data goes to a temporary name in the same folder (dfd,
 * borrowed) and becomes visible under its final name only on commit.
 */
typedef struct sr_delta_afile {
    int fd;
    int dfd;
    char name[256];
    char tmp_name[264];
    char tmp[4096]; /* shown in messages */
    char path[4096];
} sr_delta_afile;

/*
 * Creates .{name}.tmp in folder dfd (`dir` is its path, for messages) with O_CREAT | O_EXCL |
 * O_NOFOLLOW (a stale regular temporary file is replaced). SR_E_SYMLINK, SR_E_DELTA_IO.
 */
int sr_delta_afile_open(sr_delta_afile *f, int dfd, const char *dir, const char *name, sr_err *err);

/* Writes all n bytes. SR_E_DELTA_IO. */
int sr_delta_afile_write(sr_delta_afile *f, const void *p, size_t n, sr_err *err);

/* fsync (if do_fsync), close, renameat to the final name (refused with SR_E_SYMLINK when
 * a symlink sits there). On failure the temporary file is removed. */
int sr_delta_afile_commit(sr_delta_afile *f, int do_fsync, sr_err *err);

/* Closes and removes the temporary file (after a failure). */
void sr_delta_afile_abort(sr_delta_afile *f);

/* Writes a whole file atomically (open, write, commit, then fsync of the folder). */
int sr_delta_write_file(int dfd, const char *dir, const char *name, const void *p, size_t n,
                        int do_fsync, sr_err *err);

/* fsyncs the folder dfd (`dir` for messages). SR_E_DELTA_IO. */
int sr_delta_fsync_dir(int dfd, const char *dir, sr_err *err);

/*
 * Opens `name` in folder dfd for reading (O_NOFOLLOW, O_NONBLOCK) into *fd (caller closes);
 * a missing file sets *missing = 1 and returns 0. SR_E_SYMLINK, SR_E_DELTA_IO (`shown`
 * names the file in messages).
 */
int sr_delta_open_file(int *fd, int dfd, const char *name, const char *shown, int *missing,
                       sr_err *err);

/*
 * Reads the whole file `name` of folder dfd, at most `max` bytes, into *buf (caller frees;
 * NUL-terminated). A missing file sets *missing = 1 and returns 0 with *buf NULL. A larger file
 * is `too_large_code`. Other failures are SR_E_SYMLINK or SR_E_DELTA_IO.
 */
int sr_delta_read_file(char **buf, size_t *len, int *missing, int dfd, const char *name,
                       const char *shown, size_t max, int too_large_code, sr_err *err);

/*
 * Opens (creating it, O_NOFOLLOW) the lock file `name` of folder dfd and takes an exclusive
 * flock on it, waiting up to wait_ms (>= 0; polled) while another holder has it; *fd is the
 * descriptor to close to release it. SR_E_DELTA_LOCKED after the wait, SR_E_SYMLINK,
 * SR_E_DELTA_IO (`shown` names the file, with the OS reason the create failed for).
 */
int sr_delta_lock(int *fd, int dfd, const char *name, const char *shown, int wait_ms, sr_err *err);

/* One blob of a payload file, as listed in its index. */
typedef struct sr_delta_blob {
    const char *key; /* points into the index's key storage; NUL-terminated */
    uint64_t offset, length;
} sr_delta_blob;

/* A parsed payload index, blobs sorted by key. */
typedef struct sr_delta_index {
    sr_delta_blob *blobs;
    size_t n;
    char *keys;
} sr_delta_index;

/* Appends the header and index of a payload file holding these blobs (keys + lengths). */
int sr_delta_index_render(sr_buf *out, const char *const *keys, const uint64_t *lengths, size_t n,
                          sr_err *err);

/*
 * Reads the 24-byte header `hdr`: the blob count and index size, checked against the file size.
 * SR_E_DELTA_PAYLOAD (`name` prefixes the message).
 */
int sr_delta_index_header(uint64_t *n, uint64_t *index_bytes, const uint8_t *hdr, size_t len,
                          uint64_t file_size, const char *name, sr_err *err);

/*
 * Parses `len` index bytes for n blobs of a payload file of file_size bytes: every blob inside
 * the data area, keys unique and 1..SR_DELTA_NAME_MAX bytes with no NUL. SR_E_DELTA_PAYLOAD,
 * SR_E_NOMEM. On success the caller frees with sr_delta_index_free.
 */
int sr_delta_index_parse(sr_delta_index *out, const uint8_t *index, size_t len, uint64_t n,
                         uint64_t file_size, const char *name, sr_err *err);

/* Finds a blob by key, or NULL. */
const sr_delta_blob *sr_delta_index_find(const sr_delta_index *ix, const char *key);

void sr_delta_index_free(sr_delta_index *ix);

/* ---- sr_delta_read.c: a published version ---- */

/* Opens {sync_dir}/delta-{v:08d} (sfd: sync_dir's folder) into *vfd; a missing folder is
 * SR_E_DELTA_MANIFEST (version not published). SR_E_SYMLINK, SR_E_DELTA_IO. */
int sr_delta_open_version(int *vfd, int sfd, const char *sync_dir, int64_t v, sr_err *err);

/* Reads and parses the manifest of folder vfd (`vdir` for messages) into *m (caller frees),
 * checking version == v and base_version == base (SR_E_DELTA_VERSION). SR_E_DELTA_MANIFEST,
 * SR_E_SYMLINK, SR_E_DELTA_IO, SR_E_NOMEM. */
int sr_delta_load_manifest(sr_delta_manifest **m, int vfd, const char *vdir, int64_t v,
                           int64_t base, sr_err *err);

/* Opens payload file `name` of folder vfd into *fd (the caller closes it, also on failure when
 * >= 0) and parses its index into *ix (sr_delta_index_free). SR_E_DELTA_PAYLOAD, SR_E_SYMLINK,
 * SR_E_DELTA_IO, SR_E_NOMEM. */
int sr_delta_open_payload(int *fd, sr_delta_index *ix, int vfd, const char *vdir, const char *name,
                          sr_err *err);

#endif /* SR_DELTA_PRIV_H */
