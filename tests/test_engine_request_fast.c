/*
 * unit.engine_request_fast: the generate parser's fast path (sr_gen_request_parse_in with an
 * sr_jdom, harness/engine/request.h) answers every body exactly as the document path
 * (sr_gen_request_parse, sr_gen_request_parse_as) does: the same status, error code and message,
 * and on success the same request, field by field. Bodies: the accepted and refused ones of the
 * parser's own tests, the JSON the fast path leaves to the document path (duplicate keys, an
 * escaped NUL, bytes that are not UTF-8, a number that overflows, what cJSON takes beyond
 * RFC 8259), integer literals written as fractions or exponents, and thousands of random
 * mutations of them, under every dialect's request shape. The fast path must also really read
 * the ordinary bodies (the parser's tree is left in the sr_jdom when it did).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/request.h"
#include "spec/dialect.h"
#include "sr_jdom.h"
#include "sr_test.h"

static const sr_gen_limits LIM = {100, 16, 64};
static const sr_gen_limits WIDE = {100, 16, 20000};

/* Compares the two paths' answers for body[0..len) under `shape` (NULL: skyrl's
 * SamplingParams); returns 1 when the fast path read it. */
static int same_answer(const char *text, size_t len, const sr_gen_limits *lim,
                       const sr_dialect_request *shape, sr_jdom *j)
{
    char *body = malloc(len + 1);
    ck_assert_ptr_nonnull(body);
    memcpy(body, text, len);
    body[len] = '\0';
    sr_gen_request a, b;
    sr_err ea = SR_ERR_INIT, eb = SR_ERR_INIT;
    int ra = shape ? sr_gen_request_parse_as(&a, body, len, lim, shape, &ea)
                   : sr_gen_request_parse(&a, body, len, lim, &ea);
    int rb = sr_gen_request_parse_in(&b, body, len, lim, shape, j, &eb);
    int fast = sr_jdom_arena_used(j) > 0;
    ck_assert_msg(ra == rb, "'%.200s': document path %d, fast path %d (%s | %s)", body, ra, rb,
                  ea.msg, eb.msg);
    if (ra) {
        ck_assert_msg(ea.code == eb.code && strcmp(ea.msg, eb.msg) == 0 && ea.offset == eb.offset,
                      "'%.200s': %d %s against %d %s", body, ea.code, ea.msg, eb.code, eb.msg);
        ck_assert_ptr_null(b.tokens);
        ck_assert_msg(!fast, "'%.200s': refused, yet the fast path's tree is left", body);
    } else {
        ck_assert_uint_eq(a.P, b.P);
        ck_assert(memcmp(a.tokens, b.tokens, a.P * sizeof(*a.tokens)) == 0);
        ck_assert_uint_eq(a.n_stop_ids, b.n_stop_ids);
        ck_assert(!a.n_stop_ids ||
                  memcmp(a.stop_ids, b.stop_ids, a.n_stop_ids * sizeof(*a.stop_ids)) == 0);
        ck_assert_int_eq(a.max_tokens, b.max_tokens);
        ck_assert_int_eq(a.logprobs, b.logprobs);
        ck_assert_int_eq(a.ignore_eos, b.ignore_eos);
        ck_assert_int_eq(a.route_start, b.route_start);
        ck_assert_int_eq(a.has_route_start, b.has_route_start);
        ck_assert_int_eq(a.no_routes, b.no_routes);
        ck_assert_int_eq(a.no_tokens, b.no_tokens);
        ck_assert_int_eq(a.want_support, b.want_support);
        ck_assert_int_eq(a.top_k_int, b.top_k_int);
        ck_assert_int_eq(a.top_k, b.top_k);
        ck_assert_str_eq(a.top_k_repr, b.top_k_repr);
        ck_assert(!a.model == !b.model && (!a.model || strcmp(a.model, b.model) == 0));
        ck_assert(!a.cache_salt == !b.cache_salt &&
                  (!a.cache_salt || strcmp(a.cache_salt, b.cache_salt) == 0));
        sr_gen_request_release(&a);
        sr_gen_request_release(&b);
    }
    free(body);
    return fast;
}

/* Every request shape: skyrl's (NULL) and each route of each dialect. */
static size_t shapes(const sr_dialect_request **out, size_t cap)
{
    size_t n = 0;
    out[n++] = NULL;
    for (int d = 0; d < SR_DIALECT_COUNT; d++)
        for (int k = 0; k < SR_DIALECT_MAX_ROUTES && n < cap; k++)
            if (sr_dialect_get((sr_dialect)d)->routes[k].path)
                out[n++] = &sr_dialect_get((sr_dialect)d)->routes[k].request;
    return n;
}

