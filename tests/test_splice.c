/*
 * sr_splice: every splice row of skyrl.md Appendix A and every case of §3.3, each asserting
 * its named error. Every body is spliced every way (splice_harness.h): one-shot, threaded and
 * streamed in many chunkings must agree.
 */
#include "splice_harness.h"

/* ---- Appendix A and §3.3 ---- */

START_TEST(one_routes_envelope)
{
    const char *q = "{'choices':[{'token_ids':[10,11],'finish_reason':'stop','logprobs':{'content':"
                    "[{'logprob':-0.1},{'logprob':-9999.0}]}," ROUTES_12 "}]}";
    ck_assert_sr_ok(checkq(q), g_err);
    ck_assert_uint_eq(g_res->count, 2);
    const sr_splice_entry *t = entry(0), *r = entry(1);
    ck_assert_int_eq(t->kind, SR_SPLICE_INT_ARRAY);
    ck_assert_str_eq(t->path, "choices[0].token_ids");
    ck_assert_int_eq(t->spliced, 1);
    ck_assert_int_eq(t->array.dtype, SR_DTYPE_INT32);
    ck_assert_int_eq(t->array.shape[0], 2);
    ck_assert_int_eq(((const int32_t *)t->array.data)[1], 11);
    ck_assert_int_eq(r->kind, SR_SPLICE_ENVELOPE);
    ck_assert_str_eq(r->path, "choices[0].routed_experts");
    ck_assert_str_eq(r->field->name, "routed_experts");
    ck_assert_int_eq(r->array.dtype, SR_DTYPE_UINT8);
    ck_assert_int_eq(r->array.ndim, 3);
    ck_assert_int_eq(r->array.shape[0], 3);
    ck_assert_uint_eq(r->array.nbytes, 12);
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(((const uint8_t *)r->array.data)[i], i);
    ck_assert_uint_eq((uintptr_t)r->array.data % 64, 0);
    ck_assert_ptr_null(r->sidecar);
    /* The parser saw "" in place of the blob and {} in place of the token ids. */
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(g_res->doc, "choices"), 0);
    const cJSON *re = cJSON_GetObjectItem(c0, "routed_experts");
    ck_assert_str_eq(cJSON_GetObjectItem(re, "data")->valuestring, "");
    ck_assert_ptr_eq(r->node, re);
    ck_assert(cJSON_IsObject(cJSON_GetObjectItem(c0, "token_ids")));
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "finish_reason")->valuestring, "stop");
    ck_assert_int_eq(g_res->stats.passes, 1);
    ck_assert_uint_eq(g_res->stats.bytes_scanned, strlen(J(q)));
    ck_assert_uint_eq(g_res->stats.blobs, 1);
    ck_assert_uint_eq(g_res->stats.blob_chars, 16);
}
END_TEST

START_TEST(both_fields_several_choices_one_pass)
{
    /* rollout_sample_support int32 [1,2] = [5, -1]. */
    const char *q =
        "{'choices':[{'token_ids':[1]," ROUTES_12
        ",'rollout_sample_support':{'data':'BQAAAP////8=','shape':[1,2],'dtype':'int32'}},"
        "{'token_ids':[2],'routed_experts':{'data':'AQID','shape':[1,1,3],'dtype':'uint8'},"
        "'rollout_sample_support':null}]}";
    ck_assert_sr_ok(checkq(q), g_err);
    ck_assert_uint_eq(g_res->count, 6);
    ck_assert_str_eq(entry(1)->path, "choices[0].routed_experts");
    ck_assert_uint_eq(entry(1)->array.nbytes, 12);
    ck_assert_str_eq(entry(2)->path, "choices[0].rollout_sample_support");
    ck_assert_int_eq(entry(2)->array.dtype, SR_DTYPE_INT32);
    ck_assert_int_eq(((const int32_t *)entry(2)->array.data)[0], 5);
    ck_assert_int_eq(((const int32_t *)entry(2)->array.data)[1], -1);
    ck_assert_str_eq(entry(4)->path, "choices[1].routed_experts");
    ck_assert_int_eq(((const uint8_t *)entry(4)->array.data)[2], 3);
    ck_assert_int_eq(entry(5)->kind, SR_SPLICE_NULL);
    ck_assert_int_eq(g_res->stats.passes, 1);
    ck_assert_uint_eq(g_res->stats.bytes_scanned, strlen(J(q)));
    ck_assert_uint_eq(g_res->stats.blobs, 3);
    ck_assert_uint_eq(g_res->stats.int_arrays, 2);
}
END_TEST

START_TEST(null_and_absent_fields_pass_through)
{
    const char *q =
        "{'choices':[{'token_ids':[1],'finish_reason':'length','routed_experts':null}]}";
    ck_assert_sr_ok(checkq(q), g_err);
    ck_assert_int_eq(entry(1)->kind, SR_SPLICE_NULL);
    ck_assert_str_eq(entry(1)->path, "choices[0].routed_experts");
    ck_assert_uint_eq(g_res->stats.blobs, 0);
    ck_assert_sr_ok(checkq("{'choices':[{'finish_reason':null}]}"), g_err);
    ck_assert_uint_eq(g_res->count, 0);
    char *a = cJSON_PrintUnformatted(g_res->doc);
    ck_assert_str_eq(a, J("{'choices':[{'finish_reason':null}]}"));
    free(a);
}
END_TEST

