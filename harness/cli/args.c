/* Command-line number parsing (args.h). */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int sr_arg_int(const char *s, long long lo, long long hi, long long *out)
{
    if (!s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int sr_arg_double(const char *s, double lo, double hi, double *out)
{
    if (!s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int sr_arg_scenario_bytes(const char *s, size_t *out)
{
    long long v;
    if (sr_arg_int(s, 1, SR_ARG_SCENARIO_BYTES_MAX, &v))
        return -1;
    *out = (size_t)v;
    return 0;
}
