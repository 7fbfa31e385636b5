/*
 * proxy/proxy_routes: a route fault rewritten into an engine's answer changes exactly the
 * routes the rule selects (positions from the request's prompt and route start), keeps every
 * other byte, writes the wire's own encoding back (new shape included), and leaves an answer it
 * cannot place the rule on unchanged with the reason.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "proxy/proxy_routes.h"
#include "spec/fault_grammar.h"
#include "sr_base64.h"
#include "sr_test.h"

static sr_route_rule rule(const char *select, const char *action)
{
    sr_route_rule r;
    sr_err e = SR_ERR_INIT;
    cJSON *s = select ? cJSON_Parse(select) : NULL, *a = cJSON_Parse(action);
    ck_assert_ptr_nonnull(a);
    ck_assert_sr_ok(sr_route_rule_parse(&r, s, a, NULL, &e), e);
    cJSON_Delete(s);
    cJSON_Delete(a);
    return r;
}

/* The skyrl answer with `n` uint8 route values v[0..n) of shape [rows, 2, 2], or, with rows < 0,
 * null routes. */
static void skyrl_answer(char *out, size_t cap, const unsigned char *v, int rows)
{
    char b64[128] = "";
    if (rows >= 0)
        b64[sr_base64_encode(b64, v, (size_t)rows * 4, SR_B64_SCALAR)] = '\0';
    char routes[256];
    if (rows >= 0)
        snprintf(routes, sizeof routes, "{\"data\":\"%s\",\"shape\":[%d,2,2],\"dtype\":\"uint8\"}",
                 b64, rows);
    else
        snprintf(routes, sizeof routes, "null");
    snprintf(out, cap,
             "{\"choices\":[{\"token_ids\":[7,8],\"finish_reason\":\"length\",\"logprobs\":null,"
             "\"routed_experts\":%s,\"syncroll\":{\"engine\":\"e\",\"weight_version\":0}}]}",
             routes);
}

static const unsigned char V[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

/* Rewrites `body` for the request with prompt [1, 2] and route start `start` under r; returns
 * the result and leaves the answer in out. */
static int rewrite(sr_buf *out, const char **why, const char *body, int start,
                   const sr_route_rule *r)
{
    char req[160];
    snprintf(req, sizeof req,
             "{\"token_ids\":[1,2],\"sampling_params\":{\"max_tokens\":2,"
             "\"routed_experts_prompt_start\":%d}}",
             start);
    sr_err e = SR_ERR_INIT;
    int rc = sr_px_routes_rewrite(out, why, "/skyrl/v1/generate", req, strlen(req), body,
                                  strlen(body), r, &e);
    ck_assert_msg(rc >= 0, "%s", e.msg);
    return rc;
}

/* Prompt of 2, 2 tokens generated: rows for positions 0, 1, 2; the output region is row 2. */
START_TEST(output_rows_zeroed_rest_kept)
{
    char body[512], want[512];
    skyrl_answer(body, sizeof body, V, 3);
    unsigned char z[12];
    memcpy(z, V, 12);
    memset(z + 8, 0, 4);
    skyrl_answer(want, sizeof want, z, 3);
    sr_route_rule r = rule("{\"region\":\"output\"}", "{\"do\":\"zero\"}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &r), 1);
    ck_assert_str_eq(out.data, want);
    sr_buf_release(&out);
}
END_TEST

/* Start 1: the rows are positions 1 and 2; the turn boundary is position 1 (row 0), layer 1. */
START_TEST(start_places_the_rows)
{
    char body[512], want[512];
    skyrl_answer(body, sizeof body, V, 2);
    unsigned char z[8] = {1, 2, 0, 0, 5, 6, 7, 8};
    skyrl_answer(want, sizeof want, z, 2);
    sr_route_rule r = rule("{\"region\":\"turn_boundary\",\"layers\":[1]}", "{\"do\":\"zero\"}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    ck_assert_int_eq(rewrite(&out, &why, body, 1, &r), 1);
    ck_assert_str_eq(out.data, want);
    sr_buf_release(&out);
}
END_TEST

/* Whole-array actions change the shape the wire announces; null writes null. */
START_TEST(row_actions_write_the_new_shape)
{
    char body[512], want[512];
    skyrl_answer(body, sizeof body, V, 3);
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    sr_route_rule r = rule(NULL, "{\"do\":\"truncate\",\"tokens\":1}");
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &r), 1);
    skyrl_answer(want, sizeof want, V, 2); /* rows up to P + 1 - 1 = position 1 */
    ck_assert_str_eq(out.data, want);
    r = rule(NULL, "{\"do\":\"drop_first\"}");
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &r), 1);
    skyrl_answer(want, sizeof want, V + 4, 2);
    ck_assert_str_eq(out.data, want);
    r = rule(NULL, "{\"do\":\"null\"}");
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &r), 1);
    skyrl_answer(want, sizeof want, NULL, -1);
    ck_assert_str_eq(out.data, want);
    sr_buf_release(&out);
}
END_TEST

