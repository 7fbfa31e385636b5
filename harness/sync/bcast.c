/* Broadcast over HTTP, trainer side: planning buckets and sending them (sync.h; bucket framing in
 * spec/endpoints.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/endpoints.h"
#include "sync_priv.h"

void sync_bcast_free(sr_sync *s)
{
    for (size_t b = 0; b < s->n_buckets; b++) {
        sr_buf_release(&s->buckets[b].header);
        free(s->buckets[b].segs);
    }
    free(s->buckets);
    s->buckets = NULL;
    s->n_buckets = 0;
}

/* Appends a JSON string (tensor names are plain, but nothing here relies on it). */
static int put_str(sr_buf *b, const char *s, sr_err *err)
{
    int rc = sr_buf_puts(b, "\"", err);
    while (!rc && *s) {
        /* Runs of plain bytes in one append: a bucket header names every tensor. */
        size_t n = 0;
        while (s[n] && s[n] != '"' && s[n] != '\\' && (unsigned char)s[n] >= 0x20)
            n++;
        rc = n ? sr_buf_append(b, s, n, err) : 0;
        s += n;
        unsigned char c = (unsigned char)*s;
        if (rc || !c)
            break;
        rc = c == '"' || c == '\\' ? sr_buf_printf(b, err, "\\%c", c)
                                   : sr_buf_printf(b, err, "\\u%04x", c);
        s++;
    }
    return rc ? rc : sr_buf_puts(b, "\"", err);
}

/* One list of the header: `key`:[item(t0), item(t1), ...]. */
typedef int (*item_fn)(sr_buf *b, const sr_weights_info *t, sr_err *err);

static int item_name(sr_buf *b, const sr_weights_info *t, sr_err *err)
{
    return put_str(b, t->name, err);
}

/* Decimal digits of v at the end of out[24]; returns where they start. Hand-written, as the
 * checksums are: three printf calls a tensor were most of a nothing-changed plan's time. */
