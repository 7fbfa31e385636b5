/*
 * result: the result model of one `syncroll run` (design.md §5, §6). The runner fills it; every
 * reporter (text, results.json, JUnit, HTML) only reads it.
 *
 * A run (sr_run_result) has a header (version, git revision, machine, seed, options, start
 * time, run id and folder) and one sr_scenario_result per scenario EXECUTION (a scenario run
 * three times with --repeat 3 has three entries, repeat = 1, 2, 3). A scenario result holds:
 *   - identity: id, file, tags, seed, repeat, the expanded scenario's path, the artifact folder;
 *   - the verdict (pass / fail / error / skip) and a one-line reason (empty for pass);
 *   - the checks that fired, each with a stable dotted name (the names of lib/sr_err.h, plus the
 *     verifier's own, listed in harness/spec/checks.h and scenarios/FORMAT.md), an optional
 *     classification (trace.row_mismatch: "off_by_one", "all_zero_capture", "duplicated_row",
 *     "stale_weights", "newer_weights", "overwritten_prefix", "unclassified"), a message and
 *     where it happened (step, engine, sample, turn, token row, layer; -1 where not applicable);
 *     at most SR_RESULT_MAX_CHECKS are kept in `checks`, but `fired` always counts every check
 *     by name, so the set of fired names is exact;
 *   - the checks that were skipped, with the reason (external engines: no oracle);
 *   - the repro command (one line, runnable from the directory syncroll was started in);
 *   - timings: start (ms since the run started) and wall time; one entry per step (kind, name,
 *     start, end, the harness error if the step could not run) for timelines;
 *   - a latency histogram per phase (sr_hist, values in NANOSECONDS, see sr_phase below);
 *     allocated empty (no buckets until a sample), so an execution costs memory in proportion
 *     to what it measured (README "Reliability" gives the bound);
 *   - counters (rollouts requested / verified / failed, turns, attempts, bytes, rows, ...);
 *   - the engines it ran (index, URL, pid, log file, how each ended).
 *
 * Verdicts. pass: every expectation held (no check fired, or exactly the expected ones). fail: a
 * check fired that was not expected, or an expected check did not fire. error: the harness
 * itself could not run the scenario (an engine could not be spawned, a step is not implemented,
 * an internal error); `expect` cannot turn an error into a pass. skip: the scenario was not run
 * (its `skip` key); reason says why. interrupted: a stop signal (SIGINT, SIGTERM) ended the run
 * before the scenario finished (or before it started); neither pass nor fail, and the run is
 * then `partial` (below).
 *
 * Phases (sr_phase), each a histogram of one sample per event, in nanoseconds (CLOCK_MONOTONIC):
 *   request     one generate request, attempts and waits included (per rollout turn)
 *   splice      splicing/decoding one response body (per turn)
 *   record      recording one turn's routes into the trace (per turn with routes)
 *   finalize    finalizing one rollout's trace (per rollout with routes)
 *   collate     one collation of a batch (per collate step)
 *   publish     publishing one weight version, trainer side (per sync; weight-sync issue)
 *   apply       applying one weight version on one engine (per engine per sync)
 *   sync_total  one sync_weights step, end to end
 *   scenario    the scenario, engines' start and stop included (one sample)
 * The run header keeps the same histograms merged over every scenario (sr_run_result_finish).
 * The per-request phases (request, splice, record, finalize) are also measured in the thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID) on the generates the client samples for it
 * (sr_client_opts.cpu_every): `cpu` holds their count and sum, so a phase's cost is told apart
 * from waiting (for bytes, or for a core among many threads).
 *
 * Ownership and lifetime. sr_run_result_new allocates an empty run; sr_run_result_free frees it
 * and everything it points to (strings, checks, histograms, scenario entries). Every string
 * member is owned (heap, NUL-terminated) or NULL when unknown; every pointer returned by the
 * functions below is borrowed from the run and lives until sr_run_result_free. Scenario entries
 * are allocated individually, so a pointer to one stays valid while others are added.
 *
 * Thread-safety. sr_run_result_add_scenario and sr_run_result_finish belong to one thread (the
 * runner's main thread). A scenario entry may be filled by several threads at once (its steps
 * may overlap) through the sr_result_* functions, which take the entry's own lock; direct
 * writes to a scenario's members are the runner's, on the thread that owns the scenario, and
 * only before any step thread starts or after all have been joined. Reporters read a run only
 * after sr_run_result_finish.
 *
 * Errors: SR_E_NOMEM; SR_E_INVAL for a NULL argument or an unknown phase.
 */
