/* Judging a capture with no engine (replay_judge.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client/client.h"
#include "meta.h"
#include "proxy/replay_serve.h"
#include "replay_judge.h"
#include "rollout.h"
#include "spec/dialect.h"
#include "sr_collate.h"
#include "verify.h"

#define JUDGE_MAX_BODY ((size_t)1 << 30)

/* One session's turns: the exchange that opened each (retries follow it in the capture). */
typedef struct judge_session {
    const char *id;
    const sr_capture_exchange **turns;
    size_t n, cap;
} judge_session;

static void judge_sessions_free(judge_session *ss, size_t n);

/* The path of a URI (without its query) into dst. */
static void uri_path(char *dst, size_t cap, const char *uri)
{
    size_t n = strcspn(uri, "?");
    snprintf(dst, cap, "%.*s", (int)(n < cap ? n : cap - 1), uri);
}

/* Appends x to j's turns, growing them by doubling (a session's turns are not known ahead). */
static int add_turn(judge_session *j, const sr_capture_exchange *x, sr_err *err)
{
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 8;
        const sr_capture_exchange **t = realloc(j->turns, cap * sizeof *t);
        if (!t)
            return sr_err_set(err, SR_E_NOMEM, "no memory for %zu turns of session %s", cap, j->id);
        j->turns = t;
        j->cap = cap;
    }
    j->turns[j->n++] = x;
    return 0;
}

/* Groups the capture's generate exchanges on route `path` by session, in seq order; *unjudged
 * counts those without an X-Session-ID, which cannot be put in a conversation. */
static int group_sessions(judge_session **out, size_t *n_out, size_t *unjudged, const sr_capture *c,
                          const char *path, sr_err *err)
{
    size_t n = sr_capture_count(c), ns = 0;
    judge_session *ss = calloc(n ? n : 1, sizeof *ss);
    if (!ss)
        return sr_err_set(err, SR_E_NOMEM, "no memory to group %zu exchanges", n);
    for (size_t i = 0; i < n; i++) {
        const sr_capture_exchange *x = sr_capture_at(c, i);
        char p[SR_CAPTURE_STR_MAX];
        uri_path(p, sizeof p, x->uri);
        if (strcmp(x->method, "POST") != 0 || strcmp(p, path) != 0)
            continue;
        if (!x->session[0]) {
            (*unjudged)++;
            continue;
        }
        size_t s = 0;
        while (s < ns && strcmp(ss[s].id, x->session) != 0)
            s++;
        if (s == ns)
            ss[ns++].id = x->session;
        judge_session *j = &ss[s];
        const sr_capture_exchange *prev = j->n ? j->turns[j->n - 1] : NULL;
        if (prev && prev->request.bytes == x->request.bytes &&
            prev->request.xxh3 == x->request.xxh3)
            continue; /* a retry of the same turn */
        int rc = add_turn(j, x, err);
        if (rc) {
            judge_sessions_free(ss, ns);
            return rc;
        }
    }
    *out = ss;
    *n_out = ns;
    return 0;
}

static void judge_sessions_free(judge_session *ss, size_t n)
{
    for (size_t i = 0; ss && i < n; i++)
        free(ss[i].turns);
    free(ss);
}

/* The token_ids of a captured request body (key `key`) as int32, malloc'd into *ids. */
static int read_tokens(int32_t **ids, size_t *n, const cJSON *doc, const char *key, sr_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, key), *e;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1)
        return sr_err_set(err, SR_E_CAPTURE_CORRUPT, "the request has no '%s' array", key);
    *n = (size_t)cJSON_GetArraySize(a);
    if (!(*ids = malloc(*n * sizeof **ids)))
        return sr_err_set(err, SR_E_NOMEM, "no memory for %zu token ids", *n);
    size_t i = 0;
    cJSON_ArrayForEach(e, a)
    {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 2147483647.0)
            return sr_err_set(err, SR_E_CAPTURE_CORRUPT, "'%s[%zu]' is not a token id", key, i);
        (*ids)[i++] = (int32_t)e->valuedouble;
    }
    return 0;
}

