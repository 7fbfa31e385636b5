/* The failure evidence of a scenario (evidence.h). */
#include "evidence.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/artifacts.h"
#include "rollout.h"
#include "scenario/scenario.h"
#include "spec/dialect.h"
#include "sr_buf.h"
#include "sr_oracle.h"

/* The scenario's memory estimate counts the evidence with these bounds (scenario.h). */
_Static_assert(SR_SCN_EVIDENCE_TURNS == SR_ROLLOUT_KEEP_EXCHANGES, "evidence turns");
_Static_assert(SR_SCN_EVIDENCE_RESPONSE_BYTES == SR_EVIDENCE_EXCHANGE_BYTES, "evidence bytes");

#define MAX_TURNS 16 /* distinct turns a failure's exchanges are written for */

/* One evidence folder being written. */
typedef struct ev {
    sr_scn_run *run;
    char dir[4400];
    int cut; /* a file was left out: the scenario's budget is spent */
    sr_err *err;
} ev;

static int is_expected(const sr_scenario_result *res, const char *name)
{
    for (size_t i = 0; i < res->n_expect_checks; i++)
        if (strcmp(res->expect_checks[i], name) == 0)
            return 1;
    return 0;
}

/* Creates <work>/evidence/<name>/ into e->dir. */
static int open_folder(ev *e, sr_scn_run *run, const char *name, sr_err *err)
{
    e->run = run;
    e->cut = 0;
    e->err = err;
    char top[4300];
    snprintf(top, sizeof(top), "%s/evidence", run->opts->work_dir);
    snprintf(e->dir, sizeof(e->dir), "%s/%s", top, name);
    if ((mkdir(top, 0777) != 0 && errno != EEXIST) || (mkdir(e->dir, 0777) != 0 && errno != EEXIST))
        return sr_err_set(err, SR_E_IO, "%s: cannot create: %s", e->dir, strerror(errno));
    return 0;
}

/* Takes n bytes of the scenario's budget; 0 (and the folder marked cut) once it is spent. */
static int reserve(ev *e, size_t n)
{
    long long add = (long long)n;
    if (atomic_fetch_add(&e->run->evidence_used, add) + add <= SR_EVIDENCE_SCENARIO_BYTES)
        return 1;
    atomic_fetch_sub(&e->run->evidence_used, add);
    e->cut = 1;
    return 0;
}

static int left_out(ev *e, const char *name, size_t n)
{
    char d[200];
    snprintf(d, sizeof(d),
             "not written (%zu bytes): the scenario's evidence cap of %lld MiB was reached", n,
             (long long)(SR_EVIDENCE_SCENARIO_BYTES >> 20));
    return sr_artifact_note(e->dir, name, d, e->err);
}

static int put_text(ev *e, const char *name, const char *desc, const sr_buf *b)
{
    if (b->len && !b->data)
        return sr_err_set(e->err, SR_E_NOMEM, "cannot build %s", name);
    if (!reserve(e, b->len))
        return left_out(e, name, b->len);
    return sr_artifact_text(e->dir, name, desc, b->data, b->len, e->err);
}

/* The first SR_EVIDENCE_EXCHANGE_BYTES of `data` (of `total` bytes in all: a capture may hold
 * only the head). */
static int put_bytes(ev *e, const char *name, const char *what, const sr_buf *data, uint64_t total)
{
    size_t n = data->len < SR_EVIDENCE_EXCHANGE_BYTES ? data->len : SR_EVIDENCE_EXCHANGE_BYTES;
    char d[300];
    if (n < total)
        snprintf(d, sizeof(d), "%s; bytes [0, %zu) of %llu (cut to the head)", what, n,
                 (unsigned long long)total);
    else
        snprintf(d, sizeof(d), "%s; all %zu bytes", what, n);
    if (!reserve(e, n))
        return left_out(e, name, n);
    return sr_artifact_text(e->dir, name, d, data->data, n, e->err);
}

/* The last `max` bytes of file `src` as dir/name. */
static int put_tail(ev *e, const char *name, const char *what, const char *src, size_t max)
{
    struct stat st;
    if (!src || stat(src, &st) != 0)
        return sr_artifact_note(e->dir, name, "not written: the file is not there", e->err);
    size_t n = (uint64_t)st.st_size < max ? (size_t)st.st_size : max;
    n = n ? n : 1; /* the copy's bound: a log that grows meanwhile stays within what is reserved */
    if (!reserve(e, n))
        return left_out(e, name, n);
    return sr_artifact_copy_tail_as(e->dir, name, what, src, n, NULL, e->err);
}

