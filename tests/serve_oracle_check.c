/*
 * serve_oracle_check CONFIG BODY START TOKEN...
 *
 * Used by tests/engine_serve.sh: splices a /skyrl/v1/generate body captured from `syncroll serve`
 * (one choice) and checks that its routes are exactly the oracle's rows [START, P+G-1) for the
 * prompt TOKEN... followed by the generated tokens, with the weights of CONFIG at version 0.
 * Exit 0 when equal; 1 with the first differing row otherwise; 2 on bad input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/engine_config.h"
#include "sr_fields.h"
#include "sr_oracle.h"
#include "sr_splice.h"
#include "sr_weights.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

static const sr_splice_entry *find(const sr_splice_result *res, const char *field)
{
    for (size_t i = 0; i < res->count; i++)
        if (strcmp(res->entries[i].field->name, field) == 0)
            return &res->entries[i];
    return NULL;
}

static int fail(const char *what, const sr_err *e)
{
    fprintf(stderr, "serve_oracle_check: %s: %s %s\n", what, e ? sr_code_name(e->code) : "",
            e ? e->msg : "");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return fail("usage: serve_oracle_check CONFIG BODY START TOKEN...", NULL);
    sr_err e = SR_ERR_INIT;
    sr_engine_config cfg;
    sr_engine_config_defaults(&cfg);
    if (sr_engine_config_load(&cfg, argv[1], 0, &e))
        return fail("config", &e);
    size_t blen;
    char *body = slurp(argv[2], &blen);
    if (!body)
        return fail("cannot read the body", NULL);
    sr_fields *fields;
    sr_splicer *sp;
    const sr_splice_result *res;
    if (sr_fields_new(&fields, &e) || sr_fields_add_builtins(fields, &e) ||
        sr_splicer_new(&sp, fields, NULL, &e) || sr_splice(sp, body, blen, -1, &res, &e))
        return fail("splice", &e);
    const sr_splice_entry *gen = find(res, "token_ids"), *routes = find(res, "routed_experts");
    if (!gen || !routes || routes->kind != SR_SPLICE_ENVELOPE)
        return fail("the body has no token_ids or routes", NULL);
    size_t start = (size_t)strtoull(argv[3], NULL, 10);
    size_t p = (size_t)(argc - 4), g = (size_t)gen->array.shape[0];
    int32_t *tok = calloc(p + g, sizeof(int32_t));
    for (size_t i = 0; i < p; i++)
        tok[i] = (int32_t)atoi(argv[4 + i]);
    for (size_t i = 0; i < g; i++)
        tok[p + i] = (int32_t)sr_ndarray_get_i64(&gen->array, i);

    sr_oracle_model m = sr_engine_config_model(&cfg);
    sr_oracle *o;
    sr_weights_spec ws = sr_engine_config_weights(&cfg);
    uint64_t global, layers[SR_ORACLE_MAX_LAYERS];
    if (sr_oracle_new(&o, &m, &e) || sr_weights_expected(&global, layers, &ws, 0, &e))
        return fail("oracle", &e);
    size_t rows = p + g - 1 - start, row_bytes = (size_t)cfg.num_layers * (size_t)cfg.topk *
                                                   sr_dtype_size(routes->array.dtype);
    void *want = calloc(rows ? rows : 1, row_bytes);
    if (sr_oracle_routes(want, rows * row_bytes, NULL, routes->array.dtype, o, layers, tok, p + g,
                         start, p + g - 1, &e))
        return fail("oracle routes", &e);
    int rc = 0;
    if ((size_t)routes->array.shape[0] != rows || routes->array.nbytes != rows * row_bytes) {
        fprintf(stderr, "serve_oracle_check: %lld route rows, the oracle has %zu\n",
                (long long)routes->array.shape[0], rows);
        rc = 1;
    }
    for (size_t r = 0; !rc && r < rows; r++) {
        if (memcmp((char *)want + r * row_bytes, (char *)routes->array.data + r * row_bytes,
                   row_bytes) != 0) {
            fprintf(stderr, "serve_oracle_check: route row %zu differs from the oracle\n",
                    start + r);
            rc = 1;
        }
    }
    if (!rc)
        printf("routes equal the oracle: rows [%zu, %zu), %s\n", start, p + g - 1,
               sr_dtype_name(routes->array.dtype));
    free(want);
    free(tok);
    sr_oracle_free(o);
    sr_splicer_free(sp);
    sr_fields_free(fields);
    free(body);
    sr_engine_config_release(&cfg);
    return rc;
}