/* A session's turns as a rollout config: prompt, sampling parameters and the script. */
typedef struct judge_plan {
    cJSON *first;  /* turn 1's request */
    cJSON *params; /* its sampling parameters without the route start */
    int32_t **ids; /* each turn's token_ids */
    size_t *len;
    size_t n;
} judge_plan;

static void plan_free(judge_plan *p)
{
    for (size_t i = 0; p->ids && i < p->n; i++)
        free(p->ids[i]);
    free(p->ids);
    free(p->len);
    cJSON_Delete(p->first);
    cJSON_Delete(p->params);
    memset(p, 0, sizeof *p);
}

static int plan_session(judge_plan *p, const sr_capture *c, const judge_session *j,
                        const sr_dialect_route *rt, sr_err *err)
{
    sr_buf b = SR_BUF_INIT;
    b.max = JUDGE_MAX_BODY;
    p->ids = calloc(j->n, sizeof *p->ids);
    p->len = calloc(j->n, sizeof *p->len);
    int rc = p->ids && p->len ? 0 : sr_err_set(err, SR_E_NOMEM, "no memory for the turns");
    for (size_t t = 0; !rc && t < j->n; t++) {
        rc = sr_capture_read_body(c, &j->turns[t]->request, &b, JUDGE_MAX_BODY, err);
        cJSON *doc = rc ? NULL : cJSON_ParseWithLength(b.data ? b.data : "", b.len);
        if (!rc && !doc)
            rc = sr_err_set(err, SR_E_CAPTURE_CORRUPT, "the request is not JSON");
        if (!rc)
            rc = read_tokens(&p->ids[t], &p->len[t], doc, rt->request.tokens_key, err);
        p->n = t + 1;
        if (rc)
            sr_err_prefix(err, "exchange %lld (turn %zu): ", (long long)j->turns[t]->seq, t + 1);
        if (t == 0)
            p->first = doc;
        else
            cJSON_Delete(doc);
    }
    sr_buf_release(&b);
    if (rc)
        return rc;
    const cJSON *sp =
        rt->request.params ? cJSON_GetObjectItemCaseSensitive(p->first, rt->request.params) : NULL;
    p->params = cJSON_IsObject(sp) ? cJSON_Duplicate(sp, 1) : cJSON_CreateObject();
    if (p->params && rt->request.start_key)
        cJSON_DeleteItemFromObjectCaseSensitive(p->params, rt->request.start_key);
    if (p->params)
        cJSON_DeleteItemFromObjectCaseSensitive(p->params, "routed_experts_prompt_start");
    return p->params ? 0 : sr_err_set(err, SR_E_NOMEM, "no memory for the sampling parameters");
}

/* Where a session's checks go: its own entry (opts->run) or the one entry opts->res. */
typedef struct judge_into {
    sr_replay_judge_opts *o;
    sr_scenario_result *res;
    char label[SR_CAPTURE_STR_MAX + 96]; /* res mode: "<step> session <id>" */
    sr_dialect dialect;
} judge_into;

/* The rollout's on_reply hook: every turn's answer kept for the meta checks (meta.h). */
typedef struct judge_replies {
    sr_meta_replay *m;
    int rc; /* the first failure to keep one (SR_E_NOMEM) */
    sr_err err;
} judge_replies;

static void keep_reply(void *ctx, int turn, const sr_client_req *q, int rc,
                       const sr_client_result *r, const char *why)
{
    judge_replies *j = ctx;
    if (!j->rc && rc != SR_E_NOMEM)
        j->rc = sr_meta_replay_keep(j->m, turn, q, rc, r, why, &j->err);
}

/* The meta checks a recorded session can break with no request of its own (meta.h), after its
 * contract checks, named like them; *ok becomes 0 when one fails. */
