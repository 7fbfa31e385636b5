/*
 * The weight-sync receiver's state table (harness/engine/sync_table.h) over real HTTP, every cell
 * of every control plane, enumerated through the table's own API (sr_sync_table_cell) so that a
 * new cell is driven without an edit. For each cell a fresh engine (a child process on loopback,
 * engine_util.h) is driven into the cell's state with the plane's own calls and the cell's call
 * is made. What the wire shows (the state after, the check of a refusal) must be the protocol
 * written out independently in tests/sync_protocol.h, so a wrong cell in the table fails here
 * too; and the answer must render the table's cell: its HTTP status, the plane's body shape
 * (skyrl {"error":{"message","type":"RuntimeError","code","check"}}, vllm {"detail","check"},
 * sglang {"success":false,"message","check"}), its check name and message, its next state, one
 * more protocol error (none for an accepted call, which answers 200); then a generate answers 200.
 * Each plane also walks its happy path.
 *
 * Cells no request reaches are listed below with the reason and asserted as the reason says:
 * ABSENT (the plane has no route for the call: the router answers the other plane's route 404
 * before the table is consulted; asserted byte for byte, nothing moves), SHADOWED (the request
 * steps another cell first, which refuses it, or the call's condition cannot hold in that state:
 * it answers as that cell) and UNREACHABLE_STATE (no cell of the plane leads to the state;
 * asserted through the table). The atomic-version cells (update_busy, finish_incomplete) are
 * driven with a bucket of every tensor half sent over a raw connection, in flight.
 */
#include <stdarg.h>

#include "engine/sync_table.h"
#include "engine_util.h"
#include "sync_protocol.h"

#define GEN "{\"token_ids\":[5,6,7],\"sampling_params\":{\"max_tokens\":3}}"
/* The version held before a call naming a lower one (BACK); FWD is never below what is held. */
#define HELD 3
#define BACK 1
#define FWD  5

/* One POST: a JSON body, or (bucket > 0) a bucket of every tensor at that version with its
 * bytes, the plane's weight route (engine_util.h). */
typedef struct hreq {
    const char *path, *body;
    int bucket;
} hreq;

/* How a plane makes each call over HTTP (an absent call: the route that makes it elsewhere). */
typedef struct plane {
    sr_sync_dialect d;
    const char *cfg;
    hreq call[SR_SC_COUNT];
    hreq hold;             /* from uninit, the engine holds version HELD */
    hreq pause, resume;    /* around check_paused */
    sr_sync_call happy[8]; /* the happy path from uninit, ended by SR_SC_COUNT */
} plane;

#define V_INIT                                                                                     \
    "{\"init_info\":{\"master_address\":\"127.0.0.1\",\"master_port\":29500,"                      \
    "\"rank_offset\":1,\"world_size\":2}}"
#define S_INIT                                                                                     \
    "{\"master_address\":\"127.0.0.1\",\"master_port\":29500,\"rank_offset\":1,"                   \
    "\"world_size\":2,\"group_name\":\"syncroll\",\"backend\":\"nccl\"}"
#define SKY_FIN    "{\"method\":\"skyrl_finish_weight_update\""
#define STR_(x)    #x
#define STR(x)     STR_(x)
#define VERSION(v) "{\"new_version\":\"" STR(v) "\"}"
#define CHECKSUM   "{\"action\":\"checksum\"}"
#define DESTROY    "{\"group_name\":\"syncroll\"}"

