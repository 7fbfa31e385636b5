/*
 * libFuzzer target for the fast path of the mock engine's generate parser (differential): any
 * bytes are parsed by sr_gen_request_parse_in with an sr_jdom (harness/engine/request.h: the body
 * parsed by sr_jdom under the reference rules and read from its tree, else read again as an
 * sr_json document) and by the document path alone (sr_gen_request_parse, or
 * sr_gen_request_parse_as under one of the dialects' route shapes, picked by the input's length),
 * and the two answers must be the same: the same code, message and offset for a refusal, every
 * field of the request for an acceptance. The sr_jdom is kept across inputs, as the engine keeps
 * its parsers across requests, and its arena is bounded (64 KiB) so that a tree past it takes the
 * document path too. A refusal must carry engine.bad_request (or resource.nomem).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/request.h"
#include "spec/dialect.h"
#include "sr_err.h"
#include "sr_jdom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_request(const sr_gen_request *a, const sr_gen_request *b)
{
    return a->P == b->P && memcmp(a->tokens, b->tokens, a->P * sizeof(*a->tokens)) == 0 &&
           a->n_stop_ids == b->n_stop_ids &&
           (!a->n_stop_ids ||
            memcmp(a->stop_ids, b->stop_ids, a->n_stop_ids * sizeof(*a->stop_ids)) == 0) &&
           a->max_tokens == b->max_tokens && a->logprobs == b->logprobs &&
           a->ignore_eos == b->ignore_eos && a->route_start == b->route_start &&
           a->has_route_start == b->has_route_start && same_str(a->model, b->model) &&
           same_str(a->cache_salt, b->cache_salt) && a->no_routes == b->no_routes &&
           a->no_tokens == b->no_tokens && a->want_support == b->want_support &&
           a->top_k_int == b->top_k_int && a->top_k == b->top_k &&
           strcmp(a->top_k_repr, b->top_k_repr) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sr_jdom *j;
    if (!j && sr_jdom_new(&j, (size_t)64 << 10, NULL))
        abort();
    /* skyrl's shape (NULL), then every route of every dialect. */
    const sr_dialect_request *shapes[2 * SR_DIALECT_COUNT + 1];
    size_t n = 0;
    shapes[n++] = NULL;
    for (int d = 0; d < SR_DIALECT_COUNT; d++)
        for (int k = 0; k < SR_DIALECT_MAX_ROUTES; k++)
            if (sr_dialect_get((sr_dialect)d)->routes[k].path)
                shapes[n++] = &sr_dialect_get((sr_dialect)d)->routes[k].request;
    const sr_dialect_request *shape = shapes[size % n];
    char *body = malloc(size + 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    body[size] = '\0';
    sr_gen_limits lim = {1000, 8, 512};
    sr_gen_request a, b;
    sr_err ea = SR_ERR_INIT, eb = SR_ERR_INIT;
    int ra = shape ? sr_gen_request_parse_as(&a, body, size, &lim, shape, &ea)
                   : sr_gen_request_parse(&a, body, size, &lim, &ea);
    int rb = sr_gen_request_parse_in(&b, body, size, &lim, shape, j, &eb);
    if (ra != rb)
        abort();
    if (ra) {
        if ((ra != SR_E_ENGINE_REQUEST && ra != SR_E_NOMEM) || ea.code != eb.code ||
            strcmp(ea.msg, eb.msg) != 0 || ea.offset != eb.offset || a.tokens || b.tokens ||
            sr_jdom_arena_used(j) != 0)
            abort();
    } else if (!same_request(&a, &b)) {
        abort();
    }
    sr_gen_request_release(&a);
    sr_gen_request_release(&b);
    free(body);
    return 0;
}
