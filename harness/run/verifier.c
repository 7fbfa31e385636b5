/*
 * The rollout verifier's object (verify.h): the oracle, the fingerprints of every weight version
 * it has met, and the recording of one check of a rollout (verify_priv.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_oracle.h"
#include "sr_weights.h"
#include "verify.h"
#include "verify_priv.h"

typedef struct fp_entry {
    int64_t version;
    uint64_t global;
    uint64_t *layers;
} fp_entry;

struct sr_verifier {
    sr_oracle *oracle;
    sr_weights_spec spec;
    int32_t layer_indices[SR_ORACLE_MAX_LAYERS];
    int L, K;
    pthread_mutex_t mu;    /* guards the cache and max_version */
    pthread_mutex_t fp_mu; /* held while a version's fingerprints are computed */
    fp_entry *cache;
    size_t n_cache, cap_cache;
    int64_t max_version;
};

int sr_verifier_new(sr_verifier **out, const sr_engine_config *cfg, sr_err *err)
{
    *out = NULL;
    sr_verifier *v = calloc(1, sizeof(*v));
    if (!v)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the verifier");
    pthread_mutex_init(&v->mu, NULL);
    pthread_mutex_init(&v->fp_mu, NULL);
    sr_oracle_model m = sr_engine_config_model(cfg);
    int rc = sr_oracle_new(&v->oracle, &m, err);
    if (rc) {
        sr_verifier_free(v);
        return rc;
    }
    v->L = cfg->num_layers;
    v->K = cfg->topk;
    memcpy(v->layer_indices, cfg->layer_indices, (size_t)v->L * sizeof(int32_t));
    sr_weights_spec ws = sr_engine_config_weights(cfg);
    ws.layer_indices = v->layer_indices;
    v->spec = ws;
    v->max_version = cfg->weight_version;
    *out = v;
    return 0;
}

void sr_verifier_free(sr_verifier *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n_cache; i++)
        free(v->cache[i].layers);
    free(v->cache);
    sr_oracle_free(v->oracle);
    pthread_mutex_destroy(&v->mu);
    pthread_mutex_destroy(&v->fp_mu);
    free(v);
}

const sr_oracle *sr_verifier_oracle(const sr_verifier *v)
{
    return v->oracle;
}

void sr_verifier_note_version(sr_verifier *v, int64_t version)
{
    pthread_mutex_lock(&v->mu);
    if (version > v->max_version)
        v->max_version = version;
    pthread_mutex_unlock(&v->mu);
}

int64_t sr_verify_max_version(sr_verifier *v)
{
    pthread_mutex_lock(&v->mu);
    int64_t m = v->max_version;
    pthread_mutex_unlock(&v->mu);
    return m;
}

static int fp_cached(sr_verifier *v, int64_t version)
{
    pthread_mutex_lock(&v->mu);
    int found = 0;
    for (size_t i = 0; i < v->n_cache && !found; i++)
        found = v->cache[i].version == version;
    pthread_mutex_unlock(&v->mu);
    return found;
}

/*
 * Makes sure `version` is cached. The computation (a pass over the whole weight set) runs under
 * fp_mu, not mu: readers of cached versions never wait for it, while every thread that needs the
 * same new version waits for the one computing it instead of repeating it (64 rollout threads
 * verifying at once each generated the full weight set, the top of the end-to-end profile:
 * bench/README.md).
 */
static int fp_ensure(sr_verifier *v, int64_t version, sr_err *err)
{
    if (fp_cached(v, version))
        return 0;
    pthread_mutex_lock(&v->fp_mu);
    if (fp_cached(v, version)) {
        pthread_mutex_unlock(&v->fp_mu);
        return 0;
    }
    fp_entry e = {version, 0, malloc((size_t)v->L * sizeof(uint64_t))};
    int rc = e.layers ? sr_weights_expected(&e.global, e.layers, &v->spec, version, err)
                      : sr_err_set(err, SR_E_NOMEM, "cannot allocate fingerprints");
    if (rc) {
        pthread_mutex_unlock(&v->fp_mu);
        free(e.layers);
        return rc;
    }
    pthread_mutex_lock(&v->mu);
    if (v->n_cache == v->cap_cache) {
        size_t cap = v->cap_cache ? v->cap_cache * 2 : 8;
        fp_entry *c = realloc(v->cache, cap * sizeof(*c));
        if (!c) {
            pthread_mutex_unlock(&v->mu);
            pthread_mutex_unlock(&v->fp_mu);
            free(e.layers);
            return sr_err_set(err, SR_E_NOMEM, "cannot grow the fingerprint cache");
        }
        v->cache = c;
        v->cap_cache = cap;
    }
    v->cache[v->n_cache++] = e;
    pthread_mutex_unlock(&v->mu);
    pthread_mutex_unlock(&v->fp_mu);
    return 0;
}

