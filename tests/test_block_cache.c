/*
 * unit.block_cache: lib/sr_block_cache.h. Kept blocks come back smallest-fitting first within a
 * take's window, the bounds (the largest block, the bytes) free what they refuse and a full cache
 * frees its oldest blocks for a newer one, a closed
 * cache keeps nothing while its holders' references keep it alive, and threads putting and
 * taking at once lose no block (every block is either kept, handed out or counted freed). Then
 * the route trace's use of a cache (sr_route_trace_set_cache); the rollout's is in
 * unit.rollout_storage.
 */
#include <pthread.h>

#include "sr_block_cache.h"
#include "sr_test.h"
#include "sr_trace.h"

static sr_block_cache *cache_new(size_t blocks, size_t bytes, size_t block)
{
    sr_block_cache *c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_block_cache_new(&c, blocks, bytes, block, &err), err);
    return c;
}

static sr_block_cache_stats stats(sr_block_cache *c)
{
    sr_block_cache_stats s;
    sr_block_cache_stats_of(c, &s);
    return s;
}

START_TEST(bad_bounds_are_refused_by_name)
{
    sr_block_cache *c = (sr_block_cache *)1;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(sr_block_cache_new(&c, 0, 100, 100, &err), err, SR_E_INVAL);
    ck_assert_ptr_null(c);
    ck_assert_sr_code(sr_block_cache_new(&c, 4, 0, 100, &err), err, SR_E_INVAL);
    ck_assert_sr_code(sr_block_cache_new(&c, 4, 100, 0, &err), err, SR_E_INVAL);
    ck_assert_sr_code(sr_block_cache_new(&c, (size_t)1 << 20, 100, 100, &err), err, SR_E_INVAL);
}
END_TEST

/* The smallest kept block of min..max comes back, the same pointer, and only once. */
START_TEST(take_hands_out_the_smallest_fitting_block)
{
    sr_block_cache *c = cache_new(8, 1 << 20, 1 << 20);
    void *a = malloc(1000), *b = malloc(3000), *d = malloc(2000);
    sr_block_cache_put(c, a, 1000);
    sr_block_cache_put(c, b, 3000);
    sr_block_cache_put(c, d, 2000);
    ck_assert_uint_eq(stats(c).blocks, 3);
    ck_assert_uint_eq(stats(c).bytes, 6000);
    size_t cap = 1;
    ck_assert_ptr_null(sr_block_cache_take(c, 3001, 9000, &cap)); /* none large enough */
    ck_assert_uint_eq(cap, 0);
    ck_assert_ptr_null(sr_block_cache_take(c, 100, 999, &cap)); /* none small enough */
    ck_assert_ptr_null(sr_block_cache_take(c, 0, 9000, &cap));  /* min 0 */
    ck_assert_ptr_null(sr_block_cache_take(c, 50, 40, &cap));   /* min > max */
    ck_assert_ptr_eq(sr_block_cache_take(c, 1500, 9000, &cap), d);
    ck_assert_uint_eq(cap, 2000);
    ck_assert_ptr_eq(sr_block_cache_take(c, 1000, 1000, &cap), a);
    ck_assert_uint_eq(cap, 1000);
    ck_assert_ptr_eq(sr_block_cache_take(c, 1500, 9000, &cap), b);
    ck_assert_uint_eq(cap, 3000);
    ck_assert_ptr_null(sr_block_cache_take(c, 1, 9000, &cap));
    sr_block_cache_stats s = stats(c);
    ck_assert_uint_eq(s.blocks, 0);
    ck_assert_uint_eq(s.bytes, 0);
    ck_assert_uint_eq(s.hits, 3);
    ck_assert_uint_eq(s.misses, 3); /* (the refused arguments are not counted) */
    ck_assert_uint_eq(s.kept, 3);
    free(a);
    free(b);
    free(d);
    sr_block_cache_close(c);
}
END_TEST

/* A block past the largest size or past the byte total is freed (counted; a leak checker would
 * see one otherwise), one exactly at either bound is kept; a put past the block count or the
 * bytes left first frees the oldest kept blocks (counted as evicted). */
