#!/bin/sh
# `syncroll serve` end to end: two engines as child processes, one JSON line of URLs, a curl
# POST to each that `syncroll check-body` accepts and whose routes equal the oracle's, a clean stop on SIGTERM that takes the
# engines down too. No fixed ports and no sleeps: the URL line is read from a FIFO.
. "$(dirname "$0")/lib.sh"
O=${ORACLE_CHECK:?ORACLE_CHECK must point at serve_oracle_check}
DIE_LOG="$tmp/err"
pid=
at_exit '[ -n "$pid" ] && kill "$pid" 2>/dev/null' # a check that dies leaves no serve behind

cat >"$tmp/cfg.json" <<'JSON'
{"count": 2, "seed": 3,
 "model": {"vocab": 500, "layers": 2, "experts": 16, "topk": 2, "eos_id": -1},
 "fields": ["routed_experts"]}
JSON
mkfifo "$tmp/fifo"
"$S" serve --stop-grace 5 "$tmp/cfg.json" >"$tmp/fifo" 2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
IFS= read -r line <&3 || die "serve printed no line"
echo "serve: $line"
urls=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | sed 's/"url":"//; s/"$//')
pids=$(printf '%s\n' "$line" | grep -o '"pid":[0-9]*' | sed 's/"pid"://')
[ "$(printf '%s\n' "$urls" | wc -l)" -eq 2 ] || die "expected two URLs in: $line"
printf '%s\n' "$line" | grep -q '"id":"engine-1","index":1' || die "engine ids: $line"
for u in $urls; do
    case "$u" in http://127.0.0.1:[0-9]*) ;; *) die "not a loopback URL: $u" ;; esac
    curl -sS -X POST -H 'Content-Type: application/json' -H 'X-Session-ID: 1_0' \
        -d '{"sampling_params":{"max_tokens":6,"logprobs":0,"routed_experts_prompt_start":2},"model":"default","token_ids":[1,2,3,4,5]}' \
        -o "$tmp/body.json" "$u/skyrl/v1/generate" || die "POST to $u"
    "$S" check-body "$tmp/body.json" >"$tmp/check.txt" 2>&1 || { cat "$tmp/check.txt"; die "check-body rejected the body from $u"; }
    grep -q 'routed_experts' "$tmp/check.txt" || die "check-body saw no routes"
    grep -q '"shape":\[8,2,2\]' "$tmp/body.json" || die "routes are not rows [2, P+G-1)"
    "$O" "$tmp/cfg.json" "$tmp/body.json" 2 1 2 3 4 5 || die "routes from $u differ from the oracle"
done
kill -TERM "$pid"
wait "$pid"
st=$?
pid=
[ "$st" -eq 0 ] || die "serve exited with $st after SIGTERM"
for p in $pids; do
    kill -0 "$p" 2>/dev/null && die "engine $p still running after serve stopped"
done
ok "serve"

# The same with an example scenario file (serve takes the scenario's model, seed and engines).
SCN=$SRC/scenarios/examples/r3-two-turns.json
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$S" serve --stop-grace 5 "$SCN" >"$tmp/fifo" 2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
IFS= read -r line <&3 || die "serve printed no line for $SCN"
u=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
curl -sS -X POST -H 'Content-Type: application/json' \
    -d '{"sampling_params":{"max_tokens":5,"logprobs":0,"routed_experts_prompt_start":0},"model":"default","token_ids":[3,1,4,1,5,9]}' \
    -o "$tmp/body2.json" "$u/skyrl/v1/generate" || die "POST to $u"
"$S" check-body "$tmp/body2.json" >/dev/null 2>&1 || die "check-body rejected the scenario engine's body"
"$O" "$SCN" "$tmp/body2.json" 0 3 1 4 1 5 9 || die "routes of the scenario engine differ from the oracle"
# The control plane as an external trainer drives it: /pause without a mode is the reference's
# default, abort; /resume clears it (GET /syncroll/v1/state reports both).
curl -sS -f -X POST -o /dev/null "$u/pause" || die "POST $u/pause"
curl -sS -f -o "$tmp/state.json" "$u/syncroll/v1/state" || die "GET state"
grep -q '"paused":true,"pause_mode":"abort"' "$tmp/state.json" || die "state after /pause: $(cat "$tmp/state.json")"
curl -sS -f -X POST -o /dev/null "$u/resume" || die "POST $u/resume"
curl -sS -f -o "$tmp/state.json" "$u/syncroll/v1/state" || die "GET state"
grep -q '"paused":false,"pause_mode":null' "$tmp/state.json" || die "state after /resume: $(cat "$tmp/state.json")"
kill -TERM "$pid"
wait "$pid" || die "serve of $SCN exited with $? after SIGTERM"
pid=
ok "serve of an example scenario"

