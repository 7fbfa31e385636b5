#!/bin/sh
# `syncroll replay` on real traffic: `syncroll serve` as the engine, `syncroll proxy --record` in
# front of it, `syncroll run` of a multi-turn scenario whose engines.urls is the proxy. Real
# processes over loopback; each server prints its URL on one line, read from a FIFO.
#   serve part: the capture played back by `replay --serve` (behind a second recording proxy)
#     to the same `run`, which passes; every answer the client got is byte for byte the
#     captured one; a request the capture lacks is a 404 naming replay.no_match; an answer
#     the proxy cut (truncate_in_blob) is played back cut, and written as a scenario its
#     description names that fault.
#   judge part: `replay CAPTURE` passes the clean capture and fails one recorded with the
#     engine's routes_all_zero naming routes.invalid, as the live run does, in the skyrl and
#     vllm wires, and then the meta checks that judge recorded answers (meta.value_sanity,
#     meta.boundary_rows); one recorded with a route fault that repeats the previous row over
#     the first output rows (valid expert ids: no contract check fires) fails naming only meta
#     checks, meta.boundary_rows among them, session and turn in the message; an answer that
#     says "abort" with its partial rows is client.aborted_turn and meta.missing_not_stale; a
#     turn that does not extend the previous one is replay.prefix.
#   scenario part: `replay --to-scenario` writes a clean and a faulty capture as golden-fixture
#     scenarios; they lint; `run` passes the clean one and fails the faulty one naming
#     routes.invalid (written with --expect-found, the same checks fire as it expects and the
#     run passes); a non-empty OUT is replay.out_not_empty, a damaged copied body capture.body
#     at run time, a missing fixture a lint error at FILE:LINE:COL; a body two exchanges name is
#     copied once; a linked bodies/ folder is io.symlink.
#   REPLAY_PART=serve|judge|scenario   only that part
. "$(dirname "$0")/lib.sh"
part=${REPLAY_PART:-all}

# scenario FILE URL [DIALECT]: the multi-turn scenario, against URL, speaking DIALECT.
scenario() {
    cat >"$1" <<JSON
{"id": "replay-multi-turn",
 "description": "multi-turn rollouts through a recording proxy",
 "seed": 101,
 "model": {"vocab": 4000, "layers": 4, "experts": 64, "topk": 8, "eos_rate": 0.05},
 "engines": {"urls": ["$2"], "dialect": "${3:-skyrl}"},
 "client": {"concurrency": 4},
 "steps": [
   {"kind": "rollout", "name": "batch", "batch": 6, "turns": 3, "max_tokens": 16,
    "prompt_tokens": {"min": 8, "max": 40}, "observation_tokens": {"min": 1, "max": 8}},
   {"kind": "collate", "rollouts": ["batch"]}]}
JSON
}

# engine FILE [FAULTS [DIALECT]]: the served engine's scenario (one mock engine, same model).
engine() {
    cat >"$1" <<JSON
{"id": "replay-engine", "description": "the engine behind the proxy", "seed": 101,
 "model": {"vocab": 4000, "layers": 4, "experts": 64, "topk": 8, "eos_rate": 0.05},
 "engines": {"count": 1, "faults": [${2:-}], "dialect": "${3:-skyrl}"},
 "steps": [{"kind": "rollout"}]}
JSON
}

# record CAPTURE [FAULTS [DIALECT]]: serve + recording proxy + run; the run's output in $OUT.
record() {
    engine "$tmp/engine.json" "${2:-}" "${3:-skyrl}"
    start serve "$S" serve "$tmp/engine.json"
    serve_pid=$last_pid
    start proxy "$S" proxy --upstream "$url" --record "$1"
    proxy_pid=$last_pid
    scenario "$tmp/run.json" "$url" "${3:-skyrl}"
    OUT=$("$S" run --out "$tmp/runs" "$tmp/run.json" 2>&1)
    run_status=$?
    stop "$proxy_pid"
    stop "$serve_pid"
}

