/* Private to the cli folder: the parsed options of `syncroll run`, and the safe folder removal
 * that `report --merge` uses too. */
#ifndef SR_CMD_RUN_PRIV_H
#define SR_CMD_RUN_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "run/runner_state.h"
#include "run/shard.h"
#include "sr_err.h"
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
    int64_t duration_ms;   /* --duration: every scenario's soak.duration_ms; 0: as the files say */
    const char *shard_opt; /* --shard as given, NULL when not */
    long long shard_count; /* --shard-count, 0 when not given */
    sr_shard shard;        /* resolved from shard_opt, shard_count and the environment */
    const char *run_group; /* --run-group or SYNCROLL_RUN_GROUP; NULL: derived */
    const char *timings;   /* --timings: balance the shards by these durations; NULL: hash */
    const char *const *shard_ids; /* with --timings: this shard's ids, sorted (cmd_run_exec.c) */
    size_t n_shard_ids;
    uint64_t
        partition_fp; /* sharded: sr_shard_partition_fp of the whole selection (cmd_run_exec.c) */
    int list;         /* --list: print the selected scenario ids, run nothing */
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

/*
 * Makes room for the reports when they could not be written for lack of room (the caller checks
 * ENOSPC or EDQUOT): removes the weight versions (the folders under artifacts/<id>/sync/) that
 * failed scenarios keep, the largest artifacts and the ones their repro command writes again.
 * The folders of each sync/ are listed once, then each is removed once with sr_run_remove_at
 * (a symbolic link inside is removed as a link, never followed; subfolders recursively, to a
 * bounded depth). Each sync/ folder emptied, and each version that stayed with the reason, is
 * said on `say` (stderr in the run). Engine logs, captured bodies and the rest of the evidence
 * stay. Returns the number of scenarios with a version removed (0: nothing freed).
 */
struct sr_run_result;
int sr_run_drop_checkpoints(const struct sr_run_result *run, FILE *say);

/*
 * Fills the header of a new run: version, git rev (SYNCROLL_GIT_REV, else SYNCROLL_SOURCE_DIR's
 * .git, worktrees included), machine, command line, options, the shard and its source, the
 * selection (the options that choose and run scenarios) and the run group (--run-group, else
 * derived from the git rev and the selection), and the start time. Returns 0, or SR_E_NOMEM with
 * err set (the selection and run group could not be kept: the run must not go on without them).
 */
struct sr_run_header;
int sr_run_fill_header(struct sr_run_header *h, const run_args *a, int argc, char **argv,
                       const char *run_id, const char *dir, sr_err *err);

/*
 * Removes a scenario's work folder `dir` and everything in it, subfolders included, relative to
 * the folder's descriptor (openat/unlinkat with O_NOFOLLOW): a symbolic link inside is removed as
 * a link, never followed, so nothing outside `dir` is touched; `dir` itself must not be a
 * symbolic link. Goes on past what it cannot remove. 0, or SR_E_IO naming `dir`, the first entry
 * that stayed and why.
 */
int sr_run_remove_folder(const char *dir, sr_err *err);

/* As sr_run_remove_folder for the folder `name` under the open folder `dfd` (AT_FDCWD: the
 * current one); `name` itself must not be a symbolic link; errors name it as `shown`. */
int sr_run_remove_at(int dfd, const char *name, const char *shown, sr_err *err);

/* 1 if `g` may name a run group: 1-128 characters of [A-Za-z0-9._:-]. */
int sr_run_group_valid(const char *g);

/* "SIGINT", "SIGTERM", "SIGHUP", else "a stop signal" (a static string). */
const char *sr_run_signal_name(int signo);

/*
 * The stop signals' watcher (cmd_run_watch.c): a thread that reads `sig` (SIGINT, SIGTERM,
 * SIGHUP, blocked before any thread started). The first signal sets stop->signo, which the
 * runners read at their safe points, and sends SIGTERM to every engine of stop->procs, then
 * SIGKILL every second until the run is over; a second signal kills every engine and exits the
 * process at once with 128 + its number, without reports. sr_run_watch_start prints a warning
 * and starts nothing when `sig` has no descriptor or the thread cannot start; sr_run_watch_stop
 * ends and joins it (the run is over). `sig` and `stop` are borrowed and must outlive the
 * watcher; one thread starts and stops it.
 */
typedef struct sr_run_watcher {
    sr_signals *sig;
    sr_run_stop *stop;
    atomic_int done; /* set by the main thread when the run is over */
    pthread_t thread;
    int started;
} sr_run_watcher;

void sr_run_watch_start(sr_run_watcher *w, sr_signals *sig, sr_run_stop *stop);
void sr_run_watch_stop(sr_run_watcher *w);

#endif /* SR_CMD_RUN_PRIV_H */
