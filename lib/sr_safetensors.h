/*
 * sr_safetensors: Hugging Face safetensors files and checkpoint folders (issue #20).
 *
 * ---- The format (huggingface/safetensors README.md, "Format") ----
 *
 *   8 bytes   N, an unsigned little-endian 64-bit integer: the header length
 *   N bytes   a UTF-8 JSON object: {"__metadata__": {str: str} (optional),
 *             "<name>": {"dtype": "F16", "shape": [d0, ..], "data_offsets": [begin, end]}, ..}
 *   the rest  the byte buffer; begin/end are relative to its start (end one past the last byte)
 * The reference reader refuses N above 100 MB, a header not starting with '{', and tensors that
 * overlap, leave a gap or do not cover the buffer; the README disallows duplicate keys. Tensor
 * bytes are little-endian, C order, packed. Empty tensors (a dim of 0) and scalars (shape [])
 * are allowed. The reference writer pads the header with spaces (0x20) to a multiple of 8.
 *
 * ---- The strict parser (sr_st_parse_header) ----
 *
 * Checks, in this order, each with its named error (err->offset is the byte of the file where
 * that is known, else -1):
 *   fewer than 8 bytes                                   SR_E_ST_TRUNCATED
 *   N > SR_ST_HEADER_MAX                                 SR_E_ST_HEADER_TOO_LARGE
 *   8 + N > file length                                  SR_E_ST_HEADER_LENGTH
 *   first header byte not '{'                            SR_E_ST_HEADER_START
 *   not one JSON value (trailing space/tab/CR/LF allowed), raw bytes not UTF-8, a number that
 *   overflows, or not an object                          SR_E_ST_HEADER_JSON
 *   the same key twice in any object                     SR_E_ST_DUPLICATE
 *   __metadata__ not an object of string values (no escaped NUL)  SR_E_ST_METADATA
 *   a name that is empty, longer than SR_ST_NAME_MAX bytes or holds an escaped NUL  SR_E_ST_NAME
 *   an entry that is not an object of exactly dtype (string), shape (array of at most
 *   SR_ST_NDIM_MAX integers) and data_offsets (array of two integers); integers must be written
 *   without fraction or exponent, be >= 0 and below 2^53 (exact in JSON readers)  SR_E_ST_TENSOR
 *   a dtype name not in the table below                  SR_E_ST_DTYPE
 *   prod(shape) * itemsize above UINT64_MAX              SR_E_ST_SHAPE_OVERFLOW
 *   begin > end, or end - begin != prod(shape) * itemsize  SR_E_ST_BYTE_COUNT
 *   sorted by (begin, end), a tensor not starting where the one before ends (the first at 0)
 *                                                        SR_E_ST_OFFSETS
 *   the last end != file length - 8 - N                  SR_E_ST_BUFFER
 * The JSON tree is built by sr_jdom (reference rules: UTF-8, duplicate keys, number overflow); a
 * header whose tree needs more than SR_JDOM_DEFAULT_MAX bytes of arena is SR_E_LIMIT.
 * Unlike the reference this parser refuses unknown keys in a tensor entry, and it knows only the
 * whole-byte dtypes (the sub-byte F4/F6 kinds are SR_E_ST_DTYPE).
 *
 * ---- Writing ----
 *
 * sr_st_write_file writes one file: tensors in strcmp() name order, back to back from offset 0,
 * the header compact JSON ("__metadata__" first when given) padded with spaces so that 8 + N is
 * a multiple of 8, then write(2) of every tensor and fsync(2) of the file. sr_st_write_checkpoint
 * writes a whole folder: `dir` must not exist; the files go to "<dir>.partial/" (removed first
 * if a crashed writer left it), each fsynced, then that folder is fsynced, renamed to `dir`, and
 * dir's parent fsynced, so a reader never sees a half-written checkpoint. A write that fails
 * after creating "<dir>.partial/" (a full disk) removes it, so the space it took is free again
 * (what cannot be removed stays; the write's own error is the one returned). One shard is written
 * as model.safetensors, n > 1 as model-0000i-of-0000n.safetensors (5 digits, i from 1; tensors in
 * name order, cut into n runs of about equal bytes).
 *
 * ---- Reading a checkpoint folder ----
 *
 * sr_st_checkpoint_open lists `dir`: exactly one of model.safetensors, or a complete shard set
 * model-<i>-of-<n>.safetensors (i = 1..n, 5 digits, one n), must be there; any other
 * *.safetensors name, a mix, a gap in the set or no file is SR_E_ST_CHECKPOINT (other files,
 * e.g. config.json or model.safetensors.index.json, are ignored). Every file is opened (regular
 * files only: SR_E_NOT_REGULAR), its header read and parsed; a name in two shards is
 * SR_E_ST_DUPLICATE. The files stay open until sr_st_checkpoint_free.
 * sr_st_checkpoint_read asks the caller, on the calling thread and in name order, where each
 * tensor's bytes go (dest), then reads them with pread(2) straight into that memory with a team
 * of min(workers, pieces) threads (sr_fill_rows; pieces are SR_ST_PIECE bytes of one tensor at
 * most, so a few large tensors still spread over the team). A short read (the file shrank) is
 * SR_E_IO.
 *
 * Ownership: an sr_st_header and an sr_st_checkpoint own their names, values and files; free
 * them with sr_st_header_free / sr_st_checkpoint_free (NULL is a no-op). Info pointers returned
 * are borrowed and live as long as their owner. Tensor data passed to the writer is only read.
 * Thread-safety: no global state; a header or checkpoint may be read from several threads, and
 * sr_st_checkpoint_read runs its own team (nested inside another team it gets a team of one).
 */
