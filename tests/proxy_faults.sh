#!/bin/sh
# `syncroll proxy --fault` on real traffic in front of a clean `syncroll serve` (real processes
# over loopback; each server prints its URL on one line, read from a FIFO).
#   routes part: with the route fault routes_all_zero in the proxy, `syncroll probe` fails
#     naming meta.value_sanity in every wire, and passes through the proxy without it; the
#     rewritten answer is all zeros and announces its own length, the capture keeps the
#     engine's bytes and names the fault; route faults that need the engine's state are
#     fault.invalid_spec.
#   retry part: with truncate_in_blob on turn 2 in the proxy, `syncroll run` of a multi-turn
#     scenario retries every cut turn, as against the engine's own truncate_in_blob, and passes
#     (skyrl and vllm wires); the proxy's state counts the fault fired once a retry; with the
#     reference's retry policy the client names splice.unterminated.
#   same part: the same route faults (with a probability, and on the turn boundary a route
#     start names) in the proxy in front of a clean engine and in the engine itself give the
#     same routes for every turn of a multi-turn run (a recording proxy in front of each keeps
#     what the client got), in every wire.
#   PROXY_FAULTS_PART=routes|retry|same   only that part
. "$(dirname "$0")/lib.sh"
part=${PROXY_FAULTS_PART:-all}
pids=
at_exit 'for p in $pids; do kill "$p" 2>/dev/null; done'

# start NAME COMMAND...: runs a server in the background and sets url to the first "url" of
# the line it prints, and last_pid.
start() {
    sr_name=$1
    shift
    rm -f "$tmp/fifo"
    mkfifo "$tmp/fifo"
    "$@" >"$tmp/fifo" 2>"$tmp/$sr_name.err" &
    last_pid=$!
    pids="$pids $last_pid"
    exec 3<"$tmp/fifo"
    IFS= read -r line <&3 || die "$sr_name printed no line: $(cat "$tmp/$sr_name.err")"
    exec 3<&-
    url=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
    [ -n "$url" ] || die "$sr_name: no url in '$line'"
}

stop() {
    kill -TERM "$1"
    wait "$1"
}

# state URL: the proxy's own state.
state() {
    python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1] + "/syncroll/v1/proxy", timeout=30).read().decode())' "$1"
}

if [ "$part" = all ] || [ "$part" = routes ]; then
    cat >"$tmp/cfg.json" <<'JSON'
{"count": 1, "seed": 3,
 "model": {"vocab": 500, "layers": 2, "experts": 16, "topk": 2, "eos_id": -1},
 "faults": []}
JSON
    for d in skyrl vllm vllm-json sglang dynamo nemo-rl; do
        start serve "$S" serve --stop-grace 2 --dialect "$d" "$tmp/cfg.json"
        serve_pid=$last_pid
        serve_url=$url
        start proxy "$S" proxy --dialect "$d" --upstream "$serve_url" \
            --fault '{"kind": "routes_all_zero", "id": "zero"}'
        proxy_pid=$last_pid
        OUT=$("$S" probe --model "$tmp/cfg.json" --seed 1 --out "$tmp/rep" "$url" 2>&1)
        st=$?
        if [ "$st" -ne 1 ] || ! printf '%s\n' "$OUT" | grep -q '^FAILED   meta\.value_sanity$'; then
            bad "$d: probe through the proxy's routes_all_zero: exit $st, meta.value_sanity not named"
            printf '%s\n' "$OUT"
        else
            ok "$d: probe through the proxy's routes_all_zero fails naming meta.value_sanity"
        fi
        st_line=$(state "$url")
        printf '%s\n' "$st_line" | grep -q '"routes_unchanged":0,' ||
            bad "$d: answers left unchanged: $st_line $(cat "$tmp/proxy.err")"
        printf '%s\n' "$st_line" | grep -Eq '"id":"zero","kind":"routes_all_zero","layer":"model","seen":([1-9][0-9]*),"fired":\1}' ||
            bad "$d: the state does not show the fault fired on every generate: $st_line"
        stop "$proxy_pid"
        start proxy "$S" proxy --dialect "$d" --upstream "$serve_url"
        proxy_pid=$last_pid
        expect 0 "$d: probe through the proxy without the fault passes" \
            "$S" probe --model "$tmp/cfg.json" --seed 1 --out "$tmp/rep" "$url"
        stop "$proxy_pid"
        stop "$serve_pid"
    done

    # One answer three ways: from the engine, through the faulty proxy (recording), and as the
    # capture keeps it. The capture is the engine's bytes; the client's answer is the same but
    # for routes of zeros, and its length is its own.
    start serve "$S" serve --stop-grace 2 "$tmp/cfg.json"
    serve_pid=$last_pid
    serve_url=$url
    start proxy "$S" proxy --upstream "$serve_url" --record "$tmp/cap" \
        --fault '{"kind": "routes_all_zero", "id": "zero"}'
    proxy_pid=$last_pid
    python3 - "$serve_url" "$url" "$tmp" <<'PY' >"$tmp/bodies.out" 2>&1
