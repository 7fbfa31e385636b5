/* The bodies of vLLM's native weight-transfer routes (sync_req.h). */
#include "sync_req.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sr_sync_req_no_nul(const char *body, size_t len, const char *what, sr_err *err)
{
    /* A raw NUL first, wherever it is (also right after a backslash, which the walk skips). */
    const char *z = body ? memchr(body, '\0', len) : NULL;
    if (z)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "%s: the body holds a NUL byte at byte %zu, which JSON text cannot", what,
                          (size_t)(z - body));
    int in_str = 0;
    for (size_t i = 0; body && i < len; i++) {
        char c = body[i];
        if (!in_str) {
            in_str = c == '"';
        } else if (c == '"') {
            in_str = 0;
        } else if (c == '\\' && i + 1 < len) {
            if (len - i >= 6 && memcmp(body + i + 1, "u0000", 5) == 0)
                return sr_err_set(err, SR_E_ENGINE_REQUEST,
                                  "%s: a JSON string holds an escaped NUL (\\u0000) at byte %zu; "
                                  "a version, name or path cannot hold one (it would end there)",
                                  what, i);
            i++;
        }
    }
    return 0;
}

/* The body as a JSON object; an empty body is {} when `empty_ok`. */
static int object_of(cJSON **out, const char *body, size_t len, int empty_ok, sr_err *err)
{
    *out = NULL;
    if (!len && empty_ok) {
        *out = cJSON_CreateObject();
        return *out ? 0 : sr_err_set(err, SR_E_NOMEM, "cannot parse a request body");
    }
    cJSON *o = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "the request body must be a JSON object");
    }
    *out = o;
    return 0;
}

/* A version: an integer 0..SR_SYNC_REQ_MAX_VERSION or a string of its decimal digits. */
static int version_of(int64_t *v, const cJSON *x, const char *field, sr_err *err)
{
    if (cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble) && x->valuedouble >= 0 &&
        x->valuedouble <= SR_SYNC_REQ_MAX_VERSION) {
        *v = (int64_t)x->valuedouble;
        return 0;
    }
    if (cJSON_IsString(x)) {
        const char *s = x->valuestring;
        size_t n = strlen(s);
        int digits = n >= 1 && n <= 10;
        for (size_t i = 0; digits && i < n; i++)
            digits = isdigit((unsigned char)s[i]) != 0;
        long long val = digits ? strtoll(s, NULL, 10) : -1;
        if (digits && val <= SR_SYNC_REQ_MAX_VERSION) {
            *v = val;
            return 0;
        }
    }
    return sr_err_set(err, SR_E_ENGINE_REQUEST,
                      "%s must be a weight version: an integer 0..%d or a string of its digits",
                      field, SR_SYNC_REQ_MAX_VERSION);
}

int sr_sync_req_start(const char *body, size_t len, sr_err *err)
{
    cJSON *o;
    int rc = object_of(&o, body, len, 1, err);
    cJSON_Delete(o);
    return rc;
}

int sr_sync_req_finish(int64_t *version, const char *body, size_t len, sr_err *err)
{
    *version = -1;
    cJSON *o;
    int rc = object_of(&o, body, len, 1, err);
    const cJSON *x = rc ? NULL : cJSON_GetObjectItemCaseSensitive(o, "weight_version");
    if (x && !cJSON_IsNull(x))
        rc = version_of(version, x, "weight_version", err);
    cJSON_Delete(o);
    return rc;
}

int sr_sync_req_version(int64_t *version, const char *body, size_t len, sr_err *err)
{
    cJSON *o;
    int rc = object_of(&o, body, len, 0, err);
    const cJSON *x = rc ? NULL : cJSON_GetObjectItemCaseSensitive(o, "new_version");
    if (!rc && !x)
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST, "update_weight_version needs \"new_version\"");
    else if (!rc)
        rc = version_of(version, x, "new_version", err);
    cJSON_Delete(o);
    return rc;
}

/* A version as vLLM's current form takes it: an opaque string (or an integer, as its digits);
 * *v the integer it names, or -1 for a label that names none. */
static int label_of(int64_t *v, char *label, const cJSON *x, const char *field, sr_err *err)
{
    *v = -1;
    if (cJSON_IsNumber(x)) {
        int rc = version_of(v, x, field, err);
        if (!rc)
            snprintf(label, SR_SYNC_REQ_LABEL_MAX, "%lld", (long long)*v);
        return rc;
    }
    size_t n = cJSON_IsString(x) ? strlen(x->valuestring) : 0;
    if (n == 0 || n >= SR_SYNC_REQ_LABEL_MAX)
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "%s must be a weight version: a string of 1..%d bytes (an opaque label "
                          "such as \"step-42\") or an integer 0..%d",
                          field, SR_SYNC_REQ_LABEL_MAX - 1, SR_SYNC_REQ_MAX_VERSION);
    size_t digits = strspn(x->valuestring, "0123456789");
    if (digits == n) {
        int rc = version_of(v, x, field, err);
        if (rc)
            return rc;
    }
    memcpy(label, x->valuestring, n + 1);
    return 0;
}

