/* The check-name and row-class tables (checks.h). */
#include "checks.h"

#include <string.h>

#include "sr_err.h"

static const sr_check_info checks[] = {
    {"trace.row_mismatch", "a captured route row differs from the oracle at a layer "
                           "(classified)"},
    {"trace.token_mismatch", "a generated token id differs from the oracle's next token"},
    {"trace.logprob_mismatch", "a logprob differs from the oracle's (or from the clamp -9999.0)"},
    {"trace.padding_row", "a padded row of a finalized trace is not the padding row 0..K-1"},
    {"trace.version_unknown", "the engine did not say which weight version computed a row"},
    {"trace.version_stamp", "a turn is stamped with a newer weight version than the engine's "
                            "pass that sampled its first token"},
    {"collate.alignment", "a sample's route rows are not at columns pad + r of the batch"},
    {"collate.padding_rows", "a padding column of the batch does not hold the padding row"},
    {"collate.padding_mask", "the router padding mask is not 1 exactly on padding and "
                             "uncaptured columns"},
    {"engine.crashed", "an engine exited, was killed or never became ready during the scenario"},
    {"engine.state", "/syncroll/v1/state differs from a check_state step"},
    {"engine.control", "a control-plane call (pause, resume, state) failed"},
    {"step.deadline", "a wait step's condition did not hold before its timeout"},
    {"budget.latency", "a phase's latency percentile exceeds its budget"},
    {"budget.no_samples", "a budget names a phase that recorded nothing"},
    {"soak.resource_growth", "the harness's open descriptors or resident memory kept growing "
                             "after a soak's warm-up iterations"},
    {"meta.determinism", "the same request at temperature 0 twice gave other tokens or routes "
                         "(warm or cold cache)"},
    {"meta.prefix_consistency", "two prompts sharing a prefix got other rows on it (warm, cold, "
                                "or after a sync back to the same weights), or the same row where "
                                "their tokens part (rows that lag their tokens)"},
    {"meta.multiturn_prefix", "turn 2's rows for turn 1's positions differ from turn 1's rows, or "
                              "after a sync turn 1's prompt in turn 2 was not re-routed with the "
                              "new weights"},
    {"meta.row_count", "a response that asked for routes does not carry rows [s, P+G-1) (none, "
                       "one more, from 0, ...)"},
    {"meta.value_sanity", "an expert id out of range, twice in a row's top-k, a sentinel where no "
                          "prefix was cached, an all-constant capture or a run of repeated rows"},
    {"meta.boundary_rows", "a row at the prompt/output, turn or prefill-chunk boundary is a "
                           "placeholder or a copy of its neighbour"},
    {"meta.sync_effect", "a sync left a changed layer's rows as they were, reported another "
                         "version, failed, the engine's weight checker disagreed, a sync back did "
                         "not restore the rows, or the engine answered generates with an error "
                         "once a sync completed"},
    {"meta.cache_after_sync", "after a sync, a prompt holding a post-sync output got other rows "
                              "than that output had (a stale prefix cache)"},
    {"meta.missing_not_stale", "a request that finished \"abort\" carried route rows instead of "
                               "none"},
    {"meta.version_monotonic", "the engine's reported weight version went backwards"},
    {"meta.stack_contract", "an engine of the later SkyRL stack answered a capture request with "
                            "support that is not int32 [G, top_k] with trailing -1 padding "
                            "holding the sampled token, or answered one without top_k > 1"},
    {"run.interrupted", "a stop signal (SIGINT, SIGTERM) ended the run before the scenario "
                        "finished; its verdict is `interrupted`"},
};

size_t sr_check_info_count(void)
{
    return sizeof(checks) / sizeof(checks[0]);
}

const sr_check_info *sr_check_info_at(size_t i)
{
    return i < sr_check_info_count() ? &checks[i] : NULL;
}

int sr_check_known(const char *name)
{
    if (!name)
        return 0;
    for (size_t i = 0; i < sr_check_info_count(); i++)
        if (strcmp(checks[i].name, name) == 0)
            return 1;
    return sr_code_by_name(name) != 0;
}

static const char *const classes[SR_ROW_CLASS_COUNT] = {
    "all_zero_capture", "duplicated_row", "overwritten_prefix", "off_by_one",
    "stale_weights",    "newer_weights",  "unclassified"};

static const char *const class_docs[SR_ROW_CLASS_COUNT] = {
    "holds expert 0 in every slot (vllm#54730)",
    "equals the row captured before it (sglang#12162)",
    "equals a re-computation at a later version that replaced the first capture (SkyRL #1530)",
    "equals the oracle's row of a neighbour, i-1 or i+1",
    "equals the oracle at an older weight version v-k; the message says which",
    "equals the oracle at a newer weight version than the engine claimed",
    "matches nothing above"};

const char *sr_row_class_doc(sr_row_class c)
{
    return (unsigned)c < SR_ROW_CLASS_COUNT ? class_docs[c] : NULL;
}

const char *sr_row_class_name(sr_row_class c)
{
    return (unsigned)c < SR_ROW_CLASS_COUNT ? classes[c] : NULL;
}

int sr_row_class_lookup(const char *name)
{
    for (int i = 0; name && i < SR_ROW_CLASS_COUNT; i++)
        if (strcmp(classes[i], name) == 0)
            return i;
    return -1;
}
