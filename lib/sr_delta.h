/*
 * sr_delta: the delta weight store (skyrl.md §8.1, §8.2): a publisher that writes one
 * folder per weight version holding the XOR of each changed tensor against the previous version,
 * and a receiver that applies those folders in order to its local tensors.
 *
 * ---- Tensors ----
 *
 * Both sides see weights as a list of sr_delta_tensor: a unique name, a dtype name, a shape and
 * a pointer to nbytes bytes (borrowed; the caller keeps them alive). nbytes must equal
 * prod(shape) * itemsize. Known dtype names are the NumPy names of sr_dtype.h plus "bfloat16",
 * "float8_e4m3fn" and "float8_e5m2"; the bytes are opaque to the store.
 *
 * ---- On disk, per version v (>= 1) ----
 *
 *   {sync_dir}/delta-{v:08d}/manifest.json
 *   {sync_dir}/delta-{v:08d}/payload-{i:06d}.srdp     i = 0, 1, ...
 *
 * manifest.json (written last, so a reader that sees it sees complete payloads):
 *   {"version": v, "base_version": v - 1,
 *    "tensors": [{"name", "dtype", "shape": [..], "uncompressed_num_bytes",
 *                 "compressed_num_bytes", "payload_file", "payload_key", "checksum",
 *                 "checksum_algorithm": "xxh3-128"}, ...],
 *    "total_uncompressed_num_bytes", "total_compressed_num_bytes", "payload_files": [..]}
 * A record exists only for a tensor with at least one changed byte. checksum is the xxh3-128 of
 * the tensor's NEW bytes as 32 lowercase hex digits (canonical big-endian: high 64 bits first,
 * as Python's xxhash.xxh3_128_hexdigest). payload_key is the tensor name. Records follow the
 * publisher's tensor order; the totals are sums over the records.
 *
 * Payload container (.srdp, this project's own format, instead of the reference's
 * safetensors), all integers little-endian:
 *   offset 0   8 bytes  magic "SRDPAY01"
 *   offset 8   u64      n, the number of blobs
 *   offset 16  u64      index_bytes, the size of the index that follows
 *   offset 24  index    n entries of {u64 offset, u64 length, u32 key_len, key bytes}; offset is
 *                       from the start of the file, keys are unique and 1..SR_DELTA_NAME_MAX bytes
 *   then       blobs    each one complete zstd frame (level 1 by default, content size in the
 *                       frame header, no zstd checksum) of the XOR patch new ^ old of one tensor
 * A new payload file starts when adding a blob would take the current one past max_file_bytes
 * (a single larger blob gets a file of its own).
 *
 * Every file (payloads, manifest, receiver state) is written atomically: a temporary file in
 * the same directory, write, fsync, rename, then fsync of the directory (fsync can be turned
 * off for tests). Payloads are renamed and their directory synced before the manifest is.
 *
 * ---- Receiver state ----
 *
 * {state_dir}/state.json = {"version": n, "write_in_progress": bool, "target_version": n} says
 * which version the folder holds; several receivers (engines of one node) may share one folder,
 * and each also knows which version its own local tensors hold (unknown when it is created).
 * sr_delta_fetch(target) holds an exclusive lock on {state_dir}/lock for its whole run, waiting
 * up to opts.lock_wait_ms for another receiver that holds it (SR_E_DELTA_LOCKED after), then:
 *   1. the folder's version F is the state's, or 0 when the state is missing or
 *      write_in_progress; a state file that is not valid is SR_E_DELTA_STATE
 *      (sr_delta_receiver_reset recovers); F > target is SR_E_DELTA_VERSION;
 *   2. local tensors of an unknown version or one past F are reset from the base (version 0),
 *      then brought to F by applying versions (their version, F] WITHOUT writing the folder;
 *   3. F == target: done, the folder is not written (another receiver put it there);
 *   4. for each v in (F, target]: reads the manifest,
 *      checks "version" == v and "base_version" == v - 1 (SR_E_DELTA_VERSION), validates every
 *      applicable record and its payload blob BEFORE changing any byte, then XORs every payload
 *      into its local tensor and verifies the tensor's checksum; {version, true, target} is
 *      written before the first payload changes a byte (and only then: versions that apply
 *      nothing leave the tensors as they were and skip that write and its fsyncs);
 *   5. only after the last version writes {target, false, target}.
 * Any failure after step 3 began leaves write_in_progress set (written then if it was not yet),
 * so the next fetch resets from the base and replays every version: a half-applied version is
 * never taken for a whole one.
 * Records naming a tensor absent from the local set are skipped (as the reference does).
 *
 * ---- Symlinks ----
 *
 * Every file and folder below sync_dir and state_dir (version folders, manifests, payloads,
 * state.json and its temporary file, lock) is opened relative to its folder's descriptor with
 * O_NOFOLLOW (and O_EXCL for a temporary file), and sync_dir and state_dir themselves with
 * O_NOFOLLOW on their last component: a symlink at any of these names is SR_E_SYMLINK, and
 * nothing is created, truncated, renamed over or read through it. Symlinks above the last
 * component of a given folder path are the caller's to check.
 *
 * ---- Workers ----
 *
 * sr_delta_publish first finds the tensors that differ from its snapshot (memcmp, with at most
 * `workers` threads and one per 8 MiB of tensors, so a small set is scanned on the calling
 * thread), then diffs and compresses only those with min(#changed, `workers`) OpenMP threads
 * (the reference: pool_workers(cap 8, reserved 0), sr_delta_publish_workers); a version in
 * which nothing changed starts no team. Apply runs
 * min(#payloads, max_workers) threads per version, where #payloads counts the records that
 * apply to local tensors and max_workers is normally pool_workers(cap 32, reserved 0)
 * (sr_delta_apply_workers); a version with no applicable payload applies nothing and starts no
 * team (the reference's zero-worker pool edge is not reproduced). A team of one runs on the
 * calling thread. Each worker writes only the tensors it was handed; results report the team
 * sizes actually used.
 *
 * ---- Untrusted input ----
 *
 * Manifests, payload files and the state file are untrusted. Sizes are bounded
 * (SR_DELTA_MANIFEST_MAX, SR_DELTA_STATE_MAX, SR_DELTA_MAX_TENSORS, SR_DELTA_MAX_TENSOR_BYTES,
 * SR_DELTA_NAME_MAX), shape products are overflow-checked and must match the byte counts, a
 * payload file name must be a plain file name ([A-Za-z0-9_-] and '.', not starting with '.', no
 * '/' and no ".."), a blob's length must equal compressed_num_bytes and its zstd frame content
 * size (ZSTD_getFrameContentSize) must equal uncompressed_num_bytes before anything is
 * decompressed, and decompression stops at that size.
 *
 * Errors: SR_E_DELTA_MANIFEST (message "path:line:col: ..." for JSON and schema errors),
 * SR_E_DELTA_PAYLOAD, SR_E_DELTA_CHECKSUM, SR_E_DELTA_VERSION, SR_E_DELTA_STATE
 * ("path:line:col: ..."), SR_E_DELTA_TENSOR, SR_E_DELTA_IO, SR_E_DELTA_LOCKED,
 * SR_E_SYMLINK, SR_E_INVAL (bad
 * arguments, duplicate or unknown-dtype tensors in a caller's list), SR_E_NOMEM.
 *
 * Thread-safety: a publisher or receiver belongs to one thread at a time (it starts its own
 * OpenMP teams). Different objects are independent; there is no global state. A receiver's
 * local tensors must not be read or written by others during a fetch or reset.
 */
