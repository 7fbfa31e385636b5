#!/bin/sh
# `syncroll serve SCENARIO` for every scenario file under scenarios/: serve loads it with the
# scenario loader, starts engines.count engines with the engine config `syncroll run` would give
# them (written to a private temporary directory), prints the URL line, answers a generate, and
# on SIGTERM exits 0 with its engines stopped and the temporary directory gone. Scenarios that
# declare engine faults may fail that generate (the fault is the point), so for them any
# outcome of the request is accepted; the others must answer 200. Broken files give the loader's
# named error. No fixed sleeps: the URL line is polled for, with a deadline.
. "$(dirname "$0")/lib.sh"
# serve's temporary directories go here, so the test can see that each one is removed.
TMPDIR="$tmp/serve-tmp"
export TMPDIR
mkdir "$TMPDIR"

# Waits up to $2 tenths of a second for pid $1's output file $3 to hold a line; 0 when it does.
wait_line() {
    n=0
    while [ "$n" -lt "$2" ]; do
        grep -q '^{"engines":\[' "$3" 2>/dev/null && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.1
        n=$((n + 1))
    done
    return 1
}

# serve_one FILE TAG: the whole check for one scenario; prints "ok"/"FAIL" lines, exit status 0/1.
serve_one() {
    f=$1
    o="$tmp/$2"
    "$S" serve --stop-grace 5 "$f" >"$o.out" 2>"$o.err" &
    pid=$!
    if ! wait_line "$pid" 200 "$o.out"; then
        kill -TERM "$pid" 2>/dev/null
        wait "$pid"
        echo "FAIL: $f: serve printed no URL line within 20 s (exit $?)"
        cat "$o.err"
        return 1
    fi
    line=$(head -n 1 "$o.out")
    count=$(printf '%s\n' "$line" | grep -o '"url":"http://127.0.0.1:[0-9]*"' | wc -l)
    u=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
    code=$(curl -sS -m 5 -o "$o.body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        -d '{"sampling_params":{"max_tokens":3,"logprobs":0,"routed_experts_prompt_start":0},"model":"default","token_ids":[1,2,3]}' \
        "$u/skyrl/v1/generate" 2>/dev/null)
    kill -TERM "$pid"
    wait "$pid"
    st=$?
    why=""
    [ "$count" -ge 1 ] || why="$why; no loopback URL in $line"
    if grep -q '"faults"' "$f"; then
        case "$code" in [0-9][0-9][0-9]) ;; *) why="$why; curl gave no status" ;; esac
    else
        [ "$code" = 200 ] || why="$why; generate answered HTTP $code"
    fi
    [ "$st" -eq 0 ] || why="$why; serve exited with $st after SIGTERM"
    for p in $(printf '%s\n' "$line" | grep -o '"pid":[0-9]*' | sed 's/"pid"://'); do
        kill -0 "$p" 2>/dev/null && why="$why; engine $p still running"
    done
    if [ -n "$why" ]; then
        echo "FAIL: $f${why}"
        cat "$o.err"
        return 1
    fi
    ok "$f ($count engine(s), generate HTTP $code)"
}

# Every scenario file (not the packed-field definitions), four at a time on the two cores.
find "$SRC/scenarios" -name '*.json' ! -name '*.field.json' | sort >"$tmp/all"
grep -l '"urls"' $(cat "$tmp/all") >"$tmp/external" || true
grep -v -x -F -f "$tmp/external" "$tmp/all" >"$tmp/files"
[ "$(wc -l <"$tmp/files")" -ge 60 ] || die "expected the scenario files, found: $(cat "$tmp/files")"
i=0
pids=""
for f in $(cat "$tmp/files"); do
    i=$((i + 1))
    serve_one "$f" "s$i" >"$tmp/r$i" 2>&1 &
    pids="$pids $!"
    if [ $((i % 4)) -eq 0 ]; then
        for p in $pids; do wait "$p"; done
        pids=""
    fi
done
for p in $pids; do wait "$p"; done
cat "$tmp"/r*
grep -q '^FAIL' "$tmp"/r* && die "serve of some scenario files"
[ "$(cat "$tmp"/r* | grep -c '^ok:')" -eq "$i" ] || die "not every scenario reported"
[ -z "$(ls -A "$TMPDIR")" ] || die "serve left temporary files behind: $(ls -A "$TMPDIR")"

# A scenario naming external engines has none to start.
for f in $(cat "$tmp/external"); do
    "$S" serve "$f" >"$tmp/out" 2>"$tmp/err"
    st=$?
    [ "$st" -eq 2 ] || die "serve of external $f exited with $st"
    grep -q "^syncroll serve: scenario.invalid: $f: engines.urls" "$tmp/err" || die "$(cat "$tmp/err")"
    [ -s "$tmp/out" ] && die "serve of external $f printed $(cat "$tmp/out")"
done
ok "external-engine scenarios are refused"

