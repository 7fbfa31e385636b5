/*
 * serve_oracle_check CONFIG BODY START TOKEN...
 *
 * Used by tests/engine_serve.sh: splices a /skyrl/v1/generate body captured from `syncroll serve`
 * (one choice) and checks that its routes are exactly the oracle's rows [START, P+G-1) for the
 * prompt TOKEN... followed by the generated tokens, with the weights of CONFIG at version 0.
 * Exit 0 when equal; 1 with the first differing row otherwise; 2 on bad input.
 *
 * serve_oracle_check --rows CONFIG LO HI TOKEN...
 *
 * Used by tests/dialects_numpy.py: prints the oracle's route rows [LO, HI) for the whole token
 * sequence TOKEN... (prompt and generated tokens), weights of CONFIG at version 0, as one JSON
 * line {"rows":[[e,..],..]} (HI-LO rows of L*K expert ids, layer-major), so a client written in
 * another language can compare a dialect's decoded routes with the oracle. Exit 0, or 2 on bad
 * input.
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

/*
 * The oracle's route rows [lo, hi) of dtype dt for tokens[0..n) with the weights of the config
 * at `path`, version 0, into a new buffer *out (free it); *row_bytes is the size of one row.
 * 0, or 2 with the reason printed.
 */
static int oracle_rows(void **out, size_t *row_bytes, const char *path, sr_dtype dt,
                       const int32_t *tokens, size_t n, size_t lo, size_t hi)
{
    sr_err e = SR_ERR_INIT;
    sr_engine_config cfg;
    sr_engine_config_defaults(&cfg);
    if (sr_engine_config_load(&cfg, path, 0, &e))
        return fail("config", &e);
    sr_oracle_model m = sr_engine_config_model(&cfg);
    sr_weights_spec ws = sr_engine_config_weights(&cfg);
    uint64_t global, layers[SR_ORACLE_MAX_LAYERS];
    sr_oracle *o = NULL;
    *row_bytes = (size_t)cfg.num_layers * (size_t)cfg.topk * sr_dtype_size(dt);
    size_t bytes = (hi - lo) * *row_bytes;
    *out = calloc(bytes ? bytes : 1, 1);
    int rc = !*out || sr_oracle_new(&o, &m, &e) ||
             sr_weights_expected(&global, layers, &ws, 0, &e) ||
             sr_oracle_routes(*out, bytes, NULL, dt, o, layers, tokens, n, lo, hi, &e);
    sr_oracle_free(o);
    sr_engine_config_release(&cfg);
    return rc ? fail("oracle routes", &e) : 0;
}

/* The --rows mode (header comment). */
static int print_rows(int argc, char **argv)
{
    if (argc < 6)
        return fail("usage: serve_oracle_check --rows CONFIG LO HI TOKEN...", NULL);
    size_t lo = (size_t)strtoull(argv[3], NULL, 10), hi = (size_t)strtoull(argv[4], NULL, 10);
    size_t n = (size_t)(argc - 5);
    if (lo > hi || hi > n)
        return fail("need LO <= HI <= the number of tokens", NULL);
    int32_t *tok = calloc(n, sizeof(int32_t));
    for (size_t i = 0; tok && i < n; i++)
        tok[i] = (int32_t)atoi(argv[5 + i]);
    void *rows = NULL;
    size_t row_bytes = 0;
    if (!tok || oracle_rows(&rows, &row_bytes, argv[2], SR_DTYPE_INT32, tok, n, lo, hi))
        return 2;
    const int32_t *want = rows;
    size_t cells = row_bytes / sizeof(int32_t);
    printf("{\"rows\":[");
    for (size_t r = 0; r < hi - lo; r++) {
        printf(r ? ",[" : "[");
        for (size_t c = 0; c < cells; c++)
            printf("%s%d", c == 0 ? "" : ",", (int)want[r * cells + c]);
        printf("]");
    }
    printf("]}\n");
    free(rows);
    free(tok);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--rows") == 0)
        return print_rows(argc, argv);
    if (argc < 5)
        return fail("usage: serve_oracle_check CONFIG BODY START TOKEN...", NULL);
    sr_err e = SR_ERR_INIT;
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
    size_t rows = p + g - 1 - start, row_bytes = 0;
    void *want = NULL;
    if (oracle_rows(&want, &row_bytes, argv[1], routes->array.dtype, tok, p + g, start, p + g - 1))
        return 2;
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
    sr_splicer_free(sp);
    sr_fields_free(fields);
    free(body);
    return rc;
}
