/*
 * Fixtures of the client and rollout suites: real mock-engine processes (`syncroll engine` on
 * port 0, spawned with harness/run/procs.h, readiness from the pipe), a client over them, the
 * engines' request counters (/syncroll/v1/state), and the routing oracle of the same config so a
 * test can recompute every route row.
 */
#ifndef SR_CLIENT_FIXTURE_H
#define SR_CLIENT_FIXTURE_H

#include <check.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "spec/engine_config.h"
#include "run/procs.h"
#include "sr_oracle.h"
#include "sr_test.h"
#include "sr_weights.h"

#define FX_MAX_ENGINES 4

typedef struct fx {
    size_t n;
    sr_proc procs[FX_MAX_ENGINES];
    char url_buf[FX_MAX_ENGINES][SR_PROC_LINE_MAX + 32];
    const char *urls[FX_MAX_ENGINES];
    char cfg_path[64];
    sr_client *client;
    sr_client_conn *conn;
} fx;

/* The syncroll executable of this build: <build>/tests/test_x -> <build>/harness/syncroll. */
static void fx_syncroll_path(char *out, size_t cap)
{
    char self[4096];
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_proc_self_exe(self, sizeof self, &e), e);
    char *d = dirname(dirname(self));
    snprintf(out, cap, "%s/harness/syncroll", d);
}

/* Starts n engines sharing `json` (each with --index i) and a client with `opts` (may be NULL). */
static void fx_start(fx *f, size_t n, const char *json, const sr_client_opts *opts)
{
    memset(f, 0, sizeof *f);
    ck_assert(n >= 1 && n <= FX_MAX_ENGINES);
    f->n = n;
    snprintf(f->cfg_path, sizeof f->cfg_path, "/tmp/syncroll-client-XXXXXX");
    int fd = mkstemp(f->cfg_path);
    ck_assert_int_ge(fd, 0);
    size_t len = strlen(json);
    ck_assert_int_eq((long)write(fd, json, len), (long)len);
    close(fd);
    char exe[4200];
    fx_syncroll_path(exe, sizeof exe);
    sr_err e = SR_ERR_INIT;
    for (size_t i = 0; i < n; i++) {
        char idx[8];
        snprintf(idx, sizeof idx, "%zu", i);
        char *argv[] = {"syncroll",   "engine", "--config", f->cfg_path,  "--index",
                        idx,          "--port", "0",        "--ready-fd", "3",
                        "--lifetime", "120",    NULL};
        f->procs[i] = (sr_proc)SR_PROC_INIT;
        ck_assert_sr_ok(sr_proc_spawn(&f->procs[i], exe, argv, &e), e);
    }
    ck_assert_sr_ok(sr_procs_wait_ready(f->procs, n, 10000, &e), e);
    for (size_t i = 0; i < n; i++) {
        snprintf(f->url_buf[i], sizeof f->url_buf[i], "http://127.0.0.1:%s", f->procs[i].line);
        f->urls[i] = f->url_buf[i];
    }
    ck_assert_sr_ok(sr_client_new(&f->client, f->urls, n, NULL, opts, &e), e);
    ck_assert_sr_ok(sr_client_conn_new(&f->conn, f->client, &e), e);
}

static void fx_stop(fx *f)
{
    sr_client_conn_free(f->conn);
    sr_client_free(f->client);
    sr_procs_stop(f->procs, f->n, 3000);
    unlink(f->cfg_path);
}

/* requests.<endpoint> of engine i's state document. */
static inline int64_t fx_count(fx *f, int engine, const char *endpoint)
{
    sr_client_reply r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(
        sr_client_control(&r, 1, f->client, engine, "GET", "/syncroll/v1/state", NULL, &e), e);
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(r.body, "requests");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, endpoint);
    ck_assert_msg(cJSON_IsNumber(v), "state has no requests.%s", endpoint);
    int64_t n = (int64_t)v->valuedouble;
    sr_client_reply_release(&r);
    return n;
}

/* The oracle and weight spec of a config document (engine 0's view). */
typedef struct fx_model {
    sr_engine_config cfg;
    sr_oracle *oracle;
    sr_weights_spec spec;
} fx_model;

static inline void fx_model_load(fx_model *m, const char *json)
{
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&m->cfg, json, strlen(json), "test", 0, &e), e);
    sr_oracle_model om = sr_engine_config_model(&m->cfg);
    ck_assert_sr_ok(sr_oracle_new(&m->oracle, &om, &e), e);
    m->spec = sr_engine_config_weights(&m->cfg);
}

static inline void fx_model_free(fx_model *m)
{
    sr_oracle_free(m->oracle);
    sr_engine_config_release(&m->cfg);
}

/*
 * Route rows [0, rows) of tokens[0..n) at weight version v, in `dtype`, into a new buffer
 * (free()).
 */
static inline void *fx_oracle_rows(fx_model *m, int64_t v, const int32_t *tokens, size_t n,
                                   size_t rows, sr_dtype dtype)
{
    sr_err e = SR_ERR_INIT;
    uint64_t global, fps[SR_ORACLE_MAX_LAYERS];
    ck_assert_sr_ok(sr_weights_expected(&global, fps, &m->spec, v, &e), e);
    size_t row_bytes = (size_t)m->cfg.num_layers * (size_t)m->cfg.topk * sr_dtype_size(dtype);
    void *out = malloc(rows * row_bytes + 1);
    ck_assert_ptr_nonnull(out);
    ck_assert_sr_ok(sr_oracle_routes(out, rows * row_bytes + 1, NULL, dtype, m->oracle, fps, tokens,
                                     n, 0, rows, &e),
                    e);
    return out;
}

#endif /* SR_CLIENT_FIXTURE_H */
