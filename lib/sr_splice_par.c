/*
 * Threaded one-shot splice. The scan runs on one thread as usual; at each blob, instead of
 * decoding it alone, it cuts the rest of the body into windows of opts.par_window characters (a
 * multiple of 16, so that every window's output starts 4-byte aligned for the statistics) and hands
 * a batch of them to OpenMP tasks, each a fused stop-at-quote decode into the window's own output
 * bytes (window k of a blob starts at output byte k * window / 4 * 3). The blob's length is
 * unknown, so windows after the closing quote are speculative: a task that finds the quote (or an
 * error) publishes its index and later windows skip their work; outputs written past the blob's end
 * land in space no other blob uses yet, because the scan waits for the batch before it moves on. No
 * separate pass locates the quote.
 *
 * A task writes only its window's output (its last quad goes through a small buffer, since a
 * decoder may use up to 3 bytes of room past its output) and its own result slot. A blob whose
 * windows do not all decode cleanly (an error, or padding where the windows meet) is decoded
 * again, sequentially and in place, with the stream decoder of the single-threaded path, so its
 * bytes, statistics and recorded error (code, offset, message) are exactly that path's.
 */
#include <stdlib.h>
#include <string.h>

#include "sr_splice_priv.h"

#define PAR_BATCH 8

typedef struct win_res {
    size_t n;    /* characters in the window */
    size_t out;  /* bytes decoded */
    size_t qpos; /* offset of the closing quote in the window, if found */
    int found, bad, skipped;
    uint32_t lane_or;
} win_res;

