#include "sr_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_block_cache.h"
#include "sr_envelope.h"
#include "sr_trace_priv.h"

/* The routed-expert trace of sr_trace.h, built on the token-metadata trace it embeds. */
struct sr_route_trace {
    sr_meta_trace meta;
    int padding_as_captured;
    int captured_only;
    int masked_rows;
    int recorded;
    int64_t *layers; /* pinned by the first record */
    size_t n_layers;
    size_t layers_cap;     /* entries allocated at `layers` (kept by a reset) */
    size_t row_bytes;      /* bytes of the last record's rows (kept by a reset): the room's guess */
    sr_block_cache *cache; /* where storage comes from and goes back to (a reference), or NULL */
};

/* Formats a layer list as a Python tuple, "(1, 3, 5)" or "(4,)", cut with "..." if long. */
static const char *format_layers(char *buf, size_t cap, const int64_t *idx, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, cap, "(");
    for (size_t i = 0; i < n && len < cap; i++) {
        if (len + 32 >= cap) {
            snprintf(buf + len, cap - len, "...)");
            return buf;
        }
        len += (size_t)snprintf(buf + len, cap - len, i ? ", %lld" : "%lld", (long long)idx[i]);
    }
    if (len < cap)
        snprintf(buf + len, cap - len, n == 1 ? ",)" : ")");
    return buf;
}

int sr_validate_layer_indices(const int64_t *idx, size_t n, sr_err *err)
{
    char desc[200];
    if (n == 0)
        return sr_err_set(err, SR_E_TRACE_LAYERS,
                          "routed-expert layer indices must name at least one MoE layer");
    if (!idx)
        return sr_err_set(err, SR_E_INVAL, "routed-expert layer indices are NULL");
    for (size_t i = 1; i < n; i++) {
        if (idx[i] <= idx[i - 1])
            return sr_err_set(err, SR_E_TRACE_LAYERS,
                              "routed-expert layer indices must be strictly increasing, got %s",
                              format_layers(desc, sizeof(desc), idx, n));
    }
    if (idx[0] < 0)
        return sr_err_set(err, SR_E_TRACE_LAYERS,
                          "routed-expert layer indices must be non-negative, got %s",
                          format_layers(desc, sizeof(desc), idx, n));
    if (idx[n - 1] > INT32_MAX)
        return sr_err_set(err, SR_E_TRACE_LAYERS,
                          "routed-expert layer index %lld is deeper than any model",
                          (long long)idx[n - 1]);
    return 0;
}

int sr_route_trace_new(sr_route_trace **out, const sr_trace_opts *opts, sr_err *err)
{
    sr_route_trace *t = calloc(1, sizeof(*t));
    *out = NULL;
    if (!t)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a routed-expert trace");
    sr_trace_meta_init(&t->meta, opts);
    t->padding_as_captured = opts ? opts->padding_as_captured : 0;
    t->captured_only = opts ? opts->captured_only : 0;
    t->masked_rows = opts ? opts->masked_rows : 0;
    *out = t;
    return 0;
}

void sr_route_trace_free(sr_route_trace *t)
{
    if (!t)
        return;
    sr_block_cache_put(t->cache, t->meta.data, t->meta.cap);
    sr_block_cache_unref(t->cache);
    free(t->layers);
    free(t);
}

int64_t sr_route_trace_prompt_start(const sr_route_trace *t)
{
    return t->meta.rows;
}

sr_dtype sr_route_trace_dtype(const sr_route_trace *t)
{
    return t->meta.has_schema ? t->meta.dtype : SR_DTYPE_INVALID;
}

const int64_t *sr_route_trace_layers(const sr_route_trace *t, size_t *count)
{
    if (count)
        *count = t->n_layers;
    return t->n_layers ? t->layers : NULL; /* (room kept by a reset is not a pinned list) */
}

/*
 * The least and greatest value of `routes` as far as routes_canonical can tell: taken from the
 * caller's bound when it decides every outcome exactly as the values would, else from a pass over
 * them. A known bound without the dtype's sign bit means no value is negative (lo = 0 stands for
 * the least), and its OR crosses each threshold of the canonical rule (2^8, 2^15, 2^31) exactly
 * when the greatest value does (hi = the OR). A possible negative (a masked row's -1 must be told
 * from any other), an 8-byte dtype, and an OR past int32 (whose error names the greatest value
 * itself) take the pass.
 */