/* A constant past uint8 widens skyrl's envelope to the route dtype that holds it. */
START_TEST(constant_widens_the_envelope)
{
    char body[512];
    skyrl_answer(body, sizeof body, V, 3);
    sr_route_rule r = rule("{\"rows\":[0]}", "{\"do\":\"constant\",\"value\":300}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &r), 1);
    ck_assert_ptr_nonnull(strstr(out.data, "\"shape\":[3,2,2],\"dtype\":\"int16\""));
    sr_buf_release(&out);
}
END_TEST

/* skyrl's envelope is packed again in the narrowest dtype holding its values, as the engine
 * packs its own (the client refuses a wider one as envelope.non_canonical): int16 routes (384
 * experts) all zeroed are uint8; with values past 255 left they stay int16. */
START_TEST(envelope_repacked_canonical)
{
    const char *body = "{\"choices\":[{\"token_ids\":[7,8],\"finish_reason\":\"length\","
                       "\"logprobs\":null,\"routed_experts\":{\"data\":"
                       "\"LAEtAS4BLwEwATEBMgEzATQBNQE2ATcB\",\"shape\":[3,2,2],\"dtype\":"
                       "\"int16\"}}]}";
    sr_route_rule all = rule(NULL, "{\"do\":\"zero\"}");
    sr_route_rule some = rule("{\"region\":\"output\"}", "{\"do\":\"zero\"}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &all), 1);
    ck_assert_ptr_nonnull(
        strstr(out.data, "{\"data\":\"AAAAAAAAAAAAAAAA\",\"shape\":[3,2,2],\"dtype\":\"uint8\"}"));
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &some), 1);
    ck_assert_ptr_nonnull(strstr(out.data, "\"shape\":[3,2,2],\"dtype\":\"int16\"}"));
    sr_buf_release(&out);
}
END_TEST