#ifndef SR_DELTA_H
#define SR_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"
#include "sr_ndarray.h"
#include "sr_pool.h"

#define SR_DELTA_CHECKSUM_ALGORITHM "xxh3-128"
/* Limits on untrusted input. */
#define SR_DELTA_MANIFEST_MAX      ((size_t)64 << 20)  /* bytes of manifest.json */
#define SR_DELTA_STATE_MAX         ((size_t)4096)      /* bytes of state.json */
#define SR_DELTA_MAX_TENSORS       ((size_t)1 << 20)   /* records per manifest, tensors per set */
#define SR_DELTA_MAX_TENSOR_BYTES  ((uint64_t)1 << 40) /* bytes of one tensor */
#define SR_DELTA_MAX_PAYLOAD_FILES ((size_t)1 << 16)
#define SR_DELTA_NAME_MAX          1024     /* bytes of a tensor name or payload key, no NUL */
#define SR_DELTA_FILE_NAME_MAX     255      /* bytes of a payload file name */
#define SR_DELTA_MAX_VERSION       99999999 /* so that delta-{v:08d} keeps 8 digits */
/* Default payload file size before a new file is started (the reference's 1 GiB). */
#define SR_DELTA_DEFAULT_FILE_BYTES ((uint64_t)1 << 30)