int sr_sync_req_finish_label(int64_t *version, char *label, const char *body, size_t len,
                             sr_err *err)
{
    *version = -1;
    label[0] = '\0';
    cJSON *o;
    int rc = object_of(&o, body, len, 1, err);
    const cJSON *x = rc ? NULL : cJSON_GetObjectItemCaseSensitive(o, "weight_version");
    if (x && !cJSON_IsNull(x))
        rc = label_of(version, label, x, "weight_version", err);
    cJSON_Delete(o);
    if (rc)
        label[0] = '\0';
    return rc;
}

int sr_sync_req_version_label(int64_t *version, char *label, const char *body, size_t len,
                              sr_err *err)
{
    *version = -1;
    label[0] = '\0';
    cJSON *o;
    int rc = object_of(&o, body, len, 0, err);
    const cJSON *x = rc ? NULL : cJSON_GetObjectItemCaseSensitive(o, "new_version");
    if (!rc && !x)
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST, "update_weight_version needs \"new_version\"");
    else if (!rc)
        rc = label_of(version, label, x, "new_version", err);
    cJSON_Delete(o);
    if (rc)
        label[0] = '\0';
    return rc;
}

/* The keys vllm#50902 moved from update_info to init_info (sync_req.h). */
static const char *const MOVED[] = {"packed", "packed_buffer_size_bytes", "packed_num_buffers"};
#define N_MOVED (sizeof(MOVED) / sizeof(MOVED[0]))

/* The first moved key `o` holds, or NULL. */
static const char *moved_key(const cJSON *o)
{
    for (size_t i = 0; i < N_MOVED; i++)
        if (cJSON_GetObjectItemCaseSensitive(o, MOVED[i]))
            return MOVED[i];
    return NULL;
}

int sr_sync_req_wire_init(const cJSON *init_info, sr_sync_api v, sr_err *err)
{
    const char *k = moved_key(init_info);
    if (k && v == SR_SYNC_API_31943)
        return sr_err_set(err, SR_E_SYNC_WIRE_VERSION,
                          "Invalid init_info for NCCLWeightTransferEngine: unexpected keyword "
                          "argument '%s' (this engine speaks engines.sync_version \"vllm#31943\", "
                          "where '%s' rides in every update_info; vllm#50902 moved it to the "
                          "init_info)",
                          k, k);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(init_info, "packed");
    if (p && !cJSON_IsBool(p))
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "init_info.packed must be a boolean");
    for (size_t i = 1; i < N_MOVED; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(init_info, MOVED[i]);
        if (x && !(cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble) &&
                   x->valuedouble >= 1 && x->valuedouble <= 9007199254740992.0))
            return sr_err_set(err, SR_E_ENGINE_REQUEST, "init_info.%s must be an integer 1..2^53",
                              MOVED[i]);
    }
    return 0;
}

int sr_sync_req_wire_update(const cJSON *update_info, sr_sync_api v, const char *call, sr_err *err)
{
    const char *k = moved_key(update_info);
    if (k && v == SR_SYNC_API_50902)
        return sr_err_set(err, SR_E_SYNC_WIRE_VERSION,
                          "%s: Invalid update_info for NCCLWeightTransferEngine: unexpected "
                          "keyword argument '%s' (vllm#50902 moved '%s' to the init_info of "
                          "/init_weight_transfer_engine; the update_info carries names, "
                          "dtype_names and shapes only)",
                          call, k, k);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(update_info, "packed");
    if (p && !cJSON_IsBool(p))
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "%s: update_info.packed must be a boolean",
                          call);
    return 0;
}

static int hex_digest(const char *s)
{
    if (strlen(s) != SR_SYNC_REQ_DIGEST_HEX)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isxdigit((unsigned char)*p))
            return 0;
    return 1;
}

