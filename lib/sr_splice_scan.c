/* The splice's scan (sr_splice_priv.h): the body's bytes in their modes (text, a blob's base64, an
 * integer array, a string, skipped bytes), finding each registered field's key and anchor, and
 * handing the text between them to the remainder. One chunk at a time: a chunk may end anywhere,
 * and every chunking gives the same result (unit.splice_stream). */
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sr_nrlre.h"
#include "sr_splice.h"
#include "sr_splice_priv.h"

static const char ANCHOR[] = ":{\"data\":\"";
#define ANCHOR_LEN 10

/* Number of consecutive backslashes that end text[0, at). */
static size_t backslashes_before(const sr_buf *t, size_t at)
{
    size_t n = 0;
    while (at > n && t->data[at - n - 1] == '\\')
        n++;
    return n;
}

/*
 * The registered field whose `"name"` ends at text offset `end` (exclusive), of kind `kind`, or
 * -1. *escaped tells whether its opening quote is preceded by an odd run of backslashes. With
 * `lookalike` non-NULL (the quirk prefix_without_quote) a name whose opening quote is missing
 * also matches, and *lookalike tells which kind of match it was.
 */
static int match_key(const sr_splicer *s, size_t end, sr_field_kind kind, int *escaped,
                     int *lookalike)
{
    const sr_buf *t = &s->text;
    if (end < 3 || t->data[end - 1] != '"')
        return -1;
    size_t n = sr_fields_count(s->fields);
    for (size_t i = 0; i < n; i++) {
        const sr_field_def *d = sr_fields_at(s->fields, i);
        size_t L = d->name_len;
        if (d->kind != kind || end < L + 2)
            continue;
        size_t q = end - L - 2;
        if (memcmp(t->data + q + 1, d->name, L) != 0 || (t->data[q] != '"' && !lookalike))
            continue;
        *escaped = t->data[q] == '"' && (backslashes_before(t, q) & 1);
        if (lookalike)
            *lookalike = t->data[q] != '"';
        return (int)i;
    }
    return -1;
}

/* The next blob's offset in the output region: 64-byte aligned while the budget lasts, else 8. */
static size_t next_out_off(sr_splicer *s)
{
    size_t pad = (64 - (s->cursor & 63)) & 63;
    if (pad <= s->budget)
        s->budget -= pad;
    else
        pad = (8 - (s->cursor & 7)) & 7;
    return s->cursor + pad;
}

static int start_blob(sr_splicer *s, int field, int escaped, int lookalike, const char *p,
                      sr_err *err)
{
    const sr_field_def *d = sr_fields_at(s->fields, (size_t)field);
    int rc = sr_splice_i_grow((void **)&s->blobs, &s->cap_blobs, s->nblobs, sizeof(blob_rec), err);
    if (rc)
        return rc;
    blob_rec *b = &s->blobs[s->nblobs++];
    memset(b, 0, sizeof(*b));
    b->field = (uint32_t)field;
    b->escaped = escaped;
    b->lookalike = lookalike;
    b->body_off = sp_body_off(s, p);
    b->noncanon = -1;
    b->string = d->kind == SR_FIELD_STRING;
    if (field == s->dest_field && !s->dest_taken && !s->par) {
        /* The caller's destination (sr_splice_set_dest): the region is not used for it. */
        s->dest_taken = 1;
        b->in_dest = 1;
        b->at = s->dest;
    } else {
        b->out_off = next_out_off(s);
        b->at = s->out + b->out_off;
        s->cursor = b->out_off;
    }
    sr_b64_stream_init_flags(
        &s->st, s->impl, sr_splice_i_b64_flags(s) | (s->gather_lanes[field] ? SR_B64_LANES : 0));
    s->mode = s->par ? M_LOCATE : M_BLOB;
    return 0;
}

/* The destination cannot hold the blob being decoded: its bytes so far move to the output
 * region (which always has room for every blob of the body) and the rest follows them there. */
static int leave_dest(sr_splicer *s, blob_rec *b, sr_err *err)
{
    b->out_off = next_out_off(s);
    if (b->out_off + b->nbytes > s->out_cap)
        return sr_err_set(err, SR_E_INTERNAL, "splice: output region bound violated");
    memcpy(s->out + b->out_off, b->at, b->nbytes);
    b->at = s->out + b->out_off;
    b->in_dest = 0;
    s->cursor = b->out_off;
    return 0;
}