# turns.py URL [grow]: two generates of session "s" with token_ids [5, 6, 7] (with grow, turn 2
# sends [5, 6, 7, 8]: not turn 1's prompt and output); prints each turn's "status:bytes", or
# "cut".
cat >"$tmp/turns.py" <<'PY'
import http.client, json, sys, urllib.request
out = []
for turn in (1, 2):
    ids = [5, 6, 7] + ([8] * (turn - 1) if sys.argv[2:] == ["grow"] else [])
    req = urllib.request.Request(
        sys.argv[1] + "/skyrl/v1/generate",
        data=json.dumps({"sampling_params": {"max_tokens": 4}, "model": "default",
                         "token_ids": ids}).encode(),
        headers={"Content-Type": "application/json", "X-Session-ID": "s"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            out.append("%d:%d" % (r.status, len(r.read())))
    except http.client.IncompleteRead:
        out.append("cut")
print(" ".join(out))
PY

if [ "$part" = all ] || [ "$part" = serve ]; then
    record "$tmp/cap1"
    [ "$run_status" -eq 0 ] || die "the recorded run failed: $OUT"
    ok "recorded a run through the proxy"
    start replay "$S" replay --serve "$tmp/cap1"
    replay_pid=$last_pid
    replay_url=$url
    printf '%s\n' "$line" | grep -q '"exchanges":' || bad "replay line lacks exchanges: $line"
    start proxy2 "$S" proxy --upstream "$replay_url" --record "$tmp/cap2"
    proxy2_pid=$last_pid
    scenario "$tmp/run2.json" "$url"
    expect 0 "the same run against replay --serve passes" "$S" run --out "$tmp/runs" "$tmp/run2.json"
    # A request the capture has no answer for: 404 with the named error.
    expect_out 0 '^404 replay.no_match$' "an unknown request is 404 replay.no_match" python3 -c '
import json, sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1] + "/skyrl/v1/generate", data=b"{\"token_ids\":[1]}",
                             headers={"Content-Type": "application/json", "X-Session-ID": "nobody"})
try:
    urllib.request.urlopen(req, timeout=30)
    print("answered")
except urllib.error.HTTPError as e:
    print(e.code, json.loads(e.read())["error"]["check"])
' "$replay_url"
    stop "$proxy2_pid"
    stop "$replay_pid"
    # Every exchange the second run made is answered with the bytes of the exchange it replays:
    # the n-th request of a session to a URI, or else the n-th with the same URI and body.
    expect_out 0 '^identical [1-9][0-9]*$' "the replayed answers are byte-identical to the capture" \
        python3 - "$S" "$tmp/cap1" "$tmp/cap2" <<'PY'
import json, subprocess, sys
S, caps = sys.argv[1], sys.argv[2:]
def body(cap, seq, kind):
    return subprocess.run([S, "replay", "--body", "%d:%s" % (seq, kind), cap], check=True,
                          capture_output=True).stdout
def keyed(cap):
    xs = json.loads(subprocess.run([S, "replay", "--list", "--json", cap], check=True,
                                   capture_output=True).stdout)["exchanges"]
    seen, out = {}, {}
    for x in xs:
        k = (x["session"], x["uri"]) if x["session"] else (None, x["uri"], body(cap, x["seq"], "req"))
        n = seen[k] = seen.get(k, 0) + 1
        out[k + (n,)] = (x["status"], body(cap, x["seq"], "resp"))
    return out
a, b = keyed(caps[0]), keyed(caps[1])
assert a.keys() == b.keys(), sorted(set(a) ^ set(b))
for k in a:
    assert a[k] == b[k], k