START_TEST(layout_drift_is_named)
{
    expect_error("{'choices':[{'routed_experts':{'dtype':'uint8','shape':[3,2,2],'data':"
                 "'AAECAwQFBgcICQoL'}}]}",
                 SR_E_SPLICE_DRIFT, "survived the scan unspliced");
    ck_assert_str_eq(sr_class_name(sr_code_class(g_err.code)), "protocol");
    expect_error("{'choices': [{'routed_experts': {'data': 'AAECAwQFBgcICQoL', 'shape': [3, 2, 2],"
                 " 'dtype': 'uint8'}}]}",
                 SR_E_SPLICE_DRIFT, "choices[0].routed_experts");
    expect_error("{'choices':[{'routed_experts':{'data':null,'shape':[0,2,2],'dtype':'uint8'}}]}",
                 SR_E_SPLICE_DRIFT, "layout drifted");
    expect_error("{'routed_experts': {'data':'AQID','shape':[1,1,3],'dtype':'uint8'}}",
                 SR_E_SPLICE_DRIFT, NULL);
    expect_error("{'routed\\u005fexperts':{'data':'AQID','shape':[1,1,3],'dtype':'uint8'}}",
                 SR_E_SPLICE_DRIFT, NULL);
    /* A spliced envelope before a drifted one: the drifted one is named. */
    expect_error("{'a':{" ROUTES_12 "},'b':{'routed_experts':{'shape':[1],'data':''}}}",
                 SR_E_SPLICE_DRIFT, "b.routed_experts");
}
END_TEST

START_TEST(unregistered_and_narrowed_fields_stay_strings)
{
    ck_assert_sr_ok(checkq("{'some_other_array':{'data':'AQID','shape':[3],'dtype':'uint8'}}"),
                    g_err);
    ck_assert_uint_eq(g_res->count, 0);
    const cJSON *o = cJSON_GetObjectItem(g_res->doc, "some_other_array");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "data")->valuestring, "AQID");

    sr_fields *n;
    sr_err err = SR_ERR_INIT;
    const char *only[] = {"rollout_sample_support"};
    sr_fields *all = builtin_fields();
    ck_assert_sr_ok(sr_fields_narrow(&n, all, only, 1, &err), err);
    sr_fields_free(all);
    use_fields(n);
    ck_assert_sr_ok(checkq("{'choices':[{'token_ids':[4]," ROUTES_12 "}]}"), g_err);
    ck_assert_uint_eq(g_res->count, 0);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(g_res->doc, "choices"), 0);
    o = cJSON_GetObjectItem(c0, "routed_experts");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "data")->valuestring, "AAECAwQFBgcICQoL");
    ck_assert(cJSON_IsArray(cJSON_GetObjectItem(c0, "token_ids")));
    ck_assert_uint_eq(g_res->stats.blobs, 0);
}
END_TEST

START_TEST(lookalikes_are_not_spliced)
{
    /* A string value that contains the prefix: its quotes are escaped, so no anchor occurs. */
    ck_assert_sr_ok(checkq("{'note':'\\'routed_experts\\':{\\'data\\':\\'AAAA\\'}'," ROUTES_12 "}"),
                    g_err);
    ck_assert_uint_eq(g_res->count, 1);
    ck_assert_str_eq(cJSON_GetObjectItem(g_res->doc, "note")->valuestring,
                     J("'routed_experts':{'data':'AAAA'}"));
    /* not_routed_experts: the prefix includes the key's opening quote. */
    ck_assert_sr_ok(
        checkq("{'not_routed_experts':{'data':'AQID','shape':[1,1,3],'dtype':'uint8'}}"), g_err);
    ck_assert_uint_eq(g_res->count, 0);
    ck_assert_uint_eq(g_res->stats.blobs, 0);
    const cJSON *o = cJSON_GetObjectItem(g_res->doc, "not_routed_experts");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "data")->valuestring, "AQID");
    /* An object whose first key is "data" but holds an object: not an anchor. */
    ck_assert_sr_ok(checkq("{'a':{'data':{'data':'x'}}," ROUTES_12 "}"), g_err);
    ck_assert_uint_eq(g_res->count, 1);
}
END_TEST

START_TEST(escaped_quote_key_is_an_orphan)
{
    expect_error("{'x\\'routed_experts':{'data':'AQID','shape':[1,1,3],'dtype':'uint8'}}",
                 SR_E_SPLICE_ORPHAN, "{routed_experts: 1}");
    /* With a real envelope too: the real one keeps its own blob, the escaped one is orphaned
     * (the reference pairs them by count and reports the same orphan). */
    expect_error("{'a':{'x\\'routed_experts':{'data':'AQID','shape':[1,1,3],'dtype':'uint8'}},"
                 "'routed_experts':{'data':'','shape':[0,1,3],'dtype':'uint8'}}",
                 SR_E_SPLICE_ORPHAN, "{routed_experts: 1}");
    /* Counts balanced by a reordered envelope: the reference silently hands it the escaped key's
     * blob; here the reordered envelope is layout drift. */
    expect_error("{'a':{'x\\'routed_experts':{'data':'AQID','shape':[1,1,3],'dtype':'uint8'}},"
                 "'routed_experts':{'dtype':'uint8','data':'','shape':[0,1,3]}}",
                 SR_E_SPLICE_DRIFT, NULL);
}
END_TEST

