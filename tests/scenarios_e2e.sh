#!/bin/sh
# syncroll run / lint end to end on tests/scenarios/: verdicts, exit codes, the last line, the
# run folder, selection options, and external engines (syncroll serve + engines.urls).
set -u
S=${SYNCROLL:?SYNCROLL must point at the syncroll executable}
T=${SYNCROLL_SOURCE_DIR:?}/tests/scenarios
W=$(mktemp -d "${TMPDIR:-/tmp}/sr-e2e-XXXXXX")
SERVE_PID=
trap '[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; rm -rf "$W"' EXIT
fail=0

# run <want-status> <what> <args...>: runs syncroll, keeps stdout+stderr in $OUT.
run() {
    want=$1; what=$2; shift 2
    OUT=$("$S" "$@" 2>&1); got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, expected $want"; echo "$OUT"; fail=1; return 1
    fi
    echo "ok: $what"
}
has() { # has <what> <fixed string>
    if ! printf '%s\n' "$OUT" | grep -qF -- "$2"; then
        echo "FAIL: $1: output lacks '$2'"; echo "$OUT"; fail=1
    fi
}
last() { # last <what> <expected last line>
    l=$(printf '%s\n' "$OUT" | tail -n 1)
    if [ "$l" != "$2" ]; then
        echo "FAIL: $1: last line '$l', expected '$2'"; fail=1
    fi
}

