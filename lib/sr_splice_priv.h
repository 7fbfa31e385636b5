/*
 * Private to sr_splice*.c: the splicer's state, shared by its lifecycle and entry points
 * (sr_splice.c), the scan (sr_splice_scan.c), the re-attachment and validation (sr_splice_attach.c,
 * sr_splice_check.c), the grammar check of the parser text (sr_splice_json.c) and the threaded
 * one-shot decoder (sr_splice_par.c). Not installed, not part of the library's contract.
 */
#ifndef SR_SPLICE_PRIV_H
#define SR_SPLICE_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sr_buf.h"
#include "sr_intarray.h"
#include "sr_jdom.h"
#include "sr_splice.h"

/* Base64 characters decoded per feed: small enough that the decoded bytes are still in cache
 * when the canonical-dtype statistics read them. */
#define SPLICE_WINDOW ((size_t)64 << 10)
/* Bytes of 64-byte alignment padding a response may spend before blobs fall back to 8. */
#define SPLICE_ALIGN_BUDGET ((size_t)64 * 64)

enum { M_TEXT = 0, M_BLOB, M_SKIP, M_INTS, M_LOCATE, M_PREFIX };

typedef struct blob_rec {
    uint32_t field;    /* registry index */
    int escaped;       /* the key's opening quote was escaped (a false positive, §3.3) */
    int lookalike;     /* matched without an opening quote (opts.prefix_without_quote only) */
    uint64_t body_off; /* offset of the first base64 character in the body */
    uint64_t chars;    /* base64 characters */
    size_t out_off;    /* offset of the decoded bytes in the output region (unless in_dest) */
    unsigned char *at; /* the decoded bytes: out + out_off, or the destination (in_dest) */
    int in_dest;       /* decoded at the caller's destination (sr_splice_set_dest) */
    size_t nbytes;     /* decoded bytes */
    size_t text_off;   /* offset of the closing quote in the parser text */
    uint32_t lane_or;  /* OR of decoded byte i into bits 8 * (i % 4) (when gather_lanes) */
    int64_t noncanon;  /* body offset of a character with non-zero trailing bits, or -1 */
    sr_err *err;       /* the blob's base64 error, reported if it meets its envelope; or NULL */
    int string;        /* cut from a string-blob field (SR_FIELD_STRING), not an envelope */
} blob_rec;

typedef struct int_rec {
    uint32_t field;
    uint64_t body_off; /* offset of '[' */
    size_t text_off;   /* offset of its '[' in the parser text while it is being read */
    size_t val_off;    /* byte offset of the values in the integer store */
    size_t count;
} int_rec;

typedef struct off_map {
    size_t text;   /* offset in the parser text */
    uint64_t body; /* the body offset it corresponds to */
} off_map;

/* The threaded one-shot's shared state (sr_splice_par.c's tasks read and write it). */
typedef struct par_ctx {
    int stop; /* lowest window index of the batch that ended the blob; read atomically */
} par_ctx;

struct sr_splicer {
    const sr_fields *fields;
    sr_splice_opts opts;
    sr_b64_impl impl;
    int has_packed, has_ints, has_strings; /* the registry has entries of each kind */
    /* 1: the field's blobs are decoded with SR_B64_LANES, their lane_or complete. Every packed
     * field: the canonical-dtype check reads it, and every envelope entry's bound is made of it
     * (the vector decoders gather it in their registers; the scalar one ORs the bytes it has
     * just written, still in cache). */
    int gather_lanes[SR_FIELDS_MAX];

    /* Output region of the current response (arena block or reservation). */
    sr_arena *arena;
    unsigned char *resv; /* mmap reservation, made on first need and kept */
    size_t resv_cap;
    unsigned char *out;
    size_t out_cap, cursor, budget;
    /* sr_splice_set_dest: the registry index whose first blob of a response is decoded at
     * `dest` (-1: none), its room, and whether the current response's blob took it. */
    int dest_field;
    unsigned char *dest;
    size_t dest_cap;
    int dest_taken;