/* Issue #18 item 6: pybase64 validate=True accepts non-zero trailing bits and drops them. */
START_TEST(trailing_bits_are_accepted_and_noted)
{
    /* 0x01 as "AR==" (canonical "AQ=="), and 00 00 as "AAB=" (canonical "AAA="). */
    ck_assert_sr_ok(checkq("{'routed_experts':{'data':'AR==','shape':[1,1,1],'dtype':'uint8'}}"),
                    g_err);
    ck_assert_uint_eq(((const unsigned char *)entry(0)->array.data)[0], 1);
    ck_assert_int_eq(entry(0)->b64_noncanonical, 28); /* the R */
    ck_assert_sr_ok(checkq("{'routed_experts':{'data':'AAB=','shape':[1,1,2],'dtype':'uint8'}}"),
                    g_err);
    ck_assert_int_eq(entry(0)->b64_noncanonical, 29);
    ck_assert_sr_ok(checkq("{'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'uint8'}}"),
                    g_err);
    ck_assert_int_eq(entry(0)->b64_noncanonical, -1);
    /* A long blob (many threaded windows) whose last quad is non-canonical. */
    static char body[4096];
    int n = snprintf(body, sizeof(body), "{'routed_experts':{'data':'");
    for (int i = 0; i < 600; i++)
        body[n++] = 'A';
    n += snprintf(body + n, sizeof(body) - (size_t)n, "AB==','shape':[451,1,1],'dtype':'uint8'}}");
    ck_assert_sr_ok(checkq(body), g_err);
    ck_assert_int_eq(entry(0)->b64_noncanonical, 28 + 600);
    /* '=' after a complete quad stays an error (real pybase64 rejects it). */
    expect_error("{'routed_experts':{'data':'AAAA=','shape':[1,1,3],'dtype':'uint8'}}",
                 SR_E_B64_PADDING, NULL);
    expect_error("{'routed_experts':{'data':'AAA=AAAA','shape':[1,1,5],'dtype':'uint8'}}",
                 SR_E_B64_PADDING, NULL);
    /* strict_base64 (client.strict_base64): the old rule, base64.bad_padding at the 'R'. */
    use_fields_strict(builtin_fields(), 1);
    expect_error("{'routed_experts':{'data':'AR==','shape':[1,1,1],'dtype':'uint8'}}",
                 SR_E_B64_PADDING, "trailing bits");
    ck_assert_int_eq(g_err.offset, 28);
    expect_error(body, SR_E_B64_PADDING, "trailing bits");
    ck_assert_int_eq(g_err.offset, 28 + 600);
    ck_assert_sr_ok(checkq("{'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'uint8'}}"),
                    g_err);
}
END_TEST

START_TEST(truncations_are_transient)
{
    const char *full = J("{'choices':[{'token_ids':[10,11]," ROUTES_12 "}]}");
    size_t n = strlen(full);
    const char *blob = strstr(full, "AAEC");
    /* Cut inside the base64. */
    int rc = check_len(full, (size_t)(blob - full) + 5, -1);
    ck_assert_sr_code(rc, g_err, SR_E_SPLICE_UNTERMINATED);
    ck_assert_str_eq(g_err.msg, "unterminated base64 data for routed_experts in the response body");
    ck_assert_int_eq(g_err.offset, blob - full);
    ck_assert_int_eq(sr_code_class(rc), SR_CLASS_TRANSIENT);
    /* Cut right after the blob, and near the end. */
    rc = check_len(full, (size_t)(blob - full) + 17, -1);
    ck_assert_sr_code(rc, g_err, SR_E_SPLICE_TRUNCATED);
    rc = check_len(full, n - 1, -1);
    ck_assert_sr_code(rc, g_err, SR_E_SPLICE_TRUNCATED);
    ck_assert_int_eq(sr_code_class(rc), SR_CLASS_TRANSIENT);
    /* Cut inside the token ids. */
    rc = check_len(full, (size_t)(strstr(full, "11") - full), -1);
    ck_assert_sr_code(rc, g_err, SR_E_SPLICE_TRUNCATED);
    /* Every cut is either accepted (the whole body) or a transient error. */
    for (size_t cut = 0; cut < n; cut++) {
        rc = check_len(full, cut, -1);
        ck_assert_msg(sr_code_class(rc) == SR_CLASS_TRANSIENT, "cut %zu gave %s", cut,
                      sr_code_name(rc));
    }
    /* Not a prefix of any JSON: invalid, still transient (e.g. a gateway's HTML page). */
    ck_assert_sr_code(check("<html>502 Bad Gateway</html>"), g_err, SR_E_SPLICE_JSON);
    ck_assert_sr_code(checkq("{'a':1}}"), g_err, SR_E_SPLICE_JSON);
    ck_assert_int_eq(g_err.offset, 7);
    /* Offsets after spliced blobs and integer arrays are offsets in the raw body. */
    const char *after = J("{'token_ids':[1,2,3]," ROUTES_12 "}x");
    ck_assert_sr_code(check(after), g_err, SR_E_SPLICE_JSON);
    ck_assert_int_eq(g_err.offset, (int64_t)strlen(after) - 1);
    /* A data string with an escaped quote is cut there; the rest does not parse. */
    expect_error("{'routed_experts':{'data':'ab\\'cd','shape':[1],'dtype':'uint8'}}",
                 SR_E_SPLICE_JSON, NULL);
}
END_TEST

