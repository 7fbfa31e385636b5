/* The `soak` object of the scenario format (FORMAT.md §15): defaults, parser and writer. */
#include <stdio.h>

#include "scenario_priv.h"

#define SOAK_MAX_WARMUP   1000000
#define SOAK_MAX_FDS      65536
#define SOAK_MAX_RSS      ((int64_t)1 << 40)
#define SOAK_DEFAULT_RSS  ((int64_t)8 << 20)
#define SOAK_DEFAULT_WARM 2

void sr_scn_soak_defaults(sr_scenario *s)
{
    s->soak_duration_ms = 0;
    s->soak_warmup_iterations = SOAK_DEFAULT_WARM;
    s->soak_max_fd_growth = 0;
    s->soak_max_rss_growth = SOAK_DEFAULT_RSS;
}

int sr_scn_parse_soak(scn_parse *p, const cJSON *root)
{
    sr_scenario *s = p->s;
    const cJSON *o = sr_scn_member(root, "soak");
    if (!o)
        return 0;
    int rc = sr_scn_check_object(p, o, "soak");
    if (!rc)
        rc = sr_scn_int(p, o, "duration_ms", 0, SR_SCN_MAX_TIMEOUT, s->soak_duration_ms, 0,
                        &s->soak_duration_ms);
    if (!rc)
        rc = sr_scn_int(p, o, "warmup_iterations", 1, SOAK_MAX_WARMUP, s->soak_warmup_iterations, 0,
                        &s->soak_warmup_iterations);
    if (!rc)
        rc = sr_scn_int(p, o, "max_fd_growth", 0, SOAK_MAX_FDS, s->soak_max_fd_growth, 0,
                        &s->soak_max_fd_growth);
    if (!rc)
        rc = sr_scn_int(p, o, "max_rss_growth_bytes", 0, SOAK_MAX_RSS, s->soak_max_rss_growth, 0,
                        &s->soak_max_rss_growth);
    return rc;
}

/* Raw integer literals, as the rest of the expanded writer writes them (no 1e+15 forms). */
static void add_int(cJSON *o, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", (long long)v);
    cJSON_AddItemToObject(o, key, cJSON_CreateRaw(buf));
}

cJSON *sr_scn_soak_json(const sr_scenario *s)
{
    cJSON *o = cJSON_CreateObject();
    add_int(o, "duration_ms", s->soak_duration_ms);
    add_int(o, "warmup_iterations", s->soak_warmup_iterations);
    add_int(o, "max_fd_growth", s->soak_max_fd_growth);
    add_int(o, "max_rss_growth_bytes", s->soak_max_rss_growth);
    return o;
}
