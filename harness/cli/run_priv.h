/* Private to cmd_run*.c: the parsed options of `syncroll run`. */
#ifndef SR_CMD_RUN_PRIV_H
#define SR_CMD_RUN_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "signals.h"

/* `syncroll run` only: a report file could not be written (the run itself may have passed). */
#define SR_RUN_EXIT_REPORT 3

typedef struct run_args {
    char **paths;
    size_t n_paths;
    char **tags, **exclude;
    size_t n_tags, n_exclude;
    int has_seed;
    uint64_t seed;
    int jobs, repeat, has_repeat, until_fail, keep;
    int force; /* --force: run scenarios beyond the machine's memory (sr_scenario_memory_check) */
    int64_t duration_ms;  /* --duration: every scenario's soak.duration_ms; 0: as the files say */
    int shard_k, shard_n; /* 0/0: no sharding */
    size_t max_scenario_bytes; /* --max-scenario-bytes; 0: SR_SCN_MAX_FILE (4 MiB) */
    const char *out;
    unsigned reports; /* SR_REPORT_* bits (report/report.h) */
} run_args;

/*
 * Loads, selects, runs and reports; returns the exit status. `sig` holds SIGINT and SIGTERM,
 * blocked before any thread started (signals.h); a watcher thread reads it: the first signal
 * stops the run (scenarios `interrupted`, engines stopped, reports partial, status 128 + its
 * number), a second one kills the engines and exits at once with that status.
 */
int sr_run_main(const run_args *a, sr_signals *sig, int argc, char **argv);

/* FNV-1a 64 of a scenario id: the stable key of --shard. */
uint64_t sr_run_shard_hash(const char *id);

#endif /* SR_CMD_RUN_PRIV_H */
