#include "sr_weights.h"
#include "sr_mix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <xxhash.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sr_weights stores little-endian words with memcpy; port it for big-endian hosts"
#endif

#define GOLDEN        0x9E3779B97F4A7C15ull
#define TENSOR_DOMAIN 0x74656E736F726368ull /* "tensorch" */
#define COLS          64
#define HUGE_ALIGN    ((size_t)2 << 20)

typedef struct tensor_rec {
    char name[SR_WEIGHTS_NAME_MAX];
    sr_dtype dtype;
    int64_t rows;
    size_t nbytes;
    size_t offset; /* into the set's data, a multiple of 64 */
    int layer;     /* slot, or -1 for global */
    uint64_t tkey;
    XXH128_hash_t digest;
} tensor_rec;

/* A plan: the tensors in name order and their grouping by layer (group L = global). */
typedef struct plan {
    tensor_rec *t;
    size_t count;
    size_t total;
    size_t max_nbytes;
    size_t *members;     /* tensor indices grouped by layer, name order within a group */
    size_t *group_start; /* num_layers + 2 offsets into members */
} plan;

struct sr_weights {
    sr_weights_spec spec;
    int32_t *layers;
    int64_t version;
    plan p;
    unsigned char *data;
    size_t alloc_bytes;
    uint64_t *fp; /* num_layers layer fingerprints, then the global one */
};

static inline uint64_t below(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

/* unit(x) < rate  <=>  (x >> 11) < ceil(rate * 2^53), both sides exact. */
static uint64_t rate_threshold(double rate)
{
    return (uint64_t)ceil(rate * 0x1.0p53);
}

/* ---- spec validation and the plan ---- */

static int check_spec(const sr_weights_spec *s, int64_t version, sr_err *err)
{
    if (!s)
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "no weight spec given");
    if (s->num_layers < 1 || s->num_layers > SR_WEIGHTS_MAX_LAYERS || !s->layer_indices)
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "weights need 1..%d MoE layers, got %d",
                          SR_WEIGHTS_MAX_LAYERS, s->num_layers);
    for (int l = 0; l < s->num_layers; l++)
        if (s->layer_indices[l] < 0 || (l > 0 && s->layer_indices[l] <= s->layer_indices[l - 1]))
            return sr_err_set_at(err, SR_E_WEIGHTS_SPEC, l,
                                 "weight layer_indices must be non-negative and strictly "
                                 "increasing; entry %d is %d",
                                 l, (int)s->layer_indices[l]);
    if (s->experts < 1 || s->experts > ((int64_t)1 << 31))
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "weights experts must be in [1, 2^31], got %lld",
                          (long long)s->experts);
    if (s->expert_tensors < 1 || s->expert_tensors > SR_WEIGHTS_MAX_EXPERTS)
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "expert_tensors must be in [1, %d], got %d",
                          SR_WEIGHTS_MAX_EXPERTS, s->expert_tensors);
    if (s->total_bytes < SR_WEIGHTS_MIN_BYTES || s->total_bytes > SR_WEIGHTS_MAX_BYTES)
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "total_bytes must be in [1 MiB, 1 GiB], got %zu",
                          s->total_bytes);
    if (!(s->tensor_change_rate >= 0.0 && s->tensor_change_rate <= 1.0) ||
        !(s->block_change_rate >= 0.0 && s->block_change_rate <= 1.0))
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "change rates must be in [0, 1], got %g and %g",
                          s->tensor_change_rate, s->block_change_rate);
    if (version < 0 || version > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "weight version must be in [0, %d], got %lld",
                          SR_WEIGHTS_MAX_VERSION, (long long)version);
    return 0;
}

static void add_tensor(plan *p, const char *name, sr_dtype dt, int64_t rows, int layer,
                       uint64_t seed)
{
    tensor_rec *t = &p->t[p->count++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt;
    t->rows = rows;
    t->nbytes = (size_t)rows * COLS * sr_dtype_size(dt);
    t->layer = layer;
    t->tkey = XXH3_64bits_withSeed(t->name, strlen(t->name), seed);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const tensor_rec *)a)->name, ((const tensor_rec *)b)->name);
}

static void plan_free(plan *p)
{
    free(p->t);
    free(p->members);
    free(p->group_start);
    memset(p, 0, sizeof *p);
}

