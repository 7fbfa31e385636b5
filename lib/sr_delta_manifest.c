#include "sr_delta_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "sr_json.h"

/* Integers in the documents are read through doubles by cJSON; 2^53 keeps them exact. */
#define EXACT_MAX ((int64_t)1 << 53)

void sr_delta_hex128(char out[33], uint64_t hi, uint64_t lo)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[i] = digits[(hi >> (60 - 4 * i)) & 15];
        out[16 + i] = digits[(lo >> (60 - 4 * i)) & 15];
    }
    out[32] = '\0';
}

/* Parses exactly 32 lowercase hex digits; returns 0 or -1. */
static int parse_hex128(const char *s, uint64_t *hi, uint64_t *lo)
{
    uint64_t w[2] = {0, 0};
    for (int i = 0; i < 32; i++) {
        char c = s[i];
        unsigned v;
        if (c >= '0' && c <= '9')
            v = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = (unsigned)(c - 'a' + 10);
        else
            return -1;
        w[i / 16] = (w[i / 16] << 4) | v;
    }
    if (s[32] != '\0')
        return -1;
    *hi = w[0];
    *lo = w[1];
    return 0;
}

int sr_delta_valid_file_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SR_DELTA_FILE_NAME_MAX || s[0] == '.' || strstr(s, ".."))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

void sr_delta_payload_name(char *out, size_t cap, size_t i)
{
    snprintf(out, cap, "payload-%06zu.srdp", i);
}

/* ---- rendering ---- */

static int render_record(sr_buf *b, const sr_delta_out_record *r, sr_err *err)
{
    char file[64], hex[33];
    sr_delta_payload_name(file, sizeof(file), r->file);
    sr_delta_hex128(hex, r->checksum_hi, r->checksum_lo);
    int rc = sr_buf_puts(b, "    {\"name\": ", err);
    rc = rc ? rc : sr_buf_put_json_string(b, r->t->name, err);
    rc = rc ? rc : sr_buf_printf(b, err, ", \"dtype\": \"%s\", \"shape\": [", r->t->dtype);
    for (int d = 0; !rc && d < r->t->ndim; d++)
        rc = sr_buf_printf(b, err, "%s%lld", d ? ", " : "", (long long)r->t->shape[d]);
    rc = rc ? rc
            : sr_buf_printf(b, err,
                            "], \"uncompressed_num_bytes\": %zu, \"compressed_num_bytes\": %llu, "
                            "\"payload_file\": \"%s\", \"payload_key\": ",
                            r->t->nbytes, (unsigned long long)r->compressed, file);
    rc = rc ? rc : sr_buf_put_json_string(b, r->t->name, err);
    return rc ? rc
              : sr_buf_printf(b, err, ", \"checksum\": \"%s\", \"checksum_algorithm\": \"%s\"}",
                              hex, SR_DELTA_CHECKSUM_ALGORITHM);
}

int sr_delta_manifest_render(sr_buf *out, int64_t version, int64_t base_version,
                             const sr_delta_out_record *recs, size_t n, size_t n_files, sr_err *err)
{
    uint64_t tu = 0, tc = 0;
    int rc = sr_buf_printf(out, err, "{\n  \"version\": %lld,\n  \"base_version\": %lld,\n",
                           (long long)version, (long long)base_version);
    rc = rc ? rc : sr_buf_puts(out, n ? "  \"tensors\": [\n" : "  \"tensors\": [", err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = render_record(out, &recs[i], err);
        rc = rc ? rc : sr_buf_puts(out, i + 1 < n ? ",\n" : "\n  ", err);
        tu += recs[i].t->nbytes;
        tc += recs[i].compressed;
    }
    rc = rc ? rc
            : sr_buf_printf(out, err,
                            "],\n  \"total_uncompressed_num_bytes\": %llu,\n"
                            "  \"total_compressed_num_bytes\": %llu,\n  \"payload_files\": [",
                            (unsigned long long)tu, (unsigned long long)tc);
    for (size_t i = 0; !rc && i < n_files; i++) {
        char file[64];
        sr_delta_payload_name(file, sizeof(file), i);
        rc = sr_buf_printf(out, err, "%s\"%s\"", i ? ", " : "", file);
    }
    return rc ? rc : sr_buf_puts(out, "]\n}\n", err);
}

