/*
 * endpoints: the HTTP endpoints of the mock engine, as both sides name them.
 *
 * The engine routes requests by (method, path) and counts them per endpoint; the scenario format
 * names endpoints in check_state's `requests` and in fault plans by their short name; the runner
 * reads the per-endpoint counters of /syncroll/v1/state by the same names. One table serves all
 * of them, so a name cannot mean one endpoint to the engine and another to the scenario.
 *
 * Every function is a pure lookup in a constant table: thread-safe, nothing to free, no errors
 * (an argument outside the enum gives NULL or -1).
 */
#ifndef SR_SPEC_ENDPOINTS_H
#define SR_SPEC_ENDPOINTS_H

#include <stdint.h>
#include <stddef.h>

/* Endpoints of the mock engine (also bit positions in a fault's endpoint mask). */
typedef enum sr_endpoint {
    SR_EP_GENERATE = 0,   /* POST /skyrl/v1/generate */
    SR_EP_NATIVE,         /* POST /inference/v1/generate */
    SR_EP_HEALTH,         /* GET /health */
    SR_EP_WORLD_SIZE,     /* GET /get_world_size */
    SR_EP_PAUSE,          /* POST /pause */
    SR_EP_RESUME,         /* POST /resume */
    SR_EP_SLEEP,          /* POST /sleep */
    SR_EP_WAKE_UP,        /* POST /wake_up */
    SR_EP_RESET_PREFIX,   /* POST /reset_prefix_cache */
    SR_EP_FINISH_SESSION, /* POST /finish_session */
    SR_EP_INIT_TRANSFER,  /* POST /init_weight_transfer_engine */
    SR_EP_COLLECTIVE_RPC, /* POST /collective_rpc */
    SR_EP_FETCH_WEIGHTS,  /* POST /fetch_weights */
    SR_EP_UPDATE_WEIGHTS, /* POST /update_weights */
    SR_EP_STATE,          /* GET /syncroll/v1/state */
    SR_EP_IS_SLEEPING,    /* GET /is_sleeping */
    /* vLLM's native weight-transfer routes (engines.sync_dialect "vllm"; 404 in "skyrl") */
    SR_EP_START_UPDATE,   /* POST /start_weight_update */
    SR_EP_FINISH_UPDATE,  /* POST /finish_weight_update */
    SR_EP_UPDATE_VERSION, /* POST /update_weight_version */
    SR_EP_WEIGHT_INFO,    /* GET /weight_info */
    SR_EP_WEIGHT_CHECKER, /* POST /weight_checker */
    SR_EP_IS_PAUSED,      /* GET /is_paused */
    /* SGLang's weight-sync routes (engines.sync_dialect "sglang"; 404 in the other planes;
     * /update_weight_version above is shared with vllm) */
    SR_EP_SGL_INIT_GROUP,     /* POST /init_weights_update_group */
    SR_EP_SGL_UPDATE_DIST,    /* POST /update_weights_from_distributed */
    SR_EP_SGL_UPDATE_TENSOR,  /* POST /update_weights_from_tensor */
    SR_EP_SGL_UPDATE_DISK,    /* POST /update_weights_from_disk */
    SR_EP_SGL_DESTROY_GROUP,  /* POST /destroy_weights_update_group */
    SR_EP_SGL_PAUSE,          /* POST /pause_generation */
    SR_EP_SGL_CONTINUE,       /* POST /continue_generation */
    SR_EP_SGL_RELEASE_MEMORY, /* POST /release_memory_occupation */
    SR_EP_SGL_RESUME_MEMORY,  /* POST /resume_memory_occupation */
    SR_EP_SGL_WEIGHT_VERSION, /* GET /get_weight_version */
    SR_EP_ABORT_REQUESTS,     /* POST /abort_requests */
    /* syncroll's own test route (every dialect and plane; no fault reaches it, fault_kinds.c) */
    SR_EP_ORACLE, /* POST /syncroll/v1/oracle */
    SR_EP_COUNT
} sr_endpoint;

/* The bit of endpoint e in an endpoint mask (a fault's endpoints, a kind's allowed ones). */
#define SR_EP_BIT(e) ((uint64_t)1 << (e))
/* Every endpoint's bit (a mask is a uint64_t: at most 64 endpoints). */
#define SR_EP_ALL (SR_EP_COUNT >= 64 ? ~(uint64_t)0 : SR_EP_BIT(SR_EP_COUNT) - 1u)
_Static_assert(SR_EP_COUNT <= 64, "an endpoint mask holds at most 64 endpoints");

/*
 * A broadcast weight bucket posted to /collective_rpc (harness/engine/engine.h describes the
 * body; the trainer's broadcast sender writes it, the engine's receiver reads it): its
 * Content-Type, and the bound in bytes on its one-line JSON header.
 */
#define SR_ENGINE_BUCKET_CTYPE "application/x-syncroll-bucket"
#define SR_BUCKET_HEADER_MAX   ((size_t)16 << 20)

/* Short name used in fault JSON, scenario files and the state document ("generate", ...);
 * NULL outside the enum. */
const char *sr_endpoint_name(sr_endpoint ep);

/* Method and path of an endpoint ("POST", "/skyrl/v1/generate"); NULL outside the enum. */
const char *sr_endpoint_method(sr_endpoint ep);
const char *sr_endpoint_path(sr_endpoint ep);

/* The endpoint for a method and path (path without query), or -1. */
int sr_endpoint_lookup(const char *method, const char *path);

#endif /* SR_SPEC_ENDPOINTS_H */
