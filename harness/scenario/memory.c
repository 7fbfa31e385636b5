/* The memory estimate of a scenario and its check (scenario.h), for lint and run. */
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
    uint64_t evidence = 0;
    for (int i = 0; i < s->n_steps; i++) {
        const sr_scn_rollout *r = &s->steps[i].rollout;
        if (s->steps[i].kind != SR_STEP_ROLLOUT || r->batch <= 0)
            continue;
        /* A request holds the whole trajectory so far: at most its longest, ~12 bytes a token. */
        uint64_t longest =
            add((uint64_t)r->prompt_max,
                mul((uint64_t)r->turns, add((uint64_t)r->max_tokens + 1, (uint64_t)r->obs_max)));
        uint64_t request = add(mul(12, longest), 4096);
        if (request > (uint64_t)s->engine.max_body_bytes)
            request = (uint64_t)s->engine.max_body_bytes;
        uint64_t per_sample =
            mul(SR_SCN_EVIDENCE_TURNS, add(SR_SCN_EVIDENCE_RESPONSE_BYTES, request));
        evidence = add(evidence, mul((uint64_t)r->batch, per_sample));
    }
    return add(add(mul(engines, per_engine), add(mul(3, w), SR_SCN_TRAINER_OVERHEAD)), evidence);
}

uint64_t sr_scenario_machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? mul((uint64_t)pages, (uint64_t)size) : 0;
}

int sr_scenario_memory_check(const sr_scenario *s, uint64_t machine, sr_err *err)
{
    uint64_t est = sr_scenario_memory_estimate(s);
    if (!machine || est <= machine)
        return 0;
    return sr_err_set(err, SR_E_TOO_MUCH_MEMORY,
                      "%s: estimated memory %llu MiB exceeds the machine's %llu MiB (%d engine(s) "
                      "with %llu MiB of weights and a %llu MiB max_body_bytes each)",
                      s->path, (unsigned long long)(est >> 20), (unsigned long long)(machine >> 20),
                      s->n_urls ? 0 : s->engine.count,
                      (unsigned long long)(s->engine.weight_bytes >> 20),
                      (unsigned long long)(s->engine.max_body_bytes >> 20));
}