size_t sr_delta_state_render(char *buf, size_t cap, const sr_delta_state *s)
{
    int n = snprintf(buf, cap,
                     "{\"version\": %lld, \"write_in_progress\": %s, "
                     "\"target_version\": %lld}\n",
                     (long long)s->version, s->write_in_progress ? "true" : "false",
                     (long long)s->target_version);
    return n < 0 ? 0 : (size_t)n;
}

/* ---- parsing ---- */

/* A payload file name and its position in payload_files. */
typedef struct file_slot {
    const char *name;
    size_t index;
} file_slot;

typedef struct mctx {
    sr_json_doc *doc;
    sr_delta_manifest *m;
    file_slot *sorted_files; /* payload_files sorted by name, for lookups */
    sr_err *err;
} mctx;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_file(const void *a, const void *b)
{
    return strcmp(((const file_slot *)a)->name, ((const file_slot *)b)->name);
}

static int str_member(const mctx *c, const cJSON *obj, const char *key, size_t max,
                      const char **out)
{
    int rc = sr_json_get_string(c->doc, obj, key, 1, NULL, out, c->err);
    if (rc)
        return rc;
    size_t n = strlen(*out);
    if (n == 0 || n > max)
        return sr_json_error(c->doc, cJSON_GetObjectItemCaseSensitive(obj, key), c->err,
                             SR_E_DELTA_MANIFEST, "'%s' must hold 1..%zu bytes", key, max);
    return 0;
}

static int parse_shape(const mctx *c, const cJSON *rec, sr_delta_record *r)
{
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(rec, "shape");
    if (!shape)
        return sr_json_error(c->doc, rec, c->err, SR_E_DELTA_MANIFEST,
                             "missing required key 'shape'");
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > SR_NDIM_MAX)
        return sr_json_error(c->doc, shape, c->err, SR_E_DELTA_MANIFEST,
                             "'shape' must be an array of at most %d dimensions", SR_NDIM_MAX);
    r->ndim = 0;
    for (const cJSON *d = shape->child; d; d = d->next) {
        if (!cJSON_IsNumber(d) || !sr_json_is_integer_literal(c->doc, d) || d->valuedouble < 0 ||
            d->valuedouble > (double)EXACT_MAX)
            return sr_json_error(c->doc, d, c->err, SR_E_DELTA_MANIFEST,
                                 "a shape dimension must be a non-negative integer");
        r->shape[r->ndim++] = (int64_t)d->valuedouble;
    }
    return 0;
}