    /* Scan state. */
    sr_buf text;       /* the parser's text: everything but blobs and integer arrays */
    int mode, k;       /* mode and anchor bytes matched */
    int active;        /* a response is in progress */
    int64_t expected;  /* announced length or -1 */
    uint64_t pos;      /* body bytes consumed before the current chunk */
    const char *chunk; /* the chunk being scanned */
    sr_b64_stream st;  /* decoder of the current blob */
    sr_intarray_parser ip;
    int pfx_field;    /* M_PREFIX: the nrlre1 string field whose prefix is being copied */
    size_t pfx_len;   /* its bytes so far */
    int pfx_colons;   /* and the ':' among them */
    uint64_t scanned; /* raw bytes handed to the scan (each exactly once) */
    int failed;       /* sticky error in `err` */
    sr_err err;
    par_ctx *par; /* threaded one-shot in progress, or NULL */

    /* Records of the current response. */
    blob_rec *blobs;
    size_t nblobs, cap_blobs;
    int_rec *ints;
    size_t nints, cap_ints;
    unsigned char *ivals;  /* integer store (8-byte aligned per array) */
    unsigned char *sbytes; /* string blobs decoded from the document, 64-byte aligned each */
    size_t sbytes_len, sbytes_cap;
    size_t ivals_len, ivals_cap;
    off_map *map;
    size_t nmap, cap_map;
    size_t *fallback; /* text offsets of the integer arrays handed back to the text, ascending */
    uint32_t *fallback_field; /* and their registry indices */
    size_t nfallback, cap_fallback, cap_fallback_field;

    /* Result. */
    cJSON *doc;    /* the parsed remainder, in jdom's arena (never cJSON_Delete'd) */
    sr_jdom *jdom; /* parses the remainder; its arena is kept across responses */
    sr_splice_entry *entries;
    size_t nentries, cap_entries;
    size_t *entry_ref; /* per entry: blob or int_rec index, or SIZE_MAX */
    size_t *path_off;  /* per entry: offset of its path in `paths` */
    sr_buf paths;
    sr_splice_result res;

    /* Scratch of finish, owned by the splicer and kept across responses (no allocation per
     * body in steady state): the validation's per-entry value offsets and the walker's path. */
    size_t *val_off;
    size_t cap_val_off;
    sr_buf walk_path;
};

/* Body offset of a pointer into the chunk being scanned. */
static inline uint64_t sp_body_off(const sr_splicer *s, const char *p)
{
    return s->pos + (uint64_t)(p - s->chunk);
}

/* ---- small helpers of every sr_splice*.c file (inline: the scan loops call them) ---- */

/* The base64 flags of this splicer's blobs. */
static inline unsigned sr_splice_i_b64_flags(const sr_splicer *s)
{
    return s->opts.strict_base64 ? SR_B64_STRICT_BITS : 0;
}

/* Records `code` as the splicer's sticky error (copying `e`) and returns it. */
static inline int sr_splice_i_fail(sr_splicer *s, const sr_err *e)
{
    s->failed = e->code;
    s->err = *e;
    return e->code;
}

/* Grows a record array of `size`-byte items to hold one more; SR_E_NOMEM. */
static inline int sr_splice_i_grow(void **arr, size_t *cap, size_t n, size_t size, sr_err *err)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, nc * size);
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "splice: cannot grow a record array to %zu items", nc);
    *arr = p;
    *cap = nc;
    return 0;
}

/* Hands the integer array being read back to the text: its bytes so far are in the text already,
 * its record is dropped and the scan goes on in text mode, so the JSON parser reads it (and
 * meets its errors in document order); its '[' joins s->fallback. */
static inline int sr_splice_i_hand_back(sr_splicer *s, sr_err *err)
{
    const int_rec *r = &s->ints[s->nints - 1];
    int rc = sr_splice_i_grow((void **)&s->fallback, &s->cap_fallback, s->nfallback, sizeof(size_t),
                              err);
    if (!rc)
        rc = sr_splice_i_grow((void **)&s->fallback_field, &s->cap_fallback_field, s->nfallback,
                              sizeof(uint32_t), err);
    if (rc)
        return rc;
    s->fallback_field[s->nfallback] = r->field;
    s->fallback[s->nfallback++] = r->text_off;
    s->ivals_len = r->val_off;
    s->nints--;
    s->mode = M_TEXT;
    s->k = 0;
    return 0;
}

/* Appends a text-to-body offset pair. */
static inline int sr_splice_i_map(sr_splicer *s, size_t text, uint64_t body, sr_err *err)
{
    int rc = sr_splice_i_grow((void **)&s->map, &s->cap_map, s->nmap, sizeof(off_map), err);
    if (rc)
        return rc;
    s->map[s->nmap].text = text;
    s->map[s->nmap].body = body;
    s->nmap++;
    return 0;
}

