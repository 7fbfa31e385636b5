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
#   edges part: an upstream answer cut mid-body reaches the client cut the same with and
#     without a route fault (the upstream's announced length, then the connection closed),
#     counted in upstream_failures and recorded "complete": false; a route fault's answer
#     longer than --max-rewrite-bytes goes out unchanged; in front of a clean engine of 384
#     experts the proxy's routes_all_zero gives the engine's own fault's answer (routes in
#     their canonical dtype), which check-body accepts.
#   PROXY_FAULTS_PART=routes|retry|same|edges   only that part
. "$(dirname "$0")/lib.sh"
part=${PROXY_FAULTS_PART:-all}

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

if [ "$part" = all ] || [ "$part" = edges ]; then
    # A scripted upstream: /skyrl/v1/generate?cut announces 1000 bytes, sends 148 and closes;
    # ?big answers a whole skyrl answer of 4000 route values (about 5.6 KB).
    cat >"$tmp/upstream.py" <<'PY'
import base64, json, socket, sys
big = json.dumps({"choices": [{"token_ids": [7, 8], "finish_reason": "length",
                               "logprobs": None, "routed_experts": {
    "data": base64.b64encode(bytes(i % 7 + 1 for i in range(4000))).decode(),
    "shape": [1000, 2, 2], "dtype": "uint8"}}]}, separators=(",", ":")).encode()
open(sys.argv[1], "wb").write(big)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
print('{"url":"http://127.0.0.1:%d"}' % s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    f = c.makefile("rb")
    head = f.readline()
    n = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    f.read(n)
    if b"?cut" in head:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\nConnection: close\r\n\r\n" + big[:148])
    else:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                  + str(len(big)).encode() + b"\r\nConnection: close\r\n\r\n" + big)
    f.close()
    c.close()
PY
    # get URL: what a client gets: "<announced length> <bytes read> cut|whole"; the body
    # into $tmp/got.
    cat >"$tmp/get.py" <<'PY'
import http.client, json, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
c.request("POST", u.path + "?" + u.query, body=json.dumps({"token_ids": [1, 2]}),
          headers={"Content-Type": "application/json"})
r = c.getresponse()
try:
    body, how = r.read(), "whole"
except http.client.IncompleteRead as e:
    body, how = e.partial, "cut"
open(sys.argv[2], "wb").write(body)
print(r.getheader("Content-Length"), len(body), how)
PY
    start upstream python3 "$tmp/upstream.py" "$tmp/big"
    up_url=$url
    expect_out 0 '^1000 148 cut$' "the upstream's cut answer, directly: announced 1000, 148 bytes" \
        python3 "$tmp/get.py" "$up_url/skyrl/v1/generate?cut" "$tmp/got"
    start proxy "$S" proxy --upstream "$up_url" --record "$tmp/cap-cut" \
        --fault '{"kind": "routes_all_zero", "id": "zero"}'
    proxy_pid=$last_pid
    expect_out 0 '^1000 148 cut$' "through the proxy's route fault the client sees the same cut" \
        python3 "$tmp/get.py" "$url/skyrl/v1/generate?cut" "$tmp/got"
    st_line=$(state "$url")
    printf '%s\n' "$st_line" | grep -q '"upstream_failures":1,' ||
        bad "the cut answer is not counted in upstream_failures: $st_line"
    stop "$proxy_pid"
    expect_out 0 '"complete":false' "the capture records the cut exchange as not complete" \
        "$S" replay --list --json "$tmp/cap-cut"
    # The bound: with the default the answer is rewritten (the fault fires on it); past
    # --max-rewrite-bytes it goes out as the upstream wrote it, named and counted.
    start proxy "$S" proxy --upstream "$up_url" --fault '{"kind": "routes_all_zero", "id": "zero"}'
    proxy_pid=$last_pid
    expect_out 0 '^[0-9]+ [0-9]+ whole$' "a whole answer under the bound" \
        python3 "$tmp/get.py" "$url/skyrl/v1/generate?big" "$tmp/got"
    cmp -s "$tmp/got" "$tmp/big" && bad "the answer under the bound was not rewritten"
    stop "$proxy_pid"
    start proxy "$S" proxy --upstream "$up_url" --max-rewrite-bytes 4096 \
        --fault '{"kind": "routes_all_zero", "id": "zero"}'
    proxy_pid=$last_pid
    expect_out 0 '^[0-9]+ [0-9]+ whole$' "a whole answer past --max-rewrite-bytes" \
        python3 "$tmp/get.py" "$url/skyrl/v1/generate?big" "$tmp/got"
    if cmp -s "$tmp/got" "$tmp/big"; then
        ok "an answer past --max-rewrite-bytes goes out unchanged"
    else
        bad "an answer past --max-rewrite-bytes was changed"
    fi
    st_line=$(state "$url")
    printf '%s\n' "$st_line" | grep -q '"routes_unchanged":1,' ||
        bad "the answer past the bound is not counted in routes_unchanged: $st_line"
    stop "$proxy_pid"
    grep -q 'longer than --max-rewrite-bytes' "$tmp/proxy.err" ||
        bad "the answer past the bound is not named: $(cat "$tmp/proxy.err")"

    # 384 experts: the engine's routes are int16; all zero they are uint8, as the engine's own
    # fault writes them.
    cfg384='"count": 1, "seed": 5, "model": {"vocab": 500, "layers": 2, "experts": 384, "topk": 2, "eos_id": -1}'
    printf '{%s, "faults": [{"kind": "routes_all_zero"}]}\n' "$cfg384" >"$tmp/own384.json"
    printf '{%s, "faults": []}\n' "$cfg384" >"$tmp/clean384.json"
    start serve "$S" serve --stop-grace 2 "$tmp/own384.json"
    own_pid=$last_pid
    own_url=$url
    start serve "$S" serve --stop-grace 2 "$tmp/clean384.json"
    serve_pid=$last_pid
    start proxy "$S" proxy --upstream "$url" --fault '{"kind": "routes_all_zero", "id": "zero"}'
    proxy_pid=$last_pid
    python3 - "$own_url" "$url" "$tmp" <<'PY' >"$tmp/384.out" 2>&1
import json, sys, urllib.request
def post(base, name):
    req = urllib.request.Request(
        base + "/skyrl/v1/generate",
        data=json.dumps({"sampling_params": {"max_tokens": 6}, "model": "default",
                         "token_ids": [5, 6, 7, 8]}).encode(),
        headers={"Content-Type": "application/json"})
    body = urllib.request.urlopen(req, timeout=30).read()
    open(sys.argv[3] + "/" + name, "wb").write(body)
    return body
own, via = (json.loads(post(u, n))["choices"][0] for u, n in
            ((sys.argv[1], "own384"), (sys.argv[2], "via384")))
# The engine names its own fault in its "syncroll" member; everything else is the same.
own["syncroll"].pop("faults")
assert own == via, (own, via)
print("same", via["routed_experts"]["dtype"])
PY
    grep -q '^same uint8$' "$tmp/384.out" &&
        ok "384 experts: the proxy's routes_all_zero gives the engine's own fault's answer" ||
        bad "384 experts: $(cat "$tmp/384.out")"
    expect 0 "384 experts: check-body accepts the rewritten answer" \
        "$S" check-body "$tmp/via384"
    stop "$proxy_pid"
    stop "$serve_pid"
    stop "$own_pid"
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