static int judge_meta(int *ok, const judge_replies *jr, const sr_verify_ctx *ctx, int64_t index,
                      sr_err *err)
{
    if (jr->rc)
        return sr_err_set(err, jr->rc, "%s", jr->err.msg);
    char what[SR_ERR_MSG_MAX / 4];
    snprintf(what, sizeof what, "scenario %s step %s sample %lld", ctx->scenario, ctx->step_name,
             (long long)index);
    sr_check_where at = SR_CHECK_WHERE_NONE;
    at.step = ctx->step;
    at.sample = index;
    int failed = 0;
    int rc = sr_meta_replay_judge(&failed, jr->m, ctx->res, &at, what, err);
    if (failed)
        *ok = 0;
    return rc;
}

static void count(sr_scenario_result *res, int64_t requested, int64_t verified, int64_t failed)
{
    sr_counters c;
    memset(&c, 0, sizeof c);
    c.rollouts_requested = requested;
    c.rollouts_verified = verified;
    c.rollouts_failed = failed;
    sr_result_count(res, &c);
}

/* Runs session j as a rollout on k into *r (kept for the collation) and records its checks
 * where `in` says. A session that cannot be planned is its entry's error (run mode) or the
 * judgement's (res mode). */
static int judge_one(judge_into *in, sr_rollout_result *r, sr_client_conn *k, const sr_capture *c,
                     const judge_session *j, const sr_dialect_route *rt, int routes, int64_t index,
                     sr_err *err)
{
    judge_plan p = {0};
    sr_err e = SR_ERR_INIT;
    int rc = plan_session(&p, c, j, rt, &e);
    if (rc && in->o->run) {
        sr_result_set_verdict(in->res, SR_VERDICT_ERROR, "%s: %s", sr_code_name(rc), e.msg);
        plan_free(&p);
        return 0;
    }
    if (rc) {
        plan_free(&p);
        return sr_err_set(err, rc, "session %s: %s", j->id, e.msg);
    }
    sr_rollout_config cfg = SR_ROLLOUT_CONFIG_INIT;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(p.first, "model");
    cfg.prompt = p.ids[0];
    cfg.prompt_len = p.len[0];
    cfg.session_id = j->id;
    cfg.sampling_params = p.params;
    cfg.model = cJSON_IsString(model) ? model->valuestring : NULL;
    cfg.routes = routes;
    cfg.finish_session = 0;
    cfg.env.max_turns = (int)(j->n < 1024 ? j->n : 1024);
    cfg.script = (const int32_t *const *)(p.ids + 1);
    cfg.script_len = p.len + 1;
    cfg.script_n = (size_t)cfg.env.max_turns - 1;
    judge_replies jr = {NULL, 0, SR_ERR_INIT};
    rc = sr_meta_replay_new(&jr.m, in->dialect, err);
    cfg.on_reply = keep_reply;
    cfg.reply_ctx = &jr;
    if (!rc)
        sr_rollout_run(r, k, &cfg, &e);
    sr_verify_ctx ctx = {j->id, 0, "replay", 1, 0, in->res, NULL};
    if (!in->o->run) {
        snprintf(in->label, sizeof in->label, "%s session %s", in->o->step_name, j->id);
        ctx.scenario = in->o->scenario;
        ctx.step = in->o->step;
        ctx.step_name = in->label;
    }
    int ok = 0;
    if (!rc)
        rc = sr_verify_rollout(&ok, NULL, r, index, &ctx, err);
    if (!rc)
        rc = judge_meta(&ok, &jr, &ctx, index, err);
    sr_meta_replay_free(jr.m);
    if (!rc && in->o->run)
        sr_result_set_verdict(in->res, ok ? SR_VERDICT_PASS : SR_VERDICT_FAIL, NULL);
    else if (!rc)
        count(in->res, 0, ok, !ok);
    sr_rollout_drop_exchanges(r);
    plan_free(&p);
    return rc;
}

/* The capture's dialect and generate route: --dialect, else sniffed from the first 2xx answer
 * of a generate exchange (as check-body does). */
