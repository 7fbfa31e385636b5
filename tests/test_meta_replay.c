/*
 * The meta checks of recorded answers (run/meta.h, sr_meta_replay_*): the answers a client
 * decoded, built here as sr_client_result values, judged with no request of their own. The
 * relations across a session's turns (meta.version_monotonic, meta.multiturn_prefix) fire only
 * where the answers say enough (a version, positions both carried); each relation fires once a
 * session. tests/replay.sh covers the same function behind `syncroll replay` on real captures.
 */
#include "run/meta.h"
#include "run/meta_priv.h"
#include "sr_test.h"

#define L 2
#define K 2

/* One turn's answer: rows [start, start + n) with ids (p * 7 + l * 3 + j) % 64 unless changed. */
typedef struct answer {
    sr_client_result res;
    sr_client_req q;
    int32_t prompt[64];
    int32_t tokens[16];
    sr_ndarray rows;
} answer;

static int32_t id_at(int64_t p, int l, int j)
{
    return (int32_t)((p * 7 + l * 3 + j) % 64);
}

static void make(answer *a, size_t P, size_t G, int64_t start, int64_t version)
{
    memset(a, 0, sizeof *a);
    for (size_t i = 0; i < P; i++)
        a->prompt[i] = (int32_t)(i + 1);
    for (size_t i = 0; i < G; i++)
        a->tokens[i] = (int32_t)(100 + i);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = a->prompt;
    q.n_tokens = P;
    q.return_routes = 1;
    q.prompt_start = start;
    a->q = q;
    int64_t n = (int64_t)(P + G) - 1 - start, shape[3] = {n, L, K};
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_ndarray_alloc(&a->rows, SR_DTYPE_INT32, 3, shape, &e), e);
    for (int64_t r = 0; r < n; r++)
        for (int l = 0; l < L; l++)
            for (int j = 0; j < K; j++)
                sr_ndarray_set_i64(&a->rows, (uint64_t)((r * L + l) * K + j),
                                   id_at(start + r, l, j));
    a->res.path = "/skyrl/v1/generate";
    a->res.prompt_start_sent = start;
    a->res.token_ids = a->tokens;
    a->res.n_tokens = G;
    a->res.finish_reason = "length";
    a->res.has_routes = 1;
    a->res.routes = a->rows;
    a->res.weight_version = version;
}

/* Sets position p's row (every layer) to position `like`'s ids. */
static void copy_row(answer *a, int64_t p, int64_t like)
{
    int64_t r = p - a->q.prompt_start;
    for (int l = 0; l < L; l++)
        for (int j = 0; j < K; j++)
            sr_ndarray_set_i64(&a->rows, (uint64_t)((r * L + l) * K + j), id_at(like, l, j));
    a->res.routes = a->rows;
}

/* Judges the answers as one session's turns 1..n into a fresh entry; returns the entry. */
static sr_scenario_result *judge(sr_run_result **run, answer *as, const int *rcs, int n)
{
    sr_err e = SR_ERR_INIT;
    sr_scenario_result *sc = NULL;
    ck_assert_sr_ok(sr_run_result_new(run, &e), e);
    ck_assert_sr_ok(sr_run_result_add_scenario(&sc, *run, &e), e);
    sr_meta_replay *m = NULL;
    ck_assert_sr_ok(sr_meta_replay_new(&m, SR_DIALECT_SKYRL, &e), e);
    for (int i = 0; i < n; i++)
        ck_assert_sr_ok(sr_meta_replay_keep(m, i + 1, &as[i].q, rcs ? rcs[i] : 0, &as[i].res,
                                            rcs && rcs[i] ? "the client's message" : NULL, &e),
                        e);
    sr_check_where at = SR_CHECK_WHERE_NONE;
    at.step = 0;
    at.sample = 3;
    ck_assert_sr_ok(sr_meta_replay_judge(NULL, m, sc, &at, "scenario s step replay sample 3", &e),
                    e);
    sr_meta_replay_free(m);
    for (int i = 0; i < n; i++)
        sr_ndarray_release(&as[i].rows);
    return sc;
}