static const plane PLANES[SR_SYNC_DIALECT_COUNT] = {
    [SR_SYNC_DIALECT_SKYRL] =
        {SR_SYNC_DIALECT_SKYRL,
         "{\"sync_dialect\":\"skyrl\",\"seed\":3,\"model\":{\"layers\":2}}",
         {
             [SR_SC_INIT] = {"/init_weight_transfer_engine", V_INIT, 0},
             [SR_SC_START] = {"/collective_rpc",
                              "{\"method\":\"skyrl_start_weight_update\",\"kwargs\":"
                              "{\"is_checkpoint_format\":true}}",
                              0},
             [SR_SC_UPDATE] = {"/collective_rpc", NULL, FWD},
             [SR_SC_FINISH] = {"/collective_rpc", SKY_FIN "}", 0},
             [SR_SC_FINISH_BACKWARDS] =
                 {"/collective_rpc",
                  SKY_FIN ",\"kwargs\":{\"syncroll\":{\"target_version\":" STR(BACK) "}}}", 0},
             [SR_SC_SET_VERSION] = {"/update_weight_version", VERSION(FWD), 0},
             [SR_SC_SET_VERSION_BACKWARDS] = {"/update_weight_version", VERSION(BACK), 0},
             [SR_SC_CHECK] = {"/weight_checker", CHECKSUM, 0},
             [SR_SC_CHECK_PAUSED] = {"/weight_checker", CHECKSUM, 0},
             [SR_SC_DESTROY] = {"/destroy_weights_update_group", DESTROY, 0},
             [SR_SC_UPDATE_BUSY] = {"/collective_rpc", NULL, FWD},
             [SR_SC_FINISH_INCOMPLETE] = {"/collective_rpc", SKY_FIN "}", 0},
         },
         /* A synthetic apply: skyrl's /update_weights steps no cell. */
         {"/update_weights", "{\"update_info\":{\"target_version\":" STR(HELD) "}}", 0},
         {"/pause?mode=abort", "", 0},
         {"/resume", "", 0},
         {SR_SC_INIT, SR_SC_START, SR_SC_UPDATE, SR_SC_FINISH, SR_SC_COUNT}},
    [SR_SYNC_DIALECT_VLLM] =
        {SR_SYNC_DIALECT_VLLM,
         "{\"sync_dialect\":\"vllm\",\"seed\":3,\"model\":{\"layers\":2}}",
         {
             [SR_SC_INIT] = {"/init_weight_transfer_engine", V_INIT, 0},
             [SR_SC_START] = {"/start_weight_update", "{\"is_checkpoint_format\":true}", 0},
             [SR_SC_UPDATE] = {"/update_weights", NULL, FWD},
             [SR_SC_FINISH] = {"/finish_weight_update", "", 0},
             [SR_SC_FINISH_BACKWARDS] = {"/finish_weight_update",
                                         "{\"weight_version\":\"" STR(BACK) "\"}", 0},
             [SR_SC_SET_VERSION] = {"/update_weight_version", VERSION(FWD), 0},
             [SR_SC_SET_VERSION_BACKWARDS] = {"/update_weight_version", VERSION(BACK), 0},
             [SR_SC_CHECK] = {"/weight_checker", CHECKSUM, 0},
             [SR_SC_CHECK_PAUSED] = {"/weight_checker", CHECKSUM, 0},
             [SR_SC_DESTROY] = {"/destroy_weights_update_group", DESTROY, 0},
             [SR_SC_UPDATE_BUSY] = {"/update_weights", NULL, FWD},
             [SR_SC_FINISH_INCOMPLETE] = {"/finish_weight_update", "", 0},
         },
         {"/update_weight_version", VERSION(HELD), 0},
         {"/pause?mode=abort", "", 0},
         {"/resume", "", 0},
         {SR_SC_INIT, SR_SC_START, SR_SC_UPDATE, SR_SC_FINISH, SR_SC_SET_VERSION, SR_SC_CHECK,
          SR_SC_COUNT}},
    [SR_SYNC_DIALECT_SGLANG] =
        {SR_SYNC_DIALECT_SGLANG,
         "{\"sync_dialect\":\"sglang\",\"seed\":3,\"model\":{\"layers\":2}}",
         {
             [SR_SC_INIT] = {"/init_weights_update_group", S_INIT, 0},
             [SR_SC_START] = {"/start_weight_update", "{}", 0},
             /* One request is a whole update: its header steps update, its end finish. */
             [SR_SC_UPDATE] = {"/update_weights_from_distributed", NULL, FWD},
             [SR_SC_FINISH] = {"/update_weights_from_distributed", NULL, FWD},
             [SR_SC_FINISH_BACKWARDS] = {"/update_weights_from_distributed", NULL, BACK},
             [SR_SC_SET_VERSION] = {"/update_weight_version", VERSION(FWD), 0},
             [SR_SC_SET_VERSION_BACKWARDS] = {"/update_weight_version", VERSION(BACK), 0},
             [SR_SC_CHECK] = {"/weight_checker", CHECKSUM, 0},
             [SR_SC_CHECK_PAUSED] = {"/weight_checker", CHECKSUM, 0},
             [SR_SC_DESTROY] = {"/destroy_weights_update_group", DESTROY, 0},
             [SR_SC_UPDATE_BUSY] = {"/update_weights_from_distributed", NULL, FWD},
             [SR_SC_FINISH_INCOMPLETE] = {"/update_weights_from_distributed", NULL, FWD},
         },
         {"/update_weight_version", VERSION(HELD), 0},
         {"/pause_generation", "{\"mode\":\"abort\"}", 0},
         {"/continue_generation", "", 0},
         {SR_SC_INIT, SR_SC_UPDATE, SR_SC_SET_VERSION, SR_SC_DESTROY, SR_SC_COUNT}},
};

