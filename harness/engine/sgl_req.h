/*
 * sgl_req: the bodies of SGLang's weight-sync routes (engines.sync_dialect "sglang"), parsed
 * strictly: each key its type and bounds, or SR_E_ENGINE_REQUEST naming the key. The keys and
 * defaults are those of SGLang's request dataclasses (python/sglang/srt/managers/io_struct.py:
 * InitWeightsUpdateGroupReqInput, UpdateWeightsFromDistributedReqInput,
 * UpdateWeightsFromTensorReqInput, UpdateWeightFromDiskReqInput, DestroyWeightsUpdateGroupReqInput,
 * PauseGenerationReqInput, ReleaseMemoryOccupationReqInput / ResumeMemoryOccupationReqInput).
 * Keys the engine does not know are ignored, as those dataclasses' callers do with extras they
 * never read. An empty body is {} where every key has a default.
 *
 * A weight_version is SGLang's string; this engine's versions are integers, so it must be the
 * decimal digits of one in 0..SR_SGL_MAX_VERSION (-1 in the result: absent or null).
 *
 * Pure functions of their input: thread-safe; the results hold no pointers into the body and
 * nothing to free (sr_sgl_dist points at the parsed header it was given).
 */
#ifndef SR_ENGINE_SGL_REQ_H
#define SR_ENGINE_SGL_REQ_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sr_err.h"
#include "sr_weights.h" /* SR_WEIGHTS_MAX_VERSION */

#define SR_SGL_MAX_VERSION SR_WEIGHTS_MAX_VERSION /* the one ceiling of every plane */
#define SR_SGL_ADDR_MAX    256                    /* master_address bytes with the NUL */
#define SR_SGL_NAME_MAX    128     /* group_name, backend, load_format bytes with the NUL */
#define SR_SGL_PATH_MAX    4096    /* model_path bytes with the NUL */
#define SR_SGL_MAX_WORLD   1048576 /* world_size */
#define SR_SGL_MAX_TENSORS 65536   /* names of one update */
#define SR_SGL_MAX_DIMS    8       /* dims of one shape */
#define SR_SGL_MAX_DIM     ((int64_t)1 << 40)

/* POST /init_weights_update_group: every key but backend ("nccl") is required. */
typedef struct sr_sgl_init {
    char master_address[SR_SGL_ADDR_MAX];
    int master_port;                 /* 0..65535 */
    int64_t rank_offset, world_size; /* 0 <= rank_offset < world_size <= SR_SGL_MAX_WORLD */
    char group_name[SR_SGL_NAME_MAX];
    char backend[SR_SGL_NAME_MAX];
} sr_sgl_init;
int sr_sgl_req_init(sr_sgl_init *out, const char *body, size_t len, sr_err *err);

/* POST /update_weights_from_distributed (its JSON, or the header line of a bucket): names, dtypes
 * and shapes of equal length (required; a shape's elements count is overflow-checked), group_name
 * ("weight_update_group"), flush_cache (true), abort_all_requests (false), weight_version, and
 * load_format (null; "flattened_bucket" or a string). */
typedef struct sr_sgl_dist {
    int64_t n; /* tensors named */
    char group_name[SR_SGL_NAME_MAX];
    int flush_cache, abort_all_requests;
    int64_t weight_version;
} sr_sgl_dist;
int sr_sgl_req_dist_obj(sr_sgl_dist *out, const cJSON *o, sr_err *err);
int sr_sgl_req_dist(sr_sgl_dist *out, const char *body, size_t len, sr_err *err);

/* POST /update_weights_from_tensor: serialized_named_tensors (an array of strings, required),
 * load_format, flush_cache, abort_all_requests, weight_version. */
typedef struct sr_sgl_tensor {
    int64_t n; /* serialized entries */
    int flush_cache, abort_all_requests;
    int64_t weight_version;
} sr_sgl_tensor;
int sr_sgl_req_tensor(sr_sgl_tensor *out, const char *body, size_t len, sr_err *err);

/* POST /update_weights_from_disk: model_path (required), load_format, abort_all_requests (false),
 * weight_version, flush_cache (true). */
typedef struct sr_sgl_disk {
    char model_path[SR_SGL_PATH_MAX];
    char load_format[SR_SGL_NAME_MAX]; /* "" when absent */
    int abort_all_requests, flush_cache;
    int64_t weight_version;
} sr_sgl_disk;
int sr_sgl_req_disk(sr_sgl_disk *out, const char *body, size_t len, sr_err *err);

/* POST /destroy_weights_update_group: group_name ("weight_update_group"). */
int sr_sgl_req_destroy(char group_name[SR_SGL_NAME_MAX], const char *body, size_t len, sr_err *err);

/* POST /pause_generation: mode "abort" (the default), "retract" or "in_place". */
typedef enum sr_sgl_pause_mode {
    SR_SGL_ABORT = 0,
    SR_SGL_RETRACT,
    SR_SGL_IN_PLACE
} sr_sgl_pause_mode;
int sr_sgl_req_pause(sr_sgl_pause_mode *mode, const char *body, size_t len, sr_err *err);

/* The tags of /release_memory_occupation and /resume_memory_occupation: null or absent (every
 * tag), or an array of "weights", "kv_cache", "cuda_graph"; *mask gets SR_SGL_TAG_* bits. */
#define SR_SGL_TAG_WEIGHTS    1u
#define SR_SGL_TAG_KV_CACHE   2u
#define SR_SGL_TAG_CUDA_GRAPH 4u
#define SR_SGL_TAG_ALL        7u
int sr_sgl_req_tags(unsigned *mask, const char *body, size_t len, sr_err *err);

/* POST /update_weight_version: new_version (required), abort_all_requests (false). */
int sr_sgl_req_version(int64_t *version, int *abort_all, const char *body, size_t len, sr_err *err);

#endif /* SR_ENGINE_SGL_REQ_H */