static int pick_dialect(sr_dialect *d, const sr_dialect_route **rt, const sr_capture *c, int given,
                        sr_err *err)
{
    sr_buf b = SR_BUF_INIT;
    b.max = JUDGE_MAX_BODY;
    int rc = 0, have = 0;
    if (given >= 0) {
        *d = (sr_dialect)given;
        have = 1;
    }
    for (size_t i = 0; !rc && i < sr_capture_count(c); i++) {
        const sr_capture_exchange *x = sr_capture_at(c, i);
        char p[SR_CAPTURE_STR_MAX];
        uri_path(p, sizeof p, x->uri);
        if (!x->session[0] || x->status < 200 || x->status > 299 || !x->response.bytes)
            continue;
        if (!have) {
            const char *why = NULL;
            sr_err e = SR_ERR_INIT;
            rc = sr_capture_read_body(c, &x->response, &b, JUDGE_MAX_BODY, err);
            int v = rc ? -1 : sr_dialect_sniff(b.data, b.len, &why, &e);
            if (v < 0)
                continue;
            *d = (sr_dialect)v;
            have = 1;
        }
        if ((*rt = sr_dialect_route_at(*d, p)) != NULL)
            break;
    }
    sr_buf_release(&b);
    if (!rc && (!have || !*rt))
        rc = sr_err_set(err, SR_E_INVAL,
                        "the capture has no answered generate of a session%s%s%s (give "
                        "--dialect?)",
                        have ? " on a route of dialect " : "", have ? sr_dialect_name(*d) : "", "");
    return rc;
}

/* The batch of every session that finished with routes, collated as a trainer does, and the
 * collation's contract checks: as one more entry "collate" (run mode) or into the one entry. */
static int judge_collate(sr_replay_judge_opts *o, const sr_rollout_result *rs, size_t n,
                         sr_err *err)
{
    const sr_rollout_result **pr = calloc(n + 1, sizeof *pr);
    int64_t *ids = calloc(n + 1, sizeof *ids);
    sr_collate_sample *smp = calloc(n + 1, sizeof *smp);
    size_t k = 0;
    int rc = pr && ids && smp ? 0 : sr_err_set(err, SR_E_NOMEM, "no memory for the collation");
    for (size_t i = 0; !rc && i < n; i++) {
        if (rs[i].code || rs[i].routes.ndim != 3)
            continue;
        sr_collate_sample one = SR_COLLATE_SAMPLE_INIT;
        one.routes = &rs[i].routes;
        one.prompt_len = (int64_t)rs[i].prompt_len;
        one.response_len = (int64_t)rs[i].response_len;
        one.captured_rows = rs[i].captured_rows;
        pr[k] = &rs[i];
        ids[k] = (int64_t)i;
        smp[k++] = one;
    }
    sr_scenario_result *res = o->res;
    if (!rc && k && o->run)
        rc = sr_run_result_add_scenario(&res, o->run, err);
    if (!rc && k && o->run)
        rc = sr_result_set_str(&res->id, "collate", err);
    if (!rc && k) {
        sr_collate_buf buf = SR_COLLATE_BUF_INIT;
        sr_collate_result out;
        sr_err e = SR_ERR_INIT;
        int ok = 0;
        if (o->run)
            res->external = 1;
        int crc = sr_collate_routes(&out, &buf, smp, (int64_t)k, 1, &e);
        sr_verify_ctx ctx = {"collate", 0, "collate", 1, 0, res, NULL};
        if (!o->run) {
            ctx.scenario = o->scenario;
            ctx.step = o->step;
            ctx.step_name = o->step_name;
        }
        if (crc)
            rc = sr_result_check(res, sr_code_name(crc), NULL, NULL, "collating %zu sessions: %s",
                                 k, e.msg);
        else
            rc = sr_verify_collation(&ok, &out, pr, ids, k, &ctx, err);
        if (!rc && o->run)
            sr_result_set_verdict(res, !crc && ok ? SR_VERDICT_PASS : SR_VERDICT_FAIL, NULL);
        if (!o->run) {
            sr_counters cn;
            memset(&cn, 0, sizeof cn);
            cn.collations = 1;
            sr_result_count(res, &cn);
        }
        sr_collate_buf_release(&buf);
    }
    free(pr);
    free(ids);
    free(smp);
    return rc;
}