int sr_splice_i_end_blob(sr_splicer *s, const char *q, sr_err *err)
{
    blob_rec *b = &s->blobs[s->nblobs - 1];
    b->chars = sp_body_off(s, q) - b->body_off;
    b->text_off = s->text.len;
    if (!b->in_dest)
        s->cursor = b->out_off + b->nbytes;
    s->mode = M_TEXT;
    /* The closing quote stays in the text: the parser sees "". */
    return sr_splice_i_map(s, s->text.len, sp_body_off(s, q), err);
}

static int start_ints(sr_splicer *s, int field, const char *bracket, sr_err *err)
{
    int rc = sr_splice_i_grow((void **)&s->ints, &s->cap_ints, s->nints, sizeof(int_rec), err);
    size_t at = s->text.len;
    if (!rc)
        rc = sr_splice_i_map(s, at, sp_body_off(s, bracket), err);
    /* The array's bytes go to the text too while it is read: if it turns out not to be one the
     * fast path takes, the text holds it as the reference's parser sees it (hand_back). */
    if (!rc)
        rc = sr_splice_i_text_append(s, "[", 1, err);
    if (rc)
        return rc;
    const sr_field_def *d = sr_fields_at(s->fields, (size_t)field);
    int_rec *r = &s->ints[s->nints++];
    r->field = (uint32_t)field;
    r->text_off = at;
    r->body_off = sp_body_off(s, bracket);
    r->val_off = (s->ivals_len + 7) & ~(size_t)7;
    r->count = 0;
    sr_intarray_init(&s->ip, d->min, d->max);
    s->mode = M_INTS;
    return 0;
}

/*
 * A string-blob key `"name":"` was matched at p (its opening quote): the quote goes to the text
 * (the parser sees "" in place of the base64, or the nrlre1 prefix, which is copied to the text
 * first in M_PREFIX), and the blob starts after it.
 */
static int start_string(sr_splicer *s, int field, const char *p, sr_err *err)
{
    int rc = sr_splice_i_text_append(s, "\"", 1, err);
    if (rc)
        return rc;
    if (sr_fields_at(s->fields, (size_t)field)->wire != SR_WIRE_NRLRE)
        return start_blob(s, field, 0, 0, p + 1, err);
    s->pfx_field = field;
    s->pfx_len = 0;
    s->pfx_colons = 0;
    s->mode = M_PREFIX;
    return 0;
}

/*
 * Prefix mode (nrlre1 strings): copies "nrlre1:<dtype>:<shape>:" to the text; the blob starts
 * after the third ':'. A string that ends (or holds an escape) first, or a prefix longer than any
 * the format allows, goes on as ordinary text: the document's string is then decoded whole by
 * the validation, which names what is wrong with it.
 */
static int scan_prefix(sr_splicer *s, const char **pp, const char *end, sr_err *err)
{
    const char *p = *pp;
    while (p < end) {
        char c = *p;
        if (c == '"' || c == '\\' || s->pfx_len >= SR_NRLRE_PREFIX_MAX) {
            s->mode = M_TEXT;
            s->k = 0;
            break;
        }
        int rc = sr_splice_i_text_append(s, p, 1, err);
        if (rc)
            return rc;
        p++;
        s->pfx_len++;
        if (c == ':' && ++s->pfx_colons == 3) {
            *pp = p;
            rc = sr_splice_i_map(s, s->text.len, sp_body_off(s, p), err);
            return rc ? rc : start_blob(s, s->pfx_field, 0, 0, p, err);
        }
    }
    *pp = p;
    return 0;
}

/*
 * The first ':' in [p, end) that may start an anchor, an integer array or a string: one followed
 * by '{', '[' or '"', or the last byte of the chunk (the next chunk decides); NULL if none. A ':'
 * before anything else (a number, in the logprob objects) would only take the anchor state to 1
 * and back. With SSE2, 16 positions at a time: the bytes and the bytes after them, loaded only
 * while both lie inside the chunk.
 */
