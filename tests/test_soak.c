/* The soak's growth rule (runner_soak.h, FORMAT.md §15) on synthetic series, and which
 * scenarios cannot repeat (sr_soak_unsupported). */
#include <string.h>

#include "run/runner_soak.h"
#include "scenario/scenario.h"
#include "sr_test.h"

static sr_soak_series series_of(const int64_t *v, int n)
{
    sr_soak_series s;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < n; i++)
        sr_soak_series_add(&s, v[i]);
    return s;
}

/* A connection pool's working set: the descriptors go up and down within a range (the issue's
 * samples 32 -> 41 -> 35 -> 38), and the last sample is above the first. */
START_TEST(fluctuating_pool_passes)
{
    int64_t v[1600];
    uint64_t x = 7;
    for (int i = 0; i < 1600; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = 32 + (int64_t)((x >> 33) % 10);
    }
    v[0] = 37;
    v[1599] = 39;
    sr_soak_series s = series_of(v, 1600);
    sr_soak_growth g = sr_soak_judge(&s, 0);
    ck_assert_int_eq(g.judged, 1);
    ck_assert_int_eq(g.leak, 0);
    ck_assert_int_le(g.growth, 0);
    /* The old rule, last > first + 0, would have fired. */
    ck_assert_int_gt(s.last, s.first);
    /* The same on short soaks: the four samples, once and twice. */
    int64_t short_v[] = {32, 41, 35, 38, 32, 41, 35, 38};
    for (int n = 4; n <= 8; n += 4) {
        s = series_of(short_v, n);
        g = sr_soak_judge(&s, 0);
        ck_assert_int_eq(g.judged, 1);
        ck_assert_int_eq(g.leak, 0);
    }
}
END_TEST

/* One leaked descriptor per iteration fires, short or long; over a pool fluctuating by 5 once
 * the soak is long enough for the leak to outgrow the early quarter's range. */
START_TEST(steady_leak_fails)
{
    static const int n[] = {4, 8, 20, 1000, 100000};
    for (size_t k = 0; k < sizeof(n) / sizeof(n[0]); k++) {
        sr_soak_series s;
        memset(&s, 0, sizeof(s));
        for (int i = 0; i < n[k]; i++)
            sr_soak_series_add(&s, 32 + i + (n[k] > 8 && i % 3 == 1 ? 5 : 0));
        sr_soak_growth g = sr_soak_judge(&s, 0);
        ck_assert_msg(g.judged && g.rising && g.leak, "%d iterations: not judged a leak", n[k]);
        ck_assert_int_gt(g.growth, 0);
        /* An allowance above the growth lets it pass. */
        ck_assert_int_eq(sr_soak_judge(&s, g.growth).leak, 0);
    }
}
END_TEST

/* Resident memory steps up once (an arena or cache reaching its size), by more than the
 * allowance, then stays flat: not a leak, wherever the step falls. */
START_TEST(rss_step_once_passes)
{
    const int64_t mib = 1 << 20, allowance = 8 * mib;
    for (int at = 1; at < 400; at += 7) {
        sr_soak_series s;
        memset(&s, 0, sizeof(s));
        for (int i = 0; i < 400; i++)
            sr_soak_series_add(&s, 20 * mib + (i >= at ? 24 * mib : 0) + (i % 5) * 4096);
        sr_soak_growth g = sr_soak_judge(&s, allowance);
        ck_assert_msg(g.judged && !g.leak, "a step at iteration %d was judged a leak", at);
    }
    /* A slow RSS leak past the allowance still fires: 64 KiB per iteration over 400. */
    sr_soak_series s;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 400; i++)
        sr_soak_series_add(&s, 20 * mib + (int64_t)i * 65536);
    ck_assert_int_eq(sr_soak_judge(&s, allowance).leak, 1);
}
END_TEST

