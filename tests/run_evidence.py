#!/usr/bin/env python3
"""The failure evidence of `syncroll run` (reports/README.md, "Failure evidence").

Runs real failing scenarios over loopback and reads what they left:
  - a route-row bug (scenarios/bugs/duplicated-output-rows.defect.json without its expectation):
    every failing check names an evidence folder; its index.txt lists every file in it; the
    got/want rows in rows-<R>-got.npy / -want.npy load with numpy as int32 [N, 5 + K] and hold
    at (row, layer) exactly the experts and weight version the check's message names; the
    response bytes are the exchange that carried the wrong row (its routed_experts blob, decoded
    with base64 and numpy at the request's routed_experts_prompt_start, holds the got row);
  - a transport fault (scenarios/bugs/skyrl-retry-unterminated.defect.json, a body cut inside a
    blob): the response bytes are the cut body (not JSON, as many bytes as the exchange says),
    and `syncroll check-body` names it (splice.unterminated) as it splices a whole kept body;
  - a latency budget that cannot hold: a check outside any rollout gets evidence/scenario/;
  - sixteen failing rollouts with ~1 MiB responses: the 16 MiB cap per scenario cuts, the
    index.txt says which files were left out, results.json and report.html say it was cut;
  - report.html, as written and as re-rendered by `syncroll report`: every href resolves to an
    existing file or folder from the run folder, and every failing check links its index.txt.
Usage: run_evidence.py SYNCROLL SOURCE_DIR. Without numpy, the .npy rows and the decoded blob
are skipped (said on stdout) and everything else is checked.
"""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    np = None  # the .npy rows and the routes blob are not read; everything else is checked

CAP = 16 << 20
fails = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        fails.append(what)


def without_expect(src, path, new_id):
    with open(src) as f:
        d = json.load(f)
    d.pop("expect", None)
    d["engines"]["dialects"] = ["skyrl"]
    d["id"] = new_id
    with open(path, "w") as f:
        json.dump(d, f)


def index_of(folder):
    """index.txt as {file: description}."""
    out = {}
    with open(os.path.join(folder, "index.txt")) as f:
        for line in f:
            name, _, desc = line.rstrip("\n").partition(": ")
            out[name] = desc
    return out


def check_index(folder):
    idx = index_of(folder)
    files = set(os.listdir(folder)) - {"index.txt"}
    written = {n for n, d in idx.items() if not d.startswith("not written")}
    check(files == written, "%s: index.txt lists exactly its files (%s)" %
          (os.path.basename(folder), sorted(files ^ written)))
    for need in ("checks.txt", "repro.txt", "scenario.json"):
        check(need in idx, "%s: index.txt lists %s" % (os.path.basename(folder), need))
    return idx


def ints(text):
    return [int(x) for x in text.split()]


def check_rows(folder, c):
    """The got/want .npy rows at the check's (row, layer) are the ones its message names."""
    w = c["where"]
    m = re.search(r"routes \[([0-9 ]+)\] differ from the oracle's \[([0-9 ]+)\] at weight "
                  r"version (\d+)", c["message"])
    check(m is not None, "the row_mismatch message names got, want and a version")
    got = np.load(os.path.join(folder, "rows-%d-got.npy" % w["row"]))
    want = np.load(os.path.join(folder, "rows-%d-want.npy" % w["row"]))
    k = len(ints(m.group(1)))
    check(got.dtype == np.int32 and got.ndim == 2 and got.shape[1] == 5 + k,
          "rows-got.npy is int32 [N, 5 + K] (%s %s)" % (got.dtype, got.shape))
    check(want.shape == got.shape and want.dtype == np.int32, "rows-want.npy alike")
    sel = (got[:, 2] == w["row"]) & (got[:, 3] == w["layer"])
    check(sel.sum() == 1, "one got line at (row %d, layer %d)" % (w["row"], w["layer"]))
    g, x = got[sel][0], want[sel][0]
    check(list(g[5:]) == ints(m.group(1)), "the got experts are the message's %s" % m.group(1))
    check(list(x[5:]) == ints(m.group(2)), "the want experts are the message's %s" % m.group(2))
    check(x[4] == int(m.group(3)), "the want weight version is the message's")
    check(g[0] == w["sample"] and g[1] == w["turn"], "sample and turn columns are the check's")
    return g, w