/* One named tensor. All pointers are borrowed. */
typedef struct sr_delta_tensor {
    const char *name;           /* unique in its list, 1..SR_DELTA_NAME_MAX bytes */
    const char *dtype;          /* dtype name, see above */
    int ndim;                   /* 0..SR_NDIM_MAX */
    int64_t shape[SR_NDIM_MAX]; /* each >= 0 */
    void *data;                 /* nbytes bytes; only read by the publisher */
    size_t nbytes;              /* prod(shape) * itemsize, <= SR_DELTA_MAX_TENSOR_BYTES */
} sr_delta_tensor;

/* Item size of a dtype name, or 0 if the name is not known. */
size_t sr_delta_dtype_size(const char *dtype);

/* Publish worker count: sr_pool_workers(cap 8, reserved 0) on `topo` (NULL: this machine). */
int sr_delta_publish_workers(int *workers, const sr_cpu_topology *topo, sr_err *err);

/* Apply worker ceiling: sr_pool_workers(cap 32, reserved 0); apply uses min(#payloads, it). */
int sr_delta_apply_workers(int *workers, const sr_cpu_topology *topo, sr_err *err);

/* ---- manifest and state documents ---- */

/* One manifest record; strings are borrowed from the sr_delta_manifest. */
typedef struct sr_delta_record {
    const char *name;
    const char *dtype;
    int ndim;
    int64_t shape[SR_NDIM_MAX];
    uint64_t uncompressed_num_bytes; /* == prod(shape) * itemsize */
    uint64_t compressed_num_bytes;   /* 1..ZSTD_compressBound(uncompressed_num_bytes) */
    const char *payload_file;        /* a validated plain file name listed in payload_files */
    size_t payload_file_index;       /* its index in payload_files */
    const char *payload_key;
    uint64_t checksum_hi, checksum_lo; /* xxh3-128 of the new bytes */
} sr_delta_record;

/* A parsed manifest. Owned by the caller; free with sr_delta_manifest_free. */
typedef struct sr_delta_manifest {
    int64_t version;      /* 1..SR_DELTA_MAX_VERSION */
    int64_t base_version; /* 0..version-1 */
    size_t n_tensors;
    sr_delta_record *tensors;
    uint64_t total_uncompressed_num_bytes, total_compressed_num_bytes; /* checked sums */
    size_t n_payload_files;
    const char **payload_files; /* unique, validated */
    void *priv;                 /* the parsed document the strings point into */
} sr_delta_manifest;

/*
 * Parses and validates `len` bytes of manifest JSON (`name`, e.g. its path, prefixes every
 * message). Errors: SR_E_DELTA_MANIFEST ("name:line:col: ..." for syntax and schema errors, and
 * for a document over SR_DELTA_MANIFEST_MAX), SR_E_NOMEM. Duplicate tensor names, unknown keys,
 * byte counts that disagree with the shape or with the totals, an unknown dtype or checksum
 * algorithm and payload files outside payload_files are all SR_E_DELTA_MANIFEST.
 */
int sr_delta_manifest_parse(sr_delta_manifest **out, const char *text, size_t len, const char *name,
                            sr_err *err);

/* Frees a manifest; NULL is a no-op. */
void sr_delta_manifest_free(sr_delta_manifest *m);

/* The receiver state. */
typedef struct sr_delta_state {
    int64_t version;        /* 0..SR_DELTA_MAX_VERSION */
    int write_in_progress;  /* 0 or 1 */
    int64_t target_version; /* 0..SR_DELTA_MAX_VERSION */
} sr_delta_state;

/*
 * Parses `len` bytes of state JSON: exactly the three keys above. SR_E_DELTA_STATE
 * ("name:line:col: ...") otherwise, including over SR_DELTA_STATE_MAX bytes; SR_E_NOMEM.
 */
int sr_delta_state_parse(sr_delta_state *out, const char *text, size_t len, const char *name,
                         sr_err *err);

/* ---- publisher ---- */

