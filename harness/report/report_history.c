/* Many nights of one suite as one timeline: building, analysis, text and JSON (history.h). */
#include "history.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_priv.h"
#include "sr_hash.h"

static const char *const cell_names[SR_HCELL_COUNT] = {"absent", "pass", "fail",       "error",
                                                       "mixed",  "skip", "interrupted"};

const char *sr_hcell_name(sr_hcell c)
{
    return (unsigned)c < SR_HCELL_COUNT ? cell_names[c] : NULL;
}

int sr_history_new(sr_history **out, sr_err *err)
{
    if (!out)
        return sr_err_set(err, SR_E_INVAL, "sr_history_new: no output");
    *out = calloc(1, sizeof(sr_history));
    return *out ? 0 : sr_err_set(err, SR_E_NOMEM, "cannot allocate the history");
}

static void night_free(sr_hnight *n)
{
    free(n->name);
    free(n->run_id);
    free(n->git_rev);
    free(n->run_group);
    free(n->cell_id);
    free(n->cell);
    free(n->cell_wall);
    free(n->cell_p99);
}

void sr_history_free(sr_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n_nights; i++)
        night_free(&h->nights[i]);
    free(h->nights);
    for (size_t i = 0; i < h->n_skipped; i++)
        free(h->skipped[i].name);
    free(h->skipped);
    for (size_t i = 0; i < h->n_scenarios; i++) {
        free(h->scenarios[i].id);
        free(h->scenarios[i].timeline);
        free(h->scenarios[i].wall_ms);
        free(h->scenarios[i].p99_ms);
    }
    free(h->scenarios);
    free(h->index);
    free(h);
}

/* ---- scenario ids: an open-addressing table over h->scenarios ---- */

static int index_grow(sr_history *h)
{
    size_t cap = h->index_cap ? h->index_cap * 2 : 256;
    uint32_t *t = calloc(cap, sizeof(uint32_t));
    if (!t)
        return -1;
    for (size_t i = 0; i < h->n_scenarios; i++) {
        size_t k = (size_t)sr_hash_fnv1a64(h->scenarios[i].id) & (cap - 1);
        while (t[k])
            k = (k + 1) & (cap - 1);
        t[k] = (uint32_t)i + 1;
    }
    free(h->index);
    h->index = t;
    h->index_cap = cap;
    return 0;
}

/* The index of scenario `id`, added when new; -1 out of memory, -2 too many scenarios. */
static long scenario_index(sr_history *h, const char *id)
{
    if ((h->n_scenarios + 1) * 2 > h->index_cap && index_grow(h))
        return -1;
    size_t k = (size_t)sr_hash_fnv1a64(id) & (h->index_cap - 1);
    while (h->index[k]) {
        if (strcmp(h->scenarios[h->index[k] - 1].id, id) == 0)
            return (long)h->index[k] - 1;
        k = (k + 1) & (h->index_cap - 1);
    }
    if (h->n_scenarios >= SR_HISTORY_MAX_SCENARIOS)
        return -2;
    if (h->n_scenarios == h->cap_scenarios) {
        size_t cap = h->cap_scenarios ? h->cap_scenarios * 2 : 64;
        sr_hscenario *v = realloc(h->scenarios, cap * sizeof(*v));
        if (!v)
            return -1;
        h->scenarios = v;
        h->cap_scenarios = cap;
    }
    sr_hscenario *s = &h->scenarios[h->n_scenarios];
    memset(s, 0, sizeof(*s));
    if (!(s->id = strdup(id)))
        return -1;
    h->index[k] = (uint32_t)++h->n_scenarios;
    return (long)h->n_scenarios - 1;
}

/* ---- adding nights ---- */

static sr_hcell merge_cell(sr_hcell a, sr_verdict v)
{
    static const sr_hcell of[SR_VERDICT_COUNT] = {SR_HCELL_PASS, SR_HCELL_FAIL, SR_HCELL_ERROR,
                                                  SR_HCELL_SKIP, SR_HCELL_INTERRUPTED};
    sr_hcell b = (unsigned)v < SR_VERDICT_COUNT ? of[v] : SR_HCELL_ERROR;
    int a_bad = a == SR_HCELL_FAIL || a == SR_HCELL_ERROR,
        b_bad = b == SR_HCELL_FAIL || b == SR_HCELL_ERROR;
    if (a == SR_HCELL_ABSENT || a == b)
        return b;
    if (a == SR_HCELL_MIXED || (a == SR_HCELL_PASS && b_bad) || (b == SR_HCELL_PASS && a_bad))
        return SR_HCELL_MIXED;
    /* Otherwise the more telling one: fail over error over pass over interrupted over skip. */
    static const int rank[SR_HCELL_COUNT] = {0, 3, 5, 4, 6, 1, 2};
    return rank[a] >= rank[b] ? a : b;
}

