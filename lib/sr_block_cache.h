/*
 * sr_block_cache: spare heap blocks kept for reuse, so that storage handed to an owner that
 * releases it later (a rollout's routes, freed with its result) comes back to the next user
 * with its pages already touched instead of being freed and allocated fresh (a first touch is a
 * page fault per 4 KiB page: bench/README.md, "Seventh round").
 *
 * Blocks. A block is plain malloc'd memory of at least `cap` usable bytes; the cache only keeps
 * blocks between a put and a take. A block taken (or never put) belongs to its holder, who may
 * realloc it, free() it or put it back: a block that never comes back is no leak. put() keeps
 * a block while the cache is open and the block no larger than the largest block and the byte
 * total, else frees it; to keep it within the block count and the byte total it first frees the
 * oldest kept blocks (those kept by the earliest puts), so blocks of a size no take asks for any
 * more age out instead of filling the cache for good. take(min, max) hands out the smallest
 * kept block of min..max bytes, or NULL (the caller then allocates as it would without a
 * cache).
 *
 * Ownership and lifetime. The cache is reference counted: sr_block_cache_new gives the creator
 * one reference; every holder that may put a block later (a trace, a result holding its
 * routes) takes its own with sr_block_cache_ref and drops it with sr_block_cache_unref, so a
 * holder may outlive the cache's creator and release in any order. The creator ends its use
 * with sr_block_cache_close: the kept blocks are freed, every later put frees its block, every
 * later take returns NULL, and the creator's reference is dropped. The last reference frees
 * the cache. No global state.
 *
 * Thread-safety: every function may be called from any thread at once (one mutex).
 */
#ifndef SR_BLOCK_CACHE_H
#define SR_BLOCK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"

typedef struct sr_block_cache sr_block_cache;

/* What a cache did so far (sr_block_cache_stats); plain counters. */
typedef struct sr_block_cache_stats {
    size_t blocks;    /* blocks kept now */
    size_t bytes;     /* their bytes */
    uint64_t hits;    /* takes that handed out a kept block */
    uint64_t misses;  /* takes that found none (the caller allocated) */
    uint64_t kept;    /* puts that kept their block */
    uint64_t freed;   /* puts that freed their block (closed, past the block or byte bound) */
    uint64_t evicted; /* kept blocks freed to make room for a newer one */
} sr_block_cache_stats;

/*
 * A cache keeping at most max_blocks blocks of at most max_block bytes each and max_bytes bytes
 * in all (each >= 1, else SR_E_INVAL); the caller holds one reference. SR_E_NOMEM.
 */
int sr_block_cache_new(sr_block_cache **out, size_t max_blocks, size_t max_bytes, size_t max_block,
                       sr_err *err);

/* A new reference to c (NULL: NULL). */
sr_block_cache *sr_block_cache_ref(sr_block_cache *c);

/* Drops a reference; the last one frees the cache and the blocks it keeps. NULL is a no-op. */
void sr_block_cache_unref(sr_block_cache *c);

/* The creator's end (above): frees the kept blocks, refuses later puts and takes, and drops the
 * caller's reference. NULL is a no-op. */
void sr_block_cache_close(sr_block_cache *c);

/*
 * The smallest kept block of min..max bytes (its size in *cap), now the caller's; NULL (and *cap
 * 0) when none is kept, min is 0, min > max, or the cache is closed. c NULL: NULL.
 */
void *sr_block_cache_take(sr_block_cache *c, size_t min, size_t max, size_t *cap);

/*
 * Gives `block` (from malloc, realloc or a take; at least cap usable bytes) to the cache, which
 * keeps it or frees it (above). The caller must not use it afterwards. block NULL is a no-op; c
 * NULL frees the block.
 */
void sr_block_cache_put(sr_block_cache *c, void *block, size_t cap);

/* The counters so far; all zero for c NULL. */
void sr_block_cache_stats_of(sr_block_cache *c, sr_block_cache_stats *out);

#endif /* SR_BLOCK_CACHE_H */
