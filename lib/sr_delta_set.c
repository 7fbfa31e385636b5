#include "sr_delta_priv.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "sr_dtype.h"

/* Item sizes of the dtypes that have no NumPy name but do occur in real checkpoints. */
static const struct {
    const char *name;
    size_t size;
} k_extra_dtypes[] = {{"bfloat16", 2}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1}};

size_t sr_delta_dtype_size(const char *dtype)
{
    if (!dtype)
        return 0;
    sr_dtype d;
    if (sr_dtype_from_name(&d, dtype, strlen(dtype), NULL) == 0)
        return sr_dtype_size(d);
    for (size_t i = 0; i < sizeof(k_extra_dtypes) / sizeof(k_extra_dtypes[0]); i++) {
        if (strcmp(dtype, k_extra_dtypes[i].name) == 0)
            return k_extra_dtypes[i].size;
    }
    return 0;
}

int sr_delta_publish_workers(int *workers, const sr_cpu_topology *topo, sr_err *err)
{
    return sr_pool_workers(workers, 8, 0, SR_POOL_DETECT_CORES, topo, err);
}

int sr_delta_apply_workers(int *workers, const sr_cpu_topology *topo, sr_err *err)
{
    return sr_pool_workers(workers, 32, 0, SR_POOL_DETECT_CORES, topo, err);
}

/* qsort_r is a GNU extension; sorting (name pointer, index) pairs avoids needing a context. */
typedef struct name_slot {
    const char *name;
    size_t index;
} name_slot;

static int cmp_slot(const void *a, const void *b)
{
    return strcmp(((const name_slot *)a)->name, ((const name_slot *)b)->name);
}

static int check_tensor(const sr_delta_tensor *t, size_t i, const char *what, sr_err *err)
{
    if (!t->name || !t->name[0] || strlen(t->name) > SR_DELTA_NAME_MAX)
        return sr_err_set_at(err, SR_E_INVAL, (int64_t)i,
                             "%s tensor %zu: the name is missing, empty or over %d bytes", what, i,
                             SR_DELTA_NAME_MAX);
    size_t item = sr_delta_dtype_size(t->dtype);
    if (!item)
        return sr_err_set_at(err, SR_E_INVAL, (int64_t)i, "%s tensor '%s': unknown dtype '%s'",
                             what, t->name, t->dtype ? t->dtype : "(null)");
    if (t->ndim < 0 || t->ndim > SR_NDIM_MAX)
        return sr_err_set_at(err, SR_E_INVAL, (int64_t)i, "%s tensor '%s': ndim %d out of range",
                             what, t->name, t->ndim);
    size_t nbytes;
    sr_err tmp = SR_ERR_INIT;
    if (sr_shape_bytes(&nbytes, NULL, t->shape, t->ndim, item, &tmp) != 0 || nbytes != t->nbytes ||
        nbytes > SR_DELTA_MAX_TENSOR_BYTES)
        return sr_err_set_at(err, SR_E_INVAL, (int64_t)i,
                             "%s tensor '%s': nbytes %zu does not match its shape and dtype %s "
                             "(or exceeds the maximum)",
                             what, t->name, t->nbytes, t->dtype);
    if (t->nbytes && !t->data)
        return sr_err_set_at(err, SR_E_INVAL, (int64_t)i, "%s tensor '%s': data is NULL", what,
                             t->name);
    return 0;
}

int sr_delta_set_index(size_t **order, const sr_delta_tensor *t, size_t n, const char *what,
                       sr_err *err)
{
    *order = NULL;
    if (n > SR_DELTA_MAX_TENSORS)
        return sr_err_set(err, SR_E_INVAL, "%s: %zu tensors exceed the maximum of %zu", what, n,
                          SR_DELTA_MAX_TENSORS);
    if (n && !t)
        return sr_err_set(err, SR_E_INVAL, "%s: the tensor list is NULL", what);
    for (size_t i = 0; i < n; i++) {
        int rc = check_tensor(&t[i], i, what, err);
        if (rc)
            return rc;
    }
    name_slot *slots = malloc((n ? n : 1) * sizeof(*slots));
    size_t *ord = malloc((n ? n : 1) * sizeof(*ord));
    if (!slots || !ord) {
        free(slots);
        free(ord);
        return sr_err_set(err, SR_E_NOMEM, "%s: cannot index %zu tensors", what, n);
    }
    for (size_t i = 0; i < n; i++)
        slots[i] = (name_slot){t[i].name, i};
    qsort(slots, n, sizeof(*slots), cmp_slot);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(slots[i - 1].name, slots[i].name) == 0) {
            int rc = sr_err_set_at(err, SR_E_INVAL, (int64_t)slots[i].index,
                                   "%s: tensor name '%s' appears twice", what, slots[i].name);
            free(slots);
            free(ord);
            return rc;
        }
        ord[i] = slots[i].index;
    }
    free(slots);
    *order = ord;
    return 0;
}

