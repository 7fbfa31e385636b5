/* sr_client_generate and sr_client_finish_session: request checks, the body, the attempts and
 * the retry policy (client.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"
#include "retry.h"
#include "sr_clock.h"

/* ---- request checks and body ---- */

static int check_session(const char *s, sr_err *err)
{
    size_t n = s ? strlen(s) : 0;
    if (n > SR_CLIENT_SESSION_MAX)
        return sr_err_set(err, SR_E_CLIENT_INVALID, "session_id is longer than %d bytes",
                          SR_CLIENT_SESSION_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
            return sr_err_set(err, SR_E_CLIENT_INVALID,
                              "session_id byte %zu is not printable ASCII (it is a header)", i);
    return 0;
}

static int check_sampling(const cJSON *sp, sr_err *err)
{
    if (!sp)
        return 0;
    if (!cJSON_IsObject(sp))
        return sr_err_set(err, SR_E_CLIENT_INVALID, "sampling_params must be an object");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(sp, "n");
    if (n && !cJSON_IsNull(n) && (!cJSON_IsNumber(n) || n->valuedouble > 1))
        return sr_err_set(err, SR_E_CLIENT_INVALID,
                          "n > 1 is not supported. Use `config.generator.n_samples_per_prompt` "
                          "instead.");
    if (cJSON_GetObjectItemCaseSensitive(sp, "routed_experts_prompt_start"))
        return sr_err_set(err, SR_E_CLIENT_INVALID,
                          "routed_experts_prompt_start belongs in the request's prompt_start, "
                          "not in sampling_params");
    return 0;
}

/* The client-side validation of docs/reference/skyrl.md §1.2; nothing is sent when it fails. */
static int check_request(const sr_client_opts *o, const sr_client_req *r, sr_err *err)
{
    if (r->return_support && (o->stack != SR_STACK_2086 || o->dialect != SR_DIALECT_SKYRL))
        return sr_err_set(err, SR_E_CLIENT_INVALID,
                          "return_sample_support needs the later stack (client.stack \"2086\") "
                          "and the skyrl wire; this client speaks %s in dialect %s",
                          sr_stack_name(o->stack), sr_dialect_name(o->dialect));
    if (!r->token_ids || r->n_tokens == 0)
        return sr_err_set(err, SR_E_CLIENT_INVALID, "token_ids must be a non-empty list");
    if (r->prompt_start >= 0 && !r->return_routes)
        return sr_err_set(err, SR_E_CLIENT_INVALID,
                          "routed_experts_prompt_start requires return_routed_experts=True");
    if (r->prompt_start < -1 || r->prompt_start > (int64_t)r->n_tokens)
        return sr_err_set(err, SR_E_CLIENT_INVALID,
                          "routed_experts_prompt_start must be an integer within the prompt "
                          "(got %lld for %zu tokens)",
                          (long long)r->prompt_start, r->n_tokens);
    if (r->cache_salt && !r->cache_salt[0])
        return sr_err_set(err, SR_E_CLIENT_INVALID,
                          "cache_salt must not be empty (vLLM rejects an empty salt)");
    size_t i = sr_i32_first_negative(r->token_ids, r->n_tokens);
    if (i < r->n_tokens)
        return sr_err_set_at(err, SR_E_CLIENT_INVALID, (int64_t)i,
                             "token_ids[%zu] = %d is negative", i, r->token_ids[i]);
    int rc = check_sampling(r->sampling_params, err);
    return rc ? rc : check_session(r->session_id, err);
}

/* ---- generate ---- */

static int build_headers(struct curl_slist **out, const char *session, sr_err *err);

typedef struct gen_ctx {
    sr_client_conn *k;
    const sr_client_req *req;
    sr_client_result *out;
    struct curl_slist *headers;
    double t0;
    uint64_t seed;
    int splice; /* the response goes through the splice (skyrl with routes; every other wire) */
} gen_ctx;

/* The conn's headers for `session`: kept from its previous generate when the session is the
 * same (every turn of a rollout), else built anew. */
static int make_headers(sr_client_conn *k, const char *session, sr_err *err)
{
    const char *want = session ? session : "";
    if (k->headers && strcmp(k->headers_session, want) == 0)
        return 0;
    curl_slist_free_all(k->headers);
    k->headers = NULL;
    int rc = build_headers(&k->headers, session, err);
    if (!rc)
        snprintf(k->headers_session, sizeof k->headers_session, "%s", want);
    return rc;
}

static int build_headers(struct curl_slist **out, const char *session, sr_err *err)
{
    char line[SR_CLIENT_SESSION_MAX + 32];
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    /* curl would otherwise wait for "100 Continue" before sending bodies over 1 KiB. */
    struct curl_slist *t = h ? curl_slist_append(h, "Expect:") : NULL;
    if (t && session && session[0]) {
        snprintf(line, sizeof line, "X-Session-ID: %s", session);
        t = curl_slist_append(t, line);
    }
    if (!t) {
        curl_slist_free_all(h);
        return sr_err_set(err, SR_E_NOMEM, "client: cannot build headers");
    }
    *out = t;
    return 0;
}

/* Names the request in a final error: engine, path, attempt. */
static int fail(gen_ctx *g, int code, sr_err *err)
{
    sr_client_result *o = g->out;
    o->request_ms = sr_clock_ms() - g->t0;
    if (err) {
        err->code = code;
        sr_err_prefix(err, "engine %d (%s%s) attempt %d/%d: ", o->engine, o->url, o->path,
                      o->n_attempts, g->k->c->opts.max_attempts);
    }
    return code;
}

/* An aborted reply (client.h, "abort" in every dialect's finish reason, which the decoders read
 * before the routes): client.aborted_turn whatever else the decode found after the finish
 * reason, so an abort without routes is not client.routes_missing; rc as it was otherwise. */
static int aborted(gen_ctx *g, int rc, sr_err *err)
{
    const sr_client_result *out = g->out;
    if (g->k->c->opts.quirks.commit_aborted_turn || !out->finish_reason ||
        strcmp(out->finish_reason, "abort") != 0)
        return rc;
    const char *after = rc ? sr_code_name(rc) : NULL;
    return sr_err_set(err, SR_E_CLIENT_ABORTED_TURN,
                      "the engine answered finish_reason \"abort\" after %zu token%s%s%s%s: the "
                      "turn is partial and is not committed",
                      out->n_tokens, out->n_tokens == 1 ? "" : "s", after ? " (and " : "",
                      after ? after : "", after ? ")" : "");
}

static int decode(gen_ctx *g, const sr_xfer_out *x, sr_err *err)
{
    double t0 = sr_clock_ms();
    const sr_client_opts *o = &g->k->c->opts;
    /* An earlier attempt's reason must not speak for this one. */
    g->out->finish_reason = NULL;
    g->out->n_tokens = 0;
    int rc = !x->spliced ? sr_client_decode_native(g->out, g->k, x->native, err)
             : o->dialect == SR_DIALECT_SKYRL
                 ? sr_client_decode_spliced(g->out, g->k, x->spliced, g->req->return_routes,
                                            g->req->return_support, err)
                 : sr_client_decode_dialect(g->out, g->k, x->spliced, g->req, err);
    g->out->decode_ms = sr_clock_ms() - t0;
    return aborted(g, rc, err);
}

/* After failed attempt number a (0-based): 0 to retry, else the final code. */
static int after_failure(gen_ctx *g, int a, int rc, const sr_xfer_out *x, int deadline_bound,
                         sr_err *err)
{
    const sr_client_opts *o = &g->k->c->opts;
    sr_client_attempt *att = &g->out->attempts[a];
    /* The later stack's 400 for a capture request without a usable top_k is a configuration
     * error of the caller: named, and never retried (a 400 is not in any case). */
    if (rc == SR_E_CLIENT_HTTP_STATUS && g->req->return_support &&
        sr_client_support_refusal(att->http_status, err ? err->msg : NULL))
        return err ? (err->code = SR_E_CLIENT_SUPPORT_TOP_K) : SR_E_CLIENT_SUPPORT_TOP_K;
    if (x->timed_out && deadline_bound)
        return sr_err_set(err, SR_E_CLIENT_DEADLINE,
                          "no complete response within the %lld ms "
                          "deadline (%s)",
                          (long long)o->deadline_ms, sr_code_name(rc));
    sr_retry_facts f = {rc, att->http_status, x->body_json, o->on_abort == SR_CLIENT_ABORT_RETRY};
    sr_retry_verdict v = sr_retry_classify(&f, &o->quirks);
    if (v == SR_RETRY_NO)
        return rc;
    if (v == SR_RETRY_DECLINED) {
        sr_err_prefix(err, "%s not retried (quirk retry_json_decode_only): ", sr_code_name(rc));
        return err ? (err->code = SR_E_CLIENT_NOT_RETRIED) : SR_E_CLIENT_NOT_RETRIED;
    }
    if (a + 1 >= o->max_attempts) {
        sr_err_prefix(err, "%d attempts failed; last %s: ", a + 1, sr_code_name(rc));
        return err ? (err->code = SR_E_CLIENT_RETRY_EXHAUSTED) : SR_E_CLIENT_RETRY_EXHAUSTED;
    }
    int64_t wait =
        sr_retry_backoff_ms(o->backoff_initial_ms, o->backoff_max_ms, o->jitter, g->seed, a + 1,
                            rc == SR_E_CLIENT_HTTP_STATUS ? x->retry_after_ms : -1);
    double left = (double)o->deadline_ms - (sr_clock_ms() - g->t0);
    if ((double)wait >= left)
        return sr_err_set(err, SR_E_CLIENT_DEADLINE,
                          "waiting %lld ms after %s would pass the %lld ms deadline",
                          (long long)wait, sr_code_name(rc), (long long)o->deadline_ms);
    att->retried = 1;
    att->wait_ms = (double)wait;
    g->out->wait_ms += (double)wait;
    sr_client_sleep_ms(wait);
    return 0;
}

static int attempt_loop(gen_ctx *g, sr_err *err)
{
    const sr_client_opts *o = &g->k->c->opts;
    sr_client_result *out = g->out;
    for (int a = 0; a < o->max_attempts; a++) {
        double now = sr_clock_ms();
        double left = (double)o->deadline_ms - (now - g->t0);
        if (left < 1)
            return fail(g,
                        sr_err_set(err, SR_E_CLIENT_DEADLINE, "the %lld ms deadline passed",
                                   (long long)o->deadline_ms),
                        err);
        int64_t timeout = (int64_t)left;
        int deadline_bound = 1;
        if (o->attempt_timeout_ms > 0 && o->attempt_timeout_ms < timeout) {
            timeout = o->attempt_timeout_ms;
            deadline_bound = 0;
        }
        sr_client_attempt *att = &out->attempts[a];
        memset(att, 0, sizeof *att);
        att->start_ms = now - g->t0;
        out->n_attempts = a + 1;
        sr_xfer_out x;
        int rc = sr_client_attempt_run(g->k, g->splice, g->headers, timeout, att, &x, err);
        att->elapsed_ms = sr_clock_ms() - now;
        out->http_status = att->http_status;
        out->splice_ms = x.splice_ms;
        out->splice_cpu_ms = x.splice_cpu_ms;
        out->bytes_received = att->bytes;
        out->bytes_total += att->bytes;
        if (!rc) {
            rc = decode(g, &x, err);
            att->code = rc;
            if (!rc) {
                out->request_ms = sr_clock_ms() - g->t0;
                return 0;
            }
            if (rc != SR_E_CLIENT_ABORTED_TURN)
                return fail(g, rc, err);
        }
        rc = after_failure(g, a, rc, &x, deadline_bound, err);
        if (rc)
            return fail(g, rc, err);
    }
    return fail(g, sr_err_set(err, SR_E_INTERNAL, "client: attempt loop ended"), err);
}

static void result_reset(sr_client_result *out)
{
    memset(out, 0, sizeof *out);
    out->engine = -1;
    out->url = "";
    out->path = "";
    out->prompt_start_sent = -1;
    out->weight_version = -1;
}

/* The engine a session's generates go to: the decode replica of a P/D pair, else sticky. */
static int engine_of(const sr_client *c, const char *session_id)
{
    return c->opts.pd_decode >= 0 ? c->opts.pd_decode : sr_client_engine_for(c, session_id);
}

static int generate_run(sr_client_result *out, sr_client_conn *k, const sr_client_req *req,
                        int engine, sr_err *err);

/* One generate on `engine`, its thread CPU time measured when the conn samples it. */
static int generate_on(sr_client_result *out, sr_client_conn *k, const sr_client_req *req,
                       int engine, sr_err *err)
{
    result_reset(out);
    const sr_client *c = k->c;
    k->cpu_sample = c->opts.cpu_every > 0 && k->generates % (uint64_t)c->opts.cpu_every == 0;
    k->generates++;
    int64_t cpu0 = k->cpu_sample ? sr_clock_cpu_ns() : 0;
    int dest = req->routes_dest && req->return_routes && c->opts.dialect == SR_DIALECT_SKYRL;
    if (dest)
        sr_splice_set_dest(k->splicer, "routed_experts", req->routes_dest, req->routes_dest_cap);
    int rc = generate_run(out, k, req, engine, err);
    if (dest) /* the caller's memory is borrowed for this call only */
        sr_splice_set_dest(k->splicer, NULL, NULL, 0);
    if (!rc && out->has_routes && out->routes.ndim == 3) {
        size_t row = (size_t)out->routes.shape[1] * (size_t)out->routes.shape[2] *
                     sr_dtype_size(out->routes.dtype);
        /* Written only when it changes: every generate of every conn's thread passes here, and
         * a store each time would bounce the pool's cache line between the cores. */
        if (__atomic_load_n(&c->pool->route_row_bytes, __ATOMIC_RELAXED) != row)
            __atomic_store_n(&c->pool->route_row_bytes, row, __ATOMIC_RELAXED);
    }
    if (k->cpu_sample) {
        out->cpu_sampled = 1;
        out->request_cpu_ms = (double)(sr_clock_cpu_ns() - cpu0) / 1e6;
    }
    return rc;
}

/* The generate itself: the body, the headers, the attempts. */
static int generate_run(sr_client_result *out, sr_client_conn *k, const sr_client_req *req,
                        int engine, sr_err *err)
{
    gen_ctx g = {k, req, out, NULL, sr_clock_ms(), 0, 0};
    int rc = check_request(&k->c->opts, req, err);
    if (rc)
        return rc;
    const sr_client *c = k->c;
    out->engine = engine;
    out->url = c->urls[out->engine];
    k->engine = engine;
    /* skyrl: /skyrl/v1/generate when routes or (later stack) the sample support are asked for,
     * as the reference's `packed_side_channels = return_routed_experts or return_sample_support`
     * (SkyRL #2082, remote_inference_client.py); vLLM's native route otherwise (read by cJSON);
     * another wire: its route, always through the splice. */
    const sr_dialect_route *rt = &sr_dialect_get(c->opts.dialect)->routes[c->opts.dialect_route];
    int skyrl = c->opts.dialect == SR_DIALECT_SKYRL;
    int packed = req->return_routes || req->return_support;
    out->path = !skyrl || packed ? rt->path : "/inference/v1/generate";
    g.splice = !skyrl || packed;
    if (req->return_routes && !c->opts.quirks.no_prompt_start)
        out->prompt_start_sent =
            c->opts.route_start_zero && req->prompt_start > 0 ? 0 : req->prompt_start;
    rc = sr_client_build_body(&k->req_body, rt, req, out->prompt_start_sent, &k->ids_text, err);
    out->bytes_sent = k->req_body.len;
    sr_buf_reset(&k->url);
    if (!rc)
        rc = sr_buf_puts(&k->url, out->url, err);
    if (!rc)
        rc = sr_buf_puts(&k->url, out->path, err);
    if (!rc)
        rc = make_headers(k, req->session_id, err);
    if (rc)
        return rc;
    g.headers = k->headers;
    g.seed = sr_retry_seed(c->opts.seed, req->session_id, req->turn);
    return attempt_loop(&g, err);
}

/* The prefill replica's rows for `req` (the same request with max_tokens 1) into k->pd_rows. */
static int pd_prefill(sr_client_conn *k, const sr_client_req *req, sr_ndarray *rows, sr_err *err)
{
    cJSON *sp =
        req->sampling_params ? cJSON_Duplicate(req->sampling_params, 1) : cJSON_CreateObject();
    cJSON *one = cJSON_CreateNumber(1);
    int rc = sp && one ? 0 : sr_err_set(err, SR_E_NOMEM, "client: cannot build the prefill");
    if (!rc && cJSON_GetObjectItemCaseSensitive(sp, "max_tokens"))
        cJSON_ReplaceItemInObjectCaseSensitive(sp, "max_tokens", one);
    else if (!rc)
        cJSON_AddItemToObject(sp, "max_tokens", one);
    else
        cJSON_Delete(one);
    sr_client_req pre = *req;
    pre.sampling_params = sp;
    pre.routes_dest = NULL; /* its rows are copied out; the decode reply's go to the destination */
    pre.routes_dest_cap = 0;
    sr_client_result *r = rc ? NULL : malloc(sizeof(*r));
    if (!rc && !r)
        rc = sr_err_set(err, SR_E_NOMEM, "client: cannot allocate the prefill's result");
    if (!rc && !(rc = generate_on(r, k, &pre, k->c->opts.pd_prefill, err))) {
        *rows = r->routes;
        size_t n = r->routes.nbytes;
        if (n > k->pd_rows_cap) {
            unsigned char *p = realloc(k->pd_rows, n);
            rc = p ? 0 : sr_err_set(err, SR_E_NOMEM, "client: cannot keep the prefill's rows");
            if (p)
                k->pd_rows = p, k->pd_rows_cap = n;
        }
        if (!rc && n)
            memcpy(k->pd_rows, r->routes.data, n);
        rows->data = k->pd_rows;
    }
    if (rc)
        sr_err_prefix(err, "prefill on engine %d: ", k->c->opts.pd_prefill);
    free(r);
    cJSON_Delete(sp);
    return rc;
}

/* Replaces the decode reply's prompt-region rows (its first rows) by the prefill's. */
static int pd_merge(sr_client_result *out, const sr_ndarray *pre, sr_err *err)
{
    const sr_ndarray *a = &out->routes;
    if (pre->dtype != a->dtype || pre->ndim != 3 || a->ndim != 3 || pre->shape[1] != a->shape[1] ||
        pre->shape[2] != a->shape[2] || pre->shape[0] > a->shape[0])
        return sr_err_set(err, SR_E_WIRE_SHAPE,
                          "the prefill replica's %lld rows do not fit the decode reply's %lld",
                          (long long)pre->shape[0], (long long)a->shape[0]);
    if (pre->nbytes)
        memcpy(a->data, pre->data, pre->nbytes);
    /* The splice's OR was of the rows just replaced: it no longer describes the routes. */
    out->routes_bound = (sr_value_bound)SR_VALUE_BOUND_UNKNOWN;
    return 0;
}

int sr_client_generate(sr_client_result *out, sr_client_conn *k, const sr_client_req *req,
                       sr_err *err)
{
    const sr_client_opts *o = &k->c->opts;
    if (o->pd_decode < 0 || !o->pd_merge || !req->return_routes)
        return generate_on(out, k, req, engine_of(k->c, req->session_id), err);
    sr_ndarray pre;
    int rc = pd_prefill(k, req, &pre, err);
    if (rc) {
        result_reset(out);
        return rc;
    }
    rc = generate_on(out, k, req, o->pd_decode, err);
    return rc ? rc : pd_merge(out, &pre, err);
}

size_t sr_client_routes_row_bytes(const sr_client_conn *k)
{
    return __atomic_load_n(&k->c->pool->route_row_bytes, __ATOMIC_RELAXED);
}

sr_block_cache *sr_client_blocks(const sr_client_conn *k)
{
    return k->c->blocks;
}

int sr_client_finish_session(sr_client_conn *k, const char *session_id)
{
    if (!session_id || !session_id[0])
        return 0;
    const sr_client *c = k->c;
    int engine = engine_of(c, session_id);
    /* libcurl ignores the handle of curl_easy_escape since 7.82.0 (Debian 12 has 7.88), so no
     * engine's connection is borrowed for it. */
    char *q = curl_easy_escape(NULL, session_id, 0);
    if (!q)
        return SR_E_NOMEM;
    char path[SR_CLIENT_SESSION_MAX * 3 + 64];
    snprintf(path, sizeof path, "/finish_session?session_id=%s", q);
    curl_free(q);
    sr_client_reply r;
    int rc = sr_client_control(&r, 1, c, engine, "POST", path, NULL, NULL);
    sr_client_reply_release(&r);
    return rc;
}
