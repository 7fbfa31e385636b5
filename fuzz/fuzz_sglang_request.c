/*
 * libFuzzer target for the bodies of the sglang control plane's routes (harness/engine/sgl_req.h):
 * the first byte picks the parser (init_weights_update_group, update_weights_from_distributed,
 * update_weights_from_tensor, update_weights_from_disk, destroy_weights_update_group,
 * pause_generation, the memory tags, update_weight_version), the rest is the body. A rejected body
 * must carry engine.bad_request (or resource.nomem) with a message; an accepted one fields within
 * their bounds: NUL-terminated strings that fit, ports, ranks and counts in range, versions -1 or
 * 0..SR_SGL_MAX_VERSION, a mode in the enum, tags within the mask. Every outcome then steps the
 * sglang table (harness/engine/sync_table.h), whose cells must all exist.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sgl_req.h"
#include "engine/sync_table.h"
#include "sr_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rejected(int rc, const sr_err *err)
{
    if ((rc != SR_E_ENGINE_REQUEST && rc != SR_E_NOMEM) || rc != err->code || !err->msg[0])
        abort();
}

static void check_str(const char *s, size_t cap, int may_be_empty)
{
    size_t n = strnlen(s, cap);
    if (n >= cap || (!may_be_empty && n == 0))
        abort();
}

static void check_version(int64_t v)
{
    if (v < -1 || v > SR_SGL_MAX_VERSION)
        abort();
}

static void check_bool(int b)
{
    if (b != 0 && b != 1)
        abort();
}

static int parse(unsigned which, const char *body, size_t len, sr_err *err)
{
    int rc;
    switch (which % 8) {
    case 0: {
        sr_sgl_init q;
        rc = sr_sgl_req_init(&q, body, len, err);
        if (!rc) {
            check_str(q.master_address, sizeof(q.master_address), 0);
            check_str(q.group_name, sizeof(q.group_name), 0);
            check_str(q.backend, sizeof(q.backend), 0);
            if (q.master_port < 0 || q.master_port > 65535 || q.world_size < 1 ||
                q.world_size > SR_SGL_MAX_WORLD || q.rank_offset < 0 ||
                q.rank_offset >= q.world_size)
                abort();
        }
        return rc;
    }
    case 1: {
        sr_sgl_dist q;
        rc = sr_sgl_req_dist(&q, body, len, err);
        if (!rc) {
            check_str(q.group_name, sizeof(q.group_name), 0);
            check_version(q.weight_version);
            check_bool(q.flush_cache);
            check_bool(q.abort_all_requests);
            if (q.n < 0 || q.n > SR_SGL_MAX_TENSORS)
                abort();
        }
        return rc;
    }
    case 2: {
        sr_sgl_tensor q;
        rc = sr_sgl_req_tensor(&q, body, len, err);
        if (!rc) {
            check_version(q.weight_version);
            if (q.n < 0 || q.n > SR_SGL_MAX_WORLD)
                abort();
        }
        return rc;
    }
    case 3: {
        sr_sgl_disk q;
        rc = sr_sgl_req_disk(&q, body, len, err);
        if (!rc) {
            check_str(q.model_path, sizeof(q.model_path), 0);
            check_str(q.load_format, sizeof(q.load_format), 1);
            check_version(q.weight_version);
        }
        return rc;
    }
    case 4: {
        char g[SR_SGL_NAME_MAX];
        rc = sr_sgl_req_destroy(g, body, len, err);
        if (!rc)
            check_str(g, sizeof(g), 0);
        return rc;
    }
    case 5: {
        sr_sgl_pause_mode m;
        rc = sr_sgl_req_pause(&m, body, len, err);
        if (!rc && (m < SR_SGL_ABORT || m > SR_SGL_IN_PLACE))
            abort();
        return rc;
    }
    case 6: {
        unsigned mask;
        rc = sr_sgl_req_tags(&mask, body, len, err);
        if (!rc && (mask & ~SR_SGL_TAG_ALL))
            abort();
        return rc;
    }
    default: {
        int64_t v;
        int all;
        rc = sr_sgl_req_version(&v, &all, body, len, err);
        if (!rc && (v < 0 || v > SR_SGL_MAX_VERSION || (all != 0 && all != 1)))
            abort();
        return rc;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    sr_err err = SR_ERR_INIT;
    int rc = parse(data[0], (const char *)data + 1, size - 1, &err);
    if (rc)
        check_rejected(rc, &err);
    for (int s = 0; s < SR_SS_COUNT; s++) {
        const sr_sync_cell *c = sr_sync_table_cell(SR_SYNC_DIALECT_SGLANG, (sr_sync_state)s,
                                                   (sr_sync_call)(data[0] % SR_SC_COUNT));
        if (!c || (c->code && !c->msg) || (unsigned)c->next >= SR_SS_COUNT)
            abort();
    }
    return 0;
}
