/* results.json's phase histograms read back (report_load_priv.h): the buckets, count, min, max and
 * sum a run wrote, rebuilt into an sr_hist that gives the same percentiles. */
#include <math.h>
#include <stdlib.h>

#include "report_load_priv.h"

typedef struct bk {
    uint64_t lo, hi, c;
} bk;

/* The bucket whose lower bound is exactly v, or -1. */
static long bucket_at(uint64_t v)
{
    size_t a = 0, b = sr_hist_buckets();
    while (b - a > 1) {
        size_t m = a + (b - a) / 2;
        uint64_t lo, hi;
        sr_hist_bucket_range(m, &lo, &hi);
        if (lo <= v)
            a = m;
        else
            b = m;
    }
    uint64_t lo, hi;
    sr_hist_bucket_range(a, &lo, &hi);
    return lo == v ? (long)a : -1;
}

/*
 * Records values that reproduce the buckets, min, max and sum exactly: min and max once each,
 * then every other value at its bucket's lower end (within [min, max]), raised towards the
 * bucket's upper end bucket by bucket until the values add up to `sum`. At most three distinct
 * values per bucket, so this costs O(buckets). 0 or SR_E_NOMEM.
 */
static int hist_fill(sr_hist *h, bk *b, size_t nb, uint64_t mn, uint64_t mx, uint64_t sum,
                     uint64_t count)
{
    for (size_t i = 0; i < nb; i++) {
        b[i].lo = b[i].lo < mn ? mn : b[i].lo;
        b[i].hi = b[i].hi > mx ? mx : b[i].hi;
    }
    unsigned __int128 fixed = mn;
    int rc = sr_hist_record(h, mn);
    b[0].c--;
    if (count > 1) {
        rc = rc ? rc : sr_hist_record(h, mx);
        b[nb - 1].c--;
        fixed += mx;
    }
    unsigned __int128 base = fixed;
    for (size_t i = 0; i < nb; i++)
        base += (unsigned __int128)b[i].c * b[i].lo;
    unsigned __int128 d = sum > base ? sum - base : 0;
    for (size_t i = 0; i < nb; i++) {
        uint64_t w = b[i].hi - b[i].lo, c = b[i].c;
        unsigned __int128 room = (unsigned __int128)c * w;
        unsigned __int128 take = d < room ? d : room;
        uint64_t k = w ? (uint64_t)(take / w) : 0, r = w ? (uint64_t)(take % w) : 0;
        rc = rc ? rc : sr_hist_record_n(h, b[i].hi, k);
        if (r && !rc)
            rc = sr_hist_record(h, b[i].lo + r);
        rc = rc ? rc : sr_hist_record_n(h, b[i].lo, c - k - (r ? 1 : 0));
        d -= take;
    }
    return rc;
}

static void load_hist(ld *l, const cJSON *phase, sr_hist *h)
{
    uint64_t count = sr_ld_get_u64(l, phase, "count");
    const cJSON *hj = sr_ld_get_typed(l, phase, "hist", 0);
    const cJSON *arr = hj ? sr_ld_get_typed(l, hj, "buckets", 1) : NULL;
    if (l->rc || count == 0)
        return;
    if (!arr) {
        sr_ld_fail(l, phase, "a phase with samples needs its histogram (hist.buckets)");
        return;
    }
    uint64_t mn = sr_ld_get_u64(l, hj, "min_ns"), mx = sr_ld_get_u64(l, hj, "max_ns");
    uint64_t sum = sr_ld_get_u64(l, hj, "sum_ns");
    size_t nb = (size_t)cJSON_GetArraySize(arr), k = 0;
    bk *b = nb ? calloc(nb, sizeof(bk)) : NULL;
    if (!b) {
        if (nb)
            sr_ld_nomem(l);
        else
            sr_ld_fail(l, arr, "no buckets for %llu samples", (unsigned long long)count);
        return;
    }
    uint64_t total = 0;
    long prev = -1;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr)
    {
        const cJSON *lo = cJSON_GetArrayItem(x, 0), *c = cJSON_GetArrayItem(x, 1);
        long idx = -1;
        if (cJSON_GetArraySize(x) == 2 && cJSON_IsNumber(lo) && cJSON_IsNumber(c) &&
            lo->valuedouble >= 0 && lo->valuedouble < 0x1p64 && c->valuedouble >= 1 &&
            c->valuedouble < 0x1p64 && c->valuedouble == floor(c->valuedouble))
            idx = bucket_at((uint64_t)lo->valuedouble);
        if (idx <= prev) {
            sr_ld_fail(l, x, "a bucket must be [lower bound, count > 0], in increasing order");
            break;
        }
        prev = idx;
        sr_hist_bucket_range((size_t)idx, &b[k].lo, &b[k].hi);
        b[k].c = (uint64_t)c->valuedouble;
        total += b[k++].c;
    }
    if (!l->rc && (total != count || mn > mx || mn < b[0].lo || mn > b[0].hi || mx < b[nb - 1].lo ||
                   mx > b[nb - 1].hi))
        sr_ld_fail(l, hj, "buckets disagree with count %llu, min_ns or max_ns",
                   (unsigned long long)count);
    if (!l->rc && hist_fill(h, b, nb, mn, mx, sum, count))
        sr_ld_nomem(l);
    free(b);
}

void sr_ld_phases(ld *l, const cJSON *o, sr_hist *const *h, sr_phase_cpu *cpu)
{
    const cJSON *ph = sr_ld_get_typed(l, o, "phases", 0);
    for (int p = 0; ph && p < SR_PHASE_COUNT && !l->rc; p++) {
        const cJSON *e = sr_ld_get_typed(l, ph, sr_phase_name((sr_phase)p), 0);
        if (e)
            load_hist(l, e, h[p]);
        /* "cpu" is absent in files written before it existed. */
        const cJSON *c = e && !l->rc ? sr_ld_get_typed(l, e, "cpu", 0) : NULL;
        if (c) {
            cpu[p].count = sr_ld_get_u64(l, c, "count");
            cpu[p].sum_ns = l->rc ? 0 : sr_ld_get_u64(l, c, "sum_ns");
        }
    }
}