# Broken scenarios give the scenario loader's named error with file:line:col, exit 2, and leave
# no temporary directory.
expect_error() { # FILE CODE MESSAGE
    "$S" serve "$1" >"$tmp/out" 2>"$tmp/err"
    st=$?
    [ "$st" -eq 2 ] || die "serve of $1 exited with $st: $(cat "$tmp/err")"
    grep -q -F "syncroll serve: $2: $1:$3" "$tmp/err" || die "serve of $1: $(cat "$tmp/err")"
    [ -s "$tmp/out" ] && die "serve of $1 printed $(cat "$tmp/out")"
    [ -z "$(ls -A "$TMPDIR")" ] || die "serve of $1 left $(ls -A "$TMPDIR")"
}
printf '{"id": "x", "description": "d",\n  "modle": {"vocab": 8},\n  "steps": [{"kind": "rollout"}]}\n' >"$tmp/typo.json"
expect_error "$tmp/typo.json" json.schema "2:3: unknown key 'modle'"
printf '{"id": "x", "description": "d", "steps": []}\n' >"$tmp/nosteps.json"
expect_error "$tmp/nosteps.json" json.schema "1:33: 'steps' must be an array of 1..256 steps"
printf '{"id": "x", "description": "d",\n "weights": {"transport": "pigeon"},\n "steps": [{"kind": "rollout"}]}\n' >"$tmp/transport.json"
expect_error "$tmp/transport.json" json.schema "2:14: 'transport' must be one of"
printf '{"id": "x", "description": "d",\n "engines": {"faults": [{"kind": "nope"}]},\n "steps": [{"kind": "rollout"}]}\n' >"$tmp/fault.json"
expect_error "$tmp/fault.json" scenario.invalid "2:25: engines.faults: fault 0 (nope): unknown fault kind"
printf '{"id": "x", "steps": [\n' >"$tmp/cut.json"
expect_error "$tmp/cut.json" json.syntax "1:23: invalid JSON"
# --max-scenario-bytes as run and lint take it: a larger file is scenario.too_large, unparsed.
cp "$SRC/scenarios/examples/r3-two-turns.json" "$tmp/big.json"
size=$(wc -c <"$tmp/big.json")
"$S" serve --max-scenario-bytes 64 "$tmp/big.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" -eq 2 ] || die "serve --max-scenario-bytes 64 exited with $st: $(cat "$tmp/err")"
grep -q -F "syncroll serve: scenario.too_large: $tmp/big.json: $size bytes, larger than the limit of 64 bytes" "$tmp/err" ||
    die "serve --max-scenario-bytes 64: $(cat "$tmp/err")"
[ -z "$(ls -A "$TMPDIR")" ] || die "serve --max-scenario-bytes left $(ls -A "$TMPDIR")"
# The same through `syncroll lint`: serve's message is the loader's.
"$S" lint "$tmp/typo.json" >"$tmp/lint" 2>&1
grep -q -F "$tmp/typo.json:2:3: unknown key 'modle'" "$tmp/lint" || die "lint says: $(cat "$tmp/lint")"
ok "broken scenarios give the loader's error"

# engines.count engines, with the ids `syncroll run` gives them.
printf '{"id": "three", "description": "d", "engines": {"count": 3},\n "steps": [{"kind": "rollout"}]}\n' >"$tmp/three.json"
serve_one "$tmp/three.json" three || die "serve of a three-engine scenario"
[ "$(grep -o '"url":"http://127.0.0.1:[0-9]*"' "$tmp/three.out" | wc -l)" -eq 3 ] || die "not 3 engines: $(cat "$tmp/three.out")"
grep -q '"id":"engine-0","index":0.*"id":"engine-1","index":1.*"id":"engine-2","index":2' "$tmp/three.out" || die "engine ids: $(cat "$tmp/three.out")"
ok "engines.count"

# The scenario's engine faults take effect as under `syncroll run`: the first generate gets the
# declared HTTP 503, the second is served.
printf '{"id": "f", "description": "d", "seed": 9,\n "engines": {"faults": [{"kind": "http_503_json", "id": "first", "nth": [1]}]},\n "steps": [{"kind": "rollout"}]}\n' >"$tmp/f503.json"
"$S" serve "$tmp/f503.json" >"$tmp/f503.out" 2>"$tmp/f503.err" &
pid=$!
at_exit 'kill "$pid" 2>/dev/null'
wait_line "$pid" 200 "$tmp/f503.out" || die "serve of $tmp/f503.json: $(cat "$tmp/f503.err")"
u=$(grep -o '"url":"[^"]*"' "$tmp/f503.out" | sed 's/"url":"//; s/"$//')
for want in 503 200; do
    code=$(curl -sS -m 5 -o /dev/null -w '%{http_code}' -X POST \
        -d '{"sampling_params":{"max_tokens":2},"model":"default","token_ids":[1,2]}' "$u/skyrl/v1/generate")
    [ "$code" = "$want" ] || die "fault plan: HTTP $code, expected $want"
done
curl -sS -m 5 "$u/syncroll/v1/state" | grep -q '"id":"first","kind":"http_503_json".*"fired":1' || die "state shows no fired fault"
kill -TERM "$pid"
wait "$pid" || die "serve of $tmp/f503.json exited with $?"
at_exit ''
ok "scenario faults take effect"

# A plain engine config still works, with its own loader's errors.
printf '{"count": 2, "seed": 5, "model": {"vocab": 100, "layers": 1, "experts": 8, "topk": 2}}\n' >"$tmp/cfg.json"
serve_one "$tmp/cfg.json" cfg || die "serve of a plain engine config"
printf '{"count": 2, "modle": {}}\n' >"$tmp/badcfg.json"
expect_error "$tmp/badcfg.json" engine.invalid_config "1:"
ok "plain engine configs"
