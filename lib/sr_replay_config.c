#include "sr_replay_config.h"

/* NULL config and negative sizes are refused the same way at both levels. */
static int check_args(const sr_replay_config *c, sr_err *err)
{
    if (!c)
        return sr_err_set(err, SR_E_INVAL, "routing-replay check needs a configuration");
    if (c->routing_replay && c->vpp_set && c->vpp < 0)
        return sr_err_set(err, SR_E_INVAL,
                          "virtual_pipeline_model_parallel_size must be non-negative, got %lld",
                          (long long)c->vpp);
    return 0;
}

int sr_replay_check_config(const sr_replay_config *c, sr_err *err)
{
    int rc = check_args(c, err);
    if (rc || !c->routing_replay || !c->vpp_set)
        return rc;
    /* The reference asserts the size is falsy, which also refuses the harmless size 1. */
    int refused = c->vpp1_rejected ? c->vpp != 0 : c->vpp > 1;
    if (!refused)
        return 0;
    return sr_err_set(
        err, SR_E_CONFIG_VPP,
        "%s.megatron_config: moe_enable_routing_replay is incompatible with "
        "virtual_pipeline_model_parallel_size -- interleaved chunks desync the replay "
        "FIFO. Unset virtual_pipeline_model_parallel_size.",
        c->role ? c->role : "policy");
}

int sr_replay_check_worker(const sr_replay_config *c, sr_err *err)
{
    int rc = check_args(c, err);
    if (rc || !c->routing_replay || !c->vpp_set || c->vpp <= 1)
        return rc;
    return sr_err_set(err, SR_E_CONFIG_VPP,
                      "moe_enable_routing_replay is incompatible with "
                      "virtual_pipeline_model_parallel_size=%lld: interleaved chunks desync the "
                      "replay FIFO. Unset virtual_pipeline_model_parallel_size.",
                      (long long)c->vpp);
}

int sr_replay_check_both(const sr_replay_config *c, sr_err *err)
{
    sr_err cfg = SR_ERR_INIT, wrk = SR_ERR_INIT;
    int rc_cfg = sr_replay_check_config(c, &cfg);
    int rc_wrk = sr_replay_check_worker(c, &wrk);
    if (rc_cfg == rc_wrk) {
        if (rc_cfg && err)
            *err = cfg;
        return rc_cfg;
    }
    return sr_err_set(
        err, SR_E_CONFIG_INCONSISTENT,
        "routing-replay checks disagree for virtual_pipeline_model_parallel_size=%lld: "
        "config level %s, worker level %s",
        (long long)(c->vpp_set ? c->vpp : 0), rc_cfg ? sr_code_name(rc_cfg) : "ok",
        rc_wrk ? sr_code_name(rc_wrk) : "ok");
}