/*
 * Publisher options; plain struct, start from SR_DELTA_PUBLISH_OPTS_INIT.
 *   zstd_level      compression level of the patches, 1..19 (1, as the reference; receivers
 *                   refuse frames whose window exceeds 8 MiB, which levels <= 19 never need)
 *   max_file_bytes  payload file size threshold; 0: SR_DELTA_DEFAULT_FILE_BYTES
 *   fsync           1: fsync files and directories; 0: skip (tests and measurements only)
 *   start_version   the version the base tensors represent (0 normally); the first publish
 *                   writes start_version + 1
 */
typedef struct sr_delta_publish_opts {
    int zstd_level;
    uint64_t max_file_bytes;
    int fsync;
    int64_t start_version;
} sr_delta_publish_opts;

#define SR_DELTA_PUBLISH_OPTS_INIT                                                                 \
    {                                                                                              \
        1, 0, 1, 0                                                                                 \
    }

typedef struct sr_delta_publisher sr_delta_publisher;

/* What one publish did. */
typedef struct sr_delta_publish_result {
    int64_t version;             /* the version written */
    size_t records;              /* tensors with a changed byte (manifest records) */
    size_t unchanged;            /* given tensors identical to the snapshot (no record) */
    size_t skipped;              /* given tensors absent from the base (ignored) */
    size_t payload_files;        /* payload files written */
    uint64_t uncompressed_bytes; /* sum over the records */
    uint64_t compressed_bytes;   /* sum over the records */
    int workers;                 /* diff team size actually used: 1 when run serially on the
                                    calling thread, 0 when no tensor changed (no team) */
} sr_delta_publish_result;

/*
 * Creates a publisher for `sync_dir` (which must exist) whose snapshot is a copy of the base
 * tensors (copied; the caller may free them). opts NULL means the defaults. Errors: SR_E_INVAL
 * (NULL arguments, duplicate names, unknown dtype, nbytes that disagree with the shape, more
 * than SR_DELTA_MAX_TENSORS), SR_E_DELTA_IO (sync_dir is not a directory), SR_E_NOMEM.
 */
int sr_delta_publisher_new(sr_delta_publisher **out, const char *sync_dir,
                           const sr_delta_tensor *base, size_t n, const sr_delta_publish_opts *opts,
                           sr_err *err);

/* Frees the publisher and its snapshot; NULL is a no-op. */
void sr_delta_publisher_free(sr_delta_publisher *p);

/* The last version published (start_version before the first publish). */
int64_t sr_delta_publisher_version(const sr_delta_publisher *p);

/*
 * Publishes the given tensors (any subset of the base, in any order) as version
 * sr_delta_publisher_version(p) + 1 with `workers` (>= 1) threads, then makes them the
 * snapshot. Tensors absent from the base are skipped and counted. `res` may be NULL.
 * On failure nothing is published, the snapshot and the version are unchanged, and the same
 * publish may be retried. Errors: SR_E_INVAL (workers < 1, duplicate names),
 * SR_E_DELTA_TENSOR (dtype, shape or nbytes differ from the base), SR_E_DELTA_VERSION (the
 * version folder already holds a manifest, or the version would exceed SR_DELTA_MAX_VERSION),
 * SR_E_DELTA_IO, SR_E_NOMEM, SR_E_INTERNAL (zstd failed).
 */
int sr_delta_publish(sr_delta_publish_result *res, sr_delta_publisher *p,
                     const sr_delta_tensor *tensors, size_t n, int workers, sr_err *err);

/* ---- receiver ---- */

/*
 * Receiver options; plain struct, start from SR_DELTA_RECEIVER_OPTS_INIT.
 *   max_workers  apply team ceiling (>= 1); normally sr_delta_apply_workers()
 *   fsync        1: fsync the state file and directory; 0: skip (tests only)
 *   reset, reset_ctx  optional: called instead of copying the base tensors to reset the local
 *                tensors to version 0 (e.g. regenerating synthetic weights); must return 0 or a
 *                negative sr_code with err set
 *   lock_wait_ms how long a fetch or reset waits for the folder's lock held by another receiver
 *                (>= 0; 0: one try), SR_DELTA_LOCK_WAIT_MS by default
 */
