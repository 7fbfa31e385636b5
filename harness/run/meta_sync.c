/* The relations that need a weight sync (meta_priv.h): three syncs, to the model's own weights
 * (a known start), to perturbed ones and back, each followed by a version read and requests
 * whose rows must have moved (or come back) exactly where the weights did. */
#include <stdio.h>
#include <string.h>

#include "meta_priv.h"
#include "sr_oracle.h"

#define SALT_CAP 96

/* meta.version_monotonic and the version half of meta.sync_effect after a sync to `target`. */
static void versions(sr_meta_ctx *x, int64_t held, int64_t target, int64_t got, const char *when)
{
    if (got < 0) {
        sr_meta_fail(x, "meta.sync_effect", -1, -1,
                     "%s: the engine reports no weight version (GET %s)", when,
                     sr_meta_version_path(x->o->plane));
        return;
    }
    if (held >= 0 && got < held)
        sr_meta_fail(x, "meta.version_monotonic", -1, -1,
                     "%s: the weight version went back from %lld to %lld", when, (long long)held,
                     (long long)got);
    if (got > x->held)
        x->held = got;
    if ((held < 0 || got >= held) && got != target)
        sr_meta_fail(x, "meta.sync_effect", -1, -1,
                     "%s: the engine reports version %lld, the sync published %lld", when,
                     (long long)got, (long long)target);
}

/* meta.version_monotonic between syncs: nothing but a sync may move the version, so before one
 * it is still the highest the engine reported (a restart that loses the weights takes it back). */
static void still_held(sr_meta_ctx *x, const char *when)
{
    int64_t v = sr_meta_read_version(x->c, x->o->plane, x->o->content, -1);
    if (x->held >= 0 && v >= 0 && v < x->held)
        sr_meta_fail(x, "meta.version_monotonic", -1, -1,
                     "before %s, with no sync since it reported %lld, the engine reports version "
                     "%lld",
                     when, (long long)x->held, (long long)v);
    if (v > x->held)
        x->held = v;
}

/* One sync; 1 when it completed, else the failure is recorded and 0 returned. */
static int sync_to(sr_meta_ctx *x, int64_t target, int64_t content, const char *when, sr_err *err,
                   int *rc)
{
    still_held(x, when);
    sr_sync_result res;
    *rc = sr_sync_run(&res, x->o->sync, target, content, err);
    x->st->syncs++;
    if (*rc)
        return 0;
    x->synced |= res.completed;
    if (!res.completed) {
        sr_meta_fail(x, "meta.sync_effect", -1, -1, "%s: the sync to version %lld failed: %s%s%s",
                     when, (long long)target, res.n_checks ? res.checks[0].name : "",
                     res.n_checks ? ": " : "", res.n_checks ? res.checks[0].message : "");
        return 0;
    }
    /* Where the plane has a weight checker, the engine's own word on what it holds must agree
     * with what was sent; the relations below still judge the routes. */
    size_t before = res.n_checks;
    *rc = sr_sync_check_weights(&res, x->o->sync, NULL, err);
    if (!*rc && res.n_checks > before)
        sr_meta_fail(x, "meta.sync_effect", -1, -1,
                     "%s: the engine's weight checker disagrees: %s: %s", when,
                     res.checks[before].name, res.checks[before].message);
    return !*rc;
}

/* meta.sync_effect on the rows: on every layer whose weights the sync changed, most of the
 * prompt's rows moved (a router whose weights changed keeps almost no row; a layer that kept
 * them all did not apply the update). Other layers may move too (a real model's hidden state
 * flows through them), so they are not judged. */
static void moved(sr_meta_ctx *x, const sr_meta_resp *a, const sr_meta_resp *b, const uint64_t *fp0,
                  const uint64_t *fp1, int L)
{
    if (sr_meta_route_space(x, a, 1, SR_META_LAYER_FLOOR) < SR_META_LAYER_FLOOR)
        return; /* a layer's row takes so few values that many stay by chance (meta_priv.h) */
    for (int l = 0; l < L && l < a->L; l++) {
        if (fp0[l] == fp1[l])
            continue;
        int64_t same = 0, n = 0;
        for (int64_t p = 0; p < (int64_t)a->P; p++) {
            const int32_t *ra = sr_meta_row(a, p, l), *rb = sr_meta_row(b, p, l);
            if (!ra || !rb)
                continue;
            n++;
            same += memcmp(ra, rb, (size_t)a->K * sizeof(int32_t)) == 0;
        }
        if (n && same * 2 > n) {
            sr_meta_fail(x, "meta.sync_effect", -1, l,
                         "layer %d's weights changed in the sync, yet %lld of the prompt's %lld "
                         "rows there are the ones from before it",
                         l, (long long)same, (long long)n);
            return;
        }
    }
}