/*
 * Cell j's latencies with its k-th execution s that ran (skipped ones are left out): the wall
 * time averaged, each p99 the largest.
 */
/* A loaded wall time as a float: results.json may hold any finite double (a value past FLT_MAX
 * would not convert). */
static float wall_float(double ms)
{
    return ms > FLT_MAX ? FLT_MAX : ms < -FLT_MAX ? -FLT_MAX : (float)ms;
}

static void add_latency(sr_hnight *n, size_t j, size_t k, const sr_scenario_result *s)
{
    float w = wall_float(s->wall_ms);
    n->cell_wall[j] = k == 1 ? w : n->cell_wall[j] + (w - n->cell_wall[j]) / (float)k;
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        sr_latency_row r;
        sr_report_latency(&r, s->phase[p]);
        float v = (float)((double)r.p99 / 1e6), *d = &n->cell_p99[j * SR_PHASE_COUNT + p];
        if (r.count && v > *d)
            *d = v;
    }
}

static int add_cells(sr_history *h, sr_hnight *n, const sr_run_result *run, sr_err *err)
{
    size_t cap = run->n_scenarios;
    if (cap && (!(n->cell_id = calloc(cap, sizeof(uint32_t))) || !(n->cell = calloc(cap, 1)) ||
                !(n->cell_wall = calloc(cap, sizeof(float))) ||
                !(n->cell_p99 = calloc(cap * SR_PHASE_COUNT, sizeof(float)))))
        return sr_err_set(err, SR_E_NOMEM, "cannot keep the verdicts of night %s", n->name);
    size_t *execs = cap ? calloc(cap, sizeof(size_t)) : NULL;
    if (cap && !execs)
        return sr_err_set(err, SR_E_NOMEM, "cannot keep the latencies of night %s", n->name);
    for (size_t i = 0; i < run->n_scenarios; i++) {
        const sr_scenario_result *s = run->scenarios[i];
        long idx = scenario_index(h, s->id ? s->id : "");
        if (idx == -2)
            return sr_err_set(err, SR_E_LIMIT, "%s: more than %d distinct scenario ids", n->name,
                              SR_HISTORY_MAX_SCENARIOS);
        if (idx < 0)
            return sr_err_set(err, SR_E_NOMEM, "cannot index the scenarios of %s", n->name);
        /* the scenario's cell in this night: found through its last (night, position) */
        sr_hscenario *hs = &h->scenarios[idx];
        size_t j = hs->seen_pos;
        if (hs->seen_night != n->order + 1) {
            j = n->n_cells;
            hs->seen_night = n->order + 1;
            hs->seen_pos = j;
            n->cell_id[n->n_cells] = (uint32_t)idx;
            for (int p = 0; p < SR_PHASE_COUNT; p++)
                n->cell_p99[j * SR_PHASE_COUNT + p] = -1;
            n->cell_wall[j] = -1;
            n->cell[n->n_cells++] = SR_HCELL_ABSENT;
        }
        n->cell[j] = (uint8_t)merge_cell((sr_hcell)n->cell[j], s->verdict);
        if (s->verdict != SR_VERDICT_SKIP)
            add_latency(n, j, ++execs[j], s);
    }
    free(execs);
    return 0;
}

static int grow_nights(sr_history *h, sr_err *err)
{
    if (h->n_nights + h->n_skipped >= SR_HISTORY_MAX_NIGHTS)
        return sr_err_set(err, SR_E_LIMIT, "more than %d run folders", SR_HISTORY_MAX_NIGHTS);
    if (h->n_nights < h->cap_nights)
        return 0;
    size_t cap = h->cap_nights ? h->cap_nights * 2 : 16;
    sr_hnight *v = realloc(h->nights, cap * sizeof(*v));
    if (!v)
        return sr_err_set(err, SR_E_NOMEM, "cannot grow the list of nights");
    h->nights = v;
    h->cap_nights = cap;
    return 0;
}