static int baseline_of(sr_checker_req *out, const cJSON *b, sr_err *err)
{
    if (!cJSON_IsObject(b))
        return sr_err_set(err, SR_E_ENGINE_REQUEST,
                          "action 'compare' requires a 'baseline' object");
    int n = cJSON_GetArraySize(b);
    if (n > SR_SYNC_REQ_MAX_BASELINE)
        return sr_err_set(err, SR_E_ENGINE_REQUEST, "baseline names %d tensors, at most %d", n,
                          SR_SYNC_REQ_MAX_BASELINE);
    out->baseline = calloc(n ? (size_t)n : 1, sizeof(*out->baseline));
    if (!out->baseline)
        return sr_err_set(err, SR_E_NOMEM, "cannot hold a baseline of %d tensors", n);
    const cJSON *x;
    cJSON_ArrayForEach(x, b)
    {
        size_t nl = strlen(x->string);
        if (nl == 0 || nl >= SR_SYNC_REQ_NAME_MAX || !cJSON_IsString(x) ||
            !hex_digest(x->valuestring))
            return sr_err_set(
                err, SR_E_ENGINE_REQUEST,
                "baseline entry %zu: a tensor name of 1..%d bytes with a %d-digit hex "
                "checksum",
                out->n_baseline, SR_SYNC_REQ_NAME_MAX - 1, SR_SYNC_REQ_DIGEST_HEX);
        sr_checker_entry *e = &out->baseline[out->n_baseline++];
        memcpy(e->name, x->string, nl + 1);
        for (int i = 0; i <= SR_SYNC_REQ_DIGEST_HEX; i++)
            e->digest[i] = (char)tolower((unsigned char)x->valuestring[i]);
    }
    return 0;
}

int sr_sync_req_checker(sr_checker_req *out, const char *body, size_t len, sr_err *err)
{
    *out = (sr_checker_req)SR_CHECKER_REQ_INIT;
    cJSON *o;
    int rc = object_of(&o, body, len, 0, err);
    const cJSON *a = rc ? NULL : cJSON_GetObjectItemCaseSensitive(o, "action");
    const char *s = cJSON_IsString(a) ? a->valuestring : "";
    if (!rc && strcmp(s, "checksum") == 0)
        out->action = SR_CHECK_CHECKSUM;
    else if (!rc && strcmp(s, "reset") == 0)
        out->action = SR_CHECK_RESET;
    else if (!rc && strcmp(s, "compare") == 0) {
        out->action = SR_CHECK_COMPARE;
        rc = baseline_of(out, cJSON_GetObjectItemCaseSensitive(o, "baseline"), err);
    } else if (!rc)
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST, "action must be one of checksum|reset|compare");
    cJSON_Delete(o);
    if (rc)
        sr_checker_req_release(out);
    return rc;
}

void sr_checker_req_release(sr_checker_req *r)
{
    free(r->baseline);
    *r = (sr_checker_req)SR_CHECKER_REQ_INIT;
}

int sr_sync_req_abort(sr_abort_req *out, const char *body, size_t len, sr_err *err)
{
    *out = (sr_abort_req)SR_ABORT_REQ_INIT;
    cJSON *o = cJSON_ParseWithLength(body, len);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(o, "request_ids");
    int n = cJSON_GetArraySize(ids), rc = 0;
    if (!cJSON_IsObject(o))
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST, "JSON decode error: the body is not an object");
    else if (!ids || cJSON_IsNull(ids))
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST, "Missing 'request_ids' in request body");
    else if (!cJSON_IsArray(ids) || n > SR_SYNC_REQ_MAX_ABORT_IDS)
        rc = sr_err_set(err, SR_E_ENGINE_REQUEST,
                        "'request_ids' must be a list of at most %d request ids",
                        SR_SYNC_REQ_MAX_ABORT_IDS);
    else if (!(out->ids = calloc(n ? (size_t)n : 1, sizeof(*out->ids))))
        rc = sr_err_set(err, SR_E_NOMEM, "cannot hold %d request ids", n);
    const cJSON *x;
    const cJSON *arr = rc ? NULL : ids;
    cJSON_ArrayForEach(x, arr)
    {
        size_t k = cJSON_IsString(x) ? strlen(x->valuestring) : 0;
        if (k == 0 || k >= SR_SYNC_REQ_ID_MAX) {
            rc = sr_err_set(err, SR_E_ENGINE_REQUEST,
                            "request_ids[%zu] must be a string of 1..%d bytes", out->n,
                            SR_SYNC_REQ_ID_MAX - 1);
            break;
        }
        memcpy(out->ids[out->n++], x->valuestring, k + 1);
    }
    cJSON_Delete(o);
    if (rc)
        sr_abort_req_release(out);
    return rc;
}

void sr_abort_req_release(sr_abort_req *r)
{
    free(r->ids);
    *r = (sr_abort_req)SR_ABORT_REQ_INIT;
}