static uint64_t fired(const sr_scenario_result *sc, const char *name)
{
    for (size_t i = 0; i < sc->n_fired; i++)
        if (strcmp(sc->fired[i].name, name) == 0)
            return sc->fired[i].count;
    return 0;
}

/* The first kept check called `name`, or a failure. */
static const sr_check *check_of(const sr_scenario_result *sc, const char *name)
{
    for (size_t i = 0; i < sc->n_checks; i++)
        if (strcmp(sc->checks[i].name, name) == 0)
            return &sc->checks[i];
    ck_abort_msg("%s did not fire", name);
    return NULL;
}

START_TEST(clean_turns_fire_nothing)
{
    answer a[2];
    make(&a[0], 8, 4, 0, 1);
    make(&a[1], 14, 4, 11, 1); /* turn 2 from the rows turn 1 held */
    sr_run_result *run = NULL;
    sr_scenario_result *sc = judge(&run, a, NULL, 2);
    ck_assert_msg(sc->n_fired == 0, "fired %s", sc->n_fired ? sc->fired[0].name : "");
    sr_run_result_free(run);
}
END_TEST

START_TEST(a_version_going_back_is_version_monotonic)
{
    answer a[3];
    make(&a[0], 8, 4, 0, 3);
    make(&a[1], 14, 4, 11, -1); /* carries none: not compared */
    make(&a[2], 20, 4, 17, 2);
    sr_run_result *run = NULL;
    sr_scenario_result *sc = judge(&run, a, NULL, 3);
    ck_assert_uint_eq(fired(sc, "meta.version_monotonic"), 1);
    const sr_check *c = check_of(sc, "meta.version_monotonic");
    ck_assert_int_eq(c->where.turn, 3);
    ck_assert_int_eq(c->where.sample, 3);
    ck_assert_msg(strstr(c->message, "scenario s step replay sample 3 turn 3: ") == c->message &&
                      strstr(c->message, "version 2 after an earlier turn's 3"),
                  "%s", c->message);
    ck_assert_uint_eq(sc->n_fired, 1);
    sr_run_result_free(run);
}
END_TEST

START_TEST(overlapping_rows_under_one_version_must_be_equal)
{
    /* Turn 2 asks from row 5, inside turn 1's rows [0, 11): positions 5..10 are in both. */
    answer a[2];
    make(&a[0], 8, 4, 0, 1);
    make(&a[1], 14, 4, 5, 1);
    copy_row(&a[1], 7, 30);
    sr_run_result *run = NULL;
    sr_scenario_result *sc = judge(&run, a, NULL, 2);
    ck_assert_uint_eq(fired(sc, "meta.multiturn_prefix"), 1);
    const sr_check *c = check_of(sc, "meta.multiturn_prefix");
    ck_assert_int_eq(c->where.turn, 2);
    ck_assert_int_eq(c->where.row, 7);
    ck_assert_msg(strstr(c->message, "turn 2: the positions turn 1's answer also carried: row 7"),
                  "%s", c->message);
    sr_run_result_free(run);
    /* After a weight change the rows may differ: not compared. */
    make(&a[0], 8, 4, 0, 1);
    make(&a[1], 14, 4, 5, 2);
    copy_row(&a[1], 7, 30);
    sc = judge(&run, a, NULL, 2);
    ck_assert_uint_eq(fired(sc, "meta.multiturn_prefix"), 0);
    sr_run_result_free(run);
}
END_TEST

START_TEST(an_aborted_answer_with_rows_is_missing_not_stale)
{
    answer a[1];
    make(&a[0], 8, 3, 0, 1);
    a[0].res.finish_reason = "abort";
    int rc[1] = {SR_E_CLIENT_ABORTED_TURN};
    sr_run_result *run = NULL;
    sr_scenario_result *sc = judge(&run, a, rc, 1);
    ck_assert_uint_eq(fired(sc, "meta.missing_not_stale"), 1);
    ck_assert_uint_eq(sc->n_fired, 1);
    sr_run_result_free(run);
    /* Any other failure of the client is its own check, not judged here. */
    make(&a[0], 8, 3, 0, 1);
    rc[0] = SR_E_CLIENT_ROUTES_MISSING;
    sc = judge(&run, a, rc, 1);
    ck_assert_uint_eq(sc->n_fired, 0);
    sr_run_result_free(run);
}
END_TEST

