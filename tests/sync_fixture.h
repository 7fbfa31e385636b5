/*
 * Fixtures of the weight-sync suites: real engine processes (client_fixture.h), a temporary sync
 * directory, an orchestrator over the engines, and readers of the engines' state documents.
 */
#ifndef SR_SYNC_FIXTURE_H
#define SR_SYNC_FIXTURE_H

#include <ftw.h>
#include <stdio.h>

#include "client_fixture.h"
#include "sync/sync.h"

#define SYNC_MODEL                                                                                 \
    "\"seed\":7,\"model\":{\"vocab\":64,\"layers\":4,\"experts\":8,\"topk\":2,\"eos_id\":2,"       \
    "\"eos_rate\":0},\"weights\":{\"total_bytes\":1048576,\"expert_tensors\":2},"                  \
    "\"server\":{\"threads\":4}"
#define SYNC_CFG           "{" SYNC_MODEL "}"
#define SYNC_CFG_FAULTS(f) "{" SYNC_MODEL ",\"faults\":[" f "]}"

typedef struct sfx {
    fx f;
    fx_model m;
    char dir[64];
    sr_sync *s;
    sr_sync_result r;
} sfx;

static inline int sfx_rm(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* The engine config `json` (shape 1) with server.sync_dirs set to [dir] (free()). */
static inline char *sfx_config_for(const char *json, const char *dir)
{
    cJSON *d = cJSON_Parse(json);
    ck_assert_ptr_nonnull(d);
    cJSON *sv = cJSON_GetObjectItemCaseSensitive(d, "server");
    if (!sv)
        sv = cJSON_AddObjectToObject(d, "server");
    cJSON_DeleteItemFromObjectCaseSensitive(sv, "sync_dirs");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(sv, "sync_dirs"), cJSON_CreateString(dir));
    char *out = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    ck_assert_ptr_nonnull(out);
    return out;
}

/* n engines of config `json`, which may write only under the fixture's temporary sync folder
 * (server.sync_dirs is set to it), and an orchestrator with `opts` (NULL: defaults) over them. */
static inline void sfx_start(sfx *x, size_t n, const char *json, sr_sync_transport t,
                             const sr_sync_opts *opts)
{
    memset(x, 0, sizeof(*x));
    snprintf(x->dir, sizeof(x->dir), "/tmp/sr-sync-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(x->dir));
    char *cfg = sfx_config_for(json, x->dir);
    fx_start(&x->f, n, cfg, NULL);
    fx_model_load(&x->m, cfg);
    cJSON_free(cfg);
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    if (opts)
        o = *opts;
    o.transport = t;
    o.sync_dir = x->dir;
    o.fsync = 0;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_sync_new(&x->s, x->f.urls, n, &x->m.spec, &o, &e), e);
}

static inline void sfx_stop(sfx *x)
{
    sr_sync_free(x->s);
    fx_stop(&x->f);
    fx_model_free(&x->m);
    nftw(x->dir, sfx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs a sync to `target` with content `content`; asserts it ran (checks are in x->r). */
static inline void sfx_sync(sfx *x, int64_t target, int64_t content)
{
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_sync_run(&x->r, x->s, target, content, &e), e);
    /* SR_SYNC_TEST_VERBOSE=1 prints every finding and the phase times, to read them. */
    if (getenv("SR_SYNC_TEST_VERBOSE")) {
        for (size_t i = 0; i < x->r.n_checks; i++)
            fprintf(stderr, "  check %s: %s\n", x->r.checks[i].name, x->r.checks[i].message);
        for (int p = 0; p < SR_SYNC_PHASE_COUNT; p++)
            if (x->r.phase_ran[p])
                fprintf(stderr, "  %s=%.3fms", sr_sync_phase_name(p), x->r.phase_ns[p] / 1e6);
        fprintf(stderr, "\n");
    }
}

/* The first check called `name`, or NULL. */
static inline const sr_check *sfx_check(const sfx *x, const char *name)
{
    for (size_t i = 0; i < x->r.n_checks; i++)
        if (strcmp(x->r.checks[i].name, name) == 0)
            return &x->r.checks[i];
    return NULL;
}

/* Asserts the last sync completed, verified and fired nothing. */
static inline void sfx_assert_clean(const sfx *x)
{
    ck_assert_msg(x->r.n_checks == 0, "unexpected check %s: %s",
                  x->r.n_checks ? x->r.checks[0].name : "",
                  x->r.n_checks ? x->r.checks[0].message : "");
    ck_assert(x->r.completed);
    ck_assert(x->r.verified);
    ck_assert_int_eq(x->r.version, x->r.target_version);
}

/* Engine i's state document (cJSON_Delete it). */
static inline cJSON *sfx_state(sfx *x, int i)
{
    sr_client_reply r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_control(&r, 1, x->f.client, i, "GET", "/syncroll/v1/state", NULL, &e),
                    e);
    cJSON *d = r.body;
    r.body = NULL;
    sr_client_reply_release(&r);
    return d;
}

/* A number at dotted path "a.b" of engine i's state. */
static inline double sfx_state_num(sfx *x, int i, const char *a, const char *b)
{
    cJSON *d = sfx_state(x, i);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    ck_assert_msg(cJSON_IsNumber(v) || cJSON_IsBool(v), "state has no %s.%s", a, b ? b : "");
    double n = cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? 1 : 0) : v->valuedouble;
    cJSON_Delete(d);
    return n;
}

/* Asserts engine i serves a generate now (the engine keeps serving through failures). */
static inline void sfx_assert_serves(sfx *x, int i)
{
    sr_client_reply r;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_client_control(&r, 1, x->f.client, i, "POST", "/skyrl/v1/generate",
                                      "{\"token_ids\":[1,2,3],\"sampling_params\":"
                                      "{\"max_tokens\":2}}",
                                      &e),
                    e);
    ck_assert_int_eq(r.http_status, 200);
    sr_client_reply_release(&r);
    ck_assert_int_eq((int)sfx_state_num(x, i, "paused", NULL), 0);
}

/* Engine i's fingerprints equal those of content version v (independently of the trainer). */
static inline void sfx_assert_fps(sfx *x, int i, int64_t v)
{
    uint64_t g, layers[SR_ORACLE_MAX_LAYERS];
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_weights_expected(&g, layers, &x->m.spec, v, &e), e);
    char want[40];
    snprintf(want, sizeof(want), "%016llx", (unsigned long long)g);
    cJSON *d = sfx_state(x, i);
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(d, "fingerprints");
    const cJSON *gl = cJSON_GetObjectItemCaseSensitive(fp, "global");
    ck_assert_msg(cJSON_IsString(gl) && strcmp(gl->valuestring, want) == 0,
                  "engine %d global fingerprint is not version %lld's", i, (long long)v);
    for (int l = 0; l < x->m.cfg.num_layers; l++) {
        snprintf(want, sizeof(want), "%016llx", (unsigned long long)layers[l]);
        const cJSON *x1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(fp, "layers"), l);
        ck_assert_msg(strcmp(x1->valuestring, want) == 0,
                      "engine %d layer %d fingerprint is not version %lld's", i, l, (long long)v);
    }
    cJSON_Delete(d);
}

static inline int sfx_pool(int cap)
{
    int w;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_pool_workers(&w, cap, 0, SR_POOL_DETECT_CORES, NULL, &e), e);
    return w;
}

#endif /* SR_SYNC_FIXTURE_H */
