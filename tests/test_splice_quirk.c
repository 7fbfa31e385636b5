/*
 * sr_splice: the quirk prefix_without_quote (bug skyrl-lookalike-suffix). Without it a key that
 * merely ends in a field's name is never spliced; with it the look-alike's blob is spliced for
 * the field, and the misattribution is caught as splice.misattributed, whichever of the two keys
 * comes first and however the body is fed (one-shot, threaded, streamed byte by byte).
 */
#include <stdint.h>
#include <string.h>

#include "sr_fields.h"
#include "sr_splice.h"
#include "sr_test.h"

/* A look-alike envelope [1,2,3] before the real routes [2,3,4]. */
static const char LOOKALIKE_FIRST[] =
    "{\"choices\":[{\"token_ids\":[7],\"finish_reason\":\"stop\",\"logprobs\":null,"
    "\"not_routed_experts\":{\"data\":\"AQID\",\"shape\":[1,1,3],\"dtype\":\"uint8\"},"
    "\"routed_experts\":{\"data\":\"AgME\",\"shape\":[1,1,3],\"dtype\":\"uint8\"}}]}";

/* The same two envelopes, the real routes first. */
static const char LOOKALIKE_AFTER[] =
    "{\"choices\":[{\"token_ids\":[7],\"finish_reason\":\"stop\",\"logprobs\":null,"
    "\"routed_experts\":{\"data\":\"AgME\",\"shape\":[1,1,3],\"dtype\":\"uint8\"},"
    "\"not_routed_experts\":{\"data\":\"AQID\",\"shape\":[1,1,3],\"dtype\":\"uint8\"}}]}";

/* No look-alike at all. */
static const char CLEAN[] =
    "{\"choices\":[{\"token_ids\":[7],\"finish_reason\":\"stop\",\"logprobs\":null,"
    "\"routed_experts\":{\"data\":\"AgME\",\"shape\":[1,1,3],\"dtype\":\"uint8\"}}]}";

enum { ONE_SHOT = 0, THREADED, STREAM_1, FEED_MODES };

static sr_fields *builtins(void)
{
    sr_fields *f = NULL;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_fields_new(&f, &err), err);
    ck_assert_sr_ok(sr_fields_add_builtins(f, &err), err);
    return f;
}

/* Splices `body` with the quirk on or off, fed one of three ways; returns the code. */
static int splice_body(const char *body, int quirk, int mode, uint8_t routes_out[3], sr_err *err)
{
    sr_fields *f = builtins();
    sr_splice_opts o = SR_SPLICE_OPTS_INIT;
    o.prefix_without_quote = quirk;
    if (mode == THREADED) {
        o.threads = 2;
        o.par_window = 16;
    }
    sr_splicer *s = NULL;
    ck_assert_sr_ok(sr_splicer_new(&s, f, &o, err), *err);
    const sr_splice_result *r = NULL;
    size_t len = strlen(body);
    int rc;
    if (mode == STREAM_1) {
        rc = sr_splice_stream_begin(s, (int64_t)len, err);
        for (size_t i = 0; !rc && i < len; i++)
            rc = sr_splice_stream_feed(s, body + i, 1, err);
        if (!rc)
            rc = sr_splice_stream_finish(s, &r, err);
    } else {
        rc = sr_splice(s, body, len, -1, &r, err);
    }
    if (!rc) {
        const sr_splice_entry *routes = NULL;
        for (size_t i = 0; i < r->count; i++)
            if (strcmp(r->entries[i].field->name, "routed_experts") == 0)
                routes = &r->entries[i];
        ck_assert_ptr_nonnull(routes);
        ck_assert_str_eq(routes->path, "choices[0].routed_experts");
        ck_assert_uint_eq(routes->array.nbytes, 3);
        memcpy(routes_out, routes->array.data, 3);
    }
    sr_splicer_free(s);
    sr_fields_free(f);
    return rc;
}

START_TEST(without_quirk_lookalike_is_not_spliced)
{
    const char *bodies[] = {LOOKALIKE_FIRST, LOOKALIKE_AFTER, CLEAN};
    for (int b = 0; b < 3; b++) {
        sr_err err = SR_ERR_INIT;
        uint8_t got[3] = {0, 0, 0};
        ck_assert_sr_ok(splice_body(bodies[b], 0, _i, got, &err), err);
        /* The real routes, never the look-alike's [1, 2, 3]. */
        ck_assert_int_eq(got[0], 2);
        ck_assert_int_eq(got[1], 3);
        ck_assert_int_eq(got[2], 4);
    }
}
END_TEST

START_TEST(quirk_misattributes_lookalike_before)
{
    sr_err err = SR_ERR_INIT;
    uint8_t got[3];
    ck_assert_sr_code(splice_body(LOOKALIKE_FIRST, 1, _i, got, &err), err,
                      SR_E_SPLICE_MISATTRIBUTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "choices[0].routed_experts"));
    /* The offset is the look-alike's first base64 character. */
    ck_assert_int_eq(err.offset, (int64_t)(strstr(LOOKALIKE_FIRST, "AQID") - LOOKALIKE_FIRST));
}
END_TEST

START_TEST(quirk_misattributes_lookalike_after)
{
    sr_err err = SR_ERR_INIT;
    uint8_t got[3];
    ck_assert_sr_code(splice_body(LOOKALIKE_AFTER, 1, _i, got, &err), err,
                      SR_E_SPLICE_MISATTRIBUTED);
    ck_assert_int_eq(err.offset, (int64_t)(strstr(LOOKALIKE_AFTER, "AQID") - LOOKALIKE_AFTER));
}
END_TEST

START_TEST(quirk_is_harmless_without_lookalike)
{
    sr_err err = SR_ERR_INIT;
    uint8_t got[3] = {0, 0, 0};
    ck_assert_sr_ok(splice_body(CLEAN, 1, _i, got, &err), err);
    ck_assert_int_eq(got[0], 2);
    ck_assert_int_eq(got[2], 4);
}
END_TEST

START_TEST(quirk_keeps_escaped_key_an_orphan)
{
    /* x\"routed_experts has its opening quote: the quirk does not change §3.3's outcome. */
    const char body[] = "{\"choices\":[{\"token_ids\":[7],\"routed_experts\":null,"
                        "\"x\\\"routed_experts\":{\"data\":\"AQID\",\"shape\":[1,1,3],"
                        "\"dtype\":\"uint8\"}}]}";
    sr_err err = SR_ERR_INIT;
    uint8_t got[3];
    ck_assert_sr_code(splice_body(body, 1, _i, got, &err), err, SR_E_SPLICE_ORPHAN);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("splice_quirk");
    TCase *t = tcase_create("prefix_without_quote");
    tcase_add_loop_test(t, without_quirk_lookalike_is_not_spliced, 0, FEED_MODES);
    tcase_add_loop_test(t, quirk_misattributes_lookalike_before, 0, FEED_MODES);
    tcase_add_loop_test(t, quirk_misattributes_lookalike_after, 0, FEED_MODES);
    tcase_add_loop_test(t, quirk_is_harmless_without_lookalike, 0, FEED_MODES);
    tcase_add_loop_test(t, quirk_keeps_escaped_key_an_orphan, 0, FEED_MODES);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