print("identical", len(a))
PY
    # A cut answer is played back cut: the proxy's truncate_in_blob on turn 2 of a session is
    # recorded incomplete, and replay --serve cuts the same turn again.
    engine "$tmp/engine.json"
    start serve "$S" serve "$tmp/engine.json"
    serve_pid=$last_pid
    start proxy "$S" proxy --upstream "$url" --record "$tmp/cut" --fault \
        '{"kind": "truncate_in_blob", "keep_length": true, "turn": [2], "id": "cut"}'
    proxy_pid=$last_pid
    expect_out 0 '^200:[0-9]+ cut$' "the proxy cuts turn 2" python3 "$tmp/turns.py" "$url"
    live=$OUT
    stop "$proxy_pid"
    stop "$serve_pid"
    start replay "$S" replay --serve "$tmp/cut"
    replay_pid=$last_pid
    expect_out 0 "^$live\$" "replay --serve cuts the same turn" python3 "$tmp/turns.py" "$url"
    stop "$replay_pid"
    # Written as a scenario, the capture's description names the proxy fault that fired in it.
    expect 0 "--to-scenario writes the cut capture" "$S" replay --to-scenario "$tmp/cut" "$tmp/fx-cut"
    grep -q '"description":.*the proxy injected fault(s) cut' "$tmp/fx-cut/fx-cut.json" ||
        bad "the description does not name the proxy fault: $(cat "$tmp/fx-cut/fx-cut.json")"
fi

# judge part: `syncroll replay CAPTURE` judges the recorded traffic with no engine: the clean
# capture passes (with the run's reports in --out); with the engine's route fault the live run
# fails with a named check and so does the judge, naming the same check.
if [ "$part" = all ] || [ "$part" = judge ]; then
    record "$tmp/clean"
    [ "$run_status" -eq 0 ] || die "the clean recorded run failed: $OUT"
    expect_out 0 '^7 passed, 0 failed$' "replay judges the clean capture (6 sessions, collate)" \
        "$S" replay --out "$tmp/judged" "$tmp/clean"
    for f in summary.txt results.json junit.xml report.html; do
        [ -s "$tmp/judged/$f" ] || bad "replay --out wrote no $f"
    done
    grep -q '"id":	"replay-multi-turn/' "$tmp/judged/results.json" ||
        bad "results.json lacks the sessions: $(head -c 600 "$tmp/judged/results.json")"
    record "$tmp/zero" '{"kind": "routes_all_zero", "id": "zero"}'
    [ "$run_status" -eq 1 ] || die "the faulty recorded run exited $run_status: $OUT"
    live=$(printf '%s\n' "$OUT" | grep -o 'routes\.invalid' | head -n 1)
    [ "$live" = routes.invalid ] || die "the faulty live run did not name routes.invalid: $OUT"
    expect_out 1 '^FAIL +replay-multi-turn/[^ ]+  routes\.invalid: .*turn' \
        "replay fails the faulty capture naming routes.invalid" "$S" replay "$tmp/zero"
    expect_out 1 '^1 passed, 6 failed$' "every faulty session fails" \
        "$S" replay --out "$tmp/judged-zero" "$tmp/zero"
    printf '%s\n' "$OUT" | grep -q '^PASS  collate$' || bad "the batch was not collated: $OUT"
    # The contract's check first, as the live run names it; then the meta checks that judge a
    # recorded answer: all-zero rows are an all-constant capture whose rows repeat their
    # neighbours, at the prompt/output boundary too.
    python3 - "$tmp/judged-zero/results.json" <<'PY' || bad "results.json of the zero capture"
import json, sys
ss = [s for s in json.load(open(sys.argv[1]))["scenarios"] if s["id"] != "collate"]
assert len(ss) == 6, [s["id"] for s in ss]
for s in ss:
    assert list(s["fired"]) == ["routes.invalid", "meta.value_sanity", "meta.boundary_rows"], (
        s["id"], s["fired"])
PY
    # Repeated rows of valid expert ids: the contract checks (no oracle) see nothing wrong, the
    # meta checks do. The live run, which has the oracle, fails too.
    record "$tmp/repeat" '{"kind": "routes", "id": "rep", "select": {"region": "output",
        "rows": {"from": 0, "to": 4}}, "action": {"do": "repeat_previous"}}'
    [ "$run_status" -eq 1 ] || die "the repeated-rows recorded run exited $run_status: $OUT"
    expect_out 1 '^1 passed, 6 failed$' "replay fails every session with repeated rows" \
        "$S" replay --out "$tmp/judged-repeat" "$tmp/repeat"
    python3 - "$tmp/judged-repeat/results.json" <<'PY' || bad "results.json of the repeat capture"