START_TEST(bounds_free_what_they_refuse_and_evict_the_oldest)
{
    sr_block_cache *c = cache_new(2, 500, 300);
    sr_block_cache_put(c, malloc(301), 301); /* past the largest block */
    ck_assert_uint_eq(stats(c).freed, 1);
    sr_block_cache_put(c, malloc(300), 300); /* exactly the largest block */
    void *b201 = malloc(201);
    sr_block_cache_put(c, b201, 201); /* 501 bytes in all: the 300 goes */
    sr_block_cache_stats s = stats(c);
    ck_assert_uint_eq(s.freed, 1);
    ck_assert_uint_eq(s.evicted, 1);
    ck_assert_uint_eq(s.blocks, 1);
    ck_assert_uint_eq(s.bytes, 201);
    void *b299 = malloc(299);
    sr_block_cache_put(c, b299, 299); /* exactly 500 */
    ck_assert_uint_eq(stats(c).evicted, 1);
    sr_block_cache_put(c, malloc(1), 1); /* a third block: the 201, the oldest, goes */
    sr_block_cache_put(c, NULL, 10);     /* nothing */
    s = stats(c);
    ck_assert_uint_eq(s.freed, 1);
    ck_assert_uint_eq(s.evicted, 2);
    ck_assert_uint_eq(s.kept, 4);
    ck_assert_uint_eq(s.blocks, 2);
    ck_assert_uint_eq(s.bytes, 300);
    size_t cap;
    ck_assert_ptr_null(sr_block_cache_take(c, 201, 201, &cap));
    void *p = sr_block_cache_take(c, 200, 300, &cap);
    ck_assert_ptr_eq(p, b299);
    ck_assert_uint_eq(cap, 299);
    free(p);
    sr_block_cache_put(NULL, malloc(8), 8); /* no cache: freed */
    sr_block_cache_close(c);                /* frees the one kept */
}
END_TEST

/* Blocks of a size no take asks for any more (short trajectories' shrunk arrays) do not hold
 * the cache: the next blocks that are asked for replace them, oldest first. */
START_TEST(blocks_nobody_takes_age_out)
{
    sr_block_cache *c = cache_new(4, 1 << 20, 1 << 20);
    for (int i = 0; i < 4; i++)
        sr_block_cache_put(c, malloc(16), 16);
    size_t cap;
    ck_assert_ptr_null(sr_block_cache_take(c, 1000, 2000, &cap));
    void *want[3];
    for (int i = 0; i < 3; i++) {
        want[i] = malloc(1000 + (size_t)i);
        sr_block_cache_put(c, want[i], 1000 + (size_t)i);
    }
    sr_block_cache_stats s = stats(c);
    ck_assert_uint_eq(s.evicted, 3);
    ck_assert_uint_eq(s.blocks, 4);
    ck_assert_uint_eq(s.bytes, 16 + 1000 + 1001 + 1002);
    for (int i = 0; i < 3; i++) {
        void *p = sr_block_cache_take(c, 1000, 2000, &cap);
        ck_assert_ptr_eq(p, want[i]); /* smallest first */
        free(p);
    }
    sr_block_cache_close(c);
}
END_TEST

/* Closing drops what is kept and refuses more; a holder's reference keeps the cache usable
 * (puts free, takes miss) until the last reference goes, whatever the order. */
START_TEST(a_holder_outlives_the_closed_cache)
{
    sr_block_cache *c = cache_new(4, 1 << 20, 1 << 20);
    sr_block_cache *held = sr_block_cache_ref(c);
    ck_assert_ptr_eq(held, c);
    sr_block_cache *second = sr_block_cache_ref(c);
    sr_block_cache_put(c, malloc(64), 64);
    sr_block_cache_close(c);
    ck_assert_uint_eq(stats(held).blocks, 0);
    size_t cap;
    sr_block_cache_put(held, malloc(64), 64);
    ck_assert_ptr_null(sr_block_cache_take(held, 1, 1 << 20, &cap));
    sr_block_cache_stats s = stats(held);
    ck_assert_uint_eq(s.blocks, 0);
    ck_assert_uint_eq(s.kept, 1);
    ck_assert_uint_eq(s.freed, 1);
    sr_block_cache_unref(second);
    sr_block_cache_unref(held); /* the last: frees the cache */
    ck_assert_ptr_null(sr_block_cache_ref(NULL));
    sr_block_cache_unref(NULL);
    sr_block_cache_close(NULL);
    ck_assert_ptr_null(sr_block_cache_take(NULL, 1, 2, &cap));
    ck_assert_uint_eq(stats(NULL).hits, 0);
}
END_TEST

