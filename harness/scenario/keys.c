/* The key table of the scenario format and the quirk table (scenario.h). */
#include <stddef.h>
#include <string.h>

#include "scenario.h"

/*
 * Order matters twice: the expanded writer emits keys in this order, and an object's allowed
 * members are found by prefix. Keep it in the order of scenarios/FORMAT.md.
 */
static const sr_scenario_key keys[] = {
    {"id", "string"},
    {"description", "string"},
    {"tags", "array"},
    {"seed", "integer"},
    {"timeout_ms", "integer"},
    {"skip", "string|null"},
    {"model", "object"},
    {"model.name", "string"},
    {"model.vocab", "integer"},
    {"model.layers", "integer"},
    {"model.layer_indices", "array"},
    {"model.experts", "integer"},
    {"model.topk", "integer"},
    {"model.eos_id", "integer"},
    {"model.eos_rate", "number"},
    {"model.stop_sequences", "array"},
    {"model.logprob_scale", "number"},
    {"model.nonfinite_rate", "number"},
    {"fields", "array"},
    {"engines", "object"},
    {"engines.count", "integer"},
    {"engines.urls", "array|null"},
    {"engines.timing", "object"},
    {"engines.timing.prefill_ms", "number"},
    {"engines.timing.decode_ms_per_token", "number"},
    {"engines.server", "object"},
    {"engines.server.threads", "integer"},
    {"engines.server.max_connections", "integer"},
    {"engines.server.max_body_bytes", "integer"},
    {"engines.server.max_response_bytes", "integer"},
    {"engines.server.max_tokens_default", "integer"},
    {"engines.server.max_seq", "integer"},
    {"engines.server.world_size", "integer"},
    {"engines.server.lora", "boolean"},
    {"engines.server.header_timeout_ms", "integer"},
    {"engines.server.body_timeout_ms", "integer"},
    {"engines.server.max_pending_connections", "integer"},
    {"engines.server.max_queued_requests", "integer"},
    {"engines.server.sync_dirs", "array|null"},
    {"engines.faults", "plan"},
    {"engines.sample_support_k", "integer"},
    {"engines.sync_dialect", "string"},
    {"engines.sync_version", "string"},
    {"engines.dialect", "string"},
    {"engines.dialects", "array"},
    {"engines.omit_prefix_routes", "boolean"},
    {"engines.prefix_block", "integer"},
    {"engines.masked_padding", "object|null"},
    {"engines.masked_padding.chunk", "integer"},
    {"engines.masked_padding.rows", "integer"},
    {"engines.ready_timeout_ms", "integer"},
    {"engines.stop_grace_ms", "integer"},
    {"client", "object"},
    {"client.attempts", "integer"},
    {"client.backoff_initial_ms", "integer"},
    {"client.backoff_max_ms", "integer"},
    {"client.jitter", "number"},
    {"client.deadline_ms", "integer"},
    {"client.attempt_timeout_ms", "integer"},
    {"client.connect_timeout_ms", "integer"},
    {"client.control_timeout_ms", "integer"},
    {"client.max_body_bytes", "integer"},
    {"client.max_error_body_bytes", "integer"},
    {"client.concurrency", "integer"},
    {"client.strict_base64", "boolean"},
    {"client.generate_path", "string"},
    {"client.on_abort", "string"},
    {"client.route_start", "string"},
    {"client.stack", "string"},
    {"client.pd", "object"},
    {"client.pd.prefill", "integer"},
    {"client.pd.decode", "integer"},
    {"client.pd.merge", "boolean"},
    {"client.quirks", "array"},
    {"weights", "object"},
    {"weights.total_bytes", "integer"},
    {"weights.expert_tensors", "integer"},
    {"weights.version", "integer"},
    {"weights.tensor_change_rate", "number"},
    {"weights.block_change_rate", "number"},
    {"weights.transport", "string"},
    {"weights.sync_version", "string"},
    {"weights.serial_update", "boolean"},
    {"weights.workers", "object"},
    {"weights.workers.cap", "integer"},
    {"weights.workers.reserved_cores", "integer"},
    {"pool", "object"},
    {"pool.cores", "integer|null"},
    {"pool.affinity", "string"},
    {"trainer", "object"},
    {"trainer.role", "string"},
    {"trainer.routing_replay", "boolean"},
    {"trainer.virtual_pipeline_size", "integer|null"},
    {"steps", "array"},
    {"steps.*.kind", "string"},
    {"steps.*.name", "string"},
    {"steps.rollout.async", "boolean"},
    {"steps.rollout.batch", "integer"},
    {"steps.rollout.turns", "integer"},
    {"steps.rollout.prompt_tokens", "object"},
    {"steps.rollout.prompt_tokens.min", "integer"},
    {"steps.rollout.prompt_tokens.max", "integer"},
    {"steps.rollout.observation_tokens", "object"},
    {"steps.rollout.observation_tokens.min", "integer"},
    {"steps.rollout.observation_tokens.max", "integer"},
    {"steps.rollout.max_tokens", "integer"},
    {"steps.rollout.mode", "string"},
    {"steps.rollout.routes", "boolean"},
    {"steps.rollout.logprobs", "boolean"},
    {"steps.rollout.ignore_eos", "boolean"},
    {"steps.rollout.sample_support", "boolean"},
    {"steps.rollout.stop_token_ids", "array"},
    {"steps.rollout.append_eos_after_stop", "boolean"},
    {"steps.rollout.max_input_length", "integer"},
    {"steps.rollout.finish_session", "boolean"},
    {"steps.rollout.max_rollout_tokens", "integer"},
    {"steps.rollout.max_trace_bytes", "integer"},
    {"steps.sync_weights.async", "boolean"},
    {"steps.sync_weights.version", "integer|null"},
    {"steps.sync_weights.deadline_ms", "integer"},
    {"steps.collate.rollouts", "array|null"},
    {"steps.collate.workers", "integer"},
    {"steps.collate.cap", "integer"},
    {"steps.collate.reserved_cores", "integer"},
    {"steps.pause.engine", "integer|null"},
    {"steps.pause.mode", "string"},
    {"steps.pause.clear_cache", "boolean"},
    {"steps.resume.engine", "integer|null"},
    {"steps.wait.for", "array|null"},
    {"steps.wait.until", "object|null"},
    {"steps.wait.until.engine", "integer"},
    {"steps.wait.until.min_inflight", "integer|null"},
    {"steps.wait.until.min_held", "integer|null"},
    {"steps.wait.until.min_generate_requests", "integer|null"},
    {"steps.wait.timeout_ms", "integer"},
    {"steps.wait.poll_ms", "integer"},
    {"steps.check_state.engine", "integer|null"},
    {"steps.check_state.weight_version", "integer|null"},
    {"steps.check_state.paused", "boolean|null"},
    {"steps.check_state.sleeping", "boolean|null"},
    {"steps.check_state.sessions", "integer|null"},
    {"steps.check_state.inflight", "integer|null"},
    {"steps.check_state.held", "integer|null"},
    {"steps.check_state.requests", "map"},
    {"steps.check_state.faults_fired", "map"},
    {"steps.kill_engine.engine", "integer"},
    {"steps.kill_engine.signal", "string"},
    {"steps.probe.engine", "integer"},
    {"steps.probe.budget", "integer"},
    {"steps.probe.sync", "boolean"},
    {"steps.sleep.engine", "integer|null"},
    {"steps.sleep.level", "integer"},
    {"steps.wake_up.engine", "integer|null"},
    {"steps.wake_up.tags", "string"},
    {"steps.replay.capture", "string"},
    {"steps.replay.dialect", "string|null"},
    {"expect", "object"},
    {"expect.verdict", "string"},
    {"expect.checks", "array"},
    {"expect.classifications", "array"},
    {"budgets", "array"},
    {"budgets.phase", "string"},
    {"budgets.percentile", "number"},
    {"budgets.max_ms", "number"},
    {"soak", "object"},
    {"soak.duration_ms", "integer"},
    {"soak.warmup_iterations", "integer"},
    {"soak.max_fd_growth", "integer"},
    {"soak.max_rss_growth_bytes", "integer"},
};

