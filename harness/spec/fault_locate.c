/* Which declared route fault's selection holds a row (spec/faults.h, sr_fault_plan_locate): the
 * verifier's messages name it, so a failure points at the scenario line that caused it. */
#include <stdio.h>

#include "faults.h"

static int in_turns(const sr_fault *f, int64_t turn)
{
    if (!f->n_turns)
        return 1;
    for (int i = 0; i < f->n_turns; i++)
        if (f->turns[i] == turn)
            return 1;
    return 0;
}

int sr_fault_plan_locate(char *buf, size_t cap, const sr_fault_plan *plan, int engine, int64_t turn,
                         int64_t pos, int64_t P, int64_t start, int64_t layer)
{
    if (cap)
        buf[0] = 0;
    for (size_t i = 0; i < sr_fault_plan_count(plan); i++) {
        const sr_fault *f = sr_fault_plan_at(plan, i);
        const sr_route_rule *r = &f->rule;
        /* A rule on another field (logprobs) holds no route row. */
        if (!r->active || r->field != SR_RF_ROUTED_EXPERTS || !in_turns(f, turn))
            continue;
        if (engine >= 0 && engine < 64 && !(f->engines >> engine & 1))
            continue;
        /* A whole-reply action (truncate, drop_first, ...) holds every row of its turn. */
        if (sr_route_rule_selects(r) && !sr_route_rule_covers(r, pos, P, start, layer))
            continue;
        char d[200];
        sr_route_rule_describe(d, sizeof(d), r);
        snprintf(buf, cap, "fault \"%s\" (%s: %s)", f->id, sr_fault_kind_name(f->kind), d);
        return 1;
    }
    return 0;
}
