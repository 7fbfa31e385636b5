#include "sr_collate.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sr_pool.h"

/* Padding rows are copied from a prebuilt block of about this size, small enough to stay in L1
 * while large enough that each memcpy call streams a useful amount. */
#define PATTERN_TARGET_BYTES 16384
/* Outputs at least this large are 2 MiB aligned and asked for transparent huge pages, which
 * makes the first touch of a fresh buffer several times cheaper. */
#define HUGE_ALIGN ((size_t)2 << 20)

typedef struct sample_plan {
    const unsigned char *src; /* route rows of the sample */
    sr_dtype dtype;           /* their dtype */
    int64_t pad;              /* left padding columns */
    int64_t rows;             /* captured rows copied */
} sample_plan;

typedef struct fill_ctx {
    const sample_plan *plan;
    unsigned char *out;
    uint8_t *mask;
    const unsigned char *pattern;
    size_t pattern_bytes; /* whole padding rows */
    size_t row_bytes;     /* L * K * itemsize of the batch dtype */
    size_t row_elems;     /* L * K */
    sr_dtype dtype;       /* batch dtype */
    int64_t t_max;
} fill_ctx;

void sr_collate_buf_release(sr_collate_buf *buf)
{
    size_t max = buf->max_bytes;
    free(buf->routes);
    free(buf->mask);
    free(buf->pattern);
    sr_collate_buf init = SR_COLLATE_BUF_INIT;
    *buf = init;
    buf->max_bytes = max;
}

/* Grows *p to at least `need` bytes; the old contents are not kept. */
static int grow(void **p, size_t *cap, size_t need, sr_err *err)
{
    if (need <= *cap && *p)
        return 0;
    size_t align = need >= 2 * HUGE_ALIGN ? HUGE_ALIGN : 64;
    size_t size = (need + align - 1) / align * align;
    if (size < need)
        return sr_err_set(err, SR_E_LIMIT, "collation buffer of %zu bytes is too large", need);
    void *q = NULL;
    if (posix_memalign(&q, align, size ? size : align))
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a collation buffer of %zu bytes", need);
    if (align == HUGE_ALIGN)
        (void)madvise(q, size, MADV_HUGEPAGE);
    free(*p);
    *p = q;
    *cap = size;
    return 0;
}

static int input_error(sr_err *err, int64_t i, const char *what)
{
    return sr_err_set_at(err, SR_E_COLLATE_INPUT, i, "rollout_expert_indices %s at sample %lld",
                         what, (long long)i);
}

/* Per-sample type checks: an array, a consistent descriptor, a canonical dtype. */
static int check_types(const sr_collate_sample *s, int64_t n, sr_err *err)
{
    for (int64_t i = 0; i < n; i++) {
        const sr_ndarray *a = s[i].routes;
        if (!a)
            return input_error(err, i, "entries must be NumPy arrays, got NULL");
        size_t item = sr_dtype_size(a->dtype), nbytes;
        if (!item || a->ndim < 0 || a->ndim > SR_NDIM_MAX ||
            sr_shape_bytes(&nbytes, NULL, a->shape, a->ndim, item, NULL) || nbytes != a->nbytes ||
            (nbytes && !a->data) || (uintptr_t)a->data % item)
            return input_error(err, i, "entries must be NumPy arrays, got an inconsistent array");
        if (!(SR_ROUTE_DTYPES & SR_DTYPE_BIT(a->dtype)))
            return sr_err_set_at(err, SR_E_COLLATE_INPUT, i,
                                 "rollout_expert_indices must use a canonical routed-expert dtype "
                                 "(uint8, int16, int32), got %s at sample %lld",
                                 sr_dtype_name(a->dtype), (long long)i);
    }
    return 0;
}

/* Shape checks: the first sample fixes [L, K]; every sample must share it. */
static int check_shapes(const sr_collate_sample *s, int64_t n, sr_err *err)
{
    const sr_ndarray *first = s[0].routes;
    if (first->ndim != 3 || first->shape[0] < 1)
        return sr_err_set_at(err, SR_E_COLLATE_INPUT, 0,
                             "rollout_expert_indices must contain routes for every trajectory");
    if (first->shape[2] < 1)
        return sr_err_set_at(err, SR_E_COLLATE_INPUT, 0,
                             "rollout_expert_indices must contain at least one expert per layer");
    if (first->shape[1] < 1)
        return sr_err_set_at(err, SR_E_COLLATE_INPUT, 0,
                             "rollout_expert_indices must contain at least one MoE layer");
    for (int64_t i = 0; i < n; i++) {
        const sr_ndarray *a = s[i].routes;
        if (a->ndim != 3 || a->shape[1] != first->shape[1] || a->shape[2] != first->shape[2]) {
            char desc[200];
            return sr_err_set_at(err, SR_E_COLLATE_INPUT, i,
                                 "rollout_expert_indices must share [layers, topk], got shape %s "
                                 "at sample %lld",
                                 sr_ndarray_desc(a->dtype, a->ndim, a->shape, desc, sizeof(desc)),
                                 (long long)i);
        }
    }
    return 0;
}