START_TEST(content_length_and_size_limits)
{
    const char *full = J("{" ROUTES_12 "}");
    size_t n = strlen(full);
    ck_assert_sr_ok(check_len(full, n, (int64_t)n), g_err);
    ck_assert_sr_code(check_len(full, n - 3, (int64_t)n), g_err, SR_E_SPLICE_SHORT);
    ck_assert_int_eq(g_err.offset, (int64_t)n - 3);
    ck_assert_sr_code(check_len(full, 20, (int64_t)n), g_err, SR_E_SPLICE_SHORT);
    ck_assert_sr_code(check_len(full, 30, (int64_t)n), g_err, SR_E_SPLICE_UNTERMINATED);
    ck_assert_sr_code(check_len(full, n, (int64_t)n - 1), g_err, SR_E_SPLICE_LONG);
    ck_assert_int_eq(g_err.offset, (int64_t)n - 1);
    ck_assert_int_eq(sr_code_class(SR_E_SPLICE_LONG), SR_CLASS_PROTOCOL);

    sr_splicer *s;
    sr_err err = SR_ERR_INIT;
    sr_splice_opts o = SR_SPLICE_OPTS_INIT;
    o.max_body = 40;
    ck_assert_sr_ok(sr_splicer_new(&s, g_fields, &o, &err), err);
    const sr_splice_result *r;
    ck_assert_sr_code(sr_splice(s, full, n, -1, &r, &err), err, SR_E_SPLICE_TOO_LARGE);
    ck_assert_int_eq(err.offset, 40);
    /* Announced at exactly the maximum: held to its Content-Length, so more bytes are
     * splice.long_body (protocol), not splice.body_too_large (resource). */
    ck_assert_sr_code(sr_splice(s, full, n, 40, &r, &err), err, SR_E_SPLICE_LONG);
    ck_assert_int_eq(err.offset, 40);
    ck_assert_sr_ok(sr_splice(s, "{}", 2, -1, &r, &err), err);
    ck_assert_sr_ok(sr_splice_stream_begin(s, -1, &err), err);
    ck_assert_sr_ok(sr_splice_stream_feed(s, full, 30, &err), err);
    ck_assert_sr_code(sr_splice_stream_feed(s, full + 30, n - 30, &err), err,
                      SR_E_SPLICE_TOO_LARGE);
    /* Sticky: further feeds and the finish report the same error. */
    ck_assert_sr_code(sr_splice_stream_feed(s, "x", 1, &err), err, SR_E_SPLICE_TOO_LARGE);
    ck_assert_sr_code(sr_splice_stream_finish(s, &r, &err), err, SR_E_SPLICE_TOO_LARGE);
    ck_assert_sr_code(sr_splice_stream_feed(s, "x", 1, &err), err, SR_E_INVAL);
    sr_splicer_free(s);
}
END_TEST

START_TEST(envelope_contract_rows)
{
    ck_assert_sr_ok(checkq("{'routed_experts':{'data':'','shape':[0,2,2],'dtype':'uint8'}}"),
                    g_err);
    ck_assert_uint_eq(entry(0)->array.nbytes, 0);
    ck_assert_int_eq(entry(0)->array.shape[0], 0);
    expect_error("{'routed_experts':{'data':'AQ==','shape':[2,1,1],'dtype':'uint8'}}",
                 SR_E_ENV_BYTE_COUNT,
                 "packed array data has 1 bytes, expected 2 for uint8[2, 1, 1]");
    expect_error("{'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'uint16'}}",
                 SR_E_ENV_DTYPE, "is not one of ['int16', 'int32', 'uint8']");
    expect_error("{'routed_experts':{'data':'!','shape':[1,1,1],'dtype':'uint8'}}", SR_E_B64_CHAR,
                 "invalid packed array envelope: ");
    ck_assert_int_eq(g_err.offset, 27);
    expect_error("{'routed_experts':{'data':'AQ=','shape':[1,1,1],'dtype':'uint8'}}",
                 SR_E_B64_LENGTH, "invalid packed array envelope: ");
    /* Missing keys are reported before bad base64 (§2.2 step 2 reads dtype first). */
    expect_error("{'routed_experts':{'data':'!!','shape':[1,1,1]}}", SR_E_ENV_INVALID, "dtype");
    const char *shapes[] = {"[true,1,1]", "[1.0,1,1]", "[-1,1,1]", "[1,1]", "[1,1,1,1]"};
    for (int i = 0; i < 5; i++) {
        char q[200];
        snprintf(q, sizeof(q), "{'routed_experts':{'data':'AQ==','shape':%s,'dtype':'uint8'}}",
                 shapes[i]);
        expect_error(q, SR_E_ENV_SHAPE, "is not 3 non-negative dimensions");
    }
    /* int32 whose max is 300 -> int16; int16 of shape [0,L,K] -> uint8; negatives. */
    expect_error("{'routed_experts':{'data':'LAEAAAAAAAA=','shape':[1,1,2],'dtype':'int32'}}",
                 SR_E_ENV_NON_CANONICAL, "non-canonical dtype int32; expected int16");
    expect_error("{'routed_experts':{'data':'','shape':[0,2,8],'dtype':'int16'}}",
                 SR_E_ENV_NON_CANONICAL, "non-canonical dtype int16; expected uint8");
    expect_error("{'routed_experts':{'data':'//8AAQ==','shape':[1,1,2],'dtype':'int16'}}",
                 SR_E_ROUTES_NEGATIVE, NULL);
    ck_assert_sr_ok(
        checkq("{'routed_experts':{'data':'AAAAAQ==','shape':[1,1,2],'dtype':'int16'}}"), g_err);
    ck_assert_sr_ok(
        checkq("{'routed_experts':{'data':'AAAAAACAAAA=','shape':[1,1,2],'dtype':'int32'}}"),
        g_err);
    /* Registered keys holding something else. */
    expect_error("{'routed_experts':'AQID'}", SR_E_ENV_NOT_OBJECT, "must be an object");
    expect_error("{'routed_experts':[1,2]}", SR_E_ENV_NOT_OBJECT, NULL);
    expect_error("{'routed_experts':{'shape':[1,1,1],'dtype':'uint8'}}", SR_E_ENV_INVALID, NULL);
}
END_TEST