/* Too few samples are not judged; buckets merge and keep the extremes. */
START_TEST(series_bookkeeping)
{
    int64_t v[3] = {1, 2, 3};
    sr_soak_series s = series_of(v, 3);
    ck_assert_int_eq(sr_soak_judge(&s, 0).judged, 0);
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 1000; i++)
        sr_soak_series_add(&s, i == 500 ? -5 : i == 501 ? 5000 : 10);
    ck_assert_int_eq(s.n, 1000);
    ck_assert_int_le(s.n_buckets, SR_SOAK_BUCKETS);
    ck_assert_int_eq(s.first, 10);
    ck_assert_int_eq(s.last, 10);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int b = 0; b < s.n_buckets; b++) {
        lo = s.lo[b] < lo ? s.lo[b] : lo;
        hi = s.hi[b] > hi ? s.hi[b] : hi;
    }
    ck_assert_int_eq(lo, -5);
    ck_assert_int_eq(hi, 5000);
}
END_TEST

static int unsupported(const char *text, char *why, size_t n)
{
    sr_scenario *s = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_scenario_parse(&s, text, strlen(text), "t.json", &e), e);
    int u = sr_soak_unsupported(s, why, n);
    sr_scenario_free(s);
    return u;
}

#define HEAD                                                                                       \
    "{\"id\":\"t\",\"description\":\"d\","                                                         \
    "\"model\":{\"vocab\":100,\"layers\":2,\"experts\":8,\"topk\":2},"

START_TEST(unsupported_names_step_and_key)
{
    char why[512];
    /* Counters are per iteration and every sample keeps its engine, so exact counts repeat, per
     * engine too, and so does a wait on one engine. */
    ck_assert_int_eq(unsupported(HEAD "\"engines\":{\"count\":2},\"steps\":[{\"kind\":\"rollout\","
                                      "\"async\":true},{\"kind\":\"wait\",\"until\":"
                                      "{\"min_inflight\":1}},{\"kind\":\"check_state\","
                                      "\"engine\":0,\"requests\":{\"generate\":1}}]}",
                                 why, sizeof(why)),
                     0);
    /* Faults fired by probability 1 and no limit repeat; by nth they do not. */
    ck_assert_int_eq(unsupported(HEAD
                                 "\"engines\":{\"faults\":[{\"kind\":\"reset\",\"id\":\"r\"}]},"
                                 "\"steps\":[{\"kind\":\"rollout\"},{\"kind\":\"check_state\","
                                 "\"faults_fired\":{\"r\":1}}],\"expect\":{\"verdict\":\"fail\","
                                 "\"checks\":[\"client.retry_exhausted\"]}}",
                                 why, sizeof(why)),
                     0);
    ck_assert_int_eq(
        unsupported(HEAD "\"engines\":{\"faults\":[{\"kind\":\"reset\",\"id\":\"r\",\"nth\":[1]}]},"
                         "\"steps\":[{\"kind\":\"rollout\"},{\"kind\":\"check_state\","
                         "\"name\":\"cs\",\"faults_fired\":{\"r\":1}}]}",
                    why, sizeof(why)),
        1);
    ck_assert_ptr_nonnull(
        strstr(why, "step cs: check_state.faults_fired.r: the fault fires by nth"));
    ck_assert_int_eq(unsupported(HEAD "\"engines\":{\"count\":2},\"steps\":[{\"kind\":\"rollout\"},"
                                      "{\"kind\":\"kill_engine\",\"name\":\"k\"}],\"expect\":"
                                      "{\"verdict\":\"fail\",\"checks\":[\"engine.crashed\"]}}",
                                 why, sizeof(why)),
                     1);
    ck_assert_ptr_nonnull(strstr(why, "step k: kill_engine"));
    ck_assert_int_eq(unsupported(HEAD "\"steps\":[{\"kind\":\"rollout\"}],\"budgets\":[{\"phase\":"
                                      "\"scenario\",\"percentile\":100,\"max_ms\":60000}]}",
                                 why, sizeof(why)),
                     1);
    ck_assert_ptr_nonnull(strstr(why, "budgets[0]"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("soak");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, fluctuating_pool_passes);
    tcase_add_test(tc, steady_leak_fails);
    tcase_add_test(tc, rss_step_once_passes);
    tcase_add_test(tc, series_bookkeeping);
    tcase_add_test(tc, unsupported_names_step_and_key);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
