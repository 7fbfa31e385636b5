/*
 * The libcurl floor of bench_e2e's harness time per request: the generate requests of finished
 * rollouts replayed with bare libcurl (a kept-alive easy handle per thread, the response
 * discarded unread), on as many threads as the harness used. What one request costs this process
 * before syncroll does anything with the answer: libcurl, its system calls and the kernel's
 * loopback TCP. Request bodies are built before the clock starts.
 *
 * Not thread-safe; one floor per bench. Ownership: the floor owns its easy handles and bodies.
 */
#ifndef BENCH_E2E_FLOOR_H
#define BENCH_E2E_FLOOR_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "run/rollout.h"

typedef struct e2e_floor e2e_floor;

/* A floor over `n_urls` engine URLs with `threads` kept-alive easy handles. NULL on failure. */
e2e_floor *e2e_floor_new(const char *const *urls, int n_urls, int threads);

/*
 * The same replay through libcurl's multi interface: `threads` threads, each driving one multi
 * handle with up to slots / threads transfers in flight (slots: the harness's concurrency), so
 * the requests are just as concurrent but need no thread each. An experiment, to see what an
 * event-driven client could save; not what syncroll's client does.
 */
e2e_floor *e2e_floor_new_multi(const char *const *urls, int n_urls, int slots, int threads);
void e2e_floor_free(e2e_floor *f);

/*
 * From now on every response of a replay is also spliced as it arrives, in the write callback,
 * by a splicer of `fields` (borrowed) kept per easy handle, as syncroll's client splices: what the
 * splice costs when it runs between libcurl's receives instead of in a loop. Each replay then adds
 * the splice's thread CPU and response count to its totals (and fails when a splice fails), and
 * each slot keeps its last response's body for e2e_floor_splice_loop (copied piece by piece
 * outside the timed spans; the copy can only raise the replay's figure). 0, or -1 on failure.
 */
int e2e_floor_splice(e2e_floor *f, const sr_fields *fields);

/*
 * The same splicers splicing the kept bodies (one per slot, the last replay's) `rounds` times
 * round-robin, in pieces of libcurl's largest write (16 KiB), timed as the replay times its
 * pieces: *cpu_us is the thread CPU per response. The splice's cost on the same bodies with
 * nothing between the pieces. 0, or -1 when nothing was kept or a splice failed.
 */
int e2e_floor_splice_loop(e2e_floor *f, int rounds, double *cpu_us);

/* What one replay of a batch cost. */
typedef struct e2e_floor_totals {
    double cpu_ms;   /* thread CPU time summed over the threads, curl calls only */
    double requests; /* requests sent (every turn of every rollout) */
    double bytes;    /* response bytes received */
    double wall_ms;  /* wall time of the replays, from the threads' start to their end */
    double
        splice_cpu_ms; /* e2e_floor_splice: thread CPU inside the splice, clock reads taken out */
    double spliced;    /* e2e_floor_splice: responses spliced */
} e2e_floor_totals;

/*
 * Replays every turn of results[0 .. n-1] (their configs in cfgs: session, model) with the
 * sampling parameters `sp`: turn k sends the first turns[k].prompt_len tokens of the
 * conversation with turns[k].start_sent to turns[k].engine. Returns 0, or -1 when a request
 * failed or did not answer 200 (the floor would then not be one).
 */
int e2e_floor_batch(e2e_floor *f, e2e_floor_totals *t, const sr_rollout_result *results,
                    const sr_rollout_config *cfgs, size_t n, const cJSON *sp);

#endif /* BENCH_E2E_FLOOR_H */