START_TEST(sidecars_paths_and_nesting)
{
    ck_assert_sr_ok(checkq("{'routed_experts':{'data':'AQID','shape':[1,1,3],'dtype':'uint8',"
                           "'note':'x','layers':[0,2]},'deep':[{'x':[{},{'rollout_sample_support':"
                           "{'data':'BQAAAP////8=','shape':[1,2],'dtype':'int32','k':1}}]}]}"),
                    g_err);
    ck_assert_uint_eq(g_res->count, 2);
    ck_assert_str_eq(entry(0)->path, "routed_experts");
    char *side = cJSON_PrintUnformatted(entry(0)->sidecar);
    ck_assert_str_eq(side, J("{'note':'x','layers':[0,2]}"));
    free(side);
    ck_assert_str_eq(entry(1)->path, "deep[0].x[1].rollout_sample_support");
    side = cJSON_PrintUnformatted(entry(1)->sidecar);
    ck_assert_str_eq(side, J("{'k':1}"));
    free(side);
    cJSON *doc = sr_splice_take_doc(g_one);
    ck_assert_ptr_nonnull(doc);
    cJSON_Delete(doc);
}
END_TEST

START_TEST(custom_fields_and_nullability)
{
    sr_fields *f = builtin_fields();
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(
        sr_fields_load_file(f, SYNCROLL_SOURCE_DIR "/fixtures/fields/logit_topk.json", &err), err);
    use_fields(f);
    expect_error("{'logit_topk':null}", SR_E_ENV_NOT_OBJECT, "does not allow null");
    ck_assert_sr_ok(checkq("{'logit_topk':{'data':'AACAPwAAAEA=','shape':[1,2],'dtype':'float32'},"
                           "'prompt_ids':[3, 262143],'expert_load':{'data':'AQI=','shape':[1,2],"
                           "'dtype':'uint8'}}"),
                    g_err);
    ck_assert_int_eq(entry(0)->array.dtype, SR_DTYPE_FLOAT32);
    ck_assert_int_eq(entry(1)->array.shape[0], 2);
    expect_error("{'prompt_ids':[262144]}", SR_E_INTARRAY_STRICT, "prompt_ids");
    expect_error("{'expert_load':{'data':'AQACAA==','shape':[1,2],'dtype':'int16'}}",
                 SR_E_ENV_NON_CANONICAL, "expected uint8");
}
END_TEST

START_TEST(integer_arrays)
{
    ck_assert_sr_ok(checkq("{'token_ids':[ 1 ,\n 2 ]}"), g_err);
    ck_assert_int_eq(entry(0)->spliced, 1);
    ck_assert_int_eq(entry(0)->array.shape[0], 2);
    ck_assert_sr_ok(checkq("{'token_ids': [5, 6, 7], 'x': {'token_ids': []}}"), g_err);
    ck_assert_int_eq(entry(0)->spliced, 0);
    ck_assert_int_eq(((const int32_t *)entry(0)->array.data)[2], 7);
    ck_assert_int_eq(entry(1)->spliced, 0);
    ck_assert_int_eq(entry(1)->array.shape[0], 0);
    ck_assert_sr_ok(checkq("{'x\\'token_ids':[1,2],'token_ids':null}"), g_err);
    ck_assert_uint_eq(g_res->count, 0);
    /* Valid JSON the reference accepts (it never checks token_ids): refused, in their own
     * class, spliced or re-spaced alike. */
    expect_error("{'token_ids':[1,-2]}", SR_E_INTARRAY_STRICT, "reference accepts");
    expect_error("{'token_ids':[1,2.5]}", SR_E_INTARRAY_STRICT, "not an integer literal");
    expect_error("{'token_ids': [1, 2.5]}", SR_E_INTARRAY_STRICT, NULL);
    expect_error("{'token_ids': [1, -2]}", SR_E_INTARRAY_STRICT, NULL);
    expect_error("{'token_ids':{}}", SR_E_INTARRAY_STRICT, "not an integer array");
    expect_error("{'token_ids':['a']}", SR_E_INTARRAY_STRICT, NULL);
    static const char *const strict[] = {"[-1]",   "[1e2]",  "[1.0]",    "[2147483648]",
                                         "[true]", "[null]", "[[1]]",    "[1,{}]",
                                         "[1E0]",  "[-0.0]", "[1e-400]", "[99999999999999999999]"};
    for (size_t i = 0; i < sizeof(strict) / sizeof(strict[0]); i++) {
        char q[128];
        snprintf(q, sizeof(q), "{'token_ids':%s}", strict[i]);
        expect_error(q, SR_E_INTARRAY_STRICT, "token_ids");
        ck_assert_int_eq(sr_code_class(g_err.code), SR_CLASS_PROTOCOL);
    }
}
END_TEST

