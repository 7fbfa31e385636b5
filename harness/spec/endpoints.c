/* The endpoint table of the mock engine (endpoints.h). */
#include "endpoints.h"

#include <string.h>

typedef struct ep_row {
    const char *name, *method, *path;
} ep_row;

static const ep_row rows[SR_EP_COUNT] = {
    [SR_EP_GENERATE] = {"generate", "POST", "/skyrl/v1/generate"},
    [SR_EP_NATIVE] = {"native_generate", "POST", "/inference/v1/generate"},
    [SR_EP_HEALTH] = {"health", "GET", "/health"},
    [SR_EP_WORLD_SIZE] = {"get_world_size", "GET", "/get_world_size"},
    [SR_EP_PAUSE] = {"pause", "POST", "/pause"},
    [SR_EP_RESUME] = {"resume", "POST", "/resume"},
    [SR_EP_SLEEP] = {"sleep", "POST", "/sleep"},
    [SR_EP_WAKE_UP] = {"wake_up", "POST", "/wake_up"},
    [SR_EP_RESET_PREFIX] = {"reset_prefix_cache", "POST", "/reset_prefix_cache"},
    [SR_EP_FINISH_SESSION] = {"finish_session", "POST", "/finish_session"},
    [SR_EP_INIT_TRANSFER] = {"init_weight_transfer_engine", "POST", "/init_weight_transfer_engine"},
    [SR_EP_COLLECTIVE_RPC] = {"collective_rpc", "POST", "/collective_rpc"},
    [SR_EP_FETCH_WEIGHTS] = {"fetch_weights", "POST", "/fetch_weights"},
    [SR_EP_UPDATE_WEIGHTS] = {"update_weights", "POST", "/update_weights"},
    [SR_EP_STATE] = {"state", "GET", "/syncroll/v1/state"},
    [SR_EP_IS_SLEEPING] = {"is_sleeping", "GET", "/is_sleeping"},
    [SR_EP_START_UPDATE] = {"start_weight_update", "POST", "/start_weight_update"},
    [SR_EP_FINISH_UPDATE] = {"finish_weight_update", "POST", "/finish_weight_update"},
    [SR_EP_UPDATE_VERSION] = {"update_weight_version", "POST", "/update_weight_version"},
    [SR_EP_WEIGHT_INFO] = {"weight_info", "GET", "/weight_info"},
    [SR_EP_WEIGHT_CHECKER] = {"weight_checker", "POST", "/weight_checker"},
    [SR_EP_IS_PAUSED] = {"is_paused", "GET", "/is_paused"},
    [SR_EP_SGL_INIT_GROUP] = {"init_weights_update_group", "POST", "/init_weights_update_group"},
    [SR_EP_SGL_UPDATE_DIST] = {"update_weights_from_distributed", "POST",
                               "/update_weights_from_distributed"},
    [SR_EP_SGL_UPDATE_TENSOR] = {"update_weights_from_tensor", "POST",
                                 "/update_weights_from_tensor"},
    [SR_EP_SGL_UPDATE_DISK] = {"update_weights_from_disk", "POST", "/update_weights_from_disk"},
    [SR_EP_SGL_DESTROY_GROUP] = {"destroy_weights_update_group", "POST",
                                 "/destroy_weights_update_group"},
    [SR_EP_SGL_PAUSE] = {"pause_generation", "POST", "/pause_generation"},
    [SR_EP_SGL_CONTINUE] = {"continue_generation", "POST", "/continue_generation"},
    [SR_EP_SGL_RELEASE_MEMORY] = {"release_memory_occupation", "POST",
                                  "/release_memory_occupation"},
    [SR_EP_SGL_RESUME_MEMORY] = {"resume_memory_occupation", "POST", "/resume_memory_occupation"},
    [SR_EP_SGL_WEIGHT_VERSION] = {"get_weight_version", "GET", "/get_weight_version"},
    [SR_EP_ABORT_REQUESTS] = {"abort_requests", "POST", "/abort_requests"},
    [SR_EP_ORACLE] = {"oracle", "POST", "/syncroll/v1/oracle"},
};

const char *sr_endpoint_name(sr_endpoint ep)
{
    return (unsigned)ep < SR_EP_COUNT ? rows[ep].name : NULL;
}

const char *sr_endpoint_method(sr_endpoint ep)
{
    return (unsigned)ep < SR_EP_COUNT ? rows[ep].method : NULL;
}

const char *sr_endpoint_path(sr_endpoint ep)
{
    return (unsigned)ep < SR_EP_COUNT ? rows[ep].path : NULL;
}

int sr_endpoint_lookup(const char *method, const char *path)
{
    for (int i = 0; method && path && i < SR_EP_COUNT; i++)
        if (strcmp(path, rows[i].path) == 0 && strcmp(method, rows[i].method) == 0)
            return i;
    return -1;
}