/* Body offset of a parser-text offset. */
static inline uint64_t sr_splice_i_body_of(const sr_splicer *s, size_t text_off)
{
    size_t lo = 0, hi = s->nmap;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->map[mid].text <= text_off)
            lo = mid;
        else
            hi = mid;
    }
    return s->map[lo].body + (text_off - s->map[lo].text);
}

/* ORs n decoded bytes that start at byte `pos` of their blob into *acc (lanes by pos % 4): the
 * parallel windows' statistics (the stream gathers the same for the sequential scan). */
void sr_splice_i_lane_or(uint32_t *acc, const unsigned char *p, size_t n,
                         size_t pos); /* sr_splice_lanes.c */

/* OR of the 64-bit words of p[0, n - n % 128) (sr_splice_avx2.c; only on AVX2 CPUs). */
uint64_t sr_splice_i_or_avx2(const unsigned char *p, size_t n);

/* sr_buf_append to the text, inline when the bytes fit the capacity and the maximum: the scan
 * appends a few bytes at a time (anchor characters, the text between members), and two calls per
 * append were a tenth of a small body's scan. */
static inline int sr_splice_i_text_append(sr_splicer *s, const char *p, size_t n, sr_err *err)
{
    sr_buf *b = &s->text;
    size_t max = b->max ? b->max : SR_BUF_DEFAULT_MAX;
    if (b->data && n < b->cap - b->len && n <= max - b->len) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
    }
    return sr_buf_append(b, p, n, err);
}

/* Scans the chunk [p, end) in the current mode (sr_splice_scan.c). */
int sr_splice_i_scan(sr_splicer *s, const char *p, const char *end, sr_err *err);

/* Feeds a chunk: checks the body limits, scans, and records a sticky error. */
int sr_splice_i_feed(sr_splicer *s, const char *chunk, size_t n, sr_err *err);

/* Closes the current blob at the '"' at q (or with its error recorded). */
int sr_splice_i_end_blob(sr_splicer *s, const char *q, sr_err *err);

enum {
    SR_SPLICE_JSON_COMPLETE = 0,
    SR_SPLICE_JSON_PREFIX = 1,
    SR_SPLICE_JSON_INVALID = -1,
    SR_SPLICE_JSON_UTF8 = -2,
    SR_SPLICE_JSON_OVERFLOW = -3,
    SR_SPLICE_JSON_NOMEM = -4
};

/*
 * Classifies the parser text t[0, n) by RFC 8259 and the reference parser's rules
 * (sr_splice_json.c), at any depth: COMPLETE for one JSON document; PREFIX if it could still
 * become one (the body was cut, or it is a top-level number that could continue); else, with
 * *bad at the first offending byte, UTF8 (a string that is not UTF-8), OVERFLOW (a number that
 * rounds to infinity) or INVALID. arrays[0, narrays) are the sorted text offsets of the '[' of
 * integer arrays the scan handed back to the text; *in_array is 1 + the index of the innermost
 * one still open at the error, or 0. The splice runs it only after the parser refused the text,
 * to tell a cut body from an invalid one and to look past a nesting too deep for the parser.
 * NOMEM if its stack cannot be allocated.
 */
int sr_splice_i_json_check(const char *t, size_t n, const size_t *arrays, size_t narrays,
                           size_t *bad, size_t *in_array);

/* After the scan: parses, re-attaches, validates and fills s->res (sr_splice_attach.c). */
int sr_splice_i_finish(sr_splicer *s, sr_err *err);

/* Validates every entry in document order and sets the views (sr_splice_check.c). */
int sr_splice_i_validate(sr_splicer *s, sr_err *err);

/* Releases the result of the previous response (document, sidecars, blob errors). */
void sr_splice_i_clear_result(sr_splicer *s);

/* The threaded one-shot scan and decode (sr_splice.c: the scan in an OpenMP team). */
int sr_splice_i_scan_parallel(sr_splicer *s, const char *body, size_t len, sr_err *err);

/*
 * Locate-mode handler called by the scan when s->par is set (sr_splice_par.c): decodes the blob
 * from *pp on in parallel windows; returns 1 with *pp at its closing '"' (the scan then closes
 * the blob with sr_splice_i_end_blob), 0 with *pp = end when the chunk ends inside it, or an
 * error.
 */
int sr_splice_i_locate(sr_splicer *s, const char **pp, const char *end, sr_err *err);

#endif /* SR_SPLICE_PRIV_H */
