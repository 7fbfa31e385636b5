/* syncroll replay: list, dump, judge or play back a capture of `syncroll proxy --record`, or
 * turn it into a scenario. */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "cmd_replay_priv.h"
#include "commands.h"
#include "proxy/capture.h"
#include "proxy/replay_serve.h"
#include "signals.h"
#include "sr_buf.h"

static const char USAGE[] =
    "usage: syncroll replay [--dialect D] [--out DIR] CAPTURE\n"
    "       syncroll replay --list [--json] [--no-verify] CAPTURE\n"
    "       syncroll replay --body SEQ:req|SEQ:resp CAPTURE\n"
    "       syncroll replay --serve [--listen ADDR:PORT] CAPTURE\n"
    "       syncroll replay --to-scenario [--expect-found] [--dialect D] CAPTURE OUT\n"
    "\n"
    "Reads a capture that `syncroll proxy --record CAPTURE` wrote (docs/reference/proxy.md).\n"
    "With --list it lists its exchanges in the order they arrived: sequence number, start\n"
    "time (ms since the capture began), session (X-Session-ID), method and URI, status,\n"
    "request and response bytes, whether the exchange completed, and the proxy fault that\n"
    "fired. Every body is decompressed and checked against its recorded size and xxh3 digest\n"
    "unless --no-verify.\n"
    "A capture is untrusted input: a damaged one is a named error (capture.version,\n"
    "capture.truncated, capture.corrupt, capture.body; exit 2), never a crash.\n"
    "\n"
    "Without --list, --body, --serve or --to-scenario it judges the capture with no engine:\n"
    "every body is first checked against its size and digest (a damaged capture is its named\n"
    "error, exit 2), then every session\n"
    "(X-Session-ID) is run as a rollout of syncroll's own client against the capture played\n"
    "back in-process, so each generate answer is spliced and validated as the client does in\n"
    "the capture's dialect (--dialect, else told from the answers as check-body does), the\n"
    "routes are assembled into the session's trace with the prompt-start arithmetic (turn 1's\n"
    "request gives the prompt, each later request the conversation) and finalized, and the\n"
    "contract checks run; the finished sessions are collated as one batch (entry \"collate\").\n"
    "One line per session, then \"N passed, N failed\"; with --out the\n"
    "reports `run` writes (summary.txt, results.json, junit.xml, report.html) go into DIR.\n"
    "Exit 0 every session passed, 1 one failed (the line names the check), 2 a usage or\n"
    "capture error, 3 a report could not be written.\n"
    "\n"
    "With --serve it plays the capture back as an engine: it prints one JSON line once it\n"
    "listens, {\"replay\":{\"url\":\"http://127.0.0.1:PORT\",\"capture\":DIR,\"exchanges\":N}},\n"
    "and answers each request with the recorded status, Content-Type and response bytes of\n"
    "the exchange it matches: the n-th request of a session (X-Session-ID) to an endpoint\n"
    "gets the n-th such exchange; other requests the exchanges of the same method, URI and\n"
    "body, in order. A request with no match is answered 404 replay.no_match. It runs until\n"
    "SIGINT, SIGTERM or SIGHUP (exit 0).\n"
    "\n"
    "With --to-scenario it writes a golden-fixture scenario into folder OUT, which must not\n"
    "exist or be empty (else replay.out_not_empty): the capture's index and the body files it\n"
    "names, copied byte for byte into OUT/fixtures/capture/, and OUT/<id>.json (<id> from\n"
    "OUT's name), a scenario with one step {\"kind\": \"replay\", \"capture\":\n"
    "\"fixtures/capture\", \"dialect\": D} that judges the copy as above when `syncroll run`\n"
    "runs it, and {\"expect\": {\"verdict\": \"pass\"}}: a capture in which judging finds a defect\n"
    "becomes a failing case, and `syncroll run` fails it naming the check (e.g.\n"
    "routes.invalid), the session, turn, row and layer. With --expect-found the expect states\n"
    "what judging found instead (\"fail\" with exactly the checks that fired: the bug\n"
    "catalogue's *.defect.json form, which passes while syncroll keeps finding the defect in\n"
    "those bytes). The description names the upstream\n"
    "and the proxy faults that fired in the capture. It prints what it wrote; exit 0 written,\n"
    "2 a usage or capture error (nothing is left behind), 3 a file could not be written.\n"
    "\n"
    "  --list        list the exchanges\n"
    "  --json        one JSON object: {\"upstream\",\"redacted\",\"exchanges\":[...]}\n"
    "  --no-verify   do not read the bodies\n"
    "  --body SEQ:req|SEQ:resp\n"
    "                write exchange SEQ's request or response body to standard output, as\n"
    "                the client sent it or the engine answered it (checked against its\n"
    "                digest), e.g. to pipe into `syncroll check-body -`\n"
    "  --dialect D   the capture's wire, a dialect of `check-body --help` (default: told\n"
    "                from the answers)\n"
    "  --out DIR     write the judged run's reports into DIR (created)\n"
    "  --serve       play the capture back as an engine\n"
    "  --to-scenario write the capture as a scenario into OUT (the argument after CAPTURE)\n"
    "  --expect-found  with --to-scenario: expect what judging found, not a pass\n"
    "  --listen ADDR:PORT\n"
    "                where --serve listens (default 127.0.0.1:0; port 0 picks a free one)\n";