#ifndef SR_RESULT_H
#define SR_RESULT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"
#include "sr_hist.h"

/* Version of this model as written to results.json ("schema"). */
#define SR_RESULT_SCHEMA_VERSION 1

#define SR_RESULT_NAME_MAX     64  /* a check name or classification, including the NUL */
#define SR_RESULT_MAX_CHECKS   256 /* check entries kept per scenario; `fired` counts them all */
#define SR_RESULT_EVIDENCE_MAX 64  /* a check's evidence path, including the NUL */

typedef enum sr_verdict {
    SR_VERDICT_PASS = 0,
    SR_VERDICT_FAIL,
    SR_VERDICT_ERROR,
    SR_VERDICT_SKIP,
    SR_VERDICT_INTERRUPTED, /* a stop signal ended the run before the scenario finished */
    SR_VERDICT_COUNT
} sr_verdict;

/* "pass", "fail", "error", "skip", "interrupted". */
const char *sr_verdict_name(sr_verdict v);

typedef enum sr_phase {
    SR_PHASE_REQUEST = 0,
    SR_PHASE_SPLICE,
    SR_PHASE_RECORD,
    SR_PHASE_FINALIZE,
    SR_PHASE_COLLATE,
    SR_PHASE_PUBLISH,
    SR_PHASE_APPLY,
    SR_PHASE_SYNC_TOTAL,
    SR_PHASE_SCENARIO,
    SR_PHASE_COUNT
} sr_phase;

/* "request", "splice", ..., "sync_total", "scenario"; NULL outside the enum. */
const char *sr_phase_name(sr_phase p);

/* The phase called `name`, or -1. */
int sr_phase_lookup(const char *name);

/* Where a check fired; -1 in every member that does not apply. */
typedef struct sr_check_where {
    int64_t step;   /* 0-based index in the scenario's steps; -1: setup, teardown or budgets */
    int64_t engine; /* engine index */
    int64_t sample; /* rollout index within its step's batch */
    int64_t turn;   /* 1-based turn of that rollout */
    int64_t row;    /* token row (position in prompt + response) */
    int64_t layer;  /* MoE layer slot (0-based, in model.layer_indices order) */
} sr_check_where;

#define SR_CHECK_WHERE_NONE                                                                        \
    {                                                                                              \
        -1, -1, -1, -1, -1, -1                                                                     \
    }

typedef struct sr_check {
    char name[SR_RESULT_NAME_MAX];           /* dotted name, e.g. "trace.row_mismatch" */
    char classification[SR_RESULT_NAME_MAX]; /* "" when the check has none */
    char message[SR_ERR_MSG_MAX];            /* names scenario, sample, turn, row, layer */
    sr_check_where where;
    int expected; /* 1 if the scenario's expect.checks names it */
    /* Its failure evidence (harness/run/evidence.h): the index.txt of the folder that holds it,
     * relative to the scenario's `artifacts` folder ("evidence/step0-sample1/index.txt"); ""
     * when none was written. evidence_cut: the scenario's evidence cap left files out of it. */
    char evidence[SR_RESULT_EVIDENCE_MAX];
    int evidence_cut;
} sr_check;

/* How often a check name fired in a scenario (every firing, kept or not). */
typedef struct sr_check_count {
    char name[SR_RESULT_NAME_MAX];
    uint64_t count;
    int expected;
} sr_check_count;

/* A check that did not run, and why. */
typedef struct sr_skipped_check {
    char name[SR_RESULT_NAME_MAX];
    char reason[SR_ERR_MSG_MAX];
} sr_skipped_check;

/* One step of the scenario as it ran. Times in ms since the scenario started. */
typedef struct sr_step_timing {
    int index;
    char kind[24]; /* "rollout", "sync_weights", ... */
    char name[SR_RESULT_NAME_MAX];
    double start_ms, end_ms; /* end_ms < 0: never finished (scenario error) */
    int code;                /* 0, or the harness error that stopped the step (sr_code) */
} sr_step_timing;

/* One engine of the scenario. */
typedef struct sr_engine_run {
    int index;
    char *url;
    long pid;   /* -1 for external engines */
    char *log;  /* path of its stderr log, NULL for external engines */
    char *exit; /* "stopped", "exited with status 1", "killed by signal 9", NULL if external */
} sr_engine_run;