def check_rows_text(folder, w):
    """rows-<R>.txt marks the check's (row, layer); needs no numpy."""
    text = open(os.path.join(folder, "rows-%d.txt" % w["row"])).read()
    line = "%d %d %d %d" % (w["sample"], w["turn"], w["row"], w["layer"])
    check(any(ln.startswith(line) and ln.endswith(" !") for ln in text.splitlines()),
          "rows-%d.txt marks the failing (row, layer) with '!'" % w["row"])


def check_blob(folder, g, w):
    """The response of the check's turn carries the wrong row in its routed_experts blob."""
    req = json.load(open(os.path.join(folder, "request-turn%d.bin" % w["turn"]), "rb"))
    resp = json.load(open(os.path.join(folder, "response-turn%d.bin" % w["turn"]), "rb"))
    env = resp["choices"][0]["routed_experts"]
    blob = np.frombuffer(base64.b64decode(env["data"]), dtype=env["dtype"]).reshape(env["shape"])
    start = req["sampling_params"]["routed_experts_prompt_start"]
    check(list(blob[w["row"] - start, w["layer"]]) == list(g[5:]),
          "the response's routed_experts blob holds the wrong row at row %d" % w["row"])


def run(syncroll, out, *scenarios):
    r = subprocess.run([syncroll, "run", "--out", out] + list(scenarios),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 1, "the failing run exits 1 (got %d)" % r.returncode)
    if r.returncode != 1:
        print(r.stdout)
    run_dir = os.path.realpath(os.path.join(out, "latest"))
    return run_dir, json.load(open(os.path.join(run_dir, "results.json")))


def check_hrefs(run_dir, html, results):
    hrefs = re.findall(r'href="([^"#][^"]*)"', open(os.path.join(run_dir, html)).read())
    bad = [h for h in hrefs if not os.path.exists(os.path.join(run_dir, h))]
    check(hrefs and not bad, "%s: all %d hrefs resolve from the run folder (%s)" %
          (html, len(hrefs), bad[:3]))
    for s in results["scenarios"]:
        for c in s["checks"]:
            if not c["expected"]:
                rel = os.path.relpath(os.path.join(s["artifacts"], c["evidence"]), run_dir)
                check(rel in hrefs, "%s links %s's evidence %s" % (html, c["name"], rel))


