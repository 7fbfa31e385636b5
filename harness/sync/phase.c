/* What every phase of a sync shares: phase names, the calls of each control plane, deadlines,
 * findings and the translation of fan-out outcomes into check codes (sync_priv.h). Calls nothing
 * else in sync/. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sr_clock.h"
#include "sync_priv.h"

_Static_assert(SR_SYNC_MAX_INFLIGHT <= SR_FANOUT_MAX_INFLIGHT,
               "send_workers must fit the fan-out's in-flight slots");

static const char *const PHASES[SR_SYNC_PHASE_COUNT] = {"gather", "publish",     "init",  "fetch",
                                                        "pause",  "reset_cache", "start", "update",
                                                        "finish", "resume",      "verify"};

const char *sr_sync_phase_name(sr_sync_phase p)
{
    return (unsigned)p < SR_SYNC_PHASE_COUNT ? PHASES[p] : NULL;
}

#define INIT_INFO                                                                                  \
    "{\"init_info\":{\"master_address\":\"127.0.0.1\",\"master_port\":0,\"rank_offset\":%zu,"      \
    "\"world_size\":%zu}}"

static const sync_plane PLANES[SR_SYNC_DIALECT_COUNT] = {
    [SR_SYNC_DIALECT_SKYRL] =
        {
            .init_path = "/init_weight_transfer_engine",
            .init_fmt = INIT_INFO,
            .pause_path = "/pause?mode=keep",
            .pause_body = "",
            .reset_path = "/reset_prefix_cache",
            .reset_body = "{\"reset_running_requests\":true}",
            .start_path = "/collective_rpc",
            .start_body = "{\"method\":\"skyrl_start_weight_update\",\"kwargs\":"
                          "{\"is_checkpoint_format\":true}}",
            .bucket_path = "/collective_rpc",
            .bucket_what = "/collective_rpc update_weights_nccl",
            .bucket_open = "{\"method\":\"update_weights_nccl\",\"kwargs\":{\"update_info\":{",
            .dtype_key = "dtype_names",
            .bucket_mid = "",
            .bucket_close = "}}}}\n",
            .finish_path = "/collective_rpc",
            .finish_fmt = "{\"method\":\"skyrl_finish_weight_update\",\"kwargs\":{\"syncroll\":"
                          "{\"target_version\":%lld}}}",
            .resume_path = "/resume",
            .resume_body = "",
        },
    [SR_SYNC_DIALECT_VLLM] =
        {
            .init_path = "/init_weight_transfer_engine",
            .init_fmt = INIT_INFO,
            .pause_path = "/pause?mode=keep",
            .pause_body = "",
            .reset_path = "/reset_prefix_cache",
            .reset_body = "{\"reset_running_requests\":true}",
            .start_path = "/start_weight_update",
            .start_body = "{\"is_checkpoint_format\":true}",
            .bucket_path = "/update_weights",
            .bucket_what = "/update_weights",
            .bucket_open = "{\"update_info\":{",
            .dtype_key = "dtype_names",
            .bucket_mid = "",
            .bucket_close = "}}}\n",
            .finish_path = "/finish_weight_update",
            .finish_fmt = "{\"weight_version\":\"%lld\"}",
            .resume_path = "/resume",
            .resume_body = "",
            .compare = 1,
        },
    /* SGLang (python/sglang/srt/entrypoints/http_server.py): no start or finish, each
     * update_weights_from_distributed is whole and flushes the cache itself; the version is set
     * once every bucket landed. */
    [SR_SYNC_DIALECT_SGLANG] =
        {
            .init_path = "/init_weights_update_group",
            .init_fmt = "{\"master_address\":\"127.0.0.1\",\"master_port\":0,\"rank_offset\":%zu,"
                        "\"world_size\":%zu,\"group_name\":\"syncroll\",\"backend\":\"nccl\"}",
            .pause_path = "/pause_generation",
            .pause_body = "{\"mode\":\"in_place\"}",
            .bucket_path = "/update_weights_from_distributed",
            .bucket_what = "/update_weights_from_distributed",
            .bucket_open = "{",
            .dtype_key = "dtypes",
            .bucket_mid =
                ",\"group_name\":\"syncroll\",\"flush_cache\":true,\"weight_version\":\"%lld\"",
            .bucket_close = "}}\n",
            .finish_path = "/update_weight_version",
            .finish_fmt = "{\"new_version\":\"%lld\"}",
            .finish_all_ok = 1,
            .resume_path = "/continue_generation",
            .resume_body = "{}",
        },
};