/* sr_jdom gives consecutive objects that repeat a key one shared copy of it; the walk's memory
 * of the last unregistered key must not swallow a registered one shared that way. */
START_TEST(registered_key_shared_by_consecutive_objects)
{
    ck_assert_sr_ok(checkq("{'choices':[{'token_ids':[1,2]},{'token_ids':[3]},{'x':1},"
                           "{'token_ids':[4,5,6]}]}"),
                    g_err);
    ck_assert_uint_eq(g_res->count, 3);
    ck_assert_int_eq(entry(1)->spliced, 1);
    ck_assert_int_eq(entry(1)->array.shape[0], 1);
    ck_assert_int_eq(((const int32_t *)entry(2)->array.data)[2], 6);
}
END_TEST

/* The walk steps over objects of one scalar member under the last unregistered key (the logprob
 * objects); one with a second member, or whose member holds an envelope, is still walked. */
START_TEST(one_key_objects_are_stepped_over_only_when_plain)
{
    ck_assert_sr_ok(checkq("{'content':[{'x':-0.1},{'x':-0.2},{'x':-0.3," ROUTES_12 "},{'x':-0.4},"
                           "{'x':{" ROUTES_12 "}},{'x':-0.5}]}"),
                    g_err);
    ck_assert_uint_eq(g_res->count, 2);
    ck_assert_str_eq(entry(0)->path, "content[2].routed_experts");
    ck_assert_int_eq(entry(0)->kind, SR_SPLICE_ENVELOPE);
    ck_assert_str_eq(entry(1)->path, "content[4].x.routed_experts");
    ck_assert_int_eq(entry(1)->kind, SR_SPLICE_ENVELOPE);
}
END_TEST

START_TEST(retry_classification)
{
    ck_assert(sr_splice_retryable(SR_E_SPLICE_UNTERMINATED, 0));
    ck_assert(sr_splice_retryable(SR_E_SPLICE_TRUNCATED, 0));
    ck_assert(sr_splice_retryable(SR_E_SPLICE_JSON, 0));
    ck_assert(sr_splice_retryable(SR_E_SPLICE_SHORT, 0));
    ck_assert(!sr_splice_retryable(SR_E_SPLICE_DRIFT, 0));
    ck_assert(!sr_splice_retryable(SR_E_SPLICE_ORPHAN, 0));
    ck_assert(!sr_splice_retryable(SR_E_ENV_BYTE_COUNT, 0));
    /* retry_json_decode_only: the reference retries only its JSON decoder's errors. */
    ck_assert(!sr_splice_retryable(SR_E_SPLICE_UNTERMINATED, 1));
    ck_assert(!sr_splice_retryable(SR_E_SPLICE_SHORT, 1));
    ck_assert(sr_splice_retryable(SR_E_SPLICE_TRUNCATED, 1));
    ck_assert(sr_splice_retryable(SR_E_SPLICE_JSON, 1));
    ck_assert(!sr_splice_retryable(SR_E_SPLICE_DRIFT, 1));
}
END_TEST

/* ---- review regressions ---- */

/* A float dimension is refused wherever the shape sits after the blob (dtype first, spaced),
 * as the reference's unpack refuses it; only the envelope's own "shape" key counts. */
START_TEST(float_shape_after_dtype_is_refused)
{
    expect_error("{'routed_experts':{'data':'AQID','dtype':'uint8','shape':[1.0,1,3]}}",
                 SR_E_ENV_SHAPE, "is not 3 non-negative dimensions");
    expect_error("{'routed_experts':{'data':'AQID', 'shape' : [1,1e0,3], 'dtype':'uint8'}}",
                 SR_E_ENV_SHAPE, "is not 3 non-negative dimensions");
    expect_error("{'routed_experts':{'data':'AQID','dtype':'uint8','note':'shape','x':{'shape':"
                 "[1]},'shape':[1,1,3.0]}}",
                 SR_E_ENV_SHAPE, NULL);
    ck_assert_sr_ok(checkq("{'routed_experts':{'data':'AQID','dtype':'uint8','note':'shape','x':{"
                           "'shape':[1.5]},'shape':[1,1,3]}}"),
                    g_err);
    ck_assert_int_eq(entry(0)->array.shape[2], 3);
}
END_TEST