/* Answers the rule cannot be placed on are left as they are, with the reason. */
START_TEST(unplaceable_answers_are_left)
{
    sr_route_rule zero = rule(NULL, "{\"do\":\"zero\"}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    ck_assert_int_eq(rewrite(&out, &why, "{\"choices\":[{\"token_ids\":[7,8]}]}", 0, &zero), 0);
    ck_assert_ptr_nonnull(why);
    ck_assert_uint_eq(out.len, 0);
    char body[512];
    skyrl_answer(body, sizeof body, NULL, -1);
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &zero), 0);
    ck_assert_str_eq(why, "it carries no routes of one known wire"); /* null routes: no wire told */
    /* A key written with an escape: alone, the answer's wire cannot be told from its bytes. */
    skyrl_answer(body, sizeof body, V, 3);
    char *k = strstr(body, "routed_experts");
    char esc[600];
    snprintf(esc, sizeof esc, "%.*srouted\\u005fexperts%s", (int)(k - body), body, k + 14);
    ck_assert_int_eq(rewrite(&out, &why, esc, 0, &zero), 0);
    ck_assert_str_eq(why, "it carries no routes of one known wire");
    ck_assert_uint_eq(out.len, 0);
    /* Beside a choice written plainly (the wire is told), the client's splice refuses it
     * (splice.layout_drift): an escaped key never reaches the proxy's byte scan, whose count
     * check is a guard only. */
    char two[1200];
    const char *c0 = strstr(esc, "{\"token_ids\""), *c1 = strstr(body, "{\"token_ids\"");
    snprintf(two, sizeof two, "{\"choices\":[%.*s,%.*s]}", (int)(strrchr(esc, ']') - c0), c0,
             (int)(strrchr(body, ']') - c1), c1);
    ck_assert_int_eq(rewrite(&out, &why, two, 0, &zero), 0);
    ck_assert_str_eq(why, "the client's splice refuses it");
    ck_assert_uint_eq(out.len, 0);
    /* SGLang's flat routes carry no layers: a rule that selects layers cannot be placed. */
    const char *sgl = "{\"text\":\"\",\"output_ids\":[7,8],\"meta_info\":{\"routed_experts\":"
                      "\"AQAAAAIAAAADAAAABAAAAAUAAAAGAAAABwAAAAgAAAAJAAAACgAAAAsAAAAMAAAA\"}}";
    const char *req = "{\"input_ids\":[1,2],\"sampling_params\":{\"max_new_tokens\":2}}";
    sr_route_rule layer = rule("{\"layers\":[0]}", "{\"do\":\"zero\"}");
    sr_err e = SR_ERR_INIT;
    ck_assert_int_eq(sr_px_routes_rewrite(&out, &why, "/generate", req, strlen(req), sgl,
                                          strlen(sgl), &layer, &e),
                     0);
    ck_assert_str_eq(why, "its flat routes name no layers, and the rule selects layers");
    /* Without layers it is placed: 3 rows of 4 int32 slots, output row 2 zeroed. */
    sr_route_rule out_rows = rule("{\"region\":\"output\"}", "{\"do\":\"zero\"}");
    ck_assert_int_eq(sr_px_routes_rewrite(&out, &why, "/generate", req, strlen(req), sgl,
                                          strlen(sgl), &out_rows, &e),
                     1);
    ck_assert_str_eq(out.data,
                     "{\"text\":\"\",\"output_ids\":[7,8],\"meta_info\":{\"routed_experts\":"
                     "\"AQAAAAIAAAADAAAABAAAAAUAAAAGAAAABwAAAAgAAAAAAAAAAAAAAAAAAAAAAAAA\"}}");
    sr_buf_release(&out);
}
END_TEST

/* A shape with a zero dimension holds no elements however many rows it announces: left as it
 * is, named, at once (the rule's row loop is bounded by the slots present, not by the shape). */
START_TEST(zero_size_routes_are_left)
{
    const char *body = "{\"choices\":[{\"token_ids\":[7,8],\"finish_reason\":\"length\","
                       "\"logprobs\":null,\"routed_experts\":{\"data\":\"\",\"shape\":"
                       "[1000000000000000,0,2],\"dtype\":\"uint8\"}}]}";
    sr_route_rule r = rule("{\"region\":\"output\"}", "{\"do\":\"zero\"}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    ck_assert_int_eq(rewrite(&out, &why, body, 0, &r), 0);
    ck_assert_str_eq(why, "its routes hold no elements (a dimension of their shape is 0)");
    ck_assert_uint_eq(out.len, 0);
    /* The rule itself on rows of no slots: nothing to do, however many rows. */
    unsigned char none[1] = {0};
    sr_route_block b = {none, SR_DTYPE_UINT8, 0, (int64_t)1 << 50, 0, 2, 2, 0};
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_route_rule_apply(&b, &r, NULL, &e), e);
    ck_assert_int_eq(b.hi, (int64_t)1 << 50);
    sr_buf_release(&out);
}
END_TEST

/* SGLang with n > 1 answers one object per choice: each choice's flat routes take their rows
 * from its own output_ids (choice 0: 2 tokens, 3 rows; choice 1: 3 tokens, 4 rows of 4). */
