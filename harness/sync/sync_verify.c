/* Verification after a sync: every engine's version and fingerprints against the published ones
 * (sync.h, "Verification"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sync_priv.h"

#define NAMES_LISTED 2 /* tensors named per layer in a message; the rest are counted */

static int hex64(uint64_t *out, const cJSON *x)
{
    if (!cJSON_IsString(x) || strlen(x->valuestring) != 16)
        return -1;
    char *end;
    *out = strtoull(x->valuestring, &end, 16);
    return *end ? -1 : 0;
}

static int64_t num(const cJSON *o, const char *key, int64_t dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? (int64_t)x->valuedouble : dflt;
}

/* What an engine's state document says. */
typedef struct seen {
    int64_t version;
    uint64_t global;
    uint64_t *layers;
} seen;

static int parse_state(seen *sn, sr_sync_engine_result *er, const cJSON *d, int L)
{
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(d, "fingerprints");
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(fp, "layers");
    const cJSON *ap = cJSON_GetObjectItemCaseSensitive(d, "apply");
    sn->version = num(d, "weight_version", -1);
    er->version = sn->version;
    er->apply_payloads = num(ap, "payloads", -1);
    er->apply_workers = (int)num(ap, "workers", -1);
    er->apply_threads = (int)num(ap, "threads", -1);
    er->apply_max_workers = (int)num(ap, "max_workers", -1);
    er->engine_publish_pool = (int)num(ap, "publish_workers", -1);
    if (hex64(&sn->global, cJSON_GetObjectItemCaseSensitive(fp, "global")) ||
        cJSON_GetArraySize(ls) != L)
        return -1;
    const cJSON *x = ls->child;
    for (int l = 0; l < L; l++, x = x->next)
        if (hex64(&sn->layers[l], x))
            return -1;
    return 0;
}

static int same_fps(const seen *sn, uint64_t g, const uint64_t *layers, int L)
{
    return sn->global == g && memcmp(sn->layers, layers, (size_t)L * sizeof(uint64_t)) == 0;
}

/*
 * Appends the tensors whose digest on engine i differs from the trainer's: at most NAMES_LISTED
 * per layer (so every stale layer shows up), then the total.
 */
static void tensor_list(sr_sync *s, int i, char *out, size_t cap, sr_err *err)
{
    sr_fanout_req r;
    memset(&r, 0, sizeof(r));
    r.engine = i;
    r.get = 1;
    r.path = "/syncroll/v1/state?tensors=1";
    int64_t budget;
    double end = sync_phase_end(s, SR_SYNC_VERIFY, &budget);
    int L = sr_weights_spec_of(s->w)->num_layers;
    size_t len = strlen(out), listed = 0, differ = 0;
    int *per = calloc((size_t)L + 1, sizeof(int));
    cJSON *d = NULL;
    if (per && !sr_fanout_run(s->fan, &r, 1, 1, end, budget, err) && !r.code)
        d = cJSON_ParseWithLength(r.resp.data, r.resp.len);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(d, "tensors"), *t;
    cJSON_ArrayForEach(t, ts)
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(t, "name");
        const cJSON *dg = cJSON_GetObjectItemCaseSensitive(t, "digest");
        size_t idx;
        sr_weights_info w;
        char want[33];
        if (!cJSON_IsString(nm) || !cJSON_IsString(dg) ||
            sr_weights_find(&idx, s->w, nm->valuestring, NULL) ||
            sr_weights_tensor(&w, s->w, idx, NULL))
            continue;
        snprintf(want, sizeof(want), "%016llx%016llx", (unsigned long long)w.digest_hi,
                 (unsigned long long)w.digest_lo);
        if (strcmp(want, dg->valuestring) == 0)
            continue;
        differ++;
        int slot = w.layer >= 0 && w.layer < L ? w.layer : L;
        if (per[slot]++ < NAMES_LISTED && len + strlen(nm->valuestring) + 40 < cap) {
            len +=
                (size_t)snprintf(out + len, cap - len, "%s%s", listed ? ", " : "", nm->valuestring);
            listed++;
        }
    }
    if (!d && len < cap)
        snprintf(out + len, cap - len, "(tensor digests unavailable: %.200s)", r.msg);
    else if (len < cap)
        snprintf(out + len, cap - len, "%s(%zu tensors differ)", listed ? " " : "", differ);
    free(per);
    cJSON_Delete(d);
    sr_buf_release(&r.resp);
}