/* The calls that reach each state from uninit: idle after init, active after init and start. */
static const sr_sync_call PATH[] = {SR_SC_INIT, SR_SC_START};
static const size_t PATH_LEN[SR_SS_COUNT] = {0, 1, 2};

/* The table's absent cells: the plane has no route for the call, so the route that makes it in
 * `owner`'s plane is answered by the router (engine_control.c) with its 404 before any table
 * lookup. The list must name exactly the table's absent cells (absent_list_is_the_tables). */
static const struct absent {
    sr_sync_dialect d;
    sr_sync_call c;
    const char *owner;
} ABSENT[] = {
    {SR_SYNC_DIALECT_SKYRL, SR_SC_SET_VERSION, "vllm"},
    {SR_SYNC_DIALECT_SKYRL, SR_SC_SET_VERSION_BACKWARDS, "vllm"},
    {SR_SYNC_DIALECT_SKYRL, SR_SC_CHECK, "vllm"},
    {SR_SYNC_DIALECT_SKYRL, SR_SC_CHECK_PAUSED, "vllm"},
    {SR_SYNC_DIALECT_SKYRL, SR_SC_DESTROY, "sglang"},
    {SR_SYNC_DIALECT_VLLM, SR_SC_DESTROY, "sglang"},
    {SR_SYNC_DIALECT_SGLANG, SR_SC_START, "vllm"},
    {SR_SYNC_DIALECT_SGLANG, SR_SC_CHECK, "vllm"},
    {SR_SYNC_DIALECT_SGLANG, SR_SC_CHECK_PAUSED, "vllm"},
};

/* Cells whose request is another cell's, `as`: it steps `as` first, which refuses it, or the
 * condition of the call cannot hold in that state. The request answers as `as`. */
static const struct shadowed {
    sr_sync_dialect d;
    sr_sync_state s;
    sr_sync_call c, as;
    const char *why;
} SHADOWED[] = {
    {SR_SYNC_DIALECT_SGLANG, SR_SS_UNINIT, SR_SC_FINISH, SR_SC_UPDATE,
     "the update's header steps update, refused without a group, so its end is never reached"},
    {SR_SYNC_DIALECT_SGLANG, SR_SS_UNINIT, SR_SC_FINISH_BACKWARDS, SR_SC_UPDATE,
     "the update's header steps update, refused without a group, so its end is never reached"},
#define NOT_IN_FLIGHT                                                                              \
    "outside an active update no bucket is in flight (a finish ends or discards them all), so "    \
    "the "                                                                                         \
    "call is a plain one"
    {SR_SYNC_DIALECT_SKYRL, SR_SS_UNINIT, SR_SC_UPDATE_BUSY, SR_SC_UPDATE, NOT_IN_FLIGHT},
    {SR_SYNC_DIALECT_SKYRL, SR_SS_UNINIT, SR_SC_FINISH_INCOMPLETE, SR_SC_FINISH, NOT_IN_FLIGHT},
    {SR_SYNC_DIALECT_SKYRL, SR_SS_IDLE, SR_SC_UPDATE_BUSY, SR_SC_UPDATE, NOT_IN_FLIGHT},
    {SR_SYNC_DIALECT_SKYRL, SR_SS_IDLE, SR_SC_FINISH_INCOMPLETE, SR_SC_FINISH, NOT_IN_FLIGHT},
    {SR_SYNC_DIALECT_VLLM, SR_SS_UNINIT, SR_SC_UPDATE_BUSY, SR_SC_UPDATE, NOT_IN_FLIGHT},
    {SR_SYNC_DIALECT_VLLM, SR_SS_UNINIT, SR_SC_FINISH_INCOMPLETE, SR_SC_FINISH, NOT_IN_FLIGHT},
    {SR_SYNC_DIALECT_VLLM, SR_SS_IDLE, SR_SC_UPDATE_BUSY, SR_SC_UPDATE, NOT_IN_FLIGHT},
    {SR_SYNC_DIALECT_VLLM, SR_SS_IDLE, SR_SC_FINISH_INCOMPLETE, SR_SC_FINISH, NOT_IN_FLIGHT},
    {SR_SYNC_DIALECT_SGLANG, SR_SS_UNINIT, SR_SC_UPDATE_BUSY, SR_SC_UPDATE,
     "without a group no bucket is accepted, so none is in flight"},
    {SR_SYNC_DIALECT_SGLANG, SR_SS_UNINIT, SR_SC_FINISH_INCOMPLETE, SR_SC_UPDATE,
     "the update's header steps update, refused without a group, so its end is never reached"},
    {SR_SYNC_DIALECT_SGLANG, SR_SS_IDLE, SR_SC_FINISH_INCOMPLETE, SR_SC_FINISH,
     "each update is whole: its finish comes at its own end, once every byte of it is in"},
#undef NOT_IN_FLIGHT
};