import json, re, sys
ss = {s["id"]: s for s in json.load(open(sys.argv[1]))["scenarios"]}
assert ss.pop("collate")["verdict"] == "pass"
meta = {"meta.boundary_rows", "meta.value_sanity"}
assert len(ss) == 6, list(ss)
assert any("meta.boundary_rows" in s["fired"] for s in ss.values()), [s["fired"] for s in ss.values()]
for sid, s in ss.items():
    assert s["verdict"] == "fail" and s["fired"] and set(s["fired"]) <= meta, (sid, s["fired"])
    for c in s["checks"]:
        assert re.match(r"scenario %s step replay sample \d+ turn \d+: " % re.escape(sid),
                        c["message"]), c["message"]
        assert c["where"]["turn"] >= 1, c
PY
    # An answer that says "abort" yet carries its partial rows: the client's check, then the
    # meta check that judges the rows it carried.
    record "$tmp/abort" '{"kind": "routes", "nth": [2], "action": {"do": "mark_partial",
        "tokens": 2}}'
    [ "$run_status" -eq 1 ] || die "the aborted recorded run exited $run_status: $OUT"
    expect_out 1 '^6 passed, 1 failed$' "replay fails the session with the aborted answer" \
        "$S" replay --out "$tmp/judged-abort" "$tmp/abort"
    python3 - "$tmp/judged-abort/results.json" <<'PY' || bad "results.json of the abort capture"
import json, re, sys
bad = [s for s in json.load(open(sys.argv[1]))["scenarios"] if s["verdict"] != "pass"]
assert len(bad) == 1, [s["id"] for s in bad]
assert list(bad[0]["fired"]) == ["client.aborted_turn", "meta.missing_not_stale"], bad[0]["fired"]
assert re.search(r'turn \d+: finished "abort" after \d+ tokens yet carries \d+ route rows',
                 bad[0]["checks"][1]["message"]), bad[0]["checks"][1]["message"]
PY
    # The vllm wire (.npy routes of the rows the wire carries), told from the answers.
    record "$tmp/vllm" "" vllm
    [ "$run_status" -eq 0 ] || die "the clean vllm run failed: $OUT"
    expect_out 0 '^7 passed, 0 failed$' "replay judges a clean vllm capture" "$S" replay "$tmp/vllm"
    record "$tmp/vllm-zero" '{"kind": "routes_all_zero"}' vllm
    [ "$run_status" -eq 1 ] || die "the faulty vllm run exited $run_status: $OUT"
    printf '%s\n' "$OUT" | grep -q 'routes\.invalid' || die "the live vllm run: $OUT"
    expect_out 1 '^FAIL +replay-multi-turn/[^ ]+  routes\.invalid: ' \
        "replay --dialect vllm fails the faulty vllm capture naming routes.invalid" \
        "$S" replay --dialect vllm "$tmp/vllm-zero"
    # A client whose turn 2 does not extend turn 1's prompt and output.
    engine "$tmp/engine.json"
    start serve "$S" serve "$tmp/engine.json"
    serve_pid=$last_pid
    start proxy "$S" proxy --upstream "$url" --record "$tmp/noext"
    proxy_pid=$last_pid
    expect_out 0 '^200:[0-9]+ 200:[0-9]+$' "two turns recorded" python3 "$tmp/turns.py" "$url" grow
    stop "$proxy_pid"
    stop "$serve_pid"
    expect_out 1 '^FAIL +s  replay\.prefix: .*turn 2.s request does not extend turn 1' \
        "a turn that does not extend the conversation is replay.prefix" "$S" replay "$tmp/noext"
    mkdir "$tmp/bogus" && printf '{"not":"a capture"}\n' >"$tmp/bogus/capture.jsonl"
    expect_out 2 'capture\.version' "a folder that is no capture is a named error" \
        "$S" replay "$tmp/bogus"