/*
 * A results.json may be crafted: its start time is kept only when it has the shape of an ISO
 * 8601 time (digits and "-:.TZ+" only), else it reads "invalid", so no renderer ever sees
 * markup or control characters in it (the renderers escape everything else they print).
 */
static void iso_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap);
    int ok = n > 0 && n < cap && strspn(src, "0123456789-:.TZ+") == n;
    snprintf(dst, cap, "%s", ok ? src : "invalid");
}

int sr_history_add(sr_history *h, const char *name, const sr_run_result *run, sr_err *err)
{
    if (!h || !name || !run)
        return sr_err_set(err, SR_E_INVAL, "sr_history_add: bad argument");
    int rc = grow_nights(h, err);
    if (rc)
        return rc;
    sr_hnight *n = &h->nights[h->n_nights];
    memset(n, 0, sizeof(*n));
    const sr_run_header *rh = &run->header;
    n->order = h->n_nights + h->n_skipped;
    n->start_unix_ms = rh->start_unix_ms;
    iso_copy(n->start_iso, sizeof(n->start_iso), rh->start_iso);
    n->partial = run->partial;
    memcpy(n->counts, run->counts, sizeof(n->counts));
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        sr_latency_row r;
        sr_report_latency(&r, run->phase[p]);
        n->phase_count[p] = r.count;
        n->p50_ms[p] = (double)r.p50 / 1e6;
        n->p99_ms[p] = (double)r.p99 / 1e6;
    }
    h->n_nights++; /* from here on, sr_history_free frees what is set */
    if (sr_result_set_str(&n->name, name, NULL) ||
        sr_result_set_str(&n->run_id, rh->run_id, NULL) ||
        sr_result_set_str(&n->git_rev, rh->git_rev, NULL) ||
        sr_result_set_str(&n->run_group, rh->run_group, NULL))
        rc = sr_err_set(err, SR_E_NOMEM, "cannot keep night %s", name);
    return rc ? rc : add_cells(h, n, run, err);
}

int sr_history_skip(sr_history *h, const char *name, int code, const char *message, sr_err *err)
{
    if (!h || !name)
        return sr_err_set(err, SR_E_INVAL, "sr_history_skip: bad argument");
    if (h->n_nights + h->n_skipped >= SR_HISTORY_MAX_NIGHTS)
        return sr_err_set(err, SR_E_LIMIT, "more than %d run folders", SR_HISTORY_MAX_NIGHTS);
    if (h->n_skipped == h->cap_skipped) {
        size_t cap = h->cap_skipped ? h->cap_skipped * 2 : 8;
        sr_hskip *v = realloc(h->skipped, cap * sizeof(*v));
        if (!v)
            return sr_err_set(err, SR_E_NOMEM, "cannot note a skipped night");
        h->skipped = v;
        h->cap_skipped = cap;
    }
    sr_hskip *s = &h->skipped[h->n_skipped];
    memset(s, 0, sizeof(*s));
    s->code = code;
    snprintf(s->message, sizeof(s->message), "%s", message ? message : "");
    if (!(s->name = strdup(name)))
        return sr_err_set(err, SR_E_NOMEM, "cannot note a skipped night");
    h->n_skipped++;
    return 0;
}

/* ---- analysis ---- */

static int by_start(const void *pa, const void *pb)
{
    const sr_hnight *a = pa, *b = pb;
    if (a->start_unix_ms != b->start_unix_ms)
        return a->start_unix_ms < b->start_unix_ms ? -1 : 1;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->order < b->order ? -1 : a->order > b->order);
}

static int is_bad(uint8_t c)
{
    return c == SR_HCELL_FAIL || c == SR_HCELL_ERROR;
}