/* Thread CPU time of the sampled events of one phase (nanoseconds). */
typedef struct sr_phase_cpu {
    uint64_t count;
    uint64_t sum_ns;
} sr_phase_cpu;

typedef struct sr_counters {
    int64_t rollouts_requested; /* every rollout of every rollout step that started */
    int64_t rollouts_verified;  /* ran to the end and every check passed */
    int64_t rollouts_failed;    /* failed with at least one named check */
    int64_t turns;              /* generate turns */
    int64_t attempts;           /* HTTP attempts (retries included) */
    int64_t retries;            /* attempts beyond the first */
    uint64_t bytes_sent;        /* request bodies, all attempts */
    uint64_t bytes_received;    /* response bodies, all attempts */
    int64_t tokens_verified;    /* generated tokens checked against the oracle */
    int64_t rows_verified;      /* captured route rows checked against the oracle */
    int64_t collations;         /* collate steps run */
    int64_t syncs;              /* sync_weights steps run */
} sr_counters;

typedef struct sr_scenario_result {
    pthread_mutex_t mu; /* guards checks, fired, skipped, phase and counters (see above) */
    char *id;
    char *file;     /* as given on the command line (or found under a directory) */
    char *expanded; /* path of the expanded scenario in the run folder */
    char *artifacts;
    char *repro; /* e.g. "syncroll run scenarios/x.json --seed 7" */
    char *description;
    char **tags;
    size_t n_tags;
    uint64_t seed;
    int repeat; /* 1-based execution number of this scenario */
    int external;
    sr_verdict verdict;
    char reason[SR_ERR_MSG_MAX];
    /* expectations, as the scenario declared them */
    sr_verdict expect_verdict; /* PASS or FAIL */
    char **expect_checks;
    size_t n_expect_checks;
    /* what happened */
    sr_check *checks; /* grown as checks fire, at most SR_RESULT_MAX_CHECKS */
    size_t n_checks, cap_checks;
    uint64_t checks_dropped; /* firings beyond SR_RESULT_MAX_CHECKS */
    sr_check_count *fired;
    size_t n_fired;
    sr_check_count *fired_classes; /* every classification seen, counted (name = class) */
    size_t n_fired_classes;
    sr_skipped_check *skipped;
    size_t n_skipped;
    sr_step_timing *steps;
    size_t n_steps;
    sr_engine_run *engines;
    size_t n_engines;
    double start_ms; /* since the run started */
    double wall_ms;
    sr_hist *phase[SR_PHASE_COUNT]; /* nanoseconds */
    sr_phase_cpu cpu[SR_PHASE_COUNT];
    sr_counters counters;
    int shard; /* in a merged run (report --merge): the 1-based shard that ran it; else 0 */
} sr_scenario_result;

/* One shard of a merged run, as its own header said (report --merge). Strings owned or NULL. */
typedef struct sr_merged_shard {
    int k;          /* shard k of the run's shard count */
    char *run_id;   /* the shard's run id */
    char *hostname; /* the machine that ran it */
    char *command;  /* its command line */
} sr_merged_shard;

typedef struct sr_run_header {
    char *version;  /* SYNCROLL_VERSION */
    char *git_rev;  /* commit of the source tree, NULL if unknown */
    char *run_id;   /* "YYYYmmdd-HHMMSS-<pid>" */
    char *out_dir;  /* the run folder, <out>/<run_id> */
    char *hostname; /* machine */
    char *kernel;   /* "Linux 6.1.0-..." */
    char *arch;     /* "x86_64" */
    int cpus;       /* online CPUs */
    char *command;  /* the command line, arguments joined by spaces */
    int has_seed;   /* --seed given */
    uint64_t seed;  /* its value */
    int jobs;       /* -j */
    int repeat;     /* --repeat */
    int until_fail; /* --until-fail */
    int shard_k;    /* --shard K/N (1-based K), 0/0 when not sharded */
    int shard_n;
    char *shard_source; /* "option", "buildkite", "kubernetes", "gitlab", "circleci"; NULL */
    char *shard_detail; /* what was read, e.g. "CI_NODE_INDEX=2 CI_NODE_TOTAL=4"; NULL */
    char *run_group;    /* what makes shards one run (--run-group, or derived); NULL unknown */
    char *selection;    /* the options that select and run scenarios, canonically; NULL */
    char **merged_from; /* run ids of the shards a merged run came from (report --merge) */
    size_t n_merged_from;
    sr_merged_shard *shards; /* the same shards, in shard order, with host and command */
    size_t n_shards;
    int merged_of; /* a merged run: the shard count of the run it merges; else 0 */
    char **tags;   /* --tag (any of) */
    size_t n_tags;
    char **exclude_tags;
    size_t n_exclude_tags;
    int keep;              /* --keep */
    int64_t start_unix_ms; /* wall clock at start */
    char start_iso[32];    /* "2025-01-31T12:00:00Z" */
} sr_run_header;