static int routes_range(int64_t *lo, int64_t *hi, const sr_ndarray *routes,
                        const sr_value_bound *bound, sr_err *err)
{
    size_t width = sr_dtype_size(routes->dtype);
    if (bound && bound->known && width >= 1 && width <= 4) {
        unsigned bits = 8 * (unsigned)width;
        uint64_t sign = sr_dtype_is_signed(routes->dtype) ? (uint64_t)1 << (bits - 1) : 0;
        uint64_t v = bound->value_or;
        if (v >> bits == 0 && !(v & sign) && v <= INT32_MAX) {
            *lo = 0;
            *hi = (int64_t)v;
            return 0;
        }
    }
    return sr_ndarray_minmax(routes, lo, hi, err);
}

/* Validates routes and returns their canonical dtype (the reference compacts every turn). */
static int routes_canonical(sr_dtype *canon, const sr_ndarray *routes, int masked,
                            const sr_value_bound *bound, sr_err *err)
{
    int rc = sr_trace_check_descriptor(routes, "routed experts", err);
    if (rc)
        return rc;
    if (routes->ndim != 3 || !sr_dtype_is_integer(routes->dtype)) {
        char desc[200];
        return sr_err_set(
            err, SR_E_ROUTES_INVALID,
            "routed expert indices must be an integer [tokens, layers, topk] array, got %s",
            sr_ndarray_desc(routes->dtype, routes->ndim, routes->shape, desc, sizeof(desc)));
    }
    int64_t lo, hi;
    rc = routes_range(&lo, &hi, routes, bound, err);
    if (rc)
        return rc;
    if (lo < 0 && !(masked && lo == -1))
        return sr_err_set(err, SR_E_ROUTES_NEGATIVE, "routed expert indices must be non-negative");
    rc = sr_routes_canonical_dtype(canon, hi, err);
    if (!rc && lo < 0 && *canon == SR_DTYPE_UINT8)
        *canon = SR_DTYPE_INT16; /* a masked row's -1 needs a signed dtype */
    return rc;
}

/* The checks of a record's layer list: `given` valid and naming each of the `layers` layers. */
static int layer_check(const int64_t *given, size_t n_given, int64_t layers, sr_err *err)
{
    if (given) {
        int rc = sr_validate_layer_indices(given, n_given, err);
        if (rc)
            return rc;
        if ((uint64_t)layers != n_given)
            return sr_err_set(err, SR_E_TRACE_LAYERS,
                              "routed experts cover %lld layers but %zu layer indices were carried "
                              "alongside them",
                              (long long)layers, n_given);
    }
    return 0;
}

/*
 * Builds the layer list of one record: a copy of `given`, or the identity 0..L-1 when NULL.
 * *list is NULL when there are no layers.
 */
static int layer_list(int64_t **list, const int64_t *given, size_t n_given, int64_t layers,
                      sr_err *err)
{
    *list = NULL;
    int rc = layer_check(given, n_given, layers, err);
    if (rc || layers == 0)
        return rc;
    int64_t *p = malloc(sizeof(int64_t) * (size_t)layers);
    if (!p)
        return sr_err_set(err, SR_E_NOMEM, "cannot copy %lld layer indices", (long long)layers);
    for (int64_t i = 0; i < layers; i++)
        p[i] = given ? given[i] : i;
    *list = p;
    return 0;
}

static int layers_equal(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, sizeof(int64_t) * na) == 0);
}

/* 1 if the record's layers (`given`, or the identity 0..layers-1 when NULL) are the pinned ones. */
static int same_layers(const sr_route_trace *t, const int64_t *given, size_t n_given,
                       int64_t layers)
{
    if ((uint64_t)layers != t->n_layers || (given && n_given != t->n_layers))
        return 0;
    if (given)
        return layers_equal(given, n_given, t->layers, t->n_layers);
    for (size_t i = 0; i < t->n_layers; i++)
        if (t->layers[i] != (int64_t)i)
            return 0;
    return 1;
}

