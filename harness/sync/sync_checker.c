/* The vllm control plane's weight checker after a sync: every engine compares what it holds with
 * the trainer's digests (sync.h, opts.control). Uses phase.c only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sync_priv.h"

#define MISMATCHES_LISTED 4 /* tensor names in a finding; the rest are counted */

/* {"action":"compare","baseline":{name: "<xxh3-128 hex>", ...}} of the trainer's weights. */
static int baseline_body(sr_buf *b, const sr_weights *w, sr_err *err)
{
    int rc = sr_buf_puts(b, "{\"action\":\"compare\",\"baseline\":{", err);
    for (size_t i = 0; !rc && i < sr_weights_count(w); i++) {
        sr_weights_info t;
        rc = sr_weights_tensor(&t, w, i, err);
        if (rc)
            break;
        /* "name":"<hex>" by hand: a printf a tensor was most of the body's time. */
        char hex[36] = {'"', ':', '"'};
        sync_digest_hex(hex + 3, t.digest_hi, t.digest_lo);
        hex[35] = '"';
        rc = sr_buf_append(b, i ? ",\"" : "\"", i ? 2 : 1, err);
        if (!rc)
            rc = sr_buf_append(b, t.name, strlen(t.name), err);
        if (!rc)
            rc = sr_buf_append(b, hex, sizeof(hex), err);
    }
    return rc ? rc : sr_buf_puts(b, "}}", err);
}

/* Records engine i's compare answer: nothing when it matched, else sync.partial_update naming
 * the first tensors that differ. */
static void judge(sr_sync *s, sr_sync_result *res, int i, const sr_fanout_req *r)
{
    if (r->code) {
        sync_check(res, sync_code(r), i, -1,
                   "engine %d (%s): POST /weight_checker (phase verify): %s", i,
                   sr_fanout_url(s->fan, i), r->msg);
        return;
    }
    cJSON *d = cJSON_ParseWithLength(r->resp.data, r->resp.len);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(d, "match");
    const cJSON *mis = cJSON_GetObjectItemCaseSensitive(d, "mismatches");
    if (cJSON_IsTrue(m)) {
        cJSON_Delete(d);
        return;
    }
    char names[512] = "";
    int n = cJSON_GetArraySize(mis), listed = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, mis)
    {
        if (listed >= MISMATCHES_LISTED || !cJSON_IsString(x))
            break;
        size_t len = strlen(names);
        snprintf(names + len, sizeof(names) - len, "%s%.80s", listed++ ? ", " : "", x->valuestring);
    }
    if (!cJSON_IsBool(m))
        sync_check(res, SR_E_SYNC_FAILED, i, -1,
                   "engine %d (%s): POST /weight_checker (phase verify): not a compare answer", i,
                   sr_fanout_url(s->fan, i));
    else
        sync_check(res, SR_E_SYNC_PARTIAL, i, -1,
                   "engine %d (%s): weight_checker compare: %d tensors differ from the published "
                   "bytes (%s%s)",
                   i, sr_fanout_url(s->fan, i), n, names, n > listed ? ", ..." : "");
    res->engines[i].ok = 0;
    cJSON_Delete(d);
}

int sr_sync_check_weights(sr_sync_result *res, sr_sync *s, int *asked, sr_err *err)
{
    if (asked)
        *asked = 0;
    if (!res || !s)
        return sr_err_set(err, SR_E_INVAL, "sync: a result and a sync are needed");
    if (!sync_plane_of(s->o.control)->compare)
        return 0;
    if (asked)
        *asked = 1;
    return sync_compare_weights(s, res, err);
}

int sync_compare_weights(sr_sync *s, sr_sync_result *res, sr_err *err)
{
    sr_buf body = SR_BUF_INIT;
    sr_fanout_req *reqs = calloc(s->n, sizeof(*reqs));
    int rc = reqs ? baseline_body(&body, s->w, err)
                  : sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate the weight checks");
    sr_fanout_seg seg = {body.data, body.len};
    for (size_t i = 0; !rc && i < s->n; i++) {
        reqs[i].engine = (int)i;
        reqs[i].path = "/weight_checker";
        reqs[i].segs = &seg;
        reqs[i].nseg = 1;
    }
    int64_t budget;
    double end = sync_phase_end(s, SR_SYNC_VERIFY, &budget);
    if (!rc)
        rc = sr_fanout_run(s->fan, reqs, s->n, 1, end, budget, err);
    for (size_t i = 0; !rc && i < s->n; i++)
        judge(s, res, (int)i, &reqs[i]);
    if (reqs)
        sr_fanout_reqs_release(reqs, s->n);
    free(reqs);
    sr_buf_release(&body);
    return rc;
}