/* States no cell of the plane leads to (asserted through the table), so no request reaches
 * any cell of their row. */
static const struct unreachable {
    sr_sync_dialect d;
    sr_sync_state s;
    const char *why;
} UNREACHABLE_STATE[] = {
    {SR_SYNC_DIALECT_SGLANG, SR_SS_ACTIVE,
     "sglang has no start: each update_weights_from_distributed is a whole update"},
};

/* ---- the failures of a test, reported together at its end ---- */

typedef struct fails {
    sr_buf b;
    int n;
} fails;

__attribute__((format(printf, 4, 5))) static int expect(fails *f, int ok, const char *where,
                                                        const char *fmt, ...)
{
    if (ok)
        return 1;
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    sr_buf_printf(&f->b, NULL, "  %s: %s\n", where, line);
    f->n++;
    return 0;
}

static void report(fails *f, const char *what)
{
    sr_buf_append(&f->b, "", 0, NULL);
    if (f->n)
        fprintf(stderr, "%s: %d failure(s):\n%s", what, f->n, f->b.data);
    /* Check's message is bounded: the whole list went to stderr above. */
    ck_assert_msg(f->n == 0, "%s: %d failure(s):\n%.3000s", what, f->n, f->b.data);
    sr_buf_release(&f->b);
}

/* ---- talking to the engine ---- */

static sr_weights *weights_at(const plane *p, int64_t version)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, p->cfg, strlen(p->cfg), "t", 0, &err), err);
    sr_weights_spec ws = sr_engine_config_weights(&c);
    sr_weights *w;
    ck_assert_sr_ok(sr_weights_new(&w, &ws, version, &err), err);
    sr_engine_config_release(&c);
    return w;
}

static void send_req(hresp *r, const eng *e, const plane *p, const hreq *q)
{
    if (!q->bucket) {
        http_req(r, NULL, e, "POST", q->path, q->body, NULL, 20000);
        return;
    }
    sr_weights *w = weights_at(p, q->bucket);
    sr_buf b = SR_BUF_INIT;
    eng_bucket_of_plane(&b, w, q->bucket, p->d == SR_SYNC_DIALECT_SGLANG);
    eng_post_bucket_to(r, e, &b, q->path);
    sr_buf_release(&b);
    sr_weights_free(w);
}

/* The receiver's state as the engine reports it. */
typedef struct sstate {
    char name[16];
    long long errors, version;
} sstate;

static sstate state_of(const eng *e)
{
    hresp r;
    http_get(&r, e, "/syncroll/v1/state");
    cJSON *o = r.status == 200 ? cJSON_Parse(r.body.data) : NULL;
    const cJSON *sy = cJSON_GetObjectItemCaseSensitive(o, "sync");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(sy, "state");
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(sy, "protocol_errors");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "weight_version");
    ck_assert_msg(cJSON_IsString(n) && cJSON_IsNumber(pe) && cJSON_IsNumber(v),
                  "no sync state in %ld %.160s", r.status, r.body.data);
    sstate s;
    snprintf(s.name, sizeof(s.name), "%s", n->valuestring);
    s.errors = (long long)pe->valuedouble;
    s.version = (long long)v->valuedouble;
    cJSON_Delete(o);
    hresp_free(&r);
    return s;
}