int64_t sr_delta_set_find(const size_t *order, const sr_delta_tensor *t, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t[order[mid]].name, name);
        if (c == 0)
            return (int64_t)order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int sr_delta_same_layout(const sr_delta_tensor *a, const sr_delta_tensor *b)
{
    if (strcmp(a->dtype, b->dtype) != 0 || a->ndim != b->ndim || a->nbytes != b->nbytes)
        return 0;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] != b->shape[d])
            return 0;
    }
    return 1;
}

void sr_delta_xor_into(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t i = 0;
    /* Word-sized steps through memcpy keep the loop free of alignment assumptions and let the
     * compiler vectorise it. */
    for (; i + 32 <= n; i += 32) {
        uint64_t a[4], b[4];
        memcpy(a, d + i, 32);
        memcpy(b, s + i, 32);
        a[0] ^= b[0];
        a[1] ^= b[1];
        a[2] ^= b[2];
        a[3] ^= b[3];
        memcpy(d + i, a, 32);
    }
    for (; i < n; i++)
        d[i] ^= s[i];
}

/* Orders job indices largest tensor first, so the dynamic schedule ends evenly. */
typedef struct size_slot {
    size_t nbytes, index;
} size_slot;

static int cmp_size_desc(const void *a, const void *b)
{
    const size_slot *x = a, *y = b;
    if (x->nbytes != y->nbytes)
        return (x->nbytes < y->nbytes) - (x->nbytes > y->nbytes);
    return (x->index > y->index) - (x->index < y->index);
}

int sr_delta_schedule_by_size(size_t **out, const size_t *nbytes, size_t n, sr_err *err)
{
    size_slot *s = malloc((n ? n : 1) * sizeof(*s));
    size_t *o = malloc((n ? n : 1) * sizeof(*o));
    if (!s || !o) {
        free(s);
        free(o);
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a schedule of %zu jobs", n);
    }
    for (size_t i = 0; i < n; i++)
        s[i] = (size_slot){nbytes[i], i};
    qsort(s, n, sizeof(*s), cmp_size_desc);
    for (size_t i = 0; i < n; i++)
        o[i] = s[i].index;
    free(s);
    *out = o;
    return 0;
}

/* The first failure a worker saw: lowest job index and its error. */
typedef struct fail_slot {
    size_t job;
    sr_err err;
} fail_slot;

static void run_one(const sr_delta_team *t, void *w, size_t k, fail_slot *slot)
{
    sr_err e = SR_ERR_INIT;
    int rc = w || !t->init ? t->job(t->ctx, w, k, &e)
                           : sr_err_set(&e, SR_E_NOMEM, "cannot allocate worker state");
    if (rc && k < slot->job) {
        if (e.code == 0)
            sr_err_set(&e, rc, "job %zu failed", k);
        slot->job = k;
        slot->err = e;
    }
}

int sr_delta_run(int *threads, size_t njobs, int workers, const sr_delta_team *t, sr_err *err)
{
    *threads = 0;
    if (njobs == 0)
        return 0;
    if (workers < 1)
        return sr_err_set(err, SR_E_INVAL, "worker count must be positive, got %d", workers);
    int team = njobs < (size_t)workers ? (int)njobs : workers;
    fail_slot *slots = malloc((size_t)team * sizeof(*slots));
    if (!slots)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate %d worker slots", team);
    for (int i = 0; i < team; i++)
        slots[i].job = SIZE_MAX;
    int got = 1;
    if (team == 1) {
        void *w = t->init ? t->init(t->ctx) : NULL;
        for (size_t k = 0; k < njobs; k++)
            run_one(t, w, k, &slots[0]);
        if (t->fini)
            t->fini(t->ctx, w);
    } else {
#pragma omp parallel num_threads(team)
        {
            int tid = omp_get_thread_num();
            if (tid == 0)
                got = omp_get_num_threads();
            void *w = t->init ? t->init(t->ctx) : NULL;
#pragma omp for schedule(dynamic, 1)
            for (size_t k = 0; k < njobs; k++)
                run_one(t, w, k, &slots[tid]);
            if (t->fini)
                t->fini(t->ctx, w);
        }
    }
    size_t best = 0;
    for (int i = 1; i < got; i++) {
        if (slots[i].job < slots[best].job)
            best = (size_t)i;
    }
    int rc = 0;
    if (slots[best].job != SIZE_MAX) {
        rc = slots[best].err.code;
        if (err)
            *err = slots[best].err;
    }
    free(slots);
    *threads = got;
    return rc;
}
