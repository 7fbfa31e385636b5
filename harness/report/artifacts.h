/*
 * artifacts: bounded writers for a failing scenario's folder <run>/artifacts/<scenario>/
 * (docs/internals/design.md §6). The runner creates the folder and writes the expanded scenario
 * and the engine config itself; these functions write the evidence of a failure, which
 * harness/run/evidence.h lays out (its folders, names and bounds):
 *
 *   sr_artifact_bytes       raw request or response bytes of the failing exchange, at most
 *                           `max` of them: the whole when it fits, else a window centred on the
 *                           byte the error points at (sr_err.offset), else the head;
 *   sr_artifact_trace_rows  the decoded route rows around the first mismatching token row, the
 *                           captured rows next to the oracle's, one line per (row, layer), with
 *                           '!' where they differ;
 *   sr_artifact_copy_tail   an engine log (or any file), its last `max` bytes.
 *
 * The *_as writers, sr_artifact_text, sr_artifact_npy_i32 and sr_artifact_note (below) take a
 * description. Every writer appends one line to <dir>/index.txt saying what the file holds and,
 * when cut, which part:
 *   "response-1-0-2.bin: bytes [1048576, 2097152) of 126877696 (cut around byte 1572864)".
 *
 * Arguments: `dir` must exist; `name` is a plain file name (no '/', not "." or "..", at most
 * SR_ARTIFACT_NAME_MAX bytes); an existing file of that name is replaced. max 0 means
 * SR_ARTIFACT_MAX_BYTES.
 *
 * Errors: SR_E_INVAL (bad name, NULL data with len > 0, arrays that are not 3-D integer
 * [rows, layers, topk]), SR_E_IO (cannot read the source or write the artifact), SR_E_NOMEM.
 *
 * Thread-safety: calls with distinct names may run on distinct threads (index.txt lines are
 * appended with one write each).
 */
#ifndef SR_ARTIFACTS_H
#define SR_ARTIFACTS_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"
#include "sr_ndarray.h"

#define SR_ARTIFACT_MAX_BYTES   ((size_t)1 << 20) /* default bound of one artifact: 1 MiB */
#define SR_ARTIFACT_NAME_MAX    128
#define SR_ARTIFACT_MAX_CONTEXT 16 /* rows either side of a mismatch, at most */

/*
 * Writes dir/name with at most `max` bytes of data[0, len). focus: a byte offset to keep in the
 * middle of the window when the data is cut, or -1 for the head.
 */
int sr_artifact_bytes(const char *dir, const char *name, const void *data, size_t len,
                      int64_t focus, size_t max, sr_err *err);

/*
 * Writes dir/name, a text table of the rows [row - context, row + context] (context 0 means 3;
 * at most SR_ARTIFACT_MAX_CONTEXT) of `got` (the captured routes) and `want` (the oracle's), each
 * a [rows, layers, topk] integer array or NULL. Rows missing from one side print as "-". When
 * both have the same [layers, topk], differing (row, layer) lines end in " !". At most 16
 * experts are printed per entry.
 */
int sr_artifact_trace_rows(const char *dir, const char *name, const sr_ndarray *got,
                           const sr_ndarray *want, int64_t row, int64_t context, sr_err *err);

/* Copies the last `max` bytes of file `src` (all of it when smaller) to dir/name. */
int sr_artifact_copy_tail(const char *dir, const char *name, const char *src, size_t max,
                          sr_err *err);

/*
 * The writers above with a description: the index.txt line reads "<name>: <desc>; <part>"
 * (desc NULL: as above). sr_artifact_copy_tail_as returns the bytes written in *written (may be
 * NULL).
 */
int sr_artifact_bytes_as(const char *dir, const char *name, const char *desc, const void *data,
                         size_t len, int64_t focus, size_t max, sr_err *err);
int sr_artifact_copy_tail_as(const char *dir, const char *name, const char *desc, const char *src,
                             size_t max, size_t *written, sr_err *err);

/* Writes dir/name with `len` bytes of text (all of them), listed as "<name>: <desc>". */
int sr_artifact_text(const char *dir, const char *name, const char *desc, const char *text,
                     size_t len, sr_err *err);

/*
 * Writes dir/name as a NumPy .npy file (format 1.0, C order) of a little-endian int32 matrix
 * [rows, cols] (data row-major, rows * cols values), listed as "<name>: <desc>".
 */
int sr_artifact_npy_i32(const char *dir, const char *name, const char *desc, const int32_t *data,
                        int64_t rows, int64_t cols, sr_err *err);

/* Appends "<name>: <desc>" to dir/index.txt without writing a file (e.g. a file left out). */
int sr_artifact_note(const char *dir, const char *name, const char *desc, sr_err *err);

#endif /* SR_ARTIFACTS_H */