/* A setup request, which must answer 200. */
static int step(fails *f, const char *where, const eng *e, const plane *p, const hreq *q)
{
    hresp r;
    send_req(&r, e, p, q);
    int ok = expect(f, r.status == 200, where, "setup POST %s answered %ld: %.160s", q->path,
                    r.status, r.body.data);
    hresp_free(&r);
    return ok;
}

/* ---- what the answer must be ---- */

static int members(const cJSON *o)
{
    int n = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, o) n++;
    return n;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* The message and check of a refusal in plane d's body shape (NULL when the body has another
 * shape): skyrl {"error":{"message","type":"RuntimeError","code": status,"check"}}, vllm
 * {"detail","check"}, sglang {"success":false,"message","check"}. */
static const cJSON *refusal_body(sr_sync_dialect d, const cJSON *o, long status)
{
    if (d == SR_SYNC_DIALECT_SKYRL) {
        const cJSON *er = cJSON_GetObjectItemCaseSensitive(o, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(er, "code");
        const char *type = str_of(er, "type");
        int ok = members(o) == 1 && members(er) == 4 && type && strcmp(type, "RuntimeError") == 0 &&
                 cJSON_IsNumber(code) && code->valuedouble == (double)status &&
                 str_of(er, "message");
        return ok ? er : NULL;
    }
    if (d == SR_SYNC_DIALECT_VLLM)
        return members(o) == 2 && str_of(o, "detail") ? o : NULL;
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "success");
    return members(o) == 3 && cJSON_IsFalse(ok) && str_of(o, "message") ? o : NULL;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

/* A refusal: the table's status, the plane's shape, the cell's check and message (the engine
 * may put context before it), one more protocol error. */
static void judge_refused(fails *f, const char *where, const plane *p, const sr_sync_cell *cell,
                          sr_sync_call as, const hresp *r, const sstate *st0, const sstate *st1)
{
    if (!expect(f, r->status == (long)cell->status && cell->status == SYNC_REFUSAL_STATUS[p->d],
                where, "status %ld, want the table's %u and the plane's %u: %.160s", r->status,
                cell->status, SYNC_REFUSAL_STATUS[p->d], r->body.data))
        return;
    cJSON *o = cJSON_Parse(r->body.data);
    const cJSON *b = refusal_body(p->d, o, r->status);
    if (expect(f, b != NULL, where, "not the %s plane's refusal shape: %.160s",
               sr_sync_dialect_name(p->d), r->body.data)) {
        const char *msg = str_of(b, p->d == SR_SYNC_DIALECT_VLLM ? "detail" : "message");
        const char *check = str_of(b, "check");
        char want[SR_ERR_MSG_MAX];
        snprintf(want, sizeof(want), cell->msg, sr_sync_call_method(p->d, as));
        expect(f, check && strcmp(check, sr_code_name(cell->code)) == 0, where,
               "check %s, want the table's %s", check ? check : "(none)", sr_code_name(cell->code));
        expect(f, ends_with(msg, want), where, "message \"%s\", want the table's \"%s\"", msg,
               want);
    }
    cJSON_Delete(o);
    expect(f, st1->errors == st0->errors + 1, where, "protocol_errors %lld -> %lld, want one more",
           st0->errors, st1->errors);
}

/* What the wire shows, in the tokens of the protocol (sync_protocol.h): the state after an
 * accepted call, "!check>state" after a refusal, "-" for a 404 without a check (the router's). */
static void observed(char *out, size_t cap, const hresp *r, const sstate *st)
{
    cJSON *o = cJSON_Parse(r->body.data);
    const cJSON *er = cJSON_GetObjectItemCaseSensitive(o, "error");
    const char *check = str_of(er ? er : o, "check");
    if (r->status == 200)
        snprintf(out, cap, "%s", st->name);
    else if (r->status == 404 && !check)
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "!%s>%s", check ? check : "(no check)", st->name);
    cJSON_Delete(o);
}

