/* syncroll: subcommand dispatch only; each subcommand lives in its own harness/cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "client/client.h"
#include "run/procs.h"

const sr_command sr_commands[] = {
    {"version", "print the version and the base64 kernel in use", sr_cmd_version},
    {"errors", "list every named error with its class and meaning", sr_cmd_errors},
    {"faults", "list every engine fault kind with its parameters and effect", sr_cmd_faults},
    {"checks", "list every check a verdict can name and the route-row classes", sr_cmd_checks},
    {"engine", "run one mock inference engine (HTTP) until SIGTERM", sr_cmd_engine},
    {"serve", "start a scenario's mock engines for external clients", sr_cmd_serve},
    {"probe", "judge an engine at a URL by relations between its answers (meta.*)",
     sr_cmd_probe},
    {"check-body", "splice and validate a captured response body", sr_cmd_check_body},
    {"run", "run scenario files against mock engines and report", sr_cmd_run},
    {"lint", "validate scenario files without running them", sr_cmd_lint},
    {"report", "re-render a run's reports; compare p99 with a baseline run", sr_cmd_report},
    {"validate-field", "validate a new packed side-channel field before it ships",
     sr_cmd_validate_field},
    {"proxy", "a recording, fault-injecting HTTP proxy in front of an engine", sr_cmd_proxy},
    {"replay", "read a proxy capture: list its exchanges and check its bodies", sr_cmd_replay},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: syncroll <command> [options]\n"
            "       syncroll <command> --help\n\n"
            "syncroll is a weight-sync and rollout integration test harness for RL post-training\n"
            "of Mixture-of-Experts models (routing replay).\n\ncommands:\n");
    for (const sr_command *c = sr_commands; c->name; c++)
        fprintf(f, "  %-12s %s\n", c->name, c->summary);
    fprintf(f, "\nexit codes: 0 success, 1 a check failed, 2 usage or malformed input,\n"
               "            3 protocol error, 4 transient error\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return SR_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return SR_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0)
        return sr_cmd_version(1, argv + 1);
    for (const sr_command *c = sr_commands; c->name; c++) {
        if (strcmp(c->name, cmd) == 0) {
            /* The process-wide set-up, before any thread starts: the harness's malloc policy
             * (not the engines': they would keep every weight-sync bucket's heap), libcurl. */
            if (strcmp(c->name, "engine") != 0)
                sr_proc_tune_malloc();
            sr_err err = SR_ERR_INIT;
            if (sr_client_global_init(&err)) {
                fprintf(stderr, "syncroll: %s\n", err.msg);
                return SR_EXIT_FAIL;
            }
            int rc = c->run(argc - 1, argv + 1);
            sr_client_global_cleanup();
            return rc;
        }
    }
    fprintf(stderr, "syncroll: unknown command '%s' (see syncroll --help)\n", cmd);
    return SR_EXIT_USAGE;
}
