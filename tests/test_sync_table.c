/*
 * The weight-sync receiver's state tables (harness/engine/sync_table.h), every cell of the three
 * control planes (skyrl, vllm, sglang) in-process against the protocol written out independently
 * in tests/sync_protocol.h: accepted cells with their next state, refused ones with their named
 * error, HTTP status and a message that names the call. tests/test_sync_table_http.c drives the
 * same cells through engines over HTTP.
 */
#include <stdio.h>
#include <string.h>

#include "engine/sync_table.h"
#include "sr_err.h"
#include "sr_test.h"
#include "sync_protocol.h"

static void check_cell(sr_sync_dialect d, sr_sync_state s, sr_sync_call c)
{
    const sr_sync_cell *cell = sr_sync_table_cell(d, s, c);
    const char *want = SYNC_PROTOCOL[d][s][c];
    const char *where[3] = {sr_sync_dialect_name(d), sr_sync_state_name(s), sr_sync_call_name(c)};
    ck_assert_ptr_nonnull(cell);
    ck_assert_ptr_nonnull(want);
    char got[96];
    if (cell->code == 0)
        snprintf(got, sizeof(got), "%s", sr_sync_state_name(cell->next));
    else if (cell->code == SR_E_ENGINE_REQUEST && cell->status == 404)
        snprintf(got, sizeof(got), "-");
    else
        snprintf(got, sizeof(got), "!%s>%s", sr_code_name(cell->code),
                 sr_sync_state_name(cell->next));
    ck_assert_msg(strcmp(got, want) == 0, "%s %s x %s: table says %s, the protocol %s", where[0],
                  where[1], where[2], got, want);
    if (cell->code == 0) {
        ck_assert_uint_eq(cell->status, 200);
        ck_assert_ptr_null(cell->msg);
        return;
    }
    /* A refusal is named, classed and described, answers the plane's status and says which call
     * it refused (its message formats the call's name). */
    ck_assert_ptr_nonnull(sr_code_name(cell->code));
    ck_assert_ptr_nonnull(cell->msg);
    ck_assert_msg(strstr(cell->msg, "%s") != NULL, "%s %s x %s: message names no call", where[0],
                  where[1], where[2]);
    if (strcmp(want, "-") != 0)
        ck_assert_uint_eq(cell->status, SYNC_REFUSAL_STATUS[d]);
    char msg[512];
    snprintf(msg, sizeof(msg), cell->msg, "the_call");
    ck_assert_ptr_nonnull(strstr(msg, "the_call"));
}

START_TEST(every_cell_of_every_plane)
{
    int cells = 0;
    for (int d = 0; d < SR_SYNC_DIALECT_COUNT; d++)
        for (int s = 0; s < SR_SS_COUNT; s++)
            for (int c = 0; c < SR_SC_COUNT; c++, cells++)
                check_cell((sr_sync_dialect)d, (sr_sync_state)s, (sr_sync_call)c);
    ck_assert_int_eq(cells, 3 * 3 * 12);
}
END_TEST

/* An update never leaves a state it cannot finish, and a finish always ends the update, so a
 * failed one never blocks the next start (SkyRL #1605). */
START_TEST(finish_always_ends_the_update)
{
    for (int d = 0; d < SR_SYNC_DIALECT_COUNT; d++) {
        const sr_sync_cell *f =
            sr_sync_table_cell((sr_sync_dialect)d, SR_SS_ACTIVE, SR_SC_FINISH_BACKWARDS);
        ck_assert_int_eq(f->next, SR_SS_IDLE);
        ck_assert_int_eq(sr_sync_table_cell((sr_sync_dialect)d, SR_SS_ACTIVE, SR_SC_FINISH)->next,
                         SR_SS_IDLE);
        ck_assert_int_eq(
            sr_sync_table_cell((sr_sync_dialect)d, SR_SS_ACTIVE, SR_SC_FINISH_INCOMPLETE)->next,
            SR_SS_IDLE);
        /* sglang has no start: each update call is whole */
        if (d != SR_SYNC_DIALECT_SGLANG)
            ck_assert_int_eq(sr_sync_table_cell((sr_sync_dialect)d, SR_SS_IDLE, SR_SC_START)->next,
                             SR_SS_ACTIVE);
    }
}
END_TEST