/* Row checks; fills the plan and T_max. */
static int check_rows(sample_plan *plan, int64_t *t_max, const sr_collate_sample *s, int64_t n,
                      sr_err *err)
{
    int64_t tm = 0;
    for (int64_t i = 0; i < n; i++) {
        const sr_collate_sample *x = &s[i];
        if (x->prompt_len < 0 || x->response_len < 0 || x->prompt_len > INT64_MAX - x->response_len)
            return input_error(err, i, "has a negative or overflowing prompt or response length");
        int64_t held = x->routes->shape[0];
        int64_t rows = x->captured_rows == -1 ? held : x->captured_rows;
        if (rows < 0 || rows > held)
            return sr_err_set_at(err, SR_E_COLLATE_INPUT, i,
                                 "rollout_expert_indices sample %lld claims %lld captured rows but "
                                 "holds %lld",
                                 (long long)i, (long long)x->captured_rows, (long long)held);
        int64_t real = x->prompt_len + x->response_len;
        if (rows < 1 || rows > real)
            return sr_err_set_at(err, SR_E_COLLATE_ROWS, i,
                                 "Trajectory %lld has %lld route rows for %lld tokens",
                                 (long long)i, (long long)rows, (long long)real);
        plan[i].src = x->routes->data;
        plan[i].dtype = x->routes->dtype;
        plan[i].pad = real; /* turned into the padding once T_max is known */
        plan[i].rows = rows;
        tm = real > tm ? real : tm;
    }
    for (int64_t i = 0; i < n; i++)
        plan[i].pad = tm - plan[i].pad;
    *t_max = tm;
    return 0;
}

static void put_padding(unsigned char *dst, int64_t rows, const fill_ctx *c)
{
    size_t bytes = (size_t)rows * c->row_bytes;
    while (bytes) {
        size_t n = bytes < c->pattern_bytes ? bytes : c->pattern_bytes;
        memcpy(dst, c->pattern, n);
        dst += n;
        bytes -= n;
    }
}