static int parse_record(const mctx *c, const cJSON *rec, sr_delta_record *r)
{
    static const char *const keys[] = {
        "name",         "dtype",       "shape",    "uncompressed_num_bytes", "compressed_num_bytes",
        "payload_file", "payload_key", "checksum", "checksum_algorithm",     NULL};
    sr_json_doc *doc = c->doc;
    int rc = sr_json_check_keys(doc, rec, "a tensor record", keys, c->err);
    rc = rc ? rc : str_member(c, rec, "name", SR_DELTA_NAME_MAX, &r->name);
    rc = rc ? rc : str_member(c, rec, "dtype", 32, &r->dtype);
    if (rc)
        return rc;
    size_t item = sr_delta_dtype_size(r->dtype);
    if (!item)
        return sr_json_error(doc, cJSON_GetObjectItemCaseSensitive(rec, "dtype"), c->err,
                             SR_E_DELTA_MANIFEST, "unknown dtype '%s'", r->dtype);
    rc = parse_shape(c, rec, r);
    int64_t u, z;
    rc = rc ? rc
            : sr_json_get_int(doc, rec, "uncompressed_num_bytes", 1, 0,
                              (int64_t)SR_DELTA_MAX_TENSOR_BYTES, 0, &u, c->err);
    if (rc)
        return rc;
    size_t want;
    if (sr_shape_bytes(&want, NULL, r->shape, r->ndim, item, NULL) != 0 || want != (uint64_t)u)
        return sr_json_error(doc, cJSON_GetObjectItemCaseSensitive(rec, "uncompressed_num_bytes"),
                             c->err, SR_E_DELTA_MANIFEST,
                             "uncompressed_num_bytes %lld differs from the shape's byte count",
                             (long long)u);
    rc = sr_json_get_int(doc, rec, "compressed_num_bytes", 1, 1,
                         (int64_t)ZSTD_compressBound((size_t)u), 1, &z, c->err);
    rc = rc ? rc : str_member(c, rec, "payload_file", SR_DELTA_FILE_NAME_MAX, &r->payload_file);
    rc = rc ? rc : str_member(c, rec, "payload_key", SR_DELTA_NAME_MAX, &r->payload_key);
    if (rc)
        return rc;
    r->uncompressed_num_bytes = (uint64_t)u;
    r->compressed_num_bytes = (uint64_t)z;
    file_slot key = {r->payload_file, 0};
    const file_slot *f =
        bsearch(&key, c->sorted_files, c->m->n_payload_files, sizeof(file_slot), cmp_file);
    if (f)
        r->payload_file_index = f->index;
    else
        return sr_json_error(doc, cJSON_GetObjectItemCaseSensitive(rec, "payload_file"), c->err,
                             SR_E_DELTA_MANIFEST, "payload_file '%s' is not in payload_files",
                             r->payload_file);
    const char *sum, *alg;
    rc = sr_json_get_string(doc, rec, "checksum", 1, NULL, &sum, c->err);
    if (!rc && parse_hex128(sum, &r->checksum_hi, &r->checksum_lo) != 0)
        rc = sr_json_error(doc, cJSON_GetObjectItemCaseSensitive(rec, "checksum"), c->err,
                           SR_E_DELTA_MANIFEST, "checksum must be 32 lowercase hex digits");
    rc = rc ? rc : sr_json_get_string(doc, rec, "checksum_algorithm", 1, NULL, &alg, c->err);
    if (!rc && strcmp(alg, SR_DELTA_CHECKSUM_ALGORITHM) != 0)
        rc = sr_json_error(doc, cJSON_GetObjectItemCaseSensitive(rec, "checksum_algorithm"), c->err,
                           SR_E_DELTA_MANIFEST, "checksum_algorithm must be '%s'",
                           SR_DELTA_CHECKSUM_ALGORITHM);
    return rc;
}

static int parse_files(mctx *c, const cJSON *root)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "payload_files");
    if (!files)
        return sr_json_error(c->doc, root, c->err, SR_E_DELTA_MANIFEST,
                             "missing required key 'payload_files'");
    int count = cJSON_IsArray(files) ? cJSON_GetArraySize(files) : -1;
    if (count < 0 || (size_t)count > SR_DELTA_MAX_PAYLOAD_FILES)
        return sr_json_error(c->doc, files, c->err, SR_E_DELTA_MANIFEST,
                             "'payload_files' must be an array of at most %zu names",
                             SR_DELTA_MAX_PAYLOAD_FILES);
    size_t n = (size_t)count;
    c->m->payload_files = calloc(n ? n : 1, sizeof(char *));
    c->sorted_files = calloc(n ? n : 1, sizeof(file_slot));
    if (!c->m->payload_files || !c->sorted_files)
        return sr_err_set(c->err, SR_E_NOMEM, "cannot allocate %zu payload file names", n);
    size_t i = 0;
    for (const cJSON *f = files->child; f; f = f->next, i++) {
        if (!cJSON_IsString(f) || !sr_delta_valid_file_name(f->valuestring))
            return sr_json_error(c->doc, f, c->err, SR_E_DELTA_MANIFEST,
                                 "a payload file must be a plain file name (no '/', no '..', "
                                 "not starting with '.', [A-Za-z0-9._-])");
        c->m->payload_files[i] = f->valuestring;
        c->sorted_files[i] = (file_slot){f->valuestring, i};
    }
    c->m->n_payload_files = n;
    qsort(c->sorted_files, n, sizeof(file_slot), cmp_file);
    for (i = 1; i < n; i++) {
        if (strcmp(c->sorted_files[i - 1].name, c->sorted_files[i].name) == 0)
            return sr_json_error(c->doc, files, c->err, SR_E_DELTA_MANIFEST,
                                 "payload file '%s' is listed twice", c->sorted_files[i].name);
    }
    return 0;
}

