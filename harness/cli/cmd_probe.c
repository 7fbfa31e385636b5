/* syncroll probe: the metamorphic checks (run/meta.h) against an engine someone else runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cmd_run_priv.h"
#include "commands.h"
#include "report/report.h"
#include "run/meta.h"
#include "spec/engine_config.h"
#include "sr_clock.h"

static void usage(FILE *f)
{
    char names[SR_DIALECT_NAMES_MAX];
    fprintf(
        f,
        "usage: syncroll probe [--dialect D] [--sync-dialect S] [--budget N] [--duration S]\n"
        "                      [--seed N] [--model FILE] [--out DIR] URL\n\n"
        "Judges the engine at URL without an oracle: sends it a bounded number of generate\n"
        "requests and checks relations that must hold between the answers whatever the true\n"
        "routes are (the meta.* checks: determinism, prefix consistency, multi-turn prefixes, row\n"
        "counts, value sanity, boundary rows, missing-not-stale routes of an aborted answer, the\n"
        "later SkyRL stack's sample support where the engine speaks it and, with a weight sync,\n"
        "sync effect, cache after sync and version monotonicity; docs/reference/probe.md states\n"
        "each relation). It sends only to URL, one request at a time, and stops by itself: at\n"
        "most N generate requests, and with --model three weight syncs and a few version reads.\n\n"
        "Writes the reports of `syncroll run` (summary.txt, results.json, junit.xml, report.html)\n"
        "into DIR and exits 0 when every relation held, 1 when one failed (each named meta.*\n"
        "check printed with where it failed), 2 for a usage error (a budget too small for\n"
        "detection, answers in no dialect syncroll speaks), 4 when nothing answered at all\n"
        "(the engine is not at URL: its transport error is printed).\n\n"
        "  --dialect D       the engine's generate wire, one of\n"
        "                    %s;\n"
        "                    default: detected from the answers of the engine's generate routes\n"
        "                    (one request per route tried; the choice is printed)\n"
        "  --sync-dialect S  its weight-sync control plane (skyrl, vllm, sglang); default: the\n"
        "                    plane whose version route answers (GET /weight_info: vllm,\n"
        "                    /get_weight_version: sglang, /syncroll/v1/state: skyrl)\n"
        "  --model FILE      the engine config or scenario the engine serves (syncroll's\n"
        "                    engines): the model's vocab, experts, layers and top_k, and its\n"
        "                    synthetic weights. Without it the relations that need a weight\n"
        "                    sync are skipped: the probe never writes weights it did not make.\n"
        "                    The syncs send the weights over syncroll's loopback stand-in for\n"
        "                    the trainer's broadcast, so they run against syncroll's engines\n"
        "                    only: probe a real vLLM or SGLang without --model.\n"
        "                    SGLang's flat routes need it for their layers and top_k.\n"
        "  --budget N        generate requests at most, detection's included, 1..10000\n"
        "                    (default 40)\n"
        "  --duration S      no relation starts after S seconds (default: none)\n"
        "  --seed N          the prompts' seed (default 1)\n"
        "  --out DIR         where the reports go (default probe-report; created)\n",
        sr_dialect_names(names, sizeof names, ", "));
}

typedef struct probe_args {
    const char *url, *model, *out;
    int dialect, plane; /* -1: detect */
    long long budget, seed;
    double duration_s;
} probe_args;

static int bad(const char *opt, const char *v, const char *want)
{
    fprintf(stderr, "syncroll probe: %s: %s '%s': want %s\n", sr_code_name(SR_E_INVAL), opt, v,
            want);
    return -2;
}