static const char *next_colon(const char *p, const char *end)
{
#if defined(__SSE2__)
    const __m128i colon = _mm_set1_epi8(':'), brace = _mm_set1_epi8('{'),
                  bracket = _mm_set1_epi8('['), quote = _mm_set1_epi8('"');
    for (; end - p > 16; p += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 1));
        __m128i next =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, brace), _mm_cmpeq_epi8(b, bracket)),
                         _mm_cmpeq_epi8(b, quote));
        unsigned bits = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, colon), next));
        if (bits)
            return p + __builtin_ctz(bits);
    }
#endif
    for (; p < end; p++)
        if (*p == ':' && (p + 1 == end || p[1] == '{' || p[1] == '[' || p[1] == '"'))
            return p;
    return NULL;
}

/* Text mode: copies text and matches anchors until a blob or integer array starts. */
static int scan_text(sr_splicer *s, const char **pp, const char *end, sr_err *err)
{
    const char *p = *pp;
    int rc = 0;
    while (p < end && !rc) {
        if (s->k == 0) {
            /* The text up to the next ':' that may start something is copied in one append. */
            const char *from = p, *q = next_colon(p, end);
            const char *stop = q ? q + 1 : end;
            rc = sr_splice_i_text_append(s, from, (size_t)(stop - from), err);
            p = stop;
            s->k = q ? 1 : 0;
            continue;
        }
        char c = *p;
        if (s->k == 1 && c == '[' && s->has_ints) {
            int esc = 0;
            int f = match_key(s, s->text.len - 1, SR_FIELD_INT_ARRAY, &esc, NULL);
            if (f >= 0 && !esc) {
                s->k = 0;
                rc = start_ints(s, f, p, err);
                p++;
                break;
            }
        }
        if (s->k == 1 && c == '"' && s->has_strings) {
            int esc = 0;
            int f = match_key(s, s->text.len - 1, SR_FIELD_STRING, &esc, NULL);
            if (f >= 0 && !esc) {
                s->k = 0;
                rc = start_string(s, f, p, err);
                p++;
                break;
            }
        }
        if (c != ANCHOR[s->k]) {
            /* Only `:` and `:{"data":` end with a prefix of the anchor (its ':'). */
            s->k = s->k == 9 ? 1 : 0;
            continue;
        }
        size_t want = (size_t)(ANCHOR_LEN - s->k);
        size_t run = 1;
        if ((size_t)(end - p) >= want && memcmp(p, ANCHOR + s->k, want) == 0)
            run = want;
        rc = sr_splice_i_text_append(s, p, run, err);
        p += run;
        s->k += (int)run;
        if (s->k == ANCHOR_LEN) {
            s->k = 0;
            int esc = 0, look = 0;
            int f = s->has_packed ? match_key(s, s->text.len - ANCHOR_LEN, SR_FIELD_PACKED, &esc,
                                              s->opts.prefix_without_quote ? &look : NULL)
                                  : -1;
            if (f >= 0 && !rc) {
                rc = start_blob(s, f, esc, look, p, err);
                break;
            }
        }
    }
    *pp = p;
    return rc;
}

/* Blob mode: decodes up to the closing quote, one window at a time. */
static int scan_blob(sr_splicer *s, const char **pp, const char *end, sr_err *err)
{
    const char *p = *pp;
    blob_rec *b = &s->blobs[s->nblobs - 1];
    while (p < end) {
        size_t n = (size_t)(end - p) < SPLICE_WINDOW ? (size_t)(end - p) : SPLICE_WINDOW;
        size_t room = sr_base64_decoded_max((size_t)s->st.ncarry + n);
        if (b->in_dest && b->nbytes + room > s->dest_cap) {
            int rc = leave_dest(s, b, err);
            if (rc)
                return rc;
        }
        if (!b->in_dest && b->out_off + b->nbytes + room > s->out_cap)
            return sr_err_set(err, SR_E_INTERNAL, "splice: output region bound violated");
        unsigned char *dst = b->at + b->nbytes;
        size_t w = 0, used = 0;
        int done = 0;
        sr_err e;
        sr_err_empty(&e);
        int rc = sr_b64_stream_feed(&s->st, dst, &w, p, n, &used, &done, &e);
        if (rc) {
            /* Kept for the envelope: the reference reports bad base64 only when unpacking. */
            b->err = malloc(sizeof(*b->err));
            if (!b->err)
                return sr_err_set(err, SR_E_NOMEM, "splice: cannot record a blob error");
            *b->err = e;
            b->err->offset = e.offset >= 0 ? (int64_t)b->body_off + e.offset : -1;
            s->mode = M_SKIP;
            break;
        }
        b->lane_or = s->st.lanes; /* SR_B64_LANES: every packed field's */
        b->nbytes += w;
        p += used;
        if (done) {
            if (s->st.noncanon_at >= 0)
                b->noncanon = (int64_t)b->body_off + s->st.noncanon_at;
            *pp = p;
            return sr_splice_i_end_blob(s, p, err);
        }
    }
    *pp = p;
    return 0;
}

