/*
 * A synthetic run for the reporter tests (test_report.c, report_fixture.c): five scenario
 * executions in three folders covering every verdict, with hostile text (XML metacharacters,
 * a control character, invalid UTF-8) in ids, messages and the command line, step timings,
 * engines and latency samples. `scale` multiplies every latency (baselines); `out_dir` becomes
 * the header's run folder.
 */
#ifndef SR_REPORT_SYNTH_H
#define SR_REPORT_SYNTH_H

#include <stdlib.h>
#include <string.h>

#include "report/result.h"

#define SYNTH_HOSTILE_ID "row-mismatch <&>\"'"

static uint64_t synth_rng(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static char **synth_strv(size_t *n, const char *a, const char *b)
{
    char **v = calloc(3, sizeof(char *));
    *n = 0;
    if (a)
        v[(*n)++] = strdup(a);
    if (b)
        v[(*n)++] = strdup(b);
    return v;
}

static void synth_steps(sr_scenario_result *s, double wall, int code)
{
    static const char *const kinds[] = {"rollout", "sync_weights", "collate", "mystery"};
    s->steps = calloc(4, sizeof(sr_step_timing));
    s->n_steps = 4;
    for (int i = 0; i < 4; i++) {
        sr_step_timing *t = &s->steps[i];
        t->index = i;
        snprintf(t->kind, sizeof(t->kind), "%s", kinds[i]);
        snprintf(t->name, sizeof(t->name), "%s", i == 0 ? "batch<1>" : "");
        t->start_ms = wall * i / 4.0;
        t->end_ms = i == 3 && code ? -1 : wall * (i + 1) / 4.0 - 0.5;
        t->code = i == 3 ? code : 0;
    }
}

/* Log-uniform latencies around `typ` ns, times scale. */
static void synth_phases(sr_scenario_result *s, uint64_t seed, double scale)
{
    static const double typ[SR_PHASE_COUNT] = {2e6, 3e4, 2e3, 5e4, 8e5, 4e7, 2e7, 9e7, 3e8};
    uint64_t st = seed;
    for (int p = 0; p < SR_PHASE_COUNT; p++) {
        int n = p == SR_PHASE_SCENARIO ? 1 : 40 + p * 7;
        for (int i = 0; i < n; i++) {
            double u = (double)(synth_rng(&st) >> 11) * 0x1p-53;
            sr_result_record(s, (sr_phase)p, (uint64_t)(typ[p] * scale * (0.5 + 2 * u * u)));
        }
    }
}

static void synth_engine(sr_scenario_result *s, const char *dir)
{
    char log[512];
    snprintf(log, sizeof(log), "%s/artifacts/%s/engine-0.log", dir, s->id);
    s->engines = calloc(1, sizeof(sr_engine_run));
    s->n_engines = 1;
    s->engines[0].index = 0;
    s->engines[0].pid = 4242;
    s->engines[0].url = strdup("http://127.0.0.1:40123");
    s->engines[0].log = strdup(log);
    s->engines[0].exit = strdup("stopped");
}

static sr_scenario_result *synth_add(sr_run_result *run, const char *id, const char *file,
                                     int repeat, double start, double wall)
{
    sr_scenario_result *s = NULL;
    if (sr_run_result_add_scenario(&s, run, NULL))
        abort();
    sr_result_set_str(&s->id, id, NULL);
    sr_result_set_str(&s->file, file, NULL);
    sr_result_set_str(&s->description, "synthetic", NULL);
    s->tags = synth_strv(&s->n_tags, "nightly", NULL);
    s->seed = 7;
    s->repeat = repeat;
    s->start_ms = start;
    s->wall_ms = wall;
    char buf[600];
    snprintf(buf, sizeof(buf), "syncroll run %s --seed 7", file);
    sr_result_set_str(&s->repro, buf, NULL);
    snprintf(buf, sizeof(buf), "%s/scenarios/%s.json", run->header.out_dir, id);
    sr_result_set_str(&s->expanded, buf, NULL);
    return s;
}

static void synth_header(sr_run_header *h, const char *out_dir)
{
    sr_result_set_str(&h->version, "0.1.0", NULL);
    sr_result_set_str(&h->git_rev, "0123456789abcdef0123456789abcdef01234567", NULL);
    sr_result_set_str(&h->run_id, "20250131-120000-42", NULL);
    sr_result_set_str(&h->out_dir, out_dir, NULL);
    sr_result_set_str(&h->hostname, "ci<&>host", NULL);
    sr_result_set_str(&h->kernel, "Linux 6.1.0", NULL);
    sr_result_set_str(&h->arch, "x86_64", NULL);
    sr_result_set_str(&h->command, "syncroll run --tag \"a&b\" scenarios", NULL);
    h->cpus = 2;
    h->has_seed = 1;
    h->seed = 7;
    h->jobs = 2;
    h->repeat = 1;
    h->tags = synth_strv(&h->n_tags, "nightly", NULL);
    h->exclude_tags = synth_strv(&h->n_exclude_tags, NULL, NULL);
    h->start_unix_ms = 1738324800000;
    snprintf(h->start_iso, sizeof(h->start_iso), "2025-01-31T12:00:00Z");
}

/* The run; the caller frees it with sr_run_result_free. */
static sr_run_result *synth_run(const char *out_dir, double scale)
{
    sr_run_result *run = NULL;
    if (sr_run_result_new(&run, NULL))
        abort();
    synth_header(&run->header, out_dir);
    sr_counters c = {4, 3, 1, 8, 9, 1, 1234, 567890, 64, 256, 1, 1};

    sr_scenario_result *a = synth_add(run, "minimal", "scenarios/nightly/minimal.json", 1, 0, 120);
    synth_steps(a, 120, 0);
    synth_phases(a, 1, scale);
    sr_result_count(a, &c);

    sr_scenario_result *b =
        synth_add(run, SYNTH_HOSTILE_ID, "scenarios/bugs/row.json", 1, 120, 340.5);
    b->expect_checks = synth_strv(&b->n_expect_checks, "sync.partial_update", NULL);
    b->expect_verdict = SR_VERDICT_FAIL;
    synth_steps(b, 340.5, 0);
    synth_phases(b, 2, scale);
    synth_engine(b, out_dir);
    sr_check_where w = {0, 1, 1, 2, 41, 3};
    sr_result_check(b, "trace.row_mismatch", "off_by_one", &w,
                    "sample 1 turn 2 row 41 layer 3: got <3,7> & want \x01 \xff [5,1]");
    sr_result_check(b, "trace.row_mismatch", "off_by_one", NULL, "second firing");
    sr_result_skip_check(b, "trace.oracle", "external engines: no oracle");
    sr_result_set_verdict(b, SR_VERDICT_FAIL, "unexpected check trace.row_mismatch <x>");
    char art[600];
    snprintf(art, sizeof(art), "%s/artifacts/%s", out_dir, SYNTH_HOSTILE_ID);
    sr_result_set_str(&b->artifacts, art, NULL);
    sr_result_count(b, &c);

    sr_scenario_result *e =
        synth_add(run, "engine-spawn", "scenarios/faults/http/spawn.json", 1, 460.5, 15);
    synth_steps(e, 15, SR_E_PROC_SPAWN);
    sr_result_set_verdict(e, SR_VERDICT_ERROR, "cannot spawn engine 0: No such file");

    sr_scenario_result *k =
        synth_add(run, "external", "scenarios/nightly/external.json", 1, 475.5, 0);
    sr_result_set_verdict(k, SR_VERDICT_SKIP, "needs engines at engines.urls");

    sr_scenario_result *r = synth_add(run, "minimal", "scenarios/nightly/minimal.json", 2, 480, 99);
    synth_steps(r, 99, 0);
    synth_phases(r, 3, scale);
    sr_result_count(r, &c);

    sr_run_result_finish(run, 600.25);
    return run;
}

#endif /* SR_REPORT_SYNTH_H */