/* 0, -1 (print the usage) or -2 (a bad value, named). */
static int parse(probe_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->dialect = a->plane = -1;
    a->budget = 40;
    a->seed = 1;
    a->out = "probe-report";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0)
            return -3;
        if (o[0] != '-') {
            if (a->url)
                return bad("URL", o, "one URL");
            a->url = o;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "syncroll probe: %s: option '%s' needs a value\n",
                    sr_code_name(SR_E_INVAL), o);
            return -1;
        }
        const char *v = argv[++i];
        if (strcmp(o, "--dialect") == 0) {
            if (sr_arg_dialect("probe", o, v, &a->dialect))
                return -2;
        } else if (strcmp(o, "--sync-dialect") == 0) {
            if (sr_arg_sync_dialect("probe", o, v, &a->plane))
                return -2;
        } else if (strcmp(o, "--budget") == 0) {
            if (sr_arg_int(v, 1, 10000, &a->budget))
                return bad(o, v, "an integer in [1, 10000]");
        } else if (strcmp(o, "--duration") == 0) {
            if (sr_arg_double(v, 0.001, 86400, &a->duration_s))
                return bad(o, v, "a number of seconds in [0.001, 86400]");
        } else if (strcmp(o, "--seed") == 0) {
            if (sr_arg_int(v, 0, (long long)1 << 53, &a->seed))
                return bad(o, v, "an integer in [0, 2^53]");
        } else if (strcmp(o, "--model") == 0) {
            a->model = v;
        } else if (strcmp(o, "--out") == 0) {
            a->out = v;
        } else {
            fprintf(stderr, "syncroll probe: %s: unknown option '%s'\n", sr_code_name(SR_E_INVAL),
                    o);
            return -1;
        }
    }
    if (!a->url) {
        fprintf(stderr, "syncroll probe: %s: no URL given\n", sr_code_name(SR_E_INVAL));
        return -1;
    }
    if (strncmp(a->url, "http://", 7) != 0 && strncmp(a->url, "https://", 8) != 0)
        return bad("URL", a->url, "an http:// or https:// URL");
    return 0;
}

/* One client over the URL for dialect d. */
static int make_client(sr_client **out, const probe_args *a, const sr_engine_config *m, int d,
                       int attempts, sr_stack stack, sr_err *err)
{
    sr_client_opts o = SR_CLIENT_OPTS_INIT;
    o.stack = stack;
    o.dialect = (sr_dialect)d;
    o.seed = (uint64_t)a->seed;
    o.max_attempts = attempts;
    o.deadline_ms = 30000;
    o.control_timeout_ms = 10000;
    o.route_layers = m ? m->num_layers : 0;
    o.route_topk = m ? m->topk : 0;
    const char *urls[1] = {a->url};
    return sr_client_new(out, urls, 1, NULL, &o, err);
}

/* The dialect whose own answer this one is, told from its bytes (spec/dialect.h's sniff). *answered
 * is set when the engine answered with any HTTP status; else *fail keeps the transport error. */
static int try_dialect(const probe_args *a, const sr_engine_config *m, int d, const char **why,
                       int64_t *sent, int *answered, sr_err *fail)
{
    sr_client *c = NULL;
    sr_client_conn *k = NULL;
    sr_err e = SR_ERR_INIT;
    int found = -1;
    if (make_client(&c, a, m, d, 1, SR_STACK_2079, &e) || sr_client_conn_new(&k, c, &e)) {
        sr_client_free(c);
        return -1;
    }
    int32_t prompt[4] = {1, 2, 3, 4};
    for (int i = 0; m && m->vocab > 0 && m->vocab <= 4 && i < 4; i++)
        prompt[i] = (int32_t)((i + 1) % m->vocab); /* a tiny model's ids, from --model */
    cJSON *sp = cJSON_CreateObject();
    cJSON_AddNumberToObject(sp, "max_tokens", 2);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = prompt;
    q.n_tokens = 4;
    q.sampling_params = sp;
    q.return_routes = 1;
    q.prompt_start = 0;
    sr_client_conn_capture(k, (size_t)1 << 20);
    sr_client_result res;
    memset(&res, 0, sizeof res); /* a request refused before sending fills nothing */
    sr_client_exchange x = SR_CLIENT_EXCHANGE_INIT;
    (*sent)++;
    if (sr_client_generate(&res, k, &q, &e) && res.http_status == 0 && !fail->code)
        *fail = e;
    if (res.http_status != 0)
        *answered = 1;
    sr_client_conn_take_exchange(k, &x);
    if (res.http_status >= 200 && res.http_status < 300 && x.response.len)
        found = sr_dialect_sniff(x.response.data, x.response.len, why, &e);
    /* skyrl's route is tried last: a 2xx there without any routes (dropped) is still skyrl's. */
    if (found < 0 && d == SR_DIALECT_SKYRL && res.http_status >= 200 && res.http_status < 300) {
        found = d;
        *why = "a 2xx answer (without routes)";
    }
    sr_client_exchange_release(&x);
    cJSON_Delete(sp);
    sr_client_conn_free(k);
    sr_client_free(c);
    return found;
}

