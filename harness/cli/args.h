/*
 * The command line's number parsing, shared by every subcommand: a whole string must be one
 * number inside [lo, hi]; anything else (empty, trailing text, out of range, overflow) is
 * refused, so `--port 8080x` or `--rows 1e99` never become a silent value.
 */
#ifndef SR_CLI_ARGS_H
#define SR_CLI_ARGS_H

#include <stddef.h>

/* A decimal integer in [lo, hi] into *out: 0, or -1 (and *out untouched) if `s` is not one. */
int sr_arg_int(const char *s, long long lo, long long hi, long long *out);

/* A finite decimal number in [lo, hi] into *out: 0, or -1 (and *out untouched). */
int sr_arg_double(const char *s, double lo, double hi, double *out);

/* The largest N of --max-scenario-bytes (1 GiB). */
#define SR_ARG_SCENARIO_BYTES_MAX ((long long)1 << 30)

/* N of --max-scenario-bytes, which run, lint and serve take alike: an integer in
 * [1, SR_ARG_SCENARIO_BYTES_MAX] into *out: 0, or -1 (and *out untouched). */
int sr_arg_scenario_bytes(const char *s, size_t *out);

#endif /* SR_CLI_ARGS_H */