#ifndef SR_SAFETENSORS_H
#define SR_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "sr_dtype.h"
#include "sr_err.h"

/* The reference reader's cap on the header length N (100 MB). */
#define SR_ST_HEADER_MAX ((uint64_t)100000000)
/* Longest tensor name in bytes, and most dims of a shape (this reader's limits). */
#define SR_ST_NAME_MAX 1024
#define SR_ST_NDIM_MAX 16
/* Largest pread of one piece in sr_st_checkpoint_read. */
#define SR_ST_PIECE ((size_t)8 << 20)
/* Most shards of a checkpoint (5 digits). */
#define SR_ST_MAX_SHARDS 99999

/* The dtypes of the format, in the reference's order. */
typedef enum sr_st_dtype {
    SR_ST_INVALID = 0,
    SR_ST_BOOL,
    SR_ST_U8,
    SR_ST_I8,
    SR_ST_F8_E5M2,
    SR_ST_F8_E4M3,
    SR_ST_I16,
    SR_ST_U16,
    SR_ST_F16,
    SR_ST_BF16,
    SR_ST_I32,
    SR_ST_U32,
    SR_ST_F32,
    SR_ST_F64,
    SR_ST_I64,
    SR_ST_U64,
    SR_ST_DTYPE_COUNT
} sr_st_dtype;

/* The format's name ("F16"); "invalid" for a value outside the enum. */
const char *sr_st_dtype_name(sr_st_dtype d);
/* Item size in bytes; 0 for SR_ST_INVALID. */
size_t sr_st_dtype_size(sr_st_dtype d);
/* The safetensors dtype of a NumPy dtype (float16 -> F16, ...); SR_ST_INVALID if none. */
sr_st_dtype sr_st_dtype_of(sr_dtype d);

/* One tensor of a parsed header. begin/end are offsets in the byte buffer. */
typedef struct sr_st_tensor {
    const char *name; /* owned by the header, NUL-terminated, no NUL inside */
    sr_st_dtype dtype;
    int ndim;
    int64_t shape[SR_ST_NDIM_MAX];
    uint64_t begin, end;
} sr_st_tensor;

/* One __metadata__ entry. */
typedef struct sr_st_meta {
    const char *key, *value;
} sr_st_meta;

typedef struct sr_st_header {
    uint64_t header_len; /* N */
    uint64_t data_start; /* 8 + N: file offset of the byte buffer */
    uint64_t buffer_len; /* file length - 8 - N */
    size_t n_tensors;    /* sorted by name (strcmp) */
    sr_st_tensor *tensors;
    size_t n_meta; /* in file order */
    sr_st_meta *meta;
} sr_st_header;

/*
 * Reads N from the first bytes of a file: buf[0..len) with len >= 8 (else SR_E_ST_TRUNCATED),
 * then SR_E_ST_HEADER_TOO_LARGE, SR_E_ST_HEADER_LENGTH against file_len.
 */
int sr_st_header_len(uint64_t *n, const unsigned char *buf, size_t len, uint64_t file_len,
                     sr_err *err);

/*
 * Parses the header of a file of file_len bytes whose first len bytes are buf (len must cover
 * 8 + N, else SR_E_ST_HEADER_LENGTH when file_len does not either, SR_E_INVAL otherwise). On
 * success *out is a new header (sr_st_header_free). Errors as listed above, SR_E_NOMEM.
 */
