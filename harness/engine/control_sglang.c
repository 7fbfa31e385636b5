/* The sglang control plane of the mock engine (engines.sync_dialect "sglang"): SGLang's weight
 * routes with its answers (python/sglang/srt/entrypoints/http_server.py), {"success": bool,
 * "message": str} with 200 or, on failure, 400 (500 for the engine's own resource errors), plus
 * the named "check" of a refusal as the other planes carry it. Every ordering decision is a cell
 * of the sglang table (sync_table.h); the bodies are parsed by sgl_req.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "sr_safetensors.h"
#include "server_priv.h"
#include "sgl_req.h"
#include "sync_req.h"

/* {"success": ok, "message": msg[, "check": name]} with `status`. */
static enum MHD_Result reply(req *r, unsigned status, int code, const char *msg)
{
    sr_buf b = SR_BUF_INIT;
    int rc = sr_buf_puts(&b,
                         code ? "{\"success\":false,\"message\":"
                              : "{\"success\":true,"
                                "\"message\":",
                         NULL);
    if (!rc)
        rc = sr_jw_str(&b, msg, NULL);
    if (!rc && code)
        rc = sr_buf_printf(&b, NULL, ",\"check\":\"%s\"",
                           sr_code_name(code) ? sr_code_name(code) : "");
    if (!rc)
        rc = sr_buf_puts(&b, "}", NULL);
    if (rc) {
        sr_buf_release(&b);
        return MHD_NO;
    }
    return sr_srv_respond(r, status, "application/json", &b, 1);
}

static enum MHD_Result answer(req *r, int rc, const sr_err *err, const char *ok_msg)
{
    if (!rc)
        return reply(r, 200, 0, ok_msg);
    return reply(r, rc == SR_E_NOMEM || rc == SR_E_INTERNAL ? 500 : 400, rc, err->msg);
}

static const char *body(req *r)
{
    return r->body.data ? r->body.data : "";
}

static enum MHD_Result init_group(req *r)
{
    sr_err err = SR_ERR_INIT;
    sr_sgl_init q;
    int rc = sr_sgl_req_init(&q, body(r), r->body.len, &err);
    if (!rc)
        rc = sr_engine_sync_call(r->srv->e, SR_SC_INIT, NULL, &err);
    if (!rc) {
        char info[SR_SGL_ADDR_MAX + 2 * SR_SGL_NAME_MAX + 160];
        snprintf(info, sizeof(info),
                 "{\"master_port\":%d,\"rank_offset\":%lld,\"world_size\":%lld}", q.master_port,
                 (long long)q.rank_offset, (long long)q.world_size);
        sr_engine_set_init_info(r->srv->e, info);
    }
    return answer(r, rc, &err, "Succeeded to initialize custom process group.");
}

static enum MHD_Result destroy_group(req *r)
{
    sr_err err = SR_ERR_INIT;
    char group[SR_SGL_NAME_MAX];
    int rc = sr_sgl_req_destroy(group, body(r), r->body.len, &err);
    if (!rc)
        rc = sr_engine_sync_call(r->srv->e, SR_SC_DESTROY, NULL, &err);
    return answer(r, rc, &err, "Succeeded to destroy custom process group.");
}

/* A bucket (streamed into the stage and committed at its end, bucket.c), or the JSON alone: the
 * names of tensors an NCCL broadcast would carry, which this engine cannot receive. */
static enum MHD_Result update_distributed(req *r)
{
    sr_err err = SR_ERR_INIT;
    int rc;
    if (r->brx) {
        rc = sr_engine_bucket_end(r->brx, r->pick.f[SR_FL_WEIGHTS], &err);
        r->brx = NULL;
        return answer(r, rc, &err, "Succeeded to update parameter online.");
    }
    sr_sgl_dist q;
    rc = sr_sgl_req_dist(&q, body(r), r->body.len, &err);
    if (!rc)
        rc = sr_engine_sync_no_transfer(r->srv->e, "update_weights_from_distributed", &err);
    return answer(r, rc, &err, "");
}

static enum MHD_Result update_tensor(req *r)
{
    sr_err err = SR_ERR_INIT;
    sr_sgl_tensor q;
    int rc = sr_sgl_req_tensor(&q, body(r), r->body.len, &err);
    if (!rc)
        rc = sr_err_set(&err, SR_E_SGL_UNSUPPORTED,
                        "update_weights_from_tensor: serialized_named_tensors carry torch "
                        "tensors pickled by SGLang's MultiprocessingSerializer (CUDA IPC handles "
                        "in the colocated case); this engine cannot deserialize them. Send the "
                        "weights as update_weights_from_distributed buckets.");
    return answer(r, rc, &err, "");
}

/* The version a checkpoint folder names (__metadata__.syncroll_version), so that a load that names
 * none is guarded as one that does; -1 when the folder cannot be read or names no valid version:
 * then the load itself reports why (disk.c), and it loads only the version asked here, since the
 * request then names it. */
static int64_t folder_version(const char *dir)
{
    sr_st_checkpoint *c = NULL;
    sr_err err = SR_ERR_INIT;
    int64_t v = -1;
    if (!sr_st_checkpoint_open(&c, dir, &err)) {
        const char *m = sr_st_checkpoint_meta(c, "syncroll_version");
        size_t n = m ? strlen(m) : 0;
        int digits = n >= 1 && n <= 9;
        for (size_t i = 0; digits && i < n; i++)
            digits = m[i] >= '0' && m[i] <= '9';
        if (digits && atoll(m) <= SR_WEIGHTS_MAX_VERSION)
            v = atoll(m);
    }
    sr_st_checkpoint_free(c);
    return v;
}