/* sync.partial_update for engine i, naming the layers and tensors that differ from `want`. */
static void report_partial(sr_sync *s, sr_sync_result *res, int i, const seen *sn, uint64_t want_g,
                           const uint64_t *want_l, int64_t target, sr_err *err)
{
    const sr_weights_spec *sp = sr_weights_spec_of(s->w);
    char layers[160] = "", tensors[300] = "";
    size_t len = 0;
    int first = -1, nl = 0;
    for (int l = 0; l < sp->num_layers; l++) {
        if (sn->layers[l] == want_l[l])
            continue;
        if (first < 0)
            first = l;
        if (len < sizeof(layers))
            len += (size_t)snprintf(layers + len, sizeof(layers) - len, "%s%d (layers.%d)",
                                    nl ? ", " : "", l, (int)sp->layer_indices[l]);
        nl++;
    }
    if (sn->global != want_g && len < sizeof(layers))
        snprintf(layers + len, sizeof(layers) - len, "%sthe global tensors", nl ? " and " : "");
    tensor_list(s, i, tensors, sizeof(tensors), err);
    sync_check(res, SR_E_SYNC_PARTIAL, i, first,
               "engine %d (%s) holds bytes that differ from version %lld at MoE layer slot%s %s; "
               "tensors: %s",
               i, sr_fanout_url(s->fan, i), (long long)target, nl == 1 ? "" : "s",
               layers[0] ? layers : "(none)", tensors);
}

static int judge(sr_sync *s, sr_sync_result *res, int i, const seen *sn, int64_t target,
                 uint64_t new_g, const uint64_t *new_l, sr_err *err)
{
    int L = sr_weights_spec_of(s->w)->num_layers;
    int is_new = same_fps(sn, new_g, new_l, L);
    const uint64_t *kf = &s->known_fp[(size_t)i * (size_t)(L + 1)];
    int is_old = same_fps(sn, kf[L], kf, L);
    int64_t old_v = s->known_version[i];
    const char *whose = is_new   ? "those of the new version"
                        : is_old ? "the old version's"
                                 : "of neither version";
    if (res->completed) {
        if (sn->version != target)
            sync_check(res, SR_E_SYNC_VERSION_SKEW, i, -1,
                       "engine %d (%s) reports weight version %lld after the sync to version "
                       "%lld (its fingerprints are %s)",
                       i, sr_fanout_url(s->fan, i), (long long)sn->version, (long long)target,
                       whose);
        if (!is_new)
            report_partial(s, res, i, sn, new_g, new_l, target, err);
        return sn->version == target && is_new;
    }
    if ((is_new && sn->version == target) || (is_old && sn->version == old_v))
        return 1;
    if (is_new || is_old)
        sync_check(res, SR_E_SYNC_VERSION_SKEW, i, -1,
                   "after the failed sync to version %lld engine %d (%s) reports version %lld but "
                   "holds %s bytes",
                   (long long)target, i, sr_fanout_url(s->fan, i), (long long)sn->version,
                   is_new ? "the new" : "the old");
    else
        report_partial(s, res, i, sn, new_g, new_l, target, err);
    /* Neither state, and a version the engine was never sent: its counter moved by itself (an
     * engine restarted on its initial checkpoint reports that checkpoint's version). */
    if (!is_new && !is_old && sn->version != old_v && sn->version != target)
        sync_check(res, SR_E_SYNC_VERSION_SKEW, i, -1,
                   "after the failed sync to version %lld engine %d (%s) reports version %lld, "
                   "neither the %lld it held nor the target",
                   (long long)target, i, sr_fanout_url(s->fan, i), (long long)sn->version,
                   (long long)old_v);
    return 0;
}