/* Copies route rows into the batch dtype; the widenings are exact (canonical dtypes only). */
static void put_routes(unsigned char *dst, const sample_plan *p, const fill_ctx *c)
{
    size_t n = (size_t)p->rows * c->row_elems;
    if (p->dtype == c->dtype) {
        memcpy(dst, p->src, n * sr_dtype_size(c->dtype));
    } else if (c->dtype == SR_DTYPE_INT16) {
        const uint8_t *s = (const uint8_t *)p->src;
        int16_t *d = (int16_t *)dst;
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else if (p->dtype == SR_DTYPE_UINT8) {
        const uint8_t *s = (const uint8_t *)p->src;
        int32_t *d = (int32_t *)dst;
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        const int16_t *s = (const int16_t *)p->src;
        int32_t *d = (int32_t *)dst;
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    }
}

static int fill_sample(void *ctx, int64_t i, sr_err *err)
{
    const fill_ctx *c = ctx;
    const sample_plan *p = &c->plan[i];
    unsigned char *out = c->out + (size_t)i * (size_t)c->t_max * c->row_bytes;
    uint8_t *mask = c->mask + (size_t)i * (size_t)c->t_max;
    int64_t tail = c->t_max - p->pad - p->rows;
    put_padding(out, p->pad, c);
    put_routes(out + (size_t)p->pad * c->row_bytes, p, c);
    put_padding(out + (size_t)(p->pad + p->rows) * c->row_bytes, tail, c);
    memset(mask, 1, (size_t)p->pad);
    memset(mask + p->pad, 0, (size_t)p->rows);
    memset(mask + p->pad + p->rows, 1, (size_t)tail);
    return 0;
}

/* Builds the padding pattern (whole rows of 0..K-1 per layer) in the batch dtype. */
static int build_pattern(fill_ctx *c, sr_collate_buf *buf, int64_t topk, sr_err *err)
{
    size_t prows = PATTERN_TARGET_BYTES / c->row_bytes;
    if (prows < 1)
        prows = 1;
    size_t bytes = prows * c->row_bytes;
    int rc = grow(&buf->pattern, &buf->pattern_cap, bytes, err);
    if (rc)
        return rc;
    sr_ndarray view = SR_NDARRAY_INIT;
    view.dtype = c->dtype;
    view.data = buf->pattern;
    for (size_t i = 0; i < c->row_elems; i++)
        sr_ndarray_set_i64(&view, i, (int64_t)(i % (uint64_t)topk));
    for (size_t r = 1; r < prows; r++)
        memcpy((unsigned char *)buf->pattern + r * c->row_bytes, buf->pattern, c->row_bytes);
    c->pattern = buf->pattern;
    c->pattern_bytes = bytes;
    return 0;
}

static sr_dtype batch_dtype(const sr_collate_sample *s, int64_t n)
{
    sr_dtype d = s[0].routes->dtype;
    for (int64_t i = 1; i < n; i++) {
        if (sr_dtype_size(s[i].routes->dtype) > sr_dtype_size(d))
            d = s[i].routes->dtype;
    }
    return d;
}

/* Checks the output size and makes the buffer big enough; fills the result's shapes. */
static int prepare_output(sr_collate_result *out, fill_ctx *c, sr_collate_buf *buf, int64_t n,
                          const sr_ndarray *first, sr_err *err)
{
    size_t max = buf->max_bytes ? buf->max_bytes : SR_COLLATE_DEFAULT_MAX;
    int64_t shape[4] = {n, c->t_max, first->shape[1], first->shape[2]};
    size_t bytes, mask_bytes;
    uint64_t elems;
    int rc = sr_shape_bytes(&bytes, NULL, shape, 4, sr_dtype_size(c->dtype), err);
    if (!rc)
        rc = sr_shape_bytes(&mask_bytes, NULL, shape, 2, 1, err);
    if (!rc)
        rc = sr_shape_bytes(NULL, &elems, shape + 2, 2, 1, err);
    if (rc)
        return sr_err_set(err, SR_E_LIMIT,
                          "collated routes of shape [%lld, %lld, %lld, %lld] "
                          "overflow",
                          (long long)shape[0], (long long)shape[1], (long long)shape[2],
                          (long long)shape[3]);
    if (bytes > max)
        return sr_err_set(err, SR_E_LIMIT,
                          "collated routes need %zu bytes, more than the maximum %zu", bytes, max);
    rc = grow(&buf->routes, &buf->routes_cap, bytes, err);
    if (!rc)
        rc = grow((void **)&buf->mask, &buf->mask_cap, mask_bytes, err);
    if (rc)
        return rc;
    c->row_elems = (size_t)elems;
    c->row_bytes = c->row_elems * sr_dtype_size(c->dtype);
    c->out = buf->routes;
    c->mask = buf->mask;
    out->routes.dtype = c->dtype;
    out->routes.ndim = 4;
    memcpy(out->routes.shape, shape, sizeof(shape));
    out->routes.data = buf->routes;
    out->routes.nbytes = bytes;
    out->padding_mask.dtype = SR_DTYPE_BOOL;
    out->padding_mask.ndim = 2;
    memcpy(out->padding_mask.shape, shape, 2 * sizeof(int64_t));
    out->padding_mask.data = buf->mask;
    out->padding_mask.nbytes = mask_bytes;
    out->t_max = c->t_max;
    out->int32_batch = c->dtype == SR_DTYPE_INT32;
    return build_pattern(c, buf, first->shape[2], err);
}

int sr_collate_routes(sr_collate_result *out, sr_collate_buf *buf, const sr_collate_sample *samples,
                      int64_t n_samples, int workers, sr_err *err)
{
    sr_collate_result init = {SR_NDARRAY_INIT, SR_NDARRAY_INIT, 0, 0};
    *out = init;
    if (!samples || n_samples < 1)
        return sr_err_set(err, SR_E_COLLATE_INPUT,
                          "rollout_expert_indices must contain routes for every trajectory");
    if (workers < 0)
        return sr_err_set(err, SR_E_POOL_ARG, "worker count must be positive, got %d", workers);
    if ((uint64_t)n_samples > SIZE_MAX / sizeof(sample_plan))
        return sr_err_set(err, SR_E_LIMIT, "too many samples to collate (%lld)",
                          (long long)n_samples);
    int rc = check_types(samples, n_samples, err);
    if (!rc)
        rc = check_shapes(samples, n_samples, err);
    if (rc)
        return rc;
    sample_plan *plan = malloc(sizeof(sample_plan) * (size_t)n_samples);
    if (!plan)
        return sr_err_set(err, SR_E_NOMEM, "cannot plan %lld samples", (long long)n_samples);
    fill_ctx c;
    memset(&c, 0, sizeof(c));
    c.plan = plan;
    c.dtype = batch_dtype(samples, n_samples);
    rc = check_rows(plan, &c.t_max, samples, n_samples, err);
    if (!rc)
        rc = prepare_output(out, &c, buf, n_samples, samples[0].routes, err);
    if (!rc && workers == 0)
        rc = sr_default_fill_workers(&workers, NULL, err);
    if (!rc)
        rc = sr_fill_rows(n_samples, workers, fill_sample, &c, err);
    free(plan);
    if (rc)
        *out = init;
    return rc;
}