/* Fails at the first tensor name that appears twice. */
static int check_unique_names(const mctx *c, const cJSON *tensors)
{
    size_t n = c->m->n_tensors;
    const char **names = malloc((n ? n : 1) * sizeof(char *));
    if (!names)
        return sr_err_set(c->err, SR_E_NOMEM, "cannot sort %zu tensor names", n);
    for (size_t i = 0; i < n; i++)
        names[i] = c->m->tensors[i].name;
    qsort(names, n, sizeof(char *), cmp_str);
    int rc = 0;
    for (size_t i = 1; i < n && !rc; i++) {
        if (strcmp(names[i - 1], names[i]) == 0)
            rc = sr_json_error(c->doc, tensors, c->err, SR_E_DELTA_MANIFEST,
                               "tensor '%s' appears twice", names[i]);
    }
    free(names);
    return rc;
}

static int parse_tensors(mctx *c, const cJSON *root)
{
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    if (!tensors)
        return sr_json_error(c->doc, root, c->err, SR_E_DELTA_MANIFEST,
                             "missing required key 'tensors'");
    int count = cJSON_IsArray(tensors) ? cJSON_GetArraySize(tensors) : -1;
    if (count < 0 || (size_t)count > SR_DELTA_MAX_TENSORS)
        return sr_json_error(c->doc, tensors, c->err, SR_E_DELTA_MANIFEST,
                             "'tensors' must be an array of at most %zu records",
                             SR_DELTA_MAX_TENSORS);
    size_t n = (size_t)count;
    c->m->tensors = calloc(n ? n : 1, sizeof(sr_delta_record));
    if (!c->m->tensors)
        return sr_err_set(c->err, SR_E_NOMEM, "cannot allocate %zu tensor records", n);
    size_t i = 0;
    uint64_t tu = 0, tc = 0;
    for (const cJSON *rec = tensors->child; rec; rec = rec->next, i++) {
        int rc = parse_record(c, rec, &c->m->tensors[i]);
        if (rc)
            return rc;
        /* Each term is below 2^41 and there are at most 2^20: the sums cannot overflow. */
        tu += c->m->tensors[i].uncompressed_num_bytes;
        tc += c->m->tensors[i].compressed_num_bytes;
    }
    c->m->n_tensors = n;
    int rc = check_unique_names(c, tensors);
    int64_t su, sc;
    rc = rc ? rc
            : sr_json_get_int(c->doc, root, "total_uncompressed_num_bytes", 1, 0, INT64_MAX, 0, &su,
                              c->err);
    rc = rc ? rc
            : sr_json_get_int(c->doc, root, "total_compressed_num_bytes", 1, 0, INT64_MAX, 0, &sc,
                              c->err);
    if (rc)
        return rc;
    if ((uint64_t)su != tu || (uint64_t)sc != tc)
        return sr_json_error(
            c->doc, cJSON_GetObjectItemCaseSensitive(root, "total_compressed_num_bytes"), c->err,
            SR_E_DELTA_MANIFEST, "totals %lld/%lld differ from the records' sums %llu/%llu",
            (long long)su, (long long)sc, (unsigned long long)tu, (unsigned long long)tc);
    c->m->total_uncompressed_num_bytes = tu;
    c->m->total_compressed_num_bytes = tc;
    return 0;
}

static int parse_manifest_doc(mctx *c)
{
    static const char *const keys[] = {"version",
                                       "base_version",
                                       "tensors",
                                       "total_uncompressed_num_bytes",
                                       "total_compressed_num_bytes",
                                       "payload_files",
                                       NULL};
    const cJSON *root = sr_json_root(c->doc);
    int rc = sr_json_check_keys(c->doc, root, "the manifest", keys, c->err);
    rc = rc ? rc
            : sr_json_get_int(c->doc, root, "version", 1, 1, SR_DELTA_MAX_VERSION, 0,
                              &c->m->version, c->err);
    rc = rc ? rc
            : sr_json_get_int(c->doc, root, "base_version", 1, 0, c->m->version - 1, 0,
                              &c->m->base_version, c->err);
    rc = rc ? rc : parse_files(c, root);
    return rc ? rc : parse_tensors(c, root);
}