/* What a look at every engine's state needs: the trainer's fingerprints now, room for an
 * engine's, and the GET requests, sent with `phase`'s deadline. Returns the fan-out's code; the
 * caller releases with states_done (also after an error). */
typedef struct states {
    int L;
    uint64_t g, *l;
    seen sn;
    sr_fanout_req reqs[SR_CLIENT_MAX_ENGINES];
} states;

static int states_fetch(states *t, sr_sync *s, sr_sync_phase phase, sr_err *err)
{
    memset(t, 0, sizeof(*t));
    t->L = sr_weights_spec_of(s->w)->num_layers;
    t->l = calloc((size_t)t->L, sizeof(uint64_t));
    t->sn.layers = calloc((size_t)t->L, sizeof(uint64_t));
    if (!t->l || !t->sn.layers)
        return sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate fingerprints");
    sr_weights_fingerprints(&t->g, t->l, s->w);
    for (size_t i = 0; i < s->n; i++) {
        t->reqs[i].engine = (int)i;
        t->reqs[i].get = 1;
        t->reqs[i].path = "/syncroll/v1/state";
    }
    int64_t budget;
    double end = sync_phase_end(s, phase, &budget);
    return sr_fanout_run(s->fan, t->reqs, s->n, 1, end, budget, err);
}

static void states_done(states *t, size_t n)
{
    sr_fanout_reqs_release(t->reqs, n);
    free(t->l);
    free(t->sn.layers);
}

int sync_verify(sr_sync *s, sr_sync_result *res, int64_t target, sr_err *err)
{
    states t;
    int rc = states_fetch(&t, s, SR_SYNC_VERIFY, err);
    if (!t.l || !t.sn.layers) {
        states_done(&t, s->n);
        return rc;
    }
    int L = t.L;
    uint64_t new_g = t.g, *new_l = t.l;
    seen sn = t.sn;
    sr_fanout_req *reqs = t.reqs;
    for (size_t i = 0; !rc && i < s->n; i++) {
        sr_sync_engine_result *er = &res->engines[i];
        cJSON *d = reqs[i].code ? NULL : cJSON_ParseWithLength(reqs[i].resp.data, reqs[i].resp.len);
        if (reqs[i].code || parse_state(&sn, er, d, L)) {
            sync_check(res, reqs[i].code ? sync_code(&reqs[i]) : SR_E_SYNC_FAILED, (int)i, -1,
                       "engine %zu (%s): GET /syncroll/v1/state (phase verify): %s", i,
                       sr_fanout_url(s->fan, i),
                       reqs[i].code ? reqs[i].msg : "the state document has no fingerprints");
            er->ok = 0;
        } else {
            er->ok = judge(s, res, (int)i, &sn, target, new_g, new_l, err);
            uint64_t *kf = &s->known_fp[i * (size_t)(L + 1)];
            s->known_version[i] = sn.version;
            memcpy(kf, sn.layers, (size_t)L * sizeof(uint64_t));
            kf[L] = sn.global;
        }
        cJSON_Delete(d);
    }
    res->verified = !rc;
    for (size_t i = 0; i < s->n; i++)
        res->verified = res->verified && res->engines[i].ok;
    states_done(&t, s->n);
    return rc;
}

int sync_engines_hold(sr_sync *s, int *hold, sr_err *err)
{
    /* A failure to ask is no finding here: the sync then writes and loads as usual. */
    states t;
    sr_err ignored = SR_ERR_INIT;
    int rc = states_fetch(&t, s, SR_SYNC_PUBLISH, &ignored);
    int all = !rc;
    for (size_t i = 0; all && i < s->n; i++) {
        sr_sync_engine_result er;
        const sr_fanout_req *r = &t.reqs[i];
        cJSON *d = r->code ? NULL : cJSON_ParseWithLength(r->resp.data, r->resp.len);
        all = d && !parse_state(&t.sn, &er, d, t.L) && same_fps(&t.sn, t.g, t.l, t.L);
        cJSON_Delete(d);
    }
    *hold = all;
    states_done(&t, s->n);
    return rc == SR_E_NOMEM ? sr_err_set(err, SR_E_NOMEM, "%s", ignored.msg) : 0;
}
