#include "sr_block_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* Most blocks a cache may be asked to keep: its table is allocated up front. */
#define MAX_BLOCKS_LIMIT ((size_t)1 << 16)

typedef struct kept_block {
    void *p;
    size_t cap;
    uint64_t age; /* the put that kept it (the cache's count of kept puts then) */
} kept_block;

struct sr_block_cache {
    pthread_mutex_t mu;
    size_t refs;
    int closed;
    size_t max_blocks, max_bytes, max_block;
    kept_block *kept; /* max_blocks entries, n used, in no order (ages tell the oldest) */
    size_t n, bytes;
    sr_block_cache_stats st;
};

int sr_block_cache_new(sr_block_cache **out, size_t max_blocks, size_t max_bytes, size_t max_block,
                       sr_err *err)
{
    *out = NULL;
    if (max_blocks < 1 || max_blocks > MAX_BLOCKS_LIMIT || max_bytes < 1 || max_block < 1)
        return sr_err_set(err, SR_E_INVAL,
                          "block cache: bounds of %zu blocks (1..%zu), %zu bytes, %zu bytes a "
                          "block must each be at least 1",
                          max_blocks, MAX_BLOCKS_LIMIT, max_bytes, max_block);
    sr_block_cache *c = calloc(1, sizeof *c);
    kept_block *kept = calloc(max_blocks, sizeof *kept);
    if (!c || !kept || pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        free(kept);
        return sr_err_set(err, SR_E_NOMEM, "block cache: cannot allocate a table of %zu blocks",
                          max_blocks);
    }
    c->refs = 1;
    c->max_blocks = max_blocks;
    c->max_bytes = max_bytes;
    c->max_block = max_block;
    c->kept = kept;
    *out = c;
    return 0;
}

sr_block_cache *sr_block_cache_ref(sr_block_cache *c)
{
    if (c) {
        pthread_mutex_lock(&c->mu);
        c->refs++;
        pthread_mutex_unlock(&c->mu);
    }
    return c;
}

/* Frees the kept blocks; the caller holds the lock or the last reference. */
static void drop_kept(sr_block_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->kept[i].p);
    c->n = 0;
    c->bytes = 0;
}

void sr_block_cache_unref(sr_block_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    size_t left = --c->refs;
    pthread_mutex_unlock(&c->mu);
    if (left)
        return;
    drop_kept(c);
    free(c->kept);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void sr_block_cache_close(sr_block_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->closed = 1;
    drop_kept(c);
    pthread_mutex_unlock(&c->mu);
    sr_block_cache_unref(c);
}

void *sr_block_cache_take(sr_block_cache *c, size_t min, size_t max, size_t *cap)
{
    *cap = 0;
    if (!c || min == 0 || min > max)
        return NULL;
    pthread_mutex_lock(&c->mu);
    size_t best = c->n;
    for (size_t i = 0; !c->closed && i < c->n; i++) {
        size_t z = c->kept[i].cap;
        if (z >= min && z <= max && (best == c->n || z < c->kept[best].cap))
            best = i;
    }
    void *p = NULL;
    if (best < c->n) {
        p = c->kept[best].p;
        *cap = c->kept[best].cap;
        c->bytes -= *cap;
        c->kept[best] = c->kept[--c->n];
        c->st.hits++;
    } else {
        c->st.misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return p;
}

/* Frees the oldest kept block (the lock held, n > 0). */
static void evict_oldest(sr_block_cache *c)
{
    size_t old = 0;
    for (size_t i = 1; i < c->n; i++)
        if (c->kept[i].age < c->kept[old].age)
            old = i;
    free(c->kept[old].p);
    c->bytes -= c->kept[old].cap;
    c->kept[old] = c->kept[--c->n];
    c->st.evicted++;
}

void sr_block_cache_put(sr_block_cache *c, void *block, size_t cap)
{
    if (!block)
        return;
    if (!c) {
        free(block);
        return;
    }
    pthread_mutex_lock(&c->mu);
    int keep = !c->closed && cap > 0 && cap <= c->max_block && cap <= c->max_bytes;
    if (keep) {
        /* The newest blocks are the likeliest to fit the next takes: a block no take accepts
         * (a size nobody asks for any more) ages out instead of holding its place for good. */
        while (c->n == c->max_blocks || cap > c->max_bytes - c->bytes)
            evict_oldest(c);
        c->kept[c->n].p = block;
        c->kept[c->n].cap = cap;
        c->kept[c->n].age = c->st.kept;
        c->n++;
        c->bytes += cap;
        c->st.kept++;
    } else {
        c->st.freed++;
    }
    pthread_mutex_unlock(&c->mu);
    if (!keep)
        free(block);
}

void sr_block_cache_stats_of(sr_block_cache *c, sr_block_cache_stats *out)
{
    sr_block_cache_stats zero = {0, 0, 0, 0, 0, 0, 0};
    *out = zero;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    out->blocks = c->n;
    out->bytes = c->bytes;
    pthread_mutex_unlock(&c->mu);
}