import base64, json, sys, urllib.request
def post(base):
    req = urllib.request.Request(
        base + "/skyrl/v1/generate",
        data=json.dumps({"sampling_params": {"max_tokens": 6}, "model": "default",
                         "token_ids": [5, 6, 7, 8]}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
        assert int(r.headers["Content-Length"]) == len(body), r.headers["Content-Length"]
        return body
direct, faulty = post(sys.argv[1]), post(sys.argv[2])
open(sys.argv[3] + "/direct", "wb").write(direct)
d, f = json.loads(direct)["choices"][0], json.loads(faulty)["choices"][0]
rd, rf = d.pop("routed_experts"), f.pop("routed_experts")
assert d == f, "the answer changed outside its routes"
assert rd["shape"] == rf["shape"] and rd["dtype"] == rf["dtype"], (rd, rf)
assert any(base64.b64decode(rd["data"])), "the engine's routes are zeros already"
assert not any(base64.b64decode(rf["data"])), "the proxy's routes are not all zero"
print("zeros", rf["shape"])
PY
    grep -q '^zeros \[' "$tmp/bodies.out" || bad "the rewritten answer: $(cat "$tmp/bodies.out")"
    stop "$proxy_pid"
    stop "$serve_pid"
    "$S" replay --body 1:resp "$tmp/cap" >"$tmp/captured" || bad "replay --body 1:resp failed"
    if cmp -s "$tmp/captured" "$tmp/direct"; then
        ok "the capture keeps the engine's own answer"
    else
        bad "the captured answer is not the engine's"
    fi
    expect_out 0 '"fault":"zero"' "the capture names the route fault that fired" \
        "$S" replay --list --json "$tmp/cap"

    # Route faults that need the engine's own state are refused at start, naming why.
    expect_out 2 'fault\.invalid_spec: .*stale.*other weights' \
        "stale_prefix_cache is fault.invalid_spec in the proxy" \
        "$S" proxy --upstream http://127.0.0.1:9 --fault '{"kind": "stale_prefix_cache"}'
    expect_out 2 'fault\.invalid_spec: .*append_last' \
        "rows_p_plus_g is fault.invalid_spec in the proxy" \
        "$S" proxy --upstream http://127.0.0.1:9 --fault '{"kind": "rows_p_plus_g"}'
    expect_out 2 'fault\.invalid_spec: .*logprobs' \
        "support_no_logprobs is fault.invalid_spec in the proxy" \
        "$S" proxy --upstream http://127.0.0.1:9 --fault '{"kind": "support_no_logprobs"}'
    expect_out 2 'fault\.invalid_spec: .*expert_out_of_range.*model layer' \
        "a model fault outside the grammar is fault.invalid_spec in the proxy" \
        "$S" proxy --upstream http://127.0.0.1:9 --fault '{"kind": "expert_out_of_range"}'
fi

# scenario FILE URL|- DIALECT [FAULTS [QUIRK]]: a multi-turn scenario against URL (or,
# for -, its own engine with FAULTS); QUIRK is appended to its client object, and $conc (4) is
# its client's concurrency.
scenario() {
    if [ "$2" = - ]; then
        eng="\"count\": 1, \"faults\": [${4:-}]"
    else
        eng="\"urls\": [\"$2\"]"
    fi
    cat >"$1" <<JSON
{"id": "proxy-multi-turn", "description": "multi-turn rollouts through the proxy",
 "seed": 101,
 "model": {"vocab": 4000, "layers": 4, "experts": 64, "topk": 8, "eos_rate": 0.05},
 "engines": {$eng, "dialect": "$3"},
 "client": {"concurrency": ${conc:-4}${5:-}},
 "steps": [
   {"kind": "rollout", "name": "batch", "batch": 6, "turns": 3, "max_tokens": 16,
    "prompt_tokens": {"min": 8, "max": 40}, "observation_tokens": {"min": 1, "max": 8}}]}
JSON
}

# retries DIR: the counters.retries of the one scenario of the run under DIR.
retries() {
    python3 -c 'import json, sys
(sc,) = json.load(open(sys.argv[1] + "/latest/results.json"))["scenarios"]
print(sc["counters"]["retries"])' "$1"
}

CUT='{"kind": "truncate_in_blob", "turn": [2], "id": "cut"}'
if [ "$part" = all ] || [ "$part" = retry ]; then
    for d in skyrl vllm; do
        # Against the engine's own fault: the count of retries it takes.
        scenario "$tmp/own.json" - "$d" "$CUT"
        expect 0 "$d: a run against the engine's own truncate_in_blob passes" \
            "$S" run --out "$tmp/own-$d" "$tmp/own.json"
        own=$(retries "$tmp/own-$d")
        [ "$own" -gt 0 ] || bad "$d: the engine's fault caused no retry"
        # Through the proxy in front of a clean engine.
        printf '{"count": 1, "seed": 101, "model": {"vocab": 4000, "layers": 4, "experts": 64, "topk": 8, "eos_rate": 0.05}}\n' >"$tmp/eng.json"
        start serve "$S" serve --stop-grace 2 --dialect "$d" "$tmp/eng.json"
        serve_pid=$last_pid
        serve_url=$url
        start proxy "$S" proxy --dialect "$d" --upstream "$serve_url" --fault "$CUT"
        proxy_pid=$last_pid
        scenario "$tmp/via.json" "$url" "$d"
        expect 0 "$d: a run through the proxy's truncate_in_blob passes" \
            "$S" run --out "$tmp/via-$d" "$tmp/via.json"
        via=$(retries "$tmp/via-$d")
        if [ "$via" = "$own" ]; then
            ok "$d: the client retried $via times, as against the engine's own fault"
        else
            bad "$d: $via retries through the proxy, $own against the engine's own fault"
        fi
        st_line=$(state "$url")
        printf '%s\n' "$st_line" | grep -q "\"id\":\"cut\",\"kind\":\"truncate_in_blob\",\"layer\":\"transport\",\"seen\":[0-9]*,\"fired\":$via}" ||
            bad "$d: the proxy's state does not show the fault fired $via times: $st_line"
        stop "$proxy_pid"
        # The reference's retry policy does not retry a body cut inside a blob: the client names
        # what it saw (a new proxy: its sessions' turns count from 1 again).
        start proxy "$S" proxy --dialect "$d" --upstream "$serve_url" --fault "$CUT"
        proxy_pid=$last_pid
        scenario "$tmp/ref.json" "$url" "$d" "" ', "quirks": ["retry_json_decode_only"]'
        expect_out 1 'client\.not_retried.*splice\.unterminated|splice\.unterminated.*client\.not_retried' \
            "$d: with the reference's retry policy the cut answer is client.not_retried naming splice.unterminated" \
            "$S" run --out "$tmp/ref-$d" "$tmp/ref.json"
        stop "$proxy_pid"
        stop "$serve_pid"
    done
fi
# same part: the route values of every generate answer of CAP1 and CAP2, matched by session
# and turn, must be equal (and some must differ from a clean engine's: the faults fired).
cat >"$tmp/same.py" <<'PY'
import json, subprocess, sys
S, caps = sys.argv[1], sys.argv[2:]
def routes(v):
    """Every value under a key routed_experts or prompt_routed_experts, in document order."""
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            if k in ("routed_experts", "prompt_routed_experts"):
                out.append(x)
            else:
                out += routes(x)
    elif isinstance(v, list):
        for x in v:
            out += routes(x)
    return out
def answers(cap):
    xs = json.loads(subprocess.run([S, "replay", "--list", "--json", cap], check=True,
                                   capture_output=True).stdout)["exchanges"]
    seen, out = {}, {}
    for x in xs:
        if x["endpoint"] != "generate" or x["status"] != 200:
            continue
        n = seen[x["session"]] = seen.get(x["session"], 0) + 1
        body = subprocess.run([S, "replay", "--body", "%d:resp" % x["seq"], cap], check=True,
                              capture_output=True).stdout
        out[(x["session"], n)] = routes(json.loads(body))
    return out
a, b, clean = (answers(c) for c in caps)
# A failed turn ends its session, so the faulty runs may have fewer turns than the clean one.
assert a.keys() == b.keys() and a, (len(a), len(b))
for k in a:
    assert a[k] == b[k], k
changed = sum(k in clean and a[k] != clean[k] for k in a)
assert 0 < changed, "no fault fired"
print("same", len(a), "changed", changed)
PY

# One fault a line: whole-array actions on some requests, a drawn one, then the turn boundary.
SAME='{"kind": "routes", "id": "drop", "nth": [2, 7], "action": {"do": "drop_first"}}
{"kind": "routes", "id": "cut", "nth": [3, 9], "action": {"do": "truncate", "tokens": 3}}
{"kind": "routes", "id": "shift", "probability": 0.5, "select": {"region": "output", "rows": {"block": 2, "every": 5}}, "action": {"do": "shift", "k": 2}}
{"kind": "routes", "id": "edge", "select": {"region": "turn_boundary"}, "action": {"do": "constant", "value": 3}}'
if [ "$part" = all ] || [ "$part" = same ]; then
    for d in skyrl vllm vllm-json sglang dynamo nemo-rl; do
        # record CAP FAULTS [PROXY_FAULTS]: serve (with FAULTS), a faulty proxy when
        # PROXY_FAULTS is set, a recording proxy, and a run with one request in flight, so
        # that the faults' ordinals and draws fall on the same requests.
        for which in clean own via; do
            eng_faults=
            [ "$which" = own ] && eng_faults=$(printf '%s\n' "$SAME" | paste -sd, -)
            printf '{"count": 1, "seed": 101, "model": {"vocab": 4000, "layers": 4, "experts": 64, "topk": 8, "eos_rate": 0.05}, "faults": [%s]}\n' "$eng_faults" >"$tmp/eng.json"
            start serve "$S" serve --stop-grace 2 --dialect "$d" "$tmp/eng.json"
            serve_pid=$last_pid
            faulty_pid=
            if [ "$which" = via ]; then
                set --
                for i in 1 2 3 4; do
                    set -- "$@" --fault "$(printf '%s\n' "$SAME" | sed -n "${i}p")"
                done
                start faulty "$S" proxy --seed 101 --dialect "$d" --upstream "$url" "$@"
                faulty_pid=$last_pid
            fi
            start rec "$S" proxy --dialect "$d" --upstream "$url" --record "$tmp/cap-$d-$which"
            rec_pid=$last_pid
            conc=1 scenario "$tmp/same.json" "$url" "$d"
            "$S" run --out "$tmp/runs" "$tmp/same.json" >"$tmp/same.out" 2>&1
            stop "$rec_pid"
            [ -n "$faulty_pid" ] && stop "$faulty_pid"
            stop "$serve_pid"
        done
        expect_out 0 '^same [0-9]+ changed [1-9]' \
            "$d: the proxy's route faults give the routes the engine's own give, turn by turn" \
            python3 "$tmp/same.py" "$S" "$tmp/cap-$d-own" "$tmp/cap-$d-via" "$tmp/cap-$d-clean"
    done
fi
finish
