/*
 * The syncroll subcommands. Each takes the arguments after its name (argv[0] is the subcommand
 * name) and returns the process exit status: 0 success, 1 a check or scenario failed, 2 usage
 * error or malformed input, 3 protocol error, 4 transient error (see README "Exit statuses").
 */
#ifndef SR_COMMANDS_H
#define SR_COMMANDS_H

#include <stdio.h>

#define SR_EXIT_OK        0
#define SR_EXIT_FAIL      1
#define SR_EXIT_USAGE     2
#define SR_EXIT_PROTOCOL  3
#define SR_EXIT_TRANSIENT 4

typedef struct sr_command {
    const char *name;
    const char *summary; /* one line for `syncroll --help` */
    int (*run)(int argc, char **argv);
} sr_command;

/* The table of subcommands, terminated by a {NULL} entry; defined in main.c. */
extern const sr_command sr_commands[];

int sr_cmd_version(int argc, char **argv);
int sr_cmd_errors(int argc, char **argv);
int sr_cmd_faults(int argc, char **argv);
int sr_cmd_checks(int argc, char **argv);
int sr_cmd_engine(int argc, char **argv);
int sr_cmd_serve(int argc, char **argv);
int sr_cmd_probe(int argc, char **argv);
int sr_cmd_check_body(int argc, char **argv);
int sr_cmd_run(int argc, char **argv);
int sr_cmd_lint(int argc, char **argv);
int sr_cmd_report(int argc, char **argv);
int sr_cmd_validate_field(int argc, char **argv);
int sr_cmd_proxy(int argc, char **argv);
int sr_cmd_replay(int argc, char **argv);

/* Maps an sr_code to the exit status of the commands that judge inputs (check-body, ...). */
int sr_exit_for_code(int code);

#endif /* SR_COMMANDS_H */