/* 1 when an earlier dialect of the table than d has d's first generate path (tried already). */
static int path_tried(int d)
{
    for (int i = 0; i < d; i++)
        if (strcmp(sr_dialect_get((sr_dialect)i)->routes[0].path,
                   sr_dialect_get((sr_dialect)d)->routes[0].path) == 0)
            return 1;
    return 0;
}

/* Tries every dialect's first generate path once, in table order, skyrl's last (syncroll's
 * engines answer /skyrl/v1/generate in every dialect); the answer's bytes name the dialect.
 * Returns the dialect, or the exit status (negated) after printing why there is none: the budget
 * ran out (usage), nothing answered at all (transient: the engine is not there), or the answers
 * were in no dialect syncroll speaks (usage). */
static int detect(const probe_args *a, const sr_engine_config *m, int64_t *sent)
{
    int answered = 0;
    sr_err fail = SR_ERR_INIT;
    for (int i = 1; i <= SR_DIALECT_COUNT; i++) {
        int cand = i % SR_DIALECT_COUNT; /* SR_DIALECT_SKYRL (0) last */
        if (cand && path_tried(cand))
            continue;
        if (*sent >= a->budget && !answered && fail.code)
            break; /* the engine is not there: say that, not that the budget ran out */
        if (*sent >= a->budget) {
            fprintf(stderr,
                    "syncroll probe: %s: the budget of %lld request(s) ran out while "
                    "detecting the dialect (give --dialect, or a larger --budget)\n",
                    sr_code_name(SR_E_INVAL), a->budget);
            return -SR_EXIT_USAGE;
        }
        const char *why = NULL;
        int d = try_dialect(a, m, cand, &why, sent, &answered, &fail);
        if (d >= 0) {
            printf("probe: dialect %s (detected: POST %s answered with %s)\n",
                   sr_dialect_name((sr_dialect)d), sr_dialect_get((sr_dialect)cand)->routes[0].path,
                   why ? why : "its frame");
            return d;
        }
    }
    if (!answered && fail.code) {
        fprintf(stderr, "syncroll probe: %s: %s answered none of the generate routes: %s\n",
                sr_code_name(fail.code), a->url, fail.msg);
        return -SR_EXIT_TRANSIENT;
    }
    fprintf(stderr,
            "syncroll probe: %s: no generate route of %s answered in a dialect "
            "syncroll speaks (give --dialect)\n",
            sr_code_name(SR_E_DIALECT_AMBIGUOUS), a->url);
    return -SR_EXIT_USAGE;
}

/* The control plane whose version route answers, or -1. */
static int detect_plane(const sr_client *c)
{
    static const sr_sync_dialect order[] = {SR_SYNC_DIALECT_VLLM, SR_SYNC_DIALECT_SGLANG,
                                            SR_SYNC_DIALECT_SKYRL};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (sr_meta_engine_version(c, order[i], 0) >= 0)
            return (int)order[i];
    return -1;
}

/* The sync driver when the engine has a plane and --model says what its weights are; else NULL
 * with the reason in *why. */
static sr_sync *make_sync(const probe_args *a, const sr_engine_config *m, const sr_client *c,
                          int *plane, const char **why)
{
    if (*plane < 0)
        *plane = detect_plane(c);
    if (*plane < 0) {
        *why = "the engine exposes no weight-sync control plane (GET /weight_info, "
               "/get_weight_version and /syncroll/v1/state answered none)";
        return NULL;
    }
    printf("probe: weight-sync control plane %s\n", sr_sync_dialect_name((sr_sync_dialect)*plane));
    if (!m) {
        *why = "no --model: the engine's weights are unknown, and the probe never writes weights "
               "it did not make";
        return NULL;
    }
    int64_t v = sr_meta_engine_version(c, (sr_sync_dialect)*plane, m->weight_version);
    if (v < 0) {
        *why = "the engine reports no weight version";
        return NULL;
    }
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    o.transport = SR_SYNC_BROADCAST;
    o.model = m->model_name;
    o.deadline_ms = 30000;
    o.verify = 0; /* judged by the relations, from what any engine shows */
    o.initial_version = v;
    o.control = (sr_sync_dialect)*plane;
    o.workers_cap = 2;
    sr_weights_spec spec = sr_engine_config_weights(m);
    const char *urls[1] = {a->url};
    sr_sync *s = NULL;
    sr_err e = SR_ERR_INIT;
    if (sr_sync_new(&s, urls, 1, &spec, &o, &e)) {
        fprintf(stderr, "syncroll probe: %s: %s\n", sr_code_name(e.code), e.msg);
        *why = "the weight-sync driver could not be made (see the message above)";
        return NULL;
    }
    return s;
}