/* The entry session i's checks go into (a new one named after it in run mode). */
static int session_entry(judge_into *in, const judge_session *j, sr_err *err)
{
    if (!in->o->run) {
        in->res = in->o->res;
        return 0;
    }
    int rc = sr_run_result_add_scenario(&in->res, in->o->run, err);
    if (!rc)
        rc = sr_result_set_str(&in->res->id, j->id, err);
    if (!rc)
        in->res->external = 1;
    return rc;
}

static int judge_all(sr_replay_judge_opts *o, const sr_capture *c, const char *url, sr_dialect d,
                     const sr_dialect_route *rt, sr_err *err)
{
    judge_session *ss = NULL;
    size_t ns = 0;
    int rc = group_sessions(&ss, &ns, &o->unjudged, c, rt->path, err);
    sr_client_opts co = SR_CLIENT_OPTS_INIT;
    co.dialect = d;
    co.dialect_route = (int)(rt - sr_dialect_get(d)->routes);
    co.backoff_initial_ms = 0; /* the recorded answers do not change by waiting */
    co.backoff_max_ms = 0;
    sr_client *cl = NULL;
    sr_client_conn *k = NULL;
    if (!rc)
        rc = sr_client_new(&cl, &url, 1, NULL, &co, err);
    if (!rc)
        rc = sr_client_conn_new(&k, cl, err);
    int routes = d != SR_DIALECT_SKYRL || strcmp(rt->path, "/skyrl/v1/generate") == 0;
    sr_rollout_result *rs = rc ? NULL : calloc(ns + 1, sizeof *rs);
    if (!rc && !rs)
        rc = sr_err_set(err, SR_E_NOMEM, "no memory for %zu sessions", ns);
    if (!rc && !o->run)
        count(o->res, (int64_t)ns, 0, 0);
    judge_into in = {o, NULL, "", d};
    for (size_t i = 0; !rc && i < ns; i++) {
        rc = session_entry(&in, &ss[i], err);
        if (!rc)
            rc = judge_one(&in, &rs[i], k, c, &ss[i], rt, routes, (int64_t)i, err);
        if (rc && !o->run) /* every session requested is accounted for */
            count(o->res, 0, 0, (int64_t)(ns - i));
    }
    if (!rc)
        rc = judge_collate(o, rs, ns, err);
    for (size_t i = 0; rs && i < ns; i++)
        sr_rollout_result_release(&rs[i]);
    free(rs);
    sr_client_conn_free(k);
    sr_client_free(cl);
    judge_sessions_free(ss, ns);
    return rc;
}

/* Every body read back and checked against its size and digest (capture.h). */
static int verify_bodies(const sr_capture *c, sr_err *err)
{
    sr_buf b = SR_BUF_INIT;
    b.max = JUDGE_MAX_BODY;
    int rc = 0;
    for (size_t i = 0; !rc && i < sr_capture_count(c); i++) {
        const sr_capture_exchange *x = sr_capture_at(c, i);
        rc = sr_capture_read_body(c, &x->request, &b, JUDGE_MAX_BODY, err);
        if (!rc)
            rc = sr_capture_read_body(c, &x->response, &b, JUDGE_MAX_BODY, err);
        if (rc)
            sr_err_prefix(err, "exchange %lld: ", (long long)x->seq);
    }
    sr_buf_release(&b);
    return rc;
}

int sr_replay_judge_capture(const sr_capture *c, sr_replay_judge_opts *o, sr_err *err)
{
    if (!o->run && !o->res)
        return sr_err_set(err, SR_E_INVAL, "the judge was given nowhere to record its checks");
    sr_dialect d = SR_DIALECT_SKYRL;
    const sr_dialect_route *rt = NULL;
    sr_replay_serve *srv = NULL;
    sr_replay_serve_config scfg = {.capture = c};
    int rc = verify_bodies(c, err);
    if (!rc)
        rc = pick_dialect(&d, &rt, c, o->dialect, err);
    if (!rc) {
        o->dialect_used = (int)d;
        rc = sr_replay_serve_start(&srv, &scfg, err);
    }
    if (!rc)
        rc = judge_all(o, c, sr_replay_serve_url(srv), d, rt, err);
    sr_replay_serve_stop(srv);
    return rc;
}
