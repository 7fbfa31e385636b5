/* The text reporter: summary.txt (report.h). */
#include "report_priv.h"

#include <stdio.h>
#include <string.h>

static void header(sr_rw *w, const sr_run_result *run)
{
    const sr_run_header *h = &run->header;
    sr_rw_puts(w, "syncroll ");
    sr_rw_utf8(w, h->version ? h->version : "?");
    sr_rw_puts(w, "  run ");
    sr_rw_utf8(w, h->run_id ? h->run_id : "?");
    if (h->git_rev)
        sr_rw_printf(w, "  (git %.12s)", h->git_rev);
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
    if (h->n_merged_from) {
        sr_rw_printf(w, "\nmerged from %zu shards:", h->n_merged_from);
        for (size_t i = 0; i < h->n_merged_from; i++) {
            sr_rw_puts(w, " ");
            sr_rw_utf8(w, h->merged_from[i]);
        }
    }
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
    for (size_t i = 0; i < run->n_scenarios; i++)
        sr_report_line(w, run->scenarios[i], 0);
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
