/*
 * sr_file: reading a file or a stream whole into an sr_buf, with a maximum size, and opening a
 * path for reading without blocking on a FIFO or a device.
 *
 * Thread-safety: none beyond the buffer's (one owner at a time); distinct buffers and paths may
 * be read from distinct threads.
 */
#ifndef SR_FILE_H
#define SR_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "sr_buf.h"
#include "sr_err.h"

/*
 * Opens `path` for reading without ever blocking: the open is O_NONBLOCK (a FIFO with no writer
 * would otherwise wait forever), and anything but a regular file is refused before a byte is
 * read. On success *out is a blocking stream the caller closes with fclose.
 * Errors: SR_E_IO "<path>: cannot open: <errno text>" (the real errno: ENOENT, ELOOP, EACCES, ...);
 * SR_E_NOT_REGULAR "<path>: not a regular file (a FIFO|a character device|...)".
 */
int sr_file_open_regular(FILE **out, const char *path, sr_err *err);

/*
 * Reads the whole file at `path` into `out` (initialised: SR_BUF_INIT or a buffer in use), which
 * is released first and whose `max` becomes `max` (0: SR_BUF_DEFAULT_MAX). A file of exactly
 * `max` bytes fits. On success `out` holds the bytes, NUL-terminated with `data` never NULL (an
 * empty file gives ""); the caller releases it with sr_buf_release. On failure `out` holds
 * nothing (data NULL, len 0).
 * The file is opened with sr_file_open_regular, so a FIFO, device or directory is refused with
 * SR_E_NOT_REGULAR instead of blocking.
 * Errors: SR_E_IO "<path>: cannot open: <errno text>" or "<path>: read error: <errno text>";
 * SR_E_LIMIT "<path>: <size> bytes, larger than the limit of <max> bytes" (a stream whose size
 * is not known beforehand gives its size as "more than <max>"); SR_E_NOMEM.
 */
int sr_file_read(sr_buf *out, const char *path, size_t max, sr_err *err);

/*
 * As sr_file_read for an open stream (e.g. stdin), read to its end and not closed; `name`
 * stands for the path in messages.
 */
int sr_file_read_stream(sr_buf *out, FILE *f, const char *name, size_t max, sr_err *err);

#endif /* SR_FILE_H */