/* The checks of record() that precede the append; on success *list is the record's layers (NULL
 * when they equal the pinned ones). */
static int record_checks(int64_t **list, sr_dtype *canon, int64_t *expected,
                         const sr_route_trace *t, int64_t prompt, int64_t generated,
                         const sr_ndarray *routes, const int64_t *given, size_t n_given,
                         const sr_value_bound *bound, sr_err *err)
{
    const sr_meta_trace *m = &t->meta;
    *list = NULL;
    if (m->finalized)
        return sr_err_set(err, SR_E_TRACE_FINALIZED, "token metadata trace is already finalized");
    if (prompt < m->rows)
        return sr_err_set(err, SR_E_TRACE_PROMPT_START,
                          "routed-expert prompt start exceeds prompt length (%lld > %lld)",
                          (long long)m->rows, (long long)prompt);
    if (generated < 1)
        return sr_err_set(err, SR_E_TRACE_NO_GENERATION,
                          "routed-expert generation must produce at least one token");
    int rc = routes_canonical(canon, routes, t->masked_rows, bound, err);
    if (rc)
        return rc;
    int64_t fresh = prompt - m->rows;
    if (generated - 1 > INT64_MAX - fresh)
        return sr_err_set(err, SR_E_TRACE_ROW_COUNT, "routed-expert row count overflows");
    *expected = fresh + generated - 1;
    if (routes->shape[0] != *expected)
        return sr_err_set(err, SR_E_TRACE_ROW_COUNT, "token metadata has %lld rows, expected %lld",
                          (long long)routes->shape[0], (long long)*expected);
    if (m->has_schema && !sr_trace_meta_same_row_shape(m, routes))
        return sr_trace_meta_schema_error(m, routes, *canon, err);
    /* The first record's list is pinned by record() in the trace's own room, and later ones
     * are compared in place: no copy per turn. */
    if (!t->recorded)
        return layer_check(given, n_given, routes->shape[1], err);
    if (same_layers(t, given, n_given, routes->shape[1]))
        return 0; /* the pinned list was validated when it was pinned */
    rc = layer_list(list, given, n_given, routes->shape[1], err);
    if (rc || layers_equal(*list, (size_t)routes->shape[1], t->layers, t->n_layers))
        return rc;
    char was[200], now[200];
    format_layers(was, sizeof(was), t->layers, t->n_layers);
    format_layers(now, sizeof(now), *list, (size_t)routes->shape[1]);
    free(*list);
    *list = NULL;
    return sr_err_set(err, SR_E_TRACE_LAYERS,
                      "routed-expert layer indices changed mid-trajectory from %s to %s", was, now);
}

int sr_route_trace_record(sr_route_trace *t, int64_t prompt_token_count,
                          int64_t generated_token_count, const sr_ndarray *routes,
                          const int64_t *layer_indices, size_t n_layers, sr_err *err)
{
    return sr_route_trace_record_bounded(t, prompt_token_count, generated_token_count, routes,
                                         layer_indices, n_layers, NULL, err);
}

int sr_route_trace_record_bounded(sr_route_trace *t, int64_t prompt_token_count,
                                  int64_t generated_token_count, const sr_ndarray *routes,
                                  const int64_t *layer_indices, size_t n_layers,
                                  const sr_value_bound *bound, sr_err *err)
{
    int64_t *list = NULL;
    sr_dtype canon = SR_DTYPE_INVALID;
    int64_t expected = 0;
    int rc = record_checks(&list, &canon, &expected, t, prompt_token_count, generated_token_count,
                           routes, layer_indices, n_layers, bound, err);
    size_t L = rc ? 0 : (size_t)routes->shape[1];
    if (!rc && !t->recorded && L > t->layers_cap) {
        /* Room for the list to pin, made before the append so that a failure changes nothing. */
        int64_t *p = realloc(t->layers, sizeof(int64_t) * L);
        if (!p) {
            rc = sr_err_set(err, SR_E_NOMEM, "cannot copy %zu layer indices", L);
        } else {
            t->layers = p;
            t->layers_cap = L;
        }
    }
    if (!rc)
        rc = sr_trace_meta_append_as(&t->meta, routes, canon, expected, err);
    free(list);
    if (rc)
        return rc;
    if (!t->recorded) {
        for (size_t i = 0; i < L; i++)
            t->layers[i] = layer_indices ? layer_indices[i] : (int64_t)i;
        t->n_layers = L;
        t->recorded = 1;
    }
    t->row_bytes = t->meta.row_elems * sr_dtype_size(t->meta.dtype);
    return 0;
}

