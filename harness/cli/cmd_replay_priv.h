/* cmd_replay_priv: what the files of `syncroll replay` share. Private to harness/cli/. */
#ifndef SR_CMD_REPLAY_PRIV_H
#define SR_CMD_REPLAY_PRIV_H

#include "commands.h"
#include "proxy/capture.h"

/*
 * Judges capture c (cmd_replay_judge.c): every session as a rollout of syncroll's client against
 * the capture played back in-process, its contract checks, one line per session and the last
 * line "N passed, N failed" on standard output, the run's reports into folder `out` (created;
 * NULL: none). `dialect` -1: told from the answers, else an sr_dialect. Returns the exit status as
 * `run`'s: 0 every session passed, 1 one failed, 2 a usage or capture error, 3 a report not
 * written.
 */
int sr_replay_judge(const sr_capture *c, int dialect, const char *out);

/*
 * `--to-scenario` (cmd_replay_scenario.c): copies capture c (read from folder `capture`) into
 * OUT/fixtures/capture/ and writes OUT/<id>.json, a scenario whose replay step judges the copy.
 * Its `expect` is a pass, so a capture in which judging finds a defect is a failing case naming
 * the check; with `expect_found` it states what judging found instead (the bug catalogue's
 * defect form: it passes while the same checks fire). `dialect` as above. Prints what it wrote.
 * Returns 0 written, 2 a usage or capture error (replay.out_not_empty when OUT exists and is
 * not an empty folder), 3 a file not written; on an error nothing it created is left.
 */
int sr_replay_to_scenario(const sr_capture *c, const char *capture, const char *out, int dialect,
                          int expect_found);

#endif /* SR_CMD_REPLAY_PRIV_H */
