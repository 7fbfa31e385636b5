/*
 * unit.client_threads: the threads of sr_client_parallel (client.h, "Concurrency"). The client
 * keeps them between calls, so the next call's jobs run on the same threads (warm stacks,
 * arenas and caches), a wider call adds threads, and sr_client_free ends every one of them.
 * No engine is needed: the jobs make no request. A thread's end is seen by a thread-specific
 * value's destructor, which runs before pthread_join returns, not by counting the process's
 * threads (a sanitizer's runtime adds threads of its own).
 */
#include <pthread.h>
#include <stdatomic.h>

#include <curl/curl.h>

#include "client/client.h"
#include "sr_test.h"

#define JOBS 24

typedef struct seen {
    pthread_t th[JOBS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiting, wait_for; /* the first wait_for jobs wait for each other (all threads busy) */
} seen;

/* Threads that ran a job and have ended since (the destructor of `marked`). */
static atomic_int ended;
static pthread_key_t marked;

static int ended_now(void)
{
    return atomic_load(&ended);
}

static void on_thread_end(void *v)
{
    (void)v;
    atomic_fetch_add(&ended, 1);
}

static int note_thread(sr_client_conn *k, size_t i, void *ctx)
{
    seen *s = ctx;
    ck_assert_ptr_nonnull(k);
    s->th[i] = pthread_self();
    pthread_setspecific(marked, &ended);
    /* The first jobs meet before any ends, so each of them holds its own thread. */
    pthread_mutex_lock(&s->mu);
    if ((int)i < s->wait_for) {
        s->waiting++;
        pthread_cond_broadcast(&s->cv);
        while (s->waiting < s->wait_for)
            pthread_cond_wait(&s->cv, &s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return (int)i;
}

/* The distinct threads of a call, into out; how many. */
static int distinct(const seen *s, pthread_t *out)
{
    int n = 0;
    for (int i = 0; i < JOBS; i++) {
        int known = 0;
        for (int j = 0; j < n; j++)
            known |= pthread_equal(out[j], s->th[i]);
        if (!known)
            out[n++] = s->th[i];
    }
    return n;
}

static void call(const sr_client *c, seen *s, int limit)
{
    memset(s->th, 0, sizeof s->th);
    s->waiting = 0;
    s->wait_for = limit;
    int rcs[JOBS];
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_parallel(c, JOBS, limit, note_thread, s, rcs, &e), e);
    for (int i = 0; i < JOBS; i++)
        ck_assert_int_eq(rcs[i], i);
}

START_TEST(calls_reuse_the_kept_threads_and_free_ends_them)
{
    ck_assert_int_eq(pthread_key_create(&marked, on_thread_end), 0);
    atomic_store(&ended, 0);
    const char *urls[] = {"http://127.0.0.1:9"};
    sr_client *c;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_new(&c, urls, 1, NULL, NULL, &e), e);
    static seen s;
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    pthread_t first[JOBS], again[JOBS], wide[JOBS];
    call(c, &s, 4);
    ck_assert_int_eq(distinct(&s, first), 4);
    /* 3 threads besides this one ran jobs and are kept, idle: none has ended. */
    ck_assert_int_eq(ended_now(), 0);
    call(c, &s, 4);
    ck_assert_int_eq(distinct(&s, again), 4);
    for (int i = 0; i < 4; i++) {
        int known = 0;
        for (int j = 0; j < 4; j++)
            known |= pthread_equal(again[i], first[j]);
        ck_assert_msg(known, "the second call ran a job on a thread the first did not have");
    }
    ck_assert_int_eq(ended_now(), 0);
    call(c, &s, 6); /* two more threads, then six kept: five besides this one */
    ck_assert_int_eq(distinct(&s, wide), 6);
    ck_assert_int_eq(ended_now(), 0);
    sr_client_free(c);
    ck_assert_int_eq(ended_now(), 5);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    pthread_key_delete(marked);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("client_threads");
    TCase *tc = tcase_create("threads");
    tcase_add_test(tc, calls_reuse_the_kept_threads_and_free_ends_them);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(threads_suite());
    curl_global_cleanup();
    return rc;
}