/* An empty integer array read from the document by a splicer that has no integer store yet:
 * its view was NULL + 0 (undefined behaviour, reported by clang's -fsanitize=undefined). */
START_TEST(unspliced_empty_integer_array_on_a_fresh_splicer)
{
    ck_assert_sr_ok(checkq("{'token_ids': []}"), g_err);
    ck_assert_uint_eq(g_res->count, 1);
    ck_assert_int_eq(entry(0)->kind, SR_SPLICE_INT_ARRAY);
    ck_assert_int_eq(entry(0)->spliced, 0);
    ck_assert_int_eq(entry(0)->array.shape[0], 0);
    ck_assert_uint_eq(entry(0)->array.nbytes, 0);
}
END_TEST

/* A body short of its Content-Length is splice.short_body wherever it was cut, inside the
 * token ids too (it was splice.truncated there), so the retry_json_decode_only quirk declines it
 * as the reference's client does (sr_splice_retryable). */
START_TEST(short_body_cut_inside_integer_array)
{
    const char *full = J("{'choices':[{'token_ids':[10,11]," ROUTES_12 "}]}");
    size_t n = strlen(full);
    size_t cut = (size_t)(strstr(full, "11") - full);
    ck_assert_sr_code(check_len(full, cut, (int64_t)n), g_err, SR_E_SPLICE_SHORT);
    ck_assert_int_eq(g_err.offset, (int64_t)cut);
    ck_assert(!sr_splice_retryable(g_err.code, 1));
    ck_assert_sr_code(check_len(full, cut, -1), g_err, SR_E_SPLICE_TRUNCATED);
}
END_TEST

/* The test below needs an impossible allocation to fail instead of aborting the process under
 * AddressSanitizer; without a sanitizer this hook is never called. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

/* An output region that cannot be allocated is resource.nomem, also with err == NULL (which
 * was dereferenced). */
START_TEST(begin_without_memory_is_named_with_null_err)
{
    sr_splicer *s;
    sr_err err = SR_ERR_INIT;
    sr_splice_opts o = SR_SPLICE_OPTS_INIT;
    o.max_body = (size_t)1 << 62;
    ck_assert_sr_ok(sr_splicer_new(&s, g_fields, &o, &err), err);
    ck_assert_sr_code(sr_splice_stream_begin(s, (int64_t)1 << 61, &err), err, SR_E_NOMEM);
    ck_assert_int_eq(sr_splice_stream_begin(s, (int64_t)1 << 61, NULL), SR_E_NOMEM);
    ck_assert_sr_ok(sr_splice_stream_begin(s, 16, &err), err);
    sr_splicer_free(s);
}
END_TEST

/* What cJSON tolerates but RFC 8259 and the reference's parser refuse is splice.invalid_json
 * (transient, as the reference retries its decoder's errors), at the offending body byte. */
START_TEST(lenient_json_is_refused)
{
    static const struct {
        const char *q;
        int64_t at;
    } rows[] = {
        {"{'a':\x01 1}", 5}, {"{'a':'x\x01y'}", 7},
        {"{'a':01}", 6},     {"\xEF\xBB\xBF{'a':1}", 0},
        {"{'a':-.5}", 6},    {"{'a':1.}", 7},
        {"{'a':1}\x0b", 7},  {"{'token_ids':[1],\x01'a':1}", 17},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        expect_error(rows[i].q, SR_E_SPLICE_JSON, "not valid JSON at byte");
        ck_assert_int_eq(g_err.offset, rows[i].at);
    }
    ck_assert_sr_code(check_len("{\"a\":1}\0", 8, -1), g_err, SR_E_SPLICE_JSON);
    ck_assert_int_eq(g_err.offset, 7);
    ck_assert_sr_ok(checkq("{'a':[1, -0, 2.5e-3, 1E+2, true, null],\r\n\t'b':'\\u0001'}"), g_err);
    ck_assert_sr_ok(check("123"), g_err);
}
END_TEST

/* An entry's path names each key as sr_jdom_path_key does (the walk writes an identifier of up
 * to 64 bytes itself): 64 identifier bytes plain, 65 quoted and abbreviated, a leading digit,
 * another byte or no byte quoted, and indices of two digits. */
START_TEST(paths_name_keys_as_the_parser_does)
{
    char k64[65], k65[66], body[640];
    memset(k64, 'k', 64);
    k64[64] = '\0';
    memset(k65, 'q', 65);
    k65[65] = '\0';
    snprintf(body, sizeof(body),
             "{\"%s\":{\"token_ids\":[1]},\"%s\":{\"token_ids\":[2]},\"9a\":{\"token_ids\":[3]},"
             "\"a-b\":{\"token_ids\":[4]},\"\":{\"token_ids\":[5]},\"_x9\":[0,1,2,3,4,5,6,7,8,"
             "9,[],{},{\"token_ids\":[6]}],\"Zz_0\":{\"y\":{\"token_ids\":[7]}}}",
             k64, k65);
    ck_assert_sr_ok(check(body), g_err);
    ck_assert_uint_eq(g_res->count, 7);
    char want[128];
    snprintf(want, sizeof(want), "%s.token_ids", k64);
    ck_assert_str_eq(entry(0)->path, want);
    snprintf(want, sizeof(want), "[\"%.64s...\"].token_ids", k65);
    ck_assert_str_eq(entry(1)->path, want);
    ck_assert_str_eq(entry(2)->path, "[\"9a\"].token_ids");
    ck_assert_str_eq(entry(3)->path, "[\"a-b\"].token_ids");
    ck_assert_str_eq(entry(4)->path, "[\"\"].token_ids");
    ck_assert_str_eq(entry(5)->path, "_x9[12].token_ids");
    ck_assert_str_eq(entry(6)->path, "Zz_0.y.token_ids");
    ck_assert_int_eq(((const int32_t *)entry(5)->array.data)[0], 6);
}
END_TEST

