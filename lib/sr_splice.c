#include "sr_splice.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sr_splice_priv.h"

/* ---- output region ---- */

static size_t region_bound(size_t len)
{
    return len / 4 * 3 + SPLICE_ALIGN_BUDGET + 64;
}

static int setup_output(sr_splicer *s, int64_t known, sr_err *err)
{
    s->cursor = 0;
    s->budget = SPLICE_ALIGN_BUDGET;
    if (known >= 0) {
        /* err may be NULL, so the arena's code is read from a local record. */
        sr_err ae;
        sr_err_empty(&ae);
        s->out_cap = region_bound((size_t)known);
        s->out = sr_arena_alloc(s->arena, s->out_cap, &ae);
        return s->out ? 0 : sr_err_set(err, ae.code, "splice: %s", ae.msg);
    }
    if (!s->resv) {
        size_t cap = region_bound(s->opts.max_body);
        cap = (cap + 4095) & ~(size_t)4095;
        void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return sr_err_set(err, SR_E_NOMEM, "splice: cannot reserve %zu bytes of address space",
                              cap);
        s->resv = p;
        s->resv_cap = cap;
    }
    s->out = s->resv;
    s->out_cap = s->resv_cap;
    return 0;
}

/* ---- lifecycle ---- */

int sr_splicer_new(sr_splicer **out, const sr_fields *fields, const sr_splice_opts *opts,
                   sr_err *err)
{
    *out = NULL;
    sr_splicer *s = calloc(1, sizeof(*s));
    if (!s)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a splicer");
    sr_splice_opts dflt = SR_SPLICE_OPTS_INIT;
    s->opts = opts ? *opts : dflt;
    if (!s->opts.max_body)
        s->opts.max_body = SR_SPLICE_DEFAULT_MAX_BODY;
    if (!s->opts.par_window)
        s->opts.par_window = (size_t)256 << 10;
    if (s->opts.par_window % 16) {
        free(s);
        return sr_err_set(err, SR_E_INVAL, "splice: par_window must be a multiple of 16");
    }
    s->impl = sr_base64_resolve(s->opts.impl);
    s->fields = fields;
    s->dest_field = -1;
    for (size_t i = 0; i < sr_fields_count(fields); i++) {
        const sr_field_def *d = sr_fields_at(fields, i);
        s->has_packed |= d->kind == SR_FIELD_PACKED;
        s->has_ints |= d->kind == SR_FIELD_INT_ARRAY;
        s->has_strings |= d->kind == SR_FIELD_STRING;
        s->gather_lanes[i] = d->kind == SR_FIELD_PACKED;
    }
    s->text.max = s->opts.max_body + 64;
    s->paths.max = SR_BUF_DEFAULT_MAX;
    int rc = sr_arena_new(&s->arena, region_bound(s->opts.max_body) + 4096, err);
    /* A remainder's tree takes at most ~33 bytes per byte of text ("[0,0,...]": a 64-byte node
     * per two bytes); the default maximum makes a pathological body resource.limit rather than
     * tens of gigabytes. */
    if (!rc)
        rc = sr_jdom_new(&s->jdom, 0, err);
    if (!rc)
        sr_jdom_set_flags(s->jdom, SR_JDOM_REFERENCE);
    if (rc) {
        sr_arena_free(s->arena);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void sr_splicer_free(sr_splicer *s)
{
    if (!s)
        return;
    sr_splice_i_clear_result(s);
    sr_jdom_free(s->jdom);
    sr_arena_free(s->arena);
    if (s->resv)
        munmap(s->resv, s->resv_cap);
    sr_buf_release(&s->text);
    sr_buf_release(&s->paths);
    free(s->blobs);
    free(s->ints);
    free(s->ivals);
    free(s->sbytes);
    free(s->map);
    free(s->fallback);
    free(s->fallback_field);
    free(s->entries);
    free(s->entry_ref);
    free(s->path_off);
    free(s->val_off);
    sr_buf_release(&s->walk_path);
    free(s);
}

static int begin(sr_splicer *s, int64_t expected, int64_t known, sr_err *err)
{
    sr_splice_i_clear_result(s);
    sr_arena_reset(s->arena);
    sr_buf_reset(&s->text);
    s->mode = M_TEXT;
    s->k = 0;
    s->pos = 0;
    s->expected = expected;
    s->failed = 0;
    sr_err_clear(&s->err);
    s->nblobs = s->nints = s->nmap = s->nfallback = 0;
    s->scanned = 0;
    s->ivals_len = 0;
    s->sbytes_len = 0;
    s->dest_taken = 0;
    s->active = 0;
    int rc = sr_splice_i_map(s, 0, 0, err);
    if (!rc)
        rc = setup_output(s, known, err);
    if (!rc)
        s->active = 1;
    return rc;
}

int sr_splice_stream_begin(sr_splicer *s, int64_t expected_len, sr_err *err)
{
    int64_t known = -1;
    if (expected_len >= 0)
        known =
            (uint64_t)expected_len < s->opts.max_body ? expected_len : (int64_t)s->opts.max_body;
    return begin(s, expected_len, known, err);
}

void sr_splice_set_dest(sr_splicer *s, const char *field, void *dst, size_t cap)
{
    s->dest_field = -1;
    s->dest = NULL;
    s->dest_cap = 0;
    /* Any element type may be decoded there (the dtype is read after the blob): 8-byte aligned. */
    if (!field || !dst || ((uintptr_t)dst & 7) != 0)
        return;
    for (size_t i = 0; i < sr_fields_count(s->fields); i++) {
        const sr_field_def *d = sr_fields_at(s->fields, i);
        if (d->kind == SR_FIELD_PACKED && strcmp(d->name, field) == 0) {
            s->dest_field = (int)i;
            s->dest = dst;
            s->dest_cap = cap;
            return;
        }
    }
}

cJSON *sr_splice_take_doc(sr_splicer *s)
{
    /* The splicer's tree lives in its jdom arena: the caller gets an ordinary copy. */
    cJSON *d = s->doc ? cJSON_Duplicate(s->doc, 1) : NULL;
    s->doc = NULL;
    s->res.doc = NULL;
    return d;
}

int sr_splice_retryable(int code, int retry_json_decode_only)
{
    if (retry_json_decode_only)
        return code == SR_E_SPLICE_JSON || code == SR_E_SPLICE_TRUNCATED ||
               code == SR_E_JSON_UTF8 || code == SR_E_JSON_NUMBER_OVERFLOW ||
               code == SR_E_INTARRAY_SYNTAX;
    return sr_code_class(code) == SR_CLASS_TRANSIENT;
}

/* Scans a chunk, stopping at the body's limits so that every chunking fails at the same byte. */
int sr_splice_i_feed(sr_splicer *s, const char *chunk, size_t n, sr_err *err)
{
    if (!s->active)
        return sr_err_set(err, SR_E_INVAL, "splice: feed without begin");
    if (s->failed) {
        if (err)
            *err = s->err;
        return s->failed;
    }
    uint64_t limit = s->opts.max_body;
    int over = SR_E_SPLICE_TOO_LARGE;
    if (s->expected >= 0 && (uint64_t)s->expected <= limit) {
        limit = (uint64_t)s->expected;
        over = SR_E_SPLICE_LONG;
    }
    size_t take = n;
    if (s->pos + n > limit)
        take = (size_t)(limit - s->pos);
    sr_err e; /* written and read only on failure */
    sr_err_empty(&e);
    s->chunk = chunk;
    int rc = take ? sr_splice_i_scan(s, chunk, chunk + take, &e) : 0;
    s->pos += take;
    if (!rc && take < n) {
        if (over == SR_E_SPLICE_LONG)
            rc = sr_err_set_at(&e, over, (int64_t)limit,
                               "splice: the body continues past its announced length of %llu bytes",
                               (unsigned long long)limit);
        else
            rc = sr_err_set_at(&e, over, (int64_t)limit,
                               "splice: the body exceeds the maximum of %llu bytes",
                               (unsigned long long)limit);
    }
    if (rc) {
        sr_splice_i_fail(s, &e);
        if (err)
            *err = e;
    }
    return rc;
}

int sr_splice_stream_feed(sr_splicer *s, const char *chunk, size_t n, sr_err *err)
{
    return sr_splice_i_feed(s, chunk, n, err);
}

int sr_splice_stream_finish(sr_splicer *s, const sr_splice_result **out, sr_err *err)
{
    if (out)
        *out = NULL;
    if (!s->active)
        return sr_err_set(err, SR_E_INVAL, "splice: finish without begin");
    s->active = 0;
    if (s->failed) {
        if (err)
            *err = s->err;
        return s->failed;
    }
    int rc = sr_splice_i_finish(s, err);
    if (!rc && out)
        *out = &s->res;
    return rc;
}

int sr_splice_i_scan_parallel(sr_splicer *s, const char *body, size_t len, sr_err *err)
{
    par_ctx ctx = {0};
    s->par = &ctx;
    int rc = 0;
    sr_err e = SR_ERR_INIT;
#pragma omp parallel num_threads(s->opts.threads)
#pragma omp single
    rc = sr_splice_i_feed(s, body, len, &e);
    s->par = NULL;
    if (rc && err)
        *err = e;
    return rc;
}

int sr_splice(sr_splicer *s, const char *body, size_t len, int64_t expected_len,
              const sr_splice_result **out, sr_err *err)
{
    if (out)
        *out = NULL;
    size_t known = len < s->opts.max_body ? len : s->opts.max_body;
    if (expected_len >= 0 && (uint64_t)expected_len < known)
        known = (size_t)expected_len;
    int rc = begin(s, expected_len, (int64_t)known, err);
    if (rc)
        return rc;
    if (s->opts.threads > 1 && len > 0) {
        sr_err e = SR_ERR_INIT;
        rc = sr_splice_i_scan_parallel(s, body, len, &e);
        if (rc) {
            if (err)
                *err = e;
            s->active = 0;
            return rc;
        }
    } else {
        rc = sr_splice_i_feed(s, body, len, err);
        if (rc) {
            s->active = 0;
            return rc;
        }
    }
    return sr_splice_stream_finish(s, out, err);
}
