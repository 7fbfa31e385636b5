/*
 * libFuzzer target for the bodies of the vllm control plane's routes (harness/engine/sync_req.h):
 * the first byte picks the parser (finish_weight_update or start_weight_update,
 * update_weight_version, weight_checker, abort_requests),
 * the rest is the body. Every body first passes the escaped-NUL scan (sr_sync_req_no_nul), which
 * must refuse any NUL byte and name its refusals. A rejected body must carry engine.bad_request (or
 * resource.nomem); an accepted one a version in range, an action in the enum, and a baseline within
 * its bounds whose entries are NUL-terminated names and 32-digit hex digests. Every outcome then
 * drives a step of both control-plane tables (harness/engine/sync_table.h), whose cells must all
 * exist. Bit 32 of the first byte picks the opaque-label parsers of vLLM's current form
 * (sr_sync_req_finish_label, sr_sync_req_version_label): an accepted label is 1..128 bytes, and
 * the integer it names is -1 or a version in range whose digits the label is. Bit 64 also hands
 * the body, parsed as JSON, to the init and update checks of both forms (sr_sync_req_wire_*),
 * which accept it or refuse it engine.bad_request or sync.wire_version.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sync_req.h"
#include "engine/sync_table.h"
#include "sr_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rejected(int rc, const sr_err *err)
{
    if (rc != SR_E_ENGINE_REQUEST && rc != SR_E_NOMEM)
        abort();
    if (rc != err->code || !err->msg[0])
        abort();
}

/* An accepted label: 1..SR_SYNC_REQ_LABEL_MAX-1 bytes; v -1, or the version its digits name. */
static void check_label(int64_t v, const char *label, int finish)
{
    size_t n = strnlen(label, SR_SYNC_REQ_LABEL_MAX);
    if (n >= SR_SYNC_REQ_LABEL_MAX || (n == 0 && !finish) || (n == 0 && v != -1))
        abort();
    if (v < -1 || v > SR_SYNC_REQ_MAX_VERSION)
        abort();
    if (v >= 0 && strtoll(label, NULL, 10) != v)
        abort();
    if (v < 0 && n && strspn(label, "0123456789") == n)
        abort(); /* digits always name their version */
}

/* The wire checks of both forms on the body as JSON (any value; not an object passes). */
static void check_wire(const char *body, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(body, len);
    for (int a = 0; a < SR_SYNC_API_COUNT; a++) {
        sr_err e1 = SR_ERR_INIT, e2 = SR_ERR_INIT;
        int r1 = sr_sync_req_wire_init(o, (sr_sync_api)a, &e1);
        int r2 = sr_sync_req_wire_update(o, (sr_sync_api)a, "fuzz", &e2);
        int rc[2] = {r1, r2};
        const sr_err *er[2] = {&e1, &e2};
        for (int k = 0; k < 2; k++)
            if (rc[k] && ((rc[k] != SR_E_ENGINE_REQUEST && rc[k] != SR_E_SYNC_WIRE_VERSION) ||
                          rc[k] != er[k]->code || !er[k]->msg[0]))
                abort();
    }
    cJSON_Delete(o);
}

static void check_baseline(const sr_checker_req *q)
{
    if (q->n_baseline > SR_SYNC_REQ_MAX_BASELINE || (q->n_baseline && !q->baseline))
        abort();
    for (size_t i = 0; i < q->n_baseline; i++) {
        const sr_checker_entry *e = &q->baseline[i];
        size_t n = strnlen(e->name, sizeof(e->name));
        if (n == 0 || n >= sizeof(e->name) || strlen(e->digest) != SR_SYNC_REQ_DIGEST_HEX)
            abort();
        for (int k = 0; k < SR_SYNC_REQ_DIGEST_HEX; k++)
            if (!isxdigit((unsigned char)e->digest[k]) || isupper((unsigned char)e->digest[k]))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    sr_err err = SR_ERR_INIT;
    int64_t v = -2;
    int rc = sr_sync_req_no_nul(body, len, "fuzz", &err);
    if (rc)
        check_rejected(rc, &err);
    else if (memchr(body, 0, len))
        abort(); /* a NUL byte passed the scan */
    err = (sr_err)SR_ERR_INIT;
    sr_sync_call call = SR_SC_CHECK;
    switch (data[0] % 4) {
    case 3: {
        sr_abort_req q = SR_ABORT_REQ_INIT;
        rc = sr_sync_req_abort(&q, body, len, &err);
        if (!rc && (q.n > SR_SYNC_REQ_MAX_ABORT_IDS || (q.n && !q.ids)))
            abort();
        for (size_t i = 0; !rc && i < q.n; i++)
            if (strnlen(q.ids[i], SR_SYNC_REQ_ID_MAX) - 1 >= SR_SYNC_REQ_ID_MAX - 1)
                abort();
        if (rc && (q.ids || q.n))
            abort(); /* a refused body leaves nothing allocated */
        sr_abort_req_release(&q);
        break;
    }
    case 0:
        if (data[0] & 16) {
            rc = sr_sync_req_start(body, len, &err);
            call = SR_SC_START;
            break;
        }
        if (data[0] & 32) {
            char label[SR_SYNC_REQ_LABEL_MAX];
            rc = sr_sync_req_finish_label(&v, label, body, len, &err);
            if (!rc)
                check_label(v, label, 1);
        } else {
            rc = sr_sync_req_finish(&v, body, len, &err);
        }
        if (!rc && (v < -1 || v > SR_SYNC_REQ_MAX_VERSION))
            abort();
        call = v >= 0 && (data[0] & 8) ? SR_SC_FINISH_BACKWARDS : SR_SC_FINISH;
        break;
    case 1:
        if (data[0] & 32) {
            char label[SR_SYNC_REQ_LABEL_MAX];
            rc = sr_sync_req_version_label(&v, label, body, len, &err);
            if (!rc)
                check_label(v, label, 0);
        } else {
            rc = sr_sync_req_version(&v, body, len, &err);
            if (!rc && v < 0)
                abort();
        }
        if (!rc && v > SR_SYNC_REQ_MAX_VERSION)
            abort();
        call = (data[0] & 8) ? SR_SC_SET_VERSION_BACKWARDS : SR_SC_SET_VERSION;
        break;
    default: {
        sr_checker_req q = SR_CHECKER_REQ_INIT;
        rc = sr_sync_req_checker(&q, body, len, &err);
        if (!rc) {
            if ((unsigned)q.action > SR_CHECK_COMPARE)
                abort();
            check_baseline(&q);
        } else if (q.baseline || q.n_baseline) {
            abort(); /* a refused body leaves nothing allocated */
        }
        sr_checker_req_release(&q);
        call = (data[0] & 8) ? SR_SC_CHECK_PAUSED : SR_SC_CHECK;
        break;
    }
    }
    if (rc)
        check_rejected(rc, &err);
    if (data[0] & 64)
        check_wire(body, len);
    for (int d = 0; d < SR_SYNC_DIALECT_COUNT; d++)
        for (int s = 0; s < SR_SS_COUNT; s++) {
            const sr_sync_cell *c = sr_sync_table_cell((sr_sync_dialect)d, (sr_sync_state)s, call);
            if (!c || (unsigned)c->next >= SR_SS_COUNT || (c->code && !sr_code_name(c->code)))
                abort();
        }
    return 0;
}