typedef struct sr_run_result {
    sr_run_header header;
    sr_scenario_result **scenarios; /* in the order they were added */
    size_t n_scenarios, cap_scenarios;
    /* filled by sr_run_result_finish */
    size_t counts[SR_VERDICT_COUNT];
    sr_hist *phase[SR_PHASE_COUNT];   /* every scenario's histograms merged */
    sr_phase_cpu cpu[SR_PHASE_COUNT]; /* summed */
    sr_counters counters;             /* summed */
    double wall_ms;
    /* A run cut short (a stop signal): its reports say so. Set by the runner before reporting. */
    int partial;
    char *partial_reason; /* owned; e.g. "interrupted by SIGTERM", NULL when not partial */
} sr_run_result;

/* An empty run with its totals' histograms allocated dense (merging into them cannot fail). */
int sr_run_result_new(sr_run_result **out, sr_err *err);

/* Frees the run and everything it owns; NULL is a no-op. */
void sr_run_result_free(sr_run_result *run);

/* Copies a string into an owned member (frees the old value); s NULL stores NULL. */
int sr_result_set_str(char **dst, const char *s, sr_err *err);

/*
 * Appends an empty scenario entry (verdict pass, histograms allocated, strings NULL) and
 * returns it in *out (borrowed from the run).
 */
int sr_run_result_add_scenario(sr_scenario_result **out, sr_run_result *run, sr_err *err);

/*
 * Appends a deep copy of `src` (from another run: strings, checks, counts, steps, engines and
 * histograms) and returns it in *out (borrowed from `run`). The copy is for reading: reporting
 * or merging. On SR_E_NOMEM the entry stays in `run`, partly filled, and is freed with it.
 */
int sr_run_result_add_copy(sr_scenario_result **out, sr_run_result *run,
                           const sr_scenario_result *src, sr_err *err);

/*
 * Records a fired check (locks the entry). `classification` may be NULL or "". `where` may be
 * NULL (nowhere). The message is printf-style and cut at SR_ERR_MSG_MAX. `expected` is derived
 * from the entry's expect_checks. Returns 0 or SR_E_NOMEM.
 */
int sr_result_check(sr_scenario_result *s, const char *name, const char *classification,
                    const sr_check_where *where, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/*
 * Sets the evidence path (sr_check.evidence, cut at SR_RESULT_EVIDENCE_MAX) of every kept check
 * that has none yet and fired at (step, sample); step -1 matches every such check that is not
 * expected (locks the entry). Returns how many were set.
 */
size_t sr_result_set_evidence(sr_scenario_result *s, int64_t step, int64_t sample, const char *path,
                              int cut);

/* Records a check that was skipped and why (once per name; later reasons are dropped). */
int sr_result_skip_check(sr_scenario_result *s, const char *name, const char *reason);

/* Records one sample of `phase`, in nanoseconds (locks the entry). When the histogram cannot
 * grow (out of memory) the sample is lost and the check resource.nomem says so. */
void sr_result_record(sr_scenario_result *s, sr_phase phase, uint64_t ns);

/* Adds one sample of `phase` in thread CPU time, in nanoseconds, to s->cpu (locks the entry). */
void sr_result_record_cpu(sr_scenario_result *s, sr_phase phase, uint64_t ns);

/* Adds `delta` to the entry's counters, member by member (locks the entry). */
void sr_result_count(sr_scenario_result *s, const sr_counters *delta);

/* 1 if a check called `name` fired in the entry. */
int sr_result_fired(sr_scenario_result *s, const char *name);

/* Sets the verdict and its reason (printf-style; NULL fmt for none). Not locked: owner only. */
void sr_result_set_verdict(sr_scenario_result *s, sr_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Counts the verdicts, sums the counters and merges the histograms into the run. */
void sr_run_result_finish(sr_run_result *run, double wall_ms);

#endif /* SR_RESULT_H */