/* The last unref frees the blocks still kept (a leak checker would see them otherwise). */
START_TEST(the_last_reference_frees_kept_blocks)
{
    sr_block_cache *c = cache_new(4, 1 << 20, 1 << 20);
    sr_block_cache *held = sr_block_cache_ref(c);
    sr_block_cache_unref(c); /* not the last: the blocks stay usable */
    sr_block_cache_put(held, malloc(100), 100);
    ck_assert_uint_eq(stats(held).blocks, 1);
    sr_block_cache_unref(held);
}
END_TEST

typedef struct churn {
    sr_block_cache *c;
    int rounds;
    uint64_t made;
} churn;

/* Takes a block (or makes one), writes it whole, puts it back: every round. */
static void *churn_main(void *arg)
{
    churn *x = arg;
    for (int i = 0; i < x->rounds; i++) {
        size_t cap, want = 256 + (size_t)(i % 7) * 64;
        unsigned char *p = sr_block_cache_take(x->c, want, want * 2, &cap);
        if (!p) {
            p = malloc(want);
            cap = want;
            x->made++;
        }
        ck_assert_uint_ge(cap, want);
        memset(p, i & 0xff, cap);
        sr_block_cache_put(x->c, p, cap);
    }
    return NULL;
}

/* Four threads at once: every block made is accounted for (kept now, freed by a bound or
 * evicted), and
 * every take either hit or missed. */
START_TEST(threads_at_once_lose_no_block)
{
    sr_block_cache *c = cache_new(6, 1 << 20, 1 << 20);
    churn x[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        x[i] = (churn){c, 2000, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, churn_main, &x[i]), 0);
    }
    uint64_t made = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        made += x[i].made;
    }
    sr_block_cache_stats s = stats(c);
    ck_assert_uint_eq(s.hits + s.misses, 4 * 2000);
    ck_assert_uint_eq(s.misses, made);
    ck_assert_uint_eq(s.kept + s.freed, 4 * 2000);
    ck_assert_uint_eq(s.blocks + s.freed + s.evicted, made);
    ck_assert_uint_le(s.blocks, 6);
    sr_block_cache_close(c);
}
END_TEST

/* uint8 routes [rows, 2, 3] of values (seed + i) % 7. */
static sr_ndarray routes_u8(int64_t rows, int seed)
{
    int64_t shape[3] = {rows, 2, 3};
    sr_ndarray a;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(&a, SR_DTYPE_UINT8, 3, shape, &err), err);
    for (size_t i = 0; i < a.nbytes; i++)
        ((uint8_t *)a.data)[i] = (uint8_t)((seed + (int)i) % 7);
    return a;
}

/* One trajectory of two turns (a prompt of 4, 3 generated, 1 observation token, 2 generated) on
 * `t`, rows written in the trace's room; the finalized [10, 2, 3] routes. */
static sr_ndarray trajectory(sr_route_trace *t)
{
    sr_err err = SR_ERR_INIT;
    sr_route_trace_hint_row_bytes(t, 6);
    int64_t p = 4, g = 3;
    for (int turn = 0; turn < 2; turn++) {
        sr_ndarray r = routes_u8(p - sr_route_trace_prompt_start(t) + g - 1, turn);
        unsigned char *at;
        size_t room;
        ck_assert_sr_ok(sr_route_trace_room(t, &at, &room, &err), err);
        ck_assert_ptr_nonnull(at);
        ck_assert_uint_ge(room, r.nbytes);
        memcpy(at, r.data, r.nbytes);
        sr_ndarray v = r;
        v.data = at;
        v.owned = 0;
        ck_assert_sr_ok(sr_route_trace_record(t, p, g, &v, NULL, 0, &err), err);
        sr_ndarray_release(&r);
        p = p + g + 1, g = 2;
    }
    uint8_t mask[10] = {0, 0, 0, 0, 1, 1, 1, 0, 1, 1};
    sr_ndarray out;
    ck_assert_sr_ok(sr_route_trace_finalize(&out, NULL, t, 10, mask, 10, &err), err);
    return out;
}

/* A trace with a cache reserves its rows in a kept block of reserve..2 x reserve bytes (not in a
 * smaller or a much larger one), hands that very block over at finalize with its size, and puts
 * the storage it still holds back when freed; the routes are those of a trace without one. */
