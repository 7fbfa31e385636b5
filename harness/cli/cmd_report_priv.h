/* Private to cli/report*.c: loading run folders, and the --merge and --history modes. */
#ifndef SR_CMD_REPORT_PRIV_H
#define SR_CMD_REPORT_PRIV_H

#include <stddef.h>

#include "report/result.h"

/*
 * Loads RUN_DIR/results.json (or `arg` itself when it names a file) into *out; `dir` receives
 * the run folder. Returns 0, or -1 after printing "syncroll report: <message> [<error name>]".
 */
int sr_report_cli_load(sr_run_result **out, const char *arg, char *dir, size_t dcap);

/* `syncroll report --merge OUT RUN_DIR...` (arguments after --merge); the exit status. */
int sr_report_cli_merge(int argc, char **argv);

/*
 * Copies into OUT/shard-K/ every file and folder that shard K's report.html links to (shards[i]
 * loaded from the run folder dirs[i]) and points the merged run m's paths at the copies, so
 * that the merged report.html's links resolve from OUT alone (cmd_report_carry.c: no symbolic link
 * followed, 256 MiB in all; a path not carried is named in its shard folder, as text). Prints
 * what it carried. 0, or -1 after printing the error.
 */
int sr_report_cli_carry(sr_run_result *m, sr_run_result *const *shards, const char *const *dirs,
                        size_t n, const char *out);

/* `syncroll report --history DIR [--last N] [--out OUT_DIR]` (after --history). */
int sr_report_cli_history(int argc, char **argv);

#endif /* SR_CMD_REPORT_PRIV_H */
