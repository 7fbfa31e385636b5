/* Applying a fault plan (faults.h): picking, counters, the state document. */
#include "engine_faults.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "sr_mix.h"

struct sr_faults {
    size_t n;
    uint64_t seed;
    sr_fault f[SR_FAULT_MAX];
    _Atomic int64_t seen[SR_FAULT_MAX];
    _Atomic int64_t fired[SR_FAULT_MAX];
};

int sr_faults_new(sr_faults **out, const sr_fault_plan *plan, uint64_t seed, sr_err *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the engine's faults");
    (*out)->seed = seed;
    (*out)->n = sr_fault_plan_count(plan);
    for (size_t i = 0; i < (*out)->n; i++)
        (*out)->f[i] = *sr_fault_plan_at(plan, i);
    return 0;
}

int sr_faults_parse_text(sr_faults **out, const char *text, size_t len, uint64_t seed, sr_err *err)
{
    sr_fault_plan *p = NULL;
    *out = NULL;
    int rc = sr_fault_plan_parse_text(&p, text, len, err);
    if (!rc)
        rc = sr_faults_new(out, p, seed, err);
    sr_fault_plan_free(p);
    return rc;
}

void sr_faults_free(sr_faults *fs)
{
    free(fs);
}

size_t sr_faults_count(const sr_faults *fs)
{
    return fs ? fs->n : 0;
}

const sr_fault *sr_faults_at(const sr_faults *fs, size_t i)
{
    return fs && i < fs->n ? &fs->f[i] : NULL;
}

/* ---- picking ---- */

/* A uniform double in [0, 1) for draw `stream` of fault i at ordinal n. */
static double unit_draw(uint64_t seed, size_t i, int64_t n, uint64_t stream)
{
    uint64_t z =
        sr_mix64(seed ^ sr_mix64(0x6661756C74000000ULL + i) ^ sr_mix64((uint64_t)n * 4 + stream));
    return (double)(z >> 11) * 0x1.0p-53;
}

static int in_list(const int64_t *l, int n, int64_t v)
{
    for (int i = 0; i < n; i++)
        if (l[i] == v)
            return 1;
    return 0;
}

static double draw_latency(const sr_faults *fs, size_t i, int64_t n)
{
    const sr_fault *f = &fs->f[i];
    switch (f->dist) {
    case SR_LAT_UNIFORM:
        return f->min_ms + (f->max_ms - f->min_ms) * unit_draw(fs->seed, i, n, 1);
    case SR_LAT_LOGNORMAL: {
        /* Box-Muller: u1 in (0, 1] keeps the log finite. */
        double u1 = 1.0 - unit_draw(fs->seed, i, n, 1);
        double u2 = unit_draw(fs->seed, i, n, 2);
        double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        double v = f->median_ms * exp(f->sigma * z);
        return v > SR_FAULT_MAX_MS ? SR_FAULT_MAX_MS : v;
    }
    case SR_LAT_FIXED:
        break;
    }
    return f->ms;
}

/* Takes one firing if the count allows it. */
static int take(_Atomic int64_t *fired, int64_t count)
{
    int64_t cur = atomic_load(fired);
    for (;;) {
        if (count >= 0 && cur >= count)
            return 0;
        if (atomic_compare_exchange_weak(fired, &cur, cur + 1))
            return 1;
    }
}

void sr_faults_pick(sr_fault_pick *out, sr_faults *fs, int engine_index, sr_endpoint ep,
                    int64_t turn)
{
    memset(out, 0, sizeof(*out));
    if (!fs)
        return;
    for (size_t i = 0; i < fs->n; i++) {
        const sr_fault *f = &fs->f[i];
        if (engine_index < 0 || engine_index > 63 || !(f->engines >> engine_index & 1))
            continue;
        if (!(f->endpoints & SR_EP_BIT(ep)))
            continue;
        if (f->n_turns && !in_list(f->turns, f->n_turns, turn))
            continue;
        int64_t n = atomic_fetch_add(&fs->seen[i], 1) + 1;
        sr_fault_layer layer = sr_fault_kind_layer(f->kind);
        if (out->f[layer])
            continue;
        if (f->n_nth && !in_list(f->nth, f->n_nth, n))
            continue;
        if (f->probability < 1.0 && !(unit_draw(fs->seed, i, n, 0) < f->probability))
            continue;
        if (!take(&fs->fired[i], f->count))
            continue;
        out->f[layer] = f;
        out->ordinal[layer] = n;
        if (layer == SR_FL_DELAY)
            out->delay_ms = draw_latency(fs, i, n);
    }
}

void sr_faults_counters(const sr_faults *fs, size_t i, int64_t *seen, int64_t *fired)
{
    *seen = fs && i < fs->n ? atomic_load(&((sr_faults *)fs)->seen[i]) : 0;
    *fired = fs && i < fs->n ? atomic_load(&((sr_faults *)fs)->fired[i]) : 0;
}

int sr_faults_state_json(sr_buf *b, const sr_faults *fs, sr_err *err)
{
    int rc = sr_buf_puts(b, "[", err);
    for (size_t i = 0; !rc && i < sr_faults_count(fs); i++) {
        int64_t seen, fired;
        sr_faults_counters(fs, i, &seen, &fired);
        const sr_fault *f = &fs->f[i];
        rc = sr_buf_puts(b, i ? ",{\"id\":" : "{\"id\":", err);
        if (!rc)
            rc = sr_jw_str(b, f->id, err);
        if (!rc)
            rc = sr_buf_printf(b, err,
                               ",\"kind\":\"%s\",\"layer\":\"%s\",\"seen\":%lld,"
                               "\"fired\":%lld}",
                               sr_fault_kind_name(f->kind),
                               sr_fault_layer_name(sr_fault_kind_layer(f->kind)), (long long)seen,
                               (long long)fired);
    }
    return rc ? rc : sr_buf_puts(b, "]", err);
}
