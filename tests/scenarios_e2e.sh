#!/bin/sh
# syncroll run / lint end to end on tests/scenarios/: verdicts, exit codes, the last line, the
# run folder, selection options, and external engines (syncroll serve + engines.urls).
. "$(dirname "$0")/lib.sh"
T=$SRC/tests/scenarios
SERVE_PID=
at_exit '[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null'

# run <want-status> <what> <args...>: runs syncroll, keeps stdout+stderr in $OUT.
run() {
    sr_run_want=$1
    sr_run_what=$2
    shift 2
    expect "$sr_run_want" "$sr_run_what" "$S" "$@"
}
has() { # has <what> <fixed string>
    if ! printf '%s\n' "$OUT" | grep -qF -- "$2"; then
        bad "$1: output lacks '$2'"
        printf '%s\n' "$OUT"
    fi
}
last() { # last <what> <expected last line>
    l=$(printf '%s\n' "$OUT" | tail -n 1)
    [ "$l" = "$2" ] || bad "$1: last line '$l', expected '$2'"
}

NPASS=$(ls "$T"/pass/*.json | wc -l)
NFAULT=$(grep -l '"fault"' "$T"/pass/*.json | wc -l)

# Malformed scenarios: exit 2 with file:line:col, and nothing runs.
run 2 "lint: misspelled key" lint "$T/malformed/misspelled.json"
has "lint: misspelled key" "misspelled.json:5:25: unknown key 'bacth' in steps.rollout; did you mean 'batch'? valid keys: kind, name, async, batch, turns,"
run 2 "lint: unknown quirk" lint "$T/malformed/unknown-quirk.json"
has "lint: unknown quirk" "unknown-quirk.json:4:25: unknown quirk; did you mean 'lock_first_dtype'? quirks (FORMAT.md, client.quirks): retry_json_decode_only,"
run 2 "lint: quirk listed twice" lint "$T/malformed/quirk-twice.json"
has "lint: quirk listed twice" "quirk-twice.json:4:45: quirk lock_first_dtype is listed twice [scenario.invalid]"
run 2 "lint: bad reference" lint "$T/malformed"
has "lint: bad reference" "bad-reference.json:4:59: not the name of an earlier step"
run 2 "run refuses malformed files" run --out "$tmp/r" "$T/malformed" "$T/pass/basic.json"
if printf '%s\n' "$OUT" | grep -q "passed"; then bad "a malformed file still ran"; fi
run 0 "lint: every valid test scenario" lint "$T/pass" "$T/fail" "$T/error" "$T/skip"

# Scenario file size: --max-scenario-bytes of lint and run; a larger file is scenario.too_large
# naming the file, its size and the limit, and nothing runs.
B=$(wc -c < "$T/pass/basic.json" | tr -d ' ')
run 2 "lint: file over --max-scenario-bytes" lint --max-scenario-bytes 64 "$T/pass/basic.json"
has "lint: file over --max-scenario-bytes" \
    "$T/pass/basic.json: $B bytes, larger than the limit of 64 bytes [scenario.too_large]"
run 0 "lint: file within --max-scenario-bytes" lint --max-scenario-bytes="$B" "$T/pass/basic.json"
run 2 "run: file over --max-scenario-bytes" run --out "$tmp/r" --max-scenario-bytes 64 "$T/pass/basic.json"
has "run: file over --max-scenario-bytes" "[scenario.too_large]"
if printf '%s\n' "$OUT" | grep -q "passed"; then bad "a file over the limit still ran"; fi
run 2 "lint: bad --max-scenario-bytes" lint --max-scenario-bytes 0 "$T/pass/basic.json"

# Verdicts and the last line.
run 0 "pass folder" run --out "$tmp/r" -j2 "$T/pass"
last "pass folder" "$NPASS passed, 0 failed"
run 1 "unexpected check" run --out "$tmp/r" "$T/fail/unexpected.json"
has "unexpected check" "FAIL  t-fail-unexpected"
has "unexpected check" "trace.row_count"
has "unexpected check" "repro: syncroll run $T/fail/unexpected.json --seed 1"
last "unexpected check" "0 passed, 1 failed"
run 1 "missing expected check" run --out "$tmp/r" "$T/fail/missing.json"
has "missing expected check" "expected trace.row_count did not fire"
export SYNCROLL_ENGINE=/nonexistent/syncroll
run 1 "error verdict" run --out "$tmp/r" "$T/error/engine-missing.json"
unset SYNCROLL_ENGINE
has "error verdict" "ERROR t-error-engine"
has "error verdict" "proc.spawn"
last "error verdict" "0 passed, 1 failed"
run 0 "skip verdict" run --out "$tmp/r" "$T/skip"
has "skip verdict" "SKIP  t-skipped  demonstrates the skip verdict"
last "skip verdict" "0 passed, 0 failed, 1 skipped"
run 1 "mixed verdicts" run --out "$tmp/r" -j 2 "$T/pass/basic.json" "$T/skip" "$T/fail/unexpected.json"
last "mixed verdicts" "1 passed, 1 failed, 1 skipped"

# The run folder: latest, results.json, expanded scenarios that replay, artifacts of failures.
L="$tmp/r/latest"
for f in results.json scenarios/t-basic.json scenarios/t-fail-unexpected.json \
         artifacts/t-fail-unexpected/engine-0.log artifacts/t-fail-unexpected/engine.json; do
    [ -f "$L/$f" ] || bad "run folder lacks $f"
done
[ -e "$L/artifacts/t-basic" ] && bad "a passing scenario kept its work folder"
grep -q '"verdict":	"fail"' "$L/results.json" || bad "results.json lacks the fail verdict"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema"]==1 and len(d["scenarios"])==3' \
        "$L/results.json" || bad "results.json is not the expected JSON"
fi
run 0 "the expanded scenario lints" lint "$L/scenarios/t-basic.json"
run 0 "the expanded scenario replays" run --out "$tmp/r2" "$L/scenarios/t-basic.json"
run 0 "--keep keeps work folders" run --out "$tmp/k" --keep "$T/pass/basic.json"
[ -f "$tmp/k/latest/artifacts/t-basic/engine-0.log" ] || bad "--keep lost the engine log"

# Selection and repetition.
run 0 "--seed overrides" run --out "$tmp/s" --seed 99 "$T/pass/basic.json"
grep -q '"seed":	99' "$tmp/s/latest/scenarios/t-basic.json" || bad "--seed not in the expanded scenario"
sum=0
for k in 1 2 3; do
    run 0 "--shard $k/3" run --out "$tmp/r" --shard "$k/3" "$T/pass" || continue
    n=$(printf '%s\n' "$OUT" | tail -n 1 | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    sum=$((sum + n))
done
[ "$sum" -eq "$NPASS" ] || bad "shards ran $sum scenarios, expected $NPASS"
run 0 "--tag" run --out="$tmp/r" --tag=smoke "$T/pass"
last "--tag" "1 passed, 0 failed"
run 0 "--exclude-tag" run --out "$tmp/r" --exclude-tag fault "$T/pass"
last "--exclude-tag" "$((NPASS - NFAULT)) passed, 0 failed"
run 0 "--repeat" run --out "$tmp/r" --repeat 2 "$T/pass/basic.json"
last "--repeat" "2 passed, 0 failed"
run 1 "--until-fail stops at the first failure" run --out "$tmp/r" --until-fail --repeat 5 \
    "$T/fail/unexpected.json"
last "--until-fail stops at the first failure" "0 passed, 1 failed"
run 2 "bad option" run --shard 4/3 "$T/pass/basic.json"

# External engines: syncroll serve, then a scenario that names them by URL.
mkfifo "$tmp/urls"
"$S" serve "$T/pass/basic.json" > "$tmp/urls" &
SERVE_PID=$!
read -r line < "$tmp/urls"
u0=$(printf '%s' "$line" | sed -n 's/.*"url":"\([^"]*\)".*"url":"\([^"]*\)".*/\1/p')
u1=$(printf '%s' "$line" | sed -n 's/.*"url":"\([^"]*\)".*"url":"\([^"]*\)".*/\2/p')
cat > "$tmp/external.json" <<EOF
{
  "id": "t-external",
  "description": "rollouts against engines started by syncroll serve, named by URL",
  "seed": 3,
  "model": {"vocab": 500, "layers": 3, "experts": 32, "topk": 4},
  "engines": {"urls": ["$u0", "$u1"]},
  "steps": [{"kind": "rollout", "batch": 4, "turns": 2}, {"kind": "collate"}]
}
EOF
run 0 "external engines" run --out "$tmp/x" "$tmp/external.json"
grep -q '"external_engines":	true' "$tmp/x/latest/results.json" || bad "not run as external"
grep -q 'the oracle.s model is unknown' "$tmp/x/latest/results.json" || bad "no skipped oracle checks"
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null; SERVE_PID=

finish