static void check_text(sr_buf *b, const sr_check *c)
{
    const sr_check_where *w = &c->where;
    sr_buf_printf(b, NULL,
                  "%s%s%s%s step %lld engine %lld sample %lld turn %lld row %lld layer %lld%s\n"
                  "  %s\n",
                  c->name, c->classification[0] ? " [" : "", c->classification,
                  c->classification[0] ? "]" : "", (long long)w->step, (long long)w->engine,
                  (long long)w->sample, (long long)w->turn, (long long)w->row, (long long)w->layer,
                  c->expected ? " (expected)" : "", c->message);
}

/* checks.txt, scenario.json and repro.txt: what every evidence folder holds. */
static int put_common(ev *e, const sr_check *checks, size_t n)
{
    sr_buf b = SR_BUF_INIT;
    sr_buf_puts(&b, "# check [class] where (-1: not applicable), then its message\n", NULL);
    for (size_t i = 0; i < n; i++)
        check_text(&b, &checks[i]);
    int rc = put_text(e, "checks.txt", "the checks that fired (name, class, where, message)", &b);
    sr_buf_reset(&b);
    const sr_run_opts *o = e->run->opts;
    sr_buf_printf(&b, NULL, "%s\n", o->repro ? o->repro : "");
    if (!rc)
        rc = put_text(e, "repro.txt", "the one-line command that runs the scenario again", &b);
    sr_buf_release(&b);
    if (!rc)
        rc = put_tail(e, "scenario.json", "the expanded scenario", o->expanded,
                      SR_EVIDENCE_EXCHANGE_BYTES);
    return rc;
}

static int put_log(ev *e, int engine)
{
    const sr_scenario_result *res = e->run->res;
    if (engine < 0 || (size_t)engine >= res->n_engines || !res->engines[engine].log)
        return 0;
    char name[32], what[96];
    snprintf(name, sizeof(name), "engine-%d.log", engine);
    snprintf(what, sizeof(what), "the tail of engine %d's log when the evidence was written",
             engine);
    return put_tail(e, name, what, res->engines[engine].log, SR_EVIDENCE_LOG_TAIL);
}

/* ---- a failing rollout ---- */

/* The path the rollout's requests went to (as the client chooses it, client.h). */
static const char *request_path(const sr_scn_run *run, int step)
{
    const sr_client_opts *o = sr_client_options(run->client);
    const sr_dialect_route *rt = &sr_dialect_get(o->dialect)->routes[o->dialect_route];
    int routes = run->scn->steps[step].rollout.routes;
    return o->dialect != SR_DIALECT_SKYRL || routes ? rt->path : "/inference/v1/generate";
}

static void exchange_text(sr_buf *b, const ev *e, int step, const char *session,
                          const sr_rollout_turn *t, const sr_client_exchange *x, int turn)
{
    const sr_scn_run *run = e->run;
    const char *url = t->engine >= 0 && t->engine < run->n_engines ? run->urls[t->engine] : "?";
    sr_buf_printf(b, NULL, "turn %d, engine %d (id \"%s\"), engine weight version %lld\n", turn,
                  t->engine, t->engine_id, (long long)t->weight_version);
    sr_buf_printf(b, NULL, "POST %s%s\n", url, request_path(run, step));
    sr_buf_printf(b, NULL, "request headers: Content-Type: application/json%s%s\n",
                  session && *session ? "; X-Session-ID: " : "", session ? session : "");
    sr_buf_printf(b, NULL, "request body: %llu bytes (request-turn%d.bin)\n",
                  (unsigned long long)x->request.len, turn);
    sr_buf_printf(b, NULL,
                  "response body of the last attempt: %llu bytes received "
                  "(response-turn%d.bin)\n",
                  (unsigned long long)x->response_bytes, turn);
    sr_buf_puts(b, "response headers of the last attempt:\n", NULL);
    if (x->headers.len)
        sr_buf_append(b, x->headers.data, x->headers.len, NULL);
    else
        sr_buf_puts(b, "  (none arrived)\n", NULL);
    sr_buf_puts(b, "attempts (ms since the request began):\n", NULL);
    for (int i = 0; i < t->n_attempts; i++) {
        const sr_client_attempt *a = &t->attempts[i];
        sr_buf_printf(b, NULL,
                      "  %d: outcome %s, HTTP %d, start %.3f, took %.3f, then waited %.3f; "
                      "%llu body bytes in %d chunks; new connection %d; re-sent by curl %d\n",
                      i + 1, a->code ? sr_code_name(a->code) : "ok", a->http_status, a->start_ms,
                      a->elapsed_ms, a->wait_ms, (unsigned long long)a->bytes, a->chunks,
                      a->new_connection, a->resent);
    }
    sr_buf_printf(b, NULL,
                  "turn timings (ms): request %.3f (waits %.3f), splice %.3f, decode %.3f, "
                  "record %.3f; prompt %lld tokens, routed_experts_prompt_start %lld, "
                  "%lld route rows received\n",
                  t->request_ms, t->wait_ms, t->splice_ms, t->decode_ms, t->record_ms,
                  (long long)t->prompt_len, (long long)t->start_sent, (long long)t->route_rows);
}

