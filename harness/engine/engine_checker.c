/* vLLM's weight checker on the mock engine's model, and the version it reports: per-tensor digests
 * of what the engine actually holds, a compare against a caller's baseline, a reset that
 * overwrites the model (engine.h). */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "engine_state.h"
#include "jsonw.h"

/* The xxh3-128 digest of tensor i of the model, as 32 hex digits. Called with apply held. */
static int digest_hex(char out[33], const char **name, sr_engine *e, size_t i, sr_err *err)
{
    sr_weights_info t;
    int rc = sr_weights_tensor(&t, e->weights, i, err);
    if (rc)
        return rc;
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)t.digest_hi,
             (unsigned long long)t.digest_lo);
    *name = t.name;
    return 0;
}

int sr_engine_checksums_json(sr_buf *b, sr_engine *e, sr_err *err)
{
    pthread_mutex_lock(&e->apply);
    int rc = sr_buf_puts(b, "{\"checksums\":{", err);
    size_t n = sr_weights_count(e->weights);
    for (size_t i = 0; !rc && i < n; i++) {
        char hex[33];
        const char *name;
        rc = digest_hex(hex, &name, e, i, err);
        if (!rc && i)
            rc = sr_buf_puts(b, ",", err);
        if (!rc)
            rc = sr_jw_str(b, name, err);
        if (!rc)
            rc = sr_buf_printf(b, err, ":\"%s\"", hex);
    }
    pthread_mutex_unlock(&e->apply);
    return rc ? rc : sr_buf_puts(b, "}}", err);
}

/* The baseline entry named `name`, or NULL. A trainer lists the tensors in the engine's order, so
 * entry `hint` is tried first; otherwise a linear search (baselines are bounded). */
static const sr_checker_entry *find(const sr_checker_req *q, const char *name, size_t hint)
{
    if (hint < q->n_baseline && strcmp(q->baseline[hint].name, name) == 0)
        return &q->baseline[hint];
    for (size_t i = 0; i < q->n_baseline; i++)
        if (strcmp(q->baseline[i].name, name) == 0)
            return &q->baseline[i];
    return NULL;
}

int sr_engine_compare_json(sr_buf *b, sr_engine *e, const sr_checker_req *q, sr_err *err)
{
    sr_buf mis = SR_BUF_INIT;
    size_t n = sr_weights_count(e->weights), bad = 0, matched = 0;
    int rc = 0;
    pthread_mutex_lock(&e->apply);
    for (size_t i = 0; !rc && i < n; i++) {
        char hex[33];
        const char *name;
        rc = digest_hex(hex, &name, e, i, err);
        const sr_checker_entry *x = rc ? NULL : find(q, name, i);
        matched += x != NULL;
        if (rc || (x && strcmp(x->digest, hex) == 0))
            continue;
        rc = sr_buf_puts(&mis, bad++ ? "," : "", err);
        if (!rc)
            rc = sr_jw_str(&mis, name, err);
    }
    pthread_mutex_unlock(&e->apply);
    /* Names of the baseline the engine does not hold mismatch too. */
    for (size_t i = 0; !rc && matched < q->n_baseline && i < q->n_baseline; i++) {
        int held = 0;
        for (size_t k = 0; !held && k < n; k++) {
            sr_weights_info t;
            held = !sr_weights_tensor(&t, e->weights, k, NULL) &&
                   strcmp(t.name, q->baseline[i].name) == 0;
        }
        if (!held) {
            rc = sr_buf_puts(&mis, bad++ ? "," : "", err);
            if (!rc)
                rc = sr_jw_str(&mis, q->baseline[i].name, err);
        }
    }
    if (!rc)
        rc = sr_buf_printf(b, err, "{\"match\":%s,\"mismatches\":[", bad ? "false" : "true");
    if (!rc && mis.len)
        rc = sr_buf_append(b, mis.data, mis.len, err);
    sr_buf_release(&mis);
    return rc ? rc : sr_buf_puts(b, "]}", err);
}

int sr_engine_weights_reset(sr_engine *e, sr_err *err)
{
    pthread_mutex_lock(&e->apply);
    int rc = sr_engine_writers_idle(e, "weight_checker reset", err);
    if (!rc)
        rc = sr_weights_reset(e->weights, SR_WEIGHTS_MAX_VERSION, err);
    if (!rc)
        sr_engine_publish_model(e, 0, 1, "reset");
    pthread_mutex_unlock(&e->apply);
    return rc;
}

int sr_engine_set_version(sr_engine *e, int64_t version, sr_err *err)
{
    pthread_mutex_lock(&e->mu);
    sr_sync_call c = version < e->version ? SR_SC_SET_VERSION_BACKWARDS : SR_SC_SET_VERSION;
    int rc = sr_engine_sync_step_locked(e, c, NULL, err);
    if (!rc)
        e->version = version;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

void sr_engine_version_label(sr_engine *e, char *out)
{
    pthread_mutex_lock(&e->mu);
    snprintf(out, SR_SYNC_REQ_LABEL_MAX, "%s", e->version_label[0] ? e->version_label : "default");
    pthread_mutex_unlock(&e->mu);
}

void sr_engine_publish_label(sr_engine *e, const char *label)
{
    if (!label || !label[0])
        return;
    pthread_mutex_lock(&e->mu);
    snprintf(e->version_label, sizeof(e->version_label), "%s", label);
    pthread_mutex_unlock(&e->mu);
}

int sr_engine_set_label(sr_engine *e, const char *label, sr_err *err)
{
    pthread_mutex_lock(&e->mu);
    int rc = sr_engine_sync_step_locked(e, SR_SC_SET_VERSION, NULL, err);
    if (!rc)
        snprintf(e->version_label, sizeof(e->version_label), "%s", label);
    pthread_mutex_unlock(&e->mu);
    return rc;
}
