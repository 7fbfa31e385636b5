/* syncroll proxy: a recording, fault-injecting HTTP proxy in front of an engine (proxy/proxy.h). */
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "proxy/capture.h"
#include "proxy/proxy.h"
#include "signals.h"
#include "sr_buf.h"

static const char USAGE[] =
    "usage: syncroll proxy --upstream URL [--listen ADDR:PORT] [--record DIR]\n"
    "                      [--redact-prompts] [--fault JSON]... [--seed N]\n"
    "                      [--dialect D] [--max-request-bytes N] [--max-rewrite-bytes N]\n"
    "\n"
    "A transparent HTTP proxy in front of one engine (a real one or `syncroll serve`): every\n"
    "request is forwarded to URL (http://HOST:PORT) unchanged and every answer streamed back as\n"
    "its bytes arrive. It prints one JSON line once it listens,\n"
    "  {\"proxy\":{\"url\":\"http://127.0.0.1:PORT\",\"upstream\":\"...\",\"record\":DIR|null}}\n"
    "and runs until SIGINT, SIGTERM or SIGHUP: exit 0, or 1 when the capture could not record\n"
    "an exchange whole (a body or index line not written: each is named on standard error and\n"
    "marked \"complete\": false). It sends nothing on its own: only what\n"
    "its clients send, to URL. GET /syncroll/v1/proxy answers its own state (exchanges, faults\n"
    "seen and fired) and is not forwarded.\n"
    "\n"
    "  --upstream URL       the engine: http://HOST:PORT, no path (https is not proxied)\n"
    "  --listen ADDR:PORT   where to listen (default 127.0.0.1:0; port 0 picks a free one)\n"
    "  --record DIR         write a capture into DIR (created; it must hold no capture yet):\n"
    "                       DIR/capture.jsonl, one line per exchange, and DIR/bodies/, every\n"
    "                       request and response body as a zstd frame\n"
    "                       (docs/reference/proxy.md); `syncroll replay --list DIR` reads it\n"
    "  --redact-prompts     the capture keeps the prompts' token ids as zeros (token_ids,\n"
    "                       prompt_token_ids, input_ids of a JSON request); the engine still\n"
    "                       gets the real request\n"
    "  --fault JSON         a fault object (scenarios/FORMAT.md, docs/reference/faults.md) of\n"
    "                       the delay, http or transport layer, or a route fault of the fault\n"
    "                       grammar (\"routes\" and its aliases, e.g. routes_all_zero), applied\n"
    "                       to the traffic with the engine's selection rules (endpoints, nth,\n"
    "                       turn by X-Session-ID, probability, count); repeatable. A\n"
    "                       body-shaping fault (truncate*, stall_mid_body, dribble) reads its\n"
    "                       answer whole before cutting it; a route fault reads it whole and\n"
    "                       rewrites its routes in the answer's own wire. Other faults are\n"
    "                       fault.invalid_spec (exit 2)\n"
    "  --seed N             seed of the probability and latency draws (default 1)\n"
    "  --dialect D          the upstream's generate wire (spec/dialect.h; default skyrl):\n"
    "                       its generate routes count as the endpoint generate for --fault,\n"
    "                       as `syncroll serve --dialect D` counts them\n"
    "  --max-request-bytes N  larger request bodies are answered 413 (default 64 MiB)\n"
    "  --max-rewrite-bytes N  the longest answer a route fault reads whole and rewrites\n"
    "                       (default 256 MiB); a longer one is streamed on unchanged, named\n"
    "                       on standard error and counted in routes_unchanged\n";

typedef struct proxy_args {
    sr_proxy_config cfg;
    const char *record;
    sr_buf plan; /* "[fault,fault,...]" */
} proxy_args;

static int bad(const char *what, const char *v)
{
    fprintf(stderr, "syncroll proxy: usage.invalid_argument: %s '%s' (see --help)\n", what,
            v ? v : "");
    return SR_EXIT_USAGE;
}

static int parse_listen(proxy_args *a, char *v)
{
    char *colon = strrchr(v, ':');
    long long port;
    if (!colon || sr_arg_int(colon + 1, 0, 65535, &port))
        return bad("bad --listen", v);
    *colon = '\0';
    a->cfg.listen_addr = v;
    a->cfg.port = (int)port;
    return 0;
}