static int put_exchange(ev *e, int step, const char *session, const sr_rollout_result *r, int turn,
                        int *engines)
{
    char name[64], what[160];
    snprintf(name, sizeof(name), "exchange-turn%d.txt", turn);
    const sr_client_exchange *x = sr_rollout_exchange_of(r, turn);
    if (!x || turn > r->n_turns) {
        snprintf(what, sizeof(what),
                 "not written: the rollout keeps the bytes of its last %d turns only",
                 SR_ROLLOUT_KEEP_EXCHANGES);
        return sr_artifact_note(e->dir, name, what, e->err);
    }
    const sr_rollout_turn *t = &r->turns[turn - 1];
    if (t->engine >= 0 && t->engine < SR_ENGINE_MAX_COUNT)
        engines[t->engine] = 1;
    sr_buf b = SR_BUF_INIT;
    exchange_text(&b, e, step, session, t, x, turn);
    snprintf(what, sizeof(what),
             "turn %d's request line, headers that matter, attempts and timings", turn);
    int rc = put_text(e, name, what, &b);
    sr_buf_release(&b);
    snprintf(name, sizeof(name), "request-turn%d.bin", turn);
    snprintf(what, sizeof(what), "turn %d's request body as sent", turn);
    if (!rc)
        rc = put_bytes(e, name, what, &x->request, x->request.len);
    snprintf(name, sizeof(name), "response-turn%d.bin", turn);
    snprintf(what, sizeof(what), "turn %d's response body as received (last attempt)", turn);
    if (!rc)
        rc = put_bytes(e, name, what, &x->response, x->response_bytes);
    return rc;
}

/* The 1-based turn whose request first produced row q (as verify.c counts). */
static int64_t turn_of(const sr_rollout_result *r, int64_t q)
{
    for (int k = 0; k < r->n_turns; k++)
        if (q < r->turns[k].prompt_len + r->turns[k].generated)
            return k + 1;
    return r->n_turns;
}

/* The rows of a route check: lo..hi-1 of the trace, got and want (evidence.h). */
typedef struct rows_ctx {
    const sr_rollout_result *r;
    int64_t sample, lo, hi, L, K, C;
    int32_t *got, *want; /* [N, 5 + K] */
    uint64_t *h;         /* prefix hashes of tokens 0..hi-1 */
} rows_ctx;

static void fill_meta(int32_t *m, int64_t sample, int64_t turn, int64_t row, int64_t layer,
                      int64_t ver)
{
    m[0] = (int32_t)sample;
    m[1] = (int32_t)turn;
    m[2] = (int32_t)row;
    m[3] = (int32_t)layer;
    m[4] = (int32_t)ver;
}

/* One row of both matrices; the oracle's when the verifier and the row's version are known. */
static int fill_row(rows_ctx *x, sr_verifier *v, int64_t i, uint64_t *fps, sr_err *err)
{
    const sr_rollout_result *r = x->r;
    int64_t ver = i < x->C && r->row_version ? r->row_version[i] : -1;
    int64_t held = i < x->C && r->held_version ? r->held_version[i] : -1;
    int rc = v && ver >= 0 ? sr_verifier_fingerprints(NULL, fps, v, ver, err) : 0;
    int32_t want[SR_ORACLE_MAX_TOPK];
    for (int64_t l = 0; !rc && l < x->L; l++) {
        size_t at = (size_t)(((i - x->lo) * x->L + l) * (5 + x->K));
        fill_meta(x->got + at, x->sample, turn_of(r, i), i, l, held);
        fill_meta(x->want + at, x->sample, turn_of(r, i), i, l, ver);
        uint64_t base = ((uint64_t)i * (uint64_t)x->L + (uint64_t)l) * (uint64_t)x->K;
        for (int64_t k = 0; k < x->K; k++)
            x->got[at + 5 + k] = (int32_t)sr_ndarray_get_i64(&r->routes, base + (uint64_t)k);
        if (i >= x->C)
            for (int64_t k = 0; k < x->K; k++)
                want[k] = (int32_t)k; /* the padding row */
        else if (v && ver >= 0)
            sr_oracle_route_row(want, sr_verifier_oracle(v), (int)l, fps[l], x->h[i]);
        else
            for (int64_t k = 0; k < x->K; k++)
                want[k] = -1;
        memcpy(x->want + at + 5, want, (size_t)x->K * sizeof(int32_t));
    }
    return rc;
}