int sr_route_trace_room(sr_route_trace *t, unsigned char **at, size_t *room, sr_err *err)
{
    sr_meta_trace *m = &t->meta;
    *at = NULL;
    *room = 0;
    size_t row = m->has_schema ? m->row_elems * sr_dtype_size(m->dtype) : t->row_bytes;
    if (m->finalized || row == 0)
        return 0;
    if (!m->data && m->reserve_rows > 0) {
        /* The storage the first record would reserve, made now so that its rows can land in it;
         * a reserve past the trace's maxima is left to the record (which names the error). */
        size_t want;
        if ((uint64_t)m->reserve_rows > SIZE_MAX / row ||
            (want = (size_t)m->reserve_rows * row) > m->max_bytes)
            return 0;
        size_t got;
        /* A kept block up to twice the reserve (its pages touched by an earlier trajectory),
         * else a new one. */
        m->data = sr_block_cache_take(t->cache, want, want <= SIZE_MAX / 2 ? want * 2 : want, &got);
        if (!m->data) {
            m->data = malloc(want);
            got = want;
        }
        if (!m->data)
            return sr_err_set(err, SR_E_NOMEM, "cannot reserve %zu bytes of routes", want);
        m->cap = got;
    }
    size_t used = (size_t)m->rows * row;
    if (!m->data || used >= m->cap)
        return 0;
    *at = m->data + used;
    *room = m->cap - used;
    return 0;
}

void sr_route_trace_hint_row_bytes(sr_route_trace *t, size_t bytes)
{
    if (!t->meta.has_schema && t->row_bytes == 0)
        t->row_bytes = bytes;
}

void sr_route_trace_reset(sr_route_trace *t, const sr_trace_opts *opts)
{
    sr_trace_meta_reset(&t->meta, opts);
    t->padding_as_captured = opts ? opts->padding_as_captured : 0;
    t->captured_only = opts ? opts->captured_only : 0;
    t->masked_rows = opts ? opts->masked_rows : 0;
    t->recorded = 0;
    t->n_layers = 0;
}

size_t sr_route_trace_capacity(const sr_route_trace *t)
{
    return t->meta.cap;
}

void sr_route_trace_set_cache(sr_route_trace *t, sr_block_cache *cache)
{
    if (cache == t->cache)
        return;
    sr_block_cache_unref(t->cache);
    t->cache = sr_block_cache_ref(cache);
}

size_t sr_route_trace_handed_capacity(const sr_route_trace *t)
{
    return t->meta.handed_cap;
}

/* Writes `count` padding rows (every layer 0, 1, ..., K-1) at row `first` of the storage. */
static void write_padding(sr_meta_trace *m, int64_t first, int64_t count)
{
    size_t item = sr_dtype_size(m->dtype);
    size_t row_bytes = m->row_elems * item;
    if (count <= 0 || row_bytes == 0)
        return;
    unsigned char *row = m->data + (size_t)first * row_bytes;
    /* The values 0..K-1 are non-negative and fit the dtype (finalize widened it for them), so
     * their bytes are the same in its signed and unsigned form: one store of the item's width
     * each, not a dtype dispatch per element. */
    size_t k = (size_t)m->row_shape[1];
    /* Rows of whole layers repeat one layer's values, so only the first layer is written and the
     * doubling copies below make the rest; otherwise the whole first row is written. */
    size_t first_elems = k && m->row_elems % k == 0 ? k : m->row_elems;
    for (size_t i = 0, v = 0; i < first_elems; i++, v = v + 1 == k ? 0 : v + 1) {
        if (item == 1) {
            row[i] = (unsigned char)v;
        } else if (item == 2) {
            uint16_t x = (uint16_t)v;
            memcpy(row + i * 2, &x, 2);
        } else if (item == 4) {
            uint32_t x = (uint32_t)v;
            memcpy(row + i * 4, &x, 4);
        } else {
            uint64_t x = (uint64_t)v;
            memcpy(row + i * 8, &x, 8);
        }
    }
    /* Doubling copies: each pass copies everything written so far. */
    size_t done = first_elems * item, total = (size_t)count * row_bytes;
    while (done < total) {
        size_t n = done < total - done ? done : total - done;
        memcpy(row + done, row, n);
        done += n;
    }
}