static int parse_args(proxy_args *a, int argc, char **argv)
{
    sr_err err = SR_ERR_INIT;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        if (strcmp(o, "--redact-prompts") == 0) {
            a->cfg.redact = 1;
            continue;
        }
        if (!v || o[0] != '-')
            return bad(o[0] == '-' ? "option needs a value:" : "unexpected argument", o);
        i++;
        if (strcmp(o, "--upstream") == 0)
            a->cfg.upstream = v;
        else if (strcmp(o, "--listen") == 0) {
            if (parse_listen(a, v))
                return SR_EXIT_USAGE;
        } else if (strcmp(o, "--record") == 0)
            a->record = v;
        else if (strcmp(o, "--fault") == 0) {
            if (sr_buf_puts(&a->plan, a->plan.len ? "," : "[", &err) ||
                sr_buf_puts(&a->plan, v, &err))
                return bad("no memory for", o);
        } else if (strcmp(o, "--seed") == 0) {
            if (sr_arg_int(v, 0, LLONG_MAX, &n))
                return bad("bad --seed", v);
            a->cfg.seed = (uint64_t)n;
        } else if (strcmp(o, "--dialect") == 0) {
            if (sr_arg_dialect("proxy", o, v, &a->cfg.dialect))
                return SR_EXIT_USAGE;
        } else if (strcmp(o, "--max-request-bytes") == 0) {
            if (sr_arg_int(v, 1, 1LL << 30, &n))
                return bad("bad --max-request-bytes (1 .. 1 GiB)", v);
            a->cfg.max_request_bytes = (size_t)n;
        } else if (strcmp(o, "--max-rewrite-bytes") == 0) {
            if (sr_arg_int(v, 1, 1LL << 30, &n))
                return bad("bad --max-rewrite-bytes (1 .. 1 GiB)", v);
            a->cfg.max_rewrite_bytes = (size_t)n;
        } else
            return bad("unknown option", o);
    }
    if (!a->cfg.upstream)
        return bad("missing --upstream", "");
    return 0;
}

/* Runs until a stop signal; returns the exit status. */
static int serve_until_stopped(sr_proxy *p, const proxy_args *a, sr_signals *sig)
{
    sr_buf line = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    int rc = sr_buf_puts(&line, "{\"proxy\":{\"url\":", &err);
    if (!rc)
        rc = sr_buf_put_json_string(&line, sr_proxy_url(p), &err);
    if (!rc)
        rc = sr_buf_puts(&line, ",\"upstream\":", &err);
    if (!rc)
        rc = sr_buf_put_json_string(&line, a->cfg.upstream, &err);
    if (!rc)
        rc = sr_buf_puts(&line, ",\"record\":", &err);
    if (!rc)
        rc = a->record ? sr_buf_put_json_string(&line, a->record, &err)
                       : sr_buf_puts(&line, "null", &err);
    if (!rc) {
        printf("%s}}\n", line.data);
        fflush(stdout);
    }
    sr_buf_release(&line);
    for (;;) {
        struct pollfd pfd = {sig->fd, POLLIN, 0};
        if (poll(&pfd, 1, -1) < 0)
            continue;
        int s = sr_signals_next(sig);
        if (s > 0)
            return SR_EXIT_OK;
    }
}

int sr_cmd_proxy(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(USAGE, stdout);
        return SR_EXIT_OK;
    }
    proxy_args a;
    memset(&a, 0, sizeof a);
    a.cfg.seed = 1;
    int status = parse_args(&a, argc, argv);
    sr_err err = SR_ERR_INIT;
    sr_fault_plan *plan = NULL;
    sr_capture_writer *w = NULL;
    sr_proxy *p = NULL;
    sr_signals sig;
    int rc = 0;
    if (status) {
        sr_buf_release(&a.plan);
        return status;
    }
    if (a.plan.len && (rc = sr_buf_puts(&a.plan, "]", &err)) == 0)
        rc = sr_fault_plan_parse_text(&plan, a.plan.data, a.plan.len, &err);
    a.cfg.faults = plan;
    if (!rc)
        rc = sr_proxy_check_faults(plan, &err);
    /* Stop signals are read from a signalfd before any thread starts (signals.h). */
    if (!rc)
        rc = sr_signals_open(&sig, SR_SIG_STOP | SR_SIG_HANGUP, &err);
    int sig_open = !rc;
    if (!rc && a.record)
        rc = sr_capture_writer_open(&w, a.record, a.cfg.upstream, a.cfg.redact, &err);
    a.cfg.record = w;
    if (!rc)
        rc = sr_proxy_start(&p, &a.cfg, &err);
    if (rc) {
        fprintf(stderr, "syncroll proxy: %s: %s\n", sr_code_name(rc), err.msg);
        status = rc == SR_E_ENGINE_START || rc == SR_E_NOMEM ? SR_EXIT_FAIL : SR_EXIT_USAGE;
    } else {
        status = serve_until_stopped(p, &a, &sig);
    }
    int64_t lost = sr_proxy_stop(p);
    if (lost > 0) {
        /* The traffic went through, but the capture is not what it claims to be. */
        fprintf(stderr,
                "syncroll proxy: io.error: %lld exchange(s) were not recorded whole (see the "
                "lines above; they are marked \"complete\": false in the capture)\n",
                (long long)lost);
        status = SR_EXIT_FAIL;
    }
    if (sr_capture_writer_close(w, &err)) {
        fprintf(stderr, "syncroll proxy: %s: %s\n", sr_code_name(err.code), err.msg);
        status = SR_EXIT_FAIL;
    }
    if (sig_open)
        sr_signals_close(&sig);
    sr_fault_plan_free(plan);
    sr_buf_release(&a.plan);
    return status;
}
