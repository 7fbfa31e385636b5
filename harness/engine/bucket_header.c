/* The header line of a broadcast bucket (bucket_priv.h): its JSON, one entry per tensor, checked
 * against the model before a byte of the payload is accepted. The bytes are untrusted (fuzz_bucket
 * reaches this through bucket.c). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bucket_priv.h"
#include "engine_state.h"
#include "sgl_req.h"
#include "sync_req.h"

int sr_bucket_bad(sr_err *err, const char *call, const char *what)
{
    return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s bucket: %s", call, what);
}

static int hex128(uint64_t *hi, uint64_t *lo, const char *s)
{
    uint64_t w[2] = {0, 0};
    if (strlen(s) != 32)
        return -1;
    for (int i = 0; i < 32; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        w[i / 16] = w[i / 16] << 4 | (uint64_t)v;
    }
    *hi = w[0];
    *lo = w[1];
    return 0;
}

static int get_count(int64_t *out, const cJSON *x, int64_t max)
{
    if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > (double)max ||
        x->valuedouble != (double)(int64_t)x->valuedouble)
        return -1;
    *out = (int64_t)x->valuedouble;
    return 0;
}

/* The header's five parallel lists, walked together (cJSON arrays are linked lists). */
typedef struct cursor {
    const cJSON *name, *dtype, *shape, *size, *checksum;
} cursor;

static void cursor_next(cursor *c)
{
    c->name = c->name ? c->name->next : NULL;
    c->dtype = c->dtype ? c->dtype->next : NULL;
    c->shape = c->shape ? c->shape->next : NULL;
    c->size = c->size ? c->size->next : NULL;
    c->checksum = c->checksum ? c->checksum->next : NULL;
}

/* Checks item i of the header against the model's tensor of that name. */
static int parse_item(bucket_plan *bp, sr_engine *e, const cursor *c, unsigned char *seen, size_t i,
                      size_t *offset, sr_err *err)
{
    bucket_item *it = &bp->items[i];
    sr_weights_info t;
    int64_t nb, d0, d1;
    if (!cJSON_IsString(c->name) || !cJSON_IsString(c->dtype) || !cJSON_IsArray(c->shape) ||
        !cJSON_IsString(c->checksum) || get_count(&nb, c->size, (int64_t)SR_WEIGHTS_MAX_BYTES))
        return sr_bucket_bad(
            err, bp->call,
            "names, dtype_names, shapes, sizes and checksums need one valid entry per "
            "tensor");
    const char *name = c->name->valuestring;
    if (sr_weights_find(&it->index, e->weights, name, NULL) ||
        sr_weights_tensor(&t, e->weights, it->index, err))
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s: unknown tensor '%.200s'", bp->call, name);
    const cJSON *s0 = c->shape->child, *s1 = s0 ? s0->next : NULL;
    if (strcmp(c->dtype->valuestring, sr_dtype_name(t.dtype)) != 0 || !s1 || s1->next ||
        get_count(&d0, s0, INT64_MAX / 2) || get_count(&d1, s1, INT64_MAX / 2) ||
        d0 != t.shape[0] || d1 != t.shape[1] || (size_t)nb != t.nbytes)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "%s: tensor '%s' is %s [%lld, %lld] (%zu bytes) here; the bucket's "
                          "dtype, shape or size differ",
                          bp->call, t.name, sr_dtype_name(t.dtype), (long long)t.shape[0],
                          (long long)t.shape[1], t.nbytes);
    if (hex128(&it->hi, &it->lo, c->checksum->valuestring))
        return sr_bucket_bad(err, bp->call, "a checksum is not 32 lowercase hex digits (xxh3-128)");
    if (seen[it->index]++)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s: tensor '%s' appears twice in the bucket",
                          bp->call, t.name);
    it->offset = *offset;
    it->nbytes = t.nbytes;
    *offset += t.nbytes;
    return 0;
}

