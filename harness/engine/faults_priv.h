/* Internal tables and state of faults.c and faults_parse.c; not part of the interface. */
#ifndef SR_ENGINE_FAULTS_PRIV_H
#define SR_ENGINE_FAULTS_PRIV_H

#include <stdatomic.h>

#include "faults.h"

/* Parameter keys a kind accepts, as bits. */
enum {
    P_LAT = 1 << 0,     /* dist ms min_ms max_ms median_ms sigma */
    P_BYTES = 1 << 1,   /* bytes */
    P_OFFSET = 1 << 2,  /* offset (stored in bytes) */
    P_KEEP = 1 << 3,    /* keep_length */
    P_BPS = 1 << 4,     /* bytes_per_second */
    P_RETRY = 1 << 5,   /* retry_after */
    P_TEXT = 1 << 6,    /* text */
    P_ROWL = 1 << 7,    /* row layer */
    P_FIELD = 1 << 8,   /* field */
    P_KEY = 1 << 9,     /* key */
    P_LAYERS = 1 << 10, /* layers */
    P_MS = 1 << 11,     /* ms (refuse) */
};

#define EPB(e)  (1u << (e))
#define EP_GEN  (EPB(SR_EP_GENERATE) | EPB(SR_EP_NATIVE))
#define EP_SYNC (EPB(SR_EP_UPDATE_WEIGHTS) | EPB(SR_EP_COLLECTIVE_RPC) | EPB(SR_EP_FETCH_WEIGHTS))

typedef struct kind_info {
    const char *name;
    sr_fault_layer layer;
    uint32_t dflt_eps;    /* endpoints when the fault names none */
    uint32_t allowed_eps; /* endpoints it may name */
    unsigned params;
} kind_info;

/* One entry per sr_fault_kind (faults.c). */
extern const kind_info sr_fault_kinds[SR_FK_COUNT];

struct sr_faults {
    size_t n;
    uint64_t seed;
    sr_fault f[SR_FAULT_MAX];
    _Atomic int64_t seen[SR_FAULT_MAX];
    _Atomic int64_t fired[SR_FAULT_MAX];
};

#endif /* SR_ENGINE_FAULTS_PRIV_H */