int sr_st_parse_header(sr_st_header **out, const unsigned char *buf, size_t len, uint64_t file_len,
                       sr_err *err);
void sr_st_header_free(sr_st_header *h);

/* Index of tensor `name` in h->tensors (binary search), or -1. */
int64_t sr_st_header_find(const sr_st_header *h, const char *name);

/* ---- writer ---- */

typedef struct sr_st_in {
    const char *name; /* 1..SR_ST_NAME_MAX bytes, unique */
    sr_st_dtype dtype;
    int ndim; /* 0..SR_ST_NDIM_MAX */
    const int64_t *shape;
    const void *data; /* nbytes = prod(shape) * itemsize bytes */
    size_t nbytes;
} sr_st_in;

/*
 * Writes tensors t[0..n) and metadata m[0..n_meta) (may be 0) to a new file `path`
 * (O_CREAT|O_EXCL: an existing path is SR_E_IO), then fsyncs it. A bad name, dtype, shape or
 * byte count is SR_E_INVAL naming the tensor; two tensors of one name SR_E_ST_DUPLICATE.
 * The folder is not fsynced (sr_st_write_checkpoint does that).
 */
int sr_st_write_file(const char *path, const sr_st_in *t, size_t n, const sr_st_meta *m,
                     size_t n_meta, sr_err *err);

/*
 * Writes a checkpoint folder `dir` (see above) of `shards` files (1..SR_ST_MAX_SHARDS, at most n
 * when n > 0), with `workers` (>= 1) threads writing shards at once. `dir` existing is
 * SR_E_IO. Every file carries the same metadata.
 */
int sr_st_write_checkpoint(const char *dir, const sr_st_in *t, size_t n, const sr_st_meta *m,
                           size_t n_meta, int shards, int workers, sr_err *err);

/* ---- checkpoint reader ---- */

typedef struct sr_st_checkpoint sr_st_checkpoint;

/* One tensor of an open checkpoint. */
typedef struct sr_st_info {
    const sr_st_tensor *t; /* borrowed from its file's header */
    size_t nbytes;         /* end - begin */
    int file;              /* index of its file, 0 .. files-1 */
} sr_st_info;

int sr_st_checkpoint_open(sr_st_checkpoint **out, const char *dir, sr_err *err);
void sr_st_checkpoint_free(sr_st_checkpoint *c);

/* Number of tensors (over every shard) and of files. */
size_t sr_st_checkpoint_count(const sr_st_checkpoint *c);
size_t sr_st_checkpoint_files(const sr_st_checkpoint *c);
/* Sum of every tensor's bytes. */
uint64_t sr_st_checkpoint_bytes(const sr_st_checkpoint *c);

/* Tensor i (0 .. count-1, in strcmp() name order over all shards); SR_E_INVAL past the end. */
int sr_st_checkpoint_tensor(sr_st_info *out, const sr_st_checkpoint *c, size_t i, sr_err *err);
/* Index of tensor `name`, or -1. */
int64_t sr_st_checkpoint_find(const sr_st_checkpoint *c, const char *name);
/* The header of file f (its metadata), or NULL past the end. */
const sr_st_header *sr_st_checkpoint_header(const sr_st_checkpoint *c, size_t f);
/* The value of metadata key `key` in the first file, or NULL. */
const char *sr_st_checkpoint_meta(const sr_st_checkpoint *c, const char *key);

/*
 * Where tensor i (info) goes: sets *dst to caller memory of info->nbytes bytes (NULL skips the
 * tensor). Called on the calling thread, in name order, before any byte is read. Returns 0 or
 * a negative sr_code with err filled: the read then stops before reading anything.
 */
typedef int (*sr_st_dest_fn)(void *ctx, size_t i, const sr_st_info *info, void **dst, sr_err *err);

/* What one read did. */
typedef struct sr_st_read_stats {
    uint64_t bytes; /* bytes read */
    int64_t pieces; /* preads planned */
    int workers;    /* min(workers, pieces) */
} sr_st_read_stats;

/* Reads every tensor into the memory dest names, as described above (stats may be NULL). */
int sr_st_checkpoint_read(sr_st_checkpoint *c, int workers, sr_st_dest_fn dest, void *ctx,
                          sr_st_read_stats *stats, sr_err *err);

#endif /* SR_SAFETENSORS_H */