/* Flaky by the rules of history.h; fills s->flaky_why. */
static void judge_flaky(const sr_history *h, sr_hscenario *s)
{
    int changes = 0, prev = -1;
    for (size_t i = 0; i < h->n_nights && !s->flaky; i++) {
        uint8_t c = s->timeline[i];
        if (c == SR_HCELL_MIXED) {
            s->flaky = 1;
            snprintf(s->flaky_why, sizeof(s->flaky_why), "passed and failed in night %.100s",
                     h->nights[i].name);
        }
        int v = c == SR_HCELL_PASS ? 0 : is_bad(c) ? 1 : -1;
        if (v < 0)
            continue;
        changes += prev >= 0 && v != prev;
        prev = v;
        for (size_t j = 0; j < i && !s->flaky && h->nights[i].git_rev; j++) {
            uint8_t d = s->timeline[j];
            int w = d == SR_HCELL_PASS ? 0 : is_bad(d) ? 1 : -1;
            if (w >= 0 && w != v && h->nights[j].git_rev &&
                strcmp(h->nights[j].git_rev, h->nights[i].git_rev) == 0) {
                s->flaky = 1;
                snprintf(s->flaky_why, sizeof(s->flaky_why),
                         "passed and failed on git rev %.12s (nights %.60s and %.60s)",
                         h->nights[i].git_rev, h->nights[j].name, h->nights[i].name);
            }
        }
    }
    if (!s->flaky && changes >= SR_HISTORY_FLAKY_CHANGES) {
        s->flaky = 1;
        snprintf(s->flaky_why, sizeof(s->flaky_why),
                 "changed between pass and fail %d times in %zu nights", changes, h->n_nights);
    }
}

/*
 * The bad streak that ends the window, and the good night before it. A newest judged night
 * that is mixed (one execution failed) is a failing night too, and starts no streak before it.
 */
static void judge_failing(const sr_history *h, sr_hscenario *s)
{
    s->first_fail = s->last_pass = -1;
    for (size_t i = h->n_nights; i-- > 0;) {
        uint8_t c = s->timeline[i];
        if (c == SR_HCELL_MIXED && s->first_fail < 0) {
            s->first_fail = (long)i;
            continue;
        }
        if (c == SR_HCELL_PASS || c == SR_HCELL_MIXED) {
            s->last_pass = (long)i;
            break;
        }
        if (is_bad(c))
            s->first_fail = (long)i;
    }
    s->failing = s->first_fail >= 0;
}

int sr_history_finish(sr_history *h, size_t last, sr_err *err)
{
    if (!h)
        return sr_err_set(err, SR_E_INVAL, "sr_history_finish: no history");
    if (h->n_nights > 1)
        qsort(h->nights, h->n_nights, sizeof(sr_hnight), by_start);
    if (last && h->n_nights > last) {
        size_t drop = h->n_nights - last;
        for (size_t i = 0; i < drop; i++)
            night_free(&h->nights[i]);
        memmove(h->nights, h->nights + drop, last * sizeof(sr_hnight));
        h->n_nights = last;
        h->dropped = drop;
    }
    size_t nn = h->n_nights + 1;
    for (size_t i = 0; i < h->n_scenarios; i++) {
        sr_hscenario *s = &h->scenarios[i];
        free(s->timeline);
        free(s->wall_ms);
        free(s->p99_ms);
        s->wall_ms = s->p99_ms = NULL;
        if (!(s->timeline = calloc(nn, 1)) || !(s->wall_ms = malloc(nn * sizeof(float))) ||
            !(s->p99_ms = malloc(nn * SR_PHASE_COUNT * sizeof(float))))
            return sr_err_set(err, SR_E_NOMEM, "cannot build the timelines");
        for (size_t k = 0; k < nn * SR_PHASE_COUNT; k++)
            s->p99_ms[k] = -1;
        for (size_t k = 0; k < nn; k++)
            s->wall_ms[k] = -1;
    }
    for (size_t i = 0; i < h->n_nights; i++)
        for (size_t j = 0; j < h->nights[i].n_cells; j++) {
            sr_hscenario *s = &h->scenarios[h->nights[i].cell_id[j]];
            s->timeline[i] = h->nights[i].cell[j];
            s->wall_ms[i] = h->nights[i].cell_wall[j];
            memcpy(&s->p99_ms[i * SR_PHASE_COUNT], &h->nights[i].cell_p99[j * SR_PHASE_COUNT],
                   SR_PHASE_COUNT * sizeof(float));
        }
    for (size_t i = 0; i < h->n_scenarios; i++) {
        judge_flaky(h, &h->scenarios[i]);
        judge_failing(h, &h->scenarios[i]);
    }
    return 0;
}

/* ---- text ---- */