static void plan_fill(plan *p, const sr_weights_spec *s)
{
    const size_t B = s->total_bytes, L = (size_t)s->num_layers;
    const int X = s->experts < s->expert_tensors ? (int)s->experts : s->expert_tensors;
    size_t grow = B / 16 / 128, S = (B - 2 * (B / 16)) / L;
    size_t rrow = S / 32 / 256;
    rrow = rrow ? rrow : 1;
    size_t rest = S > rrow * 256 ? S - rrow * 256 : 0;
    size_t erow = rest / (3 * (size_t)X) / 128;
    erow = erow ? erow : 1;
    char name[SR_WEIGHTS_NAME_MAX];
    add_tensor(p, "embed_tokens.weight", SR_DTYPE_FLOAT16, (int64_t)(grow ? grow : 1), -1, s->seed);
    add_tensor(p, "lm_head.weight", SR_DTYPE_FLOAT16, (int64_t)(grow ? grow : 1), -1, s->seed);
    for (int l = 0; l < s->num_layers; l++) {
        int g = (int)s->layer_indices[l];
        snprintf(name, sizeof name, "layers.%d.mlp.router.weight", g);
        add_tensor(p, name, SR_DTYPE_FLOAT32, (int64_t)rrow, l, s->seed);
        for (int e = 0; e < X; e++)
            for (int k = 1; k <= 3; k++) {
                snprintf(name, sizeof name, "layers.%d.mlp.experts.%d.w%d", g, e, k);
                add_tensor(p, name, SR_DTYPE_FLOAT16, (int64_t)erow, l, s->seed);
            }
    }
}

/* Lays out the tensors of a valid spec: names, shapes, offsets, groups. */
static int plan_build(plan *p, const sr_weights_spec *s, sr_err *err)
{
    memset(p, 0, sizeof *p);
    const int X = s->experts < s->expert_tensors ? (int)s->experts : s->expert_tensors;
    size_t n = 2 + (size_t)s->num_layers * (1 + 3 * (size_t)X);
    p->t = calloc(n, sizeof *p->t);
    p->members = malloc(n * sizeof *p->members);
    p->group_start = calloc((size_t)s->num_layers + 2, sizeof *p->group_start);
    if (!p->t || !p->members || !p->group_start) {
        plan_free(p);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the plan of %zu tensors", n);
    }
    plan_fill(p, s);
    qsort(p->t, p->count, sizeof *p->t, cmp_name);
    for (size_t i = 0; i < p->count; i++) {
        tensor_rec *t = &p->t[i];
        t->offset = p->total;
        p->total += t->nbytes;
        p->max_nbytes = t->nbytes > p->max_nbytes ? t->nbytes : p->max_nbytes;
    }
    if (p->total > s->total_bytes) {
        size_t total = p->total;
        plan_free(p);
        return sr_err_set(err, SR_E_WEIGHTS_SPEC,
                          "a budget of %zu bytes is too small for %zu tensors (%zu bytes needed)",
                          s->total_bytes, n, total);
    }
    /* A counting sort by group keeps name order inside each group. */
    size_t L = (size_t)s->num_layers, *at = p->group_start;
    for (size_t i = 0; i < p->count; i++) {
        size_t g = p->t[i].layer < 0 ? L : (size_t)p->t[i].layer;
        at[g + 1]++;
    }
    for (size_t g = 0; g <= L; g++)
        at[g + 1] += at[g];
    size_t fill[SR_WEIGHTS_MAX_LAYERS + 1];
    memcpy(fill, at, sizeof(size_t) * (L + 1));
    for (size_t i = 0; i < p->count; i++) {
        size_t g = p->t[i].layer < 0 ? L : (size_t)p->t[i].layer;
        p->members[fill[g]++] = i;
    }
    return 0;
}

/* ---- contents ---- */

/* The versions 1..v at which one tensor changes, newest first. */
typedef struct change_list {
    int64_t *u;
    uint64_t *tch;
    uint64_t *pick;
    size_t n;
} change_list;

static void changes_free(change_list *c)
{
    free(c->u);
    free(c->tch);
    free(c->pick);
    c->u = NULL;
    c->tch = NULL;
    c->pick = NULL;
}

static int changes_alloc(change_list *c, int64_t version, sr_err *err)
{
    size_t n = (size_t)version + 1;
    c->u = malloc(n * sizeof *c->u);
    c->tch = malloc(n * sizeof *c->tch);
    c->pick = malloc(n * sizeof *c->pick);
    c->n = 0;
    if (!c->u || !c->tch || !c->pick) {
        changes_free(c);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the version list");
    }
    return 0;
}

static void changes_of(change_list *c, const tensor_rec *t, const sr_weights_spec *s,
                       int64_t version)
{
    uint64_t thr = rate_threshold(s->tensor_change_rate), nblocks = t->nbytes / 64;
    c->n = 0;
    for (int64_t u = version; u >= 1; u--) {
        uint64_t tch = sr_mix64(t->tkey ^ sr_mix64(TENSOR_DOMAIN + (uint64_t)u));
        if (t->layer >= 0 && (tch >> 11) >= thr)
            continue;
        c->u[c->n] = u;
        c->tch[c->n] = tch;
        c->pick[c->n] = below(sr_mix64(tch), nblocks);
        c->n++;
    }
}