typedef struct sr_delta_receiver_opts {
    int max_workers;
    int fsync;
    int (*reset)(void *ctx, sr_err *err);
    void *reset_ctx;
    int lock_wait_ms;
} sr_delta_receiver_opts;

#define SR_DELTA_LOCK_WAIT_MS 120000

#define SR_DELTA_RECEIVER_OPTS_INIT                                                                \
    {                                                                                              \
        1, 1, NULL, NULL, SR_DELTA_LOCK_WAIT_MS                                                    \
    }

typedef struct sr_delta_receiver sr_delta_receiver;

/* What one fetch did. */
typedef struct sr_delta_fetch_result {
    int64_t from_version; /* the version before (0 after a reset) */
    int64_t version;      /* the version reached (== target on success) */
    int reset;            /* 1 if the local tensors were reset from the base first */
    int versions_applied; /* versions applied by this fetch */
    size_t applied;       /* records applied, over all versions */
    size_t skipped;       /* records naming no local tensor, over all versions */
    size_t last_payloads; /* applicable records of the last version applied */
    int last_workers;     /* min(last_payloads, max_workers): 0 when nothing applied */
    int last_threads;     /* OpenMP team size actually obtained for it (<= last_workers) */
} sr_delta_fetch_result;

/*
 * Creates a receiver whose local tensors (borrowed; patched in place) live in the caller's
 * memory, with its state in {state_dir}/state.json (state_dir is created if missing, one
 * level). `base` (borrowed, must outlive the receiver) holds the version-0 bytes: the same names
 * as `local` with the same dtypes, shapes and sizes; it may be NULL when opts->reset is set.
 * Reads and writes no file until the first fetch or reset. Errors: SR_E_INVAL (bad arguments,
 * duplicate names, unknown dtypes, sizes that disagree with shapes), SR_E_DELTA_TENSOR (base
 * differs from local), SR_E_DELTA_IO (state_dir cannot be created), SR_E_NOMEM.
 */
int sr_delta_receiver_new(sr_delta_receiver **out, const char *state_dir,
                          const sr_delta_tensor *local, size_t n_local, const sr_delta_tensor *base,
                          size_t n_base, const sr_delta_receiver_opts *opts, sr_err *err);

/* Frees the receiver (not the tensors); NULL is a no-op. */
void sr_delta_receiver_free(sr_delta_receiver *rx);

/*
 * Brings the local tensors to `target` (1..SR_DELTA_MAX_VERSION) from {sync_dir}/delta-*
 * as described above. `res` may be NULL; it is filled on failure too (as far as it got).
 */
int sr_delta_fetch(sr_delta_fetch_result *res, sr_delta_receiver *rx, const char *sync_dir,
                   int64_t target, sr_err *err);

/*
 * Resets the local tensors from the base and writes state {0, false, 0}, whatever the state
 * file held (the way out of SR_E_DELTA_STATE). Errors: SR_E_DELTA_LOCKED, SR_E_SYMLINK,
 * SR_E_DELTA_IO, the reset callback's.
 */
int sr_delta_receiver_reset(sr_delta_receiver *rx, sr_err *err);

/* Resets the local tensors from the base (version 0) without touching the folder. The reset
 * callback's errors. */
int sr_delta_receiver_reset_local(sr_delta_receiver *rx, sr_err *err);

/* Forgets which version the local tensors hold (someone else changed them): the next fetch
 * resets them first. The folder is not touched. */
void sr_delta_receiver_forget(sr_delta_receiver *rx);

/* The version the local tensors hold, or -1 when unknown. */
int64_t sr_delta_receiver_local_version(const sr_delta_receiver *rx);

/*
 * Reads the state file. *exists = 0 (and *out zeroed) when there is none. Errors:
 * SR_E_DELTA_STATE, SR_E_DELTA_IO.
 */
int sr_delta_receiver_state(sr_delta_state *out, int *exists, const sr_delta_receiver *rx,
                            sr_err *err);

/*
 * The reference's validate_ready: the state exists, is not in progress and is at `target`, and
 * so are this receiver's local tensors; SR_E_DELTA_VERSION otherwise (SR_E_DELTA_STATE,
 * SR_E_DELTA_IO from reading it).
 */
int sr_delta_receiver_check_ready(const sr_delta_receiver *rx, int64_t target, sr_err *err);

#endif /* SR_DELTA_H */