/*
 * RFC 8259 allows no raw control character anywhere (strings must escape them) and no byte
 * order mark. cJSON tolerates both as whitespace, which would also throw sr_json's position
 * scan out of step with the parse, so they are refused up front with their position.
 */
static int check_json_bytes(const char *text, size_t len, const char *name, int code, sr_err *err)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        int bom = i == 0 && len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0;
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || bom) {
            int line, col;
            sr_json_linecol(text, len, i, &line, &col);
            return sr_err_set_at(err, code, (int64_t)i, "%s:%d:%d: %s is not allowed in JSON",
                                 name ? name : "<input>", line, col,
                                 bom ? "a byte order mark" : "a control character");
        }
    }
    return 0;
}

/* JSON-level codes become the document's own code; the message (with line:col) is kept. */
static int remap(sr_err *err, const sr_err *e, int rc, int code)
{
    if (rc == SR_E_JSON_SYNTAX || rc == SR_E_JSON_SCHEMA || rc == SR_E_LIMIT)
        rc = code;
    if (err) {
        *err = *e;
        err->code = rc;
    }
    return rc;
}

int sr_delta_manifest_parse(sr_delta_manifest **out, const char *text, size_t len, const char *name,
                            sr_err *err)
{
    *out = NULL;
    sr_err e = SR_ERR_INIT;
    sr_delta_manifest *m = calloc(1, sizeof(*m));
    if (!m)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate a manifest");
    mctx c = {NULL, m, NULL, &e};
    int rc = len > SR_DELTA_MANIFEST_MAX
                 ? 0
                 : check_json_bytes(text, len, name, SR_E_DELTA_MANIFEST, &e);
    rc = rc ? rc : sr_json_parse(&c.doc, text, len, name, SR_DELTA_MANIFEST_MAX, &e);
    m->priv = c.doc;
    rc = rc ? rc : parse_manifest_doc(&c);
    free(c.sorted_files);
    if (rc) {
        sr_delta_manifest_free(m);
        return remap(err, &e, rc, SR_E_DELTA_MANIFEST);
    }
    *out = m;
    return 0;
}

void sr_delta_manifest_free(sr_delta_manifest *m)
{
    if (!m)
        return;
    sr_json_free(m->priv);
    free(m->tensors);
    free(m->payload_files);
    free(m);
}

int sr_delta_state_parse(sr_delta_state *out, const char *text, size_t len, const char *name,
                         sr_err *err)
{
    static const char *const keys[] = {"version", "write_in_progress", "target_version", NULL};
    memset(out, 0, sizeof(*out));
    sr_err e = SR_ERR_INIT;
    sr_json_doc *doc = NULL;
    int rc = len > SR_DELTA_STATE_MAX ? 0 : check_json_bytes(text, len, name, SR_E_DELTA_STATE, &e);
    rc = rc ? rc : sr_json_parse(&doc, text, len, name, SR_DELTA_STATE_MAX, &e);
    const cJSON *root = rc ? NULL : sr_json_root(doc);
    rc = rc ? rc : sr_json_check_keys(doc, root, "the receiver state", keys, &e);
    rc = rc ? rc
            : sr_json_get_int(doc, root, "version", 1, 0, SR_DELTA_MAX_VERSION, 0, &out->version,
                              &e);
    rc = rc ? rc
            : sr_json_get_bool(doc, root, "write_in_progress", 1, 0, &out->write_in_progress, &e);
    rc = rc ? rc
            : sr_json_get_int(doc, root, "target_version", 1, 0, SR_DELTA_MAX_VERSION, 0,
                              &out->target_version, &e);
    sr_json_free(doc);
    if (rc) {
        memset(out, 0, sizeof(*out));
        return remap(err, &e, rc, SR_E_DELTA_STATE);
    }
    return 0;
}