static void gen_tensor(unsigned char *dst, const tensor_rec *t, const sr_weights_spec *s,
                       const change_list *c)
{
    const uint64_t and_m =
        t->dtype == SR_DTYPE_FLOAT32 ? 0x81FFFFFF81FFFFFFull : 0x8FFF8FFF8FFF8FFFull;
    const uint64_t or_m =
        t->dtype == SR_DTYPE_FLOAT32 ? 0x3C0000003C000000ull : 0x2000200020002000ull;
    const uint64_t thr = rate_threshold(s->block_change_rate), nblocks = t->nbytes / 64;
    for (uint64_t b = 0; b < nblocks; b++) {
        uint64_t gen = 0;
        for (size_t k = 0; k < c->n; k++) {
            if (b == c->pick[k] || (sr_mix64(c->tch[k] + GOLDEN * (b + 1)) >> 11) < thr) {
                gen = (uint64_t)c->u[k];
                break;
            }
        }
        uint64_t key = sr_mix64(sr_mix64(t->tkey + GOLDEN * (b + 1)) + GOLDEN * (gen + 1));
        uint64_t words[8];
        for (uint64_t j = 0; j < 8; j++)
            words[j] = (sr_mix64(key + GOLDEN * (j + 1)) & and_m) | or_m;
        memcpy(dst + b * 64, words, sizeof words);
    }
}

static uint64_t group_fp(const plan *p, size_t g)
{
    unsigned char buf[(1 + 3 * SR_WEIGHTS_MAX_EXPERTS + 2) * sizeof(XXH128_canonical_t)];
    size_t n = 0;
    for (size_t k = p->group_start[g]; k < p->group_start[g + 1]; k++) {
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, p->t[p->members[k]].digest);
        memcpy(buf + n, &c, sizeof c);
        n += sizeof c;
    }
    return XXH3_64bits(buf, n);
}

static void all_fps(uint64_t *global, uint64_t *layers, const plan *p, int num_layers)
{
    if (layers)
        for (int l = 0; l < num_layers; l++)
            layers[l] = group_fp(p, (size_t)l);
    if (global)
        *global = group_fp(p, (size_t)num_layers);
}

/* Generates every tensor of `p` at `version` into data + offset (data == NULL: into scratch). */
static int generate_all(plan *p, unsigned char *data, const sr_weights_spec *s, int64_t version,
                        sr_err *err)
{
    change_list c;
    int rc = changes_alloc(&c, version, err);
    if (rc)
        return rc;
    unsigned char *scratch = NULL;
    if (!data) {
        scratch = aligned_alloc(64, p->max_nbytes);
        if (!scratch) {
            changes_free(&c);
            return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu scratch bytes", p->max_nbytes);
        }
    }
    for (size_t i = 0; i < p->count; i++) {
        tensor_rec *t = &p->t[i];
        unsigned char *dst = data ? data + t->offset : scratch;
        changes_of(&c, t, s, version);
        gen_tensor(dst, t, s, &c);
        t->digest = XXH3_128bits(dst, t->nbytes);
    }
    free(scratch);
    changes_free(&c);
    return 0;
}

/* ---- public API ---- */