fi

# scenario part: a capture as a golden-fixture scenario that `syncroll run` plays.
if [ "$part" = all ] || [ "$part" = scenario ]; then
    record "$tmp/clean"
    [ "$run_status" -eq 0 ] || die "the clean recorded run failed: $OUT"
    record "$tmp/zero" '{"kind": "routes_all_zero", "id": "zero"}'
    [ "$run_status" -eq 1 ] || die "the faulty recorded run exited $run_status: $OUT"
    expect_out 0 'expect pass$' "--to-scenario writes the clean capture, expecting a pass" \
        "$S" replay --to-scenario "$tmp/clean" "$tmp/fx-clean"
    expect_out 0 'expect pass \(a failing case: judging found routes\.invalid meta\.value_sanity meta\.boundary_rows\)$' \
        "--to-scenario writes the faulty capture as a failing case" \
        "$S" replay --to-scenario "$tmp/zero" "$tmp/fx-zero"
    expect_out 0 'expect fail: routes\.invalid meta\.value_sanity meta\.boundary_rows$' \
        "--to-scenario --expect-found writes the faulty capture expecting what it found" \
        "$S" replay --to-scenario --expect-found "$tmp/zero" "$tmp/fx-found"
    expect_out 2 '--expect-found goes with --to-scenario' "--expect-found alone is a usage error" \
        "$S" replay --expect-found "$tmp/zero"
    n_bodies=$(ls "$tmp/zero/bodies" | wc -l)
    [ "$(ls "$tmp/fx-zero/fixtures/capture/bodies" | wc -l)" -eq "$n_bodies" ] ||
        bad "the fixture does not hold the $n_bodies bodies the index names"
    cmp -s "$tmp/zero/capture.jsonl" "$tmp/fx-zero/fixtures/capture/capture.jsonl" ||
        bad "the fixture's index is not the capture's"
    expect 0 "the written scenarios lint" "$S" lint "$tmp/fx-clean" "$tmp/fx-zero" "$tmp/fx-found"
    expect 0 "run passes the clean capture's scenario" \
        "$S" run --out "$tmp/runs" "$tmp/fx-clean/fx-clean.json"
    # The failing case: the run fails naming the check, the step and the session.
    expect_out 1 'routes\.invalid: .*step capture session replay-multi-turn/' \
        "the faulty capture's scenario fails its run naming routes.invalid" \
        "$S" run --out "$tmp/runs" "$tmp/fx-zero/fx-zero.json"
    python3 - "$tmp/runs/latest/results.json" fx-zero fail <<'PY' || bad "results.json of fx-zero"
import json, sys
s = json.load(open(sys.argv[1]))["scenarios"][0]
assert s["id"] == sys.argv[2] and s["verdict"] == sys.argv[3], (s["id"], s["verdict"], s["reason"])
assert s["fired"] == {"routes.invalid": 6, "meta.value_sanity": 6, "meta.boundary_rows": 6}, s["fired"]
assert list(s["fired"])[0] == "routes.invalid", s["fired"]
assert s["counters"]["rollouts_requested"] == 6, s["counters"]
PY
    # The catalogue's defect form: the same checks fire, as it expects, and the run passes.
    expect 0 "run of the --expect-found scenario: its checks fire, as it expects" \
        "$S" run --out "$tmp/runs" "$tmp/fx-found/fx-found.json"
    python3 - "$tmp/runs/latest/results.json" fx-found pass <<'PY' || bad "results.json of fx-found"
