/*
 * Two extra passes of bench_e2e's part 2 (harness time per request), each over batches of the
 * same rollouts the harness measurement ran:
 *
 * - the phases in thread CPU time: the rollouts on a client that samples every generate
 *   (sr_client_opts.cpu_every = 1), each turn's request, splice and record CPU time and each
 *   rollout's finalize summed (the headline measurement runs without that sampling, whose clock
 *   reads are system calls);
 * - the client's throughput: the rollouts at the scenario's concurrency, each rollout verified
 *   against the oracle in its own job (sr_verify_rollout) as `syncroll run` does, the wall time
 *   of the batch giving generates per second; then the same requests replayed by the libcurl
 *   multi floor (e2e_floor.h), whose wall time gives the floor's requests per second.
 *
 * Not thread-safe (one pass at a time); the caller owns configs and results.
 */
#ifndef BENCH_E2E_PASS_H
#define BENCH_E2E_PASS_H

#include <stddef.h>

#include "client/client.h"
#include "e2e_floor.h"
#include "run/rollout.h"
#include "run/verify.h"
#include "spec/engine_config.h"

/* A batch's rollouts for e2e_rollout_job: configs (borrowed) and results (the caller's). */
typedef struct e2e_rollouts {
    const sr_rollout_config *cfgs;
    sr_rollout_result *res;
} e2e_rollouts;

/* An sr_client_parallel job: rollout i of the e2e_rollouts `ctx`, on conn k. */
int e2e_rollout_job(sr_client_conn *k, size_t i, void *ctx);

/* The sums of the CPU pass. */
typedef struct e2e_cpu_totals {
    double turns, rollouts;
    double request_ms, splice_ms, record_ms, finalize_ms; /* thread CPU time */
    double route_bytes;                                   /* bytes of the routes recorded */
    double response_bytes;
} e2e_cpu_totals;

/* Runs the n rollouts of cfgs (at most `limit` in flight) on a client that samples every
 * generate, and adds their CPU figures to *t. 0, or -1 when a rollout failed. */
int e2e_cpu_pass(e2e_cpu_totals *t, const sr_client *c, const sr_rollout_config *cfgs, size_t n,
                 int limit);

/* The sums of the throughput pass. */
typedef struct e2e_rps_totals {
    double requests, wall_ms; /* syncroll's client, rollouts verified */
    e2e_floor_totals floor;   /* the multi floor's replay of the same requests */
} e2e_rps_totals;

/* One batch: cfgs[0..n) through `c` at `limit` in flight, verified by `v` (the oracle of
 * `engine`: borrowed, shared by the batches as a scenario's steps share one), then replayed by
 * `multi` with sampling params sp. 0, or -1 when a rollout failed, a check fired or the replay
 * failed. */
int e2e_rps_pass(e2e_rps_totals *t, const sr_client *c, sr_verifier *v,
                 const sr_engine_config *engine, const sr_rollout_config *cfgs, size_t n, int limit,
                 e2e_floor *multi, const cJSON *sp);

/* The batches of a pass: make(ctx, cfgs, rep) fills cfgs[0..n) for batch `rep`; at most
 * `limit` rollouts in flight. */
typedef struct e2e_batches {
    sr_rollout_config *cfgs;
    size_t n;
    int limit;
    void (*make)(void *ctx, sr_rollout_config *cfgs, int rep);
    void *ctx;
} e2e_batches;

/*
 * 3 batches of e2e_cpu_pass on a client of `opts` (cpu_every 1) over urls[0..ne), then the lines
 * e2e.cpu.{splice,record,request,finalize}: the mean per turn (finalize: per rollout) against
 * issue 36's budgets (splice 3 x memcpy(response) + 3 us, record 3 x memcpy(routes) + 2 us),
 * request against `floor_us`, the curl floor's CPU per request. 0, or -1 when a pass failed.
 */
int e2e_cpu_lines(const e2e_batches *b, const char *const *urls, int ne, const sr_fields *fields,
                  const sr_client_opts *opts, double floor_us, int reps);

/* 1 warm-up + reps batches of e2e_rps_pass with one verifier (the warm-up computes the weight
 * version's fingerprints, which the batches then share, as the steps of one scenario do), then
 * the line e2e.client_rps (rps, floor_rps, vs_floor = rps / floor_rps). 0, or -1 when a pass
 * failed. */
int e2e_rps_line(const e2e_batches *b, const sr_client *c, const sr_engine_config *engine,
                 e2e_floor *multi, const cJSON *sp, int reps);

/*
 * The splice driven by bare libcurl (e2e_splice_pass.c): 1 warm-up + reps batches through `c`,
 * each batch's requests then replayed by two splicing floors (e2e_floor_splice: an easy handle and
 * a thread per slot; `threads` threads of libcurl multi), which splice every response in the write
 * callback; then the easy floor's kept bodies spliced again in a loop (e2e_floor_splice_loop).
 * The lines e2e.splice_in_libcurl and e2e.splice_in_libcurl_multi: the splice's thread CPU per
 * response in each replay against the loop's on the same bodies: how much of the splice's cost in
 * a rollout comes from where it runs (between receives, on a core shared with the engines) rather
 * than from its instructions, and whether an event-driven client would change it. `fields` NULL:
 * the built-in registry. 0, or -1 when a batch, a replay or a splice failed.
 */
int e2e_splice_lines(const e2e_batches *b, const sr_client *c, const char *const *urls, int ne,
                     const sr_fields *fields, const cJSON *sp, int threads, int reps);

#endif /* BENCH_E2E_PASS_H */
