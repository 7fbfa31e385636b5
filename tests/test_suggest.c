/* sr_suggest: the edit distance, the closest name, and the text of an unknown-name error. */
#include <string.h>

#include "sr_suggest.h"
#include "sr_test.h"

START_TEST(distance_counts_edits_and_swaps)
{
    ck_assert_uint_eq(sr_suggest_distance("batch", "batch"), 0);
    ck_assert_uint_eq(sr_suggest_distance("bacth", "batch"), 1); /* adjacent swap */
    ck_assert_uint_eq(sr_suggest_distance("expertz", "experts"), 1);
    ck_assert_uint_eq(sr_suggest_distance("", "abc"), 3);
    ck_assert_uint_eq(sr_suggest_distance("kitten", "sitting"), 3);
    /* Bounded: names are compared on their first 64 bytes whatever their length. */
    char a[200], b[200];
    memset(a, 'a', sizeof(a) - 1);
    a[sizeof(a) - 1] = '\0';
    memcpy(b, a, sizeof(b));
    b[150] = 'b';
    ck_assert_uint_eq(sr_suggest_distance(a, b), 0);
    b[10] = 'b';
    ck_assert_uint_eq(sr_suggest_distance(a, b), 1);
}
END_TEST

START_TEST(closest_is_a_typo_a_prefix_or_a_shared_beginning)
{
    static const char *const kinds[] = {"rollout", "sync_weights", "collate",     "pause",
                                        "resume",  "wait",         "check_state", "kill_engine"};
    ck_assert_str_eq(sr_suggest_closest("rollot", kinds, 8), "rollout");
    ck_assert_str_eq(sr_suggest_closest("sync", kinds, 8), "sync_weights"); /* a prefix */
    ck_assert_ptr_null(sr_suggest_closest("abort", kinds, 8));              /* nothing near */
    static const char *const classes[] = {"all_zero_capture", "stale_weights", "newer_weights"};
    ck_assert_str_eq(sr_suggest_closest("stale_prefix", classes, 3), "stale_weights");
    static const char *const keys[] = {"i", "f", "l", NULL};
    ck_assert_ptr_null(sr_suggest_closest("x", keys, 4)); /* one byte: no guess */
}
END_TEST

START_TEST(text_lists_the_names_and_fits)
{
    static const char *const known[] = {"text", "json", "junit", "html", "all"};
    char buf[128];
    ck_assert_str_eq(sr_suggest_text(buf, sizeof(buf), "jsn", known, 5, "known"),
                     "did you mean 'json'? known: text, json, junit, html, all");
    ck_assert_str_eq(sr_suggest_text(buf, sizeof(buf), "xml", known, 5, NULL),
                     "valid: text, json, junit, html, all");
    char small[24];
    ck_assert_str_eq(sr_suggest_text(small, sizeof(small), "xml", known, 5, NULL),
                     "valid: text, json, j...");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("suggest");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, distance_counts_edits_and_swaps);
    tcase_add_test(tc, closest_is_a_typo_a_prefix_or_a_shared_beginning);
    tcase_add_test(tc, text_lists_the_names_and_fits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