def main():
    syncroll, src = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="syncroll-evidence-")
    dup, cut = os.path.join(tmp, "dup.json"), os.path.join(tmp, "cut.json")
    without_expect(os.path.join(src, "scenarios/bugs/duplicated-output-rows.defect.json"), dup,
                   "ev-rows")
    without_expect(os.path.join(src, "scenarios/bugs/skyrl-retry-unterminated.defect.json"), cut,
                   "ev-transport")
    budget = os.path.join(tmp, "budget.json")
    json.dump({"id": "ev-budget", "description": "a budget that cannot hold",
               "budgets": [{"phase": "request", "percentile": 50, "max_ms": 0.000001}],
               "steps": [{"kind": "rollout", "batch": 1, "turns": 1}]}, open(budget, "w"))
    run_dir, res = run(syncroll, os.path.join(tmp, "out"), dup, cut, budget)
    by_id = {s["id"]: s for s in res["scenarios"]}

    rows = by_id["ev-rows"]
    folders = set()
    for c in rows["checks"]:
        check(c["evidence"] is not None and not c["evidence_cut"], "ev-rows: %s has evidence"
              % c["name"])
        folder = os.path.dirname(os.path.join(rows["artifacts"], c["evidence"]))
        if folder not in folders:
            folders.add(folder)
            idx = check_index(folder)
            check("response-turn%d.bin" % c["where"]["turn"] in idx, "the turn's response kept")
            w = c["where"]
            check_rows_text(folder, w)
            if np is not None:
                g, w = check_rows(folder, c)
                check_blob(folder, g, w)
            else:
                print("skip: the .npy rows and the routes blob (numpy is not installed)")
            r = subprocess.run([syncroll, "check-body", os.path.join(
                folder, "response-turn%d.bin" % w["turn"])], stdout=subprocess.DEVNULL)
            check(r.returncode == 0, "check-body splices the kept response (exit 0)")
            checks_txt = open(os.path.join(folder, "checks.txt")).read()
            check(c["message"] in checks_txt, "checks.txt holds the check's message")
            repro = open(os.path.join(folder, "repro.txt")).read()
            check(repro == rows["repro"] + "\n", "repro.txt is the one-line repro")
    check(len(folders) == 2, "one evidence folder per failing sample (%d)" % len(folders))

    tr = by_id["ev-transport"]
    c = [c for c in tr["checks"] if c["name"] == "client.not_retried"][0]
    folder = os.path.dirname(os.path.join(tr["artifacts"], c["evidence"]))
    check_index(folder)
    ex = open(os.path.join(folder, "exchange-turn%d.txt" % c["where"]["turn"])).read()
    check("outcome splice.unterminated" in ex and "HTTP/1.1 200" in ex,
          "the exchange names the attempt's outcome and the status line")
    body = open(os.path.join(folder, "response-turn%d.bin" % c["where"]["turn"]), "rb").read()
    m = re.search(r"response body of the last attempt: (\d+) bytes received", ex)
    check(m and int(m.group(1)) == len(body) > 0, "the cut body is kept whole (%d)" % len(body))
    check(b'"routed_experts"' in body and body.rstrip()[-1:] != b"}",
          "the response bytes stop inside the routes blob")
    r = subprocess.run([syncroll, "check-body", os.path.join(folder, "response-turn%d.bin" %
                        c["where"]["turn"])], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    check("splice.unterminated" in r.stdout, "check-body on the kept body: splice.unterminated")

    bu = by_id["ev-budget"]
    c = [c for c in bu["checks"] if c["name"] == "budget.latency"][0]
    check(c["evidence"] == "evidence/scenario/index.txt", "a budget check: evidence/scenario/")
    check_index(os.path.join(bu["artifacts"], "evidence", "scenario"))
    check_hrefs(run_dir, "report.html", res)

    # The same report re-rendered from results.json keeps the links.
    r = subprocess.run([syncroll, "report", run_dir, "--report", "html"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check_hrefs(run_dir, "report.html", res)

    # The cap: sixteen rollouts with ~1 MiB responses each fail (rows duplicated).
    big = os.path.join(tmp, "big.json")
    json.dump({"id": "ev-cap", "description": "more evidence than the cap", "seed": 3,
               "model": {"vocab": 32000, "layers": 4, "experts": 64, "topk": 8},
               "engines": {"faults": [{"kind": "duplicated_output_rows"}]},
               "steps": [{"kind": "rollout", "batch": 16, "turns": 1, "max_tokens": 8,
                          "ignore_eos": True, "prompt_tokens": {"min": 24000, "max": 24000}}]},
              open(big, "w"))
    run_dir, res = run(syncroll, os.path.join(tmp, "cap"), big)
    s = res["scenarios"][0]
    top = os.path.join(s["artifacts"], "evidence")
    total, notes = 0, 0
    for d in os.listdir(top):
        for f in os.listdir(os.path.join(top, d)):
            if f != "index.txt":
                total += os.path.getsize(os.path.join(top, d, f))
        notes += sum(v.startswith("not written") and "evidence cap of 16 MiB" in v
                     for v in index_of(os.path.join(top, d)).values())
    check(CAP - (2 << 20) < total <= CAP, "the files total at most 16 MiB (%d)" % total)
    check(notes > 0, "index.txt says which files the cap left out (%d)" % notes)
    check(any(c["evidence_cut"] for c in s["checks"]), "results.json: evidence_cut")
    check("the scenario's evidence cap was reached" in
          open(os.path.join(run_dir, "report.html")).read(), "report.html says it cut")
    subprocess.run(["rm", "-rf", tmp])
    print("%d failure(s)" % len(fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
