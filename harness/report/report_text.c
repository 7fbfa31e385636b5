/* The text reporter: summary.txt (report.h). */
#include "report_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed_first_rank(sr_verdict v)
{
    return v == SR_VERDICT_FAIL || v == SR_VERDICT_ERROR ? 0 : v == SR_VERDICT_INTERRUPTED ? 1 : 2;
}

void sr_report_order(const sr_run_result *run, size_t *idx)
{
    size_t k = 0;
    for (int rank = 0; rank < 3; rank++)
        for (size_t i = 0; i < run->n_scenarios; i++)
            if (failed_first_rank(run->scenarios[i]->verdict) == rank)
                idx[k++] = i;
}

static int same_group(const sr_check *a, const sr_check *b)
{
    return a->expected == b->expected && strcmp(a->name, b->name) == 0 &&
           strcmp(a->classification, b->classification) == 0;
}

size_t sr_report_check_rank(const sr_scenario_result *s, size_t k)
{
    size_t r = 0;
    for (size_t i = 0; i < k; i++)
        r += same_group(&s->checks[i], &s->checks[k]);
    return r;
}

size_t sr_report_check_group_size(const sr_scenario_result *s, size_t k)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_checks; i++)
        n += same_group(&s->checks[i], &s->checks[k]);
    return n;
}

/* The header lines of a merged run: the shard count and each shard's run, host and command. */
static void merged_shards(sr_rw *w, const sr_run_header *h)
{
    sr_rw_printf(w, "\nmerged from %zu of %d shards:", h->n_merged_from, h->merged_of);
    if (!h->n_shards) {
        for (size_t i = 0; i < h->n_merged_from; i++) {
            sr_rw_puts(w, " ");
            sr_rw_utf8(w, h->merged_from[i]);
        }
        return;
    }
    for (size_t i = 0; i < h->n_shards; i++) {
        const sr_merged_shard *m = &h->shards[i];
        sr_rw_printf(w, "\n  shard %d/%d: ", m->k, h->merged_of);
        sr_rw_utf8(w, m->run_id ? m->run_id : "?");
        sr_rw_puts(w, " on ");
        sr_rw_utf8(w, m->hostname ? m->hostname : "?");
        sr_rw_puts(w, ": ");
        sr_rw_utf8(w, m->command ? m->command : "?");
    }
}

static void header(sr_rw *w, const sr_run_result *run)
{
    const sr_run_header *h = &run->header;
    sr_rw_puts(w, "syncroll ");
    sr_rw_utf8(w, h->version ? h->version : "?");
    sr_rw_puts(w, "  run ");
    sr_rw_utf8(w, h->run_id ? h->run_id : "?");
    if (h->git_rev) {
        char rev[16];
        snprintf(rev, 13, "%s", h->git_rev);
        sr_rw_puts(w, "  (git ");
        sr_rw_utf8(w, rev);
        sr_rw_puts(w, ")");
    }
    sr_rw_puts(w, "\nstarted ");
    sr_rw_utf8(w, h->start_iso[0] ? h->start_iso : "?");
    sr_rw_puts(w, " on ");
    sr_rw_utf8(w, h->hostname ? h->hostname : "?");
    sr_rw_puts(w, " (");
    sr_rw_utf8(w, h->arch ? h->arch : "?");
    sr_rw_printf(w, ", %d CPUs, ", h->cpus);
    sr_rw_utf8(w, h->kernel ? h->kernel : "?");
    sr_rw_puts(w, ")\ncommand: ");
    sr_rw_utf8(w, h->command ? h->command : "?");
    if (h->has_seed)
        sr_rw_printf(w, "\nseed: %llu (every scenario)", (unsigned long long)h->seed);
    if (h->shard_n) {
        sr_rw_printf(w, "\nshard: %d/%d from ", h->shard_k, h->shard_n);
        sr_rw_utf8(w, h->shard_source ? h->shard_source : "?");
        if (h->shard_detail) {
            sr_rw_puts(w, " (");
            sr_rw_utf8(w, h->shard_detail);
            sr_rw_puts(w, ")");
        }
    }
    if (h->n_merged_from)
        merged_shards(w, h);
    if (h->run_group) {
        sr_rw_puts(w, "\nrun group: ");
        sr_rw_utf8(w, h->run_group);
    }
    if (run->partial) {
        sr_rw_puts(w, "\nPARTIAL RUN: ");
        sr_rw_utf8(w, run->partial_reason ? run->partial_reason : "the run did not finish");
    }
    sr_rw_puts(w, "\n\n");
}

static void where(sr_rw *w, const sr_check_where *x)
{
    static const char *const names[] = {"step", "engine", "sample", "turn", "row", "layer"};
    const int64_t v[] = {x->step, x->engine, x->sample, x->turn, x->row, x->layer};
    int any = 0;
    for (size_t i = 0; i < 6; i++) {
        if (v[i] < 0)
            continue;
        sr_rw_printf(w, "%s%s %lld", any ? ", " : " (", names[i], (long long)v[i]);
        any = 1;
    }
    if (any)
        sr_rw_puts(w, ")");
}

