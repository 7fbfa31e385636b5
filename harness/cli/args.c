/* Command-line number parsing (args.h). */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "spec/dialect.h"
#include "spec/engine_config.h"
#include "sr_err.h"
#include "sr_suggest.h"

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

/* `names` is the list as text, `each` the n names, from which the closest is suggested. */
static int bad_name(const char *cmd, const char *opt, const char *v, const char *names,
                    const char *const *each, size_t n)
{
    const char *near = v ? sr_suggest_closest(v, each, n) : NULL;
    fprintf(stderr, "syncroll %s: %s: %s '%s' is not one of %s%s%s%s\n", cmd,
            sr_code_name(SR_E_INVAL), opt, v ? v : "", names, near ? "; did you mean '" : "",
            near ? near : "", near ? "'?" : "");
    return -1;
}

int sr_arg_dialect(const char *cmd, const char *opt, const char *v, int *out)
{
    int d = v ? sr_dialect_lookup(v) : -1;
    if (d < 0) {
        const char *each[SR_DIALECT_COUNT];
        for (int k = 0; k < SR_DIALECT_COUNT; k++)
            each[k] = sr_dialect_name((sr_dialect)k);
        char names[SR_DIALECT_NAMES_MAX];
        return bad_name(cmd, opt, v, sr_dialect_names(names, sizeof(names), ", "), each,
                        SR_DIALECT_COUNT);
    }
    *out = d;
    return 0;
}

int sr_arg_sync_dialect(const char *cmd, const char *opt, const char *v, int *out)
{
    int d = v ? sr_sync_dialect_lookup(v) : -1;
    if (d < 0) {
        char names[96] = "";
        const char *each[SR_SYNC_DIALECT_COUNT];
        size_t used = 0;
        for (int k = 0; k < SR_SYNC_DIALECT_COUNT && used < sizeof(names); k++) {
            each[k] = sr_sync_dialect_name((sr_sync_dialect)k);
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", k ? ", " : "",
                                     each[k]);
        }
        return bad_name(cmd, opt, v, names, each, SR_SYNC_DIALECT_COUNT);
    }
    *out = d;
    return 0;
}

const char *sr_arg_sync_defaults(char *dst, size_t cap, const char *indent)
{
    size_t len = 0;
    if (!cap)
        return dst;
    dst[0] = '\0';
    for (int p = 0; p < SR_SYNC_DIALECT_COUNT; p++) {
        char line[SR_DIALECT_NAMES_MAX + 64];
        int used = snprintf(line, sizeof(line), "%s%s for", indent,
                            sr_sync_dialect_name((sr_sync_dialect)p));
        int any = 0;
        for (int d = 0; d < SR_DIALECT_COUNT && used > 0 && (size_t)used < sizeof(line); d++)
            if (sr_dialect_sync_dialect((sr_dialect)d) == (sr_sync_dialect)p)
                used += snprintf(line + used, sizeof(line) - (size_t)used, "%s %s",
                                 any++ ? "," : "", sr_dialect_name((sr_dialect)d));
        if (!any || used < 0 || (size_t)used >= sizeof(line))
            continue;
        int n = snprintf(dst + len, cap - len, "%s\n", line);
        if (n < 0 || (size_t)n >= cap - len) {
            dst[len] = '\0';
            break;
        }
        len += (size_t)n;
    }
    return dst;
}