static void decode_window(const char *src, size_t n, unsigned char *dst, win_res *r, int idx,
                          int *stop, int want_or, sr_b64_impl impl)
{
    memset(r, 0, sizeof(*r));
    r->n = n;
    if (__atomic_load_n(stop, __ATOMIC_ACQUIRE) < idx) {
        r->skipped = 1;
        return;
    }
    size_t head = n / 4 * 4 >= 4 ? n / 4 * 4 - 4 : 0;
    size_t used = 0, got = 0;
    int found = 0;
    /* Strict about trailing bits: a blob with any is decoded again by redo_blob, which applies
     * the splicer's own rule and records the note or the error exactly as one thread does. */
    if (head && sr_base64_decode_until_quote_ex(dst, &got, src, head, &used, &found, impl,
                                                SR_B64_STRICT_BITS, NULL, NULL)) {
        r->bad = 1;
    } else if (found) {
        r->found = 1;
        r->qpos = used;
    } else {
        /* A padded quad may end the head only if the quote follows it at once. */
        int padded = got != head / 4 * 3;
        unsigned char tmp[16];
        size_t got2 = 0;
        if (sr_base64_decode_until_quote_ex(tmp, &got2, src + head, n - head, &used, &found, impl,
                                            SR_B64_STRICT_BITS, NULL, NULL) ||
            (padded && !(found && used == 0))) {
            r->bad = 1;
        } else {
            memcpy(dst + got, tmp, got2);
            got += got2;
            r->found = found;
            r->qpos = head + used;
        }
    }
    r->out = got;
    if (r->bad || r->found) {
        int cur = __atomic_load_n(stop, __ATOMIC_ACQUIRE);
        while (idx < cur &&
               !__atomic_compare_exchange_n(stop, &cur, idx, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            ;
    }
    if (want_or && !r->bad)
        sr_splice_i_lane_or(&r->lane_or, dst, got, 0);
}

/*
 * Decodes a blob again, sequentially and in place, exactly as the single-threaded scan does:
 * same windows, same output, same statistics, same recorded error.
 */
static int redo_blob(sr_splicer *s, blob_rec *b, const char *start, sr_err *err)
{
    sr_b64_stream st;
    sr_b64_stream_init_flags(
        &st, s->impl, sr_splice_i_b64_flags(s) | (s->gather_lanes[b->field] ? SR_B64_LANES : 0));
    const char *p = start, *end = start + b->chars + 1; /* the closing quote included */
    b->nbytes = 0;
    b->lane_or = 0;
    while (p < end) {
        size_t n = (size_t)(end - p) < SPLICE_WINDOW ? (size_t)(end - p) : SPLICE_WINDOW;
        unsigned char *dst = s->out + b->out_off + b->nbytes;
        size_t w = 0, used = 0;
        int done = 0;
        sr_err e = SR_ERR_INIT;
        if (sr_b64_stream_feed(&st, dst, &w, p, n, &used, &done, &e) != 0) {
            if (!(b->err = malloc(sizeof(*b->err))))
                return sr_err_set(err, SR_E_NOMEM, "splice: cannot record a blob error");
            *b->err = e;
            b->err->offset = e.offset >= 0 ? (int64_t)b->body_off + e.offset : -1;
            return 0;
        }
        b->lane_or = st.lanes; /* SR_B64_LANES: every packed field's */
        b->nbytes += w;
        p += used;
        if (done) {
            if (st.noncanon_at >= 0)
                b->noncanon = (int64_t)b->body_off + st.noncanon_at;
            break;
        }
    }
    return 0;
}

/* Runs one batch of windows from window `first`; returns the window index that ended the blob or
 * -1. */
static int run_batch(sr_splicer *s, const char *start, const char *end, size_t first, win_res *res,
                     int *nwin)
{
    const size_t win = s->opts.par_window;
    blob_rec *b = &s->blobs[s->nblobs - 1];
    unsigned char *out = s->out + b->out_off;
    int want_or = s->gather_lanes[b->field];
    sr_b64_impl impl = s->impl;
    s->par->stop = PAR_BATCH;
    int *stop = &s->par->stop;
    int k = 0;
    for (; k < PAR_BATCH; k++) {
        size_t at = (first + (size_t)k) * win;
        if (at >= (size_t)(end - start))
            break;
        size_t n = (size_t)(end - start) - at < win ? (size_t)(end - start) - at : win;
        const char *src = start + at;
        unsigned char *dst = out + at / 4 * 3;
        win_res *r = &res[k];
#pragma omp task firstprivate(src, n, dst, r, k, stop, want_or, impl)
        decode_window(src, n, dst, r, k, stop, want_or, impl);
    }
#pragma omp taskwait
    *nwin = k;
    return s->par->stop < k ? s->par->stop : -1;
}

int sr_splice_i_locate(sr_splicer *s, const char **pp, const char *end, sr_err *err)
{
    const size_t win = s->opts.par_window;
    blob_rec *b = &s->blobs[s->nblobs - 1];
    const char *start = s->chunk + (b->body_off - s->pos);
    win_res res[PAR_BATCH];
    int bad = 0;
    size_t out = 0;
    for (size_t first = 0;; first += PAR_BATCH) {
        int nwin = 0;
        int hit = run_batch(s, start, end, first, res, &nwin);
        int upto = hit >= 0 ? hit + 1 : nwin;
        for (int k = 0; k < upto; k++) {
            b->lane_or |= res[k].lane_or;
            out += res[k].out;
            bad |= res[k].bad || (k != hit && res[k].out != win / 4 * 3);
        }
        const char *q = NULL;
        if (hit >= 0 && res[hit].found && !res[hit].bad) {
            q = start + (first + (size_t)hit) * win + res[hit].qpos;
        } else if (hit >= 0) {
            /* An error: the quote, if any, is after it; find it the plain way. */
            const char *w = start + (first + (size_t)hit) * win;
            q = memchr(w, '"', (size_t)(end - w));
            bad = 1;
        } else if (nwin < PAR_BATCH || res[nwin - 1].n < win) {
            *pp = end; /* the body ends inside the blob: finish reports it */
            return 0;
        } else {
            continue;
        }
        if (!q) {
            *pp = end;
            return 0;
        }
        b->nbytes = out;
        b->chars = (size_t)(q - start);
        int rc = bad ? redo_blob(s, b, start, err) : 0;
        *pp = q;
        return rc ? rc : 1;
    }
}