# --sync-dialect vllm: the engines speak vLLM's native control plane (issue #20): its routes
# answer with vLLM's bodies, an out-of-order finish is 409 sync.protocol_order, and a bad dialect
# is a named usage error.
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$S" serve --stop-grace 5 --sync-dialect vllm "$tmp/cfg.json" >"$tmp/fifo" 2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
IFS= read -r line <&3 || die "serve --sync-dialect printed no line"
u=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
out=$(curl -sS "$u/weight_info") || die "GET $u/weight_info"
[ "$out" = '{"weight_version":"default"}' ] || die "weight_info under vllm: $out"
code=$(curl -sS -o "$tmp/fin.json" -w '%{http_code}' -X POST -d '' "$u/finish_weight_update")
[ "$code" = 409 ] && grep -q '"check":"sync.protocol_order"' "$tmp/fin.json" ||
    die "finish without start under vllm: $code $(cat "$tmp/fin.json")"
kill -TERM "$pid"
wait "$pid" || die "serve --sync-dialect exited with $? after SIGTERM"
pid=
"$S" serve --sync-dialect sgl "$tmp/cfg.json" >/dev/null 2>"$tmp/err2" && die "sgl accepted"
grep -q "^syncroll serve: usage.invalid_argument: --sync-dialect 'sgl' is not one of skyrl, vllm, sglang" \
    "$tmp/err2" || die "$(cat "$tmp/err2")"
ok "serve --sync-dialect vllm"

# --dialect sglang: the engines serve SGLang's control plane by default (its routes answer,
# update without a group is 400 sync.protocol_order in SGLang's body); --sync-dialect overrides.
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$S" serve --stop-grace 5 --dialect sglang "$tmp/cfg.json" >"$tmp/fifo" 2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
IFS= read -r line <&3 || die "serve --dialect sglang printed no line"
u=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
out=$(curl -sS "$u/get_weight_version") || die "GET $u/get_weight_version"
[ "$out" = '{"weight_version":"0"}' ] || die "get_weight_version under sglang: $out"
code=$(curl -sS -o "$tmp/upd.json" -w '%{http_code}' -X POST \
    -d '{"names":[],"dtypes":[],"shapes":[]}' "$u/update_weights_from_distributed")
[ "$code" = 400 ] && grep -q '^{"success":false,"message":".*"check":"sync.protocol_order"' \
    "$tmp/upd.json" || die "update without a group under sglang: $code $(cat "$tmp/upd.json")"
kill -TERM "$pid"
wait "$pid" || die "serve --dialect sglang exited with $? after SIGTERM"
pid=
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$S" serve --stop-grace 5 --dialect sglang --sync-dialect skyrl "$tmp/cfg.json" >"$tmp/fifo" \
    2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
IFS= read -r line <&3 || die "serve --dialect sglang --sync-dialect skyrl printed no line"
u=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
code=$(curl -sS -o /dev/null -w '%{http_code}' "$u/get_weight_version")
[ "$code" = 404 ] || die "get_weight_version under --sync-dialect skyrl: $code"
kill -TERM "$pid"
wait "$pid" || die "serve exited with $? after SIGTERM"
pid=
ok "serve --dialect sglang"