const sync_plane *sync_plane_of(sr_sync_dialect d)
{
    return &PLANES[(unsigned)d < SR_SYNC_DIALECT_COUNT ? d : SR_SYNC_DIALECT_SKYRL];
}

void sync_check(sr_sync_result *res, int code, int engine, int layer, const char *fmt, ...)
{
    const char *name = sr_code_name(code) ? sr_code_name(code) : "?";
    /* One finding per engine and name: a spoiled update also fails its finish, say, and the
     * first message is the one that explains it. */
    for (size_t i = 0; engine >= 0 && i < res->n_checks; i++)
        if (res->checks[i].where.engine == engine && strcmp(res->checks[i].name, name) == 0)
            return;
    if (res->n_checks >= SR_SYNC_MAX_CHECKS) {
        res->checks_dropped++;
        return;
    }
    sr_check *c = &res->checks[res->n_checks++];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->where = (sr_check_where)SR_CHECK_WHERE_NONE;
    c->where.engine = engine;
    c->where.layer = layer;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->message, sizeof(c->message), fmt, ap);
    va_end(ap);
}

int64_t sync_deadline(const sr_sync *s, sr_sync_phase p)
{
    return s->o.phase_deadline_ms[p] > 0 ? s->o.phase_deadline_ms[p] : s->o.deadline_ms;
}

double sync_phase_end(const sr_sync *s, sr_sync_phase p, int64_t *budget_ms)
{
    *budget_ms = sync_deadline(s, p);
    double end = sr_clock_ms() + (double)*budget_ms;
    int closing = p == SR_SYNC_FINISH || p == SR_SYNC_RESUME || p == SR_SYNC_VERIFY;
    if (!closing && s->o.total_deadline_ms > 0 && s->t0_ms + (double)s->o.total_deadline_ms < end) {
        end = s->t0_ms + (double)s->o.total_deadline_ms;
        *budget_ms = s->o.total_deadline_ms;
    }
    return end;
}

int sync_code(const sr_fanout_req *r)
{
    if (!r->code)
        return 0;
    if (r->code == SR_E_CLIENT_DEADLINE)
        return SR_E_SYNC_DEADLINE;
    /* The engine names the rule a refusal broke; these are findings of their own. */
    if (r->code == SR_E_CLIENT_HTTP_STATUS && strcmp(r->check, "sync.protocol_order") == 0)
        return SR_E_SYNC_ORDER;
    if (r->code == SR_E_CLIENT_HTTP_STATUS && strcmp(r->check, "delta.checksum") == 0)
        return SR_E_SYNC_CHECKSUM;
    if (r->code == SR_E_CLIENT_HTTP_STATUS && strcmp(r->check, "sync.no_transfer") == 0)
        return SR_E_SYNC_NO_TRANSFER;
    if (r->code == SR_E_CLIENT_HTTP_STATUS && strcmp(r->check, "sync.version_backwards") == 0)
        return SR_E_SYNC_VERSION_BACKWARDS;
    if (r->code == SR_E_CLIENT_HTTP_STATUS && strcmp(r->check, "sync.engine_paused") == 0)
        return SR_E_SYNC_ENGINE_PAUSED;
    if (r->code == SR_E_CLIENT_HTTP_STATUS && strcmp(r->check, "sync.wire_version") == 0)
        return SR_E_SYNC_WIRE_VERSION;
    return SR_E_SYNC_FAILED;
}