static void checks(sr_rw *w, const sr_scenario_result *s)
{
    char id[160];
    sr_rw_printf(w, "%s ", s->verdict == SR_VERDICT_ERROR ? "ERROR" : "FAIL ");
    sr_rw_utf8(w, sr_report_display_id(id, sizeof(id), s));
    sr_rw_puts(w, ": ");
    sr_rw_utf8(w, s->reason);
    sr_rw_puts(w, "\n");
    for (size_t i = 0; i < s->n_checks; i++) {
        const sr_check *c = &s->checks[i];
        size_t rank = sr_report_check_rank(s, i);
        if (rank >= SR_REPORT_GROUP_SHOWN)
            continue;
        sr_rw_puts(w, "      check ");
        sr_rw_utf8(w, c->name);
        if (c->classification[0]) {
            sr_rw_puts(w, " [");
            sr_rw_utf8(w, c->classification);
            sr_rw_puts(w, "]");
        }
        where(w, &c->where);
        sr_rw_puts(w, c->expected ? " (expected): " : ": ");
        sr_rw_utf8(w, c->message);
        sr_rw_puts(w, "\n");
        size_t size = sr_report_check_group_size(s, i);
        if (rank + 1 == SR_REPORT_GROUP_SHOWN && size > SR_REPORT_GROUP_SHOWN) {
            sr_rw_printf(w, "      ... %zu more ", size - SR_REPORT_GROUP_SHOWN);
            sr_rw_utf8(w, c->name);
            sr_rw_printf(w, " like these (%zu in all)\n", size);
        }
    }
    if (s->checks_dropped)
        sr_rw_printf(w, "      ... %llu more firings not kept\n",
                     (unsigned long long)s->checks_dropped);
    for (size_t i = 0; i < s->n_expect_checks; i++) {
        if (!sr_report_fired(s, s->expect_checks[i])) {
            sr_rw_puts(w, "      expected check did not fire: ");
            sr_rw_utf8(w, s->expect_checks[i]);
            sr_rw_puts(w, "\n");
        }
    }
    for (size_t i = 0; i < s->n_steps; i++)
        if (s->steps[i].code) {
            sr_rw_printf(w, "      step %d (", s->steps[i].index);
            sr_rw_utf8(w, s->steps[i].kind);
            sr_rw_printf(w, ") stopped: %s\n", sr_report_code_name(s->steps[i].code));
        }
}

/* A scenario's line; in a merged run with the shard that ran it. */
static void line(sr_rw *w, const sr_run_result *run, const sr_scenario_result *s)
{
    if (run->header.merged_of && s->shard)
        sr_rw_printf(w, "[%d/%d] ", s->shard, run->header.merged_of);
    sr_report_line(w, s, 0);
}

static void latency(sr_rw *w, sr_hist *const *phase)
{
    sr_rw_printf(w, "%-12s %9s %10s %10s %10s %10s %10s %10s %10s\n", "latency", "count", "min",
                 "p50", "p90", "p99", "p99.9", "max", "mean");
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        sr_latency_row r;
        sr_report_latency(&r, phase[p]);
        if (!r.count)
            continue;
        const double v[] = {(double)r.min,  (double)r.p50, (double)r.p90, (double)r.p99,
                            (double)r.p999, (double)r.max, r.mean};
        sr_rw_printf(w, "%-12s %9llu", sr_phase_name((sr_phase)p), (unsigned long long)r.count);
        for (size_t i = 0; i < 7; i++) {
            char t[32];
            /* "µ" is two bytes but one column: pad by display width, not bytes. */
            sr_report_fmt_ns(t, sizeof(t), v[i]);
            int extra = strstr(t, "\xC2\xB5") != NULL;
            sr_rw_printf(w, " %*s", 10 + extra, t);
        }
        sr_rw_puts(w, "\n");
    }
}

static void counters(sr_rw *w, const sr_counters *c)
{
    sr_rw_printf(w,
                 "rollouts: %lld requested, %lld verified, %lld failed; turns %lld; attempts "
                 "%lld (%lld retries)\n",
                 (long long)c->rollouts_requested, (long long)c->rollouts_verified,
                 (long long)c->rollouts_failed, (long long)c->turns, (long long)c->attempts,
                 (long long)c->retries);
    sr_rw_printf(w,
                 "bytes: %llu sent, %llu received; verified %lld tokens, %lld route rows; "
                 "%lld collations, %lld syncs\n",
                 (unsigned long long)c->bytes_sent, (unsigned long long)c->bytes_received,
                 (long long)c->tokens_verified, (long long)c->rows_verified,
                 (long long)c->collations, (long long)c->syncs);
}

void sr_report_text(sr_rw *w, const sr_run_result *run)
{
    header(w, run);
    size_t *order = calloc(run->n_scenarios + 1, sizeof(size_t));
    if (!order) {
        w->rc = sr_err_set(w->err, SR_E_NOMEM, "cannot order %zu scenarios", run->n_scenarios);
        return;
    }
    sr_report_order(run, order);
    for (size_t i = 0; i < run->n_scenarios; i++)
        line(w, run, run->scenarios[order[i]]);
    free(order);
    int any = 0;
    for (size_t i = 0; i < run->n_scenarios; i++) {
        const sr_scenario_result *s = run->scenarios[i];
        if (s->verdict != SR_VERDICT_FAIL && s->verdict != SR_VERDICT_ERROR)
            continue;
        if (!any)
            sr_rw_puts(w, "\nfailures:\n");
        any = 1;
        checks(w, s);
    }
    sr_rw_puts(w, "\n");
    latency(w, run->phase);
    sr_rw_puts(w, "\n");
    counters(w, &run->counters);
    sr_rw_printf(w, "wall: %.2f s\n", run->wall_ms / 1000.0);
    if (run->partial) {
        sr_rw_puts(w, "PARTIAL: ");
        sr_rw_utf8(w, run->partial_reason ? run->partial_reason : "the run did not finish");
        sr_rw_printf(w, "; %zu scenario execution(s) did not finish\n",
                     run->counts[SR_VERDICT_INTERRUPTED]);
    }
    sr_report_summary_line(w, run->counts);
}
