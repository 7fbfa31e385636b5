/*
 * sr_replay_config: the routing-replay (R3) versus virtual pipeline parallelism check
 * (docs/reference/skyrl.md §9).
 *
 * Megatron's router replay pushes target indices onto a per-router FIFO consumed in recompute;
 * interleaved (virtual) pipeline chunks run microbatches out of the order the FIFO assumes. So
 * routing replay with a virtual pipeline size > 1 is refused. A size of 1 (non-interleaved),
 * 0 and unset are accepted. The reference checks twice, and this module models both layers:
 *   - config level (validate_megatron_cfg): runs when routing replay is enabled in the config;
 *   - worker level (MegatronWorker): runs on the resolved provider, which may carry a model
 *     default virtual pipeline size, when routing replay is enabled.
 * By default both layers agree: size > 1 -> SR_E_CONFIG_VPP. The quirk `vpp1_rejected` (bug
 * skyrl-vpp1) restores the reference's config level, which rejects any non-zero size including
 * 1 while the worker level accepts 1. sr_replay_check_both() runs both layers and reports a
 * disagreement as SR_E_CONFIG_INCONSISTENT, so the inconsistency is detectable.
 * Beyond the reference, a negative size is SR_E_INVAL at both layers.
 *
 * Messages follow the reference: config level "<role>.megatron_config: moe_enable_routing_replay
 * is incompatible with virtual_pipeline_model_parallel_size -- interleaved chunks desync the
 * replay FIFO. Unset virtual_pipeline_model_parallel_size."; worker level
 * "moe_enable_routing_replay is incompatible with virtual_pipeline_model_parallel_size=<n>:
 * interleaved chunks desync the replay FIFO. Unset virtual_pipeline_model_parallel_size.".
 *
 * Thread-safety: pure functions.
 */
#ifndef SR_REPLAY_CONFIG_H
#define SR_REPLAY_CONFIG_H

#include <stdint.h>

#include "sr_err.h"

/* One model role's settings. Plain struct; start from SR_REPLAY_CONFIG_INIT. */
typedef struct sr_replay_config {
    const char *role;   /* "policy" or "ref", for messages; NULL: "policy" */
    int routing_replay; /* moe_enable_routing_replay */
    int vpp_set;        /* 0: virtual_pipeline_model_parallel_size unset */
    int64_t vpp;        /* the size, when vpp_set */
    int vpp1_rejected;  /* quirk skyrl-vpp1 (config level only) */
} sr_replay_config;

#define SR_REPLAY_CONFIG_INIT                                                                      \
    {                                                                                              \
        NULL, 0, 0, 0, 0                                                                           \
    }

/* The config-level check. 0, SR_E_CONFIG_VPP, SR_E_INVAL (NULL config, negative size). */
int sr_replay_check_config(const sr_replay_config *c, sr_err *err);

/* The worker-level check on the resolved configuration (ignores the quirk). Same codes. */
int sr_replay_check_worker(const sr_replay_config *c, sr_err *err);

/*
 * Runs both levels. Both accept -> 0; both refuse -> the config level's error; they disagree ->
 * SR_E_CONFIG_INCONSISTENT naming which level refused and the size.
 */
int sr_replay_check_both(const sr_replay_config *c, sr_err *err);

#endif /* SR_REPLAY_CONFIG_H */