import json, sys
s = json.load(open(sys.argv[1]))["scenarios"][0]
assert s["id"] == sys.argv[2] and s["verdict"] == sys.argv[3], (s["id"], s["verdict"], s["reason"])
assert s["fired"] == {"routes.invalid": 6, "meta.value_sanity": 6, "meta.boundary_rows": 6}, s["fired"]
assert list(s["fired"])[0] == "routes.invalid", s["fired"]
PY
    # rewrite FILE OUT ID: the scenario FILE under another id (in FILE's folder).
    rewrite() {
        python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["id"] = sys.argv[3]
json.dump(doc, open(sys.argv[2], "w"), indent=2)
PY
    }
    expect_out 2 'replay\.out_not_empty' "--to-scenario into a non-empty folder is refused" \
        "$S" replay --to-scenario "$tmp/clean" "$tmp/fx-clean"
    [ -s "$tmp/fx-clean/fx-clean.json" ] || bad "the refused command touched the existing folder"
    # A damaged body of the copied fixture: the run errs naming capture.body, never a check.
    cp -R "$tmp/fx-zero" "$tmp/fx-bad"
    body=$(ls "$tmp/fx-bad/fixtures/capture/bodies" | grep 'resp' | head -n 1)
    printf 'not zstd' >"$tmp/fx-bad/fixtures/capture/bodies/$body"
    rewrite "$tmp/fx-zero/fx-zero.json" "$tmp/fx-bad/fx-zero.json" fx-bad
    expect_out 1 'capture\.body' "a damaged fixture body is capture.body at run time" \
        "$S" run --out "$tmp/runs" "$tmp/fx-bad/fx-zero.json"
    expect_out 2 'capture\.body' "replay names a damaged body before judging" \
        "$S" replay "$tmp/fx-bad/fixtures/capture"
    expect_out 2 'capture\.body' "--to-scenario refuses a damaged capture" \
        "$S" replay --to-scenario "$tmp/fx-bad/fixtures/capture" "$tmp/fx-none"
    [ ! -e "$tmp/fx-none" ] || bad "the refused --to-scenario left $(find "$tmp/fx-none")"
    rm -r "$tmp/fx-bad/fixtures"
    expect_out 2 'fx-zero\.json:[0-9]+:[0-9]+: no capture at .*\[scenario\.invalid\]' \
        "lint names a missing fixture at FILE:LINE:COL" "$S" lint "$tmp/fx-bad/fx-zero.json"
    # Two exchanges naming one body file (same bytes and digest): it is copied once, not refused
    # as a file that exists; the description names each proxy fault whole ("cut2" then "cut").
    cp -R "$tmp/zero" "$tmp/shared"
    python3 - "$tmp/shared/capture.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
head, ex = lines[0], [json.loads(l) for l in lines[1:]]
by_seq = {e["seq"]: e for e in ex}
by_seq[2]["request"] = dict(by_seq[1]["request"])
by_seq[1]["fault"], by_seq[3]["fault"] = "cut2", "cut"
open(sys.argv[1], "w").write("\n".join([head] + [json.dumps(e) for e in ex]) + "\n")
PY
    rm "$tmp/shared/bodies/000002.req.zst"
    expect 0 "--to-scenario copies a body file two exchanges name once" \
        "$S" replay --to-scenario "$tmp/shared" "$tmp/fx-shared"
    [ "$(ls "$tmp/fx-shared/fixtures/capture/bodies" | wc -l)" -eq "$(ls "$tmp/shared/bodies" | wc -l)" ] ||
        bad "the shared body was not copied exactly once"
    grep -q '"description":.*fault(s) cut2, cut;' "$tmp/fx-shared/fx-shared.json" ||
        bad "the description does not name both faults: $(cat "$tmp/fx-shared/fx-shared.json")"
    # A capture whose bodies folder is a link: named io.symlink, never followed.
    mkdir "$tmp/linked" && cp "$tmp/zero/capture.jsonl" "$tmp/linked/"
    ln -s "$tmp/zero/bodies" "$tmp/linked/bodies"
    expect_out 2 'io\.symlink' "replay --list refuses a linked bodies folder" \
        "$S" replay --list "$tmp/linked"
    expect_out 2 'io\.symlink' "--to-scenario refuses a linked bodies folder" \
        "$S" replay --to-scenario "$tmp/linked" "$tmp/fx-linked"
    [ ! -e "$tmp/fx-linked" ] || bad "the refused --to-scenario left $(find "$tmp/fx-linked")"
fi

finish