static char *put_digits(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

static int item_dtype(sr_buf *b, const sr_weights_info *t, sr_err *err)
{
    const char *name = sr_dtype_name(t->dtype);
    int rc = sr_buf_append(b, "\"", 1, err);
    if (!rc)
        rc = sr_buf_append(b, name, strlen(name), err);
    return rc ? rc : sr_buf_append(b, "\"", 1, err);
}

static int item_shape(sr_buf *b, const sr_weights_info *t, sr_err *err)
{
    char out[52], *end = out + sizeof(out);
    *--end = ']';
    end = put_digits(end, (uint64_t)t->shape[1]);
    *--end = ',';
    end = put_digits(end, (uint64_t)t->shape[0]);
    *--end = '[';
    return sr_buf_append(b, end, (size_t)(out + sizeof(out) - end), err);
}

static int item_size(sr_buf *b, const sr_weights_info *t, sr_err *err)
{
    char out[24], *end = put_digits(out + sizeof(out), (uint64_t)t->nbytes);
    return sr_buf_append(b, end, (size_t)(out + sizeof(out) - end), err);
}

static int item_checksum(sr_buf *b, const sr_weights_info *t, sr_err *err)
{
    char out[34];
    out[0] = out[33] = '"';
    sync_digest_hex(out + 1, t->digest_hi, t->digest_lo);
    return sr_buf_append(b, out, sizeof(out), err);
}

static int put_list(sr_buf *b, const char *key, const sr_weights *w, const sync_bucket *k,
                    item_fn fn, sr_err *err)
{
    int rc = sr_buf_printf(b, err, "\"%s\":[", key);
    for (size_t i = 0; !rc && i < k->count; i++) {
        sr_weights_info t;
        rc = sr_weights_tensor(&t, w, k->first + i, err);
        if (!rc && i)
            rc = sr_buf_puts(b, ",", err);
        if (!rc)
            rc = fn(b, &t, err);
    }
    return rc ? rc : sr_buf_puts(b, "]", err);
}

int sync_bcast_inflight(const sr_sync *s)
{
    int inflight = s->o.send_workers ? s->o.send_workers : s->pool;
    return inflight > SR_SYNC_MAX_INFLIGHT ? SR_SYNC_MAX_INFLIGHT : inflight;
}

/* `packed` 1: the header's update_info says "packed":true (every plane but vLLM's current form,
 * whose init info carries it once, vllm#50902). */
static int build_bucket(sync_bucket *k, const sr_weights *w, int64_t target, size_t index,
                        const sync_plane *pl, int packed, sr_err *err)
{
    sr_buf *b = &k->header;
    b->max = SR_BUCKET_HEADER_MAX - 1;
    /* skyrl: the collective_rpc call; vllm: the body of its native /update_weights; sglang: the
     * body of its /update_weights_from_distributed. */
    int rc = sr_buf_puts(b, pl->bucket_open, err);
    if (!rc)
        rc = put_list(b, "names", w, k, item_name, err);
    if (!rc)
        rc = sr_buf_puts(b, ",", err);
    if (!rc)
        rc = put_list(b, pl->dtype_key, w, k, item_dtype, err);
    if (!rc)
        rc = sr_buf_puts(b, ",", err);
    if (!rc)
        rc = put_list(b, "shapes", w, k, item_shape, err);
    if (!rc)
        rc = sr_buf_printf(b, err, pl->bucket_mid, (long long)target);
    if (!rc)
        rc = sr_buf_printf(b, err, "%s,\"syncroll\":{\"target_version\":%lld,\"bucket\":%zu,",
                           packed ? ",\"packed\":true" : "", (long long)target, index);
    if (!rc)
        rc = put_list(b, "sizes", w, k, item_size, err);
    if (!rc)
        rc = sr_buf_puts(b, ",", err);
    if (!rc)
        rc = put_list(b, "checksums", w, k, item_checksum, err);
    if (!rc)
        rc = sr_buf_puts(b, pl->bucket_close, err);
    k->segs = rc ? NULL : calloc(k->count + 1, sizeof(sr_fanout_seg));
    if (!rc && !k->segs)
        rc = sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate bucket segments");
    if (rc)
        return rc;
    k->segs[0] = (sr_fanout_seg){b->data, b->len};
    for (size_t i = 0; i < k->count; i++) {
        sr_weights_info t;
        sr_weights_tensor(&t, w, k->first + i, NULL);
        k->segs[i + 1] = (sr_fanout_seg){t.data, t.nbytes};
        k->bytes += t.nbytes;
    }
    return 0;
}

int sync_bcast_plan(sr_sync *s, int64_t target, sr_sync_result *res, sr_err *err)
{
    sync_bcast_free(s);
    size_t n = sr_weights_count(s->w);
    s->buckets = calloc(n ? n : 1, sizeof(sync_bucket));
    if (!s->buckets)
        return sr_err_set(err, SR_E_NOMEM, "sync: cannot plan buckets");
    int rc = 0;
    for (size_t i = 0; !rc && i < n;) {
        sync_bucket *k = &s->buckets[s->n_buckets++];
        k->first = i;
        size_t bytes = 0;
        while (i < n) {
            sr_weights_info t;
            sr_weights_tensor(&t, s->w, i, NULL);
            if (k->count && bytes + t.nbytes > s->o.bucket_bytes)
                break;
            bytes += t.nbytes;
            k->count++;
            i++;
        }
        int packed = !(s->o.control == SR_SYNC_DIALECT_VLLM && s->o.api == SR_SYNC_API_50902);
        rc = build_bucket(k, s->w, target, s->n_buckets - 1, sync_plane_of(s->o.control), packed,
                          err);
    }
    res->buckets = s->n_buckets;
    for (size_t b = 0; b < s->n_buckets; b++)
        res->bytes_sent += s->buckets[b].bytes;
    return rc;
}

int sync_bcast_send(sr_sync *s, int *ok, sr_sync_result *res, sr_err *err)
{
    size_t nb = s->n_buckets, n = 0;
    sr_fanout_req *reqs = calloc(s->n * (nb ? nb : 1), sizeof(sr_fanout_req));
    if (!reqs)
        return sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate %zu requests", s->n * nb);
    for (size_t i = 0; i < s->n; i++)
        for (size_t b = 0; ok[i] && b < nb; b++) {
            sr_fanout_req *r = &reqs[n++];
            r->engine = (int)i;
            r->path = sync_plane_of(s->o.control)->bucket_path;
            r->ctype = SR_ENGINE_BUCKET_CTYPE;
            r->segs = s->buckets[b].segs;
            r->nseg = s->buckets[b].count + 1;
        }
    int inflight = sync_bcast_inflight(s);
    int64_t budget;
    double end = sync_phase_end(s, SR_SYNC_UPDATE, &budget);
    int rc = sr_fanout_run(s->fan, reqs, n, inflight, end, budget, err);
    double first[SR_CLIENT_MAX_ENGINES], last[SR_CLIENT_MAX_ENGINES];
    int reported[SR_CLIENT_MAX_ENGINES] = {0};
    for (size_t i = 0; i < s->n; i++)
        first[i] = last[i] = -1;
    for (size_t k = 0; !rc && k < n; k++) {
        sr_fanout_req *r = &reqs[k];
        int i = r->engine;
        if (r->started && (first[i] < 0 || r->start_ms < first[i]))
            first[i] = r->start_ms;
        if (r->done && r->end_ms > last[i])
            last[i] = r->end_ms;
        if (!r->code)
            continue;
        ok[i] = 0;
        if (reported[i]++)
            continue;
        sync_check(res, sync_code(r), i, -1,
                   "engine %d (%s): POST %s bucket %zu of %zu (phase update): %s", i,
                   sr_fanout_url(s->fan, i), sync_plane_of(s->o.control)->bucket_what,
                   (size_t)(k % (nb ? nb : 1)), nb, r->msg);
    }
    for (size_t i = 0; i < s->n; i++)
        if (first[i] >= 0 && last[i] >= first[i])
            res->engines[i].apply_ns = (uint64_t)((last[i] - first[i]) * 1e6);
    sr_fanout_reqs_release(reqs, n);
    free(reqs);
    return rc;
}