/* An absent call: the router's 404 body naming the plane that has the route; nothing moves. */
static void judge_absent(fails *f, const char *where, const char *owner, const hresp *r,
                         const sstate *st0, const sstate *st1)
{
    char want[300];
    snprintf(want, sizeof(want),
             "{\"error\":{\"message\":\"Not Found (a route of the %s control plane; this engine "
             "speaks another engines.sync_dialect)\",\"type\":\"NotFoundError\",\"code\":404}}",
             owner);
    expect(f, r->status == 404 && strcmp(r->body.data, want) == 0, where,
           "want the router's 404 %s, got %ld %.160s", want, r->status, r->body.data);
    expect(f, strcmp(st0->name, st1->name) == 0 && st0->errors == st1->errors, where,
           "the router's 404 moved the receiver: %s -> %s, protocol_errors %lld -> %lld", st0->name,
           st1->name, st0->errors, st1->errors);
}

/* Drives a fresh engine into state s (holding version HELD first when c names a lower one) and,
 * for check_paused, pauses it. */
static int reach(fails *f, const char *where, const eng *e, const plane *p, sr_sync_state s,
                 sr_sync_call c)
{
    if (c == SR_SC_FINISH_BACKWARDS || c == SR_SC_SET_VERSION_BACKWARDS) {
        if (!step(f, where, e, p, &p->hold))
            return 0;
        sstate st = state_of(e);
        if (!expect(f, st.version == HELD, where, "holding: weight_version %lld, want %d",
                    st.version, HELD))
            return 0;
    }
    for (size_t i = 0; i < PATH_LEN[s]; i++)
        if (!step(f, where, e, p, &p->call[PATH[i]]))
            return 0;
    sstate st = state_of(e);
    if (!expect(f, strcmp(st.name, sr_sync_state_name(s)) == 0, where,
                "the setup reached state %s, not %s", st.name, sr_sync_state_name(s)))
        return 0;
    return c != SR_SC_CHECK_PAUSED || step(f, where, e, p, &p->pause);
}

/* One cell over HTTP: call c of plane p in state s must answer as `cell` (the cell of call `as`;
 * the router's 404 when `owner` names the plane that has the route). `head_cut`: the bucket in
 * flight is cut inside its header line (40 bytes) instead of half way through. */
static void drive_cell(fails *f, const plane *p, sr_sync_state s, sr_sync_call c, sr_sync_call as,
                       const char *owner, int head_cut)
{
    const sr_sync_cell *cell = sr_sync_table_cell(p->d, s, as);
    char where[128];
    int n = snprintf(where, sizeof(where), "%s %s x %s", sr_sync_dialect_name(p->d),
                     sr_sync_state_name(s), sr_sync_call_name(c));
    if (as != c)
        snprintf(where + n, sizeof(where) - (size_t)n, " (answered by %s x %s)",
                 sr_sync_state_name(s), sr_sync_call_name(as));
    else if (head_cut)
        snprintf(where + n, sizeof(where) - (size_t)n, " (a bucket cut in its header line)");
    eng e;
    eng_start(&e, p->cfg);
    if (reach(f, where, &e, p, s, c)) {
        /* update_busy and finish_incomplete: a bucket of every tensor half sent, in flight. */
        int in_flight = as == c && (c == SR_SC_UPDATE_BUSY || c == SR_SC_FINISH_INCOMPLETE);
        sr_buf half = SR_BUF_INIT;
        eng_partial part;
        if (in_flight) {
            sr_weights *w = weights_at(p, FWD);
            eng_bucket_of_plane(&half, w, FWD, p->d == SR_SYNC_DIALECT_SGLANG);
            sr_weights_free(w);
            size_t cut = head_cut ? 40 : half.len / 2;
            ck_assert(!head_cut || !memchr(half.data, '\n', cut));
            eng_partial_start(&part, &e, &half, p->call[SR_SC_UPDATE].path, cut);
            eng_wait_sync(&e, "buckets_in_flight", 1);
        }
        sstate st0 = state_of(&e);
        hresp r;
        send_req(&r, &e, p, &p->call[c]);
        sstate st1 = state_of(&e);
        if (in_flight)
            eng_partial_drop(&part);
        sr_buf_release(&half);
        char got[96];
        observed(got, sizeof(got), &r, &st1);
        expect(f, strcmp(got, SYNC_PROTOCOL[p->d][s][as]) == 0, where,
               "over HTTP %s, the protocol (tests/sync_protocol.h) %s", got,
               SYNC_PROTOCOL[p->d][s][as]);
        if (owner) {
            judge_absent(f, where, owner, &r, &st0, &st1);
        } else if (cell->code) {
            judge_refused(f, where, p, cell, as, &r, &st0, &st1);
        } else {
            expect(f, r.status == 200 && !strstr(r.body.data, "\"check\""), where,
                   "accepted by the table, answered %ld: %.160s", r.status, r.body.data);
            expect(f, st1.errors == st0.errors, where, "an accepted call counted an error");
        }
        if (!owner)
            expect(f, strcmp(st1.name, sr_sync_state_name(cell->next)) == 0, where,
                   "state %s after the call, want the table's %s", st1.name,
                   sr_sync_state_name(cell->next));
        hresp_free(&r);
        if (c == SR_SC_CHECK_PAUSED)
            step(f, where, &e, p, &p->resume);
        http_req(&r, NULL, &e, "POST", "/skyrl/v1/generate", GEN, NULL, 20000);
        expect(f, r.status == 200 && strstr(r.body.data, "\"finish_reason\""), where,
               "a generate afterwards answered %ld: %.160s", r.status, r.body.data);
        hresp_free(&r);
    }
    eng_stop(&e);
}