/* A safetensors checkpoint folder inside server.sync_dirs (disk.c), guarded by the set_version
 * cells with the version it names or, when it names none, the folder's. */
static enum MHD_Result update_disk(req *r)
{
    sr_engine *e = r->srv->e;
    sr_err err = SR_ERR_INIT;
    sr_sgl_disk q;
    char dir[SR_ENGINE_PATH_MAX + 1];
    int64_t now;
    int rc = sr_sgl_req_disk(&q, body(r), r->body.len, &err);
    if (!rc && q.load_format[0] && strcmp(q.load_format, "auto") != 0 &&
        strcmp(q.load_format, "safetensors") != 0)
        rc = sr_err_set(&err, SR_E_SGL_UNSUPPORTED,
                        "update_weights_from_disk: load_format '%s': this engine reads "
                        "safetensors checkpoints only (auto or safetensors)",
                        q.load_format);
    if (!rc)
        rc = sr_engine_confine(dir, e, q.model_path, "model_path", &err);
    if (!rc && q.weight_version < 0)
        q.weight_version = folder_version(dir);
    if (!rc && q.weight_version >= 0)
        rc = sr_engine_sync_call(e,
                                 q.weight_version < sr_engine_version(e)
                                     ? SR_SC_SET_VERSION_BACKWARDS
                                     : SR_SC_SET_VERSION,
                                 "update_weights_from_disk", &err);
    if (!rc)
        rc = sr_engine_load_disk(e, dir, q.weight_version, r->pick.f[SR_FL_WEIGHTS], &now, &err);
    if (!rc && q.flush_cache)
        sr_engine_prefix_reset(e);
    if (rc == SR_E_ENGINE_FORBIDDEN_PATH)
        return reply(r, 403, rc, err.msg);
    if (rc)
        return answer(r, rc, &err, "");
    char out[160];
    snprintf(out, sizeof(out),
             "{\"success\":true,\"message\":\"Succeeded to update model weights. Weight "
             "version is %lld.\",\"num_paused_requests\":0}",
             (long long)now);
    return sr_srv_ok(r, out);
}

static enum MHD_Result update_version(req *r)
{
    sr_err err = SR_ERR_INIT;
    int64_t v;
    int abort_all;
    int rc = sr_sgl_req_version(&v, &abort_all, body(r), r->body.len, &err);
    if (!rc)
        rc = sr_engine_set_version(r->srv->e, v, &err);
    if (rc)
        return answer(r, rc, &err, "");
    char out[160];
    snprintf(out, sizeof(out),
             "{\"success\":true,\"message\":\"Weight version updated to %lld\","
             "\"new_version\":\"%lld\"}",
             (long long)v, (long long)v);
    return sr_srv_ok(r, out);
}

static enum MHD_Result memory(req *r, int release)
{
    sr_err err = SR_ERR_INIT;
    unsigned tags;
    int rc = sr_sgl_req_tags(&tags, body(r), r->body.len, &err);
    if (rc)
        return answer(r, rc, &err, "");
    unsigned sleep = ((tags & SR_SGL_TAG_WEIGHTS) ? SR_SLEEP_WEIGHTS : 0) |
                     ((tags & SR_SGL_TAG_KV_CACHE) ? SR_SLEEP_KV_CACHE : 0);
    sr_srv_memory(r->srv, sleep, release);
    /* SGLang's handlers return None: FastAPI answers null. */
    return sr_srv_ok(r, "null");
}

enum MHD_Result sr_srv_control_sglang(req *r)
{
    sr_err err = SR_ERR_INIT;
    sr_sgl_pause_mode mode;
    char out[96];
    int rc = sr_sync_req_no_nul(r->body.data, r->body.len, "the request body", &err);
    if (rc)
        return answer(r, rc, &err, "");
    switch (r->ep) {
    case SR_EP_SGL_INIT_GROUP:
        return init_group(r);
    case SR_EP_SGL_DESTROY_GROUP:
        return destroy_group(r);
    case SR_EP_SGL_UPDATE_DIST:
        return update_distributed(r);
    case SR_EP_SGL_UPDATE_TENSOR:
        return update_tensor(r);
    case SR_EP_SGL_UPDATE_DISK:
        return update_disk(r);
    case SR_EP_UPDATE_VERSION:
        return update_version(r);
    case SR_EP_SGL_WEIGHT_VERSION:
        snprintf(out, sizeof(out), "{\"weight_version\":\"%lld\"}",
                 (long long)sr_engine_version(r->srv->e));
        return sr_srv_ok(r, out);
    case SR_EP_SGL_PAUSE:
        rc = sr_sgl_req_pause(&mode, body(r), r->body.len, &err);
        if (rc)
            return answer(r, rc, &err, "");
        /* retract puts running requests back in the queue, in_place keeps them where they are:
         * both resume with their tokens after continue_generation, as keep does here. */
        return sr_srv_pause_mode(r, mode == SR_SGL_ABORT ? "abort" : "keep");
    case SR_EP_SGL_CONTINUE:
        return sr_srv_resume(r);
    case SR_EP_SGL_RELEASE_MEMORY:
        return memory(r, 1);
    case SR_EP_SGL_RESUME_MEMORY:
        return memory(r, 0);
    default:
        return reply(r, 404, SR_E_ENGINE_REQUEST, "Not Found");
    }
}