size_t sr_scenario_key_count(void)
{
    return sizeof(keys) / sizeof(keys[0]);
}

const sr_scenario_key *sr_scenario_key_at(size_t i)
{
    return i < sr_scenario_key_count() ? &keys[i] : NULL;
}

static const sr_quirk_info quirks[SR_QUIRK_COUNT] = {
    [SR_QUIRK_RETRY_JSON_DECODE_ONLY] = {"retry_json_decode_only", "client",
                                         "skyrl-retry-unterminated"},
    [SR_QUIRK_NO_PROMPT_START] = {"no_prompt_start", "client", "skyrl-prompt-start-ignored"},
    [SR_QUIRK_LOCK_FIRST_DTYPE] = {"lock_first_dtype", "trace", "skyrl-dtype-lock"},
    [SR_QUIRK_PADDING_AS_CAPTURED] = {"padding_as_captured", "trace", "skyrl-padding-as-captured"},
    [SR_QUIRK_SYNTHETIC_EOS_LOSS_ACTIVE] = {"synthetic_eos_loss_active", "rollout",
                                            "skyrl-synthetic-eos"},
    [SR_QUIRK_OVERWRITE_TRACE_EACH_TURN] = {"overwrite_trace_each_turn", "rollout",
                                            "skyrl-overwrite-not-append"},
    [SR_QUIRK_AFFINITY_ERROR_FATAL] = {"affinity_error_fatal", "pool", "skyrl-affinity-oserror"},
    [SR_QUIRK_VPP1_REJECTED] = {"vpp1_rejected", "config", "skyrl-vpp1"},
    [SR_QUIRK_PREFIX_WITHOUT_QUOTE] = {"prefix_without_quote", "splice", "skyrl-lookalike-suffix"},
    [SR_QUIRK_NPY_ASSUME_UINT8] = {"npy_assume_uint8", "client", "vllm-uint16-as-uint8"},
    [SR_QUIRK_SGLANG_ROWS_FROM_ZERO] = {"sglang_rows_from_zero", "client", "sglang-rows-from-zero"},
    [SR_QUIRK_COMMIT_ABORTED_TURN] = {"commit_aborted_turn", "client", "abort-committed"},
    [SR_QUIRK_STAMP_VERSION_AT_RESPONSE] = {"stamp_version_at_response", "rollout",
                                            "version-stamped-at-response"},
    [SR_QUIRK_OMIT_TOP_K] = {"omit_top_k", "rollout", "skyrl-capture-omits-top-k"},
};

const sr_quirk_info *sr_quirk_info_of(sr_quirk q)
{
    return (unsigned)q < SR_QUIRK_COUNT ? &quirks[q] : NULL;
}

static const struct {
    const char *name, *doc;
} step_kinds[SR_STEP_KIND_COUNT] = {
#define STEP_KIND_ROW(name, sym, parse, write, doc) [SR_STEP_##sym] = {name, doc},
    SR_STEP_KIND_TABLE(STEP_KIND_ROW)
#undef STEP_KIND_ROW
};

const char *sr_step_kind_name(sr_step_kind k)
{
    return (unsigned)k < SR_STEP_KIND_COUNT ? step_kinds[k].name : NULL;
}

const char *sr_step_kind_doc(sr_step_kind k)
{
    return (unsigned)k < SR_STEP_KIND_COUNT ? step_kinds[k].doc : NULL;
}

int sr_step_kind_lookup(const char *name)
{
    for (int k = 0; name && k < SR_STEP_KIND_COUNT; k++)
        if (strcmp(step_kinds[k].name, name) == 0)
            return k;
    return -1;
}
