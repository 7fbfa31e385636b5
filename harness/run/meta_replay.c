/* Judging recorded answers with no request of their own (meta.h, `syncroll replay`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_priv.h"

/* One kept turn: its answer and what the request asked. */
typedef struct replay_turn {
    sr_meta_resp r;
    int turn;        /* 1-based */
    int routes;      /* routes were asked for */
    int turn_edge;   /* its first row is a turn boundary the wire asked for (start > 0) */
    int has_version; /* the answer was decoded (r.version is the engine's, -1 unknown) */
} replay_turn;

struct sr_meta_replay {
    sr_dialect dialect;
    replay_turn *t;
    size_t n, cap;
};

int sr_meta_replay_new(sr_meta_replay **out, sr_dialect dialect, sr_err *err)
{
    if (!out)
        return sr_err_set(err, SR_E_INVAL, "meta replay: nowhere to put the session state");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "meta replay: no memory for the session state");
    (*out)->dialect = dialect;
    return 0;
}

void sr_meta_replay_free(sr_meta_replay *m)
{
    for (size_t i = 0; m && i < m->n; i++)
        sr_meta_resp_free(&m->t[i].r);
    if (m)
        free(m->t);
    free(m);
}

/* 1 when the wire of this answer sends the route start (the turn_boundary region of the fault
 * grammar is empty on the others: their rows before the start are cut by the client). */
static int sends_start(sr_dialect d, const sr_client_result *res)
{
    const sr_dialect_route *rt = res->path ? sr_dialect_route_at(d, res->path) : NULL;
    return rt && rt->request.start_key != NULL;
}

int sr_meta_replay_keep(sr_meta_replay *m, int turn, const sr_client_req *q, int rc,
                        const sr_client_result *res, const char *why, sr_err *err)
{
    if (!m || !q || !res)
        return sr_err_set(err, SR_E_INVAL, "meta replay: a session, a request and a result");
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 4;
        replay_turn *t = realloc(m->t, cap * sizeof *t);
        if (!t)
            return sr_err_set(err, SR_E_NOMEM, "meta replay: no memory for %zu turns", cap);
        m->t = t;
        m->cap = cap;
    }
    replay_turn *k = &m->t[m->n];
    memset(k, 0, sizeof *k);
    k->turn = turn;
    k->routes = q->return_routes;
    k->r.P = q->n_tokens;
    k->r.start = q->return_routes && q->prompt_start > 0 ? q->prompt_start : 0;
    k->r.version = -1;
    /* Whether a prefix came from the engine's cache is unknown in a capture: a vllm-json prompt
     * row of -1 ids (its "served from the cache") is taken as that, never as a defect. */
    k->r.warm = 1;
    k->turn_edge = k->r.start > 0 && sends_start(m->dialect, res);
    int krc = sr_meta_keep(&k->r, rc, res, why, err);
    k->has_version = !k->r.code;
    m->n++; /* kept even on a failure: sr_meta_replay_free releases what it holds */
    return krc;
}

/* meta.version_monotonic: answer k reports no version below the highest reported before it. */
static void versions(sr_meta_ctx *x, const sr_meta_replay *m, size_t k, const char *what)
{
    const replay_turn *t = &m->t[k];
    if (!t->has_version || t->r.version < 0)
        return;
    if (x->held > t->r.version)
        sr_meta_fail(x, "meta.version_monotonic", -1, -1,
                     "%s: the answer reports weight version %lld after an earlier turn's %lld",
                     what, (long long)t->r.version, (long long)x->held);
    if (t->r.version > x->held)
        x->held = t->r.version;
}

/* meta.multiturn_prefix: the positions answer k shares with an earlier answer of the same
 * reported version hold the same rows. */
static void prefixes(sr_meta_ctx *x, const sr_meta_replay *m, size_t k, const char *what)
{
    const replay_turn *b = &m->t[k];
    if (!b->r.rows || b->r.version < 0)
        return;
    for (size_t j = 0; j < k; j++) {
        const replay_turn *a = &m->t[j];
        if (!a->r.rows || a->r.version != b->r.version)
            continue;
        int64_t lo = a->r.start > b->r.start ? a->r.start : b->r.start;
        int64_t ea = a->r.start + a->r.n_rows, eb = b->r.start + b->r.n_rows;
        int64_t hi = ea < eb ? ea : eb;
        char which[SR_ERR_MSG_MAX];
        snprintf(which, sizeof which, "%s: the positions turn %d's answer also carried", what,
                 a->turn);
        if (lo < hi && sr_meta_same_span(x, "meta.multiturn_prefix", &a->r, &b->r, lo, hi, which))
            return;
    }
}

int sr_meta_replay_judge(int *failed, sr_meta_replay *m, sr_scenario_result *sc,
                         const sr_check_where *at, const char *what, sr_err *err)
{
    if (!m || !sc)
        return sr_err_set(err, SR_E_INVAL, "meta replay: a session and a result are needed");
    sr_meta_opts o = SR_META_OPTS_INIT;
    o.dialect = m->dialect;
    o.experts = 0; /* the model is unknown: ids are only checked >= 0 */
    sr_meta_stats st;
    memset(&st, 0, sizeof st);
    sr_meta_ctx x;
    memset(&x, 0, sizeof x);
    x.sc = sc;
    x.o = &o;
    x.st = &st;
    x.held = -1;
    x.once = 1; /* a defect on every turn is one finding of the session */
    x.at = at ? *at : (sr_check_where)SR_CHECK_WHERE_NONE;
    for (size_t k = 0; k < m->n; k++) {
        const replay_turn *t = &m->t[k];
        char label[SR_ERR_MSG_MAX / 2];
        snprintf(label, sizeof label, "%s turn %d", what ? what : "replay", t->turn);
        x.at.turn = t->turn;
        if (t->routes && !t->r.code) {
            sr_meta_check_resp(&x, &t->r, label);
            if (t->turn_edge && t->r.rows && strcmp(t->r.finish, "abort") != 0)
                sr_meta_turn_boundary(&x, &t->r, t->r.start, label);
        }
        versions(&x, m, k, label);
        prefixes(&x, m, k, label);
    }
    if (failed) {
        *failed = 0;
        for (unsigned f = x.failed; f; f &= f - 1)
            (*failed)++;
    }
    return 0;
}