/* Bodies are read to check them; none a proxy records is larger. */
#define REPLAY_MAX_BODY ((size_t)4 << 30)

static cJSON *exchange_json(const sr_capture_exchange *x)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seq", (double)x->seq);
    cJSON_AddNumberToObject(o, "t_start_ms", (double)x->t_start_us / 1000.0);
    x->session[0] ? (void)cJSON_AddStringToObject(o, "session", x->session)
                  : (void)cJSON_AddNullToObject(o, "session");
    cJSON_AddStringToObject(o, "method", x->method);
    cJSON_AddStringToObject(o, "uri", x->uri);
    x->endpoint[0] ? (void)cJSON_AddStringToObject(o, "endpoint", x->endpoint)
                   : (void)cJSON_AddNullToObject(o, "endpoint");
    cJSON_AddNumberToObject(o, "status", x->status);
    cJSON_AddNumberToObject(o, "request_bytes", (double)x->request.bytes);
    cJSON_AddNumberToObject(o, "response_bytes", (double)x->response.bytes);
    cJSON_AddBoolToObject(o, "complete", x->complete);
    x->fault[0] ? (void)cJSON_AddStringToObject(o, "fault", x->fault)
                : (void)cJSON_AddNullToObject(o, "fault");
    return o;
}

static int verify(const sr_capture *c, sr_err *err)
{
    sr_buf b = SR_BUF_INIT;
    b.max = REPLAY_MAX_BODY;
    int rc = 0;
    for (size_t i = 0; !rc && i < sr_capture_count(c); i++) {
        const sr_capture_exchange *x = sr_capture_at(c, i);
        rc = sr_capture_read_body(c, &x->request, &b, REPLAY_MAX_BODY, err);
        if (!rc)
            rc = sr_capture_read_body(c, &x->response, &b, REPLAY_MAX_BODY, err);
        if (rc)
            sr_err_prefix(err, "exchange %" PRId64, x->seq);
    }
    sr_buf_release(&b);
    return rc;
}

/* --body SEQ:req|SEQ:resp: one body, verified, to standard output. */
static int dump_body(const sr_capture *c, const char *spec, sr_err *err)
{
    char kind[8] = "";
    long long seq = 0;
    int used = 0;
    if (sscanf(spec, "%lld:%7[a-z]%n", &seq, kind, &used) != 2 || spec[used] ||
        (strcmp(kind, "req") != 0 && strcmp(kind, "resp") != 0))
        return sr_err_set(err, SR_E_INVAL, "--body '%s' is not SEQ:req or SEQ:resp", spec);
    for (size_t i = 0; i < sr_capture_count(c); i++) {
        const sr_capture_exchange *x = sr_capture_at(c, i);
        if (x->seq != seq)
            continue;
        sr_buf b = SR_BUF_INIT;
        b.max = REPLAY_MAX_BODY;
        int rc = sr_capture_read_body(c, strcmp(kind, "req") == 0 ? &x->request : &x->response, &b,
                                      REPLAY_MAX_BODY, err);
        if (!rc && b.len && fwrite(b.data, 1, b.len, stdout) != b.len)
            rc = sr_err_set(err, SR_E_IO, "cannot write the body to standard output");
        sr_buf_release(&b);
        return rc;
    }
    return sr_err_set(err, SR_E_INVAL, "the capture has no exchange %lld", seq);
}