/* The finalize checks that must pass before anything changes. */
static int finalize_checks(const sr_route_trace *t, int64_t token_count, const uint8_t *mask,
                           int64_t mask_len, sr_err *err)
{
    const sr_meta_trace *m = &t->meta;
    if (m->finalized)
        return sr_err_set(err, SR_E_TRACE_FINALIZED, "token metadata trace is already finalized");
    if (mask_len != token_count)
        return sr_err_set(err, SR_E_TRACE_LOSS_MASK, "loss mask has %lld entries, expected %lld",
                          (long long)mask_len, (long long)token_count);
    if (token_count < 0 || (!mask && mask_len > 0))
        return sr_err_set(err, SR_E_INVAL, "token count %lld with %s loss mask",
                          (long long)token_count, mask ? "a" : "a NULL");
    if (m->rows > token_count)
        return sr_err_set(err, SR_E_TRACE_TOO_MANY_ROWS,
                          "routed-expert trace has %lld rows for %lld tokens", (long long)m->rows,
                          (long long)token_count);
    for (int64_t j = m->rows + 1; j < token_count; j++) {
        if (mask[j])
            return sr_err_set_at(err, SR_E_TRACE_MISSING_ROUTE, j,
                                 "missing routed-expert row for loss-active target at token %lld",
                                 (long long)j);
    }
    if (!t->recorded)
        return sr_err_set(err, SR_E_TRACE_EMPTY,
                          m->rows < token_count
                              ? "cannot pad routed-expert trace before any routes are captured"
                              : "cannot finalize a routed-expert trace before any routes are "
                                "captured");
    return 0;
}

int sr_route_trace_finalize(sr_ndarray *out, int64_t *captured_rows, sr_route_trace *t,
                            int64_t token_count, const uint8_t *loss_mask, int64_t loss_mask_len,
                            sr_err *err)
{
    sr_ndarray init = SR_NDARRAY_INIT;
    sr_meta_trace *m = &t->meta;
    *out = init;
    int rc = finalize_checks(t, token_count, loss_mask, loss_mask_len, err);
    if (rc)
        return rc;
    int64_t captured = m->rows;
    int64_t topk = m->row_shape[1];
    sr_dtype dtype = m->dtype;
    if (t->captured_only) {
        /* SkyRL #2083 (commit 098017bff): the row count is the trace's only report of where the
         * capture stops, so the tail is left to collation and nothing is padded here. */
        rc = sr_meta_trace_finalize(out, m, captured, err);
        if (!rc && captured_rows)
            *captured_rows = captured;
        return rc;
    }
    if (token_count > captured && topk > 1) {
        /* The padding row holds K-1; the dtype widens if that does not fit (only for K > 256). */
        sr_dtype need;
        rc = sr_routes_canonical_dtype(&need, topk - 1, err);
        if (!rc)
            rc = sr_trace_widen_dtype(&dtype, m->dtype, need, err);
        if (rc)
            return rc;
    }
    size_t bytes;
    rc = sr_trace_meta_bytes_for(&bytes, m, token_count, dtype, err);
    if (!rc)
        rc = sr_trace_meta_reserve(m, dtype, bytes, err);
    if (rc)
        return rc;
    write_padding(m, captured, token_count - captured);
    m->rows = token_count;
    rc = sr_meta_trace_finalize(out, m, token_count, err);
    if (rc)
        return rc;
    if (captured_rows)
        *captured_rows = t->padding_as_captured ? token_count : captured;
    return 0;
}