/* Paths stay proportional to the body: a long key is abbreviated, and thousands of entries
 * nested deep fail with resource.limit instead of growing the path table to a gigabyte. */
START_TEST(paths_are_bounded_by_the_body)
{
    char key[301];
    memset(key, 'k', 300);
    key[300] = '\0';
    char body[512];
    snprintf(body, sizeof(body), "{\"%s\":{\"token_ids\":[1]}}", key);
    ck_assert_sr_ok(check(body), g_err);
    ck_assert_uint_eq(g_res->count, 1);
    char want[128];
    snprintf(want, sizeof(want), "[\"%.64s...\"].token_ids", key);
    ck_assert_str_eq(entry(0)->path, want);

    const int depth = 900, entries = 20000;
    sr_buf b = SR_BUF_INIT;
    sr_err e = SR_ERR_INIT;
    for (int i = 0; i < depth; i++)
        ck_assert_sr_ok(sr_buf_puts(&b, "[", &e), e);
    for (int i = 0; i < entries; i++)
        ck_assert_sr_ok(sr_buf_puts(&b, i ? ",{\"token_ids\":[]}" : "{\"token_ids\":[]}", &e), e);
    for (int i = 0; i < depth; i++)
        ck_assert_sr_ok(sr_buf_puts(&b, "]", &e), e);
    sr_err_clear(&g_err);
    int rc = sr_splice(g_one, b.data, b.len, -1, &g_res, &g_err);
    ck_assert_sr_code(rc, g_err, SR_E_LIMIT);
    sr_buf_release(&b);
}
END_TEST

/* Threaded windows of 16 characters: a window that ends in '==' with data in the next window
 * must be decoded again sequentially and fail exactly as one thread does (the golden body
 * fixtures/bodies/pad_at_window_end.body is the same case end to end). */
START_TEST(padding_where_threaded_windows_meet)
{
    sr_splicer *s;
    sr_err err = SR_ERR_INIT;
    sr_splice_opts o = SR_SPLICE_OPTS_INIT;
    o.threads = 2;
    o.par_window = 16;
    ck_assert_sr_ok(sr_splicer_new(&s, g_fields, &o, &err), err);
    const char *body =
        J("{'routed_experts':{'data':'AQIDBAUGBwgJCg==AQID','shape':[1,1,13],'dtype':'uint8'}}");
    const char *blob = strstr(body, "AQID");
    const sr_splice_result *r;
    ck_assert_sr_code(sr_splice(s, body, strlen(body), -1, &r, &err), err, SR_E_B64_PADDING);
    ck_assert_int_eq(err.offset, (int64_t)(blob - body) + 16);
    sr_splicer_free(s);
    ck_assert_sr_code(check(body), g_err, SR_E_B64_PADDING);
    ck_assert_int_eq(g_err.offset, (int64_t)(blob - body) + 16);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("splice");
    TCase *tc = tcase_create("appendix_a");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, one_routes_envelope);
    tcase_add_test(tc, paths_are_bounded_by_the_body);
    tcase_add_test(tc, both_fields_several_choices_one_pass);
    tcase_add_test(tc, null_and_absent_fields_pass_through);
    tcase_add_test(tc, layout_drift_is_named);
    tcase_add_test(tc, unregistered_and_narrowed_fields_stay_strings);
    tcase_add_test(tc, lookalikes_are_not_spliced);
    tcase_add_test(tc, escaped_quote_key_is_an_orphan);
    tcase_add_test(tc, trailing_bits_are_accepted_and_noted);
    tcase_add_test(tc, truncations_are_transient);
    tcase_add_test(tc, content_length_and_size_limits);
    tcase_add_test(tc, envelope_contract_rows);
    tcase_add_test(tc, sidecars_paths_and_nesting);
    tcase_add_test(tc, custom_fields_and_nullability);
    tcase_add_test(tc, integer_arrays);
    tcase_add_test(tc, registered_key_shared_by_consecutive_objects);
    tcase_add_test(tc, one_key_objects_are_stepped_over_only_when_plain);
    tcase_add_test(tc, retry_classification);
    tcase_add_test(tc, float_shape_after_dtype_is_refused);
    tcase_add_test(tc, unspliced_empty_integer_array_on_a_fresh_splicer);
    tcase_add_test(tc, short_body_cut_inside_integer_array);
    tcase_add_test(tc, begin_without_memory_is_named_with_null_err);
    tcase_add_test(tc, lenient_json_is_refused);
    tcase_add_test(tc, padding_where_threaded_windows_meet);
    tcase_add_test(tc, paths_name_keys_as_the_parser_does);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