static int parse_items(bucket_plan *bp, sr_engine *e, const cJSON *ui, const cJSON *sy, sr_err *err)
{
    cursor c = {cJSON_GetObjectItemCaseSensitive(ui, "names"),
                cJSON_GetObjectItemCaseSensitive(ui, bp->whole ? "dtypes" : "dtype_names"),
                cJSON_GetObjectItemCaseSensitive(ui, "shapes"),
                cJSON_GetObjectItemCaseSensitive(sy, "sizes"),
                cJSON_GetObjectItemCaseSensitive(sy, "checksums")};
    if (!cJSON_IsArray(c.dtype) || !cJSON_IsArray(c.shape) || !cJSON_IsArray(c.size) ||
        !cJSON_IsArray(c.checksum))
        return sr_bucket_bad(err, bp->call,
                             "dtype_names, shapes, sizes and checksums must be arrays");
    c = (cursor){c.name->child, c.dtype->child, c.shape->child, c.size->child, c.checksum->child};
    unsigned char *seen = calloc(sr_weights_count(e->weights) + 1, 1);
    if (!seen)
        return sr_err_set(err, SR_E_NOMEM, "cannot plan a bucket");
    size_t offset = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < bp->n; i++, cursor_next(&c))
        rc = parse_item(bp, e, &c, seen, i, &offset, err);
    if (!rc && (c.dtype || c.shape || c.size || c.checksum))
        rc = sr_bucket_bad(err, bp->call,
                           "dtype_names, shapes, sizes and checksums have more entries than names");
    bp->payload_len = offset;
    free(seen);
    return rc;
}

/* Parses the header line (without its '\n') and checks every tensor it names. */
int sr_bucket_parse_header(bucket_plan *bp, sr_engine *e, const char *text, size_t len, sr_err *err)
{
    int nul = sr_sync_req_no_nul(text, len, bp->call, err);
    cJSON *h = nul ? NULL : cJSON_ParseWithLength(text, len);
    bp->whole = e->cfg.sync_dialect == SR_SYNC_DIALECT_SGLANG;
    const cJSON *m = bp->whole ? NULL : cJSON_GetObjectItemCaseSensitive(h, "method");
    /* skyrl: the collective_rpc call; vllm: the body of its native /update_weights; sglang: the
     * body of its /update_weights_from_distributed. */
    const cJSON *ui = bp->whole ? h
                      : m       ? cJSON_GetObjectItemCaseSensitive(
                                      cJSON_GetObjectItemCaseSensitive(h, "kwargs"), "update_info")
                          : cJSON_GetObjectItemCaseSensitive(h, "update_info");
    const cJSON *sy = cJSON_GetObjectItemCaseSensitive(ui, "syncroll");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(ui, "names");
    sr_sgl_dist sd;
    int rc = nul ? nul : bp->whole ? sr_sgl_req_dist_obj(&sd, h, err) : 0;
    if (!rc && !bp->whole && !m && e->cfg.sync_dialect == SR_SYNC_DIALECT_VLLM)
        rc = sr_sync_req_wire_update(ui, e->cfg.sync_version, bp->call, err); /* vllm#50902 */
    int64_t cnt = cJSON_GetArraySize(names);
    if (rc) {
        /* an escaped NUL, or the sglang body's own keys */
    } else if (m && (!cJSON_IsString(m) || strcmp(m->valuestring, "update_weights_nccl") != 0))
        rc = sr_bucket_bad(err, bp->call, "the header's method must be update_weights_nccl");
    else if (!cJSON_IsObject(sy) || !cJSON_IsArray(names) ||
             cnt > (int64_t)sr_weights_count(e->weights) ||
             get_count(&bp->target, cJSON_GetObjectItemCaseSensitive(sy, "target_version"),
                       SR_WEIGHTS_MAX_VERSION) ||
             get_count(&bp->index, cJSON_GetObjectItemCaseSensitive(sy, "bucket"), INT32_MAX))
        rc = sr_bucket_bad(err, bp->call,
                           "update_info needs names (at most one per tensor) and syncroll "
                           "{target_version, bucket, sizes, checksums}");
    bp->flush = bp->whole && !rc && sd.flush_cache;
    if (!rc && bp->whole && sd.weight_version >= 0 && sd.weight_version != bp->target)
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST,
                        "%s: weight_version \"%lld\" differs from the bucket's "
                        "syncroll.target_version %lld",
                        bp->call, (long long)sd.weight_version, (long long)bp->target);
    bp->n = rc ? 0 : (size_t)cnt;
    bp->items = calloc(bp->n ? bp->n : 1, sizeof(bucket_item));
    if (!rc && !bp->items)
        rc = sr_err_set(err, SR_E_NOMEM, "cannot plan a bucket of %zu tensors", bp->n);
    if (!rc)
        rc = parse_items(bp, e, ui, sy, err);
    cJSON_Delete(h);
    return rc;
}