/* The next turn of `from` (its prompt and output, then a user's), sent with `salt` (a cache hit
 * allowed): relation `name` holds when its rows over [0, end) are ref's. */
static int next_turn_rows(sr_meta_ctx *x, const char *name, const sr_meta_resp *from,
                          const sr_meta_resp *ref, int64_t end, const char *salt, const char *what,
                          const char *span, sr_err *err)
{
    if (!sr_meta_afford(x, name, 1))
        return 0;
    int32_t p[SR_META_MAX_PROMPT];
    size_t n = sr_meta_next_turn(x, p, from);
    sr_meta_resp t;
    int rc = sr_meta_ask(x, &t, p, n, 0, salt, 1, name, err);
    if (!rc && !t.code) {
        sr_meta_check_resp(x, &t, what);
        sr_meta_same_span(x, name, ref, &t, 0, end, span);
    }
    sr_meta_resp_free(&t);
    return rc;
}

/* meta.cache_after_sync: a prompt holding a post-sync output (sent with the pre-sync salt, so a
 * cached prefix would be found) gets the rows that output was computed with. */
static int cache(sr_meta_ctx *x, const sr_meta_resp *a1, const char *salt, sr_err *err)
{
    return next_turn_rows(x, "meta.cache_after_sync", a1, a1, (int64_t)(a1->P + a1->G) - 1, salt,
                          "after the sync, the output as a prompt",
                          "after the sync, a prompt holding a post-sync output", err);
}

/* meta.multiturn_prefix across a sync: turn 2 of the conversation whose turn 1 (b0) ran before
 * sync 2, sent with turn 1's salt (so its prefix may come from the cache), re-routes turn 1's
 * prompt with the new weights: its rows there are a1's (that prompt after the sync, cold), so
 * they differ from turn 1's wherever the new weights route otherwise. */
static int turn_after_sync(sr_meta_ctx *x, const sr_meta_resp *b0, const sr_meta_resp *a1,
                           const char *salt0, sr_err *err)
{
    return next_turn_rows(x, "meta.multiturn_prefix", b0, a1, (int64_t)b0->P, salt0,
                          "after sync 2, turn 2 of a turn 1 from before it",
                          "after sync 2, turn 1's prompt in turn 2 (re-routed with the new "
                          "weights, as that prompt alone is)",
                          err);
}

/* After the sync back: the base again, warm, must be the base exactly. */
static int back(sr_meta_ctx *x, const sr_meta_resp *base, const char *salt, sr_err *err)
{
    if (!sr_meta_afford(x, "meta.prefix_consistency", 1))
        return 0;
    sr_meta_resp b;
    int rc = sr_meta_ask(x, &b, base->prompt, base->P, 0, salt, 1, "meta.sync_effect", err);
    if (!rc && !b.code) {
        sr_meta_check_resp(x, &b, "after the sync back");
        if (!sr_meta_same_span(x, "meta.prefix_consistency", base, &b, 0, (int64_t)base->P,
                               "the prompt after a sync back to the same weights"))
            sr_meta_same_span(x, "meta.sync_effect", base, &b, (int64_t)base->P,
                              (int64_t)(base->P + base->G) - 1,
                              "the output after a sync back to the same weights");
    }
    sr_meta_resp_free(&b);
    return rc;
}

static int skip_all(sr_meta_ctx *x, const char *why)
{
    static const char *const need[] = {"meta.sync_effect", "meta.cache_after_sync",
                                       "meta.version_monotonic"};
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
        int j = sr_meta_index(need[i]);
        if (!(x->failed & (1u << j)) && !(x->skipped & (1u << j))) {
            x->skipped |= 1u << j;
            sr_result_skip_check(x->sc, need[i], why);
        }
    }
    return 0;
}

/* Sync 2 (perturbed weights: the model's content + 1), then its relations against b0, the
 * base under the model's own weights; returns 0 or a harness error. */