# --dialect vllm with a scenario FILE that names no sync dialect serves vLLM's control
# plane (the dialect's), as with an engine config; a FILE that names one keeps it.
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$S" serve --stop-grace 5 --dialect vllm "$SCN" >"$tmp/fifo" 2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
IFS= read -r line <&3 || die "serve --dialect vllm $SCN printed no line"
u=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
out=$(curl -sS "$u/weight_info") || die "GET $u/weight_info"
[ "$out" = '{"weight_version":"default"}' ] || die "weight_info of a scenario under --dialect vllm: $out"
kill -TERM "$pid"
wait "$pid" || die "serve --dialect vllm $SCN exited with $? after SIGTERM"
pid=
python3 - "$SCN" "$tmp/given.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s.setdefault("engines", {})["sync_dialect"] = "skyrl"
json.dump(s, open(sys.argv[2], "w"))
PY
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$S" serve --stop-grace 5 --dialect vllm "$tmp/given.json" >"$tmp/fifo" 2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
IFS= read -r line <&3 || die "serve --dialect vllm given.json printed no line"
u=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
code=$(curl -sS -o /dev/null -w '%{http_code}' "$u/weight_info")
[ "$code" = 404 ] || die "weight_info of a scenario naming sync_dialect skyrl: $code"
kill -TERM "$pid"
wait "$pid" || die "serve --dialect vllm given.json exited with $? after SIGTERM"
pid=
ok "serve --dialect vllm SCENARIO (the sync dialect follows unless the file names one)"

# serve of a file that does not exist is a bad argument, exit 2 as for run and lint.
"$S" serve "$tmp/no-such.json" >/dev/null 2>"$tmp/err3"
st=$?
[ "$st" -eq 2 ] || die "serve of a missing file exited $st, expected 2"
grep -q "^syncroll serve: io.error: $tmp/no-such.json: cannot open: No such file or directory" \
    "$tmp/err3" || die "serve of a missing file: $(cat "$tmp/err3")"
ok "serve of a missing file: exit 2, io.error named"

# Engines that cannot start for want of descriptors (ulimit -n 5 to 12; which call fails first
# depends on the limit): every failure names its OS reason (not only "cannot
# allocate the server state", "libmicrohttpd could not start"), and serve reports how the engine
# ended, never "(still running)" (the readiness pipe closes before the exit is visible).
failed_starts=0
for n in 5 6 7 8 9 10 11 12; do
    # The output of the round before must be gone: its '"engines"' line would end the wait below
    # before this round's shell has even truncated the file, and a SIGTERM sent to that shell
    # before it execs serve is lost (once, a serve of this round then ran on, unsignalled).
    rm -f "$tmp/ul.out" "$tmp/ul.err"
    (ulimit -n "$n" && exec "$S" serve "$SRC/scenarios/examples/minimal.json") \
        >"$tmp/ul.out" 2>"$tmp/ul.err" </dev/null &
    pid=$!
    # An engine that did start prints its line; stop it then.
    while kill -0 "$pid" 2>/dev/null && ! grep -q '"engines"' "$tmp/ul.out" 2>/dev/null; do sleep 0.05; done
    kill -TERM "$pid" 2>/dev/null
    # Bounded: a serve that does not end within 20 s of SIGTERM is a named failure with where it
    # waits (its threads' wchan and its children), not a hang of the whole test.
    waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 400 ]; do sleep 0.05; waited=$((waited + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
        where=$(for t in /proc/"$pid"/task/*; do printf '%s ' "$(cat "$t/wchan" 2>/dev/null)"; done)
        kids=$(ps -o pid=,stat=,wchan=,args= --ppid "$pid" 2>/dev/null | tr '\n' ';')
        kill -KILL "$pid" 2>/dev/null
        die "ulimit -n $n: serve did not exit within 20 s of SIGTERM (threads in: $where; children: $kids; stderr: $(cat "$tmp/ul.err"))"
    fi
    wait "$pid"
    pid=
    if grep -q "start_failed\|proc\.\|io\.error" "$tmp/ul.err"; then
        failed_starts=$((failed_starts + 1))
        grep "error\|failed\|proc\." "$tmp/ul.err" | grep -v "Too many open files" |
            grep -v "closed its readiness pipe before reporting ready (exited with status" &&
            die "ulimit -n $n: a failure without its OS reason (above)"
        grep -q "still running" "$tmp/ul.err" && die "ulimit -n $n: $(cat "$tmp/ul.err")"
    fi
done
[ "$failed_starts" -ge 3 ] || die "only $failed_starts of the descriptor limits made a start fail"
ok "ulimit -n 5..12: $failed_starts failed starts, each with its OS reason and the engine's exit"