START_TEST(lookups_outside_the_enums)
{
    ck_assert_ptr_null(sr_sync_table_cell(SR_SYNC_DIALECT_COUNT, SR_SS_IDLE, SR_SC_INIT));
    ck_assert_ptr_null(sr_sync_table_cell(SR_SYNC_DIALECT_SKYRL, SR_SS_COUNT, SR_SC_INIT));
    ck_assert_ptr_null(sr_sync_table_cell(SR_SYNC_DIALECT_SKYRL, SR_SS_IDLE, SR_SC_COUNT));
    ck_assert_ptr_null(sr_sync_state_name(SR_SS_COUNT));
    ck_assert_ptr_null(sr_sync_call_name(SR_SC_COUNT));
    ck_assert_ptr_null(sr_sync_dialect_name(SR_SYNC_DIALECT_COUNT));
    ck_assert_int_eq(sr_sync_dialect_lookup("vllm"), SR_SYNC_DIALECT_VLLM);
    ck_assert_int_eq(sr_sync_dialect_lookup("skyrl"), SR_SYNC_DIALECT_SKYRL);
    ck_assert_int_eq(sr_sync_dialect_lookup("sglang"), SR_SYNC_DIALECT_SGLANG);
    ck_assert_int_eq(sr_sync_dialect_lookup("sgl"), -1);
    ck_assert_int_eq(sr_sync_dialect_lookup(NULL), -1);
}
END_TEST

/* Without a sync_dialect the data plane's dialect picks the control plane; a given one wins. */
static sr_sync_dialect plane_of_config(const char *json)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_msg(sr_engine_config_parse(&c, json, strlen(json), "t", 0, &err) == 0, "%s: %s", json,
                  err.msg);
    sr_sync_dialect d = c.sync_dialect;
    sr_engine_config_release(&c);
    return d;
}

START_TEST(the_dialect_picks_the_control_plane)
{
    ck_assert_int_eq(sr_dialect_sync_dialect(SR_DIALECT_SKYRL), SR_SYNC_DIALECT_SKYRL);
    ck_assert_int_eq(sr_dialect_sync_dialect(SR_DIALECT_VLLM), SR_SYNC_DIALECT_VLLM);
    ck_assert_int_eq(sr_dialect_sync_dialect(SR_DIALECT_VLLM_JSON), SR_SYNC_DIALECT_VLLM);
    ck_assert_int_eq(sr_dialect_sync_dialect(SR_DIALECT_DYNAMO), SR_SYNC_DIALECT_VLLM);
    ck_assert_int_eq(sr_dialect_sync_dialect(SR_DIALECT_NEMO_RL), SR_SYNC_DIALECT_VLLM);
    ck_assert_int_eq(sr_dialect_sync_dialect(SR_DIALECT_SGLANG), SR_SYNC_DIALECT_SGLANG);
    ck_assert_int_eq(sr_dialect_sync_dialect(SR_DIALECT_COUNT), SR_SYNC_DIALECT_SKYRL);
    /* The names of messages and help texts come from the table, whole names only. */
    char names[SR_DIALECT_NAMES_MAX];
    ck_assert_str_eq(sr_dialect_names(names, sizeof(names), ", "),
                     "skyrl, vllm, vllm-json, sglang, dynamo, nemo-rl");
    ck_assert_str_eq(sr_dialect_names(names, 12, "|"), "skyrl|vllm");
    for (int d = 0; d < SR_DIALECT_COUNT; d++)
        ck_assert_ptr_nonnull(sr_dialect_get((sr_dialect)d)->field_wire);
    ck_assert_int_eq(plane_of_config("{}"), SR_SYNC_DIALECT_SKYRL);
    ck_assert_int_eq(plane_of_config("{\"dialect\":\"sglang\"}"), SR_SYNC_DIALECT_SGLANG);
    ck_assert_int_eq(plane_of_config("{\"dialect\":\"nemo-rl\"}"), SR_SYNC_DIALECT_VLLM);
    ck_assert_int_eq(plane_of_config("{\"dialect\":\"sglang\",\"sync_dialect\":\"skyrl\"}"),
                     SR_SYNC_DIALECT_SKYRL);
    ck_assert_int_eq(plane_of_config("{\"sync_dialect\":\"sglang\",\"dialect\":\"vllm\"}"),
                     SR_SYNC_DIALECT_SGLANG);
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    const char *bad = "{\"sync_dialect\":\"sgl\"}";
    ck_assert_int_eq(sr_engine_config_parse(&c, bad, strlen(bad), "t", 0, &err),
                     SR_E_ENGINE_CONFIG);
}
END_TEST

static Suite *table_suite(void)
{
    Suite *s = suite_create("sync_table");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, every_cell_of_every_plane);
    tcase_add_test(tc, finish_always_ends_the_update);
    tcase_add_test(tc, lookups_outside_the_enums);
    tcase_add_test(tc, the_dialect_picks_the_control_plane);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(table_suite());
}