/* The first 12 characters of a git rev (or "unknown"), cleaned for the terminal. */
static void rev12(sr_rw *w, const char *rev)
{
    char buf[16];
    snprintf(buf, 13, "%s", rev ? rev : "unknown");
    sr_rw_puts(w, " (git ");
    sr_rw_utf8(w, buf);
    sr_rw_puts(w, ")");
}

int sr_history_render_text(sr_buf *out, const sr_history *h, sr_err *err)
{
    sr_rw w = sr_report_writer(out, err);
    size_t failing = 0, flaky = 0;
    for (size_t i = 0; i < h->n_skipped; i++) {
        sr_rw_puts(&w, "SKIPPED ");
        sr_rw_utf8(&w, h->skipped[i].name);
        sr_rw_printf(&w, ": %s: ", sr_report_code_name(h->skipped[i].code));
        sr_rw_utf8(&w, h->skipped[i].message);
        sr_rw_puts(&w, " (this night is left out)\n");
    }
    for (size_t i = 0; i < h->n_scenarios; i++) {
        const sr_hscenario *s = &h->scenarios[i];
        if (s->failing) {
            const sr_hnight *f = &h->nights[s->first_fail];
            failing++;
            sr_rw_puts(&w, "FAILING ");
            sr_rw_utf8(&w, s->id);
            sr_rw_puts(&w, ": first failing night ");
            sr_rw_utf8(&w, f->name);
            rev12(&w, f->git_rev);
            if (s->last_pass >= 0) {
                sr_rw_puts(&w, ", last passing night ");
                sr_rw_utf8(&w, h->nights[s->last_pass].name);
                rev12(&w, h->nights[s->last_pass].git_rev);
                sr_rw_puts(&w, "\n");
            } else {
                sr_rw_puts(&w, ", no passing night before it in the window\n");
            }
        }
        if (s->flaky) {
            flaky++;
            sr_rw_puts(&w, "FLAKY ");
            sr_rw_utf8(&w, s->id);
            sr_rw_puts(&w, ": ");
            sr_rw_utf8(&w, s->flaky_why);
            sr_rw_puts(&w, "\n");
        }
    }
    sr_rw_printf(&w, "%zu nights", h->n_nights);
    if (h->n_nights) {
        sr_rw_puts(&w, " (");
        sr_rw_utf8(&w, h->nights[0].start_iso);
        sr_rw_puts(&w, " .. ");
        sr_rw_utf8(&w, h->nights[h->n_nights - 1].start_iso);
        sr_rw_puts(&w, ")");
    }
    sr_rw_printf(&w, ", %zu scenarios, %zu failing, %zu flaky, %zu skipped (unreadable)",
                 h->n_scenarios, failing, flaky, h->n_skipped);
    if (h->dropped)
        sr_rw_printf(&w, ", %zu older left out by --last", h->dropped);
    sr_rw_puts(&w, "\n");
    return w.rc;
}

/* ---- JSON ---- */

static cJSON *str_or_null(const char *s)
{
    char *u = s ? sr_report_utf8_dup(s) : NULL;
    cJSON *j = u ? cJSON_CreateString(u) : cJSON_CreateNull();
    free(u);
    return j;
}

static cJSON *night_ref(const sr_history *h, long i)
{
    if (i < 0)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "night", str_or_null(h->nights[i].name));
    cJSON_AddItemToObject(o, "git_rev", str_or_null(h->nights[i].git_rev));
    return o;
}

static cJSON *nights_json(const sr_history *h)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < h->n_nights; i++) {
        const sr_hnight *n = &h->nights[i];
        cJSON *o = cJSON_CreateObject(), *c = cJSON_CreateObject(), *ph = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "name", str_or_null(n->name));
        cJSON_AddItemToObject(o, "run_id", str_or_null(n->run_id));
        cJSON_AddItemToObject(o, "git_rev", str_or_null(n->git_rev));
        cJSON_AddItemToObject(o, "run_group", str_or_null(n->run_group));
        cJSON_AddItemToObject(o, "start", str_or_null(n->start_iso));
        cJSON_AddBoolToObject(o, "partial", n->partial);
        for (int v = 0; v < SR_VERDICT_COUNT; v++)
            cJSON_AddNumberToObject(c, sr_verdict_name((sr_verdict)v), (double)n->counts[v]);
        cJSON_AddItemToObject(o, "counts", c);
        for (int p = 0; p < SR_PHASE_COUNT; p++) {
            if (!n->phase_count[p])
                continue;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "count", (double)n->phase_count[p]);
            cJSON_AddNumberToObject(e, "p50_ms", n->p50_ms[p]);
            cJSON_AddNumberToObject(e, "p99_ms", n->p99_ms[p]);
            cJSON_AddItemToObject(ph, sr_phase_name((sr_phase)p), e);
        }
        cJSON_AddItemToObject(o, "phases", ph);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* Milliseconds kept to three decimals, truncated; no integer conversion, so a loaded value of
 * any size (up to FLT_MAX) is safe. */
