#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "sr_base64.h"
#include "sr_err.h"

int sr_cmd_version(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: syncroll version\n\nPrints the version and the base64 kernel in use.\n");
        return SR_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "syncroll version: unexpected argument '%s'\n", argv[1]);
        return SR_EXIT_USAGE;
    }
    printf("syncroll %s (base64: %s)\n", SYNCROLL_VERSION,
           sr_base64_impl_name(sr_base64_resolve(SR_B64_AUTO)));
    return SR_EXIT_OK;
}

int sr_exit_for_code(int code)
{
    switch (sr_code_class(code)) {
    case SR_CLASS_NONE:
        return SR_EXIT_OK;
    case SR_CLASS_TRANSIENT:
        return SR_EXIT_TRANSIENT;
    case SR_CLASS_PROTOCOL:
        return SR_EXIT_PROTOCOL;
    case SR_CLASS_USAGE:
        return SR_EXIT_USAGE;
    case SR_CLASS_RESOURCE:
    case SR_CLASS_INTERNAL:
        break;
    }
    return SR_EXIT_FAIL;
}