static int perturbed(sr_meta_ctx *x, const sr_meta_resp *b0, const char *salt0, int64_t v,
                     sr_err *err)
{
    const sr_weights *w = sr_sync_weights(x->o->sync);
    int L = b0->L;
    uint64_t fp0[SR_ORACLE_MAX_LAYERS], fp1[SR_ORACLE_MAX_LAYERS];
    if (L > SR_ORACLE_MAX_LAYERS)
        return skip_all(x, "more MoE layers than a weight set holds");
    sr_weights_fingerprints(NULL, fp0, w);
    int rc = 0;
    if (!sync_to(x, v + 1, x->o->content + 1, "sync 2 (perturbed weights)", err, &rc))
        return rc;
    sr_weights_fingerprints(NULL, fp1, w);
    char cold[SALT_CAP];
    sr_meta_resp a1;
    rc = sr_meta_ask(x, &a1, b0->prompt, b0->P, 0, sr_meta_salt(x, cold, sizeof cold), 0,
                     "meta.sync_effect", err);
    if (!rc && !a1.code) {
        sr_meta_check_resp(x, &a1, "after sync 2, the base cold");
        versions(x, v, v + 1, sr_meta_read_version(x->c, x->o->plane, x->o->content, a1.version),
                 "after sync 2");
        moved(x, b0, &a1, fp0, fp1, L);
        rc = cache(x, &a1, salt0, err);
        if (!rc)
            rc = turn_after_sync(x, b0, &a1, salt0, err);
    }
    sr_meta_resp_free(&a1);
    return rc;
}

/* Sync 1 to the model's own weights, so the weights the relations start from are known (and
 * the engine is left on them at the end); *b0 the base prompt under them, with salt0. */
static int own(sr_meta_ctx *x, const sr_meta_resp *base, sr_meta_resp *b0, char *salt0, int64_t v0,
               sr_err *err)
{
    int rc = 0;
    memset(b0, 0, sizeof *b0);
    b0->code = -1; /* no answer yet */
    if (!sync_to(x, v0 + 1, x->o->content, "sync 1 (the model's own weights)", err, &rc))
        return rc;
    versions(x, v0, v0 + 1, sr_meta_read_version(x->c, x->o->plane, x->o->content, -1),
             "after sync 1");
    return sr_meta_ask(x, b0, base->prompt, base->P, 0, sr_meta_salt(x, salt0, SALT_CAP), 0,
                       "meta.sync_effect", err);
}

/* SGLang's plane keeps its update group until it is destroyed, and refuses a second
 * init_weights_update_group: the probe leaves the engine without one, as it found it, so the
 * next trainer (or probe) can sync. Best effort: a failure here judges nothing. */
static void leave(sr_meta_ctx *x)
{
    if (x->o->plane != SR_SYNC_DIALECT_SGLANG || !x->st->syncs)
        return;
    sr_client_reply r;
    memset(&r, 0, sizeof r);
    sr_err e = SR_ERR_INIT;
    sr_client_control(&r, 1, x->c, 0, "POST", "/destroy_weights_update_group", "{}", &e);
    sr_client_reply_release(&r);
}

int sr_meta_sync_relations(sr_meta_ctx *x, const sr_meta_resp *base, sr_err *err)
{
    if (!x->o->sync)
        return skip_all(x, x->o->no_sync ? x->o->no_sync : "no weight-sync control plane");
    if (!sr_meta_afford(x, "meta.sync_effect", 4))
        return skip_all(x, "the budget or duration does not cover the 4 requests around the syncs");
    int64_t v0 = sr_meta_read_version(x->c, x->o->plane, x->o->content, base->version);
    if (v0 < 0)
        return skip_all(x, "the engine reports no weight version to sync from");
    sr_meta_resp b0;
    char salt0[SALT_CAP];
    int rc = own(x, base, &b0, salt0, v0, err);
    if (!rc && !b0.code && !(x->failed & (1u << sr_meta_index("meta.sync_effect")))) {
        sr_meta_check_resp(x, &b0, "after sync 1, the base");
        rc = perturbed(x, &b0, salt0, v0 + 1, err);
        if (!rc && !(x->failed & (1u << sr_meta_index("meta.sync_effect"))) &&
            sync_to(x, v0 + 3, x->o->content, "sync 3 (back to the model's own weights)", err,
                    &rc)) {
            versions(x, v0 + 2, v0 + 3, sr_meta_read_version(x->c, x->o->plane, x->o->content, -1),
                     "after sync 3");
            rc = back(x, &b0, salt0, err);
        }
    }
    sr_meta_resp_free(&b0);
    leave(x);
    return rc;
}
