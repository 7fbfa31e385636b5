/*
 * unit.splice_diff: the splice against the reference model of tests/splice_model.h. Named
 * cases for each edge class of issue #18, then a deterministic sweep of seeded random bodies
 * (tests/splice_diff.h) with every mutation class, each spliced one-shot, threaded and streamed
 * and compared with the model: never accepted with values that differ from the reference's.
 */
#include <stdio.h>
#include <string.h>

#include "splice_diff.h"
#include "sr_test.h"

static sd_ctx g;

static void setup(void)
{
    ck_assert_int_eq(sd_init(&g), 0);
}

static void teardown(void)
{
    sd_fini(&g);
}

/* The model's verdict on a body written with ' for ". */
static sm_result model(const char *q)
{
    static char body[8192];
    size_t n = strlen(q);
    for (size_t i = 0; i <= n; i++)
        body[i] = q[i] == '\'' ? '"' : q[i];
    sm_result m;
    sm_run(&m, g.f, body, n);
    char msg[2048];
    const char *bad = sd_check(&g, body, n, msg, sizeof(msg));
    ck_assert_msg(bad == NULL, "%s\nbody: %s", bad, body);
    return m;
}

START_TEST(model_knows_the_documented_cases)
{
    sm_result m = model("{'routed_experts':{'data':'AAECAwQFBgcICQoL','shape':[3,2,2],"
                        "'dtype':'uint8'}}");
    ck_assert_int_eq(m.status, SM_OK);
    ck_assert_uint_eq(m.n, 1);
    ck_assert_uint_eq(m.e[0].nbytes, 12);
    /* Appendix B: trailing bits accepted, AAAA= refused, [0,2^32,2^32] too big. */
    m = model("{'routed_experts':{'data':'AR==','shape':[1,1,1],'dtype':'uint8'}}");
    ck_assert_int_eq(m.status, SM_OK);
    m = model("{'routed_experts':{'data':'AAAA=','shape':[1,1,3],'dtype':'uint8'}}");
    ck_assert_int_eq(m.status, SM_ENVELOPE);
    m = model("{'routed_experts':{'data':'','shape':[0,4294967296,4294967296],'dtype':'uint8'}}");
    ck_assert_int_eq(m.status, SM_ENVELOPE);
    m = model("{'routed_experts':{'data':'','shape':[0,2147483648,2147483648],'dtype':'uint8'}}");
    ck_assert_int_eq(m.status, SM_OK);
    /* §3.3: reordered, re-spaced, data null: layout drift; escaped quote key: orphan. */
    ck_assert_int_eq(
        model("{'routed_experts':{'shape':[1,1,1],'dtype':'uint8','data':'AQ=='}}").status,
        SM_LAYOUT);
    ck_assert_int_eq(
        model("{'routed_experts': {'data': 'AQ==','shape':[1,1,1],'dtype':'uint8'}}").status,
        SM_LAYOUT);
    ck_assert_int_eq(
        model("{'x\\'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'uint8'}}").status,
        SM_ORPHAN);
    /* Appendix B: a nested envelope under an unspliced one: the reference misattributes. */
    m = model("{'routed_experts':{'data':null,'shape':[1,1,1],'dtype':'uint8','s':"
              "{'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'uint8'}}}}");
    ck_assert_int_eq(m.status, SM_OK);
    ck_assert(m.stricter);
    /* A truncated body is a JSON decode error; a body cut in a blob is unterminated. */
    ck_assert_int_eq(model("{'routed_experts':{'data':'AQ==','shape':[1,1,1],'dtype':'ui").status,
                     SM_JSON);
    ck_assert_int_eq(model("{'routed_experts':{'data':'AQ=").status, SM_UNTERMINATED);
}
END_TEST

/* Sweeps `count` seeded bodies with plan `pl`; every one must agree with the model. */
static void sweep(uint64_t seed, int count, const sd_plan *pl, int *accepted)
{
    sr_buf b = SR_BUF_INIT;
    char msg[4096];
    for (int i = 0; i < count; i++) {
        sd_rng r = {seed + (uint64_t)i * 0x9e3779b97f4a7c15ull, NULL, 0, 0};
        sd_generate(&b, &r, pl);
        const char *bad = sd_check(&g, b.data, b.len, msg, sizeof(msg));
        ck_assert_msg(bad == NULL, "seed %d: %s\nbody (%zu bytes): %.*s", i, bad, b.len,
                      (int)(b.len < 3000 ? b.len : 3000), b.data);
        sm_result m;
        sm_run(&m, g.f, b.data, b.len);
        *accepted += m.status == SM_OK;
    }
    sr_buf_release(&b);
}

START_TEST(valid_bodies_agree)
{
    sd_plan none = sd_plan_all(0);
    int ok = 0;
    sweep(1, 500, &none, &ok);
    ck_assert_int_eq(ok, 500); /* unmutated bodies are valid for the reference */
}
END_TEST

START_TEST(mutated_bodies_agree)
{
    sd_plan all = sd_plan_all(9);
    int ok = 0;
    sweep(2, 3000, &all, &ok);
    ck_assert_int_gt(ok, 100); /* enough accepted bodies to compare values */
    ck_assert_int_lt(ok, 2900);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("splice_diff");
    TCase *tc = tcase_create("diff");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, model_knows_the_documented_cases);
    tcase_add_test(tc, valid_bodies_agree);
    tcase_add_test(tc, mutated_bodies_agree);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
