/* The memory estimate of a scenario (scenario.h), for lint (issue #21 item 14). */
#include <stdint.h>
#include <unistd.h>

#include "scenario.h"

static uint64_t add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t sr_scenario_memory_estimate(const sr_scenario *s)
{
    uint64_t w = (uint64_t)s->engine.weight_bytes;
    uint64_t engines = s->n_urls > 0 || s->engine.count < 0 ? 0 : (uint64_t)s->engine.count;
    uint64_t per_engine =
        add(add(mul(3, w), (uint64_t)s->engine.max_body_bytes), SR_SCN_ENGINE_OVERHEAD);
    return add(mul(engines, per_engine), add(mul(3, w), SR_SCN_TRAINER_OVERHEAD));
}

uint64_t sr_scenario_machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? mul((uint64_t)pages, (uint64_t)size) : 0;
}