/* Prints every relation's outcome; returns the failed count. */
static int print_relations(sr_scenario_result *sc)
{
    int n, failed = 0;
    const char *const *names = sr_meta_checks(&n);
    for (int i = 0; i < n; i++) {
        const char *skip = NULL;
        for (size_t j = 0; j < sc->n_skipped; j++)
            if (strcmp(sc->skipped[j].name, names[i]) == 0)
                skip = sc->skipped[j].reason;
        if (sr_result_fired(sc, names[i])) {
            failed++;
            printf("FAILED   %s\n", names[i]);
            for (size_t j = 0; j < sc->n_checks; j++)
                if (strcmp(sc->checks[j].name, names[i]) == 0)
                    printf("         %s\n", sc->checks[j].message);
        } else if (skip) {
            printf("skipped  %s: %s\n", names[i], skip);
        } else {
            printf("held     %s\n", names[i]);
        }
    }
    for (size_t j = 0; j < sc->n_checks; j++)
        if (strncmp(sc->checks[j].name, "meta.", 5) != 0) {
            failed++;
            printf("FAILED   %s: %s\n", sc->checks[j].name, sc->checks[j].message);
        }
    return failed;
}

static int write_reports(sr_run_result *run, const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "syncroll probe: %s: cannot create %s: %s\n", sr_code_name(SR_E_IO), dir,
                strerror(errno));
        return SR_EXIT_USAGE;
    }
    sr_err e = SR_ERR_INIT;
    if (sr_report_write(run, dir, SR_REPORT_ALL, &e)) {
        fprintf(stderr, "syncroll probe: %s: %s\n", sr_code_name(e.code), e.msg);
        return SR_RUN_EXIT_REPORT;
    }
    printf("reports: %s\n", dir);
    return 0;
}

/* The run's header and its one scenario, "probe". */
static int new_run(sr_run_result **run, sr_scenario_result **sc, const probe_args *a, int argc,
                   char **argv)
{
    sr_err e = SR_ERR_INIT;
    if (sr_run_result_new(run, &e) || sr_run_result_add_scenario(sc, *run, &e))
        return e.code ? e.code : SR_E_NOMEM;
    run_args ra;
    memset(&ra, 0, sizeof ra);
    ra.has_seed = 1;
    ra.seed = (uint64_t)a->seed;
    ra.jobs = ra.repeat = 1;
    char id[64];
    snprintf(id, sizeof id, "probe-%ld", (long)getpid());
    if (sr_run_fill_header(&(*run)->header, &ra, argc, argv, id, a->out, &e))
        return e.code;
    sr_scenario_result *s = *sc;
    s->seed = (uint64_t)a->seed;
    s->repeat = 1;
    s->external = 1;
    char repro[1024];
    snprintf(repro, sizeof repro, "syncroll probe --seed %lld %s", a->seed, a->url);
    if (sr_result_set_str(&s->id, "probe", &e) || sr_result_set_str(&s->file, a->url, &e) ||
        sr_result_set_str(&s->repro, repro, &e) ||
        sr_result_set_str(&s->description, "metamorphic checks against an engine", &e))
        return e.code;
    s->engines = calloc(1, sizeof *s->engines);
    if (!s->engines)
        return SR_E_NOMEM;
    s->n_engines = 1;
    s->engines[0].pid = -1;
    return sr_result_set_str(&s->engines[0].url, a->url, &e);
}