/* ---- the tests ---- */

static const char *absent_owner(sr_sync_dialect d, sr_sync_call c)
{
    for (size_t i = 0; i < sizeof(ABSENT) / sizeof(ABSENT[0]); i++)
        if (ABSENT[i].d == d && ABSENT[i].c == c)
            return ABSENT[i].owner;
    return NULL;
}

static const struct shadowed *shadow_of(sr_sync_dialect d, sr_sync_state s, sr_sync_call c)
{
    for (size_t i = 0; i < sizeof(SHADOWED) / sizeof(SHADOWED[0]); i++)
        if (SHADOWED[i].d == d && SHADOWED[i].s == s && SHADOWED[i].c == c)
            return &SHADOWED[i];
    return NULL;
}

static int state_unreachable(sr_sync_dialect d, sr_sync_state s)
{
    for (size_t i = 0; i < sizeof(UNREACHABLE_STATE) / sizeof(UNREACHABLE_STATE[0]); i++)
        if (UNREACHABLE_STATE[i].d == d && UNREACHABLE_STATE[i].s == s)
            return 1;
    return 0;
}

static int is_absent(const sr_sync_cell *cell)
{
    return cell->code == SR_E_ENGINE_REQUEST && cell->status == 404;
}

/* The cells of plane d not driven to their own answer, with the reason. */
static void print_listed(sr_sync_dialect d)
{
    for (size_t i = 0; i < sizeof(SHADOWED) / sizeof(SHADOWED[0]); i++)
        if (SHADOWED[i].d == d)
            printf("  shadowed %s x %s (answers as %s x %s): %s\n",
                   sr_sync_state_name(SHADOWED[i].s), sr_sync_call_name(SHADOWED[i].c),
                   sr_sync_state_name(SHADOWED[i].s), sr_sync_call_name(SHADOWED[i].as),
                   SHADOWED[i].why);
    for (size_t i = 0; i < sizeof(UNREACHABLE_STATE) / sizeof(UNREACHABLE_STATE[0]); i++)
        if (UNREACHABLE_STATE[i].d == d)
            printf("  unreachable state %s (no cell leads there): %s\n",
                   sr_sync_state_name(UNREACHABLE_STATE[i].s), UNREACHABLE_STATE[i].why);
}

/* ABSENT names exactly the table's absent cells, in every state. */
START_TEST(absent_list_is_the_tables)
{
    for (int d = 0; d < SR_SYNC_DIALECT_COUNT; d++)
        for (int s = 0; s < SR_SS_COUNT; s++)
            for (int c = 0; c < SR_SC_COUNT; c++) {
                const sr_sync_cell *cell = sr_sync_table_cell(d, s, c);
                ck_assert_ptr_nonnull(cell);
                ck_assert_msg(is_absent(cell) == (absent_owner(d, c) != NULL),
                              "%s %s x %s: the table says %s, ABSENT %s", sr_sync_dialect_name(d),
                              sr_sync_state_name(s), sr_sync_call_name(c),
                              is_absent(cell) ? "absent" : "present",
                              absent_owner(d, c) ? "lists it" : "does not");
            }
}
END_TEST