/* Accepted by skyrl's parser, read by the fast path. */
static const char *const PLAIN[] = {
    "{\"sampling_params\":{\"max_tokens\":16,\"logprobs\":0,\"routed_experts_prompt_start\":0},"
    "\"model\":\"default\",\"token_ids\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}",
    "{\"sampling_params\":{\"max_tokens\":5,\"logprobs\":0,\"ignore_eos\":true,"
    "\"stop_token_ids\":[3,4],\"routed_experts_prompt_start\":3},"
    "\"model\":\"m\",\"token_ids\":[1,2,3],\"cache_salt\":\"s@1\"}",
    "{\"token_ids\":[0]}",
    " \t\r\n{\"token_ids\" : [ 0 , 99 ] , \"features\" : { \"a\" : [ 1.5e300 ] } }\n",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":2.5,\"temperature\":0.7,\"stop\":\"x\"}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":true},\"return_sample_support\":true}",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":1e2,\"logprobs\":null,\"n\":1}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"stop\":[\"a\",\"b\"],\"seed\":null}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":-3,\"max_tokens\":null}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":2.0,\"logit_bias\":{\"1\":2}}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":12345678901234567890}}",
    "{\"token_ids\":[1],\"model\":\"\\u00e9\\ud83d\\ude00\\n\\\"\",\"cache_salt\":null}",
    "{\"token_ids\":[1,2],\"sampling_params\":{\"routed_experts_prompt_start\":2}}",
    "{\"token\\u005fids\":[1]}",
    "{\"token_ids\":[-0],\"features\":null,\"return_sample_support\":null}",
    "{\"token_ids\":[1],\"other\":{\"deep\":[[[[{}]]]]},\"x\":true}",
    /* other wires */
    "{\"input_ids\":[1,2,3],\"return_routed_experts\":true,\"routed_experts_start_len\":2,"
    "\"stream\":false,\"sampling_params\":{\"max_new_tokens\":4,\"ignore_eos\":true}}",
    "{\"input_ids\":[1]}",
    "{\"prompt\":[1,2],\"return_routed_experts\":true,\"routed_experts_start_len\":1,"
    "\"return_token_ids\":true,\"max_tokens\":3,\"logprobs\":2}",
    "{\"prompt_token_ids\":[1,2],\"max_tokens\":3,\"routed_experts_prompt_start\":1}",
};

/* Refused by skyrl's parser, or read by the document path only. */
static const char *const OTHER[] = {
    "",
    "{",
    "[]",
    "{\"token_ids\":{}}",
    "{\"token_ids\":[1e0]}",
    "{\"token_ids\":[1.0]}",
    "{\"token_ids\":[1E0]}",
    "{\"token_ids\":[1],\"sampling_params\":{\"ignore_eos\":1}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"stop_token_ids\":[100]}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"stop\":[1]}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"temperature\":\"hot\"}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"max_tokens\":2.0}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"routed_experts_prompt_start\":1e0}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"routed_experts_prompt_start\":true}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"n\":2}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"unknown\":2}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"max_tokens\":64}}",
    "{\"token_ids\":[1],\"features\":[]}",
    "{\"token_ids\":[1],\"model\":null}",
    "{\"token_ids\":[1],\"cache_salt\":\"\"}",
    "{\"token_ids\":[1],\"return_sample_support\":1}",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":\"many\",\"n\":1,\"seed\":null}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":[1],\"stop\":[\"a\",\"b\"]}}",
    /* What the fast path leaves to the document path. */
    "{\"token_ids\":[1],\"token_ids\":[2]}",
    "{\"token_ids\":[1],\"sampling_params\":{\"max_tokens\":3,\"max_tokens\":4}}",
    "{\"token_ids\":[1],\"model\":\"a\\u0000b\"}",
    "{\"token_ids\":[1],\"features\":{\"k\\u0000\":1}}",
    "{\"token_ids\":[1],\"model\":\"a\\\\u0000b\"}",
    "{\"token_ids\":[1],\"model\":\"\xff\xfe\"}",
    "{\"token_ids\":[1],\"model\":\"\xc0\xaf\"}",
    "{\"token_ids\":[1],\"features\":{\"big\":1e400}}",
    "{\"token_ids\":[1],\"sampling_params\":{\"top_k\":-1e999}}",
    "\xef\xbb\xbf{\"token_ids\":[1]}",
    "{\"token_ids\":[01]}",
    "{\"token_ids\":[1],\"model\":\"a\tb\"}",
    "\x01{\"token_ids\":[1]}",
    "{\"token_ids\":[1]} x",
    "{\"token_ids\":[1]}\f",
    "{\"token_ids\":[1],\"model\":\"\\ud800\"}",
    "{\"token_ids\":[+1]}",
    "{\"token_ids\":[.5]}",
    "{\"token_ids\":[1,]}",
    "{\"token_ids\":[1] \"model\":\"m\"}",
    "{\"input_ids\":[1],\"return_routed_experts\":1}",
    "{\"input_ids\":[1,2],\"routed_experts_start_len\":3}",
    "{\"input_ids\":[1],\"sampling_params\":[]}",
    "{\"prompt\":\"text\"}",
    "{\"prompt\":[1],\"routed_experts_prompt_start\":true}",
    "{\"messages\":[]}",
    "[1]",
};

