/* The kind table (SR_FAULT_KIND_TABLE of spec/faults.h) as data, and what is derived from it. */
#include <stdio.h>
#include <string.h>

#include "endpoints.h"
#include "faults.h"

#define EPB     SR_EP_BIT
#define EP_GEN  EPB(SR_EP_GENERATE)
#define EP_GENS (EPB(SR_EP_GENERATE) | EPB(SR_EP_NATIVE))
#define EP_SYNC                                                                                    \
    (EPB(SR_EP_UPDATE_WEIGHTS) | EPB(SR_EP_COLLECTIVE_RPC) | EPB(SR_EP_FETCH_WEIGHTS) |            \
     EPB(SR_EP_SGL_UPDATE_DIST) | EPB(SR_EP_SGL_UPDATE_DISK))

/* The endpoint masks of a reach (constant expressions, for the table below). */
#define DEFAULT_EPS(r)                                                                             \
    ((r) == SR_FR_WEIGHT_SYNC ? EPB(SR_EP_UPDATE_WEIGHTS)                                          \
     : (r) == SR_FR_SYNC_INIT ? EPB(SR_EP_INIT_TRANSFER)                                           \
                              : EP_GEN)
#define REACH_EPS(r)                                                                               \
    ((r) == SR_FR_ANY           ? SR_EP_ALL                                                        \
     : (r) == SR_FR_GENERATES   ? EP_GENS                                                          \
     : (r) == SR_FR_WEIGHT_SYNC ? EP_SYNC                                                          \
     : (r) == SR_FR_SYNC_INIT   ? EPB(SR_EP_INIT_TRANSFER)                                         \
                                : EP_GEN)
/* No fault reaches the oracle route: it answers the truth that faulted answers are compared
 * with (endpoints.h), so a plan naming it is refused and "any" leaves it out. */
#define ALLOWED_EPS(r) (REACH_EPS(r) & ~EPB(SR_EP_ORACLE))

#define ROW(sym, name, layer, reach, params, required, doc)                                        \
    [sym] = {sym, name, layer, reach, params, required, DEFAULT_EPS(reach), ALLOWED_EPS(reach),    \
             doc},

static const sr_fault_kind_info KINDS[SR_FK_COUNT] = {SR_FAULT_KIND_TABLE(ROW)};

static const char *const LAYER_NAMES[SR_FL_COUNT] = {"delay", "model",     "body",
                                                     "http",  "transport", "weights"};

static const char *const COMMON_KEYS[] = {"kind", "id",          "engines", "endpoints", "nth",
                                          "turn", "probability", "count",   NULL};

const sr_fault_kind_info *sr_fault_kind_info_of(sr_fault_kind k)
{
    return (unsigned)k < SR_FK_COUNT ? &KINDS[k] : NULL;
}

int sr_fault_kind_lookup(const char *name)
{
    for (int i = 0; name && i < SR_FK_COUNT; i++)
        if (strcmp(name, KINDS[i].name) == 0)
            return i;
    return -1;
}

const char *sr_fault_kind_name(sr_fault_kind k)
{
    return (unsigned)k < SR_FK_COUNT ? KINDS[k].name : NULL;
}

sr_fault_layer sr_fault_kind_layer(sr_fault_kind k)
{
    return (unsigned)k < SR_FK_COUNT ? KINDS[k].layer : SR_FL_COUNT;
}

const char *sr_fault_layer_name(sr_fault_layer l)
{
    return (unsigned)l < SR_FL_COUNT ? LAYER_NAMES[l] : NULL;
}

const char *const *sr_fault_common_keys(void)
{
    return COMMON_KEYS;
}

int sr_fault_default_id(char *buf, size_t cap, const char *kind, size_t index)
{
    return snprintf(buf, cap, "%s#%zu", kind, index);
}