static double ms3(float x)
{
    return trunc((double)x * 1000.0) / 1000.0;
}

/* One series of floats per night, null where the night has none. */
static cJSON *series_json(const sr_history *h, const float *v, size_t stride)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t k = 0; k < h->n_nights; k++) {
        float x = v[k * stride];
        cJSON_AddItemToArray(a, x < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(ms3(x)));
    }
    return a;
}

/* {"wall_ms": [...], "p99_ms": {"<phase>": [...]}} over the kept nights. */
static cJSON *scenario_latency(const sr_history *h, const sr_hscenario *s)
{
    cJSON *o = cJSON_CreateObject(), *ph = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "wall_ms", series_json(h, s->wall_ms, 1));
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        int any = 0;
        for (size_t k = 0; k < h->n_nights && !any; k++)
            any = s->p99_ms[k * SR_PHASE_COUNT + p] >= 0;
        if (any)
            cJSON_AddItemToObject(ph, sr_phase_name((sr_phase)p),
                                  series_json(h, &s->p99_ms[p], SR_PHASE_COUNT));
    }
    cJSON_AddItemToObject(o, "p99_ms", ph);
    return o;
}

static cJSON *scenarios_json(const sr_history *h)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < h->n_scenarios; i++) {
        const sr_hscenario *s = &h->scenarios[i];
        cJSON *o = cJSON_CreateObject(), *t = cJSON_CreateArray();
        cJSON_AddItemToObject(o, "id", str_or_null(s->id));
        for (size_t k = 0; k < h->n_nights; k++)
            cJSON_AddItemToArray(t, cJSON_CreateString(sr_hcell_name((sr_hcell)s->timeline[k])));
        cJSON_AddItemToObject(o, "timeline", t);
        cJSON_AddItemToObject(o, "latency", scenario_latency(h, s));
        cJSON_AddBoolToObject(o, "failing", s->failing);
        cJSON_AddItemToObject(o, "first_fail", night_ref(h, s->first_fail));
        cJSON_AddItemToObject(o, "last_pass", night_ref(h, s->first_fail >= 0 ? s->last_pass : -1));
        cJSON_AddBoolToObject(o, "flaky", s->flaky);
        cJSON_AddItemToObject(o, "flaky_reason", str_or_null(s->flaky ? s->flaky_why : NULL));
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

int sr_history_render_json(sr_buf *out, const sr_history *h, sr_err *err)
{
    cJSON *root = cJSON_CreateObject(), *sk = cJSON_CreateArray();
    cJSON_AddNumberToObject(root, "schema", 1);
    cJSON_AddItemToObject(root, "nights", nights_json(h));
    for (size_t i = 0; i < h->n_skipped; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "name", str_or_null(h->skipped[i].name));
        cJSON_AddStringToObject(o, "error", sr_report_code_name(h->skipped[i].code));
        cJSON_AddItemToObject(o, "message", str_or_null(h->skipped[i].message));
        cJSON_AddItemToArray(sk, o);
    }
    cJSON_AddItemToObject(root, "skipped", sk);
    cJSON_AddNumberToObject(root, "left_out_by_last", (double)h->dropped);
    cJSON_AddItemToObject(root, "scenarios", scenarios_json(h));
    char *txt = cJSON_Print(root);
    cJSON_Delete(root);
    if (!txt)
        return sr_err_set(err, SR_E_NOMEM, "cannot build history.json");
    sr_rw w = sr_report_writer(out, err);
    sr_rw_puts(&w, txt);
    sr_rw_puts(&w, "\n");
    free(txt);
    return w.rc;
}
