/* The client object: its options, engine URLs, conns and the pool of idle conns (client.h). */
#include "client.h"

#include <stdlib.h>
#include <string.h>

#include "client_priv.h"
#include "retry.h"
#include "sr_clock.h"

/* ---- the client's idle conns ---- */

static int pool_new(sr_conn_pool **out, sr_err *err)
{
    sr_conn_pool *p = calloc(1, sizeof *p);
    if (!p || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        *out = NULL;
        return sr_err_set(err, SR_E_NOMEM, "client: cannot create the conn pool");
    }
    *out = p;
    return 0;
}

static void pool_free(sr_conn_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        sr_client_conn_free(p->idle[i]);
    for (size_t e = 0; e < SR_CLIENT_MAX_ENGINES; e++) {
        for (size_t i = 0; i < p->easy[e].n; i++)
            curl_easy_cleanup(p->easy[e].e[i]);
        free(p->easy[e].e);
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* An idle handle of the engine with the most of them (called with the lock held), or NULL. */
static CURL *steal_idle(sr_conn_pool *p)
{
    size_t best = SR_CLIENT_MAX_ENGINES;
    for (size_t e = 0; e < SR_CLIENT_MAX_ENGINES; e++)
        if (p->easy[e].n && (best == SR_CLIENT_MAX_ENGINES || p->easy[e].n > p->easy[best].n))
            best = e;
    return best < SR_CLIENT_MAX_ENGINES ? p->easy[best].e[--p->easy[best].n] : NULL;
}

CURL *sr_client_easy_take(const sr_client *c, int engine, int *made)
{
    *made = 0;
    sr_conn_pool *p = c->pool;
    sr_easy_stack *s = &p->easy[engine];
    CURL *e = NULL;
    pthread_mutex_lock(&p->mu);
    if (s->n)
        e = s->e[--s->n];
    else if (p->handles >= p->conns + c->n - 1)
        e = steal_idle(p);
    int fresh = !e;
    if (fresh)
        p->handles++;
    pthread_mutex_unlock(&p->mu);
    if (!fresh)
        return e;
    e = curl_easy_init();
    if (e) {
        /* One connection a handle; the old one is closed when it connects elsewhere. */
        curl_easy_setopt(e, CURLOPT_MAXCONNECTS, 1L);
        *made = 1;
        return e;
    }
    pthread_mutex_lock(&p->mu);
    p->handles--;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void sr_client_easy_give(const sr_client *c, int engine, CURL *e)
{
    if (!e)
        return;
    sr_conn_pool *p = c->pool;
    sr_easy_stack *s = &p->easy[engine];
    pthread_mutex_lock(&p->mu);
    int kept = s->n < s->cap;
    if (!kept) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        CURL **g = realloc(s->e, cap * sizeof *g);
        if (g) {
            s->e = g;
            s->cap = cap;
            kept = 1;
        }
    }
    if (kept)
        s->e[s->n++] = e;
    else
        p->handles--;
    pthread_mutex_unlock(&p->mu);
    if (!kept)
        curl_easy_cleanup(e);
}

int sr_client_pool_take(sr_client_conn **out, const sr_client *c, sr_err *err)
{
    sr_conn_pool *p = c->pool;
    sr_client_conn *k = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->n)
        k = p->idle[--p->n];
    pthread_mutex_unlock(&p->mu);
    if (k) {
        *out = k;
        return 0;
    }
    return sr_client_conn_new(out, c, err);
}

void sr_client_pool_give(const sr_client *c, sr_client_conn *k)
{
    if (!k)
        return;
    sr_conn_pool *p = c->pool;
    pthread_mutex_lock(&p->mu);
    int kept = p->n < SR_CLIENT_POOL_MAX;
    if (kept)
        p->idle[p->n++] = k;
    pthread_mutex_unlock(&p->mu);
    if (!kept)
        sr_client_conn_free(k);
}

/* ---- the client ---- */

int sr_client_url_copy(char *dst, const char *url)
{
    size_t len = url ? strlen(url) : 0;
    while (len && url[len - 1] == '/')
        len--;
    if (!len || len >= SR_CLIENT_URL_MAX)
        return -1;
    memcpy(dst, url, len);
    dst[len] = '\0';
    return 0;
}

static int check_opts(const sr_client_opts *o, sr_err *err)
{
    if (o->max_attempts < 1 || o->max_attempts > SR_CLIENT_MAX_ATTEMPTS)
        return sr_err_set(err, SR_E_INVAL, "client: max_attempts must be 1..%d, got %d",
                          SR_CLIENT_MAX_ATTEMPTS, o->max_attempts);
    if (o->backoff_initial_ms < 0 || o->backoff_max_ms < 0 || !(o->jitter >= 0 && o->jitter <= 1))
        return sr_err_set(err, SR_E_INVAL, "client: backoff must be >= 0 and jitter in [0, 1]");
    if (o->deadline_ms < 1 || o->attempt_timeout_ms < 0 || o->connect_timeout_ms < 0 ||
        o->control_timeout_ms < 1)
        return sr_err_set(err, SR_E_INVAL, "client: deadlines and timeouts must be positive");
    const sr_dialect_desc *d = sr_dialect_get(o->dialect);
    if (!d || o->dialect_route < 0 || o->dialect_route >= SR_DIALECT_MAX_ROUTES ||
        !d->routes[o->dialect_route].path)
        return sr_err_set(err, SR_E_INVAL, "client: dialect %d has no generate route %d",
                          (int)o->dialect, o->dialect_route);
    if (o->pd_decode >= SR_CLIENT_MAX_ENGINES || o->pd_prefill >= SR_CLIENT_MAX_ENGINES ||
        (o->pd_decode >= 0 && o->pd_prefill == o->pd_decode))
        return sr_err_set(err, SR_E_INVAL, "client: the prefill and decode engines must differ");
    if (o->route_layers < 0 || o->route_topk < 0)
        return sr_err_set(err, SR_E_INVAL, "client: route_layers and route_topk must be >= 0");
    if (o->cpu_every < 0)
        return sr_err_set(err, SR_E_INVAL, "client: cpu_every must be >= 0");
    return 0;
}

/* The registry of a dialect other than skyrl's: its route fields, then the caller's other
 * entries (custom side channels) whose names it does not use. */
static int dialect_fields(sr_client *c, const sr_fields *given, sr_err *err)
{
    int rc = sr_fields_new(&c->own_fields, err);
    if (!rc)
        rc = sr_dialect_add_fields(c->own_fields, c->opts.dialect, err);
    for (size_t i = 0; !rc && given && i < sr_fields_count(given); i++) {
        const sr_field_def *d = sr_fields_at(given, i);
        if (!sr_fields_find(c->own_fields, d->name, d->name_len))
            rc = sr_fields_add(c->own_fields, d, err);
    }
    c->fields = c->own_fields;
    return rc;
}

int sr_client_new(sr_client **out, const char *const *urls, size_t n_urls, const sr_fields *fields,
                  const sr_client_opts *opts, sr_err *err)
{
    *out = NULL;
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    if (opts)
        o = *opts;
    if (!o.max_body)
        o.max_body = SR_SPLICE_DEFAULT_MAX_BODY;
    int rc = check_opts(&o, err);
    if (rc)
        return rc;
    if (!urls || n_urls < 1 || n_urls > SR_CLIENT_MAX_ENGINES)
        return sr_err_set(err, SR_E_INVAL, "client: 1..%d engine URLs are needed, got %zu",
                          SR_CLIENT_MAX_ENGINES, n_urls);
    if ((size_t)(o.pd_decode + 1) > n_urls || (o.pd_merge && (size_t)(o.pd_prefill + 1) > n_urls) ||
        (o.pd_decode >= 0 && o.pd_merge && o.pd_prefill < 0))
        return sr_err_set(err, SR_E_INVAL,
                          "client: prefill engine %d and decode engine %d must be among the %zu",
                          o.pd_prefill, o.pd_decode, n_urls);
    sr_client *c = calloc(1, sizeof *c);
    if (!c)
        return sr_err_set(err, SR_E_NOMEM, "client: cannot allocate");
    c->opts = o;
    c->n = n_urls;
    for (size_t i = 0; i < n_urls; i++)
        if (sr_client_url_copy(c->urls[i], urls[i])) {
            free(c);
            return sr_err_set(err, SR_E_INVAL, "client: engine URL %zu is empty or too long", i);
        }
    c->fields = fields;
    c->cpu_pair_ns = o.cpu_every > 0 ? sr_clock_cpu_pair_ns(16) : 0;
    rc = pool_new(&c->pool, err);
    if (!rc)
        rc = sr_client_workers_new(&c->workers, err);
    if (!rc)
        rc = sr_block_cache_new(&c->blocks, SR_CLIENT_BLOCKS_MAX, SR_CLIENT_BLOCKS_BYTES,
                                SR_CLIENT_BLOCK_MAX, err);
    if (!rc && o.dialect != SR_DIALECT_SKYRL) {
        rc = dialect_fields(c, fields, err);
    } else if (!rc && !fields) {
        rc = sr_fields_new(&c->own_fields, err);
        if (!rc)
            rc = sr_fields_add_builtins(c->own_fields, err);
        c->fields = c->own_fields;
    }
    if (rc) {
        sr_client_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void sr_client_free(sr_client *c)
{
    if (!c)
        return;
    /* The kept threads first: none holds a conn or a handle while idle. */
    sr_client_workers_free(c->workers);
    pool_free(c->pool);
    /* Results still holding blocks keep the cache alive, closed: their blocks are then freed. */
    sr_block_cache_close(c->blocks);
    sr_fields_free(c->own_fields);
    free(c);
}

const sr_client_opts *sr_client_options(const sr_client *c)
{
    return &c->opts;
}

size_t sr_client_engine_count(const sr_client *c)
{
    return c->n;
}

const char *sr_client_engine_url(const sr_client *c, size_t i)
{
    return i < c->n ? c->urls[i] : NULL;
}

int sr_client_engine_for(const sr_client *c, const char *session_id)
{
    return (int)(sr_client_hash(session_id) % c->n);
}

int sr_client_conn_new(sr_client_conn **out, const sr_client *c, sr_err *err)
{
    *out = NULL;
    sr_client_conn *k = calloc(1, sizeof *k);
    if (!k)
        return sr_err_set(err, SR_E_NOMEM, "client: cannot allocate a conn");
    k->c = c;
    k->engine = -1;
    sr_splice_opts so = SR_SPLICE_OPTS_INIT;
    so.max_body = c->opts.max_body;
    so.prefix_without_quote = c->opts.quirks.prefix_without_quote;
    so.strict_base64 = c->opts.strict_base64;
    int rc = sr_splicer_new(&k->splicer, c->fields, &so, err);
    if (rc) {
        sr_splicer_free(k->splicer);
        free(k);
        return rc;
    }
    pthread_mutex_lock(&c->pool->mu);
    c->pool->conns++;
    pthread_mutex_unlock(&c->pool->mu);
    k->req_body.max = c->opts.max_body;
    *out = k;
    return 0;
}

void sr_client_conn_free(sr_client_conn *k)
{
    if (!k)
        return;
    /* Fewer conns, fewer handles: the idle ones past the bound are closed with it. */
    sr_conn_pool *p = k->c->pool;
    pthread_mutex_lock(&p->mu);
    p->conns--;
    CURL *e;
    while (p->handles > p->conns + k->c->n - 1 && (e = steal_idle(p)) != NULL) {
        p->handles--;
        curl_easy_cleanup(e);
    }
    pthread_mutex_unlock(&p->mu);
    sr_splicer_free(k->splicer);
    sr_buf_release(&k->req_body);
    sr_buf_release(&k->body);
    sr_client_exchange_release(&k->cap);
    sr_buf_release(&k->url);
    sr_ids_text_release(&k->ids_text);
    curl_slist_free_all(k->headers);
    cJSON_Delete(k->native_doc);
    free(k->tokens);
    free(k->logprobs);
    free(k->spans);
    free(k->rows);
    free(k->pd_rows);
    if (k->scratch && k->scratch_release)
        k->scratch_release(k->scratch);
    free(k);
}

void *sr_client_conn_scratch(const sr_client_conn *k)
{
    return k->scratch;
}

void sr_client_conn_set_scratch(sr_client_conn *k, void *ptr, void (*release)(void *))
{
    if (k->scratch && k->scratch != ptr && k->scratch_release)
        k->scratch_release(k->scratch);
    k->scratch = ptr;
    k->scratch_release = release;
}

/* ---- exchange capture ---- */

void sr_client_conn_capture(sr_client_conn *k, size_t cap)
{
    k->capture = cap;
}

void sr_client_conn_take_exchange(sr_client_conn *k, sr_client_exchange *x)
{
    /* The request body is the buffer the next request is built in: swapped, never copied. */
    size_t max = k->req_body.max;
    sr_buf req = k->req_body;
    k->req_body = x->request;
    sr_buf_reset(&k->req_body);
    k->req_body.max = max;
    sr_client_exchange old = *x;
    *x = k->cap;
    x->request = req;
    k->cap = old;
    k->cap.request = (sr_buf)SR_BUF_INIT;
    sr_buf_reset(&k->cap.response);
    sr_buf_reset(&k->cap.headers);
    k->cap.response_bytes = 0;
}

void sr_client_exchange_release(sr_client_exchange *x)
{
    sr_buf_release(&x->request);
    sr_buf_release(&x->response);
    sr_buf_release(&x->headers);
    x->response_bytes = 0;
}

/* ---- the process ---- */

int sr_client_global_init(sr_err *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return sr_err_set(err, SR_E_INTERNAL, "client: curl_global_init failed");
    return 0;
}

void sr_client_global_cleanup(void)
{
    curl_global_cleanup();
}