static void rows_text(sr_buf *b, const rows_ctx *x, int64_t row, const sr_check *c)
{
    int64_t n = (x->hi - x->lo) * x->L, w = 5 + x->K;
    sr_buf_printf(b, NULL,
                  "# %s%s%s%s at row %lld: rows %lld..%lld, every layer; got = the rollout's "
                  "trace (version: the pass whose routes it holds), want = the oracle at the "
                  "version that first computed the row (padding: 0..K-1; -1: unknown)\n"
                  "# sample turn row layer got_version got want_version want\n",
                  c->name, c->classification[0] ? " [" : "", c->classification,
                  c->classification[0] ? "]" : "", (long long)row, (long long)x->lo,
                  (long long)x->hi - 1);
    for (int64_t i = 0; i < n; i++) {
        const int32_t *g = x->got + i * w, *q = x->want + i * w;
        sr_buf_printf(b, NULL, "%d %d %d %d %d [", g[0], g[1], g[2], g[3], g[4]);
        for (int64_t k = 0; k < x->K; k++)
            sr_buf_printf(b, NULL, "%s%d", k ? ", " : "", g[5 + k]);
        sr_buf_printf(b, NULL, "] %d [", q[4]);
        for (int64_t k = 0; k < x->K; k++)
            sr_buf_printf(b, NULL, "%s%d", k ? ", " : "", q[5 + k]);
        sr_buf_puts(b, memcmp(g + 5, q + 5, (size_t)x->K * 4) ? "] !\n" : "]\n", NULL);
    }
}

static int rows_files(ev *e, const rows_ctx *x, int64_t row, const sr_check *c)
{
    char name[64], what[200];
    sr_buf b = SR_BUF_INIT;
    rows_text(&b, x, row, c);
    snprintf(name, sizeof(name), "rows-%lld.txt", (long long)row);
    snprintf(what, sizeof(what),
             "route rows %lld..%lld around row %lld, got next to want, '!' "
             "where they differ",
             (long long)x->lo, (long long)x->hi - 1, (long long)row);
    int rc = put_text(e, name, what, &b);
    sr_buf_release(&b);
    int64_t n = (x->hi - x->lo) * x->L, w = 5 + x->K;
    for (int s = 0; s < 2 && !rc; s++) {
        snprintf(name, sizeof(name), "rows-%lld-%s.npy", (long long)row, s ? "want" : "got");
        snprintf(what, sizeof(what),
                 "int32 [%lld, %lld]: the %s rows (columns sample, turn, "
                 "row, layer, weight version, expert 0..%lld)",
                 (long long)n, (long long)w, s ? "want" : "got", (long long)x->K - 1);
        if (!reserve(e, (size_t)(n * w * 4 + 128)))
            rc = left_out(e, name, (size_t)(n * w * 4 + 128));
        else
            rc = sr_artifact_npy_i32(e->dir, name, what, s ? x->want : x->got, n, w, e->err);
    }
    return rc;
}

static int put_rows(ev *e, const sr_rollout_result *r, int64_t sample, const sr_check *c)
{
    const sr_ndarray *a = &r->routes;
    int64_t row = c->where.row;
    if (a->ndim != 3 || row < 0 || row >= a->shape[0])
        return 0;
    rows_ctx x = {
        r,           sample,      row - SR_EVIDENCE_ROW_CONTEXT, row + SR_EVIDENCE_ROW_CONTEXT + 1,
        a->shape[1], a->shape[2], sr_verify_captured_rows(r),    NULL,
        NULL,        NULL};
    x.lo = x.lo < 0 ? 0 : x.lo;
    x.hi = x.hi > a->shape[0] ? a->shape[0] : x.hi;
    x.C = x.C > a->shape[0] ? a->shape[0] : x.C;
    int64_t T = (int64_t)(r->prompt_len + r->response_len);
    if (x.K > SR_ORACLE_MAX_TOPK || x.L > SR_ORACLE_MAX_LAYERS || x.hi > T)
        return sr_artifact_note(e->dir, "rows", "not written: routes of an unexpected geometry",
                                e->err);
    size_t n = (size_t)((x.hi - x.lo) * x.L * (5 + x.K));
    x.got = calloc(n, sizeof(int32_t));
    x.want = calloc(n, sizeof(int32_t));
    x.h = calloc((size_t)x.hi, sizeof(uint64_t));
    uint64_t fps[SR_ORACLE_MAX_LAYERS];
    sr_verifier *v = e->run->verifier;
    int rc = x.got && x.want && x.h ? 0 : sr_err_set(e->err, SR_E_NOMEM, "cannot allocate rows");
    if (!rc && v) {
        uint64_t h = sr_oracle_prefix_empty(sr_verifier_oracle(v));
        for (int64_t i = 0; i < x.hi; i++) {
            size_t p = (size_t)i;
            int32_t tok = p < r->prompt_len ? r->prompt_ids[p] : r->response_ids[p - r->prompt_len];
            x.h[i] = h = sr_oracle_prefix_push(h, tok);
        }
    }
    for (int64_t i = x.lo; !rc && i < x.hi; i++)
        rc = fill_row(&x, v, i, fps, e->err);
    if (!rc)
        rc = rows_files(e, &x, row, c);
    free(x.got);
    free(x.want);
    free(x.h);
    return rc;
}