NPASS=$(ls "$T"/pass/*.json | wc -l)
NFAULT=$(grep -l '"fault"' "$T"/pass/*.json | wc -l)

# Malformed scenarios: exit 2 with file:line:col, and nothing runs.
run 2 "lint: misspelled key" lint "$T/malformed/misspelled.json"
has "lint: misspelled key" "misspelled.json:5:25: unknown key 'bacth' in steps.rollout [json.schema]"
run 2 "lint: bad reference" lint "$T/malformed"
has "lint: bad reference" "bad-reference.json:4:59: not the name of an earlier step"
run 2 "run refuses malformed files" run --out "$W/r" "$T/malformed" "$T/pass/basic.json"
if printf '%s\n' "$OUT" | grep -q "passed"; then echo "FAIL: a malformed file still ran"; fail=1; fi
run 0 "lint: every valid test scenario" lint "$T/pass" "$T/fail" "$T/error" "$T/skip"

# Scenario file size: --max-scenario-bytes of lint and run; a larger file is scenario.too_large
# naming the file, its size and the limit, and nothing runs.
B=$(wc -c < "$T/pass/basic.json" | tr -d ' ')
run 2 "lint: file over --max-scenario-bytes" lint --max-scenario-bytes 64 "$T/pass/basic.json"
has "lint: file over --max-scenario-bytes" \
    "$T/pass/basic.json: $B bytes, larger than the limit of 64 bytes [scenario.too_large]"
run 0 "lint: file within --max-scenario-bytes" lint --max-scenario-bytes="$B" "$T/pass/basic.json"
run 2 "run: file over --max-scenario-bytes" run --out "$W/r" --max-scenario-bytes 64 "$T/pass/basic.json"
has "run: file over --max-scenario-bytes" "[scenario.too_large]"
if printf '%s\n' "$OUT" | grep -q "passed"; then echo "FAIL: a file over the limit still ran"; fail=1; fi
run 2 "lint: bad --max-scenario-bytes" lint --max-scenario-bytes 0 "$T/pass/basic.json"

# Verdicts and the last line.
run 0 "pass folder" run --out "$W/r" -j2 "$T/pass"
last "pass folder" "$NPASS passed, 0 failed"
run 1 "unexpected check" run --out "$W/r" "$T/fail/unexpected.json"
has "unexpected check" "FAIL  t-fail-unexpected"
has "unexpected check" "trace.row_count"
has "unexpected check" "repro: syncroll run $T/fail/unexpected.json --seed 1"
last "unexpected check" "0 passed, 1 failed"
run 1 "missing expected check" run --out "$W/r" "$T/fail/missing.json"
has "missing expected check" "expected trace.row_count did not fire"
export SYNCROLL_ENGINE=/nonexistent/syncroll
run 1 "error verdict" run --out "$W/r" "$T/error/engine-missing.json"
unset SYNCROLL_ENGINE
has "error verdict" "ERROR t-error-engine"
has "error verdict" "proc.spawn"
last "error verdict" "0 passed, 1 failed"
run 0 "skip verdict" run --out "$W/r" "$T/skip"
has "skip verdict" "SKIP  t-skipped  demonstrates the skip verdict"
last "skip verdict" "0 passed, 0 failed, 1 skipped"
run 1 "mixed verdicts" run --out "$W/r" -j 2 "$T/pass/basic.json" "$T/skip" "$T/fail/unexpected.json"
last "mixed verdicts" "1 passed, 1 failed, 1 skipped"

# The run folder: latest, results.json, expanded scenarios that replay, artifacts of failures.
L="$W/r/latest"
for f in results.json scenarios/t-basic.json scenarios/t-fail-unexpected.json \
         artifacts/t-fail-unexpected/engine-0.log artifacts/t-fail-unexpected/engine.json; do
    [ -f "$L/$f" ] || { echo "FAIL: run folder lacks $f"; fail=1; }
done
[ -e "$L/artifacts/t-basic" ] && { echo "FAIL: a passing scenario kept its work folder"; fail=1; }
grep -q '"verdict":	"fail"' "$L/results.json" || { echo "FAIL: results.json lacks the fail verdict"; fail=1; }
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema"]==1 and len(d["scenarios"])==3' \
        "$L/results.json" || { echo "FAIL: results.json is not the expected JSON"; fail=1; }
fi
run 0 "the expanded scenario lints" lint "$L/scenarios/t-basic.json"
run 0 "the expanded scenario replays" run --out "$W/r2" "$L/scenarios/t-basic.json"
run 0 "--keep keeps work folders" run --out "$W/k" --keep "$T/pass/basic.json"
[ -f "$W/k/latest/artifacts/t-basic/engine-0.log" ] || { echo "FAIL: --keep lost the engine log"; fail=1; }

# Selection and repetition.
run 0 "--seed overrides" run --out "$W/s" --seed 99 "$T/pass/basic.json"
grep -q '"seed":	99' "$W/s/latest/scenarios/t-basic.json" || { echo "FAIL: --seed not in the expanded scenario"; fail=1; }
sum=0
for k in 1 2 3; do
    run 0 "--shard $k/3" run --out "$W/r" --shard "$k/3" "$T/pass" || continue
    n=$(printf '%s\n' "$OUT" | tail -n 1 | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    sum=$((sum + n))
done
[ "$sum" -eq "$NPASS" ] || { echo "FAIL: shards ran $sum scenarios, expected $NPASS"; fail=1; }
run 0 "--tag" run --out="$W/r" --tag=smoke "$T/pass"
last "--tag" "1 passed, 0 failed"
run 0 "--exclude-tag" run --out "$W/r" --exclude-tag fault "$T/pass"
last "--exclude-tag" "$((NPASS - NFAULT)) passed, 0 failed"
run 0 "--repeat" run --out "$W/r" --repeat 2 "$T/pass/basic.json"
last "--repeat" "2 passed, 0 failed"
run 1 "--until-fail stops at the first failure" run --out "$W/r" --until-fail --repeat 5 \
    "$T/fail/unexpected.json"
last "--until-fail stops at the first failure" "0 passed, 1 failed"
run 2 "bad option" run --shard 4/3 "$T/pass/basic.json"

# External engines: syncroll serve, then a scenario that names them by URL.
mkfifo "$W/urls"
"$S" serve "$T/pass/basic.json" > "$W/urls" &
SERVE_PID=$!
read -r line < "$W/urls"
u0=$(printf '%s' "$line" | sed -n 's/.*"url":"\([^"]*\)".*"url":"\([^"]*\)".*/\1/p')
u1=$(printf '%s' "$line" | sed -n 's/.*"url":"\([^"]*\)".*"url":"\([^"]*\)".*/\2/p')
cat > "$W/external.json" <<EOF
{
  "id": "t-external",
  "description": "rollouts against engines started by syncroll serve, named by URL",
  "seed": 3,
  "model": {"vocab": 500, "layers": 3, "experts": 32, "topk": 4},
  "engines": {"urls": ["$u0", "$u1"]},
  "steps": [{"kind": "rollout", "batch": 4, "turns": 2}, {"kind": "collate"}]
}
EOF
run 0 "external engines" run --out "$W/x" "$W/external.json"
grep -q '"external_engines":	true' "$W/x/latest/results.json" || { echo "FAIL: not run as external"; fail=1; }
grep -q 'the oracle.s model is unknown' "$W/x/latest/results.json" || { echo "FAIL: no skipped oracle checks"; fail=1; }
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null; SERVE_PID=

exit $fail