int sr_verifier_fingerprints(uint64_t *global, uint64_t *layers, sr_verifier *v, int64_t version,
                             sr_err *err)
{
    if (version < 0 || version > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_WEIGHTS_SPEC, "weight version %lld is out of range",
                          (long long)version);
    int rc = fp_ensure(v, version, err);
    if (rc)
        return rc;
    /* Copied under the lock: another thread's insert may move the array. */
    pthread_mutex_lock(&v->mu);
    for (size_t i = 0; i < v->n_cache; i++)
        if (v->cache[i].version == version) {
            if (global)
                *global = v->cache[i].global;
            if (layers)
                memcpy(layers, v->cache[i].layers, (size_t)v->L * sizeof(uint64_t));
            break;
        }
    pthread_mutex_unlock(&v->mu);
    return 0;
}

int64_t sr_verify_turn_of(const sr_rollout_result *r, int64_t q)
{
    for (int k = 0; k < r->n_turns; k++)
        if (q < r->turns[k].prompt_len + r->turns[k].generated)
            return k + 1;
    return r->n_turns;
}

/* Row i is computed when token i is an input, i.e. by the first request that holds token
 * position i + 1; a message so names the turn its fault fired on. */
int64_t sr_verify_turn_of_row(const sr_rollout_result *r, int64_t row)
{
    return sr_verify_turn_of(r, row + 1);
}

int64_t sr_verify_row_version(const sr_verify_rv *x, int64_t row)
{
    if (x->r->row_version && row >= 0 && row < x->C)
        return x->r->row_version[row];
    int64_t t = sr_verify_turn_of_row(x->r, row);
    return t > 0 ? x->r->turns[t - 1].weight_version : -1;
}

/* "; in the selection of fault ..." when a route fault of the plan holds the row
 * (sr_fault_plan_locate). Only checks of route rows are matched by row; any other check of a turn
 * names a whole-reply action (truncate, mark_partial, ...) aimed at that turn. */
static void fault_note(const sr_verify_rv *x, char *buf, size_t cap, const char *name, int64_t turn,
                       int64_t row, int64_t layer)
{
    char f[320];
    buf[0] = 0;
    if (!x->ctx->faults || turn < 1 || turn > x->r->n_turns)
        return;
    if (strncmp(name, "trace.row_", 10) != 0 && strncmp(name, "routes.", 7) != 0)
        row = -1;
    const sr_rollout_turn *t = &x->r->turns[turn - 1];
    if (sr_fault_plan_locate(f, sizeof(f), x->ctx->faults, t->engine, turn, row, t->prompt_len,
                             t->start_sent > 0 ? t->start_sent : 0, layer))
        snprintf(buf, cap, "; in the selection of %s", f);
}

int sr_verify_record(sr_verify_rv *x, const char *name, const char *cls, int64_t turn, int64_t row,
                     int64_t layer, const char *detail_in)
{
    char detail[800], note[400];
    fault_note(x, note, sizeof(note), name, turn, row, layer);
    snprintf(detail, sizeof(detail), "%s%s", detail_in, note);
    sr_check_where w = SR_CHECK_WHERE_NONE;
    w.step = x->ctx->step;
    w.sample = x->sample;
    w.turn = turn;
    w.row = row;
    w.layer = layer;
    x->ok = 0;
    char at[96] = "";
    size_t n = 0;
    if (turn >= 0)
        n += (size_t)snprintf(at + n, sizeof(at) - n, " turn %lld", (long long)turn);
    if (row >= 0)
        n += (size_t)snprintf(at + n, sizeof(at) - n, " row %lld", (long long)row);
    if (layer >= 0)
        snprintf(at + n, sizeof(at) - n, " layer %lld", (long long)layer);
    int rc = sr_result_check(x->ctx->res, name, cls, &w, "scenario %s step %s sample %lld%s: %s",
                             x->ctx->scenario, x->ctx->step_name, (long long)x->sample, at, detail);
    if (x->fired && x->fired->n < SR_VERIFY_FIRED_MAX) {
        sr_check *c = &x->fired->c[x->fired->n++];
        memset(c, 0, sizeof(*c));
        snprintf(c->name, sizeof(c->name), "%s", name);
        snprintf(c->classification, sizeof(c->classification), "%s", cls ? cls : "");
        snprintf(c->message, sizeof(c->message), "scenario %s step %s sample %lld%s: %.360s",
                 x->ctx->scenario, x->ctx->step_name, (long long)x->sample, at, detail);
        c->where = w;
    }
    return rc ? sr_err_set(x->err, rc, "cannot record a check") : 0;
}