START_TEST(fixed_bodies_answer_alike)
{
    sr_jdom *j = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_jdom_new(&j, 0, &err), err);
    const sr_dialect_request *sh[2 * SR_DIALECT_COUNT + 1];
    size_t ns = shapes(sh, sizeof sh / sizeof sh[0]);
    for (size_t i = 0; i < sizeof PLAIN / sizeof PLAIN[0]; i++) {
        int read = 0;
        for (size_t s = 0; s < ns; s++)
            read += same_answer(PLAIN[i], strlen(PLAIN[i]), &LIM, sh[s], j);
        ck_assert_msg(read > 0, "the fast path read '%s' under no shape", PLAIN[i]);
    }
    /* skyrl's ordinary generate is read by the fast path. */
    ck_assert(same_answer(PLAIN[0], strlen(PLAIN[0]), &LIM, NULL, j));
    /* Under skyrl's shape each of these is refused or left to the document path; another wire
     * may accept some (it ignores keys skyrl reads). */
    for (size_t i = 0; i < sizeof OTHER / sizeof OTHER[0]; i++) {
        ck_assert_msg(!same_answer(OTHER[i], strlen(OTHER[i]), &LIM, NULL, j),
                      "the fast path answered '%s' itself", OTHER[i]);
        for (size_t s = 1; s < ns; s++)
            same_answer(OTHER[i], strlen(OTHER[i]), &LIM, sh[s], j);
    }
    sr_jdom_free(j);
}
END_TEST

/* Bodies around SR_GEN_REQUEST_FAST_MAX, and a tree past the sr_jdom's arena maximum: the
 * document path reads them, with the same answer. */
START_TEST(long_bodies_answer_alike)
{
    sr_jdom *j = NULL, *small = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_jdom_new(&j, 0, &err), err);
    ck_assert_sr_ok(sr_jdom_new(&small, 40000, &err), err);
    sr_buf b = SR_BUF_INIT;
    sr_test_put(&b, "{\"token_ids\":[1");
    while (b.len < SR_GEN_REQUEST_FAST_MAX - 200)
        sr_test_put(&b, ",1");
    sr_test_put(&b, "]}");
    /* At the bound (padded with spaces) and one byte past it. */
    size_t pad = SR_GEN_REQUEST_FAST_MAX - b.len;
    for (size_t i = 0; i < pad; i++)
        sr_test_put(&b, " ");
    ck_assert_uint_eq(b.len, SR_GEN_REQUEST_FAST_MAX);
    ck_assert(same_answer(b.data, b.len, &WIDE, NULL, j));
    ck_assert(!same_answer(b.data, b.len, &WIDE, NULL, small));
    sr_test_put(&b, " ");
    ck_assert(!same_answer(b.data, b.len, &WIDE, NULL, j));
    sr_buf_release(&b);
    sr_jdom_free(j);
    sr_jdom_free(small);
}
END_TEST

/* A byte of a JSON-like alphabet, for mutations. */
static char pick(uint64_t *s)
{
    static const char A[] = "{}[]\",:0123456789-+.eE \\u tnfrlasTIKD_\x01\x80\xff";
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return A[(*s >> 33) % (sizeof A - 1)];
}

/* Random mutations of every accepted body under every shape: a byte replaced, removed or
 * inserted, or a span doubled, one to three times. */
START_TEST(mutated_bodies_answer_alike)
{
    sr_jdom *j = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_jdom_new(&j, 0, &err), err);
    const sr_dialect_request *sh[2 * SR_DIALECT_COUNT + 1];
    size_t ns = shapes(sh, sizeof sh / sizeof sh[0]);
    uint64_t s = 36;
    char buf[1024];
    int read = 0, total = 0;
    for (int round = 0; round < 400; round++)
        for (size_t i = 0; i < sizeof PLAIN / sizeof PLAIN[0]; i++) {
            size_t len = strlen(PLAIN[i]);
            memcpy(buf, PLAIN[i], len);
            int edits = 1 + (int)((s >> 40) % 3);
            for (int e = 0; e < edits && len > 2; e++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                size_t at = (size_t)(s >> 33) % len, op = (size_t)(s >> 20) % 4;
                if (op == 0) {
                    buf[at] = pick(&s);
                } else if (op == 1) {
                    memmove(buf + at, buf + at + 1, len - at - 1);
                    len--;
                } else if (op == 2 && len + 1 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = pick(&s);
                    len++;
                } else if (op == 3) {
                    size_t n = (size_t)(s >> 12) % 12;
                    n = at + n > len ? len - at : n;
                    if (len + n < sizeof buf) {
                        memmove(buf + at + n, buf + at, len - at);
                        len += n;
                    }
                }
            }
            read += same_answer(buf, len, &LIM, sh[(size_t)(s >> 50) % ns], j);
            total++;
        }
    /* Not a bound to meet, a sign that both paths were exercised. */
    ck_assert_msg(read > 0 && read < total, "the fast path read %d of %d", read, total);
    sr_jdom_free(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_request_fast");
    TCase *tc = tcase_create("alike");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fixed_bodies_answer_alike);
    tcase_add_test(tc, long_bodies_answer_alike);
    tcase_add_test(tc, mutated_bodies_answer_alike);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