/* Loop index: the plane. */
START_TEST(every_cell_over_http)
{
    const plane *p = &PLANES[_i];
    ck_assert_int_eq(p->d, _i);
    fails f = {SR_BUF_INIT, 0};
    int driven = 0, absent = 0, shadowed = 0, unreachable = 0;
    for (int s = 0; s < SR_SS_COUNT; s++) {
        if (state_unreachable(p->d, s)) {
            for (int s0 = 0; s0 < SR_SS_COUNT; s0++)
                for (int c = 0; c < SR_SC_COUNT; c++)
                    ck_assert_msg(sr_sync_table_cell(p->d, s0, c)->next != (sr_sync_state)s,
                                  "%s %s x %s leads to %s, listed as unreachable",
                                  sr_sync_dialect_name(p->d), sr_sync_state_name(s0),
                                  sr_sync_call_name(c), sr_sync_state_name(s));
            unreachable += SR_SC_COUNT;
            continue;
        }
        for (int c = 0; c < SR_SC_COUNT; c++) {
            const struct shadowed *sh = shadow_of(p->d, s, c);
            const char *owner = absent_owner(p->d, c);
            if (sh)
                shadowed++;
            else if (owner)
                absent++;
            else
                driven++;
            drive_cell(&f, p, s, c, sh ? sh->as : (sr_sync_call)c, sh ? NULL : owner, 0);
            /* A finish while a bucket's header line still arrives is incomplete too. */
            if (!sh && !owner && c == SR_SC_FINISH_INCOMPLETE && p->d != SR_SYNC_DIALECT_SGLANG)
                drive_cell(&f, p, s, c, (sr_sync_call)c, NULL, 1);
        }
    }
    ck_assert_int_eq(driven + absent + shadowed + unreachable, SR_SS_COUNT * SR_SC_COUNT);
    printf("sync_table_http: %s: %d cells driven, %d absent (the router's 404), %d shadowed, %d "
           "in unreachable states\n",
           sr_sync_dialect_name(p->d), driven, absent, shadowed, unreachable);
    print_listed(p->d);
    report(&f, sr_sync_dialect_name(p->d));
}
END_TEST

/* Loop index: the plane. Its happy path from uninit, each call accepted by the table and
 * answered 200, the engine in the table's next state after each; then the engine holds the
 * bytes of version FWD and serves. */
START_TEST(happy_path_over_http)
{
    const plane *p = &PLANES[_i];
    eng e;
    eng_start(&e, p->cfg);
    sr_sync_state s = SR_SS_UNINIT;
    for (const sr_sync_call *k = p->happy; *k != SR_SC_COUNT; k++) {
        const sr_sync_cell *cell = sr_sync_table_cell(p->d, s, *k);
        char where[96];
        snprintf(where, sizeof(where), "%s %s x %s", sr_sync_dialect_name(p->d),
                 sr_sync_state_name(s), sr_sync_call_name(*k));
        ck_assert_msg(cell->code == 0, "%s: the table refuses the happy path", where);
        hresp r;
        send_req(&r, &e, p, &p->call[*k]);
        ck_assert_msg(r.status == 200, "%s: %ld %.160s", where, r.status, r.body.data);
        hresp_free(&r);
        s = cell->next;
        sstate st = state_of(&e);
        ck_assert_msg(strcmp(st.name, sr_sync_state_name(s)) == 0 && st.errors == 0,
                      "%s: state %s, protocol_errors %lld; want %s, 0", where, st.name, st.errors,
                      sr_sync_state_name(s));
    }
    ck_assert_int_eq(state_of(&e).version, FWD);
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, p->cfg, strlen(p->cfg), "t", 0, &err), err);
    uint64_t g, l[2];
    expected_fps(&c, FWD, &g, l);
    sr_engine_config_release(&c);
    char want[96];
    snprintf(want, sizeof(want), "\"fingerprints\":{\"global\":\"%016llx\"", (unsigned long long)g);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, want);
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, "\"finish_reason\"");
    eng_stop(&e);
}
END_TEST

static Suite *table_http_suite(void)
{
    Suite *s = suite_create("sync_table_http");
    TCase *tc = tcase_create("cells");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, absent_list_is_the_tables);
    tcase_add_loop_test(tc, every_cell_over_http, 0, SR_SYNC_DIALECT_COUNT);
    tcase_add_loop_test(tc, happy_path_over_http, 0, SR_SYNC_DIALECT_COUNT);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(table_http_suite)