/* Runs the relations and fills the verdict; returns the exit status. */
static int probe(const probe_args *a, const sr_engine_config *m, int argc, char **argv)
{
    double t0 = sr_clock_ms();
    int64_t detect_sent = 0;
    int d = a->dialect >= 0 ? a->dialect : detect(a, m, &detect_sent);
    if (d < 0)
        return -d; /* detect said why */
    if (sr_dialect_get((sr_dialect)d)->encoding == SR_ENC_FLAT_B64 && !m) {
        fprintf(stderr, "syncroll probe: %s: %s's flat routes carry no shape: give --model\n",
                sr_code_name(SR_E_INVAL), sr_dialect_name((sr_dialect)d));
        return SR_EXIT_USAGE;
    }
    sr_run_result *run = NULL;
    sr_scenario_result *sc = NULL;
    sr_client *c = NULL, *c2086 = NULL;
    sr_err e = SR_ERR_INIT;
    int plane = a->plane, st = SR_EXIT_USAGE;
    /* One attempt per generate: a retry would be a request the budget does not count. */
    if (new_run(&run, &sc, a, argc, argv) || make_client(&c, a, m, d, 1, SR_STACK_2079, &e)) {
        fprintf(stderr, "syncroll probe: %s: %s\n", sr_code_name(e.code ? e.code : SR_E_NOMEM),
                e.msg);
        goto out;
    }
    sr_meta_opts o = SR_META_OPTS_INIT;
    o.no_stack = "the dialect is not skyrl: only SkyRL's wire has sample-support capture";
    /* meta.stack_contract's own client speaks the later stack: its capture requests find out
     * whether the engine does (one attempt: the 400 it may be owed is never retried). */
    if (d == SR_DIALECT_SKYRL && make_client(&c2086, a, m, d, 1, SR_STACK_2086, &e)) {
        fprintf(stderr, "syncroll probe: %s: %s\n", sr_code_name(e.code), e.msg);
        goto out;
    }
    o.stack_client = c2086;
    o.dialect = (sr_dialect)d;
    o.seed = (uint64_t)a->seed;
    o.budget = a->budget - detect_sent; /* detection's requests count too */
    o.deadline_ms = a->duration_s > 0 ? t0 + a->duration_s * 1000 : 0;
    o.vocab = m ? m->vocab : 0;
    o.experts = m ? m->experts : 0;
    o.sync = make_sync(a, m, c, &plane, &o.no_sync);
    o.content = m ? m->weight_version : 0;
    o.plane = plane >= 0 ? (sr_sync_dialect)plane : SR_SYNC_DIALECT_SKYRL;
    sr_meta_stats stats;
    int rc = sr_meta_run(sc, c, &o, &stats, &e);
    sr_sync_free(o.sync);
    if (rc) {
        fprintf(stderr, "syncroll probe: %s: %s\n", sr_code_name(rc), e.msg);
        st = SR_EXIT_FAIL;
        sr_result_set_verdict(sc, SR_VERDICT_ERROR, "%s", e.msg);
    }
    int failed = print_relations(sc);
    printf("%d held, %d failed, %d skipped (%lld requests, %lld syncs)\n", stats.held, failed,
           stats.skipped, (long long)(stats.requests + detect_sent), (long long)stats.syncs);
    if (!rc) {
        st = failed ? SR_EXIT_FAIL : SR_EXIT_OK;
        sr_result_set_verdict(sc, failed ? SR_VERDICT_FAIL : SR_VERDICT_PASS,
                              failed ? "%d relation(s) failed" : NULL, failed);
    }
    sc->wall_ms = sr_clock_ms() - t0;
    sr_run_result_finish(run, sc->wall_ms);
    int wr = write_reports(run, a->out);
    st = wr && !st ? wr : st;
out:
    sr_client_free(c2086);
    sr_client_free(c);
    sr_run_result_free(run);
    return st;
}

int sr_cmd_probe(int argc, char **argv)
{
    probe_args a;
    int rc = parse(&a, argc, argv);
    if (rc == -3) {
        usage(stdout);
        return SR_EXIT_OK;
    }
    if (rc) {
        if (rc == -1)
            usage(stderr);
        return SR_EXIT_USAGE;
    }
    sr_engine_config m;
    sr_err e = SR_ERR_INIT;
    if (a.model && sr_engine_config_load(&m, a.model, 0, &e)) {
        fprintf(stderr, "syncroll probe: %s: %s\n", sr_code_name(e.code), e.msg);
        return SR_EXIT_USAGE;
    }
    rc = probe(&a, a.model ? &m : NULL, argc, argv);
    if (a.model)
        sr_engine_config_release(&m);
    return rc;
}