static int is_route_check(const sr_check *c)
{
    return strcmp(c->name, "trace.row_mismatch") == 0 || strcmp(c->name, "routes.invalid") == 0 ||
           strcmp(c->name, "trace.padding_row") == 0;
}

/* The turns to write: the failed one and every one a check names (distinct, at most
 * MAX_TURNS). */
static int turns_of(int *turns, const sr_rollout_result *r, const sr_verify_fired *f)
{
    int n = 0;
    for (int i = -1; i < f->n; i++) {
        int t = i < 0 ? r->failed_turn : (int)f->c[i].where.turn;
        int seen = t <= 0;
        for (int j = 0; j < n && !seen; j++)
            seen = turns[j] == t;
        if (!seen && n < MAX_TURNS)
            turns[n++] = t;
    }
    return n;
}

int sr_evidence_rollout(sr_scn_run *run, int step, int64_t sample, const char *session,
                        const sr_rollout_result *r, const sr_verify_fired *f, sr_err *err)
{
    int failing = 0;
    for (int i = 0; i < f->n && !failing; i++)
        failing = !is_expected(run->res, f->c[i].name);
    if (!failing)
        return 0;
    char name[96];
    int len = snprintf(name, sizeof(name), "step%d-sample%lld", step, (long long)sample);
    if (run->iteration > 0)
        snprintf(name + len, sizeof(name) - (size_t)len, ".it%lld", (long long)run->iteration);
    ev e;
    int rc = open_folder(&e, run, name, err);
    if (!rc)
        rc = put_common(&e, f->c, (size_t)f->n);
    int turns[MAX_TURNS], engines[SR_ENGINE_MAX_COUNT] = {0};
    int nt = turns_of(turns, r, f);
    for (int i = 0; !rc && i < nt; i++)
        rc = put_exchange(&e, step, session, r, turns[i], engines);
    for (int i = 0; !rc && i < f->n; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= is_route_check(&f->c[j]) && f->c[j].where.row == f->c[i].where.row;
        if (!dup && is_route_check(&f->c[i]))
            rc = put_rows(&e, r, sample, &f->c[i]);
    }
    for (int i = 0; !rc && i < SR_ENGINE_MAX_COUNT; i++)
        if (engines[i])
            rc = put_log(&e, i);
    char rel[160]; /* "evidence/step<S>-sample<I>/index.txt" fits SR_RESULT_EVIDENCE_MAX */
    snprintf(rel, sizeof(rel), "evidence/%s/index.txt", name);
    sr_result_set_evidence(run->res, step, sample, rel, e.cut);
    return rc;
}

/* ---- every other failing check ---- */

int sr_evidence_scenario(sr_scn_run *run, sr_err *err)
{
    sr_scenario_result *res = run->res;
    size_t n = 0;
    for (size_t i = 0; i < res->n_checks; i++)
        n += !res->checks[i].evidence[0] && !res->checks[i].expected;
    if (!n)
        return 0;
    sr_check *cs = malloc(n * sizeof(*cs));
    if (!cs)
        return sr_err_set(err, SR_E_NOMEM, "cannot list the checks for their evidence");
    n = 0;
    for (size_t i = 0; i < res->n_checks; i++)
        if (!res->checks[i].evidence[0] && !res->checks[i].expected)
            cs[n++] = res->checks[i];
    ev e;
    int rc = open_folder(&e, run, "scenario", err);
    if (!rc)
        rc = put_common(&e, cs, n);
    for (int i = 0; !rc && i < run->n_engines; i++)
        rc = put_log(&e, i);
    free(cs);
    sr_result_set_evidence(res, -1, -1, "evidence/scenario/index.txt", e.cut);
    return rc;
}
