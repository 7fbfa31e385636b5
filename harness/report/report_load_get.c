/* results.json's loader (report_load_priv.h): its state's first error and the getters the run,
 * the scenarios (report_load.c) and the phases' histograms (report_load_hist.c) share. */
#include <stdarg.h>
#include <stdio.h>

#include "report_load_priv.h"

void sr_ld_fail(ld *l, const cJSON *node, const char *fmt, ...)
{
    if (l->rc)
        return;
    char msg[SR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    l->rc = sr_json_error(l->doc, node, l->err, SR_E_JSON_SCHEMA, "%s", msg);
}

void sr_ld_nomem(ld *l)
{
    if (!l->rc)
        l->rc = sr_err_set(l->err, SR_E_NOMEM, "cannot load results.json");
}

/* Member k of o, or NULL when o is not an object, k is absent or its value is null. */
const cJSON *sr_ld_get(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsNull(x) ? NULL : x;
}

int sr_ld_skip(const ld *l, const cJSON *o, const char *k)
{
    return l->rc || !sr_ld_get(o, k);
}

uint64_t sr_ld_get_u64(ld *l, const cJSON *o, const char *k)
{
    uint64_t v = 0;
    if (!sr_ld_skip(l, o, k))
        l->rc = sr_json_get_u64(l->doc, o, k, 1, 0, UINT64_MAX, 0, &v, l->err);
    return v;
}

/* An object member, or an array member when `array`; NULL when null, absent or wrong. */
const cJSON *sr_ld_get_typed(ld *l, const cJSON *o, const char *k, int array)
{
    const cJSON *x = NULL;
    if (!sr_ld_skip(l, o, k))
        l->rc = array ? sr_json_get_array(l->doc, o, k, 1, &x, l->err)
                      : sr_json_get_object(l->doc, o, k, 1, &x, l->err);
    return x;
}
