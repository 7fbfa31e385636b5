#include "faults.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults_priv.h"
#include "jsonw.h"
#include "sr_mix.h"

const kind_info sr_fault_kinds[SR_FK_COUNT] = {
    [SR_FK_LATENCY] = {"latency", SR_FL_DELAY, EPB(SR_EP_GENERATE), ~0u, P_LAT},
    [SR_FK_ROUTES_ALL_ZERO] = {"routes_all_zero", SR_FL_MODEL, EPB(SR_EP_GENERATE),
                               EPB(SR_EP_GENERATE), 0},
    [SR_FK_ROWS_P_PLUS_G] = {"rows_p_plus_g", SR_FL_MODEL, EPB(SR_EP_GENERATE), EPB(SR_EP_GENERATE),
                             0},
    [SR_FK_PROMPT_START_IGNORED] = {"prompt_start_ignored", SR_FL_MODEL, EPB(SR_EP_GENERATE),
                                    EPB(SR_EP_GENERATE), 0},
    [SR_FK_DUPLICATED_OUTPUT_ROWS] = {"duplicated_output_rows", SR_FL_MODEL, EPB(SR_EP_GENERATE),
                                      EPB(SR_EP_GENERATE), 0},
    [SR_FK_EXPERT_OUT_OF_RANGE] = {"expert_out_of_range", SR_FL_MODEL, EPB(SR_EP_GENERATE),
                                   EPB(SR_EP_GENERATE), P_ROWL},
    [SR_FK_EXPERT_DUPLICATE] = {"expert_duplicate", SR_FL_MODEL, EPB(SR_EP_GENERATE),
                                EPB(SR_EP_GENERATE), P_ROWL},
    [SR_FK_ROUTES_DROPPED] = {"routes_dropped", SR_FL_MODEL, EPB(SR_EP_GENERATE),
                              EPB(SR_EP_GENERATE), 0},
    [SR_FK_STALE_PREFIX_CACHE] = {"stale_prefix_cache", SR_FL_MODEL, EPB(SR_EP_GENERATE),
                                  EPB(SR_EP_GENERATE), 0},
    [SR_FK_BAD_BASE64] = {"bad_base64", SR_FL_BODY, EPB(SR_EP_GENERATE), EPB(SR_EP_GENERATE),
                          P_FIELD | P_OFFSET},
    [SR_FK_BYTE_COUNT_OFF] = {"byte_count_off", SR_FL_BODY, EPB(SR_EP_GENERATE),
                              EPB(SR_EP_GENERATE), P_FIELD},
    [SR_FK_NON_CANONICAL_DTYPE] = {"non_canonical_dtype", SR_FL_BODY, EPB(SR_EP_GENERATE),
                                   EPB(SR_EP_GENERATE), 0},
    [SR_FK_REORDERED_ENVELOPE] = {"reordered_envelope", SR_FL_BODY, EPB(SR_EP_GENERATE),
                                  EPB(SR_EP_GENERATE), P_FIELD},
    [SR_FK_RESPACED_JSON] = {"respaced_json", SR_FL_BODY, EPB(SR_EP_GENERATE), EP_GEN, 0},
    [SR_FK_DATA_NULL] = {"data_null", SR_FL_BODY, EPB(SR_EP_GENERATE), EPB(SR_EP_GENERATE),
                         P_FIELD},
    [SR_FK_LOOKALIKE_FIELD] = {"lookalike_field", SR_FL_BODY, EPB(SR_EP_GENERATE),
                               EPB(SR_EP_GENERATE), P_FIELD},
    [SR_FK_ESCAPED_QUOTE_KEY] = {"escaped_quote_key", SR_FL_BODY, EPB(SR_EP_GENERATE),
                                 EPB(SR_EP_GENERATE), P_FIELD},
    [SR_FK_DUPLICATE_FIELD] = {"duplicate_field", SR_FL_BODY, EPB(SR_EP_GENERATE),
                               EPB(SR_EP_GENERATE), P_FIELD},
    [SR_FK_EXTRA_ENVELOPE] = {"extra_envelope", SR_FL_BODY, EPB(SR_EP_GENERATE),
                              EPB(SR_EP_GENERATE), P_FIELD | P_KEY},
    [SR_FK_HTTP_502_HTML] = {"http_502_html", SR_FL_HTTP, EPB(SR_EP_GENERATE), ~0u, P_TEXT},
    [SR_FK_HTTP_503_JSON] = {"http_503_json", SR_FL_HTTP, EPB(SR_EP_GENERATE), ~0u, P_TEXT},
    [SR_FK_HTTP_429] = {"http_429", SR_FL_HTTP, EPB(SR_EP_GENERATE), ~0u, P_TEXT | P_RETRY},
    [SR_FK_HTTP_400_TEXT] = {"http_400_text", SR_FL_HTTP, EPB(SR_EP_GENERATE), ~0u, P_TEXT},
    [SR_FK_TRUNCATE] = {"truncate", SR_FL_TRANSPORT, EPB(SR_EP_GENERATE), ~0u, P_BYTES | P_KEEP},
    [SR_FK_TRUNCATE_IN_BLOB] = {"truncate_in_blob", SR_FL_TRANSPORT, EPB(SR_EP_GENERATE),
                                EPB(SR_EP_GENERATE), P_OFFSET | P_KEEP},
    [SR_FK_TRUNCATE_AFTER_BLOBS] = {"truncate_after_blobs", SR_FL_TRANSPORT, EPB(SR_EP_GENERATE),
                                    EPB(SR_EP_GENERATE), P_OFFSET | P_KEEP},
    [SR_FK_RESET] = {"reset", SR_FL_TRANSPORT, EPB(SR_EP_GENERATE), ~0u, 0},
    [SR_FK_REFUSE] = {"refuse", SR_FL_TRANSPORT, EPB(SR_EP_GENERATE), ~0u, P_MS},
    [SR_FK_STALL] = {"stall", SR_FL_TRANSPORT, EPB(SR_EP_GENERATE), ~0u, 0},
    [SR_FK_STALL_MID_BODY] = {"stall_mid_body", SR_FL_TRANSPORT, EPB(SR_EP_GENERATE), ~0u, P_BYTES},
    [SR_FK_DRIBBLE] = {"dribble", SR_FL_TRANSPORT, EPB(SR_EP_GENERATE), ~0u, P_BPS},
    [SR_FK_PARTIAL_WEIGHT_APPLY] = {"partial_weight_apply", SR_FL_WEIGHTS,
                                    EPB(SR_EP_UPDATE_WEIGHTS), EP_SYNC, P_LAYERS},
    [SR_FK_VERSION_NOT_BUMPED] = {"version_not_bumped", SR_FL_WEIGHTS, EPB(SR_EP_UPDATE_WEIGHTS),
                                  EP_SYNC, 0},
    [SR_FK_CHECKSUM_MISMATCH] = {"checksum_mismatch", SR_FL_WEIGHTS, EPB(SR_EP_UPDATE_WEIGHTS),
                                 EP_SYNC, 0},
};

static const char *const LAYER_NAMES[SR_FL_COUNT] = {"delay", "model",     "body",
                                                     "http",  "transport", "weights"};

const char *sr_fault_kind_name(sr_fault_kind k)
{
    return (unsigned)k < SR_FK_COUNT ? sr_fault_kinds[k].name : NULL;
}

sr_fault_layer sr_fault_kind_layer(sr_fault_kind k)
{
    return (unsigned)k < SR_FK_COUNT ? sr_fault_kinds[k].layer : SR_FL_COUNT;
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
        if (!(f->endpoints & EPB(ep)))
            continue;
        if (f->n_turns && !in_list(f->turns, f->n_turns, turn))
            continue;
        int64_t n = atomic_fetch_add(&fs->seen[i], 1) + 1;
        sr_fault_layer layer = sr_fault_kinds[f->kind].layer;
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
                               sr_fault_kinds[f->kind].name,
                               LAYER_NAMES[sr_fault_kinds[f->kind].layer], (long long)seen,
                               (long long)fired);
    }
    return rc ? rc : sr_buf_puts(b, "]", err);
}