static int scan_skip(sr_splicer *s, const char **pp, const char *end, sr_err *err)
{
    const char *q = memchr(*pp, '"', (size_t)(end - *pp));
    if (!q) {
        *pp = end;
        return 0;
    }
    *pp = q;
    return sr_splice_i_end_blob(s, q, err);
}

static int scan_ints(sr_splicer *s, const char **pp, const char *end, sr_err *err)
{
    int_rec *r = &s->ints[s->nints - 1];
    size_t n = (size_t)(end - *pp);
    size_t width = (size_t)s->ip.width;
    size_t need = r->val_off + ((size_t)s->ip.count + sr_intarray_max_values(n)) * width;
    if (need > s->ivals_cap) {
        size_t nc = s->ivals_cap ? s->ivals_cap : 4096;
        while (nc < need)
            nc *= 2;
        unsigned char *v = realloc(s->ivals, nc);
        if (!v)
            return sr_err_set(err, SR_E_NOMEM, "splice: cannot grow the integer store to %zu bytes",
                              nc);
        s->ivals = v;
        s->ivals_cap = nc;
    }
    size_t used = 0;
    int done = 0;
    sr_err ie;
    sr_err_empty(&ie);
    int rc = sr_intarray_feed(&s->ip, s->ivals + r->val_off, *pp, n, &used, &done, &ie);
    if (rc && rc != SR_E_INTARRAY_SYNTAX && rc != SR_E_INTARRAY_STRICT) {
        if (err)
            *err = ie;
        return rc;
    }
    int rc2 = sr_splice_i_text_append(s, *pp, used, err);
    if (rc2)
        return rc2;
    *pp += used;
    if (rc) /* not an array of integers in range: the JSON parser reads it instead */
        return sr_splice_i_hand_back(s, err);
    r->count = (size_t)s->ip.count;
    s->ivals_len = r->val_off + r->count * width;
    if (done) {
        /* Spliced: the parser sees the placeholder {} instead. */
        s->text.len = r->text_off;
        s->mode = M_TEXT;
        if ((rc = sr_splice_i_text_append(s, "{}", 2, err)))
            return rc;
        return sr_splice_i_map(s, s->text.len, sp_body_off(s, *pp), err);
    }
    return 0;
}

int sr_splice_i_scan(sr_splicer *s, const char *p, const char *end, sr_err *err)
{
    int rc = 0;
    s->scanned += (uint64_t)(end - p);
    while (p < end && !rc) {
        switch (s->mode) {
        case M_TEXT:
            rc = scan_text(s, &p, end, err);
            break;
        case M_BLOB:
            rc = scan_blob(s, &p, end, err);
            break;
        case M_SKIP:
            rc = scan_skip(s, &p, end, err);
            break;
        case M_INTS:
            rc = scan_ints(s, &p, end, err);
            break;
        case M_PREFIX:
            rc = scan_prefix(s, &p, end, err);
            break;
        case M_LOCATE:
            rc = sr_splice_i_locate(s, &p, end, err);
            if (rc == 1)
                rc = sr_splice_i_end_blob(s, p, err);
            break;
        default:
            rc = sr_err_set(err, SR_E_INTERNAL, "splice: bad scan mode");
        }
    }
    return rc;
}
