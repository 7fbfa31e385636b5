/*
 * capture: the traffic `syncroll proxy --record` writes, and its reader.
 *
 * A capture is a folder (docs/reference/proxy.md is the normative description):
 *
 *   CAPTURE/capture.jsonl   line 1, the header:
 *                             {"syncroll_capture":1,"upstream":"http://..","started_unix_ms":N,
 *                              "redacted":false}
 *                           then one line per exchange, appended when the exchange ends:
 *                             {"seq":N,"session":"id"|null,"method":"POST","uri":"/path?q",
 *                              "endpoint":"generate"|null,"status":200,
 *                              "t_start_us":N,"t_head_us":N,"t_end_us":N,
 *                              "request":BODY,"response":BODY,"complete":true,
 *                              "fault":"id"|null}
 *                           BODY = {"file":"bodies/000001.req.zst","bytes":N,"xxh3":"16 hex",
 *                                   "content_type":".."|null}
 *   CAPTURE/bodies/         each body as one zstd frame (its exact bytes, decompressed)
 *
 * Times are microseconds since the capture started. `seq` numbers exchanges in arrival order
 * (1-based); lines are in completion order. "complete" is false when the client or the upstream
 * cut the exchange short (the body holds what passed). Sessions are the X-Session-ID header.
 *
 * The reader treats a capture as untrusted input (it may come from another machine): at most
 * SR_CAPTURE_MAX_LINE bytes a line and SR_CAPTURE_MAX_EXCHANGES exchanges, every key checked for
 * type and range, body files only of the form "bodies/<digits>.(req|resp).zst" and opened without
 * following links, a body decompressed to at most the caller's bound and checked against its
 * recorded size and digest. Errors (lib/sr_err.h): capture.version (no header or another
 * version), capture.truncated (the index ends inside a line: the proxy was killed while writing
 * it), capture.corrupt (a line that is not JSON or has a wrong, missing or out-of-range value; the
 * message names the line and key), capture.body (a body file missing, not one zstd frame, or
 * not matching its size or digest), io.error, resource.limit, resource.nomem.
 *
 * Writing: sr_capture_writer_* below; thread-safe (one mutex around the index). Reading: an
 * opened capture is read-only and may be shared by threads.
 */
#ifndef SR_PROXY_CAPTURE_H
#define SR_PROXY_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "sr_buf.h"
#include "sr_err.h"

#define SR_CAPTURE_VERSION       1
#define SR_CAPTURE_MAX_LINE      (64u << 10) /* bytes of one index line */
#define SR_CAPTURE_MAX_EXCHANGES 1000000
#define SR_CAPTURE_STR_MAX       1024 /* session, uri, content types: bytes including the NUL */
#define SR_CAPTURE_MAX_INDEX     ((size_t)1 << 30) /* bytes of capture.jsonl */
#define SR_CAPTURE_INDEX         "capture.jsonl"

typedef struct sr_capture_body {
    char file[64];          /* "bodies/000001.req.zst"; "" when the body was empty */
    uint64_t bytes;         /* decompressed size */
    uint64_t xxh3;          /* XXH3-64 of the bytes */
    char content_type[128]; /* "" when none */
} sr_capture_body;

typedef struct sr_capture_exchange {
    int64_t seq;
    char session[SR_CAPTURE_STR_MAX]; /* "" when none */
    char method[16];
    char uri[SR_CAPTURE_STR_MAX];
    char endpoint[64]; /* the endpoint name (spec/endpoints.h) or "" */
    int status;        /* 0 when no answer came (reset, stall cut) */
    int64_t t_start_us, t_head_us, t_end_us;
    sr_capture_body request, response;
    int complete;
    char fault[64]; /* the proxy fault that fired, or "" */
} sr_capture_exchange;

typedef struct sr_capture sr_capture;

/*
 * Parses an index (the bytes of capture.jsonl, `len` bytes) into a capture whose bodies are read
 * from folder `dir` (NULL: none can be read; used by the fuzz target). Exchanges are ordered by
 * seq (arrival order; the file holds them in completion order). *out is freed with
 * sr_capture_free.
 */
int sr_capture_parse(sr_capture **out, const char *text, size_t len, const char *dir, sr_err *err);

/* Reads dir/capture.jsonl (at most SR_CAPTURE_MAX_INDEX bytes, else resource.limit) and parses
 * it. */
int sr_capture_open(sr_capture **out, const char *dir, sr_err *err);

void sr_capture_free(sr_capture *c);

/* Header fields and exchanges (borrowed). */
const char *sr_capture_upstream(const sr_capture *c);
int64_t sr_capture_started_unix_ms(const sr_capture *c);
int sr_capture_redacted(const sr_capture *c);
size_t sr_capture_count(const sr_capture *c);
const sr_capture_exchange *sr_capture_at(const sr_capture *c, size_t i);

/*
 * Opens body file `file` (a name the index checked: "bodies/<digits>.(req|resp).zst") of the
 * capture in folder `dir` for reading, following no link: neither `bodies` nor the file may be
 * one (io.symlink). Returns the descriptor (the caller closes it), or a negative code with err
 * set (capture.body when it cannot be opened).
 */
int sr_capture_open_body(const char *dir, const char *file, sr_err *err);

/*
 * Decompresses body `b` of the capture into `out` (replacing its contents), refusing one larger
 * than `max` bytes (resource.limit) and checking its size and digest (capture.body).
 */
int sr_capture_read_body(const sr_capture *c, const sr_capture_body *b, sr_buf *out, size_t max,
                         sr_err *err);

/* ---- writing ---- */

typedef struct sr_capture_writer sr_capture_writer;

/* Creates folder `dir` (it must not exist, or be empty) with bodies/ and the header line. */
int sr_capture_writer_open(sr_capture_writer **out, const char *dir, const char *upstream,
                           int redacted, sr_err *err);

/* Closes the index (fsync) and frees the writer; NULL is a no-op. */
int sr_capture_writer_close(sr_capture_writer *w, sr_err *err);

/* The next exchange number (1, 2, ...), taken when a request arrives. */
int64_t sr_capture_next_seq(sr_capture_writer *w);

/* Microseconds since the capture started. */
int64_t sr_capture_now_us(const sr_capture_writer *w);

/* A body being written: a zstd stream into bodies/<seq>.<kind>.zst with a running digest. */
typedef struct sr_capture_sink sr_capture_sink;

/* kind is "req" or "resp". */
int sr_capture_sink_open(sr_capture_sink **out, sr_capture_writer *w, int64_t seq, const char *kind,
                         sr_err *err);
int sr_capture_sink_write(sr_capture_sink *s, const void *data, size_t len, sr_err *err);
/* Ends the frame, fills *b (file, bytes, xxh3; content_type is left to the caller) and frees s. */
int sr_capture_sink_close(sr_capture_sink *s, sr_capture_body *b, sr_err *err);
/* Frees a sink without recording it (its file stays, as partial evidence); NULL is a no-op. */
void sr_capture_sink_abandon(sr_capture_sink *s);

/* Appends exchange `x` as one index line. */
int sr_capture_append(sr_capture_writer *w, const sr_capture_exchange *x, sr_err *err);

#endif /* SR_PROXY_CAPTURE_H */