START_TEST(sglang_choices_take_their_own_rows)
{
    const char *body =
        "[{\"text\":\"\",\"output_ids\":[7,8],\"meta_info\":{\"routed_experts\":"
        "\"AQAAAAIAAAADAAAABAAAAAUAAAAGAAAABwAAAAgAAAAJAAAACgAAAAsAAAAMAAAA\"}},"
        "{\"text\":\"\",\"output_ids\":[7,8,9],\"meta_info\":{\"routed_experts\":"
        "\"FQAAABYAAAAXAAAAGAAAABkAAAAaAAAAGwAAABwAAAAdAAAAHgAAAB8AAAAgAAAAIQAAACIAAAAjAAAAJAAAAA=="
        "\"}}]";
    const char *want =
        "[{\"text\":\"\",\"output_ids\":[7,8],\"meta_info\":{\"routed_experts\":"
        "\"AQAAAAIAAAADAAAABAAAAAUAAAAGAAAABwAAAAgAAAAAAAAAAAAAAAAAAAAAAAAA\"}},"
        "{\"text\":\"\",\"output_ids\":[7,8,9],\"meta_info\":{\"routed_experts\":"
        "\"FQAAABYAAAAXAAAAGAAAABkAAAAaAAAAGwAAABwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
        "\"}}]";
    const char *req = "{\"input_ids\":[1,2],\"sampling_params\":{\"max_new_tokens\":3,\"n\":2}}";
    sr_route_rule r = rule("{\"region\":\"output\"}", "{\"do\":\"zero\"}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    sr_err e = SR_ERR_INIT;
    int rc =
        sr_px_routes_rewrite(&out, &why, "/generate", req, strlen(req), body, strlen(body), &r, &e);
    ck_assert_msg(rc == 1, "rc %d: %s", rc, why ? why : e.msg);
    ck_assert_str_eq(out.data, want);
    sr_buf_release(&out);
}
END_TEST

/* vLLM's completions answer of 3 rows of 2 x 2 uint8 routes (a .npy string), from
 * `syncroll serve --dialect vllm`; with the last row zeroed in VLLM_ZERO. */
#define VLLM_HEAD                                                                                  \
    "{\"id\":\"cmpl-engine-0-1\",\"object\":\"text_completion\",\"model\":\"default\","            \
    "\"choices\":[{\"index\":0,\"text\":\"\",\"token_ids\":[315,467],\"finish_reason\":"           \
    "\"length\",\"logprobs\":null,\"routed_experts\":\"k05VTVBZAQB2AHsnZGVzY3InOiAnfHUxJywgJ2Zv"   \
    "cnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDMsIDIsIDIpLCB9ICAgICAgICAgICAgICAgICAg"             \
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoOAgkODAUECA"
#define VLLM_TAIL "\",\"syncroll\":{\"engine\":\"engine-0\",\"weight_version\":0}}]}"
static const char VLLM[] = VLLM_HEAD "ECDQY=" VLLM_TAIL;
static const char VLLM_ZERO[] = VLLM_HEAD "AAAAA=" VLLM_TAIL;

static int rewrite_at(sr_buf *out, const char **why, const char *path, const char *req,
                      const char *body, const sr_route_rule *r)
{
    sr_err e = SR_ERR_INIT;
    int rc = sr_px_routes_rewrite(out, why, path, req, strlen(req), body, strlen(body), r, &e);
    ck_assert_msg(rc >= 0, "%s", e.msg);
    return rc;
}

/* A completions prompt given as one list in a list is that list (as vLLM takes it): P = 2, so
 * the output region is the last row. Any other prompt that is not a flat list of integer ids is
 * left unchanged, named. */
START_TEST(nested_prompt_is_its_inner_list)
{
    sr_route_rule r = rule("{\"region\":\"output\"}", "{\"do\":\"zero\"}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    const char *flat = "{\"prompt\":[1,2],\"max_tokens\":2}";
    int rc = rewrite_at(&out, &why, "/v1/completions", flat, VLLM, &r);
    ck_assert_msg(rc == 1, "%s", why);
    ck_assert_str_eq(out.data, VLLM_ZERO);
    const char *nested = "{\"prompt\":[[1,2]],\"max_tokens\":2}";
    ck_assert_int_eq(rewrite_at(&out, &why, "/v1/completions", nested, VLLM, &r), 1);
    ck_assert_str_eq(out.data, VLLM_ZERO);
    const char *refused[] = {
        "{\"prompt\":[[1,2],[3]],\"max_tokens\":2}", "{\"prompt\":[[1,[2]]],\"max_tokens\":2}",
        "{\"prompt\":[1,2.5],\"max_tokens\":2}", "{\"prompt\":[1,\"a\"],\"max_tokens\":2}"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ck_assert_int_eq(rewrite_at(&out, &why, "/v1/completions", refused[i], VLLM, &r), 0);
        ck_assert_str_eq(why, "its request's prompt is not a list of integer token ids (nor one "
                              "such list in a list)");
        ck_assert_uint_eq(out.len, 0);
    }
    sr_buf_release(&out);
}
END_TEST

/* dynamo's routes carry a "start" written back as an integer: one that is not an integer in
 * range (here 1e300, 1.5, -1) leaves the answer unchanged, named; 1 is written back as 1. */
START_TEST(dynamo_start_must_be_an_integer)
{
    sr_route_rule r = rule(NULL, "{\"do\":\"zero\"}");
    sr_buf out = SR_BUF_INIT;
    const char *why = NULL;
    const char *req = "{\"prompt\":[1,2],\"max_tokens\":2}";
    const char *starts[] = {"1e300", "1.5", "-1", "\"1\""};
    char body[512];
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        snprintf(body, sizeof body,
                 "{\"choices\":[{\"index\":0,\"text\":\"\",\"token_ids\":[315,467],"
                 "\"finish_reason\":\"length\",\"logprobs\":null}],\"nvext\":{\"engine_data\":"
                 "{\"routed_experts\":{\"data\":\"DgIJDgwFBAgBAg0G\",\"shape\":[3,2,2],"
                 "\"start\":%s,\"dtype\":\"uint8\"}}}}",
                 starts[i]);
        ck_assert_int_eq(rewrite_at(&out, &why, "/v1/completions", req, body, &r), 0);
        ck_assert_str_eq(why, "its routes' start is not an integer in [0, 2^53)");
    }
    snprintf(body, sizeof body,
             "{\"choices\":[{\"index\":0,\"text\":\"\",\"token_ids\":[315,467],"
             "\"finish_reason\":\"length\",\"logprobs\":null}],\"nvext\":{\"engine_data\":"
             "{\"routed_experts\":{\"data\":\"DgIJDgwFBAgBAg0G\",\"shape\":[3,2,2],"
             "\"start\":1,\"dtype\":\"uint8\"}}}}");
    ck_assert_int_eq(rewrite_at(&out, &why, "/v1/completions", req, body, &r), 1);
    ck_assert_ptr_nonnull(strstr(out.data, "{\"data\":\"AAAAAAAAAAAAAAAA\",\"shape\":[3,2,2],"
                                           "\"start\":1,\"dtype\":\"uint8\"}"));
    sr_buf_release(&out);
}
END_TEST

/* The faults the proxy takes, and the ones that need the engine's state. */
START_TEST(supported_faults)
{
    const char *plan = "[{\"kind\":\"routes_all_zero\"},{\"kind\":\"latency\",\"ms\":1},"
                       "{\"kind\":\"stale_prefix_cache\"},"
                       "{\"kind\":\"routes\",\"action\":{\"do\":\"mark_partial\",\"tokens\":1}}]";
    sr_fault_plan *p = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fault_plan_parse_text(&p, plan, strlen(plan), &e), e);
    ck_assert_int_eq(sr_px_routes_supported(sr_fault_plan_at(p, 0), 0, &e), 1);
    ck_assert_int_eq(sr_px_routes_supported(sr_fault_plan_at(p, 1), 1, &e), 0);
    ck_assert_sr_code(sr_px_routes_supported(sr_fault_plan_at(p, 2), 2, &e), e, SR_E_FAULT_SPEC);
    ck_assert_ptr_nonnull(strstr(e.msg, "other weights"));
    ck_assert_sr_code(sr_px_routes_supported(sr_fault_plan_at(p, 3), 3, &e), e, SR_E_FAULT_SPEC);
    ck_assert_ptr_nonnull(strstr(e.msg, "generated tokens"));
    sr_fault_plan_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proxy_routes");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, output_rows_zeroed_rest_kept);
    tcase_add_test(tc, start_places_the_rows);
    tcase_add_test(tc, row_actions_write_the_new_shape);
    tcase_add_test(tc, constant_widens_the_envelope);
    tcase_add_test(tc, envelope_repacked_canonical);
    tcase_add_test(tc, unplaceable_answers_are_left);
    tcase_add_test(tc, zero_size_routes_are_left);
    tcase_add_test(tc, sglang_choices_take_their_own_rows);
    tcase_add_test(tc, nested_prompt_is_its_inner_list);
    tcase_add_test(tc, dynamo_start_must_be_an_integer);
    tcase_add_test(tc, supported_faults);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
