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

/*
 * The value of a dialect option of subcommand `cmd` (e.g. "serve"): --dialect names a generate
 * wire (spec/dialect.h), --sync-dialect a control plane (spec/engine_config.h). 0 and the enum's
 * value in *out; else -1, *out untouched, after printing on stderr
 *   syncroll <cmd>: usage.invalid_argument: <opt> '<v>' is not one of <the names>
 * (the caller exits with SR_EXIT_USAGE).
 */
int sr_arg_dialect(const char *cmd, const char *opt, const char *v, int *out);
int sr_arg_sync_dialect(const char *cmd, const char *opt, const char *v, int *out);

/*
 * For help texts: the default weight-sync control plane of every dialect, from the dialect table
 * (spec/dialect.h), one line per plane that some dialect defaults to:
 * "<indent><plane> for <dialect>, <dialect>\n". Written into dst (cap bytes, always
 * NUL-terminated; lines that do not fit are left out). Returns dst.
 */
const char *sr_arg_sync_defaults(char *dst, size_t cap, const char *indent);

#endif /* SR_CLI_ARGS_H */