START_TEST(boundaries_and_repeats_fire_once_a_session)
{
    /* Both turns copy the row before the first output row: one boundary_rows for the session. */
    answer a[2];
    make(&a[0], 8, 4, 0, 1);
    copy_row(&a[0], 8, 7);
    make(&a[1], 14, 4, 11, 1);
    copy_row(&a[1], 14, 13);
    sr_run_result *run = NULL;
    sr_scenario_result *sc = judge(&run, a, NULL, 2);
    ck_assert_uint_eq(fired(sc, "meta.boundary_rows"), 1);
    ck_assert_int_eq(check_of(sc, "meta.boundary_rows")->where.turn, 1);
    ck_assert_uint_eq(sc->n_fired, 1);
    sr_run_result_free(run);
    /* Turn 2's first row (the turn boundary, row 11 on a wire that sends the start) copies the
     * row after it. */
    make(&a[0], 8, 4, 0, 1);
    make(&a[1], 14, 4, 11, 1);
    copy_row(&a[1], 11, 12);
    sc = judge(&run, a, NULL, 2);
    ck_assert_uint_eq(fired(sc, "meta.boundary_rows"), 1);
    ck_assert_int_eq(check_of(sc, "meta.boundary_rows")->where.row, 11);
    sr_run_result_free(run);
}
END_TEST

/* A turn's prompt never outgrows its array, whatever the engine generated: an engine that ignores
 * max_tokens fills turn 2 to the cap, and turn 3 still keeps room for the user's tokens. */
START_TEST(next_turn_stays_within_the_prompt_cap)
{
    sr_meta_opts o;
    memset(&o, 0, sizeof o);
    o.vocab = 100;
    sr_meta_ctx x;
    memset(&x, 0, sizeof x);
    x.o = &o;
    static int32_t out[300];
    sr_meta_resp t1;
    memset(&t1, 0, sizeof t1);
    t1.P = 12;
    for (size_t i = 0; i < t1.P; i++)
        t1.prompt[i] = (int32_t)(i + 1);
    t1.G = 300;
    t1.tokens = out;
    for (int i = 0; i < 300; i++)
        out[i] = 7;
    /* Each turn's prompt sits in an array of SR_META_MAX_PROMPT ids followed by a guard. */
    struct {
        int32_t p[SR_META_MAX_PROMPT];
        int32_t guard[8];
    } b;
    for (int turn = 2; turn <= 4; turn++) {
        for (int i = 0; i < 8; i++)
            b.guard[i] = -77;
        size_t n = sr_meta_next_turn(&x, b.p, &t1);
        ck_assert_uint_le(n, SR_META_MAX_PROMPT);
        for (int i = 0; i < 8; i++)
            ck_assert_int_eq(b.guard[i], -77);
        ck_assert_int_eq(b.p[0], 1); /* the conversation's start is kept */
        memcpy(t1.prompt, b.p, n * sizeof(int32_t));
        t1.P = n;
    }
}
END_TEST

static Suite *meta_replay_suite(void)
{
    Suite *s = suite_create("meta_replay");
    TCase *tc = tcase_create("meta_replay");
    tcase_add_test(tc, clean_turns_fire_nothing);
    tcase_add_test(tc, next_turn_stays_within_the_prompt_cap);
    tcase_add_test(tc, a_version_going_back_is_version_monotonic);
    tcase_add_test(tc, overlapping_rows_under_one_version_must_be_equal);
    tcase_add_test(tc, an_aborted_answer_with_rows_is_missing_not_stale);
    tcase_add_test(tc, boundaries_and_repeats_fire_once_a_session);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(meta_replay_suite());
}