int sr_weights_new(sr_weights **out, const sr_weights_spec *spec, int64_t version, sr_err *err)
{
    *out = NULL;
    int rc = check_spec(spec, version, err);
    if (rc)
        return rc;
    sr_weights *w = calloc(1, sizeof *w);
    if (!w)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the weight set");
    w->spec = *spec;
    w->layers = malloc(sizeof(int32_t) * (size_t)spec->num_layers);
    w->fp = calloc((size_t)spec->num_layers + 1, sizeof *w->fp);
    if (!w->layers || !w->fp) {
        sr_weights_free(w);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the weight set");
    }
    memcpy(w->layers, spec->layer_indices, sizeof(int32_t) * (size_t)spec->num_layers);
    w->spec.layer_indices = w->layers;
    if ((rc = plan_build(&w->p, &w->spec, err))) {
        sr_weights_free(w);
        return rc;
    }
    /* Large sets get 2 MiB alignment and a transparent-huge-page hint: first-touch faults on
     * 4 KiB pages would otherwise cost more than generating the bytes. */
    size_t align = w->p.total >= HUGE_ALIGN ? HUGE_ALIGN : 64;
    w->alloc_bytes = (w->p.total + align - 1) / align * align;
    w->data = aligned_alloc(align, w->alloc_bytes);
    if (!w->data) {
        sr_weights_free(w);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %zu bytes of weights", w->p.total);
    }
    if (align == HUGE_ALIGN)
        (void)madvise(w->data, w->alloc_bytes, MADV_HUGEPAGE);
    if ((rc = sr_weights_reset(w, version, err))) {
        sr_weights_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void sr_weights_free(sr_weights *w)
{
    if (!w)
        return;
    plan_free(&w->p);
    free(w->data);
    free(w->layers);
    free(w->fp);
    free(w);
}

int sr_weights_reset(sr_weights *w, int64_t version, sr_err *err)
{
    int rc = check_spec(&w->spec, version, err);
    if (rc)
        return rc;
    if ((rc = generate_all(&w->p, w->data, &w->spec, version, err)))
        return rc;
    w->version = version;
    all_fps(&w->fp[w->spec.num_layers], w->fp, &w->p, w->spec.num_layers);
    return 0;
}

const sr_weights_spec *sr_weights_spec_of(const sr_weights *w)
{
    return &w->spec;
}

int64_t sr_weights_version(const sr_weights *w)
{
    return w->version;
}

size_t sr_weights_count(const sr_weights *w)
{
    return w->p.count;
}

size_t sr_weights_total_bytes(const sr_weights *w)
{
    return w->p.total;
}

int sr_weights_tensor(sr_weights_info *out, const sr_weights *w, size_t index, sr_err *err)
{
    if (index >= w->p.count)
        return sr_err_set(err, SR_E_WEIGHTS_UNKNOWN, "tensor index %zu is not below %zu", index,
                          w->p.count);
    const tensor_rec *t = &w->p.t[index];
    out->name = t->name;
    out->dtype = t->dtype;
    out->shape[0] = t->rows;
    out->shape[1] = COLS;
    out->nbytes = t->nbytes;
    out->layer = t->layer;
    out->data = w->data + t->offset;
    out->digest_hi = t->digest.high64;
    out->digest_lo = t->digest.low64;
    return 0;
}

int sr_weights_find(size_t *index, const sr_weights *w, const char *name, sr_err *err)
{
    size_t lo = 0, hi = w->p.count;
    while (name && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, w->p.t[mid].name);
        if (c == 0) {
            *index = mid;
            return 0;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return sr_err_set(err, SR_E_WEIGHTS_UNKNOWN, "no tensor named '%.200s' in the weight set",
                      name ? name : "(null)");
}

/* Checks index and size for a write; returns the tensor or NULL with err set. */
static tensor_rec *writable(sr_weights *w, size_t index, size_t n, int *rc, sr_err *err)
{
    if (index >= w->p.count) {
        *rc = sr_err_set(err, SR_E_WEIGHTS_UNKNOWN, "tensor index %zu is not below %zu", index,
                         w->p.count);
        return NULL;
    }
    tensor_rec *t = &w->p.t[index];
    if (n != t->nbytes) {
        *rc = sr_err_set(err, SR_E_WEIGHTS_SIZE, "tensor %s holds %zu bytes, got %zu", t->name,
                         t->nbytes, n);
        return NULL;
    }
    return t;
}

static void refresh(sr_weights *w, tensor_rec *t)
{
    t->digest = XXH3_128bits(w->data + t->offset, t->nbytes);
    size_t g = t->layer < 0 ? (size_t)w->spec.num_layers : (size_t)t->layer;
    w->fp[g] = group_fp(&w->p, g);
}

int sr_weights_write(sr_weights *w, size_t index, const void *bytes, size_t n, sr_err *err)
{
    int rc = 0;
    tensor_rec *t = writable(w, index, n, &rc, err);
    if (!t)
        return rc;
    if (n)
        memmove(w->data + t->offset, bytes, n);
    refresh(w, t);
    return 0;
}

int sr_weights_xor(sr_weights *w, size_t index, const void *patch, size_t n, sr_err *err)
{
    int rc = 0;
    tensor_rec *t = writable(w, index, n, &rc, err);
    if (!t)
        return rc;
    unsigned char *dst = w->data + t->offset;
    const unsigned char *src = patch;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t a, b;
        memcpy(&a, dst + i, 8);
        memcpy(&b, src + i, 8);
        a ^= b;
        memcpy(dst + i, &a, 8);
    }
    refresh(w, t);
    return 0;
}

void sr_weights_fingerprints(uint64_t *global, uint64_t *layers, const sr_weights *w)
{
    if (global)
        *global = w->fp[w->spec.num_layers];
    if (layers)
        memcpy(layers, w->fp, sizeof(uint64_t) * (size_t)w->spec.num_layers);
}

int sr_weights_expected(uint64_t *global, uint64_t *layers, const sr_weights_spec *spec,
                        int64_t version, sr_err *err)
{
    int rc = check_spec(spec, version, err);
    if (rc)
        return rc;
    plan p;
    if ((rc = plan_build(&p, spec, err)))
        return rc;
    if ((rc = generate_all(&p, NULL, spec, version, err)) == 0)
        all_fps(global, layers, &p, spec->num_layers);
    plan_free(&p);
    return rc;
}