/* --serve: the capture as an engine until a stop signal (replay_serve.h). */
static int serve(const sr_capture *c, const char *dir, char *listen)
{
    sr_replay_serve_config cfg = {.capture = c};
    sr_err err = SR_ERR_INIT;
    if (listen) {
        char *colon = strrchr(listen, ':');
        long long port;
        if (!colon || sr_arg_int(colon + 1, 0, 65535, &port)) {
            fprintf(stderr, "syncroll replay: usage.invalid_argument: bad --listen '%s'\n", listen);
            return SR_EXIT_USAGE;
        }
        *colon = '\0';
        cfg.listen_addr = listen;
        cfg.port = (int)port;
    }
    /* Stop signals are read from a signalfd before any thread starts (signals.h). */
    sr_signals sig;
    sr_replay_serve *s = NULL;
    int rc = sr_signals_open(&sig, SR_SIG_STOP | SR_SIG_HANGUP, &err);
    int sig_open = !rc;
    if (!rc)
        rc = sr_replay_serve_start(&s, &cfg, &err);
    sr_buf line = SR_BUF_INIT;
    if (!rc)
        rc = sr_buf_puts(&line, "{\"replay\":{\"url\":", &err);
    if (!rc)
        rc = sr_buf_put_json_string(&line, sr_replay_serve_url(s), &err);
    if (!rc)
        rc = sr_buf_puts(&line, ",\"capture\":", &err);
    if (!rc)
        rc = sr_buf_put_json_string(&line, dir, &err);
    if (!rc) {
        printf("%s,\"exchanges\":%zu}}\n", line.data, sr_capture_count(c));
        fflush(stdout);
    }
    sr_buf_release(&line);
    int status = SR_EXIT_OK;
    if (rc) {
        fprintf(stderr, "syncroll replay: %s: %s\n", sr_code_name(rc), err.msg);
        status = rc == SR_E_ENGINE_START || rc == SR_E_NOMEM ? SR_EXIT_FAIL : SR_EXIT_USAGE;
    }
    while (!rc) {
        struct pollfd pfd = {sig.fd, POLLIN, 0};
        if (poll(&pfd, 1, -1) >= 0 && sr_signals_next(&sig) > 0)
            break;
    }
    sr_replay_serve_stop(s);
    if (sig_open)
        sr_signals_close(&sig);
    return status;
}