START_TEST(a_route_trace_reserves_in_a_kept_block)
{
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.reserve_rows = 16; /* 16 rows of 6 bytes: 96 bytes wanted */
    sr_err err = SR_ERR_INIT;
    sr_route_trace *plain, *t;
    ck_assert_sr_ok(sr_route_trace_new(&plain, &o, &err), err);
    ck_assert_sr_ok(sr_route_trace_new(&t, &o, &err), err);
    sr_ndarray want = trajectory(plain);
    sr_block_cache *c = cache_new(8, 1 << 20, 1 << 20);
    sr_route_trace_set_cache(t, c);
    void *small = malloc(95), *large = malloc(193), *fit = malloc(150);
    sr_block_cache_put(c, small, 95);
    sr_block_cache_put(c, large, 193);
    sr_block_cache_put(c, fit, 150);
    sr_ndarray got = trajectory(t);
    ck_assert_ptr_eq(got.data, fit);
    ck_assert_uint_eq(sr_route_trace_handed_capacity(t), 150);
    ck_assert(sr_ndarray_equal(&got, &want));
    ck_assert_uint_eq(stats(c).hits, 1);
    /* Given back and taken again by the next trajectory on the same trace. */
    sr_block_cache_put(c, got.data, sr_route_trace_handed_capacity(t));
    sr_route_trace_reset(t, &o);
    ck_assert_uint_eq(sr_route_trace_handed_capacity(t), 0);
    got = trajectory(t);
    ck_assert_ptr_eq(got.data, fit);
    ck_assert(sr_ndarray_equal(&got, &want));
    sr_ndarray_release(&got);
    /* Only the small and the large blocks are kept: the next reserve makes its own block. */
    sr_route_trace_reset(t, &o);
    unsigned char *at;
    size_t room;
    ck_assert_sr_ok(sr_route_trace_room(t, &at, &room, &err), err);
    ck_assert(at != small && at != large);
    ck_assert_uint_eq(room, 96);
    sr_block_cache_stats s = stats(c);
    ck_assert_uint_eq(s.hits, 2);
    ck_assert_uint_eq(s.misses, 1);
    sr_route_trace_free(t); /* its 96 bytes go back */
    ck_assert_uint_eq(stats(c).kept, s.kept + 1);
    ck_assert_uint_eq(stats(c).blocks, 3);
    sr_route_trace_free(plain);
    sr_ndarray_release(&want);
    sr_block_cache_close(c);
}
END_TEST

/* A finalize that gives back most of a large reserve (the array lives as long as its run) reports
 * the size it shrank the block to: the cache must never be told a block is larger than it is. */
START_TEST(a_shrunk_array_reports_its_new_size)
{
    sr_trace_opts o = SR_TRACE_OPTS_INIT;
    o.reserve_rows = 2000; /* 12000 bytes reserved, 60 used */
    sr_err err = SR_ERR_INIT;
    sr_route_trace *t;
    ck_assert_sr_ok(sr_route_trace_new(&t, &o, &err), err);
    sr_ndarray got = trajectory(t);
    ck_assert_uint_eq(got.nbytes, 60);
    ck_assert_uint_eq(sr_route_trace_handed_capacity(t), 60);
    sr_ndarray_release(&got);
    o.reserve_rows = 16; /* 96 bytes: no shrink, the whole reserve is handed over */
    sr_route_trace_reset(t, &o);
    got = trajectory(t);
    ck_assert_uint_eq(sr_route_trace_handed_capacity(t), 96);
    sr_ndarray_release(&got);
    sr_route_trace_free(t);
}
END_TEST

static Suite *block_cache_suite(void)
{
    Suite *s = suite_create("block_cache");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, bad_bounds_are_refused_by_name);
    tcase_add_test(tc, take_hands_out_the_smallest_fitting_block);
    tcase_add_test(tc, bounds_free_what_they_refuse_and_evict_the_oldest);
    tcase_add_test(tc, blocks_nobody_takes_age_out);
    tcase_add_test(tc, a_holder_outlives_the_closed_cache);
    tcase_add_test(tc, the_last_reference_frees_kept_blocks);
    tcase_add_test(tc, threads_at_once_lose_no_block);
    tcase_add_test(tc, a_route_trace_reserves_in_a_kept_block);
    tcase_add_test(tc, a_shrunk_array_reports_its_new_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(block_cache_suite());
}