int sr_cmd_replay(int argc, char **argv)
{
    int list = 0, json = 0, check = 1, serving = 0, to_scn = 0, expect_found = 0;
    const char *dir = NULL, *body = NULL, *out = NULL, *scn_out = NULL;
    int dialect = -1;
    char *listen = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(USAGE, stdout);
            return SR_EXIT_OK;
        } else if (strcmp(argv[i], "--list") == 0)
            list = 1;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--no-verify") == 0)
            check = 0;
        else if (strcmp(argv[i], "--serve") == 0)
            serving = 1;
        else if (strcmp(argv[i], "--to-scenario") == 0)
            to_scn = 1;
        else if (strcmp(argv[i], "--expect-found") == 0)
            expect_found = 1;
        else if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen = argv[++i];
        else if (strcmp(argv[i], "--body") == 0 && i + 1 < argc)
            body = argv[++i];
        else if (strcmp(argv[i], "--dialect") == 0 && i + 1 < argc) {
            if (sr_arg_dialect("replay", argv[i], argv[i + 1], &dialect))
                return SR_EXIT_USAGE;
            i++;
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (dir && !scn_out && argv[i][0] != '-')
            scn_out = argv[i]; /* OUT of --to-scenario (refused below without it) */
        else if (argv[i][0] == '-' || dir) {
            fprintf(stderr,
                    "syncroll replay: unknown option or second capture '%s' (see "
                    "--help)\n",
                    argv[i]);
            return SR_EXIT_USAGE;
        } else
            dir = argv[i];
    }
    int modes = list + !!body + serving + to_scn;
    if (!dir || modes > 1 || (listen && !serving) || (out && modes) ||
        (dialect >= 0 && modes - to_scn) || (to_scn && !scn_out) || (scn_out && !to_scn) ||
        (expect_found && !to_scn)) {
        fprintf(stderr, "syncroll replay: %s (see --help)\n",
                !dir                 ? "no capture folder"
                : modes > 1          ? "--list, --body, --serve and --to-scenario are exclusive"
                : listen && !serving ? "--listen goes with --serve"
                : to_scn && !scn_out ? "--to-scenario needs CAPTURE and OUT"
                : scn_out && !to_scn ? "a second folder goes with --to-scenario only"
                : expect_found && !to_scn ? "--expect-found goes with --to-scenario"
                                     : "--dialect goes with judging and --to-scenario, --out "
                                       "with judging");
        return SR_EXIT_USAGE;
    }
    sr_err err = SR_ERR_INIT;
    sr_capture *c = NULL;
    int rc = sr_capture_open(&c, dir, &err);
    if (!rc && !modes) {
        int status = sr_replay_judge(c, dialect, out);
        sr_capture_free(c);
        return status;
    }
    if (!rc && to_scn) {
        int status = sr_replay_to_scenario(c, dir, scn_out, dialect, expect_found);
        sr_capture_free(c);
        return status;
    }
    if (!rc && serving) {
        int status = serve(c, dir, listen);
        sr_capture_free(c);
        return status;
    }
    if (!rc && body) {
        rc = dump_body(c, body, &err);
        if (rc)
            fprintf(stderr, "syncroll replay: %s: %s\n", sr_code_name(rc), err.msg);
        sr_capture_free(c);
        return rc ? (rc == SR_E_NOMEM ? SR_EXIT_FAIL : SR_EXIT_USAGE) : SR_EXIT_OK;
    }
    if (!rc && check)
        rc = verify(c, &err);
    if (rc) {
        fprintf(stderr, "syncroll replay: %s: %s\n", sr_code_name(rc), err.msg);
        sr_capture_free(c);
        return rc == SR_E_NOMEM ? SR_EXIT_FAIL : SR_EXIT_USAGE;
    }
    if (json) {
        cJSON *root = cJSON_CreateObject(), *xs;
        cJSON_AddStringToObject(root, "upstream", sr_capture_upstream(c));
        cJSON_AddBoolToObject(root, "redacted", sr_capture_redacted(c));
        cJSON_AddBoolToObject(root, "verified", check);
        xs = cJSON_AddArrayToObject(root, "exchanges");
        for (size_t i = 0; i < sr_capture_count(c); i++)
            cJSON_AddItemToArray(xs, exchange_json(sr_capture_at(c, i)));
        char *t = cJSON_PrintUnformatted(root);
        if (t)
            puts(t);
        cJSON_free(t);
        cJSON_Delete(root);
    } else {
        printf("capture of %s: %zu exchange(s)%s\n", sr_capture_upstream(c), sr_capture_count(c),
               check ? ", every body verified" : "");
        for (size_t i = 0; i < sr_capture_count(c); i++) {
            const sr_capture_exchange *x = sr_capture_at(c, i);
            printf("%6" PRId64 " %10.3f ms  %-16.16s %s %s -> %d  %" PRIu64 " / %" PRIu64
                   " bytes%s%s%s\n",
                   x->seq, (double)x->t_start_us / 1000.0, x->session[0] ? x->session : "-",
                   x->method, x->uri, x->status, x->request.bytes, x->response.bytes,
                   x->complete ? "" : "  INCOMPLETE", x->fault[0] ? "  fault " : "", x->fault);
        }
    }
    sr_capture_free(c);
    return SR_EXIT_OK;
}
